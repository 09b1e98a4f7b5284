//! OS confinement of commands with the real `souz` binary as the sandbox helper: what `/health`
//! reports, and that a confined command can write only where it is allowed. Every test checks
//! whichever confinement this machine's kernel offers (Landlock where it exists; otherwise
//! that nothing runs unconfined by mistake).

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use souz_core::config::{SandboxConfig, SouzPaths};
use souz_core::sandbox::{CommandRequest, Sandbox};
use souz_e2e::{Daemon, http, souz_bin};
use tokio_util::sync::CancellationToken;

/// Runs `souz __sandbox-exec --allow-write <each> -- sh -c <script>`.
fn sandbox_exec(allowed: &[&Path], script: &str) -> Output {
    let mut command = std::process::Command::new(souz_bin());
    command.arg("__sandbox-exec");
    for path in allowed {
        command.arg("--allow-write").arg(path);
    }
    command
        .args(["--", "/bin/sh", "-c", script])
        .output()
        .unwrap_or_else(|error| panic!("run the helper: {error}"))
}

/// Whether the helper can confine on this kernel (`/bin/true` under an empty ruleset).
pub(crate) fn landlock_works() -> bool {
    let output = sandbox_exec(&[], "true");
    match output.status.code() {
        Some(0) => true,
        Some(125) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains("cannot confine"), "{stderr}");
            false
        }
        other => panic!("unexpected helper exit {other:?}: {output:?}"),
    }
}

#[test]
fn health_reports_the_confinement_this_kernel_offers() {
    let daemon = Daemon::start();
    let health = http(&daemon.address, "GET", "/health", &[], b"").unwrap();
    assert_eq!(health.status, 200);
    let sandbox = &health.json()["sandbox"];
    let detail = sandbox["detail"].as_str().unwrap();
    if cfg!(target_os = "linux") && landlock_works() {
        assert_eq!(sandbox["confinement"], "landlock", "{sandbox}");
        assert!(detail.contains("workspace roots"), "{detail}");
    } else if cfg!(target_os = "linux") {
        assert_eq!(sandbox["confinement"], "none", "{sandbox}");
        assert!(detail.contains("Landlock is not available"), "{detail}");
    }
    // The schema documents the field.
    let openapi = http(&daemon.address, "GET", "/docs/openapi.json", &[], b"").unwrap();
    let document: serde_json::Value = openapi.json();
    assert!(
        document["components"]["schemas"]["Health"]["properties"]["sandbox"].is_object(),
        "{}",
        document["components"]["schemas"]["Health"]
    );
}

#[test]
fn the_helper_lets_commands_write_only_where_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let allowed = base.join("allowed");
    let outside = base.join("outside");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("existing.txt"), "original\n").unwrap();
    let test_pid = std::process::id();
    let script = format!(
        "echo inside > {allowed}/new.txt && echo ok-inside; \
         echo outside > {outside}/new.txt || echo refused-new; \
         echo changed > {outside}/existing.txt || echo refused-existing; \
         rm -f {outside}/existing.txt || echo refused-delete; \
         echo discard > /dev/null && echo ok-devnull; \
         cat {outside}/existing.txt; \
         kill -0 {test_pid} 2>/dev/null || echo refused-signal",
        allowed = allowed.display(),
        outside = outside.display(),
    );
    let output = sandbox_exec(&[&allowed, Path::new("/dev/null")], &script);
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !(cfg!(target_os = "linux") && landlock_works()) {
        // Confinement was asked for and is impossible: the command must not have run at all.
        assert_eq!(output.status.code(), Some(125));
        assert!(!allowed.join("new.txt").exists());
        return;
    }
    for line in [
        "ok-inside",
        "refused-new",
        "refused-existing",
        "refused-delete",
        "ok-devnull",
        "original",
    ] {
        assert!(
            stdout.lines().any(|seen| seen == line),
            "missing {line}: {stdout}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(allowed.join("new.txt")).unwrap(),
        "inside\n"
    );
    assert!(!outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("existing.txt")).unwrap(),
        "original\n"
    );
    // Signals to processes outside the sandbox are refused where the kernel scopes them
    // (Landlock ABI 6, Linux 6.12); older kernels enforce the file rules only.
    let health_daemon = Daemon::start();
    let health = http(&health_daemon.address, "GET", "/health", &[], b"").unwrap();
    let complete = !health.json()["sandbox"]["detail"]
        .as_str()
        .unwrap()
        .contains("partial");
    if complete {
        assert!(
            stdout.lines().any(|seen| seen == "refused-signal"),
            "{stdout}"
        );
    }
}

