//! Classification (graph agent): which tool categories this message needs, so the model is
//! shown fewer tools. It narrows only what is *advertised*; every enabled catalog tool stays
//! executable, so a misclassification costs a detour, never a refusal.
//!
//! Algorithm (original §2.4): a local pattern classifier runs first; then the model is asked
//! (answer `CATEGORY1,CATEGORY2 0-100`). The model's choice wins when it is confident (> 50) or
//! agrees with the local first choice; otherwise nothing is chosen, which means *all*
//! categories, as does `HELP`.
//!
//! On small models the classifier must not cost the turn: its answer is bounded to
//! [`MAX_ANSWER_TOKENS`] (a few category names and a number; a model that rambles is cut, not
//! waited for), and one failed or unreadable answer falls back to the local result at once (the
//! original tried twice; a small model that misses the format once misses it again, and each
//! miss ran to the output limit). The first failure of a model is logged as a warning, later
//! ones of the same model only at debug level, so a model that never classifies does not fill
//! the log one line per turn. After two failures in a row the model is not asked for half an
//! hour (the local result stands alone), so a model that cannot classify costs two requests,
//! not one every turn; a readable answer resets the count. The tokens a failed attempt used
//! still count for the turn.

use std::sync::{Arc, LazyLock};

use regex::Regex;
use souz_protocol::ToolCategory;

use crate::agent::context::{
    AgentContext, current_user_index, is_injected_context, is_injected_memory,
};
use crate::agent::prompts::classifier_prompt;
use crate::agent::scope::{CLASSIFIER_FAILURES_TO_REST, CLASSIFIER_REST, TurnScope};
use crate::agent::skills::{by_category, enabled_tools, model_spec, parse_category};
use crate::graph::BoxError;
use crate::llm::{ChatRequest, LlmError, Message, complete};

/// A category the classifier may pick, or `HELP` (a question about Souz: everything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// A tool category.
    Category(ToolCategory),
    /// A question about what Souz can do.
    Help,
}

/// A parsed classifier answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Classification {
    /// Chosen categories, strongest first.
    pub choices: Vec<Choice>,
    /// Confidence 0..=100.
    pub confidence: u8,
}

/// The most output tokens the classifier's answer may take (`FILES,WEB_SEARCH 85` is about ten).
pub(crate) const MAX_ANSWER_TOKENS: u32 = 32;
/// Characters of one history message shown to the classifier.
const HISTORY_MESSAGE_CHARS: usize = 1000;

struct Pattern {
    choice: Choice,
    regex: Regex,
}

static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    let table: [(Choice, &str); 7] = [
        (
            Choice::Help,
            r"(?i)\b(what can you do|help me understand you|your (functions|abilities|capabilities))\b|что ты умеешь|что ты можешь|какие у тебя функции",
        ),
        (
            Choice::Category(ToolCategory::Calculator),
            r"(?i)\d+(\.\d+)?\s*[-+*/^×÷]\s*\d|\b(calculate|compute|sqrt|square root|how much is)\b|посчитай|вычисли|сколько будет|корень из",
        ),
        (
            Choice::Category(ToolCategory::DataAnalytics),
            r"(?i)\b(csv|xlsx?|excel|spreadsheets?|tables?|charts?|plots?|pivot|columns?|average|median|dataset)\b|таблиц|эксел|график|диаграм|сводн|столб",
        ),
        (
            Choice::Category(ToolCategory::WebSearch),
            r"(?i)https?://|www\.|\b(web ?sites?|web ?pages?|urls?|links?|online|internet|browse|news|weather)\b|сайт|страниц|ссылк|интернет|новост|погод",
        ),
        (
            Choice::Category(ToolCategory::Commands),
            r"(?i)\b(run|execute|command|terminal|shell|bash|zsh|script|install|compile|git|npm|cargo|pip|make|tests)\b|запусти|выполни|команд|терминал|скрипт|установи",
        ),
        (
            Choice::Category(ToolCategory::Files),
            r"(?i)\b(files?|folders?|director(y|ies)|documents?|readme|rename|move|copy|delete|downloads|desktop)\b|\.(txt|md|pdf|docx?|json|ya?ml|toml|log|rs|py|js|ts)\b|~/|файл|папк|каталог|документ|переимен|перемест|скопир|удали|загрузк",
        ),
        (
            Choice::Category(ToolCategory::Souz),
            r"(?i)\b(souz|knowledge|approvals?)\b|союз",
        ),
    ];
    table
        .into_iter()
        .filter_map(|(choice, pattern)| match Regex::new(pattern) {
            Ok(regex) => Some(Pattern { choice, regex }),
            Err(error) => {
                tracing::error!(%error, "a classifier pattern does not compile");
                None
            }
        })
        .collect()
});

/// The local classifier: choices whose patterns occur in `text`, earliest occurrence first,
/// among `available` categories (`HELP` is always available).
pub(crate) fn classify_locally(text: &str, available: &[ToolCategory]) -> Vec<Choice> {
    let mut found: Vec<(usize, Choice)> = PATTERNS
        .iter()
        .filter(|pattern| match pattern.choice {
            Choice::Category(category) => available.contains(&category),
            Choice::Help => true,
        })
        .filter_map(|pattern| {
            pattern
                .regex
                .find(text)
                .map(|found| (found.start(), pattern.choice))
        })
        .collect();
    found.sort_by_key(|(position, _)| *position);
    found.into_iter().map(|(_, choice)| choice).collect()
}

