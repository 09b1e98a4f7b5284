#!/usr/bin/env bash
# Installs what building Souz needs on Debian/Ubuntu: a C toolchain (SQLite is compiled in),
# pkg-config, curl, cmake and libclang (llama.cpp, the in-process local models, is built from
# source and its bindings generated), and a Rust toolchain (via rustup) when cargo is missing.
# Sourced by serve.sh and test.sh; safe to run repeatedly (installs only what is missing).
set -euo pipefail

souz_sudo() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs the Debian packages given as arguments that are not installed yet.
souz_apt_install() {
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "==> installing system packages: ${missing[*]}"
    souz_sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive souz_sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

souz_ensure_rust() {
  if [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "==> installing the Rust toolchain (rustup)"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component rustfmt,clippy
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1 && command -v rustup >/dev/null 2>&1; then
      rustup component add "$component"
    fi
  done
}

if command -v apt-get >/dev/null 2>&1; then
  souz_apt_install build-essential pkg-config curl ca-certificates git cmake libclang-dev
fi
souz_ensure_rust
