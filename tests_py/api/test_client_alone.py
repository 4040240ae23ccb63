"""The DV client installs and works on its own: a fresh virtualenv with only pyshell/client
(nmc-client and what it declares: httpx, PyJWT[crypto]) and none of the server's packages,
speaking to a real `nmc api` process as a DV's program would.

The virtualenv is made once per run (pip fetches httpx and PyJWT like a DV's install does).
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from apitest import OIN_A, decentraal, token

CLIENT_PROJECT = Path(__file__).resolve().parents[2] / "pyshell" / "client"
SERVER_PACKAGES = ("nmc", "nmc_dev", "psycopg", "psycopg_pool", "starlette", "uvicorn")


@pytest.fixture(scope="module")
def client_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh virtualenv that holds the client and nothing of the server."""
    top = tmp_path_factory.mktemp("client-alone")
    source = top / "client"  # a copy: the build leaves nothing in the checkout
    shutil.copytree(CLIENT_PROJECT, source, ignore=shutil.ignore_patterns("*.egg-info"))
    venv = top / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # Without PYTHONPATH and the suite's own venv: only what this venv holds is importable.
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         str(source)],
        env=_alone_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if install.returncode != 0 and "Could not find a version" in install.stderr + install.stdout:
        pytest.skip("no package index reachable for httpx/PyJWT")
    assert install.returncode == 0, install.stdout + install.stderr
    return python


def _alone_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(python: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-c", textwrap.dedent(script), *args],
        env=_alone_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_client_installs_without_the_server(client_python: Path):
    result = _run(
        client_python,
        """
        import importlib.util, json, sys
        import nmc_client
        missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]
        print(json.dumps({"client": nmc_client.__file__, "missing": missing}))
        """,
        *SERVER_PACKAGES,
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["missing"] == list(SERVER_PACKAGES)  # none of the server's packages is there
    assert str(client_python.parent.parent) in found["client"]  # installed, not the checkout


def test_the_client_alone_submits_and_reads_the_feed_of_a_real_api(
    client_python: Path, api_process
):
    base = f"http://127.0.0.1:{api_process.port}/api/nmc/v1"
    result = _run(
        client_python,
        """
        import json, sys
        from nmc_client import NmcClient
        base, bearer, notificatie = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
        with NmcClient(base, token_provider=lambda: bearer) as nmc:
            accepted = nmc.submit("decentraal", notificatie)
            again = nmc.submit("decentraal", notificatie)  # idempotent on dvRef and payload
            status = nmc.status(accepted.notificatie_id)
            page = nmc.read_changes()
            print(json.dumps({
                "id": accepted.notificatie_id, "again": again.notificatie_id,
                "status": status.status, "versie": status.versie,
                "events": [e["subject"] for e in page.events], "cursor": bool(page.cursor),
                "acknowledged": nmc.acknowledge(page.cursor),
            }))
        """,
        base,
        token(OIN_A),
        json.dumps(decentraal(dvRef="client-alone-1")),
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["again"] == seen["id"]
    assert seen["status"] == "aangenomen" and seen["versie"] == 1
    assert seen["events"] == [seen["id"]] and seen["cursor"] and seen["acknowledged"]
