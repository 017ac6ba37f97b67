//! `coord audit`: query (the default), export as JSON Lines, verify the hash chain,
//! prune. Every subcommand is registry operations (`query_audit`, `verify_audit`,
//! `prune_audit`); this module turns flags into requests and renders answers.

use crate::anchor;
use crate::args::{AuditArgs, AuditCommand, AuditCommandArgs, ResultArg};
use crate::context::Context;
use crate::output::ellipsis;
use crate::output::{EXIT_OK, EXIT_REFUSED, Output, table, when};
use crate::values::parse_when;
use coord_domain::access::Principal;
use coord_domain::audit::{AuditOutcome, AuditQueryRequest, AuditQueryResult};
use coord_domain::audit_chain::{
    ChainHead, PruneAuditRequest, PruneAuditResult, VerifyAuditRequest, VerifyAuditResult,
};
use coord_domain::{CoordError, CoordResult, ErrorCode};
use coord_service::ops::audit as ops;
use coord_service::{Coordination, Operation, call};
use serde_json::Value;
use std::io::Write;

/// Rows per page of an export.
const EXPORT_PAGE: i64 = 1000;

async fn run_op<O: Operation>(coord: &dyn Coordination, ctx: &Context, req: O::Request) -> CoordResult<O::Response> {
    call::<O, _>(coord, &Principal::local(ctx.caller.clone()), req).await
}

pub async fn run(args: AuditCommandArgs, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    match args.command {
        None => query(args.query, coord, ctx, out).await,
        Some(AuditCommand::Query(q)) => query(q, coord, ctx, out).await,
        Some(AuditCommand::Export { filters, output }) => match export(filters, output, coord, ctx).await {
            Ok(n) => {
                eprintln!("exported {n} audit rows");
                EXIT_OK
            }
            Err(e) => out.error(&e),
        },
        Some(AuditCommand::Verify {
            expect_head,
            anchor,
            no_anchor,
        }) => verify(expect_head, anchor, no_anchor, coord, ctx, out).await,
        Some(AuditCommand::Prune {
            older_than_days,
            dry_run,
        }) => {
            let req = PruneAuditRequest {
                older_than_days,
                dry_run: Some(dry_run),
            };
            out.result(run_op::<ops::PruneAudit>(coord, ctx, req).await, render_prune)
        }
    }
}

/// `coord audit verify`: the chain checked against the head recorded outside the store
/// (`--expect-head`, else the anchor's last), then the new head recorded there.
async fn verify(
    expect_head: Option<String>,
    anchor_file: Option<std::path::PathBuf>,
    no_anchor: bool,
    coord: &dyn Coordination,
    ctx: &Context,
    out: Output,
) -> u8 {
    let file = (!no_anchor)
        .then(|| anchor::path(ctx, anchor_file.as_deref()))
        .flatten();
    let anchored = match file.as_deref().map(anchor::last).transpose() {
        Ok(a) => a.flatten(),
        Err(why) => return out.error(&CoordError::new(ErrorCode::InvalidArgument, why).with_field("anchor")),
    };
    let expect_head = match expect_head.as_deref().map(parse_head).transpose() {
        Ok(Some(h)) => Some(h),
        Ok(None) => anchored.as_ref().map(|a| ChainHead {
            seq: a.seq,
            hash: a.hash.clone(),
        }),
        Err(e) => return out.error(&e),
    };
    let r = run_op::<ops::VerifyAudit>(coord, ctx, VerifyAuditRequest { expect_head }).await;
    let intact = r.as_ref().is_ok_and(|v| v.intact);
    if let (Ok(v), Some(file)) = (&r, &file) {
        if let Some(a) = &anchored {
            eprintln!("checked against the head recorded {} ({}:{})", a.at, a.seq, a.hash);
        }
        // Only a chain that checks out moves the anchor on: a tampered one keeps the
        // head that proves it.
        if let Some(head) = v.head.as_ref().filter(|_| intact) {
            match anchor::record(file, head, &anchor::database_name(ctx)) {
                Ok(()) => eprintln!("head {}:{} recorded in {}", head.seq, head.hash, file.display()),
                Err(e) => eprintln!("warning: the head could not be recorded in {}: {e}", file.display()),
            }
        }
    }
    let code = out.result(r, render_verify);
    if code == EXIT_OK && !intact { EXIT_REFUSED } else { code }
}

fn request(args: AuditArgs) -> CoordResult<AuditQueryRequest> {
    let (result, success) = match args.result {
        None => (None, None),
        Some(ResultArg::Allowed | ResultArg::Success) => (Some(AuditOutcome::Allowed), None),
        Some(ResultArg::Refused) => (Some(AuditOutcome::Refused), None),
        Some(ResultArg::Error) => (Some(AuditOutcome::Error), None),
        Some(ResultArg::Failure) => (None, Some(false)),
    };
    Ok(AuditQueryRequest {
        agent_id: args.agent,
        operation: args.operation,
        since: args.since.as_deref().map(|s| parse_when("since", s)).transpose()?,
        until: args.until.as_deref().map(|s| parse_when("until", s)).transpose()?,
        success,
        result,
        elevated: args.elevated.then_some(true),
        path: args.path,
        exclude_agent_type: args.exclude_type,
        after_id: args.after_id,
        limit: args.limit,
    })
}

