//! `souz keys`: the caller's provider API keys and the daemon's service keys (`brave`, for web
//! search) through the daemon — list (hints only), set, rm, test (a one-token request through
//! the provider, one search for a service). Keys are secrets: `set` reads the key from standard input (without echo when that is a
//! terminal), never from an argument, and nothing here prints more than the daemon's hint.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use crate::output::{print_json, say};
use crate::texts::{fill, tr};

/// The longest key read from standard input, in bytes (the daemon allows fewer characters).
const MAX_INPUT_BYTES: u64 = 64 * 1024;

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// The configured keys: provider, hint, where it comes from (stored or environment).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Store (or replace) a provider's key, encrypted at rest. The key is read from standard
    /// input (`souz keys set openai < key.txt`, or typed without echo at a terminal).
    Set {
        /// openai, anthropic, qwen, ai_tunnel, giga, ... (case-insensitive, `-` for `_`), or a
        /// service: brave (the Brave Search API, for web search).
        provider: String,
    },
    /// Check a provider's key with a one-token request to its default model; exit 1 if the
    /// provider refuses it or cannot be reached.
    Test {
        /// The provider.
        provider: String,
    },
    /// Delete a provider's stored key (keys from the environment stay).
    Rm {
        /// The provider.
        provider: String,
    },
}

pub async fn run(command: Option<KeysCommand>) -> Result<ExitCode> {
    match command.unwrap_or(KeysCommand::List { json: false }) {
        KeysCommand::Test { provider } if is_service(&provider) => test_service(&provider).await,
        KeysCommand::Test { provider } => test(&provider).await,
        KeysCommand::Set { provider } if is_service(&provider) => {
            set_service(&provider).await.map(|()| ExitCode::SUCCESS)
        }
        KeysCommand::Rm { provider } if is_service(&provider) => {
            let client = crate::texts::connect().await?;
            client.delete_service_key(&provider).await?;
            say!(
                "{}",
                fill(
                    tr(
                        "Deleted the stored {provider} key (if there was one).",
                        "Сохранённый ключ {provider} удалён (если он был)."
                    ),
                    &[("provider", &provider)]
                )
            );
            Ok(ExitCode::SUCCESS)
        }
        other => manage(other).await.map(|()| ExitCode::SUCCESS),
    }
}

/// Whether `name` is one of the daemon's service keys rather than a provider.
fn is_service(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase();
    souz_protocol::SERVICE_KEYS.contains(&name.as_str())
}

async fn set_service(name: &str) -> Result<()> {
    let api_key = read_key(name)?;
    let client = crate::texts::connect().await?;
    let stored = client.set_service_key(name, &api_key).await?;
    say!(
        "{}",
        fill(
            tr(
                "Stored the {name} key {hint}.",
                "Ключ {name} сохранён: {hint}."
            ),
            &[("name", &stored.name), ("hint", &stored.key_hint)]
        )
    );
    Ok(())
}

/// `souz keys test SERVICE`: one request to the service with the key the tools would use.
async fn test_service(name: &str) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    let tested = client.test_service_key(name).await?;
    if tested.ok {
        say!(
            "{}",
            fill(
                tr("The {name} key works.", "Ключ {name} работает."),
                &[("name", &tested.name)]
            )
        );
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "{}",
        souz_protocol::display::display_text(&fill(
            tr(
                "The {name} key did not work: {error}",
                "Ключ {name} не сработал: {error}"
            ),
            &[
                ("name", &tested.name),
                (
                    "error",
                    &tested
                        .error
                        .as_deref()
                        .unwrap_or(tr("no answer", "нет ответа"))
                )
            ]
        ))
    );
    Ok(ExitCode::FAILURE)
}

/// `souz keys test`: success when the provider answered, else its error on stderr and exit 1.
async fn test(provider: &str) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    let tested = client.test_provider_key(provider).await?;
    if tested.ok {
        say!(
            "{}",
            fill(
                tr(
                    "The {provider} key works ({model} answered).",
                    "Ключ {provider} работает (ответила {model})."
                ),
                &[("provider", &tested.provider), ("model", &tested.model)]
            )
        );
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "{}",
        souz_protocol::display::display_text(&fill(
            tr(
                "The {provider} key did not work with {model}: {error}",
                "Ключ {provider} не сработал с {model}: {error}"
            ),
            &[
                ("provider", &tested.provider),
                ("model", &tested.model),
                (
                    "error",
                    &tested
                        .error
                        .as_deref()
                        .unwrap_or(tr("no answer", "нет ответа"))
                )
            ]
        ))
    );
    Ok(ExitCode::FAILURE)
}

