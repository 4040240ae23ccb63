"""What the lifespan builds once and every handler uses, and the caller's identity."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.requests import Request

from nmc.api.db import DbClock, Dienstverlener, DvRegister, Pool
from nmc.api.problems import forbidden
from nmc.api.receipt_batcher import ReceiptBatcher
from nmc.api.settings import ApiSettings
from nmc.api.sse import StreamSlots
from nmc.api.verstrekking_ldv import VerstrekkingLdv
from nmc.api.werk_melder import WerkMelder
from nmc.auth.bearer import LEEWAY_SECONDS, BearerVerifier, Principal
from nmc.auth.errors import Unauthenticated
from nmc.crypto.kek_ring import KekRing
from nmc.crypto.peppers import PURPOSE_DVREF, Peppers
from nmc.feed.feed_cursor import CursorCodec
from nmc.signing.afleverbewijs_signing import AfleverbewijsRing


class VerifiedTokens:
    """Bearer tokens verified before, reused until they expire (at most `max_age` seconds).

    A DV sends the same token for its whole lifetime (minutes), and a full verification
    (base64 checks, JWK, ECDSA/RSA signature, claims) costs more CPU than the rest of an
    intake. Only successes are kept, keyed by the exact header value; `exp` is checked on
    every hit with the verifier's leeway. `max_age` bounds how long a key withdrawn from the
    JWKS keeps working for tokens already seen.
    """

    def __init__(
        self,
        verifier: BearerVerifier,
        *,
        max_age: float = 60.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.time,
    ):
        self._verifier = verifier
        self._max_age = max_age
        self._max_entries = max_entries
        self._clock = clock
        self._known: dict[str, tuple[float, Principal]] = {}

    async def principal(self, authorization: str | None) -> Principal:
        now = self._clock()
        if authorization is not None:
            known = self._known.get(authorization)
            if known is not None:
                verified_at, principal = known
                if (
                    now - verified_at < self._max_age
                    and now < principal.expires_at + LEEWAY_SECONDS
                ):
                    return principal
                del self._known[authorization]
        principal = await self._verifier.verify_header(authorization)
        if len(self._known) >= self._max_entries:
            self._known.clear()  # crude but bounded; a busy NMC refills it within seconds
        self._known[authorization or ""] = (now, principal)
        return principal


@dataclass(frozen=True)
class Services:
    settings: ApiSettings
    pool: Pool
    verifier: BearerVerifier
    tokens: VerifiedTokens
    register: DvRegister
    clock: DbClock
    ring: KekRing = field(repr=False)
    peppers: Peppers = field(repr=False)
    openapi_json: bytes = field(repr=False)
    cursors: CursorCodec = field(repr=False)
    ldv: VerstrekkingLdv = field(repr=False)
    streams: StreamSlots = field(repr=False)
    receipts: ReceiptBatcher = field(repr=False)
    # The hint to idle workers after work was committed (nmc.api.werk_melder).
    werk: WerkMelder = field(repr=False)
    jwks_json: bytes = field(repr=False)
    # The read-only pool of NMC_API_REPLICA_DATABASE_URL (nmc.api.replica); None: the primary.
    replica: Pool | None = field(default=None, repr=False)
    # The delivery-proof signing ring (nmc.signing.afleverbewijs_signing); None: proofs answer 503.
    afleverbewijs: AfleverbewijsRing | None = field(default=None, repr=False)

    @property
    def pepper_versie(self) -> int:
        """The dvref pepper version new rows are stored with."""
        return self.peppers.for_purpose(PURPOSE_DVREF).current


def services_of(request: Request) -> Services:
    return request.app.state.nmc


def authorization_of(request: Request) -> str | None:
    """The request's one Authorization header. Sent twice it is refused (401): which of the
    two counts would be a guess, and a proxy in front may guess otherwise than the NMC."""
    values = request.headers.getlist("authorization")
    if len(values) > 1:
        raise Unauthenticated("Authorization-header mag maar een keer voorkomen")
    return values[0] if values else None


async def caller(request: Request) -> Dienstverlener:
    """The DV behind the bearer token: 401 for a bad token, 403 for an OIN not onboarded."""
    services = services_of(request)
    principal = await services.tokens.principal(authorization_of(request))
    dv = await services.register.find(principal.oin)
    if dv is None:
        raise forbidden()
    return dv
