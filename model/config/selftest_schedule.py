"""The periodic self-test (components/selftest/schedule.py): a CronJob per GPU pool that runs the
short check set on one idle node at the lowest priority, pushes its figures to a Pushgateway for
the fleet dashboard and the alerts, and may cordon a node that fails.

Left unset, `enabled` follows the image: on once `selftest.image` is set, like the post-deploy
run, since the CronJob has nothing to run without one.
"""

from __future__ import annotations

from datetime import date, timedelta
from itertools import pairwise
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, Field

from model.config.base import DnsLabel, Documented, FieldProblem, Int, Settings
from model.config.pools import always_up_pools, windowed_keys
from model.config.references import GPU_POOL, refers
from model.config.scheduling import autoscaled

if TYPE_CHECKING:
    from model.config import PlatformConfig

# The CronJob schedule syntax (Kubernetes docs, "CronJob", "Schedule syntax"): five fields,
# minute 0-59, hour 0-23, day of month 1-31, month 1-12, day of week 0-6 (Sunday to Saturday),
# each `*`, a value, a range `a-b` or a list of them, each with an optional `/step`; months and
# days may be named (JAN-DEC, SUN-SAT) and `?` stands for `*` in the day fields; or one of the
# macros below. The time zone is the CronJob's `timeZone` (UTC here), never a `TZ=` prefix.
CRON_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
CRON_WORDS = (
    "a cron schedule of five fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or "
    "JAN-DEC, day of week 0-6 or SUN-SAT; each *, a value, a range a-b or a list, with an "
    f"optional /step), e.g. `0 */4 * * *`, or one of {', '.join(CRON_MACROS)}; in UTC"
)


def _value(text: str, low: int, high: int, names: tuple[str, ...]) -> int | None:
    if text.upper() in names:
        return names.index(text.upper()) + low
    if text.isdigit() and low <= int(text) <= high:
        return int(text)
    return None


def _item_problem(item: str, field: tuple[str, int, int, tuple[str, ...]]) -> str | None:
    name, low, high, names = field
    span, _, step = item.partition("/")
    if step and not (step.isdigit() and int(step) > 0):
        return f"{name}: step {step!r} is not a whole number above 0"
    if span == "*" or (span == "?" and name.startswith("day")):
        return None
    bounds = span.split("-")
    values = [_value(b, low, high, names) for b in bounds]
    if len(bounds) > 2 or None in values:
        return f"{name}: {span!r} is not a value or range within {low}-{high}"
    if len(values) == 2 and values[0] > values[1]:
        return f"{name}: range {span!r} runs backwards"
    return None


def cron_problem(schedule: str) -> str | None:
    """Why Kubernetes would refuse `schedule` as a CronJob's, or None."""
    if schedule in CRON_MACROS:
        return None
    fields = schedule.split()
    if len(fields) != 5:
        return f"{len(fields)} fields, not 5"
    for text, field in zip(fields, _FIELDS, strict=True):
        for item in text.split(","):
            why = _item_problem(item, field)
            if why:
                return why
    return None


# What each macro stands for (robfig/cron, which the CronJob controller parses schedules with).
MACRO_FIELDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Five calendar years hold every gap a five-field schedule has: a leap year whole, and every
# weekday on every date.
_SPAN_START = date(2025, 1, 1)
_SPAN_DAYS = (date(2030, 1, 1) - _SPAN_START).days


def _values(text: str, field: tuple[str, int, int, tuple[str, ...]]) -> set[int]:
    """The values one field matches (a valid field: cron_problem passed it)."""
    _, low, high, names = field
    found: set[int] = set()
    for item in text.split(","):
        span, _, step = item.partition("/")
        if span in ("*", "?"):
            first, last = low, high
        else:
            bounds = [_value(b, low, high, names) for b in span.split("-")]
            # `a/step` runs from a to the field's end (robfig/cron getRange).
            first, last = bounds[0], bounds[-1] if len(bounds) == 2 or not step else high
        found.update(range(first, last + 1, int(step or 1)))
    return found


def _start_minutes(schedule: str) -> list[int]:
    """Every start, in minutes from the span's first midnight (UTC)."""
    minute, hour, dom, month, dow = MACRO_FIELDS.get(schedule, schedule).split()
    minutes, hours = _values(minute, _FIELDS[0]), _values(hour, _FIELDS[1])
    days, months, weekdays = (
        _values(t, f) for t, f in zip((dom, month, dow), _FIELDS[2:], strict=True)
    )
    # Both day fields restricted: a day matching either runs (cron(8), robfig/cron dayMatches).
    either = dom not in ("*", "?") and dow not in ("*", "?")
    times = sorted(h * 60 + m for h in hours for m in minutes)
    starts = []
    for offset in range(_SPAN_DAYS):
        day = _SPAN_START + timedelta(days=offset)
        if day.month not in months:
            continue
        by_date, by_weekday = day.day in days, day.isoweekday() % 7 in weekdays
        if (by_date or by_weekday) if either else (by_date and by_weekday):
            starts += [offset * 1440 + t for t in times]
    return starts


def longest_gap_minutes(schedule: str) -> int:
    """The longest wait between two starts of `schedule`: `0 */4 * * *` waits 240 minutes. A
    schedule that starts once or never in five years (February 29th) waits all of them."""
    starts = _start_minutes(schedule)
    if len(starts) < 2:
        return _SPAN_DAYS * 1440
    return max(b - a for a, b in pairwise(starts))


