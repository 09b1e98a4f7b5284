#!/usr/bin/env bash
# Fuzzing on the stable toolchain: the property-based tests (proptest) over config parsing, the
# MCP JSON-RPC front door, the shell lexer and the path resolver, run per target for MINUTES of
# wall time (default 1) or for CPU_MINUTES of CPU time (the closing note's "one CPU-hour each"
# is --cpu-minutes 60), with fresh random seeds, CASES cases per run.
# The test command runs each once with proptest's default 256 cases. A failure prints the
# minimal input and proptest records its seed under crates/core/proptest-regressions/ (commit
# it, and turn the input into a named regression test).
# Usage: scripts/fuzz.sh [--minutes N | --cpu-minutes N] [--cases N] [--only TARGET]
#   TARGET: config, mcp, shell or paths (default: all four, one after the other)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
minutes=1
cpu_minutes=
cases=20000
only=
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --cpu-minutes) cpu_minutes="$2"; shift 2 ;;
    --cases) cases="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    *) echo "usage: scripts/fuzz.sh [--minutes N | --cpu-minutes N] [--cases N] [--only config|mcp|shell|paths]" >&2; exit 2 ;;
  esac
done
targets=(config::fuzz mcp::server::fuzz shell::fuzz sandbox::paths::fuzz)
case "$only" in
  "") ;;
  config) targets=(config::fuzz) ;;
  mcp) targets=(mcp::server::fuzz) ;;
  shell) targets=(shell::fuzz) ;;
  paths) targets=(sandbox::paths::fuzz) ;;
  *) echo "unknown target '$only' (config, mcp, shell or paths)" >&2; exit 2 ;;
esac
cargo nextest --version >/dev/null 2>&1 || { echo "cargo-nextest is needed" >&2; exit 2; }
# The workspace's test binaries, as the test command builds them (one feature set: nothing
# compiles again after ./scripts/test.sh).
cargo nextest run --locked --workspace --no-run
ticks_per_s=$(getconf CLK_TCK)
# CPU time (user + system, in clock ticks) of every finished child of this shell and of their
# descendants: fields 16 and 17 (cutime, cstime) of /proc/$$/stat.
children_ticks() {
  local stat
  stat=$(<"/proc/$$/stat")
  stat=${stat##*) }
  # shellcheck disable=SC2086
  set -- $stat
  echo $(( ${14} + ${15} ))
}
for target in "${targets[@]}"; do
  start_ticks=$(children_ticks)
  end=$(( $(date +%s) + minutes * 60 ))
  runs=0
  while true; do
    spent=$(( $(children_ticks) - start_ticks ))
    if [ -n "$cpu_minutes" ]; then
      [ "$spent" -lt $(( cpu_minutes * 60 * ticks_per_s )) ] || break
    else
      [ "$(date +%s)" -lt "$end" ] || break
    fi
    PROPTEST_CASES="$cases" cargo nextest run --locked --workspace --no-fail-fast \
      --status-level fail --final-status-level fail -E "package(souz-core) & test(/^${target}::/)"
    runs=$((runs + 1))
  done
  echo "==> $target: $runs runs of $cases cases per property in $(( spent / ticks_per_s )) CPU-seconds, 0 failures"
done
