"""`nmc demo`: the whole NMC on this machine, a few hundred notifications through it.

1. Start a LocalStack: the embedded PostgreSQL, a fresh database `nmc_demo` (so every run
   starts with an unmoved clock and an empty register), the simulators and the API.
2. Onboard the demo DV (`nmc admin dv apply` logic) and seed the Profielservice's parties.
3. Before any worker runs: submit one without the field its NotifyNL template asks for (the
   intake refuses it: 422 ontbrekende-personalisatie), some notifications and cancel them
   (DELETE), and some with a geldigTot 30 minutes ahead; move the clock 1 hour; start the
   workers.
4. Submit the main wave over HTTP (decentraal and centraal, single and batch); wait until
   the pipeline is quiet.
5. Clock +1 h 5 min: reconciliation asks NotifyNL about attempts without a receipt.
6. Clock +8 days: the 7-day settlement term and NotifyNL's retention pass.
7. Meanwhile the DV reads the feed (cursor + acknowledgement) and the display shows the
   counts per status; at the end a summary compares them with what each scenario predicts.
"""

import asyncio
import contextlib
import json
import signal
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import TextIO

import httpx

from nmc.admin import onboarding as admin
from nmc.config import Settings
from nmc.errors import NmcError
from nmc_dev.demo import bewijs, scenario
from nmc_dev.demo.display import STATUSES, Display, table
from nmc_dev.demo.dv import Dv, FeedReader
from nmc_dev.demo.watch import DemoTimeout, Watcher
from nmc_dev.interrupt import EXIT_INTERRUPTED
from nmc_dev.pg_binaries import SERVER_PACKAGE, server_bindir
from nmc_dev.stack import LocalStack

SINGLE_CONCURRENCY = 8
WORKERS_LATE = timedelta(hours=1)
RECONCILIATION_JUMP = timedelta(hours=1, minutes=5)  # past the first reconciliation (+1 h)
SETTLEMENT_JUMP = timedelta(days=8)  # past 7 days + callback window, and NotifyNL retention
TOKEN_TTL_S = 8 * 3600
INSTALL_HELP = f"""\
nmc demo runs its own PostgreSQL, but the PostgreSQL server programs (initdb, pg_ctl) are
not installed. Install them and run `nmc demo` again:
  Debian/Ubuntu:  sudo apt-get install {SERVER_PACKAGE}
                  (older releases: add the apt.postgresql.org repository first)
  Fedora/RHEL:    sudo dnf install postgresql15-server   (PGDG repository)
  macOS:          brew install postgresql@15
                  export PATH="$(brew --prefix postgresql@15)/bin:$PATH"
They are found through `pg_config --bindir`, else /usr/lib/postgresql/<version>/bin.
Or point NMC_DATABASE_URL at a PostgreSQL 15 server whose user may create databases."""


@dataclass(frozen=True)
class Options:
    count: int = 300
    workers: int = 2
    keep_running: bool = False
    tty: bool = True
    phase_timeout_s: float = 120.0


def run(settings: Settings, options: Options, out: TextIO = sys.stdout) -> int:
    if not settings.database_url and server_bindir() is None:
        raise NmcError(INSTALL_HELP)
    if options.count < scenario.MIN_COUNT:
        raise NmcError(f"--count must be at least {scenario.MIN_COUNT} (one per scenario)")
    if options.workers < 1:
        raise NmcError("--workers must be at least 1")
    stack = demo_stack(settings, options)
    display = Display(out, tty=options.tty)
    try:
        return asyncio.run(_demo(stack, options, display))
    except (KeyboardInterrupt, asyncio.CancelledError):
        display.note("interrupted")
        return EXIT_INTERRUPTED
    finally:
        display.close()
        _stop(stack, display)


def demo_stack(settings: Settings, options: Options) -> LocalStack:
    """The demo's local NMC: workers with the default kinds (maintenance included), as every
    shipped deployment runs them."""
    return LocalStack(
        settings,
        workers=options.workers,
        notify_templates=admin.notify_templates(scenario.dv_document()),
    )


