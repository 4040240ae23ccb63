"""Benchmark of the delivery proof (not a test): the median time of one proof request.
Run by hand:

    .venv/bin/python benchmarks/bench_proof.py                 # 200 notifications, 2,000 requests
    .venv/bin/python benchmarks/bench_proof.py --requests 500  # quicker

What is measured: GET /api/nmc/v1/notificaties/{id}/afleverbewijs against `nmc api` (uvicorn,
one worker, on loopback), one request at a time over a keep-alive connection, cycling through
the notifications: the token check, the one SQL call (nmc.get_afleverbewijs as nmc_api), the
LDV record (the JSON-lines file sink), the ES256 signature and the answer. Beside it, in the
same run and alternating with the requests: the bare SQL call alone (its ceiling: the same
proof assembled, no HTTP, no signature), the history page (GET …/geschiedenis) and the DV
client's verification of one proof (nmc_client.verify_afleverbewijs: signature, issuer, id,
chain), each as a median of as many samples.

The notifications are made through the real SQL of the pipeline as admin, each like the demo's
example: accepted, sent, mailbox full (temporary-failure), resent, delivered, settled after the
7-day term (the clock moved by nmc.advance_clock): 6 events, 2 attempts with a receipt each
and a settlement. Each run has a database of its own (dropped afterwards).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell"))
sys.path.insert(0, str(ROOT / "pyshell" / "dev"))

from bench_intake import free_port, start_api, write_secrets  # noqa: E402
from bench_send import fresh_database, onboard  # noqa: E402

from nmc.admin.dev_iam import issue_dev_token  # noqa: E402
from nmc.config import Settings  # noqa: E402
from nmc.database import connection_url, with_overrides  # noqa: E402
from nmc.feed.cloudevents import event_source  # noqa: E402
from nmc.queries import QUERIES  # noqa: E402
from nmc.signing.afleverbewijs_signing import new_afleverbewijs_ring  # noqa: E402
from nmc.signing.webhook_signing import new_signing_ring  # noqa: E402
from nmc_client import StaticJwks, verify_afleverbewijs  # noqa: E402
from nmc_dev.embedded_db import EmbeddedCluster  # noqa: E402

BASE = "/api/nmc/v1"
NMC_OIN = "00000001234567890000"
WARM_UP = 50


def make_notificaties(conn: psycopg.Connection, dv_id: int, count: int) -> list[str]:
    """`count` notifications through the pipeline's SQL: sent, mailbox full, resent,
    delivered, settled."""
    ids = [
        conn.execute(
            "SELECT r.notificatie_id FROM nmc.intake_notificatie_v3(gen_random_uuid(), %s,"
            " 'aanslag', 'decentraal', %s, 1::smallint, %s, 0::smallint, '\\x01', NULL,"
            " '\\x02', 'bench-kek', NULL, NULL, '0123456789abcdef0123456789abcdef', NULL,"
            " NULL) AS r",
            (dv_id, os.urandom(32), os.urandom(32)),
        ).fetchone()[0]
        for _ in range(count)
    ]
    for status in ("temporary-failure", "delivered"):
        claims = conn.execute(
            "SELECT c.taak_id, c.claim_epoch FROM nmc.claim_verzenden('bench', %s) AS c", (count,)
        ).fetchall()
        for taak_id, epoch in claims:
            conn.execute(
                "SELECT nmc.finish_verzenden(%s, %s, 'verzonden', %s)",
                (taak_id, epoch, uuid.uuid4()),
            )
        attempts = conn.execute(
            "SELECT DISTINCT ON (p.notificatie_id) p.id::text, p.notifynl_id FROM nmc.poging AS p"
            " WHERE p.notificatie_id = ANY(%s) ORDER BY p.notificatie_id, p.nummer DESC",
            (ids,),
        ).fetchall()
        now = conn.execute("SELECT nmc.now()").fetchone()[0]
        conn.execute(
            "SELECT count(*) FROM nmc.store_receipts_v2(%s, %s, %s, %s, %s, %s, %s)",
            (
                [a for a, _ in attempts],
                [n for _, n in attempts],
                [status] * len(attempts),
                [now] * len(attempts),
                [now] * len(attempts),
                [uuid.UUID("a0a0a0a0-0000-4000-8000-00000000000f")] * len(attempts),
                [3] * len(attempts),
            ),
        )
        conn.execute("SELECT nmc.process_receipts(%s)", (2 * count,))
    conn.execute("SELECT nmc.advance_clock('8 days')")
    conn.execute("SELECT nmc.process_vaststellingen(%s)", (count,))
    settled = conn.execute(
        "SELECT count(*) FROM nmc.notificatie WHERE id = ANY(%s) AND status = 'definitief-bezorgd'"
        " AND versie = 6",
        (ids,),
    ).fetchone()[0]
    if settled != count:
        raise SystemExit(f"set-up: {settled} of {count} notifications settled as planned")
    return [str(i) for i in ids]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p99_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000


def bench_proof(admin_url: str, notificaties: int = 200, requests: int = 2000) -> dict:
    with fresh_database(admin_url) as url, tempfile.TemporaryDirectory() as secrets:
        directory = Path(secrets)
        with psycopg.connect(url, autocommit=True) as conn:
            [dv_id] = onboard(conn, 1)
            oin = conn.execute("SELECT oin FROM nmc.dienstverlener WHERE dv_id = %s", (dv_id,))
            oin = oin.fetchone()[0]
            ids = make_notificaties(conn, dv_id, notificaties)
        env = {**os.environ, **write_secrets(directory)}
        (directory / "bewijs.json").write_text(json.dumps(new_afleverbewijs_ring("bench-bewijs")))
        (directory / "webhook.json").write_text(json.dumps(new_signing_ring("bench-webhook")))
        env.update(
            NMC_API_DATABASE_URL=with_overrides(url, user="nmc_api"),
            NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE=str(directory / "bewijs.json"),
            NMC_WEBHOOK_SIGNING_KEYS_FILE=str(directory / "webhook.json"),
            NMC_LDV_FILE=str(directory / "ldv.jsonl"),
            NMC_OIN=NMC_OIN,
            NMC_API_POOL_MIN="2",
        )
        port = free_port()
        api = start_api(env, port, workers=1)
        issuer = event_source({"NMC_OIN": NMC_OIN})
        try:
            token = issue_dev_token(oin, lifetime_seconds=3600, environ=env)
            headers = {"Authorization": f"Bearer {token}"}
            proof_times, history_times, sql_times, verify_times = [], [], [], []
            with (
                httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as http,
                psycopg.connect(with_overrides(url, user="nmc_api"), autocommit=True) as sql,
            ):
                jwks = StaticJwks(http.get("/.well-known/jwks.json").json())
                for i in range(WARM_UP):
                    http.get(f"{BASE}/notificaties/{ids[i % len(ids)]}/afleverbewijs")
                for i in range(requests):
                    notificatie_id = ids[i % len(ids)]
                    started = time.perf_counter()
                    response = http.get(f"{BASE}/notificaties/{notificatie_id}/afleverbewijs")
                    proof_times.append(time.perf_counter() - started)
                    if response.status_code != 200:
                        raise SystemExit(f"proof request answered {response.status_code}")
                    started = time.perf_counter()
                    verify_afleverbewijs(
                        response.text, jwks, issuer=issuer, notificatie_id=notificatie_id
                    )
                    verify_times.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    sql.execute(
                        QUERIES["get_afleverbewijs"], {"dv_id": dv_id, "id": notificatie_id}
                    ).fetchone()
                    sql_times.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    page = http.get(f"{BASE}/notificaties/{notificatie_id}/geschiedenis")
                    history_times.append(time.perf_counter() - started)
                    if page.status_code != 200:
                        raise SystemExit(f"history request answered {page.status_code}")
                size = len(response.content)
        finally:
            api.terminate()
            api.wait(timeout=30)
    return {
        "notificaties": notificaties,
        "requests": requests,
        "proof_p50_ms": median_ms(proof_times),
        "proof_p99_ms": p99_ms(proof_times),
        "sql_p50_ms": median_ms(sql_times),
        "history_p50_ms": median_ms(history_times),
        "verify_p50_ms": median_ms(verify_times),
        "proof_bytes": size,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notificaties", type=int, default=200)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    r = bench_proof(connection_url(settings), args.notificaties, args.requests)
    print(
        f"delivery proof: {r['requests']} requests over {r['notificaties']} settled "
        f"notifications (6 events, 2 attempts with a receipt each, a settlement)\n"
        f"  GET …/afleverbewijs (HTTP, token, SQL, LDV record, ES256): median "
        f"{r['proof_p50_ms']:.2f} ms, p99 {r['proof_p99_ms']:.2f} ms, {r['proof_bytes']} bytes\n"
        f"  nmc.get_afleverbewijs alone (SQL as nmc_api):             median "
        f"{r['sql_p50_ms']:.2f} ms\n"
        f"  GET …/geschiedenis (one page):                             median "
        f"{r['history_p50_ms']:.2f} ms\n"
        f"  nmc_client verification of one proof:                      median "
        f"{r['verify_p50_ms']:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
