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
//! - A button's callback data is a random handle, never the approval's id; pressing one uses
//!   up every handle of its approval ([`take_press`]), so a replay or the other button finds
//!   nothing.
//! - An approval is prompted in Telegram at most once: [`claim_prompt`] inserts its row or
//!   finds one; a prompt whose send failed is dropped ([`drop_prompt`]) so it can be tried
//!   again. Closed prompts are forgotten after [`PROMPT_KEEP_DAYS`] days.
//! - Of a Telegram user who is not the linked one nothing is kept but one audit row per kind
//!   (kind and user id), however many messages they send, and a refusal is sent to each such
//!   user once: [`refuse_once`] says whether this is the first.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::store::StoreError;
use crate::store::codec::{from_time, from_time_opt, to_time};

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

/// Keeps `handle` as the button that gives `verdict` (`approve` or `deny`) to `approval_id`.
pub(crate) fn add_press(
    connection: &Connection,
    handle: &str,
    approval_id: &str,
    verdict: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute(
        "INSERT INTO telegram_presses (handle, approval_id, verdict, created_at)
         VALUES (?1, ?2, ?3, ?4)",
        params![handle, approval_id, verdict, to_time(now)],
    )?;
    Ok(())
}

/// The approval and verdict of the unused button `handle`, using up every button of that
/// approval; `None` for a used, unknown or forged handle.
pub(crate) fn take_press(
    connection: &Connection,
    handle: &str,
    now: DateTime<Utc>,
) -> Result<Option<(String, String)>, StoreError> {
    let press: Option<(String, String)> = connection
        .query_row(
            "SELECT approval_id, verdict FROM telegram_presses
             WHERE handle = ?1 AND used_at IS NULL",
            params![handle],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    if let Some((approval_id, _)) = &press {
        connection.execute(
            "UPDATE telegram_presses SET used_at = ?1 WHERE approval_id = ?2 AND used_at IS NULL",
            params![to_time(now), approval_id],
        )?;
    }
    Ok(press)
}

/// Days a closed prompt's row is kept.
pub(crate) const PROMPT_KEEP_DAYS: i64 = 30;

/// An approval's message in Telegram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// The approval.
    pub approval_id: String,
    /// The chat it was sent to.
    pub telegram_chat: i64,
    /// Its message.
    pub message_id: i32,
    /// The text it was sent with (plain, unescaped).
    pub text: String,
}

/// Claims the prompt of `approval_id` (to be sent to `telegram_chat` with `text`); `false`
/// when it was claimed before. Forgets prompts closed long ago.
pub(crate) fn claim_prompt(
    connection: &Connection,
    approval_id: &str,
    telegram_chat: i64,
    text: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let forget_before = now - chrono::Duration::days(PROMPT_KEEP_DAYS);
    connection.execute(
        "DELETE FROM telegram_prompts WHERE closed_at IS NOT NULL AND closed_at < ?1",
        params![to_time(forget_before)],
    )?;
    let inserted = connection.execute(
        "INSERT OR IGNORE INTO telegram_prompts (approval_id, telegram_chat, text, created_at)
         VALUES (?1, ?2, ?3, ?4)",
        params![approval_id, telegram_chat, text, to_time(now)],
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

/// Forgets the claim of a prompt that could not be sent.
pub(crate) fn drop_prompt(connection: &Connection, approval_id: &str) -> Result<(), StoreError> {
    connection.execute(
        "DELETE FROM telegram_prompts WHERE approval_id = ?1 AND message_id IS NULL",
        params![approval_id],
    )?;
    Ok(())
}

/// The sent, not yet closed prompts (of `approval_id` only, when given), oldest first.
pub(crate) fn open_prompts(
    connection: &Connection,
    approval_id: Option<&str>,
) -> Result<Vec<Prompt>, StoreError> {
    let mut statement = connection.prepare(
        "SELECT approval_id, telegram_chat, message_id, text FROM telegram_prompts
         WHERE closed_at IS NULL AND message_id IS NOT NULL
           AND (?1 IS NULL OR approval_id = ?1)
         ORDER BY created_at",
    )?;
    let rows = statement
        .query_map(params![approval_id], |row| {
            Ok(Prompt {
                approval_id: row.get(0)?,
                telegram_chat: row.get(1)?,
                message_id: row.get(2)?,
                text: row.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Marks the prompt of `approval_id` closed.
pub(crate) fn close_prompt(
    connection: &Connection,
    approval_id: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE telegram_prompts SET closed_at = ?2 WHERE approval_id = ?1",
        params![approval_id, to_time(now)],
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
