"""Pinned versions: Kubernetes releases, EKS managed add-ons, Helm charts and images.

One table per kind of version, so that an upgrade is a one-line diff that review can see.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from contract import node_join

# Kubernetes minors that EKS serves (standard or extended support) on the date below, and for
# which kubernetes-validate ships a schema (1.37.0 ships 1.33 to 1.37). Oldest first.
KUBERNETES_VERSIONS_CHECKED_ON = date(2026, 11, 30)
SUPPORTED_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.33", "1.34", "1.35", "1.36")
# The oldest minor with months of standard support left: 1.34 leaves it two days after the date
# above, and 1.36 is new enough that the platform's charts have had little time on it.
DEFAULT_KUBERNETES_VERSION = "1.35"

# EKS end of standard support per minor (EKS user guide, "Kubernetes version lifecycle", as
# shared/PINS.md records it). After it a cluster runs in extended support, billed extra, and EKS
# refuses to keep it there unless the cluster's upgrade policy says EXTENDED. None: not announced.
END_OF_STANDARD_SUPPORT: dict[str, date | None] = {
    "1.33": date(2026, 7, 29),
    "1.34": date(2026, 12, 2),
    "1.35": date(2027, 3, 27),
    "1.36": None,
}


def in_extended_support(minor: str, today: date) -> bool:
    """Whether EKS serves `minor` only under extended support on `today`."""
    ends = END_OF_STANDARD_SUPPORT[minor]
    return ends is not None and today > ends


# Add-on builds as `aws eks describe-addon-versions` listed them for each minor in August 2026.
@dataclass(frozen=True)
class ManagedAddon:
    """An EKS managed add-on pinned per Kubernetes minor."""

    name: str
    versions: dict[str, str]
    # Add-ons that schedule pods (coredns, the EBS CSI controller) stay DEGRADED until nodes
    # exist, and `pulumi up` waits on them; the rest must exist before the first node joins.
    needs_nodes: bool
    # Pod Identity: the service account the add-on runs as and the AWS managed policy it needs.
    service_account: str | None = None
    managed_policy_arn: str | None = None
    # The add-on's `configuration_values`, checked by EKS against the add-on's own schema.
    configuration: dict | None = None
    # Build -> where it was seen offered. A pinned build missing here is unconfirmed: the
    # plan's add-on report fails it and the plan warns, since EKS refuses a build it does not
    # list only when `pulumi up` creates the add-on, after the cluster.
    confirmed: dict[str, str] = field(default_factory=dict)


def confirm_command(name: str, minor: str) -> str:
    return f"aws eks describe-addon-versions --addon-name {name} --kubernetes-version {minor}"


# Where the builds below were seen. LISTED is this file's own record from when they were
# pinned; PINS_1_36 is AWS's 1.36 add-on tables as shared/PINS.md quotes them (2026-11-30).
LISTED = "`aws eks describe-addon-versions` per minor, August 2026 (recorded when pinned)"
PINS_1_36 = "EKS user guide add-on version tables for 1.36 (shared/PINS.md, 2026-11-30)"


def _same_for_all(version: str) -> dict[str, str]:
    return dict.fromkeys(SUPPORTED_KUBERNETES_VERSIONS, version)


# vpc-cni v1.22.4-eksbuild.3 is also the 1.36 build in AWS's table (shared/PINS.md). PINS.md
# names no 1.36 build for the Pod Identity agent or the EBS CSI driver: they keep the build they
# run on 1.35, which AWS lists for every supported minor.
# In declaration order: the Pod Identity agent first, since other add-ons get credentials
# through it.
MANAGED_ADDONS: tuple[ManagedAddon, ...] = (
    ManagedAddon(
        name="eks-pod-identity-agent",
        versions=_same_for_all("v1.3.10-eksbuild.3"),
        needs_nodes=False,
        confirmed={"v1.3.10-eksbuild.3": LISTED},
    ),
    ManagedAddon(
        name="vpc-cni",
        versions=_same_for_all("v1.22.4-eksbuild.3"),
        needs_nodes=False,
        service_account="aws-node",
        managed_policy_arn="arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        # Without it the CNI enforces no NetworkPolicy, and the Pushgateway's is inert (EKS user
        # guide, "Restrict Pod network traffic with Kubernetes network policies").
        configuration={"enableNetworkPolicy": "true"},
        confirmed={"v1.22.4-eksbuild.3": f"{PINS_1_36}; 1.33-1.35: {LISTED}"},
    ),
    ManagedAddon(
        name="kube-proxy",
        versions={
            "1.33": "v1.33.10-eksbuild.13",
            "1.34": "v1.34.6-eksbuild.13",
            "1.35": "v1.35.3-eksbuild.13",
            "1.36": "v1.36.0-eksbuild.14",
        },
        needs_nodes=False,
        confirmed={
            "v1.33.10-eksbuild.13": LISTED,
            "v1.34.6-eksbuild.13": LISTED,
            "v1.35.3-eksbuild.13": LISTED,
            "v1.36.0-eksbuild.14": PINS_1_36,
        },
    ),
    ManagedAddon(
        name="coredns",
        versions={
            "1.33": "v1.12.4-eksbuild.18",
            "1.34": "v1.13.2-eksbuild.11",
            "1.35": "v1.14.3-eksbuild.3",
            "1.36": "v1.14.3-eksbuild.3",
        },
        needs_nodes=True,
        confirmed={
            "v1.12.4-eksbuild.18": LISTED,
            "v1.13.2-eksbuild.11": LISTED,
            "v1.14.3-eksbuild.3": f"{PINS_1_36}; 1.35: {LISTED}",
        },
    ),
    ManagedAddon(
        name="aws-ebs-csi-driver",
        versions=_same_for_all("v1.64.0-eksbuild.1"),
        needs_nodes=True,
        service_account="ebs-csi-controller-sa",
        managed_policy_arn="arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy",
        confirmed={"v1.64.0-eksbuild.1": LISTED},
    ),
    # Sets the AcceleratedHardwareReady, NetworkingReady, KernelReady, StorageReady and
    # ContainerRuntimeReady conditions that EKS node auto repair acts on. Build v1.7.1-eksbuild.1
    # is the one a cluster exported to Terraform ran in 2026 (the agent's chart at v1.7.0 pins
    # image v1.7.0-eksbuild.1); no `describe-addon-versions` listing or AWS table for 1.33-1.36
    # could confirm it, so it has no `confirmed` entry and every AWS plan fails it in its
    # add-on report until someone lists it (confirm_command) and records where.
    ManagedAddon(
        name="eks-node-monitoring-agent",
        versions=_same_for_all("v1.7.1-eksbuild.1"),
        # A DaemonSet: DEGRADED until nodes exist.
        needs_nodes=True,
        # The agent's chart (aws/eks-node-monitoring-agent, values.yaml): the agent DaemonSet
        # tolerates every taint (`operator: Exists`), but its DCGM server DaemonSet, which runs
        # only on NVIDIA instance types, tolerates none, so the GPU taint must be tolerated here
        # or the agent's DCGM diagnostics never run on the GPU nodes.
        configuration={
            "dcgmAgent": {
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    # The agent's own DCGM diagnostics (its node conditions) run on a node
                    # still held by the node-join check. The check's own dcgmi diag asks the
                    # GPU Operator's engine instead: this one lacks DCGM's CUDA plugins
                    # (components/data/gpu_operator.py, `dcgm`).
                    {"key": node_join.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                ]
            }
        },
    ),
)


@dataclass(frozen=True)
class Chart:
    """An upstream Helm chart, pinned."""

    name: str
    repository: str
    version: str


# Upstream charts the platform installs, pinned; the custom resources they serve are validated
# against the schemas of these releases (shared/crds/).
CHARTS: dict[str, Chart] = {
    "cluster-autoscaler": Chart(
        "cluster-autoscaler", "https://kubernetes.github.io/autoscaler", "9.59.0"
    ),
    # Storage plane. The FSx CSI chart 1.17.0 ships driver v1.9.0. Rook v1.20 no longer
    # installs Ceph CSI drivers itself: its chart installs ceph-csi-operator (subchart 1.0.4),
    # and the drivers come from ceph-csi-drivers, the version Rook v1.20.6's own Helm tests pin.
    "aws-fsx-csi-driver": Chart(
        "aws-fsx-csi-driver", "https://kubernetes-sigs.github.io/aws-fsx-csi-driver", "1.17.0"
    ),
    "rook-ceph": Chart("rook-ceph", "https://charts.rook.io/release", "v1.20.6"),
    "ceph-csi-drivers": Chart(
        "ceph-csi-drivers", "https://ceph.github.io/ceph-csi-operator", "1.0.4"
    ),
    # Fabric. 0.5.10 and later know p6-b200 (shared/FACTS.md).
    "aws-efa-k8s-device-plugin": Chart(
        "aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts", "v0.5.30"
    ),
    # GPU software. v26.7.0 runs device plugin v0.20.0, mig-manager v0.15.0 and dcgm-exporter
    # 4.6.0-4.8.3 (shared/PINS.md, "GPU Operator").
    "gpu-operator": Chart("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", "v26.7.0"),
    # NVIDIA's DRA driver for GPUs, for pools with `gpu_allocation: dra`: OCI (renamed from
    # nvidia-dra-driver-gpu), one image registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu
    # :v0.4.1 for every component (shared/PINS.md, "NVIDIA DRA driver for GPUs (0.4.1)").
    "dra-driver-nvidia-gpu": Chart(
        "dra-driver-nvidia-gpu", "oci://registry.k8s.io/dra-driver-nvidia/charts", "0.4.1"
    ),
    # Kueue publishes its chart only to an OCI registry (shared/PINS.md); its custom resources
    # are validated against v0.19.2's schemas (shared/crds/kueue.x-k8s.io).
    "kueue": Chart("kueue", "oci://registry.k8s.io/kueue/charts", "0.19.2"),
    # The controller every job the platform renders runs under (one JobSet per job): OCI only,
    # and the version Kueue 0.19.2's go.mod requires (shared/PINS.md, "JobSet (0.12.0)"). Its one
    # CRD sits in the chart's crds/ folder, which Helm installs once and never upgrades
    # (docs/scheduling.md, "JobSet").
    "jobset": Chart("jobset", "oci://registry.k8s.io/jobset/charts", "0.12.0"),
    # Workload autoscaling. The chart installs its own copies of KEDA's CRDs (shared/crds/README.md:
    # they add bounds to the HPA stabilisation windows, 0 to 3600 s).
    "keda": Chart("keda", "https://kedacore.github.io/charts", "2.20.2"),
    # On-prem fabric: the operator only; its NicClusterPolicy is ours (shared/PINS.md).
    "network-operator": Chart("network-operator", "https://helm.ngc.nvidia.com/nvidia", "26.4.1"),
    # Prometheus (operator), Alertmanager, Grafana, kube-state-metrics and node-exporter.
    "kube-prometheus-stack": Chart(
        "kube-prometheus-stack", "https://prometheus-community.github.io/helm-charts", "88.5.3"
    ),
    # Holds what the periodic self-test pushes until Prometheus scrapes it (shared/PINS.md).
    "prometheus-pushgateway": Chart(
        "prometheus-pushgateway", "https://prometheus-community.github.io/helm-charts", "3.8.0"
    ),
}

# The digests review trusts: each chart version `make charts-lock` recorded from its repository
# (the pins, and every version a stack file overrides one to). `make charts` pulls only these,
# and a stack may override a chart only to a version recorded here (model/config/charts.py).
CHART_LOCK = Path(__file__).with_name("charts.lock.json")


def read_chart_lock(path: Path | None = None) -> dict:
    """The lock as written: {"note": ..., "charts": {chart name: {version: entry}}}, each entry
    the version's repository, sha256 and the date it was recorded."""
    path = path or CHART_LOCK
    return json.loads(path.read_text()) if path.is_file() else {"charts": {}}


