"""GPU node tuning at boot (compute mode, persistence, power limit, application clocks) and EFA
hugepages: the catalog's limits, the config checks, the boot script in the user data, the
autoscaler's view of hugepages, and the plan's `gpu_tuning` output."""

from __future__ import annotations

import re
import subprocess

import pytest
from pydantic import ValidationError

from components.data.gpu_node_group import autoscaler_tags, group_user_data
from components.data.nodes import nvidia_smi_commands
from model.catalog import CATALOG
from model.config import GpuNodeGroupSettings, GpuTuningSettings
from tests.conftest import planned
from tests.helpers.autoscaler_tags import NODE_TEMPLATE
from tests.helpers.bad_stacks import assert_refused, case, group
from tests.helpers.instance_facts import FACTS
from tests.helpers.user_data import shell_parts


def gpu_group(**fields) -> GpuNodeGroupSettings:
    return GpuNodeGroupSettings(**{"name": "g", "instance_types": ["p5.48xlarge"], **fields})


# ------------------------------------------------------------------------------ catalog facts


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_only_efa_types_reserve_hugepages_and_they_reserve_5128(name):
    # EKS user guide, "Run machine learning training on Amazon EKS with Elastic Fabric
    # Adapter": "Amazon EC2 instances with the EFA driver installed pre-allocate 5128 2MiB Huge
    # Pages"; the EFA installer's efa_test.sh checks for at least 5128.
    assert CATALOG[name].hugepages_2mi == (5128 if FACTS[name].efa_interfaces else 0)


def test_every_gpu_type_has_limits_for_its_model():
    """A new GPU type must bring its model's power range, or power limits there go unchecked."""
    missing = [n for n, row in CATALOG.items() if row.gpus and row.gpu_limits is None]
    assert missing == []


@pytest.mark.parametrize(
    ("name", "watts"),
    [
        # `nvidia-smi -q -d POWER`, Min/Max Power Limit, as read on each GPU.
        ("p4d.24xlarge", (100, 400)),  # A100-SXM4-40GB
        ("p4de.24xlarge", (100, 400)),  # A100-SXM4-80GB
        ("p5.48xlarge", (200, 700)),  # H100 80GB HBM3
        ("g5.12xlarge", (100, 300)),  # A10G
        ("g6e.48xlarge", (150, 350)),  # L40S
        ("g6.48xlarge", (40, 72)),  # NVIDIA L4, driver 550.90.07
        ("g4dn.12xlarge", (60, 70)),  # Tesla T4, driver 530.30.02
        # Tesla V100-SXM2-16GB; p3dn's 32 GB part is the same 300 W SXM2 board (V100 datasheet).
        ("p3dn.24xlarge", (150, 300)),
        # NVIDIA datasheets give the maximum: H200 SXM 700 W, HGX B200 1000 W.
        ("p5en.48xlarge", (200, 700)),
        ("p6-b200.48xlarge", (200, 1000)),
    ],
)
def test_power_limit_range_per_gpu_model(name, watts):
    limits = CATALOG[name].gpu_limits
    assert (limits.min_power_watts, limits.max_power_watts) == watts


@pytest.mark.parametrize(
    ("name", "clocks"),
    [
        # `nvidia-smi -q`, Applications Clocks (memory, graphics) at their maximum; the P4d pair
        # is the one AWS's "Optimize GPU settings" page gives (`nvidia-smi -ac 1215,1410`).
        ("p4d.24xlarge", ((1215, 1410),)),
        ("p5.48xlarge", ((2619, 1980),)),
        ("g5.48xlarge", ((6251, 1710),)),
        ("g6.xlarge", ((6251, 2040),)),  # NVIDIA L4: memory 6251, graphics 2040 MHz
        # AWS "Optimize GPU settings": G4dn `nvidia-smi -ac 5001,1590`, P3dn `-ac 877,1530`.
        ("g4dn.xlarge", ((5001, 1590),)),
        ("p3dn.24xlarge", ((877, 1530),)),
        ("p5e.48xlarge", ()),
        ("p6-b200.48xlarge", ()),
    ],
)
def test_application_clock_pairs_per_gpu_model(name, clocks):
    assert CATALOG[name].gpu_limits.application_clocks == clocks


# -------------------------------------------------------------------------------- config model


def test_exclusive_process_with_mps_is_accepted():
    # NVIDIA MPS guide: with MPS, EXCLUSIVE_PROCESS is recommended, so that the MPS control
    # daemon is the one process each GPU serves.
    g = gpu_group(
        gpu_sharing={"mode": "mps", "replicas": 2},
        gpu_tuning={"compute_mode": "exclusive-process"},
    )
    assert g.gpu_tuning.compute_mode == "exclusive-process"


