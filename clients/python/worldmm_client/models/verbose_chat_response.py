from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.verbose_chat_response_trace_type_0 import VerboseChatResponseTraceType0





T = TypeVar("T", bound="VerboseChatResponse")



@_attrs_define
class VerboseChatResponse:
    """ Response of POST /memories/chat/verbose: the answer plus the agent's trace.

        Attributes:
            answer (str):
            chat_id (None | str):
            trace (None | VerboseChatResponseTraceType0):
     """

    answer: str
    chat_id: None | str
    trace: None | VerboseChatResponseTraceType0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.verbose_chat_response_trace_type_0 import VerboseChatResponseTraceType0 # noqa: PLC0415
        answer = self.answer

        chat_id: None | str
        chat_id = self.chat_id

        trace: dict[str, Any] | None
        if isinstance(self.trace, VerboseChatResponseTraceType0):
            trace = self.trace.to_dict()
        else:
            trace = self.trace


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "answer": answer,
            "chat_id": chat_id,
            "trace": trace,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.verbose_chat_response_trace_type_0 import VerboseChatResponseTraceType0 # noqa: PLC0415
        d = dict(src_dict)
        answer = d.pop("answer")

        def _parse_chat_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        chat_id = _parse_chat_id(d.pop("chat_id"))


        def _parse_trace(data: object) -> None | VerboseChatResponseTraceType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                trace_type_0 = VerboseChatResponseTraceType0.from_dict(data)



                return trace_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | VerboseChatResponseTraceType0, data)

        trace = _parse_trace(d.pop("trace"))


        verbose_chat_response = cls(
            answer=answer,
            chat_id=chat_id,
            trace=trace,
        )


        verbose_chat_response.additional_properties = d
        return verbose_chat_response

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