async def _demo(stack: LocalStack, options: Options, display: Display) -> int:
    main_task = asyncio.current_task()
    assert main_task is not None  # noqa: S101 - asyncio.run runs us in a task
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)

    display.note("starting PostgreSQL, a fresh database, the simulators and the API …")
    started = time.monotonic()
    stack.start(workers=False)
    display.note(
        f"up in {time.monotonic() - started:.1f} s: API {stack.api_url}, logs in {stack.log_dir}"
    )
    plan = scenario.build_plan(options.count, scenario.new_run_id(), now=stack.now())
    _onboard(stack, plan, display)

    token = stack.dv_token(scenario.DEMO_OIN, ttl_s=TOKEN_TTL_S)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=stack.api_url, headers=headers, timeout=30) as client:
        dv = Dv(client)
        feed = FeedReader(client)
        async with Watcher(stack, feed, display, options.phase_timeout_s) as watcher:
            try:
                await _phases(stack, plan, dv, watcher, display, options)
                result = 0
            except DemoTimeout as timeout:
                display.note(str(timeout))
                result = 1
            await watcher.catch_up()
            display.close()
            stats = await _sim_stats(stack, watcher)
        if _summary(plan, feed, stats, display) != 0:
            result = 1
        # One final delivery proof, verified with the DV client and saved (nmc_dev.demo.bewijs).
        if not await asyncio.to_thread(bewijs.show_proof, stack, plan, token, display.out):
            result = 1
        _print_try_it(stack, plan, token, display.out, options.keep_running)
    if options.keep_running:
        display.out.write("The stack keeps running; Ctrl-C stops it.\n")
        display.out.flush()
        # Ctrl-C or SIGTERM cancels this wait: the normal end of --keep-running.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
    return result


def _onboard(stack: LocalStack, plan: scenario.Plan, display: Display) -> None:
    document = scenario.dv_document()
    path = stack.state_dir / "dv.json"
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    # The templates at NotifyNL ask for a field; the onboarding reads their placeholders.
    for template_id in {b["notifynlTemplateId"] for b in document["berichttypen"]}:
        httpx.post(
            f"{stack.notifynl_url}/_sim/templates",
            json={"template_id": template_id, "subject": scenario.TEMPLATE_SUBJECT,
                  "body": scenario.TEMPLATE_BODY},
        ).raise_for_status()  # fmt: skip
    admin.apply_dv(stack.admin_settings, path, notify_environ=stack.notify_environ())
    response = httpx.post(f"{stack.profielservice_url}/_sim/parties", json=plan.parties)
    response.raise_for_status()
    codes = ", ".join(b["code"] for b in document["berichttypen"])
    display.note(
        f"onboarded {document['naam']} (OIN {document['oin']}; berichttypen {codes}) "
        f"from {path} (its NotifyNL templates ask for (({scenario.TEMPLATE_FIELD}))); "
        f"{len(plan.parties)} parties at the Profielservice"
    )


