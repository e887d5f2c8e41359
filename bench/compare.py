#!/usr/bin/env python3
"""compare.py: the cases of `cltensor bench` run in PyTorch (CPU, 2 threads),
with numpy baselines measured in the same run, and, given the path of the
cltensor tool, cltensor's own figures beside torch's.

usage: python3 bench/compare.py [--json] [--quick] [--threads N] [PATH/TO/cltensor]
       python3 bench/compare.py --train [--repeat N] [PATH/TO/cltensor]

Needs numpy and torch (Debian: apt-get install python3-numpy python3-torch;
or pip).  Without them it says so and exits 0.  Like `cltensor bench` it
reports and never asserts.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import time

FIRST_OP_TARGET_MS = 150.0
LATENCY_UNITS = ("ms", "us/op")


def timed(fn, reps, warmup=3):
    """Median seconds of fn() over reps runs, after warmup runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Report:
    def __init__(self, as_json):
        self.as_json = as_json
        if not as_json:
            print(f"{'case':<24} {'value':>10} {'unit':<7} {'baseline':<14} "
                  f"{'base_value':>10} {'ratio':>9}")

    def line(self, name, value, unit, baseline, baseline_value, ratio):
        if self.as_json:
            print(json.dumps({"name": name, "value": value, "unit": unit,
                              "baseline": baseline, "baseline_value": baseline_value,
                              "ratio": ratio}))
        else:
            print(f"{name:<24} {value:10.3f} {unit:<7} {baseline:<14} "
                  f"{baseline_value:10.3f} {ratio:8.3f}x")
        sys.stdout.flush()


def split(n, parts):
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def run_torch_training(torch, rep, results):
    """The training-step cases of `cltensor bench train` in torch, into results."""
    # Training steps: the models of `cltensor bench train`, built and stepped
    # as cltensor's are (zero_grad to None, forward, cross entropy, backward,
    # SGD at 0.01 for the MLPs, AdamW for the CNN).
    nn = torch.nn
    torch.manual_seed(1)

    def mlp(dims):
        layers = []
        for i in range(len(dims) - 1):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i + 2 < len(dims):
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    cnn = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(128, 10))
    cases = (("train_mlp_64", mlp((64, 128, 10)), (64, 64), "sgd"),
             ("train_mlp_784", mlp((784, 512, 512, 10)), (256, 784), "sgd"),
             ("train_cnn_digits", cnn, (64, 1, 8, 8), "adamw"))
    for name, model, shape, kind in cases:
        x = torch.rand(shape)
        y = torch.randint(0, 10, (shape[0],))
        opt = (torch.optim.SGD(model.parameters(), lr=0.01) if kind == "sgd"
               else torch.optim.AdamW(model.parameters()))
        loss_fn = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        def fwd():
            with torch.no_grad():
                model(x)

        ms = timed(step, 25 if shape[0] < 256 else 9) * 1e3
        fwd_ms = timed(fwd, 25 if shape[0] < 256 else 9) * 1e3
        rep.line("torch:" + name, ms, "ms", "forward_only", fwd_ms, ms / fwd_ms)
        results[name] = (ms, "ms")


