"""Receipts, reconciliation answers and clock moves in random order against the real SQL
(SPEC §4-§6).

Hypothesis generates a list of steps for a handful of notifications of a fresh DV: NotifyNL
receipts (every status, duplicated, reordered, late, with the attempt's own NotifyNL id or
a duplicate id, also before the send was committed), reconciliation answers (found and
final, found and not final, 404), resends, settlement and clock moves. Every step runs the
real functions as the superuser; after every step the invariants of SPEC §4 are checked:

* the version equals the number of events, whose sequences run 1..versie without gaps, and
  the last event is the row's status and reason;
* every event (van, naar) is in nmc.allowed_transitions();
* a terminal status other than bezorgstatus-onbekend absorbs: no event after it, and the
  status never changes again across steps;
* at most two attempts; a terminal notification has terminaal_op set (a live one has not).

The order property: receipts of one attempt with distinct completed_at values, all stored
before one processing run, give the same outcome in any arrival order.

One database serves all examples of a test; each example uses a new DV and first deletes
the notifications of the previous one (their tasks go with them), so claims only see the
example's own work. The NMC clock only moves forward; each example starts an hour later.
"""

import json
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import psycopg
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

TERMINAAL = frozenset(
    {
        "definitief-bezorgd",
        "niet-bezorgbaar",
        "technisch-mislukt",
        "bezorgstatus-onbekend",
        "verlopen",
        "geannuleerd",
    }
)
ABSORBEREND = TERMINAAL - {"bezorgstatus-onbekend"}
RECEIPT_STATUSSEN = (
    "delivered",
    "permanent-failure",
    "temporary-failure",
    "technical-failure",
    "sending",
    "unknown-status",
)
DEFINITIEVE_STATUSSEN = RECEIPT_STATUSSEN[:4]
KLOKSTAPPEN = ("1 minute", "10 minutes", "1 hour", "7 hours", "1 day", "3 days", "8 days")
GELDIGHEDEN = (timedelta(hours=2), timedelta(days=1), timedelta(days=3))
WERKER = "eigenschappen"

EIGENSCHAP_INSTELLINGEN = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --- the database side: a DV, notifications, and the lifecycle calls ------------------------


def nieuwe_dv(conn: psycopg.Connection) -> int:
    """A fresh DV with a random OIN; the previous example's notifications are removed.
    Commits need not reach the disk in a throwaway test database (ten times faster)."""
    conn.execute("SET synchronous_commit = off")
    conn.execute("DELETE FROM nmc.notificatie")
    conn.execute("SELECT nmc.advance_clock('1 hour')")
    document = {
        "oin": f"{secrets.randbelow(10**20):020d}",
        "naam": "Eigenschappen",
        "quotumPerMinuut": 100000,
        "berichttypen": [{"code": "bericht", "notifynlTemplateId": str(uuid.uuid4())}],
    }
    return conn.execute(
        "SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)]
    ).fetchone()[0]


def nu(conn: psycopg.Connection) -> datetime:
    return conn.execute("SELECT nmc.now()").fetchone()[0]


def aannemen(conn: psycopg.Connection, dv_id: int, geldig_tot: datetime | None) -> uuid.UUID:
    """Intake of one decentraal notification (ciphertext is opaque bytes to the SQL)."""
    notificatie_id = uuid.uuid4()
    conn.execute(
        "SELECT nmc.intake_notificatie_v3(%s, %s, 'bericht', 'decentraal', %s, 1::smallint, %s,"
        " 0::smallint, '\\x01', NULL, '\\x02', 'kek-test', %s, NULL, %s, NULL, NULL)",
        [
            notificatie_id,
            dv_id,
            secrets.token_bytes(32),
            secrets.token_bytes(32),
            geldig_tot,
            secrets.token_hex(16),
        ],
    )
    return notificatie_id


