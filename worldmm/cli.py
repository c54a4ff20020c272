"""The `worldmm` command line: migrate, and the operator and local-profile commands."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from worldmm.config import Settings, get_settings

if TYPE_CHECKING:
    from worldmm.eval.datasets import Benchmark

EVAL_DATA_SOURCES = {
    "egolife": (
        "EGOLIFE_DATA_DIR",
        "the folder of the EgoLife A1_JAKE week (A1_JAKE_windows30s.jsonl and EgoLifeQA_A1_JAKE_dev.jsonl, "
        "from the EgoLife dataset, MIT); tests/data/egolife holds a slice of it and its README says "
        "where the whole week comes from",
    ),
    "locomo": (
        "LOCOMO_DATA_FILE",
        "a LoCoMo-format JSON file (the LoCoMo benchmark's conversations with QA and evidence ids); "
        "tests/data/locomo_sample.json is a small one",
    ),
}
"""Per benchmark that reads data: the setting naming its location, and where the data comes from."""


def _migrate(args: argparse.Namespace) -> int:
    from worldmm.db import migrate
    from worldmm.errors import ConfigurationError

    settings = get_settings()
    try:
        if args.down:
            migrate.downgrade(settings, args.revision or "base")
        else:
            migrate.upgrade(settings, args.revision or "head")
    except ConfigurationError as exc:
        print(f"worldmm migrate: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"migrated": args.revision or ("base" if args.down else "head")}))
    return 0


def _ingest_session(args: argparse.Namespace) -> int:
    """`worldmm ingest-session PATH --user-id U`: ingest, print the JSON report; 0 when no window failed."""
    from worldmm.ingest.session import ingest_session
    from worldmm.services import get_services

    report = ingest_session(
        args.path, args.user_id, services=get_services(), concurrency=args.concurrency, progress=True
    )
    print(json.dumps(report.as_dict(), indent=2))
    return 0 if not report.failed else 1


def _ask(args: argparse.Namespace) -> int:
    from worldmm.retrieval.agent import answer_question
    from worldmm.services import Services

    result = answer_question(Services(get_settings()), args.user_id, args.question)
    print(result.answer)
    if args.trace:
        print(result.trace.model_dump_json(indent=2))
    return 0


def _retrigger(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from worldmm.ingest.events import EventRejected, RetriggerEvent
    from worldmm.ingest.retrigger import retrigger
    from worldmm.services import get_services

    try:
        event = RetriggerEvent(
            sessionId=args.session_id, userId=args.user_id, force=args.force, windowIndices=args.windows or None
        )
        print(json.dumps(retrigger(get_services().for_user(event.userId), event).model_dump()))
    except (ValidationError, EventRejected) as exc:
        reason = exc.reason if isinstance(exc, EventRejected) else "invalid_event"
        print(json.dumps({"error": reason}), file=sys.stderr)
        return 2
    return 0


def _forget(args: argparse.Namespace) -> int:
    from worldmm.errors import BadRequest
    from worldmm.forget_user import forget_user
    from worldmm.services import get_services

    try:
        report = forget_user(get_services().for_user(args.user_id), args.user_id, requested_by=args.requested_by)
    except BadRequest as exc:
        print(json.dumps({"error": str(exc)}), file=sys.stderr)
        return 2
    print(json.dumps(report.as_dict(), indent=2))
    return 0


def _cells(args: argparse.Namespace) -> int:
    """`worldmm cells where|move`: a user's cell, or move them (resumable: run it again after a failure)."""
    from worldmm.errors import WorldMMError
    from worldmm.services import get_services

    services = get_services()
    try:
        if args.action == "where":
            router = services.cells
            placed = router.placements.get(args.user_id) if router is not None else None
            print(
                json.dumps({"cell": placed.cell if placed else None, "movingTo": placed.moving_to if placed else None})
            )
            return 0
        report = services.cell_mover().move(args.user_id, args.to)
    except WorldMMError as exc:
        print(f"worldmm cells {args.action}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report.as_dict(), indent=2))
    return 0


def _reap(args: argparse.Namespace) -> int:
    """`worldmm reap`: every window re-run and what became of it (JSON); 1 when any failed."""
    from worldmm.ingest.reaper import reap
    from worldmm.services import get_services

    reports = [reap(cell, older_than_s=args.older_than) for cell in get_services().every_cell()]
    report = reports[0]
    for other in reports[1:]:  # one sweep per database cell
        report.windows.extend(other.windows)
    print(json.dumps(report.as_dict(), default=str, indent=2))
    for window in report.failed:
        print(
            f"failed: {window['user_id']}/{window['session_id']} window {window['window_index']}: {window['error']}",
            file=sys.stderr,
        )
    return 1 if report.failed else 0


def _serve(args: argparse.Namespace) -> int:
    from worldmm.errors import ConfigurationError
    from worldmm.gateway.app import serve

    try:
        serve(host=args.host, port=args.port, public_url=args.public_url, tls_cert=args.tls_cert, tls_key=args.tls_key)
    except ConfigurationError as exc:
        print(f"worldmm serve: {exc}", file=sys.stderr)
        return 2
    return 0


def _token(args: argparse.Namespace) -> int:
    from worldmm.errors import ConfigurationError
    from worldmm.gateway.auth import issue_token
    from worldmm.gateway.settings import GatewaySettings

    try:
        print(issue_token(args.user_id, GatewaySettings.of(get_settings()), ttl_s=args.ttl))
    except ConfigurationError as exc:
        print(f"worldmm token: {exc}", file=sys.stderr)
        return 2
    return 0


def _demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from worldmm.demo import QUESTIONS_FILE, SAMPLE_SESSION, load_questions, run_demo

    sample = Path(args.sample) if args.sample else SAMPLE_SESSION
    run_demo(get_settings(), sample, questions=load_questions(sample, args.questions or QUESTIONS_FILE))
    return 0


def _eval_speech(args: argparse.Namespace) -> int:
    """Word error rate of the configured transcriber on a sample recording against its script."""
    from pathlib import Path

    from worldmm.demo import SAMPLE_SESSION
    from worldmm.eval.speech import measure_speech
    from worldmm.services import Services

    settings = get_settings()
    sample = Path(args.sample) if args.sample else SAMPLE_SESSION
    after = [Path(earlier) for earlier in args.after]
    report = measure_speech(Services(settings).transcriber, sample, settings.window_seconds, after=after)
    print(report.to_json())
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report.to_json() + "\n")
    return 0


