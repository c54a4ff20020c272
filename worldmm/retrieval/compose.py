"""The answer composed from retrieved memories, without a model: the fact, when it happened, which memory.

This is the fixed plan's answer (a small local model cannot follow the agent's action format) and the
fallback whenever a capable model's structured answer fails validation. The answer is the sentence of
the retrieved memories that answers the question best (`choose_sentence`), judged by the lexemes the
lexical index uses (PostgreSQL's `english` text search configuration) and by the kind of answer the
question asks for. A memory that shares no lexeme with the question is not evidence for it, and with
none left the answer is "I don't remember that." — never the best-ranked memory quoted anyway.
"""

from __future__ import annotations

import math
import re
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from aws_lambda_powertools import Logger
from sqlalchemy import text

from worldmm.retrieval.models import Citation, MemoryKind, RetrievedMemory
from worldmm.scale import Scale, label_of

if TYPE_CHECKING:
    from worldmm.retrieval.port import ComposePorts
    from worldmm.retrieval.timeref import TimeReference

logger = Logger(child=True)


NO_MEMORY = "I don't remember that."

_LEXEMES_SQL = """
SELECT q.n, array(SELECT lexeme FROM unnest(to_tsvector('english', q.t)) AS v(lexeme, positions, weights)) AS lexemes
FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY AS q(t, n)
ORDER BY q.n
"""
# A summary's caption source: the distinct sources of the 30 s windows it spans ("heard+seen").
_CAPTION_SOURCES_SQL = """
SELECT s.id::text AS id, coalesce(s.caption_source, (
    SELECT string_agg(DISTINCT w.caption_source, '+' ORDER BY w.caption_source) FROM worldmm_segments w
    WHERE w.user_id = s.user_id AND w.duration_seconds = 30 AND w.caption_source IS NOT NULL
      AND w.start_time >= s.start_time AND w.end_time <= s.end_time)) AS source
FROM worldmm_segments s WHERE s.user_id = :user_id AND s.id = ANY(CAST(:ids AS uuid[]))
"""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)


@dataclass(frozen=True)
class Composed:
    """A composed answer and the memories it rests on (empty when nothing relevant was retrieved)."""

    answer: str
    memories: list[RetrievedMemory]
    read: bool = False
    """Whether the reader wrote the answer (else it is the quoted sentence)."""
    reranked: bool = False
    """Whether the reader's model chose the sentence over the composer's first (`reader.rerank`)."""
    judged_unanswered: bool = False
    """Whether the answer is "I don't remember that." because the reader's model judged that none of the
    sentences found answers (`reader.rerank`)."""


# Irregular past forms the english stemmer leaves apart from their verb ("left" / "leave").
_IRREGULAR_PAST = """
leave left; take took taken; go went gone; get got gotten; make made; say said; see saw seen; come came;
give gave given; find found; think thought; tell told; buy bought; bring brought; keep kept; lose lost;
meet met; pay paid; sit sat; spend spent; stand stood; forget forgot forgotten; drink drank drunk;
eat ate eaten; write wrote written; drive drove driven; run ran; begin began begun; feel felt; hear heard;
hold held; know knew known; send sent; sleep slept; sell sold; speak spoke spoken; teach taught;
wake woke woken; wear wore worn; hide hid hidden; fall fell fallen; fly flew flown; break broke broken;
choose chose chosen; ride rode ridden; sing sang sung; swim swam swum; throw threw thrown; build built;
catch caught; feed fed; fight fought; mean meant; lend lent; understand understood
"""
_IRREGULAR = {form: base for entry in _IRREGULAR_PAST.split(";") for base, *forms in [entry.split()] for form in forms}
_IRREGULAR_WORD = re.compile(r"\b(" + "|".join(sorted(_IRREGULAR, key=len, reverse=True)) + r")\b", re.I)


# Numbers said as words match the same numbers in digits ("slide three" / "slide 3"). "one" stays a word:
# it is as often a pronoun ("the blue one") as a number.
_NUMBER_WORDS = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
}  # fmt: skip
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)


# A title written short before a name means the word said ("Dr Lee" / "my doctor"): speech recognition
# writes the abbreviation.
_TITLES = {"dr": "doctor", "prof": "professor"}
_TITLE = re.compile(r"\b([Dd]r|[Pp]rof)\b\.?(?=\s+[A-Z])")


def _base_forms(value: str) -> str:
    value = _TITLE.sub(lambda m: _TITLES[m.group(1).casefold()], value)
    value = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(1).casefold()], value)
    return _IRREGULAR_WORD.sub(lambda m: _IRREGULAR[m.group(1).casefold()], value)


def text_lexemes(services: ComposePorts, texts: list[str]) -> list[set[str]]:
    """Each text's stemmed, stop-word-free lexemes, as `to_tsvector('english', ...)` gives the index
    (irregular past forms first put back to their verb: "left" is "leave")."""
    if not texts:
        return []
    texts = [_base_forms(t) for t in texts]
    with services.db.unit_of_work(None) as session:
        rows = session.execute(text(_LEXEMES_SQL), {"texts": texts}).all()
    return [set(row.lexemes) for row in rows]


def _near(a: str, b: str) -> bool:
    """One edit apart (a name heard two ways: "marco" / "marko"), for words of five letters or more."""
    if a == b:
        return True
    if min(len(a), len(b)) < 5 or abs(len(a) - len(b)) > 1 or a[0] != b[0]:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


# Lexemes (as the English index stems them) that name the same part of the day ("even" is also the adverb's).
_SAME_TIME = {"even": frozenset({"tonight"}), "tonight": frozenset({"even"})}


def _matcher(question_lexemes: set[str], lexemes: list[set[str]]) -> Callable[[set[str]], set[str]]:
    """The question's lexemes that a set of the texts' lexemes matches: the same, or — for a question word no
    text holds exactly — a spelling one edit away (speech recognition spells an unfamiliar name as it heard it);
    a part of the day also by its other name (`_SAME_TIME`)."""
    seen = set().union(*lexemes) if lexemes else set()
    variants = {q: {w for w in seen if _near(q, w)} for q in question_lexemes - seen}
    for q in question_lexemes:  # "this evening" is "tonight"
        variants.setdefault(q, set()).update(_SAME_TIME.get(q, ()))

    def hits(own: set[str]) -> set[str]:
        return (own & question_lexemes) | {q for q, near in variants.items() if own & near}

    return hits


def _matched(question_lexemes: set[str], lexemes: list[set[str]]) -> list[set[str]]:
    """Each text's lexemes that match the question's (`_matcher`)."""
    hits = _matcher(question_lexemes, lexemes)
    return [hits(own) for own in lexemes]


def _idf(matched: list[set[str]]) -> dict[str, float]:
    """BM25's idf of each matched question lexeme over the texts: a word in few of them says more."""
    count = len(matched)
    frequency = Counter(lexeme for hits in matched for lexeme in hits)
    return {lexeme: math.log(1 + (count - df + 0.5) / (df + 0.5)) for lexeme, df in frequency.items()}


_HEARD_MARK = re.compile(r"\(heard:\s*|\bI heard:\s*")


def _pieces(memory_text: str) -> list[tuple[str, bool]]:
    """The sentences of a memory's text, each with whether it was heard (the transcript part) or not."""
    parts: list[tuple[str, bool]] = []
    heard, at = False, 0
    for mark in _HEARD_MARK.finditer(memory_text):
        parts.append((memory_text[at : mark.start()], heard))
        heard, at = True, mark.end()
    parts.append((memory_text[at:], heard))
    pieces: list[tuple[str, bool]] = []
    for part, was_heard in parts:
        part = part.strip().removesuffix(")") if was_heard else part
        pieces.extend((p.strip(), was_heard) for p in _SENTENCE.split(part) if p and p.strip())
    return pieces


def memory_sentences(memory_text: str) -> list[str]:
    """The sentences of a memory's text as the composer weighs them, one by one."""
    return [sentence for sentence, _ in _pieces(memory_text)]


