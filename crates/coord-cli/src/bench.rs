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
        BenchWorkload::Chaos => Workload::Chaos,
        BenchWorkload::Guardrails
        | BenchWorkload::Files
        | BenchWorkload::Hooks
        | BenchWorkload::Recall
        | BenchWorkload::Proxy => {
            unreachable!("runs without a bench database")
        }
    };
    let chaos = workload == Workload::Chaos;
    let db = scratch_db(ctx, args.rtt)?;
    if args.serve_rtt.is_some() && workload != Workload::Http {
        eprintln!("coord bench: --serve-rtt applies to http (the clients reach coord serve over HTTP)");
        return Err(output::EXIT_USAGE);
    }
    let serve_rtt = millis("--serve-rtt", args.serve_rtt)?;
    let exe = std::env::current_exe().map_err(|e| {
        eprintln!("coord bench: cannot find the coord binary: {e}");
        output::EXIT_UNAVAILABLE
    })?;
    Ok(BenchOptions {
        workload,
        db,
        clients: args.clients,
        seconds: args.seconds.unwrap_or(if chaos { 30.0 } else { 10.0 }),
        mode: if args.raw {
            Mode::Raw
        } else if args.compare {
            Mode::Compare
        } else {
            Mode::Measured
        },
        paths: args
            .paths
            .unwrap_or(if matches!(workload, Workload::Agents | Workload::Chaos) {
                250
            } else {
                1000
            }),
        held: args.held,
        serve_rtt,
        agents: args.agents.unwrap_or(if chaos { 16 } else { 1000 }),
        nodes: args.nodes,
        time_scale: args.time_scale.unwrap_or(if chaos { 20.0 } else { 1.0 }),
        exe,
        progress: !json && std::io::stderr().is_terminal(),
    })
}

/// Where scratch databases are made: beside the database `--db` names, never in it
/// (the repository's audit trail is append-only, and a benchmark would fill it).
fn scratch_db(ctx: &Context, rtt_ms: Option<f64>) -> Result<BenchDb, u8> {
    let rtt = millis("--rtt", rtt_ms)?;
    let postgres = matches!((&ctx.db, ctx.db_is_default), (DbTarget::Postgres(_), false));
    if rtt.is_some() && !postgres {
        eprintln!(
            "coord bench: --rtt applies to PostgreSQL (--db postgres://…): SQLite has no network between coord and the database"
        );
        return Err(output::EXIT_USAGE);
    }
    Ok(match (&ctx.db, ctx.db_is_default) {
        (_, true) => BenchDb::Sqlite {
            dir: std::env::temp_dir(),
        },
        (DbTarget::Sqlite(path), false) => BenchDb::Sqlite {
            dir: path
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_else(std::env::temp_dir),
        },
        (DbTarget::Postgres(url), false) => BenchDb::Postgres { url: url.clone(), rtt },
    })
}

/// A round-trip time given in milliseconds (`flag`), from 0 to 10 s.
fn millis(flag: &str, ms: Option<f64>) -> Result<Option<std::time::Duration>, u8> {
    match ms {
        None => Ok(None),
        Some(ms) if ms.is_finite() && (0.0..=10_000.0).contains(&ms) => {
            Ok(Some(std::time::Duration::from_secs_f64(ms / 1000.0)))
        }
        Some(ms) => {
            eprintln!("coord bench: {flag} takes milliseconds from 0 to 10000, got {ms}");
            Err(output::EXIT_USAGE)
        }
    }
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
    let databaseless = matches!(
        args.workload,
        BenchWorkload::Guardrails | BenchWorkload::Files | BenchWorkload::Recall | BenchWorkload::Proxy
    );
    if databaseless && args.rtt.is_some() {
        eprintln!(
            "coord bench: --rtt applies to the workloads with a bench database (locks, queue, mcp, http, agents, chaos, hooks)"
        );
        return output::EXIT_USAGE;
    }
    if matches!(args.workload, BenchWorkload::Guardrails) {
        return guardrails(args, json);
    }
    if matches!(args.workload, BenchWorkload::Files) {
        return files(args, json).await;
    }
    if matches!(args.workload, BenchWorkload::Hooks) {
        return hooks(args, ctx, json).await;
    }
    if matches!(args.workload, BenchWorkload::Recall) {
        return recall(args, ctx, json).await;
    }
    if matches!(args.workload, BenchWorkload::Proxy) {
        return proxy(args, json).await;
    }
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
            // Under faults, requests fail by design: only what must never happen counts.
            let clean = reports
                .iter()
                .all(|r| r.invariant_violations == 0 && (r.errors == 0 || r.workload == "chaos"));
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
        "VS LIMIT",
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
            match (&r.limit, &r.limit_unavailable) {
                (Some(l), _) => format!("{:.2} × {}", l.ratio, l.mode),
                (None, Some(_)) => "not run".into(),
                (None, None) => String::new(),
            },
        ]);
    }
    let mut out = t.to_string();
    for r in reports.iter().filter(|r| r.workload == "chaos") {
        out.push_str(&chaos_summary(r));
    }
    for why in reports.iter().filter_map(|r| r.limit_unavailable.as_deref()) {
        out.push_str(&format!("\nno independent limit: {why}"));
    }
    if reports.iter().any(|r| r.rtt_ms.is_some()) {
        out.push('\n');
        out.push_str(&round_trips(reports));
    }
    out
}

