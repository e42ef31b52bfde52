"""Platform: composes the planes from the one config model. Wiring only, no resource logic."""

from __future__ import annotations

import dataclasses

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent
from components.context import cluster_name, default_tags
from components.control.cluster import (
    ClusterAddons,
    ClusterAddonsArgs,
    ClusterHandle,
    EksControlPlane,
    EksControlPlaneArgs,
    ExistingCluster,
    ExistingClusterArgs,
)
from components.control.namespaces import Namespaces, NamespacesArgs, job_namespaces
from components.control.network import Network, NetworkArgs
from components.data.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.data.efa import EfaDevicePlugin, EfaDevicePluginArgs, efa_groups
from components.data.fabric import (
    NetworkOperator,
    NetworkOperatorArgs,
    SecondaryNetworks,
    needs_network_operator,
)
from components.data.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs, gpu_tuning_report
from components.data.gpu_operator import GpuOperator, GpuOperatorArgs, pool_report
from components.data.nccl import NcclSettings, NcclSettingsArgs
from components.data.nodes import NodeRole, NodeRoleArgs
from components.data.system_node_group import SystemNodeGroup, SystemNodeGroupArgs, add_on_nodes
from components.observability.alerts import GpuAlerts, GpuAlertsArgs, alert_report, node_labels_read
from components.observability.monitoring import Monitoring, MonitoringArgs, monitoring_report
from components.scheduling.keda import WorkloadAutoscaling, WorkloadAutoscalingArgs
from components.scheduling.queues import Scheduling, SchedulingArgs
from components.scheduling.rendezvous import Rendezvous, RendezvousArgs
from components.scheduling.topology import topology_report
from components.selftest.job import SelfTest, SelfTestArgs, selftest_report
from components.storage.ceph import RookCeph, RookCephArgs
from components.storage.fsx import FsxLustre, FsxLustreArgs
from components.storage.volumes import SharedData, nvme_cache_report
from components.vocabulary import rdma_resource
from infra.existing_addons import existing_addon_report
from model.config import PlatformConfig, default_fsx_zone
from model.config.selftest_schedule import scheduled
from model.versions import addon_build_report


