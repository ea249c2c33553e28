"""Admission webhooks end to end: real `inplace up`, real kubectl, a webhook server that is a
pod of the cluster.

The webhook server is a Python program run as a pod's command, its certificate and key in a
Secret volume, reached through its Service (`clientConfig.service`): the API server resolves
the Service to the ready pod and verifies the certificate for `<service>.<namespace>.svc`
against the configuration's `caBundle`. A mutating webhook labels every new pod of a labelled
namespace; a validating one refuses a pod with a message kubectl prints, and warns. With the
webhook pod deleted, `failurePolicy: Ignore` lets writes through and `Fail` refuses them with
upstream's message.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from inplace.apiserver.tls import ensure_certificates
from tests.conftest import Cluster, free_port
from tests.poll import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="secret volumes need a mount namespace (root)"),
]

SERVER_NS = "webhook-e2e"
TARGET_NS = "webhook-e2e-target"
SERVICE = "e2e-hooks"
MUTATING = "e2e-label-pods"
VALIDATING = "e2e-refuse-pods"
LABEL = "webhook.e2e.inplace.dev/mutated"

#: The webhook server: stdlib only, TLS from the Secret volume, one review per POST.
PROGRAM = textwrap.dedent(
    """
    import base64, json, ssl, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    LABEL = "webhook.e2e.inplace.dev/mutated"

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = review["request"]
            labels = (request["object"] or {}).get("metadata", {}).get("labels")
            response = {"uid": request["uid"], "allowed": True}
            if self.path.startswith("/mutate"):
                if labels is None:
                    op = {"op": "add", "path": "/metadata/labels", "value": {LABEL: "true"}}
                else:
                    escaped = LABEL.replace("~", "~0").replace("/", "~1")
                    op = {"op": "add", "path": "/metadata/labels/" + escaped, "value": "true"}
                response["patchType"] = "JSONPatch"
                response["patch"] = base64.b64encode(json.dumps([op]).encode()).decode()
            elif (labels or {}).get("e2e-refuse") == "true":
                response["allowed"] = False
                response["status"] = {
                    "code": 403,
                    "reason": "Forbidden",
                    "message": "pods labelled e2e-refuse=true are not welcome here",
                }
            else:
                response["warnings"] = ["checked by the e2e webhook"]
            body = json.dumps(
                {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                 "response": response}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            print(fmt % args, flush=True)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain("/certs/tls.crt", "/certs/tls.key")
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hook)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("serving", flush=True)
    server.serve_forever()
    """
)


def webhook_pod(port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "e2e-hooks", "namespace": SERVER_NS, "labels": {"app": SERVICE}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "hooks",
                    "image": "python",
                    "command": [sys.executable, "-c", PROGRAM, str(port)],
                    "ports": [{"name": "https", "containerPort": port}],
                    "volumeMounts": [{"name": "certs", "mountPath": "/certs", "readOnly": True}],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                }
            ],
            "volumes": [{"name": "certs", "secret": {"secretName": "e2e-hooks-tls"}}],
        },
    }


def configuration(kind: str, name: str, path: str, ca_bundle: str, policy: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": f"{path.strip('/')}.e2e.inplace.dev",
                "clientConfig": {
                    "service": {"namespace": SERVER_NS, "name": SERVICE, "path": path},
                    "caBundle": ca_bundle,
                },
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["pods"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {"webhook-e2e": "enabled"}},
                "failurePolicy": policy,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }


def pending_pod(name: str, namespace: str = TARGET_NS, **labels: str) -> str:
    """A pod no node takes (so it costs no process): admission is what is tested."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {
                "nodeSelector": {"inplace.dev/e2e": "nowhere"},
                "containers": [{"name": "app", "image": "busybox", "command": ["sleep", "1d"]}],
            },
        }
    )


def labels_of(cluster: Cluster, name: str, namespace: str = TARGET_NS) -> dict[str, str]:
    got = cluster.kubectl("get", "pod", name, "-n", namespace, "-o", "json")
    return dict(json.loads(got.stdout)["metadata"].get("labels") or {})


