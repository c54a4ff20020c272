"""One user looping chat at 20 questions a second, in-process: the allowance stops them, another user goes on.

Each question is what POST /memories/chat runs after parsing (`charge_question`, then `handle_chat`), on an
embedded PostgreSQL (the local profile's allowance adapter) with a scripted model that takes `--model-latency`
seconds a call and always searches (the worst case: every agent round, then the forced answer). Questions run
on a thread pool, as Lambda runs each request in its own container. Alice sends 20 a second for `--seconds`;
Bob asks one a second meanwhile, after `--baseline` questions alone for his normal latency. Model calls are
counted per user at the model port (chat writes no usage rows; the port sees every call).

Reports Alice's answered and refused questions, when she was first refused, her model calls against the bound
(CHAT_ALLOWANCE_MODEL_CALLS + the refill over the run), and Bob's latency alone and during Alice's loop.

    python -m bench.bench_chat_allowance --seconds 10
"""

from __future__ import annotations

import argparse
import contextvars
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.report import latency_summary, machine, write_result

ALICE, BOB = "bench-alice", "bench-bob"
OUT = Path(__file__).parent / "results" / "chat_allowance.json"
_asker: contextvars.ContextVar[str] = contextvars.ContextVar("asker", default="?")


class CountingLLM:
    """The model port, counting each call against the user whose question made it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()

    def _count(self, n: int = 1) -> None:
        with self._lock:
            self.calls[_asker.get()] += n

    def complete(self, request: Any) -> Any:
        self._count()
        return self._inner.complete(request)

    def complete_many(self, requests: Sequence[Any]) -> Any:
        self._count(len(requests))
        return self._inner.complete_many(requests)

    def yes_log_odds(self, request: Any) -> float:
        self._count()
        return float(self._inner.yes_log_odds(request))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def run(seconds: float, rate: float, model_latency_s: float, baseline: int) -> dict[str, Any]:
    from tests.support.harness import embedded_postgres, make_settings
    from worldmm.allowance.service import charge_question, question_cost
    from worldmm.allowance.settings import AllowanceSettings
    from worldmm.chat.service import handle_chat
    from worldmm.db.engine import Database
    from worldmm.errors import QuotaExceeded
    from worldmm.llm.scripted import ScriptedLLM
    from worldmm.media.objects import DirectoryObjectStore
    from worldmm.memory.embedding.hashing import HashEmbedder
    from worldmm.services import Services

    base = make_settings()
    with embedded_postgres(base) as local:
        settings = base.model_copy(update={"database_url": local.app_url})
        scripted = ScriptedLLM(latency_s=model_latency_s)
        scripted.script("reasoning_agent", {"action": "SEARCH", "memory_type": "episodic", "query": "my keys"})
        scripted.script("response", {"answer": "On the hall table."})
        llm = CountingLLM(scripted)
        services = Services(
            settings,
            db=Database(local.app_url, pool_size=40, max_overflow=10),
            llm=llm,
            reader_llm=llm,
            embedder=HashEmbedder(settings.embedding_dim),
            store=DirectoryObjectStore(Path(tempfile.mkdtemp(prefix="worldmm-bench-allowance-"))),
        )
        started_at = time.perf_counter()

        def question(user: str) -> tuple[str, int, float, float]:
            _asker.set(user)
            sent = time.perf_counter()
            try:
                charge_question(services, user)
                handle_chat(services, user, "Where did I leave my keys?")
                status = 200
            except QuotaExceeded:
                status = 429
            return user, status, (time.perf_counter() - sent) * 1000, sent - started_at

        alone = [question(BOB) for _ in range(baseline)]
        services.allowances.erase_user(BOB)  # Bob starts the loop with a full bucket, as Alice does
        futures: list[Future[tuple[str, int, float, float]]] = []
        with ThreadPoolExecutor(max_workers=48) as pool:
            loop_started = time.perf_counter()
            n = 0
            while time.perf_counter() - loop_started < seconds:
                futures.append(pool.submit(question, ALICE))
                if n % round(rate) == 0:
                    futures.append(pool.submit(question, BOB))
                n += 1
                time.sleep(max(0.0, loop_started + n / rate - time.perf_counter()))
            loop_s = time.perf_counter() - loop_started
        done = [f.result() for f in futures]
    alice = [d for d in done if d[0] == ALICE]
    bob = [d for d in done if d[0] == BOB]
    refused = sorted(d[3] for d in alice if d[1] == 429)
    bound = settings.chat_allowance_model_calls + settings.chat_allowance_model_calls_per_hour * loop_s / 3600
    return {
        "benchmark": "chat_allowance",
        "machine": machine(),
        "settings": {
            "chat_allowance_model_calls": settings.chat_allowance_model_calls,
            "chat_allowance_model_calls_per_hour": settings.chat_allowance_model_calls_per_hour,
            "question_cost_model_calls": question_cost(AllowanceSettings.of(settings)),
            "model_latency_s": model_latency_s,
            "alice_rate_per_s": rate,
            "seconds": round(loop_s, 2),
        },
        "alice": {
            "questions": len(alice),
            "answered": sum(d[1] == 200 for d in alice),
            "refused_429": len(refused),
            "first_429_after_s": round(refused[0] - min(d[3] for d in alice), 2) if refused else None,
            "model_calls": llm.calls[ALICE],
            "model_calls_bound": round(bound, 1),
            "within_bound": llm.calls[ALICE] <= bound,
            "refused_ms": latency_summary([d[2] for d in alice if d[1] == 429]) if refused else None,
        },
        "bob": {
            "alone": latency_summary([d[2] for d in alone]),
            "during_alice_loop": latency_summary([d[2] for d in bob]),
            "questions_during_loop": len(bob),
            "answered_during_loop": sum(d[1] == 200 for d in bob),
            "model_calls_per_question": round(llm.calls[BOB] / max(1, baseline + len(bob)), 2),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=20.0, help="Alice's questions a second")
    parser.add_argument("--model-latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--baseline", type=int, default=5, help="Bob's questions alone, before the loop")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    result = run(args.seconds, args.rate, args.model_latency, args.baseline)
    write_result(result, args.out)
    ok = result["alice"]["within_bound"] and result["alice"]["refused_429"] > 0
    return 0 if ok and result["bob"]["answered_during_loop"] == result["bob"]["questions_during_loop"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
