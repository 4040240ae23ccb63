"""Callback benchmark (not a test): NotifyNL receipts stored per second over HTTP.

    .venv/bin/python benchmarks/bench_callback.py [--attempts 5000] [--clients 64]

On a fresh database it creates sent attempts through the real SQL functions, starts
`nmc api` on loopback and POSTs one delivery receipt per attempt to
/api/nmc/v1/notifynl-callback over keep-alive connections from a lean load generator
(benchmarks/rawload.py: httpx would take the CPU the API needs). It prints the
receipts stored per second (each request: token check, validation, a share of one grouped
nmc.store_receipts call and its commit) and the latency.

Its ceiling, measured in the same run on another set of sent attempts in the same database:
the same receipts stored by the API's SQL call alone (the named query store_receipts, as
nmc_api), grouped as the API's receipt batcher groups them under this load (as many stores
at once as it allows, MAX_IN_FLIGHT, each with its share of the requests in flight), without
HTTP, token checks or validation. Target: >= 10% of that ceiling.
"""

import argparse
import asyncio
import datetime
import json
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psycopg
import rawload
from bench_intake import (
    batch_params,
    create_database,
    drop_database,
    free_port,
    process_cpu,
    sealed_values,
    start_api,
    write_secrets,
)

from nmc.api.receipt_batcher import MAX_BATCH, MAX_IN_FLIGHT
from nmc.config import Settings
from nmc.database import connection_url, with_overrides
from nmc.queries import QUERIES
from nmc_dev.embedded_db import EmbeddedCluster

PATH = "/api/nmc/v1/notifynl-callback"


def sent_attempts(url: str, dv_id: int, count: int) -> list[tuple[str, str]]:
    """(attempt id, NotifyNL id) for `count` notifications that reached verzonden."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO nmc.notify_service (code, budget_per_minuut) VALUES ('standaard', 1e9) "
            "ON CONFLICT (code) DO NOTHING"
        )
        values = sealed_values(dv_id)
        for start in range(0, count, 1000):
            conn.execute(
                QUERIES["intake_notificaties"],
                batch_params(dv_id, values, min(1000, count - start)),
            )
        attempts = []
        while len(attempts) < count:
            claims = conn.execute(
                "SELECT taak_id, claim_epoch, poging_id FROM nmc.claim_verzenden('bench', 1000)"
            ).fetchall()
            if not claims:
                break
            for taak_id, epoch, poging_id in claims:
                notifynl_id = uuid.uuid4()
                conn.execute(
                    "SELECT nmc.finish_verzenden(%s, %s, 'verzonden', %s)",
                    (taak_id, epoch, notifynl_id),
                )
                attempts.append((str(poging_id), str(notifynl_id)))
    return attempts


def receipt_requests(base_url: str, token: str, attempts: list) -> list[bytes]:
    """One delivery receipt per attempt, as raw HTTP requests (built before the clock runs)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return [
        rawload.request_bytes(
            base_url,
            PATH,
            json.dumps(
                {
                    "id": notifynl_id,
                    "reference": reference,
                    "to": "iemand@voorbeeld.nl",
                    "status": "delivered",
                    "created_at": now,
                    "completed_at": now,
                    "sent_at": now,
                    "notification_type": "email",
                    "template_id": str(uuid.uuid4()),
                    "template_version": 1,
                }
            ).encode(),
            headers,
        )
        for reference, notifynl_id in attempts
    ]


