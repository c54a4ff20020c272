"""The memories a wearer sees and controls: the timeline, one memory, a session's ingest status, corrections
of the entities they name, and forgetting a span of them."""