def run_torch_cases(np, torch, args, rep, peak):
    """Each case of `cltensor bench` in torch; returns {name: (value, unit)}."""
    nt = args.threads
    torch.set_num_threads(nt)
    pool = concurrent.futures.ThreadPoolExecutor(nt)
    rng = np.random.default_rng(12345)
    results = {}

    def par(fn):
        # numpy drops the GIL inside large ufunc loops, so these run in parallel.
        list(pool.map(fn, range(nt)))

    # Per-op overhead: a 16-element add, many times back to back.
    a = torch.from_numpy(rng.uniform(-1, 1, 16).astype(np.float32))
    b = torch.from_numpy(rng.uniform(-1, 1, 16).astype(np.float32))
    an, bn = a.numpy(), b.numpy()
    ops = 1000

    def torch_ops():
        for _ in range(ops):
            torch.add(a, b)

    def numpy_ops():
        for _ in range(ops):
            np.add(an, bn)

    us = timed(torch_ops, 7) / ops * 1e6
    us_np = timed(numpy_ops, 7) / ops * 1e6
    rep.line("torch:overhead_add16", us, "us/op", "numpy", us_np, us / us_np)
    results["overhead_add16"] = (us, "us/op")

    for n, name in ((1 << 20, "add_1M"), (1 << 24, "add_16M")):
        an = rng.uniform(-1, 1, n).astype(np.float32)
        bn = rng.uniform(-1, 1, n).astype(np.float32)
        cn = np.empty_like(an)
        a, b = torch.from_numpy(an), torch.from_numpy(bn)
        reps = 9 if n > (1 << 22) else 31
        spans = split(n, nt)

        def np_add(i):
            lo, hi = spans[i]
            np.add(an[lo:hi], bn[lo:hi], out=cn[lo:hi])

        t = timed(lambda: torch.add(a, b), reps)
        t_np = timed(lambda: par(np_add), reps)
        t_cp = timed(lambda: np.copyto(cn, an), reps)
        gbs, gbs_np, gbs_cp = 12 * n / t / 1e9, 12 * n / t_np / 1e9, 8 * n / t_cp / 1e9
        rep.line("torch:" + name, gbs, "GB/s", "numpy_2t", gbs_np, gbs / gbs_np)
        rep.line("torch:" + name, gbs, "GB/s", "memcpy", gbs_cp, gbs / gbs_cp)
        results[name] = (gbs, "GB/s")
        del an, bn, cn, a, b

    n = 1 << 24
    an = rng.uniform(-1, 1, n).astype(np.float32)
    a = torch.from_numpy(an)
    spans = split(n, nt)
    partial = [0.0] * nt

    def np_sum(i):
        lo, hi = spans[i]
        partial[i] = float(an[lo:hi].sum())

    t = timed(lambda: torch.sum(a), 9)
    t_np = timed(lambda: par(np_sum), 9)
    gbs, gbs_np = 4 * n / t / 1e9, 4 * n / t_np / 1e9
    rep.line("torch:sum_16M", gbs, "GB/s", "numpy_2t", gbs_np, gbs / gbs_np)
    results["sum_16M"] = (gbs, "GB/s")
    del an, a

    rows, cols = 4096, 1024
    xn = rng.uniform(-8, 8, (rows, cols)).astype(np.float32)
    yn = np.empty_like(xn)
    x = torch.from_numpy(xn)
    spans = split(rows, nt)

    def np_softmax(i):
        lo, hi = spans[i]
        part = xn[lo:hi]
        e = np.exp(part - part.max(axis=1, keepdims=True))
        np.divide(e, e.sum(axis=1, keepdims=True), out=yn[lo:hi])

    t = timed(lambda: torch.softmax(x, -1), 7)
    t_np = timed(lambda: par(np_softmax), 7)
    gbs, gbs_np = 8 * rows * cols / t / 1e9, 8 * rows * cols / t_np / 1e9
    rep.line("torch:softmax_4096x1024", gbs, "GB/s", "numpy_2t", gbs_np, gbs / gbs_np)
    results["softmax_4096x1024"] = (gbs, "GB/s")
    del xn, yn, x

    sizes = (256, 512, 1024) if args.quick else (256, 512, 1024, 2048)
    for n in sizes:
        an = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        bn = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        a, b = torch.from_numpy(an), torch.from_numpy(bn)
        reps = 21 if n <= 256 else 9 if n <= 512 else 5 if n <= 1024 else 3
        flop = 2.0 * n ** 3
        gf = flop / timed(lambda: torch.matmul(a, b), reps) / 1e9
        gf_np = flop / timed(lambda: np.matmul(an, bn), reps) / 1e9
        name = f"matmul_{n}"
        rep.line("torch:" + name, gf, "GFLOP/s", "numpy", gf_np, gf / gf_np)
        if peak:
            rep.line("torch:" + name, gf, "GFLOP/s", "fma_peak", peak, gf / peak)
        results[name] = (gf, "GFLOP/s")

    # Matrix-vector product: bound by reading A (4 n^2 bytes).
    n = 4096
    an = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    xn = rng.uniform(-1, 1, n).astype(np.float32)
    a, x = torch.from_numpy(an), torch.from_numpy(xn)
    gbs = 4.0 * n * n / timed(lambda: torch.matmul(a, x), 9) / 1e9
    gbs_np = 4.0 * n * n / timed(lambda: np.matmul(an, xn), 9) / 1e9
    rep.line("torch:matvec_4096", gbs, "GB/s", "numpy", gbs_np, gbs / gbs_np)
    results["matvec_4096"] = (gbs, "GB/s")
    del an, xn, a, x

    run_torch_training(torch, rep, results)

    # First op: a fresh interpreter imports torch, adds two tensors, reads back.
    child = ("import os, time, torch\n"
             "a = torch.arange(1024, dtype=torch.float32)\n"
             "c = (a + 0.5 * a).numpy()\n"
             "t = time.clock_gettime(time.CLOCK_MONOTONIC)\n"
             "print((t - float(os.environ['CLT_BENCH_T0'])) * 1e3)\n")
    times = []
    for r in range(6):
        env = dict(os.environ, CLT_BENCH_T0=repr(time.clock_gettime(time.CLOCK_MONOTONIC)))
        out = subprocess.run([sys.executable, "-c", child], env=env, check=True,
                             capture_output=True, text=True).stdout
        if r > 0:  # the first run warms the page cache
            times.append(float(out.split()[-1]))
    ms = statistics.median(times)
    rep.line("torch:first_op_warm", ms, "ms", "target", FIRST_OP_TARGET_MS,
             ms / FIRST_OP_TARGET_MS)
    results["first_op_warm"] = (ms, "ms")
    pool.shutdown()
    return results


