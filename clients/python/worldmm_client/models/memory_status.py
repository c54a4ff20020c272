from enum import StrEnum

class MemoryStatus(StrEnum):
    COMPLETE = "complete"
    FAILED = "failed"
    PENDING = "pending"

    def __str__(self) -> str:
        return str(self.value)