def test_webhooks_served_by_a_pod(cluster: Cluster, tmp_path: Path) -> None:
    certs = ensure_certificates(tmp_path / "pki", hosts=(f"{SERVICE}.{SERVER_NS}.svc",))
    ca_bundle = base64.b64encode(certs.ca_pem()).decode()
    port = free_port()
    try:
        cluster.kubectl("create", "namespace", SERVER_NS)
        cluster.kubectl("create", "namespace", TARGET_NS)
        cluster.kubectl("label", "namespace", TARGET_NS, "webhook-e2e=enabled")
        cluster.kubectl(
            "create",
            "secret",
            "tls",
            "e2e-hooks-tls",
            "-n",
            SERVER_NS,
            f"--cert={certs.cert}",
            f"--key={certs.key}",
        )
        cluster.kubectl("apply", "-f", "-", input=json.dumps(webhook_pod(port)))
        cluster.kubectl(
            "create",
            "service",
            "clusterip",
            SERVICE,
            "-n",
            SERVER_NS,
            "--tcp=443:https",
        )
        # `kubectl create service` selects app=<name>, as the webhook pod is labelled.
        cluster.kubectl(
            "wait", "pod/e2e-hooks", "-n", SERVER_NS, "--for=condition=Ready", "--timeout=120s"
        )

        # The mutating webhook first, failing open, so the test can wait for the server to
        # listen: a dry-run create comes back labelled once it does.
        mutating = configuration(
            "MutatingWebhookConfiguration", MUTATING, "/mutate", ca_bundle, "Ignore"
        )
        cluster.kubectl("apply", "-f", "-", input=json.dumps(mutating))

        def mutated() -> bool:
            result = cluster.kubectl(
                "create",
                "--dry-run=server",
                "-o",
                "json",
                "-f",
                "-",
                input=pending_pod("probe"),
                check=False,
            )
            return result.returncode == 0 and LABEL in json.loads(result.stdout)["metadata"].get(
                "labels", {}
            )

        wait_until(mutated, timeout=120, interval=0.5, what="the webhook pod answers")
        listed = cluster.kubectl("get", "mutatingwebhookconfigurations", MUTATING)
        assert listed.stdout.split("\n")[0].split() == ["NAME", "WEBHOOKS", "AGE"]
        assert listed.stdout.split("\n")[1].split()[:2] == [MUTATING, "1"]

        validating = configuration(
            "ValidatingWebhookConfiguration", VALIDATING, "/validate", ca_bundle, "Fail"
        )
        cluster.kubectl("apply", "-f", "-", input=json.dumps(validating))

        # Every new pod of the labelled namespace is labelled; the validating webhook warns.
        created = cluster.kubectl("create", "-f", "-", input=pending_pod("first", app="web"))
        assert "Warning: checked by the e2e webhook" in created.stderr
        assert labels_of(cluster, "first") == {"app": "web", LABEL: "true"}
        # Not in a labelled namespace: untouched.
        cluster.kubectl("create", "-f", "-", input=pending_pod("outside", SERVER_NS, app="web"))
        assert labels_of(cluster, "outside", SERVER_NS) == {"app": "web"}

        # A refusal, in the webhook's words; nothing is stored.
        refused = cluster.kubectl(
            "create",
            "-f",
            "-",
            input=pending_pod("unwelcome", **{"e2e-refuse": "true"}),
            check=False,
        )
        assert refused.returncode == 1
        assert (
            'admission webhook "validate.e2e.inplace.dev" denied the request: pods labelled '
            "e2e-refuse=true are not welcome here"
        ) in refused.stderr
        assert "Error from server (Forbidden)" in refused.stderr
        missing = cluster.kubectl("get", "pod", "unwelcome", "-n", TARGET_NS, check=False)
        assert "NotFound" in missing.stderr

        # The webhook goes away: Fail refuses with upstream's message ...
        cluster.kubectl("delete", "pod", "e2e-hooks", "-n", SERVER_NS, "--wait=true")
        down = cluster.kubectl("create", "-f", "-", input=pending_pod("while-down"), check=False)
        assert down.returncode == 1
        assert (
            'Error from server (InternalError): error when creating "STDIN": Internal error '
            'occurred: failed calling webhook "validate.e2e.inplace.dev": failed to call '
            f'webhook: Post "https://{SERVICE}.{SERVER_NS}.svc:443/validate?timeout=10s": no '
            f'endpoints available for service "{SERVICE}"'
        ) in down.stderr
        # ... Ignore lets the write through (unlabelled: the mutating one failed open too).
        cluster.kubectl(
            "patch",
            "validatingwebhookconfiguration",
            VALIDATING,
            "--type=json",
            "-p",
            '[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]',
        )
        cluster.kubectl("create", "-f", "-", input=pending_pod("while-down", app="web"))
        assert labels_of(cluster, "while-down") == {"app": "web"}
        cluster.kubectl(
            "patch",
            "mutatingwebhookconfiguration",
            MUTATING,
            "--type=json",
            "-p",
            '[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Fail"}]',
        )
        down = cluster.kubectl("create", "-f", "-", input=pending_pod("refused"), check=False)
        assert down.returncode == 1
        assert (
            'Internal error occurred: failed calling webhook "mutate.e2e.inplace.dev": failed '
            f'to call webhook: Post "https://{SERVICE}.{SERVER_NS}.svc:443/mutate?timeout=10s"'
        ) in down.stderr
    finally:
        cluster.kubectl(
            "delete", "mutatingwebhookconfiguration", MUTATING, "--ignore-not-found", check=False
        )
        cluster.kubectl(
            "delete",
            "validatingwebhookconfiguration",
            VALIDATING,
            "--ignore-not-found",
            check=False,
        )
        cluster.kubectl(
            "delete",
            "namespace",
            SERVER_NS,
            TARGET_NS,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=120s",
            check=False,
            timeout=150,
        )


