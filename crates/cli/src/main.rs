//! `souz`: the daemon (`souz serve`) and the command-line tools around it.
//!
//! Exit codes: 0 success, 1 failure, 2 invalid configuration or usage.

mod acp;
mod acp_config;
mod approvals_command;
mod chat_command;
mod client;
mod clients_command;
mod config_command;
#[cfg(feature = "conformance")]
mod conformance;
mod history_command;
mod keys_command;
mod listen_command;
mod login_command;
mod mcp_config;
mod mcp_servers_command;
mod mcp_stdio;
mod memory_command;
mod models_command;
mod output;
mod questions_command;
mod schedules_command;
mod serve;
mod skills_command;
mod status_command;
mod telegram_command;
mod texts;
mod tools_command;
mod ui_command;

// The conformance fixtures answer test tools without the approval gate: they must never reach
// a build people run.
#[cfg(all(feature = "conformance", not(debug_assertions)))]
compile_error!("the `conformance` feature is for tests only and cannot be built in release mode");

use crate::output::say;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use souz_core::config::{SouzPaths, process_lookup};
use souz_core::sandbox::confinement;
use souz_core::token::ApiToken;

/// Souz: a local AI assistant that asks before anything sensitive happens.
#[derive(Debug, Parser)]
#[command(name = "souz", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the daemon: gateway API, WebSockets and MCP on [server] host:port.
    Serve,
    /// Print the bearer token clients must send (creating it on first use).
    Token,
    /// Check or locate config.toml.
    Config {
        #[command(subcommand)]
        command: config_command::ConfigCommand,
    },
    /// List the tools or call one through the approval gate.
    Tools {
        #[command(subcommand)]
        command: tools_command::ToolsCommand,
    },
    /// Pending approvals: list, show, approve, deny (default: list pending).
    Approvals {
        #[command(subcommand)]
        command: Option<approvals_command::ApprovalsCommand>,
    },
    /// Questions Souz's agents wait on: list, show, answer (default: list).
    Questions {
        #[command(subcommand)]
        command: Option<questions_command::QuestionsCommand>,
    },
    /// Provider API keys: list (hints only), set (the key from standard input), rm, test (default:
    /// list).
    Keys {
        #[command(subcommand)]
        command: Option<keys_command::KeysCommand>,
    },
    /// Sign in to a provider's account with a one-time code (codex: OpenAI's Codex models
    /// through your ChatGPT account, no API key). Prints the page and the code, waits until
    /// you entered it.
    Login {
        /// The provider: codex.
        provider: String,
    },
    /// Sign out of a provider's account: Souz forgets its tokens.
    Logout {
        /// The provider: codex.
        provider: String,
    },
    /// The Agent Client Protocol over stdio, for editors such as Zed: sessions are Souz chats,
    /// approvals become the editor's permission requests. Forwards to the running daemon with
    /// the client token `souz acp-config` left in the Souz home (clients/<name>.token), which
    /// reaches only the chats it makes and their approvals. stdout carries protocol only.
    Acp {
        /// Which client token to use.
        #[arg(long, default_value = acp_config::ACP_CLIENT)]
        client: String,
    },
    /// Make the client token `souz acp` uses (it reaches only the chats it makes and their
    /// approvals) and print the editor's configuration (Zed's `agent_servers` entry). Replaces
    /// that client's old token.
    AcpConfig {
        /// The client's name.
        #[arg(long, default_value = acp_config::ACP_CLIENT)]
        client: String,
    },
    /// MCP server over stdio for clients such as Claude Desktop: forwards to the running
    /// daemon's /mcp with the client token `souz mcp-config claude-desktop` left in the Souz
    /// home (clients/<name>.token). stdout carries protocol only.
    McpStdio {
        /// Which client token to use.
        #[arg(long, default_value = mcp_config::DESKTOP_CLIENT)]
        client: String,
    },
    /// Make a client token and print how to connect an MCP client with it: `claude-code`
    /// (a `claude mcp add-json` command) or `claude-desktop` (the claude_desktop_config.json
    /// block). Neither holds the token: it goes to the Souz home, where the bridge and
    /// `souz mcp-headers` read it. Replaces that client's old token.
    McpConfig {
        /// Which client.
        #[arg(value_enum)]
        client: mcp_config::McpClient,
    },
    /// Claude Code's `headersHelper`: print `{"Authorization": "Bearer …"}` with the
    /// `claude-code` token from the Souz home (written by Connect or `souz mcp-config`).
    McpHeaders,
    /// (Tests only) The MCP conformance suite's client under test: connect to URL as Souz's
    /// MCP client does, signing in with OAuth when asked, and call each tool once.
    #[cfg(feature = "conformance")]
    #[command(hide = true)]
    ConformanceClient {
        /// The server's URL (the suite appends it).
        url: String,
    },
    /// External MCP servers Souz connects to: `souz mcp servers` list, test, add, rm, enable,
    /// disable; `souz mcp import FILE`; `souz mcp token set|rm NAME`; `souz mcp login NAME`.
    Mcp {
        #[command(subcommand)]
        command: mcp_servers_command::McpCommand,
    },
    /// MCP client tokens: list, add, revoke (default: list).
    Clients {
        #[command(subcommand)]
        command: Option<clients_command::ClientsCommand>,
    },
    /// Long-term memory: list, search, add, forget, show (default: list).
    Memory {
        #[command(subcommand)]
        command: Option<memory_command::MemoryCommand>,
    },
    /// Scheduled runs: list, preview, add, show, run, pause, resume, rm, history (default:
    /// list).
    Schedules {
        #[command(subcommand)]
        command: Option<schedules_command::SchedulesCommand>,
    },
    /// The changes Souz's file tools made, newest first (`--client`, `--turn`, `--limit`).
    History(history_command::HistoryArgs),
    /// Chat with Souz's agent in the terminal: the answer streams, approvals and questions
    /// are asked inline, lines typed while it works are sent after; /help inside.
    Chat(chat_command::ChatArgs),
    /// Undo file changes: `souz undo CALL_ID | --turn ID | --since 10m [--client NAME]
    /// | --change N [--force]`. A file changed since Souz wrote it stops the undo (exit code
    /// 3, with the three versions shown) unless --force.
    Undo(history_command::UndoArgs),
    /// The Telegram channel: status, link (a one-time code for the bot), unlink (default:
    /// status).
    Telegram {
        #[command(subcommand)]
        command: Option<telegram_command::TelegramCommand>,
    },
    /// Transcribe a recording (WAV, OGG/Opus, WebM/Opus; `-` for standard input) with the
    /// speech engine and print the text (`--language ru|en`, `--engine`, `--verbose`).
    Listen(listen_command::ListenArgs),
    /// In-process models (local LLM profiles, speech models): list, pull, rm (default: list).
    Models {
        #[command(subcommand)]
        command: Option<models_command::ModelsCommand>,
    },
    /// File-backed skills: list, show, install, validate, enable, disable, remove (default:
    /// list).
    Skills {
        #[command(subcommand)]
        command: Option<skills_command::SkillsCommand>,
    },
    /// Print the address of the web UI (with the token in its fragment); `--open` opens it
    /// signed in through an owner-only redirect page holding a one-time code, so neither the
    /// token nor the code is in any process argument.
    Ui {
        /// Open it in the default browser.
        #[arg(long)]
        open: bool,
    },
    /// Whether Souz runs (and where), is paused, or is in recovery mode with config.toml's
    /// problems (exit code 2 then).
    Status,
    /// Pause Souz: deny approval requests and stop agent turns until `souz resume`.
    Pause,
    /// Resume Souz after `souz pause`.
    Resume,
    /// Standing grants made by scoped approvals: list, revoke (default: list).
    Grants {
        #[command(subcommand)]
        command: Option<approvals_command::GrantsCommand>,
    },
}

