"""Unit tests of nmc.api.validation: every rule, all violations at once, no echoed values."""

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nmc.api import validation as v
from nmc.api.validation import ValidationFailed
from nmc.signing.canonical_json import payload_hash

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def decentraal(**overrides):
    body = {"dvRef": "zaak-1", "berichtType": "herinnering", "emailAdres": "info@voorbeeld.nl"}
    body.update(overrides)
    return {k: val for k, val in body.items() if val is not ...}


def centraal(**overrides):
    body = {
        "dvRef": "zaak-1",
        "berichtType": "herinnering",
        "identificatieType": "BSN",
        "identificatieNummer": "111222333",
    }
    body.update(overrides)
    return {k: val for k, val in body.items() if val is not ...}


def violations_of(call):
    with pytest.raises(ValidationFailed) as info:
        call()
    return info.value.violations


def fields(violations):
    return [item["field"] for item in violations]


def only_violation(call):
    found = violations_of(call)
    assert len(found) == 1, found
    return found[0]


# --------------------------------------------------------------------------------------------
# Happy paths and the canonical form


def test_minimal_decentraal_canonical_form():
    assert v.validate_decentraal(decentraal(), now=NOW) == {
        "regie": "decentraal",
        "dvRef": "zaak-1",
        "berichtType": "herinnering",
        "emailAdres": "info@voorbeeld.nl",
        "berichtgegevens": {},
        "geldigTot": None,
        "batchId": None,
        "dienst": None,
    }


def test_full_centraal_canonical_form():
    body = centraal(
        berichtgegevens={"naam": "cafe\u0301", "regel": "a\nb\tc"},
        geldigTot="2025-06-02T14:30:00.1234567+02:00",
        batchId="5D1F0A52-3F7E-4C53-B6F1-2A7E9B0C4D88",
        dienst="Belastingen",
    )
    assert v.validate_centraal(body, now=NOW) == {
        "regie": "centraal",
        "dvRef": "zaak-1",
        "berichtType": "herinnering",
        "identificatieType": "BSN",
        "identificatieNummer": "111222333",
        "berichtgegevens": {"naam": "caf\u00e9", "regel": "a\nb\tc"},
        "geldigTot": "2025-06-02T12:30:00.123456Z",
        "batchId": "5d1f0a52-3f7e-4c53-b6f1-2a7e9b0c4d88",
        "dienst": "Belastingen",
    }


@pytest.mark.parametrize("name", ["berichtgegevens", "geldigTot", "batchId", "dienst"])
def test_null_for_an_optional_field_is_refused(name):
    # Not nullable in the contract: leave the field out instead.
    for validate, body in ((v.validate_decentraal, decentraal), (v.validate_centraal, centraal)):
        found = only_violation(
            lambda validate=validate, body=body: validate(body(**{name: None}), now=NOW)
        )
        assert found == {"field": name, "in": "body", "message": v.NULL_MESSAGE}


def test_null_batch_ids_in_a_batch_are_refused():
    found = violations_of(
        lambda: v.validate_batch(
            {"batchId": None, "notificaties": [decentraal(), decentraal(dvRef="b", batchId=None)]},
            "decentraal",
            now=NOW,
        )
    )
    assert sorted(fields(found)) == ["batchId", "notificaties[1].batchId"]
    assert {item["message"] for item in found} == {v.NULL_MESSAGE}


def test_equivalent_requests_hash_equally_and_different_ones_do_not():
    one = decentraal(geldigTot="2025-06-02T14:00:00+02:00", emailAdres="Jan@Voorbeeld.NL")
    two = dict(
        reversed(
            list(
                decentraal(geldigTot="2025-06-02T12:00:00Z", emailAdres="Jan@voorbeeld.nl").items()
            )
        )
    )
    hash_one = payload_hash(v.validate_decentraal(one, now=NOW))
    assert hash_one == payload_hash(v.validate_decentraal(two, now=NOW))
    other = decentraal(geldigTot="2025-06-02T12:00:01Z", emailAdres="Jan@voorbeeld.nl")
    assert hash_one != payload_hash(v.validate_decentraal(other, now=NOW))


def test_regie_is_part_of_the_canonical_form():
    assert v.validate_decentraal(decentraal(), now=NOW)["regie"] == "decentraal"
    assert v.validate_centraal(centraal(), now=NOW)["regie"] == "centraal"


