//! What is generated from coord's one grammar (`args::Cli`): shell completions and the
//! man page, so that neither can fall behind a command or a flag. (The grammar as a
//! person reads it, its global options listed once, is `args::command`.)

use crate::args::Cli;
use crate::output;
use clap::CommandFactory as _;

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
