//! SQL a database client runs, read with `sqlparser` in the client's dialect: `DELETE` or
//! `UPDATE` without a real `WHERE`, `TRUNCATE`, `DROP`, and schema changes — also inside
//! `WITH … AS (DELETE …)` and `EXPLAIN ANALYZE` (which runs its statement). Keywords in
//! string literals, comments and dollar-quoted bodies are data.
//!
//! Client meta-commands (`\dt` in psql, `.tables` in sqlite3) are not SQL and are set
//! aside first. SQL the parser cannot read fails closed (`unparseable_sql`), unless it is a
//! fragment (lines a diff adds to a `.sql` file): then a scanner over its keywords, blind
//! to literals and comments, still finds what is plainly destructive.

use crate::hit::{Hit, migrate_hit};
use coord_domain::guardrails::{Action, Category};
use sqlparser::ast::{CopySource, CopyTarget, Expr, Query, SetExpr, Statement, Value};
use sqlparser::dialect::{ClickHouseDialect, Dialect, GenericDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

/// The dialect of a client program.
pub fn dialect(prog: &str) -> Box<dyn Dialect> {
    match prog {
        "psql" | "cockroach" => Box::new(PostgreSqlDialect {}),
        "mysql" | "mariadb" => Box::new(MySqlDialect {}),
        "sqlite3" => Box::new(SQLiteDialect {}),
        "clickhouse-client" => Box::new(ClickHouseDialect {}),
        _ => Box::new(GenericDialect),
    }
}

/// A blocking finding: everything SQL finds blocks, except migrations.
fn block(category: Category, operation: &str, reason: impl Into<String>) -> Hit {
    Hit {
        category,
        operation: operation.into(),
        action: Action::Block,
        reason: reason.into(),
    }
}

/// The text without the client's meta-commands (psql `\dt`, sqlite3 `.tables`), which
/// are not SQL, and the findings of those that are dangerous: a shell command (`\!`,
/// `.shell`, `.system`, output to a pipe), SQL read from a file (`\i`, `.read`), a COPY
/// through a program. A line only counts as a meta-command outside a string literal;
/// psql's `\.` (end of COPY data) stays, and SQL after psql's `\\` separator is kept.
fn meta_commands(text: &str, prog: &str) -> (String, Vec<Hit>) {
    let prefix = match prog {
        "psql" | "cockroach" => '\\',
        "sqlite3" => '.',
        _ => return (text.to_string(), Vec::new()),
    };
    let (mut sql, mut hits) = (Vec::new(), Vec::new());
    let mut quotes = 0usize;
    for line in text.lines() {
        let t = line.trim_start();
        let outside_literal = quotes.is_multiple_of(2);
        quotes += line.matches('\'').count();
        if !(outside_literal && t.starts_with(prefix)) || t.trim_end() == "\\." {
            sql.push(line.to_string());
            continue;
        }
        let (meta, rest) = match (prefix, t.split_once("\\\\")) {
            ('\\', Some((meta, rest))) => (meta, Some(rest)),
            _ => (t, None),
        };
        let lower = meta.to_ascii_lowercase();
        let word = lower.split_whitespace().next().unwrap_or_default();
        let shell = matches!(word, "\\!" | ".shell" | ".system")
            || (matches!(
                word,
                "\\o" | "\\out" | "\\g" | "\\gx" | "\\w" | "\\write" | ".output" | ".once"
            ) && meta.contains('|'))
            || (word == "\\copy" && lower.contains(" program "));
        if shell {
            hits.push(block(
                Category::Unverifiable,
                "client_shell",
                format!(
                    "the client command `{}` runs a shell command; run the command itself",
                    meta.trim()
                ),
            ));
        } else if matches!(
            word,
            "\\i" | "\\include" | "\\ir" | "\\include_relative" | ".read" | ".import"
        ) {
            hits.push(block(
                Category::Unverifiable,
                "dynamic_sql",
                format!("`{}` runs SQL from a file, not in the command line", meta.trim()),
            ));
        }
        if let Some(rest) = rest {
            sql.push(rest.to_string());
        }
    }
    (sql.join("\n"), hits)
}

/// Destructive statements in `text`, read in `prog`'s dialect. `fragment`: lines out of
/// a file (a diff), which need not parse on their own.
pub fn analyze(text: &str, prog: &str, fragment: bool) -> Vec<Hit> {
    let (mut sql, mut hits) = meta_commands(text, prog);
    if prog == "mysql" || prog == "mariadb" {
        // `\G` ends a statement as `;` does (vertical output).
        sql = sql.replace("\\G", ";").replace("\\g", ";");
    }
    if sql.trim().is_empty() {
        return hits;
    }
    hits.extend(parsed(&sql, prog, fragment));
    hits
}

fn parsed(sql: &str, prog: &str, fragment: bool) -> Vec<Hit> {
    let dialect = dialect(prog);
    match Parser::parse_sql(&*dialect, sql) {
        Ok(statements) => statements.iter().flat_map(statement).collect(),
        // Statement by statement: what parses is judged; what does not is scanned, and
        // refused unless it is plainly harmless.
        Err(e) => match statements_of(&*dialect, sql) {
            Some(texts) => texts
                .iter()
                .flat_map(|text| match Parser::parse_sql(&*dialect, text) {
                    Ok(parsed) => parsed.iter().flat_map(statement).collect(),
                    Err(e) => unparsed(text, fragment, &e.to_string()),
                })
                .collect(),
            None => unparsed(sql, fragment, &e.to_string()),
        },
    }
}

/// The statements of `sql` as texts, split at semicolons by sqlparser's tokenizer (so
/// never inside a literal or a comment); None when it cannot tokenize.
fn statements_of(dialect: &dyn Dialect, sql: &str) -> Option<Vec<String>> {
    let tokens = sqlparser::tokenizer::Tokenizer::new(dialect, sql).tokenize().ok()?;
    let mut out = vec![String::new()];
    for t in tokens {
        match t {
            Token::SemiColon => out.push(String::new()),
            t => {
                if let Some(last) = out.last_mut() {
                    last.push_str(&t.to_string());
                }
            }
        }
    }
    out.retain(|s| !s.trim().is_empty());
    Some(out)
}

/// Statements that read or maintain and change no data nor schema, when the parser does
/// not know them (`PRAGMA table_info(t)` in SQLite).
fn harmless(text: &str) -> bool {
    let upper = text.trim_start().to_ascii_uppercase();
    let first = upper
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap_or_default();
    matches!(
        first,
        "PRAGMA" | "SHOW" | "DESCRIBE" | "DESC" | "VACUUM" | "ANALYZE" | "CHECKPOINT" | "REINDEX" | "LISTEN" | "NOTIFY"
    )
}

/// A statement the parser cannot read: a fragment is scanned for keywords; a whole one
/// is refused unless the scan finds what it is, or it is plainly harmless.
fn unparsed(text: &str, fragment: bool, error: &str) -> Vec<Hit> {
    let scanned = scan(text);
    if fragment || !scanned.is_empty() || harmless(text) {
        return scanned;
    }
    vec![Hit {
        category: Category::Unverifiable,
        operation: "unparseable_sql".into(),
        action: Action::Block,
        reason: format!("the SQL could not be read ({error}); write it so it parses, or ask for approval"),
    }]
}

/// A `WHERE` that selects every row: none, `TRUE`, `1`, or `x = x`.
fn selects_all(selection: Option<&Expr>) -> bool {
    match selection {
        None => true,
        Some(Expr::Nested(e)) => selects_all(Some(e)),
        Some(Expr::Value(v)) => {
            matches!(&v.value, Value::Boolean(true)) || matches!(&v.value, Value::Number(n, _) if *n == "1")
        }
        Some(Expr::BinaryOp { left, op, right }) => {
            *op == sqlparser::ast::BinaryOperator::Eq && left.to_string() == right.to_string()
        }
        Some(_) => false,
    }
}

/// What one statement does.
fn statement(s: &Statement) -> Vec<Hit> {
    match s {
        Statement::Delete(d) if selects_all(d.selection.as_ref()) => vec![block(
            Category::MassDeletion,
            "delete_all_rows",
            "DELETE without a WHERE clause deletes every row; add a WHERE clause, or ask for approval",
        )],
        Statement::Update(u) if selects_all(u.selection.as_ref()) => vec![block(
            Category::MassDeletion,
            "update_all_rows",
            "UPDATE without a WHERE clause overwrites every row; add a WHERE clause, or ask for approval",
        )],
        Statement::Query(q) => query(q),
        // `COPY (DELETE … RETURNING …) TO STDOUT` runs its query; `TO/FROM PROGRAM` runs a
        // shell command on the database server.
        Statement::Copy { source, target, .. } => {
            let mut out = match source {
                CopySource::Query(q) => query(q),
                CopySource::Table { .. } => Vec::new(),
            };
            if matches!(target, CopyTarget::Program { .. }) {
                out.push(block(
                    Category::Unverifiable,
                    "client_shell",
                    "COPY … PROGRAM runs a shell command on the database server; ask for approval",
                ));
            }
            out
        }
        Statement::Prepare { statement: inner, .. } => statement(inner),
        Statement::Explain {
            analyze,
            options,
            statement: inner,
            ..
        } => {
            // EXPLAIN ANALYZE runs the statement it explains.
            let runs = *analyze
                || options
                    .iter()
                    .flatten()
                    .any(|o| o.name.value.eq_ignore_ascii_case("analyze"));
            if runs { statement(inner) } else { Vec::new() }
        }
        other => by_keyword(other),
    }
}

/// Data-changing statements inside a query: `WITH d AS (DELETE …) SELECT …`.
fn query(q: &Query) -> Vec<Hit> {
    let mut out: Vec<Hit> = q
        .with
        .iter()
        .flat_map(|w| w.cte_tables.iter())
        .flat_map(|cte| query(&cte.query))
        .collect();
    out.extend(set_expr(&q.body));
    out
}

fn set_expr(e: &SetExpr) -> Vec<Hit> {
    match e {
        SetExpr::Delete(s) | SetExpr::Update(s) | SetExpr::Insert(s) | SetExpr::Merge(s) => statement(s),
        SetExpr::Query(q) => query(q),
        SetExpr::SetOperation { left, right, .. } => {
            let mut out = set_expr(left);
            out.extend(set_expr(right));
            out
        }
        _ => Vec::new(),
    }
}

/// The statements told apart by their leading keywords, as sqlparser writes them back.
fn by_keyword(s: &Statement) -> Vec<Hit> {
    let text = s.to_string();
    let words: Vec<String> = text
        .split_whitespace()
        .take(12)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .to_ascii_uppercase()
        })
        .collect();
    by_words(&words.iter().map(String::as_str).collect::<Vec<_>>())
        .into_iter()
        .collect()
}

