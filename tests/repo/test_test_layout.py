"""tests/ mirrors the source (issue 27): each component module has its own test module at the same
path under tests/ (`components/<plane>/<module>.py` -> `tests/components/<plane>/test_<module>.py`)
that imports it, model/ and plan/ modules too where one exists, and no test module imports
another: what two of them share lives in tests/helpers/ or in a fixture of tests/conftest.py.

Every component module has its mirror. A model/ or plan/ module without one is listed below with
where it is tested, so a new module without tests, or a mirror that appears for a listed one,
fails here until the list says so."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from model.stacks import ROOT

TESTS = ROOT / "tests"

# The config model is one package: its sections are tested through parse_config and the stack
# files, by concern (bounds, references, mandatory twins, ...), in tests/model/.
CONFIG_PACKAGE = "model/config/"
_PLAN_CLI = "the plan's command line and engine, run for every stack by tests/plan/test_plan.py"
# model/ and plan/ modules without a test module of their own name, and where they are tested.
MODEL_PLAN_EXCEPTIONS = {
    "model/catalog_offerings.py": "the catalog's regions, in tests/model/test_region_offerings.py",
    "model/catalog_prices.py": "the catalog's regional prices, in tests/model/test_catalog.py",
    "model/catalog_rows.py": "the catalog's rows, each checked in tests/model/test_catalog.py",
    "model/image_reference.py": "with plan/images.py in tests/model/test_image_references.py",
    "model/stacks.py": "reading stack files, in tests/model/test_stack_yaml.py and test_bad_stacks",
    "plan/cli.py": _PLAN_CLI,
    "plan/engine.py": _PLAN_CLI,
    "plan/model.py": _PLAN_CLI,
    "plan/outputs.py": _PLAN_CLI,
    "plan/cost_change.py": "the cost section of a diff, in tests/plan/test_diff.py",
    "plan/cost_text.py": "the printed cost section, in tests/model/test_cost.py",
    "plan/deploy_actions.py": "what a deploy runs, in tests/plan/test_deploy_policy.py",
    "plan/diff_report.py": "the diff's report, in tests/plan/test_diff.py",
    "plan/userdata_diff.py": "the user-data section of a diff, in tests/plan/test_diff.py",
    "plan/images.py": "with model/image_reference.py in tests/model/test_image_references.py",
    "plan/manifests.py": "the rendered manifests, in tests/plan/test_render.py",
    "plan/policy.py": "the deploy policy run, in tests/policy/test_plan_run.py",
}


def modules(package: str) -> list[str]:
    """Every module of a package and its sub-packages, as a path from the repository root."""
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / package).rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    )


def mirror(module: str) -> Path:
    path = Path(module)
    return TESTS / path.parent / f"test_{path.stem}.py"


def imported(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def dotted(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


@pytest.mark.parametrize("module", modules("components"))
def test_every_component_module_has_its_own_test_module_that_imports_it(module):
    test = mirror(module)
    assert test.is_file(), f"{module} has no {test.relative_to(ROOT)}"
    assert dotted(module) in imported(test), f"{test.relative_to(ROOT)} never imports {module}"


@pytest.mark.parametrize("module", modules("model") + modules("plan"))
def test_model_and_plan_modules_have_their_test_module_or_say_where_they_are_tested(module):
    if module.startswith(CONFIG_PACKAGE):
        assert (TESTS / "model" / "test_config.py").is_file()
        return
    if module in MODEL_PLAN_EXCEPTIONS:
        assert not mirror(module).exists(), f"{mirror(module)} exists: drop {module}'s exception"
        return
    assert mirror(module).is_file(), f"{module} has no {mirror(module).relative_to(ROOT)}"


def test_every_exception_names_a_module_that_still_exists():
    assert set(MODEL_PLAN_EXCEPTIONS) - {*modules("model"), *modules("plan")} == set()


def test_the_checks_see_the_modules_of_every_folder():
    assert "components/data/gpu_node_group.py" in modules("components")
    assert "components/registry_mirror.py" in modules("components")
    assert "model/config/nodes.py" in modules("model")
    assert mirror("plan/diff.py") == TESTS / "plan" / "test_diff.py"


def test_no_test_module_imports_another():
    """Shared test code is a helper, never a test module: a test module imported elsewhere
    runs its tests twice under pytest's import of the importer, and couples two files."""
    importers = {}
    for path in sorted(TESTS.rglob("*.py")):
        for name in imported(path):
            leaf = name.rsplit(".", 1)[-1]
            if name.startswith("tests.") and leaf.startswith("test_"):
                importers.setdefault(str(path.relative_to(ROOT)), []).append(name)
    assert importers == {}


def test_the_import_check_sees_an_import_of_a_test_module(tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text(
        "from tests.plan.test_plan import walk\ndef f():\n    import tests.jobs.test_recipe\n"
    )
    assert {"tests.plan.test_plan", "tests.jobs.test_recipe"} <= imported(path)


def test_every_test_server_looks_for_its_shutdown_at_the_shared_interval():
    """`socketserver`'s serve_forever looks for a shutdown every 0.5 s unless told, and
    shutdown() waits for it: a test server started without tests/helpers/loopback.py's
    SHUTDOWN_POLL_S held each test that used it half a second longer (7 s of test_charts.py)."""
    served, unpaced = [], []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            target = keywords.get("target", node.func)
            if not (isinstance(target, ast.Attribute) and target.attr == "serve_forever"):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            served.append(where)
            if "target" in keywords:  # threading.Thread(target=server.serve_forever, args=...)
                interval = keywords.get("args")
            else:
                interval = node.args[0] if node.args else keywords.get("poll_interval")
            if interval is None or "SHUTDOWN_POLL_S" not in ast.unparse(interval):
                unpaced.append(where)
    assert len(served) >= 2, served
    assert unpaced == []
