from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="StartSessionResult")



@_attrs_define
class StartSessionResult:
    """ 
        Attributes:
            session_id (str):
            created_at (str):
            window_seconds (int):
            expected_frames (int):
     """

    session_id: str
    created_at: str
    window_seconds: int
    expected_frames: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        session_id = self.session_id

        created_at = self.created_at

        window_seconds = self.window_seconds

        expected_frames = self.expected_frames


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "sessionId": session_id,
            "createdAt": created_at,
            "windowSeconds": window_seconds,
            "expectedFrames": expected_frames,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        session_id = d.pop("sessionId")

        created_at = d.pop("createdAt")

        window_seconds = d.pop("windowSeconds")

        expected_frames = d.pop("expectedFrames")

        start_session_result = cls(
            session_id=session_id,
            created_at=created_at,
            window_seconds=window_seconds,
            expected_frames=expected_frames,
        )


        start_session_result.additional_properties = d
        return start_session_result

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
