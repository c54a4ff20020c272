"""Issue 64, Low: `worldmm_forget_audit` has row-level security. The application role adds audit rows (forget-me
still writes its own) and reads none of them; before this change it could read every erase of every user."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase
from worldmm.db.queries.forget import FORGET_AUDIT_TABLE
from worldmm.forget_user import forget_user
from worldmm.services import Services

pytestmark = pytest.mark.integration


def test_security_the_application_role_reads_no_forget_audit_row_fails_on_todays_code(
    services: Services, db: Database, pg: LocalDatabase
) -> None:
    # GIVEN two erases, each leaving its audit row (written through the application role)
    forget_user(services, "user-alice", requested_by="test")
    forget_user(services, "user-bob", requested_by="test")
    admin = create_engine(pg.admin_url)
    with admin.connect() as conn:
        assert conn.execute(text(f"SELECT count(*) FROM {FORGET_AUDIT_TABLE}")).scalar() == 2
    admin.dispose()
    # THEN the application role sees none of them, as any user or none
    for user in (None, "user-alice"):
        with db.unit_of_work(user) as session:
            assert session.execute(text(f"SELECT count(*) FROM {FORGET_AUDIT_TABLE}")).scalar() == 0
