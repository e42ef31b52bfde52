"""The CI shipped for forks: the GitHub workflow (.github/workflows/ci.yml), its triggers, jobs,
OIDC credentials and pinned actions, read from the parsed YAML as GitHub reads it (GitHub Docs,
"Workflow syntax for GitHub Actions"); the same gate for GitLab (.gitlab-ci.yml, GitLab Docs,
"CI/CD YAML syntax reference"), held to the same commands; and ../shared, which both fetch the
same way (.ci/fetch-shared) and docs/ci.md describes folder by folder."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from model.stacks import ROOT
from tests.conftest import STACKS

PATH = ROOT / ".github" / "workflows" / "ci.yml"
CI_PLAN = (ROOT / ".ci" / "plan").read_text(encoding="utf-8")
TEXT = PATH.read_text(encoding="utf-8")
WORKFLOW = yaml.safe_load(TEXT)
JOBS = WORKFLOW["jobs"]
GITLAB_TEXT = (ROOT / ".gitlab-ci.yml").read_text(encoding="utf-8")
GITLAB = yaml.safe_load(GITLAB_TEXT)
# GitLab's top-level keywords; every other top-level key is a job.
GITLAB_GLOBAL = {"workflow", "stages", "variables", "default", "include"}
GITLAB_JOBS = {k: v for k, v in GITLAB.items() if k not in GITLAB_GLOBAL}
# The preview job each stack's child-pipeline job extends (.ci/gitlab-previews writes them).
GITLAB_PREVIEW = yaml.safe_load((ROOT / ".ci" / "gitlab-preview.yml").read_text())[".preview"]


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
    assert '.ci/plan "${{ matrix.stack }}" ../base' in plan
    # Issue 38: the gate fails on a warning or advisory the stack did not waive.
    assert '.venv/bin/python -m plan "$stack" --strict' in CI_PLAN
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
    # .ci/plan plans the base checkout first, then this change against that plan.
    assert '(cd "$base" && "$here/.venv/bin/python" -m plan "$stack" --quiet' in CI_PLAN
    assert 'against=(--against "out/base/$stack")' in CI_PLAN
    assert '--strict "${against[@]}"' in CI_PLAN


def test_the_preview_runs_the_pack_in_the_projects_venv_for_its_stack():
    # policy/__main__.py refuses to start without GPU_PLATFORM_STACK; PulumiPolicy.yaml uses
    # ../.venv, so the pack's pinned pulumi-policy goes there.
    runs = [s.get("run", "") for s in JOBS["preview"]["steps"]]
    assert ".venv/bin/pip install -r policy/requirements.txt" in runs
    (pulumi,) = steps_using("preview", "pulumi/actions")
    assert pulumi["env"]["GPU_PLATFORM_STACK"] == "${{ matrix.stack }}"


# ------------------------------------------------------------------ the same gate on GitLab

# What the CI files run: the .ci/ scripts, make targets and pip requirement files, from each
# shell line (a step's `run` on GitHub, a job's `script` lines on GitLab).
COMMANDS = re.compile(r"(\.ci/[\w-]+|make [\w./-]+|pip install -r [\w./-]+)")


def github_shell(job: str | None = None) -> list[str]:
    jobs = [JOBS[job]] if job else JOBS.values()
    return [s["run"] for j in jobs for s in j["steps"] if "run" in s]


def gitlab_shell(job: str | None = None) -> list[str]:
    named = {**GITLAB_JOBS, "preview": GITLAB_PREVIEW, "previews": GITLAB_JOBS["previews"]}
    jobs = [named[job]] if job else named.values()
    return [line for j in jobs for key in ("before_script", "script") for line in j.get(key, [])]


def commands(lines: list[str]) -> set[str]:
    return {c for line in lines for c in COMMANDS.findall(line)}


def test_gitlab_runs_the_same_commands_as_github_job_by_job():
    # GitHub's jobs and their GitLab namesakes; the stack list is GitHub's own matrix input.
    for job in ("test", "plan", "preview"):
        assert commands(gitlab_shell(job)) == commands(github_shell(job)), job
    # GitHub lists the stacks in a step of its own; GitLab's child pipeline in a script.
    assert commands(github_shell()) == commands(gitlab_shell()) - {".ci/gitlab-previews"}
    assert {".ci/run", ".ci/fetch-shared", ".ci/plan"} <= commands(gitlab_shell())


def test_every_ci_script_the_files_call_exists_and_is_documented():
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    for script in {c for c in commands(github_shell() + gitlab_shell()) if c.startswith(".ci/")}:
        path = ROOT / script
        assert path.is_file() and os.access(path, os.X_OK), script
        assert f"`{script}" in page, f"docs/ci.md does not name {script}"


def test_ci_run_runs_the_make_targets_the_readme_says_ci_runs():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    targets = re.findall(r"^make ([\w-]+)$", run, re.MULTILINE)
    # README: "CI (`.ci/run`) runs `make test`, then `make test-image`".
    (said,) = [p for p in (ROOT / "README.md").read_text().split("\n\n") if "CI (`.ci/run`)" in p]
    assert targets == re.findall(r"`make ([\w-]+)`", said) == ["test", "test-image"]
    assert ".ci/fetch-shared" in run


def test_gitlab_gates_merge_requests_and_previews_the_default_branch():
    mr = {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}
    main = {"if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"}
    assert GITLAB["workflow"]["rules"] == [mr, main]
    assert GITLAB_JOBS["test"]["rules"] == [mr] and GITLAB_JOBS["plan"]["rules"] == [mr]
    assert GITLAB_JOBS["previews"]["rules"] == GITLAB_JOBS["preview"]["rules"] == [main]
    assert set(GITLAB["stages"]) == {job["stage"] for job in GITLAB_JOBS.values()}
    assert gitlab_shell("test")[-1] == ".ci/run"
    # Every stack file, planned against the target branch's checkout.
    (loop,) = [line for line in gitlab_shell("plan") if "for file in" in line]
    assert "stacks/Pulumi.*.yaml" in loop and '.ci/plan "$stack" ../base' in loop
    assert "git worktree add --detach ../base FETCH_HEAD" in gitlab_shell("plan")
    assert GITLAB_JOBS["plan"]["artifacts"]["when"] == "always"


def test_gitlab_previews_every_stack_file_with_the_policy_pack():
    # GitLab Docs, "Downstream pipelines": a child pipeline from a job's artifact.
    assert GITLAB_JOBS["previews"]["script"] == [".ci/gitlab-previews > previews.yml"]
    assert GITLAB_JOBS["preview"]["trigger"]["include"] == [
        {"artifact": "previews.yml", "job": "previews"}
    ]
    assert GITLAB_JOBS["preview"]["trigger"]["strategy"] == "depend"
    run = subprocess.run(
        [str(ROOT / ".ci" / "gitlab-previews")], capture_output=True, text=True, check=True
    )
    child = yaml.safe_load(run.stdout)
    assert child.pop("include") == [{"local": ".ci/gitlab-preview.yml"}]
    assert sorted(child) == [f"preview {stack}" for stack in STACKS]
    for name, job in child.items():
        stack = name.removeprefix("preview ")
        assert job == {
            "extends": ".preview",
            "variables": {"STACK": stack},
            "environment": {"name": stack, "action": "prepare"},
        }
    assert GITLAB_PREVIEW["image"] == f"python:{GITLAB['variables']['PYTHON_VERSION']}-bookworm"
    assert GITLAB["variables"]["PYTHON_VERSION"] == WORKFLOW["env"]["PYTHON_VERSION"]
    preview = " ".join(gitlab_shell("preview"))
    assert 'GPU_PLATFORM_STACK="$STACK"' in preview
    assert "pulumi preview" in preview and "--policy-pack policy" in preview


def test_gitlab_cloud_credentials_come_from_the_preview_jobs_oidc_token_only():
    # GitLab Docs, "OpenID Connect (OIDC) Authentication Using ID Tokens": `id_tokens` with the
    # audience AWS STS expects; the AWS SDKs read AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE.
    assert GITLAB_PREVIEW["id_tokens"] == {"AWS_ID_TOKEN": {"aud": "sts.amazonaws.com"}}
    assert [name for name, job in GITLAB_JOBS.items() if "id_tokens" in job] == []
    assert "AWS_WEB_IDENTITY_TOKEN_FILE" in " ".join(gitlab_shell("preview"))
    assert not re.search(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b", GITLAB_TEXT)
    assert not re.search(r"\bpul-[0-9a-f]{40}\b", GITLAB_TEXT)
    assert "AWS_SECRET_ACCESS_KEY" not in GITLAB_TEXT and "PULUMI_ACCESS_TOKEN:" not in GITLAB_TEXT


# ------------------------------------------------------------------------------ ../shared

FETCH_SHARED = ROOT / ".ci" / "fetch-shared"
# A folder of ../shared as code builds its path: `ROOT.parent / "shared" / "crds"` in Python,
# `../shared/crds` in a script; prose (comments, docstrings) names files too, but reads nothing.
PYTHON_PATH = re.compile(r"""\.parents?(?:\[\d+\])?\s*/\s*["']shared["']\s*/\s*["']([\w.-]+)["']""")
SCRIPT_PATH = re.compile(r"\.\./shared/([\w.-]+)")


