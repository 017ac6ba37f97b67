//! Destructive-operation guardrails: what an analysis of a command line (or of the files
//! an edit touches) finds, and the refusal it becomes. The analysis itself (a real shell
//! parser over the command) lives in `coord-guardrails`; these are the wire types and the
//! pure decision over findings.

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::validate;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest command line analysed; longer input is refused as unverifiable.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
pub const MAX_FILES: usize = 256;

/// The spec's categories of destructive operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// `git push --force`, `git reset --hard`, `git clean -f`, whole-tree discards.
    GitForce,
    /// `git branch -D`, `git push origin --delete`: blocked for main/master, a warning otherwise.
    BranchDeletion,
    /// `rm -rf`, `find -delete`, `xargs rm`, unscoped `DELETE FROM`, `TRUNCATE`, `DROP`.
    MassDeletion,
    /// Writing `*.env`, `*credentials*`, `*secrets*`, private keys: blocked whatever the trust.
    CredentialModification,
    /// `kubectl apply`, `terraform apply`, `helm upgrade`, ...
    ProductionDeployment,
    /// Schema changes and migration runners: trust 3 or more.
    DatabaseMigration,
    /// The machine itself changed: files of the operating system or another program
    /// written, a home directory's configuration (`~/.bashrc`, `~/.kube/config`), users,
    /// services, kernel settings.
    SystemModification,
    /// What cannot be read with certainty (a parse error, a command only known at run
    /// time): it fails closed.
    Unverifiable,
    /// A person's decision taken through coord from an agent's tools (approving,
    /// changing profiles, policies, rules or keys, pruning the audit trail, signing in to
    /// the dashboard), another agent's identity borrowed (`--agent-id`,
    /// `COORD_AGENT_ID=`), or coord's store written around coord: refused, and not
    /// approvable (a person makes such decisions themselves).
    PersonDecision,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::GitForce => "git_force",
            Category::BranchDeletion => "branch_deletion",
            Category::MassDeletion => "mass_deletion",
            Category::CredentialModification => "credential_modification",
            Category::ProductionDeployment => "production_deployment",
            Category::DatabaseMigration => "database_migration",
            Category::SystemModification => "system_modification",
            Category::Unverifiable => "unverifiable",
            Category::PersonDecision => "person_decision",
        }
    }
}

/// What a finding asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Refused until a person approves this exact command (then it passes once).
    Block,
    /// Refused whatever the trust; a person reviews it (credential files).
    ManualReview,
    /// Allowed only at this trust level or more.
    RequireTrust(u8),
    /// Allowed, with the finding in the answer.
    Warn,
}

/// One destructive pattern found in a command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    pub category: Category,
    /// What it does, e.g. `force_push`, `hard_reset`, `recursive_delete`.
    pub operation: String,
    pub action: Action,
    /// The command (or file) it was found in, as written.
    pub matched: String,
    /// Byte offsets of `matched` in the analysed input, when it comes from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<(usize, usize)>,
    /// Why, in words a model can act on.
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckGuardrailsRequest {
    /// A whole command line, as an agent's shell tool would run it (bash syntax).
    #[serde(default)]
    #[schemars(length(max = 65536))]
    pub command: Option<String>,
    /// Paths an edit would change (credential files are checked).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub files: Option<Vec<String>>,
    /// The runtime tool being called (`Bash`, `Read`, ...): an agent coord spawned may
    /// call only its declared tools (spec 000's activation check).
    #[serde(default)]
    #[schemars(length(max = 128))]
    pub tool: Option<String>,
    /// The git aliases of the repository the command runs in (name → what it runs,
    /// `git config --get-regexp '^alias\.'`), so that `git NAME` is judged by what the
    /// alias runs; coord's hooks and `coord guard check` send them. Without them, a git
    /// subcommand git does not have is refused (it may be an alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_aliases: Option<std::collections::BTreeMap<String, String>>,
    /// The repository files the command's entry points run (path relative to where the
    /// command runs → text): `package.json` for `npm run NAME`, the Makefile for `make
    /// TARGET`, the justfile, a script run by path — and those their code runs in turn.
    /// coord's hooks and `coord guard check` read and send them, so that an entry point
    /// is judged by what it runs; without them it is judged by its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_files: Option<std::collections::BTreeMap<String, String>>,
}