class Platform(PlatformComponent):
    """The whole platform for one stack: control, data and storage planes."""

    PLANE = "platform"

    def __init__(self, env: str, cfg: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__(env, opts)
        self.outputs: dict[str, pulumi.Input] = {
            "provider": cfg.provider,
            "kubernetes_version": cfg.cluster.kubernetes_version,
        }
        self.autoscaler: ClusterAutoscaler | None = None
        self.aws_provider: aws.Provider | None = None
        # What the self-test tests, so that it runs after all of it.
        self.tested: list[pulumi.Resource] = []
        self.networks: SecondaryNetworks | None = None
        if cfg.provider == "aws":
            cluster = self._aws(env, cfg)
        else:
            cluster = ExistingCluster(
                f"{env}-cluster",
                ExistingClusterArgs(env, cfg.existing, cfg.cluster.kubernetes_version),
                self.child(),
            ).handle
            self.outputs["cluster_name"] = cluster.name

        on_cluster = self.child(providers=[cluster.kubernetes])
        teams = cfg.scheduling.all_teams(cfg.namespaces.training)
        existing = [] if cfg.installs("kube_prometheus_stack") else ["monitoring"]
        namespaces = Namespaces(
            f"{env}-namespaces", NamespacesArgs(cfg.namespaces, teams, existing), on_cluster
        )
        self.outputs["namespaces"] = {p: n.metadata.name for p, n in namespaces.by_purpose.items()}
        # What a job's pods name is declared in every namespace jobs run in, the training namespace
        # first: MultiKueue copies only the Job to a worker (components/scheduling/rendezvous.py).
        self.job_namespaces = job_namespaces(cfg)
        self.declared_namespaces = [*namespaces.by_purpose.values(), *namespaces.teams.values()]
        self.namespaces = namespaces
        self.tested.append(
            Rendezvous(
                f"{env}-rendezvous",
                RendezvousArgs(env, self.job_namespaces, after=self.declared_namespaces),
                on_cluster,
            )
        )
        self._fabric(env, cfg, namespaces, on_cluster)
        self._storage(env, cfg, cluster)
        monitoring = self._monitoring(env, cfg, cluster, namespaces)
        self.tested.append(monitoring)
        # The operator creates the DCGM exporter's ServiceMonitor, whose CRD the monitoring
        # release installs.
        self._gpu_software(
            env, cfg, cluster, self.child(providers=[cluster.kubernetes], depends_on=[monitoring])
        )
        if cfg.scheduling.enabled:
            self._scheduling(env, cfg, cluster, namespaces, monitoring)
        if cfg.workload_autoscaling.enabled:
            self._workload_autoscaling(env, cfg, cluster, namespaces)
        self._alerts(env, cfg, monitoring, on_cluster)
        self._selftest(env, cfg, on_cluster)
        if existing_addon_report(cfg):
            self.outputs["existing_addons"] = existing_addon_report(cfg)
        self.register_outputs(self.outputs)

    def _storage(self, env: str, cfg: PlatformConfig, cluster: ClusterHandle) -> None:
        """Storage plane: `shared-data` (FSx for Lustre or CephFS) in every namespace jobs run in,
        and `nvme-cache`, under the same names on every provider."""
        self.outputs["storage_nvme_cache"] = nvme_cache_report(cfg)
        shared: SharedData | None = None
        if cfg.storage.fsx is not None:
            fsx, zone = cfg.storage.fsx, cfg.storage.fsx.zone or default_fsx_zone(cfg)
            component = FsxLustre(
                f"{env}-fsx",
                FsxLustreArgs(
                    env=env,
                    fsx=fsx,
                    zone=zone,
                    region=cfg.aws.region,
                    cluster_name=cluster.name,
                    vpc_id=self.network.vpc_id,
                    subnet_id=self.network.private_subnet_ids_by_zone[zone],
                    node_security_group_id=cluster.security_group_id,
                    claim_namespaces=self.job_namespaces,
                    protect=cfg.protect_stateful,
                    after=[*cluster.schedulable, *self.declared_namespaces],
                    registry_mirror=cfg.images.registry_mirror,
                ),
                self.child(providers=[self.aws_provider, cluster.kubernetes]),
            )
            shared = component.shared
            self.tested.append(component)
            self.outputs.update(
                storage_fsx_id=component.file_system.id,
                storage_fsx_zone=zone,
                storage_fsx_dns_name=component.file_system.dns_name,
            )
        elif cfg.storage.ceph is not None:
            ceph = RookCeph(
                f"{env}-ceph",
                RookCephArgs(
                    env,
                    cfg.storage.ceph,
                    self.job_namespaces,
                    after=self.declared_namespaces,
                    protect=cfg.protect_stateful,
                    networks=self.networks,
                    registry_mirror=cfg.images.registry_mirror,
                ),
                self.child(providers=[cluster.kubernetes]),
            )
            shared = ceph.shared
            self.tested.append(ceph)
        if shared is not None:
            self.outputs["storage_shared_data_claim"] = pulumi.Output.concat(
                shared.claim.metadata.namespace, "/", shared.claim.metadata.name
            )
            if shared.expected_throughput_mbps is not None:
                self.outputs["storage_expected_throughput_mbps"] = shared.expected_throughput_mbps

    def _selftest(self, env: str, cfg: PlatformConfig, on_cluster) -> None:
        """The bootstrap self-test Job, after everything it tests; its image repository on AWS."""
        selftest = SelfTest(
            f"{env}-selftest",
            SelfTestArgs(
                env,
                cfg,
                after=[*self.tested, self.namespaces.by_purpose["selftest"]],
                aws_provider=self.aws_provider,
            ),
            on_cluster,
        )
        self.outputs["selftest"] = selftest_report(cfg)
        if self.aws_provider is not None:
            self.outputs["selftest_repository_url"] = selftest.repository_url

    def _gpu_software(
        self, env: str, cfg: PlatformConfig, cluster: ClusterHandle, on_cluster
    ) -> None:
        """The GPU Operator, unless the cluster runs its own (existing.addons), and per GPU pool
        what a pod can request there."""
        self.outputs["gpu_pools"] = {p.name: pool_report(p) for p in cfg.gpu_pools}
        if not cfg.installs("gpu_operator"):
            return
        operator = GpuOperator(
            f"{env}-gpu-operator",
            GpuOperatorArgs(
                env,
                cfg.gpu_operator,
                cfg.gpu_pools,
                cfg.provider == "aws",
                cluster.schedulable,
                host_mofed=cfg.fabric is not None and cfg.fabric.mofed_preinstalled,
                registry_mirror=cfg.images.registry_mirror,
            ),
            on_cluster,
        )
        self.tested.append(operator)

    def _monitoring(
        self, env: str, cfg: PlatformConfig, cluster: ClusterHandle, namespaces: Namespaces
    ) -> pulumi.Resource:
        """Prometheus, Alertmanager and Grafana, on the system nodes where the platform has
        them; the Grafana admin password leaves the program only as a secret."""
        on_aws = cfg.provider == "aws"
        ns = cfg.namespaces.monitoring
        monitoring = Monitoring(
            f"{env}-monitoring",
            MonitoringArgs(
                env=env,
                settings=cfg.observability,
                namespace=ns,
                on_aws=on_aws,
                node_selector=add_on_nodes(cfg),
                training_namespaces=[
                    t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training)
                ],
                selftest_history=scheduled(cfg),
                node_labels=node_labels_read(cfg),
                kueue=cfg.scheduling.enabled,
                after=[*cluster.schedulable, *namespaces.in_purpose("monitoring")],
                registry_mirror=cfg.images.registry_mirror,
                install=cfg.installs("kube_prometheus_stack"),
            ),
            self.child(providers=[cluster.kubernetes]),
        )
        self.outputs["monitoring"] = monitoring_report(
            cfg.observability, ns, on_aws, cfg.scheduling.enabled
        )
        if monitoring.admin_password is not None:
            self.outputs["grafana_admin_password"] = monitoring.admin_password
        return monitoring.release

    def _alerts(
        self, env: str, cfg: PlatformConfig, monitoring: pulumi.Resource, on_cluster
    ) -> None:
        """The PrometheusRule, beside kube-prometheus-stack, whose release installs its CRD."""
        ns = cfg.namespaces.monitoring
        GpuAlerts(f"{env}-alerts", GpuAlertsArgs(env, cfg, ns, [monitoring]), on_cluster)
        self.outputs["alerts"] = alert_report(cfg)

    def _fabric(self, env: str, cfg: PlatformConfig, namespaces: Namespaces, on_cluster) -> None:
        """Per-pool NCCL settings on every provider; the Network Operator where RDMA pools or
        Ceph Multus networks need it."""
        nccl = NcclSettings(
            f"{env}-nccl",
            NcclSettingsArgs(cfg, self.job_namespaces, env),
            self.child(providers=on_cluster.providers, depends_on=self.declared_namespaces),
        )
        self.outputs["nccl_configmaps"] = nccl.names
        self.tested.append(nccl)
        if cfg.fabric is not None:
            self.outputs["fabric_rdma_resource"] = rdma_resource(cfg.fabric)
        if needs_network_operator(cfg):
            network_operator = NetworkOperator(
                f"{env}-network-operator",
                NetworkOperatorArgs(env, cfg, self.job_namespaces, after=self.declared_namespaces),
                on_cluster,
            )
            self.tested.append(network_operator)
            self.networks = network_operator.networks

    def _aws(self, env: str, cfg: PlatformConfig):
        name = cluster_name(env)
        provider = aws.Provider(
            f"{env}-aws",
            aws.ProviderArgs(
                region=cfg.aws.region,
                default_tags=aws.ProviderDefaultTagsArgs(tags=default_tags(env, cfg)),
            ),
            self.child(),
        )
        on_aws = self.child(providers=[provider])
        network = Network(
            f"{env}-network",
            NetworkArgs(env, name, cfg.aws, cfg.network, protect=cfg.protect_stateful),
            on_aws,
        )
        self.aws_provider, self.network = provider, network
        control = EksControlPlane(
            f"{env}-control-plane",
            EksControlPlaneArgs(
                env=env,
                cluster_name=name,
                region=cfg.aws.region,
                cluster=cfg.cluster,
                subnet_ids=network.private_subnet_ids,
                protect=cfg.protect_stateful,
            ),
            on_aws,
        )
        cluster = control.handle
        node_role = NodeRole(
            f"{env}-node-role", NodeRoleArgs(env, cfg.cluster.node_ssm_access), on_aws
        )
        # Provider default tags stop at the launch template; the instances, volumes and
        # interfaces it launches carry the stack's tags only through its tag specifications.
        tags = default_tags(env, cfg)
        # Nodes join once the role's policies and the add-ons nodes need are in place.
        before_nodes = [node_role, *cluster.ready]
        system = SystemNodeGroup(
            f"{env}-system-nodes",
            SystemNodeGroupArgs(
                env=env,
                nodes=cfg.system_nodes,
                cluster=cluster,
                node_role_arn=node_role.role.arn,
                subnet_ids=network.private_subnet_ids,
                tags=tags,
                after=before_nodes,
            ),
            on_aws,
        )
        cluster = dataclasses.replace(cluster, schedulable=[system])
        for group in cfg.gpu_node_groups:
            gpu_group = GpuNodeGroup(
                f"{env}-gpu-{group.name}",
                GpuNodeGroupArgs(
                    env=env,
                    group=group,
                    cluster=cluster,
                    node_role_arn=node_role.role.arn,
                    subnet_ids=[
                        network.private_subnet_ids_by_zone[z] for z in cfg.group_zones(group)
                    ],
                    efa_security_group_id=network.efa_security_group.id,
                    tags=tags,
                    after=before_nodes,
                ),
                on_aws,
            )
            self.tested.append(gpu_group)
        self.outputs["gpu_tuning"] = {g.name: gpu_tuning_report(g) for g in cfg.gpu_node_groups}
        self.outputs["addon_builds"] = addon_build_report(cfg.cluster.kubernetes_version)
        if efa_groups(cfg.gpu_node_groups):
            efa = EfaDevicePlugin(
                f"{env}-efa-device-plugin",
                EfaDevicePluginArgs(
                    env,
                    cluster,
                    cfg.gpu_node_groups,
                    cfg.aws.region,
                    after=cluster.schedulable,
                    registry_mirror=cfg.images.registry_mirror,
                ),
                on_aws,
            )
            self.tested.append(efa)
        ClusterAddons(
            f"{env}-addons",
            ClusterAddonsArgs(env, cluster, after=[*cluster.ready, *cluster.schedulable]),
            on_aws,
        )
        if cfg.autoscaler.enabled:
            self.autoscaler = ClusterAutoscaler(
                f"{env}-cluster-autoscaler",
                ClusterAutoscalerArgs(
                    env=env,
                    cluster_name=name,
                    region=cfg.aws.region,
                    cluster=cluster,
                    groups=cfg.gpu_node_groups,
                    settings=cfg.autoscaler,
                    after=cluster.schedulable,
                    registry_mirror=cfg.images.registry_mirror,
                ),
                on_aws,
            )
            # It scales the GPU groups from zero for the self-test's pods.
            self.tested.append(self.autoscaler)
        self.outputs.update(
            region=cfg.aws.region,
            cluster_name=control.cluster.name,
            cluster_endpoint=control.cluster.endpoint,
            kubeconfig=control.kubeconfig,
            oidc_provider_arn=control.handle.oidc_provider_arn,
            vpc_id=network.vpc_id,
            public_subnet_ids=network.public_subnet_ids,
            private_subnet_ids=network.private_subnet_ids,
            efa_security_group_id=network.efa_security_group.id,
        )
        return cluster

    def _scheduling(
        self,
        env: str,
        cfg: PlatformConfig,
        cluster: ClusterHandle,
        namespaces: Namespaces,
        monitoring: pulumi.Resource,
    ) -> None:
        """Priorities and Kueue. Kueue looks for the ProvisioningRequest CRD when it starts, so
        on AWS it comes after the autoscaler that installs it; an existing cluster runs no
        autoscaler of ours, so its queues admit without asking for nodes. Its chart declares a
        ServiceMonitor for its metrics, whose CRD the monitoring release installs."""
        autoscaler = self.autoscaler
        scheduling = Scheduling(
            f"{env}-scheduling",
            SchedulingArgs(
                env=env,
                cfg=cfg,
                cluster=cluster,
                kueue_namespace=cfg.namespaces.system,
                node_selector=add_on_nodes(cfg),
                autoscaled=autoscaler is not None,
                endpoint=self.outputs.get("cluster_endpoint"),
                install=cfg.installs("kueue"),
                after=[
                    *namespaces.by_purpose.values(),
                    *namespaces.teams.values(),
                    *([autoscaler.provisioning_request_crd] if autoscaler else []),
                    monitoring,
                ],
            ),
            self.child(providers=[cluster.kubernetes]),
        )
        self.tested.append(scheduling)
        self.outputs.update(scheduling.outputs)
        # Which labels each multi-node pool's nodes need for Kueue's topology-aware placement.
        if topology_report(cfg):
            self.outputs["topology"] = topology_report(cfg)

    def _workload_autoscaling(
        self, env: str, cfg: PlatformConfig, cluster: ClusterHandle, namespaces: Namespaces
    ) -> None:
        """KEDA and the stack's autoscalers; the plan lists each with its target and bounds."""
        autoscaling = WorkloadAutoscaling(
            f"{env}-workload-autoscaling",
            WorkloadAutoscalingArgs(
                env=env,
                cfg=cfg,
                cluster=cluster,
                node_selector=add_on_nodes(cfg),
                after=[*namespaces.by_purpose.values(), *namespaces.teams.values()],
                install=cfg.installs("keda"),
            ),
            self.child(providers=[cluster.kubernetes]),
        )
        self.outputs["workload_autoscalers"] = autoscaling.reports
