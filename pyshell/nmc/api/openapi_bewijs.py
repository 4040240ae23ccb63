"""The delivery proof's part of the OpenAPI document: the afleverbewijs and the geschiedenis
of one notification (SPEC §7), with the proof's content as a schema of its own.

The proof itself is a compact JWS (`application/jose`, a string); its payload, which a DV
reads after verifying the signature, is the schema `Afleverbewijs`. The history is plain
JSON (`Geschiedenis`). Examples are those of one notification: mailbox full, then delivered
on the resend and settled.
"""

from typing import Any

from nmc.afleverbewijs_signing import MEDIA_TYPE, TYP
from nmc.api.openapi import POGING_STATUSES, _api_version_headers, _errors, _ref, _schema
from nmc.api.routes_bewijs import (
    GESCHIEDENIS_CURSOR_PATTERN,
    GESCHIEDENIS_LIMIET_DEFAULT,
    GESCHIEDENIS_LIMIET_MAX,
)
from nmc.status import NOTIFICATIE_STATUSES

_JSON = "application/json"
_EXAMPLE_ID = "0b6f6c5e-7a35-4e0e-9d7b-6d2f1c7c1a11"
_EXAMPLE_SOURCE = "urn:nld:oin:00000001234567890000:systeem:nmc"
_TEMPLATE = "a0a0a0a0-0000-4000-8000-000000000001"
_NOTIFY_1 = "6f1d4c4e-2b7a-4c1e-9a51-3f0c5e2d7b10"
_NOTIFY_2 = "9b8e1a20-5d3c-4f6a-8e27-1c4b7d9e0f21"
# The shape of a compact JWS: three base64url parts (RFC 7515 §7.1).
JWS_PATTERN = r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"
_EXAMPLE_JWS = (
    "eyJhbGciOiJFUzI1NiIsImtpZCI6Im5tYy1hZmxldmVyYmV3aWpzLTEiLCJ0eXAiOiJhZmxldmVyYmV3aWpzK2p3dCJ9"
    ".eyJpc3MiOiJ1cm46bmxkOm9pbjowMDAwMDAwMTIzNDU2Nzg5MDAwMDpzeXN0ZWVtOm5tYyJ9"
    ".MEUCIQDf2l8vJ3Hk0YwS1qQv9nP4bZr6cT0aXy7uK2eLm5oN8gIgR3tU1vW9xZ0aB4cD6eF8gH0iJ2kL4mN6oP8qR0sT"
)

TAGS = [
    {
        "name": "Afleverbewijs",
        "description": "Het door het NMC ondertekende afleverbewijs van een notificatie en haar "
        "volledige geschiedenis.",
    }
]

DESCRIPTION = (
    " Per notificatie geeft het NMC een afleverbewijs: een JWS (RFC 7515), ondertekend met een "
    "sleutel uit dezelfde JWKS, die iedereen offline kan controleren; de geschiedenis geeft "
    "dezelfde feiten als gewone JSON. Beide blijven beschikbaar zolang het NMC de notificatie "
    "bewaart, ook nadat haar gegevens gewist zijn."
)

_TIME = {"type": "string", "format": "date-time"}
_TIME_OR_NULL = {"type": ["string", "null"], "format": "date-time"}
_UUID_OR_NULL = {"type": ["string", "null"], "format": "uuid"}
_DURATION = {"type": "string", "format": "duration"}


