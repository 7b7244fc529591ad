//! The `tidings` binary: parse the command line and dispatch; the work is in the library.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = tidings::cli::Cli::parse();
    match tidings::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tidings: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
