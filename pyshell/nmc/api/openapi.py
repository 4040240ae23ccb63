"""The OpenAPI 3.1 document of the DV API, served at GET /api/nmc/v1/openapi.json.

Written to pass the NL API Design Rules linter (Logius' Spectral ruleset) without errors or
warnings: the server URL carries the major version and paths are relative to it, every 2xx/3xx
response returns the `API-Version` header, every error is `application/problem+json` with
status, title and detail, every operation with input can answer 400, and query parameters are
lowerCamelCase. Limits and enums come from `validation` and `nmc.status`, so the document and
the checks cannot drift apart.

The feed's operations, schemas and the webhook are in `openapi_feed`, the delivery proof's
in `openapi_bewijs` (imported where the document is assembled: they build on the helpers
here).
"""

from typing import Any

from nmc.api import validation as v
from nmc.api.problems import DEFAULT_BASE_URI
from nmc.status import NOTIFICATIE_STATUSES, REDENEN

API_VERSION = "1.0.0"
"""SemVer of this API; also the value of the `API-Version` response header."""

API_VERSION_HEADER = "API-Version"
BASE_PATH = "/api/nmc/v1"
DEFAULT_SERVER_URL = "https://mijnoverheidzakelijk.nl" + BASE_PATH
DEFAULT_CONTACT = {
    "name": "MijnOverheid Zakelijk, team NMC",
    "url": "https://mijnoverheidzakelijk.nl/nmc",
    "email": "nmc@mijnoverheidzakelijk.nl",
}

POGING_STATUSES: tuple[str, ...] = (
    "gepland",
    "verzonden",
    "bezorgd",
    "tijdelijk-mislukt",
    "permanent-mislukt",
    "technisch-mislukt",
    "onbekend",
)

_PROBLEM = "application/problem+json"
_JSON = "application/json"

_EXAMPLE_ID = "0b6f6c5e-7a35-4e0e-9d7b-6d2f1c7c1a11"
_EXAMPLE_BATCH = "5d1f0a52-3f7e-4c53-b6f1-2a7e9b0c4d88"


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _schema(name: str) -> dict[str, str]:
    return _ref("schemas", name)


def _api_version_headers(**extra: dict[str, Any]) -> dict[str, Any]:
    return {API_VERSION_HEADER: _ref("headers", "ApiVersion"), **extra}


def _problem_response(description: str, example: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": description,
        "content": {_PROBLEM: {"schema": _schema("Problem"), "example": example}},
    }


def _problem_example(slug: str, status: int, title: str, detail: str, **extra: Any) -> dict:
    return {
        "type": DEFAULT_BASE_URI + slug,
        "title": title,
        "status": status,
        "detail": detail,
        **extra,
    }


DVREF_RULE = (
    "Alleen zichtbare tekens en de gewone spatie: geen teken uit Unicode-categorie C "
    "(stuurtekens, opmaaktekens zoals U+200B en U+202E, U+FEFF, privégebruik, niet "
    "toegekend) of Z (scheidingstekens zoals U+00A0 en U+2028), behalve de spatie U+0020. "
    "Zo zien twee verschillende dvRefs er nooit hetzelfde uit. Het NMC normaliseert naar NFC: "
    "dvRefs die alleen daarin verschillen zijn dezelfde. De lengte telt de tekens "
    "(codepunten) zoals verzonden, vóór die normalisatie."
)
JSON_BODY_RULE = (
    "JSON (RFC 8259) in UTF-8, zonder byte order mark en zonder een veldnaam die twee keer in "
    "hetzelfde object voorkomt; anders 400."
)
LENGTHS_AND_NULLS = (
    " Lengtes tellen de tekens (Unicode-codepunten) zoals verzonden, vóór de "
    "NFC-normalisatie. Een optioneel veld zonder waarde laat u weg: null wordt geweigerd."
)


