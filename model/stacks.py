"""Stack files, read as the Pulumi CLI reads them: the project file (`Pulumi.yaml`), its
config declarations, and a stack's file overlaid on them, each value encoded as the CLI hands it
to the program. The one reader of stack files: the program's offline plan, `jobs`, the policy
pack's offline run and the tests all start here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.config import ConfigError, PlatformConfig, config_from_pulumi, stack_file
from model.config.loading import read_stack_file, read_yaml
from model.config.yaml_scalars import program_text

ROOT = Path(__file__).resolve().parents[1]
SECRET = "(secret)"
# The keys of a project-level config entry that declares a key rather than setting it.
_DECLARATION_KEYS = {"type", "description", "default", "value", "secret", "items"}


@dataclass(frozen=True)
class Project:
    root: Path
    name: str
    main: str
    stack_config_dir: str
    config: dict[str, Any]

    def stack_file(self, stack: str) -> Path:
        return self.root / self.stack_config_dir / f"Pulumi.{stack}.yaml"


def read_project(root: Path) -> Project:
    doc = read_yaml(root / "Pulumi.yaml", "Pulumi.yaml")
    if not isinstance(doc, dict) or "name" not in doc:
        raise ConfigError("Pulumi.yaml", ["not a Pulumi project file: it needs a name: key"])
    return Project(
        root,
        doc["name"],
        doc.get("main", "."),
        doc.get("stackConfigDir", "."),
        doc.get("config") or {},
    )


def _encode(value: Any) -> tuple[str, bool]:
    """A config value as the CLI hands it to the program (a string, objects as JSON), and
    whether it holds a secret. Encrypted values cannot be read offline: they show as (secret)."""
    found = False

    def strip(v: Any) -> Any:
        nonlocal found
        if isinstance(v, dict) and set(v) == {"secure"}:
            found = True
            return SECRET
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return program_text(strip(value)), found


def read_stack_config(project: Project, stack: str) -> tuple[dict[str, str], list[str]]:
    """Project config (values and declared defaults), overlaid by the stack file."""
    merged: dict[str, Any] = {}
    for key, entry in project.config.items():
        full = key if ":" in key else f"{project.name}:{key}"
        if isinstance(entry, dict) and entry and set(entry) <= _DECLARATION_KEYS:
            if "value" in entry or "default" in entry:
                merged[full] = entry.get("value", entry.get("default"))
        else:
            merged[full] = entry
    stack_path = project.stack_file(stack)
    source = str(stack_path.relative_to(project.root))
    if not stack_path.is_file():
        pattern = project.stack_file("*")
        found = sorted(p.name.split(".")[1] for p in pattern.parent.glob(pattern.name))
        raise ConfigError(
            source,
            [
                f"no such stack file; the stacks that exist: {', '.join(found) or 'none'} "
                f"(start one with `pulumi stack init {stack}`, or create {source})"
            ],
        )
    merged.update(read_stack_file(stack_path, source, project.name))
    config, secrets = {}, []
    for key, value in merged.items():
        config[key], secret = _encode(value)
        if secret:
            secrets.append(key)
    return config, sorted(secrets)


def stack_config(stack: str, root: Path = ROOT) -> PlatformConfig:
    """A stack's validated config, read from its files as `pulumi up` reads them."""
    values, _ = read_stack_config(read_project(root), stack)
    return config_from_pulumi(values, stack_file(stack))
