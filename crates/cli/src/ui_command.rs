//! `souz ui [--open]`: the web UI's address, or the browser opened on it signed in.
//!
//! `--open` hands the browser a one-time code the way Jupyter hands over its token: the code
//! goes into a redirect page written owner-only (0600, created new, never over a file) in an
//! owner-only folder of the Souz home, `<SOUZ_HOME>/ui-open/`, and the browser launcher is given
//! only that file's `file://` address. The page sends the browser on to `/app/#code=…` (in the
//! fragment, which no server, log or process argument sees), and the page there trades the code
//! for the token once, from the daemon's own origin.
//!
//! Invariants: no credential or code is in any process argument (`ps` and `/proc/*/cmdline`
//! show other local users every argument); redirect pages older than a code's lifetime are
//! removed the next time this runs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use souz_core::config::paths::create_private_dir;
use souz_core::config::{SouzPaths, process_lookup};

use crate::output::say;
use crate::texts::{fill, tr};

/// Redirect pages older than this hold a used or expired code (codes work for 60 s).
const STALE_AFTER: Duration = Duration::from_secs(120);
/// The prefix and suffix of a redirect page's name.
const PAGE_PREFIX: &str = "open-";
const PAGE_SUFFIX: &str = ".html";

/// `souz ui`: prints the address; `--open` opens it through a private redirect page.
pub async fn run(open: bool) -> anyhow::Result<ExitCode> {
    let client = crate::texts::connect().await?;
    // An authenticated call first, so a refused token is said here, not in the browser.
    match client.recovery_problems().await? {
        None => {
            client.pause_state().await?;
        }
        Some(problems) => {
            client.get::<serde_json::Value>("/v1/config").await?;
            eprintln!(
                "{}",
                souz_protocol::display::display_text(&crate::status_command::recovery_text(
                    client.base(),
                    &problems
                ))
            );
        }
    }
    if !open {
        say!("{}", client.ui_url(None));
        return Ok(ExitCode::SUCCESS);
    }
    let paths = SouzPaths::resolve(&process_lookup).map_err(anyhow::Error::msg)?;
    let url = client.ui_code_url().await?;
    let page = write_redirect(&paths.home().join("ui-open"), &url).context(tr(
        "cannot write the sign-in page for the browser",
        "не удалось записать страницу входа для браузера",
    ))?;
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let status = std::process::Command::new(opener)
        .arg(page_address(&page)?)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !status.is_ok_and(|status| status.success()) {
        anyhow::bail!(
            "{}",
            fill(
                tr(
                    "could not run `{opener}`; open the address printed by `souz ui`",
                    "не удалось запустить `{opener}`; откройте адрес, который печатает `souz ui`"
                ),
                &[("opener", &opener)]
            )
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The page's `file://` address, percent-encoded: a Souz home with a space, `#` or `%` in
/// its path still opens the page.
fn page_address(page: &Path) -> anyhow::Result<String> {
    reqwest::Url::from_file_path(page)
        .map(String::from)
        .map_err(|()| {
            anyhow::anyhow!(
                "{}",
                fill(
                    tr(
                        "{page} is not an absolute path",
                        "{page} — не абсолютный путь"
                    ),
                    &[("page", &page.display())]
                )
            )
        })
}

/// Writes a new owner-only page in `folder` (made owner-only) that sends the browser to `url`,
/// after removing stale ones; returns its path.
fn write_redirect(folder: &Path, url: &str) -> std::io::Result<PathBuf> {
    create_private_dir(folder)?;
    remove_stale(folder);
    let html = redirect_html(url);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut attempt = 0u32;
    loop {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let name = format!("{PAGE_PREFIX}{}-{nanos}{PAGE_SUFFIX}", std::process::id());
        let path = folder.join(name);
        match options.open(&path) {
            Ok(mut file) => {
                file.write_all(html.as_bytes())?;
                file.sync_all()?;
                return Ok(path);
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 => {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Removes redirect pages older than [`STALE_AFTER`] (best effort: their codes are spent).
fn remove_stale(folder: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with(PAGE_PREFIX) || !name.ends_with(PAGE_SUFFIX) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A page that sends the browser to `url` at once (script, with a meta refresh and a link as
/// fallbacks) and sends no referrer.
fn redirect_html(url: &str) -> String {
    let attribute = escape_html(url);
    let script = serde_json::to_string(url)
        .unwrap_or_default()
        .replace('<', "\\u003c");
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <meta http-equiv=\"refresh\" content=\"0;url={attribute}\"><title>Souz</title></head>\
         <body><script>location.replace({script});</script>\
         <p><a href=\"{attribute}\">{open}</a></p></body></html>\n",
        open = tr("Open Souz", "Открыть Souz")
    )
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_address_is_percent_encoded() {
        assert_eq!(
            page_address(Path::new("/home/a b/#1%/ui-open/p.html")).unwrap(),
            "file:///home/a%20b/%231%25/ui-open/p.html"
        );
        assert!(page_address(Path::new("relative.html")).is_err());
    }

    #[test]
    fn the_redirect_page_is_new_owner_only_and_leads_to_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("ui-open");
        let url = "http://127.0.0.1:8383/app/#code=ab\"<cd>&x";
        let first = write_redirect(&folder, url).unwrap();
        let second = write_redirect(&folder, url).unwrap();
        assert_ne!(first, second, "each run writes a page of its own");
        let html = std::fs::read_to_string(&first).unwrap();
        assert!(
            html.contains(
                "location.replace(\"http://127.0.0.1:8383/app/#code=ab\\\"\\u003ccd>&x\")"
            ),
            "{html}"
        );
        assert!(
            html.contains("url=http://127.0.0.1:8383/app/#code=ab&quot;&lt;cd&gt;&amp;x\""),
            "{html}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&first), 0o600);
            assert_eq!(mode(&folder), 0o700);
        }
    }

    #[test]
    fn stale_pages_are_removed_and_other_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join("open-1-2.html");
        let other = dir.path().join("notes.txt");
        std::fs::write(&stale, "x").unwrap();
        std::fs::write(&other, "x").unwrap();
        let long_ago = SystemTime::now() - Duration::from_secs(600);
        for path in [&stale, &other] {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        let fresh = write_redirect(dir.path(), "http://x/app/").unwrap();
        assert!(!stale.exists());
        assert!(other.exists());
        assert!(fresh.exists());
    }
}
