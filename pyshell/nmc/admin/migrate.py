"""`nmc migrate`: bring a database to the state the project root describes.

Everything happens in ONE transaction, serialised between concurrent migrators by a
transaction-scoped advisory lock:

1. sql/bootstrap.sql, as the connecting admin (roles, schemas, the migration table);
2. as nmc_owner, every schema/*.sql not applied yet, in lexical order. Schema files are
   append-only: one that changed after it was applied is an error, never re-run;
3. every module listed in sql/modules.txt that is new or whose checksum changed
   (functions and triggers, written as CREATE OR REPLACE);
4. sql/grants.sql, on every run.

Files are sent whole: without parameters psycopg uses the simple query protocol, which
accepts several statements at once. nmc_migratie.toegepast records each file by its path
relative to the root and the SHA-256 of its bytes.
"""

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psycopg

from nmc.config import check_root
from nmc.database import connect
from nmc.errors import NmcError
from nmc.queries import QUERIES

BOOTSTRAP = "sql/bootstrap.sql"
MODULE_LIST = "sql/modules.txt"
GRANTS = "sql/grants.sql"


@dataclass(frozen=True)
class SqlFile:
    path: str  # relative to the project root, as recorded in nmc_migratie.toegepast
    text: str
    checksum: str

    @classmethod
    def read(cls, root: Path, path: str) -> "SqlFile":
        content = (root / path).read_bytes()
        return cls(path, content.decode("utf-8"), hashlib.sha256(content).hexdigest())


@dataclass(frozen=True)
class Project:
    bootstrap: SqlFile
    schema_files: list[SqlFile]
    modules: list[SqlFile]
    grants: SqlFile

    @classmethod
    def read(cls, root: Path) -> "Project":
        check_root(root)
        for required in (MODULE_LIST, GRANTS):
            if not (root / required).is_file():
                raise NmcError(f"{root / required} is missing")
        schema_paths = sorted(path.name for path in (root / "schema").glob("*.sql"))
        return cls(
            bootstrap=SqlFile.read(root, BOOTSTRAP),
            schema_files=[SqlFile.read(root, f"schema/{name}") for name in schema_paths],
            modules=[SqlFile.read(root, path) for path in _listed_modules(root)],
            grants=SqlFile.read(root, GRANTS),
        )


@dataclass(frozen=True)
class ModuleChange:
    file: SqlFile
    reason: Literal["new", "changed"]


@dataclass
class Plan:
    """What a run would apply, and which applied schema files were edited since."""

    pending_schema: list[SqlFile] = field(default_factory=list)
    drifted_schema: list[SqlFile] = field(default_factory=list)
    modules: list[ModuleChange] = field(default_factory=list)

    @classmethod
    def make(cls, project: Project, applied: dict[str, str]) -> "Plan":
        """Compare the project with `applied`: recorded checksum per file path."""
        plan = cls()
        for schema_file in project.schema_files:
            if schema_file.path not in applied:
                plan.pending_schema.append(schema_file)
            elif applied[schema_file.path] != schema_file.checksum:
                plan.drifted_schema.append(schema_file)
        for module in project.modules:
            if module.path not in applied:
                plan.modules.append(ModuleChange(module, "new"))
            elif applied[module.path] != module.checksum:
                plan.modules.append(ModuleChange(module, "changed"))
        return plan

    @property
    def up_to_date(self) -> bool:
        return not (self.pending_schema or self.drifted_schema or self.modules)

    def summary(self) -> str:
        """E.g. "2 schema files, 1 module": what a run applies (or would apply)."""
        schema_files = _count(len(self.pending_schema), "schema file")
        return f"{schema_files}, {_count(len(self.modules), 'module')}"


def migrate(url: str, root: Path) -> Plan:
    """Apply what is pending in one transaction; return what was applied."""
    project = Project.read(root)
    with connect(url, "migrate") as conn, conn.transaction():
        conn.execute(QUERIES["lock_migrations"])
        _execute_file(conn, project.bootstrap)
        conn.execute(QUERIES["act_as_owner"])
        plan = Plan.make(project, _applied_files(conn))
        if plan.drifted_schema:
            raise NmcError(_drift_message(plan.drifted_schema))
        for schema_file in plan.pending_schema:
            _execute_file(conn, schema_file)
            conn.execute(
                QUERIES["record_schema_file"],
                {"bestand": schema_file.path, "checksum": schema_file.checksum},
            )
        for change in plan.modules:
            _execute_file(conn, change.file)
            conn.execute(
                QUERIES["record_module"],
                {"bestand": change.file.path, "checksum": change.file.checksum},
            )
        _execute_file(conn, project.grants)
    return plan


def check(url: str, root: Path) -> Plan:
    """What `migrate` would do, without changing anything."""
    project = Project.read(root)
    with connect(url) as conn:
        conn.read_only = True
        with conn.transaction():
            table_exists = conn.execute(QUERIES["migration_table_exists"]).fetchone()
            applied = _applied_files(conn) if table_exists and table_exists[0] else {}
    return Plan.make(project, applied)


def describe_database_error(error: psycopg.Error, sql_file: SqlFile | None = None) -> str:
    """SQLSTATE, message, and where: the file and line, DETAIL, HINT and CONTEXT."""
    diag = error.diag
    where = ""
    if sql_file is not None:
        where = sql_file.path
        if diag.statement_position and diag.statement_position.isdigit():
            offset = int(diag.statement_position) - 1
            where += f", line {sql_file.text.count(chr(10), 0, offset) + 1}"
        where += ": "
    lines = [f"{where}ERROR {error.sqlstate or '?'}: {diag.message_primary or error}"]
    lines += [
        f"  {label}: {value}"
        for label, value in (
            ("DETAIL", diag.message_detail),
            ("HINT", diag.message_hint),
            ("CONTEXT", diag.context),
        )
        if value
    ]
    return "\n".join(lines)


def _listed_modules(root: Path) -> list[str]:
    """The module paths of sql/modules.txt in order; `#` starts a comment."""
    paths: list[str] = []
    lines = (root / MODULE_LIST).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        path = line.split("#", 1)[0].strip()
        if not path:
            continue
        if not (root / path).is_file():
            raise NmcError(f"{MODULE_LIST} line {number}: {path} does not exist")
        if path in paths:
            raise NmcError(f"{MODULE_LIST} line {number}: {path} is listed twice")
        paths.append(path)
    return paths


def _applied_files(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute(QUERIES["applied_files"]).fetchall())


def _execute_file(conn: psycopg.Connection, sql_file: SqlFile) -> None:
    try:
        conn.execute(sql_file.text)
    except psycopg.Error as error:
        raise NmcError(describe_database_error(error, sql_file)) from error


def _drift_message(drifted: Iterable[SqlFile]) -> str:
    names = ", ".join(schema_file.path for schema_file in drifted)
    return (
        f"applied schema files were edited: {names}. Schema files are append-only: "
        "restore them and put the change in a new schema file"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
