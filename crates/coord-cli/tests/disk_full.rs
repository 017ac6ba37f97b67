//! A full disk under a SQLite store: writes are refused with a clear error naming the
//! full disk (no panic, nothing half written), and once space is freed the store answers
//! again with its audit chain intact. The disk is a small tmpfs mounted for the test,
//! which needs root: skipped loudly without it, failed under CI. (Refusals met while the
//! disk is full cannot be audited: there is no room to write them.)

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::BIN;

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until the disk has no room left.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let filler = self.path().join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let small = [0u8; 512];
        while f.write_all(&small).is_ok() {}
        let _ = f.sync_all();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn coord(db: &Path, state: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(state)
        .arg("--db")
        .arg(db)
        .args(args)
        .env("XDG_STATE_HOME", state)
        .env_remove("COORD_DATABASE_URL")
        .env_remove("COORDINATION_API_URL")
        .env_remove("COORD_AGENT_ID")
        .env("COORD_LOCAL_SERVER", "off")
        .output()
        .unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn a_full_disk_refuses_writes_clearly_and_recovers() {
    let root = rustix::process::geteuid().is_root();
    let Some(disk) = root.then(|| SmallDisk::mount("2m")).flatten() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "under CI this test must run: it needs root to mount a tmpfs"
        );
        eprintln!("\n*** SKIPPING a_full_disk_refuses_writes_clearly_and_recovers: needs root to mount a tmpfs\n");
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let db = disk.path().join("coord.db");
    assert!(coord(&db, state.path(), &["init"]).status.success());
    let held = coord(&db, state.path(), &["--agent-id", "a", "lock", "acquire", "src/a.rs"]);
    assert!(held.status.success(), "{}", String::from_utf8_lossy(&held.stderr));

    let filler = disk.fill();
    let submit = coord(
        &db,
        state.path(),
        &["--agent-id", "a", "work", "submit", "t", "refused"],
    );
    let said = String::from_utf8_lossy(&submit.stderr);
    assert_eq!(submit.status.code(), Some(3), "unavailable, not a crash: {said}");
    assert!(said.contains("full") && !said.contains("panicked"), "{said}");
    let acquire = coord(
        &db,
        state.path(),
        &["--json", "--agent-id", "b", "lock", "acquire", "src/b.rs"],
    );
    let refused = json(&acquire);
    assert_eq!(refused["error"], "database_unavailable", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("full"), "{refused}");

    std::fs::remove_file(filler).unwrap();
    let tasks = json(&coord(&db, state.path(), &["--json", "work", "list"]));
    assert_eq!(
        tasks["tasks"],
        serde_json::json!([]),
        "the refused submission left nothing: {tasks}"
    );
    let locks = json(&coord(&db, state.path(), &["--json", "lock", "list"]));
    let paths: Vec<&str> = locks["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["file_path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/a.rs"], "the refused acquisition left nothing: {locks}");
    let again = coord(
        &db,
        state.path(),
        &["--agent-id", "a", "work", "submit", "t", "accepted"],
    );
    assert!(
        again.status.success(),
        "answers again: {}",
        String::from_utf8_lossy(&again.stderr)
    );
    let verified = json(&coord(&db, state.path(), &["--json", "audit", "verify"]));
    assert_eq!(verified["intact"], true, "{verified}");
}
