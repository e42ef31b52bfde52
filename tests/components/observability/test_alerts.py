"""The PrometheusRule: Prometheus's own promtool checks the generated rules of every stack and
runs the unit tests in tests/promtool/, which prove each alert fires when it should and stays
silent when it should not; the rest pins labels, thresholds from config, runbooks and bad input."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from components.observability import selftest_alerts, training_alerts
from components.observability.alerts import (
    alert_report,
    node_labels_read,
    prometheus_rule,
    prometheus_rule_spec,
)
from components.observability.monitoring import monitoring_values
from components.observability.node_series import ksm_label
from model.config import PlatformConfig
from model.config.alerts import AlertSettings, check_retention
from model.config.base import FieldProblem
from model.config.observability import ObservabilitySettings
from model.stacks import ROOT
from tests.conftest import STACKS, check_golden, planned, stack_config
from tests.helpers.alert_stacks import (
    aws_config,
    budget_config,
    promtool_cases,
    scheduled_config,
)
from tests.helpers.bad_stacks import ADMIN, GROUP, assert_refused, aws, case, existing
from tests.helpers.metric_sources import kept_labels
from tests.helpers.tools import promtool

PROMTOOL_TESTS = Path(__file__).parents[2] / "promtool" / "alerts_test.yaml"
AWS_ALERTS = {
    "GpuIdle",
    "GpuFramebufferFull",
    "GpuTemperatureHigh",
    "GpuMigrationCandidate",
    "GpuXidError",
    "GpuMissing",
    "KueueQueueBacklog",
    "EksNodeConditionFailed",
    "TrainingStraggler",
    # Every stack's Pushgateway holds the goodput trainkit pushes.
    "JobGoodputLow",
}
# Only where a pool is cut by MIG (aws_config's a100-mig group).
MIG_ALERTS = {"MigNodeNoAllocatableGpu"}
AWS_ALERTS |= MIG_ALERTS
# Where the periodic self-test pushes its results (selftest.schedule).
SELFTEST_ALERTS = {"SelfTestFailed", "SelfTestBelowFloor", "SelfTestStale"}
# Where new GPU nodes are tested before they take a job (selftest.node_join).
NODE_JOIN_ALERTS = {"NodeJoinStuck", "NodeJoinBreakerOpen"}
# Read from the training jobs' own series (tests/promtool/training_alerts_test.yaml).
TRAINING_ALERTS = {"TrainingStraggler", "JobGoodputLow"}
TRAINING_RECORDS = {
    "gpu_platform_job:goodput:ratio",
    "gpu_platform_job:rank_step_seconds:slowest_over_median",
}


def run_promtool(*args: str, cwd: Path) -> None:
    result = subprocess.run(
        [promtool(), *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


MIG_MIXED_TESTS = Path(__file__).parents[2] / "promtool" / "gpu_missing_mig_mixed_test.yaml"
SELFTEST_TESTS = Path(__file__).parents[2] / "promtool" / "selftest_alerts_test.yaml"
TRAINING_TESTS = Path(__file__).parents[2] / "promtool" / "training_alerts_test.yaml"
NODE_JOIN_TESTS = Path(__file__).parents[2] / "promtool" / "node_join_alerts_test.yaml"
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-selftest@sha256:" + "0" * 64


def rules_by_name(cfg: PlatformConfig) -> dict[str, dict]:
    spec = prometheus_rule_spec(cfg)
    return {r["alert"]: r for g in spec["groups"] for r in g["rules"] if "alert" in r}


# ---------------------------------------------------------------------------- promtool


@pytest.mark.parametrize("stack", STACKS)
def test_promtool_checks_the_rules_of_every_stack(stack, tmp_path):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(prometheus_rule_spec(stack_config(stack))))
    run_promtool("check", "rules", "rules.yaml", cwd=tmp_path)


def test_promtool_unit_tests_fire_and_stay_silent(tmp_path):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(prometheus_rule_spec(aws_config())))
    shutil.copy(PROMTOOL_TESTS, tmp_path / "alerts_test.yaml")
    run_promtool("test", "rules", "alerts_test.yaml", cwd=tmp_path)


def test_selftest_alerts_fire_on_a_failed_run_or_a_figure_below_floor_and_stay_silent(tmp_path):
    result = promtool_cases(tmp_path, prometheus_rule_spec(scheduled_config()), SELFTEST_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_node_that_left_the_cluster_never_alerts_on_its_last_push(tmp_path, monkeypatch):
    """The Pushgateway keeps a node's last push until it is deleted: without the join on the
    nodes kube-state-metrics still sees, a node scaled away would alert for ever."""
    monkeypatch.setattr(selftest_alerts, "STILL_A_NODE", "")
    result = promtool_cases(tmp_path, prometheus_rule_spec(scheduled_config()), SELFTEST_TESTS)
    assert result.returncode != 0
    assert "node-2" in result.stdout + result.stderr


def test_every_selftest_alert_has_a_firing_and_a_silent_promtool_case():
    cases = yaml.safe_load(SELFTEST_TESTS.read_text())["tests"]
    fires, silent = set(), set()
    for test in cases:
        for check in test["alert_rule_test"]:
            (fires if check.get("exp_alerts") else silent).add(check["alertname"])
    assert fires == silent == SELFTEST_ALERTS
    assert set(rules_by_name(scheduled_config())) == (
        AWS_ALERTS - MIG_ALERTS | SELFTEST_ALERTS | NODE_JOIN_ALERTS
    )
    # Without an image nothing runs on a schedule, nothing is pushed: no self-test alert.
    assert not set(rules_by_name(aws_config())) & SELFTEST_ALERTS


def node_join_config() -> PlatformConfig:
    """Two tested pools: a100 at the default limit, a100-slow at its own 60 minutes."""
    return PlatformConfig.model_validate(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [GROUP, {**GROUP, "name": "a100-slow"}],
            "selftest": {"image": IMAGE, "node_join": {"pool_timeout_minutes": {"a100-slow": 60}}},
        }
    )


def test_a_node_still_tainted_after_twice_its_pools_check_limit_alerts_and_others_stay_silent(
    tmp_path,
):
    result = promtool_cases(tmp_path, prometheus_rule_spec(node_join_config()), NODE_JOIN_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    cases = yaml.safe_load(NODE_JOIN_TESTS.read_text())["tests"]
    fires = {c["alertname"] for t in cases for c in t["alert_rule_test"] if c["exp_alerts"]}
    silent = {c["alertname"] for t in cases for c in t["alert_rule_test"] if not c["exp_alerts"]}
    assert fires == silent == NODE_JOIN_ALERTS
    # Without an image no node joins tainted: nothing to alert on.
    assert not set(rules_by_name(aws_config())) & NODE_JOIN_ALERTS


def test_the_node_join_alert_waits_twice_each_pools_limit():
    """a100 at the default 30 minutes: 3600 s; a100-slow at 60: 7200 s."""
    expr = rules_by_name(node_join_config())["NodeJoinStuck"]["expr"]
    assert "time() - kube_node_created > 3600 and on(node)" in expr
    assert "time() - kube_node_created > 7200 and on(node)" in expr
    assert 'label_gpu_platform_node_group="a100-slow"' in expr


def test_gpu_missing_counts_physical_gpus_under_mig_mixed(tmp_path):
    """MIG mixed advertises no nvidia.com/gpu but nvidia.com/mig-<profile> slices, four per GPU
    in the balanced layout: a healthy node stays silent, one that lost a GPU fires."""
    mixed = {**GROUP, "name": "a100-mig", "gpu_sharing": {"mode": "mig"}}
    rules = prometheus_rule_spec(aws_config([GROUP, mixed], mig_strategy="mixed"))
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    shutil.copy(MIG_MIXED_TESTS, tmp_path / "alerts_test.yaml")
    run_promtool("test", "rules", "alerts_test.yaml", cwd=tmp_path)


def test_gpu_missing_reads_the_device_plugin_config_label_kube_state_metrics_exports():
    """kube-state-metrics exports `nvidia.com/device-plugin.config` as
    `label_nvidia_com_device_plugin_config` (every character outside [a-zA-Z0-9_] becomes `_`,
    kube-state-metrics internal/store/utils.go) and only when it is allow-listed:
    `--metric-labels-allowlist=nodes=[...]`, the chart's `metricLabelsAllowlist`."""
    expr = rules_by_name(aws_config())["GpuMissing"]["expr"]
    assert 'kube_node_labels{label_nvidia_com_device_plugin_config=~"mig-single"}' in expr
    values = monitoring_values(ObservabilitySettings(), None, {})
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "nodes=[nvidia.com/device-plugin.config,nvidia.com/mig.config.state]",
        # The team cost rules' job: JobSet's pod label (jobset pkg/constants JobSetNameKey) and
        # the Job controller's (Kubernetes "Jobs", batch.kubernetes.io/job-name).
        "pods=[batch.kubernetes.io/job-name,jobset.sigs.k8s.io/jobset-name]",
    ]


