//! The model-backed web tools against the loopback fixture site (recorded-looking DuckDuckGo,
//! SearXNG and Brave answers, a small static site) and a scripted model.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::duckduckgo::{is_anti_bot, parse_results};
use super::research::RESCUE_SOURCES;
use crate::approvals::CallTarget;
use crate::config::{SandboxConfig, WebConfig};
use crate::sandbox::Access;
use crate::store::Store;
use crate::testing::TestHome;
use crate::testing::web::{FIXTURE_BRAVE_KEY, FixtureSite, ScriptedModel, fixtures_dir, web_tools};
use crate::tools::{Catalog, PlannedCall, ProgressSink, ToolContext, ToolError, ToolProgress};

struct Fixture {
    home: TestHome,
    ctx: ToolContext,
    catalog: Catalog,
    model: Arc<ScriptedModel>,
    progress: Arc<Mutex<Vec<ToolProgress>>>,
    store: Store,
}

async fn fixture_with(
    site: &FixtureSite,
    config: WebConfig,
    model: ScriptedModel,
    allow: Vec<String>,
) -> Fixture {
    let home = TestHome::new();
    let mut ctx = home.tool_context(&SandboxConfig {
        network_allow_hosts: allow,
        ..SandboxConfig::default()
    });
    let progress = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&progress);
    ctx.progress = ProgressSink::new(move |report| sink.lock().unwrap().push(report));
    let store = Store::open(home.path().join("souz.db")).await.unwrap();
    let model = Arc::new(model);
    let catalog = web_tools(config, Some(store.clone()), Some(Arc::clone(&model)));
    let _ = site;
    Fixture {
        home,
        ctx,
        catalog,
        model,
        progress,
        store,
    }
}

async fn fixture(site: &FixtureSite, model: ScriptedModel) -> Fixture {
    fixture_with(site, site.web_config(), model, vec![site.allow_entry()]).await
}

impl Fixture {
    async fn plan(&self, tool: &str, arguments: Value) -> Result<PlannedCall, ToolError> {
        self.catalog
            .get(tool)
            .unwrap()
            .plan(arguments, &self.ctx)
            .await
    }

    async fn call(&self, tool: &str, arguments: Value) -> Result<(String, Value), ToolError> {
        let output = self
            .plan(tool, arguments)
            .await?
            .run(self.ctx.clone())
            .await?;
        Ok((output.text, output.structured.unwrap_or(Value::Null)))
    }
}

fn site_url(site: &FixtureSite, page: &str) -> String {
    site.url(&format!("/site/{page}.html"))
}

fn ids(output: &Value) -> Vec<u64> {
    output["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|source| source["id"].as_u64().unwrap())
        .collect()
}

#[test]
fn duckduckgo_results_are_parsed_without_ads_or_duplicates() {
    let page = std::fs::read_to_string(fixtures_dir().join("ddg_results.html"))
        .unwrap()
        .replace("{{SITE_ENC}}", "https%3A%2F%2Fgarden.example");
    let hits = parse_results(&page, 10);
    let urls: Vec<&str> = hits.iter().map(|hit| hit.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://garden.example/site/sunlight.html",
            "https://garden.example/site/watering.html",
            "https://garden.example/site/soil.html",
            "https://garden.example/site/pests.html",
            "https://garden.example/site/harvest.html",
        ]
    );
    assert_eq!(
        hits[0].title,
        "How Much Sun Do Tomatoes Need? | Garden Notes"
    );
    assert!(
        hits[0]
            .snippet
            .starts_with("Tomatoes need at least six hours"),
        "{hits:?}"
    );
    assert_eq!(parse_results(&page, 2).len(), 2);
    let anomaly = std::fs::read_to_string(fixtures_dir().join("ddg_anomaly.html")).unwrap();
    assert!(is_anti_bot(&anomaly));
    assert!(!is_anti_bot(&page));
    let empty = std::fs::read_to_string(fixtures_dir().join("ddg_no_results.html")).unwrap();
    assert!(parse_results(&empty, 10).is_empty());
}

