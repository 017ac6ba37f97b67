//! A write is answered only once it is durable, though the audit chain's lock is not held
//! through its flush (`crates/coord-postgres/src/durability.rs`).
//!
//! Shown on a private PostgreSQL server (initdb into a temporary directory, a Unix socket
//! only) configured with a synchronous standby that never connects: there a durable commit
//! waits forever (`wait_event = 'SyncRep'`), and one that is not durable does not wait.
//! `synchronous_standby_names` is server-wide, so the shared test server cannot be used:
//! every other test's commits would wait too.

mod pg_support;

use coord_domain::Identity;
use coord_domain::target::LockTarget;
use coord_postgres::{PgOptions, PgStore};
use coord_store::{LockStore as _, OpCtx};
use pg_support::{connect, required};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The audit chain's advisory lock (`coord-postgres/src/chain.rs`).
const CHAIN_LOCK_KEY: i64 = 0x636f_6f72_6461_7564;

/// The newest installed server's `bin` directory.
fn server_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|d| d.ok().map(|d| d.path().join("bin")))
        .filter(|b| b.join("initdb").is_file() && b.join("pg_ctl").is_file())
        .collect();
    dirs.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop()
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Runs a server program as `postgres` when we are root (the server refuses root).
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut c: Command) -> String {
    let out = c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(
        out.status.success(),
        "{c:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A server of our own, stopped and removed when dropped.
struct PrivateServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl PrivateServer {
    fn start() -> Option<PrivateServer> {
        let Some(bin) = server_bin() else {
            assert!(
                !required(),
                "CI needs PostgreSQL's server programs under /usr/lib/postgresql"
            );
            eprintln!("*** SKIPPING: no PostgreSQL server programs under /usr/lib/postgresql");
            return None;
        };
        if is_root()
            && !Command::new("id")
                .arg("postgres")
                .output()
                .is_ok_and(|o| o.status.success())
        {
            assert!(
                !required(),
                "CI runs as root and needs the `postgres` user to run a server"
            );
            eprintln!("*** SKIPPING: root, and no `postgres` user to run a server as");
            return None;
        }
        // Made by the server's user, so that it may write there.
        let mut mktemp = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "mktemp", "-d"]);
            c
        } else {
            let mut c = Command::new("mktemp");
            c.arg("-d");
            c
        };
        mktemp.arg("/tmp/coord-durability-XXXXXX");
        let dir = PathBuf::from(run(mktemp));
        let data = dir.join("data");
        let port = 5433;
        // From here the directory (and the server, once started) go when this is dropped,
        // a failed step's panic included.
        let server = PrivateServer { bin, dir, port };
        let (bin, dir) = (&server.bin, &server.dir);
        let mut initdb = as_server_user(&bin.join("initdb"));
        initdb
            .args([
                "--auth=trust",
                "--username=postgres",
                "--no-sync",
                "--encoding=UTF8",
                "-D",
            ])
            .arg(&data);
        run(initdb);
        // In the configuration file, not on the command line (which ALTER SYSTEM and a
        // reload could not override, and `no_standby` must).
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .expect("postgresql.conf");
        std::io::Write::write_all(&mut conf, b"\nsynchronous_standby_names = 'coord_missing_standby'\n").unwrap();
        let mut start = as_server_user(&bin.join("pg_ctl"));
        start
            .args(["-w", "-D"])
            .arg(&data)
            .arg("-l")
            .arg(dir.join("log"))
            .arg("-o")
            .arg(format!("-c listen_addresses='' -k {} -p {port}", server.dir.display()))
            .arg("start");
        run(start);
        Some(server)
    }

    /// A URL on the server's socket; `sync`: the session's `synchronous_commit`.
    fn url(&self, user: &str, db: &str, sync: &str) -> String {
        // mktemp's names need no escaping but the slashes.
        let host = self.dir.to_str().unwrap().replace('/', "%2F");
        format!(
            "postgres://{user}@{host}:{}/{db}?options=-c%20synchronous_commit%3D{sync}",
            self.port
        )
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let mut stop = as_server_user(&self.bin.join("pg_ctl"));
        stop.args(["-w", "-m", "immediate", "-D"])
            .arg(self.dir.join("data"))
            .arg("stop");
        let _ = stop.output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Migrates `db` as `postgres` with local commits (a synchronous standby that never comes
/// would hold every migration's commit).
async fn migrate(server: &PrivateServer, db: &str) {
    PgStore::connect(
        &server.url("postgres", db, "local"),
        PgOptions {
            pool_size: 1,
            ..Default::default()
        },
    )
    .await
    .expect("migrate");
}

fn store(url: &str) -> PgStore {
    PgStore::connect_lazy(url, &PgOptions::default()).expect("a store")
}

/// Acquires `path` on `store` in a task of its own.
fn acquire(store: PgStore, path: &str) -> tokio::task::JoinHandle<bool> {
    let target = LockTarget::literal_file(path, None).unwrap();
    tokio::spawn(async move {
        let who = Identity {
            agent_id: "durable-agent".into(),
            agent_type: "test".into(),
        };
        let ctx = OpCtx::internal(None, who, "acquire_lock", serde_json::json!({}));
        store
            .acquire_lock(ctx, target, None, 60)
            .await
            .expect("the acquisition")
            .success
    })
}

/// The backend whose commit waits for the missing standby: its pid and statement.
async fn waiting_for_the_standby(
    admin: &tokio_postgres::Client,
    db: &str,
    op: &tokio::task::JoinHandle<bool>,
) -> (i32, String) {
    for _ in 0..2000 {
        assert!(
            !op.is_finished(),
            "{db}: answered without waiting for the standby (not durable)"
        );
        let row = admin
            .query_opt(
                "SELECT pid, query FROM pg_stat_activity WHERE datname = $1 AND wait_event = 'SyncRep'",
                &[&db],
            )
            .await
            .unwrap();
        if let Some(row) = row {
            return (row.get(0), row.get(1));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no backend of {db} waited for the synchronous standby");
}

async fn lock_rows(admin: &tokio_postgres::Client, path: &str) -> i64 {
    admin
        .query_one("SELECT count(*) FROM file_locks WHERE file_path = $1", &[&path])
        .await
        .unwrap()
        .get(0)
}

/// Lets the waiting commits go: with no synchronous standby named, waiters are released.
async fn no_standby(admin: &tokio_postgres::Client) {
    // Each alone: ALTER SYSTEM may not run in the implicit transaction of a multi-statement query.
    for statement in [
        "ALTER SYSTEM SET synchronous_standby_names = ''",
        "SELECT pg_reload_conf()",
    ] {
        admin.batch_execute(statement).await.unwrap();
    }
}

/// Both cases share one server (a start is a few seconds): run in order in one test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_is_answered_only_after_its_commit_is_durable() {
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let admin = connect(&server.url("postgres", "postgres", "local")).await;
    for statement in [
        "CREATE DATABASE flush_after",
        "CREATE DATABASE under_lock",
        "CREATE ROLE plain LOGIN BYPASSRLS",
    ] {
        admin.batch_execute(statement).await.unwrap();
    }
    migrate(&server, "flush_after").await;
    migrate(&server, "under_lock").await;

    // Allowed to flush by message: the operation commits asynchronously (its row is
    // visible, and the chain's lock is free) while its answer waits for the flush's
    // commit, which waits for the standby.
    let flush_admin = connect(&server.url("postgres", "flush_after", "local")).await;
    let op = acquire(store(&server.url("postgres", "flush_after", "on")), "src/a.rs");
    let (_, query) = waiting_for_the_standby(&flush_admin, "flush_after", &op).await;
    assert!(query.contains("pg_logical_emit_message"), "waiting in: {query}");
    assert!(!op.is_finished(), "answered before its commit was durable");
    assert_eq!(
        lock_rows(&flush_admin, "src/a.rs").await,
        1,
        "committed, not yet durable"
    );
    let chain_locks: i64 = flush_admin
        .query_one(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
             AND objsubid = 1 AND (classid::bigint << 32) | objid::bigint = $1",
            &[&CHAIN_LOCK_KEY],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(chain_locks, 0, "the chain's lock is not held through the flush");

    // A role that may not run pg_logical_emit_message: a synchronous commit under the
    // chain's lock.
    let under_admin = connect(&server.url("postgres", "under_lock", "local")).await;
    under_admin
        .batch_execute(
            // Every signature (PostgreSQL 17 added a fourth argument).
            "DO $$ DECLARE f regprocedure; BEGIN
                 FOR f IN SELECT oid::regprocedure FROM pg_proc WHERE proname = 'pg_logical_emit_message' LOOP
                     EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
                 END LOOP;
             END $$;
             GRANT USAGE ON SCHEMA public TO plain;
             GRANT ALL ON ALL TABLES IN SCHEMA public TO plain;
             GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO plain;
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO plain",
        )
        .await
        .unwrap();
    let op_under = acquire(store(&server.url("plain", "under_lock", "on")), "src/b.rs");
    let (pid, query) = waiting_for_the_standby(&under_admin, "under_lock", &op_under).await;
    assert_eq!(query.trim(), "COMMIT", "waiting in: {query}");
    assert!(!op_under.is_finished(), "answered before its commit was durable");
    let holds_chain: bool = under_admin
        .query_one(
            // A bigint key is held as (classid, objid) = its high and low halves.
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND granted
                 AND objsubid = 1 AND (classid::bigint << 32) | objid::bigint = $2)",
            &[&pid, &CHAIN_LOCK_KEY],
        )
        .await
        .unwrap()
        .get(0);
    assert!(holds_chain, "the synchronous commit holds the chain's lock");
    assert_eq!(
        lock_rows(&under_admin, "src/b.rs").await,
        0,
        "not visible before it is durable"
    );

    no_standby(&admin).await;
    assert!(op.await.unwrap(), "acquired once durable");
    assert!(op_under.await.unwrap(), "acquired once durable");
    assert_eq!(lock_rows(&under_admin, "src/b.rs").await, 1);
}
