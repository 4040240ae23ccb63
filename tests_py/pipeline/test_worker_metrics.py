"""The worker's own /metrics, /health/live and /health/ready, against a running worker.

The worker runs its loops (`Worker.run`) with the listener on a free port, sends against the
simulators, and is scraped over real HTTP: its process series (tasks per kind and outcome,
in flight, claim rounds, outbound call latency per target and status class) and the database
counts of nmc.metrics(), rendered by the same code as the API's.
"""

import asyncio
import contextlib
import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator

import httpx
import pytest
from pipelinetest import API_KEY, DIENST, DV_NAAM, set_faults, sim_get, status_of, wait_for

from nmc.crypto.peppers import new_peppers
from nmc.worker.loop import Worker
from nmc.worker.metrics import Targets, WorkerMetrics
from privacy_scan import SCAN

BSN_PARTIJ = "999993653"
ADRES_PARTIJ = "bezorgd+metriek-partij@bedrijf-prive.nl"

Samples = dict[tuple[str, frozenset], float]


def parse(text: str) -> Samples:
    """Prometheus text -> {(name, labels): value}; HELP/TYPE lines are checked in passing."""
    samples: Samples = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert line.startswith(("# HELP ", "# TYPE ")), line
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        pairs = [pair.split("=", 1) for pair in labels.rstrip("}").split('",') if pair]
        key = frozenset((k, v.strip('"')) for k, v in pairs)
        samples[(name, key)] = float(value)
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of `name` that has at least these labels."""
    wanted = set(labels.items())
    return sum(v for (n, key), v in samples.items() if n == name and wanted <= key)


@contextlib.asynccontextmanager
async def running(config, ring) -> AsyncIterator[tuple[Worker, httpx.AsyncClient]]:
    """A worker with its listener on a free port, its loops running; stopped afterwards."""
    async with Worker.started(
        dataclasses.replace(config, metrics_port=0), ring=ring, pseudonym_key=os.urandom(32)
    ) as worker:
        host, port = worker.ops_address
        loops = asyncio.create_task(worker.run())
        try:
            async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
                yield worker, client
        finally:
            worker.stop()
            await asyncio.wait_for(loops, timeout=30)


async def scrape(client: httpx.AsyncClient) -> tuple[httpx.Response, Samples]:
    response = await client.get("/metrics")
    assert response.status_code == 200
    SCAN.output("a worker's /metrics", response.text)  # the suite-wide personal-data scan
    return response, parse(response.text)


async def eventually(condition, timeout: float = 15.0, what: str = "condition"):
    """Poll the running worker (a background process) until `condition()` is truthy."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        result = await condition()
        if result:
            return result
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_running_worker_serves_its_own_and_the_database_metrics(
    sim, callbacks, worker_config, ring, intake, conn
):
    httpx.post(
        f"{sim.profiel_url}/_sim/parties",
        json={
            "identificatieType": "BSN",
            "identificatieNummer": BSN_PARTIJ,
            "contactgegevens": [
                {
                    "waarde": ADRES_PARTIJ,
                    "scopes": [{"dienstverlenerNaam": DV_NAAM, "dienstNaam": DIENST}],
                }
            ],
        },
    ).raise_for_status()
    geheim = {"naam": "Metriek-Persoonsnaam-Geheim"}
    ids = [intake(f"bezorgd+metriek{n}@voorbeeld-prive.nl", gegevens=geheim) for n in range(4)]
    ids.append(intake(f"BSN:{BSN_PARTIJ}", regie="centraal", gegevens=geheim))
    config = dataclasses.replace(worker_config, kinds=("verzenden", "receipt"))

    async with running(config, ring) as (_, client):
        live = await client.get("/health/live")
        assert (live.status_code, live.json()) == (200, {"status": "up"})
        ready = await client.get("/health/ready")
        assert (ready.status_code, ready.json()) == (200, {"status": "gereed"})

        async def all_bezorgd():
            return all(status_of(conn, i)[0] == "bezorgd" for i in ids)

        await eventually(all_bezorgd, what="five notifications to be delivered")
        response, samples = await scrape(client)

    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    # The worker's own series.
    assert value(samples, "nmc_worker_taken_totaal", soort="verzenden", uitkomst="verzonden") == 5
    assert value(samples, "nmc_worker_taken_totaal", soort="receipt", uitkomst="verwerkt") >= 5
    assert value(samples, "nmc_worker_taken_bezig", soort="verzenden") == 0
    assert value(samples, "nmc_worker_taken_bezig", soort="receipt") == 0
    assert value(samples, "nmc_worker_claimronde_seconden_count", soort="verzenden") >= 1
    assert value(samples, "nmc_worker_claimronde_seconden_count", soort="receipt") >= 1
    calls = "nmc_worker_aanroep_seconden_count"
    assert value(samples, calls, doel="notifynl", klasse="2xx") == 5
    assert value(samples, calls, doel="profielservice", klasse="2xx") == 1
    # An LDV record before each of the six calls to NotifyNL and the Profielservice.
    assert value(samples, calls, doel="ldv", klasse="2xx") == 6
    assert total(samples, calls, doel="webhook") == 0
    buckets = "nmc_worker_aanroep_seconden_bucket"
    assert value(samples, buckets, doel="notifynl", klasse="2xx", le="+Inf") == 5
    assert value(samples, "nmc_worker_aanroep_seconden_sum", doel="notifynl", klasse="2xx") > 0
    # The database's counts, from nmc.metrics(), as the API renders them.
    assert value(samples, "nmc_notificaties", status="bezorgd") == 5
    assert value(samples, "nmc_database_bereikbaar") == 1
    assert value(samples, "nmc_geen_contactgegevens_drempel") == 0.3
    # Labels hold kinds, words and target names: no address, number, name or URL.
    for needle in (ADRES_PARTIJ, BSN_PARTIJ, "voorbeeld-prive", geheim["naam"], "127.0.0.1"):
        assert needle.lower() not in response.text.lower()


