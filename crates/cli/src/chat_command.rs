//! `souz chat`: a chat with Souz's agent in the terminal. The answer streams as it is written;
//! tool calls show as lines; an approval the turn needs is asked inline (`y`, `n`, `s` for the
//! suggested scope) and a question the agent asks is answered inline; lines typed while a turn
//! works are kept and sent, in order, when it ends. `/new`, `/model NAME`, `/cancel`, `/help`,
//! `/quit`.
//!
//! Invariants:
//! - It is a client like the web UI: messages go through `POST /v1/chats/{id}/messages`, the
//!   chat's events come from `/v1/turns/ws` (filtered to this chat), decisions through
//!   `POST /v1/approvals/{id}/decision` (`via: "cli"`), answers through the options API. It
//!   decides nothing the person did not type, and an approval answered elsewhere (the tray, the
//!   UI) stops being asked here.
//! - What it prints from the daemon (answers, summaries, tool names) is escaped for the
//!   terminal ([`crate::output`]).
//! - End of input (Ctrl-D, or the end of a pipe) ends the chat once the running turn is over,
//!   or at once when it waits for an answer: an approval or a question still asked is left to
//!   the other surfaces, never decided here.

mod render;

use std::collections::VecDeque;
use std::ops::ControlFlow;

use anyhow::Result;
use clap::Args;
use souz_client::{DaemonClient, EventStream, Reconnect, StreamItem};
use souz_protocol::chat::{
    ChatEventBody, ChatSettings, CreateChat, CreateChatResponse, PostMessage, PostMessageResponse,
    SettingsResponse,
};
use souz_protocol::{Approval, DecisionRequest, Verdict};
use tokio::sync::mpsc;

use crate::output::say;
use crate::texts::{fill, tr};
use render::{Answer, Shown};

/// `souz chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Go on in this chat (its id) instead of starting a new one.
    #[arg(long)]
    chat: Option<String>,
    /// The model for this chat (an alias or `provider/model`).
    #[arg(long)]
    model: Option<String>,
}

/// What the loop waits on.
enum Input {
    /// A line the person typed.
    Line(String),
    /// Standard input ended.
    End,
    /// An event of one of the person's chats (the loop keeps the current chat's).
    Event(Box<souz_protocol::chat::ChatEvent>),
    /// The event stream is live again (after a first connection or a reconnection).
    Live,
}

/// What the person is being asked, if anything.
enum Asking {
    Nothing,
    Approval(Box<Approval>),
    Question(Box<souz_protocol::chat::events::OptionRequestedPayload>),
}

/// The chat's state as this terminal sees it.
struct Session {
    client: DaemonClient,
    chat_id: String,
    /// The turn running now, by execution id.
    running: Option<String>,
    /// Lines typed while a turn ran, sent in order when it ends.
    queued: VecDeque<String>,
    asking: Asking,
    /// Approvals asked while another was being asked.
    waiting: VecDeque<String>,
    shown: Shown,
    ended: bool,
}

pub async fn run(args: ChatArgs) -> Result<std::process::ExitCode> {
    let client = crate::texts::connect().await?;
    let chat_id = match args.chat {
        Some(chat_id) => chat_id,
        None => new_chat(&client).await?,
    };
    let (sender, mut inputs) = mpsc::unbounded_channel::<Input>();
    follow_chats(&client, sender.clone());
    read_lines(sender);
    let mut session = Session {
        client,
        chat_id,
        running: None,
        queued: VecDeque::new(),
        asking: Asking::Nothing,
        waiting: VecDeque::new(),
        shown: Shown::default(),
        ended: false,
    };
    if let Some(model) = args.model {
        session.set_model(&model).await?;
    }
    say!(
        "{}",
        fill(
            tr(
                "Chat {chat} — type a message; /help for commands, Ctrl-D to leave.",
                "Чат {chat} — напишите сообщение; /help — команды, Ctrl-D — выход."
            ),
            &[("chat", &session.chat_id)]
        )
    );
    while let Some(input) = inputs.recv().await {
        match input {
            Input::Line(line) => {
                if session.line(line).await?.is_break() {
                    break;
                }
            }
            Input::End => session.ended = true,
            Input::Event(event) => session.event(*event).await?,
            Input::Live => session.resync().await?,
        }
        // Input ended: leave once the turn is over, or at once when it waits for an answer
        // nobody can type here (the other surfaces still ask it).
        let waits = !matches!(session.asking, Asking::Nothing);
        if session.ended && (waits || (session.running.is_none() && session.queued.is_empty())) {
            break;
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// A new chat, titled for the terminal.
async fn new_chat(client: &DaemonClient) -> Result<String> {
    let created: CreateChatResponse = client
        .post(
            "/v1/chats",
            &CreateChat {
                title: Some(tr("Terminal chat", "Чат в терминале").to_owned()),
                ..CreateChat::default()
            },
        )
        .await?;
    Ok(created.chat.id)
}

/// Follows every chat's events (the loop keeps the current chat's: `/new` changes it), and
/// each return to live.
fn follow_chats(client: &DaemonClient, sender: mpsc::UnboundedSender<Input>) {
    let client = client.clone();
    #[allow(
        clippy::disallowed_methods,
        reason = "the chat's event follower: it stops when the chat's loop is gone, or with the process"
    )]
    tokio::spawn(async move {
        client
            .follow(EventStream::Chats, Reconnect::default(), |item| {
                let input = match item {
                    StreamItem::Chat(event) => Input::Event(event),
                    StreamItem::Live => Input::Live,
                    _ => return ControlFlow::Continue(()),
                };
                // The loop is gone (the chat ended): stop following.
                match sender.send(input) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            })
            .await;
    });
}

/// Reads standard input line by line on its own thread (blocking reads), then says it ended.
fn read_lines(sender: mpsc::UnboundedSender<Input>) {
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if sender.send(Input::Line(line)).is_err() {
                return;
            }
        }
        let _ = sender.send(Input::End);
    });
}

