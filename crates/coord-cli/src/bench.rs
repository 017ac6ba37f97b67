//! `coord bench`: the command-line face of `coord-bench`.

use crate::args::{BenchArgs, BenchWorkload};
use crate::context::{Context, DbTarget};
use crate::output::{self, table};
use coord_bench::{BenchDb, BenchError, BenchOptions, Mode, Report, Workload};
use std::io::IsTerminal;

/// The benchmark's options from the command line and the context: a scratch database
/// beside the one `--db` names (never the repository's coordinator itself).
fn options(args: &BenchArgs, ctx: &Context, json: bool) -> Result<BenchOptions, u8> {
    if let Err(e) = crate::open::local_only(ctx, "`coord bench`") {
        eprintln!("coord bench: {}", e.message);
        return Err(output::exit_code(&e));
    }
    let workload = match args.workload {
        BenchWorkload::Locks => Workload::Locks,
        BenchWorkload::Queue => Workload::Queue,
        BenchWorkload::Mcp => Workload::Mcp,
        BenchWorkload::Http => Workload::Http,
        BenchWorkload::Agents => Workload::Agents,
    };
    // Scratch databases only: never the repository's coordinator (its audit trail is
    // append-only, and a benchmark would fill it).
    let db = match (&ctx.db, ctx.db_is_default) {
        (_, true) => BenchDb::Sqlite {
            dir: std::env::temp_dir(),
        },
        (DbTarget::Sqlite(path), false) => BenchDb::Sqlite {
            dir: path
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_else(std::env::temp_dir),
        },
        (DbTarget::Postgres(url), false) => BenchDb::Postgres { url: url.clone() },
    };
    let exe = std::env::current_exe().map_err(|e| {
        eprintln!("coord bench: cannot find the coord binary: {e}");
        output::EXIT_UNAVAILABLE
    })?;
    Ok(BenchOptions {
        workload,
        db,
        clients: args.clients,
        seconds: args.seconds,
        mode: if args.raw {
            Mode::Raw
        } else if args.compare {
            Mode::Compare
        } else {
            Mode::Measured
        },
        paths: args
            .paths
            .unwrap_or(if workload == Workload::Agents { 250 } else { 1000 }),
        held: args.held,
        agents: args.agents,
        time_scale: args.time_scale,
        exe,
        progress: !json && std::io::stderr().is_terminal(),
    })
}

/// Resolves on SIGINT; the handler is installed by this call, not by the first poll.
fn interrupt() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        let mut signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
        async move {
            match signal.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

pub async fn run(args: &BenchArgs, ctx: &Context, json: bool) -> u8 {
    let opts = match options(args, ctx, json) {
        Ok(o) => o,
        Err(code) => return code,
    };
    // Registered before the run starts (a `ctrl_c()` future registers only when first
    // polled, and the run may open its scratch database before yielding).
    let interrupted = interrupt();
    let run = coord_bench::run(&opts, |r| {
        // One JSON line per run, as soon as it ends, in both modes.
        println!("{}", serde_json::to_string(r).unwrap_or_default());
    });
    let outcome = tokio::select! {
        outcome = run => outcome,
        _ = interrupted => {
            // Scratch databases must not outlive an interrupted run.
            coord_bench::abandon().await;
            eprintln!("coord bench: interrupted; scratch databases removed");
            return 130;
        }
    };
    match outcome {
        Ok(reports) => {
            if !json {
                println!("{}", render(&reports));
            }
            let clean = reports.iter().all(|r| r.errors == 0 && r.invariant_violations == 0);
            if clean { output::EXIT_OK } else { output::EXIT_REFUSED }
        }
        Err(BenchError::Coord(e)) => {
            eprintln!("coord bench: {} [{}]", e.message, e.code);
            output::exit_code(&e)
        }
        Err(BenchError::Setup(why)) => {
            eprintln!("coord bench: {why}");
            output::EXIT_USAGE
        }
    }
}

fn render(reports: &[Report]) -> String {
    let mut t = table(&[
        "WORKLOAD",
        "BACKEND",
        "MODE",
        "CLIENTS",
        "OPS",
        "OPS/S",
        "P50 µs",
        "P99 µs",
        "ERRORS",
        "VIOLATIONS",
        "VS BASELINE",
    ]);
    for r in reports {
        t.add_row(vec![
            r.workload.to_string(),
            r.backend.to_string(),
            r.mode.to_string(),
            r.clients.to_string(),
            r.ops.to_string(),
            format!("{:.0}", r.ops_per_sec),
            r.p50_us.to_string(),
            r.p99_us.to_string(),
            r.errors.to_string(),
            r.invariant_violations.to_string(),
            r.baseline
                .as_ref()
                .map(|b| format!("{:.2} × {}", b.ratio, b.mode))
                .unwrap_or_default(),
        ]);
    }
    t.to_string()
}