@dataclass(frozen=True)
class VerzendClaim:
    taak_id: int
    claim_epoch: int
    notificatie_id: uuid.UUID
    poging_id: uuid.UUID
    poging_nummer: int


def claim_verzenden(conn: psycopg.Connection) -> list[VerzendClaim]:
    rows = conn.execute(
        "SELECT taak_id, claim_epoch, notificatie_id, poging_id, poging_nummer"
        " FROM nmc.claim_verzenden(%s)",
        [WERKER],
    ).fetchall()
    return [VerzendClaim(*row) for row in rows]


def notifynl_id_van(conn: psycopg.Connection, poging_id: uuid.UUID) -> uuid.UUID | None:
    return conn.execute("SELECT notifynl_id FROM nmc.poging WHERE id = %s", [poging_id]).fetchone()[
        0
    ]


def verzonden_melden(conn: psycopg.Connection, claim: VerzendClaim) -> None:
    """The commit after NotifyNL's 201; a re-claim found the attempt's id by reference."""
    notifynl_id = notifynl_id_van(conn, claim.poging_id) or uuid.uuid4()
    conn.execute(
        "SELECT nmc.finish_verzenden(%s, %s, 'verzonden', %s)",
        [claim.taak_id, claim.claim_epoch, notifynl_id],
    )


def receipt_opslaan(
    conn: psycopg.Connection,
    poging_id: uuid.UUID,
    notifynl_id: uuid.UUID,
    status: str,
    completed_at: datetime,
) -> str:
    return conn.execute(
        "SELECT nmc.store_receipt(%s, %s, %s, %s, NULL)",
        [str(poging_id), notifynl_id, status, completed_at],
    ).fetchone()[0]


def receipts_verwerken(conn: psycopg.Connection) -> int:
    verwerkt = conn.execute("SELECT nmc.process_receipts(1000)").fetchone()[0]
    mislukt = conn.execute(
        "SELECT count(*) FROM nmc.taak WHERE soort = 'receipt' AND laatste_fout IS NOT NULL"
    ).fetchone()[0]
    assert mislukt == 0, "a receipt failed inside the NMC"
    return verwerkt


def pogingen_van(conn: psycopg.Connection, notificatie_id: uuid.UUID) -> list[tuple]:
    """(id, nummer, status, notifynl_id, duplicaat_ids) per attempt, by number."""
    return conn.execute(
        "SELECT id, nummer, status::text, notifynl_id, duplicaat_ids FROM nmc.poging"
        " WHERE notificatie_id = %s ORDER BY nummer",
        [notificatie_id],
    ).fetchall()


def status_van(conn: psycopg.Connection, notificatie_id: uuid.UUID) -> tuple[str, str | None]:
    return conn.execute(
        "SELECT status::text, reden::text FROM nmc.notificatie WHERE id = %s", [notificatie_id]
    ).fetchone()


# --- the invariants of SPEC §4 ----------------------------------------------------------------


def toegestane_overgangen(conn: psycopg.Connection) -> frozenset[tuple[str | None, str]]:
    rows = conn.execute("SELECT van::text, naar::text FROM nmc.allowed_transitions()")
    return frozenset(rows.fetchall())


