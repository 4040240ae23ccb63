"""Helpers and constants of the send-pipeline tests (fixtures live in conftest.py)."""

import asyncio
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import psycopg

from nmc.worker.loop import Worker
from nmc_dev.sim.ldv import LdvSim
from nmc_dev.sim.notifynl import NotifySim
from nmc_dev.sim.profielservice import ProfielSim

API_KEY = f"nmc_test-{uuid.uuid4()}-{uuid.uuid4()}"
CALLBACK_TOKEN = secrets.token_urlsafe(24)
TEMPLATE_ID = "a0a0a0a0-0000-4000-8000-00000000000a"
DV_NAAM = "Gemeente Testdorp"
DV_OIN = "00000001234567890000"
DIENST = "Belastingen"


@dataclass
class Sims:
    notifynl: NotifySim
    profiel: ProfielSim
    ldv: LdvSim
    notifynl_url: str
    profiel_url: str
    ldv_url: str


def configure_notifynl(sims: Sims, **settings) -> None:
    httpx.post(f"{sims.notifynl_url}/_sim/config", json=settings).raise_for_status()


def set_faults(sims: Sims, **faults) -> None:
    httpx.post(f"{sims.notifynl_url}/_sim/faults", json=faults).raise_for_status()


def sim_get(url: str, path: str):
    response = httpx.get(f"{url}{path}")
    response.raise_for_status()
    return response.json()


def wait_for(condition: Callable[[], object], timeout: float = 10.0, what: str = "condition"):
    """Poll a background process (a simulator's callbacks) until `condition()` is truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def callbacks_settled(sims: Sims, expected: int) -> list[dict]:
    """Wait until `expected` callbacks reached a final result; returns them."""

    def settled():
        data = sim_get(sims.notifynl_url, "/_sim/callbacks")
        final = [c for c in data["callbacks"] if c["result"] != "pending"]
        return final if len(final) >= expected and data["pending_tasks"] == 0 else None

    return wait_for(settled, what=f"{expected} callbacks")


def status_of(conn: psycopg.Connection, notificatie_id: uuid.UUID) -> tuple[str, str | None]:
    return conn.execute(
        "SELECT status::text, reden::text FROM nmc.notificatie WHERE id = %s", [notificatie_id]
    ).fetchone()


def advance(conn: psycopg.Connection, duration: str) -> None:
    conn.execute("SELECT nmc.advance_clock(%s::interval)", [duration])


async def drain_until(worker: Worker, condition: Callable[[], bool], soorten=None, rounds=100):
    """Run worker rounds (while callbacks arrive in the background) until `condition()`."""
    for _ in range(rounds):
        await worker.drain(soorten)
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the pipeline did not reach the expected state")
