//! Issue 39, item 2: a link planted at each file the daemon itself reads or writes in the Souz
//! home (as an approved command could) is refused — or, for the log,
//! skipped — and nothing outside the home is read or written through it. The "outside" file
//! stands for `~/.bashrc`: its content must be unchanged and it must still be a plain file.

use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::config::{Config, SouzPaths, write_template_if_missing};
use crate::llm::ProviderId;
use crate::llm::keys::{ApiKey, KeyStore};
use crate::runtime::discovery;
use crate::store::{Store, StoreError};
use crate::testing::{TestHome, TestRuntime};
use crate::token::ApiToken;

/// What the outside file holds; valid as TOML, as a token and as a data key, so reading it
/// through the link would succeed.
const BASHRC: &str = "a = \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n";

/// A Souz home and, next to it, the outside file links point at.
struct Planted {
    _dir: TestHome,
    paths: SouzPaths,
    outside: PathBuf,
}

impl Planted {
    fn new() -> Self {
        let dir = TestHome::new();
        let paths = dir.paths();
        paths.ensure_home().unwrap();
        let outside = dir.path().join("bashrc");
        std::fs::write(&outside, BASHRC).unwrap();
        Self {
            _dir: dir,
            paths,
            outside,
        }
    }

    /// Plants a link at `at` (created with its folders) to the outside file.
    fn link(&self, at: &Path) {
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(&self.outside, at).unwrap();
    }

    /// The outside file is as it was.
    fn untouched(&self) {
        let metadata = std::fs::symlink_metadata(&self.outside).unwrap();
        assert!(metadata.is_file());
        assert_eq!(std::fs::read_to_string(&self.outside).unwrap(), BASHRC);
    }
}

fn environment(paths: &SouzPaths) -> impl Fn(&str) -> Option<String> {
    let home = paths.home().display().to_string();
    move |name: &str| (name == "SOUZ_HOME").then(|| home.clone())
}

#[test]
fn todays_log_file_linked_out_is_skipped_and_the_daemon_logs_on() {
    let planted = Planted::new();
    let logs = planted.paths.logs();
    let today = chrono::Utc::now().date_naive().format("%Y-%m-%d");
    planted.link(&logs.join(format!("souz.{today}.jsonl")));
    let mut writer = crate::telemetry::file_writer(&logs, 7)
        .unwrap()
        .expect("the logs folder itself is fine");
    writer.write_all(b"{\"message\":\"planted\"}\n").unwrap();
    writer.flush().unwrap();
    planted.untouched();
}

#[test]
fn a_linked_logs_folder_turns_file_logging_off() {
    let planted = Planted::new();
    let elsewhere = planted.outside.with_file_name("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, planted.paths.logs()).unwrap();
    assert!(
        crate::telemetry::file_writer(&planted.paths.logs(), 7)
            .unwrap()
            .is_none()
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[tokio::test]
async fn a_link_at_the_database_or_its_companions_is_refused() {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let planted = Planted::new();
        let database = planted.paths.database();
        planted.link(&PathBuf::from(format!("{}{suffix}", database.display())));
        let error = Store::open(&database).await.unwrap_err();
        assert!(matches!(error, StoreError::Refused(_)), "{suffix}: {error}");
        assert!(error.to_string().contains("symbolic link"), "{error}");
        planted.untouched();
    }
}

#[tokio::test]
async fn the_database_opens_in_a_home_reached_through_a_linked_folder() {
    // The Souz home and its ancestors are trusted: only links inside it are refused.
    let planted = Planted::new();
    let linked = planted.outside.with_file_name("linked-home");
    symlink(planted.paths.home(), &linked).unwrap();
    let store = Store::open(linked.join("souz.db")).await.unwrap();
    store.ping().await.unwrap();
    assert!(planted.paths.database().is_file());
}

#[test]
fn a_link_at_config_toml_is_neither_read_nor_created_through() {
    let planted = Planted::new();
    let config = planted.paths.config_file();
    planted.link(&config);
    let error = Config::load(&environment(&planted.paths)).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    let error = Config::load_file(planted.paths.clone(), &config, &|_| None).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    planted.untouched();
    // A dangling link: the template is not written to where it points.
    std::fs::remove_file(&config).unwrap();
    let target = planted.outside.with_file_name("profile");
    symlink(&target, &config).unwrap();
    assert!(!write_template_if_missing(&config).unwrap());
    assert!(!target.exists());
}

#[test]
fn a_link_at_daemon_json_is_neither_read_nor_written_through() {
    let planted = Planted::new();
    let file = planted.paths.daemon_file();
    planted.link(&file);
    assert!(discovery::read(&file).is_none());
    let info = souz_protocol::DaemonInfo {
        pid: std::process::id(),
        url: "http://127.0.0.1:1".to_owned(),
        version: "0".to_owned(),
    };
    let error = discovery::write(&file, &info).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    planted.untouched();
}

#[test]
fn a_link_at_the_token_is_refused() {
    let planted = Planted::new();
    let token = planted.paths.token();
    planted.link(&token);
    let error = ApiToken::load_or_create(&token).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    planted.untouched();
}

#[tokio::test]
async fn a_link_at_the_provider_keys_data_key_is_refused() {
    let planted = Planted::new();
    let store = Store::open(planted.paths.database()).await.unwrap();
    let key_file = planted.paths.provider_key_file();
    planted.link(&key_file);
    let keys = KeyStore::new(store, key_file);
    let provider = ProviderId::parse("anthropic").unwrap();
    let error = keys
        .put(provider, ApiKey::new("sk-ant-planted-0123456789"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    planted.untouched();
}

#[tokio::test]
async fn removing_a_local_model_does_not_follow_a_linked_model_folder() {
    let runtime = TestRuntime::builder().start().await;
    let handle = runtime.handle();
    let profile = crate::llm::local::profiles::find("smollm2-135m-instruct").unwrap();
    let models = handle.config().paths.home().join("models");
    std::fs::create_dir_all(&models).unwrap();
    // The model folder is a link to a folder of the person's holding a file of that name.
    let elsewhere = runtime.home().path().join("Documents");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join(profile.file), "the person's file").unwrap();
    symlink(&elsewhere, models.join(profile.name)).unwrap();
    let error = handle.remove_local_model(profile.name).await.unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(
        std::fs::read_to_string(elsewhere.join(profile.file)).unwrap(),
        "the person's file"
    );
    // A link at the model file itself is removed as a name; what it names stays.
    std::fs::remove_file(models.join(profile.name)).unwrap();
    std::fs::create_dir(models.join(profile.name)).unwrap();
    symlink(
        elsewhere.join(profile.file),
        models.join(profile.name).join(profile.file),
    )
    .unwrap();
    handle.remove_local_model(profile.name).await.unwrap();
    assert!(elsewhere.join(profile.file).is_file());
    assert!(!models.join(profile.name).join(profile.file).exists());
    runtime.shutdown("test").await.unwrap();
}
