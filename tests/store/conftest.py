"""Fixtures for the store tests: a fresh store in a temporary directory."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

if importlib.util.find_spec("inplace") is None:  # running from a checkout without `pip install -e`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from inplace.store import Store


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(db_path)
    try:
        yield s
    finally:
        await s.close()
