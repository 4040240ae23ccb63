"""The intake: from validated notificaties to sealed items and the one database call.

Sealing makes every item's HMACs (dvRef and payload, under the current pepper and, while
peppers rotate, the earlier live ones) and its ciphertext (recipient and berichtgegevens
under a fresh data key, wrapped by the active KEK): nothing readable goes to the database.
`IntakeCall` is the call's shape, the one place the Python side spells it: its fields are
the parameters of nmc.intake_notificaties_v3 by name and in order, and give the single form
nmc.intake_notificatie_v3 its parameters too (queries.sql holds both statements; the
test tests_py/api/test_intake_call.py checks that they agree).
A refusal comes back as the psycopg error; what it means for HTTP is the route's.
"""

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from psycopg.types.string import TextLoader

from nmc import sql_calls, sqlstates
from nmc.api.ids import new_notificatie_ids
from nmc.api.services import Services
from nmc.api.validation import recipient_of
from nmc.crypto.peppers import PURPOSE_DVREF, PURPOSE_PAYLOAD, dvref_hmac_many, payload_hmac_many
from nmc.crypto.sealing import seal_many
from nmc.notifynl.notifynl_templates import namen_van
from nmc.signing.canonical_json import berichtgegevens_json, canonical_payload, payload_hash

T = TypeVar("T")


def per_item(single: str) -> dict[str, str]:
    """The metadata of a list with one entry per notification: `single` is the parameter of
    its entry in the single form."""
    return {"single": single}


@dataclass(frozen=True)
class IntakeCall:
    """Notifications of one DV and regie, sealed and HMACed: the parameters of
    nmc.intake_notificaties_v4, in its order.

    One list per column, entry i of every list belonging to notification i: the arrays the
    function takes, built once rather than gathered from per-item objects.
    """

    dv_id: int
    regie: str
    pepper_versie: int  # the dvRef pepper version of `dvref_hmacs`
    payload_pepper_versie: int  # the payload pepper version of `payload_hmacs`
    kek_id: str
    batch_id: uuid.UUID | str | None
    ids: list[uuid.UUID] = field(metadata=per_item("id"))
    berichttypen: list[str] = field(metadata=per_item("berichttype"))
    dvref_hmacs: list[bytes] = field(metadata=per_item("dvref_hmac"))
    payload_hmacs: list[bytes] = field(metadata=per_item("payload_hmac"))
    ontvangers: list[bytes] = field(metadata=per_item("ontvanger"))
    gegevens: list[bytes] = field(metadata=per_item("gegevens"))
    sleutels: list[bytes] = field(metadata=per_item("sleutel"))
    # Canonical RFC 3339 text, cast to timestamptz in SQL.
    geldig_tot: list[str | None] = field(metadata=per_item("geldig_tot"))
    trace_ids: list[str] = field(metadata=per_item("trace_id"))
    # The intake span's id of each item's request (its tasks' spans link to it).
    span_ids: list[str | None] = field(metadata=per_item("span_id"))
    diensten: list[str | None] = field(metadata=per_item("dienst"))
    # Each item's berichtgegevens names, normalized as NotifyNL matches them and
    # space-separated (nmc.notifynl.notifynl_templates.namen_van): the intake holds them against the
    # berichttype's template placeholders. Names only, never values.
    namen: list[str] = field(metadata=per_item("namen"))
    # While peppers rotate: each item's dvRef HMAC under every earlier live pepper version,
    # item by item (k per item); None when only one version is live. The single form takes
    # the same array.
    vorige_hmacs: list[bytes] | None = None
    # The same for the payload HMAC under the earlier live payload pepper versions.
    vorige_payload_hmacs: list[bytes] | None = None
    # The unkeyed SHA-256 of each request: only when the database asked for them (NMP01),
    # to judge a replay of a row stored before the payload pepper.
    sha256_hashes: list[bytes] | None = field(default=None, metadata=per_item("sha256_hash"))

    def params(self) -> dict[str, Any]:
        """The parameters of the batch statement (queries.sql `intake_notificaties`)."""
        return {name: getattr(self, name) for name in _BATCH_NAMES}

    def single_params(self) -> dict[str, Any]:
        """The parameters of the single statement (`intake_notificatie`): the first
        notification's entry of every per-item list."""
        params = {}
        for name, single in _SINGLE_NAMES:
            value = getattr(self, name)
            if single is None:
                params[name] = value
            else:
                params[single] = value[0] if value is not None else None
        return params


# The field names, and each one's name in the single form (None: the same value as is).
_BATCH_NAMES = [f.name for f in dataclasses.fields(IntakeCall)]
_SINGLE_NAMES = [(f.name, f.metadata.get("single")) for f in dataclasses.fields(IntakeCall)]


# The batch's ids as text: a thousand uuid.UUID objects, each turned straight back into text
# for the answer, cost more than the rest of reading the result.
IDS_AS_TEXT = {"uuid": TextLoader}


async def intake_one(
    services: Services,
    dv_id: int,
    regie: str,
    canonical: dict[str, Any],
    trace_id: str,
    span_id: str | None = None,
) -> uuid.UUID:
    """Intake one validated notificatie; its id (stored now, or before for a replay)."""
    call = sealed_call(services, dv_id, regie, canonical["batchId"], [canonical], trace_id, span_id)
    row = await _asking_sha256_when_needed(
        lambda c: sql_calls.fetch_one(services.pool, "intake_notificatie", c.single_params()),
        call,
        [canonical],
    )
    services.werk.meld()
    assert row is not None  # noqa: S101 - the intake returns one row or raises
    return row[0]


