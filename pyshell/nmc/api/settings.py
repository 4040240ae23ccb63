"""Settings of `nmc api`, all from the environment (prefix NMC_).

NMC_API_DATABASE_URL           the API's connection (role nmc_api); default: the admin URL
                               (`nmc db url`) with user nmc_api
NMC_API_REPLICA_DATABASE_URL   a read-only connection (a hot standby; CloudNativePG's `-ro`
                               service) for the feed pages, SSE polls, snapshot pages and
                               /metrics; the call count and the acknowledgement stay on the
                               primary (nmc.api.replica). Unset: everything on the primary
NMC_API_REPLICA_MAX_LAG_SECONDS  a standby further behind than this (its replay lag) is not
                               read: the page or /metrics comes from the primary (default
                               10; 0: only a standby that has replayed all it received)
NMC_API_POOL_MIN / _MAX        connection pool size (default 2 / 16; the replica's pool too)
NMC_API_PREPARE_THRESHOLD      psycopg's prepare_threshold (default 5); `off` behind a
                               PgBouncer in transaction mode that does not keep prepared
                               statements
NMC_API_MAX_BODY_BYTES         body limit of a single intake and the callback (64 KiB)
NMC_API_MAX_BATCH_BODY_BYTES   body limit of a `_batch` intake (16 MiB)
NMC_API_MAX_HEADER_BYTES       size limit of a request head: request line and header fields
                               together (64 KiB); beyond: 431, before the app sees it
                               (nmc.api.http_limits)
NMC_API_MAX_HEADERS            most header fields in a request (100); beyond: 431
NMC_API_PROBLEM_BASE_URI       base of the problem `type` URIs
NMC_API_SERVER_URL             the `servers` URL in the OpenAPI document
NMC_API_DV_CACHE_SECONDS       how long an OIN -> DV lookup is reused (30)
NMC_API_ACCESS_LOG             "0" turns the access log (method, route, status, time) off
NMC_NOTIFYNL_CALLBACK_TOKEN    the bearer token NotifyNL sends on its callbacks; unset: the
                               callback answers 503 (NotifyNL then retries)

The feed, the webhook keys and operations:
NMC_OIN                        the NMC's own OIN, for the event source (see nmc.feed.cloudevents)
NMC_API_EVENT_SOURCE           the CloudEvents `source` (default urn:nld:oin:<NMC_OIN>:systeem:nmc)
NMC_API_SSE_POLL_SECONDS       how often an open SSE stream looks for new events (1)
NMC_API_SSE_KEEPALIVE_SECONDS  a `: keep-alive` comment after this much silence (15)
NMC_API_SSE_MAX_SECONDS        a stream is closed after this long; the client resumes with
                               Last-Event-ID (900)
NMC_API_SSE_MAX_STREAMS        open streams per API process; beyond: 503 (100)
NMC_API_SSE_MAX_STREAMS_PER_DV open streams of one DV per API process; beyond: 429 (5)
NMC_GEEN_CONTACTGEGEVENS_DREMPEL  share of geen-contactgegevens above which a DV is flagged
                               (metric and `nmc admin report geen-contactgegevens`; 0.3)
NMC_LDV_URL / NMC_LDV_FILE     the LDV sink, as for the worker (default $NMC_HOME/ldv.jsonl)
NMC_WEBHOOK_PUBLIC_KEYS_FILE   the webhook ring's public JWKS, published; the API holds no webhook
                               private key (NMC_WEBHOOK_SIGNING_KEYS_FILE: the old way, warned)
NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE  the delivery-proof signing ring: the API signs proofs
                               and publishes its keys, retired ones too
                               (nmc.signing.afleverbewijs_signing)

Also read at start-up, by their own modules: NMC_KEK_FILE (nmc.crypto.kek_ring),
NMC_PEPPERS(_FILE) (nmc.crypto.peppers), NMC_OAUTH_* (auth), NMC_WEBHOOK_PUBLIC_KEYS_FILE
(nmc.signing.webhook_signing).
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nmc import settings_env
from nmc.api.openapi import DEFAULT_SERVER_URL
from nmc.api.problems import DEFAULT_BASE_URI
from nmc.config import (
    DEFAULT_GEEN_CONTACTGEGEVENS_DREMPEL,
    Settings,
    geen_contactgegevens_drempel,
)
from nmc.database import connection_url
from nmc.errors import NmcError
from nmc.feed.cloudevents import event_source

DEFAULT_MAX_BODY_BYTES = 64 * 1024
# Seconds: a DV polling the feed sees a change this much later at worst; beyond, the
# standby is in trouble and the primary answers.
DEFAULT_REPLICA_MAX_LAG_SECONDS = 10.0
# 1000 items with their berichtgegevens (16 KiB each at most) fit; larger batches are split.
DEFAULT_MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024
# A bearer token of the largest size the verifier reads (16 KiB, nmc.auth.bearer) fits four
# times over; nginx allows 32 KiB, Apache 100 fields.
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
DEFAULT_MAX_HEADERS = 100


@dataclass(frozen=True)
class HeadLimits:
    """Bounds of a request head, applied by the HTTP protocol (nmc.api.http_limits)."""

    max_head_bytes: int = DEFAULT_MAX_HEADER_BYTES
    max_headers: int = DEFAULT_MAX_HEADERS

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "HeadLimits":
        return cls(
            max_head_bytes=settings_env.whole_number(
                env, "NMC_API_MAX_HEADER_BYTES", DEFAULT_MAX_HEADER_BYTES, minimum=1024
            ),
            max_headers=settings_env.whole_number(
                env, "NMC_API_MAX_HEADERS", DEFAULT_MAX_HEADERS, minimum=10
            ),
        )


@dataclass(frozen=True)
class SseSettings:
    """Bounds of the SSE stream of the feed (see nmc.api.sse)."""

    poll_seconds: float = 1.0
    keepalive_seconds: float = 15.0
    max_seconds: float = 900.0
    max_streams: int = 100
    max_streams_per_dv: int = 5

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "SseSettings":
        return cls(
            poll_seconds=_sse_seconds(env, "NMC_API_SSE_POLL_SECONDS", 1.0),
            keepalive_seconds=_sse_seconds(env, "NMC_API_SSE_KEEPALIVE_SECONDS", 15.0),
            max_seconds=_sse_seconds(env, "NMC_API_SSE_MAX_SECONDS", 900.0),
            max_streams=settings_env.whole_number(env, "NMC_API_SSE_MAX_STREAMS", 100),
            max_streams_per_dv=settings_env.whole_number(env, "NMC_API_SSE_MAX_STREAMS_PER_DV", 5),
        )


@dataclass(frozen=True)
class ApiSettings:
    database_url: str = field(repr=False)
    replica_database_url: str | None = field(default=None, repr=False)
    replica_max_lag_seconds: float = DEFAULT_REPLICA_MAX_LAG_SECONDS
    pool_min: int = 2
    pool_max: int = 16
    prepare_threshold: int | None = 5
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_batch_body_bytes: int = DEFAULT_MAX_BATCH_BODY_BYTES
    problem_base_uri: str = DEFAULT_BASE_URI
    server_url: str = DEFAULT_SERVER_URL
    dv_cache_seconds: float = 30.0
    callback_token: str | None = field(default=None, repr=False)
    event_source: str = field(default_factory=lambda: event_source({}))
    sse: SseSettings = field(default_factory=SseSettings)
    geen_contactgegevens_drempel: float = DEFAULT_GEEN_CONTACTGEGEVENS_DREMPEL
    ldv_url: str | None = None
    ldv_file: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "ApiSettings":
        env = os.environ if environ is None else environ
        database_url = settings_env.text(env, "NMC_API_DATABASE_URL") or connection_url(
            Settings.from_env(env), "api"
        )
        pool_min = settings_env.whole_number(env, "NMC_API_POOL_MIN", 2)
        pool_max = settings_env.whole_number(env, "NMC_API_POOL_MAX", 16, minimum=1)
        if pool_max < pool_min:
            raise NmcError("NMC_API_POOL_MAX must not be smaller than NMC_API_POOL_MIN")
        return cls(
            database_url=database_url,
            replica_database_url=settings_env.text(env, "NMC_API_REPLICA_DATABASE_URL"),
            replica_max_lag_seconds=settings_env.seconds(
                env,
                "NMC_API_REPLICA_MAX_LAG_SECONDS",
                DEFAULT_REPLICA_MAX_LAG_SECONDS,
                zero_allowed=True,
                maximum=86_400.0,
            ),
            pool_min=pool_min,
            pool_max=pool_max,
            prepare_threshold=settings_env.whole_number(
                env, "NMC_API_PREPARE_THRESHOLD", 5, off=True
            ),
            max_body_bytes=settings_env.whole_number(
                env, "NMC_API_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, minimum=1
            ),
            max_batch_body_bytes=settings_env.whole_number(
                env, "NMC_API_MAX_BATCH_BODY_BYTES", DEFAULT_MAX_BATCH_BODY_BYTES, minimum=1
            ),
            problem_base_uri=settings_env.text(env, "NMC_API_PROBLEM_BASE_URI", DEFAULT_BASE_URI),
            server_url=settings_env.text(env, "NMC_API_SERVER_URL", DEFAULT_SERVER_URL),
            dv_cache_seconds=float(settings_env.whole_number(env, "NMC_API_DV_CACHE_SECONDS", 30)),
            callback_token=settings_env.text(env, "NMC_NOTIFYNL_CALLBACK_TOKEN"),
            event_source=event_source(env),
            sse=SseSettings.from_env(env),
            geen_contactgegevens_drempel=geen_contactgegevens_drempel(env),
            ldv_url=settings_env.text(env, "NMC_LDV_URL"),
            ldv_file=settings_env.path(env, "NMC_LDV_FILE")
            or Settings.from_env(env).home / "ldv.jsonl",
        )


def _sse_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """An SSE interval: above 0, at most a day."""
    return settings_env.seconds(env, name, default, maximum=86_400.0)