# Capitalised words that are not someone's name: sentence openers, days, months.
_NOT_NAMES = (
    "I|A|An|The|It|Its|Is|Yes|No|Not|Okay|Ok|Good|Hi|Hey|Hello|So|Then|And|But|Or|We|You|He|She|They|My|Your|"
    "Our|His|Her|Their|This|That|These|Those|Let|Now|Do|Does|Did|Can|Could|Will|Would|Sure|Thanks|Thank|Oh|"
    "Wait|Right|Time|Great|Note|Name|Someone|First|Second|Third|Only|Just|What|When|Where|Who|Why|How|Bye|See|There|Here|"
    "Please|Well|Yeah|Also|Today|Tomorrow|Tonight|Morning|Afternoon|Evening|Monday|Tuesday|Wednesday|"
    "Thursday|Friday|Saturday|Sunday|January|February|March|April|May|June|July|August|September|October|"
    "November|December|Remember|Don|Are|Am|Was|Were|Have|Had|Has|In|On|At|To|For|Of|With|From|Some|Any|One|Two"
)
# "Who found my notebook?", "Who was I talking to?", "What is the barista's name?", "What is my doctor's name?",
# "What is Emma's last name?", "What is the bakery called?" (not "Who is Marco?": see _WHO_IS).
_ASKS_WHO = re.compile(
    r"^\s*(?i:who|whom|whose)\b(?!(?i:'s| is| was| are)\s+(?!I\b)[A-Z])|(?i:\bname of\b)"
    r"|^\s*(?i:what(?:'s| is| was)\s+(?:(?:the|my|your|his|her|our|their)\s+)?\w+'s\s+"
    r"(?:(?:first|last|full|family|middle)\s+)?(?:name|surname))\b"
    r"|^\s*(?i:what(?:'s| is| was| are| were)\s+(?:(?:the|my|your|his|her|our|their)\s+)?(?:\w+\s+){1,5}called)\b"
)
# The thing whose name is asked ("What is the name of the cafe I go to?", "What is the cafe I go to called?").
_NAMED_THING = re.compile(
    r"\bname of\s+(?:(?:the|my|your|his|her|our|their)\s+)?(?P<of>[a-z]{3,})\b"
    r"|^\s*what(?:'s| is| was| are| were)\s+(?:(?:the|my|your|his|her|our|their)\s+)?(?P<called>[a-z]{3,})\b"
    r".*\bcalled\b",
    re.I,
)
# Words before a thing that do not name it ("my usual cafe", "the same cafe").
_NOT_A_NAME_BEFORE = frozenset(
    w.casefold() for w in (_NOT_NAMES + "|usual|same|little|big|small|new|old|local|nice|whole|other").split("|")
)
# A capitalised word that is not a sentence opener, a day or a month: someone's (or some place's) name.
_NAME = re.compile(r"\b(?!(?:" + _NOT_NAMES + r")\b)[A-Z][a-z]+")
# A name within a sentence, not its first word ("Quiet work." names nothing; "Marko asked …" is no title).
_NAME_WITHIN = r"(?<=[\w,] )" + _NAME.pattern
# A place: the thing something is in, on or at, or a place's name ("at Riverside Park", "in Boston"; not "in
# March", "on Friday").
_WHERE_FITS = re.compile(
    r"\b(?:in|on|at|behind|under|inside|near|by|beside|next to)\s+(?:the|my|a|an|your|his|her|our|their)\b"
    r"|\b(?:in|at|near)\s+(?-i:" + _NAME.pattern + ")",
    re.I,
)
# Where the wearer says they are ("I am at the office ..."), not where they will be ("I am at the doctor
# tomorrow").
_PLACE_SAID = re.compile(r"\bI(?:'m| am)\s+(?:at|in)\s+(?:the|my|a|an)\b", re.I)
_FUTURE = re.compile(r"\b(?:tomorrow|tonight|later|next|will|going to|soon|let us|let's)\b", re.I)
# "When will slide three be fixed?", "When are we rehearsing?": asked of what is planned, not of what was.
_ASKS_FUTURE = re.compile(r"\b(?:will|going to|gonna)\b|^\s*when\s+(?:am|are|is)\b.*\b\w{3,}ing\b", re.I)
# What kind of answer a question asks for, and how a sentence that gives one reads (English, as the index).
_NUMBER = r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|half)\b"
_HOURS = r"(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon|half|quarter)"
# How many of a unit of time: "20 minutes", "a week", "two years", "a few days" (with the unit after it).
_SPAN = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|half an?|few|several)"
# A time of day, not any number ("slide 3" is none): "at ten", "by around eleven", "9:30", "3 pm", "half past";
# an hour and its minutes in words ("my alarm for seven thirty"; not "a table for two"), or as the recogniser
# writes them ("my alarm for 730").
_CLOCK = (
    r"\b(?:at|by|around|about|until|till|before|after|from)\s+(?:around\s+|about\s+)?" + _HOURS + r"\b"
    r"|\b(?:at|by|for|around|until|till)\s+" + _HOURS + r"\s+(?:fifteen|thirty|forty[- ]five)\b"
    r"|\b(?:at|by|for|around|until|till)\s+(?:[1-9]|1[0-2])[0-5]\d\b"
    r"|\b\d{1,2}:\d{2}\b|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.)|\b(?:half|quarter) (?:past|to)\b"
    r"|\b(?:noon|midday|midnight|o'clock)\b"
)
# Words that ask for a price: "what" asks one only with a noun or "cost" ("What did I pay with?" asks how), or
# with what a bill does, said at its end: "What did my coffee come to?", "What did it set me back?" (not "What
# time did I come to the office?"); "how much" asks one of a thing that was or is ("How much was the train
# ticket?", not "How much milk is left?").
_PRICE_WORDS = r"cost|costs|price|prices|bill|charge|charged|fee|fees|fare|fares"
_PAY_WORDS = r"pay|paid|spend|spent"
_BILL_SAYS = r"(?:(?:come|came|comes) to|sets? me back|(?:run|runs|ran) me)(?=\s*[?.!]*\s*$)"
_ASKS_PRICE = re.compile(
    r"^\s*how much\b.*\b(?:" + _PRICE_WORDS + "|" + _PAY_WORDS + r")\b|^\s*what\b.*\b(?:" + _PRICE_WORDS + r")\b"
    r"|^\s*what\b.*\b" + _BILL_SAYS + r"|^\s*how much (?:is|was|are|were)\s+(?:the|my|a|an|our|his|her|their)\b",
    re.I,
)
_MONEY_FITS = re.compile(r"[$€£]|\b(?:dollars?|euros?|pounds?|cents?|free)\b", re.I)
_SIZE_FITS = re.compile(r"\b(?:small|medium|large|regular|tall|grande|venti)\b", re.I)
_RARE_KINDS = (_MONEY_FITS, _SIZE_FITS)
"""Kinds of fact few sentences give: one that gives it is a candidate from `DENSE_ANSWERS` on."""
# The words that ask for one of those kinds, not what it is of ("How much did I pay at the cafe?").
_RARE_KIND_WORDS = re.compile(r"\b(?:" + _PRICE_WORDS + "|" + _PAY_WORDS + r"|size)\b|\b" + _BILL_SAYS, re.I)
# "You want a coffee?" offers; it gives no reason.
_REASON_FITS = re.compile(r"\b(?:because|so|since|as|like|likes|(?<!you )(?:want|wants|need|needs))\b", re.I)
# What a question asks for, said at its end ("The report is due when?", "Marco's talk is which day?").
_ASKED_LAST = r"\s*[?.!]*\s*$"
# A day, a part of one, or a clock time.
_DAY_FITS = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tonight|tomorrow|yesterday|"
    r"morning|afternoon|evening|lunch|week|month|year)\b|" + _CLOCK,
    re.I,
)
_ASKS_DAY = r"\b(?:when|(?:what|which) (?:day|weekday|date))\b"
_ASKS_HOUR = r"\b(?:what|which) (?:time|hour)\b"
# "How come Katrina is late?" asks why; "come" is no word of what it asks about.
_HOW_COME = re.compile(r"^\s*how come\b", re.I)
_ANSWER_TYPES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (  # "Marco presents on which day and at what hour?": either may be what was heard ("on Friday afternoon")
        re.compile(_ASKS_DAY + r".*\band\b.*" + _ASKS_HOUR + "|" + _ASKS_HOUR + r".*\band\b.*" + _ASKS_DAY, re.I),
        _DAY_FITS,
    ),
    (  # "What time does the cafe open?", "Marco wants to meet at what time?": a clock time, not "every morning"
        re.compile(r"^\s*(?:(?:at |by |from )?what (?:time|hour)\b)|\bwhat (?:time|hour|o'clock)" + _ASKED_LAST, re.I),
        re.compile(_CLOCK, re.I),
    ),
    (  # "How long did my walk take?": a length of time
        re.compile(r"^\s*how long\b", re.I),
        re.compile(
            r"\b" + _SPAN + r"\s+(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b",
            re.I,
        ),
    ),
    (
        re.compile(
            r"^\s*(?:when\b|(?:on |at )?(?:what|which) (?:day|weekday|date)\b)"
            r"|\b(?:when|(?:what|which) (?:day|weekday|date))"
            + _ASKED_LAST
            + r"|^\s*what(?:'s| is| was)\s+the\s+deadline\b",
            re.I,
        ),
        _DAY_FITS,
    ),
    (  # "What is Marco's phone number?": a run of digits, said as digits or in words ("slide 3" is none)
        re.compile(r"^\s*what(?:'s| is| was| are)\b.*\b(?:phone|mobile|cell|telephone) numbers?\b", re.I),
        re.compile(r"(?:(?:\d|\b(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)\b)[\s.-]*){4,}", re.I),
    ),
    (  # "What is Marco's email address?": an address, written or said ("marco at northwind dot com")
        re.compile(r"^\s*what(?:'s| is| was| are)\b.*\be-?mail(?: address)?\b", re.I),
        re.compile(r"@|\bat\s+[\w-]+\s+dot\b", re.I),
    ),
    (  # "Which song was playing?", "What film does Marco want to see?": a title, quoted or capitalised
        re.compile(
            r"^\s*(?:what|which)\s+(?:songs?|films?|movies?|podcasts?|books?|shows?|albums?|tracks?|bands?|series|"
            r"episodes?|playlists?)\b",
            re.I,
        ),
        re.compile(r"[\"“][^\"”]+[\"”]|" + _NAME_WITHIN),
    ),
    (  # "Which doctor am I seeing?", "Which city does Marco live in?": a name ("Dr Patel", "Boston")
        re.compile(
            r"^\s*(?:what|which)\s+(?:doctors?|dentists?|clinics?|hospitals?|restaurants?|hotels?|cit(?:y|ies)|towns?|"
            r"countr(?:y|ies)|gyms?|schools?|universit(?:y|ies))\b",
            re.I,
        ),
        re.compile(_NAME_WITHIN),
    ),
    (  # "Which bus did I take?", "Which train did I catch?": its number or its name ("the 42", "the Red Line"), not
        # a person's
        re.compile(
            r"^\s*(?:what|which)\s+(?:bus|buses|train|trains|tram|trams|flight|flights|route|subway|metro)\b", re.I
        ),
        re.compile(
            r"\d|\bnumber\b|[A-Z][a-z]+\s+(?:bus|train|tram|line|express)\b|\b(?:bus|train|tram|flight|route|line)\s+[A-Z]"
        ),
    ),
    (  # "How did I get home?", "How do I go to work?": a way of getting there (not "How did I get on?")
        re.compile(
            r"^\s*how\s+(?:do|did|does|will|am|was|are|is|can)\s+\w+\s+(?:get|got|getting|go|going|travel|travelled|"
            r"traveled|travelling|traveling|come|came|coming|commute|commuted|head|headed|heading)\b(?!\s+(?:on|along)\b)",
            re.I,
        ),
        re.compile(
            r"\b(?:bus|buses|train|tram|subway|metro|underground|tube|car|taxi|cab|uber|bike|bicycle|cycled|cycling|"
            r"walk|walks|walked|walking|on foot|drive|drove|driving|flew|flight|plane|ferry|boat|scooter|lift|ride)\b",
            re.I,
        ),
    ),
    (  # "What is my laptop password?": a password, not the line that names the laptop
        re.compile(r"\b(?:passwords?|passcodes?|pin code)\b", re.I),
        re.compile(r"\b(?:passwords?|passcodes?|pin|code)\b", re.I),
    ),
    (  # "What is Marco's phone number?": digits, or a number said in words
        re.compile(r"^\s*what(?:'s| is| was| are)\b.*\bnumbers?\b", re.I),
        re.compile(r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine)\b", re.I),
    ),
    (  # "How much did I pay?", "What did the cappuccino cost me?", "What was the bill?": an amount of money
        _ASKS_PRICE,
        _MONEY_FITS,
    ),
    (  # "What size was my cappuccino?", "How big was my drink?": a size
        re.compile(r"^\s*(?:(?:in\s+)?what|which)\s+size\b|^\s*how (?:big|large|small)\b", re.I),
        _SIZE_FITS,
    ),
    (
        re.compile(r"^\s*how (?:much|many)\b", re.I),
        re.compile(r"[$€£]|\b(?:dollars?|euros?|pounds?|cents?)\b|" + _NUMBER, re.I),
    ),
    (  # "How old is Marco?": an age, or a time ago ("How old are the numbers?" / "from last year"), or the
        # birthday that says one ("Mum's sixtieth birthday", "her 40th birthday"); not a price, a clock time,
        # "every day" or "one coffee a day"
        re.compile(r"^\s*how old\b", re.I),
        re.compile(
            r"\b(?:\d{1,3}(?:st|nd|rd|th)|\w+(?:tieth|teenth|[^e]th))\s+birthday\b|"
            r"\b(?:" + _SPAN + r"|last)[\s-]+(?:years?|months?|weeks?|days?)\b(?<!\ba day)|\b(?:ago|born)\b"
            r"|\b(?:is|am|are|turned|turns|aged?)\s+(?:\d{1,3}|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
            r"(?:[\s-]\w+)?)\b(?![.:,]\d|\s*(?:o'clock|am|pm|percent)|%)",
            re.I,
        ),
    ),
    (  # "What did I eat for breakfast?", "What did Marco have for lunch?": what was eaten, not "I am making breakfast"
        re.compile(
            r"^\s*what\b.*\b(?:eat|eats|ate|eating|eaten|have|has|had|having|order|ordered|cook|cooked|cooking)\b"
            r".*\b(?:breakfast|lunch|dinner|supper|brunch)\b",
            re.I,
        ),
        # ("Have a good day." has nothing)
        re.compile(
            r"\b(?:eat|eats|ate|eating|eaten|order|ordered|cook|cooked|cooking)\b|(?<=\w )(?:have|has|had|having)\b",
            re.I,
        ),
    ),
    (  # "What colour is my mug?": a colour, not the line that names the mug
        re.compile(r"\b(?:what|which)\s+colou?rs?\b", re.I),
        re.compile(
            r"\b(?:red|orange|yellow|green|blue|purple|violet|pink|brown|black|white|grey|gray|silver|gold|beige|navy)\b",
            re.I,
        ),
    ),
    (  # "Where is the client from?": a place's name after "from"
        re.compile(r"^\s*where\b.*\bfrom" + _ASKED_LAST, re.I),
        re.compile(r"\bfrom\s+(?:the\s+)?[A-Z][a-z]+"),
    ),
    (re.compile(r"^\s*where\b", re.I), _WHERE_FITS),
    (_ASKS_WHO, _NAME),
    (re.compile(r"^\s*why\b|" + _HOW_COME.pattern, re.I), _REASON_FITS),
)
# Opening words that refer to the sentence before.
_REFERS_BACK = r"^(?:so|then|that|this|it|it's|they|them|he|she)\b"
# A sentence that leans on the one before it ("That is $4.50.", "So I put my headphones on.") is quoted with it.
_LEANS_BACK = re.compile(_REFERS_BACK + r"|^(?:yes|no)\b|\b(?:the same|it|that)\b", re.I)
# A statement that goes on about the one before it ("It is cold and sunny today.") is quoted after it.
_GOES_ON = re.compile(_REFERS_BACK + r".*[^?]$", re.I | re.S)
# Words that say what is happening as the question is asked.
_PRESENT = r"\b(?:now|currently|at the moment)\b"
# Asking for the present state ("where are my keys?", "... now?"): the latest memory that answers wins.
# "Where is the cafe keeping my notebook?" asks where someone does something, not where a thing is last ("Where is
# my notebook sitting this morning?" asks that).
_DOING = (
    r"\b(?!(?:morning|evening|thing|something|nothing|anything|everything|building|meeting|sitting|lying|standing|"
    r"hanging|staying|resting)\b)\w{3,}ing\b"
)
_NOW = re.compile(_PRESENT + r"|\bstill\b|^\s*where(?:'s| is| are)\b(?!.*" + _DOING + ")", re.I)
# Asking for the latest time something happened ("Who used the pen last time?", "When did I last see Emma?",
# "When was the piping bag last used?", "Who was the last person to use the keyboard?"): the latest wins too.
_LAST_TIME = re.compile(
    r"\blast time\b|\bmost recent(?:ly)?\b|\bthe last (?:person|one|thing)\b|\b(?:did|have|had)\s+\w+\s+last\b"
    r"|\blast\s+(?!named\b)\w+ed\b",
    re.I,
)
PRESENT_S = 120
"""A question that says what is happening now and asks about the last time before it ("Tasha is now saying
she will wash the dishes; who washed them last time?") is not answered from the memories of its last
`PRESENT_S` seconds, which tell the present; its sentences are ranked by the clause that asks."""
# Where a question's clauses part: after a sentence's end (and its closing quote), or at a comma before a
# question word ("Tasha is now washing up, who washed up last time?").
_CLAUSE_BREAK = re.compile(r"(?<=[.?!;])[\"”']?\s+|,\s*(?=(?:who|whom|what|when|where|which|why|how)\b)", re.I)
# Frequency words mark a habit; they say what kind of fact is asked, less what it is about.
_HABIT_WORDS = re.compile(
    r"\b(?:every|each|always|usually|normally|often|daily)\s*(?:morning|day|night|evening|week)?\b", re.I
)
# Words that ask what kind of answer is wanted ("what time", "how long"; at the end, an age "turning", a name
# "called") say less what it is about: like habit words they count half ("What time will the plumber arrive?"
# is not answered by "Time to go."; "What's our cat called?" by "It is called The Silent River.").
_KIND_WORDS = re.compile(
    r"^\s*(?:(?:at|by|from|on)\s+)?(?:what|which)\s+(?:time|hour|day)\b|^\s*how\s+(?:long|much|many|often|old)\b"
    r"|\b(?:(?:at|by|from|on)\s+)?(?:what|which)\s+(?:time|hour|day)" + _ASKED_LAST
    + r"|\b(?:turning|called)" + _ASKED_LAST,
    re.I,
)
# Verbs that say little of what a question is about ("When am I seeing the doctor?" is not answered by "See you
# tomorrow."; "Where did my mug end up?" by "at the end"; "When will I get it back?" by "comes back"), and one
# that says when something else is done ("before I started reading" is about reading, not "starting the
# report"): like habit words they count half.
_LIGHT_VERBS = re.compile(
    r"\b(?:see|sees|seeing|saw|seen|go|goes|going|went|gone|make|makes|making|made|take|takes|taking|took|taken|"
    r"say|says|saying|said|(?:end|ends|ended|ending) up|back|"
    r"(?:start|starts|started|starting|begin|begins|began|begun|beginning|stop|stops|stopped|stopping|finish|"
    r"finishes|finished|finishing|keep|keeps|kept|keeping)(?=\s+\w+ing\b))\b",
    re.I,
)
# "When am I going to collect my notebook?": "going to" before a verb says when, not what is done ("going to the
# cafe" stays).
_GOING_TO = re.compile(
    r"\bgoing to(?=\s+(?!(?:the|my|a|an|his|her|their|our|your|this|that|work|bed|school|town|lunch)\b)[a-z]+\b)",
    re.I,
)
# "Where did my mug go after breakfast?": a clause that says when counts half, as habit words do; so does "first
# thing" that says when ("Which room was I in first thing this morning?"), not which ("the first thing on my list").
_WHEN_CLAUSE = re.compile(
    r"(?<=\w)\s+(?:after|before|during|while)\s.*$"
    r"|\bfirst thing\b(?=\s*(?:in the morning|this morning|tomorrow|today|[?.!]*\s*$))",
    re.I,
)
# "Who is Marco?": a name asked about; with no fact about it, its mentions are the answer.
_WHO_IS = re.compile(r"^\s*(?i:who(?:'s| is| was))\s+(?P<name>[A-Z][\w'-]+)\s*\??\s*$")


