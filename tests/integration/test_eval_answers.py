"""`worldmm eval` scores the question path too: the windows the answer cites, and multiple-choice accuracy."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.support.harness import make_settings
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase
from worldmm.eval.datasets import Benchmark, EvalQuestion, EvalWindow
from worldmm.eval.run import CHOICE_CITED, CITED, MULTIPLE_CHOICE_PURPOSE, question_sample, run_eval
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.retrieval import compose
from worldmm.retrieval.compose import Weights
from worldmm.services import Services

pytestmark = pytest.mark.integration

DAY = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SCENES = [
    ("breakfast", "I pour oat milk into my coffee in the kitchen."),
    ("notebook", "I put the blue notebook in the desk drawer of the office."),
    ("screwdriver", "Alice tightens the screws of the rack with a screwdriver."),
    ("flowers", "Lucia arranges tulips in a vase on the dining table."),
]


def _benchmark() -> Benchmark:
    windows = [
        EvalWindow(key, "day1", n, DAY + timedelta(seconds=30 * n), DAY + timedelta(seconds=30 * n + 30), caption, "")
        for n, (key, caption) in enumerate(SCENES)
    ]
    asked = DAY + timedelta(minutes=10)
    questions = [
        EvalQuestion("q1", "Where did I put the blue notebook?", "EntityLog", asked, ("notebook",),
                     {"A": "In the fridge", "B": "In the desk drawer", "C": "On the sofa"}, "B"),
        EvalQuestion("q2", "Who used the screwdriver on the rack?", "EntityLog", asked, ("screwdriver",),
                     {"A": "Lucia", "B": "Me", "C": "Alice"}, "C"),
        EvalQuestion("q3", "What did Lucia put in the vase?", "EventRecall", asked, ("flowers",),
                     {"A": "Tulips", "B": "Roses"}, "A"),
    ]
    return Benchmark("answers", windows, questions)


def _reader(request: LLMRequest) -> dict[str, object]:
    """A stand-in reader: the choice named by the shortest retrieved memory that mentions the question's
    object; "Z" (no letter) for the vase question."""
    prompt = request.prompt_text
    question = prompt.split("<question>", 1)[1].split("</question>", 1)[0]
    if "vase" in question:
        return {"choice": "Z", "cited": []}
    subject = next(word for word in ("notebook", "screwdriver") if word in question)
    memories = re.findall(r"^\[(\d+)\] <memory[^>]*>(.+)</memory>$", prompt, flags=re.MULTILINE)
    choices = re.findall(r"^([A-D])\. (.+)$", prompt, flags=re.MULTILINE)
    for number, memory in sorted(memories, key=lambda m: len(m[1])):
        if subject in memory:
            for letter, choice in choices:
                if re.search(rf"\b{choice.split()[-1]}\b", memory, flags=re.IGNORECASE):
                    return {"choice": letter, "cited": [int(number)]}
    return {"choice": "A", "cited": []}


@pytest.fixture(autouse=True)
def _answers_never_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights that rank by shared words and refuse nothing: the eval's scoring is under test, not the refusal."""
    plain = Weights((3.0, 1.0, 0.0, 1.0, -1.0, 0.5, 0.0, 0.0, 0.5, 0.0), bias=0.0, refuse_below=-99.0)
    monkeypatch.setattr(compose, "fitted_weights", lambda: plain)


@pytest.fixture
def svc(pg: LocalDatabase, db: Database) -> Iterator[Services]:
    settings = make_settings(
        database_url=pg.app_url, database_admin_url=pg.admin_url, extraction_provider="spacy",
        summary_provider="extractive", agent_mode="plan",
    )
    llm = ScriptedLLM().script(MULTIPLE_CHOICE_PURPOSE, _reader)
    yield Services(settings, db=db, llm=llm, embedder=HashEmbedder(settings.embedding_dim))


def test_eval_scores_the_cited_windows_and_the_multiple_choice_answers(svc: Services) -> None:
    report = run_eval(svc, _benchmark(), user_id="eval-answers", out=None, progress=False, answers=True)

    cited = report["methods"][CITED]["exact"]
    assert cited["R@1"] == 1.0  # the plan's answer cites the window that holds each fact
    accuracy = report["multiple_choice_accuracy"]
    # q3's "Z" is no letter and cites nothing: an abstention, counted wrong.
    assert accuracy["all"] == {"accuracy": round(2 / 3, 4), "questions": 3, "abstained": 1}
    assert accuracy["EntityLog"] == {"accuracy": 1.0, "questions": 2, "abstained": 0}
    assert report["multiple_choice_chance"] == round((1 / 3 + 1 / 3 + 1 / 2) / 3, 4)
    assert report["methods"][CHOICE_CITED]["exact"]["R@1"] == round(2 / 3, 4)  # q1, q2 cite their window
    prompts = [c.prompt_text for c in svc.llm.calls_for(MULTIPLE_CHOICE_PURPOSE)]  # type: ignore[attr-defined]
    assert len(prompts) == 3
    assert "desk drawer" in prompts[0] and "B. In the desk drawer" in prompts[0]


def test_eval_without_answers_makes_no_model_call(svc: Services) -> None:
    report = run_eval(svc, _benchmark(), user_id="eval-no-answers", out=None, progress=False)

    assert "multiple_choice_accuracy" not in report
    assert svc.llm.calls_for(MULTIPLE_CHOICE_PURPOSE) == []  # type: ignore[attr-defined]



def test_a_choice_that_cites_no_memory_is_an_abstention(svc: Services) -> None:
    svc.llm.script(MULTIPLE_CHOICE_PURPOSE, lambda request: {"choice": "B", "cited": [99]})  # type: ignore[attr-defined]
    report = run_eval(svc, _benchmark(), user_id="eval-uncited", out=None, progress=False, answers=True)

    # q1's key is B, but the answer cites no memory it was shown: not counted right.
    assert report["multiple_choice_accuracy"]["all"] == {"accuracy": 0.0, "questions": 3, "abstained": 3}


def test_the_question_sample_is_fixed_and_of_the_size_asked() -> None:
    questions = _benchmark().questions
    assert question_sample(questions, None) == questions
    chosen = question_sample(questions, 2)
    assert len(chosen) == 2 and {q.question_id for q in chosen} <= {"q1", "q2", "q3"}
    assert question_sample(questions, 2) == chosen
