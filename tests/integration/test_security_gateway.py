"""No way into `worldmm serve` without the install's own key.

The gateway's keys come from a per-install random key in WORLDMM_HOME (mode 0600) or an explicit
JWT_DEV_SECRET of at least 32 random bytes; the key that used to be written in the source opens nothing;
the token and upload keys are derived apart; weak keys, the aws profile, and plain HTTP off loopback are
refused; TLS serves on loopback here (tests reach loopback only); MCP checks Host and Origin for the public URL.
"""

from __future__ import annotations

import datetime as dt
import os
import ssl
import stat
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import uvicorn
from pydantic import ValidationError

from tests.support.gateway import RunningGateway, running_gateway
from tests.support.harness import _free_port, make_settings
from worldmm.capture.local_uploads import LocalUploadSigner
from worldmm.cli import main as cli_main
from worldmm.config import Profile, Settings
from worldmm.errors import ConfigurationError
from worldmm.gateway.app import check_exposure, create_app
from worldmm.gateway.auth import decode_token, issue_token
from worldmm.gateway.keys import KEY_FILE, gateway_keys
from worldmm.gateway.mcp import MCP_PATH
from worldmm.gateway.routes import ROUTES
from worldmm.services import Services

pytestmark = pytest.mark.integration

ALICE = "user-alice"
OLD_PUBLIC_KEY = "worldmm-local-development-signing-key"  # what config.py held before issue 27
STRONG_KEY = "Zq3v8mX1_pL0sR7tY2wK9bN4cF6hJ5dG8eA1uI3oP0s"  # 43 characters, as secrets.token_urlsafe(32)
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def _claims(settings: Settings, sub: str = ALICE) -> dict[str, Any]:
    return {"sub": sub, "iss": settings.jwt_issuer, "aud": settings.jwt_audience, "exp": int(time.time()) + 600}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _request_every_route(client: httpx.Client, headers: dict[str, str]) -> dict[str, int]:
    """Each HTTP route (path parameters filled in) and /mcp → the status it answered with `headers`."""
    statuses: dict[str, int] = {}
    for route in ROUTES:
        path = route.path.replace("{id}", "sess-1")
        params = {"chat_id": "c-1"} if route.method == "GET" else None
        body = {"question": "Where are my keys?"} if route.body is not None else {}
        response = client.request(
            route.method, path, params=params, json=None if route.method == "GET" else body, headers=headers
        )
        statuses[route.route_key] = response.status_code
    statuses["POST /mcp"] = client.post(MCP_PATH, json=TOOLS_LIST, headers={**MCP_HEADERS, **headers}).status_code
    return statuses


@pytest.fixture
def api(services: Services) -> Iterator[RunningGateway]:
    with running_gateway(services) as running:
        yield running


def test_security_a_token_signed_with_the_old_public_key_is_401_on_every_route_mcp_included(
    api: RunningGateway, services: Services
) -> None:
    # GIVEN a well-formed token for Alice signed with the key the source used to hold
    forged = jwt.encode(_claims(services.settings), OLD_PUBLIC_KEY, algorithm="HS256")
    # WHEN it is sent to every route the gateway serves, MCP included
    with httpx.Client(base_url=api.url, timeout=30) as client:
        refused = _request_every_route(client, _bearer(forged))
        control = client.post("/chats/list", json={}, headers=_bearer(issue_token(ALICE, services.settings)))
    # THEN every one is 401 (while the install's own token is let in)
    assert set(refused) == {r.route_key for r in ROUTES} | {"POST /mcp"}
    assert refused == dict.fromkeys(refused, 401)
    assert control.status_code == 200


def test_security_upload_urls_signed_with_the_old_key_or_the_token_key_are_refused(
    api: RunningGateway, services: Services
) -> None:
    # GIVEN upload URLs for the same object signed with the old public key and with the token key
    key = f"sessions/sess-{uuid.uuid4().hex[:12]}/frames/window_0/frame_0.jpg"  # the store outlives the test
    params = {"Key": key, "ContentType": "image/jpeg"}
    forged = [
        LocalUploadSigner(api.url, secret).generate_presigned_url("put_object", params, 600)
        for secret in (OLD_PUBLIC_KEY.encode(), gateway_keys(services.settings).token)
    ]
    genuine = api.gateway.signer.generate_presigned_url("put_object", params, 600)
    # THEN the gateway refuses both forgeries; a URL it signed with the upload key is taken
    for url in forged:
        assert httpx.put(url, content=b"x", headers={"Content-Type": "image/jpeg"}, timeout=10).status_code == 403
    assert not services.store.exists(key)
    assert httpx.put(genuine, content=b"x", headers={"Content-Type": "image/jpeg"}, timeout=10).status_code == 200


