//! What is generated from coord's one grammar (`args::Cli`): shell completions and the
//! man page, so that neither can fall behind a command or a flag.

use crate::args::Cli;
use crate::output;
use clap::CommandFactory as _;

/// Said under each command's help instead of the options every command takes.
const GLOBAL_OPTIONS: &str = "Options every command takes (--json, --db, --agent-id, …): `coord help options`";

/// The grammar as a person reads it: the options every command takes are listed once —
/// in `coord --help` and `coord help options` — not again under every command (each
/// still accepts them, before or after its name).
pub fn command() -> clap::Command {
    let options =
        clap::Command::new("options").about("The options every command takes, before or after the command's name");
    let cmd = Cli::command().subcommand(options);
    let globals: Vec<clap::Arg> = cmd.get_arguments().filter(|a| a.is_global_set()).cloned().collect();
    hide_globals(cmd, &globals)
}

/// Each command under `cmd` given its own hidden copy of every global option: clap then
/// propagates nothing there (a command's own definition wins), parses the same, and
/// reports the value where a global option's is read.
fn hide_globals(mut cmd: clap::Command, globals: &[clap::Arg]) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|n| n != "options")
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, |mut sub| {
            for g in globals {
                if sub.get_arguments().all(|a| a.get_id() != g.get_id()) {
                    sub = sub.arg(g.clone().hide(true));
                }
            }
            hide_globals(sub.after_help(GLOBAL_OPTIONS), globals)
        });
    }
    cmd
}

/// `coord completions SHELL`: the completion script, on stdout.
pub fn completions(shell: clap_complete::Shell) -> u8 {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "coord", &mut std::io::stdout());
    output::EXIT_OK
}

/// `coord man`: the man page (roff) of `coord` and, after it, of every subcommand.
pub fn man_page() -> u8 {
    let mut out = std::io::stdout().lock();
    match render(&mut out) {
        Ok(()) => output::EXIT_OK,
        Err(e) => {
            eprintln!("coord man: {e}");
            output::EXIT_UNAVAILABLE
        }
    }
}

fn render(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let cmd = Cli::command();
    clap_mangen::Man::new(cmd.clone()).render(out)?;
    pages(&cmd, "coord", out)
}

/// Each command's own page, nested ones too (`coord-lock-acquire`): what `coord help
/// COMMAND` says, as a man page reader finds it (one file for all: coord is one program).
fn pages(cmd: &clap::Command, prefix: &str, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{prefix}-{}", sub.get_name());
        // clap takes a command's name as a static string; a page's name lives as long as
        // this short process.
        let named: &'static str = Box::leak(name.clone().into_boxed_str());
        clap_mangen::Man::new(sub.clone().name(named)).render(out)?;
        pages(sub, &name, out)?;
    }
    Ok(())
}
