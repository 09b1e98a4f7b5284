//! `souz questions`: the questions Souz's agents wait on (`AskUser`), from a terminal — list,
//! show one, answer one (which resumes its turn). Ids may be shortened to a unique prefix, as
//! with `souz approvals`. Labels and messages are in the person's language ([`crate::texts`]);
//! ids, statuses, the agents' words and JSON stay as they are.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use souz_protocol::chat::{
    OptionAnswer, OptionChoice, OptionStatus, Question, QuestionList, SelectionMode,
};

use crate::client::DaemonClient;
use crate::output::{age, print_json, say, truncate};
use crate::texts::{fill, tr};

#[derive(Debug, Subcommand)]
pub enum QuestionsCommand {
    /// List the pending questions.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one question with its choices.
    Show {
        /// Question id (a unique prefix is enough).
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Answer a pending question; the agent's turn resumes with the answer.
    Answer(AnswerArgs),
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// Question id (a unique prefix is enough).
    id: String,
    /// A choice: its number (1, 2, ...), its label or its id. Repeat for several when the
    /// question allows it.
    #[arg(long = "choice", value_name = "CHOICE")]
    choices: Vec<String>,
    /// An answer in your own words, when the question accepts one.
    #[arg(long)]
    text: Option<String>,
}

pub async fn run(command: Option<QuestionsCommand>) -> Result<()> {
    let client = crate::texts::connect().await?;
    match command.unwrap_or(QuestionsCommand::List { json: false }) {
        QuestionsCommand::List { json } => {
            let list = client.questions().await?;
            if json {
                return print_json(&list);
            }
            if list.items.is_empty() {
                say!(
                    "{}",
                    tr(
                        "No agent is waiting for an answer.",
                        "Ни один агент не ждёт ответа."
                    )
                );
                return Ok(());
            }
            say!(
                "{:<10} {:>5}  {:<20} {:<40} {}",
                "ID",
                tr("AGE", "ВОЗР."),
                tr("WHO", "КТО"),
                tr("QUESTION", "ВОПРОС"),
                tr("CHOICES", "ВАРИАНТЫ")
            );
            for question in &list.items {
                say!(
                    "{:<10} {:>5}  {:<20} {:<40} {}",
                    truncate(&question.id, 10),
                    age(question.created_at),
                    truncate(&asker(question), 20),
                    truncate(&question.title, 40),
                    truncate(&choices_line(question), 60),
                );
            }
            Ok(())
        }
        QuestionsCommand::Show { id, json } => {
            let question = find(&client, &id).await?;
            if json {
                return print_json(&question);
            }
            print_question(&question);
            Ok(())
        }
        QuestionsCommand::Answer(args) => answer(&client, args).await,
    }
}

/// Who asks, in words: the chat's title, or its short id.
fn asker(question: &Question) -> String {
    match &question.chat_title {
        Some(title) => format!("{} {title}", tr("chat", "чат")),
        None => format!("{} {}", tr("chat", "чат"), truncate(&question.chat_id, 8)),
    }
}

fn choices_line(question: &Question) -> String {
    let mut parts: Vec<String> = question
        .options
        .iter()
        .enumerate()
        .map(|(index, choice)| format!("{}. {}", index + 1, choice.label))
        .collect();
    if question.free_text {
        parts.push(tr("(own words)", "(своими словами)").to_owned());
    }
    parts.join("  ")
}

async fn find(client: &DaemonClient, id: &str) -> Result<Question> {
    crate::client::find(
        client,
        tr("question", "вопроса"),
        "/v1/options",
        id,
        |list: &QuestionList| {
            list.items
                .iter()
                .map(|question| question.id.as_str())
                .collect()
        },
    )
    .await
}

/// The choice `wanted` names: its id, its label (ignoring case) or its number.
fn choose<'a>(question: &'a Question, wanted: &str) -> Result<&'a OptionChoice> {
    let wanted = wanted.trim();
    let by_id = question.options.iter().find(|choice| choice.id == wanted);
    let by_label = || {
        let wanted = wanted.to_lowercase();
        question
            .options
            .iter()
            .find(|choice| choice.label.to_lowercase() == wanted)
    };
    let by_number = || {
        wanted
            .parse::<usize>()
            .ok()
            .and_then(|number| number.checked_sub(1))
            .and_then(|index| question.options.get(index))
    };
    match by_id.or_else(by_label).or_else(by_number) {
        Some(choice) => Ok(choice),
        None => bail!(
            "{}",
            fill(
                tr(
                    "`{wanted}` is not one of the choices: {choices}",
                    "`{wanted}` — не один из вариантов: {choices}"
                ),
                &[("wanted", &wanted), ("choices", &choices_line(question))]
            )
        ),
    }
}

