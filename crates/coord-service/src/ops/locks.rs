//! File locks.

use crate::Coordinator;
use crate::op::{Http, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::locks::{
    AcquireLockRequest, AcquireLockResult, CheckEditRequest, CheckEditResult, CheckLocksRequest, CheckLocksResult,
    LockStatusRequest, LockStatusResult, ReleaseAllResult, ReleaseLockRequest, ReleaseLockResult, validate_acquire,
    validate_check, validate_edit,
};
use coord_domain::profiles::{Need, Permission, Resource};
use coord_domain::target::LockTarget;
use coord_domain::{CoordResult, Empty, Identity};
use coord_store::OpCtx;

pub struct AcquireLock;
impl Operation for AcquireLock {
    const POLICY_FROM_LAST_CALL: bool = true;
    const NAME: &'static str = "acquire_lock";
    const SUMMARY: &'static str = "Acquire or refresh a lock on a file, a directory or a glob";
    const DESCRIPTION: &'static str = "Take an exclusive lock before editing, so other agents do not edit the \
        same files at the same time: on a file (\"src/auth.rs\"), a directory and everything below it \
        (\"src/auth/\", trailing slash) or a glob (\"src/auth/**/*.rs\"; * stays inside one directory, ** spans \
        any number). Paths are repo-relative (absolute paths inside the repository are accepted). Answers \
        {success:true, action:\"acquired\"|\"refreshed\", expires_at, fencing_token}; calling again while you \
        hold it refreshes the lease. If another agent holds a lock that overlaps it: {success:false, \
        action:\"blocked\", locked_path, locked_by, expires_at, lock_reason, hint} — do not edit those files; \
        work on something else or wait, or ask the holder with send_message to \"holders:<locked_path>\". \
        Your own locks never block you. Release it when done.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::new(Permission::Write, 1).starting_work();
    const HTTP: &'static [Http] = &[Http::post("/locks/acquire")];
    const PATH_FIELDS: &'static [&'static str] = &["file_path"];
    const EXAMPLE: &'static str =
        "{\"file_path\": \"src/auth.rs\", \"reason\": \"refactor login\", \"ttl_minutes\": 60}";
    type Request = AcquireLockRequest;
    type Response = AcquireLockResult;
    type Args = (LockTarget, Option<String>, i64);

    fn uses((target, _, _): &Self::Args) -> Vec<(Resource, Vec<String>)> {
        vec![(Resource::MaxFileModifications, vec![target.key().to_string()])]
    }

    // A directory or a glob would let a limited agent change any number of files for
    // the price of one.
    fn unbounded((target, _, _): &Self::Args) -> Option<Resource> {
        target.is_pattern().then_some(Resource::MaxFileModifications)
    }

    fn validate(c: &Coordinator, _: &Identity, req: AcquireLockRequest) -> CoordResult<Self::Args> {
        validate_acquire(req, c.root())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (target, reason, ttl): Self::Args) -> CoordResult<AcquireLockResult> {
        c.store().acquire_lock(ctx, target, reason, ttl).await
    }
}

pub struct ReleaseLock;
impl Operation for ReleaseLock {
    const POLICY_FROM_LAST_CALL: bool = true;
    const NAME: &'static str = "release_lock";
    const SUMMARY: &'static str = "Release a lock you hold";
    const DESCRIPTION: &'static str = "Release a lock you hold, as soon as you are done editing (also after a \
        failure). Name it as you acquired it (\"src/auth/\" for a directory lock, the glob for a glob lock). Answers {success:true, released:true}; error not_lock_owner if another agent \
        holds it, lock_not_held if nobody does (e.g. it expired).";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/locks/release").errors(&[409])];
    const PATH_FIELDS: &'static [&'static str] = &["file_path"];
    const EXAMPLE: &'static str = "{\"file_path\": \"src/auth.rs\"}";
    type Request = ReleaseLockRequest;
    type Response = ReleaseLockResult;
    type Args = String;

    fn validate(c: &Coordinator, _: &Identity, req: ReleaseLockRequest) -> CoordResult<String> {
        Ok(LockTarget::parse(&req.file_path, c.root())?.into_key())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, path: String) -> CoordResult<ReleaseLockResult> {
        c.store().release_lock(ctx, path).await
    }
}

pub struct ReleaseMyLocks;
impl Operation for ReleaseMyLocks {
    const NAME: &'static str = "release_my_locks";
    const SUMMARY: &'static str = "Release every lock you hold";
    const DESCRIPTION: &'static str = "Release every file lock you hold at once, e.g. when you abandon a piece of \
        work or before you stop. Answers {success:true, released:[paths whose live lock was released]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/locks/release-mine")];
    type Request = Empty;
    type Response = ReleaseAllResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<ReleaseAllResult> {
        c.store().release_all_locks(ctx).await
    }
}