def test_recipient_of():
    assert v.recipient_of(v.validate_decentraal(decentraal(), now=NOW)) == "info@voorbeeld.nl"
    assert v.recipient_of(v.validate_centraal(centraal(), now=NOW)) == "BSN:111222333"


# --------------------------------------------------------------------------------------------
# Shape


@pytest.mark.parametrize("body", [None, [], "x", 3, True])
def test_body_must_be_an_object(body):
    found = only_violation(lambda: v.validate_decentraal(body, now=NOW))
    assert found == {"field": "", "in": "body", "message": "moet een JSON-object zijn"}


def test_all_violations_are_reported_at_once():
    found = violations_of(lambda: v.validate_decentraal({}, now=NOW))
    assert sorted(fields(found)) == ["berichtType", "dvRef", "emailAdres"]
    assert all(item["in"] == "body" and item["message"] == "is verplicht" for item in found)
    assert all(set(item) == {"field", "in", "message"} for item in found)


def test_many_different_violations_together():
    body = centraal(
        dvRef="",
        berichtType="met spatie",
        identificatieType="BSN",
        identificatieNummer="123456789",
        geldigTot="gisteren",
        batchId="geen-uuid",
        dienst="",
        berichtgegevens={"ok": 1},
        extra="x",
    )
    found = violations_of(lambda: v.validate_centraal(body, now=NOW))
    assert sorted(fields(found)) == sorted(
        [
            "",  # the unknown member `extra`, on the body as a whole
            "dvRef",
            "berichtType",
            "identificatieNummer",
            "berichtgegevens",  # its first member, by position
            "geldigTot",
            "batchId",
            "dienst",
        ]
    )


def test_unknown_field_refused_by_its_position():
    found = only_violation(lambda: v.validate_decentraal(decentraal(prioriteit="hoog"), now=NOW))
    assert found == {
        "field": "",
        "in": "body",
        "message": "bevat een onbekend veld (veld 4 van het object)",
    }


@pytest.mark.parametrize("name", ["jan.jansen@voorbeeld.nl", "999993653", "prioriteit", "dvref"])
def test_an_unknown_field_name_is_never_repeated(name):
    found = only_violation(lambda: v.validate_decentraal(decentraal(**{name: "x"}), now=NOW))
    assert name not in json.dumps(found)
    assert found["field"] == ""


def test_callback_url_refused_with_pointer_to_onboarding():
    body = decentraal(callbackUrl="https://dv.example/hook")
    found = only_violation(lambda: v.validate_decentraal(body, now=NOW))
    assert found["field"] == "callbackUrl"
    assert "webhook" in found["message"] and "onboarding" in found["message"]
    assert "dv.example" not in found["message"]


def test_regie_mixups_get_helpful_messages():
    found = only_violation(lambda: v.validate_centraal(centraal(emailAdres="a@b.nl"), now=NOW))
    assert found["field"] == "emailAdres" and "/decentraal/notificaties" in found["message"]
    found = violations_of(
        lambda: v.validate_decentraal(
            decentraal(identificatieType="BSN", identificatieNummer="111222333"), now=NOW
        )
    )
    assert sorted(fields(found)) == ["identificatieNummer", "identificatieType"]
    assert all("/centraal/notificaties" in item["message"] for item in found)


# --------------------------------------------------------------------------------------------
# e-mail


@pytest.mark.parametrize(
    "address",
    [
        "a@b.nl",
        "first.last+tag@sub.voorbeeld.nl",
        "o'brien@example.ie",
        "x_y-z@a-b.co",
        "user@xn--caf-dma.nl",
        "user@caf\u00e9.nl",
        "!#$%&'*+/=?^_`{|}~-@example.com",
        "a@" + "d" * 63 + ".nl",
    ],
)
def test_valid_email(address):
    assert v.is_valid_email(address)
    v.validate_decentraal(decentraal(emailAdres=address), now=NOW)


