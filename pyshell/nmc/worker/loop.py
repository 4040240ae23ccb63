"""`nmc worker`: claim loops per task kind, concurrent work within a batch, clean shutdown.

Per kind one loop runs in this process. Kinds with an external call (verzenden,
reconciliëren, ongeldig-melden, terugkoppelen) claim a batch (its own committed transaction)
and work the claimed tasks concurrently, at most `concurrency` at a time, claiming again once
half a batch of slots is free. SQL-only kinds (receipt, vaststellen, controle, wissen,
onderhoud) make one call per round (onderhoud: one per maintenance job that is due); those
that work a set take their SQL function's own batch (Kind.batch).

A kind whose round found less than a batch waits for the lookout (Lookout): once per
`poll_interval` one query (nmc.soorten_met_werk) asks, for every kind of this worker that
waits, whether it has anything to claim now (a task due by the NMC clock, or a lease that
ran out: what its claim would find), and wakes those that have. So work is picked up
within a poll interval, as when every kind polled its own claim, but an idle worker makes
one cheap query per interval instead of a claim per kind (each planned per call: most of an
idle stack's CPU). A kind still runs a round at least every ROUND_AT_LEAST_EVERY_S, for its
own upkeep (the ensure_* calls that plan the watchdog's, maintenance's, webhooks' and
reports' tasks). Polling is the truth: the pool makes no LISTEN and takes no session
advisory locks, so PgBouncer in transaction mode works. Beside it one connection of its own
listens for the API's hint that work waits (nmc.worker.werk_hints): an idle worker that
hears it looks a quarter as often and at once when hinted.

SIGTERM/SIGINT: stop claiming, finish what is held (bounded by the lease), exit 0.
"""

import asyncio
import contextlib
import logging
import os
import random
import secrets
import signal
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx
import psycopg
from psycopg_pool import PoolTimeout

from nmc.adapters import ldv
from nmc.adapters.aio_backend import AsyncioTransport, LeanAsyncClient
from nmc.adapters.beheerkanaal import BeheerkanaalClient
from nmc.adapters.notifynl import NotifyNL
from nmc.adapters.profielservice import Profielservice
from nmc.adapters.webhook import WebhookClient
from nmc.adapters.webhook_validatie import Adresbeleid, WebhookValidator
from nmc.crypto.kek_ring import KekRing, kek_ring
from nmc.crypto.peppers import Peppers, load_peppers
from nmc.errors import NmcError
from nmc.feed.feed_cursor import CursorCodec
from nmc.runtime import aio
from nmc.signing.webhook_signing import SigningRing, load_signing_ring
from nmc.tracing import configure_from_env as configure_tracing
from nmc.tracing import worker as tracing
from nmc.worker import (
    beheerrapport,
    controle,
    navraag,
    onderhoud,
    ongeldig,
    receipt,
    terugkoppelen,
    vaststellen,
    verzenden,
    wissen,
)
from nmc.worker.config import WorkerConfig
from nmc.worker.context import Context
from nmc.worker.db import Database
from nmc.worker.logs import event
from nmc.worker.metrics import MeasuredTransport, Targets, WorkerMetrics
from nmc.worker.ops_http import OpsListener
from nmc.worker.werk_hints import WerkHints

SHUTDOWN_GRACE_S = 110.0  # below the default 2-minute lease: held work ends before it lapses
# A waiting kind runs a round at least this often even when the lookout finds nothing for
# it: the ensure_* calls (once a minute) plan tasks the lookout cannot see before they exist.
ROUND_AT_LEAST_EVERY_S = 60.0
# An idle lookout that hears the API's hints looks IDLE_FACTOR times less often, once it
# found no work for IDLE_AFTER_S (the lookout's docstring).
IDLE_AFTER_S = 30.0
IDLE_FACTOR = 4
# The wait after a reconciliation claim that got less than it asked, before it claims
# again: just under the time the budget takes to refill the kind's burst, one second of its
# rate (nmc.verzendtempo_kind: ceil(rate / 60) tokens, so at any reconciliation rate up to
# 60,000 a minute), so waiting loses no token and the next claim takes up to a burst instead
# of the token or two of a poll interval.
PACE_REFILL_S = 1.0