def starts_per_month(schedule: str, hours_per_month: float) -> float:
    """How many runs `schedule` starts in a month of `hours_per_month`, on average."""
    return len(_start_minutes(schedule)) / (_SPAN_DAYS * 24) * hours_per_month


def _check_cron(schedule: str) -> str:
    why = cron_problem(schedule)
    if why:
        raise ValueError(f"{why}; expected {CRON_WORDS}")
    return schedule


Cron = Annotated[str, AfterValidator(_check_cron), Documented(CRON_WORDS)]

Checks = Literal["short", "full"]
# A CronJob's name is at most 52 characters, since its Jobs add an 11-character suffix
# (Kubernetes docs, "CronJob", "Writing a CronJob spec"); its name is `selftest-<pool>`.
CRON_JOB_POOL_CHARS = 52 - len("selftest-")


class ScheduleSettings(Settings):
    """The periodic self-test (docs/selftest.md, "On a schedule")."""

    enabled: bool | None = Field(
        None,
        description="Run the self-test on a schedule. Default: on once selftest.image is set.",
    )
    cron: Cron = Field(
        "0 */4 * * *",
        description="When each pool's run starts, in UTC (the CronJob's schedule): every four "
        "hours by default. Each run tests one idle node of the pool that is already up. A pool "
        "with nodes but no push for twice the longest gap between starts alerts "
        "(SelfTestStale).",
    )
    pools: list[Annotated[DnsLabel, refers(GPU_POOL)]] | None = Field(
        None,
        description="The GPU pools that get a CronJob. Default: every pool without MIG (the "
        "self-test measures whole GPUs) nor a reservation_window (its flavor is closed outside "
        "the window; the node-join check tests its nodes in the warm-up).",
    )
    checks: Checks = Field(
        "short",
        description="The image's check set (SELFTEST_CHECKS): `short` fits in a few minutes "
        "on an idle node; `full` is the post-deploy set.",
    )
    timeout_minutes: Int = Field(
        15,
        ge=5,
        le=240,
        description="How long a run may take once admitted (activeDeadlineSeconds) (5-240).",
    )
    provision_nodes: bool = Field(
        False,
        description="Let a run ask for a node where its pool has none idle: the autoscaler "
        "starts one from zero for every run (the cost estimate prices it). Default: runs test "
        "only nodes already up and idle, and wait for one otherwise.",
    )


def scheduled(cfg: PlatformConfig) -> bool:
    """The periodic self-test runs: asked for, or left unset on a stack with an image."""
    schedule = cfg.selftest.schedule
    if schedule.enabled is not None:
        return schedule.enabled
    return cfg.selftest.image is not None


def scheduled_pools(cfg: PlatformConfig) -> list[str]:
    if not scheduled(cfg):
        return []
    if cfg.selftest.schedule.pools is not None:
        return list(cfg.selftest.schedule.pools)
    return [p.name for p in always_up_pools(cfg) if p.sharing.mode != "mig"]


def check_schedule(cfg: PlatformConfig) -> None:
    """The schedule's rules that need the pools and the image."""
    if not scheduled(cfg):
        return
    if cfg.selftest.image is None:
        raise FieldProblem(
            "selftest.schedule.enabled",
            "true, but selftest.image is not set: the CronJob would have nothing to run; give "
            "the image's digest (docs/selftest.md) or remove enabled",
        )
    if not cfg.gpu_pools:
        raise FieldProblem(
            "selftest.schedule.enabled",
            "the stack has no GPU pool to test; set selftest.schedule.enabled: false",
        )
    if cfg.selftest.schedule.provision_nodes and not autoscaled(cfg):
        raise FieldProblem(
            "selftest.schedule.provision_nodes",
            "true, but no cluster-autoscaler of this platform sizes the GPU pools (an existing "
            "cluster, or autoscaler.enabled false): runs can only use the nodes that are up; "
            "remove it",
        )
    pools = {p.name: p for p in cfg.gpu_pools}
    up = {p.name for p in always_up_pools(cfg)}
    listed = cfg.selftest.schedule.pools
    for i, name in enumerate(scheduled_pools(cfg)):
        if len(name) > CRON_JOB_POOL_CHARS:
            raise FieldProblem(
                "selftest.schedule.pools" + (f"[{i}]" if listed else ""),
                f"{name!r} is {len(name)} characters: its CronJob selftest-{name} would pass "
                f"Kubernetes' 52; schedule pools of at most {CRON_JOB_POOL_CHARS} characters, or "
                "list the others",
            )
        if name in pools and pools[name].sharing.mode == "mig":
            raise FieldProblem(
                f"selftest.schedule.pools[{i}]",
                f"{name!r} cuts its GPUs into MIG slices; the self-test measures whole GPUs, "
                "list pools without MIG",
            )
        if name in pools and name not in up:
            raise FieldProblem(
                f"selftest.schedule.pools[{i}]",
                f"{name!r} has a reservation_window: its flavor is closed outside the window, "
                "so most runs would never be admitted (the node-join check tests its nodes in "
                "the warm-up); list pools without one",
            )
    if not scheduled_pools(cfg):
        raise FieldProblem(
            "selftest.schedule.pools",
            "no pool to run on: every GPU pool of the stack uses MIG, which the self-test "
            "cannot measure, or has a reservation window"
            + (f" ({', '.join(windowed_keys(cfg))})" if windowed_keys(cfg) else "")
            + "; set selftest.schedule.enabled: false",
        )
