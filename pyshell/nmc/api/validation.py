"""Validation of the DV's requests: every violation at once, never an echo of a submitted value.

A violation is `{"field": ..., "in": ..., "message": ...}` with `in` one of body, query, path,
header, the shape the MOZa NMC returns. `field` is a path such as `notificaties[3].emailAdres`;
the empty string means the body as a whole. Messages are fixed Dutch texts: they name the rule,
never the value, because the values are personal data (SPEC §8). A name is only repeated when
the schema knows it: a member or query parameter the caller made up may itself be personal
data (a BSN sent as a name looks like any identifier), so it is reported on the object (or the
query) that holds it, by its position (`unknown_member`, `unknown_parameter`).

An optional member is either absent or has a value of its type: `null` is refused (the
contract has no nullable request member). Lengths are counted as the OpenAPI schema's
`maxLength` counts them: code points of the string the DV sent, before normalisation. A dvRef
holds no character of Unicode category C (control, format, surrogate, private use,
unassigned) or Z (separators) other than the plain space U+0020, which is exactly what
`str.isprintable` accepts: two dvRefs that look the same are the same dvRef.

An e-mail address NotifyNL would refuse (nmc.notifynl.notifynl_email) is an `AddressRefused`, a 422:
the request has the right shape but could not be sent; alongside a violation of the shape it
is listed in the 400 as well.

On success the validators return the *canonical* request: a plain dict with every optional member
present (None when absent), strings NFC-normalised, `geldigTot` in UTC with a `Z`, `batchId` in
lower case, e-mail domains in lower case. `canonical_json.payload_hash` over it is the
idempotency hash, and its recipient and berichtgegevens are what `sealing.seal` encrypts.

Rules that need the database (berichttype allowed for this DV and regie, the maximum `geldigTot`
per berichttype, quota) are checked in SQL. Time rules use the `now` the caller passes, which is
the database clock (SPEC §10).
"""

import operator
import re
import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal, TypedDict, cast

from nmc.notifynl.notifynl_email import refused_by_notifynl

Location = Literal["body", "query", "path", "header"]

IDENTIFICATIE_TYPES: tuple[str, ...] = ("BSN", "KVK", "RSIN")


# "in" is a Python keyword, hence the functional TypedDict form.
Violation = TypedDict("Violation", {"field": str, "in": str, "message": str})


class ValidationFailed(Exception):
    """The request broke one or more rules; `violations` lists them all."""

    def __init__(self, violations: list[Violation]):
        super().__init__(f"{len(violations)} violation(s)")
        self.violations = violations


class AddressRefused(ValidationFailed):
    """The request has the right shape, but NotifyNL would refuse one or more of its e-mail
    addresses (nmc.notifynl.notifynl_email): a 422, not a 400 (SPEC §7 intake)."""


ADDRESS_REFUSED_MESSAGE = "wordt door NotifyNL geweigerd"


# Limits, also stated in the OpenAPI document (nmc/api/openapi.yaml; tests_py/test_openapi.py
# compares the two).
DVREF_MAX = 200
BERICHTTYPE_MAX = 100
BERICHTTYPE_PATTERN = r"^[A-Za-z0-9._-]{1,100}$"
DIENST_MAX = 100
EMAIL_MAX = 254
EMAIL_LOCAL_MAX = 64
BERICHTGEGEVENS_MAX_KEYS = 50
BERICHTGEGEVENS_KEY_PATTERN = r"^[A-Za-z0-9_]{1,50}$"
BERICHTGEGEVENS_VALUE_MAX = 2000
BERICHTGEGEVENS_TOTAL_MAX_BYTES = 16 * 1024
BATCH_MAX = 1000
LIJST_LIMIET_DEFAULT = 20
LIJST_LIMIET_MAX = 100
CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,500}$"