# The outbound HTTP client every adapter calls through: its transport (made from the
# worker's limits) and its client class (benchmarks/bench_transport.py swaps them).
outbound_transport = AsyncioTransport
OutboundClient = LeanAsyncClient


@dataclass(frozen=True)
class Kind:
    soort: str
    claim: Callable[[Context, int], Awaitable[list]] | None = None
    handle: Callable[[Context, object], Awaitable[str]] | None = None
    process: Callable[[Context, int], Awaitable[int]] | None = None
    # A fixed batch instead of --batch (the watchdog claims one). The SQL-only kinds that
    # work a set (receipt, vaststellen, wissen) take their function's own default: a round
    # is one statement per step whatever its size, so its cost per task falls with the
    # batch (nmc.process_vaststellingen_v2 0.23 -> 0.13 ms a task from 20 to 100,
    # nmc.process_wissen 0.08 -> 0.02 from 20 to 500; receipts stay below 64 a round, the
    # subtransactions a backend caches), while --batch bounds what a claim holds under
    # lease across external calls.
    batch: int | None = None
    # A claim that got less than it asked lets the budget refill (PACE_REFILL_S) before it
    # claims again (see Worker._claim_loop); without it, the kind waits for the next look.
    # Not for sends: a pause would hold back new work that a look would find.
    short_claim_waits: bool = False
    # Periodic upkeep (its own task every so often, a webhook's position once a minute): its
    # rounds' work does not keep the lookout at its full pace (Lookout).
    upkeep: bool = False


def kinds() -> dict[str, Kind]:
    webhook = terugkoppelen.Terugkoppelen()
    rapport = beheerrapport.Beheerrapport()
    return {
        verzenden.SOORT: Kind(verzenden.SOORT, claim=verzenden.claim, handle=verzenden.handle),
        receipt.SOORT: Kind(receipt.SOORT, process=receipt.process, batch=receipt.BATCH),
        navraag.SOORT: Kind(
            navraag.SOORT, claim=navraag.claim, handle=navraag.handle, short_claim_waits=True
        ),
        vaststellen.SOORT: Kind(
            vaststellen.SOORT, process=vaststellen.process, batch=vaststellen.BATCH
        ),
        controle.SOORT: Kind(
            controle.SOORT, process=controle.Controle().process, batch=1, upkeep=True
        ),
        ongeldig.SOORT: Kind(ongeldig.SOORT, claim=ongeldig.claim, handle=ongeldig.handle),
        terugkoppelen.SOORT: Kind(
            terugkoppelen.SOORT, claim=webhook.claim, handle=webhook.handle, upkeep=True
        ),
        wissen.SOORT: Kind(wissen.SOORT, process=wissen.process, batch=wissen.BATCH),
        beheerrapport.SOORT: Kind(
            beheerrapport.SOORT, claim=rapport.claim, handle=rapport.handle, upkeep=True
        ),
        onderhoud.SOORT: Kind(
            onderhoud.SOORT,
            process=onderhoud.Onderhoud().process,
            batch=len(onderhoud.JOBS),
            upkeep=True,
        ),
    }


class KekRingIncomplete(NmcError):
    """The worker's KEK ring lacks a KEK that still wraps live data keys (a start-up failure:
    every send of such a key would fail for good)."""


