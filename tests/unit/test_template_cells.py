"""template.yaml's database cells (issue 63 part 4, docs/cells.md): CellCount slots, DATABASE_CELLS built from
them (ARNs and hosts, no credential), the placements table and who may use it, each cell's secret granted to
the functions that connect, alarms per cell, and one cell by default looking as it did before cells."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from tests.support.template import load_template
from worldmm.config import CellSettings, Settings

pytestmark = pytest.mark.unit

SLOTS = ("A", "B", "C", "D")
ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:worldmm/cell-{}-app-AbCdEf"
PROXY = "worldmm-cell-{}.proxy-abcdefghijkl.eu-west-1.rds.amazonaws.com"


@cache
def template() -> dict[str, Any]:
    return load_template()


def functions() -> dict[str, dict[str, Any]]:
    return {n: r["Properties"] for n, r in template()["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}


def parameters(cell_count: int, **given: str) -> dict[str, Any]:
    """The template's defaults, CellCount, and every cell slot it includes described (as an operator would)."""
    values: dict[str, Any] = {n: p.get("Default", "") for n, p in template()["Parameters"].items()}
    values.update(CellCount=str(cell_count), DatabaseSecretArn=ARN.format("a"), DatabaseProxyEndpoint=PROXY.format("a"))
    for slot in SLOTS[1:cell_count]:
        c = slot.lower()
        values.update({f"Cell{slot}SecretArn": ARN.format(c), f"Cell{slot}ProxyEndpoint": PROXY.format(c)})
        values[f"Cell{slot}InstanceId"] = f"worldmm-cell-{c}"
    values.update(given)
    return values


