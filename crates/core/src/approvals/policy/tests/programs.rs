//! Allow rules and grants for commands as a table: a rule names a program file and the
//! environment it may get, not a word. Every row under "doors" was allowed by the rule
//! `allow command="git status"` (or its grant) when programs were compared by name, wrappers
//! were looked through and unlisted assignments were ignored; each must ask now.

use super::*;

fn allow_command(prefix: &str) -> RuleConfig {
    RuleConfig {
        command: Some(prefix.into()),
        ..rule(Action::Allow)
    }
}

fn run(name: &'static str, line: &str, rule: &str, expect: Action) -> Case {
    case(name, "RunCommand", Risk::Exec, vec![cmd(line)], expect).rules(vec![allow_command(rule)])
}

fn granted(name: &'static str, line: &str, prefix: &str, expect: Action) -> Case {
    case(name, "RunCommand", Risk::Exec, vec![cmd(line)], expect).grants(vec![GrantRule {
        argument_match: ArgumentMatch {
            command_prefix: Some(prefix.into()),
            ..Default::default()
        },
        ..grant("g1", Effect::Allow, "RunCommand")
    }])
}

/// Lines a `git status` rule (or another rule named in the row) used to allow.
#[allow(clippy::too_many_lines, reason = "a table of command lines")]
fn doors() -> Vec<Case> {
    use Action::Ask;
    let git = "git status";
    vec![
        // Git's configuration and repository injection through the environment.
        run(
            "git config by count",
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch /tmp/p' git status",
            git,
            Ask,
        ),
        run(
            "git config parameters",
            "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch /tmp/p'\" git status",
            git,
            Ask,
        ),
        run(
            "git config file",
            "GIT_CONFIG_GLOBAL=/tmp/x/cfg git status",
            git,
            Ask,
        ),
        run("git dir", "GIT_DIR=/tmp/evil/.git git status", git, Ask),
        run("git exec path", "GIT_EXEC_PATH=/tmp/x git status", git, Ask),
        run("home swapped inline", "HOME=/tmp/x git status", git, Ask),
        run(
            "home swapped by a statement",
            "HOME=/tmp/x; git status",
            git,
            Ask,
        ),
        run(
            "xdg config swapped",
            "XDG_CONFIG_HOME=/tmp/x git status",
            git,
            Ask,
        ),
        // Through `env`.
        run(
            "env with git config",
            "env GIT_CONFIG_PARAMETERS=x git status",
            git,
            Ask,
        ),
        run("env -i", "env -i git status", git, Ask),
        run("env -u", "env -u HOME git status", git, Ask),
        // Interpreters and toolchains.
        run(
            "python path",
            "PYTHONPATH=/tmp/x python3 -m pytest",
            "python3 -m pytest",
            Ask,
        ),
        run(
            "python startup",
            "PYTHONSTARTUP=/tmp/x.py python3 -m pytest",
            "python3 -m pytest",
            Ask,
        ),
        run(
            "node options",
            "NODE_OPTIONS='--require /tmp/x.js' node build.js",
            "node build.js",
            Ask,
        ),
        run(
            "perl options",
            "PERL5OPT=-M/tmp/x perl t.pl",
            "perl t.pl",
            Ask,
        ),
        run(
            "ruby options",
            "RUBYOPT=-r/tmp/x ruby t.rb",
            "ruby t.rb",
            Ask,
        ),
        run(
            "rustc wrapper",
            "RUSTC_WRAPPER=/tmp/x cargo test",
            "cargo test",
            Ask,
        ),
        // Another file with the same name.
        run("relative program", "./git status", git, Ask),
        run("absolute program elsewhere", "/tmp/x/git status", git, Ask),
        run("parent-relative program", "../u/git status", git, Ask),
        // Wrappers are programs of their own.
        run("command wrapper", "command git status", git, Ask),
        run("exec wrapper", "exec git status", git, Ask),
        run("nice wrapper", "nice -n 5 git status", git, Ask),
        run("nohup wrapper", "nohup git status", git, Ask),
        run("timeout wrapper", "timeout 5 git status", git, Ask),
        run("time wrapper", "time git status", git, Ask),
        run("stdbuf wrapper", "stdbuf -o0 git status", git, Ask),
        run("sudo wrapper", "sudo -E git status", git, Ask),
        run("sh -c wrapper", "sh -c 'git status'", git, Ask),
        run("bash -c wrapper", "bash -c 'git status'", git, Ask),
        // Grants suggested for `git status` are rules too.
        granted(
            "grant with git config parameters",
            "GIT_CONFIG_PARAMETERS=x git status",
            git,
            Ask,
        ),
        granted("grant with a relative program", "./git status", git, Ask),
        granted(
            "grant through env",
            "env GIT_DIR=/tmp/e git status",
            git,
            Ask,
        ),
    ]
}

