"""Unit tests of the OpenAPI document (nmc/api/openapi.yaml, read by nmc.api.openapi): OpenAPI
3.1 validity, the NL API Design Rules linter, and agreement between the document and the code
(every limit, pattern and enum that both state)."""

import json
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nmc.api import feed_query, openapi, routes_bewijs
from nmc.api import validation as v
from nmc.api.problems import DEFAULT_BASE_URI, PROBLEM_TYPES
from nmc.feed.cloudevents import ATTRIBUTES, TYPE_PREFIX
from nmc.signing.afleverbewijs_signing import MEDIA_TYPE, TYP
from nmc.status import NOTIFICATIE_STATUSES, REDENEN

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SPECTRAL = "@stoplight/spectral-cli@6"


@pytest.fixture(scope="module")
def doc():
    return openapi.openapi_document()


def operations(doc):
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, operation


def deref(doc, node):
    """Follow a local `#/components/...` reference."""
    if isinstance(node, dict) and "$ref" in node:
        parts = node["$ref"].removeprefix("#/").split("/")
        target = doc
        for part in parts:
            target = target[part]
        return deref(doc, target)
    return node


def sql_enum(name: str) -> list[str]:
    """The values of an `nmc.` enum type, in order, from schema/0001_types.sql."""
    text = (PROJECT_ROOT / "schema" / "0001_types.sql").read_text(encoding="utf-8")
    body = re.search(rf"CREATE TYPE nmc\.{name} AS ENUM \((.*?)\);", text, re.DOTALL)
    assert body, name
    return re.findall(r"'([^']+)'", re.sub(r"--[^\n]*", "", body.group(1)))


def parameter(doc, path: str, method: str, name: str) -> dict:
    (found,) = [p for p in doc["paths"][path][method]["parameters"] if p["name"] == name]
    return found


# --------------------------------------------------------------------------------------------
# Structure


def test_valid_openapi_31(doc):
    validator = pytest.importorskip(
        "openapi_spec_validator", reason="openapi-spec-validator is not installed"
    )
    assert doc["openapi"] == "3.1.0"
    validator.validate(doc)


def test_document_is_plain_json_and_fresh_per_call(doc):
    text = json.dumps(doc, sort_keys=True)
    assert json.loads(text) == doc
    copy = openapi.openapi_document()
    copy["info"]["title"] = "gewijzigd"
    assert openapi.openapi_document()["info"]["title"] == doc["info"]["title"]


def test_the_yaml_is_written_for_people():
    text = files("nmc.api").joinpath("openapi.yaml").read_text(encoding="utf-8")
    assert text.startswith("# The OpenAPI 3.1 document of the DV API")
    assert "edited by hand" in text.split("\nopenapi:", 1)[0]
    shared = [e for e in yaml.parse(text) if getattr(e, "anchor", None)]
    assert shared == [], "no anchors or aliases: each part of the document reads on its own"


def test_paths_and_methods(doc):
    found = {(path, method) for path, method, _ in operations(doc)}
    assert found == {
        ("/decentraal/notificaties", "post"),
        ("/decentraal/notificaties/_batch", "post"),
        ("/centraal/notificaties", "post"),
        ("/centraal/notificaties/_batch", "post"),
        ("/notificaties", "get"),
        ("/notificaties/{notificatieId}", "get"),
        ("/notificaties/{notificatieId}", "delete"),
        ("/notificaties/{notificatieId}/afleverbewijs", "get"),
        ("/notificaties/{notificatieId}/geschiedenis", "get"),
        ("/notificaties/wijzigingen", "get"),
        ("/notificaties/wijzigingen/bevestiging", "put"),
        ("/notificaties/_snapshot", "get"),
        ("/webhook/hervatten", "post"),
        ("/webhook/positie", "put"),
        ("/openapi.json", "get"),
    }


def test_server_carries_the_base_path(doc):
    assert doc["servers"] == [
        {"url": "https://mijnoverheidzakelijk.nl/api/nmc/v1", "description": "NMC"}
    ]
    custom = openapi.openapi_document(server_url="https://nmc.test/api/nmc/v1")
    assert custom["servers"][0]["url"] == "https://nmc.test/api/nmc/v1"
    assert openapi.BASE_PATH == "/api/nmc/v1"