def controleer_invarianten(
    conn: psycopg.Connection,
    dv_id: int,
    toegestaan: frozenset[tuple[str | None, str]],
    geabsorbeerd: dict[uuid.UUID, tuple[str, str | None]],
) -> None:
    """Check every notification of the DV; `geabsorbeerd` remembers absorbing end states
    across steps (and is updated here)."""
    rows = conn.execute(
        """
        SELECT n.id, n.status::text, n.reden::text, n.versie, n.terminaal_op IS NOT NULL,
            (SELECT count(*) FROM nmc.poging AS p WHERE p.notificatie_id = n.id),
            coalesce(e.sequenties, '{}'), coalesce(e.van, '{}'), coalesce(e.naar, '{}'),
            coalesce(e.redenen, '{}')
        FROM nmc.notificatie AS n
        LEFT JOIN LATERAL (
            SELECT array_agg(ev.sequence ORDER BY ev.sequence) AS sequenties,
                array_agg(ev.van::text ORDER BY ev.sequence) AS van,
                array_agg(ev.naar::text ORDER BY ev.sequence) AS naar,
                array_agg(ev.reden::text ORDER BY ev.sequence) AS redenen
            FROM nmc.event AS ev WHERE ev.notificatie_id = n.id
        ) AS e ON true
        WHERE n.dv_id = %s
        """,
        [dv_id],
    ).fetchall()
    for (
        notificatie_id,
        status,
        reden,
        versie,
        terminaal_op_gezet,
        pogingen,
        sequenties,
        van,
        naar,
        redenen,
    ) in rows:
        waar = f"notificatie {notificatie_id} ({status})"
        assert sequenties == list(range(1, versie + 1)), f"{waar}: events {sequenties}"
        assert (naar[-1], redenen[-1]) == (status, reden), f"{waar}: last event {naar[-1]}"
        for paar in zip(van, naar, strict=True):
            assert paar in toegestaan, f"{waar}: event {paar} is not an allowed pair"
        for positie, doel in enumerate(naar[:-1]):
            assert doel not in ABSORBEREND, f"{waar}: event after terminal {doel} at {positie}"
        if notificatie_id in geabsorbeerd:
            assert (status, reden) == geabsorbeerd[notificatie_id], f"{waar}: left a terminal"
        elif status in ABSORBEREND:
            geabsorbeerd[notificatie_id] = (status, reden)
        assert pogingen <= 2, f"{waar}: {pogingen} attempts"
        assert terminaal_op_gezet == (status in TERMINAAL), f"{waar}: terminaal_op"


# --- the random steps -------------------------------------------------------------------------


@dataclass
class Wereld:
    """The example's notifications and what NotifyNL knows about their attempts."""

    conn: psycopg.Connection
    dv_id: int
    notificaties: list[uuid.UUID] = field(default_factory=list)
    # NotifyNL ids per attempt (the first is the message NotifyNL accepted; more are the
    # duplicates of a resend after a lost commit).
    notifynl_ids: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)
    opgeslagen: list[tuple[uuid.UUID, uuid.UUID, str, datetime]] = field(default_factory=list)

    def notifynl_id(self, poging_id: uuid.UUID, keuze: str) -> uuid.UUID:
        ids = self.notifynl_ids.setdefault(poging_id, [])
        bekend = notifynl_id_van(self.conn, poging_id)
        if bekend is not None and bekend not in ids:
            ids.insert(0, bekend)
        if not ids or keuze == "nieuw":
            ids.append(uuid.uuid4())
            return ids[-1]
        return ids[0] if keuze == "eigen" else ids[-1]

    def verzenden(self) -> None:
        """Claim every due send task (first sends, resends, re-claims) and commit a 201."""
        for claim in claim_verzenden(self.conn):
            verzonden_melden(self.conn, claim)


# Age of completed_at in seconds before the NMC clock (negative: in the future, capped).
leeftijd = st.one_of(
    st.sampled_from([-60, 0, 1, 30, 600, 3600, 86400, 6 * 86400, 8 * 86400]),
    st.integers(-120, 9 * 86400),
)
STAPPEN = {
    "receipt": st.tuples(
        st.just("receipt"),
        st.integers(0, 2),  # notification
        st.sampled_from(["eerste", "laatste"]),  # attempt
        st.sampled_from(RECEIPT_STATUSSEN),
        leeftijd,
        st.sampled_from(["eigen", "nieuw", "dubbel"]),  # NotifyNL id
        st.booleans(),  # processed at once, or left for a later run (reordering)
    ),
    "herhaal": st.tuples(st.just("herhaal"), st.integers(0, 50)),
    "verwerk": st.tuples(st.just("verwerk")),
    "klok": st.tuples(st.just("klok"), st.sampled_from(KLOKSTAPPEN)),
    "verzend": st.tuples(st.just("verzend")),
    "navraag": st.tuples(
        st.just("navraag"),
        st.sampled_from(["definitief", "lopend", "404"]),
        st.sampled_from(DEFINITIEVE_STATUSSEN),
        leeftijd,
    ),
    "vaststellen": st.tuples(st.just("vaststellen")),
}
# Receipts weigh most; the kind is drawn first, then its arguments.
stap = st.sampled_from(["receipt"] * 4 + ["verzend"] * 2 + list(STAPPEN)).flatmap(STAPPEN.get)


