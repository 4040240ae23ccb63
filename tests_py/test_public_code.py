"""The public-code conventions: publiccode.yml, the licence, the changelog and the SBOM.

publiccode.yml is checked against the core keys of the Standard for Public Code's
publiccode.yml 0.4 (tests_py/schemas/publiccode.schema.json: every mandatory key, the closed
vocabularies, the length limits) and against this repository: the licence it names is the
one in LICENSE and pyproject.toml, its version and date are the changelog's latest release.
The SBOM test runs the generator CI uses (cyclonedx-py) on the test environment, a few
seconds; `.ci/sbom` makes the product-only SBOM in CI.
"""

import datetime
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "publiccode.schema.json").read_text())


def publiccode() -> dict:
    return yaml.safe_load((ROOT / "publiccode.yml").read_text())


def pyproject(path: Path = ROOT / "pyproject.toml") -> dict:
    return tomllib.loads(path.read_text())["project"]


def schema_errors(document: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return sorted(
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator.iter_errors(document)
    )


def test_publiccode_yml_follows_the_standard() -> None:
    assert schema_errors(publiccode()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.pop("legal"), "'legal' is a required property"),
        (lambda d: d.update(developmentStatus="released"), "is not one of"),
        (lambda d: d["categories"].append("notifications"), "is not one of"),
        (lambda d: d["description"]["nl"].update(shortDescription="x" * 151), "is too long"),
        (lambda d: d["description"]["en"].pop("features"), "'features' is a required"),
        (lambda d: d.update(releaseDate="1-12-2026"), "does not match"),
        (lambda d: d.update(unknownKey=1), "does not match any of the regexes"),
    ],
)
def test_the_schema_refuses_what_the_standard_refuses(change, expected: str) -> None:
    document = publiccode()
    change(document)
    assert any(expected in error for error in schema_errors(document))


def test_one_licence_everywhere() -> None:
    licence = publiccode()["legal"]["license"]
    assert licence == "EUPL-1.2"
    assert (ROOT / "LICENSE").read_text().startswith("EUROPEAN UNION PUBLIC LICENCE v. 1.2\n")
    assert pyproject()["license"] == licence
    assert pyproject(ROOT / "pyshell" / "client" / "pyproject.toml")["license"] == licence


def test_version_and_date_are_the_changelogs_latest_release() -> None:
    document = publiccode()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", changelog, re.M)
    assert releases, "CHANGELOG.md names no release as '## [x.y.z] - YYYY-MM-DD'"
    assert (document["softwareVersion"], document["releaseDate"]) == releases[0]
    assert document["softwareVersion"] == pyproject()["version"]
    assert datetime.date.fromisoformat(document["releaseDate"]) <= datetime.date.today()


def test_changelog_keeps_a_changelog() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert changelog.startswith("# Changelog\n")
    assert "## [Unreleased]" in changelog
    sections = set(re.findall(r"^### (.+)$", changelog, re.M))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_disclosure_and_contribution_documents() -> None:
    security = (ROOT / "SECURITY.md").read_text()
    assert "Reporting a vulnerability" in security
    assert "Do **not** open a public issue" in security
    assert "make test" in (ROOT / "CONTRIBUTING.md").read_text()


def test_the_sbom_generator_describes_the_installed_product(tmp_path: Path) -> None:
    out = tmp_path / "sbom.cdx.json"
    subprocess.run(
        [
            str(Path(sys.executable).with_name("cyclonedx-py")),
            "environment",
            "--pyproject",
            str(ROOT / "pyproject.toml"),
            "--of",
            "JSON",
            "-o",
            str(out),
            sys.executable,
        ],
        check=True,
        capture_output=True,
    )
    bom = json.loads(out.read_text())
    assert bom["bomFormat"] == "CycloneDX"
    assert bom["metadata"]["component"]["name"] == "nmc"
    installed = {c["name"].lower().replace("_", "-"): c.get("version") for c in bom["components"]}
    for requirement in pyproject()["dependencies"]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")
        assert installed.get(name), f"{name} is missing from the SBOM or has no version"
