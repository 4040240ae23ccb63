"""The chaos: one thread that hurts the running NMC on a schedule and keeps count.

* a worker killed with SIGKILL every few seconds (a random one), then started again;
* PostgreSQL restarted once (fast shutdown, down for a while, start) when `postgres_due()`
  first holds;
* Profielservice outages of a few seconds (503s, or calls that hang until the worker's
  timeout), at random intervals;
* the NMC clock moved past the lease (2 min) every few seconds: a killed worker's tasks are
  re-claimed after their lease runs out, and that is NMC time, not wall-clock time. The
  same move also expires the lease of a live worker that is slow, with a call in flight:
  the other way a duplicate e-mail can happen;
* NotifyNL's refusals, one window after the other (`ChaosPlan.refusals`), each switched on
  once `refusal_due(at)` holds (a share of the intake accepted) and off after its length:
  the key made team-only (our configuration: the sends wait and go out after the switch
  back), then a berichttype's template "edited" (Missing personalisation for its template:
  its notifications end technisch-mislukt);
* supervision: a part that exits without being killed is counted (a finding) and restarted.

NotifyNL's faults (5xx, timeouts, duplicated, reordered and lost callbacks) are settings of
the simulator, made once by the run (nmc_dev.soak.run).
"""

import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import psycopg

from nmc.errors import NmcError
from nmc_dev import clock
from nmc_dev.stack import LocalStack
from nmc_dev.stack.child import wait_until

TICK_S = 0.1
DEATH_WAIT_S = 10.0
CLOCK_TRIES = 20


@dataclass(frozen=True)
class RefusalWindow:
    """NotifyNL answers sends with `weigering` (a /_sim/weigering body) for `length_s`,
    from the moment `at` of the intake is accepted."""

    weigering: dict[str, Any]
    at: float
    length_s: float


# The key made team-only for a while (every service), then the besluit template "edited":
# NotifyNL renders a send's latest template version, and that one wants a new field.
REFUSALS = (
    RefusalWindow({"soort": "team-only"}, at=0.2, length_s=6.0),
    RefusalWindow(
        {
            "soort": "missing-personalisation",
            "template_ids": ["b0b0b0b0-0000-4000-8000-000000000002"],
            "velden": ["kenmerk"],
        },
        at=0.5,
        length_s=4.0,
    ),
)


@dataclass(frozen=True)
class ChaosPlan:
    kill_every_s: tuple[float, float] = (2.0, 5.0)
    clock_every_s: float = 4.0
    clock_step: timedelta = timedelta(minutes=2, seconds=10)  # past the 2-minute lease
    outage_every_s: tuple[float, float] = (10.0, 20.0)
    outage_length_s: tuple[float, float] = (2.0, 5.0)
    # PostgreSQL stays down this long between its fast shutdown and its start: well beyond
    # the API's pool wait (10 s), so intake meets 503s and not only slow answers.
    postgres_down_s: float = 15.0
    refusals: tuple[RefusalWindow, ...] = REFUSALS
    seed: int | None = None


@dataclass
class ChaosFigures:
    kills: int = 0
    restarts: int = 0
    restart_failures: int = 0
    unexpected_exits: list[str] = field(default_factory=list)  # "name (exit code n)"
    clock_moves: int = 0
    clock_moved: timedelta = timedelta(0)
    outages: int = 0
    postgres_restart_s: float | None = None
    postgres_restart_window: tuple[float, float] | None = None  # time.monotonic() moments
    postgres_restart_error: str | None = None
    jumps: list[str] = field(default_factory=list)  # the phases' own clock moves
    skips: int = 0  # the phases' moves to a deferred send's due (nothing else to do)
    skipped: timedelta = timedelta(0)
    clock_errors: int = 0  # NotifyNL clock moves that failed after they may have applied
    refusal_windows: list[str] = field(default_factory=list)  # "team-only 6.0 s"


