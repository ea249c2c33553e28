"""pods/log: where a container's log file is, and reading it whole, tailed or followed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inplace.apiserver.errors import StatusError
from inplace.apiserver.logs import follow_file, log_path
from tests.apiserver.support import PODS, make_api, pod
from tests.conftest import InProcessServer


def running_pod(restarts: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
        "status": {"containerStatuses": [{"name": "main", "restartCount": restarts}]},
    }


@pytest.mark.parametrize(
    ("restarts", "previous", "expected"),
    [(0, False, "0.log"), (2, False, "2.log"), (2, True, "1.log"), (1, True, "0.log")],
)
def test_a_log_is_one_file_per_restart_in_kubelets_layout(
    restarts: int, previous: bool, expected: str
) -> None:
    path = log_path(Path("/logs"), running_pod(restarts), "main", previous=previous)
    assert path == Path("/logs/ns_p_u-1/main") / expected


def test_no_previous_container_is_400_naming_it() -> None:
    with pytest.raises(StatusError) as caught:
        log_path(Path("/logs"), running_pod(0), "main", previous=True)
    assert caught.value.code == 400
    assert caught.value.message == 'previous terminated container "main" in pod "p" not found'


async def test_follow_file_tails_then_stops_when_the_container_has_stopped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"one\ntwo\nthree\n")

    async def stopped() -> bool:
        return False

    tailed = [c async for c in follow_file(path, tail=2, follow=False, still_running=stopped)]
    assert b"".join(tailed) == b"two\nthree\n"
    followed = [c async for c in follow_file(path, tail=0, follow=True, still_running=stopped)]
    assert followed == []


async def test_log_of_a_pod_whose_container_has_not_started(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        assert (await api.call("POST", PODS, pod("quiet")))[0] == 201
        status, body = await api.call("GET", f"{PODS}/quiet/log")
        assert status == 400
        assert body["message"] == (
            'container "main" in pod "quiet" is waiting to start: ContainerCreating'
        )
        status, body = await api.call("GET", f"{PODS}/quiet/log?container=other")
        assert status == 400 and body["message"] == "container other is not valid for pod quiet"
        log = apiserver.server.config.log_root
        assert log is not None
        _, created = await api.call("GET", f"{PODS}/quiet")
        directory = log / f"default_quiet_{created['metadata']['uid']}" / "main"
        directory.mkdir(parents=True)
        (directory / "0.log").write_bytes(b"hello\nworld\n")
        async with session.get(
            apiserver.url + f"{PODS}/quiet/log?tailLines=1", headers=apiserver.headers()
        ) as response:
            assert response.status == 200
            assert await response.read() == b"world\n"
