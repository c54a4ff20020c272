"""template.yaml as data: CloudFormation short-form tags read as their long forms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


class CfnLoader(yaml.SafeLoader):
    """A SafeLoader that reads CloudFormation short-form tags (`!Ref X` becomes {"Ref": "X"})."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = suffix if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


CfnLoader.add_multi_constructor("!", _tag)


def load_template() -> dict[str, Any]:
    """The project's template.yaml, parsed."""
    loaded: dict[str, Any] = yaml.load((ROOT / "template.yaml").read_text(), Loader=CfnLoader)
    return loaded
