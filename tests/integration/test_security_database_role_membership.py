"""Issue 64, Low: the role check follows role membership, not only the role connected as.

A role that is a member of a BYPASSRLS role, or of the tables' owner, can SET ROLE to it (or inherits the
owner's right to ALTER a table out of row-level security): the functions refuse it as they refuse the role
itself. Before this change only the connected role's own attributes were read.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from tests.support.harness import make_settings
from worldmm.db.engine import get_database
from worldmm.db.local import LocalDatabase
from worldmm.errors import ConfigurationError

pytestmark = pytest.mark.integration


@pytest.fixture
def member(pg: LocalDatabase, request: pytest.FixtureRequest) -> Iterator[str]:
    """A login role without any attribute of its own, member of a BYPASSRLS role or of the tables' owner."""
    suffix = uuid.uuid4().hex[:8]
    role, parent = f"member_{suffix}", f"parent_{suffix}"
    engine = create_engine(pg.admin_url)
    with engine.begin() as conn:
        owner = conn.execute(text("SELECT tableowner FROM pg_tables WHERE tablename = 'worldmm_segments'")).scalar()
        conn.execute(text(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS"))
        conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
        if request.param == "bypassrls":
            conn.execute(text(f"CREATE ROLE {parent} NOLOGIN BYPASSRLS"))
            conn.execute(text(f"GRANT {parent} TO {role}"))
        else:
            conn.execute(text(f'GRANT "{owner}" TO {role}'))
    yield role
    with engine.begin() as conn:
        conn.execute(text(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}"))
        conn.execute(text(f"DROP ROLE {role}"))
        conn.execute(text(f"DROP ROLE IF EXISTS {parent}"))
    engine.dispose()


@pytest.mark.parametrize("member", ["bypassrls", "owner"], indirect=True)
def test_security_functions_refuse_a_member_of_a_role_rls_does_not_hold_fails_on_todays_code(
    pg: LocalDatabase, member: str
) -> None:
    url = pg.app_url.replace("worldmm_app@", f"{member}@")
    with pytest.raises(ConfigurationError, match="row-level security"):
        get_database(make_settings(database_url=url))
