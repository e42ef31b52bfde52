"""A project whose stack `st` is a shipped one ready for the recipes (image and weights set),
and `python -m jobs recipe` run on it, as the recipes' and the GPU families' tests submit."""

from __future__ import annotations

from pathlib import Path

from jobs.recipe import main
from model.config.loading import read_yaml
from tests.conftest import make_project

IMAGE = "registry.example.com/ml/recipes@sha256:" + "b" * 64
DIGEST = "c" * 64


def stack_with(tmp_path: Path, base: str = "staging", recipes=None, groups=None) -> Path:
    """A project whose stack `st` is a shipped one with the recipes image and weights set."""
    doc = read_yaml(Path(__file__).parents[2] / "stacks" / f"Pulumi.{base}.yaml", base)
    config = dict(doc["config"])
    staged_weights = {
        name: {"path": path, "sha256": {"model.bin": DIGEST}}
        for name, path in (
            ("stable-diffusion", "stable-diffusion-v1-5"),
            ("clip", "clip-vit-base-patch32"),
            ("vgg19", "vgg19"),
        )
    }
    config["gpu-platform:recipes"] = {"image": IMAGE, "weights": staged_weights, **(recipes or {})}
    if groups is not None:
        config["gpu-platform:gpu_node_groups"] = groups
    return make_project(tmp_path / "project", {"st": config})


def submit(root: Path, *argv: str) -> int:
    return main([*argv, "--stack", "st", "--out", str(root / "out")], root=root)


def refused(root: Path, capsys, *argv: str) -> str:
    assert submit(root, *argv) == 2
    assert not (root / "out").exists(), "a refused job must not be written"
    return capsys.readouterr().err
