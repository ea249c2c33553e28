"""How an inplace process writes its log: plain lines for a terminal, or one JSON object a
line (``--log-format json``) for a cluster's log pipeline, as Kubernetes components' own
``--logging-format=json`` does (``ts``, ``level``, ``logger``, ``msg``, and ``err`` with the
traceback of an exception)."""

from __future__ import annotations

import logging
from typing import Any

import orjson

from inplace.api.timestamps import rfc3339_micro

__all__ = ["FORMATS", "JsonFormatter", "configure"]

FORMATS = ("text", "json")
_TEXT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": rfc3339_micro(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["err"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


def configure(level: str = "INFO", fmt: str = "text") -> None:
    """Set up the root logger once for the whole process."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(_TEXT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