POLICY_NS = "policy-e2e"
POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: e2e-max-replicas}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
    namespaceSelector: {matchLabels: {policy-e2e: enabled}}
  validations:
  - expression: object.spec.replicas <= 5
  - expression: has(object.metadata.labels) && 'team' in object.metadata.labels
    messageExpression: "'deployment ' + object.metadata.name + ' has no team label'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: e2e-max-replicas}
spec:
  policyName: e2e-max-replicas
  validationActions: [Deny]
"""


def deployment(name: str, replicas: int, **labels: str) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": POLICY_NS, "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "nodeSelector": {"inplace.dev/e2e": "nowhere"},
                        "containers": [
                            {"name": "app", "image": "busybox", "command": ["sleep", "1d"]}
                        ],
                    },
                },
            },
        }
    )


def test_a_validating_admission_policy(cluster: Cluster) -> None:
    """A CEL policy refuses a Deployment with too many replicas in kubectl's words, and warns
    instead once its binding says Warn."""
    try:
        cluster.kubectl("create", "namespace", POLICY_NS)
        cluster.kubectl("label", "namespace", POLICY_NS, "policy-e2e=enabled")
        cluster.kubectl("apply", "-f", "-", input=POLICY)
        listed = cluster.kubectl("get", "validatingadmissionpolicies", "e2e-max-replicas")
        assert listed.stdout.split("\n")[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
        assert listed.stdout.split("\n")[1].split()[:3] == ["e2e-max-replicas", "2", "<unset>"]

        refused = cluster.kubectl(
            "create", "-f", "-", input=deployment("big", 7, team="a"), check=False
        )
        assert refused.returncode == 1
        assert (
            'The deployments "big" is invalid: : ValidatingAdmissionPolicy '
            "'e2e-max-replicas' with binding 'e2e-max-replicas' denied request: failed "
            "expression: object.spec.replicas <= 5"
        ) in refused.stderr
        refused = cluster.kubectl("create", "-f", "-", input=deployment("anon", 1), check=False)
        assert "denied request: deployment anon has no team label" in refused.stderr
        cluster.kubectl("create", "-f", "-", input=deployment("fine", 1, team="a"))

        cluster.kubectl(
            "patch",
            "validatingadmissionpolicybinding",
            "e2e-max-replicas",
            "--type=merge",
            "-p",
            '{"spec":{"validationActions":["Warn"]}}',
        )
        warned = cluster.kubectl("create", "-f", "-", input=deployment("big", 7, team="a"))
        assert (
            "Warning: Validation failed for ValidatingAdmissionPolicy 'e2e-max-replicas' with "
            "binding 'e2e-max-replicas': failed expression: object.spec.replicas <= 5"
        ) in warned.stderr
    finally:
        cluster.kubectl(
            "delete",
            "validatingadmissionpolicybinding,validatingadmissionpolicy",
            "e2e-max-replicas",
            "--ignore-not-found",
            check=False,
        )
        cluster.kubectl(
            "delete",
            "namespace",
            POLICY_NS,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=120s",
            check=False,
            timeout=150,
        )
