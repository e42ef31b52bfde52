"""`shared-data` from storage an existing cluster already has (storage.shared_data): a claim the
platform declares from the admin's ReadWriteMany StorageClass in every namespace jobs run in, or
the admin's own claim, which the platform mounts and never declares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.base import PlatformComponent
from components.context import StackContext
from components.storage.volumes import SharedData, declare_claim, shared_data_claim
from model.config.storage import SharedDataSettings


def existing_claim_report(claim: str, namespaces: Sequence[str]) -> dict[str, Any]:
    """The plan's word on an admin's claim: the platform cannot see it, so it says where it
    must be and how to look."""
    return {
        "existing_claim": claim,
        "must_exist_in": list(namespaces),
        "check": {
            ns: f"kubectl -n {ns} get pvc {claim} -o jsonpath='{{.status.phase}} "
            "{.status.accessModes}'  # must be Bound [ReadWriteMany]"
            for ns in namespaces
        },
    }


@dataclass(frozen=True)
class ClusterClassArgs:
    context: StackContext
    settings: SharedDataSettings
    # Every namespace jobs run in, the training namespace first.
    claim_namespaces: Sequence[str]
    after: Sequence[pulumi.Resource] = ()


class ClusterClassSharedData(PlatformComponent):
    """One `shared-data` claim of the cluster's class per job namespace; none for an existing
    claim, of which the plan states where it must exist."""

    PLANE = "storage"

    def __init__(
        self, name: str, args: ClusterClassArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, opts)
        settings, env = args.settings, args.context.env
        if settings.storage_class is None:
            self.outputs: dict[str, Any] = {
                "storage_shared_data": existing_claim_report(
                    str(settings.existing_claim), args.claim_namespaces
                )
            }
            self.register_outputs(self.outputs)
            return
        claims = [
            declare_claim(
                self,
                f"{env}-shared-data" + ("" if i == 0 else f"-in-{ns}"),
                shared_data_claim(ns, settings.size_gib, settings.storage_class),
                after=args.after,
                protect=args.context.protect,
            )
            for i, ns in enumerate(args.claim_namespaces)
        ]
        # The class's throughput is the admin's: the self-test has no figure to hold it to.
        self.outputs = SharedData(claims[0], None).outputs()
        self.register_outputs(self.outputs)
