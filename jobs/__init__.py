"""Submitting distributed training jobs to a stack's GPU pools (program side): a team's own image
and command (`python -m jobs submit`, jobs/team.py) and the training recipes (`python -m jobs
recipe`, jobs/recipe.py), both through the job builder components/scheduling/training_job.py
(docs/training.md)."""
