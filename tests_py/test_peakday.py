"""The peak day of one NotifyNL service at CI size (nmc_dev.peakday; the full size is
benchmarks/bench_peakday.py): DV A submits 1.6 x the day at 08:00 UTC, 20 small DVs a few at a
time all day. The pace never exceeds the rate in any 60 s, the simulator's limits (the fork's
window and upstream's bucket) refuse nothing, the day is never exceeded, the small DVs are sent
all day within seconds, and A's remainder goes after 00:00 UTC."""

import math
from datetime import timedelta

from nmc_dev import peakday


def test_the_peak_day_keeps_the_pace_the_day_and_a_share_for_the_small_dvs(db_url):
    config = peakday.PeakDay.ci()
    result = peakday.run(db_url, config)
    print(peakday.report(result))  # the figures, for the README's CI row

    total = round(config.heavy_factor * config.day_limit) + config.small_dvs * config.small_per_dv
    assert len(result.sends) == total  # everything was sent, within a day and a half
    assert result.max_in_60s() <= config.rate
    assert result.refusals == {"window": {}, "bucket": {}}  # no 429 of either kind

    per_day = result.per_day()
    first, second = sorted(per_day)
    assert per_day[first] <= config.day_limit and per_day[second] <= config.day_limit
    assert per_day[first] >= 0.99 * config.day_limit  # the day is used, by the evening

    # At the pace while A may send: its first half hour is the even part of the pace, the rate
    # less the burst (one second of it, at least 1: 11 a minute at the CI size's 12).
    even = config.rate - max(1, math.ceil(config.rate / 60))
    half_hour = sum(1 for t, _, _ in result.sends if t < 1800)
    assert half_hour >= 0.95 * 30 * even

    # The small DVs: every one sent on the day itself, none waiting for A or for 00:00.
    small = [t for t, _, is_small in result.sends if is_small]
    assert len(small) == config.small_dvs * config.small_per_dv
    midnight = result.start.replace(hour=0) + timedelta(days=1)
    assert max(result.start.timestamp() + t for t in small) < midnight.timestamp()
    waits = peakday.latency([w for _, w in result.small_latency])
    assert waits["max"] <= 3 * 60.0 / config.rate + 60.0  # a few token intervals at most

    # A's remainder: exactly what the day left, sent after 00:00 UTC.
    heavy_total = round(config.heavy_factor * config.day_limit)
    heavy_first_day = per_day[first] - config.small_dvs * config.small_per_dv
    assert result.heavy_after_midnight() == heavy_total - heavy_first_day > 0
