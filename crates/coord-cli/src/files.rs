//! `coord file read|write`: the confined file tools from the shell (the same
//! operations agents call over MCP and HTTP).

use crate::args::FileCommand;
use crate::context::Context;
use crate::output::Output;
use coord_domain::access::Principal;
use coord_domain::files::{ReadFileRequest, WriteFileRequest, decode, encode};
use coord_domain::{CoordError, ErrorCode};
use coord_service::ops::files::{ReadFile, WriteFile};
use coord_service::{Coordination, call};
use std::io::{IsTerminal, Read, Write};

/// The path as the service should see it: made repository-relative from the working
/// directory, except what the service must judge as typed (an empty path, a backslash,
/// which lock paths would read as a separator).
fn file_path(ctx: &Context, path: &str) -> String {
    if path.is_empty() || path.contains('\\') {
        path.to_string()
    } else {
        ctx.lock_path(path)
    }
}

pub async fn run(cmd: FileCommand, coord: &dyn Coordination, ctx: &Context, out: Output) -> u8 {
    let me = Principal::local(ctx.caller.clone());
    match cmd {
        FileCommand::Read { path, offset, limit } => {
            let req = ReadFileRequest {
                path: file_path(ctx, &path),
                offset,
                limit,
            };
            match call::<ReadFile, _>(coord, &me, req).await {
                // People get the bytes themselves, exactly (a binary file too).
                Ok(r) if !out.json => match decode(&r.content, r.encoding) {
                    Ok(bytes) => {
                        let mut stdout = std::io::stdout().lock();
                        let _ = stdout.write_all(&bytes).and_then(|()| stdout.flush());
                        0
                    }
                    Err(e) => out.error(&e),
                },
                answer => out.result(answer, |_| String::new()),
            }
        }
        FileCommand::Write {
            path,
            from,
            text,
            fencing_token,
            create_only,
        } => {
            let bytes = match new_content(text, from) {
                Ok(b) => b,
                Err(e) => return crate::ops::refused::<WriteFile>(out, coord, &ctx.caller, e).await,
            };
            let (content, encoding) = encode(bytes);
            let req = WriteFileRequest {
                path: file_path(ctx, &path),
                content,
                encoding: Some(encoding),
                fencing_token,
                create_only: Some(create_only),
            };
            out.result(call::<WriteFile, _>(coord, &me, req).await, |r| {
                let token = r
                    .fencing_token
                    .map(|t| format!(", fencing token {t}"))
                    .unwrap_or_default();
                format!(
                    "{} {} ({} bytes{token})",
                    if r.created { "created" } else { "replaced" },
                    r.path,
                    r.bytes
                )
            })
        }
    }
}

/// The new content of `coord file write`: `--text`, `--from FILE`, or standard input.
fn new_content(text: Option<String>, from: Option<std::path::PathBuf>) -> Result<Vec<u8>, CoordError> {
    Ok(match (text, from) {
        (Some(text), _) => text.into_bytes(),
        (None, Some(file)) if file.as_os_str() != "-" => match std::fs::read(&file) {
            Ok(b) => b,
            Err(e) => return Err(usage(format!("cannot read {}: {e}", file.display()))),
        },
        (None, from) => {
            let stdin = std::io::stdin();
            if from.is_none() && stdin.is_terminal() {
                return Err(usage(
                    "give the new content: --text TEXT, --from FILE, or pipe it in (--from - reads standard input)"
                        .into(),
                ));
            }
            let mut b = Vec::new();
            if let Err(e) = stdin.lock().read_to_end(&mut b) {
                return Err(usage(format!("cannot read standard input: {e}")));
            }
            // An empty pipe is more often a mistake than an intent: emptying a
            // file is said explicitly.
            if b.is_empty() && from.is_none() {
                return Err(usage(
                    "standard input was empty: nothing was written (to empty the file, pass --text '')".into(),
                ));
            }
            b
        }
    })
}

fn usage(message: String) -> CoordError {
    CoordError::new(ErrorCode::InvalidArgument, message)
}
