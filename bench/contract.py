"""`make contract`: the long API contract run a maintainer makes before a release.

Starts an embedded PostgreSQL, the local gateway over it on 127.0.0.1 (scripted chat model), and runs
schemathesis with the committed `schemathesis.toml` (every check and phase, positive and negative data) for
`--max-time` seconds; writes the run's summary as JSON and exits non-zero on any failure. The suite runs the
same thing for a short, fixed-seed budget (tests/integration/test_api_contract.py).

    python -m bench.contract --max-time 300 --seed 7 --out bench/results/contract.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-time", type=int, default=300, help="seconds for the whole run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("bench/results/contract.json"))
    parser.add_argument("--show-output", action="store_true", help="print schemathesis' own report")
    args = parser.parse_args(argv)

    from tests.support.contract import contract_gateway, contract_services, contract_tokens, run_schemathesis
    from tests.support.harness import embedded_postgres, make_settings, truncate_all
    from worldmm.db.engine import Database
    from worldmm.llm.scripted import ScriptedLLM

    with embedded_postgres(make_settings()) as pg, tempfile.TemporaryDirectory(prefix="worldmm-contract-") as tmp:
        truncate_all(pg.admin_url)
        settings = make_settings(database_url=pg.app_url, database_admin_url=pg.admin_url)
        services = contract_services(settings, Database(pg.app_url), ScriptedLLM(), Path(tmp) / "objects")
        with contract_gateway(services) as gateway:
            run = run_schemathesis(
                gateway.url,
                contract_tokens(settings),
                max_time_s=args.max_time,
                seed=args.seed,
                workdir=Path(tmp) / "schemathesis",
            )
    result = {"max_time_s": args.max_time, "seed": args.seed, "returncode": run.returncode, **run.summary}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    if args.show_output or run.returncode != 0:
        print(run.output)
    print(json.dumps(result, indent=2))
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
