"""The suite-wide scan for personal data in the NMC's outputs (SPEC §8).

What is personal: every e-mail address, identifying number (BSN, KVK, RSIN), dvRef and
personalisation value the tests hand to the NMC. They are registered where they go in, not
test by test:
* every request to the DV API (`NmcApi`, however a test runs it): the intake bodies
  (`emailAdres`, `identificatieNummer`, `dvRef`, the `berichtgegevens` values, single and
  `_batch`), the `dvRef` query of a list, and the `to` of a NotifyNL callback;
* the pipeline's `intake` fixture (sealed straight into SQL), through `register_sealed`;
* every party seeded into the Profielservice simulator (its numbers and addresses);
* values a test names itself (`register`).
Values shorter than 6 characters, or all digits and shorter than 8, prove nothing (a
personalisation `Test`, a count) and are not registered.

What is scanned (the NMC's outputs, never its inputs, never the simulators' own stores):
* every log record of every logger (a wrapper around `Logger.callHandlers`, so also loggers
  that do not propagate), as the JSON formatters write it: the message and the extra fields;
  not the client side's `httpx`/`httpcore` records, which log the URLs the *tests* call;
* every API response's headers, and the body of every error (status >= 400), of /metrics
  and of /health/*, and of every delivery proof (its JWS decoded) and history page;
* every response of the operator console (`ConsoleApp`): headers and every page's body;
* before a test database is dropped: its event rows, the receipt history and settlement
  records (the delivery proof's), the tasks' last error classes and the output of
  nmc.metrics() rendered as /metrics renders it;
* what a test hands in with `output` (the `nmc` CLI fixture's stdout/stderr, a worker
  process's stderr, a worker's /metrics);
* every span a test exports while tracing is on (nmc.tracing): its name, attributes, events
  and links' attributes, as the privacy filter hands them to the exporter.

Each test's outputs are scanned when the test ends, against the values registered so far:
the test's own values as substrings, every earlier value by its first word (an index, so the
cost stays small with thousands of values). A finding names the test, the kind and where,
never the value (and, when an earlier test handed it in, that test);
`pytest_sessionfinish` (tests_py/conftest.py) fails the run on any.
"""

import base64
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

EMAIL = "e-mail"
NUMMER = "identificatienummer"
DVREF = "dvRef"
PERSONALISATIE = "personalisatie"

MIN_LENGTH = 6
MIN_DIGITS = 8
# The client side of the tests: httpx logs every URL a test client calls (query included).
CLIENT_LOGGERS = ("httpx", "httpcore")
OBSERVED_PATHS = ("/metrics", "/health/live", "/health/ready")
# Responses whose success bodies are scanned too: the delivery proof and the history.
OBSERVED_SUFFIXES = ("/afleverbewijs", "/geschiedenis")

_TOKEN = re.compile(r"[\w@.+\-]+")
_STANDARD_RECORD_FIELDS = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}  # fmt: skip


@dataclass(frozen=True)
class Finding:
    test: str
    kind: str
    where: str
    origin: str  # the test that handed the value in (a name, never the value)

    def __str__(self) -> str:
        origin = "" if self.origin == self.test else f" (a value of {self.origin})"
        return f"{self.test}: {self.kind} in {self.where}{origin}"


