//! Confined file tools: `read_file` / `write_file` requests and answers, and the rules
//! that are pure — which lines a read returns, how content is encoded, and whether a
//! caller may write a file given the live locks on it (the fenced write).

use crate::error::{CoordError, CoordResult, ErrorCode};
use crate::identity::Identity;
use crate::locks::LockInfo;
use crate::target::LockTarget;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Longest line range a read may ask for.
pub const MAX_LINE_LIMIT: i64 = 100_000;

/// How `content` is written on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// UTF-8 text.
    #[default]
    Utf8,
    /// Standard base64 (files that are not UTF-8).
    Base64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileRequest {
    /// Path of the file, relative to the repository root (no `..`, no absolute path).
    #[schemars(length(min = 1, max = 4095))]
    pub path: String,
    /// First line to return, counting from 1 (text files only); default 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<i64>,
    /// Most lines to return (text files only); default all.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadFileResult {
    pub success: bool,
    pub path: String,
    /// The lines asked for (UTF-8), or the whole file in base64 when it is not text.
    pub content: String,
    pub encoding: Encoding,
    /// Size of the whole file in bytes.
    pub bytes: u64,
    /// Lines in the whole file (0 for a file that is not text).
    pub total_lines: u64,
    /// First line returned (1-based) and how many were.
    pub offset: u64,
    pub lines: u64,
    /// Whether lines after the returned ones were left out.
    pub truncated: bool,
    /// The read limit in bytes (a larger file is refused with `file_too_large`).
    pub size_limit: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileRequest {
    /// Path of the file, relative to the repository root; its directory must exist.
    #[schemars(length(min = 1, max = 4095))]
    pub path: String,
    /// The whole new content.
    pub content: String,
    /// `utf8` (default) or `base64`.
    #[serde(default)]
    pub encoding: Option<Encoding>,
    /// The fencing token of your lock on the file (from acquire_lock): the write is
    /// refused with `stale_fencing_token` unless it is still the current one.
    #[serde(default)]
    pub fencing_token: Option<i64>,
    /// Refuse (`file_exists`) instead of replacing an existing file.
    #[serde(default)]
    pub create_only: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WriteFileResult {
    pub success: bool,
    pub path: String,
    pub bytes: u64,
    /// Whether the file did not exist before.
    pub created: bool,
    /// The temporary name the content was written under before the atomic rename.
    pub atomic_temp: String,
    /// The fencing token of the caller's lock covering the file, if it holds one.
    pub fencing_token: Option<i64>,
}

impl WriteFileResult {
    /// The answer of a write decided (with the caller's covering lock's token) but not
    /// yet in place: what the resource charges see.
    pub fn decided(path: &str, fencing_token: Option<i64>) -> WriteFileResult {
        WriteFileResult {
            success: true,
            path: path.to_string(),
            bytes: 0,
            created: false,
            atomic_temp: String::new(),
            fencing_token,
        }
    }
}

/// Whose lock a write needs: the file's repository path, the token the caller gave and
/// whether its profile requires holding a lock (`lock_before_write`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The file, taken literally (`LockTarget::literal_file`).
    pub target: LockTarget,
    pub token: Option<i64>,
    pub lock_required: bool,
}

/// Whether `me` may write `fence.path` now, given the live locks overlapping it: a
/// token that is not the current one of the caller's own covering lock is stale (its
/// lock expired, was released or was taken over — checked first, so an old holder
/// learns exactly that); another agent's lock refuses (`file_locked`); a profile with
/// `lock_before_write` needs a covering lock of the caller's. Answers the caller's
/// covering lock's token.
pub fn decide_write(me: &Identity, fence: &Fence, live: &[LockInfo]) -> CoordResult<Option<i64>> {
    let mine: Vec<&LockInfo> = live.iter().filter(|l| l.locked_by == me.agent_id).collect();
    if let Some(token) = fence.token
        && !mine.iter().any(|l| l.fencing_token == token)
    {
        let path = fence.target.key();
        let mut e = CoordError::new(
            ErrorCode::StaleFencingToken,
            format!(
                "fencing token {token} is not the token of a live lock of yours covering {path} (the lock expired, \
                 was released or was taken over — or the token is another file's). Nothing was written; acquire \
                 the lock again, re-read the file and redo the change"
            ),
        )
        .with_detail("fencing_token", token)
        .with_detail("path", path);
        // The current token is told only to its holder; another agent learns who holds it.
        if let Some(own) = mine.iter().map(|l| l.fencing_token).max() {
            e = e.with_detail("current_token", own);
        } else if let Some(other) = live.first() {
            e = e
                .with_detail("locked_by", other.locked_by.clone())
                .with_detail("expires_at", serde_json::to_value(other.expires_at).unwrap_or_default());
        }
        return Err(e);
    }
    crate::locks::decide_edit(me, vec![fence.target.key().to_string()], live)?;
    let held = mine.iter().map(|l| l.fencing_token).max();
    if fence.lock_required && held.is_none() {
        return Err(CoordError::new(
            ErrorCode::LockRequired,
            format!(
                "your profile requires holding a lock before writing (lock_before_write): acquire_lock {:?} first",
                fence.target.key()
            ),
        )
        .with_detail("path", fence.target.key().to_string()));
    }
    Ok(held)
}

/// The bytes `content` stands for.
pub fn decode(content: &str, encoding: Encoding) -> CoordResult<Vec<u8>> {
    match encoding {
        Encoding::Utf8 => Ok(content.as_bytes().to_vec()),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD.decode(content).map_err(|e| {
            CoordError::field(
                ErrorCode::InvalidArgument,
                "content",
                format!("content is not valid base64: {e}"),
            )
        }),
    }
}

/// Directories the file tools never touch, wherever they are in the path: git's
/// internals (hooks run code; `config` may hold credentials; nested repositories and
/// submodules have their own) and coord's own (its database and audit key).
pub const RESERVED_DIRS: &[&str] = &[".git", ".coord"];

/// Refuses a repository path inside a [`RESERVED_DIRS`] directory, or one of
/// `protected` (coord's own files where they are configured inside the repository: a
/// database given with `--db`, its journal files, the audit key). Lexical is enough:
/// symlinks and hard links are refused, so such a file has no other name in the
/// workspace.
pub fn check_reserved(path: &str, protected: &[String]) -> CoordResult<()> {
    let refuse = |why: String| {
        Err(CoordError::new(ErrorCode::PermissionDenied, format!("{path}: {why}")).with_detail("path", path))
    };
    if let Some(dir) = path.split('/').find(|c| RESERVED_DIRS.contains(c)) {
        return refuse(format!(
            "{dir}/ is not workspace content (git's and coord's own files are never read or written by the file tools)"
        ));
    }
    if protected.iter().any(|p| p == path) {
        return refuse("this is one of coord's own files (its database or audit key)".into());
    }
    Ok(())
}

/// What an audit row and a person deciding an approval learn about a write's content,
/// which is never stored: its size and SHA-256 (to check against the file, or against
/// what the agent says it wrote).
pub fn describe_content(parameters: &mut serde_json::Value, content: &[u8]) {
    use sha2::{Digest, Sha256};
    if let serde_json::Value::Object(map) = parameters {
        let digest: String = Sha256::digest(content).iter().map(|b| format!("{b:02x}")).collect();
        map.insert("content_bytes".into(), content.len().into());
        map.insert("content_sha256".into(), digest.into());
    }
}

/// Bytes as wire content: UTF-8 text as it is, anything else in base64.
pub fn encode(bytes: Vec<u8>) -> (String, Encoding) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, Encoding::Utf8),
        Err(e) => (
            base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
            Encoding::Base64,
        ),
    }
}