/// Parses `CATEGORY1,CATEGORY2 NN` (quotes and unknown names tolerated).
pub(crate) fn parse_answer(answer: &str) -> Option<Classification> {
    let answer = answer
        .trim()
        .trim_matches(|c| c == '"' || c == '`' || c == '\'');
    let (names, confidence) = answer.rsplit_once(char::is_whitespace)?;
    let confidence: u8 = confidence
        .trim()
        .parse()
        .ok()
        .filter(|value| *value <= 100)?;
    let mut choices = Vec::new();
    for name in names
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
    {
        let choice = if name.eq_ignore_ascii_case("HELP") {
            Choice::Help
        } else {
            match parse_category(name) {
                Some(category) => Choice::Category(category),
                None => continue,
            }
        };
        if !choices.contains(&choice) {
            choices.push(choice);
        }
    }
    Some(Classification {
        choices,
        confidence,
    })
}

/// The original's rule: the model's choice when it is confident or agrees with the local
/// first choice, else nothing (which means everything).
pub(crate) fn combine(local: &[Choice], model: &Classification) -> Vec<Choice> {
    if model.confidence > 50 || model.choices.first() == local.first() {
        model.choices.clone()
    } else {
        Vec::new()
    }
}

/// The categories to advertise, given what was chosen.
pub(crate) fn selected(choices: &[Choice], available: &[ToolCategory]) -> Vec<ToolCategory> {
    if choices.is_empty() || choices.contains(&Choice::Help) {
        return available.to_vec();
    }
    let chosen: Vec<ToolCategory> = available
        .iter()
        .copied()
        .filter(|category| choices.contains(&Choice::Category(*category)))
        .collect();
    if chosen.is_empty() {
        available.to_vec()
    } else {
        chosen
    }
}

/// The recent conversation the classifier sees: user and assistant texts before the current
/// message, without injected messages; 3 of them, 4 when the new message is short.
fn recent_history(history: &[Message], input: &str) -> String {
    let short = input.chars().count() <= 24 || input.split_whitespace().count() <= 4;
    let window = if short { 4 } else { 3 };
    let end = current_user_index(history).unwrap_or(history.len());
    let mut lines: Vec<String> = history[..end]
        .iter()
        .filter(|message| !is_injected_context(message) && !is_injected_memory(message))
        .filter_map(|message| match message {
            Message::User { content, .. } => Some(format!("user: {content}")),
            Message::Assistant { content, .. } if !content.trim().is_empty() => {
                Some(format!("assistant: {content}"))
            }
            _ => None,
        })
        .map(|line| line.chars().take(HISTORY_MESSAGE_CHARS).collect())
        .collect();
    let keep = lines.len().saturating_sub(window);
    lines.drain(..keep);
    lines.join("\n")
}

async fn ask_model(
    scope: &TurnScope,
    context: &mut AgentContext<String>,
    available: &[ToolCategory],
) -> Result<Classification, LlmError> {
    let mut request = ChatRequest::new(
        scope.model.request_name.clone(),
        vec![
            Message::system(classifier_prompt(available)),
            Message::user(format!(
                "History:\n{}\n",
                recent_history(&context.history, &context.user_input)
            )),
            Message::user(format!("New message:\n{}", context.user_input)),
        ],
    );
    request.temperature = Some(0.0);
    request.max_tokens = Some(MAX_ANSWER_TOKENS);
    let response = scope
        .within_request_timeout(complete(
            scope.model.client.as_ref(),
            request,
            scope.cancel.clone(),
        ))
        .await
        .inspect_err(|error| {
            // A cut answer still used its tokens.
            if let LlmError::CutOff { used, .. } = error {
                context.usage.add(*used);
            }
        })?;
    if let Some(usage) = response.usage {
        context.usage.add(usage);
    }
    parse_answer(&response.content).ok_or_else(|| LlmError::Interrupted {
        provider: None,
        detail: format!("the classifier answered {:?}", response.content),
    })
}

/// Narrows the advertised catalog tools to the categories this message needs.
pub(crate) async fn classify(
    scope: Arc<TurnScope>,
    mut context: AgentContext<String>,
) -> Result<AgentContext<String>, BoxError> {
    let tools = enabled_tools(&scope.services.gate, &scope.tools);
    let groups = by_category(&tools);
    let available: Vec<ToolCategory> = groups.keys().copied().collect();
    let local = classify_locally(&context.user_input, &available);
    let model = &scope.model.label;
    let choices = if !scope.services.classifier_awake(model) {
        local
    } else {
        match ask_model(&scope, &mut context, &available).await {
            Ok(answer) => {
                scope.services.classifier_answered(model);
                combine(&local, &answer)
            }
            Err(LlmError::Cancelled) if scope.cancel.is_cancelled() => {
                return Err(Box::new(crate::graph::Cancelled));
            }
            Err(error) => {
                let failure = scope.services.classifier_failed(model);
                if failure.again {
                    tracing::debug!(%error, %model, "the model classifier failed again");
                } else {
                    tracing::warn!(
                        %error,
                        %model,
                        "the model classifier failed; using the local classification (logged \
                         once per model)"
                    );
                }
                if failure.resting {
                    tracing::info!(
                        %model,
                        minutes = CLASSIFIER_REST.as_secs() / 60,
                        "the model classifier failed {CLASSIFIER_FAILURES_TO_REST} times in a \
                         row; classifying locally for a while"
                    );
                }
                local
            }
        }
    };
    let chosen = selected(&choices, &available);
    context.advertised = groups
        .iter()
        .filter(|(category, _)| chosen.contains(category))
        .flat_map(|(_, specs)| specs.iter().map(|spec| model_spec(spec)))
        .collect();
    context.categories = Some(chosen);
    Ok(context)
}
