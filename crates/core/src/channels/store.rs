//! The Telegram channel's rows (migration `telegram_channel`): one `telegram_state` row (the
//! next update to ask for, the linked account, the Souz chat it talks in, the waiting link
//! code's hash) and the `telegram_audit` rows. Plain functions over a connection or a
//! transaction, called inside the store's blocking calls through the runtime's facade.
//!
//! Invariants:
//! - `next_offset` only grows: an update is handled, then the offset moves past it, so after a
//!   restart the poll asks for exactly the updates not yet handled.
//! - A link code is kept as its SHA-256 only, compared in constant time, used at most once
//!   (claiming clears it), and refused after it expires or while an account is linked.
//! - A button's callback data is a random handle, never the approval's or question's id;
//!   pressing one deletes every handle of its subject ([`take_press`]), so a replay or another
//!   button finds nothing. The buttons of a prompt closed elsewhere stay [`PRESS_KEEP_HOURS`]
//!   (a late press is told how it ended); claiming a prompt sweeps the handles of prompts closed
//!   longer ago and of none at all: `telegram_presses` holds the buttons of open and recently
//!   closed prompts only.
//! - An approval or a question is prompted in Telegram at most once: [`claim_prompt`] inserts
//!   its row or finds one; a prompt whose send failed is dropped ([`drop_prompt`]) so it can
//!   be tried again. Closed prompts are forgotten after [`PROMPT_KEEP_DAYS`] days. (The
//!   prompts' `approval_id` column holds the subject: the question's id for a question.)
//! - A multiple-choice question's prompt keeps the choices picked so far ([`toggle`],
//!   [`selected`]); each press of one of its buttons uses up all of them like any press, and
//!   the prompt is redrawn with fresh ones.
//! - Of a Telegram user who is not the linked one nothing is kept but one audit row per kind
//!   (kind and user id), however many messages they send, and a refusal is sent to each such
//!   user once: [`refuse_once`] says whether this is the first.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::store::StoreError;
use crate::store::codec::{from_json, from_time, from_time_opt, to_json, to_time};

/// The account a link bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    /// Its Telegram user id.
    pub user_id: i64,
    /// The private chat it linked from (the bot answers there).
    pub telegram_chat: i64,
    /// Its `@username`, when it has one.
    pub username: Option<String>,
    /// When.
    pub linked_at: DateTime<Utc>,
}

/// The channel's state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TelegramState {
    /// The first update id the next `getUpdates` asks for.
    pub next_offset: i64,
    /// The linked account.
    pub link: Option<Link>,
    /// The Souz chat the linked account talks in, once it wrote.
    pub souz_chat: Option<String>,
    /// Until when the waiting link code is valid.
    pub code_expires_at: Option<DateTime<Utc>>,
}

/// What presenting a link code did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The sender is now the linked account.
    Linked,
    /// Another account is linked already: nothing changed.
    Taken,
    /// No such code, or it expired: nothing changed.
    Rejected,
}

/// Who presents a code, and from where.
#[derive(Debug, Clone)]
pub(crate) struct Claimant {
    /// Its Telegram user id.
    pub user_id: i64,
    /// Its private chat with the bot.
    pub telegram_chat: i64,
    /// Its `@username`.
    pub username: Option<String>,
}

/// The hex SHA-256 of a code as it is kept: upper-cased, blanks and dashes removed, and read
/// as Crockford's base 32 reads (O is 0, I and L are 1).
pub(crate) fn code_hash(code: &str) -> String {
    let normalized: String = code
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .flat_map(char::to_uppercase)
        .map(|c| match c {
            'O' => '0',
            'I' | 'L' => '1',
            other => other,
        })
        .collect();
    hex::encode(Sha256::digest(normalized.as_bytes()))
}

