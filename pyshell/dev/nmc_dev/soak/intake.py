"""The DVs' submitters: every notification of the workload over the real API, with nmc_client.

Several threads submit at once, singles and batches of every DV, at a pace that spreads the
intake over at least `min_seconds` (so the chaos, the PostgreSQL restart above all, meets
intake under way). The client retries a call on no answer, 429 and 5xx; a call that still
fails is submitted again, unchanged, until it is accepted: intake is idempotent on (dvRef,
payload), so a repeat returns the id of the first 202. Every id the client sees in a 202 is
recorded per dvRef: one dvRef with two ids would be an intake that was not idempotent.

A `cancel` notification is cancelled right after its 202 (DELETE); a 409 means a worker
claimed it first, which is an outcome, not a failure.
"""

import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from nmc_client import (
    Conflict,
    NmcClient,
    NmcClientError,
    NmcUnavailable,
    RetryPolicy,
    ServerError,
    TooManyRequests,
)
from nmc_dev.soak.httpcount import HttpCounts, counting_client
from nmc_dev.soak.workload import DVS, Dv, Notificatie, set_short_validity

API_BASE = "/api/nmc/v1"
# Generous for the restart: ~10 attempts with backoff up to 4 s ride out a restart of
# several seconds before the job itself is tried again.
RETRY = RetryPolicy(attempts=10, base_delay=0.25, max_delay=4.0, max_wait=30.0)
RESUBMIT_PAUSE_S = 1.0
GIVE_UP_S = 300.0  # a job refused this long is recorded as failed (the checks then fail)
CLIENT_TIMEOUT_S = 30.0


class Intake:
    def __init__(
        self,
        api_url: str,
        token_for: Callable[[str], str],
        counts: HttpCounts,
        clock: Callable[[], datetime],
        dvs: tuple[Dv, ...] = DVS,
    ) -> None:
        self.clock = clock  # the NMC's clock (nmc.now()), for a geldigTot set at submission
        self.http = counting_client(counts, "intake", CLIENT_TIMEOUT_S)
        self.clients = {
            dv.oin: NmcClient(
                api_url + API_BASE, lambda oin=dv.oin: token_for(oin), http=self.http, retry=RETRY
            )
            for dv in dvs
        }
        self._lock = threading.Lock()
        self.ids_by_dvref: dict[str, set[str]] = defaultdict(set)
        self.id_by_serial: dict[int, str] = {}
        self.resubmits = 0
        self.outcomes: Counter[str] = Counter()  # cancels, late cancels, refusals by class
        self.failed: list[str] = []  # jobs given up (error classes only, no values)

    @property
    def accepted(self) -> int:
        with self._lock:
            return len(self.id_by_serial)

    def submit_all(
        self, jobs: list[list[Notificatie]], *, threads: int, min_seconds: float
    ) -> float:
        """Submit every job; returns the seconds it took."""
        total = sum(len(job) for job in jobs)
        rate = total / min_seconds if min_seconds > 0 else float("inf")
        started = time.monotonic()
        before = 0
        schedule = []
        for job in jobs:  # job i may start once the pace allows what came before it
            schedule.append((started + before / rate, job))
            before += len(job)
        with ThreadPoolExecutor(threads, thread_name_prefix="soak-intake") as pool:
            list(pool.map(lambda item: self._paced(*item), schedule))
        return time.monotonic() - started

    def close(self) -> None:
        self.http.close()

    # ------------------------------------------------------------------------------------

    def _paced(self, at: float, job: list[Notificatie]) -> None:
        wait = at - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # load shaping, not a timer under test
        self._submit(job)

    def _submit(self, job: list[Notificatie]) -> None:
        first = job[0]
        client = self.clients[first.dv.oin]
        regie = first.scenario.regie
        batch_id = str(uuid.uuid4())  # the same on every repeat of this batch
        deadline = time.monotonic() + GIVE_UP_S
        if any(n.scenario.action == "short-validity" for n in job):
            set_short_validity(job, self._now(deadline))
        while True:
            try:
                if first.single:
                    ids = [client.submit(regie, first.body).notificatie_id]
                else:
                    ids = client.submit_batch(
                        regie, [n.body for n in job], batch_id
                    ).notificatie_ids
                break
            except (NmcUnavailable, ServerError, TooManyRequests) as error:
                if time.monotonic() > deadline:
                    self._fail(f"intake {type(error).__name__}", len(job))
                    return
                with self._lock:
                    self.resubmits += 1
                time.sleep(RESUBMIT_PAUSE_S)
            except NmcClientError as error:  # a refusal the soak's own input should not get
                self._fail(f"intake {type(error).__name__}", len(job))
                return
        with self._lock:
            for notificatie, notificatie_id in zip(job, ids, strict=True):
                self.id_by_serial[notificatie.serial] = notificatie_id
                self.ids_by_dvref[notificatie.body["dvRef"]].add(notificatie_id)
        if first.scenario.action == "cancel":
            self._cancel(client, ids[0])

    def _now(self, deadline: float) -> datetime:
        """nmc.now(), also while PostgreSQL restarts."""
        while True:
            try:
                return self.clock()
            except Exception:  # the database is away: a moment later
                if time.monotonic() > deadline:
                    raise
                time.sleep(RESUBMIT_PAUSE_S)

    def _cancel(self, client: NmcClient, notificatie_id: str) -> None:
        deadline = time.monotonic() + GIVE_UP_S
        while True:
            try:
                client.cancel(notificatie_id)
                outcome = "cancelled"
                break
            except Conflict:
                outcome = "cancel too late (409: already claimed)"
                break
            except (NmcUnavailable, ServerError, TooManyRequests):
                if time.monotonic() > deadline:
                    outcome = "cancel gave up"
                    break
                time.sleep(RESUBMIT_PAUSE_S)
            except NmcClientError as error:
                outcome = f"cancel refused ({type(error).__name__})"
                break
        with self._lock:
            self.outcomes[outcome] += 1

    def _fail(self, what: str, count: int) -> None:
        with self._lock:
            self.failed.append(f"{what} ({count} notifications)")