def _schemas() -> dict[str, Any]:
    text_no_controls = "Tekst zonder stuurtekens."
    common_properties: dict[str, Any] = {
        "dvRef": {
            "type": "string",
            "minLength": 1,
            "maxLength": v.DVREF_MAX,
            "description": (
                "Eigen referentie van de dienstverlener, zonder persoonsgegevens. Het NMC "
                "bewaart haar niet leesbaar: alleen een HMAC. Idempotentiesleutel: hetzelfde "
                "verzoek met dezelfde dvRef geeft dezelfde notificatieId; een ander verzoek "
                "met dezelfde dvRef geeft 409. " + DVREF_RULE
            ),
            "examples": ["zaak-2025-000123"],
        },
        "berichtType": {
            "type": "string",
            "pattern": v.BERICHTTYPE_PATTERN,
            "description": "Berichttype, zoals bij de onboarding voor de dienstverlener "
            "toegestaan.",
            "examples": ["herinnering.aanslag"],
        },
        "berichtgegevens": _schema("Berichtgegevens"),
        "geldigTot": {
            "type": "string",
            "format": "date-time",
            "description": (
                "RFC 3339-tijdstip met tijdzone waarna de notificatie niet meer verzonden "
                "wordt; in de toekomst en binnen het maximum van het berichttype. Zonder "
                "waarde geldt de standaard van het berichttype."
            ),
        },
        "batchId": {
            "type": "string",
            "format": "uuid",
            "description": "Groepeert een aanlevering; heeft verder geen betekenis.",
        },
        "dienst": {
            "type": "string",
            "minLength": 1,
            "maxLength": v.DIENST_MAX,
            "description": "Naam van de dienst namens wie de notificatie gaat. " + text_no_controls,
        },
    }
    decentraal = {
        "type": "object",
        "description": "Notificatie met het e-mailadres van de ontvanger (decentrale regie)."
        + LENGTHS_AND_NULLS,
        "additionalProperties": False,
        "required": ["dvRef", "berichtType", "emailAdres"],
        "properties": {
            **common_properties,
            "emailAdres": {
                "type": "string",
                "format": "email",
                "maxLength": v.EMAIL_MAX,
                "description": "E-mailadres van de ontvanger: naam@domein.tld, zonder "
                "weergavenaam. Wordt versleuteld opgeslagen.",
            },
        },
        "examples": [
            {
                "dvRef": "zaak-2025-000123",
                "berichtType": "herinnering.aanslag",
                "emailAdres": "info@voorbeeld.nl",
                "berichtgegevens": {"naam": "Voorbeeld B.V.", "kenmerk": "AB-123"},
                "geldigTot": "2030-01-31T17:00:00+01:00",
            }
        ],
    }
    centraal = {
        "type": "object",
        "description": (
            "Notificatie met een identificerend nummer (centrale regie): het NMC haalt het "
            "e-mailadres bij de Profielservice op tijdens het verzenden." + LENGTHS_AND_NULLS
        ),
        "additionalProperties": False,
        "required": ["dvRef", "berichtType", "identificatieType", "identificatieNummer"],
        "properties": {
            **common_properties,
            "identificatieType": {"type": "string", "enum": list(v.IDENTIFICATIE_TYPES)},
            "identificatieNummer": {
                "type": "string",
                "pattern": "^[0-9]{8,9}$",
                "description": (
                    "BSN en RSIN: 9 cijfers die aan de elfproef voldoen; KVK: 8 cijfers. "
                    "Wordt versleuteld opgeslagen."
                ),
            },
        },
        "examples": [
            {
                "dvRef": "zaak-2025-000124",
                "berichtType": "herinnering.aanslag",
                "identificatieType": "KVK",
                "identificatieNummer": "12345678",
            },
            {
                "dvRef": "zaak-2025-000125",
                "berichtType": "herinnering.aanslag",
                "identificatieType": "BSN",
                "identificatieNummer": "111222333",
            },
        ],
    }
    return {
        "DecentraalNotificatieVerzoek": decentraal,
        "CentraalNotificatieVerzoek": centraal,
        "DecentraalBatchVerzoek": _batch_schema("DecentraalNotificatieVerzoek"),
        "CentraalBatchVerzoek": _batch_schema("CentraalNotificatieVerzoek"),
        "Berichtgegevens": {
            "type": "object",
            "description": (
                "Waarden voor de personalisatie van het bericht: een plat object met "
                f"tekstwaarden, ten hoogste {v.BERICHTGEGEVENS_MAX_KEYS} sleutels, "
                f"samen ten hoogste {v.BERICHTGEGEVENS_TOTAL_MAX_BYTES} bytes. Wordt "
                "versleuteld opgeslagen."
            ),
            "maxProperties": v.BERICHTGEGEVENS_MAX_KEYS,
            "propertyNames": {"pattern": v.BERICHTGEGEVENS_KEY_PATTERN},
            "additionalProperties": {
                "type": "string",
                "maxLength": v.BERICHTGEGEVENS_VALUE_MAX,
            },
        },
        "Aanname": {
            "type": "object",
            "required": ["notificatieId"],
            "properties": {"notificatieId": {"type": "string", "format": "uuid"}},
            "examples": [{"notificatieId": _EXAMPLE_ID}],
        },
        "BatchAanname": {
            "type": "object",
            "required": ["batchId", "notificaties"],
            "properties": {
                "batchId": {"type": ["string", "null"], "format": "uuid"},
                "notificaties": {
                    "type": "array",
                    "description": "Eén element per notificatie, in de volgorde van het verzoek.",
                    "items": _schema("Aanname"),
                },
            },
        },
        "NotificatieStatus": {
            "type": "string",
            "enum": list(NOTIFICATIE_STATUSES),
            "description": (
                "Niet-terminaal: aangenomen, in-verzending, verzonden, bezorgd. De overige zijn "
                "terminaal; alleen bezorgstatus-onbekend kan door een late ontvangstbevestiging "
                "nog naar bezorgd of niet-bezorgbaar gaan."
            ),
        },
        "Reden": {
            "type": ["string", "null"],
            "enum": [*REDENEN, None],
            "description": "Reden bij een terminale mislukking; anders null.",
        },
        "Poging": {
            "type": "object",
            "required": ["nummer", "status", "verzondenOp", "afgerondOp"],
            "properties": {
                "nummer": {"type": "integer", "minimum": 1},
                "status": {"type": "string", "enum": list(POGING_STATUSES)},
                "verzondenOp": {"type": ["string", "null"], "format": "date-time"},
                "afgerondOp": {
                    "type": ["string", "null"],
                    "format": "date-time",
                    "description": "Tijdstip van de bron (completed_at van NotifyNL): het "
                    "tijdstip voor het afleverbewijs.",
                },
            },
        },
        "NotificatieSamenvatting": {
            "type": "object",
            "required": list(_SUMMARY_FIELDS),
            "properties": _summary_properties(),
        },
        "Notificatie": {
            "type": "object",
            "description": "Status met versie en pogingen: het afleverbewijs.",
            "required": [*_SUMMARY_FIELDS, "pogingen"],
            "properties": {
                **_summary_properties(),
                "pogingen": {"type": "array", "items": _schema("Poging")},
            },
            "examples": [
                {
                    "notificatieId": _EXAMPLE_ID,
                    "berichtType": "herinnering.aanslag",
                    "regie": "decentraal",
                    "status": "bezorgd",
                    "reden": None,
                    "versie": 4,
                    "aangenomenOp": "2025-03-01T09:00:00Z",
                    "bijgewerktOp": "2025-03-01T09:00:07Z",
                    "geldigTot": "2025-03-08T09:00:00Z",
                    "pogingen": [
                        {
                            "nummer": 1,
                            "status": "bezorgd",
                            "verzondenOp": "2025-03-01T09:00:02Z",
                            "afgerondOp": "2025-03-01T09:00:06Z",
                        }
                    ],
                }
            ],
        },
        "NotificatieLijst": {
            "type": "object",
            "required": ["notificaties", "cursor"],
            "properties": {
                "notificaties": {"type": "array", "items": _schema("NotificatieSamenvatting")},
                "cursor": {
                    "type": ["string", "null"],
                    "description": "Geef deze waarde mee als `cursor` voor de volgende pagina; "
                    "null op de laatste pagina.",
                },
            },
        },
        "Violation": {
            "type": "object",
            "required": ["field", "in", "message"],
            "properties": {
                "field": {
                    "type": "string",
                    "description": "Pad van het veld, bv. notificaties[3].emailAdres; leeg "
                    "voor het verzoek als geheel.",
                },
                "in": {"type": "string", "enum": ["body", "query", "path", "header"]},
                "message": {
                    "type": "string",
                    "description": "De geschonden regel; herhaalt nooit de ingestuurde waarde.",
                },
            },
        },
        "Problem": {
            "type": "object",
            "description": "RFC 9457 probleem.",
            "required": ["type", "title", "status", "detail"],
            "properties": {
                "type": {"type": "string", "format": "uri"},
                "title": {"type": "string"},
                "status": {"type": "integer", "minimum": 400, "maximum": 599},
                "detail": {"type": "string"},
                "instance": {"type": "string", "format": "uri-reference"},
                "violations": {"type": "array", "items": _schema("Violation")},
                "notificatieStatus": {
                    "$ref": "#/components/schemas/NotificatieStatus",
                    "description": "Bij een geweigerde annulering: de huidige status.",
                },
            },
        },
    }


