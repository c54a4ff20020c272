"""Two database cells for tests: the run's embedded PostgreSQL and a second one, both migrated to head."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from tests.support.harness import make_settings, truncate_all
from tests.support.ingest import StaticTranscriber, StubVisualEncoder, put_session, put_window
from tests.support.memory import script_memory_models
from worldmm.config import CellSettings, Settings
from worldmm.db.local import LocalDatabase
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.objects import DirectoryObjectStore
from worldmm.media.transcription.port import Transcript, TranscriptSegment
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services

TRANSCRIPT = "Alice: shall we make coffee?"
CONTROL_TABLES = ("worldmm_cell_placements", "worldmm_cell_departures")


def empty_cell(admin_url: str) -> None:
    """Every tenant table and the cells' control tables emptied."""
    truncate_all(admin_url)
    engine = create_engine(admin_url)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(CONTROL_TABLES)}"))
    engine.dispose()


def two_cell_settings(a: LocalDatabase, b: LocalDatabase, root: Path, **overrides: Any) -> Settings:
    cells = [
        CellSettings(id="a", database_url=a.app_url, database_admin_url=a.admin_url),
        CellSettings(id="b", database_url=b.app_url, database_admin_url=b.admin_url),
    ]
    return make_settings(database_cells=cells, worldmm_home=root / "home", **overrides)


def cell_services(settings: Settings, root: Path) -> Services:
    """What a process composes: no database given (each user's cell is resolved), scripted models."""
    llm = script_memory_models(ScriptedLLM())
    llm.script("reasoning_agent", {"action": "ANSWER"}).script("response", {"answer": "With Alice, at home."})
    return Services(
        settings,
        llm=llm,
        embedder=HashEmbedder(settings.embedding_dim),
        store=DirectoryObjectStore(root / "store"),
        transcriber=StaticTranscriber(Transcript(TRANSCRIPT, [TranscriptSegment(0.0, 4.0, TRANSCRIPT)])),
        visual=StubVisualEncoder(settings.visual_embedding_dim),
    )


def record_window(services: Services, user_id: str, session_id: str, index: int) -> str:
    """One window of the user's session uploaded and ingested through the window path, on the user's cell."""
    from worldmm.ingest.events import IngestWindowEvent
    from worldmm.ingest.window import ingest_window

    if index == 0:
        put_session(services.store, session_id, user_id=user_id)
    put_window(services.store, session_id, index, frames=2)
    event = IngestWindowEvent(sessionId=session_id, userId=user_id, windowIndex=index, frameCount=2)
    return ingest_window(services.for_user(user_id), event).status


def rows_of(admin_url: str, user_id: str) -> dict[str, int]:
    """The user's rows per table in one cell (as the owner: what is really there)."""
    engine = create_engine(admin_url)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                text(
                    "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' "
                    "AND column_name = 'user_id' ORDER BY 1"
                )
            ).scalars()
            found = {
                t: conn.execute(text(f'SELECT count(*) FROM "{t}" WHERE user_id = :u'), {"u": user_id}).scalar()
                for t in tables
            }
    finally:
        engine.dispose()
    return {t: int(n or 0) for t, n in found.items() if n}
