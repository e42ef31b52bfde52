"""A model of how a container on an EKS AL2023 node gets its resource limits, written from the
sources at the pins, so that a test can ask what RLIMIT_MEMLOCK a pod on a pool's node runs with.

The chain, each link with its source:

1. nodeadm writes containerd's base runtime spec, `/etc/containerd/base-runtime-spec.json`
   (awslabs/amazon-eks-ami v20260724, `nodeadm/internal/containerd/base_runtime_spec.go`
   `writeBaseRuntimeSpec`). Without `spec.containerd.baseRuntimeSpec` in any NodeConfig it writes
   its embedded default verbatim (`nodeadm/internal/containerd/base-runtime-spec.json`, whose
   `process.rlimits` holds RLIMIT_NOFILE alone). With one, it merges it into that default with
   `util.Merge` (`nodeadm/internal/util/merge.go`): both sides are marshalled, then decoded into
   `map[string]interface{}` and merged with `mergo.Merge(..., mergo.WithOverride)` (dario.cat/
   mergo v1.0.2, `merge.go`: maps merge key by key, a non-empty list replaces the other whole).
   Decoding into `interface{}` turns every JSON number into a float64 (Go encoding/json), and
   `json.MarshalIndent` writes it back in Go's float format. Several NodeConfigs carrying the
   field merge the same way first (`nodeadm/internal/api/merge.go`, `mergeInlineDocument`).
   The e2e case `nodeadm/test/e2e/cases/containerd-base-runtime-spec/` shows both: a map key
   added (`foo`), and an `rlimits` list that replaced the default's RLIMIT_NOFILE.
2. containerd's CRI plugin reads that file into the OCI `Spec`, whose rlimit `hard` and `soft`
   are uint64 (opencontainers/runtime-spec v1.3.0 `specs-go/config.go`, `POSIXRlimit`), and
   fails to start when it cannot (containerd v2.3.4 `plugins/cri/runtime/plugin.go`,
   `loadBaseOCISpecs` / `loadOCISpec`: "failed to parse base OCI spec file").
3. runc sets exactly the rlimits the spec lists (runc v1.5.1 `libcontainer/init_linux.go`,
   `setupRlimits`, one prlimit per entry); every other limit the container's process inherits
   from runc's parent, the shim, which containerd starts: containerd's own limits. The OCI spec
   requires the listed ones to match exactly (runtime-spec `config.md`, "POSIX process":
   `rlim.rlim_cur` / `rlim_max` MUST match the configured value).
4. containerd's own limits come from its systemd unit: `LimitMEMLOCK=` in a drop-in of
   `containerd.service`, `infinity` meaning no limit (systemd.exec(5), "Process Properties").
   systemd reads a drop-in written after boot only at `systemctl daemon-reload`; nodeadm-run
   (after cloud-final, so after the user data's shell part) restarts containerd without one
   (`nodeadm/internal/daemon/systemd.go` `RestartDaemon`; the unit in
   `templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service`). Without a
   setting, containerd runs with the kernel's default of 8 MiB (Linux `MLOCK_LIMIT`, 8 MiB since
   5.16; AL2023 runs 6.x kernels).
"""

from __future__ import annotations

import copy
import re
from decimal import Decimal

from tests.helpers.user_data import parse_user_data, shell_parts

# Linux RLIM_INFINITY, (~0UL) on 64-bit: how the OCI spec and getrlimit(2) write "unlimited".
RLIM_INFINITY = 18446744073709551615
UINT64_MAX = 2**64 - 1
# Linux include/uapi/linux/resource.h, MLOCK_LIMIT: 8 MiB since 5.16.
KERNEL_MEMLOCK_DEFAULT = (8 * 1024 * 1024, 8 * 1024 * 1024)
CONTAINERD_DROPINS = "/etc/systemd/system/containerd.service.d/"
# nodeadm v20260724 nodeadm/internal/containerd/base-runtime-spec.json, trimmed to the keys the
# model reads (the file also holds capabilities, mounts, namespaces and masked paths).
AMI_BASE_RUNTIME_SPEC = {
    "ociVersion": "1.1.0",
    "process": {
        "noNewPrivileges": True,
        "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 65536, "hard": 1048576}],
    },
}


class ContainerdRefusesBaseSpec(Exception):
    """containerd's CRI plugin does not start: no pod can run on the node."""


