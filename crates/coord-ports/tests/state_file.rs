//! The state file's failure modes: damaged content, awkward paths, read-only status.

use coord_domain::ErrorCode;
use coord_domain::ports::PortConfig;
use coord_ports::PortAllocator;

/// A local process: administers the machine's blocks.
static ROOT: std::sync::LazyLock<coord_domain::ports::Claimant> =
    std::sync::LazyLock::new(|| coord_domain::ports::Claimant {
        agent_id: "root".into(),
        admin: true,
    });

#[test]
fn a_damaged_state_file_is_an_error_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ports.json");
    std::fs::write(&path, "{ not json").unwrap();
    let a = PortAllocator::new(path.clone(), PortConfig::default());
    let now = chrono::Utc::now();
    for e in [
        a.allocate("s1", &ROOT, now).unwrap_err(),
        a.release("s1", &ROOT, now).unwrap_err(),
        a.status(now).unwrap_err(),
    ] {
        assert_eq!(e.code, ErrorCode::DatabaseUnavailable);
        assert!(
            e.message.contains("damaged") && e.message.contains("ports.json"),
            "{}",
            e.message
        );
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{ not json",
        "the leases in it are not forgotten"
    );
}

#[test]
fn lock_and_temporary_files_never_coincide_with_the_state_file() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["state.lock", "state.tmp", "state"] {
        let path = dir.path().join(name);
        let a = PortAllocator::new(path.clone(), PortConfig::default());
        let now = chrono::Utc::now();
        let first = a.allocate("s1", &ROOT, now).unwrap();
        let second = a.allocate("s2", &ROOT, now).unwrap();
        assert_ne!(first.allocation.db_port, second.allocation.db_port, "{name}");
        assert_eq!(a.status(now).unwrap().allocations.len(), 2, "{name}");
    }
}

#[test]
fn status_does_not_rewrite_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ports.json");
    let a = PortAllocator::new(path.clone(), PortConfig::default());
    let now = chrono::Utc::now();
    a.allocate("s1", &ROOT, now).unwrap();
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
    a.status(now).unwrap();
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::ino(&after), inode, "not replaced");
    assert_eq!(after.modified().unwrap(), before);
}
