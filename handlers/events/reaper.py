"""OrphanReaperFunction (EventBridge rate): re-invokes windows and summaries left pending or failed too long."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from worldmm.ingest.reaper import reap
from worldmm.observability import instrument
from worldmm.services import get_services

logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Scheduled entry point: `{reaped: N, failed: M}` (M: windows whose invoke was refused). With database cells
    it also prunes the cells' records of users moved out that no function can need any more (logged)."""
    services = get_services()
    reports = [reap(cell) for cell in services.every_cell()]  # one sweep per database cell
    services.placement.prune_departures()
    return {"reaped": sum(len(r.invoked) for r in reports), "failed": sum(len(r.failed) for r in reports)}
