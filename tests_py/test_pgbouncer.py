"""The NMC behind PgBouncer in transaction pooling mode (the Debian package `pgbouncer`).

The test starts its own pgbouncer (pool_mode = transaction, auth_type = trust with a
userlist, on a free loopback port) in front of the test's database, with fewer server
connections than the API's and the worker's pools hold clients, so transactions of
different client sessions share server sessions. Then the whole flow runs through it: intake
over HTTP against the real API, the worker's sends against the NotifyNL simulator, the
simulator's callbacks into the API, settlement, status reads, the feed, the acknowledgement,
/metrics and readiness. Only test control (onboarding the DV, moving the clock) connects to
PostgreSQL directly.

PgBouncer 1.18 (Debian 12) forwards no prepared statements in transaction mode, so the API
and the worker run with prepare_threshold off (NMC_API_PREPARE_THRESHOLD /
NMC_WORKER_PREPARE_THRESHOLD); docs/production.md states the requirement.

PgBouncer refuses to run as root: under root (CI) it runs as the `postgres` OS user that
owns the embedded cluster, from a directory that user owns.
"""

import asyncio
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from nmc.admin.dev_iam import generate_dev_iam_key, issue_dev_token
from nmc.api.app import create_app
from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring
from nmc.crypto.peppers import new_peppers
from nmc.database import with_overrides
from nmc.worker.config import WorkerConfig
from nmc.worker.loop import Worker
from nmc_dev.embedded_db import CLUSTER_OS_USER
from nmc_dev.sim.notifynl import NotifySim, SimConfig
from nmc_dev.sim.server import start_in_thread

PGBOUNCER = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
pytestmark = pytest.mark.skipif(
    PGBOUNCER is None,
    reason="the pgbouncer binary is missing (apt-get install pgbouncer; CI installs it)",
)

OIN = "00000001777777777000"
TEMPLATE_ID = "a0a0a0a0-0000-4000-8000-0000000000bb"
API_KEY = f"nmc_pgbouncer-{uuid.uuid4()}-{uuid.uuid4()}"
CALLBACK_TOKEN = secrets.token_urlsafe(24)
BASE = "/api/nmc/v1"
SERVER_CONNECTIONS = 3  # fewer than the clients: sessions must share server connections


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Bouncer:
    """A pgbouncer process in front of one database; `url(user)` connects through it."""

    def __init__(self, target_url: str) -> None:
        target = conninfo_to_dict(target_url)
        self.database = target["dbname"]
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="nmc-pgbouncer-"))
        users = ("nmc_api", "nmc_worker", "pgbouncer_stats")
        (self.directory / "userlist.txt").write_text("".join(f'"{u}" ""\n' for u in users))
        (self.directory / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"{self.database} = host={target.get('host', '127.0.0.1')} "
            f"port={target.get('port', 5432)} dbname={self.database}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.directory / 'userlist.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {SERVER_CONNECTIONS}\n"
            "max_client_conn = 100\n"
            "stats_users = pgbouncer_stats\n"
            f"logfile = {self.directory / 'pgbouncer.log'}\n"
        )
        as_user = {}
        if os.geteuid() == 0:  # pgbouncer will not run as root
            owner = pwd.getpwnam(CLUSTER_OS_USER)
            for path in (self.directory, *self.directory.iterdir()):
                os.chown(path, owner.pw_uid, owner.pw_gid)
            as_user = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}
        self.process = subprocess.Popen(
            [PGBOUNCER, str(self.directory / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **as_user,
        )
        self._wait_until_it_accepts()

    def url(self, user: str, database: str | None = None) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database or self.database}"

    def stats(self) -> dict[str, int]:
        """SHOW STATS of the admin console (simple query protocol only: a ClientCursor)."""
        with psycopg.connect(
            self.url("pgbouncer_stats", "pgbouncer"),
            autocommit=True,
            cursor_factory=psycopg.ClientCursor,
        ) as conn:
            cursor = conn.execute("SHOW STATS")
            names = [column.name for column in cursor.description]
            for row in cursor.fetchall():
                found = dict(zip(names, row, strict=True))
                if found["database"] == self.database:
                    return found
        raise AssertionError("pgbouncer has no statistics for the database")

    def log(self) -> str:
        path = self.directory / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else "(no log)"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _wait_until_it_accepts(self) -> None:
        deadline = time.monotonic() + 15
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"pgbouncer exited: {self.log()}")
            try:
                with psycopg.connect(self.url("nmc_worker"), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"pgbouncer did not accept: {self.log()}") from None
                time.sleep(0.05)


