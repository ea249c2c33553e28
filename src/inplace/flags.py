"""Command-line flag types every inplace process shares (outside the layers, like ``loop.py``).

A duration flag reads as upstream's components read theirs (Go's ``time.ParseDuration``:
``40s``, ``1m30s``, ``500ms``), and plain seconds (``12``) are accepted too.
"""

from __future__ import annotations

import argparse

from inplace.api.timestamps import parse_go_duration

__all__ = ["duration"]


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
