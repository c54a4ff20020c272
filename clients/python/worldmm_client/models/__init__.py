""" Contains all the data models used in inputs/outputs """

from .chat_message import ChatMessage
from .chat_message_role import ChatMessageRole
from .chat_request import ChatRequest
from .chat_response import ChatResponse
from .chat_summary import ChatSummary
from .chats_page import ChatsPage
from .end_session_result import EndSessionResult
from .entity_corrected import EntityCorrected
from .entity_corrected_action import EntityCorrectedAction
from .entity_correction_request import EntityCorrectionRequest
from .error_body import ErrorBody
from .field_error import FieldError
from .forget_span_result import ForgetSpanResult
from .forget_span_result_deleted import ForgetSpanResultDeleted
from .list_chats_request import ListChatsRequest
from .media_link import MediaLink
from .memories_list_scale import MemoriesListScale
from .memories_page import MemoriesPage
from .memory import Memory
from .memory_caption_source_type_0 import MemoryCaptionSourceType0
from .memory_detail import MemoryDetail
from .memory_detail_caption_source_type_0 import MemoryDetailCaptionSourceType0
from .memory_detail_status import MemoryDetailStatus
from .memory_entity import MemoryEntity
from .memory_status import MemoryStatus
from .memory_triple import MemoryTriple
from .memory_triple_memory_type import MemoryTripleMemoryType
from .messages_page import MessagesPage
from .presign_audio_request import PresignAudioRequest
from .presign_audio_request_contenttype import PresignAudioRequestContenttype
from .presign_frames_request import PresignFramesRequest
from .presign_frames_request_contenttype import PresignFramesRequestContenttype
from .presign_result import PresignResult
from .presigned_upload import PresignedUpload
from .presigned_upload_fields import PresignedUploadFields
from .presigned_upload_headers import PresignedUploadHeaders
from .session_counts import SessionCounts
from .session_processed import SessionProcessed
from .session_status import SessionStatus
from .session_window import SessionWindow
from .session_window_status import SessionWindowStatus
from .start_session_result import StartSessionResult
from .upload_kind import UploadKind
from .verbose_chat_response import VerboseChatResponse
from .verbose_chat_response_trace_type_0 import VerboseChatResponseTraceType0
from .window_failed import WindowFailed
from .window_processed import WindowProcessed

__all__ = (
    "ChatMessage",
    "ChatMessageRole",
    "ChatRequest",
    "ChatResponse",
    "ChatsPage",
    "ChatSummary",
    "EndSessionResult",
    "EntityCorrected",
    "EntityCorrectedAction",
    "EntityCorrectionRequest",
    "ErrorBody",
    "FieldError",
    "ForgetSpanResult",
    "ForgetSpanResultDeleted",
    "ListChatsRequest",
    "MediaLink",
    "MemoriesListScale",
    "MemoriesPage",
    "Memory",
    "MemoryCaptionSourceType0",
    "MemoryDetail",
    "MemoryDetailCaptionSourceType0",
    "MemoryDetailStatus",
    "MemoryEntity",
    "MemoryStatus",
    "MemoryTriple",
    "MemoryTripleMemoryType",
    "MessagesPage",
    "PresignAudioRequest",
    "PresignAudioRequestContenttype",
    "PresignedUpload",
    "PresignedUploadFields",
    "PresignedUploadHeaders",
    "PresignFramesRequest",
    "PresignFramesRequestContenttype",
    "PresignResult",
    "SessionCounts",
    "SessionProcessed",
    "SessionStatus",
    "SessionWindow",
    "SessionWindowStatus",
    "StartSessionResult",
    "UploadKind",
    "VerboseChatResponse",
    "VerboseChatResponseTraceType0",
    "WindowFailed",
    "WindowProcessed",
)
