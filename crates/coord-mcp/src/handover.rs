//! The hand-over (opt-in, `COORD_MCP_DIRECT=on`): `coord mcp` passes its agent's pipes
//! to the repository's coordinator (`SCM_RIGHTS` over the relay's upgraded connection)
//! and stays only to stand for the agent's MCP server process: the coordinator reads
//! and answers the agent itself, with no copy in between.
//!
//! Why: a relayed call is copied twice by a second process (about 13% of the CPU with
//! eight agents, docs/benchmarks.md, "Many local agents"); handed over, it is not.
//!
//! What it gives up, which is why it is not the default: the relay's replay. When the
//! coordinator dies, nobody holds the lines it had read, so calls under way are never
//! answered and the session cannot be carried to a successor: `coord mcp` exits with an
//! error and the agent's runtime sees its MCP server gone (Claude Code and Codex report
//! it; a new session starts a new one).
//!
//! What stays as with the relay:
//! - The agent's input ends: the session ends after the grace period.
//! - `coord mcp` is told to stop: it sends [`TERMINATE`], the holdings go at once.
//! - `coord mcp` is killed: the coordinator sees the connection drop and takes it as
//!   the end of the agent's input (grace period); the process is what the agent's
//!   runtime watches, so the agent also sees its server gone.
//! - The coordinator names the session ([`SESSION`]) so that this process records it
//!   for the reaper, and its last line is [`CLOSED`].
//!
//! What is handed over is what the runtime gave: pipes (Codex, most runtimes) or Unix
//! sockets (Node's child processes, so Claude Code). Pipes are reopened through
//! `/proc/self/fd` before they are passed, so the coordinator's non-blocking mode stays
//! on open file descriptions of its own (as `serve_stdio` does); a socket cannot be
//! reopened, so the coordinator never changes its mode and asks for each read and write
//! not to wait (`MSG_DONTWAIT`). Anything else (a terminal, a file) is relayed.

use crate::connection::{CLOSED, SESSION, TERMINATE, control, control_with, parse};
use crate::lines::{self, Partial, Read};
use crate::relay::Link;
use crate::stdio::{Kind, kind, reopen_pipe};
use coord_service::Coordination;
use std::future::Future as _;
use std::io::{self, Write as _};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, OwnedFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf};

/// The byte sent with the descriptors (a message must carry at least one).
const TAG: u8 = b'P';

/// How long the coordinator waits for the descriptors after the upgrade.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(15);

/// Whether `COORD_MCP_DIRECT` asks for the hand-over (default: off). A value that is
/// neither on nor off is said on stderr (the agent runtime's log) and read as off: the
/// relay, which keeps the replay.
pub fn wanted() -> bool {
    let Ok(raw) = std::env::var("COORD_MCP_DIRECT") else {
        return false;
    };
    match parse_switch(&raw) {
        Some(on) => on,
        None => {
            eprintln!("coord mcp: COORD_MCP_DIRECT={raw:?} is neither on nor off; relaying (off)");
            false
        }
    }
}

/// `on`/`1`/`true`/`yes` or `off`/`0`/`false`/`no`/empty, in any case.
fn parse_switch(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "on" | "1" | "true" | "yes" => Some(true),
        "off" | "0" | "false" | "no" | "" => Some(false),
        _ => None,
    }
}

/// This process's stdin and stdout as they are handed over: pipes reopened (new open
/// file descriptions), sockets as they are; an error for anything else.
pub fn agent_stdio() -> io::Result<(OwnedFd, OwnedFd)> {
    let own = |fd: std::os::fd::BorrowedFd<'_>, n: i32, write: bool| -> io::Result<OwnedFd> {
        match reopen_pipe(n, write)? {
            Some(pipe) => Ok(pipe.into()),
            None if kind(fd) == Some(Kind::Socket) => fd.try_clone_to_owned(),
            None => Err(io::Error::other("stdin and stdout are not pipes or sockets")),
        }
    };
    Ok((own(io::stdin().as_fd(), 0, false)?, own(io::stdout().as_fd(), 1, true)?))
}

/// `coord mcp`'s side once it has handed its pipes over.
pub struct Handover {
    writer: Mutex<std::os::unix::net::UnixStream>,
    reader: Mutex<Option<io::BufReader<std::os::unix::net::UnixStream>>>,
    on_session: Option<crate::relay::SessionHook>,
}

impl Handover {
    /// Passes `pipes` (see [`agent_stdio`]) over `link`, a connection upgraded with
    /// `RelayRequest::direct` set.
    pub fn start(
        link: Link,
        pipes: (OwnedFd, OwnedFd),
        on_session: Option<crate::relay::SessionHook>,
    ) -> io::Result<Handover> {
        use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
        let fds = [pipes.0.as_fd(), pipes.1.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(io::Error::other("no room for the descriptors"));
        }
        let sent = sendmsg(
            &link.writer,
            &[io::IoSlice::new(&[TAG])],
            &mut control,
            SendFlags::NOSIGNAL,
        )?;
        if sent != 1 {
            return Err(io::Error::other("the pipes were not handed over"));
        }
        // Ours are closed now: the coordinator holds its own.
        drop(pipes);
        Ok(Handover {
            writer: Mutex::new(link.writer),
            reader: Mutex::new(Some(link.reader)),
            on_session,
        })
    }

