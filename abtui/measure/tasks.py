"""The engine's background tasks: spawned by its parts, awaited together, none lost.

asyncio keeps only a weak reference to a task; this set holds each until it is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Tasks:
    """Tasks spawned and not yet done."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait(self) -> None:
        """Until every task has ended, those spawned meanwhile included."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