/// `--rtt`: each operation's latency and round trips, beside the round-trip time added.
fn round_trips(reports: &[Report]) -> String {
    let mut t = table(&[
        "WORKLOAD",
        "MODE",
        "RTT ms",
        "OPERATION",
        "P50 ms",
        "P99 ms",
        "ROUND TRIPS",
    ]);
    let ms = |us: u64| format!("{:.1}", us as f64 / 1000.0);
    let trips = |n: Option<f64>| n.map(|n| format!("{n:.2}")).unwrap_or_else(|| "-".into());
    for r in reports.iter().filter(|r| r.ops > 0) {
        let rtt = r.rtt_ms.map(|x| format!("{x:.0}")).unwrap_or_default();
        let row = |op: &str, p50, p99, n| {
            vec![
                r.workload.to_string(),
                r.mode.to_string(),
                rtt.clone(),
                op.to_string(),
                ms(p50),
                ms(p99),
                trips(n),
            ]
        };
        t.add_row(row("(unit)", r.p50_us, r.p99_us, r.round_trips_per_op));
        for (op, s) in &r.per_operation {
            t.add_row(row(op, s.p50_us, s.p99_us, s.round_trips));
        }
    }
    t.to_string()
}

/// What `coord bench chaos` injected and checked, for people.
fn chaos_summary(r: &Report) -> String {
    let n = |k: &str| r.counts.get(k).copied().unwrap_or(0);
    let faults: Vec<String> = ["kill_node", "stop_node", "kill_agent", "db_outage"]
        .iter()
        .filter(|k| r.counts.contains_key(**k))
        .map(|k| format!("{k} ×{}", n(k)))
        .collect();
    format!(
        "\nfaults injected: {}\nchecked: {} acknowledged submissions present, {} acknowledged completions \
         completed, {} audited completions (none twice), {} chain rows intact; service back within {} ms of \
         a fault at most, killed agents' claims requeued within {} ms; {} violation(s)",
        faults.join(", "),
        n("checked_submissions"),
        n("checked_completions"),
        n("audited_completions"),
        n("chain_rows_checked"),
        n("recovery_max_ms"),
        n("requeue_max_ms"),
        r.invariant_violations
    )
}

/// `coord bench guardrails`: exit 0 when the goals hold (≥ 99% of destructive commands
/// refused, < 1% of benign ones flagged, p99 < 1 ms), 1 otherwise.
/// The independent corpus beside its goals: the tuning part (the rules may learn from
/// it) and the frozen held-out part (the goals are judged on it).
fn independent_table(i: &coord_bench::guardrails::Independent) -> comfy_table::Table {
    let pct = |n: usize, of: usize| {
        let r = if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
        format!("{n} of {of} ({r:.1}%)")
    };
    let mut t = table(&["INDEPENDENT CORPUS", "TUNING", "HELD OUT", "GOAL"]);
    let (a, b) = (&i.tuning, &i.held_out);
    let rows = [
        (
            "destructive refused",
            pct(a.blocked, a.destructive),
            pct(b.blocked, b.destructive),
            ">= 99%",
        ),
        (
            "benign refused",
            pct(a.benign_blocked, a.benign),
            pct(b.benign_blocked, b.benign),
            "<= 1%",
        ),
        (
            "benign warned",
            pct(a.benign_warned, a.benign),
            pct(b.benign_warned, b.benign),
            "<= 3%",
        ),
        (
            "run-time only, refused",
            pct(a.held_refused, a.held),
            pct(b.held_refused, b.held),
            "all",
        ),
    ];
    for (m, x, y, goal) in rows {
        t.add_row(vec![m.to_string(), x, y, goal.to_string()]);
    }
    t
}