fn main() -> ExitCode {
    // The sandbox helper runs before anything else (no argument parser, no threads): it must
    // confine a single-threaded process and then become the command.
    let mut arguments = std::env::args_os().skip(1);
    if arguments
        .next()
        .is_some_and(|first| first == confinement::HELPER_SUBCOMMAND)
    {
        return sandbox_exec(arguments.collect());
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Serve => serve::run(),
        Command::Token => print_token(),
        Command::Config { command } => config_command::run(command),
        Command::Acp { client } => client_command(acp::run(client)),
        Command::AcpConfig { client } => client_command(acp_config::run(client)),
        Command::McpStdio { client } => mcp_stdio::run(client),
        Command::McpConfig { client } => client_command(mcp_config::run(client)),
        Command::McpHeaders => client_command(async { mcp_config::headers() }),
        Command::Mcp { command } => client_command(mcp_servers_command::run(command)),
        #[cfg(feature = "conformance")]
        Command::ConformanceClient { url } => client_command(async move {
            let home = std::env::temp_dir().join(format!(
                "souz-conformance-client-{}-{}",
                std::process::id(),
                uuid_like()
            ));
            std::fs::create_dir_all(&home)?;
            let outcome =
                souz_core::mcp::run_conformance_client(&url, &home, conformance_context()).await;
            let _ = std::fs::remove_dir_all(&home);
            outcome.map_err(anyhow::Error::msg)?;
            Ok(ExitCode::SUCCESS)
        }),
        Command::Clients { command } => client_command(async {
            clients_command::run(command)
                .await
                .map(|()| ExitCode::SUCCESS)
        }),
        Command::Memory { command } => client_command(memory_command::run(command)),
        Command::Listen(args) => client_command(listen_command::run(args)),
        Command::Models { command } => client_command(models_command::run(command)),
        Command::Schedules { command } => client_command(schedules_command::run(command)),
        Command::Skills { command } => client_command(skills_command::run(command)),
        Command::Tools { command } => client_command(tools_command::run(command)),
        Command::Approvals { command } => client_command(async {
            approvals_command::run_approvals(command)
                .await
                .map(|()| ExitCode::SUCCESS)
        }),
        Command::Questions { command } => client_command(async {
            questions_command::run(command)
                .await
                .map(|()| ExitCode::SUCCESS)
        }),
        Command::Keys { command } => client_command(keys_command::run(command)),
        Command::Login { provider } => {
            client_command(async move { login_command::login(&provider).await })
        }
        Command::Logout { provider } => {
            client_command(async move { login_command::logout(&provider).await })
        }
        Command::History(args) => client_command(async {
            history_command::history(args)
                .await
                .map(|()| ExitCode::SUCCESS)
        }),
        Command::Undo(args) => client_command(history_command::undo(args)),
        Command::Chat(args) => client_command(chat_command::run(args)),
        Command::Telegram { command } => client_command(async {
            telegram_command::run(command)
                .await
                .map(|()| ExitCode::SUCCESS)
        }),
        Command::Ui { open } => client_command(ui_command::run(open)),
        Command::Status => client_command(status_command::run()),
        Command::Pause => client_command(set_paused(true)),
        Command::Resume => client_command(set_paused(false)),
        Command::Grants { command } => client_command(async {
            approvals_command::run_grants(command)
                .await
                .map(|()| ExitCode::SUCCESS)
        }),
    }
}