_SUMMARY_FIELDS = [
    "notificatieId",
    "berichtType",
    "regie",
    "status",
    "reden",
    "versie",
    "aangenomenOp",
    "bijgewerktOp",
    "geldigTot",
]


def _summary_properties() -> dict[str, Any]:
    return {
        "notificatieId": {"type": "string", "format": "uuid"},
        "berichtType": {"type": "string"},
        "regie": {"type": "string", "enum": ["decentraal", "centraal"]},
        "status": _schema("NotificatieStatus"),
        "reden": _schema("Reden"),
        "versie": {
            "type": "integer",
            "minimum": 1,
            "description": "Stijgt met één bij elke statusovergang; gelijk aan `sequence` in "
            "de CloudEvents.",
        },
        "aangenomenOp": {"type": "string", "format": "date-time"},
        "bijgewerktOp": {"type": "string", "format": "date-time"},
        "geldigTot": {"type": "string", "format": "date-time"},
    }


def _batch_schema(item: str) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["notificaties"],
        "description": (
            "Eén aanlevering van 1 tot 1000 notificaties, als geheel gevalideerd en als geheel "
            "aangenomen of geweigerd. Een batchId van een element moet gelijk zijn aan die van "
            "de batch; een dvRef mag maar één keer in een batch voorkomen." + LENGTHS_AND_NULLS
        ),
        "properties": {
            "batchId": {"type": "string", "format": "uuid"},
            "notificaties": {
                "type": "array",
                "minItems": 1,
                "maxItems": v.BATCH_MAX,
                "items": _schema(item),
            },
        },
    }


