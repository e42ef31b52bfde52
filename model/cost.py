"""The plan's cost estimate: what a stack costs per hour and per month at its node groups' min,
desired and max size, from the catalog's dated prices in the stack's region (us-east-1's where
none of that region is recorded, and the report says which figures those are) and the
`gpu-platform:cost` settings.

Pure functions of the config. The program exports `cost_report` as the `cost` output, the
offline plan prints it with `format_cost`, a diff against an earlier plan compares two plans'
`cost` outputs (plan/cost_change.py), and `budget_warnings` goes through
`pulumi.warn`. `estimated_monthly_usd` is the one figure the policy pack's budget rule compares.

Priced: GPU and system node groups (instances only), the FSx for Lustre file system, NAT
gateways and the EKS control plane. Left out, and said so in every report: data transfer (NAT
processing, cross-zone, internet egress), EBS root volumes, FSx backups, S3, CloudWatch logs,
KMS keys, public IPv4 addresses, and any discount (Savings Plans, EDP).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date

from model.catalog import (
    CAPACITY_BLOCK_HOURLY,
    EKS_EXTENDED_HOURLY,
    EKS_STANDARD_HOURLY,
    FSX_LUSTRE_GB_MONTH,
    NAT_GATEWAY_HOURLY,
    PRICE_REGION,
    OnDemandRate,
    instance,
    on_demand_rate,
)
from model.config import PlatformConfig
from model.config.network import nat_zones
from model.config.nodes import Scaling
from model.config.scheduling import scales_from_zero
from model.config.selftest_schedule import scheduled_pools, starts_per_month
from model.versions import in_extended_support
from model.warning_kinds import warning

LEFT_OUT = (
    "data transfer (NAT gateway processing per GB, cross-zone and internet egress), EBS root "
    "volumes, FSx backups, S3 storage and requests, CloudWatch logs, KMS keys, public IPv4 "
    "addresses, and discounts (Savings Plans, private pricing)"
)
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
    estimate: bool = False
    # Whether the rate is the stack region's; False: a us-east-1 rate stands in for it.
    regional: bool = True


def _line(
    key: str, item: str, basis: str, hourly: float, scaling: Scaling | None, hours: int, **kw
) -> Line:
    # The desired size is what runs from day one: EKS starts the group at it.
    sizes = (scaling.min_size, scaling.desired, scaling.max_size) if scaling else (1, 1, 1)
    per_hour = [round(hourly * n, 4) for n in sizes]
    per_month = [round(hourly * n * hours, 2) for n in sizes]
    return Line(key, item, basis, *per_hour, *per_month, **kw)


def _unpriced(key: str, item: str, why: str) -> Line:
    return Line(key, item, why, None, None, None, None, None, None)


def _dearest(types: list[str], region: str | None) -> tuple[str, OnDemandRate]:
    """The listed type with the highest on-demand rate in `region`: the group may launch any
    of them, so the estimate takes the one that costs most. A type without one (p5e) wins:
    unknown."""
    rates = {t: on_demand_rate(t, region or PRICE_REGION) for t in types}
    unpriced = [t for t, r in rates.items() if r.usd is None]
    name = unpriced[0] if unpriced else max(rates, key=lambda t: rates[t].usd)
    return name, rates[name]


def _where(price_region: str, as_of: str, region: str | None) -> tuple[str, bool]:
    """A price's region and date for a basis line, and whether it is the stack `region`'s; one
    that stands in for it says so (`region` None: a burst, priced for workers whose region is
    their own stack's)."""
    said = f"{price_region}, {as_of}"
    if region is None:
        return f"{said}; the workers' region is their stack's, priced at {price_region}", False
    if price_region not in (region, "all regions"):
        return f"{said}; NOT REGIONAL: no {region} price recorded", False
    return said, True


def node_group_lines(cfg: PlatformConfig) -> list[Line]:
    lines = []
    system = cfg.system_nodes
    name, _ = _dearest(system.instance_types, cfg.aws.region)
    lines.append(
        _capacity_line(
            "system_nodes",
            f"system nodes ({name})",
            name,
            "on_demand",
            system.scaling,
            cfg,
            cfg.aws.region,
        )
    )
    for group in cfg.gpu_node_groups:
        name, _ = _dearest(group.instance_types, cfg.aws.region)
        key = f"gpu_node_groups.{group.name}"
        item = f"GPU node group {group.name} ({name}, {group.capacity})"
        lines.append(
            _capacity_line(key, item, name, group.capacity, group.scaling, cfg, cfg.aws.region)
        )
    return lines


def _capacity_line(
    key: str,
    item: str,
    name: str,
    capacity: str,
    scaling: Scaling,
    cfg: PlatformConfig,
    region: str | None,
) -> Line:
    """`scaling` instances of type `name` bought as `capacity`, priced as the `key` line, in
    the stack's region (`region` None: a burst's workers, whose region this stack lacks)."""
    hours, cost = cfg.cost.hours_per_month, cfg.cost
    if capacity == "capacity_block":
        return _capacity_block(key, item, name, cfg, scaling, region)
    rate = on_demand_rate(name, region or PRICE_REGION)
    on_demand = rate.usd
    where, regional = _where(rate.region, rate.as_of, region)
    if on_demand is None:
        return _unpriced(key, item, f"{name} is not sold on demand; no rate to price it")
    if capacity == "spot":
        basis = (
            f"spot ESTIMATE: on-demand ${on_demand}/h less the assumed "
            f"{cost.spot_discount:.0%} (gpu-platform:cost.spot_discount), {where}"
        )
        rate_usd = on_demand * (1 - cost.spot_discount)
        return _line(key, item, basis, rate_usd, scaling, hours, estimate=True, regional=regional)
    if capacity == "reservation":
        basis = (
            f"reservation at the on-demand rate ${on_demand}/h, billed for every reserved "
            f"instance whether it runs or not, {where}"
        )
        return _line(key, item, basis, on_demand, scaling, hours, regional=regional)
    basis = f"on-demand ${on_demand}/h, {where}"
    return _line(key, item, basis, on_demand, scaling, hours, regional=regional)


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
    key: str, item: str, name: str, cfg: PlatformConfig, scaling: Scaling, region: str | None
) -> Line:
    hours = cfg.cost.hours_per_month
    paid = "paid up front for the block's instances and days, whether they run or not"
    configured = cfg.cost.capacity_block_hourly_usd.get(name)
    if configured is not None:
        basis = (
            f"Capacity Block ${configured}/instance-h "
            f"(gpu-platform:cost.capacity_block_hourly_usd), {paid}"
        )
        return _line(key, item, basis, configured, scaling, hours)
    price = CAPACITY_BLOCK_HOURLY.get(name)
    if price is None:
        return _unpriced(
            key,
            item,
            f"no published {PRICE_REGION} Capacity Block rate for {name}: set "
            f"gpu-platform:cost.capacity_block_hourly_usd.{name}",
        )
    where, regional = _where(price.region, price.as_of, region)
    basis = (
        f"Capacity Block ${price.usd}/instance-h, {where} "
        f"({price.source}; indicative, AWS reprices blocks), {paid}"
    )
    return _line(key, item, basis, price.usd, scaling, hours, regional=regional)