fn guardrails(args: &BenchArgs, json: bool) -> u8 {
    use coord_bench::guardrails as g;
    let cases = match &args.corpus {
        None => None,
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| g::read_corpus(&t))
        {
            Ok(c) if c.is_empty() => {
                eprintln!("coord bench guardrails: {}: no commands in it", path.display());
                return output::EXIT_USAGE;
            }
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("coord bench guardrails: {}: {e}", path.display());
                return output::EXIT_USAGE;
            }
        },
    };
    let r = g::run(cases, args.rounds);
    if json {
        println!("{}", serde_json::to_string(&r).unwrap_or_default());
    } else {
        let s = &r.score;
        let pct = |x: f64| format!("{:.2}%", x * 100.0);
        let mut t = table(&["MEASURE", "VALUE", "GOAL"]);
        let rows = [
            (
                "destructive refused".to_string(),
                format!("{} of {} ({})", s.blocked, s.destructive, pct(r.blocked_ratio)),
                ">= 99%".to_string(),
            ),
            (
                "  as the labelled operation".into(),
                format!("{} of {}", s.blocked_as_labelled, s.destructive),
                String::new(),
            ),
            (
                "benign flagged".into(),
                format!("{} of {} ({})", s.flagged, s.benign, pct(r.flagged_ratio)),
                "< 1%".into(),
            ),
            (
                "warnings given".into(),
                format!("{} of {}", s.warned, s.warnings),
                String::new(),
            ),
            (
                "held by design (run-time values)".into(),
                format!("{} of {}", s.held_refused, s.held),
                String::new(),
            ),
            (
                "analysis p50 / p99 / max".into(),
                format!(
                    "{:.1} / {:.1} / {:.1} µs",
                    r.analysis.p50_ns as f64 / 1e3,
                    r.analysis.p99_ns as f64 / 1e3,
                    r.analysis.max_ns as f64 / 1e3
                ),
                "p99 < 1000 µs".into(),
            ),
            (
                "baseline: parse only p50 / p99".into(),
                format!(
                    "{:.1} / {:.1} µs ({:.2} × at p99)",
                    r.parse_only.p50_ns as f64 / 1e3,
                    r.parse_only.p99_ns as f64 / 1e3,
                    r.ratio_p99
                ),
                String::new(),
            ),
        ];
        for (m, v, goal) in rows {
            t.add_row(vec![m, v, goal]);
        }
        println!("{t}");
        if let Some(i) = &r.independent {
            println!("{}", independent_table(i));
        }
        println!(
            "{} commands x {} rounds; goals {}",
            r.commands,
            r.rounds,
            if r.goals_met { "met" } else { "NOT met" }
        );
        if args.misses || !s.mistakes.is_empty() && s.mistakes.len() <= 20 {
            for m in &s.mistakes {
                let label = serde_json::to_value(m.label).unwrap_or_default();
                println!(
                    "  {:?} labelled {}{}: found {}",
                    m.command,
                    label.as_str().unwrap_or_default(),
                    m.want.as_deref().map(|w| format!(" ({w})")).unwrap_or_default(),
                    if m.got.is_empty() {
                        "nothing".to_string()
                    } else {
                        m.got.join(", ")
                    }
                );
            }
        }
    }
    if r.goals_met {
        output::EXIT_OK
    } else {
        output::EXIT_REFUSED
    }
}

