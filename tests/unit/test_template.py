"""template.yaml wiring (spec 000 Deployment, spec 004 Infrastructure) and cold imports of every handler."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.support.template import load_template
from worldmm.chat.settings import ChatSettings
from worldmm.config import SECRET_SOURCES, Settings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
HEAVY_MODULES = ("torch", "transformers", "llama_cpp", "sentence_transformers", "faster_whisper", "igraph")


@cache
def template() -> dict[str, Any]:
    return load_template()


def resources(kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template()["Resources"].items() if r["Type"] == kind}


def functions() -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in resources("AWS::Serverless::Function").items()}


def fn(name: str) -> dict[str, Any]:
    return functions()[name]


def statements(props: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for policy in props.get("Policies", []):
        if isinstance(policy, dict) and "Statement" in policy:
            found.extend(policy["Statement"])
    return found


def env(name: str) -> dict[str, Any]:
    merged = dict(template()["Globals"]["Function"]["Environment"]["Variables"])
    merged.update(fn(name).get("Environment", {}).get("Variables", {}))
    return merged


# --- spec 000 wiring ---------------------------------------------------------------------------


def test_template_ingest_window_failures_go_to_ingest_dlq() -> None:
    config = fn("IngestWindowFunction")["EventInvokeConfig"]
    assert config["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": ["IngestDLQ", "Arn"]},
    }
    assert fn("IngestWindowFunction")["Handler"] == "handlers.events.ingest_window.lambda_handler"


def test_template_ingest_window_has_no_lambda_managed_retries() -> None:
    assert fn("IngestWindowFunction")["EventInvokeConfig"]["MaximumRetryAttempts"] == 0


def test_template_ingest_dlq_keeps_messages_14_days_and_outlasts_the_consumer_timeout() -> None:
    queue = template()["Resources"]["IngestDLQ"]["Properties"]
    assert queue["MessageRetentionPeriod"] == 1209600
    assert queue["VisibilityTimeout"] >= fn("IngestDLQConsumer")["Timeout"]
    assert queue["VisibilityTimeout"] >= Settings().dlq_visibility_extension_s


def test_template_dlq_consumer_takes_one_record_and_reports_partial_failures() -> None:
    consumer = fn("IngestDLQConsumer")
    (event,) = consumer["Events"].values()
    assert consumer["Handler"] == "handlers.events.ingest_window.sqs_handler"
    assert event["Type"] == "SQS"
    assert event["Properties"]["Queue"] == {"Fn::GetAtt": ["IngestDLQ", "Arn"]}
    assert event["Properties"]["BatchSize"] == 1
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert "INGEST_DLQ_URL" in env("IngestDLQConsumer")


def test_template_dlq_depth_alarm_watches_ingest_dlq() -> None:
    alarms = resources("AWS::CloudWatch::Alarm").values()
    watched = [
        a["Properties"]
        for a in alarms
        if a["Properties"]["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["IngestDLQ", "QueueName"]}
    ]
    assert watched and watched[0]["MetricName"] == "ApproximateNumberOfMessagesVisible"


def test_template_retrigger_and_reaper_exist_with_their_handlers() -> None:
    assert fn("RetriggerIngestFunction")["Handler"] == "handlers.events.retrigger_ingest.lambda_handler"
    reaper = fn("OrphanReaperFunction")
    assert reaper["Handler"] == "handlers.events.reaper.lambda_handler"
    assert [e["Type"] for e in reaper["Events"].values()] == ["ScheduleV2"]


def test_template_function_names_match_the_invoked_names() -> None:
    # Capture and retrigger invoke INGEST_FUNCTION_NAME / RETRIGGER_FUNCTION_NAME: those must be the names.
    glob = template()["Globals"]["Function"]["Environment"]["Variables"]
    assert fn("IngestWindowFunction")["FunctionName"] == glob["INGEST_FUNCTION_NAME"]
    assert fn("RetriggerIngestFunction")["FunctionName"] == glob["RETRIGGER_FUNCTION_NAME"]


# --- API, capture, tables ------------------------------------------------------------------------


def http_routes() -> dict[tuple[str, str], str]:
    routes: dict[tuple[str, str], str] = {}
    for props in functions().values():
        for event in props.get("Events", {}).values():
            if event["Type"] == "HttpApi":
                assert event["Properties"]["ApiId"] == {"Ref": "HttpApi"}
                routes[(event["Properties"]["Method"], event["Properties"]["Path"])] = props["Handler"]
    return routes


def test_template_routes_every_chat_and_capture_endpoint_to_its_handler() -> None:
    assert http_routes() == {
        ("POST", "/memories/chat"): "handlers.http.memories.chat.app.lambda_handler",
        ("POST", "/memories/chat/verbose"): "handlers.http.memories.chat.app.lambda_handler",
        ("POST", "/chats/list"): "handlers.http.chats.list.app.lambda_handler",
        ("GET", "/chats/messages"): "handlers.http.chats.messages.app.lambda_handler",
        ("POST", "/sessions"): "handlers.http.capture.start.app.lambda_handler",
        ("POST", "/sessions/{id}/frames"): "handlers.http.capture.uploads.app.lambda_handler",
        ("POST", "/sessions/{id}/audio"): "handlers.http.capture.uploads.app.lambda_handler",
        ("POST", "/sessions/{id}/end"): "handlers.http.capture.end.app.lambda_handler",
        ("POST", "/mcp"): "handlers.http.mcp.app.lambda_handler",
        ("GET", "/memories"): "handlers.http.memories.list.app.lambda_handler",
        ("GET", "/memories/{id}"): "handlers.http.memories.get.app.lambda_handler",
        ("GET", "/sessions/{id}"): "handlers.http.sessions.status.app.lambda_handler",
        ("DELETE", "/memories"): "handlers.http.memories.forget.app.lambda_handler",
        ("DELETE", "/sessions/{id}"): "handlers.http.sessions.forget.app.lambda_handler",
        ("PATCH", "/entities/{id}"): "handlers.http.entities.correct.app.lambda_handler",
    }


def test_template_http_api_requires_a_jwt_from_the_configured_issuer() -> None:
    auth = template()["Resources"]["HttpApi"]["Properties"]["Auth"]
    authorizer = auth["Authorizers"][auth["DefaultAuthorizer"]]
    assert authorizer["JwtConfiguration"] == {
        "issuer": {"Ref": "JwtIssuer"},
        "audience": {"Ref": "JwtAudience"},
    }
    assert authorizer["IdentitySource"] == "$request.header.Authorization"


def test_template_upload_notifications_reach_the_capture_recorder() -> None:
    bucket = template()["Resources"]["FramesBucket"]["Properties"]
    (notification,) = bucket["NotificationConfiguration"]["QueueConfigurations"]
    assert notification["Queue"] == {"Fn::GetAtt": ["UploadEventsQueue", "Arn"]}
    uploads = fn("CaptureUploadsFunction")
    (event,) = uploads["Events"].values()
    assert event["Properties"]["Queue"] == {"Fn::GetAtt": ["UploadEventsQueue", "Arn"]}
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert fn("CaptureSweeperFunction")["Handler"] == "handlers.events.capture_sweeper.lambda_handler"


def _table(logical_id: str) -> dict[str, Any]:
    props = dict(template()["Resources"][logical_id]["Properties"])
    return {
        key: props[key]
        for key in ("BillingMode", "AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes")
        if key in props
    }


def _definition(definition: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in definition.items() if k != "TableName"}


def test_template_tables_match_the_library_table_definitions() -> None:
    from worldmm.capture.dynamo import capture_table_definitions
    from worldmm.chat.dynamo import dynamo_table_definitions

    settings = Settings()
    chats, messages = dynamo_table_definitions(ChatSettings.of(settings))
    sessions, windows = capture_table_definitions(settings.sessions_table, settings.capture_windows_table)
    assert _table("ChatsTable") == _definition(chats)
    assert _table("MessagesTable") == _definition(messages)
    assert _table("SessionsTable") == _definition(sessions)
    assert _table("CaptureWindowsTable") == _definition(windows)
    from worldmm.allowance.dynamo import allowances_table_definition

    assert _table("AllowancesTable") == _definition(allowances_table_definition(settings.allowances_table))


def test_template_bucket_is_encrypted_private_and_never_expires_raw_sessions() -> None:
    bucket = template()["Resources"]["FramesBucket"]["Properties"]
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    for rule in bucket["LifecycleConfiguration"]["Rules"]:
        if "ExpirationInDays" in rule or "ExpirationDate" in rule:
            assert rule.get("Prefix", "").startswith("buffer/"), rule["Id"]


def test_template_gpu_instance_parameter_starts_as_none() -> None:
    param = template()["Resources"]["GpuInstanceIdParameter"]["Properties"]
    assert param["Value"] == "none"
    assert template()["Parameters"]["GpuInstanceParamName"]["Default"] == "/encache/gpu/instance_id"


# --- the GPU worker on demand (docs/operations-gpu.md) -----------------------------------------------


def test_template_gpu_controller_runs_every_minute_and_outlasts_its_wait_for_health() -> None:
    controller = fn("GpuControllerFunction")
    assert controller["Handler"] == "handlers.events.gpu_controller.lambda_handler"
    assert [e["Type"] for e in controller["Events"].values()] == ["ScheduleV2"]
    wait_s = int(env("GpuControllerFunction")["GPU_CONTROLLER_WAIT_S"])
    assert controller["Timeout"] >= wait_s + 60
    glob = template()["Globals"]["Function"]["Environment"]["Variables"]
    assert controller["FunctionName"] == glob["GPU_CONTROLLER_FUNCTION_NAME"]


def test_template_gpu_control_table_matches_the_library_definition() -> None:
    from worldmm.gpu.aws import control_table_definition

    assert _table("GpuControlTable") == _definition(control_table_definition(Settings().gpu_control_table))


def test_template_work_that_finds_the_gpu_down_may_wake_the_controller() -> None:
    controller = {"Fn::Sub": "${AWS::StackName}-gpu-controller"}
    for name in ("IngestWindowFunction", "IngestDLQConsumer", "ChatFunction", "ChatVerboseFunction"):
        invokable = [
            p["LambdaInvokePolicy"]["FunctionName"]
            for p in fn(name)["Policies"]
            if isinstance(p, dict) and "LambdaInvokePolicy" in p
        ]
        assert controller in invokable, name


def test_template_gpu_worker_launch_template_is_tagged_private_and_g5_by_default() -> None:
    params = template()["Parameters"]
    assert params["GpuInstanceType"]["Default"] == "g5.xlarge"
    data = template()["Resources"]["GpuWorkerLaunchTemplate"]["Properties"]["LaunchTemplateData"]
    assert data["InstanceType"] == {"Ref": "GpuInstanceType"} and data["ImageId"] == {"Ref": "GpuWorkerAmiId"}
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["NetworkInterfaces"][0]["AssociatePublicIpAddress"] is False
    tags = {t["ResourceType"]: t["Tags"] for t in data["TagSpecifications"]}
    assert tags["instance"] == [{"Key": "Name", "Value": {"Ref": "GpuWorkerTag"}}]
    user_data = data["UserData"]["Fn::Base64"]["Fn::Sub"]
    assert "secretsmanager get-secret-value" in user_data and "gpu_worker/start.sh" in user_data
    ingress = template()["Resources"]["GpuWorkerSecurityGroup"]["Properties"]["SecurityGroupIngress"]
    assert [(r["FromPort"], r["ToPort"]) for r in ingress] == [(8000, 8000)]
    assert all("CidrIp" not in r for r in ingress)


def test_template_gpu_worker_role_reads_only_the_worker_key_fails_on_todays_code() -> None:
    # Before issue 64 the GPU box could read the whole model-keys secret (OpenAI, Groq and the cursor key).
    role = template()["Resources"]["GpuWorkerRole"]["Properties"]
    (policy,) = role["Policies"]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == "secretsmanager:GetSecretValue"
    assert statement["Resource"] == {"Ref": "GpuWorkerTokenSecret"}
    user_data = template()["Resources"]["GpuWorkerLaunchTemplate"]["Properties"]["LaunchTemplateData"]["UserData"]
    script = user_data["Fn::Base64"]["Fn::Sub"]
    assert "--secret-id '${GpuWorkerTokenSecret}'" in script and "ModelKeysSecretName" not in script


def test_template_alarm_when_work_waited_20_minutes_for_the_gpu() -> None:
    alarm = template()["Resources"]["GpuWorkWaitAlarm"]["Properties"]
    assert alarm["MetricName"] == "GpuWorkWaitMs" and alarm["Threshold"] == 20 * 60 * 1000
    service = env("GpuControllerFunction")["POWERTOOLS_SERVICE_NAME"]
    assert alarm["Dimensions"] == [{"Name": "service", "Value": service}]


# --- settings contract, secrets, IAM ---------------------------------------------------------------


def test_template_environment_names_are_settings_fields() -> None:
    fields = {name.upper() for name in Settings.model_fields}
    names = set(template()["Globals"]["Function"]["Environment"]["Variables"])
    for props in functions().values():
        names |= set(props.get("Environment", {}).get("Variables", {}))
    unknown = {n for n in names if not n.startswith("POWERTOOLS_") and n not in fields}
    assert unknown == set()


NO_DATABASE = {"GpuControllerFunction"}  # in the VPC for the worker's private address, never the database


def test_template_database_credentials_come_from_secrets_manager_only() -> None:
    for name in functions():
        variables = env(name)
        assert "DATABASE_URL" not in variables and not any("PASSWORD" in key for key in variables), name
        if "VpcConfig" in fn(name) and name not in NO_DATABASE:
            assert variables["DATABASE_SECRET_ARN"] == {"Ref": "DatabaseSecretArn"}, name


MODEL_KEYS = {
    "Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
    "${ModelKeysSecretName}-??????"
}
CURSOR_KEY = {"Ref": "CursorSigningSecret"}
WORKER_KEY = {"Ref": "GpuWorkerTokenSecret"}
MODEL_CALLERS = {"IngestWindowFunction", "IngestDLQConsumer", "ChatFunction", "ChatVerboseFunction", "McpFunction"}
SECRETS_NEEDED: dict[str, list[dict[str, str]]] = {
    **{name: [MODEL_KEYS, WORKER_KEY] for name in MODEL_CALLERS},
    "McpFunction": [MODEL_KEYS, WORKER_KEY, CURSOR_KEY],  # its timeline tool pages with cursors
    "GpuControllerFunction": [WORKER_KEY],  # checks /health's proof; calls no model
    "ChatsListFunction": [CURSOR_KEY],
    "ChatMessagesFunction": [CURSOR_KEY],
    "MemoriesListFunction": [CURSOR_KEY],
}
"""One secret per purpose (issue 64 item 4): the key secrets each function may read; every other function none."""
SECRET_SETTING = {"MODEL_KEYS_SECRET": MODEL_KEYS, "CURSOR_SECRET_ARN": CURSOR_KEY}


def _key_grants(name: str) -> list[Any]:
    return [s["Resource"] for s in statements(fn(name)) if "secretsmanager:GetSecretValue" in json.dumps(s["Action"])]


def test_template_each_function_reads_only_the_secrets_it_needs_fails_on_todays_code() -> None:
    # GIVEN every function's Secrets Manager grants (the database secret is granted apart, and checked below)
    for name in functions():
        # THEN a function reads exactly the key secrets its purpose needs: the cursor-only functions no model
        # key, the GPU controller no model key, the functions that neither page nor call a model no key at all
        assert _key_grants(name) == SECRETS_NEEDED.get(name, []), name


def test_template_each_function_is_told_only_of_the_secrets_it_may_read_fails_on_todays_code() -> None:
    for name in functions():
        variables = env(name)
        told = [
            grant
            for setting, grant in (*SECRET_SETTING.items(), ("GPU_WORKER_TOKEN_SECRET_ARN", WORKER_KEY))
            if setting in variables
        ]
        assert sorted(map(json.dumps, told)) == sorted(map(json.dumps, SECRETS_NEEDED.get(name, []))), name
        for setting, grant in SECRET_SETTING.items():
            if setting in variables:
                assert variables[setting] == ({"Ref": "ModelKeysSecretName"} if grant is MODEL_KEYS else grant), name
        if "GPU_WORKER_TOKEN_SECRET_ARN" in variables:
            assert variables["GPU_WORKER_TOKEN_SECRET_ARN"] == WORKER_KEY, name


def test_template_the_cursor_and_worker_keys_are_generated_secrets_of_their_own() -> None:
    for name in ("CursorSigningSecret", "GpuWorkerTokenSecret"):
        secret = template()["Resources"][name]
        assert secret["Type"] == "AWS::SecretsManager::Secret"
        assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 64
        assert "SecretString" not in secret["Properties"]


def test_template_no_function_environment_holds_a_secret_value() -> None:
    """Issue 27's rule, over every function and Globals: no dynamic reference, no key named in the environment."""
    keys = {name.upper() for name in SECRET_SOURCES}
    for name in functions():
        variables = env(name)
        assert not re.search(r"resolve:(secretsmanager|ssm-secure)", json.dumps(variables)), name
        assert keys.isdisjoint(variables), name


