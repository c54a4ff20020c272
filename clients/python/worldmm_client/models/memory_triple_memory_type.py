from enum import StrEnum

class MemoryTripleMemoryType(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"

    def __str__(self) -> str:
        return str(self.value)
