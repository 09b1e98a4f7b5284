//! The core tools' answers, shape by shape, against a real gate over the probe tools.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::*;
use crate::agent::events::NoSink;
use souz_protocol::language::Language;
use souz_protocol::memory::RecallMode;

use crate::agent::memory::{
    FoundFacts, MemoryError, MemoryFact, MemoryScope, MemorySearch, NoMemory, RecalledMemory,
};
use crate::agent::skills::{NoSkillBundles, SkillBundles, category_names};
use crate::agent::tests::{Fixture, fixture};

/// Every catalog tool, for [`core_call`].
static ALL_TOOLS: ToolFilter = ToolFilter::all();

/// A call of a core tool in the chat `chat` of `local`, through `f`'s gate, with every tool.
pub(super) fn core_call<'a>(
    f: &'a Fixture,
    knowledge: &'a KnowledgeStore,
    memory: &'a dyn MemoryRecall,
    bundles: &'a dyn SkillBundles,
) -> CoreCall<'a> {
    CoreCall {
        chat_id: "chat",
        owner: "local",
        tool_call_id: "call-1",
        gate: &f.gate,
        tools: &ALL_TOOLS,
        knowledge,
        memory,
        sink: &NoSink,
        bundles,
        parking: None,
        language: souz_protocol::language::Language::En,
    }
}

async fn answer(
    f: &Fixture,
    memory: &dyn MemoryRecall,
    tool: CoreTool,
    arguments: Value,
) -> (Value, bool) {
    let knowledge = KnowledgeStore::new(f.store.clone());
    let call = core_call(f, &knowledge, memory, &NoSkillBundles);
    let output = tool.run(&call, arguments).await;
    (
        serde_json::from_str(&output.content).unwrap(),
        output.is_error,
    )
}

#[tokio::test]
async fn get_skill_by_name_answers_details_or_a_coded_error() {
    let f = fixture().await;
    let (found, is_error) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillByName,
        json!({"skillId": " ReadNote "}),
    )
    .await;
    assert!(!is_error);
    let spec = f.gate.catalog().get("ReadNote").unwrap().spec().clone();
    assert_eq!(
        found,
        json!({
            "skill": {
                "skillId": "ReadNote",
                "name": "ReadNote",
                "description": "A probe tool for agent tests.",
                "inputSchema": spec.input_schema,
                "returnSchema": null,
                "fewShotExamples": [],
            },
            "error": null,
        })
    );
    let cases = [
        (
            json!({"skillId": "  "}),
            "invalid_skill_id",
            "Skill ID must not be blank.",
        ),
        (
            json!({"skillId": "Forbidden"}),
            "skill_disabled",
            "Tool-backed Skill is disabled: Forbidden",
        ),
        (
            json!({"skillId": "Nope"}),
            "skill_not_found",
            "Skill is unavailable: Nope",
        ),
    ];
    for (arguments, code, message) in cases {
        let (lookup, is_error) = answer(&f, &NoMemory, CoreTool::GetSkillByName, arguments).await;
        assert!(is_error);
        assert_eq!(lookup["skill"], Value::Null);
        assert_eq!(lookup["error"]["code"], code);
        assert_eq!(lookup["error"]["message"], message);
    }
    let (bad, _) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillByName,
        json!({"skill": "ReadNote"}),
    )
    .await;
    assert_eq!(bad["error"]["code"], "invalid_skill_id");
    assert!(bad["error"]["message"].as_str().unwrap().contains("skill"));
}