def _components() -> dict[str, Any]:
    violation_example = _problem_example(
        "ongeldige-invoer",
        400,
        "De invoer is ongeldig.",
        "Een of meer velden zijn ongeldig.",
        violations=[
            {"field": "emailAdres", "in": "body", "message": "is geen geldig e-mailadres"},
        ],
    )
    return {
        "schemas": _schemas(),
        "headers": {
            "ApiVersion": {
                "description": "Volledige versie van de API (SemVer).",
                "schema": {"type": "string", "examples": [API_VERSION]},
            },
            "Location": {
                "description": "URI van de aangenomen notificatie.",
                "schema": {"type": "string", "format": "uri-reference"},
            },
            "ETag": {
                "description": 'De versie van de notificatie als sterke ETag, bv. "4".',
                "schema": {"type": "string"},
            },
            "RetryAfter": {
                "description": "Aantal seconden waarna een nieuwe poging zin heeft.",
                "schema": {"type": "integer", "minimum": 1},
            },
            "WwwAuthenticate": {
                "description": "RFC 6750 challenge.",
                "schema": {"type": "string"},
            },
        },
        "parameters": {
            "NotificatieId": {
                "name": "notificatieId",
                "in": "path",
                "required": True,
                "schema": {"type": "string", "format": "uuid"},
            },
        },
        "responses": {
            "OngeldigeInvoer": _problem_response("Ongeldige invoer.", violation_example),
            "NietGeauthenticeerd": {
                **_problem_response(
                    "Geen of geen geldig bearer-token.",
                    _problem_example(
                        "niet-geauthenticeerd", 401, "Niet geauthenticeerd.", "token is verlopen"
                    ),
                ),
                "headers": {"WWW-Authenticate": _ref("headers", "WwwAuthenticate")},
            },
            "GeenToegang": _problem_response(
                "Het OIN uit het token hoort niet bij een bekende dienstverlener.",
                _problem_example(
                    "geen-toegang",
                    403,
                    "Geen toegang.",
                    "Deze dienstverlener is niet bekend bij het NMC.",
                ),
            ),
            "NietGevonden": _problem_response(
                "De notificatie bestaat niet voor deze dienstverlener.",
                _problem_example(
                    "niet-gevonden", 404, "Niet gevonden.", "De gevraagde notificatie bestaat niet."
                ),
            ),
            "NietOndersteundMediatype": _problem_response(
                "Het verzoek is geen application/json.",
                _problem_example(
                    "niet-ondersteund-mediatype",
                    415,
                    "Niet-ondersteund mediatype.",
                    "Het verzoek moet application/json zijn.",
                ),
            ),
            "TeVeelVerzoeken": {
                **_problem_response(
                    "Quotum van de dienstverlener bereikt (quotum-overschreden) of aanroeplimiet "
                    "overschreden (aanroeplimiet-overschreden).",
                    _problem_example(
                        "quotum-overschreden",
                        429,
                        "Het quotum is overschreden.",
                        "Het quotum van deze dienstverlener is bereikt; probeer het later opnieuw.",
                    ),
                ),
                "headers": {"Retry-After": _ref("headers", "RetryAfter")},
            },
            "NietBeschikbaar": {
                "description": (
                    "Tijdelijk niet beschikbaar: de database antwoordt nu niet (bij de feed ook: "
                    "de verwerkingslog, of te veel open stromen). Probeer het na Retry-After "
                    "opnieuw; een aanname mag herhaald worden, zij is idempotent."
                ),
                "headers": {"Retry-After": _ref("headers", "RetryAfter")},
                "content": {
                    _PROBLEM: {
                        "schema": _schema("Problem"),
                        "example": {
                            "type": "about:blank",
                            "title": "Service Unavailable",
                            "status": 503,
                            "detail": "Het NMC is tijdelijk niet bereikbaar; probeer het later "
                            "opnieuw.",
                        },
                    }
                },
            },
            "InterneFout": _problem_response(
                "Interne fout.",
                _problem_example(
                    "interne-fout",
                    500,
                    "Interne fout.",
                    "Er ging iets mis in het NMC; probeer het later opnieuw.",
                ),
            ),
        },
        "securitySchemes": {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "JWT",
                "description": (
                    "OAuth2-token van de IAM-gateway van MOZa (private_key_jwt), met het OIN "
                    "van de dienstverlener als claim."
                ),
            }
        },
    }