def voer_uit(wereld: Wereld, stap: tuple) -> None:
    conn = wereld.conn
    soort, *args = stap
    if soort == "receipt":
        n_keuze, welke, status, leeftijd, id_keuze, direct = args
        notificatie_id = wereld.notificaties[n_keuze % len(wereld.notificaties)]
        pogingen = pogingen_van(conn, notificatie_id)
        if not pogingen:
            return
        poging_id = pogingen[0 if welke == "eerste" else -1][0]
        notifynl_id = wereld.notifynl_id(poging_id, id_keuze)
        completed_at = nu(conn) - timedelta(seconds=leeftijd)
        receipt_opslaan(conn, poging_id, notifynl_id, status, completed_at)
        wereld.opgeslagen.append((poging_id, notifynl_id, status, completed_at))
        if direct:
            receipts_verwerken(conn)
    elif soort == "herhaal" and wereld.opgeslagen:
        # NotifyNL retries a callback: the same attempt, completed_at and status.
        herhaald = wereld.opgeslagen[args[0] % len(wereld.opgeslagen)]
        assert receipt_opslaan(conn, *herhaald) == "dubbel"
    elif soort == "verwerk":
        receipts_verwerken(conn)
    elif soort == "klok":
        conn.execute("SELECT nmc.advance_clock(%s::interval)", [args[0]])
    elif soort == "verzend":
        wereld.verzenden()
    elif soort == "navraag":
        antwoord, status, leeftijd = args
        for taak_id, epoch in conn.execute(
            "SELECT taak_id, claim_epoch FROM nmc.claim_navraag_v2(%s)", [WERKER]
        ).fetchall():
            if antwoord == "definitief":
                completed_at = nu(conn) - timedelta(seconds=leeftijd)
                parameters = [taak_id, epoch, True, status, completed_at]
            elif antwoord == "lopend":
                parameters = [taak_id, epoch, True, "sending", None]
            else:
                parameters = [taak_id, epoch, False, None, None]
            conn.execute("SELECT nmc.finish_navraag(%s, %s, %s, %s, %s)", parameters)
    elif soort == "vaststellen":
        conn.execute("SELECT nmc.process_vaststellingen(1000)")


@EIGENSCHAP_INSTELLINGEN
@given(
    aantal=st.integers(1, 3),
    onafgerond=st.booleans(),
    geldigheid=st.sampled_from(GELDIGHEDEN),
    stappen=st.lists(stap, min_size=10, max_size=50),
)
def test_receipts_and_answers_in_any_order_keep_the_invariants(
    conn, aantal, onafgerond, geldigheid, stappen
):
    toegestaan = toegestane_overgangen(conn)
    wereld = Wereld(conn, nieuwe_dv(conn))
    geldig_tot = nu(conn) + geldigheid
    wereld.notificaties = [aannemen(conn, wereld.dv_id, geldig_tot) for _ in range(aantal)]
    # All sent; with `onafgerond` the last one's worker died between the 201 and its commit,
    # so receipts arrive for an attempt without a NotifyNL id.
    claims = sorted(
        claim_verzenden(conn), key=lambda c: wereld.notificaties.index(c.notificatie_id)
    )
    for claim in claims[: aantal - 1] if onafgerond else claims:
        verzonden_melden(conn, claim)
    geabsorbeerd: dict[uuid.UUID, tuple[str, str | None]] = {}
    controleer_invarianten(conn, wereld.dv_id, toegestaan, geabsorbeerd)
    for s in [*stappen, ("verwerk",)]:
        voer_uit(wereld, s)
        controleer_invarianten(conn, wereld.dv_id, toegestaan, geabsorbeerd)
    for van, naar in conn.execute(
        "SELECT DISTINCT van::text, naar::text FROM nmc.event WHERE dv_id = %s", [wereld.dv_id]
    ).fetchall():
        event(f"overgang {van} -> {naar}")