#[tokio::test]
async fn category_lookups_list_enabled_tools_sorted() {
    let f = fixture().await;
    let (names, _) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillsNamesByCategory,
        json!({"category": "files"}),
    )
    .await;
    assert_eq!(
        names,
        json!({"category": "FILES", "skillNames": ["ReadNote", "WriteNote"], "error": null})
    );
    let (names, _) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillsNamesByCategory,
        json!({"category": "Commands"}),
    )
    .await;
    assert_eq!(
        names["skillNames"],
        json!(["Wait"]),
        "a disabled tool is not listed"
    );
    let (names, is_error) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillsNamesByCategory,
        json!({"category": "SOUZ"}),
    )
    .await;
    assert_eq!(
        (names["skillNames"].clone(), is_error),
        (json!([]), false),
        "a known empty category"
    );
    let (missing, is_error) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillsNamesByCategory,
        json!({"category": "GAMES"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(
        missing,
        json!({"category": null, "skillNames": [], "error": {"skillId": null, "code": "category_not_found", "message": "Unknown Skill category: GAMES"}})
    );
    let (blank, _) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillsNamesByCategory,
        json!({"category": " "}),
    )
    .await;
    assert_eq!(blank["error"]["code"], "invalid_category");

    let (skills, is_error) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillsByCategory,
        json!({"category": "FILES"}),
    )
    .await;
    assert!(!is_error);
    assert_eq!(skills["category"], "FILES");
    let ids: Vec<&str> = skills["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["skillId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ReadNote", "WriteNote"]);
    assert_eq!(skills["errors"], json!([]));
    let (unknown, is_error) = answer(
        &f,
        &NoMemory,
        CoreTool::GetSkillsByCategory,
        json!({"category": "nothing"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(unknown["category"], Value::Null);
    assert_eq!(unknown["errors"][0]["code"], "category_not_found");
}

#[tokio::test]
async fn run_skill_command_reports_why_it_cannot_run() {
    let f = fixture().await;
    let cases = [
        (json!({"skillId": ""}), "invalid_skill_id"),
        (json!({"skillId": "Forbidden"}), "skill_disabled"),
        (json!({"skillId": "Nope"}), "skill_not_found"),
        (
            json!({"skillId": "ReadNote", "args": {}}),
            "skill_invocation_failed",
        ),
    ];
    for (arguments, code) in cases {
        let (result, is_error) =
            answer(&f, &NoMemory, CoreTool::RunSkillCommand, arguments.clone()).await;
        assert!(is_error);
        assert_eq!(result["error"]["code"], code, "{arguments}");
    }
    assert!(f.probes.runs().is_empty());
    let knowledge = KnowledgeStore::new(f.store.clone());
    let call = core_call(&f, &knowledge, &NoMemory, &NoSkillBundles);
    // Arguments sent as a JSON string are accepted like an object.
    let output = CoreTool::RunSkillCommand
        .run(
            &call,
            json!({"skillId": "ReadNote", "arguments": "{\"path\":\"x\"}"}),
        )
        .await;
    assert_eq!(output, CoreOutput::ok("ReadNote done for x"));
    assert_eq!(f.probes.runs(), ["ReadNote"]);
}

/// One fact, found the way it says.
struct OneFact(RecallMode);

impl MemoryRecall for OneFact {
    fn recall<'a>(
        &'a self,
        _: &'a MemoryScope,
        _: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecalledMemory>, MemoryError>> {
        Box::pin(async { Ok(None) })
    }

    fn search<'a>(
        &'a self,
        request: &'a MemorySearch,
    ) -> BoxFuture<'a, Result<FoundFacts, MemoryError>> {
        Box::pin(async move {
            assert_eq!(request.scope.chat_id, "chat");
            assert_eq!(
                request.lexical_hints,
                ["editor"],
                "hints are trimmed and deduplicated"
            );
            assert_eq!(request.max_facts, 8);
            Ok(FoundFacts {
                facts: vec![MemoryFact {
                    fact_id: "f1".into(),
                    scope: "global:global".into(),
                    kind: "PREFERENCE".into(),
                    title: "Editor".into(),
                    body: "Prefers Helix".into(),
                    score: 0.9,
                }],
                mode: self.0,
            })
        })
    }
}

#[tokio::test]
async fn search_memory_checks_arguments_first_then_asks_memory() {
    let f = fixture().await;
    let too_many: Vec<String> = (0..17).map(|index| format!("hint {index}")).collect();
    let invalid = [
        json!({"lexicalHints": ["a"]}),
        json!({"semanticQuery": " ", "lexicalHints": ["a"]}),
        json!({"semanticQuery": "q", "lexicalHints": []}),
        json!({"semanticQuery": "q", "lexicalHints": ["a", " "]}),
        json!({"semanticQuery": "q", "lexicalHints": too_many}),
        json!({"semanticQuery": "q", "lexicalHints": ["a"], "maxFacts": 0}),
        json!({"semanticQuery": "q", "lexicalHints": ["a"], "maxFacts": 17}),
    ];
    for arguments in invalid {
        let (result, is_error) =
            answer(&f, &NoMemory, CoreTool::SearchMemory, arguments.clone()).await;
        assert!(is_error);
        assert_eq!(result["error"]["code"], "invalid_arguments", "{arguments}");
        assert_eq!(result["facts"], json!([]));
    }
    let valid =
        json!({"semanticQuery": "the person's editor", "lexicalHints": [" editor ", "editor"]});
    let (result, _) = answer(&f, &NoMemory, CoreTool::SearchMemory, valid.clone()).await;
    assert_eq!(
        result,
        json!({"facts": [], "error": {"code": "memory_unavailable", "message": "Persistent memory is unavailable in this runtime."}})
    );
    let hybrid = OneFact(RecallMode::Hybrid);
    let (result, is_error) = answer(&f, &hybrid, CoreTool::SearchMemory, valid.clone()).await;
    assert!(!is_error);
    assert_eq!(
        result,
        json!({"facts": [{"factId": "f1", "scope": "global:global", "kind": "PREFERENCE", "title": "Editor", "body": "Prefers Helix", "score": 0.9}], "error": null, "mode": "hybrid"})
    );
}

#[tokio::test]
async fn search_memory_says_when_it_matched_by_words_only_in_the_persons_language() {
    let f = fixture().await;
    let lexical = OneFact(RecallMode::Lexical);
    let valid = json!({"semanticQuery": "the person's editor", "lexicalHints": ["editor"]});
    let (knowledge, bundles) = (KnowledgeStore::new(f.store.clone()), NoSkillBundles);
    for (language, expected) in [
        (Language::En, "Matched by words only"),
        (Language::Ru, "Найдено только по словам"),
    ] {
        let call = CoreCall {
            language,
            ..core_call(&f, &knowledge, &lexical, &bundles)
        };
        let output = CoreTool::SearchMemory.run(&call, valid.clone()).await;
        assert!(!output.is_error);
        let result: Value = serde_json::from_str(&output.content).unwrap();
        assert_eq!(result["mode"], "lexical");
        assert_eq!(result["facts"][0]["factId"], "f1");
        let note = result["note"].as_str().unwrap_or_default();
        assert!(note.starts_with(expected), "{language:?}: {note}");
    }
}

#[test]
fn specs_name_the_seven_tools_with_strict_schemas() {
    let names: Vec<&str> = CoreTool::ALL.iter().map(|tool| tool.name()).collect();
    assert_eq!(
        names,
        [
            "GetSkillByName",
            "GetSkillsByCategory",
            "GetSkillsNamesByCategory",
            "GetKnowledge",
            "SearchKnowledge",
            "SearchMemory",
            "RunSkillCommand"
        ]
    );
    for tool in CoreTool::ALL {
        assert_eq!(CoreTool::parse(tool.name()), Some(tool));
        let spec = tool.spec();
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert_eq!(
            spec.parameters["additionalProperties"], false,
            "{}",
            spec.name
        );
        assert!(!spec.description.is_empty());
    }
    assert_eq!(
        category_names(),
        [
            "FILES",
            "WEB_SEARCH",
            "DATA_ANALYTICS",
            "CALCULATOR",
            "COMMANDS",
            "SOUZ"
        ]
    );
    let category =
        CoreTool::GetSkillsByCategory.spec().parameters["properties"]["category"].clone();
    assert_eq!(category["enum"], json!(category_names()));
    assert_eq!(category["description"], "Skill category name.");
    let knowledge = CoreTool::GetKnowledge.spec().parameters;
    assert_eq!(knowledge["required"], json!(["knowledgeId"]));
    let search = CoreTool::SearchKnowledge.spec().parameters;
    assert_eq!(search["required"], json!(["knowledgeId", "regex"]));
    assert!(
        search["properties"]["charsBefore"]["description"]
            .as_str()
            .unwrap()
            .contains("4096")
    );
    assert_eq!(CoreTool::parse("ReadNote"), None);
    assert!(CoreTool::GetKnowledge.always_inline() && !CoreTool::RunSkillCommand.always_inline());
}

/// Writes a skill folder `name` with one script under `folder`.
fn write_skill(folder: &std::path::Path, name: &str, script: &str) -> std::path::PathBuf {
    let dir = folder.join(name);
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: About {name}.\n---\nStep one.\n"),
    )
    .unwrap();
    std::fs::write(dir.join("scripts/run.sh"), script).unwrap();
    dir
}

