//! Confined file tools: `read_file` and `write_file` resolve every path beneath a
//! workspace root with kernel-enforced confinement (`coord-files`), and a write commits
//! (renames) inside the transaction that checked the writer's lock and fencing token and
//! counted it against the writer's limits.

use crate::Coordinator;
use crate::files::file_error;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::audit::AuditEvents;
use coord_domain::files::{
    Encoding, Fence, ReadFileRequest, ReadFileResult, Window, WriteFileRequest, WriteFileResult, check_reserved,
    decode, describe_content, read_answer, validate_window,
};
use coord_domain::profiles::{Need, Permission, Resource};
use coord_domain::target::LockTarget;
use coord_domain::{CoordError, CoordResult, Identity};
use coord_files::{PreparedWrite, gate};
use coord_store::{OpCtx, WriteStep};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The file tools' events on the audit channel (`coord::audit`, spec 000's names); the
/// audit row of the call records its outcome as `file_read_success` / `_denied` (and
/// `file_write_...`) with the same fields, never the content.
const AUDIT_TARGET: &str = "coord::audit";

/// A repository path the lexical gate lets through, outside git's and coord's own files.
/// An absolute path inside the repository (what agents such as Claude Code send) is made
/// repository-relative by whole components first, as lock paths are; the gate then
/// refuses any `..` or `.` in what is left.
fn gated(c: &Coordinator, path: &str) -> CoordResult<String> {
    let relative = match c.root() {
        Some(root) if path.starts_with('/') => inside(root, path).unwrap_or(path),
        _ => path,
    };
    let path = gate(relative).map(String::from).map_err(|e| file_error(e, path))?;
    check_reserved(&path, &c.config().protected_paths)?;
    Ok(path)
}

/// `path` relative to `root` when its leading components are exactly the root's.
fn inside<'a>(root: &str, path: &'a str) -> Option<&'a str> {
    let root = root.trim_end_matches('/');
    let rest = path.strip_prefix(root)?.strip_prefix('/')?;
    (!root.is_empty() && !root.split('/').any(|c| c == ".." || c == ".")).then_some(rest)
}

/// Runs blocking file system work off the async runtime's threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> CoordResult<T> + Send + 'static) -> CoordResult<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        tracing::error!(error = %e, "a file operation panicked");
        CoordError::internal()
    })?
}

pub struct ReadFile;
impl Operation for ReadFile {
    const NAME: &'static str = "read_file";
    const SUMMARY: &'static str = "Read a file of the workspace (confined: no escape, no symlinks)";
    const DESCRIPTION: &'static str = "Read a file of the repository through coord: path is repository-relative \
        (no absolute path, no '..'); symlinks anywhere in the path, special files (FIFOs, devices, sockets), \
        files with several hard links and files over the size limit (1 MiB by default) are refused. Text is \
        answered by lines — offset (first line, from 1) and limit (lines) select a window — and anything else \
        whole in base64. Answers {success:true, path, content, encoding, bytes, total_lines, offset, lines, \
        truncated, size_limit}; errors: path_outside_workspace, symlink_denied, not_a_regular_file, \
        hardlink_denied, file_too_large, not_found, permission_denied.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const AUDIT_REDACT: &'static [&'static str] = &["content"];
    const AUDIT_EVENTS: Option<AuditEvents> = Some(AuditEvents {
        success: "file_read_success",
        denied: "file_read_denied",
    });
    const HTTP: &'static [Http] = &[Http::post("/files/read").errors(&[403, 404, 409])];
    const PATH_FIELDS: &'static [&'static str] = &["path"];
    const EXAMPLE: &'static str = "{\"path\": \"README.md\", \"offset\": 1, \"limit\": 40}";
    type Request = ReadFileRequest;
    type Response = ReadFileResult;
    type Args = (String, Window);

    fn uses((path, _): &Self::Args) -> Vec<(Resource, Vec<String>)> {
        vec![(Resource::MaxFileReads, vec![path.clone()])]
    }

