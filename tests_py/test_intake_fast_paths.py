"""The batch intake's fast paths give the same bytes and verdicts as the plain code they replace.

Stored payload hashes are compared on every replay, so the canonical JSON must not change by a
byte. The references below are the earlier implementations, kept here verbatim.
"""

import hashlib
import hmac
import itertools
import json
import re
import time
import types
import unicodedata
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from starlette.responses import JSONResponse

from nmc.api import validation as v
from nmc.api.ids import new_notificatie_ids
from nmc.api.intake import idempotency_form, sealed_call
from nmc.api.routes_notificaties import batch_accepted
from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring
from nmc.crypto.peppers import (
    dvref_hmac,
    dvref_hmac_many,
    new_peppers,
    parse_peppers,
    payload_hmac,
    payload_hmac_many,
)
from nmc.crypto.sealing import (
    FIELD_BERICHTGEGEVENS,
    DecryptionError,
    Sealed,
    _decrypt,
    _field_aad,
    _unwrap,
    open_recipient,
    open_sealed,
    seal_many,
)
from nmc.crypto.secret_files import CryptoConfigError
from nmc.signing.canonical_json import (
    _flat_object_json,
    berichtgegevens_json,
    canonical_json,
    payload_hash,
)

NOW = datetime(2030, 1, 1, tzinfo=UTC)

# --------------------------------------------------------------------------------------------
# References: the code before the fast paths (nmc.signing.canonical_json, nmc.crypto.sealing,
# nmc.api.validation)


