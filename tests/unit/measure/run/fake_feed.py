"""Fake streamed processes script their stdout as a `lines()` generator; `FeedsLines` hands
those lines on the way RemoteProcess.feed (and `follow`) does (each line a packet of its own)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from abtui.remote.streams import LineFeed


class Follows:
    """A fake process's `follow`, made of its `feed` as RemoteProcess.follow is."""

    def feed(self, handle: Callable[[list[str]], None]) -> LineFeed:
        raise NotImplementedError

    async def follow(self, handle: Callable[[list[str]], None]) -> None:
        await self.feed(handle).until_end()


class FeedsLines(Follows):
    """A fake process's `feed`, played from its `lines()`; stopping the feed closes them."""

    def lines(self) -> AsyncIterator[str]:
        raise NotImplementedError

    def feed(self, handle: Callable[[list[str]], None]) -> LineFeed:
        feed = LineFeed(handle)

        async def play() -> None:
            try:
                async for line in self.lines():
                    feed.write(line + "\n")
            finally:
                feed.write_eof()

        task = asyncio.get_running_loop().create_task(play())
        feed.ended.add_done_callback(lambda _: task.cancel())
        return feed
