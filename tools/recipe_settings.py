"""`python -m tools.recipe_settings <recipe>`: the JSON a recipe's pod receives (RECIPE_SETTINGS)
for `gpu-platform:recipes` overrides read as JSON from standard input (`{}`: the defaults).

The image side (recipes/) imports nothing of the program, so the smoke and the recipes' tests
ask the config model through this command for their settings, as a submitted job gets them."""

from __future__ import annotations

import json
import sys

from pydantic import ValidationError

from model.config.recipes import RECIPES, RecipesSettings, recipe_settings


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in RECIPES:
        print(f"usage: python -m tools.recipe_settings {{{','.join(RECIPES)}}} < overrides.json")
        return 2
    try:
        settings = RecipesSettings.model_validate(json.loads(sys.stdin.read() or "{}"))
    except (json.JSONDecodeError, ValidationError) as error:
        print(f"error: gpu-platform:recipes overrides: {error}", file=sys.stderr)
        return 2
    print(json.dumps(recipe_settings(settings, argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
