from enum import StrEnum

class PresignFramesRequestContenttype(StrEnum):
    IMAGEJPEG = "image/jpeg"

    def __str__(self) -> str:
        return str(self.value)
