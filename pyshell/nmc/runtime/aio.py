"""Running an asyncio program: on uvloop when it is installed (as uvicorn does for the API),
else on the standard event loop. uvloop's transports cost the worker noticeably less CPU
per outbound call and per database round trip."""

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory():
    """uvloop's new_event_loop, or None (asyncio's default) when uvloop is not installed."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def pause(stopping: asyncio.Event, seconds: float) -> None:
    """Wait `seconds`, or less when `stopping` is set first."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), timeout=seconds)


def run(main: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(main) on the event loop of `loop_factory`."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
