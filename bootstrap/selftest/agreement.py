"""Silent data corruption: every GPU of the run (every local rank of every node; in a job's
preflight, every GPU of the job's nodes) computes the same seeded problems, and a GPU whose
results differ from the others' fails, named by its index and node.

The problems: a GEMM in fp32 and one in bf16, and one forward and backward pass of a tiny MLP
(its loss and every gradient). The inputs come from one CPU generator with a fixed seed, so
every rank starts from the same bits whatever its device.

Bitwise where the kernels are deterministic: two ranks of the same kernel class (device name,
SM count, CUDA and torch versions; on a CPU, torch's thread count and version) must agree bit for
bit. cuBLAS promises it (cuBLAS documentation, "Results reproducibility": "all cuBLAS API
routines from a given toolkit version generate the same bit-wise results at every run when
executed on GPUs with the same architecture and the same number of SMs"), and the MLP's other
operations (GELU, the mean-squared error and its backward, the bias gradients' sums) are not on
torch's list of nondeterministic ones (torch.use_deterministic_algorithms). A CPU's fp32 and
bf16 GEMM give the same bits for the same inputs on the same thread count. Across kernel classes
(a job that mixes GPU models or MIG slices of different sizes) the results are held to
torch.testing.assert_close's default tolerances for the dtype (torch/testing/_comparison.py,
_DTYPE_PRECISIONS: float32 rtol 1.3e-6 atol 1e-5, bfloat16 rtol 1.6e-2 atol 1e-5).

The odd GPU is found by vote: the ranks that agree with the most others are the reference, and
every rank that disagrees with them FAILs. When no result is backed by more ranks than any other
(two ranks that disagree, or two equal camps) no GPU can be told good: every rank that disagrees
with another is suspect and FAILs."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from selftest.context import SelfTestContext
from selftest.result import CheckResult

NAME = "agreement.gpu_results"
SEED = 20261205
GEMM_N = 128
# torch.testing.assert_close's defaults (torch/testing/_comparison.py, _DTYPE_PRECISIONS),
# (rtol, atol), for results of different kernel classes.
TOLERANCES: dict[str, tuple[float, float]] = {
    "gemm_fp32": (1.3e-6, 1e-5),
    "gemm_bf16": (1.6e-2, 1e-5),
    "train_step": (1.3e-6, 1e-5),
}
SOURCE = (
    "bitwise within a kernel class (cuBLAS 'Results reproducibility'); across classes "
    "torch.testing.assert_close's dtype tolerances"
)
# Fault injection for the tests (SELFTEST_INJECT_FAULTS, context.py): this rank's results get
# their lowest bit flipped, the smallest corruption there is.
FAULT = "sdc-compute"


def kernel_class(device: torch.device) -> str:
    """Ranks of one class run the same kernels on the same hardware, so agree bit for bit."""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return (f"{props.name}, {props.multi_processor_count} SMs, CUDA {torch.version.cuda}, "
                f"torch {torch.__version__}")  # fmt: skip
    return f"cpu, {torch.get_num_threads()} threads, torch {torch.__version__}"


def train_step(device: torch.device, generator: torch.Generator) -> torch.Tensor:
    """One forward and backward pass of a two-layer MLP: the loss, then every gradient."""
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.1)
    x, y = (torch.randn(32, 64, generator=generator) for _ in range(2))
    model.to(device)
    loss = F.mse_loss(model(x.to(device)), y.to(device))
    loss.backward()
    grads = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
    return torch.cat([loss.detach().reshape(1), *grads])


def problems(device: torch.device) -> dict[str, torch.Tensor]:
    """Each problem's result as a flat fp32 CPU tensor (bf16 widens to fp32 exactly)."""
    generator = torch.Generator().manual_seed(SEED)
    a, b = (torch.randn(GEMM_N, GEMM_N, generator=generator).to(device) for _ in range(2))
    results = {
        "gemm_fp32": a @ b,
        "gemm_bf16": a.bfloat16() @ b.bfloat16(),
        "train_step": train_step(device, generator),
    }
    return {name: t.detach().float().flatten().cpu() for name, t in results.items()}


def flip_lowest_bit(tensor: torch.Tensor) -> None:
    tensor.view(torch.int32)[0] ^= 1


def agrees(problem: str, a: tuple[str, torch.Tensor], b: tuple[str, torch.Tensor]) -> bool:
    (class_a, result_a), (class_b, result_b) = a, b
    if class_a == class_b:
        return result_a.numpy().tobytes() == result_b.numpy().tobytes()
    rtol, atol = TOLERANCES[problem]
    return bool(torch.allclose(result_a, result_b, rtol=rtol, atol=atol))


def odd_ranks(problem: str, results: list[tuple[str, torch.Tensor]]) -> tuple[list[int], bool]:
    """(the ranks whose result for `problem` is not the majority's, whether a majority was
    found); without one, every rank that disagrees with another is returned."""
    n = len(results)
    agree = [[i == j or agrees(problem, results[i], results[j]) for j in range(n)]
             for i in range(n)]  # fmt: skip
    support = [sum(row) for row in agree]
    best = [i for i in range(n) if support[i] == max(support)]
    majority = max(support) > 1 and all(agree[i][j] for i in best for j in best)
    if majority:
        return [i for i in range(n) if not agree[best[0]][i]], True
    return [i for i in range(n) if not all(agree[i])], False


def verdict(ranks: list[tuple[str, int, str, dict[str, torch.Tensor]]]) -> tuple[set[int], str]:
    """Every rank's (node, GPU index, kernel class, results) -> (the ranks that FAIL, why)."""
    failed: set[int] = set()
    reasons = []
    for problem in TOLERANCES:
        odd, majority = odd_ranks(problem, [(r[2], r[3][problem]) for r in ranks])
        if not odd:
            continue
        failed.update(odd)
        named = ", ".join(f"GPU {ranks[i][1]} on node {ranks[i][0]} (rank {i})" for i in odd)
        if majority:
            verb = "differs" if len(odd) == 1 else "differ"
            reasons.append(f"{problem}: {named} {verb} from the other {len(ranks) - len(odd)}")
        else:
            reasons.append(f"{problem}: no majority among {len(ranks)} GPUs, every one suspect: "
                           f"{named}")  # fmt: skip
    return failed, "; ".join(reasons)


def run(ctx: SelfTestContext) -> list[CheckResult]:
    """This rank's problems, every rank's results gathered, and this rank's verdict."""
    started = time.perf_counter()
    if ctx.world_size < 2:
        return [CheckResult(NAME, "SKIP", reason="one GPU in the run: nothing to compare with")]
    device = torch.device("cuda", ctx.local_rank) if ctx.device == "cuda" else torch.device("cpu")
    results = problems(device)
    if FAULT in ctx.faults:
        for result in results.values():
            flip_lowest_bit(result)
    mine = (ctx.node, ctx.local_rank, kernel_class(device), results)
    ranks: list = [None] * ctx.world_size
    dist.all_gather_object(ranks, mine)
    failed, reason = verdict(ranks)
    return [
        CheckResult(
            NAME, "FAIL" if ctx.rank in failed else "PASS", len(failed), "GPUs that disagree",
            0, SOURCE, reason if ctx.rank in failed else "", time.perf_counter() - started,
            details={"compared": ctx.world_size},
        )
    ]  # fmt: skip
