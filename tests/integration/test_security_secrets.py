"""Model keys and tokens reach the functions at run time, never through their environment.

template.yaml gives a function MODEL_KEYS_SECRET (the secret's name) and the right to read it; Settings read
its JSON through Powertools Parameters (Secrets Manager under moto here). A key set in the environment wins,
a weak cursor key in the secret is refused, and a rotated value is seen without a redeploy.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import boto3
import pytest

from tests.support.harness import make_settings
from tests.support.template import load_template
from worldmm.config import MODEL_KEY_FIELDS, Profile
from worldmm.errors import ConfigurationError

pytestmark = pytest.mark.integration

KEYS = {
    "openai_api_key": "sk-test-openai-0123456789",
    "groq_api_key": "gsk-test-groq-0123456789",
    "gpu_worker_token": "gpu-token-0123456789abcdef",
    "cursor_secret": "cursor-secret-from-secrets-manager-0123456789",
}


def _functions() -> dict[str, Any]:
    return {
        n: r["Properties"] for n, r in load_template()["Resources"].items() if r["Type"] == "AWS::Serverless::Function"
    }


def test_security_no_function_environment_resolves_a_secret_at_deploy_time() -> None:
    template = load_template()
    environments = [template["Globals"]["Function"]["Environment"]] + [
        props.get("Environment", {}) for props in _functions().values()
    ]
    assert all("resolve:secretsmanager" not in json.dumps(env) for env in environments)
    # The functions that use model keys are told where they are, and each of them may read that secret.
    readers = {
        n for n, p in _functions().items() if "MODEL_KEYS_SECRET" in p.get("Environment", {}).get("Variables", {})
    }
    assert {
        "ChatFunction",
        "ChatVerboseFunction",
        "IngestWindowFunction",
        "McpFunction",
        "GpuControllerFunction",
    } <= readers
    for name in readers:
        statements = [s for p in _functions()[name]["Policies"] if isinstance(p, dict) for s in p.get("Statement", [])]
        grants = [s for s in statements if s.get("Action") == "secretsmanager:GetSecretValue"]
        assert grants and all(re.search(r"\$\{ModelKeysSecretName\}-\?{6}", json.dumps(s["Resource"])) for s in grants)


@pytest.fixture
def secret(aws: None) -> str:
    name = f"worldmm/model-keys-{uuid.uuid4().hex[:8]}"  # Powertools caches by name: one per test
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name=name, SecretString=json.dumps(KEYS))
    return name


def test_security_settings_read_the_model_keys_at_run_time(secret: str) -> None:
    settings = make_settings(worldmm_profile=Profile.AWS, model_keys_secret=secret, cursor_secret=None)
    assert {name: getattr(settings, name) for name in MODEL_KEY_FIELDS} == KEYS


def test_security_a_key_in_the_environment_wins(secret: str) -> None:
    settings = make_settings(model_keys_secret=secret, openai_api_key="sk-from-the-environment")
    assert settings.openai_api_key == "sk-from-the-environment" and settings.groq_api_key == KEYS["groq_api_key"]


def test_security_a_weak_cursor_key_in_the_secret_is_refused_in_aws(aws: None) -> None:
    name = f"worldmm/model-keys-{uuid.uuid4().hex[:8]}"
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name=name, SecretString=json.dumps({**KEYS, "cursor_secret": "worldmm-local-cursor-secret"})
    )
    with pytest.raises(ConfigurationError, match="cursor_secret"):
        make_settings(worldmm_profile=Profile.AWS, model_keys_secret=name, cursor_secret=None)


def test_security_a_rotated_key_is_read_without_a_redeploy(secret: str) -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    before = make_settings(model_keys_secret=secret, database_secret_max_age_s=0)
    client.put_secret_value(SecretId=secret, SecretString=json.dumps({**KEYS, "openai_api_key": "sk-rotated"}))
    after = make_settings(model_keys_secret=secret, database_secret_max_age_s=0)
    assert before.openai_api_key == KEYS["openai_api_key"] and after.openai_api_key == "sk-rotated"
