//! Souz's MCP client (the one in front of external servers, `mcp::client`) under the official
//! conformance suite's client side: `conformance client --command "souz-conformance
//! conformance-client" --suite auth` runs each OAuth scenario's authorization and resource
//! servers and Souz's client against them (discovery, dynamic or pre-registered clients, PKCE,
//! scopes and step-up, token endpoint authentication, the 2025-03-26 fallbacks). The
//! `souz-conformance` build is made by `scripts/test.sh` (`--features conformance`).

use super::*;

/// Scenarios of the auth suite that pass outright: every one but those listed under `client:`
/// in `tests/clients/conformance-baseline.yml` (the suite fails the run on a listed scenario
/// that passes, so the list stays exact).
const PASSING_AUTH_SCENARIOS: usize = 13;

#[test]
fn the_mcp_client_passes_the_conformance_auth_suite() {
    let program = souz_bin().with_file_name("souz-conformance");
    assert!(
        program.exists(),
        "{} is missing: run scripts/test.sh, which builds it with `--features conformance`",
        program.display()
    );
    let output_dir = tempfile::tempdir().unwrap();
    let suite = installed(clients().join("node_modules/@modelcontextprotocol/conformance"));
    let command = format!("{} conformance-client", program.display());
    let output = Command::new(node())
        .arg(suite.join("dist/index.js"))
        .args(["client", "--command", &command, "--suite", "auth"])
        .arg("--expected-failures")
        .arg(clients().join("conformance-baseline.yml"))
        .arg("-o")
        .arg(output_dir.path())
        .env_remove("SOUZ_HOME")
        .env_remove("SOUZ_PORT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "conformance auth suite:\n{stdout}\n{stderr}"
    );
    let passed: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("✓ auth/"))
        .collect();
    assert_eq!(
        passed.len(),
        PASSING_AUTH_SCENARIOS,
        "every auth scenario not in the baseline ran and passed:\n{stdout}"
    );
    assert!(
        passed
            .iter()
            .all(|line| line.contains(" 0 failed") && !line.contains("warning")),
        "{stdout}"
    );
}
