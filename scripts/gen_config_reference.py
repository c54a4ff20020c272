"""Write docs/configuration.md from `Settings`: every field's environment name, type, default and description.

`python scripts/gen_config_reference.py` (or `make config-docs`) rewrites the file; `--check` exits 1 when the
committed file differs from what the code says (tests/unit/test_config_reference.py runs the same check in CI).
Groups are the `# --- name ---` headers of worldmm/config.py; a description is the field's
`Field(description=...)` or the docstring under it; "on AWS" is where template.yaml sets the variable, or what
tests/deployed/settings_contract.py says of its default there; "read by" the components (a package of `worldmm`, or
`handlers`) whose code reads the field from a settings object (`settings.name`, `self.settings.name`) or whose
component settings (`worldmm/<component>/settings.py`) declare it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "worldmm" / "config.py"
TEMPLATE = ROOT / "template.yaml"
REFERENCE = ROOT / "docs" / "configuration.md"
GROUP_PREFIX = "# --- "

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.deployed.settings_contract import SPEC_CONSTANTS, UNSET_ON_AWS  # noqa: E402
from worldmm.config import SECRET_FIELDS, SECRET_SOURCES, Settings  # noqa: E402


@dataclass(frozen=True)
class Setting:
    """One row of the reference."""

    group: str
    env: str
    type: str
    default: str
    secret: bool
    on_aws: str
    read_by: str
    description: str


class _KeysOnly(yaml.SafeLoader):
    """Reads template.yaml's structure; CloudFormation tags (`!Ref`, `!Sub`, ...) read as None."""


_KeysOnly.add_multi_constructor("!", lambda loader, suffix, node: None)


def _template_environment() -> dict[str, list[str]]:
    """Each variable template.yaml sets, and the functions it sets it for (`*` for the Globals)."""
    template = yaml.load(TEMPLATE.read_text(), Loader=_KeysOnly)
    where: dict[str, list[str]] = {}
    for name in template["Globals"]["Function"].get("Environment", {}).get("Variables", {}):
        where.setdefault(name, []).append("*")
    for function, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for name in resource["Properties"].get("Environment", {}).get("Variables", {}):
            where.setdefault(name, []).append(function.removesuffix("Function"))
    return where


def _field_docs(source: str) -> dict[str, tuple[str, str, str]]:
    """Per field of `Settings`: its group, its annotation as written and the docstring under it."""
    tree = ast.parse(source)
    settings = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == Settings.__name__)
    headers = [
        (number, line.strip().removeprefix(GROUP_PREFIX).rstrip("- "))
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip().startswith(GROUP_PREFIX)
    ]
    found: dict[str, tuple[str, str, str]] = {}
    body = settings.body
    for position, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        group = next((name for number, name in reversed(headers) if number < node.lineno), "other")
        following = body[position + 1] if position + 1 < len(body) else None
        docstring = ""
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docstring = following.value.value
        annotation = ast.get_source_segment(source, node.annotation) or ""
        found[node.target.id] = (group, annotation, docstring)
    return found