def test_template_only_the_functions_that_call_a_model_are_told_of_the_model_keys() -> None:
    readers = {name for name in functions() if "MODEL_KEYS_SECRET" in env(name)}
    assert readers == MODEL_CALLERS


def test_template_every_function_given_the_database_secret_may_read_it() -> None:
    for name, props in functions().items():
        if "DATABASE_SECRET_ARN" not in env(name):
            continue
        granted = [
            p["AWSSecretsManagerGetSecretValuePolicy"]["SecretArn"]
            for p in props.get("Policies", [])
            if isinstance(p, dict) and "AWSSecretsManagerGetSecretValuePolicy" in p
        ]
        assert granted == [{"Ref": "DatabaseSecretArn"}], name


def test_template_functions_reach_the_database_through_the_proxy_endpoint_when_one_is_given() -> None:
    parameter = template()["Parameters"]["DatabaseProxyEndpoint"]
    assert parameter["Default"] == ""  # as shipped: the secret's host
    assert template()["Globals"]["Function"]["Environment"]["Variables"]["DATABASE_PROXY_HOST"] == {
        "Fn::If": ["HasDatabaseProxy", {"Ref": "DatabaseProxyEndpoint"}, {"Ref": "AWS::NoValue"}]
    }
    assert template()["Conditions"]["HasDatabaseProxy"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "DatabaseProxyEndpoint"}, ""]}]
    }