/// The channel's state.
pub(crate) fn state(connection: &Connection) -> Result<TelegramState, StoreError> {
    let row = connection
        .query_row(
            "SELECT next_offset, user_id, telegram_chat, username, linked_at, souz_chat,
                    code_expires_at
             FROM telegram_state WHERE id = 1",
            [],
            |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, Option<i64>>(1)?,
                    row.get::<_, Option<i64>>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, Option<String>>(5)?,
                    row.get::<_, Option<String>>(6)?,
                ))
            },
        )
        .optional()?;
    let Some((next_offset, user, chat, username, linked_at, souz_chat, expires)) = row else {
        return Err(StoreError::Corrupt("telegram_state: no row".to_owned()));
    };
    let link = match (user, chat, linked_at) {
        (Some(user_id), Some(telegram_chat), Some(linked_at)) => Some(Link {
            user_id,
            telegram_chat,
            username,
            linked_at: from_time("linked_at", &linked_at)?,
        }),
        _ => None,
    };
    Ok(TelegramState {
        next_offset,
        link,
        souz_chat,
        code_expires_at: from_time_opt("code_expires_at", expires)?,
    })
}

/// Keeps `hash` as the waiting link code until `expires_at` (replacing any earlier one).
/// `false`, and nothing kept, while an account is linked.
pub(crate) fn set_code(
    connection: &Connection,
    hash: &str,
    expires_at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let changed = connection.execute(
        "UPDATE telegram_state SET code_hash = ?1, code_expires_at = ?2
         WHERE id = 1 AND user_id IS NULL",
        params![hash, to_time(expires_at)],
    )?;
    Ok(changed == 1)
}

/// Links `claimant` when `code` is the waiting, unexpired code and no account is linked; the
/// code is used up either way it matched.
pub(crate) fn claim(
    connection: &Connection,
    code: &str,
    claimant: &Claimant,
    now: DateTime<Utc>,
) -> Result<Claim, StoreError> {
    let (linked, hash, expires): (Option<i64>, Option<String>, Option<String>) = connection
        .query_row(
            "SELECT user_id, code_hash, code_expires_at FROM telegram_state WHERE id = 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
    if linked.is_some() {
        audit_once(connection, "refused", claimant.user_id, now)?;
        return Ok(Claim::Taken);
    }
    let presented = code_hash(code);
    let matches = hash.is_some_and(|hash| bool::from(hash.as_bytes().ct_eq(presented.as_bytes())));
    let fresh = from_time_opt("code_expires_at", expires)?.is_some_and(|until| now < until);
    if !(matches && fresh) {
        audit_once(connection, "code_rejected", claimant.user_id, now)?;
        return Ok(Claim::Rejected);
    }
    connection.execute(
        "UPDATE telegram_state SET user_id = ?1, telegram_chat = ?2, username = ?3,
                linked_at = ?4, souz_chat = NULL, code_hash = NULL, code_expires_at = NULL
         WHERE id = 1",
        params![
            claimant.user_id,
            claimant.telegram_chat,
            claimant.username,
            to_time(now)
        ],
    )?;
    audit(connection, "linked", Some(claimant.user_id), now)?;
    Ok(Claim::Linked)
}

/// Forgets the linked account (and any waiting code); `true` when one was linked.
pub(crate) fn unlink(connection: &Connection, now: DateTime<Utc>) -> Result<bool, StoreError> {
    let linked: Option<i64> = connection.query_row(
        "SELECT user_id FROM telegram_state WHERE id = 1",
        [],
        |row| row.get(0),
    )?;
    connection.execute(
        "UPDATE telegram_state SET user_id = NULL, telegram_chat = NULL, username = NULL,
                linked_at = NULL, souz_chat = NULL, code_hash = NULL, code_expires_at = NULL
         WHERE id = 1",
        [],
    )?;
    if let Some(user_id) = linked {
        audit(connection, "unlinked", Some(user_id), now)?;
    }
    Ok(linked.is_some())
}

/// Records a refusal of `user_id`; `true` when it is the first (the one to answer).
pub(crate) fn refuse_once(
    connection: &Connection,
    user_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    audit_once(connection, "refused", user_id, now)
}

/// Records `kind` for `user_id` unless it is recorded already; `true` when this is the first.
/// Anyone on Telegram can write to the bot, so what a stranger does leaves one row per kind,
/// however many messages they send.
fn audit_once(
    connection: &Connection,
    kind: &str,
    user_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let earlier: i64 = connection.query_row(
        "SELECT COUNT(*) FROM telegram_audit WHERE telegram_user_id = ?1 AND kind = ?2",
        params![user_id, kind],
        |row| row.get(0),
    )?;
    if earlier == 0 {
        audit(connection, kind, Some(user_id), now)?;
    }
    Ok(earlier == 0)
}

/// Moves the next offset to at least `next` (never back).
pub(crate) fn advance_offset(connection: &Connection, next: i64) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE telegram_state SET next_offset = MAX(next_offset, ?1) WHERE id = 1",
        params![next],
    )?;
    Ok(())
}