def _errors(*codes: str) -> dict[str, Any]:
    names = {
        "400": "OngeldigeInvoer",
        "401": "NietGeauthenticeerd",
        "403": "GeenToegang",
        "404": "NietGevonden",
        "415": "NietOndersteundMediatype",
        "429": "TeVeelVerzoeken",
        "500": "InterneFout",
        "503": "NietBeschikbaar",
    }
    return {code: _ref("responses", names[code]) for code in codes}


def _intake_operation(regie: str, batch: bool) -> dict[str, Any]:
    title = regie.capitalize()
    request_schema = f"{title}BatchVerzoek" if batch else f"{title}NotificatieVerzoek"
    operation_id = f"aannemen{title}{'Batch' if batch else ''}"
    if batch:
        accepted = {
            "description": "Alle notificaties aangenomen.",
            "headers": _api_version_headers(),
            "content": {
                _JSON: {
                    "schema": _schema("BatchAanname"),
                    "example": {
                        "batchId": _EXAMPLE_BATCH,
                        "notificaties": [{"notificatieId": _EXAMPLE_ID}],
                    },
                }
            },
        }
        summary = f"Neem een batch notificaties aan ({regie}e regie)"
    else:
        accepted = {
            "description": (
                "Aangenomen. Hetzelfde verzoek nog eens (zelfde dvRef, zelfde inhoud) geeft "
                "dezelfde notificatieId."
            ),
            "headers": _api_version_headers(Location=_ref("headers", "Location")),
            "content": {_JSON: {"schema": _schema("Aanname")}},
        }
        summary = f"Neem een notificatie aan ({regie}e regie)"
    return {
        "operationId": operation_id,
        "tags": ["Aanname"],
        "summary": summary,
        "requestBody": {
            "required": True,
            "description": JSON_BODY_RULE,
            "content": {_JSON: {"schema": _schema(request_schema)}},
        },
        "responses": {
            "202": accepted,
            **_errors("400", "401", "403"),
            "409": _problem_response(
                "Deze dvRef is al gebruikt voor een notificatie met een andere inhoud.",
                _problem_example(
                    "conflict",
                    409,
                    "Conflict met de huidige toestand.",
                    "Deze dvRef is al gebruikt voor een notificatie met een andere inhoud.",
                ),
            ),
            **_errors("415", "429", "500", "503"),
        },
    }


