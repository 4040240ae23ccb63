"""What the deployment files are checked against: the code's own CLI, settings and routes.

Used by test_compose_consistency.py and test_k8s_manifests.py. Everything here asks the real
code: the argparse parser `nmc` runs with, the NMC_* names the package reads, the routes of
the API app and the simulators, and the worker's operations listener over a real socket.
"""

import asyncio
import contextlib
import io
import os
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

import httpx
import psycopg
from starlette.routing import Match

from nmc.admin.onboarding import SECRET_FILES
from nmc.api.app import create_app
from nmc.cli import _parser

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PACKAGE = PROJECT_ROOT / "pyshell" / "nmc"
SECRETS_MOUNT = "/run/secrets/nmc/"
# A quoted literal: how every setting is read (env.get("NMC_…"), os.environ["NMC_…"]).
_ENV_LITERAL = re.compile(r"""["'](NMC_[A-Z0-9_]+)["']""")
# Settings the code documents by prefix rather than by literal: none today; a name added
# here must be explained.
_ENV_NAMES_NOT_LITERAL: frozenset[str] = frozenset()


@cache
def env_names_read_by_the_code() -> frozenset[str]:
    names: set[str] = set(_ENV_NAMES_NOT_LITERAL)
    for source in PACKAGE.rglob("*.py"):
        names.update(_ENV_LITERAL.findall(source.read_text(encoding="utf-8")))
    return frozenset(names)


def secret_files_written_by_keys_init() -> frozenset[str]:
    """The files `nmc admin keys init --dir DIR` writes (the dev secrets)."""
    return frozenset(SECRET_FILES)


def parse_nmc(args: list[str]):
    """The namespace `nmc ARGS` gets, or AssertionError with argparse's complaint."""
    parser = _parser()
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            return parser.parse_args(args)
    except SystemExit:
        raise AssertionError(
            f"`nmc {' '.join(args)}` is refused: {errors.getvalue().strip()}"
        ) from None


def command_name(args: list[str]) -> str:
    """`api`, `worker`, `migrate`, `sim notifynl`, `dev pgtap`, … (the subcommand path)."""
    words = []
    for word in args:
        if word.startswith("-"):
            break
        words.append(word)
        if words[0] not in ("sim", "dev", "admin", "db") or len(words) == 2:
            break
    return " ".join(words)


def option(args: list[str], name: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` in an argument list."""
    for index, word in enumerate(args):
        if word == name and index + 1 < len(args):
            return args[index + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


# --------------------------------------------------------------------------------------------
# Paths the processes serve


@cache
def _api_app():
    return create_app()


def _starlette_serves(app, path: str, method: str | None) -> bool:
    """A route takes the path (with this method; any method when None)."""
    scope = {"type": "http", "path": path, "root_path": "", "method": method or "GET"}
    wanted = (Match.FULL,) if method else (Match.FULL, Match.PARTIAL)
    return any(route.matches(scope)[0] in wanted for route in app.routes)


def _sim_app(args: list[str], environ: Mapping[str, str]):
    from nmc_dev.sim import cli as sim_cli

    namespace = parse_nmc(args)
    saved = dict(os.environ)
    os.environ.update(environ)
    try:
        return sim_cli._app(namespace)
    finally:
        os.environ.clear()
        os.environ.update(saved)


class _NoDatabase:
    """Stands in for the worker's database: /health/ready then answers 503, which still shows
    that the listener serves the path (an unknown path is a 404)."""

    async def fetch_value(self, *args, **kwargs):
        raise psycopg.OperationalError("no database in this check")

    async def fetch_all(self, *args, **kwargs):
        raise psycopg.OperationalError("no database in this check")


def worker_answers(paths: list[str]) -> dict[str, int]:
    """The status the worker's real operations listener gives each path, over a socket."""
    from nmc.worker.metrics import WorkerMetrics
    from nmc.worker.ops_http import OpsListener

    async def ask() -> dict[str, int]:
        listener = await OpsListener(_NoDatabase(), WorkerMetrics(), 0.0).start("127.0.0.1", 0)
        try:
            host, port = listener.address
            async with httpx.AsyncClient(timeout=10) as http:
                return {p: (await http.get(f"http://{host}:{port}{p}")).status_code for p in paths}
        finally:
            await listener.close()

    return asyncio.run(ask())


def serves(
    args: list[str],
    path: str,
    environ: Mapping[str, str] | None = None,
    method: str | None = "GET",
) -> bool:
    """Whether the process `nmc ARGS` has a route for `path` (and `method`, unless None)."""
    name = command_name(args)
    if name == "api":
        return _starlette_serves(_api_app(), path, method)
    if name.startswith("sim "):
        return _starlette_serves(_sim_app(args, environ or {}), path, method)
    if name == "worker":
        return worker_answers([path])[path] != 404
    if name == "console":
        from nmc.console.app import create_app as console_app

        return _starlette_serves(console_app(), path, method)
    raise AssertionError(f"`nmc {name}` serves no HTTP")


def worker_listens(args: list[str], environ: Mapping[str, str]) -> str | None:
    """The port of a worker's operations listener, from --metrics-port or the environment."""
    return option(args, "--metrics-port") or environ.get("NMC_WORKER_METRICS_PORT")


def listen_port(args: list[str], environ: Mapping[str, str]) -> str | None:
    """The port `nmc ARGS` serves HTTP on, as configured."""
    if command_name(args) == "worker":
        return worker_listens(args, environ)
    return option(args, "--port")


def split_url(url: str) -> tuple[str, str | None, str]:
    """(host, port, path) of an http URL."""
    parsed = httpx.URL(url)
    return parsed.host, str(parsed.port) if parsed.port else None, parsed.path


def urls_in(text: str) -> Iterator[str]:
    yield from re.findall(r"https?://[^\s'\"\])]+", text)
