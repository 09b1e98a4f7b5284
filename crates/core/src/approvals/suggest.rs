//! The one-click scope offered with every pending approval, so a person can stop a storm of
//! similar prompts: the folder a file call works in, the command prefix of a command, the
//! domain of a URL — for this requester, until revoked. A file write offers the folder for
//! the writing tools together ([`ToolGroup::FileWrites`]), so a session of creates and edits
//! asks once; deleting, moving, commands and the network keep their own prompts.

use std::path::{Path, PathBuf};

use souz_protocol::language::Language;
use souz_protocol::localized;
use souz_protocol::{ArgumentMatch, Requester, ScopeKind, SuggestedScope, ToolGroup};

use crate::approvals::CallTarget;
use crate::approvals::call_target::only_writes;
use crate::shell;

/// Programs whose first argument is a subcommand worth keeping in the prefix (`git status`).
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "go",
    "docker",
    "kubectl",
    "brew",
    "apt",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "make",
    "just",
    "gh",
    "terraform",
    "systemctl",
];

/// The words of a suggestion's label in one language.
struct Say(Language);

impl Say {
    fn protected_once(&self) -> String {
        localized!(
            self.0,
            "Allow this call once (it touches a protected path)",
            "Разрешить этот вызов один раз (он касается защищённого пути)"
        )
    }

    fn command_once(&self, who: &str) -> String {
        localized!(
            self.0,
            "Allow {who} to run this command once",
            "Разрешить {who} выполнить эту команду один раз"
        )
    }

    fn folder(&self, folder: &str) -> String {
        localized!(self.0, "in {folder}", "в {folder}")
    }

    fn commands(&self, prefix: &str) -> String {
        localized!(self.0, "`{prefix} …` commands", "для команд `{prefix} …`")
    }

    fn host(&self, host: &str) -> String {
        localized!(self.0, "on {host}", "на {host}")
    }

    fn always(&self, who: &str, tool: &str, detail: &str) -> String {
        localized!(
            self.0,
            "Always allow {who} to use {tool}{detail} (until revoked)",
            "Всегда разрешать {who} использовать {tool}{detail} (пока не отозвано)"
        )
    }

    fn folder_writes(&self, who: &str, folder: &str, group: ToolGroup) -> String {
        localized!(
            self.0,
            "Always allow {who} to {} in {folder} ({}) (until revoked)",
            "Всегда разрешать {who} {} в {folder} ({}) (пока не отозвано)",
            group.action(self.0),
            group.covers(self.0)
        )
    }
}

/// The suggestion for a call by `requester` to `tool` touching `targets`, its label in
/// `language`. `display` renders a path for people (`~/x`).
pub(crate) fn suggest(
    requester: &Requester,
    tool: &str,
    targets: &[CallTarget],
    display: &dyn Fn(&Path) -> String,
    language: Language,
) -> SuggestedScope {
    let say = Say(language);
    let once = |label: String| SuggestedScope {
        scope: ScopeKind::Once,
        minutes: None,
        argument_match: ArgumentMatch::default(),
        tool_group: None,
        label,
    };
    let who = requester.label();
    if targets.iter().any(|target| {
        matches!(
            target,
            CallTarget::Path {
                protected: true,
                ..
            }
        )
    }) {
        // Protected paths always ask; a standing grant would never apply.
        return once(say.protected_once());
    }
    let mut argument_match = ArgumentMatch::default();
    let mut what = Vec::new();

    let paths: Vec<&Path> = targets
        .iter()
        .filter_map(|target| match target {
            CallTarget::Path { path, .. } => Some(path.as_path()),
            _ => None,
        })
        .collect();
    if let Some(folder) = common_folder(&paths) {
        let folder = display(&folder);
        if let Some(offer) = folder_writes(&who, tool, targets, &folder, &say) {
            return offer;
        }
        what.push(say.folder(&folder));
        argument_match.path_prefix = Some(folder);
    }

    let commands: Vec<&str> = targets
        .iter()
        .filter_map(|target| match target {
            CallTarget::Command { command, .. } => Some(command.as_str()),
            _ => None,
        })
        .collect();
    if !commands.is_empty() {
        match command_prefix(&commands) {
            Some(prefix) => {
                what.push(say.commands(&prefix));
                argument_match.command_prefix = Some(prefix);
            }
            None => return once(say.command_once(&who)),
        }
    }

    let hosts: Vec<&str> = targets
        .iter()
        .filter_map(|target| match target {
            CallTarget::Url { host, .. } => Some(host.as_str()),
            _ => None,
        })
        .collect();
    if let Some(first) = hosts.first() {
        let host = first
            .split(':')
            .next()
            .unwrap_or(first)
            .to_ascii_lowercase();
        if hosts.iter().all(|other| {
            other
                .split(':')
                .next()
                .unwrap_or(other)
                .eq_ignore_ascii_case(&host)
        }) {
            what.push(say.host(&host));
            argument_match.domain = Some(host);
        }
    }

    let detail = if what.is_empty() {
        String::new()
    } else {
        format!(" {}", what.join(", "))
    };
    SuggestedScope {
        scope: ScopeKind::Requester,
        minutes: None,
        argument_match,
        tool_group: None,
        label: say.always(&who, tool, &detail),
    }
}

