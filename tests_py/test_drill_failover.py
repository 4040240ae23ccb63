"""`nmc drill failover` in CI size: a primary and two synchronous standbys of the test's own,
a few hundred notifications over HTTP, the primary SIGKILLed mid-stream, the most advanced
standby promoted; every check passes and nothing is left running."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from stacktest import free_port, needs_server_binaries, private_home, processes_of

pytestmark = needs_server_binaries
DRILL_TIMEOUT_S = 170  # the budget: under 3 minutes here


def test_a_ci_sized_failover_drill_loses_nothing_and_leaves_nothing_running():
    with private_home() as home:
        env = {key: value for key, value in os.environ.items() if key != "NMC_DATABASE_URL"}
        env.update(NMC_HOME=str(home), NMC_DB_PORT=str(free_port()), PYTHONUNBUFFERED="1")
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "nmc", "drill", "failover", "--count", "300", "--no-tty",
             "--phase-timeout", "90", "--seed", "11"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        try:
            output, _ = process.communicate(timeout=DRILL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            output, _ = process.communicate(timeout=60)
            pytest.fail(f"the drill took longer than {DRILL_TIMEOUT_S} s:\n{output}")
        seconds = time.monotonic() - started
        assert process.returncode == 0, output
        assert "every check passed" in output
        found = re.search(
            r"acknowledged before the kill and found after it: (\d+) of (\d+)", output
        )
        assert found and found.group(1) == found.group(2) and int(found.group(1)) > 0, output
        assert re.search(r"promoted s[12] in [\d.]+ s after the kill", output), output
        assert re.search(r"unavailability window: [\d.]+ s", output), output
        assert "0 snapshot restarts (410)" in output
        assert not re.search(r"[1-9]\d* snapshot restarts", output), output
        assert processes_of(home) == []
        print(f"drill failover --count 300 took {seconds:.0f} s")
