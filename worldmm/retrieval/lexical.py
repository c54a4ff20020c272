"""The lexical leg: Okapi BM25 over a user's segments, with term rarity from that user's own memories.

PostgreSQL's `english` text search configuration tokenises and stems both the segments (the generated
`search_tsv` column) and the query, so the two always agree. Full-text ranking in SQL (`ts_rank_cd`)
has no notion of term rarity — a name in every window weighs as much as the rare word that matters —
and scoring BM25 in SQL unnests every matching document (50–170 ms for a week). Instead a user's
term frequencies are loaded once into a sparse matrix (a week: ~6k segments, ~0.4M postings) and
kept per process, revalidated by the user's segment generation (one primary-key read); a query then costs a few column
slices. Document frequencies and the average length are taken over the segments visible to the
query ("as of" its time bound), so a question asked on Monday is scored as Monday's memory would be.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, overload

import numpy as np

from worldmm.db.queries import retrieval as queries
from worldmm.retrieval.vocabulary import Vocabulary

if TYPE_CHECKING:
    from scipy.sparse import csc_matrix
    from sqlalchemy.orm import Session

    from worldmm.graph.cache.port import GraphCache

BM25_K1 = 1.2
BM25_B = 0.75

_SNAPSHOT_MAGIC = b"WMML"
_SNAPSHOT_VERSION = 1
_SNAPSHOT_FIELDS = (
    "ids",
    "durations",
    "start_s",
    "end_s",
    "terms",
    "term_ends",
    "indptr",
    "indices",
    "counts",
    "lengths",
)


class _Uuids(Sequence[uuid.UUID]):
    """Segment ids over a snapshot's 16-byte array: a UUID is made only for the ids a query returns."""

    def __init__(self, keys: np.ndarray) -> None:
        self._keys = keys

    def __len__(self) -> int:
        return int(self._keys.shape[0])

    @overload
    def __getitem__(self, index: int) -> uuid.UUID: ...
    @overload
    def __getitem__(self, index: slice) -> list[uuid.UUID]: ...
    def __getitem__(self, index: int | slice) -> uuid.UUID | list[uuid.UUID]:
        if isinstance(index, slice):
            return [uuid.UUID(bytes=bytes(k).ljust(16, b"\x00")) for k in self._keys[index]]
        return uuid.UUID(bytes=bytes(self._keys[index]).ljust(16, b"\x00"))


@dataclass(frozen=True)
class SegmentIndex:
    """A user's segments as arrays (ordered by end time) and their term counts as a sparse matrix."""

    ids: Sequence[uuid.UUID]
    durations: np.ndarray  # int32 seconds: 30, 180, 600, 3600
    start_s: np.ndarray  # float64 epoch seconds
    end_s: np.ndarray
    vocabulary: dict[str, int]
    term_counts: csc_matrix  # documents × terms, float32 term frequencies
    lengths: np.ndarray  # float32 tokens per document (sum of term frequencies)

    @property
    def size(self) -> int:
        return len(self.ids)

    @cached_property
    def said(self) -> Vocabulary:
        """Every stem the segments say, kept with the index (so what `near` gathers is gathered once a generation)."""
        return Vocabulary(self.vocabulary)

    def visible(self, durations: list[int], until_s: float, since_s: float | None = None) -> np.ndarray:
        """Boolean mask of the segments of these scales that end in (since, until]."""
        mask = np.isin(self.durations, durations) & (self.end_s <= until_s)
        if since_s is not None:
            mask &= self.end_s > since_s
        return mask

    def bm25(self, lexemes: list[str], mask: np.ndarray, k1: float = BM25_K1, b: float = BM25_B) -> np.ndarray:
        """BM25 score of every segment for the query lexemes; statistics over the `mask`ed segments only."""
        scores = np.zeros(self.size, dtype=np.float64)
        visible = int(mask.sum())
        if visible == 0:
            return scores
        average_length = float(self.lengths[mask].mean()) or 1.0
        norm = k1 * (1.0 - b + b * self.lengths / average_length)
        for lexeme in dict.fromkeys(lexemes):
            column = self.vocabulary.get(lexeme)
            if column is None:
                continue
            start, end = self.term_counts.indptr[column], self.term_counts.indptr[column + 1]
            rows = self.term_counts.indices[start:end]
            rows = rows[mask[rows]]
            if rows.size == 0:
                continue
            tf = self.term_counts[rows, column].toarray().ravel()
            idf = math.log(1.0 + (visible - rows.size + 0.5) / (rows.size + 0.5))
            scores[rows] += idf * tf * (k1 + 1.0) / (tf + norm[rows])
        return scores

    def to_bytes(self) -> bytes:
        """A snapshot other processes load in milliseconds (worldmm.graph.snapshot's layout)."""
        from worldmm.graph.snapshot import pack

        terms = [term.encode() for term in self.vocabulary]  # insertion order is column order
        keys = self.ids._keys if isinstance(self.ids, _Uuids) else np.array([i.bytes for i in self.ids], dtype="S16")
        return pack(
            _SNAPSHOT_MAGIC,
            _SNAPSHOT_VERSION,
            {
                "ids": keys.astype("S16", copy=False),
                "durations": self.durations,
                "start_s": self.start_s,
                "end_s": self.end_s,
                "terms": np.frombuffer(b"".join(terms), dtype=np.uint8),
                "term_ends": np.cumsum([len(t) for t in terms], dtype=np.int64),
                "indptr": self.term_counts.indptr,
                "indices": self.term_counts.indices,
                "counts": self.term_counts.data,
                "lengths": self.lengths,
            },
        )

    @classmethod
    def from_bytes(cls, blob: bytes | memoryview) -> SegmentIndex:
        """The index mapped onto a snapshot (ValueError for another format)."""
        from scipy.sparse import csc_matrix

        from worldmm.graph.snapshot import unpack

        a = unpack(blob, _SNAPSHOT_MAGIC, _SNAPSHOT_VERSION, _SNAPSHOT_FIELDS)
        text_bytes = a["terms"].tobytes()
        ends = a["term_ends"].tolist()
        starts = [0, *ends[:-1]] if ends else []
        vocabulary = {text_bytes[b:e].decode(): i for i, (b, e) in enumerate(zip(starts, ends, strict=True))}
        shape = (a["ids"].shape[0], max(1, len(vocabulary)))
        return cls(
            ids=_Uuids(a["ids"]),
            durations=a["durations"],
            start_s=a["start_s"],
            end_s=a["end_s"],
            vocabulary=vocabulary,
            term_counts=csc_matrix((a["counts"], a["indices"], a["indptr"]), shape=shape, copy=False),
            lengths=a["lengths"],
        )


