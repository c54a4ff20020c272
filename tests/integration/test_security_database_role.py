"""Issue 27 item 6: nothing runs on the memory as a role row-level security does not hold.

`get_database` (what every function and the CLI reach the memory through) checks the role it connects as:
the embedded server's superuser, a BYPASSRLS role and the tables' owner are refused; the application role
is taken.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine, text

from tests.harness import make_settings
from worldmm.db.engine import get_database
from worldmm.db.local import LocalDatabase
from worldmm.errors import ConfigurationError

pytestmark = pytest.mark.integration


def _role_url(pg: LocalDatabase, role: str) -> str:
    return pg.app_url.replace("worldmm_app@", f"{role}@")


@pytest.fixture
def bypass_role(pg: LocalDatabase) -> str:
    role = f"bypass_{uuid.uuid4().hex[:8]}"
    engine = create_engine(pg.admin_url)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE ROLE {role} LOGIN NOSUPERUSER BYPASSRLS"))
        conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
    yield role
    with engine.begin() as conn:
        conn.execute(text(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}"))
        conn.execute(text(f"DROP ROLE {role}"))
    engine.dispose()


@pytest.mark.parametrize("who", ["superuser (the owner here)", "bypassrls"])
def test_security_functions_refuse_a_role_row_level_security_does_not_hold(
    pg: LocalDatabase, bypass_role: str, who: str
) -> None:
    url = pg.admin_url if who.startswith("superuser") else _role_url(pg, bypass_role)
    with pytest.raises(ConfigurationError, match="row-level security"):
        get_database(make_settings(database_url=url))


def test_security_the_application_role_is_taken(pg: LocalDatabase) -> None:
    database = get_database(make_settings(database_url=pg.app_url))
    assert database.url == pg.app_url