@dataclass(frozen=True)
class Candidate:
    """One sentence of a retrieved memory, as a candidate answer."""

    text: str
    """The sentence as said (without who said it)."""
    heard: bool
    memory: RetrievedMemory
    previous: str | None
    following: str | None
    speaker: str | None = None
    """Who said it when another speaker said it ("Emma", "Someone"); None for the wearer or when not known."""
    before: str | None = None
    """A sentence said just before, quoted with it (what it answers with is there: "Where's my laptop?")."""
    after: str | None = None
    """A sentence said just after, quoted with it."""

    @property
    def said(self) -> str:
        """The sentence after who said it, as memory keeps it ("Emma: That is $4.50.")."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text

    @property
    def quote(self) -> str:
        """The sentence as it is quoted: with the one it leans on or replies to (`_quote`)."""
        return _quote(self)


def _candidates(memories: list[RetrievedMemory]) -> list[Candidate]:
    out = []
    for memory in memories:
        pieces = _pieces(memory.text)
        for i, (sentence, heard) in enumerate(pieces):
            previous = pieces[i - 1][0] if i > 0 else None
            following = pieces[i + 1][0] if i + 1 < len(pieces) else None
            tagged = _SPEAKER.match(sentence)
            speaker, said = (tagged.group("who"), tagged.group("said")) if tagged else (None, sentence)
            out.append(Candidate(said, heard, memory, previous, following, speaker))
    return out


# Another speaker's line as the transcriber writes it: "Emma: That is $4.50." (`TranscriptSegment.said`);
# "Me: ..." is the wearer's, as a written transcript may give it.
_SPEAKER = re.compile(r"^(?!Me:)(?P<who>[A-Z][\w'-]*):\s+(?P<said>\S.*)$", re.S)
_SPEAKER_TAG = re.compile(r"(?:^|(?<=\s))(?!Me:)[A-Z][\w'-]*:\s+")


def _answer_type(question: str) -> re.Pattern[str] | None:
    return next((fits for asks, fits in _ANSWER_TYPES if asks.search(question)), None)


def _end(memory: RetrievedMemory) -> datetime:
    return memory.end_time or memory.start_time or datetime.min.replace(tzinfo=UTC)


SEMANTIC_SHARE = 0.5
"""A semantic fact counts half beside a sentence heard: it was derived from what was said, without its words."""
COVERAGE = 0.5
NEARBY = 2
"""The share of the question's heard words (by rarity) an answering sentence and the `NEARBY` sentences
either side of it must state, unless the sentence is close to the question in meaning."""
DENSE_WEIGHT = 4.0
"""How much the embedder's judgement counts beside the shared words: a sentence at cosine 1 counts like
several rare shared words ("That is $4.50." for "what did my coffee cost" shares none)."""
SCENE_S = 60
"""A price or a size found by meaning alone answers a question whose other words were heard within this many
seconds of it ("at the cafe" as I ordered; not "for lunch", said later)."""
DENSE_KEEP = 0.5
"""A sentence that shares no word with the question is a candidate only from this cosine on."""
DENSE_ANSWERS = 0.30
"""When a word of the question is nowhere in the retrieved memories, the answer must be at least this
close in meaning, or nothing recorded answers it ("the wifi password at the office": "office" alone)."""
PLANNED_SHARE = 0.8
"""A question about what will happen takes a sentence sharing its words that says what will, from this share of
the best score on ("When am I picking up my notebook?" is not answered by "I will pick slide 3 this evening")."""


# What is said in a question by what it does, and how a sentence that does it reads: "What did Marco offer me?" /
# "You want a coffee?"; "What favour did Katrina ask?" / "Can you water the plants?"; "Who reminded me …?" / "Do
# not forget …"; "When did Marco suggest …?" / "Let us …". A sentence that does it shares the question's word.
_SPEECH_ACTS = (
    (("offer",), re.compile(r"\b(?:(?:do|would) you (?:want|like)|you want|can i get you)\b", re.I)),
    (("favour", "favor", "chore", "request"), re.compile(r"^\s*(?:can|could|would|will) you\b", re.I)),
    (("remind",), re.compile(r"\b(?:do not|don't) forget\b|\bremember\b", re.I)),
    (("suggest", "propos"), re.compile(r"\b(?:let us|let's|how about|why don't we)\b|\bif we can\b", re.I)),
)


def _speech_acts(question_lexemes: set[str]) -> Callable[[str], set[str]]:
    """The question's lexemes for what a sentence does (`_SPEECH_ACTS`): it offers, asks a favour, reminds,
    suggests; found once per question, read for each sentence."""
    asked = [(lexeme, does) for stems, does in _SPEECH_ACTS for lexeme in question_lexemes if lexeme.startswith(stems)]
    return lambda sentence: {lexeme for lexeme, does in asked if does.search(sentence)}


def _dense(services: ComposePorts, question: str, pieces: list[Candidate]) -> list[float] | None:
    """Cosine of the question with each sentence as it would be quoted (with the one it leans on); None
    without an embedder whose cosines follow meaning (`measures_meaning`, true unless an embedder says not)."""
    if not getattr(services.embedder, "measures_meaning", True):
        return None
    try:
        matrix = np.asarray(services.embedder.embed([question, *(_quote(p) for p in pieces)]), dtype=np.float32)
    except Exception as exc:  # the shared words still choose; the log says why
        logger.warning("sentence embeddings unavailable: %s", type(exc).__name__)
        return None
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    matrix /= norms[:, None]
    return [float(v) for v in matrix[1:] @ matrix[0]]


def choose_sentence(services: ComposePorts, question: str, memories: list[RetrievedMemory]) -> Candidate | None:
    """The sentence of the retrieved memories that best answers `question`, or None when none is relevant."""
    ranked = rank_sentences(services, question, memories)
    return ranked[0] if ranked else None


def rank_sentences(services: ComposePorts, question: str, memories: list[RetrievedMemory]) -> list[Candidate]:
    """The sentences of the retrieved memories that answer `question`, best first (none when none is relevant).

    A sentence counts the question's lexemes it shares, each by its rarity among the candidate sentences
    (idf; a name may be spelt one edit apart, as speech recognition heard it; frequency words such as
    "every morning" count half: they say that a habit is asked, not which; so do the words of a clause that
    says when, "after breakfast", and verbs that say little, "seeing" the doctor; who said it is one of a
    sentence's words — "Katrina: Do not forget your doctor's appointment." shares "Katrina" with "What did
    Katrina tell me not to forget?" —, but a sentence that shares nothing else does not answer a question with
    a word nowhere heard, "What car does Katrina drive?"). A sentence that leans on the one before ("That is
    $4.50.") or replies to a spoken question carries half of that one's words too.
    A sentence that shares no word scores by the embedder's cosine with the question, so an answer in
    other words counts ("What did my coffee cost?" / "That is $4.50."); a number matches in words or
    digits. A semantic fact counts half: a sentence heard that shares its words is the better evidence.
    Statements go before questions; when the question asks for
    a time, an amount, a size, a place, a reason or a person, only sentences that give one answer it (one that
    gives a price or a size, which few sentences do, may be less close in meaning: `_RARE_KINDS`); a passage
    where the person the question names is heard goes before one without them; ties go to
    the 30-second window over a summary, then to the sentence closer to the question in meaning, then to the
    one that says most. A question about the present
    ("now") takes the latest strong candidate. None when no sentence is relevant, when the question asks
    for a kind of fact no relevant sentence gives, when a word of the question is nowhere in the
    memories and no sentence that answers is close to it in meaning (`DENSE_ANSWERS`), or when every passage
    shares only a minor part of the question ("number" of "Marco's phone number") and none is close to it in
    meaning.
    """
    pieces = _candidates(memories)
    if not pieces:
        return []
    wording = _HOW_COME.sub("why", _GOING_TO.sub(" ", question))
    core_text = _LIGHT_VERBS.sub(" ", _WHEN_CLAUSE.sub(" ", _KIND_WORDS.sub(" ", _HABIT_WORDS.sub(" ", wording))))
    texts = [wording, core_text, " ".join(_RARE_KIND_WORDS.findall(question)), " ".join(_NAME.findall(question))]
    named = [p.speaker if p.speaker and _NAME.fullmatch(p.speaker) else "" for p in pieces]  # not "Someone"
    texts += [p.text for p in pieces] + named
    question_lexemes, core_lexemes, kind_lexemes, name_lexemes, *lexemes = text_lexemes(services, texts)
    own_lexemes, speaker_lexemes = lexemes[: len(pieces)], lexemes[len(pieces) :]
    piece_lexemes = [own | speaker for own, speaker in zip(own_lexemes, speaker_lexemes, strict=True)]
    hits, does = _matcher(question_lexemes, piece_lexemes), _speech_acts(question_lexemes)
    matched = [hits(own) | does(piece.text) for own, piece in zip(piece_lexemes, pieces, strict=True)]
    # Sentences that share only who said them or a name with the question ("Marko: See you tomorrow." or "Marko
    # asked if we can meet." for "Marco's car").
    by_name_only = [
        bool(m) and (not hits(own) or m <= name_lexemes) for m, own in zip(matched, own_lexemes, strict=True)
    ]
    by_text = {p.said: hits for p, hits in zip(pieces, matched, strict=True)}
    idf = _idf(matched)
    cosines = _dense(services, question, pieces)
    dense = cosines if cosines is not None else [0.0] * len(pieces)

    def weight(hits: set[str]) -> float:
        return sum(idf.get(w, 0.0) * (1.0 if w in core_lexemes or w not in question_lexemes else 0.5) for w in hits)

    def lexical(i: int) -> float:
        piece = pieces[i]
        own = weight(matched[i])
        if _leans_back(piece):
            own += 0.5 * weight(by_text.get(piece.previous or "", set()) - matched[i])
        return own

    lexical_scores = [lexical(i) for i in range(len(pieces))]
    scores = [
        (lexical_scores[i] or DENSE_WEIGHT * dense[i]) * (SEMANTIC_SHARE if _is_fact(pieces[i]) else 1.0)
        for i in range(len(pieces))
    ]
    fits = _fits(question)
    unheard = core_lexemes - set().union(*matched)
    # A sentence giving a kind of fact that few sentences give (a price, a size) is a candidate nearer in meaning
    # when every word of the question but those asking for that kind is heard ("at the cafe", not "the croissant").
    # The question's other words must be said in the scene of that sentence: "How much did I pay for lunch?" is
    # not answered by the cappuccino's price because "lunch" is heard at another time.
    rare = _answer_type(question) in _RARE_KINDS and unheard <= kind_lexemes
    asked_of = core_lexemes - kind_lexemes

    def rare_fact(i: int) -> bool:
        return (
            rare
            and fits is not None
            and dense[i] >= DENSE_ANSWERS
            and fits(pieces[i].quote)
            and asked_of <= _said_in_scene(pieces, matched, i)
        )

    kept = [
        i
        for i in range(len(pieces))
        if (lexical_scores[i] > 0 and not (unheard and by_name_only[i])) or dense[i] >= DENSE_KEEP or rare_fact(i)
    ]
    if not kept:
        return []
    names_thing = _names_thing(question)
    pool = _giving(pieces, kept, fits, by_speaker=bool(_ASKS_WHO_DID.search(question)), names_thing=names_thing)
    placed: dict[int, Candidate] = {}
    beside = _quoted_beside(question, fits, all_heard=not unheard)
    if beside is not None:
        # A statement that does not give the fact asked for itself, quoted with the sentence near it that does;
        # a question asked aloud, with the reply that does.
        for i in kept:
            if i not in pool and lexical_scores[i] > 0 and (quoted := beside(pieces, i)) is not None:
                placed[i] = quoted
                scores[i] *= BESIDE_SHARE
                pool.append(i)
    if not pool:
        return []
    if unheard and cosines is not None:
        pool = [i for i in pool if dense[i] >= DENSE_ANSWERS]
        if not pool:
            return []
    # A passage sharing only a minor word of the question ("number" of "Marco's phone number") does not answer.
    asked = weight(core_lexemes & set().union(*matched))
    pool = [
        i
        for i in pool
        if weight(_nearby(pieces, matched, i) & core_lexemes) >= COVERAGE * asked or dense[i] >= DENSE_ANSWERS
    ]
    if not pool:
        return []
    if names_thing is not None:  # "What is the cafe I go to called?": a passage naming the cafe before a person
        pool = [i for i in pool if names_thing(pieces[i].quote)] or pool
    if name_lexemes:  # "What did Katrina ask me to do?": a passage where Katrina is, before one about Marco;
        # a voice never named ("Someone: I leave for the bakery at six.") may be hers
        pool = [
            i
            for i in pool
            if _names_any(name_lexemes, _nearby(pieces, piece_lexemes, i)) or pieces[i].speaker == "Someone"
        ] or pool
    which = _WHICH.search(question)
    if which:  # "Which slide has a problem?": a passage that names the slide answers before one that does not
        [noun] = text_lexemes(services, [which.group("noun")])
        naming = [i for i in pool if any(_same_stem(w, n) for w in _lexemes_of_quote(pieces, matched, i) for n in noun)]
        pool = naming or pool
    if _ASKS_FUTURE.search(question):
        # "When will slide three be fixed?": what I or others said will happen ("I will fix slide three this
        # evening"), before a past time that shares the words ("the numbers on slide three are from last year")
        best = max(scores[i] for i in pool)
        planned = [i for i in pool if _FUTURE.search(pieces[i].text) and lexical_scores[i] > 0]
        pool = [i for i in planned if scores[i] >= PLANNED_SHARE * best] or pool
    if _NOW.search(question) or _LAST_TIME.search(question):
        # the latest memory of the thing asked about: one that names it, before one only close in meaning
        pool = [i for i in pool if lexical_scores[i] > 0] or pool
        best = max(scores[i] for i in pool)
        pool = [i for i in pool if scores[i] >= 0.6 * best]
        pool.sort(key=lambda i: (_end(pieces[i].memory), scores[i], len(piece_lexemes[i])), reverse=True)
    else:
        pool.sort(
            key=lambda i: (
                round(scores[i], 6),
                -(pieces[i].memory.duration_seconds or 0),
                round(dense[i], 6),
                len(piece_lexemes[i]),
                -i,
            ),
            reverse=True,
        )
    ranked, seen = [], set()
    for i in pool:  # the same sentence in a window and its summaries is one line
        piece = placed.get(i, pieces[i])
        if piece.quote not in seen:
            seen.add(piece.quote)
            ranked.append(piece)
    return ranked


def closest_in_meaning(
    services: ComposePorts, question: str, memories: list[RetrievedMemory], limit: int
) -> list[Candidate]:
    """The `limit` statements of the retrieved memories closest to `question` in meaning (the embedder's
    cosine), closest first, each giving the kind of fact the question asks for; none without an embedder
    that measures meaning. They find the answer in other words that the shared words miss ("What was it
    like outside on my walk?" / "It is cold and sunny today."); whether one answers is for a model to judge.
    """
    pieces = _candidates(memories)
    cosines = _dense(services, question, pieces) if pieces and limit > 0 else None
    if cosines is None:
        return []
    giving = _giving(
        pieces, list(range(len(pieces))), _fits(question), by_speaker=bool(_ASKS_WHO_DID.search(question))
    )
    closest: dict[str, Candidate] = {}
    for i in sorted(giving, key=lambda i: cosines[i], reverse=True):
        closest.setdefault(pieces[i].quote, pieces[i])
        if len(closest) == limit:
            break
    return list(closest.values())


def _giving(
    pieces: list[Candidate],
    indexes: list[int],
    fits: Callable[[str], bool] | None,
    *,
    by_speaker: bool = False,
    names_thing: Callable[[str], bool] | None = None,
) -> list[int]:
    """Of `indexes`: those whose quote gives the kind of fact asked for (`_fits`; all of them without it), the
    statements among them when any is one — a question said aloud that names the thing asked about
    (`_names_thing`: "Can you feed our cat Pepper?") counts as one. Who said a line gives a person only when
    `by_speaker` (the question asks who said or did something, not what someone is called)."""

    def gives(quote: str) -> bool:
        return fits is None or fits(quote if by_speaker else _SPEAKER_TAG.sub("", quote))

    def states(piece: Candidate) -> bool:
        return not piece.text.endswith("?") or (names_thing is not None and names_thing(piece.quote))

    giving = [i for i in indexes if gives(pieces[i].quote)]
    return [i for i in giving if states(pieces[i])] or giving


BESIDE_SHARE = 0.5
"""A sentence quoted with the one near it that gives the fact asked for (`_quoted_beside`) counts half."""


def _place_said(sentence: str) -> bool:
    return bool(_PLACE_SAID.search(sentence)) and not _FUTURE.search(sentence)


def _with_place_before(pieces: list[Candidate], i: int) -> Candidate | None:
    """`pieces[i]` quoted with the latest sentence before it in its memory where I say where I am, or None."""
    j = i - 1
    while j >= 0 and pieces[j].memory.id == pieces[i].memory.id:
        if _place_said(pieces[j].text) and pieces[j].speaker is None:
            return replace(pieces[i], before=pieces[j].said)
        j -= 1
    return None


# "Who thanked me ...?", "Whose slides …?", not "What is the bakery called?": asks who said or did something.
_ASKS_WHO_DID = re.compile(r"^\s*who(?:se)?\b", re.I)
# "Who said goodbye?", "Who told me …?": asks who spoke, which a role mentioned ("the plumber") does not tell.
_ASKS_WHO_SAID = re.compile(
    r"^\s*who\s+(?:\w+\s+)?(?:said|says|say|told|tells|tell|asked|asks|thanked|greeted)\b", re.I
)
# Someone named by what they are to me or do ("the plumber", "the whole team"): answers "who", not "what is
# their name".
_ROLE = re.compile(
    r"\b(?:the|my|our|your|his|her|their|a|an)\s+(?:whole\s+|new\s+)?(plumber|electrician|doctor|dentist|nurse|barista|"
    r"waiter|waitress|client|customer|team|colleague|boss|manager|roommate|flatmate|neighbou?r|friend|landlord|"
    r"courier|driver|teacher|cleaner|mechanic|visitor|guest|staff|mother|father|mum|dad|sister|brother|wife|"
    r"husband|partner)s?\b",
    re.I,
)
# Someone addressed by name, set off by commas: "Sure, Marco, when is ...", "Thank you, Emma.", "Yes, and
# Katrina, you are ...".
_ADDRESSES = re.compile(r"(?:^|,\s*(?:and\s+)?)(?:" + _NAME.pattern + r")\s*[,.!?]")


def _with_addressee(pieces: list[Candidate], i: int, fits: Callable[[str], bool]) -> Candidate | None:
    """`pieces[i]` quoted with the sentence just before or after it in its memory that addresses someone by
    name the question does not give (a turn of a conversation and the reply to or from that person), or None."""
    piece = pieces[i]
    for j in (i + 1, i - 1):
        if 0 <= j < len(pieces) and pieces[j].memory.id == piece.memory.id:
            said = pieces[j].text
            if _ADDRESSES.search(said) and fits(said):
                return replace(piece, after=said) if j > i else replace(piece, before=said)
    return None


def _quoted_beside(
    question: str, fits: Callable[[str], bool] | None, all_heard: bool
) -> Callable[[list[Candidate], int], Candidate | None] | None:
    """How a sentence that does not give the fact asked for is quoted with one near it that does: "Where's my
    laptop?" / "Now I am opening my laptop." with where I said I was before it; "Who thanked me for the
    slides?" / "Thanks for helping with my slides." with the reply beside it that addresses Marco by name; "What
    was the bill?" / "I always get a cappuccino here." with the price said just after it; "Why is Marco nervous?" /
    "I am nervous." with what was said next, when every word of the question was heard; and any question asked
    aloud with the reply that gives the fact ("Do you want to play tennis on Saturday?" / "Ten o'clock at
    Riverside Park.")."""
    if fits is None:
        return None
    own = _beside_by_kind(question, fits, all_heard)

    def beside(pieces: list[Candidate], i: int) -> Candidate | None:
        if pieces[i].text.endswith("?"):  # a question asked aloud, then the reply that answers it
            return _with_fact_after(pieces, i, fits)
        return own(pieces, i) if own is not None else None

    return beside


def _beside_by_kind(
    question: str, fits: Callable[[str], bool], all_heard: bool
) -> Callable[[list[Candidate], int], Candidate | None] | None:
    """How a statement is quoted with the sentence near it that gives the kind of fact asked, or None."""
    if _answer_type(question) is _WHERE_FITS:
        return _with_place_before
    if _ASKS_WHO_DID.search(question):
        return partial(_with_addressee, fits=fits)
    if _answer_type(question) is _MONEY_FITS:
        return partial(_with_fact_after, fits=fits)
    if _answer_type(question) is _REASON_FITS and all_heard:
        return _with_statement_after
    return None


def _with_statement_after(pieces: list[Candidate], i: int) -> Candidate | None:
    """`pieces[i]` quoted with the statement said next in its memory ("I am nervous." / "The client from Boston
    will be there."): a reason often follows what it explains without a word that says so; or None."""
    j = i + 1
    if pieces[i].text.endswith("?") or j == len(pieces) or pieces[j].memory.id != pieces[i].memory.id:
        return None
    return None if pieces[j].text.endswith("?") else replace(pieces[i], after=pieces[j].said)


def _with_fact_after(pieces: list[Candidate], i: int, fits: Callable[[str], bool]) -> Candidate | None:
    """`pieces[i]` quoted with the first of the `NEARBY` sentences after it in its memory that gives the fact
    asked for ("I always get a cappuccino here." / "Emma: That is $4.50."), or None."""
    for j in range(i + 1, min(len(pieces), i + NEARBY + 1)):
        if pieces[j].memory.id != pieces[i].memory.id:
            break
        if fits(_SPEAKER_TAG.sub("", pieces[j].said)):
            return replace(pieces[i], after=pieces[j].said)
    return None


# Not "Where was I making breakfast?": where something was done is said with it, not the latest place I was.
_WHERE_AM_I = re.compile(r"^\s*where (?:am|was) I\b(?!\s+\w+ing\b)(?!.*\b(?:when|while|before|after)\b)", re.I)


def _where_i_am(question: str, memories: Sequence[RetrievedMemory]) -> Candidate | None:
    """For "Where am I (right now)?": the latest sentence where I say where I am, or None."""
    if not _WHERE_AM_I.search(question):
        return None
    said = [
        p
        for p in _candidates(list(memories))
        if p.memory.memory_type == MemoryKind.EPISODIC and _place_said(p.text) and p.speaker is None
    ]
    if not said:
        return None
    return max(said, key=lambda p: (_end(p.memory), -(p.memory.duration_seconds or 0)))


_WHICH = re.compile(r"^\s*which\s+(?P<noun>[^\W\d_]{3,})\b", re.I)


def _same_stem(a: str, b: str) -> bool:
    return a == b or (a.startswith(b[:4]) and b.startswith(a[:4]) and abs(len(a) - len(b)) <= 3)


def _lexemes_of_quote(pieces: list[Candidate], matched: list[set[str]], i: int) -> set[str]:
    """The question words sentence `i` states, with those of the sentence it leans on."""
    own = set(matched[i])
    if _leans_back(pieces[i]) and i > 0 and pieces[i - 1].memory.id == pieces[i].memory.id:
        own |= matched[i - 1]
    return own


# "How many slides does the deck have?", "How many cups of coffee do I drink?": a number of that thing ("one
# coffee a day"), not any number ("Slide 3 shows the budget"); "how many times" is any number.
_HOW_MANY = re.compile(r"^\s*how many\s+(?!times\b)([^\W\d_]{3,})(?:\s+of\s+([^\W\d_]{3,}))?", re.I)
_COUNTED = re.compile(r"(?:\b\d+|" + _NUMBER + r"|\ba few|\bseveral|\bno)\s+(?:[^\W\d_]+\s+)?([^\W\d_]{3,})", re.I)


def _fits(question: str) -> Callable[[str], bool] | None:
    """Whether a quote gives the kind of fact `question` asks for (None: any quote may answer it). A person
    asked for must be someone the question does not already name ("Who is coming to Marco's presentation?"
    is not answered by "Sure, Marko, when is your presentation?")."""
    fits = _answer_type(question)
    if fits is None:
        return None
    if (many := _HOW_MANY.search(question)) is not None:
        counted = [w.casefold() for w in many.groups() if w]
        return lambda quote: any(_same_stem(word.casefold(), c) for word in _COUNTED.findall(quote) for c in counted)
    if fits.pattern != _NAME.pattern:
        return lambda quote: bool(fits.search(quote))
    asked = [w.casefold() for w in _WORD.findall(question)]
    names_thing = _names_thing(question)
    roles = _ASKS_WHO_DID.search(question) is not None and not _ASKS_WHO_SAID.search(question)
    return lambda quote: (
        any(not any(_near(name.casefold(), w) for w in asked) for name in _NAME.findall(quote))
        or (names_thing is not None and names_thing(quote))
        or (roles and any(role.casefold() not in asked for role in _ROLE.findall(quote)))
    )


def _names_thing(question: str) -> Callable[[str], bool] | None:
    """For a question asking a thing's name ("What is the cafe I go to called?"): whether a quote names it as the
    recogniser wrote it, in lower case, with a word before the thing that the question does not use ("the
    corner cafe"), or with a name after it ("our cat Pepper"). None when no thing's name is asked."""
    thing = _NAMED_THING.search(question)
    if thing is None:
        return None
    word = re.escape(thing.group("of") or thing.group("called"))
    named = re.compile(r"\b(\w+)\s+" + word + r"\b", re.I)
    name_after = re.compile(r"\b(?i:" + word + r")\s+[A-Z][a-z]+")
    asked = [w.casefold() for w in _WORD.findall(question)]
    return lambda quote: bool(name_after.search(quote)) or any(
        w.casefold() not in _NOT_A_NAME_BEFORE and not any(_near(w.casefold(), a) for a in asked)
        for w in named.findall(quote)
    )


def _nearby(pieces: list[Candidate], matched: list[set[str]], i: int) -> set[str]:
    """The words (of `matched`: the question's, or all) that sentence `i` and the sentences around it in its
    memory share (a name is often said a sentence or two before what is said of it: "Sure, Marco. When is your
    presentation? ...")."""
    memory = pieces[i].memory.id
    around = range(max(0, i - NEARBY), min(len(pieces), i + NEARBY + 1))
    return set().union(*(matched[j] for j in around if pieces[j].memory.id == memory))


def _names_any(names: set[str], lexemes: set[str]) -> bool:
    """Whether `lexemes` hold one of `names`, as spelt or one edit apart ("Marko" for "Marco")."""
    return any(_near(name, w) for name in names for w in lexemes)


def _said_in_scene(pieces: list[Candidate], matched: list[set[str]], i: int) -> set[str]:
    """The question's words said in the scene of sentence `i`: in it, or in a memory no longer than its own
    that lies within `SCENE_S` of it."""
    own = pieces[i].memory
    if own.start_time is None or own.end_time is None:
        return matched[i]
    since, until = own.start_time - timedelta(seconds=SCENE_S), own.end_time + timedelta(seconds=SCENE_S)
    length = own.duration_seconds or 0
    return set().union(
        *(
            matched[j]
            for j, piece in enumerate(pieces)
            if piece.memory.start_time is not None
            and piece.memory.end_time is not None
            and (piece.memory.duration_seconds or 0) <= length
            and since <= piece.memory.start_time
            and piece.memory.end_time <= until
        )
    )


# Words of a time phrase that do not say which time it is ("on", "last", "ago").
_TIME_GLUE = frozenset(
    {
        "on",
        "last",
        "this",
        "at",
        "for",
        "during",
        "after",
        "before",
        "ago",
        "a",
        "an",
        "couple",
        "of",
        "minute",
        "minutes",
        "hour",
        "hours",
        "day",
        "days",
    }
)


def _unrecorded_time(named: TimeReference | None, memories: Sequence[RetrievedMemory]) -> list[str]:
    """The words of a past time the question names in which none of the memories was made ("on Friday" of a
    recording made on a Tuesday): it is then something said, not when it was said. Empty otherwise."""
    if named is None or named.since is None or named.phrase is None or named.since >= (named.asked_at or named.until):
        return []
    if any(m.end_time is not None and named.since < m.end_time <= named.until for m in memories):
        return []
    return [w for w in _WORD.findall(named.phrase.casefold()) if w not in _TIME_GLUE]


def _says(words: list[str], piece: Candidate) -> bool:
    """Whether the memory a sentence was said in says every one of `words`."""
    said = piece.memory.text.casefold()
    return all(re.search(rf"\b{re.escape(w)}\b", said) for w in words)


def _is_fact(piece: Candidate) -> bool:
    return piece.memory.memory_type == MemoryKind.SEMANTIC


def _leans_back(piece: Candidate) -> bool:
    """Whether a sentence needs the one before it: it refers back, replies to a question, or is a bare
    few words ("Sure, Marko.", "Thank you, Emma.")."""
    if not piece.previous:
        return False
    few_words = len(piece.text.split()) < 4
    return bool(_LEANS_BACK.search(piece.text)) or piece.previous.endswith("?") or few_words


def judged_quote(question: str, piece: Candidate) -> str:
    """The quote a model judges against `question`: without who said its sentences unless the question asks
    who said or did something (a name the question gives makes a speaker's unrelated line look relevant)."""
    return piece.quote if _ASKS_WHO_DID.search(question) else _SPEAKER_TAG.sub("", piece.quote)


def _quote(piece: Candidate) -> str:
    """The sentence, with the one it leans on or replies to before it, or — a question or a bare few words
    opening the memory — the one after it; with the one after it that goes on about it ("I am walking to the
    cafe." / "It is cold and sunny today."); and with the context sentences it was chosen with, either side."""
    if _leans_back(piece):
        core = f"{piece.previous} {piece.said}"
    elif piece.following and (piece.text.endswith("?") or len(piece.text.split()) < 4):
        core = f"{piece.said} {piece.following}"
    else:
        core = piece.said
    if piece.following and piece.following not in core and _GOES_ON.match(piece.following):
        core = f"{core} {piece.following}"
    before = piece.before if piece.before and piece.before not in core else None
    after = piece.after if piece.after and piece.after not in core else None
    return " ".join(part for part in (before, core, after) if part)


def best_sentence(services: ComposePorts, question: str, memory_text: str) -> tuple[str, bool]:
    """The sentence of one memory's text that best answers `question`, and whether it was heard."""
    memory = RetrievedMemory(id="m", memory_type=MemoryKind.EPISODIC, text=memory_text, score=0.0, source="text")
    piece = choose_sentence(services, question, [memory])
    if piece is None:
        pieces = _pieces(memory_text)
        return pieces[0] if pieces else (memory_text.strip(), False)
    return piece.text, piece.heard


def _clock(moment: datetime) -> str:
    return f"{moment.hour}:{moment.minute:02d}"


def describe_when(moment: datetime, now: datetime) -> str:
    """`moment` in plain words relative to `now`: "this morning at 8:14", "yesterday at 19:42", ..."""
    if moment.tzinfo is not None and now.tzinfo is not None:
        moment = moment.astimezone(now.tzinfo)
    day, today = moment.date(), now.date()
    if day == today:
        part = "this morning" if moment.hour < 12 else "this afternoon" if moment.hour < 18 else "this evening"
        return f"{part} at {_clock(moment)}"
    if day == today - timedelta(days=1):
        return f"yesterday at {_clock(moment)}"
    year = f" {moment.year}" if moment.year != now.year else ""
    return f"on {moment:%A} {moment.day} {moment:%B}{year} at {_clock(moment)}"


def _source(memory: RetrievedMemory) -> str:
    if memory.memory_type == MemoryKind.SEMANTIC:
        return "from what you know (semantic memory)"
    seconds = memory.duration_seconds
    scale = label_of(seconds) + (" summary" if label_of(seconds) and seconds != Scale.WINDOW else "")
    kind = f"{scale} {memory.memory_type.value}".strip()
    if memory.start_time and memory.end_time:
        return f"from your {kind} memory of {memory.start_time:%H:%M:%S}–{memory.end_time:%H:%M:%S}"
    return f"from your {kind} memory"


@dataclass(frozen=True)
class ReadAnswer:
    """A reader's checked short answer and the sentence that supports it."""

    text: str
    support: Candidate


Reader = Callable[[str, Candidate], ReadAnswer | None]
"""Writes a checked short answer from the best sentence (`reader.read_answer`), or None."""
Reranker = Callable[[str, list[Candidate], list[RetrievedMemory]], list[Candidate]]
"""Reorders the best sentences, and those of the memories closest in meaning, by a model's judgement; returns
none when the model is sure that none answers (`reader.rerank`)."""


def compose_answer(
    services: ComposePorts,
    question: str,
    memories: list[RetrievedMemory],
    now: datetime,
    read: Reader | None = None,
    around: Sequence[RetrievedMemory] = (),
    windows_of: WindowsOf | None = None,
    rerank: Reranker | None = None,
    named_time: TimeReference | None = None,
) -> Composed:
    """The best sentence of the relevant memories, when it was said and which memory it comes from;
    "I don't remember that." when no memory is relevant. With `read`, a short written answer that its
    supporting sentence backs goes first, that sentence quoted after it as the evidence.

    "Who is Marco?" with no semantic fact about Marco is answered from the first memories that mention him.
    `around`: the 30-second windows just before and after the retrieved ones (`hybrid.adjacent_windows`),
    where "What did I do after leaving the cafe?" and "Who did I talk to?" find what was said next.
    `windows_of`: the 30-second windows a summary spans (`hybrid.windows_within`); a sentence quoted from a
    summary is told and cited as the window that said it. `rerank`: may put another of the best sentences,
    or one of the memories close to the question in meaning, first (`reader.rerank`) before the reader writes,
    and may judge that none answers ("I don't remember that."). `named_time`: the time the question names, as
    its searches read it; when nothing was recorded in that past time, the answer must say it ("At what time is
    Marco's presentation on Friday?" / "… on Friday afternoon"; not "Where did I have lunch yesterday?" / "… at
    lunch").
    """
    located = partial(_said_in, windows_of=windows_of)
    people = _people_spoken_to(question, [*memories, *around], now)
    if people is not None:
        return people
    here = _where_i_am(question, [*memories, *around])
    if here is not None:
        here = located(here)
        fact = _fact(here, now)
        return Composed(f"{fact[0].upper()}{fact[1:]}.", [here.memory])
    sequence = _said_before_or_after(services, question, memories, around)
    if sequence is not None:
        sequence = located(sequence)
        fact = _fact(sequence, now)
        return Composed(f"{fact[0].upper()}{fact[1:]}.", [sequence.memory])
    who = _WHO_IS.match(question)
    if who:
        mentions = [located(p) for p in _mentions(services, who.group("name"), memories)]
        if mentions:
            parts = [_fact(p, now) for p in mentions]
            return Composed(f"{who.group('name')}: " + "; ".join(parts) + ".", [p.memory for p in mentions])
    both = _two_parts(services, question, memories)
    if both is not None:
        both = (located(both[0]), located(both[1]))
        first, second = (_fact(p, now) for p in both)
        return Composed(f"{first[0].upper()}{first[1:]}; and {second}.", [both[0].memory, both[1].memory])
    asked, memories = _the_last_time_before_now(question, memories, now)
    says_time = partial(_says, _unrecorded_time(named_time, memories))
    ranked = [c for c in rank_sentences(services, asked, memories) if says_time(c)]
    if not ranked:
        return Composed(NO_MEMORY, [])
    composers_first = ranked[0]
    if rerank is not None:
        ranked = [c for c in rerank(question, ranked, memories) if says_time(c)]
        if not ranked:
            return Composed(NO_MEMORY, [], judged_unanswered=True)
    reranked = ranked[0] is not composers_first
    # A bare name cannot be checked against its sentence (which of the people named did it?): quoted only.
    written = read(question, ranked[0]) if read is not None and not _ASKS_WHO.search(question) else None
    if written is not None:
        support = located(written.support)
        return Composed(
            f"{written.text[0].upper()}{written.text[1:]}. ({_fact(support, now)}.)",
            [support.memory],
            read=True,
            reranked=reranked,
        )
    best = located(ranked[0])
    fact = _fact(best, now)
    return Composed(f"{fact[0].upper()}{fact[1:]}.", [best.memory], reranked=reranked)


def _the_last_time_before_now(
    question: str, memories: list[RetrievedMemory], now: datetime
) -> tuple[str, list[RetrievedMemory]]:
    """For a question that says what is happening now and asks about the last time before it: the clause that
    asks, and the memories before the present (`PRESENT_S`). Any other question and its memories unchanged."""
    if not (_LAST_TIME.search(question) and re.search(_PRESENT, question, re.I)):
        return question, memories
    clauses = [c for c in _CLAUSE_BREAK.split(question) if c and c.strip()]
    asked = next((c for c in reversed(clauses) if _LAST_TIME.search(c)), question)
    return asked, [m for m in memories if _end(m) <= now - timedelta(seconds=PRESENT_S)]


WindowsOf = Callable[[RetrievedMemory], Sequence[RetrievedMemory]]
"""The 30-second windows a summary spans (`hybrid.windows_within`)."""


def _plain(value: str) -> str:
    return " " + " ".join(re.findall(r"\w+", value.casefold())) + " "


def _said_in(piece: Candidate, windows_of: WindowsOf | None) -> Candidate:
    """A sentence of a summary as the 30-second window that said it: a summary's sentences are its windows'
    own, and the window gives the minute it was said. Unchanged when no window holds it (a written summary)."""
    memory = piece.memory
    if windows_of is None or memory.memory_type != MemoryKind.EPISODIC or (memory.duration_seconds or 0) <= 30:
        return piece
    sentence = _plain(piece.text)
    for window in windows_of(memory) if sentence.strip() else ():  # oldest first: where it was first said
        if sentence in _plain(window.text):
            return replace(piece, memory=window)
    return piece


def _fact(piece: Candidate, now: datetime) -> str:
    memory = piece.memory
    when = describe_when(memory.start_time, now) if memory.start_time else ""
    lead = ", ".join(w for w in (when, "heard" if piece.heard else "") if w)
    return f'{lead + ": " if lead else ""}"{_quote(piece)}" ({_source(memory)})'


def _mentions(services: ComposePorts, name: str, memories: list[RetrievedMemory], limit: int = 2) -> list[Candidate]:
    """What is known of `name`: a semantic fact about it, else the first episodic windows that mention it."""
    pieces = [p for p in _candidates(memories) if p.memory.memory_type != MemoryKind.VISUAL]
    if not pieces:
        return []
    # what someone said is known of them too ("Marco: Hey! Thanks for helping with my slides.")
    name_lexemes, *piece_lexemes = text_lexemes(services, [name, *(p.said for p in pieces)])
    matched = _matched(name_lexemes, piece_lexemes)
    hits = [p for p, m in zip(pieces, matched, strict=True) if m]
    facts = [p for p in hits if p.memory.memory_type == MemoryKind.SEMANTIC]
    if facts:
        return facts[:1]
    windows = sorted((p for p in hits if (p.memory.duration_seconds or 0) <= 30), key=lambda p: _end(p.memory)) or hits
    chosen: list[Candidate] = []
    for piece in windows:
        if all(piece.memory.id != c.memory.id for c in chosen):
            chosen.append(piece)
    return chosen[:limit]


def cite(services: ComposePorts, user_id: str, memories: list[RetrievedMemory]) -> list[Citation]:
    """The citations of `memories`; each segment's says where its caption came from (seen, tidied, heard)."""
    citations = [Citation.of(m) for m in memories]
    ids = [c.segment_id for c in citations if c.segment_id and _is_uuid(c.segment_id)]
    if not ids:
        return citations
    try:
        with services.db.unit_of_work(user_id) as session:
            rows = session.execute(text(_CAPTION_SOURCES_SQL), {"user_id": user_id, "ids": ids}).all()
    except Exception as exc:  # the answer stands without the sources; the log says why
        logger.warning("caption sources unavailable: %s", type(exc).__name__)
        return citations
    sources = {row.id: row.source for row in rows}
    return [c.model_copy(update={"caption_source": sources.get(c.segment_id or "")}) for c in citations]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# "What did I do right after leaving the cafe?", "What did I start just before I put my headphones on?": an
# event (a verb: "leaving", "I walked") and what was said next to it. "before lunch" is a time, not an event.
_BEFORE_AFTER = re.compile(
    r"^(?P<main>.*?)\b(?:(?:just|right|shortly|straight|immediately)\s+)?(?P<side>before|after)\s+"
    r"(?P<event>(?:[^\W\d_]+ing|(?:I|we|you|he|she|they|[A-Z][a-z]+)\s+[^\W\d_]+)\b[^?]*)\??\s*$"
)
SEQUENCE_SPAN = 4
"""How many sentences after (or before) the event a before/after question looks at."""
EVENT_CHOICES = 5
"""How many of the best sentences for the event are weighed for the one that tells it most plainly."""


def _timeline(memories: Sequence[RetrievedMemory]) -> list[Candidate]:
    """The sentences of the 30-second episodic windows, in the order they were said (windows by start)."""
    windows: dict[str, RetrievedMemory] = {}
    for memory in memories:
        if memory.memory_type == MemoryKind.EPISODIC and memory.duration_seconds == 30 and memory.start_time:
            windows.setdefault(memory.segment_id or memory.id, memory)
    ordered = sorted(windows.values(), key=lambda m: m.start_time or datetime.min.replace(tzinfo=UTC))
    return [piece for memory in ordered for piece in _candidates([memory])]


def _next_to(line: list[Candidate], at: int, step: int) -> list[Candidate]:
    """Up to `SEQUENCE_SPAN` sentences from `line[at]` on in direction `step`, while the windows touch."""
    out: list[Candidate] = []
    j = at
    while len(out) < SEQUENCE_SPAN:
        k = j + step
        if not 0 <= k < len(line):
            break
        a, b = (line[j].memory, line[k].memory) if step > 0 else (line[k].memory, line[j].memory)
        if a.id != b.id and (a.end_time is None or b.start_time is None or b.start_time > a.end_time):
            break  # a gap: the window between them was not retrieved
        out.append(line[k])
        j = k
    return out


def _said_before_or_after(
    services: ComposePorts, question: str, memories: list[RetrievedMemory], around: Sequence[RetrievedMemory]
) -> Candidate | None:
    """For "What did I do after X?" / "... before X?": the sentence said next to the one that tells X, the
    one that shares most of the rest of the question (nearest first), quoted with X's sentence. None when the
    question is not such a question or X is not found (the usual ranking then answers)."""
    asked = _BEFORE_AFTER.match(question)
    if not asked:
        return None
    everything = [*memories, *around]
    events = rank_sentences(services, asked.group("event"), everything)
    if not events:
        return None
    # Of the sentences that tell the event, the one that says little else ("I am leaving the cafe now." over
    # "I think I left my notebook at the cafe.").
    told, *lexemes = text_lexemes(services, [asked.group("event"), *(e.text for e in events[:EVENT_CHOICES])])
    event = events[max(range(len(lexemes)), key=lambda n: (len(told & lexemes[n]), -len(lexemes[n] - told), -n))]
    line = _timeline(everything)
    at = next((n for n, p in enumerate(line) if p.text == event.text), None)
    if at is None:  # the event only in a summary: what the summary says next
        line = _candidates([event.memory])
        at = next((n for n, p in enumerate(line) if p.text == event.text), None)
        if at is None:
            return None
    step = 1 if asked.group("side").casefold() == "after" else -1
    near = [p for p in _next_to(line, at, step) if not p.text.endswith("?") and p.text != event.text]
    if not near:
        return None
    main, *lexemes = text_lexemes(services, [asked.group("main"), *(p.text for p in near)])
    wordy = [len(p.text.split()) >= 4 for p in near]
    # the most of the question's own words, then a full sentence over a few words, then the nearest
    best = max(range(len(near)), key=lambda n: (len(main & lexemes[n]), wordy[n], -n))
    chosen = near[best]
    return replace(chosen, after=event.said) if step < 0 else replace(chosen, before=event.said)


# "Who did I talk to this morning?", "How many people did I speak with?": the people addressed by name (not
# "How many people are on Marco's team?").
_ASKS_PEOPLE = re.compile(
    r"^\s*(?:who\b(?!.*\bwill\b).*\b(?:talk|talked|speak|spoke|spoken|chat|chatted|met|meet|see|saw)\b"
    r"|how many (?:people|persons)\s+(?:did|have|had)\s+I\b)",
    re.I,
)
_ADDRESSED = re.compile(
    r"(?:^|[,.!?]\s+|\b(?:[Hh]i|[Hh]ey|[Hh]ello|[Bb]ye|[Tt]hanks|[Tt]hank you)\s+)(?:and\s+)?"
    r"(?P<name>(?!(?:" + _NOT_NAMES + r")\b)[A-Z][a-z]+)\s*[,.!?]"
)
_COUNT_WORDS = ("no one", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def asks_for_people(question: str) -> bool:
    """Whether `question` asks who was spoken to, or how many people: answered from every window heard in
    its time (`_people_spoken_to`), not only those retrieved."""
    return bool(_ASKS_PEOPLE.search(question))


def _people_spoken_to(question: str, memories: Sequence[RetrievedMemory], now: datetime) -> Composed | None:
    """For "Who did I talk to?" and "How many people did I speak with?": the people addressed by name in
    what was heard ("Thank you, Emma.", "Sure, Marko, when is ..."), in the order first heard, each with the
    sentence that names them. None for other questions, or when nobody was addressed by name."""
    if not _ASKS_PEOPLE.search(question):
        return None
    pieces = sorted(
        (p for p in _candidates(list(memories)) if p.heard and p.memory.memory_type == MemoryKind.EPISODIC),
        key=lambda p: (p.memory.start_time or datetime.min.replace(tzinfo=UTC), p.memory.duration_seconds or 0),
    )
    named: dict[str, Candidate] = {}
    for piece in pieces:
        for match in _ADDRESSED.finditer(piece.text):
            name = match.group("name")
            if not any(_near(name.casefold(), known.casefold()) for known in named):
                named[name] = piece
    if not named:
        return None
    names = list(named)
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
    if re.match(r"^\s*how many", question, re.I):
        count = _COUNT_WORDS[len(names)] if len(names) < len(_COUNT_WORDS) else str(len(names))
        listed = f"{count} by name: {listed}"
    evidence = "; ".join(_fact(p, now) for p in named.values())
    memories_cited = list({p.memory.id: p.memory for p in named.values()}.values())
    return Composed(f"{listed[0].upper()}{listed[1:]} (addressed by name: {evidence}).", memories_cited)


# "What do I need to pick up and buy later today?", "Who will fix slide three, and when?": two questions in
# one. The second part opens with a word that is not a pronoun, an article or a name.
_TWO_PARTS = re.compile(
    r"^(?P<first>\s*(?P<wh>what|who|when|where|which|how|why)\b[^?]*?),?\s+and\s+"
    r"(?P<second>(?!(?:I|me|my|you|your|he|him|she|his|her|we|us|our|they|them|their|the|a|an|it|its)\b)"
    r"[a-z][^?]*)\??\s*$",
    re.I,
)
_WH_WORD = re.compile(r"^\s*(?:what|who|when|where|which|how|why)\b", re.I)


def _two_parts(
    services: ComposePorts, question: str, memories: list[RetrievedMemory]
) -> tuple[Candidate, Candidate] | None:
    """For a question that asks two things, the best sentence for each part, when both parts are answered and
    by different sentences (else None: the whole question is ranked as one)."""
    asked = _TWO_PARTS.match(question)
    if not asked or asked.group("second")[:1].isupper():
        return None
    first, second = asked.group("first").strip(), asked.group("second").strip()
    rest = _WH_WORD.sub("", first).strip()
    # "... and when?": the second part asks of the first one's subject; "... and buy milk": with its wh-word
    second = f"{second} {rest}" if _WH_WORD.match(second) else f"{asked.group('wh')} {second}"
    one, two = rank_sentences(services, first + "?", memories), rank_sentences(services, second + "?", memories)
    if not one or not two or one[0].quote in two[0].quote or two[0].quote in one[0].quote:
        return None
    return one[0], two[0]
