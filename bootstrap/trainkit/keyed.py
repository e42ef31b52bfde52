"""Random draws keyed by position rather than taken from a running generator: every draw of a
sample (crop, flip, noise, timestep) is a function of (seed, rank, position), so the step and
the data position in a checkpoint restore all of it, and a resumed run draws what the
uninterrupted one would have."""

from __future__ import annotations

import hashlib

import torch


def keyed_generator(*key: int) -> torch.Generator:
    """A generator seeded by a digest of `key`: distinct keys give unrelated streams."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


def keyed_permutation(size: int, *key: int) -> list[int]:
    """A permutation of range(size) drawn from `key`'s generator."""
    return torch.randperm(size, generator=keyed_generator(*key)).tolist()
