"""The platform's shared vocabulary: the names that two or more component modules write, each
spelled here once (tests/components/test_vocabulary.py holds the cited values, and that no
other component module spells one again). A shared component: it imports no plane, so a plane
reads a name without importing the plane that owns the objects."""

from __future__ import annotations

from dataclasses import dataclass

from contract import node_join, quarantine
from model.config import PlatformConfig
from model.config.fabric import FabricSettings
from model.config.onprem import ExistingKubePrometheusStackSettings

# ------------------------------------------------------------------------ resource names
# The NVIDIA device plugin's extended resource, also the taint key GPU nodes carry (shared/PINS.md,
# GPU Operator v26.7.0: `daemonsets.tolerations` tolerates `nvidia.com/gpu`).
GPU_RESOURCE = "nvidia.com/gpu"
# The AWS EFA device plugin's resource (shared/FACTS.md: pods using EFA request it).
EFA_RESOURCE = "vpc.amazonaws.com/efa"


def rdma_resource(fabric: FabricSettings) -> str:
    """The extended resource a pod requests for RDMA: the shared device plugin's prefix is
    `rdma`; the SR-IOV plugin's is set (components/data/fabric.py) to `nvidia.com`, as the
    Network Operator's examples do."""
    prefix = "rdma" if fabric.rdma_mode == "shared" else "nvidia.com"
    return f"{prefix}/{fabric.resource_name}"


