#!/usr/bin/env bash
# Regenerates crates/cli/startup-order.txt, the functions the daemon runs at start, which the
# release link lays out together (crates/cli/build.rs). Run it when the idle RSS that
# `scripts/bench.sh startup` prints grows: new startup code is not in the list, and functions
# renamed since are skipped. Builds the release binary, runs it under valgrind (installed if
# missing), then builds it again with the new list (a second link of 5 to 10 minutes on two
# cores, skipped when the list is unchanged).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
souz_apt_install valgrind
cargo build --release --locked --bin souz
python3 scripts/startup_order.py "${CARGO_TARGET_DIR:-$PWD/target}/release/souz" crates/cli/startup-order.txt
cargo build --release --locked --bin souz
