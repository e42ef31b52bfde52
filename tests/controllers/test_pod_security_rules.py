"""Pod Security admission (STYLE.md §17): a model of the Pod Security Standards' baseline and
restricted checks (tests/controllers/pod_security.py, from the Kubernetes "Pod Security
Standards" page and pod-security-admission's check_*.go), with a failing and a passing case per
rule, run over every stack (the shipped ones and one of every sharing mode, fabric and team
setting): every team namespace enforces `restricted` unless a team setting says why; every job
the builder renders is admitted in the namespace it runs in; every pod the program declares or
its charts render is admitted in its namespace; and no team namespace can run a pod as the
self-test's node-patching account."""

from __future__ import annotations

import pytest

from tests.controllers.pod_security import (
    APPARMOR_ANNOTATION,
    LEVELS,
    enforce_level,
    pod_templates,
    violations,
)
from tests.helpers.dra_objects import claiming
from tests.helpers.pod_security_stacks import (
    ALL_STACKS,
    builder_jobs,
    config_of,
    declared_pods,
    namespaces,
    plan_of,
    team_namespaces,
)

BY_TEMPLATE = {"resourceClaimTemplateName": "one-gpu"}
WARN = "pod-security.kubernetes.io/warn"
AUDIT = "pod-security.kubernetes.io/audit"
ENFORCE = "pod-security.kubernetes.io/enforce"

# ---------------------------------------------------------------- the model's own rules


def restricted_pod():
    """The least a pod sets to pass `restricted` (the page's Restricted table)."""
    meta = {}
    spec = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "c",
                "image": "x",
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],
    }
    return meta, spec


def _sc(spec):
    return spec["containers"][0]["securityContext"]


def _set(**fields):
    return lambda meta, spec: _sc(spec).update(fields)


def _pod_set(**fields):
    return lambda meta, spec: spec["securityContext"].update(fields)


def _spec(**fields):
    return lambda meta, spec: spec.update(fields)


def _volume(source):
    return lambda meta, spec: spec["volumes"].append({"name": "w", **source})


def _probe(host):
    return lambda meta, spec: spec["containers"][0].update(
        livenessProbe={"httpGet": {"port": 80, **({"host": host} if host is not None else {})}}
    )


def _annotate(value):
    return lambda meta, spec: meta.update(annotations={APPARMOR_ANNOTATION + "c": value})


def _unset(key, where="container"):
    def change(meta, spec):
        (_sc(spec) if where == "container" else spec["securityContext"]).pop(key)

    return change


def _both(*changes):
    def change(meta, spec):
        for c in changes:
            c(meta, spec)

    return change


