"""nmc_dev.stack.LocalStack, the supervisor a chaos soak builds on: kill and restart one part
(PostgreSQL too), move the clocks, and leave nothing behind."""

import signal
from datetime import timedelta

import httpx

from nmc.config import Settings
from nmc_dev.stack import LocalStack
from nmc_dev.stack.child import wait_until
from stacktest import free_port, needs_server_binaries, private_home, processes_of

pytestmark = needs_server_binaries


def api_ready(stack: LocalStack) -> bool:
    try:
        return httpx.get(f"{stack.api_url}/health/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_kill_restart_and_stop():
    with private_home() as home:
        settings = Settings.from_env({"NMC_HOME": str(home), "NMC_DB_PORT": str(free_port())})
        with LocalStack(settings, workers=1) as stack:
            parts = {"postgres", "ldv", "profielservice", "notifynl", "api", "worker-1"}
            assert set(stack.pids()) == parts
            assert len(processes_of(home)) >= len(parts)

            killed = stack.pids()["worker-1"]
            stack.kill("worker-1", signal.SIGKILL)
            assert wait_until(lambda: not stack.running("worker-1"), 10)
            stack.restart("worker-1")
            assert stack.running("worker-1") and stack.pids()["worker-1"] != killed
            assert stack.children["worker-1"].log_contains('"worker-start"')

            postmaster = stack.pids()["postgres"]
            stack.restart("postgres")  # a fast shutdown and a start, mid-run
            assert stack.pids()["postgres"] != postmaster
            assert wait_until(lambda: api_ready(stack), 30), "the API did not recover"

            before = stack.now()
            assert stack.advance_clock(timedelta(days=2)) - before >= timedelta(days=2)
            sim_clock = httpx.post(f"{stack.notifynl_url}/_sim/clock", json={}).json()
            assert sim_clock["offset_s"] == 2 * 86400

            token = stack.dv_token("00000001823288444000")
            answer = httpx.get(
                f"{stack.api_url}/api/nmc/v1/notificaties/wijzigingen",
                headers={"Authorization": f"Bearer {token}"},
            )
            assert answer.status_code == 403  # a valid token; that DV was never onboarded

        assert stack.pids() == {}
        assert processes_of(home) == []
