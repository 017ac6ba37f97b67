//! `coord proxy` and `coord sandbox run|relay` (docs/network.md): the commands around
//! the runtime's sandbox (`coord_runtime::sandbox`) and coord-egress's proxy.

use crate::args::{ProxyArgs, SandboxCommand, SandboxRunArgs};
use crate::context::Context;
use crate::open;
use crate::output::{self, Output};
use coord_egress::sandbox;
use coord_egress::{ManagedKeys, Proxy, Resolver};
use coord_runtime::sandbox::{SandboxRunOptions, resolver, run_sandboxed};
use std::sync::Arc;

/// The proxy of `coord serve --proxy-port`: managed keys, the system resolver. Answers
/// its task and address.
pub async fn serve_proxy(
    coord: Arc<coord_service::Coordinator>,
    host: &str,
    port: u16,
) -> Result<(tokio::task::JoinHandle<std::io::Result<()>>, String), u8> {
    let listener = tokio::net::TcpListener::bind((host, port)).await.map_err(|e| {
        eprintln!("coord serve: the egress proxy cannot listen on {host}:{port}: {e}");
        output::EXIT_USAGE
    })?;
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let proxy = Arc::new(Proxy::new(
        coord.clone(),
        Arc::new(ManagedKeys(coord)),
        Arc::new(Resolver::default()),
    ));
    Ok((tokio::spawn(proxy.serve_tcp(listener)), addr))
}

pub async fn proxy(args: &ProxyArgs, ctx: &Context, out: Output) -> u8 {
    if let Err(e) = open::local_only(ctx, "`coord proxy` (it checks managed keys in the database)") {
        return out.error(&e);
    }
    let resolver = match resolver(&args.resolve) {
        Ok(r) => r,
        Err(e) => return out.error(&e),
    };
    let coord = match open::coordinator_with(ctx, 8).await {
        Ok(c) => Arc::new(c),
        Err(e) => return out.error(&e),
    };
    let listener = match tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("coord proxy: cannot listen on {}:{}: {e}", args.host, args.port);
            return output::EXIT_USAGE;
        }
    };
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    println!("coord proxy: listening on {addr} (HTTPS_PROXY=http://<agent id>:<managed key>@{addr})");
    let proxy = Arc::new(Proxy::new(
        coord.clone(),
        Arc::new(ManagedKeys(coord)),
        Arc::new(resolver),
    ));
    tokio::select! {
        r = proxy.serve_tcp(listener) => {
            eprintln!("coord proxy: stopped: {r:?}");
            output::EXIT_UNAVAILABLE
        }
        _ = tokio::signal::ctrl_c() => output::EXIT_OK,
    }
}

pub async fn run(cmd: SandboxCommand, ctx: &Context, out: Output) -> u8 {
    match cmd {
        SandboxCommand::Relay { forwards, command } => match sandbox::relay_and_run(forwards, command).await {
            Ok(code) => u8::try_from(code).unwrap_or(255),
            Err(e) => {
                eprintln!("coord sandbox relay: {e}");
                126
            }
        },
        SandboxCommand::Run(args) => match run_sandboxed(options(args), ctx).await {
            Ok(code) => code,
            Err(e) => out.error(&e),
        },
    }
}

fn options(args: SandboxRunArgs) -> SandboxRunOptions {
    SandboxRunOptions {
        agent: args.agent,
        profile: args.profile,
        resolve: args.resolve,
        env: args.env,
        no_sandbox: args.no_sandbox,
        command: args.command,
    }
}