def sql_receipt_ceiling(url: str, sent: list[tuple[str, str]], clients: int) -> dict:
    """Receipts per second through nmc.store_receipts called directly (as nmc_api), in the
    groups the API's batcher makes with `clients` callbacks in flight."""
    group = max(1, min(MAX_BATCH, clients // MAX_IN_FLIGHT))
    now = datetime.datetime.now(datetime.UTC)
    batches = [
        {
            "reference": [reference for reference, _ in chunk],
            "notifynl_id": [uuid.UUID(notifynl_id) for _, notifynl_id in chunk],
            "status": ["delivered"] * len(chunk),
            "completed_at": [now] * len(chunk),
            "sent_at": [now] * len(chunk),
            "template_id": [uuid.uuid4() for _ in chunk],  # as the HTTP receipts carry
            "template_versie": [1] * len(chunk),
        }
        for chunk in (sent[i : i + group] for i in range(0, len(sent), group))
    ]
    api_url = with_overrides(url, user="nmc_api")
    stored = [0] * MAX_IN_FLIGHT

    def store(slot: int, conn: psycopg.Connection) -> None:
        for params in batches[slot::MAX_IN_FLIGHT]:
            rows = conn.execute(QUERIES["store_receipts"], params).fetchall()
            stored[slot] += sum(1 for _, resultaat in rows if resultaat == "opgeslagen")

    conns = [psycopg.connect(api_url, autocommit=True) for _ in range(MAX_IN_FLIGHT)]
    try:
        threads = [
            threading.Thread(target=store, args=(slot, conn)) for slot, conn in enumerate(conns)
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    finally:
        for conn in conns:
            conn.close()
    if sum(stored) != len(sent):
        raise SystemExit(f"the SQL ceiling stored {sum(stored)} of {len(sent)} receipts")
    return {
        "what": f"nmc.store_receipts alone, {MAX_IN_FLIGHT} at once, {group} per call",
        "stored": sum(stored),
        "receipts_per_s": round(sum(stored) / elapsed),
        "group": group,
    }


def bench_callback(admin_url: str, attempts=5000, clients=64, workers=1, ceiling=True) -> dict:
    """Receipts stored per second over HTTP, on a fresh database (dropped afterwards)."""
    name, url, (dv_id,) = create_database(admin_url, 1)
    api = None
    try:
        sent = sent_attempts(url, dv_id, attempts)
        token = secrets.token_urlsafe(24)  # a fresh callback token per run
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, **write_secrets(Path(tmp))}
            env.update(
                NMC_API_DATABASE_URL=with_overrides(url, user="nmc_api"),
                NMC_NOTIFYNL_CALLBACK_TOKEN=token,
            )
            port = free_port()
            api = start_api(env, port, workers)
            requests = receipt_requests(f"http://127.0.0.1:{port}", token, sent)
            api_cpu_before, db_cpu_before = process_cpu(api.pid), process_cpu(None)
            result = asyncio.run(
                rawload.run(f"http://127.0.0.1:{port}", iter(requests), connections=clients)
            )
            api_cpu = process_cpu(api.pid) - api_cpu_before
            db_cpu = process_cpu(None) - db_cpu_before
            if result.ok != len(requests):
                raise SystemExit(f"callbacks answered {result.statuses}")
            latencies, elapsed = result.latencies, result.seconds
        with psycopg.connect(url) as conn:
            stored = conn.execute(
                "SELECT count(*) FROM nmc.taak WHERE soort = 'receipt'"
            ).fetchone()[0]
        sql = (
            sql_receipt_ceiling(url, sent_attempts(url, dv_id, attempts), clients)
            if ceiling
            else None
        )
    finally:
        if api is not None:
            api.terminate()
            api.wait(timeout=30)
        drop_database(admin_url, name)
    latencies.sort()
    return {
        "stored": stored,
        "seconds": round(elapsed, 2),
        "receipts_per_s": round(stored / elapsed),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
        "api_cpu_ms": round(api_cpu / max(1, stored) * 1000, 3),
        # PostgreSQL's (every PostgreSQL process here, bench_intake.process_cpu(None)).
        "db_cpu_ms": round(db_cpu / max(1, stored) * 1000, 3),
        "clients": clients,
        "workers": workers,
        **({"ceiling": sql} if sql else {}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=64, help="connections (one in flight each)")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    args = parser.parse_args()

    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    result = bench_callback(connection_url(settings), args.attempts, args.clients, args.workers)
    print(
        f"{result['stored']} receipts stored in {result['seconds']:.1f} s: "
        f"{result['receipts_per_s']}/s ({args.clients} in flight, {os.cpu_count()} CPUs shared "
        f"by clients, API and PostgreSQL); p50 {result['p50_ms']:.1f} ms, "
        f"p99 {result['p99_ms']:.1f} ms; API CPU {result['api_cpu_ms']:.3f} ms per receipt; "
        f"its SQL ceiling ({result['ceiling']['what']}) {result['ceiling']['receipts_per_s']}/s: "
        f"{result['receipts_per_s'] / result['ceiling']['receipts_per_s']:.0%} of it "
        "(target >= 10%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