    /// The process was told to stop: the coordinator releases the holdings at once.
    pub fn terminate(&self) {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writer.write_all(&control(TERMINATE));
    }

    /// Waits until the coordinator has ended the session ([`CLOSED`]); an error when
    /// the connection ended first (the coordinator died).
    pub fn wait(&self) -> io::Result<()> {
        let Some(mut reader) = self.reader.lock().unwrap_or_else(PoisonError::into_inner).take() else {
            return Ok(());
        };
        let mut partial = Partial::default();
        loop {
            match lines::next_blocking(&mut reader, &mut partial, lines::MAX_LINE) {
                Ok(Read::Line) => {}
                Ok(Read::TooLong) => continue,
                Ok(Read::Eof) | Err(_) => {
                    return Err(io::Error::other(
                        "the repository's coordinator stopped while it served this agent's pipes \
                         (COORD_MCP_DIRECT=on has no replay): the agent's MCP server ends with it",
                    ));
                }
            }
            let line = std::mem::take(&mut partial.line);
            match parse::<Control>(&line) {
                Some(c) if c.method == CLOSED => return Ok(()),
                Some(c) if c.method == SESSION => {
                    if let (Some(hook), Some(session)) = (&self.on_session, c.params.and_then(|p| p.session_id)) {
                        hook(&session);
                    }
                }
                _ => {}
            }
        }
    }
}

#[derive(serde::Deserialize)]
struct Control {
    method: String,
    #[serde(default)]
    params: Option<SessionParams>,
}

#[derive(serde::Deserialize)]
struct SessionParams {
    session_id: Option<String>,
}

/// The coordinator's side: receives the agent's pipes on `control` (the upgraded
/// connection's own socket), serves the session on them as `serve_stdio` does, and
/// tells the `coord mcp` process the session and its end.
pub async fn serve(
    coord: Arc<dyn Coordination>,
    mut options: crate::McpOptions,
    socket: tokio::net::UnixStream,
) -> io::Result<()> {
    let (input, output) = tokio::time::timeout(RECEIVE_TIMEOUT, receive(&socket))
        .await
        .map_err(|_| io::Error::other("no pipes were handed over"))??;
    let input: Box<dyn AsyncRead + Send + Unpin> = match kind(input.as_fd()) {
        Some(Kind::Pipe) => Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(input)?),
        Some(Kind::Socket) => Box::new(SocketIo::new(input)?),
        None => return Err(io::Error::other("the agent's input is not a pipe or a socket")),
    };
    let output: Output = match kind(output.as_fd()) {
        Some(Kind::Pipe) => Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(output)?),
        Some(Kind::Socket) => Box::new(SocketIo::new(output)?),
        None => return Err(io::Error::other("the agent's output is not a pipe or a socket")),
    };
    tracing::info!("serving an agent on the pipes its coord mcp handed over");
    let (control_in, mut control_out) = socket.into_split();

    // Lines to `coord mcp`: each session registered, then CLOSED.
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let announce = lines_tx.clone();
    options.on_session = Some(crate::SessionHook(Arc::new(move |_, session| {
        let _ = announce.send(control_with(
            SESSION,
            Some(serde_json::json!({ "session_id": session })),
        ));
    })));
    let writing = tokio::spawn(async move {
        while let Some(line) = lines_rx.recv().await {
            if control_out.write_all(&line).await.is_err() {
                break;
            }
        }
        let _ = control_out.shutdown().await;
    });

    let (terminate, terminated) = tokio::sync::oneshot::channel();
    let (gone, went) = tokio::sync::oneshot::channel();
    let output = SharedOutput(Arc::new(Mutex::new(Some(output))));
    let watching = tokio::spawn(watch(control_in, terminate, gone, output.clone()));
    let stop = async move {
        if terminated.await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let input = UntilGone {
        inner: Some(input),
        gone: Some(went),
    };
    let served = crate::connection::serve(crate::CoordMcp::new(coord, options), input, output, false, stop).await;
    let _ = lines_tx.send(control(CLOSED));
    drop(lines_tx);
    let _ = writing.await;
    watching.abort();
    served
}

/// The descriptors `coord mcp` sends: its agent's input, then its output.
async fn receive(control: &tokio::net::UnixStream) -> io::Result<(OwnedFd, OwnedFd)> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    loop {
        control.readable().await?;
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut ancillary = RecvAncillaryBuffer::new(&mut space);
        let mut byte = [0u8; 1];
        let received = control.try_io(tokio::io::Interest::READABLE, || {
            recvmsg(
                control,
                &mut [io::IoSliceMut::new(&mut byte)],
                &mut ancillary,
                RecvFlags::CMSG_CLOEXEC,
            )
            .map_err(io::Error::from)
        });
        let msg = match received {
            Ok(msg) => msg,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        let mut fds: Vec<OwnedFd> = Vec::new();
        for message in ancillary.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = message {
                fds.extend(received);
            }
        }
        if msg.bytes != 1 || byte[0] != TAG || msg.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
            return Err(io::Error::other("the hand-over was not two pipes"));
        }
        let mut fds = fds.into_iter();
        return match (fds.next(), fds.next(), fds.next()) {
            (Some(input), Some(output), None) => Ok((input, output)),
            _ => Err(io::Error::other("the hand-over was not two pipes")),
        };
    }
}

