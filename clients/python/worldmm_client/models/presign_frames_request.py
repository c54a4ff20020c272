from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.presign_frames_request_contenttype import PresignFramesRequestContenttype
from ..types import UNSET, Unset






T = TypeVar("T", bound="PresignFramesRequest")



@_attrs_define
class PresignFramesRequest:
    """ Ask for PUT URLs for frames `start .. start+count-1` of one window (the service checks the window's
    bounds, which come from settings; the OpenAPI document states them). A window holds frames 0..15: start + count past
    that is a 400.

        Attributes:
            window_index (int):
            count (int):
            start (int | Unset):  Default: 0.
            content_type (PresignFramesRequestContenttype | Unset):  Default: PresignFramesRequestContenttype.IMAGEJPEG.
     """

    window_index: int
    count: int
    start: int | Unset = 0
    content_type: PresignFramesRequestContenttype | Unset = PresignFramesRequestContenttype.IMAGEJPEG





    def to_dict(self) -> dict[str, Any]:
        window_index = self.window_index

        count = self.count

        start = self.start

        content_type: str | Unset = UNSET
        if not isinstance(self.content_type, Unset):
            content_type = self.content_type.value



        field_dict: dict[str, Any] = {}

        field_dict.update({
            "windowIndex": window_index,
            "count": count,
        })
        if start is not UNSET:
            field_dict["start"] = start
        if content_type is not UNSET:
            field_dict["contentType"] = content_type

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        window_index = d.pop("windowIndex")

        count = d.pop("count")

        start = d.pop("start", UNSET)

        _content_type = d.pop("contentType", UNSET)
        content_type: PresignFramesRequestContenttype | Unset
        if isinstance(_content_type,  Unset):
            content_type = UNSET
        else:
            content_type = PresignFramesRequestContenttype(_content_type)




        presign_frames_request = cls(
            window_index=window_index,
            count=count,
            start=start,
            content_type=content_type,
        )

        return presign_frames_request