/// Lines that asked before and still ask, and lines a rule still allows.
#[allow(clippy::too_many_lines, reason = "a table of command lines")]
fn kept() -> Vec<Case> {
    use Action::{Allow, Ask};
    let git = "git status";
    vec![
        run(
            "loader preload",
            "LD_PRELOAD=/tmp/x.so git status",
            git,
            Ask,
        ),
        run("loader path", "LD_LIBRARY_PATH=/tmp/x git status", git, Ask),
        run(
            "macOS loader",
            "DYLD_INSERT_LIBRARIES=/tmp/x.dylib git status",
            git,
            Ask,
        ),
        run("bash env", "BASH_ENV=/tmp/x git status", git, Ask),
        run(
            "PATH override",
            "PATH=/home/u/bin:/usr/bin git status",
            git,
            Ask,
        ),
        run(
            "env PATH override",
            "env PATH=/home/u/bin git status",
            git,
            Ask,
        ),
        run(
            "ssh command",
            "GIT_SSH_COMMAND='sh -c id' git status",
            git,
            Ask,
        ),
        run(
            "a rule cannot list PATH",
            "PATH=/x git status",
            "PATH=/x git status",
            Ask,
        ),
        run("plain", "git status -s", git, Allow).by("rule:1"),
        run(
            "absolute path to the same file",
            "/usr/bin/git status",
            git,
            Allow,
        ),
        run("a link to the same file", "/bin/git status", git, Allow),
        run(
            "the same file under another name (multi-call programs act on it)",
            "/home/u/bin/git-link status",
            git,
            Ask,
        ),
        run(
            "a chain of the same program",
            "git status && git status -s",
            git,
            Allow,
        ),
        run(
            "an assignment the rule lists",
            "RUST_LOG=debug cargo test",
            "RUST_LOG=debug cargo test",
            Allow,
        ),
        run(
            "a listed name with another value",
            "RUST_LOG=trace cargo test",
            "RUST_LOG=debug cargo test",
            Ask,
        ),
        run(
            "a rule for a relative program means that file",
            "./git status",
            "/home/u/git status",
            Allow,
        ),
        run("a builtin by name", "echo hi", "echo", Allow),
        run(
            "a builtin rule is not a file elsewhere",
            "/tmp/x/echo hi",
            "echo",
            Ask,
        ),
        run(
            "a program that does not exist",
            "gti status",
            "gti status",
            Ask,
        ),
        run("a glob in the program", "/usr/bin/gi? status", git, Ask),
        granted("grant plain", "git status", git, Allow).by("grant:g1"),
        // Deny rules still look through wrappers and assignments.
        case(
            "deny sees through env and assignments",
            "RunCommand",
            Risk::Exec,
            vec![cmd("A=1 env B=2 nice rm -rf /")],
            Action::Deny,
        )
        .rules(vec![RuleConfig {
            command: Some("rm".into()),
            ..rule(Action::Deny)
        }]),
    ]
}

#[test]
fn command_rules_match_the_program_file_and_its_environment() {
    let doors = doors();
    assert!(doors.len() >= 20);
    let mut cases = doors;
    cases.extend(kept());
    let failures = run_table(&cases);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
