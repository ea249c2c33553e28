"""Fixtures of the API server's tests: the TLS webhook server of the admission webhook tests."""

from tests.apiserver.webhook_support import hooks

__all__ = ["hooks"]