def schemas() -> dict[str, Any]:
    return {
        "Afleverbewijs": {
            "type": "object",
            "description": (
                "De inhoud (payload) van het afleverbewijs, na controle van de handtekening. "
                "Geen persoonsgegevens: geen e-mailadres, identificerend nummer, dvRef of "
                "personalisatie. Het definitieve bewijs (definitief: true) is bij elke latere "
                "opvraging hetzelfde, op uitgegevenOp na; alleen bij bezorgstatus-onbekend, de "
                "ene eindstatus die een late receipt nog mag corrigeren, kan een later bewijs "
                "een hogere versie hebben. Alle tijden in UTC."
            ),
            "required": [
                "iss",
                "sub",
                "formaat",
                "definitief",
                "uitgegevenOp",
                "uitgegevenDoor",
                "notificatie",
                "pogingen",
                "vaststelling",
                "eindstatus",
                "events",
            ],
            "properties": {
                "iss": {"type": "string", "description": "Het NMC dat het bewijs uitgaf."},
                "sub": {"type": "string", "format": "uuid", "description": "De notificatieId."},
                "formaat": {"type": "string", "const": "nmc-afleverbewijs/1"},
                "definitief": {
                    "type": "boolean",
                    "description": "Of de notificatie een eindstatus heeft.",
                },
                "uitgegevenOp": {
                    **_TIME,
                    "description": "Wanneer het NMC dit bewijs uitgaf (de klok van het NMC).",
                },
                "uitgegevenDoor": {"type": "string", "description": "Gelijk aan iss."},
                "notificatie": _schema("BewijsNotificatie"),
                "pogingen": {"type": "array", "items": _schema("BewijsPoging")},
                "vaststelling": {
                    "oneOf": [_schema("Vaststelling"), {"type": "null"}],
                    "description": "De vaststelling van de bezorging; null als er geen is.",
                },
                "eindstatus": {
                    "oneOf": [_schema("Eindstatus"), {"type": "null"}],
                    "description": "null zolang de notificatie geen eindstatus heeft.",
                },
                "events": {
                    "type": "array",
                    "description": "De volledige eventketen, op sequence (1, 2, ... versie).",
                    "items": _schema("BewijsEvent"),
                },
            },
            "examples": [_bewijs_example()],
        },
        "BewijsNotificatie": {
            "type": "object",
            "required": [
                "notificatieId",
                "dienstverlener",
                "berichtType",
                "regie",
                "notifynlTemplateId",
                "templateVersie",
                "aangenomenOp",
                "geldigTot",
                "status",
                "reden",
                "versie",
            ],
            "properties": {
                "notificatieId": {"type": "string", "format": "uuid"},
                "dienstverlener": {
                    "type": "object",
                    "required": ["oin", "naam"],
                    "properties": {
                        "oin": {"type": "string", "pattern": "^[0-9]{20}$"},
                        "naam": {"type": "string"},
                    },
                },
                "berichtType": {"type": "string"},
                "regie": {"type": "string", "enum": ["decentraal", "centraal"]},
                "notifynlTemplateId": {"type": "string", "format": "uuid"},
                "templateVersie": {
                    "type": ["integer", "null"],
                    "description": "De versie van de template volgens de receipts van NotifyNL.",
                },
                "aangenomenOp": _TIME,
                "geldigTot": _TIME,
                "status": _schema("NotificatieStatus"),
                "reden": _schema("Reden"),
                "versie": {"type": "integer", "minimum": 1},
            },
        },
        "BewijsPoging": {
            "type": "object",
            "required": [
                "nummer",
                "status",
                "notifynlId",
                "duplicaatNotifynlIds",
                "verzondenOp",
                "afgerondOp",
                "receipts",
            ],
            "properties": {
                **_poging_properties(),
                "receipts": {
                    "type": "array",
                    "description": "Elke receipt tot de eindstatus, in volgorde van verwerking.",
                    "items": _schema("Receipt"),
                },
            },
        },
        "Receipt": {
            "type": "object",
            "required": [
                "status",
                "bron",
                "notifynlId",
                "afgerondOp",
                "verzondenOp",
                "ontvangenOp",
                "toegepast",
                "resultaat",
                "templateId",
                "templateVersie",
            ],
            "properties": _receipt_properties(),
        },
        "Vaststelling": {
            "type": "object",
            "required": [
                "poging",
                "afgerondOp",
                "termijn",
                "callbackVenster",
                "geplandOp",
                "vastgesteldOp",
            ],
            "properties": {
                "poging": {"type": "integer", "description": "De poging die bezorgd werd."},
                "afgerondOp": {
                    **_TIME,
                    "description": "completed_at van die poging: het begin van de termijn.",
                },
                "termijn": {**_DURATION, "description": "De vaststellingstermijn (MEBV)."},
                "callbackVenster": {
                    **_DURATION,
                    "description": "De marge voor een late receipt van NotifyNL.",
                },
                "geplandOp": {**_TIME, "description": "Wanneer de vaststelling gepland stond."},
                "vastgesteldOp": {
                    **_TIME_OR_NULL,
                    "description": "Wanneer zij plaatsvond; null zolang de notificatie bezorgd is.",
                },
            },
        },
        "Eindstatus": {
            "type": "object",
            "required": ["status", "reden", "sequence", "tijdstip"],
            "properties": {
                "status": _schema("NotificatieStatus"),
                "reden": _schema("Reden"),
                "sequence": {"type": "integer", "minimum": 1},
                "tijdstip": _TIME,
            },
        },
        "BewijsEvent": {
            "type": "object",
            "required": ["eventId", "sequence", "van", "naar", "reden", "tijdstip"],
            "properties": {
                "eventId": {"type": "integer", "description": "Het id van het CloudEvent."},
                "sequence": {"type": "integer", "minimum": 1},
                "van": {"type": ["string", "null"], "enum": [*NOTIFICATIE_STATUSES, None]},
                "naar": _schema("NotificatieStatus"),
                "reden": _schema("Reden"),
                "tijdstip": _TIME,
            },
        },
        "Geschiedenis": {
            "type": "object",
            "description": (
                "Dezelfde feiten als het afleverbewijs, als gewone JSON en per pagina: de "
                "notificatie, de pogingen en de vaststelling op elke pagina, daarna ten hoogste "
                "limiet events en limiet receipts. Ook receipts die na de eindstatus kwamen en "
                "niets veranderden (naEindstatus: true; niet in het afleverbewijs)."
            ),
            "required": [
                "notificatie",
                "pogingen",
                "vaststelling",
                "events",
                "receipts",
                "volgende",
            ],
            "properties": {
                "notificatie": {
                    "allOf": [_schema("BewijsNotificatie")],
                    "type": "object",
                    "required": ["definitief"],
                    "properties": {"definitief": {"type": "boolean"}},
                },
                "pogingen": {"type": "array", "items": _schema("GeschiedenisPoging")},
                "vaststelling": {"oneOf": [_schema("Vaststelling"), {"type": "null"}]},
                "events": {"type": "array", "items": _schema("BewijsEvent")},
                "receipts": {"type": "array", "items": _schema("GeschiedenisReceipt")},
                "volgende": {
                    "type": ["string", "null"],
                    "pattern": GESCHIEDENIS_CURSOR_PATTERN,
                    "description": "Geef mee als `cursor` voor de volgende pagina; null op de "
                    "laatste.",
                },
            },
            "examples": [_geschiedenis_example()],
        },
        "GeschiedenisPoging": {
            "type": "object",
            "required": [
                "nummer",
                "status",
                "notifynlId",
                "duplicaatNotifynlIds",
                "verzondenOp",
                "afgerondOp",
            ],
            "properties": _poging_properties(),
        },
        "GeschiedenisReceipt": {
            "type": "object",
            "required": [
                "poging",
                "status",
                "bron",
                "notifynlId",
                "afgerondOp",
                "verzondenOp",
                "ontvangenOp",
                "toegepast",
                "resultaat",
                "templateId",
                "templateVersie",
                "naEindstatus",
            ],
            "properties": {
                "poging": {"type": "integer", "description": "Het nummer van de poging."},
                **_receipt_properties(),
                "naEindstatus": {
                    "type": "boolean",
                    "description": "Verwerkt toen de notificatie al een eindstatus had, zonder "
                    "iets te veranderen.",
                },
            },
        },
    }


