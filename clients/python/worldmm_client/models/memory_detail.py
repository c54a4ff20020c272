from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.memory_detail_caption_source_type_0 import MemoryDetailCaptionSourceType0
from ..models.memory_detail_status import MemoryDetailStatus
from typing import cast

if TYPE_CHECKING:
  from ..models.media_link import MediaLink
  from ..models.memory_entity import MemoryEntity
  from ..models.memory_triple import MemoryTriple





T = TypeVar("T", bound="MemoryDetail")



@_attrs_define
class MemoryDetail:
    """ One memory with its transcript, the entities and facts recorded from it, and (a window whose objects
    the store can presign) URLs of its frames and audio.

        Attributes:
            id (str):
            start_time (str):
            end_time (str):
            duration_seconds (int):
            caption (None | str):
            caption_source (MemoryDetailCaptionSourceType0 | None): a window's: heard (from the transcript alone), tidied
                (the transcript tidied by a model) or seen (from frames); a summary's: written (a model wrote it, every detail
                checked against the span) or extractive (its windows' own lines)
            session_id (str):
            window_index (int):
            status (MemoryDetailStatus):
            transcript (None | str):
            entities (list[MemoryEntity]):
            triples (list[MemoryTriple]):
            media (list[MediaLink]):
     """

    id: str
    start_time: str
    end_time: str
    duration_seconds: int
    caption: None | str
    caption_source: MemoryDetailCaptionSourceType0 | None
    session_id: str
    window_index: int
    status: MemoryDetailStatus
    transcript: None | str
    entities: list[MemoryEntity]
    triples: list[MemoryTriple]
    media: list[MediaLink]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.media_link import MediaLink # noqa: PLC0415
        from ..models.memory_entity import MemoryEntity # noqa: PLC0415
        from ..models.memory_triple import MemoryTriple # noqa: PLC0415
        id = self.id

        start_time = self.start_time

        end_time = self.end_time

        duration_seconds = self.duration_seconds

        caption: None | str
        caption = self.caption

        caption_source: None | str
        if isinstance(self.caption_source, MemoryDetailCaptionSourceType0):
            caption_source = self.caption_source.value
        else:
            caption_source = self.caption_source

        session_id = self.session_id

        window_index = self.window_index

        status = self.status.value

        transcript: None | str
        transcript = self.transcript

        entities = []
        for entities_item_data in self.entities:
            entities_item = entities_item_data.to_dict()
            entities.append(entities_item)



        triples = []
        for triples_item_data in self.triples:
            triples_item = triples_item_data.to_dict()
            triples.append(triples_item)



        media = []
        for media_item_data in self.media:
            media_item = media_item_data.to_dict()
            media.append(media_item)




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
            "transcript": transcript,
            "entities": entities,
            "triples": triples,
            "media": media,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.media_link import MediaLink # noqa: PLC0415
        from ..models.memory_entity import MemoryEntity # noqa: PLC0415
        from ..models.memory_triple import MemoryTriple # noqa: PLC0415
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


        def _parse_caption_source(data: object) -> MemoryDetailCaptionSourceType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                caption_source_type_0 = MemoryDetailCaptionSourceType0(data)



                return caption_source_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MemoryDetailCaptionSourceType0 | None, data)

        caption_source = _parse_caption_source(d.pop("caption_source"))


        session_id = d.pop("session_id")

        window_index = d.pop("window_index")

        status = MemoryDetailStatus(d.pop("status"))




        def _parse_transcript(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        transcript = _parse_transcript(d.pop("transcript"))


        entities = []
        _entities = d.pop("entities")
        for entities_item_data in (_entities):
            entities_item = MemoryEntity.from_dict(entities_item_data)



            entities.append(entities_item)


        triples = []
        _triples = d.pop("triples")
        for triples_item_data in (_triples):
            triples_item = MemoryTriple.from_dict(triples_item_data)



            triples.append(triples_item)


        media = []
        _media = d.pop("media")
        for media_item_data in (_media):
            media_item = MediaLink.from_dict(media_item_data)



            media.append(media_item)


        memory_detail = cls(
            id=id,
            start_time=start_time,
            end_time=end_time,
            duration_seconds=duration_seconds,
            caption=caption,
            caption_source=caption_source,
            session_id=session_id,
            window_index=window_index,
            status=status,
            transcript=transcript,
            entities=entities,
            triples=triples,
            media=media,
        )


        memory_detail.additional_properties = d
        return memory_detail

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