class PrivacyScan:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.needles: dict[str, str] = {}  # lowered value -> kind
        self.origins: dict[str, str] = {}  # lowered value -> the test that registered it first
        self._by_first_word: dict[str, set[str]] = {}
        self._test_needles: set[str] = set()
        self._outputs: list[tuple[str, str]] = []
        self.test = "(sessie)"
        self.findings: list[Finding] = []
        self.scanned_outputs = 0
        self.scanned_chars = 0
        self.scan_seconds = 0.0

    # ---------------------------------------------------------------------------------
    # Registering personal values

    def register(self, kind: str, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return
        text = value.strip().lower()
        if len(text) < MIN_LENGTH or (text.isdigit() and len(text) < MIN_DIGITS):
            return
        words = _words(text)
        if not words:
            return
        with self._lock:
            self._test_needles.add(text)
            if text not in self.needles:
                self.needles[text] = kind
                self.origins[text] = self.test
                self._by_first_word.setdefault(words[0], set()).add(text)

    def register_recipient(self, recipient: Any) -> None:
        """An e-mail address, or `TYPE:nummer` as the intake seals an identifying number."""
        if not isinstance(recipient, str):
            return
        if "@" in recipient:
            self.register(EMAIL, recipient)
        else:
            self.register(NUMMER, recipient.rpartition(":")[2])

    def register_gegevens(self, gegevens: Any) -> None:
        if isinstance(gegevens, Mapping):
            for waarde in gegevens.values():
                self.register(PERSONALISATIE, waarde)

    def register_sealed(self, recipient: str, gegevens: Mapping[str, str] | None) -> None:
        self.register_recipient(recipient)
        self.register_gegevens(gegevens)

    def register_query(self, query_string: bytes) -> None:
        """The dvRef of a list request (the only personal query parameter)."""
        for dvref in parse_qs(query_string.decode("latin-1")).get("dvRef", []):
            self.register(DVREF, dvref)

    def register_body(self, path: str, body: bytes) -> None:
        """The personal values in the body of a request to the DV API."""
        if not body:
            return
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return
        if not isinstance(document, dict):
            return
        items = document.get("notificaties") if path.endswith("/_batch") else [document]
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                self.register(EMAIL, item.get("emailAdres"))
                self.register(NUMMER, item.get("identificatieNummer"))
                self.register(DVREF, item.get("dvRef"))
                self.register_gegevens(item.get("berichtgegevens"))
        if path.endswith("/notifynl-callback"):
            self.register(EMAIL, document.get("to"))

    def register_parties(self, parties: Iterable[Any]) -> None:
        """Parties seeded into the Profielservice simulator: numbers and contact values."""
        for party in parties:
            if not isinstance(party, Mapping):
                continue
            self.register(NUMMER, party.get("identificatieNummer"))
            for item in party.get("contactgegevens") or []:
                if isinstance(item, Mapping):
                    waarde = item.get("waarde")
                    self.register(EMAIL if "@" in str(waarde) else NUMMER, waarde)

    # ---------------------------------------------------------------------------------
    # Collecting outputs

    def output(self, where: str, text: str) -> None:
        """An output of the NMC to scan at the end of the current test."""
        with self._lock:
            self._outputs.append((where, text))

    def log_record(self, record: logging.LogRecord) -> None:
        if record.name.startswith(CLIENT_LOGGERS):
            return
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = str(record.msg)
        extras = {k: v for k, v in record.__dict__.items() if k not in _STANDARD_RECORD_FIELDS}
        text = message + " " + json.dumps(extras, default=str, ensure_ascii=False)
        self.output(f"a log record of {record.name} ({record.levelname})", text)

    # ---------------------------------------------------------------------------------
    # Scanning

    def begin(self, test: str) -> None:
        self.end()
        self.test = test

    def end(self) -> list[Finding]:
        """Scan what the current test produced; returns (and keeps) its findings."""
        with self._lock:
            outputs, self._outputs = self._outputs, []
            own, self._test_needles = self._test_needles, set()
            index = {word: set(needles) for word, needles in self._by_first_word.items()}
            kinds = dict(self.needles)
            origins = dict(self.origins)
        started = time.perf_counter()
        found: dict[tuple[str, str], None] = {}
        for where, text in outputs:
            lowered = text.lower()
            hits = {needle for needle in own if needle in lowered}
            for word in _words(lowered):
                hits |= {needle for needle in index.get(word, ()) if needle in lowered}
            for needle in hits:
                found[(kinds[needle], where, origins[needle])] = None
        new = [Finding(self.test, kind, where, origin) for kind, where, origin in found]
        self.findings += new
        self.scanned_outputs += len(outputs)
        self.scanned_chars += sum(len(text) for _, text in outputs)
        self.scan_seconds += time.perf_counter() - started
        return new

    def summary(self) -> str:
        return (
            f"personal-data scan: {len(self.needles)} values, {self.scanned_outputs} outputs "
            f"({self.scanned_chars / 1e6:.1f} MB) in {self.scan_seconds:.1f} s, "
            f"{len(self.findings)} finding(s)"
        )

    def discard(self, findings: Iterable[Finding]) -> None:
        """Forget findings a test provoked on purpose (the scan's own test)."""
        drop = set(findings)
        self.findings = [f for f in self.findings if f not in drop]


def _words(text: str) -> list[str]:
    return [w for w in (t.strip(".-+") for t in _TOKEN.findall(text)) if w]


SCAN = PrivacyScan()


# -------------------------------------------------------------------------------------------
# Installing the hooks (pytest_configure) and removing them (pytest_unconfigure)


def install() -> Callable[[], None]:
    """Wrap the log dispatch, the API app and the Profielservice simulator; returns undo."""
    from nmc.api.app import NmcApi
    from nmc.console.app import ConsoleApp
    from nmc.tracing import privacy as span_privacy
    from nmc_dev.sim.profielservice import ProfielSim

    original_call_handlers = logging.Logger.callHandlers
    original_app_call = NmcApi.__call__
    original_console_call = ConsoleApp.__call__
    original_seed = ProfielSim.seed
    original_exporter_init = span_privacy.PrivateSpanExporter.__init__
    nmc_logger = logging.getLogger("nmc")
    original_level = nmc_logger.level

    def call_handlers(self: logging.Logger, record: logging.LogRecord) -> None:
        SCAN.log_record(record)
        original_call_handlers(self, record)

    async def app_call(self: NmcApi, scope, receive, send) -> None:
        if scope["type"] != "http":
            await original_app_call(self, scope, receive, send)
            return
        path = scope["path"]
        SCAN.register_query(scope.get("query_string", b""))
        body = bytearray()
        status = 0
        response_body = bytearray()

        async def observed_receive():
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    SCAN.register_body(path, bytes(body))
            return message

        async def observed_send(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = b"\n".join(k + b": " + v for k, v in message.get("headers", ()))
                SCAN.output(_where("headers", scope, status), headers.decode("latin-1"))
            elif message["type"] == "http.response.body" and (
                status >= 400 or path in OBSERVED_PATHS or path.endswith(OBSERVED_SUFFIXES)
            ):
                response_body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    text = response_body.decode("utf-8", "replace")
                    SCAN.output(_where("body", scope, status), readable(text))
            await send(message)

        await original_app_call(self, scope, observed_receive, observed_send)

    async def console_call(self: ConsoleApp, scope, receive, send) -> None:
        if scope["type"] != "http":
            await original_console_call(self, scope, receive, send)
            return
        status = 0
        response_body = bytearray()

        async def observed_send(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = b"\n".join(k + b": " + v for k, v in message.get("headers", ()))
                SCAN.output(_where("headers", scope, status), headers.decode("latin-1"))
            elif message["type"] == "http.response.body":
                response_body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    text = response_body.decode("utf-8", "replace")
                    SCAN.output(_where("console page", scope, status), text)
            await send(message)

        await original_console_call(self, scope, receive, observed_send)

    def seed(self: ProfielSim, parties):
        SCAN.register_parties(parties)
        return original_seed(self, parties)

    class ScannedExporter:
        """Between the privacy filter and the exporter: scans what the filter let through."""

        def __init__(self, inner) -> None:
            self.inner = inner

        def export(self, spans):
            for span in spans:
                for where, text in span_privacy.attribute_texts(span).items():
                    SCAN.output(f"the span {span.name!r}: {where}", text)
            return self.inner.export(spans)

        def shutdown(self) -> None:
            self.inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return self.inner.force_flush(timeout_millis)

    def exporter_init(self: span_privacy.PrivateSpanExporter, inner) -> None:
        original_exporter_init(self, ScannedExporter(inner))

    logging.Logger.callHandlers = call_handlers
    NmcApi.__call__ = app_call
    ConsoleApp.__call__ = console_call
    ProfielSim.seed = seed
    span_privacy.PrivateSpanExporter.__init__ = exporter_init
    # Production logs at INFO; scan DEBUG too, so a new debug line is covered as well.
    nmc_logger.setLevel(logging.DEBUG)

    def undo() -> None:
        logging.Logger.callHandlers = original_call_handlers
        NmcApi.__call__ = original_app_call
        ConsoleApp.__call__ = original_console_call
        ProfielSim.seed = original_seed
        span_privacy.PrivateSpanExporter.__init__ = original_exporter_init
        nmc_logger.setLevel(original_level)

    return undo


def readable(text: str) -> str:
    """The text, and when it is a compact JWS (a delivery proof) its header and payload
    decoded: base64url hides a value from a plain substring search."""
    parts = text.strip().split(".")
    if len(parts) != 3 or not all(re.fullmatch(r"[A-Za-z0-9_-]+", part) for part in parts):
        return text
    decoded = []
    for part in parts[:2]:
        try:
            decoded.append(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode())
        except (ValueError, UnicodeDecodeError):
            return text
    return "\n".join([text, *decoded])


def _where(part: str, scope: Mapping[str, Any], status: int) -> str:
    # The route template, never the raw path (a test may put anything in a path).
    route = getattr(scope.get("route"), "path", None) or "(geen route)"
    return f"the response {part} of {scope['method']} {route} ({status})"


def scan_database(url: str) -> None:
    """Before a test database is dropped: its events, task errors and nmc.metrics()."""
    import psycopg

    from nmc.observability.prometheus import database_lines

    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.Error:
        return
    with conn:
        if conn.execute("SELECT to_regclass('nmc.event') IS NOT NULL").fetchone()[0] is not True:
            return  # never migrated
        queries = {
            "the event rows": "SELECT e::text FROM nmc.event AS e",
            "the receipt history": "SELECT h::text FROM nmc.receiptgeschiedenis AS h",
            "the settlement records": "SELECT v::text FROM nmc.vaststelling AS v",
            "the tasks' last errors": "SELECT t.laatste_fout FROM nmc.taak AS t"
            " WHERE t.laatste_fout IS NOT NULL",
        }
        for where, query in queries.items():
            try:
                SCAN.output(where, "\n".join(row[0] for row in conn.execute(query)))
            except psycopg.Error:
                continue  # a test took the table apart on purpose
        try:
            rows = conn.execute("SELECT m.naam, m.labels, m.waarde FROM nmc.metrics() AS m")
            SCAN.output("the output of nmc.metrics()", "\n".join(database_lines(rows, 0.3)))
        except psycopg.Error:
            pass  # a test dropped the function on purpose
