"""The NMC's delivery-proof signing keys: the ring, its public keys, the signed proof.

The delivery proof (GET /api/nmc/v1/notificaties/{id}/afleverbewijs) is a JWS (RFC 7515,
compact serialization) signed by the NMC with ES256 (EC P-256) or RS256 (RSA >= 2048), the
key named by `kid` in the header; anyone verifies it offline with the NMC's published JWKS
(GET /.well-known/jwks.json) and a standard JOSE library.

Why a ring of its own, not the webhook's (nmc.signing.webhook_signing): a webhook token lives five
minutes, so that ring drops an old key minutes after a rotation; a proof a DV saved must
verify for as long as the NMC keeps the notification (the delivery-proof retention, 1 year),
months after the key that signed it stopped signing. The two also have different holders:
the workers sign webhook calls, the API signs proofs.

The ring comes from the file named by NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE:

    {"active": "<kid>",
     "keys": {"<kid>": "<PEM private key>", ...},
     "retired": {"<kid>": {"publicKey": "<PEM public key>", "retiredAt": "<RFC 3339>"}, ...}}

The active key signs. Every key in `keys` and every retired key is published. A retired key
is only its public half: it can verify what it signed, never sign again. Rotation
(`nmc admin keys afleverbewijs add|activate`, docs/afleverbewijs.md):

1. `add` puts a new private key in `keys`: published, not yet signing. Roll the API, so every
   process publishes it before any signs with it.
2. `activate --kid NEW` makes it the active key and moves every other private key to
   `retired` (public half and `retiredAt`); roll the API. Retired keys whose `retiredAt` is
   longer ago than the delivery-proof retention are dropped at the next `activate`: every
   proof they signed concerns a notification the NMC no longer keeps.

Nothing here logs; no exception message carries key material.
"""

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from nmc import settings_env
from nmc.errors import NmcError
from nmc.signing.webhook_signing import (
    SigningConfigError,
    SigningKey,
    new_signing_ring,
    parse_signing_ring,
    public_jwk,
)

ENV_FILE = "NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE"
# The JWS `typ` (RFC 8725 §3.11, explicit typing): a proof is not any other JWT of the NMC.
TYP = "afleverbewijs+jwt"
MEDIA_TYPE = "application/jose"  # RFC 7515 §9.2.1: the compact serialization
# The delivery-proof retention (nmc.instellingen.bewijs_bewaartermijn), plus a day: a retired
# key is kept at least this long after it stopped signing.
DEFAULT_RETIRED_KEEP = timedelta(days=366)
_KID = re.compile(r"\A[A-Za-z0-9._:-]{1,64}\Z")
# The ring mark of a published proof key (nmc.signing.webhook_signing.KEY_USE_MEMBER): a DV's client
# verifies a proof only under a key so marked, never under a webhook key (which every worker
# holds). A retired key also says when it stopped signing: the client takes it only for a
# proof issued (`uitgegevenOp`) before then.
PROOF_USE = "afleverbewijs"
RETIRED_AT_MEMBER = "nmc_ingetrokken_op"


class AfleverbewijsSigningError(NmcError):
    """The proof signing ring is missing or malformed (a start-up failure)."""


@dataclass(frozen=True)
class RetiredKey:
    kid: str
    alg: str
    public_key: Any = field(repr=False)
    retired_at: datetime

    def public_jwk(self) -> dict[str, Any]:
        return {
            **public_jwk(self.kid, self.alg, self.public_key, PROOF_USE),
            RETIRED_AT_MEMBER: rfc3339(self.retired_at),
        }


@dataclass(frozen=True)
class AfleverbewijsRing:
    active_id: str
    keys: Mapping[str, SigningKey] = field(repr=False)
    retired: Mapping[str, RetiredKey] = field(default_factory=dict, repr=False)

    @property
    def kids(self) -> list[str]:
        """Every published key id, the active one first."""
        others = sorted(k for k in self.keys if k != self.active_id)
        return [self.active_id, *others, *sorted(self.retired)]

    def jwks(self) -> dict[str, Any]:
        """The public JWK of every key: the active one, the others in the ring, the retired."""
        keys = [self.keys[kid].public_jwk(PROOF_USE) for kid in self.kids if kid in self.keys]
        keys += [self.retired[kid].public_jwk() for kid in sorted(self.retired)]
        return {"keys": keys}

    def sign(self, payload: Mapping[str, Any]) -> str:
        """The compact JWS of `payload` (a JSON object) under the active key."""
        key = self.keys[self.active_id]
        return jwt.encode(
            dict(payload), key.private_key, algorithm=key.alg, headers={"kid": key.kid, "typ": TYP}
        )


def parse_afleverbewijs_ring(document: Any) -> AfleverbewijsRing:
    if not isinstance(document, dict):
        raise AfleverbewijsSigningError(
            "the proof signing key file must hold {'active': kid, 'keys': {...}, 'retired': {...}}"
        )
    try:
        ring = parse_signing_ring({"active": document.get("active"), "keys": document.get("keys")})
    except SigningConfigError as error:
        raise AfleverbewijsSigningError(f"proof signing keys: {error}") from None
    retired_in = document.get("retired", {})
    if not isinstance(retired_in, dict):
        raise AfleverbewijsSigningError("'retired' must be an object of kid -> public key")
    retired: dict[str, RetiredKey] = {}
    for kid, entry in retired_in.items():
        if not isinstance(kid, str) or not _KID.match(kid):
            raise AfleverbewijsSigningError("key ids must be 1-64 of A-Z a-z 0-9 . _ : -")
        if kid in ring.keys:
            raise AfleverbewijsSigningError(f"key {kid!r} is both in 'keys' and in 'retired'")
        retired[kid] = _retired_key(kid, entry)
    unknown = set(document) - {"active", "keys", "retired"}
    if unknown:
        raise AfleverbewijsSigningError(
            f"unknown members in the proof signing key file: {sorted(unknown)}"
        )
    return AfleverbewijsRing(ring.active_id, ring.keys, retired)