/// `coord bench files`.
async fn files(args: &BenchArgs, json: bool) -> u8 {
    // --rounds defaults to 20 for guardrails; file reads need more samples for a p99.
    let rounds = if args.rounds == 20 { 2000 } else { args.rounds };
    let r = match coord_bench::files::run(rounds, &std::env::temp_dir()).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coord bench files: {e}");
            return output::EXIT_UNAVAILABLE;
        }
    };
    if json {
        println!("{}", serde_json::to_string(&r).unwrap_or_default());
        return if r.goals_met { 0 } else { 1 };
    }
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let mut t = table(&[
        "OP",
        "SIZE",
        "CONFINED p50/p99 µs",
        "PLAIN p50/p99 µs",
        "OVERHEAD p50",
        "CONFINED MiB/s",
        "TOOL p50/p99 µs",
    ]);
    for c in &r.cases {
        t.add_row(vec![
            c.op.to_string(),
            if c.bytes >= 1024 * 1024 {
                format!("{} MiB", c.bytes / (1024 * 1024))
            } else {
                format!("{} KiB", c.bytes / 1024)
            },
            format!("{} / {}", us(c.confined.latency.p50_ns), us(c.confined.latency.p99_ns)),
            format!("{} / {}", us(c.plain.latency.p50_ns), us(c.plain.latency.p99_ns)),
            format!("{:+.1}%", c.overhead_p50 * 100.0),
            format!("{:.0}", c.confined.mib_per_s),
            format!("{} / {}", us(c.tool.latency.p50_ns), us(c.tool.latency.p99_ns)),
        ]);
    }
    println!("{t}");
    println!(
        "{} reads per size; goal: confinement overhead < {:.0}% at 4 KiB — {}",
        r.rounds,
        r.goal_overhead * 100.0,
        if r.goals_met { "met" } else { "NOT met" }
    );
    if r.goals_met { 0 } else { 1 }
}

/// `coord bench proxy`.
async fn proxy(args: &BenchArgs, json: bool) -> u8 {
    let rounds = if args.rounds == 20 { 300 } else { args.rounds };
    let r = match coord_bench::proxy::run(rounds, &std::env::temp_dir()).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coord bench proxy: {e}");
            return output::EXIT_UNAVAILABLE;
        }
    };
    if json {
        println!("{}", serde_json::to_string(&r).unwrap_or_default());
        return output::EXIT_OK;
    }
    let us = |ns: u64| format!("{:.0}", ns as f64 / 1e3);
    let mut t = table(&["REQUEST", "p50 µs", "p99 µs", "ADDED p50 µs"]);
    for (name, l, added) in [
        ("direct (baseline)", &r.direct, None),
        ("forwarded by the proxy", &r.forward, Some(r.forward_added_p50_us)),
        ("through a CONNECT tunnel", &r.tunnel, Some(r.tunnel_added_p50_us)),
    ] {
        t.add_row(vec![
            name.to_string(),
            us(l.p50_ns),
            us(l.p99_ns),
            added.map_or("-".into(), |a| format!("{a:+.0}")),
        ]);
    }
    println!("{t}");
    println!(
        "{} requests of each kind on fresh loopback connections, interleaved; every proxied one decided by two \
         check_network_access calls (the name, then its address) and logged (SQLite)\nthroughput: direct {:.0} MiB/s, through a tunnel {:.0} MiB/s ({} MiB x 4 each)",
        r.rounds,
        r.direct_mib_per_s,
        r.tunnel_mib_per_s,
        coord_bench::proxy::BULK_BYTES / (1024 * 1024)
    );
    output::EXIT_OK
}

/// `coord bench hooks`.
async fn hooks(args: &BenchArgs, ctx: &Context, json: bool) -> u8 {
    let rounds = if args.rounds == 20 { 50 } else { args.rounds };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("coord bench hooks: cannot find the coord binary: {e}");
            return output::EXIT_UNAVAILABLE;
        }
    };
    // The repository's default database is the scratch repository's own SQLite.
    let db = match scratch_db(ctx, args.rtt) {
        Ok(db) => db,
        Err(code) => return code,
    };
    let r = match coord_bench::hooks::run(&exe, rounds, &std::env::temp_dir(), &db).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("coord bench hooks: {e}");
            return output::EXIT_UNAVAILABLE;
        }
    };
    if json {
        println!("{}", serde_json::to_string(&r).unwrap_or_default());
        return if r.goals_met { 0 } else { 1 };
    }
    let ms = |ns: u64| format!("{:.2}", ns as f64 / 1e6);
    // Across a network the goal is the decision's own time (issue 56), not a ratio.
    let network = r.rtt_ms.filter(|ms| *ms > 0.0);
    let mut t = table(&["RUN", "p50 ms", "p99 ms", "÷ START p50", "GOAL"]);
    t.add_row(vec![
        "coord --version (process start)".to_string(),
        ms(r.baseline.p50_ns),
        ms(r.baseline.p99_ns),
        "1.00".into(),
        String::new(),
    ]);
    for c in &r.cases {
        t.add_row(vec![
            format!(
                "hook PreToolUse: {}, {}",
                c.payload,
                if c.setting == "alone" {
                    "alone"
                } else {
                    "coordinator running"
                }
            ),
            ms(c.latency.p50_ns),
            ms(c.latency.p99_ns),
            format!("{:.2}", c.ratio_p50),
            match (c.setting, network) {
                ("alone", _) => String::new(),
                (_, Some(rtt)) => format!("p50 <= {:.0} ms", rtt * coord_bench::hooks::GOAL_RTTS),
                (_, None) => format!("<= {:.1}", r.goal_ratio),
            },
        ]);
    }
    println!("{t}");
    if let Some(rtt) = r.rtt_ms {
        let trips: Vec<String> = r.round_trips.iter().map(|(s, n)| format!("{s} {n:.2}")).collect();
        println!(
            "{}: {rtt:.0} ms added to each round trip; round trips per hook call: {}",
            r.backend,
            trips.join(", ")
        );
    }
    println!(
        "{} runs each, interleaved; goal (with the coordinator running, as in a session) {}",
        r.rounds,
        if r.goals_met { "met" } else { "NOT met" }
    );
    if r.goals_met { 0 } else { 1 }
}

