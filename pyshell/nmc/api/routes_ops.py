"""Operations endpoints and the published webhook keys. No authentication.

GET /metrics         Prometheus text: one call of nmc.metrics() (on the replica when one is
                     set, nmc.api.replica) plus in-process HTTP latency
GET /health/live     the process answers (no database call)
GET /health/ready    the database answers as nmc_api and holds this version's functions
GET /.well-known/jwks.json, GET /api/nmc/v1/.well-known/jwks.json
                     the public keys of the webhook signing ring (never a private member)

`/metrics` and `/health/*` are for the platform (scraper, kubelet), not for DVs: expose only
/api/nmc/v1 and /.well-known through the gateway.

Readiness: nmc_api cannot read the migration table (it owns nothing and reads no table), so
"migrated" is checked the way the API experiences it: nmc.now() answers for this role (schema,
grants and clock are there) and every function this API version calls exists
(queries.sql `api_ready`). A database from before that migration is not ready.
"""

import asyncio
import logging

import psycopg
from psycopg_pool import PoolTimeout
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nmc import sql_calls
from nmc.api import replica
from nmc.api.metrics import PROMETHEUS_MEDIA_TYPE, database_lines, render, streams_lines
from nmc.api.openapi import BASE_PATH
from nmc.api.services import services_of

log = logging.getLogger(__name__)

READY_TIMEOUT_SECONDS = 3.0
JWKS_PATH = "/.well-known/jwks.json"


async def metrics(request: Request) -> Response:
    services = services_of(request)
    rows = None
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS * 2):
            rows = await replica.metrics_rows(services)
    except (psycopg.Error, PoolTimeout, TimeoutError) as error:
        log.warning("metrics: database call failed (%s)", type(error).__name__)
    body = render(
        database_lines(rows, services.settings.geen_contactgegevens_drempel),
        request.app.http_metrics.lines(),
        streams_lines(services.streams.open),
    )
    return Response(body, media_type=PROMETHEUS_MEDIA_TYPE)


async def live(request: Request) -> Response:
    return JSONResponse({"status": "up"})


async def ready(request: Request) -> Response:
    services = services_of(request)
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS):
            row = await sql_calls.fetch_one(services.pool, "api_ready", {})
    except (psycopg.Error, PoolTimeout, TimeoutError) as error:
        log.warning("readiness: database call failed (%s)", type(error).__name__)
        return JSONResponse({"status": "niet-gereed", "reden": "database"}, status_code=503)
    if not row or row[0] is not True:
        return JSONResponse({"status": "niet-gereed", "reden": "migratie"}, status_code=503)
    return JSONResponse({"status": "gereed"})


async def jwks(request: Request) -> Response:
    return Response(services_of(request).jwks_json, media_type="application/json")


def routes() -> list[Route]:
    return [
        Route("/metrics", metrics, methods=["GET"]),
        Route("/health/live", live, methods=["GET"]),
        Route("/health/ready", ready, methods=["GET"]),
        Route(JWKS_PATH, jwks, methods=["GET"]),
        Route(BASE_PATH + JWKS_PATH, jwks, methods=["GET"]),
    ]
