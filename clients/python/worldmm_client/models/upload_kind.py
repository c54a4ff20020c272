from enum import StrEnum

class UploadKind(StrEnum):
    AUDIO = "audio"
    FRAME = "frame"

    def __str__(self) -> str:
        return str(self.value)