def _readers() -> dict[str, set[str]]:
    """Per field of `Settings`: the components whose code reads it from a settings object, directly or through a
    property or method of `Settings` that reads it (`worldmm/retrieval/hybrid.py` is `retrieval`)."""
    readers: dict[str, set[str]] = {}
    for path in sorted([*(ROOT / "worldmm").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")]):
        if path == CONFIG or path.is_relative_to(CONFIG.parent / "db" / "migrations"):
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        component = "handlers" if parts[0] == "handlers" else parts[1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and _names_settings(node.value):
                readers.setdefault(node.attr, set()).add(component)
            for name in _component_fields(node):
                readers.setdefault(name, set()).add(component)
    derived = _derived_from_fields()
    for name, fields in derived.items():
        for field in fields:
            readers.setdefault(field, set()).update(readers.get(name, set()) | {"config"})
    return readers


def _component_fields(node: ast.AST) -> list[str]:
    """The fields a component's settings class (`class XSettings(ComponentSettings)`) declares, else none."""
    if not (isinstance(node, ast.ClassDef) and any(_base_name(b) == "ComponentSettings" for b in node.bases)):
        return []
    return [n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]


def _base_name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _derived_from_fields() -> dict[str, set[str]]:
    """Per property or method of `Settings`: the fields it reads (`self.name`), through the others it calls."""
    tree = ast.parse(CONFIG.read_text())
    settings_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == Settings.__name__)
    reads = {
        member.name: {
            n.attr
            for n in ast.walk(member)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
        }
        for member in settings_class.body
        if isinstance(member, ast.FunctionDef)
    }
    fields = set(Settings.model_fields)
    for _ in range(len(reads)):  # until every member's reads are closed over the members it calls
        reads = {name: set().union(attrs, *(reads.get(a, set()) for a in attrs)) for name, attrs in reads.items()}
    return {name: attrs & fields for name, attrs in reads.items()}


def _names_settings(node: ast.expr) -> bool:
    """Whether `node` is a settings object by its name (`settings`, `self.settings`, `services.settings`)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "settings" or name.endswith("_settings")


def _default(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):
        home = Path.home()
        shown = f"~/{value.relative_to(home).as_posix()}" if value.is_relative_to(home) else value.as_posix()
        return f"`{shown}`"
    if isinstance(value, tuple):
        return f"`{','.join(str(v) for v in value)}`"
    return f"`{value}`"


def _type(annotation: str) -> str:
    """The annotation as written, with each enum's values spelled out (what the variable accepts)."""
    import worldmm.config as config

    words = []
    for part in (p.strip() for p in annotation.split("|")):
        kind = getattr(config, part, None)
        if isinstance(kind, type) and issubclass(kind, Enum):
            words.append(" / ".join(f"`{member.value}`" for member in kind))
        else:
            words.append(part)
    return " | ".join(words)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def settings() -> list[Setting]:
    """Every field of `Settings`, in source order."""
    docs = _field_docs(CONFIG.read_text())
    environment = _template_environment()
    readers = _readers()
    rows = []
    for name, field in Settings.model_fields.items():
        group, annotation, docstring = docs[name]
        env = name.upper()
        functions = environment.get(env, [])
        on_aws = "every function" if "*" in functions else ", ".join(sorted(functions)) or "—"
        if not functions and name in SECRET_SOURCES:
            source = SECRET_SOURCES[name]
            holders = ", ".join(sorted(environment.get(source, [])))
            on_aws = f"read from {source}: {holders}"
        elif env in UNSET_ON_AWS:
            on_aws = f"{on_aws}; else unset: {UNSET_ON_AWS[env]}" if functions else f"unset: {UNSET_ON_AWS[env]}"
        elif not functions and env in SPEC_CONSTANTS:
            on_aws = "the default (the same on every profile)"
        rows.append(
            Setting(
                group=group,
                env=env,
                type=_type(annotation),
                default=_default(field.get_default(call_default_factory=True)),
                secret=name in SECRET_FIELDS,
                on_aws=on_aws,
                read_by=", ".join(sorted(readers.get(name, ()))) or "—",
                description=field.description or docstring,
            )
        )
    return rows


def render() -> str:
    """docs/configuration.md as the code describes it."""
    rows = settings()
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by scripts/gen_config_reference.py from worldmm/config.py and template.yaml: do not edit;",
        "     run `make config-docs`. tests/unit/test_config_reference.py fails when this file is stale. -->",
        "",
        "Every setting is an environment variable, read once by `worldmm.config.Settings` (names are",
        "case-insensitive; nothing else reads the environment). The local profile needs none of them.",
        "",
        "- **Secret**: holds a credential. On AWS it is never in a function's environment: the model keys and",
        "  tokens come from the Secrets Manager secret `MODEL_KEYS_SECRET` names, the database's credentials",
        "  from `DATABASE_SECRET_ARN` ([security.md](security.md), [deployment.md](deployment.md)).",
        "- **On AWS**: the functions template.yaml sets the variable for (`every function`: its Globals), or why",
        "  it is unset there, or that its default holds on every profile (`tests/deployed/settings_contract.py`;",
        "  `tests/deployed/` fails a function that, in the runs it makes, reads a setting the template does not give).",
        "  `—`: neither the template nor the settings contract names it; its default applies wherever it is read",
        "  (local-profile settings, the CLI's and `worldmm eval`'s, and tuning knobs).",
        "- **Unset** defaults are resolved at run time, as the description says (often by profile and LLM).",
        "- **Read by**: the components whose code reads the setting (a package or module of `worldmm`, or",
        "  `handlers`), directly or through a value `Settings` derives from it (`config`); `—`: none reads it",
        "  by name (a secret's source, read by `Settings.model_key`, or a variable only the template uses).",
        "",
        f"{len(rows)} settings in {len({r.group for r in rows})} groups.",
        "",
    ]
    groups: dict[str, list[Setting]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    lines += ["## Groups", ""]
    lines += [f"- [{group}](#{_anchor(group)}) ({len(members)})" for group, members in groups.items()]
    for group, members in groups.items():
        lines += ["", f"## {group[0].upper()}{group[1:]}", ""]
        lines += [
            "| Setting | Type | Default | Secret | On AWS | Read by | Description |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in members:
            lines.append(
                f"| `{row.env}` | {_cell(row.type)} | {_cell(row.default)} | {'yes' if row.secret else ''} "
                f"| {_cell(row.on_aws)} | {row.read_by} | {_cell(row.description)} |"
            )
    return "\n".join(lines) + "\n"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/configuration.md is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not REFERENCE.exists() or REFERENCE.read_text() != text:
            print(f"{REFERENCE} is stale: run `make config-docs`", file=sys.stderr)
            sys.exit(1)
        return
    REFERENCE.write_text(text)
    print(f"wrote {REFERENCE.relative_to(ROOT)} ({len(settings())} settings)")


if __name__ == "__main__":
    main()