/// list, set, rm (`test` is [`test`]).
async fn manage(command: KeysCommand) -> Result<()> {
    match command {
        KeysCommand::List { json } => {
            let client = crate::texts::connect().await?;
            let list = client.provider_keys().await?;
            // A client token cannot read the daemon's service keys: they are the operator's.
            let services = match client.service_keys().await {
                Ok(services) => services.items,
                Err(error) if error.code() == Some(souz_protocol::ErrorCode::Forbidden) => {
                    Vec::new()
                }
                Err(error) => return Err(error.into()),
            };
            if json {
                return print_json(&serde_json::json!({
                    "items": list.items,
                    "services": services,
                }));
            }
            if list.items.is_empty() && services.is_empty() {
                say!(
                    "{}",
                    tr(
                        "No provider key is configured; add one with `souz keys set PROVIDER`.",
                        "Ключей провайдеров нет; добавьте ключ: `souz keys set ПРОВАЙДЕР`."
                    )
                );
                return Ok(());
            }
            say!(
                "{:<12} {:<12} {}",
                tr("PROVIDER", "ПРОВАЙДЕР"),
                tr("KEY", "КЛЮЧ"),
                tr("SOURCE", "ОТКУДА")
            );
            let rows = list
                .items
                .iter()
                .map(|key| (key.provider.to_string(), &key.key_hint, key.updated_at))
                .chain(
                    services
                        .iter()
                        .map(|key| (key.name.clone(), &key.key_hint, key.updated_at)),
                );
            for (name, hint, updated_at) in rows {
                let source = match updated_at {
                    Some(at) => format!(
                        "{} {}",
                        tr("stored", "сохранён"),
                        at.format("%Y-%m-%d %H:%M")
                    ),
                    None => tr("environment", "переменная окружения").to_owned(),
                };
                say!("{name:<12} {hint:<12} {source}");
            }
            Ok(())
        }
        KeysCommand::Set { provider } => {
            let api_key = read_key(&provider)?;
            let client = crate::texts::connect().await?;
            let stored = client.set_provider_key(&provider, &api_key).await?;
            say!(
                "{}",
                fill(
                    tr(
                        "Stored the {name} key {hint}.",
                        "Ключ {name} сохранён: {hint}."
                    ),
                    &[
                        ("name", &stored.provider_key.provider),
                        ("hint", &stored.provider_key.key_hint)
                    ]
                )
            );
            Ok(())
        }
        KeysCommand::Test { provider } => test(&provider).await.map(drop),
        KeysCommand::Rm { provider } => {
            let client = crate::texts::connect().await?;
            client.delete_provider_key(&provider).await?;
            say!(
                "{}",
                fill(
                    tr(
                        "Deleted the stored {provider} key (if there was one).",
                        "Сохранённый ключ {provider} удалён (если он был)."
                    ),
                    &[("provider", &provider)]
                )
            );
            Ok(())
        }
    }
}

/// A provider's key from standard input (see [`read_secret`]).
fn read_key(provider: &str) -> Result<String> {
    read_secret(
        &crate::texts::fill(
            crate::texts::tr("{provider} API key", "API-ключ {provider}"),
            &[("provider", &provider)],
        ),
        &format!("souz keys set {provider} < key.txt"),
    )
}

/// A secret from standard input: typed without echo at a terminal, else the whole input with
/// surrounding whitespace removed. An empty input is an error, not an empty secret; `usage`
/// shows how to pipe it in.
pub(crate) fn read_secret(what: &str, usage: &str) -> Result<String> {
    let key = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!(
            "{what} {}: ",
            crate::texts::tr("(not echoed)", "(не отображается)")
        ))
        .context(crate::texts::tr(
            "cannot read the key from the terminal",
            "не удалось прочитать ключ из терминала",
        ))?
    } else {
        let mut bytes = Vec::new();
        std::io::stdin()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
            .context(crate::texts::tr(
                "cannot read the key from standard input",
                "не удалось прочитать ключ со стандартного ввода",
            ))?;
        if bytes.len() as u64 > MAX_INPUT_BYTES {
            bail!(
                "{}",
                crate::texts::fill(
                    crate::texts::tr(
                        "the key on standard input is longer than {limit} bytes",
                        "ключ на стандартном вводе длиннее {limit} байт",
                    ),
                    &[("limit", &MAX_INPUT_BYTES)],
                )
            );
        }
        String::from_utf8(bytes).context(crate::texts::tr(
            "the key on standard input is not UTF-8",
            "ключ на стандартном вводе не в UTF-8",
        ))?
    };
    let key = key.trim();
    if key.is_empty() {
        bail!(
            "{}",
            crate::texts::fill(
                crate::texts::tr(
                    "no key on standard input: pipe it in (`{usage}`) or type it at the prompt",
                    "ключ не получен: передайте его на стандартный ввод (`{usage}`) или введите \
                     в ответ на запрос",
                ),
                &[("usage", &usage)],
            )
        );
    }
    Ok(key.to_owned())
}
