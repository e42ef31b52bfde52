"""Micro-batches decoded ahead of the step by worker processes, in an order that stays a pure
function of the position: the sampler hands out positions start, start + 1, ... and a
`PositionDataset` makes the sample at a position from draws keyed by it, so the number of
workers, their timing and a resume change nothing about what a step trains on.

Samples stay uint8 until they reach the device: a quarter of float32's bytes through the
workers' queues, pinned memory and the host-to-device copy (`on_device`)."""

from __future__ import annotations

import itertools
from typing import Protocol

import torch
from torch.utils.data import DataLoader


class PositionDataset(Protocol):
    """The sample at a position of a rank's stream, from draws keyed by that position."""

    def __getitem__(self, position: int): ...


# Batches each worker prepares ahead: with 2 workers, 8 micro-batches wait for the step.
PREFETCH = 4


def keyed_loader(
    dataset: PositionDataset, start: int, batch_size: int, workers: int, pin_memory: bool
) -> DataLoader:
    """Batches of `batch_size` consecutive positions from `start`, for ever, in order (a
    DataLoader keeps its sampler's order whatever worker finishes first)."""
    return DataLoader(
        dataset,  # type: ignore[arg-type] - any object with __getitem__ is a map-style dataset
        batch_size=batch_size,
        sampler=itertools.count(start),
        num_workers=workers,
        pin_memory=pin_memory,
        prefetch_factor=PREFETCH if workers else None,
        persistent_workers=workers > 0,
    )


def on_device(images: torch.Tensor, device: torch.device) -> torch.Tensor:
    """uint8 images as float in [0, 1] on `device`; the copy overlaps compute from pinned memory."""
    return images.to(device, non_blocking=True).float().div_(255.0)
