"""Keys reach the functions at run time, never through their environment, one secret per purpose.

template.yaml tells a function only the secrets it reads (MODEL_KEYS_SECRET: the model keys; CURSOR_SECRET_ARN:
the cursor key; GPU_WORKER_TOKEN_SECRET_ARN: the GPU worker key) and grants it only those; Settings fetch each
through Powertools Parameters (Secrets Manager under moto here) when its purpose first needs it, so a function
that only pages never fetches a model key. A key set in the environment wins, a weak cursor key in its secret
is refused, and a rotated value is seen without a redeploy.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import boto3
import pytest

from tests.support.harness import make_settings
from tests.support.template import load_template
from worldmm.chat.settings import ChatSettings
from worldmm.config import Profile, Settings
from worldmm.errors import ConfigurationError

pytestmark = pytest.mark.integration

MODEL_KEYS = {"openai_api_key": "sk-test-openai-0123456789", "groq_api_key": "gsk-test-groq-0123456789"}
CURSOR_KEY = "cursor-secret-from-secrets-manager-0123456789"
WORKER_KEY = "gpu-worker-key-0123456789abcdef-0123456789"


def test_security_no_function_environment_resolves_a_secret_at_deploy_time() -> None:
    template = load_template()
    environments = [template["Globals"]["Function"]["Environment"]] + [
        r["Properties"].get("Environment", {})
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Serverless::Function"
    ]
    assert all("resolve:secretsmanager" not in json.dumps(env) for env in environments)


@pytest.fixture
def secrets(aws: None) -> dict[str, str]:
    """The three secrets of a deployment (names unique per test: Powertools caches by name)."""
    client = boto3.client("secretsmanager", region_name="us-east-1")
    tag = uuid.uuid4().hex[:8]
    names = {"model": f"worldmm/model-keys-{tag}", "cursor": f"worldmm/cursor-{tag}", "worker": f"worldmm/worker-{tag}"}
    client.create_secret(Name=names["model"], SecretString=json.dumps(MODEL_KEYS))
    client.create_secret(Name=names["cursor"], SecretString=CURSOR_KEY)
    client.create_secret(Name=names["worker"], SecretString=WORKER_KEY)
    return names


@pytest.fixture
def fetched(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The secrets Settings fetch, in order."""
    from aws_lambda_powertools.utilities import parameters

    names: list[str] = []
    real = parameters.get_secret

    def spy(name: str, *args: object, **kwargs: object) -> object:
        names.append(name)
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parameters, "get_secret", spy)
    yield names


def _deployed(secrets: dict[str, str], **told: str | None) -> Settings:
    return make_settings(worldmm_profile=Profile.AWS, cursor_secret=None, gpu_worker_token=None, **told)


def test_security_settings_fetch_no_secret_when_read_fails_on_todays_code(
    secrets: dict[str, str], fetched: list[str]
) -> None:
    # GIVEN a function told of every secret
    # WHEN its settings are read (a cold start)
    _deployed(
        secrets,
        model_keys_secret=secrets["model"],
        cursor_secret_arn=secrets["cursor"],
        gpu_worker_token_secret_arn=secrets["worker"],
    )
    # THEN nothing is fetched yet (before issue 64 every function fetched every key at start)
    assert fetched == []


def test_security_a_cursor_only_function_never_fetches_the_model_keys_fails_on_todays_code(
    secrets: dict[str, str], fetched: list[str]
) -> None:
    from worldmm.chat.paging import ChatRules

    # GIVEN ChatsList's settings: told of the cursor secret only (template.yaml)
    settings = _deployed(secrets, cursor_secret_arn=secrets["cursor"])
    rules = ChatRules(ChatSettings.of(settings))
    # WHEN it signs and checks a cursor
    cursor = rules.encode(["chats", "u1"], {"at": "1"})
    assert rules.decode(["chats", "u1"], cursor) == {"at": "1"}
    # THEN the cursor secret is the only one it fetched, and it holds no model key
    assert fetched == [secrets["cursor"]]
    assert settings.model_key("openai_api_key") is None and settings.gpu_worker_key() is None
    assert fetched == [secrets["cursor"]]


def test_security_each_key_is_fetched_from_its_own_secret(secrets: dict[str, str], fetched: list[str]) -> None:
    settings = _deployed(
        secrets,
        model_keys_secret=secrets["model"],
        cursor_secret_arn=secrets["cursor"],
        gpu_worker_token_secret_arn=secrets["worker"],
    )
    assert settings.gpu_worker_key() == WORKER_KEY and fetched == [secrets["worker"]]
    assert settings.model_key("openai_api_key") == MODEL_KEYS["openai_api_key"]
    assert settings.model_key("groq_api_key") == MODEL_KEYS["groq_api_key"]
    assert settings.cursor_signing_secret() == CURSOR_KEY
    assert set(fetched) == set(secrets.values())


def test_security_a_key_in_the_environment_wins(secrets: dict[str, str], fetched: list[str]) -> None:
    settings = make_settings(model_keys_secret=secrets["model"], openai_api_key="sk-from-the-environment")
    assert settings.model_key("openai_api_key") == "sk-from-the-environment" and fetched == []
    assert settings.model_key("groq_api_key") == MODEL_KEYS["groq_api_key"]


def test_security_a_weak_cursor_key_in_its_secret_is_refused_in_aws(aws: None) -> None:
    name = f"worldmm/cursor-{uuid.uuid4().hex[:8]}"
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name=name, SecretString="worldmm-local-cursor-secret"
    )
    settings = make_settings(worldmm_profile=Profile.AWS, cursor_secret=None, cursor_secret_arn=name)
    with pytest.raises(ConfigurationError, match="CURSOR_SECRET_ARN"):
        settings.cursor_signing_secret()


def test_security_a_rotated_key_is_read_without_a_redeploy(secrets: dict[str, str]) -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    settings = make_settings(model_keys_secret=secrets["model"], database_secret_max_age_s=0)
    before = settings.model_key("openai_api_key")
    client.put_secret_value(
        SecretId=secrets["model"], SecretString=json.dumps({**MODEL_KEYS, "openai_api_key": "sk-rotated"})
    )
    assert before == MODEL_KEYS["openai_api_key"] and settings.model_key("openai_api_key") == "sk-rotated"