def test_info(doc):
    assert doc["info"]["version"] == openapi.API_VERSION
    assert re.fullmatch(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)", openapi.API_VERSION)
    assert set(doc["info"]["contact"]) == {"name", "url", "email"}


def test_operation_ids_are_unique(doc):
    ids = [op["operationId"] for _, _, op in operations(doc)]
    assert len(ids) == len(set(ids))


def test_security(doc):
    assert doc["security"] == [{"bearer": []}]
    scheme = doc["components"]["securitySchemes"]["bearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert doc["paths"]["/openapi.json"]["get"]["security"] == []


def test_every_success_has_api_version_and_every_error_is_a_problem(doc):
    for path, method, op in operations(doc):
        for code, response in op["responses"].items():
            response = deref(doc, response)
            if code.startswith(("2", "3")):
                assert "API-Version" in response["headers"], (path, method, code)
            else:
                content = response["content"]
                assert list(content) == ["application/problem+json"], (path, method, code)
                assert deref(doc, content["application/problem+json"]["schema"]) is deref(
                    doc, {"$ref": "#/components/schemas/Problem"}
                )


def test_operations_with_input_can_answer_400(doc):
    for path, method, op in operations(doc):
        if path != "/openapi.json":
            assert "400" in op["responses"], (path, method)


def test_intake_responses(doc):
    for regie in ("decentraal", "centraal"):
        single = doc["paths"][f"/{regie}/notificaties"]["post"]
        assert set(single["responses"]["202"]["headers"]) == {"API-Version", "Location"}
        assert {"400", "401", "403", "409", "415", "429", "500"} <= set(single["responses"])
        batch = doc["paths"][f"/{regie}/notificaties/_batch"]["post"]
        assert "202" in batch["responses"]


def test_intake_answers_422_for_the_template_refusals_with_examples(doc):
    """Missing placeholders and an unavailable berichttype, each its own type."""
    param = doc["components"]["schemas"]["InvalidParam"]
    assert set(param["required"]) == {"name", "code", "reason"}
    assert "invalidParams" in doc["components"]["schemas"]["Problem"]["properties"]
    for regie in ("decentraal", "centraal"):
        for path in (f"/{regie}/notificaties", f"/{regie}/notificaties/_batch"):
            answer = doc["paths"][path]["post"]["responses"]["422"]
            if "$ref" in answer:
                answer = doc["components"]["responses"][answer["$ref"].rsplit("/", 1)[-1]]
            examples = answer["content"]["application/problem+json"]["examples"]
            slugs = {e["value"]["type"].removeprefix(DEFAULT_BASE_URI) for e in examples.values()}
            expected = {"ontbrekende-personalisatie", "berichttype-niet-beschikbaar"}
            if regie == "decentraal":  # the address is the DV's: NotifyNL's rule at the door
                expected.add("emailadres-geweigerd")
            assert slugs == expected, path


def test_status_and_cancel_responses(doc):
    item = doc["paths"]["/notificaties/{notificatieId}"]
    assert set(item["get"]["responses"]["200"]["headers"]) == {"API-Version", "ETag"}
    assert "304" in item["get"]["responses"]
    assert {"204", "404", "409"} <= set(item["delete"]["responses"])


def test_notificatie_schema(doc):
    schemas = doc["components"]["schemas"]
    notificatie = schemas["Notificatie"]
    assert set(notificatie["required"]) == {
        "notificatieId",
        "berichtType",
        "regie",
        "status",
        "reden",
        "versie",
        "aangenomenOp",
        "bijgewerktOp",
        "geldigTot",
        "pogingen",
    }
    assert set(schemas["Poging"]["properties"]) == {"nummer", "status", "verzondenOp", "afgerondOp"}
    assert schemas["NotificatieStatus"]["enum"] == list(NOTIFICATIE_STATUSES)
    assert schemas["Reden"]["enum"] == [*REDENEN, None]
    assert schemas["Poging"]["properties"]["status"]["enum"] == sql_enum("poging_status")


def test_problem_schema(doc):
    problem = doc["components"]["schemas"]["Problem"]
    assert {"type", "title", "status", "detail", "violations"} <= set(problem["properties"])
    violation = doc["components"]["schemas"]["Violation"]
    assert set(violation["required"]) == {"field", "in", "message"}


def test_query_parameters(doc):
    params = {p["name"]: p for p in doc["paths"]["/notificaties"]["get"]["parameters"]}
    assert set(params) == {"dvRef", "limiet", "cursor"}
    assert params["dvRef"]["required"] is True
    assert params["limiet"]["schema"]["maximum"] == v.LIJST_LIMIET_MAX


# --------------------------------------------------------------------------------------------
# The document and the validators agree


def test_request_schemas_refuse_unknown_fields(doc):
    schemas = doc["components"]["schemas"]
    assert set(schemas["DecentraalNotificatieVerzoek"]["properties"]) == v.DECENTRAAL_FIELDS
    assert set(schemas["CentraalNotificatieVerzoek"]["properties"]) == v.CENTRAAL_FIELDS
    for name in (
        "DecentraalNotificatieVerzoek",
        "CentraalNotificatieVerzoek",
        "DecentraalBatchVerzoek",
        "CentraalBatchVerzoek",
    ):
        assert schemas[name]["additionalProperties"] is False


def stated_by_the_code(doc) -> list[tuple[str, object, object]]:
    """(where, the document's value, the code's value) for each limit, pattern and enum that
    the document states and the code enforces or sends."""
    schemas = doc["components"]["schemas"]
    decentraal = schemas["DecentraalNotificatieVerzoek"]["properties"]
    centraal = schemas["CentraalNotificatieVerzoek"]["properties"]
    berichtgegevens = schemas["Berichtgegevens"]
    cloudevent = schemas["CloudEvent"]
    zoeken = ("/notificaties", "get")
    feed = ("/notificaties/wijzigingen", "get")
    snapshot = ("/notificaties/_snapshot", "get")
    geschiedenis = ("/notificaties/{notificatieId}/geschiedenis", "get")
    afleverbewijs = doc["paths"]["/notificaties/{notificatieId}/afleverbewijs"]["get"]
    webhook = doc["webhooks"]["statuswijzigingen"]["post"]
    token_patterns = {
        "WijzigingenPagina.cursor": schemas["WijzigingenPagina"]["properties"]["cursor"],
        "Bevestiging.cursor": schemas["Bevestiging"]["properties"]["cursor"],
        "SnapshotPagina.volgende": schemas["SnapshotPagina"]["properties"]["volgende"],
        "SnapshotPagina.cursor": schemas["SnapshotPagina"]["properties"]["cursor"],
        "wijzigingen ?cursor": parameter(doc, *feed, "cursor")["schema"],
        "wijzigingen Last-Event-ID": parameter(doc, *feed, "Last-Event-ID")["schema"],
        "snapshot ?na": parameter(doc, *snapshot, "na")["schema"],
        "webhook Nmc-Cursor": webhook["parameters"][0]["schema"],
    }
    poging_statuses = sql_enum("poging_status")
    van = [*NOTIFICATIE_STATUSES, None]
    stated = [
        ("dvRef maxLength", decentraal["dvRef"]["maxLength"], v.DVREF_MAX),
        ("centraal dvRef maxLength", centraal["dvRef"]["maxLength"], v.DVREF_MAX),
        ("?dvRef maxLength", parameter(doc, *zoeken, "dvRef")["schema"]["maxLength"], v.DVREF_MAX),
        ("berichtType pattern", decentraal["berichtType"]["pattern"], v.BERICHTTYPE_PATTERN),
        ("centraal berichtType", centraal["berichtType"]["pattern"], v.BERICHTTYPE_PATTERN),
        ("dienst maxLength", decentraal["dienst"]["maxLength"], v.DIENST_MAX),
        ("centraal dienst maxLength", centraal["dienst"]["maxLength"], v.DIENST_MAX),
        ("emailAdres maxLength", decentraal["emailAdres"]["maxLength"], v.EMAIL_MAX),
        ("identificatieType", centraal["identificatieType"]["enum"], list(v.IDENTIFICATIE_TYPES)),
        ("berichtgegevens keys", berichtgegevens["maxProperties"], v.BERICHTGEGEVENS_MAX_KEYS),
        (
            "berichtgegevens key pattern",
            berichtgegevens["propertyNames"]["pattern"],
            v.BERICHTGEGEVENS_KEY_PATTERN,
        ),
        (
            "berichtgegevens value maxLength",
            berichtgegevens["additionalProperties"]["maxLength"],
            v.BERICHTGEGEVENS_VALUE_MAX,
        ),
        (
            "?limiet maximum",
            parameter(doc, *zoeken, "limiet")["schema"]["maximum"],
            v.LIJST_LIMIET_MAX,
        ),
        (
            "?limiet default",
            parameter(doc, *zoeken, "limiet")["schema"]["default"],
            v.LIJST_LIMIET_DEFAULT,
        ),
        (
            "?cursor pattern",
            parameter(doc, *zoeken, "cursor")["schema"]["pattern"],
            v.CURSOR_PATTERN,
        ),
        ("NotificatieStatus", schemas["NotificatieStatus"]["enum"], list(NOTIFICATIE_STATUSES)),
        ("Reden", schemas["Reden"]["enum"], [*REDENEN, None]),
        ("Poging.status", schemas["Poging"]["properties"]["status"]["enum"], poging_statuses),
        (
            "ApiVersion example",
            doc["components"]["headers"]["ApiVersion"]["schema"]["examples"],
            [openapi.API_VERSION],
        ),
        ("StatusWijziging.van", schemas["StatusWijziging"]["properties"]["van"]["enum"], van),
        ("CloudEvent required", cloudevent["required"], list(ATTRIBUTES)),
        (
            "CloudEvent type",
            cloudevent["properties"]["type"]["enum"],
            [TYPE_PREFIX + status for status in NOTIFICATIE_STATUSES],
        ),
        ("CloudEvent example type", cloudevent["examples"][0]["type"], TYPE_PREFIX + "bezorgd"),
        (
            "wijzigingen ?limiet maximum",
            parameter(doc, *feed, "limiet")["schema"]["maximum"],
            feed_query.FEED_LIMIET_MAX,
        ),
        (
            "snapshot ?limiet maximum",
            parameter(doc, *snapshot, "limiet")["schema"]["maximum"],
            feed_query.SNAPSHOT_LIMIET_MAX,
        ),
        (
            "snapshot ?limiet default",
            parameter(doc, *snapshot, "limiet")["schema"]["default"],
            feed_query.SNAPSHOT_LIMIET_DEFAULT,
        ),
        *(
            (f"{where} pattern", schema["pattern"], feed_query.TOKEN_PATTERN)
            for where, schema in token_patterns.items()
        ),
        (
            "afleverbewijs media type",
            list(afleverbewijs["responses"]["200"]["content"]),
            [MEDIA_TYPE],
        ),
        (
            "geschiedenis ?limiet maximum",
            parameter(doc, *geschiedenis, "limiet")["schema"]["maximum"],
            routes_bewijs.GESCHIEDENIS_LIMIET_MAX,
        ),
        (
            "geschiedenis ?limiet default",
            parameter(doc, *geschiedenis, "limiet")["schema"]["default"],
            routes_bewijs.GESCHIEDENIS_LIMIET_DEFAULT,
        ),
        (
            "geschiedenis ?cursor pattern",
            parameter(doc, *geschiedenis, "cursor")["schema"]["pattern"],
            routes_bewijs.GESCHIEDENIS_CURSOR_PATTERN,
        ),
        (
            "Geschiedenis.volgende pattern",
            schemas["Geschiedenis"]["properties"]["volgende"]["pattern"],
            routes_bewijs.GESCHIEDENIS_CURSOR_PATTERN,
        ),
        ("BewijsEvent.van", schemas["BewijsEvent"]["properties"]["van"]["enum"], van),
        *(
            (f"{name}.status", schemas[name]["properties"]["status"]["enum"], poging_statuses)
            for name in ("BewijsPoging", "GeschiedenisPoging")
        ),
    ]
    for name in ("DecentraalBatchVerzoek", "CentraalBatchVerzoek"):
        notificaties = schemas[name]["properties"]["notificaties"]
        stated.append((f"{name} maxItems", notificaties["maxItems"], v.BATCH_MAX))
    return stated


def test_limits_patterns_and_enums_match_the_code(doc):
    stated = stated_by_the_code(doc)
    differ = [(where, ours, code) for where, ours, code in stated if ours != code]
    assert differ == []


def test_texts_state_the_limits_of_the_code(doc):
    schemas = doc["components"]["schemas"]
    berichtgegevens = schemas["Berichtgegevens"]["description"]
    assert f"ten hoogste {v.BERICHTGEGEVENS_MAX_KEYS} sleutels" in berichtgegevens
    assert f"ten hoogste {v.BERICHTGEGEVENS_TOTAL_MAX_BYTES} bytes" in berichtgegevens
    for name in ("DecentraalBatchVerzoek", "CentraalBatchVerzoek"):
        assert f"van 1 tot {v.BATCH_MAX} notificaties" in schemas[name]["description"]
    afleverbewijs = doc["paths"]["/notificaties/{notificatieId}/afleverbewijs"]["get"]
    assert f"typ {TYP}." in afleverbewijs["description"]


def problem_examples(node, where=""):
    """Every example of an application/problem+json body in the document, with its place."""
    if isinstance(node, dict):
        problem = node.get("application/problem+json")
        if isinstance(problem, dict) and "example" in problem:
            yield where, problem["example"]
        if isinstance(problem, dict) and "examples" in problem:
            for name, example in problem["examples"].items():
                yield f"{where}/{name}", example["value"]
        for key, value in node.items():
            yield from problem_examples(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from problem_examples(value, f"{where}/{index}")


def test_problem_examples_are_the_problems_the_api_answers(doc):
    examples = list(problem_examples(doc))
    assert len(examples) >= 10
    for where, example in examples:
        if example["type"] == "about:blank":
            continue
        slug = example["type"].removeprefix(DEFAULT_BASE_URI)
        assert slug in PROBLEM_TYPES, where
        assert (example["status"], example["title"]) == (
            PROBLEM_TYPES[slug].status,
            PROBLEM_TYPES[slug].title,
        ), where


@pytest.mark.parametrize("sample", ["a", "x.y_z-1", "", "met spatie", "é", "x" * 100, "x" * 101])
def test_berichttype_pattern_means_the_same_in_both(sample):
    in_schema = re.fullmatch(v.BERICHTTYPE_PATTERN.strip("^$"), sample) is not None
    assert in_schema == (v._BERICHTTYPE.match(sample) is not None)


def test_request_examples_pass_the_validator(doc):
    schemas = doc["components"]["schemas"]
    now = datetime(2025, 1, 1, tzinfo=UTC)
    for example in schemas["DecentraalNotificatieVerzoek"]["examples"]:
        v.validate_decentraal(example, now=now)
    for example in schemas["CentraalNotificatieVerzoek"]["examples"]:
        v.validate_centraal(example, now=now)


# --------------------------------------------------------------------------------------------
# NL API Design Rules linter (Spectral)


def adr_ruleset() -> Path | None:
    candidates = [
        os.environ.get("NMC_ADR_LINTER"),
        PROJECT_ROOT.parent / "shared" / "adr-linter.yaml",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def test_passes_the_nl_api_design_rules_linter(doc, tmp_path):
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed: cannot run the Spectral ADR linter")
    ruleset = adr_ruleset()
    if ruleset is None:
        pytest.skip(
            "adr-linter.yaml not found (set NMC_ADR_LINTER or keep shared/ beside the repo)"
        )
    good = tmp_path / "openapi.json"
    good.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    # A broken copy in the same run proves the linter and ruleset are really at work.
    broken_doc = json.loads(json.dumps(doc))
    del broken_doc["paths"]["/notificaties"]["get"]["responses"]["200"]["headers"]["API-Version"]
    del broken_doc["components"]["schemas"]["Problem"]["properties"]["detail"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(broken_doc, indent=2), encoding="utf-8")
    result = subprocess.run(
        [
            npx,
            "--yes",
            SPECTRAL,
            "lint",
            "-r",
            str(ruleset),
            "-f",
            "json",
            "--fail-severity",
            "hint",
            str(good),
            str(broken),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    start = result.stdout.find("[")
    assert start >= 0, f"no JSON from spectral: {result.stdout}\n{result.stderr}"
    findings, _ = json.JSONDecoder().raw_decode(result.stdout[start:])
    on_good = [f for f in findings if Path(f["source"]).name == "openapi.json"]
    on_broken = {f["code"] for f in findings if Path(f["source"]).name == "broken.json"}
    assert on_good == [], json.dumps(on_good, indent=2)
    assert on_broken == {"nlgov:missing-version-header", "nlgov:problem-schema-members"}


# --------------------------------------------------------------------------------------------
# The feed


def test_feed_operations(doc):
    feed = doc["paths"]["/notificaties/wijzigingen"]["get"]
    assert {"200", "400", "410", "429"} <= set(feed["responses"])
    assert set(feed["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}
    params = {p["name"]: p for p in feed["parameters"]}
    assert set(params) == {"cursor", "limiet", "Last-Event-ID"}
    ack = doc["paths"]["/notificaties/wijzigingen/bevestiging"]["put"]
    assert set(ack["responses"]["204"]["headers"]) == {"API-Version", "Nmc-Bevestiging"}
    assert "410" in ack["responses"]
    snapshot = doc["paths"]["/notificaties/_snapshot"]["get"]
    assert {p["name"] for p in snapshot["parameters"]} == {"na", "limiet"}
    assert "404" in doc["paths"]["/webhook/hervatten"]["post"]["responses"]
    assert "409" in doc["paths"]["/webhook/hervatten"]["post"]["responses"]
    positie = doc["paths"]["/webhook/positie"]["put"]
    assert {"204", "400", "404", "410"} <= set(positie["responses"])
    schema = doc["components"]["schemas"]["WebhookPositie"]
    assert set(schema["properties"]) == {"cursor", "vanaf"}
    assert schema["additionalProperties"] is False


def test_the_cloudevent_schema_lists_exactly_the_attributes_the_api_sends(doc):
    from nmc.feed.cloudevents import ATTRIBUTES, TYPE_PREFIX

    schema = doc["components"]["schemas"]["CloudEvent"]
    assert set(schema["required"]) == set(schema["properties"]) == set(ATTRIBUTES)
    assert schema["properties"]["type"]["enum"] == [TYPE_PREFIX + s for s in NOTIFICATIE_STATUSES]


def test_the_webhook_is_documented_with_its_own_security(doc):
    webhook = doc["webhooks"]["statuswijzigingen"]["post"]
    assert webhook["security"] == [{"nmcWebhook": []}]
    assert "application/cloudevents-batch+json" in webhook["requestBody"]["content"]
    assert "jwks.json" in doc["info"]["description"]


# --------------------------------------------------------------------------------------------
# What the schema refuses, the validator refuses (and the other way round)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", " ", "\u00e9", "e\u0301", "\u0301", "\u0958", "\U0001f600"]),
        max_size=210,
    ).map("".join)
)
def test_dvref_length_means_what_the_schema_means(doc, text):
    import jsonschema

    schema = doc["components"]["schemas"]["DecentraalNotificatieVerzoek"]["properties"]["dvRef"]
    in_schema = jsonschema.Draft202012Validator(schema).is_valid(text)
    body = {"dvRef": text, "berichtType": "x", "emailAdres": "a@voorbeeld.nl"}
    try:
        v.validate_decentraal(body, now=datetime(2025, 1, 1, tzinfo=UTC))
        accepted = True
    except v.ValidationFailed:
        accepted = False
    assert accepted == in_schema


def test_the_dvref_rule_and_null_are_in_the_contract(doc):
    schemas = doc["components"]["schemas"]
    dvref = schemas["DecentraalNotificatieVerzoek"]["properties"]["dvRef"]["description"]
    assert "categorie C" in dvref and "U+0020" in dvref and "zoals verzonden" in dvref
    for name in ("DecentraalNotificatieVerzoek", "CentraalNotificatieVerzoek"):
        assert "null wordt geweigerd" in schemas[name]["description"]
        for member in schemas[name]["properties"].values():
            assert "null" not in str(member.get("type", "")), "no request member is nullable"
    params = {p["name"]: p for p in doc["paths"]["/notificaties"]["get"]["parameters"]}
    assert "categorie C" in params["dvRef"]["description"]
    for regie in ("decentraal", "centraal"):
        body = doc["paths"][f"/{regie}/notificaties"]["post"]["requestBody"]
        assert "UTF-8" in body["description"] and "twee keer" in body["description"]