pub struct CheckLocks;
impl Operation for CheckLocks {
    const NAME: &'static str = "check_locks";
    const SUMMARY: &'static str = "Live locks that cover the given paths (all when none given)";
    const DESCRIPTION: &'static str = "List live locks — all of them, or those that overlap the given paths \
        (files, directories or globs: a directory lock covers every file below it, a glob lock every path it \
        can match). Use it before planning edits to see what other agents are working on. Answers {locks:[{file_path, \
        locked_by, agent_type, reason, locked_at, expires_at, fencing_token}]}.";
    const ACCESS: Access = Access::Read;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[
        Http::post("/locks/check"),
        Http::get("/locks").input(Input::None).summary("Every live lock"),
    ];
    const PATH_FIELDS: &'static [&'static str] = &["file_paths"];
    const EXAMPLE: &'static str = "{\"file_paths\": [\"src/auth.rs\"]}";
    type Request = CheckLocksRequest;
    type Response = CheckLocksResult;
    type Args = Option<Vec<LockTarget>>;

    fn validate(c: &Coordinator, _: &Identity, req: CheckLocksRequest) -> CoordResult<Self::Args> {
        validate_check(req, c.root())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, paths: Self::Args) -> CoordResult<CheckLocksResult> {
        c.store().check_locks(ctx, paths).await
    }
}

pub struct LockStatus;
impl Operation for LockStatus {
    const NAME: &'static str = "lock_status";
    const SUMMARY: &'static str = "Whether one file is locked, and by whom";
    const DESCRIPTION: &'static str = "Ask whether one file is locked right now (by its own lock, or by a \
        directory or glob lock that covers it), and by whom. Answers {success:true, file_path, locked, \
        lock:{file_path, locked_by, agent_type, reason, expires_at, fencing_token}|null}. \
        To check many files at once use check_locks; to ask whether you may edit them use check_edit.";
    const ACCESS: Access = Access::Read;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/locks/status/{*file_path}").input(Input::Path("file_path"))];
    const PATH_FIELDS: &'static [&'static str] = &["file_path"];
    const EXAMPLE: &'static str = "{\"file_path\": \"src/auth.rs\"}";
    type Request = LockStatusRequest;
    type Response = LockStatusResult;
    type Args = LockTarget;

    fn validate(c: &Coordinator, _: &Identity, req: LockStatusRequest) -> CoordResult<LockTarget> {
        LockTarget::parse(&req.file_path, c.root())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, target: LockTarget) -> CoordResult<LockStatusResult> {
        let path = target.key().to_string();
        let locks = c.store().check_locks(ctx, Some(vec![target])).await?;
        Ok(LockStatusResult::of(path, locks))
    }
}

pub struct CheckEdit;
impl Operation for CheckEdit {
    const POLICY_FROM_LAST_CALL: bool = true;
    const NAME: &'static str = "check_edit";
    const SUMMARY: &'static str = "May you change these files now? Refused when another agent holds a lock on one";
    const DESCRIPTION: &'static str = "Ask before changing files whether another agent holds a live lock on any \
        of them — its own lock, or a directory or glob lock that covers it (the edit and commit guards ask \
        this). Answers {success:true, allowed:true, paths}, or the error \
        file_locked naming the holder, until when and why (locked_by, expires_at, lock_reason, blocked:[locks]) \
        — then do not change those files: work on something else or coordinate with the holder. Your own locks \
        never block you.";
    // Like check_locks: a guard without a key still works (an anonymous caller holds no
    // locks, so every live lock on the files is someone else's).
    const ACCESS: Access = Access::Read;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::new(Permission::Write, 1);
    const HTTP: &'static [Http] = &[Http::post("/locks/check-edit").errors(&[409])];
    const PATH_FIELDS: &'static [&'static str] = &["paths"];
    const EXAMPLE: &'static str = "{\"paths\": [\"src/auth.rs\", \"src/main.rs\"]}";
    type Request = CheckEditRequest;
    type Response = CheckEditResult;
    type Args = Vec<LockTarget>;

    // The edit guard asks right before an edit: the files it allows count as modified.
    fn uses(files: &Vec<LockTarget>) -> Vec<(Resource, Vec<String>)> {
        vec![(
            Resource::MaxFileModifications,
            files.iter().map(|f| f.key().to_string()).collect(),
        )]
    }

    fn validate(c: &Coordinator, _: &Identity, req: CheckEditRequest) -> CoordResult<Vec<LockTarget>> {
        validate_edit(req, c.root())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, files: Vec<LockTarget>) -> CoordResult<CheckEditResult> {
        c.store().check_edit(ctx, files).await
    }
}
