"""What the platform relies on in an add-on the cluster already runs (existing.addons: existing).

One table: per add-on, the CRDs whose kinds the platform still declares on top of it (group,
version, kind as ../shared/crds holds them at the pins) and the settings its objects depend on,
each with the kubectl command that shows it. The plan cannot read the cluster, so it states
what the admin must confirm before `pulumi up`; every setting here is one the platform's own
release sets (the component's `helm_values` / `monitoring_values` / `kueue_values`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from components.control.namespaces import job_namespaces
from components.data.fabric import (
    NIC_CLUSTER_POLICY,
    device_plugin_config,
    ip_pools,
    needs_network_operator,
    rdma_pools,
)
from components.data.gpu_operator import (
    DCGM_EXPORTER_SERVICE,
    DCGM_SERVICE,
    DEFAULT_CONFIG,
    device_plugin_config_key,
)
from components.observability.alerts import node_labels_read
from components.observability.monitoring import DASHBOARD_LABEL
from components.scheduling.kueue import fair_sharing_config, uncounted_resources
from components.scheduling.kueue_frameworks import INTEGRATIONS
from components.scheduling.topology import topology_report
from components.vocabulary import (
    KUEUE_API,
    grafana_datasource_uid,
    prometheus_service,
    rdma_resource,
)
from model.config import PlatformConfig
from model.config.fabric import RDMA_FABRICS, FabricSettings
from model.dra import (
    CHART_DEVICE_CLASSES,
    COMPUTE_DOMAIN_API,
    DRIVER,
    compute_domain_pools,
    device_class_quota,
    dra_pools,
    driver_pools,
    mig_class,
    mig_profiles_of,
)
from model.versions import CHARTS
from model.warning_kinds import warning

# The Helm chart each add-on's release would have installed (infra/versions.CHARTS).
CHART_OF = {
    "gpu_operator": "gpu-operator",
    "network_operator": "network-operator",
    "kube_prometheus_stack": "kube-prometheus-stack",
    "keda": "keda",
    "kueue": "kueue",
    "jobset": "jobset",
    "dra_driver": "dra-driver-nvidia-gpu",
}


@dataclass(frozen=True)
class Crd:
    group: str
    version: str
    kind: str
    plural: str

    def __str__(self) -> str:
        return f"{self.group}/{self.version} {self.kind}"

    def check(self) -> str:
        return (
            f"kubectl get crd {self.plural}.{self.group} "
            "-o jsonpath='{.spec.versions[?(@.served==true)].name}'"
            f"  # must list {self.version}"
        )


def _kueue(kind: str, plural: str) -> Crd:
    return Crd("kueue.x-k8s.io", KUEUE_API.split("/")[1], kind, plural)


def _monitoring(kind: str, plural: str) -> Crd:
    return Crd("monitoring.coreos.com", "v1", kind, plural)


# The ConfigMap Kueue's chart renders its Configuration into (charts/kueue/templates/manager/
# manager-config.yaml at v0.19.2: `<fullname>-manager-config`, key controller_manager_config.yaml).
_KUEUE_CONFIG = (
    "kubectl get configmap -A --field-selector metadata.name=kueue-manager-config "
    "-o jsonpath='{.items[*].data.controller_manager_config\\.yaml}'"
)
_KUEUE_GATES = (
    "kubectl get deployment -A --field-selector metadata.name=kueue-controller-manager "
    "-o jsonpath='{.items[*].spec.template.spec.containers[*].args}'"
)
_CLUSTER_POLICY = "kubectl get clusterpolicies.nvidia.com -o jsonpath='{.items[*].spec.%s}'"


def _kueue_needs(cfg: PlatformConfig) -> tuple[list[Crd], list[tuple[str, str]]]:
    crds = [
        _kueue("WorkloadPriorityClass", "workloadpriorityclasses"),
        _kueue("ResourceFlavor", "resourceflavors"),
        _kueue("ClusterQueue", "clusterqueues"),
        _kueue("LocalQueue", "localqueues"),
    ]
    # Kueue admits no job in a namespace this leaves out, the self-test's included
    # (components/kueue.manager_config).
    namespaces = sorted(job_namespaces(cfg))
    settings = [
        (f"integrations.frameworks lists {', '.join(INTEGRATIONS)}", _KUEUE_CONFIG),
        (
            "managedJobsNamespaceSelector selects every namespace the platform's jobs run in "
            f"({', '.join(namespaces)}), or is Kueue's default (all but kube-system and its own)",
            _KUEUE_CONFIG,
        ),
        # The Queues dashboard's usage against quota (components/kueue.manager_config).
        ("metrics.enableClusterQueueResources: true", _KUEUE_CONFIG),
        (
            "Prometheus scrapes Kueue's metrics (chart value enablePrometheus: true, "
            "a ServiceMonitor beside the controller)",
            "kubectl get servicemonitors.monitoring.coreos.com -A | grep -i kueue",
        ),
    ]
    if uncounted := uncounted_resources(cfg):
        settings.append(
            (f"resources.excludeResourcePrefixes lists {', '.join(uncounted)}", _KUEUE_CONFIG)
        )
    # Kueue's Configuration holds what turns fair sharing on; without it the queues' weights
    # and the LocalQueues' are read by nothing (components/kueue.fair_sharing_config).
    for key, value in fair_sharing_config(cfg.scheduling.fair_sharing).items():
        settings.append((f"{key}: {json.dumps(value, sort_keys=True)}", _KUEUE_CONFIG))
    if cfg.scheduling.fair_sharing.admission is not None:
        # Beta and on by default since 0.15 (Kueue pkg/features/kube_features.go).
        settings.append(("feature gate AdmissionFairSharing not turned off", _KUEUE_GATES))
    if topology_report(cfg):
        crds.append(_kueue("Topology", "topologies"))
        # On by default in 0.19 (beta since 0.14, Kueue pkg/features/kube_features.go).
        settings.append(("feature gate TopologyAwareScheduling not turned off", _KUEUE_GATES))
    if cfg.multikueue.workers or cfg.multikueue.serve_as_worker:
        crds += [
            _kueue("AdmissionCheck", "admissionchecks"),
            _kueue("MultiKueueConfig", "multikueueconfigs"),
            _kueue("MultiKueueCluster", "multikueueclusters"),
        ]
        settings.append(
            (
                f"feature gate MultiKueue not turned off; Kueue runs in {cfg.namespaces.system}, "
                "where the platform puts the workers' kubeconfig Secrets",
                _KUEUE_GATES,
            )
        )
    return crds, settings


# Prometheus settings that silently change what the platform's monitors and rules see
# (prometheus-operator v0.93.0, Documentation/api-reference/api.md, PrometheusSpec), each with
# what it breaks here.
PROMETHEUS_OVERRIDES = {
    # "enforces honorLabels:false for all ServiceMonitor, PodMonitor and ScrapeConfig objects"
    "overrideHonorLabels": "it forces honorLabels false on the Pushgateway's ServiceMonitor, so "
    "every pushed job becomes exported_job and the self-test and goodput alerts and dashboards "
    "(job=gpu-platform-selftest, job=training-goodput) match nothing",
    # "spec.namespaceSelector from all PodMonitor, ServiceMonitor and Probe objects will be
    # ignored. They will only discover targets within the namespace of the ... object"
    "ignoreNamespaceSelectors": "the training-jobs PodMonitor in the monitoring namespace "
    "selects the team namespaces' pods through its namespaceSelector, and would find none",
    # "a label will be added to all metrics scraped from ServiceMonitor, PodMonitor, ... and all
    # vector selectors of PromQL expressions defined in PrometheusRule objects"
    "enforcedNamespaceLabel": "every series scraped through the monitoring namespace's "
    "PodMonitor would carry that namespace instead of the job's, and every selector of the "
    "platform's PrometheusRule would be held to the monitoring namespace, so the GPU, queue "
    "and training alerts match nothing",
}


def _prometheus_needs(cfg: PlatformConfig) -> tuple[list[Crd], list[tuple[str, str]]]:
    prometheus = prometheus_service(cfg)
    crds = [
        _monitoring("ServiceMonitor", "servicemonitors"),
        _monitoring("PodMonitor", "podmonitors"),
        _monitoring("PrometheusRule", "prometheusrules"),
    ]
    label, value = next(iter(DASHBOARD_LABEL.items()))
    settings = [
        (
            f"no Prometheus sets {field}: {why}",
            "kubectl get prometheuses.monitoring.coreos.com -A -o jsonpath="
            f"'{{range .items[*]}}{{.metadata.name}}={{.spec.{field}}}{{\"\\n\"}}{{end}}'"
            "  # each line must end in = or =false",
        )
        for field, why in PROMETHEUS_OVERRIDES.items()
    ]
    settings += [
        (
            "Prometheus selects every ServiceMonitor, PodMonitor and PrometheusRule in every "
            "namespace (chart values prometheus.prometheusSpec.serviceMonitorSelectorNilUsesHelm"
            "Values, podMonitorSelectorNilUsesHelmValues, ruleSelectorNilUsesHelmValues: false; "
            "on the Prometheus: empty selectors and namespace selectors)",
            "kubectl get prometheuses.monitoring.coreos.com -A -o yaml | grep -E -A2 "
            "'(serviceMonitor|podMonitor|rule)(Namespace)?Selector'",
        ),
        (
            f"Prometheus answers at {prometheus.url} (existing.kube_prometheus_stack; the DCGM "
            "and queue autoscalers, the self-test and `python -m jobs status` read it there)",
            f"kubectl -n {prometheus.namespace} get service {prometheus.name} "
            "-o jsonpath='{.spec.ports[*].port}'"
            f"  # must list {prometheus.port}",
        ),
        (
            f"Grafana's Prometheus data source has uid {grafana_datasource_uid(cfg)}, which "
            "every panel of the platform's dashboards names (existing.kube_prometheus_stack."
            "grafana_datasource_uid)",
            "kubectl get configmap -A -l grafana_datasource -o yaml | grep -E ' uid:'",
        ),
        (
            "kube-state-metrics exports the node labels the alerts read: "
            f"--metric-labels-allowlist=nodes=[{','.join(node_labels_read(cfg))}]",
            "kubectl get deployment -A -l app.kubernetes.io/name=kube-state-metrics "
            "-o jsonpath='{.items[*].spec.template.spec.containers[*].args}'",
        ),
        (
            f"Grafana's dashboard sidecar loads ConfigMaps labelled {label}={value} from every "
            "namespace (grafana.sidecar.dashboards.enabled, label, searchNamespace: ALL)",
            "kubectl get deployment -A -l app.kubernetes.io/name=grafana -o yaml "
            "| grep -E -A1 'name: (LABEL|LABEL_VALUE|NAMESPACE)$'",
        ),
    ]
    return crds, settings


def _gpu_operator_needs(cfg: PlatformConfig) -> tuple[list[Crd], list[tuple[str, str]]]:
    ns = cfg.gpu_operator.namespace
    crds = [Crd("nvidia.com", "v1", "ClusterPolicy", "clusterpolicies")]
    settings = [
        (
            "dcgmExporter.enabled with serviceMonitor.enabled: true and honorLabels: false "
            "(dashboards, alerts and the GPU autoscalers read exported_namespace / exported_pod)",
            _CLUSTER_POLICY % "dcgmExporter",
        ),
        (
            "dcgmExporter.service.internalTrafficPolicy: Local (the self-test asks its own "
            "node's exporter)",
            _CLUSTER_POLICY % "dcgmExporter.service",
        ),
        (
            f"the operator runs in {ns} (gpu_operator.namespace), serving Service "
            f"{DCGM_EXPORTER_SERVICE}",
            f"kubectl -n {ns} get service {DCGM_EXPORTER_SERVICE}",
        ),
        (
            f"dcgm.enabled: true (the standalone host engine, Service {DCGM_SERVICE} on port "
            "5555, whose dcgmi diag the self-test runs on its own node; off, the exporter's "
            "embedded engine answers no other client and the diagnostic SKIPs)",
            f"kubectl -n {ns} get service {DCGM_SERVICE}",
        ),
    ]
    keys = sorted({device_plugin_config_key(p) for p in cfg.gpu_pools} - {DEFAULT_CONFIG})
    if keys:
        settings.append(
            (
                f"devicePlugin.config names a ConfigMap with entries {', '.join(keys)}, which the "
                "pools' nvidia.com/device-plugin.config labels name",
                _CLUSTER_POLICY % "devicePlugin.config",
            )
        )
    if rdma := [p.name for p in cfg.gpu_pools if p.fabric in RDMA_FABRICS]:
        settings.append(
            (
                f"driver.rdma.enabled: true (GPUDirect RDMA through nvidia-peermem) for the "
                f"pools on InfiniBand / RoCE ({', '.join(rdma)})",
                _CLUSTER_POLICY % "driver.rdma",
            )
        )
    if any(p.sharing.mode == "mig" for p in cfg.gpu_pools):
        settings.append(
            (
                f"mig.strategy: {cfg.gpu_operator.mig_strategy}, and migManager.config holds the "
                "layouts the pools' nvidia.com/mig.config labels name",
                _CLUSTER_POLICY % "mig",
            )
        )
    return crds, settings


_NIC_CLUSTER_POLICY = (
    f"kubectl get nicclusterpolicies.mellanox.com {NIC_CLUSTER_POLICY} -o jsonpath='{{.spec.%s}}'"
)


def _network_operator_needs(cfg: PlatformConfig) -> tuple[list[Crd], list[tuple[str, str]]]:
    """What the platform's pools and networks rely on in the cluster's Network Operator: the
    NicClusterPolicy the platform would have declared (components/data/fabric.
    nic_cluster_policy_spec), deploying the same parts."""
    fabric = cfg.fabric or FabricSettings()
    ns = fabric.namespace
    crds = [Crd("mellanox.com", "v1alpha1", "NicClusterPolicy", "nicclusterpolicies")]
    if ip_pools(cfg):
        crds.append(Crd("nv-ipam.nvidia.com", "v1alpha1", "IPPool", "ippools"))
    crds.append(
        Crd(
            "k8s.cni.cncf.io", "v1", "NetworkAttachmentDefinition", "network-attachment-definitions"
        )
    )
    settings = [
        (
            f"the operator runs in {ns} (fabric.namespace), where nv-ipam reads the platform's "
            f"IP pools ({', '.join(ip_pools(cfg)) or 'none'})",
            f"kubectl -n {ns} get deployments -o name | grep network-operator",
        ),
        (
            f"the NicClusterPolicy {NIC_CLUSTER_POLICY} deploys Multus, the CNI plugins and "
            "nv-ipam (secondaryNetwork.multus, secondaryNetwork.cniPlugins, nvIpam)",
            _NIC_CLUSTER_POLICY % "secondaryNetwork",
        ),
    ]
    if cfg.fabric is not None and rdma_pools(cfg):
        plugin = (
            "rdmaSharedDevicePlugin" if cfg.fabric.rdma_mode == "shared" else "sriovDevicePlugin"
        )
        settings.append(
            (
                f"{plugin} advertises {rdma_resource(cfg.fabric)} on the RDMA pools' nodes "
                f"({', '.join(p.name for p in rdma_pools(cfg))}), with this config: "
                f"{device_plugin_config(cfg.fabric)}",
                _NIC_CLUSTER_POLICY % plugin,
            )
        )
        if any(p.fabric == "infiniband" for p in rdma_pools(cfg)):
            settings.append(
                ("secondaryNetwork.ipoib (the RDMA network's CNI on InfiniBand)",
                 _NIC_CLUSTER_POLICY % "secondaryNetwork.ipoib")
            )  # fmt: skip
        if not cfg.fabric.mofed_preinstalled:
            settings.append(
                ("ofedDriver (fabric.mofed_preinstalled: false: the hosts lack MOFED)",
                 _NIC_CLUSTER_POLICY % "ofedDriver")
            )  # fmt: skip
    return crds, settings


def _keda_needs(cfg: PlatformConfig) -> tuple[list[Crd], list[tuple[str, str]]]:
    crds = [Crd("keda.sh", "v1alpha1", "ScaledObject", "scaledobjects")]
    settings = [
        (
            "KEDA's metrics server serves the external metrics API "
            "(APIService v1beta1.external.metrics.k8s.io, Available)",
            "kubectl get apiservice v1beta1.external.metrics.k8s.io",
        ),
        (
            "KEDA's admission webhook validates ScaledObjects",
            "kubectl get validatingwebhookconfigurations | grep -i keda",
        ),
        (
            f"KEDA's operator reaches Prometheus at {prometheus_service(cfg).url}",
            "kubectl get networkpolicies -A  # none may block KEDA's operator from Prometheus",
        ),
    ]
    return crds, settings


# The fields the platform's JobSets set that a CRD serving v1alpha2 may lack: JobSet serves
# v1alpha2 since v0.2.0, and the CRD check above admits any CRD that serves it. Helm leaves a
# chart's crds/ as they were on upgrade (shared/PINS.md, "JobSet (0.12.0)"), so a v0.12.0
# controller can run over an older CRD, whose structural schema prunes what it does not declare
# without a word: an older CRD drops failurePolicy.rules[].onJobFailureMessagePatterns and every
# disruption then fails the JobSet. Each with the first release whose CRD declares it
# (kubernetes-sigs/jobset config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml at each tag).
JOBSET_FIELDS_SINCE = {
    "spec.managedBy": "v0.5.0",
    "spec.network.publishNotReadyAddresses": "v0.6.0",
    "spec.failurePolicy.rules[].name": "v0.6.0",
    "spec.failurePolicy.rules[].action": "v0.6.0",
    "spec.failurePolicy.rules[].targetReplicatedJobs": "v0.6.0",
    "spec.failurePolicy.rules[].onJobFailureReasons": "v0.6.0",
    "spec.failurePolicy.restartStrategy": "v0.7.0",
    "spec.failurePolicy.rules[].onJobFailureMessagePatterns": "v0.10.0",
}
# Set only on a job MultiKueue copies to a worker (components/scheduling/multikueue.py).
_MULTIKUEUE_ONLY = {"spec.managedBy"}


def crd_field_check(crd: Crd, path: str) -> str:
    """The kubectl command that prints the type the installed CRD's schema gives `path`
    (`a.b[].c`): empty where the CRD would prune the field."""
    steps = "".join(
        f".properties.{name}" + (".items" if name.endswith("[]") else "")
        for name in path.split(".")
    ).replace("[]", "")
    return (
        f"kubectl get crd {crd.plural}.{crd.group} -o jsonpath="
        f"'{{.spec.versions[?(@.name==\"{crd.version}\")].schema.openAPIV3Schema{steps}.type}}'"
        "  # must not be empty"
    )


def _jobset_needs(cfg: PlatformConfig) -> tuple[list[Crd], list[tuple[str, str]]]:
    """What the jobs the platform renders rely on in a JobSet the cluster runs: the v1alpha2
    fields of v0.12.0 (shared/PINS.md, "JobSet (0.12.0)") in the installed CRD, its webhooks
    (they default the network and failure-policy rule names and set the restart-attempt
    annotation), and its metrics scraped as the platform's release has them
    (components/scheduling/jobset.py)."""
    jobsets = Crd("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets")
    crds = [jobsets]
    multikueue = bool(cfg.multikueue.workers or cfg.multikueue.serve_as_worker)
    settings = [
        (
            f"the JobSet CRD declares {path} (JobSet {since} or later; an older CRD prunes it)",
            crd_field_check(jobsets, path),
        )
        for path, since in JOBSET_FIELDS_SINCE.items()
        if multikueue or path not in _MULTIKUEUE_ONLY
    ]
    settings += [
        (
            "the JobSet controller is v0.12.0, the version Kueue 0.19.2 requires, or later "
            "(restartStrategy BlockingRecreate, the failure-policy rules' actions)",
            "kubectl get deployment -A -o jsonpath='{..image}' | tr ' ' '\\n' | grep jobset",
        ),
        (
            "JobSet's mutating and validating webhooks serve jobsets and pods",
            "kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations "
            "| grep -i jobset",
        ),
        (
            "Prometheus scrapes the JobSet controller's metrics (chart value prometheus.enable: "
            "true, a ServiceMonitor beside the controller)",
            "kubectl get servicemonitors.monitoring.coreos.com -A | grep -i jobset",
        ),
    ]
    return crds, settings


# The nodes where a DRA driver publishes GPUs (ResourceSlices of driver gpu.nvidia.com, one pool
# per node: ../shared/PINS.md "DeviceClasses, drivers and what the chart renders").
_DRA_GPU_NODES = (
    f'kubectl get resourceslices -o jsonpath=\'{{range .items[?(@.spec.driver=="{DRIVER}")]}}'
    '{.spec.nodeName}{"\\n"}{end}\' | sort -u'
)


def _dra_driver_needs(cfg: PlatformConfig) -> tuple[list[Crd], list[tuple[str, str]]]:
    """What the platform's claims, Kueue mappings, DeviceClasses and ComputeDomains rely on in
    a DRA driver the cluster runs itself: the chart's DeviceClasses they name, under the same
    names and selecting the same devices; the MIG devices the platform's own classes select;
    the ComputeDomain CRD; the release they are written for. And the rule the chart enforces
    only where it is installed (templates/validation.yaml): never GPUs from both the device
    plugin and the driver on one node. The platform keeps the device plugin off its DRA pools
    (node label nvidia.com/gpu.deploy.device-plugin=false), but cannot see where the cluster's
    kubelet plugin runs, so the admin checks the nodes the driver serves GPUs on."""
    pools = cfg.gpu_pools
    tag = f"v{CHARTS['dra-driver-nvidia-gpu'].version}"
    crds = []
    if compute_domain_pools(pools):
        group, version = COMPUTE_DOMAIN_API.split("/")
        crds.append(Crd(group, version, "ComputeDomain", "computedomains"))
    settings = [
        (
            f"the driver is {tag} or later (image registry.k8s.io/dra-driver-nvidia/"
            f"dra-driver-nvidia-gpu:{tag}; NVIDIA/k8s-dra-driver-gpu's v25.x tags are older)",
            "kubectl get daemonsets,deployments -A -o jsonpath='{..image}' | tr ' ' '\\n' "
            "| grep -E 'dra-driver-nvidia-gpu|k8s-dra-driver-gpu' | sort -u",
        ),
    ]
    named = [c for c in device_class_quota(pools) if c in CHART_DEVICE_CLASSES]
    settings += [
        (
            f"DeviceClass {name} selects {CHART_DEVICE_CLASSES[name]} (the platform's claims "
            "or Kueue's deviceClassMappings name it)",
            f"kubectl get deviceclass {name} -o jsonpath='{{.spec.selectors[*].cel.expression}}'",
        )
        for name in named
    ]
    for pool in dra_pools(pools):
        if profiles := mig_profiles_of(pool):
            settings.append(
                (
                    f"the driver publishes the MIG devices of pool {pool.name} (type mig, "
                    f"profiles {', '.join(profiles)}), which DeviceClasses "
                    f"{', '.join(mig_class(p) for p in profiles)} select",
                    "kubectl get resourceslices -o jsonpath='{range .items[*].spec.devices[*]}"
                    '{.attributes.profile.string}{"\\n"}{end}\' | sort -u',
                )
            )
    if dra_pools(pools):
        selectors = "; ".join(
            ",".join(f"{k}={v}" for k, v in sorted(p.node_selector.items()))
            for p in dra_pools(pools)
        )
        settings.append(
            (
                f"the driver serves GPUs on every node of the DRA pools ({selectors})",
                f"{_DRA_GPU_NODES}  # must list each node of those pools",
            )
        )
    settings.append(
        (
            "no node has GPUs from both the device plugin and the driver (the chart's "
            "templates/validation.yaml refuses it, the EKS DRA page warns of silent "
            "oversubscription): the driver serves GPUs on no node where the device plugin "
            "advertises nvidia.com/gpu",
            f"{_DRA_GPU_NODES} | xargs -r kubectl get nodes -o jsonpath='{{range .items[*]}}"
            '{.metadata.name} {.status.allocatable.nvidia\\.com/gpu}{"\\n"}{end}\' '
            "| awk '$2 > 0'  # must print nothing",
        )
    )
    return crds, settings


NEEDS = {
    "gpu_operator": _gpu_operator_needs,
    "network_operator": _network_operator_needs,
    "kube_prometheus_stack": _prometheus_needs,
    "keda": _keda_needs,
    "kueue": _kueue_needs,
    "jobset": _jobset_needs,
    "dra_driver": _dra_driver_needs,
}


def used_existing(cfg: PlatformConfig) -> list[str]:
    """The add-ons this stack runs and takes from the cluster: Kueue only where scheduling is
    enabled, KEDA only where workload autoscaling is, the Network Operator only where RDMA pools
    or Ceph Multus networks need it."""
    if cfg.existing is None:
        return []
    unused = {
        "kueue": not cfg.scheduling.enabled,
        "keda": not cfg.workload_autoscaling.enabled,
        "network_operator": not needs_network_operator(cfg),
        "dra_driver": not driver_pools(cfg.gpu_pools),
    }
    return [a for a in cfg.existing.addons.existing() if not unused.get(a, False)]


def existing_addon_report(cfg: PlatformConfig) -> dict[str, Any]:
    """The plan's `existing_addons` output: per add-on taken from the cluster, the CRDs and
    settings to confirm, each with its kubectl command."""
    report = {}
    for addon in used_existing(cfg):
        crds, settings = NEEDS[addon](cfg)
        chart = CHARTS[CHART_OF[addon]]
        report[addon] = {
            "tested_with": f"{chart.name} {chart.version}",
            "needs_crds": {str(c): c.check() for c in crds},
            "needs_settings": dict(settings),
        }
    return report


def existing_addon_warnings(cfg: PlatformConfig) -> list[str]:
    """One warning per add-on taken from the cluster: the plan cannot check it offline."""
    found = []
    for addon, needs in existing_addon_report(cfg).items():
        found.append(
            warning(
                "existing-addon-unchecked",
                f"gpu-platform:existing.addons.{addon}: uses existing {addon}: needs CRDs "
                f"{'; '.join(needs['needs_crds'])}; needs settings "
                f"{'; '.join(needs['needs_settings'])}. The plan cannot read the cluster: confirm "
                f"each with the kubectl commands in the plan's existing_addons output before "
                f"`pulumi up` (tested with {needs['tested_with']}; docs/operations.md, "
                f'"Using add-ons a cluster already runs")',
            )
        )
    return found
