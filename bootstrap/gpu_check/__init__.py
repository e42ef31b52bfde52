"""`make gpu-check`: the self-test, its benchmark figures and the recipes' benchmark, run with a
Python that already holds a CUDA build of PyTorch, on a machine that reaches no package index
(docs/selftest.md, "On a GPU machine: make gpu-check"). Standard library only: it runs before
anything missing is installed, and every step runs in a child process of that Python."""
