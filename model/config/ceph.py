"""The storage plane's config on an existing cluster: Ceph through Rook (CephFS as the shared
file system), its storage hosts and the networks its daemons talk over."""

from __future__ import annotations

import re
from ipaddress import IPv4Network
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from model.config.base import DnsLabel, FieldProblem, Int, Settings, shaped
from model.config.bounds import INT64_MAX
from model.config.references import K8S_NAMESPACE, names


class CephNodeSettings(Settings):
    """A storage host of the Ceph cluster: its Kubernetes node name and, optionally, its disks."""

    name: str = Field(
        min_length=1, description="The Kubernetes node name (its kubernetes.io/hostname label)."
    )
    devices: list[str] = Field(
        default_factory=list,
        description="Disks for OSDs on this host, e.g. nvme1n1; empty: the cluster's "
        "device_filter picks them.",
    )


# nv-ipam returns routes only through a gateway, so pods reach the hosts' shims on-link: the
# pods' range and the hosts' share one subnet, which must stay a plausible L2 segment.
MIN_SHARED_PREFIX = 16


class CephNetworkAttachmentSettings(Settings):
    """A Multus network for Ceph traffic: a macvlan interface on a host NIC (the RoCE NIC), with
    nv-ipam addresses."""

    interface: Annotated[
        str,
        shaped(
            r"[A-Za-z0-9_.:-]{1,15}",
            "a Linux interface name: 1 to 15 letters, digits and _ . : -",
        ),
    ] = Field(
        description="Host interface the macvlan sits on; the same name on every host.",
    )
    cidr: IPv4Network = Field(
        description="Addresses Ceph pods take on this network (nv-ipam hands them out). Keep "
        "every host address out of it: Rook's Multus guide asks that pod and host ranges do "
        "not overlap."
    )
    host_range: IPv4Network | None = Field(
        None,
        description="The hosts' own addresses on this network, on each host's macvlan shim "
        "(docs/storage.md, Ceph over Multus). Pods get a route to it. Required for the public "
        "network: the CSI plugin and kernel clients on every host reach Ceph through it.",
    )
    per_node_block_size: Int = Field(
        8,
        ge=1,
        le=2**24,
        description="Addresses nv-ipam reserves for each node from cidr: at least the Ceph "
        "daemons one node runs. cidr holds addresses for (its size / this) nodes.",
    )

    @property
    def subnet(self) -> IPv4Network:
        """The smallest subnet holding the pods' range and the hosts' shim addresses."""
        subnet = self.cidr
        while self.host_range is not None and not self.host_range.subnet_of(subnet):
            subnet = subnet.supernet()
        return subnet

    @model_validator(mode="after")
    def _hosts_outside_pod_range(self) -> CephNetworkAttachmentSettings:
        if self.host_range is not None and self.host_range.overlaps(self.cidr):
            raise FieldProblem(
                "host_range",
                f"{self.host_range} overlaps cidr {self.cidr}, the pods' range: nv-ipam "
                "would hand a host's address to a pod; carve them apart, e.g. the lower half "
                "of the subnet for pods and the upper half for hosts",
            )
        if self.subnet.prefixlen < MIN_SHARED_PREFIX:
            raise FieldProblem(
                "host_range",
                f"{self.host_range} and cidr {self.cidr} share no subnet smaller than "
                f"{self.subnet}: pods reach the hosts on-link, so both must be parts of the one "
                f"subnet on the NIC (at most a /{MIN_SHARED_PREFIX}), e.g. the two halves of a /24",
            )
        if self.per_node_block_size >= self.cidr.num_addresses:
            raise FieldProblem(
                "per_node_block_size",
                f"{self.per_node_block_size} addresses per node do not fit in cidr {self.cidr} "
                f"({self.cidr.num_addresses} addresses); nv-ipam needs a block smaller than it",
            )
        return self


