from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from inplace.client import Client, ClusterConfig

from .certs import PKI, make_pki
from .fakeserver import FakeAPIServer


@pytest.fixture(scope="session")
def pki() -> PKI:
    return make_pki()


@pytest.fixture
async def server() -> AsyncIterator[FakeAPIServer]:
    srv = FakeAPIServer(token="s3cret")
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
async def client(server: FakeAPIServer) -> AsyncIterator[Client]:
    async with Client(ClusterConfig(server=server.url, token="s3cret")) as c:
        yield c


async def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``cond`` until true (fails the test after ``timeout``; never asserts on time)."""
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.005)