def test_template_caps_each_containers_database_pool() -> None:
    # One request at a time per container: one pooled connection, one more at most (bench.bench_connections).
    variables = template()["Globals"]["Function"]["Environment"]["Variables"]
    assert (variables["DATABASE_POOL_SIZE"], variables["DATABASE_MAX_OVERFLOW"]) == ("1", "1")
    settings = Settings(database_pool_size=variables["DATABASE_POOL_SIZE"], database_max_overflow="1")
    assert settings.database_pool_size + settings.database_max_overflow == 2


def http_api_functions() -> dict[str, dict[str, Any]]:
    return {
        name: props
        for name, props in functions().items()
        if any(e["Type"] == "HttpApi" for e in (props.get("Events") or {}).values())
    }


def test_template_api_functions_snapstart_published_versions_behind_an_alias() -> None:
    api = http_api_functions()
    assert len(api) >= 12
    for name, props in api.items():
        assert props.get("AutoPublishAlias") == "live", name
        assert props.get("SnapStart") == {"ApplyOn": "PublishedVersions"}, name
        # What SnapStart cannot be combined with (Lambda's documented limits).
        assert "ProvisionedConcurrencyConfig" not in props, name
        assert "FileSystemConfigs" not in props, name
        assert int((props.get("EphemeralStorage") or {}).get("Size", 512)) <= 512, name
        runtime = props.get("Runtime", template()["Globals"]["Function"]["Runtime"])
        assert int(runtime.removeprefix("python3.")) >= 12, name  # SnapStart for Python: 3.12 and later