impl Session {
    /// Prints `text` as lines of their own (after a streamed answer's unfinished line).
    fn print(&mut self, text: &str) {
        crate::output::part(&format!("{}{text}\n", self.shown.line_break()));
    }

    /// A line the person typed: an answer to what is asked, a command, or a message.
    async fn line(&mut self, line: String) -> Result<ControlFlow<()>> {
        let text = line.trim();
        if text.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        if let Some(command) = text.strip_prefix('/') {
            return self.command(command).await;
        }
        match std::mem::replace(&mut self.asking, Asking::Nothing) {
            Asking::Approval(approval) => self.decide(*approval, text).await?,
            Asking::Question(question) => self.answer(*question, text).await?,
            Asking::Nothing if self.running.is_some() => {
                self.queued.push_back(text.to_owned());
                say!(
                    "{}",
                    tr(
                        "(kept: sent when this turn ends; /cancel stops the turn)",
                        "(сохранено: отправится, когда этот ход закончится; /cancel — остановить)"
                    )
                );
            }
            Asking::Nothing => self.send(text).await?,
        }
        Ok(ControlFlow::Continue(()))
    }

    async fn command(&mut self, command: &str) -> Result<ControlFlow<()>> {
        let (name, rest) = command
            .split_once(char::is_whitespace)
            .map_or((command, ""), |(name, rest)| (name, rest.trim()));
        match name {
            "quit" | "exit" | "q" => return Ok(ControlFlow::Break(())),
            "help" => say!("{}", render::help()),
            "new" => {
                if self.running.is_some() {
                    say!(
                        "{}",
                        tr(
                            "A turn is still running: /cancel it first.",
                            "Ход ещё идёт: сначала /cancel."
                        )
                    );
                } else {
                    self.chat_id = new_chat(&self.client).await?;
                    self.queued.clear();
                    self.shown = Shown::default();
                    say!(
                        "{}",
                        fill(
                            tr("New chat {chat}.", "Новый чат {chat}."),
                            &[("chat", &self.chat_id)]
                        )
                    );
                }
            }
            "model" if rest.is_empty() => {
                let settings: SettingsResponse = self.client.get("/v1/me/settings").await?;
                let chat: ChatSettings = self
                    .client
                    .get(&format!("/v1/chats/{}/settings", self.chat_id))
                    .await?;
                let model = chat
                    .model
                    .unwrap_or_else(|| settings.settings.default_model.clone());
                say!(
                    "{}",
                    fill(
                        tr("Model: {model}", "Модель: {model}"),
                        &[("model", &model)]
                    )
                );
            }
            "model" => self.set_model(rest).await?,
            "cancel" => match &self.running {
                Some(_) => {
                    self.queued.clear();
                    let _: serde_json::Value = self
                        .client
                        .post(
                            &format!("/v1/chats/{}/cancel-active", self.chat_id),
                            &serde_json::json!({}),
                        )
                        .await?;
                }
                None => say!("{}", tr("Nothing is running.", "Ничего не выполняется.")),
            },
            _ => say!(
                "{}",
                fill(
                    tr(
                        "Unknown command /{name}; /help lists them.",
                        "Неизвестная команда /{name}; список — /help."
                    ),
                    &[("name", &name)]
                )
            ),
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Sets this chat's model (its other settings kept).
    async fn set_model(&mut self, model: &str) -> Result<()> {
        let path = format!("/v1/chats/{}/settings", self.chat_id);
        let mut settings: ChatSettings = self.client.get(&path).await?;
        settings.model = Some(model.to_owned());
        let _: serde_json::Value = self.client.put(&path, &settings).await?;
        say!(
            "{}",
            fill(
                tr(
                    "This chat now uses {model}.",
                    "Этот чат теперь использует {model}."
                ),
                &[("model", &model)]
            )
        );
        Ok(())
    }

    /// Sends `text` as a message: a new turn.
    async fn send(&mut self, text: &str) -> Result<()> {
        let posted: Result<PostMessageResponse, _> = self
            .client
            .post(
                &format!("/v1/chats/{}/messages", self.chat_id),
                &PostMessage {
                    content: text.to_owned(),
                    client_message_id: Some(render::request_id()),
                    options: None,
                    attachments: Vec::new(),
                },
            )
            .await;
        match posted {
            Ok(posted) => self.running = Some(posted.execution.id),
            Err(error) => say!(
                "{}",
                crate::texts::error_text(&anyhow::Error::from(error)).await
            ),
        }
        Ok(())
    }

    /// An event of one of the person's chats: only the current chat's count.
    async fn event(&mut self, event: souz_protocol::chat::ChatEvent) -> Result<()> {
        if event.chat_id != self.chat_id {
            return Ok(());
        }
        if let Some(text) = self.shown.render(&event) {
            crate::output::part(&text);
        }
        match &event.body {
            ChatEventBody::ExecutionStarted(started) => {
                self.running = Some(started.execution_id.clone());
            }
            ChatEventBody::ExecutionFinished(_)
            | ChatEventBody::ExecutionFailed(_)
            | ChatEventBody::ExecutionCancelled(_)
                if event.execution_id == self.running || self.running.is_none() =>
            {
                self.running = None;
                self.asking = Asking::Nothing;
                self.waiting.clear();
                if let Some(next) = self.queued.pop_front() {
                    self.send(&next).await?;
                }
            }
            ChatEventBody::ApprovalRequested(requested) => {
                if matches!(self.asking, Asking::Nothing) {
                    self.ask_approval(&requested.approval_id).await?;
                } else {
                    self.waiting.push_back(requested.approval_id.clone());
                }
            }
            ChatEventBody::ApprovalDecided(resolved) | ChatEventBody::ApprovalExpired(resolved) => {
                self.waiting.retain(|id| *id != resolved.approval_id);
                if matches!(&self.asking, Asking::Approval(asked) if asked.id == resolved.approval_id)
                {
                    self.asking = Asking::Nothing;
                    self.next_approval().await?;
                }
            }
            ChatEventBody::OptionRequested(question) => {
                self.print(&render::question(question));
                self.asking = Asking::Question(Box::new(question.clone()));
            }
            ChatEventBody::OptionAnswered(answered) => {
                if matches!(&self.asking, Asking::Question(asked) if asked.option_id == answered.option_id)
                {
                    self.asking = Asking::Nothing;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// After (re)connecting: what was asked or ran while the stream was away.
    async fn resync(&mut self) -> Result<()> {
        if matches!(self.asking, Asking::Nothing) {
            let pending = self.client.pending_approvals(100).await?;
            for approval in pending.items.into_iter().rev() {
                if approval.requester
                    == (souz_protocol::Requester::Chat {
                        chat_id: self.chat_id.clone(),
                    })
                    && !self.waiting.contains(&approval.id)
                {
                    self.waiting.push_back(approval.id);
                }
            }
            self.next_approval().await?;
        }
        Ok(())
    }

    async fn next_approval(&mut self) -> Result<()> {
        while let Some(id) = self.waiting.pop_front() {
            if self.ask_approval(&id).await? {
                break;
            }
        }
        Ok(())
    }

    /// Asks the approval `id` if it still waits; whether it does.
    async fn ask_approval(&mut self, id: &str) -> Result<bool> {
        let approval: Approval = self.client.get(&format!("/v1/approvals/{id}")).await?;
        if approval.status != souz_protocol::ApprovalStatus::Pending {
            return Ok(false);
        }
        self.print(&render::approval(&approval));
        self.asking = Asking::Approval(Box::new(approval));
        Ok(true)
    }

    async fn decide(&mut self, approval: Approval, text: &str) -> Result<()> {
        let Some(answer) = Answer::parse(text) else {
            self.print(&render::approval_choices(&approval));
            self.asking = Asking::Approval(Box::new(approval));
            return Ok(());
        };
        let request = match answer {
            Answer::Yes => DecisionRequest::once(Verdict::Approve, "cli"),
            Answer::No => DecisionRequest::once(Verdict::Deny, "cli"),
            Answer::Suggested => DecisionRequest {
                decision: Verdict::Approve,
                scope: approval.suggested.scope,
                minutes: approval.suggested.minutes,
                argument_match: Some(approval.suggested.argument_match.clone()),
                tool_group: approval.suggested.tool_group,
                via: Some("cli".to_owned()),
            },
        };
        match self.client.decide(&approval.id, &request).await {
            Ok(_) => {}
            // Decided elsewhere a moment ago: its event follows.
            Err(error) => say!(
                "{}",
                crate::texts::error_text(&anyhow::Error::from(error)).await
            ),
        }
        self.next_approval().await
    }

    async fn answer(
        &mut self,
        question: souz_protocol::chat::events::OptionRequestedPayload,
        text: &str,
    ) -> Result<()> {
        let body = match render::choose(&question, text) {
            Ok(answer) => answer,
            Err(problem) => {
                say!("{problem}");
                self.asking = Asking::Question(Box::new(question));
                return Ok(());
            }
        };
        let answered: Result<serde_json::Value, _> = self
            .client
            .post(&format!("/v1/options/{}/answer", question.option_id), &body)
            .await;
        if let Err(error) = answered {
            say!(
                "{}",
                crate::texts::error_text(&anyhow::Error::from(error)).await
            );
        }
        Ok(())
    }
}