/// A validated check.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardCheck {
    pub command: Option<String>,
    pub files: Vec<String>,
    pub tool: Option<String>,
    pub git_aliases: Option<std::collections::BTreeMap<String, String>>,
    pub entry_files: Option<std::collections::BTreeMap<String, String>>,
}

/// How many entry-point files a check may carry, and how large each may be.
pub const MAX_ENTRY_FILES: usize = 32;
pub const MAX_ENTRY_FILE_BYTES: usize = 256 * 1024;

fn validate_entry_files(
    files: Option<std::collections::BTreeMap<String, String>>,
) -> CoordResult<Option<std::collections::BTreeMap<String, String>>> {
    let Some(files) = files else { return Ok(None) };
    let bad = |why: String| Err(CoordError::field(ErrorCode::InvalidArgument, "entry_files", why));
    if files.len() > MAX_ENTRY_FILES {
        return bad(format!("at most {MAX_ENTRY_FILES} files"));
    }
    for (path, text) in &files {
        let relative = !path.is_empty()
            && path.len() <= 4096
            && !path.starts_with('/')
            && !path.contains('\0')
            && path.split('/').all(|p| !matches!(p, "" | "." | ".."));
        if !relative {
            return bad(format!(
                "{:?} is not a path relative to where the command runs",
                path.chars().take(80).collect::<String>()
            ));
        }
        if text.len() > MAX_ENTRY_FILE_BYTES || text.contains('\0') {
            return bad(format!(
                "{path} is longer than {MAX_ENTRY_FILE_BYTES} bytes or holds a NUL"
            ));
        }
    }
    Ok(Some(files))
}

/// How many git aliases a check may carry, and how long each may be.
pub const MAX_GIT_ALIASES: usize = 512;
pub const MAX_GIT_ALIAS_BYTES: usize = 4096;

fn validate_aliases(
    aliases: Option<std::collections::BTreeMap<String, String>>,
) -> CoordResult<Option<std::collections::BTreeMap<String, String>>> {
    let Some(aliases) = aliases else { return Ok(None) };
    let bad = |why: String| Err(CoordError::field(ErrorCode::InvalidArgument, "git_aliases", why));
    if aliases.len() > MAX_GIT_ALIASES {
        return bad(format!("at most {MAX_GIT_ALIASES} aliases"));
    }
    for (name, value) in &aliases {
        let name_ok = !name.is_empty()
            && name.len() <= 256
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !name_ok {
            return bad(format!(
                "{:?} is not a git alias name",
                name.chars().take(80).collect::<String>()
            ));
        }
        if value.len() > MAX_GIT_ALIAS_BYTES || value.contains('\0') {
            return bad(format!(
                "the alias {name} is longer than {MAX_GIT_ALIAS_BYTES} bytes or holds a NUL"
            ));
        }
    }
    Ok(Some(aliases))
}

pub fn validate_check(req: CheckGuardrailsRequest) -> CoordResult<GuardCheck> {
    let command = req.command.filter(|c| !c.trim().is_empty());
    if let Some(c) = &command {
        if c.len() > MAX_COMMAND_BYTES {
            return Err(CoordError::field(
                ErrorCode::PayloadTooLarge,
                "command",
                format!("command is longer than {MAX_COMMAND_BYTES} bytes"),
            ));
        }
        if c.contains('\0') {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "command",
                "command contains a NUL character",
            ));
        }
    }
    let files = validate::text_list("files", req.files, MAX_FILES, 4096)?;
    let tool = validate::optional_text("tool", req.tool, 128)?;
    if command.is_none() && files.is_empty() && tool.is_none() {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "command",
            "give a command line to check (command), the files an edit changes (files) or the tool called (tool)",
        ));
    }
    let git_aliases = validate_aliases(req.git_aliases)?;
    let entry_files = validate_entry_files(req.entry_files)?;
    Ok(GuardCheck {
        command,
        files,
        tool,
        git_aliases,
        entry_files,
    })
}