def through_go_float(value):
    """A JSON number after Go decodes it into interface{} (a float64) and encodes it again:
    the shortest digits that round-trip, in plain notation below 1e21 (encoding/json's float
    encoder). Integers up to 2**53 come back unchanged; 2**64 - 1 comes back as
    18446744073709552000."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    written = Decimal(repr(float(value)))
    return int(written) if written == written.to_integral_value() else float(written)


def _numbers_through_go(document):
    if isinstance(document, dict):
        return {k: _numbers_through_go(v) for k, v in document.items()}
    if isinstance(document, list):
        return [_numbers_through_go(v) for v in document]
    return through_go_float(document)


def mergo_override(dst: dict, src: dict) -> dict:
    """mergo.Merge(&dst, src, WithOverride) on decoded JSON: maps key by key, a non-empty
    value of src (a list included, whole) replaces dst's."""
    merged = copy.deepcopy(dst)
    for key, value in src.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = mergo_override(merged[key], value)
        elif value not in ({}, [], "", None, 0, False):
            merged[key] = copy.deepcopy(value)
    return merged


def util_merge(dst: dict, src: dict) -> dict:
    """nodeadm's util.Merge: both sides through JSON into interface{}, then mergo."""
    return mergo_override(_numbers_through_go(dst), _numbers_through_go(src))


def base_runtime_spec(node_configs: list[dict]) -> dict:
    """What nodeadm writes to /etc/containerd/base-runtime-spec.json for these NodeConfigs."""
    given: dict = {}
    for config in node_configs:
        spec = config.get("spec", {}).get("containerd", {}).get("baseRuntimeSpec") or {}
        given = util_merge(given, spec) if given and spec else (given or copy.deepcopy(spec))
    if not given:
        return copy.deepcopy(AMI_BASE_RUNTIME_SPEC)
    return util_merge(AMI_BASE_RUNTIME_SPEC, given)


def containerd_loads(spec: dict) -> dict[str, tuple[int, int]]:
    """The spec's rlimits by type, as containerd reads them into uint64 fields, or the refusal
    that stops its CRI plugin."""
    limits = {}
    for rlimit in spec.get("process", {}).get("rlimits", []):
        for field in ("soft", "hard"):
            value = rlimit.get(field)
            if not isinstance(value, int) or not 0 <= value <= UINT64_MAX:
                raise ContainerdRefusesBaseSpec(
                    f"json: cannot unmarshal number {value} into Go struct field "
                    f"POSIXRlimit.process.rlimits.{field} of type uint64"
                )
        limits[rlimit["type"]] = (rlimit["soft"], rlimit["hard"])
    return limits


_HEREDOC = re.compile(r"^cat > (\S+) <<'(\w+)'\n(.*?)\n\2$", re.M | re.S)
_RELOAD = re.compile(r"^systemctl daemon-reload$", re.M)


def _limit_memlock(body: str) -> tuple[int, int] | None:
    """LimitMEMLOCK= of a unit drop-in's [Service] section: `soft:hard` or one value for both."""
    found = None
    in_service = False
    for line in body.splitlines():
        if line.startswith("["):
            in_service = line.strip() == "[Service]"
        elif in_service and line.partition("=")[0].strip() == "LimitMEMLOCK":
            soft, _, hard = line.partition("=")[2].strip().partition(":")
            found = tuple(
                RLIM_INFINITY if v == "infinity" else int(v) for v in (soft, hard or soft)
            )
    return found


def containerd_memlock(scripts: list[str]) -> tuple[int, int]:
    """containerd's RLIMIT_MEMLOCK once nodeadm-run restarts it after the shell parts: the last
    LimitMEMLOCK written to a containerd.service drop-in that a later `systemctl daemon-reload`
    made systemd read."""
    limit = KERNEL_MEMLOCK_DEFAULT
    for script in scripts:
        events = [(m.start(), None) for m in _RELOAD.finditer(script)]
        events += [
            (m.start(), _limit_memlock(m.group(3)))
            for m in _HEREDOC.finditer(script)
            if m.group(1).startswith(CONTAINERD_DROPINS)
        ]
        pending = None
        for _, written in sorted(events, key=lambda e: e[0]):
            if written is not None:
                pending = written
            elif pending is not None:
                limit, pending = pending, None
    return limit


def base_spec_of(user_data: str) -> dict[str, tuple[int, int]]:
    """The rlimits containerd loads from the base runtime spec of a node booted with this."""
    return containerd_loads(base_runtime_spec(parse_user_data(user_data)))


def container_rlimit(user_data: str) -> tuple[int, int]:
    """(soft, hard) RLIMIT_MEMLOCK of a container on a node booted with `user_data`: the base
    spec's entry when it lists one (runc sets it), else containerd's own (inherited)."""
    listed = base_spec_of(user_data)
    if "RLIMIT_MEMLOCK" in listed:
        return listed["RLIMIT_MEMLOCK"]
    return containerd_memlock(shell_parts(user_data))
