from __future__ import annotations

from collections.abc import AsyncIterator

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