def shared_folders_read() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    files = [p for p in ROOT.rglob("*.py") if not {".venv", ".venv-test", ".venv-image"} & set(
        p.relative_to(ROOT).parts)]  # fmt: skip
    for path in files:
        for folder in PYTHON_PATH.findall(path.read_text(encoding="utf-8")):
            found.setdefault(folder, set()).add(str(path.relative_to(ROOT)))
    for path in [*(ROOT / ".ci").iterdir(), ROOT / "Makefile"]:
        code = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")
        )
        for folder in SCRIPT_PATH.findall(code):
            found.setdefault(folder.removesuffix("/"), set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_shared_folder_the_code_reads_is_documented_and_fetched():
    found = shared_folders_read()
    # tests/helpers/crds.py, plan/render.py (and tests/helpers/helm_values.py, which reads each
    # chart's values.yaml from its archive), tests/plan/test_replacements.py.
    assert {"crds", "helm", "provider-facts"} <= set(found)
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| `([\w.-]+)/` \|", page, re.MULTILINE))
    (needed,) = re.findall(r"^NEEDED=\((.*)\)$", FETCH_SHARED.read_text(), re.MULTILINE)
    for folder, readers in found.items():
        assert folder in table, f"docs/ci.md does not name ../shared/{folder} ({readers})"
        assert folder in needed.split(), f".ci/fetch-shared does not check {folder} ({readers})"
    assert table == set(needed.split())


def git(cwd, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def fetch(project, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(project / ".ci" / "fetch-shared")],
        cwd=project, capture_output=True, text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("SHARED_DATA")} | env,
    )  # fmt: skip


