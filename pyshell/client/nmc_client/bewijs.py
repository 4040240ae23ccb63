"""The NMC's delivery proof (afleverbewijs): verify it, online or offline, against its JWKS.

The proof is a compact JWS (RFC 7515) signed by the NMC with ES256 or RS256, header `kid`
(the key in the NMC's JWKS, `NmcClient.jwks_url`) and `typ` `afleverbewijs+jwt`. Verifying
it means, in this order:

1. the signature, with the published key the header names, which must be a delivery-proof key
   (its JWK says `"nmc_use": "afleverbewijs"`; a webhook key, which every NMC worker holds,
   never verifies a proof). A retired key stays published for the delivery-proof retention,
   so a proof saved months ago still verifies, and says when it stopped signing
   (`nmc_ingetrokken_op`): it verifies only a proof issued (`uitgegevenOp`) before then;
2. `iss`: the NMC you expect (its event source, `urn:nld:oin:<NMC OIN>:systeem:nmc`);
3. `sub` and `notificatie.notificatieId`: the notification you asked for;
4. the event chain: sequence 1, 2, ... without a gap up to the notification's `versie`, the
   first from nothing, each `van` the `naar` before it, every (van, naar) a transition the
   NMC allows (SPEC §4), the last one the notification's status; `definitief` exactly when
   that status is terminal, and then `eindstatus` naming it at the last sequence;
5. the issue time: `iat` (when the proof has it: proofs issued before it was added lack it)
   a whole number of seconds, not in the future (BewijsTijdOngeldig);
6. the evidence of `definitief-bezorgd` (BewijsZonderGrond): a settlement (`vaststelling`,
   settled) on an attempt that is delivered, with a delivered receipt, and the settlement
   term (`termijn`) passed between that attempt's completed_at and the settlement; and no
   forced transition (`beheeracties`) into bezorgd or definitief-bezorgd, each forced one
   the event at its sequence.

    from nmc_client import NmcClient
    nmc = NmcClient("https://nmc.example/api/nmc/v1", token_provider=my_iam.token)
    bewijs = nmc.afleverbewijs(notificatie_id, issuer="urn:nld:oin:<NMC OIN>:systeem:nmc")
    open(f"{notificatie_id}.jws", "w").write(bewijs.jws)

A saved proof, checked later against a saved (or the live) JWKS, by anyone:

    python -m nmc_client proof.jws --jwks jwks.json --issuer urn:nld:oin:...:systeem:nmc

It prints what the proof states and exits 0, or the reason it is not valid and exits 1.
"""

import argparse
import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import httpx
import jwt

from .problems import NmcClientError
from .webhook import ALLOWED_ALGORITHMS, KeyRefused, published_key

TYP = "afleverbewijs+jwt"
MAX_PROOF_LENGTH = 4 * 1024 * 1024
PROOF_USE = "afleverbewijs"
RETIRED_AT_MEMBER = "nmc_ingetrokken_op"

# SPEC §4, as the NMC's trigger holds them (a test keeps this copy equal to the NMC's):
# (van, naar), van None for the intake.
ALLOWED_TRANSITIONS = frozenset({
    (None, "aangenomen"),
    ("aangenomen", "in-verzending"), ("aangenomen", "geannuleerd"), ("aangenomen", "verlopen"),
    ("in-verzending", "verzonden"), ("in-verzending", "niet-bezorgbaar"),
    ("in-verzending", "technisch-mislukt"), ("in-verzending", "verlopen"),
    ("verzonden", "verzonden"), ("verzonden", "bezorgd"), ("verzonden", "niet-bezorgbaar"),
    ("verzonden", "technisch-mislukt"), ("verzonden", "verlopen"),
    ("verzonden", "bezorgstatus-onbekend"),
    ("bezorgd", "definitief-bezorgd"), ("bezorgd", "verzonden"), ("bezorgd", "niet-bezorgbaar"),
    ("bezorgd", "verlopen"),
    ("bezorgstatus-onbekend", "bezorgd"), ("bezorgstatus-onbekend", "niet-bezorgbaar"),
})  # fmt: skip
TERMINAL_STATUSES = frozenset({
    "definitief-bezorgd", "niet-bezorgbaar", "technisch-mislukt", "bezorgstatus-onbekend",
    "verlopen", "geannuleerd",
})  # fmt: skip


class BewijsOngeldig(NmcClientError):
    """The proof does not verify; `reason` says why (never a value from the proof)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class BewijsZonderGrond(BewijsOngeldig):
    """A signed proof that states an outcome without the evidence it rests on: a
    `definitief-bezorgd` without a settlement on a delivered attempt with a delivered receipt
    and the settlement term between them, or a forced transition into a delivered status."""


class BewijsTijdOngeldig(BewijsOngeldig):
    """The proof's issue time (`iat`) is not a whole number of seconds, or in the future."""


