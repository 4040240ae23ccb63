"""What every handler shares, and the one place where a task's failures are mapped.

`settle` runs the work of one claimed task: an outage (`Deferral`) -> nmc.defer_taak; a
failure inside the NMC (`Failure`, an `UnexpectedResponse`, any other exception) ->
nmc.fail_taak; a stale epoch (`StaleClaim`) -> dropped. The SQL functions decide what that
means for the task and the notificatie; Python only reports the error class.
"""

import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field

import psycopg

from nmc.adapters.beheerkanaal import BeheerkanaalClient
from nmc.adapters.http import Deferral, LimitReached, UnexpectedResponse
from nmc.adapters.ldv import Ldv
from nmc.adapters.notifynl import NotifyNL
from nmc.adapters.profielservice import Profielservice
from nmc.adapters.webhook import WebhookClient
from nmc.adapters.webhook_validatie import WebhookValidator
from nmc.config import DEFAULT_GEEN_CONTACTGEGEVENS_DREMPEL
from nmc.crypto import kek_ring, sealing
from nmc.runtime.group_commit import Flush, GroupCommit
from nmc.worker.claims import Ongeldigtaak, Verzendtaak
from nmc.worker.db import Database, StaleClaim
from nmc.worker.logs import event

GROUP_MAX_BATCH = 500  # items per group-committed call (one transaction)
GROUP_MAX_IN_FLIGHT = 2  # calls under way at once per group: one waits while one fills


class Failure(Exception):
    """A failure inside the NMC for one task (counted by nmc.fail_taak): `fout` is its class."""

    def __init__(self, fout: str) -> None:
        super().__init__(fout)
        self.fout = fout


@dataclass
class Context:
    db: Database
    notifynl: NotifyNL
    profielservice: Profielservice | None
    ldv: Ldv
    ring: kek_ring.KekRing
    eigenaar: str
    webhook: WebhookClient | None = None  # None: no signing ring, no webhook delivery
    webhook_validator: WebhookValidator | None = None  # the handshake and the target check
    beheerkanaal: BeheerkanaalClient | None = None  # None: no signing ring, no https: reports
    geen_contactgegevens_drempel: float = DEFAULT_GEEN_CONTACTGEGEVENS_DREMPEL
    _groups: dict[str, GroupCommit] = field(default_factory=dict, init=False, repr=False)

    async def extend_lease(self, taak_id: int, claim_epoch: int) -> None:
        """Before every external call (raises `StaleClaim` when the task was taken over).

        Group-committed: the extensions of calls that start together go into one
        nmc.extend_leases call, and each caller continues only after that commit."""
        group = self.group_commit("extend_leases", self._extend_leases)
        if await group.submit((taak_id, claim_epoch)) is None:
            raise StaleClaim()

    def group_commit(
        self, name: str, flush: Flush, max_in_flight: int = GROUP_MAX_IN_FLIGHT
    ) -> GroupCommit:
        """This process's group commit `name` (nmc.runtime.group_commit), made on first use."""
        group = self._groups.get(name)
        if group is None:
            group = self._groups[name] = GroupCommit(
                flush, max_batch=GROUP_MAX_BATCH, max_in_flight=max_in_flight
            )
        return group

    async def _extend_leases(self, items: list[tuple[int, int]]) -> list:
        rows = await self.db.fetch_all(
            "extend_leases",
            {
                "taak_ids": [taak_id for taak_id, _ in items],
                "claim_epochs": [epoch for _, epoch in items],
            },
        )
        return [row.lease_tot for row in rows]


def open_sealed(ctx: Context, row: Verzendtaak) -> sealing.Opened:
    """Recipient and berichtgegevens of a claimed send; `Failure` when they cannot be read."""
    if row.sleutel_gewrapt is None:
        raise Failure("gewist")
    sealed = sealing.Sealed(
        recipient=row.ontvanger_versleuteld,
        berichtgegevens=row.gegevens_versleuteld,
        wrapped_key=row.sleutel_gewrapt,
        kek_id=row.kek_id,
    )
    try:
        return sealing.open_sealed(row.notificatie_id, row.dv_id, sealed, ring=ctx.ring)
    except (sealing.DecryptionError, kek_ring.UnknownKekError, TypeError, ValueError):
        raise Failure("decrypt") from None


def open_recipient(ctx: Context, row: Ongeldigtaak) -> str:
    try:
        return sealing.open_recipient(
            row.notificatie_id,
            row.dv_id,
            row.ontvanger_versleuteld,
            row.sleutel_gewrapt,
            row.kek_id,
            ring=ctx.ring,
        )
    except (sealing.DecryptionError, kek_ring.UnknownKekError, TypeError, ValueError):
        raise Failure("decrypt") from None


async def settle(
    ctx: Context, soort: str, taak_id: int, claim_epoch: int, work: Awaitable[str]
) -> str:
    """Run `work` (which returns its outcome word) and map what goes wrong; log the result."""
    try:
        uitkomst = await work
    except StaleClaim:
        event(logging.INFO, "taak-overgenomen", soort=soort, taak_id=taak_id, epoch=claim_epoch)
        return "overgenomen"
    except Deferral as deferral:
        if isinstance(deferral, LimitReached) and deferral.service is not None:
            # NotifyNL's pace or day: the service's budget learns of it with the deferral.
            uitkomst = await _report(
                ctx, "defer_limiet_taak", soort, taak_id, claim_epoch, deferral.fout,
                service=deferral.service, limiet=deferral.limiet,
            )  # fmt: skip
        else:
            uitkomst = await _report(
                ctx, "defer_taak", soort, taak_id, claim_epoch, deferral.fout
            )
        event(
            logging.WARNING,
            "taak-uitgesteld",
            soort=soort,
            taak_id=taak_id,
            epoch=claim_epoch,
            fout=deferral.fout,
            uitkomst=uitkomst,
        )
        return uitkomst
    except (Failure, UnexpectedResponse) as failure:
        fout = failure.fout
    except Exception as unexpected:  # any bug counts as an internal failure
        fout = f"intern-{type(unexpected).__name__}"[:100]
    else:
        event(
            logging.INFO,
            "taak-klaar",
            soort=soort,
            taak_id=taak_id,
            epoch=claim_epoch,
            uitkomst=uitkomst,
        )
        return uitkomst
    uitkomst = await _report(ctx, "fail_taak", soort, taak_id, claim_epoch, fout)
    event(
        logging.WARNING,
        "taak-mislukt",
        soort=soort,
        taak_id=taak_id,
        epoch=claim_epoch,
        fout=fout,
        uitkomst=uitkomst,
    )
    return uitkomst


async def _report(
    ctx: Context, query: str, soort: str, taak_id: int, claim_epoch: int, fout: str, **extra: str
) -> str:
    try:
        return await ctx.db.fetch_value(
            query, {"taak_id": taak_id, "claim_epoch": claim_epoch, "fout": fout, **extra}
        )
    except StaleClaim:
        event(logging.INFO, "taak-overgenomen", soort=soort, taak_id=taak_id, epoch=claim_epoch)
        return "overgenomen"
    except psycopg.Error as error:
        # The lease runs out and another claim retries the task.
        event(logging.ERROR, "database-fout", soort=soort, taak_id=taak_id, sqlstate=error.sqlstate)
        return "database-fout"
