#!/usr/bin/env bash
# Builds the Linux package of the Souz menu-bar app: a .deb with the app (/usr/bin/souz-app,
# its desktop entry and icons) and the `souz` CLI next to it (/usr/bin/souz), as the macOS
# bundle ships it — it is the stdio bridge Claude Desktop runs and the helper that confines
# commands with Landlock, so a package install has both. Run on Debian/Ubuntu:
#   ./scripts/release-linux.sh            # release build (fat LTO), for distribution
#   ./scripts/release-linux.sh --debug    # packages the test suite's debug build as it is
# `--debug` builds nothing new once `scripts/test.sh` has built the workspace: it bundles those
# binaries (`tauri bundle`), because building the app alone (`tauri build`) resolves the
# workspace's features differently and compiles the daemon's whole dependency tree again
# (~10 min on the 2-core CI machine). The window loads the daemon's own web UI in both builds.
# Output: target/<profile>/bundle/deb/Souz_<version>_<arch>.deb (its path is printed last).
# The Tauri CLI comes from npm (pinned to the tauri crate's version in Cargo.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
if command -v apt-get >/dev/null 2>&1; then
  souz_apt_install libwebkit2gtk-4.1-dev libxdo-dev libssl-dev libayatana-appindicator3-dev \
    librsvg2-dev file
  command -v npm >/dev/null 2>&1 || souz_apt_install nodejs npm
fi

profile=release
cargo_profile=(--release)
tauri_profile=()
case "${1:-}" in
  --debug) profile=debug; cargo_profile=(); tauri_profile=(--debug) ;;
  "") ;;
  *) echo "usage: $0 [--debug]" >&2; exit 2 ;;
esac
target_dir="${CARGO_TARGET_DIR:-target}"
triple="$(rustc -vV | sed -n 's/host: //p')"
tauri_version="$(sed -n '/^name = "tauri"$/{n;s/version = "\(.*\)"/\1/p;}' Cargo.lock)"

external='{"bundle":{"externalBin":["binaries/souz"]}}'
if [ "$profile" = debug ]; then
  # The suite's build: the workspace, every target, one feature set (a no-op after test.sh).
  cargo build --locked --workspace --all-targets
  mkdir -p src-tauri/binaries
  cp "$target_dir/debug/souz" "src-tauri/binaries/souz-$triple"
  npx --yes "@tauri-apps/cli@$tauri_version" bundle --debug --bundles deb --config "$external"
else
  # The CLI first: Tauri copies it into the package as an external binary named souz.
  cargo build "${cargo_profile[@]}" --locked -p souz-cli --bin souz
  mkdir -p src-tauri/binaries
  cp "$target_dir/$profile/souz" "src-tauri/binaries/souz-$triple"
  npx --yes "@tauri-apps/cli@$tauri_version" build "${tauri_profile[@]}" --bundles deb \
    --config "$external"
fi

package="$(ls -t "$target_dir/$profile/bundle/deb/"*.deb | head -n 1)"
echo "built $package"
