"""A stack's chart override (`gpu-platform:charts`, model/config/charts.py), for every chart the
platform installs: an override to a version the lock records and a cache holds is rendered
through the plan's one render path and validated as the pin is (every object, every value key);
one the lock does not record, or no cache holds, is refused naming the stack file, the key, the
value and what is valid; a chart whose other pins follow its release is refused with why; and
the diff says whose CRDs the custom resources were checked against, until ../shared/crds holds
the new version's.

../shared holds one version of each chart (shared/helm/README.md), so the next release is stood
in for by the pinned archive repackaged with its Chart.yaml's version bumped, in tmp_path: Helm
renders it as that version (its `helm.sh/chart` labels say so), recorded in a lock of the test's
own with the repackaged archive's sha256."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from model.config import ConfigError
from model.config.charts import installed_charts
from model.versions import CHARTS, kube_floor
from plan.chart_overrides import unchecked_crds
from plan.charts import archive_name
from plan.cli import plan_stack
from plan.diff import PreviousPlan
from plan.diff_report import changes_block
from plan.model import Plan
from plan.render import RELEASE, chart_of, render_plan
from plan.rendered_diff import current_sources
from tests.conftest import (
    SHARED_HELM,
    make_project,
    planned,
    rendered,
    stack_config,
    stack_file_config,
)
from tests.helpers import helm_values
from tests.helpers.bad_stacks import assert_refused, plan_bad
from tests.helpers.rendered_validity import assert_rendered_objects_valid
from tests.helpers.varied_stacks import DRA_CONFIGS, DRA_STACK, dra_config

# The next patch release of each pinned chart (model/versions.py CHARTS at 0.19.2, v26.7.0, ...).
OVERRIDABLE = {
    "cluster-autoscaler": "9.59.1",
    "aws-fsx-csi-driver": "1.17.1",
    "gpu-operator": "v26.7.1",
    "kueue": "0.19.3",
    "jobset": "0.12.1",
    "keda": "2.20.3",
    "kube-prometheus-stack": "88.5.4",
}
# Charts another pinned fact follows (model/versions.py OVERRIDE_REFUSED): the NicClusterPolicy's
# images, the Ceph image and CSI drivers Rook pins, the EFA plugin's and Pushgateway's image tags.
REFUSED = {
    "network-operator": "26.4.2",
    "rook-ceph": "v1.20.7",
    "ceph-csi-drivers": "1.0.5",
    "aws-efa-k8s-device-plugin": "v0.5.31",
    "prometheus-pushgateway": "3.8.1",
    "dra-driver-nvidia-gpu": "0.4.2",
}
# The CRD groups each chart brings whose schemas ../shared/crds holds (shared/crds/README.md,
# "Versions to pin": kueue v0.19.2, prometheus-operator v0.93.0 for kube-prometheus-stack
# 88.5.3, KEDA v2.20.2, gpu-operator v26.7.0 with the ComputeDomain CRDs it ships, JobSet
# v0.12.0, the ProvisioningRequest CRD at cluster-autoscaler-chart-9.59.0); the FSx CSI chart
# brings none.
CRD_GROUPS = {
    "cluster-autoscaler": "autoscaling.x-k8s.io",
    "gpu-operator": "nvidia.com, resource.nvidia.com",
    "kueue": "kueue.x-k8s.io",
    "jobset": "jobset.x-k8s.io",
    "keda": "keda.sh",
    "kube-prometheus-stack": "monitoring.coreos.com",
}
STACK = "dev"
# The shipped stack that installs each chart dev does not (model/config/charts.installed_charts).
STACK_OF = {
    "aws-efa-k8s-device-plugin": "prod",
    "network-operator": "onprem",
    "rook-ceph": "onprem",
    "ceph-csi-drivers": "onprem",
    # No shipped stack puts a pool on DRA: the fixture that does (tests/helpers/varied_stacks.py).
    "dra-driver-nvidia-gpu": DRA_STACK,
}


def repackaged(chart: str, pinned: str, version: str, dest: Path, edits=None) -> Path:
    """The pinned archive with its Chart.yaml's `version:` line set to `version`, every other
    file as packaged but those `edits` rewrites (by path in the chart: "values.yaml"): the
    stand-in of the chart's next release."""
    source = SHARED_HELM / archive_name(chart, pinned)
    target = dest / archive_name(chart, version)
    with tarfile.open(source) as old, tarfile.open(target, "w:gz") as new:
        for member in old.getmembers():
            data = old.extractfile(member).read() if member.isfile() else None
            if member.name == f"{chart}/Chart.yaml":
                text, count = re.subn(
                    r"(?m)^version: .*$", f"version: {version}", data.decode(), count=1
                )
                assert count == 1, f"{chart}: no version line in Chart.yaml"
                data = text.encode()
                member.size = len(data)
            edit = (edits or {}).get(member.name.removeprefix(f"{chart}/"))
            if edit is not None:
                data = edit(data.decode()).encode()
                member.size = len(data)
            new.addfile(member, io.BytesIO(data) if data is not None else None)
    return target