class EvalDataMissing(Exception):
    """A benchmark's data is not where the command line or the settings say (or nowhere is said)."""


def eval_data_location(benchmark: str, given: str | None, settings: Settings) -> Path:
    """Where `benchmark`'s data is: `--data`, else its setting; EvalDataMissing names both and the source."""
    setting, source = EVAL_DATA_SOURCES[benchmark]
    configured = settings.egolife_data_dir if benchmark == "egolife" else settings.locomo_data_file
    location = Path(given) if given else configured
    if location is None:
        raise EvalDataMissing(f"no data given: pass --data or set {setting} to {source}")
    if not location.exists():
        named_by = "--data" if given else setting
        raise EvalDataMissing(f"{location} (from {named_by}) does not exist: it should be {source}")
    return location


def _load_benchmark(args: argparse.Namespace, settings: Settings) -> tuple[Benchmark, str]:
    """The benchmark `worldmm eval` names, and the suffix of its report's name."""
    from worldmm.eval.datasets import load_egolife, load_locomo, load_sample_session

    if args.benchmark == "sample":
        return load_sample_session(), "morning"
    location = eval_data_location(args.benchmark, args.data or args.path, settings)
    try:
        if args.benchmark == "egolife":
            days = set(args.days) if args.days else None
            return load_egolife(location, days=days), "-".join(sorted(days)).lower() if days else "week"
        benchmark = load_locomo(location)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
        setting, source = EVAL_DATA_SOURCES[args.benchmark]
        raise EvalDataMissing(f"cannot read {exc.filename}: --data (or {setting}) should be {source}") from exc
    return benchmark, benchmark.name


