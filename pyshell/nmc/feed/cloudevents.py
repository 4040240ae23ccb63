"""Status changes as CloudEvents 1.0 (JSON), for the feed, the SSE stream and the webhook.

One event of the log (as nmc.event_json gives it) becomes:

    specversion      "1.0"
    id               the event id, as a string
    source           the NMC's URI: NMC_API_EVENT_SOURCE, default urn:nld:oin:<NMC_OIN>:systeem:nmc
                     (the NL GOV CloudEvents profile's URN form)
    type             nl.overheid.moz.notificatie.status.<naar>
    subject          the notification id
    time             when the transition was registered (NMC clock), RFC 3339 in UTC
    sequence         the notification's version after the transition, as a string (the
                     CloudEvents sequence extension), with sequencetype "Integer"
    datacontenttype  application/json
    data             {van, naar, reden, versie}

No order is promised between events of one notification: a consumer applies an event only
when its sequence is higher than the version it holds (SPEC §7).
"""

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nmc import settings_env

TYPE_PREFIX = "nl.overheid.moz.notificatie.status."
PLACEHOLDER_OIN = "00000000000000000000"
"""Used when NMC_OIN is unset: set NMC_OIN (or NMC_API_EVENT_SOURCE) in every deployment."""

ATTRIBUTES = (
    "specversion",
    "id",
    "source",
    "type",
    "subject",
    "time",
    "sequence",
    "sequencetype",
    "datacontenttype",
    "data",
)


def event_source(environ: Mapping[str, str] | None = None) -> str:
    """The `source` of every event: NMC_API_EVENT_SOURCE, else the URN with NMC_OIN."""
    env = os.environ if environ is None else environ
    explicit = settings_env.stripped_text(env, "NMC_API_EVENT_SOURCE")
    if explicit:
        return explicit
    oin = settings_env.stripped_text(env, "NMC_OIN", PLACEHOLDER_OIN)
    return f"urn:nld:oin:{oin}:systeem:nmc"


def to_cloudevent(event: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The CloudEvent of one event row (keys eventId, notificatieId, sequence, van, naar,
    reden, tijdstip)."""
    versie = int(event["sequence"])
    return {
        "specversion": "1.0",
        "id": str(event["eventId"]),
        "source": source,
        "type": TYPE_PREFIX + event["naar"],
        "subject": str(event["notificatieId"]),
        "time": utc_rfc3339(event["tijdstip"]),
        "sequence": str(versie),
        "sequencetype": "Integer",
        "datacontenttype": "application/json",
        "data": {
            "van": event["van"],
            "naar": event["naar"],
            "reden": event["reden"],
            "versie": versie,
        },
    }


def utc_rfc3339(value: Any) -> str:
    """A timestamp (datetime or ISO 8601 text with offset) as RFC 3339 in UTC with `Z`."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
