//! The layering test: every `crate::` path, and every `super::` path that leaves its module,
//! points into the importing module's own layer of [`crate::LAYERS`] or a layer below it.
//!
//! It reads the sources as text (no parser): comment lines are skipped, `use` groups are
//! followed through braces and across lines, and the most specific table entry that is a
//! prefix of a module path gives its layer (so `mcp::server` can sit above the rest of
//! `mcp`). Names re-exported at the crate root (`crate::Runtime`) count as the module they come
//! from, and so do the names a layered module re-exports (`crate::agent::AgentEvent` is
//! `agent::events`). A module file whose top-level module is not in the table fails the test
//! too, so a new module must be placed before it can land. Test modules (a `tests` or `*_tests`
//! segment in their path, or an inline `mod tests {` block) of any layer may use the test kit,
//! `crate::testing`, though it sits in the adapters' layer, and anything of their own
//! top-level module (a submodule's tests use the module's fixtures).
//!
//! Adapters (the gateway's routes, the MCP server) go further: they use the runtime's facade
//! and protocol types only, never a service behind it ([`BEHIND_FACADE`]) by name.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::LAYERS;

mod unsafe_sites;

/// Modules that exist only in test builds (this one) and import nothing from the crate.
const TEST_ONLY: &[&str] = &["layering"];

/// The module every test module may use whatever its layer: the test kit.
const TEST_KIT: &str = "testing";

/// Whether `module` is a test module (`agent::tests`, `agent::tests::turns`,
/// `agent::core_tools::skill_gate_tests`).
fn is_test_module(module: &[String]) -> bool {
    module
        .iter()
        .any(|segment| segment == "tests" || segment.ends_with("_tests"))
}

/// The adapters' modules: the gateway (its routes, identity extractors, WebSocket plumbing and
/// error mapper), the MCP server, and the channels (Telegram). They reach the domain through
/// the runtime's facade (`crate::runtime`: `RuntimeHandle`, `ServiceError`, `runtime::facade`)
/// and use `souz_protocol` types; test modules among them are free, and so are their parts the
/// table places below the adapters' layer (`channels::store`, the rows the facade uses).
const ADAPTERS: &[&str] = &["gateway", "mcp::server", "channels"];

/// The services behind the facade, which adapters never name.
const BEHIND_FACADE: &[&str] = &["store", "chat", "approvals", "tools", "llm", "agent", "bus"];

/// Whether `module` is an adapter module (not a test) that names `path`, a service behind the
/// facade.
fn bypasses_facade(module: &[String], path: &[String]) -> bool {
    let adapter = ADAPTERS.iter().any(|adapter| {
        let prefix: Vec<&str> = adapter.split("::").collect();
        module.len() >= prefix.len()
            && prefix.iter().zip(module).all(|(a, b)| *a == b)
            && layer_of(module) == layer_of(&strings(&prefix))
    });
    adapter
        && !is_test_module(module)
        && path
            .first()
            .is_some_and(|first| BEHIND_FACADE.contains(&first.as_str()))
}

/// A module path, segment by segment (`["mcp", "server", "calls"]`).
type ModulePath = Vec<String>;

/// One path a file names, with the line it is on.
#[derive(Debug, PartialEq, Eq)]
struct Reference {
    line: usize,
    path: ModulePath,
}

/// The layer index of `path`: the most specific entry of the table that is a prefix of it.
fn layer_of(path: &[String]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (layer, names) in LAYERS.iter().enumerate() {
        for name in names.iter() {
            let entry: Vec<&str> = name.split("::").collect();
            let matches = path.len() >= entry.len()
                && entry
                    .iter()
                    .zip(path)
                    .all(|(expected, got)| *expected == got);
            if matches && best.is_none_or(|(length, _)| entry.len() > length) {
                best = Some((entry.len(), layer));
            }
        }
    }
    best.map(|(_, layer)| layer)
}

/// The module a source file defines, from its path below `src/` (`a/b.rs` is `a::b`).
fn module_of(relative: &Path) -> ModulePath {
    let mut segments: ModulePath = relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = segments.last_mut()
        && let Some(stem) = last.strip_suffix(".rs")
    {
        *last = stem.to_owned();
    }
    if segments.last().is_some_and(|last| last == "mod") {
        segments.pop();
    }
    if segments.as_slice() == ["lib"] {
        segments.clear();
    }
    segments
}

fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// `text` with every comment line blanked (line numbers kept).
fn without_comment_lines(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("//") {
                ""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads the path (or brace group of paths) at `*position`, each prefixed by `prefix`, and
/// pushes every full path with the byte offset of its last segment.
fn read_paths(
    bytes: &[u8],
    position: &mut usize,
    prefix: ModulePath,
    out: &mut Vec<(ModulePath, usize)>,
) {
    let skip_space = |position: &mut usize| {
        while *position < bytes.len() && bytes[*position].is_ascii_whitespace() {
            *position += 1;
        }
    };
    skip_space(position);
    if bytes.get(*position) == Some(&b'{') {
        *position += 1;
        loop {
            skip_space(position);
            match bytes.get(*position) {
                None => return,
                Some(b'}') => {
                    *position += 1;
                    return;
                }
                Some(b',') => *position += 1,
                Some(_) => {
                    let before = *position;
                    read_paths(bytes, position, prefix.clone(), out);
                    if *position == before {
                        // Something this scan does not read (`*` is consumed below): skip it.
                        *position += 1;
                    }
                    // Skip an `as name` rename.
                    while *position < bytes.len() && !matches!(bytes[*position], b',' | b'}') {
                        *position += 1;
                    }
                }
            }
        }
    }
    let start = *position;
    while *position < bytes.len() && is_identifier_byte(bytes[*position]) {
        *position += 1;
    }
    if start == *position {
        if bytes.get(*position) == Some(&b'*') {
            *position += 1;
        }
        out.push((prefix, start));
        return;
    }
    let name = String::from_utf8_lossy(&bytes[start..*position]).into_owned();
    let mut path = prefix;
    if name != "self" {
        path.push(name);
    }
    if bytes[*position..].starts_with(b"::") {
        *position += 2;
        read_paths(bytes, position, path, out);
    } else {
        out.push((path, start));
    }
}

/// Every `crate::` path in `text`, and every `super::` path resolved from `module`, as full
/// paths from the crate root.
fn references(module: &[String], text: &str) -> Vec<Reference> {
    let text = without_comment_lines(text);
    let bytes = text.as_bytes();
    let line_of = |offset: usize| bytes[..offset].iter().filter(|b| **b == b'\n').count() + 1;
    let mut found = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let preceded_by_path = index > 0
            && (is_identifier_byte(bytes[index - 1]) || matches!(bytes[index - 1], b'$' | b':'));
        let rest = &bytes[index..];
        let base = if preceded_by_path {
            None
        } else if rest.starts_with(b"crate::") {
            index += "crate::".len();
            Some(Vec::new())
        } else if rest.starts_with(b"super::") {
            let mut levels = 0;
            while bytes[index..].starts_with(b"super::") {
                levels += 1;
                index += "super::".len();
            }
            module
                .len()
                .checked_sub(levels)
                .map(|keep| module[..keep].to_vec())
        } else {
            None
        };
        match base {
            Some(base) => {
                let mut paths = Vec::new();
                read_paths(bytes, &mut index, base, &mut paths);
                found.extend(paths.into_iter().map(|(path, offset)| Reference {
                    line: line_of(offset),
                    path,
                }));
            }
            None => index += 1,
        }
    }
    found
}

/// Names a module file re-exports (`pub use runtime::{Runtime, ...}`), each with its path
/// relative to that module.
fn reexports_of(lib: &str) -> HashMap<String, ModulePath> {
    let text = without_comment_lines(lib);
    let bytes = text.as_bytes();
    let mut reexports = HashMap::new();
    let mut search = 0;
    while let Some(found) = text[search..].find("pub use ") {
        let mut position = search + found + "pub use ".len();
        let mut paths = Vec::new();
        read_paths(bytes, &mut position, Vec::new(), &mut paths);
        for (path, _) in paths {
            if let Some(name) = path.last() {
                reexports.insert(name.clone(), path.clone());
            }
        }
        search = position;
    }
    reexports
}

fn rust_files(folder: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(folder)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Every import of the sources under `src` that points up the table, and every module file
/// outside it, as `file:line: what` lines.
fn violations(src: &Path) -> std::io::Result<Vec<String>> {
    let reexports = reexports_of(&std::fs::read_to_string(src.join("lib.rs"))?);
    let layered = layered_reexports(src)?;
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    files.sort();
    let mut problems = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap_or(&file);
        let module = module_of(relative);
        let Some(top) = module.first() else {
            continue;
        };
        if TEST_ONLY.contains(&top.as_str()) {
            continue;
        }
        let shown = Path::new("crates/core/src").join(relative);
        let Some(own) = layer_of(&module) else {
            problems.push(format!(
                "{}: module `{top}` is not in the layer table (crate::LAYERS in lib.rs)",
                shown.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file)?;
        for (module, reference) in references_with_inline_tests(&module, &text) {
            let path = match reference.path.first() {
                Some(first) if layer_of(&reference.path[..1]).is_none() => {
                    match reexports.get(first) {
                        Some(original) => original.clone(),
                        // A plain item of the crate root (`crate::LOCAL_USER`).
                        None => continue,
                    }
                }
                Some(_) => resolve_reexport(&layered, reference.path),
                None => continue,
            };
            if bypasses_facade(&module, &path) {
                problems.push(format!(
                    "{}:{}: adapter `{}` uses `crate::{}`; go through the runtime's facade \
                     (`RuntimeHandle`, `crate::runtime::facade`)",
                    shown.display(),
                    reference.line,
                    module.join("::"),
                    path.join("::"),
                ));
            }
            let test_kit = is_test_module(&module)
                && path
                    .first()
                    .is_some_and(|first| first == TEST_KIT || Some(first) == module.first());
            if let Some(target) = layer_of(&path)
                && target > own
                && !test_kit
            {
                problems.push(format!(
                    "{}:{}: `{}` (layer {own}) uses `crate::{}` (layer {target}), which is above it",
                    shown.display(),
                    reference.line,
                    module.join("::"),
                    path.join("::"),
                ));
            }
        }
    }
    Ok(problems)
}

/// The names re-exported by each module the table splits into layers (`agent` re-exports
/// `events::AgentEvent`), as full paths: `agent::AgentEvent` → `agent::events::AgentEvent`.
fn layered_reexports(src: &Path) -> std::io::Result<HashMap<ModulePath, ModulePath>> {
    let mut parents: Vec<&str> = LAYERS
        .iter()
        .flat_map(|names| names.iter())
        .filter_map(|name| name.split_once("::").map(|(parent, _)| parent))
        .collect();
    parents.sort_unstable();
    parents.dedup();
    let mut map = HashMap::new();
    for parent in parents {
        let file = src.join(format!("{parent}.rs"));
        if !file.is_file() {
            continue;
        }
        for (name, path) in reexports_of(&std::fs::read_to_string(file)?) {
            let mut from = strings(&[parent]);
            from.push(name);
            let mut to = strings(&[parent]);
            to.extend(path);
            map.insert(from, to);
        }
    }
    Ok(map)
}

/// `path` with a re-exported name of a layered module replaced by where it comes from.
fn resolve_reexport(layered: &HashMap<ModulePath, ModulePath>, path: ModulePath) -> ModulePath {
    if path.len() >= 2
        && let Some(original) = layered.get(&path[..2])
    {
        let mut resolved = original.clone();
        resolved.extend_from_slice(&path[2..]);
        return resolved;
    }
    path
}

/// The references of a module file, those after an inline `mod tests {` line counted as that
/// test module's (whose `super` is the file's module).
fn references_with_inline_tests(module: &[String], text: &str) -> Vec<(ModulePath, Reference)> {
    let inline = text
        .lines()
        .position(|line| line.trim_start().starts_with("mod tests {"));
    let Some(start) = inline else {
        return references(module, text)
            .into_iter()
            .map(|reference| (module.to_vec(), reference))
            .collect();
    };
    let keep = |wanted: bool| {
        text.lines()
            .enumerate()
            .map(|(index, line)| if (index >= start) == wanted { line } else { "" })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut tests = module.to_vec();
    tests.push("tests".to_owned());
    let mut found: Vec<(ModulePath, Reference)> = references(module, &keep(false))
        .into_iter()
        .map(|reference| (module.to_vec(), reference))
        .collect();
    found.extend(
        references(&tests, &keep(true))
            .into_iter()
            .map(|reference| (tests.clone(), reference)),
    );
    found
}

fn strings(path: &[&str]) -> ModulePath {
    path.iter().map(|segment| (*segment).to_owned()).collect()
}

#[test]
fn imports_point_down_the_layer_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = violations(&src).unwrap();
    assert!(
        problems.is_empty(),
        "imports that point up the layer table (move the code down, or the import up):\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_table_entry_is_a_module_once() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = Vec::new();
    for name in LAYERS.iter().flat_map(|names| names.iter()) {
        assert!(!seen.contains(name), "`{name}` is in the table twice");
        seen.push(name);
        let file = src.join(format!("{}.rs", name.replace("::", "/")));
        assert!(
            file.is_file(),
            "`{name}` names no module ({})",
            file.display()
        );
    }
}

#[test]
fn the_most_specific_entry_gives_the_layer() {
    let adapters = layer_of(&strings(&["gateway"]));
    assert_eq!(layer_of(&strings(&["mcp", "server", "calls"])), adapters);
    assert!(layer_of(&strings(&["mcp", "client"])) < adapters);
    assert_eq!(layer_of(&strings(&["host"])), Some(LAYERS.len() - 1));
    assert_eq!(layer_of(&strings(&["config", "env"])), Some(1));
    assert_eq!(layer_of(&strings(&["nowhere"])), None);
}

#[test]
fn groups_across_lines_super_paths_and_comments_are_read() {
    let text = "//! [`crate::runtime::Runtime`] in a comment is not an import\n\
                use crate::{\n    config::Config,\n    store::{self, Store},\n};\n\
                use super::super::runtime::RuntimeHandle;\n\
                let x = crate::bus::EventBus::new(s, 1);\n\
                use souz_protocol::crate_like::x; $crate::nothing;\n";
    let found = references(&strings(&["approvals", "queue", "inner"]), text);
    let expected = [
        (3, vec!["config", "Config"]),
        (4, vec!["store"]),
        (4, vec!["store", "Store"]),
        (6, vec!["approvals", "runtime", "RuntimeHandle"]),
        (7, vec!["bus", "EventBus", "new"]),
    ];
    let expected: Vec<Reference> = expected
        .into_iter()
        .map(|(line, path)| Reference {
            line,
            path: strings(&path),
        })
        .collect();
    assert_eq!(found, expected);
    let from_root = references(
        &strings(&["approvals", "queue"]),
        "use super::super::runtime;",
    );
    assert_eq!(from_root[0].path, strings(&["runtime"]));
}

/// The test fails, naming the file and line, when an upward import is added.
#[test]
fn a_layered_modules_reexports_and_inline_tests_are_placed_where_they_come_from() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "").unwrap();
    std::fs::create_dir(src.join("agent")).unwrap();
    std::fs::write(
        src.join("agent.rs"),
        "pub use events::AgentEvent;\npub use dispatch::execute;\n",
    )
    .unwrap();
    // A name the module re-exports counts as where it comes from: `events` may name
    // `crate::agent::AgentEvent` (its own) but not `crate::agent::execute` (`dispatch`).
    std::fs::write(
        src.join("agent/events.rs"),
        "use crate::agent::AgentEvent;\nfn f() { crate::agent::execute(); }\n\
         #[cfg(test)]\nmod tests {\n    use super::super::dispatch::execute;\n}\n",
    )
    .unwrap();
    // An inline test module may use anything of its own top-level module; the code above it
    // may not.
    std::fs::write(
        src.join("agent/context.rs"),
        "use super::scope::TurnScope;\n#[cfg(test)]\nmod tests {\n    \
         use crate::agent::scope::TurnScope;\n    use crate::runtime::Runtime;\n}\n",
    )
    .unwrap();
    let problems = violations(src).unwrap();
    let layer = |path: &[&str]| layer_of(&strings(path)).unwrap();
    let (events, dispatch) = (layer(&["agent", "events"]), layer(&["agent", "dispatch"]));
    let (context, scope) = (layer(&["agent", "context"]), layer(&["agent", "scope"]));
    let runtime = layer(&["runtime"]);
    assert_eq!(
        problems,
        [
            format!(
                "crates/core/src/agent/context.rs:1: `agent::context` (layer {context}) uses \
                 `crate::agent::scope::TurnScope` (layer {scope}), which is above it"
            ),
            format!(
                "crates/core/src/agent/context.rs:5: `agent::context::tests` (layer {context}) \
                 uses `crate::runtime::Runtime` (layer {runtime}), which is above it"
            ),
            format!(
                "crates/core/src/agent/events.rs:2: `agent::events` (layer {events}) uses \
                 `crate::agent::dispatch::execute` (layer {dispatch}), which is above it"
            ),
        ]
    );
}

#[test]
fn an_upward_import_is_reported_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(
        src.join("lib.rs"),
        "pub use runtime::{Runtime, RuntimeHandle};\npub const LOCAL_USER: &str = \"local\";\n",
    )
    .unwrap();
    std::fs::create_dir(src.join("approvals")).unwrap();
    std::fs::write(src.join("approvals.rs"), "use crate::store::Store;\n").unwrap();
    std::fs::write(
        src.join("approvals/queue.rs"),
        "use crate::{\n    bus::EventBus,\n    runtime::RuntimeHandle,\n};\nfn f() { crate::LOCAL_USER; crate::Runtime::start(); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("gateway.rs"),
        "use crate::runtime::RuntimeHandle;\n",
    )
    .unwrap();
    std::fs::write(src.join("elsewhere.rs"), "").unwrap();
    let problems = violations(src).unwrap();
    let runtime = layer_of(&strings(&["runtime"])).unwrap();
    let approvals = layer_of(&strings(&["approvals"])).unwrap();
    assert_eq!(
        problems,
        [
            format!(
                "crates/core/src/approvals/queue.rs:3: `approvals::queue` (layer {approvals}) \
                 uses `crate::runtime::RuntimeHandle` (layer {runtime}), which is above it"
            ),
            format!(
                "crates/core/src/approvals/queue.rs:5: `approvals::queue` (layer {approvals}) \
                 uses `crate::runtime::Runtime` (layer {runtime}), which is above it"
            ),
            "crates/core/src/elsewhere.rs: module `elsewhere` is not in the layer table \
             (crate::LAYERS in lib.rs)"
                .to_owned(),
        ]
    );
}

/// Test modules of any layer may use the test kit; other modules of a lower layer may not.
#[test]
fn only_test_modules_may_use_the_test_kit_from_below() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "").unwrap();
    std::fs::create_dir_all(src.join("agent/tests")).unwrap();
    std::fs::write(src.join("agent.rs"), "use crate::testing::TestHome;\n").unwrap();
    std::fs::write(
        src.join("agent/tests.rs"),
        "use crate::testing::TestHome;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("agent/tests/turns.rs"),
        "use crate::testing::probes::Probe;\nuse crate::gateway::router;\n",
    )
    .unwrap();
    let problems = violations(src).unwrap();
    let agent = layer_of(&strings(&["agent"])).unwrap();
    let adapters = layer_of(&strings(&["gateway"])).unwrap();
    assert_eq!(
        problems,
        [
            format!(
                "crates/core/src/agent/tests/turns.rs:2: `agent::tests::turns` (layer {agent}) \
                 uses `crate::gateway::router` (layer {adapters}), which is above it"
            ),
            format!(
                "crates/core/src/agent.rs:1: `agent` (layer {agent}) uses \
                 `crate::testing::TestHome` (layer {adapters}), which is above it"
            ),
        ]
    );
}

