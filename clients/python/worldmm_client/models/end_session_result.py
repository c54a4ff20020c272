from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="EndSessionResult")



@_attrs_define
class EndSessionResult:
    """ 
        Attributes:
            session_id (str):
            ended_at (str):
            closed_windows (list[int]):
     """

    session_id: str
    ended_at: str
    closed_windows: list[int]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        session_id = self.session_id

        ended_at = self.ended_at

        closed_windows = self.closed_windows




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "sessionId": session_id,
            "endedAt": ended_at,
            "closedWindows": closed_windows,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        session_id = d.pop("sessionId")

        ended_at = d.pop("endedAt")

        closed_windows = cast(list[int], d.pop("closedWindows"))


        end_session_result = cls(
            session_id=session_id,
            ended_at=ended_at,
            closed_windows=closed_windows,
        )


        end_session_result.additional_properties = d
        return end_session_result

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