def locked_versions(chart_key: str) -> dict[str, dict[str, str]]:
    """Every version of the chart the lock records, from the chart's pinned repository."""
    chart = CHARTS[chart_key]
    entries = read_chart_lock().get("charts", {}).get(chart.name, {})
    return {v: e for v, e in entries.items() if e.get("repository") == chart.repository}


# Charts a stack may not override (`charts`), and why: another pinned fact is tied to the
# chart's release, and an override would keep the fact of the pin beside the chart of another.
# A bump of one of these is a change to this file, made for every stack at once.
OVERRIDE_REFUSED: dict[str, str] = {
    "network-operator": "the NicClusterPolicy's images are the ones network-operator 26.4.1 "
    "deploys (NETWORK_OPERATOR_IMAGES: DOCA driver doca3.4.1-26.04-1.1.0.0-1, the "
    "network-operator-v26.4.1 component images)",
    "rook-ceph": "the Ceph image (CEPH_IMAGE, quay.io/ceph/ceph:v20.2.4) and the "
    "ceph-csi-drivers chart (1.0.4) are the ones Rook v1.20.6 deploys and tests",
    "ceph-csi-drivers": "it is the version Rook v1.20.6's own Helm tests pin beside "
    "ceph-csi-operator 1.0.4, the rook-ceph chart's subchart",
    "aws-efa-k8s-device-plugin": "its image tag is pinned beside the chart "
    "(EFA_DEVICE_PLUGIN_IMAGE_TAG v0.5.20, the tag chart v0.5.30 ships)",
    "prometheus-pushgateway": "its image tag is pinned beside the chart "
    "(PUSHGATEWAY_IMAGE_TAG v1.11.3, chart 3.8.0's appVersion)",
    "dra-driver-nvidia-gpu": "the MIG DeviceClasses select by the device attributes driver "
    "v0.4.1 publishes, and Kueue's device-class mappings name the DeviceClasses chart 0.4.1 "
    "renders (model/dra.py); its CRDs sit in the chart's crds/, which Helm never upgrades",
}