def _eval(args: argparse.Namespace) -> int:
    from worldmm.db import migrate
    from worldmm.eval.run import markdown_table, run_eval
    from worldmm.services import Services, set_services

    settings = get_settings()
    try:
        benchmark, suffix = _load_benchmark(args, settings)
    except EvalDataMissing as exc:
        print(f"worldmm eval {args.benchmark}: {exc}", file=sys.stderr)
        return 2
    migrate.upgrade(settings)
    services = Services(settings)
    set_services(services)
    out = Path(args.out) if args.out else Path("bench/results") / f"eval_{args.benchmark}_{suffix}.json"
    report = run_eval(
        services,
        benchmark,
        user_id=f"eval-{args.benchmark}-{suffix}",
        out=out,
        answers=args.answers,
        sample=args.sample,
    )
    print(markdown_table(report))
    if "multiple_choice_accuracy" in report:
        model, chance = report["multiple_choice_model"], report["multiple_choice_chance"]
        print(f"multiple-choice accuracy ({model}; chance {chance}):", json.dumps(report["multiple_choice_accuracy"]))
    print(f"report: {out}")
    return 0


def _gpu(args: argparse.Namespace) -> int:
    """`worldmm gpu status|start|stop`: the deployed GpuControllerFunction (it reaches the worker inside the
    VPC), or `--in-process` the same controller in this process (a host inside the VPC, tests)."""
    from worldmm.gpu.operations import invoke_controller, run_controller

    if args.in_process:
        from worldmm.services import get_services

        result = run_controller(get_services().gpu_controller, args.action)
    else:
        name = args.function or get_settings().gpu_controller_function_name
        result = invoke_controller(name, args.action, wait=not args.no_wait)
    print(json.dumps(result, indent=2, default=str))
    return 0


ArgumentAdder = Callable[[argparse.ArgumentParser], None]
"""Adds one subcommand's positional arguments and options to its parser."""


@dataclass(frozen=True)
class Command:
    """One `worldmm` subcommand: its name, its help line, the handler it runs, and what adds its arguments."""

    name: str
    help: str
    handler: Callable[[argparse.Namespace], int]
    add_arguments: ArgumentAdder


def _migrate_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm migrate`: the target revision, and the direction."""
    p.add_argument("--revision", default=None)
    p.add_argument("--down", action="store_true", help="downgrade instead (default to base)")


def _ingest_session_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm ingest-session`: the session directory, its wearer, the window concurrency."""
    p.add_argument("path")
    p.add_argument("--user-id", required=True)
    p.add_argument("--concurrency", type=int, default=None)


def _ask_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm ask`: the question, whose memory, whether to print the trace."""
    p.add_argument("question")
    p.add_argument("--user-id", required=True)
    p.add_argument("--trace", action="store_true", help="print the agent's trace")


def _retrigger_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm retrigger`: the session, its wearer, which windows, whether to reset complete ones."""
    p.add_argument("session_id")
    p.add_argument("--user-id", required=True)
    p.add_argument("--windows", type=int, nargs="*", default=None)
    p.add_argument("--force", action="store_true", help="reset complete windows to pending first")


def _forget_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm forget`: the user to erase and who asked."""
    p.add_argument("--user-id", required=True)
    p.add_argument("--requested-by", default="cli", help="who asked (kept in the audit record)")


def _cells_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm cells`: where or move, the user, the target cell."""
    p.add_argument("action", choices=["where", "move"])
    p.add_argument("--user-id", required=True)
    p.add_argument("--to", default=None, help="move: the target cell's id")


def _reap_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm reap`: how old a stuck window must be."""
    p.add_argument("--older-than", type=int, default=None, help="seconds (default: settings)")


def _serve_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm serve`: where to listen, the public URL, the TLS pair."""
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--public-url", default=None, help="base URL clients reach (upload URLs use it)")
    p.add_argument("--tls-cert", default=None, help="PEM certificate: required to listen beyond loopback")
    p.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")


def _token_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm token`: whose token and for how long."""
    p.add_argument("--user-id", required=True)
    p.add_argument("--ttl", type=int, default=3600)