def paths() -> dict[str, Any]:
    return {
        "/notificaties/{notificatieId}/afleverbewijs": {
            "parameters": [_ref("parameters", "NotificatieId")],
            "get": _afleverbewijs(),
        },
        "/notificaties/{notificatieId}/geschiedenis": {
            "parameters": [_ref("parameters", "NotificatieId")],
            "get": _geschiedenis(),
        },
    }


def _afleverbewijs() -> dict[str, Any]:
    return {
        "operationId": "opvragenAfleverbewijs",
        "tags": ["Afleverbewijs"],
        "summary": "Vraag het ondertekende afleverbewijs van een notificatie op",
        "description": (
            "Een JWS (RFC 7515, compacte vorm) ondertekend door het NMC met ES256 of RS256; de "
            f"header noemt de sleutel (kid) en typ {TYP}. Controleer de handtekening met de JWKS "
            "van het NMC (/.well-known/jwks.json), daarna iss en sub (de notificatieId) en de "
            "eventketen: sequence 1 tot en met versie zonder gat, elke overgang toegestaan, het "
            "laatste event gelijk aan de status. De payload volgt het schema Afleverbewijs. Een "
            "bewijs van een notificatie zonder eindstatus zegt dat (definitief: false). Ook na "
            "het wissen van de gegevens, tot het einde van de bewaartermijn. Elke opvraging "
            "wordt als verstrekking vastgelegd in het verwerkingenlogboek."
        ),
        "responses": {
            "200": {
                "description": "Het afleverbewijs als compacte JWS.",
                "headers": _api_version_headers(),
                "content": {
                    MEDIA_TYPE: {
                        "schema": {
                            "type": "string",
                            "pattern": JWS_PATTERN,
                            "description": "header.payload.handtekening; de payload is een "
                            "Afleverbewijs.",
                        },
                        "example": _EXAMPLE_JWS,
                    }
                },
            },
            **_errors("400", "401", "403", "404", "500", "503"),
        },
    }