# The oldest version a stack may override a chart to, and why: what the platform renders
# needs at least that release.
OVERRIDE_FLOORS: dict[str, tuple[str, str]] = {
    # kubernetes-sigs/kueue v0.19.2 go.mod requires sigs.k8s.io/jobset v0.12.0 (shared/PINS.md,
    # "JobSet (0.12.0)"), and the platform's JobSets set failurePolicy fields of v0.10.0
    # (infra/existing_addons.JOBSET_FIELDS_SINCE).
    "jobset": ("0.12.0", "Kueue 0.19.2 requires JobSet 0.12.0 (its go.mod)"),
}


def version_key(version: str) -> tuple[int, ...]:
    """`v0.19.2` -> (0, 19, 2): the numeric release of a chart version, for ordering;
    a pre-release or build suffix (`-rc.1`, `+1`) is left out."""
    core = version.removeprefix("v").split("-", 1)[0].split("+", 1)[0]
    return tuple(int(part) for part in core.split(".") if part.isdigit())


# Each pinned chart's `kubeVersion`, the literal of its Chart.yaml at the pin (the packaged
# chart, ../shared/helm/<chart>-<version>.tgz); a chart without one is absent. Helm refuses to
# install a chart whose kubeVersion the cluster's version does not satisfy (Helm docs, "The
# Chart.yaml File", "The kubeVersion field").
CHART_KUBE_VERSIONS: dict[str, str] = {
    "aws-fsx-csi-driver": ">=1.20.0-0",
    "dra-driver-nvidia-gpu": ">=1.32.0-0",
    "gpu-operator": ">= 1.16.0-0",
    "keda": ">=v1.23.0-0",
    "kube-prometheus-stack": ">=1.25.0-0",
    "network-operator": ">= 1.21.0-0",
}


