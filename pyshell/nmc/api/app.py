"""The DV API as a Starlette app: `create_app()` (uvicorn: `nmc.api.app:create_app --factory`).

The lifespan reads the settings, loads the KEK ring, the peppers and the webhook signing ring
once, primes the JWKS, opens the connection pool as nmc_api and the LDV sink; handlers find all
of it in `app.state.nmc`. The HTTP latency histogram lives on the app itself (the middleware
needs it before the lifespan runs).
Paths are exact: no slash redirects, so a trailing slash is a 404.
"""

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from nmc import settings_env, tracing
from nmc.adapters.ldv import FileSink, HttpSink, Sink
from nmc.api import routes_bewijs, routes_callback, routes_feed, routes_notificaties, routes_ops
from nmc.api.db import POOL_OPEN_TIMEOUT_SECONDS, DbClock, DvRegister, new_pool
from nmc.api.metrics import HttpMetrics
from nmc.api.middleware import ResponseHeadersMiddleware
from nmc.api.openapi import BASE_PATH, openapi_document
from nmc.api.problems import exception_handlers
from nmc.api.receipt_batcher import ReceiptBatcher
from nmc.api.replica import open_replica_pool
from nmc.api.services import Services, VerifiedTokens, services_of
from nmc.api.settings import ApiSettings
from nmc.api.sse import StreamSlots
from nmc.api.verstrekking_ldv import VerstrekkingLdv
from nmc.api.werk_melder import WerkMelder
from nmc.auth.bearer import AuthSettings, BearerVerifier
from nmc.auth.errors import JwksUnavailable
from nmc.crypto.kek_ring import load_kek_ring
from nmc.crypto.peppers import PURPOSE_PAYLOAD, load_peppers
from nmc.errors import NmcError
from nmc.feed.cloudevents import PLACEHOLDER_OIN
from nmc.feed.feed_cursor import CursorCodec
from nmc.signing.afleverbewijs_signing import load_afleverbewijs_ring
from nmc.signing.webhook_signing import load_public_keys, load_signing_ring
from nmc.tracing import api as tracing_api
from nmc.tracing import worker as tracing_worker

log = logging.getLogger(__name__)


class NmcApi(Starlette):
    """Starlette with the response-header middleware outside ServerErrorMiddleware."""

    log_access = True

    def __init__(self, *args, **kwargs) -> None:
        self.http_metrics = HttpMetrics()
        super().__init__(*args, **kwargs)

    def build_middleware_stack(self) -> ASGIApp:
        return tracing_api.instrumented(
            ResponseHeadersMiddleware(
                super().build_middleware_stack(),
                log_access=self.log_access,
                metrics=self.http_metrics,
            )
        )


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    settings = ApiSettings.from_env()
    ring = load_kek_ring()
    peppers = load_peppers()
    peppers.for_purpose(PURPOSE_PAYLOAD)  # the intake's payload HMAC: no start without it
    verifier = BearerVerifier(AuthSettings.from_env())
    try:
        await verifier.prime()
    except JwksUnavailable as error:
        # The IAM may come up later: the cache retries, requests get 500 until then.
        log.warning("JWKS not loaded at start-up: %s", error)
    proof_ring = load_afleverbewijs_ring()
    if proof_ring is None:
        log.warning("NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE is not set: proofs answer 503")
    jwks = published_jwks(webhook_public_keys(), proof_ring)
    if PLACEHOLDER_OIN in settings.event_source:
        log.warning("NMC_OIN is not set: events carry a placeholder source")
    pool = new_pool(settings)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(pool.close)
        # Fail the start-up (rather than the first requests) when the database is unreachable.
        await pool.open(wait=True, timeout=POOL_OPEN_TIMEOUT_SECONDS)
        replica = await open_replica_pool(settings, stack)
        ldv = VerstrekkingLdv(await ldv_sink(settings, stack))
        werk = WerkMelder(pool)
        stack.push_async_callback(werk.aclose)  # before the pool closes
        stack.push_async_callback(ldv.aclose)
        app.state.problem_base_uri = settings.problem_base_uri
        app.state.nmc = Services(
            settings=settings,
            pool=pool,
            verifier=verifier,
            tokens=VerifiedTokens(verifier),
            register=DvRegister(pool, settings.dv_cache_seconds),
            clock=DbClock(pool),
            ring=ring,
            peppers=peppers,
            openapi_json=json.dumps(
                openapi_document(settings.server_url), ensure_ascii=False
            ).encode("utf-8"),
            cursors=CursorCodec(peppers),
            ldv=ldv,
            streams=StreamSlots(settings.sse.max_streams, settings.sse.max_streams_per_dv),
            receipts=ReceiptBatcher(pool, werk=werk),
            werk=werk,
            jwks_json=json.dumps(jwks).encode("ascii"),
            replica=replica,
            afleverbewijs=proof_ring,
        )
        if settings.callback_token is None:
            log.warning("NMC_NOTIFYNL_CALLBACK_TOKEN is not set: the callback answers 503")
        yield


