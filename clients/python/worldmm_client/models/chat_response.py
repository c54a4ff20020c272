from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ChatResponse")



@_attrs_define
class ChatResponse:
    """ Response of POST /memories/chat; chat_id is None only when chat is unavailable (GPU starting).

        Attributes:
            answer (str):
            chat_id (None | str):
     """

    answer: str
    chat_id: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        answer = self.answer

        chat_id: None | str
        chat_id = self.chat_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "answer": answer,
            "chat_id": chat_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        answer = d.pop("answer")

        def _parse_chat_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        chat_id = _parse_chat_id(d.pop("chat_id"))


        chat_response = cls(
            answer=answer,
            chat_id=chat_id,
        )


        chat_response.additional_properties = d
        return chat_response

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
