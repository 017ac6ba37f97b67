//! The invariants ARCHITECTURE.md states, checked against the tree: the map is short, its
//! crate table agrees with every crate's manifest (what each must not depend on), no SQL
//! lives outside the store crates, operations never call one another, no product
//! function is longer than a reader can hold, and doctests are off with none written.
//! These read files only: nothing is built or run.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap()
}

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// A path as a reader finds it: from the repository's root.
fn shown(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// A product source file: not a test module file of its own.
fn is_product(p: &Path) -> bool {
    let name = p.file_name().unwrap().to_string_lossy();
    name != "tests.rs" && !name.ends_with("_tests.rs")
}

/// The lines of a file before its `#[cfg(test)] mod …` (by convention at the end).
fn product_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    lines[..end].to_vec()
}

#[test]
fn the_map_is_short() {
    let chars = architecture().chars().count();
    assert!(
        chars <= 10_000,
        "ARCHITECTURE.md is {chars} characters: keep it a map (≤ 10,000); details go in the crates' //! docs"
    );
}

/// The rows of the "Crates" table: crate → packages it must not depend on.
fn crate_table() -> Vec<(String, Vec<String>)> {
    let text = architecture();
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Crates"))
        .expect("ARCHITECTURE.md has a ## Crates section");
    let ticked = |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(str::to_string).collect() };
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            assert!(cells.len() >= 5, "a row of three cells: {l}");
            (ticked(cells[1]).remove(0), ticked(cells[3]))
        })
        .collect()
}

/// The names under `[dependencies]` of a crate's manifest (not dev- or build-).
fn dependencies(krate: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join("crates").join(krate).join("Cargo.toml")).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn the_crate_table_names_every_crate_and_its_manifest_agrees() {
    let table = crate_table();
    let listed: Vec<String> = table.iter().map(|(c, _)| c.clone()).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, crates(), "one row per crate in crates/, and no other");
    for (krate, forbidden) in &table {
        let deps = dependencies(krate);
        for f in forbidden {
            assert!(
                !deps.contains(f),
                "{krate} depends on {f}, which ARCHITECTURE.md says it must not"
            );
        }
    }
}

#[test]
fn no_sql_outside_the_store_crates() {
    // The stores own SQL; the benchmark's raw baselines run the stores' own statements
    // against them; the guardrails judge SQL that agents run; the conformance suite is
    // tests.
    let allowed = [
        "coord-store",
        "coord-sqlite",
        "coord-postgres",
        "coord-bench",
        "coord-guardrails",
        "coord-conformance",
    ];
    let statements = [
        "SELECT ",
        "INSERT INTO ",
        "DELETE FROM ",
        "CREATE TABLE ",
        "ALTER TABLE ",
    ];
    let mut found = Vec::new();
    for krate in crates().iter().filter(|c| !allowed.contains(&c.as_str())) {
        for file in sources(&root().join("crates").join(krate).join("src"))
            .into_iter()
            .filter(|p| is_product(p))
        {
            let text = std::fs::read_to_string(&file).unwrap();
            for (i, line) in product_lines(&text).iter().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                // Inside a string literal: after a quote on the line.
                let Some(q) = code.find('"') else { continue };
                if statements.iter().any(|s| code[q..].contains(s)) {
                    found.push(format!("{}:{}: {}", shown(&file), i + 1, code));
                }
            }
        }
    }
    assert!(found.is_empty(), "SQL outside the store crates:\n{}", found.join("\n"));
}

/// The longest a product function may be, from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 120;

