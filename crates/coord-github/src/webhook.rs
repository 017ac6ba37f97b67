//! GitHub webhook deliveries: the signature check (`X-Hub-Signature-256`), the parts of
//! the payloads coord reads (unknown fields ignored: GitHub adds fields freely), and what
//! a push means for verification — the changed files, the branch and its agent.

use coord_domain::verification::SubmitChangesetRequest;
use coord_domain::{CoordError, CoordResult, ErrorCode};
use serde::{Deserialize, Serialize};

/// GitHub delivers at most 25 MB; larger events are never sent.
pub const MAX_PAYLOAD_BYTES: usize = 25 * 1024 * 1024;
/// The identity deliveries are processed and audited under.
pub const WEBHOOK_AGENT: &str = "github-webhook";
pub const WEBHOOK_AGENT_TYPE: &str = "github";
/// GitHub lists at most this many commits in a push delivery, and this many files per
/// commit: at either limit the file list may be incomplete.
pub const MAX_PUSH_COMMITS: usize = 2048;
pub const MAX_COMMIT_FILES: usize = 3000;

/// Why a delivery's signature is not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureError {
    /// No secret is configured: every delivery is refused.
    NotConfigured,
    Missing,
    /// Not `sha256=` followed by 64 hex digits.
    Malformed,
    /// No configured secret signs this body so.
    Mismatch,
}

impl SignatureError {
    pub fn message(self) -> &'static str {
        match self {
            SignatureError::NotConfigured => {
                "no GitHub webhook secret is configured (GITHUB_WEBHOOK_SECRET or GITHUB_WEBHOOK_SECRET_FILE): every delivery is refused"
            }
            SignatureError::Missing => "X-Hub-Signature-256 is missing",
            SignatureError::Malformed => "X-Hub-Signature-256 is not sha256=<64 hex digits>",
            SignatureError::Mismatch => "X-Hub-Signature-256 does not match the body under the configured secret",
        }
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// The `X-Hub-Signature-256` value GitHub sends for `body` under `secret`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC accepts keys of any length");
    mac.update(body);
    let digest: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={digest}")
}

/// Checks `X-Hub-Signature-256` against the raw body under each of `secrets` (several
/// while one is being rotated): HMAC-SHA-256, compared in constant time.
pub fn verify_signature(secrets: &[Vec<u8>], body: &[u8], header: Option<&str>) -> Result<(), SignatureError> {
    use hmac::{KeyInit, Mac};
    let digest = claimed_signature(secrets, header)?;
    let ok = secrets.iter().any(|secret| {
        let Ok(mut mac) = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret) else {
            return false;
        };
        mac.update(body);
        mac.verify_slice(&digest).is_ok()
    });
    if ok { Ok(()) } else { Err(SignatureError::Mismatch) }
}

/// The digest a delivery's `X-Hub-Signature-256` header claims, checked before its body
/// is read (an unsigned delivery is refused without reading up to 25 MB): a secret must
/// be configured and the header be `sha256=` and 64 hex digits.
pub fn claimed_signature(secrets: &[Vec<u8>], header: Option<&str>) -> Result<Vec<u8>, SignatureError> {
    if secrets.is_empty() {
        return Err(SignatureError::NotConfigured);
    }
    let header = header.ok_or(SignatureError::Missing)?;
    header
        .trim()
        .strip_prefix("sha256=")
        .and_then(unhex)
        .filter(|d| d.len() == 32)
        .ok_or(SignatureError::Malformed)
}

/// `receive_github_delivery`'s request: what the webhook door read from the headers
/// and the verified body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GithubDeliveryRequest {
    /// `X-GitHub-Delivery`: GitHub's id of the delivery (a redelivery keeps it).
    #[schemars(length(min = 1, max = 128))]
    pub delivery_id: String,
    /// `X-GitHub-Event`: push, issues, ping, ...
    #[schemars(length(min = 1, max = 64))]
    pub event: String,
    pub payload: serde_json::Value,
}

/// A delivery to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub delivery_id: String,
    pub event: String,
    pub action: Option<String>,
    pub payload: serde_json::Value,
}

fn invalid(field: &str, message: impl Into<String>) -> CoordError {
    CoordError::field(ErrorCode::InvalidArgument, field, message)
}

