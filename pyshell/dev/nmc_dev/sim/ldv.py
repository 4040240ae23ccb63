"""An LDV collector simulator: accepts POSTed records and lists them, for tests and the demo.

POST /ldv/v1/records (one record, or a list) -> 201; GET /ldv/v1/records -> every record
with the time it was received (`_ontvangen`). /_sim/outage `{"status": 503}` makes writes
fail; `{}` ends it. /_sim/reset empties the store; /_sim/forget too, keeping an outage (a
long run drops what it does not read).
"""

import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

RECORDS_PATH = "/ldv/v1/records"


class LdvSim:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.outage: dict[str, Any] = {}
        self.app = Starlette(
            routes=[
                Route(RECORDS_PATH, self._records, methods=["GET", "POST"]),
                Route("/_sim/outage", self._outage, methods=["POST"]),
                Route("/_sim/reset", self._reset, methods=["POST"]),
                Route("/_sim/forget", self._forget, methods=["POST"]),
            ]
        )

    async def _records(self, request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse(self.records)
        if self.outage.get("status"):
            return JSONResponse({"detail": "storing"}, status_code=self.outage["status"])
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"detail": "geen JSON"}, status_code=400)
        received = time.time()
        for record in body if isinstance(body, list) else [body]:
            if not isinstance(record, dict) or "trace_id" not in record:
                return JSONResponse({"detail": "geen LDV-record"}, status_code=400)
            self.records.append(
                {
                    **record,
                    "_ontvangen": received,
                    # The trace context the write itself carried (a traced worker's call).
                    "_traceparent": request.headers.get("traceparent"),
                }
            )
        return Response(status_code=201)

    async def _outage(self, request: Request) -> Response:
        self.outage = await request.json()
        return JSONResponse(self.outage)

    async def _reset(self, request: Request) -> Response:
        self.records = []
        self.outage = {}
        return Response(status_code=204)

    async def _forget(self, request: Request) -> Response:
        self.records = []
        return Response(status_code=204)
