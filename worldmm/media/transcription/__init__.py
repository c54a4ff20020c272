"""The transcriber port and its providers."""
