//! The policy: a pure function from a call's facts (tool, risk, requester, targets), the rules
//! of `[approvals]` and the active grants to Allow, Ask or Deny.
//!
//! Order of precedence (deny beats ask beats allow):
//! 1. a matching deny rule, then a matching deny grant → Deny;
//! 2. a matching ask rule → Ask; an unconfined command → Ask; a command asking for the network
//!    → the `network` default (unless it allows); a protected target → Ask; an unknown tool → Ask;
//! 3. a matching allow rule, then a matching allow grant → Allow;
//! 4. the default for the tool's risk class (an MCP client reading memory asks where read-only
//!    tools are allowed: see [`super::client_memory`]).
//!
//! Deny and ask matchers fire when *any* target matches; allow matchers need *every* target of
//! their kind to match (a rule allowing `~/notes` does not allow a move from `~/notes` to
//! `~/.ssh`), and never match a command line the shell reader cannot vouch for. A command
//! matches an allow rule or grant only as [`CommandPattern`] says: the same program file, no
//! environment assignment the rule does not list, no wrapper looked through. Deny and ask
//! rules compare programs by name, through wrappers, so they fire on more, never on less.
//!
//! The only effect is finding program files, through the injected [`ProgramLookup`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use souz_protocol::{
    Action, ArgumentMatch, DecisionSource, Effect, EffectivePolicy, Requester, Risk, ToolGroup,
};

use super::client_memory;
use super::command_pattern::{CommandPattern, ProgramLookup, SystemPrograms};
use crate::approvals::CallTarget;
use crate::approvals::call_target::only_writes;
use crate::config::{ApprovalsConfig, RuleConfig};
use crate::sandbox::paths::{CASE_INSENSITIVE_FILESYSTEM, FoldedPath};
use crate::sandbox::{expand_home, normalize_lexically};
use crate::shell;
use unicode_normalization::UnicodeNormalization;

/// A tool as listed, before any call's arguments are known: its name, risk class, and whether
/// the catalog knows it.
#[derive(Debug, Clone, Copy)]
pub struct ListedTool<'a> {
    pub name: &'a str,
    pub risk: Risk,
    pub known: bool,
}

/// The facts about one call the policy decides on.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    /// Tool name.
    pub tool: &'a str,
    /// Whether the tool is in the catalog (unknown tools always ask).
    pub known: bool,
    /// Its risk class.
    pub risk: Risk,
    /// Who asks.
    pub requester: &'a Requester,
    /// What the call touches.
    pub targets: &'a [CallTarget],
}

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow(DecisionSource),
    /// Ask a person.
    Ask {
        /// Why, in words.
        reason: String,
    },
    /// Refuse it.
    Deny {
        /// Why, in words.
        reason: String,
        /// What decided.
        source: DecisionSource,
    },
}

impl Decision {
    /// Allow, ask or deny.
    pub fn action(&self) -> Action {
        match self {
            Self::Allow(_) => Action::Allow,
            Self::Ask { .. } => Action::Ask,
            Self::Deny { .. } => Action::Deny,
        }
    }
}

