"""The program (infra, components, jobs, policy) and the image side (bootstrap's self-test, the
recipes that run in the training image) meet only in rendered Jobs and the settings passed to
them (DESIGN.md). So the plan's venv needs no torch and the image needs no Pulumi: each side's
tests import nothing of the other, checked by importing every test module in a fresh interpreter
and reading what it loaded."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from infra.plan.engine import ROOT

# Top-level packages of each side. Submitting a recipe's job is the program's (jobs/recipe.py);
# recipes.batch is the torch-free batch rule both sides share: the submit refuses a global batch
# the job's GPUs cannot reach, and the recipe checks it again once torchrun has started.
IMAGE_PACKAGES = {"torch", "selftest", "trainkit", "diffusers", "transformers"}
PROGRAM_PACKAGES = {
    "infra", "components", "jobs", "policy", "pulumi", "pulumi_aws", "pulumi_kubernetes",
}  # fmt: skip
SHARED_RECIPE_MODULE = "recipes.batch"


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
        # The package itself, and the batch rule with the names it defines.
        return module != "recipes" and not f"{module}.".startswith(f"{SHARED_RECIPE_MODULE}.")
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
    image, program = [], []
    for path in sorted((ROOT / "tests").glob("*.py")):
        names = imported_modules(ast.parse(path.read_text()))
        (image if any(map(is_image_side, names)) else program).append(f"tests.{path.stem}")
    return image, program


def loaded_by(modules: list[str]) -> set[str]:
    """Top-level packages loaded by importing `modules`, in a fresh interpreter."""
    probe = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": f"{ROOT}:{ROOT / 'bootstrap'}", "PATH": ""},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return set(json.loads(run.stdout))


def test_both_sides_have_tests():
    image, program = suites()
    # Guards the classification itself: each side's suites are where they are expected.
    assert {"tests.test_selftest_core", "tests.test_recipes_training"} <= set(image)
    assert {"tests.test_plan", "tests.test_jobs_recipe", "tests.test_jobs"} <= set(program)
    assert "tests.test_jobs_submit" in program


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
        for folder in ("infra", "components", "jobs", "policy")
        for path, names in source_imports(folder).items()
        for name in names
        if is_image_side(name)
    }
    assert not found
    # The guard reads the image side's packages from bootstrap/; finding none means it broke.
    assert "selftest" in bootstrap_packages()
