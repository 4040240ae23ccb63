"""Counting what the soak's clients meet on the wire: every answer's status code and every
call that got no answer, per purpose (intake, feed). nmc_client retries on its own; this is
how the soak sees the 503s the API gave while PostgreSQL restarted."""

import threading
import time
from collections import Counter

import httpx


class HttpCounts:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()
        self._times: list[tuple[float, str, str]] = []  # (monotonic, purpose, outcome)

    def add(self, purpose: str, outcome: str) -> None:
        with self._lock:
            self._counts[(purpose, outcome)] += 1
            self._times.append((time.monotonic(), purpose, outcome))

    def between(self, purpose: str, start: float, end: float) -> dict[str, int]:
        """The outcomes of `purpose` that came between two time.monotonic() moments."""
        with self._lock:
            found = Counter(o for t, p, o in self._times if p == purpose and start <= t <= end)
        return dict(sorted(found.items()))

    def times_of(self, purpose: str, outcome: str) -> list[float]:
        """The time.monotonic() moments of every `outcome` of `purpose`, in order."""
        with self._lock:
            return sorted(t for t, p, o in self._times if p == purpose and o == outcome)

    def of(self, purpose: str) -> dict[str, int]:
        """Outcome (status code, or the error class of a call without an answer) -> count."""
        with self._lock:
            return {outcome: n for (p, outcome), n in sorted(self._counts.items()) if p == purpose}


class CountingTransport(httpx.BaseTransport):
    """An httpx transport that counts each outcome before handing it on."""

    def __init__(self, counts: HttpCounts, purpose: str) -> None:
        self._inner = httpx.HTTPTransport()
        self._counts = counts
        self._purpose = purpose

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = self._inner.handle_request(request)
        except httpx.TransportError as error:
            self._counts.add(self._purpose, type(error).__name__)
            raise
        self._counts.add(self._purpose, str(response.status_code))
        return response

    def close(self) -> None:
        self._inner.close()


def counting_client(counts: HttpCounts, purpose: str, timeout: float) -> httpx.Client:
    return httpx.Client(transport=CountingTransport(counts, purpose), timeout=timeout)
