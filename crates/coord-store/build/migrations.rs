//! The build script of both stores (`build = "../coord-store/build/migrations.rs"`):
//! their migrations are the files of their `migrations/` folder, `NNNN_name.sql`,
//! numbered from the first without a gap. It writes the list to
//! `$OUT_DIR/migrations.rs` as `(version, name, sql)` tuples, so that no migration can
//! exist without being applied (one was once written and never listed).

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("migrations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut found: Vec<(u32, String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .map(|path| {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let parsed = file
                .strip_suffix(".sql")
                .and_then(|stem| stem.split_once('_'))
                .and_then(|(n, name)| Some((n.parse::<u32>().ok().filter(|_| n.len() == 4)?, name.to_string())));
            let (version, name) =
                parsed.unwrap_or_else(|| panic!("{}: a migration is named NNNN_name.sql", path.display()));
            (version, name, path)
        })
        .collect();
    found.sort();
    let first = found.first().map_or(0, |m| m.0);
    let mut out = String::from("&[\n");
    for (i, (version, name, path)) in found.iter().enumerate() {
        let expected = first + u32::try_from(i).unwrap();
        assert_eq!(
            *version,
            expected,
            "{}: migrations are numbered without a gap",
            path.display()
        );
        writeln!(
            out,
            "    ({version}, {name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push(']');
    let target = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("migrations.rs");
    std::fs::write(target, out).unwrap();
}