/// The validated line window of a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First line, 1-based.
    pub offset: u64,
    pub limit: Option<u64>,
    /// Which of offset and limit the request gave (a window on a binary file is refused).
    pub given: (bool, bool),
}

pub fn validate_window(offset: Option<i64>, limit: Option<i64>) -> CoordResult<Window> {
    let offset_given = offset.is_some();
    let offset = match offset {
        None => 1,
        Some(o) if o >= 1 => o as u64,
        Some(_) => {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "offset",
                "offset counts lines from 1",
            ));
        }
    };
    let limit = match limit {
        None => None,
        Some(l) if (1..=MAX_LINE_LIMIT).contains(&l) => Some(l as u64),
        Some(_) => {
            return Err(CoordError::field(
                ErrorCode::InvalidArgument,
                "limit",
                format!("limit is a number of lines from 1 to {MAX_LINE_LIMIT}"),
            ));
        }
    };
    Ok(Window {
        offset,
        limit,
        given: (offset_given, limit.is_some()),
    })
}

/// The answer for a file's bytes and the line window asked for: text is answered by
/// lines (kept with their line endings), anything else whole in base64 — a window on a
/// binary file is refused, since its "lines" mean nothing.
pub fn read_answer(path: String, bytes: Vec<u8>, window: Window, size_limit: u64) -> CoordResult<ReadFileResult> {
    let size = bytes.len() as u64;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            if window.given.0 || window.given.1 {
                return Err(CoordError::field(
                    ErrorCode::InvalidArgument,
                    if window.given.0 { "offset" } else { "limit" },
                    "the file is not UTF-8 text: it is read whole (base64), without offset or limit",
                ));
            }
            return Ok(ReadFileResult {
                success: true,
                path,
                content: base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
                encoding: Encoding::Base64,
                bytes: size,
                total_lines: 0,
                offset: 1,
                lines: 0,
                truncated: false,
                size_limit,
            });
        }
    };
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let total = all.len() as u64;
    let start = (window.offset - 1).min(total) as usize;
    let end = match window.limit {
        Some(l) => (start as u64 + l).min(total) as usize,
        None => all.len(),
    };
    Ok(ReadFileResult {
        success: true,
        path,
        content: all[start..end].concat(),
        encoding: Encoding::Utf8,
        bytes: size,
        total_lines: total,
        offset: window.offset,
        lines: (end - start) as u64,
        truncated: end < all.len(),
        size_limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;

    fn lock(by: &str, path: &str, token: i64) -> LockInfo {
        LockInfo {
            file_path: path.into(),
            locked_by: by.into(),
            agent_type: "claude_code".into(),
            session_id: None,
            reason: None,
            locked_at: Timestamp::default(),
            expires_at: Timestamp::default(),
            fencing_token: token,
        }
    }

    #[test]
    fn fenced_write_decisions() {
        let me = Identity {
            agent_id: "me".into(),
            agent_type: "claude_code".into(),
        };
        let fence = |token, required| Fence {
            target: LockTarget::literal_file("src/a.rs", None).unwrap(),
            token,
            lock_required: required,
        };
        // (live locks, token, lock required, Ok(token) or the error code)
        type Case = (Vec<LockInfo>, Option<i64>, bool, Result<Option<i64>, &'static str>);
        let cases: Vec<Case> = vec![
            (vec![], None, false, Ok(None)),
            (vec![], None, true, Err("lock_required")),
            (vec![], Some(3), false, Err("stale_fencing_token")),
            (vec![lock("me", "src/a.rs", 3)], None, true, Ok(Some(3))),
            (vec![lock("me", "src/a.rs", 3)], Some(3), true, Ok(Some(3))),
            (
                vec![lock("me", "src/a.rs", 4)],
                Some(3),
                false,
                Err("stale_fencing_token"),
            ),
            (vec![lock("me", "src/", 7)], Some(7), true, Ok(Some(7))),
            (
                vec![lock("other", "src/a.rs", 9)],
                Some(3),
                false,
                Err("stale_fencing_token"),
            ),
            (vec![lock("other", "src/a.rs", 9)], None, false, Err("file_locked")),
            (vec![lock("other", "src/", 9)], None, true, Err("file_locked")),
            (
                vec![lock("me", "src/a.rs", 3), lock("other", "src/*.rs", 9)],
                Some(3),
                false,
                Err("file_locked"),
            ),
        ];
        for (live, token, required, want) in cases {
            let got = decide_write(&me, &fence(token, required), &live).map_err(|e| e.code.as_str());
            assert_eq!(got, want, "{live:?} {token:?} {required}");
        }
        // The holder learns its current token; anyone else learns who holds the file.
        let e = decide_write(&me, &fence(Some(3), false), &[lock("me", "src/a.rs", 4)]).unwrap_err();
        assert_eq!(e.to_value()["current_token"], 4);
        let e = decide_write(&me, &fence(Some(9), false), &[lock("other", "src/a.rs", 9)]).unwrap_err();
        let v = e.to_value();
        assert_eq!(
            (v.get("current_token"), &v["locked_by"]),
            (None, &serde_json::json!("other"))
        );
    }

    #[test]
    fn content_is_described_not_kept() {
        let mut p = serde_json::json!({"path": "a", "content": "[redacted]"});
        describe_content(&mut p, b"abc");
        assert_eq!(p["content_bytes"], 3);
        assert_eq!(
            p["content_sha256"],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn reserved_directories() {
        let protected = vec!["state/coord.db".to_string(), "state/coord.db-wal".to_string()];
        for (path, ok) in [
            (".git/config", false),
            (".git", false),
            (".coord/coord.db", false),
            ("vendor/lib/.git/hooks/pre-commit", false),
            ("sub/.coord/x", false),
            ("state/coord.db", false),
            ("state/coord.db-wal", false),
            ("state/coord.db.bak", true),
            (".github/workflows/ci.yml", true),
            (".gitignore", true),
            (".coordinator", true),
        ] {
            assert_eq!(check_reserved(path, &protected).is_ok(), ok, "{path}");
        }
    }

    #[test]
    fn line_windows() {
        let w = |o, l| validate_window(o, l).unwrap();
        let text = b"one\ntwo\nthree".to_vec();
        let cases = [
            (w(None, None), "one\ntwo\nthree", 3, false),
            (w(Some(2), None), "two\nthree", 2, false),
            (w(Some(1), Some(1)), "one\n", 1, true),
            (w(Some(2), Some(1)), "two\n", 1, true),
            (w(Some(3), Some(5)), "three", 1, false),
            (w(Some(9), None), "", 0, false),
        ];
        for (window, content, lines, truncated) in cases {
            let r = read_answer("f".into(), text.clone(), window, 10).unwrap();
            assert_eq!(
                (r.content.as_str(), r.lines, r.truncated),
                (content, lines, truncated),
                "{window:?}"
            );
            assert_eq!((r.total_lines, r.bytes, r.encoding), (3, 13, Encoding::Utf8));
        }
        let empty = read_answer("f".into(), vec![], w(None, None), 10).unwrap();
        assert_eq!((empty.content.as_str(), empty.total_lines), ("", 0));
        for (o, l, field) in [
            (Some(0), None, "offset"),
            (None, Some(0), "limit"),
            (None, Some(100_001), "limit"),
        ] {
            assert_eq!(validate_window(o, l).unwrap_err().field.as_deref(), Some(field));
        }
    }

    #[test]
    fn binary_files_are_base64_and_round_trip() {
        let bytes = vec![0u8, 159, 146, 150, 255];
        let r = read_answer("b".into(), bytes.clone(), validate_window(None, None).unwrap(), 10).unwrap();
        assert_eq!(r.encoding, Encoding::Base64);
        assert_eq!(decode(&r.content, Encoding::Base64).unwrap(), bytes);
        for (o, l, field) in [(Some(1), None, "offset"), (None, Some(1), "limit")] {
            let windowed = read_answer("b".into(), bytes.clone(), validate_window(o, l).unwrap(), 10);
            assert_eq!(windowed.unwrap_err().field.as_deref(), Some(field));
        }
        assert_eq!(
            decode("not base64!", Encoding::Base64).unwrap_err().field.as_deref(),
            Some("content")
        );
    }
}
