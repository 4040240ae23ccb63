"""Adapters for the services the NMC calls: NotifyNL, the Profielservice, the LDV, a DV's
webhook and beheer channel (its target validated first: webhook_validatie).

Each adapter turns an HTTP exchange into an outcome word the SQL functions take, or raises
one of the two exceptions below. No adapter decides a lifecycle rule, and no exception text
holds personal data: only a short error class such as `http-503` or `timeout`.
"""

from nmc.adapters.http import Deferral, UnexpectedResponse

__all__ = ["Deferral", "UnexpectedResponse"]
