"""Unit tests of nmc.crypto (sealing, kek_ring, peppers) and nmc.signing.canonical_json: envelope
encryption, KEK rotation, peppers, payload hash."""

import base64
import hashlib
import hmac
import json
import logging
import unicodedata
import uuid
from dataclasses import replace

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from nmc.crypto.kek_ring import (
    KekRing,
    UnknownKekError,
    kek_ring,
    load_kek_ring,
    new_kek_ring,
    parse_kek_ring,
)
from nmc.crypto.peppers import (
    Peppers,
    dvref_hmac,
    dvref_hmacs_all,
    load_peppers,
    new_peppers,
    parse_peppers,
    peppers,
)
from nmc.crypto.sealing import (
    DecryptionError,
    Sealed,
    _decrypt,
    _encrypt,
    _field_aad,
    _unwrap,
    open_sealed,
    rewrap,
    seal,
)
from nmc.crypto.secret_files import CryptoConfigError
from nmc.signing.canonical_json import canonical_json, payload_hash

PLAIN_MAIL = "geheim.adres@voorbeeld.nl"
PLAIN_VALUE = "Persoonlijke Waarde 12345"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def ring_of(active: str, **keys: bytes) -> KekRing:
    return parse_kek_ring({"active": active, "keys": {k: b64(v) for k, v in keys.items()}})


@pytest.fixture
def ring() -> KekRing:
    return ring_of("kek-1", **{"kek-1": bytes(range(32))})


@pytest.fixture
def pepper_set() -> Peppers:
    return parse_peppers(
        {"dvref": {"current": 2, "versions": {"1": b64(b"\x01" * 32), "2": b64(b"\x02" * 32)}}}
    )


def text_without_surrogates(**kwargs):
    return st.text(alphabet=st.characters(blacklist_categories=("Cs",)), **kwargs)


# --------------------------------------------------------------------------------------------
# KEK ring loading


