"""Constants and helpers of the DV API tests (the fixtures are in conftest.py)."""

import uuid
from typing import Any

from nmc.admin.dev_iam import issue_dev_token

ISSUER = "https://iam.nmc.test"
AUDIENCE = "nmc-api-test"
CALLBACK_TOKEN = "callback-token-0123456789abcdef"  # noqa: S105 - a test value
BASE = "/api/nmc/v1"

OIN_A = "00000001001001001000"
OIN_B = "00000001002002002000"
OIN_UNKNOWN = "00000009999999999000"
TEMPLATE_ID = "a0a0a0a0-0000-4000-8000-000000000001"


def dv_document(oin: str, **overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "oin": oin,
        "naam": f"Test DV {oin[-6:]}",
        "quotumPerMinuut": 10_000,
        "quotumPerDag": 100_000,
        "berichttypen": [
            {"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID, "geldigheidMax": "30 days"},
            {
                "code": "alleen-centraal",
                "notifynlTemplateId": TEMPLATE_ID,
                "regie": ["centraal"],
            },
        ],
    }
    document.update(overrides)
    return document


def token(oin: str = OIN_A, **kwargs: Any) -> str:
    return issue_dev_token(oin, **kwargs)


def auth(oin: str = OIN_A) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(oin)}"}


def decentraal(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "dvRef": f"zaak-{uuid.uuid4()}",
        "berichtType": "aanslag",
        "emailAdres": "info@voorbeeld.nl",
        "berichtgegevens": {"naam": "Voorbeeld B.V."},
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not ...}


def centraal(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "dvRef": f"zaak-{uuid.uuid4()}",
        "berichtType": "aanslag",
        "identificatieType": "BSN",
        "identificatieNummer": "111222333",
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not ...}
