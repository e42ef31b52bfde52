"""Platform: composes the planes from the one config model. Wiring only, no resource logic."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent
from components.context import StackContext
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
from components.control.team_access import TeamAccess, TeamAccessArgs
from components.data.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.data.dra_driver import DraDriver, DraDriverArgs
from components.data.efa import EfaDevicePlugin, EfaDevicePluginArgs, efa_groups
from components.data.fabric import (
    NetworkOperator,
    NetworkOperatorArgs,
    SecondaryNetworks,
    needs_network_operator,
)
from components.data.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from components.data.gpu_operator import GpuOperator, GpuOperatorArgs, pool_report
from components.data.nccl import NcclSettings, NcclSettingsArgs
from components.data.nodes import NodeRole, NodeRoleArgs
from components.data.pull_through_cache import (
    PullThroughCache,
    PullThroughCacheArgs,
    nvidia_repositories,
    puller_policy,
)
from components.data.system_node_group import SystemNodeGroup, SystemNodeGroupArgs, add_on_nodes
from components.observability.alerts import GpuAlerts, GpuAlertsArgs, node_labels_read
from components.observability.monitoring import Monitoring, MonitoringArgs, storage_class
from components.observability.pushgateway import Pushgateway, PushgatewayArgs
from components.scheduling.job_claims import beside_resources
from components.scheduling.jobset import JobSetController, JobSetControllerArgs
from components.scheduling.keda import WorkloadAutoscaling, WorkloadAutoscalingArgs
from components.scheduling.launcher import Launcher, LauncherArgs
from components.scheduling.queues import Scheduling, SchedulingArgs
from components.selftest.canary import Canary, CanaryArgs
from components.selftest.job import SelfTest, SelfTestArgs, pool_env
from components.storage.ceph import RookCeph, RookCephArgs
from components.storage.cluster_class import ClusterClassArgs, ClusterClassSharedData
from components.storage.fsx import FsxLustre, FsxLustreArgs
from components.storage.volumes import nvme_cache_report
from components.vocabulary import (
    grafana_datasource_uid,
    grafana_service,
    prometheus_service,
    rdma_resource,
)
from infra.deploying_account import refuse_another_account
from infra.existing_addons import existing_addon_report
from model.config import GpuPool, PlatformConfig, default_fsx_zone, stack_file
from model.config.node_join import canary_pools, pools_tested_on_join
from model.config.pools import windowed
from model.config.selftest_schedule import scheduled
from model.cost import pool_gpu_hour_prices
from model.dra import driver_pools

C = TypeVar("C", bound=PlatformComponent)


class Platform(PlatformComponent):
    """The whole platform for one stack: control, data and storage planes. Each component
    exports its own stack outputs (`outputs`); the platform merges them, and adds only what
    the config says on its own (the provider, the pools, what backs nvme-cache)."""

    PLANE = "platform"

    def __init__(self, env: str, cfg: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__(env, opts)
        ctx = StackContext.of(env, cfg)
        self.outputs = {
            "provider": cfg.provider,
            "kubernetes_version": cfg.cluster.kubernetes_version,
        }
        self.autoscaler: ClusterAutoscaler | None = None
        self.aws_provider: aws.Provider | None = None
        # What the self-test tests, so that it runs after all of it.
        self.tested: list[pulumi.Resource] = []
        self.networks: SecondaryNetworks | None = None
        # Per StorageClass the platform declares for claims, what a claim of it binds through.
        self.storage_classes: dict[str, list[pulumi.Resource]] = {}
        if cfg.provider == "aws":
            cluster = self._aws(ctx, cfg)
        else:
            existing_cluster = ExistingCluster(
                f"{env}-cluster",
                ExistingClusterArgs(ctx, cfg.existing, cfg.cluster.kubernetes_version),
                self.child(),
            )
            cluster = self._export(existing_cluster).handle

        on_cluster = self.child(providers=[cluster.kubernetes])
        teams = cfg.scheduling.all_teams(cfg.namespaces.training)
        existing = [] if cfg.installs("kube_prometheus_stack") else ["monitoring"]
        adopted = cfg.existing.namespaces if cfg.existing is not None else ()
        namespaces = Namespaces(
            f"{env}-namespaces",
            NamespacesArgs(
                cfg.namespaces, teams, existing, adopted, check_existing=cfg.provider == "existing"
            ),
            on_cluster,
        )
        self._export(namespaces)
        # What a job's pods name is declared in every namespace jobs run in, the training namespace
        # first: MultiKueue copies only the JobSet to a worker (components/scheduling/launcher.py).
        self.job_namespaces = job_namespaces(cfg)
        self.declared_namespaces = [*namespaces.by_purpose.values(), *namespaces.teams.values()]
        self.namespaces = namespaces
        if any(t.access for t in teams):
            providers = [cluster.kubernetes, *([self.aws_provider] if self.aws_provider else [])]
            TeamAccess(
                f"{env}-team-access",
                TeamAccessArgs(
                    teams,
                    on_aws=cfg.provider == "aws",
                    cluster_name=cluster.name,
                    after=self.declared_namespaces,
                    beside=beside_resources(cfg.gpu_pools),
                ),
                self.child(providers=providers),
            )
        self.tested.append(
            Launcher(
                f"{env}-launcher",
                LauncherArgs(ctx, self.job_namespaces, after=self.declared_namespaces),
                on_cluster,
            )
        )
        self._fabric(ctx, cfg, on_cluster)
        self._storage(ctx, cfg, cluster)
        monitoring = self._monitoring(ctx, cfg, cluster, namespaces)
        self.tested.append(monitoring)
        self.tested.append(self._pushgateway(ctx, cfg, cluster, monitoring))
        # The operator creates the DCGM exporter's ServiceMonitor, whose CRD the monitoring
        # release installs.
        self._gpu_software(
            ctx, cfg, cluster, self.child(providers=[cluster.kubernetes], depends_on=[monitoring])
        )
        if cfg.installs("jobset"):
            self._jobset(ctx, cfg, cluster, namespaces, monitoring)
        if cfg.scheduling.enabled:
            self._scheduling(ctx, cfg, cluster, namespaces, monitoring)
        if cfg.workload_autoscaling.enabled:
            self._workload_autoscaling(ctx, cfg, cluster, namespaces)
        self._alerts(ctx, cfg, monitoring, on_cluster)
        if cfg.provider == "aws":
            self._gpu_node_groups(ctx, cfg, cluster, on_cluster)
        self._selftest(ctx, cfg, on_cluster)
        if existing_addon_report(cfg):
            self.outputs["existing_addons"] = existing_addon_report(cfg)
        self.register_outputs(self.outputs)

    def _export(self, component: C) -> C:
        """Merges the stack outputs `component` exports into the platform's."""
        self.outputs.update(component.outputs)
        return component

    def _storage(self, ctx: StackContext, cfg: PlatformConfig, cluster: ClusterHandle) -> None:
        """Storage plane: `shared-data` (FSx for Lustre, CephFS, or the cluster's own class or
        claim) in every namespace jobs run in, and `nvme-cache`, under the same names on every
        provider."""
        env = ctx.env
        self.outputs["storage_nvme_cache"] = nvme_cache_report(cfg)
        if cfg.storage.fsx is not None:
            zone = cfg.storage.fsx.zone or default_fsx_zone(cfg)
            fsx = FsxLustre(
                f"{env}-fsx",
                FsxLustreArgs(
                    context=ctx,
                    fsx=cfg.storage.fsx,
                    zone=zone,
                    region=cfg.aws.region,
                    cluster=cluster,
                    vpc_id=self.network.vpc_id,
                    subnet_id=self.network.private_subnet_ids_by_zone[zone],
                    claim_namespaces=self.job_namespaces,
                    after=[*cluster.schedulable, *self.declared_namespaces],
                ),
                self.child(providers=[self.aws_provider, cluster.kubernetes]),
            )
            self.tested.append(self._export(fsx))
        elif cfg.storage.ceph is not None:
            ceph = RookCeph(
                f"{env}-ceph",
                RookCephArgs(
                    ctx,
                    cfg.storage.ceph,
                    self.job_namespaces,
                    after=self.declared_namespaces,
                    networks=self.networks,
                ),
                self.child(providers=[cluster.kubernetes]),
            )
            self.storage_classes.update(ceph.classes)
            self.tested.append(self._export(ceph))
        elif cfg.storage.shared_data is not None:
            shared = ClusterClassSharedData(
                f"{env}-shared-data",
                ClusterClassArgs(
                    ctx, cfg.storage.shared_data, self.job_namespaces, self.declared_namespaces
                ),
                self.child(providers=[cluster.kubernetes]),
            )
            self.tested.append(self._export(shared))

    def _selftest(self, ctx: StackContext, cfg: PlatformConfig, on_cluster) -> None:
        """The bootstrap self-test Job, after everything it tests; its image repository on AWS."""
        selftest = SelfTest(
            f"{ctx.env}-selftest",
            SelfTestArgs(
                ctx,
                cfg,
                # The team namespaces too: the quarantine watcher reads their pods.
                after=[*self.tested, *self.declared_namespaces],
                aws_provider=self.aws_provider,
            ),
            on_cluster,
        )
        self._export(selftest)

    def _gpu_software(
        self, ctx: StackContext, cfg: PlatformConfig, cluster: ClusterHandle, on_cluster
    ) -> None:
        """The GPU Operator, unless the cluster runs its own (existing.addons), and per GPU pool
        what a pod can request there (whichever operator serves it)."""
        self.outputs["gpu_pools"] = {p.name: pool_report(p) for p in cfg.gpu_pools}
        if driver_pools(cfg.gpu_pools):
            driver = DraDriver(
                f"{ctx.env}-dra-driver",
                DraDriverArgs(
                    ctx,
                    cfg,
                    add_on_nodes(cfg),
                    cluster.schedulable,
                    install=cfg.installs("dra_driver"),
                ),
                on_cluster,
            )
            self.tested.append(driver)
        if not cfg.installs("gpu_operator"):
            return
        operator = GpuOperator(
            f"{ctx.env}-gpu-operator",
            GpuOperatorArgs(
                ctx,
                cfg.gpu_operator,
                cfg.gpu_pools,
                cfg.provider == "aws",
                cluster.schedulable,
                host_mofed=cfg.fabric is not None and cfg.fabric.mofed_preinstalled,
            ),
            on_cluster,
        )
        self.tested.append(operator)

    def _monitoring(
        self, ctx: StackContext, cfg: PlatformConfig, cluster: ClusterHandle, namespaces: Namespaces
    ) -> pulumi.Resource:
        """Prometheus, Alertmanager and Grafana, on the system nodes where the platform has
        them; the Grafana admin password leaves the program only as a secret."""
        monitoring = Monitoring(
            f"{ctx.env}-monitoring",
            MonitoringArgs(
                context=ctx,
                settings=cfg.observability,
                namespace=cfg.namespaces.monitoring,
                on_aws=cfg.provider == "aws",
                node_selector=add_on_nodes(cfg),
                prometheus=prometheus_service(cfg),
                grafana_service=grafana_service(cfg),
                datasource_uid=grafana_datasource_uid(cfg),
                training_namespaces=[
                    t.name for t in cfg.scheduling.all_teams(cfg.namespaces.training)
                ],
                selftest_history=scheduled(cfg),
                node_labels=node_labels_read(cfg),
                kueue=cfg.scheduling.enabled,
                reservations=bool(windowed(cfg)),
                priced=any(p.usd is not None for p in pool_gpu_hour_prices(cfg).values()),
                after=[
                    *cluster.schedulable,
                    *namespaces.in_purpose("monitoring"),
                    *self._volumes_of(cfg),
                ],
                install=cfg.installs("kube_prometheus_stack"),
            ),
            self.child(providers=[cluster.kubernetes]),
        )
        return self._export(monitoring).release

    def _volumes_of(self, cfg: PlatformConfig) -> list[pulumi.Resource]:
        """What the monitoring volumes' claims bind through where their class is the storage
        plane's (onprem's CephFS): Helm waits 300 s for the pods that mount them."""
        return self.storage_classes.get(storage_class(cfg.observability, cfg.provider == "aws"), [])

    def _pushgateway(
        self, ctx: StackContext, cfg: PlatformConfig, cluster: ClusterHandle, monitoring
    ) -> pulumi.Resource:
        """What training jobs push their goodput to and the scheduled self-test its history, on
        every stack, after the monitoring release (the ServiceMonitor CRD). Its release was the
        SelfTest's child where the self-test ran on a schedule: it keeps that state."""
        pushgateway = Pushgateway(
            f"{ctx.env}-pushgateway",
            PushgatewayArgs(
                context=ctx,
                cfg=cfg,
                node_selector=add_on_nodes(cfg),
                after=[monitoring, *self._volumes_of(cfg)],
                former_parent=pulumi.create_urn(
                    f"{ctx.env}-selftest", SelfTest.type_token(), parent=self
                ),
            ),
            self.child(providers=[cluster.kubernetes]),
        )
        return pushgateway.release

    def _alerts(
        self, ctx: StackContext, cfg: PlatformConfig, monitoring: pulumi.Resource, on_cluster
    ) -> None:
        """The PrometheusRule, beside kube-prometheus-stack, whose release installs its CRD."""
        ns = cfg.namespaces.monitoring
        self._export(
            GpuAlerts(f"{ctx.env}-alerts", GpuAlertsArgs(ctx, cfg, ns, [monitoring]), on_cluster)
        )

    def _fabric(self, ctx: StackContext, cfg: PlatformConfig, on_cluster) -> None:
        """Per-pool NCCL settings on every provider; the Network Operator where RDMA pools or
        Ceph Multus networks need it."""
        nccl = NcclSettings(
            f"{ctx.env}-nccl",
            NcclSettingsArgs(ctx, cfg, self.job_namespaces),
            self.child(providers=on_cluster.providers, depends_on=self.declared_namespaces),
        )
        self.tested.append(self._export(nccl))
        if cfg.fabric is not None:
            self.outputs["fabric_rdma_resource"] = rdma_resource(cfg.fabric)
        if needs_network_operator(cfg):
            network_operator = NetworkOperator(
                f"{ctx.env}-network-operator",
                NetworkOperatorArgs(
                    ctx,
                    cfg,
                    self.job_namespaces,
                    after=self.declared_namespaces,
                    install=cfg.installs("network_operator"),
                ),
                on_cluster,
            )
            self.tested.append(network_operator)
            self.networks = network_operator.networks

    def _aws(self, ctx: StackContext, cfg: PlatformConfig):
        env = ctx.env
        provider = aws.Provider(
            f"{env}-aws",
            aws.ProviderArgs(
                region=cfg.aws.region,
                default_tags=aws.ProviderDefaultTagsArgs(tags=ctx.tags),
            ),
            self.child(),
        )
        # Before anything is declared in the account the credentials belong to.
        refuse_another_account(cfg, stack_file(env), provider)
        on_aws = self.child(providers=[provider])
        network = Network(
            f"{env}-network",
            NetworkArgs(ctx, cfg.aws, cfg.network, efa=bool(efa_groups(cfg.gpu_node_groups))),
            on_aws,
        )
        self.aws_provider, self.network = provider, network
        control = EksControlPlane(
            f"{env}-control-plane",
            EksControlPlaneArgs(
                context=ctx,
                region=cfg.aws.region,
                cluster=cfg.cluster,
                subnet_ids=network.private_subnet_ids,
            ),
            on_aws,
        )
        cluster = control.handle
        cache = cfg.images.pull_through_cache
        node_role = NodeRole(
            f"{env}-node-role",
            NodeRoleArgs(
                ctx,
                cfg.cluster.node_ssm_access,
                puller_policy(cache, cfg.aws.region) if cache is not None else None,
            ),
            on_aws,
        )
        # Nodes join once the role's policies, the add-ons nodes need and the cache rules their
        # first pulls go through are in place.
        before_nodes = [node_role, *cluster.ready]
        if cache is not None:
            before_nodes.append(
                PullThroughCache(
                    f"{env}-pull-through-cache",
                    PullThroughCacheArgs(
                        env, cache, tuple(nvidia_repositories(cfg)), protect=ctx.protect
                    ),
                    on_aws,
                )
            )
        system = SystemNodeGroup(
            f"{env}-system-nodes",
            SystemNodeGroupArgs(
                context=ctx,
                nodes=cfg.system_nodes,
                cluster=cluster,
                node_role_arn=node_role.role.arn,
                subnet_ids=network.private_subnet_ids,
                after=before_nodes,
            ),
            on_aws,
        )
        cluster = dataclasses.replace(cluster, schedulable=[system])
        # The GPU node groups come once the software their nodes run is declared
        # (_gpu_node_groups): a canary's check needs all of it.
        self.before_gpu_nodes, self.node_role = before_nodes, node_role
        if efa_groups(cfg.gpu_node_groups):
            efa = EfaDevicePlugin(
                f"{env}-efa-device-plugin",
                EfaDevicePluginArgs(
                    ctx,
                    cluster,
                    cfg.gpu_node_groups,
                    cfg.aws.region,
                    after=cluster.schedulable,
                ),
                on_aws,
            )
            self.tested.append(efa)
        ClusterAddons(
            f"{env}-addons",
            ClusterAddonsArgs(ctx, cluster, after=[*cluster.ready, *cluster.schedulable]),
            on_aws,
        )
        if cfg.autoscaler.enabled:
            self.autoscaler = ClusterAutoscaler(
                f"{env}-cluster-autoscaler",
                ClusterAutoscalerArgs(
                    context=ctx,
                    region=cfg.aws.region,
                    cluster=cluster,
                    groups=cfg.gpu_node_groups,
                    settings=cfg.autoscaler,
                    after=cluster.schedulable,
                ),
                on_aws,
            )
            # It scales the GPU groups from zero for the self-test's pods.
            self.tested.append(self.autoscaler)
        self._export(control)
        self._export(network)
        return cluster

    def _gpu_node_groups(
        self, ctx: StackContext, cfg: PlatformConfig, cluster: ClusterHandle, on_cluster
    ) -> None:
        """The GPU node groups, each after its pool's canary where it has one
        (selftest.node_join.canary): the canary's Job runs on the new image with everything the
        platform runs on a GPU node, so it is declared after all of it."""
        env, network = ctx.env, self.network
        tested = {p.name for p in pools_tested_on_join(cfg)}
        canaried = {p.name: p for p in canary_pools(cfg)}
        software = [*self.tested, *self.declared_namespaces]
        self.outputs["gpu_tuning"] = {}
        for group in cfg.gpu_node_groups:
            pool = canaried.get(group.name)
            gpu_group = GpuNodeGroup(
                f"{env}-gpu-{group.name}",
                GpuNodeGroupArgs(
                    context=ctx,
                    group=group,
                    cluster=cluster,
                    node_role_arn=self.node_role.role.arn,
                    subnet_ids=[
                        network.private_subnet_ids_by_zone[z] for z in cfg.group_zones(group)
                    ],
                    efa_security_group_id=network.efa_security_group_id,
                    mig_strategy=cfg.gpu_operator.mig_strategy,
                    fast_pull=cfg.images.fast_pull_on(cfg.provider),
                    tested_on_join=group.name in tested,
                    after=self.before_gpu_nodes,
                    canary=(
                        None if pool is None else self._canary(ctx, cfg, pool, software, on_cluster)
                    ),
                ),
                self.child(providers=[self.aws_provider]),
            )
            self.outputs["gpu_tuning"].update(gpu_group.outputs["gpu_tuning"])
            self.tested.append(gpu_group)

    def _canary(
        self, ctx: StackContext, cfg: PlatformConfig, pool: GpuPool, after: list, on_cluster
    ):
        """What declares `pool`'s canary Job for its canary node group."""

        def declare(node_group: aws.eks.NodeGroup) -> list[pulumi.Resource]:
            canary = Canary(
                f"{ctx.env}-canary-{pool.name}",
                CanaryArgs(ctx, cfg, pool, pool_env(cfg, pool.name), node_group, after),
                on_cluster,
            )
            return [canary.job]

        return declare

    def _jobset(
        self,
        ctx: StackContext,
        cfg: PlatformConfig,
        cluster: ClusterHandle,
        namespaces: Namespaces,
        monitoring: pulumi.Resource,
    ) -> None:
        """The JobSet controller, on every stack but one whose cluster runs its own
        (existing.addons.jobset): every job the platform renders is a JobSet, the self-test's
        among them. Its chart declares a ServiceMonitor, whose CRD the
        monitoring release installs; the self-test runs after it. Kueue need not wait for it:
        Kueue v0.19.2 sets its jobset integration up once the CRD is served
        (pkg/controller/jobframework/setup.go, `waitForAPI`), so both install side by side."""
        jobset = JobSetController(
            f"{ctx.env}-jobset-controller",
            JobSetControllerArgs(
                context=ctx,
                namespace=cfg.namespaces.system,
                node_selector=add_on_nodes(cfg),
                monitoring_namespace=cfg.namespaces.monitoring,
                after=[*cluster.schedulable, *namespaces.in_purpose("system"), monitoring],
            ),
            self.child(providers=[cluster.kubernetes]),
        )
        self.tested.append(jobset)

    def _scheduling(
        self,
        ctx: StackContext,
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
            f"{ctx.env}-scheduling",
            SchedulingArgs(
                context=ctx,
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
        self.tested.append(self._export(scheduling))

    def _workload_autoscaling(
        self, ctx: StackContext, cfg: PlatformConfig, cluster: ClusterHandle, namespaces: Namespaces
    ) -> None:
        """KEDA and the stack's autoscalers; the plan lists each with its target and bounds."""
        autoscaling = WorkloadAutoscaling(
            f"{ctx.env}-workload-autoscaling",
            WorkloadAutoscalingArgs(
                context=ctx,
                cfg=cfg,
                cluster=cluster,
                node_selector=add_on_nodes(cfg),
                after=[*namespaces.by_purpose.values(), *namespaces.teams.values()],
                install=cfg.installs("keda"),
            ),
            self.child(providers=[cluster.kubernetes]),
        )
        self._export(autoscaling)
