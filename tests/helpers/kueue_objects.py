"""Kueue's objects a shipped stack's plan declares, by kind and name."""

from __future__ import annotations

from tests.conftest import planned

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"


def objects(stack: str, kind: str, api: str = KUEUE) -> dict[str, dict]:
    """Name -> inputs of every object of `kind` (of `api`, Kueue's by default) in the plan."""
    return {r.inputs["metadata"]["name"]: r.inputs for r in planned(stack).of_type(f"{api}:{kind}")}
