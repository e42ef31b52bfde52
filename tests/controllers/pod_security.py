"""A model of Pod Security admission (the PodSecurity admission plugin, on by default since
Kubernetes 1.25): the checks of the Pod Security Standards at the `baseline` and `restricted`
levels, evaluated on a pod spec, and the level a namespace enforces.

Written from the Kubernetes "Pod Security Standards" page (kubernetes.io/docs/concepts/security/
pod-security-standards/, the v1.35 and v1.36 tables) and the checks that implement it,
kubernetes/kubernetes `staging/src/k8s.io/pod-security-admission/policy/check_<id>.go` (each rule
names its file). Each rule returns what it forbids, or nothing. Pods of another operating
system (`spec.os.name: windows`) and user-namespaced pods (`hostUsers: false`) relax some
restricted checks upstream; the platform declares neither, so the model holds every pod to the
Linux rules, the stricter reading.

DRA claims change nothing here: no check reads `spec.resourceClaims` or a container's
`resources.claims` (each `check_*.go` at the stacks' minors reads the pod's and containers'
securityContext, host namespaces, ports, probes, sysctls and `spec.volumes`; the volume check
lists volume sources only, check_restrictedVolumes.go), and the page has no control for them. A
claim brings its device through CDI, set up by the driver's kubelet plugin, not through any
field the pod writes: a restricted pod stays restricted with claims.

Not modelled: `securityContext.ulimits`, which baseline forbids only from 1.37
(`check_ulimits_baseline.go`), past the stacks' minors.

A workload is admitted by its pods: the admission plugin also checks the pod template of
Deployments, DaemonSets, Jobs, CronJobs and the like (warn and audit only), and the Job or
ReplicaSet controller's pods are refused (FailedCreate) when their template breaks the
namespace's enforce level. `pod_templates` finds every template in an object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

LEVELS = ("privileged", "baseline", "restricted")
ENFORCE = "pod-security.kubernetes.io/enforce"
# With no enforce label, the plugin applies its configured default, which is `privileged`
# unless the cluster's AdmissionConfiguration says otherwise (the "Pod Security Admission" page,
# "Configure the Admission Controller"; EKS keeps it).
DEFAULT_LEVEL = "privileged"

Pod = tuple[dict[str, Any], dict[str, Any]]  # (metadata, spec)


@dataclass(frozen=True)
class Violation:
    rule: str
    level: str
    detail: str

    def __str__(self) -> str:
        return f"{self.level}/{self.rule}: {self.detail}"


def containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every container the checks visit (`visitor.go`, visitContainers)."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or ()


def _security(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("securityContext") or {}


# ------------------------------------------------------------------------------ baseline


def host_process(meta, spec) -> str | None:
    """HostProcess: windowsOptions.hostProcess undefined or false (check_windowsHostProcess.go)."""
    found = [
        c.get("name", "<pod>")
        for c in [spec, *containers(spec)]
        if (_security(c).get("windowsOptions") or {}).get("hostProcess")
    ]
    return f"hostProcess set on {found}" if found else None


def host_namespaces(meta, spec) -> str | None:
    """Host Namespaces: hostNetwork, hostPID, hostIPC undefined or false
    (check_hostNamespaces.go)."""
    found = [key for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    return f"{', '.join(found)} true" if found else None


def privileged(meta, spec) -> str | None:
    """Privileged Containers: securityContext.privileged undefined or false
    (check_privileged.go)."""
    found = [c["name"] for c in containers(spec) if _security(c).get("privileged")]
    return f"privileged containers {found}" if found else None


# The "Capabilities" control of baseline: what may be added (check_capabilities_baseline.go,
# capabilities_allowed_1_0).
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
        "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
    }
)  # fmt: skip


def _added(container: dict[str, Any]) -> list[str]:
    return list((_security(container).get("capabilities") or {}).get("add") or ())


def capabilities_baseline(meta, spec) -> str | None:
    """Capabilities: `add` only from the baseline list (check_capabilities_baseline.go)."""
    found = {
        c["name"]: bad
        for c in containers(spec)
        if (bad := [cap for cap in _added(c) if cap not in BASELINE_CAPABILITIES])
    }
    return f"non-default capabilities {found}" if found else None


def host_path_volumes(meta, spec) -> str | None:
    """HostPath Volumes: spec.volumes[*].hostPath undefined (check_hostPathVolumes.go)."""
    found = [v["name"] for v in spec.get("volumes") or () if "hostPath" in v]
    return f"hostPath volumes {found}" if found else None


def host_ports(meta, spec) -> str | None:
    """Host Ports: containers[*].ports[*].hostPort undefined or 0 (check_hostPorts.go)."""
    found = [
        f"{c['name']}:{p['hostPort']}"
        for c in containers(spec)
        for p in c.get("ports") or ()
        if p.get("hostPort")
    ]
    return f"hostPort {found}" if found else None


def host_probes(meta, spec) -> str | None:
    """Host Probes / Lifecycle Hooks (1.34+): probes' and lifecycle handlers' httpGet.host and
    tcpSocket.host undefined or "" (check_hostProbesAndhostLifecycle.go)."""
    found = []
    for c in containers(spec):
        handlers = [c.get(p) for p in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [(c.get("lifecycle") or {}).get(h) for h in ("postStart", "preStop")]
        for handler in filter(None, handlers):
            for kind in ("httpGet", "tcpSocket"):
                if (handler.get(kind) or {}).get("host"):
                    found.append(f"{c['name']}.{kind}.host")
    return f"probe or hook with a host {found}" if found else None


APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def apparmor(meta, spec) -> str | None:
    """AppArmor: appArmorProfile.type undefined, RuntimeDefault or Localhost; the annotations
    `container.apparmor.security.beta.kubernetes.io/*` runtime/default or localhost/*
    (check_appArmorProfile.go, check_apparmor.go)."""
    found = [
        c.get("name", "<pod>")
        for c in [spec, *containers(spec)]
        if (_security(c).get("appArmorProfile") or {}).get("type")
        not in (None, "RuntimeDefault", "Localhost")
    ]
    found += [
        key
        for key, value in (meta.get("annotations") or {}).items()
        if key.startswith(APPARMOR_ANNOTATION)
        and value != "runtime/default"
        and not value.startswith("localhost/")
    ]
    return f"AppArmor profile overridden {found}" if found else None


# The "SELinux" control: the types allowed (check_seLinuxOptions.go, 1.31+ adds
# container_engine_t).
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t",
                           "container_engine_t"})  # fmt: skip


def selinux(meta, spec) -> str | None:
    """SELinux: seLinuxOptions.type from the list, user and role undefined or ""
    (check_seLinuxOptions.go)."""
    found = []
    for c in [spec, *containers(spec)]:
        options = _security(c).get("seLinuxOptions") or {}
        if (
            options.get("type", "") not in SELINUX_TYPES
            or options.get("user")
            or options.get("role")
        ):
            found.append(c.get("name", "<pod>"))
    return f"custom SELinux options {found}" if found else None


def proc_mount(meta, spec) -> str | None:
    """/proc Mount Type: procMount undefined or Default (check_procMount_baseline.go)."""
    found = [
        c["name"]
        for c in containers(spec)
        if _security(c).get("procMount") not in (None, "Default")
    ]
    return f"procMount unmasked {found}" if found else None


def seccomp_baseline(meta, spec) -> str | None:
    """Seccomp: seccompProfile.type undefined, RuntimeDefault or Localhost; never Unconfined
    (check_seccompProfile_baseline.go)."""
    found = [
        c.get("name", "<pod>")
        for c in [spec, *containers(spec)]
        if (_security(c).get("seccompProfile") or {}).get("type") == "Unconfined"
    ]
    return f"seccomp Unconfined {found}" if found else None


# The "Sysctls" control's allowed names at 1.29+ (check_sysctls.go, sysctls_allowed_1_29).
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)  # fmt: skip


def sysctls(meta, spec) -> str | None:
    """Sysctls: only the safe set (check_sysctls.go)."""
    found = [
        s["name"] for s in _security(spec).get("sysctls") or () if s["name"] not in SAFE_SYSCTLS
    ]
    return f"unsafe sysctls {found}" if found else None


# ---------------------------------------------------------------------------- restricted

# The "Volume Types" control: the only volume sources restricted allows
# (check_restrictedVolumes.go).
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
     "projected", "secret"}
)  # fmt: skip


def volume_types(meta, spec) -> str | None:
    """Volume Types: every volume one of the listed sources (check_restrictedVolumes.go)."""
    found = {
        v["name"]: sorted(set(v) - {"name"} - RESTRICTED_VOLUMES)
        for v in spec.get("volumes") or ()
        if set(v) - {"name"} - RESTRICTED_VOLUMES
    }
    return f"restricted volume types {found}" if found else None


def privilege_escalation(meta, spec) -> str | None:
    """Privilege Escalation: allowPrivilegeEscalation set to false on every container
    (check_allowPrivilegeEscalation.go)."""
    found = [
        c["name"]
        for c in containers(spec)
        if _security(c).get("allowPrivilegeEscalation") is not False
    ]
    return f"allowPrivilegeEscalation != false {found}" if found else None


def run_as_non_root(meta, spec) -> str | None:
    """Running as Non-root: runAsNonRoot true on the pod (no container setting false) or on
    every container (check_runAsNonRoot.go)."""
    pod = _security(spec).get("runAsNonRoot")
    found = []
    for c in containers(spec):
        own = _security(c).get("runAsNonRoot")
        if own is False or (own is None and pod is not True):
            found.append(c["name"])
    if pod is False:
        found.append("<pod>")
    return f"runAsNonRoot != true {found}" if found else None


def run_as_user(meta, spec) -> str | None:
    """Running as Non-root user: runAsUser undefined or non-zero (check_runAsUser.go)."""
    found = [
        c.get("name", "<pod>")
        for c in [spec, *containers(spec)]
        if _security(c).get("runAsUser") == 0
    ]
    return f"runAsUser 0 {found}" if found else None


def seccomp_restricted(meta, spec) -> str | None:
    """Seccomp (restricted): RuntimeDefault or Localhost on the pod, or on every container;
    unset is refused (check_seccompProfile_restricted.go)."""
    allowed = ("RuntimeDefault", "Localhost")
    pod = (_security(spec).get("seccompProfile") or {}).get("type")
    found = []
    for c in containers(spec):
        own = (_security(c).get("seccompProfile") or {}).get("type")
        if (own is None and pod not in allowed) or (own is not None and own not in allowed):
            found.append(c["name"])
    if pod is not None and pod not in allowed:
        found.append("<pod>")
    return f"seccompProfile not RuntimeDefault or Localhost {found}" if found else None


def capabilities_restricted(meta, spec) -> str | None:
    """Capabilities (restricted): drop ALL, add only NET_BIND_SERVICE
    (check_capabilities_restricted.go)."""
    found = []
    for c in containers(spec):
        caps = _security(c).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or ()) or set(_added(c)) - {"NET_BIND_SERVICE"}:
            found.append(c["name"])
    return f"capabilities not drop ALL / add NET_BIND_SERVICE only {found}" if found else None


Rule = Callable[[dict[str, Any], dict[str, Any]], "str | None"]

# Every check, by the level that introduces it; restricted includes baseline.
RULES: dict[str, dict[str, Rule]] = {
    "baseline": {
        "HostProcess": host_process,
        "Host Namespaces": host_namespaces,
        "Privileged Containers": privileged,
        "Capabilities": capabilities_baseline,
        "HostPath Volumes": host_path_volumes,
        "Host Ports": host_ports,
        "Host Probes / Lifecycle Hooks": host_probes,
        "AppArmor": apparmor,
        "SELinux": selinux,
        "/proc Mount Type": proc_mount,
        "Seccomp": seccomp_baseline,
        "Sysctls": sysctls,
    },
    "restricted": {
        "Volume Types": volume_types,
        "Privilege Escalation": privilege_escalation,
        "Running as Non-root": run_as_non_root,
        "Running as Non-root user": run_as_user,
        "Seccomp": seccomp_restricted,
        "Capabilities": capabilities_restricted,
    },
}


def violations(pod: Pod, level: str) -> list[Violation]:
    """What the level forbids in the pod; [] where it is admitted."""
    if level not in LEVELS:
        raise ValueError(f"{level!r} is no Pod Security level; one of {LEVELS}")
    meta, spec = pod
    upto = LEVELS[1 : LEVELS.index(level) + 1]
    return [
        Violation(rule, at, detail)
        for at in upto
        for rule, check in RULES[at].items()
        if (detail := check(meta, spec))
    ]


# ---------------------------------------------------------------------- where pods are

# Where each workload kind keeps its pod template.
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "PodTemplate": ("template",),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def pod_templates(obj: dict[str, Any]) -> list[Pod]:
    """Every pod an object makes: a Pod itself, a workload's template, each replicatedJob of a
    JobSet (jobset.x-k8s.io); [] for objects that make none."""
    kind = obj.get("kind")
    if kind == "Pod":
        return [(obj.get("metadata") or {}, obj.get("spec") or {})]
    if kind == "JobSet":
        return [
            _pod(job["template"]["spec"]["template"])
            for job in obj["spec"].get("replicatedJobs") or ()
        ]
    path = TEMPLATE_PATHS.get(kind)
    if path is None:
        return []
    template: Any = obj
    for key in path:
        template = template.get(key) or {}
    return [_pod(template)] if template else []


def _pod(template: dict[str, Any]) -> Pod:
    return template.get("metadata") or {}, template.get("spec") or {}


def enforce_level(namespace: dict[str, Any] | None) -> str:
    """The level a Namespace object enforces; the plugin's default where it sets none."""
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(ENFORCE, DEFAULT_LEVEL)
