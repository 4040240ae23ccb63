"""Unit tests of nmc.settings_env, the typed readers every settings class reads through."""

from pathlib import Path

import pytest

from nmc import settings_env
from nmc.api.settings import ApiSettings, HeadLimits, SseSettings
from nmc.auth.bearer import AuthSettings
from nmc.config import Settings, geen_contactgegevens_drempel
from nmc.console.settings import ConsoleSettings
from nmc.errors import NmcError
from nmc.settings_env import SettingError
from nmc.worker.config import WorkerConfig

NAME = "NMC_EXAMPLE"
MISPLACED = "value-9Xq"  # what a value set in the wrong variable (a key, say) could look like


def refused(read, value: str) -> str:
    """The message of the SettingError `read` raises for NMC_EXAMPLE=value."""
    with pytest.raises(SettingError) as caught:
        read({NAME: value})
    return str(caught.value)


def test_setting_error_is_an_nmc_error():
    # The command line turns an NmcError into a one-line message and exit status 2.
    assert issubclass(SettingError, NmcError)


# --------------------------------------------------------------------------------------------
# The readers


def test_text_is_taken_as_it_is_and_empty_is_unset():
    assert settings_env.text({NAME: " a b "}, NAME) == " a b "
    assert settings_env.text({NAME: ""}, NAME, "default") == "default"
    assert settings_env.text({}, NAME) is None
    assert settings_env.stripped_text({NAME: " a b "}, NAME) == "a b"
    assert settings_env.stripped_text({NAME: "   "}, NAME, "default") == "default"


def test_path():
    assert settings_env.path({NAME: "/x/y.json"}, NAME) == Path("/x/y.json")
    assert settings_env.path({NAME: ""}, NAME, Path("/d")) == Path("/d")
    assert settings_env.path({}, NAME) is None


def test_whole_number():
    read = settings_env.whole_number
    assert read({NAME: " 42 "}, NAME, 5) == 42
    assert read({NAME: ""}, NAME, 5) == 5
    assert read({}, NAME, None) is None
    assert read({NAME: "0"}, NAME, 5) == 0
    assert read({NAME: "10"}, NAME, 5, minimum=10, maximum=10) == 10


@pytest.mark.parametrize("value", ["-1", "+3", "1.5", "1e3", "٣", "drie", MISPLACED])
def test_whole_number_refuses_what_is_no_whole_number(value):
    message = refused(lambda env: settings_env.whole_number(env, NAME, 5), value)
    assert message == f"{NAME} must be a whole number of at least 0"


def test_whole_number_bounds_are_named():
    def read(env):
        return settings_env.whole_number(env, NAME, 5, minimum=1, maximum=9)

    assert refused(read, "0") == f"{NAME} must be a whole number from 1 to 9"
    assert refused(read, "10") == f"{NAME} must be a whole number from 1 to 9"


def test_whole_number_that_can_be_turned_off():
    def read(env):
        return settings_env.whole_number(env, NAME, 5, off=True)

    assert read({NAME: "OFF"}) is None
    assert read({NAME: "none"}) is None
    assert read({NAME: "7"}) == 7
    assert refused(read, "nee") == f"{NAME} must be a whole number of at least 0 or 'off'"
    assert refused(lambda env: settings_env.whole_number(env, NAME, 5), "off").endswith("0")


def test_seconds():
    read = settings_env.seconds
    assert read({NAME: "2.5"}, NAME, 1.0) == 2.5
    assert read({NAME: " "}, NAME, 1.0) == 1.0
    assert read({NAME: "0"}, NAME, 1.0, zero_allowed=True) == 0.0
    assert read({NAME: "86400"}, NAME, 1.0, maximum=86_400.0) == 86_400.0


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soms", MISPLACED])
def test_seconds_refuses_what_is_no_positive_number(value):
    message = refused(lambda env: settings_env.seconds(env, NAME, 1.0), value)
    assert message == f"{NAME} must be a number of seconds above 0"


def test_seconds_bounds_are_named():
    def read(env):
        return settings_env.seconds(env, NAME, 1.0, zero_allowed=True, maximum=60.0)

    expected = f"{NAME} must be a number of seconds of at least 0 (at most 60)"
    assert refused(read, "-0.5") == expected
    assert refused(read, "60.5") == expected


def test_share():
    assert settings_env.share({NAME: "0"}, NAME, 0.3) == 0.0
    assert settings_env.share({NAME: "1"}, NAME, 0.3) == 1.0
    assert settings_env.share({}, NAME, 0.3) == 0.3
    for value in ("1.01", "-0.1", "nan", "veel"):
        message = refused(lambda env: settings_env.share(env, NAME, 0.3), value)
        assert message == f"{NAME} must be a share between 0 and 1"


def test_flag():
    assert settings_env.flag({NAME: "1"}, NAME, False) is True
    assert settings_env.flag({NAME: "0"}, NAME, True) is False
    assert settings_env.flag({NAME: ""}, NAME, True) is True
    for value in ("true", "yes", "2", MISPLACED):
        message = refused(lambda env: settings_env.flag(env, NAME, False), value)
        assert message == f"{NAME} must be 1 (on) or 0 (off)"