class CephNetworkSettings(Settings):
    """How Ceph daemons talk: the pod network, the host network, or Multus networks."""

    provider: Literal["pod", "host", "multus"] = Field(
        "host",
        description="`host`: daemons on the hosts' networks (simple, fast). `multus`: public "
        "and/or cluster traffic on dedicated NICs (RoCE). `pod`: the CNI's pod network.",
    )
    public: CephNetworkAttachmentSettings | None = Field(
        None, description="Multus network for client (public) traffic."
    )
    cluster: CephNetworkAttachmentSettings | None = Field(
        None, description="Multus network for replication (cluster) traffic between OSDs."
    )

    @model_validator(mode="after")
    def _networks_match_provider(self) -> CephNetworkSettings:
        if self.provider == "multus" and self.public is None and self.cluster is None:
            raise FieldProblem("provider", "multus needs a public or a cluster network, or both")
        if self.provider != "multus":
            for key in ("public", "cluster"):
                if getattr(self, key) is not None:
                    raise FieldProblem(
                        key, f"a Multus network needs provider multus, not {self.provider}"
                    )
        if self.public is not None and self.public.host_range is None:
            raise FieldProblem(
                "public.host_range",
                "required: the hosts' addresses on the public network (their macvlan shims), "
                "so Ceph clients on the hosts can reach the daemons' pods",
            )
        if self.public and self.cluster and self.public.cidr.overlaps(self.cluster.cidr):
            raise FieldProblem(
                "cluster.cidr", f"{self.cluster.cidr} overlaps public.cidr {self.public.cidr}"
            )
        return self


class CephSettings(Settings):
    """Ceph through Rook (provider existing): CephFS as the shared file system."""

    namespace: Annotated[DnsLabel, names(K8S_NAMESPACE)] = Field(
        "rook-ceph", description="Namespace of the operator and cluster."
    )
    nodes: list[CephNodeSettings] = Field(
        min_length=1, description="The storage hosts; OSDs run only on these."
    )
    device_filter: str | None = Field(
        None,
        description="Regular expression over disk names that picks OSD disks on hosts that "
        "list no devices, e.g. ^nvme[1-9]n1$.",
    )
    mon_count: Int = Field(
        3,
        # The schema carries 1 to 9; the model's rule also asks for an odd count.
        json_schema_extra={"minimum": 1, "maximum": 9},
        description="Ceph monitors: odd, 1 to 9; 3 survives one loss.",
    )
    mgr_count: Int = Field(
        2, ge=1, le=5, description="Ceph managers (one active, the rest standby)."
    )
    network: CephNetworkSettings = Field(
        default_factory=CephNetworkSettings, description="Networks Ceph daemons talk over."
    )
    filesystem_name: DnsLabel = Field("shared", description="Name of the CephFilesystem.")
    replication: Int = Field(
        3,
        ge=1,
        le=10,
        description="Copies of each object, one per host; at most the storage hosts.",
    )
    claim_size_gib: Int = Field(
        1024,
        ge=1,
        le=INT64_MAX // 2**30,
        description="Size (CephFS quota) of the shared-data claim, in GiB.",
    )
    expected_throughput_mbps: Int | None = Field(
        None,
        ge=1,
        le=10**7,
        description="Aggregate throughput measured on this cluster, in MB/s, for the self-test "
        "to check against; none: the plan reports no figure.",
    )
    ready_timeout_minutes: Int = Field(
        60,
        ge=5,
        le=1440,
        description="How long pulumi up waits for the CephFilesystem to report Ready (5-1440): a "
        "cold cluster's mons, OSD preparation and MDS included. The shared-data claim is "
        "declared after it, since pulumi-kubernetes waits at most 5 minutes for a claim to bind.",
    )

    @field_validator("device_filter")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"{value!r} is not a regular expression: {error}") from None
        return value

    @model_validator(mode="after")
    def _enough_hosts(self) -> CephSettings:
        if self.mon_count % 2 == 0 or not 1 <= self.mon_count <= 9:
            raise FieldProblem(
                "mon_count", f"{self.mon_count} monitors: use an odd count from 1 to 9 (quorum)"
            )
        names = [n.name for n in self.nodes]
        for i, node in enumerate(self.nodes):
            if names.index(node.name) != i:
                raise FieldProblem(f"nodes[{i}].name", f"{node.name!r} is listed twice")
            if not node.devices and self.device_filter is None:
                raise FieldProblem(
                    f"nodes[{i}].devices",
                    f"{node.name} lists no devices and there is no device_filter: it would "
                    "hold no OSD",
                )
        if self.replication > len(self.nodes):
            raise FieldProblem(
                "replication",
                f"{self.replication} copies need {self.replication} storage hosts (failure "
                f"domain host), but nodes lists {len(self.nodes)}",
            )
        return self