/// Records the Souz chat the linked account talks in (while `user_id` is still linked).
pub(crate) fn set_souz_chat(
    connection: &Connection,
    user_id: i64,
    chat_id: &str,
) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE telegram_state SET souz_chat = ?1 WHERE id = 1 AND user_id = ?2",
        params![chat_id, user_id],
    )?;
    Ok(())
}

/// What a button does to its subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Approves the approval once.
    Approve,
    /// Denies the approval.
    Deny,
    /// Approves the approval with the scope it suggests.
    ApproveSuggested,
    /// Answers the question with the choice of this id.
    Answer(String),
    /// Picks or unpicks the choice of this id of a multiple-choice question.
    Toggle(String),
    /// Answers a multiple-choice question with the choices picked.
    Submit,
}

impl Action {
    fn stored(&self) -> (&'static str, Option<&str>) {
        match self {
            Self::Approve => ("approve", None),
            Self::Deny => ("deny", None),
            Self::ApproveSuggested => ("approve_suggested", None),
            Self::Answer(choice) => ("answer", Some(choice)),
            Self::Toggle(choice) => ("toggle", Some(choice)),
            Self::Submit => ("submit", None),
        }
    }

    fn read(action: &str, choice: Option<String>) -> Result<Self, StoreError> {
        Ok(match (action, choice) {
            ("approve", _) => Self::Approve,
            ("deny", _) => Self::Deny,
            ("approve_suggested", _) => Self::ApproveSuggested,
            ("answer", Some(choice)) => Self::Answer(choice),
            ("toggle", Some(choice)) => Self::Toggle(choice),
            ("submit", _) => Self::Submit,
            (other, _) => {
                return Err(StoreError::Corrupt(format!(
                    "telegram_presses: unknown action {other:?}"
                )));
            }
        })
    }
}

/// Keeps `handle` as the button that does `action` to `subject` (an approval or a question).
pub(crate) fn add_press(
    connection: &Connection,
    handle: &str,
    subject: &str,
    action: &Action,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let (action, choice) = action.stored();
    connection.execute(
        "INSERT INTO telegram_presses (handle, subject, action, choice, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![handle, subject, action, choice, to_time(now)],
    )?;
    Ok(())
}

/// The subject and action of the button `handle`, using up every button of that subject;
/// `None` for a used, unknown or forged handle.
pub(crate) fn take_press(
    connection: &Connection,
    handle: &str,
) -> Result<Option<(String, Action)>, StoreError> {
    let press: Option<(String, String, Option<String>)> = connection
        .query_row(
            "SELECT subject, action, choice FROM telegram_presses WHERE handle = ?1",
            params![handle],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    let Some((subject, action, choice)) = press else {
        return Ok(None);
    };
    forget_presses(connection, &subject)?;
    Ok(Some((subject, Action::read(&action, choice)?)))
}

/// The choices picked so far on the prompt of the question `subject`, in the order picked.
pub(crate) fn selected(connection: &Connection, subject: &str) -> Result<Vec<String>, StoreError> {
    let stored: Option<Option<String>> = connection
        .query_row(
            "SELECT selected FROM telegram_prompts WHERE approval_id = ?1",
            params![subject],
            |row| row.get(0),
        )
        .optional()?;
    match stored.flatten() {
        Some(text) => from_json("telegram_prompts.selected", &text),
        None => Ok(Vec::new()),
    }
}

/// Picks `choice` on the prompt of the question `subject`, or unpicks it when it was picked.
pub(crate) fn toggle(
    connection: &Connection,
    subject: &str,
    choice: &str,
) -> Result<(), StoreError> {
    let mut picked = selected(connection, subject)?;
    if let Some(position) = picked.iter().position(|known| known == choice) {
        picked.remove(position);
    } else {
        picked.push(choice.to_owned());
    }
    connection.execute(
        "UPDATE telegram_prompts SET selected = ?2 WHERE approval_id = ?1",
        params![subject, to_json(&picked)?],
    )?;
    Ok(())
}

/// Forgets every button of `subject`.
fn forget_presses(connection: &Connection, subject: &str) -> Result<(), StoreError> {
    connection.execute(
        "DELETE FROM telegram_presses WHERE subject = ?1",
        params![subject],
    )?;
    Ok(())
}

/// How many buttons are kept (tests: the table stays bounded).
#[cfg(test)]
pub(crate) fn press_count(connection: &Connection) -> Result<i64, StoreError> {
    Ok(
        connection.query_row("SELECT COUNT(*) FROM telegram_presses", [], |row| {
            row.get(0)
        })?,
    )
}

/// Hours the buttons of a closed prompt are kept (then swept when a prompt is claimed).
pub(crate) const PRESS_KEEP_HOURS: i64 = 24;
/// Days a closed prompt's row is kept.
pub(crate) const PROMPT_KEEP_DAYS: i64 = 30;

/// What a prompt asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PromptKind {
    /// An approval (its id is the prompt's subject).
    Approval,
    /// A question an agent asked (`AskUser`; its option id is the subject).
    Question,
}

