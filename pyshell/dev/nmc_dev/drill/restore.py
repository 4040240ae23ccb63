"""`nmc drill restore`: a base backup plus the WAL archive, point-in-time recovery to a moment
before the last traffic, and what the cluster epoch protects.

1. A primary of its own with `archive_mode` (every WAL segment copied to the archive), the
   local NMC on it, a feed consumer per DV (nmc_dev.drill.failover's), a base backup
   (`pg_basebackup`).
2. Traffic A (half the workload) to its final statuses; the restore point T is taken; then
   traffic B (the other half: the "last minutes"), which the consumers read and acknowledge.
3. The primary is lost. A new cluster is made from the base backup and replays the archive
   up to T (`recovery_target_time`, then promoted: a new timeline), on the old port.
4. Check: the restored database holds exactly the state at T.
5. Without `nmc admin epoch raise`: the restored cluster hands out again the xids traffic B
   had used, so new notifications (traffic C) get events with xids below the cursors the DVs
   hold from traffic B. A DV that reads on with its cursor skips them: counted.
6. With the raise: every cursor of the old epoch gets 410 (read and acknowledgement), and a
   DV's client resyncs from the snapshot: a client that starts from an empty store holds
   exactly the database's state; one that keeps its versions keeps the statuses of traffic
   B, which the restore took away (shown: on an epoch change a DV must drop them).
"""

import signal
import sys
import time
from dataclasses import dataclass, field, replace
from typing import TextIO

from nmc.admin import operations as admin_ops
from nmc.config import Settings
from nmc.database import connect
from nmc.errors import NmcError
from nmc_client import CursorExpired, FeedReader, MemoryCursorStore, NmcClient, StatusChange
from nmc_dev.demo.display import Display
from nmc_dev.drill.clusters import ReplicaSet
from nmc_dev.drill.failover import DATABASE, FailoverDrill, RecordingConsumer, multi_host_url
from nmc_dev.interrupt import EXIT_INTERRUPTED, raise_interrupt
from nmc_dev.pg_binaries import server_bindir
from nmc_dev.queries import QUERIES
from nmc_dev.soak import checks, evidence, workload
from nmc_dev.soak.checks import Verdict
from nmc_dev.soak.intake import API_BASE, Intake
from nmc_dev.soak.run import DAY, DAYS_MAX, RECONCILIATION_STEPS, WORKER_KINDS, Options, _free_port
from nmc_dev.stack import LocalStack

TRAFFIC_C = 30  # new notifications on the restored cluster


@dataclass
class Figures:
    restore_point: str = ""
    state_at_t: dict[str, int] = field(default_factory=dict)
    lost_by_restore: int = 0  # notifications of traffic B
    cursor_xids: dict[int, int] = field(default_factory=dict)  # dv -> acknowledged xid
    next_xid_restored: int = 0
    restore_s: float = 0.0
    skipped: int = 0
    served: int = 0
    traffic_c_events: int = 0
    expired_reads: int = 0
    expired_acks: int = 0
    kept_store_mismatches: int = 0
    kept_store_gone: int = 0
    fresh_store_mismatches: int = -1


def run(settings: Settings, options: Options, out: TextIO = sys.stdout) -> int:
    if server_bindir() is None:
        raise NmcError("nmc drill needs the PostgreSQL server programs (see `nmc demo`)")
    if options.count < 2 * workload.MIN_COUNT:
        raise NmcError(f"--count must be at least {2 * workload.MIN_COUNT} for a restore drill")
    home = settings.home / "drill"
    replicas = ReplicaSet(settings, home / "clusters", [_free_port(), _free_port()])
    display = Display(out, tty=options.tty)
    drill: RestoreDrill | None = None
    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        display.note(f"starting a primary with a WAL archive in {replicas.directory}")
        primary = replicas.start_primary("p", archive=True)
        url = multi_host_url([primary], DATABASE, "read-write")
        stack = LocalStack(
            replace(settings, home=home, database_url=url),
            workers=options.workers,
            state_dir=home / "stack",
            database=DATABASE,
            worker_args=("--kinds", WORKER_KINDS),
        )
        drill = RestoreDrill(replicas, stack, options, display)
        return drill.run()
    except KeyboardInterrupt:
        display.note("interrupted")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
        display.close()
        if drill is not None:
            drill.shut_down()
        replicas.remove()


