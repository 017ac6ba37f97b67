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

/// Whether `value` is literal text a shell passes as it is written: only characters
/// that expand to nothing else. A value with `$`, a backtick, parentheses, braces,
/// redirections, globs or separators may be code (`API_TOKEN=$(rm -rf ~)`): it is shown
/// as written, never masked, so a person approving a command sees everything it runs.
fn literal(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/+=@%,^#".contains(c) || !c.is_ascii())
}

/// The whitespace-separated words of `text` with their byte ranges.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// What one word becomes, given whether the word before asked for its value to go.
/// Answers the replacement (`None`: as written) and whether the next word's value goes.
fn mask_word(word: &str, mask_next: bool, database_client: bool) -> (Option<String>, bool) {
    let (open, inner, close) = split_quotes(word);
    let masked = |text: String| Some(format!("{open}{text}{close}"));
    if mask_next {
        // `Authorization: Bearer x`: the scheme stays, its value goes.
        if matches!(inner.to_ascii_lowercase().as_str(), "bearer" | "basic" | "token") {
            return (None, true);
        }
        return (literal(inner).then(|| masked(MASK.to_string())).flatten(), false);
    }
    if let Some(m) = mask_userinfo(inner) {
        return (masked(m), false);
    }
    let lower = inner.to_ascii_lowercase();
    let header = "authorization:";
    if lower.starts_with(header) && inner.len() > header.len() {
        let value = &inner[header.len()..];
        return (
            literal(value)
                .then(|| masked(format!("{}{MASK}", &inner[..header.len()])))
                .flatten(),
            false,
        );
    }
    if matches!(lower.as_str(), "bearer" | "basic" | "token") || lower.ends_with(header) {
        return (None, true);
    }
    if let Some((name, value)) = inner.split_once('=')
        && secret_name(name.trim_start_matches('-'))
    {
        return (
            literal(value).then(|| masked(format!("{name}={MASK}"))).flatten(),
            false,
        );
    }
    if inner.starts_with("--") && secret_name(inner) {
        return (None, true);
    }
    if database_client && inner.len() > 2 && inner.starts_with("-p") && literal(&inner[2..]) {
        return (masked(format!("-p{MASK}")), false);
    }
    (None, false)
}

/// The command line with literal credentials masked and everything else exactly as
/// written (spacing, newlines, quotes): URL passwords, `Bearer`/`Basic` values,
/// `Authorization:` headers, `NAME=value` assignments and `--name value` /
/// `--name=value` options whose name says secret, `-p<password>` of database clients.
/// Only a literal value is masked ([`literal`]): anything a shell would expand or run
/// stays visible.
pub fn mask_secrets(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut last = 0;
    let (mut mask_next, mut database_client) = (false, false);
    for (start, end) in words(command) {
        let word = &command[start..end];
        out.push_str(&command[last..start]);
        let (_, inner, _) = split_quotes(word);
        if matches!(inner, "mysql" | "mysqldump" | "mariadb") {
            database_client = true;
        }
        let (replaced, next) = mask_word(word, mask_next, database_client);
        mask_next = next;
        out.push_str(replaced.as_deref().unwrap_or(word));
        last = end;
    }
    out.push_str(&command[last..]);
    out
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
            // Exactly as written: what is approved is what runs.
            ("  spaced   out  ", "  spaced   out  "),
            ("a\n\tTOKEN=x b", "a\n\tTOKEN=*** b"),
            // Code is never masked: a value a shell expands or runs stays visible.
            (
                "git push --force origin feature && API_TOKEN=$(rm${IFS}-rf${IFS}$HOME) true",
                "git push --force origin feature && API_TOKEN=$(rm${IFS}-rf${IFS}$HOME) true",
            ),
            ("TOKEN=`id` make", "TOKEN=`id` make"),
            ("SECRET=${X:-$(curl evil)} make", "SECRET=${X:-$(curl evil)} make"),
            ("deploy --token $(cat /etc/shadow)", "deploy --token $(cat /etc/shadow)"),
            ("deploy --password=a;rm -rf /", "deploy --password=a;rm -rf /"),
            (
                "curl -H 'Authorization: Bearer $(id)' x",
                "curl -H 'Authorization: Bearer $(id)' x",
            ),
            ("mysql -p$(id) db", "mysql -p$(id) db"),
            ("TOKEN=ghp_abc/def+1== make", "TOKEN=*** make"),
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