# How far an issue time may lie ahead of this machine's clock (clock skew).
IAT_LEEWAY_SECONDS = 300
# The statuses only NotifyNL's receipt and the settlement reach; never forced.
NIET_FORCEERBAAR = frozenset({"bezorgd", "definitief-bezorgd"})
_DURATION = re.compile(
    r"\AP(?:(?P<Y>\d+)Y)?(?:(?P<M>\d+)M)?(?:(?P<W>\d+)W)?(?:(?P<D>\d+)D)?"
    r"(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?\Z"
)


class KeySource(Protocol):
    def key(self, kid: str) -> Mapping[str, Any] | None: ...


class StaticJwks:
    """A JWKS document held in memory (a saved `jwks.json`), as a key source."""

    def __init__(self, document: Mapping[str, Any]):
        keys = document.get("keys") if isinstance(document, Mapping) else None
        if not isinstance(keys, list):
            raise BewijsOngeldig("the JWKS holds no 'keys' list")
        self._keys = {
            jwk["kid"]: jwk
            for jwk in keys
            if isinstance(jwk, Mapping) and isinstance(jwk.get("kid"), str)
        }

    def key(self, kid: str) -> Mapping[str, Any] | None:
        return self._keys.get(kid)


@dataclass(frozen=True)
class Afleverbewijs:
    """A verified proof: the JWS as received (keep it: it is the evidence), the key that
    signed it and its claims."""

    jws: str
    kid: str
    claims: Mapping[str, Any]

    @property
    def notificatie_id(self) -> str:
        return self.claims["sub"]

    @property
    def definitief(self) -> bool:
        return bool(self.claims["definitief"])

    @property
    def status(self) -> str:
        return self.claims["notificatie"]["status"]

    @property
    def reden(self) -> str | None:
        return self.claims["notificatie"]["reden"]

    @property
    def versie(self) -> int:
        return int(self.claims["notificatie"]["versie"])

    @property
    def events(self) -> list[Mapping[str, Any]]:
        return list(self.claims["events"])


def verify_afleverbewijs(
    jws: str, keys: KeySource, *, issuer: str, notificatie_id: str | None = None
) -> Afleverbewijs:
    """The verified proof, or BewijsOngeldig naming the first check that failed."""
    jws = jws.strip()
    if len(jws) > MAX_PROOF_LENGTH or jws.count(".") != 2:
        raise BewijsOngeldig("not a compact JWS")
    try:
        header = jwt.get_unverified_header(jws)
    except jwt.PyJWTError:
        raise BewijsOngeldig("the JWS header cannot be read") from None
    alg, kid = header.get("alg"), header.get("kid")
    if alg not in ALLOWED_ALGORITHMS:
        raise BewijsOngeldig("algorithm not allowed")
    if "crit" in header:
        raise BewijsOngeldig("critical header extensions are not supported")
    if header.get("typ") != TYP:
        raise BewijsOngeldig(f"not a delivery proof (typ is not {TYP})")
    if not isinstance(kid, str) or not kid:
        raise BewijsOngeldig("the JWS names no key (kid)")
    try:
        jwk, key = published_key(keys, kid, alg, PROOF_USE, "a delivery-proof key")
    except KeyRefused as refused:
        raise BewijsOngeldig(refused.reason) from None
    try:
        claims = jwt.decode(
            jws,
            key,
            algorithms=[alg],
            issuer=issuer,
            leeway=IAT_LEEWAY_SECONDS,
            options={"require": ["iss", "sub"], "verify_aud": False},
        )
    except jwt.InvalidSignatureError:
        raise BewijsOngeldig("the signature does not verify") from None
    except jwt.InvalidIssuerError:
        raise BewijsOngeldig("the proof is not from this NMC (iss)") from None
    except jwt.MissingRequiredClaimError:
        raise BewijsOngeldig("the proof lacks iss or sub") from None
    except (jwt.ImmatureSignatureError, jwt.InvalidIssuedAtError):
        raise BewijsTijdOngeldig("iat is not a time in the past") from None
    except jwt.PyJWTError:
        raise BewijsOngeldig("the proof is not a valid JWS") from None
    _check_not_retired(jwk, claims)
    check_inhoud(claims, notificatie_id)
    return Afleverbewijs(jws, kid, claims)


