"""The OpenAPI 3.1 document of the HTTP API, generated from the route table and its pydantic models.

`python -m worldmm.gateway.openapi` writes the committed copies (`openapi.json` and `docs/openapi.json`);
the gateway serves the same document, for its own settings, at `/openapi.json`. Every request schema is
the model's JSON schema in validation mode (what the handler parses with), every answer's the model's in
serialization mode (what it writes); the bounds the capture service checks against settings are stated
from those settings; each route lists every status it answers, and links say which answer's values the
next route takes (the capture flow, chat → messages).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from worldmm.errors import ErrorBody
from worldmm.events.models import SessionProcessed, WindowFailed, WindowProcessed
from worldmm.gateway.routes import ROUTES, ApiRoute
from worldmm.gateway.settings import GatewaySettings
from worldmm.gateway.sse import EVENTS_PATH
from worldmm.gateway.sse import MAX_WAIT_S as SSE_MAX_WAIT_S

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = (ROOT / "openapi.json", ROOT / "docs" / "openapi.json")

_ERROR = {"$ref": "#/components/schemas/ErrorBody"}
EVENT_MODELS = (WindowProcessed, WindowFailed, SessionProcessed)

# Statuses every route can answer: the JWT authorizer's 401 and `handlers.http.common.resolve`'s 500.
_EVERY_ROUTE = (401, 500)
_STATUS_TEXT = {
    400: "Invalid request: the body, the query or a cursor (a 400 from validation names the fields in `errors`)",
    401: "Missing or invalid bearer token (the JWT authorizer's answer; the handler never ran)",
    403: "No such session, chat or memory for the caller: another user's and a missing one read the same",
    404: "No such route: a path parameter that is empty or holds '/' (API Gateway's own answer)",
    409: "The session has ended (past the grace for buffered uploads) or is older than a day of windows: start "
    "a new session",
    429: "A per-user allowance is used up: capture sessions, windows or upload bytes a day (UTC; retry the next "
    "day), or the "
    "model calls questions may make (a token bucket per user: each question takes its worst case, the bucket "
    "refills each hour); the message says which; retry after `Retry-After` seconds",
    500: "Internal server error",
    503: "Memory cannot be reached right now: nothing was answered or saved; retry after `Retry-After` seconds",
}
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer", "minimum": 1}}}


def _models() -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    """Request bodies as they are validated, responses (and the error body) as they are serialised."""
    seen: dict[tuple[str, str], tuple[type[BaseModel], JsonSchemaMode]] = {}
    for route in ROUTES:
        if route.body is not None:
            seen.setdefault((route.body.__name__, "validation"), (route.body, "validation"))
        seen.setdefault((route.response.__name__, "serialization"), (route.response, "serialization"))
    seen[(ErrorBody.__name__, "serialization")] = (ErrorBody, "serialization")
    for event in EVENT_MODELS:
        seen[(event.__name__, "serialization")] = (event, "serialization")
    return [seen[key] for key in sorted(seen)]


LOCAL_ONLY = "x-worldmm-local-only"
"""Marks an operation only `worldmm serve` has (no API Gateway route in template.yaml)."""


def _events_path() -> dict[str, Any]:
    """`GET /events` (the local gateway's; on aws the same events go to the EventBridge bus)."""
    position = {"type": "string", "pattern": "^[0-9]{1,18}$"}
    return {
        "get": {
            "operationId": "Events",
            "summary": "The caller's app events as Server-Sent Events (local gateway; EventBridge on aws)",
            "description": (
                "Each message is `id: <seq>`, `event: <type>`, `data: <AppEvent JSON>`. The stream starts after "
                "`Last-Event-ID` (or `after`), else at the caller's newest event, and closes after `wait` "
                "seconds; reconnect with the last id to lose nothing. Only the caller's events; ids, indices "
                "and counts only. A duplicate (at least once) has the same `eventId`."
            ),
            "security": [{"bearerAuth": []}],
            LOCAL_ONLY: True,
            "parameters": [
                {"name": "after", "in": "query", "required": False, "schema": position,
                 "description": "Start after this event id (`seq`)"},
                {"name": "wait", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 0, "maximum": SSE_MAX_WAIT_S, "default": SSE_MAX_WAIT_S},
                 "description": "Seconds the stream stays open"},
                {"name": "Last-Event-ID", "in": "header", "required": False, "schema": position,
                 "description": "The last event id received (EventSource sends it when it reconnects)"},
            ],
            "responses": {
                "200": {
                    "description": "The stream: messages whose `data` is an AppEvent",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                },
                "400": _response("`after`, `wait` or `Last-Event-ID` is not a valid value", _ERROR),
                "401": _response(_STATUS_TEXT[401], _ERROR),
            },
        }
    }


def _app_event_schema(refs: dict[str, str]) -> dict[str, Any]:
    """The union the SSE `data` (and the EventBridge `detail`) holds, told apart by `type`."""
    mapping = {event.__name__: refs[event.__name__] for event in EVENT_MODELS}
    return {
        "oneOf": [{"$ref": ref} for ref in mapping.values()],
        "discriminator": {"propertyName": "type", "mapping": mapping},
        "description": "An app event: EventBridge `detail` (source `worldmm`, detail-type its `type`) and "
        "the `data` of a `GET /events` message.",
    }


