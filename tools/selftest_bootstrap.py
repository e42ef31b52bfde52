"""The self-test's bootstrap on an AWS stack, as one sequence: `pulumi up` (the ECR repository
exists, the self-test is off without an image), build bootstrap/Dockerfile and push it to that
repository, read the pushed digest, set it as `selftest.image`, `pulumi up` again (the self-test
runs). Each step is printed before it runs; the first that fails stops the sequence with its
exit status. `--dry-run` prints the steps and runs nothing.

    python -m tools.selftest_bootstrap dev --pytorch-digest sha256:<digest>
    make selftest-bootstrap STACK=dev PYTORCH_DIGEST=sha256:<digest>   # the same

Every command is the vendor's documented one: ECR's registry login (`aws ecr get-login-password
| docker login --username AWS --password-stdin <registry>`, ECR user guide, "Private registry
authentication"), `docker image inspect --format '{{index .RepoDigests 0}}'` for the digest the
registry gave the pushed image (Docker CLI reference, "docker image inspect"), and Pulumi's
`stack output` and `config set --path`."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = "selftest_repository_url"
IMAGE_KEY = "gpu-platform:selftest.image"
# What `docker image inspect` gives for an image pushed to `repository`: repository@sha256:<hex>.
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# The ECR registry host, the region in its name (ECR user guide, "Private registry concepts").
REGISTRY = re.compile(r"^(\d{12}\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?)/")


class StepFailed(Exception):
    def __init__(self, step: str, status: int, detail: str = ""):
        super().__init__(f"step {step!r} failed (exit {status}){': ' + detail if detail else ''}")
        self.status = status or 1


@dataclass
class Sequence:
    stack: str
    pytorch_digest: str
    tag: str
    with_efa: bool
    yes: bool
    dry_run: bool
    total: int = 9
    done: int = 0

    def _step(self, title: str, argv: list[str], *, stdin: str | None = None, gives: str = ""):
        self.done += 1
        print(f"[{self.done}/{self.total}] {title}\n    $ {shlex.join(argv)}", flush=True)
        if self.dry_run:
            return f"<{gives}>"
        run = subprocess.run(
            argv, cwd=ROOT, input=stdin, text=True, stdout=subprocess.PIPE if gives else None
        )
        if run.returncode != 0:
            raise StepFailed(title, run.returncode)
        return (run.stdout or "").strip()

    def up(self, title: str) -> None:
        self._step(title, ["pulumi", "up", "--stack", self.stack, *(["--yes"] * self.yes)])

    def run(self) -> str:
        self.up("pulumi up: declares the self-test's ECR repository")
        repository = self._step(
            "the repository's URL",
            ["pulumi", "stack", "output", OUTPUT, "--stack", self.stack],
            gives=OUTPUT,
        )
        match = REGISTRY.match(repository + "/")
        if not self.dry_run and not match:
            raise StepFailed("the repository's URL", 1, f"{repository!r} is not an ECR repository")
        registry, region = match.groups() if match else ("<registry>", "<region>")
        password = self._step(
            "ECR login password",
            ["aws", "ecr", "get-login-password", "--region", region],
            gives="password",
        )
        self._step(
            "docker login to the registry",
            ["docker", "login", "--username", "AWS", "--password-stdin", registry],
            stdin=password,
        )
        image = f"{repository}:{self.tag}"
        self._step(
            "build bootstrap/Dockerfile",
            ["docker", "build", "-f", "bootstrap/Dockerfile",
             "--build-arg", f"PYTORCH_DIGEST={self.pytorch_digest}",
             "--build-arg", f"WITH_EFA={int(self.with_efa)}", "-t", image, "."],
        )  # fmt: skip
        self._step("push the image to the stack's repository", ["docker", "push", image])
        pinned = self._step(
            "the pushed digest",
            ["docker", "image", "inspect", "--format", "{{index .RepoDigests 0}}", image],
            gives="digest",
        )
        if not self.dry_run and not (pinned.startswith(repository + "@") and DIGEST.search(pinned)):
            raise StepFailed("the pushed digest", 1, f"{pinned!r} is not {repository}@sha256:…")
        self._step(
            "set selftest.image",
            ["pulumi", "config", "set", "--path", IMAGE_KEY, pinned, "--stack", self.stack],
        )
        self.up("pulumi up: runs the self-test on the pinned image")
        return pinned


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.selftest_bootstrap", description=__doc__)
    parser.add_argument("stack")
    parser.add_argument(
        "--pytorch-digest",
        required=True,
        help="the NGC PyTorch base's digest (bootstrap/Dockerfile's PYTORCH_DIGEST): "
        "docker buildx imagetools inspect nvcr.io/nvidia/pytorch:25.12-py3",
    )
    parser.add_argument("--tag", help="the pushed tag (ECR tags are immutable); default: git HEAD")
    parser.add_argument("--no-efa", action="store_true", help="build with WITH_EFA=0")
    parser.add_argument("--yes", action="store_true", help="pass --yes to both `pulumi up`s")
    parser.add_argument("--dry-run", action="store_true", help="print the steps, run nothing")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", args.pytorch_digest):
        parser.error(f"--pytorch-digest {args.pytorch_digest!r}: give sha256:<64 hex digits>")
    tag = (
        args.tag
        or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    )
    if not tag:
        parser.error("no --tag given and no git HEAD to tag the image with")
    sequence = Sequence(
        args.stack, args.pytorch_digest, tag, not args.no_efa, args.yes, args.dry_run
    )
    try:
        pinned = sequence.run()
    except StepFailed as failed:
        print(f"error: {failed}; the steps after it did not run", file=sys.stderr)
        return failed.status
    print(f"done: {IMAGE_KEY} is {pinned}" if not args.dry_run else "dry run: nothing ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