@pytest.mark.parametrize(
    "cfg", [node_join_config, scheduled_config, aws_config], ids=lambda c: c.__name__
)
def test_every_node_label_a_rule_reads_is_one_kube_state_metrics_exports(cfg):
    """A `label_<key>` matcher on kube_node_labels that is not allow-listed matches no series,
    and its alert is silent for ever: every one read must come from node_labels_read."""
    config = cfg()
    exported = {ksm_label(key) for key in node_labels_read(config)}
    read = set()
    for rule in rules_by_name(config).values():
        for selector in re.findall(r"kube_node_labels\{([^}]*)\}", rule["expr"]):
            read |= set(re.findall(r"(label_\w+)\s*=", selector))
    assert read, "no rule reads a node label: the test reads nothing"
    assert read <= exported, sorted(read - exported)


def test_promtool_unit_tests_can_fail(tmp_path):
    """A threshold moved from 85 to 90 °C: the 86 °C case no longer fires, and promtool says so."""
    rules = prometheus_rule_spec(aws_config(temperature_celsius=90))
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    shutil.copy(PROMTOOL_TESTS, tmp_path / "alerts_test.yaml")
    result = subprocess.run(
        [promtool(), "test", "rules", "alerts_test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "GpuTemperatureHigh" in result.stdout + result.stderr


def test_missing_promtool_fails_and_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="apt-get install prometheus"):
        promtool()


def test_every_alert_has_a_firing_and_a_silent_promtool_case():
    cases = yaml.safe_load(PROMTOOL_TESTS.read_text())["tests"]
    fires, silent = set(), set()
    for test in cases:
        for check in test["alert_rule_test"]:
            (fires if check.get("exp_alerts") else silent).add(check["alertname"])
    assert fires == AWS_ALERTS - TRAINING_ALERTS
    assert silent == AWS_ALERTS - TRAINING_ALERTS
    assert set(rules_by_name(aws_config())) == AWS_ALERTS


# ------------------------------------------------------------------------------ the rule


@pytest.mark.parametrize("stack", ["dev", "onprem"])
def test_shipped_rules_match_their_reviewed_golden_file(stack):
    """The rendered rules of an AWS and an on-prem example, kept for review (UPDATE_GOLDEN=1)."""
    rendered = yaml.safe_dump(
        prometheus_rule_spec(stack_config(stack)), sort_keys=False, width=100, allow_unicode=True
    )
    check_golden(Path(__file__).parents[2] / "golden" / "alerts" / f"{stack}.yaml", rendered)


def test_existing_cluster_gets_gpu_and_queue_alerts_but_no_agent_alert():
    """No EKS node monitoring agent on an existing cluster: its GPU health comes from DCGM, and
    from the self-test it runs on a schedule."""
    assert set(rules_by_name(stack_config("onprem"))) == (
        AWS_ALERTS - {"EksNodeConditionFailed"} - MIG_ALERTS | SELFTEST_ALERTS | NODE_JOIN_ALERTS
    )


def test_pod_labels_are_the_exported_ones_everywhere():
    """honorLabels false: the GPU pod is `exported_pod`; a bare `pod` would be the exporter's."""
    for name, rule in rules_by_name(aws_config()).items():
        text = rule["expr"] + rule["annotations"]["description"]
        assert not re.search(r"(?<!exported_)\b(pod|namespace|container)\b(?==|!=|=~|})", text), (
            name
        )
    assert 'exported_pod!=""' in rules_by_name(aws_config())["GpuIdle"]["expr"]


def test_migration_candidate_reads_only_training_and_team_namespaces():
    cfg = PlatformConfig.model_validate(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [GROUP],
            "scheduling": {"teams": [{"name": "team-a", "cluster_queue": "shared"}]},
        }
    )
    expr = rules_by_name(cfg)["GpuMigrationCandidate"]["expr"]
    assert 'exported_namespace=~"training|team-a"' in expr


