#!/usr/bin/env bash
# Fuzzing on the stable toolchain: the property-based tests (proptest) over config parsing, the
# MCP JSON-RPC front door, the shell lexer and the path resolver, run for MINUTES per target
# (default 1; the closing note uses 60) with fresh random seeds, CASES cases per run.
# The test command runs each once with proptest's default 256 cases. A failure prints the
# minimal input and proptest records its seed under crates/core/proptest-regressions/ (commit
# it, and turn the input into a named regression test).
# Usage: scripts/fuzz.sh [--minutes N] [--cases N]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
minutes=1
cases=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --cases) cases="$2"; shift 2 ;;
    *) echo "usage: scripts/fuzz.sh [--minutes N] [--cases N]" >&2; exit 2 ;;
  esac
done
cargo nextest --version >/dev/null 2>&1 || { echo "cargo-nextest is needed" >&2; exit 2; }
cargo nextest run --locked -p souz-core fuzz --no-run
for target in config::fuzz mcp::server::fuzz shell::fuzz sandbox::paths::fuzz; do
  end=$(( $(date +%s) + minutes * 60 ))
  runs=0
  while [ "$(date +%s)" -lt "$end" ]; do
    PROPTEST_CASES="$cases" cargo nextest run --locked -p souz-core --no-fail-fast \
      --status-level fail --final-status-level fail -E "test(/^${target}::/)"
    runs=$((runs + 1))
  done
  echo "==> $target: $runs runs of $cases cases per property, 0 failures"
done
