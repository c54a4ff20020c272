from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.presigned_upload import PresignedUpload





T = TypeVar("T", bound="PresignResult")



@_attrs_define
class PresignResult:
    """ 
        Attributes:
            session_id (str):
            window_index (int):
            expires_in (int):
            uploads (list[PresignedUpload]):
     """

    session_id: str
    window_index: int
    expires_in: int
    uploads: list[PresignedUpload]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.presigned_upload import PresignedUpload # noqa: PLC0415
        session_id = self.session_id

        window_index = self.window_index

        expires_in = self.expires_in

        uploads = []
        for uploads_item_data in self.uploads:
            uploads_item = uploads_item_data.to_dict()
            uploads.append(uploads_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "sessionId": session_id,
            "windowIndex": window_index,
            "expiresIn": expires_in,
            "uploads": uploads,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.presigned_upload import PresignedUpload # noqa: PLC0415
        d = dict(src_dict)
        session_id = d.pop("sessionId")

        window_index = d.pop("windowIndex")

        expires_in = d.pop("expiresIn")

        uploads = []
        _uploads = d.pop("uploads")
        for uploads_item_data in (_uploads):
            uploads_item = PresignedUpload.from_dict(uploads_item_data)



            uploads.append(uploads_item)


        presign_result = cls(
            session_id=session_id,
            window_index=window_index,
            expires_in=expires_in,
            uploads=uploads,
        )


        presign_result.additional_properties = d
        return presign_result

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
