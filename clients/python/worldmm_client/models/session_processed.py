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






T = TypeVar("T", bound="SessionProcessed")



@_attrs_define
class SessionProcessed:
    """ The session ended and every one of its windows is done: complete, or failed for good.

        Attributes:
            event_id (str): Stable id: a re-delivered event has the same id (drop duplicates by it)
            user_id (str): The wearer (the token's `sub`)
            session_id (str): The capture session
            occurred_at (datetime.datetime): When the outcome was committed (UTC)
            seq (int): Position in the owner's stream (the SSE `id`; send it back as Last-Event-ID)
            windows (int):
            complete (int):
            failed (int):
            type_ (Literal['SessionProcessed'] | Unset):  Default: 'SessionProcessed'.
     """

    event_id: str
    user_id: str
    session_id: str
    occurred_at: datetime.datetime
    seq: int
    windows: int
    complete: int
    failed: int
    type_: Literal['SessionProcessed'] | Unset = 'SessionProcessed'





    def to_dict(self) -> dict[str, Any]:
        event_id = self.event_id

        user_id = self.user_id

        session_id = self.session_id

        occurred_at = self.occurred_at.isoformat()

        seq = self.seq

        windows = self.windows

        complete = self.complete

        failed = self.failed

        type_ = self.type_


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "eventId": event_id,
            "userId": user_id,
            "sessionId": session_id,
            "occurredAt": occurred_at,
            "seq": seq,
            "windows": windows,
            "complete": complete,
            "failed": failed,
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

        windows = d.pop("windows")

        complete = d.pop("complete")

        failed = d.pop("failed")

        type_ = cast(Literal['SessionProcessed'] | Unset , d.pop("type", UNSET))
        if type_ != 'SessionProcessed'and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'SessionProcessed', got '{type_}'")

        session_processed = cls(
            event_id=event_id,
            user_id=user_id,
            session_id=session_id,
            occurred_at=occurred_at,
            seq=seq,
            windows=windows,
            complete=complete,
            failed=failed,
            type_=type_,
        )

        return session_processed

