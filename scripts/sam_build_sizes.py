"""Run `sam build` and print each function's unzipped size (code + layers) as JSON; fail over the limit.

Usage: python scripts/sam_build_sizes.py [--limit-mb 200] [--build-dir .aws-sam/build] [--skip-build]
Needs python3.12 for the builder: PYENV_VERSION=3.12.1 is set for the subprocess when pyenv is present.
Each handler is also imported from its built package alone (python3.12 -S: no site-packages), which proves
the function's requirements.txt covers what it imports; boto3 is the one module the Lambda runtime provides.
A package with scipy also runs the graph snapshot, PPR and sparse-matrix path there (the chat package prunes
scipy down to scipy.sparse).
Exit status 1 when any function is larger than the limit (Lambda's hard limit is 250 MB unzipped) or a
handler does not import from its package.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that reads CloudFormation short-form tags (!Ref, !Sub, ...) as plain values."""


def _cfn_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> object:
    if isinstance(node, yaml.ScalarNode):
        return {suffix: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {suffix: loader.construct_sequence(node, deep=True)}
    return {suffix: loader.construct_mapping(node, deep=True)}


_CfnLoader.add_multi_constructor("!", _cfn_tag)


def functions_in(template: Path) -> dict[str, dict[str, object]]:
    """Logical id → properties of every AWS::Serverless::Function in a template."""
    doc = yaml.load(template.read_text(), Loader=_CfnLoader)
    return {
        name: resource.get("Properties", {})
        for name, resource in doc["Resources"].items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }


def tree_size(path: Path) -> int:
    """Bytes of every regular file under `path` (symlinks not followed)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            file = Path(root) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total


_IMPORT_PROBE = """
import importlib, sys
sys.path.insert(0, sys.argv[1])
module_name, _, attr = sys.argv[2].rpartition(".")
getattr(importlib.import_module(module_name), attr)
"""

RUNTIME_PROVIDED = ("boto3", "botocore")

# The numeric path the chat functions run, on their pruned package (scipy.sparse without scipy.linalg):
# snapshot round trip, PPR at both tolerances, and the BM25 matrix operations.
_NUMERIC_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from scipy.sparse import csr_matrix
from worldmm.graph.build import UserGraph, graph_from_edges
from worldmm.graph.ppr import TOP_K_TOLERANCE, personalized_pagerank, top_k, uniform_reset
key = lambda i: (i + 1).to_bytes(16, "big")
graph = UserGraph.from_bytes(
    graph_from_edges([key(0), key(1), key(2)], [key(1), key(2), key(3)], [key(9), key(10), key(11)], [key(20)] * 3)
    .to_bytes()
)
for tolerance in (1e-8, TOP_K_TOLERANCE):
    scores = personalized_pagerank(graph, uniform_reset(graph, graph.node_indices([key(0)])), tolerance=tolerance)
    # on the path 0-1-2-3 seeded at its end, the end's only neighbour ranks first
    assert top_k(scores, 4).tolist() == [graph.node_indices([key(i)])[0] for i in (1, 0, 2, 3)]
counts = csr_matrix((np.ones(3, np.float32), ([0, 1, 1], [0, 0, 2])), shape=(2, 3)).tocsc()
assert counts[:, [0, 2]].sum() == 3.0 and np.asarray(counts.sum(axis=1)).ravel().tolist() == [1.0, 2.0]
"""


def numeric_error(artifact: Path, env: dict[str, str]) -> str | None:
    """None when the graph / PPR / sparse-matrix path runs from `artifact` alone, else the error's last line."""
    if not (artifact / "worldmm" / "graph").is_dir() or not (artifact / "scipy").is_dir():
        return None
    result = subprocess.run(
        ["python3.12", "-S", "-c", _NUMERIC_PROBE, str(artifact)],
        cwd=artifact,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return None if result.returncode == 0 else (result.stderr.strip().splitlines() or ["unknown error"])[-1]


def import_error(artifact: Path, handler: str, env: dict[str, str]) -> str | None:
    """None when `handler` imports from `artifact` alone, else the error's last line."""
    result = subprocess.run(
        ["python3.12", "-S", "-c", _IMPORT_PROBE, str(artifact), handler],
        cwd=artifact,
        # LAMBDA_TASK_ROOT as the runtime sets it: the Tracer is on and patches what the package holds.
        env={**env, "WORLDMM_PROFILE": "aws", "AWS_DEFAULT_REGION": "us-east-1", "LAMBDA_TASK_ROOT": str(artifact)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode == 0:
        return None
    last = (result.stderr.strip().splitlines() or ["unknown error"])[-1]
    if any(f"No module named '{name}" in last for name in RUNTIME_PROVIDED):
        return None
    return last


def _sam() -> str:
    """sam from the deployment-tools environment (scripts/setup.sh), else PATH."""
    local = ROOT / ".tools" / "sam" / "bin" / "sam"
    return str(local) if local.exists() else "sam"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit-mb", type=float, default=200.0)
    parser.add_argument("--build-dir", type=Path, default=ROOT / ".aws-sam" / "build")
    parser.add_argument("--skip-build", action="store_true", help="measure an existing build")
    args = parser.parse_args()

    build_seconds = 0.0
    env = {**os.environ, "PYENV_VERSION": "3.12.1", "SAM_CLI_TELEMETRY": "0"}
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    if not args.skip_build:
        started = time.monotonic()
        result = subprocess.run(
            [_sam(), "build", "--build-dir", str(args.build_dir), "--parallel"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        build_seconds = time.monotonic() - started
        if result.returncode != 0:
            print(result.stdout[-4000:], file=sys.stderr)
            print(json.dumps({"ok": False, "error": "sam build failed"}))
            return 1

    functions = functions_in(args.build_dir / "template.yaml")
    limit = args.limit_mb * 1024 * 1024
    sizes: dict[str, float] = {}
    broken: dict[str, str] = {}
    for name, props in functions.items():
        sizes[name] = round(tree_size(args.build_dir / name) / 1024 / 1024, 1)
        error = import_error(args.build_dir / name, str(props["Handler"]), env) or numeric_error(
            args.build_dir / name, env
        )
        if error:
            broken[name] = error
    over = {name: mb for name, mb in sizes.items() if mb * 1024 * 1024 > limit}
    print(
        json.dumps(
            {
                "ok": not over and not broken,
                "limit_mb": args.limit_mb,
                "build_seconds": round(build_seconds, 1),
                "unzipped_mb": dict(sorted(sizes.items(), key=lambda kv: -kv[1])),
                "over_limit": over,
                "handler_import_errors": broken,
            },
            indent=2,
        )
    )
    return 1 if over or broken else 0


if __name__ == "__main__":
    sys.exit(main())
