"""A presigned POST's multipart form, read as it streams: the signature is checked when the `file` part begins,
before any of the object is read, and the object is refused as soon as it passes the signed bound.

S3 reads a POST the same way (fields first, the object last, anything after it ignored); the local gateway used
to read and parse up to 32 MiB before it looked at the signature (issue 64).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from python_multipart.multipart import MultipartParser, parse_options_header

MAX_FIELDS = 16
MAX_FIELD_BYTES = 8 * 1024


class FormRefused(Exception):
    """The POST is refused: S3's error code and the HTTP status it answers with."""

    def __init__(self, code: str, status: int) -> None:
        super().__init__(code)
        self.code = code
        self.status = status


@dataclass
class SignedForm:
    """The form fields before the object, and the object."""

    fields: dict[str, str]
    data: bytes


@dataclass
class _State:
    check: Callable[[dict[str, str]], int | None]
    fields: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    header_field: bytearray = field(default_factory=bytearray)
    header_value: bytearray = field(default_factory=bytearray)
    value: bytearray = field(default_factory=bytearray)
    in_file: bool = False
    done: bool = False
    max_bytes: int = 0
    data: bytearray = field(default_factory=bytearray)

    def part_begin(self) -> None:
        self.name, self.value = None, bytearray()

    def header_end(self) -> None:
        if bytes(self.header_field).lower() == b"content-disposition":
            _, params = parse_options_header(bytes(self.header_value))
            raw = params.get(b"name")
            self.name = raw.decode("utf-8", "replace") if raw is not None else None
        self.header_field, self.header_value = bytearray(), bytearray()

    def headers_finished(self) -> None:
        if self.done:
            return
        if self.name == "file":
            max_bytes = self.check(self.fields)
            if max_bytes is None:
                raise FormRefused("AccessDenied", 403)  # before a byte of the object is read
            self.in_file, self.max_bytes = True, max_bytes

    def part_data(self, data: bytes, start: int, end: int) -> None:
        if self.done:
            return
        if self.in_file:
            self.data += data[start:end]
            if len(self.data) > self.max_bytes:
                raise FormRefused("EntityTooLarge", 400)
        else:
            self.value += data[start:end]
            if len(self.value) > MAX_FIELD_BYTES:
                raise FormRefused("MalformedPOSTRequest", 400)

    def part_end(self) -> None:
        if self.done:
            return
        if self.in_file:
            self.done = True  # S3 ignores what follows the object
            return
        if self.name is None or len(self.fields) >= MAX_FIELDS:
            raise FormRefused("MalformedPOSTRequest", 400)
        self.fields[self.name] = self.value.decode("utf-8", "replace")


async def read_signed_form(
    content_type: str,
    content_length: str | None,
    chunks: AsyncIterator[bytes],
    check: Callable[[dict[str, str]], int | None],
    limit: int,
) -> SignedForm:
    """The fields and object of a presigned POST whose fields `check` accepts (it returns the signed length
    bound, or None); FormRefused as soon as the form is malformed, unsigned, or longer than allowed."""
    kind, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise FormRefused("MalformedPOSTRequest", 400)
    if content_length is not None and (not content_length.isdigit() or int(content_length) > limit):
        raise FormRefused("EntityTooLarge", 400)
    state = _State(check)

    def header_field(data: bytes, start: int, end: int) -> None:
        state.header_field += data[start:end]

    def header_value(data: bytes, start: int, end: int) -> None:
        state.header_value += data[start:end]

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": state.part_begin,
            "on_header_field": header_field,
            "on_header_value": header_value,
            "on_header_end": state.header_end,
            "on_headers_finished": state.headers_finished,
            "on_part_data": state.part_data,
            "on_part_end": state.part_end,
        },
    )
    received = 0
    try:
        async for chunk in chunks:
            received += len(chunk)
            if received > limit:
                raise FormRefused("EntityTooLarge", 400)
            parser.write(chunk)
            if state.done:
                break
        else:
            parser.finalize()
    except FormRefused:
        raise
    except Exception as exc:  # the parser's own errors: no multipart form
        raise FormRefused("MalformedPOSTRequest", 400) from exc
    if not state.in_file:
        raise FormRefused("InvalidArgument", 400)
    if not state.data:
        raise FormRefused("EntityTooSmall", 400)
    return SignedForm(state.fields, bytes(state.data))
