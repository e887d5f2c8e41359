#!/bin/sh
# python_interop.sh: files written by Python (numpy.save, numpy.savez,
# numpy.savez_compressed, safetensors.numpy.save_file and torch.save's
# state_dicts, views of shared storages included) are read by cltensor
# and written back
# (tests/io_roundtrip), through the device and through host memory, and
# Python checks that values, dtypes and shapes came back unchanged
# (big-endian and Fortran-ordered .npy files too, in C order), that a
# data loader over .npy files read into host memory keeps each label with
# its sample, that a one-dtype safetensors file comes back byte for byte,
# and that what cltensor refuses (uint16, structured) it refuses
# with a message.  With torch too, the settings cltensor writes in an
# optimizer's and a schedule's checkpoint (__metadata__) equal, key by
# key, torch's param_groups[0] and scheduler.state_dict() for the same
# settings; torch's load_state_dict takes what cltensor writes and goes on
# as cltensor does (to float32 rounding; schedules to a few units in the
# last place, torch's chainable form against cltensor's closed form;
# OneCycleLR and ReduceLROnPlateau, which have none, bit for bit), and
# cltensor loads what torch writes (state cast to float64 too) and resumes
# with the bits of its uninterrupted run; two schedules made one after the
# other on one optimizer (initial_lr, torch's chainable form) and
# OneCycleLR cycling momentum go on with torch's rates and momenta bit for
# bit, resumed both ways; so do ConstantLR, PolynomialLR,
# CosineAnnealingWarmRestarts (after a fractional epoch too) and
# SequentialLR (its schedules' state_dicts nested in torch's, flat in ours)
# (skipped, saying so, without torch); SGD with momentum and AdamW over
# two parameter groups go both ways, their param_groups key by key as
# torch's; a torch model's state_dict loads
# into the same cltensor model (clt_module_load_torch) and gives torch's
# outputs, and torch's load_state_dict(strict=True) takes the models
# cltensor saves (clt_module_save_torch), storages 64-byte aligned; LBFGS
# (both line searches, float64 and float32) steps a logistic regression as
# torch's does, and its state goes through torch and back; torch's
# general checkpoint ({'epoch', 'model_state_dict', 'optimizer_state_dict',
# 'loss'}) of every optimizer kind goes both ways (LBFGS's through
# io_roundtrip lbfgs, torch's layout but for 'al'; SparseAdam's through
# io_roundtrip sparseadam, bit for bit): torch loads
# cltensor's with the recipe's code (torch's keys, types and layout) and
# goes on as torch does, and cltensor loads torch's (before any step and
# after 3, its loss a tensor) and goes on the same (io_roundtrip general);
# a schedule's state_dict beside them, every kind in one run (io_roundtrip
# gsched): ours from torch's after 3 epochs, torch's from ours, both going on
# to torch's rates, ours with torch's keys, order and value types.  Skips
# (exit 77), saying why, without a Python that has numpy and safetensors:
# set PYTHON to choose one.
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
import subprocess, sys, zipfile
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
    "int8": rng.integers(-128, 128, (6, 2), dtype="i1"),
    "int16": rng.integers(-2**15, 2**15, (3, 5), dtype="<i2"),
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

# complex arrays (numpy's <c8 and <c16, NaN and inf parts among them) through
# a device tensor and through host memory, back as numpy wrote them
for cdt in ("<c8", "<c16"):
    src = f"{tmp}/complex{cdt[-2:]}.npy"
    a = (np.arange(6) - 2.5 + 1j * np.array([0.5, -1, np.inf, 0, np.nan, 3])).astype(cdt)
    a = a.reshape(2, 3)
    np.save(src, a)
    for mode in ("npy", "npyhost"):
        dst = f"{tmp}/complex{cdt[-2:]}.{mode}.out.npy"
        r = run(mode, src, dst)
        if r.returncode != 0:
            failures.append(f"{mode} complex {cdt}: {r.stderr.strip()}")
        else:
            got = np.load(dst)
            part = "<f4" if cdt == "<c8" else "<f8"
            if got.dtype != a.dtype or got.shape != a.shape or not np.array_equal(
                    got.view(part), a.view(part), equal_nan=True):
                failures.append(f"{mode} complex {cdt}: got {got!r}, want {a!r}")

# what cltensor refuses, it refuses with a message
for name, a, needle in [
    ("uint16", np.arange(3, dtype="<u2"), "not supported"),
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

# .npz: numpy.savez and numpy.savez_compressed write, cltensor reads
# (clt_load_npz) and writes back (clt_save_npz, stored and deflated), and
# numpy.load reads the same names, in order, with the same arrays
npz_arrays = {**tested, "big": np.arange(6, dtype=">f8").reshape(2, 3),
              "fortran": np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3))}
npz_arrays = {k: v for k, v in npz_arrays.items() if str(v.dtype.newbyteorder("=")) in held}
for save in (np.savez, np.savez_compressed):
    src = f"{tmp}/{save.__name__}.npz"
    save(src, **npz_arrays)
    for comp in ("0", "1"):
        dst = f"{tmp}/{save.__name__}.{comp}.out.npz"
        r = run("npz", src, dst, comp)
        if r.returncode != 0:
            failures.append(f"npz {save.__name__}: {r.stderr.strip()}")
            continue
        with np.load(dst) as z:
            if z.files != list(npz_arrays):
                failures.append(f"npz {save.__name__}: names {z.files}, want {list(npz_arrays)}")
            for k, v in npz_arrays.items():
                if k in z.files:
                    same(f"npz {save.__name__} -> {comp}: {k}", z[k],
                         v.astype(v.dtype.newbyteorder("<")) if v.dtype.byteorder == ">" else v)
print(f"python_interop: {len(npz_arrays)} arrays through numpy.savez and "
      "numpy.savez_compressed, back stored and deflated")

# optimizers' and schedules' checkpoints against torch's state_dict()s
try:
    import ast, collections, warnings
    import torch
    from safetensors import safe_open
except ImportError as e:
    print("python_interop: no torch (" + str(e) + "): checkpoint settings not compared")
    torch = None

def raw_metadata(path):
    with safe_open(path, "np") as f:
        return f.metadata()

def literal(k, v):
    """A value as torch holds it: MultiStepLR's milestones are a Counter."""
    if k in ("optimizer", "scheduler") or k.endswith(".scheduler"):  # SequentialLR's
        return v
    if k == "milestones":
        assert v.startswith("Counter(") and v.endswith(")"), v
        return collections.Counter(ast.literal_eval(v[8:-1] or "{}"))
    if v in ("inf", "-inf"):  # ReduceLROnPlateau's best and mode_worse
        return float(v)
    return ast.literal_eval(v)

def metadata(path):
    """The values as Python reads them back; the kinds are plain names."""
    return {k: literal(k, v) for k, v in raw_metadata(path).items()}

def compare(what, meta, want, kind_key, kind, close=()):
    """Key by key; those in close (torch's chainable rates) to 4 ulp."""
    if meta.get(kind_key) != kind:
        failures.append(f"{what}: {kind_key} is {meta.get(kind_key)!r}, want {kind!r}")
    shared = sorted((set(meta) & set(want)) - {"params"})
    for k in shared:
        if k in close:
            if not all(abs(a - b) <= 4 * 2.0**-52 * abs(b) for a, b in zip(meta[k], want[k])):
                failures.append(f"{what}: {k} is {meta[k]!r}, torch's {want[k]!r}")
        elif meta[k] != want[k] or type(meta[k]) is not type(want[k]) and not (
                isinstance(want[k], (int, float)) and not isinstance(want[k], bool)):
            failures.append(f"{what}: {k} is {meta[k]!r}, torch's {want[k]!r}")
    return shared

# The order in which io_roundtrip takes each kind's settings.
ORDER = {"SGD": ["lr", "momentum", "dampening", "weight_decay", "nesterov"],
         "Adam": ["lr", "betas", "eps", "weight_decay", "amsgrad"],
         "AdamW": ["lr", "betas", "eps", "weight_decay", "amsgrad"],
         "RMSprop": ["lr", "alpha", "eps", "weight_decay", "momentum", "centered"],
         "Adagrad": ["lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"],
         "Adamax": ["lr", "betas", "eps", "weight_decay"],
         "NAdam": ["lr", "betas", "eps", "weight_decay", "momentum_decay"],
         "RAdam": ["lr", "betas", "eps", "weight_decay"],
         "Adadelta": ["lr", "rho", "eps", "weight_decay"],
         "Rprop": ["lr", "etas", "step_sizes"],
         "ASGD": ["lr", "lambd", "alpha", "t0", "weight_decay"]}
DEFAULTS = {"SGD": dict(lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                        nesterov=False),
            "Adam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                         amsgrad=False),
            "AdamW": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                          amsgrad=False),
            "RMSprop": dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                            centered=False),
            "Adagrad": dict(lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                            initial_accumulator_value=0.0, eps=1e-10),
            "Adamax": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0),
            "NAdam": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                          momentum_decay=4e-3),
            "RAdam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0),
            "Adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0),
            "Rprop": dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)),
            "ASGD": dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0)}

def c_args(kind, o):
    out = []
    for k in ORDER[kind]:
        v = o[k]
        out += [repr(x) for x in v] if isinstance(v, tuple) else [repr(int(v) if isinstance(
            v, bool) else v)]
    return out

