"""The alert rules and the dashboard (deploy/prometheus, deploy/k8s, deploy/grafana).

* `promtool test rules` passes on the synthetic series of deploy/prometheus/nmc-alerts.test.yaml
  (Debian's `prometheus` package ships promtool; .ci/install installs it);
* the PrometheusRule in deploy/k8s holds exactly the rules file's groups, and every rule has
  a severity, a summary and a runbook line;
* every PromQL expression of the dashboard parses (promtool checks it as a recording rule);
* every metric a rule, a panel or a promtool test series uses is one the NMC exports, with
  the labels it uses: held against a real scrape of the API's /metrics and a worker's
  /metrics on a database where every family has a row.
"""

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
import yaml
from apitest import BASE, OIN_A, TEMPLATE_ID, auth, centraal
from feedtest import intake, transition
from starlette.testclient import TestClient

from nmc.database import with_overrides
from nmc.worker.config import KINDS
from nmc.worker.db import Database
from nmc.worker.metrics import WorkerMetrics
from nmc.worker.ops_http import OpsListener

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "nmc-alerts.yaml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "nmc-alerts.test.yaml"
PROMETHEUS_RULE = ROOT / "deploy" / "k8s" / "base" / "prometheusrule.yaml"
DASHBOARD = ROOT / "deploy" / "grafana" / "nmc-dashboard.json"
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")
# Labels Prometheus adds to every scraped series itself (the promtool series carry one).
TARGET_LABELS = {"instance", "job"}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail(
            "promtool is missing: `bash .ci/install` installs the Debian package prometheus "
            "(apt-get install prometheus), which ships it"
        )
    return found


def rules() -> dict:
    return yaml.safe_load(RULES.read_text(encoding="utf-8"))


def rule_expressions() -> list[str]:
    return [rule["expr"] for group in rules()["groups"] for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    return [
        grafana_to_promql(target["expr"]) for panel in panels for target in panel.get("targets", [])
    ]


def grafana_to_promql(expr: str) -> str:
    """A panel's query as Prometheus receives it: Grafana's variables filled in."""
    return expr.replace("$__rate_interval", "5m").replace('=~"$dv"', '=~".*"')


# --------------------------------------------------------------------------------------------
# Reading metric names and labels from PromQL (enough for the expressions we write)

_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
             "unless", "offset"}  # fmt: skip
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_SELECTOR = re.compile(r"(?<![\w.:$])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?")
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"')


def selectors(expr: str) -> tuple[list[tuple[str, set[str]]], set[str]]:
    """The series selectors of an expression (metric name, label names it matches on) and
    the label names its by/without/on clauses name."""
    grouping: set[str] = set()
    for _, names in _GROUPING.findall(expr):
        grouping |= {name.strip() for name in names.split(",") if name.strip()}
    text = _GROUPING.sub(" ", expr)
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    found = []
    for match in _SELECTOR.finditer(text):
        name, braces = match.group(1), match.group(2)
        rest = text[match.end() :].lstrip()
        if name in _KEYWORDS or (braces is None and rest.startswith("(")):
            continue  # a keyword, a function or an aggregation
        found.append((name, set(_MATCHER.findall(braces or ""))))
    return found, grouping


def test_the_reader_finds_names_labels_and_grouping():
    found, grouping = selectors(
        'sum(max by (naam) (increase(nmc_teller_totaal{naam=~"a|b"}[30m]))) > 20'
        " and max(x_y offset 1h) - histogram_quantile(0.9, sum by (le) (rate(h_bucket[5m])))"
    )
    assert found == [("nmc_teller_totaal", {"naam"}), ("x_y", set()), ("h_bucket", set())]
    assert grouping == {"naam", "le"}


# --------------------------------------------------------------------------------------------
# What the NMC exports: a real scrape of each process


def families(text: str) -> dict[str, set[str]]:
    """Family name -> the label names its samples carry (histograms: also their suffixes)."""
    exported: dict[str, set[str]] = {}
    kinds = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, flags=re.MULTILINE))
    for name, kind in kinds.items():
        exported.setdefault(name, set())
        if kind == "histogram":
            for suffix in HISTOGRAM_SUFFIXES:
                exported.setdefault(name + suffix, {"le"} if suffix == "_bucket" else set())
    for name, labels in re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ", text, re.M):
        keys = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', labels or ""))
        exported.setdefault(name, set()).update(keys)
    return exported


