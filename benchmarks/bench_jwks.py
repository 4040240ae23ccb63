"""The DV client's JWKS cache (nmc_client.JwksCache) against PyJWT's PyJWKClient: behaviour
and cost. Not collected by pytest; run by hand:

    .venv/bin/python benchmarks/bench_jwks.py

Both fetch from one JWKS server on 127.0.0.1 (a thread of this process) that counts the
fetches and can be taken down, with short lifetimes (a cache age and a refetch interval of
`WINDOW` seconds on both sides) so that expiry can be watched in real time. Behaviour, as
fetches seen by the server and what a lookup returns:

known kid        many lookups of a published kid: one fetch
unknown kids     a flood of made-up kids within the refetch interval: no fetch beyond the first
rotation         a kid published after the first fetch: found once the interval has passed
outage           the server down after the cache aged: the keys held before, or an error

Cost, per lookup of a known kid until a key jwt.decode takes (ours: the JWK from the cache,
then parsed by jwt.PyJWK as WebhookVerifier does; PyJWKClient: its parsed PyJWK), interleaved
rounds, medians, next to the ceiling of the same run: one ES256 jwt.decode of a webhook
token with the key already parsed (what every verification pays anyway).
"""

import json
import statistics
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell" / "client"))

from nmc_client import JwksCache, JwksUnavailable  # noqa: E402

WINDOW = 0.5  # seconds: the cache age and the refetch interval of both caches here


class JwksServer:
    """A JWKS endpoint on a free loopback port: `keys` is served; `down` answers 503."""

    def __init__(self) -> None:
        self.keys: list[dict] = []
        self.fetches = 0
        self.down = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server calls it by this name
                server.fetches += 1
                status, body = (
                    (503, b"{}")
                    if server.down
                    else (200, json.dumps({"keys": server.keys}).encode())
                )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/jwks"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._http.shutdown()


def new_key() -> tuple[str, ec.EllipticCurvePrivateKey, dict]:
    kid = uuid.uuid4().hex
    private = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(private.public_key()))
    return kid, private, {**jwk, "kid": kid, "use": "sig", "alg": "ES256"}


class Ours:
    name = "JwksCache"

    def __init__(self, url: str) -> None:
        self.cache = JwksCache(
            url, httpx.Client(timeout=5.0), max_age=WINDOW, min_refetch_interval=WINDOW
        )

    def key(self, kid: str):
        jwk = self.cache.key(kid)
        return None if jwk is None else jwt.PyJWK(dict(jwk), algorithm="ES256").key


class PyJwt:
    name = "PyJWKClient"

    def __init__(self, url: str) -> None:
        self.client = jwt.PyJWKClient(url, lifespan=WINDOW, cooldown_duration=WINDOW, timeout=5.0)

    def key(self, kid: str):
        return self.client.get_signing_key(kid).key


def outcome(lookup) -> str:
    """ "key", "none" (no such kid) or the error a verifier would have to answer 503 for."""
    try:
        return "key" if lookup() is not None else "none"
    except (JwksUnavailable, jwt.PyJWKClientConnectionError) as error:
        return f"error {type(error).__name__}"
    except jwt.PyJWKClientError:  # PyJWKClient's answer for a kid it does not find
        return "none"


def behaviour(kind) -> dict:
    server = JwksServer()
    kid, _, jwk = new_key()
    server.keys = [jwk]
    source = kind(server.url)
    out: dict = {}
    try:
        results = {outcome(lambda: source.key(kid)) for _ in range(100)}
        out["known kid: 100 lookups"] = {"fetches": server.fetches, "results": sorted(results)}
        before = server.fetches
        results = {outcome(lambda: source.key(uuid.uuid4().hex)) for _ in range(100)}
        out["unknown kids: 100 made up"] = {
            "fetches": server.fetches - before,
            "results": sorted(results),
        }
        new_kid, _, new_jwk = new_key()
        server.keys = [jwk, new_jwk]
        before = server.fetches
        soon = outcome(lambda: source.key(new_kid))
        time.sleep(WINDOW * 1.2)
        later = outcome(lambda: source.key(new_kid))
        out["rotation: new kid at once, after the interval"] = {
            "fetches": server.fetches - before,
            "results": [soon, later],
        }
        server.down = True
        time.sleep(WINDOW * 1.2)
        before = server.fetches
        results = [outcome(lambda: source.key(kid)) for _ in range(10)]
        out["outage after the cache aged: 10 lookups of a known kid"] = {
            "fetches": server.fetches - before,
            "results": sorted(set(results)),
        }
    finally:
        server.close()
    return out


def cost(rounds: int = 7, lookups: int = 2000) -> dict:
    server = JwksServer()
    kid, private, jwk = new_key()
    server.keys = [jwk]
    now = int(time.time())
    token = jwt.encode(
        {
            "iss": "nmc",
            "aud": "https://dv.example/webhook",
            "iat": now,
            "exp": now + 300,
            "jti": "x",
        },
        private,
        algorithm="ES256",
        headers={"kid": kid},
    )
    public = private.public_key()
    ours = Ours(server.url)
    ours.cache.max_age = 3600.0
    theirs = jwt.PyJWKClient(server.url, lifespan=3600, cooldown_duration=30, timeout=5.0)

    def decode() -> None:
        jwt.decode(token, public, algorithms=["ES256"], audience="https://dv.example/webhook")

    variants = {
        "ceiling: jwt.decode, key parsed": decode,
        "JwksCache + jwt.PyJWK": lambda: ours.key(kid),
        "PyJWKClient.get_signing_key": lambda: theirs.get_signing_key(kid).key,
    }
    for run in variants.values():
        run()  # the first fetch, outside the timing
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            started = time.perf_counter()
            for _ in range(lookups):
                run()
            times[name].append((time.perf_counter() - started) / lookups * 1e6)
    server.close()
    ceiling = statistics.median(times["ceiling: jwt.decode, key parsed"])
    return {
        name: {
            "median_us": round(statistics.median(t), 1),
            "x_ceiling": round(statistics.median(t) / ceiling, 3),
        }
        for name, t in times.items()
    }


def main() -> None:
    result = {kind.name: behaviour(kind) for kind in (Ours, PyJwt)}
    result["cost per lookup"] = cost()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
