"""Chat latency with simulated model latency, through the deployed configuration.

Runs template.yaml's chat functions as cold starts on the emulators of tests/deployed (moto server,
embedded PostgreSQL through the Secrets Manager secret, OpenAI-wire fake models that sleep
`--model-latency` seconds per call), after ingesting four windows. Measures plain and verbose chat for
the typical question (one search, then the answer) and the worst case (the agent searches every
round, then is forced to answer), and the same with no model latency (the fixed cost: cold start,
database, embeddings, GPU worker and DynamoDB round trips).

    python -m bench.bench_chat_latency --model-latency 1.5

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import uuid
from typing import Any


def _measure(emulated: Any, function: str, user: str, worst: bool, latency_s: float) -> dict[str, Any]:
    from tests.support.capture import http_event

    scripted, server, stack = emulated.scripted, emulated.server, emulated.stack
    scripted.always_search, scripted.latency_s = worst, latency_s
    before = len(server.calls("/v1/chat/completions"))
    purposes_before = len(scripted.purposes())
    path = "/memories/chat/verbose" if function == "ChatVerboseFunction" else "/memories/chat"
    run = stack.invoke(function, http_event("POST", path, sub=user, body={"question": "Who did I talk with?"}))
    assert run.result["statusCode"] == 200, run.result
    return {
        "seconds": round(run.seconds, 2),
        "model_calls": len(server.calls("/v1/chat/completions")) - before,
        "purposes": scripted.purposes()[purposes_before:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-latency", type=float, default=1.5)
    args = parser.parse_args()
    import os

    # Emulators only: fake credentials, never a real account.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ[name] = "testing"
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"

    from tests.deployed.emulators import emulated_stack
    from tests.deployed.test_chat_budget import API_GATEWAY_LIMIT_S, seed_windows

    with emulated_stack() as emulated:
        user = f"bench-{uuid.uuid4()}"
        seed_windows(emulated.stack, user, count=4)
        results: dict[str, Any] = {}
        for function in ("ChatFunction", "ChatVerboseFunction"):
            for case, worst in (("typical", False), ("worst", True)):
                for label, latency in (("no_model_latency", 0.0), ("model_latency", args.model_latency)):
                    results[f"{function}.{case}.{label}"] = _measure(emulated, function, user, worst, latency)
        timeout = min(emulated.stack.timeout_s("ChatFunction"), API_GATEWAY_LIMIT_S)
        worst_s = max(v["seconds"] for k, v in results.items() if k.endswith("worst.model_latency"))
        print(
            json.dumps(
                {
                    "bench": "chat_latency",
                    "model_latency_s": args.model_latency,
                    "function_timeout_s": emulated.stack.timeout_s("ChatFunction"),
                    "api_gateway_limit_s": API_GATEWAY_LIMIT_S,
                    "worst_case_s": worst_s,
                    "worst_case_headroom_s": round(timeout - worst_s, 2),
                    "runs": results,
                }
            )
        )


if __name__ == "__main__":
    main()
