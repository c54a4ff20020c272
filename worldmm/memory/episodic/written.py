"""Written summaries: a local model writes what happened in a span, and every detail it states is checked.

`WrittenSummarizer` asks the local reader's model (`written_summary.txt`) for a short account of a 3 min,
10 min or 1 h span, addressed to the wearer ("You ..."), from the span's own lines: each window's transcript
with its speakers, or the summaries one scale down. A small model writes fluently and invents freely, so the
answer is read back (`unsupported_details`): every name, place, number, day and time in it must be in the
lines it was written from (numbers compared by value: "nine o'clock" supports "9", "four dollars fifty"
supports "$4.50"). A summary that fails the check, or an answer that cannot be used, is replaced by the
extractive summary of the same children (`ExtractiveSummarizer`), and the memory records which it is: the
model id returned is the extractive one then (`caption_source` "extractive", else "written").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from aws_lambda_powertools import Logger
from pydantic import BaseModel, Field, create_model

from worldmm.errors import ModelOutputError
from worldmm.llm.structured import NonPlaceholderStr, build_request, parse_model
from worldmm.media.captioner import HEARD_PREFIX
from worldmm.memory.episodic.spacy_extractor import NAME_LABELS, load_pipeline
from worldmm.memory.episodic.summary_tree import ChildCaption
from worldmm.scale import Scale, label_of

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

    from worldmm.llm.port import LLM
    from worldmm.llm.usage import UsageLog
    from worldmm.memory.settings import MemorySettings

logger = Logger(child=True)

WRITTEN_PURPOSE = "written_summary"
SENTENCES: dict[int, int] = {Scale.THREE_MIN: 3, Scale.TEN_MIN: 4, Scale.HOUR: 5}
CHARS_PER_TOKEN = 2
"""Fewest characters a token of the answer carries (grammar-constrained decoding picks short tokens too)."""
JSON_TOKENS = 32
MAX_LINES_CHARS = 5000
"""The most of a span's lines the model reads (the reader's context is 2,048 tokens)."""

class WrittenResult(BaseModel):
    """The written_summary prompt's answer."""

    summary: NonPlaceholderStr


MAX_CHARS: dict[int, int] = {Scale.THREE_MIN: 360, Scale.TEN_MIN: 480, Scale.HOUR: 600}
"""The longest summary the model may write at each scale: the answer's schema bounds it (a grammar-constrained
model stops there), so a model that does not keep to the sentences asked for costs no more than this."""


@cache
def _result_model(max_chars: int) -> type[WrittenResult]:
    """`WrittenResult` whose summary is at most `max_chars` long (in the schema the model is held to)."""
    return create_model(
        f"WrittenResult{max_chars}",
        __base__=WrittenResult,
        summary=(Annotated[NonPlaceholderStr, Field(max_length=max_chars)], ...),
    )


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def whole_sentences(text: str) -> str:
    """`text` without a last sentence the length bound cut off (when a whole one comes before it)."""
    text = " ".join(text.split())
    if text.endswith((".", "!", "?")):
        return text
    sentences = _SENTENCE_END.split(text)
    return " ".join(sentences[:-1]) if len(sentences) > 1 else text


# --- numbers ------------------------------------------------------------------------------------------

_UNITS_TEXT = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
)
_TENS_TEXT = "twenty thirty forty fifty sixty seventy eighty ninety"
_ORDINALS_TEXT = (
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
)
_UNITS, _TENS, _ORDINALS = _UNITS_TEXT.split(), _TENS_TEXT.split(), _ORDINALS_TEXT.split()
_WORD_VALUES: dict[str, int] = {
    **{w: i for i, w in enumerate(_UNITS)},
    **{w: 20 + 10 * i for i, w in enumerate(_TENS)},
    **{w: i for i, w in enumerate(_ORDINALS) if i},
    **{w[:-1] + "ieth": 20 + 10 * i for i, w in enumerate(_TENS)},
}
_SCALES = {"hundred": 100, "thousand": 1000}
_DIGITS = re.compile(r"\d+")


def _token_values(word: str) -> list[int] | None:
    """The number(s) a token writes: "4.50" → [4, 50], "9:00" → [9], "3rd" → [3], "nine" → [9]; None if none."""
    lower = word.lower()
    if lower in _WORD_VALUES:
        return [_WORD_VALUES[lower]]
    if lower in _SCALES:
        return [_SCALES[lower]]
    parts = _DIGITS.findall(lower)
    if not parts or (not lower[0].isdigit() and lower[0] not in "$£€"):
        return None
    values = [int(parts[0])] + [int(p) for p in parts[1:] if int(p) != 0]
    return values