/// A grant the policy consults (loaded from the database; expiry checked at decision time).
#[derive(Debug, Clone, PartialEq)]
pub struct GrantRule {
    /// Grant id.
    pub id: String,
    /// Allow or deny.
    pub effect: Effect,
    /// The tool it covers (exact name), or a tool group's marker ([`ToolGroup::marker`]).
    pub tool: String,
    /// Only this requester (compared by [`same_requester`]).
    pub requester: Option<Requester>,
    /// Only calls whose targets match.
    pub argument_match: ArgumentMatch,
    /// When it stops matching.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Whether two requesters are "the same requester" for grants: the same chat, the same MCP
/// client (by the token it presented, across sessions, versions and whatever its `clientInfo`
/// says; a requester without a token identity is nobody's), the same skill, or the same kind
/// otherwise.
pub(crate) fn same_requester(a: &Requester, b: &Requester) -> bool {
    matches!((requester_identity(a), requester_identity(b)), (Some(x), Some(y)) if x == y)
}

/// Who a requester is, as one key: its chat, its MCP client token (never the name the client
/// gives itself), its skill, or its kind. `None` for an MCP requester without a token identity
/// (records made before client tokens): nobody's.
pub(crate) fn requester_identity(requester: &Requester) -> Option<String> {
    match requester {
        Requester::Chat { chat_id } => Some(format!("chat:{chat_id}")),
        Requester::Mcp { token_id, .. } => {
            (!token_id.is_empty()).then(|| format!("mcp-token:{token_id}"))
        }
        Requester::Skill { skill_id } => Some(format!("skill:{skill_id}")),
        Requester::Cli => Some("cli".to_owned()),
        Requester::Api => Some("api".to_owned()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every target of the matcher's kind must match (allow).
    All,
    /// One matching target is enough (ask, deny).
    Any,
}

impl Mode {
    fn for_action(action: Action) -> Self {
        if action == Action::Allow {
            Mode::All
        } else {
            Mode::Any
        }
    }
}

#[derive(Debug, Clone)]
enum PathMatcher {
    /// The folder and everything inside it, folded like protected paths (Unicode NFC, and
    /// letter case where the filesystem ignores it), so `~/SECRET` cannot slip past a rule
    /// about `~/secret` on macOS.
    Prefix(FoldedPath, bool),
    /// A glob over absolute paths (NFC; case-insensitive where the filesystem is).
    Glob(globset::GlobMatcher),
}

impl PathMatcher {
    fn new(raw: &str, home: &Path, case_insensitive: bool) -> Option<Self> {
        let expanded = expand_home(raw.trim(), home);
        let text = expanded.to_string_lossy();
        if text.contains(['*', '?', '[', '{']) {
            let text: String = text.nfc().collect();
            globset::GlobBuilder::new(&text)
                .literal_separator(true)
                .case_insensitive(case_insensitive)
                .build()
                .ok()
                .map(|glob| Self::Glob(glob.compile_matcher()))
        } else {
            Some(Self::Prefix(
                FoldedPath::new(&normalize_lexically(&expanded), case_insensitive),
                case_insensitive,
            ))
        }
    }

    fn matches(&self, path: &Path) -> bool {
        match self {
            Self::Prefix(prefix, case_insensitive) => {
                FoldedPath::new(path, *case_insensitive).starts_with(prefix)
            }
            Self::Glob(glob) => {
                let text: String = path.to_string_lossy().nfc().collect();
                glob.is_match(Path::new(&text))
            }
        }
    }
}

/// A rule's command: its words by program name (deny, ask) and its exact pattern (allow).
#[derive(Debug, Clone)]
struct CommandMatcher {
    words: Vec<String>,
    /// `None` when the text is not one plain command: then it allows nothing.
    pattern: Option<CommandPattern>,
}

/// Argument matchers shared by rules and grants.
#[derive(Debug, Clone, Default)]
struct Matchers {
    path: Option<PathMatcher>,
    command: Option<CommandMatcher>,
    domain: Option<String>,
}

impl Matchers {
    fn new(
        path: Option<&str>,
        command: Option<&str>,
        domain: Option<&str>,
        home: &Path,
        case_insensitive: bool,
    ) -> Option<Self> {
        let path = match path {
            Some(raw) => Some(PathMatcher::new(raw, home, case_insensitive)?),
            None => None,
        };
        let command = command
            .map(|text| CommandMatcher {
                words: shell::prefix_words(text),
                pattern: CommandPattern::new(text),
            })
            .filter(|matcher| !matcher.words.is_empty());
        Some(Self {
            path,
            command,
            domain: domain.map(|d| d.trim().trim_start_matches("*.").to_ascii_lowercase()),
        })
    }

    fn matches(&self, targets: &[CallTarget], mode: Mode, programs: &dyn ProgramLookup) -> bool {
        if let Some(matcher) = &self.path {
            // A command's working folder counts for deny and ask (conservative), never for
            // allow: a rule allowing a folder for file tools must not allow any command there.
            let paths = targets.iter().filter_map(|target| match target {
                CallTarget::Path { path, .. } => Some(path.as_path()),
                CallTarget::Command { cwd, .. } if mode == Mode::Any => Some(cwd.as_path()),
                _ => None,
            });
            if !holds(paths, mode, |path| matcher.matches(path)) {
                return false;
            }
        }
        if let Some(matcher) = &self.command {
            let lines: Vec<(shell::CommandLine, &Path)> = targets
                .iter()
                .filter_map(|target| match target {
                    CallTarget::Command { command, cwd } => {
                        Some((shell::parse(command), cwd.as_path()))
                    }
                    _ => None,
                })
                .collect();
            let matched = match mode {
                Mode::All => {
                    !lines.is_empty()
                        && lines.iter().all(|(line, cwd)| {
                            matcher
                                .pattern
                                .as_ref()
                                .is_some_and(|pattern| pattern.allows(line, cwd, programs))
                        })
                }
                Mode::Any => lines.iter().any(|(line, _)| {
                    line.commands
                        .iter()
                        .any(|c| shell::starts_with(c, &matcher.words))
                }),
            };
            if !matched {
                return false;
            }
        }
        if let Some(domain) = &self.domain {
            let hosts = targets.iter().filter_map(|target| match target {
                CallTarget::Url { host, .. } => Some(host.as_str()),
                _ => None,
            });
            if !holds(hosts, mode, |host| domain_matches(host, domain)) {
                return false;
            }
        }
        true
    }

    fn is_empty(&self) -> bool {
        self.path.is_none() && self.command.is_none() && self.domain.is_none()
    }
}

fn holds<T>(items: impl Iterator<Item = T>, mode: Mode, predicate: impl Fn(&T) -> bool) -> bool {
    let items: Vec<T> = items.collect();
    match mode {
        Mode::All => !items.is_empty() && items.iter().all(&predicate),
        Mode::Any => items.iter().any(&predicate),
    }
}

/// Whether `host` is `domain` or a subdomain of it (ports ignored).
pub(crate) fn domain_matches(host: &str, domain: &str) -> bool {
    let host = host.rsplit_once(':').map_or(host, |(name, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            name
        } else {
            host
        }
    });
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == domain || host.ends_with(&format!(".{domain}"))
}

#[derive(Debug, Clone)]
struct CompiledRule {
    /// 1-based position in `[approvals] rules`.
    index: usize,
    config: RuleConfig,
    matchers: Matchers,
}

impl CompiledRule {
    fn matches(&self, facts: &CallFacts<'_>, programs: &dyn ProgramLookup) -> bool {
        let config = &self.config;
        if let Some(tool) = &config.tool
            && !wildcard_matches(tool, facts.tool)
        {
            return false;
        }
        if let Some(risk) = config.risk
            && risk != facts.risk
        {
            return false;
        }
        if let Some(requester) = &config.requester
            && !requester_matches(requester, facts.requester)
        {
            return false;
        }
        self.matchers
            .matches(facts.targets, Mode::for_action(config.action), programs)
    }

    /// A rule that depends only on the tool (and maybe risk), not on arguments or requester.
    fn is_tool_wide(&self) -> bool {
        self.matchers.is_empty() && self.config.requester.is_none()
    }

    fn source(&self) -> DecisionSource {
        DecisionSource::Rule {
            index: self.index,
            rule: self.config.describe(),
        }
    }

    fn reason(&self) -> String {
        match &self.config.note {
            Some(note) => format!("rule {} ({}): {note}", self.index, self.config.describe()),
            None => format!("rule {} ({})", self.index, self.config.describe()),
        }
    }
}

/// `*` matches any run of characters, `?` one character; case-sensitive like tool names.
pub(crate) fn wildcard_matches(pattern: &str, text: &str) -> bool {
    fn go(pattern: &[char], text: &[char]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some(('*', rest)) => (0..=text.len()).any(|skip| go(rest, &text[skip..])),
            Some(('?', rest)) => !text.is_empty() && go(rest, &text[1..]),
            Some((c, rest)) => text.first() == Some(c) && go(rest, &text[1..]),
        }
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    go(&pattern, &text)
}

fn requester_matches(pattern: &str, requester: &Requester) -> bool {
    let (kind, name) = match pattern.split_once(':') {
        Some((kind, name)) => (kind, Some(name)),
        None => (pattern, None),
    };
    match (kind, requester) {
        ("chat", Requester::Chat { chat_id }) => name.is_none_or(|n| n == chat_id),
        ("cli", Requester::Cli) | ("api", Requester::Api) => true,
        ("skill", Requester::Skill { skill_id }) => name.is_none_or(|n| n == skill_id),
        // `mcp:<name>` names a client token (its name is unique among active tokens), never
        // what the client calls itself.
        ("mcp", Requester::Mcp { token_name, .. }) => {
            name.is_none_or(|n| !token_name.is_empty() && n.eq_ignore_ascii_case(token_name))
        }
        _ => false,
    }
}

/// The compiled policy of one `[approvals]` configuration.
#[derive(Debug, Clone)]
pub struct Policy {
    config: ApprovalsConfig,
    rules: Vec<CompiledRule>,
    home: PathBuf,
    /// Whether paths are compared ignoring letter case (as the filesystem does).
    case_insensitive: bool,
    /// Where command rules find program files.
    programs: Arc<dyn ProgramLookup>,
}

impl Policy {
    /// Compiles `config`; `home` is what `~` means in rules. Rules whose patterns do not
    /// compile (config validation reports them) are skipped — for a deny rule that would be
    /// unsafe, so such a rule turns into "ask for everything it names".
    pub fn new(config: &ApprovalsConfig, home: &Path) -> Self {
        Self::with_path_case(config, home, CASE_INSENSITIVE_FILESYSTEM)
    }

    /// [`Policy::new`] with letter case in paths ignored or not (as on macOS, or Linux).
    pub fn with_path_case(config: &ApprovalsConfig, home: &Path, case_insensitive: bool) -> Self {
        let rules = config
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                let matchers = Matchers::new(
                    rule.path.as_deref(),
                    rule.command.as_deref(),
                    rule.domain.as_deref(),
                    home,
                    case_insensitive,
                );
                match matchers {
                    Some(matchers) => CompiledRule {
                        index: index + 1,
                        config: rule.clone(),
                        matchers,
                    },
                    None => CompiledRule {
                        index: index + 1,
                        config: RuleConfig {
                            action: Action::Ask,
                            path: None,
                            command: None,
                            domain: None,
                            ..rule.clone()
                        },
                        matchers: Matchers::default(),
                    },
                }
            })
            .collect();
        Self {
            config: config.clone(),
            rules,
            home: home.to_path_buf(),
            case_insensitive,
            programs: Arc::new(SystemPrograms::for_commands()),
        }
    }

