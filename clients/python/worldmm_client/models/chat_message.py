from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.chat_message_role import ChatMessageRole






T = TypeVar("T", bound="ChatMessage")



@_attrs_define
class ChatMessage:
    """ One stored message; `message_id` is a server-generated ULID (sorts by creation).

        Attributes:
            message_id (str):
            chat_id (str):
            role (ChatMessageRole):
            content (str):
            created_at (str):
     """

    message_id: str
    chat_id: str
    role: ChatMessageRole
    content: str
    created_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        message_id = self.message_id

        chat_id = self.chat_id

        role = self.role.value

        content = self.content

        created_at = self.created_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "message_id": message_id,
            "chat_id": chat_id,
            "role": role,
            "content": content,
            "created_at": created_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        message_id = d.pop("message_id")

        chat_id = d.pop("chat_id")

        role = ChatMessageRole(d.pop("role"))




        content = d.pop("content")

        created_at = d.pop("created_at")

        chat_message = cls(
            message_id=message_id,
            chat_id=chat_id,
            role=role,
            content=content,
            created_at=created_at,
        )


        chat_message.additional_properties = d
        return chat_message

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