@pytest.mark.parametrize(
    "address",
    [
        "plainaddress",
        "@voorbeeld.nl",
        "jan@",
        "jan@localhost",
        "jan@voorbeeld",
        "Jan <jan@voorbeeld.nl>",
        '"jan"@voorbeeld.nl',
        "jan..jansen@voorbeeld.nl",
        ".jan@voorbeeld.nl",
        "jan.@voorbeeld.nl",
        "jan@-voorbeeld.nl",
        "jan@voorbeeld-.nl",
        "jan@voor_beeld.nl",
        "jan@voorbeeld.123",
        "jan@voorbeeld..nl",
        "jan@.voorbeeld.nl",
        "jan@voorbeeld.nl.",
        "jan jansen@voorbeeld.nl",
        "jan@[127.0.0.1]",
        " jan@voorbeeld.nl",
        "jan@voorbeeld.nl ",
        "j\u00e4n@voorbeeld.nl",
        "jan@b@voorbeeld.nl",
        "jan;x@voorbeeld.nl",
        "a" * 65 + "@voorbeeld.nl",
        "a@" + "d" * 64 + ".nl",
        "jan@voorbeeld.n",
    ],
)
def test_invalid_email(address):
    assert not v.is_valid_email(address)
    found = only_violation(lambda: v.validate_decentraal(decentraal(emailAdres=address), now=NOW))
    assert found["field"] == "emailAdres"
    assert address.strip() not in found["message"]


@pytest.mark.parametrize(
    "address",
    ["jan@voor---beeld.nl", "a@xn---x.nl", "a@b.xn--p1--ai", "plainaddress", "jan@voorbeeld..nl"],
)
def test_an_address_notifynl_refuses_is_address_refused(address):
    with pytest.raises(v.AddressRefused) as refused:
        v.validate_decentraal(decentraal(emailAdres=address), now=NOW)
    assert refused.value.violations == [
        {"field": "emailAdres", "in": "body", "message": v.ADDRESS_REFUSED_MESSAGE}
    ]


@pytest.mark.parametrize("address", [" jan@voorbeeld.nl", ".jan@voorbeeld.nl", "jan.@x.nl"])
def test_an_address_only_the_nmc_form_refuses_is_a_plain_violation(address):
    with pytest.raises(v.ValidationFailed) as failed:
        v.validate_decentraal(decentraal(emailAdres=address), now=NOW)
    assert type(failed.value) is v.ValidationFailed


def test_a_refused_address_beside_a_shape_violation_is_a_plain_violation():
    body = decentraal(emailAdres="plainaddress", dvRef="")
    with pytest.raises(v.ValidationFailed) as failed:
        v.validate_decentraal(body, now=NOW)
    assert type(failed.value) is v.ValidationFailed
    assert sorted(fields(failed.value.violations)) == ["dvRef", "emailAdres"]


def test_email_length_limit_is_254():
    local = "a" * 64
    domain_254 = ".".join(["b" * 61, "c" * 61, "d" * 61]) + ".nl"  # 188 characters
    assert len(local + "@" + domain_254) == 253
    ok = local + "@x" + domain_254
    assert len(ok) == 254
    assert v.validate_decentraal(decentraal(emailAdres=ok), now=NOW)["emailAdres"] == ok
    too_long = local + "@xy" + domain_254
    found = only_violation(lambda: v.validate_decentraal(decentraal(emailAdres=too_long), now=NOW))
    assert "254" in found["message"]


def test_email_must_be_a_string():
    found = only_violation(
        lambda: v.validate_decentraal(decentraal(emailAdres=["a@b.nl"]), now=NOW)
    )
    assert found["message"] == "moet een tekst zijn"


# --------------------------------------------------------------------------------------------
# BSN, RSIN, KVK


@pytest.mark.parametrize(
    ("kind", "number"),
    [
        ("BSN", "111222333"),
        ("BSN", "123456782"),
        ("RSIN", "002564440"),
        ("KVK", "12345678"),
        ("KVK", "00000001"),
    ],
)
def test_valid_identification(kind, number):
    canonical = v.validate_centraal(
        centraal(identificatieType=kind, identificatieNummer=number), now=NOW
    )
    assert (canonical["identificatieType"], canonical["identificatieNummer"]) == (kind, number)


