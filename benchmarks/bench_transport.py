"""The worker's outbound HTTP client, variant against variant, on the send drain. Not
collected by pytest; run by hand (aiohttp is in the `bench` extra: pip install -e '.[bench]'):

    .venv/bin/python benchmarks/bench_transport.py                    # 3 rounds of 5000 sends
    .venv/bin/python benchmarks/bench_transport.py --rounds 5 --count 10000
    .venv/bin/python benchmarks/bench_transport.py --variants httpx aiohttp

Each variant is the client the NotifyNL adapter (and every other adapter) calls through, as
`nmc worker` builds it (the worker's MeasuredTransport on top, the same limits and
timeouts); the drain is benchmarks/bench_send.py's (`bench_drain`: the worker's logic in
this process on uvloop, the NotifyNL simulator in its own process, a fresh database per run):

httpx            httpx.AsyncClient over httpx's own transport (httpcore, h11, anyio)
aiohttp          httpx.AsyncClient over a transport that hands each request to an
                 aiohttp.ClientSession (its C parser, its own keep-alive pool)
asyncio          httpx.AsyncClient over the worker's own transport (nmc.adapters.aio_backend)
lean             LeanAsyncClient over the worker's own transport, where one is in the product
lean-aiohttp     LeanAsyncClient over the aiohttp transport: about what the adapters would
                 cost calling aiohttp with no httpx request machinery above it
ceiling          not a client: the send path's SQL alone (bench_send.sql_send_ceiling)

`--bare`: the NotifyNL adapter alone (send_email, `--concurrency` at a time) against the
simulator, no database and no worker, the CPU of this process per call. One more variant
there, `aiohttp-direct`: the adapter over a client object that calls aiohttp.ClientSession
itself (no httpx request or response objects at all), what an adapters' http layer written
on aiohttp would cost at least. Its ceiling: the simulator's own CPU per call.

The machine is shared and noisy, so the variants run interleaved (a b c … a b c …), each
round in the same order, and the figures are medians over the rounds: sends per second, the
worker's CPU per send (this process: the event loop and the probe that polls for the end),
and both as ratios to the SQL ceiling and to the first variant measured in the same run.
"""

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell"))
sys.path.insert(0, str(ROOT / "pyshell" / "dev"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_send import bench_drain, cpu_seconds, notifynl_simulator, sql_send_ceiling  # noqa: E402

from nmc.adapters.notifynl import NotifyNL  # noqa: E402
from nmc.config import Settings  # noqa: E402
from nmc.database import connection_url  # noqa: E402
from nmc.runtime import aio  # noqa: E402
from nmc.worker import loop  # noqa: E402
from nmc_dev.embedded_db import EmbeddedCluster  # noqa: E402


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends each request with one aiohttp.ClientSession: at most
    `max_connections` connections, idle ones kept `keepalive_expiry` seconds, the response
    read whole; aiohttp's failures become httpx's error classes, as the adapters expect."""

    def __init__(self, limits: httpx.Limits) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self._limits = limits
        self._session: aiohttp.ClientSession | None = None

    def _open(self):
        aiohttp = self._aiohttp
        connector = aiohttp.TCPConnector(
            limit=self._limits.max_connections or 0,
            keepalive_timeout=self._limits.keepalive_expiry or 15.0,
        )
        return aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        aiohttp = self._aiohttp
        if self._session is None:
            self._session = self._open()
        timeouts = request.extensions.get("timeout", {})
        timeout = aiohttp.ClientTimeout(
            sock_connect=timeouts.get("connect"), sock_read=timeouts.get("read")
        )
        body = await request.aread()
        try:
            async with self._session.request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=body or None,
                timeout=timeout,
                allow_redirects=False,
            ) as answer:
                content = await answer.read()
                headers = answer.raw_headers
                status = answer.status
        except TimeoutError:
            raise httpx.ReadTimeout("timed out") from None
        except aiohttp.ClientConnectorError as error:
            raise httpx.ConnectError(str(error)) from None
        except aiohttp.ClientError as error:
            raise httpx.RemoteProtocolError(type(error).__name__) from None
        return httpx.Response(
            status, headers=headers, content=content, extensions={"http_version": b"HTTP/1.1"}
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class AiohttpAnswer:
    """What the adapters read of a response: status_code, headers, json()."""

    def __init__(self, status: int, headers, body: bytes) -> None:
        self.status_code = status
        self.headers = headers
        self._body = body

    def json(self):
        return json.loads(self._body)


class AiohttpDirect:
    """A client object with the one method the adapters call (`request`), on aiohttp alone."""

    def __init__(self, limits: httpx.Limits, timeout: float) -> None:
        import aiohttp

        self._session = AiohttpTransport(limits)._open()
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def request(self, method: str, url: str, *, headers=None, json=None, params=None):
        async with self._session.request(
            method, url, headers=headers, json=json, params=params, timeout=self._timeout
        ) as answer:
            return AiohttpAnswer(answer.status, answer.headers, await answer.read())

    async def aclose(self) -> None:
        await self._session.close()


def _own_transport():
    from nmc.adapters.aio_backend import AsyncioTransport

    return AsyncioTransport


def _lean_client():
    from nmc.adapters.aio_backend import LeanAsyncClient

    return LeanAsyncClient


# variant: (its transport from the worker's limits, its client class), built when it runs
VARIANTS: dict[str, Callable[[], tuple[Callable, type]]] = {
    "httpx": lambda: (lambda limits: httpx.AsyncHTTPTransport(limits=limits), httpx.AsyncClient),
    "aiohttp": lambda: (AiohttpTransport, httpx.AsyncClient),
    "asyncio": lambda: (lambda limits: _own_transport()(limits=limits), httpx.AsyncClient),
    "lean": lambda: (lambda limits: _own_transport()(limits=limits), _lean_client()),
    "lean-aiohttp": lambda: (AiohttpTransport, _lean_client()),
}


@contextmanager
def worker_client(variant: str):
    """`nmc worker`'s outbound client replaced by `variant`'s while the block runs."""
    transport, client = VARIANTS[variant]()
    saved = loop.outbound_transport, loop.OutboundClient
    loop.outbound_transport, loop.OutboundClient = transport, client
    try:
        yield
    finally:
        loop.outbound_transport, loop.OutboundClient = saved


def measure(admin_url: str, variant: str, count: int) -> dict:
    if variant == "ceiling":
        result = sql_send_ceiling(admin_url, count, batch=100)
        return {"sends_per_s": result["sends_per_s"]}
    with worker_client(variant):
        result = bench_drain(admin_url, count=count, ceiling=False)
    if result["sent"] != count:
        raise RuntimeError(f"{variant}: {result['sent']} of {count} sent")
    return {
        "sends_per_s": result["sends_per_s"],
        "worker_cpu_ms": result["cpu_ms_per_send"]["worker"],
        "sim_cpu_ms": result["cpu_ms_per_send"]["sim"],
        "db_cpu_ms": result["cpu_ms_per_send"]["db"],
        "load": result["load_average"],
    }


async def send_many(client, sim_url: str, api_key: str, count: int, concurrency: int) -> None:
    notify = NotifyNL(client, sim_url, api_key)
    slots = asyncio.Semaphore(concurrency)

    async def one(n: int) -> None:
        async with slots:
            await notify.send_email(
                f"bench+{n}@voorbeeld.nl",
                "a0a0a0a0-0000-4000-8000-00000000000a",
                {"naam": "Bench"},
                f"ref-{n}",
            )

    await asyncio.gather(*(one(n) for n in range(count)))


def measure_bare(variant: str, sim, api_key: str, count: int, concurrency: int) -> dict:
    sim_url, sim_pid = sim
    limits = httpx.Limits(max_connections=max(concurrency, 4))

    async def run() -> tuple[float, float, float]:
        if variant == "aiohttp-direct":
            client = AiohttpDirect(limits, 5.0)
        else:
            transport, client_class = VARIANTS[variant]()
            client = client_class(timeout=httpx.Timeout(5.0), transport=transport(limits=limits))
        try:
            await send_many(client, sim_url, api_key, 50, concurrency)  # connections, caches
            cpu, sim_cpu, started = time.process_time(), cpu_seconds(sim_pid), time.perf_counter()
            await send_many(client, sim_url, api_key, count, concurrency)
            return (
                time.process_time() - cpu,
                cpu_seconds(sim_pid) - sim_cpu,
                time.perf_counter() - started,
            )
        finally:
            await client.aclose()

    cpu, sim_cpu, elapsed = aio.run(run())
    return {
        "calls_per_s": count / elapsed,
        "client_cpu_ms": 1000 * cpu / count,
        "sim_cpu_ms": 1000 * sim_cpu / count,
    }


def bare(variants: list[str], rounds: int, count: int, concurrency: int) -> dict:
    api_key = f"bench-{uuid.uuid4()}-{uuid.uuid4()}"
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    with notifynl_simulator(api_key) as sim:
        for round_number in range(1, rounds + 1):
            for variant in variants:
                runs[variant].append(measure_bare(variant, sim, api_key, count, concurrency))
                figures = {k: round(v, 3) for k, v in runs[variant][-1].items()}
                print(f"round {round_number} {variant:14} {json.dumps(figures)}", flush=True)
    medians = {
        v: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for v, rows in runs.items()
    }
    base = medians[variants[0]]
    return {
        v: {
            "median_calls_per_s": round(m["calls_per_s"]),
            "median_client_cpu_ms_per_call": round(m["client_cpu_ms"], 3),
            "median_sim_cpu_ms_per_call (ceiling)": round(m["sim_cpu_ms"], 3),
            "client_cpu_x_sim": round(m["client_cpu_ms"] / m["sim_cpu_ms"], 2),
            f"client_cpu_vs_{variants[0]}": round(m["client_cpu_ms"] / base["client_cpu_ms"], 3),
            "rounds_client_cpu_ms": [round(r["client_cpu_ms"], 3) for r in runs[v]],
        }
        for v, m in medians.items()
    }


def summary(runs: dict[str, list[dict]]) -> dict:
    medians = {
        variant: {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        for variant, rows in runs.items()
    }
    ceiling = medians.get("ceiling", {}).get("sends_per_s")
    clients = [v for v in runs if v != "ceiling"]
    base = medians[clients[0]] if clients else {}
    out = {}
    for variant in clients:
        m = medians[variant]
        out[variant] = {
            "median_sends_per_s": round(m["sends_per_s"]),
            "median_worker_cpu_ms_per_send": round(m["worker_cpu_ms"], 3),
            "median_sim_cpu_ms_per_send": round(m["sim_cpu_ms"], 3),
            "median_db_cpu_ms_per_send": round(m["db_cpu_ms"], 3),
            "share_of_sql_ceiling": round(m["sends_per_s"] / ceiling, 3) if ceiling else None,
            f"sends_per_s_vs_{clients[0]}": round(m["sends_per_s"] / base["sends_per_s"], 3),
            f"worker_cpu_vs_{clients[0]}": round(m["worker_cpu_ms"] / base["worker_cpu_ms"], 3),
            "rounds_sends_per_s": [r["sends_per_s"] for r in runs[variant]],
            "rounds_worker_cpu_ms": [r["worker_cpu_ms"] for r in runs[variant]],
        }
    if ceiling:
        out["ceiling"] = {
            "what": "the worker's SQL calls alone (claim_verzenden + finish_verzenden_batch)",
            "median_sends_per_s": round(ceiling),
            "rounds_sends_per_s": [r["sends_per_s"] for r in runs["ceiling"]],
        }
    return out


def available() -> list[str]:
    """The variants this checkout has: `asyncio` and `lean` only while the product has its
    own transport."""
    names = ["httpx", "aiohttp"]
    try:
        _own_transport()
        names.append("asyncio")
        _lean_client()
        names += ["lean", "lean-aiohttp"]
    except ImportError:
        pass
    return [*names, "ceiling"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="*", default=None, help="default: all available")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=5000, help="sends per drain")
    parser.add_argument("--bare", action="store_true", help="the adapter alone, no database")
    parser.add_argument("--concurrency", type=int, default=200, help="--bare: calls at once")
    args = parser.parse_args()
    variants = args.variants or available()
    if args.bare:
        clients = [v for v in variants if v != "ceiling"]
        if not args.variants:
            clients.append("aiohttp-direct")
        result = bare(clients, args.rounds, args.count, args.concurrency)
        print(json.dumps(result, indent=2), flush=True)
        return
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    admin_url = connection_url(settings)
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for variant in variants:  # warm-up: imports, the simulator's first start, caches
        if variant != "ceiling":
            measure(admin_url, variant, 200)
    for round_number in range(1, args.rounds + 1):
        for variant in variants:
            started = time.perf_counter()
            runs[variant].append(measure(admin_url, variant, args.count))
            figures = json.dumps(runs[variant][-1])
            took = time.perf_counter() - started
            print(f"round {round_number} {variant:8} ({took:.0f} s): {figures}", flush=True)
    print(json.dumps(summary(runs), indent=2), flush=True)


if __name__ == "__main__":
    main()
