"""The deployed configuration works: every function cold-started with exactly template.yaml's environment.

One flow on emulated AWS (moto server), the embedded PostgreSQL reached through the RDS-format
Secrets Manager secret, and the model APIs on loopback: capture start → uploads (S3 notifications
through SQS) → window close → ingest → multiscale → chat → chats list → messages → retrigger.
"""

from __future__ import annotations

import io
import json
import re
import uuid
import wave
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.deployed.emulators import USER, ScriptedModels, backdate_session
from tests.deployed.settings_contract import DEFAULT_IS_RIGHT_ON_AWS, UNSET_ON_AWS, settings_missing_from_template
from tests.deployed.stack import ACCOUNT, EMULATOR_ENDPOINTS, REGION, DeployedStack, LambdaInvokeRecorder, Run
from tests.support.adapters import FakeModelServer
from tests.support.capture import http_event, post_upload
from worldmm.db.local import LocalDatabase

pytestmark = pytest.mark.integration


def jpeg(seed: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (32, 24), (seed * 13 % 256, seed * 7 % 256, 90)).save(out, format="JPEG")
    return out.getvalue()


def wav(seconds: float = 1.0) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x00\x01" * int(16000 * seconds))
    return out.getvalue()


def body(run: Run, status: int = 200) -> Any:
    assert run.result["statusCode"] == status, run.result
    return json.loads(run.result["body"])


def put(upload: dict[str, Any], data: bytes) -> None:
    """The phone's upload: the presigned POST's fields, then the object (the bucket bounds its length)."""
    assert upload["method"] == "POST" and 0 < len(data) <= upload["maxBytes"]
    assert post_upload(upload, data) == 204


def sqs_event(stack: DeployedStack, queue: str) -> dict[str, Any]:
    """Every message waiting on the template's queue, as the SQS event source hands them to Lambda."""
    sqs = stack.client("sqs")
    url = stack.physical[queue]
    arn = stack.resolve({"Fn::GetAtt": [queue, "Arn"]})
    records = []
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if not got:
            break
        for m in got:
            records.append(
                {
                    "messageId": m["MessageId"],
                    "receiptHandle": m["ReceiptHandle"],
                    "body": m["Body"],
                    "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0"},
                    "messageAttributes": {},
                    "md5OfBody": m["MD5OfBody"],
                    "eventSource": "aws:sqs",
                    "eventSourceARN": arn,
                    "awsRegion": "us-east-1",
                }
            )
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return {"Records": records}


def listen_to_app_events(stack: DeployedStack) -> str:
    """An app's subscription to the template's event bus: a rule for every `worldmm` event, into a queue."""
    url = stack.client("sqs").create_queue(QueueName=f"app-events-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{url.rsplit('/', 1)[-1]}"
    events = stack.client("events")
    bus = stack.physical["AppEventsBus"]
    events.put_rule(Name="app-listener", EventBusName=bus, EventPattern=json.dumps({"source": ["worldmm"]}))
    events.put_targets(Rule="app-listener", EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])
    return url


