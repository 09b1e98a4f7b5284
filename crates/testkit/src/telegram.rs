//! A fake Telegram Bot API on loopback that speaks the real JSON: `getUpdates` long polls
//! with offsets (updates before the offset are confirmed and dropped, as Telegram does),
//! `sendMessage`, `editMessageText` and `deleteMessage` (checking `MarkdownV2` escaping and
//! the 4,096-unit limit the way Telegram refuses them, refusing an edit that changes nothing
//! with "message is not modified" and one of a message that is not there), keeping each
//! message's current text and buttons ([`FakeTelegram::messages`]), `answerCallbackQuery`,
//! `getMe`, `getFile` and file downloads from `/file/bot<token>/<file_path>` (streamed, with no
//! length; a file may be announced smaller than it is, as a lying server would), a wrong
//! token's 401, scripted 429s with `parameters.retry_after`, and slow methods
//! ([`FakeTelegram::delay`]). Callback data over Telegram's 64 bytes is refused as Telegram
//! refuses it.
//!
//! ```no_run
//! # async fn example() {
//! use souz_testkit::telegram::FakeTelegram;
//! let telegram = FakeTelegram::start("123:secret").await;
//! telegram.push_text(42, "/start CODE");
//! // ... point the bot at telegram.url(), then:
//! let sent = telegram.wait_for_sent(1).await;
//! # }
//! ```

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The characters `MarkdownV2` reserves.
const SPECIAL: &[char] = &[
    '_', '*', '[', ']', '(', ')', '~', '`', '>', '#', '+', '-', '=', '|', '{', '}', '.', '!', '\\',
];
/// How long [`FakeTelegram::wait_for_sent`] waits.
const WAIT: Duration = Duration::from_secs(20);

/// An accepted write: a message sent, edited or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// `sendMessage`, `editMessageText` or `deleteMessage`.
    pub method: String,
    /// The chat.
    pub chat_id: i64,
    /// The message.
    pub message_id: i64,
    /// When the fake accepted it.
    pub at: tokio::time::Instant,
}

/// A message the bot sent (or an edit it made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The chat.
    pub chat_id: i64,
    /// The message's id.
    pub message_id: i64,
    /// The text as Telegram shows it (escapes read).
    pub text: String,
    /// The parse mode it was sent with.
    pub parse_mode: Option<String>,
    /// The callback data of its inline buttons, in order.
    pub buttons: Vec<String>,
    /// The labels of its inline buttons, in order.
    pub labels: Vec<String>,
}

/// A file the bot can fetch.
struct FakeFile {
    bytes: Vec<u8>,
    /// The size `getFile` and the messages announce.
    announced: Option<u64>,
    path: String,
}

#[derive(Default)]
struct Inner {
    files: HashMap<String, FakeFile>,
    downloads: usize,
    pending: Vec<Value>,
    next_update: i64,
    next_message: i64,
    sent: Vec<Sent>,
    edits: Vec<Sent>,
    /// The messages as they stand, by `(chat, message id)`.
    messages: BTreeMap<(i64, i64), Sent>,
    /// Each accepted `sendMessage`, `editMessageText` and `deleteMessage`, in order.
    writes: Vec<Write>,
    answered: Vec<(String, String)>,
    offsets: Vec<i64>,
    /// When each sent message arrived (parallel to `sent`).
    sent_at: Vec<Instant>,
    /// When each update was first handed out by `getUpdates`.
    handed_at: HashMap<i64, Instant>,
    /// `getUpdates` requests being held now.
    polls_held: usize,
    failures: HashMap<String, VecDeque<u64>>,
    /// How long each call of a method is held before it is answered.
    delays: HashMap<String, Duration>,
    calls: HashMap<String, usize>,
}

