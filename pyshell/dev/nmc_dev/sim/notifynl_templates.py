"""The NotifyNL simulator's templates (../shared/notifynl-contract.md, Templates): per
service its templates with subject, body and versions, as NotifyNL keeps them.

* `GET /v2/template/{id}` and `/v2/template/{id}/version/{n}`: the template (type email,
  version, subject, body, `personalisation`: every `((placeholder))` of subject and body,
  all required), 404 NoResultFound for another service's or none;
* `GET /v2/templates?type=email`: the service's templates;
* `POST /v2/template/{id}/preview` with `{"personalisation": {...}}`: the rendered latest
  version, or 400 `Missing personalisation: a, b`;
* a send renders the template's latest version (the 201's content and template.version) and
  is refused with 400 BadRequestError `Missing personalisation: …` when the personalisation
  lacks a placeholder (names matched as notifications-utils' InsensitiveDict matches them; a
  null value counts as missing).

A template named by the simulator's `templates` setting (service id -> template ids) and
never edited has version 1, a fixed subject and a body without placeholders (the old
behaviour: the personalisation listed line by line). With no `templates` setting any
template id is such a template. Tests edit templates at run time through `/_sim/templates`:
POST `{"template_id", "subject", "body", "service_id"?, "name"?, "type"?}` adds a version
(the first one creates it; without service_id every service owns it), DELETE
`/_sim/templates/{id}` removes it (NotifyNL then knows it no more: GET 404, a send 400
"Template not found"), GET lists the edited ones. `/_sim/reset` forgets every edit.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DEFAULT_SUBJECT = "Bericht van de overheid"
# notifications-utils' placeholder: ((name)) or ((name??conditional text)).
_PLACEHOLDER = re.compile(r"\(\(([^()]+)\)\)")
_DROPPED = {ord(c): None for c in " _-"}


def make_key(name: str) -> str:
    """notifications-utils InsensitiveDict.make_key: case, spaces, _ and - ignored."""
    return name.translate(_DROPPED).lower()


def placeholders(*texts: str | None) -> list[str]:
    """The placeholder names of the texts, once per normalized name (the first spelling)."""
    names: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for match in _PLACEHOLDER.finditer(text or ""):
            name = match.group(1).split("??", 1)[0]
            if make_key(name) not in seen:
                seen.add(make_key(name))
                names.append(name)
    return names


def missing(names: list[str], personalisation: Mapping[str, Any]) -> list[str]:
    """The names the personalisation lacks (a null value counts as missing)."""
    given = {
        make_key(k) for k, v in personalisation.items() if isinstance(k, str) and v is not None
    }
    return [name for name in names if make_key(name) not in given]


def render(text: str, personalisation: Mapping[str, Any]) -> str:
    values = {make_key(k): v for k, v in personalisation.items() if isinstance(k, str)}

    def fill(match: re.Match[str]) -> str:
        name, _, conditional = match.group(1).partition("??")
        value = values.get(make_key(name))
        if conditional:
            return conditional if value else ""
        return "" if value is None else str(value)

    return _PLACEHOLDER.sub(fill, text)


@dataclass
class Version:
    version: int
    subject: str
    body: str | None  # None: the default body (the personalisation line by line)
    created_at: datetime


@dataclass
class SimTemplate:
    template_id: str
    service_id: str | None  # None: every service owns it
    name: str
    type: str = "email"
    versions: list[Version] = field(default_factory=list)

    @property
    def latest(self) -> Version:
        return self.versions[-1]

    def placeholders(self, version: Version | None = None) -> list[str]:
        shown = version or self.latest
        return placeholders(shown.subject, shown.body)

    def content(self, personalisation: Mapping[str, Any]) -> tuple[str, str]:
        """(subject, body) of the latest version rendered with the personalisation."""
        latest = self.latest
        if latest.body is None:
            lines = [f"{k}: {v}" for k, v in sorted(personalisation.items())]
            return render(latest.subject, personalisation), "\n".join(["Beste ontvanger,", *lines])
        return render(latest.subject, personalisation), render(latest.body, personalisation)

    def body(self, base_url: str, version: Version | None = None) -> dict[str, Any]:
        """NotifyNL's template JSON (models.py serialize_for_v2)."""
        shown = version or self.latest
        created = _iso(self.versions[0].created_at)
        return {
            "id": self.template_id,
            "type": self.type,
            "created_at": created,
            "updated_at": _iso(shown.created_at) if shown.version > 1 else None,
            "created_by": "nmc-sim@notifynl.nl",
            "version": shown.version,
            "body": shown.body if shown.body is not None else "Beste ontvanger,",
            "subject": shown.subject,
            "name": self.name,
            "personalisation": {name: {"required": True} for name in self.placeholders(shown)},
            "postage": None,
            "letter_contact_block": None,
            "uri": f"{base_url}/v2/template/{self.template_id}/version/{shown.version}",
        }


class SimTemplates:
    """The templates the simulator knows: the configured ones (never edited: the default
    template) and the edits of `/_sim/templates`."""

    def __init__(self, owned: Callable[[], Mapping[str, list[str]]]) -> None:
        self._owned_of = owned  # SimConfig.templates, read live (/_sim/config may replace it)
        self.edited: dict[str, SimTemplate] = {}
        self.removed: set[str] = set()

    def reset(self) -> None:
        self.edited.clear()
        self.removed.clear()

    @property
    def _owned(self) -> Mapping[str, list[str]]:
        return self._owned_of()

    def find(self, service_id: str, template_id: str) -> SimTemplate | None:
        """The template as `service_id` sees it (None: unknown to it, as NotifyNL's 404)."""
        if template_id in self.removed:
            return None
        edited = self.edited.get(template_id)
        if edited is not None:
            return edited if edited.service_id in (None, service_id) else None
        if self._owned and template_id not in self._owned.get(service_id, ()):
            return None
        return default_template(template_id, service_id)

    def of_service(self, service_id: str) -> list[SimTemplate]:
        ids = [*self._owned.get(service_id, ()), *self.edited]
        found = (self.find(service_id, t) for t in dict.fromkeys(ids))
        return [t for t in found if t is not None]

    def edit(self, data: Mapping[str, Any], now: datetime) -> SimTemplate:
        """A new version of a template (the first creates it)."""
        template_id = str(data["template_id"])
        subject = data.get("subject", DEFAULT_SUBJECT)
        body = data.get("body")
        if not isinstance(subject, str) or not (body is None or isinstance(body, str)):
            raise ValueError("subject and body are texts")
        self.removed.discard(template_id)
        template = self.edited.get(template_id)
        if template is None:
            service_id = data.get("service_id")
            template = self.edited[template_id] = SimTemplate(
                template_id=template_id,
                service_id=str(service_id) if service_id else None,
                name=str(data.get("name") or template_id),
                type=str(data.get("type") or "email"),
                versions=[],
            )
        elif "type" in data:
            template.type = str(data["type"])
        template.versions.append(Version(len(template.versions) + 1, subject, body, now))
        return template

    def remove(self, template_id: str) -> bool:
        known = template_id in self.edited or any(
            template_id in ids for ids in self._owned.values()
        )
        self.edited.pop(template_id, None)
        self.removed.add(template_id)
        return known or not self._owned


def default_template(template_id: str, service_id: str | None) -> SimTemplate:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    return SimTemplate(
        template_id=template_id,
        service_id=service_id,
        name=template_id,
        versions=[Version(1, DEFAULT_SUBJECT, None, created)],
    )


def missing_message(names: list[str]) -> str:
    return "Missing personalisation: " + ", ".join(names)


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
