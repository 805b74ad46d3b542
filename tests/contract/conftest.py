"""Contract harness: a service's real grpc.aio server on port 0, driven through its stubs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from services.common import create_channel, embedded_server_url

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def channel_to() -> AsyncIterator[object]:
    """``await channel_to(address)`` opens a client channel closed at teardown."""
    channels: list[grpc.aio.Channel] = []

    def open_channel(address: str) -> grpc.aio.Channel:
        channel = create_channel(address)
        channels.append(channel)
        return channel

    yield open_channel
    for channel in channels:
        await channel.close()


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private embedded Postgres for contract tests of services that store data."""
    yield embedded_server_url(tmp_path_factory.mktemp("tandem-contract-data"))
