//! `coord serve` as a process: a graceful shutdown ends open MCP streams instead of
//! waiting on them forever.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{BIN, served_address};

const KEY: &str = "serve-test-key";

/// Sends one HTTP/1.1 request and returns the connection, positioned after the response
/// headers, with the headers (lower-cased names).
fn request(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (BufReader<TcpStream>, Vec<(String, String)>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {KEY}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(req.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(
        status.contains(" 200 ") || status.contains(" 202 "),
        "{method}: {status}"
    );
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    (reader, headers)
}

#[test]
fn sigterm_ends_open_mcp_streams_and_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(BIN)
        .args(["serve", "--port", "0", "--db"])
        .arg(dir.path().join("coord.db"))
        .env("COORDINATION_API_KEYS", KEY)
        .env("COORD_PORTS_STATE", dir.path().join("ports.json"))
        .env_remove("API_PORT")
        .env_remove("API_HOST")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let url = served_address(&mut server);
    let addr = url.trim_start_matches("http://").to_string();
    let json = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let (_init, headers) = request(
        &addr,
        "POST",
        &json,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    let session = headers
        .iter()
        .find(|(k, _)| k == "mcp-session-id")
        .map(|(_, v)| v.clone())
        .expect("a session id");
    let with_session = [json[0], json[1], ("Mcp-Session-Id", session.as_str())];
    request(
        &addr,
        "POST",
        &with_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    // The standalone SSE stream: open until the server ends it.
    let (mut stream, _) = request(
        &addr,
        "GET",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", session.as_str())],
        "",
    );

    let term = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    // A guard against hanging the suite, far above the time a clean exit takes; the
    // server's own drain limit (30 s) is longer, so passing means the stream was ended.
    let guard = Instant::now() + Duration::from_secs(25);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > guard {
            let _ = server.kill();
            panic!("coord serve did not exit after SIGTERM while an MCP stream was open");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "clean exit: {status:?}");
    // The stream was closed by the server, not left dangling.
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
}