def reference_canonical_json(value: Any) -> bytes:
    text = json.dumps(_normalise(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text contains an unpaired surrogate") from None


def reference_payload_hash(canonical: Mapping[str, Any]) -> bytes:
    if not isinstance(canonical, Mapping):
        raise TypeError("payload_hash takes the canonical request dict")
    return hashlib.sha256(reference_canonical_json(dict(canonical))).digest()


def _normalise(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        return unicodedata.normalize("NFC", value)
    if value is None or kind is bool or kind is int:
        return value
    if kind is dict:
        return _normalise_mapping(value)
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        raise TypeError("floats are not allowed in canonical JSON")
    if isinstance(value, list | tuple):
        return [_normalise(item) for item in value]
    if isinstance(value, Mapping):
        return _normalise_mapping(value)
    raise TypeError(f"{type(value).__name__} is not allowed in canonical JSON")


def _normalise_mapping(value: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError("canonical JSON object keys must be str")
        nkey = unicodedata.normalize("NFC", key)
        if nkey in out:
            raise ValueError("two object keys are equal after NFC normalisation")
        out[nkey] = _normalise(item)
    return out


_LOCAL_PART = re.compile(
    r"\A[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*\Z"
)
_DOMAIN_LABEL = re.compile(r"\A[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")
_TLD = re.compile(r"\A(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})\Z")


def reference_is_valid_email(address: str) -> bool:
    if not isinstance(address, str) or address.count("@") != 1:
        return False
    local, domain = address.split("@")
    if not local or len(local) > 64 or not _LOCAL_PART.match(local):
        return False
    try:
        ascii_domain = domain.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    if len(local) + 1 + len(ascii_domain) > 254 or len(ascii_domain) > 253:
        return False
    labels = ascii_domain.split(".")
    if len(labels) < 2 or not all(_DOMAIN_LABEL.match(label) for label in labels):
        return False
    return bool(_TLD.match(labels[-1]))


# --------------------------------------------------------------------------------------------
# Strategies

# Pieces that test the escaping and the normalisation: quotes, backslash, controls, the
# JSON-special line separators, non-ASCII letters composed and decomposed (NFD, a singleton
# that NFC replaces, a mark alone), a letter whose lower case composes with a following mark,
# an astral character. A lone surrogate comes on its own, now and then.
PIECES = [
    *"aZ0-_. ",
    '"',
    "\\",
    "/",
    "\x00",
    "\x1f",
    "\x7f",
    "\n",
    "\u2028",
    "\u2029",
    "\u00e9",
    "e\u0301",
    "\u212b",
    "A\u030a",
    "\u0301",
    "H\u0331",
    "\u00df",
    "\u0130",
    "\u03a3",
    "\U0001f600",
]
texts = (
    st.lists(st.sampled_from(PIECES), max_size=6).map("".join)
    | st.text(max_size=6)
    | st.just("x\ud800")
)
simple_text = st.text(alphabet="abcXYZ019-_.", max_size=8)
# What a text field of a valid request may hold: no control characters, no surrogates.
field_texts = st.lists(
    st.sampled_from([p for p in PIECES if p.isprintable()]), min_size=1, max_size=6
).map("".join)

scalars = st.none() | st.booleans() | st.integers() | texts
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


def canonical_like():
    """Dicts shaped like the validators' canonical request (and some that are not)."""
    gegevens = st.dictionaries(simple_text | texts, texts, max_size=4)
    members = st.fixed_dictionaries(
        {
            "regie": st.sampled_from(["decentraal", "centraal"]),
            "dvRef": texts,
            "berichtType": texts,
            "berichtgegevens": gegevens,
            "geldigTot": st.none() | texts,
            "dienst": st.none() | texts,
        },
        optional={
            "emailAdres": st.none() | texts,
            "identificatieType": st.none() | texts,
            "identificatieNummer": st.none() | texts,
            "batchId": st.none() | texts,
            "extra": json_values,
            "é": texts,
            "e\u0301": texts,
        },
    )
    return members


def outcome(function, *args, **kwargs):
    """The result, or the type of the exception raised."""
    try:
        return function(*args, **kwargs)
    except Exception as exc:
        return type(exc)


# --------------------------------------------------------------------------------------------
# Canonical JSON and the payload hash


@settings(max_examples=700, deadline=None)
@given(json_values)
@example({"b": [1, True, None], "a": "e\u0301"})
@example({"x": 1.5})
@example({"caf\u00e9": "1", "cafe\u0301": "2"})
@example({1: "a"})
@example({"a": {"b": {"c": "\ud800"}}})
@example("top-level string")
@example(["a", {"b": None}])
def test_canonical_json_is_unchanged(value):
    assert outcome(canonical_json, value) == outcome(reference_canonical_json, value)


@settings(max_examples=700, deadline=None)
@given(canonical_like())
def test_payload_hash_with_encoded_gegevens_is_unchanged(canonical):
    form = {k: item for k, item in canonical.items() if k != "batchId"}
    expected = outcome(reference_payload_hash, form)
    assert outcome(payload_hash, form) == expected
    gegevens = outcome(berichtgegevens_json, canonical["berichtgegevens"])
    if isinstance(gegevens, bytes):
        assert gegevens == reference_canonical_json(canonical["berichtgegevens"])
        assert outcome(payload_hash, form, gegevens_json=gegevens) == expected


def test_payload_hash_fast_path_is_taken_and_matches():
    canonical = {
        "regie": "decentraal",
        "dvRef": "zaak-\u00e9-1",
        "berichtType": "aanslag",
        "emailAdres": "naam@voorbeeld.nl",
        "berichtgegevens": {"naam": 'Jos\u00e9 "Q" \\ \u2028', "b": "x"},
        "geldigTot": None,
        "dienst": None,
    }
    gegevens = berichtgegevens_json(canonical["berichtgegevens"])
    text = _flat_object_json(canonical, "berichtgegevens", gegevens.decode())
    assert text is not None
    assert text.encode() == reference_canonical_json(canonical)


def _validated(body: dict, regie: str) -> dict | None:
    validate = v.validate_decentraal if regie == "decentraal" else v.validate_centraal
    try:
        return validate(body, now=NOW)
    except v.ValidationFailed:
        return None


domains = st.sampled_from(
    [
        "voorbeeld.nl",
        "VOORBEELD.NL",
        "Bücher.example",
        "H\u0331.example",  # lower case composes with the mark: not NFC after .lower()
        "e\u0301.nl",
        "xn--bcher-kva.example",
        "a.b.c.d.nl",
    ]
)
bodies = st.fixed_dictionaries(
    {
        "dvRef": field_texts,
        "berichtType": st.sampled_from(["aanslag", "bericht.v2", "x_y-z"]),
        "berichtgegevens": st.dictionaries(
            st.from_regex(r"[A-Za-z0-9_]{1,10}", fullmatch=True), texts, max_size=4
        ),
    },
    optional={
        "geldigTot": st.sampled_from(["2031-01-01T00:00:00Z", "2031-06-01T12:30:00.5+02:00"]),
        "dienst": field_texts,
        "batchId": st.just("6F9619FF-8B86-D011-B42D-00C04FC964FF"),
    },
)


@settings(max_examples=300, deadline=None)
@given(body=bodies, local=st.from_regex(r"[a-z0-9.+]{1,10}", fullmatch=True), domain=domains)
def test_sealed_call_matches_the_plain_hash_and_opens(body, local, domain):
    """Validated requests through sealed_call: the hash the plain code gives, and ciphertexts
    that open to the recipient and berichtgegevens."""
    decentraal = _validated({**body, "emailAdres": f"{local}@{domain}"}, "decentraal")
    centraal = _validated(
        {**body, "identificatieType": "BSN", "identificatieNummer": "111222333"}, "centraal"
    )
    canonicals = [c for c in (decentraal, centraal) if c is not None]
    assume(canonicals)
    ring = parse_kek_ring(new_kek_ring())
    peppers = parse_peppers(new_peppers())
    services = types.SimpleNamespace(ring=ring, peppers=peppers, pepper_versie=1)
    items = sealed_call(services, 7, "decentraal", None, canonicals, "trace")
    payload_key = peppers.for_purpose("payload").versions[1]
    assert items.payload_pepper_versie == 1
    for i, canonical in enumerate(canonicals):
        # A keyed HMAC over the canonical request the plain code gives, never its SHA-256.
        plain = reference_canonical_json(dict(idempotency_form(canonical)))
        message = b"nmc/payload/v1\x00" + (7).to_bytes(8, "big", signed=True) + plain
        assert items.payload_hmacs[i] == hmac.new(payload_key, message, hashlib.sha256).digest()
        assert items.payload_hmacs[i] != reference_payload_hash(idempotency_form(canonical))
        assert items.dvref_hmacs[i] == dvref_hmac(7, canonical["dvRef"], 1, pepper_set=peppers)[0]
        sealed = Sealed(items.ontvangers[i], items.gegevens[i], items.sleutels[i], ring.active_id)
        opened = open_sealed(items.ids[i], 7, sealed, ring=ring)
        assert opened.recipient == v.recipient_of(canonical)
        assert opened.berichtgegevens == canonical["berichtgegevens"]
        # The stored plaintext is the canonical JSON, byte for byte.
        data_key = _unwrap(ring, ring.active_id, items.sleutels[i], items.ids[i])
        gegevens = _decrypt(
            AESGCM(data_key),
            items.gegevens[i],
            _field_aad(items.ids[i], 7, FIELD_BERICHTGEGEVENS),
        )
        assert gegevens == reference_canonical_json(canonical["berichtgegevens"])


# --------------------------------------------------------------------------------------------
# E-mail check


email_chars = st.sampled_from([*"abAB09-._+@", "é", "ß", "İ", "\u3002", "\u0331", "ü"])
labels = st.text(alphabet="abz09-", min_size=0, max_size=70)


@settings(max_examples=1500, deadline=None)
@given(
    st.text(alphabet=email_chars, max_size=40)
    | st.builds(
        lambda local, parts: f"{local}@{'.'.join(parts)}",
        st.from_regex(r"[a-z0-9.]{0,70}", fullmatch=True),
        st.lists(labels | st.text(alphabet=email_chars, max_size=8), min_size=0, max_size=5),
    )
)
@example("a@" + ".".join(["b" * 63, "c" * 63, "d" * 63, "e" * 61]))
@example("a@" + "b" * 64 + ".nl")
@example("a@b..nl")
@example("a@b.nl.")
@example("a@.nl")
@example("a@xn--p1ai.xn--")
@example("a@b.xn--a-")
@example("a@b.xn--a-b")
@example("a@b.xn-a")
@example("a@b.xn--p1ai")
@example("a@b.n1")
def test_is_valid_email_verdict_is_unchanged(address):
    assert v.is_valid_email(address) == reference_is_valid_email(address)


def reference_elfproef(digits: str) -> bool:
    if len(digits) != 9 or not re.match(r"\A[0-9]+\Z", digits):
        return False
    weights = (9, 8, 7, 6, 5, 4, 3, 2, -1)
    return sum(int(d) * w for d, w in zip(digits, weights, strict=True)) % 11 == 0


@settings(max_examples=1000, deadline=None)
@given(
    st.from_regex(r"[0-9]{9}", fullmatch=True) | st.text(alphabet="0123456789a\u0663", max_size=10)
)
@example("111222333")
@example("123456782")
@example("000000000")
@example("\u0661\u0661\u0661222333")  # Arabic-Indic digits: not [0-9]
def test_elfproef_verdict_is_unchanged(digits):
    assert v.elfproef(digits) == reference_elfproef(digits)


# --------------------------------------------------------------------------------------------
# Sealing, HMAC, ids, the answer


def test_seal_many_gives_fresh_keys_and_nonces_and_binds_each_entry():
    ring = parse_kek_ring(new_kek_ring())
    ids = [uuid.uuid4() for _ in range(50)]
    entries = [
        (i, f"r{n}@voorbeeld.nl", berichtgegevens_json({"n": str(n)})) for n, i in enumerate(ids)
    ]
    columns = seal_many(9, entries, ring=ring)
    assert columns.kek_id == ring.active_id
    keys = {
        _unwrap(ring, ring.active_id, w, i) for w, i in zip(columns.wrapped_keys, ids, strict=True)
    }
    assert len(keys) == len(ids)
    nonces = [
        blob[1:13]
        for blob in (*columns.recipients, *columns.berichtgegevens, *columns.wrapped_keys)
    ]
    assert len(set(nonces)) == 3 * len(ids)
    for n, i in enumerate(ids):
        sealed = Sealed(
            columns.recipients[n],
            columns.berichtgegevens[n],
            columns.wrapped_keys[n],
            ring.active_id,
        )
        assert open_sealed(i, 9, sealed, ring=ring).recipient == f"r{n}@voorbeeld.nl"
        assert (
            open_recipient(
                i, 9, columns.recipients[n], columns.wrapped_keys[n], ring.active_id, ring=ring
            )
            == f"r{n}@voorbeeld.nl"
        )
    swapped = Sealed(
        columns.recipients[1], columns.berichtgegevens[1], columns.wrapped_keys[1], ring.active_id
    )
    with pytest.raises(DecryptionError):
        open_sealed(ids[0], 9, swapped, ring=ring)


def test_seal_many_type_checks():
    ring = parse_kek_ring(new_kek_ring())
    with pytest.raises(TypeError):
        seal_many(1, [(uuid.uuid4(), "a", {"not": "bytes"})], ring=ring)
    with pytest.raises(TypeError):
        seal_many(1, [("not-a-uuid", "a", b"{}")], ring=ring)
    assert seal_many(1, [], ring=ring).recipients == []


@given(st.lists(texts, max_size=10), st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_dvref_hmac_many_matches_the_definition(dvrefs, dv_id):
    peppers = parse_peppers(new_peppers())
    key = peppers.for_purpose("dvref").versions[1]
    try:
        macs = dvref_hmac_many(dv_id, dvrefs, 1, pepper_set=peppers)
    except ValueError:  # a lone surrogate, refused as before
        assert any("\ud800" <= ch <= "\udfff" for d in dvrefs for ch in d)
        return
    for dvref, mac in zip(dvrefs, macs, strict=True):
        message = (
            b"nmc/dvref/v1\x00"
            + dv_id.to_bytes(8, "big", signed=True)
            + unicodedata.normalize("NFC", dvref).encode()
        )
        assert mac == hmac.new(key, message, hashlib.sha256).digest()
        assert mac == dvref_hmac(dv_id, dvref, 1, pepper_set=peppers)[0]


@given(st.lists(st.binary(max_size=50), max_size=10), st.integers(-(2**63), 2**63 - 1))
def test_payload_hmac_many_matches_the_definition(payloads, dv_id):
    peppers = parse_peppers(new_peppers())
    key = peppers.for_purpose("payload").versions[1]
    macs = payload_hmac_many(dv_id, payloads, 1, pepper_set=peppers)
    for payload, mac in zip(payloads, macs, strict=True):
        message = b"nmc/payload/v1\x00" + dv_id.to_bytes(8, "big", signed=True) + payload
        assert mac == hmac.new(key, message, hashlib.sha256).digest()
    with pytest.raises(CryptoConfigError):
        payload_hmac_many(dv_id, payloads, 2, pepper_set=peppers)
    request = {"dvRef": "e\u0301", "b": None}
    assert payload_hmac(dv_id, request, pepper_set=peppers) == (
        payload_hmac_many(dv_id, [canonical_json(request)], 1, pepper_set=peppers)[0],
        1,
    )


def test_new_notificatie_ids_are_uuidv7_ascending_and_unique():
    before = time.time_ns() // 1_000_000
    ids = new_notificatie_ids(5000)
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert all(a.int < b.int for a, b in itertools.pairwise(ids))
    for i in ids:
        assert i.version == 7
        assert i.variant == uuid.RFC_4122
        assert before <= i.int >> 80 <= after
    assert new_notificatie_ids(0) == []
    # The random part does vary (74 bits: rand_a and rand_b both used).
    assert len({i.int >> 64 & 0xFFF for i in ids}) > 1000
    assert len({i.int & (1 << 62) - 1 for i in ids}) == len(ids)


@pytest.mark.parametrize("batch_id", [None, "6f9619ff-8b86-d011-b42d-00c04fc964ff"])
@pytest.mark.parametrize("count", [0, 1, 3])
def test_batch_answer_is_what_jsonresponse_renders(batch_id, count):
    ids = [str(uuid.uuid4()) for _ in range(count)]
    expected = JSONResponse(
        {"batchId": batch_id, "notificaties": [{"notificatieId": i} for i in ids]},
        status_code=202,
    )
    answer = batch_accepted(batch_id, ids)
    assert answer.body == expected.body
    assert answer.status_code == 202
    assert answer.headers.items() == expected.headers.items()
