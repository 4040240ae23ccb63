"""The NMC's webhook signing keys: the key ring, its public JWKS, and the bearer JWT per call.

SPEC §7: each webhook call carries `Authorization: Bearer <JWT>` signed by the NMC, with
`iss` = the NMC, `aud` = the webhook URL, a short `exp` (at most 5 minutes) and a `jti`; the
NMC publishes its public keys (GET /.well-known/jwks.json and /api/nmc/v1/.well-known/jwks.json).

The ring comes from the file named by NMC_WEBHOOK_SIGNING_KEYS_FILE:

    {"active": "<kid>", "keys": {"<kid>": "<PEM private key>", ...}}

Keys are EC P-256 (signed ES256) or RSA of at least 2048 bits (RS256). The active key signs;
every key in the ring is published, so a rotation is: add the new key, publish (deploy), make
it active, and remove the old one once the tokens it signed have expired (5 minutes).
`nmc admin keys init` writes a dev ring. The JWT issuer is NMC_WEBHOOK_ISSUER, default the
event source (nmc.feed.cloudevents.event_source).

The worker signs with `sign()`. The API publishes the ring's public keys only, from the file
named by NMC_WEBHOOK_PUBLIC_KEYS_FILE (a JWKS, `load_public_keys`), which
`nmc admin keys webhook-public` writes from the ring (`write_public_keys`): the API never holds
the private keys the workers sign with. Each published JWK says which ring it is of, in the
member `nmc_use` (`webhook` here, `afleverbewijs` for a delivery-proof key): every worker
holds a webhook key, so a DV's client accepts a webhook token only under a webhook key and a
proof only under a proof key (RFC 7517 §4: a JWK may carry members of its own; `use` is
`sig` for both and cannot tell them apart).

Nothing here logs; no exception message carries key material.
"""

import json
import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from nmc import settings_env
from nmc.errors import NmcError
from nmc.feed.cloudevents import event_source

MAX_LIFETIME_SECONDS = 300
DEFAULT_LIFETIME_SECONDS = 120
_KID = re.compile(r"\A[A-Za-z0-9._:-]{1,64}\Z")
_PUBLIC_MEMBERS = {"EC": ("kty", "crv", "x", "y"), "RSA": ("kty", "n", "e")}
# The JWK member naming the ring a published key is of (the DV client checks it).
KEY_USE_MEMBER = "nmc_use"
WEBHOOK_USE = "webhook"
PUBLIC_KEYS_ENV = "NMC_WEBHOOK_PUBLIC_KEYS_FILE"
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})


class SigningConfigError(NmcError):
    """The signing key ring is missing or malformed (a start-up failure)."""


@dataclass(frozen=True)
class SigningKey:
    kid: str
    alg: str
    private_key: Any = field(repr=False)

    def public_jwk(self, use: str = WEBHOOK_USE) -> dict[str, Any]:
        """The public JWK only (the private members are never copied out), marked as a key
        of the ring `use` (KEY_USE_MEMBER)."""
        return public_jwk(self.kid, self.alg, self.private_key.public_key(), use)


def public_jwk(kid: str, alg: str, public_key: Any, use: str) -> dict[str, Any]:
    """The JWK of a public key: its public members, kid, alg, `use` sig and the ring mark."""
    algorithm = ECAlgorithm if alg == "ES256" else RSAAlgorithm
    full = algorithm.to_jwk(public_key, as_dict=True)
    public = {name: full[name] for name in _PUBLIC_MEMBERS[full["kty"]]}
    return {**public, "kid": kid, "alg": alg, "use": "sig", KEY_USE_MEMBER: use}


@dataclass(frozen=True)
class SigningRing:
    active_id: str
    keys: Mapping[str, SigningKey] = field(repr=False)

    def jwks(self) -> dict[str, Any]:
        """Every key's public JWK, the active one first."""
        order = [self.active_id, *sorted(k for k in self.keys if k != self.active_id)]
        return {"keys": [self.keys[kid].public_jwk() for kid in order]}

    def sign(
        self,
        audience: str,
        *,
        issuer: str,
        lifetime_seconds: int = DEFAULT_LIFETIME_SECONDS,
        now: float | None = None,
        claims: Mapping[str, Any] | None = None,
    ) -> str:
        """A JWT for one webhook call: iss, aud, iat, nbf, exp (<= 5 minutes), jti."""
        if not 0 < lifetime_seconds <= MAX_LIFETIME_SECONDS:
            raise ValueError(f"lifetime must be 1..{MAX_LIFETIME_SECONDS} seconds")
        key = self.keys[self.active_id]
        issued = int(time.time() if now is None else now)
        payload: dict[str, Any] = {
            **(claims or {}),
            "iss": issuer,
            "aud": audience,
            "iat": issued,
            "nbf": issued,
            "exp": issued + lifetime_seconds,
            "jti": str(uuid.uuid4()),
        }
        return jwt.encode(
            payload, key.private_key, algorithm=key.alg, headers={"kid": key.kid, "typ": "JWT"}
        )


def issuer(environ: Mapping[str, str] | None = None) -> str:
    """The `iss` of webhook tokens: NMC_WEBHOOK_ISSUER, else the event source."""
    env = os.environ if environ is None else environ
    return settings_env.stripped_text(env, "NMC_WEBHOOK_ISSUER") or event_source(env)


