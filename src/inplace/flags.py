"""Command-line flag types every inplace process shares (outside the layers, like ``loop.py``).

A duration flag reads as upstream's components read theirs (Go's ``time.ParseDuration``:
``40s``, ``1m30s``, ``500ms``), and plain seconds (``12``) are accepted too. A CPU or memory
flag is a Kubernetes quantity (``500m``, ``2``; ``512Mi``, ``4Gi``).
"""

from __future__ import annotations

import argparse

from inplace.api.quantity import Quantity, QuantityError
from inplace.api.timestamps import parse_go_duration

__all__ = ["cpu_millicores", "duration", "memory_bytes"]


def duration(text: str) -> float:
    """A duration flag in seconds; never negative. argparse shows the error with the flag."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_go_duration(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid duration {text!r} (e.g. 40s, 1m30s)"
            ) from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must not be negative")
    return seconds


def cpu_millicores(text: str) -> int:
    """A CPU quantity flag (``500m``, ``2``) in thousandths of a CPU."""
    try:
        return Quantity.parse(text).milli_value()
    except QuantityError as exc:
        raise argparse.ArgumentTypeError(f"invalid cpu quantity {text!r}: {exc}") from None


def memory_bytes(text: str) -> int:
    """A memory quantity flag (``512Mi``, ``4Gi``) in bytes."""
    try:
        return Quantity.parse(text).value()
    except QuantityError as exc:
        raise argparse.ArgumentTypeError(f"invalid memory quantity {text!r}: {exc}") from None