#[test]
fn helper_usage_errors_run_nothing() {
    for arguments in [
        vec!["__sandbox-exec"],
        vec!["__sandbox-exec", "--"],
        vec!["__sandbox-exec", "--bogus", "--", "/bin/true"],
        vec!["__sandbox-exec", "/bin/true"],
    ] {
        let output = std::process::Command::new(souz_bin())
            .args(&arguments)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(125), "{arguments:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("usage: souz __sandbox-exec"),
            "{output:?}"
        );
    }
    // A program that does not exist is reported by the helper, confined or not.
    let output = sandbox_exec_program("/nonexistent/program");
    assert_eq!(output.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/nonexistent/program") || stderr.contains("cannot confine"),
        "{stderr}"
    );
}

fn sandbox_exec_program(program: &str) -> Output {
    std::process::Command::new(souz_bin())
        .args(["__sandbox-exec", "--", program])
        .output()
        .unwrap()
}

#[tokio::test]
async fn the_runner_confines_commands_to_the_roots_around_protected_paths() {
    // Wherever the repository (and so the target folder) is cloned, and with a home under the
    // system's temporary folder, where the split around protected paths must still leave the
    // command a writable $TMPDIR.
    for parent in [Path::new(env!("CARGO_TARGET_TMPDIR")), Path::new("/tmp")] {
        confines_commands_around_protected_paths(parent).await;
    }
}

