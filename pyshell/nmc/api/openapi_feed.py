"""The feed's part of the OpenAPI document: changes, acknowledgement, snapshot, the
webhook resume, and the webhook the NMC calls (`webhooks`, OpenAPI 3.1).

Not documented as paths: GET /.well-known/jwks.json and its twin under /api/nmc/v1. Their
contract is RFC 7517 (a JWK Set) at an RFC 8615 well-known URI, whose leading dot the NL API
Design Rules' kebab-case rule cannot accept; the info description names them. /metrics and
/health/* are for the platform, not for DVs.
"""

from typing import Any

from nmc.api.feed_query import (
    FEED_LIMIET_MAX,
    SNAPSHOT_LIMIET_DEFAULT,
    SNAPSHOT_LIMIET_MAX,
    TOKEN_PATTERN,
)
from nmc.api.openapi import (
    JSON_BODY_RULE,
    _api_version_headers,
    _errors,
    _problem_example,
    _problem_response,
    _ref,
    _schema,
)
from nmc.cloudevents import ATTRIBUTES, TYPE_PREFIX
from nmc.status import NOTIFICATIE_STATUSES

_JSON = "application/json"
_SSE = "text/event-stream"
_EXAMPLE_ID = "0b6f6c5e-7a35-4e0e-9d7b-6d2f1c7c1a11"
_EXAMPLE_CURSOR = "AQAAAAAAAAEAAAABAAAAAAAAAvwAAAAAAAAAKgAGAx5dHvcAd7l2CrxlN3fszwfu2Da3UQ"
_EXAMPLE_SOURCE = "urn:nld:oin:00000001234567890000:systeem:nmc"

TAGS = [
    {
        "name": "Wijzigingen",
        "description": "Elke statuswijziging van de eigen notificaties, als feed met cursor "
        "(polling of Server-Sent Events), bevestiging en snapshot.",
    },
    {"name": "Webhook", "description": "De optionele webhook van de dienstverlener."},
]

DESCRIPTION = (
    " Statuswijzigingen volgt een dienstverlener met de feed (CloudEvents 1.0) en bevestigt wat "
    "verwerkt is; een snapshot geeft een nieuw startpunt. Een optionele webhook krijgt dezelfde "
    "events in batches, met een door het NMC ondertekend bearer-token; de publieke sleutels "
    "staan (zonder authenticatie) op /.well-known/jwks.json en /api/nmc/v1/.well-known/jwks.json."
)