# ----------------------------------------------------------------------------------- taints
# The GPU nodes' taint, so that only GPU pods land there (components/data/gpu_node_group.py
# taints every group; admins taint on-prem GPU nodes alike).
GPU_TAINT = {"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"}
# A GPU pod tolerates exactly that taint.
GPU_TOLERATION = {**GPU_TAINT, "operator": "Equal"}
# A DaemonSet that must run on every GPU node tolerates the key whatever its value, as the GPU
# Operator's own DaemonSets do (shared/PINS.md).
GPU_DAEMONSET_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
# Every GPU node joins with this startup taint and takes no job until the self-test's node set
# has passed on it (contract/node_join.py). What runs before the test (the check itself, the GPU
# stack's DaemonSets) tolerates the key whatever its value; no job does.
NODE_JOIN_TAINT = {
    "key": node_join.TAINT_KEY,
    "value": node_join.TAINT_VALUE,
    "effect": node_join.TAINT_EFFECT,
}
NODE_JOIN_TOLERATION = {"key": node_join.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
# A pool's canary node (components/data/gpu_node_group.py) carries this label and a taint of
# the same key, valued with its group: only the canary's Job (components/selftest/canary.py)
# tolerates it, so no job and no node-join check lands there, and cluster-autoscaler adds a
# canary node only for that Job. Not a startup taint: it never goes.
CANARY_LABEL = "gpu-platform/canary"
CANARY_TOLERATION = {"key": CANARY_LABEL, "operator": "Exists", "effect": "NoSchedule"}


def canary_taint(group: str) -> dict[str, str]:
    return {"key": CANARY_LABEL, "value": group, "effect": "NoSchedule"}


# The tolerations of a DaemonSet that must run on every GPU node, the untested ones and the
# canaries too (the canary is measured with the GPU stack it would roll out).
GPU_NODE_DAEMONSET_TOLERATIONS = (GPU_DAEMONSET_TOLERATION, NODE_JOIN_TOLERATION, CANARY_TOLERATION)

# --------------------------------------------------------------------------- API versions
KUEUE_API = "kueue.x-k8s.io/v1beta2"
MULTUS_API = "k8s.cni.cncf.io/v1"
MONITORING_API = "monitoring.coreos.com/v1"
BATCH_API = "batch/v1"
# JobSet v0.12.0 serves only this version (shared/PINS.md, "JobSet (0.12.0)").
JOBSET_API = "jobset.x-k8s.io/v1alpha2"

# ----------------------------------------------------------------------------------- labels
# Kueue's pkg/controller/constants at v0.19.2: QueueLabel, WorkloadPriorityClassLabel.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# The label that carries an Indexed Job pod's index (Kubernetes 1.28+).
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
# The label the JobSet controller puts on every pod of a JobSet, the JobSet's name (jobset
# v0.12.0, pkg/controllers/jobset_controller.go, labelAndAnnotateObject; PINS.md, "JobSet").
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
# The Job controller's label on a Job's pods (Kubernetes "Jobs": batch.kubernetes.io/job-name,
# since 1.27).
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# The container port's name and the pod label the platform's PodMonitor scrapes training pods
# by (components/scheduling/training_job.py sets them, components/observability/monitoring.py
# selects them).
METRICS_PORT_NAME = "metrics"
METRICS_LABEL = {"gpu-platform/metrics": "training"}
# The label every training pod carries, whoever submits it (the self-test, a recipe, a team's
# job): the GPU Operator's driver upgrade waits for the pods it selects to end before it
# touches their node (components/data/gpu_operator.py, DRIVER_UPGRADE_POLICY).
TRAINING_POD_LABEL = ("gpu-platform/workload", "training")
# The Multus network RDMA pods attach (components/data/fabric.py declares it).
RDMA_NETWORK = "rdma"
# The label the self-test puts on a node it quarantines, with the check that failed
# (components/selftest/access.py); every training pod requires a node without it
# (components/scheduling/training_job.py). The image sets it: contract/quarantine.py holds it,
# with the annotation that says when.
QUARANTINE_LABEL = quarantine.LABEL
QUARANTINE_ANNOTATION = quarantine.ANNOTATION

# --------------------------------------------------------------------------------- services
# The platform's kube-prometheus-stack release: holding the chart's name, it is the chart's
# fullname, so the chart names its Services `<release>-prometheus` (port 9090, the chart's
# prometheus.service.port) and `<release>-grafana` (port 80), and Grafana's Prometheus data
# source has uid `prometheus` (grafana.sidecar.datasources.uid): kube-prometheus-stack 88.5.3
# templates/_helpers.tpl and values.yaml. A cluster's own release is described by the stack
# (existing.kube_prometheus_stack).
MONITORING_RELEASE = "kube-prometheus-stack"


# The Pushgateway release the self-test's history and trainkit's goodput are pushed to
# (components/selftest/schedule.py installs it).
PUSHGATEWAY = "prometheus-pushgateway"
PUSHGATEWAY_PORT = 9091


def pushgateway_url(namespace: str) -> str:
    """The Pushgateway's in-cluster address: the chart names its Service after the release when
    the release name holds the chart's (`prometheus-pushgateway.fullname`), port 9091."""
    return f"http://{PUSHGATEWAY}.{namespace}.svc:{PUSHGATEWAY_PORT}"


@dataclass(frozen=True)
class ServiceAddress:
    namespace: str
    name: str
    port: int

    @property
    def url(self) -> str:
        """Its in-cluster address."""
        return f"http://{self.name}.{self.namespace}.svc:{self.port}"


def _release(cfg: PlatformConfig) -> ExistingKubePrometheusStackSettings:
    """The kube-prometheus-stack the platform reads: the cluster's own as the stack describes it
    (existing.kube_prometheus_stack), or the platform's release, which the settings' defaults
    describe (a release named MONITORING_RELEASE)."""
    if cfg.installs("kube_prometheus_stack") or cfg.existing is None:
        return ExistingKubePrometheusStackSettings()
    return cfg.existing.prometheus()


def prometheus_service(cfg: PlatformConfig) -> ServiceAddress:
    """Prometheus's Service, which KEDA's triggers, the self-test and `jobs status` query."""
    release = _release(cfg)
    return ServiceAddress(
        cfg.namespaces.monitoring, release.prometheus_service, release.prometheus_port
    )


def grafana_service(cfg: PlatformConfig) -> str:
    """Grafana's Service, `<namespace>/<name>`: `kubectl port-forward` to reach it."""
    return f"{cfg.namespaces.monitoring}/{_release(cfg).grafana_service}"


def grafana_datasource_uid(cfg: PlatformConfig) -> str:
    """The uid of Grafana's Prometheus data source, which every dashboard panel names."""
    return _release(cfg).grafana_datasource_uid
