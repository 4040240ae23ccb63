"""NotifyNL's rate limit per service, as the simulator applies it (shared/notifynl-contract.md,
Limits), and the count of every refusal.

Two ways of counting `rate` requests per 60 seconds, switched by the simulator's config
(`rate_limit_mode`):

* `window`: the fork (Worth-NL/notifynl-api) — a rolling 60-second window. As its redis
  `exceeded_rate_limit` does, every request is recorded first and the window then counted, so
  a refused request takes its place in the window too.
* `bucket`: upstream GOV.UK Notify — a token bucket refilled at rate/60 a second, holding at
  most min(ceil(rate/3) + 1, 1000) tokens, full at the start; a request takes one token or
  is refused (taking none).

Both read the simulator's own clock (seconds, /_sim/clock moves it), so a scaled day moves
them as it moves the daily limit. Only the POST send endpoint is limited, as NotifyNL's
application limits only its POSTs.

Every request is judged by both limiters (`Pace`): the configured mode's verdict is the
answer, the other's is counted only, so one run says what either limiter would have refused.
The pace the requests came at is kept per service as well: the most in any 60 seconds and
the largest burst (the tokens a bucket refilled at rate/60 a second would need to admit them
all; upstream's admits up to `bucket_size(rate)`).
"""

import math
from collections import Counter, deque
from dataclasses import dataclass, field

WINDOW_S = 60.0
TOKEN_BUCKET_MAX = 1_000
MODES = ("window", "bucket")


def bucket_size(rate: int) -> int:
    """Upstream's bucket: min(ceil(rate / 3) + 1, TOKEN_BUCKET_MAX) tokens."""
    return min(math.ceil(rate / 3) + 1, TOKEN_BUCKET_MAX)


def rate_limit_message(rate: int) -> str:
    """The message of NotifyNL's RateLimitError (the sim's keys are all of type LIVE)."""
    return f"Exceeded rate limit for key type LIVE of {rate} requests per 60 seconds"


@dataclass
class RollingWindow:
    rate: int
    times: deque = field(default_factory=deque)

    def admit(self, now: float) -> bool:
        self.times.append(now)
        while self.times and self.times[0] <= now - WINDOW_S:
            self.times.popleft()
        return len(self.times) <= self.rate


@dataclass
class TokenBucket:
    rate: int
    tokens: float = -1.0  # full on first use
    at: float = 0.0

    def admit(self, now: float) -> bool:
        size = bucket_size(self.rate)
        if self.tokens < 0:
            self.tokens, self.at = float(size), now
        self.tokens = min(size, self.tokens + max(now - self.at, 0.0) * self.rate / 60.0)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class PaceWatch:
    """The pace of a stream of requests: the most in any 60 seconds (a half-open span, as
    the fork's window counts) and the largest burst against a refill of rate/60 a second
    (the bucket depth that admits every request). Bounded memory: 60 s of request times."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.recent: deque = deque()
        self.requests = 0
        self.most_in_60s = 0
        self.deficit = 0.0
        self.at: float | None = None
        self.largest_burst = 0.0

    def observe(self, now: float) -> None:
        self.requests += 1
        self.recent.append(now)
        while self.recent[0] <= now - WINDOW_S:
            self.recent.popleft()
        self.most_in_60s = max(self.most_in_60s, len(self.recent))
        drained = 0.0 if self.at is None else max(now - self.at, 0.0) * self.rate / WINDOW_S
        self.deficit = max(self.deficit - drained, 0.0) + 1.0
        self.at = now
        self.largest_burst = max(self.largest_burst, self.deficit)

    def figures(self) -> dict:
        return {
            "requests": self.requests,
            "most_in_60s": self.most_in_60s,
            "largest_burst": math.ceil(self.largest_burst - 1e-9),
            "bucket_size": bucket_size(self.rate),
        }


class Pace:
    """One service's requests judged by both limiters, and their pace (`PaceWatch`)."""

    def __init__(self, rate: int) -> None:
        self.limiters = {"window": RollingWindow(rate), "bucket": TokenBucket(rate)}
        self.watch = PaceWatch(rate)

    def admit(self, now: float) -> dict[str, bool]:
        self.watch.observe(now)
        return {mode: limiter.admit(now) for mode, limiter in self.limiters.items()}


class Limits:
    """The rate limiters per service and the counts of every refusal: NotifyNL's own
    (RateLimitError, TooManyRequestsError) per service, and the faults the test injected
    (error_rate) per status code, counted apart."""

    def __init__(self) -> None:
        self._limiters: dict[str, tuple[tuple[int, str], Pace]] = {}
        self.refused: dict[str, Counter[str]] = {
            "RateLimitError": Counter(),
            "TooManyRequestsError": Counter(),
        }
        self.injected: Counter[str] = Counter()
        self.admitted: Counter[str] = Counter()
        # What each limiter said to every request, the configured one and the other.
        self.per_mode: dict[str, dict[str, Counter[str]]] = {
            mode: {"admitted": Counter(), "refused": Counter()} for mode in MODES
        }
        # The pace per service of the requests since its limit was last set.
        self.pace: dict[str, PaceWatch] = {}

    def admit(self, service_id: str, rate: int | None, mode: str, now: float) -> bool:
        """Whether the service's rate limit lets this send through (counted either way)."""
        if rate is None:
            return True
        if mode not in MODES:
            raise ValueError(f"rate_limit_mode must be one of {MODES}")
        setting = (rate, mode)
        held = self._limiters.get(service_id)
        if held is None or held[0] != setting:  # a new limit starts a new count
            held = (setting, Pace(rate))
            self._limiters[service_id] = held
            self.pace[service_id] = held[1].watch
        verdicts = held[1].admit(now)
        for judged, admitted in verdicts.items():
            self.per_mode[judged]["admitted" if admitted else "refused"][service_id] += 1
        if verdicts[mode]:
            self.admitted[service_id] += 1
            return True
        self.refused["RateLimitError"][service_id] += 1
        return False

    def day_refused(self, service_id: str) -> None:
        self.refused["TooManyRequestsError"][service_id] += 1

    def fault_injected(self, status_code: int) -> None:
        self.injected[str(status_code)] += 1

    def snapshot(self, rate: int | None, mode: str) -> dict:
        return {
            "rate_limit_mode": mode,
            "rate_limit": rate,
            "admitted": dict(self.admitted),
            "refused": {kind: dict(counts) for kind, counts in self.refused.items()},
            "injected": dict(self.injected),
            "per_mode": {
                judged: {verdict: dict(counts) for verdict, counts in verdicts.items()}
                for judged, verdicts in self.per_mode.items()
            },
            "pace": {service: watch.figures() for service, watch in self.pace.items()},
        }
