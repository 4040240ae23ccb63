"""Database fixtures: one server, one migrated template per session, a fresh copy per test.

The server is the embedded cluster (`nmc db start`, left running for the next session)
or the one NMC_DATABASE_URL names. Copying a template with `CREATE DATABASE … TEMPLATE …`
is much faster than migrating a database for every test (procrastinate's conftest). Even
a copy costs ~0.25 s, and ~570 tests take one, so the next copy is made ahead and the used
ones are dropped in a thread of their own while the tests run (SpareDatabases).

The personal-data scan (privacy_scan.py) is installed for the whole session here: every
test's outputs are scanned when it ends, each test database before it is dropped, and the
run fails at the end when anything personal turned up.
"""

import shutil
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from nmc.admin.migrate import migrate
from nmc.cli import main
from nmc.config import Settings
from nmc.database import connection_url, with_overrides
from nmc_dev.embedded_db import EmbeddedCluster
from privacy_scan import SCAN, install, scan_database

PROJECT_ROOT = Path(__file__).resolve().parent.parent
_undo_privacy_hooks: list[Callable[[], None]] = []


def pytest_configure(config: pytest.Config) -> None:
    _undo_privacy_hooks.append(install())


def pytest_unconfigure(config: pytest.Config) -> None:
    while _undo_privacy_hooks:
        _undo_privacy_hooks.pop()()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    SCAN.begin(item.nodeid)
    try:
        return (yield)
    finally:
        SCAN.end()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    SCAN.end()
    if SCAN.findings and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    terminalreporter.write_line(SCAN.summary())
    if SCAN.findings:
        terminalreporter.section("personal data in the NMC's outputs", red=True)
        for finding in SCAN.findings:
            terminalreporter.line(str(finding))


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    out: str
    err: str


