//! The Souz menu-bar app: a thin Tauri shell over the Souz runtime running in this process.
//!
//! Starting the app starts the daemon (`daemon`): the same runtime and gateway as `souz serve`,
//! on the same port; if a headless `souz serve` already owns it, the app attaches to it. The
//! shell then only shows and forwards: the tray (`tray`, desktop only), native notifications
//! with Approve/Deny and for the agents' questions (`notify`), the window with the web UI the
//! gateway serves (`window`), and start at login. Everything it shows comes from the gateway
//! API (through `souz-client`), folded into plain state (`state`) that is tested without Tauri. Commands
//! (`commands`) are generic over `tauri::Runtime`, so the mock runtime drives them in tests.

pub mod commands;
pub mod daemon;
pub mod notify;
pub mod state;
pub mod texts;
#[cfg(desktop)]
pub mod tray;
pub mod voice;
pub mod window;

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use souz_core::sandbox::confinement;
use tauri::{AppHandle, Manager, RunEvent, Runtime};

use crate::daemon::Daemon;
use crate::state::{Connection, Notice, ShellState};
use souz_client::{ClientError, DaemonClient, EventStream, Reconnect, StreamItem};
use souz_protocol::RuntimeEvent;

/// What the shell keeps for the app's lifetime (managed Tauri state).
pub struct Shell {
    /// The state shown in the tray.
    pub state: Mutex<ShellState>,
    /// The daemon's client, once it is up.
    pub client: OnceLock<DaemonClient>,
    /// The embedded daemon, for shutdown.
    daemon: tokio::sync::Mutex<Option<Daemon>>,
    /// Which notifications to post (`[notifications]` in config.toml).
    pub preferences: Mutex<souz_core::config::NotificationsConfig>,
    /// Posted approval notifications.
    pub notifications: notify::Posted,
    /// Keeps file logging alive.
    logging: Mutex<Option<souz_core::telemetry::TelemetryGuard>>,
    /// When the app started, and when the window was last asked for (its first paint is
    /// measured from both: [`window::painted`]).
    pub timing: window::Timing,
    /// `--show`: the window opens as soon as the daemon is up (a launcher's click, not a
    /// start at login).
    pub show_at_launch: bool,
    /// The push-to-talk hotkey was pressed before the window's page could listen.
    pub voice_pressed: std::sync::atomic::AtomicBool,
}

