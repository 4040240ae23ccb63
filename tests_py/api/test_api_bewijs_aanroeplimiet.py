"""The delivery proof and the history have a per-DV call rate.

Each proof is signed and each page of either writes an LDV record: like the feed, the calls of
one DV are counted per minute in the database (nmc.bewijsaanroep, the setting
instellingen.bewijs_aanroepen_per_minuut), beyond it 429 aanroeplimiet-overschreden with a
Retry-After; the DV's other calls and the other DVs are not held up.
"""

import json

import pytest
import test_api_afleverbewijs as proofs
from apitest import OIN_A, OIN_B, auth
from feedtest import FEED


def test_proof_and_history_calls_beyond_the_rate_get_429_with_retry_after(client, conn, api_env):
    conn.execute("UPDATE nmc.instellingen SET bewijs_aanroepen_per_minuut = 3")
    notificatie_id = proofs.submit(client)
    urls = [proofs.proof_url(notificatie_id), proofs.history_url(notificatie_id)] * 4
    # Two windows can meet between two calls, never between more than three times as many.
    responses = [client.get(url, headers=auth()) for url in urls]
    statuses = [r.status_code for r in responses]
    refused = [r for r in responses if r.status_code == 429]
    assert refused, statuses
    assert set(statuses) <= {200, 429}, statuses
    problem = refused[0].json()
    assert problem["type"].endswith("/aanroeplimiet-overschreden")
    assert refused[0].headers["content-type"] == "application/problem+json"
    assert 1 <= int(refused[0].headers["retry-after"]) <= 60
    # A refused call is neither signed nor recorded: the LDV has a record per answered call.
    names = [json.loads(line)["name"] for line in (api_env.secrets.parent / "ldv.jsonl").open()]
    answered = sum(1 for r in responses if r.status_code == 200)
    assert sum(1 for n in names if n.startswith("bewijs.")) == answered
    # Another DV, and the same DV's feed, are not held up by it.
    other = proofs.submit(client, oin=OIN_B)
    assert client.get(proofs.proof_url(other), headers=auth(OIN_B)).status_code == 200
    assert client.get(FEED, headers=auth(OIN_A)).status_code == 200


def test_the_openapi_document_names_the_429_of_proof_and_history(client):
    document = client.get("/api/nmc/v1/openapi.json").json()
    for path in ("afleverbewijs", "geschiedenis"):
        responses = document["paths"][f"/notificaties/{{notificatieId}}/{path}"]["get"]["responses"]
        assert responses["429"] == {"$ref": "#/components/responses/TeVeelAanroepen"}


def test_one_dvs_proof_calls_do_not_wait_for_each_others_count(dvs, db_url):
    """A DV fetches its proofs a few at a time: each connection counts in a row of its own,
    so a call does not wait for the row lock of another call still in its transaction (one
    row per DV and minute made a DV's proofs go one at a time). The rate is their sum."""
    import psycopg

    dv_id = dvs["A"]
    with (
        psycopg.connect(db_url) as first,
        psycopg.connect(db_url, autocommit=True) as second,
    ):
        first.execute("UPDATE nmc.instellingen SET bewijs_aanroepen_per_minuut = 3")
        first.commit()
        first.execute("SELECT nmc.take_bewijs_aanroep(%s)", [dv_id])  # its lock held, open
        second.execute("SET lock_timeout = '200ms'")
        second.execute("SELECT nmc.take_bewijs_aanroep(%s)", [dv_id])  # no 55P03: no wait
        first.commit()
        second.execute("SELECT nmc.take_bewijs_aanroep(%s)", [dv_id])  # the third in all
        with pytest.raises(psycopg.Error) as refused:
            second.execute("SELECT nmc.take_bewijs_aanroep(%s)", [dv_id])
        assert refused.value.sqlstate == "NM019", "the fourth of the DV's calls is refused"
