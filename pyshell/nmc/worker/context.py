"""What every handler shares, and the one place where a task's failures are mapped.

`settle` runs the work of one claimed task: an outage (`Deferral`) -> nmc.defer_taak; a
failure inside the NMC (`Failure`, an `UnexpectedResponse`, any other exception) ->
nmc.fail_taak; a stale epoch (`StaleClaim`) -> dropped. The SQL functions decide what that
means for the task and the notificatie; Python only reports the error class.
"""

import logging
from collections.abc import Awaitable
from dataclasses import dataclass

import psycopg

from nmc import crypto
from nmc.adapters.http import Deferral, UnexpectedResponse
from nmc.adapters.ldv import Ldv
from nmc.adapters.notifynl import NotifyNL
from nmc.adapters.profielservice import Profielservice
from nmc.worker.db import Database, StaleClaim
from nmc.worker.logs import event


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
    ring: crypto.KekRing
    eigenaar: str

    async def extend_lease(self, taak_id: int, claim_epoch: int) -> None:
        """Before every external call (raises `StaleClaim` when the task was taken over)."""
        await self.db.rows("extend_lease", taak_id=taak_id, claim_epoch=claim_epoch)


def open_sealed(ctx: Context, row) -> crypto.Opened:
    """Recipient and berichtgegevens of a claimed send; `Failure` when they cannot be read."""
    if row.sleutel_gewrapt is None:
        raise Failure("gewist")
    sealed = crypto.Sealed(
        recipient=row.ontvanger_versleuteld,
        berichtgegevens=row.gegevens_versleuteld,
        wrapped_key=row.sleutel_gewrapt,
        kek_id=row.kek_id,
    )
    try:
        return crypto.open_sealed(row.notificatie_id, row.dv_id, sealed, ring=ctx.ring)
    except (crypto.DecryptionError, crypto.UnknownKekError, TypeError, ValueError):
        raise Failure("decrypt") from None


def open_recipient(ctx: Context, row) -> str:
    try:
        return crypto.open_recipient(
            row.notificatie_id,
            row.dv_id,
            row.ontvanger_versleuteld,
            row.sleutel_gewrapt,
            row.kek_id,
            ring=ctx.ring,
        )
    except (crypto.DecryptionError, crypto.UnknownKekError, TypeError, ValueError):
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
        uitkomst = await _report(ctx, "defer_taak", soort, taak_id, claim_epoch, deferral.fout)
        event(
            logging.WARNING,
            "taak-uitgesteld",
            soort=soort,
            taak_id=taak_id,
            fout=deferral.fout,
            uitkomst=uitkomst,
        )
        return uitkomst
    except (Failure, UnexpectedResponse) as failure:
        fout = failure.fout
    except Exception as unexpected:  # any bug counts as an internal failure
        fout = f"intern-{type(unexpected).__name__}"[:100]
    else:
        event(logging.INFO, "taak-klaar", soort=soort, taak_id=taak_id, uitkomst=uitkomst)
        return uitkomst
    uitkomst = await _report(ctx, "fail_taak", soort, taak_id, claim_epoch, fout)
    event(
        logging.WARNING, "taak-mislukt", soort=soort, taak_id=taak_id, fout=fout, uitkomst=uitkomst
    )
    return uitkomst


async def _report(
    ctx: Context, query: str, soort: str, taak_id: int, claim_epoch: int, fout: str
) -> str:
    try:
        return await ctx.db.value(query, taak_id=taak_id, claim_epoch=claim_epoch, fout=fout)
    except StaleClaim:
        event(logging.INFO, "taak-overgenomen", soort=soort, taak_id=taak_id, epoch=claim_epoch)
        return "overgenomen"
    except psycopg.Error as error:
        # The lease runs out and another claim retries the task.
        event(logging.ERROR, "database-fout", soort=soort, taak_id=taak_id, sqlstate=error.sqlstate)
        return "database-fout"
