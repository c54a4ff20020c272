"""X-Ray keeps no handler's response, nor an exception's message or stack.

A child process runs `instrument`ed handlers as the Lambda runtime would (tracing on, a sampled trace
header) with the X-Ray SDK's emitter replaced by one that keeps the documents it would send.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.template import load_template

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json
from aws_xray_sdk.core import xray_recorder

class Emitter:
    def __init__(self):
        self.docs = []
    def send_entity(self, entity):
        self.docs.append(entity.serialize())
    def set_daemon_address(self, address):
        pass

emitter = Emitter()
xray_recorder.configure(emitter=emitter, context_missing="LOG_ERROR")
from worldmm.observability import instrument

@instrument
def answer(event, context):
    return {"answer": "SECRET-ANSWER: your keys are on the hall table"}

@instrument
def fail(event, context):
    raise ValueError("SECRET-ERROR quoting what the user said")

returned = answer({}, None)
try:
    fail({}, None)
    raised = None
except ValueError as exc:
    raised = str(exc)
print(json.dumps({"docs": emitter.docs, "returned": returned, "raised": raised}))
"""


def test_security_traces_hold_no_response_and_no_error_text() -> None:
    env = {
        **os.environ,
        "LAMBDA_TASK_ROOT": str(ROOT),
        "POWERTOOLS_TRACE_DISABLED": "false",
        "AWS_LAMBDA_FUNCTION_NAME": "probe",
        "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("POWERTOOLS_TRACER_CAPTURE_RESPONSE", None)
    env.pop("POWERTOOLS_TRACER_CAPTURE_ERROR", None)
    child = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    found = json.loads(child.stdout.strip().splitlines()[-1])
    docs = [json.loads(d) for d in found["docs"]]
    # The handlers behave as before: the answer is returned, the exception raised with its message
    assert found["returned"]["answer"].startswith("SECRET-ANSWER") and found["raised"].startswith("SECRET-ERROR")
    # Both were traced (by name and time; the failure by its type), and no trace holds their content
    assert sorted(d["name"] for d in docs) == ["## answer", "## fail"]
    assert {d["name"]: d["annotations"].get("error") for d in docs} == {"## answer": None, "## fail": "ValueError"}
    assert "SECRET" not in json.dumps(docs)


def test_security_template_turns_tracer_capture_off_for_every_function() -> None:
    variables = load_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
    assert variables["POWERTOOLS_TRACER_CAPTURE_ERROR"] == "false"
