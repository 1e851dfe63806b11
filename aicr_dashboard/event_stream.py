"""`GET /events`: the model's changes as server-sent events, a few lines of our own over a streaming response.

On connecting, every current cluster line and row first (`event: cluster`, `event: rollout`), then
one event per change as the watches report it, each with an `id:`; a comment at least every
HEARTBEAT_SECONDS (proxies and browsers keep a quiet stream open). `data:` is one line of JSON
(ensure_ascii: no raw control character ever). A stream that falls MAX_BEHIND events behind is
ended (the browser reconnects and gets every row again), so a stalled reader cannot grow the
process. At the stop every stream ends at once (`close_all`).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.responses import StreamingResponse

if TYPE_CHECKING:
    from aicr_dashboard.fleet_model import FleetModel

HEARTBEAT_SECONDS = 15.0
MAX_BEHIND = 10_000
_END = None  # put on a stream's queue: end it


def event_text(event_id: int, name: str, data: dict[str, Any]) -> str:
    return f"id: {event_id}\nevent: {name}\ndata: {json.dumps(data, ensure_ascii=True, separators=(',', ':'))}\n\n"


class Streams:
    """The open event streams: each a queue fed from the watches' threads through the server's loop."""

    def __init__(self, heartbeat: float = HEARTBEAT_SECONDS) -> None:
        self.heartbeat = heartbeat
        self._queues: set[asyncio.Queue[str | None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def response(self, model: FleetModel) -> StreamingResponse:
        return StreamingResponse(self.events(model), media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})

    async def events(self, model: FleetModel) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        self._loop = loop
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        def told(event_id: int, name: str, data: dict[str, Any]) -> None:  # on a watch's thread
            loop.call_soon_threadsafe(self._put, queue, event_text(event_id, name, data))

        first = model.subscribe(told)
        self._queues.add(queue)
        try:
            yield ": the current rows, then each change\n\n"
            for event_id, name, data in first:
                yield event_text(event_id, name, data)
            while not self.closed:
                try:
                    text = await asyncio.wait_for(queue.get(), self.heartbeat)
                except asyncio.TimeoutError:
                    yield ": still here\n\n"
                    continue
                if text is _END:
                    return
                yield text
        finally:
            model.unsubscribe(told)
            self._queues.discard(queue)

    @staticmethod
    def _put(queue: asyncio.Queue[str | None], text: str) -> None:
        if queue.qsize() >= MAX_BEHIND:
            queue.put_nowait(_END)
            return
        queue.put_nowait(text)

    def close_all(self) -> None:
        """End every open stream at once (the stop); safe from any thread."""
        self.closed = True
        loop = self._loop
        for queue in list(self._queues):
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(queue.put_nowait, _END)
