"""`make selftest-bootstrap`: the self-test's bootstrap on an AWS stack as one printed sequence
(docs/selftest.md, "The image"). Stub `pulumi`, `aws` and `docker` executables first on PATH
record their argv, so the order of the real commands and the stop at the first failing one are
checked without a cloud or a Docker daemon."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys

from model.stacks import ROOT

DIGEST = "sha256:" + "a" * 64
PUSHED = "sha256:" + "b" * 64
# An ECR private repository URL (ECR user guide, "Private registry concepts":
# aws_account_id.dkr.ecr.region.amazonaws.com), in a region no shipped stack uses.
REPOSITORY = "210987654321.dkr.ecr.eu-north-1.amazonaws.com/gpu-platform-research-selftest"
STUB = """#!{python}
import json, os, sys
argv = [os.path.basename(sys.argv[0]), *sys.argv[1:]]
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps(argv) + "\\n")
if " ".join(argv).startswith(os.environ.get("STUB_FAIL") or "\\0"):
    sys.exit(3)
if argv[1:3] == ["stack", "output"]:
    print({repository!r})
elif argv[1:3] == ["ecr", "get-login-password"]:
    print("a-password")
elif argv[1:3] == ["image", "inspect"]:
    print({repository!r} + "@{pushed}")
"""
EXPECTED = [
    ["pulumi", "up", "--stack", "research"],
    ["pulumi", "stack", "output", "selftest_repository_url", "--stack", "research"],
    ["aws", "ecr", "get-login-password", "--region", "eu-north-1"],
    ["docker", "login", "--username", "AWS", "--password-stdin", REPOSITORY.split("/")[0]],
    ["docker", "build", "-f", "bootstrap/Dockerfile", "--build-arg", f"PYTORCH_DIGEST={DIGEST}",
     "--build-arg", "WITH_EFA=1", "-t", f"{REPOSITORY}:t1", "."],
    ["docker", "push", f"{REPOSITORY}:t1"],
    ["docker", "image", "inspect", "--format", "{{index .RepoDigests 0}}", f"{REPOSITORY}:t1"],
    ["pulumi", "config", "set", "--path", "gpu-platform:selftest.image", f"{REPOSITORY}@{PUSHED}",
     "--stack", "research"],
    ["pulumi", "up", "--stack", "research"],
]  # fmt: skip


def bootstrap(tmp_path, *args, fail=""):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("pulumi", "aws", "docker"):
        stub = bin_dir / name
        text = STUB.format(python=sys.executable, repository=REPOSITORY, pushed=PUSHED)
        stub.write_text(text)
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "argv.jsonl"
    log.write_text("")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.update(STUB_LOG=str(log), STUB_FAIL=fail)
    run = subprocess.run(
        [sys.executable, "-m", "tools.selftest_bootstrap", "research", "--pytorch-digest", DIGEST,
         "--tag", "t1", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return run, [json.loads(line) for line in log.read_text().splitlines()]


def test_the_sequence_runs_each_step_in_order_and_sets_the_pushed_digest(tmp_path):
    run, calls = bootstrap(tmp_path)
    assert run.returncode == 0, run.stderr
    assert calls == EXPECTED
    # Each step is printed, numbered, with the command it runs.
    lines = run.stdout.splitlines()
    for i, argv in enumerate(EXPECTED, start=1):
        (title,) = [n for n, line in enumerate(lines) if line.startswith(f"[{i}/9] ")]
        assert lines[title + 1] == "    $ " + shlex.join(argv)
    assert run.stdout.index("[8/9] set selftest.image") < run.stdout.index("[9/9] pulumi up")
    assert f"done: gpu-platform:selftest.image is {REPOSITORY}@{PUSHED}" in run.stdout


def test_a_dry_run_prints_every_step_and_runs_nothing(tmp_path):
    run, calls = bootstrap(tmp_path, "--dry-run")
    assert run.returncode == 0, run.stderr
    assert calls == []
    steps = [line for line in run.stdout.splitlines() if line.startswith("    $ ")]
    assert [s.split()[1:3] for s in steps] == [
        ["pulumi", "up"], ["pulumi", "stack"], ["aws", "ecr"], ["docker", "login"],
        ["docker", "build"], ["docker", "push"], ["docker", "image"], ["pulumi", "config"],
        ["pulumi", "up"],
    ]  # fmt: skip
    assert "dry run: nothing ran" in run.stdout


def test_the_first_failing_step_stops_the_sequence_with_its_status(tmp_path):
    # A push refused (an existing immutable tag, no login): the digest is never read, the
    # config keeps its old image and the second `up` does not run.
    run, calls = bootstrap(tmp_path, fail="docker push")
    assert run.returncode == 3
    assert calls == EXPECTED[:6]
    assert 'step "push the image to the stack\'s repository" failed (exit 3)' in run.stderr
    # The first `up` failing stops everything after it.
    run, calls = bootstrap(tmp_path, fail="pulumi up")
    assert (run.returncode, calls) == (3, EXPECTED[:1])


def test_a_bad_base_digest_is_refused_before_any_step(tmp_path):
    bin_dir = tmp_path / "bin"
    run = subprocess.run(
        [sys.executable, "-m", "tools.selftest_bootstrap", "research", "--pytorch-digest", "25.12"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    assert run.returncode == 2
    assert "--pytorch-digest '25.12': give sha256:<64 hex digits>" in run.stderr
    assert run.stdout == ""
