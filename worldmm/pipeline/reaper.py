"""The orphan reaper: re-invokes windows left `pending`/`failed` too long (spec 000 leaves them ownerless),
and for each summary left pending/failed too long one complete window of its span: an already-complete
window re-checks its parents' closure, so the summary is resumed by the ingest function's own code.

It reads across users only through SECURITY DEFINER functions (`worldmm_stale_pending_windows`,
`worldmm_stale_summary_windows`), which return windows' keys and nothing else of theirs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypedDict

from aws_lambda_powertools import Logger
from sqlalchemy import text

from worldmm.db.ports import DatabasePorts
from worldmm.pipeline.events import IngestWindowEvent

if TYPE_CHECKING:
    from worldmm.pipeline.invoker import FunctionInvoker

logger = Logger(service="worldmm")


class ReaperPorts(DatabasePorts, Protocol):
    """The ports the reaper uses (the composition root's `Services` is one)."""

    @property
    def invoker(self) -> FunctionInvoker: ...


STALE_SQL = "SELECT * FROM worldmm_stale_pending_windows(make_interval(secs => :secs), :max_rows)"
STALE_SUMMARIES_SQL = "SELECT * FROM worldmm_stale_summary_windows(make_interval(secs => :secs), :max_rows)"


class ReapedWindow(TypedDict):
    """A window the reaper re-invoked (a plain dict: the CLI prints it as JSON)."""

    user_id: str
    session_id: str
    window_index: int
    frame_count: int


def stale_windows(
    services: ReaperPorts, older_than_s: int, max_rows: int, *, sql: str = STALE_SQL
) -> list[ReapedWindow]:
    """Non-complete 30 s windows not touched for `older_than_s` seconds, oldest first, of every user
    (with STALE_SUMMARIES_SQL: a complete window under each such summary)."""
    with services.db.unit_of_work(None) as session:
        rows = session.execute(text(sql), {"secs": older_than_s, "max_rows": max_rows})
        return [
            ReapedWindow(
                user_id=r.user_id,
                session_id=r.session_id,
                window_index=r.window_index,
                frame_count=r.frame_count,
            )
            for r in rows
        ]


def reap_orphans(services: ReaperPorts, older_than_s: int | None = None) -> list[ReapedWindow]:
    """Re-invoke IngestWindowFunction for every stale window; returns the windows invoked."""
    settings = services.settings
    age = settings.reaper_pending_after_s if older_than_s is None else older_than_s
    reaped: list[ReapedWindow] = []
    windows = stale_windows(services, age, settings.reaper_max_windows)
    seen = {(w["user_id"], w["session_id"], w["window_index"]) for w in windows}
    for window in stale_windows(services, age, settings.reaper_max_windows, sql=STALE_SUMMARIES_SQL):
        if (window["user_id"], window["session_id"], window["window_index"]) not in seen:
            seen.add((window["user_id"], window["session_id"], window["window_index"]))
            windows.append(window)
    for window in windows:
        payload = IngestWindowEvent(
            sessionId=window["session_id"],
            userId=window["user_id"],
            windowIndex=window["window_index"],
            frameCount=window["frame_count"],
        ).model_dump()
        try:
            services.invoker.invoke_async(settings.ingest_function_name, payload)
        except Exception as exc:
            logger.warning(
                "reaper_invoke_failed", extra={"session_id": window["session_id"], "error": str(exc)}
            )
            continue
        reaped.append(window)
    logger.info("reaper_completed", extra={"reaped": len(reaped), "older_than_s": age})
    return reaped
