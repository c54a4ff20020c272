from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="SessionCounts")



@_attrs_define
class SessionCounts:
    """ 
        Attributes:
            pending (int):
            complete (int):
            failed (int):
            waiting_for_gpu (int):
     """

    pending: int
    complete: int
    failed: int
    waiting_for_gpu: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        pending = self.pending

        complete = self.complete

        failed = self.failed

        waiting_for_gpu = self.waiting_for_gpu


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "pending": pending,
            "complete": complete,
            "failed": failed,
            "waiting_for_gpu": waiting_for_gpu,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        pending = d.pop("pending")

        complete = d.pop("complete")

        failed = d.pop("failed")

        waiting_for_gpu = d.pop("waiting_for_gpu")

        session_counts = cls(
            pending=pending,
            complete=complete,
            failed=failed,
            waiting_for_gpu=waiting_for_gpu,
        )


        session_counts.additional_properties = d
        return session_counts

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
