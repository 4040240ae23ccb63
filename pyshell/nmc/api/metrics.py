"""GET /metrics in the Prometheus text format (0.0.4): the database's counts and HTTP latency.

The database-held counts come from one call of nmc.metrics() (SPEC §9): (name, labels,
value) rows, labels being kinds, statuses and DV ids, never personal data. To them the API
adds the flag `nmc_geen_contactgegevens_boven_drempel` per DV (share above the configured
threshold) and `nmc_database_bereikbaar` (0 when the call failed, so a scrape still shows
the process).

In process: `nmc_http_request_duration_seconds`, a histogram per method, route *template*
(never the raw path, which holds notification ids) and status, measured until the response
head is sent (for an SSE stream: until the stream opens); and `nmc_sse_streams_open`.
Each API process keeps its own histogram: scrape every process (one uvicorn worker per pod,
as deploy/ runs it).
"""

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

PROMETHEUS_MEDIA_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
NO_ROUTE = "(geen route)"

_NAME = re.compile(r"\A[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL = re.compile(r"\A[a-zA-Z_][a-zA-Z0-9_]*\Z")

HELP = {
    "nmc_taken": "Taken per soort en staat (zonder done).",
    "nmc_taak_oudste_due_seconden": "Seconden dat de oudste openstaande taak per soort wacht.",
    "nmc_notificaties": "Notificaties per status.",
    "nmc_onbevestigd_terminaal": "Onbevestigde terminale statussen ouder dan de "
    "bevestigingstermijn, per dienstverlener.",
    "nmc_teller_totaal": "Tellers (geweigerde en misvormde ontvangstbevestigingen, ...).",
    "nmc_geen_contactgegevens_aandeel": "Aandeel geen-contactgegevens onder afgeronde centrale "
    "notificaties, per dienstverlener.",
    "nmc_geen_contactgegevens_boven_drempel": "1 als het aandeel geen-contactgegevens boven de "
    "drempel ligt.",
    "nmc_geen_contactgegevens_drempel": "De ingestelde drempel voor het aandeel "
    "geen-contactgegevens.",
    "nmc_verzendbudget_gebruikt": "Verzendbudget gebruikt in het huidige venster.",
    "nmc_feed_achterstand_seconden": "Seconden sinds de laatste bevestiging per dienstverlener "
    "(-1: nooit bevestigd).",
    "nmc_database_bereikbaar": "1 als nmc.metrics() antwoordde.",
    "nmc_http_request_duration_seconds": "Duur van HTTP-verzoeken tot de response-head, per "
    "methode, route-template en status.",
    "nmc_sse_streams_open": "Open SSE-stromen van de feed in dit proces.",
}


class HttpMetrics:
    """Latency histograms per (method, route template, status); one per API process."""

    def __init__(self, buckets: tuple[float, ...] = BUCKETS) -> None:
        self.buckets = buckets
        self._series: dict[tuple[str, str, str], list[float]] = {}

    def observe(self, method: str, route: str | None, status: int, seconds: float) -> None:
        key = (method if method in METHODS else "OTHER", route or NO_ROUTE, str(status))
        series = self._series.get(key)
        if series is None:
            # counts per bucket, then +Inf count, then the sum
            series = self._series[key] = [0.0] * (len(self.buckets) + 2)
        for index, bound in enumerate(self.buckets):
            if seconds <= bound:
                series[index] += 1
        series[-2] += 1
        series[-1] += seconds

    def lines(self) -> list[str]:
        name = "nmc_http_request_duration_seconds"
        out = [f"# HELP {name} {HELP[name]}", f"# TYPE {name} histogram"]
        for (method, route, status), series in sorted(self._series.items()):
            labels = {"method": method, "route": route, "status": status}
            for bound, count in zip(self.buckets, series, strict=False):
                out.append(_sample(f"{name}_bucket", {**labels, "le": _number(bound)}, count))
            out.append(_sample(f"{name}_bucket", {**labels, "le": "+Inf"}, series[-2]))
            out.append(_sample(f"{name}_count", labels, series[-2]))
            out.append(_sample(f"{name}_sum", labels, series[-1]))
        return out


def streams_lines(open_streams: int) -> list[str]:
    return _family("nmc_sse_streams_open", "gauge", [({}, open_streams)])


def database_lines(rows: Iterable[tuple[str, Any, float]] | None, drempel: float) -> list[str]:
    """The rows of nmc.metrics() (None: the call failed) plus the geen-contactgegevens flag."""
    if rows is None:
        return _family("nmc_database_bereikbaar", "gauge", [({}, 0)])
    families: dict[str, list[tuple[dict[str, str], float]]] = {}
    for naam, labels, waarde in rows:
        if not _NAME.match(naam or ""):
            continue
        clean = {
            str(key): str(value)
            for key, value in (labels or {}).items()
            if _LABEL.match(str(key)) and value is not None
        }
        families.setdefault(naam, []).append((clean, float(waarde)))
    shares = families.get("nmc_geen_contactgegevens_aandeel", [])
    families["nmc_geen_contactgegevens_drempel"] = [({}, drempel)]
    families["nmc_geen_contactgegevens_boven_drempel"] = [
        (labels, 1.0 if share > drempel else 0.0) for labels, share in shares
    ]
    out: list[str] = []
    for naam in sorted(families):
        kind = "counter" if naam.endswith("_totaal") else "gauge"
        out += _family(naam, kind, families[naam])
    out += _family("nmc_database_bereikbaar", "gauge", [({}, 1)])
    return out


def render(*parts: list[str]) -> bytes:
    return ("\n".join(line for part in parts for line in part) + "\n").encode("utf-8")


def _family(name: str, kind: str, samples: list[tuple[Mapping[str, str], float]]) -> list[str]:
    out = [f"# HELP {name} {HELP.get(name, name)}", f"# TYPE {name} {kind}"]
    out += [_sample(name, labels, value) for labels, value in samples]
    return out


def _sample(name: str, labels: Mapping[str, str], value: float) -> str:
    if not labels:
        return f"{name} {_number(value)}"
    inner = ",".join(f'{key}="{_escape(val)}"' for key, val in sorted(labels.items()))
    return f"{name}{{{inner}}} {_number(value)}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))
