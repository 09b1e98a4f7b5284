//! `SearchMemory`: an explicit search of long-term memory, scoped to global memory and the
//! current conversation. Answers `{"facts":[...],"error":null,"mode":"hybrid"}` or an error
//! with the codes `invalid_arguments` (checked first), `memory_unavailable` and
//! `search_failed`. A search that matched by words only (no embedding model ready) says so:
//! `"mode":"lexical"` and a `note` in the person's language, so the model does not take a thin
//! answer for "nothing remembered".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use souz_protocol::memory::RecallMode;

use super::{CoreCall, CoreOutput};
use crate::agent::memory::{MemoryError, MemoryFact, MemoryScope, MemorySearch};
use crate::memory::recall::lexical_note;
use crate::tools::{ToolError, parse_arguments};

/// Facts returned when the caller does not say.
pub(crate) const DEFAULT_MAX_FACTS: i64 = 8;
/// Most facts a search returns.
pub(crate) const MAX_FACTS: i64 = 16;
/// Most lexical hints a search takes.
pub(crate) const MAX_LEXICAL_HINTS: usize = 16;

/// Arguments of `SearchMemory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SearchMemoryArgs {
    /// Standalone description in English of the needed fact, with the relevant entities and
    /// properties.
    pub semantic_query: String,
    /// 1 to 16 English or bilingual words or short phrases likely to occur verbatim in
    /// matching facts.
    pub lexical_hints: Vec<String>,
    /// Most facts to return (default 8, 1..16).
    #[serde(default)]
    pub max_facts: Option<i64>,
}

#[derive(Serialize)]
struct Answer<'a> {
    facts: &'a [MemoryFact],
    error: Option<Problem<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<RecallMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

#[derive(Serialize)]
struct Problem<'a> {
    code: &'a str,
    message: &'a str,
}

fn answer(facts: &[MemoryFact], error: Option<(&str, &str)>) -> CoreOutput {
    respond(Answer {
        facts,
        error: error.map(|(code, message)| Problem { code, message }),
        mode: None,
        note: None,
    })
}

fn respond(body: Answer<'_>) -> CoreOutput {
    let error = body.error.is_some();
    match serde_json::to_string(&body) {
        Ok(content) => CoreOutput {
            content,
            is_error: error,
        },
        Err(problem) => CoreOutput::error("search_failed", problem.to_string()),
    }
}

fn request(call: &CoreCall<'_>, arguments: Value) -> Result<MemorySearch, String> {
    let args = parse_arguments::<SearchMemoryArgs>(arguments).map_err(|error| match error {
        ToolError::InvalidArguments(message) => message,
        other => other.to_string(),
    })?;
    let semantic_query = args.semantic_query.trim();
    if semantic_query.is_empty() {
        return Err("semanticQuery must be a non-blank string.".into());
    }
    let mut lexical_hints: Vec<String> = Vec::new();
    for hint in &args.lexical_hints {
        let hint = hint.trim();
        if hint.is_empty() {
            lexical_hints.clear();
            break;
        }
        if !lexical_hints.iter().any(|known| known == hint) {
            lexical_hints.push(hint.to_owned());
        }
    }
    if lexical_hints.is_empty() || args.lexical_hints.len() > MAX_LEXICAL_HINTS {
        return Err(format!(
            "lexicalHints must be a non-empty array of at most {MAX_LEXICAL_HINTS} non-blank \
             strings."
        ));
    }
    let max_facts = args.max_facts.unwrap_or(DEFAULT_MAX_FACTS);
    if !(1..=MAX_FACTS).contains(&max_facts) {
        return Err(format!("maxFacts must be between 1 and {MAX_FACTS}."));
    }
    Ok(MemorySearch {
        scope: MemoryScope {
            owner: call.owner.to_owned(),
            chat_id: call.chat_id.to_owned(),
        },
        semantic_query: semantic_query.to_owned(),
        lexical_hints,
        max_facts: usize::try_from(max_facts).unwrap_or(1),
    })
}

/// `SearchMemory`.
pub(crate) async fn search_memory(call: &CoreCall<'_>, arguments: Value) -> CoreOutput {
    let search = match request(call, arguments) {
        Ok(search) => search,
        Err(message) => return answer(&[], Some(("invalid_arguments", &message))),
    };
    match call.memory.search(&search).await {
        Ok(found) => respond(Answer {
            facts: &found.facts,
            error: None,
            mode: Some(found.mode),
            note: (found.mode == RecallMode::Lexical).then(|| lexical_note(call.language)),
        }),
        Err(MemoryError::Unavailable) => answer(
            &[],
            Some(("memory_unavailable", &MemoryError::Unavailable.to_string())),
        ),
        Err(error) => {
            tracing::warn!(%error, "SearchMemory failed");
            answer(&[], Some(("search_failed", "Memory search failed.")))
        }
    }
}
