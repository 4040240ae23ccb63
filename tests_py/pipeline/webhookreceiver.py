"""A DV's webhook receiver for the tests: a real HTTP endpoint that checks every call the way a
careful DV would, records the batches it accepts and answers what the test tells it to.

Each call must carry `Content-Type: application/cloudevents-batch+json`, an `Nmc-Cursor` and
a bearer JWT that verifies with a key of the NMC's JWKS (fetched over HTTP from the running
API, refetched once for an unknown `kid`), with `iss` = the NMC, `aud` = this endpoint's URL,
`exp` at most 5 minutes after `iat`, and a `jti` never seen before. A call that fails a check
is answered 401/415 and listed in `refusals` (a test asserts that list is empty).

`answers` holds the status codes of the next calls (then 200). `hold()` makes the next call
wait, after it was recorded, until `release()`: a worker can be killed mid-delivery.

The NMC's validation request (OPTIONS with WebHook-Request-Origin) is answered with the DV
client library's `answer_handshake` for the origins in `origins`; `handshakes` lists the
origins asked, and `handshake = False` answers it 405, as an endpoint that knows no handshake.
"""

import asyncio
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from nmc_client.webhook import answer_handshake

HOOK_PATH = "/nmc-webhook"
CONTENT_TYPE = "application/cloudevents-batch+json"
MAX_TOKEN_SECONDS = 300
HOLD_LIMIT_S = 60.0


@dataclass(frozen=True)
class Call:
    """One accepted call: its CloudEvents, cursor, verified claims and traceparent."""

    events: list[dict[str, Any]]
    cursor: str
    claims: dict[str, Any]
    traceparent: str | None
    status: int

    @property
    def ids(self) -> list[str]:
        return [event["id"] for event in self.events]


@dataclass
class Hold:
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)


class Receiver:
    def __init__(self, jwks_url: str, issuer: str, origins: tuple[str, ...] = ("nmc",)) -> None:
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.url = ""  # the hook's URL, set once the server listens (see `serving`)
        self.calls: list[Call] = []
        self.refusals: list[str] = []
        self.answers: deque[int] = deque()
        self._jtis: set[str] = set()
        self._keys: jwt.PyJWKSet | None = None
        self._hold: Hold | None = None
        self._holds: list[Hold] = []
        self.origins = origins
        self.handshake = True
        self.handshakes: list[str | None] = []
        self.app = Starlette(
            routes=[
                Route(HOOK_PATH, self._hook, methods=["POST"]),
                Route(HOOK_PATH, self._handshake, methods=["OPTIONS"]),
            ]
        )

    def serving(self, base_url: str) -> "Receiver":
        self.url = base_url + HOOK_PATH
        return self

    def hold(self) -> Hold:
        """The next call waits (after it is recorded) until `release()`."""
        self._hold = Hold()
        self._holds.append(self._hold)
        return self._hold

    def release(self) -> None:
        for hold in self._holds:
            hold.released.set()

    def batches(self) -> list[list[str]]:
        return [call.ids for call in self.calls]

    async def _hook(self, request: Request) -> Response:
        if request.headers.get("content-type") != CONTENT_TYPE:
            return self._refuse(415, "content-type")
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer "):
            return self._refuse(401, "no bearer token")
        try:
            claims = await self._verify(authorization.removeprefix("Bearer "))
        except (jwt.PyJWTError, KeyError, httpx.HTTPError) as error:
            return self._refuse(401, f"token: {type(error).__name__}: {error}")
        if claims["exp"] - claims["iat"] > MAX_TOKEN_SECONDS:
            return self._refuse(401, "token lives longer than 5 minutes")
        if claims["jti"] in self._jtis:
            return self._refuse(401, "jti replayed")
        self._jtis.add(claims["jti"])
        cursor = request.headers.get("nmc-cursor")
        if not cursor:
            return self._refuse(400, "no Nmc-Cursor")
        events = json.loads(await request.body())
        if not isinstance(events, list) or not events:
            return self._refuse(400, "not a non-empty batch")
        status = self.answers.popleft() if self.answers else 200
        self.calls.append(Call(events, cursor, claims, request.headers.get("traceparent"), status))
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.reached.set()
            await asyncio.to_thread(hold.released.wait, HOLD_LIMIT_S)
        return Response(status_code=status)

    async def _handshake(self, request: Request) -> Response:
        self.handshakes.append(request.headers.get("webhook-request-origin"))
        if not self.handshake:
            return Response(status_code=405)
        status, headers = answer_handshake(request.headers, self.origins)
        return Response(status_code=status, headers=headers)

    async def _verify(self, token: str) -> dict[str, Any]:
        kid = jwt.get_unverified_header(token)["kid"]
        if self._keys is None or kid not in {key.key_id for key in self._keys.keys}:
            async with httpx.AsyncClient() as client:
                response = await client.get(self.jwks_url)
                response.raise_for_status()
            self._keys = jwt.PyJWKSet.from_dict(response.json())
        key = self._keys[kid]
        if key.algorithm_name not in ("ES256", "RS256"):
            raise jwt.InvalidAlgorithmError(key.algorithm_name)
        return jwt.decode(
            token,
            key.key,
            algorithms=[key.algorithm_name],
            audience=self.url,
            issuer=self.issuer,
            options={"require": ["iss", "aud", "iat", "exp", "jti"]},
        )

    def _refuse(self, status: int, reason: str) -> Response:
        self.refusals.append(reason)
        return Response(status_code=status)
