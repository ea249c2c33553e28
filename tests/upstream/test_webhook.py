"""The operator's admission webhook under the real kube-apiserver and deployment controller.

The webhook server runs in this test process, on 127.0.0.1 where the test bed's kube-apiserver
runs too, registered by URL. A resources-only ``kubectl set resources`` is stored paused and
held, and the real deployment controller, seeing it paused, makes no ReplicaSet; an image
change passes untouched and rolls out; with the server stopped, ``failurePolicy: Ignore`` lets
a resources change through and it rolls out as on any cluster.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from inplace.client import MUTATINGWEBHOOKCONFIGURATIONS, APINotFoundError, Client, load_kubeconfig
from inplace.operator.certs import (
    ServingCert,
    ensure_webhook_configuration,
    make_serving_cert,
    webhook_configuration,
)
from inplace.operator.webhook import WebhookServer
from tests.poll import wait_until

from .conftest import Bed

T = TypeVar("T")

CONFIGURATION = "inplace-test"
OWN_USER = "system:serviceaccount:inplace-system:inplace-operator"


def with_client(bed: Bed, work: Callable[[Client], Awaitable[T]]) -> T:
    """Run ``work`` with a client of the test bed's admin, in a loop of its own."""

    async def run() -> T:
        async with Client(load_kubeconfig(str(bed.plane.kubeconfig))) as client:
            return await work(client)

    return asyncio.run(run())


def delete_configuration(bed: Bed) -> None:
    async def delete(client: Client) -> None:
        try:
            await client.delete(MUTATINGWEBHOOKCONFIGURATIONS, CONFIGURATION)
        except APINotFoundError:
            pass

    with_client(bed, delete)


class ServerThread:
    """The webhook server on an event loop of its own thread, so it answers kube-apiserver
    while the test blocks on kubectl."""

    def __init__(self, server: WebhookServer, cert: ServingCert) -> None:
        self.server, self.cert = server, cert
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coroutine: Awaitable[Any]) -> Any:
        async def run() -> Any:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=30)

    def close(self) -> None:
        try:
            self.call(self.server.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)
            self.loop.close()


@pytest.fixture
def webhook() -> Iterator[ServerThread]:
    cert = make_serving_cert([], ["127.0.0.1"])
    server = WebhookServer(
        cert, host="127.0.0.1", port=0, own_user=OWN_USER, jobs=lambda namespace, name: None
    )
    served = ServerThread(server, cert)
    try:
        served.call(server.start())
        yield served
    finally:
        served.close()


def test_the_configuration_is_stored_as_written_and_not_rewritten_unchanged(bed: Bed) -> None:
    first, second = make_serving_cert([], ["127.0.0.1"]), make_serving_cert([], ["127.0.0.1"])
    service = ("inplace-system", "inplace-webhook", 443, "/mutate")
    try:
        created = with_client(
            bed,
            lambda c: ensure_webhook_configuration(
                c, CONFIGURATION, ca_pem=first.ca_pem, service=service
            ),
        )
        # Every field upstream's defaulting fills was written: the stored webhooks are ours.
        wanted = webhook_configuration(CONFIGURATION, ca_pem=first.ca_pem, service=service)
        assert created["webhooks"] == wanted["webhooks"]
        again = with_client(
            bed,
            lambda c: ensure_webhook_configuration(
                c, CONFIGURATION, ca_pem=first.ca_pem, service=service
            ),
        )
        version = created["metadata"]["resourceVersion"]
        assert again["metadata"]["resourceVersion"] == version  # no write

        url = "https://127.0.0.1:9443/mutate"
        moved = with_client(
            bed,
            lambda c: ensure_webhook_configuration(c, CONFIGURATION, ca_pem=second.ca_pem, url=url),
        )
        assert moved["metadata"]["resourceVersion"] != version
        moved_to = webhook_configuration(CONFIGURATION, ca_pem=second.ca_pem, url=url)
        assert moved["webhooks"] == moved_to["webhooks"]
        (hook,) = json.loads(
            bed.kubectl("get", "mutatingwebhookconfiguration", CONFIGURATION, "-o", "json").stdout
        )["webhooks"]
        assert hook["clientConfig"] == {
            "url": url,
            "caBundle": base64.b64encode(second.ca_pem).decode(),
        }
        assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system"]
    finally:
        delete_configuration(bed)


