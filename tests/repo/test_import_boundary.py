"""The program (model, components, infra, plan, tools, jobs, policy) and the image side
(bootstrap's self-test, the recipes that run in the training image) meet only in rendered Jobs
and the settings passed to them, and in contract/ (DESIGN.md). So the plan's venv needs no torch
and the image needs no Pulumi: each side's tests import nothing of the other, checked by
importing every test module in a fresh interpreter and reading what it loaded."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from model.stacks import ROOT
from tests.helpers.hang import HANG_S

# Top-level packages of each side. Submitting a recipe's job is the program's (jobs/recipe.py);
# contract/ is what both sides read: the recipes' batch rule (the submit refuses a global batch
# the job's GPUs cannot reach, and the recipe checks it again once torchrun has started), the
# environment variables the program sets and the image reads, the mount paths, the self-test's
# bandwidth floors.
IMAGE_PACKAGES = {"torch", "selftest", "trainkit", "gpu_check", "diffusers", "transformers"}
PROGRAM_PACKAGES = {
    "model", "components", "infra", "plan", "tools", "jobs", "policy",
    "pulumi", "pulumi_aws", "pulumi_kubernetes",
}  # fmt: skip
SHARED_PACKAGE = "contract"


def imported_modules(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def is_image_side(module: str) -> bool:
    top = module.split(".")[0]
    if top == "recipes":
        # The package itself only names the recipes; its modules run in the image.
        return module != "recipes"
    return top in IMAGE_PACKAGES or top in bootstrap_packages()


def bootstrap_packages() -> set[str]:
    """The image's own packages (selftest, trainkit, ...): every package in bootstrap/."""
    return {p.parent.name for p in (ROOT / "bootstrap").glob("*/__init__.py")}


def source_imports(folder: str) -> dict[str, set[str]]:
    """What each module under `folder` imports, by file."""
    return {
        str(path.relative_to(ROOT)): imported_modules(ast.parse(path.read_text()))
        for path in sorted((ROOT / folder).rglob("*.py"))
    }


def suites() -> tuple[list[str], list[str]]:
    """The image side's test modules (tests/image/) and the program's (every other one)."""
    image, program = [], []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        (image if path.is_relative_to(ROOT / "tests" / "image") else program).append(module)
    return image, program


def test_each_sides_tests_sit_in_its_folder():
    """A test module that imports the image side lives in tests/image/, and only there."""
    image, program = suites()
    for module in image + program:
        path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        names = imported_modules(ast.parse(path.read_text()))
        assert any(map(is_image_side, names)) == (module in image), module


def loaded_by(modules: list[str]) -> set[str]:
    """Top-level packages loaded by importing `modules`, in a fresh interpreter."""
    probe = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
        env={"PYTHONPATH": f"{ROOT}:{ROOT / 'bootstrap'}", "PATH": ""},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return set(json.loads(run.stdout))


def test_both_sides_have_tests():
    image, program = suites()
    # Guards the classification itself: each side's suites are where they are expected.
    assert {"tests.image.selftest.test_core", "tests.image.recipes.test_training"} <= set(image)
    assert {
        "tests.plan.test_plan",
        "tests.jobs.test_recipe",
        "tests.components.scheduling.test_training_job",
    } <= set(program)
    assert "tests.jobs.test_team" in program


def test_the_programs_tests_load_no_torch():
    _, program = suites()
    assert not (loaded_by(program) & IMAGE_PACKAGES)


def test_the_image_sides_tests_load_nothing_of_the_program():
    image, _ = suites()
    assert not (loaded_by(image) & PROGRAM_PACKAGES)


def test_the_image_side_imports_nothing_of_the_program():
    """recipes/ and bootstrap/ hold only what runs in the image: the jobs that run them are
    submitted from the program side (jobs/)."""
    found = {
        (path, name)
        for folder in ("recipes", "bootstrap")
        for path, names in source_imports(folder).items()
        for name in names
        if name.split(".")[0] in PROGRAM_PACKAGES
    }
    assert not found


def test_the_program_imports_nothing_of_the_image_but_the_shared_batch_rule():
    found = {
        (path, name)
        for folder in ("model", "components", "infra", "plan", "tools", "jobs", "policy")
        for path, names in source_imports(folder).items()
        for name in names
        if is_image_side(name)
    }
    assert not found
    # The guard reads the image side's packages from bootstrap/; finding none means it broke.
    assert "selftest" in bootstrap_packages()


def foreign_to_the_contract(name: str) -> bool:
    top = name.split(".")[0]
    return top not in (SHARED_PACKAGE, "__future__") and top not in sys.stdlib_module_names


# The launcher (contract/launch.py) runs torchrun's agent: it imports torch inside its
# functions, never at import time, so it loads in any image that has torch (any team's image).
IMPORTS_TORCH_INSIDE = {"contract/launch.py"}


def test_the_contract_imports_only_the_standard_library():
    """The image has no pydantic guarantee (requirements-selftest.txt) and no program: contract/
    imports its own modules and the standard library (sys.stdlib_module_names), nothing else;
    the launcher may import torch, inside its functions only."""
    found = {
        (path, name)
        for path, names in source_imports(SHARED_PACKAGE).items()
        for name in names
        if foreign_to_the_contract(name)
        and not (path in IMPORTS_TORCH_INSIDE and name.split(".")[0] == "torch")
    }
    assert not found
    for path in IMPORTS_TORCH_INSIDE:
        at_import = {
            name
            for node in ast.parse((ROOT / path).read_text()).body
            if isinstance(node, ast.Import | ast.ImportFrom)
            for name in imported_modules(ast.Module(body=[node], type_ignores=[]))
        }
        assert not any(map(foreign_to_the_contract, at_import)), path
    assert [foreign_to_the_contract(n) for n in ("pydantic", "model.config", "torch")] == [True] * 3
    assert not any(map(foreign_to_the_contract, ("json", "contract.env", "__future__")))


def test_both_sides_read_the_contract():
    """The program (components/, model/, jobs/) and the image (bootstrap/, recipes/) both import
    contract/: each of its modules has a reader on each side, or it is shared by nobody."""

    def readers(folders: tuple[str, ...]) -> set[str]:
        return {
            name
            for folder in folders
            for names in source_imports(folder).values()
            for name in names
            if name.split(".")[0] == SHARED_PACKAGE and name.count(".") == 1
        }

    modules = {f"{SHARED_PACKAGE}.{p.stem}" for p in (ROOT / SHARED_PACKAGE).glob("[!_]*.py")}
    assert {"contract.batch", "contract.env", "contract.floors", "contract.mounts"} <= modules
    assert modules <= readers(("components", "model", "jobs"))
    assert modules <= readers(("bootstrap", "recipes"))