def write_json(tmp_path, document, name="keks.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_load_kek_ring_from_env_file(tmp_path):
    path = write_json(tmp_path, new_kek_ring("k2025"))
    ring = load_kek_ring(environ={"NMC_KEK_FILE": str(path)})
    assert ring.active_id == "k2025"
    assert len(ring.key("k2025")) == 32


def test_load_kek_ring_without_setting_is_a_clear_error():
    with pytest.raises(CryptoConfigError, match="NMC_KEK_FILE is not set"):
        load_kek_ring(environ={})


def test_load_kek_ring_missing_file(tmp_path):
    with pytest.raises(CryptoConfigError, match="not found"):
        load_kek_ring(tmp_path / "absent.json")


def test_load_kek_ring_not_json(tmp_path):
    path = tmp_path / "keks.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CryptoConfigError, match="not valid JSON"):
        load_kek_ring(path)


@pytest.mark.parametrize("length", [0, 16, 31, 33, 64])
def test_kek_of_wrong_length_is_refused(tmp_path, length):
    path = write_json(tmp_path, {"active": "k", "keys": {"k": b64(b"x" * length)}})
    with pytest.raises(CryptoConfigError, match=f"must be 32 bytes.*got {length}"):
        load_kek_ring(path)


def test_kek_not_base64(tmp_path):
    path = write_json(tmp_path, {"active": "k", "keys": {"k": "***"}})
    with pytest.raises(CryptoConfigError, match="not valid base64"):
        load_kek_ring(path)


def test_active_kek_must_be_in_keys(tmp_path):
    path = write_json(tmp_path, {"active": "k9", "keys": {"k1": b64(b"\0" * 32)}})
    with pytest.raises(CryptoConfigError, match="active KEK 'k9' is not one of the keys"):
        load_kek_ring(path)


@pytest.mark.parametrize(
    "document",
    [[], {"active": "k"}, {"active": "k", "keys": {}}, {"active": "k", "keys": []}],
)
def test_malformed_kek_documents(document):
    with pytest.raises(CryptoConfigError):
        parse_kek_ring(document)


def test_kek_id_must_be_tame():
    with pytest.raises(CryptoConfigError, match="KEK ids"):
        parse_kek_ring({"active": "a b", "keys": {"a b": b64(b"\0" * 32)}})


def test_kek_ring_is_loaded_once(tmp_path, monkeypatch):
    path = write_json(tmp_path, new_kek_ring("first"))
    monkeypatch.setenv("NMC_KEK_FILE", str(path))
    kek_ring.cache_clear()
    try:
        first = kek_ring()
        write_json(tmp_path, new_kek_ring("second"))
        assert kek_ring() is first
        assert kek_ring().active_id == "first"
        kek_ring.cache_clear()
        assert kek_ring().active_id == "second"
    finally:
        kek_ring.cache_clear()


def test_kek_ring_repr_hides_keys(ring):
    text = repr(ring)
    assert b64(ring.key("kek-1")) not in text
    assert "keys" not in text


# --------------------------------------------------------------------------------------------
# Seal and open


def test_seal_open_round_trip(ring):
    nid = uuid.uuid4()
    sealed = seal(nid, 7, PLAIN_MAIL, {"naam": PLAIN_VALUE}, ring=ring)
    opened = open_sealed(nid, 7, sealed, ring=ring)
    assert opened.recipient == PLAIN_MAIL
    assert opened.berichtgegevens == {"naam": PLAIN_VALUE}
    assert sealed.kek_id == "kek-1"


@settings(max_examples=50, deadline=None)
@given(
    recipient=text_without_surrogates(max_size=300),
    gegevens=st.dictionaries(
        st.from_regex(r"[A-Za-z0-9_]{1,50}", fullmatch=True),
        text_without_surrogates(max_size=200),
        max_size=10,
    ),
    dv_id=st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
def test_round_trip_property(recipient, gegevens, dv_id):
    ring = ring_of("k", k=b"\x07" * 32)
    nid = uuid.uuid4()
    opened = open_sealed(nid, dv_id, seal(nid, dv_id, recipient, gegevens, ring=ring), ring=ring)
    # NFC normalisation applies to berichtgegevens (canonical JSON), not to the recipient
    assert opened.recipient == recipient
    assert opened.berichtgegevens == {
        k: unicodedata.normalize("NFC", v) for k, v in gegevens.items()
    }


def test_layout_version_byte_nonce_and_tag(ring):
    sealed = seal(uuid.uuid4(), 1, "a@b.nl", {}, ring=ring)
    assert sealed.recipient[0] == 0x01
    assert len(sealed.recipient) == 1 + 12 + len(b"a@b.nl") + 16
    assert sealed.berichtgegevens[0] == 0x01
    assert len(sealed.berichtgegevens) == 1 + 12 + len(b"{}") + 16
    assert sealed.wrapped_key[0] == 0x01
    assert len(sealed.wrapped_key) == 1 + 12 + 32 + 16
    assert PLAIN_MAIL.encode() not in sealed.recipient


def test_every_seal_uses_a_fresh_data_key_and_nonces(ring):
    nid = uuid.uuid4()
    one = seal(nid, 1, PLAIN_MAIL, {"a": "b"}, ring=ring)
    two = seal(nid, 1, PLAIN_MAIL, {"a": "b"}, ring=ring)
    assert one.recipient != two.recipient
    assert one.wrapped_key != two.wrapped_key
    data_key_one = _unwrap(ring, "kek-1", one.wrapped_key, nid)
    data_key_two = _unwrap(ring, "kek-1", two.wrapped_key, nid)
    assert data_key_one != data_key_two
    assert one.recipient[1:13] != one.berichtgegevens[1:13]  # distinct nonces under one key


def test_ciphertext_swapped_between_fields_does_not_open(ring):
    nid = uuid.uuid4()
    sealed = seal(nid, 1, '{"a":"b"}', {"a": "b"}, ring=ring)
    swapped = Sealed(sealed.berichtgegevens, sealed.recipient, sealed.wrapped_key, sealed.kek_id)
    with pytest.raises(DecryptionError):
        open_sealed(nid, 1, swapped, ring=ring)


def test_ciphertext_bound_to_dv_id(ring):
    nid = uuid.uuid4()
    sealed = seal(nid, 1, PLAIN_MAIL, {}, ring=ring)
    with pytest.raises(DecryptionError):
        open_sealed(nid, 2, sealed, ring=ring)


def test_row_copied_to_another_notificatie_does_not_open(ring):
    nid = uuid.uuid4()
    sealed = seal(nid, 1, PLAIN_MAIL, {}, ring=ring)
    with pytest.raises(DecryptionError):
        open_sealed(uuid.uuid4(), 1, sealed, ring=ring)


def test_field_ciphertext_bound_to_notificatie_even_under_the_same_data_key(ring):
    """Isolate the field AAD: same data key, other notificatie id in the AAD, must fail."""
    key = AESGCM(bytes(32))
    nid, other = uuid.uuid4(), uuid.uuid4()
    blob = _encrypt(key, b"x", _field_aad(nid, 1, "recipient"))
    assert _decrypt(key, blob, _field_aad(nid, 1, "recipient")) == b"x"
    with pytest.raises(DecryptionError):
        _decrypt(key, blob, _field_aad(other, 1, "recipient"))


def test_wrapped_key_bound_to_kek_id_even_with_identical_key_bytes():
    same = b"\x05" * 32
    ring = ring_of("a", a=same, b=same)
    nid = uuid.uuid4()
    sealed = seal(nid, 1, PLAIN_MAIL, {}, ring=ring)
    relabelled = Sealed(sealed.recipient, sealed.berichtgegevens, sealed.wrapped_key, "b")
    with pytest.raises(DecryptionError):
        open_sealed(nid, 1, relabelled, ring=ring)


@pytest.mark.parametrize("position", [0, 1, 13, -1])
def test_tampering_is_detected(ring, position):
    nid = uuid.uuid4()
    sealed = seal(nid, 1, PLAIN_MAIL, {"k": PLAIN_VALUE}, ring=ring)
    blob = bytearray(sealed.recipient)
    blob[position] ^= 0x01
    with pytest.raises(DecryptionError):
        open_sealed(nid, 1, replace(sealed, recipient=bytes(blob)), ring=ring)


def test_truncated_ciphertext(ring):
    nid = uuid.uuid4()
    sealed = seal(nid, 1, PLAIN_MAIL, {}, ring=ring)
    short = Sealed(sealed.recipient[:20], sealed.berichtgegevens, sealed.wrapped_key, "kek-1")
    with pytest.raises(DecryptionError, match="unknown format or is truncated"):
        open_sealed(nid, 1, short, ring=ring)


def test_unknown_kek_id(ring):
    nid = uuid.uuid4()
    sealed = seal(nid, 1, PLAIN_MAIL, {}, ring=ring)
    other = Sealed(sealed.recipient, sealed.berichtgegevens, sealed.wrapped_key, "kek-9")
    with pytest.raises(UnknownKekError, match="kek-9"):
        open_sealed(nid, 1, other, ring=ring)


def test_errors_carry_no_plaintext_and_nothing_is_logged(ring, caplog):
    caplog.set_level(logging.DEBUG)
    nid = uuid.uuid4()
    sealed = seal(nid, 1, PLAIN_MAIL, {"naam": PLAIN_VALUE}, ring=ring)
    opened = open_sealed(nid, 1, sealed, ring=ring)
    assert PLAIN_MAIL not in repr(opened) and PLAIN_VALUE not in repr(opened)
    failures = []
    for attempt in (
        lambda: open_sealed(nid, 2, sealed, ring=ring),
        lambda: seal(nid, 1, PLAIN_MAIL, {"naam": 12345}, ring=ring),
        lambda: payload_hash({"x": 1.5, "y": PLAIN_VALUE}),
        lambda: seal(nid, 1, PLAIN_MAIL + "\ud800", {}, ring=ring),
    ):
        with pytest.raises(Exception) as info:  # any failure; its text is checked below
            attempt()
        failures.append(info.value)
    for exc in failures:
        text = f"{exc} {exc!r} {exc.__cause__!r}"
        assert PLAIN_MAIL not in text
        assert PLAIN_VALUE not in text
        assert "12345" not in text
    assert caplog.records == []


def test_seal_type_checks(ring):
    with pytest.raises(TypeError):
        seal("not-a-uuid", 1, "a", {}, ring=ring)
    with pytest.raises(TypeError):
        seal(uuid.uuid4(), True, "a", {}, ring=ring)
    with pytest.raises(ValueError, match="bigint"):
        seal(uuid.uuid4(), 2**63, "a", {}, ring=ring)
    with pytest.raises(TypeError):
        seal(uuid.uuid4(), 1, b"bytes", {}, ring=ring)


# --------------------------------------------------------------------------------------------
# KEK rotation


def test_rotation_old_data_opens_with_new_ring_and_rewrap_moves_it():
    old_key, new_key = b"\x01" * 32, b"\x02" * 32
    before = ring_of("k1", k1=old_key)
    during = ring_of("k2", k1=old_key, k2=new_key)
    after = ring_of("k2", k2=new_key)
    nid = uuid.uuid4()
    sealed = seal(nid, 3, PLAIN_MAIL, {"a": "b"}, ring=before)

    assert open_sealed(nid, 3, sealed, ring=during).recipient == PLAIN_MAIL
    assert seal(nid, 3, "x", {}, ring=during).kek_id == "k2"

    wrapped, kek_id = rewrap(sealed.wrapped_key, nid, "k1", ring=during)
    assert kek_id == "k2"
    assert wrapped != sealed.wrapped_key
    moved = Sealed(sealed.recipient, sealed.berichtgegevens, wrapped, kek_id)
    assert open_sealed(nid, 3, moved, ring=after).berichtgegevens == {"a": "b"}
    with pytest.raises(UnknownKekError):
        open_sealed(nid, 3, sealed, ring=after)


def test_rewrap_checks_the_notificatie(ring):
    nid = uuid.uuid4()
    sealed = seal(nid, 1, PLAIN_MAIL, {}, ring=ring)
    with pytest.raises(DecryptionError):
        rewrap(sealed.wrapped_key, uuid.uuid4(), "kek-1", ring=ring)


# --------------------------------------------------------------------------------------------
# Peppers and dvRef HMAC


def test_dvref_hmac_matches_the_documented_encoding(pepper_set):
    mac, version = dvref_hmac(42, "zaak-1", pepper_set=pepper_set)
    message = b"nmc/dvref/v1\x00" + (42).to_bytes(8, "big", signed=True) + b"zaak-1"
    assert version == 2
    assert mac == hmac.new(b"\x02" * 32, message, hashlib.sha256).digest()


def test_dvref_hmac_depends_on_dv_dvref_and_version(pepper_set):
    base = dvref_hmac(1, "r", pepper_set=pepper_set)[0]
    assert dvref_hmac(1, "r", pepper_set=pepper_set)[0] == base
    assert dvref_hmac(2, "r", pepper_set=pepper_set)[0] != base
    assert dvref_hmac(1, "s", pepper_set=pepper_set)[0] != base
    older, version = dvref_hmac(1, "r", 1, pepper_set=pepper_set)
    assert version == 1 and older != base


def test_dvref_hmac_is_unambiguous_across_dv_boundaries(pepper_set):
    # A naive "dv_id|dvref" or str(dv_id)+dvref encoding would collide on these.
    assert dvref_hmac(1, "23", pepper_set=pepper_set) != dvref_hmac(12, "3", pepper_set=pepper_set)


def test_dvref_hmac_normalises_to_nfc(pepper_set):
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert (
        dvref_hmac(1, composed, pepper_set=pepper_set)[0]
        == dvref_hmac(1, decomposed, pepper_set=pepper_set)[0]
    )


def test_dvref_hmacs_all_current_first(pepper_set):
    macs = dvref_hmacs_all(5, "r", pepper_set=pepper_set)
    assert [v for _, v in macs] == [2, 1]
    assert macs[1] == dvref_hmac(5, "r", 1, pepper_set=pepper_set)


def test_unknown_pepper_version(pepper_set):
    with pytest.raises(CryptoConfigError, match="version 7"):
        dvref_hmac(1, "r", 7, pepper_set=pepper_set)


def test_missing_purpose():
    ps = parse_peppers({"other": new_peppers()["dvref"]})
    with pytest.raises(CryptoConfigError, match="'dvref'"):
        dvref_hmac(1, "r", pepper_set=ps)


def test_load_peppers_from_env_and_file(tmp_path):
    document = new_peppers()
    from_env = load_peppers(environ={"NMC_PEPPERS": json.dumps(document)})
    path = write_json(tmp_path, document, "peppers.json")
    from_file = load_peppers(environ={"NMC_PEPPERS_FILE": str(path)})
    assert dvref_hmac(1, "r", pepper_set=from_env) == dvref_hmac(1, "r", pepper_set=from_file)


def test_load_peppers_refuses_both_and_neither(tmp_path):
    with pytest.raises(CryptoConfigError, match="not both"):
        load_peppers(environ={"NMC_PEPPERS": "{}", "NMC_PEPPERS_FILE": "x"})
    with pytest.raises(CryptoConfigError, match="neither"):
        load_peppers(environ={})
    with pytest.raises(CryptoConfigError, match="not valid JSON"):
        load_peppers(environ={"NMC_PEPPERS": "{"})
    with pytest.raises(CryptoConfigError, match="not found"):
        load_peppers(environ={"NMC_PEPPERS_FILE": str(tmp_path / "absent")})


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"dvref": {"current": 3, "versions": {"1": b64(b"k" * 32)}}}, "current pepper"),
        ({"dvref": {"current": 1, "versions": {"1": b64(b"k" * 31)}}}, "at least 32 bytes"),
        ({"dvref": {"current": 1, "versions": {"1": "%%%"}}}, "not valid base64"),
        ({"dvref": {"current": 1, "versions": {"one": b64(b"k" * 32)}}}, "positive integers"),
        ({"dvref": {"current": 0, "versions": {"0": b64(b"k" * 32)}}}, "positive integers"),
        ({"dvref": {"current": True, "versions": {"1": b64(b"k" * 32)}}}, "current pepper"),
        ({"dvref": {"current": 1, "versions": {}}}, "non-empty 'versions'"),
        ({}, "non-empty JSON object"),
    ],
)
def test_malformed_peppers(document, message):
    with pytest.raises(CryptoConfigError, match=message):
        parse_peppers(document)