/// An adapter that names a service behind the facade is reported; the facade, protocol types,
/// its own gateway modules and its test modules are not.
#[test]
fn adapters_use_only_the_facade() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "").unwrap();
    std::fs::create_dir_all(src.join("gateway/routes/chats")).unwrap();
    std::fs::create_dir_all(src.join("mcp/server")).unwrap();
    std::fs::write(
        src.join("gateway/routes/chats.rs"),
        "use crate::runtime::facade::ChatUser;\nuse crate::gateway::error::ApiError;\n\
         use crate::chat::ChatUser as Direct;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("gateway/routes/chats/tests.rs"),
        "use crate::store::Store;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("mcp/server/calls.rs"),
        "use super::super::super::tools::gate::Gate;\nuse crate::runtime::RuntimeHandle;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("gateway/error.rs"),
        "use crate::runtime::ServiceError;\nuse crate::llm::service::LlmServiceError;\n",
    )
    .unwrap();
    std::fs::write(src.join("gateway/tests.rs"), "use crate::store::Store;\n").unwrap();
    std::fs::create_dir_all(src.join("channels")).unwrap();
    std::fs::write(
        src.join("channels/store.rs"),
        "use crate::store::StoreError;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("channels/telegram.rs"),
        "use crate::runtime::RuntimeHandle;\nuse crate::chat::Chats;\n",
    )
    .unwrap();
    let problems = violations(src).unwrap();
    assert_eq!(
        problems,
        [
            "crates/core/src/channels/telegram.rs:2: adapter `channels::telegram` uses \
             `crate::chat::Chats`; go through the runtime's facade (`RuntimeHandle`, \
             `crate::runtime::facade`)",
            "crates/core/src/gateway/error.rs:2: adapter `gateway::error` uses \
             `crate::llm::service::LlmServiceError`; go through the runtime's facade \
             (`RuntimeHandle`, `crate::runtime::facade`)",
            "crates/core/src/gateway/routes/chats.rs:3: adapter `gateway::routes::chats` uses \
             `crate::chat::ChatUser`; go through the runtime's facade (`RuntimeHandle`, \
             `crate::runtime::facade`)",
            "crates/core/src/mcp/server/calls.rs:1: adapter `mcp::server::calls` uses \
             `crate::tools::gate::Gate`; go through the runtime's facade (`RuntimeHandle`, \
             `crate::runtime::facade`)",
        ]
    );
}
