#!/usr/bin/env bash
# Benchmarks. Usage: scripts/bench.sh [startup|gate|llm|agent|all]
# Builds the release `souz` binary first so the numbers are for what users run.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
cargo build --release --bin souz
export SOUZ_BIN="$PWD/target/release/souz"
case "$which" in
  startup) cargo bench -p souz-e2e --bench startup ;;
  gate) cargo bench -p souz-core --bench gate ;;
  llm) cargo bench -p souz-core --bench llm ;;
  agent) cargo bench -p souz-core --bench agent ;;
  all)
    cargo bench -p souz-e2e --bench startup
    cargo bench -p souz-core --bench gate
    cargo bench -p souz-core --bench llm
    cargo bench -p souz-core --bench agent
    ;;
  *) echo "unknown benchmark: $which" >&2; exit 2 ;;
esac