/// `coord bench recall`: exit 0 when the goals hold.
async fn recall(args: &BenchArgs, ctx: &Context, json: bool) -> u8 {
    use coord_bench::recall as r;
    if let Err(e) = crate::open::local_only(ctx, "`coord bench`") {
        eprintln!("coord bench: {}", e.message);
        return output::exit_code(&e);
    }
    let interrupted = interrupt();
    let db = match scratch_db(ctx, None) {
        Ok(db) => db,
        Err(code) => return code,
    };
    let run = r::run(&db, args.memories, args.rounds);
    let report = tokio::select! {
        report = run => report,
        _ = interrupted => {
            coord_bench::abandon().await;
            eprintln!("coord bench: interrupted; scratch databases removed");
            return 130;
        }
    };
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            eprintln!("coord bench recall: {e}");
            return output::EXIT_UNAVAILABLE;
        }
    };
    if json {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else {
        let mut t = table(&[
            "QUERIES",
            "CATEGORY",
            "COORD HIT@3",
            "COORD MRR@10",
            "BASELINE HIT@3",
            "BASELINE MRR@10",
        ]);
        let mut row = |cat: &str, c: &r::Scores, b: Option<&r::Scores>| {
            t.add_row(vec![
                c.queries.to_string(),
                cat.to_string(),
                format!("{:.3}", c.hit_at_3),
                format!("{:.3}", c.mrr_at_10),
                b.map(|b| format!("{:.3}", b.hit_at_3)).unwrap_or_default(),
                b.map(|b| format!("{:.3}", b.mrr_at_10)).unwrap_or_default(),
            ]);
        };
        for (cat, c) in &report.coord.by_category {
            row(cat, c, report.baseline.by_category.get(cat));
        }
        row("all", &report.coord.overall, Some(&report.baseline.overall));
        println!("{t}");
        println!(
            "{} ({} memories, {} queries); {} negative queries: mean top relevance {:.3}",
            report.backend,
            report.fixture_memories,
            report.fixture_queries,
            report.negative_queries,
            report.negative_top_relevance
        );
        if !report.coord.misses.is_empty() {
            println!("no judged memory in the top 3: {}", report.coord.misses.join(", "));
        }
        if let Some(s) = &report.speed {
            println!(
                "with {} memories: {} recalls, p50 {} µs, p99 {} µs; hit@3 {:.3}, MRR@10 {:.3}",
                s.memories, s.recalls, s.p50_us, s.p99_us, s.scores.hit_at_3, s.scores.mrr_at_10
            );
            let slow: Vec<String> = s
                .slowest
                .iter()
                .map(|(key, median, max)| format!("{key} (median {median} µs, slowest {max} µs)"))
                .collect();
            println!("slowest queries: {}", slow.join(", "));
        }
        println!(
            "goals: hit@3 ≥ {}, MRR@10 ≥ {}, above the baseline, recall p99 < {} µs (stated for {} memories) — {}",
            r::GOAL_HIT3,
            r::GOAL_MRR,
            r::GOAL_P99_US,
            r::GOAL_SCALE,
            if report.goals_met { "met" } else { "NOT met" }
        );
    }
    if report.goals_met {
        output::EXIT_OK
    } else {
        output::EXIT_REFUSED
    }
}
