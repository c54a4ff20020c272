"""The orphan reaper: re-invokes windows left `pending`/`failed` too long (spec 000 leaves them ownerless),
and for each summary left pending/failed too long one complete window of its span: an already-complete
window re-checks its parents' closure, so the summary is resumed by the ingest function's own code.

It reads across users only through SECURITY DEFINER functions (`worldmm_stale_pending_windows`,
`worldmm_stale_summary_windows`), which return windows' keys and nothing else of theirs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from aws_lambda_powertools import Logger
from sqlalchemy import and_, or_, select

from worldmm.config import Profile
from worldmm.db.models import ProcessingStatus, Segment
from worldmm.db.queries import reaper as queries
from worldmm.ingest.app_events import EventPorts
from worldmm.ingest.claim_owner import owner_gone
from worldmm.ingest.events import IngestWindowEvent

if TYPE_CHECKING:
    from worldmm.ingest.invoker.port import FunctionInvoker

logger = Logger(child=True)


class ReaperPorts(EventPorts, Protocol):
    """The ports the reaper uses (the composition root's `Services` is one)."""

    @property
    def invoker(self) -> FunctionInvoker: ...


MAX_ERROR_CHARS = 500


class ReapedWindow(TypedDict):
    """A window the reaper found (a plain dict: the CLI prints it as JSON)."""

    user_id: str
    session_id: str
    window_index: int
    frame_count: int


class Outcome(StrEnum):
    """What became of one reaped window."""

    RECOVERED = "recovered"  # ran here (local profile) and is complete, its summaries with it
    INVOKED = "invoked"  # handed to the ingest function asynchronously (aws profile): not yet known
    IN_PROGRESS = "in_progress"  # a live process holds its claim
    FAILED = "failed"  # could not be invoked, or ran and is failed or still pending


class ReapedOutcome(ReapedWindow):
    """A reaped window with what became of it (`invoked`: the ingest function accepted the invocation)."""

    outcome: str
    error: str | None
    invoked: bool


@dataclass
class ReapReport:
    """Every window the reaper touched and what became of it."""

    windows: list[ReapedOutcome] = field(default_factory=list)
    events: dict[str, int] = field(default_factory=dict)  # app events recorded and published (app_events)

    @property
    def invoked(self) -> list[ReapedOutcome]:
        """The windows handed to the ingest function (whatever they did then)."""
        return [w for w in self.windows if w["invoked"]]

    @property
    def failed(self) -> list[ReapedOutcome]:
        return [w for w in self.windows if w["outcome"] == Outcome.FAILED]

    def as_dict(self) -> dict[str, Any]:
        counts = {o.value: sum(w["outcome"] == o for w in self.windows) for o in Outcome}
        return {**counts, "windows": self.windows}


def stale_windows(
    services: ReaperPorts, older_than_s: int, max_rows: int, *, summaries: bool = False
) -> list[ReapedWindow]:
    """Non-complete 30 s windows not touched for `older_than_s` seconds, oldest first, of every user
    (`summaries`: a complete window under each summary left pending or failed that long)."""
    read = queries.stale_summary_windows if summaries else queries.stale_pending_windows
    with services.db.unit_of_work(None) as session:
        return [_window(r) for r in read(session, older_than_s, max_rows)]


def orphaned_claims(services: ReaperPorts, max_rows: int) -> list[ReapedWindow]:
    """Local profile: windows claimed by a process of this machine that is gone, whatever their age."""
    with services.db.unit_of_work(None) as session:
        rows = queries.claimed_windows(session, max_rows)
    return [_window(r) for r in rows if owner_gone(r.claim_owner)]


def _window(row: Any) -> ReapedWindow:
    return ReapedWindow(
        user_id=row.user_id, session_id=row.session_id, window_index=row.window_index, frame_count=row.frame_count
    )


def _key(window: ReapedWindow) -> tuple[str, str, int]:
    return window["user_id"], window["session_id"], window["window_index"]


def _settle(services: ReaperPorts, window: ReapedWindow) -> tuple[Outcome, str | None]:
    """After a synchronous (local) run: the window's state, and any summary of its session that failed or
    that nobody is producing any more."""
    settings = services.ingest_settings
    with services.db.unit_of_work(window["user_id"]) as session:
        rows = session.execute(
            select(
                Segment.duration_seconds,
                Segment.processing_status,
                Segment.claim_token,
                Segment.claim_owner,
                Segment.error,
            ).where(
                Segment.user_id == window["user_id"],
                Segment.session_id == window["session_id"],
                or_(
                    and_(
                        Segment.duration_seconds == settings.window_seconds,
                        Segment.window_index == window["window_index"],
                    ),
                    and_(
                        Segment.duration_seconds != settings.window_seconds,
                        Segment.processing_status != ProcessingStatus.COMPLETE,
                    ),
                ),
            )
        ).all()
    own = [r for r in rows if r.duration_seconds == settings.window_seconds]
    if not own:
        return Outcome.FAILED, "no segment row after the run (its frames are gone)"
    status, token, error = own[0].processing_status, own[0].claim_token, own[0].error
    if status == ProcessingStatus.FAILED:
        return Outcome.FAILED, error or "failed"
    if status != ProcessingStatus.COMPLETE:
        if token is not None:
            return Outcome.IN_PROGRESS, None
        return Outcome.FAILED, error or "left pending (GPU unavailable or no frames)"
    for summary in (r for r in rows if r.duration_seconds != settings.window_seconds):
        if summary.processing_status == ProcessingStatus.FAILED:
            return Outcome.FAILED, f"{summary.duration_seconds} s summary failed: {summary.error or ''}"
        if summary.claim_owner is None or owner_gone(summary.claim_owner):  # nobody is producing it
            return Outcome.FAILED, f"{summary.duration_seconds} s summary left pending"
    return Outcome.RECOVERED, None


def reap(services: ReaperPorts, older_than_s: int | None = None) -> ReapReport:
    """Re-invoke IngestWindowFunction for every stale window (and, locally, every window whose claiming
    process is gone); report what became of each. On the local profile the invocation runs here, so the
    report says whether the window is now complete and why not."""
    settings = services.ingest_settings
    age = settings.reaper_pending_after_s if older_than_s is None else older_than_s
    local = settings.worldmm_profile == Profile.LOCAL
    windows: list[ReapedWindow] = []
    seen: set[tuple[str, str, int]] = set()
    candidates = [
        *(orphaned_claims(services, settings.reaper_max_windows) if local else []),
        *stale_windows(services, age, settings.reaper_max_windows),
        *stale_windows(services, age, settings.reaper_max_windows, summaries=True),
    ]
    for window in candidates:
        if _key(window) not in seen:
            seen.add(_key(window))
            windows.append(window)
    report = ReapReport()
    for window in windows:
        payload = IngestWindowEvent(
            sessionId=window["session_id"],
            userId=window["user_id"],
            windowIndex=window["window_index"],
            frameCount=window["frame_count"],
        ).model_dump()
        outcome, error, invoked = Outcome.INVOKED, None, True
        try:
            services.invoker.invoke_async(settings.ingest_function_name, payload)
        except Exception as exc:
            # aws: the invoke was refused; local: the handler ran here and raised
            outcome, error, invoked = Outcome.FAILED, f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS], local
            logger.warning("reaper_invoke_failed", extra={"session_id": window["session_id"], "error": str(exc)})
        if local and outcome == Outcome.INVOKED:
            outcome, error = _settle(services, window)
        elif local and error is not None:
            # the handler ran here and raised: the row's own error (if it got that far) says more
            settled, row_error = _settle(services, window)
            error = row_error if settled == Outcome.FAILED and row_error else error
        report.windows.append(ReapedOutcome(**window, outcome=outcome.value, error=error, invoked=invoked))
    report.events = _recover_events(services)
    logger.info(
        "reaper_completed",
        extra={"reaped": len(report.windows), "failed": len(report.failed), "older_than_s": age, **report.events},
    )
    return report


def _recover_events(services: ReaperPorts) -> dict[str, int]:
    """App events a crash or a publisher outage left behind (worldmm.ingest.app_events); never raises."""
    from worldmm.ingest.app_events import recover_events

    try:
        return recover_events(services)
    except Exception as exc:
        logger.warning("events_recovery_failed", extra={"error_type": type(exc).__name__, "error": str(exc)})
        return {"sessions_recorded": 0, "published": 0}


def reap_orphans(services: ReaperPorts, older_than_s: int | None = None) -> list[ReapedWindow]:
    """Re-invoke IngestWindowFunction for every stale window; returns the windows invoked."""
    return [
        ReapedWindow(
            user_id=w["user_id"],
            session_id=w["session_id"],
            window_index=w["window_index"],
            frame_count=w["frame_count"],
        )
        for w in reap(services, older_than_s).invoked
    ]
