from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.memory_caption_source_type_0 import MemoryCaptionSourceType0
from ..models.memory_status import MemoryStatus
from typing import cast






T = TypeVar("T", bound="Memory")



@_attrs_define
class Memory:
    """ One remembered span: a 30 s window (`duration_seconds` 30) or a summary of 180, 600 or 3600 s.

        Attributes:
            id (str):
            start_time (str):
            end_time (str):
            duration_seconds (int):
            caption (None | str):
            caption_source (MemoryCaptionSourceType0 | None): a window's: heard (from the transcript alone), tidied (the
                transcript tidied by a model) or seen (from frames); a summary's: written (a model wrote it, every detail
                checked against the span) or extractive (its windows' own lines)
            session_id (str):
            window_index (int):
            status (MemoryStatus):
     """

    id: str
    start_time: str
    end_time: str
    duration_seconds: int
    caption: None | str
    caption_source: MemoryCaptionSourceType0 | None
    session_id: str
    window_index: int
    status: MemoryStatus
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        start_time = self.start_time

        end_time = self.end_time

        duration_seconds = self.duration_seconds

        caption: None | str
        caption = self.caption

        caption_source: None | str
        if isinstance(self.caption_source, MemoryCaptionSourceType0):
            caption_source = self.caption_source.value
        else:
            caption_source = self.caption_source

        session_id = self.session_id

        window_index = self.window_index

        status = self.status.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "start_time": start_time,
            "end_time": end_time,
            "duration_seconds": duration_seconds,
            "caption": caption,
            "caption_source": caption_source,
            "session_id": session_id,
            "window_index": window_index,
            "status": status,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        start_time = d.pop("start_time")

        end_time = d.pop("end_time")

        duration_seconds = d.pop("duration_seconds")

        def _parse_caption(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        caption = _parse_caption(d.pop("caption"))


        def _parse_caption_source(data: object) -> MemoryCaptionSourceType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                caption_source_type_0 = MemoryCaptionSourceType0(data)



                return caption_source_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MemoryCaptionSourceType0 | None, data)

        caption_source = _parse_caption_source(d.pop("caption_source"))


        session_id = d.pop("session_id")

        window_index = d.pop("window_index")

        status = MemoryStatus(d.pop("status"))




        memory = cls(
            id=id,
            start_time=start_time,
            end_time=end_time,
            duration_seconds=duration_seconds,
            caption=caption,
            caption_source=caption_source,
            session_id=session_id,
            window_index=window_index,
            status=status,
        )


        memory.additional_properties = d
        return memory

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
