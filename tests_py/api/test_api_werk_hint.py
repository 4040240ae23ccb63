"""The API hints idle workers (nmc.api.werk_melder) after the work it commits: an intake, a
batch, a cancellation; a read hints nothing."""

import uuid

import psycopg
import pytest
from apitest import BASE, auth, decentraal

DECENTRAAL = f"{BASE}/decentraal/notificaties"


@pytest.fixture
def hints(api_env):
    """A connection listening on the workers' channel; `hints.heard()` empties what came."""
    with psycopg.connect(api_env.db_url, autocommit=True) as listener:
        listener.execute("LISTEN nmc_werk")

        class Heard:
            @staticmethod
            def heard(timeout: float = 2.0) -> int:
                return sum(1 for _ in listener.notifies(timeout=timeout))

        yield Heard


def test_an_intake_a_batch_and_a_cancellation_each_hint_the_workers(client, hints):
    response = client.post(DECENTRAAL, json=decentraal(), headers=auth())
    assert response.status_code == 202
    assert hints.heard() == 1
    batch = {"batchId": str(uuid.uuid4()), "notificaties": [decentraal(), decentraal()]}
    response = client.post(f"{DECENTRAAL}/_batch", json=batch, headers=auth())
    assert response.status_code == 202, response.text
    assert hints.heard() == 1
    notificatie_id = client.post(DECENTRAAL, json=decentraal(), headers=auth()).json()[
        "notificatieId"
    ]
    hints.heard()
    assert client.delete(f"{BASE}/notificaties/{notificatie_id}", headers=auth()).status_code == 204
    assert hints.heard() == 1


def test_a_refused_intake_and_a_read_hint_nothing(client, hints):
    response = client.post(DECENTRAAL, json={"not": "a notification"}, headers=auth())
    assert response.status_code == 400
    assert client.get(f"{BASE}/notificaties/{uuid.uuid4()}", headers=auth()).status_code == 404
    assert hints.heard(timeout=0.5) == 0
