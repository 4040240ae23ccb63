"""A small client for DV developers: submit, status, search, cancel, the feed, the webhook.

Depends only on httpx, PyJWT[crypto] and the standard library (no other part of `nmc`), and
imports its own modules relatively, so a DV may vendor this directory under any package name.

    from nmc_client import FeedReader, FileCursorStore, NmcClient

    nmc = NmcClient("https://nmc.example/api/nmc/v1", token_provider=my_iam.token)
    accepted = nmc.submit("decentraal", {"dvRef": "zaak-1", "berichtType": "herinnering",
                                         "emailAdres": "info@voorbeeld.nl"})
    reader = FeedReader(nmc, handler=store_status, store=FileCursorStore("nmc-feed.json"))
    reader.run(stop_event)

Modules: `api` (NmcClient), `transport` (retries), `problems` (typed errors with the RFC 9457
problem), `feed` (FeedReader, the sequence rule, snapshot restart), `stores` (cursor stores),
`webhook` (JWT verification against the NMC's JWKS, the CloudEvents batch), `bewijs` (the
delivery proof's verification; `python -m nmc_client` checks a saved proof).
"""

from .api import (
    Accepted,
    BatchAccepted,
    FeedPage,
    NmcClient,
    SnapshotPage,
    Status,
)
from .bewijs import Afleverbewijs, BewijsOngeldig, StaticJwks, verify_afleverbewijs
from .feed import FeedReader, MalformedEvent, PollResult, StatusChange
from .problems import (
    Conflict,
    CursorExpired,
    Forbidden,
    InvalidInput,
    NmcClientError,
    NmcProblem,
    NmcUnavailable,
    NotFound,
    Problem,
    ServerError,
    TooManyRequests,
    Unauthenticated,
    Unprocessable,
)
from .stores import CursorStore, FileCursorStore, MemoryCursorStore
from .transport import RetryPolicy
from .webhook import (
    JwksCache,
    JwksUnavailable,
    WebhookBatch,
    WebhookRejected,
    WebhookVerifier,
    answer_handshake,
    parse_batch,
)

__all__ = [
    "Accepted",
    "Afleverbewijs",
    "BatchAccepted",
    "BewijsOngeldig",
    "Conflict",
    "CursorExpired",
    "CursorStore",
    "FeedPage",
    "FeedReader",
    "FileCursorStore",
    "Forbidden",
    "InvalidInput",
    "JwksCache",
    "JwksUnavailable",
    "MalformedEvent",
    "MemoryCursorStore",
    "NmcClient",
    "NmcClientError",
    "NmcProblem",
    "NmcUnavailable",
    "NotFound",
    "PollResult",
    "Problem",
    "RetryPolicy",
    "ServerError",
    "SnapshotPage",
    "StaticJwks",
    "Status",
    "StatusChange",
    "TooManyRequests",
    "Unauthenticated",
    "Unprocessable",
    "WebhookBatch",
    "WebhookRejected",
    "WebhookVerifier",
    "answer_handshake",
    "parse_batch",
    "verify_afleverbewijs",
]
