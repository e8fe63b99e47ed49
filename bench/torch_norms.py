#!/usr/bin/env python3
"""torch_norms.py - what a user would pick instead of a kiln kernel, timed on
this GPU beside kiln in the same device call: torch's rms_norm, softmax and
layer_norm, eager and under torch.compile, a hand-written Triton kernel of
each in the common one-row-per-program form (the whole row in registers,
as the Triton tutorials and AutoKernel's starters write them; written here,
not copied), and torch's copy of x for the copy bandwidth, in bf16 over the
rows x cols given (default: the prefill group's 16384x4096).

Two timers for each: CUDA events around 200 back-to-back calls (median of
7 such runs), and Triton's do_bench where Triton is installed. Bandwidth
counts one read of x and one write of y (the weights are a row: noise).

    python3 bench/torch_norms.py [ROWSxCOLS ...]

Prints one line per (op, variant, shape) and exits 2 when torch sees no GPU.
"""
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # a bare machine: say so, as a skip
    print(f"torch_norms: no torch ({e})")
    sys.exit(2)

if not torch.cuda.is_available():
    print("torch_norms: torch sees no GPU")
    sys.exit(2)


def events_us(fn, reps=7, calls=200):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        runs.append(a.elapsed_time(b) * 1000.0 / calls)
    return statistics.median(runs)


def do_bench_us(fn):
    try:
        from triton.testing import do_bench
    except Exception:
        return None
    return do_bench(fn, warmup=50, rep=300) * 1000.0


def triton_ops(cols):
    """Triton rmsnorm, softmax and layernorm of rows of cols, or {} without
    Triton. One program a row; the row's block is the next power of two."""
    try:
        import triton
        import triton.language as tl
    except Exception:
        return {}

    @triton.jit
    def rms_k(x, w, y, cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        c = tl.arange(0, BLOCK)
        m = c < cols
        v = tl.load(x + row * cols + c, mask=m, other=0.0).to(tl.float32)
        inv = tl.rsqrt(tl.sum(v * v, axis=0) / cols + eps)
        g = tl.load(w + c, mask=m, other=0.0).to(tl.float32)
        tl.store(y + row * cols + c, (v * inv * g).to(tl.bfloat16), mask=m)

    @triton.jit
    def sm_k(x, y, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        c = tl.arange(0, BLOCK)
        m = c < cols
        v = tl.load(x + row * cols + c, mask=m, other=-float("inf")).to(tl.float32)
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(y + row * cols + c, (e / tl.sum(e, axis=0)).to(tl.bfloat16), mask=m)

    @triton.jit
    def ln_k(x, w, b, y, cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        c = tl.arange(0, BLOCK)
        m = c < cols
        v = tl.load(x + row * cols + c, mask=m, other=0.0).to(tl.float32)
        mu = tl.sum(v, axis=0) / cols
        d = tl.where(m, v - mu, 0.0)
        inv = tl.rsqrt(tl.sum(d * d, axis=0) / cols + eps)
        g = tl.load(w + c, mask=m, other=0.0).to(tl.float32)
        bb = tl.load(b + c, mask=m, other=0.0).to(tl.float32)
        tl.store(y + row * cols + c, (d * inv * g + bb).to(tl.bfloat16), mask=m)

    block = triton.next_power_of_2(cols)
    warps = 8 if block <= 4096 else 16

    def rms(t, w):
        y = torch.empty_like(t)
        rms_k[(t.shape[0],)](t, w, y, cols, 1e-6, BLOCK=block, num_warps=warps)
        return y

    def sm(t):
        y = torch.empty_like(t)
        sm_k[(t.shape[0],)](t, y, cols, BLOCK=block, num_warps=warps)
        return y

    def ln(t, w, b):
        y = torch.empty_like(t)
        ln_k[(t.shape[0],)](t, w, b, y, cols, 1e-5, BLOCK=block, num_warps=warps)
        return y

    return {"rmsnorm": rms, "softmax": sm, "layernorm": ln}


def check(name, got, want):
    """A Triton kernel that is not right is not timed as if it were."""
    err = (got.float() - want.float()).abs().max().item()
    if err > 0.05 * max(1.0, want.float().abs().max().item()):
        raise SystemExit(f"torch_norms: the Triton {name} differs from torch by {err}")


def ops(rows, cols):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    rms = lambda t: F.rms_norm(t, (cols,), w, 1e-6)
    ln = lambda t: F.layer_norm(t, (cols,), w, b, 1e-5)
    sm = lambda t: F.softmax(t, dim=-1)
    out = []
    for name, f in (("rmsnorm", rms), ("layernorm", ln), ("softmax", sm)):
        out.append((name, "eager", lambda f=f: f(x)))
        try:
            cf = torch.compile(f, dynamic=False)
            cf(x)
            out.append((name, "torch.compile", lambda cf=cf: cf(x)))
        except Exception as e:  # no compiler toolchain here: say so
            print(f"{name} torch.compile unavailable: {str(e).splitlines()[0][:120]}")
    tri = triton_ops(cols)
    if tri:
        check("rmsnorm", tri["rmsnorm"](x, w), rms(x))
        check("softmax", tri["softmax"](x), sm(x))
        check("layernorm", tri["layernorm"](x, w, b), ln(x))
        out.append(("rmsnorm", "triton", lambda: tri["rmsnorm"](x, w)))
        out.append(("softmax", "triton", lambda: tri["softmax"](x)))
        out.append(("layernorm", "triton", lambda: tri["layernorm"](x, w, b)))
    else:
        print("triton unavailable: no Triton kernels timed")
    y = torch.empty_like(x)
    out.append(("copy", "torch", lambda: y.copy_(x)))
    return out


def main(argv):
    shapes = [tuple(int(v) for v in a.lower().split("x")) for a in argv] or [(16384, 4096)]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for rows, cols in shapes:
        nbytes = 2 * rows * cols * 2
        for name, variant, fn in ops(rows, cols):
            ev = events_us(fn)
            db = do_bench_us(fn)
            dbs = f"{db:8.1f} us {nbytes / db / 1e3:6.0f} GB/s" if db else "  (no triton)"
            print(f"{name:9s} {variant:13s} {rows}x{cols}  events {ev:8.1f} us "
                  f"{nbytes / ev / 1e3:6.0f} GB/s   do_bench {dbs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
