"""What every API handler shares: the resolver with one error mapping, the caller's identity, parsing.

Handlers are API Gateway HTTP API (payload v2) functions behind a JWT authorizer; the caller is the
token's `sub` claim and nothing else. Typed library errors become status codes here, in one place.

Every input is untrusted: an event that is not an HTTP API v2 event, a body flagged base64 that is not
base64-encoded UTF-8, invalid JSON or fields are a 400 with a JSON `{"message": ...}`, before anything is
read, written or asked of a model. No exception leaves a handler: what is not a typed error is logged and
answered 500 with the same JSON shape (`resolve`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from pydantic import BaseModel, ValidationError

from worldmm.errors import ErrorBody, FieldError, WorldMMError
from worldmm.observability import instrument
from worldmm.snapstart import register_runtime_hooks

M = TypeVar("M", bound=BaseModel)

logger = Logger(child=True)
register_runtime_hooks()  # SnapStart: no connection in the snapshot, fresh randomness after a restore

# Fixed bodies: a 403 must read the same whether the chat is someone else's or does not exist.
_FIXED_MESSAGES = {401: "Unauthorized", 403: "Forbidden", 500: "Internal server error"}


def error_response(status_code: int, message: str, errors: list[FieldError] | None = None) -> Response:
    """A JSON error body `{"message": ...}` as API Gateway writes its own (the document's `ErrorBody`)."""
    return Response(
        status_code=status_code,
        content_type=content_types.APPLICATION_JSON,
        body=ErrorBody(message=message, errors=errors).model_dump_json(exclude_none=True),
    )


def make_app() -> APIGatewayHttpResolver:
    """A resolver whose exception handlers map typed errors and invalid input to status codes."""
    app = APIGatewayHttpResolver()

    @app.exception_handler(WorldMMError)
    def _typed_error(exc: WorldMMError) -> Response:
        status = exc.status_code
        if status >= 500:
            logger.exception("request failed", extra={"error": type(exc).__name__})
        if status in _FIXED_MESSAGES:
            message = _FIXED_MESSAGES[status]
        elif status < 500 or getattr(exc, "expose", False):  # a 5xx is shown only when written for the caller
            message = str(exc)
        else:
            message = "Service unavailable"
        response = error_response(status, message)
        retry_after = getattr(exc, "retry_after_s", None)
        if retry_after:
            response.headers["Retry-After"] = str(retry_after)
        return response

    @app.exception_handler(ValidationError)
    def _invalid_input(exc: ValidationError) -> Response:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        fields = [FieldError(type=e["type"], loc=list(e["loc"]), msg=e["msg"]) for e in errors]
        return error_response(400, "Invalid request", fields)

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


def request_body(app: APIGatewayHttpResolver) -> str:
    """The body as text: base64-decoded when flagged so; BadRequest when that is not base64 UTF-8."""
    from worldmm.errors import BadRequest

    event = app.current_event
    body = event.body
    if not body:
        return ""
    if not event.is_base64_encoded:
        return body
    try:
        return base64.b64decode(body, validate=True).decode("utf-8")
    except (binascii.Error, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise BadRequest("the body is flagged base64 but is not base64-encoded UTF-8") from exc


def parse_body(app: APIGatewayHttpResolver, model: type[M]) -> M:
    """The JSON body as `model` (an absent body is `{}`); undecodable bodies, invalid JSON or fields are a 400."""
    return model.model_validate_json(request_body(app) or "{}")


def parse_query(app: APIGatewayHttpResolver, model: type[M]) -> M:
    """The query string parameters as `model`."""
    return model.model_validate(app.current_event.query_string_parameters or {})


def _plain_response(status_code: int, message: str) -> dict[str, Any]:
    """An HTTP API v2 response dict, for answers given before or outside the resolver."""
    return {
        "statusCode": status_code,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": ErrorBody(message=message).model_dump_json(exclude_none=True),
        "isBase64Encoded": False,
    }


def _event_problem(event: Any) -> str | None:
    """What makes `event` not an HTTP API v2 event the resolver can route, or None."""
    if not isinstance(event, Mapping):
        return "the event is not an object"
    context = event.get("requestContext")
    http = context.get("http") if isinstance(context, Mapping) else None
    if not isinstance(http, Mapping):
        return "the event has no requestContext.http"
    if not isinstance(http.get("method"), str) or not isinstance(http.get("path"), str):
        return "the event has no method or path"
    if not isinstance(event.get("rawPath"), str):
        return "the event has no rawPath"
    if event.get("body") is not None and not isinstance(event.get("body"), str):
        return "the body is not a string"
    if not isinstance(event.get("isBase64Encoded", False), bool):
        return "isBase64Encoded is not a boolean"
    for name in ("headers", "queryStringParameters", "pathParameters"):
        value = event.get(name)
        if value is not None and not (
            isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        ):
            return f"{name} is not a map of strings"
    cookies = event.get("cookies")
    if cookies is not None and not (isinstance(cookies, list) and all(isinstance(c, str) for c in cookies)):
        return "cookies is not a list of strings"
    return None


def resolve(app: APIGatewayHttpResolver, event: Any, context: Any) -> dict[str, Any]:
    """`app.resolve` that never raises: a malformed event is a 400, an unexpected error a logged 500."""
    problem = _event_problem(event)
    if problem is not None:
        logger.warning("rejected event", extra={"step": "api.invalid_event", "reason": problem})
        return _plain_response(400, f"Invalid request: {problem}")
    try:
        return app.resolve(event, context)
    except Exception:
        logger.exception("unhandled error", extra={"step": "api.unhandled_error"})
        return _plain_response(500, _FIXED_MESSAGES[500])


LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def entry_point(app: APIGatewayHttpResolver, function_logger: Logger) -> LambdaHandler:
    """A function's `lambda_handler` serving `app`: its context in `function_logger`'s lines (the handler module's
    own `Logger()`), instrumented, every event resolved (`resolve`)."""

    @function_logger.inject_lambda_context
    @instrument
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return resolve(app, event, context)

    return lambda_handler
