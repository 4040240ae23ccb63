"""The LDV record of each page of statuses the API provides to a DV (SPEC §8).

A feed page, an SSE batch or a snapshot page tells the DV the status of notifications about
persons: a provision of personal data. One record is written per page, before the page
leaves, with the sinks of the send pipeline (`nmc.adapters.ldv`: NMC_LDV_URL, else the JSON
lines file NMC_LDV_FILE). The record has the LDV span shape (trace id of the request, span
id, name, start and end, status) and the attributes:

    dpl.core.processing_activity_id   nmc-status-verstrekken
    nmc.dienstverlener                the DV's id (the receiving party)
    nmc.notificatie_ids               the notifications whose status the page carries

A page concerns many persons whom the API cannot name (their data are encrypted and only the
send task opens them), so there is no `dpl.core.data_subject_id`: the notification ids are
the pseudonymous link an auditor follows. A page without a notification provides nothing
personal and writes no record. A failed write refuses the page (503): nothing is provided
that is not logged.
"""

from collections.abc import Iterable

from nmc.adapters.http import Deferral
from nmc.adapters.ldv import Sink, span_record, verstrekking_attributes
from nmc.api.problems import Problem, service_unavailable


class VerstrekkingLdv:
    def __init__(self, sink: Sink) -> None:
        self._sink = sink

    async def record(
        self, *, trace_id: str, name: str, dv_id: int, notificatie_ids: Iterable[str]
    ) -> None:
        """Write the record of one page; raises a 503 problem when it cannot be written."""
        attributes = verstrekking_attributes(dv_id, notificatie_ids)
        if not attributes["nmc.notificatie_ids"]:
            return
        record = span_record(trace_id, name, attributes)
        try:
            await self._sink.write(record)
        except Deferral:
            raise ldv_unavailable() from None

    async def aclose(self) -> None:
        await self._sink.aclose()


def ldv_unavailable() -> Problem:
    return service_unavailable(
        "Het NMC kan deze verstrekking nu niet vastleggen; probeer het later opnieuw.",
        retry_after=5,
    )