def lock_of(archives: dict[str, Path]) -> dict:
    """A lock recording each repackaged archive at its version, from the pinned repository."""
    charts = {}
    for key, path in archives.items():
        version = path.name.removeprefix(f"{CHARTS[key].name}-").removesuffix(".tgz")
        charts[CHARTS[key].name] = {
            version: {
                "repository": CHARTS[key].repository,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "recorded": "2026-12-04",
            }
        }
    return {"note": "test", "charts": charts}


def with_overrides(stack: str, overrides: dict[str, str]) -> dict:
    config = copy.deepcopy(DRA_CONFIGS[stack]) if stack in DRA_CONFIGS else stack_file_config(stack)
    config["gpu-platform:charts"] = {key: {"version": v} for key, v in overrides.items()}
    return config


@dataclasses.dataclass(frozen=True)
class Overridden:
    plan: Plan
    rendering: object
    caches: tuple[Path, ...]


@pytest.fixture(scope="module")
def overridden(tmp_path_factory) -> Overridden:
    """dev with every chart it installs overridden to its next release, recorded and cached."""
    tmp = tmp_path_factory.mktemp("overrides")
    cache = tmp / "charts"
    cache.mkdir()
    archives = {
        key: repackaged(CHARTS[key].name, CHARTS[key].version, version, cache)
        for key, version in OVERRIDABLE.items()
    }
    lock = tmp / "charts.lock.json"
    lock.write_text(json.dumps(lock_of(archives)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("model.versions.CHART_LOCK", lock)
        (tmp / "project").mkdir()
        root = make_project(tmp / "project", {STACK: with_overrides(STACK, OVERRIDABLE)})
        plan = plan_stack(STACK, root)
    caches = (cache, SHARED_HELM)
    return Overridden(plan, render_plan(plan, caches), caches)


def with_release_version(plan: Plan, chart: str, version: str) -> Plan:
    """`plan` with the chart's release at `version`, as the program declares an override."""
    resources = [
        dataclasses.replace(r, inputs={**r.inputs, "version": version})
        if r.type == RELEASE and chart_of(r)[0] == chart
        else r
        for r in plan.resources
    ]
    return Plan(plan.stack, plan.project, resources, plan.outputs)


def releases_by_chart(plan: Plan) -> dict[str, object]:
    return {chart_of(r)[0]: r for r in plan.of_type(RELEASE)}


def test_every_chart_the_platform_pins_is_either_overridable_or_refused_with_why():
    assert set(CHARTS) == set(OVERRIDABLE) | set(REFUSED)
    assert set(OVERRIDABLE) <= set(installed_charts(stack_config(STACK)))
    for key in REFUSED:
        stack = STACK_OF.get(key, STACK)
        cfg = dra_config(stack) if stack in DRA_CONFIGS else stack_config(stack)
        assert key in installed_charts(cfg)


@pytest.mark.parametrize("key", OVERRIDABLE)
def test_an_override_is_declared_and_rendered_from_its_own_archive(overridden, key):
    name, version = CHARTS[key].name, OVERRIDABLE[key]
    release = releases_by_chart(overridden.plan)[name]
    assert release.inputs["version"] == version
    (rendered_release,) = [r for r in overridden.rendering.releases if r.chart == name]
    assert rendered_release.version == version
    # Helm's `helm.sh/chart: <name>-<version>` label, from the archive's Chart.yaml.
    assert f"{name}-{version}" in rendered_release.manifest()
    assert overridden.rendering.warnings == ()


def test_every_object_of_the_overridden_charts_is_validated_as_the_pins_are(overridden):
    minor = overridden.plan.outputs["kubernetes_version"]
    assert_rendered_objects_valid(overridden.rendering, minor)


@pytest.mark.parametrize("key", OVERRIDABLE)
def test_an_overrides_values_are_checked_against_its_own_chart(overridden, key):
    release = releases_by_chart(overridden.plan)[CHARTS[key].name]
    minor = overridden.plan.outputs["kubernetes_version"]
    inputs = release.inputs
    problems = helm_values.unknown_keys(
        inputs["chart"], inputs["version"], inputs["values"], minor, overridden.caches
    )
    assert problems == []
    # The same check, at the same version, finds a key the chart does not read.
    bad = {**inputs["values"], "notAKeyOfTheChart": True}
    (problem,) = helm_values.unknown_keys(
        inputs["chart"], inputs["version"], bad, minor, overridden.caches
    )
    assert "notAKeyOfTheChart: not a key of the chart at this version" in problem


@pytest.mark.parametrize("key", OVERRIDABLE)
def test_the_plan_says_whose_crds_an_overrides_objects_were_checked_against(overridden, key):
    name, version, pinned = CHARTS[key].name, OVERRIDABLE[key], CHARTS[key].version
    release = releases_by_chart(overridden.plan)[name].name
    note = overridden.rendering.unchecked_crds.get(release)
    if key not in CRD_GROUPS:
        assert note is None
        return
    assert note == (
        f"CRDs not checked: the custom resources of {CRD_GROUPS[key]} were validated against "
        f"the CRDs of {name} {pinned} (../shared/crds), not those of {name} {version}, until "
        f"../shared/crds holds them and its README names `{name}` {version}"
    )


def test_the_diff_of_a_bump_says_it_at_the_release(overridden):
    shipped = planned(STACK)
    previous = PreviousPlan(
        [r.as_json() for r in shipped.resources],
        shipped.outputs,
        current_sources(rendered(STACK)),
    )
    text = changes_block(overridden.plan, previous, f"out/{STACK}", overridden.rendering)
    assert (
        f"  ~ kubernetes:helm.sh/v3:Release {STACK}-kueue\n"
        '      ~ version: "0.19.2" -> "0.19.3"\n'
        "      CRDs not checked: the custom resources of kueue.x-k8s.io were validated against "
        "the CRDs of kueue 0.19.2 (../shared/crds), not those of kueue 0.19.3"
    ) in text


def test_the_note_goes_once_shared_crds_holds_the_new_versions_crds(overridden, tmp_path):
    (kueue,) = [r for r in overridden.rendering.releases if r.chart == "kueue"]
    (tmp_path / "kueue.x-k8s.io").mkdir()
    readme = tmp_path / "README.md"
    # The row shared/crds/README.md has for the pin, as it would read for the bump.
    readme.write_text("| kubernetes-sigs/kueue | v0.19.3 | `0` | chart `kueue` 0.19.3 |\n")
    assert unchecked_crds(kueue.chart, kueue.version, kueue.outlines(), tmp_path) is None
    readme.write_text("| kubernetes-sigs/kueue | v0.19.2 | `0` | chart `kueue` 0.19.2 |\n")
    assert unchecked_crds(kueue.chart, kueue.version, kueue.outlines(), tmp_path)


@pytest.mark.parametrize("stack", ["dev", "onprem", "prod"])
def test_no_pinned_release_is_checked_against_other_crds(stack):
    """The pins are what ../shared/crds holds: the note is for versions it does not name."""
    assert rendered(stack).unchecked_crds == {}


@pytest.mark.parametrize("key", [*OVERRIDABLE, *REFUSED])
def test_an_override_the_lock_does_not_record_is_refused(tmp_path, monkeypatch, capsys, key):
    """The committed lock records no version (model/charts.lock.json): every override is
    refused until `make charts-lock` records its digest; a refused chart says why."""
    version = {**OVERRIDABLE, **REFUSED}[key]
    stack = with_overrides(STACK_OF.get(key, STACK), {key: version})
    if key in REFUSED:
        path, value, valid = f"gpu-platform:charts.{key}", key, "bump it for every stack"
    else:
        path, value = f"gpu-platform:charts.{key}.version", repr(version)
        valid = (
            f"(recorded for {key}: none; pinned: {CHARTS[key].version}), so its digest was "
            "never reviewed; to add one, keep it in this stack file and run `make charts-lock "
            f"charts` where {CHARTS[key].repository} is reachable"
        )
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


def test_an_override_no_cache_holds_is_refused_before_anything_is_written(
    tmp_path, monkeypatch, capsys
):
    """Recorded in the lock, but `make charts` never pulled it: the plan cannot render it, so
    it exits 2 as on a bad value, naming the versions the caches hold."""
    lock = tmp_path / "charts.lock.json"
    entry = {"repository": CHARTS["kueue"].repository, "sha256": "0" * 64, "recorded": "x"}
    lock.write_text(json.dumps({"charts": {"kueue": {"0.19.99": entry}}}))
    monkeypatch.setattr("model.versions.CHART_LOCK", lock)
    code, output = plan_bad(
        tmp_path, monkeypatch, capsys, with_overrides(STACK, {"kueue": "0.19.99"})
    )
    assert code == 2, output
    assert "  - gpu-platform:charts.kueue.version: '0.19.99' is in no chart cache" in output
    assert "cached versions of kueue: 0.19.2)" in output
    assert "`make charts` pulls it" in output


def test_an_override_older_than_what_the_platform_needs_is_refused(tmp_path, monkeypatch, capsys):
    """Kueue 0.19.2's go.mod requires sigs.k8s.io/jobset v0.12.0 (shared/PINS.md)."""
    stack = with_overrides(STACK, {"jobset": "0.11.0"})
    path = "gpu-platform:charts.jobset.version"
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, "'0.11.0'", "older than 0.12.0")


def test_an_override_of_a_chart_the_stack_does_not_install_is_refused(
    tmp_path, monkeypatch, capsys
):
    stack = with_overrides(STACK, {"rook-ceph": "v1.20.7", "helm": "1.0.0"})
    valid = "this stack installs: aws-fsx-csi-driver, cluster-autoscaler"
    assert_refused(tmp_path, monkeypatch, capsys, stack, "gpu-platform:charts.rook-ceph",
                   "not a chart this stack installs", valid)  # fmt: skip
    (tmp_path / "2").mkdir()
    assert_refused(tmp_path / "2", monkeypatch, capsys, stack, "gpu-platform:charts.helm",
                   "not a chart the platform pins", valid)  # fmt: skip


def test_an_override_whose_chart_changed_a_default_the_platform_sets_whole_is_refused(tmp_path):
    """Kueue's manager configuration is set whole (components/scheduling/kueue.py), written
    against the 0.19.2 chart's default: a release whose default gains a setting (here the
    waitForPodsReady block of Kueue's Configuration API) would lose it without a word."""

    def gains_a_setting(text: str) -> str:
        anchor = "  controllerManagerConfigYaml: |-\n"
        assert anchor in text, "kueue 0.19.2's values.yaml changed shape"
        return text.replace(anchor, anchor + "    waitForPodsReady:\n      enable: true\n")

    cache = tmp_path / "charts"
    cache.mkdir()
    repackaged("kueue", "0.19.2", "0.19.4", cache, {"values.yaml": gains_a_setting})
    bumped = with_release_version(planned(STACK), "kueue", "0.19.4")
    with pytest.raises(ConfigError) as refused:
        render_plan(bumped, (cache, SHARED_HELM))
    assert refused.value.source == "stacks/Pulumi.dev.yaml"
    (problem,) = refused.value.problems
    assert problem.startswith(
        "gpu-platform:charts.kueue.version: '0.19.4': the chart's default "
        "managerConfig.controllerManagerConfigYaml differs from kueue 0.19.2's "
        "(changed: waitForPodsReady), and the platform sets it whole"
    )


def test_an_override_whose_kube_version_does_not_admit_the_stacks_minor_is_refused(tmp_path):
    """Helm refuses a chart whose Chart.yaml kubeVersion the cluster does not satisfy (Helm
    docs, "The Chart.yaml File"); the SDK's render does not check it (shared/helm/README.md)."""
    minor = planned(STACK).outputs["kubernetes_version"]
    assert minor == "1.35"  # stacks/Pulumi.dev.yaml, the default minor
    cache = tmp_path / "charts"
    cache.mkdir()
    needs = {"Chart.yaml": lambda text: text + 'kubeVersion: ">=1.36.0-0"\n'}
    repackaged("kueue", "0.19.2", "0.19.5", cache, needs)
    with pytest.raises(ConfigError) as refused:
        render_plan(with_release_version(planned(STACK), "kueue", "0.19.5"), (cache, SHARED_HELM))
    assert refused.value.problems == [
        "gpu-platform:charts.kueue.version: '0.19.5': its Chart.yaml's kubeVersion '>=1.36.0-0' "
        "does not admit the stack's Kubernetes 1.35, so Helm would refuse to install it; keep "
        "the pin (0.19.2) until the cluster runs 1.36 or later"
    ]


@pytest.mark.parametrize(
    ("constraint", "floor"),
    [
        (">= 1.16.0-0", "1.16"),  # gpu-operator v26.7.0's Chart.yaml
        (">=v1.23.0-0", "1.23"),  # keda 2.20.2's
        (">=1.25.0-0", "1.25"),  # kube-prometheus-stack 88.5.3's
        (">=1.25.0-0 <1.37.0-0", None),  # a range: not read, so an override with it is refused
        ("~1.30", None),
    ],
)
def test_the_floor_of_a_kube_version_constraint(constraint, floor):
    assert kube_floor(constraint) == floor