async def _phases(
    stack: LocalStack,
    plan: scenario.Plan,
    dv: Dv,
    watcher: Watcher,
    display: Display,
    options: Options,
) -> None:
    refused = plan.with_action("missing-personalisation")
    for n in refused:
        slug, names = await dv.submit_refused(n.scenario.regie, n.body)
        n.refusal = ("geweigerd", slug)
    if refused:
        display.note(
            f"{len(refused)} submitted without the template's (({scenario.TEMPLATE_FIELD})): "
            f"refused at intake, 422 {slug} ({', '.join(names)})"
        )
    cancelled = plan.with_action("cancel")
    for n in cancelled:
        n.id = await dv.submit(n.scenario.regie, n.body)
        await dv.cancel(n.id)
    expiring = plan.with_action("short-validity")
    await _submit_batch(dv, expiring)
    display.note(
        f"no worker runs yet: {len(cancelled)} submitted and cancelled (DELETE); "
        f"{len(expiring)} submitted with a geldigTot 30 minutes ahead"
    )
    stack.advance_clock(WORKERS_LATE)
    stack.start_workers()
    display.note(
        f"clock +1 h, then {options.workers} workers start: the {len(expiring)} with the "
        "short geldigTot have expired"
    )

    main = plan.with_action("none")
    singles, grouped = scenario.batches(main)
    started = time.monotonic()
    limit = asyncio.Semaphore(SINGLE_CONCURRENCY)

    async def single(n: scenario.Notificatie) -> None:
        async with limit:
            n.id = await dv.submit(n.scenario.regie, n.body)

    await asyncio.gather(*(single(n) for n in singles), *(_submit_batch(dv, g) for g in grouped))
    regies = Counter(n.scenario.regie for n in main)
    display.note(
        f"submitted {len(main)} over HTTP in {time.monotonic() - started:.1f} s "
        f"({regies['decentraal']} decentraal, {regies['centraal']} centraal; "
        f"{len(singles)} one by one, {len(main) - len(singles)} in {len(grouped)} batches); "
        "the workers send them to NotifyNL, receipts come back"
    )
    await watcher.until_quiet("the sends and receipts to finish")

    waiting = watcher.feed.counts().get("verzonden", 0)
    stack.advance_clock(RECONCILIATION_JUMP)
    display.note(
        f"quiet; {waiting} still wait for a receipt that will not come (callback lost, or no "
        "outcome at all). Clock +1 h 5 min: reconciliation asks NotifyNL"
    )
    await watcher.until_quiet("reconciliation")

    stack.advance_clock(SETTLEMENT_JUMP)
    display.note(
        "clock +8 days: the 7-day settlement term passes (bezorgd becomes definitief-bezorgd) "
        "and NotifyNL's retention ends (no outcome: bezorgstatus-onbekend)"
    )
    await watcher.until_final({n.id for n in plan.notificaties if n.id})


async def _submit_batch(dv: Dv, notificaties: list[scenario.Notificatie]) -> None:
    if not notificaties:
        return
    regie = notificaties[0].scenario.regie
    ids = await dv.submit_batch(regie, str(uuid.uuid4()), [n.body for n in notificaties])
    for n, notificatie_id in zip(notificaties, ids, strict=True):
        n.id = notificatie_id


async def _sim_stats(stack: LocalStack, watcher: Watcher) -> dict[str, int]:
    sent = await watcher.sim_json(f"{stack.notifynl_url}/_sim/sent")
    callbacks = (await watcher.sim_json(f"{stack.notifynl_url}/_sim/callbacks"))["callbacks"]
    lookups = await watcher.sim_json(f"{stack.profielservice_url}/_sim/requests")
    reports = await watcher.sim_json(f"{stack.profielservice_url}/_sim/ongeldig")
    records = await watcher.sim_json(f"{stack.ldv_url}/ldv/v1/records")
    return {
        "sent": sent["count"],
        "callbacks": sum(1 for c in callbacks if c["result"] == "delivered"),
        "lost": sum(1 for c in callbacks if c["result"] == "lost"),
        "profiel_calls": len(lookups),
        "ongeldig": len(reports),
        "ldv": len(records),
    }