/// The folder-wide offer for a file write: the writing tools together in `folder`, when the
/// call only writes (a delete or a move keeps its own grant) and the folder is not the whole
/// home folder.
fn folder_writes(
    who: &str,
    tool: &str,
    targets: &[CallTarget],
    folder: &str,
    say: &Say,
) -> Option<SuggestedScope> {
    let group = ToolGroup::FileWrites;
    (only_writes(targets) && group.contains(tool) && folder != "~").then(|| SuggestedScope {
        scope: ScopeKind::Requester,
        minutes: None,
        label: say.folder_writes(who, folder, group),
        argument_match: ArgumentMatch {
            path_prefix: Some(folder.to_owned()),
            ..ArgumentMatch::default()
        },
        tool_group: Some(group),
    })
}

/// The deepest folder containing every path (a file's folder when there is one path).
fn common_folder(paths: &[&Path]) -> Option<PathBuf> {
    let folder_of = |path: &Path| -> PathBuf {
        if path.is_dir() {
            path.to_path_buf()
        } else {
            path.parent().map(Path::to_path_buf).unwrap_or_default()
        }
    };
    let mut common = folder_of(paths.first()?);
    for path in &paths[1..] {
        let folder = folder_of(path);
        while !folder.starts_with(&common) {
            if !common.pop() {
                return None;
            }
        }
    }
    (common.components().count() > 1).then_some(common)
}