#[tokio::test]
async fn a_search_answers_citing_only_the_pages_it_read() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default();
    model.push(Ok(
        "Give tomatoes six hours of sun or more [1] and water deeply twice a week [2]. \
         Some say daily misting works [7], see https://evil.example/misting.",
    ));
    let f = fixture(&site, model).await;
    let planned = f
        .plan(
            "InternetSearch",
            json!({"query": "how to grow tomatoes", "maxSources": 3}),
        )
        .await
        .unwrap();
    assert_eq!(
        planned.plan.targets,
        [CallTarget::Url {
            url: site.url("/ddg/html/"),
            host: "127.0.0.1".into()
        }]
    );
    let output = planned.run(f.ctx.clone()).await.unwrap();
    let structured = output.structured.unwrap();
    assert_eq!(structured["status"], "COMPLETE", "{structured}");
    assert_eq!(structured["backend"], "duckduckgo");
    assert_eq!(structured["results"].as_array().unwrap().len(), 3);
    assert_eq!(ids(&structured), [1, 2]);
    assert_eq!(structured["sources"][0]["url"], site_url(&site, "sunlight"));
    assert_eq!(structured["sources"][1]["url"], site_url(&site, "watering"));
    let answer = structured["answer"].as_str().unwrap();
    assert!(
        !answer.contains("[7]") && !answer.contains("evil.example"),
        "{answer}"
    );
    assert!(answer.contains("[1]") && answer.contains("[2]"), "{answer}");
    assert!(
        structured["reportMarkdown"]
            .as_str()
            .unwrap()
            .contains("## Sources")
    );
    assert!(
        output.text.starts_with("Status: COMPLETE"),
        "{}",
        output.text
    );
    // The pages reached the model as quoted, untrusted data, without their scripts.
    let asked = f.model.asked();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].system.contains("untrusted data"));
    assert!(asked[0].user.contains(&format!(
        "<source id=\"1\" url=\"{}\"",
        site_url(&site, "sunlight")
    )));
    assert!(asked[0].user.contains("six hours of direct sunlight"));
    assert!(!asked[0].user.contains("SCRIPT_CONTENT_MUST_NOT_APPEAR"));
    // Three pages read (bounded by maxSources), one search.
    assert_eq!(site.hits("/site/"), 3);
    assert_eq!(site.hits("/ddg/"), 1);
    let progress = f.progress.lock().unwrap().clone();
    let messages: Vec<String> = progress.iter().filter_map(|p| p.message.clone()).collect();
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert!(messages[0].starts_with("Searching"));
    assert!(
        progress
            .windows(2)
            .all(|pair| pair[0].progress < pair[1].progress)
    );
}

#[tokio::test]
async fn the_anti_bot_page_is_provider_blocked_and_the_next_endpoint_is_tried() {
    let site = FixtureSite::start().await;
    let blocked = WebConfig {
        duckduckgo_urls: vec![site.url("/ddg-blocked/html/")],
        ..site.web_config()
    };
    let f = fixture_with(
        &site,
        blocked,
        ScriptedModel::default(),
        vec![site.allow_entry()],
    )
    .await;
    let (text, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["status"], "PROVIDER_BLOCKED", "{output}");
    assert!(text.contains("anti-bot"), "{text}");
    assert!(f.model.asked().is_empty(), "no model call without sources");
    assert_eq!(site.hits("/site/"), 0);

    let fallback = WebConfig {
        duckduckgo_urls: vec![site.url("/ddg-blocked/html/"), site.url("/ddg/html/")],
        ..site.web_config()
    };
    let model = ScriptedModel::default();
    model.push(Ok("Six hours of sun [1]."));
    let f = fixture_with(&site, fallback, model, vec![site.allow_entry()]).await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["status"], "COMPLETE", "{output}");
}

#[tokio::test]
async fn no_results_and_a_provider_down_have_their_statuses() {
    let site = FixtureSite::start().await;
    let f = fixture(&site, ScriptedModel::default()).await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "nothing at all"}))
        .await
        .unwrap();
    assert_eq!(output["status"], "NO_RESULTS", "{output}");

    let down = WebConfig {
        duckduckgo_urls: vec![site.url("/ddg-down/html/")],
        ..site.web_config()
    };
    let f = fixture_with(
        &site,
        down,
        ScriptedModel::default(),
        vec![site.allow_entry()],
    )
    .await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["status"], "PROVIDER_UNAVAILABLE", "{output}");
    assert_eq!(site.hits("/ddg-down/"), 3, "one request and two retries");
}

#[tokio::test]
async fn a_rate_limited_search_is_retried_after_retry_after() {
    let site = FixtureSite::start().await;
    let flaky = WebConfig {
        duckduckgo_urls: vec![site.url("/ddg-flaky/html/")],
        ..site.web_config()
    };
    let model = ScriptedModel::default();
    model.push(Ok("Sun [1]."));
    let f = fixture_with(&site, flaky, model, vec![site.allow_entry()]).await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["status"], "COMPLETE", "{output}");
    assert_eq!(site.hits("/ddg-flaky/"), 2);
}

