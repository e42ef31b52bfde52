"""`--graph`: the resource graph as Graphviz DOT and Mermaid, and the prod component graph the
README embeds, kept current."""

from __future__ import annotations

import re

import pytest

from model.stacks import ROOT
from plan.cli import main
from plan.graph import component_graph, resource_graph, to_dot, to_mermaid
from plan.model import Plan, PlannedResource
from tests.conftest import planned

STACK = "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"
NET = "urn:pulumi:s::p::demo:control:Network::net"
VPC = "urn:pulumi:s::p::demo:control:Network$aws:ec2/vpc:Vpc::vpc"
EKS = "urn:pulumi:s::p::demo:control:Cluster::eks"
CLUSTER = "urn:pulumi:s::p::demo:control:Cluster$aws:eks/cluster:Cluster::eks"


def resource(urn, parent, dependencies=(), custom=True):
    kind, name = urn.split("::")[-2].split("$")[-1], urn.split("::")[-1]
    return PlannedResource(urn, kind, name, parent, {}, list(dependencies), False, custom)


SMALL = Plan(
    "s",
    "p",
    [
        resource(STACK, "", custom=False),
        resource(NET, STACK, custom=False),
        resource(VPC, NET),
        resource(EKS, STACK, custom=False),
        resource(CLUSTER, EKS, [VPC]),
    ],
    {},
)


def test_dot_has_parent_edges_and_dashed_dependencies():
    assert to_dot(resource_graph(SMALL), "s graph") == (
        'digraph "s graph" {\n'
        "  rankdir=LR;\n"
        '  node [shape=box, fontname="Helvetica", fontsize=10];\n'
        '  Stack_p_s [label="p-s\\npulumi:pulumi:Stack", style="rounded,filled", '
        'fillcolor="#e8eef7"];\n'
        '  Network_net [label="net\\ndemo:control:Network", style="rounded,filled", '
        'fillcolor="#e8eef7"];\n'
        '  Vpc_vpc [label="vpc\\naws:ec2/vpc:Vpc"];\n'
        '  Cluster_eks [label="eks\\ndemo:control:Cluster", style="rounded,filled", '
        'fillcolor="#e8eef7"];\n'
        '  Cluster_eks_2 [label="eks\\naws:eks/cluster:Cluster"];\n'
        "  Stack_p_s -> Network_net;\n"
        "  Network_net -> Vpc_vpc;\n"
        "  Stack_p_s -> Cluster_eks;\n"
        "  Cluster_eks -> Cluster_eks_2;\n"
        '  Cluster_eks_2 -> Vpc_vpc [style=dashed, label="needs"];\n'
        "}\n"
    )


def test_mermaid_rounds_components_and_dashes_dependencies():
    assert to_mermaid(resource_graph(SMALL)) == (
        "flowchart LR\n"
        '  Stack_p_s("p-s<br/>pulumi:pulumi:Stack")\n'
        '  Network_net("net<br/>demo:control:Network")\n'
        '  Vpc_vpc["vpc<br/>aws:ec2/vpc:Vpc"]\n'
        '  Cluster_eks("eks<br/>demo:control:Cluster")\n'
        '  Cluster_eks_2["eks<br/>aws:eks/cluster:Cluster"]\n'
        "  Stack_p_s --> Network_net\n"
        "  Network_net --> Vpc_vpc\n"
        "  Stack_p_s --> Cluster_eks\n"
        "  Cluster_eks --> Cluster_eks_2\n"
        "  Cluster_eks_2 -. needs .-> Vpc_vpc\n"
    )


def test_component_graph_lifts_a_dependency_to_the_components_holding_its_ends():
    graph = component_graph(SMALL)
    assert [urn for urn, _, _ in graph.nodes] == [STACK, NET, EKS]
    assert graph.depends == ((EKS, NET),)


def test_shipped_prod_component_graph_orders_the_planes():
    graph = component_graph(planned("prod"))
    edges = {(a.split("::")[-1], b.split("::")[-1]) for a, b in graph.depends}
    # The cluster needs the network; GPU nodes join the cluster with the node role; FSx is
    # mounted through the CSI driver the cluster add-ons bring.
    assert ("prod-control-plane", "prod-network") in edges
    assert ("prod-gpu-h100-block", "prod-control-plane") in edges
    assert ("prod-gpu-h100-block", "prod-node-role") in edges
    assert ("prod-fsx", "prod-control-plane") in edges
    # DESIGN.md: the network never waits on what runs in the cluster.
    assert not [b for a, b in edges if a == "prod-network"]


def test_the_docs_show_the_current_prod_component_graph():
    page = (ROOT / "docs" / "review.md").read_text()
    shown = re.search(r"<!-- prod-graph -->\n```mermaid\n(.*?)```", page, re.DOTALL)
    assert shown, "docs/review.md: no ```mermaid block after <!-- prod-graph -->"
    current = to_mermaid(component_graph(planned("prod")))
    assert shown.group(1) == current, (
        "docs/review.md's prod graph is stale: run `python -m plan prod --graph` and paste "
        "out/prod/components.mmd after <!-- prod-graph -->, then review the diff"
    )


@pytest.mark.usefixtures("cli_on_session_plans")
def test_graph_flag_writes_dot_and_mermaid_files(tmp_path, capsys):
    assert main(["dev", "--quiet", "--graph", "--out", str(tmp_path)]) == 0
    names = {p.name for p in tmp_path.iterdir() if p.is_file()}
    assert {"components.dot", "components.mmd", "graph.dot", "graph.mmd"} <= names
    assert (tmp_path / "graph.dot").read_text().startswith('digraph "dev graph" {\n')
    mermaid = (tmp_path / "graph.mmd").read_text()
    assert '  Vpc_dev_vpc["dev-vpc<br/>aws:ec2/vpc:Vpc"]\n' in mermaid
    assert "  Network_dev_network --> Vpc_dev_vpc\n" in mermaid
