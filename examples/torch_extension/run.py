#!/usr/bin/env python3
"""run.py - build the kiln rmsnorm export as a PyTorch C++/CUDA extension
(torch.utils.cpp_extension.load: kiln_rmsnorm.cpp binds, kiln_rmsnorm_cuda.cu
includes the export) and compare it with PyTorch on the GPU: the largest
error against rmsnorm in float32 from the same bf16 inputs (also PyTorch's
own bf16 rms_norm's, for scale), and the mean time of a call next to
PyTorch's.

    python3 examples/torch_extension/run.py EXPORT_DIR

EXPORT_DIR holds kiln_rmsnorm_bf16.cuh (examples/export.sh makes it). Exit
status 0: every shape within 3 bf16 ulps; 1: not; 2: cannot run here (no
CUDA device, or the extension does not build, e.g. nvcc's CUDA major
version is not PyTorch's).
"""
import os
import sys

import torch
from torch.utils.cpp_extension import load

SHAPES = [(1, 2048), (33, 1000), (64, 4096), (1024, 8192), (4096, 5120), (16384, 4096)]
EPS = 1e-6


def build(export_dir):
    here = os.path.dirname(os.path.abspath(__file__))
    return load(name="kiln_rmsnorm_ext",
                sources=[os.path.join(here, "kiln_rmsnorm.cpp"),
                         os.path.join(here, "kiln_rmsnorm_cuda.cu")],
                extra_include_paths=[os.path.abspath(export_dir)],
                extra_cuda_cflags=["-O3", "-std=c++17"],
                extra_cflags=["-O2", "-std=c++17"])


def reference(x, w):
    """rmsnorm in float32 from the bf16 values."""
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()


def torch_bf16(x, w):
    """PyTorch's own bf16 rmsnorm (F.rms_norm from 2.4, else the formula)."""
    if hasattr(torch.nn.functional, "rms_norm"):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS)
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def ulps(out, ref):
    """Largest |out - ref| in bf16 ulps of ref (8 significant bits)."""
    _, e = torch.frexp(ref.abs().clamp_min(1e-30))
    return ((out.float() - ref).abs() / torch.ldexp(torch.ones_like(ref), e - 8)).max().item()


def mean_us(fn, reps=50):
    """Mean time of a call from Python, output allocation included (both sides)."""
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / reps


def main():
    if len(sys.argv) != 2:
        print("usage: run.py EXPORT_DIR (with kiln_rmsnorm_bf16.cuh)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("skipped: PyTorch sees no CUDA device")
        return 2
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name()}")
    try:
        ext = build(sys.argv[1])
    except Exception as e:   # a compiler or version mismatch: say so, do not hide it
        print(f"skipped: the extension does not build: {e}")
        return 2
    torch.manual_seed(0)
    bad = False
    print(f"{'rows':>6} {'cols':>6} {'kiln ulp':>9} {'torch ulp':>9} {'kiln us':>9} {'torch us':>9}")
    for rows, cols in SHAPES:
        x = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
        w = torch.randn(cols, device="cuda").to(torch.bfloat16)
        ref = reference(x, w)
        ours = ext.rmsnorm(x, w, EPS)
        err, terr = ulps(ours, ref), ulps(torch_bf16(x, w), ref)
        t_ours = mean_us(lambda: ext.rmsnorm(x, w, EPS))
        t_torch = mean_us(lambda: torch_bf16(x, w))
        flag = "  FAIL" if err > 3 else ""
        bad |= err > 3
        print(f"{rows:>6} {cols:>6} {err:>9.2f} {terr:>9.2f} {t_ours:>9.1f} {t_torch:>9.1f}{flag}")
    print("FAIL: an output is more than 3 bf16 ulps off" if bad else "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
