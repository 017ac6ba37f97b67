//! The short section `coord init` writes where agents read their project's instructions:
//! `CLAUDE.md` (Claude Code) and `AGENTS.md` (Codex, and the other agents that read it).
//! It sits between two markers, so that a later `coord init` updates it in place and
//! everything else in the file stays as the user wrote it. Every agent pays for it in
//! tokens on every session: it is kept under 1,500 characters (a test holds it there).

use crate::config_file::{Change, read_optional};
use coord_domain::CoordResult;
use std::path::Path;

const BEGIN: &str = "<!-- coord: begin (written by `coord init`; edit outside these markers) -->";
const END: &str = "<!-- coord: end -->";

/// The longest the section may be, markers included.
#[cfg(test)]
const MAX_CHARS: usize = 1500;

/// What an agent needs to know to work beside others through coord: the MCP tools by
/// name, what a refusal means, and that approvals are a person's.
const SECTION: &str = "\
## Working beside other agents (coord)

Other agents work in this repository too; coord (its MCP tools, or `coord` in the shell) keeps you apart.
- Before editing a file, `check_edit` it. To keep files while you work, `acquire_lock` them; `release_lock` when done. A file another agent holds is theirs: work on something else, or `send_message` them.
- Take work with `get_work` and end it with `complete_work` (success or not); never leave a task claimed.
- Read your `inbox` when you start and when told of messages; `ack_message` what you handled.
- Before you stop, `write_handoff` (done, in progress, next); `read_handoff` picks up where the last session stopped.
- `recall` before a task like an earlier one; `remember` what the next agent should know.
- A refusal (a blocked edit or command, `file_locked`, `destructive_operation_blocked`, `operation_not_permitted`) is coord's decision, not a glitch: do not work around it or act under another identity. When it asks for an approval, a person decides; you cannot approve your own request.
";

/// The section with its markers.
pub fn block() -> String {
    format!("{BEGIN}\n{SECTION}{END}\n")
}

/// `text` with the section in it: replacing the one between the markers, or appended
/// after a blank line.
fn with_block(text: Option<&str>) -> String {
    let text = text.unwrap_or("");
    if let Some((before, rest)) = text.split_once(BEGIN)
        && let Some((_, after)) = rest.split_once(END)
    {
        let after = after.strip_prefix('\n').unwrap_or(after);
        return format!("{before}{}{after}", block());
    }
    match text.trim_end() {
        "" => block(),
        kept => format!("{kept}\n\n{}", block()),
    }
}

/// The change that puts the section into `file` (`CLAUDE.md` or `AGENTS.md` at the
/// repository's root).
pub fn change(repo_root: &Path, file: &str) -> CoordResult<Change> {
    let path = repo_root.join(file);
    let before = read_optional(&path)?;
    let after = with_block(before.as_deref());
    Ok(Change {
        path,
        before,
        after,
        executable: false,
        delete: false,
    })
}

/// `text` without the section (and the blank line `coord init` put before it); `None`
/// when nothing else is left. Text without the section is returned as it is.
fn without_block(text: &str) -> Option<String> {
    let Some((before, rest)) = text.split_once(BEGIN) else {
        return Some(text.to_string());
    };
    let Some((_, after)) = rest.split_once(END) else {
        return Some(text.to_string());
    };
    let (before, after) = (before.trim_end_matches('\n'), after.trim_start_matches('\n'));
    match (before.trim().is_empty(), after.trim().is_empty()) {
        (true, true) => None,
        (true, false) => Some(after.to_string()),
        (false, true) => Some(format!("{before}\n")),
        (false, false) => Some(format!("{before}\n\n{after}")),
    }
}

/// The change that takes the section out of `file` again (`coord init … --remove`):
/// `None` when the file does not exist.
pub fn removal(repo_root: &Path, file: &str) -> CoordResult<Option<Change>> {
    let path = repo_root.join(file);
    let before = read_optional(&path)?;
    Ok(before.map(|text| {
        let after = without_block(&text);
        Change::removal(path, Some(text), after)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_short_and_names_only_real_tools() {
        assert!(
            block().chars().count() <= MAX_CHARS,
            "{} characters",
            block().chars().count()
        );
        for tool in [
            "check_edit",
            "acquire_lock",
            "release_lock",
            "send_message",
            "get_work",
            "complete_work",
            "inbox",
            "ack_message",
            "write_handoff",
            "read_handoff",
            "recall",
            "remember",
        ] {
            assert!(
                coord_mcp::toolsets::TOOLSETS[0].tools.contains(&tool),
                "{tool} is a core tool"
            );
        }
        for code in [
            "file_locked",
            "destructive_operation_blocked",
            "operation_not_permitted",
        ] {
            assert!(
                coord_domain::ErrorCode::parse(code).is_some(),
                "{code} is an error code"
            );
        }
    }

    /// The Claude Code plugin cannot write CLAUDE.md: its skill carries the same section.
    #[test]
    fn the_plugins_skill_is_the_section() {
        let skill = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/coord/skills/coord/SKILL.md");
        let text = std::fs::read_to_string(&skill).unwrap();
        let body = text
            .strip_prefix("---\n")
            .and_then(|t| t.split_once("\n---\n\n"))
            .map(|(_, body)| body)
            .expect("SKILL.md: front matter, then a blank line");
        assert_eq!(
            body,
            SECTION,
            "{} differs from the section coord init writes",
            skill.display()
        );
    }

    #[test]
    fn the_section_is_added_once_and_updated_in_place() {
        let old = format!("{BEGIN}\nan older section\n{END}\n");
        let cases: &[(Option<&str>, String)] = &[
            (None, block()),
            (Some(""), block()),
            (
                Some("# Project\n\nBuild with make.\n"),
                format!("# Project\n\nBuild with make.\n\n{}", block()),
            ),
            (Some("# Project\n"), format!("# Project\n\n{}", block())),
            (
                Some(&format!("# P\n\n{old}\nMore.\n")),
                format!("# P\n\n{}\nMore.\n", block()),
            ),
            (Some(&old), block()),
        ];
        for (before, want) in cases {
            let after = with_block(*before);
            assert_eq!(&after, want, "from {before:?}");
            assert_eq!(with_block(Some(&after)), after, "idempotent");
            assert_eq!(after.matches(BEGIN).count(), 1);
        }
        for (before, _) in cases.iter().filter(|(b, _)| b.is_some_and(|b| !b.contains(BEGIN))) {
            let before = before.unwrap();
            let after = without_block(&with_block(Some(before)));
            let want = (!before.trim().is_empty()).then(|| before.to_string());
            assert_eq!(after, want, "removed again from {before:?}");
        }
        assert_eq!(
            without_block(&format!("# P\n\n{}\nMore.\n", block())).as_deref(),
            Some("# P\n\nMore.\n")
        );
        assert_eq!(without_block("no section\n").as_deref(), Some("no section\n"));
        // A begin marker without its end is the user's text: left alone.
        let broken = format!("{BEGIN}\nhalf\n");
        assert_eq!(
            with_block(Some(&broken)),
            format!("{}\n\n{}", broken.trim_end(), block())
        );
    }
}