NULL_MESSAGE = "mag niet null zijn: laat het veld weg als het geen waarde heeft"
DVREF_CHARACTERS_MESSAGE = (
    "mag alleen zichtbare tekens en de gewone spatie bevatten (geen stuurtekens, opmaak- of "
    "onzichtbare tekens en geen andere spaties of regelscheidingen)"
)
_ABSENT: Any = object()  # body.get default: tells an absent member from a null one

CALLBACK_URL_MESSAGE = (
    "wordt niet per notificatie opgegeven: de webhook wordt per dienstverlener geregistreerd "
    "bij de onboarding"
)

_BERICHTTYPE = re.compile(r"\A[A-Za-z0-9._-]{1,100}\Z")
_BERICHTGEGEVENS_KEY = re.compile(r"\A[A-Za-z0-9_]{1,50}\Z")
_CURSOR = re.compile(r"\A[A-Za-z0-9_-]{1,500}\Z")
_UUID = re.compile(r"\A[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\Z")
_DIGITS = re.compile(r"\A[0-9]+\Z")
_RFC3339 = re.compile(
    r"\A(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))\Z"
)
# Local part: RFC 5322 dot-atom, ASCII only (no quoted strings, no comments, no display names).
_LOCAL_PART = re.compile(
    r"\A[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*\Z"
)
# Domain (after IDNA): two or more dot-separated labels of 1-63 letters, digits and inner
# hyphens, the last of which (the TLD) is 2-63 letters or an xn-- label.
_DOMAIN_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TLD = r"(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{0,58}[A-Za-z0-9])"  # each also a _DOMAIN_LABEL
_DOMAIN = re.compile(rf"\A(?:{_DOMAIN_LABEL}\.)+{_TLD}\Z")
_ALLOWED_IN_TEXT = frozenset("\t\n\r")  # control characters a berichtgegevens value may hold
_ELFPROEF_WEIGHTS = (9, 8, 7, 6, 5, 4, 3, 2, -1)

_COMMON_FIELDS = ("dvRef", "berichtType", "berichtgegevens", "geldigTot", "batchId", "dienst")
DECENTRAAL_FIELDS = frozenset((*_COMMON_FIELDS, "emailAdres"))
CENTRAAL_FIELDS = frozenset((*_COMMON_FIELDS, "identificatieType", "identificatieNummer"))
BATCH_FIELDS = frozenset(("batchId", "notificaties"))


def violation(field: str, message: str, location: Location = "body") -> Violation:
    return {"field": field, "in": location, "message": message}


def unknown_member(prefix: str, position: int) -> Violation:
    """A member the schema does not know, on the object `prefix` names ("" the body, or
    `notificaties[3].`), by its 1-based position in that object: never by its name."""
    return violation(
        prefix.rstrip("."), f"bevat een onbekend veld (veld {position} van het object)"
    )


def query_parameters(
    params: Iterable[tuple[str, str]], allowed: Iterable[str]
) -> tuple[dict[str, str], list[Violation]]:
    """The known query parameters by name, and a violation for each unknown or repeated one.

    One rule for every operation: a parameter the operation does not know is refused (a
    misspelt one would otherwise silently change nothing), and so is a repeated one. Pass
    `request.query_params.multi_items()`.
    """
    known = frozenset(allowed)
    seen: dict[str, str] = {}
    errors: list[Violation] = []
    for position, (name, value) in enumerate(params, 1):
        if name not in known:
            errors.append(unknown_parameter(position))
        elif name in seen:
            errors.append(violation(name, "mag maar één keer voorkomen", "query"))
        else:
            seen[name] = value
    return seen, errors


def no_query_parameters(params: Iterable[tuple[str, str]]) -> None:
    """For an operation without query parameters: any one sent is refused, as every other
    operation refuses one it does not know (`query_parameters`)."""
    _, errors = query_parameters(params, ())
    if errors:
        raise ValidationFailed(errors)


