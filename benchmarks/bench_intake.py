"""Intake benchmark (not a test): HTTP next to the raw SQL ceiling.

    .venv/bin/python benchmarks/bench_intake.py [--seconds 10] [--workers 2] ...

On a fresh database (on the embedded cluster, or NMC_DATABASE_URL) it measures, in one run:

1. the SQL ceiling of the single intake: nmc.intake_notificatie_v3 called directly over several
   connections with pre-sealed values (what the API's one SQL call costs, without HTTP);
2. the same for the batch: nmc.intake_notificaties_v3 with 1000 items per call (each DV's
   template known, with a placeholder: the check against it runs as in production);
3. single-notification intake over HTTP: `nmc api` (uvicorn) on loopback, several processes
   of a lean keep-alive load generator (rawload), throughput and p50/p99 latency;
4. batch intake over HTTP, 1000 notifications per request.

Everything (clients, API, PostgreSQL) shares this machine's cores, so the figures are a lower
bound for a deployment where they do not.
"""

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import rawload
from psycopg import sql

from nmc.admin.dev_iam import generate_dev_iam_key, issue_dev_token
from nmc.admin.migrate import migrate
from nmc.api.ids import new_notificatie_ids
from nmc.config import Settings
from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring
from nmc.crypto.peppers import new_peppers
from nmc.crypto.sealing import seal
from nmc.database import connection_url, with_overrides
from nmc.queries import QUERIES
from nmc_dev.embedded_db import EmbeddedCluster

ROOT = Path(__file__).resolve().parent.parent
OIN_PREFIX = "000000019999999990"  # + two digits per DV
ISSUER = "https://iam.bench.localhost"
AUDIENCE = "nmc-bench"
BASE = "/api/nmc/v1"
BATCH_SIZE = 1000


# --------------------------------------------------------------------------------------------
# Set-up


def oin(n: int) -> str:
    return f"{OIN_PREFIX}{n:02d}"


