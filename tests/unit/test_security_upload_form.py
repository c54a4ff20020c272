"""Issue 64, Low: `POST /uploads/` checks the signature before it reads the object.

The local gateway used to read and parse up to 32 MiB of a form before it looked at its signature. Now the
form streams: the fields are checked when the `file` part begins, and an unsigned POST is refused having read
only the chunks that hold its fields; a signed one is refused as soon as the object passes its signed bound.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from worldmm.gateway.upload_form import FormRefused, SignedForm, read_signed_form

pytestmark = pytest.mark.unit

BOUNDARY = "worldmm-test-boundary"
CHUNK = 64 * 1024
LIMIT = 32 * 1024 * 1024


def _form(fields: dict[str, str], file_bytes: int) -> tuple[bytes, bytes, bytes]:
    """(the fields and the file part's headers, the object, the closing boundary)."""
    head = b"".join(
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    )
    head += f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n'.encode()
    head += b"Content-Type: image/jpeg\r\n\r\n"
    return head, b"\xff" * file_bytes, f"\r\n--{BOUNDARY}--\r\n".encode()


class Body:
    """The request body in chunks, counting how many were read."""

    def __init__(self, head: bytes, data: bytes, tail: bytes) -> None:
        whole = head + data + tail
        self.chunks = [whole[i : i + CHUNK] for i in range(0, len(whole), CHUNK)]
        self.read = 0

    async def stream(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.read += 1
            yield chunk


def _read(body: Body, check: object) -> SignedForm:
    async def run() -> SignedForm:
        return await read_signed_form(
            f"multipart/form-data; boundary={BOUNDARY}", None, body.stream(), check, LIMIT  # type: ignore[arg-type]
        )

    return anyio.run(run)


def test_security_an_unsigned_upload_is_refused_before_its_object_is_read_fails_on_todays_code() -> None:
    # GIVEN a 20 MiB upload whose signature is wrong
    body = Body(*_form({"key": "sessions/x/window_0/frame_0000.jpg", "signature": "forged"}, 20 * 1024 * 1024))
    # WHEN the gateway reads it
    with pytest.raises(FormRefused) as refused:
        _read(body, lambda fields: None)
    # THEN it is refused having read the first chunk only, not the 320 of the object
    assert (refused.value.code, refused.value.status) == ("AccessDenied", 403)
    assert body.read == 1, body.read


def test_security_a_signed_upload_is_refused_as_soon_as_it_passes_its_bound() -> None:
    body = Body(*_form({"key": "k", "signature": "good"}, 4 * 1024 * 1024))
    with pytest.raises(FormRefused) as refused:
        _read(body, lambda fields: 100_000 if fields["signature"] == "good" else None)
    assert refused.value.code == "EntityTooLarge"
    assert body.read <= 3, body.read


def test_a_signed_upload_within_its_bound_is_read_whole_with_its_fields() -> None:
    body = Body(*_form({"key": "k", "signature": "good", "Content-Type": "image/jpeg"}, 300_000))
    form = _read(body, lambda fields: 1_000_000)
    assert form.fields == {"key": "k", "signature": "good", "Content-Type": "image/jpeg"}
    assert len(form.data) == 300_000


def test_a_form_that_is_not_multipart_is_malformed() -> None:
    async def run() -> None:
        async def nothing() -> AsyncIterator[bytes]:
            yield b""

        await read_signed_form("application/json", None, nothing(), lambda f: 1, LIMIT)

    with pytest.raises(FormRefused, match="MalformedPOSTRequest"):
        anyio.run(run)
