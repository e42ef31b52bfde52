"""trainkit's wheel as bootstrap/pyproject.toml declares it, without building it (the build and
the installed wheel are tests/cluster/test_trainkit_wheel.py's): versioned with the platform, each
package from the one folder the bootstrap image copies too, torch left to the image."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from model.stacks import ROOT
from tests.helpers.image_layout import image_layout

WHEEL_PROJECT = ROOT / "bootstrap" / "pyproject.toml"


def project() -> dict:
    return tomllib.loads(WHEEL_PROJECT.read_text())


def test_the_wheels_version_is_the_one_the_platform_declares():
    """One source of truth: the repository's pyproject.toml `[project] version`; hatchling's
    regex version source (hatchling 1.33.0 hatchling/version/source/regex.py: the pattern's
    `version` group, searched with re.MULTILINE in `path`, relative to the project) reads it."""
    doc = project()
    assert "version" not in doc["project"] and "version" in doc["project"]["dynamic"]
    source = doc["tool"]["hatch"]["version"]
    assert (WHEEL_PROJECT.parent / source["path"]).resolve() == ROOT / "pyproject.toml"
    platform = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    found = re.findall(source["pattern"], (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert found == [platform]


def test_each_package_of_the_wheel_comes_from_the_folder_the_bootstrap_image_copies():
    """No second copy of trainkit or contract: the wheel and the image take each from one folder."""
    wheel = project()["tool"]["hatch"]["build"]["targets"]["wheel"]
    packed = {Path(p).name: (WHEEL_PROJECT.parent / p).resolve() for p in wheel["packages"]}
    packed |= {
        target: (WHEEL_PROJECT.parent / source).resolve()
        for source, target in wheel["force-include"].items()
    }
    assert packed == {"trainkit": ROOT / "bootstrap/trainkit", "contract": ROOT / "contract"}
    copied = {
        Path(c.destination).name: (c.context / c.source).resolve()
        for c in image_layout(ROOT / "bootstrap/Dockerfile").copies
    }
    assert {name: copied[name] for name in packed} == packed


def test_the_wheel_leaves_torch_to_the_image():
    """A team image brings its own torch build (docs/trainkit.md): a requirement on torch would
    let pip replace it. numpy is required (../shared/FACTS.md: DCP needs it), Pillow only for
    trainkit.shards."""
    doc = project()["project"]
    assert doc["dependencies"] == ["numpy"]
    assert doc["optional-dependencies"] == {"shards": ["pillow"]}