def chart_floor(chart_key: str) -> str | None:
    """The oldest Kubernetes minor a pinned chart's kubeVersion admits ("1.25"), or None: the
    chart states no kubeVersion. Every constraint above is a single `>= X.Y.Z-0`."""
    constraint = CHART_KUBE_VERSIONS.get(chart_key)
    return None if constraint is None else kube_floor(constraint)


def kube_floor(constraint: str) -> str | None:
    """The minor a kubeVersion of one lower bound (`>= 1.16.0-0`, `>=v1.23.0-0`) admits first,
    or None for any other constraint (a range, an upper bound), which this does not read."""
    match = re.fullmatch(
        r">=\s*v?([0-9]+)\.([0-9]+)(\.[0-9]+)?(-[0-9A-Za-z.-]+)?", constraint.strip()
    )
    return None if match is None else f"{match.group(1)}.{match.group(2)}"


def minor_tuple(minor: str) -> tuple[int, int]:
    major, rest = minor.split(".")
    return int(major), int(rest)


# Chart values the platform sets whole, replacing the chart's own default, by chart: each written
# against the pin's default and kept from it but for what the platform means to change (where).
# Another version's chart with another default would lose the new defaults without a word, so
# the plan refuses an override whose default differs (plan/render.py).
WHOLE_VALUES: dict[str, dict[tuple[str, ...], str]] = {
    "kueue": {
        ("managerConfig", "controllerManagerConfigYaml"): (
            "components/scheduling/kueue.py manager_config"
        )
    },
}