@pytest.mark.parametrize(
    ("kind", "number", "words"),
    [
        ("BSN", "123456789", "elfproef"),
        ("RSIN", "002564441", "elfproef"),
        ("BSN", "000000000", "elfproef"),
        ("BSN", "12345678", "9 cijfers"),
        ("BSN", "1234567890", "9 cijfers"),
        ("BSN", "12345678a", "9 cijfers"),
        ("BSN", "11122233\u0663", "9 cijfers"),  # Arabic-Indic digit: not an ASCII digit
        ("RSIN", "", "9 cijfers"),
        ("KVK", "1234567", "8 cijfers"),
        ("KVK", "123456789", "8 cijfers"),
        ("KVK", "1234 567", "8 cijfers"),
    ],
)
def test_invalid_identification_number(kind, number, words):
    body = centraal(identificatieType=kind, identificatieNummer=number)
    found = only_violation(lambda: v.validate_centraal(body, now=NOW))
    assert found["field"] == "identificatieNummer"
    assert words in found["message"]
    if number:
        assert number not in found["message"]


def test_identification_number_must_be_a_string():
    body = centraal(identificatieNummer=111222333)
    found = only_violation(lambda: v.validate_centraal(body, now=NOW))
    assert "tekst" in found["message"]


@pytest.mark.parametrize("kind", ["bsn", "PASPOORT", "", 1])
def test_identification_type_must_be_known(kind):
    found = only_violation(lambda: v.validate_centraal(centraal(identificatieType=kind), now=NOW))
    assert found == {
        "field": "identificatieType",
        "in": "body",
        "message": "moet BSN, KVK of RSIN zijn",
    }


def test_identification_both_missing():
    body = centraal(identificatieType=..., identificatieNummer=...)
    assert sorted(fields(violations_of(lambda: v.validate_centraal(body, now=NOW)))) == [
        "identificatieNummer",
        "identificatieType",
    ]


def reference_elfproef(number: str) -> bool:
    total = sum(int(number[i]) * (9 - i) for i in range(8)) - int(number[8])
    return total % 11 == 0


@given(st.from_regex(r"[0-9]{9}", fullmatch=True))
def test_elfproef_matches_reference(number):
    assert v.elfproef(number) == reference_elfproef(number)


@given(st.from_regex(r"[0-9]{8}", fullmatch=True))
def test_at_most_one_check_digit_fits(prefix):
    fitting = [d for d in "0123456789" if v.elfproef(prefix + d)]
    assert len(fitting) <= 1


# --------------------------------------------------------------------------------------------
# dvRef, berichtType, dienst, batchId


def test_dvref_length_bounds():
    assert v.validate_decentraal(decentraal(dvRef="r" * 200), now=NOW)["dvRef"] == "r" * 200
    for bad in ("", "r" * 201):
        found = only_violation(
            lambda bad=bad: v.validate_decentraal(decentraal(dvRef=bad), now=NOW)
        )
        assert found == {
            "field": "dvRef",
            "in": "body",
            "message": "moet 1 tot 200 tekens lang zijn",
        }


def test_lengths_count_the_code_points_the_dv_sent_as_the_schema_does():
    # maxLength in the OpenAPI counts the code points of the string sent, before the NMC
    # normalises it to NFC: the schema's verdict and the NMC's are the same.
    decomposed = "e\u0301" * 100  # 200 code points sent, 100 after NFC
    assert v.validate_decentraal(decentraal(dvRef=decomposed), now=NOW)["dvRef"] == "\u00e9" * 100
    refused = only_violation(
        lambda: v.validate_decentraal(decentraal(dvRef=decomposed + "e\u0301"), now=NOW)
    )
    assert refused["message"] == "moet 1 tot 200 tekens lang zijn"
    growing = "\u0958" * 200  # 200 code points sent, 400 after NFC (a composition exclusion)
    assert len(v.validate_decentraal(decentraal(dvRef=growing), now=NOW)["dvRef"]) == 400
    assert v.validate_decentraal(decentraal(dienst="\u0958" * 100), now=NOW)["dienst"]
    gegevens = {"tekst": "\u0958" * 2000}
    assert v.validate_decentraal(decentraal(berichtgegevens=gegevens), now=NOW)
    lijst = v.validate_lijst_query([("dvRef", growing)])
    assert lijst["dvRef"] == v.validate_decentraal(decentraal(dvRef=growing), now=NOW)["dvRef"]


@pytest.mark.parametrize("bad", ["a\x00b", "a\nb", "a\tb", "a\x7fb", "a\x85b", "a\ud800b"])
def test_dvref_refuses_control_characters(bad):
    found = only_violation(lambda: v.validate_decentraal(decentraal(dvRef=bad), now=NOW))
    assert found["message"] == v.DVREF_CHARACTERS_MESSAGE