def test_template_api_function_handlers_register_the_snapstart_hooks() -> None:
    # Lambda runs only the hooks registered by modules the handler imports: every API handler's module
    # must import worldmm.snapstart's registration (handlers.http.common or the MCP handler).
    for name, props in http_api_functions().items():
        module = props["Handler"].rsplit(".", 1)[0]
        source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
        assert "from handlers.http.common import" in source or "register_runtime_hooks()" in source, name
    assert "register_runtime_hooks()" in (ROOT / "handlers" / "http" / "common.py").read_text()


def test_template_every_function_runs_python312_with_powertools_settings() -> None:
    glob = template()["Globals"]["Function"]
    assert glob["Runtime"] == "python3.12"
    assert glob["Environment"]["Variables"]["WORLDMM_PROFILE"] == "aws"
    assert "POWERTOOLS_LOG_LEVEL" in glob["Environment"]["Variables"]
    for name, props in functions().items():
        assert props.get("Runtime", "python3.12") == "python3.12", name
        assert env(name)["POWERTOOLS_SERVICE_NAME"], name


def test_template_iam_wildcard_resources_only_where_none_can_be_named() -> None:
    for name, props in functions().items():
        for statement in statements(props):
            if statement.get("Resource") == "*":
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                assert actions == ["ec2:DescribeInstances"], (name, statement)


