//! Masking the credentials a command line may carry before a person's screen shows it
//! (the dashboard's approvals and blocked commands). It is a display rule, not a
//! guarantee: what it does not recognise stays as written, so the stored rows keep the
//! command as the guardrails judged it, and a screen shows it masked.

/// The mask that replaces a secret.
pub const MASK: &str = "***";

/// Names whose value is a secret, in an assignment (`GITHUB_TOKEN=…`) or an option
/// (`--password …`), compared case-insensitively as substrings.
const SECRET_NAMES: [&str; 9] = [
    "token",
    "secret",
    "password",
    "passwd",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "private_key",
];

fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_NAMES.iter().any(|s| lower.contains(s))
}

/// Quotes around a word, kept around its mask.
fn split_quotes(word: &str) -> (&str, &str, &str) {
    let start = word.len() - word.trim_start_matches(['\'', '"']).len();
    let inner = &word[start..];
    let end = inner.trim_end_matches(['\'', '"']).len();
    (&word[..start], &inner[..end], &inner[end..])
}

/// `scheme://user:password@host` → `scheme://***@host` (any userinfo with a password).
fn mask_userinfo(word: &str) -> Option<String> {
    let (scheme, rest) = word.split_once("://")?;
    let at = rest.find('@')?;
    let userinfo = &rest[..at];
    if userinfo.contains('/') || !userinfo.contains(':') {
        return None;
    }
    Some(format!("{scheme}://{MASK}{}", &rest[at..]))
}

/// The command line with credentials masked: URL passwords, `Bearer`/`Basic` values,
/// `Authorization:` headers, `NAME=value` assignments and `--name value` /
/// `--name=value` options whose name says secret, `-p<password>` of database clients.
/// Words are rejoined with single spaces.
pub fn mask_secrets(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut mask_next = false;
    let mut database_client = false;
    for word in words {
        let (open, inner, close) = split_quotes(word);
        if mask_next {
            // `Authorization: Bearer x`: the scheme stays, its value goes.
            if matches!(inner.to_ascii_lowercase().as_str(), "bearer" | "basic" | "token") {
                out.push(word.to_string());
                continue;
            }
            mask_next = false;
            out.push(format!("{open}{MASK}{close}"));
            continue;
        }
        if let Some(masked) = mask_userinfo(inner) {
            out.push(format!("{open}{masked}{close}"));
            continue;
        }
        let lower = inner.to_ascii_lowercase();
        if lower.starts_with("authorization:") && inner.len() > "authorization:".len() {
            out.push(format!("{open}{}{MASK}{close}", &inner[.."authorization:".len()]));
            continue;
        }
        if matches!(lower.as_str(), "bearer" | "basic" | "token") || lower.ends_with("authorization:") {
            // `Authorization: Bearer x` masks `x` after `Bearer`; `Authorization: x` masks `x`.
            mask_next = true;
            out.push(word.to_string());
            continue;
        }
        if let Some((name, value)) = inner.split_once('=')
            && !value.is_empty()
            && secret_name(name.trim_start_matches('-'))
        {
            out.push(format!("{open}{name}={MASK}{close}"));
            continue;
        }
        if inner.starts_with("--") && secret_name(inner) {
            mask_next = true;
            out.push(word.to_string());
            continue;
        }
        if matches!(inner, "mysql" | "mysqldump" | "mariadb") {
            database_client = true;
        }
        if database_client && inner.len() > 2 && inner.starts_with("-p") {
            out.push(format!("{open}-p{MASK}{close}"));
            continue;
        }
        out.push(word.to_string());
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_what_looks_like_a_credential() {
        let cases = [
            ("git push --force origin main", "git push --force origin main"),
            (
                "git push https://bob:ghp_abc123@github.com/o/r.git main",
                "git push https://***@github.com/o/r.git main",
            ),
            (
                "git clone https://github.com/o/r.git",
                "git clone https://github.com/o/r.git",
            ),
            (
                "git clone https://bob@github.com/o/r",
                "git clone https://bob@github.com/o/r",
            ),
            (
                "curl -H 'Authorization: Bearer eyJhbGciOi' https://api",
                "curl -H 'Authorization: Bearer ***' https://api",
            ),
            (
                "curl -H \"Authorization: token abc\" x",
                "curl -H \"Authorization: token ***\" x",
            ),
            ("curl -H Authorization:abc x", "curl -H Authorization:*** x"),
            (
                "PGPASSWORD=hunter2 psql -c 'drop table t'",
                "PGPASSWORD=*** psql -c 'drop table t'",
            ),
            ("GITHUB_TOKEN=ghp_x gh pr merge", "GITHUB_TOKEN=*** gh pr merge"),
            ("export AWS_SECRET_ACCESS_KEY=abc", "export AWS_SECRET_ACCESS_KEY=***"),
            ("deploy --api-key k1 --env prod", "deploy --api-key *** --env prod"),
            ("deploy --token=abc", "deploy --token=***"),
            (
                "mysql -uroot -phunter2 -e 'DROP DATABASE x'",
                "mysql -uroot -p*** -e 'DROP DATABASE x'",
            ),
            ("rm -rf -p src", "rm -rf -p src"),
            ("TOKEN= make", "TOKEN= make"),
            ("", ""),
            ("  spaced   out  ", "spaced out"),
        ];
        for (command, want) in cases {
            assert_eq!(mask_secrets(command), want, "{command}");
        }
    }

    #[test]
    fn quotes_stay_around_masks() {
        assert_eq!(split_quotes("'abc'"), ("'", "abc", "'"));
        assert_eq!(split_quotes("abc"), ("", "abc", ""));
        assert_eq!(split_quotes("\"'"), ("\"'", "", ""));
        assert_eq!(mask_secrets("echo 'PASSWORD=x'"), "echo 'PASSWORD=***'");
    }
}