def app_events(stack: DeployedStack, url: str) -> list[dict[str, Any]]:
    """The EventBridge events the listener's queue received, in arrival order."""
    sqs, received = stack.client("sqs"), []
    while got := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", []):
        for m in got:
            received.append(json.loads(m["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return received


def segments(pg: LocalDatabase, session_id: str) -> list[tuple[int, int, str]]:
    engine = create_engine(pg.admin_url)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT duration_seconds, window_index, processing_status::text FROM worldmm_segments "
                "WHERE user_id = :u AND session_id = :s ORDER BY duration_seconds, window_index"
            ),
            {"u": USER, "s": session_id},
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def emf_metrics(run: Run) -> set[str]:
    """Names of the metrics a run printed as CloudWatch embedded metric format in namespace WorldMM."""
    names: set[str] = set()
    for line in run.output.splitlines():
        if '"CloudWatchMetrics"' not in line:
            continue
        blob = json.loads(line[line.index("{") :])
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            if directive["Namespace"] == "WorldMM":
                names.update(m["Name"] for m in directive["Metrics"])
    return names


def run_invocations(stack: DeployedStack, recorder: LambdaInvokeRecorder) -> list[Run]:
    """Run every asynchronous invoke the functions made, each as a cold start of its target."""
    by_name = {stack.physical[name]: name for name in stack.functions()}
    runs = []
    for invocation in recorder.take():
        assert invocation.invocation_type == "Event"
        runs.append(stack.invoke(by_name[invocation.function_name], invocation.payload))
    return runs


def test_whole_flow_runs_on_the_templates_own_environment(
    stack: DeployedStack,
    lambda_service: LambdaInvokeRecorder,
    models: tuple[FakeModelServer, ScriptedModels],
    deployed_pg: LocalDatabase,
) -> None:
    server, scripted = models
    # GIVEN a capture session started through the API
    started = body(stack.invoke("CaptureStartFunction", http_event("POST", "/sessions", sub=USER)), 201)
    session = started["sessionId"]
    expected = started["expectedFrames"]
    backdate_session(stack, session, 3600)  # its windows have ended by the time chat asks

    # WHEN the glasses upload two windows' frames and audio to presigned URLs
    for window in (0, 1):
        request = {"windowIndex": window, "count": expected}
        frames = body(
            stack.invoke(
                "CaptureFramesFunction", http_event("POST", f"/sessions/{session}/frames", sub=USER, body=request)
            )
        )
        audio = body(
            stack.invoke(
                "CaptureAudioFunction",
                http_event("POST", f"/sessions/{session}/audio", sub=USER, body={"windowIndex": window}),
            )
        )
        for i, upload in enumerate(frames["uploads"]):
            put(upload, jpeg(i + window))
        put(audio["uploads"][0], wav())

    # THEN the bucket's notifications reach the uploads function through the template's queue,
    # which closes each window and invokes the ingest function asynchronously
    event = sqs_event(stack, "UploadEventsQueue")
    created = [r for r in event["Records"] if "ObjectCreated" in r["body"]]
    assert len(created) == 2 * (expected + 1)  # (plus the s3:TestEvent S3 sends when notifications are set)
    for start in range(0, len(event["Records"]), 10):  # the template's BatchSize
        batch = {"Records": event["Records"][start : start + 10]}
        assert stack.invoke("CaptureUploadsFunction", batch).result == {"batchItemFailures": []}
    invocations = lambda_service.take()
    assert sorted((i.function_name, json.dumps(i.payload, sort_keys=True)) for i in invocations) == [
        (
            stack.physical["IngestWindowFunction"],
            json.dumps(
                {"frameCount": expected, "sessionId": session, "userId": USER, "windowIndex": w}, sort_keys=True
            ),
        )
        for w in (0, 1)
    ]

    # WHEN the session ends and the windows are ingested (an app listening on the template's event bus)
    listener = listen_to_app_events(stack)
    body(stack.invoke("CaptureEndFunction", http_event("POST", f"/sessions/{session}/end", sub=USER)))
    assert lambda_service.take() == []  # both windows were already closed
    for invocation in invocations:
        ingested = stack.invoke("IngestWindowFunction", invocation.payload).result
        assert ingested["status"] == "ok" and ingested["enriched"], ingested
    assert lambda_service.take() == []

    # THEN the windows and their partial 3 min summary (the session ended) are stored
    assert segments(deployed_pg, session) == [(30, 0, "complete"), (30, 1, "complete"), (180, 0, "complete")]
    assert "/openai/v1/audio/transcriptions" in {r.path for r in server.requests}
    assert "merge_captions" in scripted.purposes()
    # AND an app listening on the template's bus heard each window processed (ids and counts only)
    heard = [e for e in app_events(stack, listener) if e["detail"]["sessionId"] == session]
    assert {(e["source"], e["detail"]["userId"]) for e in heard} == {("worldmm", USER)}
    windows = [e["detail"] for e in heard if e["detail-type"] == "WindowProcessed"]
    assert sorted((w["windowIndex"], w["frameCount"], w["attempt"]) for w in windows) == [
        (0, expected, 1),
        (1, expected, 1),
    ], heard

    # WHEN the wearer asks a question, plain and verbose
    question = {"question": "Who did I talk with?"}
    answer = body(stack.invoke("ChatFunction", http_event("POST", "/memories/chat", sub=USER, body=question)))
    assert answer["answer"] == "You talked with Alice." and answer["chat_id"]
    verbose = body(
        stack.invoke(
            "ChatVerboseFunction",
            http_event("POST", "/memories/chat/verbose", sub=USER, body={**question, "chat_id": answer["chat_id"]}),
        )
    )
    assert verbose["trace"], verbose
    searches = [r for r in verbose["trace"]["rounds"] if r["action"] == "SEARCH"]
    assert searches and searches[0]["retrieved_ids"], verbose["trace"]  # the ingested memories were found

    # THEN the chat is listed and its messages read back (another user sees nothing)
    chats = body(stack.invoke("ChatsListFunction", http_event("POST", "/chats/list", sub=USER, body={})))
    assert [c["id"] for c in chats["conversations"]] == [answer["chat_id"]]
    messages_event = http_event("GET", "/chats/messages", sub=USER)
    messages_event["queryStringParameters"] = {"chat_id": answer["chat_id"]}
    messages_event["rawQueryString"] = f"chat_id={answer['chat_id']}"
    messages = body(stack.invoke("ChatMessagesFunction", messages_event))
    assert len(messages["messages"]) == 4
    other = http_event("POST", "/chats/list", sub=f"other-{uuid.uuid4()}", body={})
    assert body(stack.invoke("ChatsListFunction", other))["conversations"] == []

    # THEN the wearer's timeline lists both windows and the summary, oldest first (then shortest)
    page = body(stack.invoke("MemoriesListFunction", http_event("GET", "/memories", sub=USER)))
    assert [(m["duration_seconds"], m["window_index"]) for m in page["memories"]] == [(30, 0), (180, 0), (30, 1)]
    # AND a window comes with a presigned GET URL per frame and for its audio
    first = page["memories"][0]["id"]
    window = body(stack.invoke("MemoryGetFunction", http_event("GET", f"/memories/{first}", sub=USER)))
    # each upload URL names its own object (issue 64): the audio chunk is audio.{nonce}.wav
    names = {m["name"] for m in window["media"]}
    assert len(window["media"]) == expected + 1 and any(re.fullmatch(r"audio\.[0-9a-z]{26}\.wav", n) for n in names)
    # AND the wearer corrects the name of an entity it names (merging is the same call); another user gets 403
    entity = window["entities"][0]
    correction = http_event("PATCH", f"/entities/{entity['id']}", sub=USER, body={"name": "Alicia"})
    corrected = body(stack.invoke("EntityCorrectFunction", correction))
    assert (corrected["action"], corrected["name"]) == ("rename", "Alicia"), corrected
    stolen = http_event("PATCH", f"/entities/{entity['id']}", sub="someone-else", body={"name": "Mallory"})
    assert stack.invoke("EntityCorrectFunction", stolen).result["statusCode"] == 403
    # AND the session's ingest status counts both windows complete; another user gets 403 for it
    status = body(stack.invoke("SessionStatusFunction", http_event("GET", f"/sessions/{session}", sub=USER)))
    assert status["counts"] == {"pending": 0, "complete": 2, "failed": 0, "waiting_for_gpu": 0}, status
    stranger = stack.invoke("SessionStatusFunction", http_event("GET", f"/sessions/{session}", sub="someone-else"))
    assert stranger.result["statusCode"] == 403

    # WHEN an operator retriggers the session with force
    retriggered = stack.invoke("RetriggerIngestFunction", {"sessionId": session, "userId": USER, "force": True})
    assert retriggered.result["triggered"] == [0, 1], retriggered.result
    reruns = run_invocations(stack, lambda_service)
    # THEN the windows are ingested again
    assert [r.result["status"] for r in reruns] == ["ok", "ok"]

    # WHEN another user, then the wearer, deletes the session (issue 25: span forget on its template environment)
    stranger = stack.invoke("SessionForgetFunction", http_event("DELETE", f"/sessions/{session}", sub="someone-else"))
    assert stranger.result["statusCode"] == 403
    erased = body(stack.invoke("SessionForgetFunction", http_event("DELETE", f"/sessions/{session}", sub=USER)))
    # THEN its windows and summary are gone from the timeline
    assert erased["deleted"]["postgres.windows"] == 2, erased
    assert body(stack.invoke("MemoriesListFunction", http_event("GET", "/memories", sub=USER)))["memories"] == []
    span = http_event("DELETE", "/memories", sub=USER)
    span["queryStringParameters"] = {"from": "2020-01-01T00:00:00Z", "to": "2020-01-01T01:00:00Z"}
    span["rawQueryString"] = "from=2020-01-01T00:00:00Z&to=2020-01-01T01:00:00Z"
    assert body(stack.invoke("MemoriesForgetFunction", span))["deleted"] == {}

    # AND every invocation published its metrics in the template's namespace
    assert all(emf_metrics(run) for run in stack.runs), [r.function for r in stack.runs if not emf_metrics(r)]
    published = set().union(*(emf_metrics(run) for run in stack.runs))
    assert {"ColdStart", "WindowsIngested", "ModelCalls", "ModelPromptTokens", "ChatLatency"} <= published

    # AND no function read a setting its template environment lacks (unless its default is right on AWS)
    given = {function: set(stack.environment(function)) for function in stack.reads}
    assert settings_missing_from_template(stack.reads, given) == {}, (
        "give these in template.yaml, or list them in tests/deployed/settings_contract.py with why "
        "their default is right on AWS"
    )


def test_settings_allowed_to_default_are_settings_and_name_no_aws_resource() -> None:
    from worldmm.config import Settings

    fields = {name.upper() for name in Settings.model_fields}
    assert fields >= DEFAULT_IS_RIGHT_ON_AWS
    resources = {"FRAMES_BUCKET", "SESSIONS_TABLE", "CHATS_TABLE", "MESSAGES_TABLE", "CAPTURE_WINDOWS_TABLE"}
    secrets = {"OPENAI_API_KEY", "GROQ_API_KEY", "GPU_WORKER_TOKEN", "CURSOR_SECRET", "DATABASE_SECRET_ARN"}
    assert not DEFAULT_IS_RIGHT_ON_AWS & (resources | secrets | {"WORLDMM_PROFILE", "LLM_PROVIDER"})


def test_emulator_endpoints_are_only_endpoint_overrides_unset_on_aws() -> None:
    settings_named = {name for name in EMULATOR_ENDPOINTS if not name.startswith("AWS_")}
    assert settings_named <= set(UNSET_ON_AWS)


def test_no_library_code_reads_the_environment_outside_settings() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readers = [
        str(path.relative_to(root))
        for folder in ("worldmm", "handlers")
        for path in (root / folder).rglob("*.py")
        if re.search(r"os\.environ|os\.getenv|getenv\(", path.read_text())
    ]
    assert readers == []


def test_scheduled_and_queue_functions_run_on_their_template_environment(stack: DeployedStack) -> None:
    # GIVEN a window's failed invocation record in IngestDLQ (Lambda's OnFailure format); its frames are gone
    user, session = f"dlq-{uuid.uuid4()}", f"S{uuid.uuid4().hex[:20]}"
    payload = {"sessionId": session, "userId": user, "windowIndex": 0, "frameCount": 16}
    on_failure = {
        "version": "1.0",
        "requestContext": {"condition": "RetriesExhausted", "approximateInvokeCount": 1},
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
    }
    stack.client("sqs").send_message(QueueUrl=stack.physical["IngestDLQ"], MessageBody=json.dumps(on_failure))
    # WHEN the DLQ consumer, the orphan reaper and the capture sweeper run as their events arrive
    dlq = stack.invoke("IngestDLQConsumer", sqs_event(stack, "IngestDLQ"))
    reaper = stack.invoke("OrphanReaperFunction", {"source": "aws.scheduler"})
    sweeper = stack.invoke("CaptureSweeperFunction", {"source": "aws.scheduler"})
    # THEN each ran with its template environment: the window is retried (and skipped), nothing is stale
    assert dlq.result == {"batchItemFailures": []}
    assert reaper.result == {"reaped": 0, "failed": 0}
    assert sweeper.result["closedWindows"] == []
    given = {function: set(stack.environment(function)) for function in stack.reads}
    assert settings_missing_from_template(stack.reads, given) == {}
