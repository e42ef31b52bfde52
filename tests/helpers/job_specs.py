"""What the job builders' tests render from: an image, and every pool of every shipped stack."""

from __future__ import annotations

from tests.conftest import STACKS, stack_config

IMAGE = "registry.example.com/team/train@sha256:" + "a" * 64


POOLS = [(s, p.name) for s in STACKS for p in stack_config(s).gpu_pools]
