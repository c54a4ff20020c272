"""What every API handler shares: the resolver with one error mapping, the caller's identity, parsing.

Handlers are API Gateway HTTP API (payload v2) functions behind a JWT authorizer; the caller is the
token's `sub` claim and nothing else. Typed library errors become status codes here, in one place.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from pydantic import BaseModel, ValidationError

from worldmm.errors import WorldMMError

M = TypeVar("M", bound=BaseModel)

logger = Logger(service="worldmm-api", child=True)

# Fixed bodies: a 403 must read the same whether the chat is someone else's or does not exist.
_FIXED_MESSAGES = {401: "Unauthorized", 403: "Forbidden", 500: "Internal server error"}


def error_response(status_code: int, message: str, **extra: Any) -> Response:
    """A JSON error body `{"message": ...}` as API Gateway writes its own."""
    return Response(
        status_code=status_code,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps({"message": message, **extra}),
    )


def make_app() -> APIGatewayHttpResolver:
    """A resolver whose exception handlers map typed errors and invalid input to status codes."""
    app = APIGatewayHttpResolver()

    @app.exception_handler(WorldMMError)
    def _typed_error(exc: WorldMMError) -> Response:
        status = exc.status_code
        if status >= 500:
            logger.exception("request failed", extra={"error": type(exc).__name__})
        message = _FIXED_MESSAGES.get(status) or (str(exc) if status < 500 else "Service unavailable")
        return error_response(status, message)

    @app.exception_handler(ValidationError)
    def _invalid_input(exc: ValidationError) -> Response:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        return error_response(400, "Invalid request", errors=json.loads(json.dumps(errors, default=str)))

    return app


def current_user(app: APIGatewayHttpResolver) -> str:
    """The caller's user id: the `sub` claim the JWT authorizer verified; Unauthenticated without one."""
    from worldmm.errors import Unauthenticated

    context = app.current_event.raw_event.get("requestContext") or {}
    claims = ((context.get("authorizer") or {}).get("jwt") or {}).get("claims") or {}
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise Unauthenticated("missing identity")
    return sub


def parse_body(app: APIGatewayHttpResolver, model: type[M]) -> M:
    """The JSON body as `model` (an absent body is `{}`); invalid JSON or fields are a 400."""
    return model.model_validate_json(app.current_event.decoded_body or "{}")


def parse_query(app: APIGatewayHttpResolver, model: type[M]) -> M:
    """The query string parameters as `model`."""
    return model.model_validate(app.current_event.query_string_parameters or {})