@pytest.fixture
def nmc(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `nmc ARGS…` in this process with the current environment; capture its output."""

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        exit_code = main(list(args))
        captured = capsys.readouterr()
        SCAN.output(f"the output of `nmc {args[0] if args else ''}`", captured.out + captured.err)
        return CliResult(exit_code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def admin_url() -> str:
    """Superuser URL of the test server; starts the embedded cluster when it is used."""
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    return connection_url(settings)


@pytest.fixture(scope="session")
def template_database(admin_url: str) -> Iterator[str]:
    name = f"nmc_template_{uuid.uuid4().hex[:8]}"
    _create_database(admin_url, name)
    migrate(with_overrides(admin_url, database=name), PROJECT_ROOT)
    yield name
    _drop_database(admin_url, name)


class SpareDatabases:
    """Copies of the template made one ahead, and used databases dropped, in one thread.

    One thread does both in the order they were asked, so at most one copy waits unused and
    a drop never races the copy of the same template. A test takes the spare (waiting for it
    when its copy is still under way) and the next copy starts at once.
    """

    def __init__(self, admin_url: str, template: str) -> None:
        self._admin_url = admin_url
        self._template = template
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spare-db")
        self._spare: Future[str] = self._thread.submit(self._copy)
        self._drops: list[Future[None]] = []

    def _copy(self) -> str:
        name = f"nmc_test_{uuid.uuid4().hex[:12]}"
        _create_database(self._admin_url, name, template=self._template)
        return name

    def take(self) -> str:
        name = self._spare.result()
        self._spare = self._thread.submit(self._copy)
        return name

    def drop(self, name: str) -> None:
        self._drops.append(self._thread.submit(_drop_database, self._admin_url, name))

    def close(self) -> None:
        """Drops the spare too, and raises the first drop that failed."""
        self.drop(self._spare.result())
        self._thread.shutdown(wait=True)
        for dropped in self._drops:
            dropped.result()


@pytest.fixture(scope="session")
def spare_databases(admin_url: str, template_database: str) -> Iterator[SpareDatabases]:
    spares = SpareDatabases(admin_url, template_database)
    yield spares
    spares.close()


@pytest.fixture
def create_database(admin_url: str) -> Iterator[Callable[..., str]]:
    """Create fresh databases (copies of `template`) for this test; dropped afterwards."""
    created: list[str] = []

    def create(template: str = "template0") -> str:
        name = f"nmc_test_{uuid.uuid4().hex[:12]}"
        _create_database(admin_url, name, template=template)
        created.append(name)
        return with_overrides(admin_url, database=name)

    yield create
    for name in created:
        scan_database(with_overrides(admin_url, database=name))
        _drop_database(admin_url, name)


@pytest.fixture
def db_url(admin_url: str, spare_databases: SpareDatabases) -> Iterator[str]:
    """A fresh database, migrated with the project's SQL: the spare copy of the template."""
    name = spare_databases.take()
    url = with_overrides(admin_url, database=name)
    yield url
    scan_database(url)
    spare_databases.drop(name)


@pytest.fixture
def empty_db_url(create_database: Callable[..., str]) -> str:
    """A fresh database that was never migrated."""
    return create_database()


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(db_url, autocommit=True) as connection:
        yield connection


@pytest.fixture(scope="session")
def project_root() -> Path:
    return PROJECT_ROOT


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A copy of the project's SQL tree that a test may change."""
    for directory in ("sql", "schema", "functions", "triggers"):
        shutil.copytree(PROJECT_ROOT / directory, tmp_path / directory)
    return tmp_path


@pytest.fixture
def make_root(tmp_path: Path) -> Callable[..., Path]:
    """Build a tiny project root: the real bootstrap, given schema files and modules."""

    def build(schema: dict[str, str], modules: dict[str, str], grants: str = "") -> Path:
        root = tmp_path / f"root_{uuid.uuid4().hex[:6]}"
        (root / "sql").mkdir(parents=True)
        shutil.copy(PROJECT_ROOT / "sql" / "bootstrap.sql", root / "sql" / "bootstrap.sql")
        (root / "schema").mkdir()
        for name, text in schema.items():
            (root / "schema" / name).write_text(text)
        for module_path, text in modules.items():
            (root / module_path).parent.mkdir(parents=True, exist_ok=True)
            (root / module_path).write_text(text)
        (root / "sql" / "modules.txt").write_text("".join(f"{path}\n" for path in modules))
        (root / "sql" / "grants.sql").write_text(grants)
        return root

    return build


def _create_database(admin_url: str, name: str, template: str | None = None) -> None:
    query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        query += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(query)


def _drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


# --------------------------------------------------------------------------------------------
# NotifyNL for the admin's template reads (`nmc admin dv apply`, `nmc admin templates …`)


@dataclass(frozen=True)
class NotifyEnv:
    url: str
    api_key: str
    service_id: str


@pytest.fixture(scope="session")
def _notifynl_for_admin() -> Iterator[NotifyEnv]:
    from nmc_dev.sim.notifynl import NotifySim, SimConfig
    from nmc_dev.sim.server import start_in_thread

    key = f"nmc_admin_test-{uuid.uuid4()}-{uuid.uuid4()}"
    server = start_in_thread(NotifySim(SimConfig(api_keys=[key]), seed=3).app)
    yield NotifyEnv(server.url, key, key[-73:-37])
    server.stop()


@pytest.fixture
def notify_env(_notifynl_for_admin: NotifyEnv, monkeypatch: pytest.MonkeyPatch) -> NotifyEnv:
    """A NotifyNL simulator (emptied) the admin's template reads go to: NMC_NOTIFYNL_URL and
    the one key NMC_NOTIFYNL_API_KEY (any template id is an e-mail template without
    placeholders until a test edits it through /_sim/templates)."""
    import httpx

    httpx.post(f"{_notifynl_for_admin.url}/_sim/reset").raise_for_status()
    httpx.post(
        f"{_notifynl_for_admin.url}/_sim/config",
        json={"api_keys": [_notifynl_for_admin.api_key], "templates": {}},
    ).raise_for_status()
    monkeypatch.setenv("NMC_NOTIFYNL_URL", _notifynl_for_admin.url)
    monkeypatch.setenv("NMC_NOTIFYNL_API_KEY", _notifynl_for_admin.api_key)
    monkeypatch.delenv("NMC_NOTIFYNL_KEYS_FILE", raising=False)
    return _notifynl_for_admin
