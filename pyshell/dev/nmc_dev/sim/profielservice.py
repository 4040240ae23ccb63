"""A Profielservice simulator for tests and the demo (../shared/profielservice-contract.md).

POST /api/profielservice/v1/partij answers a seeded party as a `PartijResponse`, an unknown
one with 404 problem JSON. POST /api/profielservice/v1/contactgegeven/ongeldig records a
report (idempotent per contactgegevenId: a repeat is 204 with no further effect; 404 when the
party or contactgegeven is unknown).

Parties are seeded from a JSON file (`nmc sim profielservice --parties FILE`) or through
POST /_sim/parties: a list of `{"identificatieType", "identificatieNummer",
"contactgegevens": [{"type", "waarde", "isDefault", "scopes", "id"?}, …]}`; missing ids and
timestamps are filled in. Test hooks: /_sim/outage (`{"status": 503}` or
`{"timeout": true}`; `{}` ends it), /_sim/ongeldig (the reports), /_sim/requests, /_sim/reset.
"""

import asyncio
import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nmc.adapters.profielservice import IDENTIFICATIE_TYPES, ONGELDIG_PATH, PARTIJ_PATH

PROBLEM = "application/problem+json"


def _problem(status: int, title: str, detail: str) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, media_type=PROBLEM)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def normalise_party(party: dict[str, Any]) -> dict[str, Any]:
    """A seeded party as a full PartijResponse (ids and timestamps filled in)."""
    kind, number = party["identificatieType"], str(party["identificatieNummer"])
    if kind not in IDENTIFICATIE_TYPES:
        raise ValueError("identificatieType must be BSN, KVK or RSIN")
    contactgegevens = []
    for item in party.get("contactgegevens", []):
        contactgegevens.append(
            {
                "id": str(item.get("id") or uuid.uuid4()),
                "type": item.get("type", "Email"),
                "waarde": item["waarde"],
                "isGeverifieerd": item.get("isGeverifieerd", True),
                "isDefault": item.get("isDefault", False),
                "createdAt": item.get("createdAt", _now()),
                "lastUpdated": item.get("lastUpdated", _now()),
                "teVerwijderenOp": item.get("teVerwijderenOp"),
                "scopes": item.get("scopes", []),
            }
        )
    return {
        "partijId": str(party.get("partijId") or uuid.uuid4()),
        "identificaties": [{"identificatieType": kind, "identificatieNummer": number}],
        "voorkeuren": party.get("voorkeuren", []),
        "contactgegevens": contactgegevens,
    }


class ProfielSim:
    def __init__(self, parties: list[dict[str, Any]] | None = None, hang_s: float = 30.0) -> None:
        self.hang_s = hang_s
        self.reset()
        self.seed(parties or [])
        self.app = Starlette(
            routes=[
                Route(PARTIJ_PATH, self._partij, methods=["POST"]),
                Route(ONGELDIG_PATH, self._ongeldig, methods=["POST"]),
                Route("/_sim/parties", self._parties, methods=["GET", "POST"]),
                Route("/_sim/outage", self._outage, methods=["POST"]),
                Route("/_sim/ongeldig", self._reports, methods=["GET"]),
                Route("/_sim/requests", self._requests, methods=["GET"]),
                Route("/_sim/reset", self._reset, methods=["POST"]),
                Route("/_sim/forget", self._forget, methods=["POST"]),
            ]
        )

    @classmethod
    def from_file(cls, path: Path) -> "ProfielSim":
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def reset(self) -> None:
        self.parties: dict[tuple[str, str], dict[str, Any]] = {}
        self.outage: dict[str, Any] = {}
        self.reports: dict[str, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []

    def seed(self, parties: list[dict[str, Any]]) -> list[dict[str, Any]]:
        stored = []
        for party in parties:
            full = normalise_party(party)
            ident = full["identificaties"][0]
            self.parties[(ident["identificatieType"], ident["identificatieNummer"])] = full
            stored.append(full)
        return stored

    async def _guard(self, request: Request) -> tuple[dict[str, Any], Response | None]:
        entry = {
            "ts": time.time(),
            "path": request.url.path,
            "traceparent": request.headers.get("traceparent"),
            "status": None,
        }
        self.requests.append(entry)
        if self.outage.get("timeout"):
            await asyncio.sleep(self.hang_s)
        status = self.outage.get("status")
        if status:
            entry["status"] = status
            return entry, _problem(status, "Service Unavailable", "storing (simulator)")
        return entry, None

    async def _body(self, request: Request) -> dict[str, Any] | None:
        try:
            body = await request.json()
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    async def _partij(self, request: Request) -> Response:
        entry, refused = await self._guard(request)
        if refused is not None:
            return refused
        body = await self._body(request)
        if (
            body is None
            or body.get("identificatieType") not in IDENTIFICATIE_TYPES
            or not isinstance(body.get("identificatieNummer"), str)
            or not isinstance(body.get("dienstverlener"), str)
        ):
            entry["status"] = 400
            return _problem(400, "Bad Request", "ongeldige aanvraag")
        party = self.parties.get((body["identificatieType"], body["identificatieNummer"]))
        if party is None:
            entry["status"] = 404
            return _problem(404, "Not Found", "partij niet gevonden")
        entry["status"] = 200
        return JSONResponse(party)

    async def _ongeldig(self, request: Request) -> Response:
        entry, refused = await self._guard(request)
        if refused is not None:
            return refused
        body = await self._body(request)
        if body is None or not isinstance(body.get("contactgegevenId"), str):
            entry["status"] = 400
            return _problem(400, "Bad Request", "ongeldige aanvraag")
        party = self.parties.get(
            (body.get("identificatieType"), str(body.get("identificatieNummer")))
        )
        known = party is not None and any(
            c["id"] == body["contactgegevenId"] for c in party["contactgegevens"]
        )
        if not known:
            entry["status"] = 404
            return _problem(404, "Not Found", "partij of contactgegeven niet gevonden")
        report = self.reports.setdefault(
            body["contactgegevenId"], {"report": body, "first_at": time.time(), "count": 0}
        )
        report["count"] += 1
        entry["status"] = 204
        return Response(status_code=204)

    async def _parties(self, request: Request) -> Response:
        if request.method == "POST":
            body = await request.json()
            try:
                stored = self.seed(body if isinstance(body, list) else [body])
            except (KeyError, ValueError, TypeError) as problem:
                return JSONResponse({"error": str(problem)}, status_code=400)
            return JSONResponse(stored, status_code=201)
        return JSONResponse(list(self.parties.values()))

    async def _outage(self, request: Request) -> Response:
        self.outage = await request.json()
        return JSONResponse(self.outage)

    async def _reports(self, request: Request) -> Response:
        return JSONResponse(list(self.reports.values()))

    async def _requests(self, request: Request) -> Response:
        return JSONResponse(self.requests)

    async def _forget(self, request: Request) -> Response:
        """Drop the request log (a long run does not read it); parties and reports stay."""
        self.requests = []
        return Response(status_code=204)

    async def _reset(self, request: Request) -> Response:
        self.reset()
        return Response(status_code=204)
