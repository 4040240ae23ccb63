"""The Profielservice's errors other than "party unknown" and "no e-mail" defer the send.

ADR 0024: "De Profielservice kent de partij niet of de partij heeft geen e-mailadres:
niet-bezorgbaar met reden geen-contactgegevens. Andere fouten van de Profielservice: uitstel en
herhaling, eveneens zonder dat de pogingenteller oploopt." A 404 and a party without an e-mail
contactgegeven are outcomes (../shared/profielservice-contract.md); a 400, any other 4xx or an
answer that cannot be read are errors of the call, like a 5xx.
"""

import json

import httpx
import pytest
from pipelinetest import DV_NAAM, advance, status_of
from test_pipeline_worker import seed_party, sent, verzendtaak

from nmc.adapters import Deferral
from nmc.adapters.profielservice import Profielservice


def answering(status_code: int, content: bytes = b"", content_type: str = "application/json"):
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status_code, content=content, headers={"content-type": content_type})

    return httpx.MockTransport(handler)


PROBLEM = json.dumps({"status": 400, "title": "Bad Request"}).encode()


@pytest.mark.parametrize(
    ("status_code", "content", "fout"),
    [
        (400, PROBLEM, "profielservice-http-400"),
        (409, PROBLEM, "profielservice-http-409"),
        (410, PROBLEM, "profielservice-http-410"),
        (422, PROBLEM, "profielservice-http-422"),
        (302, b"", "profielservice-http-302"),
        (200, b"<html>niet de Profielservice</html>", "profielservice-geen-json-200"),
        (200, b"[1, 2]", "profielservice-antwoord"),
        (
            200,
            json.dumps(
                {"contactgegevens": [{"type": "Email", "waarde": "a@b.nl", "id": "x"}]}
            ).encode(),
            "profielservice-antwoord",
        ),
    ],
)
async def test_other_profielservice_errors_are_deferrals(status_code, content, fout):
    async with httpx.AsyncClient(transport=answering(status_code, content)) as client:
        profiel = Profielservice(client, "http://profielservice.test")
        with pytest.raises(Deferral) as raised:
            await profiel.find_email("KVK", "12345678", DV_NAAM, None)
    assert raised.value.fout == fout


async def test_a_404_is_still_no_e_mail_preference():
    async with httpx.AsyncClient(transport=answering(404, PROBLEM)) as client:
        profiel = Profielservice(client, "http://profielservice.test")
        assert await profiel.find_email("KVK", "12345678", DV_NAAM, None) is None


async def test_profielservice_400s_defer_the_send_without_counting(sim, worker, intake, conn):
    """Six 400s in a row: the send task is deferred each time and never exhausted (five
    counted failures would make the notification technisch-mislukt); once the Profielservice
    answers again the notification is sent."""
    seed_party(sim, "55556666", [{"waarde": "bezorgd+vierhonderd@bedrijf.nl"}])
    notificatie_id = intake("KVK:55556666", regie="centraal")
    httpx.post(f"{sim.profiel_url}/_sim/outage", json={"status": 400}).raise_for_status()
    try:
        for rounds in range(1, 7):
            await worker.drain(["verzenden"])
            assert status_of(conn, notificatie_id) == ("in-verzending", None)
            assert verzendtaak(conn, notificatie_id) == (
                "open", 0, rounds, "profielservice-http-400"
            )  # fmt: skip
            advance(conn, "2 hours")  # past the growing backoff
        assert sent(sim)["count"] == 0
    finally:
        httpx.post(f"{sim.profiel_url}/_sim/outage", json={}).raise_for_status()
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("verzonden", None)
    assert sent(sim)["count"] == 1