def _paths() -> dict[str, Any]:
    return {
        "/decentraal/notificaties": {"post": _intake_operation("decentraal", batch=False)},
        "/decentraal/notificaties/_batch": {"post": _intake_operation("decentraal", batch=True)},
        "/centraal/notificaties": {"post": _intake_operation("centraal", batch=False)},
        "/centraal/notificaties/_batch": {"post": _intake_operation("centraal", batch=True)},
        "/notificaties": {
            "get": {
                "operationId": "zoekenNotificaties",
                "tags": ["Status"],
                "summary": "Zoek de eigen notificaties met een dvRef",
                "parameters": [
                    {
                        "name": "dvRef",
                        "in": "query",
                        "required": True,
                        "description": "De dvRef van de aanname. " + DVREF_RULE,
                        "schema": {"type": "string", "minLength": 1, "maxLength": v.DVREF_MAX},
                    },
                    {
                        "name": "limiet",
                        "in": "query",
                        "required": False,
                        "schema": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": v.LIJST_LIMIET_MAX,
                            "default": v.LIJST_LIMIET_DEFAULT,
                        },
                    },
                    {
                        "name": "cursor",
                        "in": "query",
                        "required": False,
                        "description": "De cursor uit de vorige pagina.",
                        "schema": {"type": "string", "pattern": v.CURSOR_PATTERN},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "Een pagina notificaties, nieuwste eerst.",
                        "headers": _api_version_headers(),
                        "content": {_JSON: {"schema": _schema("NotificatieLijst")}},
                    },
                    **_errors("400", "401", "403", "429", "500", "503"),
                },
            }
        },
        "/notificaties/{notificatieId}": {
            "parameters": [_ref("parameters", "NotificatieId")],
            "get": {
                "operationId": "opvragenNotificatie",
                "tags": ["Status"],
                "summary": "Vraag de status van een notificatie op, met versie en pogingen",
                "parameters": [
                    {
                        "name": "If-None-Match",
                        "in": "header",
                        "required": False,
                        "description": "De ETag van een eerder antwoord; bij gelijke versie volgt "
                        "304.",
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "De notificatie.",
                        "headers": _api_version_headers(ETag=_ref("headers", "ETag")),
                        "content": {_JSON: {"schema": _schema("Notificatie")}},
                    },
                    "304": {
                        "description": "Ongewijzigd sinds de meegegeven ETag.",
                        "headers": _api_version_headers(ETag=_ref("headers", "ETag")),
                    },
                    **_errors("400", "401", "403", "404", "429", "500", "503"),
                },
            },
            "delete": {
                "operationId": "annulerenNotificatie",
                "tags": ["Status"],
                "summary": "Annuleer een notificatie (alleen zolang zij aangenomen is)",
                "responses": {
                    "204": {"description": "Geannuleerd.", "headers": _api_version_headers()},
                    **_errors("400", "401", "403", "404"),
                    "409": _problem_response(
                        "De notificatie is al in behandeling of afgerond; "
                        "notificatieStatus geeft de huidige status.",
                        _problem_example(
                            "conflict",
                            409,
                            "Conflict met de huidige toestand.",
                            "Annuleren kan alleen zolang de notificatie de status aangenomen "
                            "heeft.",
                            notificatieStatus="verzonden",
                        ),
                    ),
                    **_errors("429", "500", "503"),
                },
            },
        },
        "/openapi.json": {
            "get": {
                "operationId": "opvragenOpenapi",
                "tags": ["Documentatie"],
                "summary": "Dit OpenAPI-document",
                "security": [],
                "responses": {
                    "200": {
                        "description": "Het OpenAPI-document.",
                        "headers": _api_version_headers(),
                        "content": {_JSON: {"schema": {"type": "object"}}},
                    },
                    **_errors("500"),
                },
            }
        },
    }


