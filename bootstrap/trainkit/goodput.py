"""The goodput ledger: how much of a job's GPU time was useful, over every attempt of the job.

The ledger lives in the job's checkpoint folder (`goodput.json`, which outlives the pods), and
only rank 0 writes it. Each attempt (a start of the group: the first, each JobSet restart, a
resubmission) appends a record: its world size, when its processes started, the step it resumed
from, its cumulative step time at each checkpoint it saved and at its last step, when its first
and last steps finished, and how it ended. How an attempt ended is recorded where the attempt
could still say so: `completed`, `preempted` (a SIGTERM stop at a step boundary), `hung` (a
rank's watchdog dump in `hangs/attempt-<N>/`, which also says when it ended); an attempt that
never said is `rank_failed` (contract/exits.RANK_FAILED: a crash, a killed rank, a lost node).

From the records (`figures`), in GPU-seconds (world size × seconds):
- allocated: each attempt's wall time, from its processes' start to its end (its last recorded
  step when it died without saying);
- productive: the time of the steps that survived into a checkpoint: for each attempt, its step
  time up to the checkpoint the next attempt resumed from (the last attempt: its newest
  complete checkpoint);
- lost, by cause: each restarted attempt's step time after that checkpoint;
- restarts by cause, and restart seconds: from an attempt's last step to the next one's first;
- what a checkpoint costs: the seconds rank 0 waited on the newest save, the step time between
  the newest two saves of an attempt (the interval the job uses), and the nodes of the newest
  attempt; the Young–Daly rule reads them beside its pool's failure rate
  (components/observability/alerts.py, checkpoint_rules). None until there is one.

Rank 0 pushes the figures to the Pushgateway (TRAINKIT_PUSHGATEWAY_URL) as group
`training-goodput` with the job's identity (contract/training_metrics.py)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from contract.env import (
    POD_NAMESPACE,
    TRAINING_JOB_NAME,
    TRAINING_JOB_POOL,
    TRAINING_JOB_QUEUE,
    TRAINING_JOB_TEAM,
    TRAINKIT_PUSHGATEWAY_URL,
)
from contract.exits import HUNG, RANK_FAILED, RESTART_CAUSES
from contract.training_metrics import (
    ALLOCATED_GPU_SECONDS,
    CHECKPOINT_INTERVAL_SECONDS,
    CHECKPOINT_SECONDS,
    GOODPUT_PUSH_JOB,
    IDENTITY_LABELS,
    JOB_NODES,
    LAST_CHECKPOINT_STEP,
    LOST_GPU_SECONDS,
    PRODUCTIVE_GPU_SECONDS,
    RESTART_SECONDS,
    RESTARTS,
)
from trainkit.pushgateway import group_path, labels, put

LEDGER = "goodput.json"
COMPLETED = "completed"
CAUSES = (*RESTART_CAUSES.values(), RANK_FAILED)
HELP = {
    ALLOCATED_GPU_SECONDS: "GPU-seconds the job held, over every attempt.",
    PRODUCTIVE_GPU_SECONDS: "GPU-seconds of steps that survived into a checkpoint.",
    LOST_GPU_SECONDS: "GPU-seconds of steps lost to restarts (after the last checkpoint).",
    RESTARTS: "Restarts of the job's group, by cause.",
    RESTART_SECONDS: "Seconds from an attempt's last step to the next attempt's first, summed.",
    LAST_CHECKPOINT_STEP: "The step of the job's newest complete checkpoint.",
    CHECKPOINT_SECONDS: "Seconds rank 0 waited on the job's newest checkpoint save.",
    CHECKPOINT_INTERVAL_SECONDS: "Step seconds between the job's newest two checkpoint saves.",
    JOB_NODES: "Nodes of the job's newest attempt.",
}


def identity(default_name: str, environ=os.environ) -> dict[str, str]:
    """The job's identity labels (the job builder sets them); unset ones are empty."""
    values = {
        "namespace": environ.get(POD_NAMESPACE, ""),
        "job_name": environ.get(TRAINING_JOB_NAME) or default_name,
        "team": environ.get(TRAINING_JOB_TEAM, ""), "queue": environ.get(TRAINING_JOB_QUEUE, ""),
        "pool": environ.get(TRAINING_JOB_POOL, ""),
    }  # fmt: skip
    return {name: values[name] for name in IDENTITY_LABELS}