/// Objects whose creation or change is a schema change.
const SCHEMA_OBJECTS: &[&str] = &[
    "TABLE",
    "INDEX",
    "SCHEMA",
    "TYPE",
    "COLUMN",
    "VIEW",
    "DATABASE",
    "SEQUENCE",
    "EXTENSION",
    "TRIGGER",
    "FUNCTION",
    "PROCEDURE",
    "DOMAIN",
    "POLICY",
    "ROLE",
    "USER",
];

/// `TRUNCATE`, `DROP …`, and schema changes (`CREATE`/`ALTER`/`RENAME`/`COMMENT` of a
/// table, index, view, schema, type, ...; not a temporary table), from a statement's
/// words in upper case. Shared by the parser's path and the keyword scan.
pub(crate) fn by_words(words: &[&str]) -> Option<Hit> {
    let first = *words.first()?;
    match first {
        "TRUNCATE" => Some(block(
            Category::MassDeletion,
            "truncate",
            "TRUNCATE deletes every row; ask for approval",
        )),
        "DROP" => Some(block(
            Category::MassDeletion,
            "drop",
            format!(
                "DROP {} deletes it with its data; ask for approval",
                words.get(1).copied().unwrap_or_default()
            ),
        )),
        // `ALTER TABLE t DROP COLUMN c`: the column's data goes with it.
        "ALTER" if words.contains(&"DROP") => Some(block(
            Category::MassDeletion,
            "drop",
            format!(
                "ALTER {} … DROP deletes a column, constraint or partition with its data; ask for approval",
                words.get(1).copied().unwrap_or_default()
            ),
        )),
        // A new, empty database changes no schema that exists.
        "CREATE" if words.get(1) == Some(&"DATABASE") => None,
        "CREATE" | "ALTER" | "RENAME" | "COMMENT"
            if !words.iter().any(|w| matches!(*w, "TEMP" | "TEMPORARY"))
                && words.iter().any(|w| SCHEMA_OBJECTS.contains(w)) =>
        {
            Some(migrate_hit(format!(
                "{} {}",
                first,
                words.get(1).copied().unwrap_or_default()
            )))
        }
        _ => None,
    }
}