@pytest.fixture
def every_family(client: TestClient, conn: psycopg.Connection, dvs: dict[str, int]) -> None:
    """A database where every family nmc.metrics() knows has a row."""
    dv = dvs["A"]
    conn.execute(
        "UPDATE nmc.dienstverlener SET webhook_url = 'https://dv.example/hook',"
        " beheerkanaal = 'mailto:beheer@dv.example' WHERE dv_id = %s",
        [dv],
    )
    conn.execute(
        "INSERT INTO nmc.webhookvalidatie (dv_id, url, uitkomst, gevalideerd_op)"
        " VALUES (%s, 'https://dv.example/hook', 'geldig', nmc.now())",
        [dv],
    )
    conn.execute("SELECT nmc.ensure_terugkoppelen()")
    [geannuleerd, open_] = intake(client, 2)
    client.delete(f"{BASE}/notificaties/{geannuleerd}", headers=auth(OIN_A))
    response = client.post(f"{BASE}/centraal/notificaties", json=centraal(), headers=auth())
    assert response.status_code == 202, response.text
    zonder = response.json()["notificatieId"]
    transition(conn, zonder, "in-verzending")
    transition(conn, zonder, "niet-bezorgbaar", "geen-contactgegevens")
    conn.execute(
        "INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, staat, pogingen, laatste_fout,"
        " aangemaakt_op) VALUES ('vaststellen', %s, %s, nmc.now(), 'mislukt', 5, 'fout',"
        " nmc.now())",
        [dv, zonder],
    )
    conn.execute(
        "UPDATE nmc.taak SET laatste_fout = 'notifynl-http-503' WHERE notificatie_id = %s",
        [open_],
    )
    conn.execute("SELECT nmc.count_teller('receipt_onbekende_reference', 3)")
    conn.execute(
        "INSERT INTO nmc.verzendweigering (dv_id, berichttype, soort, sinds, laatst, aantal)"
        " SELECT dv_id, code, 'sleutel', nmc.now(), nmc.now(), 2 FROM nmc.berichttype"
        " WHERE dv_id = %s LIMIT 1",
        [dv],
    )
    conn.execute(
        "INSERT INTO nmc.onverwerkbaar (dv_id, berichttype, dag, aantal)"
        " SELECT dv_id, code, current_date, 1 FROM nmc.berichttype WHERE dv_id = %s LIMIT 1",
        [dv],
    )
    conn.execute("SELECT nmc.advance_clock('8 days')")
    conn.execute("SELECT nmc.take_budget('standaard', 'verzenden', 1)")
    conn.execute(
        "SELECT nmc.record_template('standaard', %s, 'verdwenen', NULL, NULL, NULL, NULL)",
        [TEMPLATE_ID],
    )


@pytest.fixture
def api_scrape(client: TestClient, every_family: None) -> dict[str, set[str]]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return families(response.text)


@pytest.fixture
async def worker_scrape(api_env, every_family: None) -> dict[str, set[str]]:
    """The worker's /metrics as `nmc worker --metrics-port` serves it, its own series filled
    the way a running worker fills them."""
    metrics = WorkerMetrics(KINDS)
    metrics.task_started("verzenden")
    metrics.task_finished("verzenden", "verzonden")
    metrics.round("verzenden", 0.01)
    metrics.round_failed("receipt")
    metrics.call("notifynl", "2xx", 0.05)
    db = await Database.open(with_overrides(api_env.db_url, user="nmc_worker"), 2)
    listener = OpsListener(db, metrics, 0.3)
    try:
        await listener.start("127.0.0.1", 0)
        host, port = listener.address
        async with httpx.AsyncClient() as http:
            response = await http.get(f"http://{host}:{port}/metrics")
    finally:
        await listener.close()
        await db.close()
    assert response.status_code == 200
    return families(response.text)


@pytest.fixture
def exported(api_scrape, worker_scrape) -> dict[str, set[str]]:
    merged: dict[str, set[str]] = {}
    for scrape in (api_scrape, worker_scrape):
        for name, labels in scrape.items():
            merged.setdefault(name, set()).update(labels)
    return merged