def schemas() -> dict[str, Any]:
    return {
        "StatusWijziging": {
            "type": "object",
            "description": "De inhoud (data) van een CloudEvent: één statusovergang.",
            "required": ["van", "naar", "reden", "versie"],
            "properties": {
                "van": {
                    "type": ["string", "null"],
                    "enum": [*NOTIFICATIE_STATUSES, None],
                    "description": "De status ervoor; null bij de aanname.",
                },
                "naar": _schema("NotificatieStatus"),
                "reden": _schema("Reden"),
                "versie": {"type": "integer", "minimum": 1},
            },
        },
        "CloudEvent": {
            "type": "object",
            "description": (
                "CloudEvents 1.0 (JSON). Er is geen volgorde beloofd tussen events van één "
                "notificatie: pas een event alleen toe als zijn sequence hoger is dan de versie "
                "die u al heeft."
            ),
            "required": list(ATTRIBUTES),
            "properties": {
                "specversion": {"type": "string", "const": "1.0"},
                "id": {"type": "string", "description": "Het event-id."},
                "source": {"type": "string", "format": "uri", "description": "Het NMC."},
                "type": {
                    "type": "string",
                    "enum": [TYPE_PREFIX + status for status in NOTIFICATIE_STATUSES],
                },
                "subject": {
                    "type": "string",
                    "format": "uuid",
                    "description": "De notificatieId.",
                },
                "time": {
                    "type": "string",
                    "format": "date-time",
                    "description": "Tijdstip van registratie van de overgang (UTC).",
                },
                "sequence": {
                    "type": "string",
                    "pattern": "^[1-9][0-9]*$",
                    "description": "De versie van de notificatie na de overgang, als tekst.",
                },
                "sequencetype": {"type": "string", "const": "Integer"},
                "datacontenttype": {"type": "string", "const": _JSON},
                "data": _schema("StatusWijziging"),
            },
            "examples": [_cloudevent_example()],
        },
        "WijzigingenPagina": {
            "type": "object",
            "required": ["events", "cursor"],
            "properties": {
                "events": {"type": "array", "items": _schema("CloudEvent")},
                "cursor": _cursor(
                    "Geef deze waarde mee als `cursor` voor de volgende pagina, "
                    "ook als de pagina leeg was."
                ),
            },
        },
        "Bevestiging": {
            "type": "object",
            "additionalProperties": False,
            "required": ["cursor"],
            "properties": {"cursor": _cursor("Een cursor tot waar alles verwerkt is.")},
        },
        "SnapshotNotificatie": {
            "type": "object",
            "required": ["notificatieId", "status", "reden", "versie", "bijgewerktOp"],
            "properties": {
                "notificatieId": {"type": "string", "format": "uuid"},
                "status": _schema("NotificatieStatus"),
                "reden": _schema("Reden"),
                "versie": {"type": "integer", "minimum": 1},
                "bijgewerktOp": {"type": "string", "format": "date-time"},
            },
        },
        "SnapshotPagina": {
            "type": "object",
            "required": ["notificaties", "volgende", "cursor"],
            "properties": {
                "notificaties": {"type": "array", "items": _schema("SnapshotNotificatie")},
                "volgende": {
                    "type": ["string", "null"],
                    "pattern": TOKEN_PATTERN,
                    "description": "Geef deze waarde mee als `na` voor de volgende pagina; null "
                    "op de laatste pagina.",
                },
                "cursor": _cursor(
                    "De feedpositie waarmee de hele snapshot (alle pagina's) consistent is: lees "
                    "na de laatste pagina de wijzigingen vanaf deze cursor. Wat intussen "
                    "veranderde komt dan nog eens langs; de sequence-regel vangt dat op."
                ),
            },
        },
    }


def responses() -> dict[str, Any]:
    return {
        "CursorVervallen": _problem_response(
            "De cursor is van een ander tijdperk (na herstel), ouder dan de maximale "
            "cursorleeftijd, of wijst in opgeruimde events: begin opnieuw zonder cursor of met "
            "een snapshot.",
            _problem_example(
                "cursor-vervallen",
                410,
                "De cursor is vervallen.",
                "De cursor is vervallen; begin opnieuw bij het oudste beschikbare event of bij "
                "een snapshot.",
            ),
        ),
        "TeVeelAanroepen": {
            **_problem_response(
                "De aanroeplimiet van de feed is overschreden: meer aanroepen van feed en "
                "snapshot samen dan de dienstverlener per minuut mag doen, of (bij "
                "text/event-stream) al het maximum aantal open stromen van de "
                "dienstverlener.",
                _problem_example(
                    "aanroeplimiet-overschreden",
                    429,
                    "De aanroeplimiet is overschreden.",
                    "Te veel aanroepen in korte tijd; probeer het later opnieuw.",
                ),
            ),
            "headers": {"Retry-After": _ref("headers", "RetryAfter")},
        },
    }


def paths() -> dict[str, Any]:
    return {
        "/notificaties/wijzigingen": {"get": _wijzigingen()},
        "/notificaties/wijzigingen/bevestiging": {"put": _bevestiging()},
        "/notificaties/_snapshot": {"get": _snapshot()},
        "/webhook/hervatten": {"post": _hervatten()},
    }