def test_thresholds_and_durations_come_from_config():
    rules = rules_by_name(
        aws_config(
            idle_utilisation_percent=50,
            idle_for="1h",
            temperature_celsius=80,
            queue_depth=25,
            straggler_percent=125,
        )
    )
    assert rules["TrainingStraggler"]["expr"].split(" > ")[1].startswith("1.25 and on")
    assert rules["GpuIdle"]["expr"].startswith("gpu_platform_job:gpu_utilisation:max < 50 or ")
    assert rules["GpuIdle"]["expr"].endswith(" < 50")
    assert rules["GpuIdle"]["for"] == "1h"
    assert rules["GpuTemperatureHigh"]["expr"] == "DCGM_FI_DEV_GPU_TEMP > 80"
    assert rules["KueueQueueBacklog"]["expr"].endswith("> 25")


def test_source_documents_defaults():
    """The source documents: idle < 30 % for 30 minutes, memory > 95 %, > 85 °C, a training pod
    > 90 %, queue depth 10 for the 300 s scale-up cooldown."""
    a = AlertSettings()
    assert (a.idle_utilisation_percent, a.idle_for) == (30, "30m")
    assert a.framebuffer_full_percent == 95
    assert a.temperature_celsius == 85
    assert a.migration_framebuffer_percent == 90
    assert (a.queue_depth, a.queue_depth_for) == (10, "300s")


