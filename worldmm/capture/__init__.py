"""Capture: sessions, presigned uploads, 30-second window close → ingest (spec 001 Segment Buffer)."""