@pytest.mark.parametrize(
    "bad",
    [
        "zaak\u200bX",  # zero width space (Cf)
        "zaak\u202eX",  # right-to-left override (Cf)
        "\ufeffzaakX",  # byte order mark (Cf)
        "zaak\u00adX",  # soft hyphen (Cf)
        "zaak\u2028X",  # line separator (Zl)
        "zaak\u2029X",  # paragraph separator (Zp)
        "zaak\u00a0X",  # no-break space (Zs)
        "zaak\u3000X",  # ideographic space (Zs)
        "zaak\ue000X",  # private use (Co)
        "zaak\u0378X",  # unassigned (Cn)
    ],
)
def test_dvref_refuses_invisible_format_and_separator_characters(bad):
    # Two dvRefs that look the same must be the same dvRef: every character of Unicode
    # category C or Z is refused, except the plain space U+0020.
    found = only_violation(lambda: v.validate_decentraal(decentraal(dvRef=bad), now=NOW))
    assert found == {"field": "dvRef", "in": "body", "message": v.DVREF_CHARACTERS_MESSAGE}
    query = violations_of(lambda: v.validate_lijst_query([("dvRef", bad)]))
    assert query == [{"field": "dvRef", "in": "query", "message": v.DVREF_CHARACTERS_MESSAGE}]


@pytest.mark.parametrize("bad", [1, ["a"], {"a": 1}, True])
def test_dvref_must_be_text(bad):
    found = only_violation(lambda: v.validate_decentraal(decentraal(dvRef=bad), now=NOW))
    assert found["message"] == "moet een tekst zijn"


def test_dvref_may_hold_unicode_and_spaces():
    assert v.validate_decentraal(decentraal(dvRef="Zaak 12 \u2013 caf\u00e9"), now=NOW)["dvRef"]


@pytest.mark.parametrize("good", ["a", "herinnering.aanslag_v2-NL", "x" * 100])
def test_berichttype_valid(good):
    assert v.validate_decentraal(decentraal(berichtType=good), now=NOW)["berichtType"] == good


@pytest.mark.parametrize("bad", ["", "x" * 101, "met spatie", "é", "a/b"])
def test_berichttype_invalid(bad):
    found = only_violation(lambda: v.validate_decentraal(decentraal(berichtType=bad), now=NOW))
    assert found["field"] == "berichtType"


def test_dienst_bounds():
    assert v.validate_decentraal(decentraal(dienst="d" * 100), now=NOW)["dienst"] == "d" * 100
    for bad in ("", "d" * 101, "a\x01", 5):
        found = only_violation(
            lambda bad=bad: v.validate_decentraal(decentraal(dienst=bad), now=NOW)
        )
        assert found["field"] == "dienst"


@pytest.mark.parametrize(
    "bad",
    ["geen-uuid", "5d1f0a523f7e4c53b6f12a7e9b0c4d88", "{5d1f0a52-3f7e-4c53-b6f1-2a7e9b0c4d88}", 5],
)
def test_batch_id_must_be_a_uuid(bad):
    found = only_violation(lambda: v.validate_decentraal(decentraal(batchId=bad), now=NOW))
    assert found == {"field": "batchId", "in": "body", "message": "moet een UUID zijn"}


# --------------------------------------------------------------------------------------------
# berichtgegevens


def test_berichtgegevens_must_be_an_object():
    found = only_violation(
        lambda: v.validate_decentraal(decentraal(berichtgegevens=["a"]), now=NOW)
    )
    assert found["field"] == "berichtgegevens"


def test_berichtgegevens_max_50_keys():
    fifty = {f"k{i}": "v" for i in range(50)}
    assert (
        len(v.validate_decentraal(decentraal(berichtgegevens=fifty), now=NOW)["berichtgegevens"])
        == 50
    )
    found = only_violation(
        lambda: v.validate_decentraal(decentraal(berichtgegevens={**fifty, "k50": "v"}), now=NOW)
    )
    assert "50 sleutels" in found["message"]


def test_berichtgegevens_bad_keys_are_counted_not_repeated():
    gegevens = {"": "a", "met spatie": "b", "k" * 51: "c", "jan@voorbeeld.nl": "d", "goed": "e"}
    found = only_violation(
        lambda: v.validate_decentraal(decentraal(berichtgegevens=gegevens), now=NOW)
    )
    assert found["field"] == "berichtgegevens"
    assert "4 ongeldige sleutel" in found["message"]
    assert "jan@voorbeeld.nl" not in json.dumps(found)


