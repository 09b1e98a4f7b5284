#!/usr/bin/env bash
# Builds the signed Souz.app and DMG on a Mac (Apple silicon or Intel). Run on macOS with
# Xcode's command line tools, Rust and Node installed:
#   APPLE_SIGNING_IDENTITY="Developer ID Application: ..." ./scripts/release-macos.sh
# Optional notarization: APPLE_ID, APPLE_PASSWORD (app-specific), APPLE_TEAM_ID.
# Output: target/release/bundle/macos/Souz.app and target/release/bundle/dmg/Souz_*.dmg.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(uname)" = "Darwin" ] || { echo "release-macos.sh runs on macOS only" >&2; exit 2; }
: "${APPLE_SIGNING_IDENTITY:?set APPLE_SIGNING_IDENTITY to your Developer ID Application identity}"
# The `souz` CLI ships inside the bundle too (it is also the Seatbelt-free sandbox helper).
cargo build --release --locked --bin souz
mkdir -p src-tauri/binaries
cp target/release/souz "src-tauri/binaries/souz-$(rustc -vV | sed -n 's/host: //p')"
npx --yes @tauri-apps/cli@2 build --bundles app,dmg \
  --config '{"bundle":{"externalBin":["binaries/souz"],"macOS":{"signingIdentity":"'"$APPLE_SIGNING_IDENTITY"'","hardenedRuntime":true}}}'
codesign --verify --deep --strict --verbose=2 target/release/bundle/macos/Souz.app
echo "built target/release/bundle/macos/Souz.app and the DMG in target/release/bundle/dmg/"
