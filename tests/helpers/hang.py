"""How long a test lets a real process (torchrun, a gloo group, a subprocess of the program)
run before calling it hung. A wall-clock limit a loaded machine can reach turns slowness into a
failure: 2 cores at a load average of 8-14 run a 10 s self-test in minutes, and its ranks then
miss a 60 s join or a 120 s gloo timeout. This one catches a hang, never a slow machine; the
tests assert what a run computes, not how fast."""

HANG_S = 1800
