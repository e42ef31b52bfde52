"""Every alert setting reaches the PrometheusRule (STYLE.md §14): every stack and golden file
uses the defaults, so a duration or threshold written into components/observability/alerts.py
as a literal would pass them; test_alerts.py varies five of them. Here one stack sets
every one to a value no default has, and each rule follows it."""

from __future__ import annotations

from components.observability.alerts import prometheus_rule_spec
from model.config import PlatformConfig
from model.config.alerts import AlertSettings
from tests.helpers.alert_stacks import IMAGE
from tests.helpers.bad_stacks import ADMIN

VARIED = {
    "runbook_base_url": "https://wiki.example.com/gpu-runbooks",
    "idle_utilisation_percent": 20,
    "idle_for": "45m",
    "framebuffer_full_percent": 97,
    "framebuffer_full_for": "7m",
    "temperature_celsius": 88,
    "temperature_for": "3m",
    "migration_framebuffer_percent": 92,
    "migration_for": "12m",
    "xid_window": "20m",
    "gpu_missing_for": "15m",
    "mig_unallocatable_for": "25m",
    "queue_depth": 12,
    "queue_depth_for": "6m",
    "node_condition_for": "8m",
    "goodput_percent": 35,
    "goodput_window": "3h",
    "straggler_percent": 175,
    "straggler_for": "25m",
    "fleet_window": "3d",
    "baseline_window": "5d",
}


def config() -> PlatformConfig:
    return PlatformConfig.model_validate(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [
                {"name": "a100", "instance_types": ["p4d.24xlarge"]},
                {
                    "name": "a100-mig",
                    "instance_types": ["p4d.24xlarge"],
                    "gpu_sharing": {"mode": "mig"},
                },
            ],
            # An image: the self-test runs on a schedule and pushes, so the pools' baselines
            # are recorded.
            "selftest": {"image": IMAGE},
            "alerts": VARIED,
        }
    )


def records() -> list[dict]:
    return [
        r for g in prometheus_rule_spec(config())["groups"] for r in g["rules"] if "record" in r
    ]


def rules() -> dict[str, dict]:
    spec = prometheus_rule_spec(config())
    return {r["alert"]: r for g in spec["groups"] for r in g["rules"] if "alert" in r}


def test_every_alert_setting_is_the_stack_s_not_the_default():
    assert set(VARIED) == set(AlertSettings.model_fields), "a new alert setting: vary it here"
    r = rules()
    assert r["GpuIdle"]["expr"].endswith("< 20") and r["GpuIdle"]["for"] == "45m"
    assert r["GpuFramebufferFull"]["expr"].endswith("> 97")
    assert r["GpuFramebufferFull"]["for"] == "7m"
    assert r["GpuTemperatureHigh"]["expr"] == "DCGM_FI_DEV_GPU_TEMP > 88"
    assert r["GpuTemperatureHigh"]["for"] == "3m"
    assert r["GpuMigrationCandidate"]["expr"].endswith("> 92")
    assert r["GpuMigrationCandidate"]["for"] == "12m"
    assert r["GpuXidError"]["expr"] == "max_over_time(DCGM_FI_DEV_XID_ERRORS[20m]) > 0"
    assert r["GpuMissing"]["for"] == "15m"
    assert r["MigNodeNoAllocatableGpu"]["for"] == "25m"
    assert r["KueueQueueBacklog"]["expr"].endswith("> 12")
    assert r["KueueQueueBacklog"]["for"] == "6m"
    assert r["EksNodeConditionFailed"]["for"] == "8m"
    assert r["JobGoodputLow"]["expr"].endswith("< 0.35")
    (ratio,) = [x for x in records() if x["record"] == "gpu_platform_job:goodput:ratio"]
    assert "[3h]" in ratio["expr"] and "[1h]" not in ratio["expr"]
    assert ratio["expr"].endswith("offset 3h")
    (failures,) = [x for x in records() if x["record"] == "gpu_platform_node:failures:window"]
    assert failures["expr"].count("[3d]") == 2 and "[7d]" not in failures["expr"]
    (last,) = [x for x in records() if x["record"].endswith(":last_over_window")]
    assert "[5d]" in last["expr"] and "[14d]" not in last["expr"]
    assert " > 1.75 and on" in r["TrainingStraggler"]["expr"]
    assert r["TrainingStraggler"]["for"] == "25m"
    for name, rule in r.items():
        assert rule["annotations"]["runbook_url"] == (
            f"https://wiki.example.com/gpu-runbooks#{name.lower()}"
        )
