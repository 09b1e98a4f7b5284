//! The window's commands through Tauri's mock runtime: IPC requests from `tauri://localhost`
//! reach them and they answer from the shell's state and the system. No tray, no GTK.

#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a failed step is a failed test

use std::sync::Arc;

use souz_app::commands::ConnectionInfo;
use souz_app::state::Connection;
use souz_app::{Launch, Shell};
use tauri::Manager;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{
    INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder, mock_context, noop_assets,
};
use tauri::webview::InvokeRequest;

fn app() -> (tauri::App<MockRuntime>, tauri::WebviewWindow<MockRuntime>) {
    let app = souz_app::builder(mock_builder(), Launch::CommandsOnly)
        .build(mock_context(noop_assets()))
        .expect("the app builds on the mock runtime");
    let window = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .expect("a mock window");
    (app, window)
}

fn invoke(
    window: &tauri::WebviewWindow<MockRuntime>,
    command: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, serde_json::Value> {
    get_ipc_response(
        window,
        InvokeRequest {
            cmd: command.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().expect("url"),
            body: InvokeBody::Json(body),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_owned(),
        },
    )
    .map(|response| response.deserialize::<serde_json::Value>().expect("json"))
}

#[test]
fn connection_reports_the_shells_state() {
    let (app, window) = app();
    let value = invoke(&window, "connection", serde_json::json!({})).expect("answers");
    let info: ConnectionInfo = serde_json::from_value(value).expect("a ConnectionInfo");
    assert_eq!(info.mode, "starting");
    assert_eq!(info.detail, "Starting…");

    app.state::<Arc<Shell>>().state().connection = Connection::Attached {
        url: "http://127.0.0.1:8383".into(),
    };
    let value = invoke(&window, "connection", serde_json::json!({})).expect("answers");
    assert_eq!(value["mode"], "attached");
    assert_eq!(
        value["detail"],
        "Attached to souz serve at http://127.0.0.1:8383"
    );
}

#[test]
fn autostart_state_comes_from_the_system_and_bad_arguments_are_refused() {
    let (_app, window) = app();
    let enabled = invoke(&window, "autostart_enabled", serde_json::json!({})).expect("answers");
    assert!(enabled.is_boolean(), "{enabled}");
    // `enabled` is required: the command is not run without it.
    let refused = invoke(&window, "set_autostart", serde_json::json!({}));
    assert!(refused.is_err(), "{refused:?}");
    let unknown = invoke(&window, "no_such_command", serde_json::json!({}));
    assert!(unknown.is_err());
}

#[test]
fn the_page_reports_push_to_talk_and_takes_a_hotkey_press_that_waited() {
    let (app, window) = app();
    let shell = app.state::<Arc<Shell>>().inner().clone();
    let answer = invoke(
        &window,
        "voice_state",
        serde_json::json!({"state": "listening"}),
    )
    .expect("answers");
    assert_eq!(answer, serde_json::json!({"listen": false}));
    assert_eq!(
        shell.state().voice,
        souz_app::voice::VoiceActivity::Listening
    );
    assert!(
        shell.state().tooltip().contains("listening…")
            || shell.state().tooltip().contains("слушаю…")
    );
    // A hotkey press that came while the window's page was loading is taken once.
    shell
        .voice_pressed
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let answer =
        invoke(&window, "voice_state", serde_json::json!({"state": "idle"})).expect("answers");
    assert_eq!(answer, serde_json::json!({"listen": true}));
    let answer =
        invoke(&window, "voice_state", serde_json::json!({"state": "idle"})).expect("answers");
    assert_eq!(answer, serde_json::json!({"listen": false}));
    assert!(!shell.state().tooltip().contains("listening"));
    let refused = invoke(
        &window,
        "voice_state",
        serde_json::json!({"state": "shouting"}),
    );
    assert!(refused.is_err(), "{refused:?}");
}
