from enum import StrEnum

class MemoryDetailCaptionSourceType0(StrEnum):
    EXTRACTIVE = "extractive"
    HEARD = "heard"
    SEEN = "seen"
    TIDIED = "tidied"
    WRITTEN = "written"

    def __str__(self) -> str:
        return str(self.value)