    fn validate(c: &Coordinator, _: &Identity, req: ReadFileRequest) -> CoordResult<Self::Args> {
        Ok((gated(c, &req.path)?, validate_window(req.offset, req.limit)?))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (path, window): Self::Args) -> CoordResult<ReadFileResult> {
        let limit = c.config().file_size_limit;
        let agent = ctx.who.agent_id.clone();
        tracing::info!(target: AUDIT_TARGET, event = "file_read_attempt", agent = %agent, path = ?path, size_limit = limit);
        let (coord, p) = (c.clone(), path.clone());
        let outcome = blocking(move || {
            let (workspace, rel) = coord.workspaces()?.find(&p)?;
            let read = workspace.read(rel, limit).map_err(|e| file_error(e, &p))?;
            read_answer(p, read.content, window, limit)
        })
        .await;
        let answered = c.store().record_file_read(ctx, outcome).await;
        match &answered {
            Ok(r) => {
                tracing::info!(target: AUDIT_TARGET, event = "file_read_success", agent = %agent, path = ?path, bytes = r.bytes)
            }
            Err(e) => {
                tracing::info!(target: AUDIT_TARGET, event = "file_read_denied", agent = %agent, path = ?path, reason = e.code.as_str())
            }
        }
        answered
    }
}

/// A validated write.
pub struct WriteArgs {
    path: String,
    target: LockTarget,
    content: Vec<u8>,
    token: Option<i64>,
    create_only: bool,
}

pub struct WriteFile;
impl Operation for WriteFile {
    const NAME: &'static str = "write_file";
    const SUMMARY: &'static str = "Write a file of the workspace atomically, fenced by your lock";
    const DESCRIPTION: &'static str = "Replace (or create) a file of the repository through coord, atomically: \
        readers see the old or the new content, never a mix, and a refused or failed write changes nothing. \
        path is repository-relative and its directory must exist; content is the whole new content (encoding \
        utf8, or base64 for binary). Pass fencing_token from your acquire_lock: if your lock expired and \
        someone else took the file meanwhile, the write is refused with stale_fencing_token and nothing is \
        written — re-acquire, re-read and redo the change. A file locked by another agent is refused \
        (file_locked); profiles with lock_before_write need your lock first (lock_required); create_only \
        refuses an existing file (file_exists); credential files need a person's approval. Answers \
        {success:true, path, bytes, created, atomic_temp, fencing_token}.";
    const ACCESS: Access = Access::Agent;
    // It replaces a file's content (MCP clients are told: destructiveHint).
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::new(Permission::Write, 1).starting_work();
    const AUDIT_REDACT: &'static [&'static str] = &["content"];
    const AUDIT_EVENTS: Option<AuditEvents> = Some(AuditEvents {
        success: "file_write_success",
        denied: "file_write_denied",
    });
    const HTTP: &'static [Http] = &[Http::post("/files/write").errors(&[403, 404, 409])];
    const PATH_FIELDS: &'static [&'static str] = &["path"];
    const EXAMPLE: &'static str = "{\"path\": \"notes/plan.md\", \"content\": \"# Plan\\n\", \"fencing_token\": 42}";
    type Request = WriteFileRequest;
    type Response = WriteFileResult;
    type Args = WriteArgs;

    fn uses(args: &WriteArgs) -> Vec<(Resource, Vec<String>)> {
        vec![(Resource::MaxFileModifications, vec![args.path.clone()])]
    }

    fn validate(c: &Coordinator, _: &Identity, req: WriteFileRequest) -> CoordResult<WriteArgs> {
        let path = gated(c, &req.path)?;
        let content = decode(&req.content, req.encoding.unwrap_or(Encoding::Utf8))?;
        let limit = c.config().file_size_limit;
        if content.len() as u64 > limit {
            return Err(file_error(
                coord_files::FileError::TooLarge {
                    size: content.len() as u64,
                    limit,
                },
                &path,
            ));
        }
        Ok(WriteArgs {
            target: LockTarget::literal_file(&path, None)?,
            path,
            content,
            token: req.fencing_token,
            create_only: req.create_only.unwrap_or(false),
        })
    }

    async fn execute(c: &Coordinator, mut ctx: OpCtx, args: WriteArgs) -> CoordResult<WriteFileResult> {
        // The rows of this call (and an approval request, if any) say what was written
        // by size and digest; the content itself is redacted. (The approval's binding,
        // the hash of the request, was computed before: it covers the content itself.)
        describe_content(&mut ctx.parameters, &args.content);
        let agent = ctx.who.agent_id.clone();
        let path = args.path.clone();
        let (coord, limit) = (c.clone(), c.config().file_size_limit);
        let (p, content, create_only) = (path.clone(), args.content, args.create_only);
        let prepared = blocking(move || {
            let (workspace, rel) = coord.workspaces()?.find(&p)?;
            workspace
                .prepare_write(rel, &content, limit, create_only)
                .map_err(|e| file_error(e, &p))
        })
        .await;
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                // Nothing to fence: the file system refused the path itself.
                tracing::info!(target: AUDIT_TARGET, event = "file_write_attempt", agent = %agent, path = ?path);
                tracing::info!(target: AUDIT_TARGET, event = "file_write_denied", agent = %agent, path = ?path, reason = e.code.as_str());
                c.audit_refusal(&ctx, &e).await;
                return Err(e);
            }
        };
        tracing::info!(target: AUDIT_TARGET, event = "file_write_attempt", agent = %agent, path = ?path, atomic_temp = prepared.temp_name());
        // Credential files go through the guardrails (refused and queued for a person,
        // unless a person approved exactly this write) — once the write could happen at
        // all, so nobody is asked to approve one that cannot. A refusal is this call's
        // outcome (file_write_denied; the prepared temporary file is dropped, removed);
        // a pass by approval is a step of its own (file_write_approved).
        let mut guard_ctx = OpCtx {
            events: Some(AuditEvents {
                success: "file_write_approved",
                denied: "file_write_denied",
            }),
            ..ctx.clone()
        };
        let findings = coord_guardrails::analyze_files(std::slice::from_ref(&args.path));
        let elevated = crate::ops::guardrails::enforce(c, &mut guard_ctx, findings).await?;
        let fence = Fence {
            target: args.target,
            token: args.token,
            lock_required: ctx.lock_before_write,
        };
        let step = Arc::new(CommitOnce::new(path.clone(), prepared));
        let written = c.store().fenced_write(ctx, fence, step.clone()).await;
        match &written {
            Ok(w) => {
                tracing::info!(target: AUDIT_TARGET, event = "file_write_success", agent = %agent, path = ?path, bytes = w.bytes)
            }
            Err(e) if step.committed() => {
                // The rename happened, then the transaction failed to commit: the file
                // changed without its audit row.
                tracing::error!(target: AUDIT_TARGET, event = "file_write_unrecorded", agent = %agent, path = ?path, error = %e, "a write is in place but its audit row could not be committed")
            }
            Err(e) => {
                tracing::info!(target: AUDIT_TARGET, event = "file_write_denied", agent = %agent, path = ?path, reason = e.code.as_str())
            }
        }
        if written.is_ok()
            && let Some(passed) = elevated
            && let Err(e) = crate::ops::guardrails::record_elevated(c, guard_ctx, passed).await
        {
            tracing::error!(error = %e, "an elevated write could not be recorded");
        }
        written
    }
}