    /// Finds program files for command rules through `programs` (tests supply a fake
    /// filesystem and `PATH`).
    pub fn with_programs(mut self, programs: Arc<dyn ProgramLookup>) -> Self {
        self.programs = programs;
        self
    }

    /// The configuration this policy was compiled from.
    pub fn config(&self) -> &ApprovalsConfig {
        &self.config
    }

    /// Decides one call. `now` is when, for grant expiry.
    pub fn decide(
        &self,
        facts: &CallFacts<'_>,
        grants: &[GrantRule],
        now: DateTime<Utc>,
    ) -> Decision {
        let matching = |action: Action| {
            self.rules.iter().filter(move |rule| {
                rule.config.action == action && rule.matches(facts, self.programs.as_ref())
            })
        };
        let grant_matching = |effect: Effect| {
            grants.iter().filter(move |grant| {
                grant.effect == effect && self.grant_matches(grant, facts, now)
            })
        };

        if let Some(rule) = matching(Action::Deny).next() {
            return Decision::Deny {
                reason: format!("denied by {}", rule.reason()),
                source: rule.source(),
            };
        }
        if let Some(grant) = grant_matching(Effect::Deny).next() {
            return Decision::Deny {
                reason: format!("denied by grant {}", grant.id),
                source: DecisionSource::Grant {
                    grant_id: grant.id.clone(),
                },
            };
        }
        if let Some(rule) = matching(Action::Ask).next() {
            return Decision::Ask {
                reason: format!("asked by {}", rule.reason()),
            };
        }
        if let Some(reason) = facts.targets.iter().find_map(|target| match target {
            CallTarget::Unconfined { reason } => {
                Some(format!("the command would run unconfined ({reason})"))
            }
            CallTarget::Untrusted { reason } => Some(reason.clone()),
            _ => None,
        }) {
            return Decision::Ask { reason };
        }
        if facts
            .targets
            .iter()
            .any(|target| matches!(target, CallTarget::Network))
        {
            // A command that asks for the network is a network call: rules and grants for the
            // command do not lift the network default.
            match self.config.network {
                Action::Deny => {
                    return Decision::Deny {
                        reason: "network tools are denied by default".to_owned(),
                        source: DecisionSource::Default {
                            risk: Risk::Network,
                        },
                    };
                }
                Action::Ask => {
                    return Decision::Ask {
                        reason: "the command asks for network access".to_owned(),
                    };
                }
                Action::Allow => {}
            }
        }
        if let Some(path) = facts.targets.iter().find_map(|target| match target {
            CallTarget::Path {
                path,
                protected: true,
                ..
            } => Some(path),
            _ => None,
        }) {
            return Decision::Ask {
                reason: format!("{} is a protected path", self.display(path)),
            };
        }
        if !facts.known {
            return Decision::Ask {
                reason: format!("{} is not a known tool", facts.tool),
            };
        }
        if let Some(rule) = matching(Action::Allow).next() {
            return Decision::Allow(rule.source());
        }
        if let Some(grant) = grant_matching(Effect::Allow).next() {
            return Decision::Allow(DecisionSource::Grant {
                grant_id: grant.id.clone(),
            });
        }
        let source = DecisionSource::Default { risk: facts.risk };
        match self.config.default_for(facts.risk) {
            Action::Allow if client_memory::reads_memory(facts) => Decision::Ask {
                reason: client_memory::ASK_REASON.to_owned(),
            },
            Action::Allow => Decision::Allow(source),
            Action::Ask => Decision::Ask {
                reason: format!("{} tools ask by default", risk_words(facts.risk)),
            },
            Action::Deny => Decision::Deny {
                reason: format!("{} tools are denied by default", risk_words(facts.risk)),
                source,
            },
        }
    }

