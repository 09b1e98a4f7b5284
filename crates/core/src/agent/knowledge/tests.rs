//! Knowledge: the offload boundary in bytes, head/tail retention on whole characters, UTF-16
//! offsets, regex semantics per segment, and every error code.

use serde_json::{Value, json};

use super::retrieval::{compile, find, get_knowledge, search_knowledge};
use super::*;
use crate::testing::TestHome;

async fn store() -> (TestHome, KnowledgeStore) {
    let home = TestHome::new();
    let store = home.store().await;
    (home, KnowledgeStore::new(store))
}

fn parse(content: &str) -> Value {
    serde_json::from_str(content).unwrap()
}

#[tokio::test]
async fn exactly_8192_bytes_stay_inline_and_8193_are_offloaded() {
    let (_dir, store) = store().await;
    // 'ж' is two bytes in UTF-8 and one UTF-16 unit.
    let inline = "ж".repeat(4096);
    assert_eq!(inline.len(), 8192);
    assert_eq!(
        offload(&store, "chat", "ReadFile", inline.clone()).await,
        inline,
        "8192 bytes stay"
    );
    let over = format!("{inline}!");
    assert_eq!(over.len(), 8193);
    let reference = parse(&offload(&store, "chat", "ReadFile", over.clone()).await);
    let mut keys: Vec<&str> = reference
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "instruction",
            "knowledgeId",
            "originalLength",
            "sourceTool",
            "storedLength",
            "truncated"
        ]
    );
    assert_eq!(reference["sourceTool"], "ReadFile");
    assert_eq!(reference["originalLength"], 4097, "UTF-16 units, not bytes");
    assert_eq!(reference["storedLength"], 4097);
    assert_eq!(reference["truncated"], false);
    let id = reference["knowledgeId"].as_str().unwrap();
    let entry = store.get("chat", id).await.unwrap().unwrap();
    assert_eq!(entry.content, KnowledgeContent::Complete(over));
}

#[tokio::test]
async fn the_reference_keeps_the_original_key_order() {
    let (_dir, store) = store().await;
    let text = offload(&store, "chat", "RunSkillCommand", "x".repeat(9000)).await;
    let order: Vec<usize> = [
        "\"knowledgeId\"",
        "\"sourceTool\"",
        "\"originalLength\"",
        "\"storedLength\"",
        "\"truncated\"",
        "\"instruction\"",
    ]
    .iter()
    .map(|key| text.find(key).unwrap())
    .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{text}");
    assert!(text.contains(REFERENCE_INSTRUCTION));
}

#[tokio::test]
async fn discovery_and_knowledge_results_are_never_offloaded() {
    let (_dir, store) = store().await;
    let big = "y".repeat(20_000);
    for tool in [
        "GetSkillByName",
        "GetSkillsByCategory",
        "GetSkillsNamesByCategory",
        "GetKnowledge",
        "SearchKnowledge",
    ] {
        assert_eq!(
            offload(&store, "chat", tool, big.clone()).await,
            big,
            "{tool}"
        );
    }
    for tool in ["SearchMemory", "RunSkillCommand", "ListFiles"] {
        assert_ne!(
            offload(&store, "chat", tool, big.clone()).await,
            big,
            "{tool}"
        );
    }
}

#[tokio::test]
async fn without_a_conversation_or_with_a_broken_store_results_stay_inline() {
    let (_dir, store) = store().await;
    let big = "z".repeat(10_000);
    assert_eq!(offload(&store, "  ", "ListFiles", big.clone()).await, big);
    store.store.close().await.unwrap();
    assert_eq!(offload(&store, "chat", "ListFiles", big.clone()).await, big);
}

#[test]
fn long_results_keep_head_and_tail_on_whole_characters() {
    // Three-byte characters never divide 512 KiB, so both cuts fall inside a character.
    let content = "€".repeat(RETAIN_LIMIT_BYTES / 3 + 10);
    assert!(content.len() > RETAIN_LIMIT_BYTES);
    let KnowledgeContent::Truncated { head, tail } = KnowledgeContent::retain(&content) else {
        panic!("over 1 MiB must be truncated");
    };
    assert_eq!(head.len(), SEGMENT_BUDGET_BYTES - SEGMENT_BUDGET_BYTES % 3);
    assert_eq!(tail.len(), SEGMENT_BUDGET_BYTES - SEGMENT_BUDGET_BYTES % 3);
    assert!(head.chars().all(|c| c == '€') && tail.chars().all(|c| c == '€'));
    assert!(
        head.len() + tail.len() < content.len(),
        "the middle is omitted"
    );

    let exactly = "a".repeat(RETAIN_LIMIT_BYTES);
    assert_eq!(
        KnowledgeContent::retain(&exactly),
        KnowledgeContent::Complete(exactly.clone()),
        "1 MiB is kept whole"
    );
    let ascii = "a".repeat(RETAIN_LIMIT_BYTES + 1);
    let KnowledgeContent::Truncated { head, tail } = KnowledgeContent::retain(&ascii) else {
        panic!("one byte over is truncated");
    };
    assert_eq!(
        (head.len(), tail.len()),
        (SEGMENT_BUDGET_BYTES, SEGMENT_BUDGET_BYTES)
    );
}