/// Reads `coord mcp`'s lines: [`TERMINATE`] stops the session at once; the end of the
/// connection (the process is gone) ends the agent's input.
async fn watch(
    control: tokio::net::unix::OwnedReadHalf,
    terminate: tokio::sync::oneshot::Sender<()>,
    gone: tokio::sync::oneshot::Sender<()>,
    output: SharedOutput,
) {
    let mut reader = tokio::io::BufReader::new(control);
    let mut partial = Partial::default();
    let mut terminate = Some(terminate);
    loop {
        match lines::next_async(&mut reader, &mut partial, lines::MAX_LINE).await {
            Ok(Read::Line) => {
                let line = std::mem::take(&mut partial.line);
                if parse::<Control>(&line).is_some_and(|c| c.method == TERMINATE)
                    && let Some(t) = terminate.take()
                {
                    let _ = t.send(());
                }
            }
            Ok(Read::TooLong) => {}
            Ok(Read::Eof) | Err(_) => break,
        }
    }
    // The process the agent's runtime watches is gone: so is its output, at once (the
    // runtime sees its server's end); the session waits out its grace period.
    drop(output.0.lock().unwrap_or_else(PoisonError::into_inner).take());
    let _ = gone.send(());
    // Held until here: a dropped sender would read as TERMINATE's absence, not a stop.
    drop(terminate);
}

/// The agent's input, which ends (and is closed) when `gone` fires: the `coord mcp`
/// process that stands for the agent's server is gone.
struct UntilGone<R> {
    inner: Option<R>,
    gone: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilGone<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if let Some(gone) = self.gone.as_mut() {
            match Pin::new(gone).poll(cx) {
                Poll::Ready(Ok(())) => {
                    self.gone = None;
                    self.inner = None;
                }
                // The watcher was stopped: nothing more to watch for.
                Poll::Ready(Err(_)) => self.gone = None,
                Poll::Pending => {}
            }
        }
        match self.inner.as_mut() {
            Some(inner) => Pin::new(inner).poll_read(cx, buf),
            None => Poll::Ready(Ok(())),
        }
    }
}

type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// The agent's output, which the watcher closes when `coord mcp` is gone; writes after
/// that fail as on a closed pipe.
#[derive(Clone)]
struct SharedOutput(Arc<Mutex<Option<Output>>>);

impl SharedOutput {
    fn with<T>(&self, f: impl FnOnce(Pin<&mut Output>) -> Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match self.0.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            Some(w) => f(Pin::new(w)),
            None => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }
}

impl AsyncWrite for SharedOutput {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.with(|w| w.poll_write(cx, data))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with(|w| w.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with(|w| w.poll_shutdown(cx))
    }
}

/// A socket the agent's runtime shares (its mode is left as it is): every read and write
/// asks not to wait, and readiness comes from the runtime's reactor.
struct SocketIo(AsyncFd<OwnedFd>);

impl SocketIo {
    fn new(fd: OwnedFd) -> io::Result<SocketIo> {
        // SAFETY: the `OwnedFd` is the registration's own: it stays open, and the same
        // descriptor, until the `AsyncFd` (which owns it) is dropped.
        unsafe { AsyncFd::register(fd) }.map(SocketIo).map_err(io::Error::from)
    }
}

impl AsyncRead for SocketIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        use rustix::net::{RecvFlags, recv};
        loop {
            let mut ready = std::task::ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|fd| Ok(recv(fd.get_ref(), &mut *unfilled, RecvFlags::DONTWAIT)?.0)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => {}
            }
        }
    }
}

impl AsyncWrite for SocketIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        use rustix::net::{SendFlags, send};
        loop {
            let mut ready = std::task::ready!(self.0.poll_write_ready(cx))?;
            match ready.try_io(|fd| Ok(send(fd.get_ref(), data, SendFlags::DONTWAIT | SendFlags::NOSIGNAL)?)) {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => {}
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// The agent reads the end of its input even while `coord mcp` still holds the socket.
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _ = rustix::net::shutdown(self.0.get_ref(), rustix::net::Shutdown::Write);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_switch_is_read_strictly() {
        for (raw, want) in [
            ("on", Some(true)),
            (" ON ", Some(true)),
            ("1", Some(true)),
            ("yes", Some(true)),
            ("off", Some(false)),
            ("", Some(false)),
            ("No", Some(false)),
            ("maybe", None),
            ("direct", None),
        ] {
            assert_eq!(super::parse_switch(raw), want, "{raw:?}");
        }
    }
}
