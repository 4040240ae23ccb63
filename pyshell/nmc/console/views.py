"""The console's pages and actions.

Every page needs an operator (nmc.console.auth): without a token the browser is sent to the
login page, a token without a console role gets 403. The reader role sees every view and no
action; the operator role also sees the action links, each of which opens a confirmation
page: what will happen, a required explanation (no personal data), the CSRF token and one
button. The POST runs the action's SQL function (audited there) and redirects (303) to where
its result shows. A refusal of the SQL (a task no longer mislukt, a pair not allowed) is shown
on the confirmation page by its SQLSTATE, never by the database's message text.
"""

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode

import psycopg
from jinja2 import Environment
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from nmc import sql_calls, sqlstates
from nmc.auth.errors import JwksUnavailable, Unauthenticated
from nmc.console.auth import (
    COOKIE,
    Forbidden,
    Operator,
    OperatorVerifier,
    Verified,
    bearer_of,
    csrf_ok,
    new_session_id,
    same_origin,
    session_hash,
)
from nmc.console.settings import ConsoleSettings

MAX_FORM_BYTES = 16 * 1024
LEEG = "\u2013"  # an en dash: no value
MAX_TOELICHTING = 500

NAV = (
    ("/statussen", "Statussen"),
    ("/achterstand", "Achterstand"),
    ("/mislukt", "Mislukt"),
    ("/webhooks", "Webhooks"),
    ("/onbevestigd", "Onbevestigd"),
    ("/budget", "Budget"),
    ("/onderhoud", "Onderhoud"),
    ("/beheeracties", "Beheeracties"),
)
OPEN_STATUSES = ("aangenomen", "in-verzending", "verzonden", "bezorgd")
TERMINAL_STATUSES = (
    "definitief-bezorgd", "niet-bezorgbaar", "technisch-mislukt", "bezorgstatus-onbekend",
    "verlopen", "geannuleerd",
)  # fmt: skip
TAAK_SOORTEN = (
    "verzenden", "receipt", "reconciliëren", "vaststellen", "terugkoppelen", "ongeldig-melden",
    "wissen", "controle", "onderhoud",
)  # fmt: skip
UREN = (6, 12, 24, 48)
MINUTEN = (10, 30, 60, 180)
# What each kind of NotifyNL refusal of our configuration asks of the operator.
WEIGERINGEN = {
    "template": "template niet gevonden, verwijderd of ongeschikt: controleer de template-id "
    "van het berichttype bij NotifyNL",
    "sleutel": "team-only-sleutel of service in proefmodus: een live sleutel van een live "
    "service nodig",
    "dienst": "de NotifyNL-service mag geen e-mail versturen",
    "verzoek": "NotifyNL weigert ons verzoek (ValidationError op een ander veld dan het adres)",
    "toegang": "401/403: de sleutel of de klok",
    "onbekend": "een onbekende 400 van NotifyNL",
}

# What a done action says on the page it leads to (fixed texts: nothing from the request).
GEDAAN = {
    "heropend": "De taak is heropend: due nu, tellers op nul. Een worker pakt haar op.",
    "geforceerd": "De overgang is geforceerd en vastgelegd in de beheeracties.",
    "hervat": "De webhook is hervat vanaf zijn leverpositie.",
}
LOGIN_REDENEN = {
    "verlopen": "Uw sessie is verlopen of ongeldig: meld u opnieuw aan.",
    "afgemeld": "U bent afgemeld.",
}
REFUSALS = {
    sqlstates.REOPEN_NOT_FAILED: (
        "Alleen een mislukte taak kan heropend worden; deze is het niet (meer)."
    ),
    sqlstates.TRANSITION_NOT_ALLOWED: "Deze overgang is niet toegestaan vanuit de huidige status.",
    sqlstates.FORCE_NOT_ALLOWED: (
        "Bezorgd en definitief-bezorgd volgen alleen uit een ontvangstbevestiging van NotifyNL "
        "en de vaststelling; forceren kan niet."
    ),
    sqlstates.REASON_MISMATCH: "Deze reden past niet bij de doelstatus.",
    sqlstates.NOT_FOUND: "Niet gevonden, of de dienstverlener heeft geen webhook.",
    sqlstates.CHECK_VIOLATION: "De toelichting is leeg of te lang.",
    sqlstates.INSUFFICIENT_PRIVILEGE: (
        "Uw sessie is beëindigd of draagt de beheerdersrol niet: meld u opnieuw aan."
    ),
}