#[tokio::test]
async fn a_result_redirecting_to_a_private_address_is_refused() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default();
    model.push(Ok(
        "Sun [1], and the admin page says [2] and http://10.255.255.1/admin.",
    ));
    let f = fixture(&site, model).await;
    let (_, output) = f
        .call(
            "InternetSearch",
            json!({"query": "tomatoes redirect", "maxSources": 3}),
        )
        .await
        .unwrap();
    assert_eq!(output["status"], "COMPLETE", "{output}");
    let urls: Vec<&str> = output["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|source| source["url"].as_str().unwrap())
        .collect();
    assert!(
        !urls
            .iter()
            .any(|url| url.contains("10.255.255.1") || url.contains("private"))
    );
    let notes = output["notes"].to_string();
    assert!(
        notes.contains("private-redirect.html could not be read"),
        "{notes}"
    );
    assert!(notes.contains("10.255.255.1"), "{notes}");
    let answer = output["answer"].as_str().unwrap();
    assert!(!answer.contains("10.255.255.1"), "{answer}");
    // The redirect was asked for; what it pointed to never reached the model.
    assert_eq!(site.hits("/site/private-redirect.html"), 1);
    assert!(!f.model.asked()[0].user.contains("10.255.255.1"));
}

#[tokio::test]
async fn searxng_on_loopback_needs_the_allow_list() {
    let site = FixtureSite::start().await;
    let searxng = WebConfig {
        search_backend: "searxng".into(),
        searxng_url: site.url("/searxng"),
        ..site.web_config()
    };
    let model = ScriptedModel::default();
    model.push(Ok("Water deeply [1]; pH 6.2 to 6.8 [2]."));
    let f = fixture_with(&site, searxng.clone(), model, vec![site.allow_entry()]).await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["status"], "COMPLETE", "{output}");
    assert_eq!(output["backend"], "searxng");
    let results = output["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "the magnet: result is dropped: {output}");
    assert_eq!(results[1]["title"], "Soil and Feeding for Tomatoes");
    assert_eq!(ids(&output), [1, 2]);

    let f = fixture_with(&site, searxng, ScriptedModel::default(), Vec::new()).await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["status"], "PROVIDER_UNAVAILABLE", "{output}");
    assert!(output["notes"].to_string().contains("refused"), "{output}");
    assert_eq!(site.hits("/searxng"), 1, "only the allowed run reached it");
}

#[tokio::test]
async fn brave_comes_first_with_a_stored_key_and_a_refused_key_falls_back() {
    let site = FixtureSite::start().await;
    let with_key = |key: &str| ScriptedModel::default().with_secret("brave", key);
    let model = with_key(FIXTURE_BRAVE_KEY);
    model.push(Ok("Pick when fully coloured [1]."));
    let f = fixture(&site, model).await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["backend"], "brave", "{output}");
    assert_eq!(output["results"][0]["title"], "When to Harvest Tomatoes");
    assert_eq!(site.hits("/ddg/"), 0);

    let model = with_key("wrong-key");
    model.push(Ok("Sun [1]."));
    let f = fixture(&site, model).await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["backend"], "duckduckgo", "{output}");
    assert_eq!(output["status"], "COMPLETE");
}

