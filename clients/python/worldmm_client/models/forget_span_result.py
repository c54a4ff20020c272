from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.forget_span_result_deleted import ForgetSpanResultDeleted





T = TypeVar("T", bound="ForgetSpanResult")



@_attrs_define
class ForgetSpanResult:
    """ What a span (or session) erase deleted: items per store, no content. Another call finds nothing more.

        Attributes:
            start (None | str): The span's `from` (absent for a session)
            end (None | str): The span's `to` (absent for a session)
            session_id (None | str):
            deleted (ForgetSpanResultDeleted): Items erased per store: objects, postgres.windows, postgres.summaries,
                postgres.summaries_invalidated, postgres.triples, postgres.entities, postgres.visual_embeddings,
                postgres.memory_history, postgres.semantic_restored, postgres.voices, redis.keys, dynamodb.capture_windows
     """

    start: None | str
    end: None | str
    session_id: None | str
    deleted: ForgetSpanResultDeleted
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.forget_span_result_deleted import ForgetSpanResultDeleted # noqa: PLC0415
        start: None | str
        start = self.start

        end: None | str
        end = self.end

        session_id: None | str
        session_id = self.session_id

        deleted = self.deleted.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "start": start,
            "end": end,
            "session_id": session_id,
            "deleted": deleted,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.forget_span_result_deleted import ForgetSpanResultDeleted # noqa: PLC0415
        d = dict(src_dict)
        def _parse_start(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        start = _parse_start(d.pop("start"))


        def _parse_end(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        end = _parse_end(d.pop("end"))


        def _parse_session_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        session_id = _parse_session_id(d.pop("session_id"))


        deleted = ForgetSpanResultDeleted.from_dict(d.pop("deleted"))




        forget_span_result = cls(
            start=start,
            end=end,
            session_id=session_id,
            deleted=deleted,
        )


        forget_span_result.additional_properties = d
        return forget_span_result

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
