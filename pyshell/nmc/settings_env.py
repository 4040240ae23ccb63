"""Typed readers of the NMC_ environment variables: every settings class reads through these.

Each reader takes the environment (a mapping, so tests pass a dict), the variable's name and its
default. A variable that is unset or empty has its default; a value the reader does not accept
is a `SettingError` whose message names the variable and what it must hold. The message never
repeats the value: a secret set in the wrong variable must not end up in a log.

Text values are taken as they are; numbers, flags and lists are read with the surrounding
whitespace stripped.
"""

import math
from collections.abc import Mapping
from pathlib import Path

from nmc.errors import NmcError

OFF_WORDS = ("off", "none")  # what turns off a setting that `whole_number(..., off=True)` reads


class SettingError(NmcError):
    """An NMC_ variable holds a value its reader does not accept (a start-up failure)."""


def text(env: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    """The value as it is; unset or empty: `default`."""
    return env.get(name) or default


def stripped_text(env: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    """The value without surrounding whitespace; unset, empty or only whitespace: `default`."""
    return _stripped(env, name) or default


def path(env: Mapping[str, str], name: str, default: Path | None = None) -> Path | None:
    """The value as a path; unset or empty: `default`."""
    value = env.get(name)
    return Path(value) if value else default


def whole_number(
    env: Mapping[str, str],
    name: str,
    default: int | None,
    *,
    minimum: int = 0,
    maximum: int | None = None,
    off: bool = False,
) -> int | None:
    """A whole number (digits only) from `minimum` to `maximum`; unset or empty: `default`.

    With `off`, the words of OFF_WORDS (any case) give None: the setting is turned off.
    """
    value = _stripped(env, name)
    if not value:
        return default
    if off and value.lower() in OFF_WORDS:
        return None
    if value.isascii() and value.isdigit():
        number = int(value)
        if number >= minimum and (maximum is None or number <= maximum):
            return number
    bounds = f"of at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    turned_off = " or 'off'" if off else ""
    raise SettingError(f"{name} must be a whole number {bounds}{turned_off}")


def seconds(
    env: Mapping[str, str],
    name: str,
    default: float,
    *,
    zero_allowed: bool = False,
    maximum: float | None = None,
) -> float:
    """A duration in seconds (a decimal number) above 0 (or from 0, with `zero_allowed`), at
    most `maximum`; unset or empty: `default`."""
    lowest = "of at least 0" if zero_allowed else "above 0"
    highest = "" if maximum is None else f" (at most {maximum:g})"
    requirement = f"a number of seconds {lowest}{highest}"
    value = _number(env, name, requirement)
    if value is None:
        return default
    if (value > 0 or (zero_allowed and value == 0)) and (maximum is None or value <= maximum):
        return value
    raise SettingError(f"{name} must be {requirement}")


def share(env: Mapping[str, str], name: str, default: float) -> float:
    """A share: a decimal number from 0 to 1; unset or empty: `default`."""
    requirement = "a share between 0 and 1"
    value = _number(env, name, requirement)
    if value is None:
        return default
    if 0.0 <= value <= 1.0:
        return value
    raise SettingError(f"{name} must be {requirement}")


def flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """`1` (on) or `0` (off); unset or empty: `default`."""
    value = _stripped(env, name)
    if not value:
        return default
    if value in ("0", "1"):
        return value == "1"
    raise SettingError(f"{name} must be 1 (on) or 0 (off)")


def _stripped(env: Mapping[str, str], name: str) -> str:
    return (env.get(name) or "").strip()


def _number(env: Mapping[str, str], name: str, requirement: str) -> float | None:
    """The value as a finite decimal number; None when unset or empty."""
    value = _stripped(env, name)
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise SettingError(f"{name} must be {requirement}")
    return number