def uses() -> Iterator[tuple[str, str, set[str], set[str]]]:
    """(where, metric, labels matched, labels grouped by) of every rule, panel and series."""
    for expr in rule_expressions():
        found, grouping = selectors(expr)
        for name, labels in found:
            yield f"rule {expr!r}", name, labels, grouping
    for expr in dashboard_expressions():
        found, grouping = selectors(expr)
        for name, labels in found:
            yield f"panel {expr!r}", name, labels, grouping
    for test in yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]:
        for series in test["input_series"]:
            [(name, labels)], _ = selectors(series["series"])
            yield f"promtool series {series['series']}", name, labels - TARGET_LABELS, set()


def test_every_metric_the_rules_and_the_dashboard_use_is_exported(exported):
    used = list(uses())
    assert len({name for _, name, _, _ in used}) >= 25
    problems = []
    for where, name, labels, _grouping in used:
        if name not in exported:
            problems.append(f"{where}: {name} is not exported")
        elif not labels <= exported[name]:
            problems.append(f"{where}: {name} has no label {sorted(labels - exported[name])}")
    # A by/on clause groups on labels of the series the expression reads.
    per_expression: dict[str, tuple[set[str], set[str]]] = {}
    for where, name, _, grouping in used:
        labels, _ = per_expression.setdefault(where, (set(), grouping))
        labels |= exported.get(name, set())
    for where, (labels, grouping) in per_expression.items():
        if not grouping <= labels | {"le"}:
            problems.append(f"{where}: groups by {sorted(grouping - labels)}, which it lacks")
    assert problems == []


def test_every_exported_family_is_on_the_dashboard_or_in_a_rule(exported):
    """The other way round: a family nobody looks at is a gap in the operators' view."""
    used = {name for _, name, _, _ in uses()}
    unseen = {
        name
        for name in exported
        if name not in used
        and not any(name + suffix in used for suffix in HISTOGRAM_SUFFIXES)
        and not name.endswith(HISTOGRAM_SUFFIXES)
    }
    # Families for the API docs and the CLI report only.
    assert unseen <= {"nmc_onbevestigd_terminaal_afgekapt"}, sorted(unseen)


# --------------------------------------------------------------------------------------------
# promtool, the PrometheusRule, the annotations


def test_promtool_tests_the_rules_on_synthetic_series():
    result = subprocess.run(
        [promtool(), "test", "rules", str(RULE_TESTS)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rules_file_is_valid_and_every_alert_is_tested():
    result = subprocess.run(
        [promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    alerts = {rule["alert"] for group in rules()["groups"] for rule in group["rules"]}
    tests = yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]
    firing = {
        case["alertname"]
        for test in tests
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    quiet = {
        case["alertname"]
        for test in tests
        for case in test["alert_rule_test"]
        if not case["exp_alerts"]
    }
    assert firing == alerts, "every alert has a case where it fires"
    assert quiet == alerts, "and one where it must not"


def test_every_alert_has_a_severity_a_summary_and_a_runbook_line():
    for group in rules()["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("info", "warning", "critical"), rule["alert"]
            assert rule["annotations"]["summary"], rule["alert"]
            runbook = rule["annotations"]["runbook"]
            assert "\n" not in runbook.strip() and len(runbook) > 40, rule["alert"]


def test_the_prometheusrule_holds_the_rules_file():
    [document] = yaml.safe_load_all(PROMETHEUS_RULE.read_text(encoding="utf-8"))
    assert (document["apiVersion"], document["kind"]) == (
        "monitoring.coreos.com/v1",
        "PrometheusRule",
    )
    assert document["spec"]["groups"] == rules()["groups"]


def test_every_dashboard_query_parses(tmp_path):
    """promtool checks each panel query as the expression of a recording rule."""
    recording = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"nmc:dashboard_{n}", "expr": expr}
                    for n, expr in enumerate(dashboard_expressions())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump(recording))
    result = subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    titles = {panel["title"] for panel in dashboard["panels"]}
    for wanted in (
        "Intake: geaccepteerde verzoeken per route",
        "Verzending per uitkomst",
        "Notificaties per status",
        "Achterstand per soort en dienstverlener",
        "Receipt-achterstand",
        "Feed-achterstand per dienstverlener",
        "Webhook: gepauzeerd / gevalideerd",
        "Budget per venster (gebruikt en plafond)",
    ):
        assert wanted in titles
