"""How the platform's quarantine watcher (bootstrap/selftest/watch.py) finds a job's failed
preflight: the init container the job builder names so (components/scheduling/training_job.py,
preflight_container) and the label it puts on every pod that runs one."""

from __future__ import annotations

CONTAINER = "preflight"
POD_LABEL = ("gpu-platform/preflight", "true")
