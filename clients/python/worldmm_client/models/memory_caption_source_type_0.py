from enum import StrEnum

class MemoryCaptionSourceType0(StrEnum):
    HEARD = "heard"
    SEEN = "seen"
    TIDIED = "tidied"

    def __str__(self) -> str:
        return str(self.value)