async def test_in_flight_and_the_status_classes_of_failing_calls(
    sim, worker_config, ring, intake, conn
):
    ids = [intake(f"bezorgd+traag{n}@voorbeeld.nl") for n in range(3)]
    # The simulator answers after 4 s; the worker gives up after its 2 s timeout, so the
    # three sends are in flight for at least 2 s and then defer as a timeout.
    set_faults(sim, latency_ms=4000)
    config = dataclasses.replace(worker_config, kinds=("verzenden",), http_timeout=2.0)
    async with running(config, ring) as (_, client):

        async def three_in_flight():
            _, samples = await scrape(client)
            return value(samples, "nmc_worker_taken_bezig", soort="verzenden") == 3

        await eventually(three_in_flight, what="three sends in flight")

        async def three_deferred():
            _, samples = await scrape(client)
            done = value(
                samples, "nmc_worker_taken_totaal", soort="verzenden", uitkomst="uitgesteld"
            )
            return samples if done >= 3 else None

        # (A deferred send is due again soon, so later rounds may already be running.)
        samples = await eventually(three_deferred, what="three sends to time out")
        calls = "nmc_worker_aanroep_seconden_count"
        assert value(samples, calls, doel="notifynl", klasse="timeout") >= 3
        assert value(samples, calls, doel="notifynl", klasse="2xx") == 0
        assert total(samples, "nmc_taken", soort="verzenden") == 3  # open or claimed, not done

        # An outage answer is its own class.
        set_faults(sim, error_rate={"503": 1.0})
        conn.execute("SELECT nmc.advance_clock('1 hour')")

        async def three_503():
            _, samples = await scrape(client)
            return value(samples, calls, doel="notifynl", klasse="5xx") >= 3

        await eventually(three_503, what="three 503 answers")
    assert {status_of(conn, i)[0] for i in ids} == {"in-verzending"}
    # Slow requests finish at the simulator after the worker gave up; wait for them, so they
    # do not land in the next test's (reset) simulator.
    wait_for(
        lambda: all(r["status"] for r in sim_get(sim.notifynl_url, "/_sim/requests")),
        what="the simulator's slow requests",
    )


async def test_health_ready_follows_the_database_and_unknown_paths_are_refused(
    sim, worker_config, ring, conn
):
    config = dataclasses.replace(worker_config, kinds=("receipt",))
    async with running(config, ring) as (_, client):
        assert (await client.get("/health/ready")).status_code == 200
        assert (await client.get("/nergens")).status_code == 404
        refused = await client.post("/metrics")
        assert (refused.status_code, refused.headers["allow"]) == (405, "GET, HEAD")
        head = await client.head("/metrics")
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) > 0

        # A database from before this version's functions is not ready (nor is a scrape
        # refused: the counts still come, the function is not the one missing).
        conn.execute("DROP FUNCTION nmc.process_wissen(integer)")
        not_ready = await client.get("/health/ready")
        assert not_ready.status_code == 503
        assert not_ready.json() == {"status": "niet-gereed", "reden": "migratie"}
        _, samples = await scrape(client)
        assert value(samples, "nmc_database_bereikbaar") == 1

        # Without nmc.metrics() the scrape still answers, with the process series.
        conn.execute("DROP FUNCTION nmc.metrics()")
        _, samples = await scrape(client)
        assert value(samples, "nmc_database_bereikbaar") == 0
        assert value(samples, "nmc_worker_taken_bezig", soort="receipt") == 0
        # A head that never ends is cut off instead of holding the listener.
        host, port = client.base_url.host, client.base_url.port
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /metrics HTTP/1.1\r\n" + b"X-Lang: " + b"a" * 10_000)
        await writer.drain()
        try:
            answer = await asyncio.wait_for(reader.read(), timeout=10)
        except ConnectionResetError:  # closed with the unread rest of the head: a reset
            answer = b""
        assert answer == b""
        writer.close()
        assert (await client.get("/health/live")).status_code == 200


