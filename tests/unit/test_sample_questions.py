"""The sample's question files: every question can be counted right, and one that cannot is refused loudly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worldmm.demo import RECORDINGS, load_questions

FILES = [
    pytest.param(session, path.name, id=f"{session.name}/{path.name}")
    for session in RECORDINGS
    for path in sorted(session.glob("questions*.jsonl"))
]


@pytest.mark.parametrize(("session", "name"), FILES)
def test_every_committed_question_names_its_facts_or_is_a_refusal(session: Path, name: str) -> None:
    questions = load_questions(session, name)
    assert questions and all(bool(q.facts) != q.refusal for q in questions)


@pytest.mark.parametrize(
    "row",
    [
        {"facts": []},  # an unanswerable question without "refusal": true could never be right
        {"facts": ["milk"], "refusal": True},
    ],
)
def test_a_question_that_could_not_be_counted_is_an_error(tmp_path: Path, row: dict[str, object]) -> None:
    base = {"id": "q1", "kind": "unanswerable", "question": "What is my cat called?", "answer": "-"}
    (tmp_path / "questions-x.jsonl").write_text(json.dumps(base | row) + "\n")
    with pytest.raises(ValueError, match="q1"):
        load_questions(tmp_path, "questions-x.jsonl")