/// A result of `head_units` ASCII, then `middle`, then emoji (two UTF-16 units each) up to
/// past the limit, so the tail holds surrogate pairs.
fn mixed_result() -> String {
    let mut content = "h".repeat(SEGMENT_BUDGET_BYTES - 1);
    content.push('é'); // two bytes: straddles the head budget
    content.push_str(&"m".repeat(1000));
    content.push_str(&"😀".repeat(SEGMENT_BUDGET_BYTES / 4 + 1));
    content
}

#[tokio::test]
async fn get_knowledge_reads_head_and_tail_with_utf16_offsets() {
    let (_dir, store) = store().await;
    let content = mixed_result();
    let entry = store.put("chat", "ReadFile", &content).await.unwrap();
    let KnowledgeContent::Truncated { head, tail } = &entry.content else {
        panic!("must be truncated");
    };
    assert_eq!(
        head.len(),
        SEGMENT_BUDGET_BYTES - 1,
        "'é' does not fit the head"
    );
    assert!(tail.starts_with('😀') && tail.len() % 4 == 0);
    let original = utf16_len(&content);
    let answer = get_knowledge(&store, "chat", json!({"knowledgeId": entry.id})).await;
    assert!(!answer.is_error);
    let read = parse(&answer.content);
    assert_eq!(read["truncated"], true);
    assert_eq!(read["originalLength"], original);
    assert_eq!(read["storedLength"], utf16_len(head) + utf16_len(tail));
    assert_eq!(read["head"]["start"], 0);
    assert_eq!(read["head"]["end"], utf16_len(head));
    assert_eq!(read["tail"]["end"], original);
    assert_eq!(read["tail"]["start"], original - utf16_len(tail));
    assert_eq!(read["omitted"]["start"], read["head"]["end"]);
    assert_eq!(read["omitted"]["end"], read["tail"]["start"]);
    assert!(read.get("text").is_none());
    assert_eq!(read["tail"]["text"].as_str().unwrap(), tail);

    let small = store.put("chat", "ReadFile", "short text").await.unwrap();
    let read = parse(
        &get_knowledge(&store, "chat", json!({"knowledgeId": small.id}))
            .await
            .content,
    );
    assert_eq!(read["text"], "short text");
    assert_eq!(read["truncated"], false);
    assert!(read.get("head").is_none() && read.get("omitted").is_none());
}

#[tokio::test]
async fn ids_are_case_insensitive_and_scoped_to_their_chat() {
    let (_dir, store) = store().await;
    let entry = store
        .put("chat-a", "ReadFile", "secret of a")
        .await
        .unwrap();
    let upper = entry.id.to_uppercase();
    let read = parse(
        &get_knowledge(&store, "chat-a", json!({"knowledgeId": upper}))
            .await
            .content,
    );
    assert_eq!(read["knowledgeId"], entry.id);
    let other = get_knowledge(&store, "chat-b", json!({"knowledgeId": entry.id})).await;
    assert!(other.is_error);
    assert_eq!(
        parse(&other.content)["error"]["code"],
        "knowledge_not_found"
    );
    for bad in [
        "not-a-uuid",
        "1234",
        "{00000000-0000-0000-0000-000000000000}",
    ] {
        let missing = get_knowledge(&store, "chat-a", json!({"knowledgeId": bad})).await;
        assert_eq!(
            parse(&missing.content)["error"]["code"],
            "knowledge_not_found",
            "{bad}"
        );
    }
    assert_eq!(store.clear_chat("chat-a").await.unwrap(), 1);
    assert!(store.get("chat-a", &entry.id).await.unwrap().is_none());
}

