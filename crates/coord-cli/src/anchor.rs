//! The audit chain's anchor: the heads `coord audit verify` saw, kept outside the store
//! (docs/audit.md). The chain's hashes are unkeyed, so whoever can write the store can
//! rewrite a row and recompute every hash after it; what they cannot do is change a
//! head recorded somewhere they cannot write. `coord audit verify` reads the last
//! recorded head of this database and checks that the chain still holds it (the same
//! check as `--expect-head`), then records the new head. The file lives in the user's
//! state directory, not in the repository, one per database; `--anchor FILE` or
//! `COORD_AUDIT_ANCHOR` put it elsewhere (a directory another user owns, a mounted
//! share), which is what makes it out of an agent's reach.

use crate::context::{Context, DbTarget};
use coord_domain::audit_chain::ChainHead;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One recorded head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anchored {
    pub seq: i64,
    pub hash: String,
    /// When it was recorded (RFC 3339).
    pub at: String,
    /// Which database (its path, or its URL without a password).
    pub db: String,
}

/// The database as an anchor names it: a SQLite path, a PostgreSQL URL without its
/// password, the remote API's URL.
pub fn database_name(ctx: &Context) -> String {
    if let Some(r) = &ctx.remote {
        return r.url.clone();
    }
    match &ctx.db {
        DbTarget::Sqlite(p) => std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.clone())
            .display()
            .to_string(),
        DbTarget::Postgres(url) => without_password(url),
    }
}

/// `scheme://user:password@host/...` → `scheme://user@host/...`.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) => format!("{scheme}://{}@{host}{path}", user.split(':').next().unwrap_or("")),
        None => url.to_string(),
    }
}

/// Where the anchor of `ctx`'s database is kept: `explicit`, else `COORD_AUDIT_ANCHOR`,
/// else `$XDG_STATE_HOME/coord/anchors/<digest of the database name>.jsonl` (default
/// `~/.local/state`). `None` when there is no home to put it in.
pub fn path(ctx: &Context, explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("COORD_AUDIT_ANCHOR").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    let digest = Sha256::digest(database_name(ctx).as_bytes());
    let name: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    Some(state.join("coord/anchors").join(format!("{name}.jsonl")))
}

/// The last head recorded in `file`, if any. A line that does not read is an error: an
/// anchor someone damaged must not pass as no anchor.
pub fn last(file: &Path) -> Result<Option<Anchored>, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the audit anchor {}: {e}", file.display())),
    };
    let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Ok(None);
    };
    serde_json::from_str(line)
        .map(Some)
        .map_err(|e| format!("the audit anchor {} is damaged ({e}): inspect it", file.display()))
}

/// Appends `head` to `file` (created owner-only, in an owner-only directory).
pub fn record(file: &Path, head: &ChainHead, db: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let line = serde_json::to_string(&Anchored {
        seq: head.seq,
        hash: head.hash.clone(),
        at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        db: db.to_string(),
    })
    .map_err(std::io::Error::other)?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(file)?;
    writeln!(f, "{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_stay_out_of_anchors() {
        let cases = [
            ("postgres://u:secret@h:5432/db", "postgres://u@h:5432/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgres://h/db?x=1", "postgres://h/db?x=1"),
            ("postgresql://u:p%40ss@h/db", "postgresql://u@h/db"),
            ("not a url", "not a url"),
        ];
        for (url, want) in cases {
            assert_eq!(without_password(url), want, "{url}");
        }
    }

    #[test]
    fn heads_are_appended_and_the_last_one_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b.jsonl");
        assert_eq!(last(&file).unwrap(), None);
        for seq in [3, 9] {
            let head = ChainHead {
                seq,
                hash: "ab".repeat(32),
            };
            record(&file, &head, "db").unwrap();
        }
        assert_eq!(last(&file).unwrap().map(|a| a.seq), Some(9));
        std::fs::write(&file, "{not json\n").unwrap();
        assert!(last(&file).unwrap_err().contains("damaged"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("a")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