/// The SQL text with string literals, quoted identifiers and comments blanked out, so
/// keywords in data are not read as statements.
fn strip_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' | '`' => {
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                }
                out.push_str(" x ");
            }
            '-' if chars.peek() == Some(&'-') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
                out.push(' ');
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Destructive statements in SQL text by a scan of its keywords (literals and comments
/// blanked): unscoped `DELETE`/`UPDATE`, `TRUNCATE`, `DROP`, and schema changes. The
/// fallback of [`analyze`] for text the parser cannot read.
pub fn scan(text: &str) -> Vec<Hit> {
    let clean = strip_sql(text).to_ascii_uppercase();
    let mut hits = Vec::new();
    for stmt in clean.split(';') {
        let words: Vec<&str> = stmt
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '='))
            .filter(|w| !w.is_empty())
            .collect();
        let Some(first) = words.first() else { continue };
        let where_pos = words.iter().position(|w| *w == "WHERE");
        let trivial_where =
            where_pos.is_some_and(|p| matches!(words[p + 1..].concat().as_str(), "TRUE" | "1=1" | "1" | "X=X"));
        match *first {
            "DELETE" if where_pos.is_none() || trivial_where => hits.push(block(
                Category::MassDeletion,
                "delete_all_rows",
                "DELETE without a WHERE clause deletes every row; add a WHERE clause, or ask for approval",
            )),
            "UPDATE" if where_pos.is_none() || trivial_where => hits.push(block(
                Category::MassDeletion,
                "update_all_rows",
                "UPDATE without a WHERE clause overwrites every row; add a WHERE clause, or ask for approval",
            )),
            _ => hits.extend(by_words(&words)),
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(sql: &str, prog: &str) -> Vec<String> {
        analyze(sql, prog, false).into_iter().map(|h| h.operation).collect()
    }

    #[test]
    fn statements_are_judged_by_what_they_do() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("DELETE FROM users", "psql", &["delete_all_rows"]),
            ("delete from users where 1=1", "psql", &["delete_all_rows"]),
            ("DELETE FROM users WHERE (TRUE)", "psql", &["delete_all_rows"]),
            ("DELETE FROM users WHERE id = 1", "psql", &[]),
            ("DELETE FROM t WHERE id IN (SELECT id FROM u)", "psql", &[]),
            ("UPDATE users SET admin = true", "psql", &["update_all_rows"]),
            ("UPDATE users SET admin = true WHERE id = 7", "mysql", &[]),
            ("TRUNCATE users", "psql", &["truncate"]),
            ("DROP TABLE users", "psql", &["drop"]),
            ("drop database prod", "mysql", &["drop"]),
            (
                "WITH gone AS (DELETE FROM users RETURNING *) SELECT count(*) FROM gone",
                "psql",
                &["delete_all_rows"],
            ),
            ("EXPLAIN ANALYZE DELETE FROM users", "psql", &["delete_all_rows"]),
            ("EXPLAIN DELETE FROM users", "psql", &[]),
            ("BEGIN; DELETE FROM sessions; COMMIT", "psql", &["delete_all_rows"]),
            ("ALTER TABLE users ADD COLUMN age int", "psql", &["migrate"]),
            ("ALTER TABLE users DROP COLUMN email", "psql", &["drop"]),
            ("CREATE INDEX i ON t (c)", "psql", &["migrate"]),
            ("CREATE TEMPORARY TABLE scratch (x int)", "psql", &[]),
            ("SELECT 'DROP TABLE users' AS hint", "psql", &[]),
            ("SELECT $$DELETE FROM users$$", "psql", &[]),
            ("SELECT 1 -- DROP TABLE users", "psql", &[]),
            ("INSERT INTO log VALUES ('TRUNCATE')", "sqlite3", &[]),
            ("\\dt", "psql", &[]),
            ("\\d users\nSELECT 1", "psql", &[]),
            (".tables", "sqlite3", &[]),
            ("SELECT count(*) FROM users", "mysql", &[]),
            ("SELEC * FROM", "psql", &["unparseable_sql"]),
            ("PRAGMA table_info(users)", "sqlite3", &[]),
            (
                "COPY (DELETE FROM users RETURNING id) TO STDOUT",
                "psql",
                &["delete_all_rows"],
            ),
            ("COPY users TO PROGRAM 'rm -rf ~'", "psql", &["client_shell"]),
            (
                "PREPARE p AS DELETE FROM users; EXECUTE p",
                "psql",
                &["delete_all_rows"],
            ),
            ("\\! rm -rf ~", "psql", &["client_shell"]),
            ("\\o | sh\nSELECT 1", "psql", &["client_shell"]),
            ("\\x \\\\ DROP TABLE users;", "psql", &["drop"]),
            ("\\i drop_all.sql", "psql", &["dynamic_sql"]),
            (".shell rm -rf ~", "sqlite3", &["client_shell"]),
            (".tables\nSELECT 1", "sqlite3", &[]),
            ("SELECT '\n.'; DROP TABLE users; SELECT '\n'", "sqlite3", &["drop"]),
            ("SELECT * FROM users LIMIT 5\\G", "mysql", &[]),
            ("COPY t FROM STDIN;\n\\.\nDROP TABLE users;", "psql", &["drop"]),
            (
                "PRAGMA table_info(users); DELETE FROM users",
                "sqlite3",
                &["delete_all_rows"],
            ),
            ("PRAGMA journal_mode = WAL; SELEC", "sqlite3", &["unparseable_sql"]),
        ];
        for (sql, prog, want) in cases {
            assert_eq!(ops(sql, prog), *want, "{prog}: {sql}");
        }
        // A fragment that does not parse is scanned: only what is plainly destructive.
        let frag = |s: &str| {
            analyze(s, "psql", true)
                .into_iter()
                .map(|h| h.operation)
                .collect::<Vec<_>>()
        };
        assert_eq!(frag("  DROP TABLE users;\n  (SELEC"), ["drop"]);
        assert!(frag("WHERE id = 1);").is_empty());
    }
}
