"""`nmc demo` as a new user runs it: a real process with its own NMC_HOME and port, hence its
own embedded cluster (the shared one is not touched), its own children and clean-up."""

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nmc_dev.demo.display import TERMINAL
from nmc_dev.demo.scenario import DOMAIN
from stacktest import free_port, needs_server_binaries, private_home, processes_of

pytestmark = needs_server_binaries
RUN_TIMEOUT_S = 150
# A row of the final table: status, reden, count, expected.
STATUS_ROW = re.compile(r"^  ([a-z-]+)\s+([a-z-]+)\s+(\d+)\s+(\d+)$")


@pytest.fixture
def demo_home() -> Iterator[Path]:
    with private_home() as home:
        yield home


def start_demo(home: Path, *args: str) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key != "NMC_DATABASE_URL"}
    env.update(NMC_HOME=str(home), NMC_DB_PORT=str(free_port()), PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "nmc", "demo", "--no-tty", "--phase-timeout", "60", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a process group, as a terminal's foreground job has
        # A terminal's Ctrl-C reaches a process whose SIGINT is not ignored; a test runner
        # may have started us with it ignored, and exec would pass that on.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def read_until(process: subprocess.Popen, marker: str, lines: list[str]) -> None:
    for line in process.stdout:
        lines.append(line)
        if marker in line:
            return
    raise AssertionError(f"the demo ended before {marker!r}:\n{''.join(lines)}")


def finish(process: subprocess.Popen, lines: list[str]) -> str:
    try:
        rest, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    return "".join(lines) + rest


def final_statuses(output: str) -> dict[tuple[str, str], tuple[int, int]]:
    table = output.split("as the DV's feed shows them:", 1)[1]
    rows = {}
    for line in table.splitlines():
        match = STATUS_ROW.match(line)
        if match:
            status, reden, count, expected = match.groups()
            rows[(status, reden)] = (int(count), int(expected))
    return rows


def test_demo_reaches_every_final_status_and_leaves_nothing_running(demo_home):
    started = time.monotonic()
    process = start_demo(demo_home, "--count", "40")
    lines: list[str] = []
    read_until(process, "up in", lines)
    running = processes_of(demo_home)
    # The detector works: the demo, PostgreSQL, the three simulators and the API run now.
    assert len(running) >= 6, running
    output = finish(process, lines)

    assert process.returncode == 0, output
    rows = final_statuses(output)
    assert {status for status, _ in rows} == set(TERMINAL), output
    assert ("niet-bezorgbaar", "onbereikbaar") in rows
    assert ("niet-bezorgbaar", "geen-contactgegevens") in rows
    for (status, reden), (count, expected) in rows.items():
        assert count == expected > 0, f"{status} {reden}: {count} of {expected}"
    assert "every notification ended as its scenario predicts" in output
    # One without its template's field, refused at intake, in its predicted row.
    assert "refused at intake, 422 ontbrekende-personalisatie (berichtgegevens.zaak)" in output
    assert re.search(
        r"refused at intake \(422\)\s+decentraal\s+1\s+geweigerd \(ontbrekende-personalisatie\)"
        r"\s+yes",
        output,
    ), output
    assert re.search(r"[1-9]\d* callbacks lost \(found by reconciliation\)", output)
    assert re.search(r"feed: \d+ events read in \d+ pages, [1-9]\d* acknowledgements", output)
    assert 'curl -s -H "Authorization: Bearer $TOKEN"' in output

    assert processes_of(demo_home) == []
    # No recipient address in what the user sees or in any process's log.
    assert DOMAIN not in output
    for log in (demo_home / "demo" / "logs").glob("*.log"):
        assert DOMAIN not in log.read_text(errors="replace"), log.name
    print(f"demo --count 40 took {time.monotonic() - started:.1f} s")


def test_ctrl_c_stops_every_child(demo_home):
    process = start_demo(demo_home, "--count", "40")
    lines: list[str] = []
    read_until(process, "over HTTP in", lines)  # the main wave: the workers run too
    # The demo itself, PostgreSQL, three simulators, the API and two workers.
    assert len(processes_of(demo_home)) >= 8
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    output = finish(process, lines)

    assert process.returncode == 130, output
    assert "interrupted" in output
    assert re.search(r"stopped \d+ processes", output), output
    assert processes_of(demo_home) == []
