"""The CI workflow shipped for forks (.github/workflows/ci.yml): its triggers, jobs, OIDC
credentials and pinned actions, read from the parsed YAML as GitHub reads it (GitHub Docs,
"Workflow syntax for GitHub Actions")."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from model.stacks import ROOT
from tests.conftest import STACKS

PATH = ROOT / ".github" / "workflows" / "ci.yml"
TEXT = PATH.read_text(encoding="utf-8")
WORKFLOW = yaml.safe_load(TEXT)
JOBS = WORKFLOW["jobs"]


def steps_using(job: str, action: str) -> list[dict]:
    return [s for s in JOBS[job]["steps"] if s.get("uses", "").split("@")[0] == action]


def all_uses() -> list[str]:
    return [s["uses"] for job in JOBS.values() for s in job["steps"] if "uses" in s]


def test_runs_on_pull_requests_and_on_pushes_to_main():
    # YAML 1.1 reads the bare key `on` as true; GitHub reads it as the triggers.
    triggers = WORKFLOW[True]
    assert set(triggers) == {"pull_request", "push"}
    assert triggers["push"] == {"branches": ["main"]}


def test_pull_requests_get_lint_tests_and_an_offline_plan_per_stack():
    pr = "github.event_name == 'pull_request'"
    assert JOBS["test"]["if"] == pr and JOBS["plan"]["if"] == pr
    # .ci/run checks ../shared, installs promtool, then `make test` (ruff check, ruff format
    # --check, pytest).
    assert [s["run"] for s in JOBS["test"]["steps"] if "run" in s][-1] == ".ci/run"
    assert JOBS["plan"]["strategy"]["matrix"]["stack"] == (
        "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    )
    plan = next(s["run"] for s in JOBS["plan"]["steps"] if s.get("name", "").startswith("plan"))
    assert '-m plan "${{ matrix.stack }}"' in plan
    assert '>> "$GITHUB_STEP_SUMMARY"' in plan
    # The plan's own exit status (3: a mandatory policy violation) fails the job, not tee's.
    assert 'exit "$status"' in plan and "${PIPESTATUS[0]}" in plan


def test_stack_matrix_lists_every_stack_file(tmp_path):
    step = next(s for s in JOBS["stacks"]["steps"] if s.get("id") == "list")
    output = tmp_path / "github_output"
    subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step["run"]],
        cwd=ROOT, check=True, env={**os.environ, "GITHUB_OUTPUT": str(output)},
    )  # fmt: skip
    line = output.read_text().strip()
    assert line.startswith("stacks=[")
    listed = yaml.safe_load(line.removeprefix("stacks="))
    # The four example stacks of README "Stacks and overrides", and any a user added.
    assert {"dev", "staging", "prod", "onprem"} <= set(listed)
    assert sorted(listed) == STACKS


def test_main_previews_every_stack_with_the_policy_pack_through_pulumis_action():
    preview = JOBS["preview"]
    assert preview["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert preview["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    (pulumi,) = steps_using("preview", "pulumi/actions")
    assert pulumi["with"]["command"] == "preview"
    # pulumi/actions README: `policyPacks` runs one or more policy packs with the command.
    assert pulumi["with"]["policyPacks"] == "policy"
    assert pulumi["with"]["stack-name"].endswith("${{ matrix.stack }}")


def test_cloud_credentials_come_from_oidc_only():
    # GitHub Docs, "Configuring OpenID Connect in Amazon Web Services": the job needs
    # id-token: write, and configure-aws-credentials assumes the role with role-to-assume.
    assert JOBS["preview"]["permissions"] == {"contents": "read", "id-token": "write"}
    assert WORKFLOW["permissions"] == {"contents": "read"}
    for name, job in JOBS.items():
        if name != "preview":
            assert "id-token" not in job.get("permissions", {}), name
    (aws,) = steps_using("preview", "aws-actions/configure-aws-credentials")
    assert aws["with"]["role-to-assume"] == "${{ vars.AWS_ROLE_ARN }}"
    assert not {"aws-access-key-id", "aws-secret-access-key"} & set(aws["with"])


def test_no_secret_is_written_into_the_workflow():
    # AWS access key ids begin AKIA/ASIA (IAM user guide, "Unique identifier prefixes"); Pulumi
    # access tokens begin pul- (Pulumi docs, "Access tokens").
    assert not re.search(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b", TEXT)
    assert not re.search(r"\bpul-[0-9a-f]{40}\b", TEXT)
    # Every secret is a reference to the repository's secrets, inside an expression.
    for line in TEXT.splitlines():
        if "secret" in line.lower() and not line.lstrip().startswith("#"):
            value = line.split(":", 1)[1].strip() if ":" in line else line
            assert re.fullmatch(r"\$\{\{ secrets\.[A-Z_]+ \}\}", value), line


@pytest.mark.parametrize("uses", sorted(set(all_uses())))
def test_every_action_is_pinned_to_a_major_version_or_a_commit(uses):
    # A branch (main, master) moves under the workflow; a major tag or a full SHA does not move
    # to a breaking release.
    assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+|[0-9a-f]{40})", uses), uses


def test_pull_requests_show_the_plan_diff_against_the_target_branch():
    """Issue 11: the workflow posts the plan diff on pull requests, planned against the target
    branch; both plans are offline, so no cloud credential is needed for either."""
    (base,) = [s for s in JOBS["plan"]["steps"] if s.get("with", {}).get("path") == "base"]
    assert base["uses"].startswith("actions/checkout@")
    assert base["with"]["ref"] == "${{ github.base_ref }}"
    base_plan = next(
        s["run"] for s in JOBS["plan"]["steps"] if "target branch" in s.get("name", "")
    )
    assert "-m plan" in base_plan and '--out "$here/../base-plan"' in base_plan
    plan = next(s["run"] for s in JOBS["plan"]["steps"] if s.get("name", "").startswith("plan"))
    assert "--against ../base-plan" in plan


def test_the_preview_runs_the_pack_in_the_projects_venv_for_its_stack():
    # policy/__main__.py refuses to start without GPU_PLATFORM_STACK; PulumiPolicy.yaml uses
    # ../.venv, so the pack's pinned pulumi-policy goes there.
    runs = [s.get("run", "") for s in JOBS["preview"]["steps"]]
    assert ".venv/bin/pip install -r policy/requirements.txt" in runs
    (pulumi,) = steps_using("preview", "pulumi/actions")
    assert pulumi["env"]["GPU_PLATFORM_STACK"] == "${{ matrix.stack }}"
