"""The simulator limits as NotifyNL does (shared/notifynl-contract.md, Limits): a rate limit per
service, counted as the fork's rolling 60-second window or as upstream's token bucket, before
the daily limit, on the simulator's own clock; every refusal counted, injected faults apart."""

import uuid

import httpx
import pytest
from pipelinetest import API_KEY, configure_notifynl, set_faults, sim_get
from test_pipeline_sims import SERVICE_ID, send, token

from nmc_dev.sim.notifynl_limits import bucket_size, rate_limit_message


@pytest.fixture
def notifynl(sims):
    httpx.post(f"{sims.notifynl_url}/_sim/reset").raise_for_status()
    configure_notifynl(sims, callback_url=None, retention_s=7 * 86400.0)
    yield sims.notifynl_url
    configure_notifynl(
        sims, rate_limit=None, rate_limits={}, rate_limit_mode="window", day_limit=None,
        api_keys=[API_KEY],
    )  # fmt: skip


def statuses(url, count, bearer=None) -> list[int]:
    body = {"email_address": "bezorgd+l@voorbeeld.nl", "template_id": str(uuid.uuid4())}
    return [send(url, body=body, bearer=bearer).status_code for _ in range(count)]


def advance(url, seconds: float) -> None:
    httpx.post(f"{url}/_sim/clock", json={"advance_s": seconds}).raise_for_status()


def test_the_formulas_of_the_contract():
    assert bucket_size(600) == 201  # ceil(600 / 3) + 1
    assert bucket_size(3000) == 1000  # TOKEN_BUCKET_MAX (ceil(3000 / 3) + 1 = 1001)
    assert bucket_size(6) == 3
    assert rate_limit_message(3000) == (
        "Exceeded rate limit for key type LIVE of 3000 requests per 60 seconds"
    )


def test_the_forks_rolling_window_counts_every_request_of_the_last_60_seconds(notifynl):
    configure_notifynl_url(notifynl, rate_limit=6, rate_limit_mode="window")
    assert statuses(notifynl, 7) == [201] * 6 + [429]
    refused = send(notifynl, body={"email_address": "bezorgd+l@voorbeeld.nl",
                                   "template_id": str(uuid.uuid4())})  # fmt: skip
    assert refused.json() == {
        "status_code": 429,
        "errors": [{
            "error": "RateLimitError",
            "message": "Exceeded rate limit for key type LIVE of 6 requests per 60 seconds",
        }],
    }  # fmt: skip
    advance(notifynl, 59)
    assert statuses(notifynl, 1) == [429]  # refused requests are in the window too
    advance(notifynl, 2)  # the first 8 are older than 60 s; the one at 59 s is not
    assert statuses(notifynl, 6) == [201] * 5 + [429]


def test_upstreams_token_bucket_refills_rate_per_60_seconds_up_to_its_size(notifynl):
    configure_notifynl_url(notifynl, rate_limit=6, rate_limit_mode="bucket")
    assert statuses(notifynl, 4) == [201] * 3 + [429]  # a full bucket: 3 tokens
    advance(notifynl, 10)  # 6 / 60 a second: one token
    assert statuses(notifynl, 2) == [201, 429]
    advance(notifynl, 3600)  # never more than the bucket
    assert statuses(notifynl, 4) == [201] * 3 + [429]


def test_the_rate_is_per_service_and_checked_before_the_day(notifynl):
    other = f"ander-{uuid.uuid4()}-{uuid.uuid4()}"
    other_service = other[-73:-37]
    configure_notifynl_url(
        notifynl, rate_limit=2, rate_limits={other_service: 100}, day_limit=3,
        api_keys=[API_KEY, other],
    )  # fmt: skip
    assert statuses(notifynl, 3) == [201, 201, 429]  # the rate: not counted against the day
    advance(notifynl, 61)
    assert statuses(notifynl, 2) == [201, 429]  # the day's third, then the day is used up
    assert statuses(notifynl, 3, bearer=token(iss=other_service, secret=other[-36:])) == [201] * 3
    limits = sim_get(notifynl, "/_sim/limits")
    assert limits["refused"] == {
        "RateLimitError": {SERVICE_ID: 1},
        "TooManyRequestsError": {SERVICE_ID: 1},
    }
    assert limits["admitted"] == {SERVICE_ID: 4, other_service: 3}


def test_every_request_is_judged_by_both_limiters_and_its_pace_kept(notifynl):
    # The bucket answers (3 tokens of a rate of 6); the window is counted only.
    configure_notifynl_url(notifynl, rate_limit=6, rate_limit_mode="bucket")
    assert statuses(notifynl, 4) == [201] * 3 + [429]
    advance(notifynl, 10)  # one token back; the window still holds the four
    assert statuses(notifynl, 3) == [201, 429, 429]
    limits = sim_get(notifynl, "/_sim/limits")
    assert limits["per_mode"] == {
        "bucket": {"admitted": {SERVICE_ID: 4}, "refused": {SERVICE_ID: 3}},
        "window": {"admitted": {SERVICE_ID: 6}, "refused": {SERVICE_ID: 1}},
    }
    assert limits["admitted"] == {SERVICE_ID: 4}  # what was answered: the bucket's
    # All seven within 60 s; the largest burst: 7 less the 1 a bucket refills in 10 s.
    assert limits["pace"] == {
        SERVICE_ID: {"requests": 7, "most_in_60s": 7, "largest_burst": 6, "bucket_size": 3}
    }


def test_injected_429s_are_counted_apart_from_the_limits(notifynl):
    set_faults_url(notifynl, error_rate={"429": 1.0})
    assert statuses(notifynl, 2) == [429, 429]
    limits = sim_get(notifynl, "/_sim/limits")
    assert limits["injected"] == {"429": 2}
    assert limits["refused"] == {"RateLimitError": {}, "TooManyRequestsError": {}}


def test_an_unknown_mode_is_refused(notifynl):
    response = httpx.post(f"{notifynl}/_sim/config", json={"rate_limit_mode": "emmer"})
    assert response.status_code == 400


class _Url:
    def __init__(self, url: str) -> None:
        self.notifynl_url = url


def configure_notifynl_url(url: str, **settings) -> None:
    configure_notifynl(_Url(url), **settings)


def set_faults_url(url: str, **faults) -> None:
    set_faults(_Url(url), **faults)