impl PromptKind {
    fn stored(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Question => "question",
        }
    }
}

/// An approval's or a question's message in Telegram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// The approval or the question.
    pub subject: String,
    /// The chat it was sent to.
    pub telegram_chat: i64,
    /// Its message.
    pub message_id: i32,
    /// The text it was sent with (plain, unescaped).
    pub text: String,
}

/// What a prompt to claim is: its kind and subject, where it goes, what it says.
#[derive(Debug, Clone)]
pub(crate) struct NewPrompt {
    /// An approval's or a question's.
    pub kind: PromptKind,
    /// The approval's or the question's id.
    pub subject: String,
    /// The chat it goes to.
    pub telegram_chat: i64,
    /// Its text (plain, unescaped).
    pub text: String,
}

/// Claims the prompt `prompt`; `false` when it was claimed before. Forgets prompts closed long
/// ago and buttons whose prompt is not open (left by a crash between a send and its record).
pub(crate) fn claim_prompt(
    connection: &Connection,
    prompt: &NewPrompt,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let forget_before = now - chrono::Duration::days(PROMPT_KEEP_DAYS);
    connection.execute(
        "DELETE FROM telegram_prompts WHERE closed_at IS NOT NULL AND closed_at < ?1",
        params![to_time(forget_before)],
    )?;
    let stale_before = now - chrono::Duration::hours(PRESS_KEEP_HOURS);
    connection.execute(
        "DELETE FROM telegram_presses WHERE subject NOT IN
             (SELECT approval_id FROM telegram_prompts
              WHERE closed_at IS NULL OR closed_at >= ?1)",
        params![to_time(stale_before)],
    )?;
    let inserted = connection.execute(
        "INSERT OR IGNORE INTO telegram_prompts (approval_id, kind, telegram_chat, text, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            prompt.subject,
            prompt.kind.stored(),
            prompt.telegram_chat,
            prompt.text,
            to_time(now)
        ],
    )?;
    Ok(inserted == 1)
}

/// Records the message a claimed prompt was sent as.
pub(crate) fn set_prompt_message(
    connection: &Connection,
    approval_id: &str,
    message_id: i32,
) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE telegram_prompts SET message_id = ?2 WHERE approval_id = ?1",
        params![approval_id, message_id],
    )?;
    Ok(())
}

/// Forgets the claim of a prompt that could not be sent, and its buttons.
pub(crate) fn drop_prompt(connection: &Connection, subject: &str) -> Result<(), StoreError> {
    let dropped = connection.execute(
        "DELETE FROM telegram_prompts WHERE approval_id = ?1 AND message_id IS NULL",
        params![subject],
    )?;
    if dropped > 0 {
        forget_presses(connection, subject)?;
    }
    Ok(())
}