# CRDs the platform applies from a chart release's tag that the chart itself does not render:
# the cluster-autoscaler's ProvisioningRequest CRD (components/data/cluster_autoscaler.py).
CRDS_BESIDE_CHART: dict[str, tuple[str, ...]] = {"cluster-autoscaler": ("autoscaling.x-k8s.io",)}

# The Pushgateway chart 3.8.0's appVersion (its Chart.yaml; the chart's default `image.tag` is
# empty and falls back to it), set explicitly so a chart bump cannot change the server unseen.
PUSHGATEWAY_IMAGE_TAG = "v1.11.3"
# The Pushgateway sweep's interpreter (components/observability/pushgateway_sweep.py, standard
# library only): the official Python image, a tag docker-library/docs python/README.md lists
# (commit 56bec7ffebdc: `3.14.1-slim-trixie`).
PUSHGATEWAY_SWEEP_IMAGE = "docker.io/library/python:3.14.1-slim-trixie"
# Built-in APIs that the pinned charts' templates test with `.Capabilities.APIVersions.Has`
# (shared/helm/README.md) and helm-python-sdk's default list lacks, with the minor that first
# serves each by default. Kubernetes v1.34 release notes: Dynamic Resource Allocation graduates
# to GA, `resource.k8s.io/v1` (gpu-operator templates/validations.yaml asks for DeviceClass).
BUILTIN_APIS_SINCE: dict[str, str] = {
    "resource.k8s.io/v1": "1.34",
    "resource.k8s.io/v1/DeviceClass": "1.34",
}

# The EFA device plugin image chart v0.5.30 ships (its values.yaml `image.tag`), set explicitly
# so a chart bump cannot change the plugin unseen.
EFA_DEVICE_PLUGIN_IMAGE_TAG = "v0.5.20"

# cluster-autoscaler follows the cluster's minor; the chart's default image follows its own.
CLUSTER_AUTOSCALER_IMAGE_TAGS: dict[str, str] = {
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
    "1.35": "v1.35.2",
    "1.36": "v1.36.1",
}

# The pause image a pre-puller's pod keeps running (components/selftest/prepull.py): the
# version kubeadm pins for the sandbox (kubernetes/kubernetes v1.35
# cmd/kubeadm/app/constants/constants.go, `PauseVersion = "3.10.1"`).
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"

# The Ceph release Rook v1.20.6 deploys in its example CephCluster (deploy/examples/cluster.yaml).
CEPH_IMAGE = "quay.io/ceph/ceph:v20.2.4"


@dataclass(frozen=True)
class Image:
    """A container image as the NicClusterPolicy names one: repository, image, version."""

    repository: str
    image: str
    version: str

    def spec(self) -> dict[str, str]:
        return {"repository": self.repository, "image": self.image, "version": self.version}


# What network-operator 26.4.1 deploys for each NicClusterPolicy component: its
# hack/release.yaml at tag v26.4.1 (Mofed, RdmaSharedDevicePlugin, SriovDevicePlugin,
# CniPlugins, Multus, Ipoib, nvIpam), the same images its example/crs/*nicclusterpolicy* use.
_MELLANOX = "nvcr.io/nvidia/mellanox"
_RELEASE = "network-operator-v26.4.1"
NETWORK_OPERATOR_IMAGES: dict[str, Image] = {
    "ofedDriver": Image(_MELLANOX, "doca-driver", "doca3.4.1-26.04-1.1.0.0-1"),
    "rdmaSharedDevicePlugin": Image(_MELLANOX, "k8s-rdma-shared-dev-plugin", _RELEASE),
    "sriovDevicePlugin": Image(_MELLANOX, "sriov-network-device-plugin", _RELEASE),
    "cniPlugins": Image(_MELLANOX, "plugins", _RELEASE),
    "multus": Image(_MELLANOX, "multus-cni", _RELEASE),
    "ipoib": Image(_MELLANOX, "ipoib-cni", _RELEASE),
    "nvIpam": Image(_MELLANOX, "nvidia-k8s-ipam", _RELEASE),
}