def number_values(words: Sequence[str]) -> set[int]:
    """Every number `words` write, alone and as runs of number words ("twenty five" → 20, 5 and 25)."""
    values: set[int] = set()
    run: list[int] = []

    def close() -> None:
        total, current = 0, 0
        for value in run:
            if value in (100, 1000):
                current = max(current, 1) * value
                total, current = total + current, 0
            else:
                current += value
        if len(run) > 1:
            values.add(total + current)
        run.clear()

    for word in words:
        found = _token_values(word)
        if found is None:
            if word not in {"-", "and"}:
                close()
            continue
        values.update(found)
        if word.lower() in _WORD_VALUES or word.lower() in _SCALES:
            run.append(found[0])
        else:
            close()
    close()
    return values


# --- the check ----------------------------------------------------------------------------------------

_DETAIL_LABELS = NAME_LABELS | {"DATE", "TIME", "MONEY", "QUANTITY", "CARDINAL", "ORDINAL", "PERCENT", "NORP"}
_CLOSED_CLASS = {"PRON", "DET", "AUX", "ADP", "CCONJ", "SCONJ", "PUNCT", "PART", "INTJ"}


def _words(doc: Doc) -> set[str]:
    return {w for t in doc for w in (t.lower_, t.lemma_.lower()) if w}


def unsupported_details(nlp: Language, summary: str, source: str) -> list[str]:
    """The names, places, numbers, days and times `summary` states that `source` does not contain."""
    summary_doc, source_doc = nlp(summary), nlp(source)
    known_words = _words(source_doc)
    known_numbers = number_values([t.text for t in source_doc])
    details: list[list[Any]] = [list(e) for e in summary_doc.ents if e.label_ in _DETAIL_LABELS]
    in_ents = {t.i for e in details for t in e}
    details += [
        [t]
        for t in summary_doc
        if t.i not in in_ents
        and (t.like_num or (t.is_title and not t.is_sent_start and t.pos_ not in _CLOSED_CLASS) or t.pos_ == "PROPN")
    ]
    missing: list[str] = []
    for tokens in details:
        numbers = number_values([t.text for t in tokens])
        words = [
            t
            for t in tokens
            if t.is_alpha and not t.is_stop and t.pos_ not in _CLOSED_CLASS and _token_values(t.text) is None
        ]
        absent = [t.text for t in words if t.lower_ not in known_words and t.lemma_.lower() not in known_words]
        written = {v for t in tokens for v in (_token_values(t.text) or [])}
        # each number as written is in the source, or a run of number words totals one that is
        number_ok = written <= known_numbers or bool((numbers - written) & known_numbers)
        if absent or not number_ok:
            missing.append(" ".join(t.text for t in tokens))
    return list(dict.fromkeys(missing))


_SECOND_PERSON = {"you", "your", "yours", "yourself"}
MIN_SHARED_WORDS = 2
"""Content words a summary's clause shares with a line before that line counts as what the clause reports."""


def _content(tokens: Any) -> set[str]:
    return {
        t.lemma_.lower()
        for t in tokens
        if t.is_alpha and not t.is_stop and t.pos_ in {"NOUN", "VERB", "ADJ", "PROPN", "NUM", "ADV"}
    }


def _subjects(verb: Any) -> list[Any]:
    return [c for c in verb.children if c.dep_ in {"nsubj", "nsubjpass"}]


def misattributed(nlp: Language, summary: str, source: str) -> list[str]:
    """The clauses of `summary` that give a line's words to someone other than who said them or was told them.

    A clause's subject is "you" (the wearer) or a name; the source line it reports is the one sharing most of
    its content words (at least `MIN_SHARED_WORDS`). "You" may report the wearer's own line or one said to the
    wearer (with "you" or "your" in it); a name, a line that person said or whose subject they are."""
    lines = []
    for line in source.splitlines():
        match = _SPEAKER.match(line)
        if match:
            lines.append((match.group(1), line[line.index(":", match.start(1)) + 1 :]))
    if not lines:
        return []
    docs = list(nlp.pipe(text for _, text in lines))
    words = [_content(doc) for doc in docs]
    wrong: list[str] = []
    for verb in nlp(summary):
        if verb.pos_ not in {"VERB", "AUX"}:
            continue
        head = verb
        while head.dep_ == "conj" and head.head is not head and not _subjects(head):
            head = head.head  # "You made breakfast and went to class": "went" is yours too
        subjects = _subjects(head)
        if len(subjects) != 1:
            continue
        subject = subjects[0]
        who = WEARER_LABEL if subject.lower_ == "you" else subject.text if subject.pos_ == "PROPN" else None
        if who is None:
            continue
        clause = _content(t for t in verb.subtree if t.i != subject.i and (t.dep_ != "conj" or t.head is not verb))
        shared = [len(clause & w) for w in words]
        best = max(range(len(lines)), key=lambda i: shared[i])
        if shared[best] < MIN_SHARED_WORDS:
            continue
        speaker, doc = lines[best][0], docs[best]
        if who == WEARER_LABEL:
            told = any(t.lower_ in _SECOND_PERSON for t in doc)
        else:  # a line about them ("Marco is nervous"), not one only calling them ("Thank you, Emma")
            told = any(t.text == who and t.dep_ in {"nsubj", "nsubjpass"} for t in doc)
        if speaker != who and not told:
            wrong.append(" ".join(t.text for t in verb.subtree))
    return wrong


