"""Structured worker logs: one JSON object per line on stderr.

Fields are ids, kinds, outcome words and error classes only — never an address, an
identifying number, personalisation, a dvRef or an exception message (which might quote
one). `event()` is the one way the worker logs.
"""

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

LOGGER = logging.getLogger("nmc.worker")


def event(level: int, name: str, **fields: Any) -> None:
    if LOGGER.isEnabledFor(level):
        LOGGER.log(level, name, extra={"velden": fields})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
            **getattr(record, "velden", {}),
        }
        return json.dumps(data, default=str, ensure_ascii=False)


def configure(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    LOGGER.handlers[:] = [handler]
    LOGGER.setLevel(level)
    LOGGER.propagate = False