def check_inhoud(
    claims: Mapping[str, Any], notificatie_id: str | None = None, *, now: float | None = None
) -> None:
    """The checks on a proof's content after its signature (see the module docstring);
    `now` (epoch seconds) for the issue time, this machine's clock by default."""
    notificatie = claims.get("notificatie")
    if not isinstance(notificatie, Mapping):
        raise BewijsOngeldig("the proof names no notification")
    subject = claims.get("sub")
    if notificatie.get("notificatieId") != subject:
        raise BewijsOngeldig("sub and notificatie.notificatieId differ")
    if notificatie_id is not None and str(subject).lower() != str(notificatie_id).lower():
        raise BewijsOngeldig("the proof is of another notification")
    events = claims.get("events")
    if not isinstance(events, list) or not events:
        raise BewijsOngeldig("the proof holds no event chain")
    vorige: str | None = None
    for nummer, event in enumerate(events, start=1):
        if not isinstance(event, Mapping) or event.get("sequence") != nummer:
            raise BewijsOngeldig(f"the event chain has a gap or a repeat at sequence {nummer}")
        van, naar = event.get("van"), event.get("naar")
        if van != vorige:
            raise BewijsOngeldig(f"event {nummer} does not continue from the one before")
        if (van, naar) not in ALLOWED_TRANSITIONS:
            raise BewijsOngeldig(f"event {nummer} is not an allowed transition")
        vorige = naar
    status = notificatie.get("status")
    if notificatie.get("versie") != len(events):
        raise BewijsOngeldig("the event chain does not end at the notification's version")
    if vorige != status:
        raise BewijsOngeldig("the last event is not the notification's status")
    definitief = status in TERMINAL_STATUSES
    if claims.get("definitief") is not definitief:
        raise BewijsOngeldig("definitief does not match the status")
    eindstatus = claims.get("eindstatus")
    if definitief:
        if not isinstance(eindstatus, Mapping) or (
            eindstatus.get("status"),
            eindstatus.get("reden"),
            eindstatus.get("sequence"),
        ) != (status, notificatie.get("reden"), len(events)):
            raise BewijsOngeldig("eindstatus does not name the final status at the last event")
    elif eindstatus is not None:
        raise BewijsOngeldig("a proof that is not final names a final status")
    check_uitgifte(claims, time.time() if now is None else now)
    check_beheeracties(claims, events)
    if status == "definitief-bezorgd":
        check_grond(claims)


def check_uitgifte(claims: Mapping[str, Any], now: float) -> None:
    """`iat`, when present: whole seconds, not ahead of `now` (beyond the leeway). It is the
    signing machine's clock, when the JWS was made (a retired key is judged by it);
    `uitgegevenOp` is the NMC's clock, which a test or drill may have moved, so the two are
    not compared."""
    if "iat" not in claims:
        return
    iat = claims["iat"]
    if not isinstance(iat, int) or isinstance(iat, bool):
        raise BewijsTijdOngeldig("iat is not a whole number of seconds")
    if iat > now + IAT_LEEWAY_SECONDS:
        raise BewijsTijdOngeldig("iat is not a time in the past")


def check_beheeracties(claims: Mapping[str, Any], events: Sequence[Any]) -> None:
    """Every forced transition the proof names is the event at its sequence, and none is
    into a status only the evidence reaches."""
    acties = claims.get("beheeracties", [])
    if not isinstance(acties, list):
        raise BewijsOngeldig("beheeracties is not a list")
    for actie in acties:
        if not isinstance(actie, Mapping):
            raise BewijsOngeldig("a beheeractie is not an object")
        if actie.get("naar") in NIET_FORCEERBAAR:
            raise BewijsZonderGrond("the proof names a forced transition into a delivered status")
        sequence = actie.get("sequence")
        if sequence is None:
            continue  # forced before the NMC recorded the event's sequence with it
        event = (
            events[sequence - 1]
            if isinstance(sequence, int) and 1 <= sequence <= len(events)
            else None
        )
        if event is None or (event.get("van"), event.get("naar")) != (
            actie.get("van"),
            actie.get("naar"),
        ):
            raise BewijsOngeldig("a beheeractie is not the event at its sequence")


