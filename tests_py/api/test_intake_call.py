"""nmc.api.intake.IntakeCall is the intake call's shape: its fields are the placeholders of
queries.sql's batch statement and the parameters of nmc.intake_notificaties_v3, in order, and
give the single statement every placeholder it has."""

import dataclasses
import re
import uuid

from nmc.api.intake import IntakeCall
from nmc.queries import QUERIES


def placeholders(name: str) -> list[str]:
    return re.findall(r"%\((\w+)\)[sb]", QUERIES[name])


def input_parameters(conn, function: str) -> list[str]:
    [(names,)] = conn.execute(
        "SELECT array_agg(a.name ORDER BY a.n) FROM pg_proc AS p,"
        " unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a (name, mode, n)"
        " WHERE p.oid = %s::regproc AND a.mode = 'i'",
        [function],
    ).fetchall()
    return names or []


def one_item_call() -> IntakeCall:
    return IntakeCall(
        dv_id=1,
        regie="decentraal",
        pepper_versie=1,
        payload_pepper_versie=1,
        kek_id="k1",
        batch_id=None,
        ids=[uuid.uuid4()],
        berichttypen=["t"],
        dvref_hmacs=[b"d"],
        payload_hmacs=[b"p"],
        ontvangers=[b"o"],
        gegevens=[b"g"],
        sleutels=[b"s"],
        geldig_tot=[None],
        trace_ids=["trace"],
        span_ids=["span"],
        diensten=[None],
        namen=["naam"],
        sha256_hashes=[b"h"],
    )


def test_the_fields_are_the_batch_statement_in_order():
    fields = [f.name for f in dataclasses.fields(IntakeCall)]
    assert placeholders("intake_notificaties") == fields
    assert list(one_item_call().params()) == fields


def test_the_single_statement_gets_every_placeholder_and_the_first_entries():
    call = one_item_call()
    params = call.single_params()
    assert sorted(params) == sorted(placeholders("intake_notificatie"))
    assert params["id"] == call.ids[0]
    assert params["sha256_hash"] == b"h"
    assert params["vorige_hmacs"] is None
    without = dataclasses.replace(call, sha256_hashes=None).single_params()
    assert without["sha256_hash"] is None


def test_the_fields_are_the_sql_functions_parameters(conn):
    fields = [f.name for f in dataclasses.fields(IntakeCall)]
    assert input_parameters(conn, "nmc.intake_notificaties_v4") == [f"p_{f}" for f in fields]
    single = input_parameters(conn, "nmc.intake_notificatie_v4")
    assert len(single) == len(placeholders("intake_notificatie"))
