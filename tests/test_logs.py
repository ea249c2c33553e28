"""The process log formats: a JSON line carries time, level, logger, message and error."""

from __future__ import annotations

import logging

import orjson

from inplace.logs import JsonFormatter


def test_a_json_line_has_the_fields_a_log_pipeline_reads() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "inplace.operator", logging.WARNING, __file__, 1, "lost %s", ("lease",), sys.exc_info()
        )
    entry = orjson.loads(JsonFormatter().format(record))
    assert entry["level"] == "warning" and entry["logger"] == "inplace.operator"
    assert entry["msg"] == "lost lease"
    assert entry["ts"].endswith("Z") and "ValueError: boom" in entry["err"]