def process_started_at() -> float:
    """This process's start, Unix time (Linux: /proc/self/stat field 22, clock ticks after
    boot, and /proc/stat's btime); now where /proc is not there."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration, IndexError):
        return time.time()


def attempt_record(
    index: int, restart_attempt: int, world_size: int, started_at: float, resumed_from: int,
    nodes: int,
) -> dict:  # fmt: skip
    """A new attempt's record, before its first step."""
    return {
        "index": index, "restart_attempt": restart_attempt, "world_size": world_size,
        "nodes": nodes, "save_seconds": None,
        "started_at": started_at, "resumed_from": resumed_from,
        "first_step_at": None, "last_step_at": None, "last_step": resumed_from,
        "step_seconds": 0.0, "saves": {str(resumed_from): 0.0},
        "completed_step": resumed_from, "end": None, "ended_at": None,
    }  # fmt: skip


def _end_of(attempt: dict) -> float:
    return attempt["ended_at"] or attempt["last_step_at"] or attempt["started_at"]


def figures(attempts: list[dict]) -> dict:
    """The job's goodput from its attempts' records (module docstring)."""
    allocated = productive = restart_s = 0.0
    lost = dict.fromkeys(CAUSES, 0.0)
    restarts = dict.fromkeys(CAUSES, 0)
    for index, attempt in enumerate(attempts):
        following = attempts[index + 1] if index + 1 < len(attempts) else None
        world = attempt["world_size"]
        allocated += world * (_end_of(attempt) - attempt["started_at"])
        survived = following["resumed_from"] if following else attempt["completed_step"]
        kept = attempt["saves"].get(str(survived), 0.0)
        productive += world * kept
        if following is None or attempt["end"] == COMPLETED:
            continue
        cause = attempt["end"] or RANK_FAILED
        lost[cause] += world * (attempt["step_seconds"] - kept)
        restarts[cause] += 1
        if attempt["last_step_at"] and following["first_step_at"]:
            restart_s += following["first_step_at"] - attempt["last_step_at"]
    return {
        "allocated_gpu_seconds": allocated, "productive_gpu_seconds": productive,
        "lost_gpu_seconds": lost, "restarts": restarts, "restart_seconds": restart_s,
        "last_checkpoint_step": attempts[-1]["completed_step"] if attempts else 0,
        "goodput": productive / allocated if allocated else None,
        **checkpoint_figures(attempts),
    }  # fmt: skip


def checkpoint_figures(attempts: list[dict]) -> dict:
    """What the newest checkpoints cost and how far apart they were (module docstring); a
    ledger written before these were recorded has none."""
    waits = [a["save_seconds"] for a in attempts if a.get("save_seconds") is not None]
    gaps = [
        at[-1] - at[-2] for at in (sorted(a["saves"].values()) for a in attempts) if len(at) > 1
    ]
    return {
        "checkpoint_seconds": waits[-1] if waits else None,
        "checkpoint_interval_seconds": gaps[-1] if gaps else None,
        "nodes": attempts[-1].get("nodes") if attempts else None,
    }


