from enum import IntEnum

class MemoriesListScale(IntEnum):
    VALUE_30 = 30
    VALUE_180 = 180
    VALUE_600 = 600
    VALUE_3600 = 3600

    def __str__(self) -> str:
        return str(self.value)