struct Shared {
    token: String,
    inner: Mutex<Inner>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The fake Bot API; dropping it stops the server.
pub struct FakeTelegram {
    url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeTelegram {
    /// Starts the fake for the bot with `token`, on `127.0.0.1:0`.
    ///
    /// # Panics
    /// If no loopback port can be bound (a broken test machine).
    #[allow(clippy::expect_used)]
    pub async fn start(token: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            inner: Mutex::new(Inner {
                next_update: 1000,
                next_message: 1,
                ..Inner::default()
            }),
            changed: Notify::new(),
        });
        let app = Router::new()
            .route("/{bot}/{method}", axum::routing::post(method))
            .route("/file/{bot}/{*path}", axum::routing::get(download))
            .with_state(Arc::clone(&shared));
        #[allow(
            clippy::disallowed_methods,
            reason = "the server's task is owned by the FakeTelegram, which aborts it when dropped"
        )]
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://{address}"),
            shared,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`, the `api_url` to configure.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Queues a private text message from user `user_id` (its chat has the same id); its
    /// update id.
    pub fn push_text(&self, user_id: i64, text: &str) -> i64 {
        self.push_message(user_id, user_id, "private", text)
    }

    /// Queues a text message from `user_id` in chat `chat_id` of `chat_type`; its update id.
    pub fn push_message(&self, user_id: i64, chat_id: i64, chat_type: &str, text: &str) -> i64 {
        let message = json!({
            "message_id": 1,
            "from": {"id": user_id, "is_bot": false, "first_name": "Tester",
                     "username": format!("user{user_id}")},
            "chat": {"id": chat_id, "type": chat_type, "first_name": "Tester"},
            "date": 1_700_000_000,
            "text": text,
        });
        self.push_update("message", message)
    }

    /// Keeps `bytes` as a file the bot can fetch, announced (by `getFile` and the messages that
    /// carry it) as `announced` bytes (`None`: no size announced); its file id.
    pub fn add_file(&self, bytes: Vec<u8>, announced: Option<u64>) -> String {
        let mut inner = self.shared.lock();
        let number = inner.files.len() + 1;
        let file_id = format!("file-id-{number}");
        let path = format!("documents/file_{number}.bin");
        inner.files.insert(
            file_id.clone(),
            FakeFile {
                bytes,
                announced,
                path,
            },
        );
        file_id
    }

    /// Queues a private photo from `user_id` in the sizes `file_ids` (smallest first, each from
    /// [`FakeTelegram::add_file`]) with `caption`; its update id.
    pub fn push_photo(&self, user_id: i64, file_ids: &[&str], caption: Option<&str>) -> i64 {
        let sizes: Vec<Value> = file_ids
            .iter()
            .enumerate()
            .map(|(index, file_id)| {
                let side = 90 * (index + 1);
                json!({"file_id": file_id, "file_unique_id": format!("u-{file_id}"),
                       "width": side, "height": side, "file_size": self.announced(file_id)})
            })
            .collect();
        let mut fields = json!({"photo": sizes});
        if let Some(caption) = caption {
            fields["caption"] = json!(caption);
        }
        self.push_private(user_id, fields)
    }

    /// Queues a private document `file_id` named `name` from `user_id` with `caption`; its
    /// update id.
    pub fn push_document(
        &self,
        user_id: i64,
        file_id: &str,
        name: &str,
        caption: Option<&str>,
    ) -> i64 {
        let document = json!({"file_id": file_id, "file_unique_id": format!("u-{file_id}"),
                              "file_name": name, "mime_type": "application/octet-stream",
                              "file_size": self.announced(file_id)});
        let mut fields = json!({"document": document});
        if let Some(caption) = caption {
            fields["caption"] = json!(caption);
        }
        self.push_private(user_id, fields)
    }

    /// Queues a private message from `user_id` with the message fields `fields` (`voice`,
    /// `sticker`, ...); its update id.
    pub fn push_private(&self, user_id: i64, fields: Value) -> i64 {
        let mut message = json!({
            "message_id": 1,
            "from": {"id": user_id, "is_bot": false, "first_name": "Tester",
                     "username": format!("user{user_id}")},
            "chat": {"id": user_id, "type": "private", "first_name": "Tester"},
            "date": 1_700_000_000,
        });
        if let (Some(message), Value::Object(fields)) = (message.as_object_mut(), fields) {
            message.extend(fields);
        }
        self.push_update("message", message)
    }

    fn announced(&self, file_id: &str) -> Option<u64> {
        self.shared
            .lock()
            .files
            .get(file_id)
            .and_then(|file| file.announced)
    }

    /// When each sent message arrived, in the order of [`FakeTelegram::sent`].
    pub fn sent_times(&self) -> Vec<Instant> {
        self.shared.lock().sent_at.clone()
    }

    /// When `getUpdates` first handed out the update `update_id`.
    pub fn handed_at(&self, update_id: i64) -> Option<Instant> {
        self.shared.lock().handed_at.get(&update_id).copied()
    }

    /// How many `getUpdates` requests are being held (long polls waiting) now.
    pub fn polls_held(&self) -> usize {
        self.shared.lock().polls_held
    }

    /// How many file downloads were asked for.
    pub fn downloads(&self) -> usize {
        self.shared.lock().downloads
    }

    /// Queues a button press with `data` from `user_id`; its update id.
    pub fn push_press(&self, user_id: i64, data: &str) -> i64 {
        let query = json!({
            "id": format!("press-{user_id}-{data}"),
            "from": {"id": user_id, "is_bot": false, "first_name": "Tester"},
            "chat_instance": "1",
            "data": data,
        });
        self.push_update("callback_query", query)
    }

    fn push_update(&self, kind: &str, body: Value) -> i64 {
        let id = {
            let mut inner = self.shared.lock();
            inner.next_update += 1;
            let id = inner.next_update;
            inner.pending.push(json!({"update_id": id, kind: body}));
            id
        };
        self.shared.changed.notify_waiters();
        id
    }

    /// Makes the next `times` calls of `method` fail with 429 and `retry_after` seconds.
    pub fn fail_with_429(&self, method: &str, times: usize, retry_after: u64) {
        let mut inner = self.shared.lock();
        let queue = inner.failures.entry(method.to_owned()).or_default();
        queue.extend(std::iter::repeat_n(retry_after, times));
    }

    /// Holds every later call of `method` for `delay` before answering it (a slow server).
    pub fn delay(&self, method: &str, delay: Duration) {
        self.shared.lock().delays.insert(method.to_owned(), delay);
    }

    /// The messages sent so far, in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.shared.lock().sent.clone()
    }

    /// The edits made so far, in order.
    pub fn edits(&self) -> Vec<Sent> {
        self.shared.lock().edits.clone()
    }

    /// The messages of `chat` as they stand now (after edits, without deleted ones), oldest
    /// first.
    pub fn messages(&self, chat: i64) -> Vec<Sent> {
        self.shared
            .lock()
            .messages
            .range((chat, i64::MIN)..=(chat, i64::MAX))
            .map(|(_, message)| message.clone())
            .collect()
    }

    /// Each accepted write (`sendMessage`, `editMessageText`, `deleteMessage`), in order.
    pub fn writes(&self) -> Vec<Write> {
        self.shared.lock().writes.clone()
    }

    /// Waits until `check` gives a value (checked after every change), and returns it.
    ///
    /// # Panics
    /// When it does not within 20 seconds; the panic names `what`.
    #[allow(clippy::panic)]
    pub async fn wait_until<T>(&self, what: &str, check: impl Fn(&Self) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let notified = self.shared.changed.notified();
            if let Some(value) = check(self) {
                return value;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("waited for {what}; sent {:?}", self.sent());
            }
        }
    }

    /// The button presses answered, as `(query id, text)`.
    pub fn answered(&self) -> Vec<(String, String)> {
        self.shared.lock().answered.clone()
    }

    /// The offsets `getUpdates` was called with, in order.
    pub fn offsets(&self) -> Vec<i64> {
        self.shared.lock().offsets.clone()
    }

    /// How many times `method` was called (failed calls included).
    pub fn calls(&self, method: &str) -> usize {
        self.shared.lock().calls.get(method).copied().unwrap_or(0)
    }

    /// Updates not yet confirmed by an offset past them.
    pub fn unconfirmed(&self) -> usize {
        self.shared.lock().pending.len()
    }

    /// Waits until at least `count` messages were sent, and returns them all.
    ///
    /// # Panics
    /// When they do not come within 20 seconds.
    #[allow(clippy::panic)]
    pub async fn wait_for_sent(&self, count: usize) -> Vec<Sent> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let notified = self.shared.changed.notified();
            let sent = self.sent();
            if sent.len() >= count {
                return sent;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("waited for {count} sent messages, got {sent:?}");
            }
        }
    }

    /// Waits until at least `count` button presses were answered, and returns them all.
    ///
    /// # Panics
    /// When they do not come within 20 seconds.
    #[allow(clippy::panic)]
    pub async fn wait_for_answered(&self, count: usize) -> Vec<(String, String)> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let notified = self.shared.changed.notified();
            let answered = self.answered();
            if answered.len() >= count {
                return answered;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("waited for {count} answered presses, got {answered:?}");
            }
        }
    }

    /// Waits until `getUpdates` was called with an offset past `update_id` (it was handled).
    ///
    /// # Panics
    /// When that does not happen within 20 seconds.
    #[allow(clippy::panic)]
    pub async fn wait_for_confirmed(&self, update_id: i64) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let notified = self.shared.changed.notified();
            if self.offsets().iter().any(|offset| *offset > update_id) {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!(
                    "update {update_id} was never confirmed: {:?}",
                    self.offsets()
                );
            }
        }
    }
}

fn ok(result: Value) -> Response {
    axum::Json(json!({"ok": true, "result": result})).into_response()
}

fn error(status: StatusCode, description: &str, parameters: Option<Value>) -> Response {
    let mut body = json!({"ok": false, "error_code": status.as_u16(), "description": description});
    if let Some(parameters) = parameters {
        body["parameters"] = parameters;
    }
    (status, axum::Json(body)).into_response()
}

async fn method(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized", None);
    }
    let params: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(params) => params,
            Err(_) => return error(StatusCode::BAD_REQUEST, "Bad Request: invalid JSON", None),
        }
    };
    let (failure, delay) = {
        let mut inner = shared.lock();
        *inner.calls.entry(method.clone()).or_default() += 1;
        let failure = inner
            .failures
            .get_mut(&method)
            .and_then(VecDeque::pop_front);
        (failure, inner.delays.get(&method).copied())
    };
    shared.changed.notify_waiters();
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    if let Some(retry_after) = failure {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            &format!("Too Many Requests: retry after {retry_after}"),
            Some(json!({"retry_after": retry_after})),
        );
    }
    match method.as_str() {
        "getUpdates" => get_updates(&shared, &params).await,
        "sendMessage" => send_checked(&shared, &params, false),
        "editMessageText" => send_checked(&shared, &params, true),
        "deleteMessage" => delete(&shared, &params),
        "answerCallbackQuery" => {
            let id = params["callback_query_id"].as_str().unwrap_or_default();
            let text = params["text"].as_str().unwrap_or_default();
            shared
                .lock()
                .answered
                .push((id.to_owned(), text.to_owned()));
            shared.changed.notify_waiters();
            ok(json!(true))
        }
        "getFile" => get_file(&shared, &params),
        "getMe" => {
            ok(json!({"id": 1, "is_bot": true, "first_name": "Souz", "username": "souz_bot"}))
        }
        _ => error(StatusCode::NOT_FOUND, "Not Found: method not found", None),
    }
}

/// The Bot API's limit on files bots download.
const MAX_DOWNLOAD: usize = 20 * 1024 * 1024;

fn get_file(shared: &Shared, params: &Value) -> Response {
    let file_id = params["file_id"].as_str().unwrap_or_default();
    let inner = shared.lock();
    let Some(file) = inner.files.get(file_id) else {
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request: invalid file_id",
            None,
        );
    };
    if file.bytes.len() > MAX_DOWNLOAD {
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request: file is too big",
            None,
        );
    }
    let mut result = json!({"file_id": file_id, "file_unique_id": format!("u-{file_id}"),
                            "file_path": file.path});
    if let Some(size) = file.announced {
        result["file_size"] = json!(size);
    }
    ok(result)
}

/// A file's bytes, streamed in chunks with no `Content-Length` (so only the body tells its
/// size).
async fn download(
    State(shared): State<Arc<Shared>>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized", None);
    }
    let bytes = {
        let mut inner = shared.lock();
        inner.downloads += 1;
        inner
            .files
            .values()
            .find(|file| file.path == path)
            .map(|file| file.bytes.clone())
    };
    shared.changed.notify_waiters();
    let Some(bytes) = bytes else {
        return error(StatusCode::NOT_FOUND, "Not Found", None);
    };
    let chunks: Vec<Result<Bytes, std::io::Error>> = bytes
        .chunks(16 * 1024)
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    Body::from_stream(futures::stream::iter(chunks)).into_response()
}

async fn get_updates(shared: &Shared, params: &Value) -> Response {
    let offset = params["offset"].as_i64().unwrap_or(0);
    let timeout = params["timeout"].as_u64().unwrap_or(0).min(50);
    {
        let mut inner = shared.lock();
        inner.offsets.push(offset);
        inner
            .pending
            .retain(|update| update["update_id"].as_i64().unwrap_or(0) >= offset);
    }
    shared.changed.notify_waiters();
    let _held = Held::new(shared);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        let notified = shared.changed.notified();
        let ready: Vec<Value> = {
            let mut inner = shared.lock();
            let ready = inner.pending.clone();
            let now = Instant::now();
            for update in &ready {
                let id = update["update_id"].as_i64().unwrap_or(0);
                inner.handed_at.entry(id).or_insert(now);
            }
            ready
        };
        if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
            return ok(Value::Array(ready));
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

/// Counts a `getUpdates` request as held while it lives (also when the client goes away).
struct Held<'a>(&'a Shared);

impl<'a> Held<'a> {
    fn new(shared: &'a Shared) -> Self {
        shared.lock().polls_held += 1;
        Self(shared)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut inner = self.0.lock();
        inner.polls_held = inner.polls_held.saturating_sub(1);
    }
}

/// Refuses callback data Telegram refuses (empty, or over 64 bytes); else sends or edits.
fn send_checked(shared: &Shared, params: &Value, edit: bool) -> Response {
    let (buttons, _) = keyboard(params);
    if buttons
        .iter()
        .any(|data| data.is_empty() || data.len() > 64)
    {
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request: BUTTON_DATA_INVALID",
            None,
        );
    }
    send(shared, params, edit)
}

fn send(shared: &Shared, params: &Value, edit: bool) -> Response {
    let Some(chat_id) = params["chat_id"].as_i64() else {
        return error(StatusCode::BAD_REQUEST, "Bad Request: chat not found", None);
    };
    let raw = params["text"].as_str().unwrap_or_default();
    let parse_mode = params["parse_mode"].as_str().map(str::to_owned);
    let text = if parse_mode.as_deref() == Some("MarkdownV2") {
        match read_markdown_v2(raw) {
            Ok(text) => text,
            Err(problem) => {
                let description = format!("Bad Request: can't parse entities: {problem}");
                return error(StatusCode::BAD_REQUEST, &description, None);
            }
        }
    } else {
        raw.to_owned()
    };
    if text.trim().is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request: message text is empty",
            None,
        );
    }
    if text.encode_utf16().count() > 4096 {
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request: message is too long",
            None,
        );
    }
    let (buttons, labels) = keyboard(params);
    let mut inner = shared.lock();
    let message_id = if edit {
        let message_id = params["message_id"].as_i64().unwrap_or(0);
        match inner.messages.get(&(chat_id, message_id)) {
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message to edit not found",
                    None,
                );
            }
            Some(shown)
                if shown.text == text && shown.buttons == buttons && shown.labels == labels =>
            {
                return error(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message is not modified: specified new message content and \
                     reply markup are exactly the same as a current content and reply markup \
                     of the message",
                    None,
                );
            }
            Some(_) => message_id,
        }
    } else {
        inner.next_message += 1;
        inner.next_message
    };
    let record = Sent {
        chat_id,
        message_id,
        text: text.clone(),
        parse_mode,
        buttons,
        labels,
    };
    inner.messages.insert((chat_id, message_id), record.clone());
    let method = if edit {
        "editMessageText"
    } else {
        "sendMessage"
    };
    inner.writes.push(Write {
        method: method.to_owned(),
        chat_id,
        message_id,
        at: tokio::time::Instant::now(),
    });
    if edit {
        inner.edits.push(record);
    } else {
        inner.sent.push(record);
        inner.sent_at.push(Instant::now());
    }
    drop(inner);
    shared.changed.notify_waiters();
    ok(json!({
        "message_id": message_id,
        "date": 1_700_000_000,
        "chat": {"id": chat_id, "type": "private"},
        "text": text,
    }))
}

fn delete(shared: &Shared, params: &Value) -> Response {
    let key = (
        params["chat_id"].as_i64().unwrap_or(0),
        params["message_id"].as_i64().unwrap_or(0),
    );
    let mut inner = shared.lock();
    if inner.messages.remove(&key).is_none() {
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request: message to delete not found",
            None,
        );
    }
    inner.writes.push(Write {
        method: "deleteMessage".to_owned(),
        chat_id: key.0,
        message_id: key.1,
        at: tokio::time::Instant::now(),
    });
    drop(inner);
    shared.changed.notify_waiters();
    ok(json!(true))
}

/// The callback data and the labels of the inline keyboard in `params`.
fn keyboard(params: &Value) -> (Vec<String>, Vec<String>) {
    let keyboard: Vec<&Value> = params["reply_markup"]["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
        .collect();
    let field = |name: &str| -> Vec<String> {
        keyboard
            .iter()
            .filter_map(|button| button[name].as_str().map(str::to_owned))
            .collect()
    };
    (field("callback_data"), field("text"))
}

/// Reads `MarkdownV2` as plain text, refusing what Telegram refuses of a text without
/// entities: a reserved character not escaped.
fn read_markdown_v2(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut characters = text.chars();
    while let Some(character) = characters.next() {
        if character == '\\' {
            match characters.next() {
                Some(next) => out.push(next),
                None => return Err("a backslash at the end".to_owned()),
            }
        } else if SPECIAL.contains(&character) {
            return Err(format!(
                "character '{character}' is reserved and must be escaped with the preceding '\\'"
            ));
        } else {
            out.push(character);
        }
    }
    Ok(out)
}
