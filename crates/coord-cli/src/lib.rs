//! The `coord` command line: a door. It parses arguments into requests, calls the
//! [`Coordination`] interface, and prints results; it holds no coordination rules.

pub mod args;
pub mod commands;
pub mod context;
pub mod open;
pub mod output;

use args::{Cli, Command};
use clap::Parser;
use context::Context;
use coord_service::Coordination;
use output::Output;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, Serialize)]
struct InitResult {
    success: bool,
    backend: &'static str,
    database: String,
    schema_version: i64,
    applied_migrations: Vec<i64>,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(output::EXIT_UNAVAILABLE);
        }
    };
    ExitCode::from(runtime.block_on(run(cli)))
}

/// Logs go to stderr (stdout carries results); `COORD_LOG` sets the filter. They are off
/// by default: every failure a user can act on is already in the answer, and the log
/// carries database messages meant for whoever debugs (`COORD_LOG=error`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("COORD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

pub async fn run(cli: Cli) -> u8 {
    let out = Output { json: cli.global.json };
    let ctx = match Context::resolve(&cli.global) {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    let coord = match open::coordinator(&ctx).await {
        Ok(c) => c,
        Err(e) => return out.error(&e),
    };
    match cli.command {
        Command::Init | Command::Migrate => {
            let schema = coord.store().schema();
            out.result(
                Ok(InitResult {
                    success: true,
                    backend: coord.store().backend(),
                    database: coord.store().location(),
                    schema_version: schema.version,
                    applied_migrations: schema.applied_now,
                }),
                |r| {
                    let applied = match r.applied_migrations.as_slice() {
                        [] => "schema already current".to_string(),
                        v => format!("applied migrations {v:?}"),
                    };
                    format!(
                        "coordinator database ready ({}) at {} — schema version {}, {applied}",
                        r.backend, r.database, r.schema_version
                    )
                },
            )
        }
        Command::Status => out.result(coord.status(&ctx.caller).await, commands::render_status),
        other => commands::run(other, &coord, &ctx, out).await,
    }
}
