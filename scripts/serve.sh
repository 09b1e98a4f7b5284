#!/usr/bin/env bash
# Builds Souz (the `quick` profile, see Cargo.toml: a cold build in about 10 minutes on two
# cores where `release` takes 16; with in-process local models: llama.cpp) and runs the daemon with its embedded
# defaults on 127.0.0.1:8383.
# The first start writes ~/.souz/config.toml (every key commented at its default) and the
# bearer token (~/.souz/token). Extra arguments go to `souz serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
exec cargo run --profile quick --locked --bin souz -- serve "$@"