/// Consents to the installed bundle of skill `id` (see `skill_gate_tests`), so its commands
/// do not wait for an approval.
async fn consent(f: &Fixture, registry: &crate::skills::registry::Registry, id: &str) {
    let hash = registry.find(id).await.unwrap().unwrap().hash;
    let tool = crate::skills::command_tool::tool_name(id, &hash);
    f.gate
        .approvals()
        .grant_standing(&tool, None)
        .await
        .unwrap();
}

/// `GetSkillByName` over the registry: an installed skill's instructions, a disabled one, a
/// rejected import, and the inventory's ids.
#[tokio::test]
async fn get_skill_by_name_answers_file_backed_skills_from_the_registry() {
    let f = fixture().await;
    let temp = tempfile::tempdir().unwrap();
    let home = temp.path().join("home");
    let registry = crate::skills::registry::Registry::new(
        &temp.path().join("souz"),
        &home,
        &[],
        f.store.clone(),
    );
    let write = write_skill;
    let notes = write(temp.path(), "notes", "echo hi\n");
    registry.install_folder(&notes).await.unwrap();
    write(&home.join(".claude/skills"), "wiper", "rm -rf ~/\n");
    write(&home.join(".agents/skills"), "imported", "echo hi\n");
    let knowledge = KnowledgeStore::new(f.store.clone());
    let call = core_call(&f, &knowledge, &NoMemory, &registry);
    let ask = |id: &str| {
        let arguments = json!({"skillId": id});
        let call = &call;
        async move {
            let output = CoreTool::GetSkillByName.run(call, arguments).await;
            (
                serde_json::from_str::<Value>(&output.content).unwrap(),
                output.is_error,
            )
        }
    };
    let (found, is_error) = ask("notes").await;
    assert!(!is_error, "{found}");
    assert_eq!(found["skill"]["skillMarkdownBody"], "Step one.");
    assert_eq!(found["skill"]["supportingFiles"], json!(["scripts/run.sh"]));
    // Its scripts run through the sandbox's command runner; a path out of the bundle is
    // refused before anything runs.
    let output = CoreTool::RunSkillCommand
        .run(
            &call,
            json!({"skillId": "notes", "arguments": {"scriptPath": "../notes/scripts/run.sh"}}),
        )
        .await;
    assert!(output.is_error);
    assert!(
        output.content.contains("inside the skill's folder"),
        "{}",
        output.content
    );
    consent(&f, &registry, "notes").await;
    let output = CoreTool::RunSkillCommand
        .run(
            &call,
            json!({"skillId": "notes", "arguments": {"scriptPath": "scripts/run.sh"}}),
        )
        .await;
    // This kit's sandbox has no confinement helper: the runner refuses rather than run it
    // unconfined (the e2e tests run it confined).
    assert!(output.is_error);
    assert!(
        output.content.contains("commands are refused"),
        "{}",
        output.content
    );
    // An imported skill offers its instructions, but its scripts do not run until installed.
    let (imported, is_error) = ask("imported").await;
    assert!(!is_error, "{imported}");
    let output = CoreTool::RunSkillCommand
        .run(
            &call,
            json!({"skillId": "imported", "arguments": {"scriptPath": "scripts/run.sh"}}),
        )
        .await;
    assert!(output.is_error);
    assert!(
        output.content.contains("not installed"),
        "{}",
        output.content
    );
    let (rejected, is_error) = ask("wiper").await;
    assert!(is_error);
    assert_eq!(
        rejected["error"]["code"], "skill_validation_rejected",
        "{rejected}"
    );
    // The inventory lists usable skills only (not the rejected one).
    assert_eq!(
        registry.inventory_ids("local").await.unwrap(),
        ["imported".to_owned(), "notes".to_owned()]
    );
    registry.set_enabled("notes", false).await.unwrap();
    let (disabled, _) = ask("notes").await;
    assert_eq!(disabled["error"]["code"], "skill_disabled");
    let (missing, _) = ask("ghost").await;
    assert_eq!(missing["error"]["code"], "skill_not_found");
    assert_eq!(
        registry.inventory_ids("local").await.unwrap(),
        ["imported".to_owned()]
    );
}
