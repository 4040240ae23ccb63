"""A lean HTTP/1.1 load generator for the benchmarks (keep-alive, one request in flight per
connection, bodies made by the caller).

httpx costs ~2 ms of CPU per request, which on a 2-core machine takes the CPU the server
under test needs; this client writes pre-built request bytes and parses only the status
line and Content-Length, ~0.05 ms per request. It speaks plain HTTP/1.1 to loopback only
and is meant for measuring, not as a general client.
"""

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class LoadResult:
    statuses: dict[int, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    seconds: float = 0.0

    @property
    def ok(self) -> int:
        return len(self.latencies)


def request_bytes(url: str, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    host = urlsplit(url).netloc
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
            break
    if length:
        await reader.readexactly(length)
    return status


async def run(
    url: str,
    requests: Iterator[bytes],
    *,
    connections: int,
    seconds: float | None = None,
    success: Callable[[int], bool] = lambda status: 200 <= status < 300,
) -> LoadResult:
    """Send `requests` over `connections` keep-alive connections until the iterator ends or
    `seconds` have passed; returns status counts and latencies of successful requests."""
    parts = urlsplit(url)
    result = LoadResult()
    deadline = None if seconds is None else time.perf_counter() + seconds

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        try:
            for request in requests:
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                started = time.perf_counter()
                writer.write(request)
                status = await _read_response(reader)
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if success(status):
                    result.latencies.append(time.perf_counter() - started)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    result.seconds = time.perf_counter() - started
    return result