# --- the summariser -----------------------------------------------------------------------------------


WEARER_LABEL = "You"
"""Whose lines the wearer's are, as the model reads them (the transcript writes them without a name)."""
_SPEAKER = re.compile(r"^\s*(?:\[[0-9:.\s-]+\]\s*)?([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s+\S")


def _said(transcript: str) -> list[str]:
    """A window's transcript lines, each after who said it: the wearer's (written without a name) after "You"."""
    lines = [line.strip() for line in transcript.splitlines() if line.strip()]
    if len(lines) < 2 and not any(_SPEAKER.match(line) for line in lines):
        return lines  # no speaker told apart: whose words these are is not known
    return [line if _SPEAKER.match(line) else f"{WEARER_LABEL}: {line}" for line in lines]


def span_lines(children: Sequence[ChildCaption]) -> str:
    """What the model reads of a span: per child, its clock time, then what it has to say — a window's
    caption (unless it is only what was heard) and its transcript lines after their speakers; a summary's text."""
    blocks: list[str] = []
    for child in sorted(children, key=lambda c: (c.start_time, c.segment_id)):
        lines: list[str] = []
        caption = child.caption.strip()
        window = child.duration_seconds == Scale.WINDOW
        if caption and not (window and caption.startswith(HEARD_PREFIX) and child.transcript.strip()):
            lines.append(caption)
        if window:
            lines.extend(_said(child.transcript))
        if lines:
            blocks.append(f"[{child.start_time:%H:%M}]\n" + "\n".join(lines))
    return "\n".join(blocks)[:MAX_LINES_CHARS]


class Fallback(Protocol):
    """The summariser whose summary stands where a written one fails its check (the extractive one)."""

    def summarize(
        self, scale: int, children: Sequence[ChildCaption], usage: UsageLog | None = None
    ) -> tuple[str, str]: ...


class WrittenSummarizer:
    """The Summarizer port on a local model, checked; the extractive summary where the check fails."""

    def __init__(
        self, llm: LLM, settings: MemorySettings, fallback: Fallback, nlp: Callable[[], Language] | None = None
    ) -> None:
        self.llm = llm
        self.settings = settings
        self.fallback = fallback
        self._nlp_factory = nlp or (lambda: load_pipeline(settings.spacy_model))
        self._nlp: Language | None = None
        self._lock = threading.Lock()

    def nlp(self) -> Language:
        with self._lock:
            if self._nlp is None:
                self._nlp = self._nlp_factory()
            return self._nlp

    def write(
        self, scale: int, children: Sequence[ChildCaption], usage: UsageLog | None = None
    ) -> tuple[str, str, list[str]]:
        """The model's summary, its model id and what in it the span does not support (raises ModelOutputError
        on an unusable answer)."""
        lines = span_lines(children)
        if not lines:
            raise ModelOutputError("nothing to write a summary from")
        sentences = SENTENCES.get(scale, 3)
        max_chars = MAX_CHARS.get(scale, max(MAX_CHARS.values()))
        result_model = _result_model(max_chars)
        request = build_request(
            WRITTEN_PURPOSE,
            model=self.llm_model_id,
            max_tokens=max_chars // CHARS_PER_TOKEN + JSON_TOKENS,
            response_model=result_model,
            scale=label_of(scale, f"{scale}-second") + " span",
            sentences=sentences,
            lines=lines,
        )
        response = self.llm.complete(request)
        if usage is not None:
            usage.add(WRITTEN_PURPOSE, response)
        summary = whole_sentences(parse_model(response.text, result_model).summary)
        nlp = self.nlp()
        with self._lock:  # a Language is not safe for concurrent use
            unsupported = unsupported_details(nlp, summary, lines) + misattributed(nlp, summary, lines)
        return summary, response.model, unsupported

    @property
    def llm_model_id(self) -> str:
        return str(getattr(self.llm, "model_id", self.settings.extraction_model))

    def summarize(self, scale: int, children: Sequence[ChildCaption], usage: UsageLog | None = None) -> tuple[str, str]:
        if not children:
            raise ValueError("nothing to merge")
        try:
            summary, model, unsupported = self.write(scale, children, usage)
        except ModelOutputError as exc:
            logger.warning("written_summary_unusable", extra={"scale": scale, "error": str(exc)[:200]})
            return self.fallback.summarize(scale, children, usage)
        if unsupported:
            logger.info("written_summary_unsupported", extra={"scale": scale, "unsupported": unsupported[:10]})
            return self.fallback.summarize(scale, children, usage)
        return summary, model