def _geschiedenis() -> dict[str, Any]:
    return {
        "operationId": "opvragenGeschiedenis",
        "tags": ["Afleverbewijs"],
        "summary": "Vraag de geschiedenis van een notificatie op: events en receipts per poging",
        "description": (
            "Dezelfde feiten als het afleverbewijs, als gewone JSON voor de eigen systemen, per "
            "pagina (volg `volgende` als `cursor`). Elke pagina wordt als verstrekking "
            "vastgelegd in het verwerkingenlogboek."
        ),
        "parameters": [
            {
                "name": "limiet",
                "in": "query",
                "required": False,
                "description": "Ten hoogste zoveel events en zoveel receipts per pagina.",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": GESCHIEDENIS_LIMIET_MAX,
                    "default": GESCHIEDENIS_LIMIET_DEFAULT,
                },
            },
            {
                "name": "cursor",
                "in": "query",
                "required": False,
                "description": "De waarde van `volgende` uit de vorige pagina.",
                "schema": {"type": "string", "pattern": GESCHIEDENIS_CURSOR_PATTERN},
            },
        ],
        "responses": {
            "200": {
                "description": "Een pagina van de geschiedenis.",
                "headers": _api_version_headers(),
                "content": {
                    _JSON: {
                        "schema": _schema("Geschiedenis"),
                        "example": _geschiedenis_example(),
                    }
                },
            },
            **_errors("400", "401", "403", "404", "500", "503"),
        },
    }


def _poging_properties() -> dict[str, Any]:
    return {
        "nummer": {"type": "integer", "enum": [1, 2]},
        "status": {"type": "string", "enum": list(POGING_STATUSES)},
        "notifynlId": _UUID_OR_NULL,
        "duplicaatNotifynlIds": {
            "type": "array",
            "description": "Andere NotifyNL-ids van deze poging (een herhaalde verzending).",
            "items": {"type": "string", "format": "uuid"},
        },
        "verzondenOp": {**_TIME_OR_NULL, "description": "sent_at van NotifyNL."},
        "afgerondOp": {**_TIME_OR_NULL, "description": "completed_at van NotifyNL (de bron)."},
        "contactgegevenId": {
            **_UUID_OR_NULL,
            "description": "Alleen bij centrale regie: het contactgegeven van de "
            "Profielservice dat gebruikt is (nooit het adres zelf).",
        },
    }


def _receipt_properties() -> dict[str, Any]:
    return {
        "status": {"type": "string", "description": "De status zoals NotifyNL die gaf."},
        "bron": {
            "type": "string",
            "enum": ["callback", "navraag"],
            "description": "callback: de receipt van NotifyNL; navraag: het antwoord op de "
            "navraag van het NMC.",
        },
        "notifynlId": _UUID_OR_NULL,
        "afgerondOp": {**_TIME_OR_NULL, "description": "completed_at: het tijdstip van de bron."},
        "verzondenOp": {**_TIME_OR_NULL, "description": "sent_at uit de receipt."},
        "ontvangenOp": {**_TIME, "description": "Wanneer het NMC de receipt ontving."},
        "toegepast": {
            "type": "boolean",
            "description": "true: de receipt veranderde de uitkomst; false: alleen vastgelegd.",
        },
        "resultaat": {
            "type": "string",
            "description": "Wat de verwerking deed (bezorgd, herverzenden, niet-bezorgbaar, "
            "vastgelegd, ouder, niet-definitief, onbekende-status, ...).",
        },
        "templateId": _UUID_OR_NULL,
        "templateVersie": {"type": ["integer", "null"]},
    }


def _example_receipts() -> list[dict[str, Any]]:
    return [
        {
            "status": "temporary-failure",
            "bron": "callback",
            "notifynlId": _NOTIFY_1,
            "afgerondOp": "2025-03-01T09:00:05.120000+00:00",
            "verzondenOp": "2025-03-01T09:00:02.010000+00:00",
            "ontvangenOp": "2025-03-01T09:00:05.300000+00:00",
            "toegepast": True,
            "resultaat": "herverzenden",
            "templateId": _TEMPLATE,
            "templateVersie": 3,
        },
        {
            "status": "delivered",
            "bron": "callback",
            "notifynlId": _NOTIFY_2,
            "afgerondOp": "2025-03-01T09:00:09.480000+00:00",
            "verzondenOp": "2025-03-01T09:00:07.200000+00:00",
            "ontvangenOp": "2025-03-01T09:00:09.700000+00:00",
            "toegepast": True,
            "resultaat": "bezorgd",
            "templateId": _TEMPLATE,
            "templateVersie": 3,
        },
    ]


