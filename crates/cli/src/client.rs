//! The CLI's way to its daemon: which Souz home and which configured address (config.toml,
//! environment) apply, decided here with `souz-core`'s config; everything on the wire (the
//! `daemon.json` and token reading, the identity proof before any token is sent, the calls)
//! is `souz-client`'s. Also the id prefixes the lists print (`resolve_prefix`).

use anyhow::{Context, Result, anyhow, bail};
use serde::de::DeserializeOwned;
use souz_client::{ClientError, Home};
use souz_core::config::{Config, SouzPaths, process_lookup};

use crate::texts::{fill, tr};

pub use souz_client::DaemonClient;

/// The Souz home named by the environment.
pub fn paths() -> Result<SouzPaths> {
    SouzPaths::resolve(&process_lookup).map_err(|message| anyhow!(message))
}

/// The Souz home as `souz-client` reads it.
pub fn home(paths: &SouzPaths) -> Home {
    Home::new(paths.home())
}

/// Where config.toml (and the environment) says the daemon listens: the address used when no
/// `daemon.json` names a running daemon. Without a usable file (none yet, or one with problems,
/// which the daemon serves in recovery mode) the defaults with the environment's overrides
/// (`SOUZ_PORT`, `SOUZ_HOST`) apply, as they do for the daemon.
pub fn configured_base(paths: &SouzPaths) -> String {
    let file = paths.config_file();
    let config = Config::load_file(paths.clone(), &file, &process_lookup)
        .or_else(|_| Config::parse(paths.clone(), &file, "", &process_lookup))
        .unwrap_or_else(|_| Config::defaults(paths.clone()));
    format!("http://{}:{}", config.server.host, config.server.port)
}

/// Connects to the daemon of the Souz home named by the environment, once it proved it is the
/// daemon; requests name the CLI (`X-Souz-Client: cli`).
pub async fn connect() -> Result<DaemonClient> {
    let paths = paths()?;
    match DaemonClient::discover(&home(&paths), || configured_base(&paths)).await {
        Ok(client) => Ok(client.named("cli")),
        Err(error @ ClientError::Token { .. }) => Err(error).with_context(|| {
            fill(
                tr(
                    "cannot read the token in {home}; has `souz serve` ever run?",
                    "не удалось прочитать токен в {home}; запускался ли `souz serve`?",
                ),
                &[("home", &paths.home().display())],
            )
        }),
        Err(error) => Err(error.into()),
    }
}

/// The item at `{collection}/{id}`, where `id` may be the start of an id as the lists print
/// it: a full id is fetched at once, else it is matched ([`resolve_prefix`]) against the ids
/// `ids` reads from the first 500 items of the list at `collection`. `what` names the items
/// in errors.
pub async fn find<T: DeserializeOwned, L: DeserializeOwned>(
    client: &DaemonClient,
    what: &str,
    collection: &str,
    id: &str,
    ids: impl Fn(&L) -> Vec<&str>,
) -> Result<T> {
    if let Ok(item) = client.get::<T>(&format!("{collection}/{id}")).await {
        return Ok(item);
    }
    let list: L = client.get(&format!("{collection}?limit=500")).await?;
    let full = resolve_prefix(what, id, ids(&list).into_iter())?;
    Ok(client.get(&format!("{collection}/{full}")).await?)
}
/// Finds the one id in `ids` that starts with `prefix` (full ids match exactly; a trailing
/// `…`, as the lists print shortened ids, is ignored). `what` names the ids in the error, in
/// the language of the messages (`approval`, `grant`, `question`; in Russian in the genitive:
/// `одобрения`, `разрешения`, `вопроса`).
pub fn resolve_prefix<'a>(
    what: &str,
    prefix: &str,
    ids: impl Iterator<Item = &'a str>,
) -> Result<String> {
    let prefix = prefix.trim().trim_end_matches('…');
    if prefix.is_empty() {
        bail!(
            "{}",
            fill(
                tr(
                    "give a {what} id (or the start of one)",
                    "укажите id {what} (или его начало)"
                ),
                &[("what", &what)]
            )
        );
    }
    let matches: Vec<&str> = ids.filter(|id| id.starts_with(prefix)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => bail!(
            "{}",
            fill(
                tr(
                    "no {what} id starts with `{prefix}`",
                    "ни один id {what} не начинается с `{prefix}`"
                ),
                &[("what", &what), ("prefix", &prefix)]
            )
        ),
        many => bail!(
            "{}",
            fill(
                tr(
                    "`{prefix}` matches {count} ids; give more characters",
                    "`{prefix}` подходит к {count} id; укажите больше символов"
                ),
                &[("prefix", &prefix), ("count", &many.len())]
            )
        ),
    }
}
