"""The served documents, parsed back from the served bytes once per module."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inplace.registry.kinds import REGISTRY
from inplace.registry.openapi import (
    document_keys,
    openapi_v3_bytes,
)


@pytest.fixture(scope="module")
def docs() -> dict[str, dict[str, Any]]:
    """Every served document, parsed back from the served bytes."""
    out = {}
    for key in document_keys(REGISTRY):
        served = openapi_v3_bytes(REGISTRY, key)
        assert served is not None
        out[key] = orjson.loads(served[0])
    return out