impl Default for Shell {
    fn default() -> Self {
        Self {
            state: Mutex::new(ShellState::default()),
            client: OnceLock::new(),
            daemon: tokio::sync::Mutex::new(None),
            preferences: Mutex::new(Default::default()),
            notifications: notify::Posted::default(),
            logging: Mutex::new(None),
            timing: window::Timing::default(),
            show_at_launch: std::env::args_os()
                .skip(1)
                .any(|argument| argument == "--show"),
            voice_pressed: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Shell {
    /// Locks the state (a poisoned lock still holds usable data).
    pub fn state(&self) -> std::sync::MutexGuard<'_, ShellState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs the app. Also answers the hidden sandbox-helper subcommand, so the app confines the
/// commands its tools run exactly like `souz serve`.
pub fn run() {
    let mut arguments = std::env::args_os().skip(1);
    if arguments
        .next()
        .is_some_and(|first| first == confinement::HELPER_SUBCOMMAND)
    {
        let error = match confinement::HelperArguments::parse(arguments.collect::<Vec<_>>()) {
            Ok(arguments) => confinement::run_helper(arguments),
            Err(error) => error,
        };
        eprintln!("souz-app: {error}");
        std::process::exit(i32::from(confinement::HELPER_FAILURE_EXIT_CODE));
    }
    // Once per process, before any thread allocates (freed large blocks go back at once) and
    // before any secret is read (other processes of this user, and the commands the daemon
    // runs, must not read this process's memory or environment).
    if let Err(error) = souz_core::host::prepare_process() {
        eprintln!("souz-app: {error}");
        std::process::exit(1);
    }
    let app =
        match builder(tauri::Builder::default(), Launch::App).build(tauri::generate_context!()) {
            Ok(app) => app,
            Err(error) => {
                eprintln!("souz-app: cannot start: {error}");
                std::process::exit(1);
            }
        };
    app.run(|app, event| match event {
        // Closing the window keeps the app in the menu bar; only Quit (an explicit exit code)
        // ends it.
        RunEvent::ExitRequested {
            code: None, api, ..
        } => api.prevent_exit(),
        RunEvent::Exit => {
            let shell = app.state::<Arc<Shell>>().inner().clone();
            tauri::async_runtime::block_on(async move {
                if let Some(mut daemon) = shell.daemon.lock().await.take() {
                    daemon.shutdown().await;
                }
            });
        }
        _ => {}
    });
}

/// What [`builder`] sets up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// The whole app: tray, notifications, and the daemon.
    App,
    /// Plugins and commands only, for the mock runtime (no tray: GTK is not initialised there;
    /// no daemon: tests give the shell its state).
    CommandsOnly,
}

/// Plugins, commands and setup shared by the real app and the mock-runtime tests.
pub fn builder<R: Runtime>(builder: tauri::Builder<R>, launch: Launch) -> tauri::Builder<R> {
    // The global shortcut plugin talks to the display server, which the mock runtime has not.
    #[cfg(desktop)]
    let builder = match launch {
        Launch::App => builder.plugin(tauri_plugin_global_shortcut::Builder::new().build()),
        Launch::CommandsOnly => builder,
    };
    builder
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            None,
        ))
        .manage(Arc::new(Shell::default()))
        .invoke_handler(tauri::generate_handler![
            commands::connection,
            commands::autostart_enabled,
            commands::set_autostart,
            window::window_painted,
            voice::voice_state,
        ])
        .setup(move |app| {
            if launch == Launch::CommandsOnly {
                return Ok(());
            }
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            let handle = app.handle().clone();
            notify::init(&handle);
            #[cfg(desktop)]
            if souz_core::config::env::read_os(souz_core::config::env::Var::AppNoTray).is_none() {
                tray::create(&handle)?;
            }
            tauri::async_runtime::spawn(start(handle));
            Ok(())
        })
}

/// Starts (or attaches to) the daemon, then keeps the shell's state in step with it.
async fn start<R: Runtime>(app: AppHandle<R>) {
    let shell = app.state::<Arc<Shell>>().inner().clone();
    refresh_autostart(&app);
    let started = match daemon::load() {
        Ok(host) => {
            init_logging(&shell, host.config());
            let config = host.config().clone();
            let recovering = host.startup().problems().is_some();
            if let Some(problems) = host.startup().problems() {
                tracing::warn!(
                    problems = problems.len(),
                    "config.toml has problems: starting in recovery mode"
                );
            }
            Daemon::start(host)
                .await
                .map(|daemon| (daemon, config, recovering))
        }
        Err(error) => Err(error),
    };
    let (daemon, config, recovering) = match started {
        Ok(started) => started,
        Err(error) => {
            tracing::error!(%error, "Souz could not start");
            shell.state().connection = Connection::Disconnected {
                reason: error.to_string(),
            };
            changed(&app);
            return;
        }
    };
    *shell
        .preferences
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = config.notifications.clone();
    #[cfg(desktop)]
    voice::register(&app, &config.voice.hotkey);
    let client = daemon.client().clone();
    let connection = match &daemon {
        Daemon::Embedded { client, .. } => Connection::Embedded {
            url: client.base().to_owned(),
        },
        Daemon::Attached { client } => Connection::Attached {
            url: client.base().to_owned(),
        },
    };
    *shell.daemon.lock().await = Some(daemon);
    let _ = shell.client.set(client.clone());
    if recovering || shell.show_at_launch {
        // config.toml has problems: the window shows them and lets the person fix the file.
        // Or the person launched the app asking for its window.
        crate::window::open(&app, None);
    }
    follow(app, shell, client, connection).await;
}

/// Logs to stderr and the logs folder as `[log]` says.
fn init_logging(shell: &Shell, config: &souz_core::config::Config) {
    match souz_core::telemetry::init(&config.log, &config.paths.logs()) {
        Ok(guard) => {
            *shell.logging.lock().unwrap_or_else(PoisonError::into_inner) = Some(guard);
        }
        Err(error) => eprintln!("souz-app: logging is off: {error}"),
    }
}

/// Follows the daemon's events for as long as the app runs; the client reconnects with
/// backoff, and each reconnection reloads the state at `Live`.
async fn follow<R: Runtime>(
    app: AppHandle<R>,
    shell: Arc<Shell>,
    client: DaemonClient,
    connection: Connection,
) {
    #[allow(
        clippy::disallowed_methods,
        reason = "the app's chat follower, owned by this function: aborted when the runtime stream ends"
    )]
    let chats = tokio::spawn(follow_chats(
        app.clone(),
        Arc::clone(&shell),
        client.clone(),
    ));
    client
        .follow(EventStream::Runtime, Reconnect::default(), |item| {
            match item {
                StreamItem::Live => {
                    let (app, shell, client, connection) = (
                        app.clone(),
                        Arc::clone(&shell),
                        client.clone(),
                        connection.clone(),
                    );
                    #[allow(
                        clippy::disallowed_methods,
                        reason = "one reload of the app's state after a reconnect; it ends with the reload or with the app"
                    )]
                    tokio::spawn(async move {
                        match reload(&client).await {
                            Ok(Reloaded {
                                pending,
                                questions,
                                turns,
                                paused,
                            }) => {
                                tracing::debug!(
                                    approvals = pending.len(),
                                    questions = questions.len(),
                                    "daemon state reloaded"
                                );
                                let notices = {
                                    let mut state = shell.state();
                                    state.connection = connection;
                                    state.reset(pending, questions, turns, paused)
                                };
                                handle(&app, notices);
                            }
                            Err(error) => {
                                tracing::warn!(%error, "could not load the daemon's state")
                            }
                        }
                        follow_language(&app, &client).await;
                        follow_schedules(&app, &shell, &client).await;
                    });
                }
                StreamItem::Runtime(envelope) => {
                    tracing::debug!(
                        seq = envelope.seq,
                        kind = envelope.event.kind(),
                        "runtime event"
                    );
                    if matches!(envelope.event, RuntimeEvent::SettingsChanged {}) {
                        let (app, client) = (app.clone(), client.clone());
                        #[allow(
                            clippy::disallowed_methods,
                            reason = "one language refresh of the app; it ends with the request or with the app"
                        )]
                        tokio::spawn(async move { follow_language(&app, &client).await });
                    }
                    if ShellState::refetches_schedules(&envelope.event) {
                        let (app, shell, client) =
                            (app.clone(), Arc::clone(&shell), client.clone());
                        #[allow(
                            clippy::disallowed_methods,
                            reason = "one schedules refresh of the app; it ends with the request or with the app"
                        )]
                        tokio::spawn(async move { follow_schedules(&app, &shell, &client).await });
                    }
                    let notices = shell.state().apply_runtime(&envelope.event);
                    handle(&app, notices);
                }
                StreamItem::Disconnected(reason) => {
                    shell.state().connection = Connection::Disconnected { reason };
                    changed(&app);
                }
                StreamItem::Chat(_) => {}
            }
            ControlFlow::Continue(())
        })
        .await;
    chats.abort();
}

