"""Settings the tests share beyond the named presets."""

from __future__ import annotations

import dataclasses

from inplace.controllers.vpa.settings import HOUR, variant

LEARNING_JUMPS = dataclasses.replace(
    variant("inplace")[0], memory_jump_margin=1.25, memory_jump_window=HOUR / 2
)
"""The ``inplace`` recommender with the learned jump margin on (what a VPA of Guaranteed
pods, which get no limit headroom, keeps room for bursts with)."""
