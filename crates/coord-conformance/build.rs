//! Finds the conformance cases: every `pub async fn NAME(b: &dyn Backend)` (and `pub fn`,
//! run on a runtime of its own: the proptest state machines) of `src/cases/*.rs`, and
//! writes `conformance_suite!` listing them all to `$OUT_DIR/suite.rs`, so that a case is
//! written once and never forgotten in a list.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("src/cases");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs") && !p.ends_with("mod.rs"))
        .collect();
    files.sort();
    let (mut run_async, mut run_sync) = (String::new(), String::new());
    for file in &files {
        let module = file.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).unwrap();
        for line in text.lines() {
            let (list, rest) = match line.strip_prefix("pub async fn ") {
                Some(rest) => (&mut run_async, rest),
                None => match line.strip_prefix("pub fn ") {
                    Some(rest) => (&mut run_sync, rest),
                    None => continue,
                },
            };
            let Some((name, args)) = rest.split_once('(') else {
                continue;
            };
            if args.starts_with("b: &dyn Backend)") || args.starts_with("b: &dyn crate::Backend)") {
                writeln!(list, "            {module}::{name},").unwrap();
            }
        }
    }
    let suite = format!(
        "/// Expands to every conformance case as a test function.
#[macro_export]
macro_rules! conformance_suite {{
    ($backend:expr) => {{
        $crate::__async_cases!($backend;
{run_async}        );
        $crate::__sync_cases!($backend;
{run_sync}        );
    }};
}}
"
    );
    std::fs::write(PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("suite.rs"), suite).unwrap();
}
