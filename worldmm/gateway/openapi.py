"""The OpenAPI 3.1 document of the HTTP API, generated from the route table and its pydantic models.

`python -m worldmm.gateway.openapi > openapi.json` writes the committed copy; the gateway serves the same
document at `/openapi.json`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from worldmm.gateway.routes import ROUTES, ApiRoute

_ERROR = {"$ref": "#/components/schemas/Error"}


def _models() -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    """Request bodies as they are validated, responses as they are serialised."""
    seen: dict[tuple[str, str], tuple[type[BaseModel], JsonSchemaMode]] = {}
    for route in ROUTES:
        if route.body is not None:
            seen.setdefault((route.body.__name__, "validation"), (route.body, "validation"))
        seen.setdefault((route.response.__name__, "serialization"), (route.response, "serialization"))
    return [seen[key] for key in sorted(seen)]


def _response(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _operation(route: ApiRoute, refs: dict[str, str]) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": route.function.removesuffix("Function"),
        "summary": route.summary,
        "security": [{"bearerAuth": []}],
        "responses": {
            str(route.status): _response("OK", {"$ref": refs[route.response.__name__]}),
            "400": _response("Invalid request", _ERROR),
            "401": _response("Missing or invalid bearer token", _ERROR),
            "403": _response("Not the caller's", _ERROR),
        },
    }
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)}", route.path)
    ]
    if route.query is not None:
        schema = route.query.model_json_schema()
        required = set(schema.get("required", []))
        parameters += [
            {"name": name, "in": "query", "required": name in required, "schema": prop}
            for name, prop in schema["properties"].items()
        ]
    if parameters:
        op["parameters"] = parameters
    if route.body is not None:
        op["requestBody"] = {
            "required": False,
            "content": {"application/json": {"schema": {"$ref": refs[route.body.__name__]}}},
        }
    return op


def openapi_document() -> dict[str, Any]:
    """The document: one path item per route, component schemas from the models, bearer JWT security."""
    models = _models()
    keys, defs = models_json_schema(models, ref_template="#/components/schemas/{model}")
    refs = {model.__name__: keys[(model, mode)]["$ref"] for model, mode in models}
    schemas: dict[str, Any] = dict(sorted(defs.get("$defs", {}).items()))
    schemas["Error"] = {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
        "title": "Error",
    }
    paths: dict[str, dict[str, Any]] = {}
    for route in sorted(ROUTES, key=lambda r: (r.path, r.method)):
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, refs)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "WorldMM Live Memory",
            "version": "1",
            "description": "Capture sessions and questions over the caller's memories (bearer JWT; `sub` is the user).",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
        },
    }


def render() -> str:
    """The document as the committed `openapi.json` holds it."""
    return json.dumps(openapi_document(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":
    print(render(), end="")
