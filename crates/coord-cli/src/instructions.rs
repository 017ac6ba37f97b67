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
    })
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
        // A begin marker without its end is the user's text: left alone.
        let broken = format!("{BEGIN}\nhalf\n");
        assert_eq!(
            with_block(Some(&broken)),
            format!("{}\n\n{}", broken.trim_end(), block())
        );
    }
}