def test_berichtgegevens_values():
    gegevens = {
        "getal": 5,
        "lijst": [],
        "nul": None,
        "lang": "x" * 2001,
        "stuur": "a\x00",
        "ok": "x" * 2000,
    }
    found = violations_of(
        lambda: v.validate_decentraal(decentraal(berichtgegevens=gegevens), now=NOW)
    )
    # Each by its position in the berichtgegevens, never by its key.
    assert fields(found) == ["berichtgegevens"] * 5
    assert [f["message"] for f in found] == [
        "veld 1 van berichtgegevens moet een tekst zijn (geen getal, object of lijst)",
        "veld 2 van berichtgegevens moet een tekst zijn (geen getal, object of lijst)",
        "veld 3 van berichtgegevens moet een tekst zijn (geen getal, object of lijst)",
        "veld 4 van berichtgegevens is langer dan 2000 tekens",
        "veld 5 van berichtgegevens mag geen stuurtekens bevatten (behalve tab en regeleinde)",
    ]


def test_berichtgegevens_total_size():
    just_fits = {f"k{i}": "x" * (2000 - 2) for i in range(8)}  # 8 * 2000 = 16000 bytes
    v.validate_decentraal(decentraal(berichtgegevens=just_fits), now=NOW)
    too_big = {f"k{i}": "x" * 2000 for i in range(9)}
    found = only_violation(
        lambda: v.validate_decentraal(decentraal(berichtgegevens=too_big), now=NOW)
    )
    assert found["field"] == "berichtgegevens" and "16384 bytes" in found["message"]


def test_berichtgegevens_size_counts_utf8_bytes():
    # 1,000 euro signs are 1,000 characters but 3,000 bytes
    gegevens = {f"k{i}": "\u20ac" * 1000 for i in range(6)}  # 6 * (2 + 3000) > 16384
    found = only_violation(
        lambda: v.validate_decentraal(decentraal(berichtgegevens=gegevens), now=NOW)
    )
    assert "bytes" in found["message"]


# --------------------------------------------------------------------------------------------
# geldigTot


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("2025-06-01T12:00:01Z", "2025-06-01T12:00:01Z"),
        ("2025-06-01t12:00:01z", "2025-06-01T12:00:01Z"),
        ("2025-06-01T14:00:01+02:00", "2025-06-01T12:00:01Z"),
        ("2025-06-01T11:00:01-01:00", "2025-06-01T12:00:01Z"),
        ("2025-06-01T12:00:00.5Z", "2025-06-01T12:00:00.500000Z"),
        ("2025-06-01T12:00:00.000001Z", "2025-06-01T12:00:00.000001Z"),
        ("2026-02-28T23:59:59+00:00", "2026-02-28T23:59:59Z"),
        ("2028-02-29T00:00:00Z", "2028-02-29T00:00:00Z"),
    ],
)
def test_geldig_tot_valid(text, canonical):
    assert v.validate_decentraal(decentraal(geldigTot=text), now=NOW)["geldigTot"] == canonical


@pytest.mark.parametrize(
    "text",
    [
        "2030-01-01",
        "2030-01-01T12:00:00",
        "2030-01-01 12:00:00Z",
        "2030-01-01T12:00Z",
        "2030-02-30T12:00:00Z",
        "2030-01-01T24:00:00Z",
        "2030-01-01T12:00:60Z",
        "2030-01-01T12:00:00+24:00",
        "2030-01-01T12:00:00+0100",
        "2030-01-01T12:00:00.Z",
        "20300101T120000Z",
        "morgen",
        "",
        1893456000,
    ],
)
def test_geldig_tot_invalid(text):
    found = only_violation(lambda: v.validate_decentraal(decentraal(geldigTot=text), now=NOW))
    assert found["field"] == "geldigTot" and "RFC 3339" in found["message"]


@pytest.mark.parametrize(
    "text",
    [
        "2025-06-01T12:00:00Z",
        "2025-06-01T14:00:00+02:00",
        "2025-06-01T11:59:59.999999Z",
        "2000-01-01T00:00:00Z",
    ],
)
def test_geldig_tot_must_be_strictly_in_the_future(text):
    found = only_violation(lambda: v.validate_decentraal(decentraal(geldigTot=text), now=NOW))
    assert found == {"field": "geldigTot", "in": "body", "message": "moet in de toekomst liggen"}