@pytest.mark.parametrize("watts", [200, 700])
def test_power_limit_at_the_bounds_is_accepted(watts):
    assert gpu_group(gpu_tuning={"power_limit_watts": watts}).gpu_tuning.power_limit_watts == watts


@pytest.mark.parametrize("watts", [199, 701])
def test_power_limit_past_the_bounds_is_refused(watts):
    with pytest.raises(ValidationError, match=f"{watts} W is outside p5.48xlarge's H100"):
        gpu_group(gpu_tuning={"power_limit_watts": watts})


def test_every_type_of_a_mixed_group_must_take_the_power_limit():
    # 350 W suits an L40S (g6e) but not an A10G (g5, 300 W at most).
    with pytest.raises(
        ValidationError, match=re.escape("350 W is outside g5.12xlarge's A10G range: 100 to 300")
    ):
        gpu_group(
            instance_types=["g6e.12xlarge", "g5.12xlarge"],
            capacity="spot",
            gpu_tuning={"power_limit_watts": 350},
        )


def test_a_clock_pair_the_gpu_does_not_list_is_refused_with_the_pairs_it_does():
    with pytest.raises(ValidationError, match="valid: memory_mhz 2619, graphics_mhz 1980"):
        gpu_group(gpu_tuning={"application_clocks": {"memory_mhz": 2619, "graphics_mhz": 2000}})


# ------------------------------------------------------------------------------ boot script


def test_nvidia_smi_commands_for_each_setting():
    tuning = GpuTuningSettings(
        compute_mode="exclusive-process",
        power_limit_watts=600,
        application_clocks={"memory_mhz": 2619, "graphics_mhz": 1980},
    )
    # nvidia-smi(1): -pm persistence mode, -c compute mode, -pl power limit in watts,
    # -ac <memory,graphics> application clocks in MHz.
    assert nvidia_smi_commands(tuning) == [
        "/usr/bin/nvidia-smi -pm 1",
        "/usr/bin/nvidia-smi -c EXCLUSIVE_PROCESS",
        "/usr/bin/nvidia-smi -pl 600",
        "/usr/bin/nvidia-smi -ac 2619,1980",
    ]


def test_efa_group_reserves_hugepages_and_tunes_gpus_before_the_kubelet():
    g = gpu_group(efa=True, gpu_tuning={"compute_mode": "exclusive-process"})
    (script,) = shell_parts(group_user_data(g, fast_pull=True))
    assert script.startswith("#!/bin/bash\n")
    assert "sysctl -w vm.nr_hugepages=5128\n" in script
    # Kept across a reboot: systemd-sysctl applies /etc/sysctl.d at every boot.
    assert 'echo "vm.nr_hugepages = 5128" > /etc/sysctl.d/' in script
    assert "Before=kubelet.service\n" in script
    assert "ExecStart=/usr/bin/nvidia-smi -pm 1\n" in script
    assert "ExecStart=/usr/bin/nvidia-smi -c EXCLUSIVE_PROCESS\n" in script
    assert "systemctl enable --now gpu-platform-tuning.service\n" in script


# The AL2023 NVIDIA AMI's own GPU units (awslabs/amazon-eks-ami, templates/al2023/runtime/gpu/ and
# templates/al2023/runtime/rootfs/etc/systemd/system/ at 81fec2e, July 2026) and the units they
# are ordered after (After=). nvidia-kmod-load loads the kernel modules nvidia-smi needs;
# nvidia-persistenced holds the GPUs initialised; set-nvidia-clocks turns persistence on,
# auto-boost off and sets the highest application clocks, so run before ours it would undo them.
AMI_UNITS_AFTER = {
    "nvidia-kmod-load.service": ["network-online.target"],
    "nvidia-persistenced.service": [],
    "set-nvidia-clocks.service": ["nvidia-persistenced.service"],
    "nodeadm-run.service": ["nodeadm-config.service", "cloud-final.service"],
    "kubelet.service": ["containerd.service"],
}
AMI_GPU_UNITS = [
    "nvidia-kmod-load.service",
    "nvidia-persistenced.service",
    "set-nvidia-clocks.service",
]


def tuning_unit(script: str) -> dict[str, list[str]]:
    """The [Unit] section of the tuning unit the boot script writes, as systemd reads it:
    space-separated lists, repeated keys adding up."""
    text = script.split("<<'UNIT'\n", 1)[1].split("\nUNIT\n", 1)[0]
    section = text.split("[Unit]\n", 1)[1].split("\n[", 1)[0]
    unit: dict[str, list[str]] = {}
    for line in section.splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            unit.setdefault(key, []).extend(value.split())
    return unit


