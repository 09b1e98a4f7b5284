//! Client tools on the chat side (original §1.9): the bundled client skills Souz ships, which of
//! them a device's turn offers (by the device's declared capabilities), the durable record of
//! each call, its announcement to the device, and the device's `tool.result`.
//!
//! The skills ship inside the binary (`crates/core/skills/client/*/SKILL.md`): spec-valid
//! bundles whose `metadata` says they are client tools (`souz.transport: client-websocket`),
//! the id devices know (`souz.skill-id`), the deadline (`souz.timeout`, ISO 8601 `PT…`), the
//! risk class the approval policy sees (`souz.risk`), the capabilities any one of which a device
//! must declare (`souz.capabilities`) and the arguments' schema (`souz.input-schema`).
//!
//! Which capability a tool needs, and why:
//! - `user.ask` needs `speech` or `screen`: asking is saying or showing a question, and a device
//!   that can do neither cannot ask one.
//! - `device.media.open` needs `device_tools`: it drives the device's own media apps.
//!
//! Invariants:
//! - One pending call per thread (a partial unique index); a second is refused to the model as
//!   `client_tool_busy` and nothing is stored.
//! - The call's row is stored with its `tool.call.started` event in one transaction, after its
//!   waiter is registered: a device that answers at once finds someone waiting.
//! - A `tool.result` is stored (status, result, hash) before its ack is sent, and the waiter gets
//!   it only after the ack was sent ([`ResultDelivery`]). Results are idempotent by
//!   `(chat, thread, toolCallId)` and the hash: the same again is an accepted duplicate, another
//!   is `idempotency_conflict`; after the deadline, `client_tool_timed_out`.
//! - A disconnect does not end the wait: the waiter belongs to the turn, not to the socket.
//! - The wait ends at the deadline (row `timed_out`, stored before the model reads
//!   `{"status":"timed_out",…}`) or when the turn is cancelled (row `cancelled`, stored before the
//!   cancellation goes on).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use souz_protocol::chat::ChatEventBody;
use souz_protocol::chat::devices::{
    AckError, Capability, DeviceErrorCode, ToolResult, ToolResultStatus,
};
use souz_protocol::{Risk, ToolCategory};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Chats;
use super::events::NewChatEvent;
use crate::agent::client_tools::{
    ClientCall, ClientOutcome, ClientToolHost, ClientToolSpec, ClientTools,
};
use crate::store::StoreError;
use crate::store::codec::{from_time, now, to_time};

/// The chat event a client tool call is stored as; devices see it as `tool.call.started`.
pub(crate) const CLIENT_CALL_STARTED: &str = "client_tool.call.started";

/// The bundled client skills: (folder, SKILL.md).
const BUNDLED: [(&str, &str); 2] = [
    (
        "user-ask",
        include_str!("../../skills/client/user-ask/SKILL.md"),
    ),
    (
        "device-media-open",
        include_str!("../../skills/client/device-media-open/SKILL.md"),
    ),
];

/// A bundled client skill: its tool, and the capabilities any one of which a device needs.
#[derive(Debug, Clone)]
pub(crate) struct ClientSkill {
    pub tool: ClientToolSpec,
    pub needs: Vec<Capability>,
}

/// The bundled client skills that load (a broken one is logged and left out).
pub(crate) fn bundled() -> &'static [ClientSkill] {
    static SKILLS: OnceLock<Vec<ClientSkill>> = OnceLock::new();
    SKILLS.get_or_init(|| {
        BUNDLED
            .iter()
            .filter_map(|(folder, text)| match parse_skill(folder, text) {
                Ok(skill) => Some(skill),
                Err(error) => {
                    tracing::error!(%folder, %error, "a bundled client skill does not load");
                    None
                }
            })
            .collect()
    })
}