if torch is not None:
    warnings.simplefilter("ignore")
    optimizers = [
        ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=1e-4, nesterov=True)),
        ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.25, weight_decay=0.0, nesterov=False)),
        ("Adam", dict(lr=3e-4, betas=(0.85, 0.995), eps=1e-7, weight_decay=0.02,
                      amsgrad=True)),
        ("AdamW", dict(lr=0.1 + 0.2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                       amsgrad=False)),
        ("RMSprop", dict(lr=0.02, alpha=0.9, eps=1e-6, weight_decay=0.01, momentum=0.5,
                         centered=True)),
        ("RMSprop", dict(lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                         centered=False)),
        ("Adagrad", dict(lr=0.05, lr_decay=0.1, weight_decay=0.01,
                         initial_accumulator_value=0.25, eps=1e-8)),
        ("Adamax", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01)),
        ("NAdam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01,
                       momentum_decay=0.01)),
        # beta2 0.9 rectifies RAdam from step 6: the resumed steps cross over
        ("RAdam", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.01)),
        ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.01)),
        ("Rprop", dict(lr=0.05, etas=(0.4, 1.3), step_sizes=(1e-3, 0.2))),
        # t0 2: the average starts moving at step 4, inside the resumed steps
        ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.6, t0=2.0, weight_decay=0.01)),
    ]
    for kind, o in optimizers:
        path = f"{tmp}/{kind}.safetensors"
        r = run("optimizer", kind, path, *c_args(kind, o))
        if r.returncode != 0:
            failures.append(f"optimizer {kind}: {r.stderr.strip()}")
            continue
        p = torch.nn.Parameter(torch.ones(3))
        opt = getattr(torch.optim, kind)([p], **o)
        p.sum().backward()
        opt.step()
        group = opt.state_dict()["param_groups"][0]
        shared = compare(f"optimizer {kind}", metadata(path), group, "optimizer", kind)
        if len(shared) < len(o) + ("maximize" in group):
            failures.append(f"optimizer {kind}: only {shared} compared")
    # (kind, torch's arguments, io_roundtrip's PERIOD FACTOR [EXTRA], epochs)
    schedules = [("StepLR", dict(step_size=3, gamma=0.3), ["3", "0.3"], 7),
                 ("CosineAnnealingLR", dict(T_max=10, eta_min=0.001), ["10", "0.001"], 4),
                 ("ExponentialLR", dict(gamma=0.9), ["0", "0.9"], 8),
                 ("MultiStepLR", dict(milestones=[5, 2, 5], gamma=0.1), ["0", "0.1", "5,2,5"],
                  6),
                 ("LinearLR", dict(start_factor=0.25, end_factor=0.75, total_iters=4),
                  ["4", "0.25", "0.75"], 5)]
    closed_form = {"ExponentialLR", "MultiStepLR", "LinearLR"}
    for kind, kw, cargs, epochs in schedules:
        path = f"{tmp}/{kind}.safetensors"
        r = run("schedule", kind, path, "0.1", cargs[0], cargs[1], str(epochs), *cargs[2:])
        if r.returncode != 0:
            failures.append(f"schedule {kind}: {r.stderr.strip()}")
            continue
        opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(3))], lr=0.1)
        sched = getattr(torch.optim.lr_scheduler, kind)(opt, **kw)
        for _ in range(epochs):
            opt.step()
            sched.step()
        want = sched.state_dict()
        close = ("_last_lr",) if kind in closed_form else ()
        shared = compare(f"schedule {kind}", metadata(path), want, "scheduler", kind, close)
        if shared != sorted([*kw, "base_lrs", "last_epoch", "_step_count", "_last_lr",
                             "verbose", "_get_lr_called_within_step"]):
            failures.append(f"schedule {kind}: compared {shared}")
        if "milestones" in kw and raw_metadata(path)["milestones"] != repr(want["milestones"]):
            failures.append(f"schedule {kind}: milestones {raw_metadata(path)['milestones']} "
                            f"is not torch's {want['milestones']!r}")

        # torch loads ours and goes on as we do; we load torch's and go on as it does
        more = 4
        r = run("schedresume", kind, path, str(more))
        ours = [float(x) for x in r.stdout.split()] if r.returncode == 0 else None
        if ours is None:
            failures.append(f"schedresume {kind}: {r.stderr.strip()}")
            continue
        t_opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(3))], lr=0.1)
        t_sched = getattr(torch.optim.lr_scheduler, kind)(t_opt, **kw)
        t_sched.load_state_dict({k: v for k, v in metadata(path).items() if k != "scheduler"})
        t_opt.param_groups[0]["lr"] = t_sched.get_last_lr()[0]  # the optimizer's file has it
        theirs_path = f"{tmp}/{kind}.torch.safetensors"
        save_file({}, theirs_path, metadata={"scheduler": kind, **{
            k: repr(v) for k, v in sched.state_dict().items()}})
        r = run("schedresume", kind, theirs_path, str(more))
        from_torch = [float(x) for x in r.stdout.split()] if r.returncode == 0 else None
        if from_torch is None:
            failures.append(f"schedresume {kind} from torch's file: {r.stderr.strip()}")
            continue
        for e in range(more):
            t_opt.step()
            t_sched.step()
            sched.step()
            got, want_lr = t_opt.param_groups[0]["lr"], opt.param_groups[0]["lr"]
            exact = sched._get_closed_form_lr()[0]  # ours, bit for bit
            if abs(got - ours[e]) > 4 * 2.0**-52 * abs(got) or abs(want_lr - from_torch[e]) > (
                    4 * 2.0**-52 * abs(want_lr)) or from_torch[e] != exact:
                failures.append(f"schedule {kind}, epoch {epochs + 1 + e}: torch from our file "
                                f"{got!r}, ours {ours[e]!r}; ours from torch's file "
                                f"{from_torch[e]!r}, torch {want_lr!r} (closed form {exact!r})")

    # OneCycleLR (cycle_momentum=False: cltensor cycles no momentum) and
    # ReduceLROnPlateau, stepped on the metric 1 / (1 + epoch % 4): no
    # chainable form, so every rate is torch's bit for bit, both ways.
    # (kind, torch's arguments, io_roundtrip's PERIOD FACTOR EXTRA, epochs
    # saved at, epochs after)
    def metric(e):
        return 1.0 / (1 + e % 4)

    new_schedules = [
        ("OneCycleLR", dict(max_lr=0.2, total_steps=12, pct_start=0.25, anneal_strategy="linear",
                            div_factor=10.0, final_div_factor=100.0, three_phase=True),
         ["12", "0.2", "0.25,linear,10,100,1"], 4, 7),
        ("OneCycleLR", dict(max_lr=0.5, total_steps=20), ["20", "0.5", "0.3,cos,25,10000,0"], 7,
         13),
        ("ReduceLROnPlateau", dict(mode="min", factor=0.5, patience=1, threshold=0.1,
                                   threshold_mode="abs", cooldown=1, min_lr=0.01, eps=1e-8),
         ["1", "0.5", "min,0.1,abs,1,0.01,1e-8"], 5, 12),
        ("ReduceLROnPlateau", dict(mode="max", factor=0.3, patience=2),
         ["2", "0.3", "max,0.0001,rel,0,0,1e-8"], 6, 12),
        # CyclicLR: saved mid-cycle, resumed over more than two cycles
        ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=2,
                          mode="triangular2"), ["3", "0.1", "0.01,2,triangular2,1.0"], 7, 12),
        ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, step_size_up=4, mode="exp_range",
                          gamma=0.9), ["4", "0.01", "0.001,-1,exp_range,0.9"], 5, 17),
    ]
    for kind, kw, cargs, epochs, more in new_schedules:
        tag = f"{kind} {cargs[2]}"
        path = f"{tmp}/{kind}-{cargs[0]}.safetensors"
        plateau = kind == "ReduceLROnPlateau"
        if not plateau:
            kw = dict(kw, cycle_momentum=False)

        def make(lr):
            o = torch.optim.SGD([torch.nn.Parameter(torch.ones(3))], lr=lr)
            return o, getattr(torch.optim.lr_scheduler, kind)(o, **kw)

        def step(sch, e):
            if plateau:
                sch.step(metric(e))
            else:
                sch.step()

        r = run("schedule", kind, path, "0.1", cargs[0], cargs[1], str(epochs), cargs[2])
        if r.returncode != 0:
            failures.append(f"schedule {tag}: {r.stderr.strip()}")
            continue
        opt, sched = make(0.1)
        for e in range(epochs):
            opt.step()
            step(sched, e)
        want = sched.state_dict()
        shared = compare(f"schedule {tag}", metadata(path), want, "scheduler", kind)
        # a bound method: ours is anneal_strategy; CyclicLR's weak reference
        # to its own method, which torch 1.13 cannot save either
        expect = set(want) - {"anneal_func", "_scale_fn_ref"}
        if set(shared) != expect:
            failures.append(f"schedule {tag}: compared {shared}, torch has {sorted(expect)}")
        at_save = opt.param_groups[0]["lr"]
        t_opt, t_sched = make(0.1)
        t_sched.load_state_dict({k: v for k, v in metadata(path).items() if k != "scheduler"})
        t_opt.param_groups[0]["lr"] = at_save  # the optimizer's file has it
        theirs_path = f"{tmp}/{kind}-{cargs[0]}.torch.safetensors"
        save_file({}, theirs_path, metadata={"scheduler": kind, **{
            k: repr(v) for k, v in want.items() if k != "_scale_fn_ref"}})
        r = run("schedresume", kind, path, str(more), repr(at_save))
        ours = [float(x) for x in r.stdout.split()] if r.returncode == 0 else None
        # torch's file has no max_lr and min_lr (torch keeps them in the
        # optimizer): the schedule is made with the run's settings, as in torch
        r2 = run("schedresume", kind, theirs_path, str(more), repr(at_save), *cargs)
        from_torch = [float(x) for x in r2.stdout.split()] if r2.returncode == 0 else None
        if ours is None or from_torch is None:
            failures.append(f"schedresume {tag}: {r.stderr.strip()} {r2.stderr.strip()}")
            continue
        changes = 0
        for e in range(more):
            before = opt.param_groups[0]["lr"]
            for o, sch in ((opt, sched), (t_opt, t_sched)):
                o.step()
                step(sch, epochs + e)
            want_lr, got = opt.param_groups[0]["lr"], t_opt.param_groups[0]["lr"]
            changes += want_lr != before
            if not want_lr == got == ours[e] == from_torch[e]:
                failures.append(f"schedule {tag}, epoch {epochs + 1 + e}: torch {want_lr!r}, "
                                f"torch from our file {got!r}, ours {ours[e]!r}, ours from "
                                f"torch's file {from_torch[e]!r}")
        if changes < 2:
            failures.append(f"schedule {tag}: the rate changed {changes} times after resuming")

    # The warm-up schedules and SequentialLR (LinearLR(0.1, 1.0, M), then
    # CosineAnnealingLR(6, eta_min) from milestone M): our file's keys are
    # torch's state_dict's (SequentialLR's schedules' under
    # "_schedulers.I.KEY", which torch nests in a list), torch loads ours and
    # we load torch's, and both go on with torch's rates: bit for bit where
    # torch's arithmetic is ours (warm restarts; SequentialLR's schedules in
    # torch's chainable form), to 4 ulp for ConstantLR and PolynomialLR alone
    # (our closed form against torch's chainable one).
    def nest(meta):
        """Our SequentialLR's flat keys as torch's state_dict nests them."""
        out, subs = {}, {}
        for k, v in meta.items():
            if k.startswith("_schedulers."):
                _, i, key = k.split(".", 2)
                subs.setdefault(int(i), {})[key] = v
            else:
                out[k] = v
        if subs:
            out["_schedulers"] = [subs[i] for i in range(len(subs))]
        return out

    def flat(sched):
        """torch's state_dict as our file holds it."""
        md = {"scheduler": type(sched).__name__}
        for k, v in sched.state_dict().items():
            if k == "_schedulers":
                for i, (sub, d) in enumerate(zip(sched._schedulers, v)):
                    md[f"_schedulers.{i}.scheduler"] = type(sub).__name__
                    md.update({f"_schedulers.{i}.{kk}": repr(vv) for kk, vv in d.items()})
            else:
                md[k] = repr(v)
        return md

    def warm_make(kind, kw, extra, lr):
        o = torch.optim.SGD([torch.nn.Parameter(torch.ones(3))], lr=lr)
        if kind == "SequentialLR":
            subs = [torch.optim.lr_scheduler.LinearLR(o, 0.1, 1.0, kw["M"]),
                    torch.optim.lr_scheduler.CosineAnnealingLR(o, 6, kw["eta_min"])]
            return o, torch.optim.lr_scheduler.SequentialLR(o, subs, [kw["M"]])
        sch = getattr(torch.optim.lr_scheduler, kind)(o, **kw)
        if extra and "," in extra:
            sch.step(float(extra.split(",")[1]))
        return o, sch

    warmups = [("ConstantLR", dict(factor=0.25, total_iters=4), ["4", "0.25", ""], 2, 5),
               ("PolynomialLR", dict(total_iters=6, power=2.0), ["6", "2.0", ""], 3, 5),
               ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001),
                ["3", "0.001", "2"], 4, 12),
               ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001),
                ["3", "0.001", "2,4.5"], 2, 12),
               ("SequentialLR", dict(M=4, eta_min=0.001), ["4", "0.001", ""], 2, 10),
               ("SequentialLR", dict(M=4, eta_min=0.001), ["4", "0.001", ""], 7, 8)]
    for kind, kw, cargs, epochs, more in warmups:
        tag = f"{kind} {cargs[2]} at {epochs}"
        path = f"{tmp}/w-{kind}.safetensors"
        args = [x for x in cargs if x]
        r = run("schedule", kind, path, "0.1", *args[:2], str(epochs), *args[2:])
        if r.returncode != 0:
            failures.append(f"schedule {tag}: {r.stderr.strip()}")
            continue
        opt, sched = warm_make(kind, kw, cargs[2], 0.1)
        for e in range(epochs):
            opt.step()
            sched.step()
        want = sched.state_dict()
        meta = nest(metadata(path))
        exact = kind in ("CosineAnnealingWarmRestarts", "SequentialLR")
        shared = compare(f"schedule {tag}", {k: v for k, v in meta.items() if k != "_schedulers"},
                         {k: v for k, v in want.items() if k != "_schedulers"}, "scheduler", kind,
                         () if exact else ("_last_lr",))
        if set(shared) != set(want) - {"_schedulers"}:
            failures.append(f"schedule {tag}: compared {shared}, torch has {sorted(want)}")
        for i, d in enumerate(want.get("_schedulers", [])):
            mine = {k: v for k, v in meta["_schedulers"][i].items() if k != "scheduler"}
            if mine != d:
                failures.append(f"schedule {tag}: schedule {i} {mine} is not torch's {d}")
        at_save = opt.param_groups[0]["lr"]
        t_opt, t_sched = warm_make(kind, kw, None, 0.1)
        t_sched.load_state_dict({k: v for k, v in meta.items() if k != "scheduler"})
        t_opt.param_groups[0]["lr"] = at_save  # the optimizer's file has it
        theirs_path = f"{tmp}/w-{kind}.torch.safetensors"
        save_file({}, theirs_path, metadata=flat(sched))
        extra = [cargs[2].split(",")[0]] if cargs[2] else []
        r = run("schedresume", kind, path, str(more), repr(at_save), *args[:2], *extra)
        ours = [float(x) for x in r.stdout.split()] if r.returncode == 0 else None
        r2 = run("schedresume", kind, theirs_path, str(more), repr(at_save), *args[:2], *extra)
        from_torch = [float(x) for x in r2.stdout.split()] if r2.returncode == 0 else None
        if ours is None or from_torch is None:
            failures.append(f"schedresume {tag}: {r.stderr.strip()} {r2.stderr.strip()}")
            continue
        changes = 0
        for e in range(more):
            before = opt.param_groups[0]["lr"]
            for o, sch in ((opt, sched), (t_opt, t_sched)):
                o.step()
                sch.step()
            want_lr, got = opt.param_groups[0]["lr"], t_opt.param_groups[0]["lr"]
            changes += want_lr != before
            tol = 0 if exact else 4 * 2.0**-52 * abs(want_lr)
            if not (want_lr == got and abs(ours[e] - want_lr) <= tol and
                    abs(from_torch[e] - want_lr) <= tol):
                failures.append(f"schedule {tag}, epoch {epochs + 1 + e}: torch {want_lr!r}, "
                                f"torch from our file {got!r}, ours {ours[e]!r}, ours from "
                                f"torch's file {from_torch[e]!r}")
        if changes < (1 if kind == "ConstantLR" else 2):  # ConstantLR's one change
            failures.append(f"schedule {tag}: the rate changed {changes} times after resuming")
    print("python_interop: checkpoint settings compared with torch for",
          ", ".join(k for k, _ in optimizers), "and",
          ", ".join(s[0] for s in schedules + new_schedules + warmups))

    # An optimizer's state both ways: cltensor steps 3 times and saves; torch
    # loads that (load_state_dict) and takes 3 more steps, which must come
    # out as cltensor's 6 uninterrupted ones (float32 rounding apart); torch
    # writes what it loaded back in cltensor's format, as it holds it and
    # cast to float64, and cltensor resumes from each with the bits of its
    # uninterrupted run.
    def loss_backward(p):
        (p ** 3 / 3 + p ** 2).sum().backward()

    def group_metas(meta):
        """Our file's param_groups, in order: group 0's keys as they are, the
        others' under "param_groups.G."."""
        groups = [{k: v for k, v in meta.items()
                   if k != "optimizer" and not k.startswith("param_groups.")}]
        while any(k.startswith(f"param_groups.{len(groups)}.") for k in meta):
            pre = f"param_groups.{len(groups)}."
            groups.append({k[len(pre):]: v for k, v in meta.items() if k.startswith(pre)})
        return groups

    def torch_state_dict(opt, path, kind):
        """Our file as torch's state_dict, into opt's param_groups."""
        t, metas = load_file(path), group_metas(metadata(path))
        groups = [dict(g, **{k: v for k, v in m.items() if k in g})
                  for g, m in zip(opt.state_dict()["param_groups"], metas)]
        state = {}
        for name, a in t.items():
            if name.startswith("state."):
                _, i, key = name.split(".", 2)
                state.setdefault(int(i), {})[key] = torch.from_numpy(a.copy())
        for i in state:
            if kind != "SGD":
                step = int(t["step"][i])
                state[i]["step"] = (torch.tensor(float(step))
                                    if kind not in ("RMSprop", "Rprop") else step)
        return {"state": state, "param_groups": groups}

    def our_file(opt, kind, path, steps, dtype=None):
        """torch's state_dict in our format (steps: what SGD does not count)."""
        sd = opt.state_dict()
        tensors = {}
        for i, st in sd["state"].items():
            for k, v in st.items():
                if k != "step" and v is not None:  # SGD's momentum_buffer without momentum
                    tensors[f"state.{i}.{k}"] = v.numpy().astype(dtype or v.numpy().dtype)
        ids = [i for g in sd["param_groups"] for i in g["params"]]
        counts = [int(sd["state"].get(i, {}).get("step", steps)) for i in ids]
        tensors["step"] = np.array(counts, dtype="<i8")
        tensors["steps"] = np.array(max(counts), dtype="<i8")
        tensors["lr_bits"] = np.array(sd["param_groups"][0]["lr"], dtype="<f8").view("<i8")
        meta = {"optimizer": kind}
        for g, group in enumerate(sd["param_groups"]):
            pre = f"param_groups.{g}." if g else ""
            meta.update({pre + k: repr(v) for k, v in group.items()
                         if k not in ("foreach", "differentiable")})
        save_file(tensors, path, metadata=meta)

    # Two schedules made one after the other on one optimizer (no
    # ChainedScheduler): LinearLR(0.5, 1.0, 4), then StepLR(2, 0.5), whose
    # base_lrs is the group's initial_lr and whose factors multiply with
    # LinearLR's (torch's chainable form).  Ours and torch's rates, files
    # and resumed runs agree bit for bit, both ways.
    def chain_torch(lr):
        o = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=lr)
        return o, (torch.optim.lr_scheduler.LinearLR(o, 0.5, 1.0, 4),
                   torch.optim.lr_scheduler.StepLR(o, 2, 0.5))

    def chain_step(o, ss):
        o.step()
        for sch in ss:
            sch.step()
        return o.param_groups[0]["lr"]

    r = run("chain", "save", f"{tmp}/chain", "5")
    if r.returncode != 0:
        failures.append(f"chain: {r.stderr.strip()}")
    else:
        c_opt, c_s = chain_torch(0.1)
        want = [chain_step(c_opt, c_s) for _ in range(5)]
        got = [float(x) for x in r.stdout.split()]
        if got != want:
            failures.append(f"chain: rates {got}, torch's {want}")
        group = c_opt.state_dict()["param_groups"][0]
        meta = metadata(f"{tmp}/chain.optim.safetensors")
        shared = compare("chain optimizer", meta, group, "optimizer", "SGD")
        if "initial_lr" not in shared or group["initial_lr"] != 0.1:
            failures.append(f"chain optimizer: initial_lr not compared ({shared})")
        for k, sch in enumerate(c_s):
            sd = sch.state_dict()
            compare(f"chain schedule {k}", metadata(f"{tmp}/chain.s{k + 1}.safetensors"), sd,
                    "scheduler", type(sch).__name__)
        # torch from our files (the optimizer's group as ours holds it,
        # initial_lr included); ours from torch's
        r_opt, r_s = chain_torch(1e-3)
        r_opt.load_state_dict({"state": {}, "param_groups": [dict(
            {k: v for k, v in meta.items() if k != "optimizer"}, params=[0])]})
        for k, sch in enumerate(r_s):
            sch.load_state_dict({k2: v for k2, v in metadata(
                f"{tmp}/chain.s{k + 1}.safetensors").items() if k2 != "scheduler"})
        our_file(c_opt, "SGD", f"{tmp}/tchain.optim.safetensors", 5)
        for k, sch in enumerate(c_s):
            save_file({}, f"{tmp}/tchain.s{k + 1}.safetensors", metadata={
                "scheduler": type(sch).__name__,
                **{k2: repr(v) for k2, v in sch.state_dict().items()}})
        r1 = run("chain", "load", f"{tmp}/chain", "6")
        r2 = run("chain", "load", f"{tmp}/tchain", "6")
        if r1.returncode != 0 or r2.returncode != 0:
            failures.append(f"chain resumed: {r1.stderr.strip()} {r2.stderr.strip()}")
        else:
            ours, from_torch = r1.stdout.split(), r2.stdout.split()
            for e in range(6):
                a, b = chain_step(c_opt, c_s), chain_step(r_opt, r_s)
                if not a == b == float(ours[e]) == float(from_torch[e]):
                    failures.append(f"chain, epoch {6 + e}: torch {a!r}, torch from our files "
                                    f"{b!r}, ours from our files {ours[e]}, ours from torch's "
                                    f"{from_torch[e]}")
            if len(set(want + [chain_step(c_opt, c_s)])) < 4:
                failures.append("chain: the rate hardly changed")
            print("python_interop: LinearLR then StepLR on one optimizer: rates, files "
                  "(initial_lr) and runs resumed both ways as torch's")

    resumed = []
    for kind, o in optimizers:
        tag = f"{tmp}/{kind}-{len(resumed)}"
        r1 = run("resume", kind, "3", "-", "-", f"{tag}.a", *c_args(kind, o))
        r2 = run("resume", kind, "6", "-", "-", f"{tag}.u", *c_args(kind, o))
        if r1.returncode != 0 or r2.returncode != 0:
            failures.append(f"resume {kind}: {r1.stderr.strip()} {r2.stderr.strip()}")
            continue
        p = torch.nn.Parameter(torch.from_numpy(load_file(f"{tag}.a.param.safetensors")["p"]))
        opt = getattr(torch.optim, kind)([p], **DEFAULTS[kind])
        opt.load_state_dict(torch_state_dict(opt, f"{tag}.a.optim.safetensors", kind))
        for k, v in o.items():
            if opt.param_groups[0][k] != v:
                failures.append(f"resume {kind}: torch loaded {k} = "
                                f"{opt.param_groups[0][k]!r}, the file holds {v!r}")
        our_file(opt, kind, f"{tag}.b32.safetensors", 3)
        our_file(opt, kind, f"{tag}.b64.safetensors", 3, "<f8")
        for _ in range(3):
            opt.zero_grad()
            loss_backward(p)
            opt.step()
        want = load_file(f"{tag}.u.param.safetensors")["p"]
        if not np.allclose(p.detach().numpy(), want, rtol=1e-5, atol=1e-6):
            failures.append(f"resume {kind}: torch from our file ends at "
                            f"{p.detach().numpy()}, our uninterrupted run at {want}")
        if kind == "ASGD":  # the averaged parameters, which the parameters never read
            ax = load_file(f"{tag}.u.optim.safetensors")["state.0.ax"]
            if not np.allclose(opt.state[p]["ax"].numpy(), ax, rtol=1e-5, atol=1e-6):
                failures.append(f"resume ASGD: torch's ax {opt.state[p]['ax'].numpy()}, "
                                f"ours {ax}")
        for b in ("b32", "b64"):
            r = run("resume", kind, "3", f"{tag}.a.param.safetensors", f"{tag}.{b}.safetensors",
                    f"{tag}.{b}", *c_args(kind, DEFAULTS[kind]))
            if r.returncode != 0:
                failures.append(f"resume {kind} from torch's file ({b}): {r.stderr.strip()}")
                continue
            with open(f"{tag}.{b}.param.safetensors", "rb") as f1, \
                    open(f"{tag}.u.param.safetensors", "rb") as f2:
                if f1.read() != f2.read():
                    failures.append(f"resume {kind} from torch's file ({b}): not the bits of "
                                    "the uninterrupted run")
        resumed.append(kind)
    print("python_interop: optimizer state through torch and back, resumed bit for bit:",
          ", ".join(resumed))

    # Two parameter groups both ways: SGD with momentum in one group only,
    # AdamW without weight decay in the second, under StepLR(2, 0.5).  Our
    # file's param_groups (group 0's keys as they are, the others under
    # "param_groups.G.", params numbered across the groups) equal torch's
    # key by key, and our schedule's file (base_lrs and _last_lr one per
    # group) torch's state_dict; torch loads them into an optimizer made
    # with the same groups and the defaults and goes on as ours (float32
    # rounding apart, the rates exactly); ours loads torch's back and
    # resumes with the bits of the uninterrupted run.
    GROUPS = {"SGD": [dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=0.01,
                           nesterov=False),
                      dict(lr=0.1, momentum=0.5, dampening=0.25, weight_decay=0.0,
                           nesterov=False)],
              "AdamW": [dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                             amsgrad=False),
                        dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.0,
                             amsgrad=False)]}

    grouped = []
    for kind, gs in GROUPS.items():
        tag = f"{tmp}/groups-{kind}"
        r1 = run("groups", kind, "3", "-", "-", "-", f"{tag}.a")
        r2 = run("groups", kind, "6", "-", "-", "-", f"{tag}.u")
        if r1.returncode != 0 or r2.returncode != 0:
            failures.append(f"groups {kind}: {r1.stderr.strip()} {r2.stderr.strip()}")
            continue
        start = load_file(f"{tag}.a.param.safetensors")
        pa = torch.nn.Parameter(torch.from_numpy(start["a"].copy()))
        pb = torch.nn.Parameter(torch.from_numpy(start["b"].copy()))
        ref = getattr(torch.optim, kind)([dict(params=[pa], **gs[0]), dict(params=[pb], **gs[1])])
        ref_s = torch.optim.lr_scheduler.StepLR(ref, 2, 0.5)
        for _ in range(3):
            ref.step()
            ref_s.step()
        compare(f"groups {kind} schedule", metadata(f"{tag}.a.sched.safetensors"),
                ref_s.state_dict(), "scheduler", "StepLR")
        if len(ref_s.state_dict()["base_lrs"]) != 2:
            failures.append(f"groups {kind}: torch's base_lrs {ref_s.state_dict()['base_lrs']}")
        metas = group_metas(metadata(f"{tag}.a.optim.safetensors"))
        if len(metas) != 2:
            failures.append(f"groups {kind}: {len(metas)} groups in our file")
        for g, (m, want) in enumerate(zip(metas, ref.state_dict()["param_groups"])):
            shared = compare(f"groups {kind}, group {g}", dict(m, optimizer=kind), want,
                             "optimizer", kind)
            if len(shared) < len(gs[g]) + 1 or m.get("params") != want["params"]:
                failures.append(f"groups {kind}, group {g}: only {shared} compared, params "
                                f"{m.get('params')!r}, torch's {want['params']!r}")
        opt = getattr(torch.optim, kind)([dict(params=[pa]), dict(params=[pb])],
                                         **DEFAULTS[kind])
        sch = torch.optim.lr_scheduler.StepLR(opt, 5, 0.9)
        opt.load_state_dict(torch_state_dict(opt, f"{tag}.a.optim.safetensors", kind))
        sch.load_state_dict({k: v for k, v in metadata(f"{tag}.a.sched.safetensors").items()
                             if k != "scheduler"})
        for g in range(2):
            for k, v in dict(gs[g], lr=gs[g]["lr"] * 0.5, initial_lr=gs[g]["lr"]).items():
                if opt.param_groups[g][k] != v:  # StepLR halved the rate at epoch 2
                    failures.append(f"groups {kind}: torch loaded {k} = "
                                    f"{opt.param_groups[g][k]!r} in group {g}, the file holds "
                                    f"{v!r}")
        our_file(opt, kind, f"{tag}.b.safetensors", 3)
        save_file({}, f"{tag}.b.sched.safetensors", metadata={
            "scheduler": "StepLR", **{k: repr(v) for k, v in sch.state_dict().items()}})
        for _ in range(3):
            opt.zero_grad()
            loss_backward(pa)
            loss_backward(pb)
            opt.step()
            sch.step()
        ours = group_metas(metadata(f"{tag}.u.optim.safetensors"))
        if [g["lr"] for g in opt.param_groups] != [m["lr"] for m in ours]:
            failures.append(f"groups {kind}: torch's rates {[g['lr'] for g in opt.param_groups]}"
                            f", ours {[m['lr'] for m in ours]}")
        want = load_file(f"{tag}.u.param.safetensors")
        for name, p in (("a", pa), ("b", pb)):
            if not np.allclose(p.detach().numpy(), want[name], rtol=1e-5, atol=1e-6):
                failures.append(f"groups {kind}: torch from our file ends {name} at "
                                f"{p.detach().numpy()}, our uninterrupted run at {want[name]}")
        r = run("groups", kind, "3", f"{tag}.a.param.safetensors", f"{tag}.b.safetensors",
                f"{tag}.b.sched.safetensors", f"{tag}.b")
        if r.returncode != 0:
            failures.append(f"groups {kind} from torch's file: {r.stderr.strip()}")
            continue
        tb, tu = load_file(f"{tag}.b.param.safetensors"), load_file(f"{tag}.u.param.safetensors")
        if any(tb[k].tobytes() != tu[k].tobytes() for k in ("a", "b")):
            failures.append(f"groups {kind} from torch's file: not the bits of the "
                            "uninterrupted run")
        if np.allclose(tu["a"], start["a"]) or np.allclose(tu["b"], start["b"]):
            failures.append(f"groups {kind}: the parameters hardly moved")
        grouped.append(kind)
    print("python_interop: two parameter groups through torch and back, resumed bit for bit:",
          ", ".join(grouped))

    # OneCycleLR cycling momentum (torch's default) over SGD and RMSprop made
    # without momentum, which gain it, and Adam, Adamax, NAdam and RAdam
    # (betas[0]): ours and torch's
    # rates and momenta bit for bit, uninterrupted and resumed both ways
    # (torch from our files after 5 steps; ours from torch's after it
    # loaded them), the files' settings against torch's state_dicts.
    cyc = dict(max_lr=0.2, total_steps=12, pct_start=0.25, div_factor=10.0,
               final_div_factor=100.0, base_momentum=0.8, max_momentum=0.9)
    cycled = []
    for kind, o in [("SGD", dict(lr=0.1, momentum=0.0, dampening=0.25, weight_decay=0.0,
                                 nesterov=False)),
                    ("Adam", DEFAULTS["Adam"]),
                    ("RMSprop", dict(DEFAULTS["RMSprop"], centered=True)),
                    ("Adamax", DEFAULTS["Adamax"]), ("NAdam", DEFAULTS["NAdam"]),
                    ("RAdam", DEFAULTS["RAdam"])]:
        tag = f"{tmp}/cycle-{kind}"
        ra = run("cycle", kind, "5", "-", "-", "-", f"{tag}.a", *c_args(kind, o))
        ru = run("cycle", kind, "10", "-", "-", "-", f"{tag}.u", *c_args(kind, o))
        if ra.returncode != 0 or ru.returncode != 0:
            failures.append(f"cycle {kind}: {ra.stderr.strip()} {ru.stderr.strip()}")
            continue
        ours_u = [tuple(float(x) for x in line.split()) for line in ru.stdout.splitlines()]

        def momentum(opt):
            g = opt.param_groups[0]
            return g["betas"][0] if "betas" in g else g["momentum"]

        def torch_steps(p, opt, sched, n):
            out = []
            for _ in range(n):
                opt.zero_grad()
                loss_backward(p)
                opt.step()
                sched.step()
                out.append((opt.param_groups[0]["lr"], momentum(opt)))
            return out

        p = torch.nn.Parameter(torch.tensor([1.0, -0.5, 0.25, 2.0, -1.5]))
        opt = getattr(torch.optim, kind)([p], **o)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, **cyc)
        want = torch_steps(p, opt, sched, 5)
        group5, sched5 = dict(opt.state_dict()["param_groups"][0]), sched.state_dict()
        want += torch_steps(p, opt, sched, 5)
        if ours_u != want:
            failures.append(f"cycle {kind}: (rate, momentum) {ours_u}, torch's {want}")
        u_param = load_file(f"{tag}.u.param.safetensors")["p"]
        if not np.allclose(p.detach().numpy(), u_param, rtol=1e-5, atol=1e-6):
            failures.append(f"cycle {kind}: torch ends at {p.detach().numpy()}, ours {u_param}")
        shared = compare(f"cycle {kind} optimizer", metadata(f"{tag}.a.optim.safetensors"),
                         group5, "optimizer", kind)
        if not {"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"} <= set(shared):
            failures.append(f"cycle {kind}: the optimizer's file lacks torch's keys: {shared}")
        shared = compare(f"cycle {kind} schedule", metadata(f"{tag}.a.sched.safetensors"),
                         sched5, "scheduler", "OneCycleLR")
        if set(shared) != set(sched5) - {"anneal_func"}:
            failures.append(f"cycle {kind} schedule: compared {shared}, torch has "
                            f"{sorted(sched5)}")
        # torch from our files
        p2 = torch.nn.Parameter(torch.from_numpy(load_file(f"{tag}.a.param.safetensors")["p"]))
        opt2 = getattr(torch.optim, kind)([p2], **DEFAULTS[kind])
        sched2 = torch.optim.lr_scheduler.OneCycleLR(opt2, max_lr=1.0, total_steps=12)
        opt2.load_state_dict(torch_state_dict(opt2, f"{tag}.a.optim.safetensors", kind))
        sched2.load_state_dict({k: v for k, v in metadata(f"{tag}.a.sched.safetensors").items()
                                if k != "scheduler"})
        our_file(opt2, kind, f"{tag}.b.optim.safetensors", 5)
        save_file({}, f"{tag}.b.sched.safetensors", metadata={
            "scheduler": "OneCycleLR", **{k: repr(v) for k, v in sched2.state_dict().items()}})
        got = torch_steps(p2, opt2, sched2, 5)
        if got != want[5:]:
            failures.append(f"cycle {kind}: torch from our files {got}, uninterrupted "
                            f"{want[5:]}")
        if not np.allclose(p2.detach().numpy(), u_param, rtol=1e-5, atol=1e-6):
            failures.append(f"cycle {kind}: torch from our files ends at "
                            f"{p2.detach().numpy()}, ours at {u_param}")
        # ours from torch's
        r = run("cycle", kind, "5", f"{tag}.a.param.safetensors", f"{tag}.b.optim.safetensors",
                f"{tag}.b.sched.safetensors", f"{tag}.b", *c_args(kind, DEFAULTS[kind]))
        if r.returncode != 0:
            failures.append(f"cycle {kind} from torch's files: {r.stderr.strip()}")
            continue
        got = [tuple(float(x) for x in line.split()) for line in r.stdout.splitlines()]
        if got != want[5:]:
            failures.append(f"cycle {kind}: ours from torch's files {got}, torch {want[5:]}")
        with open(f"{tag}.b.param.safetensors", "rb") as f1, \
                open(f"{tag}.u.param.safetensors", "rb") as f2:
            if f1.read() != f2.read():
                failures.append(f"cycle {kind} from torch's files: not the bits of the "
                                "uninterrupted run")
        cycled.append(kind)
    print("python_interop: OneCycleLR cycling momentum, rates and momenta as torch's, resumed "
          "both ways:", ", ".join(cycled))