def run_cltensor(tool, quick, cases=()):
    """Lines of `cltensor bench --json [CASE...]`, in order."""
    cmd = [tool, "bench", "--json"] + (["--quick"] if quick else []) + list(cases)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        print(f"compare.py: `{' '.join(cmd)}` exited with {proc.returncode}; "
              "comparing what it printed")
    lines = []
    for text in proc.stdout.splitlines():
        try:
            lines.append(json.loads(text))
        except ValueError:
            pass
    return lines


def compare_training(torch, args):
    """--train: rounds of `cltensor bench --json train` and the same steps in
    torch, one after the other; per round and case cltensor's step time,
    torch's and torch/cltensor (above 1: cltensor is faster), then per case
    the median and range of that ratio over the rounds."""
    torch.set_num_threads(args.threads)

    class Quiet:
        def line(self, *_):
            pass

    run_torch_training(torch, Quiet(), {})  # untimed: torch's first steps in a process
    rep = Report(args.json)
    ratios = {}
    for r in range(max(1, args.repeat)):
        cl = {}
        if args.cltensor:
            for l in run_cltensor(args.cltensor, args.quick, ["train"]):
                if l.get("unit") == "ms":
                    cl[l["name"]] = l["value"]
        tr = {}
        run_torch_training(torch, rep, tr)
        for name, (tv, _) in tr.items():
            if name in cl:
                ratios.setdefault(name, []).append(tv / cl[name])
                rep.line(f"round{r + 1}:{name}", cl[name], "ms", "torch", tv, tv / cl[name])
    for name, v in ratios.items():
        if args.json:
            print(json.dumps({"name": name, "median": statistics.median(v), "min": min(v),
                              "max": max(v), "rounds": len(v)}))
        else:
            print(f"{name:<24} cltensor/torch speed: median {statistics.median(v):.2f}x, "
                  f"range {min(v):.2f}-{max(v):.2f}x over {len(v)} rounds")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cltensor", nargs="?",
                    help="path of the cltensor tool: also run `cltensor bench --json` "
                         "and print cltensor against torch per case")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="skip matmul 2048")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--train", action="store_true",
                    help="only the training steps (cltensor bench train and the same in torch)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --train: this many rounds of cltensor then torch, then each "
                         "case's ratios (median and range)")
    args = ap.parse_args()

    missing = []
    try:
        import numpy as np
    except ImportError:
        np = None
        missing.append("numpy")
    try:
        import torch
    except ImportError:
        torch = None
        missing.append("torch")
    if missing:
        print("compare.py: " + " and ".join(missing) + " not installed for " + sys.executable
              + "; nothing to compare (Debian: apt-get install python3-numpy "
              "python3-torch, then run it with /usr/bin/python3; or pip install "
              "numpy torch)")
        return 0

    if args.train:
        return compare_training(torch, args)
    cl_lines = run_cltensor(args.cltensor, args.quick) if args.cltensor else []
    peak = next((l["baseline_value"] for l in cl_lines if l.get("baseline") == "fma_peak"),
                None)
    openblas = next((l["openblas"] for l in cl_lines if "openblas" in l), None)
    if not args.json:
        print(f"torch {torch.__version__} ({args.threads} threads), numpy {np.__version__}")
        if openblas:
            print(f"cltensor bench's OpenBLAS baseline: {openblas}")
    rep = Report(args.json)
    torch_results = run_torch_cases(np, torch, args, rep, peak)
    if not cl_lines:
        return 0

    if not args.json:
        print(f"\n{'case':<24} {'cltensor':>10} {'torch':>10} {'unit':<7} {'cltensor/torch':>15}")
    seen = set()
    for l in cl_lines:
        name = l["name"]
        if name in seen or name not in torch_results:
            continue
        seen.add(name)
        tv, unit = torch_results[name]
        cv = l["value"]
        # >1 means cltensor is faster, for rates and for latencies alike.
        speed = tv / cv if unit in LATENCY_UNITS else cv / tv
        if args.json:
            print(json.dumps({"name": name, "value": cv, "unit": unit, "baseline": "torch",
                              "baseline_value": tv, "ratio": speed}))
        else:
            print(f"{name:<24} {cv:10.3f} {tv:10.3f} {unit:<7} {speed:14.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
