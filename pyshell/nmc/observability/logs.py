"""Structured API logs: one JSON object per line, as the worker writes them (nmc.worker.logs).

Fields: `ts`, `level`, `logger`, `event` (the message) and the record's `velden`. The access
line (logger nmc.api.access, event `http-request`) carries method, route template, status,
duration_ms and trace_id: never the query string (it may hold a dvRef), a body, a header value
or a token. `nmc api` installs this formatter for the nmc and uvicorn loggers (serve.py).
"""

import json
import logging
from datetime import UTC, datetime
from typing import Any

access_log = logging.getLogger("nmc.api.access")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
            **getattr(record, "velden", {}),
        }
        if record.exc_info and record.exc_info[0] is not None:
            # The class only: an exception message may quote input.
            data["exception"] = record.exc_info[0].__name__
        return json.dumps(data, default=str, ensure_ascii=False)


def log_access(method: str, route: str, status: int, duration_ms: float, trace_id: str) -> None:
    if access_log.isEnabledFor(logging.INFO):
        access_log.info(
            "http-request",
            extra={
                "velden": {
                    "method": method,
                    "route": route,
                    "status": status,
                    "duration_ms": round(duration_ms, 1),
                    "trace_id": trace_id,
                }
            },
        )


def log_config() -> dict[str, Any]:
    """uvicorn's `log_config`: JSON lines on stderr for nmc.* and uvicorn's own loggers."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"json": handler},
        "loggers": {
            "nmc": {"handlers": ["json"], "level": "INFO", "propagate": False},
            "uvicorn": {"handlers": ["json"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }
