"""Fixtures of the send-pipeline tests: the simulators as real HTTP servers on free loopback
ports (started once per session, reset per test), a DV, an intake helper that seals like the
API does, and workers connected as nmc_worker to the test's own database.
"""

import json
import secrets
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path

import httpx
import psycopg
import pytest
from pipelinetest import (
    API_KEY,
    CALLBACK_TOKEN,
    DIENST,
    DV_NAAM,
    DV_OIN,
    TEMPLATE_ID,
    Sims,
    configure_notifynl,
)

from nmc.crypto.kek_ring import KekRing, new_kek_ring, parse_kek_ring
from nmc.crypto.peppers import new_peppers
from nmc.crypto.sealing import seal
from nmc.database import with_overrides
from nmc.worker.config import WorkerConfig
from nmc.worker.loop import Worker
from nmc_dev.sim.ldv import RECORDS_PATH, LdvSim
from nmc_dev.sim.notifynl import NotifySim, SimConfig
from nmc_dev.sim.profielservice import ProfielSim
from nmc_dev.sim.server import RunningServer, start_in_thread
from privacy_scan import SCAN


@pytest.fixture(scope="session")
def sims() -> Iterator[Sims]:
    notifynl = NotifySim(SimConfig(api_keys=[API_KEY]), seed=7)
    profiel = ProfielSim(hang_s=5.0)
    ldv = LdvSim()
    servers: list[RunningServer] = [
        start_in_thread(app) for app in (notifynl.app, profiel.app, ldv.app)
    ]
    yield Sims(
        notifynl=notifynl,
        profiel=profiel,
        ldv=ldv,
        notifynl_url=servers[0].url,
        profiel_url=servers[1].url,
        ldv_url=servers[2].url + RECORDS_PATH,
    )
    for server in servers:
        server.stop()


@pytest.fixture
def sim(sims: Sims, db_url: str) -> Sims:
    """The simulators, emptied; NotifyNL sends no callbacks unless `callbacks` is used."""
    for url in (sims.notifynl_url, sims.profiel_url, sims.ldv_url.removesuffix(RECORDS_PATH)):
        httpx.post(f"{url}/_sim/reset").raise_for_status()
    configure_notifynl(
        sims,
        callback_url=None,
        callback_token=CALLBACK_TOKEN,
        retry_gap_s=0.05,
        delivery_delay_s=0.0,
        retention_s=7 * 86400.0,
        hang_s=5.0,
        day_limit=None,
    )
    return sims


@pytest.fixture
def callbacks(
    sim: Sims, db_url: str, ring_document: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The real DV API (`nmc.api.app`) on a free port, as the target of NotifyNL's callbacks:
    its callback endpoint stores receipts through nmc.store_receipt as nmc_api."""
    from nmc.admin.dev_iam import generate_dev_iam_key
    from nmc.api.app import create_app
    from nmc.api.routes_callback import CALLBACK_PATH

    generate_dev_iam_key(tmp_path / "iam.pem", tmp_path / "jwks.json")
    (tmp_path / "kek.json").write_text(json.dumps(ring_document))
    for name, value in {
        "NMC_API_DATABASE_URL": with_overrides(db_url, user="nmc_api"),
        "NMC_KEK_FILE": str(tmp_path / "kek.json"),
        "NMC_PEPPERS": json.dumps(new_peppers()),
        "NMC_OAUTH_ISSUER": "https://iam.test",
        "NMC_OAUTH_AUDIENCE": "nmc",
        "NMC_OAUTH_JWKS_FILE": str(tmp_path / "jwks.json"),
        "NMC_NOTIFYNL_CALLBACK_TOKEN": CALLBACK_TOKEN,
        "NMC_API_POOL_MIN": "1",
        "NMC_API_POOL_MAX": "4",
        "NMC_API_ACCESS_LOG": "0",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("NMC_PEPPERS_FILE", "NMC_OAUTH_JWKS_URL"):
        monkeypatch.delenv(name, raising=False)
    server = start_in_thread(create_app())
    configure_notifynl(sim, callback_url=server.url + CALLBACK_PATH)
    yield server.url
    server.stop()


@pytest.fixture
def traced():
    """Tracing on (nmc.tracing), into the SDK's in-memory exporter: name it before the API
    and the worker fixtures, which read it when they start."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from nmc import tracing

    exporter = InMemorySpanExporter()
    tracing.configure("nmc-test", exporter)
    yield exporter
    tracing.shutdown()


@pytest.fixture(scope="session")
def ring_document() -> dict:
    return new_kek_ring("kek-test")


@pytest.fixture(scope="session")
def ring(ring_document: dict) -> KekRing:
    return parse_kek_ring(ring_document)


@pytest.fixture
def dv_id(conn: psycopg.Connection) -> int:
    document = {
        "oin": DV_OIN,
        "naam": DV_NAAM,
        "quotumPerMinuut": 100000,
        "berichttypen": [
            {"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID},
            {"code": "herinnering", "notifynlTemplateId": TEMPLATE_ID, "geldigheidMax": "60 days"},
        ],
    }
    return conn.execute(
        "SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)]
    ).fetchone()[0]


@pytest.fixture
def intake(conn: psycopg.Connection, dv_id: int, ring: KekRing):
    """intake(recipient, regie=…, geldig_tot=…) -> notificatie id, through nmc.intake_notificatie
    as the API calls it (ids, seal, HMACs made here)."""

    def accept(
        recipient: str,
        *,
        regie: str = "decentraal",
        berichttype: str = "aanslag",
        geldig_tot: datetime | None = None,
        gegevens: dict[str, str] | None = None,
        dienst: str | None = DIENST,
    ) -> uuid.UUID:
        notificatie_id = uuid.uuid4()
        SCAN.register_sealed(recipient, gegevens)  # personal: scanned for in every output
        sealed = seal(notificatie_id, dv_id, recipient, gegevens or {"naam": "Test"}, ring=ring)
        row = conn.execute(
            "SELECT notificatie_id FROM nmc.intake_notificatie_v3(%s, %s, %s, %s::nmc.regie, %s, "
            "1::smallint, %s, 0::smallint, %s, %s, %s, %s, %s, NULL, %s, %s, NULL)",
            [
                notificatie_id,
                dv_id,
                berichttype,
                regie,
                secrets.token_bytes(32),
                secrets.token_bytes(32),
                sealed.recipient,
                sealed.berichtgegevens,
                sealed.wrapped_key,
                sealed.kek_id,
                geldig_tot,
                secrets.token_hex(16),
                dienst,
            ],
        ).fetchone()
        return row[0]

    return accept


@pytest.fixture
def worker_config(sim: Sims, db_url: str, tmp_path: Path) -> WorkerConfig:
    return WorkerConfig(
        database_url=with_overrides(db_url, user="nmc_worker"),
        notifynl_url=sim.notifynl_url,
        notifynl_api_key=API_KEY,
        profielservice_url=sim.profiel_url,
        ldv_url=sim.ldv_url,
        ldv_file=tmp_path / "ldv.jsonl",
        http_timeout=2.0,
        batch=20,
        concurrency=10,
        poll_interval=0.02,
        pool_size=4,
    )


@pytest.fixture
async def worker(worker_config: WorkerConfig, ring: KekRing) -> AsyncIterator[Worker]:
    async with Worker.started(
        worker_config, ring=ring, pseudonym_key=secrets.token_bytes(32)
    ) as started:
        yield started
