"""The docs build as a site with MkDocs' --strict (mkdocs.yml): a broken link or anchor, or a
page missing from the navigation, fails. The README stays the short way in and links into it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from model.stacks import ROOT

README_LIMIT_LINES = 400  # the issue: what the project is, its commands, the flow, the layout


def build(project: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(project / "mkdocs.yml"),
         "-d", str(site)],
        capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1", "PATH": ""},
    )  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    built = build(ROOT, site)
    assert built.returncode == 0, built.stderr[-4000:]
    return site


def copy_docs(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return tmp_path


def test_every_page_is_built(site):
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")} - {"index"}
    assert pages, "no topic pages"
    for page in pages:
        assert (site / page / "index.html").is_file(), page


@pytest.mark.parametrize(
    ("change", "warning"),
    [
        ("[a link](storage.md#no-such-section)", "does not contain an anchor '#no-such-section'"),
        ("[a link](no-such-page.md)", "'no-such-page.md', but the target is not found"),
    ],
)
def test_a_broken_link_fails_the_build(tmp_path, change, warning):
    project = copy_docs(tmp_path)
    page = project / "docs" / "fabric.md"
    page.write_text(page.read_text() + f"\n{change}\n")
    built = build(project, tmp_path / "site")
    assert built.returncode == 1 and warning in built.stderr, built.stderr[-2000:]


def test_a_page_left_out_of_the_navigation_fails_the_build(tmp_path):
    project = copy_docs(tmp_path)
    (project / "docs" / "orphan.md").write_text("# Orphan\n")
    built = build(project, tmp_path / "site")
    assert built.returncode == 1, built.stderr[-2000:]
    assert "orphan.md" in built.stderr and 'not included in the "nav"' in built.stderr


def test_the_readme_is_short_and_its_links_into_the_docs_resolve(site):
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < README_LIMIT_LINES
    links = re.findall(r"\]\(docs/([\w.-]+?)\.md(?:#([\w-]+))?\)", readme)
    # The documentation map links every topic page.
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")} - {"index"}
    assert {page for page, _ in links} >= pages
    for page, anchor in links:
        html = (site / page / "index.html").read_text()
        assert not anchor or f'id="{anchor}"' in html, f"README: docs/{page}.md#{anchor}"


def test_the_front_page_opens_with_the_real_flow_on_the_tested_pulumi_cli():
    """docs/index.md, the site's first page (mkdocs.yml nav): its first section is the flow, and
    the CLI it installs is the release of the pinned SDK (pulumi/pulumi releases both under one
    version); the install script takes `--version` (pulumi.com, "Download & Install Pulumi")."""
    (sdk,) = re.findall(r"^pulumi==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    page = (ROOT / "docs" / "index.md").read_text()
    assert re.findall(r"^## (.+)$", page, re.M)[0] == "The real flow"
    assert f"curl -fsSL https://get.pulumi.com | sh -s -- --version {sdk}\n" in page
    assert f"tested with is **{sdk}**" in page
    flow = re.findall(r"```sh\n(.*?)```", page, re.S)[1]
    steps = ["make plan", "pulumi login", "pulumi stack select", "pulumi config set",
             "pulumi preview", "make selftest-bootstrap STACK="]  # fmt: skip
    at = [flow.index(step) for step in steps]
    assert at == sorted(at), flow