def _summary(plan: scenario.Plan, feed: FeedReader, stats: dict[str, int], display: Display) -> int:
    """Print the tables; 0 when every notification ended as its scenario predicts."""
    out = display.out
    final = {i: (k.status, k.reden) for i, k in feed.known.items()}
    per_scenario: dict[scenario.Scenario, Counter] = {s: Counter() for s in scenario.SCENARIOS}
    for n in plan.notificaties:
        per_scenario[n.scenario][final.get(n.id or "", n.refusal or ("-", None))] += 1
    rows = []
    for s, outcomes in per_scenario.items():
        as_expected = outcomes[(s.status, s.reden)]
        rows.append(
            (s.description, s.regie, str(sum(outcomes.values())), _label(s.status, s.reden),
             "yes" if as_expected == sum(outcomes.values()) else f"{as_expected} of them")
        )  # fmt: skip
    out.write(f"\nWhat was sent ({len(plan.notificaties)} notifications):\n")
    out.write(table(("scenario", "regie", "n", "ends as", "as predicted"), rows, right=(2,)))

    counts = Counter(
        final.get(n.id or "", ("-", None)) for n in plan.notificaties if n.refusal is None
    )
    expected = plan.expected()
    order = {status: i for i, status in enumerate(STATUSES)}
    keys = sorted(set(counts) | set(expected), key=lambda k: (order.get(k[0], 99), k[1] or ""))
    status_rows = [
        (status, reden or "-", str(counts.get((status, reden), 0)),
         str(expected.get((status, reden), 0)))
        for status, reden in keys
    ]  # fmt: skip
    out.write(f"\n\nFinal statuses after {display.elapsed():.1f} s, as the DV's feed shows them:\n")
    out.write(table(("status", "reden", "count", "expected"), status_rows, right=(2, 3)))
    out.write(
        f"\n\n  feed: {feed.events} events read in {feed.pages} pages, {feed.acks} "
        f"acknowledgements; {feed.out_of_order} older than the status already applied, ignored\n"
        f"  NotifyNL: {stats['sent']} e-mails accepted, {stats['callbacks']} receipts called "
        f"back, {stats['lost']} callbacks lost (found by reconciliation)\n"
        f"  Profielservice: {stats['profiel_calls']} calls, {stats['ongeldig']} addresses "
        f"reported invalid; LDV: {stats['ldv']} processing records\n"
    )
    wrong = [r for r in rows if r[4] != "yes"]
    if wrong:
        out.write(f"  NOT as predicted: {', '.join(r[0] for r in wrong)}\n")
    else:
        out.write("  every notification ended as its scenario predicts\n")
    out.flush()
    return 1 if wrong else 0


def _label(status: str, reden: str | None) -> str:
    return f"{status} ({reden})" if reden and reden != status else status


def _print_try_it(
    stack: LocalStack, plan: scenario.Plan, token: str, out: TextIO, keep_running: bool
) -> None:
    example = next(
        (n.id for n in plan.notificaties if n.scenario.key == "vol-dan-bezorgd" and n.id),
        next(n.id for n in plan.notificaties if n.id),
    )
    api = stack.api_url
    when = "" if keep_running else " (they need the stack: run with --keep-running)"
    out.write(
        f"\nLook for yourself{when}:\n"
        f"  export TOKEN={token}\n"
        f"  # one notification (two attempts: mailbox full, then delivered):\n"
        f'  curl -s -H "Authorization: Bearer $TOKEN" {api}/api/nmc/v1/notificaties/{example}\n'
        f"  # its delivery proof (a JWS; the keys: {api}/.well-known/jwks.json):\n"
        f'  curl -s -H "Authorization: Bearer $TOKEN" '
        f"{api}/api/nmc/v1/notificaties/{example}/afleverbewijs\n"
        f"  # the feed, from the start:\n"
        f'  curl -s -H "Authorization: Bearer $TOKEN" '
        f"'{api}/api/nmc/v1/notificaties/wijzigingen?limiet=5'\n"
        f"  # the metrics:\n"
        f"  curl -s {api}/metrics | grep -E '^nmc_(notificaties|taken)'\n"
        f"  # logs of every process: {stack.log_dir}\n"
    )
    out.flush()


def _stop(stack: LocalStack, display: Display) -> None:
    """Stop every child; a second Ctrl-C must not cut the clean-up short."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        started = time.monotonic()
        count = len(stack.pids())
        stack.stop()
        display.out.write(f"stopped {count} processes in {time.monotonic() - started:.1f} s\n")
        display.out.flush()
    finally:
        signal.signal(signal.SIGINT, previous)
