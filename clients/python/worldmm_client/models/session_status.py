from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.session_counts import SessionCounts
  from ..models.session_window import SessionWindow





T = TypeVar("T", bound="SessionStatus")



@_attrs_define
class SessionStatus:
    """ A capture session's ingest status: every window it has (or its catalog announced), and the counts.

        Attributes:
            session_id (str):
            ended (bool):
            counts (SessionCounts):
            windows (list[SessionWindow]):
     """

    session_id: str
    ended: bool
    counts: SessionCounts
    windows: list[SessionWindow]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.session_counts import SessionCounts # noqa: PLC0415
        from ..models.session_window import SessionWindow # noqa: PLC0415
        session_id = self.session_id

        ended = self.ended

        counts = self.counts.to_dict()

        windows = []
        for windows_item_data in self.windows:
            windows_item = windows_item_data.to_dict()
            windows.append(windows_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "session_id": session_id,
            "ended": ended,
            "counts": counts,
            "windows": windows,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_counts import SessionCounts # noqa: PLC0415
        from ..models.session_window import SessionWindow # noqa: PLC0415
        d = dict(src_dict)
        session_id = d.pop("session_id")

        ended = d.pop("ended")

        counts = SessionCounts.from_dict(d.pop("counts"))




        windows = []
        _windows = d.pop("windows")
        for windows_item_data in (_windows):
            windows_item = SessionWindow.from_dict(windows_item_data)



            windows.append(windows_item)


        session_status = cls(
            session_id=session_id,
            ended=ended,
            counts=counts,
            windows=windows,
        )


        session_status.additional_properties = d
        return session_status

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