#[tokio::test]
async fn search_results_are_cached() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default();
    model.push(Ok("Sun [1]."));
    model.push(Ok("Sun [1]."));
    let f = fixture(&site, model).await;
    f.call("InternetSearch", json!({"query": "How to grow  tomatoes"}))
        .await
        .unwrap();
    f.call("InternetSearch", json!({"query": "how to grow tomatoes"}))
        .await
        .unwrap();
    assert_eq!(
        site.hits("/ddg/"),
        1,
        "the second search came from the cache"
    );
    let rows: i64 = f
        .store
        .read(|connection| {
            connection
                .query_row("SELECT COUNT(*) FROM web_search_cache", [], |row| {
                    row.get(0)
                })
                .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    assert_eq!(rows, 1);
}

#[tokio::test]
async fn a_failing_model_leaves_a_partial_answer_with_the_results() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default();
    model.push(Err("provider overloaded"));
    let f = fixture(&site, model).await;
    let (_, output) = f
        .call("InternetSearch", json!({"query": "tomatoes"}))
        .await
        .unwrap();
    assert_eq!(output["status"], "PARTIAL", "{output}");
    assert!(
        output["answer"]
            .as_str()
            .unwrap()
            .contains(&site_url(&site, "sunlight"))
    );
    assert!(output["notes"].to_string().contains("provider overloaded"));
    assert!(output["sources"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn a_failed_synthesis_is_rescued_from_fewer_shorter_sources() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default();
    model.push(Err("context length exceeded"));
    model.push(Ok(
        "Six hours of sun [1]; a page never read says otherwise [5].",
    ));
    let f = fixture(&site, model).await;
    let (_, output) = f
        .call(
            "InternetSearch",
            json!({"query": "how to grow tomatoes", "maxSources": 5}),
        )
        .await
        .unwrap();
    assert_eq!(output["status"], "PARTIAL", "{output}");
    assert_eq!(ids(&output), [1]);
    assert!(
        !output["answer"].as_str().unwrap().contains("[5]"),
        "{output}"
    );
    let notes = output["notes"].to_string();
    assert!(notes.contains("context length exceeded"), "{notes}");
    assert!(notes.contains("shortened"), "{notes}");
    let asked = f.model.asked();
    assert_eq!(asked.len(), 2);
    let sources = |user: &str| user.matches("<source id=").count();
    assert!(
        sources(&asked[0].user) > RESCUE_SOURCES,
        "{}",
        asked[0].user
    );
    assert_eq!(sources(&asked[1].user), RESCUE_SOURCES);
    assert!(asked[1].user.len() < asked[0].user.len());
}

const STRATEGY: &str = r#"Here is the plan:
```json
{"goal": "A grower's guide", "searchQueries": ["tomato sunlight", "tomato watering", "", "a", "b", "c"],
 "subQuestions": ["How much sun?", "How much water?"], "answerSections": ["Sun", "Water"]}
```"#;

#[tokio::test]
async fn research_plans_reads_cites_and_saves_a_long_report_where_planned() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default();
    model.push(Ok(STRATEGY));
    let long_answer = format!(
        "## Sun\n\nSix hours at least [1].\n\n## Water\n\nDeeply, twice a week [2]. {}",
        "Mulch keeps the soil moist [2]. ".repeat(10)
    );
    model.push(Ok(&long_answer));
    let config = WebConfig {
        report_min_chars: 200,
        ..site.web_config()
    };
    let f = fixture_with(&site, config, model, vec![site.allow_entry()]).await;
    let planned = f
        .plan(
            "InternetResearch",
            json!({"query": "grow tomatoes", "maxSources": 4, "reportPath": "~/notes/tomatoes.md"}),
        )
        .await
        .unwrap();
    let Some(CallTarget::Path {
        path: report,
        access: Access::Write,
        ..
    }) = planned.plan.targets.last().cloned()
    else {
        panic!("no write target: {:?}", planned.plan.targets);
    };
    assert!(report.ends_with("notes/tomatoes.md"), "{report:?}");
    let output = planned.run(f.ctx.clone()).await.unwrap();
    let structured = output.structured.unwrap();
    assert_eq!(structured["status"], "COMPLETE", "{structured}");
    assert_eq!(structured["strategy"]["goal"], "A grower's guide");
    let queries = structured["strategy"]["searchQueries"].as_array().unwrap();
    assert_eq!(queries.len(), 4, "blank dropped, at most four: {queries:?}");
    assert_eq!(ids(&structured), [1, 2]);
    let saved = std::fs::read_to_string(&report).unwrap();
    assert!(saved.starts_with("# grow tomatoes\n"));
    assert!(saved.contains("## Sources") && saved.contains(&site_url(&site, "sunlight")));
    assert!(
        structured["reportFilePath"]
            .as_str()
            .unwrap()
            .ends_with("tomatoes.md")
    );
    let asked = f.model.asked();
    assert_eq!(asked.len(), 2);
    assert!(
        asked[1]
            .user
            .contains("Cover: How much sun?; How much water?")
    );
    let progress = f.progress.lock().unwrap().clone();
    assert!(progress[0].message.as_deref() == Some("Planning the research"));
    assert!(
        progress
            .last()
            .unwrap()
            .message
            .as_deref()
            .unwrap()
            .starts_with("Saved the report")
    );
    // An existing report path is refused before anything runs.
    let again = f
        .plan(
            "InternetResearch",
            json!({"query": "grow tomatoes", "reportPath": "~/notes/tomatoes.md"}),
        )
        .await;
    assert!(
        matches!(again, Err(ToolError::InvalidArguments(_))),
        "{again:?}"
    );
}

#[tokio::test]
async fn research_without_a_usable_plan_searches_the_question() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default();
    model.push(Ok("I think you should search for tomatoes."));
    model.push(Ok("Short answer [1]."));
    let f = fixture(&site, model).await;
    let (_, output) = f
        .call(
            "InternetResearch",
            json!({"query": "grow tomatoes", "maxSources": 2}),
        )
        .await
        .unwrap();
    assert_eq!(output["status"], "COMPLETE", "{output}");
    assert_eq!(
        output["strategy"]["searchQueries"],
        json!(["grow tomatoes"])
    );
    assert!(output["notes"].to_string().contains("not JSON"));
    assert!(
        output["reportFilePath"].is_null(),
        "a short answer is not saved"
    );
}