# (level, the page's control, a change that breaks it, a change that keeps to it)
CASES = [
    ("baseline", "HostProcess", _set(windowsOptions={"hostProcess": True}),
     _set(windowsOptions={"hostProcess": False})),
    ("baseline", "Host Namespaces", _spec(hostNetwork=True), _spec(hostNetwork=False)),
    ("baseline", "Host Namespaces", _spec(hostPID=True), _spec(hostIPC=False)),
    ("baseline", "Privileged Containers", _set(privileged=True), _set(privileged=False)),
    # IPC_LOCK is no default capability; CHOWN is.
    ("baseline", "Capabilities", _set(capabilities={"add": ["IPC_LOCK"]}),
     _set(capabilities={"add": ["CHOWN"]})),
    ("baseline", "HostPath Volumes", _volume({"hostPath": {"path": "/mnt/k8s-disks/0"}}),
     _volume({"emptyDir": {}})),
    ("baseline", "Host Ports",
     lambda m, s: s["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 80}]),
     lambda m, s: s["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 0}])),
    ("baseline", "Host Probes / Lifecycle Hooks", _probe("10.0.0.1"), _probe("")),
    ("baseline", "AppArmor", _set(appArmorProfile={"type": "Unconfined"}),
     _set(appArmorProfile={"type": "Localhost", "localhostProfile": "p"})),
    ("baseline", "AppArmor", _annotate("unconfined"), _annotate("localhost/p")),
    ("baseline", "SELinux", _set(seLinuxOptions={"type": "spc_t"}),
     _set(seLinuxOptions={"type": "container_t"})),
    ("baseline", "SELinux", _pod_set(seLinuxOptions={"user": "root"}),
     _pod_set(seLinuxOptions={"level": "s0:c1,c2"})),
    ("baseline", "/proc Mount Type", _set(procMount="Unmasked"), _set(procMount="Default")),
    ("baseline", "Seccomp", _set(seccompProfile={"type": "Unconfined"}),
     _set(seccompProfile={"type": "Localhost", "localhostProfile": "p.json"})),
    ("baseline", "Sysctls", _pod_set(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
     _pod_set(sysctls=[{"name": "net.ipv4.tcp_keepalive_time", "value": "60"}])),
    ("restricted", "Volume Types", _volume({"nfs": {"server": "s", "path": "/"}}),
     _volume({"ephemeral": {"volumeClaimTemplate": {"spec": {}}}})),
    ("restricted", "Privilege Escalation", _unset("allowPrivilegeEscalation"),
     _set(allowPrivilegeEscalation=False)),
    ("restricted", "Running as Non-root", _unset("runAsNonRoot", "pod"),
     _both(_unset("runAsNonRoot", "pod"), _set(runAsNonRoot=True))),
    ("restricted", "Running as Non-root", _set(runAsNonRoot=False), _set(runAsNonRoot=True)),
    ("restricted", "Running as Non-root user", _set(runAsUser=0), _set(runAsUser=1000)),
    ("restricted", "Seccomp", _unset("seccompProfile", "pod"),
     _both(_unset("seccompProfile", "pod"), _set(seccompProfile={"type": "RuntimeDefault"}))),
    ("restricted", "Capabilities", _set(capabilities={"drop": ["NET_RAW"]}),
     _set(capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})),
]  # fmt: skip


@pytest.mark.parametrize(("level", "rule", "breaks", "keeps"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])  # fmt: skip
def test_each_rule_refuses_its_failing_case_and_admits_its_passing_case(level, rule, breaks, keeps):
    bad, good = restricted_pod(), restricted_pod()
    breaks(*bad)
    keeps(*good)
    assert [(v.level, v.rule) for v in violations(bad, level)] == [(level, rule)]
    assert violations(good, level) == []
    # Privileged admits anything; restricted holds every baseline rule too.
    assert violations(bad, "privileged") == []
    if level == "baseline":
        assert [v.rule for v in violations(bad, "restricted")][:1] == [rule]


def test_the_minimal_restricted_pod_and_an_empty_pod():
    assert violations(restricted_pod(), "restricted") == []
    # The page: Baseline "allows the default (minimally specified) Pod configuration"; the
    # restricted controls each need a setting.
    empty = ({}, {"containers": [{"name": "c", "image": "x"}]})
    assert violations(empty, "baseline") == []
    assert {v.rule for v in violations(empty, "restricted")} == {
        "Privilege Escalation",
        "Running as Non-root",
        "Seccomp",
        "Capabilities",
    }


def test_the_model_finds_the_pods_of_every_workload_kind():
    pod = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}
    objects = {
        "Job": {"spec": {"template": pod}},
        "DaemonSet": {"spec": {"template": pod}},
        "Deployment": {"spec": {"template": pod}},
        "StatefulSet": {"spec": {"template": pod}},
        "CronJob": {"spec": {"jobTemplate": {"spec": {"template": pod}}}},
        "JobSet": {"spec": {"replicatedJobs": [{"template": {"spec": {"template": pod}}}]}},
    }
    for kind, body in objects.items():
        assert pod_templates({"kind": kind, **body}) == [({"labels": {"a": "b"}},
                                                          {"containers": []})], kind  # fmt: skip
    assert pod_templates({"kind": "ConfigMap", "data": {}}) == []
    assert enforce_level({"metadata": {"labels": {}}}) == "privileged"
    with pytest.raises(ValueError, match="no Pod Security level"):
        violations(restricted_pod(), "strict")


# ------------------------------------------------------------------- over every stack


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_team_namespace_enforces_restricted_unless_a_team_setting_says_why(stack):
    """Issue 25 item 12: a team namespace that enforces `privileged` lets anyone who may create a
    pod there run a privileged, host-network pod on a GPU node. `restricted` by default; a team's
    `pod_security: baseline` with its reason; warn and audit always against restricted."""
    declared = namespaces(stack)
    cfg = config_of(stack)
    for team in cfg.scheduling.all_teams(cfg.namespaces.training):
        labels = declared[team.name]["metadata"]["labels"]
        expected = "baseline" if team.pod_security == "baseline" else "restricted"
        assert labels[ENFORCE] == expected, team.name
        if expected == "baseline":
            assert team.pod_security_reason, team.name
        assert labels[WARN] == labels[AUDIT] == "restricted", team.name


def test_the_every_setting_stack_has_a_baseline_team_and_every_sharing_mode():
    """So that the tests over every stack see each team setting and sharing mode."""
    cfg = config_of("every-aws")
    assert {t.pod_security for t in cfg.scheduling.teams} == {"restricted", "baseline"}
    assert {p.sharing.mode for p in cfg.gpu_pools} == {"time-slicing", "mps", "mig", "none"}
    fabrics = {p.fabric for s in ALL_STACKS for p in config_of(s).gpu_pools}
    assert fabrics == {"efa", "infiniband", "roce", "tcp"}
    assert {p.sharing.mode for p in config_of("every-onprem").gpu_pools} == {
        "none",
        "time-slicing",
        "mps",
    }
    assert cfg.selftest.cordon_on_fail


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_job_the_builder_renders_is_admitted_in_the_namespace_it_runs_in(stack):
    """Issue 25 item 4: a job refused by its namespace's level never starts (the Job
    controller's pods fail with FailedCreate). Recipes, `jobs submit` in every team namespace on
    every pool, the self-test and its schedule, burst jobs: each pod against the enforce level
    of the Namespace the program declares for it."""
    declared = namespaces(stack)
    jobs = list(builder_jobs(stack))
    assert jobs, f"{stack}: the builder renders nothing to check"
    refused = []
    for what, obj in jobs:
        namespace = obj["metadata"]["namespace"]
        assert namespace in declared, f"{what}: namespace {namespace} is not declared"
        level = enforce_level(declared[namespace])
        for pod in pod_templates(obj):
            refused += [f"{what} ({namespace}, {level}): {v}" for v in violations(pod, level)]
    assert refused == []


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_job_the_builder_renders_passes_restricted_wherever_it_runs(stack):
    """The builder's pods keep to `restricted` itself, so that a team's level is only ever
    loosened for the team's own images, never for the platform's pod spec."""
    refused = [
        f"{what}: {v}"
        for what, obj in builder_jobs(stack)
        for pod in pod_templates(obj)
        for v in violations(pod, "restricted")
    ]
    assert refused == []


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_pod_the_program_declares_is_admitted_in_its_namespace(stack):
    """DaemonSets, Deployments, the self-test Job and CronJobs, and every chart's pods, each
    against the enforce level of the namespace it lands in, where the program declares it."""
    declared = namespaces(stack)
    refused = [
        f"{where} ({namespace}, {level}): {v}"
        for where, namespace, pod in declared_pods(stack)
        if namespace in declared
        for level in [enforce_level(declared[namespace])]
        for v in violations(pod, level)
    ]
    assert refused == []


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_no_team_namespace_enforces_privileged(stack):
    """Item 12 as one line: `privileged` is for the platform's own operator namespaces."""
    declared = namespaces(stack)
    assert {n: enforce_level(declared[n]) for n in team_namespaces(stack)} == {
        n: ("baseline" if n == "eval" and stack.startswith("every-") else "restricted")
        for n in team_namespaces(stack)
    }


# ------------------------------------------------------------- the quarantine account


def _subjects_granted(stack: str, resource: str, verb: str) -> list[dict]:
    """The ServiceAccounts any ClusterRole binding grants `verb` on `resource`."""
    objects = plan_of(stack).kubernetes_objects()
    roles = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "ClusterRole"
        and any(resource in r["resources"] and verb in r["verbs"] for r in o.get("rules", ()))
    }
    return [
        s
        for o in objects
        if o["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and o["roleRef"]["kind"] == "ClusterRole"
        and o["roleRef"]["name"] in roles
        for s in o.get("subjects", ())
        if s["kind"] == "ServiceAccount"
    ]


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_no_team_namespace_can_run_a_pod_as_an_account_that_patches_or_reads_nodes(stack):
    """Issue 25 item 11. A pod can name only a ServiceAccount of its own namespace (the
    ServiceAccount admission plugin looks `spec.serviceAccountName` up in the pod's namespace;
    Kubernetes docs, "Service Accounts"), so an account that may patch nodes is safe only in a
    namespace no team creates pods in: the self-test's own."""
    teams = set(team_namespaces(stack))
    cfg = config_of(stack)
    for verb in ("patch", "get"):
        for subject in _subjects_granted(stack, "nodes", verb):
            if subject["name"] != "selftest":
                continue  # add-on operators' accounts in their own namespaces
            assert subject["namespace"] not in teams, (verb, subject)
            assert subject["namespace"] == cfg.namespaces.selftest, (verb, subject)


def test_the_every_setting_stack_grants_the_quarantine_patch():
    """So that the test above sees the node patch it guards."""
    subjects = _subjects_granted("every-aws", "nodes", "patch")
    assert {(s["namespace"], s["name"]) for s in subjects if s["name"] == "selftest"} == {
        ("gpu-platform-selftest", "selftest")
    }


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_every_self_test_pod_runs_in_the_platforms_own_namespace(stack):
    cfg = config_of(stack)
    found = {
        obj["metadata"]["namespace"] for what, obj in builder_jobs(stack) if "self-test" in what
    }
    assert found <= {cfg.namespaces.selftest}
    assert cfg.namespaces.selftest not in team_namespaces(stack)
    # Its hardware checks need no host access: the namespace is as strict as a team's.
    assert enforce_level(namespaces(stack)[cfg.namespaces.selftest]) == "restricted"


def test_levels_are_ordered_as_the_page_lists_them():
    assert LEVELS == ("privileged", "baseline", "restricted")


def test_claims_leave_a_pods_level_as_it_was():
    """No check of pod-security-admission reads `spec.resourceClaims` or a container's
    `resources.claims` (policy/check_*.go; check_restrictedVolumes.go reads `spec.volumes`
    only): a restricted pod claiming a GPU and a ComputeDomain channel stays restricted, and a
    claim does not excuse what the pod sets."""
    meta, spec = restricted_pod()
    claimed = claiming(spec, gpu=BY_TEMPLATE, channel={"resourceClaimTemplateName": "ch"})
    assert violations((meta, claimed), "restricted") == []
    claimed["containers"][0]["securityContext"]["privileged"] = True
    assert [v.rule for v in violations((meta, claimed), "baseline")] == ["Privileged Containers"]
