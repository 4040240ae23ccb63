"""Callback benchmark (not a test): NotifyNL receipts stored per second over HTTP.

    .venv/bin/python benchmarks/bench_callback.py [--attempts 5000] [--clients 64]

On a fresh database it creates sent attempts through the real SQL functions, starts
`nmc api` on loopback and POSTs one delivery receipt per attempt to
/api/nmc/v1/notifynl-callback from concurrent httpx clients in two processes. It prints the
receipts stored per second (each request: token check, validation, one nmc.store_receipt
call and its commit) and the latency. Target (issue 5): >= 2,000 receipts/s.
"""

import argparse
import asyncio
import datetime
import multiprocessing
import os
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests_py"))
from bench_intake import (
    batch_params,
    create_database,
    drop_database,
    free_port,
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


async def post_receipts(base_url: str, token: str, attempts: list, clients: int) -> list[float]:
    latencies: list[float] = []
    queue = list(attempts)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    async def client() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
            while queue:
                reference, notifynl_id = queue.pop()
                body = {
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
                started = time.perf_counter()
                response = await http.post(
                    PATH, json=body, headers={"Authorization": f"Bearer {token}"}
                )
                latencies.append(time.perf_counter() - started)
                if response.status_code != 200:
                    raise SystemExit(f"callback answered {response.status_code}")

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies


def _process(base_url: str, token: str, attempts: list, clients: int, out) -> None:
    out.put(asyncio.run(post_receipts(base_url, token, attempts, clients)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=64, help="in flight, over 2 processes")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    args = parser.parse_args()

    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    admin_url = connection_url(settings)
    name, url, (dv_id,) = create_database(admin_url, 1)
    api = None
    try:
        attempts = sent_attempts(url, dv_id, args.attempts)
        token = secrets.token_urlsafe(24)  # a fresh callback token per run
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, **write_secrets(Path(tmp))}
            env.update(
                NMC_API_DATABASE_URL=with_overrides(url, user="nmc_api"),
                NMC_NOTIFYNL_CALLBACK_TOKEN=token,
            )
            port = free_port()
            api = start_api(env, port, args.workers)
            context = multiprocessing.get_context("spawn")
            out = context.Queue()
            halves = [attempts[0::2], attempts[1::2]]
            started = time.perf_counter()
            processes = [
                context.Process(
                    target=_process,
                    args=(f"http://127.0.0.1:{port}", token, half, args.clients // 2, out),
                )
                for half in halves
            ]
            for process in processes:
                process.start()
            latencies = [value for _ in processes for value in out.get()]
            for process in processes:
                process.join()
            elapsed = time.perf_counter() - started
        with psycopg.connect(url) as conn:
            stored = conn.execute(
                "SELECT count(*) FROM nmc.taak WHERE soort = 'receipt'"
            ).fetchone()[0]
        latencies.sort()
        print(
            f"{stored} receipts stored in {elapsed:.1f} s: {stored / elapsed:.0f}/s "
            f"({args.clients} in flight, {os.cpu_count()} CPUs shared by clients, API and "
            f"PostgreSQL); p50 {statistics.median(latencies) * 1000:.1f} ms, "
            f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms; target >= 2,000/s"
        )
    finally:
        if api is not None:
            api.terminate()
            api.wait(timeout=30)
        drop_database(admin_url, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
