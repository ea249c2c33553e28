"""kubelet's token manager: one bound TokenRequest per pod, account, audience and lifetime,
reused until a fifth of its life is left (or a day has passed), then refreshed."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from inplace.api.quantity import Quantity
from inplace.node.tokens import TokenManager, TokenRequestError
from inplace.node.volumes.payload import Projection, SourceError, projected_payload

POD = {
    "metadata": {"name": "app", "namespace": "team", "uid": "u-1"},
    "spec": {"serviceAccountName": "runner"},
}


class FakeClient:
    """Answers TokenRequests as the API server does, counting them."""

    def __init__(self, now: list[float]) -> None:
        self.now = now
        self.requests: list[dict[str, Any]] = []
        self.fail = False

    async def create(self, res: Any, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if self.fail:
            raise ConnectionError("no server")
        self.requests.append({"body": body, **kw})
        expires = self.now[0] + body["spec"]["expirationSeconds"]
        return {
            **body,
            "status": {
                "token": f"token-{len(self.requests)}",
                "expirationTimestamp": datetime.fromtimestamp(expires, UTC).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                ),
            },
        }


def manager(now: list[float], refreshed: list[str]) -> tuple[TokenManager, FakeClient]:
    client = FakeClient(now)
    tokens = TokenManager(client, refreshed.append, clock=lambda: now[0], jitter=lambda: 0.0)  # type: ignore[arg-type]
    return tokens, client


async def test_a_token_is_bound_to_the_pod_and_reused_until_a_fifth_of_its_life_is_left() -> None:
    now = [1_000_000.0]
    refreshed: list[str] = []
    tokens, client = manager(now, refreshed)
    assert await tokens.token(POD, "runner", "", 3600) == "token-1"
    request = client.requests[0]
    assert request["subresource"] == "token" and request["namespace"] == "team"
    assert request["body"]["metadata"]["name"] == "runner"
    assert request["body"]["spec"] == {
        "audiences": [],
        "expirationSeconds": 3600,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "app", "uid": "u-1"},
    }
    now[0] += 2879  # 80% of 3600 is 2880
    assert await tokens.token(POD, "runner", "", 3600) == "token-1"
    now[0] += 2
    assert await tokens.token(POD, "runner", "", 3600) == "token-2"
    assert await tokens.token(POD, "runner", "vault", 3600) == "token-3"  # another audience
    assert client.requests[2]["body"]["spec"]["audiences"] == ["vault"]
    tokens.close()


async def test_a_day_old_token_is_refreshed_and_the_pod_told_in_time() -> None:
    now = [1_000_000.0]
    refreshed: list[str] = []
    tokens, _ = manager(now, refreshed)
    await tokens.token(POD, "runner", "", 7 * 24 * 3600)
    handles = [t.timer for t in tokens._tokens.values()]
    assert handles[0] is not None
    # The timer fires a day after issue (the earlier of a day and 80% of a week).
    assert handles[0].when() - asyncio.get_running_loop().time() == pytest.approx(24 * 3600, abs=5)
    now[0] += 24 * 3600 + 1
    assert await tokens.token(POD, "runner", "", 7 * 24 * 3600) == "token-2"
    tokens.forget("u-1")
    assert tokens._tokens == {}


async def test_failures_are_token_request_errors() -> None:
    now = [1_000_000.0]
    tokens, client = manager(now, [])
    client.fail = True
    with pytest.raises(TokenRequestError, match="failed to fetch token"):
        await tokens.token(POD, "runner", "", 3600)


async def test_the_projected_source_writes_the_token() -> None:
    now = [1_000_000.0]
    tokens, client = manager(now, [])
    projection = Projection(
        POD,
        objects=None,
        node_allocatable={"cpu": Quantity.parse("1")},
        default_mode=0o644,
        tokens=tokens,
    )  # type: ignore[arg-type]
    source = {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}
    files = await projected_payload(projection, source)
    assert files["token"].data == b"token-1" and files["token"].mode == 0o644
    assert client.requests[0]["body"]["spec"]["expirationSeconds"] == 3607
    with_group = {**POD, "spec": {**POD["spec"], "securityContext": {"fsGroup": 2000}}}
    grouped = Projection(with_group, None, {}, 0o644, tokens)  # type: ignore[arg-type]
    assert (await projected_payload(grouped, source))["token"].mode == 0o600
    bare = Projection(POD, None, {}, 0o644)  # type: ignore[arg-type]
    with pytest.raises(SourceError, match="serviceAccountToken is not supported"):
        await projected_payload(bare, source)
    tokens.close()
