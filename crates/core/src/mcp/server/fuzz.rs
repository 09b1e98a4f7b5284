//! Property-based fuzzing of the JSON-RPC front door of `/mcp` (stable toolchain, `proptest`):
//! any body is let through or refused with a well-formed JSON-RPC error, never a panic; a
//! well-formed `tools/call` is always let through; and the shortcut for plain `tools/call`
//! decides as the typed parse does, and reads the message it reads.
//!
//! The test command runs the default number of cases; `scripts/fuzz.sh` runs many more.

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta};

use super::fast_path::plain_tools_call;
use super::front::{Rejection, TYPED_METHODS, check, typed_check};

/// Any JSON value, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|number| json!(number)),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A message shaped like JSON-RPC, each part possibly wrong.
fn message() -> impl Strategy<Value = Value> {
    let methods: Vec<String> = TYPED_METHODS
        .iter()
        .map(|method| (*method).to_owned())
        .chain(["server/discover", "notifications/initialized", "x/custom"].map(String::from))
        .collect();
    (
        prop_oneof![Just(json!("2.0")), Just(json!("1.0")), json_value()],
        prop::option::of(prop_oneof![
            any::<i64>().prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
            json_value()
        ]),
        prop_oneof![
            prop::sample::select(methods).prop_map(Value::from),
            json_value()
        ],
        prop::option::of(json_value()),
    )
        .prop_map(|(version, id, method, params)| {
            let mut object = Map::new();
            object.insert("jsonrpc".into(), version);
            if let Some(id) = id {
                object.insert("id".into(), id);
            }
            object.insert("method".into(), method);
            if let Some(params) = params {
                object.insert("params".into(), params);
            }
            Value::Object(object)
        })
}

/// A message shaped like a `tools/call`, each part possibly wrong or unusual.
fn tools_call_lookalike() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
        json_value(),
    ];
    let name = prop_oneof![".{0,12}".prop_map(Value::from), json_value()];
    let arguments = prop_oneof![
        prop::collection::btree_map(".{0,6}", json_value(), 0..4)
            .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        json_value(),
    ];
    let meta = prop_oneof![
        Just(json!({ "progressToken": 1 })),
        Just(json!({ "progressToken": "p" })),
        json_value(),
    ];
    let extra = || prop::option::of((".{0,8}", json_value()));
    (
        prop_oneof![Just(json!("2.0")), json_value()],
        prop::option::of(id),
        prop_oneof![
            8 => Just(json!("tools/call")),
            1 => Just(json!("tools/list")),
            1 => json_value()
        ],
        (
            prop::option::of(name),
            prop::option::of(arguments),
            prop::option::of(meta),
            extra(),
        ),
        extra(),
    )
        .prop_map(
            |(version, id, method, (name, arguments, meta, extra_param), extra)| {
                let mut params = Map::new();
                for (key, value) in [("name", name), ("arguments", arguments), ("_meta", meta)] {
                    if let Some(value) = value {
                        params.insert(key.into(), value);
                    }
                }
                if let Some((key, value)) = extra_param {
                    params.insert(key, value);
                }
                let mut object = Map::new();
                object.insert("jsonrpc".into(), version);
                if let Some(id) = id {
                    object.insert("id".into(), id);
                }
                object.insert("method".into(), method);
                object.insert("params".into(), Value::Object(params));
                if let Some((key, value)) = extra {
                    object.insert(key, value);
                }
                Value::Object(object)
            },
        )
}

/// [`check`]'s shortcut decides as the typed parse alone would, and a call it reads is the
/// message the typed parse makes (`_meta` in the request's extensions included).
fn agrees(bytes: &[u8]) -> Result<(), TestCaseError> {
    let bytes = Bytes::copy_from_slice(bytes);
    for in_session in [false, true] {
        prop_assert_eq!(check(&bytes, in_session), typed_check(&bytes, in_session));
    }
    if let Some(call) = plain_tools_call(&bytes) {
        let typed = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes);
        prop_assert!(typed.is_ok(), "{typed:?}");
        let typed = typed.map_err(|error| TestCaseError::fail(error.to_string()))?;
        let plain = call.into_message();
        let meta = |message: &ClientJsonRpcMessage| match message {
            ClientJsonRpcMessage::Request(request) => Some(request.request.get_meta().clone()),
            _ => None,
        };
        prop_assert!(
            matches!(&plain, ClientJsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::CallToolRequest(_))),
            "{plain:?}"
        );
        prop_assert_eq!(meta(&plain), meta(&typed));
        prop_assert_eq!(
            serde_json::to_value(&plain).ok(),
            serde_json::to_value(&typed).ok()
        );
    }
    Ok(())
}

/// The refusal is a JSON-RPC error a client can read.
fn well_formed(rejection: &Rejection) -> Result<(), TestCaseError> {
    prop_assert!(
        [-32700, -32600, -32601, -32602].contains(&rejection.code),
        "{rejection:?}"
    );
    prop_assert!(
        rejection.status == StatusCode::OK || rejection.status == StatusCode::BAD_REQUEST,
        "{rejection:?}"
    );
    prop_assert!(
        rejection.id.is_null() || rejection.id.is_string() || rejection.id.is_number(),
        "{rejection:?}"
    );
    prop_assert!(!rejection.message.is_empty());
    let response = rejection.clone().into_response();
    prop_assert_eq!(response.status(), rejection.status);
    Ok(())
}

fn checked(bytes: &[u8]) -> Result<(), TestCaseError> {
    for in_session in [false, true] {
        if let Err(rejection) = check(&Bytes::copy_from_slice(bytes), in_session) {
            well_formed(&rejection)?;
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn any_bytes_pass_or_get_a_json_rpc_error(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        checked(&bytes)?;
    }

    #[test]
    fn any_json_passes_or_gets_a_json_rpc_error(value in json_value()) {
        checked(value.to_string().as_bytes())?;
    }

    #[test]
    fn json_rpc_lookalikes_pass_or_get_a_json_rpc_error(value in message()) {
        checked(value.to_string().as_bytes())?;
        agrees(value.to_string().as_bytes())?;
    }

    #[test]
    fn the_tools_call_shortcut_decides_as_the_typed_parse(value in tools_call_lookalike()) {
        checked(value.to_string().as_bytes())?;
        agrees(value.to_string().as_bytes())?;
    }

    #[test]
    fn the_shortcut_agrees_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        agrees(&bytes)?;
    }

    #[test]
    fn a_well_formed_tools_call_always_passes(
        id in prop_oneof![any::<i64>().prop_map(Value::from), "[a-z0-9-]{1,12}".prop_map(Value::from)],
        name in "[A-Za-z_][A-Za-z0-9_]{0,20}",
        arguments in prop::collection::btree_map("[a-z]{1,8}", json_value(), 0..4),
    ) {
        let message = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        });
        prop_assert_eq!(check(&Bytes::from(message.to_string()), true), Ok(()));
    }
}