/// Reads one client skill from its SKILL.md.
pub(crate) fn parse_skill(folder: &str, text: &str) -> Result<ClientSkill, String> {
    let parsed = crate::skills::frontmatter::parse(text, Some(folder)).map_err(|problems| {
        problems
            .iter()
            .map(|problem| problem.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let front = parsed.frontmatter;
    let meta = |key: &str| {
        front
            .metadata
            .get(key)
            .map(|value| value.trim().to_owned())
            .ok_or_else(|| format!("metadata `{key}` is missing"))
    };
    if meta("souz.transport")? != "client-websocket" {
        return Err("not a client tool (souz.transport is not client-websocket)".into());
    }
    let timeout = meta("souz.timeout")?;
    let deadline = iso_duration(&timeout)
        .ok_or_else(|| format!("souz.timeout `{timeout}` is no PT… duration"))?;
    let risk: Risk = serde_json::from_value(Value::String(meta("souz.risk")?))
        .map_err(|error| format!("souz.risk: {error}"))?;
    let needs = meta("souz.capabilities")?
        .split_whitespace()
        .map(|name| {
            serde_json::from_value::<Capability>(Value::String(name.to_owned()))
                .map_err(|error| format!("souz.capabilities `{name}`: {error}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let parameters: Value = serde_json::from_str(&meta("souz.input-schema")?)
        .map_err(|error| format!("souz.input-schema: {error}"))?;
    if !parameters.is_object() {
        return Err("souz.input-schema must be an object schema".into());
    }
    Ok(ClientSkill {
        tool: ClientToolSpec {
            name: front.name,
            skill_id: meta("souz.skill-id")?,
            description: front.description,
            parameters,
            deadline,
            category: ToolCategory::Souz,
            risk,
        },
        needs,
    })
}

/// An ISO 8601 duration of hours, minutes and seconds (`PT5M`, `PT1H30M`, `PT2.5S`).
pub(crate) fn iso_duration(text: &str) -> Option<Duration> {
    let mut rest = text.strip_prefix("PT")?;
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let end = rest.find(|c: char| c.is_ascii_alphabetic())?;
        let number: f64 = rest[..end].parse().ok()?;
        let unit = match &rest[end..=end] {
            "H" => 3600.0,
            "M" => 60.0,
            "S" => 1.0,
            _ => return None,
        };
        total += number * unit;
        rest = &rest[end + 1..];
    }
    Duration::try_from_secs_f64(total).ok()
}

/// The device a turn was submitted from.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceContext {
    /// Its id, as it named itself.
    pub device_id: String,
    /// What it declared it can do.
    pub capabilities: Vec<Capability>,
}

/// Keeps `device` as the device that submitted the execution `execution_id` (in the
/// transaction that stores the execution).
pub(crate) fn store_device(
    connection: &Connection,
    execution_id: &str,
    device: &DeviceContext,
) -> Result<(), StoreError> {
    connection.execute(
        "INSERT INTO execution_devices (execution_id, device_id, capabilities) VALUES (?1, ?2, ?3)",
        params![
            execution_id,
            device.device_id,
            serde_json::to_string(&device.capabilities)
                .map_err(|error| StoreError::Corrupt(error.to_string()))?
        ],
    )?;
    Ok(())
}

/// The device that submitted the execution `execution_id`, if one did.
fn stored_device(
    connection: &Connection,
    execution_id: &str,
) -> Result<Option<DeviceContext>, StoreError> {
    let row: Option<(String, String)> = connection
        .query_row(
            "SELECT device_id, capabilities FROM execution_devices WHERE execution_id = ?1",
            [execution_id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    row.map(|(device_id, capabilities)| {
        let capabilities = serde_json::from_str(&capabilities).map_err(|_| {
            StoreError::Corrupt(format!("execution_devices.capabilities of {execution_id}"))
        })?;
        Ok(DeviceContext {
            device_id,
            capabilities,
        })
    })
    .transpose()
}

/// The client tools a device's turn offers: those whose needs it declared.
pub(crate) fn offered_to(device: &DeviceContext) -> Vec<ClientToolSpec> {
    bundled()
        .iter()
        .filter(|skill| {
            skill
                .needs
                .iter()
                .any(|need| device.capabilities.contains(need))
        })
        .map(|skill| skill.tool.clone())
        .collect()
}

/// The turns waiting for a device's result, by `(chat, thread, toolCallId)`.
#[derive(Default)]
pub(crate) struct Waiters(std::sync::Mutex<HashMap<String, oneshot::Sender<ClientOutcome>>>);

impl Waiters {
    fn key(chat_id: &str, execution_id: &str, tool_call_id: &str) -> String {
        format!("{chat_id}\n{execution_id}\n{tool_call_id}")
    }

    fn insert(&self, key: String, sender: oneshot::Sender<ClientOutcome>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, sender);
    }

    fn take(&self, key: &str) -> Option<oneshot::Sender<ClientOutcome>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
    }
}

/// A result to hand to the waiting turn once its ack was sent (dropping it hands it over too:
/// the result is stored, and the turn must not wait for a socket that failed).
pub struct ResultDelivery {
    waiter: Option<(oneshot::Sender<ClientOutcome>, ClientOutcome)>,
}

impl ResultDelivery {
    /// Hands the result to the turn (call after the ack was sent).
    pub fn deliver(mut self) {
        self.hand_over();
    }

    fn hand_over(&mut self) {
        if let Some((sender, outcome)) = self.waiter.take() {
            // The turn may have ended meanwhile (cancelled): nobody to tell.
            let _ = sender.send(outcome);
        }
    }
}

impl Drop for ResultDelivery {
    fn drop(&mut self) {
        self.hand_over();
    }
}

impl std::fmt::Debug for ResultDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultDelivery")
            .field("pending", &self.waiter.is_some())
            .finish()
    }
}

/// The host of one device's turn: carries its client tool calls through the chat.
struct Host {
    chats: Chats,
    chat_id: String,
    execution_id: String,
    device_id: String,
}

impl ClientToolHost for Host {
    fn device_id(&self) -> &str {
        &self.device_id
    }

    fn call(
        &self,
        call: ClientCall,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Option<ClientOutcome>> {
        let chats = self.chats.clone();
        let (chat_id, execution_id, device_id) = (
            self.chat_id.clone(),
            self.execution_id.clone(),
            self.device_id.clone(),
        );
        Box::pin(async move {
            let place = CallPlace {
                chat_id,
                execution_id,
                device_id,
            };
            chats.run_client_tool(place, call, cancel).await
        })
    }
}

/// Where a client tool call runs.
struct CallPlace {
    chat_id: String,
    execution_id: String,
    device_id: String,
}

/// How a stored call stands.
struct StoredCall {
    status: String,
    result_hash: Option<String>,
    deadline_at: DateTime<Utc>,
}

impl Chats {
    /// The client tools of a turn submitted by `device` in `chat_id` as `execution_id`.
    pub(crate) fn client_tools_for(
        &self,
        chat_id: &str,
        execution_id: &str,
        device: &DeviceContext,
    ) -> ClientTools {
        ClientTools {
            offered: offered_to(device),
            host: Arc::new(Host {
                chats: self.clone(),
                chat_id: chat_id.to_owned(),
                execution_id: execution_id.to_owned(),
                device_id: device.device_id.clone(),
            }),
        }
    }

    /// The client tools of the execution `execution_id` of `chat_id` as it goes on (after an
    /// answered question or a decided approval): those of the device that submitted it, if one
    /// did ([`store_device`]).
    pub(crate) async fn stored_device_tools(
        &self,
        chat_id: &str,
        execution_id: &str,
    ) -> Result<Option<ClientTools>, StoreError> {
        let id = execution_id.to_owned();
        let device = self
            .inner
            .store
            .read(move |connection| stored_device(connection, &id))
            .await?;
        Ok(self.device_tools(chat_id, execution_id, device))
    }

    /// [`Chats::client_tools_for`] the device that submitted a turn, when one did.
    pub(crate) fn device_tools(
        &self,
        chat_id: &str,
        execution_id: &str,
        device: Option<DeviceContext>,
    ) -> Option<ClientTools> {
        device.map(|device| self.client_tools_for(chat_id, execution_id, &device))
    }

    /// Sets how long every client tool call waits, whatever its skill says (`None`: the
    /// skill's `souz.timeout`). For tests that cannot wait minutes.
    pub fn set_client_tool_deadline(&self, deadline: Option<Duration>) {
        *self
            .inner
            .client_tool_deadline
            .write()
            .unwrap_or_else(PoisonError::into_inner) = deadline;
    }

    /// The deadline `SOUZ_TEST_CLIENT_TOOL_TIMEOUT_MS` sets for every call (tests cannot wait
    /// a skill's minutes), if it sets one.
    pub(crate) fn deadline_from_environment() -> Option<Duration> {
        crate::config::env::read(crate::config::env::Var::TestClientToolTimeout)
            .and_then(|millis| millis.trim().parse::<u64>().ok())
            .map(Duration::from_millis)
    }

    fn client_tool_deadline(&self, skill: Duration) -> Duration {
        self.inner
            .client_tool_deadline
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or(skill)
    }

    /// Stores and announces one call, then waits for the device, the deadline or `cancel`.
    async fn run_client_tool(
        &self,
        place: CallPlace,
        call: ClientCall,
        cancel: CancellationToken,
    ) -> Option<ClientOutcome> {
        let wait = self.client_tool_deadline(call.tool.deadline);
        let at = now();
        let deadline_at = at + chrono::Duration::from_std(wait).unwrap_or_default();
        let key = Waiters::key(&place.chat_id, &place.execution_id, &call.tool_call_id);
        let (sender, receiver) = oneshot::channel();
        self.inner.client_waiters.insert(key.clone(), sender);
        if let Err(refused) = self.announce_call(&place, &call, deadline_at, at).await {
            self.inner.client_waiters.take(&key);
            return Some(refused);
        }
        let ending = tokio::select! {
            answered = receiver => match answered {
                Ok(outcome) => return Some(outcome),
                // The waiter was dropped without an answer (cannot happen while it is
                // registered): treat it as the deadline.
                Err(_) => "timed_out",
            },
            () = tokio::time::sleep(wait) => "timed_out",
            () = cancel.cancelled() => "cancelled",
        };
        self.inner.client_waiters.take(&key);
        let (chat, execution, call_id) = (
            place.chat_id.clone(),
            place.execution_id.clone(),
            call.tool_call_id.clone(),
        );
        let marked = self
            .inner
            .store
            .write(move |tx| end_pending(tx, (&chat, &execution, &call_id), ending, now()))
            .await;
        match marked {
            Ok(true) => {}
            // A result was stored in the meantime (its ack is on its way): take it.
            Ok(false) => {
                if let Some(outcome) = self.stored_outcome(&place, &call.tool_call_id).await {
                    return Some(outcome);
                }
            }
            Err(error) => tracing::error!(%error, "could not record the end of a client tool call"),
        }
        if ending == "cancelled" {
            return None;
        }
        Some(ClientOutcome::NotSucceeded {
            status: "timed_out".to_owned(),
            error: json!({
                "code": "client_tool_timed_out",
                "message": format!("The device did not answer within {:.1} s.", wait.as_secs_f64()),
            }),
        })
    }

    /// Stores the call and its `tool.call.started` in one transaction; refused when another
    /// call of the thread waits (`client_tool_busy`) or the store fails.
    async fn announce_call(
        &self,
        place: &CallPlace,
        call: &ClientCall,
        deadline_at: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<(), ClientOutcome> {
        let payload = json!({
            "toolCallId": call.tool_call_id,
            "name": call.tool.skill_id,
            "target": "client",
            "deviceId": place.device_id,
            "arguments": call.arguments,
            "deadlineAt": deadline_at,
        });
        let (chat_id, execution_id) = (place.chat_id.clone(), place.execution_id.clone());
        let row = NewCall {
            tool_call_id: call.tool_call_id.clone(),
            tool: call.tool.skill_id.clone(),
            device_id: place.device_id.clone(),
            arguments: call.arguments.to_string(),
            deadline_at,
            at,
        };
        let stored = self
            .inner
            .events
            .publish_with(move |tx| {
                if pending_call(tx, &execution_id)? {
                    return Ok::<_, StoreError>((false, Vec::new()));
                }
                insert_call(tx, &chat_id, &execution_id, &row)?;
                let event = NewChatEvent {
                    chat_id: chat_id.clone(),
                    execution_id: Some(execution_id.clone()),
                    body: ChatEventBody::Other {
                        kind: CLIENT_CALL_STARTED.to_owned(),
                        payload,
                    },
                };
                Ok((true, vec![event]))
            })
            .await;
        match stored {
            Ok((true, _)) => Ok(()),
            Ok((false, _)) => Err(ClientOutcome::refused(
                "client_tool_busy",
                "Another client tool of this thread is still waiting for the device; wait for \
                 its result first.",
            )),
            Err(error) => {
                tracing::error!(%error, "could not store a client tool call");
                Err(ClientOutcome::refused(
                    "internal_error",
                    "Souz could not send the call to the device.",
                ))
            }
        }
    }

    /// The outcome a device stored for a call, if it stored one.
    async fn stored_outcome(&self, place: &CallPlace, tool_call_id: &str) -> Option<ClientOutcome> {
        let (chat, execution, call_id) = (
            place.chat_id.clone(),
            place.execution_id.clone(),
            tool_call_id.to_owned(),
        );
        let row: Option<(String, Option<String>)> = self
            .inner
            .store
            .read(move |c| {
                Ok::<_, StoreError>(
                    c.query_row(
                        "SELECT status, result FROM client_tool_calls \
                         WHERE chat_id = ?1 AND execution_id = ?2 AND tool_call_id = ?3",
                        params![chat, execution, call_id],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()?,
                )
            })
            .await
            .ok()
            .flatten();
        let (status, result) = row?;
        let result: Value = serde_json::from_str(&result?).ok()?;
        Some(outcome_of(&status, &result))
    }

    /// A device's `tool.result`: stored when a call waits for it, refused otherwise. Returns the
    /// ack's outcome (accepted, duplicate, or an error) and the delivery to make after the ack.
    pub(super) async fn client_result(
        &self,
        chat_id: &str,
        result: &ToolResult,
    ) -> Result<(bool, Option<ResultDelivery>), AckError> {
        let status = status_name(result.status);
        let body = json!({
            "status": status,
            "result": result.result,
            "error": result.error,
        });
        let stored_body = body.to_string();
        let stored_hash = hex::encode(Sha256::digest(stored_body.as_bytes()));
        let (chat, thread, call_id) = (
            chat_id.to_owned(),
            result.thread_id.clone(),
            result.tool_call_id.clone(),
        );
        let answer = self
            .inner
            .store
            .write(move |tx| {
                let Some(call) = load_call(tx, &chat, &thread, &call_id)? else {
                    return Ok::<_, StoreError>(Stored::NotFound);
                };
                if call.status != "pending" {
                    return Ok(match call.result_hash {
                        Some(earlier) if earlier == stored_hash => Stored::Duplicate,
                        Some(_) => Stored::Conflict,
                        None if call.status == "timed_out" => Stored::TimedOut,
                        None => Stored::Ended,
                    });
                }
                let at = now();
                // Its thread ended without it (a restart failed it, or a cancel raced the
                // call's own end): nobody will read it.
                if !thread_active(tx, &thread)? {
                    end_pending(tx, (&chat, &thread, &call_id), "cancelled", at)?;
                    return Ok(Stored::Ended);
                }
                if at >= call.deadline_at {
                    end_pending(tx, (&chat, &thread, &call_id), "timed_out", at)?;
                    return Ok(Stored::TimedOut);
                }
                tx.execute(
                    "UPDATE client_tool_calls SET status = ?4, result = ?5, result_hash = ?6, \
                     finished_at = ?7 \
                     WHERE chat_id = ?1 AND execution_id = ?2 AND tool_call_id = ?3 \
                     AND status = 'pending'",
                    params![
                        chat,
                        thread,
                        call_id,
                        status,
                        stored_body,
                        stored_hash,
                        to_time(at)
                    ],
                )?;
                Ok(Stored::Accepted)
            })
            .await;
        let error = |code: DeviceErrorCode, message: &str| AckError {
            code,
            message: message.to_owned(),
        };
        match answer {
            Ok(Stored::Accepted) => {
                let key = Waiters::key(chat_id, &result.thread_id, &result.tool_call_id);
                let delivery = self.inner.client_waiters.take(&key).map(|sender| {
                    let outcome = outcome_of(status, &body);
                    ResultDelivery {
                        waiter: Some((sender, outcome)),
                    }
                });
                Ok((false, delivery))
            }
            Ok(Stored::Duplicate) => Ok((true, None)),
            Ok(Stored::Conflict) => Err(error(
                DeviceErrorCode::IdempotencyConflict,
                "A different result was already stored for this toolCallId.",
            )),
            Ok(Stored::TimedOut) => Err(error(
                DeviceErrorCode::ClientToolTimedOut,
                "The call's deadline passed before this result came.",
            )),
            Ok(Stored::Ended) => Err(error(
                DeviceErrorCode::ThreadAlreadyTerminal,
                "The call ended with its thread before this result came.",
            )),
            Ok(Stored::NotFound) => Err(error(
                DeviceErrorCode::ToolCallNotFound,
                "No client tool call with this id waits for a result.",
            )),
            Err(store) => {
                tracing::error!(error = %store, "could not store a client tool result");
                Err(error(
                    DeviceErrorCode::InternalError,
                    "Souz failed to handle the request; see its log.",
                ))
            }
        }
    }
}

/// What storing a result found.
enum Stored {
    Accepted,
    Duplicate,
    Conflict,
    TimedOut,
    Ended,
    NotFound,
}

fn status_name(status: ToolResultStatus) -> &'static str {
    match status {
        ToolResultStatus::Succeeded => "succeeded",
        ToolResultStatus::Failed => "failed",
        ToolResultStatus::Cancelled => "cancelled",
        ToolResultStatus::TimedOut => "timed_out",
    }
}

/// The model's outcome of a stored result body (`{status, result, error}`).
fn outcome_of(status: &str, body: &Value) -> ClientOutcome {
    if status == "succeeded" {
        ClientOutcome::Succeeded(body["result"].clone())
    } else {
        ClientOutcome::NotSucceeded {
            status: status.to_owned(),
            error: body["error"].clone(),
        }
    }
}

/// A call to store.
struct NewCall {
    tool_call_id: String,
    tool: String,
    device_id: String,
    arguments: String,
    deadline_at: DateTime<Utc>,
    at: DateTime<Utc>,
}

fn pending_call(connection: &Connection, execution_id: &str) -> Result<bool, StoreError> {
    Ok(connection
        .query_row(
            "SELECT 1 FROM client_tool_calls WHERE execution_id = ?1 AND status = 'pending'",
            [execution_id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

fn insert_call(
    connection: &Connection,
    chat_id: &str,
    execution_id: &str,
    call: &NewCall,
) -> Result<(), StoreError> {
    connection.execute(
        "INSERT INTO client_tool_calls (chat_id, execution_id, tool_call_id, tool, target, \
         device_id, arguments, status, deadline_at, created_at) \
         VALUES (?1, ?2, ?3, ?4, 'client', ?5, ?6, 'pending', ?7, ?8)",
        params![
            chat_id,
            execution_id,
            call.tool_call_id,
            call.tool,
            call.device_id,
            call.arguments,
            to_time(call.deadline_at),
            to_time(call.at)
        ],
    )?;
    Ok(())
}

fn load_call(
    connection: &Connection,
    chat_id: &str,
    execution_id: &str,
    tool_call_id: &str,
) -> Result<Option<StoredCall>, StoreError> {
    let row: Option<(String, Option<String>, String)> = connection
        .query_row(
            "SELECT status, result_hash, deadline_at FROM client_tool_calls \
             WHERE chat_id = ?1 AND execution_id = ?2 AND tool_call_id = ?3",
            params![chat_id, execution_id, tool_call_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    row.map(|(status, result_hash, deadline)| {
        Ok(StoredCall {
            status,
            result_hash,
            deadline_at: from_time("client_tool_calls.deadline_at", &deadline)?,
        })
    })
    .transpose()
}

/// Whether the execution is still active.
fn thread_active(connection: &Connection, execution_id: &str) -> Result<bool, StoreError> {
    Ok(connection
        .query_row(
            &format!(
                "SELECT 1 FROM executions WHERE id = ?1 AND status IN {}",
                super::records::ACTIVE_STATUSES
            ),
            [execution_id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Cancels the calls of execution `execution_id` still pending, in the transaction that ends
/// it: a call a turn left behind (its process killed while a device held it) is not left
/// `pending` forever, and a result that comes later is refused as after the thread's end.
pub(crate) fn cancel_pending_of(
    connection: &Connection,
    execution_id: &str,
    at: DateTime<Utc>,
) -> Result<usize, StoreError> {
    Ok(connection.execute(
        "UPDATE client_tool_calls SET status = 'cancelled', finished_at = ?2 \
         WHERE execution_id = ?1 AND status = 'pending'",
        params![execution_id, to_time(at)],
    )?)
}

/// Ends a pending call (chat, thread, toolCallId) as `status` (`timed_out`, `cancelled`);
/// false when it was not pending.
fn end_pending(
    connection: &Connection,
    (chat_id, execution_id, tool_call_id): (&str, &str, &str),
    status: &str,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    Ok(connection.execute(
        "UPDATE client_tool_calls SET status = ?4, finished_at = ?5 \
         WHERE chat_id = ?1 AND execution_id = ?2 AND tool_call_id = ?3 AND status = 'pending'",
        params![chat_id, execution_id, tool_call_id, status, to_time(at)],
    )? == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_skills_load_with_their_deadlines_and_needs() {
        let skills = bundled();
        assert_eq!(skills.len(), BUNDLED.len(), "every bundled skill loads");
        let ask = skills
            .iter()
            .find(|skill| skill.tool.skill_id == "user.ask")
            .unwrap();
        assert_eq!(ask.tool.name, "user-ask");
        assert_eq!(ask.tool.deadline, Duration::from_secs(300));
        assert_eq!(ask.needs, [Capability::Speech, Capability::Screen]);
        assert_eq!(ask.tool.parameters["required"], json!(["question"]));
        let media = skills
            .iter()
            .find(|skill| skill.tool.skill_id == "device.media.open")
            .unwrap();
        assert_eq!(media.tool.deadline, Duration::from_secs(60));
        assert_eq!(media.needs, [Capability::DeviceTools]);
    }

    #[test]
    fn a_device_is_offered_the_tools_its_capabilities_allow() {
        let names = |capabilities: Vec<Capability>| {
            offered_to(&DeviceContext {
                device_id: "d".into(),
                capabilities,
            })
            .into_iter()
            .map(|tool| tool.skill_id)
            .collect::<Vec<_>>()
        };
        assert_eq!(names(vec![Capability::Speech]), ["user.ask"]);
        assert_eq!(
            names(vec![Capability::Screen, Capability::DeviceTools]),
            ["user.ask", "device.media.open"]
        );
        assert!(names(vec![Capability::Oauth]).is_empty());
    }

    #[test]
    fn durations_are_read_as_iso_8601() {
        assert_eq!(iso_duration("PT5M"), Some(Duration::from_secs(300)));
        assert_eq!(iso_duration("PT1H1S"), Some(Duration::from_secs(3601)));
        assert_eq!(iso_duration("PT0.5S"), Some(Duration::from_millis(500)));
        assert_eq!(iso_duration("P1D"), None);
        assert_eq!(iso_duration("PT"), None);
        assert_eq!(iso_duration("PT5X"), None);
    }
}