def check_grond(claims: Mapping[str, Any]) -> None:
    """A `definitief-bezorgd` rests on a settlement of a delivered attempt that has a
    delivered receipt, the settlement term passed between its completed_at and the
    settlement."""
    vaststelling = claims.get("vaststelling")
    if not isinstance(vaststelling, Mapping):
        raise BewijsZonderGrond("definitief-bezorgd without a settlement (vaststelling)")
    vastgesteld = _tijd(vaststelling.get("vastgesteldOp"))
    afgerond = _tijd(vaststelling.get("afgerondOp"))
    termijn = _duur(vaststelling.get("termijn"))
    if vastgesteld is None or afgerond is None or termijn is None:
        raise BewijsZonderGrond("the settlement lacks its completed_at, term or settling time")
    pogingen = claims.get("pogingen")
    poging = next(
        (
            p
            for p in pogingen
            if isinstance(p, Mapping) and p.get("nummer") == vaststelling.get("poging")
        ),
        None,
    ) if isinstance(pogingen, list) else None  # fmt: skip
    if poging is None or poging.get("status") != "bezorgd":
        raise BewijsZonderGrond("the settlement does not rest on a delivered attempt")
    if _tijd(poging.get("afgerondOp")) != afgerond:
        raise BewijsZonderGrond("the settlement's completed_at is not its attempt's")
    receipts = poging.get("receipts")
    if not isinstance(receipts, list) or not any(
        isinstance(r, Mapping) and r.get("status") == "delivered" for r in receipts
    ):
        raise BewijsZonderGrond("the delivered attempt has no delivered receipt")
    if vastgesteld - afgerond < termijn:
        raise BewijsZonderGrond("settled before the settlement term had passed")


def _tijd(value: Any) -> datetime | None:
    """An RFC 3339 time with its offset, or None."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _duur(value: Any) -> timedelta | None:
    """An ISO 8601 duration as PostgreSQL writes one (P7D, PT30M, P1DT2H), or None; a year
    or month counts at its shortest (365 and 28 days), so a term is never overstated."""
    match = _DURATION.match(value) if isinstance(value, str) and value != "P" else None
    if match is None:
        return None
    part = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    return timedelta(
        days=part["Y"] * 365 + part["M"] * 28 + part["W"] * 7 + part["D"],
        hours=part["h"],
        minutes=part["m"],
        seconds=part["s"],
    )


def _check_not_retired(jwk: Mapping[str, Any], claims: Mapping[str, Any]) -> None:
    """A retired key verifies only a proof issued before it was retired."""
    if RETIRED_AT_MEMBER not in jwk:
        return
    retired_at = _moment(jwk.get(RETIRED_AT_MEMBER))
    if retired_at is None:
        raise BewijsOngeldig("the published key's retirement time cannot be read")
    issued = _moment(claims.get("uitgegevenOp"))
    if issued is None:
        raise BewijsOngeldig("the proof has no readable uitgegevenOp")
    if issued >= retired_at:
        raise BewijsOngeldig("the proof was issued after its key was retired")


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


# -------------------------------------------------------------------------------------------
# python -m nmc_client: verify a saved proof


def load_jwks(source: str, http: httpx.Client | None = None) -> StaticJwks:
    """A JWKS from a file, or fetched from an http(s) URL."""
    if source.startswith(("https://", "http://")):
        client = http or httpx.Client(timeout=10.0)
        try:
            response = client.get(source, headers={"Accept": "application/json"})
            document = response.json()
        except (httpx.HTTPError, ValueError):
            raise BewijsOngeldig("the JWKS could not be fetched") from None
        finally:
            if http is None:
                client.close()
    else:
        try:
            document = json.loads(Path(source).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise BewijsOngeldig("the JWKS file cannot be read") from None
    return StaticJwks(document)


def main(argv: Sequence[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="python -m nmc_client",
        description="Verify a saved delivery proof (afleverbewijs) of the NMC against a JWKS.",
    )
    parser.add_argument("bestand", help="the proof as saved: the compact JWS")
    parser.add_argument("--jwks", required=True, help="a JWKS file, or the NMC's JWKS URL")
    parser.add_argument("--issuer", required=True, help="the NMC's iss (its event source)")
    parser.add_argument("--notificatie", help="the notification id the proof must be about")
    args = parser.parse_args(argv)
    try:
        jws = Path(args.bestand).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        out.write("ONGELDIG: the proof file cannot be read\n")
        return 1
    try:
        bewijs = verify_afleverbewijs(
            jws, load_jwks(args.jwks), issuer=args.issuer, notificatie_id=args.notificatie
        )
    except BewijsOngeldig as error:
        out.write(f"ONGELDIG: {error.reason}\n")
        return 1
    reden = f" ({bewijs.reden})" if bewijs.reden else ""
    out.write(
        f"geldig: afleverbewijs van notificatie {bewijs.notificatie_id}, "
        f"{'definitief' if bewijs.definitief else 'nog niet definitief'}: {bewijs.status}{reden}, "
        f"versie {bewijs.versie}, {len(bewijs.events)} events; ondertekend met sleutel "
        f"{bewijs.kid}, uitgegeven {bewijs.claims.get('uitgegevenOp')}\n"
    )
    return 0
