"""The OpenAPI 3.1 document of the DV API: openapi.yaml beside this module, read once.

The app serves it as JSON at GET BASE_PATH + "/openapi.json". The routes' base path and the
value of the API-Version response header are read from the document, so it states them once.
"""

import copy
from importlib.resources import files
from typing import Any
from urllib.parse import urlsplit

import yaml

API_VERSION_HEADER = "API-Version"


def _read() -> dict[str, Any]:
    text = files(__package__).joinpath("openapi.yaml").read_text(encoding="utf-8")
    # A safe loader either way: libyaml's where PyYAML has it (faster), else its own.
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


_DOCUMENT = _read()

API_VERSION: str = _DOCUMENT["info"]["version"]
"""SemVer of this API; also the value of the `API-Version` response header."""

DEFAULT_SERVER_URL: str = _DOCUMENT["servers"][0]["url"]
BASE_PATH: str = urlsplit(DEFAULT_SERVER_URL).path
"""Where the DV API's routes are: the path of the document's server URL (/api/nmc/v1)."""


def openapi_document(server_url: str = DEFAULT_SERVER_URL) -> dict[str, Any]:
    """The document as a fresh dict, with `server_url` as its server (NMC_API_SERVER_URL)."""
    document = copy.deepcopy(_DOCUMENT)
    document["servers"][0]["url"] = server_url
    return document
