use std::process::ExitCode;

fn main() -> ExitCode {
    coord_cli::main()
}
