"""The plan's cost estimate: what a stack costs per hour and per month at its node groups' min,
desired and max size, from the dated rates of the stack's region in model/catalog_prices.py and
model/catalog_rows.py, and the `gpu-platform:cost` settings.

Pure functions of the config. The program exports `cost_report` as the `cost` output, the
offline plan prints it with `format_cost`, a diff against an earlier plan compares two plans'
`cost` outputs (plan/cost_change.py), and `budget_warnings` goes through
`pulumi.warn`. `estimated_monthly_usd` is the one figure the policy pack's budget rule compares.

Priced, each at the stack region's rate: GPU and system node groups (instances) and their gp3
root volumes, the other EBS volumes the platform claims (Prometheus, Pushgateway), the FSx for
Lustre file system, NAT gateways and their public IPv4 addresses, interface VPC endpoints and
the EKS control plane. An item whose rate the region lacks is a line of its own, not priced and
out of the totals, naming what is missing: never another region's rate. What AWS bills by use
(NOT_PRICED, LEFT_OUT) is listed in every report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date

from model.catalog import PRICE_REGION, OnDemandRate, instance, on_demand_rate
from model.catalog_prices import (
    CAPACITY_BLOCK_HOURLY,
    EKS_EXTENDED_HOURLY,
    EKS_STANDARD_HOURLY,
    FSX_LUSTRE_GB_MONTH,
    GP3_BASELINE_IOPS,
    GP3_BASELINE_THROUGHPUT_MBPS,
    GP3_GB_MONTH,
    GP3_IOPS_MONTH,
    GP3_THROUGHPUT_MONTH,
    INTERFACE_ENDPOINT_HOURLY,
    NAT_GATEWAY_HOURLY,
    PUBLIC_IPV4_HOURLY,
    Price,
    rate_in,
)
from model.config import PlatformConfig
from model.config.network import INTERFACE_ENDPOINT_SERVICES, nat_zones
from model.config.node_join import canary_pools, join_timeout_minutes
from model.config.nodes import (
    ROOT_VOLUME_IOPS,
    ROOT_VOLUME_THROUGHPUT_MBPS,
    GpuNodeGroupSettings,
    Scaling,
)
from model.config.observability import PUSHGATEWAY_VOLUME_GIB
from model.config.pools import gpu_pools, windowed
from model.config.scheduling import scales_from_zero
from model.config.selftest_schedule import scheduled_pools, starts_per_month
from model.versions import in_extended_support
from model.warning_kinds import warning

LEFT_OUT = (
    "data transfer (NAT gateway and endpoint processing per GB, cross-zone and internet "
    "egress), FSx backups, and discounts (Savings Plans, private pricing)"
)
# What the platform declares that AWS bills but the estimate does not price, by resource type,
# and why: each is billed by use, which the plan cannot know.
NOT_PRICED: dict[str, str] = {
    "aws:cloudwatch/logGroup:LogGroup": "CloudWatch Logs: billed per GB ingested and stored",
    "aws:ec2/flowLog:FlowLog": "VPC flow logs: billed as CloudWatch Logs ingestion, per GB",
    "aws:s3/bucket:Bucket": "S3: billed per GB stored and per request",
    "aws:ecr/repository:Repository": "ECR: billed per GB of images stored",
    "aws:kms/key:Key": "KMS keys: billed per key-month and per request; no rate recorded in "
    "model/catalog_prices.py",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": "FSx data repository "
    "associations: the S3 requests of imports and exports, per request",
    "aws:ec2transitgateway/vpcAttachment:VpcAttachment": "Transit Gateway attachment: billed "
    "per attachment-hour and per GB processed, to the gateway's owner account; no rate "
    "recorded in model/catalog_prices.py",
}
# cluster-autoscaler's default --scale-down-unneeded-time (FAQ, "What are the parameters to
# CA?"): how long an idle node stays before it is removed; the chart does not change it.
SCALE_DOWN_UNNEEDED_MINUTES = 10
# The node-group sizes every figure is given at; desired is what runs from day one.
SIZES = ("min", "desired", "max")
ON_PREM = "provider existing: the cluster runs on your own machines; no AWS prices apply"


@dataclass(frozen=True)
class Line:
    """One priced item. Hourly and monthly at the node groups' min, desired and max size;
    items that do not scale have min = desired = max. `hourly_*` is None when no price is known
    (`basis` says which key to set); such a line is left out of the totals. `key` names the
    item across plans (the item's words name its instance type, which a change may change)."""

    key: str
    item: str
    basis: str
    hourly_min: float | None
    hourly_desired: float | None
    hourly_max: float | None
    monthly_min: float | None
    monthly_desired: float | None
    monthly_max: float | None
    region: str
    estimate: bool = False


def _line(
    key: str,
    item: str,
    basis: str,
    hourly: float,
    scaling: Scaling | None,
    hours: int,
    region: str,
    estimate: bool = False,
) -> Line:
    # The desired size is what runs from day one: EKS starts the group at it.
    sizes = (scaling.min_size, scaling.desired, scaling.max_size) if scaling else (1, 1, 1)
    per_hour = [round(hourly * n, 4) for n in sizes]
    per_month = [round(hourly * n * hours, 2) for n in sizes]
    return Line(key, item, basis, *per_hour, *per_month, region=region, estimate=estimate)


def _unpriced(key: str, item: str, why: str, region: str) -> Line:
    return Line(key, item, why, None, None, None, None, None, None, region=region)


def _missing(region: str, what: str) -> str:
    """Why an item has no price: the rate the region lacks, and where it would be recorded."""
    return (
        f"NOT PRICED: no {region} rate of {what} is recorded (model/catalog_prices.py); "
        "another region's is not used"
    )


def _where(price: Price | OnDemandRate) -> str:
    return f"{price.region}, {price.as_of}"


def _usd(value: float) -> str:
    return f"${value:.2f}" if round(value, 2) == value else f"${value:g}"


def _rate(name: str, region: str | None) -> OnDemandRate:
    """`name`'s on-demand rate in `region` (None: a burst's workers, priced at PRICE_REGION),
    with `usd` None where the region has none recorded: never another region's."""
    rate = on_demand_rate(name, region or PRICE_REGION)
    if rate.regional:
        return rate
    return OnDemandRate(None, region, "", False)


def _dearest(types: list[str], region: str | None) -> tuple[str, OnDemandRate]:
    """The listed type with the highest on-demand rate in `region`: the group may launch any
    of them, so the estimate takes the one that costs most. A type without one (p5e, or one
    the region has no rate of) wins: unknown."""
    rates = {t: _rate(t, region) for t in types}
    unpriced = [t for t, r in rates.items() if r.usd is None]
    name = unpriced[0] if unpriced else max(rates, key=lambda t: rates[t].usd)
    return name, rates[name]


def _burst_where(where: str) -> str:
    """A burst's workers run in their own stack's region, which this stack does not know."""
    return f"{where}; the workers' region is their stack's, priced at {PRICE_REGION}"


def node_group_lines(cfg: PlatformConfig) -> list[Line]:
    """Each node group's instances and their root volumes, at min, desired and max size."""
    region = cfg.aws.region
    system = cfg.system_nodes
    name, _ = _dearest(system.instance_types, region)
    lines = [
        _capacity_line(
            "system_nodes", f"system nodes ({name})", name, "on_demand", system.scaling, cfg, region
        ),
        _root_volumes("system_nodes", "system nodes", system.root_volume_gib, system.scaling, cfg),
    ]
    canaried = {p.name for p in canary_pools(cfg)}
    for group in cfg.gpu_node_groups:
        name, _ = _dearest(group.instance_types, region)
        key = f"gpu_node_groups.{group.name}"
        item = f"GPU node group {group.name} ({name}, {group.capacity})"
        lines.append(_capacity_line(key, item, name, group.capacity, paid(group), cfg, region))
        lines.append(
            _root_volumes(
                key, f"GPU node group {group.name}", group.root_volume_gib, group.scaling, cfg
            )
        )
        if group.name in canaried:
            lines.append(canary_line(cfg, group))
    return lines


def paid(group: GpuNodeGroupSettings) -> Scaling:
    """The instances a group's line prices: with a window, every instance the reservation was
    bought with at each size, since AWS bills them whether the group launches them or not (EC2
    User Guide, "Capacity Blocks for ML": paid up front); else the group's own sizes."""
    settings = group.reservation_window
    if settings is None:
        return group.scaling
    n = settings.instances
    return Scaling(min_size=n, desired_size=n, max_size=n)


def canary_line(cfg: PlatformConfig, group: GpuNodeGroupSettings) -> Line:
    """A tested pool's canary group (selftest.node_join.canary): no node at rest, so nothing a
    month at any size; each roll of a GPU-stack change runs one node for the check (the pool's
    join limit at most) and the autoscaler's scale-down wait, which the basis prices."""
    one = node_hourly(cfg, group)
    check = join_timeout_minutes(cfg, group.name)
    wait = group.scale_down_unneeded_minutes
    item = f"canary of GPU node group {group.name} (one node per roll, none at rest)"
    per_roll = (
        "unknown: " + one.basis
        if one.hourly_max is None
        else f"{_usd(round(one.hourly_max * (check + wait) / 60, 2))} ({one.basis})"
    )
    basis = (
        f"per roll of a GPU-stack change, at most one node for the check ({check} min) and the "
        f"autoscaler's scale-down wait ({wait} min): {per_roll}"
    )
    key = f"gpu_node_groups.{group.name}.canary"
    return Line(key, item, basis, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, region=one.region, estimate=True)


def _gp3_month(gib: int, iops: int, throughput: int, region: str) -> tuple[float | None, str]:
    """One gp3 volume's monthly cost in `region` and its basis: storage, plus the IOPS and
    throughput above gp3's free baseline; None and why where the region lacks a rate."""
    extra_iops = max(0, iops - GP3_BASELINE_IOPS)
    extra_mbps = max(0, throughput - GP3_BASELINE_THROUGHPUT_MBPS)
    parts = [("gp3 storage", GP3_GB_MONTH, gib, f"{gib} GiB")]
    if extra_iops:
        parts.append(("gp3 IOPS", GP3_IOPS_MONTH, extra_iops, f"{extra_iops} IOPS"))
    if extra_mbps:
        parts.append(("gp3 throughput", GP3_THROUGHPUT_MONTH, extra_mbps, f"{extra_mbps} MB/s"))
    rates = [(what, rate_in(table, region), n, said) for what, table, n, said in parts]
    lacking = [what for what, price, _, _ in rates if price is None]
    if lacking:
        return None, _missing(region, " and ".join(lacking))
    usd = sum(price.usd * n for _, price, n, _ in rates)
    said = " + ".join(
        f"{n_said} at {_usd(price.usd)} {price.unit}" for _, price, _, n_said in rates
    )
    baseline = (
        f" (over gp3's free {GP3_BASELINE_IOPS} IOPS and {GP3_BASELINE_THROUGHPUT_MBPS} MB/s)"
        if len(rates) > 1
        else ""
    )
    return usd, f"{said}{baseline} a volume, {_where(rates[0][1])}"


def _root_volumes(key: str, what: str, gib: int, scaling: Scaling, cfg: PlatformConfig) -> Line:
    """A node group's gp3 root volumes (components/data/nodes.py root_volume): one a node, so
    as many as the group has nodes at each size."""
    region, hours = cfg.aws.region, cfg.cost.hours_per_month
    key, item = f"{key}.root_volumes", f"root volumes of {what} ({gib} GiB gp3 each)"
    monthly, basis = _gp3_month(gib, ROOT_VOLUME_IOPS, ROOT_VOLUME_THROUGHPUT_MBPS, region)
    if monthly is None:
        return _unpriced(key, item, basis, region)
    return _line(key, item, basis, monthly / hours, scaling, hours, region)


def volume_lines(cfg: PlatformConfig) -> list[Line]:
    """The EBS volumes the platform's claims create through its `gp3` StorageClass (encrypted
    gp3 at the baseline IOPS and throughput): Prometheus's and the Pushgateway's, one each."""
    region, hours = cfg.aws.region, cfg.cost.hours_per_month
    lines = []
    for key, what, gib in (
        ("volumes.prometheus", "Prometheus", cfg.observability.storage_gib),
        ("volumes.pushgateway", "Pushgateway", PUSHGATEWAY_VOLUME_GIB),
    ):
        item = f"{what} volume ({gib} GiB gp3)"
        monthly, basis = _gp3_month(gib, GP3_BASELINE_IOPS, GP3_BASELINE_THROUGHPUT_MBPS, region)
        if monthly is None:
            lines.append(_unpriced(key, item, basis, region))
        else:
            lines.append(_line(key, item, basis, monthly / hours, None, hours, region))
    return lines


def node_hourly(cfg: PlatformConfig, group: GpuNodeGroupSettings) -> Line:
    """One node of the group for an hour, priced as the estimate prices the group: its
    dearest instance type, bought as the group buys it (spot at the assumed discount), in the
    stack's region."""
    name, _ = _dearest(group.instance_types, cfg.aws.region)
    item = f"a node of {group.name} ({name}, {group.capacity})"
    key = f"gpu_node_groups.{group.name}"
    return _capacity_line(key, item, name, group.capacity, None, cfg, cfg.aws.region)


def _capacity_line(
    key: str,
    item: str,
    name: str,
    capacity: str,
    scaling: Scaling | None,
    cfg: PlatformConfig,
    region: str | None,
) -> Line:
    """`scaling` instances (None: one) of type `name` bought as `capacity`, priced as the
    `key` line, in the stack's region (`region` None: a burst's workers, whose region this
    stack lacks)."""
    hours, cost = cfg.cost.hours_per_month, cfg.cost
    if capacity == "capacity_block":
        return _capacity_block(key, item, name, cfg, scaling, region)
    rate = _rate(name, region)
    on_demand = rate.usd
    if on_demand is None:
        if instance(name).on_demand_hourly_usd is None:
            why = f"{name} is not sold on demand; no rate to price it"
        else:
            why = _missing(region, f"{name} on demand")
        return _unpriced(key, item, why, region or PRICE_REGION)
    where = _where(rate) if region else _burst_where(_where(rate))
    priced_in = rate.region
    if capacity == "spot":
        basis = (
            f"spot ESTIMATE: on-demand ${on_demand}/h less the assumed "
            f"{cost.spot_discount:.0%} (gpu-platform:cost.spot_discount), {where}"
        )
        rate_usd = on_demand * (1 - cost.spot_discount)
        return _line(key, item, basis, rate_usd, scaling, hours, priced_in, estimate=True)
    if capacity == "reservation":
        basis = (
            f"reservation at the on-demand rate ${on_demand}/h, billed for every reserved "
            f"instance whether it runs or not, {where}"
        )
        return _line(key, item, basis, on_demand, scaling, hours, priced_in)
    basis = f"on-demand ${on_demand}/h, {where}"
    return _line(key, item, basis, on_demand, scaling, hours, priced_in)


def burst_lines(cfg: PlatformConfig) -> list[tuple[str, float, Line]]:
    """Per bursting ClusterQueue: its name, budget, and what it may spend on its MultiKueue
    workers at most: its quota's GPUs, in whole nodes of the workers' type, all month."""
    found = []
    for queue in cfg.scheduling.cluster_queues:
        burst = queue.burst
        if burst is None:
            continue
        nodes = -(-burst.gpus // instance(burst.instance_type).gpus)
        item = (
            f"burst of queue {queue.name} ({nodes} x {burst.instance_type}, {burst.capacity}, "
            f"on {', '.join(burst.workers)})"
        )
        scaling = Scaling(min_size=0, max_size=nodes)
        key = f"scheduling.cluster_queues.{queue.name}.burst"
        line = _capacity_line(
            key, item, burst.instance_type, burst.capacity, scaling, cfg, region=None
        )
        found.append((queue.name, burst.monthly_budget_usd, line))
    return found


def burst_warnings(cfg: PlatformConfig) -> list[str]:
    found = []
    for queue, budget, line in burst_lines(cfg):
        if line.monthly_max is None or line.monthly_max <= budget:
            continue
        found.append(
            warning(
                "burst-over-budget",
                f"gpu-platform:scheduling.cluster_queues: burst of queue {queue} may spend "
                f"${line.monthly_max:,.2f}/month on its workers ({line.item}), over its "
                f"burst.monthly_budget_usd of ${budget:,.2f}; lower burst.gpus or raise the "
                "budget",
            )
        )
    return found


def _capacity_block(
    key: str,
    item: str,
    name: str,
    cfg: PlatformConfig,
    scaling: Scaling | None,
    region: str | None,
) -> Line:
    hours = cfg.cost.hours_per_month
    paid = "paid up front for the block's instances and days, whether they run or not"
    where = region or PRICE_REGION
    configured = cfg.cost.capacity_block_hourly_usd.get(name)
    if configured is not None:
        basis = (
            f"Capacity Block ${configured}/instance-h "
            f"(gpu-platform:cost.capacity_block_hourly_usd), {paid}"
        )
        return _line(key, item, basis, configured, scaling, hours, where)
    price = rate_in(CAPACITY_BLOCK_HOURLY.get(name, {}), where)
    if price is None:
        return _unpriced(
            key,
            item,
            f"no published {where} Capacity Block rate for {name} is recorded: set "
            f"gpu-platform:cost.capacity_block_hourly_usd.{name}",
            where,
        )
    said = _where(price) if region else _burst_where(_where(price))
    basis = (
        f"Capacity Block ${price.usd}/instance-h, {said} "
        f"({price.source}; indicative, AWS reprices blocks), {paid}"
    )
    return _line(key, item, basis, price.usd, scaling, hours, where)


def reservation_idle(cfg: PlatformConfig) -> list[dict]:
    """Per node group with a reservation window: the window's hours, paid for every instance
    whether it runs or not, and the hours of it no job can run in (the warm-up, and the drain,
    which holds EKS's scale-down and EC2's reclaim of a Capacity Block), in instance-hours and,
    where the group is priced, in USD. The instances: those the reservation was bought with, paid
    however few the group launches."""
    found = []
    for group in windowed(cfg):
        settings = group.reservation_window
        assert settings is not None
        window, instances = settings.window(), settings.instances
        hourly = node_hourly(cfg, group).hourly_max
        idle = window.paid_idle_hours() * instances
        found.append(
            {
                "key": f"gpu_node_groups.{group.name}.reservation_window",
                "group": group.name,
                "start": window.start.isoformat(),
                "end": window.end.isoformat(),
                "instances": instances,
                "paid_instance_hours": round(window.hours() * instances, 2),
                "idle_instance_hours": round(idle, 2),
                "idle_why": f"warm-up {window.warmup_minutes} min + drain "
                f"{window.drain_minutes} min of each instance",
                **({"idle_usd": round(idle * hourly, 2)} if hourly is not None else {}),
            }
        )
    return found


def selftest_lines(cfg: PlatformConfig) -> list[Line]:
    """The nodes scheduled self-test runs start (selftest.schedule.provision_nodes): on a pool
    that scales from zero every run starts one, which lives while the run does (at most
    timeout_minutes, and no less than the autoscaler's delay after a scale-up), then idles
    until the autoscaler removes it, with its root volume. Reserved and block capacity is paid
    anyway."""
    schedule = cfg.selftest.schedule
    if not schedule.provision_nodes:
        return []
    hours = cfg.cost.hours_per_month
    runs = starts_per_month(schedule.cron, hours)
    delay = cfg.autoscaler.scale_down_delay_after_add_minutes
    minutes = max(schedule.timeout_minutes, delay) + SCALE_DOWN_UNNEEDED_MINUTES
    lines = []
    for group in cfg.gpu_node_groups:
        if group.name not in scheduled_pools(cfg) or not scales_from_zero(cfg, group.name):
            continue
        if group.capacity in ("reservation", "capacity_block"):
            continue
        region = cfg.aws.region
        name, _ = _dearest(group.instance_types, region)
        key = f"selftest.schedule.{group.name}"
        item = f"scheduled self-test nodes on {group.name} ({name})"
        node = _capacity_line("", "", name, group.capacity, Scaling(max_size=1), cfg, region)
        gib = group.root_volume_gib
        volume, said = _gp3_month(gib, ROOT_VOLUME_IOPS, ROOT_VOLUME_THROUGHPUT_MBPS, region)
        if node.hourly_max is None or volume is None:
            lines.append(_unpriced(key, item, node.basis if volume else said, region))
            continue
        share = runs * minutes / 60 / hours
        basis = (
            f"ESTIMATE: {runs:.1f} runs a month ({schedule.cron}), each starting one node "
            f"for {minutes} min (the run or the autoscaler's {delay} min scale-up delay, then "
            f"{SCALE_DOWN_UNNEEDED_MINUTES} min idle), at {node.basis}; its {gib} GiB root "
            f"volume at {said}"
        )
        hourly = (node.hourly_max + volume / hours) * share
        lines.append(_line(key, item, basis, hourly, None, hours, region, estimate=True))
    return lines


def fsx_line(cfg: PlatformConfig) -> Line | None:
    fsx = cfg.storage.fsx
    if fsx is None:
        return None
    region, hours = cfg.aws.region, cfg.cost.hours_per_month
    tier = fsx.per_unit_storage_throughput or (200 if fsx.deployment_type == "SCRATCH_2" else 125)
    item = f"FSx for Lustre {fsx.deployment_type} {tier} MB/s/TiB, {fsx.storage_capacity_gib} GiB"
    price = rate_in(FSX_LUSTRE_GB_MONTH[(fsx.deployment_type, tier)], region)
    if price is None:
        what = f"FSx for Lustre {fsx.deployment_type} at {tier} MB/s/TiB"
        return _unpriced("storage.fsx", item, _missing(region, what), region)
    monthly = price.usd * fsx.storage_capacity_gib
    basis = f"${price.usd:.3f} {price.unit} of capacity, {_where(price)}"
    return _line("storage.fsx", item, basis, monthly / hours, None, hours, region)


def _service(
    key: str, item: str, rates: dict[str, Price], count: int, say: str, cfg: PlatformConfig
) -> Line:
    """`count` of a service billed by the hour at its `rates` in the stack's region."""
    region = cfg.aws.region
    price = rate_in(rates, region)
    if price is None:
        return _unpriced(key, item, _missing(region, item.split(" (")[0]), region)
    basis = f"{_usd(price.usd)} {price.unit} each, {_where(price)}{say}"
    return _line(key, item, basis, price.usd * count, None, cfg.cost.hours_per_month, region)


def service_lines(cfg: PlatformConfig, today: date) -> list[Line]:
    nats = len(nat_zones(cfg.network, cfg.aws.zones))
    minor = cfg.cluster.kubernetes_version
    extended = in_extended_support(minor, today)
    support = "extended" if extended else "standard"
    lines = []
    # None in an existing VPC: its NAT gateways and endpoints are its owner's, not declared here.
    if nats:
        lines += [
            _service(
                "network.nat_gateways",
                f"NAT gateways ({nats}, {cfg.network.nat_gateways})",
                NAT_GATEWAY_HOURLY,
                nats,
                "; per-GB processing left out",
                cfg,
            ),
            _service(
                "network.public_ipv4",
                f"public IPv4 addresses ({nats}, the NAT gateways' Elastic IPs)",
                PUBLIC_IPV4_HOURLY,
                nats,
                "",
                cfg,
            ),
        ]
    if cfg.network.declares_endpoints():
        # One endpoint per service, in every zone's private subnet; billed per zone.
        zones = len(cfg.aws.zones)
        services = len(INTERFACE_ENDPOINT_SERVICES)
        lines.append(
            _service(
                "network.vpc_endpoints",
                f"interface endpoints ({services} x {zones} zones: "
                f"{', '.join(INTERFACE_ENDPOINT_SERVICES)})",
                INTERFACE_ENDPOINT_HOURLY,
                services * zones,
                "; the S3 gateway endpoint is free; per-GB processing left out",
                cfg,
            )
        )
    lines.append(
        _service(
            "cluster",
            f"EKS control plane (Kubernetes {minor}, {support} support on {today.isoformat()})",
            EKS_EXTENDED_HOURLY if extended else EKS_STANDARD_HOURLY,
            1,
            "",
            cfg,
        )
    )
    fsx = fsx_line(cfg)
    return lines + ([fsx] if fsx else [])


def cost_lines(cfg: PlatformConfig, today: date) -> list[Line]:
    if cfg.provider != "aws":
        return []
    return [
        *node_group_lines(cfg),
        *selftest_lines(cfg),
        *volume_lines(cfg),
        *service_lines(cfg, today),
    ]


def _total(lines: list[Line], key: str) -> float:
    return round(sum(getattr(line, key) or 0 for line in lines), 2)


def cost_report(cfg: PlatformConfig, today: date) -> dict:
    """The `cost` output: every priced line, the items without a price (and the key that would
    price them), the totals at min and max size, the budget check when a budget is set, and
    what is left out. No value is null: what is unknown is left out and listed."""
    bursts = [
        {"queue": q, "monthly_budget_usd": budget, **asdict(line)}
        for q, budget, line in burst_lines(cfg)
    ]
    if cfg.provider != "aws":
        return {"priced": False, "why": ON_PREM, **({"burst": bursts} if bursts else {})}
    lines = cost_lines(cfg, today)
    priced = [line for line in lines if line.hourly_max is not None]
    report = {
        "priced": True,
        "region": cfg.aws.region,
        "hours_per_month": cfg.cost.hours_per_month,
        "lines": [asdict(line) for line in priced],
        "unpriced": [
            {"key": x.key, "item": x.item, "why": x.basis} for x in lines if x not in priced
        ],
        **{
            f"total_{period}_{size}": _total(priced, f"{period}_{size}")
            for period in ("hourly", "monthly")
            for size in SIZES
        },
        "left_out": LEFT_OUT,
        "not_priced": [{"resource_type": t, "why": why} for t, why in NOT_PRICED.items()],
    }
    budget = cfg.cost.monthly_budget_usd
    if budget is not None:
        report["monthly_budget_usd"] = budget
        report["over_budget"] = report["total_monthly_max"] > budget
    if bursts:
        report["burst"] = bursts
    idle = reservation_idle(cfg)
    if idle:
        report["reservations"] = idle
    teams = team_quota_lines(cfg)
    if teams:
        report["teams"] = teams
    return report


def estimated_monthly_usd(cfg: PlatformConfig, today: date | None = None) -> float | None:
    """The stack's estimated monthly cost at every node group's max size (what the autoscaler
    may reach, so what a budget must cover); None on an existing cluster (no AWS prices)."""
    if cfg.provider != "aws":
        return None
    return _total(cost_lines(cfg, today or date.today()), "monthly_max")


def budget_warnings(cfg: PlatformConfig, today: date) -> list[str]:
    budget = cfg.cost.monthly_budget_usd
    if cfg.provider != "aws" or budget is None:
        return burst_warnings(cfg)
    report = cost_report(cfg, today)
    if not report["over_budget"]:
        return burst_warnings(cfg)
    return [
        *burst_warnings(cfg),
        warning(
            "over-budget",
            f"gpu-platform:cost.monthly_budget_usd: the estimate at max size, "
            f"${report['total_monthly_max']:,.2f}/month, is over the budget of ${budget:,.2f} "
            f"(at min size ${report['total_monthly_min']:,.2f}); lower gpu_node_groups[].scaling."
            "max_size, use spot or a smaller file system, or raise the budget (docs/review.md, "
            "Cost estimate)",
        ),
    ]


# ------------------------------------------------------------------------- per GPU-hour


@dataclass(frozen=True)
class GpuHourPrice:
    """What one physical GPU of a pool costs for an hour, and how that was priced; `usd` None
    where no price is known (`basis` says why). The one price table the team cost rules, `jobs
    usage` and the plan's breakdown by team read: the catalog's, through node_hourly."""

    usd: float | None
    basis: str


def pool_gpu_hour_prices(cfg: PlatformConfig) -> dict[str, GpuHourPrice]:
    """Each GPU pool's price per GPU-hour: a node of the group as the estimate prices it (its
    dearest type, bought as the group buys it: spot at the assumed discount, a reservation at
    the on-demand rate, a Capacity Block at its own rate) over that type's GPUs. On an existing
    cluster no AWS price applies: every pool is listed, unpriced, with why."""
    if cfg.provider != "aws":
        return {p.name: GpuHourPrice(None, ON_PREM) for p in cfg.existing.gpu_pools}
    found = {}
    for group in cfg.gpu_node_groups:
        node = node_hourly(cfg, group)
        name, _ = _dearest(group.instance_types, cfg.aws.region)
        gpus = instance(name).gpus
        if node.hourly_max is None:
            found[group.name] = GpuHourPrice(None, node.basis)
        else:
            basis = f"a node at {_usd(node.hourly_max)}/h over its {gpus} GPUs ({node.basis})"
            found[group.name] = GpuHourPrice(round(node.hourly_max / gpus, 6), basis)
    return found


def team_quota_lines(cfg: PlatformConfig) -> list[dict]:
    """Each team's share of its ClusterQueue's nominal GPUs per pool, priced for the month: a
    queue shared by several teams is split evenly among them (their LocalQueues draw on the same
    quota). What a team may spend on its own quota, not what it will: borrowing from the cohort
    adds to it, and idle quota costs nothing where the pool scales down."""
    if not cfg.scheduling.enabled:
        return []
    prices = pool_gpu_hour_prices(cfg)
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    queues = {q.name: q for q in cfg.scheduling.cluster_queues}
    hours = cfg.cost.hours_per_month
    found = []
    for team in teams:
        sharing = sum(t.cluster_queue == team.cluster_queue for t in teams)
        queue = queues[team.cluster_queue]
        pools = []
        for pool in gpu_pools(cfg):
            gpus = queue.nominal_gpus(pool) / sharing
            if not gpus:
                continue
            usd = prices[pool.name].usd
            # No null: an unpriced pool keeps its GPUs and why, no figure.
            figures = (
                {}
                if usd is None
                else {"gpu_hour_usd": usd, "monthly_usd": round(gpus * usd * hours, 2)}
            )
            pools.append(
                {
                    "pool": pool.name,
                    "gpus": round(gpus, 2),
                    **figures,
                    "basis": prices[pool.name].basis,
                }
            )
        priced = [p["monthly_usd"] for p in pools if "monthly_usd" in p]
        budget = team.monthly_budget_usd
        found.append(
            {
                "team": team.name,
                "cluster_queue": queue.name,
                "shared_with": sharing - 1,
                "monthly_usd": round(sum(priced), 2),
                "unpriced_pools": [p["pool"] for p in pools if "monthly_usd" not in p],
                **({"monthly_budget_usd": budget} if budget is not None else {}),
                "pools": pools,
            }
        )
    return found