@pytest.fixture
def layout(tmp_path):
    """A project beside no ../shared, and a repository of shared data tagged v1, its
    provider-facts/ added only after the tag."""
    project, data = tmp_path / "project", tmp_path / "data"
    (project / ".ci").mkdir(parents=True)
    (project / ".ci" / "fetch-shared").write_bytes(FETCH_SHARED.read_bytes())
    (project / ".ci" / "fetch-shared").chmod(0o755)
    for folder in ("crds", "helm"):
        (data / folder).mkdir(parents=True)
        (data / folder / "README.md").write_text(folder)
    git(data, "init", "-q", "-b", "main")
    git(data, "add", "-A")
    git(data, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "v1")
    git(data, "tag", "v1")
    (data / "provider-facts").mkdir()
    (data / "provider-facts" / "README.md").write_text("facts")
    git(data, "add", "-A")
    git(data, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "v2")
    return project, data


def test_fetch_shared_says_what_to_set_without_a_url(layout):
    project, _ = layout
    run = fetch(project)
    assert run.returncode == 2
    assert "../shared is missing and SHARED_DATA_URL is not set" in run.stderr


def test_fetch_shared_clones_the_pinned_ref_and_checks_every_folder(layout):
    project, data = layout
    run = fetch(project, SHARED_DATA_URL=f"file://{data}", SHARED_DATA_REF="v1")
    # v1 has no provider-facts/: the clone is the tag's, and the check names what is missing.
    assert run.returncode == 2, run.stderr
    assert "../shared/provider-facts is missing" in run.stderr
    (project.parent / "shared").rename(project.parent / "v1")
    run = fetch(project, SHARED_DATA_URL=f"file://{data}", SHARED_DATA_REF="main")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("../shared: crds helm provider-facts present (")
    assert (project.parent / "shared" / "provider-facts" / "README.md").read_text() == "facts"
