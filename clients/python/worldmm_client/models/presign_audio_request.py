from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.presign_audio_request_contenttype import PresignAudioRequestContenttype
from ..types import UNSET, Unset






T = TypeVar("T", bound="PresignAudioRequest")



@_attrs_define
class PresignAudioRequest:
    """ Ask for the PUT URL of one window's audio chunk.

        Attributes:
            window_index (int):
            content_type (PresignAudioRequestContenttype | Unset):  Default: PresignAudioRequestContenttype.AUDIOWAV.
     """

    window_index: int
    content_type: PresignAudioRequestContenttype | Unset = PresignAudioRequestContenttype.AUDIOWAV





    def to_dict(self) -> dict[str, Any]:
        window_index = self.window_index

        content_type: str | Unset = UNSET
        if not isinstance(self.content_type, Unset):
            content_type = self.content_type.value



        field_dict: dict[str, Any] = {}

        field_dict.update({
            "windowIndex": window_index,
        })
        if content_type is not UNSET:
            field_dict["contentType"] = content_type

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        window_index = d.pop("windowIndex")

        _content_type = d.pop("contentType", UNSET)
        content_type: PresignAudioRequestContenttype | Unset
        if isinstance(_content_type,  Unset):
            content_type = UNSET
        else:
            content_type = PresignAudioRequestContenttype(_content_type)




        presign_audio_request = cls(
            window_index=window_index,
            content_type=content_type,
        )

        return presign_audio_request

