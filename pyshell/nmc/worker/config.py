"""The worker's settings: NMC_ environment variables, overridden by `nmc worker` options.

NMC_WORKER_DATABASE_URL   the database as role nmc_worker (default: the admin URL with user
                          nmc_worker, see `nmc db url --role worker`)
NMC_NOTIFYNL_URL          NotifyNL's base URL (default https://api.notifynl.nl)
NMC_NOTIFYNL_KEYS_FILE    JSON `{"<notify service>": "<API key>", ...}`: the NotifyNL API key
                          (`{name}-{service id}-{secret}`) of each Notify service a berichttype
                          names (`notifyService`), read once at start-up
NMC_NOTIFYNL_API_KEY      instead of the keys file, for a single-service setup: the one key,
                          used whatever service a berichttype names (not both; one is required)
NMC_PROFIELSERVICE_URL    the Profielservice's base URL (required for centraal regie)
NMC_LDV_URL               the LDV collector (HTTP POST per record); when unset, records go to
NMC_LDV_FILE              an append-only JSON-lines file (default $NMC_HOME/ldv.jsonl)
NMC_HTTP_TIMEOUT          seconds per outbound call (default 10)
NMC_WORKER_HINTS_URL      the connection on which the worker listens for the API's hint that
                          work waits (nmc.worker.werk_hints; default: NMC_WORKER_DATABASE_URL).
                          A direct one: LISTEN does not pass PgBouncer's transaction mode.
                          `off`: no hints (the worker then looks at its full pace when idle)
NMC_WORKER_PREPARE_THRESHOLD  psycopg's prepare_threshold (default 5); `off` behind a
                          PgBouncer in transaction mode that does not keep prepared statements
NMC_WORKER_METRICS_PORT   the port of the worker's /metrics and /health/* (default: off;
                          0 picks a free port); `--metrics-port` overrides it
NMC_WORKER_METRICS_HOST   the address it binds (default 127.0.0.1; 0.0.0.0 in a pod)
NMC_GEEN_CONTACTGEGEVENS_DREMPEL  as for the API: the flag in /metrics (0.3)
NMC_KEK_FILE, NMC_PEPPERS / NMC_PEPPERS_FILE   as for the API (nmc.crypto: kek_ring, peppers);
                          the peppers also key the `Nmc-Cursor` of webhook calls, so they must
                          be the API's
NMC_WEBHOOK_SIGNING_KEYS_FILE  the webhook signing ring, as for the API
                          (nmc.signing.webhook_signing);
                          unset: the worker does not run `terugkoppelen` (warned at start)
NMC_WEBHOOK_ISSUER        the `iss` of webhook tokens (default: the event source)
NMC_WEBHOOK_ORIGIN        the NMC's origin in the webhook handshake (nmc.adapters.webhook_validatie)
NMC_WEBHOOK_TOEGESTANE_NETWERKEN  non-public networks (CIDRs) a webhook or an https: beheer
                          channel may point into after all (default none: loopback, link-local
                          and private targets are refused); an http: beheer channel is sent
                          only into these networks
NMC_OIN / NMC_API_EVENT_SOURCE  the CloudEvents `source`, as for the API (nmc.feed.cloudevents)
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nmc import settings_env
from nmc.adapters.notifynl import (
    NotifyKeys,
    read_notify_keys,
    single_notify_key,
)
from nmc.adapters.webhook_validatie import ALLOWED_NETWORKS_ENV, Adresbeleid, origin_from_env
from nmc.config import DEFAULT_GEEN_CONTACTGEGEVENS_DREMPEL, Settings, geen_contactgegevens_drempel
from nmc.database import connection_url
from nmc.errors import NmcError
from nmc.feed.cloudevents import event_source
from nmc.signing.webhook_signing import issuer

KINDS = (
    "verzenden",
    "receipt",
    "reconciliëren",
    "vaststellen",
    "controle",
    "ongeldig-melden",
    "terugkoppelen",
    "wissen",
    "onderhoud",
    "beheerrapport",
)
# Every kind, maintenance too: it is planned as tasks (one per job, re-planned by its own
# run), so every worker takes its turn and no deployment needs a worker of its own for it.
DEFAULT_KINDS = KINDS
KIND_ALIASES = {"reconcilieren": "reconciliëren", "navraag": "reconciliëren"}
DEFAULT_NOTIFYNL_URL = "https://api.notifynl.nl"


@dataclass(frozen=True)
class WorkerConfig:
    database_url: str
    notifynl_url: str
    notifynl_api_key: str | None = field(repr=False)  # a single-service setup's one key
    profielservice_url: str | None
    ldv_url: str | None
    ldv_file: Path
    http_timeout: float = 10.0
    kinds: tuple[str, ...] = DEFAULT_KINDS
    batch: int = 20
    concurrency: int = 20
    poll_interval: float = 0.5
    pool_size: int | None = None
    prepare_threshold: int | None = 5
    metrics_port: int | None = None  # None: no operations listener
    metrics_host: str = "127.0.0.1"
    geen_contactgegevens_drempel: float = DEFAULT_GEEN_CONTACTGEGEVENS_DREMPEL
    event_source: str = field(default_factory=lambda: event_source({}))
    webhook_issuer: str | None = None  # None: the event source
    notifynl_keys_file: Path | None = None  # a key per Notify service (else notifynl_api_key)
    webhook_origin: str = "nmc"  # the handshake's WebHook-Request-Origin
    webhook_toegestane_netwerken: str = ""  # CIDRs a webhook may point into after all
    hints_url: str | None = None  # where to LISTEN for the API's work hints; None: no hints

    def __post_init__(self) -> None:
        if (self.notifynl_keys_file is None) == (self.notifynl_api_key is None):
            raise NmcError(
                "give the worker NMC_NOTIFYNL_KEYS_FILE (a NotifyNL key per Notify service) "
                "or NMC_NOTIFYNL_API_KEY (one service), not both"
            )
        if self.batch < 1 or self.concurrency < 1:
            raise NmcError("--batch and --concurrency must be at least 1")
        if self.poll_interval <= 0:
            raise NmcError("--poll-interval must be positive")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise NmcError("the metrics port must be between 0 and 65535")
        Adresbeleid.parse(self.webhook_toegestane_netwerken)  # NmcError when malformed

    @classmethod
    def from_env(
        cls, settings: Settings, environ: Mapping[str, str] | None = None, **overrides
    ) -> "WorkerConfig":
        env = os.environ if environ is None else environ
        database_url = settings_env.text(env, "NMC_WORKER_DATABASE_URL") or connection_url(
            settings, "worker"
        )
        hints_url = settings_env.text(env, "NMC_WORKER_HINTS_URL", database_url)
        config = cls(
            database_url=database_url,
            hints_url=None if hints_url == "off" else hints_url,
            notifynl_url=settings_env.text(env, "NMC_NOTIFYNL_URL", DEFAULT_NOTIFYNL_URL),
            notifynl_api_key=settings_env.text(env, "NMC_NOTIFYNL_API_KEY"),
            notifynl_keys_file=settings_env.path(env, "NMC_NOTIFYNL_KEYS_FILE"),
            profielservice_url=settings_env.text(env, "NMC_PROFIELSERVICE_URL"),
            ldv_url=settings_env.text(env, "NMC_LDV_URL"),
            ldv_file=settings_env.path(env, "NMC_LDV_FILE", settings.home / "ldv.jsonl"),
            http_timeout=settings_env.seconds(env, "NMC_HTTP_TIMEOUT", 10.0),
            prepare_threshold=settings_env.whole_number(
                env, "NMC_WORKER_PREPARE_THRESHOLD", 5, off=True
            ),
            metrics_port=settings_env.whole_number(
                env, "NMC_WORKER_METRICS_PORT", None, maximum=65535, off=True
            ),
            metrics_host=settings_env.text(env, "NMC_WORKER_METRICS_HOST", "127.0.0.1"),
            geen_contactgegevens_drempel=geen_contactgegevens_drempel(env),
            event_source=event_source(env),
            webhook_issuer=issuer(env),
            webhook_origin=origin_from_env(env),
            webhook_toegestane_netwerken=settings_env.text(env, ALLOWED_NETWORKS_ENV, ""),
        )
        given = {name: value for name, value in overrides.items() if value is not None}
        return cls(**{**config.__dict__, **given})

    def notify_keys(self) -> NotifyKeys:
        """The NotifyNL keys: the keys file (read now: call once, at start-up) or the one key."""
        if self.notifynl_keys_file is not None:
            return read_notify_keys(self.notifynl_keys_file)
        assert self.notifynl_api_key is not None  # noqa: S101 - __post_init__ checks
        return single_notify_key(self.notifynl_api_key)


def parse_kinds(text: str) -> tuple[str, ...]:
    """`verzenden,receipt` -> the task kinds, checked; '' or `all` -> every kind."""
    if text.strip() == "":
        return DEFAULT_KINDS
    if text.strip() == "all":
        return KINDS
    kinds = []
    for name in (part.strip() for part in text.split(",")):
        kind = KIND_ALIASES.get(name, name)
        if kind not in KINDS:
            raise NmcError(f"unknown task kind {name!r}; choose from {', '.join(KINDS)}")
        if kind not in kinds:
            kinds.append(kind)
    return tuple(kinds)
