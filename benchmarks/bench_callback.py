"""Callback benchmark (not a test): NotifyNL receipts stored per second over HTTP.

    .venv/bin/python benchmarks/bench_callback.py [--attempts 5000] [--clients 64]

On a fresh database it creates sent attempts through the real SQL functions, starts
`nmc api` on loopback and POSTs one delivery receipt per attempt to
/api/nmc/v1/notifynl-callback over keep-alive connections from a lean load generator
(benchmarks/rawload.py: httpx would take the CPU the API needs). It prints the
receipts stored per second (each request: token check, validation, a share of one grouped
nmc.store_receipts call and its commit) and the latency. Target (issue 5): >= 2,000 receipts/s.
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

from nmc.config import Settings
from nmc.database import connection_url, with_overrides
from nmc.embedded_db import EmbeddedCluster
from nmc.queries import QUERIES

PATH = "/api/nmc/v1/notifynl-callback"


def sent_attempts(url: str, dv_id: int, count: int) -> list[tuple[str, str]]:
    """(attempt id, NotifyNL id) for `count` notifications that reached verzonden."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO nmc.notify_service (code, budget_per_minuut) VALUES ('standaard', 1e9)"
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


def bench_callback(admin_url: str, attempts=5000, clients=64, workers=1) -> dict:
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
            api_cpu_before = process_cpu(api.pid)
            result = asyncio.run(
                rawload.run(f"http://127.0.0.1:{port}", iter(requests), connections=clients)
            )
            api_cpu = process_cpu(api.pid) - api_cpu_before
            if result.ok != len(requests):
                raise SystemExit(f"callbacks answered {result.statuses}")
            latencies, elapsed = result.latencies, result.seconds
        with psycopg.connect(url) as conn:
            stored = conn.execute(
                "SELECT count(*) FROM nmc.taak WHERE soort = 'receipt'"
            ).fetchone()[0]
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
        "clients": clients,
        "workers": workers,
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
        f"target >= 2,000/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