def test_geldig_tot_uses_the_now_argument_not_the_system_clock():
    long_ago = datetime(1990, 1, 1, tzinfo=UTC)
    body = decentraal(geldigTot="1990-01-02T00:00:00Z")
    assert v.validate_decentraal(body, now=long_ago)["geldigTot"] == "1990-01-02T00:00:00Z"


def test_now_must_be_aware():
    with pytest.raises(TypeError):
        v.validate_decentraal(decentraal(), now=datetime(2025, 1, 1))


def test_now_in_another_timezone_is_fine():
    amsterdam_now = NOW.astimezone(timezone(timedelta(hours=2)))
    with pytest.raises(ValidationFailed):
        v.validate_decentraal(decentraal(geldigTot="2025-06-01T12:00:00Z"), now=amsterdam_now)


# --------------------------------------------------------------------------------------------
# No echo of submitted values


marker_text = st.from_regex(r"QQ[a-z0-9]{10}", fullmatch=True)


@given(marker_text)
def test_messages_never_echo_values(marker):
    body = {
        "dvRef": marker + "\x00",
        "berichtType": marker + " x",
        "identificatieType": "BSN",
        "identificatieNummer": marker,
        "berichtgegevens": {"naam": marker + "\x01", "x y" + marker: "waarde"},
        "geldigTot": marker,
        "batchId": marker,
        "dienst": marker * 20,
        "callbackUrl": "https://" + marker,
        marker + "@x": 1,
    }
    found = violations_of(lambda: v.validate_centraal(body, now=NOW))
    assert len(found) == 10
    assert marker not in json.dumps(found)


@given(marker_text)
def test_email_messages_never_echo_values(marker):
    found = violations_of(
        lambda: v.validate_decentraal(decentraal(emailAdres=f"{marker} <{marker}@x.nl>"), now=NOW)
    )
    assert marker not in json.dumps(found)


# --------------------------------------------------------------------------------------------
# Batches


def test_batch_valid_items_inherit_the_batch_id():
    batch_id = str(uuid.uuid4())
    body = {
        "batchId": batch_id.upper(),
        "notificaties": [decentraal(dvRef="a"), decentraal(dvRef="b", batchId=batch_id)],
    }
    result = v.validate_batch(body, "decentraal", now=NOW)
    assert result["batchId"] == batch_id
    assert [item["dvRef"] for item in result["notificaties"]] == ["a", "b"]
    assert all(item["batchId"] == batch_id for item in result["notificaties"])
    assert all(item["regie"] == "decentraal" for item in result["notificaties"])


def test_batch_without_batch_id_keeps_item_batch_ids():
    own = str(uuid.uuid4())
    result = v.validate_batch({"notificaties": [centraal(batchId=own)]}, "centraal", now=NOW)
    assert result["batchId"] is None
    assert result["notificaties"][0]["batchId"] == own


def test_batch_reports_item_paths_for_all_items():
    body = {
        "notificaties": [
            decentraal(dvRef="a"),
            decentraal(dvRef="b", emailAdres="fout"),
            "geen object",
            decentraal(dvRef="d", berichtType=...),
            decentraal(dvRef="e", berichtgegevens={"k": 1}),
        ]
    }
    found = violations_of(lambda: v.validate_batch(body, "decentraal", now=NOW))
    assert fields(found) == [
        "notificaties[1].emailAdres",
        "notificaties[2]",
        "notificaties[3].berichtType",
        "notificaties[4].berichtgegevens",
    ]


def test_batch_refuses_duplicate_dvref():
    body = {"notificaties": [decentraal(dvRef="a"), decentraal(dvRef="b"), decentraal(dvRef="a")]}
    found = only_violation(lambda: v.validate_batch(body, "decentraal", now=NOW))
    assert found["field"] == "notificaties[2].dvRef"
    assert "notificaties[0]" in found["message"]


def test_batch_item_batch_id_must_match():
    body = {"batchId": str(uuid.uuid4()), "notificaties": [centraal(batchId=str(uuid.uuid4()))]}
    found = only_violation(lambda: v.validate_batch(body, "centraal", now=NOW))
    assert found["field"] == "notificaties[0].batchId"