# --------------------------------------------------------------------------------------------
# The settings classes read through them


WORKER_ENV = {"NMC_NOTIFYNL_API_KEY": "k", "NMC_WORKER_DATABASE_URL": "postgresql:///x"}
API_ENV = {"NMC_API_DATABASE_URL": "postgresql:///x"}
AUTH_ENV = {"NMC_OAUTH_ISSUER": "i", "NMC_OAUTH_AUDIENCE": "a", "NMC_OAUTH_JWKS_FILE": "f"}
CONSOLE_ENV = {**AUTH_ENV, "NMC_CONSOLE_OAUTH_AUDIENCE": "c", "NMC_CONSOLE_DATABASE_URL": "x"}


def worker_config(env):
    return WorkerConfig.from_env(Settings.from_env({}), {**WORKER_ENV, **env})


READERS = {
    "NMC_DB_PORT": Settings.from_env,
    "NMC_TEST_CLOCK": Settings.from_env,
    "NMC_API_POOL_MIN": lambda env: ApiSettings.from_env({**API_ENV, **env}),
    "NMC_API_PREPARE_THRESHOLD": lambda env: ApiSettings.from_env({**API_ENV, **env}),
    "NMC_API_MAX_BODY_BYTES": lambda env: ApiSettings.from_env({**API_ENV, **env}),
    "NMC_API_DV_CACHE_SECONDS": lambda env: ApiSettings.from_env({**API_ENV, **env}),
    "NMC_API_MAX_HEADERS": HeadLimits.from_env,
    "NMC_API_SSE_POLL_SECONDS": SseSettings.from_env,
    "NMC_API_SSE_MAX_STREAMS": SseSettings.from_env,
    "NMC_GEEN_CONTACTGEGEVENS_DREMPEL": geen_contactgegevens_drempel,
    "NMC_HTTP_TIMEOUT": worker_config,
    "NMC_WORKER_PREPARE_THRESHOLD": worker_config,
    "NMC_WORKER_METRICS_PORT": worker_config,
    "NMC_OAUTH_JWKS_REFETCH_SECONDS": lambda env: AuthSettings.from_env({**AUTH_ENV, **env}),
    "NMC_OAUTH_JWKS_MAX_AGE_SECONDS": lambda env: AuthSettings.from_env({**AUTH_ENV, **env}),
    "NMC_CONSOLE_POOL_MAX": lambda env: ConsoleSettings.from_env({**CONSOLE_ENV, **env}),
    "NMC_CONSOLE_COOKIE_SECURE": lambda env: ConsoleSettings.from_env({**CONSOLE_ENV, **env}),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_bad_value_is_refused_naming_the_variable(name):
    with pytest.raises(SettingError) as caught:
        READERS[name]({name: MISPLACED})
    assert str(caught.value).startswith(f"{name} must be ")
    assert MISPLACED not in str(caught.value)


def test_unset_variables_give_the_documented_defaults():
    api = ApiSettings.from_env(API_ENV)
    assert (api.pool_min, api.pool_max, api.prepare_threshold) == (2, 16, 5)
    assert (api.max_body_bytes, api.max_batch_body_bytes) == (64 * 1024, 16 * 1024 * 1024)
    assert (api.dv_cache_seconds, api.geen_contactgegevens_drempel) == (30.0, 0.3)
    assert api.sse == SseSettings(1.0, 15.0, 900.0, 100, 5)
    assert HeadLimits.from_env({}) == HeadLimits(64 * 1024, 100)
    worker = worker_config({})
    assert (worker.http_timeout, worker.prepare_threshold, worker.metrics_port) == (10.0, 5, None)
    assert (worker.metrics_host, worker.webhook_toegestane_netwerken) == ("127.0.0.1", "")
    auth = AuthSettings.from_env(AUTH_ENV)
    assert (auth.oin_claim, auth.refetch_seconds, auth.max_age_seconds) == ("oin", 60.0, 3600.0)
    console = ConsoleSettings.from_env(CONSOLE_ENV)
    assert (console.pool_max, console.cookie_secure) == (4, True)
    assert Settings.from_env({}).test_clock is False


def test_values_that_turn_a_setting_off():
    assert (
        ApiSettings.from_env({**API_ENV, "NMC_API_PREPARE_THRESHOLD": "off"}).prepare_threshold
        is None
    )
    worker = worker_config(
        {"NMC_WORKER_PREPARE_THRESHOLD": "off", "NMC_WORKER_METRICS_PORT": "off"}
    )
    assert (worker.prepare_threshold, worker.metrics_port) == (None, None)
    assert worker_config({"NMC_WORKER_METRICS_PORT": "0"}).metrics_port == 0
    assert Settings.from_env({"NMC_TEST_CLOCK": "1"}).test_clock is True
