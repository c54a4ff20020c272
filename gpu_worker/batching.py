"""A small async micro-batcher: concurrent requests are grouped into one model call."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class MicroBatcher(Generic[T, R]):
    """Collects items for up to `max_wait_s` or `max_batch` items, then runs `fn` on them in one thread call.

    One batch runs at a time (the model is one device); `fn` gets the items in arrival order and must
    return one result per item. If `fn` raises, every caller in that batch gets the exception.
    """

    def __init__(self, fn: Callable[[list[T]], Sequence[R]], max_batch: int, max_wait_s: float) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self._fn = fn
        self._max_batch = max_batch
        self._max_wait_s = max_wait_s
        self._queue: asyncio.Queue[tuple[T, asyncio.Future[R]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.batches_run = 0

    def start(self) -> None:
        """Start the collecting loop on the running event loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop collecting; callers still waiting get CancelledError."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def submit(self, item: T) -> R:
        """Queue `item` and wait for its result."""
        self.start()
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        await self._queue.put((item, future))
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            deadline = loop.time() + self._max_wait_s
            while len(batch) < self._max_batch:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), timeout))
                except TimeoutError:
                    break
            live = [(item, fut) for item, fut in batch if not fut.done()]
            if not live:
                continue
            try:
                results = await asyncio.to_thread(self._fn, [item for item, _ in live])
                if len(results) != len(live):
                    raise RuntimeError(
                        f"batch function returned {len(results)} results for {len(live)} items"
                    )
            except Exception as exc:  # every waiter in the batch sees the failure
                for _, fut in live:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            finally:
                self.batches_run += 1
            for (_, fut), result in zip(live, results, strict=True):
                if not fut.done():
                    fut.set_result(result)