def test_training_defaults_follow_their_sources():
    """Goodput: 50 %, the least a job checkpointing once per window is credited with, far
    under the over 90 % effective training time of Llama 3 405B (arXiv:2407.21783,
    section 3.3.4), over the hour the issue names. Stragglers: nvidia-resiliency-ext's
    `gpu_relative_perf_threshold=0.7` against the fastest rank (docs/source/straggler_det/
    usage_guide.rst), so no more than 1/0.7 of the median; for two of its 300 s reports."""
    a = AlertSettings()
    assert (a.goodput_percent, a.goodput_window) == (50, "1h")
    assert a.straggler_percent / 100 <= 1 / 0.7
    assert a.straggler_percent == 140
    assert a.straggler_for == "10m"


@pytest.mark.parametrize("cfg", [scheduled_config, aws_config, budget_config])
def test_every_alert_names_severity_summary_description_and_a_runbook(cfg):
    runbooks = (ROOT / "docs" / "monitoring.md").read_text()
    for name, rule in rules_by_name(cfg()).items():
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}, name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        assert rule["annotations"]["runbook_url"] == f"docs/monitoring.md#{name.lower()}"
        assert f"\n### {name}\n" in runbooks, f"docs/monitoring.md has no runbook for {name}"
    assert "\n## Alerts and runbooks\n" in runbooks


def severity_table() -> dict[str, str]:
    """Alert -> severity, as the table of docs/monitoring.md's "Alerts and runbooks" gives it."""
    text = (ROOT / "docs" / "monitoring.md").read_text().split("\n## Alerts and runbooks\n")[1]
    rows = re.findall(r"^\| (\w+) \|.*\| (info|warning|critical) \|$", text, re.MULTILINE)
    return dict(rows)


@pytest.mark.parametrize(
    "cfg", [scheduled_config, aws_config, budget_config, lambda: stack_config("onprem")]
)
def test_every_alert_is_in_the_severity_table_at_its_severity(cfg):
    """The table operators route by says what each rule pages at: a rule whose severity moves,
    or a rule the table lacks, fails here."""
    rules = {name: r["labels"]["severity"] for name, r in rules_by_name(cfg()).items()}
    table = severity_table()
    assert {name: table.get(name) for name in rules} == rules


# ------------------------------------------------------------------------ training jobs


