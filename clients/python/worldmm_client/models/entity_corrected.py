from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.entity_corrected_action import EntityCorrectedAction
from typing import cast






T = TypeVar("T", bound="EntityCorrected")



@_attrs_define
class EntityCorrected:
    """ The entity after a correction: the canonical entity it now is, its name, and every form that names it.

        Attributes:
            entity_id (str): The entity the request named (an alias row or a canonical entity)
            canonical_id (str): The canonical entity it is now: itself, or the one it was merged into
            name (str):
            action (EntityCorrectedAction):
            aliases (list[str]): Every surface form that names the canonical entity, oldest first
     """

    entity_id: str
    canonical_id: str
    name: str
    action: EntityCorrectedAction
    aliases: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        entity_id = self.entity_id

        canonical_id = self.canonical_id

        name = self.name

        action = self.action.value

        aliases = self.aliases




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "entity_id": entity_id,
            "canonical_id": canonical_id,
            "name": name,
            "action": action,
            "aliases": aliases,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        entity_id = d.pop("entity_id")

        canonical_id = d.pop("canonical_id")

        name = d.pop("name")

        action = EntityCorrectedAction(d.pop("action"))




        aliases = cast(list[str], d.pop("aliases"))


        entity_corrected = cls(
            entity_id=entity_id,
            canonical_id=canonical_id,
            name=name,
            action=action,
            aliases=aliases,
        )


        entity_corrected.additional_properties = d
        return entity_corrected

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
