"""A DynamoDB write whose condition refuses it is told apart from one that fails."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from worldmm.aws import conditional_write


def _refusing(code: str) -> Any:
    def write(**request: Any) -> dict[str, Any]:
        raise ClientError({"Error": {"Code": code, "Message": "no"}}, "UpdateItem")

    return write


def test_a_write_whose_condition_holds_returns_its_response() -> None:
    assert conditional_write(lambda **r: {"Attributes": r}, Key="k") == {"Attributes": {"Key": "k"}}


def test_a_write_its_condition_refused_is_none() -> None:
    assert conditional_write(_refusing("ConditionalCheckFailedException"), Key="k") is None


def test_any_other_failure_is_raised() -> None:
    with pytest.raises(ClientError):
        conditional_write(_refusing("ProvisionedThroughputExceededException"), Key="k")
