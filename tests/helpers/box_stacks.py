"""One cluster in a box per stack and test module: out/<stack>/ as the plan writes it (with the
self-test on: tests/helpers/box_cluster.write_out), read back, the Service the pods push to
stood in for by a Pushgateway of this machine that records what it is sent; the jobs
`python -m jobs` renders for it, and a team's image stood in for."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from components.vocabulary import pushgateway_url
from jobs.__main__ import main as jobs_main
from model.config import PlatformConfig
from tests.conftest import stack_config
from tests.helpers.box_cluster import Cluster, write_out
from tests.helpers.box_image import BASE_PATH, Image, read_image
from tests.helpers.pushgateway import Gateway


@contextlib.contextmanager
def box(stack: str, folder: Path) -> Iterator[tuple[Cluster, Gateway]]:
    """The stack's cluster in a box, from its plan with the self-test on."""
    with box_of(stack_config(stack), write_out(stack, folder / "out" / stack), folder) as found:
        yield found


@contextlib.contextmanager
def box_of(cfg: PlatformConfig, out: Path, folder: Path) -> Iterator[tuple[Cluster, Gateway]]:
    """A cluster in a box from what `python -m plan` wrote to `out`."""
    cluster = Cluster.of(cfg, out, folder / "box")
    with Gateway() as gateway:
        cluster.serve(pushgateway_url(cfg.namespaces.monitoring), gateway.port)
        yield cluster, gateway


def selftest_jobset(cluster: Cluster) -> dict[str, Any]:
    """The post-deploy self-test's JobSet, as written to out/<stack>/manifests/."""
    (jobset,) = [
        o
        for o in cluster.manifests
        if o["kind"] == "JobSet" and o["metadata"]["namespace"] == cluster.cfg.namespaces.selftest
    ]
    return jobset


def submitted(
    argv: list[str], out: Path, main: Callable[[list[str]], int] = jobs_main
) -> tuple[int, dict[str, Any] | None]:
    """`python -m jobs <argv> --out <out>` (or another project's `main`): its exit code and the
    JobSet it wrote."""
    cut = argv.index("--") if "--" in argv else len(argv)
    code = main([*argv[:cut], "--out", str(out), *argv[cut:]])
    written = list(out.rglob("job.yaml"))
    if code or not written:
        return code, None
    (jobset,) = yaml.safe_load_all(written[0].read_text())
    return code, jobset


def team_image(cluster: Cluster, jobset: dict[str, Any], scripts: Path, on_bootstrap: bool) -> None:
    """The image the JobSet names, stood in for: the team's files in its working folder
    /workspace, on the self-test's image (trainkit and contract on its PYTHONPATH, as a team
    image built FROM it has them) or on a bare Python."""
    (container,) = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ]
    base = read_image() if on_bootstrap else Image({"PATH": BASE_PATH}, "/", "1000", ())
    image = Image(base.env, "/workspace", base.user, (*base.copies, (str(scripts), "/workspace")))
    cluster.add_image(container["image"], image, f"team-{scripts.parent.name}-{scripts.name}")


# A team's script, stood in for: it records the arguments it got in one write(2) of one line,
# so the ranks sharing the pod's log (the box runs Python unbuffered, where print() writes the
# text and its newline apart) never interleave within a record.
ARGS_RECORDER = """import json, os, sys
record = {"script": os.path.basename(sys.argv[0]), "args": sys.argv[1:]}
os.write(1, ("STAND-IN " + json.dumps(record) + "\\n").encode())
"""


def recorded_args(pods) -> list[dict[str, Any]]:
    """What each rank of the pods' stand-in scripts recorded (ARGS_RECORDER)."""
    return [
        json.loads(line.split("STAND-IN ", 1)[1])
        for pod in pods
        for line in pod.output().splitlines()
        if line.startswith("STAND-IN ")
    ]