def _document(server_url: str, contact: dict[str, str]) -> dict[str, Any]:
    from nmc.api import openapi_bewijs, openapi_feed  # build on this module's helpers

    document = _base_document(server_url, contact)
    document["info"]["description"] += openapi_feed.DESCRIPTION + openapi_bewijs.DESCRIPTION
    document["tags"][-1:-1] = openapi_feed.TAGS + openapi_bewijs.TAGS
    paths = document["paths"]
    document["paths"] = {
        **{path: item for path, item in paths.items() if path != "/openapi.json"},
        **openapi_bewijs.paths(),
        **openapi_feed.paths(),
        "/openapi.json": paths["/openapi.json"],
    }
    document["webhooks"] = openapi_feed.webhooks()
    components = document["components"]
    components["schemas"].update(openapi_feed.schemas())
    components["schemas"].update(openapi_bewijs.schemas())
    components["responses"].update(openapi_feed.responses())
    components["securitySchemes"].update(openapi_feed.security_schemes())
    return document


def _base_document(server_url: str, contact: dict[str, str]) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "NMC: notificaties voor dienstverleners",
            "version": API_VERSION,
            "description": (
                "Notificatie Management Component van MijnOverheid Zakelijk. Een dienstverlener "
                "levert een notificatie aan (decentraal met e-mailadres, centraal met BSN, KVK "
                "of RSIN), volgt de status en kan de bezorging bewijzen. Authenticatie: "
                "bearer-token met het OIN van de dienstverlener. Fouten zijn RFC 9457-problemen."
            ),
            "contact": dict(contact),
        },
        "servers": [{"url": server_url, "description": "NMC"}],
        "security": [{"bearer": []}],
        "tags": [
            {"name": "Aanname", "description": "Notificaties aanleveren."},
            {"name": "Status", "description": "Status opvragen, zoeken en annuleren."},
            {"name": "Documentatie", "description": "Deze API-beschrijving."},
        ],
        "paths": _paths(),
        "components": _components(),
    }


def openapi_document(
    server_url: str = DEFAULT_SERVER_URL, contact: dict[str, str] | None = None
) -> dict[str, Any]:
    """The document as a fresh dict; serve it with `json.dumps` at BASE_PATH + "/openapi.json"."""
    return _document(server_url, DEFAULT_CONTACT if contact is None else contact)
