"""template.yaml: a failed forget-me is retried, kept and alarmed; logs expire."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.template import load_template

pytestmark = pytest.mark.unit


def _resources() -> dict[str, Any]:
    resources: dict[str, Any] = load_template()["Resources"]
    return resources


def _alarms_on_queue(queue: str) -> list[str]:
    return [
        name
        for name, r in _resources().items()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and any(d.get("Value") == {"Fn::GetAtt": [queue, "QueueName"]} for d in r["Properties"]["Dimensions"])
    ]


def test_security_a_failed_forget_is_retried_then_kept_in_a_queue_with_an_alarm() -> None:
    config = _resources()["ForgetUserFunction"]["Properties"]["EventInvokeConfig"]
    assert config["MaximumRetryAttempts"] >= 1  # forget-me is idempotent: a retry finishes the job
    destination = config["DestinationConfig"]["OnFailure"]
    assert destination["Type"] == "SQS"
    [queue, _] = destination["Destination"]["Fn::GetAtt"]
    assert _resources()[queue]["Type"] == "AWS::SQS::Queue"
    assert _alarms_on_queue(queue), "nobody hears of a failed erase"
    errors = [
        r
        for r in _resources().values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and r["Properties"].get("MetricName") == "Errors"
        and {"Name": "FunctionName", "Value": {"Ref": "ForgetUserFunction"}} in r["Properties"]["Dimensions"]
    ]
    assert errors


def test_security_every_function_logs_into_a_group_that_expires() -> None:
    template = load_template()
    logging = template["Globals"]["Function"]["LoggingConfig"]
    group = _resources()[logging["LogGroup"]["Ref"]]
    assert group["Type"] == "AWS::Logs::LogGroup" and group["Properties"]["RetentionInDays"]
    functions = {n: r["Properties"] for n, r in _resources().items() if r["Type"] == "AWS::Serverless::Function"}
    assert functions and all("LoggingConfig" not in props for props in functions.values())  # none opts out
    others = [r for r in _resources().values() if r["Type"] == "AWS::Logs::LogGroup"]
    assert all(r["Properties"].get("RetentionInDays") for r in others)


def _statements(function: str) -> list[dict[str, Any]]:
    found = []
    for policy in _resources()[function]["Properties"].get("Policies", []):
        if isinstance(policy, dict):
            found.extend(policy.get("Statement", []))
    return found


def _allows(function: str, action: str, table: str) -> list[dict[str, Any]]:
    return [
        s
        for s in _statements(function)
        if action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        and s["Resource"] == {"Fn::GetAtt": [table, "Arn"]}
    ]


def test_security_capture_functions_may_count_quotas_and_the_counters_expire() -> None:
    """The quota writes the capture functions make are allowed (the start function only on
    `quota#` items), and a day's counters carry the sessions table's TTL attribute."""
    [start] = _allows("CaptureStartFunction", "dynamodb:UpdateItem", "SessionsTable")
    assert start["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["quota#*"]
    for function in ("CaptureFramesFunction", "CaptureAudioFunction"):
        assert _allows(function, "dynamodb:UpdateItem", "SessionsTable"), function
    assert _allows("CaptureUploadsFunction", "dynamodb:UpdateItem", "CaptureWindowsTable")  # re-run counter
    ttl = _resources()["SessionsTable"]["Properties"]["TimeToLiveSpecification"]
    assert ttl == {"AttributeName": "expiresAt", "Enabled": True}
