"""The `worldmm` command line: migrate, and the operator and local-profile commands."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from worldmm.config import get_settings


def _migrate(args: argparse.Namespace) -> int:
    from worldmm.db import migrate

    settings = get_settings()
    if args.down:
        migrate.downgrade(settings, args.revision or "base")
    else:
        migrate.upgrade(settings, args.revision or "head")
    print(json.dumps({"migrated": args.revision or ("base" if args.down else "head")}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="worldmm", description="WorldMM Live Memory")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("migrate", help="apply database migrations")
    p.add_argument("--revision", default=None)
    p.add_argument("--down", action="store_true", help="downgrade instead (default to base)")
    p.set_defaults(func=_migrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
