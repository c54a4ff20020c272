"""The API contract run: schemathesis (`st run`) against the local gateway on 127.0.0.1, from its own document.

Used by tests/integration/test_api_contract.py (a short run with a fixed seed) and `make contract`
(bench/contract.py, a longer one). The settings live in the committed `schemathesis.toml`: every check,
all four phases (examples, coverage, fuzzing, stateful along the document's links), positive and negative
data, and each remaining exception with its reason. Operations come from `/openapi.json`, so a new route
is tested without editing anything here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.gateway import RunningGateway, running_gateway
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.gateway.auth import issue_token
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.objects import DirectoryObjectStore
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services, set_services

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "schemathesis.toml"
CONTRACT_USER = "contract-user"
PEER_USER = "contract-peer"


def contract_services(settings: Settings, db: Database, llm: ScriptedLLM, objects: Path) -> Services:
    """Services on the real database, objects under `objects`, and a chat agent that always answers."""
    llm.script("reasoning_agent", {"action": "ANSWER"}).script("response", {"answer": "On the hall table."})
    return Services(
        settings, db=db, llm=llm, embedder=HashEmbedder(settings.embedding_dim), store=DirectoryObjectStore(objects)
    )


@contextmanager
def contract_gateway(services: Services) -> Iterator[RunningGateway]:
    """`worldmm serve` over `services` on an ephemeral loopback port."""
    try:
        with running_gateway(services) as running:
            yield running
    finally:
        set_services(None)


@dataclass(frozen=True)
class ContractRun:
    """What one schemathesis run found: its exit code, output and the JSON report's summary."""

    returncode: int
    output: str
    report: dict[str, Any]

    @property
    def summary(self) -> dict[str, Any]:
        """Operations, test cases and failures, by phase and check, as the report counts them."""
        return summarize(self.report)


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a schemathesis JSON report that a person reads first."""
    keep = ("operations", "test_cases", "failures", "phases", "checks", "duration", "api_calls")
    return {key: report[key] for key in keep if key in report} or report


def _with_identities(workdir: Path, tokens: dict[str, str]) -> Path:
    """The committed config plus the run's users (a Web Fuzzing Commons auth file): the first makes the
    requests, and `object_level_authorization` replays each read of its objects as every other."""
    identities = workdir / "identities.json"
    users = [
        {"name": user, "fixedHeaders": [{"name": "Authorization", "value": f"Bearer {token}"}]}
        for user, token in tokens.items()
    ]
    identities.write_text(json.dumps({"auth": users}))
    config = workdir / "schemathesis.toml"
    peers = ", ".join(json.dumps(user) for user in tokens)
    # Pinned to the first user: otherwise an operation that answers 403 (an unknown id) is retried as the
    # others, and the ids the first user's links supply would then be refused for good.
    config.write_text(
        CONFIG.read_text()
        + f"\n[auth.wfc]\npath = {json.dumps(str(identities))}\nuser = {json.dumps(next(iter(tokens)))}\n"
        + f"peers = [{peers}]\n"
    )
    return config


def run_schemathesis(
    gateway_url: str,
    tokens: dict[str, str],
    *,
    max_time_s: int,
    seed: int,
    workdir: Path,
    extra: tuple[str, ...] = (),
) -> ContractRun:
    """`st run` with the committed config against `gateway_url`'s document, as the first of `tokens`' users
    (user -> bearer token), the others its peers for the object-level authorization check."""
    report_path = workdir / "schemathesis-report.json"
    workdir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(_with_identities(workdir, tokens)),
        "run",
        f"{gateway_url}/openapi.json",
        "--seed",
        str(seed),
        "--max-time",
        str(max_time_s),
        "--report",
        "json",
        "--report-json-path",
        str(report_path),
        *extra,
    ]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=max_time_s + 240)
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return ContractRun(done.returncode, done.stdout + done.stderr, report)


def contract_token(settings: Settings, user: str = CONTRACT_USER) -> str:
    """A development token good for the whole run."""
    return issue_token(user, settings, ttl_s=3600)


def contract_tokens(settings: Settings) -> dict[str, str]:
    """The run's two users: the one that makes the requests, and a peer that must never see its objects."""
    return {user: contract_token(settings, user) for user in (CONTRACT_USER, PEER_USER)}
