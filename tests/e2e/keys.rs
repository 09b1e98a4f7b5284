//! Provider keys at rest in the OS keychain: a real GNOME Keyring (Secret Service) on a private
//! session bus, the real daemon storing a key, a restart in a new session, and the key reaching
//! the provider; without the keychain, a clear error.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::json;
use souz_testkit::openai;

use crate::chats::{COMPLETIONS, daemon_configured, new_chat, post, provider, wait_event};

const PASSWORD: &str = "souz-e2e-keyring";

/// A session bus with an unlocked GNOME Keyring whose files live in `data`.
struct Keyring {
    bus: Child,
    address: String,
    data: PathBuf,
}

impl Keyring {
    fn start(data: &Path) -> Self {
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon (package dbus) is needed");
        let mut address = String::new();
        BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let address = address.trim().to_owned();
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("XDG_DATA_HOME", data)
            .env("HOME", data)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon (package gnome-keyring) is needed");
        keyring
            .stdin
            .take()
            .unwrap()
            .write_all(PASSWORD.as_bytes())
            .unwrap();
        // It forks its daemon and exits once that is on the bus.
        assert!(keyring.wait().unwrap().success());
        Self {
            bus,
            address,
            data: data.to_owned(),
        }
    }

    /// What `secret-tool` finds under Souz's attributes.
    fn lookup(&self, account: &str) -> String {
        let output = Command::new("secret-tool")
            .args(["lookup", "application", "Souz", "account", account])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("XDG_DATA_HOME", &self.data)
            .output()
            .expect("secret-tool (package libsecret-tools) is needed");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        // The keyring daemon leaves with its bus.
        let _ = self.bus.kill();
        let _ = self.bus.wait();
    }
}

#[test]
fn a_stored_key_lives_in_the_keychain_and_reaches_the_provider_after_a_restart() {
    let setup = provider();
    let storage = tempfile::tempdir().unwrap();
    let key = "sk-e2e-keychain-0123456789abcdef";

    let keyring = Keyring::start(storage.path());
    let address = keyring.address.clone();
    let daemon = daemon_configured(&setup, "", |command| {
        command.env("DBUS_SESSION_BUS_ADDRESS", &address);
    });
    let stored = daemon.put("/v1/me/provider-keys/openai", &json!({"apiKey": key}));
    assert_eq!(stored.status, 200, "{}", stored.body);
    assert_eq!(stored.json()["providerKey"]["keyHint"], "...cdef");
    assert!(
        !daemon.home.path().join("provider-keys.key").exists(),
        "with a keychain, no key file is written"
    );
    let account = format!("provider-keys data key ({})", daemon.home.path().display());
    let data_key = keyring.lookup(&account);
    assert_eq!(data_key.trim().len(), 64, "{data_key:?}");
    assert!(data_key.trim().chars().all(|c| c.is_ascii_hexdigit()));
    assert!(!data_key.contains(key));

    // A new login session: another bus, the same keyring files.
    let stopped = daemon.stop("TERM");
    assert!(stopped.status.success(), "{}", stopped.stderr);
    drop(keyring);
    let keyring = Keyring::start(storage.path());
    let address = keyring.address.clone();
    let daemon = souz_e2e::Daemon::restart_with(stopped, |command| {
        command.env("DBUS_SESSION_BUS_ADDRESS", &address);
    });
    setup.provider.push(COMPLETIONS, openai::text(&["Hello."]));
    let chat = new_chat(&daemon);
    let posted = post(&daemon, &chat, json!({"content": "Hi"}));
    assert_eq!(posted.status, 200, "{}", posted.body);
    wait_event(&daemon, &chat, "execution.finished");
    let requests = setup.provider.requests_to(COMPLETIONS);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );

    // No keychain in reach (no session bus): the key cannot be used, and the turn says why.
    let stopped = daemon.stop("TERM");
    drop(keyring);
    let daemon = souz_e2e::Daemon::restart_with(stopped, |_| {});
    let chat = new_chat(&daemon);
    post(&daemon, &chat, json!({"content": "Still there?"}));
    let failed = wait_event(&daemon, &chat, "execution.failed");
    let message = failed["payload"]["errorMessage"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("Secret Service"),
        "the failure names the keychain: {failed}"
    );
    assert!(!message.contains(key), "{failed}");
}
