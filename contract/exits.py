"""What a training pod's exit code tells the controllers that read it. A rank exits with one of
these; the platform's launcher (the container's command) exits with its group's root cause, so
that the Job's `podFailurePolicy` can match it (`onExitCodes`) and the JobSet's `failurePolicy`
can act on the Job's failure: restart the whole group from its checkpoint, or fail at once when
a restart cannot help (components/scheduling/training_job.py renders both; bootstrap/trainkit
exits with them; docs/training.md, "What restarts, what fails at once").

Any other non-zero code (1: an uncaught exception, a NCCL or store error after a peer died) is a
rank failure the group restarts from, up to the job's restart limit."""

from __future__ import annotations

# 128 + SIGTERM: stopped at a step boundary with a checkpoint, as on eviction or preemption.
PREEMPTED = 128 + 15
# The watchdog (trainkit): no step within its bound, stacks and the NCCL flight record written.
# GNU coreutils' `timeout` exits 124 when the command timed out.
HUNG = 124
# Unfixable by restarting: the same arguments and image fail the same way every time.
# 2: what argparse exits with on bad arguments, and CPython when it cannot open the script.
BAD_ARGUMENTS = 2
# sysexits.h EX_CONFIG: the script could not be set up (an import error, a syntax error, a
# missing setting); the launcher's worker wrapper exits with it.
SETUP_FAILED = 78
UNFIXABLE = {
    BAD_ARGUMENTS: "bad arguments or no such script",
    SETUP_FAILED: "the script could not be set up (import or syntax error, missing setting)",
}
# Why a group restarted, as trainkit records it (goodput's `cause` label).
RESTART_CAUSES = {
    PREEMPTED: "preempted",
    HUNG: "hung",
}
# Every other code, and a rank lost with its node (killed, no exit code of its own).
RANK_FAILED = "rank_failed"
