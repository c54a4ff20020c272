"""Types of values as they arrive in a JSON request body, read as the OpenAPI document states them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator


def _json_integer(value: Any) -> Any:
    # JSON Schema's integer is a number with no fractional part (6 and 6.0 alike); never true or "6".
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a JSON integer")
    return value


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
"""An integer field of a JSON body: 6 or 6.0, not `true`, "6" or 6.5 (a 400 names the field)."""

MAX_JSON_INT = 2**31 - 1
"""The largest count or index a request may name (larger is a 400, as the document's `maximum` says)."""