/// Each line's braces in code: `{` minus `}`, and whether it opened one. Braces inside
/// string, raw string and character literals and inside comments are not code.
fn brace_depths(lines: &[&str]) -> Vec<(i64, bool)> {
    #[derive(Clone, Copy, PartialEq)]
    enum In {
        Code,
        Str,
        Raw(usize),
        Block(usize),
    }
    let mut state = In::Code;
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let c: Vec<char> = line.chars().collect();
        let (mut net, mut opened, mut i) = (0i64, false, 0usize);
        while i < c.len() {
            match state {
                In::Str if c[i] == '\\' => i += 1,
                In::Str if c[i] == '"' => state = In::Code,
                In::Raw(h) if c[i] == '"' && c[i + 1..].iter().take(h).filter(|&&x| x == '#').count() == h => {
                    i += h;
                    state = In::Code;
                }
                In::Block(d) if c[i] == '*' && c.get(i + 1) == Some(&'/') => {
                    i += 1;
                    state = if d == 1 { In::Code } else { In::Block(d - 1) };
                }
                In::Block(d) if c[i] == '/' && c.get(i + 1) == Some(&'*') => {
                    i += 1;
                    state = In::Block(d + 1);
                }
                In::Code if c[i] == '/' && c.get(i + 1) == Some(&'/') => break,
                In::Code if c[i] == '/' && c.get(i + 1) == Some(&'*') => {
                    i += 1;
                    state = In::Block(1);
                }
                In::Code if c[i] == '"' => state = In::Str,
                In::Code
                    if c[i] == 'r'
                        && matches!(c.get(i + 1), Some('"' | '#'))
                        && (i == 0 || !c[i - 1].is_alphanumeric()) =>
                {
                    let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
                    if c.get(i + 1 + hashes) == Some(&'"') {
                        i += 1 + hashes;
                        state = In::Raw(hashes);
                    }
                }
                // A character literal ('{', '\'', '\u{7b}'), not a lifetime ('a).
                In::Code if c[i] == '\'' => {
                    let end = if c.get(i + 1) == Some(&'\\') {
                        // After the escaped character: '\'' ends at its second quote.
                        c.get(i + 3..)
                            .and_then(|rest| rest.iter().position(|&x| x == '\''))
                            .map(|p| i + 3 + p)
                    } else if c.get(i + 2) == Some(&'\'') {
                        Some(i + 2)
                    } else {
                        None
                    };
                    if let Some(end) = end {
                        i = end;
                    }
                }
                In::Code if c[i] == '{' => {
                    net += 1;
                    opened = true;
                }
                In::Code if c[i] == '}' => net -= 1,
                _ => {}
            }
            i += 1;
        }
        out.push((net, opened));
    }
    out
}

/// Functions longer than the limit in `text`: (name, first line, length).
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines = product_lines(text);
    let braces = brace_depths(&lines);
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let name = ["pub(crate) ", "pub(super) ", "pub ", ""]
            .iter()
            .filter_map(|vis| code.strip_prefix(vis))
            .flat_map(|rest| {
                ["async fn ", "const fn ", "fn "]
                    .iter()
                    .filter_map(move |kw| rest.strip_prefix(kw))
            })
            .next()
            .map(|rest| rest.split(['(', '<']).next().unwrap_or_default().to_string());
        let Some(name) = name else { continue };
        let (mut depth, mut started) = (0i64, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            if !started && l.contains(';') && !braces[j].1 {
                break; // a declaration without a body
            }
            depth += braces[j].0;
            started |= braces[j].1;
            if started && depth <= 0 {
                let len = j - i + 1;
                if len > MAX_FUNCTION_LINES {
                    out.push((name.clone(), i + 1, len));
                }
                break;
            }
        }
    }
    out
}