/// `souz pause` / `souz resume`.
async fn set_paused(paused: bool) -> anyhow::Result<ExitCode> {
    let client = texts::connect().await?;
    let state = client.set_paused(paused, "cli").await?;
    say!(
        "{}",
        if state.paused {
            texts::tr(
                "Souz is paused: approval requests are denied and agents wait until `souz resume`.",
                "Souz на паузе: запросы одобрения отклоняются, агенты ждут до `souz resume`.",
            )
        } else {
            texts::tr("Souz is running.", "Souz работает.")
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs a client command on a small runtime; errors print as `souz: ...` with exit code 1.
fn client_command(
    command: impl std::future::Future<Output = anyhow::Result<ExitCode>>,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            return fail(&texts::fill(
                texts::tr(
                    "cannot start the async runtime: {error}",
                    "не удалось запустить асинхронную среду: {error}",
                ),
                &[("error", &error)],
            ));
        }
    };
    match runtime.block_on(command) {
        Ok(code) => code,
        Err(error) => fail(&runtime.block_on(texts::error_text(&error))),
    }
}

fn print_token() -> ExitCode {
    let paths = match SouzPaths::resolve(&process_lookup) {
        Ok(paths) => paths,
        Err(message) => return fail(&message),
    };
    if let Err(error) = paths.ensure_home() {
        return fail(&texts::fill(
            texts::tr(
                "cannot create {home}: {error}",
                "не удалось создать {home}: {error}",
            ),
            &[("home", &paths.home().display()), ("error", &error)],
        ));
    }
    match ApiToken::load_or_create(&paths.token()) {
        Ok(token) => {
            {
                say!("{}", token.expose());
            }
            ExitCode::SUCCESS
        }
        Err(error) => fail(&error.to_string()),
    }
}

/// `souz __sandbox-exec [--allow-write PATH]... -- PROGRAM [ARGS]...`: confines this process
/// (Landlock) and replaces it with the command. Returns only when that failed.
fn sandbox_exec(arguments: Vec<std::ffi::OsString>) -> ExitCode {
    let error = match confinement::HelperArguments::parse(arguments) {
        Ok(arguments) => confinement::run_helper(arguments),
        Err(error) => error,
    };
    eprintln!("souz: {error}");
    ExitCode::from(confinement::HELPER_FAILURE_EXIT_CODE)
}

/// Prints `souz: <message>` to stderr and returns exit code 1.
fn fail(message: &str) -> ExitCode {
    // Errors quote names and arguments the daemon or a config file gave us.
    eprintln!("souz: {}", souz_protocol::display::display_text(message));
    ExitCode::FAILURE
}

/// Prints every configuration problem and returns exit code 2.
fn config_problems(error: &souz_core::config::ConfigError) -> ExitCode {
    eprintln!("{error}");
    ExitCode::from(2)
}

/// A name part no other run picks at the same time (the clock's nanoseconds).
#[cfg(feature = "conformance")]
fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

/// The pre-registered client the conformance suite passes in `MCP_CONFORMANCE_CONTEXT`.
#[cfg(feature = "conformance")]
fn conformance_context() -> Option<(String, Option<String>)> {
    let context = souz_core::config::env::read(souz_core::config::env::Var::McpConformanceContext)?;
    let context: serde_json::Value = serde_json::from_str(&context).ok()?;
    let id = context["client_id"].as_str()?.to_owned();
    Some((id, context["client_secret"].as_str().map(str::to_owned)))
}
