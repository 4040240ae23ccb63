"""The demo's delivery proof: one final afleverbewijs fetched over the API as a DV does, verified
with the DV client (nmc_client: signature against the published JWKS, issuer, notification id,
the event chain), and saved with its decoded content and the JWKS, so that anyone can check it
again offline with `python -m nmc_client`.
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from nmc.feed.cloudevents import event_source
from nmc_client import BewijsOngeldig, NmcClient, NmcClientError
from nmc_dev.demo import scenario
from nmc_dev.stack import LocalStack
from nmc_dev.stack.local import NMC_OIN

EXAMPLE_SCENARIO = "vol-dan-bezorgd"  # two attempts: mailbox full, then delivered and settled


def example_id(plan: scenario.Plan) -> str | None:
    """The notification the demo shows: mailbox full, then delivered on the resend."""
    ids = [n.id for n in plan.notificaties if n.id]
    wanted = [n.id for n in plan.notificaties if n.scenario.key == EXAMPLE_SCENARIO and n.id]
    return (wanted or ids or [None])[0]


def issuer() -> str:
    """The local NMC's `iss`: its event source (nmc_dev.stack gives the API NMC_OIN)."""
    return event_source({"NMC_OIN": NMC_OIN})


def show_proof(stack: LocalStack, plan: scenario.Plan, token: str, out: TextIO) -> bool:
    """Fetch, verify and save the example's proof and print where it is; False when it does not
    verify or cannot be fetched."""
    notificatie_id = example_id(plan)
    if notificatie_id is None:
        return False
    directory = stack.state_dir / "afleverbewijs"
    try:
        with NmcClient(f"{stack.api_url}/api/nmc/v1", lambda: token) as nmc:
            bewijs = nmc.afleverbewijs(notificatie_id, issuer=issuer())
            jwks = nmc.http.get(nmc.jwks_url).json()
    except BewijsOngeldig as error:
        out.write(f"\nThe delivery proof of {notificatie_id} does NOT verify: {error.reason}\n")
        return False
    except NmcClientError as error:
        out.write(f"\nThe delivery proof of {notificatie_id} could not be fetched: {error}\n")
        return False
    directory.mkdir(parents=True, exist_ok=True)
    saved = directory / f"{notificatie_id}.jws"
    saved.write_text(bewijs.jws + "\n", encoding="ascii")
    decoded = directory / f"{notificatie_id}.json"
    decoded.write_text(json.dumps(bewijs.claims, indent=2, ensure_ascii=False) + "\n")
    keys = directory / "jwks.json"
    keys.write_text(json.dumps(jwks, indent=2) + "\n")
    out.write(_summary(bewijs.claims, bewijs.kid, saved, decoded, keys))
    out.flush()
    return bewijs.definitief


def _summary(claims: Mapping[str, Any], kid: str, saved: Path, decoded: Path, keys: Path) -> str:
    notificatie = claims["notificatie"]
    chain = " -> ".join(event["naar"] for event in claims["events"])
    attempts = "; ".join(
        f"attempt {p['nummer']}: "
        + ", ".join(
            f"{r['status']} (completed_at {r['afgerondOp']}, "
            f"{'changed the outcome' if r['toegepast'] else 'recorded only'})"
            for r in p["receipts"]
        )
        for p in claims["pogingen"]
    )
    vaststelling = claims.get("vaststelling") or {}
    settled = (
        f"settled {vaststelling['vastgesteldOp']} (term {vaststelling['termijn']} from attempt "
        f"{vaststelling['poging']}'s completed_at)"
        if vaststelling.get("vastgesteldOp")
        else "not settled"
    )
    return (
        f"\nThe delivery proof of {notificatie['notificatieId']}, verified with nmc_client "
        f"(signature of key {kid} against the JWKS, issuer, notification id, the event chain):\n"
        f"  {'final' if claims['definitief'] else 'NOT final'}: {notificatie['status']}, "
        f"version {notificatie['versie']}; events {chain}\n"
        f"  {attempts}\n"
        f"  {settled}; issued {claims['uitgegevenOp']} by {claims['iss']}\n"
        f"  saved: {saved} (decoded: {decoded}, the JWKS: {keys})\n"
        f"  check it again offline: python -m nmc_client {saved} --jwks {keys} "
        f"--issuer {claims['iss']}\n"
    )