def test_nmc_worker_metrics_port_as_an_operator_runs_it(
    sim, worker_config, ring_document, tmp_path
):
    kek_file = tmp_path / "kek.json"
    kek_file.write_text(json.dumps(ring_document))
    process = subprocess.Popen(
        [sys.executable, "-m", "nmc", "worker", "--kinds", "verzenden", "--metrics-port", "0"],
        env={
            **os.environ,
            "NMC_WORKER_DATABASE_URL": worker_config.database_url,
            "NMC_NOTIFYNL_URL": sim.notifynl_url,
            "NMC_NOTIFYNL_API_KEY": API_KEY,
            "NMC_LDV_FILE": str(tmp_path / "ldv.jsonl"),
            "NMC_KEK_FILE": str(kek_file),
            "NMC_PEPPERS": json.dumps(new_peppers()),
            "NMC_WORKER_METRICS_HOST": "127.0.0.1",
        },
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    stderr: list[str] = []

    def read_stderr() -> None:
        for line in process.stderr:
            stderr.append(line)
            lines.put(line)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        port = None
        while port is None:
            logged = json.loads(lines.get(timeout=30))
            if logged["event"] == "metrics-luistert":
                port = logged["port"]
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/health/live").json() == {"status": "up"}
        assert httpx.get(f"{base}/health/ready").json() == {"status": "gereed"}
        samples = parse(httpx.get(f"{base}/metrics").text)
        assert value(samples, "nmc_worker_taken_bezig", soort="verzenden") == 0
        assert value(samples, "nmc_database_bereikbaar") == 1
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        reader.join(timeout=10)
        SCAN.output("the stderr of `nmc worker`", "".join(stderr))
    assert process.returncode == 0
    assert json.loads(stderr[-1])["event"] == "worker-stop"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base}/health/live")


def test_targets_match_base_urls_on_segment_boundaries():
    targets = Targets(
        {
            "notifynl": "http://gateway:8080/notifynl",
            "profielservice": "http://gateway:8080/notifynl-profiel/",
            "ldv": "https://ldv.example/api/records",
        }
    )
    assert targets.of(httpx.URL("http://gateway:8080/notifynl/v2/notifications")) == "notifynl"
    assert targets.of(httpx.URL("http://gateway:8080/notifynl-profiel/partij")) == "profielservice"
    assert targets.of(httpx.URL("https://ldv.example/api/records")) == "ldv"
    # Another port, scheme or a path that only shares a prefix is a DV's webhook.
    assert targets.of(httpx.URL("http://gateway:8081/notifynl/v2")) == "webhook"
    assert targets.of(httpx.URL("http://gateway:8080/notifynlx")) == "webhook"
    assert targets.of(httpx.URL("http://ldv.example/api/records")) == "webhook"
    assert Targets({"notifynl": "http://h:1", "ldv": None}).of(httpx.URL("http://h:1/x")) == (
        "notifynl"
    )


def test_outcome_words_outside_the_vocabulary_are_folded():
    metrics = WorkerMetrics(["verzenden"])
    metrics.task_started("verzenden")
    metrics.task_finished("verzenden", "Iemand@Voorbeeld.nl")
    metrics.task_started("verzenden")
    metrics.task_finished("verzenden", "verzonden")
    metrics.tasks_done("receipt", "verwerkt", 0)  # an empty round counts nothing
    samples = parse("\n".join(metrics.lines()))
    assert value(samples, "nmc_worker_taken_totaal", soort="verzenden", uitkomst="overig") == 1
    assert value(samples, "nmc_worker_taken_totaal", soort="verzenden", uitkomst="verzonden") == 1
    assert value(samples, "nmc_worker_taken_bezig", soort="verzenden") == 0
    assert total(samples, "nmc_worker_taken_totaal", soort="receipt") == 0
