"""GET /metrics of the API: the database's counts (nmc.observability.prometheus) and the API's
own series.

The database-held counts come from one call of nmc.metrics() (SPEC §9), rendered by
`nmc.observability.prometheus.database_lines`, which the worker's /metrics uses too: (name,
labels, value) rows, labels being kinds, statuses and DV ids, never personal data, plus the flag
`nmc_geen_contactgegevens_boven_drempel` per DV and `nmc_database_bereikbaar`.

In process: `nmc_http_request_duration_seconds`, a histogram per method, route *template*
(never the raw path, which holds notification ids) and status, measured until the response
head is sent (for an SSE stream: until the stream opens); and `nmc_sse_streams_open`.
Each API process keeps its own histogram: scrape every process (one uvicorn worker per pod,
as deploy/ runs it).
"""

from nmc.observability.prometheus import (
    BUCKETS,
    PROMETHEUS_MEDIA_TYPE,
    Histogram,
    database_lines,
    family,
    render,
)

__all__ = [
    "NO_ROUTE",
    "PROMETHEUS_MEDIA_TYPE",
    "HttpMetrics",
    "database_lines",
    "render",
    "streams_lines",
]

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
NO_ROUTE = "(geen route)"

HTTP_DURATION = "nmc_http_request_duration_seconds"
HTTP_DURATION_HELP = (
    "Duur van HTTP-verzoeken tot de response-head, per methode, route-template en status."
)
STREAMS_HELP = "Open SSE-stromen van de feed in dit proces."


class HttpMetrics:
    """Latency histograms per (method, route template, status); one per API process."""

    def __init__(self, buckets: tuple[float, ...] = BUCKETS) -> None:
        self._histogram = Histogram(
            HTTP_DURATION, HTTP_DURATION_HELP, ("method", "route", "status"), buckets
        )

    def observe(self, method: str, route: str | None, status: int, seconds: float) -> None:
        method = method if method in METHODS else "OTHER"
        self._histogram.observe((method, route or NO_ROUTE, str(status)), seconds)

    def lines(self) -> list[str]:
        return self._histogram.lines()


def streams_lines(open_streams: int) -> list[str]:
    return family("nmc_sse_streams_open", "gauge", [({}, open_streams)], STREAMS_HELP)
