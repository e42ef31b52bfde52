"""The `shared-data` claims a plan declares, and the raw sections of a shipped stack file, as the
storage tests read them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from components.storage.volumes import SHARED_DATA
from model.config.loading import read_yaml
from model.stacks import ROOT

PVC = "kubernetes:core/v1:PersistentVolumeClaim"


def stack_config(stack: str) -> dict:
    doc = read_yaml(ROOT / "stacks" / f"Pulumi.{stack}.yaml", stack)
    return {k.split(":", 1)[1]: v for k, v in doc["config"].items()}


def claims_of(plan) -> dict[str, dict]:
    """namespace -> its `shared-data` claim."""
    found = [r.inputs for r in plan.of_type(PVC) if r.inputs["metadata"]["name"] == SHARED_DATA]
    return {c["metadata"]["namespace"]: c for c in found}


def training_namespace(stack: str) -> str:
    return stack_config(stack).get("namespaces", {}).get("training", "training")


def claim_of(plan):
    """The training namespace's claim."""
    return claims_of(plan)[training_namespace(plan.stack)]


# `shared-data` on an existing cluster without Ceph: a ReadWriteMany class it already has, here
# the default class name of nfs-subdir-external-provisioner's chart (values.yaml,
# storageClass.name: nfs-client).
RWX_CLASS = "nfs-client"
RWX_STORAGE = {"shared_data": {"storage_class": RWX_CLASS}}


def mounted_claims(node: Any) -> Iterator[str]:
    """Every claimName under `node`, whatever holds the pod template."""
    if isinstance(node, dict):
        claim = node.get("persistentVolumeClaim")
        if isinstance(claim, dict) and "claimName" in claim:
            yield claim["claimName"]
        for value in node.values():
            yield from mounted_claims(value)
    elif isinstance(node, list):
        for value in node:
            yield from mounted_claims(value)