/// Follows every chat's events: turns start and end, or wait on a question.
async fn follow_chats<R: Runtime>(app: AppHandle<R>, shell: Arc<Shell>, client: DaemonClient) {
    client
        .follow(EventStream::Chats, Reconnect::default(), |item| {
            if let StreamItem::Chat(event) = item {
                let notices = shell.state().apply_chat(&event);
                // Turns start and end, or wait on a question (no longer working): redraw for
                // those, not for every delta.
                if ShellState::moves_turns(&event) {
                    handle(&app, notices);
                }
            }
            ControlFlow::Continue(())
        })
        .await;
}

/// What the daemon reports at (re)connection.
/// Takes the interface language chosen in Souz for the tray and notifications; redraws the
/// tray when it changed. Without an answer the words stay as they are.
async fn follow_language<R: Runtime>(app: &AppHandle<R>, client: &DaemonClient) {
    match client
        .get::<souz_protocol::chat::SettingsResponse>("/v1/me/settings")
        .await
    {
        Ok(response) => {
            let chosen =
                souz_protocol::language::Language::from_code(&response.settings.interface_language);
            if let Some(chosen) = chosen
                && texts::set_language(chosen)
            {
                tracing::debug!(language = chosen.code(), "interface language");
                changed(app);
            }
        }
        Err(error) => tracing::warn!(%error, "could not read the interface language"),
    }
}

