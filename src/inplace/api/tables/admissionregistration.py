"""Webhook configurations, as upstream's printers show them (NAME, WEBHOOKS, AGE)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from inplace.api.tables.printer import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Row,
    TablePrinter,
    age,
    list_at,
    name_of,
)

_WEBHOOK_COLUMNS: Final = (
    NAME_COLUMN,
    Column(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE_COLUMN,
)


def _print_webhook_configuration(obj: Mapping[str, Any], now: datetime) -> Row:
    return [name_of(obj), len(list_at(obj, "webhooks")), age(obj, now)], None


MUTATING_WEBHOOK_CONFIGURATION_TABLE: Final = TablePrinter(
    _WEBHOOK_COLUMNS, _print_webhook_configuration
)
VALIDATING_WEBHOOK_CONFIGURATION_TABLE: Final = TablePrinter(
    _WEBHOOK_COLUMNS, _print_webhook_configuration
)