/// The code changes a completed task reports, analysed before it may complete.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkChanges {
    /// Shell commands the work ran (or asks to run), one command line each.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub commands: Vec<String>,
    /// Files it changed.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub files: Vec<String>,
    /// A unified diff of the change: its files are checked, and the lines it adds to
    /// shell scripts and SQL files are analysed as commands.
    #[serde(default)]
    #[schemars(length(max = 1048576))]
    pub diff: Option<String>,
}

pub const MAX_DIFF_BYTES: usize = 1024 * 1024;

pub fn validate_changes(changes: Option<WorkChanges>) -> CoordResult<Option<WorkChanges>> {
    let Some(c) = changes else { return Ok(None) };
    if c.commands.len() > MAX_FILES {
        return Err(CoordError::field(
            ErrorCode::InvalidArgument,
            "changes.commands",
            format!("changes.commands has more than {MAX_FILES} commands"),
        ));
    }
    for (i, command) in c.commands.iter().enumerate() {
        validate_check(CheckGuardrailsRequest {
            command: Some(command.clone()),
            files: None,
            tool: None,
            ..Default::default()
        })
        .map_err(|e| e.with_field(&format!("changes.commands[{i}]")))?;
    }
    let files = validate::text_list("changes.files", Some(c.files), MAX_FILES, 4096)?;
    if c.diff.as_ref().is_some_and(|d| d.len() > MAX_DIFF_BYTES) {
        return Err(CoordError::field(
            ErrorCode::PayloadTooLarge,
            "changes.diff",
            format!("changes.diff is longer than {MAX_DIFF_BYTES} bytes"),
        ));
    }
    Ok(Some(WorkChanges { files, ..c }))
}

/// What a unified diff touches: every file it names, and per file the lines it adds.
pub fn diff_additions(diff: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let path = |rest: &str, prefix: &str| {
        let p = rest.trim();
        if p == "/dev/null" {
            String::new()
        } else {
            p.strip_prefix(prefix).unwrap_or(p).to_string()
        }
    };
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("--- ") {
            // A file section starts; a deleted file names only its old path here.
            out.push((path(rest, "a/"), String::new()));
        } else if let Some(rest) = line.strip_prefix("+++ ") {
            let new = path(rest, "b/");
            match out.last_mut() {
                Some(last) if last.1.is_empty() && (last.0.is_empty() || last.0 == new) => {
                    if !new.is_empty() {
                        last.0 = new;
                    }
                }
                _ => out.push((new, String::new())),
            }
        } else if let Some(added) = line.strip_prefix('+')
            && let Some((_, text)) = out.last_mut()
        {
            text.push_str(added);
            text.push('\n');
        }
    }
    out.retain(|(p, _)| !p.is_empty());
    out
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckGuardrailsResult {
    pub success: bool,
    /// Whether the command may run (with warnings, if any).
    pub allowed: bool,
    /// Everything found, warnings included.
    pub findings: Vec<Finding>,
    /// The approval that let this exact command through (spent now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_used: Option<String>,
    /// Allowed because the caller's profile lists the operation in `elevated_operations`
    /// (trust 3 or more); audited as such.
    #[serde(default)]
    pub elevated: bool,
}

impl CheckGuardrailsResult {
    /// The result once `approval_id` let a refused command through.
    pub fn approved_by(self, approval_id: String) -> CheckGuardrailsResult {
        CheckGuardrailsResult {
            allowed: true,
            approval_used: Some(approval_id),
            ..self
        }
    }
}

/// A row of `guardrail_violations`: a destructive operation that was blocked, or let
/// through by an approval or as an elevated operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub operation: String,
    pub category: String,
    pub pattern_matched: String,
    /// What was asked (redacted and bounded as in the audit row) and every finding.
    pub context: Value,
    pub blocked: bool,
    pub elevated: bool,
    pub approval_id: Option<String>,
}

