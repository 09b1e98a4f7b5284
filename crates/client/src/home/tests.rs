//! The home's files are read without following links and only when they are small regular
//! files.

use std::os::unix::fs::symlink;

use super::*;

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn links_at_the_daemon_file_and_the_tokens_are_not_read_through() {
    let base = tempfile::tempdir().unwrap();
    let outside = base.path().join("outside");
    std::fs::write(&outside, TOKEN).unwrap();
    let home_dir = base.path().join("home");
    std::fs::create_dir(&home_dir).unwrap();
    let home = Home::new(&home_dir);
    symlink(&outside, home.token_file()).unwrap();
    let error = home.operator_token().unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    // A linked `clients` folder, though the token in it is a plain file.
    let elsewhere = base.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("claude.token"), TOKEN).unwrap();
    symlink(&elsewhere, home_dir.join("clients")).unwrap();
    let error = home.client_token("claude").unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    std::fs::write(
        &outside,
        r#"{"pid":1,"url":"http://127.0.0.1:9","version":"0"}"#,
    )
    .unwrap();
    symlink(&outside, home.daemon_file()).unwrap();
    assert!(home.daemon_info().is_none());
}

#[test]
fn a_fifo_is_refused_without_blocking_and_a_plain_token_is_read() {
    let base = tempfile::tempdir().unwrap();
    let home = Home::new(base.path());
    make_fifo(&home.token_file());
    assert!(home.operator_token().is_err());
    std::fs::remove_file(home.token_file()).unwrap();
    std::fs::write(home.token_file(), format!("{TOKEN}\n")).unwrap();
    assert_eq!(home.operator_token().unwrap(), TOKEN);
}

fn make_fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}
