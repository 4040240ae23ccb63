"""Reading the berichttypen's NotifyNL templates (GET /v2/template/{id}, with the Notify
service's key): shared by `nmc admin dv apply`, `nmc admin templates verversen` and the
worker's maintenance job `templates`. What a read means is SQL's (nmc.record_template); this
module turns NotifyNL's answer into the outcome it records, keeping only the placeholder
names and the version (never the body or the subject).

Names are matched as NotifyNL matches them (notifications-utils `InsensitiveDict.make_key`:
spaces, underscores and hyphens dropped, then `str.lower`): `sleutel` is that rule, used for
the template's names here and for the berichtgegevens names at intake (nmc.api.intake), so
both sides are normalized by the same Python code NotifyNL runs.
"""

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nmc.adapters.http import Deferral, UnexpectedResponse
from nmc.adapters.notifynl import NotifyNL

_DROPPED = {ord(c): None for c in " _-"}

GELEZEN = "gelezen"
VERDWENEN = "verdwenen"
MISLUKT = "mislukt"


def sleutel(naam: str) -> str:
    """A personalisation or placeholder name as NotifyNL compares it."""
    return naam.translate(_DROPPED).lower()


def namen_van(berichtgegevens: Mapping[str, Any]) -> str:
    """The intake's p_namen for one notification: its berichtgegevens names (those with a
    value: NotifyNL counts a null as missing), normalized, space-separated (normalizing
    removes every space, so the separator is unambiguous). Names only, never values."""
    return " ".join(sleutel(k) for k, v in berichtgegevens.items() if v is not None)


@dataclass(frozen=True)
class Lezing:
    """One read of a template: the outcome nmc.record_template records, and why (`reden`,
    for `nmc admin dv apply`'s refusal: niet-gevonden, geen-email, geen-toegang, storing)."""

    uitkomst: str
    versie: int | None = None
    placeholders: list[str] = field(default_factory=list)
    sleutels: list[str] = field(default_factory=list)
    fout: str | None = None
    reden: str | None = None

    def record_params(self, service: str, template_id: uuid.UUID | str) -> dict[str, Any]:
        """The parameters of queries.sql `record_template`."""
        gelezen = self.uitkomst == GELEZEN
        return {
            "notify_service": service,
            "template_id": str(template_id),
            "uitkomst": self.uitkomst,
            "versie": self.versie,
            "placeholders": self.placeholders if gelezen else None,
            "sleutels": self.sleutels if gelezen else None,
            "fout": self.fout,
        }


def lezing_uit(data: Mapping[str, Any] | None) -> Lezing:
    """The outcome of NotifyNL's answer: None (404) is gone; a template of another type is
    unusable for e-mail (recorded as gone); an e-mail template gives its names and version."""
    if data is None:
        return Lezing(VERDWENEN, reden="niet-gevonden")
    if data.get("type") != "email":
        return Lezing(VERDWENEN, fout="geen-email", reden="geen-email")
    versie = data.get("version")
    personalisation = data.get("personalisation")
    if not isinstance(versie, int) or isinstance(versie, bool) or versie < 1:
        raise UnexpectedResponse("notifynl-template-antwoord")
    if not isinstance(personalisation, dict):
        raise UnexpectedResponse("notifynl-template-antwoord")
    placeholders, sleutels = ontdubbeld(personalisation)
    return Lezing(GELEZEN, versie=versie, placeholders=placeholders, sleutels=sleutels)


def ontdubbeld(namen: Iterable[Any]) -> tuple[list[str], list[str]]:
    """The names once per normalized form (the first spelling), as NotifyNL's InsensitiveSet
    keeps a template's placeholders, with their normalized forms beside."""
    placeholders: list[str] = []
    sleutels: list[str] = []
    for naam in namen:
        if not isinstance(naam, str):
            raise UnexpectedResponse("notifynl-template-antwoord")
        key = sleutel(naam)
        if key not in sleutels:
            placeholders.append(naam)
            sleutels.append(key)
    return placeholders, sleutels


async def lees_template(notifynl: NotifyNL, service: str, template_id: uuid.UUID | str) -> Lezing:
    """Read one template with the service's key. An outage, our key refused (401/403) or no
    key for the service is `mislukt` with its error class: the state is kept."""
    try:
        return lezing_uit(await notifynl.get_template(template_id, service=service))
    except Deferral as deferral:
        toegang = deferral.fout.endswith(("-401", "-403", "-geen-sleutel"))
        return Lezing(MISLUKT, fout=deferral.fout, reden="geen-toegang" if toegang else "storing")
    except UnexpectedResponse as failure:
        return Lezing(MISLUKT, fout=failure.fout, reden="storing")