@dataclass
class Console:
    settings: ConsoleSettings
    verifier: OperatorVerifier
    pool: AsyncConnectionPool
    templates: Environment


def console_of(request: Request) -> Console:
    return request.app.state.console


Handler = Callable[[Request, Operator], Awaitable[Response]]


# --------------------------------------------------------------------------------------------
# Authentication, CSRF and rendering


class _LoginNeeded(Exception):
    def __init__(self, reden: str | None = None):
        self.reden = reden


async def authenticate(request: Request) -> Operator:
    console = console_of(request)
    header = request.headers.get("authorization")
    if header:
        # The platform's proxy: a refusal is the proxy's business, not a login page's. The
        # token is verified on every request and keys a session of its own (its SHA-256).
        token = bearer_of(header) or ""
        verified = await console.verifier.verify(token)
        return await open_session(request, session_hash(token), verified, via_cookie=False)
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        raise _LoginNeeded()
    sessie = session_hash(session_id)
    found = await rows(request, "console_sessie", {"sessie": sessie})
    if not found:  # unknown, expired or ended by a logout
        raise _LoginNeeded("verlopen")
    return Operator(
        subject=found[0]["subject"],
        may_act=found[0]["mag_handelen"],
        csrf=found[0]["csrf"],
        sessie=sessie,
        via_cookie=True,
    )


async def open_session(
    request: Request, sessie: bytes, verified: Verified, *, via_cookie: bool
) -> Operator:
    """The session of a verified token, opened (or prolonged) in the database."""
    try:
        [row] = await rows(
            request,
            "console_open_sessie",
            {
                "sessie": sessie,
                "subject": verified.subject,
                "mag_handelen": verified.may_act,
                "duur": timedelta(seconds=verified.seconds_left()),
            },
        )
    except psycopg.errors.InsufficientPrivilege:
        raise Unauthenticated("sessie beëindigd") from None
    except psycopg.errors.InvalidParameterValue:
        raise Unauthenticated("token verlopen") from None
    return Operator(
        subject=verified.subject,
        may_act=verified.may_act,
        csrf=row["csrf"],
        sessie=sessie,
        via_cookie=via_cookie,
    )


