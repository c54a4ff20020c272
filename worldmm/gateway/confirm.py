"""Confirmation of irreversible MCP tools by the human, outside the model's reach.

A model can be talked into anything its context holds — a recorded poster, a bystander's words returned by
`search_memories` — so an erase cannot hang on a phrase the model could type. `forget_me` without a code
only issues a short-lived, single-use code and shows it to the human on a channel the MCP client never
reads (`ConfirmationChannel`: the `worldmm serve` console locally); the erase runs only when the tool is
called again with that code, which the model can know only if the human hands it over.
"""

from __future__ import annotations

import hmac
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or typed from a screen
CODE_LENGTH = 8  # 31^8 ≈ 2^39.6
CODE_TTL_S = 300
MAX_ATTEMPTS = 5
MAX_PENDING_PER_USER = 8
"""Codes one user may have pending at once (a new one drops their oldest): a client asking for a code for span
after span cannot grow the table."""
MAX_PENDING = 10_000
"""Codes pending at once, all users together (expired ones go first, then the oldest)."""
MAX_SHOWN_CHARS = 200


def printable(text: str) -> str:
    """`text` as one console line: control and format characters (ANSI escapes, newlines, bidi overrides)
    shown as escapes, cut to MAX_SHOWN_CHARS, so a tool argument cannot rewrite what the operator reads."""
    import unicodedata

    shown = "".join(
        ch if unicodedata.category(ch)[0] != "C" else ch.encode("unicode_escape").decode("ascii") for ch in text
    )
    return shown if len(shown) <= MAX_SHOWN_CHARS else shown[: MAX_SHOWN_CHARS - 1] + "…"


class ConfirmationChannel(Protocol):
    """Where a confirmation code reaches the human, and only the human."""

    def show(self, user_id: str, action: str, code: str, ttl_s: int) -> None: ...


class ConsoleChannel:
    """The terminal `worldmm serve` runs in (the local profile's owner sits at it)."""

    def show(self, user_id: str, action: str, code: str, ttl_s: int) -> None:
        print(
            f"\n*** {printable(action)} requested for {printable(user_id)} over MCP. If you asked for it, give your "
            f"assistant this code: {code} (valid {ttl_s // 60} minutes, once). If you did not, ignore it. ***\n",
            file=sys.stderr,
            flush=True,
        )


@dataclass
class _Pending:
    code: str
    deadline: float
    attempts: int = 0


class ConfirmationCodes:
    """One pending code per user and action: issued to the channel, redeemed once, before it expires,
    within MAX_ATTEMPTS tries (then void: a new one must be asked for)."""

    def __init__(
        self,
        channel: ConfirmationChannel,
        *,
        ttl_s: int = CODE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._channel = channel
        self._ttl_s = ttl_s
        self._clock = clock
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._lock = threading.Lock()

    @property
    def ttl_s(self) -> int:
        return self._ttl_s

    def issue(self, user_id: str, action: str) -> None:
        """A new code for `user_id`'s `action`, shown on the channel (never returned to the caller)."""
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        now = self._clock()
        with self._lock:
            self._prune(user_id, now)
            self._pending[(user_id, action)] = _Pending(code, now + self._ttl_s)
        self._channel.show(user_id, action, code, self._ttl_s)

    def _prune(self, user_id: str, now: float) -> None:
        """Drop expired codes, then `user_id`'s oldest past MAX_PENDING_PER_USER - 1 and anyone's oldest past
        MAX_PENDING - 1, making room for one more (the lock is held)."""
        for key in [k for k, p in self._pending.items() if now > p.deadline]:
            del self._pending[key]
        mine = sorted((p.deadline, k) for k, p in self._pending.items() if k[0] == user_id)
        for _, key in mine[: max(0, len(mine) - MAX_PENDING_PER_USER + 1)]:
            del self._pending[key]
        everyone = sorted((p.deadline, k) for k, p in self._pending.items())
        for _, key in everyone[: max(0, len(everyone) - MAX_PENDING + 1)]:
            del self._pending[key]

    @property
    def pending(self) -> int:
        """How many codes are pending (all users)."""
        with self._lock:
            return len(self._pending)

    def redeem(self, user_id: str, action: str, code: str) -> bool:
        """Whether `code` is the pending one for `user_id`'s `action` (it is used up when it is)."""
        given = code.strip().upper().replace("-", "").replace(" ", "")
        with self._lock:
            pending = self._pending.get((user_id, action))
            if pending is None:
                return False
            if self._clock() > pending.deadline:
                del self._pending[(user_id, action)]
                return False
            pending.attempts += 1
            matched = given.isascii() and hmac.compare_digest(given.encode(), pending.code.encode())
            if matched or pending.attempts >= MAX_ATTEMPTS:
                del self._pending[(user_id, action)]
            return matched