fn command_prefix(commands: &[&str]) -> Option<String> {
    let mut prefix: Option<Vec<String>> = None;
    for command in commands {
        let line = shell::parse(command);
        if line.opaque || line.invocations.is_empty() {
            return None;
        }
        for invocation in &line.invocations {
            // A grant names exactly what runs: never an environment assignment, a wrapper
            // (a grant for `env` or `sudo` would run anything) or a path relative to the
            // working folder (another folder's `./build.sh` is another program).
            if !invocation.assignments.is_empty() {
                return None;
            }
            let words = &invocation.words;
            let program = words.first()?;
            if shell::is_wrapper(program) || (program.contains('/') && !program.starts_with('/')) {
                return None;
            }
            let mut candidate = vec![program.clone()];
            if SUBCOMMAND_PROGRAMS.contains(&program.as_str())
                && let Some(sub) = words.get(1).filter(|word| !word.starts_with('-'))
            {
                candidate.push(sub.clone());
            }
            prefix = Some(match prefix {
                None => candidate,
                Some(existing) => {
                    let shared: Vec<String> = existing
                        .iter()
                        .zip(&candidate)
                        .take_while(|(a, b)| a == b)
                        .map(|(a, _)| a.clone())
                        .collect();
                    if shared.is_empty() {
                        return None;
                    }
                    shared
                }
            });
        }
    }
    prefix.map(|words| words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Access;

    fn display(path: &Path) -> String {
        match path.strip_prefix("/home/u") {
            Ok(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }

    fn claude() -> Requester {
        Requester::Mcp {
            client_name: "Claude Code".into(),
            client_version: String::new(),
            session_id: "s".into(),
            token_id: "c-claude".into(),
            token_name: "claude-code".into(),
        }
    }

    fn file(path: &str, protected: bool) -> CallTarget {
        CallTarget::Path {
            path: PathBuf::from(path),
            access: Access::Write,
            protected,
        }
    }

    fn command(line: &str) -> CallTarget {
        CallTarget::Command {
            command: line.into(),
            cwd: PathBuf::from("/home/u"),
        }
    }

    /// The suggestion in English for a call by Claude Code.
    fn offer(tool: &str, targets: &[CallTarget]) -> SuggestedScope {
        suggest(&claude(), tool, targets, &display, Language::En)
    }

    #[test]
    fn folders_commands_domains() {
        let s = offer("EditFile", &[file("/home/u/p/src/a.rs", false)]);
        assert_eq!(s.scope, ScopeKind::Requester);
        assert_eq!(s.argument_match.path_prefix.as_deref(), Some("~/p/src"));
        assert_eq!(s.tool_group, Some(ToolGroup::FileWrites));
        assert_eq!(
            s.label,
            "Always allow claude-code (MCP client \"Claude Code\") to create and edit files in \
             ~/p/src (NewFile and EditFile only: not delete, move, commands or the network; \
             protected paths still ask) (until revoked)"
        );
        let s = offer("NewFile", &[file("/home/u/p/b.rs", false)]);
        assert_eq!(s.tool_group, Some(ToolGroup::FileWrites));
        assert_eq!(s.argument_match.path_prefix.as_deref(), Some("~/p"));
        // A file right in the home folder: the offer stays the one tool's.
        let s = offer("NewFile", &[file("/home/u/notes.txt", false)]);
        assert_eq!(s.tool_group, None);
        assert_eq!(s.argument_match.path_prefix.as_deref(), Some("~"));

        let s = offer(
            "MoveFile",
            &[file("/home/u/p/a/x", false), file("/home/u/p/b/y", false)],
        );
        assert_eq!(s.argument_match.path_prefix.as_deref(), Some("~/p"));
        assert_eq!(s.tool_group, None, "a move keeps its own grant");
        // A delete, or a group tool's call that removes something, keeps its own grant too.
        let removal = CallTarget::Path {
            path: PathBuf::from("/home/u/p/x"),
            access: Access::Delete,
            protected: false,
        };
        for tool in ["DeleteFile", "EditFile"] {
            let s = offer(tool, std::slice::from_ref(&removal));
            assert_eq!(s.tool_group, None, "{tool}");
            assert_eq!(
                s.label,
                format!(
                    "Always allow claude-code (MCP client \"Claude Code\") to use {tool} in ~/p \
                     (until revoked)"
                )
            );
        }

        let s = offer("RunCommand", &[command("git status -s")]);
        assert_eq!(
            s.argument_match.command_prefix.as_deref(),
            Some("git status")
        );
        let s = offer("RunCommand", &[command("ls -la && ls x")]);
        assert_eq!(s.argument_match.command_prefix.as_deref(), Some("ls"));
        let s = offer("RunCommand", &[command("ls && rm x")]);
        assert_eq!(s.scope, ScopeKind::Once, "no shared prefix: once only");
        let s = offer("RunCommand", &[command("echo $(id)")]);
        assert_eq!(s.scope, ScopeKind::Once);
        for line in [
            "GIT_CONFIG_PARAMETERS=x git status",
            "env A=1 git status",
            "sudo git status",
            "sh -c 'git status'",
            "./git status",
            "HOME=/tmp/x; git status",
        ] {
            let s = offer("RunCommand", &[command(line)]);
            assert_eq!(s.scope, ScopeKind::Once, "{line}");
        }

        let url = CallTarget::Url {
            url: "https://docs.rs/x".into(),
            host: "Docs.rs:443".into(),
        };
        let s = suggest(
            &Requester::Cli,
            "WebPageText",
            &[url],
            &display,
            Language::En,
        );
        assert_eq!(s.argument_match.domain.as_deref(), Some("docs.rs"));
    }

    #[test]
    fn protected_paths_are_once_only() {
        let s = offer("EditFile", &[file("/home/u/.bashrc", true)]);
        assert_eq!(s.scope, ScopeKind::Once);
        assert!(s.argument_match.is_empty());
    }

    #[test]
    fn labels_are_said_in_the_persons_language_with_the_same_scope() {
        let calls: [(&str, CallTarget); 4] = [
            ("EditFile", file("/home/u/p/src/a.rs", false)),
            ("RunCommand", command("git status --short")),
            ("RunCommand", command("ls && rm x")),
            ("EditFile", file("/home/u/.bashrc", true)),
        ];
        let said: Vec<String> = calls
            .iter()
            .map(|(tool, target)| {
                let said_in = |language| {
                    suggest(
                        &claude(),
                        tool,
                        std::slice::from_ref(target),
                        &display,
                        language,
                    )
                };
                let (english, russian) = (said_in(Language::En), said_in(Language::Ru));
                assert_eq!(
                    (russian.scope, &russian.argument_match, russian.tool_group),
                    (english.scope, &english.argument_match, english.tool_group),
                    "only the words differ"
                );
                russian.label
            })
            .collect();
        assert_eq!(
            said,
            [
                "Всегда разрешать claude-code (MCP client \"Claude Code\") создавать и изменять \
                 файлы в ~/p/src (только NewFile и EditFile: не удаление, не перемещение, не \
                 команды и не сеть; защищённые пути по-прежнему спрашивают) (пока не отозвано)",
                "Всегда разрешать claude-code (MCP client \"Claude Code\") использовать RunCommand \
                 для команд `git status …` (пока не отозвано)",
                "Разрешить claude-code (MCP client \"Claude Code\") выполнить эту команду один раз",
                "Разрешить этот вызов один раз (он касается защищённого пути)",
            ]
        );
    }
}
