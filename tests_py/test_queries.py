"""queries.sql is shared by the API, the worker and the CLI: every name must be unique."""

import re
from importlib.resources import files

from nmc.queries import QUERIES


def test_every_query_name_is_unique():
    text = files("nmc").joinpath("queries.sql").read_text(encoding="utf-8")
    names = re.findall(r"^-- (\w+) --$", text, flags=re.MULTILINE)
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert duplicates == []
    assert len(names) == len(QUERIES)
