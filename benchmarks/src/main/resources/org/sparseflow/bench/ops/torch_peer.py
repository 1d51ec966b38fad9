"""PyTorch CPU dense peer for the SparseFlow `ops` benchmark.

Times dense fp32 work on the same shapes as the Java cases, with the thread count given on the
command line and whatever OPENBLAS_* / OMP_* environment the caller passes on (it is not changed
here). Prints one line per case:
`TORCH <case> median_ms=<m> min_ms=<m> cpu_ms=<process CPU ms> threads=<n> version=<v>`.

Cases:
  matmul_fwd N K M          y = x W
  matmul_fwdbwd N K M       y = x W, then dx = dy W^T and dW = x^T dy (autograd)
  attention_fwd T H D       causal softmax attention: matmul, mask, softmax, matmul
  attention_fwdbwd T H D    the same plus its backward (autograd) for q, k and v
"""

import ctypes
import os
import statistics
import sys
import time

import torch


def timed(fn, warmup, reps):
    """Median and minimum wall ms, and median process CPU ms (all threads)."""
    for _ in range(warmup):
        fn()
    samples = []
    cpu = []
    for _ in range(reps):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(samples), min(samples), statistics.median(cpu)


def matmul_case(backward, n, k, m):
    torch.manual_seed(42)
    x = torch.randn(n, k, requires_grad=backward)
    w = (torch.randn(k, m) * 0.03).requires_grad_(backward)
    dy = torch.randn(n, m)

    def run():
        if backward:
            y = x @ w
            y.backward(dy)
            x.grad = None
            w.grad = None
        else:
            with torch.no_grad():
                x @ w

    return run


def attention_case(backward, t, h, d):
    torch.manual_seed(42)
    q = torch.randn(1, h, t, d, requires_grad=backward)
    k = torch.randn(1, h, t, d, requires_grad=backward)
    v = torch.randn(1, h, t, d, requires_grad=backward)
    d_out = torch.randn(1, h, t, d)
    causal = torch.ones(t, t, dtype=torch.bool).triu(1)
    scale = d ** -0.5

    def forward():
        s = (q @ k.transpose(-1, -2)) * scale
        s = s.masked_fill(causal, float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    def run():
        if backward:
            forward().backward(d_out)
            q.grad = None
            k.grad = None
            v.grad = None
        else:
            with torch.no_grad():
                forward()

    return run


def limit_blas_threads(threads):
    """Debian's torch calls the system OpenBLAS, whose own thread pool ignores torch.set_num_threads:
    set it through OpenBLAS's API (as the Java side does through ND4J), not through the environment."""
    try:
        with open("/proc/self/maps") as maps:
            libs = {line.split()[-1] for line in maps if "openblas" in line and ".so" in line}
        for lib in libs:
            ctypes.CDLL(lib).openblas_set_num_threads(threads)
        return len(libs) > 0
    except (OSError, AttributeError):
        return False


def loaded_blas():
    """Paths of the BLAS shared libraries this process has loaded (Linux only; empty elsewhere)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "blas" in line and ".so" in line}
    except OSError:
        return []
    return sorted(paths)


def report_blas():
    """Debian's python3-torch calls whatever libblas.so.3 is selected; without an optimised one
    (e.g. libopenblas0-pthread) that is the reference BLAS, about 50x slower at these shapes, and
    the peer would be a straw man."""
    paths = loaded_blas()
    print("blas=%s" % (",".join(paths) if paths else "unknown"), flush=True)
    if paths and not any("openblas" in p or "mkl" in p or "blis" in p for p in paths):
        print(
            "WARNING: PyTorch runs on the reference BLAS; install an optimised one"
            " (apt-get install libopenblas0-pthread) before comparing against it",
            flush=True,
        )


def main(argv):
    threads = int(argv[1])
    warmup = int(argv[2])
    reps = int(argv[3])
    torch.set_num_threads(threads)
    torch.zeros(64, 64) @ torch.zeros(64, 64)  # loads the BLAS library
    if threads < (os.cpu_count() or threads):
        limit_blas_threads(threads)  # by default OpenBLAS uses every core
    report_blas()
    cases = argv[4:]
    for spec in cases:
        parts = spec.split(":")
        name = parts[0]
        dims = [int(p) for p in parts[1:]]
        if name.startswith("matmul"):
            fn = matmul_case(name.endswith("fwdbwd"), *dims)
        else:
            fn = attention_case(name.endswith("fwdbwd"), *dims)
        med, best, cpu = timed(fn, warmup, reps)
        print(
            "TORCH %s dims=%s median_ms=%.2f min_ms=%.2f cpu_ms=%.2f threads=%d version=%s"
            % (name, "x".join(str(x) for x in dims), med, best, cpu, threads, torch.__version__),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv)