# torch.save's format: torch writes a state_dict (views sharing one
# storage at offsets, non-contiguous, expanded; a model's, with its
# _metadata), cltensor reads it (clt_load_torch) and writes it back
# (clt_save_torch), and torch.load gives the same names, in order, dtypes,
# shapes and values
if torch is not None:
    tdt = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
           "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
           "int8": torch.int8, "int16": torch.int16}
    base = torch.arange(24, dtype=torch.float32) * 0.5 - 3
    sd = collections.OrderedDict()
    sd["whole"] = base.view(4, 6)
    sd["offset.view"] = base[5:17].view(3, 4)
    sd["transposed"] = base[2:14].view(3, 4).t()
    sd["strided"] = base[1::5]
    sd["expanded"] = base[7:8].expand(3, 2)
    sd["scalar"] = base[9]
    sd["empty"] = base[:0].view(0, 3)
    sd["bfloat16"] = (base[3:9] * 1.7).bfloat16()  # BFloat16Storage, its bits kept
    for name, dt in tdt.items():
        if name in held:
            sd["dtype." + name] = torch.from_numpy(arrays[name].copy()).to(dt)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    model[1].running_mean.add_(torch.randn(4))
    cases = {"views": sd, "model": model.state_dict()}
    for tag, state in cases.items():
        src, dst = f"{tmp}/{tag}.pt", f"{tmp}/{tag}.out.pt"
        torch.save(state, src)
        r = run("torch", src, dst)
        if r.returncode != 0:
            failures.append(f"torch {tag}: {r.stderr.strip()}")
            continue
        back = torch.load(dst)
        if not isinstance(back, collections.OrderedDict) or list(back) != list(state):
            failures.append(f"torch {tag}: {type(back).__name__} of {list(back)}, want "
                            f"{list(state)}")
            continue
        for k, v in state.items():
            if back[k].dtype != v.dtype or back[k].shape != v.shape or not torch.equal(back[k], v):
                failures.append(f"torch {tag}: {k}: {back[k].dtype} {tuple(back[k].shape)} "
                                f"{back[k].flatten()[:4]}, want {v.dtype} {tuple(v.shape)} "
                                f"{v.flatten()[:4]}")
    model2 = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    model2.load_state_dict(torch.load(f"{tmp}/model.out.pt"))
    # what cltensor refuses it refuses naming what is wrong
    refusals = {
        "quint8": ({"w": torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8)},
                   "_rebuild_qtensor"),
        "nested": ({"w": {"x": torch.ones(2)}}, "is a dict, not a tensor"),
        "a list": ({"w": [torch.ones(2)]}, "entry 'w' is a list, not a tensor"),
    }
    for tag, (state, needle) in refusals.items():
        src = f"{tmp}/refused.{tag.replace(' ', '_')}.pt"
        torch.save(state, src)
        r = run("torch", src, f"{tmp}/refused.out.pt")
        if r.returncode == 0 or needle not in r.stderr:
            failures.append(f"torch {tag}: expected a refusal naming '{needle}', got "
                            f"{r.returncode}: {r.stderr.strip()}")
    print(f"python_interop: torch.save state_dicts ({len(sd)} tensors viewing shared storages, "
          "a model's) read, written back and loaded by torch: "
          + ("equal" if not failures else "see failures"))

