#!/usr/bin/env bash
# Regenerates crates/cli/startup-order.txt, the functions the daemon runs at start, which the
# release and quick links lay out together (crates/cli/build.rs). Run it when the idle RSS that
# `scripts/bench.sh startup` prints grows: new startup code is not in the list, and functions
# renamed since are skipped. Builds the binaries of both profiles (`release`, the distribution
# build, and `quick`, what scripts/serve.sh runs: they inline differently, so the list holds
# both sets of names), runs each under valgrind (installed if missing), then builds them again
# with the new list (a second release link of 5 to 10 minutes on two cores, skipped when the
# list is unchanged).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
souz_apt_install valgrind
target="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release --locked --bin souz
cargo build --profile quick --locked --bin souz
python3 scripts/startup_order.py crates/cli/startup-order.txt "$target/release/souz" "$target/quick/souz"
cargo build --release --locked --bin souz
cargo build --profile quick --locked --bin souz
