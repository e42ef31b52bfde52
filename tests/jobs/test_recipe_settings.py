"""The recipes' job settings every shipped stack leaves at their defaults (a 300 s grace period,
weights under `weights/`, three checkpoints kept) reach the rendered job from config
(STYLE.md §14): a stack with other valid values renders them."""

from __future__ import annotations

import json

from jobs.recipe import plan_job
from tests.conftest import stack_config


def test_a_recipe_job_takes_the_stack_s_grace_period_weights_root_and_checkpoints_kept():
    cfg = stack_config("prod")
    recipes = cfg.recipes.model_copy(
        update={
            "grace_period_seconds": 600,
            "weights_root": "models",
            "esrgan": cfg.recipes.esrgan.model_copy(update={"keep_checkpoints": 5}),
        }
    )
    spec, _ = plan_job(
        cfg.model_copy(update={"recipes": recipes}), "esrgan", nodes=1, render_only=True
    )
    assert spec.termination_grace_period_seconds == 600
    settings = json.loads(spec.env["RECIPE_SETTINGS"])
    assert settings["weights"]["vgg19"]["path"].startswith("models/")
    assert settings["keep_checkpoints"] == 5