def exposition(numbers: dict) -> str:
    """The figures as gauges; the identity comes from the push's grouping key, which the
    Pushgateway attaches to every series of the group."""
    samples = {
        ALLOCATED_GPU_SECONDS: [("", numbers["allocated_gpu_seconds"])],
        PRODUCTIVE_GPU_SECONDS: [("", numbers["productive_gpu_seconds"])],
        LOST_GPU_SECONDS: [(labels(cause=c), v) for c, v in numbers["lost_gpu_seconds"].items()],
        RESTARTS: [(labels(cause=c), v) for c, v in numbers["restarts"].items()],
        RESTART_SECONDS: [("", numbers["restart_seconds"])],
        LAST_CHECKPOINT_STEP: [("", numbers["last_checkpoint_step"])],
        **{
            name: [("", numbers[key])] if numbers[key] is not None else []
            for name, key in (
                (CHECKPOINT_SECONDS, "checkpoint_seconds"),
                (CHECKPOINT_INTERVAL_SECONDS, "checkpoint_interval_seconds"),
                (JOB_NODES, "nodes"),
            )
        },
    }
    lines = []
    for name, series in samples.items():
        lines += [f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge"]
        lines += [f"{name}{label} {float(value)!r}" for label, value in series]
    return "\n".join(lines) + "\n"


class Ledger:
    """Rank 0's record of this attempt in the job's ledger; written at each log point,
    checkpoint and end, pushed at each checkpoint and at the end."""

    def __init__(self, root: Path, *, restart_attempt: int, world_size: int, resumed_from: int,
                 nodes: int, identity: dict[str, str], environ=os.environ) -> None:  # fmt: skip
        self.path, self.root = root / LEDGER, root
        self.identity = identity
        self.url = environ.get(TRAINKIT_PUSHGATEWAY_URL)
        doc = json.loads(self.path.read_text()) if self.path.is_file() else {"attempts": []}
        self.attempts: list[dict] = doc["attempts"]
        if self.attempts and self.attempts[-1]["end"] is None:
            previous = self.attempts[-1]
            dumps = sorted((root / "hangs" / f"attempt-{previous['index']}").glob("rank-*.json"))
            if dumps:  # a watchdog fired: the attempt ended when the first one did
                previous["end"] = RESTART_CAUSES[HUNG]
                fired = [json.loads(dump.read_text()).get("fired_at") for dump in dumps]
                previous["ended_at"] = min((t for t in fired if t), default=None)
        self.index = len(self.attempts)
        self.attempt = attempt_record(
            self.index, restart_attempt, world_size, process_started_at(), resumed_from, nodes
        )
        self.attempts.append(self.attempt)
        self._push_thread: threading.Thread | None = None
        self.write()

    def stepped(self, step: int, step_seconds: float, now: float) -> None:
        """Step `step` ended at `now` (Unix time), this attempt's step time `step_seconds`."""
        self.attempt["first_step_at"] = self.attempt["first_step_at"] or now
        self.attempt.update(last_step_at=now, last_step=step, step_seconds=step_seconds)

    def saving(self, step: int, step_seconds: float) -> None:
        self.attempt["saves"][str(step)] = step_seconds

    def saved(self, waited_s: float) -> None:
        """The save just started held the ranks `waited_s` seconds (what it costs the job)."""
        self.attempt["save_seconds"] = waited_s

    def checkpointed(self, step: int) -> None:
        self.attempt["completed_step"] = step
        self.write()
        self.push()

    def end(self, how: str) -> None:
        self.attempt.update(end=how, ended_at=time.time())
        self.write()
        self.push()
        if self._push_thread is not None:
            self._push_thread.join(timeout=30)

    def figures(self) -> dict:
        return figures(self.attempts)

    def write(self) -> None:
        doc = {"job": self.identity, "attempts": self.attempts, "figures": self.figures()}
        partial = self.path.with_suffix(".json.partial")
        partial.write_text(json.dumps(doc, indent=1))
        partial.rename(self.path)

    def push(self) -> None:
        """In a daemon thread: a slow or absent Pushgateway never stops training; the last push
        wins (a PUT replaces the group)."""
        if not self.url:
            return
        url = self.url.rstrip("/") + group_path(GOODPUT_PUSH_JOB, self.identity)
        body = exposition(self.figures())

        def send() -> None:
            try:
                put(url, body)
            except OSError as error:
                print(f"trainkit: goodput push to {url} failed: {error}", file=sys.stderr)

        self._push_thread = threading.Thread(target=send, daemon=True)
        self._push_thread.start()