def test_security_a_token_signed_with_the_upload_key_is_401(api: RunningGateway, services: Services) -> None:
    forged = jwt.encode(_claims(services.settings), gateway_keys(services.settings).upload, algorithm="HS256")
    assert httpx.post(f"{api.url}/chats/list", json={}, headers=_bearer(forged), timeout=10).status_code == 401


def test_security_the_install_key_is_random_owner_only_and_stable(tmp_path: Path) -> None:
    # GIVEN two installs (two WORLDMM_HOMEs) without JWT_DEV_SECRET
    first, second = make_settings(worldmm_home=tmp_path / "a"), make_settings(worldmm_home=tmp_path / "b")
    # WHEN each signs a token
    token = issue_token(ALICE, first)
    # THEN each generated its own 32-byte key file, readable by its owner alone
    key_file = tmp_path / "a" / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(bytes.fromhex(key_file.read_text().strip())) == 32
    assert decode_token(token, first)["sub"] == ALICE
    with pytest.raises(Exception, match="invalid token"):
        decode_token(token, second)
    assert (tmp_path / "b" / KEY_FILE).read_text() != key_file.read_text()
    assert OLD_PUBLIC_KEY.encode() not in (gateway_keys(first).token, gateway_keys(first).upload)


def test_security_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / KEY_FILE).write_text(os.urandom(32).hex())
    (home / KEY_FILE).chmod(0o644)
    with pytest.raises(ConfigurationError, match="readable by others"):
        gateway_keys(make_settings(worldmm_home=home))


@pytest.mark.parametrize(
    "weak", [OLD_PUBLIC_KEY, "x", "short-but-random-9f8a7c", "a" * 64, "abababababababababababababababababababababab"]
)
def test_security_weak_or_known_explicit_keys_are_refused_in_every_profile(weak: str) -> None:
    for profile in Profile:
        with pytest.raises(ValidationError, match="JWT_DEV_SECRET"):
            make_settings(worldmm_profile=profile, jwt_dev_secret=weak)


def test_security_an_explicit_strong_key_replaces_the_install_key(tmp_path: Path) -> None:
    explicit = make_settings(worldmm_home=tmp_path, jwt_dev_secret=STRONG_KEY)
    install = make_settings(worldmm_home=tmp_path)
    token = issue_token(ALICE, explicit)
    assert gateway_keys(explicit).explicit and decode_token(token, explicit)["sub"] == ALICE
    assert not (tmp_path / KEY_FILE).exists()  # nothing generated when the operator gave the key
    with pytest.raises(Exception, match="invalid token"):
        decode_token(token, install)


def test_security_the_aws_profile_has_no_gateway_keys(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    from worldmm.config import get_settings

    aws = make_settings(worldmm_profile=Profile.AWS)
    with pytest.raises(ConfigurationError, match="aws profile"):
        issue_token(ALICE, aws)
    with pytest.raises(ConfigurationError, match="aws profile"):
        check_exposure(aws, "127.0.0.1", tls=False)
    # `worldmm token` says so and exits 2
    monkeypatch.setenv("WORLDMM_PROFILE", "aws")
    monkeypatch.setenv("CURSOR_SECRET", "tests-cursor-signing-key-0123456789abcdef")
    get_settings.cache_clear()
    try:
        assert cli_main(["token", "--user-id", ALICE]) == 2
    finally:
        get_settings.cache_clear()
    assert "aws profile" in capsys.readouterr().err


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "glasses.lan"])
def test_security_serve_off_loopback_needs_tls(host: str, tmp_path: Path) -> None:
    settings = make_settings(worldmm_home=tmp_path)
    with pytest.raises(ConfigurationError, match="--tls-cert"):
        check_exposure(settings, host, tls=False)
    with pytest.raises(ConfigurationError, match="--public-url"):
        check_exposure(settings, host, tls=True)  # upload URLs and MCP need the address clients reach
    with pytest.raises(ConfigurationError, match="--public-url"):
        check_exposure(settings, host, tls=True, public_url="http://192.168.1.20:8443")
    check_exposure(settings, host, tls=True, public_url="https://192.168.1.20:8443")  # then it may listen there


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_security_serve_on_loopback_needs_no_tls(host: str, tmp_path: Path) -> None:
    check_exposure(make_settings(worldmm_home=tmp_path), host, tls=False)


def test_security_serve_command_refuses_a_lan_host_without_tls(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["serve", "--host", "0.0.0.0", "--port", "1"]) == 2
    assert "--tls-cert" in capsys.readouterr().err