class Resolver:
    """The few intrinsic functions the cells' part of the template uses, over given parameter values."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params

    def condition(self, name: str) -> bool:
        return bool(self.value(template()["Conditions"][name]))

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.value(n) for n in node) if v is not NO_VALUE]
        if not isinstance(node, dict) or len(node) != 1:
            return node
        [(fn, arg)] = node.items()
        if fn == "Ref":
            return NO_VALUE if arg == "AWS::NoValue" else self.params.get(arg, {"Ref": arg})
        if fn == "Condition":
            return self.condition(arg)
        if fn == "Fn::Equals":
            return str(self.value(arg[0])) == str(self.value(arg[1]))
        if fn == "Fn::Not":
            return not self.value(arg[0])
        if fn == "Fn::Or":
            return any(self.value(a) for a in arg)
        if fn == "Fn::And":
            return all(self.value(a) for a in arg)
        if fn == "Fn::If":
            return self.value(arg[1] if self.condition(arg[0]) else arg[2])
        if fn == "Fn::Join":
            return arg[0].join(str(self.value(part)) for part in self.value(arg[1]))
        if fn == "Fn::Sub":
            text = arg
            for name, value in self.params.items():
                text = text.replace("${" + name + "}", str(value))
            return text
        return node


NO_VALUE = object()


def deployed(cell_count: int, **given: str) -> tuple[Resolver, dict[str, Any]]:
    """The resolver and the resources that exist (their Condition holds) for these parameters."""
    resolver = Resolver(parameters(cell_count, **given))
    resources = {
        n: r for n, r in template()["Resources"].items() if "Condition" not in r or resolver.condition(r["Condition"])
    }
    return resolver, resources


def global_env(resolver: Resolver) -> dict[str, Any]:
    variables = template()["Globals"]["Function"]["Environment"]["Variables"]
    resolved = {k: resolver.value(v) for k, v in variables.items()}
    return {k: v for k, v in resolved.items() if v is not NO_VALUE}


# --- one cell by default: as before cells ---------------------------------------------------------------------


def test_one_cell_by_default_adds_no_resource_and_no_setting() -> None:
    # GIVEN the template's defaults (CellCount 1, no instance named for alarms)
    assert template()["Parameters"]["CellCount"]["Default"] == 1
    resolver, resources = deployed(1)
    # THEN no placements table, no cell policy or alarm exists, and the functions are told of no cell
    cells = {n for n in template()["Resources"] if n.startswith(("Cell", "Placements"))}
    assert len(cells) == 3 + 3 * len(SLOTS) + 1  # 3 policies, 3 alarms a cell, the table
    assert cells.isdisjoint(resources)
    env = global_env(resolver)
    assert "DATABASE_CELLS" not in env and "PLACEMENTS_TABLE" not in env


# --- DATABASE_CELLS ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cell_count", [2, 3, 4])
def test_database_cells_lists_each_cell_counted_with_its_secret_arn_and_proxy(
    cell_count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN CellCount cells described, cell b with more capacity
    resolver, _ = deployed(cell_count, CellBCapacityGb="4000")
    raw = global_env(resolver)["DATABASE_CELLS"]
    # THEN DATABASE_CELLS is the settings' JSON: one cell per slot counted, in order, ARNs and hosts only
    monkeypatch.setenv("DATABASE_CELLS", raw)  # as the function reads it
    cells = Settings().database_cells
    assert [c.id for c in cells] == ["a", "b", "c", "d"][:cell_count]
    for cell in cells:
        assert cell.secret_arn == ARN.format(cell.id) and cell.proxy_host == PROXY.format(cell.id)
        assert cell.database_url is None and cell.database_admin_url is None
    assert [c.capacity_gb for c in cells][:2] == [1000.0, 4000.0]
    assert "password" not in raw.lower() and "postgresql" not in raw.lower()
    assert global_env(resolver)["PLACEMENTS_TABLE"] == {"Ref": "PlacementsTable"}


def test_a_cell_without_a_proxy_connects_to_its_secrets_host(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver, _ = deployed(2, CellBProxyEndpoint="")
    monkeypatch.setenv("DATABASE_CELLS", global_env(resolver)["DATABASE_CELLS"])
    [_, b] = Settings().database_cells
    assert b == CellSettings(id="b", secret_arn=ARN.format("b"), proxy_host="", capacity_gb=1000.0)


UNRESOLVED_CHARS = 120
"""What a value the resolver leaves (a resource's name, ARN or URL) is counted as: longer than any of them."""


def test_every_function_environment_with_four_cells_fits_lambdas_4_kb() -> None:
    # GIVEN four cells behind proxies, a long stack name
    resolver, _ = deployed(4)
    resolver.params.update({"AWS::StackName": "worldmm-production-eu", "AWS::Region": "eu-west-1"})
    for name, props in functions().items():
        own = {k: resolver.value(v) for k, v in props.get("Environment", {}).get("Variables", {}).items()}
        env = {k: v for k, v in {**global_env(resolver), **own}.items() if v is not NO_VALUE}
        # THEN every function's variables stay under Lambda's 4 KB (names and values)
        size = sum(len(k) + (len(v) if isinstance(v, str) else UNRESOLVED_CHARS) for k, v in env.items())
        assert size < 4096, (name, size)


def test_a_cell_counted_must_be_described() -> None:
    rules = template()["Rules"]
    for slot, counts in (("B", ["2", "3", "4"]), ("C", ["3", "4"]), ("D", ["4"])):
        rule = rules[f"Cell{slot}IsDescribed"]
        for cell_count in ("1", "2", "3", "4"):
            applies = Resolver({"CellCount": cell_count}).value(rule["RuleCondition"])
            assert applies == (cell_count in counts), (slot, cell_count)
        required = {a["Assert"]["Fn::Not"][0]["Fn::Equals"][0]["Ref"] for a in rule["Assertions"]}
        assert required == {f"Cell{slot}SecretArn", f"Cell{slot}InstanceId"}
    assert Resolver({"CellCount": "2"}).value(rules["CellAIsWatched"]["RuleCondition"])


# --- the placements table and least privilege ------------------------------------------------------------------


def _roles(policy: str) -> set[str]:
    return {r["Ref"].removesuffix("Role") for r in template()["Resources"][policy]["Properties"]["Roles"]}


def _statement(policy: str) -> dict[str, Any]:
    [statement] = template()["Resources"][policy]["Properties"]["PolicyDocument"]["Statement"]
    return statement


def _connects(props: dict[str, Any]) -> bool:
    return "DATABASE_SECRET_ARN" in props.get("Environment", {}).get("Variables", {})


def test_the_placements_table_matches_the_library_definition_and_is_kept() -> None:
    from worldmm.cells.dynamo import placements_table_definition

    table = template()["Resources"]["PlacementsTable"]
    definition = placements_table_definition(Settings().placements_table)
    props = table["Properties"]
    assert {k: props[k] for k in ("BillingMode", "AttributeDefinitions", "KeySchema")} == {
        k: v for k, v in definition.items() if k != "TableName"
    }
    assert table["DeletionPolicy"] == "Retain" and props["PointInTimeRecoverySpecification"]
    assert props["SSESpecification"] == {"SSEEnabled": True}


def test_every_function_that_connects_may_read_every_cells_secret_and_no_other_may() -> None:
    statement = _statement("CellSecretsReadPolicy")
    assert statement["Action"] == "secretsmanager:GetSecretValue"
    resolver, _ = deployed(4)
    assert resolver.value(statement["Resource"]) == [ARN.format(c) for c in "bcd"]
    assert resolver.value(statement["Resource"])[:1] == deployed(2)[0].value(statement["Resource"])
    assert _roles("CellSecretsReadPolicy") == {n for n, p in functions().items() if _connects(p)}


def test_only_the_functions_that_resolve_a_users_cell_read_and_place_and_only_forget_me_deletes() -> None:
    # GIVEN the functions whose handler resolves a user's cell and that reach the database
    resolving = {
        name
        for name, props in functions().items()
        if _connects(props) and "for_user" in _handler_source(props["Handler"])
    }
    # THEN they, and no others, read and place; the reaper (every cell) and the chat list (DynamoDB) do not
    assert _roles("PlacementsResolvePolicy") == resolving
    assert "OrphanReaperFunction" not in resolving and "ChatsListFunction" not in resolving
    assert sorted(_statement("PlacementsResolvePolicy")["Action"]) == ["dynamodb:GetItem", "dynamodb:PutItem"]
    assert _statement("PlacementsForgetPolicy")["Action"] == "dynamodb:DeleteItem"
    assert _roles("PlacementsForgetPolicy") == {"ForgetUserFunction"}
    for policy in ("PlacementsResolvePolicy", "PlacementsForgetPolicy"):
        assert _statement(policy)["Resource"] == {"Fn::GetAtt": ["PlacementsTable", "Arn"]}


def _handler_source(handler: str) -> str:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    return (root / (handler.rsplit(".", 1)[0].replace(".", "/") + ".py")).read_text()


# --- alarms per cell ------------------------------------------------------------------------------------------------

ALARMS = {
    "Storage": ("FreeStorageSpace", "LessThanThreshold", "CellFreeStorageAlarmBytes", "InstanceId"),
    "Connections": ("DatabaseConnections", "GreaterThanThreshold", "CellConnectionsAlarm", "InstanceId"),
    "ReplicaLag": ("ReplicaLag", "GreaterThanThreshold", "CellReplicaLagAlarmSeconds", "ReplicaId"),
}


@pytest.mark.parametrize("slot", SLOTS)
def test_each_cell_has_its_storage_connections_and_replication_lag_alarms(slot: str) -> None:
    for kind, (metric, comparison, threshold, instance) in ALARMS.items():
        alarm = template()["Resources"][f"Cell{slot}{kind}Alarm"]["Properties"]
        assert (alarm["Namespace"], alarm["MetricName"], alarm["ComparisonOperator"]) == ("AWS/RDS", metric, comparison)
        assert alarm["Threshold"] == {"Ref": threshold}
        assert alarm["Dimensions"] == [{"Name": "DBInstanceIdentifier", "Value": {"Ref": f"Cell{slot}{instance}"}}]
        assert alarm["AlarmActions"] == {
            "Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]
        }


def test_alarms_exist_for_the_cells_counted_and_a_replica_only_where_one_is_named() -> None:
    _, two = deployed(2, CellAInstanceId="worldmm-cell-a", CellBReplicaId="worldmm-cell-b-replica")
    alarms = {n for n, r in two.items() if r["Type"] == "AWS::CloudWatch::Alarm" and n.startswith("Cell")}
    assert alarms == {
        "CellAStorageAlarm",
        "CellAConnectionsAlarm",
        "CellBStorageAlarm",
        "CellBConnectionsAlarm",
        "CellBReplicaLagAlarm",
    }
    _, one = deployed(1, CellAInstanceId="worldmm-db")  # a single database may be watched too
    assert {n for n in one if n.startswith("Cell")} == {"CellAStorageAlarm", "CellAConnectionsAlarm"}
