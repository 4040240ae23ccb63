"""The worker's own series for its /metrics (nmc.worker.ops_http), kept per process.

* `nmc_worker_taken_totaal{soort, uitkomst}`: tasks handled, by the outcome word the handler
  returned (`verzonden`, `uitgesteld`, `opnieuw`, `overgenomen`, …); SQL-only kinds count
  what a round processed as `verwerkt`.
* `nmc_worker_taken_bezig{soort}`: claimed tasks being worked right now.
* `nmc_worker_claimronde_seconden{soort}`: one claim (kinds with an external call) or one
  processing call (SQL-only kinds), as a histogram.
* `nmc_worker_ronde_fouten_totaal{soort}`: rounds that failed on the database or network.
* `nmc_worker_aanroep_seconden{doel, klasse}`: every outbound HTTP call until its response
  head, per target (notifynl, profielservice, ldv, webhook) and status class (`2xx` …
  `5xx`, `timeout`, `verbinding`, `fout`).

Labels are kind names, outcome words from the code and SQL, target names and status classes:
never a URL (a webhook URL is the DV's), an id or anything personal. `MeasuredTransport`
times the calls below the adapters, so every adapter is covered without knowing about it.
"""

import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping

import httpx

from nmc.observability.prometheus import Histogram, family

WEBHOOK = "webhook"
_WORD = re.compile(r"\A[a-z0-9][a-z0-9-]{0,39}\Z")

HELP = {
    "nmc_worker_taken_totaal": "Afgehandelde taken per soort en uitkomst (SQL-soorten: verwerkt).",
    "nmc_worker_taken_bezig": "Geclaimde taken die dit proces nu uitvoert, per soort.",
    "nmc_worker_claimronde_seconden": "Duur van een claim (of verwerkingsronde van een "
    "SQL-soort), per soort.",
    "nmc_worker_ronde_fouten_totaal": "Rondes die mislukten op de database of het netwerk, "
    "per soort.",
    "nmc_worker_aanroep_seconden": "Duur van uitgaande HTTP-aanroepen tot de response-head, "
    "per doel en statusklasse.",
}


class WorkerMetrics:
    """Counters, gauges and histograms of one worker process (single event loop)."""

    def __init__(self, soorten: Iterable[str] = ()) -> None:
        self._taken: Counter[tuple[str, str]] = Counter()
        self._bezig: dict[str, int] = dict.fromkeys(soorten, 0)
        self._ronde_fouten: Counter[str] = Counter()
        self._rondes = Histogram(
            "nmc_worker_claimronde_seconden", HELP["nmc_worker_claimronde_seconden"], ("soort",)
        )
        self._aanroepen = Histogram(
            "nmc_worker_aanroep_seconden", HELP["nmc_worker_aanroep_seconden"], ("doel", "klasse")
        )

    def task_started(self, soort: str) -> None:
        self._bezig[soort] = self._bezig.get(soort, 0) + 1

    def task_finished(self, soort: str, uitkomst: object) -> None:
        self._bezig[soort] = max(self._bezig.get(soort, 0) - 1, 0)
        self.tasks_done(soort, uitkomst, 1)

    def tasks_done(self, soort: str, uitkomst: object, aantal: int) -> None:
        if aantal > 0:
            # Outcome words come from code and SQL; anything else is folded, never echoed.
            word = uitkomst if isinstance(uitkomst, str) and _WORD.match(uitkomst) else "overig"
            self._taken[(soort, word)] += aantal

    def round(self, soort: str, seconds: float) -> None:
        self._rondes.observe((soort,), seconds)

    def round_failed(self, soort: str) -> None:
        self._ronde_fouten[soort] += 1

    def call(self, doel: str, klasse: str, seconds: float) -> None:
        self._aanroepen.observe((doel, klasse), seconds)

    def lines(self) -> list[str]:
        out = family(
            "nmc_worker_taken_totaal",
            "counter",
            [({"soort": s, "uitkomst": u}, n) for (s, u), n in sorted(self._taken.items())],
            HELP["nmc_worker_taken_totaal"],
        )
        out += family(
            "nmc_worker_taken_bezig",
            "gauge",
            [({"soort": s}, n) for s, n in sorted(self._bezig.items())],
            HELP["nmc_worker_taken_bezig"],
        )
        out += family(
            "nmc_worker_ronde_fouten_totaal",
            "counter",
            [({"soort": s}, n) for s, n in sorted(self._ronde_fouten.items())],
            HELP["nmc_worker_ronde_fouten_totaal"],
        )
        return out + self._rondes.lines() + self._aanroepen.lines()


class Targets:
    """Which target a URL belongs to: the configured base URLs, else a DV's webhook.

    A base matches on scheme, host and port, and on its path up to a segment boundary
    (`http://h:80/a` does not match `http://h:80/ab`); the longest matching base wins, so
    services behind one gateway under different paths are told apart."""

    def __init__(self, bases: Mapping[str, str | None]) -> None:
        self._bases = sorted(
            (
                (httpx.URL(url), doel)
                for doel, url in bases.items()
                if url  # an unconfigured service is never called
            ),
            key=lambda item: len(item[0].path),
            reverse=True,
        )

    def of(self, url: httpx.URL) -> str:
        for base, doel in self._bases:
            if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):
                continue
            prefix = base.path.rstrip("/")
            if not prefix or url.path == prefix or url.path.startswith(prefix + "/"):
                return doel
        return WEBHOOK


class MeasuredTransport(httpx.AsyncBaseTransport):
    """Wraps the client's transport: times each call until the response head is in."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, metrics: WorkerMetrics, targets: Targets
    ) -> None:
        self._inner = inner
        self._metrics = metrics
        self._targets = targets

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        doel = self._targets.of(request.url)
        started = time.perf_counter()
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TimeoutException:
            self._metrics.call(doel, "timeout", time.perf_counter() - started)
            raise
        except httpx.TransportError:
            self._metrics.call(doel, "verbinding", time.perf_counter() - started)
            raise
        except Exception:  # a cancelled call (shutdown) is not a call result: not counted
            self._metrics.call(doel, "fout", time.perf_counter() - started)
            raise
        klasse = f"{response.status_code // 100}xx"
        self._metrics.call(doel, klasse, time.perf_counter() - started)
        return response

    async def __aenter__(self) -> "MeasuredTransport":
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._inner.__aexit__(*exc_info)

    async def aclose(self) -> None:
        await self._inner.aclose()