    fn grant_matches(&self, grant: &GrantRule, facts: &CallFacts<'_>, now: DateTime<Utc>) -> bool {
        if !grant_covers(grant, facts) || grant.expires_at.is_some_and(|at| at <= now) {
            return false;
        }
        if let Some(requester) = &grant.requester
            && !same_requester(requester, facts.requester)
        {
            return false;
        }
        let mode = if grant.effect == Effect::Allow {
            Mode::All
        } else {
            Mode::Any
        };
        let matchers = Matchers::new(
            grant.argument_match.path_prefix.as_deref(),
            grant.argument_match.command_prefix.as_deref(),
            grant.argument_match.domain.as_deref(),
            &self.home,
            self.case_insensitive,
        );
        matchers
            .is_some_and(|matchers| matchers.matches(facts.targets, mode, self.programs.as_ref()))
    }

    /// How a tool is treated before its arguments are known: for tool listings (a tool denied
    /// by a tool-wide rule is hidden from MCP clients; one that asks is marked so).
    pub fn effective(
        &self,
        tool: ListedTool<'_>,
        grants: &[GrantRule],
        now: DateTime<Utc>,
    ) -> EffectivePolicy {
        let ListedTool {
            name: tool,
            risk,
            known,
        } = tool;
        let requester_free = Requester::Api;
        let facts = CallFacts {
            tool,
            known,
            risk,
            requester: &requester_free,
            targets: &[],
        };
        let names_tool = |rule: &&CompiledRule| {
            rule.config
                .tool
                .as_deref()
                .is_none_or(|pattern| wildcard_matches(pattern, tool))
                && rule.config.risk.is_none_or(|r| r == risk)
        };
        let relevant: Vec<&CompiledRule> = self.rules.iter().filter(names_tool).collect();
        let conditional = relevant.iter().filter(|rule| !rule.is_tool_wide()).count()
            + grants
                .iter()
                .filter(|grant| {
                    grant_names(grant, tool) && grant.expires_at.is_none_or(|at| at > now)
                })
                .count();
        let tool_wide = |action: Action| {
            relevant
                .iter()
                .find(|rule| rule.is_tool_wide() && rule.config.action == action)
        };
        let (action, reason) = if let Some(rule) = tool_wide(Action::Deny) {
            (Action::Deny, format!("denied by {}", rule.reason()))
        } else if let Some(rule) = tool_wide(Action::Ask) {
            (Action::Ask, format!("asked by {}", rule.reason()))
        } else if !known {
            (Action::Ask, format!("{tool} is not a known tool"))
        } else if let Some(rule) = tool_wide(Action::Allow) {
            (Action::Allow, format!("allowed by {}", rule.reason()))
        } else {
            match self.decide(&facts, &[], now) {
                Decision::Allow(_) => (
                    Action::Allow,
                    format!("{} tools are allowed by default", risk_words(risk)),
                ),
                Decision::Ask { reason } => (Action::Ask, reason),
                Decision::Deny { reason, .. } => (Action::Deny, reason),
            }
        };
        EffectivePolicy {
            action,
            reason,
            conditional,
        }
    }