class Chaos:
    def __init__(
        self,
        stack: LocalStack,
        plan: ChaosPlan,
        note: Callable[[str], None],
        postgres_due: Callable[[], bool],
        refusal_due: Callable[[float], bool] = lambda at: False,
    ) -> None:
        self.stack = stack
        self.plan = plan
        self.note = note
        self.postgres_due = postgres_due
        self.refusal_due = refusal_due
        self._refusals = list(plan.refusals)  # still to come, in order
        self._refusal_since: float | None = None  # the window now on
        self.figures = ChaosFigures()
        self.dice = random.Random(plan.seed)  # noqa: S311 - chaos, not secrets
        self.kills_on = threading.Event()
        self.kills_on.set()
        self._stop = threading.Event()
        self._clock_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="soak-chaos", daemon=True)
        # Its own thread: a worker restart in the chaos loop can take seconds on a loaded
        # machine, and the PostgreSQL restart must come while the intake is under way.
        self._postgres_thread = threading.Thread(
            target=self._restart_postgres_when_due, name="soak-postgres", daemon=True
        )
        self._outage_until: float | None = None
        self._owed: set[str] = set()  # killed by us, not started again yet

    # ------------------------------------------------------------------ control

    def start(self) -> None:
        self._thread.start()
        self._postgres_thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)
        self._postgres_thread.join(timeout=120)
        self._end_outage()
        if self._refusal_since is not None:
            self._end_refusal()

    def calm(self) -> None:
        """No more kills or outages (the final phase); the clock keeps moving, so what the
        last kill left behind is re-claimed, and dead parts are still restarted."""
        self.kills_on.clear()

    @property
    def postgres_restarted(self) -> bool:
        return self.figures.postgres_restart_s is not None or bool(
            self.figures.postgres_restart_error
        )

    def jump(self, delta: timedelta, label: str) -> bool:
        """A phase's clock move (reconciliation, settlement): not counted as chaos."""
        self.figures.jumps.append(label)
        return self._advance(delta)

    def skip(self, delta: timedelta) -> bool:
        """A phase's move to the due of a deferred send, when nothing else is under way:
        not chaos, counted apart."""
        if not self._advance(delta):
            return False
        self.figures.skips += 1
        self.figures.skipped += delta
        return True

    def _advance(self, delta: timedelta) -> bool:
        """Move the NMC clock, then NotifyNL's by as much (LocalStack.advance_clock in two
        steps, each retried on its own: a retry must not move the NMC clock twice), riding
        out a database restart and a busy simulator."""
        seconds = delta.total_seconds()
        with self._clock_lock:
            if not self._retry(lambda: clock.advance(self.stack.admin_settings, f"{seconds} s")):
                return False
            return self._retry(lambda: self._advance_notifynl(seconds))

    def _advance_notifynl(self, seconds: float) -> None:
        url = self.stack.notifynl_url + "/_sim/clock"
        try:
            httpx.post(url, json={"advance_s": seconds}, timeout=60).raise_for_status()
        except httpx.ConnectError:
            raise  # not sent: try again
        except httpx.HTTPError as error:  # perhaps applied: never twice
            self.figures.clock_errors += 1
            self.note(f"NotifyNL's clock may lag the NMC's by {seconds:.0f} s ({error!r})")

    def _retry(self, step: Callable[[], object]) -> bool:
        for _ in range(CLOCK_TRIES):
            try:
                step()
            except (NmcError, psycopg.Error, httpx.HTTPError):
                if self._stop.wait(0.5):
                    return False
                continue
            return True
        return False

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        now = time.monotonic()
        next_kill = now + self.dice.uniform(*self.plan.kill_every_s)
        next_clock = now + self.plan.clock_every_s
        next_outage = now + self.dice.uniform(*self.plan.outage_every_s)
        while not self._stop.wait(TICK_S):
            self._supervise()
            now = time.monotonic()
            if now >= next_clock:
                if self._advance(self.plan.clock_step):
                    self.figures.clock_moves += 1
                    self.figures.clock_moved += self.plan.clock_step
                next_clock = time.monotonic() + self.plan.clock_every_s
            self._refusal_window(now)
            if not self.kills_on.is_set():
                self._end_outage()
                continue
            if now >= next_kill:
                self._kill_a_worker()
                next_kill = time.monotonic() + self.dice.uniform(*self.plan.kill_every_s)
            if self._outage_until is None and now >= next_outage:
                self._begin_outage()
            elif self._outage_until is not None and now >= self._outage_until:
                self._end_outage()
                next_outage = time.monotonic() + self.dice.uniform(*self.plan.outage_every_s)

    # ------------------------------------------------------------------ NotifyNL's refusals

    def _refusal_window(self, now: float) -> None:
        """Switch the next refusal on when its moment has come, and off after its length."""
        if self._refusal_since is not None:
            if now - self._refusal_since >= self._refusals[0].length_s:
                self._end_refusal()
        elif self._refusals and self.refusal_due(self._refusals[0].at):
            window = self._refusals[0]
            try:
                httpx.post(
                    self.stack.notifynl_url + "/_sim/weigering", json=window.weigering, timeout=30
                ).raise_for_status()
            except httpx.HTTPError as error:
                self.note(f"NotifyNL refusal {window.weigering['soort']} not switched on: "
                          f"{error!r}")  # fmt: skip
                self._refusals.pop(0)
                return
            self._refusal_since = time.monotonic()
            self.note(f"NotifyNL refuses sends: {window.weigering['soort']} "
                      f"for {window.length_s:.0f} s")  # fmt: skip

    def _end_refusal(self) -> None:
        window = self._refusals.pop(0)
        for _ in range(CLOCK_TRIES):
            try:
                httpx.delete(self.stack.notifynl_url + "/_sim/weigering", timeout=30)
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        length = time.monotonic() - (self._refusal_since or time.monotonic())
        self._refusal_since = None
        self.figures.refusal_windows.append(f"{window.weigering['soort']} {length:.1f} s")

    def _supervise(self) -> None:
        for name, child in self.stack.children.items():
            if child.process is None or child.running:
                continue
            if name not in self._owed:
                self.figures.unexpected_exits.append(f"{name} (exit code {child.exit_code})")
                self.note(f"{name} exited on its own (exit code {child.exit_code}); restarting")
            self._start(name)

    def _kill_a_worker(self) -> None:
        running = [n for n in self.stack.worker_names if self.stack.running(n)]
        if not running:
            return
        name = self.dice.choice(running)
        self.stack.kill(name, signal.SIGKILL)
        self.figures.kills += 1
        self._owed.add(name)
        wait_until(lambda: not self.stack.running(name), DEATH_WAIT_S)
        self._start(name)

    def _start(self, name: str) -> None:
        try:
            self.stack.start_child(name)
        except NmcError as error:
            self.figures.restart_failures += 1
            self.note(f"restarting {name} failed ({type(error).__name__}); trying again")
            self._owed.add(name)  # it did not start: not an exit of its own next time
            return
        self._owed.discard(name)
        self.figures.restarts += 1

    def _restart_postgres_when_due(self) -> None:
        while not self._stop.wait(TICK_S):
            if self.postgres_due():
                self._restart_postgres()
                return

    def _restart_postgres(self) -> None:
        down = self.plan.postgres_down_s
        self.note(f"PostgreSQL: fast shutdown, {down:.0f} s down, start; intake under way")
        started = time.monotonic()
        try:
            self.stack.stop_child("postgres")
            self._stop.wait(down)  # the length of the outage, not a timer under test
            self.stack.start_child("postgres")
        except Exception as error:  # recorded, and the checks fail on it
            self.figures.postgres_restart_error = type(error).__name__
            self.note(f"the PostgreSQL restart failed: {error}")
            return
        self.figures.postgres_restart_s = time.monotonic() - started
        self.figures.postgres_restart_window = (started, time.monotonic())
        self.note(f"PostgreSQL is back after {self.figures.postgres_restart_s:.1f} s")

    def _begin_outage(self) -> None:
        outage = {"status": 503} if self.dice.random() < 0.5 else {"timeout": True}
        if self._set_outage(outage):
            self.figures.outages += 1
            self._outage_until = time.monotonic() + self.dice.uniform(*self.plan.outage_length_s)

    def _end_outage(self) -> None:
        if self._outage_until is not None:
            self._set_outage({})
            self._outage_until = None

    def _set_outage(self, outage: dict) -> bool:
        try:
            url = self.stack.profielservice_url + "/_sim/outage"
            httpx.post(url, json=outage, timeout=5).raise_for_status()
        except httpx.HTTPError:
            return False
        return True