const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

#[tokio::test]
async fn view_image_sends_a_local_image_within_the_limit() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default().with_vision_answer("A red tomato on a table.");
    let config = WebConfig {
        max_image_bytes: 100,
        ..site.web_config()
    };
    let f = fixture_with(&site, config, model, Vec::new()).await;
    std::fs::write(f.home.path().join("photo.png"), PNG).unwrap();
    let (text, _) = f
        .call(
            "ViewImage",
            json!({"imagePath": "~/photo.png", "question": "What is it?"}),
        )
        .await
        .unwrap();
    assert_eq!(text, "A red tomato on a table.");
    assert_eq!(f.model.images(), [("image/png".to_owned(), PNG.len())]);
    std::fs::write(f.home.path().join("big.jpg"), vec![0u8; 101]).unwrap();
    let big = f
        .plan(
            "ViewImage",
            json!({"imagePath": "~/big.jpg", "question": "What?"}),
        )
        .await;
    assert!(
        matches!(&big, Err(ToolError::InvalidArguments(message)) if message.contains("larger than 100")),
        "{big:?}"
    );
    std::fs::write(f.home.path().join("notes.txt"), "text").unwrap();
    let text_file = f
        .plan(
            "ViewImage",
            json!({"imagePath": "~/notes.txt", "question": "What?"}),
        )
        .await;
    assert!(matches!(text_file, Err(ToolError::InvalidArguments(_))));
    let outside = f
        .plan(
            "ViewImage",
            json!({"imagePath": "/etc/hostname", "question": "What?"}),
        )
        .await;
    assert!(matches!(outside, Err(ToolError::Sandbox(_))), "{outside:?}");
}

#[tokio::test]
async fn generate_image_writes_a_png_only_at_the_planned_path() {
    let site = FixtureSite::start().await;
    let model = ScriptedModel::default().with_image(PNG);
    let f = fixture_with(&site, site.web_config(), model, Vec::new()).await;
    let planned = f
        .plan(
            "GenerateImage",
            json!({"prompt": "a tomato", "outputPath": "~/art/tomato.png"}),
        )
        .await
        .unwrap();
    assert!(
        planned.plan.summary.contains("a tomato"),
        "{}",
        planned.plan.summary
    );
    let output = planned.run(f.ctx.clone()).await.unwrap();
    assert!(output.text.starts_with("Image saved to"), "{}", output.text);
    assert_eq!(
        std::fs::read(f.home.path().join("art/tomato.png")).unwrap(),
        PNG
    );
    let exists = f
        .plan(
            "GenerateImage",
            json!({"prompt": "again", "outputPath": "~/art/tomato.png"}),
        )
        .await;
    assert!(
        matches!(exists, Err(ToolError::InvalidArguments(_))),
        "{exists:?}"
    );
    let jpeg = f
        .plan(
            "GenerateImage",
            json!({"prompt": "a tomato", "outputPath": "~/art/tomato.jpg"}),
        )
        .await;
    assert!(
        matches!(jpeg, Err(ToolError::InvalidArguments(_))),
        "{jpeg:?}"
    );
}

#[tokio::test]
async fn without_a_model_the_image_tools_say_so() {
    let site = FixtureSite::start().await;
    let home = TestHome::new();
    let ctx = home.tool_context(&SandboxConfig::default());
    std::fs::write(home.path().join("photo.png"), PNG).unwrap();
    let catalog = web_tools(site.web_config(), None, None);
    let planned = catalog
        .get("ViewImage")
        .unwrap()
        .plan(
            json!({"imagePath": "~/photo.png", "question": "What?"}),
            &ctx,
        )
        .await
        .unwrap();
    let error = planned.run(ctx.clone()).await.unwrap_err();
    assert!(error.to_string().contains("no model"), "{error}");
}
