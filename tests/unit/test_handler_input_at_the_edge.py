"""Every handler's event and body parsing, and the pipeline's events, at the edge.

Each handler runs with a tripwire in place of the services: touching it (a read, a write, a model call)
fails. A rejected input must be a 4xx JSON `{"message": ...}` (or the pipeline's `skipped`/400) that never
reached it, and no input may raise out of a handler. Property tests (hypothesis) drive every handler with
arbitrary events and bodies.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.support.capture import http_event, lambda_context
from worldmm.chat.models import MAX_QUESTION_CHARS
from worldmm.ingest.events import (
    MAX_RETRIGGER_WINDOWS,
    MAX_WINDOW_INDEX,
    IngestWindowEvent,
    RetriggerEvent,
)
from worldmm.services import set_services

pytestmark = pytest.mark.unit

SUB = "user-a"


class Tripwire:
    """Stands in for Services: any attribute read is recorded and fails the call."""

    def __init__(self) -> None:
        self.touched: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith(("_", "hypothesis")) or name.endswith("_example"):  # hypothesis introspection
            raise AttributeError(name)
        self.touched.append(name)
        raise AssertionError(f"the services were reached ({name})")


@pytest.fixture
def tripwire() -> Iterator[Tripwire]:
    wire = Tripwire()
    set_services(wire)  # type: ignore[arg-type]
    yield wire
    set_services(None)


def _handlers() -> dict[str, tuple[Callable[..., dict[str, Any]], str, str]]:
    from handlers.http.capture.end.app import lambda_handler as end
    from handlers.http.capture.start.app import lambda_handler as start
    from handlers.http.capture.uploads.app import lambda_handler as audio
    from handlers.http.capture.uploads.app import lambda_handler as frames
    from handlers.http.chats.list.app import lambda_handler as chats_list
    from handlers.http.chats.messages.app import lambda_handler as messages
    from handlers.http.memories.chat.app import lambda_handler as chat
    from handlers.http.memories.chat.app import lambda_handler as chat_verbose

    return {
        "chat": (chat, "POST", "/memories/chat"),
        "chat_verbose": (chat_verbose, "POST", "/memories/chat/verbose"),
        "chats_list": (chats_list, "POST", "/chats/list"),
        "messages": (messages, "GET", "/chats/messages"),
        "start": (start, "POST", "/sessions"),
        "frames": (frames, "POST", "/sessions/S1/frames"),
        "audio": (audio, "POST", "/sessions/S1/audio"),
        "end": (end, "POST", "/sessions/S1/end"),
    }


HANDLERS = _handlers()
BODY_HANDLERS = ("chat", "chat_verbose", "chats_list", "frames", "audio")


def _message(response: dict[str, Any]) -> str:
    body = json.loads(response["body"])
    assert isinstance(body["message"], str) and body["message"], body
    return str(body["message"])


def _rejected(response: dict[str, Any], wire: Tripwire) -> str:
    """Assert a 4xx JSON rejection that reached no service; return its message."""
    assert 400 <= response["statusCode"] < 500, response
    assert wire.touched == []
    return _message(response)


# --- no exception escapes ------------------------------------------------------------------


@pytest.mark.parametrize("name", BODY_HANDLERS)
def test_body_flagged_base64_that_is_not_base64_is_a_400(name: str, tripwire: Tripwire) -> None:
    # GIVEN a request whose body is flagged base64 but is not base64
    handler, method, path = HANDLERS[name]
    event = http_event(method, path, sub=SUB, body="%%% not base64 %%%")
    event["isBase64Encoded"] = True
    # WHEN handled THEN a 400 with a JSON message, before any service is reached
    assert "base64" in _rejected(handler(event, lambda_context()), tripwire)


@pytest.mark.parametrize("name", BODY_HANDLERS)
def test_body_flagged_base64_that_is_not_utf8_is_a_400(name: str, tripwire: Tripwire) -> None:
    handler, method, path = HANDLERS[name]
    event = http_event(method, path, sub=SUB, body=base64.b64encode(b"\xff\xfe\xfa{").decode())
    event["isBase64Encoded"] = True
    assert "UTF-8" in _rejected(handler(event, lambda_context()), tripwire)


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_event_without_request_context_is_a_400(name: str, tripwire: Tripwire) -> None:
    handler, method, path = HANDLERS[name]
    event = http_event(method, path, sub=SUB, body={})
    del event["requestContext"]
    assert "requestContext" in _rejected(handler(event, lambda_context()), tripwire)


@pytest.mark.parametrize("garbage", [None, [], "GET /", 7, {"requestContext": "x"}, {"requestContext": {"http": 1}}])
def test_an_event_that_is_not_an_http_event_is_a_400(garbage: Any, tripwire: Tripwire) -> None:
    handler, _, _ = HANDLERS["chat"]
    _rejected(handler(garbage, lambda_context()), tripwire)


# --- a question limit ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["chat", "chat_verbose"])
def test_a_question_over_the_limit_is_a_400_before_any_search(name: str, tripwire: Tripwire) -> None:
    # GIVEN a 1 MB question
    handler, method, path = HANDLERS[name]
    event = http_event(method, path, sub=SUB, body={"question": "where " * 200_000})
    # WHEN asked THEN 400: no retrieval, no model call, no chat created
    _rejected(handler(event, lambda_context()), tripwire)


def test_a_question_at_the_limit_reaches_the_library(tripwire: Tripwire) -> None:
    handler, method, path = HANDLERS["chat"]
    event = http_event(method, path, sub=SUB, body={"question": "x" * MAX_QUESTION_CHARS})
    handler(event, lambda_context())
    assert tripwire.touched  # accepted: it went on to the services


@pytest.mark.parametrize(
    "body",
    [
        {"question": "where are my keys\x00"},
        {"question": "ok", "chat_id": "../other"},
        {"question": "ok", "chat_id": "a\x00b"},
        {"question": "ok", "chat_id": "x" * 300},
        {"question": 7},
        [],
        "plain text",
    ],
)
def test_chat_bodies_that_can_never_be_stored_are_a_400(body: Any, tripwire: Tripwire) -> None:
    handler, method, path = HANDLERS["chat"]
    event = http_event(method, path, sub=SUB, body=body)
    _rejected(handler(event, lambda_context()), tripwire)


# --- property tests: every handler, arbitrary events and bodies -----------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
_fields = st.fixed_dictionaries(
    {},
    optional={
        "question": st.one_of(st.text(max_size=40), _json),
        "chat_id": st.one_of(st.text(max_size=80), _json),
        "cursor": st.one_of(st.text(max_size=80), _json),
        "limit": st.one_of(st.integers(min_value=-(10**40), max_value=10**40), _json),
        "windowIndex": st.one_of(st.integers(min_value=-(10**40), max_value=10**40), _json),
        "count": st.one_of(st.integers(min_value=-(10**12), max_value=10**12), _json),
        "start": st.one_of(st.integers(), _json),
        "contentType": st.one_of(st.text(max_size=20), _json),
    },
)
_body = st.one_of(
    st.none(),
    st.text(max_size=60),
    _fields.map(json.dumps),
    _json.map(json.dumps),
    st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()),
)


@st.composite
def _events(draw: st.DrawFn, name: str) -> Any:
    _, method, path = HANDLERS[name]
    event = http_event(method, path, sub=draw(st.sampled_from([SUB, None, ""])), body=None)
    event["body"] = draw(_body)
    event["isBase64Encoded"] = draw(st.booleans())
    if name == "messages":
        keys = st.sampled_from(["chat_id", "cursor", "limit"])
        event["queryStringParameters"] = draw(st.dictionaries(keys, st.text(max_size=40)))
    mutation = draw(st.sampled_from(["none", "none", "drop", "garble", "replace"]))
    if mutation == "drop":
        del event[draw(st.sampled_from(sorted(event)))]
    elif mutation == "garble":
        event[draw(st.sampled_from(sorted(event)))] = draw(_json)
    elif mutation == "replace":
        return draw(_json)
    return event


@pytest.mark.parametrize("name", sorted(HANDLERS))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property_every_handler_answers_2xx_or_a_4xx_message_and_rejects_before_any_service(
    name: str, tripwire: Tripwire, data: st.DataObject
) -> None:
    handler, _, _ = HANDLERS[name]
    tripwire.touched.clear()
    event = data.draw(_events(name))
    # WHEN any event is handled THEN no exception escapes and the answer is an HTTP response
    response = handler(event, lambda_context())
    status = response["statusCode"]
    if tripwire.touched:
        # only a well-formed request reaches the services (here: the tripwire, hence its 500)
        assert status == 500 and _message(response) == "Internal server error"
    else:
        assert 400 <= status < 500 and _message(response)


# --- pipeline events ----------------------------------------------------------------------

VALID_WINDOW = {"sessionId": "01JB0SESSION", "userId": SUB, "windowIndex": 3, "frameCount": 16}


@pytest.mark.parametrize(
    "change",
    [
        {"windowIndex": 2**31},
        {"windowIndex": 10**40},
        {"windowIndex": MAX_WINDOW_INDEX + 1},
        {"windowIndex": -1},
        {"frameCount": 10**40},
        {"sessionId": "../x"},
        {"sessionId": "a/b"},
        {"sessionId": "s\x00"},
        {"sessionId": ".."},
        {"userId": "u\x00"},
        {"userId": "a b"},
        {"userId": ""},
    ],
)
def test_out_of_range_window_events_are_rejected_without_reaching_the_pipeline(
    change: dict[str, Any], tripwire: Tripwire
) -> None:
    from handlers.events.ingest_window import lambda_handler

    with pytest.raises(ValidationError):
        IngestWindowEvent.model_validate({**VALID_WINDOW, **change})
    # WHEN the ingest function receives it THEN it is skipped (not raised: no DLQ, no 14 days of retries)
    assert lambda_handler({**VALID_WINDOW, **change}, lambda_context()) == {
        "status": "skipped",
        "reason": "invalid_event",
    }
    assert tripwire.touched == []


@pytest.mark.parametrize(
    "change",
    [
        {"windowIndices": list(range(MAX_RETRIGGER_WINDOWS + 1))},
        {"windowIndices": [2**31]},
        {"sessionId": "../x"},
        {"userId": "u\x00"},
    ],
)
def test_retrigger_events_that_would_fan_out_unbounded_are_a_400(
    change: dict[str, Any], tripwire: Tripwire
) -> None:
    from handlers.events.retrigger_ingest import lambda_handler

    event = {"sessionId": "01JB0SESSION", "userId": SUB, **change}
    with pytest.raises(ValidationError):
        RetriggerEvent.model_validate(event)
    response = lambda_handler(event, lambda_context())
    assert response["statusCode"] == 400 and json.loads(response["body"])["fields"]
    assert tripwire.touched == []


def _sqs_record(body: str) -> Any:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    return SQSRecord(
        {
            "messageId": "m-1",
            "receiptHandle": "r",
            "body": body,
            "attributes": {"ApproximateReceiveCount": "3"},
            "messageAttributes": {},
            "eventSource": "aws:sqs",
        }
    )


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"requestPayload": {**VALID_WINDOW, "windowIndex": 10**40}}),
        json.dumps({**VALID_WINDOW, "sessionId": "a/b"}),
        json.dumps([1, 2]),
    ],
)
def test_dlq_message_that_can_never_succeed_is_consumed_not_retried(body: str, tripwire: Tripwire) -> None:
    from worldmm.ingest.dlq import handle_dlq_record

    # WHEN the DLQ consumer gets it THEN it returns (the message is deleted) instead of raising forever
    assert handle_dlq_record(tripwire, _sqs_record(body)) == {"status": "skipped", "reason": "invalid_event"}  # type: ignore[arg-type]
    assert tripwire.touched == []


_window_values = st.fixed_dictionaries(
    {},
    optional={
        "sessionId": st.one_of(st.text(max_size=70), _json),
        "userId": st.one_of(st.text(max_size=70), _json),
        "windowIndex": st.one_of(st.integers(min_value=-(10**40), max_value=10**40), _json),
        "frameCount": st.one_of(st.integers(min_value=-(10**40), max_value=10**40), _json),
        "windowIndices": st.one_of(st.lists(st.integers(min_value=-(2**40), max_value=2**40), max_size=5), _json),
        "force": _json,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=st.one_of(_window_values, _json))
def test_property_pipeline_handlers_never_raise_on_any_event(event: Any, tripwire: Tripwire) -> None:
    from handlers.events.ingest_window import lambda_handler as ingest
    from handlers.events.retrigger_ingest import lambda_handler as retrigger
    from worldmm.ingest.dlq import handle_dlq_record

    tripwire.touched.clear()
    valid_window = _parses(IngestWindowEvent, event)
    valid_retrigger = _parses(RetriggerEvent, event)
    for handler, valid, rejected in (
        (ingest, valid_window, lambda r: r == {"status": "skipped", "reason": "invalid_event"}),
        (retrigger, valid_retrigger, lambda r: r["statusCode"] == 400),
        (
            lambda e, _c: handle_dlq_record(tripwire, _sqs_record(json.dumps(e))),  # type: ignore[arg-type]
            valid_window,
            lambda r: r == {"status": "skipped", "reason": "invalid_event"},
        ),
    ):
        tripwire.touched.clear()
        try:
            result = handler(event, lambda_context())
        except AssertionError:
            assert valid and tripwire.touched  # a valid event goes on (to the tripwire)
            continue
        assert not valid and rejected(result) and tripwire.touched == []


def _parses(model: Any, event: Any) -> bool:
    try:
        model.model_validate(event)
    except ValidationError:
        return False
    return True