#[tokio::test]
async fn argument_problems_are_reported_before_storage_is_touched() {
    let (_dir, store) = store().await;
    // Closing the store makes any storage access fail: these must not get that far.
    store.store.close().await.unwrap();
    let cases = [
        (
            json!({"knowledgeId": "x", "extra": 1}),
            "get",
            "invalid_arguments",
        ),
        (json!({"knowledgeId": "   "}), "get", "invalid_arguments"),
        (json!({}), "get", "invalid_arguments"),
        (
            json!({"knowledgeId": "x", "regex": "a", "charsBefore": 4097}),
            "search",
            "invalid_arguments",
        ),
        (
            json!({"knowledgeId": "x", "regex": "a", "charsAfter": -1}),
            "search",
            "invalid_arguments",
        ),
        (
            json!({"knowledgeId": "x", "regex": "a", "maxMatches": 0}),
            "search",
            "invalid_arguments",
        ),
        (
            json!({"knowledgeId": "x", "regex": "a", "maxMatches": 101}),
            "search",
            "invalid_arguments",
        ),
        (
            json!({"knowledgeId": "x", "regex": "a", "maxMatches": "3"}),
            "search",
            "invalid_arguments",
        ),
        (
            json!({"knowledgeId": "x", "regex": " "}),
            "search",
            "invalid_arguments",
        ),
        (
            json!({"knowledgeId": "x", "regex": "(unclosed"}),
            "search",
            "invalid_regex",
        ),
        (
            json!({"knowledgeId": "x", "regex": "(a)\\1"}),
            "search",
            "invalid_regex",
        ),
        (
            json!({"knowledgeId": "x", "regex": "(?=look)"}),
            "search",
            "invalid_regex",
        ),
    ];
    for (arguments, tool, code) in cases {
        let answer = if tool == "get" {
            get_knowledge(&store, "chat", arguments.clone()).await
        } else {
            search_knowledge(&store, "chat", arguments.clone()).await
        };
        assert!(answer.is_error);
        assert_eq!(parse(&answer.content)["error"]["code"], code, "{arguments}");
    }
    let blank_chat = get_knowledge(
        &store,
        "",
        json!({"knowledgeId": "00000000-0000-0000-0000-000000000000"}),
    )
    .await;
    assert_eq!(
        parse(&blank_chat.content)["error"]["code"],
        "conversation_unavailable"
    );
    let broken = get_knowledge(
        &store,
        "chat",
        json!({"knowledgeId": "00000000-0000-0000-0000-000000000000"}),
    )
    .await;
    assert_eq!(parse(&broken.content)["error"]["code"], "storage_failure");
}

#[tokio::test]
async fn a_corrupt_row_is_a_storage_failure_not_a_wrong_answer() {
    let (_dir, store) = store().await;
    let entry = store.put("chat", "ReadFile", "twelve chars").await.unwrap();
    let id = entry.id.clone();
    store
        .store
        .write(move |transaction| {
            transaction
                .execute(
                    "UPDATE knowledge_entries SET original_length = 99 WHERE id = ?1",
                    [&id],
                )
                .map_err(StoreError::from)
        })
        .await
        .unwrap();
    let answer = get_knowledge(&store, "chat", json!({"knowledgeId": entry.id})).await;
    let error = &parse(&answer.content)["error"];
    assert_eq!(error["code"], "storage_failure");
    assert!(error["message"].as_str().unwrap().contains("corrupt"));
}

fn entry(content: KnowledgeContent, original_length: usize) -> KnowledgeEntry {
    KnowledgeEntry {
        id: "00000000-0000-0000-0000-000000000000".into(),
        source_tool: "ReadFile".into(),
        original_length,
        content,
    }
}

#[test]
fn matching_is_case_sensitive_unless_an_inline_flag_says_otherwise() {
    let text = "Alpha alpha ALPHA".to_owned();
    let entry = entry(KnowledgeContent::Complete(text.clone()), utf16_len(&text));
    let starts = |pattern: &str| -> Vec<usize> {
        find(&entry, &compile(pattern).unwrap(), 0, 0, 20)
            .iter()
            .map(|found| found.start)
            .collect()
    };
    assert_eq!(starts("alpha"), [6]);
    assert_eq!(starts("(?i)alpha"), [0, 6, 12]);
    let multiline = "one\ntwo\nthree".to_owned();
    let entry = self::entry(KnowledgeContent::Complete(multiline.clone()), 13);
    assert_eq!(
        find(&entry, &compile("^t").unwrap(), 0, 0, 20).len(),
        0,
        "no (?m): ^ is the start"
    );
    assert_eq!(find(&entry, &compile("(?m)^t").unwrap(), 0, 0, 20).len(), 2);
    assert_eq!(
        find(&entry, &compile("one.two").unwrap(), 0, 0, 20).len(),
        0
    );
    assert_eq!(
        find(&entry, &compile("(?s)one.two").unwrap(), 0, 0, 20).len(),
        1
    );
}

