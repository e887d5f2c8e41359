#!/bin/sh
# python_interop.sh: files written by Python (numpy.save and
# safetensors.numpy.save_file) are read by cltensor and written back
# (tests/io_roundtrip), through the device and through host memory, and
# Python checks that values, dtypes and shapes came back unchanged
# (big-endian and Fortran-ordered .npy files too, in C order), that a
# data loader over .npy files read into host memory keeps each label with
# its sample, that a one-dtype safetensors file comes back byte for byte,
# and that what cltensor refuses (int8, complex, structured) it refuses
# with a message.  With torch too, the settings cltensor writes in an
# optimizer's and a schedule's checkpoint (__metadata__) equal, key by
# key, torch's param_groups[0] and scheduler.state_dict() for the same
# settings (skipped, saying so, without torch).  Skips (exit 77), saying why, without a Python
# that has numpy and safetensors: set PYTHON to choose one.
set -u
prog="${top_builddir:-.}/tests/io_roundtrip"
if [ ! -x "$prog" ]; then
    echo "python_interop: $prog is not built: skipping"
    exit 77
fi

py=""
why=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
    command -v "$cand" >/dev/null 2>&1 || continue
    missing=$("$cand" -c '
import importlib.util as u
print(" ".join(m for m in ("numpy", "safetensors") if u.find_spec(m) is None))' 2>/dev/null) ||
        continue
    if [ -z "$missing" ]; then
        py=$cand
        break
    fi
    why="$why $cand lacks: $missing;"
done
if [ -z "$py" ]; then
    echo "python_interop: no Python with numpy and safetensors (${why:- no python3 found}):" \
         "skipping; install python3-numpy and 'pip install safetensors', or set PYTHON"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/clt_interop.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
echo "python_interop: $py ($("$py" -c 'import numpy, safetensors; print("numpy", numpy.__version__, "safetensors", safetensors.__version__)'))"
"$py" - "$prog" "$tmp" <<'PYEOF'
import subprocess, sys
import numpy as np
from safetensors.numpy import save_file, load_file

prog, tmp = sys.argv[1], sys.argv[2]
failures = []

def run(*args):
    return subprocess.run([prog, *args], capture_output=True, text=True)

r = run("dtypes")
if r.returncode == 77:
    print("python_interop: no OpenCL device:", r.stderr.strip())
    sys.exit(77)
held = set(r.stdout.split())
print("python_interop: the device holds", " ".join(sorted(held)))

rng = np.random.default_rng(7)
arrays = {
    "float32": rng.standard_normal((3, 4)).astype("<f4"),
    "float64": rng.standard_normal((2, 3, 2)).astype("<f8"),
    "float16": rng.standard_normal((5,)).astype("<f2"),
    "int32": rng.integers(-2**31, 2**31, (4, 1), dtype="<i4"),
    "int64": rng.integers(-2**62, 2**62, (2, 2), dtype="<i8"),
    "uint8": rng.integers(0, 256, (7,), dtype="u1"),
    "bool": rng.integers(0, 2, (3, 3)).astype(bool),
}
extra = {
    "scalar": np.array(3.5, dtype="<f4"),
    "empty": np.zeros((0, 3), dtype="<f4"),
    "transposed": np.ascontiguousarray(rng.standard_normal((4, 3)).astype("<f4").T),
}
tested = {k: v for k, v in arrays.items() if k in held}
for k in arrays:
    if k not in held:
        print("python_interop: the device does not hold", k, "- left out")
tested.update(extra)

def same(name, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        failures.append(f"{name}: got {got.dtype} {got.shape}, want {want.dtype} {want.shape}")

# .npy: numpy writes, cltensor reads and writes back, numpy reads, through
# a tensor on the device ("npy") and through host memory ("npyhost":
# clt_load_npy_host, clt_save_npy_host, which need no device, so every
# dtype goes that way); numpy's file and the files cltensor wrote
def npy_roundtrip(name, a, want, modes=("npy", "npyhost")):
    src = f"{tmp}/{name}.npy"
    np.save(src, a)
    outs = []
    for mode in modes:
        dst = f"{tmp}/{name}.{mode}.out.npy"
        r = run(mode, src, dst)
        if r.returncode != 0:
            failures.append(f"{mode} {name}: {r.stderr.strip()}")
            continue
        same(f"{mode} {name}", np.load(dst), want)
        outs.append(dst)
    return src, outs

def modes_for(dtype):
    return ("npy", "npyhost") if str(dtype.newbyteorder("=")) in held else ("npyhost",)

for name, a in {**arrays, **extra}.items():
    src, outs = npy_roundtrip(name, a, a, modes_for(a.dtype))
    for dst in outs:
        with open(src, "rb") as f1, open(dst, "rb") as f2:
            if f1.read() != f2.read():
                print(f"python_interop: note: {dst} differs from numpy's bytes "
                      "(another numpy version's header?)")

# what numpy.save writes for big-endian and Fortran-ordered arrays (a
# transposed array is one) loads with numpy.load's values, in C order
for name, a in [
    ("fortran", np.asfortranarray(rng.standard_normal((2, 3, 4)).astype("<f4"))),
    ("transposed_i8", rng.integers(-2**40, 2**40, (5, 3), dtype="<i8").T),
    ("bigendian_f4", rng.standard_normal((3, 2)).astype(">f4")),
    ("bigendian_f8_fortran", np.asfortranarray(rng.standard_normal((4, 2)).astype(">f8"))),
    ("bigendian_i4", rng.integers(-2**31, 2**31, (7,), dtype="<i4").astype(">i4")),
]:
    npy_roundtrip(name, a, np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"))),
                  modes_for(a.dtype))

# np.save X.npy and y.npy, train on them in C: a Fortran-ordered X and a
# big-endian y through clt_load_npy_host and a shuffling data loader; each
# label must come out beside its own sample, every sample once
X = np.asfortranarray(rng.standard_normal((10, 2, 3)).astype("<f4"))
y = (np.arange(10, dtype="<i8") * 7 - 30).astype(">i8")
np.save(f"{tmp}/X.npy", X)
np.save(f"{tmp}/y.npy", y)
r = run("loader", f"{tmp}/X.npy", f"{tmp}/y.npy", f"{tmp}/Xb.npy", f"{tmp}/yb.npy")
if r.returncode != 0:
    failures.append(f"loader: {r.stderr.strip()}")
else:
    Xb, yb = np.load(f"{tmp}/Xb.npy"), np.load(f"{tmp}/yb.npy")
    order = [int(np.flatnonzero(y == v)[0]) for v in yb] if set(yb) == set(y) else None
    if order is None or sorted(order) != list(range(10)):
        failures.append(f"loader: labels {yb} are not a permutation of {y}")
    else:
        same("loader X", Xb, np.ascontiguousarray(X[order]))
        same("loader y", yb, y[order].astype("<i8"))
        if order == list(range(10)):
            failures.append("loader: the batches were not shuffled")

# what cltensor refuses, it refuses with a message
for name, a, needle in [
    ("int8", np.arange(3, dtype="i1"), "not supported"),
    ("complex", np.arange(3, dtype="<c8"), "not supported"),
    ("structured", np.zeros(3, dtype=[("a", "<f4")]), "structured"),
    ("npz", None, "zip archive"),
]:
    src = f"{tmp}/{name}.npy"
    if a is None:
        with open(src, "wb") as f:
            np.savez(f, a=np.arange(3))
    else:
        np.save(src, a)
    for mode in ("npy", "npyhost"):
        r = run(mode, src, f"{tmp}/{name}.out.npy")
        if r.returncode != 1 or needle not in r.stderr:
            failures.append(f"{mode} {name}: expected a refusal naming '{needle}', got "
                            f"{r.returncode}: {r.stderr.strip()}")

# safetensors: every dtype in one file, with metadata
src, dst = f"{tmp}/all.safetensors", f"{tmp}/all.out.safetensors"
save_file(tested, src, metadata={"format": "np", "note": "written by safetensors"})
r = run("safetensors", src, dst)
if r.returncode != 0:
    failures.append(f"safetensors: {r.stderr.strip()}")
else:
    back = load_file(dst)
    if sorted(back) != sorted(tested):
        failures.append(f"safetensors names: {sorted(back)} != {sorted(tested)}")
    for name, a in tested.items():
        if name in back:
            same(f"safetensors {name}", back[name], a)

# one dtype: the reference and cltensor order tensors alike, so the bytes match
one = {"b.weight": rng.standard_normal((3, 2)).astype("<f4"),
       "a.bias": rng.standard_normal((3,)).astype("<f4"),
       "a.weight": rng.standard_normal((3, 3)).astype("<f4")}
src, dst = f"{tmp}/one.safetensors", f"{tmp}/one.out.safetensors"
save_file(one, src)
r = run("safetensors", src, dst)
if r.returncode != 0:
    failures.append(f"safetensors one dtype: {r.stderr.strip()}")
else:
    with open(src, "rb") as f1, open(dst, "rb") as f2:
        if f1.read() != f2.read():
            failures.append("safetensors one dtype: cltensor's file differs from the reference's")

# optimizers' and schedules' checkpoints against torch's state_dict()s
try:
    import ast, warnings
    import torch
    from safetensors import safe_open
except ImportError as e:
    print("python_interop: no torch (" + str(e) + "): checkpoint settings not compared")
    torch = None

def metadata(path):
    """The values as Python reads them back; the kinds are plain names."""
    with safe_open(path, "np") as f:
        return {k: v if k in ("optimizer", "scheduler") else ast.literal_eval(v)
                for k, v in f.metadata().items()}

def compare(what, meta, want, kind_key, kind):
    if meta.get(kind_key) != kind:
        failures.append(f"{what}: {kind_key} is {meta.get(kind_key)!r}, want {kind!r}")
    shared = sorted((set(meta) & set(want)) - {"params"})
    for k in shared:
        if meta[k] != want[k] or type(meta[k]) is not type(want[k]) and not (
                isinstance(want[k], (int, float)) and not isinstance(want[k], bool)):
            failures.append(f"{what}: {k} is {meta[k]!r}, torch's {want[k]!r}")
    return shared

if torch is not None:
    warnings.simplefilter("ignore")
    optimizers = [
        ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=1e-4, nesterov=True)),
        ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.25, weight_decay=0.0, nesterov=False)),
        ("Adam", dict(lr=3e-4, betas=(0.85, 0.995), eps=1e-7, weight_decay=0.02,
                      amsgrad=True)),
        ("AdamW", dict(lr=0.1 + 0.2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                       amsgrad=False)),
    ]
    for kind, o in optimizers:
        args = [o["lr"], *(o["betas"] if "betas" in o else [o["momentum"], o["dampening"]]),
                o.get("eps", o["weight_decay"]), *([o["weight_decay"]] if "eps" in o else []),
                int(o.get("nesterov", o.get("amsgrad")))]
        path = f"{tmp}/{kind}.safetensors"
        r = run("optimizer", kind, path, *map(repr, args))
        if r.returncode != 0:
            failures.append(f"optimizer {kind}: {r.stderr.strip()}")
            continue
        p = torch.nn.Parameter(torch.ones(3))
        opt = getattr(torch.optim, kind)([p], **o)
        p.sum().backward()
        opt.step()
        group = opt.state_dict()["param_groups"][0]
        shared = compare(f"optimizer {kind}", metadata(path), group, "optimizer", kind)
        if len(shared) < len(o) + 1:
            failures.append(f"optimizer {kind}: only {shared} compared")
    schedules = [("StepLR", "step_size", "gamma", 3, 0.3, 7),
                 ("CosineAnnealingLR", "T_max", "eta_min", 10, 0.001, 4)]
    for kind, pk, fk, period, factor, epochs in schedules:
        path = f"{tmp}/{kind}.safetensors"
        r = run("schedule", kind, path, "0.1", str(period), repr(factor), str(epochs))
        if r.returncode != 0:
            failures.append(f"schedule {kind}: {r.stderr.strip()}")
            continue
        opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(3))], lr=0.1)
        sched = getattr(torch.optim.lr_scheduler, kind)(opt, period, factor)
        for _ in range(epochs):
            opt.step()
            sched.step()
        shared = compare(f"schedule {kind}", metadata(path), sched.state_dict(), "scheduler",
                         kind)
        if shared != sorted([pk, fk, "base_lrs", "last_epoch", "_step_count", "_last_lr",
                             "verbose", "_get_lr_called_within_step"]):
            failures.append(f"schedule {kind}: compared {shared}")
    print("python_interop: checkpoint settings compared with torch for",
          ", ".join(k for k, _ in optimizers), "and", ", ".join(s[0] for s in schedules))

for f in failures:
    print("python_interop: FAIL:", f)
print(f"python_interop: {len(tested)} arrays through .npy and safetensors,",
      f"{len(arrays) + len(extra)} through host memory, a loader over .npy files:",
      "all equal" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
PYEOF
