"""A Kubernetes object declared whole (components/kubernetes_object.py): the type token
pulumi-kubernetes accepts for its kind, and the replacement its CRD's immutable fields call for.
Every token the plan declares is checked against the installed SDKs by test_resource_types.py."""

from __future__ import annotations

from components.kubernetes_object import replacement_options, type_token

TOPOLOGY = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Topology",
    "metadata": {"name": "gpu"},
    "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
}


def test_the_core_group_is_spelt_core_and_others_keep_their_group():
    # pulumi-kubernetes' tokens: `kubernetes:core/v1:Service`, `kubernetes:batch/v1:Job`.
    assert type_token("v1", "Service") == "kubernetes:core/v1:Service"
    assert type_token("batch/v1", "Job") == "kubernetes:batch/v1:Job"
    assert (
        type_token("kueue.x-k8s.io/v1beta2", "ClusterQueue")
        == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
    )


def test_a_change_to_an_immutable_field_replaces_the_object_deleting_it_first():
    # Kueue v0.19.2 Topology CRD: spec.levels carries `self == oldSelf`, "field is immutable".
    options = replacement_options(TOPOLOGY)
    assert options.replace_on_changes == ["spec.levels"]
    assert options.delete_before_replace is True


def test_a_ceph_cluster_is_never_replaced_even_on_its_immutable_data_dir():
    # Rook v1 CephCluster CRD: dataDirHostPath is immutable (`self == oldSelf`), yet replacing
    # the cluster would take the OSDs it owns: the API server's refusal stands instead.
    cluster = {
        "apiVersion": "ceph.rook.io/v1",
        "kind": "CephCluster",
        "metadata": {"name": "storage"},
        "spec": {"dataDirHostPath": "/var/lib/rook"},
    }
    assert replacement_options(cluster).replace_on_changes is None


def test_a_kind_without_immutable_fields_is_updated_in_place():
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}}
    options = replacement_options(service)
    assert options.replace_on_changes is None and not options.delete_before_replace