@pytest.fixture
def bouncer(db_url: str) -> Iterator[Bouncer]:
    running = Bouncer(db_url)
    yield running
    running.stop()


@pytest.fixture
def notifynl() -> Iterator[str]:
    sim = NotifySim(SimConfig(api_keys=[API_KEY]), seed=11)
    server = start_in_thread(sim.app)
    yield server.url
    server.stop()


@pytest.fixture
def api_behind_bouncer(
    bouncer: Bouncer, notifynl: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, dict]]:
    """The real API on a free port, its pool connected through pgbouncer; (url, KEK ring)."""
    kek = new_kek_ring("kek-pgbouncer")
    (tmp_path / "kek.json").write_text(json.dumps(kek))
    generate_dev_iam_key(tmp_path / "iam.pem", tmp_path / "jwks.json")
    for name, value in {
        "NMC_API_DATABASE_URL": bouncer.url("nmc_api"),
        "NMC_API_PREPARE_THRESHOLD": "off",
        "NMC_API_POOL_MIN": "2",
        "NMC_API_POOL_MAX": "6",
        "NMC_API_ACCESS_LOG": "0",
        "NMC_KEK_FILE": str(tmp_path / "kek.json"),
        "NMC_PEPPERS": json.dumps(new_peppers()),
        "NMC_OAUTH_ISSUER": "https://iam.pgbouncer.test",
        "NMC_OAUTH_AUDIENCE": "nmc-pgbouncer",
        "NMC_OAUTH_JWKS_FILE": str(tmp_path / "jwks.json"),
        "NMC_DEV_IAM_KEY_FILE": str(tmp_path / "iam.pem"),
        "NMC_NOTIFYNL_CALLBACK_TOKEN": CALLBACK_TOKEN,
        "NMC_LDV_FILE": str(tmp_path / "ldv-api.jsonl"),
        "NMC_OIN": "00000001234567890000",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("NMC_PEPPERS_FILE", "NMC_OAUTH_JWKS_URL", "NMC_LDV_URL"):
        monkeypatch.delenv(name, raising=False)
    server = start_in_thread(create_app())
    httpx.post(
        f"{notifynl}/_sim/config",
        json={
            "callback_url": f"{server.url}{BASE}/notifynl-callback",
            "callback_token": CALLBACK_TOKEN,
            "retry_gap_s": 0.05,
        },
    ).raise_for_status()
    yield server.url, kek
    server.stop()


def onboard(conn: psycopg.Connection) -> None:
    document = {
        "oin": OIN,
        "naam": "Gemeente Pooldorp",
        "berichttypen": [{"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID}],
    }
    conn.execute("SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)])


async def test_the_whole_flow_runs_through_pgbouncer_in_transaction_mode(
    bouncer, api_behind_bouncer, notifynl, conn, tmp_path, db_url
):
    onboard(conn)
    api_url, kek = api_behind_bouncer
    headers = {"Authorization": f"Bearer {issue_dev_token(OIN)}"}
    before = bouncer.stats()["total_xact_count"]

    api_calls = 0

    async def count(request: httpx.Request) -> None:
        nonlocal api_calls
        api_calls += 1  # every DV API request makes at least one database call

    async with httpx.AsyncClient(
        base_url=api_url + BASE, headers=headers, event_hooks={"request": [count]}
    ) as api:

        async def intake(email: str) -> str:
            body = {"dvRef": f"pool-{secrets.token_hex(6)}", "berichtType": "aanslag"}
            response = await api.post(
                "/decentraal/notificaties", json={**body, "emailAdres": email}
            )
            assert response.status_code == 202, response.text
            return response.json()["notificatieId"]

        delivered = [await intake(f"bezorgd+pool{n}@voorbeeld.nl") for n in range(4)]
        bounced = await intake("permanent+pool@voorbeeld.nl")
        batch = await api.post(
            "/decentraal/notificaties/_batch",
            json={
                "notificaties": [
                    {"dvRef": f"pool-batch-{n}", "berichtType": "aanslag",
                     "emailAdres": f"bezorgd+batch{n}@voorbeeld.nl"}
                    for n in range(2)
                ]
            },
        )  # fmt: skip
        assert batch.status_code == 202, batch.text
        delivered += [item["notificatieId"] for item in batch.json()["notificaties"]]
        cancelled = await intake("bezorgd+geannuleerd@voorbeeld.nl")
        assert (await api.delete(f"/notificaties/{cancelled}")).status_code == 204

        async def status(notificatie_id: str) -> str:
            response = await api.get(f"/notificaties/{notificatie_id}")
            assert response.status_code == 200, response.text
            return response.json()["status"]

        async def statuses_become(expected: dict[str, str], what: str) -> None:
            deadline = time.monotonic() + 30
            while {i: await status(i) for i in expected} != expected:
                assert time.monotonic() < deadline, f"timed out waiting for {what}"
                await asyncio.sleep(0.05)

        config = WorkerConfig(
            database_url=bouncer.url("nmc_worker"),
            notifynl_url=notifynl,
            notifynl_api_key=API_KEY,
            profielservice_url=None,
            ldv_url=None,
            ldv_file=tmp_path / "ldv-worker.jsonl",
            http_timeout=5.0,
            kinds=("verzenden", "receipt", "vaststellen"),
            concurrency=4,
            poll_interval=0.02,
            pool_size=6,
            prepare_threshold=None,
            # The API's hints go through PgBouncer; the worker listens on a direct connection
            # (a LISTEN does not pass transaction mode: docs/production.md).
            hints_url=with_overrides(db_url, user="nmc_worker"),
        )
        async with Worker.started(
            config, ring=parse_kek_ring(kek), pseudonym_key=secrets.token_bytes(32)
        ) as worker:
            loops = asyncio.create_task(worker.run())
            try:
                await statuses_become(
                    {**dict.fromkeys(delivered, "bezorgd"), bounced: "niet-bezorgbaar"},
                    "the sends and the callbacks",
                )
                conn.execute("SELECT nmc.advance_clock('8 days')")  # past the settlement term
                await statuses_become(
                    dict.fromkeys(delivered, "definitief-bezorgd"), "the settlement"
                )
                # A hint goes out at most once per 0.25 s (nmc.api.werk_melder): the one for
                # the callbacks may still be due when the settlement is already done.
                deadline = time.monotonic() + 5
                while worker.hints.heard < 1:
                    assert time.monotonic() < deadline, "the callbacks' hints reached the worker"
                    await asyncio.sleep(0.05)
            finally:
                worker.stop()
                await asyncio.wait_for(loops, timeout=30)

        proof = (await api.get(f"/notificaties/{delivered[0]}")).json()
        assert proof["status"] == "definitief-bezorgd" and proof["pogingen"]
        assert await status(cancelled) == "geannuleerd"

        # The feed: every status change of every notification, then the acknowledgement.
        expected = 5 * len(delivered) + 4 + 2
        events, cursor, deadline = [], None, time.monotonic() + 30
        while len(events) < expected and time.monotonic() < deadline:
            page = await api.get(
                "/notificaties/wijzigingen", params={"cursor": cursor} if cursor else None
            )
            assert page.status_code == 200, page.text
            events += page.json()["events"]
            cursor = page.json()["cursor"]
            if not page.json()["events"]:
                await asyncio.sleep(0.05)
        assert len(events) == expected
        last = {
            e["subject"]: e["data"]["naar"] for e in sorted(events, key=lambda e: e["sequence"])
        }
        assert last == {
            **dict.fromkeys(delivered, "definitief-bezorgd"),
            bounced: "niet-bezorgbaar",
            cancelled: "geannuleerd",
        }
        ack = await api.put("/notificaties/wijzigingen/bevestiging", json={"cursor": cursor})
        assert ack.status_code == 204, ack.text

    async with httpx.AsyncClient(base_url=api_url) as platform:
        assert (await platform.get("/health/ready")).json() == {"status": "gereed"}
        metrics = (await platform.get("/metrics")).text
    assert "nmc_database_bereikbaar 1" in metrics
    assert 'nmc_notificaties{status="definitief-bezorgd"} 6' in metrics

    # It really went through pgbouncer: its transaction count grew by at least one per API
    # request and two per send (claim and finish), not counting callbacks and settlement.
    sends = len(delivered) + 1
    assert bouncer.stats()["total_xact_count"] - before >= api_calls + 2 * sends, bouncer.log()