def addon_build_report(minor: str) -> dict[str, dict[str, str]]:
    """The plan's add-on report: each managed add-on's build on `minor`, and where it was
    confirmed, or FAIL with the command that would confirm it."""
    report = {}
    for addon in MANAGED_ADDONS:
        build = addon.versions[minor]
        where = addon.confirmed.get(build)
        status = (
            f"confirmed: {where}"
            if where
            else f"FAIL: unconfirmed; `{confirm_command(addon.name, minor)}` must list {build}"
        )
        report[addon.name] = {"build": build, "status": status}
    return report


# The account of Amazon EKS's image registry in each region this project knows
# (model/config/regions.py): the registry EKS replicates its add-on images to, the EFA device
# plugin's among them, in each region, so that nodes pull from their own region. EKS user
# guide, "View Amazon container image registries for Amazon EKS add-ons"
# (docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html; awsdocs/amazon-eks-user-guide
# `latest/ug/workloads/add-ons-images.adoc` at commit 1cc6ebb4a163). The registry is
# `<account>.dkr.ecr.<region>.amazonaws.com` in each of these.
EKS_IMAGE_ACCOUNTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
            "ap-southeast-1", "ap-southeast-2", "ca-central-1", "eu-central-1", "eu-north-1",
            "eu-west-1", "eu-west-2", "eu-west-3", "sa-east-1", "us-east-1", "us-east-2",
            "us-west-1", "us-west-2",
        ),
        "602401143452",
    ),
    "af-south-1": "877085696533",
    "ap-south-2": "900889452093",
    "ap-southeast-3": "296578399912",
    "ap-southeast-4": "491585149902",
    "eu-central-2": "900612956339",
    "eu-south-1": "590381155156",
    "eu-south-2": "455263428931",
    "il-central-1": "066635153087",
    "me-central-1": "759879836304",
    "us-gov-east-1": "151742754352",
    "us-gov-west-1": "013241004608",
}  # fmt: skip


def eks_image_registry(region: str) -> str:
    """Amazon EKS's image registry in `region`, e.g. 602401143452.dkr.ecr.eu-west-1.amazonaws.com.
    Every region the config model accepts has one (tests/model/test_versions.py checks the tables
    agree), so a KeyError here is a region added to model/config/regions.py without its row."""
    return f"{EKS_IMAGE_ACCOUNTS[region]}.dkr.ecr.{region}.amazonaws.com"