@pytest.mark.parametrize(
    ("notificaties", "message"),
    [
        (None, "is verplicht"),
        ({}, "moet een lijst zijn"),
        ([], "moet 1 tot 1000 notificaties bevatten"),
    ],
)
def test_batch_list_shape(notificaties, message):
    body = {} if notificaties is None else {"notificaties": notificaties}
    found = only_violation(lambda: v.validate_batch(body, "decentraal", now=NOW))
    assert found == {"field": "notificaties", "in": "body", "message": message}


def test_batch_size_limit_is_1000_and_oversized_items_are_not_inspected():
    items = [decentraal(dvRef=f"r{i}") for i in range(1000)]
    assert (
        len(v.validate_batch({"notificaties": items}, "decentraal", now=NOW)["notificaties"])
        == 1000
    )
    broken = [{"kapot": True}] * 1001
    found = only_violation(
        lambda: v.validate_batch({"notificaties": broken}, "decentraal", now=NOW)
    )
    assert found["field"] == "notificaties"


def test_batch_refuses_unknown_fields_and_non_objects():
    found = violations_of(
        lambda: v.validate_batch({"notificaties": [centraal()], "x": 1}, "centraal", now=NOW)
    )
    assert fields(found) == [""]
    found = only_violation(lambda: v.validate_batch([], "centraal", now=NOW))
    assert found["field"] == ""
    with pytest.raises(ValueError, match="regie"):
        v.validate_batch({"notificaties": []}, "gemengd", now=NOW)


def test_batch_uses_the_regie_of_the_route():
    body = {"notificaties": [decentraal()]}
    found = violations_of(lambda: v.validate_batch(body, "centraal", now=NOW))
    assert sorted(fields(found)) == [
        "notificaties[0].emailAdres",
        "notificaties[0].identificatieNummer",
        "notificaties[0].identificatieType",
    ]


# --------------------------------------------------------------------------------------------
# Path and query


def test_parse_notificatie_id():
    value = uuid.uuid4()
    assert v.parse_notificatie_id(str(value)) == value
    assert v.parse_notificatie_id(str(value).upper()) == value


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "abc",
        "0b6f6c5e7a354e0e9d7b6d2f1c7c1a11",
        "urn:uuid:0b6f6c5e-7a35-4e0e-9d7b-6d2f1c7c1a11",
        "0b6f6c5e-7a35-4e0e-9d7b-6d2f1c7c1a1g",
        None,
    ],
)
def test_parse_notificatie_id_invalid(bad):
    found = only_violation(lambda: v.parse_notificatie_id(bad))
    assert found == {"field": "notificatieId", "in": "path", "message": "moet een UUID zijn"}


def test_lijst_query_defaults_and_values():
    assert v.validate_lijst_query([("dvRef", "zaak-1")]) == {
        "dvRef": "zaak-1",
        "limiet": 20,
        "cursor": None,
    }
    assert v.validate_lijst_query([("dvRef", "z"), ("limiet", "100"), ("cursor", "abc_-9")]) == {
        "dvRef": "z",
        "limiet": 100,
        "cursor": "abc_-9",
    }


@pytest.mark.parametrize(
    ("params", "expected_fields"),
    [
        ([], ["dvRef"]),
        ([("dvRef", "")], ["dvRef"]),
        ([("dvRef", "a"), ("dvRef", "b")], ["dvRef"]),
        ([("dvRef", "a"), ("limiet", "0")], ["limiet"]),
        ([("dvRef", "a"), ("limiet", "101")], ["limiet"]),
        ([("dvRef", "a"), ("limiet", "-1")], ["limiet"]),
        ([("dvRef", "a"), ("limiet", "1e2")], ["limiet"]),
        ([("dvRef", "a"), ("cursor", "a b")], ["cursor"]),
        ([("dvRef", "a"), ("cursor", "x" * 501)], ["cursor"]),
        ([("dvref", "a")], ["", "dvRef"]),
    ],
)
def test_lijst_query_invalid(params, expected_fields):
    found = violations_of(lambda: v.validate_lijst_query(params))
    assert fields(found) == expected_fields
    assert all(item["in"] == "query" for item in found)


def test_lijst_query_does_not_echo_the_dvref():
    found = only_violation(lambda: v.validate_lijst_query([("dvRef", "QQgeheim\x00")]))
    assert "QQgeheim" not in json.dumps(found)
