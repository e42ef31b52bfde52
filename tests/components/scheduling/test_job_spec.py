"""What a job is before it is rendered (components/scheduling/job_spec.py): a pod takes the
whole node's GPUs unless the team asks for fewer."""

from __future__ import annotations

import dataclasses

from components.scheduling.job_spec import TrainingJobSpec, spec_for_pool
from tests.conftest import stack_config


def test_a_pod_takes_the_nodes_gpus_unless_the_job_asks_for_fewer():
    cfg = stack_config("staging")
    pool = cfg.gpu_pools[0]
    spec = spec_for_pool(cfg, pool.name, name="ft", image="img", command=["train.py"])
    assert isinstance(spec, TrainingJobSpec)
    # staging's first pool is p4d.24xlarge: 8 A100s a node (model/catalog_rows.py).
    assert (pool.gpus_per_node, spec.gpus) == (8, 8)
    assert dataclasses.replace(spec, gpus_per_node=2).gpus == 2