def webhooks() -> dict[str, Any]:
    return {
        "statuswijzigingen": {
            "post": {
                "operationId": "ontvangenStatuswijzigingen",
                "tags": ["Webhook"],
                "summary": "Het NMC levert een batch events af bij de webhook van de "
                "dienstverlener",
                "description": (
                    "Dezelfde events als de feed, in (xid, id)-volgorde vanaf de afleverpositie "
                    "van de dienstverlener. Het verzoek draagt `Authorization: Bearer <JWT>`, "
                    "ondertekend door het NMC (RS256 of ES256; iss = het NMC, aud = de "
                    "webhook-URL, exp hooguit 5 minuten, jti), te controleren met de JWKS op "
                    "/.well-known/jwks.json, en de header `Nmc-Cursor` met de cursor na het "
                    "laatste event. Een 2xx verschuift alleen de afleverpositie en is geen "
                    "bevestiging. Na mislukte afleveringen pauzeert de webhook met groeiende "
                    "wachttijd (tot een dag); een 410 schakelt hem uit. Hervatten kan met POST "
                    "/webhook/hervatten."
                ),
                "parameters": [
                    {
                        "name": "Nmc-Cursor",
                        "in": "header",
                        "required": True,
                        "description": "De cursor na het laatste event van de batch; bruikbaar "
                        "voor de feed en de bevestiging.",
                        "schema": {"type": "string", "pattern": TOKEN_PATTERN},
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/cloudevents-batch+json": {
                            "schema": {"type": "array", "items": _schema("CloudEvent")}
                        }
                    },
                },
                "security": [{"nmcWebhook": []}],
            }
        }
    }


def security_schemes() -> dict[str, Any]:
    return {
        "nmcWebhook": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "Door het NMC ondertekend token op elke webhook-aanroep; publieke "
            "sleutels op /.well-known/jwks.json.",
        }
    }


def _wijzigingen() -> dict[str, Any]:
    return {
        "operationId": "lezenWijzigingen",
        "tags": ["Wijzigingen"],
        "summary": "Lees de statuswijzigingen van de eigen notificaties vanaf een cursor",
        "description": (
            "Zonder cursor begint de feed bij het oudste beschikbare event. Een pagina bevat "
            "alleen events van transacties die al afgerond zijn, zodat een cursor nooit een laat "
            "vastgelegd event overslaat. Met `Accept: text/event-stream` komt dezelfde feed als "
            "Server-Sent Events: per event `id: <cursor>` en `data: <CloudEvent>` (geen "
            "`event:`-veld), een `: keep-alive` commentaar na 15 seconden stilte, en hervatten "
            "met `Last-Event-ID`. Een vervallen cursor geeft 410 vóór de stroom begint; "
            "vervalt hij tijdens de stroom, dan sluit het NMC de verbinding."
        ),
        "parameters": [
            {
                "name": "cursor",
                "in": "query",
                "required": False,
                "description": "De cursor uit de vorige pagina (of uit een snapshot).",
                "schema": {"type": "string", "pattern": TOKEN_PATTERN},
            },
            {
                "name": "limiet",
                "in": "query",
                "required": False,
                "description": "Hoogstens zoveel events; het NMC begrenst dit verder op de "
                "maximale paginagrootte van de dienstverlener (standaard 1000).",
                "schema": {"type": "integer", "minimum": 1, "maximum": FEED_LIMIET_MAX},
            },
            {
                "name": "Last-Event-ID",
                "in": "header",
                "required": False,
                "description": "Alleen bij text/event-stream: het laatst ontvangen id; gaat "
                "voor `cursor`.",
                "schema": {"type": "string", "pattern": TOKEN_PATTERN},
            },
        ],
        "responses": {
            "200": {
                "description": "Een pagina events met de volgende cursor, of de stroom.",
                "headers": _api_version_headers(),
                "content": {
                    _JSON: {
                        "schema": _schema("WijzigingenPagina"),
                        "example": {"events": [_cloudevent_example()], "cursor": _EXAMPLE_CURSOR},
                    },
                    _SSE: {
                        "schema": {"type": "string"},
                        "example": f'id: {_EXAMPLE_CURSOR}\ndata: {{"specversion": "1.0", '
                        "...}\n\n: keep-alive\n\n",
                    },
                },
            },
            **_errors("400", "401", "403"),
            "410": _ref("responses", "CursorVervallen"),
            "429": _ref("responses", "TeVeelAanroepen"),
            **_errors("500", "503"),
        },
    }