async fn confines_commands_around_protected_paths(parent: &Path) {
    let dir = tempfile::tempdir_in(parent).unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    let outside = base.join("outside");
    for folder in ["project", ".ssh"] {
        std::fs::create_dir_all(home.join(folder)).unwrap();
    }
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(home.join(".ssh/authorized_keys"), "original").unwrap();
    std::fs::write(home.join("notes.txt"), "notes").unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::create_dir_all(home.join(".souz")).unwrap();
    std::fs::write(home.join(".souz/token"), "the-souz-token").unwrap();
    let config = SandboxConfig {
        roots: vec!["~".to_owned()],
        protected: vec!["~/.ssh".to_owned()],
        ..SandboxConfig::default()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Arc::new(
        Sandbox::new(&config, &paths)
            .unwrap()
            .with_confinement_helper(souz_bin()),
    );
    let confined = sandbox.confinement().kind() == souz_protocol::ConfinementKind::Landlock;
    if cfg!(target_os = "linux") {
        assert_eq!(confined, landlock_works(), "{:?}", sandbox.confinement());
    }
    let script = format!(
        "echo built > project/output.txt && echo ok-project; \
         echo more >> notes.txt && echo ok-notes; \
         echo key >> .ssh/authorized_keys || echo refused-protected; \
         echo x > {outside}/escape.txt || echo refused-outside; \
         echo x > \"$TMPDIR/souz-e2e-$$\" && echo ok-tmp; \
         rm -f \"$TMPDIR/souz-e2e-$$\"; \
         echo x > {shared}/souz-e2e-shared-$$ || echo refused-shared-tmp; \
         cat notes.txt > /dev/null && echo ok-read-notes; \
         ls .ssh | grep -q id_ed25519 && echo ok-list-protected; \
         cat .ssh/id_ed25519 || echo refused-read-key; \
         cat .souz/token || echo refused-read-token; \
         cat /proc/self/root{home}/.ssh/id_ed25519 || echo refused-read-through-proc",
        outside = outside.display(),
        home = home.display(),
        shared = std::env::temp_dir().display(),
    );
    let outcome = sandbox
        .run_command(CommandRequest::shell(script), &CancellationToken::new())
        .await;
    if !confined {
        // Nothing can confine it, and running unconfined was not allowed: it did not run.
        assert!(
            matches!(
                outcome,
                Err(souz_core::sandbox::CommandError::Unconfined(_))
            ),
            "{outcome:?}"
        );
        assert!(!home.join("project/output.txt").exists());
        return;
    }
    let outcome = outcome.unwrap();
    let stdout = &outcome.stdout.text;
    for line in [
        "ok-project",
        "ok-notes",
        "ok-tmp",
        "ok-read-notes",
        "ok-list-protected",
    ] {
        assert!(
            stdout.lines().any(|seen| seen == line),
            "missing {line}: {outcome:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(home.join("project/output.txt")).unwrap(),
        "built\n"
    );
    if confined {
        for line in [
            "refused-protected",
            "refused-outside",
            "refused-read-key",
            "refused-read-token",
            "refused-read-through-proc",
            "refused-shared-tmp",
        ] {
            assert!(
                stdout.lines().any(|seen| seen == line),
                "missing {line}: {outcome:?}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(home.join(".ssh/authorized_keys")).unwrap(),
            "original"
        );
        assert!(!outside.join("escape.txt").exists());
        assert!(!stdout.contains("PRIVATE KEY"), "{outcome:?}");
        assert!(!stdout.contains("the-souz-token"), "{outcome:?}");
    }
}

#[tokio::test]
async fn confined_commands_read_code_configuration_but_cannot_plant_hooks_shims_or_credentials() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = dir.path().canonicalize().unwrap().join("home");
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    std::fs::create_dir_all(home.join("project")).unwrap();
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = P\n").unwrap();
    std::fs::write(home.join(".npmrc"), "//registry/:_authToken=NPM-TOKEN\n").unwrap();
    let tool = home.join(".local/bin/tool");
    std::fs::write(&tool, "#!/bin/sh\necho ran-tool\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The defaults: the whole home is a root; the default protected paths apply.
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&SandboxConfig::default(), &paths)
        .unwrap()
        .with_confinement_helper(souz_bin());
    let confined = sandbox.confinement().kind() == souz_protocol::ConfinementKind::Landlock;
    let script = "cd \"$HOME\"; \
         grep -q name .gitconfig && echo ok-read-gitconfig; \
         .local/bin/tool; \
         echo x > project/a.txt && echo ok-project; \
         echo '[core] fsmonitor = evil' >> .gitconfig || echo refused-gitconfig; \
         echo x > .git-credentials || echo refused-credentials; \
         mkdir -p .config/autostart || echo refused-autostart; \
         mkdir -p .config/systemd/user || echo refused-systemd; \
         echo x > .local/bin/git || echo refused-shim; \
         cat .npmrc || echo refused-read-npmrc";
    let outcome = sandbox
        .run_command(CommandRequest::shell(script), &CancellationToken::new())
        .await;
    if !confined {
        // Nothing can confine it, and running unconfined was not allowed: it did not run.
        assert!(
            matches!(
                outcome,
                Err(souz_core::sandbox::CommandError::Unconfined(_))
            ),
            "{outcome:?}"
        );
        assert!(!home.join("project/a.txt").exists());
        return;
    }
    let outcome = outcome.unwrap();
    let stdout = &outcome.stdout.text;
    let seen = |line: &str| stdout.lines().any(|seen| seen == line);
    for line in ["ok-read-gitconfig", "ran-tool", "ok-project"] {
        assert!(seen(line), "missing {line}: {outcome:?}");
    }
    for line in [
        "refused-gitconfig",
        "refused-credentials",
        "refused-autostart",
        "refused-systemd",
        "refused-shim",
        "refused-read-npmrc",
    ] {
        assert!(seen(line), "missing {line}: {outcome:?}");
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".gitconfig")).unwrap(),
        "[user]\n\tname = P\n"
    );
    for planted in [".git-credentials", ".config", ".local/bin/git"] {
        assert!(!home.join(planted).exists(), "{planted} was created");
    }
    assert!(!stdout.contains("NPM-TOKEN"), "{outcome:?}");
}