/// The store's write step: commits the prepared write the first time it is called and
/// answers that outcome on every call (a store may retry its transaction). Dropped
/// uncalled — the decision or the limits refused — the temporary file is removed.
struct CommitOnce {
    path: String,
    pending: Mutex<Option<PreparedWrite>>,
    outcome: OnceLock<CoordResult<WriteFileResult>>,
}

impl CommitOnce {
    fn new(path: String, prepared: PreparedWrite) -> CommitOnce {
        CommitOnce {
            path,
            pending: Mutex::new(Some(prepared)),
            outcome: OnceLock::new(),
        }
    }
}

impl WriteStep for CommitOnce {
    fn commit(&self) -> CoordResult<WriteFileResult> {
        self.outcome
            .get_or_init(|| {
                let prepared = self
                    .pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
                    .ok_or_else(CoordError::internal)?;
                let written = prepared.commit().map_err(|e| file_error(e, &self.path))?;
                if !written.synced {
                    tracing::warn!(path = ?self.path, "a write is in place, but its directory could not be synced");
                }
                Ok(WriteFileResult {
                    success: true,
                    path: self.path.clone(),
                    bytes: written.bytes,
                    created: !written.replaced,
                    atomic_temp: written.temp,
                    fencing_token: None,
                })
            })
            .clone()
    }

    fn committed(&self) -> bool {
        self.outcome.get().is_some_and(Result::is_ok)
    }
}

#[cfg(test)]
mod tests {
    use super::inside;

    #[test]
    fn absolute_paths_inside_the_repository_by_whole_components() {
        let cases = [
            ("/work/repo", "/work/repo/src/a.rs", Some("src/a.rs")),
            ("/work/repo/", "/work/repo/src/a.rs", Some("src/a.rs")),
            ("/work/repo", "/work/repo2/src/a.rs", None),
            ("/work/repo", "/work/repo", None),
            ("/work/repo", "/work/repo/../etc/passwd", Some("../etc/passwd")),
            ("/work/repo", "/etc/passwd", None),
            ("/", "/etc/passwd", None),
        ];
        for (root, path, want) in cases {
            assert_eq!(inside(root, path), want, "{root} {path}");
        }
    }
}