async def intake_batch(
    services: Services,
    dv_id: int,
    regie: str,
    batch_id: uuid.UUID | str | None,
    canonicals: list[dict[str, Any]],
    trace_id: str,
    span_id: str | None = None,
) -> list[str]:
    """Intake a validated batch; the notificatie ids in item order, as text (they are only
    echoed)."""
    call = sealed_call(services, dv_id, regie, batch_id, canonicals, trace_id, span_id)
    rows = await _asking_sha256_when_needed(
        lambda c: sql_calls.fetch_all(
            services.pool, "intake_notificaties", c.params(), loaders=IDS_AS_TEXT
        ),
        call,
        canonicals,
    )
    services.werk.meld()
    return [row[1] for row in rows]


async def _asking_sha256_when_needed(
    make: Callable[[IntakeCall], Awaitable[T]],
    call: IntakeCall,
    canonicals: list[dict[str, Any]],
) -> T:
    """`make(call)`; made once more with the unkeyed payload hashes when the database asks
    for them (NMP01: a replay of a row stored before the payload pepper). Only then are
    they computed and sent: a new row never stores one."""
    try:
        return await make(call)
    except psycopg.Error as error:
        if error.sqlstate != sqlstates.SHA256_NEEDED:
            raise
    hashes = [payload_hash(idempotency_form(c)) for c in canonicals]
    return await make(dataclasses.replace(call, sha256_hashes=hashes))


def sealed_call(
    services: Services,
    dv_id: int,
    regie: str,
    batch_id: uuid.UUID | str | None,
    canonicals: list[dict[str, Any]],
    trace_id: str,
    span_id: str | None = None,
) -> IntakeCall:
    """HMAC and encrypt validated notificaties: nothing readable leaves this function."""
    ids = new_notificatie_ids(len(canonicals))
    dvrefs = [c["dvRef"] for c in canonicals]
    gegevens_jsons = [berichtgegevens_json(c["berichtgegevens"]) for c in canonicals]
    payloads = [
        canonical_payload(idempotency_form(c), gegevens_json=g)
        for c, g in zip(canonicals, gegevens_jsons, strict=True)
    ]
    payload_versie = services.peppers.for_purpose(PURPOSE_PAYLOAD).current
    sealed = seal_many(
        dv_id,
        [(i, recipient_of(c), g) for i, c, g in zip(ids, canonicals, gegevens_jsons, strict=True)],
        ring=services.ring,
    )
    return IntakeCall(
        dv_id=dv_id,
        regie=regie,
        pepper_versie=services.pepper_versie,
        payload_pepper_versie=payload_versie,
        kek_id=services.ring.active_id,
        batch_id=batch_id,
        ids=ids,
        berichttypen=[c["berichtType"] for c in canonicals],
        dvref_hmacs=dvref_hmac_many(
            dv_id, dvrefs, services.pepper_versie, pepper_set=services.peppers
        ),
        payload_hmacs=payload_hmac_many(
            dv_id, payloads, payload_versie, pepper_set=services.peppers
        ),
        ontvangers=sealed.recipients,
        gegevens=sealed.berichtgegevens,
        sleutels=sealed.wrapped_keys,
        geldig_tot=[c["geldigTot"] for c in canonicals],
        trace_ids=[trace_id] * len(canonicals),
        span_ids=[span_id] * len(canonicals),
        diensten=[c["dienst"] for c in canonicals],
        namen=[namen_van(c["berichtgegevens"]) for c in canonicals],
        vorige_hmacs=earlier_pepper_hmacs(services, dv_id, dvrefs),
        vorige_payload_hmacs=earlier_payload_hmacs(services, dv_id, payloads),
    )


def earlier_pepper_hmacs(services: Services, dv_id: int, dvrefs: list[str]) -> list[bytes] | None:
    """Each dvRef's HMAC under every earlier live pepper version, item by item; None while
    only the current version is live. A DV replaying a request accepted before a pepper
    rotation gets its stored notification back, not a second one (SPEC §7 idempotency)."""
    earlier = services.peppers.for_purpose(PURPOSE_DVREF).earlier()
    if not earlier:
        return None
    per_version = [dvref_hmac_many(dv_id, dvrefs, v, pepper_set=services.peppers) for v in earlier]
    return [mac for item in zip(*per_version, strict=True) for mac in item]


def earlier_payload_hmacs(
    services: Services, dv_id: int, payloads: list[bytes]
) -> list[bytes] | None:
    """Each request's payload HMAC under every earlier live payload pepper version, item by
    item; None while only the current version is live (as `earlier_pepper_hmacs`)."""
    earlier = services.peppers.for_purpose(PURPOSE_PAYLOAD).earlier()
    if not earlier:
        return None
    per_version = [
        payload_hmac_many(dv_id, payloads, v, pepper_set=services.peppers) for v in earlier
    ]
    return [mac for item in zip(*per_version, strict=True) for mac in item]


def idempotency_form(canonical: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical request without its batchId: a batch id only groups (SPEC §7), so a DV
    that resends a notification in another batch (a retried batch with a fresh id) gets its
    stored id back instead of a 409."""
    return {name: value for name, value in canonical.items() if name != "batchId"}
