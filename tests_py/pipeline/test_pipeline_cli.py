"""`nmc worker` and `nmc sim` as the operator runs them: real processes, real signals."""

import json
import os
import signal
import subprocess
import sys
import time

from pipelinetest import API_KEY, sim_get, status_of, wait_for

from nmc.crypto.peppers import new_peppers


def nmc_process(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "nmc", *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_worker_process_sends_and_exits_0_on_sigterm(
    sim, callbacks, worker_config, intake, conn, ring_document, tmp_path
):
    ids = [intake(f"bezorgd+proces{n}@voorbeeld.nl") for n in range(5)]
    kek_file = tmp_path / "kek.json"
    kek_file.write_text(json.dumps(ring_document))
    ldv_file = tmp_path / "ldv.jsonl"
    process = nmc_process(
        "worker",
        "--kinds",
        "verzenden,receipt",
        "--poll-interval",
        "0.05",
        env={
            "NMC_WORKER_DATABASE_URL": worker_config.database_url,
            "NMC_NOTIFYNL_URL": sim.notifynl_url,
            "NMC_NOTIFYNL_API_KEY": API_KEY,
            "NMC_PROFIELSERVICE_URL": sim.profiel_url,
            "NMC_LDV_FILE": str(ldv_file),
            "NMC_KEK_FILE": str(kek_file),
            "NMC_PEPPERS": json.dumps(new_peppers()),
        },
    )
    try:
        wait_for(
            lambda: all(status_of(conn, i)[0] == "bezorgd" for i in ids),
            timeout=20,
            what="the worker process to send",
        )
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    events = [json.loads(line) for line in stderr.splitlines()]
    assert events[0]["event"] == "worker-start"
    assert events[-1]["event"] == "worker-stop"
    assert "voorbeeld.nl" not in stderr
    records = [json.loads(line) for line in ldv_file.read_text().splitlines()]
    assert len(records) == 5 and "voorbeeld.nl" not in ldv_file.read_text()
    assert sim_get(sim.notifynl_url, "/_sim/sent")["count"] == 5


def test_sim_process_announces_its_url_and_stops_on_sigterm():
    process = nmc_process("sim", "ldv", "--port", "0", env={})
    try:
        line = process.stdout.readline()
        assert line.startswith("nmc sim ldv: http://127.0.0.1:")
        url = line.split(": ", 1)[1].strip()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                assert sim_get(url, "/ldv/v1/records") == []
                break
            except OSError:
                time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=10)
    assert process.returncode == 0