impl Violation {
    /// The violation a guardrail refusal records (`None` for any other refusal).
    pub fn of_refusal(e: &CoordError, parameters: &Value, redact: &[&str]) -> Option<Violation> {
        if !matches!(
            e.code,
            ErrorCode::DestructiveOperationBlocked | ErrorCode::CredentialFileProtected
        ) {
            return None;
        }
        let detail = |k: &str| e.details.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(Violation {
            operation: detail("operation"),
            category: detail("category"),
            pattern_matched: detail("matched"),
            context: context(
                parameters,
                redact,
                e.details.get("findings").cloned().unwrap_or_default(),
            ),
            blocked: true,
            elevated: false,
            approval_id: e.details.get("approval_id").and_then(Value::as_str).map(str::to_string),
        })
    }

    /// The violation a check that passed only by an approval or an elevation records.
    pub fn of_pass(r: &CheckGuardrailsResult, parameters: &Value, redact: &[&str]) -> Option<Violation> {
        if !r.elevated && r.approval_used.is_none() {
            return None;
        }
        let f = r.findings.iter().find(|f| f.action != Action::Warn)?;
        Some(Violation {
            operation: f.operation.clone(),
            category: f.category.as_str().to_string(),
            pattern_matched: f.matched.clone(),
            context: context(
                parameters,
                redact,
                serde_json::to_value(&r.findings).unwrap_or_default(),
            ),
            blocked: false,
            elevated: r.elevated,
            approval_id: r.approval_used.clone(),
        })
    }
}

fn context(parameters: &Value, redact: &[&str], findings: Value) -> Value {
    let mut request = crate::validate::without_nul(parameters.clone());
    crate::audit::redact(&mut request, redact);
    serde_json::json!({
        "request": crate::audit::summarise(request, crate::audit::MAX_AUDIT_PARAMETERS_BYTES),
        "findings": crate::audit::summarise(findings, crate::audit::MAX_AUDIT_RESULT_BYTES),
    })
}

/// Trust needed before a profile's `elevated_operations` lift a block.
pub const ELEVATED_TRUST: u8 = 3;

/// The decision over findings for a caller of `trust` whose profile lists `elevated`
/// operations: the refusal of the first finding that is not allowed —
/// `credential_file_protected` (manual review, whatever the trust) before
/// `destructive_operation_blocked` — or `Ok(elevated)`, true when an elevated operation
/// let a block through.
pub fn decide(findings: &[Finding], trust: u8, elevated: &[String]) -> CoordResult<bool> {
    let (listed, omitted) = listed(findings);
    let refusal = |f: &Finding, code: ErrorCode| {
        let e = CoordError::new(code, format!("{} ({}): {}", f.operation, f.matched, f.reason))
            .with_detail("operation", f.operation.as_str())
            .with_detail("category", f.category.as_str())
            .with_detail("matched", f.matched.as_str())
            .with_detail("findings", serde_json::to_value(&listed).unwrap_or_default());
        if omitted > 0 {
            e.with_detail("findings_omitted", omitted)
        } else {
            e
        }
    };
    if let Some(f) = findings.iter().find(|f| f.category == Category::PersonDecision) {
        return Err(refusal(f, ErrorCode::PersonRequired));
    }
    if let Some(f) = findings.iter().find(|f| f.action == Action::ManualReview) {
        return Err(refusal(f, ErrorCode::CredentialFileProtected).with_detail("requires", "manual_review"));
    }
    let lifted =
        |f: &Finding| trust >= ELEVATED_TRUST && elevated.iter().any(|e| *e == f.operation || e == f.category.as_str());
    let stopping = |f: &&Finding| match f.action {
        Action::Block => true,
        Action::RequireTrust(t) => trust < t,
        Action::ManualReview | Action::Warn => false,
    };
    let blocked: Vec<&Finding> = findings.iter().filter(stopping).filter(|f| !lifted(f)).collect();
    let used_elevation = findings.iter().filter(stopping).any(lifted);
    match blocked.first() {
        Some(f) => {
            let mut e = refusal(f, ErrorCode::DestructiveOperationBlocked);
            // Every reason, not only the first: the person asked to approve must see all
            // that the command would do (an approval lets the whole command pass once).
            if blocked.len() > 1 {
                e.message = format!("{} findings block this command: {}", blocked.len(), reasons(&blocked));
            }
            Err(match f.action {
                Action::RequireTrust(t) => e.with_detail("required_trust", t).with_detail("actual_trust", trust),
                _ => e,
            })
        }
        None => Ok(used_elevation),
    }
}