def _bevestiging() -> dict[str, Any]:
    return {
        "operationId": "bevestigenWijzigingen",
        "tags": ["Wijzigingen"],
        "summary": "Bevestig tot welke cursor alles verwerkt is",
        "description": (
            "Een bevestiging gaat alleen vooruit: een oudere of gelijke cursor verandert niets "
            "(ook 204, met `Nmc-Bevestiging: ongewijzigd`). Onbevestigde terminale statussen "
            "ouder dan de bevestigingstermijn meldt het NMC op het beheerkanaal."
        ),
        "requestBody": {
            "required": True,
            "description": JSON_BODY_RULE,
            "content": {
                _JSON: {
                    "schema": _schema("Bevestiging"),
                    "example": {"cursor": _EXAMPLE_CURSOR},
                }
            },
        },
        "responses": {
            "204": {
                "description": "Verwerkt.",
                "headers": _api_version_headers(
                    **{
                        "Nmc-Bevestiging": {
                            "description": "bevestigd: de positie is vooruit gezet; "
                            "ongewijzigd: de cursor lag niet voorbij de eerdere bevestiging.",
                            "schema": {"type": "string", "enum": ["bevestigd", "ongewijzigd"]},
                        }
                    }
                ),
            },
            **_errors("400", "401", "403"),
            "410": _ref("responses", "CursorVervallen"),
            **_errors("415", "500", "503"),
        },
    }


def _snapshot() -> dict[str, Any]:
    return {
        "operationId": "lezenSnapshot",
        "tags": ["Wijzigingen"],
        "summary": "Lees de huidige status van alle eigen notificaties, met de bijbehorende "
        "feedpositie",
        "description": (
            "Voor een nieuwe start (of na 410): lees alle pagina's (volg `volgende` als `na`), "
            "en lees daarna de wijzigingen vanaf `cursor`, met de sequence-regel. Zo ontstaat "
            "een volledige kopie zonder gat. Elke pagina telt als een aanroep van de feed "
            "(de aanroeplimiet geldt voor feed en snapshot samen)."
        ),
        "parameters": [
            {
                "name": "na",
                "in": "query",
                "required": False,
                "description": "De waarde van `volgende` uit de vorige pagina.",
                "schema": {"type": "string", "pattern": TOKEN_PATTERN},
            },
            {
                "name": "limiet",
                "in": "query",
                "required": False,
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": SNAPSHOT_LIMIET_MAX,
                    "default": SNAPSHOT_LIMIET_DEFAULT,
                },
            },
        ],
        "responses": {
            "200": {
                "description": "Een pagina notificaties (op notificatieId), met de feedpositie.",
                "headers": _api_version_headers(),
                "content": {
                    _JSON: {
                        "schema": _schema("SnapshotPagina"),
                        "example": {
                            "notificaties": [
                                {
                                    "notificatieId": _EXAMPLE_ID,
                                    "status": "bezorgd",
                                    "reden": None,
                                    "versie": 4,
                                    "bijgewerktOp": "2025-03-01T09:00:07Z",
                                }
                            ],
                            "volgende": None,
                            "cursor": _EXAMPLE_CURSOR,
                        },
                    }
                },
            },
            **_errors("400", "401", "403"),
            "429": _ref("responses", "TeVeelAanroepen"),
            **_errors("500", "503"),
        },
    }


def _hervatten() -> dict[str, Any]:
    return {
        "operationId": "hervattenWebhook",
        "tags": ["Webhook"],
        "summary": "Hervat de gepauzeerde of uitgeschakelde webhook nu",
        "description": "De afleverpositie blijft staan: er gaat niets verloren en niets wordt "
        "vanaf het begin opnieuw geleverd. Het verzoek heeft geen inhoud.",
        "responses": {
            "204": {"description": "Hervat.", "headers": _api_version_headers()},
            **_errors("400", "401", "403"),
            "404": _problem_response(
                "Deze dienstverlener heeft geen webhook.",
                _problem_example(
                    "niet-gevonden",
                    404,
                    "Niet gevonden.",
                    "Deze dienstverlener heeft geen webhook.",
                ),
            ),
            **_errors("500", "503"),
        },
    }


def _cursor(description: str) -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": TOKEN_PATTERN,
        "description": description + " Ondoorzichtig: alleen voor deze dienstverlener geldig.",
    }


def _cloudevent_example() -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": "764",
        "source": _EXAMPLE_SOURCE,
        "type": TYPE_PREFIX + "bezorgd",
        "subject": _EXAMPLE_ID,
        "time": "2025-03-01T09:00:07.000000Z",
        "sequence": "4",
        "sequencetype": "Integer",
        "datacontenttype": _JSON,
        "data": {"van": "verzonden", "naar": "bezorgd", "reden": None, "versie": 4},
    }