RESOURCES = "--requests=cpu=60m,memory=40Mi", "--limits=cpu=120m,memory=80Mi"


def deployment(name: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "exec sleep 3600"]
        resources:
          requests: {{cpu: 50m, memory: 32Mi}}
          limits: {{cpu: 100m, memory: 64Mi}}
"""


def replica_sets(bed: Bed, app: str) -> list[str]:
    out = bed.kubectl("get", "replicasets", "-l", f"app={app}", "-o", "name")
    return sorted(out.stdout.split())


def pods(bed: Bed, app: str) -> set[str]:
    out = bed.kubectl("get", "pods", "-l", f"app={app}", "-o", "json")
    return {
        p["metadata"]["name"]
        for p in json.loads(out.stdout)["items"]
        if "deletionTimestamp" not in p["metadata"]
    }


def observed(bed: Bed, name: str) -> dict[str, Any] | None:
    """The Deployment once its controller has acted on its latest spec."""
    obj = bed.get("deployment", name)
    if obj.get("status", {}).get("observedGeneration") == obj["metadata"]["generation"]:
        return obj
    return None


def rolled_out(bed: Bed, name: str) -> None:
    bed.kubectl("rollout", "status", f"deployment/{name}", "--timeout=120s", timeout=130)


def test_a_resources_only_change_is_held_and_every_other_change_rolls_out(
    bed: Bed, webhook: ServerThread
) -> None:
    bed.apply(deployment("held") + "---\n" + deployment("plain"))
    try:
        rolled_out(bed, "held")
        rolled_out(bed, "plain")
        held_sets, held_pods = replica_sets(bed, "held"), pods(bed, "held")
        url = f"https://127.0.0.1:{webhook.server.port}/mutate"
        with_client(
            bed,
            lambda c: ensure_webhook_configuration(
                c, CONFIGURATION, ca_pem=webhook.cert.ca_pem, url=url
            ),
        )
        # kube-apiserver reads webhook configurations through an informer: a server-side dry
        # run shows when it calls this one.
        wait_until(
            lambda: dry_run_pauses(bed, "held"), timeout=60, what="the webhook called on writes"
        )

        bed.kubectl("set", "resources", "deployment/held", "-c", "main", *RESOURCES)
        stored = wait_until(lambda: observed(bed, "held"), timeout=60, what="held observed")
        assert stored["spec"]["paused"] is True
        assert json.loads(stored["metadata"]["annotations"]["inplace.dev/held"]) == {
            "paused": False
        }
        container = stored["spec"]["template"]["spec"]["containers"][0]
        assert container["resources"] == {
            "requests": {"cpu": "60m", "memory": "40Mi"},
            "limits": {"cpu": "120m", "memory": "80Mi"},
        }
        # The deployment controller synced the new spec and, finding it paused, made nothing.
        assert replica_sets(bed, "held") == held_sets
        assert pods(bed, "held") == held_pods

        plain_pods = pods(bed, "plain")
        bed.kubectl("set", "image", "deployment/plain", "main=busybox:1.36")
        image_changed = bed.get("deployment", "plain")
        assert "paused" not in image_changed["spec"]
        assert "inplace.dev/held" not in image_changed["metadata"].get("annotations", {})
        rolled_out(bed, "plain")
        assert len(replica_sets(bed, "plain")) == 2
        assert not pods(bed, "plain") & plain_pods

        webhook.call(webhook.server.stop())
        plain_pods = pods(bed, "plain")
        bed.kubectl("set", "resources", "deployment/plain", "-c", "main", *RESOURCES)
        resized = bed.get("deployment", "plain")
        assert "paused" not in resized["spec"]
        assert "inplace.dev/held" not in resized["metadata"].get("annotations", {})
        rolled_out(bed, "plain")
        assert len(replica_sets(bed, "plain")) == 3
        assert not pods(bed, "plain") & plain_pods
    finally:
        delete_configuration(bed)
        bed.kubectl("delete", "deployment", "held", "plain", "--ignore-not-found", check=False)


def dry_run_pauses(bed: Bed, name: str) -> bool:
    out = bed.kubectl(
        "set",
        "resources",
        f"deployment/{name}",
        "-c",
        "main",
        *RESOURCES,
        "--dry-run=server",
        "-o",
        "json",
    )
    return bool(json.loads(out.stdout)["spec"].get("paused"))