def unknown_parameter(position: int) -> Violation:
    """A query parameter the operation does not know, by its 1-based position in the query:
    never by its name."""
    return violation(
        "", f"bevat een onbekende parameter (parameter {position} van de query)", "query"
    )


class _Collector:
    """Every violation, in order. A request with only refused addresses is an
    AddressRefused (422); one that also breaks a rule of its shape is a ValidationFailed
    (400) that lists the refused addresses too."""

    def __init__(self) -> None:
        self.items: list[Violation] = []
        self.refused = 0

    def add(self, field: str, message: str, location: Location = "body") -> None:
        self.items.append(violation(field, message, location))

    def refuse_address(self, field: str) -> None:
        self.add(field, ADDRESS_REFUSED_MESSAGE)
        self.refused += 1

    def raise_if_any(self) -> None:
        if not self.items:
            return
        if self.refused == len(self.items):
            raise AddressRefused(self.items)
        raise ValidationFailed(self.items)


# --------------------------------------------------------------------------------------------
# Public validators


def validate_decentraal(body: Any, *, now: datetime) -> dict[str, Any]:
    """Validate a decentraal intake body; return its canonical dict or raise ValidationFailed."""
    errors = _Collector()
    canonical = _notificatie(body, "decentraal", "", errors, _check_now(now), batch_id=None)
    errors.raise_if_any()
    return cast(dict[str, Any], canonical)  # no violations means a result was built


def validate_centraal(body: Any, *, now: datetime) -> dict[str, Any]:
    """Validate a centraal intake body; return its canonical dict or raise ValidationFailed."""
    errors = _Collector()
    canonical = _notificatie(body, "centraal", "", errors, _check_now(now), batch_id=None)
    errors.raise_if_any()
    return cast(dict[str, Any], canonical)


def validate_batch(
    body: Any, regie: Literal["decentraal", "centraal"], *, now: datetime
) -> dict[str, Any]:
    """Validate a `/_batch` body as a whole: `{"batchId": ..., "notificaties": [canonical, ...]}`.

    Each item carries the batch's batchId. An item may repeat the batch's batchId but not
    differ from it. A dvRef that occurs twice in one batch is refused at its later occurrences.
    """
    if regie not in ("decentraal", "centraal"):
        raise ValueError("regie must be 'decentraal' or 'centraal'")
    now = _check_now(now)
    if not isinstance(body, dict):
        raise ValidationFailed([violation("", "moet een JSON-object zijn")])
    errors = _Collector()
    _unknown_fields(body, BATCH_FIELDS, "", errors)
    batch_id = _optional_uuid(body, "batchId", "", errors)
    items = body.get("notificaties")
    result: list[dict[str, Any]] = []
    if items is None:
        errors.add("notificaties", "is verplicht")
    elif not isinstance(items, list):
        errors.add("notificaties", "moet een lijst zijn")
    elif not 1 <= len(items) <= BATCH_MAX:
        errors.add("notificaties", f"moet 1 tot {BATCH_MAX} notificaties bevatten")
    else:
        first_seen: dict[str, int] = {}
        for index, item in enumerate(items):
            prefix = f"notificaties[{index}]."
            canonical = _notificatie(item, regie, prefix, errors, now, batch_id=batch_id)
            if canonical is None:
                continue
            earlier = first_seen.setdefault(canonical["dvRef"], index)
            if earlier != index:
                errors.add(
                    prefix + "dvRef", f"komt al eerder voor in deze batch (notificaties[{earlier}])"
                )
            result.append(canonical)
    errors.raise_if_any()
    return {"batchId": batch_id, "notificaties": result}


def parse_notificatie_id(value: Any) -> uuid.UUID:
    """The `{notificatieId}` path parameter as a UUID (canonical 8-4-4-4-12 form only)."""
    if not isinstance(value, str) or not _UUID.match(value):
        raise ValidationFailed([violation("notificatieId", "moet een UUID zijn", "path")])
    return uuid.UUID(value)


