//! `souz acp-config`: gives `souz acp` a client token of its own and prints the editor's
//! configuration (Zed's `agent_servers` entry) that runs it.
//!
//! The token has the `chats` scope: it reaches the chats `souz acp` makes and their approvals,
//! nothing else (not the person's other chats, not settings, keys or `/mcp`). It goes to
//! `<SOUZ_HOME>/clients/<name>.token` (0600, in an owner-only folder), where `souz acp` reads it,
//! so it is in no editor settings file, argument or environment. Each run rotates the token of
//! that name: the configuration printed last is the one that works.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use souz_core::runtime::connect;
use souz_protocol::ClientScope;

use crate::clients_command::rotate;
use crate::output::say;

/// The name of the client token `souz acp` uses by default.
pub const ACP_CLIENT: &str = "acp";

/// Makes the token of `client` and prints the editor's configuration.
pub async fn run(client: String) -> Result<ExitCode> {
    let daemon = crate::texts::connect().await?;
    let paths = crate::client::paths()?;
    let created = rotate(&daemon, &client, ClientScope::Chats).await?;
    connect::write_client_token(&paths, &client, &created.token)
        .with_context(|| crate::mcp_config::cannot_write(&paths.client_token(&client)))?;
    let binary = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context(crate::texts::tr(
            "cannot find the path of this souz binary",
            "не удалось найти путь к этой программе souz",
        ))?;
    let home = souz_core::config::env::read_os(souz_core::config::env::Var::SouzHome)
        .map(std::path::PathBuf::from);
    say!(
        "{}",
        zed_block(&binary.to_string_lossy(), &client, home.as_deref())
    );
    Ok(ExitCode::SUCCESS)
}

/// Zed's `agent_servers` entry running `binary acp` (with `--client` when not the default and
/// `SOUZ_HOME` when the Souz home is not the default). No token: `souz acp` reads its own.
pub fn zed_block(binary: &str, client: &str, home: Option<&std::path::Path>) -> String {
    let mut args = vec!["acp".to_owned()];
    if client != ACP_CLIENT {
        args.extend(["--client".to_owned(), client.to_owned()]);
    }
    let mut server = json!({ "command": binary, "args": args });
    if let Some(home) = home {
        server["env"] = json!({ "SOUZ_HOME": home.to_string_lossy() });
    }
    let config = json!({ "agent_servers": { "Souz": server } });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zed_entry_runs_souz_acp_without_a_token() {
        let value: serde_json::Value =
            serde_json::from_str(&zed_block("/x/souz", ACP_CLIENT, None)).unwrap();
        let server = &value["agent_servers"]["Souz"];
        assert_eq!(server["command"], "/x/souz");
        assert_eq!(server["args"], json!(["acp"]));
        assert!(server.get("env").is_none());

        let value: serde_json::Value = serde_json::from_str(&zed_block(
            "/x/souz",
            "zed-work",
            Some(std::path::Path::new("/h")),
        ))
        .unwrap();
        let server = &value["agent_servers"]["Souz"];
        assert_eq!(server["args"], json!(["acp", "--client", "zed-work"]));
        assert_eq!(server["env"]["SOUZ_HOME"], "/h");
        assert!(!value.to_string().contains("souz_client_"));
    }
}
