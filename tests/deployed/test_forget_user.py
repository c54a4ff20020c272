"""ForgetUserFunction (issue 14) cold-started with exactly its template environment: it reaches every store
it erases (the database through the secret, DynamoDB, S3) and reads no setting the template does not give."""

from __future__ import annotations

import uuid

import pytest

from tests.deployed.settings_contract import settings_missing_from_template
from tests.deployed.stack import DeployedStack

pytestmark = pytest.mark.integration


def test_forget_user_function_runs_on_its_template_environment(stack: DeployedStack) -> None:
    # GIVEN a user id nobody used
    user = f"forget-{uuid.uuid4()}"
    # WHEN an operator invokes the function as `sam remote invoke -e events/forget_user.json` would
    run = stack.invoke("ForgetUserFunction", {"userId": user, "requestedBy": "deployed-test"})
    # THEN it completes, and every setting it read is given by the template or right by default on AWS
    assert run.result["complete"] is True and user not in str(run.result)
    given = {"ForgetUserFunction": set(stack.environment("ForgetUserFunction"))}
    assert settings_missing_from_template({"ForgetUserFunction": stack.reads["ForgetUserFunction"]}, given) == {}
    # AND a malformed request is refused without touching anything
    assert stack.invoke("ForgetUserFunction", {"userId": ""}).result["statusCode"] == 400