def webhook_public_keys() -> dict | None:
    """The webhook ring's public JWKS: from NMC_WEBHOOK_PUBLIC_KEYS_FILE, so the API holds no
    webhook private key. A release before it read the private ring: with only
    NMC_WEBHOOK_SIGNING_KEYS_FILE set the public keys are derived from it once (the private
    objects are dropped with the ring) and a warning says to switch."""
    public = load_public_keys()
    if public is not None:
        return public
    signing = load_signing_ring()
    if signing is None:
        log.warning("NMC_WEBHOOK_PUBLIC_KEYS_FILE is not set: the JWKS has no webhook key")
        return None
    log.warning(
        "the API read the webhook signing ring: set NMC_WEBHOOK_PUBLIC_KEYS_FILE "
        "(nmc admin keys webhook-public) and give the API no NMC_WEBHOOK_SIGNING_KEYS_FILE"
    )
    return signing.jwks()


def published_jwks(webhook: dict | None, proof_ring) -> dict:
    """One JWKS for every key the NMC signs with: the webhook ring's and the delivery-proof
    ring's (retired proof keys included). A kid in both would make a token ambiguous."""
    keys = list((webhook or {}).get("keys", []))
    proof_keys = proof_ring.jwks()["keys"] if proof_ring is not None else []
    shared = {k["kid"] for k in keys} & {k["kid"] for k in proof_keys}
    if shared:
        raise NmcError(f"key ids in both the webhook and the proof signing ring: {sorted(shared)}")
    return {"keys": keys + proof_keys}


async def ldv_sink(settings: ApiSettings, stack: AsyncExitStack) -> Sink:
    """The LDV collector over HTTP (NMC_LDV_URL), else the JSON-lines file (NMC_LDV_FILE)."""
    if settings.ldv_url:
        client = await stack.enter_async_context(
            httpx.AsyncClient(timeout=5.0, transport=tracing_worker.outbound(None))
        )
        return HttpSink(client, settings.ldv_url)
    assert settings.ldv_file is not None  # noqa: S101 - from_env always sets it
    return FileSink(settings.ldv_file)


async def openapi_json(request: Request) -> Response:
    return Response(services_of(request).openapi_json, media_type="application/json")


def create_app(*, log_access: bool | None = None) -> NmcApi:
    """The app; `log_access` None reads NMC_API_ACCESS_LOG (on unless "0"). Traces when
    NMC_TRACING says so (nmc.tracing)."""
    tracing.configure_from_env("nmc-api")
    app = NmcApi(
        routes=[
            *routes_feed.routes(),  # before the notificatie routes (see routes_feed.routes)
            *routes_bewijs.routes(),
            *routes_notificaties.routes(),
            Route(f"{BASE_PATH}/openapi.json", openapi_json, methods=["GET"]),
            *routes_callback.routes(),
            *routes_ops.routes(),
        ],
        exception_handlers=exception_handlers(),
        lifespan=lifespan,
    )
    app.log_access = (
        settings_env.flag(os.environ, "NMC_API_ACCESS_LOG", True)
        if log_access is None
        else log_access
    )
    app.router.redirect_slashes = False
    return app