# a model both ways: torch's model.state_dict() (BatchNorm's running
# statistics moved, num_batches_tracked 1) saved by torch.save loads into
# the same cltensor model (clt_module_load_torch, strict), which then takes
# a training step's statistics and gives, in eval mode, torch's outputs for
# the same; what cltensor saves (clt_module_save_torch), its storages
# 64-byte aligned as torch writes them, torch loads with
# load_state_dict(strict=True) and gives cltensor's outputs; so does the
# model cltensor initialised itself
if torch is not None:
    def bn_net():
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8),
                                   torch.nn.ReLU(), torch.nn.Linear(8, 3))

    def close(tag, got, want):
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            failures.append(f"module {tag}: {got.flatten()[:4]}, want {want.flatten()[:4]}")

    torch.manual_seed(3)
    mx = torch.randn(16, 4)
    np.save(f"{tmp}/mx.npy", mx.numpy())
    theirs = bn_net()
    with torch.no_grad():
        theirs.train()
        theirs(mx * 2 + 1)
    torch.save(theirs.state_dict(), f"{tmp}/theirs.pt")
    for src in (f"{tmp}/theirs.pt", "-"):
        tag = "from torch" if src != "-" else "cltensor's own"
        out_y, out_pt = f"{tmp}/my.{len(src)}.npy", f"{tmp}/ours.{len(src)}.pt"
        r = run("module", src, f"{tmp}/mx.npy", out_y, out_pt)
        if r.returncode != 0:
            failures.append(f"module {tag}: {r.stderr.strip()}")
            continue
        got = np.load(out_y)
        if src != "-":
            with torch.no_grad():
                theirs(mx)
                theirs.eval()
                close(tag + ", outputs", got, theirs(mx).numpy())
        with zipfile.ZipFile(out_pt) as z, open(out_pt, "rb") as fh:
            raw = fh.read()
            for info in z.infolist():
                o = info.header_offset
                at = o + 30 + int.from_bytes(raw[o + 26:o + 28], "little") + int.from_bytes(
                    raw[o + 28:o + 30], "little")
                if at % 64:
                    failures.append(f"module {tag}: {info.filename}'s data at {at}")
        loaded = bn_net()
        try:
            loaded.load_state_dict(torch.load(out_pt), strict=True)
        except Exception as e:
            failures.append(f"module {tag}: torch's load_state_dict: {e}")
            continue
        loaded.eval()
        with torch.no_grad():
            close(tag + ", torch's outputs from our file", loaded(mx).numpy(), got)
        if src != "-":
            for k, v in theirs.state_dict().items():
                w = loaded.state_dict()[k]
                if w.dtype != v.dtype or not np.allclose(w.numpy(), v.numpy(), rtol=1e-5,
                                                         atol=1e-6):
                    failures.append(f"module {tag}: {k} {w.dtype} {w.flatten()[:3]}, torch's "
                                    f"{v.dtype} {v.flatten()[:3]}")
    print("python_interop: a torch model's state_dict loaded by cltensor, and cltensor's "
          "models saved for torch's load_state_dict(strict=True): "
          + ("outputs equal" if not failures else "see failures"))