/// Reads the schedules (`GET /v1/schedules`) into the state and redraws the tray: at every
/// (re)connection and on every `schedules.changed`. Without an answer the last list stays.
async fn follow_schedules<R: Runtime>(app: &AppHandle<R>, shell: &Shell, client: &DaemonClient) {
    match client.schedules().await {
        Ok(list) => {
            tracing::debug!(schedules = list.items.len(), "schedules reloaded");
            shell.state().set_schedules(list.items);
            changed(app);
        }
        Err(error) => tracing::warn!(%error, "could not read the schedules"),
    }
}

struct Reloaded {
    pending: Vec<souz_protocol::Approval>,
    questions: Vec<souz_protocol::chat::Question>,
    turns: Vec<souz_protocol::chat::ActiveTurn>,
    paused: bool,
}

async fn reload(client: &DaemonClient) -> Result<Reloaded, ClientError> {
    let (pending, questions, turns, pause) = tokio::try_join!(
        client.pending_approvals(500),
        client.questions(),
        client.turns(),
        client.pause_state()
    )?;
    Ok(Reloaded {
        pending: pending.items,
        questions: questions.items,
        turns: turns.items,
        paused: pause.paused,
    })
}

/// Posts or withdraws notifications, then redraws the tray.
fn handle<R: Runtime>(app: &AppHandle<R>, notices: Vec<Notice>) {
    for notice in notices {
        notify::show(app, notice);
    }
    changed(app);
}

/// Redraws the tray after a state change.
pub fn changed<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(desktop)]
    tray::refresh(app);
    #[cfg(not(desktop))]
    let _ = app;
}

/// Reads start-at-login from the system into the state.
pub fn refresh_autostart<R: Runtime>(app: &AppHandle<R>) {
    let enabled = commands::read_autostart(app).unwrap_or(false);
    app.state::<Arc<Shell>>().state().autostart = enabled;
}

/// Runs a call to the daemon in the background, once the app has a client for it.
fn call_daemon<R: Runtime, F>(app: &AppHandle<R>, call: impl FnOnce(DaemonClient) -> F)
where
    F: Future<Output = ()> + Send + 'static,
{
    if let Some(client) = app.state::<Arc<Shell>>().client.get().cloned() {
        tauri::async_runtime::spawn(call(client));
    }
}

/// Decides an approval from the tray or a notification.
pub fn decide<R: Runtime>(
    app: &AppHandle<R>,
    approval_id: String,
    approve: bool,
    via: &'static str,
) {
    call_daemon(app, |client| async move {
        let verdict = if approve {
            souz_protocol::Verdict::Approve
        } else {
            souz_protocol::Verdict::Deny
        };
        let request = souz_protocol::DecisionRequest::once(verdict, via);
        if let Err(error) = client.decide(&approval_id, &request).await {
            tracing::warn!(%error, %approval_id, "could not decide the approval");
        }
    });
}

/// Answers a question with one choice, from the tray.
pub fn answer<R: Runtime>(app: &AppHandle<R>, option_id: String, choice_id: String) {
    call_daemon(app, |client| async move {
        let answer = souz_protocol::chat::OptionAnswer {
            selected_option_ids: vec![choice_id],
            ..Default::default()
        };
        if let Err(error) = client.answer(&option_id, &answer).await {
            tracing::warn!(%error, %option_id, "could not answer the question");
        }
    });
}

/// Pauses or resumes from the tray.
pub fn set_paused<R: Runtime>(app: &AppHandle<R>, paused: bool) {
    call_daemon(app, |client| async move {
        if let Err(error) = client.set_paused(paused, "tray").await {
            tracing::warn!(%error, "could not change the pause state");
        }
    });
}

/// Restarts the daemon in place ("Restart Souz" in the tray): the embedded runtime stops and a
/// new one starts on the same address with `config.toml` read again.
pub fn restart_daemon<R: Runtime>(app: &AppHandle<R>) {
    call_daemon(app, |client| async move {
        let restarted: Result<souz_protocol::Restarting, _> =
            client.post("/v1/restart", &serde_json::json!({})).await;
        if let Err(error) = restarted {
            tracing::warn!(%error, "could not restart Souz");
        }
    });
}
