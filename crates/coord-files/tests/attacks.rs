//! The attack suite (research notes `sandboxing.md` §9c, plus the Rust-only cases):
//! nothing outside the workspace is ever read or changed, whatever the path or the race.

use coord_files::{DEFAULT_MAX_BYTES, FileError, TEMP_PREFIX, Workspace};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const MAX: u64 = DEFAULT_MAX_BYTES;

struct Setup {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    out: PathBuf,
    evil: PathBuf,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let out = tmp.path().join("out");
    let evil = tmp.path().join("ws-evil");
    for d in [&ws, &out, &evil, &ws.join("sub")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(ws.join("ok.txt"), "inside").unwrap();
    std::fs::write(ws.join("sub/inner.txt"), "inner").unwrap();
    std::fs::write(out.join("secret.txt"), "SECRET").unwrap();
    std::fs::write(evil.join("secret.txt"), "EVIL").unwrap();
    Setup {
        _tmp: tmp,
        ws,
        out,
        evil,
    }
}

fn code<T: std::fmt::Debug>(r: Result<T, FileError>) -> &'static str {
    match r {
        Ok(v) => panic!("expected a refusal, got {v:?}"),
        Err(e) => e.code(),
    }
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// After every case: the outside is untouched, and no temporary file is left behind.
fn untouched(s: &Setup) {
    assert_eq!(std::fs::read_to_string(s.out.join("secret.txt")).unwrap(), "SECRET");
    assert_eq!(listing(&s.out), vec!["secret.txt"]);
    assert_eq!(std::fs::read_to_string(s.evil.join("secret.txt")).unwrap(), "EVIL");
    let temps: Vec<String> = walk(&s.ws).into_iter().filter(|n| n.contains(TEMP_PREFIX)).collect();
    assert!(temps.is_empty(), "temporary files left: {temps:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        all.push(e.path().to_string_lossy().into_owned());
        if e.file_type().unwrap().is_dir() {
            all.extend(walk(&e.path()));
        }
    }
    all
}

fn write(ws: &Workspace, rel: &str, content: &[u8]) -> Result<coord_files::Written, FileError> {
    ws.prepare_write(rel, content, MAX, false)?.commit()
}

#[test]
fn reads_refuse_every_escape() {
    let s = setup();
    let out = s.out.to_str().unwrap();
    symlink(s.out.join("secret.txt"), s.ws.join("link_file")).unwrap();
    symlink(&s.out, s.ws.join("link_dir")).unwrap();
    symlink("ok.txt", s.ws.join("inner_link")).unwrap();
    symlink(format!("/proc/self/root{out}/secret.txt"), s.ws.join("proc_link")).unwrap();
    symlink("/proc/self/fd/0", s.ws.join("fd_link")).unwrap();
    symlink("loop_b", s.ws.join("loop_a")).unwrap();
    symlink("loop_a", s.ws.join("loop_b")).unwrap();
    std::fs::write(s.ws.join("café.txt"), "nfc").unwrap();
    let ws = Workspace::open(&s.ws).unwrap();

    assert_eq!(ws.read("ok.txt", MAX).unwrap().content, b"inside");
    assert_eq!(ws.read("sub/inner.txt", MAX).unwrap().content, b"inner");
    let evil = format!("{}/secret.txt", s.evil.display());
    let abs_out = format!("{out}/secret.txt");
    let proc_abs = format!("/proc/self/root{out}/secret.txt");
    let cases: &[(&str, &str)] = &[
        ("../out/secret.txt", "path_outside_workspace"),
        ("sub/../ok.txt", "path_outside_workspace"),
        (&abs_out, "path_outside_workspace"),
        (&evil, "path_outside_workspace"),
        ("../ws-evil/secret.txt", "path_outside_workspace"),
        ("link_file", "symlink_denied"),
        ("link_dir/secret.txt", "symlink_denied"),
        ("inner_link", "symlink_denied"),
        ("proc_link", "symlink_denied"),
        (&proc_abs, "path_outside_workspace"),
        ("fd_link", "symlink_denied"),
        ("loop_a", "symlink_denied"),
        ("ok.txt\0../../etc/passwd", "invalid_path"),
        ("cafe\u{301}.txt", "not_found"),
        ("\u{2024}\u{2024}/out/secret.txt", "not_found"),
        ("OK.TXT", "not_found"),
        ("ok.txt/", "invalid_path"),
        ("sub", "not_a_regular_file"),
        (".", "invalid_path"),
        ("", "invalid_path"),
        ("..%2fout%2fsecret.txt", "not_found"),
        ("..\\out\\secret.txt", "invalid_path"),
        ("~/secret.txt", "not_found"),
        ("$HOME/x", "not_found"),
        ("ok.txt/x", "not_found"),
    ];
    for (path, want) in cases {
        assert_eq!(code(ws.read(path, MAX)), *want, "read {path:?}");
    }
    let long = "a".repeat(256);
    assert_eq!(code(ws.read(&long, MAX)), "invalid_path");
    assert_eq!(code(ws.read(&"d/".repeat(2100), MAX)), "invalid_path");
    assert_eq!(ws.read("café.txt", MAX).unwrap().content, b"nfc");
    untouched(&s);
}

#[test]
fn reads_refuse_special_files_sizes_and_hardlinks() {
    let s = setup();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        s.ws.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let socket = std::os::unix::net::UnixListener::bind(s.ws.join("sock")).unwrap();
    std::fs::File::create(s.ws.join("sparse"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    std::fs::write(s.ws.join("exact"), vec![b'x'; MAX as usize]).unwrap();
    std::fs::write(s.ws.join("over"), vec![b'x'; MAX as usize + 1]).unwrap();
    std::fs::hard_link(s.out.join("secret.txt"), s.ws.join("hardlink")).unwrap();
    let ws = Workspace::open(&s.ws).unwrap();

    let started = Instant::now();
    assert_eq!(code(ws.read("fifo", MAX)), "not_a_regular_file");
    assert!(started.elapsed() < Duration::from_secs(5), "a FIFO must not block");
    assert_eq!(code(ws.read("sock", MAX)), "not_a_regular_file");
    assert_eq!(code(ws.read("sparse", MAX)), "file_too_large");
    assert_eq!(ws.read("exact", MAX).unwrap().content.len(), MAX as usize);
    assert_eq!(code(ws.read("over", MAX)), "file_too_large");
    assert_eq!(code(ws.read("hardlink", MAX)), "hardlink_denied");
    // A device node needs CAP_MKNOD; where it can be made, it is refused unopened.
    if rustix::fs::mknodat(
        rustix::fs::CWD,
        s.ws.join("zero"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(1, 5),
    )
    .is_ok()
    {
        assert_eq!(code(ws.read("zero", MAX)), "not_a_regular_file");
        assert_eq!(code(write(&ws, "zero", b"x")), "not_a_regular_file");
    }
    // Writes refuse them too, and never change the shared inode.
    assert_eq!(code(write(&ws, "fifo", b"x")), "not_a_regular_file");
    assert_eq!(code(write(&ws, "hardlink", b"pwned")), "hardlink_denied");
    drop(socket);
    untouched(&s);
}

#[test]
fn writes_are_confined_and_atomic() {
    let s = setup();
    symlink(s.out.join("secret.txt"), s.ws.join("link_file")).unwrap();
    symlink(s.out.join("created-by-attack.txt"), s.ws.join("dangling")).unwrap();
    symlink(&s.out, s.ws.join("link_dir")).unwrap();
    std::fs::write(s.ws.join("script.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(s.ws.join("script.sh"), std::fs::Permissions::from_mode(0o751)).unwrap();
    let ws = Workspace::open(&s.ws).unwrap();

    let w = write(&ws, "new.txt", b"fresh").unwrap();
    assert_eq!((w.bytes, w.temp.starts_with(TEMP_PREFIX)), (5, true));
    assert_eq!(std::fs::read_to_string(s.ws.join("new.txt")).unwrap(), "fresh");
    write(&ws, "ok.txt", b"replaced").unwrap();
    assert_eq!(std::fs::read_to_string(s.ws.join("ok.txt")).unwrap(), "replaced");
    write(&ws, "script.sh", b"#!/bin/sh\necho hi\n").unwrap();
    let mode = std::fs::metadata(s.ws.join("script.sh")).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o751, "an existing file keeps its permissions");
    write(&ws, "sub/inner.txt", b"deeper").unwrap();

    let abs = format!("{}/pwn.txt", s.out.display());
    let cases: &[(&str, &str)] = &[
        ("link_file", "symlink_denied"),
        ("dangling", "symlink_denied"),
        ("link_dir/pwn.txt", "symlink_denied"),
        ("../out/pwn.txt", "path_outside_workspace"),
        (&abs, "path_outside_workspace"),
        ("sub", "not_a_regular_file"),
        ("newdir/", "invalid_path"),
        ("nope/x.txt", "not_found"),
    ];
    for (path, want) in cases {
        assert_eq!(code(write(&ws, path, b"pwned")), *want, "write {path:?}");
    }
    assert_eq!(code(write(&ws, "big", &vec![0; MAX as usize + 1])), "file_too_large");
    assert!(!s.ws.join("big").exists());
    assert!(
        !s.out.join("created-by-attack.txt").exists(),
        "a dangling link's target is never created"
    );

    // create_only: refused when the name exists, never replacing it.
    let refused = ws.prepare_write("ok.txt", b"again", MAX, true).map(|_| ());
    assert_eq!(code(refused), "file_exists");
    ws.prepare_write("brand-new.txt", b"one", MAX, true)
        .unwrap()
        .commit()
        .unwrap();
    // The name appears between prepare and commit: RENAME_NOREPLACE refuses.
    let p = ws.prepare_write("raced.txt", b"mine", MAX, true).unwrap();
    std::fs::write(s.ws.join("raced.txt"), "theirs").unwrap();
    assert_eq!(code(p.commit()), "file_exists");
    assert_eq!(std::fs::read_to_string(s.ws.join("raced.txt")).unwrap(), "theirs");

    // Abandoned before commit: the old content stays, no temporary file.
    let p = ws.prepare_write("ok.txt", b"never", MAX, false).unwrap();
    drop(p);
    assert_eq!(std::fs::read_to_string(s.ws.join("ok.txt")).unwrap(), "replaced");
    untouched(&s);
}

#[test]
fn a_leaf_swapped_before_the_rename() {
    let s = setup();
    let ws = Workspace::open(&s.ws).unwrap();
    // The leaf becomes a symlink to the outside: rename replaces the link, never
    // writing through it.
    let p = ws.prepare_write("ok.txt", b"mine", MAX, false).unwrap();
    std::fs::remove_file(s.ws.join("ok.txt")).unwrap();
    symlink(s.out.join("secret.txt"), s.ws.join("ok.txt")).unwrap();
    p.commit().unwrap();
    assert_eq!(std::fs::read_to_string(s.ws.join("ok.txt")).unwrap(), "mine");
    assert!(
        !std::fs::symlink_metadata(s.ws.join("ok.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // The leaf becomes a directory: refused.
    let p = ws.prepare_write("turned", b"x", MAX, false).unwrap();
    std::fs::create_dir(s.ws.join("turned")).unwrap();
    std::fs::write(s.ws.join("turned/keep"), "k").unwrap();
    assert_eq!(code(p.commit()), "not_a_regular_file");
    assert_eq!(std::fs::read_to_string(s.ws.join("turned/keep")).unwrap(), "k");
    untouched(&s);
}

#[test]
fn a_parent_moved_out_between_prepare_and_commit_is_undone() {
    let s = setup();
    std::fs::create_dir(s.ws.join("moving")).unwrap();
    std::fs::write(s.ws.join("moving/old.txt"), "old").unwrap();
    let ws = Workspace::open(&s.ws).unwrap();
    let new = ws.prepare_write("moving/f.txt", b"x", MAX, false).unwrap();
    let over = ws.prepare_write("moving/old.txt", b"new", MAX, false).unwrap();
    std::fs::rename(s.ws.join("moving"), s.out.join("moved")).unwrap();
    assert_eq!(code(new.commit()), "file_changed");
    assert_eq!(code(over.commit()), "file_changed");
    // Nothing new outside, and the file that was there keeps its content.
    assert_eq!(listing(&s.out.join("moved")), vec!["old.txt"]);
    assert_eq!(std::fs::read_to_string(s.out.join("moved/old.txt")).unwrap(), "old");
    std::fs::remove_dir_all(s.out.join("moved")).unwrap();
    untouched(&s);
}

#[test]
fn a_parent_swapped_for_another_directory_is_refused_with_nothing_lost() {
    let s = setup();
    std::fs::create_dir(s.ws.join("d")).unwrap();
    std::fs::write(s.ws.join("d/f.txt"), "old").unwrap();
    let ws = Workspace::open(&s.ws).unwrap();
    let p = ws.prepare_write("d/f.txt", b"new", MAX, false).unwrap();
    std::fs::rename(s.ws.join("d"), s.ws.join("d.orig")).unwrap();
    std::fs::create_dir(s.ws.join("d")).unwrap();
    assert_eq!(code(p.commit()), "file_changed");
    assert_eq!(std::fs::read_to_string(s.ws.join("d.orig/f.txt")).unwrap(), "old");
    assert_eq!(listing(&s.ws.join("d.orig")), vec!["f.txt"]);
    assert_eq!(listing(&s.ws.join("d")), Vec::<String>::new());
    untouched(&s);
}

#[test]
fn permissions_are_kept_but_never_set_id_bits_and_read_only_files_are_refused() {
    let s = setup();
    let mode = |name: &str| std::fs::metadata(s.ws.join(name)).unwrap().permissions().mode() & 0o7777;
    std::fs::write(s.ws.join("tool"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(s.ws.join("tool"), std::fs::Permissions::from_mode(0o6755)).unwrap();
    std::fs::write(s.ws.join("frozen.txt"), "keep").unwrap();
    std::fs::set_permissions(s.ws.join("frozen.txt"), std::fs::Permissions::from_mode(0o444)).unwrap();
    let ws = Workspace::open(&s.ws).unwrap();
    let w = write(&ws, "tool", b"#!/bin/sh\nid\n").unwrap();
    assert!(w.replaced && w.synced);
    assert_eq!(mode("tool"), 0o755, "set-user-ID and set-group-ID are dropped");
    assert_eq!(code(write(&ws, "frozen.txt", b"x")), "permission_denied");
    assert_eq!(std::fs::read_to_string(s.ws.join("frozen.txt")).unwrap(), "keep");
    untouched(&s);
}

/// Flips `flip` between a real directory and a symlink to the outside until stopped.
fn flipper(ws: PathBuf, out: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let (flip, real, link) = (ws.join("flip"), ws.join("flip.real"), ws.join("flip.link"));
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("f.txt"), "inside").unwrap();
        symlink(&out, &link).unwrap();
        let mut flips = 0;
        while !stop.load(Ordering::Relaxed) {
            // Atomic swaps: `flip` is always one or the other.
            std::fs::rename(&real, &flip).unwrap();
            // Long enough, now and then, for a whole write (two resolutions, fsyncs).
            if flips % 8 == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
            std::fs::rename(&flip, &real).unwrap();
            std::fs::rename(&link, &flip).unwrap();
            std::fs::rename(&flip, &link).unwrap();
            flips += 1;
        }
        flips
    })
}

#[test]
fn racing_directory_swaps_never_leak_a_read() {
    let s = setup();
    std::fs::write(s.out.join("f.txt"), "SECRET").unwrap();
    let ws = Workspace::open(&s.ws).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flips = flipper(s.ws.clone(), s.out.clone(), stop.clone());
    let (mut ok, mut refused) = (0, 0);
    // At least 20,000 reads, and on until the race has gone both ways (on a loaded
    // 2-core machine the flipper may not interleave with the first 20,000), bounded.
    let mut reads = 0;
    while reads < 20_000 || ((ok == 0 || refused == 0) && reads < 1_000_000) {
        reads += 1;
        match ws.read("flip/f.txt", MAX) {
            Ok(r) => {
                assert_eq!(r.content, b"inside", "a read leaked the outside");
                ok += 1;
            }
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flips.join().unwrap();
    eprintln!("racing reads: {ok} read inside, {refused} refused, {flips} flips");
    assert!(
        flips > 0 && ok > 0 && refused > 0,
        "the race must have happened both ways"
    );
    std::fs::remove_file(s.out.join("f.txt")).unwrap();
    untouched(&s);
}

#[test]
fn racing_directory_swaps_never_leak_a_write() {
    let s = setup();
    let ws = Workspace::open(&s.ws).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flips = flipper(s.ws.clone(), s.out.clone(), stop.clone());
    let (mut ok, mut refused) = (0, 0);
    for i in 0..10_000 {
        match write(&ws, "flip/w.txt", format!("write {i}").as_bytes()) {
            Ok(_) => ok += 1,
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flips.join().unwrap();
    eprintln!("racing writes: {ok} written inside, {refused} refused, {flips} flips");
    assert!(flips > 0 && refused > 0, "the race must have happened");
    // Nothing was created outside; every temporary file is gone (the flip directory is
    // inside the workspace, so `untouched` walks it too).
    untouched(&s);
}

#[test]
fn readers_during_overwrites_see_old_or_new_never_partial() {
    let s = setup();
    let a = vec![b'a'; 256 * 1024];
    let b = vec![b'b'; 256 * 1024];
    std::fs::write(s.ws.join("big.txt"), &a).unwrap();
    let ws = Arc::new(Workspace::open(&s.ws).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = [a.clone(), b.clone()]
        .into_iter()
        .map(|content| {
            let (ws, stop) = (ws.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    write(&ws, "big.txt", &content).unwrap();
                }
            })
        })
        .collect();
    let mut changed = 0;
    for _ in 0..300 {
        match ws.read("big.txt", MAX) {
            Ok(r) => assert!(
                r.content == a || r.content == b,
                "a torn file of {} bytes",
                r.content.len()
            ),
            // A refusal would be acceptable; a torn file never is.
            Err(FileError::Changed) => changed += 1,
            Err(e) => panic!("{e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(changed < 150, "{changed} of 300 reads refused");
    for w in writers {
        w.join().unwrap();
    }
    untouched(&s);
}

#[test]
fn a_read_only_workspace_refuses_writes_and_keeps_content() {
    if rustix::process::geteuid().is_root() {
        // root ignores permission bits; the read-only mount case needs a namespace.
        return read_only_mount_case();
    }
    let s = setup();
    std::fs::set_permissions(&s.ws, std::fs::Permissions::from_mode(0o555)).unwrap();
    let ws = Workspace::open(&s.ws).unwrap();
    assert_eq!(code(write(&ws, "ok.txt", b"x")), "permission_denied");
    std::fs::set_permissions(&s.ws, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(std::fs::read_to_string(s.ws.join("ok.txt")).unwrap(), "inside");
}

/// As root: a read-only bind mount in a private mount namespace (a child process, so
/// this test's namespace is untouched); skipped loudly where namespaces are not allowed.
fn read_only_mount_case() {
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "ro_mount_child", "--nocapture", "--include-ignored"])
        .env("COORD_FILES_RO_CHILD", "1")
        .status()
        .unwrap();
    assert!(status.success(), "the read-only mount child failed");
}

#[test]
#[ignore = "run by a_read_only_workspace_refuses_writes_and_keeps_content"]
fn ro_mount_child() {
    if std::env::var_os("COORD_FILES_RO_CHILD").is_none() {
        return;
    }
    use rustix::mount::{MountFlags, MountPropagationFlags, mount_bind, mount_change, mount_remount};
    // SAFETY: this child process runs this one test; its thread leaves the shared mount
    // namespace, which nothing else in the process relies on.
    if unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }.is_err() {
        eprintln!("SKIPPING the read-only mount case: no mount namespace here");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must be able to unshare a mount namespace"
        );
        return;
    }
    mount_change("/", MountPropagationFlags::REC | MountPropagationFlags::PRIVATE).unwrap();
    let s = setup();
    mount_bind(&s.ws, &s.ws).unwrap();
    mount_remount(&s.ws, MountFlags::BIND | MountFlags::RDONLY, "").unwrap();
    let ws = Workspace::open(&s.ws).unwrap();
    let e = write(&ws, "ok.txt", b"x").unwrap_err();
    assert_eq!(e.code(), "write_failed");
    assert!(e.to_string().contains("read-only"), "{e}");
    assert_eq!(std::fs::read_to_string(s.ws.join("ok.txt")).unwrap(), "inside");
    // A mount point inside the workspace is not crossed (RESOLVE_NO_XDEV).
    std::fs::create_dir_all(s.out.join("m")).unwrap();
    let inner = s.ws.join("sub");
    mount_bind(&s.out, &inner).unwrap();
    assert_eq!(code(ws.read("sub/secret.txt", MAX)), "path_outside_workspace");
    // A full file system: the write fails clearly, the old content stays, no
    // temporary file is left.
    let full = s.out.join("full");
    std::fs::create_dir_all(&full).unwrap();
    rustix::mount::mount("tmpfs", &full, "tmpfs", MountFlags::empty(), Some(c"size=64k")).unwrap();
    std::fs::write(full.join("ok.txt"), "old").unwrap();
    let small = Workspace::open(&full).unwrap();
    let e = write(&small, "ok.txt", &vec![b'x'; 256 * 1024]).unwrap_err();
    assert_eq!(e.code(), "write_failed", "{e}");
    assert!(e.to_string().contains("no space"), "{e}");
    assert_eq!(std::fs::read_to_string(full.join("ok.txt")).unwrap(), "old");
    assert_eq!(listing(&full), vec!["ok.txt"], "no temporary file is left");
    eprintln!("read-only mount, mount crossing and a full file system: refused, content kept");
}
