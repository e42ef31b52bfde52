"""The Kubernetes objects of a plan, by kind."""

from __future__ import annotations


def kinds(plan, kind: str) -> list[dict]:
    return [o for o in plan.kubernetes_objects() if o["kind"] == kind]
