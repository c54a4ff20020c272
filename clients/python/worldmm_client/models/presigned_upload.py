from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.upload_kind import UploadKind
from typing import cast

if TYPE_CHECKING:
  from ..models.presigned_upload_fields import PresignedUploadFields
  from ..models.presigned_upload_headers import PresignedUploadHeaders





T = TypeVar("T", bound="PresignedUpload")



@_attrs_define
class PresignedUpload:
    """ One upload, as a browser-style S3 POST: a multipart/form-data POST to `url` with every entry of `fields`
    as a form field, then the object as the last part, named `file`. The bucket (or the local gateway) refuses
    a body longer than `maxBytes` or of another content type. `headers` stays for older clients and is empty
    (the form carries the content type).

        Attributes:
            kind (UploadKind):
            index (int | None):
            key (str):
            url (str):
            method (str):  Default: 'POST'.
            headers (PresignedUploadHeaders):
            fields (PresignedUploadFields): Form fields to send, in order, before `file`
            max_bytes (int): The largest object this upload takes (bytes)
     """

    kind: UploadKind
    index: int | None
    key: str
    url: str
    headers: PresignedUploadHeaders
    fields: PresignedUploadFields
    max_bytes: int
    method: str = 'POST'
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.presigned_upload_fields import PresignedUploadFields # noqa: PLC0415
        from ..models.presigned_upload_headers import PresignedUploadHeaders # noqa: PLC0415
        kind = self.kind.value

        index: int | None
        index = self.index

        key = self.key

        url = self.url

        method = self.method

        headers = self.headers.to_dict()

        fields = self.fields.to_dict()

        max_bytes = self.max_bytes


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "kind": kind,
            "index": index,
            "key": key,
            "url": url,
            "method": method,
            "headers": headers,
            "fields": fields,
            "maxBytes": max_bytes,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.presigned_upload_fields import PresignedUploadFields # noqa: PLC0415
        from ..models.presigned_upload_headers import PresignedUploadHeaders # noqa: PLC0415
        d = dict(src_dict)
        kind = UploadKind(d.pop("kind"))




        def _parse_index(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        index = _parse_index(d.pop("index"))


        key = d.pop("key")

        url = d.pop("url")

        method = d.pop("method")

        headers = PresignedUploadHeaders.from_dict(d.pop("headers"))




        fields = PresignedUploadFields.from_dict(d.pop("fields"))




        max_bytes = d.pop("maxBytes")

        presigned_upload = cls(
            kind=kind,
            index=index,
            key=key,
            url=url,
            method=method,
            headers=headers,
            fields=fields,
            max_bytes=max_bytes,
        )


        presigned_upload.additional_properties = d
        return presigned_upload

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
