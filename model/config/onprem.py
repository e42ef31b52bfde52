"""The data plane's config on an existing cluster: the admin's GPU nodes, described as pools.

The platform declares no node there; it needs to know what each kind of GPU node has (GPU
model and count, fabric) to configure the GPU Operator, the fabric, the queues and the jobs.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from model.catalog import MIG_PROFILES
from model.config.base import DnsLabel, FieldProblem, Int, KubernetesLabels, Settings, shaped
from model.config.bounds import MAX_CLUSTER_NODES, MAX_GPU_MEMORY_GIB
from model.config.nodes import GpuAllocation, GpuSharingSettings, gpu_allocation_field
from model.config.references import GPU_POOL, names

# GPU models with the memory sizes NVIDIA sells them in (GB, as the datasheets and the MIG
# profile names count them).
ONPREM_GPU_MEMORY_GIB: dict[str, tuple[int, ...]] = {
    "A100": (40, 80),
    "H100": (80, 94),
    "H200": (141,),
    "B200": (180,),
    "L40S": (48,),
    "A10G": (24,),
    # The GPUs of AWS's g6, g4dn and p3dn, also sold for admins' own racks (V100: 16 or 32 GB).
    "L4": (24,),
    "T4": (16,),
    "V100": (16, 32),
}


# The add-ons an existing cluster may already run, by the config key that switches each.
EXISTING_ADDONS = (
    "gpu_operator",
    "network_operator",
    "kube_prometheus_stack",
    "keda",
    "kueue",
    "jobset",
    "dra_driver",
)
AddonSource = Literal["install", "existing"]


class ExistingAddonsSettings(Settings):
    """Per add-on: `install` (the platform's pinned Helm release) or `existing` (one the cluster
    already runs). With `existing` the platform declares no release for it, still declares what
    it owns on top (queues, monitors, rules, dashboards, autoscalers), and the plan lists the
    CRDs and settings the admin must confirm (docs/operations.md, "Using add-ons a cluster
    already runs")."""

    gpu_operator: AddonSource = Field(
        "install", description="The NVIDIA GPU Operator (its ClusterPolicy and DCGM exporter)."
    )
    network_operator: AddonSource = Field(
        "install",
        description="The NVIDIA Network Operator (its NicClusterPolicy: RDMA device plugin, "
        "Multus, CNI plugins, nv-ipam), used where RDMA pools or Ceph Multus networks need it.",
    )
    kube_prometheus_stack: AddonSource = Field(
        "install",
        description="Prometheus Operator, Prometheus, Alertmanager and Grafana; with `existing`, "
        "existing.kube_prometheus_stack says where its services are.",
    )
    keda: AddonSource = Field(
        "install", description="KEDA, used where workload_autoscaling is enabled."
    )
    kueue: AddonSource = Field("install", description="Kueue, used where scheduling is enabled.")
    jobset: AddonSource = Field(
        "install", description="JobSet, which runs every job the platform renders."
    )
    dra_driver: AddonSource = Field(
        "install",
        description="NVIDIA's DRA driver for GPUs (chart dra-driver-nvidia-gpu), used where a "
        "pool has `gpu_allocation: dra`. With `existing` the plan lists what the cluster's "
        "driver must serve (its DeviceClasses, CRDs and version) and the check that it never "
        "serves GPUs on a node the device plugin also serves.",
    )

    def existing(self) -> list[str]:
        """The add-ons switched to `existing`, in EXISTING_ADDONS order."""
        return [a for a in EXISTING_ADDONS if getattr(self, a) == "existing"]


class ExistingKubePrometheusStackSettings(Settings):
    """Where the cluster's own kube-prometheus-stack answers (existing.addons.kube_prometheus_stack:
    existing), in namespaces.monitoring. The chart names its Services after its release
    (`<fullname>-prometheus`, `<fullname>-grafana`; fullname is the release name when that
    holds `kube-prometheus-stack`, else `<release>-kube-prometheus-stack` cut to 26
    characters): `kubectl -n <namespace> get services` shows them. The defaults are a release
    named kube-prometheus-stack."""

    prometheus_service: DnsLabel = Field(
        "kube-prometheus-stack-prometheus",
        description="Prometheus's Service, which KEDA's triggers, the self-test and "
        "`python -m jobs status` query.",
    )
    prometheus_port: Int = Field(
        9090, ge=1, le=65535, description="Prometheus's Service port (the chart's 9090)."
    )
    grafana_service: DnsLabel = Field(
        "kube-prometheus-stack-grafana",
        description="Grafana's Service, which the plan names for `kubectl port-forward`.",
    )
    grafana_datasource_uid: Annotated[
        str, shaped(r"[a-zA-Z0-9._-]{1,40}", "a Grafana uid: 1 to 40 letters, digits, . _ -")
    ] = Field(
        "prometheus",
        description="uid of Grafana's Prometheus data source, which every panel of the "
        "platform's dashboards names (the chart's grafana.sidecar.datasources.uid).",
    )


class OnPremGpuPoolSettings(Settings):
    """One kind of GPU node in an existing cluster, selected by labels the nodes already carry."""

    name: Annotated[DnsLabel, names(GPU_POOL)] = Field(
        description="Short name, unique in the stack; names the pool."
    )
    node_selector: KubernetesLabels = Field(
        min_length=1,
        description="Labels that select exactly this pool's nodes, e.g. "
        "{nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB} or a label of your own.",
    )
    gpu_model: Literal[tuple(ONPREM_GPU_MEMORY_GIB)] = Field(  # type: ignore[valid-type]
        description="GPU model of every node of the pool."
    )
    gpu_memory_gib: Int = Field(
        ge=1,
        le=MAX_GPU_MEMORY_GIB,
        description="Memory of one GPU in GB, as sold (A100: 40 or 80).",
    )
    gpus_per_node: Int = Field(ge=1, le=16, description="GPUs in each node.")
    nodes: Int = Field(
        ge=1,
        le=MAX_CLUSTER_NODES,
        description="Nodes in the pool; bounds what its queues can admit.",
    )
    fabric: Literal["infiniband", "roce", "tcp"] = Field(
        "tcp",
        description="How the pool's nodes talk to each other for collectives: `infiniband` or "
        "`roce` through the NVIDIA Network Operator, `tcp` over the pod network.",
    )
    cpus_per_gpu: Int | None = Field(
        None,
        ge=1,
        le=1024,
        description="Whole CPUs a training pod takes per GPU: the node's allocatable CPUs "
        "(its kubelet's reserved CPUs taken out) less what its DaemonSets request, over its "
        "GPUs, floored. Pods then run in the Guaranteed QoS class and, under the kubelet's "
        "static CPU manager, on CPUs of their own. Unset: pods request no CPU and run "
        "Burstable on the node's shared CPUs (the self-test warns).",
    )
    gpu_sharing: GpuSharingSettings = Field(default_factory=GpuSharingSettings)
    gpu_allocation: GpuAllocation = gpu_allocation_field()

    @model_validator(mode="after")
    def _known_gpu(self) -> OnPremGpuPoolSettings:
        sizes = ONPREM_GPU_MEMORY_GIB[self.gpu_model]
        if self.gpu_memory_gib not in sizes:
            raise FieldProblem(
                "gpu_memory_gib",
                f"{self.gpu_model} is sold with {' or '.join(map(str, sizes))} GB, "
                f"not {self.gpu_memory_gib}",
            )
        if self.gpu_sharing.mode == "mig" and (self.gpu_model, self.gpu_memory_gib) not in (
            MIG_PROFILES
        ):
            raise FieldProblem(
                "gpu_sharing.mode",
                f"mig needs A100, H100, H200 or B200 GPUs with known MIG profiles; "
                f"{self.gpu_model} {self.gpu_memory_gib} GB has none here",
            )
        return self