def build_segment_index(session: Session, user_id: str) -> SegmentIndex:
    """Load a user's segments and their term counts from the database."""
    from scipy.sparse import csr_matrix

    ids: list[uuid.UUID] = []
    durations: list[int] = []
    starts: list[float] = []
    ends: list[float] = []
    vocabulary: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    counts: list[float] = []
    for row in queries.segment_postings(session, user_id):
        ids.append(row.id)
        durations.append(row.duration_seconds)
        starts.append(row.start_s)
        ends.append(row.end_s)
        for lexeme, count in zip(row.lexemes, row.counts, strict=True):
            indices.append(vocabulary.setdefault(lexeme, len(vocabulary)))
            counts.append(float(count))
        indptr.append(len(indices))
    matrix = csr_matrix(
        (np.asarray(counts, dtype=np.float32), np.asarray(indices, dtype=np.int32), np.asarray(indptr)),
        shape=(len(ids), max(1, len(vocabulary))),
    )
    return SegmentIndex(
        ids=ids,
        durations=np.asarray(durations, dtype=np.int32),
        start_s=np.asarray(starts, dtype=np.float64),
        end_s=np.asarray(ends, dtype=np.float64),
        vocabulary=vocabulary,
        term_counts=matrix.tocsc(),
        lengths=np.asarray(matrix.sum(axis=1), dtype=np.float32).ravel(),
    )


def query_lexemes(session: Session, user_id: str, query: str) -> tuple[int, list[str]]:
    """The user's segment generation, and the query's stemmed, stop-word-free lexemes (as the segments')."""
    return queries.query_lexemes(session, user_id, query)


def said_stems(session: Session, user_id: str, store: GraphCache | None = None) -> Vocabulary:
    """Every stem the user's memories say (their index's vocabulary)."""
    return segment_indexes.get(session, user_id, store=store).said


class SegmentIndexCache:
    """Per-process LRU of users' segment indexes, each revalidated by the segment generation on every use.

    A process without the index (a cold Lambda) loads the snapshot another process left in the shared
    store (Redis: `worldmm:graph:{user_id}:lexical`, tagged with its generation) before rebuilding.
    """

    def __init__(self, capacity: int = 8) -> None:
        self.capacity = max(1, capacity)
        self._items: OrderedDict[str, tuple[int, SegmentIndex]] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, session: Session, user_id: str, generation: int | None = None, store: GraphCache | None = None
    ) -> SegmentIndex:
        """The user's index at `generation` (read when not given): cached, from `store`'s snapshot, or rebuilt."""
        if generation is None:
            generation = queries.segment_generation(session, user_id)
        with self._lock:
            item = self._items.get(user_id)
            if item is not None and item[0] == generation:
                self._items.move_to_end(user_id)
                return item[1]
        index = _from_store(store, user_id, generation)
        if index is None:
            index = build_segment_index(session, user_id)
            if store is not None:
                store.save_snapshot(user_id, "lexical", generation, index.to_bytes())
        with self._lock:
            self._items[user_id] = (generation, index)
            self._items.move_to_end(user_id)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return index


def _from_store(store: GraphCache | None, user_id: str, generation: int) -> SegmentIndex | None:
    blob = store.load_snapshot(user_id, "lexical", generation) if store is not None else None
    if blob is None:
        return None
    try:
        return SegmentIndex.from_bytes(blob)
    except ValueError:
        return None  # another format: rebuilt and stored again


segment_indexes = SegmentIndexCache()
"""The process's cache (a warm Lambda container keeps it between invocations)."""