async fn query(args: AuditArgs, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    match request(args) {
        Ok(mut req) => {
            req.path = req.path.map(|p| ctx.lock_path(&p));
            out.result(run_op::<ops::QueryAudit>(coord, ctx, req).await, render_audit)
        }
        Err(e) => out.error(&e),
    }
}

/// Pages forward from `--after-id` (or the start) until a short page; every row is one
/// JSON line. Answers the number of rows written.
async fn export(
    args: AuditArgs,
    output: Option<std::path::PathBuf>,
    coord: &dyn Coordination,
    ctx: &Context,
) -> CoordResult<u64> {
    let page = args.limit.unwrap_or(EXPORT_PAGE);
    let mut req = request(args)?;
    req.after_id = Some(req.after_id.unwrap_or(0));
    req.limit = Some(page);
    let io = |e: std::io::Error| CoordError::new(ErrorCode::InvalidArgument, format!("cannot write the export: {e}"));
    let mut sink: Box<dyn Write> = match &output {
        Some(path) => Box::new(std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut written = 0u64;
    loop {
        let r = run_op::<ops::QueryAudit>(coord, ctx, req.clone()).await?;
        for e in &r.entries {
            serde_json::to_writer(&mut sink, e).map_err(|e| io(e.into()))?;
            sink.write_all(b"\n").map_err(io)?;
            written += 1;
        }
        match r.entries.last() {
            Some(last) if r.entries.len() as i64 == page => req.after_id = Some(last.id),
            _ => break,
        }
    }
    sink.flush().map_err(io)?;
    Ok(written)
}

fn parse_head(raw: &str) -> CoordResult<ChainHead> {
    let bad = || {
        CoordError::field(
            ErrorCode::InvalidArgument,
            "expect_head",
            format!("--expect-head is SEQ:HASH as `coord audit verify` prints it, not {raw:?}"),
        )
    };
    let (seq, hash) = raw.trim().split_once(':').ok_or_else(bad)?;
    Ok(ChainHead {
        seq: seq.parse().map_err(|_| bad())?,
        hash: hash.to_string(),
    })
}

/// What a row was about, when its parameters name one thing: a file, a command, a task.
fn target(parameters: &Value) -> String {
    // `target` (a network check), `name` (a policy, a guardrail), the agent an operator
    // acted for (a profile assignment, a key, a launch's pre-flight verdict).
    [
        "path",
        "file_path",
        "command",
        "task_id",
        "target",
        "name",
        "target_agent_id",
        "bound_agent_id",
    ]
    .iter()
    .find_map(|k| parameters.get(*k).and_then(Value::as_str))
    .map(|t| ellipsis(t, 40))
    .unwrap_or_default()
}

fn render_audit(r: &AuditQueryResult) -> String {
    if r.entries.is_empty() {
        return "no audit entries".into();
    }
    let mut t = table(&["ID", "TIME", "AGENT", "OPERATION", "TARGET", "RESULT", "MS"]);
    for e in &r.entries {
        let outcome = match (&e.error_code, e.success) {
            (Some(code), _) => code.clone(),
            (None, true) if e.result.get("elevated") == Some(&Value::Bool(true)) => "ok (elevated)".into(),
            (None, true) => "ok".into(),
            (None, false) => e
                .result
                .get("action")
                .or_else(|| e.result.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or("refused")
                .to_string(),
        };
        t.add_row(vec![
            e.id.to_string(),
            e.timestamp.format("%Y-%m-%d %H:%M:%S%.3fZ").to_string(),
            e.agent_id.clone(),
            e.operation.clone(),
            target(&e.parameters),
            outcome,
            format!("{:.2}", e.duration_ms),
        ]);
    }
    t.to_string()
}

fn render_verify(r: &VerifyAuditResult) -> String {
    let mut s = match &r.problem {
        None => format!(
            "audit trail intact: {} chained rows checked{}",
            r.rows_checked,
            r.first_seq
                .filter(|s| *s > 1)
                .map(|s| format!(" (from position {s}; earlier ones pruned)"))
                .unwrap_or_default()
        ),
        Some(p) => format!(
            "AUDIT TRAIL TAMPERED ({}): {}{}{}",
            p.kind,
            p.message,
            p.seq.map(|s| format!("\nfirst bad position: {s}")).unwrap_or_default(),
            p.id.map(|i| format!("\nfirst bad row id:   {i}")).unwrap_or_default()
        ),
    };
    s.push_str(&format!(
        "\ncheckpoints: {} (signatures {})",
        r.checkpoints, r.signatures
    ));
    if r.unchained_rows > 0 {
        s.push_str(&format!(
            "\nunchained:   {} rows written before the chain existed (not covered)",
            r.unchained_rows
        ));
    }
    if let Some(h) = &r.head {
        s.push_str(&format!("\nhead:        {}:{}", h.seq, h.hash));
    }
    s
}

fn render_prune(r: &PruneAuditResult) -> String {
    let verb = if r.dry_run { "would remove" } else { "removed" };
    let mut s = format!("{verb} {} audit rows older than {}", r.pruned_rows, when(r.cutoff));
    if let Some(c) = &r.checkpoint {
        s.push_str(&format!(
            "\ncheckpoint {}: positions up to {} (hash {}), signed with key {}",
            c.id, c.body.through_seq, c.body.through_hash, c.body.key_id
        ));
    }
    s
}
