"""The HTTPS server kube-apiserver calls for the operator's admission webhook.

``POST /mutate`` takes an AdmissionReview (``admission.k8s.io/v1``) and answers with
:func:`~inplace.operator.admission.review_response` of
:func:`~inplace.operator.admission.mutate`: a pure, quick decision, so the handler never
waits on anything while kube-apiserver holds the user's write open. ``GET /healthz`` answers
while the server serves; ``GET /readyz`` once the operator says it is ready (its caches
synced), so a Service sends the API server's calls only to replicas that can judge a Job's
pods.

The serving certificate can be replaced while serving (:meth:`WebhookServer.reload`): the
listening socket's TLS context hands each new handshake the current certificate through its
SNI callback, which runs for every ClientHello, with or without a server name. Connections
already open keep the certificate they started with.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson
from aiohttp import web

from .admission import JobLookup, mutate, review_response
from .certs import ServingCert

__all__ = ["MAX_REVIEW_BYTES", "WebhookServer", "review_problem", "server_context"]

log = logging.getLogger(__name__)

MAX_REVIEW_BYTES: Final = 16 * 1024 * 1024
"""The largest AdmissionReview read: it carries the object and its old version, each up to
the API server's own request limit (3 MiB), with room for their JSON escaping."""

REVIEW_API_VERSION: Final = "admission.k8s.io/v1"


def server_context(cert: ServingCert) -> ssl.SSLContext:
    """A server-side TLS context serving ``cert``. ``ssl`` loads a key pair only from files,
    so they are written to a private temporary directory for the moment it takes."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="inplace-webhook-") as directory:
        cert_file = os.path.join(directory, "tls.crt")
        key_file = os.path.join(directory, "tls.key")
        for path, data in ((cert_file, cert.cert_pem), (key_file, cert.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(cert_file, key_file)
    return context


def review_problem(review: Any) -> str | None:
    """What makes ``review`` no AdmissionReview request this webhook can answer, or None."""
    if not isinstance(review, Mapping):
        return "the body is not a JSON object"
    if review.get("apiVersion") != REVIEW_API_VERSION or review.get("kind") != "AdmissionReview":
        return f"expected an AdmissionReview of {REVIEW_API_VERSION}"
    request = review.get("request")
    if not isinstance(request, Mapping):
        return "the AdmissionReview has no request"
    if not isinstance(request.get("uid"), str) or not request["uid"]:
        return "request.uid is required"
    for key in ("kind", "userInfo", "object", "oldObject"):
        if request.get(key) is not None and not isinstance(request[key], Mapping):
            return f"request.{key} must be an object"
    return None


def _text(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n")


class WebhookServer:
    """The webhook over HTTPS on ``host:port`` (port 0: a free one, :attr:`port` after
    :meth:`start`). ``own_user`` is the operator's own user, whose writes pass untouched;
    ``jobs`` reads a Job from the operator's cache for a Job's pod; ``ready`` says when
    ``/readyz`` may answer 200."""

    def __init__(
        self,
        cert: ServingCert,
        *,
        host: str,
        port: int,
        own_user: str,
        jobs: JobLookup,
        ready: Callable[[], bool] = lambda: True,
        allow_memory_limit_decrease: bool = True,
    ) -> None:
        self._host = host
        self._allow_memory_limit_decrease = allow_memory_limit_decrease
        self._port = port
        self._own_user = own_user
        self._jobs = jobs
        self._ready = ready
        self._current = server_context(cert)
        self._runner: web.AppRunner | None = None

    @property
    def port(self) -> int:
        """The port served on: the one given, or the one picked once started."""
        return self._port

    @property
    def serving(self) -> bool:
        return self._runner is not None

    def reload(self, cert: ServingCert) -> None:
        """Serve ``cert`` to every connection made from now on."""
        self._current = server_context(cert)
        log.info("webhook serving certificate reloaded (valid until %s)", cert.not_after)

    def _choose_context(
        self, connection: ssl.SSLObject, server_name: str | None, listening: ssl.SSLContext
    ) -> None:
        """The SNI callback of the listening context: hands the handshake the current one."""
        if self._current is not listening:
            connection.context = self._current

    async def start(self) -> None:
        if self._runner is not None:
            return
        listening = self._current
        listening.sni_callback = self._choose_context
        app = web.Application(client_max_size=MAX_REVIEW_BYTES)
        app.router.add_post("/mutate", self._mutate)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(
                runner, self._host or None, self._port, ssl_context=listening, reuse_port=True
            )
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        address = runner.addresses[0]
        self._port = int(address[1])
        log.info("webhook serving on https://%s:%d/mutate", self._host, self._port)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- handlers ----------------------------------------------------------------------------

    async def _mutate(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            review = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return _text(400, f"the body is not JSON: {exc}")
        problem = review_problem(review)
        if problem is not None:
            return _text(400, problem)
        admission_request = review["request"]
        admission = mutate(
            admission_request,
            own_user=self._own_user,
            job=self._jobs,
            allow_memory_limit_decrease=self._allow_memory_limit_decrease,
        )
        if admission.patch:
            log.info(
                "webhook: %s %s/%s of %s patched",
                (admission_request.get("kind") or {}).get("kind"),
                admission_request.get("namespace"),
                admission_request.get("name"),
                (admission_request.get("userInfo") or {}).get("username"),
            )
        answer = review_response(admission_request, admission)
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    async def _healthz(self, request: web.Request) -> web.Response:
        return _text(200, "ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self._ready():
            return _text(200, "ok")
        return _text(503, "not ready")
