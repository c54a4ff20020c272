from enum import StrEnum

class SessionWindowStatus(StrEnum):
    COMPLETE = "complete"
    FAILED = "failed"
    PENDING = "pending"
    WAITING_FOR_GPU = "waiting_for_gpu"

    def __str__(self) -> str:
        return str(self.value)
