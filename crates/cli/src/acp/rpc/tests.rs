use serde_json::{Value, json};
use tokio::io::BufReader;

use super::*;

#[test]
fn messages_are_classified_by_their_members() {
    assert_eq!(
        decode(br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"a":1}}"#),
        Ok(Message::Request {
            id: json!(7),
            method: "initialize".to_owned(),
            params: json!({"a": 1})
        })
    );
    assert_eq!(
        decode(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
        Ok(Message::Notification {
            method: "session/cancel".to_owned(),
            params: json!({})
        })
    );
    assert_eq!(
        decode(br#"{"jsonrpc":"2.0","id":"x","result":{"ok":true}}"#),
        Ok(Message::Response {
            id: json!("x"),
            outcome: Ok(json!({"ok": true}))
        })
    );
    let Ok(Message::Response { outcome, .. }) =
        decode(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"cancelled"}}"#)
    else {
        panic!("not a response")
    };
    assert_eq!(outcome.unwrap_err().code, -32800);
}

#[test]
fn broken_messages_get_their_error_codes() {
    let (id, error) = decode(b"{not json").unwrap_err();
    assert_eq!((id, error.code), (Value::Null, PARSE_ERROR));
    let (_, error) = decode(b"[1, 2]").unwrap_err();
    assert_eq!(error.code, INVALID_REQUEST);
    // The id is echoed when there is one.
    let (id, error) = decode(br#"{"jsonrpc":"1.0","id":3,"method":"x"}"#).unwrap_err();
    assert_eq!((id, error.code), (json!(3), INVALID_REQUEST));
    let (id, error) = decode(br#"{"jsonrpc":"2.0","id":4,"method":5}"#).unwrap_err();
    assert_eq!((id, error.code), (json!(4), INVALID_REQUEST));
    let (_, error) = decode(br#"{"jsonrpc":"2.0"}"#).unwrap_err();
    assert_eq!(error.code, INVALID_REQUEST);
    let error = params::<schema_probe::Probe>(json!({"wrong": 1})).unwrap_err();
    assert_eq!(error.code, INVALID_PARAMS);
}

mod schema_probe {
    #[derive(Debug, serde::Deserialize)]
    pub struct Probe {
        #[allow(dead_code, reason = "only its presence is checked")]
        pub needed: String,
    }
}

#[tokio::test]
async fn a_line_over_the_limit_is_skipped_without_holding_it() {
    let mut input = Vec::new();
    input.extend_from_slice(b"short\n");
    input.extend(std::iter::repeat_n(b'x', 100));
    input.extend_from_slice(b"\nlast");
    // A small read buffer: the long line arrives in many pieces.
    let mut reader = BufReader::with_capacity(8, input.as_slice());
    let mut line = Vec::new();
    assert_eq!(
        read_line(&mut reader, &mut line, 10).await.unwrap(),
        ReadLine::Line
    );
    assert_eq!(line, b"short");
    assert_eq!(
        read_line(&mut reader, &mut line, 10).await.unwrap(),
        ReadLine::TooLong
    );
    assert!(line.capacity() <= 16, "held {} bytes", line.capacity());
    assert_eq!(
        read_line(&mut reader, &mut line, 10).await.unwrap(),
        ReadLine::Line
    );
    assert_eq!(line, b"last");
    assert_eq!(
        read_line(&mut reader, &mut line, 10).await.unwrap(),
        ReadLine::Eof
    );
}

/// Runs [`read_frames`] over `input` with a handler that answers `echo` and refuses the rest;
/// the frames written, decoded.
async fn exchange(input: Vec<u8>) -> Vec<Value> {
    let (connection, frames) = Connection::new();
    let mut output = Vec::new();
    let read = async move {
        let replies = connection.clone();
        read_frames(BufReader::new(input.as_slice()), &connection, |message| {
            if let Message::Request { id, method, params } = message {
                let outcome = if method == "echo" {
                    Ok(params)
                } else {
                    Err(RpcError::method_not_found(&method))
                };
                replies.respond(id, outcome).unwrap();
            }
        })
        .await
        .unwrap();
    };
    let (_, written) = tokio::join!(read, write_frames(frames, &mut output));
    written.unwrap();
    String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test]
async fn the_loop_answers_errors_and_keeps_going() {
    let mut input = Vec::new();
    input.extend_from_slice(b"{oops\n\n");
    input.extend(std::iter::repeat_n(b' ', MAX_LINE + 1));
    input.extend_from_slice(b"\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"nope","params":{}}"#);
    input.extend_from_slice(b"\n");
    // Answers to nothing the agent asked are ignored.
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":99,"result":{}}"#);
    input.extend_from_slice(b"\n");
    input.extend_from_slice(
        br#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}"#,
    );
    input.extend_from_slice(b"\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":"two","method":"echo","params":{"b":2}}"#);
    input.extend_from_slice(b"\n");
    let frames = exchange(input).await;
    assert_eq!(frames.len(), 4, "{frames:?}");
    assert_eq!(frames[0]["error"]["code"], PARSE_ERROR);
    assert_eq!(frames[0]["id"], Value::Null);
    assert_eq!(frames[1]["error"]["code"], INVALID_REQUEST);
    assert!(
        frames[1]["error"]["data"]
            .as_str()
            .unwrap()
            .contains("8 MiB")
    );
    assert_eq!(frames[2]["id"], 1);
    assert_eq!(frames[2]["error"]["code"], METHOD_NOT_FOUND);
    assert_eq!(
        frames[3],
        json!({"jsonrpc": "2.0", "id": "two", "result": {"b": 2}})
    );
}

#[tokio::test]
async fn requests_get_their_answers_and_withdrawn_ones_are_cancelled() {
    let (connection, mut frames) = Connection::new();
    let first = connection.request("ask", &json!({"q": 1})).unwrap();
    let second = connection.request("ask", &json!({"q": 2})).unwrap();
    assert_ne!(first.id, second.id);
    let sent: Value = serde_json::from_str(&frames.recv().await.unwrap()).unwrap();
    assert_eq!(
        sent,
        json!({"jsonrpc": "2.0", "id": first.id, "method": "ask", "params": {"q": 1}})
    );
    let _ = frames.recv().await.unwrap();
    assert!(connection.resolve(&json!(first.id), Ok(json!({"answer": 1}))));
    let answer: Value = first.answer().await.unwrap();
    assert_eq!(answer, json!({"answer": 1}));

    let id = second.id;
    connection.withdraw(id).unwrap();
    let cancel: Value = serde_json::from_str(&frames.recv().await.unwrap()).unwrap();
    assert_eq!(
        cancel,
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}})
    );
    // The late answer goes nowhere, and the waiter learns it will get none.
    assert!(!connection.resolve(&json!(id), Ok(json!({}))));
    assert!(matches!(
        second.answer::<Value>().await,
        Err(ConnectionError::Closed)
    ));
    // Withdrawing twice sends nothing more.
    connection.withdraw(id).unwrap();
    let rejected = connection.request("ask", &json!({})).unwrap();
    let _ = frames.recv().await.unwrap();
    connection.resolve(&json!(rejected.id), Err(RpcError::internal_error("no")));
    assert!(matches!(
        rejected.answer::<Value>().await,
        Err(ConnectionError::Rpc(error)) if error.code == INTERNAL_ERROR
    ));
    drop(connection);
    assert!(frames.recv().await.is_none());
}