def test_pepper_error_does_not_leak_the_secret():
    secret = b64(b"s" * 20)
    with pytest.raises(CryptoConfigError) as info:
        parse_peppers({"dvref": {"current": 1, "versions": {"1": secret}}})
    assert secret not in str(info.value)


def test_peppers_loaded_once(monkeypatch):
    monkeypatch.setenv("NMC_PEPPERS", json.dumps(new_peppers()))
    monkeypatch.delenv("NMC_PEPPERS_FILE", raising=False)
    peppers.cache_clear()
    try:
        first = peppers()
        monkeypatch.setenv("NMC_PEPPERS", json.dumps(new_peppers()))
        assert peppers() is first
        mac = dvref_hmac(1, "r")[0]
        assert mac == dvref_hmac(1, "r", pepper_set=first)[0]
    finally:
        peppers.cache_clear()


# --------------------------------------------------------------------------------------------
# Canonical JSON and payload hash


def test_payload_hash_is_sha256_of_canonical_json():
    expected = hashlib.sha256('{"a":"é","b":[1,true,null]}'.encode()).digest()
    assert payload_hash({"b": [1, True, None], "a": "e\u0301"}) == expected


def test_payload_hash_ignores_key_order_and_normalisation():
    one = {"dvRef": "r", "berichtgegevens": {"x": "caf\u00e9", "y": "1"}}
    two = {"berichtgegevens": {"y": "1", "x": "cafe\u0301"}, "dvRef": "r"}
    assert payload_hash(one) == payload_hash(two)
    assert payload_hash(one) != payload_hash({**one, "dvRef": "s"})


@given(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=8), st.randoms())
def test_payload_hash_independent_of_insertion_order(mapping, rnd):
    items = list(mapping.items())
    rnd.shuffle(items)
    try:
        expected = payload_hash(mapping)
    except ValueError:
        return  # keys equal after NFC or a lone surrogate: refused either way
    assert payload_hash(dict(items)) == expected


@pytest.mark.parametrize("value", [{"x": 1.0}, {1: "a"}, {"x": b"bytes"}, {"x": {1, 2}}])
def test_canonical_json_refuses_ambiguous_types(value):
    with pytest.raises(TypeError):
        canonical_json(value)


def test_canonical_json_refuses_keys_that_collide_after_nfc():
    with pytest.raises(ValueError, match="NFC"):
        canonical_json({"caf\u00e9": "1", "cafe\u0301": "2"})


def test_canonical_json_has_no_whitespace_and_keeps_unicode():
    assert (
        canonical_json({"b": {"d": 1, "c": "ü"}, "a": []})
        == '{"a":[],"b":{"c":"ü","d":1}}'.encode()
    )