def _example_events() -> list[dict[str, Any]]:
    steps = [
        (None, "aangenomen", "2025-03-01T09:00:00.500000+00:00"),
        ("aangenomen", "in-verzending", "2025-03-01T09:00:01.800000+00:00"),
        ("in-verzending", "verzonden", "2025-03-01T09:00:02.100000+00:00"),
        ("verzonden", "verzonden", "2025-03-01T09:00:06.900000+00:00"),
        ("verzonden", "bezorgd", "2025-03-01T09:00:09.700000+00:00"),
        ("bezorgd", "definitief-bezorgd", "2025-03-08T09:31:00+00:00"),
    ]
    return [
        {"eventId": 4100 + n, "sequence": n, "van": van, "naar": naar, "reden": None,
         "tijdstip": tijdstip}
        for n, (van, naar, tijdstip) in enumerate(steps, start=1)
    ]  # fmt: skip


def _example_notificatie() -> dict[str, Any]:
    return {
        "notificatieId": _EXAMPLE_ID,
        "dienstverlener": {"oin": "00000001823288444000", "naam": "Gemeente Voorbeeld"},
        "berichtType": "herinnering",
        "regie": "decentraal",
        "notifynlTemplateId": _TEMPLATE,
        "templateVersie": 3,
        "aangenomenOp": "2025-03-01T09:00:00.500000+00:00",
        "geldigTot": "2025-03-04T09:00:00.500000+00:00",
        "status": "definitief-bezorgd",
        "reden": None,
        "versie": 6,
    }


def _example_pogingen() -> list[dict[str, Any]]:
    receipts = _example_receipts()
    return [
        {"nummer": 1, "status": "tijdelijk-mislukt", "notifynlId": _NOTIFY_1,
         "duplicaatNotifynlIds": [], "verzondenOp": receipts[0]["verzondenOp"],
         "afgerondOp": receipts[0]["afgerondOp"]},
        {"nummer": 2, "status": "bezorgd", "notifynlId": _NOTIFY_2, "duplicaatNotifynlIds": [],
         "verzondenOp": receipts[1]["verzondenOp"], "afgerondOp": receipts[1]["afgerondOp"]},
    ]  # fmt: skip


def _example_vaststelling() -> dict[str, Any]:
    return {
        "poging": 2,
        "afgerondOp": "2025-03-01T09:00:09.480000+00:00",
        "termijn": "P7D",
        "callbackVenster": "PT30M",
        "geplandOp": "2025-03-08T09:30:09.480000+00:00",
        "vastgesteldOp": "2025-03-08T09:31:00+00:00",
    }


def _bewijs_example() -> dict[str, Any]:
    receipts = _example_receipts()
    pogingen = _example_pogingen()
    for poging, receipt in zip(pogingen, receipts, strict=True):
        poging["receipts"] = [receipt]
    return {
        "iss": _EXAMPLE_SOURCE,
        "sub": _EXAMPLE_ID,
        "formaat": "nmc-afleverbewijs/1",
        "definitief": True,
        "uitgegevenOp": "2025-03-10T14:02:11.250000+00:00",
        "uitgegevenDoor": _EXAMPLE_SOURCE,
        "notificatie": _example_notificatie(),
        "pogingen": pogingen,
        "vaststelling": _example_vaststelling(),
        "eindstatus": {
            "status": "definitief-bezorgd",
            "reden": None,
            "sequence": 6,
            "tijdstip": "2025-03-08T09:31:00+00:00",
        },
        "events": _example_events(),
    }


def _geschiedenis_example() -> dict[str, Any]:
    receipts = [
        {"poging": nummer, **receipt, "naEindstatus": False}
        for nummer, receipt in zip((1, 2), _example_receipts(), strict=True)
    ]
    return {
        "notificatie": {**_example_notificatie(), "definitief": True},
        "pogingen": _example_pogingen(),
        "vaststelling": _example_vaststelling(),
        "events": _example_events(),
        "receipts": receipts,
        "volgende": None,
    }