def page(*, act: bool = False) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """A page for operators (`act`: the operator role only). POSTs are checked for their
    origin and CSRF token before the handler runs; the form is in request.state.form."""

    def wrap(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                operator = await authenticate(request)
            except _LoginNeeded as needed:
                target = "/login" + (f"?reden={needed.reden}" if needed.reden else "")
                response = RedirectResponse(target, status_code=303)
                if needed.reden:
                    response.delete_cookie(COOKIE, path="/")
                return response
            except Unauthenticated as error:
                return error_page(request, None, 401, f"Niet aangemeld: {error.reason}.")
            except Forbidden:
                return error_page(
                    request, None, 403, "Uw token draagt geen rol voor de beheerconsole."
                )
            except JwksUnavailable:
                return error_page(request, None, 503, "De sleutels van de IAM zijn niet te laden.")
            except (psycopg.OperationalError, PoolTimeout):  # the sessions are in the database
                return error_page(request, None, 503, "De database is niet bereikbaar.")
            if act and not operator.may_act:
                return error_page(
                    request, operator, 403, "Alleen de beheerdersrol mag deze actie uitvoeren."
                )
            if request.method == "POST":
                refusal = await check_post(request, operator)
                if refusal is not None:
                    return refusal
            try:
                return await handler(request, operator)
            except (psycopg.OperationalError, PoolTimeout):
                return error_page(request, operator, 503, "De database is niet bereikbaar.")

        endpoint.__name__ = handler.__name__
        return endpoint

    return wrap


async def check_post(request: Request, operator: Operator) -> Response | None:
    if not same_origin(request.headers, console_of(request).settings.public_origin):
        return error_page(request, operator, 403, "Dit formulier kwam niet van de console zelf.")
    form = await read_form(request)
    if form is None:
        return error_page(request, operator, 400, "Het formulier is onleesbaar of te groot.")
    if not csrf_ok(operator, form.get("csrf")):
        return error_page(
            request,
            operator,
            403,
            "Het CSRF-token ontbreekt of klopt niet: laad de pagina opnieuw.",
        )
    request.state.form = form
    return None


async def read_form(request: Request) -> dict[str, str] | None:
    """An urlencoded form of at most MAX_FORM_BYTES, first value per field."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    try:
        fields = parse_qs(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=20, strict_parsing=False
        )
    except (UnicodeDecodeError, ValueError):
        return None
    return {name: values[0] for name, values in fields.items()}


def render(
    request: Request,
    operator: Operator | None,
    template: str,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    console = console_of(request)
    html = console.templates.get_template(template).render(
        operator=operator,
        csrf=operator.csrf if operator else None,
        nav=NAV,
        current=request.url.path,
        **context,
    )
    return HTMLResponse(html, status_code=status)


def error_page(request: Request, operator: Operator | None, status: int, message: str) -> Response:
    return render(request, operator, "fout.html", status, titel=f"Fout {status}", melding=message)


async def rows(request: Request, name: str, params: dict[str, Any] | None = None) -> list[dict]:
    """Every row of the console's query `name`, as a dict by column name: every read and
    action of the console goes through here, on the one calling convention (nmc.sql_calls)."""
    return await sql_calls.fetch_all(
        console_of(request).pool, name, params or sql_calls.NO_PARAMS, row_type=dict
    )


async def nmc_now(request: Request) -> datetime:
    [row] = await rows(request, "console_now")
    return row["now"]


def format_time(value: datetime | None) -> str:
    if value is None:
        return LEEG
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return LEEG
    seconds = max(int(seconds), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days} d {hours} u"
    if hours:
        return f"{hours} u {minutes} min"
    if minutes:
        return f"{minutes} min {seconds} s"
    return f"{seconds} s"


def choice(request: Request, name: str, allowed: tuple[int, ...], default: int) -> int:
    text = request.query_params.get(name, "")
    return int(text) if text.isdigit() and int(text) in allowed else default


def gedaan(request: Request) -> str | None:
    return GEDAAN.get(request.query_params.get("gedaan", ""))


# --------------------------------------------------------------------------------------------
# Login


async def login(request: Request) -> Response:
    console = console_of(request)
    if request.method == "GET":
        reden = LOGIN_REDENEN.get(request.query_params.get("reden", ""))
        return render(request, None, "login.html", melding=reden)
    if not same_origin(request.headers, console.settings.public_origin):
        return render(request, None, "login.html", 403, melding="Dit formulier kwam niet van hier.")
    form = await read_form(request) or {}
    token = (form.get("token") or "").strip()
    session_id = new_session_id()
    try:
        verified = await console.verifier.verify(token)
        await open_session(request, session_hash(session_id), verified, via_cookie=True)
    except Unauthenticated as error:
        return render(request, None, "login.html", 401, melding=f"Geweigerd: {error.reason}.")
    except Forbidden:
        return render(
            request, None, "login.html", 403,
            melding="Geweigerd: het token draagt geen rol voor de beheerconsole.",
        )  # fmt: skip
    except JwksUnavailable:
        return render(request, None, "login.html", 503, melding="De IAM is niet bereikbaar.")
    except (psycopg.OperationalError, PoolTimeout):
        return render(request, None, "login.html", 503, melding="De database is niet bereikbaar.")
    # The cookie holds the session id only; the session ends in the database (its expiry,
    # or a logout), the cookie's max-age only tidies the browser.
    response = RedirectResponse("/statussen", status_code=303)
    response.set_cookie(
        COOKIE,
        session_id,
        max_age=max(verified.seconds_left(), 1),
        path="/",
        secure=console.settings.cookie_secure,
        httponly=True,
        samesite="strict",
    )
    return response


@page()
async def logout(request: Request, operator: Operator) -> Response:
    if operator.via_cookie:  # the proxy's session is the proxy's to end
        await rows(request, "console_sluit_sessie", {"sessie": operator.sessie})
    response = RedirectResponse("/login?reden=afgemeld", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


@page()
async def home(request: Request, operator: Operator) -> Response:
    return RedirectResponse("/statussen", status_code=303)


# --------------------------------------------------------------------------------------------
# The views


@page()
async def statussen(request: Request, operator: Operator) -> Response:
    uren = choice(request, "uren", UREN, 24)
    nu = await nmc_now(request)
    found = await rows(request, "console_statussen", {"uren": uren})
    laatste = nu.replace(minute=0, second=0, microsecond=0)
    hours = [laatste - timedelta(hours=uren - 1 - i) for i in range(uren)]
    per_dv: dict[int, dict[str, Any]] = {}
    for row in found:
        dv = per_dv.setdefault(
            row["dv_id"], {"dv_id": row["dv_id"], "naam": row["naam"], "nu": {}, "uur": {}}
        )
        if row["uur"] is None:
            dv["nu"][row["status"]] = row["aantal"]
        else:
            dv["uur"].setdefault(row["status"], {})[row["uur"]] = row["aantal"]
    dvs = []
    for dv in per_dv.values():
        lines = [
            {"status": status, "nu": dv["nu"][status], "uren": None, "totaal": None}
            for status in OPEN_STATUSES
            if status in dv["nu"]
        ]
        for status in TERMINAL_STATUSES:
            counts = dv["uur"].get(status)
            if counts:
                per_hour = [counts.get(hour, 0) for hour in hours]
                lines.append(
                    {"status": status, "nu": None, "uren": per_hour, "totaal": sum(per_hour)}
                )
        top = max([c for line in lines for c in (line["uren"] or [])] or [1])
        dvs.append({**dv, "regels": lines, "top": top})
    return render(
        request, operator, "statussen.html", nu=nu, uren=uren, keuzes=UREN, hours=hours, dvs=dvs
    )


@page()
async def achterstand(request: Request, operator: Operator) -> Response:
    nu = await nmc_now(request)
    found = await rows(request, "console_achterstand")
    for row in found:
        row["wacht"] = (nu - row["oudste_due"]).total_seconds() if row["oudste_due"] else None
    geweigerd = await rows(request, "console_verzendweigeringen")
    for row in geweigerd:
        row["uitleg"] = WEIGERINGEN.get(row["soort"], row["soort"])
    return render(request, operator, "achterstand.html", nu=nu, regels=found, geweigerd=geweigerd)


@page()
async def mislukt(request: Request, operator: Operator) -> Response:
    soort = request.query_params.get("soort")
    soort = soort if soort in TAAK_SOORTEN else None
    nu = await nmc_now(request)
    found = await rows(request, "console_mislukt", {"limiet": 200, "soort": soort})
    return render(
        request, operator, "mislukt.html", nu=nu, taken=found, soort=soort, soorten=TAAK_SOORTEN
    )


@page()
async def webhooks(request: Request, operator: Operator) -> Response:
    nu = await nmc_now(request)
    found = await rows(request, "console_webhooks")
    for row in found:
        if row["uitgeschakeld"]:
            row["toestand"], row["klasse"] = "uitgeschakeld (410 van de DV)", "slecht"
        elif row["gat_op"] is not None:
            row["toestand"], row["klasse"] = "gepauzeerd voor een gat", "slecht"
        elif row["gepauzeerd_tot"] is not None and row["gepauzeerd_tot"] > nu:
            row["toestand"], row["klasse"] = "gepauzeerd", "slecht"
        elif row["mislukt"]:
            row["toestand"], row["klasse"] = "faalt", "let-op"
        elif row["epoch"] is None:
            row["toestand"], row["klasse"] = "nog geen positie", "let-op"
        else:
            row["toestand"], row["klasse"] = "levert", "goed"
        # Resuming does not end a pause for a gap (only the DV setting its position does).
        row["hervatbaar"] = (
            row["klasse"] != "goed" and row["webhook_host"] is not None and row["gat_op"] is None
        )
    return render(request, operator, "webhooks.html", nu=nu, webhooks=found, gedaan=gedaan(request))


@page()
async def onbevestigd(request: Request, operator: Operator) -> Response:
    nu = await nmc_now(request)
    found = await rows(request, "console_onbevestigd")
    return render(request, operator, "onbevestigd.html", nu=nu, regels=found)


@page()
async def budget(request: Request, operator: Operator) -> Response:
    minuten = choice(request, "minuten", MINUTEN, 30)
    nu = await nmc_now(request)
    found = await rows(request, "console_budget", {"minuten": minuten})
    dagen = await rows(request, "console_budget_dag")
    services: dict[str, list[dict]] = {}
    for row in found:
        row["procent"] = round(100 * row["gebruikt"] / row["plafond"]) if row["plafond"] else 0
        services.setdefault(row["notify_service"], []).append(row)
    return render(
        request, operator, "budget.html", nu=nu, services=services, minuten=minuten,
        keuzes=MINUTEN, dagen=dagen,
    )  # fmt: skip


@page()
async def onderhoud(request: Request, operator: Operator) -> Response:
    nu = await nmc_now(request)
    [staat] = await rows(request, "console_onderhoud")
    partities = await rows(request, "console_event_partities")
    taken = await rows(request, "console_onderhoud_taken")
    return render(
        request, operator, "onderhoud.html", nu=nu, staat=staat, partities=partities, taken=taken
    )


@page()
async def beheeracties(request: Request, operator: Operator) -> Response:
    voor_text = request.query_params.get("voor", "")
    voor = int(voor_text) if voor_text.isdigit() and len(voor_text) < 19 else None
    nu = await nmc_now(request)
    found = await rows(request, "console_beheeracties", {"limiet": 100, "voor": voor})
    ouder = found[-1]["id"] if len(found) == 100 else None
    return render(request, operator, "beheeracties.html", nu=nu, acties=found, ouder=ouder)


@page()
async def taak(request: Request, operator: Operator) -> Response:
    taak_id = request.path_params["taak_id"]
    nu = await nmc_now(request)
    found = await rows(request, "console_taak", {"taak_id": taak_id})
    if not found:
        return error_page(request, operator, 404, "Deze taak bestaat niet (meer).")
    return render(request, operator, "taak.html", nu=nu, taak=found[0], gedaan=gedaan(request))


@page()
async def notificatie(request: Request, operator: Operator) -> Response:
    notificatie_id = _uuid(request.path_params["notificatie_id"])
    found = (
        await rows(request, "console_notificatie", {"notificatie_id": notificatie_id})
        if notificatie_id
        else []
    )
    if not found:
        return error_page(request, operator, 404, "Deze notificatie bestaat niet (meer).")
    nu = await nmc_now(request)
    params = {"notificatie_id": notificatie_id}
    return render(
        request, operator, "notificatie.html", nu=nu, n=found[0],
        events=await rows(request, "console_notificatie_events", params),
        taken=await rows(request, "console_notificatie_taken", params),
        gedaan=gedaan(request),
    )  # fmt: skip


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# The actions: a confirmation page (GET), then the audited SQL call (POST)


def toelichting_of(form: dict[str, str]) -> str | None:
    text = (form.get("toelichting") or "").strip()
    return text if 1 <= len(text) <= MAX_TOELICHTING else None


async def perform(
    request: Request, operator: Operator, name: str, params: dict[str, Any]
) -> str | None:
    """Run an action's SQL call; the refusal's text when the SQL refuses it."""
    try:
        await rows(request, name, params)
    except psycopg.OperationalError:
        raise
    except psycopg.Error as error:
        state = error.sqlstate or ""
        if state in REFUSALS or state.startswith("NM"):
            return f"{REFUSALS.get(state, 'Geweigerd.')} ({state})"
        raise
    return None


def confirm(
    request: Request, operator: Operator, status: int = 200, **context: Any
) -> HTMLResponse:
    return render(request, operator, "bevestig.html", status, max_toelichting=MAX_TOELICHTING,
                  **context)  # fmt: skip


async def confirmed(
    request: Request,
    operator: Operator,
    context: dict[str, Any],
    name: str,
    params: dict[str, Any],
    done: str,
) -> Response:
    """What every action does once its page is known: the confirmation page on GET; on POST a
    required explanation, the SQL call `name` with it and the operator (a refusal shows the
    page again with 409), then back to `done`."""
    if request.method == "GET":
        return confirm(request, operator, **context)
    toelichting = toelichting_of(request.state.form)
    if toelichting is None:
        return confirm(request, operator, 400, fout="Een toelichting is verplicht.", **context)
    refused = await perform(
        request, operator, name, {**params, "toelichting": toelichting, "sessie": operator.sessie}
    )
    if refused:
        return confirm(request, operator, 409, fout=refused, **context)
    return RedirectResponse(done, status_code=303)


@page(act=True)
async def heropenen(request: Request, operator: Operator) -> Response:
    taak_id = request.path_params["taak_id"]
    found = await rows(request, "console_taak", {"taak_id": taak_id})
    if not found:
        return error_page(request, operator, 404, "Deze taak bestaat niet (meer).")
    context = {
        "titel": f"Taak {taak_id} heropenen",
        "uitleg": "De taak gaat terug naar open, due nu, met haar tellers op nul; een worker "
        "pakt haar bij de volgende ronde op. De actie wordt vastgelegd in de beheeracties.",
        "feiten": _taak_feiten(found[0]),
        "actie": f"/taken/{taak_id}/heropenen",
        "knop": "Heropenen",
        "terug": f"/taken/{taak_id}",
    }
    return await confirmed(
        request, operator, context, "console_reopen_taak", {"taak_id": taak_id},
        f"/taken/{taak_id}?gedaan=heropend",
    )  # fmt: skip


def _taak_feiten(row: dict) -> list[tuple[str, Any]]:
    return [
        ("soort", row["soort"]),
        ("staat", row["staat"]),
        ("dienstverlener", f"{row['dv_id']} {row['naam'] or ''}" if row["dv_id"] else LEEG),
        ("notificatie", row["notificatie_id"] or LEEG),
        ("laatste fout", row["laatste_fout"] or LEEG),
        ("pogingen", row["pogingen"]),
    ]


@page(act=True)
async def forceren(request: Request, operator: Operator) -> Response:
    notificatie_id = _uuid(request.path_params["notificatie_id"])
    found = (
        await rows(request, "console_notificatie", {"notificatie_id": notificatie_id})
        if notificatie_id
        else []
    )
    if not found:
        return error_page(request, operator, 404, "Deze notificatie bestaat niet (meer).")
    n = found[0]
    form = request.state.form if request.method == "POST" else {}
    naar = form.get("naar") or request.query_params.get("naar", "")
    allowed = {o["naar"]: o["redenen"] for o in n["overgangen"]}
    if naar not in allowed:
        return error_page(
            request, operator, 400,
            "Die overgang is vanuit de huidige status niet toegestaan.",
        )  # fmt: skip
    context = {
        "titel": f"Overgang forceren naar {naar}",
        "uitleg": f"De notificatie gaat van {n['status']} naar {naar}, via de enige schrijver "
        "van de status (met een event in de feed van de DV). Haar open verzend-, navraag- en "
        "vaststeltaken worden gesloten. De actie wordt vastgelegd in de beheeracties.",
        "feiten": [
            ("notificatie", n["id"]),
            ("dienstverlener", f"{n['dv_id']} {n['naam']}"),
            ("status", n["status"]),
            ("versie", n["versie"]),
        ],
        "actie": f"/notificaties/{n['id']}/forceren",
        "knop": f"Forceer naar {naar}",
        "terug": f"/notificaties/{n['id']}",
        "verborgen": {"naar": naar},
        "redenen": allowed[naar],
    }
    if request.method == "GET":
        return confirm(request, operator, **context)
    reden = form.get("reden") or None
    if (reden is None) != (not allowed[naar]) or (reden and reden not in allowed[naar]):
        return confirm(request, operator, 400, fout="Kies een reden die past.", **context)
    return await confirmed(
        request, operator, context, "console_force_transition",
        {"notificatie_id": n["id"], "naar": naar, "reden": reden},
        f"/notificaties/{n['id']}?gedaan=geforceerd",
    )  # fmt: skip


@page(act=True)
async def hervatten(request: Request, operator: Operator) -> Response:
    dv_id = request.path_params["dv_id"]
    found = [w for w in await rows(request, "console_webhooks") if w["dv_id"] == dv_id]
    if not found:
        return error_page(request, operator, 404, "Deze dienstverlener heeft geen webhook.")
    w = found[0]
    context = {
        "titel": f"Webhook van dienstverlener {dv_id} hervatten",
        "uitleg": "De pauze (of de uitschakeling na een 410) eindigt nu en de teller van "
        "mislukte leveringen gaat op nul; de webhook levert verder vanaf zijn leverpositie. "
        "De actie wordt vastgelegd in de beheeracties.",
        "feiten": [
            ("dienstverlener", f"{w['dv_id']} {w['naam']}"),
            ("host", w["webhook_host"] or LEEG),
            ("mislukt", f"{w['mislukt']} van {w['max_mislukt']}"),
            ("gepauzeerd tot", format_time(w["gepauzeerd_tot"])),
            ("uitgeschakeld", "ja" if w["uitgeschakeld"] else "nee"),
            ("gepauzeerd voor een gat sinds", format_time(w["gat_op"])),
        ],
        "actie": f"/webhooks/{dv_id}/hervatten",
        "knop": "Hervatten",
        "terug": "/webhooks",
    }
    return await confirmed(
        request, operator, context, "console_resume_webhook", {"dv_id": dv_id},
        "/webhooks?" + urlencode({"gedaan": "hervat"}),
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# For the kubelet: no login, no page


async def live(request: Request) -> Response:
    return JSONResponse({"status": "up"})


async def ready(request: Request) -> Response:
    """The database answers as nmc_console (the clock function is granted to it)."""
    try:
        await nmc_now(request)
    except (psycopg.Error, PoolTimeout):
        return JSONResponse({"status": "niet-gereed", "reden": "database"}, status_code=503)
    return JSONResponse({"status": "gereed"})


def routes() -> list[Route]:
    return [
        Route("/health/live", live, methods=["GET"]),
        Route("/health/ready", ready, methods=["GET"]),
        Route("/", home, methods=["GET"]),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/statussen", statussen, methods=["GET"]),
        Route("/achterstand", achterstand, methods=["GET"]),
        Route("/mislukt", mislukt, methods=["GET"]),
        Route("/webhooks", webhooks, methods=["GET"]),
        Route("/onbevestigd", onbevestigd, methods=["GET"]),
        Route("/budget", budget, methods=["GET"]),
        Route("/onderhoud", onderhoud, methods=["GET"]),
        Route("/beheeracties", beheeracties, methods=["GET"]),
        Route("/taken/{taak_id:int}", taak, methods=["GET"]),
        Route("/taken/{taak_id:int}/heropenen", heropenen, methods=["GET", "POST"]),
        Route("/notificaties/{notificatie_id}", notificatie, methods=["GET"]),
        Route("/notificaties/{notificatie_id}/forceren", forceren, methods=["GET", "POST"]),
        Route("/webhooks/{dv_id:int}/hervatten", hervatten, methods=["GET", "POST"]),
    ]