pub fn validate_delivery(req: GithubDeliveryRequest) -> CoordResult<Delivery> {
    let id = req.delivery_id.trim();
    if id.is_empty() || id.len() > 128 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(invalid(
            "delivery_id",
            "delivery_id (X-GitHub-Delivery): 1 to 128 letters, digits, '-' or '_'",
        ));
    }
    let event = req.event.trim();
    if event.is_empty() || event.len() > 64 || !event.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        return Err(invalid("event", "event (X-GitHub-Event): lowercase letters and '_'"));
    }
    if !req.payload.is_object() {
        return Err(invalid("payload", "payload: GitHub's JSON object"));
    }
    let action = req
        .payload
        .get("action")
        .and_then(serde_json::Value::as_str)
        .map(|a| a.chars().take(64).collect());
    Ok(Delivery {
        delivery_id: id.to_string(),
        event: event.to_string(),
        action,
        payload: req.payload,
    })
}

/// What happened to a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Recorded, not processed yet (the coordinator stopped in between: it is processed
    /// on the next start).
    Received,
    Processed,
    /// Nothing coord acts on (recorded all the same).
    Ignored,
    /// Processing failed; `note` says why.
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Received => "received",
            DeliveryStatus::Processed => "processed",
            DeliveryStatus::Ignored => "ignored",
            DeliveryStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<DeliveryStatus> {
        use DeliveryStatus::*;
        [Received, Processed, Ignored, Failed]
            .into_iter()
            .find(|d| d.as_str() == s)
    }
}

/// `receive_github_delivery`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GithubDeliveryResult {
    pub success: bool,
    pub delivery_id: String,
    pub event: String,
    /// This delivery id was recorded before: nothing was done again.
    pub duplicate: bool,
    pub status: DeliveryStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The changeset a push became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changeset_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Named {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub login: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PushCommit {
    #[serde(default)]
    pub added: Vec<String>,
    #[serde(default)]
    pub removed: Vec<String>,
    #[serde(default)]
    pub modified: Vec<String>,
}

/// The fields of a `push` delivery coord reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Push {
    // `created`, `forced`: GitHub's commit lists are then partial.
    #[serde(rename = "ref")]
    pub git_ref: String,
    #[serde(default)]
    pub after: String,
    #[serde(default)]
    pub created: bool,
    #[serde(default)]
    pub deleted: bool,
    #[serde(default)]
    pub forced: bool,
    #[serde(default)]
    pub commits: Vec<PushCommit>,
    #[serde(default)]
    pub pusher: Option<Named>,
    #[serde(default)]
    pub sender: Option<Named>,
    #[serde(default)]
    pub repository: Option<Repository>,
}

/// The repository an event is about.
#[derive(Debug, Clone, Deserialize)]
pub struct Repository {
    pub id: i64,
    #[serde(default)]
    pub full_name: String,
}

/// `agent/<agent id>/<task>` → (agent id, task); the ref may be full (`refs/heads/…`,
/// as in push) or short (as in create and delete). A task may contain `/`.
pub fn agent_branch(git_ref: &str) -> Option<(&str, &str)> {
    let short = git_ref.strip_prefix("refs/heads/").unwrap_or(git_ref);
    let rest = short.strip_prefix("agent/")?;
    let (agent, task) = rest.split_once('/')?;
    (!agent.is_empty() && !task.is_empty()).then_some((agent, task))
}

/// What a push asks of verification.
#[derive(Debug, Clone, PartialEq)]
pub enum PushPlan {
    /// A branch deleted, a tag, or a push without changed files: nothing to verify.
    Nothing(String),
    /// A changeset to submit as `github:<login>` (GitHub's sender).
    Changeset {
        agent_id: String,
        request: SubmitChangesetRequest,
        /// Why GitHub's lists may be incomplete (a forced push, a new branch, a push at
        /// the caps): every policy then runs.
        incomplete: Option<String>,
    },
}