def create_database(admin_url: str, dvs: int) -> tuple[str, str, list[int]]:
    """A fresh migrated database with `dvs` onboarded DVs; returns (name, url, dv ids)."""
    name = f"nmc_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_overrides(admin_url, database=name)
    migrate(url, ROOT)
    dv_ids = []
    with psycopg.connect(url, autocommit=True) as conn:
        for n in range(dvs):
            document = {
                "oin": oin(n),
                "naam": f"Benchmark DV {n}",
                "quotumPerMinuut": 2_000_000_000,
                "quotumPerDag": 2_000_000_000,
                "berichttypen": [
                    {"code": "bench", "notifynlTemplateId": str(uuid.uuid4())},
                ],
            }
            row = conn.execute(QUERIES["apply_dienstverlener"], {"config": json.dumps(document)})
            dv_ids.append(row.fetchone()[0])
            # Its template known, with a placeholder: every intake holds its names against it.
            [bench] = document["berichttypen"]
            conn.execute(
                QUERIES["record_template"],
                {"notify_service": "standaard", "template_id": bench["notifynlTemplateId"],
                 "uitkomst": "gelezen", "versie": 1, "placeholders": ["naam"],
                 "sleutels": ["naam"], "fout": None},
            )  # fmt: skip
    return name, url, dv_ids


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def write_secrets(directory: Path) -> dict[str, str]:
    (directory / "kek.json").write_text(json.dumps(new_kek_ring("bench-kek")))
    (directory / "peppers.json").write_text(json.dumps(new_peppers()))
    generate_dev_iam_key(directory / "iam.pem", directory / "jwks.json")
    return {
        "NMC_KEK_FILE": str(directory / "kek.json"),
        "NMC_PEPPERS_FILE": str(directory / "peppers.json"),
        "NMC_OAUTH_ISSUER": ISSUER,
        "NMC_OAUTH_AUDIENCE": AUDIENCE,
        "NMC_OAUTH_JWKS_FILE": str(directory / "jwks.json"),
        "NMC_DEV_IAM_KEY_FILE": str(directory / "iam.pem"),
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --------------------------------------------------------------------------------------------
# The SQL ceiling


def sealed_values(dv_id: int) -> dict:
    ring = parse_kek_ring(new_kek_ring("bench-kek"))
    sealed = seal(uuid.uuid4(), dv_id, "iemand@voorbeeld.nl", {"naam": "Voorbeeld"}, ring=ring)
    return {"ontvanger": sealed.recipient, "gegevens": sealed.berichtgegevens,
            "sleutel": sealed.wrapped_key}  # fmt: skip


def single_params(dv_id: int, values: dict) -> dict:
    return {
        "id": new_notificatie_ids(1)[0], "dv_id": dv_id, "berichttype": "bench",
        "regie": "decentraal",
        "dvref_hmac": secrets.token_bytes(32), "pepper_versie": 1,
        "payload_hmac": secrets.token_bytes(32), "payload_pepper_versie": 1,
        "kek_id": "bench-kek", "geldig_tot": None,
        "batch_id": None, "trace_id": secrets.token_hex(16),
        "span_id": secrets.token_hex(8), "dienst": None,
        "namen": "naam kenmerk", "vorige_hmacs": None,
        "vorige_payload_hmacs": None, "sha256_hash": None,
        **values,
    }  # fmt: skip


def batch_params(dv_id: int, values: dict, n: int) -> dict:
    return {
        "dv_id": dv_id, "regie": "decentraal", "pepper_versie": 1, "payload_pepper_versie": 1,
        "kek_id": "bench-kek",
        "batch_id": uuid.uuid4(), "ids": new_notificatie_ids(n),
        "berichttypen": ["bench"] * n,
        "dvref_hmacs": [secrets.token_bytes(32) for _ in range(n)],
        "payload_hmacs": [secrets.token_bytes(32) for _ in range(n)],
        "ontvangers": [values["ontvanger"]] * n, "gegevens": [values["gegevens"]] * n,
        "sleutels": [values["sleutel"]] * n, "geldig_tot": [None] * n,
        "trace_ids": [secrets.token_hex(16)] * n, "span_ids": [secrets.token_hex(8)] * n,
        "diensten": [None] * n,
        "namen": ["naam kenmerk"] * n, "vorige_hmacs": None,
        "vorige_payload_hmacs": None, "sha256_hashes": None,
    }  # fmt: skip


async def sql_ceiling(
    api_url: str, dv_ids: list[int], connections: int, seconds: float, batch: int
) -> float:
    """Intakes per second of the bare SQL call over `connections` connections (as nmc_api),
    connection k working for DV k mod len(dv_ids). Parameters are made before the clock runs
    for each call, as the API has them ready after sealing."""
    values = sealed_values(dv_ids[0])
    done = 0

    async def worker(k: int, conn: psycopg.AsyncConnection) -> None:
        nonlocal done
        dv_id = dv_ids[k % len(dv_ids)]
        while time.perf_counter() < deadline:
            if batch == 1:
                query, params = QUERIES["intake_notificatie"], single_params(dv_id, values)
            else:
                query = QUERIES["intake_notificaties"]
                params = batch_params(dv_id, values, batch)
            await (await conn.execute(query, params)).fetchall()
            done += batch

    # Connected before the clock runs: on a busy machine connecting can take a short
    # measurement's whole time.
    conns = [
        await psycopg.AsyncConnection.connect(api_url, autocommit=True) for _ in range(connections)
    ]
    try:
        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(*(worker(k, conn) for k, conn in enumerate(conns)))
        return done / (time.perf_counter() - started)
    finally:
        for conn in conns:
            await conn.close()


def warm_up(url: str, api_url: str, dv_ids: list[int], per_dv: int) -> None:
    """Give every DV `per_dv` notifications, then ANALYZE: a database in use has statistics
    (on an empty, never analysed table the planner hashes all of a DV's rows per intake)."""
    values = sealed_values(dv_ids[0])
    with psycopg.connect(api_url, autocommit=True) as conn:
        for dv_id in dv_ids:
            for _ in range(per_dv // BATCH_SIZE):
                conn.execute(
                    QUERIES["intake_notificaties"], batch_params(dv_id, values, BATCH_SIZE)
                )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


# --------------------------------------------------------------------------------------------
# HTTP load (benchmarks/rawload.py: httpx would take the CPU the API needs)


def body(prefix: str, i: int) -> dict:
    return {
        "dvRef": f"{prefix}-{i}",
        "berichtType": "bench",
        "emailAdres": f"ontvanger{i}@voorbeeld.nl",
        "berichtgegevens": {"naam": "Voorbeeld B.V.", "kenmerk": f"K-{i}"},
    }


def intake_requests(base_url: str, path: str, tokens: list[str], make_body) -> Iterator[bytes]:
    """Endless raw HTTP requests, the tokens in turn, each with a body of its own."""
    headers = [{"Authorization": f"Bearer {t}", "Content-Type": "application/json"} for t in tokens]
    for n in itertools.count():
        yield rawload.request_bytes(base_url, path, make_body(n), headers[n % len(headers)])


# Requests are built before the clock runs (more than a run can send), so that the load
# generator spends the machine's CPU on sending, not on JSON: it shares the cores with the
# API and PostgreSQL.
MAX_SINGLE_PER_PROCESS = 4000
MAX_BATCHES_PER_S = 60


def prebuilt(requests: Iterator[bytes], count: int) -> Iterator[bytes]:
    return iter(list(itertools.islice(requests, count)))


async def single_load(
    base_url: str, tokens: list[str], clients: int, per_client: int, seconds: float
) -> tuple[list[float], int, float]:
    """(latencies of accepted intakes, errors, CPU seconds this load process used)."""
    prefix = uuid.uuid4().hex[:12]
    requests = prebuilt(
        intake_requests(
            base_url,
            f"{BASE}/decentraal/notificaties",
            tokens,
            lambda n: json.dumps(body(prefix, n)).encode(),
        ),
        count=int(seconds * MAX_SINGLE_PER_PROCESS),
    )
    cpu_before = time.process_time()
    result = await rawload.run(
        base_url, requests, connections=clients * per_client, seconds=seconds
    )
    errors = sum(count for status, count in result.statuses.items() if status != 202)
    return result.latencies, errors, time.process_time() - cpu_before


async def batch_load(
    base_url: str, tokens: list[str], concurrency: int, seconds: float
) -> tuple[int, int]:
    def batch_body(n: int) -> bytes:
        prefix = f"{uuid.uuid4().hex[:12]}-{n}"
        return json.dumps({"notificaties": [body(prefix, i) for i in range(BATCH_SIZE)]}).encode()

    requests = prebuilt(
        intake_requests(base_url, f"{BASE}/decentraal/notificaties/_batch", tokens, batch_body),
        count=int(seconds * MAX_BATCHES_PER_S),
    )
    result = await rawload.run(base_url, requests, connections=concurrency, seconds=seconds)
    errors = sum(count for status, count in result.statuses.items() if status != 202)
    return result.ok * BATCH_SIZE, errors


def _client_process(kind: str, args: tuple, queue: multiprocessing.Queue) -> None:
    load = single_load if kind == "single" else batch_load
    queue.put(asyncio.run(load(*args)))


def run_clients(kind: str, processes: int, args: tuple) -> list:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [
        context.Process(target=_client_process, args=(kind, args, queue)) for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    results = [queue.get() for _ in workers]
    for worker in workers:
        worker.join()
    return results


# --------------------------------------------------------------------------------------------


# Its imports and every uvicorn worker's start: seconds on a quiet machine, more on shared cores.
API_START_S = 90.0


def start_api(env: dict[str, str], port: int, workers: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "nmc", "api", "--port", str(port)]
    command += ["--workers", str(workers), "--no-access-log"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + API_START_S
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}{BASE}/openapi.json").status_code == 200:
                time.sleep(1.0)  # let every worker finish its start-up
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise SystemExit(f"nmc api failed to start:\n{process.stderr.read().decode()}")
        time.sleep(0.2)
    process.terminate()
    raise SystemExit(f"nmc api did not answer within {API_START_S:.0f} s")


# When set (benchmarks/bench_lifecycle.py, on its own cluster): process_cpu(None) counts this
# postmaster and its children only, not every PostgreSQL on a machine shared with others.
postmaster: int | None = None


def process_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) of a process and its children (uvicorn workers), or with
    None of every PostgreSQL process (backends, WAL writer, checkpointer: all of the
    cluster's work; only `postmaster`'s when that is set), from /proc (Linux); 0 where
    unavailable."""
    if pid is None and postmaster is not None:
        return process_cpu(postmaster)
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, rest = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        fields = rest.split()
        if pid is None:
            counted = name.endswith("(postgres")
        else:
            counted = stat.parent.name == str(pid) or fields[1] == str(pid)
        if counted:
            # utime + stime, and cutime + cstime: a backend that exits (a closed connection)
            # moves its CPU into the postmaster's children's time instead of vanishing.
            total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


@dataclass(frozen=True)
class IntakeOptions:
    """The knobs of one run; `parse_args` fills them from the command line."""

    seconds: float = 5.0
    rounds: int = 3
    dvs: int = 1
    warm_up: int = 5000
    # One uvicorn worker per core, as the API is deployed: a worker is one Python process
    # and uses one core at most.
    workers: int = 2
    pool: int = 8
    sql_connections: int = 8
    client_processes: int = 2
    clients: int = 4
    per_client: int = 4
    # Batches in flight: 4 per API worker, so that while one waits for PostgreSQL the others
    # are parsed and sealed (with 2 per worker the cores idle between them).
    batch_concurrency: int = 8


def parse_args() -> IntakeOptions:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    option = parser.add_argument
    option("--seconds", type=float, default=5.0, help="per measurement (5)")
    option("--rounds", type=int, default=3, help="rounds of all four measurements (3)")
    option("--dvs", type=int, default=1, help="DVs the load is spread over (1)")
    option("--warm-up", type=int, default=5000, help="notifications per DV before measuring")
    option("--workers", type=int, default=2, help="uvicorn worker processes (2)")
    option("--pool", type=int, default=8, help="connections per API worker (8)")
    option("--sql-connections", type=int, default=8, help="connections, SQL ceiling (8)")
    option("--client-processes", type=int, default=2, help="load generator processes (2)")
    option("--clients", type=int, default=4, help="client groups per process (4)")
    option("--per-client", type=int, default=4, help="connections per group (4)")
    option("--batch-concurrency", type=int, default=8, help="batches in flight (8)")
    return IntakeOptions(**vars(parser.parse_args()))


def measure_round(args, api_url, dv_ids, base_url, tokens, api_pid) -> dict[str, float]:
    """One round: each SQL ceiling right before its HTTP counterpart, so that load from
    elsewhere on the machine hits both alike. Also the CPU each side spends per intake."""
    cpu_before = time.process_time()
    sql_single = asyncio.run(sql_ceiling(api_url, dv_ids, args.sql_connections, args.seconds, 1))
    sql_client_cpu = (time.process_time() - cpu_before) / max(1.0, sql_single * args.seconds)
    load = (base_url, tokens, args.clients, args.per_client, args.seconds)
    api_before = process_cpu(api_pid)
    results = run_clients("single", args.client_processes, load)
    latencies = [latency for found, _, _ in results for latency in found]
    accepted = max(1, len(latencies))
    api_cpu = (process_cpu(api_pid) - api_before) / accepted
    load_cpu = sum(cpu for _, _, cpu in results) / accepted
    sql_batch = asyncio.run(
        sql_ceiling(api_url, dv_ids, args.batch_concurrency, args.seconds, BATCH_SIZE)
    )
    time.sleep(0.5)  # the SQL ceiling's backends exit first: their CPU is not the API's load
    api_before, postgres_before = process_cpu(api_pid), process_cpu(None)
    [(done, batch_errors)] = run_clients(
        "batch", 1, (base_url, tokens, args.batch_concurrency, args.seconds)
    )
    api_batch_cpu = (process_cpu(api_pid) - api_before) / max(1, done)
    postgres_batch_cpu = (process_cpu(None) - postgres_before) / max(1, done)
    return {
        "sql_single": sql_single,
        "http_single": len(latencies) / args.seconds,
        "p50": percentile(latencies, 0.5) * 1000,
        "p99": percentile(latencies, 0.99) * 1000,
        "errors": sum(failed for _, failed, _ in results) + batch_errors,
        "cpu_sql_client": sql_client_cpu * 1000,
        "cpu_api": api_cpu * 1000,
        "cpu_load": load_cpu * 1000,
        "sql_batch": sql_batch,
        "http_batch": done / args.seconds,
        "cpu_api_batch_item": api_batch_cpu * 1_000_000,
        "cpu_postgres_batch_item": postgres_batch_cpu * 1_000_000,
    }


def bench_intake(admin_url: str, options: IntakeOptions | None = None) -> dict:
    """All rounds on a fresh database (dropped afterwards); prints each round as it goes and
    returns the medians."""
    args = options or IntakeOptions()
    name, url, dv_ids = create_database(admin_url, args.dvs)
    api_url = with_overrides(url, user="nmc_api")
    in_flight = args.client_processes * args.clients * args.per_client
    print(
        f"database {name}, {args.dvs} DV(s), warm-up {args.warm_up}/DV; {os.cpu_count()} CPUs "
        f"shared by load generator, API ({args.workers} worker(s), pool {args.pool}) and "
        f"PostgreSQL; {args.rounds} round(s) of {args.seconds:g} s per measurement\n"
        f"single: SQL {args.sql_connections} connections, HTTP {in_flight} in flight "
        f"({args.client_processes} processes x {args.clients} x "
        f"{args.per_client}); batch: {args.batch_concurrency} in flight, {BATCH_SIZE} per call",
        flush=True,
    )
    api = None
    try:
        warm_up(url, api_url, dv_ids, args.warm_up)
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, **write_secrets(Path(tmp))}
            env.update(
                NMC_API_DATABASE_URL=api_url,
                NMC_API_POOL_MIN=str(args.pool),
                NMC_API_POOL_MAX=str(args.pool),
            )
            tokens = [
                issue_dev_token(oin(n), lifetime_seconds=3600, environ=env) for n in range(args.dvs)
            ]
            port = free_port()
            api = start_api(env, port, args.workers)
            base_url = f"http://127.0.0.1:{port}"

            header = (
                "round  SQL single  HTTP single   p50 ms   p99 ms  ratio   SQL batch  HTTP batch"
            )
            print(header, flush=True)
            rounds = []
            for number in range(1, args.rounds + 1):
                r = measure_round(args, api_url, dv_ids, base_url, tokens, api.pid)
                rounds.append(r)
                print(
                    f"{number:5d}  {r['sql_single']:10.0f}  {r['http_single']:11.0f}  "
                    f"{r['p50']:7.1f}  {r['p99']:7.1f}  {r['http_single'] / r['sql_single']:5.0%}"
                    f"  {r['sql_batch']:10.0f}  {r['http_batch']:10.0f}"
                    + (f"  ({r['errors']} errors)" if r["errors"] else ""),
                    flush=True,
                )
            median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
            ratio = statistics.median(r["http_single"] / r["sql_single"] for r in rounds)
            print(
                f"median {median['sql_single']:10.0f}  {median['http_single']:11.0f}  "
                f"{median['p50']:7.1f}  {median['p99']:7.1f}  {ratio:5.0%}  "
                f"{median['sql_batch']:10.0f}  {median['http_batch']:10.0f}"
            )
            print(
                f"CPU per single intake (median, ms): API process {median['cpu_api']:.2f}, "
                f"load generator {median['cpu_load']:.2f}; SQL-ceiling client "
                f"(psycopg) {median['cpu_sql_client']:.2f}; PostgreSQL's share is the same on "
                "both paths. CPU per batch item over HTTP: "
                f"API {median['cpu_api_batch_item']:.0f} µs, "
                f"PostgreSQL {median['cpu_postgres_batch_item']:.0f} µs (all its processes)"
            )
            quiet = run_clients("single", 1, (base_url, tokens, 1, 1, args.seconds))
            latencies = quiet[0][0]
            one_in_flight = {
                "per_s": round(len(latencies) / args.seconds),
                "p50_ms": round(percentile(latencies, 0.5) * 1000, 2),
                "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
            }
            print(
                f"one request in flight: {one_in_flight['per_s']}/s, "
                f"p50 {one_in_flight['p50_ms']:.1f} ms, p99 {one_in_flight['p99_ms']:.1f} ms"
            )
            print(
                f"targets: single >= 60% of the SQL ceiling: {ratio:.0%}; "
                f"batch >= 60% of its SQL ceiling: {median['http_batch']:.0f}/s, "
                f"{median['http_batch'] / median['sql_batch']:.0%}",
                flush=True,
            )
    finally:
        if api is not None:
            api.terminate()
            api.wait(timeout=30)
        drop_database(admin_url, name)
    return {
        "sql_single_per_s": round(median["sql_single"]),
        "http_single_per_s": round(median["http_single"]),
        "single_share_of_ceiling": round(ratio, 3),
        "p50_ms": round(median["p50"], 2),
        "p99_ms": round(median["p99"], 2),
        "sql_batch_per_s": round(median["sql_batch"]),
        "http_batch_per_s": round(median["http_batch"]),
        "errors": sum(r["errors"] for r in rounds),
        "cpu_ms_per_single": {
            "api": round(median["cpu_api"], 3),
            "load_generator": round(median["cpu_load"], 3),
            "sql_ceiling_client": round(median["cpu_sql_client"], 3),
        },
        "cpu_us_per_batch_item": {
            "api": round(median["cpu_api_batch_item"], 1),
            "postgres": round(median["cpu_postgres_batch_item"], 1),
        },
        "one_in_flight": one_in_flight,
        "rounds": len(rounds),
    }


def main() -> int:
    options = parse_args()
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    bench_intake(connection_url(settings), options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