def test_template_function_groups_carry_no_model_runtimes() -> None:
    # GIVEN each function's build folder (its requirements.txt decides what the package carries)
    for name, props in functions().items():
        folder = ROOT / props["CodeUri"]
        requirements = (folder / "requirements.txt").read_text().lower()
        # THEN no Lambda carries a model runtime, and the light group carries no numerical stack or SDK
        assert not any(pkg in requirements for pkg in ("torch", "transformers", "llama", "whisper")), name
        if props["CodeUri"].rstrip("/").endswith("core"):
            assert not any(pkg in requirements for pkg in ("numpy", "scipy", "sqlalchemy", "openai")), name
        assert (folder / "worldmm" / "config.py").is_file() and (folder / "handlers" / "__init__.py").is_file(), name


# --- every handler imports, fast, in a cold interpreter ----------------------------------------------

HANDLERS = sorted({props["Handler"] for props in functions().values()})

_PROBE = """
import json, sys, importlib
module_name, _, attr = sys.argv[1].rpartition(".")
handler = getattr(importlib.import_module(module_name), attr)
heavy = sorted(m for m in sys.argv[2].split(",") if m in sys.modules)
print(json.dumps({"callable": callable(handler), "heavy": heavy}))
"""


@pytest.mark.parametrize("handler", HANDLERS)
def test_template_handler_imports_in_a_cold_interpreter_without_a_model_runtime(handler: str) -> None:
    # WHEN a fresh interpreter imports the handler as Lambda would (its import time: bench.bench_handler_imports)
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, handler, ",".join(HEAVY_MODULES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", "WORLDMM_PROFILE": "aws"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    # THEN it exists, is callable and loads no model runtime
    assert probe["callable"] and probe["heavy"] == []
