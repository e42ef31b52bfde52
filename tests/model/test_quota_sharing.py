"""Quota beyond the nominal and fair sharing (model/config/fair_sharing.py): what a stack may
set, refused with the stack file, the key path, the value and what is valid. Kueue v0.19.2's
rules: a queue lends only its own nominal quota (ClusterQueue schema, `lendingLimit`: "reserves
for its exclusive use ... nominalQuota - lendingLimit"), borrows only from its cohort
(`cohortName`: "CQs that belong to the same cohort can borrow unused resources from each
other"), reads weights only with fair sharing on (`fairSharing`: "only relevant if FairSharing
is enabled in the Kueue configuration"), and takes a half-life of 0 as no usage at all
(kubernetes-sigs/kueue#11134)."""

from __future__ import annotations

import pytest

from model.config.fair_sharing import AdmissionFairSharingSettings
from tests.helpers.bad_stacks import assert_refused, case
from tests.helpers.sharing_stacks import RAW, raw, stack_file, teams_config

Q = "gpu-platform:scheduling.cluster_queues"
AFS = "gpu-platform:scheduling.fair_sharing.admission"


def with_queue(i: int, **fields) -> dict:
    data = raw()
    data["scheduling"]["cluster_queues"][i].update(fields)
    return stack_file(data)


def alone(**fields) -> dict:
    """One queue holding every pool, alone in its cohort."""
    return stack_file(raw(cluster_queues=[{"name": "shared", **fields}], teams=[], fair_sharing={}))


def admission(**fields) -> dict:
    return stack_file(raw(fair_sharing={"admission": fields}))


BAD = [
    case(
        with_queue(1, lending_limit={"a100": 9}),
        f"{Q}[1].lending_limit.a100",
        "9 GPUs, more than the queue's nominal quota of 8",
        "give 0 to 8",
        id="lends-more-than-it-holds",
    ),
    case(
        with_queue(0, borrowing_limit={"a100": -1}),
        f"{Q}[0].borrowing_limit.a100",
        "-1",
        "give 0 or more",
        id="negative-borrowing",
    ),
    case(
        with_queue(0, borrowing_limit={"h100": 4}),
        f"{Q}[0].borrowing_limit.h100",
        "h100",
        "a100, l4-spot",
        id="unknown-pool",
    ),
    case(
        alone(borrowing_limit={"a100": 4}),
        f"{Q}[0].borrowing_limit",
        "only ClusterQueue of cohort gpu-platform",
        "no other queue to borrow from",
        id="borrows-with-no-one-to-lend",
    ),
    case(
        stack_file(raw(fair_sharing={"enabled": False})),
        f"{Q}[0].fair_sharing_weight",
        "fair sharing",
        "scheduling.fair_sharing.enabled: true",
        id="weight-without-fair-sharing",
    ),
    # The trap: Kueue's own default half-life.
    case(
        admission(usage_half_life="0s"),
        f"{AFS}.usage_half_life",
        "0s is 0",
        "give a positive duration",
        id="half-life-zero",
    ),
    case(
        admission(usage_sampling_interval="0m"),
        f"{AFS}.usage_sampling_interval",
        "0m is 0",
        "give a positive duration",
        id="sampling-zero",
    ),
    # Go's time.ParseDuration has no days.
    case(
        admission(usage_half_life="7d"),
        f"{AFS}.usage_half_life",
        "7d",
        "e.g. 168h",
        id="half-life-in-days",
    ),
    case(
        admission(team_weights={"search": 2}),
        f"{AFS}.team_weights.search",
        "search",
        "vision",
        id="weight-of-no-team",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD)
def test_a_limit_or_weight_kueue_would_not_honour_is_refused(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_the_half_life_a_stack_gets_is_set_never_kueues_zero():
    """Kueue v0.19.2 apis/config/v1beta2/defaults.go defaults only the sampling interval (5m);
    the half-life is the platform's: a week, as Kueue's docs and chart (values.yaml at 0.19.2:
    `usageHalfLifeTime: "168h" # 7 days`) configure it."""
    default = AdmissionFairSharingSettings()
    assert (default.usage_half_life, default.usage_sampling_interval) == ("168h", "5m")
    assert teams_config().scheduling.fair_sharing.admission == default.model_copy(
        update={"team_weights": {"vision": 2}}
    )
    assert RAW["scheduling"]["fair_sharing"]["admission"] == {"team_weights": {"vision": 2}}
