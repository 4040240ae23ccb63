"""The IAM's public keys (its JWKS), fetched lazily and kept in memory for the bearer verifier.

The keys come from a URL or a file. They are refreshed when older than `max_age_seconds` (a
failed refresh keeps the old keys), and a token with an unknown `kid` causes at most one fetch
per `refetch_seconds`. Only signing keys of a type the verifier accepts are kept: RSA, or EC on
P-256, never a private key. When no keys can be had, `JwksUnavailable` (not the caller's fault).
"""

import asyncio
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from nmc.auth.errors import JwksUnavailable

log = logging.getLogger(__name__)

DEFAULT_REFETCH_SECONDS = 60.0
DEFAULT_MAX_AGE_SECONDS = 3600.0
MAX_JWKS_BYTES = 1024 * 1024
JWKS_TIMEOUT_SECONDS = 5.0
INITIAL_RETRY_SECONDS = 5.0  # while no keys were ever loaded, retry sooner than refetch_seconds

_KEY_TYPE_FOR_ALG = {"RS256": "RSA", "PS256": "RSA", "ES256": "EC"}


class JwksCache:
    """The IAM's public keys, fetched lazily and kept in memory.

    Keys are refreshed when older than `max_age_seconds` (a failed refresh keeps the old keys),
    and a token with an unknown `kid` causes at most one fetch per `refetch_seconds`, so a flood
    of made-up kids cannot turn the NMC into a load generator against the IAM. The keys come
    from `url` or from `file`: exactly one is given (AuthSettings checks the settings).
    """

    def __init__(
        self,
        *,
        url: str | None = None,
        file: str | None = None,
        refetch_seconds: float = DEFAULT_REFETCH_SECONDS,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        http_client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._url = url
        self._file = file
        self._refetch_seconds = refetch_seconds
        self._max_age_seconds = max_age_seconds
        self._client = http_client
        self._clock = clock
        self._keys: list[dict[str, Any]] | None = None
        self._loaded_at = 0.0
        self._last_attempt: float | None = None
        self._lock = asyncio.Lock()
        self.fetch_count = 0

    async def find(self, kid: str | None, alg: str) -> dict[str, Any] | None:
        """The JWK for (kid, alg), refetching once if the kid is unknown and the throttle allows."""
        await self._ensure_fresh()
        jwk_data = _select(self._keys or [], kid, alg)
        if jwk_data is None and self._may_attempt():
            async with self._lock:
                if self._may_attempt():
                    await self._refresh(raise_on_failure=False)
            jwk_data = _select(self._keys or [], kid, alg)
        return jwk_data

    async def prime(self) -> None:
        """Load the keys now (from the app's lifespan), so the first request does not wait."""
        async with self._lock:
            await self._refresh(raise_on_failure=True)

    async def _ensure_fresh(self) -> None:
        if self._keys is None:
            async with self._lock:
                if self._keys is None:
                    if not self._may_attempt(INITIAL_RETRY_SECONDS):
                        raise JwksUnavailable("JWKS not loaded; the last attempt failed")
                    await self._refresh(raise_on_failure=True)
            return
        if self._is_old() and self._may_attempt():
            async with self._lock:
                if self._is_old() and self._may_attempt():
                    await self._refresh(raise_on_failure=False)

    def _is_old(self) -> bool:
        return self._clock() - self._loaded_at >= self._max_age_seconds

    def _may_attempt(self, interval: float | None = None) -> bool:
        last = self._last_attempt
        if interval is None:
            interval = self._refetch_seconds
        return last is None or self._clock() - last >= min(interval, self._refetch_seconds)

    async def _refresh(self, *, raise_on_failure: bool) -> None:
        self._last_attempt = self._clock()
        self.fetch_count += 1
        try:
            document = await self._load()
            keys = _usable_keys(document)
        except JwksUnavailable as exc:
            log.warning("JWKS refresh failed: %s", exc)
            if raise_on_failure:
                raise
            return
        self._keys = keys
        self._loaded_at = self._clock()

    async def _load(self) -> Any:
        if self._file:
            try:
                raw = Path(self._file).read_bytes()
            except OSError as exc:
                raise JwksUnavailable(f"JWKS file cannot be read ({exc.strerror})") from None
        else:
            raw = await self._fetch(self._url or "")
        if len(raw) > MAX_JWKS_BYTES:
            raise JwksUnavailable("JWKS is larger than 1 MiB")
        try:
            return json.loads(raw)
        except ValueError:
            raise JwksUnavailable("JWKS is not valid JSON") from None

    async def _fetch(self, url: str) -> bytes:
        try:
            if self._client is not None:
                response = await self._client.get(url, timeout=JWKS_TIMEOUT_SECONDS)
            else:
                async with httpx.AsyncClient(timeout=JWKS_TIMEOUT_SECONDS) as client:
                    response = await client.get(url)
        except httpx.HTTPError as exc:
            raise JwksUnavailable(f"JWKS fetch failed ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise JwksUnavailable(f"JWKS fetch answered HTTP {response.status_code}")
        return response.content


def _usable_keys(document: Any) -> list[dict[str, Any]]:
    """The signing keys of a JWKS we could use: RSA, or EC on P-256; never private keys."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksUnavailable("JWKS has no 'keys' list")
    usable = []
    for key in document["keys"]:
        if not isinstance(key, dict) or "d" in key:
            continue  # a private key in a public JWKS is a publisher's mistake: do not use it
        if key.get("use", "sig") != "sig":
            continue
        if "key_ops" in key and "verify" not in (key.get("key_ops") or []):
            continue
        if key.get("kty") == "RSA" or (key.get("kty") == "EC" and key.get("crv") == "P-256"):
            usable.append(key)
    return usable


def _select(keys: list[dict[str, Any]], kid: str | None, alg: str) -> dict[str, Any] | None:
    """The key for (kid, alg): same kid, a key type that fits alg, no conflicting `alg`."""
    fitting = [
        key
        for key in keys
        if key.get("kty") == _KEY_TYPE_FOR_ALG[alg] and key.get("alg", alg) == alg
    ]
    if kid is not None:
        matches = [key for key in fitting if key.get("kid") == kid]
    else:
        # No kid in the token: acceptable only when the choice is unambiguous.
        matches = fitting if len(fitting) == 1 else []
    return matches[0] if len(matches) == 1 else None