def load_afleverbewijs_ring(
    path: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> AfleverbewijsRing | None:
    """The ring from `path` or NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE; None when neither is given."""
    env = os.environ if environ is None else environ
    if path is None:
        path = settings_env.text(env, ENV_FILE)
        if path is None:
            return None
    return parse_afleverbewijs_ring(read_ring_document(Path(path)))


def read_ring_document(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AfleverbewijsSigningError(
            f"proof signing key file {path} cannot be read ({error.strerror})"
        ) from None
    try:
        document = json.loads(text)
    except ValueError:
        raise AfleverbewijsSigningError(
            f"proof signing key file {path} is not valid JSON"
        ) from None
    if not isinstance(document, dict):
        raise AfleverbewijsSigningError(f"proof signing key file {path} must hold an object")
    return document


def write_ring_document(path: Path, document: Mapping[str, Any]) -> None:
    """Replace the ring file in one step (a reader sees the old or the new ring), mode 0600;
    the document is checked first."""
    parse_afleverbewijs_ring(dict(document))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(document, indent=2) + "\n")
    temporary.replace(path)


def describe(document: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(kid, alg, state) per key: actief, gepubliceerd (in the ring, not signing) or
    `ingetrokken <retiredAt>` (public half only)."""
    ring = parse_afleverbewijs_ring(dict(document))
    rows = [
        (kid, ring.keys[kid].alg, "actief" if kid == ring.active_id else "gepubliceerd")
        for kid in ring.kids
        if kid in ring.keys
    ]
    rows += [
        (kid, key.alg, f"ingetrokken {key.retired_at.isoformat()}")
        for kid, key in sorted(ring.retired.items())
    ]
    return rows


def new_afleverbewijs_ring(kid: str = "nmc-afleverbewijs-1", alg: str = "ES256") -> dict[str, Any]:
    """A fresh ring document with one new key, for development and tests."""
    return {**new_signing_ring(kid, alg), "retired": {}}


def add_key(document: Mapping[str, Any], kid: str, alg: str = "ES256") -> dict[str, Any]:
    """Rotation step 1: the ring with a new private key beside the active one (published,
    not signing)."""
    ring = parse_afleverbewijs_ring(dict(document))
    if kid in ring.keys or kid in ring.retired:
        raise AfleverbewijsSigningError(f"key {kid!r} is in the ring already")
    new = new_signing_ring(kid, alg)["keys"]
    keys = {**document["keys"], **new}
    return {**document, "keys": keys, "retired": ring_retired(document)}


def activate_key(
    document: Mapping[str, Any],
    kid: str,
    *,
    now: datetime | None = None,
    keep: timedelta = DEFAULT_RETIRED_KEEP,
) -> dict[str, Any]:
    """Rotation step 2: `kid` signs from now on; every other private key is retired (only its
    public half stays, published); retired keys older than `keep` are dropped."""
    ring = parse_afleverbewijs_ring(dict(document))
    if kid not in ring.keys:
        raise AfleverbewijsSigningError(
            f"key {kid!r} is not in 'keys': add it first (and roll the API)"
        )
    moment = now or datetime.now(UTC)
    retired = {
        name: entry
        for name, entry in ring_retired(document).items()
        if ring.retired[name].retired_at + keep > moment
    }
    for name, key in ring.keys.items():
        if name != kid:
            retired[name] = {
                "publicKey": _public_pem(key.private_key.public_key()),
                "retiredAt": rfc3339(moment),
            }
    return {"active": kid, "keys": {kid: document["keys"][kid]}, "retired": retired}


def ring_retired(document: Mapping[str, Any]) -> dict[str, Any]:
    retired = document.get("retired") or {}
    return dict(retired) if isinstance(retired, dict) else {}


def _retired_key(kid: str, entry: Any) -> RetiredKey:
    if not isinstance(entry, dict) or not isinstance(entry.get("publicKey"), str):
        raise AfleverbewijsSigningError(f"retired key {kid!r} needs a PEM 'publicKey'")
    try:
        public_key = serialization.load_pem_public_key(entry["publicKey"].encode("ascii"))
    except (ValueError, TypeError, UnicodeEncodeError):
        raise AfleverbewijsSigningError(f"retired key {kid!r} is not a PEM public key") from None
    if isinstance(public_key, ec.EllipticCurvePublicKey) and isinstance(
        public_key.curve, ec.SECP256R1
    ):
        alg = "ES256"
    elif isinstance(public_key, rsa.RSAPublicKey) and public_key.key_size >= 2048:
        alg = "RS256"
    else:
        raise AfleverbewijsSigningError(f"retired key {kid!r} must be EC P-256 or RSA >= 2048 bits")
    retired_at = entry.get("retiredAt")
    try:
        moment = datetime.fromisoformat(str(retired_at).replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise AfleverbewijsSigningError(f"retired key {kid!r} needs 'retiredAt' (RFC 3339)")
    return RetiredKey(kid, alg, public_key, moment)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _public_pem(public_key: Any) -> str:
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")