# --- the order property -----------------------------------------------------------------------


def verzonden_notificatie(conn: psycopg.Connection, dv_id: int, begin: str) -> uuid.UUID:
    """A notification whose attempt receipts will concern: `verzonden` (attempt 1 committed),
    `in-verzending` (the 201 came, the commit did not) or `herverzonden` (attempt 1 failed
    temporarily, attempt 2 committed)."""
    notificatie_id = aannemen(conn, dv_id, None)
    [claim] = claim_verzenden(conn)
    if begin == "in-verzending":
        return notificatie_id
    verzonden_melden(conn, claim)
    if begin == "herverzonden":
        [(poging_id, *_)] = pogingen_van(conn, notificatie_id)
        receipt_opslaan(
            conn,
            poging_id,
            notifynl_id_van(conn, poging_id),
            "temporary-failure",
            nu(conn) - timedelta(days=10),
        )
        receipts_verwerken(conn)
        [claim] = claim_verzenden(conn)
        verzonden_melden(conn, claim)
    return notificatie_id


def uitkomst(conn: psycopg.Connection, notificatie_id: uuid.UUID) -> tuple:
    return (
        status_van(conn, notificatie_id),
        [(nummer, status) for _, nummer, status, _, _ in pogingen_van(conn, notificatie_id)],
    )


@EIGENSCHAP_INSTELLINGEN
@given(
    begin=st.sampled_from(["verzonden", "in-verzending", "herverzonden"]),
    receipts=st.lists(
        st.tuples(
            st.sampled_from(RECEIPT_STATUSSEN),
            leeftijd,  # distinct ages: distinct completed_at values
            st.integers(0, 2),  # which NotifyNL id of the attempt (0 = its own)
        ),
        min_size=1,
        max_size=7,
        unique_by=lambda r: r[1],
    ),
    data=st.data(),
)
def test_outcome_does_not_depend_on_the_arrival_order(conn, begin, receipts, data):
    toegestaan = toegestane_overgangen(conn)
    dv_id = nieuwe_dv(conn)
    andere_volgorde = data.draw(st.permutations(receipts), label="andere volgorde")
    eerste = verzonden_notificatie(conn, dv_id, begin)
    tweede = verzonden_notificatie(conn, dv_id, begin)
    moment = nu(conn)
    for notificatie_id, volgorde in ((eerste, receipts), (tweede, andere_volgorde)):
        poging_id, _, _, eigen_id, _ = pogingen_van(conn, notificatie_id)[-1]
        # Per notification its own NotifyNL ids: index 0 is the attempt's id (a fresh one
        # when the commit never came), 1 and 2 are duplicates.
        ids = [eigen_id or uuid.uuid4(), uuid.uuid4(), uuid.uuid4()]
        for status, leeftijd, id_index in volgorde:
            completed_at = moment - timedelta(seconds=leeftijd)
            receipt_opslaan(conn, poging_id, ids[id_index], status, completed_at)
    receipts_verwerken(conn)
    assert uitkomst(conn, eerste) == uitkomst(conn, tweede)
    event(f"{begin} -> {status_van(conn, eerste)[0]}")
    controleer_invarianten(conn, dv_id, toegestaan, {})
