"""queries.sql is shared by the API, the worker and the CLI, nmc_dev/queries.sql by the
development tools: every name must be unique, within a file and across the two."""

import re
from importlib.resources import files

import pytest

from nmc.queries import QUERIES
from nmc_dev.queries import DEV_QUERIES
from nmc_dev.queries import QUERIES as ALL_QUERIES


@pytest.mark.parametrize(("package", "loaded"), [("nmc", QUERIES), ("nmc_dev", DEV_QUERIES)])
def test_every_query_name_is_unique(package, loaded):
    text = files(package).joinpath("queries.sql").read_text(encoding="utf-8")
    names = re.findall(r"^-- (\w+) --$", text, flags=re.MULTILINE)
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert duplicates == []
    assert len(names) == len(loaded)


def test_the_tools_see_both_files_and_no_name_is_in_both():
    assert QUERIES.keys().isdisjoint(DEV_QUERIES.keys())
    assert ALL_QUERIES == {**QUERIES, **DEV_QUERIES}
