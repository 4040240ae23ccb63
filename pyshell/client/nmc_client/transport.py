"""One HTTP call to the NMC with a fresh bearer token, retried while retrying is safe.

Every DV operation of the NMC may be repeated: intake is idempotent on (dvRef, payload), so
the same body again returns the same notificatieId; acknowledgements only move forward;
reads change nothing; a cancel of an already cancelled notification is recognised by the
caller (`NmcClient.cancel`). So a call is retried on no answer at all (connection refused,
reset, timeout: the request may or may not have been processed) and on 429 and 5xx, with
exponential backoff and full jitter, or exactly the `Retry-After` the NMC asked for. A
Retry-After beyond `max_wait` (a day quota, say) is not slept through: the error is raised
with its `retry_after`, for the caller to plan.
"""

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from .problems import NmcUnavailable, error_for

# Errors where no answer came back. Not httpx.TransportError as a whole: an unsupported URL
# scheme or a proxy misconfiguration will not heal by waiting.
RETRYABLE_ERRORS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)

_JITTER = random.SystemRandom()


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` calls at most (1 = no retry); waits grow from `base_delay` to `max_delay`."""

    attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_wait: float = 120.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")

    def backoff(self, attempt: int) -> float:
        """Full jitter (AWS architecture blog): uniform in [0, min(cap, base * 2^(n-1))]."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return _JITTER.uniform(0, ceiling)

    @staticmethod
    def retryable_status(status: int) -> bool:
        return status == 429 or status >= 500


class Transport:
    """Sends requests to `base_url` + path with `Authorization: Bearer <token_provider()>`."""

    def __init__(
        self,
        base_url: str,
        token_provider: Callable[[], str],
        http: httpx.Client,
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.base_url = base_url.rstrip("/")
        self.token_provider = token_provider
        self.http = http
        self.retry = retry
        self.sleep = sleep

    def call(
        self,
        method: str,
        path: str,
        *,
        ok: tuple[int, ...],
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """The response when its status is in `ok`; else the typed error (after retries)."""
        url = self.base_url + path
        query = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        while True:
            attempt += 1
            request_headers = {
                "Accept": "application/json",
                # A fresh token per attempt: a long backoff may outlive the previous one.
                "Authorization": "Bearer " + self.token_provider(),
                **(headers or {}),
            }
            try:
                response = self.http.request(
                    method, url, json=json, params=query, headers=request_headers
                )
            except RETRYABLE_ERRORS as error:
                if attempt >= self.retry.attempts:
                    # The class name only: httpx messages may quote the URL (and its query).
                    raise NmcUnavailable(
                        f"no answer from the NMC after {attempt} attempt(s) "
                        f"({type(error).__name__})"
                    ) from error
                self.sleep(self.retry.backoff(attempt))
                continue
            if response.status_code in ok:
                return response
            failure = error_for(response)
            if attempt >= self.retry.attempts or not self.retry.retryable_status(
                response.status_code
            ):
                raise failure
            wait = failure.retry_after
            if wait is None:
                wait = self.retry.backoff(attempt)
            elif wait > self.retry.max_wait:
                raise failure
            self.sleep(wait)
