from enum import StrEnum

class PresignAudioRequestContenttype(StrEnum):
    AUDIOWAV = "audio/wav"
    AUDIOWAVE = "audio/wave"
    AUDIOX_WAV = "audio/x-wav"

    def __str__(self) -> str:
        return str(self.value)
