"""A real OpenAI-compatible model server on loopback: llama-cpp-python's `python -m llama_cpp.server`
with the Qwen2.5-Coder-1.5B-Instruct GGUF that `scripts/install_gguf.py` assembles (issue 33).

Used by the e2e agent test and `bench.bench_agent`. The server runs as its own process; llama.cpp keeps
the previous prompt's prefix evaluated, so a round only evaluates what follows the last prompt's history.
Not `--cache true`: its RAM cache saves each prompt's state with the logits of every token (about 0.6 GB
per 1,000 tokens at Qwen's 152k vocabulary) and grew past 20 GB in a 40-minute benchmark (OOM-killed).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from tests.support.harness import _free_port
from worldmm.config import AgentMode, LLMProvider, Settings
from worldmm.services import Services, get_services, set_services

ROOT = Path(__file__).resolve().parents[2]
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"
START_TIMEOUT_S = 180.0


def install_script() -> ModuleType:
    """`scripts/install_gguf.py` as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("install_gguf", ROOT / "scripts" / "install_gguf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def qwen_gguf() -> Path:
    """The assembled GGUF; missing, the test fails (`make test` runs setup, which assembles it)."""
    script = install_script()
    if script.is_installed():
        return Path(script.gguf_path())
    message = f"{script.gguf_path()} is not installed: run `python scripts/install_gguf.py` (scripts/setup.sh does)"
    pytest.fail(message)


@contextmanager
def llama_server(gguf: Path, *, n_ctx: int = 4096, n_threads: int | None = None) -> Iterator[str]:
    """Run llama-cpp-python's OpenAI-compatible server on 127.0.0.1 for `gguf`; yields its `/v1` base URL."""
    port = _free_port()
    threads = n_threads or max(1, min(4, os.cpu_count() or 2))
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(gguf), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads),
        "--verbose", "false",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited ({process.returncode}): {_tail(log.name)}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server not up after {START_TIMEOUT_S:.0f}s: {_tail(log.name)}")
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        os.unlink(log.name)


def _tail(path: str, chars: int = 2000) -> str:
    return Path(path).read_text(errors="replace")[-chars:]


def agent_settings(local: Settings, base_url: str) -> Settings:
    """The local profile's settings with the agent loop over an OpenAI-compatible server.

    Sized for a 1.5B model on CPU: four memories of 300 characters per search keep five rounds inside a
    4096-token context; the LLM cross-scale rerank is off (one more model call per episodic search)."""
    return local.model_copy(
        update={
            "llm_provider": LLMProvider.OPENAI_COMPATIBLE,
            "openai_base_url": base_url,
            "openai_api_key": "local",
            "agent_model": MODEL_ALIAS,
            "agent_mode": AgentMode.LOOP,
            "agent_max_tokens": 96,
            "answer_max_tokens": 160,
            "hybrid_top_k": 4,
            "memory_text_max_chars": 300,
            "episodic_rerank": False,
            "llm_timeout_s": 300.0,
            "llm_max_retries": 1,
        }
    )


@dataclass
class SampleMemory:
    settings: Settings  # the local profile the sample was ingested with
    services: Services


@contextmanager
def sample_profile() -> Iterator[SampleMemory]:
    """The sample morning ingested as `make demo` does, into a fresh local profile (own embedded PostgreSQL)."""
    from worldmm.db.local import start_local_database
    from worldmm.demo import local_profile, run_demo

    home = Path(tempfile.mkdtemp(prefix="worldmm-agent-"))
    home.chmod(0o755)  # the embedded server runs as its own user
    local = start_local_database(home / "pgdata")
    settings = local_profile(home, local)
    try:
        run_demo(settings, questions=())
        yield SampleMemory(settings, get_services())
    finally:
        set_services(None)
        local.server.cleanup()
        shutil.rmtree(home, ignore_errors=True)