/// The changed files of a push (added and modified; removed apart, a file last removed
/// counts as removed), its branch and head commit, and whose change it is: GitHub's
/// sender as `github:<login>`, never the agent a branch name claims.
pub fn plan_push(p: &Push) -> PushPlan {
    let Some(branch) = p.git_ref.strip_prefix("refs/heads/") else {
        return PushPlan::Nothing(format!("{} is not a branch", p.git_ref));
    };
    if p.deleted {
        return PushPlan::Nothing(format!("branch {branch} was deleted"));
    }
    let mut files: Vec<String> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    for c in &p.commits {
        for f in c.added.iter().chain(&c.modified) {
            removed.retain(|r| r != f);
            if !files.contains(f) {
                files.push(f.clone());
            }
        }
        for f in &c.removed {
            files.retain(|x| x != f);
            if !removed.contains(f) {
                removed.push(f.clone());
            }
        }
    }
    if files.is_empty() && removed.is_empty() {
        return PushPlan::Nothing(format!("the push to {branch} lists no changed files"));
    }
    let incomplete = if p.forced {
        Some("a forced push: GitHub lists only the new commits")
    } else if p.created {
        Some("a new branch: GitHub lists only the commits new to the repository")
    } else if p.commits.len() >= MAX_PUSH_COMMITS
        || p.commits
            .iter()
            .any(|c| c.added.len() + c.modified.len() + c.removed.len() >= MAX_COMMIT_FILES)
    {
        Some("a push at GitHub's limits (2,048 commits, 3,000 files a commit)")
    } else {
        None
    };
    // Whoever GitHub says pushed: a branch name is only a name, anyone who may push can
    // choose it, so it never decides whose change this is (or whose trust applies).
    let who = p
        .sender
        .as_ref()
        .and_then(|n| n.login.clone())
        .or_else(|| p.pusher.as_ref().and_then(|n| n.name.clone()))
        .unwrap_or_else(|| "unknown".into());
    let mut description = format!("pushed to GitHub by {who}");
    if let Some((agent, task)) = agent_branch(&p.git_ref) {
        description.push_str(&format!(" on agent {agent}'s branch for task {task}"));
    }
    PushPlan::Changeset {
        agent_id: format!("github:{who}"),
        request: SubmitChangesetRequest {
            files,
            removed,
            branch: Some(branch.to_string()),
            commit: (!p.after.is_empty()).then(|| p.after.clone()),
            description: Some(description),
            diff: None,
        },
        incomplete: incomplete.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn githubs_published_test_vector() {
        // docs.github.com, "Validating webhook deliveries".
        let secret = b"It's a Secret to Everybody".to_vec();
        let good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        let body = b"Hello, World!";
        assert_eq!(
            verify_signature(std::slice::from_ref(&secret), body, Some(good)),
            Ok(())
        );
        assert_eq!(signature(&secret, body), good);
        // (secrets, body, header, answer)
        let other = b"another secret".to_vec();
        type Case<'a> = (Vec<Vec<u8>>, &'a [u8], Option<&'a str>, Result<(), SignatureError>);
        let cases: Vec<Case> = vec![
            (vec![other.clone(), secret.clone()], body, Some(good), Ok(())),
            (vec![], body, Some(good), Err(SignatureError::NotConfigured)),
            (vec![secret.clone()], body, None, Err(SignatureError::Missing)),
            (
                vec![secret.clone()],
                b"Hello, World?",
                Some(good),
                Err(SignatureError::Mismatch),
            ),
            (vec![other], body, Some(good), Err(SignatureError::Mismatch)),
            (
                vec![secret.clone()],
                body,
                Some(&good[7..]),
                Err(SignatureError::Malformed),
            ),
            (
                vec![secret.clone()],
                body,
                Some("sha1=757107ea"),
                Err(SignatureError::Malformed),
            ),
            (
                vec![secret.clone()],
                body,
                Some("sha256=zz"),
                Err(SignatureError::Malformed),
            ),
            (
                vec![secret],
                body,
                Some("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18"),
                Err(SignatureError::Mismatch),
            ),
        ];
        for (secrets, body, header, want) in cases {
            assert_eq!(verify_signature(&secrets, body, header), want, "{header:?}");
        }
    }

    fn push(v: serde_json::Value) -> Push {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_push_becomes_a_changeset_of_its_branch_agent() {
        // The original prototype read `added` as objects and crashed on every real push:
        // GitHub sends lists of strings.
        let p = push(json!({
            "ref": "refs/heads/agent/claude-1/42", "after": "9fceb02d0ae598e95dc970b74767f19372d61af8",
            "commits": [
                {"id": "a", "added": ["src/new.rs"], "removed": ["src/old.rs"], "modified": ["README.md"]},
                {"id": "b", "added": [], "removed": ["src/new.rs"], "modified": ["README.md", "src/old.rs"]}
            ],
            "pusher": {"name": "octocat"}, "sender": {"login": "octocat"}, "unknown_field": 1
        }));
        let PushPlan::Changeset {
            agent_id,
            request,
            incomplete,
        } = plan_push(&p)
        else {
            panic!("a changeset");
        };
        // The branch names claude-1; GitHub says octocat pushed: octocat's change.
        assert_eq!(agent_id, "github:octocat");
        assert_eq!(
            request.description.as_deref(),
            Some("pushed to GitHub by octocat on agent claude-1's branch for task 42")
        );
        assert_eq!(request.files, ["README.md", "src/old.rs"]);
        assert_eq!(request.removed, ["src/new.rs"]);
        assert_eq!(request.branch.as_deref(), Some("agent/claude-1/42"));
        assert_eq!(
            request.commit.as_deref(),
            Some("9fceb02d0ae598e95dc970b74767f19372d61af8")
        );
        assert_eq!(incomplete, None);
        // A forced push, a new branch: the lists may be partial.
        let p = push(json!({"ref": "refs/heads/main", "after": "abcdef1", "forced": true,
                            "commits": [{"modified": ["a.rs"]}], "pusher": {"name": "octocat"}}));
        let PushPlan::Changeset {
            agent_id, incomplete, ..
        } = plan_push(&p)
        else {
            panic!("a changeset");
        };
        assert_eq!(agent_id, "github:octocat");
        assert!(incomplete.unwrap().starts_with("a forced push"));
        let p = push(json!({"ref": "refs/heads/x", "after": "abcdef1", "created": true,
                            "commits": [{"modified": ["a.rs"]}], "sender": {"login": "hubot"}}));
        let PushPlan::Changeset {
            agent_id, incomplete, ..
        } = plan_push(&p)
        else {
            panic!("a changeset");
        };
        assert_eq!(agent_id, "github:hubot");
        assert!(incomplete.unwrap().starts_with("a new branch"));
        for (v, why) in [
            (
                json!({"ref": "refs/tags/v1", "commits": [{"modified": ["a"]}]}),
                "not a branch",
            ),
            (
                json!({"ref": "refs/heads/x", "deleted": true, "commits": []}),
                "deleted",
            ),
            (json!({"ref": "refs/heads/x", "commits": []}), "no changed files"),
        ] {
            match plan_push(&push(v)) {
                PushPlan::Nothing(m) => assert!(m.contains(why), "{m}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn agent_branches() {
        let cases = [
            ("refs/heads/agent/claude-1/42", Some(("claude-1", "42"))),
            ("agent/claude-1/fix/login", Some(("claude-1", "fix/login"))),
            ("agent/claude-1", None),
            ("agent//42", None),
            ("refs/heads/main", None),
            ("refs/tags/agent/x/1", None),
        ];
        for (r, want) in cases {
            assert_eq!(agent_branch(r), want, "{r}");
        }
    }

    #[test]
    fn deliveries_are_checked() {
        let ok = validate_delivery(GithubDeliveryRequest {
            delivery_id: "72d3162e-cc78-11e3-81ab-4c9367dc0958".into(),
            event: "issues".into(),
            payload: json!({"action": "labeled"}),
        })
        .unwrap();
        assert_eq!(ok.action.as_deref(), Some("labeled"));
        for (id, event, payload, field) in [
            ("", "push", json!({}), "delivery_id"),
            ("a b", "push", json!({}), "delivery_id"),
            ("x", "Push", json!({}), "event"),
            ("x", "push", json!([]), "payload"),
        ] {
            let e = validate_delivery(GithubDeliveryRequest {
                delivery_id: id.into(),
                event: event.into(),
                payload,
            })
            .unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field));
        }
    }
}