def _self_signed(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_security_gateway_serves_over_tls(services: Services, tmp_path: Path) -> None:
    # GIVEN the gateway with a certificate (the LAN set-up, here on loopback: tests reach nothing else)
    cert, key = _self_signed(tmp_path)
    port = _free_port()
    url = f"https://127.0.0.1:{port}"
    app = create_app(services, public_url=url)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", ssl_certfile=str(cert), ssl_keyfile=str(key)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "gateway did not start"
            time.sleep(0.02)
        context = ssl.create_default_context(cafile=str(cert))
        token = issue_token(ALICE, services.settings)
        # THEN a client that trusts the certificate gets in with the install's token; plain HTTP does not connect
        answered = httpx.post(f"{url}/chats/list", json={}, headers=_bearer(token), verify=context, timeout=10)
        assert answered.status_code == 200
        with pytest.raises(httpx.HTTPError):
            httpx.post(f"http://127.0.0.1:{port}/chats/list", json={}, headers=_bearer(token), timeout=10)
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture
def lan_gateway(services: Services) -> Iterator[str]:
    """The gateway as `serve --host 0.0.0.0 --public-url https://192.168.1.20:8443` builds it, bound to loopback."""
    port = _free_port()
    app = create_app(services, public_url="https://192.168.1.20:8443", host="0.0.0.0")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "gateway did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=20)


@pytest.mark.parametrize(
    ("extra", "allowed"),
    [
        ({"Host": "192.168.1.20:8443"}, True),
        ({"Host": "192.168.1.20:8443", "Origin": "https://192.168.1.20:8443"}, True),
        ({}, True),  # the loopback address it is bound to
        ({"Host": "attacker.example"}, False),  # a DNS name rebound to the gateway
        ({"Host": "192.168.1.20:8443", "Origin": "http://attacker.example"}, False),  # a page elsewhere
    ],
)
def test_security_mcp_on_a_public_host_checks_host_and_origin(
    lan_gateway: str, services: Services, extra: dict[str, str], allowed: bool
) -> None:
    headers = {**MCP_HEADERS, **_bearer(issue_token(ALICE, services.settings)), **extra}
    response = httpx.post(f"{lan_gateway}{MCP_PATH}", json=TOOLS_LIST, headers=headers, timeout=10)
    if allowed:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code in (400, 403, 421), response.text


def _raw_request(url: str, head: str) -> str:
    """Send only a request's head (no body) on a raw socket; the status line the server answers with."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head.encode())
        return sock.recv(4096).decode(errors="replace").split("\r\n", 1)[0]


def test_security_api_body_size_is_checked_before_reading(api: RunningGateway, services: Services) -> None:
    from worldmm.gateway.app import MAX_API_BODY_BYTES

    token = issue_token(ALICE, services.settings)
    host = api.url.removeprefix("http://")
    # GIVEN a request that declares a body over the limit and sends none of it: answered at once (never read)
    head = (
        f"POST /memories/chat HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {MAX_API_BODY_BYTES + 1}\r\n\r\n"
    )
    assert " 413 " in _raw_request(api.url, head)
    # AND a chunked body (no length declared) is cut off once it passes the limit
    chunk = b" " * (1024 * 1024)

    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_API_BODY_BYTES // len(chunk) + 2):
            yield chunk

    response = httpx.post(f"{api.url}/memories/chat", content=chunks(), headers=_bearer(token), timeout=30)
    assert response.status_code == 413 and response.json() == {"message": "Request Entity Too Large"}
    # AND an ordinary request still goes through
    assert httpx.post(f"{api.url}/chats/list", json={}, headers=_bearer(token), timeout=10).status_code == 200


def test_security_upload_size_is_checked_before_reading(api: RunningGateway, services: Services) -> None:
    from worldmm.gateway.app import MAX_UPLOAD_BYTES

    key = f"sessions/sess-{uuid.uuid4().hex[:12]}/audio/window_0.wav"
    url = api.gateway.signer.generate_presigned_url("put_object", {"Key": key, "ContentType": "audio/wav"}, 600)
    target = url.removeprefix(api.url)
    head = (
        f"PUT {target} HTTP/1.1\r\nHost: {api.url.removeprefix('http://')}\r\nContent-Type: audio/wav\r\n"
        f"Content-Length: {MAX_UPLOAD_BYTES + 1}\r\n\r\n"
    )
    assert " 400 " in _raw_request(api.url, head)
    assert not services.store.exists(key)


def test_security_a_non_ascii_upload_signature_is_403_not_500(api: RunningGateway, services: Services) -> None:
    key = f"sessions/sess-{uuid.uuid4().hex[:12]}/audio/window_0.wav"
    url = api.gateway.signer.generate_presigned_url("put_object", {"Key": key, "ContentType": "audio/wav"}, 600)
    base, _, query = url.partition("?")
    params = dict(p.split("=", 1) for p in query.split("&"))
    params["signature"] = "é" * 64
    response = httpx.put(base, params=params, content=b"RIFF", headers={"Content-Type": "audio/wav"}, timeout=10)
    assert response.status_code == 403 and b"AccessDenied" in response.content
    assert not services.store.exists(key)