async fn answer(client: &DaemonClient, args: AnswerArgs) -> Result<()> {
    let question = find(client, &args.id).await?;
    if question.status != OptionStatus::Pending {
        bail!(
            "{}",
            fill(
                tr(
                    "question {id} is already {status}",
                    "вопрос {id} уже в состоянии {status}"
                ),
                &[("id", &question.id), ("status", &question.status.as_str())]
            )
        );
    }
    if args.choices.is_empty() && args.text.is_none() {
        bail!(
            "{}",
            fill(
                tr(
                    "give --choice (or --text); the choices are: {choices}",
                    "укажите --choice (или --text); варианты: {choices}"
                ),
                &[("choices", &choices_line(&question))]
            )
        );
    }
    if question.selection_mode == SelectionMode::Single && args.choices.len() > 1 {
        bail!(
            "{}",
            tr(
                "this question takes one choice",
                "этот вопрос принимает один вариант"
            )
        );
    }
    if args.text.is_some() && !question.free_text {
        bail!(
            "{}",
            tr(
                "this question takes no answer in your own words; pick a --choice",
                "этот вопрос не принимает ответ своими словами; выберите --choice"
            )
        );
    }
    let mut selected = Vec::new();
    for wanted in &args.choices {
        selected.push(choose(&question, wanted)?.clone());
    }
    let body = OptionAnswer {
        selected_option_ids: selected.iter().map(|choice| choice.id.clone()).collect(),
        free_text: args.text.clone(),
        ..OptionAnswer::default()
    };
    let response = client.answer(&question.id, &body).await?;
    let mut said: Vec<String> = selected.into_iter().map(|choice| choice.label).collect();
    said.extend(args.text);
    say!(
        "{}",
        fill(
            tr(
                "Answered \"{title}\": {said}. The agent continues (execution {execution}).",
                "Ответ на «{title}»: {said}. Агент продолжает (выполнение {execution})."
            ),
            &[
                ("title", &question.title),
                ("said", &said.join(", ")),
                ("execution", &response.execution.id)
            ]
        )
    );
    Ok(())
}

/// A label of `souz questions show`, padded to the widest in its language.
fn label(en: &'static str, ru: &'static str) -> String {
    crate::texts::label(en, ru, [10, 14])
}

fn print_question(question: &Question) {
    say!("{}{}", label("Question", "Вопрос"), question.id);
    say!(
        "{}{}",
        label("Status", "Состояние"),
        question.status.as_str()
    );
    say!("{}{}", label("Who", "Кто"), asker(question));
    say!("{}{}", label("Asks", "Текст вопроса"), question.title);
    let asked = fill(
        tr("{age} ago", "{age} назад"),
        &[("age", &age(question.created_at))],
    );
    let expires = question
        .expires_at
        .map(|at| {
            fill(
                tr("; expires {at}", "; истекает {at}"),
                &[("at", &at.format("%Y-%m-%d %H:%M UTC"))],
            )
        })
        .unwrap_or_default();
    say!("{}{asked}{expires}", label("Asked", "Задан"));
    let mode = match question.selection_mode {
        SelectionMode::Single => tr("pick one", "один вариант"),
        SelectionMode::Multiple => tr("pick any", "несколько вариантов"),
    };
    if !question.options.is_empty() {
        say!("{}({mode})", label("Choices", "Варианты"));
        for (index, choice) in question.options.iter().enumerate() {
            say!("  {}. {}", index + 1, choice.label);
        }
    }
    if question.free_text {
        say!(
            "{}",
            tr(
                "Own words accepted (--text)",
                "Можно ответить своими словами (--text)"
            )
        );
    }
    if let Some(answer) = &question.answer {
        let labels: Vec<&str> = answer
            .selected_option_ids
            .iter()
            .filter_map(|id| question.options.iter().find(|choice| &choice.id == id))
            .map(|choice| choice.label.as_str())
            .chain(answer.free_text.as_deref())
            .collect();
        say!("{}{}", label("Answer", "Ответ"), labels.join(", "));
    }
    if question.status == OptionStatus::Pending {
        let short = question.id.get(..12).unwrap_or(&question.id);
        match question.options.first() {
            Some(first) => say!(
                "\n  souz questions answer {short} --choice {:?}",
                first.label
            ),
            None => say!("\n  souz questions answer {short} --text \"...\""),
        }
    }
}
