"""What the worker claims: one frozen dataclass per claim function's row.

The fields are the columns of the claim query in queries.sql, by name and in order, and so
the columns the SQL function returns (tests_py/pipeline/test_claim_rows.py checks both
against the database). `CLAIM_ROWS` names the row type of each claim query.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Verzendtaak:
    """A send task (nmc.claim_verzenden): the attempt, its recipient's ciphertext and how to
    send it. `herclaim`: claimed before, look the attempt up by reference first."""

    taak_id: int
    claim_epoch: int
    notificatie_id: uuid.UUID
    poging_id: uuid.UUID
    poging_nummer: int
    herclaim: bool
    mag_verzenden: bool  # false past geldig_tot: report `verlopen` unless found sent
    dv_id: int
    dv_naam: str
    dienst: str | None
    regie: str
    berichttype: str
    notifynl_template_id: uuid.UUID
    notify_service: str
    ontvanger_versleuteld: bytes | None
    gegevens_versleuteld: bytes | None
    sleutel_gewrapt: bytes | None  # None: erased (nothing to send)
    kek_id: str | None
    trace_id: str | None


@dataclass(frozen=True)
class Taak:
    """A task of any other kind (nmc.claim_taken): what it is about, if anything."""

    taak_id: int
    claim_epoch: int
    dv_id: int | None
    notificatie_id: uuid.UUID | None
    poging_id: uuid.UUID | None
    payload: Any
    trace_id: str | None
    pogingen: int
    herclaim: bool


@dataclass(frozen=True)
class Navraagtaak:
    """A reconciliation (nmc.claim_navraag_v2): the attempt's NotifyNL id to look up, and the
    Notify service whose key the look-up needs."""

    taak_id: int
    claim_epoch: int
    notificatie_id: uuid.UUID
    poging_id: uuid.UUID
    notifynl_id: uuid.UUID
    trace_id: str | None
    notify_service: str


@dataclass(frozen=True)
class Ongeldigtaak:
    """A report of an address that failed (nmc.claim_ongeldig_melden): the identifying
    number's ciphertext and the contactgegeven the failed attempt used."""

    taak_id: int
    claim_epoch: int
    notificatie_id: uuid.UUID
    poging_id: uuid.UUID
    dv_id: int
    contactgegeven_id: uuid.UUID | None
    gemeld_op: datetime | None
    ontvanger_versleuteld: bytes | None
    sleutel_gewrapt: bytes | None  # None: erased (nothing left to report)
    kek_id: str | None
    trace_id: str | None


@dataclass(frozen=True)
class Terugkoppeltaak:
    """A DV's webhook delivery (nmc.claim_terugkoppelen_v3): its URL (None: close the task),
    whether that URL passed its validation, whether its position has a gap (the webhook is
    paused for it: close the task), and then the next page of events."""

    taak_id: int
    claim_epoch: int
    dv_id: int
    webhook_url: str | None
    epoch: int | None
    pagina: Any
    gevalideerd: bool | None
    gat: bool = False


CLAIM_ROWS: dict[str, type] = {
    "claim_verzenden": Verzendtaak,
    "claim_taken": Taak,
    "claim_navraag": Navraagtaak,
    "claim_ongeldig_melden": Ongeldigtaak,
    "claim_terugkoppelen": Terugkoppeltaak,
}
