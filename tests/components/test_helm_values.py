"""Every Helm value the project sets is a key the chart reads at the pinned version: Helm ignores
the others silently (shared/charts/README.md), so a renamed or misspelt key must fail here."""

from __future__ import annotations

import pytest

from tests.conftest import STACKS, planned
from tests.helpers import helm_values

RELEASE = "kubernetes:helm.sh/v3:Release"
K8S = "1.35"


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_sets_only_keys_its_chart_reads(stack):
    plan = planned(stack)
    for release in plan.of_type(RELEASE):
        chart, version, values = (release.inputs[k] for k in ("chart", "version", "values"))
        problems = helm_values.unknown_keys(
            chart, version, values, plan.outputs["kubernetes_version"]
        )
        assert problems == [], release.name


def test_shipped_stacks_give_the_checker_every_chart_they_install():
    charts = {r.inputs["chart"] for s in STACKS for r in planned(s).of_type(RELEASE)}
    # The shipped stacks install these four charts between them; a stack added later only adds.
    assert {"cluster-autoscaler", "aws-fsx-csi-driver", "rook-ceph", "ceph-csi-drivers"} <= charts


@pytest.mark.parametrize(
    ("chart", "version", "values", "path"),
    [
        pytest.param("cluster-autoscaler", "9.59.0", {"autoDiscovery": {"clustername": "c"}},
                     "autoDiscovery.clustername", id="wrong-case"),
        pytest.param("cluster-autoscaler", "9.59.0", {"expanderPriority": {"10": ["x"]}},
                     "expanderPriority", id="renamed-top-level"),
        pytest.param("aws-fsx-csi-driver", "1.17.0", {"controller": {"regoin": "us-east-1"}},
                     "controller.regoin", id="typo-nested"),
        pytest.param("ceph-csi-drivers", "1.0.4", {"drivers": {"cephfs": {"enabeld": True}}},
                     "drivers.cephfs.enabeld", id="typo-deep"),
        pytest.param("rook-ceph", "v1.20.6", {"ceph-csi-operator": {"controllerManagr": {}}},
                     "ceph-csi-operator.controllerManagr", id="typo-in-subchart-block"),
        pytest.param("rook-ceph", "v1.20.6", {"csi": {"installCsiOperator": "false"}},
                     "csi.installCsiOperator", id="string-for-a-boolean"),
        pytest.param("aws-efa-k8s-device-plugin", "v0.5.30", {"nodeSelectr": {}},
                     "nodeSelectr", id="v-prefixed-version"),
        # Free-form for Helm, but rendered into the pod spec: checked as Kubernetes types.
        pytest.param("cluster-autoscaler", "9.59.0", {"tolerations": [{"operater": "Exists"}]},
                     "tolerations", id="toleration-typo"),
        pytest.param("ceph-csi-drivers", "1.0.4",
                     {"operatorConfig": {"driverSpecDefaults": {"nodePlugin": {
                         "tolerations": [{"operator": "Exists", "tolerationSecond": 5}]}}}},
                     "operatorConfig.driverSpecDefaults.nodePlugin.tolerations",
                     id="toleration-typo-in-nested-block"),
        pytest.param("cluster-autoscaler", "9.59.0", {"nodeSelector": {"role": 1}},
                     "nodeSelector", id="node-selector-not-a-string"),
    ],
)  # fmt: skip
def test_a_key_the_chart_does_not_read_is_reported(chart, version, values, path):
    (problem,) = helm_values.unknown_keys(chart, version, values, K8S)
    assert problem.startswith(f"{chart}: {path}: "), problem


@pytest.mark.parametrize(
    ("chart", "version", "values"),
    [
        # Free-form with a non-empty default: any autoscaler flag is valid (README, caveat 1).
        ("cluster-autoscaler", "9.59.0", {"extraArgs": {"scale-down-unneeded-time": "10m"}}),
        # A null default takes any value (caveat 2).
        ("cluster-autoscaler", "9.59.0", {"autoDiscovery": {"clusterName": "c"}}),
        # An empty-map default is free-form.
        ("cluster-autoscaler", "9.59.0", {"expanderPriorities": {"10": ["^eks-x-.*"]}}),
        # A dotted key is one key (caveat 3), inside a subchart block (caveat 5).
        ("kube-prometheus-stack", "88.5.3", {"grafana": {"grafana.ini": {"server": {"x": 1}}}}),
        ("kube-prometheus-stack", "88.5.3", {"grafana": {"sidecar": {"dashboards": {}}}}),
        ("rook-ceph", "v1.20.6", {"ceph-csi-operator": {"controllerManager": {}}}),
        ("gpu-operator", "v26.7.0", {"operator": {"nodeSelector": {"role": "system"}}}),
    ],
)
def test_keys_the_chart_reads_pass(chart, version, values):
    assert helm_values.unknown_keys(chart, version, values, K8S) == []


def test_a_chart_version_no_cache_holds_fails():
    with pytest.raises(AssertionError, match=r"chart rook-ceph v9\.9\.9 is in no chart cache"):
        helm_values.unknown_keys("rook-ceph", "v9.9.9", {}, K8S)
