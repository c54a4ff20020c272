"""A value built once, on first use, safely across threads (SDK clients, loaded models)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """Holds `value` if given, else builds it with `factory` the first time `get()` is called."""

    def __init__(self, factory: Callable[[], T], value: T | None = None) -> None:
        self._factory = factory
        self._value = value
        self._lock = threading.Lock()

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value
