"""tests/helpers/image_layout.py, the container's file system as a folder that the image tests
run rendered pods in: it must read the project's Dockerfiles as Docker does and lay volumes out
as the kubelet does, or those tests prove another layout than the cluster's."""

from __future__ import annotations

import os
import stat

from model.stacks import ROOT
from tests.helpers.image_layout import (
    ContainerRoot,
    ImageLayout,
    container_env,
    expand,
    image_layout,
)


def test_the_bootstrap_image_as_its_dockerfile_lays_it_out():
    layout = image_layout(ROOT / "bootstrap/Dockerfile", base=ImageLayout(env={"PATH": "/usr/bin"}))
    # bootstrap/Dockerfile: its COPY lines, ENV PYTHONPATH, USER and WORKDIR.
    assert {(c.source, c.destination) for c in layout.copies} >= {
        ("bootstrap/selftest", "/opt/bootstrap/selftest"),
        ("bootstrap/trainkit", "/opt/bootstrap/trainkit"),
        ("contract", "/opt/platform/contract"),
    }
    assert layout.env["PYTHONPATH"] == "/opt/bootstrap:/opt/platform"
    # `ENV PATH=/opt/amazon/efa/bin:${PATH}` on the base's PATH.
    assert layout.env["PATH"] == "/opt/amazon/efa/bin:/usr/bin"
    assert (layout.workdir, layout.user) == ("/tmp", "1000:1000")


def test_an_image_from_another_keeps_its_base_and_adds_its_own():
    base = image_layout(ROOT / "bootstrap/Dockerfile")
    layout = image_layout(ROOT / "recipes/Dockerfile", base=base)
    assert ("recipes", "/opt/platform/recipes") in {
        (c.source, c.destination) for c in layout.copies
    }
    assert ("bootstrap/trainkit", "/opt/bootstrap/trainkit") in {
        (c.source, c.destination) for c in layout.copies
    }
    assert layout.env["HF_HUB_OFFLINE"] == "1"
    assert layout.env["PYTHONPATH"] == "/opt/bootstrap:/opt/platform"


def test_volumes_lie_at_their_mount_paths_with_their_modes_over_the_image(tmp_path):
    box = ContainerRoot(tmp_path / "root")
    box.install(image_layout(ROOT / "bootstrap/Dockerfile"))
    assert box.path("/opt/platform/contract/env.py").is_file()
    configmaps = {"cm": {"data": {"a.py": "A", "b.py": "B"}}}
    volume = {"name": "v", "configMap": {"name": "cm", "items": [
        {"key": "a.py", "path": "pkg/a.py", "mode": 0o555}, {"key": "b.py", "path": "b.py"},
    ]}}  # fmt: skip
    mounted = box.mount(volume, "/opt/platform", configmaps)
    # kubernetes pkg/volume/util/atomic_writer.go: `..data` links to the payload's folder, each
    # top-level name to `..data/<name>`.
    assert os.readlink(mounted / "pkg") == "..data/pkg"
    assert os.readlink(mounted / "..data").startswith("..")
    # The mount hides what the image had there.
    assert not box.path("/opt/platform/contract/env.py").exists()
    assert box.path("/opt/platform/pkg/a.py").read_text() == "A"
    assert stat.S_IMODE(box.path("/opt/platform/pkg/a.py").stat().st_mode) == 0o555
    # Kubernetes API reference, ConfigMapVolumeSource `defaultMode`: "Defaults to 0644".
    assert stat.S_IMODE(box.path("/opt/platform/b.py").stat().st_mode) == 0o644
    claim = {"name": "data", "persistentVolumeClaim": {"claimName": "shared-data"}}
    box.mount(claim, "/mnt/shared-data")
    other = ContainerRoot(tmp_path / "other", box.claims)
    other.mount(claim, "/data")
    assert other.path("/data/x") == box.path("/mnt/shared-data/x")


def test_values_map_paths_only(tmp_path):
    box = ContainerRoot(tmp_path / "root")
    box.mount({"name": "t", "emptyDir": {}}, "/tmp")
    assert box.value("/tmp/a") == str(box.path("/tmp/a"))
    assert box.value("--out=/opt/x") == f"--out={box.root / 'opt/x'}"
    assert box.value("/opt/a:/tmp") == f"{box.root / 'opt/a'}:{box.path('/tmp')}"
    for unchanged in ("http://pushgateway.monitoring:9091", "train.py", "8", "--nnodes=2"):
        assert box.value(unchanged) == unchanged


def test_the_environment_as_the_kubelet_builds_it():
    # Kubernetes "Define Dependent Environment Variables": $(VAR) of a variable defined before;
    # $$ escapes; an undefined reference stays as written. envFrom first, env over it.
    container = {
        "envFrom": [{"configMapRef": {"name": "nccl"}}],
        "env": [
            {"name": "A", "value": "a"},
            {"name": "B", "value": "$(A)-$$(A)-$(C)"},
            {"name": "NCCL_X", "value": "mine"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    }
    env = container_env(container, {"POD": "p-0"}, {"nccl": {"data": {"NCCL_X": "1"}}})
    assert env == {"NCCL_X": "mine", "A": "a", "B": "a-$(A)-$(C)", "POD": "p-0"}
    assert expand("--node-rank=$(JOB_COMPLETION_INDEX)", {"JOB_COMPLETION_INDEX": "3"}) == (
        "--node-rank=3"
    )