#[test]
fn head_and_tail_are_searched_apart_with_original_offsets() {
    // Original: "abcXY" + 100 omitted units + "Zxyz"; the tail starts at unit 105.
    let entry = entry(
        KnowledgeContent::Truncated {
            head: "abcXY".into(),
            tail: "Zxyz".into(),
        },
        109,
    );
    assert!(
        find(&entry, &compile("XYZ").unwrap(), 0, 0, 20).is_empty(),
        "no match across the omitted middle"
    );
    let anchored = find(&entry, &compile("^.").unwrap(), 0, 0, 20);
    let anchored: Vec<(&str, usize)> = anchored
        .iter()
        .map(|m| (m.text.as_str(), m.start))
        .collect();
    assert_eq!(anchored, [("a", 0), ("Z", 105)], "^ anchors at each part");
    let last = find(&entry, &compile("z$").unwrap(), 1, 1, 20);
    assert_eq!((last[0].start, last[0].end), (108, 109));
    assert_eq!(last[0].excerpt.as_deref(), Some("yz"));
    assert_eq!(
        (last[0].excerpt_start, last[0].excerpt_end),
        (Some(107), Some(109))
    );
    let capped = find(&entry, &compile("[a-zA-Z]").unwrap(), 0, 0, 6);
    assert_eq!(capped.len(), 6, "maxMatches counts across both parts");
    assert_eq!(capped[5].start, 105);
}

#[test]
fn excerpts_widen_instead_of_splitting_a_surrogate_pair() {
    // "😀" is two UTF-16 units: "a😀b" has units a=0, 😀=1..3, b=3.
    let text = "a😀bc😀".to_owned();
    let entry = entry(KnowledgeContent::Complete(text.clone()), utf16_len(&text));
    let found = find(&entry, &compile("b").unwrap(), 1, 1, 20);
    let hit = &found[0];
    assert_eq!((hit.start, hit.end), (3, 4));
    assert_eq!(
        hit.excerpt.as_deref(),
        Some("😀bc"),
        "one unit back lands inside 😀: widened"
    );
    assert_eq!((hit.excerpt_start, hit.excerpt_end), (Some(1), Some(5)));
    let found = find(&entry, &compile("c").unwrap(), 0, 1, 20);
    assert_eq!(found[0].excerpt.as_deref(), Some("c😀"));
    assert_eq!(found[0].excerpt_end, Some(7));
    let bare = find(&entry, &compile("b").unwrap(), 0, 0, 20);
    assert!(
        bare[0].excerpt.is_none() && bare[0].excerpt_start.is_none(),
        "an excerpt equal to the match is omitted"
    );
}

#[tokio::test]
async fn search_knowledge_answers_matches_with_metadata() {
    let (_dir, store) = store().await;
    let content = format!("{}needle{}", "x".repeat(300), "y".repeat(300));
    let stored = store.put("chat", "WebPageText", &content).await.unwrap();
    let answer = search_knowledge(
        &store,
        "chat",
        json!({"knowledgeId": stored.id, "regex": "needle", "charsBefore": 2, "charsAfter": 3}),
    )
    .await;
    assert!(!answer.is_error, "{}", answer.content);
    let read = parse(&answer.content);
    assert_eq!(read["sourceTool"], "WebPageText");
    assert_eq!(read["truncated"], false);
    let hit = &read["matches"][0];
    assert_eq!(hit["text"], "needle");
    assert_eq!(
        (hit["start"].as_u64(), hit["end"].as_u64()),
        (Some(300), Some(306))
    );
    assert_eq!(hit["excerpt"], "xxneedleyyy");
    assert_eq!(
        (hit["excerptStart"].as_u64(), hit["excerptEnd"].as_u64()),
        (Some(298), Some(309))
    );
    let defaults = parse(
        &search_knowledge(
            &store,
            "chat",
            json!({"knowledgeId": stored.id, "regex": "y"}),
        )
        .await
        .content,
    );
    assert_eq!(
        defaults["matches"].as_array().unwrap().len(),
        20,
        "default maxMatches"
    );
    assert_eq!(
        defaults["matches"][0]["excerptStart"], 50,
        "default context of 256 units before (306 - 256)"
    );
}