def tuned_unit() -> dict[str, list[str]]:
    g = gpu_group(
        efa=True, gpu_tuning={"application_clocks": {"memory_mhz": 2619, "graphics_mhz": 1980}}
    )
    (script,) = shell_parts(group_user_data(g, fast_pull=True))
    return tuning_unit(script)


@pytest.mark.parametrize("ami_unit", AMI_GPU_UNITS)
def test_tuning_runs_after_every_gpu_unit_of_the_ami_so_a_reboot_cannot_undo_it(ami_unit):
    assert ami_unit in tuned_unit().get("After", [])


def test_tuning_requires_the_amis_module_load_so_a_reboot_cannot_skip_it():
    # Requires= with After=: the tuning starts only once the modules are loaded, and not at all
    # (a failed unit the node shows) when loading them failed.
    unit = tuned_unit()
    assert "nvidia-kmod-load.service" in unit.get("Requires", [])
    assert "nvidia-kmod-load.service" in unit.get("After", [])
    assert unit["Before"] == ["kubelet.service"]


def test_tuning_waits_for_nothing_that_waits_for_cloud_init():
    """The boot script starts the unit and waits for it (`enable --now`) inside cloud-final:
    a unit it is ordered after that is itself ordered after cloud-final would hang the boot."""
    waits_for, todo = set(), list(tuned_unit().get("After", []))
    while todo:
        unit = todo.pop()
        if unit not in waits_for:
            waits_for.add(unit)
            todo.extend(AMI_UNITS_AFTER.get(unit, []))
    assert "cloud-final.service" not in waits_for
    assert not waits_for & {"nodeadm-run.service", "kubelet.service"}


def test_group_without_efa_reserves_no_hugepages():
    (script,) = shell_parts(
        group_user_data(gpu_group(instance_types=["g5.2xlarge"]), fast_pull=True)
    )
    assert "nr_hugepages" not in script
    assert "ExecStart=/usr/bin/nvidia-smi -pm 1\n" in script


def test_nothing_to_do_adds_no_shell_part():
    g = gpu_group(instance_types=["g5.2xlarge"], gpu_tuning={"persistence_mode": False})
    assert shell_parts(group_user_data(g, fast_pull=True)) == []


def test_boot_script_is_valid_bash():
    g = gpu_group(efa=True, gpu_tuning={"power_limit_watts": 500})
    (script,) = shell_parts(group_user_data(g, fast_pull=True))
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_autoscaler_sees_the_hugepages_of_an_efa_node_from_zero():
    # cluster-autoscaler cloudprovider/aws/README.md, "Scaling a node group to 0": resources
    # as quantities. 5128 pages x 2 MiB = 10256Mi.
    tags = autoscaler_tags(gpu_group(efa=True), "single")
    assert tags[f"{NODE_TEMPLATE}/resources/hugepages-2Mi"] == "10256Mi"
    assert f"{NODE_TEMPLATE}/resources/hugepages-2Mi" not in autoscaler_tags(gpu_group(), "single")


def test_plan_shows_gpu_tuning_per_group():
    outputs = planned("prod").outputs["gpu_tuning"]
    assert sorted(outputs) == ["h100-block", "h100-ondemand"]
    assert outputs["h100-block"] == {
        "compute_mode": "default",
        "persistence_mode": True,
        "power_limit": "the GPU's default",
        "application_clocks": "the driver's default",
        "hugepages_2mi": 5128,
    }


# ---------------------------------------------------------------------------------- bad input

P = "gpu-platform:gpu_node_groups[0].gpu_tuning"
BAD_TUNING = [
    case(
        group(
            gpu_sharing={"mode": "time-slicing", "replicas": 4},
            gpu_tuning={"compute_mode": "exclusive-process"},
        ),
        f"{P}.compute_mode",
        "exclusive-process",
        "use compute_mode default, or gpu_sharing.mode mps",
        "exclusive-process-with-time-slicing",
    ),
    case(
        group(gpu_tuning={"power_limit_watts": 450}),
        f"{P}.power_limit_watts",
        "450 W",
        "100 to 400 W",
        "power-above-a100",
    ),
    case(
        group(gpu_tuning={"power_limit_watts": 50}),
        f"{P}.power_limit_watts",
        "50 W",
        "100 to 400 W",
        "power-below-a100",
    ),
    case(
        group(
            instance_types=["p5en.48xlarge"],
            gpu_tuning={"application_clocks": {"memory_mhz": 3201, "graphics_mhz": 1980}},
        ),
        f"{P}.application_clocks",
        "no application clocks for p5en.48xlarge's H200",
        "leave application_clocks unset",
        "clocks-on-a-model-listing-none",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "valid"), BAD_TUNING)
def test_bad_gpu_tuning_is_refused_naming_key_value_and_limit(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
