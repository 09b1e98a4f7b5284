//! Tauri's build step. The window shows the UI the daemon serves (a remote origin to Tauri),
//! whose IPC calls are checked against the capability in `capabilities/default.json`; an app
//! manifest makes the app's own commands permissions it can grant (`allow-<command>`).

fn main() {
    let manifest = tauri_build::AppManifest::new().commands(&[
        "connection",
        "autostart_enabled",
        "set_autostart",
        "window_painted",
        "voice_state",
    ]);
    let attributes = tauri_build::Attributes::new().app_manifest(manifest);
    if let Err(error) = tauri_build::try_build(attributes) {
        eprintln!("tauri build step failed: {error:#}");
        std::process::exit(1);
    }
}