# Every chart value that names an image's registry, as the pinned chart's values.yaml sets it
# (shared/charts/<chart>/<version>/values.yaml; kueue's as its release step packages it,
# shared/helm/README.md). A mirror rewrites each (components/registry_mirror.py):
# `REGISTRY_KEY` values take the registry host alone and each chart's templates put it before
# every image it renders (kube-prometheus-stack's `global.imageRegistry` reaches its subcharts'
# images too, Helm passing `global` down); the others name a repository with its registry.
REGISTRY_KEY = ""
CHART_IMAGE_VALUES: dict[str, dict[str, str]] = {
    "cluster-autoscaler": {"image.repository": "registry.k8s.io/autoscaling/cluster-autoscaler"},
    "aws-efa-k8s-device-plugin": {
        "image.repository": (
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
        )
    },
    "aws-fsx-csi-driver": {
        "image.repository": "public.ecr.aws/fsx-csi-driver/aws-fsx-csi-driver",
        "sidecars.livenessProbe.image.repository": "public.ecr.aws/csi-components/livenessprobe",
        "sidecars.nodeDriverRegistrar.image.repository": (
            "public.ecr.aws/csi-components/csi-node-driver-registrar"
        ),
        "sidecars.provisioner.image.repository": "public.ecr.aws/csi-components/csi-provisioner",
        "sidecars.resizer.image.repository": "public.ecr.aws/csi-components/csi-resizer",
    },
    "prometheus-pushgateway": {"image.repository": "quay.io/prometheus/pushgateway"},
    "keda": {"global.image.registry": REGISTRY_KEY},
    "kube-prometheus-stack": {"global.imageRegistry": REGISTRY_KEY},
    "kueue": {
        "controllerManager.manager.image.repository": "registry.k8s.io/kueue/kueue",
        "kueueViz.backend.image.repository": "registry.k8s.io/kueue/kueueviz-backend",
        "kueueViz.frontend.image.repository": "registry.k8s.io/kueue/kueueviz-frontend",
    },
    "dra-driver-nvidia-gpu": {
        "image.repository": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu"
    },
    # As its release step packages it (hack/helm-chart-package.sh; shared/helm/README.md).
    "jobset": {"image.repository": "registry.k8s.io/jobset/jobset"},
    # The operator's ClusterPolicy takes each component's repository from these values.
    "gpu-operator": {
        "operator.repository": "nvcr.io/nvidia",
        "validator.repository": "nvcr.io/nvidia",
        "nodeStatusExporter.repository": "nvcr.io/nvidia",
        "driver.repository": "nvcr.io/nvidia",
        "driver.manager.repository": "nvcr.io/nvidia/cloud-native",
        "toolkit.repository": "nvcr.io/nvidia/k8s",
        "devicePlugin.repository": "nvcr.io/nvidia",
        "dcgm.repository": "nvcr.io/nvidia/cloud-native",
        "dcgmExporter.repository": "nvcr.io/nvidia/k8s",
        "gfd.repository": "nvcr.io/nvidia",
        "migManager.repository": "nvcr.io/nvidia/cloud-native",
        "gds.repository": "nvcr.io/nvidia/cloud-native",
        "gdrcopy.repository": "nvcr.io/nvidia/cloud-native",
        "vgpuManager.driverManager.repository": "nvcr.io/nvidia/cloud-native",
        "vgpuDeviceManager.repository": "nvcr.io/nvidia/cloud-native",
        "vfioManager.repository": "nvcr.io/nvidia/cloud-native",
        "vfioManager.driverManager.repository": "nvcr.io/nvidia/cloud-native",
        "sandboxDevicePlugin.repository": "nvcr.io/nvidia",
        "kataSandboxDevicePlugin.repository": "nvcr.io/nvidia/cloud-native",
        "ccManager.repository": "nvcr.io/nvidia/cloud-native",
        "draDriver.repository": "nvcr.io/nvidia",
        "node-feature-discovery.image.repository": "registry.k8s.io/nfd/node-feature-discovery",
    },
    "network-operator": {
        "operator.repository": "nvcr.io/nvidia/cloud-native",
        "operator.ofedDriver.initContainer.repository": "nvcr.io/nvidia/mellanox",
        "node-feature-discovery.image.repository": "nvcr.io/nvidia/mellanox/node-feature-discovery",
        "maintenance-operator-chart.operator.image.repository": "nvcr.io/nvidia/mellanox",
    },
    # Rook hands its csi.* images to ceph-csi-operator (the image-set ConfigMap), which runs
    # the drivers that ceph-csi-drivers declares.
    "rook-ceph": {
        "image.repository": "docker.io/rook/ceph",
        "csi.cephcsi.repository": "quay.io/cephcsi/cephcsi",
        "csi.registrar.repository": "registry.k8s.io/sig-storage/csi-node-driver-registrar",
        "csi.provisioner.repository": "registry.k8s.io/sig-storage/csi-provisioner",
        "csi.snapshotter.repository": "registry.k8s.io/sig-storage/csi-snapshotter",
        "csi.attacher.repository": "registry.k8s.io/sig-storage/csi-attacher",
        "csi.resizer.repository": "registry.k8s.io/sig-storage/csi-resizer",
        "csi.csiAddons.repository": "quay.io/csiaddons/k8s-sidecar",
        "ceph-csi-operator.controllerManager.manager.image.repository": (
            "quay.io/cephcsi/ceph-csi-operator"
        ),
    },
    "ceph-csi-drivers": {},
}

