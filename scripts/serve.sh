#!/usr/bin/env bash
# Builds Souz with in-process local models (llama.cpp) and runs the daemon with its embedded
# defaults on 127.0.0.1:8383. The `serve` profile (Cargo.toml) is the release profile without
# whole-program LTO, in 16 codegen units: a cold build takes about half as long as the
# fat-LTO distribution build.
# The first start writes ~/.souz/config.toml (every key commented at its default) and the
# bearer token (~/.souz/token). Extra arguments go to `souz serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
exec cargo run --profile serve --locked --bin souz -- serve "$@"
