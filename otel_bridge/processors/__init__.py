"""Processors: what happens to finished spans between the assembler and the exporters.

The sampler decides per trace what goes out (`TraceSampler`, tail sampling that keeps every
failure); the scrubber redacts secrets and applies the attribute allow/deny lists and the path
policy to every span and metric label (`Scrubber`). Both are pure: no I/O, no clock.
"""

from ._privacy import Scrubber, shannon_entropy
from ._sampling import TraceSampler
from ._scrubber_config import DEFAULT_CONTENT_MAX_CHARS, ScrubberConfig

__all__ = [
    "DEFAULT_CONTENT_MAX_CHARS",
    "Scrubber",
    "ScrubberConfig",
    "TraceSampler",
    "shannon_entropy",
]
