//! `souz mcp servers`: the external MCP servers of `[mcp.servers]` (through the daemon).
//! Labels, states and messages are in the person's language ([`crate::texts`]); names,
//! transports, TOML sections and JSON stay as they are.

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::output::{print_json, say, truncate};
use crate::texts::{counted, fill, tr};

/// `count` tools, counted in the person's language.
fn tools(count: usize) -> String {
    counted(
        count as u64,
        ["tool", "tools"],
        ["инструмент", "инструмента", "инструментов"],
    )
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// External MCP servers: list (default), test, add, rm, enable, disable.
    Servers {
        #[command(subcommand)]
        command: Option<ServersCommand>,
    },
    /// Print the servers of Claude Desktop's claude_desktop_config.json, Claude Code's
    /// .mcp.json or an `{"mcpServers": …}` file as [mcp.servers.<name>] sections to add to
    /// config.toml (checked like it; secrets in headers are left out, never copied).
    Import {
        /// The JSON file.
        file: std::path::PathBuf,
    },
    /// A server's bearer token in the encrypted key store (the server names it with
    /// `bearer_token_key`): `souz mcp token set NAME < token.txt`, `souz mcp token rm NAME`.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Sign in to an HTTP server with OAuth: opens the authorization page in the browser (or
    /// prints it with --print); the browser comes back to the daemon, which keeps the tokens
    /// encrypted and refreshes them.
    Login {
        /// The server's name in config.toml.
        name: String,
        /// Print the page's address instead of opening it.
        #[arg(long)]
        print: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Store the token read from standard input (typed without echo at a terminal).
    Set {
        /// The server's name in config.toml.
        name: String,
    },
    /// Delete the stored token.
    Rm {
        /// The server's name in config.toml.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ServersCommand {
    /// Every configured server: transport, whether it is connected, its tools in use.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Connect to a server (if it is not) and list its tools; exit 1 if it fails.
    Test {
        /// The server's name in config.toml.
        name: String,
    },
    /// Add (or replace) a server in config.toml: a program after `--`, or `--url`.
    /// The daemon starts it (or restarts it with the new settings) at once.
    Add(AddServer),
    /// Remove a server from config.toml (the daemon stops it at once).
    Rm {
        /// The server's name in config.toml.
        name: String,
    },
    /// Turn a server on in config.toml (the daemon starts it at once).
    Enable {
        /// The server's name in config.toml.
        name: String,
    },
    /// Turn a server off in config.toml (the daemon stops it at once).
    Disable {
        /// The server's name in config.toml.
        name: String,
    },
}

/// `souz mcp servers add`.
#[derive(Debug, clap::Args)]
pub struct AddServer {
    /// Its name (its tools become `mcp__<name>__<tool>`).
    name: String,
    /// A streamable HTTP endpoint instead of a program.
    #[arg(long)]
    url: Option<String>,
    /// `NAME=VALUE` set in the program's environment (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Add it turned off.
    #[arg(long)]
    disabled: bool,
    /// Keep its tools from MCP clients at Souz's /mcp (Souz's agents still see them).
    #[arg(long)]
    no_expose: bool,
    /// The program and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

impl AddServer {
    fn request(&self) -> Result<souz_protocol::McpServerPut> {
        let mut settings = serde_json::Map::new();
        match (&self.url, self.command.split_first()) {
            (Some(url), None) => {
                settings.insert("url".into(), url.clone().into());
            }
            (None, Some((program, args))) => {
                settings.insert("command".into(), program.clone().into());
                settings.insert("args".into(), args.to_vec().into());
            }
            _ => anyhow::bail!(
                "{}",
                tr(
                    "give either --url URL or a program after `--`, not both",
                    "укажите либо --url URL, либо программу после `--`, но не то и другое"
                )
            ),
        }
        if !self.env.is_empty() {
            let mut env = serde_json::Map::new();
            for pair in &self.env {
                let (name, value) = pair.split_once('=').with_context(|| {
                    fill(
                        tr("`{pair}` is not NAME=VALUE", "`{pair}` — не ИМЯ=ЗНАЧЕНИЕ"),
                        &[("pair", &pair)],
                    )
                })?;
                env.insert(name.to_owned(), value.into());
            }
            settings.insert("env".into(), env.into());
        }
        if self.disabled {
            settings.insert("enabled".into(), false.into());
        }
        if self.no_expose {
            settings.insert("expose_to_mcp_clients".into(), false.into());
        }
        Ok(souz_protocol::McpServerPut {
            settings,
            revision: None,
        })
    }
}

pub async fn run(command: McpCommand) -> Result<std::process::ExitCode> {
    let command = match command {
        McpCommand::Import { file } => {
            let json = std::fs::read_to_string(&file).with_context(|| {
                fill(
                    tr("cannot read {file}", "не удалось прочитать {file}"),
                    &[("file", &file.display())],
                )
            })?;
            return match souz_core::config::import_servers(&json) {
                Ok(text) => {
                    say!("{}", text.trim_end());
                    Ok(std::process::ExitCode::SUCCESS)
                }
                Err(problems) => anyhow::bail!("{}: {problems}", file.display()),
            };
        }
        McpCommand::Token { command } => return token(command).await,
        McpCommand::Login { name, print } => return login(&name, print).await,
        McpCommand::Servers { command } => command,
    };
    let client = crate::texts::connect().await?;
    match command.unwrap_or(ServersCommand::List { json: false }) {
        ServersCommand::List { json } => {
            let list = client.mcp_servers().await?;
            if json {
                print_json(&list)?;
            } else {
                print_servers(&list);
            }
            Ok(std::process::ExitCode::SUCCESS)
        }
        edit @ (ServersCommand::Add(_)
        | ServersCommand::Rm { .. }
        | ServersCommand::Enable { .. }
        | ServersCommand::Disable { .. }) => {
            change(&client, edit).await?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        ServersCommand::Test { name } => {
            let test = client.test_mcp_server(&name).await?;
            if test.ok {
                say!(
                    "{}: {}, {}",
                    test.name,
                    tr("ok", "работает"),
                    tools(test.tools)
                );
                Ok(std::process::ExitCode::SUCCESS)
            } else {
                say!(
                    "{}: {}: {}",
                    test.name,
                    tr("failed", "ошибка"),
                    test.error.unwrap_or_default()
                );
                Ok(std::process::ExitCode::FAILURE)
            }
        }
    }
}

/// The servers as `souz mcp servers` lists them: name, transport, state, tools and notes.
fn print_servers(list: &souz_protocol::McpServerList) {
    if list.servers.is_empty() {
        say!(
            "{}",
            tr(
                "No MCP servers are configured ([mcp.servers.<name>] in config.toml).",
                "MCP-серверы не настроены ([mcp.servers.<имя>] в config.toml)."
            )
        );
    }
    for server in &list.servers {
        let state = match (server.enabled, server.connected, server.needs_login) {
            (false, _, _) => tr("disabled", "выключен"),
            (true, true, _) => tr("connected", "подключён"),
            (true, false, true) => tr("needs login", "нужен вход"),
            (true, false, false) => tr("not connected", "не подключён"),
        };
        say!(
            "{:<20} {:<6} {:<14} {}{}{}{}",
            server.name,
            server.transport,
            state,
            tools(server.tools),
            if server.expose_to_mcp_clients {
                ""
            } else {
                tr(", not exposed at /mcp", ", не виден клиентам /mcp")
            },
            if server.restart_required {
                tr(", changed: applying", ", изменён: применяется")
            } else {
                ""
            },
            server
                .error
                .as_deref()
                .map(|error| format!(": {}", truncate(error, 80)))
                .unwrap_or_default()
        );
    }
}

/// Adds, removes, enables or disables a server in config.toml through the daemon.
async fn change(client: &crate::client::DaemonClient, command: ServersCommand) -> Result<()> {
    let (name, saved, done) = match command {
        ServersCommand::Add(add) => {
            let saved = client.put_mcp_server(&add.name, &add.request()?).await?;
            (
                add.name,
                Some(saved),
                tr(
                    "Saved [mcp.servers.{name}] to config.toml.",
                    "[mcp.servers.{name}] сохранён в config.toml.",
                ),
            )
        }
        ServersCommand::Rm { name } => {
            client.remove_mcp_server(&name).await?;
            (
                name,
                None,
                tr(
                    "Removed [mcp.servers.{name}] from config.toml.",
                    "[mcp.servers.{name}] удалён из config.toml.",
                ),
            )
        }
        ServersCommand::Enable { name } => {
            let saved = client.set_mcp_server_enabled(&name, true).await?;
            (
                name,
                Some(saved),
                tr(
                    "Enabled [mcp.servers.{name}] in config.toml.",
                    "[mcp.servers.{name}] включён в config.toml.",
                ),
            )
        }
        ServersCommand::Disable { name } => {
            let saved = client.set_mcp_server_enabled(&name, false).await?;
            (
                name,
                Some(saved),
                tr(
                    "Disabled [mcp.servers.{name}] in config.toml.",
                    "[mcp.servers.{name}] выключен в config.toml.",
                ),
            )
        }
        ServersCommand::List { .. } | ServersCommand::Test { .. } => return Ok(()),
    };
    say!("{}", fill(done, &[("name", &name)]));
    let waits = saved.is_some_and(|saved| !saved.restart_required.is_empty());
    let next = if waits {
        tr(
            "Restart Souz to apply the change to `{name}`.",
            "Перезапустите Souz, чтобы изменение `{name}` вступило в силу.",
        )
    } else {
        tr(
            "Souz applies it now (`souz mcp servers` shows where `{name}` stands).",
            "Souz применяет его сейчас (состояние `{name}` покажет `souz mcp servers`).",
        )
    };
    say!("{}", fill(next, &[("name", &name)]));
    Ok(())
}

async fn token(command: TokenCommand) -> Result<std::process::ExitCode> {
    let client = crate::texts::connect().await?;
    match command {
        TokenCommand::Set { name } => {
            let token = crate::keys_command::read_secret(
                &crate::texts::fill(
                    crate::texts::tr("{name} bearer token", "bearer-токен {name}"),
                    &[("name", &name)],
                ),
                &format!("souz mcp token set {name} < token.txt"),
            )?;
            client.set_mcp_token(&name, &token).await?;
            say!(
                "{}",
                crate::texts::fill(
                    crate::texts::tr(
                        "Stored the bearer token of `{name}` (encrypted); it connects with it now.",
                        "Токен `{name}` сохранён (зашифрован); сервер подключается с ним.",
                    ),
                    &[("name", &name)],
                )
            );
        }
        TokenCommand::Rm { name } => {
            client.delete_mcp_token(&name).await?;
            say!(
                "{}",
                crate::texts::fill(
                    crate::texts::tr(
                        "Deleted the stored bearer token of `{name}` (if there was one).",
                        "Сохранённый токен `{name}` удалён (если он был).",
                    ),
                    &[("name", &name)],
                )
            );
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

async fn login(name: &str, print: bool) -> Result<std::process::ExitCode> {
    let client = crate::texts::connect().await?;
    let login = client.mcp_login(name).await?;
    if print {
        say!("{}", login.authorization_url);
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let opened = std::process::Command::new(opener)
        .arg(&login.authorization_url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !opened {
        say!(
            "{}",
            fill(
                tr(
                    "Open this page to sign in to `{name}`:",
                    "Откройте эту страницу, чтобы войти в `{name}`:"
                ),
                &[("name", &name)]
            )
        );
    }
    say!("{}", login.authorization_url);
    say!(
        "{}",
        fill(
            tr(
                "`souz mcp servers` shows `{name}` connected once the sign-in is done.",
                "Когда вход будет выполнен, `souz mcp servers` покажет `{name}` подключённым."
            ),
            &[("name", &name)]
        )
    );
    Ok(std::process::ExitCode::SUCCESS)
}
