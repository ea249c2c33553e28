"""pods/log over real HTTP: upstream's validation, kubelet's refusals, tailed and previous runs.

What the file reading does (tail, byte limit, since, follow; which run) is tested once, on the
module the API server shares with the node agent (``tests/api/test_containerlogs.py``).
"""

from __future__ import annotations

from pathlib import Path

from tests.apiserver.support import PODS, make_api, pod
from tests.conftest import InProcessServer


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
        async with session.get(
            apiserver.url + f"{PODS}/quiet/log?limitBytes=3", headers=apiserver.headers()
        ) as response:
            assert await response.read() == b"hel"


async def test_options_are_validated_as_upstreams_api_server_does(
    apiserver: InProcessServer,
) -> None:
    """Before the pod is read (so even for one that does not exist), as upstream's
    ``LogREST.Get``; ``stream`` is forbidden while ``PodLogsQuerySplitStreams`` is off."""
    api, session = await make_api(apiserver)
    async with session:
        status, body = await api.call("GET", f"{PODS}/nobody/log?tailLines=-1")
        assert status == 422 and body["reason"] == "Invalid"
        assert body["message"] == (
            'PodLogOptions "nobody" is invalid: '
            "tailLines: Invalid value: -1: must be greater than or equal to 0"
        )
        assert body["details"]["causes"] == [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: -1: must be greater than or equal to 0",
                "field": "tailLines",
            }
        ]
        status, body = await api.call("GET", f"{PODS}/nobody/log?stream=Stdout")
        assert status == 422
        assert body["message"].endswith("stream: Forbidden: may not be specified")
        status, body = await api.call("GET", f"{PODS}/nobody/log?sinceSeconds=1&sinceTime=null")
        assert status == 404
        status, body = await api.call("GET", f"{PODS}/nobody/log?tailLines=x")
        assert status == 400
        assert body["message"] == "tailLines: invalid value 'x': must be an integer"


async def test_previous_is_the_run_last_state_describes(
    apiserver: InProcessServer, tmp_path: Path
) -> None:
    api, session = await make_api(apiserver)
    async with session:
        assert (await api.call("POST", PODS, pod("again", node="n1")))[0] == 201
        _, created = await api.call("GET", f"{PODS}/again")
        created["status"] = {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "main",
                    "image": "busybox",
                    "imageID": "",
                    "ready": True,
                    "restartCount": 1,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                    "lastState": {"terminated": {"exitCode": 3, "reason": "Error"}},
                }
            ],
        }
        status, _ = await api.call("PUT", f"{PODS}/again/status", created)
        assert status == 200
        log = apiserver.server.config.log_root
        assert log is not None
        directory = log / f"default_again_{created['metadata']['uid']}" / "main"
        directory.mkdir(parents=True)
        (directory / "0.log").write_bytes(b"first run\n")
        (directory / "1.log").write_bytes(b"second run\n")
        for query, text in (("", b"second run\n"), ("?previous=true", b"first run\n")):
            async with session.get(
                apiserver.url + f"{PODS}/again/log{query}", headers=apiserver.headers()
            ) as response:
                assert response.status == 200
                assert await response.read() == text
