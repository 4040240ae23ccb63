"""The soak's scan for personal data in what the NMC's processes wrote (SPEC §8).

Every address, dvRef and personalisation value of the run carries the run's marker
(nmc_dev.soak.workload), so any piece of them in a text is found by the marker alone, in one
pass, whatever the size of the logs. The identifying numbers cannot carry it: every run of
8 or 9 digits that stands on its own (not part of a longer number, a word or a UUID) is
looked up in the run's set. A finding says what kind of value and where, never the value.
"""

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from nmc_dev.soak.workload import PersonalData

_WORD_CHARS = r"[\w@.+\-]"
_NUMBER = re.compile(r"(?<![\w\-])\d{8,9}(?![\w\-])")


@dataclass(frozen=True)
class Finding:
    kind: str  # e-mail, dvRef, personalisatie, identificatienummer
    where: str
    count: int

    def __str__(self) -> str:
        return f"{self.kind} in {self.where} ({self.count}x)"


def scan(texts: Iterable[tuple[str, str]], personal: PersonalData) -> list[Finding]:
    """Findings per (kind, place) in `texts`, pairs of (where, text)."""
    marker = personal.marker.lower()
    around = re.compile(f"{_WORD_CHARS}*{re.escape(marker)}{_WORD_CHARS}*")
    emails = {e.lower() for e in personal.emails}
    dvrefs = {d.lower() for d in personal.dvrefs}
    found: Counter[tuple[str, str]] = Counter()
    for where, text in texts:
        lowered = text.lower()
        if marker in lowered:
            for match in around.finditer(lowered):
                token = match.group(0)
                kind = (
                    "e-mail"
                    if token in emails or "@" in token
                    else "dvRef"
                    if token in dvrefs
                    else "personalisatie"
                )
                found[(kind, where)] += 1
        for match in _NUMBER.finditer(text):
            if match.group(0) in personal.numbers:
                found[("identificatienummer", where)] += 1
    return [Finding(kind, where, n) for (kind, where), n in sorted(found.items())]
