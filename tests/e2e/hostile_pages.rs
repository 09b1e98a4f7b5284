//! A hostile page read by an agent turn: the daemon keeps serving, the call's result is
//! recorded, and SIGTERM still ends the daemon within 5 s.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use souz_testkit::{Reply, openai};

use crate::chats::{
    COMPLETIONS, daemon_configured, new_chat, post, provider, run_skill, wait_event,
};

/// A `text/html` page.
fn html(body: String) -> Reply {
    Reply::Full {
        status: 200,
        headers: Vec::new(),
        content_type: "text/html; charset=utf-8".to_owned(),
        body: body.into(),
    }
}

fn nested(open: &str, close: &str, depth: usize) -> String {
    format!(
        "<!doctype html><html><body>{}deep text{}</body></html>",
        open.repeat(depth),
        close.repeat(depth)
    )
}

#[test]
fn a_hostile_page_leaves_the_daemon_serving_and_sigterm_ends_it() {
    let setup = provider();
    let pages = [
        // 120 KB: crashed the daemon (stack overflow) in the run build.
        ("/hostile/spans", nested("<span>", "</span>", 20_000)),
        // 33 KB: took 21-30 s.
        ("/hostile/divs", nested("<div>", "</div>", 3_000)),
        // 1 MB of unclosed nesting.
        (
            "/hostile/unclosed",
            format!("{}deep text", "<div>".repeat(200_000)),
        ),
    ];
    let mut calls = Vec::new();
    for (index, (path, page)) in pages.iter().enumerate() {
        setup.provider.push(path, html(page.clone()));
        let url = format!("{}{path}", setup.provider.url());
        calls.push(run_skill(
            &format!("c{index}"),
            "WebPageText",
            json!({"url": url}),
        ));
    }
    for call in calls {
        setup.provider.push(COMPLETIONS, call);
    }
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Read them."]));
    let extra = format!(
        "\n[sandbox]\nnetwork_allow_hosts = [\"{}\"]\n\n\
         [[approvals.rules]]\naction = \"allow\"\ntool = \"WebPageText\"\n",
        setup.provider.address()
    );
    let daemon = daemon_configured(&setup, &extra, |command| {
        command.env("OPENAI_API_KEY", "sk-test-e2e-key");
    });
    let chat = new_chat(&daemon);
    let posted = post(&daemon, &chat, json!({"content": "Read these pages"}));
    assert!(posted.status < 300, "{}", posted.body);
    wait_event(&daemon, &chat, "execution.finished");

    // Every page was read, and its text came back to the model.
    let last = setup
        .provider
        .requests_to(COMPLETIONS)
        .last()
        .expect("the model was asked")
        .json();
    let results: Vec<&Value> = last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|message| message["role"] == "tool")
        .collect();
    assert_eq!(results.len(), pages.len(), "{last}");
    for result in results {
        let content = result["content"].as_str().unwrap_or_default();
        assert!(content.contains("deep text"), "{content}");
    }

    let health = daemon.get("/health");
    assert_eq!(health.status, 200, "{}", health.body);
    let started = Instant::now();
    let stopped = daemon.stop("TERM");
    let took = started.elapsed();
    assert!(
        stopped.status.success(),
        "{:?}: {}",
        stopped.status,
        stopped.stderr
    );
    assert!(
        took < Duration::from_secs(5),
        "SIGTERM took {took:?}: {}",
        stopped.stderr
    );
}
