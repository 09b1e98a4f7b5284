//! One message from the client as the bridge holds it: the line's JSON text, forwarded to the
//! daemon unchanged (never re-serialized), and the two fields the bridge itself reads, `id`
//! and `method`, parsed once when the line is read. The whole text is checked to be JSON then,
//! so a malformed line is answered with a parse error and never sent on.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

/// A message from the client.
#[derive(Debug, Clone)]
pub struct Message {
    /// The JSON text, as the client sent it.
    pub text: String,
    /// Its `id` (`null` when it has none).
    pub id: Value,
    /// Its `method`, if it has one (of any JSON type).
    method: Option<Value>,
}

impl Message {
    /// Reads one line of JSON text. Only an object's `id` and `method` are kept apart; any other
    /// JSON (a batch, a scalar) is forwarded as it is, as a message without either.
    pub fn read(text: &str) -> serde_json::Result<Self> {
        #[derive(Deserialize)]
        struct Head {
            #[serde(default)]
            id: Value,
            method: Option<Value>,
        }
        let head = if text.starts_with('{') {
            serde_json::from_str::<Head>(text)?
        } else {
            serde_json::from_str::<IgnoredAny>(text)?;
            Head {
                id: Value::Null,
                method: None,
            }
        };
        Ok(Self {
            text: text.to_owned(),
            id: head.id,
            method: head.method,
        })
    }

    /// `value` as a message (the bridge's own replayed handshake).
    pub fn from_value(value: &Value) -> Self {
        Self {
            text: value.to_string(),
            id: value.get("id").cloned().unwrap_or(Value::Null),
            method: value.get("method").cloned(),
        }
    }

    /// The method, when it is a string.
    pub fn method(&self) -> Option<&str> {
        self.method.as_ref().and_then(Value::as_str)
    }

    /// The id of a request (a message with a method and an id), whose answer must come back.
    pub fn request_id(&self) -> Option<&Value> {
        self.method
            .as_ref()
            .and(Some(&self.id))
            .filter(|id| !id.is_null())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_kept_and_id_and_method_read() {
        let text = r#"{"jsonrpc":"2.0", "id":"a-1","method":"tools/call","params":{"b":1,"a":2}}"#;
        let message = Message::read(text).unwrap();
        assert_eq!(message.text, text, "forwarded byte for byte");
        assert_eq!(message.id, serde_json::json!("a-1"));
        assert_eq!(message.method(), Some("tools/call"));
        assert_eq!(message.request_id(), Some(&serde_json::json!("a-1")));
    }

    #[test]
    fn notifications_answers_and_other_json_are_not_requests() {
        let notification =
            Message::read(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#).unwrap();
        assert_eq!(notification.method(), Some("notifications/x"));
        assert_eq!(notification.request_id(), None);
        let answer = Message::read(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#).unwrap();
        assert_eq!(answer.method(), None);
        assert_eq!(answer.request_id(), None);
        let odd = Message::read(r#"{"id":4,"method":7}"#).unwrap();
        assert_eq!(odd.method(), None);
        assert_eq!(odd.request_id(), Some(&serde_json::json!(4)));
        let batch = Message::read(r#"[{"id":1,"method":"ping"}]"#).unwrap();
        assert_eq!(batch.request_id(), None);
    }

    #[test]
    fn malformed_json_is_refused() {
        for text in [
            "{",
            r#"{"id":1,"method":"ping""#,
            "[1,",
            "nope",
            r#"{"id":1} x"#,
        ] {
            assert!(Message::read(text).is_err(), "{text}");
        }
    }

    #[test]
    fn a_replayed_handshake_reads_like_a_client_message() {
        let value = serde_json::json!({"jsonrpc":"2.0","id":"souz-1","method":"initialize"});
        let message = Message::from_value(&value);
        assert_eq!(message.method(), Some("initialize"));
        assert_eq!(message.request_id(), Some(&serde_json::json!("souz-1")));
        let again: Value = serde_json::from_str(&message.text).unwrap();
        assert_eq!(again, value);
    }
}
