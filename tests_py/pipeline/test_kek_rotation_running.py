"""KEK rotation while workers send: `rotate` runs through the admin code path
(nmc.admin.operations.rotate_kek, what `nmc admin kek rotate` calls) in small batches, the worker
holds both KEKs, and every notification is still sent to its own address.

The notifications are sealed under KEK A and their send tasks fall due in three waves that
the test releases by moving the clock: wave 0 is sent before the rotation, wave 1 while the
rotation is half-way (released from the rotation's progress callback at the first batch
boundary where wave 1 has keys under both KEKs, so the worker unwraps some under A and some
under B), wave 2 after the rotation (only under B). Afterwards no data key is under A.
"""

import asyncio
import dataclasses
import secrets
import threading
import time

import psycopg
from pipelinetest import sim_get

from nmc.admin import operations as admin_ops
from nmc.config import Settings
from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring
from nmc.worker.loop import Worker

PER_WAVE = 12
KEK_B = "kek-b"


def sent_count(sim) -> int:
    return sim_get(sim.notifynl_url, "/_sim/sent")["count"]


def wait_sent(sim, count: int, timeout: float = 30.0) -> None:
    """Poll the simulator (the worker sends in the background) for `count` messages."""
    deadline = time.monotonic() + timeout
    while sent_count(sim) < count:
        assert time.monotonic() < deadline, f"timed out waiting for {count} sends"
        time.sleep(0.02)


def keys_per_kek(conn: psycopg.Connection, ids: list) -> dict[str, int]:
    rows = conn.execute(
        "SELECT kek_id, count(*) FROM nmc.notificatie WHERE id = ANY(%s) GROUP BY kek_id", [ids]
    ).fetchall()
    return dict(rows)


async def test_rotation_with_a_running_worker_sends_every_notification_right(
    sim, worker_config, ring_document, intake, conn, db_url
):
    addresses = {}
    waves: list[list] = []
    for wave in range(3):
        ids = []
        for n in range(PER_WAVE):
            email = f"bezorgd+rotatie-{wave}-{n}-{secrets.token_hex(3)}@voorbeeld.nl"
            notificatie_id = intake(email)  # sealed under KEK A, the fixture's ring
            addresses[notificatie_id] = email
            ids.append(notificatie_id)
        waves.append(ids)
    # Test control: waves 1 and 2 fall due one and two hours from now.
    for wave in (1, 2):
        conn.execute(
            "UPDATE nmc.taak SET due = nmc.now() + %s * interval '1 hour'"
            " WHERE soort = 'verzenden' AND notificatie_id = ANY(%s)",
            [wave, waves[wave]],
        )
    kek_a = ring_document["active"]
    both = {
        "active": KEK_B,
        "keys": {**ring_document["keys"], KEK_B: new_kek_ring(KEK_B)["keys"][KEK_B]},
    }
    ring_ab = parse_kek_ring(both)  # the worker's ring after the roll: B active, A kept
    settings = dataclasses.replace(Settings.from_env(), database_url=db_url)
    config = dataclasses.replace(worker_config, kinds=("verzenden",), batch=4, concurrency=3)

    released = threading.Event()
    released_with: dict[str, int] = {}

    def on_batch(stored: int, total: int) -> None:
        # Runs in the rotation's thread between two batches, while the worker keeps sending.
        if released.is_set():
            return
        with psycopg.connect(db_url, autocommit=True) as control:
            split = keys_per_kek(control, waves[1])
            if len(split) < 2:
                return
            released_with.update(split)
            control.execute("SELECT nmc.advance_clock('1 hour')")
        wait_sent(sim, 2 * PER_WAVE)
        released.set()

    async with Worker.started(config, ring=ring_ab, pseudonym_key=secrets.token_bytes(32)) as w:
        loops = asyncio.create_task(w.run())
        try:
            await asyncio.to_thread(wait_sent, sim, PER_WAVE)
            rotated = await asyncio.to_thread(
                admin_ops.rotate_kek, settings, ring_ab, KEK_B, batch=4, progress=on_batch
            )
            assert released.is_set(), "wave 1 was never sent during the rotation"
            assert released_with[kek_a] > 0 and released_with[KEK_B] > 0
            assert rotated == 3 * PER_WAVE
            status = admin_ops.kek_status(settings, ring_ab)
            assert {row["kek_id"]: row["sleutels"] for row in status} == {
                kek_a: 0,
                KEK_B: 3 * PER_WAVE,
            }
            conn.execute("SELECT nmc.advance_clock('1 hour')")
            await asyncio.to_thread(wait_sent, sim, 3 * PER_WAVE)
        finally:
            w.stop()
            await asyncio.wait_for(loops, timeout=30)

    # Every notification was sent once, to its own address: the key unwrapped right.
    sent = sim_get(sim.notifynl_url, "/_sim/sent")
    assert sent["count"] == 3 * PER_WAVE
    assert set(sent["per_reference"].values()) == {1}
    notificatie_of = dict(
        conn.execute("SELECT id::text, notificatie_id FROM nmc.poging").fetchall()
    )
    assert {
        notificatie_of[message["reference"]]: message["email_address"]
        for message in sent["notifications"]
    } == addresses
    assert conn.execute(
        "SELECT count(*) FILTER (WHERE staat <> 'done' OR laatste_fout IS NOT NULL), count(*)"
        " FROM nmc.taak WHERE soort = 'verzenden'"
    ).fetchone() == (0, 3 * PER_WAVE)
    assert conn.execute(
        "SELECT count(*) FROM nmc.notificatie WHERE status = 'verzonden'"
    ).fetchone()[0] == (3 * PER_WAVE)
    # kek status: no key under A any more, so A can be retired.
    assert keys_per_kek(conn, list(addresses)) == {KEK_B: 3 * PER_WAVE}
