"""NotifyNL's two 429s told apart, end to end against the simulator and a real database.

A TooManyRequestsError closes the service's UTC day in SQL at once: no worker calls NotifyNL
again for that service until 00:00 UTC, the tasks wait (they are not claimed and deferred one
by one), nothing is counted against the notifications, and after midnight they go out. A
RateLimitError defers the one task like any 429 and slows the service's pace.
"""

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from pipelinetest import advance, configure_notifynl, set_faults, status_of
from test_pipeline_worker import sent, verzendtaak

from nmc.adapters.http import LimitReached
from nmc.adapters.notifynl import limit_reached


def send_calls(sim) -> list[int]:
    """The status of every send call the simulator answered, in order."""
    requests = httpx.get(f"{sim.notifynl_url}/_sim/requests").json()
    return [r["status"] for r in requests if r["path"] == "/v2/notifications/email"]


def to_midnight_utc(conn, sim) -> None:
    """Both clocks to the next 00:00 UTC of the NMC clock (plus a second)."""
    nu = conn.execute("SELECT nmc.now()").fetchone()[0]
    midnight = datetime.combine(nu.astimezone(UTC).date(), datetime.min.time(), UTC)
    wait = midnight + timedelta(days=1, seconds=1) - nu
    advance(conn, f"{wait.total_seconds()} seconds")
    align_sim_day(conn, sim)


def align_sim_day(conn, sim) -> None:
    """The simulator's clock to the NMC's, so both count the same UTC day."""
    nu = conn.execute("SELECT nmc.now()").fetchone()[0]
    sim_now = datetime.fromisoformat(
        httpx.post(f"{sim.notifynl_url}/_sim/clock", json={}).json()["now"]
    )
    httpx.post(
        f"{sim.notifynl_url}/_sim/clock", json={"advance_s": (nu - sim_now).total_seconds()}
    ).raise_for_status()


@pytest.mark.parametrize(
    ("error", "limiet", "fout"),
    [
        ("TooManyRequestsError", "dag", "notifynl-dag-limiet"),
        ("RateLimitError", "tempo", "notifynl-tempo-limiet"),
        ("Iets", "tempo", "notifynl-tempo-limiet"),
    ],
)
def test_the_two_429s_are_told_apart_by_their_error_type(error, limiet, fout):
    response = httpx.Response(
        429, json={"status_code": 429, "errors": [{"error": error, "message": "x"}]}
    )
    reached = limit_reached(response, "standaard")
    assert isinstance(reached, LimitReached)
    assert (reached.limiet, reached.fout, reached.service) == (limiet, fout, "standaard")
    assert limit_reached(httpx.Response(429, text="geen json"), None).limiet == "tempo"


def to_noon_utc(conn, sim) -> None:
    """Both clocks to 12:00 UTC of the NMC clock's next day: the test's hours stay in one UTC
    day whatever the time it runs at."""
    nu = conn.execute("SELECT nmc.now()").fetchone()[0]
    noon = datetime.combine(nu.astimezone(UTC).date(), datetime.min.time(), UTC)
    wait = noon + timedelta(days=1, hours=12) - nu
    advance(conn, f"{wait.total_seconds()} seconds")
    align_sim_day(conn, sim)


async def test_a_used_up_day_stops_the_service_until_midnight_utc(sim, worker, intake, conn):
    to_noon_utc(conn, sim)
    configure_notifynl(sim, day_limit=3)
    ids = [intake(f"bezorgd+dag{n}@voorbeeld.nl") for n in range(6)]
    await worker.drain(["verzenden"])
    await worker.drain(["verzenden"])

    # One claim round sends its batch at once: three accepted, the calls in flight with them
    # refused with TooManyRequestsError; after that nobody calls again.
    assert sorted(send_calls(sim)) == [201, 201, 201, 429, 429, 429]
    statuses = [status_of(conn, i)[0] for i in ids]
    assert statuses.count("verzonden") == 3
    assert statuses.count("in-verzending") + statuses.count("aangenomen") == 3
    waiting = [i for i in ids if status_of(conn, i)[0] != "verzonden"]
    for notificatie_id in waiting:
        staat, pogingen, uitstellen, _ = verzendtaak(conn, notificatie_id)
        assert (staat, pogingen, uitstellen) == ("open", 0, 0)  # nothing counted
    dag = conn.execute(
        "SELECT gebruikt, dag_op, dag_weigeringen FROM nmc.verzenddag() "
        "WHERE notify_service = 'standaard'"
    ).fetchone()
    assert dag[:2] == (6, True)  # the six tokens the round took
    assert dag[2] == 3

    # Hours later the day is still closed: the tasks are not even claimed.
    advance(conn, "2 hours")
    await worker.drain(["verzenden"])
    assert len(send_calls(sim)) == 6

    to_midnight_utc(conn, sim)
    await worker.drain(["verzenden"])
    await worker.drain(["verzenden"])
    assert [status_of(conn, i)[0] for i in ids] == ["verzonden"] * 6
    assert send_calls(sim)[6:] == [201, 201, 201]


async def test_a_rate_limit_defers_the_task_and_slows_the_pace(sim, worker, intake, conn):
    notificatie_id = intake("bezorgd+tempo@voorbeeld.nl")
    set_faults(sim, error_rate={"429": 1.0})
    await worker.drain(["verzenden"])
    staat, pogingen, uitstellen, fout = verzendtaak(conn, notificatie_id)
    assert (staat, pogingen, uitstellen, fout) == ("open", 0, 1, "notifynl-tempo-limiet")
    tempo = conn.execute(
        "SELECT vertraagd_tot > nmc.now(), tempo_weigeringen FROM nmc.verzendtempo "
        "WHERE notify_service = 'standaard' AND soort = 'verzenden'"
    ).fetchone()
    assert tempo == (True, 1)

    set_faults(sim)
    advance(conn, "15 minutes")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("verzonden", None)
    assert sent(sim)["count"] == 1