# The image blocks (`registry` beside `repository`) of the charts whose global registry value
# serves a mirror (`REGISTRY_KEY` above), by dotted path, with the image each names as the
# pinned values.yaml sets it (kube-prometheus-stack 88.5.3 and its subcharts, keda 2.20.2).
# Their templates take a block's registry where the global one is unset
# (`.Values.global.imageRegistry | default .Values.<block>.registry`; keda's
# `.Values.global.image.registry | default .Values.image.<component>.registry`), so each
# image can take its own pull-through prefix.
CHART_IMAGE_BLOCKS: dict[str, dict[str, str]] = {
    "keda": {
        "image.keda": "ghcr.io/kedacore/keda",
        "image.metricsApiServer": "ghcr.io/kedacore/keda-metrics-apiserver",
        "image.webhooks": "ghcr.io/kedacore/keda-admission-webhooks",
    },
    "kube-prometheus-stack": {
        "alertmanager.alertmanagerSpec.image": "quay.io/prometheus/alertmanager",
        "crds.upgradeJob.image.busybox": "docker.io/busybox",
        "crds.upgradeJob.image.kubectl": "registry.k8s.io/kubectl",
        "grafana.downloadDashboardsImage": "docker.io/curlimages/curl",
        "grafana.image": "docker.io/grafana/grafana",
        "grafana.imageRenderer.image": "docker.io/grafana/grafana-image-renderer",
        "grafana.initChownData.image": "docker.io/library/busybox",
        "grafana.sidecar.image": "quay.io/kiwigrid/k8s-sidecar",
        "grafana.testFramework.image": "docker.io/bats/bats",
        "kube-state-metrics.image": "registry.k8s.io/kube-state-metrics/kube-state-metrics",
        "kube-state-metrics.kubeRBACProxy.image": "quay.io/brancz/kube-rbac-proxy",
        "prometheus-node-exporter.image": "quay.io/prometheus/node-exporter",
        "prometheus-node-exporter.kubeRBACProxy.image": "quay.io/brancz/kube-rbac-proxy",
        "prometheus-node-exporter.permissionInitContainer.image": "quay.io/prometheus/busybox",
        "prometheus-windows-exporter.image": "ghcr.io/prometheus-community/windows-exporter",
        "prometheus.prometheusSpec.image": "quay.io/prometheus/prometheus",
        "prometheusOperator.admissionWebhooks.deployment.image": (
            "quay.io/prometheus-operator/admission-webhook"
        ),
        "prometheusOperator.admissionWebhooks.patch.image": "ghcr.io/jkroepke/kube-webhook-certgen",
        "prometheusOperator.image": "quay.io/prometheus-operator/prometheus-operator",
        "prometheusOperator.prometheusConfigReloader.image": (
            "quay.io/prometheus-operator/prometheus-config-reloader"
        ),
        "prometheusOperator.thanosImage": "quay.io/thanos/thanos",
        "thanosRuler.thanosRulerSpec.image": "quay.io/thanos/thanos",
    },
}

# Every nvcr.io image a chart the platform installs on AWS names, by its path (repository and
# image of shared/charts/<chart>/<version>/values.yaml, without the registry): with a
# pull-through cache each gets an ECR repository `nvcr/<path>` its image is copied into
# (components/data/pull_through_cache.py). gpu-operator v26.7.0 values.yaml: operator,
# validator and nodeStatusExporter run `gpu-operator`; driver.manager and vgpuManager's and
# vfioManager's driver managers `k8s-driver-manager`; devicePlugin and gfd
# `k8s-device-plugin`; draDriver (the GPUCluster path) `dra-driver-nvidia-gpu`. The Network
# Operator's run on an existing cluster only, where no cache is.
NVIDIA_CHART_IMAGES: dict[str, tuple[str, ...]] = {
    "gpu-operator": (
        "nvidia/gpu-operator",
        "nvidia/driver",
        "nvidia/cloud-native/k8s-driver-manager",
        "nvidia/k8s/container-toolkit",
        "nvidia/k8s-device-plugin",
        "nvidia/cloud-native/dcgm",
        "nvidia/k8s/dcgm-exporter",
        "nvidia/cloud-native/k8s-mig-manager",
        "nvidia/cloud-native/nvidia-fs",
        "nvidia/cloud-native/gdrdrv",
        "nvidia/cloud-native/vgpu-device-manager",
        "nvidia/kubevirt-gpu-device-plugin",
        "nvidia/cloud-native/nvidia-sandbox-device-plugin",
        "nvidia/cloud-native/k8s-cc-manager",
        "nvidia/dra-driver-nvidia-gpu",
    ),
}