def _demo_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm demo`: the session directory and its question file."""
    p.add_argument("--sample", default=None, help="session directory (default: examples/sample-session)")
    p.add_argument(
        "--questions",
        default=None,
        help="question file in the session directory: questions.jsonl (default), questions-dev.jsonl, "
        "questions-heldout.jsonl … questions-heldout-14.jsonl",
    )


def _eval_speech_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm eval-speech`: the recording, those heard before it, where to write the report."""
    p.add_argument("--sample", default=None, help="session directory (default: examples/sample-session)")
    p.add_argument(
        "--after",
        nargs="*",
        default=[],
        metavar="DIR",
        help="recordings heard first, in order: the sample is heard knowing the voices they named",
    )
    p.add_argument("--out", default=None, help="also write the JSON report here")


def _eval_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm eval`: the benchmark, its data, which days or questions, whether to answer, the report."""
    p.add_argument("benchmark", choices=("egolife", "locomo", "sample"))
    p.add_argument("path", nargs="?", default=None, help="the same as --data")
    p.add_argument(
        "--data",
        default=None,
        help="egolife: the data folder (else EGOLIFE_DATA_DIR); locomo: the JSON file (else LOCOMO_DATA_FILE)",
    )
    p.add_argument("--days", nargs="*", default=None, help="egolife: only these days (e.g. DAY1)")
    p.add_argument(
        "--answers",
        action="store_true",
        help="also answer the multiple-choice questions and score them: the local reader beside the small local "
        "LLM (LOCAL_READER_GGUF), else the configured model (LLM_PROVIDER); an unsupported choice is an abstention",
    )
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="N",
        help="ask only N of the questions, a fixed random sample (seed 23), where all are too slow",
    )
    p.add_argument("--out", default=None, help="JSON report (default bench/results/eval_<benchmark>_<slice>.json)")


def _gpu_arguments(p: argparse.ArgumentParser) -> None:
    """`worldmm gpu`: the action, the controller function, waiting, in-process."""
    p.add_argument("action", choices=("status", "start", "stop"))
    p.add_argument("--function", default=None, help="controller function (default GPU_CONTROLLER_FUNCTION_NAME)")
    p.add_argument("--no-wait", action="store_true", help="start: return at once (asynchronous invoke)")
    p.add_argument("--in-process", action="store_true", help="run the controller here instead of invoking it")


COMMANDS: tuple[Command, ...] = (
    Command("migrate", "apply database migrations", _migrate, _migrate_arguments),
    Command(
        "ingest-session", "ingest a recorded session directory offline", _ingest_session, _ingest_session_arguments
    ),
    Command("ask", "ask the reasoning agent a question", _ask, _ask_arguments),
    Command("retrigger", "re-run ingest for a session's windows (operators)", _retrigger, _retrigger_arguments),
    Command(
        "forget",
        "erase one user's data from every store, keep an audit record (operators)",
        _forget,
        _forget_arguments,
    ),
    Command(
        "cells",
        "database cells: where a user lives, or move them to another cell (operators)",
        _cells,
        _cells_arguments,
    ),
    Command(
        "reap",
        "re-run windows left pending or failed too long (locally: also those whose process is gone)",
        _reap,
        _reap_arguments,
    ),
    Command(
        "serve",
        "local gateway: every HTTP route, presigned uploads, /openapi.json and /mcp",
        _serve,
        _serve_arguments,
    ),
    Command("token", "print a JWT for the local gateway (signed with the install's key)", _token, _token_arguments),
    Command("demo", "ingest the sample recording and answer questions (local profile)", _demo, _demo_arguments),
    Command(
        "eval-speech",
        "word error rate of the transcriber on a sample recording (its script)",
        _eval_speech,
        _eval_speech_arguments,
    ),
    Command(
        "eval",
        "memory quality: build a benchmark's memory, ask its questions, report recall",
        _eval,
        _eval_arguments,
    ),
    Command("gpu", "the GPU worker: status, start (waits until ready), stop (operators)", _gpu, _gpu_arguments),
)
"""Every `worldmm` subcommand, in the order `--help` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The `worldmm` argument parser: one subparser per entry of COMMANDS, its handler as `func`."""
    parser = argparse.ArgumentParser(prog="worldmm", description="WorldMM Live Memory")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help)
        command.add_arguments(p)
        p.set_defaults(func=command.handler)
    return parser


def _local_logging(level: int) -> None:
    """Create the parent of the library's loggers: JSON lines on stderr from `level` up, stdout left to the command.

    Library modules hold `Logger(child=True)`, named `<POWERTOOLS_SERVICE_NAME>.<module>`; in a function the
    handler's `Logger()` is their parent, here this one is (a handler module imported later reuses it).
    """
    from aws_lambda_powertools import Logger

    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(level)
    Logger(logger_handler=handler)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The gateway logs each request as the functions do; other commands log only warnings and errors.
    _local_logging(logging.INFO if args.command == "serve" else logging.WARNING)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
