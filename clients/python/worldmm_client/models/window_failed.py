from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
from typing import Literal, cast
import datetime






T = TypeVar("T", bound="WindowFailed")



@_attrs_define
class WindowFailed:
    """ A processing attempt of a 30 s window failed; it is retried until the attempts run out.

        Attributes:
            event_id (str): Stable id: a re-delivered event has the same id (drop duplicates by it)
            user_id (str): The wearer (the token's `sub`)
            session_id (str): The capture session
            occurred_at (datetime.datetime): When the outcome was committed (UTC)
            seq (int): Position in the owner's stream (the SSE `id`; send it back as Last-Event-ID)
            window_index (int):
            segment_id (str):
            attempt (int):
            frame_count (int):
            error_type (str): The failing step's error class (no message: it may quote content)
            type_ (Literal['WindowFailed'] | Unset):  Default: 'WindowFailed'.
     """

    event_id: str
    user_id: str
    session_id: str
    occurred_at: datetime.datetime
    seq: int
    window_index: int
    segment_id: str
    attempt: int
    frame_count: int
    error_type: str
    type_: Literal['WindowFailed'] | Unset = 'WindowFailed'





    def to_dict(self) -> dict[str, Any]:
        event_id = self.event_id

        user_id = self.user_id

        session_id = self.session_id

        occurred_at = self.occurred_at.isoformat()

        seq = self.seq

        window_index = self.window_index

        segment_id = self.segment_id

        attempt = self.attempt

        frame_count = self.frame_count

        error_type = self.error_type

        type_ = self.type_


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "eventId": event_id,
            "userId": user_id,
            "sessionId": session_id,
            "occurredAt": occurred_at,
            "seq": seq,
            "windowIndex": window_index,
            "segmentId": segment_id,
            "attempt": attempt,
            "frameCount": frame_count,
            "errorType": error_type,
        })
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        event_id = d.pop("eventId")

        user_id = d.pop("userId")

        session_id = d.pop("sessionId")

        occurred_at = datetime.datetime.fromisoformat(d.pop("occurredAt"))




        seq = d.pop("seq")

        window_index = d.pop("windowIndex")

        segment_id = d.pop("segmentId")

        attempt = d.pop("attempt")

        frame_count = d.pop("frameCount")

        error_type = d.pop("errorType")

        type_ = cast(Literal['WindowFailed'] | Unset , d.pop("type", UNSET))
        if type_ != 'WindowFailed'and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'WindowFailed', got '{type_}'")

        window_failed = cls(
            event_id=event_id,
            user_id=user_id,
            session_id=session_id,
            occurred_at=occurred_at,
            seq=seq,
            window_index=window_index,
            segment_id=segment_id,
            attempt=attempt,
            frame_count=frame_count,
            error_type=error_type,
            type_=type_,
        )

        return window_failed