    /// How a tool is treated for one requester before its arguments are known: what happens to
    /// a call of it that no argument-specific rule or grant covers, counting the rules and
    /// grants that name this requester (for MCP tool listings: a tool denied for a client is
    /// hidden from it, one that asks is marked so). `conditional` counts the rules and grants
    /// that may still change the outcome depending on the arguments.
    pub fn effective_for(
        &self,
        tool: ListedTool<'_>,
        requester: &Requester,
        grants: &[GrantRule],
        now: DateTime<Utc>,
    ) -> EffectivePolicy {
        let ListedTool {
            name: tool,
            risk,
            known,
        } = tool;
        let facts = CallFacts {
            tool,
            known,
            risk,
            requester,
            targets: &[],
        };
        // With no targets, a rule or grant that narrows by path, command or domain matches
        // nothing (deny and ask need one matching target, allow needs every target of its
        // kind and at least one), so `decide` answers for the calls none of them covers.
        let (action, reason) = match self.decide(&facts, grants, now) {
            Decision::Allow(DecisionSource::Default { risk }) => (
                Action::Allow,
                format!("{} tools are allowed by default", risk_words(risk)),
            ),
            Decision::Allow(DecisionSource::Grant { grant_id }) => {
                (Action::Allow, format!("allowed by grant {grant_id}"))
            }
            Decision::Allow(DecisionSource::Rule { index, rule }) => {
                (Action::Allow, format!("allowed by rule {index} ({rule})"))
            }
            Decision::Allow(_) => (Action::Allow, "allowed".to_owned()),
            Decision::Ask { reason } => (Action::Ask, reason),
            Decision::Deny { reason, .. } => (Action::Deny, reason),
        };
        let names_tool = |rule: &&CompiledRule| {
            rule.config
                .tool
                .as_deref()
                .is_none_or(|pattern| wildcard_matches(pattern, tool))
                && rule.config.risk.is_none_or(|r| r == risk)
                && rule
                    .config
                    .requester
                    .as_deref()
                    .is_none_or(|pattern| requester_matches(pattern, requester))
        };
        let conditional = self
            .rules
            .iter()
            .filter(names_tool)
            .filter(|rule| !rule.matchers.is_empty())
            .count()
            + grants
                .iter()
                .filter(|grant| {
                    grant_names(grant, tool)
                        && grant.expires_at.is_none_or(|at| at > now)
                        && !grant.argument_match.is_empty()
                        && grant
                            .requester
                            .as_ref()
                            .is_none_or(|owner| same_requester(owner, requester))
                })
                .count();
        EffectivePolicy {
            action,
            reason,
            conditional,
        }
    }

    fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }
}

/// Whether a grant names `tool`: by its name, or as one of its tool group's tools.
fn grant_names(grant: &GrantRule, tool: &str) -> bool {
    match ToolGroup::from_marker(&grant.tool) {
        Some(group) => group.contains(tool),
        None => grant.tool == tool,
    }
}

/// Whether a grant covers this call's tool. A tool group's grant covers only calls of its
/// tools inside a folder whose targets are all writes to unprotected paths (at least one), so
/// nothing but a file write in that folder ever rides on it — whatever else a tool of the
/// same name might touch.
fn grant_covers(grant: &GrantRule, facts: &CallFacts<'_>) -> bool {
    match ToolGroup::from_marker(&grant.tool) {
        None => grant.tool == facts.tool,
        Some(group) => {
            group.contains(facts.tool)
                && grant.argument_match.path_prefix.is_some()
                && only_writes(facts.targets)
        }
    }
}

fn risk_words(risk: Risk) -> &'static str {
    match risk {
        Risk::ReadOnly => "read-only",
        Risk::Write => "writing",
        Risk::Delete => "deleting",
        Risk::Network => "network",
        Risk::Exec => "command-running",
    }
}

#[cfg(test)]
mod tests;
