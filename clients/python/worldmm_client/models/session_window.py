from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.session_window_status import SessionWindowStatus
from typing import cast






T = TypeVar("T", bound="SessionWindow")



@_attrs_define
class SessionWindow:
    """ One 30 s window of a session and where its ingest stands.

        Attributes:
            window_index (int):
            status (SessionWindowStatus):
            start_time (None | str):
            end_time (None | str):
            memory_id (None | str): The window's memory, once ingest has started on it
     """

    window_index: int
    status: SessionWindowStatus
    start_time: None | str
    end_time: None | str
    memory_id: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        window_index = self.window_index

        status = self.status.value

        start_time: None | str
        start_time = self.start_time

        end_time: None | str
        end_time = self.end_time

        memory_id: None | str
        memory_id = self.memory_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "window_index": window_index,
            "status": status,
            "start_time": start_time,
            "end_time": end_time,
            "memory_id": memory_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        window_index = d.pop("window_index")

        status = SessionWindowStatus(d.pop("status"))




        def _parse_start_time(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        start_time = _parse_start_time(d.pop("start_time"))


        def _parse_end_time(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        end_time = _parse_end_time(d.pop("end_time"))


        def _parse_memory_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        memory_id = _parse_memory_id(d.pop("memory_id"))


        session_window = cls(
            window_index=window_index,
            status=status,
            start_time=start_time,
            end_time=end_time,
            memory_id=memory_id,
        )


        session_window.additional_properties = d
        return session_window

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
