"""The self-test's alerts (components/observability/selftest_alerts.py) come where their series
are pushed and their labels exist: the scheduled runs' where runs are scheduled, the node-join
ones where new nodes are tested. Their promtool cases, firing and silent, run in test_alerts.py
with the rest of the stack's rules."""

from __future__ import annotations

from components.observability.node_series import as_hostname
from components.observability.selftest_alerts import (
    node_join_rules,
    released_nodes,
    selftest_rules,
)
from tests.helpers.alert_stacks import aws_config, scheduled_config


def test_no_selftest_alert_where_nothing_runs_or_joins_tested():
    """Without an image nothing runs on a schedule and no node joins tainted."""
    cfg = aws_config()
    assert selftest_rules(cfg) == [] and node_join_rules(cfg) == []


def test_with_an_image_each_rule_names_its_node_and_pool():
    cfg = scheduled_config()
    names = {a.name for a in [*selftest_rules(cfg), *node_join_rules(cfg)]}
    assert {"NodeJoinStuck", "NodeJoinBreakerOpen"} <= names
    # The breaker's state: the pool's nodes labelled released (kube_node_labels), counted;
    # the pool's selector is its node group's label (tests/helpers/bad_stacks.py GROUP, a100).
    assert released_nodes(cfg) == (
        'label_replace(count(kube_node_labels{label_gpu_platform_node_group="a100", '
        'label_gpu_platform_node_join="released"}), "pool", "a100", "", "")'
    )


def test_a_node_is_named_as_the_dcgm_series_name_it():
    assert as_hostname("up") == 'label_replace(up, "Hostname", "$1", "node", "(.+)")'