/// How many findings of each operation a refusal's `findings` detail holds: a line of
/// thousands of commands would make an answer of hundreds of kilobytes for the agent to
/// read. The rest are counted (`findings_omitted`).
const FINDINGS_PER_OPERATION: usize = 10;

/// The findings a refusal lists, the first [`FINDINGS_PER_OPERATION`] of each operation,
/// and how many are left out.
fn listed(findings: &[Finding]) -> (Vec<&Finding>, usize) {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    let mut listed = Vec::new();
    for f in findings {
        let at = match seen.iter().position(|(op, _)| *op == f.operation) {
            Some(at) => at,
            None => {
                seen.push((&f.operation, 0));
                seen.len() - 1
            }
        };
        seen[at].1 += 1;
        if seen[at].1 <= FINDINGS_PER_OPERATION {
            listed.push(f);
        }
    }
    let omitted = findings.len() - listed.len();
    (listed, omitted)
}

/// How many places a refusal names for each operation it refuses: a line of thousands of
/// commands gives thousands of findings, and the message stays readable (the approval
/// shows the whole command beside it). Every operation is named, however many.
const PLACES_LISTED: usize = 3;

/// The findings of `blocked` by operation, in order of first appearance: each operation
/// once, with its first places and their reasons, a reason said once for the places that
/// share it (`op (a), (b): reason; (c): other reason; and 3 more`).
fn reasons(blocked: &[&Finding]) -> String {
    let mut groups: Vec<(&str, Vec<&Finding>)> = Vec::new();
    for f in blocked {
        match groups.iter_mut().find(|(op, _)| *op == f.operation) {
            Some((_, found)) => found.push(f),
            None => groups.push((&f.operation, vec![f])),
        }
    }
    let listed: Vec<String> = groups
        .iter()
        .map(|(op, found)| {
            let mut shown: Vec<(&str, Vec<String>)> = Vec::new();
            for f in found.iter().take(PLACES_LISTED) {
                let place = format!("({})", f.matched);
                match shown.iter_mut().find(|(reason, _)| *reason == f.reason) {
                    Some((_, at)) => at.push(place),
                    None => shown.push((&f.reason, vec![place])),
                }
            }
            let mut places: Vec<String> = shown
                .iter()
                .map(|(reason, at)| format!("{}: {reason}", at.join(", ")))
                .collect();
            if found.len() > PLACES_LISTED {
                places.push(format!("and {} more", found.len() - PLACES_LISTED));
            }
            format!("{op} {}", places.join("; "))
        })
        .collect();
    listed.join("; and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(action: Action, op: &str) -> Finding {
        Finding {
            category: Category::GitForce,
            operation: op.into(),
            action,
            matched: "x".into(),
            span: None,
            reason: "r".into(),
        }
    }

    #[test]
    fn decisions() {
        use Action::*;
        let cases: [(&[Finding], u8, Option<ErrorCode>); 6] = [
            (&[], 0, None),
            (&[finding(Warn, "delete_branch")], 0, None),
            (
                &[finding(Block, "force_push")],
                4,
                Some(ErrorCode::DestructiveOperationBlocked),
            ),
            (
                &[finding(RequireTrust(3), "migrate")],
                2,
                Some(ErrorCode::DestructiveOperationBlocked),
            ),
            (&[finding(RequireTrust(3), "migrate")], 3, None),
            (
                &[finding(Block, "force_push"), finding(ManualReview, "credential_write")],
                4,
                Some(ErrorCode::CredentialFileProtected),
            ),
        ];
        for (findings, trust, want) in cases {
            assert_eq!(
                decide(findings, trust, &[]).err().map(|e| e.code),
                want,
                "{findings:?} at {trust}"
            );
        }
        let e = decide(&[finding(ManualReview, "credential_write")], 4, &[]).unwrap_err();
        assert_eq!(e.to_value()["requires"], "manual_review");
        let e = decide(&[finding(Block, "force_push")], 4, &[]).unwrap_err();
        assert_eq!(e.to_value()["operation"], "force_push");
        // Elevated operations lift blocks at trust 3 or more, never a manual review.
        let elevated = ["force_push".to_string()];
        assert_eq!(decide(&[finding(Block, "force_push")], 3, &elevated), Ok(true));
        assert!(decide(&[finding(Block, "force_push")], 2, &elevated).is_err());
        assert!(decide(&[finding(Block, "hard_reset")], 4, &elevated).is_err());
        let review = [finding(ManualReview, "force_push")];
        assert!(decide(&review, 4, &elevated).is_err());
        // Every blocking finding is named in the refusal (and so in its approval request).
        let e = decide(
            &[finding(Block, "force_push"), finding(Block, "dynamic_command")],
            4,
            &[],
        )
        .unwrap_err();
        assert!(
            e.message.starts_with("2 findings block this command: force_push")
                && e.message.contains("; and dynamic_command"),
            "{}",
            e.message
        );
        assert_eq!(e.to_value()["operation"], "force_push");
        // An operation found in many places is named once, its places counted; every
        // operation is named, whatever comes before it.
        let mut many: Vec<Finding> = (0..500)
            .map(|i| Finding {
                matched: format!("rm -rf /d{i}"),
                reason: format!("deletes /d{i}"),
                ..finding(Block, "system_delete")
            })
            .collect();
        many.push(finding(Block, "reverse_shell"));
        let e = decide(&many, 4, &[]).unwrap_err();
        assert!(
            e.message.starts_with(
                "501 findings block this command: system_delete (rm -rf /d0): deletes /d0; \
                 (rm -rf /d1): deletes /d1; (rm -rf /d2): deletes /d2; and 497 more; and reverse_shell (x): r"
            ),
            "{}",
            e.message
        );
        assert!(e.message.len() < 1_000, "{}", e.message.len());
        // The detail lists ten of each operation, and counts the rest.
        let listed = e.details["findings"].as_array().unwrap();
        assert_eq!(listed.len(), 11);
        assert_eq!(listed[10]["operation"], "reverse_shell");
        assert_eq!(e.details["findings_omitted"], 490);
        // Places that share a reason are listed before it once.
        let same: Vec<Finding> = (0..5)
            .map(|i| Finding {
                matched: format!("f{i}|f{i}&"),
                reason: "a fork bomb".into(),
                ..finding(Block, "fork_bomb")
            })
            .collect();
        let e = decide(&same, 4, &[]).unwrap_err();
        assert_eq!(
            e.message,
            "5 findings block this command: fork_bomb (f0|f0&), (f1|f1&), (f2|f2&): a fork bomb; and 2 more"
        );
    }

    #[test]
    fn diffs() {
        let diff = "diff --git a/deploy.sh b/deploy.sh\n--- a/deploy.sh\n+++ b/deploy.sh\n@@ -1 +1,2 @@\n echo hi\n+rm -rf /srv\n--- a/.env\n+++ /dev/null\n@@ -1 +0,0 @@\n-X=1\n";
        let got = diff_additions(diff);
        assert_eq!(got[0], ("deploy.sh".to_string(), "rm -rf /srv\n".to_string()));
        assert!(got.iter().any(|(p, _)| p == ".env"), "{got:?}");
        let e = validate_changes(Some(WorkChanges {
            commands: vec!["ls".into(), "x".repeat(MAX_COMMAND_BYTES + 1)],
            ..Default::default()
        }))
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("changes.commands[1]"));
    }

    #[test]
    fn validation() {
        assert!(validate_check(CheckGuardrailsRequest::default()).is_err());
        let long = "x".repeat(MAX_COMMAND_BYTES + 1);
        let e = validate_check(CheckGuardrailsRequest {
            command: Some(long),
            files: None,
            tool: None,
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::PayloadTooLarge);
        assert!(
            validate_check(CheckGuardrailsRequest {
                command: Some("ls".into()),
                files: None,
                tool: None,
                ..Default::default()
            })
            .is_ok()
        );
    }
}
