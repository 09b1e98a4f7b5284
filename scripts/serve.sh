#!/usr/bin/env bash
# Builds Souz (release, with in-process local models: llama.cpp) and runs the daemon with its
# embedded defaults on 127.0.0.1:8383.
# The first start writes ~/.souz/config.toml (every key commented at its default) and the
# bearer token (~/.souz/token). Extra arguments go to `souz serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
exec cargo run --release --locked --bin souz -- serve "$@"