#[test]
fn no_product_function_is_longer_than_a_reader_can_hold() {
    let mut found = Vec::new();
    // The conformance cases are tests, each one scenario read top to bottom.
    for krate in crates().iter().filter(|c| c.as_str() != "coord-conformance") {
        for file in sources(&root().join("crates").join(krate).join("src"))
            .into_iter()
            .filter(|p| is_product(p))
        {
            let text = std::fs::read_to_string(&file).unwrap();
            for (name, line, len) in long_functions(&text) {
                found.push(format!("{}:{line}: {name} is {len} lines", shown(&file)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them where their phases are):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_length_check_counts_a_function_to_its_closing_brace() {
    let body = "    let x = 1;\n".repeat(MAX_FUNCTION_LINES);
    let long = format!("pub async fn long(a: u8) -> u8 {{\n{body}}}\nfn short() {{}}\n");
    assert_eq!(
        long_functions(&long),
        vec![("long".to_string(), 1, MAX_FUNCTION_LINES + 2)]
    );
    let tested = format!("fn ok() {{}}\n#[cfg(test)]\nmod tests {{\n    fn long() {{\n{body}    }}\n}}\n");
    assert!(long_functions(&tested).is_empty(), "test modules do not count");
    assert!(long_functions("fn decl(&self);\n").is_empty());
    // Braces in literals and comments are not code.
    let literals = format!(
        "fn lex(c: char) -> char {{\n    let _ = ('{{', '\\'', \"{{ ${{\", r#\"}}\"#); // {{\n    /* {{ */ c\n}}\n{long}"
    );
    assert_eq!(
        long_functions(&literals),
        vec![("long".to_string(), 5, MAX_FUNCTION_LINES + 2)]
    );
}

/// A store's migrations: the names of `migrations/NNNN_name.sql`, in order (the build
/// script applies exactly these).
fn migrations(store: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(root().join("crates").join(store).join("migrations"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| f.trim_end_matches(".sql").split_once('_').unwrap().1.to_string())
        .collect()
}

/// Migrations only one store has, and why: every other change is made to both, in the
/// same order, so that a change made to one store only is a decision, not an omission.
const ONE_STORE_ONLY: &[(&str, &str, &str)] = &[
    (
        "coord-postgres",
        "bootstrap",
        "what Supabase has and a plain PostgreSQL lacks (roles, schemas)",
    ),
    (
        "coord-postgres",
        "core",
        "SQLite's `init`: the first schema, written per engine",
    ),
    ("coord-sqlite", "init", "PostgreSQL's `core`"),
    (
        "coord-postgres",
        "queue_reads_need_a_login",
        "row-level security: SQLite has no logins",
    ),
    (
        "coord-postgres",
        "bookkeeping_rls",
        "row-level security: SQLite has no logins",
    ),
    (
        "coord-postgres",
        "memory_recall",
        "GIN's fast update off for the full-text index (SQLite's FTS5 has no pending list)",
    ),
    ("coord-postgres", "memory_tags_index", "the same for the tag index"),
    (
        "coord-postgres",
        "expectations",
        "coord_expect(): one-round-trip operations' premises (SQLite has no round trips to save)",
    ),
    (
        "coord-sqlite",
        "leaner_writes",
        "fewer pages per write: SQLite's page-level costs",
    ),
];

#[test]
fn the_stores_make_the_same_schema_changes_in_the_same_order() {
    let shared = |store: &str| -> Vec<String> {
        migrations(store)
            .into_iter()
            .filter(|m| !ONE_STORE_ONLY.iter().any(|(s, n, _)| *s == store && n == m))
            .collect()
    };
    for (store, name, _) in ONE_STORE_ONLY {
        assert!(
            migrations(store).contains(&name.to_string()),
            "{store} has no migration {name}: remove it from the list"
        );
    }
    assert_eq!(
        shared("coord-sqlite"),
        shared("coord-postgres"),
        "a schema change made to one store only: make it in the other too, or list it in ONE_STORE_ONLY with why"
    );
}

#[test]
fn operations_never_call_one_another() {
    // What follows an operation runs through the coordinator's one follow-up mechanism
    // (coord-service's follow_up/), never called from inside an operation: every way
    // of running an operation (the pipeline's entries, the typed and erased fronts,
    // another operation's execute) would bring back operations nesting each other.
    let ops = root().join("crates/coord-service/src/ops");
    let calls = [
        ".run::<",
        ".run_only::<",
        ".run_json::<",
        ".pipeline::<",
        "call::<",
        ".invoke(",
        "::execute(",
        "(entry.run)",
    ];
    let mut found = Vec::new();
    for file in sources(&ops) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in product_lines(&text).iter().enumerate() {
            if !line.trim_start().starts_with("//") && calls.iter().any(|c| line.contains(c)) {
                found.push(format!("{}:{}: {}", shown(&file), n + 1, line.trim()));
            }
        }
    }
    assert!(sources(&ops).len() > 10, "the operations moved: {}", shown(&ops));
    assert!(
        found.is_empty(),
        "operations running operations (hand the work to Coordinator::follow or Operation::follow_ups):\n{}",
        found.join("\n")
    );
}

/// Doctests are off in every library (`[lib] doctest = false`): each crate's doctest pass
/// is a rustdoc build of its own, and none had a doctest. So a Rust code block in a doc
/// comment would never run: every fenced block says it is not Rust (`ignore`, `text`,
/// `sh`, `json`, …).
#[test]
fn doctests_are_off_and_no_doc_comment_holds_one() {
    const NOT_RUST: &[&str] = &[
        "ignore", "text", "sh", "bash", "console", "json", "toml", "yaml", "sql", "ini", "markdown",
    ];
    let mut found = Vec::new();
    for krate in crates() {
        let dir = root().join("crates").join(&krate);
        let manifest: toml_edit::DocumentMut = std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
        if dir.join("src/lib.rs").is_file() && manifest["lib"]["doctest"].as_bool() != Some(false) {
            found.push(format!("{krate}/Cargo.toml: no `[lib] doctest = false`"));
        }
        for file in sources(&dir.join("src")) {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut open = false;
            for (n, line) in text.lines().enumerate() {
                let t = line.trim_start();
                let Some(doc) = t.strip_prefix("///").or_else(|| t.strip_prefix("//!")) else {
                    continue;
                };
                let Some(info) = doc.trim_start().strip_prefix("```") else {
                    continue;
                };
                if !open && !NOT_RUST.contains(&info.trim()) {
                    found.push(format!("{}:{}: a Rust block in a doc comment", shown(&file), n + 1));
                }
                open = !open;
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
