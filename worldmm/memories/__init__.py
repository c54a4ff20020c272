"""The memories a wearer can see: the timeline, one memory, a session's ingest status."""
