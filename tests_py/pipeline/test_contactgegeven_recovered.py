"""The Profielservice contactgegeven id of a centraal send survives a send whose commit was
lost: NotifyNL accepted the e-mail but its answer never reached the worker (a 504 after
the accept), so either a re-claim finds the send by reference, or a receipt takes over the
NotifyNL id. A permanent failure afterwards must still report that contactgegeven invalid.
"""

from pipelinetest import (
    advance,
    callbacks_settled,
    configure_notifynl,
    set_faults,
    sim_get,
    status_of,
)
from test_pipeline_worker import poging, seed_party, sent, verzendtaak


def accepted_but_unanswered(sim) -> None:
    """NotifyNL processes every send but answers 504 (a gateway timing out)."""
    configure_notifynl(sim, hang_s=0.05)
    set_faults(sim, accept_timeout_rate=1.0)


async def test_a_reclaim_that_finds_the_send_keeps_the_contactgegeven(sim, worker, intake, conn):
    party = seed_party(sim, "55557777", [{"waarde": "permanent+r@bedrijf.nl", "isDefault": True}])
    contactgegeven_id = party["contactgegevens"][0]["id"]
    accepted_but_unanswered(sim)
    notificatie_id = intake("KVK:55557777", regie="centraal")
    await worker.drain(["verzenden"])
    assert verzendtaak(conn, notificatie_id)[:3] == ("open", 0, 1)  # deferred, not failed
    assert status_of(conn, notificatie_id) == ("in-verzending", None)

    set_faults(sim, accept_timeout_rate=0.0)
    advance(conn, "10 minutes")
    await worker.drain(["verzenden"])  # the re-claim finds the e-mail by reference
    assert status_of(conn, notificatie_id) == ("verzonden", None)
    assert list(sent(sim)["per_reference"].values()) == [1]
    [(_, _, _, _, op_poging)] = poging(conn, notificatie_id)
    assert str(op_poging) == contactgegeven_id

    advance(conn, "1 hour 1 minute")
    await worker.drain(["reconciliëren"])  # NotifyNL: permanent-failure
    assert status_of(conn, notificatie_id) == ("niet-bezorgbaar", "onbereikbaar")
    await worker.drain(["ongeldig-melden"])
    [report] = sim_get(sim.profiel_url, "/_sim/ongeldig")
    assert report["report"]["contactgegevenId"] == contactgegeven_id


async def test_a_receipt_that_takes_over_the_id_keeps_the_contactgegeven(
    sim, callbacks, worker, intake, conn
):
    party = seed_party(sim, "55558888", [{"waarde": "permanent+o@bedrijf.nl", "isDefault": True}])
    contactgegeven_id = party["contactgegevens"][0]["id"]
    accepted_but_unanswered(sim)
    notificatie_id = intake("KVK:55558888", regie="centraal")
    await worker.drain(["verzenden"])
    assert verzendtaak(conn, notificatie_id)[:3] == ("open", 0, 1)
    callbacks_settled(sim, 1)
    await worker.drain(["receipt"])  # commits the send on the worker's behalf, then fails it
    assert status_of(conn, notificatie_id) == ("niet-bezorgbaar", "onbereikbaar")
    [(_, _, status, notifynl_id, op_poging)] = poging(conn, notificatie_id)
    assert (status, notifynl_id is not None) == ("permanent-mislukt", True)
    assert str(op_poging) == contactgegeven_id

    await worker.drain(["ongeldig-melden"])
    [report] = sim_get(sim.profiel_url, "/_sim/ongeldig")
    assert report["report"]["contactgegevenId"] == contactgegeven_id