async def check_ring_holds_live_keks(db: Database, ring: KekRing) -> None:
    """Refuse to start with a ring that lacks a KEK under which live data keys are wrapped
    (nmc.kek_ids_levend; ids only). An unreachable database is not a refusal: the worker
    starts and its claims wait for the database, as they always do."""
    try:
        rows = await db.fetch_all("kek_ids_levend")
    except (psycopg.Error, PoolTimeout) as error:
        event(logging.WARNING, "kek-ring-niet-gecontroleerd", fout=type(error).__name__)
        return
    missing = sorted({row.kek_id for row in rows} - set(ring.keys))
    if missing:
        raise KekRingIncomplete(
            f"the KEK ring (NMC_KEK_FILE) lacks {', '.join(missing)}, under which live data "
            "keys are wrapped: add it to the ring (docs/production.md, KEK rotation)"
        )


def eigenaar() -> str:
    """Lease owner: host, pid and a random part (two workers never share one)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"[:200]


class Lookout:
    """The look for work of one worker's waiting kinds: once per `interval`, one query
    (nmc.soorten_met_werk) for every kind that waits, and a wake-up for each that has work.
    A failed look wakes them all: their own rounds then meet (and log) the failure, as they
    did when each polled on its own.

    Idle (neither a hint of the API's nor a round's work for IDLE_AFTER_S; the periodic
    upkeep kinds' rounds do not count) and hearing the hints (`hints_live`), it looks
    IDLE_FACTOR times less often, and a hint (`hint`: the API committed an intake, receipts
    ...) makes it look at once: an idle worker's looks cost a quarter, and new work is still
    picked up as soon as the API hints it. Without the hints it keeps its full pace. A
    timer's work (a settlement, a reconciliation that falls due) is never hinted: an idle
    worker finds it within the slower interval."""

    def __init__(
        self,
        db: Database,
        interval: float,
        stopping: asyncio.Event,
        clock: Callable[[], float] = time.monotonic,
        phase: Callable[[], float] = random.random,
        hints_live: Callable[[], bool] = lambda: False,
    ) -> None:
        self._db = db
        self._phase = phase
        self._base_interval = interval
        self._stopping = stopping
        self._clock = clock
        self._waiting: dict[str, asyncio.Future] = {}
        self._wake = asyncio.Event()  # a hint, or the worker stopping
        self._last_work = clock()
        self.hints_live = hints_live
        self.looks = 0  # queries made (tests)

    @property
    def idle(self) -> bool:
        return self.hints_live() and self._clock() - self._last_work >= IDLE_AFTER_S

    @property
    def interval(self) -> float:
        return self._base_interval * (IDLE_FACTOR if self.idle else 1)

    def busy(self) -> None:
        """A round did work: the full pace again."""
        self._last_work = self._clock()

    def hint(self) -> None:
        """The API hinted work: the full pace again, and an idle lookout looks at once. A
        busy one keeps its interval: looking at every hint made the rounds smaller and more
        (claim_verzenden 0.19 -> 0.26 calls and whole life 14.0 -> 16.7 ms per notification
        in benchmarks/bench_lifecycle.py) for a pickup no better."""
        if self.idle:
            self._wake.set()
        self.busy()

    def stop(self) -> None:
        self._wake.set()

    async def wait(self, soort: str, timeout: float = ROUND_AT_LEAST_EVERY_S) -> None:
        """Until `soort` has work, the worker stops, or `timeout` seconds passed."""
        woken = self._waiting.get(soort)
        if woken is None or woken.done():
            woken = self._waiting[soort] = asyncio.get_running_loop().create_future()
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait((woken, stop), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if self._waiting.get(soort) is woken:
                del self._waiting[soort]

    async def run(self) -> None:
        wait = self.interval
        while not self._stopping.is_set():
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=wait)
            except TimeoutError:
                hinted = False
            else:
                hinted = True
            self._wake.clear()
            if self._waiting and not self._stopping.is_set():
                await self.look()
            wait = self.next_wait(hinted)

    def next_wait(self, hinted: bool) -> float:
        """The wait before the next look. A hint wakes every idle worker at the same moment:
        a look at a random point of the next interval then keeps their looks apart (two
        workers' looks in step are one look per interval for the kinds they share: the
        sends' pickup p50 was ~250 ms instead of ~130 in benchmarks/bench_lifecycle.py)."""
        return self._phase() * self.interval if hinted else self.interval

    async def look(self) -> None:
        """One look: wake every waiting kind that has work (all of them if the look fails)."""
        waiting = dict(self._waiting)
        if not waiting:
            return
        self.looks += 1
        try:
            met_werk = await self._db.fetch_value("soorten_met_werk", {"soorten": list(waiting)})
        except (psycopg.Error, OSError):
            met_werk = list(waiting)
        for soort in met_werk:
            woken = waiting.get(soort)
            if woken is not None and not woken.done():
                woken.set_result(None)


class Worker:
    def __init__(
        self, config: WorkerConfig, ctx: Context, metrics: WorkerMetrics | None = None
    ) -> None:
        self.config = config
        self.ctx = ctx
        self.metrics = metrics or WorkerMetrics(config.kinds)
        self.ops_address: tuple[str, int] | None = None  # the /metrics listener, when on
        self.kinds = tracing.traced_kinds(
            {
                soort: kind
                for soort, kind in kinds().items()
                if soort in config.kinds
                and (soort != terugkoppelen.SOORT or ctx.webhook is not None)
            }
        )
        self._stopping = asyncio.Event()
        self.hints: WerkHints | None = None
        self.lookout = Lookout(
            ctx.db, config.poll_interval, self._stopping, hints_live=self._hears_hints
        )
        if config.hints_url:
            self.hints = WerkHints(config.hints_url, self.lookout.hint, self._stopping)

    def _hears_hints(self) -> bool:
        return self.hints is not None and self.hints.live

    @classmethod
    @contextlib.asynccontextmanager
    async def started(
        cls,
        config: WorkerConfig,
        *,
        ring: KekRing | None = None,
        pseudonym_key: bytes | None = None,
        signing: SigningRing | None = None,
        peppers: Peppers | None = None,
    ) -> AsyncIterator["Worker"]:
        """Open the pool, the HTTP client and the LDV sink; close them afterwards.

        `signing` and `peppers` (for the webhook's token and Nmc-Cursor) default to the
        environment's, read only when `terugkoppelen` is among the kinds."""
        ring = kek_ring() if ring is None else ring
        key = ldv.pseudonym_key() if pseudonym_key is None else pseudonym_key
        notify_keys = config.notify_keys()  # the keys file is read here, once
        if terugkoppelen.SOORT in config.kinds or beheerrapport.SOORT in config.kinds:
            # The webhook's ring also signs the https: beheer reports.
            signing = load_signing_ring() if signing is None else signing
        if terugkoppelen.SOORT in config.kinds:
            if signing is None:
                event(logging.WARNING, "terugkoppelen-zonder-sleutels", soort=terugkoppelen.SOORT)
            elif peppers is None:
                peppers = load_peppers()
        # One connection per concurrent call at most (nmc.adapters.aio_backend: HTTP/1.1
        # keep-alive on the event loop, httptools; httpx's own transport cost most of the
        # worker's CPU per send, and its client's request machinery above it half of what
        # was left: LeanAsyncClient sends the same requests straight to the transport).
        limits = httpx.Limits(max_connections=max(config.concurrency, 4))
        pool_size = config.pool_size or min(config.concurrency, 20) + len(config.kinds)
        metrics = WorkerMetrics(config.kinds)
        targets = Targets(
            {
                "notifynl": config.notifynl_url,
                "profielservice": config.profielservice_url,
                "ldv": config.ldv_url,
            }
        )
        transport = tracing.outbound(
            MeasuredTransport(outbound_transport(limits=limits), metrics, targets)
        )
        async with OutboundClient(
            timeout=httpx.Timeout(config.http_timeout), transport=transport
        ) as client:
            db = await Database.open(config.database_url, pool_size, config.prepare_threshold)
            beleid = Adresbeleid.parse(config.webhook_toegestane_netwerken)
            sink = (
                ldv.HttpSink(client, config.ldv_url)
                if config.ldv_url
                else ldv.FileSink(config.ldv_file)
            )
            ctx = Context(
                db=db,
                notifynl=NotifyNL(client, config.notifynl_url, notify_keys),
                profielservice=(
                    Profielservice(client, config.profielservice_url)
                    if config.profielservice_url
                    else None
                ),
                ldv=ldv.Ldv(sink, key),
                ring=ring,
                eigenaar=eigenaar(),
                webhook=(
                    WebhookClient(
                        client,
                        signing,
                        issuer=config.webhook_issuer or config.event_source,
                        source=config.event_source,
                        cursors=CursorCodec(peppers),
                        beleid=beleid,
                    )
                    if signing is not None and peppers is not None
                    else None
                ),
                webhook_validator=WebhookValidator(client, config.webhook_origin, beleid),
                beheerkanaal=(
                    BeheerkanaalClient(
                        client,
                        signing,
                        issuer=config.webhook_issuer or config.event_source,
                        source=config.event_source,
                        beleid=beleid,
                    )
                    if signing is not None
                    else None
                ),
                geen_contactgegevens_drempel=config.geen_contactgegevens_drempel,
            )
            worker = cls(config, ctx, metrics)
            listener = OpsListener(db, metrics, config.geen_contactgegevens_drempel)
            try:
                await check_ring_holds_live_keks(db, ring)
                if config.metrics_port is not None:
                    await listener.start(config.metrics_host, config.metrics_port)
                    worker.ops_address = listener.address
                yield worker
            finally:
                await listener.close()
                await ctx.ldv.aclose()
                await db.close()

    def stop(self) -> None:
        """Stop claiming; `run` returns once the held tasks are done."""
        self._stopping.set()
        self.lookout.stop()

    async def run(self) -> None:
        event(
            logging.INFO,
            "worker-start",
            eigenaar=self.ctx.eigenaar,
            soorten=list(self.kinds),
            # The Notify services with a key of their own (none: one key for every service).
            notify_services=list(self.ctx.notifynl.services),
            batch=self.config.batch,
            concurrency=self.config.concurrency,
        )
        loops = [
            self._claim_loop(kind) if kind.claim else self._process_loop(kind)
            for kind in self.kinds.values()
        ]
        lookout = asyncio.create_task(self.lookout.run())
        hints = asyncio.create_task(self.hints.run()) if self.hints else None
        await asyncio.gather(*loops)
        await lookout
        if hints is not None:
            await hints
        if "onderhoud" in self.kinds:
            await self._withdraw_kek_report()
        event(logging.INFO, "worker-stop", eigenaar=self.ctx.eigenaar)

    async def _withdraw_kek_report(self) -> None:
        """On a clean stop: this worker's KEK report no longer holds the re-wrap target (a
        failure here only means it counts until it is three minutes old)."""
        try:
            await self.ctx.db.fetch_value("kek_melding_afmelden", {"eigenaar": self.ctx.eigenaar})
        except psycopg.Error:
            event(logging.WARNING, "kek-melding-afmelden-mislukt", eigenaar=self.ctx.eigenaar)

    async def run_once(self, soort: str) -> int:
        """One round of one kind, waiting for its work (tests, and `drain`)."""
        kind = self.kinds[soort]
        batch = kind.batch or self.config.batch
        if kind.process:
            return await kind.process(self.ctx, batch)
        claimed = await kind.claim(self.ctx, batch)
        limit = asyncio.Semaphore(self.config.concurrency)

        async def bounded(taak) -> None:
            async with limit:
                await self._handle(kind, taak)

        await asyncio.gather(*(bounded(taak) for taak in claimed))
        return len(claimed)

    async def drain(self, soorten: list[str] | None = None, max_rounds: int = 50) -> int:
        """Run rounds over the kinds until a whole pass finds nothing due; returns the total."""
        total = 0
        for _ in range(max_rounds):
            done = 0
            for soort in soorten or list(self.kinds):
                done += await self.run_once(soort)
            total += done
            if done == 0:
                return total
        return total

    async def _claim_loop(self, kind: Kind) -> None:
        batch, concurrency = self.config.batch, self.config.concurrency
        threshold = max(1, min(batch, concurrency // 2))
        inflight: set[asyncio.Task] = set()
        while not self._stopping.is_set():
            free = concurrency - len(inflight)
            if inflight and free < threshold:
                await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                continue
            started = time.perf_counter()
            asked = min(batch, free)
            try:
                claimed = await kind.claim(self.ctx, asked)
            except (psycopg.Error, OSError) as error:
                self._log_round_error(kind, error)
                claimed = []
            else:
                self.metrics.round(kind.soort, time.perf_counter() - started)
            if claimed and not kind.upkeep:
                self.lookout.busy()
            for taak in claimed:
                task = asyncio.create_task(self._handle(kind, taak))
                inflight.add(task)
                task.add_done_callback(inflight.discard)
            if claimed and kind.short_claim_waits and len(claimed) < asked:
                # (Reconciliation) less than asked: the budget gave no more tokens, or
                # nothing more is due. Under NotifyNL's pace, claiming again at once, or at
                # the next look, took the token or two that came meanwhile at the cost of a
                # whole claim: the kind lets its burst refill, then claims again (an empty
                # claim then waits for the lookout). Waiting for a look after the pause
                # too left the service unclaimed for longer than the refill when two
                # workers paused together, and tokens were lost.
                await aio.pause(self._stopping, PACE_REFILL_S)
            elif len(claimed) < asked:
                # Nothing, or less than asked, is all there was to claim now: the lookout
                # wakes the kind when work is there. A claim at once took what came in its
                # few milliseconds, mostly nothing, at a whole claim's cost (as many send
                # claims as full ones); the next look comes within the interval, so the
                # pickup is no later (claim_verzenden 0.198 -> 0.102 calls per notification,
                # pickup p50 256 -> 229 ms in benchmarks/bench_lifecycle.py).
                await self.lookout.wait(kind.soort)
        if inflight:
            _, late = await asyncio.wait(inflight, timeout=SHUTDOWN_GRACE_S)
            for task in late:
                task.cancel()  # its lease runs out and another worker re-claims it

    async def _process_loop(self, kind: Kind) -> None:
        batch = kind.batch or self.config.batch
        while not self._stopping.is_set():
            started = time.perf_counter()
            try:
                done = await kind.process(self.ctx, batch)
            except (psycopg.Error, OSError) as error:
                self._log_round_error(kind, error)
                done = 0
            else:
                self.metrics.round(kind.soort, time.perf_counter() - started)
                self.metrics.tasks_done(kind.soort, "verwerkt", done)
                if done and not kind.upkeep:
                    self.lookout.busy()
            if done < batch:
                await self.lookout.wait(kind.soort)

    async def _handle(self, kind: Kind, taak) -> None:
        """Work one claimed task, counted in flight and by the outcome word it returns."""
        self.metrics.task_started(kind.soort)
        uitkomst = "afgebroken"  # cancelled at shutdown: the lease runs out
        try:
            uitkomst = await kind.handle(self.ctx, taak)
        finally:
            self.metrics.task_finished(kind.soort, uitkomst)

    def _log_round_error(self, kind: Kind, error: Exception) -> None:
        self.metrics.round_failed(kind.soort)
        event(
            logging.ERROR,
            "ronde-mislukt",
            soort=kind.soort,
            fout=type(error).__name__,
            sqlstate=getattr(error, "sqlstate", None),
        )


async def main(config: WorkerConfig) -> None:
    """The `nmc worker` process: run until SIGTERM or SIGINT (traced when NMC_TRACING says
    so: nmc.tracing)."""
    configure_tracing("nmc-worker")
    async with Worker.started(config) as worker:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stop)
        await worker.run()
