"""The allowance port's contract: DynamoDB (moto) and PostgreSQL (the run's embedded server) alike.

A bucket of `capacity` model calls refilling at `per_hour`: takes are granted while it holds their cost,
refused (nothing taken, a Retry-After) once it does not, refilled with time; each user's bucket is their
own; concurrent takes never spend more than the bucket holds; forget-me erases it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from worldmm.allowance.dynamo import DynamoAllowances, allowances_table_definition
from worldmm.allowance.port import Allowances, Bucket
from worldmm.allowance.postgres import PostgresAllowances
from worldmm.config import Settings
from worldmm.db.engine import Database

pytestmark = pytest.mark.integration

BUCKET = Bucket(capacity=12.0, per_hour=3600.0)  # 12 calls, one more each second
T0 = 1_800_000_000.0
ALICE, BOB = "user-alice", "user-bob"


class AtomicRequests:
    """A moto client whose each request is atomic, as DynamoDB's are (moto checks a condition and writes
    without a lock, so threads racing through it see writes DynamoDB would refuse)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._client, name)

        def atomic(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return call(*args, **kwargs)

        return atomic


@pytest.fixture(params=["dynamodb", "postgres"])
def allowances(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Allowances]:
    if request.param == "dynamodb":
        import boto3
        from moto import mock_aws

        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            client.create_table(**allowances_table_definition(settings.allowances_table))
            yield DynamoAllowances(settings.allowances_table, BUCKET, client=AtomicRequests(client))
    else:
        db: Database = request.getfixturevalue("db")
        yield PostgresAllowances(db, BUCKET)


def test_allowance_grants_takes_while_the_bucket_holds_them_then_refuses_with_retry_after(
    allowances: Allowances,
) -> None:
    # WHEN Alice takes 6 calls twice, then once more at the same moment
    first, second, third = (allowances.take(ALICE, 6, T0) for _ in range(3))
    # THEN the first two are granted and the third refused, with how long until 6 are back
    assert first.granted and second.granted and not third.granted
    assert second.remaining == pytest.approx(0.0)
    assert third.retry_after_s == 6


def test_allowance_refills_with_time_up_to_its_capacity(allowances: Allowances) -> None:
    # GIVEN Alice's bucket emptied
    assert allowances.take(ALICE, 12, T0).granted
    # THEN 3 s later 3 calls are back, not 4
    assert not allowances.take(ALICE, 4, T0 + 3).granted
    assert allowances.take(ALICE, 3, T0 + 3).granted
    # AND an hour later it is full again, never fuller
    later = allowances.take(ALICE, 1, T0 + 3600)
    assert later.granted and later.remaining == pytest.approx(11.0)


def test_allowance_of_one_user_is_not_anothers(allowances: Allowances) -> None:
    # GIVEN Alice's bucket emptied
    assert allowances.take(ALICE, 12, T0).granted
    assert not allowances.take(ALICE, 1, T0).granted
    # THEN Bob's is full
    assert allowances.take(BOB, 12, T0).granted


def test_allowance_never_spends_more_than_it_holds_under_concurrent_takes(allowances: Allowances) -> None:
    # WHEN 24 takes of one call race for a bucket of 12
    with ThreadPoolExecutor(max_workers=8) as pool:
        grants = list(pool.map(lambda _: allowances.take(ALICE, 1, T0), range(24)))
    # THEN at most 12 are granted (a take that lost every race is refused, never granted twice), and the
    # bucket holds exactly what they left
    granted = sum(g.granted for g in grants)
    assert 1 <= granted <= 12, granted
    if granted < 12:
        assert allowances.take(ALICE, 12 - granted, T0).granted
    assert not allowances.take(ALICE, 1, T0).granted


def test_allowance_refuses_a_cost_larger_than_the_bucket_without_taking_anything(allowances: Allowances) -> None:
    assert not allowances.take(ALICE, 13, T0).granted
    assert allowances.take(ALICE, 12, T0).granted


def test_allowance_erase_user_forgets_the_bucket_and_only_that_users(allowances: Allowances) -> None:
    # GIVEN Alice's and Bob's buckets, both used
    assert allowances.take(ALICE, 12, T0).granted and allowances.take(BOB, 5, T0).granted
    # WHEN Alice is forgotten
    erased = allowances.erase_user(ALICE)
    # THEN one item went, Alice's bucket is full again, and Bob's still holds what he left
    assert sum(erased.values()) == 1
    assert allowances.take(ALICE, 12, T0).granted
    assert not allowances.take(BOB, 8, T0).granted
    assert allowances.erase_user("nobody") == {}