/// The sent, not yet closed prompts of `kind` (of `subject` only, when given), oldest first.
pub(crate) fn open_prompts(
    connection: &Connection,
    kind: PromptKind,
    subject: Option<&str>,
) -> Result<Vec<Prompt>, StoreError> {
    let mut statement = connection.prepare(
        "SELECT approval_id, telegram_chat, message_id, text FROM telegram_prompts
         WHERE closed_at IS NULL AND message_id IS NOT NULL AND kind = ?2
           AND (?1 IS NULL OR approval_id = ?1)
         ORDER BY created_at",
    )?;
    let rows = statement
        .query_map(params![subject, kind.stored()], |row| {
            Ok(Prompt {
                subject: row.get(0)?,
                telegram_chat: row.get(1)?,
                message_id: row.get(2)?,
                text: row.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Marks the prompt of `subject` closed. Its buttons stay for [`PRESS_KEEP_HOURS`], so a late
/// press is told how its approval or question ended rather than that the button is unknown.
pub(crate) fn close_prompt(
    connection: &Connection,
    subject: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE telegram_prompts SET closed_at = ?2 WHERE approval_id = ?1",
        params![subject, to_time(now)],
    )?;
    Ok(())
}

/// The audit rows as `(kind, telegram user id)`, oldest first (tests and the status view).
#[cfg(test)]
pub(crate) fn audit_rows(connection: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    let mut statement = connection
        .prepare("SELECT kind, COALESCE(telegram_user_id, 0) FROM telegram_audit ORDER BY id")?;
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

fn audit(
    connection: &Connection,
    kind: &str,
    user_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute(
        "INSERT INTO telegram_audit (kind, telegram_user_id, created_at) VALUES (?1, ?2, ?3)",
        params![kind, user_id, to_time(now)],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn prompt(subject: &str) -> NewPrompt {
        NewPrompt {
            kind: PromptKind::Approval,
            subject: subject.to_owned(),
            telegram_chat: 7,
            text: "asks".to_owned(),
        }
    }

    #[tokio::test]
    async fn buttons_live_only_as_long_as_their_prompt_is_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("souz.db")).await.unwrap();
        let counts = store
            .write(|tx| {
                let now = Utc::now();
                let mut counts = Vec::new();
                // A prompt pressed: every button of its subject goes at once.
                claim_prompt(tx, &prompt("a1"), now)?;
                add_press(tx, "h1", "a1", &Action::Approve, now)?;
                add_press(tx, "h2", "a1", &Action::Deny, now)?;
                add_press(tx, "h3", "a1", &Action::ApproveSuggested, now)?;
                counts.push(press_count(tx)?);
                let taken = take_press(tx, "h3")?;
                assert_eq!(taken, Some(("a1".to_owned(), Action::ApproveSuggested)));
                assert_eq!(take_press(tx, "h1")?, None, "the other buttons are gone");
                counts.push(press_count(tx)?);
                // A prompt closed elsewhere: its buttons stay a while, to answer a late press.
                claim_prompt(tx, &prompt("q1"), now)?;
                add_press(tx, "h4", "q1", &Action::Answer("choice-1".into()), now)?;
                set_prompt_message(tx, "q1", 10)?;
                close_prompt(tx, "q1", now)?;
                counts.push(press_count(tx)?);
                // Buttons of no prompt (a crash between send and record) are swept when the
                // next prompt is claimed; an open prompt's buttons stay.
                add_press(tx, "h5", "gone", &Action::Approve, now)?;
                claim_prompt(tx, &prompt("a2"), now)?;
                add_press(tx, "h6", "a2", &Action::Approve, now)?;
                claim_prompt(tx, &prompt("a3"), now)?;
                counts.push(press_count(tx)?);
                // A prompt that could not be sent is dropped with its buttons.
                add_press(tx, "h7", "a3", &Action::Deny, now)?;
                drop_prompt(tx, "a3")?;
                counts.push(press_count(tx)?);
                // A day later, the closed prompt's buttons are swept too.
                let later = now + chrono::Duration::hours(PRESS_KEEP_HOURS + 1);
                claim_prompt(tx, &prompt("a4"), later)?;
                counts.push(press_count(tx)?);
                Ok::<_, StoreError>(counts)
            })
            .await
            .unwrap();
        assert_eq!(counts, [3, 0, 1, 2, 2, 1]);
        store.close().await.unwrap();
    }
}
