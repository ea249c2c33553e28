"""Server-side Table responses (`meta.k8s.io/v1 Table`): the columns, the printer and
`to_table` (`printer`), and the pods' printer (`pods`), which the dashboard shares with the API
server; the other kinds' printers are the server's (`inplace.registry.tables`).
"""

from __future__ import annotations

from inplace.api.tables.pods import POD_TABLE
from inplace.api.tables.printer import (
    DEFAULT_TABLE,
    Column,
    TablePrinter,
    column_definitions,
    human_duration,
    to_table,
)

__all__ = [
    "DEFAULT_TABLE",
    "POD_TABLE",
    "Column",
    "TablePrinter",
    "column_definitions",
    "human_duration",
    "to_table",
]