def test_training_rules_fire_on_lost_goodput_and_a_slow_node_and_stay_silent(tmp_path):
    result = promtool_cases(tmp_path, prometheus_rule_spec(scheduled_config()), TRAINING_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_training_alert_has_a_firing_and_a_silent_promtool_case():
    cases = yaml.safe_load(TRAINING_TESTS.read_text())["tests"]
    fires, silent, records = set(), set(), set()
    for test in cases:
        for check in test.get("alert_rule_test", []):
            (fires if check.get("exp_alerts") else silent).add(check["alertname"])
        records |= {check["expr"] for check in test.get("promql_expr_test", [])}
    assert fires == silent == TRAINING_ALERTS
    assert records == TRAINING_RECORDS
    spec = prometheus_rule_spec(scheduled_config())
    # The fleet's records, the pools' baselines and the team cost have their own cases
    # (tests/promtool/fleet_test.yaml, baseline_test.yaml, team_cost_test.yaml); the idle jobs'
    # record is GpuIdle's (tests/promtool/alerts_test.yaml).
    own = {
        "gpu-platform.fleet",
        "gpu-platform.baseline",
        "gpu-platform.idle",
        "gpu-platform.team-cost",
    }
    training = [g for g in spec["groups"] if g["name"] not in own]
    assert {r["record"] for g in training for r in g["rules"] if "record" in r} == (
        TRAINING_RECORDS
    )


def mutated(cfg: PlatformConfig, record: str, drop: str) -> dict:
    """The stack's rules with `drop` cut out of one recording rule's expression."""
    spec = prometheus_rule_spec(cfg)
    (rule,) = [r for g in spec["groups"] for r in g["rules"] if r.get("record") == record]
    assert drop in rule["expr"]
    rule["expr"] = rule["expr"].replace(drop, "")
    return spec


def test_a_job_is_judged_only_on_a_window_it_had_pushed_through(tmp_path):
    """Without the guard on the job's figures a window ago, a job in its first hour, with no
    checkpoint yet, reads 0 % and alerts."""
    drop = (
        " and on(namespace, job_name, team, queue, pool) "
        'gpu_platform_job_allocated_gpu_seconds{job="training-goodput"} offset 1h'
    )
    result = promtool_cases(
        tmp_path,
        mutated(scheduled_config(), "gpu_platform_job:goodput:ratio", drop),
        TRAINING_TESTS,
    )
    assert result.returncode != 0
    assert 'job_name="starting"' in result.stdout + result.stderr


def test_a_one_rank_job_has_no_straggler_ratio(tmp_path):
    drop = f" {training_alerts.SEVERAL_RANKS}"
    spec = mutated(
        scheduled_config(), "gpu_platform_job:rank_step_seconds:slowest_over_median", drop
    )
    result = promtool_cases(tmp_path, spec, TRAINING_TESTS)
    assert result.returncode != 0
    assert 'job_name="alone"' in result.stdout + result.stderr


def test_goodput_is_judged_without_a_scheduled_self_test():
    """The Pushgateway that holds the goodput is every stack's, not the self-test schedule's."""
    text = yaml.safe_dump(prometheus_rule_spec(aws_config()))
    assert "gpu_platform_job:goodput:ratio" in text
    assert "JobGoodputLow" in text


def test_the_rule_lives_in_the_monitoring_namespace():
    obj = prometheus_rule(aws_config(), "monitoring")
    assert (obj["apiVersion"], obj["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert obj["metadata"]["namespace"] == "monitoring"


def test_plan_lists_every_alert_with_threshold_and_duration():
    alerts = planned("dev").outputs["alerts"]
    assert set(alerts) == AWS_ALERTS - MIG_ALERTS
    assert alerts["GpuIdle"] == "GPU utilisation (every GPU of a job) < 30 % for 30m"
    assert alerts["KueueQueueBacklog"] == "pending workloads per ClusterQueue > 10 for 300s"
    assert alert_report(stack_config("onprem"))["GpuTemperatureHigh"] == (
        "GPU temperature > 85 celsius for 5m"
    )


# ------------------------------------------------------------------------------ bad input


A = "gpu-platform:alerts"
BAD_ALERTS = [
    case(aws(alerts={"idle_utilisation_percent": 0}), f"{A}.idle_utilisation_percent", "0",
         "greater than or equal to 1", "percent-zero"),
    case(aws(alerts={"framebuffer_full_percent": 101}), f"{A}.framebuffer_full_percent", "101",
         "less than or equal to 100", "percent-over-100"),
    case(aws(alerts={"temperature_celsius": 150}), f"{A}.temperature_celsius", "150",
         "less than or equal to 120", "temperature-over-120"),
    case(aws(alerts={"temperature_celsius": 20}), f"{A}.temperature_celsius", "20",
         "greater than or equal to 30", "temperature-under-30"),
    case(aws(alerts={"idle_for": "30 minutes"}), f"{A}.idle_for", "30 minutes",
         "Prometheus duration", "duration-words"),
    case(aws(alerts={"queue_depth_for": "300"}), f"{A}.queue_depth_for", "300", "e.g. 30m",
         "duration-no-unit"),
    case(aws(alerts={"goodput_percent": 0}), f"{A}.goodput_percent", "0",
         "greater than or equal to 1", "goodput-zero"),
    case(aws(alerts={"goodput_window": "an hour"}), f"{A}.goodput_window", "an hour",
         "Prometheus duration", "goodput-window-words"),
    # A node as fast as the median is no straggler: the threshold must be above it.
    case(aws(alerts={"straggler_percent": 100}), f"{A}.straggler_percent", "100",
         "greater than or equal to 101", "straggler-at-median"),
    case(existing(alerts={"node_condition_for": "5m"}), f"{A}.node_condition_for", "5m",
         "only valid with provider aws", "agent-condition-on-existing"),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD_ALERTS)
def test_bad_alert_settings_are_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_a_retention_shorter_than_the_longest_alert_window_is_refused():
    # Prometheus would have dropped the start of a 2-day window after 1 day of retention.
    # The Fleet health window (a week by default) and the baseline's (two weeks) are two.
    short_fleet = {"fleet_window": "1d", "baseline_window": "1d"}
    with pytest.raises(FieldProblem) as raised:
        check_retention(1, AlertSettings(idle_for="2d", **short_fleet))
    assert raised.value.field == "observability.retention_days"
    assert "alerts.idle_for (2d)" in str(raised.value)
    check_retention(2, AlertSettings(idle_for="2d", **short_fleet))
    with pytest.raises(FieldProblem, match=r"alerts.fleet_window \(7d\)"):
        check_retention(6, AlertSettings(baseline_window="1d"))
    with pytest.raises(FieldProblem, match=r"alerts.baseline_window \(14d\)"):
        check_retention(13, AlertSettings())
    check_retention(15, AlertSettings())


def test_the_stack_refuses_a_retention_shorter_than_an_alert_window(tmp_path, monkeypatch, capsys):
    stack = aws(
        observability={"retention_days": 1},
        alerts={"idle_for": "2d", "fleet_window": "1d", "baseline_window": "1d"},
    )
    assert_refused(
        tmp_path, monkeypatch, capsys, stack, "gpu-platform:observability.retention_days", "", "2d"
    )


# A range selector hands the engine every sample in its range (Prometheus 2.42 evaluates a range
# function over the whole matrix it selects), so a series kept per job and read back over days
# costs one evaluation the month's jobs times the days gone: `make bench-rules` measured the team
# cost month to date, when it was kept per job, at 16 million samples an evaluation with 1,000 jobs
# on the 28th, and Prometheus refuses a query past 50 million (--query.max-samples).
LONG_RANGE = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\[(\d+)d\]")
PER_JOB = {"job_name", "pod", "exported_pod"}


@pytest.mark.parametrize("stack", STACKS)
def test_no_rule_reads_a_series_kept_per_job_over_days(stack):
    cfg = stack_config(stack)
    rules = [r for g in prometheus_rule_spec(cfg)["groups"] for r in g["rules"]]
    kept = {r["record"]: kept_labels(r["expr"]) for r in rules if "record" in r}
    for rule in rules:
        for name, _days in LONG_RANGE.findall(rule["expr"]):
            assert not kept.get(name, set()) & PER_JOB, (
                f"{rule.get('record') or rule.get('alert')} reads {name}, kept by "
                f"{sorted(kept[name])}, over days"
            )
