#!/usr/bin/env bash
# Crash loop: kill -9 the daemon at random points during chat turns, tool calls and approvals,
# ROUNDS times (default 100; the test command runs 20), restarting it in the same home; after
# every kill the database passes PRAGMA integrity_check, after every restart nothing
# acknowledged is lost and nothing is left running or pending (tests/e2e/crash_loop.rs).
# Usage: scripts/crash-loop.sh [ROUNDS] [SEED]   (the seed of a run is printed; it replays the
# kill points).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo build --locked -p souz-cli
export SOUZ_CRASH_ROUNDS="${1:-100}"
if [ -n "${2:-}" ]; then export SOUZ_CRASH_SEED="$2"; fi
cargo test --locked -p souz-e2e --test e2e crash_loop -- --nocapture
