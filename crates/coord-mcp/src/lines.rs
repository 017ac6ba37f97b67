//! Newline-delimited JSON-RPC messages, read with a bound: a peer that never sends a
//! newline must not make the buffer grow without end. A line over the bound is dropped
//! whole (up to its newline), as rmcp's own transport does, and reading goes on.
//!
//! One pure step ([`take`]) holds the rule; the async reader (the coordinator's side of
//! a connection) and the blocking reader (the relay's threads) only feed it buffers.

use std::io;

/// The bound rmcp's stdio transport applies (16 MiB), kept here so that a line one
/// reader accepts is accepted by every reader behind it.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// What one read produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// A whole line (without its newline) is in the buffer.
    Line,
    /// A line over the bound was dropped.
    TooLong,
    /// End of input (a last line without a newline is returned as [`Read::Line`] first).
    Eof,
}

/// A line being assembled across reads. Kept outside the read call, so a read that is
/// cancelled (tokio's `select!`) loses nothing: the next one continues the same line.
#[derive(Debug, Default)]
pub struct Partial {
    pub line: Vec<u8>,
    /// The current line went over the bound: its bytes are skipped up to its newline.
    over: bool,
}

/// Feeds `chunk` (what the reader has buffered) into `partial`: answers how many bytes
/// were used and, when a line ended in them, whether it is whole or was dropped.
pub fn take(partial: &mut Partial, chunk: &[u8], max: usize) -> (usize, Option<Read>) {
    let (part, used, ended) = match chunk.iter().position(|b| *b == b'\n') {
        Some(i) => (&chunk[..i], i + 1, true),
        None => (chunk, chunk.len(), false),
    };
    if !partial.over && partial.line.len() + part.len() > max {
        partial.over = true;
        partial.line = Vec::new();
    }
    if !partial.over {
        partial.line.extend_from_slice(part);
    }
    if !ended {
        return (used, None);
    }
    let over = std::mem::take(&mut partial.over);
    (used, Some(if over { Read::TooLong } else { Read::Line }))
}

/// At end of input: a last line without a newline still counts.
fn at_eof(partial: &mut Partial) -> Read {
    if std::mem::take(&mut partial.over) || partial.line.is_empty() {
        partial.line.clear();
        Read::Eof
    } else {
        Read::Line
    }
}

/// Reads the next line into `partial.line`; the caller takes it (or clears it) before the
/// next read. Cancel-safe: a read cancelled half-way through a line keeps what it read.
pub async fn next_async<R>(reader: &mut R, partial: &mut Partial, max: usize) -> io::Result<Read>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    use tokio::io::AsyncBufReadExt as _;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(at_eof(partial));
        }
        let (used, done) = take(partial, chunk, max);
        reader.consume(used);
        if let Some(read) = done {
            return Ok(read);
        }
    }
}

/// The blocking twin of [`next_async`].
pub fn next_blocking<R: io::BufRead>(reader: &mut R, partial: &mut Partial, max: usize) -> io::Result<Read> {
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(at_eof(partial));
        }
        let (used, done) = take(partial, chunk, max);
        reader.consume(used);
        if let Some(read) = done {
            return Ok(read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole line, or what was read instead.
    type Got = Result<String, Read>;

    /// Every line `input` splits into, read in chunks of `chunk` bytes with bound `max`.
    fn lines(input: &[u8], chunk: usize, max: usize) -> Vec<Got> {
        let mut reader = io::BufReader::with_capacity(chunk, input);
        let mut partial = Partial::default();
        let mut out = Vec::new();
        loop {
            match next_blocking(&mut reader, &mut partial, max).unwrap() {
                Read::Line => out.push(Ok(String::from_utf8(std::mem::take(&mut partial.line)).unwrap())),
                Read::Eof => return out,
                other => out.push(Err(other)),
            }
        }
    }

    #[test]
    fn lines_are_split_whatever_the_chunks() {
        let ok = |s: &str| Ok(s.to_string());
        let cases: &[(&[u8], usize, usize, Vec<Got>)] = &[
            (b"a\nbc\n", 1, 10, vec![ok("a"), ok("bc")]),
            (b"a\nbc\n", 64, 10, vec![ok("a"), ok("bc")]),
            (b"a\nbc", 2, 10, vec![ok("a"), ok("bc")]),
            (b"\n\nx\n", 3, 10, vec![ok(""), ok(""), ok("x")]),
            (b"", 8, 10, vec![]),
            // exactly the bound fits; one more byte is dropped whole, and reading goes on
            (
                b"abcd\nabcde\nok\n",
                1,
                4,
                vec![ok("abcd"), Err(Read::TooLong), ok("ok")],
            ),
            (b"abcde\nok\n", 64, 4, vec![Err(Read::TooLong), ok("ok")]),
            // an over-long last line without a newline is dropped at the end
            (b"ok\nabcdefgh", 3, 4, vec![ok("ok")]),
        ];
        for (input, chunk, max, want) in cases {
            assert_eq!(
                &lines(input, *chunk, *max),
                want,
                "{:?} in chunks of {chunk}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[tokio::test]
    async fn the_async_reader_agrees_and_survives_cancellation() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut reader = tokio::io::BufReader::with_capacity(4, rx);
        let mut partial = Partial::default();
        use tokio::io::AsyncWriteExt as _;
        tx.write_all(b"hel").await.unwrap();
        // A read cancelled half-way through a line keeps what it read.
        tokio::select! {
            biased;
            _ = next_async(&mut reader, &mut partial, 100) => panic!("no line is complete yet"),
            () = tokio::task::yield_now() => {}
        }
        assert_eq!(partial.line, b"hel");
        tx.write_all(b"lo\nworld\n").await.unwrap();
        drop(tx);
        let mut got = Vec::new();
        loop {
            match next_async(&mut reader, &mut partial, 100).await.unwrap() {
                Read::Line => got.push(String::from_utf8(std::mem::take(&mut partial.line)).unwrap()),
                Read::Eof => break,
                Read::TooLong => panic!("nothing is too long here"),
            }
        }
        assert_eq!(got, ["hello", "world"]);
    }
}
