from enum import StrEnum

class EntityCorrectedAction(StrEnum):
    MERGE = "merge"
    RENAME = "rename"

    def __str__(self) -> str:
        return str(self.value)