def _response(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _links(route: ApiRoute) -> dict[str, Any]:
    return {
        link.name: {
            "operationId": link.target.removesuffix("Function"),
            "parameters": dict(link.parameters),
            "description": link.description,
        }
        for link in route.links
    }


def _responses(route: ApiRoute, refs: dict[str, str]) -> dict[str, Any]:
    ok = _response("OK" if route.status == 200 else "Created", {"$ref": refs[route.response.__name__]})
    if route.links:
        ok["links"] = _links(route)
    responses = {str(route.status): ok}
    for status in sorted({*route.errors, *_EVERY_ROUTE}):
        responses[str(status)] = _response(_STATUS_TEXT[status], _ERROR)
        if status in (429, 503):
            responses[str(status)]["headers"] = _RETRY_AFTER
    return responses


def _parameters(route: ApiRoute) -> list[dict[str, Any]]:
    patterns = dict(route.path_patterns)
    parameters: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", **({"pattern": patterns[name]} if name in patterns else {})},
        }
        for name in re.findall(r"{(\w+)}", route.path)
    ]
    if route.query is not None:
        schema = route.query.model_json_schema()
        required = set(schema.get("required", []))
        defs = schema.get("$defs", {})
        parameters += [
            {"name": name, "in": "query", "required": name in required, "schema": _query_value(prop, defs)}
            for name, prop in schema["properties"].items()
        ]
    return parameters


def _query_value(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A query parameter's schema, inline (a parameter cannot name the model's `$defs`); an optional
    field's `null` is the parameter being absent."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    if len(branches) != 1:
        return prop
    branch = branches[0]
    if "$ref" in branch:
        branch = {k: v for k, v in defs[branch["$ref"].rsplit("/", 1)[-1]].items() if k != "description"}
    rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default", "$ref")}
    return {**branch, **rest}


def _operation(route: ApiRoute, refs: dict[str, str]) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "security": [{"bearerAuth": []}],
    }
    if parameters := _parameters(route):
        op["parameters"] = parameters
    if route.body is not None:
        op["requestBody"] = {
            "required": route.body_required,
            "content": {"application/json": {"schema": {"$ref": refs[route.body.__name__]}}},
        }
    op["responses"] = _responses(route, refs)
    return op


def _capture_bounds(schemas: dict[str, Any], settings: GatewaySettings) -> None:
    """The window and frame bounds the capture service checks against `settings`, stated in the schemas."""
    frames = schemas["PresignFramesRequest"]["properties"]
    frames["windowIndex"]["maximum"] = settings.capture_max_window_index
    frames["count"]["maximum"] = settings.capture_expected_frames
    frames["start"]["maximum"] = settings.capture_expected_frames - 1
    schemas["PresignFramesRequest"]["description"] += (
        f" A window holds frames 0..{settings.capture_expected_frames - 1}: start + count past that is a 400."
    )
    schemas["PresignAudioRequest"]["properties"]["windowIndex"]["maximum"] = settings.capture_max_window_index


def openapi_document(settings: GatewaySettings | None = None) -> dict[str, Any]:
    """The document for `settings` (the settings' defaults when None): paths, schemas, bearer JWT security."""
    settings = settings or GatewaySettings.defaults()
    models = _models()
    keys, defs = models_json_schema(models, ref_template="#/components/schemas/{model}")
    refs = {model.__name__: keys[(model, mode)]["$ref"] for model, mode in models}
    schemas: dict[str, Any] = dict(sorted(defs.get("$defs", {}).items()))
    _capture_bounds(schemas, settings)
    paths: dict[str, dict[str, Any]] = {}
    for route in sorted(ROUTES, key=lambda r: (r.path, r.method)):
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, refs)
    paths[EVENTS_PATH] = _events_path()
    schemas["AppEvent"] = _app_event_schema(refs)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "WorldMM Live Memory",
            "version": "1",
            "description": (
                "Capture sessions and questions over the caller's memories (bearer JWT; `sub` is the user). "
                "Cursors are opaque: pass back the `next_cursor` the server gave for the same listing. "
                "A method a path does not declare is a 404, as API Gateway answers it."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
        },
    }


def render(settings: GatewaySettings | None = None) -> str:
    """The document as the committed `openapi.json` (and `docs/openapi.json`) holds it."""
    return json.dumps(openapi_document(settings), indent=2, sort_keys=False) + "\n"


def write(paths: tuple[Path, ...] = COMMITTED) -> list[Path]:
    """Write the document (for the settings' defaults) to `paths`; returns those that changed."""
    text = render()
    changed = []
    for path in paths:
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    """`python -m worldmm.gateway.openapi [--check]`: write the committed copies, or fail if they drifted."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed copy differs")
    args = parser.parse_args(argv)
    if args.check:
        stale = [str(p) for p in COMMITTED if not p.exists() or p.read_text() != render()]
        if stale:
            print("stale: " + ", ".join(stale) + " (regenerate: python -m worldmm.gateway.openapi)")
        return 1 if stale else 0
    for path in write():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
