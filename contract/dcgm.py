"""DCGM's diagnostic as the self-test runs it (bootstrap/selftest/dcgm.py) and as the program
bounds it (model/config/node_join.py): the run levels, and how long `dcgmi diag` may take at each.

`dcgmi diag -r <level>` (docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/
dcgmi/dcgmi-diag.html, "Test selection"): 1 "Quick deployment checks, normally lasting seconds",
2 "Medium validation, normally lasting approximately two minutes", 3 "Long hardware diagnostics,
normally lasting approximately 15 minutes". Level 4 (extended) is for an administrator's
post-mortem, not for a check on every new node, and is not offered.

The tool's limit is twice the documented time, and never under the ten minutes every level had
before there was a table: a node's first diagnostic also waits for the engine to load its
plugins, and a limit hit is a SKIP that tests nothing."""

from __future__ import annotations

# The level the check sets run without an override: the periodic run the quick checks, the
# full run the medium validation (PCIe, GPU memory).
CHECK_SET_LEVELS = {"short": 1, "full": 2}
LEVELS = (1, 2, 3)
DIAG_TIMEOUT_S = {1: 600, 2: 600, 3: 2 * 15 * 60}
# nv-hostengine's port (the GPU Operator's nvidia-dcgm DaemonSet and Service, and the DCGM user
# guide's default).
HOSTENGINE_PORT = 5555