def validate_lijst_query(params: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Query of GET /notificaties: `dvRef` (required), `limiet` (1-100, default 20), `cursor`.

    Pass `request.query_params.multi_items()`: a repeated parameter is refused, and so is an
    unknown one (a misspelt `dvref=` would otherwise silently list nothing).
    """
    errors = _Collector()
    seen, found = query_parameters(params, ("dvRef", "limiet", "cursor"))
    errors.items.extend(found)
    dvref = seen.get("dvRef")
    if dvref is None:
        errors.add("dvRef", "is verplicht", "query")
    else:
        dvref = _dvref(dvref, "dvRef", errors, location="query")
    limiet = LIJST_LIMIET_DEFAULT
    if "limiet" in seen:
        text = seen["limiet"]
        if _DIGITS.match(text) and len(text) <= 4 and 1 <= int(text) <= LIJST_LIMIET_MAX:
            limiet = int(text)
        else:
            errors.add(
                "limiet", f"moet een geheel getal van 1 tot {LIJST_LIMIET_MAX} zijn", "query"
            )
    cursor = seen.get("cursor")
    if cursor is not None and not _CURSOR.match(cursor):
        errors.add("cursor", "is geen geldige cursor", "query")
        cursor = None
    errors.raise_if_any()
    return {"dvRef": dvref, "limiet": limiet, "cursor": cursor}


def recipient_of(canonical: Mapping[str, Any]) -> str:
    """The recipient string `sealing.seal` encrypts: the e-mail address, or `TYPE:nummer`."""
    if canonical["regie"] == "decentraal":
        return canonical["emailAdres"]
    return f"{canonical['identificatieType']}:{canonical['identificatieNummer']}"


# --------------------------------------------------------------------------------------------
# Rule checks usable on their own


def is_valid_email(address: str) -> bool:
    """A practical RFC 5322 subset: dot-atom local part, a dotted domain, at most 254 characters.

    The NMC's own form of an address. It is not NotifyNL's rule (nmc.notifynl.notifynl_email), which
    the intake checks first: it refuses some addresses NotifyNL takes, and takes a few
    NotifyNL refuses (three hyphens in a row in a label, say).
    """
    if not isinstance(address, str) or address.count("@") != 1:
        return False
    local, domain = address.split("@")
    if not local or len(local) > EMAIL_LOCAL_MAX or not _LOCAL_PART.match(local):
        return False
    if domain.isascii():
        # The idna codec returns an ASCII name unchanged, only refusing an empty or over-long
        # label, which _DOMAIN fails as well: the verdict is the same without it.
        ascii_domain = domain
    else:
        try:
            ascii_domain = domain.encode("idna").decode("ascii")
        except UnicodeError:
            return False
    if len(local) + 1 + len(ascii_domain) > EMAIL_MAX or len(ascii_domain) > 253:
        return False
    return _DOMAIN.match(ascii_domain) is not None


def elfproef(digits: str) -> bool:
    """The BSN 11-proef: weights 9..2 and -1, sum divisible by 11.

    The RSIN uses the same check: RSINs and BSNs are issued from one number range, and KVK,
    the Belastingdienst and the ZGW APIs (Open Zaak) validate the RSIN with the BSN rule.
    """
    if len(digits) != 9 or not _DIGITS.match(digits):
        return False
    return sum(map(operator.mul, map(int, digits), _ELFPROEF_WEIGHTS)) % 11 == 0


def parse_rfc3339(text: str) -> datetime | None:
    """An RFC 3339 date-time with an offset (`Z` or `±hh:mm`), as an aware datetime; else None.

    More than six fraction digits are truncated to microseconds (PostgreSQL's precision).
    """
    match = _RFC3339.match(text)
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        if zulu:
            tz = UTC
        else:
            if int(off_h) > 23 or int(off_m) > 59:
                return None
            delta = timedelta(hours=int(off_h), minutes=int(off_m))
            tz = timezone(-delta if sign == "-" else delta)
        return datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=tz,
        )
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# The single-notificatie body


def _notificatie(
    body: Any,
    regie: str,
    prefix: str,
    errors: _Collector,
    now: datetime,
    *,
    batch_id: str | None,
) -> dict[str, Any] | None:
    """Check one notificatie body; append violations and return the canonical dict (or None)."""
    before = len(errors.items)
    if not isinstance(body, dict):
        errors.add(prefix.rstrip(".") or "", "moet een JSON-object zijn")
        return None
    allowed = DECENTRAAL_FIELDS if regie == "decentraal" else CENTRAAL_FIELDS
    _unknown_fields(body, allowed, prefix, errors, regie=regie)

    dvref = _dvref(body.get("dvRef"), prefix + "dvRef", errors)
    berichttype = _required_text(body, "berichtType", prefix, errors, max_len=BERICHTTYPE_MAX)
    if berichttype is not None and not _BERICHTTYPE.match(berichttype):
        errors.add(prefix + "berichtType", "mag alleen A-Z, a-z, 0-9, '.', '_' en '-' bevatten")
    canonical: dict[str, Any] = {"regie": regie, "dvRef": dvref, "berichtType": berichttype}

    if regie == "decentraal":
        canonical["emailAdres"] = _email(body, prefix, errors)
    else:
        canonical.update(_identificatie(body, prefix, errors))

    canonical["berichtgegevens"] = _berichtgegevens(body, prefix, errors)
    canonical["geldigTot"] = _geldig_tot(body, prefix, errors, now)
    own_batch_id = _optional_uuid(body, "batchId", prefix, errors)
    if batch_id is not None and own_batch_id is not None and own_batch_id != batch_id:
        errors.add(prefix + "batchId", "wijkt af van de batchId van de batch")
    canonical["batchId"] = batch_id if batch_id is not None else own_batch_id
    dienst = body.get("dienst", _ABSENT)
    if dienst is _ABSENT:
        canonical["dienst"] = None
    elif dienst is None:
        errors.add(prefix + "dienst", NULL_MESSAGE)
    else:
        canonical["dienst"] = _text(dienst, prefix + "dienst", errors, max_len=DIENST_MAX)
    return canonical if len(errors.items) == before else None


def _unknown_fields(
    body: dict[str, Any],
    allowed: frozenset[str],
    prefix: str,
    errors: _Collector,
    *,
    regie: str | None = None,
) -> None:
    if body.keys() <= allowed:  # the common case, checked as one set operation
        return
    for position, name in enumerate(body, 1):
        if name in allowed:
            continue
        if name == "callbackUrl":
            errors.add(prefix + name, CALLBACK_URL_MESSAGE)
        elif regie == "centraal" and name == "emailAdres":
            errors.add(
                prefix + name,
                "hoort bij decentrale regie: gebruik /decentraal/notificaties, of geef "
                "identificatieType en identificatieNummer",
            )
        elif regie == "decentraal" and name in ("identificatieType", "identificatieNummer"):
            errors.add(
                prefix + name,
                "hoort bij centrale regie: gebruik /centraal/notificaties, of geef emailAdres",
            )
        else:
            errors.items.append(unknown_member(prefix, position))


def _required_text(
    body: dict[str, Any], name: str, prefix: str, errors: _Collector, *, max_len: int
) -> str | None:
    value = body.get(name)
    if value is None:
        errors.add(prefix + name, "is verplicht")
        return None
    return _text(value, prefix + name, errors, max_len=max_len)


def _text(
    value: Any,
    field: str,
    errors: _Collector,
    *,
    max_len: int,
    allow: frozenset[str] = frozenset(),
    location: Location = "body",
) -> str | None:
    """A string of 1..max_len characters (as sent) without control characters or surrogates,
    NFC-normalised."""
    if not isinstance(value, str):
        errors.add(field, "moet een tekst zijn", location)
        return None
    if _has_bad_chars(value, allow):
        errors.add(field, "mag geen stuurtekens bevatten", location)
        return None
    if not 1 <= len(value) <= max_len:
        errors.add(field, f"moet 1 tot {max_len} tekens lang zijn", location)
        return None
    return unicodedata.normalize("NFC", value)


def _dvref(value: Any, field: str, errors: _Collector, location: Location = "body") -> str | None:
    """A dvRef: 1..DVREF_MAX characters as sent, visible ones and the plain space only
    (str.isprintable, in C: no category C or Z other than U+0020), NFC-normalised."""
    if value is None:
        errors.add(field, "is verplicht", location)
        return None
    if not isinstance(value, str):
        errors.add(field, "moet een tekst zijn", location)
        return None
    if not value.isprintable():
        errors.add(field, DVREF_CHARACTERS_MESSAGE, location)
        return None
    if not 1 <= len(value) <= DVREF_MAX:
        errors.add(field, f"moet 1 tot {DVREF_MAX} tekens lang zijn", location)
        return None
    return value if value.isascii() else unicodedata.normalize("NFC", value)


def _has_bad_chars(value: str, allow: frozenset[str]) -> bool:
    if value.isprintable():  # C speed: no control (Cc) or surrogate (Cs) characters at all
        return False
    return any(
        unicodedata.category(ch) in ("Cc", "Cs") and ch not in allow
        for ch in value
        if not (" " <= ch <= "~")  # fast path for printable ASCII
    )


def _email(body: dict[str, Any], prefix: str, errors: _Collector) -> str | None:
    field = prefix + "emailAdres"
    value = body.get("emailAdres")
    if value is None:
        errors.add(field, "is verplicht")
        return None
    if not isinstance(value, str):
        errors.add(field, "moet een tekst zijn")
        return None
    if len(value) > EMAIL_MAX:
        errors.add(field, f"is langer dan {EMAIL_MAX} tekens")
        return None
    value = unicodedata.normalize("NFC", value)
    # What is sent is judged: the NFC form. NotifyNL's rule first (a 422), then the NMC's
    # own form, stricter in places (no surrounding whitespace, a dot-atom local part of at
    # most 64 characters), for an address NotifyNL would take (a 400).
    if refused_by_notifynl(value):
        errors.refuse_address(field)
        return None
    if not is_valid_email(value):
        errors.add(
            field,
            "is geen geldig e-mailadres (verwacht naam@domein.tld, zonder weergavenaam, "
            "spaties of aanhalingstekens)",
        )
        return None
    local, domain = value.split("@")
    return f"{local}@{domain.lower()}"


def _identificatie(body: dict[str, Any], prefix: str, errors: _Collector) -> dict[str, Any]:
    kind = body.get("identificatieType")
    number = body.get("identificatieNummer")
    out: dict[str, Any] = {"identificatieType": None, "identificatieNummer": None}
    if kind is None:
        errors.add(prefix + "identificatieType", "is verplicht")
    elif kind not in IDENTIFICATIE_TYPES:
        errors.add(prefix + "identificatieType", "moet BSN, KVK of RSIN zijn")
        kind = None
    field = prefix + "identificatieNummer"
    if number is None:
        errors.add(field, "is verplicht")
        return out
    if not isinstance(number, str):
        errors.add(field, "moet een tekst zijn (een getal verliest voorloopnullen)")
        return out
    if kind is None:
        return out  # the number's rule depends on the type, already reported
    if kind == "KVK":
        if len(number) != 8 or not _DIGITS.match(number):
            errors.add(field, "moet voor KVK uit precies 8 cijfers bestaan")
            return out
    elif len(number) != 9 or not _DIGITS.match(number):
        errors.add(field, f"moet voor {kind} uit precies 9 cijfers bestaan")
        return out
    elif number == "000000000" or not elfproef(number):
        errors.add(field, f"is geen geldig {kind}-nummer (voldoet niet aan de elfproef)")
        return out
    return {"identificatieType": kind, "identificatieNummer": number}


def _berichtgegevens(body: dict[str, Any], prefix: str, errors: _Collector) -> dict[str, str]:
    field = prefix + "berichtgegevens"
    value = body.get("berichtgegevens", _ABSENT)
    if value is _ABSENT:
        return {}
    if value is None:
        errors.add(field, NULL_MESSAGE)
        return {}
    if not isinstance(value, dict):
        errors.add(field, "moet een object met tekstwaarden zijn")
        return {}
    if len(value) > BERICHTGEGEVENS_MAX_KEYS:
        errors.add(field, f"mag ten hoogste {BERICHTGEGEVENS_MAX_KEYS} sleutels bevatten")
        return {}
    out: dict[str, str] = {}
    total = 0
    bad_keys = 0
    # A key is the DV's own text (a BSN used as one would be echoed): a violation names the
    # member by its 1-based position in the berichtgegevens, as unknown members are named.
    for position, (key, item) in enumerate(value.items(), 1):
        if not _BERICHTGEGEVENS_KEY.match(key):
            bad_keys += 1
            continue
        member = f"veld {position} van berichtgegevens"
        if not isinstance(item, str):
            errors.add(field, f"{member} moet een tekst zijn (geen getal, object of lijst)")
            continue
        if _has_bad_chars(item, _ALLOWED_IN_TEXT):
            errors.add(field, f"{member} mag geen stuurtekens bevatten (behalve tab en regeleinde)")
            continue
        if len(item) > BERICHTGEGEVENS_VALUE_MAX:
            errors.add(field, f"{member} is langer dan {BERICHTGEGEVENS_VALUE_MAX} tekens")
            continue
        item = unicodedata.normalize("NFC", item)
        total += len(key) + (len(item) if item.isascii() else len(item.encode("utf-8")))
        out[key] = item
    if bad_keys:
        errors.add(
            field,
            f"bevat {bad_keys} ongeldige sleutel(s): een sleutel heeft 1 tot 50 tekens uit "
            "A-Z, a-z, 0-9 en _",
        )
    if total > BERICHTGEGEVENS_TOTAL_MAX_BYTES:
        errors.add(
            field,
            f"is te groot: sleutels en waarden samen ten hoogste "
            f"{BERICHTGEGEVENS_TOTAL_MAX_BYTES} bytes (UTF-8)",
        )
    return out


def _geldig_tot(body: dict[str, Any], prefix: str, errors: _Collector, now: datetime) -> str | None:
    field = prefix + "geldigTot"
    value = body.get("geldigTot", _ABSENT)
    if value is _ABSENT:
        return None
    if value is None:
        errors.add(field, NULL_MESSAGE)
        return None
    moment = parse_rfc3339(value) if isinstance(value, str) else None
    if moment is None:
        errors.add(field, "moet een RFC 3339-tijdstip met tijdzone zijn, bv. 2030-01-31T17:00:00Z")
        return None
    if moment <= now:
        errors.add(field, "moet in de toekomst liggen")
        return None
    return format_utc(moment)


def _optional_uuid(body: dict[str, Any], name: str, prefix: str, errors: _Collector) -> str | None:
    value = body.get(name, _ABSENT)
    if value is _ABSENT:
        return None
    if value is None:
        errors.add(prefix + name, NULL_MESSAGE)
        return None
    if not isinstance(value, str) or not _UUID.match(value):
        errors.add(prefix + name, "moet een UUID zijn")
        return None
    return value.lower()


def format_utc(moment: datetime) -> str:
    """An aware datetime as `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` in UTC, one spelling per instant."""
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}"
    return text + "Z"


def _check_now(now: datetime) -> datetime:
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise TypeError("now must be an aware datetime (the database clock)")
    return now
