//! `souz config check|path|template`. Its messages are in the system locale's language
//! ([`crate::texts`]: no daemon is asked); paths, the template and the problems stay as they are.

use crate::output::say;
use crate::texts::{fill, tr};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use souz_core::config::{Config, ConfigError, SouzPaths, process_lookup};

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file (default: the one in the Souz home) and print every problem as
    /// FILE:LINE:COL: message. Exit code 2 when there are problems.
    Check {
        /// The file to check instead of <SOUZ_HOME>/config.toml.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Print the path of config.toml.
    Path,
    /// Print the default config.toml (every key commented out at its default).
    Template,
}

pub fn run(command: ConfigCommand) -> ExitCode {
    let paths = match SouzPaths::resolve(&process_lookup) {
        Ok(paths) => paths,
        Err(message) => return crate::fail(&message),
    };
    match command {
        ConfigCommand::Path => {
            say!("{}", paths.config_file().display());
            ExitCode::SUCCESS
        }
        ConfigCommand::Template => {
            // The template ends with a newline; `say!` adds it back.
            say!("{}", Config::template().trim_end_matches('\n'));
            ExitCode::SUCCESS
        }
        ConfigCommand::Check { file } => {
            let file = file.unwrap_or_else(|| paths.config_file());
            if !file.exists() {
                say!(
                    "{}",
                    fill(
                        tr(
                            "{file} does not exist yet; `souz serve` will create it with the \
                             defaults",
                            "{file} ещё нет; `souz serve` создаст его с настройками по умолчанию"
                        ),
                        &[("file", &file.display())]
                    )
                );
                return ExitCode::SUCCESS;
            }
            match Config::load_file(paths, &file, &process_lookup) {
                Ok(_) => {
                    say!("{}: {}", file.display(), tr("OK", "ошибок нет"));
                    ExitCode::SUCCESS
                }
                Err(error @ ConfigError::Problems(_)) => crate::config_problems(&error),
                Err(other) => crate::fail(&other.to_string()),
            }
        }
    }
}
