#!/usr/bin/env bash
# Soak: hours of mixed load on the real daemon with nothing lost (tests/examples/soak.rs).
# Usage: scripts/soak.sh [--minutes N | --seconds N] [--rate CALLS_PER_S] [--workers N] [--debug]
# MCP tools/call at --rate (default 1200/s) from --workers clients, chat turns against a fake
# provider, approvals decided by the script, two WebSocket followers. Prints per minute: calls,
# p99, turns, approvals, errors, RSS; at the end RSS growth after the first minute and lost
# events. Exits 1 on any error or lost event. Release build unless --debug (what the test
# command runs for 60 s).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
profile=(--release)
dir=release
args=()
for arg in "$@"; do
  case "$arg" in
    --debug) profile=(); dir=debug ;;
    *) args+=("$arg") ;;
  esac
done
# One build of both, over the workspace: one feature set, so the daemon's crates compile once
# (`-p souz-e2e` would select another and build souz-core a second time).
cargo build "${profile[@]}" --locked --bin souz --example soak
target="${CARGO_TARGET_DIR:-$PWD/target}/$dir"
SOUZ_BIN="$target/souz" "$target/examples/soak" "${args[@]}"