def parse_signing_ring(document: Any) -> SigningRing:
    if not isinstance(document, dict):
        raise SigningConfigError("the signing key file must hold {'active': kid, 'keys': {...}}")
    keys_in = document.get("keys")
    if not isinstance(keys_in, dict) or not keys_in:
        raise SigningConfigError("the signing key file needs a non-empty object 'keys'")
    keys: dict[str, SigningKey] = {}
    for kid, pem in keys_in.items():
        if not isinstance(kid, str) or not _KID.match(kid):
            raise SigningConfigError("signing key ids must be 1-64 of A-Z a-z 0-9 . _ : -")
        keys[kid] = _signing_key(kid, pem)
    active = document.get("active")
    if not isinstance(active, str) or active not in keys:
        raise SigningConfigError("'active' must name one of the signing keys")
    return SigningRing(active_id=active, keys=keys)


def load_signing_ring(
    path: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> SigningRing | None:
    """The ring from `path` or NMC_WEBHOOK_SIGNING_KEYS_FILE; None when neither is given."""
    env = os.environ if environ is None else environ
    if path is None:
        path = settings_env.text(env, "NMC_WEBHOOK_SIGNING_KEYS_FILE")
        if path is None:
            return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise SigningConfigError(
            f"signing key file {path} cannot be read ({error.strerror})"
        ) from None
    try:
        document = json.loads(text)
    except ValueError:
        raise SigningConfigError(f"signing key file {path} is not valid JSON") from None
    return parse_signing_ring(document)


def write_public_keys(path: str | os.PathLike[str], ring: SigningRing) -> None:
    """The ring's public JWKS, for the API (NMC_WEBHOOK_PUBLIC_KEYS_FILE), in one step."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(ring.jwks(), indent=2) + "\n", encoding="utf-8")
    temporary.replace(target)


def load_public_keys(
    path: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The webhook ring's public JWKS from `path` or NMC_WEBHOOK_PUBLIC_KEYS_FILE, each key
    checked (public only, EC P-256 or RSA >= 2048) and published as `public_jwk` writes it;
    None when neither is given."""
    env = os.environ if environ is None else environ
    if path is None:
        path = settings_env.text(env, PUBLIC_KEYS_ENV)
        if path is None:
            return None
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise SigningConfigError(
            f"webhook public key file {path} cannot be read ({error.strerror})"
        ) from None
    except ValueError:
        raise SigningConfigError(f"webhook public key file {path} is not valid JSON") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise SigningConfigError(f"webhook public key file {path} must hold a JWKS {{'keys': []}}")
    published = [_published_public_key(jwk) for jwk in keys]
    kids = [jwk["kid"] for jwk in published]
    if len(kids) != len(set(kids)):
        raise SigningConfigError("a key id appears twice in the webhook public key file")
    return {"keys": published}


def _published_public_key(jwk: Any) -> dict[str, Any]:
    if not isinstance(jwk, dict) or not isinstance(jwk.get("kid"), str):
        raise SigningConfigError("each webhook public key needs a kid")
    kid = jwk["kid"]
    if not _KID.match(kid):
        raise SigningConfigError("signing key ids must be 1-64 of A-Z a-z 0-9 . _ : -")
    if _PRIVATE_MEMBERS & set(jwk):
        raise SigningConfigError(f"webhook public key {kid!r} holds private members")
    try:
        key = jwt.PyJWK(dict(jwk)).key
    except jwt.PyJWTError:
        raise SigningConfigError(f"webhook public key {kid!r} cannot be read") from None
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        alg = "ES256"
    elif isinstance(key, rsa.RSAPublicKey) and key.key_size >= 2048:
        alg = "RS256"
    else:
        raise SigningConfigError(f"webhook public key {kid!r} must be EC P-256 or RSA >= 2048")
    if jwk.get("alg", alg) != alg:
        raise SigningConfigError(f"webhook public key {kid!r}: alg does not fit the key")
    return public_jwk(kid, alg, key, WEBHOOK_USE)


def new_signing_ring(kid: str = "nmc-webhook-1", alg: str = "ES256") -> dict[str, Any]:
    """A fresh ring document with one new key, for development and tests."""
    if not _KID.match(kid):
        raise ValueError("signing key ids must be 1-64 of A-Z a-z 0-9 . _ : -")
    if alg == "ES256":
        private_key: Any = ec.generate_private_key(ec.SECP256R1())
    elif alg == "RS256":
        private_key = rsa.generate_private_key(public_exponent=65537, key_size=3072)
    else:
        raise ValueError("alg must be ES256 or RS256")
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")
    return {"active": kid, "keys": {kid: pem}}


def _signing_key(kid: str, pem: Any) -> SigningKey:
    if not isinstance(pem, str):
        raise SigningConfigError(f"signing key {kid!r} must be a PEM string")
    try:
        private_key = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError):
        raise SigningConfigError(f"signing key {kid!r} is not an unencrypted PEM key") from None
    if isinstance(private_key, ec.EllipticCurvePrivateKey) and isinstance(
        private_key.curve, ec.SECP256R1
    ):
        return SigningKey(kid, "ES256", private_key)
    if isinstance(private_key, rsa.RSAPrivateKey) and private_key.key_size >= 2048:
        return SigningKey(kid, "RS256", private_key)
    raise SigningConfigError(f"signing key {kid!r} must be EC P-256 or RSA >= 2048 bits")