class RestoreDrill(FailoverDrill):
    def __init__(self, replicas, stack, options, display) -> None:
        super().__init__(replicas, stack, options, display)
        self.figures = Figures()

    def run(self) -> int:
        note, stack, f = self.display.note, self.stack, self.figures
        started = time.monotonic()
        stack.start()
        self.work = workload.build(self.options.count, marker=workload.new_marker(),
                                   seed=self.options.seed or 9)  # fmt: skip
        self._onboard_quietly()
        self.intake = Intake(stack.api_url, self._token, self.counts, clock=stack.now)
        backup = self.replicas.base_backup()
        note(f"base backup taken ({backup}); WAL archived to {self.replicas.archive}")
        for dv in workload.DVS:
            self.consumers[dv.oin] = RecordingConsumer(
                dv.oin, stack.api_url, self._token, self.counts
            )
            self.consumers[dv.oin].start()
        jobs = self.work.batches()
        half = len(jobs) // 2
        self._traffic(jobs[:half], "A", settle=True)
        f.restore_point = self._restore_point()
        f.state_at_t = evidence.read_versions(stack.admin_url)
        note(f"restore point T = {f.restore_point}: {len(f.state_at_t)} notifications, all final")
        self._traffic(jobs[half:], "B", settle=False)
        self._until(self._consumers_caught_up, "the consumers to read traffic B")
        for consumer in self.consumers.values():
            consumer.stop()
        f.lost_by_restore = len(evidence.read_versions(stack.admin_url)) - len(f.state_at_t)
        f.cursor_xids = self._acknowledged_xids()
        self._archive_everything()

        note("the primary is lost; restoring the base backup to T on its port")
        for name in [*stack.worker_names, "api"]:
            stack.stop_child(name)
        old = self.replicas.primary
        assert old is not None  # noqa: S101
        old.kill()
        began = time.monotonic()
        self.replicas.restore("r", backup, target_time=f.restore_point, port=old.port)
        f.restore_s = time.monotonic() - began
        for name in ["api", *stack.worker_names]:
            stack.start_child(name)
        restored = evidence.read_versions(stack.admin_url)
        f.next_xid_restored = self._next_xid()
        note(f"restored in {f.restore_s:.1f} s: {len(restored)} notifications; next xid "
             f"{f.next_xid_restored}, the DVs' acknowledged cursors at xid "
             f"{', '.join(str(x) for x in sorted(f.cursor_xids.values()))}")  # fmt: skip
        same = Verdict("the restored database holds exactly the state at T")
        for notificatie_id in sorted(set(restored) ^ set(f.state_at_t)):
            same.violation(f"{notificatie_id}: only on one side")
        for notificatie_id, versie in sorted(restored.items()):
            if f.state_at_t.get(notificatie_id, versie) != versie:
                same.violation(
                    f"{notificatie_id}: versie {versie}, at T {f.state_at_t[notificatie_id]}"
                )
        same.figure = f"{len(restored)} notifications; {f.lost_by_restore} of traffic B gone"

        skipped = self._without_raise()
        raised = self._with_raise()
        verdicts = [same, skipped, *raised]
        self._summary_restore(verdicts, time.monotonic() - started)
        self.stop_everything()
        return checks.exit_code(verdicts)

    # ------------------------------------------------------------------ traffic

    def _traffic(self, jobs, label: str, *, settle: bool) -> None:
        assert self.intake  # noqa: S101
        count = sum(len(job) for job in jobs)
        seconds = self.intake.submit_all(jobs, threads=self.options.intake_threads,
                                         min_seconds=self.options.submit_seconds / 2)  # fmt: skip
        self.display.note(f"traffic {label}: {count} notifications in {seconds:.1f} s")
        self._until(self._quiet, f"traffic {label}'s sends")
        if not settle:
            return
        for step, _label in RECONCILIATION_STEPS:
            self.stack.advance_clock(step)
            self._until(self._quiet, "reconciliation")
        for _ in range(DAYS_MAX):
            self.stack.advance_clock(DAY)
            self._until(self._quiet, "a day")
            if self._all_terminal():
                break
        self._until(lambda: self._all_terminal() and self._quiet(), f"traffic {label} final")

    def _consumers_caught_up(self) -> bool:
        versions = evidence.read_versions(self.stack.admin_url)
        held = {}
        for consumer in self.consumers.values():
            held.update({i: h.versie for i, h in consumer.held().items()})
        return held == versions

    def _restore_point(self) -> str:
        """Now, by the primary's own clock, with a second of quiet on either side."""
        time.sleep(1.0)  # nothing commits in the second before T (traffic A is quiet)
        with connect(self.stack.admin_url) as conn:
            point = conn.execute("SELECT pg_catalog.clock_timestamp()::text").fetchone()[0]
        time.sleep(1.0)  # traffic B commits strictly after T
        return point

    def _acknowledged_xids(self) -> dict[int, int]:
        with connect(self.stack.admin_url) as conn:
            return {int(d): int(x) for d, x in conn.execute(QUERIES["drill_bevestiging"])}

    def _next_xid(self) -> int:
        with connect(self.stack.admin_url) as conn:
            return int(conn.execute(QUERIES["drill_next_xid"]).fetchone()[0])

    def _archive_everything(self) -> None:
        """Switch to a new WAL segment and wait until the archive holds the old one."""
        with connect(self.stack.admin_url) as conn:
            segment = conn.execute(QUERIES["drill_switch_wal"]).fetchone()[0]
            deadline = time.monotonic() + 60
            while conn.execute(QUERIES["drill_last_archived"]).fetchone()[0] != segment:
                if time.monotonic() > deadline:
                    raise NmcError("the WAL archive did not receive the last segment")
                time.sleep(0.1)

    # ------------------------------------------------------------------ the epoch

    def _client(self, oin: str) -> NmcClient:
        return NmcClient(self.stack.api_url + API_BASE, lambda: self._token(oin))

    def _without_raise(self) -> Verdict:
        """Traffic C on the restored cluster, read on with the DVs' cursors from traffic B."""
        assert self.intake and self.work  # noqa: S101
        f = self.figures
        before = set(evidence.read_versions(self.stack.admin_url))
        extra = workload.build(TRAFFIC_C * 2, marker=workload.new_marker(), seed=5)
        singles = [job for job in extra.batches() if len(job) == 1][:TRAFFIC_C]
        self.intake.submit_all(singles, threads=4, min_seconds=0)
        self._until(self._quiet, "traffic C's sends")
        new_ids = set(evidence.read_versions(self.stack.admin_url)) - before
        new_events = {eid for dv, ids in self._event_ids_of(new_ids).items() for eid in ids}
        served: set[str] = set()
        for oin, consumer in self.consumers.items():
            client = self._client(oin)
            cursor = consumer.store.cursor()
            for _ in range(50):  # page on until a page comes back empty
                page = client.read_changes(cursor, 1000)
                served.update(str(e["id"]) for e in page.events)
                cursor = page.cursor
                if not page.events:
                    break
        f.traffic_c_events = len(new_events)
        f.served = len(new_events & served)
        f.skipped = len(new_events - served)
        verdict = Verdict("without an epoch raise, a DV's cursor skips the reused xids' events")
        if f.skipped == 0 and f.next_xid_restored <= max(f.cursor_xids.values(), default=0):
            verdict.violation("the restored xids lie below the cursors, yet nothing was skipped")
        verdict.figure = (
            f"traffic C: {len(new_ids)} notifications, {f.traffic_c_events} events; "
            f"{f.skipped} skipped by the old cursors, {f.served} served"
        )
        return verdict

    def _with_raise(self) -> list[Verdict]:
        f = self.figures
        epoch = admin_ops.raise_epoch(self.stack.admin_settings)
        expired = Verdict(
            f"after `nmc admin epoch raise` (epoch {epoch}) every old cursor gets 410"
        )
        for oin, consumer in self.consumers.items():
            client = self._client(oin)
            old = consumer.store.cursor()
            try:
                client.read_changes(old, 10)
                expired.violation(f"DV {oin[-3:]}: its old cursor still reads")
            except CursorExpired:
                f.expired_reads += 1
            try:
                client.acknowledge(old)
                expired.violation(f"DV {oin[-3:]}: its old cursor is still acknowledged")
            except CursorExpired:
                f.expired_acks += 1
        expired.figure = f"{f.expired_reads} reads and {f.expired_acks} acknowledgements: 410"

        database = evidence.read_database(self.stack.admin_url)
        resync = Verdict("a client resyncing from the snapshot holds exactly the database's state")
        kept: dict[str, int] = {}
        fresh: dict[str, int] = {}
        for oin, consumer in self.consumers.items():
            # The consumer as it was (its versions of traffic B), polling on: 410, snapshot.
            held = {i: h.versie for i, h in consumer.held().items()}
            reader = FeedReader(self._client(oin), lambda c, h=held: h.__setitem__(
                c.notificatie_id, c.versie), consumer.store)  # fmt: skip
            reader.poll()
            while reader.poll().events:
                pass
            kept.update(held)
            # A client that starts again from an empty store.
            own: dict[str, int] = {}

            def keep(change: StatusChange, own=own) -> None:
                own[change.notificatie_id] = change.versie

            fresh_reader = FeedReader(self._client(oin), keep, MemoryCursorStore())
            fresh_reader.start_from_snapshot()
            while fresh_reader.poll().events:
                pass
            fresh.update(own)
        truth = {i: r.versie for i, r in database.notificaties.items()}
        # A kept store also holds the notifications of the lost minutes (accepted before the
        # restore, gone after it: the DV resubmits them); of the rest it must hold the truth.
        f.kept_store_mismatches = sum(1 for i in truth if kept.get(i) != truth[i])
        f.kept_store_gone = len(set(kept) - set(truth))
        f.fresh_store_mismatches = sum(1 for i in set(fresh) | set(truth)
                                       if fresh.get(i) != truth.get(i))  # fmt: skip
        for notificatie_id in sorted(set(fresh) ^ set(truth))[:5]:
            resync.violation(f"{notificatie_id}: on one side only")
        if f.fresh_store_mismatches and not resync.count:
            resync.violation(f"{f.fresh_store_mismatches} versions differ")
        if f.kept_store_mismatches:
            # The snapshot replaces versions newer than the restored state (FeedReader).
            resync.violation(f"a kept store: {f.kept_store_mismatches} versions differ")
        resync.figure = (
            f"empty store: {f.fresh_store_mismatches} differences of {len(truth)}; "
            f"a store kept from before: {f.kept_store_mismatches} differences, "
            f"{f.kept_store_gone} held that the restore took away"
        )
        return [expired, resync]

    def _event_ids_of(self, notificatie_ids: set[str]) -> dict[str, set[str]]:
        with connect(self.stack.admin_url) as conn:
            rows = conn.execute(QUERIES["drill_events_of"], {"ids": list(notificatie_ids)})
            found: dict[str, set[str]] = {}
            for notificatie_id, event_id in rows:
                found.setdefault(str(notificatie_id), set()).add(str(event_id))
        return found

    def _summary_restore(self, verdicts: list[Verdict], seconds: float) -> None:
        out, f = self.display.out, self.figures
        self.display.close()
        out.write(f"\nRestore drill: {self.options.count} notifications, {len(workload.DVS)} "
                  f"DVs, {seconds:.0f} s\n\n")  # fmt: skip
        lines = [
            f"restore point T {f.restore_point}: {len(f.state_at_t)} notifications; "
            f"traffic B after it: {f.lost_by_restore} notifications, read and acknowledged",
            f"point-in-time recovery of the base backup plus archive to T: {f.restore_s:.1f} s",
            f"xids: the DVs' acknowledged cursors at "
            f"{', '.join(str(x) for x in sorted(f.cursor_xids.values()))}; the restored "
            f"cluster's next xid {f.next_xid_restored}",
            f"without the raise: {f.skipped} of {f.traffic_c_events} new events skipped by "
            "the old cursors",
            f"with the raise: {f.expired_reads} old cursors read 410, {f.expired_acks} "
            f"acknowledgements 410; resync from the snapshot: {f.fresh_store_mismatches} "
            f"differences with an empty store, {f.kept_store_mismatches} with a store kept "
            f"from before the restore (which also holds {f.kept_store_gone} notifications "
            "accepted after T: gone, to be resubmitted)",
        ]
        out.write("".join(f"  {line}\n" for line in lines) + "\n")
        checks.write_verdicts(out, verdicts)
