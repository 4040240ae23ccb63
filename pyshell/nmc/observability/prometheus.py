"""The Prometheus text format (0.0.4) that the API's and the worker's /metrics share.

`database_lines` renders the rows of nmc.metrics() (SPEC §9: every count that lives in the
database comes from that one function), plus the geen-contactgegevens flag per DV and
`nmc_database_bereikbaar`. `Histogram` is the in-process latency histogram both processes
keep. Label values are kinds, statuses, DV ids, route templates and target names; callers
never pass anything personal, and names or label keys that are not valid Prometheus
identifiers are dropped rather than escaped into the output.

Why not prometheus_client (benchmarks/bench_exposition.py): with a custom collector it takes
about 2.8x the CPU to render the same page, and it writes a counter as `<name>_total`, which
would rename nmc_teller_totaal and nmc_worker_taken_totaal (the alert rules' names).
"""

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

PROMETHEUS_MEDIA_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_NAME = re.compile(r"\A[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL = re.compile(r"\A[a-zA-Z_][a-zA-Z0-9_]*\Z")

DATABASE_HELP = {
    "nmc_taken": "Taken per soort en staat (zonder done).",
    "nmc_taak_oudste_due_seconden": "Seconden dat de oudste openstaande taak per soort wacht.",
    "nmc_notificaties": "Notificaties per status.",
    "nmc_onbevestigd_terminaal": "Onbevestigde terminale statussen ouder dan de "
    "bevestigingstermijn, per dienstverlener (ten hoogste de telgrens).",
    "nmc_onbevestigd_terminaal_afgekapt": "1 als nmc_onbevestigd_terminaal de telgrens "
    "bereikte: het aantal is dan een ondergrens.",
    "nmc_teller_totaal": "Tellers (geweigerde en misvormde ontvangstbevestigingen, ...).",
    "nmc_geen_contactgegevens_aandeel": "Aandeel geen-contactgegevens onder afgeronde centrale "
    "notificaties, per dienstverlener.",
    "nmc_geen_contactgegevens_boven_drempel": "1 als het aandeel geen-contactgegevens boven de "
    "drempel ligt.",
    "nmc_geen_contactgegevens_drempel": "De ingestelde drempel voor het aandeel "
    "geen-contactgegevens.",
    "nmc_verzendbudget_gebruikt": "Verzendbudget gebruikt in het huidige venster.",
    "nmc_feed_achterstand_seconden": "Seconden sinds de laatste bevestiging per dienstverlener "
    "(-1: nooit bevestigd).",
    "nmc_database_bereikbaar": "1 als nmc.metrics() antwoordde.",
    "nmc_taak_achterstand": "Openstaande taken waarvan de due verstreken is, per soort en "
    "dienstverlener.",
    "nmc_taak_herhaald": "Openstaande taken na een mislukte of uitgestelde poging, per soort.",
    "nmc_beheerrapport_leeftijd_seconden": "Seconden sinds het laatste beheerrapport van de "
    "dienstverlener (-1: nog geen).",
    "nmc_verzendbudget_plafond": "Wat het verzendbudget per venster toestaat, per service en "
    "soort.",
    "nmc_webhook_mislukt": "Opeenvolgende mislukte webhook-leveringen per dienstverlener.",
    "nmc_webhook_gepauzeerd": "1 als de webhook gepauzeerd is (of na een 410 uitgeschakeld).",
    "nmc_webhook_gat": (
        "1 als de webhook stilstaat om een gat: events na zijn positie zaten in een "
        "verwijderde partitie; de DV zet zijn positie (PUT /webhook/positie)."
    ),
    "nmc_webhook_achterstand_seconden": "Seconden sinds de webhook voor het laatst tot zijn "
    "positie leverde.",
    "nmc_webhook_gevalideerd": "1 als de huidige webhook-URL de validatie doorstond.",
    "nmc_berichttype_niet_beschikbaar": "1 als de NotifyNL-template van het berichttype niet "
    "meer bestaat (de aanname weigert het).",
    "nmc_event_default_rijen": "Rijen in de default-partitie van het eventlog (normaal 0).",
    "nmc_feed_watermerk_achterstand_seconden": "Seconden dat het oudste gecommitte event "
    "achter het watermerk wacht.",
    "nmc_oudste_schrijftransactie_seconden": "Leeftijd van de oudste open transactie met een "
    "xid (houdt de feed van elke dienstverlener op).",
    "nmc_verzendweigering": "Verzendingen die NotifyNL weigerde om onze configuratie, per "
    "dienstverlener, berichttype en soort, sinds de weigering begon.",
    "nmc_verzendweigering_seconden": "Seconden sinds NotifyNL de verzendingen van het "
    "berichttype om onze configuratie weigert.",
    "nmc_onverwerkbaar_totaal": "Notificaties technisch-mislukt omdat NotifyNL ze niet kon "
    "opmaken (Missing personalisation, te lang), per dienstverlener en berichttype.",
}

Samples = list[tuple[Mapping[str, str], float]]


class Histogram:
    """A cumulative histogram per combination of label values (one per process)."""

    def __init__(
        self,
        name: str,
        help_text: str,
        label_names: Sequence[str],
        buckets: tuple[float, ...] = BUCKETS,
    ) -> None:
        self.name = name
        self.help_text = help_text
        self.label_names = tuple(label_names)
        self.buckets = buckets
        self._series: dict[tuple[str, ...], list[float]] = {}

    def observe(self, label_values: tuple[str, ...], seconds: float) -> None:
        series = self._series.get(label_values)
        if series is None:
            # counts per bucket, then the +Inf count, then the sum
            series = self._series[label_values] = [0.0] * (len(self.buckets) + 2)
        for index, bound in enumerate(self.buckets):
            if seconds <= bound:
                series[index] += 1
        series[-2] += 1
        series[-1] += seconds

    def count(self, label_values: tuple[str, ...]) -> int:
        series = self._series.get(label_values)
        return int(series[-2]) if series else 0

    def lines(self) -> list[str]:
        name = self.name
        out = [f"# HELP {name} {self.help_text}", f"# TYPE {name} histogram"]
        for values, series in sorted(self._series.items()):
            labels = dict(zip(self.label_names, values, strict=True))
            for bound, count in zip(self.buckets, series, strict=False):
                out.append(sample(f"{name}_bucket", {**labels, "le": number(bound)}, count))
            out.append(sample(f"{name}_bucket", {**labels, "le": "+Inf"}, series[-2]))
            out.append(sample(f"{name}_count", labels, series[-2]))
            out.append(sample(f"{name}_sum", labels, series[-1]))
        return out


def database_lines(rows: Iterable[tuple[str, Any, float]] | None, drempel: float) -> list[str]:
    """The rows of nmc.metrics() (None: the call failed) plus the geen-contactgegevens flag."""
    if rows is None:
        return family("nmc_database_bereikbaar", "gauge", [({}, 0)])
    families: dict[str, Samples] = {}
    for naam, labels, waarde in rows:
        if not _NAME.match(naam or ""):
            continue
        clean = {
            str(key): str(value)
            for key, value in (labels or {}).items()
            if _LABEL.match(str(key)) and value is not None
        }
        families.setdefault(naam, []).append((clean, float(waarde)))
    shares = families.get("nmc_geen_contactgegevens_aandeel", [])
    families["nmc_geen_contactgegevens_drempel"] = [({}, drempel)]
    families["nmc_geen_contactgegevens_boven_drempel"] = [
        (labels, 1.0 if share > drempel else 0.0) for labels, share in shares
    ]
    out: list[str] = []
    for naam in sorted(families):
        kind = "counter" if naam.endswith("_totaal") else "gauge"
        out += family(naam, kind, families[naam])
    out += family("nmc_database_bereikbaar", "gauge", [({}, 1)])
    return out


def render(*parts: list[str]) -> bytes:
    return ("\n".join(line for part in parts for line in part) + "\n").encode("utf-8")


def family(name: str, kind: str, samples: Samples, help_text: str | None = None) -> list[str]:
    """One metric family: HELP, TYPE and its samples."""
    text = help_text or DATABASE_HELP.get(name, name)
    out = [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
    out += [sample(name, labels, value) for labels, value in samples]
    return out


def sample(name: str, labels: Mapping[str, str], value: float) -> str:
    if not labels:
        return f"{name} {number(value)}"
    inner = ",".join(f'{key}="{_escape(val)}"' for key, val in sorted(labels.items()))
    return f"{name}{{{inner}}} {number(value)}"


def number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
