from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.memory_triple_memory_type import MemoryTripleMemoryType






T = TypeVar("T", bound="MemoryTriple")



@_attrs_define
class MemoryTriple:
    """ A fact recorded from a memory; `object` is an entity's name or a literal.

        Attributes:
            id (str):
            subject (str):
            predicate (str):
            object_ (str):
            memory_type (MemoryTripleMemoryType):
            valid (bool): False once a later memory invalidated it (semantic facts)
     """

    id: str
    subject: str
    predicate: str
    object_: str
    memory_type: MemoryTripleMemoryType
    valid: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        subject = self.subject

        predicate = self.predicate

        object_ = self.object_

        memory_type = self.memory_type.value

        valid = self.valid


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "subject": subject,
            "predicate": predicate,
            "object": object_,
            "memory_type": memory_type,
            "valid": valid,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        subject = d.pop("subject")

        predicate = d.pop("predicate")

        object_ = d.pop("object")

        memory_type = MemoryTripleMemoryType(d.pop("memory_type"))




        valid = d.pop("valid")

        memory_triple = cls(
            id=id,
            subject=subject,
            predicate=predicate,
            object_=object_,
            memory_type=memory_type,
            valid=valid,
        )


        memory_triple.additional_properties = d
        return memory_triple

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
