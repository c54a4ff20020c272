"""Media adapters: the object store, a window's frames and audio, transcription and captioning."""