# LBFGS, both line searches: a logistic regression on fixed data (float64,
# and float32 with strong_wolfe, compared to float32 rounding) stepped by
# torch's LBFGS and by ours from the same start, losses and
# parameters compared after the steps, the settings of our file against
# torch's param_groups; our state (the counters, d, t, the history as
# [m, numel], ro, H_diag, prev_flat_grad, prev_loss) loaded by torch and
# torch's written in our format and loaded by us, each run going on as
# the other's uninterrupted one.
if torch is not None:
    lrng = np.random.default_rng(11)
    ls_x = lrng.standard_normal((40, 5))
    ls_y = (ls_x @ lrng.standard_normal(5) + 0.5 * lrng.standard_normal(40) > 0).astype("<f8")
    for dt in ("<f8", "<f4"):
        save_file({"x": ls_x.astype(dt), "y": ls_y.astype(dt)},
                  f"{tmp}/lbfgs{dt[-1]}.data.safetensors")
        save_file({"w": np.full(5, 0.1, dtype=dt), "b": np.array([-0.2], dtype=dt)},
                  f"{tmp}/lbfgs{dt[-1]}.start.safetensors")

    def layout(v):
        """A value's types, dtypes and shapes (general checkpoints)."""
        if isinstance(v, torch.Tensor):
            return ("tensor", str(v.dtype), tuple(v.shape))
        if isinstance(v, dict):
            return {k: layout(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return (type(v).__name__, [layout(x) for x in v])
        return type(v).__name__

    def lbfgs_torch(param_path, o):
        t = load_file(param_path)
        p = [torch.nn.Parameter(torch.from_numpy(t[k].copy())) for k in ("w", "b")]
        return p, torch.optim.LBFGS(p, **o)

    def lbfgs_steps(p, opt, n):
        LX, LY = (torch.from_numpy(a.astype(p[0].detach().numpy().dtype)) for a in (ls_x, ls_y))

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(LX @ p[0] + p[1], LY)
            loss.backward()
            return loss
        return [float(opt.step(closure)) for _ in range(n)]

    def lbfgs_state_for_torch(path):
        """Our file's state as torch's LBFGS holds it (param 0's)."""
        t = {k[len("state.0."):]: v for k, v in load_file(path).items()
             if k.startswith("state.0.")}
        s0 = {k: int(t[k]) for k in ("func_evals", "n_iter") if k in t}
        if "d" in t:
            s0.update(d=torch.from_numpy(t["d"].copy()), t=float(t["t"]),
                      old_dirs=[torch.from_numpy(r.copy()) for r in t["old_dirs"]],
                      old_stps=[torch.from_numpy(r.copy()) for r in t["old_stps"]],
                      ro=[torch.tensor(r) for r in t["ro"]], H_diag=torch.tensor(t["H_diag"]),
                      prev_flat_grad=torch.from_numpy(t["prev_flat_grad"].copy()),
                      prev_loss=float(t["prev_loss"]))
        return {0: s0} if s0 else {}

    def lbfgs_our_file(opt, path, steps):
        """torch's LBFGS state in our format."""
        sd = opt.state_dict()
        group, s0 = sd["param_groups"][0], sd["state"].get(0, {})
        ts = {f"state.0.{k}": np.array(s0[k], dtype="<i8") for k in ("func_evals", "n_iter")
              if k in s0}
        if "d" in s0:
            n = s0["d"].numel()
            for k in ("d", "prev_flat_grad"):
                ts[f"state.0.{k}"] = s0[k].numpy()
            for k in ("old_dirs", "old_stps"):
                ts[f"state.0.{k}"] = (np.stack([v.numpy() for v in s0[k]]) if s0[k]
                                      else np.zeros((0, n)))
            ts["state.0.ro"] = np.array([float(v) for v in s0["ro"]], dtype="<f8")
            for k in ("t", "H_diag", "prev_loss"):
                ts[f"state.0.{k}"] = np.array(float(s0[k]), dtype="<f8")
        ts["step"] = np.array([steps] * len(group["params"]), dtype="<i8")
        ts["steps"] = np.array(steps, dtype="<i8")
        ts["lr_bits"] = np.array(float(group["lr"]), dtype="<f8").view("<i8")
        save_file(ts, path, metadata={"optimizer": "LBFGS", **{
            k: repr(v) for k, v in group.items() if k != "params"}})

    def lbfgs_close(tag, got_path, p):
        got = load_file(got_path)
        f4 = got["w"].dtype == np.float32
        for k, t in zip(("w", "b"), p):
            if not np.allclose(got[k], t.detach().numpy(), rtol=2e-3 if f4 else 1e-7,
                               atol=1e-4 if f4 else 1e-9):
                failures.append(f"{tag}: {k} {got[k]}, torch's {t.detach().numpy()}")

    lbfgs_done = []
    for dk, ls, lr in (("8", "strong_wolfe", 1.0), ("8", None, 0.5), ("4", "strong_wolfe", 1.0)):
        o = dict(lr=lr, max_iter=4, history_size=3, line_search_fn=ls)
        cargs = [repr(lr), "4", "3", str(ls)]
        tag, start = f"{tmp}/lbfgs{dk}-{ls}", f"{tmp}/lbfgs{dk}.start.safetensors"
        data = f"{tmp}/lbfgs{dk}.data.safetensors"
        ru = run("lbfgs", data, start, "-", "4", f"{tag}.u", *cargs)
        ra = run("lbfgs", data, start, "-", "2", f"{tag}.a", *cargs)
        if ru.returncode != 0 or ra.returncode != 0:
            failures.append(f"lbfgs {ls}: {ru.stderr.strip()} {ra.stderr.strip()}")
            continue
        p, opt = lbfgs_torch(start, o)
        want = lbfgs_steps(p, opt, 4)
        ours = [float(v) for v in ru.stdout.split()]
        if not np.allclose(ours, want, rtol=1e-9 if dk == "8" else 1e-4, atol=0):
            failures.append(f"lbfgs {ls}: losses {ours}, torch's {want}")
        lbfgs_close(f"lbfgs {ls}", f"{tag}.u.param.safetensors", p)
        shared = compare(f"lbfgs {ls} settings", metadata(f"{tag}.a.optim.safetensors"),
                         opt.state_dict()["param_groups"][0], "optimizer", "LBFGS")
        if len(shared) != 7:
            failures.append(f"lbfgs {ls} settings: only {shared} compared")
        # torch from our state after 2 steps, 2 more: our uninterrupted 4
        p2, opt2 = lbfgs_torch(f"{tag}.a.param.safetensors", o)
        sd = opt2.state_dict()
        sd["state"] = lbfgs_state_for_torch(f"{tag}.a.optim.safetensors")
        opt2.load_state_dict(sd)
        lbfgs_steps(p2, opt2, 2)
        lbfgs_close(f"lbfgs {ls}, torch from our file", f"{tag}.u.param.safetensors", p2)
        # ours from torch's state after 2 steps, 2 more: torch's uninterrupted 4
        p3, opt3 = lbfgs_torch(start, o)
        lbfgs_steps(p3, opt3, 2)
        if len(opt3.state[p3[0]]["old_dirs"]) < 1:
            failures.append(f"lbfgs {ls}: torch's history is empty after 2 steps")
        save_file({"w": p3[0].detach().numpy(), "b": p3[1].detach().numpy()},
                  f"{tag}.t.param.safetensors")
        lbfgs_our_file(opt3, f"{tag}.t.optim.safetensors", 2)
        r = run("lbfgs", data, f"{tag}.t.param.safetensors", f"{tag}.t.optim.safetensors", "2",
                f"{tag}.r", *cargs)
        if r.returncode != 0:
            failures.append(f"lbfgs {ls} from torch's file: {r.stderr.strip()}")
            continue
        lbfgs_close(f"lbfgs {ls}, ours from torch's file", f"{tag}.r.param.safetensors", p)
        # the same through torch's general checkpoint: torch loads ours
        # ({'optimizer': state_dict()} after 2 steps, torch's layout but for
        # 'al', which torch's step makes again) and goes on as our
        # uninterrupted run; ours loads torch's and goes on as torch's
        ck = torch.load(f"{tag}.a.ckpt.pt")["optimizer"]
        want_layout = {i: {k: v for k, v in s.items() if k != "al"}
                       for i, s in opt3.state_dict()["state"].items()}
        if layout(ck["state"]) != layout(want_layout) or list(ck["state"][0]) != list(
                want_layout[0]) or ck["param_groups"] != opt3.state_dict()["param_groups"]:
            failures.append(f"lbfgs {ls} general: {layout(ck)}, torch's "
                            f"{layout(opt3.state_dict())}")
        p4, opt4 = lbfgs_torch(f"{tag}.a.param.safetensors", o)
        opt4.load_state_dict(ck)
        lbfgs_steps(p4, opt4, 2)
        lbfgs_close(f"lbfgs {ls}, torch from our general checkpoint",
                    f"{tag}.u.param.safetensors", p4)
        torch.save({"optimizer": opt3.state_dict()}, f"{tag}.t.pt")
        r = run("lbfgs", data, f"{tag}.t.param.safetensors", f"{tag}.t.pt", "2", f"{tag}.g",
                *cargs)
        if r.returncode != 0:
            failures.append(f"lbfgs {ls} from torch's general checkpoint: {r.stderr.strip()}")
            continue
        lbfgs_close(f"lbfgs {ls}, ours from torch's general checkpoint",
                    f"{tag}.g.param.safetensors", p)
        lbfgs_done.append(f"{ls} float{64 if dk == '8' else 32}")
    print("python_interop: LBFGS (" + ", ".join(lbfgs_done) + ") as torch's, its state "
          "resumed both ways")

if torch is not None:
    # torch's general checkpoint ({'epoch', 'model_state_dict',
    # 'optimizer_state_dict', 'loss'}) both ways, for every kind cltensor
    # writes: torch loads ours with the recipe's code and goes on as torch
    # does, cltensor loads torch's (its state empty before any step, and
    # after 3) and goes on the same; the optimizer's state_dict has torch's
    # keys, value types, tensor dtypes and shapes.
    grng = np.random.default_rng(11)
    gx = grng.standard_normal((6, 4)).astype(np.float32)
    gy = grng.standard_normal((6, 3)).astype(np.float32)
    np.save(f"{tmp}/gx.npy", gx)
    np.save(f"{tmp}/gy.npy", gy)
    gxt, gyt = torch.from_numpy(gx), torch.from_numpy(gy)
    general_settings = {
        "SGD": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
        "Adam": dict(lr=0.01, amsgrad=True, weight_decay=0.01),
        "AdamW": dict(lr=0.01, weight_decay=0.05),
        "RMSprop": dict(lr=0.01, momentum=0.5, centered=True),
        "Adagrad": dict(lr=0.05, lr_decay=0.01, initial_accumulator_value=0.1),
        "Adamax": dict(lr=0.01),
        "NAdam": dict(lr=0.01, momentum_decay=0.01),
        "RAdam": dict(lr=0.01),
        "Adadelta": dict(lr=0.5, rho=0.8),
        "Rprop": dict(lr=0.01, etas=(0.4, 1.3)),
        "ASGD": dict(lr=0.01, t0=2.0, lambd=0.001),
    }

    def general_steps(model, opt, n):
        for _ in range(n):
            opt.zero_grad(set_to_none=False)
            loss = torch.nn.functional.mse_loss(model(gxt), gyt)
            loss.backward()
            opt.step()
        return loss

    def general_make(kind, kw):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3)
        return model, getattr(torch.optim, kind)(model.parameters(), **kw)

    def general_close(tag, got, want):
        for k in want:
            if not torch.allclose(got[k], want[k], rtol=1e-4, atol=1e-6):
                failures.append(f"general {tag}: {k} differs by "
                                f"{(got[k] - want[k]).abs().max().item():.3g}")

    general_done = []
    for kind, kw in general_settings.items():
        model, opt = general_make(kind, kw)
        g0, t3, c3, c6, ct6 = (f"{tmp}/g{s}.pt" for s in ("0", "t3", "c3", "c6", "ct6"))
        torch.save({"epoch": 0, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": opt.state_dict(), "loss": 0.0}, g0)
        loss = general_steps(model, opt, 3)
        want3 = {k: v.clone() for k, v in model.state_dict().items()}
        want3_opt = opt.state_dict()
        torch.save({"epoch": 3, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": opt.state_dict(), "loss": loss}, t3)
        general_steps(model, opt, 3)
        want6 = model.state_dict()
        ok = True
        for args, tag in (((g0, "3", c3), "ours from torch's step 0"),
                          ((c3, "3", c6), "ours from ours"),
                          ((t3, "3", ct6), "ours from torch's step 3")):
            r = run("general", kind, args[0], f"{tmp}/gx.npy", f"{tmp}/gy.npy", *args[1:])
            if r.returncode != 0:
                failures.append(f"general {kind} {tag}: {r.stderr.strip()}")
                ok = False
        if not ok:
            continue
        back = run("general", kind, t3, f"{tmp}/gx.npy", f"{tmp}/gy.npy", "0",
                   f"{tmp}/gx.pt").stdout.split()
        if len(back) != 2 or back[0] != "3" or float(back[1]) != loss.item():
            failures.append(f"general {kind}: torch's epoch and loss tensor not read back")
        # torch.load of ours, as the recipe: the model and optimizer made with the defaults
        checkpoint = torch.load(c3)
        model2 = torch.nn.Linear(4, 3)
        opt2 = getattr(torch.optim, kind)(model2.parameters(), lr=0.5)  # load_state_dict sets it
        model2.load_state_dict(checkpoint["model_state_dict"])
        opt2.load_state_dict(checkpoint["optimizer_state_dict"])
        if checkpoint["epoch"] != 3 or not isinstance(checkpoint["loss"], float):
            failures.append(f"general {kind}: epoch {checkpoint['epoch']!r}, "
                            f"loss {checkpoint['loss']!r}")
        osd = checkpoint["optimizer_state_dict"]
        if layout(osd["state"]) != layout(want3_opt["state"]):
            failures.append(f"general {kind}: the optimizer's state_dict is laid out "
                            f"{layout(osd['state'])}, torch's {layout(want3_opt['state'])}")
        if osd["param_groups"] != want3_opt["param_groups"]:
            failures.append(f"general {kind}: param_groups {osd['param_groups']}, "
                            f"torch's {want3_opt['param_groups']}")
        if list(osd["param_groups"][0]) != list(want3_opt["param_groups"][0]):
            failures.append(f"general {kind}: param_groups' keys in another order: "
                            f"{list(osd['param_groups'][0])}")
        general_close(f"{kind} ours after 3 steps", checkpoint["model_state_dict"], want3)
        general_steps(model2, opt2, 3)
        general_close(f"{kind}, torch from ours", model2.state_dict(), want6)
        general_close(f"{kind}, ours from ours", torch.load(c6)["model_state_dict"], want6)
        general_close(f"{kind}, ours from torch's", torch.load(ct6)["model_state_dict"], want6)
        general_done.append(kind)
    print("python_interop: general checkpoints (" + ", ".join(general_done) + ") both ways "
          "with torch's recipe")

if torch is not None:
    # SparseAdam's general checkpoint (an Embedding with sparse gradients):
    # ours after 2 steps has torch's param_groups and state types, torch
    # loads it and goes on to its own run's weights after 4, and ours from
    # torch's after 2 does too
    sw0 = torch.tensor([0.1 * i - 0.5 for i in range(15)], dtype=torch.float32).reshape(5, 3)

    def sparse_make():
        e = torch.nn.Embedding.from_pretrained(sw0.clone(), freeze=False, sparse=True)
        return e, torch.optim.SparseAdam(e.parameters(), lr=0.01)

    def sparse_steps(e, o, n):
        for _ in range(n):
            o.zero_grad()
            e(torch.tensor([1, 2, 1])).sum().backward()
            o.step()

    def sparse_types(sd):
        return sd["param_groups"], {k: (type(v).__name__, getattr(v, "dtype", None))
                                    for k, v in sd["state"][0].items()}

    e, o = sparse_make()
    sparse_steps(e, o, 2)
    sd2 = o.state_dict()
    torch.save({"model": e.state_dict(), "optimizer": sd2}, f"{tmp}/sa_t2.pt")
    sparse_steps(e, o, 2)
    want4 = e.weight.detach().clone()
    r1 = run("sparseadam", f"{tmp}/sa_c2.pt")
    r2 = run("sparseadam", f"{tmp}/sa_c4.pt", f"{tmp}/sa_t2.pt")
    if r1.returncode != 0 or r2.returncode != 0:
        failures.append(f"sparseadam: {r1.stderr.strip()} {r2.stderr.strip()}")
    else:
        ck = torch.load(f"{tmp}/sa_c2.pt")
        if sparse_types(ck["optimizer"]) != sparse_types(sd2):
            failures.append(f"sparseadam: {sparse_types(ck['optimizer'])}, torch's "
                            f"{sparse_types(sd2)}")
        e2, o2 = sparse_make()
        e2.load_state_dict(ck["model"])
        o2.load_state_dict(ck["optimizer"])
        sparse_steps(e2, o2, 2)
        for tag, got in (("torch from ours", e2.weight.detach()),
                         ("ours from torch's", torch.load(f"{tmp}/sa_c4.pt")["model"]["weight"])):
            if not torch.equal(got, want4):
                failures.append(f"sparseadam {tag}: {(got - want4).abs().max().item():.3g}")
        print("python_interop: SparseAdam's general checkpoint both ways, bit for bit")

if torch is not None:
    # a schedule's state_dict in the general checkpoint, every kind in one
    # run of io_roundtrip gsched: cltensor loads torch's (after 3 epochs)
    # and goes on to torch's rates, torch loads ours with the recipe's code
    # (the schedule made anew, then load_state_dict) and goes on the same,
    # and ours has torch's keys, order and value types (but what io.h says
    # differs: OneCycleLR's anneal_strategy for torch's bound anneal_func,
    # which makes torch's own file one cltensor refuses; CyclicLR's without
    # _scale_fn_ref, which torch 1.13 cannot save; min_lrs floats); SWALR's
    # anneal_func is torch's staticmethod and its optimizer's param_groups
    # (swa_lr, initial_lr) torch's.
    L = torch.optim.lr_scheduler
    gsched_kinds = {
        "StepLR": lambda o: L.StepLR(o, 3, 0.5),
        "MultiStepLR": lambda o: L.MultiStepLR(o, [2, 5, 5], 0.5),
        "ExponentialLR": lambda o: L.ExponentialLR(o, 0.9),
        "CosineAnnealingLR": lambda o: L.CosineAnnealingLR(o, 10, 0.001),
        "CosineAnnealingWarmRestarts": lambda o: L.CosineAnnealingWarmRestarts(o, 3, 2, 0.001),
        "CyclicLR": lambda o: L.CyclicLR(o, 0.01, 0.1, 4, cycle_momentum=False),
        "OneCycleLR": lambda o: L.OneCycleLR(o, 0.1, total_steps=10, cycle_momentum=False),
        "LinearLR": lambda o: L.LinearLR(o, 0.5, 1.0, 4),
        "ConstantLR": lambda o: L.ConstantLR(o, 0.5, 4),
        "PolynomialLR": lambda o: L.PolynomialLR(o, 5, 2.0),
        "ReduceLROnPlateau": lambda o: L.ReduceLROnPlateau(o, patience=1, factor=0.5),
        "LambdaLR": lambda o: L.LambdaLR(o, lambda e: 0.9 ** e),
        "MultiplicativeLR": lambda o: L.MultiplicativeLR(o, lambda e: 0.9),
        "SequentialLR": lambda o: L.SequentialLR(
            o, [L.LinearLR(o, 0.1, 1.0, 2), L.CosineAnnealingLR(o, 6, 0.001)], [2]),
        "ChainedScheduler": lambda o: L.ChainedScheduler(
            [L.LinearLR(o, 0.5, 1.0, 3), L.ExponentialLR(o, 0.9)]),
        "SWALR": lambda o: torch.optim.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=8),
    }

    def gsched_make(kind):
        o = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)
        return o, gsched_kinds[kind](o)

    def gsched_steps(kind, o, s, n):
        lrs = []
        for _ in range(n):
            if kind == "ReduceLROnPlateau":
                s.step(1.0 / (1 + s.last_epoch % 4))
            else:
                s.step()
            lrs.append(o.param_groups[0]["lr"])
        return lrs

    def gsched_shape(v):
        if isinstance(v, collections.Counter):  # equal Counters, items in another order
            return ("Counter", sorted((k, type(x).__name__) for k, x in v.items()))
        if isinstance(v, dict):
            return (type(v).__name__, [(k, gsched_shape(x)) for k, x in v.items()])
        if isinstance(v, list):
            return ("list", [gsched_shape(x) for x in v])
        return type(v).__name__

    def gsched_close(tag, a, b):
        if a is None or len(a) != len(b) or any(abs(x - y) > 1e-12 * max(abs(y), 1e-3)
                                                for x, y in zip(a, b)):
            failures.append(f"gsched {tag}: rates {a}, torch's {b}")

    import os
    gdir = f"{tmp}/gsched"
    os.makedirs(gdir)
    gwant, gsd, gsched_opt = {}, {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in gsched_kinds:
            o, s = gsched_make(kind)
            gsched_steps(kind, o, s, 3)
            sd = s.state_dict()
            if kind == "CyclicLR":
                sd.pop("_scale_fn_ref")  # a WeakMethod (torch 2's state_dict pops it)
            if kind != "OneCycleLR":
                torch.save({"optimizer_state_dict": o.state_dict(),
                            "scheduler_state_dict": sd}, f"{gdir}/{kind}.t.pt")
            else:
                sd = {("anneal_strategy" if k == "anneal_func" else k):
                      ("cos" if k == "anneal_func" else v) for k, v in sd.items()}
            if kind == "ReduceLROnPlateau":
                sd = dict(sd, min_lrs=[float(x) for x in sd["min_lrs"]])
            gsd[kind] = sd
            gsched_opt[kind] = o.state_dict()
            gwant[kind] = gsched_steps(kind, o, s, 3)
        r = run("gsched", gdir, "3")
        if r.returncode != 0:
            failures.append(f"gsched: {r.stderr.strip()}")
        got = {tuple(l.split()[:2]): [float(x) for x in l.split()[2:]]
               for l in r.stdout.splitlines()}
        for kind in gsched_kinds:
            if kind != "OneCycleLR":
                gsched_close(f"{kind}, ours from torch's", got.get((kind, "torch")), gwant[kind])
            gsched_close(f"{kind}, ours from ours", got.get((kind, "ours")), gwant[kind])
            if r.returncode != 0:
                continue
            ck = torch.load(f"{gdir}/{kind}.c.pt")
            sd = ck["scheduler_state_dict"]
            if gsched_shape(sd) != gsched_shape(gsd[kind]):
                failures.append(f"gsched {kind}: state_dict {gsched_shape(sd)}, torch's "
                                f"{gsched_shape(gsd[kind])}")
            if kind == "SWALR" and (sd["anneal_func"] is not torch.optim.swa_utils.SWALR._cosine_anneal
                                    or ck["optimizer_state_dict"]["param_groups"][0]
                                    != gsched_opt[kind]["param_groups"][0]):
                failures.append(f"gsched SWALR: anneal_func {sd['anneal_func']!r}, param_groups "
                                f"{ck['optimizer_state_dict']['param_groups']}, torch's "
                                f"{gsched_opt[kind]['param_groups']}")
            o2, s2 = gsched_make(kind)
            o2.load_state_dict(ck["optimizer_state_dict"])
            s2.load_state_dict(sd)
            gsched_close(f"{kind}, torch from ours", gsched_steps(kind, o2, s2, 3), gwant[kind])
    print(f"python_interop: schedules' state_dicts in general checkpoints ({len(gsched_kinds)} "
          "kinds) both ways with torch's recipe")

for f in failures:
    print("python_interop: FAIL:", f)
print(f"python_interop: {len(tested)} arrays through .npy and safetensors,",
      f"{len(arrays) + len(extra)} through host memory, a loader over .npy files:",
      "all equal" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
PYEOF
