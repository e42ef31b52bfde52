"""scheduling.idle_reclaim refused clearly (issue 40 §3): production training only when the
stack says so explicitly, something named to reclaim, Kueue and the image the reclaimer needs,
and never before the team's idle alert could fire. Each refusal names the stack file, the key
path, the bad value and what is valid, and declares nothing."""

from __future__ import annotations

import pytest

from model.config.scheduling import SchedulingSettings
from tests.helpers.alert_stacks import IMAGE
from tests.helpers.bad_stacks import NS, assert_refused, aws, case

S = f"{NS}:scheduling.idle_reclaim"
SELFTEST = {"image": IMAGE}
BAD_RECLAIM = [
    case(aws(selftest=SELFTEST, scheduling={"idle_reclaim": {
        "priority_classes": ["preemptible", "production-training"]}}),
         f"{S}.priority_classes[1]", "production-training", "allow_production: true",
         "production-without-allow"),
    case(aws(selftest=SELFTEST, scheduling={"idle_reclaim": {}}), f"{S}.cluster_queues",
         "empty", "name the ClusterQueues or priority classes", "names-nothing"),
    case(aws(selftest=SELFTEST, scheduling={"idle_reclaim": {"cluster_queues": ["shared"],
                                                            "after_minutes": 10}}),
         f"{S}.after_minutes", "10", "give at least 30", "before-the-alert"),
    case(aws(scheduling={"idle_reclaim": {"cluster_queues": ["shared"]}}), S,
         "selftest.image is not", "set selftest.image", "no-image"),
    case(aws(selftest=SELFTEST, scheduling={"enabled": False,
                                            "idle_reclaim": {"cluster_queues": ["shared"]}}),
         S, "scheduling.enabled is false", "enable scheduling", "no-kueue"),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD_RECLAIM)
def test_bad_idle_reclaim_is_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_nothing_is_reclaimed_by_default():
    """Unset, idle GPUs are only alerted: reclaiming is the stack's choice."""
    assert SchedulingSettings().idle_reclaim is None
