"""The development IAM: a local signing key and the tokens the MOZa IAM would issue with it.

For development, tests and demos only (`nmc admin token`, the dev stack): a token is signed
only when NMC_DEV_IAM_KEY_FILE names a private key, and production has no such key, so it
cannot mint tokens. The verifier (nmc.auth.bearer) accepts these tokens when NMC_OAUTH_JWKS_FILE
points at the key's JWKS (`generate_dev_iam_key` writes both).

  NMC_DEV_IAM_KEY_FILE    PEM private key of the dev issuer; unset means no dev tokens
  NMC_OAUTH_ISSUER / NMC_OAUTH_AUDIENCE / NMC_OAUTH_OIN_CLAIM  the defaults of iss, aud and
                          the OIN claim, as the verifier reads them
"""

import base64
import hashlib
import json
import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from nmc import settings_env
from nmc.auth.bearer import DEFAULT_OIN_CLAIM, OIN_PATTERN
from nmc.auth.errors import AuthConfigError


class DevIamNotConfigured(AuthConfigError):
    """The dev token issuer was asked for a token while NMC_DEV_IAM_KEY_FILE is not set."""


def generate_dev_iam_key(
    key_file: str | os.PathLike[str], jwks_file: str | os.PathLike[str], *, overwrite: bool = False
) -> str:
    """Write a new EC P-256 private key (PEM, mode 0600) and the matching JWKS; return the kid.

    Point NMC_DEV_IAM_KEY_FILE at the key and NMC_OAUTH_JWKS_FILE at the JWKS.
    """
    key_path, jwks_path = Path(key_file), Path(jwks_file)
    if not overwrite:
        for path in (key_path, jwks_path):
            if path.exists():
                raise AuthConfigError(f"{path} exists; pass overwrite=True to replace it")
    private_key = ec.generate_private_key(ec.SECP256R1())
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    key_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    key_path.chmod(0o600)
    jwks = dev_jwks(key_path)
    jwks_path.parent.mkdir(parents=True, exist_ok=True)
    jwks_path.write_text(json.dumps(jwks, indent=2) + "\n", encoding="utf-8")
    return jwks["keys"][0]["kid"]


def dev_jwks(key_file: str | os.PathLike[str]) -> dict[str, Any]:
    """The public JWKS for a dev private key file."""
    private_key, alg = _load_dev_key(Path(key_file))
    return {"keys": [_public_jwk(private_key, alg)]}


def issue_dev_token(
    oin: str,
    *,
    audience: str | None = None,
    issuer: str | None = None,
    lifetime_seconds: int = 300,
    extra_claims: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    now: float | None = None,
) -> str:
    """A token as the MOZa IAM would issue it, signed with the dev key. Development only.

    Refused unless NMC_DEV_IAM_KEY_FILE names a key: production has no such key, so it cannot
    mint tokens. iss, aud and the OIN claim default to the verifier's settings.
    """
    env = os.environ if environ is None else environ
    key_file = settings_env.path(env, "NMC_DEV_IAM_KEY_FILE")
    if not key_file:
        raise DevIamNotConfigured(
            "the dev token issuer is disabled: set NMC_DEV_IAM_KEY_FILE to a dev private key "
            "(development and tests only)"
        )
    if not isinstance(oin, str) or not OIN_PATTERN.match(oin):
        raise ValueError("an OIN is exactly 20 digits")
    claims = {
        "sub": oin,
        settings_env.text(env, "NMC_OAUTH_OIN_CLAIM", DEFAULT_OIN_CLAIM): oin,
        **(extra_claims or {}),
    }
    return issue_dev_claims(
        claims,
        audience=audience,
        issuer=issuer,
        lifetime_seconds=lifetime_seconds,
        environ=env,
        now=now,
    )


def issue_dev_claims(
    claims: Mapping[str, Any],
    *,
    audience: str | None = None,
    issuer: str | None = None,
    lifetime_seconds: int = 300,
    environ: Mapping[str, str] | None = None,
    now: float | None = None,
) -> str:
    """A token with `claims` (plus iss, aud, iat, nbf, exp, jti), signed with the dev key.

    Development only, refused without NMC_DEV_IAM_KEY_FILE; iss and aud default to
    NMC_OAUTH_ISSUER and NMC_OAUTH_AUDIENCE. `issue_dev_token` (a DV's) and the operator
    console's dev tokens (`nmc admin token --console-rol`) are built on it.
    """
    env = os.environ if environ is None else environ
    key_file = settings_env.path(env, "NMC_DEV_IAM_KEY_FILE")
    if not key_file:
        raise DevIamNotConfigured(
            "the dev token issuer is disabled: set NMC_DEV_IAM_KEY_FILE to a dev private key "
            "(development and tests only)"
        )
    issuer = issuer or settings_env.text(env, "NMC_OAUTH_ISSUER")
    audience = audience or settings_env.text(env, "NMC_OAUTH_AUDIENCE")
    if not issuer or not audience:
        raise AuthConfigError("issue_dev_token needs an issuer and an audience (or NMC_OAUTH_*)")
    private_key, alg = _load_dev_key(key_file)
    issued = int(time.time() if now is None else now)
    signed: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "iat": issued,
        "nbf": issued,
        "exp": issued + int(lifetime_seconds),
        "jti": str(uuid.uuid4()),
        **claims,
    }
    kid = _public_jwk(private_key, alg)["kid"]
    return jwt.encode(signed, private_key, algorithm=alg, headers={"kid": kid})


def _load_dev_key(path: Path) -> tuple[Any, str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise AuthConfigError(f"dev IAM key file not found: {path}") from None
    try:
        private_key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise AuthConfigError(f"{path} is not an unencrypted PEM private key") from None
    if isinstance(private_key, ec.EllipticCurvePrivateKey) and isinstance(
        private_key.curve, ec.SECP256R1
    ):
        return private_key, "ES256"
    if isinstance(private_key, rsa.RSAPrivateKey) and private_key.key_size >= 2048:
        return private_key, "RS256"
    raise AuthConfigError(f"{path} must hold an EC P-256 or an RSA (>= 2048 bit) private key")


def _public_jwk(private_key: Any, alg: str) -> dict[str, Any]:
    """The public JWK with `kid` = its RFC 7638 thumbprint, so the kid follows the key."""
    algorithm = ECAlgorithm if alg == "ES256" else RSAAlgorithm
    jwk = algorithm.to_jwk(private_key.public_key(), as_dict=True)
    members = ("crv", "kty", "x", "y") if jwk["kty"] == "EC" else ("e", "kty", "n")
    thumbprint_input = json.dumps(
        {m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True
    ).encode("ascii")
    kid = base64.urlsafe_b64encode(hashlib.sha256(thumbprint_input).digest()).rstrip(b"=")
    return {**jwk, "kid": kid.decode("ascii"), "alg": alg, "use": "sig"}
