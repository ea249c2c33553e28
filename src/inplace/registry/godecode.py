"""Go's decoders' verdicts on input our JSON decoder accepts: what a Go API server would
refuse while decoding a request body (a 400), in the words it uses.

``[]byte`` fields (a Secret's ``data``, a ConfigMap's ``binaryData``) are base64 in JSON, and
Go's ``encoding/base64`` decides which strings are acceptable: standard alphabet, padding
required, ``\\r`` and ``\\n`` skipped anywhere. Python's ``base64`` module is more lenient (and
reports no offset), so the check is written out here, step for step as Go's
``decodeQuantum``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["base64_error"]

_ALPHABET: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES: Final = frozenset(b"\r\n")
_PAD: Final = ord("=")


def _corrupt(offset: int) -> str:
    return f"illegal base64 data at input byte {offset}"


def base64_error(text: str) -> str | None:
    """None when Go's ``base64.StdEncoding`` decodes `text`, else its error message."""
    src = text.encode("utf-8", "surrogatepass")
    si = 0
    n = len(src)
    while si < n:
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return None
                return _corrupt(si - j)
            byte = src[si]
            si += 1
            if byte in _ALPHABET:
                j += 1
                continue
            if byte in _NEWLINES:
                continue
            if byte != _PAD or j in (0, 1):
                return _corrupt(si - 1)
            if j == 2:  # "==" expected; the first "=" is consumed
                while si < n and src[si] in _NEWLINES:
                    si += 1
                if si == n:
                    return _corrupt(n)
                if src[si] != _PAD:
                    return _corrupt(si - 1)
                si += 1
            while si < n and src[si] in _NEWLINES:
                si += 1
            return _corrupt(si) if si < n else None
    return None
