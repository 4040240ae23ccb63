"""The soak's delivery proofs: after the run, every terminal notification's afleverbewijs
fetched over the API as its DV does and verified with the DV client (nmc_client: signature
against the published JWKS, issuer, notification id, the event chain), for the check
`checks.afleverbewijzen`, which compares each with the event log and the feed consumer.

Fetched while the API still runs and nothing else moves (the workers are stopped), a few
requests at a time; each DV asks with its own token for the notifications its consumer holds.
"""

import json
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from nmc_client import BewijsOngeldig, NmcClient, NmcClientError, RetryPolicy, StaticJwks

THREADS = 8


@dataclass
class ProofEvidence:
    claims: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # id -> verified claims
    failures: dict[str, str] = field(default_factory=dict)  # id -> why it did not verify


def fetch(
    api_base: str,
    ids_per_token: Mapping[str, Iterable[str]],
    *,
    issuer: str,
    token_for: Callable[[str], str],
    threads: int = THREADS,
) -> ProofEvidence:
    """The proof of every id, asked with the token of the DV whose consumer holds it
    (`ids_per_token`: a key for token_for -> the ids)."""
    evidence = ProofEvidence()
    with httpx.Client(timeout=30) as http:
        jwks = StaticJwks(http.get(api_base + "/.well-known/jwks.json").json())
        jobs = [(key, i) for key, ids in ids_per_token.items() for i in ids]
        clients = {
            key: NmcClient(
                api_base, lambda key=key: token_for(key), http=http, retry=RetryPolicy(5, 0.2)
            )
            for key in ids_per_token
        }

        def one(job: tuple[str, str]) -> tuple[str, Mapping[str, Any] | None, str | None]:
            key, notificatie_id = job
            try:
                bewijs = clients[key].afleverbewijs(notificatie_id, issuer=issuer, jwks=jwks)
            except BewijsOngeldig as error:
                return notificatie_id, None, error.reason
            except NmcClientError as error:
                return notificatie_id, None, f"not fetched ({type(error).__name__})"
            return notificatie_id, bewijs.claims, None

        with ThreadPoolExecutor(max_workers=threads) as pool:
            for notificatie_id, claims, failure in pool.map(one, jobs):
                if claims is not None:
                    evidence.claims[notificatie_id] = claims
                else:
                    evidence.failures[notificatie_id] = failure or "?"
    return evidence


def texts(evidence: ProofEvidence) -> str:
    """The proofs' content, for the personal-data scan."""
    return "\n".join(json.dumps(c, ensure_ascii=False) for c in evidence.claims.values())