def selftest_lines(cfg: PlatformConfig) -> list[Line]:
    """The nodes scheduled self-test runs start (selftest.schedule.provision_nodes): on a pool
    that scales from zero every run starts one, which lives while the run does (at most
    timeout_minutes, and no less than the autoscaler's delay after a scale-up), then idles
    until the autoscaler removes it. Reserved and block capacity is paid anyway."""
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
        name, _ = _dearest(group.instance_types, cfg.aws.region)
        node = _capacity_line(
            "", "", name, group.capacity, Scaling(max_size=1), cfg, cfg.aws.region
        )
        if node.hourly_max is None:
            continue
        share = runs * minutes / 60 / hours
        basis = (
            f"ESTIMATE: {runs:.1f} runs a month ({schedule.cron}), each starting one node "
            f"for {minutes} min (the run or the autoscaler's {delay} min scale-up delay, then "
            f"{SCALE_DOWN_UNNEEDED_MINUTES} min idle), at {node.basis}"
        )
        lines.append(
            _line(
                f"selftest.schedule.{group.name}",
                f"scheduled self-test nodes on {group.name} ({name})",
                basis,
                node.hourly_max * share,
                None,
                hours,
                estimate=True,
            )
        )
    return lines


def fsx_line(cfg: PlatformConfig) -> Line | None:
    fsx = cfg.storage.fsx
    if fsx is None:
        return None
    tier = fsx.per_unit_storage_throughput or (200 if fsx.deployment_type == "SCRATCH_2" else 125)
    price = FSX_LUSTRE_GB_MONTH[(fsx.deployment_type, tier)]
    hours = cfg.cost.hours_per_month
    monthly = round(price.usd * fsx.storage_capacity_gib, 2)
    hourly = round(monthly / hours, 4)
    where, regional = _where(price.region, price.as_of, cfg.aws.region)
    return Line(
        "storage.fsx",
        f"FSx for Lustre {fsx.deployment_type} {tier} MB/s/TiB, {fsx.storage_capacity_gib} GiB",
        f"${price.usd:.3f} {price.unit} of capacity, {where}",
        *(hourly, hourly, hourly),
        *(monthly, monthly, monthly),
        regional=regional,
    )


def service_lines(cfg: PlatformConfig, today: date) -> list[Line]:
    hours = cfg.cost.hours_per_month
    nats = len(nat_zones(cfg.network, cfg.aws.zones))
    nat = NAT_GATEWAY_HOURLY
    minor = cfg.cluster.kubernetes_version
    extended = in_extended_support(minor, today)
    eks = EKS_EXTENDED_HOURLY if extended else EKS_STANDARD_HOURLY
    support = "extended" if extended else "standard"
    nat_where, nat_regional = _where(nat.region, nat.as_of, cfg.aws.region)
    eks_where, eks_regional = _where(eks.region, eks.as_of, cfg.aws.region)
    lines = [
        _line(
            "network.nat_gateways",
            f"NAT gateways ({nats}, {cfg.network.nat_gateways})",
            f"${nat.usd:.3f} {nat.unit} each, {nat_where}; per-GB processing left out",
            nat.usd * nats,
            None,
            hours,
            regional=nat_regional,
        ),
        _line(
            "cluster",
            f"EKS control plane (Kubernetes {minor}, {support} support on {today.isoformat()})",
            f"${eks.usd:.2f} {eks.unit}, {eks_where}",
            eks.usd,
            None,
            hours,
            regional=eks_regional,
        ),
    ]
    fsx = fsx_line(cfg)
    return lines + ([fsx] if fsx else [])


def cost_lines(cfg: PlatformConfig, today: date) -> list[Line]:
    if cfg.provider != "aws":
        return []
    return [*node_group_lines(cfg), *selftest_lines(cfg), *service_lines(cfg, today)]


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
        # The priced items whose rate is not the region's: a us-east-1 rate stands in for it.
        "not_regional": [line.item for line in priced if not line.regional],
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
    }
    budget = cfg.cost.monthly_budget_usd
    if budget is not None:
        report["monthly_budget_usd"] = budget
        report["over_budget"] = report["total_monthly_max"] > budget
    if bursts:
        report["burst"] = bursts
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
