#!/usr/bin/python3
"""conformance.py: compares cltensor's public API with PyTorch case by case.

Run with an interpreter that has torch and numpy (/usr/bin/python3 here):
    /usr/bin/python3 tests/conformance.py /tmp/bld/.libs/libcltensor.so
The library path may also come from CLTENSOR_LIB.  Prints one line per
failing case and "N passed, M failed"; exits 0 when torch is missing.
"""
import ctypes as C
import math
import os
import sys
import warnings

# torch's references go through Debian's OpenBLAS, whose kernels depend on
# the CPU: its AVX-512 ones (SkylakeX, Cooperlake) carry NaN through addmm's
# alpha=0 and round products differently.  The AVX2 kernel (Haswell) is
# pinned where the CPU has AVX2, so that the references are the same on
# every machine; OpenBLAS reads the variable when numpy or torch loads it.
if "OPENBLAS_CORETYPE" not in os.environ:
    try:
        with open("/proc/cpuinfo") as _f:
            if " avx2" in _f.read():
                os.environ["OPENBLAS_CORETYPE"] = "Haswell"
    except OSError:
        pass

try:
    import numpy as np
    import torch
except Exception as e:  # pragma: no cover
    print("conformance: skipped, cannot import torch/numpy: %s" % e)
    sys.exit(0)

# torch's own warnings (a loss's target broadcast on purpose) are no finding
warnings.filterwarnings("ignore", category=UserWarning)

os.environ.setdefault("POCL_DEVICES", "pthread basic")
LIBPATH = (sys.argv[1] if len(sys.argv) > 1 else
           os.environ.get("CLTENSOR_LIB", "src/.libs/libcltensor.so"))
L = C.CDLL(LIBPATH)

P = C.c_void_p
PP = C.POINTER(C.c_void_p)
I64P = C.POINTER(C.c_int64)
st_ = C.c_int

F32, F64, F16, I32, I64, U8, BOOL = range(7)
BF16 = 9  # after complex64 and complex128
I8, I16 = 10, 11
T2C = {torch.float32: F32, torch.float64: F64, torch.int32: I32,
       torch.int64: I64, torch.uint8: U8, torch.bool: BOOL, torch.float16: F16,
       torch.bfloat16: BF16, torch.int8: I8, torch.int16: I16}
C2T = {v: k for k, v in T2C.items()}
C2NP = {F32: np.float32, F64: np.float64, I32: np.int32, I64: np.int64,
        U8: np.uint8, BOOL: np.bool_, F16: np.float16, I8: np.int8, I16: np.int16}
DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8, torch.bool]
FLOATS = [torch.float32, torch.float64]


def proto(name, args, res=st_):
    f = getattr(L, name)
    f.argtypes = args
    f.restype = res
    return f


proto("clt_device_get", [C.c_char_p, PP])
proto("clt_last_error", [], C.c_char_p)
proto("clt_tensor_from_host", [P, C.c_int, C.c_int, I64P, P, PP])
proto("clt_tensor_free", [P], None)
proto("clt_tensor_ndim", [P], C.c_int)
proto("clt_tensor_shape", [P], I64P)
proto("clt_tensor_dtype", [P], C.c_int)
proto("clt_tensor_nbytes", [P], C.c_size_t)
proto("clt_tensor_numel", [P], C.c_int64)
proto("clt_tensor_read", [P, P, C.c_size_t])
proto("clt_result_type", [P, P, C.POINTER(C.c_int)])
proto("clt_promote_types", [C.c_int, C.c_int], C.c_int)
proto("clt_to_dtype", [P, C.c_int, PP])
proto("clt_clone", [P, PP])
proto("clt_to", [P, P, PP])
proto("clt_full", [P, C.c_int, C.c_int, I64P, C.c_double, PP])
proto("clt_arange", [P, C.c_int, C.c_double, C.c_double, C.c_double, PP])
BIN = ["add", "sub", "mul", "div", "pow", "maximum", "minimum",
       "eq", "ne", "lt", "le", "gt", "ge"]
for n in BIN:
    proto("clt_" + n, [P, P, PP])
SCAL = ["add", "sub", "rsub", "mul", "div", "rdiv", "pow", "rpow",
        "eq", "ne", "lt", "le", "gt", "ge"]
for n in SCAL:
    proto("clt_%s_scalar" % n, [P, C.c_double, PP])
MOD = ["remainder", "fmod", "floor_divide"]
proto("clt_div_rounding", [P, P, C.c_int, PP])
proto("clt_div_scalar_rounding", [P, C.c_double, C.c_int, PP])
for n in MOD:
    proto("clt_" + n, [P, P, PP])
    proto("clt_%s_scalar" % n, [P, C.c_double, PP])
proto("clt_device_synchronize", [P])
UN = ["neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
      "sigmoid", "gelu", "log1p", "expm1", "tan", "sign", "silu", "logical_not"]
for n in UN:
    proto("clt_" + n, [P, PP])
proto("clt_softplus", [P, C.c_double, C.c_double, PP])
proto("clt_leaky_relu", [P, C.c_double, PP])
proto("clt_elu", [P, C.c_double, PP])
proto("clt_smooth_l1_loss", [P, P, C.c_int, C.c_double, PP])
proto("clt_huber_loss", [P, P, C.c_int, C.c_double, PP])
proto("clt_binary_cross_entropy", [P, P, P, C.c_int, PP])
proto("clt_kl_div", [P, P, C.c_int, C.c_int, PP])
proto("clt_where", [P, P, P, PP])
proto("clt_clamp", [P, C.POINTER(C.c_double), C.POINTER(C.c_double), PP])
for n in ["sum", "mean", "prod", "max", "min", "argmax", "argmin"]:
    proto("clt_" + n, [P, PP])
    # max and min along a dim also hand out their indices (may be NULL)
    proto("clt_%s_dim" % n, [P, C.c_int, C.c_int, PP] + ([PP] if n in ("max", "min") else []))
for n in ["var", "std"]:
    proto("clt_" + n, [P, C.c_double, PP])
    proto("clt_%s_dim" % n, [P, C.c_int, C.c_double, C.c_int, PP])
proto("clt_logsumexp", [P, C.c_int, C.c_int, PP])
proto("clt_logsumexp_all", [P, PP])
proto("clt_cumsum", [P, C.c_int, PP])
proto("clt_vector_norm", [P, C.c_double, PP])
proto("clt_vector_norm_dim", [P, C.c_double, C.c_int, C.c_int, PP])
proto("clt_normalize", [P, C.c_double, C.c_int, C.c_double, PP])
proto("clt_cosine_similarity", [P, P, C.c_int, C.c_double, PP])
for n in ["any", "all"]:
    proto("clt_" + n, [P, PP])
    proto("clt_%s_dim" % n, [P, C.c_int, C.c_int, PP])
proto("clt_matmul", [P, P, PP])
proto("clt_group_norm", [P, C.c_int64, P, P, C.c_double, PP])
proto("clt_layer_norm", [P, C.c_int, I64P, P, P, C.c_double, PP])
proto("clt_softmax", [P, C.c_int, PP])
proto("clt_log_softmax", [P, C.c_int, PP])
proto("clt_view", [P, C.c_int, I64P, PP])
proto("clt_reshape", [P, C.c_int, I64P, PP])
proto("clt_flatten", [P, C.c_int, C.c_int, PP])
proto("clt_transpose", [P, C.c_int, C.c_int, PP])
proto("clt_permute", [P, C.c_int, C.POINTER(C.c_int), PP])
proto("clt_narrow", [P, C.c_int, C.c_int64, C.c_int64, PP])
proto("clt_slice", [P, C.c_int, C.c_int64, C.c_int64, C.c_int64, PP])
proto("clt_squeeze", [P, C.c_int, PP])
proto("clt_squeeze_all", [P, PP])
proto("clt_unsqueeze", [P, C.c_int, PP])
proto("clt_expand", [P, C.c_int, I64P, PP])
proto("clt_contiguous", [P, PP])
proto("clt_cat", [C.POINTER(P), C.c_size_t, C.c_int, PP])
proto("clt_stack", [C.POINTER(P), C.c_size_t, C.c_int, PP])
proto("clt_generator_new", [C.c_uint64, PP])
proto("clt_generator_free", [P], None)
proto("clt_manual_seed", [P, C.c_uint64], None)
proto("clt_generator_offset", [P], C.c_uint64)
proto("clt_generator_set_offset", [P, C.c_uint64], None)
proto("clt_rand", [P, P, C.c_int, C.c_int, I64P, PP])
proto("clt_randn", [P, P, C.c_int, C.c_int, I64P, PP])
proto("clt_randint", [P, P, C.c_int64, C.c_int64, C.c_int, C.c_int, I64P, PP])

DEV = P()
if L.clt_device_get(os.environ.get("CONFORMANCE_DEVICE", "cpu").encode(), C.byref(DEV)) != 0:
    print("conformance: skipped, no cpu OpenCL device: %s" % L.clt_last_error())
    sys.exit(0)

PASSED = 0
FAILED = []
VERBOSE = os.environ.get("CONFORMANCE_VERBOSE")


def fail(name, why):
    FAILED.append(name)
    print("FAIL %s: %s" % (name, why))


def shape_arr(shape):
    return (C.c_int64 * max(1, len(shape)))(*shape)


def upload(t):
    """A cltensor copy of the torch tensor t (contiguous); bfloat16 (which
    numpy lacks) goes as its raw 16 bits."""
    tt = t.detach().cpu()
    a = np.array((tt.view(torch.int16) if tt.dtype == torch.bfloat16 else tt).numpy(), order="C",
                 copy=True)
    out = P()
    sh = shape_arr(a.shape)
    data = a.ctypes.data_as(P) if a.size else None
    st = L.clt_tensor_from_host(DEV, T2C[t.dtype], a.ndim, sh if a.ndim else None, data,
                                C.byref(out))
    if st:
        raise RuntimeError("upload failed: %s" % L.clt_last_error())
    return out


def download(p):
    nd = L.clt_tensor_ndim(p)
    shp = L.clt_tensor_shape(p)
    shape = tuple(shp[i] for i in range(nd))
    dt = L.clt_tensor_dtype(p)
    if dt == BF16:  # raw 16 bits, widened to the float32 values they are
        a = np.empty(shape, dtype=np.uint16)
        if a.size and L.clt_tensor_read(p, a.ctypes.data_as(P), a.nbytes):
            raise RuntimeError("read failed: %s" % L.clt_last_error())
        return (a.astype(np.uint32).reshape(-1) << 16).view(np.float32).reshape(shape), shape, dt
    if dt not in C2NP:
        return None, shape, dt
    a = np.empty(shape, dtype=C2NP[dt])
    if a.size:
        st = L.clt_tensor_read(p, a.ctypes.data_as(P), a.nbytes)
        if st:
            raise RuntimeError("read failed: %s" % L.clt_last_error())
    return a, shape, dt


class In:
    """An input: a torch tensor plus how to make the cltensor twin (a view
    chain applied to an uploaded base, so that non-contiguous layouts reach
    the library)."""

    def __init__(self, t, how=None):
        self.t, self.how = t, how

    def build(self, keep):
        if self.how is None:
            p = upload(self.t)
            keep.append(p)
            return self.t, p
        kind = self.how[0]
        if kind == "T":  # transpose of a contiguous tensor
            base = self.t.transpose(-1, -2).contiguous()
            p = upload(base)
            keep.append(p)
            q = P()
            assert L.clt_transpose(p, -1, -2, C.byref(q)) == 0
            keep.append(q)
            return base.transpose(-1, -2), q
        if kind == "S":  # slice dim of a bigger tensor
            _, dim, start, end, step = self.how
            p = upload(self.t)
            keep.append(p)
            q = P()
            assert L.clt_slice(p, dim, start, end, step, C.byref(q)) == 0, L.clt_last_error()
            keep.append(q)
            idx = [slice(None)] * self.t.dim()
            idx[dim] = slice(start, end if end < 2**62 else None, step)
            return self.t[tuple(idx)], q
        if kind == "E":  # expand
            shape = self.how[1]
            p = upload(self.t)
            keep.append(p)
            q = P()
            assert L.clt_expand(p, len(shape), shape_arr(shape), C.byref(q)) == 0
            keep.append(q)
            return self.t.expand(*shape), q
        if kind == "V":  # a chain of view ops on an uploaded base
            t = self.t
            p = upload(t)
            keep.append(p)
            for op in self.how[1]:
                q = P()
                if op[0] == "slice":
                    _, d, a, b, stp = op
                    st = L.clt_slice(p, d, a, b, stp, C.byref(q))
                    idx = [slice(None)] * t.dim()
                    idx[d] = slice(a, b, stp)
                    t = t[tuple(idx)]
                elif op[0] == "T":
                    st = L.clt_transpose(p, op[1], op[2], C.byref(q))
                    t = t.transpose(op[1], op[2])
                elif op[0] == "E":
                    st = L.clt_expand(p, len(op[1]), shape_arr(op[1]), C.byref(q))
                    t = t.expand(*op[1])
                elif op[0] == "narrow":
                    st = L.clt_narrow(p, op[1], op[2], op[3], C.byref(q))
                    t = t.narrow(op[1], op[2], op[3])
                elif op[0] == "perm":
                    st = L.clt_permute(p, len(op[1]), (C.c_int * len(op[1]))(*op[1]), C.byref(q))
                    t = t.permute(*op[1])
                elif op[0] == "unsq":
                    st = L.clt_unsqueeze(p, op[1], C.byref(q))
                    t = t.unsqueeze(op[1])
                elif op[0] == "sq":
                    st = L.clt_squeeze(p, op[1], C.byref(q))
                    t = t.squeeze(op[1])
                else:
                    raise ValueError(op)
                assert st == 0, L.clt_last_error()
                keep.append(q)
                p = q
            return t, p
        raise ValueError(kind)


def as_in(x):
    return x if isinstance(x, In) else In(x)


TOL = {  # (rtol, atol) for float32, float64
    "exact": ((0, 0), (0, 0)),
    "ew": ((2e-7, 0), (1e-15, 0)),
    "tr": ((4e-6, 1e-7), (1e-13, 1e-15)),
    "red": ((5e-5, 1e-5), (1e-11, 1e-12)),
    "mm": ((2e-4, 1e-4), (1e-11, 1e-11)),
    # a float64 result with a float32 operand rounded on the way (cosine_similarity)
    "red32": ((5e-5, 1e-5), (5e-6, 1e-6)),
    # torch's float32 gelu loses ~2e-7 absolute in the left tail (1 + erf)
    "gelu": ((4e-6, 5e-7), (1e-13, 1e-15)),
    # a float64 running sum cut into chunks: a rounding of the largest partial sum a chunk
    "chunks": ((5e-5, 1e-5), (1e-11, 1e-10)),
}


# float16 as torch's own testing: rtol 1e-3, atol 1e-5 (one half ulp is at
# most 2^-10 relative); "h2" lets two ulps through where torch's reference
# rounds twice (a float32 result rounded to half after an op in half).
HALF_TOL = {"ew": (1e-3, 1e-5), "h2": (2e-3, 1e-5)}
# bfloat16 as torch's own testing: rtol 1.6e-2, atol 1e-5 (8 significant bits).
BF16_TOL = {"ew": (1.6e-2, 1e-5), "h2": (3.2e-2, 1e-5)}


def compare_values(name, exp, got, tol, signed_zero):
    if exp.is_complex():
        # real and imaginary parts each by the rules of their float dtype
        # (as float64 they would lose the imaginary part)
        parts = np.stack([np.real(got), np.imag(got)], -1)
        return compare_values(name, torch.view_as_real(exp.detach().cpu().resolve_conj()),
                              parts, tol, signed_zero)
    bf16 = exp.dtype == torch.bfloat16
    e = (exp.detach().cpu().float() if bf16 else exp.detach().cpu()).numpy()
    if e.dtype == np.bool_ or e.dtype.kind in "iu" or tol == "exact":
        if e.dtype.kind == "f":
            same = (e == got) | (np.isnan(e) & np.isnan(got))
            if signed_zero:
                same &= (e != 0) | (np.signbit(e) == np.signbit(got))
        else:
            same = e == got
        if not np.all(same):
            bad = np.argwhere(~same)[:3]
            return fail(name, "values differ at %s: torch %s, cltensor %s" % (
                bad.tolist(), [e[tuple(i)] for i in bad], [got[tuple(i)] for i in bad]))
    else:
        if bf16:
            rtol, atol = BF16_TOL.get(tol, BF16_TOL["ew"])
        elif e.dtype == np.float16:
            rtol, atol = HALF_TOL.get(tol, HALF_TOL["ew"])
        else:
            rtol, atol = TOL[tol][0 if e.dtype == np.float32 else 1]
        en, gn = np.isnan(e), np.isnan(got)
        if not np.array_equal(en, gn):
            bad = np.argwhere(en != gn)[:3]
            return fail(name, "NaN positions differ at %s: torch %s, cltensor %s" % (
                bad.tolist(), [e[tuple(i)] for i in bad], [got[tuple(i)] for i in bad]))
        ef, gf = e.astype(np.float64), got.astype(np.float64)
        inf = np.isinf(ef) | np.isinf(gf)
        with np.errstate(invalid="ignore"):
            ok = np.where(inf, ef == gf, np.abs(ef - gf) <= atol + rtol * np.abs(ef))
        ok |= en
        if not np.all(ok):
            bad = np.argwhere(~ok)[:3]
            return fail(name, "values differ at %s: torch %s, cltensor %s" % (
                bad.tolist(), [repr(e[tuple(i)]) for i in bad],
                [repr(got[tuple(i)]) for i in bad]))
        if signed_zero:
            z = (ef == 0) & (gf == 0)
            sb = np.signbit(ef) != np.signbit(gf)
            if np.any(z & sb):
                bad = np.argwhere(z & sb)[:3]
                return fail(name, "sign of zero differs at %s: torch %s, cltensor %s" % (
                    bad.tolist(), [repr(e[tuple(i)]) for i in bad],
                    [repr(got[tuple(i)]) for i in bad]))
    return True


def check(name, tfn, cfn, inputs, tol="ew", signed_zero=True, expect_error=None):
    """Runs torch and cltensor on the same inputs.  torch raising means
    cltensor must fail with *out NULL."""
    global PASSED
    keep = []
    try:
        pairs = [as_in(x).build(keep) for x in inputs]
        tins = [p[0] for p in pairs]
        cins = [p[1] for p in pairs]
        terr = None
        try:
            exp = tfn(*tins)
        except Exception as e:  # torch refuses
            terr = e
        if expect_error is not None and terr is None:
            terr = expect_error
        out = P(0xdead)
        st = cfn(*cins, C.byref(out))
        if terr is not None:
            if st == 0:
                a, shape, dt = download(out)
                L.clt_tensor_free(out)
                return fail(name, "torch raises (%s) but cltensor succeeds: %s %s" % (
                    str(terr).splitlines()[0][:90], shape, a if a is None or a.size < 8 else ""))
            if out.value is not None:
                return fail(name, "status %d but *out not NULL" % st)
            if not L.clt_last_error():
                return fail(name, "status %d without message" % st)
            PASSED += 1
            return
        if st != 0:
            if out.value is not None:
                fail(name, "status %d and *out not NULL" % st)
            return fail(name, "cltensor fails (%d: %s), torch gives %s %s" % (
                st, L.clt_last_error().decode(), tuple(exp.shape), exp.dtype))
        if out.value is None:
            return fail(name, "status 0 but *out NULL")
        keep.append(out)
        got, shape, dt = download(out)
        if tuple(exp.shape) != shape:
            return fail(name, "shape: torch %s, cltensor %s" % (list(exp.shape), list(shape)))
        if T2C[exp.dtype] != dt:
            return fail(name, "dtype: torch %s, cltensor %d" % (exp.dtype, dt))
        if compare_values(name, exp, got, tol, signed_zero) is True:
            PASSED += 1
            if VERBOSE:
                print("ok", name)
    except Exception as e:
        fail(name, "harness error: %r" % (e,))
    finally:
        for p in keep:
            L.clt_tensor_free(p)


def ok(name, cond, why=""):
    global PASSED
    if cond:
        PASSED += 1
    else:
        fail(name, why)


# ---- data ---------------------------------------------------------------

G = torch.Generator().manual_seed(1234)


def data(shape, dtype, special=False, lo=-5, hi=5):
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=G).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 20, shape, generator=G, dtype=torch.uint8)
    if not dtype.is_floating_point:
        return torch.randint(lo, hi + 1, shape, generator=G, dtype=dtype)
    t = (torch.rand(shape, generator=G, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    if special and t.numel() >= 6:
        f = t.view(-1)
        f[0], f[1], f[2], f[3], f[4], f[5] = (float("nan"), float("inf"), -float("inf"),
                                              -0.0, 0.0, 1.0)
    return t


def dn(dt):
    return str(dt).replace("torch.", "")


def pyscalar(s):
    return int(s) if float(s).is_integer() and not math.isinf(s) else s


# ---- elementwise --------------------------------------------------------

TBIN = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
        "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
        "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
        "ge": torch.ge}


def binfn(n):
    return getattr(L, "clt_" + n)


def elementwise():
    # every binary op over every dtype, with specials for floats
    for n in BIN:
        tol = "tr" if n in ("pow",) else "ew"
        for dt in DTYPES:
            a = data((3, 5), dt, special=True)
            b = data((3, 5), dt, special=True).flip(-1)
            if n == "pow" and not dt.is_floating_point and dt != torch.bool:
                b = b.abs() % 5
            check("%s %s" % (n, dn(dt)), TBIN[n], binfn(n), [a, b], tol=tol)
    # type promotion across dtype pairs, also with 0-d operands
    for n in ["add", "mul", "div", "lt", "maximum"]:
        for da in DTYPES:
            for db in DTYPES:
                if da == db:
                    continue
                a = data((4,), da)
                b0 = data((), db)
                check("%s %s,%s" % (n, dn(da), dn(db)), TBIN[n], binfn(n),
                      [a, data((4,), db)], signed_zero=False)
                check("%s %s,0-d %s" % (n, dn(da), dn(db)), TBIN[n], binfn(n), [a, b0],
                      signed_zero=False)
    # bool arithmetic that torch refuses
    check("sub bool,bool", torch.sub, L.clt_sub, [data((3,), torch.bool)] * 2)
    # integer division by zero
    check("div int by zero", torch.div, L.clt_div,
          [torch.tensor([1, -1, 0, 7], dtype=torch.int32),
           torch.tensor([0, 0, 0, 2], dtype=torch.int32)])
    # integer pow with negative exponent tensor
    check("pow int neg exp", torch.pow, L.clt_pow,
          [torch.tensor([1, -1, 2, -2, 0], dtype=torch.int64),
           torch.tensor([-1, -3, -2, -1, 3], dtype=torch.int64)])
    # broadcasting corner cases
    f = torch.float32
    bc = [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((1,), (0,)), ((0, 3), (1, 3)),
          ((), (2, 3)), ((5, 1, 1), (1, 1, 1)), ((2, 1, 3), (4, 1)),
          ((3,), (4,)), ((2, 3), (3, 2)), ((0,), (2,)), ((1, 1, 1, 1, 1, 2), (2, 1))]
    for sa, sb in bc:
        check("add bcast %s %s" % (list(sa), list(sb)), torch.add, L.clt_add,
              [data(sa, f), data(sb, f)])
    # non-contiguous operands
    check("add transposed", torch.add, L.clt_add, [In(data((6, 4), f), ("T",)), data((6, 4), f)])
    check("mul slice step", torch.mul, L.clt_mul,
          [In(data((4, 9), f), ("S", 1, 1, 8, 3)), data((4, 3), f)])
    check("sub expand", torch.sub, L.clt_sub,
          [In(data((1, 5), f), ("E", (3, 5))), In(data((3, 1), f), ("E", (3, 5)))])
    check("maximum transposed int", torch.maximum, L.clt_maximum,
          [In(data((5, 3), torch.int32), ("T",)), In(data((5, 3), torch.int64), ("T",))])
    check("add big odd", torch.add, L.clt_add, [data((1237, 3), f), data((3,), f)])
    check("add 1-elem", torch.add, L.clt_add, [data((1,), f), data((1, 1), f)])
    # scalars
    scal = {"add": lambda a, s: torch.add(a, s), "sub": lambda a, s: torch.sub(a, s),
            "rsub": lambda a, s: torch.rsub(a, s), "mul": lambda a, s: torch.mul(a, s),
            "div": lambda a, s: torch.div(a, s), "rdiv": lambda a, s: s / a,
            "pow": lambda a, s: torch.pow(a, s), "rpow": lambda a, s: torch.pow(s, a),
            "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
            "gt": torch.gt, "ge": torch.ge}
    for n in SCAL:
        for dt in DTYPES:
            for s in (2.0, 2.5, -1.0, 0.0):
                a = data((2, 3), dt, special=True)
                if n in ("pow", "rpow") and not dt.is_floating_point and dt != torch.bool:
                    a = a.abs() % 4
                ps = pyscalar(s)
                cf = getattr(L, "clt_%s_scalar" % n)
                check("%s_scalar %s %r" % (n, dn(dt), s), (lambda t, ps=ps, n=n: scal[n](t, ps)),
                      (lambda p, o, s=s, cf=cf: cf(p, s, o)), [a],
                      tol="tr" if "pow" in n else "ew")
    for s in (float("nan"), float("inf"), -float("inf")):
        check("mul_scalar int32 %r" % s, lambda t, s=s: t * s,
              lambda p, o, s=s: L.clt_mul_scalar(p, s, o), [data((3,), torch.int32)])
        check("eq_scalar float32 %r" % s, lambda t, s=s: t == s,
              lambda p, o, s=s: L.clt_eq_scalar(p, s, o), [data((6,), f, special=True)])
    check("add_scalar 0-d", lambda t: t + 3, lambda p, o: L.clt_add_scalar(p, 3.0, o),
          [data((), torch.int32)])
    check("add_scalar uint8 -1", lambda t: t + (-1), lambda p, o: L.clt_add_scalar(p, -1.0, o),
          [data((4,), torch.uint8)])
    # torch.pow computes these exponents as sqrt, rsqrt, 1/x, x*x, x*x*x and
    # 1/(x*x): (-inf)^0.5 is NaN, (-0.0)^0.5 is -0.0, (-1e20)^-2 is 0 in
    # float32 (the inputs keep every result exact)
    for dt in FLOATS:
        big = 1e20 if dt == torch.float32 else 1e160
        for s in (0.5, -0.5, -1.0, 2.0, 3.0, -2.0):
            x = torch.tensor([-math.inf, math.inf, math.nan, -0.0, 0.0, 4.0, 0.25, -2.0, -big, big]
                             * 2, dtype=dt)
            check("pow_scalar %s %r edges" % (dn(dt), s), lambda t, s=s: torch.pow(t, s),
                  lambda p, o, s=s: L.clt_pow_scalar(p, s, o), [x],
                  tol="tr" if s == -0.5 else "exact")
    # unary
    TUN = {"neg": torch.neg, "abs": torch.abs, "relu": torch.relu, "exp": torch.exp,
           "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "sin": torch.sin,
           "cos": torch.cos, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
           "gelu": torch.nn.functional.gelu, "log1p": torch.log1p, "expm1": torch.expm1,
           "tan": torch.tan, "sign": torch.sign, "silu": torch.nn.functional.silu,
           "logical_not": torch.logical_not}
    for n in UN:
        for dt in DTYPES:
            a = data((3, 7), dt, special=True)
            check("%s %s" % (n, dn(dt)), TUN[n], getattr(L, "clt_" + n), [a],
                  tol="gelu" if n == "gelu" else
                  "tr" if n not in ("neg", "abs", "relu", "logical_not") else "ew",
                  signed_zero=n != "gelu")  # torch's vectorised gelu turns -0.0 into 0.0
        check("%s transposed" % n, TUN[n], getattr(L, "clt_" + n),
              [In(data((4, 3), f, special=True), ("T",))],
              tol="tr" if n not in ("neg", "abs", "relu", "logical_not") else "ew")
        check("%s empty" % n, TUN[n], getattr(L, "clt_" + n), [data((0, 3), f)])
    check("abs int32 min", torch.abs, L.clt_abs,
          [torch.tensor([-2**31, -1, 5], dtype=torch.int32)])
    check("exp large", torch.exp, L.clt_exp, [torch.tensor([88.0, 89.0, -104.0, -200.0])])
    check("sigmoid large", torch.sigmoid, L.clt_sigmoid,
          [torch.tensor([-100.0, 100.0, -1000.0, 0.0, -0.0])], tol="tr")
    check("tanh large", torch.tanh, L.clt_tanh, [torch.tensor([-30.0, 30.0, 1e-8, -0.0])],
          tol="tr")
    for dt in FLOATS:
        tiny = torch.tensor([1e-10, -1e-10, 1e-30, -1e-30, 1e-8, -0.0, 0.0, -0.9999999, -1.0,
                             -1.5], dtype=dt)
        for n in ("log1p", "expm1", "tan"):
            check("%s tiny %s" % (n, dn(dt)), TUN[n], getattr(L, "clt_" + n), [tiny], tol="tr")
        big = torch.tensor([-100.0, 100.0, -1000.0, -88.0, -89.0, 20.0, 20.5, 1e30, -1e30, -0.0,
                            0.0, 1e-10, -746.0, 710.0], dtype=dt)
        check("silu large %s" % dn(dt), TUN["silu"], L.clt_silu, [big], tol="tr")
        for beta, thr in ((1.0, 20.0), (2.0, 5.0), (-1.0, 20.0), (0.5, 1.0), (1.0, -math.inf)):
            check("softplus %s beta %r threshold %r" % (dn(dt), beta, thr),
                  lambda t, b=beta, h=thr: torch.nn.functional.softplus(t, b, h),
                  lambda p, o, b=beta, h=thr: L.clt_softplus(p, b, h, o), [big], tol="tr")
    for dt in DTYPES:
        check("softplus %s" % dn(dt), torch.nn.functional.softplus,
              lambda p, o: L.clt_softplus(p, 1.0, 20.0, o), [data((3, 7), dt, special=True)],
              tol="tr")
    # leaky_relu and elu: integers and bool refused, as torch's "not
    # implemented for 'Long'"; any scalar, a negative or zero one too
    for dt in DTYPES:
        for sc in (0.01, 0.2, -0.5, 0.0):
            check("leaky_relu %s %r" % (dn(dt), sc),
                  lambda t, s=sc: torch.nn.functional.leaky_relu(t, s),
                  lambda p, o, s=sc: L.clt_leaky_relu(p, s, o), [data((3, 7), dt, special=True)])
        for sc in (1.0, 1.5, -0.5, 0.0):
            check("elu %s %r" % (dn(dt), sc), lambda t, s=sc: torch.nn.functional.elu(t, s),
                  lambda p, o, s=sc: L.clt_elu(p, s, o), [data((3, 7), dt, special=True)],
                  tol="tr")
    for dt in FLOATS:
        near = torch.tensor([-1e-10, -1e-5, -1e-30, -0.0, 0.0, 1e-30, -20.0, -104.0, -800.0,
                             -1e30], dtype=dt)
        check("elu near 0 and far %s" % dn(dt), torch.nn.functional.elu,
              lambda p, o: L.clt_elu(p, 1.0, o), [near], tol="tr")
        check("leaky_relu transposed %s" % dn(dt), torch.nn.functional.leaky_relu,
              lambda p, o: L.clt_leaky_relu(p, 0.01, o),
              [In(data((4, 3), dt, special=True), ("T",))])
    lanes_apart(TUN, scal)
    # where, clamp
    cond = data((3, 4), torch.bool)
    for da, db in [(f, f), (torch.int32, f), (torch.int64, torch.uint8), (torch.bool, torch.bool)]:
        check("where %s,%s" % (dn(da), dn(db)), torch.where, L.clt_where,
              [cond, data((3, 4), da), data((4,), db)])
    check("where bcast cond", torch.where, L.clt_where,
          [data((3, 1), torch.bool), data((1, 4), f), data((3, 4), f)])
    check("where 0-d", torch.where, L.clt_where,
          [data((3,), torch.bool), data((), torch.float64), data((3,), f)])
    check("where non-bool cond", torch.where, L.clt_where,
          [data((3,), torch.int32), data((3,), f), data((3,), f)])
    check("where scalar-ish 0-d both", torch.where, L.clt_where,
          [data((3,), torch.bool), data((), torch.int64), data((), f)])
    dbl = C.c_double

    def clamp_c(mn, mx):
        return lambda p, o: L.clt_clamp(p, None if mn is None else C.byref(dbl(mn)),
                                        None if mx is None else C.byref(dbl(mx)), o)

    for dt in [f, torch.float64, torch.int32, torch.int64, torch.uint8]:
        for mn, mx in [(-1.0, 2.0), (None, 1.0), (0.0, None), (3.0, 1.0), (-1.5, 2.5)]:
            check("clamp %s %r %r" % (dn(dt), mn, mx),
                  lambda t, mn=mn, mx=mx: torch.clamp(t, None if mn is None else pyscalar(mn),
                                                      None if mx is None else pyscalar(mx)),
                  clamp_c(mn, mx), [data((3, 4), dt, special=True)])
    check("clamp nan bound", lambda t: torch.clamp(t, float("nan"), 1.0),
          clamp_c(float("nan"), 1.0), [data((4,), f)])
    check("clamp none", lambda t: torch.clamp(t), clamp_c(None, None), [data((4,), f)])
    check("clamp bool", lambda t: torch.clamp(t, 0, 1), clamp_c(0.0, 1.0),
          [data((4,), torch.bool)])
    # result_type / promote_types
    for da in DTYPES:
        for db in DTYPES:
            ok("promote_types %s %s" % (dn(da), dn(db)),
               L.clt_promote_types(T2C[da], T2C[db]) == T2C[torch.promote_types(da, db)],
               "got %d want %s" % (L.clt_promote_types(T2C[da], T2C[db]),
                                  torch.promote_types(da, db)))
            for sa, sb in [((2,), ()), ((), ()), ((2,), (2,))]:
                keep = []
                try:
                    ta, tb = data(sa, da), data(sb, db)
                    pa, pb = upload(ta), upload(tb)
                    keep += [pa, pb]
                    r = C.c_int(-1)
                    st = L.clt_result_type(pa, pb, C.byref(r))
                    want = torch.result_type(ta, tb)
                    ok("result_type %s%s %s%s" % (dn(da), list(sa), dn(db), list(sb)),
                       st == 0 and r.value == T2C[want], "got %d want %s" % (r.value, want))
                finally:
                    for p in keep:
                        L.clt_tensor_free(p)
    # dtype conversion
    for da in DTYPES:
        for db in DTYPES:
            check("to_dtype %s->%s" % (dn(da), dn(db)), lambda t, db=db: t.to(db),
                  lambda p, o, db=db: L.clt_to_dtype(p, T2C[db], o),
                  [data((7,), da, special=(db.is_floating_point or db == torch.bool),
                        lo=-3, hi=300 if da != torch.uint8 else 5)])


def nonzero(t):
    """An integer or bool divisor with its zeros made 1 (torch raises)."""
    return t if t.dtype.is_floating_point else torch.where(t == 0, torch.ones_like(t), t)


def modulo():
    # remainder, fmod and floor_divide over every dtype pair (floats with
    # their specials), with a 0-d divisor, broadcast and transposed
    trunc = [("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"),
              lambda a, b, o: L.clt_div_rounding(a, b, 1, o),
              lambda p, s, o: L.clt_div_scalar_rounding(p, s, 1, o))]
    for n, tf, cf, cs in [(n, getattr(torch, n), getattr(L, "clt_" + n),
                           getattr(L, "clt_%s_scalar" % n)) for n in MOD] + trunc:
        for da in DTYPES:
            for db in DTYPES:
                a = data((4, 6), da, special=True, lo=-40, hi=40)
                b = data((6,), db, special=True)
                if not (da.is_floating_point or db.is_floating_point):
                    b = nonzero(b)
                check("%s %s,%s" % (n, dn(da), dn(db)), tf, cf, [a, b])
                check("%s %s,0-d %s" % (n, dn(da), dn(db)), tf, cf,
                      [a, nonzero(data((), db)) if da != torch.bool or db != torch.bool
                       else data((), db)])
        check("%s transposed" % n, tf, cf,
              [In(data((5, 3), torch.float32, special=True, lo=-30, hi=30), ("T",)),
               data((3, 1), torch.float32)])
        check("%s int64 transposed" % n, tf, cf,
              [In(data((5, 3), torch.int64, lo=-30, hi=30), ("T",)),
               nonzero(data((3, 5), torch.int64))])
        for dt in (torch.float32, torch.float64):
            x = torch.tensor([5, -5, 0, -0.0, math.inf, -math.inf, math.nan, 1, -1, 7.5, 1e30, 3],
                             dtype=dt)
            y = torch.tensor([3, -3, -3, 3, 3, -3, 2, math.inf, math.inf, -math.inf, 7, 0],
                             dtype=dt)
            check("%s %s edges" % (n, dn(dt)), tf, cf, [x, y], tol="exact")
        # scalars, also those that wrap (2^32 + 3, -1 for uint8) and zero
        for dt in DTYPES:
            for s in (3.0, -3.0, 2.5, -0.5, 0.0, -1.0, 256.0, 4294967299.0, math.inf):
                ps = pyscalar(s)
                check("%s_scalar %s %r" % (n, dn(dt), s), lambda t, ps=ps, tf=tf: tf(t, ps),
                      lambda p, o, s=s, cs=cs: cs(p, s, o),
                      [data((2, 7), dt, special=True, lo=-40, hi=40)])
        # a zero in an integer divisor: torch raises at once, cltensor at the
        # next synchronisation (CLT_ERR_ZERO_DIVISION, -24)
        keep = []
        try:
            pa = upload(torch.tensor([7, 8], dtype=torch.int32))
            pb = upload(torch.tensor([2, 0], dtype=torch.int32))
            keep += [pa, pb]
            try:
                tf(torch.tensor([7, 8]), torch.tensor([2, 0]))
                raised = False
            except RuntimeError as e:
                raised = "ZeroDivisionError" in str(e)
            out = P()
            st = cf(pa, pb, C.byref(out))
            keep.append(out)
            sync = L.clt_device_synchronize(DEV)
            ok("%s int zero divisor" % n, raised and st == 0 and sync == -24 and
               b"ZeroDivisionError" in L.clt_last_error(), "status %d, sync %d: %s" % (
                   st, sync, L.clt_last_error()))
        finally:
            for p in keep:
                L.clt_tensor_free(p)


LANE_SPECIALS = {
    torch.float32: [math.inf, -math.inf, math.nan, -0.0, 0.0, 1e-40, -1e-40, 1e-45, 3e38, -3e38,
                    1e30, -1e30, 88.8, -104.0, 1e5],
    torch.float64: [math.inf, -math.inf, math.nan, -0.0, 0.0, 5e-324, -1e-310, 1e-300, 1.7e308,
                    -1.7e308, 1e300, 710.0, -746.0, 1e10],
}


def lane_data(dt, lo, hi, special_in):
    """Ordinary values in [lo, hi), and in the 16-element group k the k-th
    special value at lane 5k mod 16, plus one element for the scalar tail:
    the CPU kernels' 16-wide vectors must keep one lane's special value out
    of the others' results."""
    sp = LANE_SPECIALS[dt]
    t = data((16 * len(sp) + 1,), dt, lo=lo, hi=hi)
    if special_in:
        for k, v in enumerate(sp):
            t[16 * k + 5 * k % 16] = v
    return t


def log1p_exact(t):
    """torch.log1p, but where torch's kernels are off (inf above half the
    largest value, 3e38 in float32; 0 for a denormal): the C library's, in
    float64, rounded.  ops.h's deliberate difference."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return torch.from_numpy(np.log1p(t.double().numpy())).to(t.dtype)


def lanes_apart(tun, scal):
    for dt in FLOATS:
        for n in UN:
            if n == "logical_not":
                continue
            check("%s lanes apart %s" % (n, dn(dt)), log1p_exact if n == "log1p" else tun[n],
                  getattr(L, "clt_" + n),
                  [lane_data(dt, -5, 5, True)], tol="gelu" if n == "gelu" else "tr",
                  signed_zero=n != "gelu")
        check("softplus lanes apart %s" % dn(dt), torch.nn.functional.softplus,
              lambda p, o: L.clt_softplus(p, 1.0, 20.0, o), [lane_data(dt, -5, 5, True)],
              tol="tr")
        check("leaky_relu lanes apart %s" % dn(dt), torch.nn.functional.leaky_relu,
              lambda p, o: L.clt_leaky_relu(p, 0.01, o), [lane_data(dt, -5, 5, True)])
        check("elu lanes apart %s" % dn(dt), torch.nn.functional.elu,
              lambda p, o: L.clt_elu(p, 1.0, o), [lane_data(dt, -5, 5, True)], tol="tr")
        for n in ("add", "sub", "mul", "div", "pow", "maximum", "minimum"):
            for side in (0, 1):
                ab = [lane_data(dt, 0.1 if n == "pow" else -5, 5, side == 0),
                      lane_data(dt, -5, 5, side == 1)]
                check("%s lanes apart %s, special %s" % (n, dn(dt), "ab"[side]), TBIN[n],
                      binfn(n), ab, tol="tr" if n == "pow" else "ew")
        # torch 1.13's vectorised CPU kernels (Sleef's fmod) give NaN for a
        # subnormal divisor and for float64 dividends near the largest
        # double, its scalar path (short tensors, the tail of long ones) C's
        # exact fmod, as cltensor does: the reference goes element by element
        for n in MOD:
            def one_by_one(a, b, f=getattr(torch, n)):
                return torch.cat([f(a[i:i + 1], b[i:i + 1]) for i in range(a.numel())])
            for side in (0, 1):
                ab = [lane_data(dt, -50, 50, side == 0), lane_data(dt, -5, 5, side == 1)]
                check("%s lanes apart %s, special %s" % (n, dn(dt), "ab"[side]), one_by_one,
                      getattr(L, "clt_" + n), ab, tol="exact")
        for n in ("pow", "rpow", "div", "rdiv"):
            cf = getattr(L, "clt_%s_scalar" % n)
            check("%s_scalar lanes apart %s" % (n, dn(dt)), lambda t, n=n: scal[n](t, 2.5),
                  lambda p, o, cf=cf: cf(p, 2.5, o), [lane_data(dt, 0.1, 5, True)],
                  tol="tr" if "pow" in n else "ew")


# ---- rounding, predicates and logical ops -----------------------------------

ROUND_UN = {"floor": torch.floor, "ceil": torch.ceil, "round": torch.round,
            "trunc": torch.trunc, "frac": torch.frac, "reciprocal": torch.reciprocal,
            "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite}
LOGICAL = {"logical_and": torch.logical_and, "logical_or": torch.logical_or,
           "logical_xor": torch.logical_xor}
for n in ROUND_UN:
    proto("clt_" + n, [P, PP])
for n in LOGICAL:
    proto("clt_" + n, [P, P, PP])
proto("clt_round_decimals", [P, C.c_int64, PP])
# halves, values beside them, the first floats without a fraction (2^23,
# 2^52), the largest, denormals, signed zeros, infinities, NaN
ROUND_EDGES = {
    torch.float32: [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 1.0000001,
                    -0.99999994, 8388607.5, -8388607.5, 8388608.0, 16777215.0, 3.4028235e38,
                    -3.4028235e38, 1e-45, -1e-45, 1.17549435e-38, 1e-30, -1e-30, -0.0, 0.0,
                    math.inf, -math.inf, math.nan, 2.7, -2.7, 1e30, -1e30],
    torch.float64: [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994,
                    -0.49999999999999994, 4503599627370495.5, -4503599627370495.5,
                    4503599627370496.0, 9007199254740991.0, 1.7976931348623157e308,
                    -1.7976931348623157e308, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300,
                    -1e-300, -0.0, 0.0, math.inf, -math.inf, math.nan, 2.7, -2.7, 1e300, -1e300,
                    1e-310, 0.1],
}


def rounding():
    f = torch.float32
    for n, tf in ROUND_UN.items():
        cf = getattr(L, "clt_" + n)
        tol = "ew" if n == "reciprocal" else "exact"
        for dt in DTYPES:
            check("%s %s" % (n, dn(dt)), tf, cf, [data((3, 7), dt, special=True)], tol=tol)
        for dt in (torch.int32, torch.int64, torch.uint8):
            lo, hi = torch.iinfo(dt).min, torch.iinfo(dt).max
            ext = torch.tensor([lo, hi, lo + 1, hi - 1, 0, 1], dtype=dt)
            check("%s %s extremes" % (n, dn(dt)), tf, cf, [ext], tol=tol)
        for dt in FLOATS:
            check("%s %s edges" % (n, dn(dt)), tf, cf,
                  [torch.tensor(ROUND_EDGES[dt] * 2, dtype=dt)], tol=tol)
            check("%s %s 0-d" % (n, dn(dt)), tf, cf, [torch.tensor(-2.5, dtype=dt)], tol=tol)
            check("%s lanes apart %s" % (n, dn(dt)), tf, cf, [lane_data(dt, -5, 5, True)],
                  tol=tol)
            # every value with a fraction, at magnitudes up to where none is left
            wide = (torch.rand(1000, generator=G, dtype=torch.float64) - 0.5) * \
                torch.pow(2.0, torch.randint(-30, 60, (1000,), generator=G).double())
            check("%s %s wide" % (n, dn(dt)), tf, cf, [wide.to(dt)], tol=tol)
        check("%s transposed" % n, tf, cf, [In(data((4, 3), f, special=True), ("T",))],
              tol=tol)
        check("%s empty" % n, tf, cf, [data((0, 3), f)], tol=tol)
    for dt in FLOATS:
        x = torch.tensor(ROUND_EDGES[dt] * 2, dtype=dt)
        wide = (torch.rand(4000, generator=G, dtype=torch.float64) - 0.5) * \
            torch.pow(10.0, torch.randint(-12, 12, (4000,), generator=G).double())
        for d in (0, 1, 2, 3, -1, -2, 5, 8, -7, 15, 17, 38, 39, -39, 300, 308, 309, -400):
            cfd = lambda p, o, d=d: L.clt_round_decimals(p, d, o)
            tfd = lambda t, d=d: torch.round(t, decimals=d)
            check("round_decimals %d %s edges" % (d, dn(dt)), tfd, cfd, [x], tol="exact")
            check("round_decimals %d %s wide" % (d, dn(dt)), tfd, cfd, [wide.to(dt)],
                  tol="exact")
        check("round_decimals lanes apart %s" % dn(dt),
              lambda t: torch.round(t, decimals=2), lambda p, o: L.clt_round_decimals(p, 2, o),
              [lane_data(dt, -5, 5, True)], tol="exact")
    for dt in (torch.int32, torch.int64, torch.uint8, torch.bool):
        for d in (0, 2):
            check("round_decimals %d %s" % (d, dn(dt)), lambda t, d=d: torch.round(t, decimals=d),
                  lambda p, o, d=d: L.clt_round_decimals(p, d, o), [data((4,), dt)])
    check("round_decimals transposed", lambda t: torch.round(t, decimals=1),
          lambda p, o: L.clt_round_decimals(p, 1, o), [In(data((4, 3), f), ("T",))],
          tol="exact")
    # logical ops: every dtype, dtype pairs with and without 0-d operands
    # (converted to the promoted dtype first: a 0-d float64 1e-300 beside
    # float32 is false), broadcasting, NaN, non-contiguous operands
    for n, tf in LOGICAL.items():
        cf = getattr(L, "clt_" + n)
        for dt in DTYPES:
            a = data((3, 5), dt, special=True)
            check("%s %s" % (n, dn(dt)), tf, cf, [a, data((3, 5), dt, special=True).flip(-1)])
            check("%s %s with zeros" % (n, dn(dt)), tf, cf, [a, torch.zeros(5, dtype=dt)])
        for da in DTYPES:
            for db in DTYPES:
                if da != db:
                    check("%s %s,%s" % (n, dn(da), dn(db)), tf, cf,
                          [data((4,), da, special=True), data((4,), db)])
                    check("%s %s,0-d %s" % (n, dn(da), dn(db)), tf, cf,
                          [data((4,), da, special=True), data((), db)])
        check("%s 0-d tiny" % n, tf, cf,
              [data((4,), f), torch.tensor(1e-300, dtype=torch.float64)])
        check("%s 0-d wraps" % n, tf, cf,
              [data((4,), torch.uint8), torch.tensor(256, dtype=torch.int64)])
        check("%s nan" % n, tf, cf,
              [torch.tensor([math.nan, 0.0, -0.0, math.nan]), torch.tensor([1, 1, 0, 0])])
        check("%s bcast" % n, tf, cf, [data((3, 1), f, special=True), data((1, 4), torch.int32)])
        check("%s transposed" % n, tf, cf,
              [In(data((5, 3), torch.int64), ("T",)), In(data((4, 1), f), ("E", (4, 5)))])
        check("%s lanes apart" % n, tf, cf,
              [lane_data(f, -1, 1, True).round(), lane_data(torch.float64, -1, 1, True).round()])
        check("%s shape mismatch" % n, tf, cf, [data((2, 3), f), data((3, 2), f)])


# ---- math functions (mathops) ------------------------------------------------

MATH_UN = {"asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
           "cosh": torch.cosh, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
           "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv, "log2": torch.log2,
           "log10": torch.log10, "exp2": torch.exp2, "square": torch.square}
MATH_BIN = {"atan2": torch.atan2, "hypot": torch.hypot, "copysign": torch.copysign,
            "xlogy": torch.xlogy}
for n in MATH_UN:
    proto("clt_" + n, [P, PP])
for n in MATH_BIN:
    proto("clt_" + n, [P, P, PP])
proto("clt_logit", [P, C.POINTER(C.c_double), PP])
proto("clt_nan_to_num", [P, C.c_double, C.POINTER(C.c_double), C.POINTER(C.c_double), PP])
proto("clt_lerp", [P, P, P, PP])
proto("clt_lerp_scalar", [P, P, C.c_double, PP])
proto("clt_addcmul", [P, P, P, C.c_double, PP])
proto("clt_addcdiv", [P, P, P, C.c_double, PP])
# each function's domain edges, the ulps beside them, overflow points,
# denormals, signed zeros, infinities and NaN
MATH_EDGES = {
    torch.float32: [1.0, -1.0, 0.99999994, -0.99999994, 1.0000001, -1.0000001, 0.5, -0.5,
                    0.7, 0.70000005, 1e-45, -1e-45, 1e-40, 1.17549435e-38, 1e-30, -1e-30,
                    -0.0, 0.0, math.inf, -math.inf, math.nan, 2.0, 88.7, 89.5, 90.0, -89.5,
                    127.9, 128.0, -149.0, -150.5, 10.0, -10.0, 3.9, 4.0, 9.5, 26.0, -27.0,
                    1e20, -1e20, 3.4028235e38, -3.4028235e38, 1e10, 0.3, 1e-8],
    torch.float64: [1.0, -1.0, 0.9999999999999999, -0.9999999999999999, 1.0000000000000002,
                    -1.0000000000000002, 0.5, -0.5, 0.7, 0.7000000000000001, 5e-324, -5e-324,
                    1e-310, 2.2250738585072014e-308, 1e-300, -1e-300, -0.0, 0.0, math.inf,
                    -math.inf, math.nan, 2.0, 709.7, 710.0, 711.0, -710.0, 1023.9, 1024.0,
                    -1074.0, -1075.5, 10.0, -10.0, 5.9, 6.0, 27.0, -28.0, 1e200, -1e200,
                    1.7976931348623157e308, -1.7976931348623157e308, 1e10, 0.3, 1e-17],
}


def out_dtype(t):
    return t.dtype if t.dtype.is_floating_point else torch.float32


def erfinv_exact(t):
    """erfinv computed by mpmath and rounded: PyTorch's erfinv loses digits
    near +-1 (its Newton steps on erf(x) - y: 1e-5 relative in float32 at
    0.99999994, 6e-5 in float64 at 1 - 2^-53), cltensor's does not (ops.h)."""
    import mpmath
    mpmath.mp.dps = 40  # its default 15 digits lose the last ones near +-1
    v = [x if x == 0 else float(mpmath.erfinv(mpmath.mpf(x))) if abs(x) < 1 else
         (math.copysign(math.inf, x) if abs(x) == 1 else math.nan)
         for x in t.double().reshape(-1).tolist()]
    return torch.tensor(v, dtype=torch.float64).reshape(t.shape).to(out_dtype(t))


def libm(fn):
    """fn of numpy (the C library) in float64, rounded: PyTorch's vectorised
    sinh and cosh overflow to inf early (float32 sinh(88.8) is 1.84e38,
    float64 cosh(710) 1.12e308; there inf), cltensor's do not (ops.h)."""
    def ref(t):
        with np.errstate(all="ignore"):
            return torch.from_numpy(np.asarray(fn(t.double().numpy()))).to(out_dtype(t))
    return ref


def math_ref(n):
    return {"erfinv": erfinv_exact, "sinh": libm(np.sinh), "cosh": libm(np.cosh)}.get(
        n, MATH_UN[n])


def logit_ref(t, e):
    """torch.logit; an eps above 0.5 clamps as torch.clamp (and PyTorch's
    vectorised loop, not its scalar tail) does: to 1 - eps everywhere."""
    if e is not None and e > 0.5:
        return torch.logit(t.to(out_dtype(t)).clamp(e, 1 - e))
    return torch.logit(t, e)


def ptr(v):
    return None if v is None else C.byref(C.c_double(v))


def mathops():
    f = torch.float32
    for n in MATH_UN:
        cf = getattr(L, "clt_" + n)
        tol = "exact" if n == "square" else "tr"
        for dt in DTYPES:
            check("%s %s" % (n, dn(dt)), math_ref(n), cf, [data((3, 7), dt, special=True)],
                  tol=tol)
        for dt in (torch.int32, torch.int64, torch.uint8):
            lo, hi = torch.iinfo(dt).min, torch.iinfo(dt).max
            check("%s %s extremes" % (n, dn(dt)), math_ref(n), cf,
                  [torch.tensor([lo, hi, lo + 1, hi - 1, 0, 1], dtype=dt)], tol=tol)
        for dt in FLOATS:
            check("%s %s edges" % (n, dn(dt)), math_ref(n), cf,
                  [torch.tensor(MATH_EDGES[dt] * 2, dtype=dt)], tol=tol)
            check("%s lanes apart %s" % (n, dn(dt)), math_ref(n), cf,
                  [lane_data(dt, -5, 5, True)], tol=tol)
            check("%s lanes apart in [-1, 1] %s" % (n, dn(dt)), math_ref(n), cf,
                  [lane_data(dt, -1, 1, True)], tol=tol)
            check("%s %s 0-d" % (n, dn(dt)), math_ref(n), cf, [torch.tensor(0.25, dtype=dt)],
                  tol=tol)
            # a sweep of magnitudes from 2^-30 to 2^12, both signs
            wide = (torch.rand(2000, generator=G, dtype=torch.float64) - 0.5) * \
                torch.pow(2.0, torch.randint(-30, 12, (2000,), generator=G).double())
            check("%s %s wide" % (n, dn(dt)), math_ref(n), cf, [wide.to(dt)], tol=tol)
            unit = torch.rand(2000, generator=G, dtype=torch.float64) * 2 - 1
            check("%s %s in [-1, 1]" % (n, dn(dt)), math_ref(n), cf, [unit.to(dt)], tol=tol)
        check("%s transposed" % n, math_ref(n), cf, [In(data((4, 3), f, special=True), ("T",))],
              tol=tol)
        check("%s empty" % n, math_ref(n), cf, [data((0, 3), f)], tol=tol)
    # erfinv next to +-1, where PyTorch's float32 is off: its float64
    for dt in FLOATS:
        e = torch.finfo(dt).eps
        near = torch.tensor([1 - e / 2 * k for k in (1, 2, 3, 10, 100, 1000, 10000)], dtype=dt)
        check("erfinv near 1 %s" % dn(dt), erfinv_exact, L.clt_erfinv, [torch.cat([near, -near])],
              tol="tr")
    for dt in DTYPES:
        for eps in (None, 0.0, 1e-6, 0.1, 0.25, 0.5, 0.7, -1.0, math.nan):
            check("logit %s eps %r" % (dn(dt), eps), lambda t, e=eps: logit_ref(t, e),
                  lambda p, o, e=eps: L.clt_logit(p, ptr(e), o),
                  [data((3, 7), dt, special=True, lo=-1, hi=2)], tol="tr")
    for dt in FLOATS:
        x = torch.tensor([0.0, -0.0, 1.0, 1e-45 if dt == f else 5e-324, 0.5, 0.9999999, 1e-7,
                          -1e-7, 1.0000001, math.nan, math.inf, -math.inf, 0.25, 0.75], dtype=dt)
        for eps in (None, 1e-6, 0.25, 0.5, 0.75):
            check("logit edges %s eps %r" % (dn(dt), eps), lambda t, e=eps: logit_ref(t, e),
                  lambda p, o, e=eps: L.clt_logit(p, ptr(e), o), [x], tol="tr")
        check("logit lanes apart %s" % dn(dt), torch.logit,
              lambda p, o: L.clt_logit(p, None, o), [lane_data(dt, 0, 1, True)], tol="tr")
    for dt in DTYPES:
        for nv, pi, ni in ((0.0, None, None), (1.5, 2.5, -3.5), (-1.0, 1e300, None),
                           (math.nan, math.inf, -math.inf), (7.0, None, -1e300)):
            check("nan_to_num %s %r %r %r" % (dn(dt), nv, pi, ni),
                  lambda t, a=nv, b=pi, c=ni: torch.nan_to_num(t, a, b, c),
                  lambda p, o, a=nv, b=pi, c=ni: L.clt_nan_to_num(p, a, ptr(b), ptr(c), o),
                  [data((3, 7), dt, special=True)], tol="exact")
    for dt in FLOATS:
        check("nan_to_num lanes apart %s" % dn(dt), torch.nan_to_num,
              lambda p, o: L.clt_nan_to_num(p, 0.0, None, None, o), [lane_data(dt, -5, 5, True)],
              tol="exact")
    check("nan_to_num transposed", torch.nan_to_num,
          lambda p, o: L.clt_nan_to_num(p, 0.0, None, None, o),
          [In(data((4, 3), f, special=True), ("T",))], tol="exact")
    # binary: every dtype, every pair of special values, promotion with
    # and without 0-d operands, broadcasting, views, lanes
    for dt in FLOATS:
        sp = torch.tensor([math.inf, -math.inf, math.nan, -0.0, 0.0, 1.0, -1.0, 2.5, -2.5,
                           1e-45 if dt == f else 5e-324, 3e38 if dt == f else 1.7e308],
                          dtype=dt)
        k = sp.numel()
        pa, pb = sp.repeat_interleave(k), sp.repeat(k)
        for n, tf in MATH_BIN.items():
            check("%s %s special pairs" % (n, dn(dt)), tf, getattr(L, "clt_" + n), [pa, pb],
                  tol="tr")
    for n, tf in MATH_BIN.items():
        cf = getattr(L, "clt_" + n)
        for dt in DTYPES:
            check("%s %s" % (n, dn(dt)), tf, cf,
                  [data((3, 5), dt, special=True), data((3, 5), dt, special=True).flip(-1)],
                  tol="tr")
        for da in DTYPES:
            for db in DTYPES:
                if da != db:
                    check("%s %s,%s" % (n, dn(da), dn(db)), tf, cf,
                          [data((4,), da), data((4,), db)], tol="tr")
                    check("%s %s,0-d %s" % (n, dn(da), dn(db)), tf, cf,
                          [data((4,), da), data((), db)], tol="tr")
        check("%s bcast" % n, tf, cf, [data((3, 1), f, special=True), data((1, 4), f)], tol="tr")
        check("%s transposed" % n, tf, cf,
              [In(data((5, 3), f), ("T",)), In(data((5, 1), f), ("E", (5, 3)))], tol="tr")
        check("%s shape mismatch" % n, tf, cf, [data((2, 3), f), data((3, 2), f)])
        for dt in FLOATS:
            for side in (0, 1):
                check("%s lanes apart %s, special %s" % (n, dn(dt), "ab"[side]), tf, cf,
                      [lane_data(dt, -5, 5, side == 0), lane_data(dt, -5, 5, side == 1)],
                      tol="tr")
    # lerp: one floating dtype; weights small, large, 0.5 and 1, special
    for dt in DTYPES:
        for w in (0.0, 0.3, 0.5, 0.75, 1.0, -0.5, 2.0, math.nan, math.inf):
            check("lerp_scalar %s %r" % (dn(dt), w), lambda a, b, w=w: torch.lerp(a, b, w),
                  lambda p, q, o, w=w: L.clt_lerp_scalar(p, q, w, o),
                  [data((3, 5), dt, special=True), data((3, 5), dt, special=True).flip(-1)],
                  tol="exact")
        check("lerp %s" % dn(dt), torch.lerp, L.clt_lerp,
              [data((3, 5), dt, special=True), data((3, 5), dt), data((3, 5), dt, lo=-1, hi=2)],
              tol="exact")
    for dt in FLOATS:
        w = torch.tensor([0.0, 0.25, 0.4999, 0.5, 0.75, 1.0, -0.5, 2.0, math.nan, math.inf,
                          -0.0, 1e-30], dtype=dt)
        check("lerp weights %s" % dn(dt), torch.lerp, L.clt_lerp,
              [data((12,), dt, special=True), data((12,), dt, special=True).flip(0), w],
              tol="exact")
        check("lerp bcast %s" % dn(dt), torch.lerp, L.clt_lerp,
              [data((3, 1), dt), data((1, 4), dt), data((), dt)], tol="exact")
        check("lerp lanes apart %s" % dn(dt), torch.lerp, L.clt_lerp,
              [lane_data(dt, -5, 5, True), lane_data(dt, -5, 5, False),
               lane_data(dt, 0, 1, True)], tol="exact")
    check("lerp dtype mismatch", torch.lerp, L.clt_lerp,
          [data((3,), f), data((3,), torch.float64), data((3,), f)])
    check("lerp weight dtype mismatch", torch.lerp, L.clt_lerp,
          [data((3,), f), data((3,), f), data((), torch.float64)])
    check("lerp_scalar dtype mismatch", lambda a, b: torch.lerp(a, b, 0.5),
          lambda p, q, o: L.clt_lerp_scalar(p, q, 0.5, o), [data((3,), f), data((3,), torch.float64)])
    check("lerp_scalar overflow", lambda a, b: torch.lerp(a, b, 1e300),
          lambda p, q, o: L.clt_lerp_scalar(p, q, 1e300, o), [data((3,), f), data((3,), f)])
    check("lerp transposed", torch.lerp, L.clt_lerp,
          [In(data((4, 3), f), ("T",)), data((3, 4), f), In(data((1, 4), f), ("E", (3, 4)))],
          tol="exact")
    check("lerp shape mismatch", torch.lerp, L.clt_lerp,
          [data((2, 3), f), data((2, 3), f), data((3, 2), f)])
    # addcmul and addcdiv: promotion over three operands (0-d ones too),
    # integer values truncated, overflowing values refused, bool and
    # integer division refused
    for name, tf, cf in (("addcmul", torch.addcmul, L.clt_addcmul),
                         ("addcdiv", torch.addcdiv, L.clt_addcdiv)):
        for dt in DTYPES:
            for v in (1.0, 2.0, -0.5, 2.5):
                check("%s %s %r" % (name, dn(dt), v),
                      lambda a, b, c, v=pyscalar(v), tf=tf: tf(a, b, c, value=v),
                      lambda p, q, r, o, v=v, cf=cf: cf(p, q, r, v, o),
                      [data((3, 5), dt, special=True), data((3, 5), dt, special=True).flip(-1),
                       nonzero(data((5,), dt))], tol="ew")
        for da, db, dc in ((f, torch.int32, torch.int32), (torch.int32, f, torch.int64),
                           (torch.int64, torch.int32, torch.uint8), (torch.float64, f, f),
                           (torch.uint8, torch.bool, torch.int32), (f, torch.bool, f),
                           (torch.bool, torch.bool, torch.bool), (torch.int32, torch.int32, f)):
            check("%s %s,%s,%s" % (name, dn(da), dn(db), dn(dc)),
                  lambda a, b, c, tf=tf: tf(a, b, c, value=2), lambda p, q, r, o, cf=cf: cf(p, q, r, 2.0, o),
                  [data((4,), da), data((4,), db), nonzero(data((4,), dc))], tol="ew")
            check("%s %s,0-d %s,%s" % (name, dn(da), dn(db), dn(dc)),
                  lambda a, b, c, tf=tf: tf(a, b, c, value=2), lambda p, q, r, o, cf=cf: cf(p, q, r, 2.0, o),
                  [data((4,), da), data((), db), nonzero(data((4,), dc))], tol="ew")
            check("%s 0-d %s,%s,0-d %s" % (name, dn(da), dn(db), dn(dc)),
                  lambda a, b, c, tf=tf: tf(a, b, c, value=2), lambda p, q, r, o, cf=cf: cf(p, q, r, 2.0, o),
                  [data((), da), data((4,), db), nonzero(data((), dc))], tol="ew")
        for dt, v in ((torch.int32, 1e10), (torch.uint8, 300.0), (torch.uint8, -255.0),
                      (torch.uint8, -256.0), (torch.uint8, -0.5), (torch.uint8, 255.5), (f, 1e300),
                      (f, math.inf), (f, math.nan), (torch.int64, 2.0**62)):
            check("%s %s value %r" % (name, dn(dt), v),
                  lambda a, b, c, v=pyscalar(v), tf=tf: tf(a, b, c, value=v),
                  lambda p, q, r, o, v=v, cf=cf: cf(p, q, r, v, o),
                  [data((4,), dt), data((4,), dt), nonzero(data((4,), f if name == "addcdiv" else dt))],
                  tol="ew")
        check("%s bcast" % name, lambda a, b, c, tf=tf: tf(a, b, c, value=0.5),
              lambda p, q, r, o, cf=cf: cf(p, q, r, 0.5, o),
              [data((3, 1, 1), f), data((1, 4, 1), f), data((1, 1, 5), f, lo=1, hi=3)], tol="ew")
        check("%s transposed" % name, lambda a, b, c, tf=tf: tf(a, b, c, value=0.5),
              lambda p, q, r, o, cf=cf: cf(p, q, r, 0.5, o),
              [In(data((4, 3), f), ("T",)), In(data((3, 1), f), ("E", (3, 4))),
               In(data((4, 3), f, lo=1, hi=3), ("T",))], tol="ew")
        for dt in FLOATS:
            check("%s lanes apart %s" % (name, dn(dt)), lambda a, b, c, tf=tf: tf(a, b, c, value=0.5),
                  lambda p, q, r, o, cf=cf: cf(p, q, r, 0.5, o),
                  [lane_data(dt, -5, 5, True), lane_data(dt, -5, 5, False),
                   lane_data(dt, 1, 5, True)], tol="ew")
        check("%s shape mismatch" % name, lambda a, b, c, tf=tf: tf(a, b, c),
              lambda p, q, r, o, cf=cf: cf(p, q, r, 1.0, o),
              [data((2, 3), f), data((3,), f), data((2, 1, 2), f)])


# ---- reductions -----------------------------------------------------------

def cdim(n):
    """clt_<n>_dim with torch's arguments then the out; max and min hand out
    their values, "max indices" and "min indices" their indices."""
    f = getattr(L, "clt_%s_dim" % n.split()[0])
    if n.endswith(" indices"):
        def indices(p, d, k, o):
            v = P(0xdead)
            st = f(p, d, k, C.byref(v), o)
            if (st == 0) != (v.value is not None):
                raise AssertionError("values %s after status %d" % (v.value, st))
            L.clt_tensor_free(v)
            return st
        return indices
    if n in ("max", "min"):
        return lambda p, d, k, o: f(p, d, k, o, None)
    return f


def reductions():
    f = torch.float32
    RED = {"sum": (torch.sum, "red"), "prod": (torch.prod, "red"), "mean": (torch.mean, "red"),
           "max": (torch.max, "exact"), "min": (torch.min, "exact"),
           "argmax": (torch.argmax, "exact"), "argmin": (torch.argmin, "exact")}

    def tdim(n):
        if n.endswith(" indices"):
            fn = RED[n.split()[0]][0]
            return lambda t, d, k: fn(t, d, keepdim=k)[1]
        fn = RED[n][0]
        if n in ("max", "min"):
            return lambda t, d, k: fn(t, d, keepdim=k)[0]
        return lambda t, d, k: fn(t, d, keepdim=k)


    shapes = [(3, 5), (7,), (1,), (), (2, 3, 4), (0,), (0, 3), (3, 0), (1, 1, 1), (33, 65)]
    for n, (fn, tol) in list(RED.items()) + [("max indices", (None, "exact")),
                                             ("min indices", (None, "exact"))]:
        for dt in DTYPES:
            for sh in shapes if dt == f else [(3, 5), (0,), ()]:
                a = data(sh, dt, lo=-2, hi=2)
                if fn is not None:
                    check("%s %s %s" % (n, dn(dt), list(sh)), fn, getattr(L, "clt_" + n), [a],
                          tol=tol, signed_zero=False)
                for d in range(-len(sh) - 1, max(len(sh), 1) + 1):
                    for k in (0, 1):
                        if dt != f and (k or d != -1):
                            continue
                        check("%s_dim %s %s d=%d k=%d" % (n, dn(dt), list(sh), d, k),
                              lambda t, d=d, k=k: tdim(n)(t, d, bool(k)),
                              lambda p, o, d=d, k=k, n=n: cdim(n)(p, d, k, o),
                              [a], tol=tol, signed_zero=False)
        check("%s_dim transposed" % n, lambda t: tdim(n)(t, 0, False),
              lambda p, o: cdim(n)(p, 0, 0, o),
              [In(data((5, 6), f), ("T",))], tol=tol)
        if fn is not None:
            check("%s transposed" % n, fn, getattr(L, "clt_" + n),
                  [In(data((5, 6), f), ("T",))], tol=tol)
            check("%s slice" % n, fn, getattr(L, "clt_" + n),
                  [In(data((4, 11), f), ("S", 1, 2, 10, 3))], tol=tol)
        check("%s_dim expand" % n, lambda t: tdim(n)(t, 1, True),
              lambda p, o: cdim(n)(p, 1, 1, o),
              [In(data((1, 5), f), ("E", (3, 5)))], tol=tol)
        for dt in FLOATS:
            sp = data((4, 6), dt, special=True)
            if fn is not None:
                check("%s special %s" % (n, dn(dt)), fn, getattr(L, "clt_" + n), [sp], tol=tol)
            check("%s_dim special %s" % (n, dn(dt)), lambda t: tdim(n)(t, 1, False),
                  lambda p, o: cdim(n)(p, 1, 0, o), [sp], tol=tol)
            check("%s_dim special d0 %s" % (n, dn(dt)), lambda t: tdim(n)(t, 0, False),
                  lambda p, o: cdim(n)(p, 0, 0, o), [sp], tol=tol)
    # ties and NaN for arg reductions
    tie = torch.tensor([[1.0, 3.0, 3.0, -1.0, -1.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
    nan2 = torch.tensor([[1.0, float("nan"), 5.0, float("nan")],
                         [float("inf"), 1.0, -float("inf"), -float("inf")]])
    for n in ("argmax", "argmin", "max", "min", "max indices", "min indices"):
        for name, t in (("ties", tie), ("nan", nan2), ("ties int", tie.to(torch.int32))):
            if n in RED:
                check("%s %s" % (n, name), RED[n][0], getattr(L, "clt_" + n), [t], tol="exact")
            check("%s_dim %s" % (n, name), lambda x: tdim(n)(x, 1, False),
                  lambda p, o: cdim(n)(p, 1, 0, o), [t], tol="exact")
            check("%s_dim0 %s" % (n, name), lambda x: tdim(n)(x, 0, True),
                  lambda p, o: cdim(n)(p, 0, 1, o), [t], tol="exact")
    big_tie = torch.zeros(10000)
    big_tie[[17, 5000, 9999]] = 3.0
    check("argmax big ties", torch.argmax, L.clt_argmax, [big_tie], tol="exact")
    big_tie2 = big_tie.clone()
    big_tie2[[7000, 8000]] = float("nan")
    check("argmax big nan", torch.argmax, L.clt_argmax, [big_tie2], tol="exact")
    check("argmin big nan", torch.argmin, L.clt_argmin, [big_tie2], tol="exact")
    check("max big nan", torch.max, L.clt_max, [big_tie2], tol="exact")
    # negative zero in max/min
    check("max -0.0", torch.max, L.clt_max, [torch.tensor([-0.0, -1.0])], tol="exact")
    # sums over many elements and large values
    n = (1 << 24) + 7
    check("sum 2^24+7 ones", torch.sum, L.clt_sum, [torch.ones(n)], tol="red")
    check("sum 100003 f32", torch.sum, L.clt_sum, [data((100003,), f)], tol="red")
    check("sum_dim 100003 f32", lambda t: t.sum(0), lambda p, o: L.clt_sum_dim(p, 0, 0, o),
          [data((100003, 2), f)], tol="red")
    check("sum int32 overflow->int64", torch.sum, L.clt_sum,
          [torch.full((4,), 2**30, dtype=torch.int32)], tol="exact")
    check("prod int wrap", torch.prod, L.clt_prod,
          [torch.full((3,), 2**22, dtype=torch.int64)], tol="exact")
    check("sum bool", torch.sum, L.clt_sum, [data((50,), torch.bool)], tol="exact")
    check("sum uint8", torch.sum, L.clt_sum, [torch.full((300,), 200, dtype=torch.uint8)])
    # var / std
    for n, fn in (("var", torch.var), ("std", torch.std)):
        for dt in FLOATS:
            for sh in [(5, 6), (1,), (), (0,), (2, 1), (4097,)]:
                for corr in (1.0, 0.0, 2.0):
                    a = data(sh, dt)
                    check("%s %s %s c=%g" % (n, dn(dt), list(sh), corr),
                          lambda t, c=corr, n=n: tvar(t, None, c, False, n == "std"),
                          lambda p, o, c=corr: getattr(L, "clt_" + n)(p, c, o), [a], tol="red",
                          signed_zero=False)
                    for d in range(-len(sh), len(sh)):
                        for k in (0, 1):
                            check("%s_dim %s %s d=%d c=%g k=%d" % (n, dn(dt), list(sh), d, corr, k),
                                  lambda t, c=corr, d=d, k=k, n=n: tvar(t, d, c, bool(k),
                                                                        n == "std"),
                                  lambda p, o, c=corr, d=d, k=k: cdim(n)(
                                      p, d, c, k, o), [a], tol="red", signed_zero=False)
        check("%s int" % n, fn, lambda p, o: getattr(L, "clt_" + n)(p, 1.0, o),
              [data((4,), torch.int32)])
        check("%s special" % n, fn, lambda p, o: getattr(L, "clt_" + n)(p, 1.0, o),
              [data((3, 4), f, special=True)], tol="red")
        check("%s_dim transposed" % n, lambda t: fn(t, 1),
              lambda p, o: cdim(n)(p, 1, 1.0, 0, o),
              [In(data((5, 6), f), ("T",))], tol="red")
        check("%s large offset" % n, fn, lambda p, o: getattr(L, "clt_" + n)(p, 1.0, o),
              [data((1000,), f) * 0.001 + 1e4], tol="red")
        # squares of deviations beyond float32's range: torch accumulates in double
        huge = torch.zeros(2, 2000)
        huge[:, ::2] = 1e18
        huge[1, :10] = 1e20
        check("%s float32 beyond float squares" % n, fn,
              lambda p, o, n=n: getattr(L, "clt_" + n)(p, 1.0, o), [huge], tol="red")
        check("%s_dim float32 beyond float squares" % n, lambda t, fn=fn: fn(t, 1),
              lambda p, o, n=n: cdim(n)(p, 1, 1.0, 0, o), [huge], tol="red")
    check("mean int", torch.mean, L.clt_mean, [data((4,), torch.int64)])
    check("mean_dim bool", lambda t: torch.mean(t, 0), lambda p, o: L.clt_mean_dim(p, 0, 0, o),
          [data((4,), torch.bool)])


def tvar(t, dim, c, keepdim, sq):
    """torch.var with a general correction, as current PyTorch defines it
    (torch 1.13 here takes only unbiased=)."""
    if not t.dtype.is_floating_point:
        raise TypeError("var needs a floating dtype")
    if dim is None:
        n = t.numel()
        m = t.mean() if n else torch.tensor(float("nan"), dtype=t.dtype)
        s = ((t - m) ** 2).sum()
        if keepdim:
            raise ValueError
    else:
        n = t.shape[dim] if t.dim() else 1
        tt = t if t.dim() else t.reshape(1)
        m = tt.mean(dim, keepdim=True)
        s = ((tt - m) ** 2).sum(dim, keepdim=keepdim or t.dim() == 0)
        if t.dim() == 0:
            s = s.reshape(())
    r = s / max(0.0, n - c)
    return r.sqrt() if sq else r


# ---- linalg -----------------------------------------------------------------

def linalg():
    f = torch.float32
    cases = [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 3)), ((2, 3, 4), (4,)),
             ((5, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 6)), ((1, 1), (1, 1)),
             ((0, 3), (3, 4)), ((3, 0), (0, 4)), ((2, 0, 3), (3, 1)), ((0,), (0,)),
             ((17, 33), (33, 65)), ((3, 4), (5, 6)), ((3,), (4,)), ((2, 3), (3,)),
             ((2, 2, 3), (3, 3, 4)), ((), (3,)), ((3,), ()), ((4,), (2, 4, 3))]
    for dt in FLOATS:
        for sa, sb in cases:
            check("matmul %s %s@%s" % (dn(dt), list(sa), list(sb)), torch.matmul, L.clt_matmul,
                  [data(sa, dt), data(sb, dt)], tol="mm", signed_zero=False)
    check("matmul A^T B", torch.matmul, L.clt_matmul,
          [In(data((4, 3), f), ("T",)), data((4, 5), f)], tol="mm")
    check("matmul A B^T", torch.matmul, L.clt_matmul,
          [data((3, 4), f), In(data((4, 5), f), ("T",))], tol="mm")
    check("matmul sliced", torch.matmul, L.clt_matmul,
          [In(data((3, 9), f), ("S", 1, 0, 9, 2)), data((5, 2), f)], tol="mm")
    check("matmul expanded batch", torch.matmul, L.clt_matmul,
          [In(data((1, 3, 4), f), ("E", (2, 3, 4))), data((2, 4, 2), f)], tol="mm")
    check("matmul nan/inf", torch.matmul, L.clt_matmul,
          [torch.tensor([[1.0, float("nan")], [1.0, 2.0]]),
           torch.tensor([[float("inf"), 0.0], [1.0, 1.0]])], tol="mm")
    check("matmul dtype mix", torch.matmul, L.clt_matmul,
          [data((2, 3), f), data((3, 2), torch.float64)])
    for dt in (torch.int32, torch.int64, torch.bool):
        check("matmul %s (documented refusal)" % dn(dt), torch.matmul, L.clt_matmul,
              [data((2, 3), dt), data((3, 2), dt)], expect_error="documented")
    check("matmul big", torch.matmul, L.clt_matmul,
          [data((130, 257), f), data((257, 66), f)], tol="mm")
    for name, tfn, cfn in (("softmax", torch.softmax, L.clt_softmax),
                           ("log_softmax", torch.log_softmax, L.clt_log_softmax)):
        for dt in FLOATS:
            for sh in [(3, 5), (7,), (1,), (), (2, 3, 4), (0, 3), (3, 0), (4, 1025)]:
                for d in range(-len(sh) - 1, max(len(sh), 1) + 1):
                    check("%s %s %s d=%d" % (name, dn(dt), list(sh), d),
                          lambda t, d=d: tfn(t, d), lambda p, o, d=d: cfn(p, d, o),
                          [data(sh, dt)], tol="red", signed_zero=False)
        t = torch.tensor([[1000.0, 0.0, -1000.0], [float("-inf"), 0.0, 1.0],
                          [float("nan"), 1.0, 2.0], [float("inf"), 1.0, 2.0],
                          [-float("inf")] * 3, [3.0, 3.0, 3.0]])
        check("%s special" % name, lambda x: tfn(x, 1), lambda p, o: cfn(p, 1, o), [t], tol="red",
              signed_zero=False)
        check("%s transposed" % name, lambda x: tfn(x, 0), lambda p, o: cfn(p, 0, o),
              [In(data((5, 6), f), ("T",))], tol="red")
        check("%s expanded" % name, lambda x: tfn(x, 0), lambda p, o: cfn(p, 0, o),
              [In(data((1, 6), f), ("E", (3, 6)))], tol="red")
        check("%s int" % name, lambda x: tfn(x, 0), lambda p, o: cfn(p, 0, o),
              [data((3,), torch.int32)])


# ---- linalg2: torch.linalg's inv, solve, det, slogdet, cholesky -----------

def _slogdet_c(p, o, want_sign):
    """clt_linalg_slogdet handing out its sign or its log|det| in o."""
    other = P(0xdead)
    st = L.clt_linalg_slogdet(p, o if want_sign else C.byref(other),
                              C.byref(other) if want_sign else o)
    if (st == 0) != (other.value is not None):
        raise AssertionError("the other output %s after status %d" % (other.value, st))
    L.clt_tensor_free(other)
    return st


def _wellcond(shape, dt):
    """Random matrices [..., n, n] with singular values in about [0.5, 3]."""
    n = shape[-1]
    a = torch.randn(shape, generator=G, dtype=torch.float64) / max(n, 1) ** 0.5
    return (a + 1.5 * torch.eye(n, dtype=torch.float64)).to(dt)


def _spd(shape, dt):
    n = shape[-1]
    a = torch.randn(shape, generator=G, dtype=torch.float64) / max(n, 1) ** 0.5
    return (a @ a.transpose(-1, -2) + torch.eye(n, dtype=torch.float64)).to(dt)


def linalg2():
    proto("clt_linalg_inv", [P, PP])
    proto("clt_linalg_solve", [P, P, PP])
    proto("clt_linalg_det", [P, PP])
    proto("clt_linalg_slogdet", [P, PP, PP])
    proto("clt_linalg_cholesky", [P, C.c_int, PP])
    TOL["la"] = ((2e-5, 2e-5), (1e-12, 1e-12))
    shapes = [(1, 1), (3, 3), (2, 4, 4), (2, 3, 5, 5), (17, 17), (0, 3, 3), (2, 0, 0), (0, 0),
              (70, 70), (4, 33, 33)]
    for dt in FLOATS:
        for sh in shapes:
            a = _wellcond(sh, dt)
            check("inv %s %s" % (dn(dt), list(sh)), torch.linalg.inv, L.clt_linalg_inv, [a],
                  tol="la", signed_zero=False)
            check("det %s %s" % (dn(dt), list(sh)), torch.linalg.det, L.clt_linalg_det, [a],
                  tol="la", signed_zero=False)
            for k, name in ((1, "sign"), (0, "logabsdet")):
                check("slogdet %s %s %s" % (name, dn(dt), list(sh)),
                      lambda t, k=k: torch.linalg.slogdet(t)[1 - k],
                      lambda p, o, k=k: _slogdet_c(p, o, k), [a], tol="la", signed_zero=False)
            for up in (0, 1):
                check("cholesky %s %s upper=%d" % (dn(dt), list(sh), up),
                      lambda t, up=up: torch.linalg.cholesky(t, upper=bool(up)),
                      lambda p, o, up=up: L.clt_linalg_cholesky(p, up, o), [_spd(sh, dt)],
                      tol="la", signed_zero=False)
        for sa, sb in [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3)),
                       ((2, 1, 4, 4), (3, 4, 2)), ((4, 4), (2, 4, 5)), ((2, 4, 4), (2, 4, 1)),
                       ((0, 3, 3), (3,)), ((3, 3), (3, 0)), ((2, 0, 0), (2, 0)),
                       ((40, 40), (40, 7)), ((2, 3, 3), (4, 3)), ((3, 3), (4,)),
                       ((2, 3, 3), (3, 4, 2)), ((3, 4), (3,)), ((3,), (3,))]:
            check("solve %s %s %s" % (dn(dt), list(sa), list(sb)), torch.linalg.solve,
                  L.clt_linalg_solve, [_wellcond(sa, dt) if len(sa) > 1 and sa[-1] == sa[-2]
                                       else data(sa, dt), data(sb, dt)],
                  tol="la", signed_zero=False)
    f = torch.float32
    sing = torch.tensor([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    batch = torch.stack([torch.eye(3), sing])
    for t in (sing, batch):
        for name, tfn, cfn in (("inv", torch.linalg.inv, L.clt_linalg_inv),
                               ("det", torch.linalg.det, L.clt_linalg_det)):
            check("%s singular %s" % (name, list(t.shape)), tfn, cfn, [t], tol="la",
                  signed_zero=False)
        for k, name in ((1, "sign"), (0, "logabsdet")):
            check("slogdet %s singular %s" % (name, list(t.shape)),
                  lambda x, k=k: torch.linalg.slogdet(x)[1 - k],
                  lambda p, o, k=k: _slogdet_c(p, o, k), [t], tol="la", signed_zero=False)
        check("solve singular %s" % list(t.shape), torch.linalg.solve, L.clt_linalg_solve,
              [t, torch.ones(t.shape[:-1])])
    npd = torch.tensor([[4.0, 2, 0], [2, 5, 0], [0, 0, -1]])
    for t in (npd, torch.stack([torch.eye(3), npd]), -torch.eye(2)):
        check("cholesky not PD %s" % list(t.shape), torch.linalg.cholesky,
              lambda p, o: L.clt_linalg_cholesky(p, 0, o), [t])
    check("cholesky reads the lower triangle", torch.linalg.cholesky,
          lambda p, o: L.clt_linalg_cholesky(p, 0, o), [torch.tensor([[4.0, 1], [3, 5]])],
          tol="la")
    check("cholesky upper reads the upper triangle",
          lambda t: torch.linalg.cholesky(t, upper=True),
          lambda p, o: L.clt_linalg_cholesky(p, 1, o), [torch.tensor([[4.0, 1], [3, 5]])],
          tol="la")
    check("inv transposed", torch.linalg.inv, L.clt_linalg_inv,
          [In(_wellcond((5, 5), f), ("T",))], tol="la")
    check("inv expanded", torch.linalg.inv, L.clt_linalg_inv,
          [In(_wellcond((1, 4, 4), f), ("E", (3, 4, 4)))], tol="la")
    check("solve dtype mix", torch.linalg.solve, L.clt_linalg_solve,
          [_wellcond((3, 3), f), data((3,), torch.float64)])
    for dt in (torch.int32, torch.int64):
        for name, tfn, cfn in (("inv", torch.linalg.inv, L.clt_linalg_inv),
                               ("det", torch.linalg.det, L.clt_linalg_det),
                               ("cholesky", torch.linalg.cholesky,
                                lambda p, o: L.clt_linalg_cholesky(p, 0, o))):
            check("%s %s" % (name, dn(dt)), tfn, cfn, [data((3, 3), dt)])
    for sh in [(3,), (3, 4), ()]:
        check("inv shape %s" % list(sh), torch.linalg.inv, L.clt_linalg_inv, [data(sh, f)])
        check("det shape %s" % list(sh), torch.linalg.det, L.clt_linalg_det, [data(sh, f)])


# ---- pooling ------------------------------------------------------------

def pooling():
    # adaptive_avg_pool2d: the same windows, sums and divisions as torch's
    # CPU kernel, so the same bits; but for output size 1x1 torch calls
    # mean(), which sums in another order
    f = torch.float32
    sizes = [((2, 3, 8, 6), (4, 3)), ((2, 3, 7, 11), (3, 4)), ((1, 2, 5, 7), (2, 3)),
             ((2, 2, 3, 4), (5, 7)), ((2, 3, 6, 5), (1, 1)), ((1, 2, 1, 9), (3, 2)),
             ((3, 9, 9), (9, 9)), ((4, 13, 10), (5, 3)), ((2, 3, 5, 7), (0, 2)),
             ((0, 3, 5, 7), (2, 2)), ((2, 0, 5, 7), (2, 2)), ((0, 5, 7), (2, 3)),
             ((1, 1, 33, 47), (7, 9))]
    for dt in FLOATS:
        for sh, o in sizes:
            check("adaptive_avg_pool2d %s %s -> %s" % (dn(dt), list(sh), list(o)),
                  lambda t, o=o: torch.nn.functional.adaptive_avg_pool2d(t, o),
                  lambda p, r, o=o: L.clt_adaptive_avg_pool2d(p, shape_arr(o), r),
                  [data(sh, dt, special=True)], tol="red" if o == (1, 1) else "exact")
    ap = (lambda o: (lambda t: torch.nn.functional.adaptive_avg_pool2d(t, o),
                     lambda p, r: L.clt_adaptive_avg_pool2d(p, shape_arr(o), r)))
    tf, cf = ap((3, 4))
    check("adaptive_avg_pool2d transposed", tf, cf, [In(data((2, 3, 11, 7), f), ("T",))],
          tol="exact")
    check("adaptive_avg_pool2d channels last", tf, cf,
          [In(data((2, 7, 11, 3), f), ("V", [("perm", (0, 3, 1, 2))]))], tol="exact")
    check("adaptive_avg_pool2d sliced", tf, cf, [In(data((2, 3, 7, 22), f), ("S", 3, 1, 22, 2))],
          tol="exact")
    check("adaptive_avg_pool2d expanded", tf, cf,
          [In(data((1, 3, 7, 11), f), ("E", (2, 3, 7, 11)))], tol="exact")
    for dt in (torch.int64, torch.int32, torch.uint8, torch.bool):
        check("adaptive_avg_pool2d %s (refused)" % dn(dt), tf, cf, [data((1, 2, 4, 4), dt)])
    for sh in ((5, 7), (1, 2, 3, 5, 7), (2, 3, 0, 7), (2, 3, 5, 0), (3, 0, 7)):
        check("adaptive_avg_pool2d %s (refused)" % list(sh), tf, cf, [data(sh, f)])
    for o in ((-1, 2), (2, -3)):
        tf, cf = ap(o)
        check("adaptive_avg_pool2d size %s (refused)" % list(o), tf, cf, [data((1, 2, 4, 4), f)])


# ---- conv1d, conv_transpose2d, interpolate, 1-D pooling --------------------------------------

proto("clt_conv1d", [P, P, P, P, PP])
proto("clt_conv_transpose2d", [P, P, P, P, PP])
proto("clt_interpolate", [P, P, P, C.c_int, C.c_int, PP])


def _i64s(*v):
    return (C.c_int64 * len(v))(*v)


def conv_more():
    F = torch.nn.functional
    # conv1d: [N, C, L] (or [C, L]), weight [O, C / g, k]
    c1 = [((2, 4, 11), (6, 2, 3), (1, 0, 1, 2), True), ((3, 9), (5, 3, 4), (2, 1, 1, 1), False),
          ((2, 3, 17), (4, 3, 5), (3, 2, 2, 1), True), ((1, 6, 7), (6, 1, 3), (1, 1, 1, 6), True),
          ((2, 2, 3), (2, 2, 5), (1, 0, 1, 1), False)]  # kernel wider than the input: refused
    for dt in FLOATS:
        for xs, ws, (s_, p_, d_, g_), bias in c1:
            tol = "mm" if dt == torch.float32 else "red"
            ins = [data(xs, dt, lo=-2, hi=2), data(ws, dt, lo=-1, hi=1)]
            if bias:
                ins.append(data((ws[0],), dt))
            check("conv1d %s x%s w%s s%d p%d d%d g%d"
                  % (dn(dt), list(xs), list(ws), s_, p_, d_, g_),
                  lambda x, w, b=None, o=(s_, p_, d_, g_):
                  F.conv1d(x, w, b, stride=o[0], padding=o[1], dilation=o[2], groups=o[3]),
                  lambda x, w, *r, o=(s_, p_, d_, g_):
                  L.clt_conv1d(x, w, r[0] if len(r) > 1 else None, _i64s(*o), r[-1]),
                  ins, tol=tol)
    # conv_transpose2d: weight [Cin, Cout / g, kh, kw]
    ct = [((2, 4, 5, 6), (4, 3, 3, 2), ((1, 1), (0, 0), (0, 0), 1, (1, 1)), True),
          ((2, 4, 5, 6), (4, 2, 3, 3), ((2, 3), (1, 2), (1, 2), 2, (1, 1)), True),
          ((3, 4, 5), (3, 2, 2, 4), ((2, 1), (1, 0), (0, 0), 1, (2, 3)), False),
          ((1, 6, 3, 4), (6, 1, 3, 3), ((3, 2), (2, 1), (2, 1), 3, (2, 2)), True),
          ((2, 2, 4, 4), (2, 3, 3, 3), ((1, 1), (0, 0), (1, 0), 1, (2, 1)), True),  # op < dil
          ((1, 2, 3, 3), (2, 1, 3, 3), ((2, 2), (0, 0), (2, 0), 1, (1, 1)), False),  # op >= s, d
          ((1, 2, 2, 2), (2, 1, 1, 1), ((1, 1), (1, 1), (0, 0), 1, (1, 1)), False),  # size 0
          ((1, 3, 2, 2), (2, 1, 1, 1), ((1, 1), (0, 0), (0, 0), 1, (1, 1)), False)]  # channels
    for dt in FLOATS:
        for xs, ws, o, bias in ct:
            tol = "mm" if dt == torch.float32 else "red"
            ins = [data(xs, dt, lo=-2, hi=2), data(ws, dt, lo=-1, hi=1)]
            if bias:
                ins.append(data((ws[1] * o[3],), dt))
            flat = o[0] + o[1] + o[2] + (o[3],) + o[4]
            check("conv_transpose2d %s x%s w%s %s" % (dn(dt), list(xs), list(ws), o),
                  lambda x, w, b=None, o=o:
                  F.conv_transpose2d(x, w, b, o[0], o[1], o[2], o[3], o[4]),
                  lambda x, w, *r, f=flat:
                  L.clt_conv_transpose2d(x, w, r[0] if len(r) > 1 else None, _i64s(*f), r[-1]),
                  ins, tol=tol)
    # interpolate: torch 1.13's nearest (floor(i * scale), float) and bilinear
    cases = [((2, 3, 4, 5), (8, 10), None), ((1, 2, 3, 3), (5, 7), None),
             ((1, 2, 7, 9), (3, 4), None), ((2, 1, 5, 4), None, (2.0, 3.0)),
             ((1, 2, 5, 7), None, (1.7, 0.6)), ((1, 1, 3, 4), None, (2.5, 1.3)),
             ((1, 2, 1, 6), (4, 1), None), ((2, 2, 6, 6), (6, 6), None),
             ((1, 1, 10, 3), None, (0.35, 3.3)), ((1, 2, 4, 4), (0, 3), None),
             ((2, 4, 4), (5, 5), None), ((1, 1, 4, 4), None, (0.1, 1.0))]
    for dt in FLOATS:
        for xs, size, sf in cases:
            for mode, align in (("nearest", None), ("bilinear", False), ("bilinear", True)):
                m = 0 if mode == "nearest" else 1
                check("interpolate %s %s size=%s scale=%s %s align=%s"
                      % (dn(dt), list(xs), size, sf, mode, align),
                      lambda x, size=size, sf=sf, mode=mode, align=align:
                      F.interpolate(x, size=size, scale_factor=sf, mode=mode,
                                    align_corners=align),
                      lambda x, r, size=size, sf=sf, m=m, align=align:
                      L.clt_interpolate(x, _i64s(*size) if size else None,
                                        (C.c_double * 2)(*sf) if sf else None, m,
                                        1 if align else 0, r),
                      [data(xs, dt, special=False)], tol="exact" if m == 0 else "red")
    # max_pool1d / avg_pool1d through the 2-D kernels
    proto("clt_max_pool1d", [P, C.c_int64, C.c_int64, C.c_int64, C.c_int64, C.c_int, PP])
    proto("clt_avg_pool1d", [P, C.c_int64, C.c_int64, C.c_int64, C.c_int, C.c_int, PP])
    pools = [((2, 3, 11), 3, 2, 1, 1, False, True), ((3, 9), 2, None, 0, 1, False, True),
             ((2, 2, 10), 3, 2, 1, 2, True, False), ((1, 4, 7), 4, 3, 2, 1, True, True),
             ((2, 3, 5), 3, 1, 2, 1, False, True),  # padding over half the kernel: refused
             ((2, 3, 2), 5, 1, 0, 1, False, True)]  # window wider than the input: refused
    for dt in FLOATS:
        for xs, k, s_, p_, d_, ceil, cip in pools:
            check("max_pool1d %s %s k%d s%s p%d d%d ceil=%d" % (dn(dt), list(xs), k, s_, p_, d_,
                                                                 ceil),
                  lambda x, k=k, s_=s_, p_=p_, d_=d_, ceil=ceil:
                  F.max_pool1d(x, k, s_, p_, d_, ceil),
                  lambda x, r, k=k, s_=s_, p_=p_, d_=d_, ceil=ceil:
                  L.clt_max_pool1d(x, k, s_ or 0, p_, d_, int(ceil), r),
                  [data(xs, dt, special=True)], tol="exact")
            check("avg_pool1d %s %s k%d s%s p%d ceil=%d cip=%d" % (dn(dt), list(xs), k, s_, p_,
                                                                   ceil, cip),
                  lambda x, k=k, s_=s_, p_=p_, ceil=ceil, cip=cip:
                  F.avg_pool1d(x, k, s_, p_, ceil, cip),
                  lambda x, r, k=k, s_=s_, p_=p_, ceil=ceil, cip=cip:
                  L.clt_avg_pool1d(x, k, s_ or 0, p_, int(ceil), int(cip), r),
                  [data(xs, dt)], tol="red")
    for dt in (torch.int64, torch.int32):  # int64 sums divided with truncation; int32 refused
        check("avg_pool1d %s" % dn(dt), lambda x: F.avg_pool1d(x, 3, 2, 1),
              lambda x, r: L.clt_avg_pool1d(x, 3, 2, 1, 0, 1, r), [data((2, 3, 10), dt)],
              tol="exact")
        check("max_pool1d %s (refused)" % dn(dt), lambda x: F.max_pool1d(x, 3),
              lambda x, r: L.clt_max_pool1d(x, 3, 0, 0, 1, 0, r), [data((2, 3, 10), dt)])
    x = data((1, 2, 3, 4), torch.float32)
    check("interpolate nearest align_corners (refused)",
          lambda t: F.interpolate(t, size=(4, 4), mode="nearest", align_corners=True),
          lambda p, r: L.clt_interpolate(p, _i64s(4, 4), None, 0, 1, r), [x])
    check("interpolate size and scale (refused)",
          lambda t: F.interpolate(t, size=(4, 4), scale_factor=2.0),
          lambda p, r: L.clt_interpolate(p, _i64s(4, 4), (C.c_double * 2)(2, 2), 0, 0, r), [x])
    check("interpolate int64 (refused)", lambda t: F.interpolate(t, size=(4, 4)),
          lambda p, r: L.clt_interpolate(p, _i64s(4, 4), None, 0, 0, r),
          [data((1, 2, 3, 4), torch.int64)])
    check("interpolate transposed input",
          lambda t: F.interpolate(t, size=(5, 3), mode="bilinear", align_corners=False),
          lambda p, r: L.clt_interpolate(p, _i64s(5, 3), None, 1, 0, r),
          [In(data((2, 3, 7, 4), torch.float64), ("T",))], tol="tr")


def conv3d():
    """conv3d, conv_transpose3d and conv_transpose1d against torch's, refused
    settings included, and the Conv3d, ConvTranspose1d and ConvTranspose3d
    layers loading torch's state_dicts."""
    F = torch.nn.functional
    proto("clt_conv3d", [P, P, P, P, PP])
    proto("clt_conv_transpose3d", [P, P, P, P, PP])
    proto("clt_conv_transpose1d", [P, P, P, P, PP])
    # conv3d: weight [O, C / g, kd, kh, kw]; options stride, padding, dilation, groups
    c3 = [((2, 3, 4, 5, 6), (4, 3, 2, 3, 2), ((1, 1, 1), (0, 0, 0), (1, 1, 1), 1), True),
          ((1, 4, 5, 4, 7), (6, 2, 3, 2, 3), ((2, 1, 3), (1, 0, 2), (1, 2, 1), 2), True),
          ((2, 3, 6, 5), (3, 2, 2, 2, 2), ((1, 2, 1), (1, 1, 0), (2, 1, 2), 1), False),
          ((3, 6, 2, 3, 3), (6, 2, 1, 3, 1), ((1, 1, 2), (0, 1, 0), (1, 1, 1), 3), True),
          ((1, 2, 2, 3, 3), (2, 2, 3, 1, 1), ((1, 1, 1), (0, 0, 0), (1, 1, 1), 1), False),  # deep
          ((1, 3, 3, 3, 3), (2, 3, 1, 1, 1), ((1, 1, 1), (0, 0, 0), (1, 1, 1), 2), False),  # groups
          ((1, 2, 3, 3, 3), (2, 2, 2, 2, 2), ((1, 0, 1), (0, 0, 0), (1, 1, 1), 1), False)]  # s 0
    for dt in FLOATS:
        for xs, ws, o, bias in c3:
            tol = "mm" if dt == torch.float32 else "red"
            ins = [data(xs, dt, lo=-2, hi=2), data(ws, dt, lo=-1, hi=1)]
            if bias:
                ins.append(data((ws[0],), dt))
            flat = o[0] + o[1] + o[2] + (o[3],)
            check("conv3d %s x%s w%s %s" % (dn(dt), list(xs), list(ws), o),
                  lambda x, w, b=None, o=o: F.conv3d(x, w, b, o[0], o[1], o[2], o[3]),
                  lambda x, w, *r, f=flat:
                  L.clt_conv3d(x, w, r[0] if len(r) > 1 else None, _i64s(*f), r[-1]),
                  ins, tol=tol)
    # conv_transpose3d: weight [Cin, Cout / g, kd, kh, kw]; options stride,
    # padding, output_padding, groups, dilation
    t3 = [((2, 3, 3, 4, 2), (3, 4, 2, 3, 2), ((1, 1, 1), (0, 0, 0), (0, 0, 0), 1, (1, 1, 1)), True),
          ((1, 4, 2, 3, 4), (4, 3, 3, 2, 3), ((2, 1, 3), (1, 0, 2), (1, 1, 2), 2, (1, 2, 1)), True),
          ((2, 3, 2, 3), (2, 3, 2, 2, 2), ((2, 2, 1), (1, 1, 0), (1, 0, 1), 1, (1, 1, 2)), False),
          ((3, 6, 2, 3, 3), (6, 1, 1, 3, 1), ((1, 3, 2), (0, 1, 0), (0, 2, 1), 3, (1, 1, 1)), True),
          ((1, 2, 2, 2, 2), (2, 1, 2, 2, 2), ((2, 2, 2), (0, 0, 0), (2, 0, 0), 1, (1, 1, 1)),
           False),  # output_padding >= stride and dilation
          ((1, 2, 2, 2, 2), (2, 1, 1, 1, 1), ((1, 1, 1), (0, 1, 0), (0, 0, 0), 1, (1, 1, 1)),
           False)]  # output size 0
    for dt in FLOATS:
        for xs, ws, o, bias in t3:
            tol = "mm" if dt == torch.float32 else "red"
            ins = [data(xs, dt, lo=-2, hi=2), data(ws, dt, lo=-1, hi=1)]
            if bias:
                ins.append(data((ws[1] * o[3],), dt))
            flat = o[0] + o[1] + o[2] + (o[3],) + o[4]
            check("conv_transpose3d %s x%s w%s %s" % (dn(dt), list(xs), list(ws), o),
                  lambda x, w, b=None, o=o:
                  F.conv_transpose3d(x, w, b, o[0], o[1], o[2], o[3], o[4]),
                  lambda x, w, *r, f=flat:
                  L.clt_conv_transpose3d(x, w, r[0] if len(r) > 1 else None, _i64s(*f), r[-1]),
                  ins, tol=tol)
    # conv_transpose1d: weight [Cin, Cout / g, k]; stride, padding,
    # output_padding, groups, dilation
    t1 = [((2, 4, 7), (4, 3, 3), (1, 0, 0, 2, 1), True), ((3, 5), (3, 2, 4), (3, 2, 2, 1, 1), True),
          ((1, 2, 6), (2, 4, 2), (2, 1, 1, 2, 3), False),
          ((1, 2, 6), (2, 4, 2), (2, 1, 3, 2, 3), False)]  # output_padding >= stride, dilation
    for dt in FLOATS:
        for xs, ws, o, bias in t1:
            tol = "mm" if dt == torch.float32 else "red"
            ins = [data(xs, dt, lo=-2, hi=2), data(ws, dt, lo=-1, hi=1)]
            if bias:
                ins.append(data((ws[1] * o[3],), dt))
            check("conv_transpose1d %s x%s w%s %s" % (dn(dt), list(xs), list(ws), o),
                  lambda x, w, b=None, o=o:
                  F.conv_transpose1d(x, w, b, o[0], o[1], o[2], o[3], o[4]),
                  lambda x, w, *r, o=o:
                  L.clt_conv_transpose1d(x, w, r[0] if len(r) > 1 else None, _i64s(*o), r[-1]),
                  ins, tol=tol)
    check("conv3d transposed input",
          lambda x, w: F.conv3d(x, w, None, 1, 1),
          lambda x, w, r: L.clt_conv3d(x, w, None, _i64s(1, 1, 1, 1, 1, 1, 1, 1, 1, 1), r),
          [In(data((2, 3, 4, 5, 4), torch.float64), ("T",)), data((2, 3, 2, 2, 2), torch.float64)],
          tol="red")
    # the layers, from torch's state_dicts
    try:
        from safetensors.torch import save_file
    except Exception:  # pragma: no cover
        print("conformance: conv3d layer state_dicts skipped (no safetensors)")
        return
    import tempfile
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_conv3d_layer", [P, C.c_int64, C.c_int64, P, P, C.c_int, P, PP])
    proto("clt_conv_transpose3d_layer", [P, C.c_int64, C.c_int64, P, P, C.c_int, P, PP])
    proto("clt_conv_transpose1d_layer", [P, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    torch.manual_seed(11)
    made = [
        ("Conv3d", torch.nn.Conv3d(4, 6, (3, 2, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), groups=2),
         lambda r: L.clt_conv3d_layer(DEV, 4, 6, _i64s(3, 2, 2),
                                      _i64s(1, 2, 1, 1, 0, 1, 1, 1, 2, 2), 1, None, r),
         (2, 4, 4, 5, 6)),
        ("Conv3d no bias", torch.nn.Conv3d(3, 2, 2, bias=False),
         lambda r: L.clt_conv3d_layer(DEV, 3, 2, _i64s(2, 2, 2), None, 0, None, r), (3, 3, 4, 4)),
        ("ConvTranspose3d",
         torch.nn.ConvTranspose3d(4, 6, (3, 2, 2), (2, 1, 1), (1, 0, 0), (1, 0, 0), groups=2,
                                  dilation=(1, 1, 2)),
         lambda r: L.clt_conv_transpose3d_layer(
             DEV, 4, 6, _i64s(3, 2, 2), _i64s(2, 1, 1, 1, 0, 0, 1, 0, 0, 2, 1, 1, 2), 1, None, r),
         (2, 4, 3, 4, 3)),
        ("ConvTranspose1d", torch.nn.ConvTranspose1d(4, 6, 3, 2, 1, 1, groups=2),
         lambda r: L.clt_conv_transpose1d_layer(DEV, 4, 6, 3, _i64s(2, 1, 1, 2, 1), 1, None, r),
         (3, 4, 9)),
    ]
    with tempfile.TemporaryDirectory() as d:
        for name, m, make, xs in made:
            path = os.path.join(d, "m.safetensors")
            save_file(m.state_dict(), path)
            cm, y = P(), P()
            keep = []
            try:
                if make(C.byref(cm)) or L.clt_module_load(cm, path.encode()):
                    fail(name + " state_dict", L.clt_last_error().decode())
                    continue
                x = data(xs, torch.float32, lo=-2, hi=2)
                keep.append(upload(x))
                if L.clt_module_forward(cm, keep[0], C.byref(y)):
                    fail(name + " state_dict", L.clt_last_error().decode())
                    continue
                keep.append(y)
                got = download(y)[0]
                want = m(x).detach().numpy()
                same = got.shape == want.shape
                ok(name + " state_dict", same and np.allclose(got, want, 1e-5, 1e-6),
                   "shape %s / %s, max diff %g"
                   % (got.shape, want.shape, np.abs(got - want).max() if same else -1))
            finally:
                for t in keep:
                    L.clt_tensor_free(t)
                L.clt_module_free(cm)


def conv_layers_state_dict():
    """torch's Conv1d, ConvTranspose2d state_dicts, saved with safetensors,
    load into cltensor's layers of the same make and give torch's outputs."""
    try:
        from safetensors.torch import save_file
    except Exception:  # pragma: no cover
        print("conformance: conv layer state_dicts skipped (no safetensors)")
        return
    import tempfile
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_conv1d_layer", [P, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_conv_transpose2d_layer",
          [P, C.c_int64, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    torch.manual_seed(7)
    made = [
        ("ConvTranspose2d", torch.nn.ConvTranspose2d(4, 6, (3, 2), 2, 1, 1, groups=2),
         lambda r: L.clt_conv_transpose2d_layer(DEV, 4, 6, 3, 2, _i64s(2, 2, 1, 1, 1, 1, 2, 1, 1),
                                                1, None, r), (2, 4, 5, 6)),
        ("ConvTranspose2d no bias", torch.nn.ConvTranspose2d(3, 2, 2, bias=False),
         lambda r: L.clt_conv_transpose2d_layer(DEV, 3, 2, 2, 2, None, 0, None, r), (3, 4, 4)),
        ("Conv1d", torch.nn.Conv1d(4, 6, 3, 2, 1, 2, groups=2),
         lambda r: L.clt_conv1d_layer(DEV, 4, 6, 3, _i64s(2, 1, 2, 2), 1, None, r), (3, 4, 17)),
    ]
    with tempfile.TemporaryDirectory() as d:
        for name, m, make, xs in made:
            path = os.path.join(d, "m.safetensors")
            save_file(m.state_dict(), path)
            cm, y = P(), P()
            keep = []
            try:
                if make(C.byref(cm)) or L.clt_module_load(cm, path.encode()):
                    fail(name + " state_dict", L.clt_last_error().decode())
                    continue
                x = data(xs, torch.float32, lo=-2, hi=2)
                keep.append(upload(x))
                if L.clt_module_forward(cm, keep[0], C.byref(y)):
                    fail(name + " state_dict", L.clt_last_error().decode())
                    continue
                keep.append(y)
                got = download(y)[0]
                want = m(x).detach().numpy()
                same = got.shape == want.shape
                ok(name + " state_dict", same and np.allclose(got, want, 1e-5, 1e-6),
                   "shape %s / %s, max diff %g"
                   % (got.shape, want.shape, np.abs(got - want).max() if same else -1))
            finally:
                for t in keep:
                    L.clt_tensor_free(t)
                L.clt_module_free(cm)


# ---- nn3: lazy layers, CrossMapLRN2d ------------------------------------

def nn3():
    """CrossMapLRN2d against torch.nn.CrossMapLRN2d (its quirky windows
    included); the lazy layers after their first forward hold torch's
    state_dict keys and shapes, and with torch's lazy layer's values loaded
    (safetensors) give torch's outputs, on the second forward too."""
    proto("clt_cross_map_lrn2d", [P, C.c_int64, C.c_double, C.c_double, C.c_double, PP])
    for size in (1, 2, 3, 5, 8):
        for ch in (1, 3, 6):
            for dt in (torch.float32, torch.float64):
                x = data((2, ch, 3, 2), dt, lo=-3, hi=3)
                check("cross_map_lrn2d size %d C %d %s" % (size, ch, dn(dt)),
                      lambda t, size=size: torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)(t),
                      lambda p, r, size=size: L.clt_cross_map_lrn2d(p, size, 0.5, 0.75, 1.5, r),
                      [x], tol="red")
    check("cross_map_lrn2d 3D input refused",
          lambda t: torch.nn.CrossMapLRN2d(3)(t),
          lambda p, r: L.clt_cross_map_lrn2d(p, 3, 1e-4, 0.75, 1.0, r),
          [data((2, 3, 4), torch.float32)], expect_error=AssertionError("4D"))
    try:
        from safetensors.torch import save_file
    except Exception:  # pragma: no cover
        print("conformance: nn3 lazy layers skipped (no safetensors)")
        return
    _nn3_als()
    import tempfile
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_name", [P], C.c_char_p)
    proto("clt_module_has_uninitialized_params", [P], C.c_int)
    proto("clt_module_state", [P, C.POINTER(C.c_void_p), C.POINTER(C.c_size_t)])
    proto("clt_free", [P], None)
    proto("clt_lazy_linear", [P, C.c_int64, C.c_int, P, PP])
    proto("clt_lazy_conv1d", [P, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_lazy_conv2d", [P, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_lazy_conv3d", [P, C.c_int64, P, P, C.c_int, P, PP])
    proto("clt_lazy_conv_transpose1d", [P, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_lazy_conv_transpose2d", [P, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_lazy_conv_transpose3d", [P, C.c_int64, P, P, C.c_int, P, PP])
    for n in ("batch_norm1d", "batch_norm2d", "batch_norm3d", "instance_norm1d",
              "instance_norm2d", "instance_norm3d"):
        proto("clt_lazy_" + n, [P, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_tensor_shape", [P], C.POINTER(C.c_int64))
    proto("clt_tensor_ndim", [P], C.c_int)

    class Named(C.Structure):
        _fields_ = [("name", C.c_char_p), ("tensor", C.c_void_p)]

    def c_state(cm):
        arr, n = C.c_void_p(), C.c_size_t()
        if L.clt_module_state(cm, C.byref(arr), C.byref(n)):
            return None
        items = C.cast(arr, C.POINTER(Named))
        out = []
        for i in range(n.value):
            t = items[i].tensor
            nd = L.clt_tensor_ndim(t)
            sh = L.clt_tensor_shape(t)
            out.append((items[i].name.decode(), tuple(sh[k] for k in range(nd))))
        L.clt_free(arr)
        return out

    k3 = _i64s(2, 1, 2)
    made = [
        ("LazyLinear", lambda: torch.nn.LazyLinear(4),
         lambda r: L.clt_lazy_linear(DEV, 4, 1, None, r), (3, 2, 5), "Linear"),
        ("LazyConv1d groups 2", lambda: torch.nn.LazyConv1d(4, 3, 2, 1, 1, 2),
         lambda r: L.clt_lazy_conv1d(DEV, 4, 3, _i64s(2, 1, 1, 2), 1, None, r), (2, 6, 9),
         "Conv1d"),
        ("LazyConv2d unbatched", lambda: torch.nn.LazyConv2d(3, (2, 3), bias=False),
         lambda r: L.clt_lazy_conv2d(DEV, 3, 2, 3, None, 0, None, r), (4, 5, 6), "Conv2d"),
        ("LazyConv3d", lambda: torch.nn.LazyConv3d(2, (2, 1, 2)),
         lambda r: L.clt_lazy_conv3d(DEV, 2, k3, None, 1, None, r), (1, 3, 3, 4, 3), "Conv3d"),
        ("LazyConvTranspose1d", lambda: torch.nn.LazyConvTranspose1d(5, 2),
         lambda r: L.clt_lazy_conv_transpose1d(DEV, 5, 2, None, 1, None, r), (2, 3, 4),
         "ConvTranspose1d"),
        ("LazyConvTranspose2d stride 2", lambda: torch.nn.LazyConvTranspose2d(2, (3, 2), (2, 1)),
         lambda r: L.clt_lazy_conv_transpose2d(DEV, 2, 3, 2, _i64s(2, 1, 0, 0, 0, 0, 1, 1, 1),
                                               1, None, r), (2, 4, 3, 3), "ConvTranspose2d"),
        ("LazyConvTranspose3d", lambda: torch.nn.LazyConvTranspose3d(2, (2, 1, 2)),
         lambda r: L.clt_lazy_conv_transpose3d(DEV, 2, k3, None, 1, None, r), (3, 2, 2, 3),
         "ConvTranspose3d"),
        ("LazyBatchNorm1d", lambda: torch.nn.LazyBatchNorm1d(1e-3, 0.25),
         lambda r: L.clt_lazy_batch_norm1d(DEV, 1e-3, 0.25, 1, 1, r), (4, 3, 5), "BatchNorm1d"),
        ("LazyBatchNorm2d no affine", lambda: torch.nn.LazyBatchNorm2d(affine=False),
         lambda r: L.clt_lazy_batch_norm2d(DEV, 1e-5, 0.1, 0, 1, r), (3, 2, 2, 3),
         "BatchNorm2d"),
        ("LazyBatchNorm3d", lambda: torch.nn.LazyBatchNorm3d(),
         lambda r: L.clt_lazy_batch_norm3d(DEV, 1e-5, 0.1, 1, 1, r), (2, 2, 2, 2, 3),
         "BatchNorm3d"),
        ("LazyInstanceNorm1d affine", lambda: torch.nn.LazyInstanceNorm1d(affine=True,
                                                                       track_running_stats=False),
         lambda r: L.clt_lazy_instance_norm1d(DEV, 1e-5, 0.1, 1, 0, r), (2, 4, 6),
         "InstanceNorm1d"),
        ("LazyInstanceNorm2d track", lambda: torch.nn.LazyInstanceNorm2d(
            affine=False, track_running_stats=True),
         lambda r: L.clt_lazy_instance_norm2d(DEV, 1e-5, 0.1, 0, 1, r), (2, 3, 3, 4),
         "InstanceNorm2d"),
        ("LazyInstanceNorm3d", lambda: torch.nn.LazyInstanceNorm3d(affine=True,
                                                                   track_running_stats=True),
         lambda r: L.clt_lazy_instance_norm3d(DEV, 1e-5, 0.1, 1, 1, r), (2, 2, 2, 3, 2),
         "InstanceNorm3d"),
    ]
    import warnings
    warnings.filterwarnings("ignore", category=UserWarning)
    with tempfile.TemporaryDirectory() as d:
        for name, tmake, cmake, xs, plain in made:
            torch.manual_seed(11)
            tm = tmake()
            cm, y1, y2 = P(), P(), P()
            keep = []
            try:
                if cmake(C.byref(cm)):
                    fail(name, L.clt_last_error().decode())
                    continue
                ok(name + " lazy before", L.clt_module_has_uninitialized_params(cm) == 1
                   and c_state(cm) is None, "lists tensors before the first forward")
                x = data(xs, torch.float32, lo=-2, hi=2)
                keep.append(upload(x))
                with torch.no_grad():
                    tm(x)  # torch's first forward initialises it
                if L.clt_module_forward(cm, keep[0], C.byref(y1)):
                    fail(name, L.clt_last_error().decode())
                    continue
                keep.append(y1)
                want_state = [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
                got_state = c_state(cm)
                ok(name + " state_dict", got_state == want_state,
                   "%s / torch %s" % (got_state, want_state))
                ok(name + " becomes " + plain, L.clt_module_name(cm).decode() == plain
                   and type(tm).__name__ == plain, L.clt_module_name(cm).decode())
                # torch's values into cltensor's layer: the same outputs
                path = os.path.join(d, "m.safetensors")
                save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, path)
                if L.clt_module_load(cm, path.encode()):
                    fail(name + " load", L.clt_last_error().decode())
                    continue
                x2 = data(xs, torch.float32, lo=-2, hi=2)
                keep.append(upload(x2))
                if L.clt_module_forward(cm, keep[-1], C.byref(y2)):
                    fail(name + " second forward", L.clt_last_error().decode())
                    continue
                keep.append(y2)
                with torch.no_grad():
                    want = tm(x2).numpy()
                got = download(y2)[0]
                same = got.shape == want.shape
                ok(name + " forward", same and np.allclose(got, want, 1e-4, 1e-5),
                   "shape %s / %s, max diff %g"
                   % (got.shape, want.shape, np.abs(got - want).max() if same else -1))
            finally:
                for t in keep:
                    L.clt_tensor_free(t)
                L.clt_module_free(cm)


def _nn3_als():
    """AdaptiveLogSoftmaxWithLoss: cltensor's state names and shapes are
    torch's state_dict; with torch's values loaded, output, loss, log_prob
    and predict agree (batched and unbatched), and the errors too."""
    from safetensors.torch import save_file
    import tempfile
    proto("clt_adaptive_log_softmax_with_loss",
          [P, C.c_int64, C.c_int64, P, C.c_size_t, C.c_double, C.c_int, P, PP])
    proto("clt_adaptive_log_softmax_forward", [P, P, P, PP, PP])
    proto("clt_adaptive_log_softmax_log_prob", [P, P, PP])
    proto("clt_adaptive_log_softmax_predict", [P, P, PP])
    proto("clt_module_to_dtype", [P, C.c_int])
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_free", [P], None)
    configs = [(8, 20, [4, 10, 15], 2.0, False), (16, 7, [3], 4.0, True),
               (6, 12, [2, 5], 1.5, True)]
    with tempfile.TemporaryDirectory() as d:
        for inf, ncls, cuts, div, hb in configs:
            name = "AdaptiveLogSoftmaxWithLoss(%d, %d, %s, %g, %s)" % (inf, ncls, cuts, div, hb)
            torch.manual_seed(5)
            tm = torch.nn.AdaptiveLogSoftmaxWithLoss(inf, ncls, cuts, div, hb).double()
            cm = P()
            keep = []
            try:
                if L.clt_adaptive_log_softmax_with_loss(DEV, inf, ncls, _i64s(*cuts), len(cuts),
                                                        div, int(hb), None, C.byref(cm)):
                    fail(name, L.clt_last_error().decode())
                    continue
                if L.clt_module_to_dtype(cm, 1):
                    fail(name, L.clt_last_error().decode())
                    continue
                path = os.path.join(d, "als.safetensors")
                save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, path)
                if L.clt_module_load(cm, path.encode()):
                    fail(name + " load", L.clt_last_error().decode())
                    continue
                x = data((9, inf), torch.float64, lo=-2, hi=2)
                t = torch.randint(0, ncls, (9,), generator=G)
                t[0], t[1] = 0, ncls - 1
                for label, xx, tt in (("batched", x, t), ("unbatched", x[3], t[3])):
                    out, loss = P(), P()
                    cx, ct = upload(xx), upload(tt)
                    keep += [cx, ct]
                    if L.clt_adaptive_log_softmax_forward(cm, cx, ct, C.byref(out),
                                                          C.byref(loss)):
                        fail(name + " " + label, L.clt_last_error().decode())
                        continue
                    keep += [out, loss]
                    with torch.no_grad():
                        r = tm(xx, tt)
                    go, gl = download(out)[0], download(loss)[0]
                    ok(name + " " + label + " output", go.shape == tuple(r.output.shape)
                       and np.allclose(go, r.output.numpy(), 1e-12, 1e-12), "%s / %s" % (
                           go, r.output.numpy()))
                    ok(name + " " + label + " loss", np.allclose(gl, r.loss.numpy(), 1e-12,
                                                                   1e-12), "%s / %s" % (
                        gl, r.loss.numpy()))
                check(name + " log_prob", lambda a: tm.log_prob(a).detach(),
                      lambda p, r: L.clt_adaptive_log_softmax_log_prob(cm, p, r), [x], tol="red")
                check(name + " predict", lambda a: tm.predict(a),
                      lambda p, r: L.clt_adaptive_log_softmax_predict(cm, p, r), [x * 3],
                      tol="exact")
                bad = t.clone()
                bad[2] = ncls
                check(name + " target out of range",
                      lambda a, b: tm(a, b).output,
                      lambda p, q, r: L.clt_adaptive_log_softmax_forward(cm, p, q, r, C.byref(P())),
                      [x, bad])
                check(name + " 2D target",
                      lambda a, b: tm(a, b).output,
                      lambda p, q, r: L.clt_adaptive_log_softmax_forward(cm, p, q, r, C.byref(P())),
                      [x, t.reshape(3, 3)])
            finally:
                for k in keep:
                    L.clt_tensor_free(k)
                L.clt_module_free(cm)


# ---- views --------------------------------------------------------------

def views():
    f = torch.float32
    a = data((2, 3, 4), f)

    def shp(fnc):
        return lambda p, o, s: fnc(p, len(s), shape_arr(s), o)

    for s in [(6, 4), (-1,), (4, -1, 2), (24,), (2, 3, 4, 1), (5, 5), (-1, -1), (0, -1), (-1, 5)]:
        for n, tf, cf in (("view", lambda t, s: t.view(*s), L.clt_view),
                          ("reshape", lambda t, s: t.reshape(*s), L.clt_reshape)):
            check("%s %s" % (n, list(s)), lambda t, s=s, tf=tf: tf(t, s),
                  lambda p, o, s=s, cf=cf: cf(p, len(s), shape_arr(s), o), [a], tol="exact")
    tr = In(data((4, 3), f), ("T",))
    check("view transposed", lambda t: t.view(12), lambda p, o: L.clt_view(p, 1, shape_arr((12,)), o),
          [tr], tol="exact")
    check("reshape transposed", lambda t: t.reshape(12),
          lambda p, o: L.clt_reshape(p, 1, shape_arr((12,)), o), [tr], tol="exact")
    check("view 0-d to [1]", lambda t: t.view(1), lambda p, o: L.clt_view(p, 1, shape_arr((1,)), o),
          [data((), f)], tol="exact")
    check("view [1] to 0-d", lambda t: t.view(()), lambda p, o: L.clt_view(p, 0, None, o),
          [data((1,), f)], tol="exact")
    check("view empty -1", lambda t: t.view(0, -1), lambda p, o: L.clt_view(p, 2, shape_arr((0, -1)), o),
          [data((0, 3), f)], tol="exact")
    check("view expanded", lambda t: t.view(3, 2, 2),
          lambda p, o: L.clt_view(p, 3, shape_arr((3, 2, 2)), o),
          [In(data((1, 4), f), ("E", (3, 4)))], tol="exact")
    check("view slice compatible", lambda t: t.view(2, 2, 3),
          lambda p, o: L.clt_view(p, 3, shape_arr((2, 2, 3)), o),
          [In(data((6, 3), f), ("S", 0, 1, 5, 1))], tol="exact")
    for s0, s1 in [(0, -1), (1, 2), (-2, -1), (0, 0), (2, 2), (-3, -1), (3, 0), (0, -4), (1, 1)]:
        check("flatten %d %d" % (s0, s1), lambda t, s0=s0, s1=s1: t.flatten(s0, s1),
              lambda p, o, s0=s0, s1=s1: L.clt_flatten(p, s0, s1, o), [a], tol="exact")
    check("flatten 0-d", lambda t: t.flatten(), lambda p, o: L.clt_flatten(p, 0, -1, o),
          [data((), f)], tol="exact")
    check("flatten transposed", lambda t: t.flatten(), lambda p, o: L.clt_flatten(p, 0, -1, o),
          [tr], tol="exact")
    for d0, d1 in [(0, 1), (-1, 0), (2, 2), (0, 3), (-4, 0)]:
        check("transpose %d %d" % (d0, d1), lambda t, d0=d0, d1=d1: t.transpose(d0, d1),
              lambda p, o, d0=d0, d1=d1: L.clt_transpose(p, d0, d1, o), [a], tol="exact")
    check("transpose 0-d", lambda t: t.transpose(0, -1), lambda p, o: L.clt_transpose(p, 0, -1, o),
          [data((), f)], tol="exact")
    for dims in [(2, 0, 1), (0, 1, 2), (-1, 0, 1), (0, 0, 1), (0, 1), (0, 1, 3)]:
        arr = (C.c_int * len(dims))(*dims)
        check("permute %s" % (dims,), lambda t, dims=dims: t.permute(*dims),
              lambda p, o, arr=arr, dims=dims: L.clt_permute(p, len(dims), arr, o), [a],
              tol="exact")
    for d, st, ln in [(1, 0, 2), (-1, 1, 3), (2, -2, 2), (0, 2, 0), (1, 2, 2), (1, -4, 1),
                      (1, 3, 0), (1, 4, 0), (1, -3, 3), (3, 0, 1)]:
        check("narrow %d %d %d" % (d, st, ln), lambda t, d=d, st=st, ln=ln: t.narrow(d, st, ln),
              lambda p, o, d=d, st=st, ln=ln: L.clt_narrow(p, d, st, ln, o), [a], tol="exact")
    BIG = 2**63 - 1
    for d, s, e, stp in [(1, 0, 2, 1), (2, 1, BIG, 2), (2, -3, -1, 1), (2, -100, 100, 1),
                         (2, 3, 1, 1), (0, 5, 9, 1), (2, 0, BIG, 3), (1, 0, 3, 0), (1, 0, 3, -1),
                         (-1, -1, BIG, 1), (2, 4, BIG, 1)]:
        def tsl(t, d=d, s=s, e=e, stp=stp):
            if stp <= 0:
                raise ValueError("step must be positive")
            idx = [slice(None)] * t.dim()
            idx[d] = slice(s, None if e == BIG else e, stp)
            return t[tuple(idx)]
        check("slice %d %d %d %d" % (d, s, e if e != BIG else -0, stp), tsl,
              lambda p, o, d=d, s=s, e=e, stp=stp: L.clt_slice(p, d, s, e, stp, o), [a],
              tol="exact")
    b = data((2, 1, 3, 1), f)
    for d in [1, 0, -1, 3, 4, -5]:
        check("squeeze %d" % d, lambda t, d=d: t.squeeze(d),
              lambda p, o, d=d: L.clt_squeeze(p, d, o), [b], tol="exact")
    check("squeeze_all", lambda t: t.squeeze(), L.clt_squeeze_all, [b], tol="exact")
    check("squeeze_all 0-d", lambda t: t.squeeze(), L.clt_squeeze_all, [data((), f)], tol="exact")
    check("squeeze 0-d", lambda t: t.squeeze(0), lambda p, o: L.clt_squeeze(p, 0, o),
          [data((), f)], tol="exact")
    for d in [0, 3, -1, -4, 4, -5]:
        check("unsqueeze %d" % d, lambda t, d=d: t.unsqueeze(d),
              lambda p, o, d=d: L.clt_unsqueeze(p, d, o), [a], tol="exact")
    check("unsqueeze 0-d", lambda t: t.unsqueeze(0), lambda p, o: L.clt_unsqueeze(p, 0, o),
          [data((), f)], tol="exact")
    check("unsqueeze 0-d -1", lambda t: t.unsqueeze(-1), lambda p, o: L.clt_unsqueeze(p, -1, o),
          [data((), f)], tol="exact")
    c = data((3, 1), f)
    for s in [(3, 4), (2, 3, 4), (-1, 4), (3, 1), (4, 4), (3,), (0, 3, 1), (3, 0), (2, -1, 4),
              (-1, 3, 1)]:
        check("expand %s" % (list(s),), lambda t, s=s: t.expand(*s),
              lambda p, o, s=s: L.clt_expand(p, len(s), shape_arr(s), o), [c], tol="exact")
    check("expand 0-d", lambda t: t.expand(2, 3),
          lambda p, o: L.clt_expand(p, 2, shape_arr((2, 3)), o), [data((), f)], tol="exact")
    check("contiguous transposed", lambda t: t.contiguous(), L.clt_contiguous, [tr], tol="exact")
    check("contiguous expanded", lambda t: t.contiguous(), L.clt_contiguous,
          [In(data((1, 4), f), ("E", (3, 4)))], tol="exact")
    for dt in DTYPES:
        check("contiguous sliced %s" % dn(dt), lambda t: t.contiguous(), L.clt_contiguous,
              [In(data((3, 7), dt), ("S", 1, 1, 7, 2))], tol="exact")

    def catc(fn, dim):
        def run(*ps):
            o = ps[-1]
            arr = (P * len(ps[:-1]))(*ps[:-1])
            return fn(arr, len(ps) - 1, dim, o)
        return run

    cat_cases = [
        ([(2, 3), (4, 3)], 0, [f, f]), ([(2, 3), (2, 1)], 1, [f, f]), ([(2, 3), (2, 3)], -1, [f, f]),
        ([(2, 3), (0,)], 0, [f, f]), ([(0,), (2, 3)], 1, [f, f]), ([(2, 3), (3, 3)], 1, [f, f]),
        ([(2, 3), (2, 3)], 2, [f, f]), ([(2, 3), (4,)], 0, [f, f]), ([(), ()], 0, [f, f]),
        ([(2, 3), (1, 3)], 0, [torch.int32, f]), ([(2,), (3,)], 0, [torch.uint8, torch.int64]),
        ([(2,), (3,)], 0, [torch.bool, torch.uint8]), ([(2,), (3,), (1,)], 0, [torch.bool] * 3),
        ([(2, 0), (2, 3)], 1, [f, f]), ([(0, 3), (0, 3)], 0, [f, f]), ([(0,), (0,)], 0, [f, f]),
        ([(2, 3)], 0, [f]), ([(2, 3)], -3, [f]), ([(2, 3), (2, 3)], -2, [torch.int32, torch.float64]),
    ]
    for shapes, dim, dts in cat_cases:
        ins = [data(s, d) for s, d in zip(shapes, dts)]
        check("cat %s %s d=%d" % ([list(s) for s in shapes], [dn(d) for d in dts], dim),
              lambda *ts, dim=dim: torch.cat(ts, dim), catc(L.clt_cat, dim), ins, tol="exact")
    check("cat views", lambda *ts: torch.cat(ts, 1), catc(L.clt_cat, 1),
          [In(data((4, 3), f), ("T",)), In(data((3, 9), f), ("S", 1, 0, 9, 4)),
           In(data((3, 1), f), ("E", (3, 2)))], tol="exact")
    check("cat none", lambda: torch.cat([], 0), catc(L.clt_cat, 0), [])
    stack_cases = [([(2, 3), (2, 3)], 0), ([(2, 3), (2, 3)], 2), ([(2, 3), (2, 3)], -1),
                   ([(2, 3), (2, 3)], -3), ([(2, 3), (2, 3)], 3), ([(2, 3), (2, 3)], -4),
                   ([(2, 3), (3, 2)], 0), ([(), ()], 0), ([(0,), (0,)], 1), ([(3,)], 0)]
    for shapes, dim in stack_cases:
        ins = [data(s, f) for s in shapes]
        check("stack %s d=%d" % ([list(s) for s in shapes], dim),
              lambda *ts, dim=dim: torch.stack(ts, dim), catc(L.clt_stack, dim), ins, tol="exact")
    check("stack promote", lambda *ts: torch.stack(ts, 0), catc(L.clt_stack, 0),
          [data((2,), torch.int32), data((2,), torch.float64)], tol="exact")
    check("stack none", lambda: torch.stack([], 0), catc(L.clt_stack, 0), [])
    # views feeding ops: value chains
    check("permute then sum_dim", lambda t: t.permute(2, 0, 1).sum(1),
          lambda p, o: _chain(p, o), [a], tol="red")


def _chain(p, o):
    q = P()
    arr = (C.c_int * 3)(2, 0, 1)
    st = L.clt_permute(p, 3, arr, C.byref(q))
    if st:
        return st
    st = L.clt_sum_dim(q, 1, 0, o)
    L.clt_tensor_free(q)
    return st


# ---- creation ----------------------------------------------------------------

def creation():
    for dt in DTYPES:
        if dt == torch.bool:
            continue
        for s, e, stp in [(0, 5, 1), (1, 2.5, 0.5), (5, 0, -1), (0, 0, 1), (0, 1, 0.3),
                          (0, 5, 0), (5, 0, 1), (-3, 3, 2)]:
            def targ(dt=dt, s=s, e=e, stp=stp):
                return torch.arange(s, e, stp, dtype=dt)
            check("arange %s %r %r %r" % (dn(dt), s, e, stp), targ,
                  lambda o, dt=dt, s=s, e=e, stp=stp: L.clt_arange(DEV, T2C[dt], s, e, stp, o),
                  [], tol="ew")
    for dt in DTYPES:
        for v in (1.5, -2.0, 0.0):
            if dt == torch.uint8 and v < 0:
                continue
            check("full %s %r" % (dn(dt), v), lambda dt=dt, v=v: torch.full((2, 3), v, dtype=dt),
                  lambda o, dt=dt, v=v: L.clt_full(DEV, T2C[dt], 2, shape_arr((2, 3)), v, o), [],
                  tol="exact")
    check("clone transposed", lambda t: t.clone(), L.clt_clone,
          [In(data((4, 3), torch.int64), ("T",))], tol="exact")


# ---- random -------------------------------------------------------------------

def random():
    gen = P()
    assert L.clt_generator_new(42, C.byref(gen)) == 0
    try:
        def draw(fn, *args):
            o = P()
            st = fn(*args, C.byref(o))
            if st:
                return None, st
            a, shape, dt = download(o)
            L.clt_tensor_free(o)
            return (a, dt), 0

        shape = (1000, 257)
        sa = shape_arr(shape)
        for dt in (F32, F64):
            (u, udt), _ = draw(L.clt_rand, gen, DEV, dt, 2, sa)
            ok("rand dtype %d" % dt, udt == dt)
            ok("rand range %d" % dt, u.min() >= 0 and u.max() < 1, "min %r max %r" % (u.min(), u.max()))
            ok("rand mean %d" % dt, abs(u.mean() - 0.5) < 0.005, "mean %r" % u.mean())
            ok("rand var %d" % dt, abs(u.var() - 1 / 12) < 0.002, "var %r" % u.var())
            h = np.histogram(u, bins=16, range=(0, 1))[0] / u.size
            ok("rand histogram %d" % dt, np.all(np.abs(h - 1 / 16) < 0.003), str(h))
            ok("rand lag-1 corr %d" % dt,
               abs(np.corrcoef(u.ravel()[:-1], u.ravel()[1:])[0, 1]) < 0.01)
            (z, zdt), _ = draw(L.clt_randn, gen, DEV, dt, 2, sa)
            ok("randn mean %d" % dt, abs(z.mean()) < 0.01, "mean %r" % z.mean())
            ok("randn std %d" % dt, abs(z.std() - 1) < 0.01, "std %r" % z.std())
            ok("randn finite %d" % dt, np.all(np.isfinite(z)))
            ok("randn tails %d" % dt, abs(np.mean(np.abs(z) > 2) - 0.0455) < 0.003,
               "P(|z|>2) %r" % np.mean(np.abs(z) > 2))
            ok("randn skew/kurt %d" % dt,
               abs(np.mean(z**3)) < 0.02 and abs(np.mean(z**4) - 3) < 0.05)
        for dt in (I32, I64, U8, F32, F64, BOOL):
            lo, hi = (0, 2) if dt == BOOL else ((3, 10) if dt == U8 else (-7, 13))
            (r, rdt), st = draw(L.clt_randint, gen, DEV, lo, hi, dt, 2, sa)
            if r is None:
                fail("randint %d" % dt, "status %d %s" % (st, L.clt_last_error()))
                continue
            ok("randint dtype %d" % dt, rdt == dt)
            rv = r.astype(np.int64)
            ok("randint range %d" % dt, rv.min() == lo and rv.max() == hi - 1,
               "min %d max %d" % (rv.min(), rv.max()))
            cnt = np.bincount(rv.ravel() - lo) / rv.size
            ok("randint uniform %d" % dt, np.all(np.abs(cnt - 1 / (hi - lo)) < 0.005), str(cnt))
        (r, _), _ = draw(L.clt_randint, gen, DEV, -2**40, 2**40, I64, 2, sa)
        ok("randint wide int64", r.min() < -2**39 and r.max() > 2**39 and
           abs(r.mean() / 2**40) < 0.01)
        # determinism and offsets
        L.clt_manual_seed(gen, 7)
        (x1, _), _ = draw(L.clt_rand, gen, DEV, F32, 1, shape_arr((1001,)))
        off = L.clt_generator_offset(gen)
        ok("offset advances", off >= 1001, "offset %d" % off)
        (x2, _), _ = draw(L.clt_rand, gen, DEV, F32, 1, shape_arr((1001,)))
        ok("consecutive differ", not np.array_equal(x1, x2))
        L.clt_manual_seed(gen, 7)
        (x3, _), _ = draw(L.clt_rand, gen, DEV, F32, 1, shape_arr((1001,)))
        ok("reseed replays", np.array_equal(x1, x3))
        L.clt_generator_set_offset(gen, off)
        (x4, _), _ = draw(L.clt_rand, gen, DEV, F32, 1, shape_arr((1001,)))
        ok("set_offset replays", np.array_equal(x2, x4))
        L.clt_manual_seed(gen, 8)
        (x5, _), _ = draw(L.clt_rand, gen, DEV, F32, 1, shape_arr((1001,)))
        ok("seeds differ", not np.array_equal(x1, x5))
        L.clt_manual_seed(gen, 7)
        (y1, _), _ = draw(L.clt_rand, gen, DEV, F32, 2, shape_arr((7, 11)))
        ok("shape-independent stream", np.array_equal(y1.ravel(), x1[:77]))
        dev1 = P()
        if L.clt_device_get(b"cpu:1", C.byref(dev1)) == 0:
            L.clt_manual_seed(gen, 7)
            (z1, _), _ = draw(L.clt_randn, gen, dev1, F32, 1, shape_arr((1001,)))
            L.clt_manual_seed(gen, 7)
            (z0, _), _ = draw(L.clt_randn, gen, DEV, F32, 1, shape_arr((1001,)))
            ok("randn bit-identical across devices", np.array_equal(z0, z1))
        (e, _), _ = draw(L.clt_rand, gen, DEV, F32, 2, shape_arr((0, 3)))
        ok("rand empty", e is not None and e.shape == (0, 3))
        (s0, _), _ = draw(L.clt_rand, gen, DEV, F32, 0, None)
        ok("rand 0-d", s0 is not None and s0.shape == ())
        # errors
        for nm, fn, args in [("rand int32", L.clt_rand, (gen, DEV, I32, 1, shape_arr((3,)))),
                             ("randn bool", L.clt_randn, (gen, DEV, BOOL, 1, shape_arr((3,)))),
                             ("randint low>=high", L.clt_randint,
                              (gen, DEV, 5, 5, I64, 1, shape_arr((3,)))),
                             ("randint uint8 bound", L.clt_randint,
                              (gen, DEV, 0, 300, U8, 1, shape_arr((3,)))),
                             ("randint bool bound", L.clt_randint,
                              (gen, DEV, 0, 3, BOOL, 1, shape_arr((3,)))),
                             ("rand negative size", L.clt_rand,
                              (gen, DEV, F32, 1, shape_arr((-1,))))]:
            o = P(0xdead)
            st = fn(*args, C.byref(o))
            ok("error " + nm, st != 0 and o.value is None, "status %d out %r" % (st, o.value))
            if st == 0 and o.value:
                L.clt_tensor_free(o)
        # default generator
        L.clt_manual_seed(None, 3)
        (d1, _), _ = draw(L.clt_rand, None, DEV, F32, 1, shape_arr((10,)))
        L.clt_manual_seed(None, 3)
        (d2, _), _ = draw(L.clt_rand, None, DEV, F32, 1, shape_arr((10,)))
        ok("default generator replays", np.array_equal(d1, d2))
    finally:
        L.clt_generator_free(gen)


# ---- harder cases for reductions, linalg and views ------------------------

def stress():
    f = torch.float32
    RD = {"sum": torch.sum, "prod": torch.prod, "max": lambda t, *a, **k: _v(torch.max(t, *a, **k)),
          "min": lambda t, *a, **k: _v(torch.min(t, *a, **k)), "argmax": torch.argmax,
          "argmin": torch.argmin, "mean": torch.mean}
    for n, fn in RD.items():
        tol = "exact" if n in ("max", "min", "argmax", "argmin") else "red"
        for dt in [torch.int32, torch.int64, torch.uint8, torch.float64, torch.bool]:
            if n == "mean" and not dt.is_floating_point:
                continue
            a = data((3, 4, 5), dt, lo=-3, hi=3)
            for d in (0, 1, -3):
                for k in (0, 1):
                    check("%s_dim %s [3,4,5] d=%d k=%d" % (n, dn(dt), d, k),
                          lambda t, d=d, k=k, fn=fn: fn(t, d, keepdim=bool(k)),
                          lambda p, o, d=d, k=k, n=n: cdim(n)(p, d, k, o),
                          [a], tol=tol, signed_zero=False)
        # sizes around chunk boundaries, reduced along a middle dim
        for sh, d in [((4097,), 0), ((2, 4096 * 2 + 1, 3), 1), ((5000, 3), 0), ((3, 5000), 1),
                      ((70, 70), 0), ((1, 65), 1), ((65, 1), 0), ((2, 3, 4, 5, 6, 1, 2, 1), 4)]:
            a = data(sh, f, lo=-1, hi=1)
            check("%s_dim f32 %s d=%d" % (n, list(sh), d), lambda t, d=d, fn=fn: fn(t, d),
                  lambda p, o, d=d, n=n: cdim(n)(p, d, 0, o), [a],
                  tol=tol, signed_zero=False)
            check("%s f32 %s" % (n, list(sh)), fn, getattr(L, "clt_" + n), [a],
                  tol=tol, signed_zero=False)
        check("%s permuted 3-d" % n, lambda t, fn=fn: fn(t.permute(2, 0, 1), 1),
              lambda p, o, n=n: _perm_then(p, o, n), [data((6, 7, 8), f)], tol=tol)
    big = torch.tensor([2**62 + 1, 2**62 + 3, -2**62 - 5, 2**62 + 2], dtype=torch.int64)
    for n in ("max", "min", "argmax", "argmin", "sum"):
        check("%s int64 beyond 2^53" % n, RD[n], getattr(L, "clt_" + n), [big], tol="exact")
        check("%s_dim int64 beyond 2^53" % n, lambda t, n=n: RD[n](t, 0),
              lambda p, o, n=n: cdim(n)(p, 0, 0, o), [big], tol="exact")
    check("sum int64 exact", torch.sum, L.clt_sum,
          [torch.tensor([2**53 + 1, 1, 1, 2**60], dtype=torch.int64)], tol="exact")
    check("prod int64 exact", torch.prod, L.clt_prod,
          [torch.tensor([2**31 + 1, 2**31 + 3], dtype=torch.int64)], tol="exact")
    check("sum int32 big", torch.sum, L.clt_sum,
          [torch.full((100000,), 2**31 - 1, dtype=torch.int32)], tol="exact")
    check("prod float specials", torch.prod, L.clt_prod,
          [torch.tensor([0.0, float("inf"), 2.0])], tol="red")
    check("sum inf -inf", torch.sum, L.clt_sum, [torch.tensor([float("inf"), -float("inf")])],
          tol="red")
    check("mean f32 1e6 offset", torch.mean, L.clt_mean,
          [data((300001,), f) + 1000.0], tol="red")
    allnan = torch.full((5,), float("nan"))
    allninf = torch.full((2, 5), -float("inf"))
    for n in ("max", "min", "argmax", "argmin"):
        check("%s all nan" % n, RD[n], getattr(L, "clt_" + n), [allnan], tol="exact")
        check("%s all -inf" % n, RD[n], getattr(L, "clt_" + n), [allninf], tol="exact")
        check("%s_dim all -inf" % n, lambda t, n=n: RD[n](t, 1),
              lambda p, o, n=n: cdim(n)(p, 1, 0, o), [allninf], tol="exact")
        nanlate = data((3, 5000), f)
        nanlate[1, 4500] = float("nan")
        nanlate[2, 100] = float("nan")
        nanlate[2, 4999] = float("nan")
        check("%s_dim nan late" % n, lambda t, n=n: RD[n](t, 1),
              lambda p, o, n=n: cdim(n)(p, 1, 0, o), [nanlate], tol="exact")
        check("%s nan late" % n, RD[n], getattr(L, "clt_" + n), [nanlate], tol="exact")
        tied = torch.zeros(3, 9000, dtype=torch.int32)
        tied[:, 4097] = 5
        tied[:, 8999] = 5
        tied[1, 1] = -5
        tied[1, 8000] = -5
        check("%s_dim ties across chunks" % n, lambda t, n=n: RD[n](t, 1),
              lambda p, o, n=n: cdim(n)(p, 1, 0, o), [tied], tol="exact")
        check("%s_dim ties d0" % n, lambda t, n=n: RD[n](t, 0),
              lambda p, o, n=n: cdim(n)(p, 0, 0, o), [tied.t().contiguous()],
              tol="exact")
        check("%s uint8" % n, RD[n], getattr(L, "clt_" + n),
              [torch.tensor([3, 250, 250, 0], dtype=torch.uint8)], tol="exact")
    for n in ("max", "min"):
        check("%s bool" % n, RD[n], getattr(L, "clt_" + n), [data((7,), torch.bool)], tol="exact")
    check("max_dim empty other dim", lambda t: torch.max(t, 1)[0],
          lambda p, o: L.clt_max_dim(p, 1, 0, o, None), [data((0, 3), f)], tol="exact")
    check("argmax_dim empty other dim", lambda t: torch.argmax(t, 1),
          lambda p, o: L.clt_argmax_dim(p, 1, 0, o), [data((0, 3), f)], tol="exact")
    check("var_dim big", lambda t: torch.var(t, 0), lambda p, o: L.clt_var_dim(p, 0, 1.0, 0, o),
          [data((9000, 3), f) + 100], tol="red")
    check("std_dim f64 big", lambda t: torch.std(t, 1), lambda p, o: L.clt_std_dim(p, 1, 1.0, 0, o),
          [data((3, 9000), torch.float64)], tol="red")
    check("var nan", torch.var, lambda p, o: L.clt_var(p, 1.0, o),
          [torch.tensor([1.0, float("nan"), 2.0])], tol="red")
    check("var inf", torch.var, lambda p, o: L.clt_var(p, 1.0, o),
          [torch.tensor([1.0, float("inf"), 2.0])], tol="red")
    check("var negative correction", lambda t: tvar(t, None, -1.0, False, False),
          lambda p, o: L.clt_var(p, -1.0, o), [data((5,), f)], tol="red")
    # matmul
    for sa, sb in [((1, 1, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 5)), ((3, 1, 4), (4, 1)),
                   ((1, 4), (2, 3, 4, 2)), ((4,), (1, 2, 4, 3)), ((2, 3, 4), (2, 4)),
                   ((1, 300), (300, 1)), ((300, 1), (1, 300)), ((2, 1, 3), (1, 3, 2)),
                   ((3, 2, 0), (0, 4)), ((2, 3, 5), (3, 5, 2))]:
        check("matmul %s@%s" % (list(sa), list(sb)), torch.matmul, L.clt_matmul,
              [data(sa, f), data(sb, f)], tol="mm")
    check("matmul both transposed", torch.matmul, L.clt_matmul,
          [In(data((2, 5, 3), f), ("T",)), In(data((2, 4, 5), f), ("T",))], tol="mm")
    check("matmul transposed batch 1-D", torch.matmul, L.clt_matmul,
          [In(data((2, 5, 3), f), ("T",)), data((5,), f)], tol="mm")
    check("matmul 1-D @ transposed", torch.matmul, L.clt_matmul,
          [data((5,), f), In(data((3, 5), f), ("T",))], tol="mm")
    check("matmul sliced rows", torch.matmul, L.clt_matmul,
          [In(data((8, 4), f), ("S", 0, 1, 7, 2)), data((4, 3), f)], tol="mm")
    check("matmul expand 1-D", torch.matmul, L.clt_matmul,
          [In(data((1,), f), ("E", (4,))), data((4, 3), f)], tol="mm")
    check("matmul f64 big", torch.matmul, L.clt_matmul,
          [data((65, 129), torch.float64), data((129, 33), torch.float64)], tol="mm")
    check("matmul neg zero", torch.matmul, L.clt_matmul,
          [torch.tensor([[-0.0]]), torch.tensor([[1.0]])], tol="mm")
    check("matmul inf*0", torch.matmul, L.clt_matmul,
          [torch.tensor([[float("inf"), 1.0]]), torch.tensor([[0.0], [1.0]])], tol="mm")
    # softmax
    for name, tfn, cfn in (("softmax", torch.softmax, L.clt_softmax),
                           ("log_softmax", torch.log_softmax, L.clt_log_softmax)):
        for sh, d in [((2, 5000), 1), ((5000, 2), 0), ((3, 4, 5), 1), ((3, 1), 1), ((1, 3), 0),
                      ((2, 3, 4, 5, 6, 1, 2, 1), 3), ((3, 300, 2), 1)]:
            check("%s %s d=%d" % (name, list(sh), d), lambda t, d=d: tfn(t, d),
                  lambda p, o, d=d: cfn(p, d, o), [data(sh, f, lo=-30, hi=30)], tol="red",
                  signed_zero=False)
        check("%s permuted" % name, lambda t: tfn(t.permute(2, 0, 1), 1),
              lambda p, o: _perm_then_sm(p, o, cfn), [data((4, 5, 6), f)], tol="red")
        check("%s sliced" % name, lambda t: tfn(t, 1), lambda p, o: cfn(p, 1, o),
              [In(data((3, 9), f), ("S", 1, 1, 9, 3))], tol="red")
        check("%s big spread f64" % name, lambda t: tfn(t, 0), lambda p, o: cfn(p, 0, o),
              [torch.tensor([1e300, -1e300, 0.0], dtype=torch.float64)], tol="red")
        check("%s uint8" % name, lambda t: tfn(t, 0), lambda p, o: cfn(p, 0, o),
              [data((3,), torch.uint8)])
        check("%s bool" % name, lambda t: tfn(t, 0), lambda p, o: cfn(p, 0, o),
              [data((3,), torch.bool)])
    # views
    a = data((4, 6, 5), f)
    for s in [(24, 5), (4, 30), (2, 2, 6, 5), (120,), (4, 6, 5, 1, 1)]:
        for how in [("S", 1, 0, 6, 1), ("S", 0, 1, 3, 1), ("E", (2, 4, 6, 5))]:
            src = In(a, how)
            check("reshape %s of %s" % (list(s), how[0] + str(how[1:3])),
                  lambda t, s=s: t.reshape(*s) if t.numel() == a.numel() else t.reshape(-1),
                  lambda p, o, s=s: _reshape_auto(p, o, s, a.numel()), [src], tol="exact")
    ta = In(data((5, 4), f), ("T",))
    check("view transposed compatible", lambda t: t.view(4, 5, 1),
          lambda p, o: L.clt_view(p, 3, shape_arr((4, 5, 1)), o), [ta], tol="exact")
    check("view transposed split", lambda t: t.view(2, 2, 5),
          lambda p, o: L.clt_view(p, 3, shape_arr((2, 2, 5)), o), [ta], tol="exact")
    check("view two -1", lambda t: t.view(-1, -1), lambda p, o: L.clt_view(p, 2, shape_arr((-1, -1)), o),
          [data((4,), f)], tol="exact")
    check("view -2", lambda t: t.view(-2, 2), lambda p, o: L.clt_view(p, 2, shape_arr((-2, 2)), o),
          [data((4,), f)], tol="exact")
    check("reshape too many dims", lambda t: t.reshape(*([1] * 9)),
          lambda p, o: L.clt_reshape(p, 9, shape_arr([1] * 9), o), [data((1,), f)],
          expect_error="CLT_MAX_DIMS")
    check("expand fewer dims", lambda t: t.expand(3), lambda p, o: L.clt_expand(p, 1, shape_arr((3,)), o),
          [data((3, 1), f)])
    check("expand -1 new dim", lambda t: t.expand(-1, 3, 1),
          lambda p, o: L.clt_expand(p, 3, shape_arr((-1, 3, 1)), o), [data((3, 1), f)])
    check("narrow bad length", lambda t: t.narrow(0, 1, -1),
          lambda p, o: L.clt_narrow(p, 0, 1, -1, o), [data((3,), f)])
    check("narrow start out", lambda t: t.narrow(0, 4, 0),
          lambda p, o: L.clt_narrow(p, 0, 4, 0, o), [data((3,), f)])
    check("narrow start -4", lambda t: t.narrow(0, -4, 1),
          lambda p, o: L.clt_narrow(p, 0, -4, 1, o), [data((3,), f)])
    check("narrow 0-d", lambda t: t.narrow(0, 0, 1),
          lambda p, o: L.clt_narrow(p, 0, 0, 1, o), [data((), f)])
    check("slice 0-d", lambda t: t[0:1],
          lambda p, o: L.clt_slice(p, 0, 0, 1, 1, o), [data((), f)])
    check("slice of slice", lambda t: t[:, 1::2][:, 1:],
          lambda p, o: _slice2(p, o), [data((3, 10), f)], tol="exact")
    check("permute 0-d", lambda t: t.permute(()), lambda p, o: L.clt_permute(p, 0, None, o),
          [data((), f)], tol="exact")
    check("permute dup neg", lambda t: t.permute(0, -2), lambda p, o: L.clt_permute(
        p, 2, (C.c_int * 2)(0, -2), o), [data((2, 3), f)])
    check("flatten start>end", lambda t: t.flatten(2, 1), lambda p, o: L.clt_flatten(p, 2, 1, o),
          [data((2, 3, 4), f)])
    check("flatten expanded", lambda t: t.flatten(), lambda p, o: L.clt_flatten(p, 0, -1, o),
          [In(data((3, 1), f), ("E", (3, 4)))], tol="exact")
    check("flatten 0-d dims", lambda t: t.flatten(-1, 0), lambda p, o: L.clt_flatten(p, -1, 0, o),
          [data((), f)], tol="exact")
    many = [data((2, i % 3), f) for i in range(20)]
    check("cat 20", lambda *ts: torch.cat(ts, 1), _catn(L.clt_cat, 1), many, tol="exact")
    check("stack 20", lambda *ts: torch.stack(ts, 0), _catn(L.clt_stack, 0),
          [data((2, 3), torch.int64) for _ in range(20)], tol="exact")
    check("cat 3-d mid", lambda *ts: torch.cat(ts, -2), _catn(L.clt_cat, -2),
          [data((2, i, 3), torch.float64) for i in (1, 0, 4)], tol="exact")
    check("cat mixed 5", lambda *ts: torch.cat(ts, 0), _catn(L.clt_cat, 0),
          [data((1, 2), d) for d in (torch.bool, torch.uint8, torch.int32, torch.int64, f)],
          tol="exact")
    check("cat [0] with 3-d", lambda *ts: torch.cat(ts, 2), _catn(L.clt_cat, 2),
          [data((0,), f), data((2, 3, 4), f), data((0,), torch.float64)], tol="exact")
    check("stack transposed", lambda *ts: torch.stack(ts, 1), _catn(L.clt_stack, 1),
          [In(data((4, 3), f), ("T",)), data((3, 4), f)], tol="exact")
    check("stack bool/int mix", lambda *ts: torch.stack(ts, 0), _catn(L.clt_stack, 0),
          [data((3,), torch.bool), data((3,), torch.int32)], tol="exact")
    check("stack 8 dims", lambda *ts: torch.stack(ts, 7), _catn(L.clt_stack, 7),
          [data((1, 2, 1, 2, 1, 2, 1), f)] * 2, tol="exact")
    check("stack 9 dims", lambda *ts: torch.stack(ts, 0), _catn(L.clt_stack, 0),
          [data((1, 2, 1, 2, 1, 2, 1, 1), f)] * 2, expect_error="CLT_MAX_DIMS")


def chains():
    f = torch.float32
    V1 = ("V", [("narrow", 1, 1, 4), ("T", 0, 1)])                     # [4, 3] from [3, 6]
    V2 = ("V", [("slice", 0, 1, 5, 2), ("unsq", 0), ("E", (3, 2, 6))])   # [3, 2, 6] from [6, 6]
    V3 = ("V", [("perm", (2, 0, 1)), ("slice", 0, 1, 4, 1), ("narrow", 2, 1, 2)])  # from [3,4,5]
    V4 = ("V", [("slice", 1, 0, 8, 3), ("T", 0, 1), ("unsq", 1), ("sq", 1)])  # [3, 4] from [4, 8]
    srcs = [("V1", data((3, 6), f), V1), ("V2", data((6, 6), f), V2),
            ("V3", data((3, 4, 5), f), V3), ("V4", data((4, 8), f), V4)]
    for nm, t, how in srcs:
        x = In(t, how)
        for n in ("sum", "max", "argmin", "mean"):
            fn = getattr(torch, n)
            check("%s of %s" % (n, nm), (lambda z, fn=fn: fn(z) if n != "max" else z.max()),
                  getattr(L, "clt_" + n), [x], tol="red")
            check("%s_dim -1 of %s" % (n, nm),
                  (lambda z, fn=fn, n=n: fn(z, -1)[0] if n == "max" else fn(z, -1)),
                  lambda p, o, n=n: cdim(n)(p, -1, 0, o), [x], tol="red")
            check("%s_dim 0 of %s" % (n, nm),
                  (lambda z, fn=fn, n=n: fn(z, 0, keepdim=True)[0] if n == "max"
                   else fn(z, 0, keepdim=True)),
                  lambda p, o, n=n: cdim(n)(p, 0, 1, o), [x], tol="red")
        check("var_dim of %s" % nm, lambda z: torch.var(z, 0),
              lambda p, o: L.clt_var_dim(p, 0, 1.0, 0, o), [x], tol="red")
        check("softmax of %s" % nm, lambda z: torch.softmax(z, 0), lambda p, o: L.clt_softmax(p, 0, o),
              [x], tol="red")
        check("log_softmax -1 of %s" % nm, lambda z: torch.log_softmax(z, -1),
              lambda p, o: L.clt_log_softmax(p, -1, o), [x], tol="red")
        check("contiguous of %s" % nm, lambda z: z.contiguous(), L.clt_contiguous, [x], tol="exact")
        check("reshape -1 of %s" % nm, lambda z: z.reshape(-1),
              lambda p, o: L.clt_reshape(p, 1, shape_arr((-1,)), o), [x], tol="exact")
        check("clone of %s" % nm, lambda z: z.clone(), L.clt_clone, [x], tol="exact")
        check("exp of %s" % nm, torch.exp, L.clt_exp, [x], tol="tr")
        check("add self of %s" % nm, lambda z, w: z + w, L.clt_add, [x, In(t, how)], tol="ew")
        check("to f64 of %s" % nm, lambda z: z.double(), lambda p, o: L.clt_to_dtype(p, F64, o),
              [x], tol="exact")
        check("cat with self %s" % nm, lambda z, w: torch.cat([z, w], 0), _catn(L.clt_cat, 0),
              [x, In(t, how)], tol="exact")
        check("stack with self %s" % nm, lambda z, w: torch.stack([z, w], -1), _catn(L.clt_stack, -1),
              [x, In(t, how)], tol="exact")
    a = In(data((3, 6), f), V1)
    check("matmul V1 @ [3,2]", torch.matmul, L.clt_matmul, [a, data((3, 2), f)], tol="mm")
    check("matmul [2,4] @ V1", torch.matmul, L.clt_matmul, [data((2, 4), f), a], tol="mm")
    check("matmul V2 @ V2^T", lambda z, w: torch.matmul(z, w.transpose(-1, -2)),
          lambda p, q, o: _mm_t(p, q, o), [In(data((6, 6), f), V2), In(data((6, 6), f), V2)],
          tol="mm")
    check("matmul V4 @ V1", torch.matmul, L.clt_matmul,
          [In(data((4, 8), f), V4), In(data((3, 6), f), V1)], tol="mm")
    check("matmul V4 f64 @ vec", torch.matmul, L.clt_matmul,
          [In(data((4, 8), torch.float64), V4), data((4,), torch.float64)], tol="mm")
    for dt in (torch.int64, torch.uint8, torch.bool, torch.float64):
        x = In(data((4, 8), dt), V4)
        check("sum of V4 %s" % dn(dt), torch.sum, L.clt_sum, [x], tol="red")
        check("max_dim of V4 %s" % dn(dt), lambda z: z.max(0)[0],
              lambda p, o: L.clt_max_dim(p, 0, 0, o, None), [x], tol="exact")
        check("contiguous of V2 %s" % dn(dt), lambda z: z.contiguous(), L.clt_contiguous,
              [In(data((6, 6), dt), V2)], tol="exact")
    big = torch.zeros(3, 9000, dtype=torch.int64)
    big[:, 0] = 2**60
    big[:, 8999] = 1
    big[1, 4000] = 2**58 + 3
    check("sum_dim int64 long exact", lambda z: z.sum(1), lambda p, o: L.clt_sum_dim(p, 1, 0, o),
          [big], tol="exact")
    check("sum_dim int64 long transposed", lambda z: z.sum(0), lambda p, o: L.clt_sum_dim(p, 0, 0, o),
          [In(big, ("T",))], tol="exact")


def _mm_t(p, q, o):
    r = P()
    st = L.clt_transpose(q, -1, -2, C.byref(r))
    if st:
        return st
    st = L.clt_matmul(p, r, o)
    L.clt_tensor_free(r)
    return st


def _v(r):
    return r[0] if isinstance(r, tuple) else r


def _perm_then(p, o, n):
    q = P()
    st = L.clt_permute(p, 3, (C.c_int * 3)(2, 0, 1), C.byref(q))
    if st:
        return st
    st = cdim(n)(q, 1, 0, o)
    L.clt_tensor_free(q)
    return st


def _perm_then_sm(p, o, cfn):
    q = P()
    st = L.clt_permute(p, 3, (C.c_int * 3)(2, 0, 1), C.byref(q))
    if st:
        return st
    st = cfn(q, 1, o)
    L.clt_tensor_free(q)
    return st


def _reshape_auto(p, o, s, n):
    if L.clt_tensor_numel(p) == n:
        return L.clt_reshape(p, len(s), shape_arr(s), o)
    return L.clt_reshape(p, 1, shape_arr((-1,)), o)


def _slice2(p, o):
    q = P()
    st = L.clt_slice(p, 1, 1, 2**63 - 1, 2, C.byref(q))
    if st:
        return st
    st = L.clt_slice(q, 1, 1, 2**63 - 1, 1, o)
    L.clt_tensor_free(q)
    return st


def _catn(fn, dim):
    def run(*ps):
        arr = (P * len(ps[:-1]))(*ps[:-1])
        return fn(arr, len(ps) - 1, dim, ps[-1])
    return run


def errors():
    f = torch.float32
    check("add shape mismatch", torch.add, L.clt_add, [data((2, 3), f), data((3, 2), f)])
    dev1 = P()
    other = b"cpu:0" if os.environ.get("CONFORMANCE_DEVICE", "cpu") == "cpu:1" else b"cpu:1"
    if L.clt_device_get(other, C.byref(dev1)) == 0:
        keep = []
        try:
            a = upload(data((3,), f))
            keep.append(a)
            b = P()
            assert L.clt_to(a, dev1, C.byref(b)) == 0
            keep.append(b)
            for nm in ("add", "matmul", "maximum"):
                o = P(0xdead)
                st = getattr(L, "clt_" + nm)(a, b, C.byref(o))
                ok("device mismatch " + nm, st != 0 and o.value is None, "status %d" % st)
            o = P(0xdead)
            arr = (P * 2)(a, b)
            st = L.clt_cat(arr, 2, 0, C.byref(o))
            ok("device mismatch cat", st != 0 and o.value is None, "status %d" % st)
        finally:
            for p in keep:
                L.clt_tensor_free(p)
    o = P(0xdead)
    st = L.clt_add(None, None, C.byref(o))
    ok("add NULL args", st != 0 and o.value is None)


# ---- losses ---------------------------------------------------------------

RED = {"mean": 0, "sum": 1, "none": 2, "batchmean": 3}
F = torch.nn.functional


def probs(shape, dtype, edges=True):
    """Probabilities in [0, 1], with 0 and 1 at the front when edges."""
    t = torch.rand(shape, generator=G, dtype=torch.float64).to(dtype)
    if edges and t.numel() >= 4:
        f = t.view(-1)
        f[0], f[1], f[2], f[3] = 0.0, 1.0, 1e-30, 1.0 - 1e-7
    return t


def losses():
    pairs = [(torch.float32, torch.float32), (torch.float64, torch.float64),
             (torch.float32, torch.float64), (torch.float64, torch.float32),
             (torch.float32, torch.int64), (torch.int64, torch.float32),
             (torch.int64, torch.int64), (torch.float32, torch.bool)]
    for da, db in pairs:
        for rn in ("mean", "sum", "none"):
            tol = "tr" if rn == "none" else "red"
            x, y = data((4, 5), da, special=True), data((4, 5), db).flip(-1)
            for beta in (1.0, 0.5, 0.0, -1.0):
                check("smooth_l1 %s,%s %s beta %r" % (dn(da), dn(db), rn, beta),
                      lambda a, b, rn=rn, v=beta: F.smooth_l1_loss(a, b, reduction=rn, beta=v),
                      lambda a, b, o, rn=rn, v=beta: L.clt_smooth_l1_loss(a, b, RED[rn], v, o),
                      [x, y], tol=tol)
            for delta in (1.0, 2.5, 0.0):
                check("huber %s,%s %s delta %r" % (dn(da), dn(db), rn, delta),
                      lambda a, b, rn=rn, v=delta: F.huber_loss(a, b, reduction=rn, delta=v),
                      lambda a, b, o, rn=rn, v=delta: L.clt_huber_loss(a, b, RED[rn], v, o),
                      [x, y], tol=tol)
            pa = probs((4, 5), da) if da.is_floating_point else data((4, 5), da, lo=0, hi=1)
            pb = probs((4, 5), db, edges=False) if db.is_floating_point else \
                data((4, 5), db, lo=0, hi=1)
            check("binary_cross_entropy %s,%s %s" % (dn(da), dn(db), rn),
                  lambda a, b, rn=rn: F.binary_cross_entropy(a, b, reduction=rn),
                  lambda a, b, o, rn=rn: L.clt_binary_cross_entropy(a, b, None, RED[rn], o),
                  [pa, pb], tol=tol)
            for rk in (rn, "batchmean") if rn == "mean" else (rn,):
                for lt in (0, 1):
                    kx = data((4, 5), da, lo=-6, hi=0)
                    ky = data((4, 5), db, lo=-3, hi=0) if lt else probs((4, 5), db) \
                        if db.is_floating_point else data((4, 5), db, lo=0, hi=2)
                    # torch computes a float32 target's own term in float32
                    # beside a float64 input; cltensor all in float64
                    # (loss.h), as torch with the target promoted
                    up = (da, db) == (torch.float64, torch.float32)
                    check("kl_div %s,%s %s log_target %d" % (dn(da), dn(db), rk, lt),
                          lambda a, b, rk=rk, lt=lt, up=up: F.kl_div(
                              a, b.double() if up else b, reduction=rk, log_target=bool(lt)),
                          lambda a, b, o, rk=rk, lt=lt: L.clt_kl_div(a, b, RED[rk], lt, o),
                          [kx, ky], tol="tr" if rk == "none" else "red")
    f = torch.float32
    # binary cross entropy's weight: any dtype, broadcast to the input's shape
    for wd, ws in ((torch.float32, (5,)), (torch.float64, (4, 1)), (torch.int64, (1, 5)),
                   (torch.bool, (5,)), (torch.float32, (4, 5)), (torch.float32, (3,)),
                   (torch.float32, (2, 4, 5))):
        for rn in ("mean", "none"):
            w = data(ws, wd, lo=0, hi=3)
            check("binary_cross_entropy weight %s %s %s" % (dn(wd), list(ws), rn),
                  lambda a, b, w=w, rn=rn: F.binary_cross_entropy(a, b, weight=w, reduction=rn),
                  lambda a, b, o, w=w, rn=rn: _bce_w(a, b, w, RED[rn], o),
                  [probs((4, 5), f), probs((4, 5), f, edges=False)],
                  tol="tr" if rn == "none" else "red",
                  expect_error="broadcast" if len(ws) > 2 else None)
    # torch's edge values, checked against torch 1.13 by hand: log clamped
    # at -100, kl_div's 0 target and its NaN for a negative one
    for dt in FLOATS:
        check("binary_cross_entropy clamp %s" % dn(dt),
              lambda a, b: F.binary_cross_entropy(a, b, reduction="none"),
              lambda a, b, o: L.clt_binary_cross_entropy(a, b, None, 2, o),
              [torch.tensor([0.0, 1.0, 0.5, 1e-30, 1.0, 0.0], dtype=dt),
               torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0, 0.5], dtype=dt)], tol="tr")
        check("kl_div zero and negative target %s" % dn(dt),
              lambda a, b: F.kl_div(a, b, reduction="none"),
              lambda a, b, o: L.clt_kl_div(a, b, 2, 0, o),
              [torch.tensor([-1.0, -float("inf"), 0.5, 2.0, 0.0], dtype=dt),
               torch.tensor([0.0, 0.0, -1.0, float("nan"), float("inf")], dtype=dt)], tol="tr")
        check("kl_div batchmean 0-d %s" % dn(dt),
              lambda a, b: F.kl_div(a, b, reduction="batchmean"),
              lambda a, b, o: L.clt_kl_div(a, b, 3, 0, o),
              [torch.tensor(-0.5, dtype=dt), torch.tensor(0.25, dtype=dt)], tol="red")
        for fn, tfn in (("smooth_l1", lambda a, b: F.smooth_l1_loss(a, b)),
                        ("huber", lambda a, b: F.huber_loss(a, b)),
                        ("binary_cross_entropy", lambda a, b: F.binary_cross_entropy(a, b)),
                        ("kl_div batchmean",
                         lambda a, b: F.kl_div(a, b, reduction="batchmean"))):
            cfn = {"smooth_l1": lambda a, b, o: L.clt_smooth_l1_loss(a, b, 0, 1.0, o),
                   "huber": lambda a, b, o: L.clt_huber_loss(a, b, 0, 1.0, o),
                   "binary_cross_entropy":
                   lambda a, b, o: L.clt_binary_cross_entropy(a, b, None, 0, o),
                   "kl_div batchmean": lambda a, b, o: L.clt_kl_div(a, b, 3, 0, o)}[fn]
            check("%s empty %s" % (fn, dn(dt)), tfn, cfn, [data((0, 3), dt), data((0, 3), dt)],
                  tol="red")
            check("%s shape mismatch %s" % (fn, dn(dt)), tfn, cfn,
                  [probs((2, 3), dt), probs((3, 2), dt)], expect_error="shape")
    # reductions outside the enum; batchmean is kl_div's alone
    for rv in (3, 7, -1):
        ok_red = None if rv == 3 else "reduction"
        for nm, cfn in (("smooth_l1", lambda a, b, o, r=rv: L.clt_smooth_l1_loss(a, b, r, 1.0, o)),
                        ("binary_cross_entropy",
                         lambda a, b, o, r=rv: L.clt_binary_cross_entropy(a, b, None, r, o))):
            check("%s reduction %d" % (nm, rv), lambda a, b: a.sum(), cfn,
                  [probs((3,), f), probs((3,), f)], expect_error="reduction")
        if ok_red:
            check("kl_div reduction %d" % rv, lambda a, b: a.sum(),
                  lambda a, b, o, r=rv: L.clt_kl_div(a, b, r, 0, o),
                  [probs((3,), f), probs((3,), f)], expect_error=ok_red)
    bce_out_of_range()


def _bce_w(a, b, w, red, o):
    keep = []
    try:
        wp = upload(w)
        keep.append(wp)
        return L.clt_binary_cross_entropy(a, b, wp, red, o)
    finally:
        for p in keep:
            L.clt_tensor_free(p)


def bce_out_of_range():
    """torch refuses probabilities outside [0, 1] (and NaN) at the call;
    here the call succeeds and the next read returns CLT_ERR_INVALID_ARGUMENT
    with torch's message, and the record is clean again after it."""
    for bad in (1.5, -0.1, float("nan")):
        keep = []
        try:
            try:
                F.binary_cross_entropy(torch.tensor([0.5, bad]), torch.tensor([1.0, 1.0]))
                fail("bce out of range %r" % bad, "torch accepts")
                continue
            except RuntimeError as e:
                ok("bce out of range %r: torch refuses" % bad,
                   "between 0 and 1" in str(e), str(e))
            x = upload(torch.tensor([0.5, bad, 0.25]))
            y = upload(torch.tensor([1.0, 1.0, 0.0]))
            keep += [x, y]
            out = P()
            st = L.clt_binary_cross_entropy(x, y, None, 0, C.byref(out))
            ok("bce out of range %r: enqueued" % bad, st == 0, str(L.clt_last_error()))
            if st:
                continue
            keep.append(out)
            v = C.c_float()
            st = L.clt_tensor_read(out, C.byref(v), 4)
            msg = (L.clt_last_error() or b"").decode()
            ok("bce out of range %r: read fails" % bad,
               st == -1 and "between 0 and 1" in msg and "element 1 of 3" in msg,
               "status %d: %s" % (st, msg))
            st = L.clt_tensor_read(out, C.byref(v), 4)
            ok("bce out of range %r: reported once" % bad, st == 0,
               "status %d: %s" % (st, L.clt_last_error()))
        finally:
            for p in keep:
                L.clt_tensor_free(p)


def more_reductions():
    """logsumexp, cumsum, any and all: dtypes, every dim, views, edges."""
    f = torch.float32
    inf, nan = float("inf"), float("nan")
    shapes = [(3, 5), (7,), (), (2, 3, 4), (0,), (0, 3), (3, 0), (33, 65)]
    for dt in DTYPES:
        for sh in shapes if dt in FLOATS else [(3, 5), (0,), (), (2, 3, 4)]:
            a = data(sh, dt, lo=-3, hi=3)
            nd = max(len(sh), 1)
            check("logsumexp_all %s %s" % (dn(dt), list(sh)),
                  lambda t: torch.logsumexp(t, tuple(range(t.dim()))),
                  L.clt_logsumexp_all, [a], tol="red")
            for d in range(-nd - 1, nd + 1):
                check("cumsum %s %s d=%d" % (dn(dt), list(sh), d),
                      lambda t, d=d: torch.cumsum(t, d),
                      lambda p, o, d=d: L.clt_cumsum(p, d, o), [a], tol="exact")
                for k in (0, 1):
                    check("logsumexp %s %s d=%d k=%d" % (dn(dt), list(sh), d, k),
                          lambda t, d=d, k=k: torch.logsumexp(t, d, keepdim=bool(k)),
                          lambda p, o, d=d, k=k: L.clt_logsumexp(p, d, k, o), [a], tol="red")
                    for n in ("any", "all"):
                        check("%s_dim %s %s d=%d k=%d" % (n, dn(dt), list(sh), d, k),
                              lambda t, d=d, k=k, n=n: getattr(torch, n)(t, d, keepdim=bool(k)),
                              lambda p, o, d=d, k=k, n=n: getattr(L, "clt_%s_dim" % n)(p, d, k, o),
                              [a], tol="exact")
            for n in ("any", "all"):
                check("%s %s %s" % (n, dn(dt), list(sh)), getattr(torch, n),
                      getattr(L, "clt_" + n), [a], tol="exact")
    # sparse non-zeros: any and all both ways
    sparse = torch.zeros(4, 6, dtype=torch.int32)
    sparse[1, 2] = 5
    sparse[3] = 1
    for n in ("any", "all"):
        for d in (0, 1):
            check("%s_dim sparse d=%d" % (n, d), lambda t, d=d, n=n: getattr(torch, n)(t, d),
                  lambda p, o, d=d, n=n: getattr(L, "clt_%s_dim" % n)(p, d, 0, o), [sparse],
                  tol="exact")
    # NaN counts as true, -0.0 as false
    sp = torch.tensor([[nan, 0.0], [-0.0, 0.0], [nan, 1.0]])
    for n in ("any", "all"):
        check("%s nan" % n, getattr(torch, n), getattr(L, "clt_" + n), [sp], tol="exact")
        check("%s_dim nan" % n, lambda t, n=n: getattr(torch, n)(t, 1),
              lambda p, o, n=n: getattr(L, "clt_%s_dim" % n)(p, 1, 0, o), [sp], tol="exact")
    # logsumexp edges: rows of -inf, +inf, NaN, large values
    edge = torch.tensor([[-inf, -inf], [inf, 1.0], [nan, 1.0], [inf, -inf], [inf, inf],
                         [1000.0, 1000.0], [-1000.0, -1e4]])
    for dt in FLOATS:
        check("logsumexp edges %s" % dn(dt), lambda t: torch.logsumexp(t, 1),
              lambda p, o: L.clt_logsumexp(p, 1, 0, o), [edge.to(dt)], tol="red")
        check("cumsum edges %s" % dn(dt), lambda t: torch.cumsum(t, 0),
              lambda p, o: L.clt_cumsum(p, 0, o), [edge.to(dt)], tol="exact")
    # views: transposed, sliced, permuted, expanded
    views = [In(data((5, 6), f), ("T",)), In(data((4, 11), f), ("S", 1, 2, 10, 3)),
             In(data((6, 7, 8), f), ("V", [("perm", (2, 0, 1))])),
             In(data((1, 5), f), ("E", (3, 5)))]
    for i, v in enumerate(views):
        for d in (0, -1):
            check("cumsum view %d d=%d" % (i, d), lambda t, d=d: torch.cumsum(t, d),
                  lambda p, o, d=d: L.clt_cumsum(p, d, o), [v], tol="exact")
            check("logsumexp view %d d=%d" % (i, d), lambda t, d=d: torch.logsumexp(t, d),
                  lambda p, o, d=d: L.clt_logsumexp(p, d, 0, o), [v], tol="red")
            check("all view %d d=%d" % (i, d), lambda t, d=d: torch.all(t > 0, d),
                  lambda p, o, d=d: _gt0_then(p, o, L.clt_all_dim, d), [v], tol="exact")
    # long slices: cumsum of float32 matches torch's CPU bits (double accumulation)
    check("cumsum 2^20 x 0.1 f32", lambda t: torch.cumsum(t, 0),
          lambda p, o: L.clt_cumsum(p, 0, o), [torch.full((1 << 20,), 0.1)], tol="exact")
    check("cumsum 3 x 70000 f32", lambda t: torch.cumsum(t, 1),
          lambda p, o: L.clt_cumsum(p, 1, o), [data((3, 70000), f)], tol="exact")
    # three long columns are cut into chunks: float64 within a rounding a chunk
    check("cumsum 70000 x 3 f64", lambda t: torch.cumsum(t, 0),
          lambda p, o: L.clt_cumsum(p, 0, o), [data((70000, 3), torch.float64)], tol="chunks")
    check("cumsum int32 beyond 2^31", lambda t: torch.cumsum(t, 0),
          lambda p, o: L.clt_cumsum(p, 0, o),
          [torch.full((5,), 2**30, dtype=torch.int32)], tol="exact")
    check("logsumexp 3 x 70000 f32", lambda t: torch.logsumexp(t, 1),
          lambda p, o: L.clt_logsumexp(p, 1, 0, o), [data((3, 70000), f) * 30], tol="red")
    check("any 70000 one late", torch.any, L.clt_any,
          [torch.zeros(70000).index_fill_(0, torch.tensor([69999]), 1.0)], tol="exact")


def _gn(g, parts, eps=1e-5, ref64=False):
    """F.group_norm and clt_group_norm with a weight (parts & 1) and a bias
    (parts & 2) after the input when they are given.  ref64: torch computes
    in float64, rounded to the input's dtype at the end."""
    def pick(wb):
        return (wb[0] if parts & 1 else None), (wb[-1] if parts & 2 else None)

    def tf(x, *wb):
        if ref64:
            w, b = pick(wb)
            return torch.nn.functional.group_norm(
                x.double(), g, None if w is None else w.double(),
                None if b is None else b.double(), eps).to(x.dtype)
        return torch.nn.functional.group_norm(x, g, *pick(wb), eps)

    def cf(p, *rest):
        return L.clt_group_norm(p, g, *pick(rest[:-1]), eps, rest[-1])
    return tf, cf


def group_norm():
    """F.group_norm: shapes, groups, weight and bias, views, empty inputs,
    NaN and infinities, and torch's refusals."""
    f = torch.float32
    cases = [((4, 6), (1, 3, 6)), ((2, 6, 5), (1, 2, 6)), ((2, 8, 3, 4), (1, 4, 8)),
             ((3, 4, 1, 7), (2, 4)), ((1, 4, 9), (1, 4)), ((2, 32, 7, 9), (8,))]
    for dt in FLOATS:
        for sh, groups in cases:
            for g in groups:
                # torch's float32 kernel takes x * s + (b - mean * s), s = w /
                # sqrt(var + eps), which for groups of one value (var 0) cancels
                # with an error of about |x| w / sqrt(eps) * 2^-24 (1e-4 here)
                # where the exact result is b: those compare with float64's
                one = sh[1] // g * math.prod(sh[2:]) == 1
                for parts in range(4):
                    wb = [data((sh[1],), dt, lo=-2, hi=2) for k in (1, 2) if parts & k]
                    tf, cf = _gn(g, parts, ref64=one)
                    check("group_norm %s %s G=%d parts=%d" % (dn(dt), list(sh), g, parts), tf, cf,
                          [data(sh, dt)] + wb, tol="red", signed_zero=False)
        tf, cf = _gn(3, 3)
        check("group_norm %s nan inf" % dn(dt), tf, cf,
              [data((2, 6, 4), dt, special=True), data((6,), dt), data((6,), dt)], tol="red",
              signed_zero=False)
        for sh in ((0, 6), (2, 6, 0), (2, 0, 3), (0, 0)):
            check("group_norm %s empty %s" % (dn(dt), list(sh)), *_gn(3, 0), [data(sh, dt)],
                  tol="red")
    views = [In(data((2, 5, 6), f), ("T",)), In(data((2, 12, 5), f), ("S", 1, 0, 12, 2)),
             In(data((2, 4, 5, 8), f), ("V", [("perm", (0, 3, 1, 2))])),
             In(data((1, 6, 5), f), ("E", (3, 6, 5)))]
    for i, v in enumerate(views):
        check("group_norm view %d" % i, *_gn(2, 0), [v], tol="red", signed_zero=False)
        check("group_norm view %d weight" % i, *_gn(2, 1), [v, data((v.t.shape[1],), f)],
              tol="red", signed_zero=False)
    # refusals: torch's, and eps < 0 or NaN (torch computes with them)
    x = data((2, 6, 4), f)
    for g in (4, 0, -2):
        check("group_norm G=%d (refused)" % g, *_gn(g, 0), [x])
    check("group_norm weight [5] (refused)", *_gn(3, 1), [x, data((5,), f)])
    check("group_norm bias [6, 1] (refused)", *_gn(3, 2), [x, data((6, 1), f)])
    check("group_norm 1-D (refused)", *_gn(3, 0), [data((6,), f)])
    check("group_norm one value a group (refused)", *_gn(6, 0), [data((1, 6), f)])
    check("group_norm one value a group 3-D (refused)", *_gn(6, 0), [data((1, 6, 1), f)])
    check("group_norm two values a group", *_gn(2, 0), [data((1, 4), f)], tol="red")
    for dt in (torch.int64, torch.int32, torch.uint8, torch.bool):
        check("group_norm %s (refused)" % dn(dt), *_gn(3, 0), [data((2, 6, 4), dt)])
    check("group_norm float64 weight (refused)", *_gn(3, 1), [x, data((6,), torch.float64)])
    check("group_norm float32 bias (refused)", *_gn(3, 2),
          [data((2, 6, 4), torch.float64), data((6,), f)])
    for eps in (-1.0, float("nan")):
        check("group_norm eps %g (refused)" % eps, *_gn(3, 0, eps), [x],
              expect_error="eps must not be negative or NaN")


def _ln(ns, parts, eps=1e-5, ref64=False):
    """F.layer_norm and clt_layer_norm over normalized_shape ns with a
    weight (parts & 1) and a bias (parts & 2) after the input when they are
    given.  ref64: torch computes in float64, rounded to the input's dtype
    at the end."""
    def pick(wb):
        return (wb[0] if parts & 1 else None), (wb[-1] if parts & 2 else None)

    def tf(x, *wb):
        w, b = pick(wb)
        if ref64:
            return torch.nn.functional.layer_norm(
                x.double(), ns, None if w is None else w.double(),
                None if b is None else b.double(), eps).to(x.dtype)
        return torch.nn.functional.layer_norm(x, ns, w, b, eps)

    def cf(p, *rest):
        return L.clt_layer_norm(p, len(ns), shape_arr(ns), *pick(rest[:-1]), eps, rest[-1])
    return tf, cf


def layer_norm():
    """F.layer_norm: shapes, one to three normalised dims, weight and bias,
    rows of one value, rows far from zero, views, empty inputs, NaN and
    infinities, and torch's refusals."""
    f = torch.float32
    cases = [((4, 6), (6,)), ((2, 3, 5), (5,)), ((2, 3, 5), (3, 5)), ((3, 1029), (1029,)),
             ((2, 2, 3, 4), (2, 3, 4)), ((5, 1), (1,)), ((7,), (7,)), ((4, 16), (16,))]
    for dt in FLOATS:
        for sh, ns in cases:
            for parts in range(4):
                wb = [data(ns, dt, lo=-2, hi=2) for k in (1, 2) if parts & k]
                # torch's float32 kernel takes x * rstd + (-mean * rstd), which
                # for rows of one value (exactly 0) cancels to about 1e-4 where
                # the result is the bias: those compare with float64's
                one = math.prod(ns) == 1
                check("layer_norm %s %s %s parts=%d" % (dn(dt), list(sh), list(ns), parts),
                      *_ln(ns, parts, ref64=one), [data(sh, dt)] + wb, tol="red",
                      signed_zero=False)
        check("layer_norm %s nan inf" % dn(dt), *_ln((6,), 3),
              [data((3, 6), dt, special=True), data((6,), dt), data((6,), dt)], tol="red",
              signed_zero=False)
        for sh, ns in (((0, 6), (6,)), ((3, 0), (0,)), ((0, 0), (0,)), ((2, 0, 4), (4,))):
            check("layer_norm %s empty %s" % (dn(dt), list(sh)), *_ln(ns, 0), [data(sh, dt)],
                  tol="red")
        # rows near 1e4 with noise of 1e-2: torch's kernel (x * rstd - mean *
        # rstd, 1e6 - 1e6, with a rounded mean) loses digits there, even in
        # float64; cltensor's keep them.  The reference normalises x - x[:, :1]
        # (exact, and the same result) in float64
        x = (1e4 + 1e-2 * torch.randn((4, 512), generator=G, dtype=torch.float64)).to(dt)
        check("layer_norm %s rows near 1e4" % dn(dt),
              lambda x: torch.nn.functional.layer_norm(
                  x.double() - x.double()[:, :1], (512,)).to(x.dtype), _ln((512,), 0)[1], [x],
              tol="red", signed_zero=False)
    views = [(In(data((2, 5, 6), f), ("T",)), (5, 6)),
             (In(data((4, 12), f), ("S", 1, 1, 12, 2)), (6,)),
             (In(data((2, 4, 5, 8), f), ("V", [("perm", (0, 3, 1, 2))])), (5,)),
             (In(data((1, 6), f), ("E", (3, 6))), (6,))]
    for i, (v, ns) in enumerate(views):
        check("layer_norm view %d" % i, *_ln(ns, 0), [v], tol="red", signed_zero=False)
        check("layer_norm view %d affine" % i, *_ln(ns, 3), [v, data(ns, f), data(ns, f)],
              tol="red", signed_zero=False)
    # refusals: torch's, and eps < 0 or NaN (torch computes with them)
    x = data((2, 6, 4), f)
    check("layer_norm shape [3] (refused)", *_ln((3,), 0), [x])
    check("layer_norm shape [6, 5] (refused)", *_ln((6, 5), 0), [x])
    check("layer_norm weight [5] (refused)", *_ln((4,), 1), [x, data((5,), f)])
    check("layer_norm bias [2, 2] (refused)", *_ln((4,), 2), [x, data((2, 2), f)])
    check("layer_norm float64 weight (refused)", *_ln((4,), 1), [x, data((4,), torch.float64)])
    for dt in (torch.int64, torch.int32, torch.uint8, torch.bool):
        check("layer_norm %s (refused)" % dn(dt), *_ln((4,), 0), [data((2, 6, 4), dt)])
    for eps in (-1.0, float("nan")):
        check("layer_norm eps %g (refused)" % eps, *_ln((4,), 0, eps), [x],
              expect_error="eps must not be negative or NaN")


def _sort_c(p, o, d, desc, want_idx):
    """clt_sort handing out its values or (want_idx) its indices in o."""
    return L.clt_sort(p, d, desc, None if want_idx else o, o if want_idx else None)


def _topk_c(p, o, k, d, largest, want_idx):
    other = P(0xdead)
    st = L.clt_topk(p, k, d, largest, 1, C.byref(other) if want_idx else o,
                    o if want_idx else C.byref(other))
    if (st == 0) != (other.value is not None):
        raise AssertionError("the other output %s after status %d" % (other.value, st))
    L.clt_tensor_free(other)
    return st


def sorting():
    """sort, argsort and topk: torch.sort(stable=True)'s values and indices,
    dtypes, every dim, NaN/inf/-0.0, views, long slices, topk's k edges and
    refusals; torch.topk where no ties make its choice unique."""
    proto("clt_sort", [P, C.c_int, C.c_int, P, P])
    proto("clt_argsort", [P, C.c_int, C.c_int, PP])
    proto("clt_topk", [P, C.c_int64, C.c_int, C.c_int, C.c_int, P, P])
    f = torch.float32

    def tsort(t, d, desc, idx):
        r = torch.sort(t, dim=d, descending=bool(desc), stable=True)
        return r[1] if idx else r[0]

    def sort_cases(name, a, dims):
        for d in dims:
            for desc in (0, 1):
                for idx in (0, 1):
                    check("sort%s %s d=%d desc=%d" % (" indices" if idx else "", name, d, desc),
                          lambda t, d=d, desc=desc, idx=idx: tsort(t, d, desc, idx),
                          lambda p, o, d=d, desc=desc, idx=idx: _sort_c(p, o, d, desc, idx),
                          [a], tol="exact")
                check("argsort %s d=%d desc=%d" % (name, d, desc),
                      lambda t, d=d, desc=desc: tsort(t, d, desc, 1),
                      lambda p, o, d=d, desc=desc: L.clt_argsort(p, d, desc, o), [a],
                      tol="exact")

    shapes = [(3, 5), (7,), (), (2, 3, 4), (0,), (0, 3), (3, 0), (33, 65)]
    for dt in DTYPES:
        for sh in shapes if dt in FLOATS else [(3, 5), (0,), (), (2, 3, 4)]:
            a = data(sh, dt, lo=-2, hi=2, special=True)
            nd = max(len(sh), 1)
            sort_cases("%s %s" % (dn(dt), list(sh)), a, range(-nd - 1, nd + 1))
    # torch's default (stable=False) gives the stable order on short slices
    tie = data((6, 16), f, lo=-1, hi=1).round()
    for desc in (0, 1):
        check("sort default ties 16 desc=%d" % desc,
              lambda t, desc=desc: torch.sort(t, 1, descending=bool(desc))[1],
              lambda p, o, desc=desc: _sort_c(p, o, 1, desc, 1), [tie], tol="exact")
    views = [In(data((5, 6), f), ("T",)), In(data((4, 11), f), ("S", 1, 2, 10, 3)),
             In(data((6, 7, 8), f), ("V", [("perm", (2, 0, 1))])),
             In(data((1, 5), f), ("E", (3, 5)))]
    for i, v in enumerate(views):
        sort_cases("view %d" % i, v, (0, -1))
    sort_cases("long ties", data((2, 5000), f, lo=-3, hi=3).round(), (1,))
    sort_cases("long", data((3, 4099), torch.float64, special=True), (1,))
    sort_cases("long int64 d0", data((2100, 3), torch.int64, lo=-50, hi=50), (0,))
    # topk: values always; indices where no ties leave torch a choice
    distinct = torch.randperm(60, generator=G).to(f).reshape(3, 4, 5) - 30
    for dt in DTYPES:
        a = data((3, 5), dt, lo=-2, hi=2, special=True)
        for k in (0, 1, 3, 5, 6, -1):
            for largest in (0, 1):
                check("topk %s k=%d largest=%d" % (dn(dt), k, largest),
                      lambda t, k=k, largest=largest: torch.topk(t, k, 1, bool(largest))[0],
                      lambda p, o, k=k, largest=largest: _topk_c(p, o, k, 1, largest, 0), [a],
                      tol="exact", signed_zero=False)  # which of -0.0 and 0.0: a tie
    for d in (0, 1, 2, -1):
        n = distinct.shape[d]
        for k in (0, 1, n // 2, n, n + 1):
            for largest in (0, 1):
                for idx in (0, 1):
                    check("topk distinct%s d=%d k=%d largest=%d" % (
                        " indices" if idx else "", d, k, largest),
                        lambda t, d=d, k=k, largest=largest, idx=idx:
                            torch.topk(t, k, d, bool(largest))[idx],
                        lambda p, o, d=d, k=k, largest=largest, idx=idx:
                            _topk_c(p, o, k, d, largest, idx), [distinct], tol="exact")
    for k in (0, 1, 2):
        check("topk 0-dim k=%d" % k, lambda t, k=k: torch.topk(t, k)[0],
              lambda p, o, k=k: _topk_c(p, o, k, 0, 1, 0), [torch.tensor(2.5)], tol="exact")
    check("topk empty k=0", lambda t: torch.topk(t, 0, 1)[0],
          lambda p, o: _topk_c(p, o, 0, 1, 1, 0), [torch.zeros(3, 0)], tol="exact")
    check("topk transposed", lambda t: torch.topk(t, 2, 0)[1],
          lambda p, o: _topk_c(p, o, 2, 0, 1, 1), [In(distinct[0].contiguous(), ("T",))],
          tol="exact")


def _gt0_then(p, o, cfn, d):
    q = P()
    st = L.clt_gt_scalar(p, 0.0, C.byref(q))
    if st:
        return st
    st = cfn(q, d, 0, o)
    L.clt_tensor_free(q)
    return st


def norms():
    """vector_norm (every ord, all or one dim, keepdim), normalize and
    cosine_similarity: dtypes, views, edges, empty tensors, refusals."""
    inf, nan = float("inf"), float("nan")
    LA = torch.linalg
    ords = [2, 1, inf, -inf, 0, 3, 0.5, -1, -2.5, 1.5]
    shapes = [(3, 5), (7,), (), (2, 3, 4), (0,), (0, 3), (3, 0)]
    for dt in DTYPES:
        for sh in shapes if dt in FLOATS else [(3, 5)]:
            a = data(sh, dt, special=(sh == (3, 5)))
            nd = max(len(sh), 1)
            for o in ords:
                check("vector_norm %s %s ord=%g" % (dn(dt), list(sh), o),
                      lambda t, o=o: LA.vector_norm(t, o),
                      lambda p, r, o=o: L.clt_vector_norm(p, o, r), [a], tol="red")
                for d in range(-nd - 1, nd + 1):
                    for k in (0, 1):
                        check("vector_norm_dim %s %s ord=%g d=%d k=%d"
                              % (dn(dt), list(sh), o, d, k),
                              lambda t, o=o, d=d, k=k: LA.vector_norm(t, o, d, bool(k)),
                              lambda p, r, o=o, d=d, k=k: L.clt_vector_norm_dim(p, o, d, k, r),
                              [a], tol="red")
            for o in (2, 1, inf, 3):
                for d in range(-nd - 1, nd + 1):
                    check("normalize %s %s p=%g d=%d" % (dn(dt), list(sh), o, d),
                          lambda t, o=o, d=d: torch.nn.functional.normalize(t, o, d),
                          lambda p, r, o=o, d=d: L.clt_normalize(p, o, d, 1e-12, r),
                          [a], tol="red")
    # edges: zeros, inf, NaN rows; overflow and underflow without scaling
    edge = torch.tensor([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0], [1.0, inf, 2.0], [1.0, nan, 2.0],
                         [-inf, 1.0, 1.0], [2.0, -2.0, 1.0]])
    for dt in FLOATS:
        for o in ords:
            check("vector_norm edges %s ord=%g" % (dn(dt), o),
                  lambda t, o=o: LA.vector_norm(t, o, 1),
                  lambda p, r, o=o: L.clt_vector_norm_dim(p, o, 1, 0, r), [edge.to(dt)], tol="red")
        wide = (1e200, 1e-200) if dt == torch.float64 else ()
        for big in (1e30, 1e-30, 1.7e19, 3e-23, 1e-22) + wide:
            check("vector_norm %g %s" % (big, dn(dt)), lambda t: LA.vector_norm(t),
                  lambda p, r: L.clt_vector_norm(p, 2, r), [torch.full((4,), big, dtype=dt)],
                  tol="red")
            check("cosine %g %s" % (big, dn(dt)),
                  lambda t: torch.nn.functional.cosine_similarity(t, t, 0),
                  lambda p, r: L.clt_cosine_similarity(p, p, 0, 1e-8, r),
                  [torch.full((4,), big, dtype=dt)], tol="red")
        check("normalize edges %s" % dn(dt), lambda t: torch.nn.functional.normalize(t, dim=1),
              lambda p, r: L.clt_normalize(p, 2, 1, 1e-12, r), [edge.to(dt)], tol="red")
    # views: transposed, sliced, permuted, expanded
    f = torch.float32
    views = [In(data((5, 6), f), ("T",)), In(data((4, 11), f), ("S", 1, 2, 10, 3)),
             In(data((6, 7, 8), f), ("V", [("perm", (2, 0, 1))])),
             In(data((1, 5), f), ("E", (3, 5)))]
    for i, v in enumerate(views):
        for o in (2, 1, inf, 3):
            for d in (0, -1):
                check("vector_norm view %d ord=%g d=%d" % (i, o, d),
                      lambda t, o=o, d=d: LA.vector_norm(t, o, d),
                      lambda p, r, o=o, d=d: L.clt_vector_norm_dim(p, o, d, 0, r), [v], tol="red")
        check("cosine view %d" % i, lambda t: torch.nn.functional.cosine_similarity(t, t + 1, 0),
              lambda p, r: _plus1_cos(p, r), [v], tol="red")
    # cosine_similarity: broadcasting, dtypes (integers converted), eps, empty
    pairs = [((3, 1, 4), (2, 4), -1), ((3, 4), (3, 4), 1), ((3, 4), (4,), 0), ((4,), (4,), 0),
             ((2, 3), (3, 2), 1), ((0, 3), (0, 3), 1), ((2, 0), (2, 0), 1), ((), (), 0),
             ((3, 4), (3, 4), 2)]
    for s1, s2, d in pairs:
        for d1, d2 in ((f, f), (torch.float64, torch.float64), (f, torch.float64),
                       (torch.int64, f), (torch.int32, torch.int64), (torch.bool, f)):
            for eps in (1e-8, 10.0):
                check("cosine %s %s %s %s d=%d eps=%g"
                      % (list(s1), list(s2), dn(d1), dn(d2), d, eps),
                      lambda x, y, d=d, eps=eps:
                      torch.nn.functional.cosine_similarity(x, y, d, eps),
                      lambda p, q, r, d=d, eps=eps: L.clt_cosine_similarity(p, q, d, eps, r),
                      [data(s1, d1, lo=-3, hi=3), data(s2, d2, lo=-3, hi=3)],
                      tol="red32" if f in (d1, d2) else "red")


def _plus1_cos(p, o):
    q = P()
    st = L.clt_add_scalar(p, 1.0, C.byref(q))
    if st:
        return st
    st = L.clt_cosine_similarity(p, q, 0, 1e-8, o)
    L.clt_tensor_free(q)
    return st


def _state_into(m, tmod, path):
    """torch's state_dict through safetensors into cltensor's module m."""
    from safetensors.torch import save_file
    save_file({k: v.detach().contiguous() for k, v in tmod.state_dict().items()}, path)
    return L.clt_module_load(m, path.encode())


def _mha_c(m, self_attn, kpm, am, need, avg, weights_out):
    """clt_multihead_attention on the uploaded (query[, key, value]) with the
    masks (cltensor handles or None); the output or (weights_out) the weights."""
    def run(*ps):
        o = ps[-1]
        q, k, v = (ps[0], ps[0], ps[0]) if self_attn else ps[:3]
        other = P(0xdead)
        st = L.clt_multihead_attention(m, q, k, v, kpm, am, need, avg,
                                       C.byref(other) if weights_out else o,
                                       o if weights_out else (C.byref(other) if need else None))
        if st == 0 and other.value is not None and other.value != 0xdead:
            L.clt_tensor_free(other)
        return st
    return run


def attention():
    """nn.MultiheadAttention and nn.TransformerEncoderLayer/Encoder: torch's
    state_dict loaded through safetensors (clt_module_load), then outputs and
    attention weights compared: layouts, heads, masks of both kinds (NaN for
    fully masked rows), float64; and clt_module_save read back by torch."""
    import atexit
    import shutil
    import tempfile
    try:
        from safetensors.torch import load_file
    except ImportError:
        print("conformance: attention skipped, no safetensors (pip install safetensors)")
        return
    nn = torch.nn
    proto("clt_multihead_attention_layer", [P, C.c_int64, C.c_int64, C.c_double, C.c_int,
                                            C.c_int, P, PP])
    proto("clt_multihead_attention", [P, P, P, P, P, P, C.c_int, C.c_int, PP, PP])
    proto("clt_transformer_encoder_layer", [P, C.c_int64, C.c_int64, C.c_int64, C.c_double,
                                            C.c_char_p, C.c_double, C.c_int, C.c_int, P, PP])
    proto("clt_transformer_encoder", [P, C.c_size_t, P, PP])
    proto("clt_transformer_encoder_forward", [P, P, P, P, PP])
    proto("clt_layer_norm_layer", [P, C.c_int, I64P, C.c_double, C.c_int, PP])
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_save", [P, C.c_char_p])
    proto("clt_module_to_dtype", [P, C.c_int])
    proto("clt_module_train", [P, C.c_int], None)
    proto("clt_module_free", [P], None)
    tmp = tempfile.mkdtemp(prefix="cltensor-attn-")
    atexit.register(shutil.rmtree, tmp, True)  # also when a case stops the section
    path = os.path.join(tmp, "state.safetensors")
    torch.manual_seed(5)
    E, L_, S, N = 8, 5, 6, 3
    for dt in FLOATS:
        tol = "mm"
        for H in (1, 2, 4):
            for bias in (1, 0):
                for bf in (0, 1):
                    tm = nn.MultiheadAttention(E, H, bias=bool(bias), batch_first=bool(bf)).to(dt)
                    m = P()
                    if L.clt_multihead_attention_layer(DEV, E, H, 0.0, bias, bf, None,
                                                       C.byref(m)):
                        fail("mha layer", L.clt_last_error().decode())
                        continue
                    L.clt_module_to_dtype(m, T2C[dt])
                    tag = "mha %s H=%d bias=%d bf=%d" % (dn(dt), H, bias, bf)
                    if _state_into(m, tm, path):
                        fail(tag + " load", L.clt_last_error().decode())
                        L.clt_module_free(m)
                        continue
                    qs = (N, L_, E) if bf else (L_, N, E)
                    ks = (N, S, E) if bf else (S, N, E)
                    q, k, v = data(qs, dt, lo=-1, hi=1), data(ks, dt, lo=-1, hi=1), \
                        data(ks, dt, lo=-1, hi=1)
                    kpm = torch.zeros(N, S, dtype=torch.bool)
                    kpm[0, 2] = kpm[1, 0] = kpm[1, 5] = True
                    am_b = torch.triu(torch.ones(L_, S, dtype=torch.bool), 2)
                    am_f = data((N * H, L_, S), dt, lo=-2, hi=0)
                    kp, ab, af = upload(kpm), upload(am_b), upload(am_f)
                    masks = [("none", None, None, None, None), ("kpm", kpm, None, kp, None),
                             ("bool attn", None, am_b, None, ab),
                             ("float3d attn+kpm", kpm, am_f, kp, af),
                             ("bool attn+kpm", kpm, am_b, kp, ab)]
                    for mname, tk, ta, ck, ca in masks:
                        for avg in (1, 0):
                            def tf(q, k, v, tk=tk, ta=ta, avg=avg, wi=0):
                                return tm(q, k, v, key_padding_mask=tk, attn_mask=ta,
                                          need_weights=True,
                                          average_attn_weights=bool(avg))[wi]
                            check("%s %s avg=%d out" % (tag, mname, avg), tf,
                                  _mha_c(m, False, ck, ca, 1, avg, False), [q, k, v], tol=tol)
                            check("%s %s avg=%d weights" % (tag, mname, avg),
                                  lambda q, k, v, tf=tf: tf(q, k, v, wi=1),
                                  _mha_c(m, False, ck, ca, 1, avg, True), [q, k, v], tol=tol)
                        check("%s %s self" % (tag, mname),
                              lambda x, tk=tk, ta=ta: tm(x, x, x, key_padding_mask=tk,
                                                         attn_mask=ta, need_weights=False)[0],
                              _mha_c(m, True, ck, ca, 0, 0, False), [q], tol=tol)
                    # a fully masked row (batch 2 hides every key): NaN, as torch
                    full = kpm.clone()
                    full[2, :] = True
                    fp = upload(full)
                    check("%s fully masked" % tag,
                          lambda q, k, v: tm(q, k, v, key_padding_mask=full)[0],
                          _mha_c(m, False, fp, None, 0, 0, False), [q, k, v], tol=tol)
                    # unbatched
                    check("%s unbatched" % tag,
                          lambda q, k, v: tm(q, k, v, attn_mask=am_b)[0],
                          _mha_c(m, False, None, ab, 0, 0, False),
                          [data((L_, E), dt), data((S, E), dt), data((S, E), dt)], tol=tol)
                    # refusals: embedding size, mask shape
                    check("%s E+1 (refused)" % tag, lambda x: tm(x, x, x)[0],
                          _mha_c(m, True, None, None, 0, 0, False), [data((4, 2, E + 1), dt)])
                    check("%s kpm shape (refused)" % tag,
                          lambda q, k, v: tm(q, k, v, key_padding_mask=kpm[:, :4])[0],
                          _mha_c(m, False, upload(kpm[:, :4].contiguous()), None, 0, 0, False),
                          [q, k, v])
                    # the state back to torch
                    if L.clt_module_save(m, path.encode()):
                        fail(tag + " save", L.clt_last_error().decode())
                    else:
                        t2 = nn.MultiheadAttention(E, H, bias=bool(bias),
                                                   batch_first=bool(bf)).to(dt)
                        t2.load_state_dict(load_file(path))
                        ok(tag + " state round trip",
                           all(torch.equal(a, b) for a, b in zip(tm.state_dict().values(),
                                                                  t2.state_dict().values())),
                           "state differs after clt_module_save")
                    for p in (kp, ab, af, fp):
                        L.clt_tensor_free(p)
                    L.clt_module_free(m)
        # TransformerEncoderLayer: both norm orders, both activations, masks
        for act in ("relu", "gelu"):
            for nf in (0, 1):
                for bf in (0, 1):
                    tl = nn.TransformerEncoderLayer(E, 2, 16, 0.1, act, 1e-5, bool(bf),
                                                    bool(nf)).to(dt)
                    tl.eval()
                    m = P()
                    if L.clt_transformer_encoder_layer(DEV, E, 2, 16, 0.1, act.encode(), 1e-5,
                                                       bf, nf, None, C.byref(m)):
                        fail("encoder layer", L.clt_last_error().decode())
                        continue
                    L.clt_module_to_dtype(m, T2C[dt])
                    L.clt_module_train(m, 0)
                    tag = "encoder layer %s %s nf=%d bf=%d" % (dn(dt), act, nf, bf)
                    if _state_into(m, tl, path):
                        fail(tag + " load", L.clt_last_error().decode())
                        L.clt_module_free(m)
                        continue
                    xs = (N, L_, E) if bf else (L_, N, E)
                    kpm = torch.zeros(N, L_, dtype=torch.bool)
                    kpm[1, 3] = True
                    sm = torch.triu(torch.full((L_, L_), float("-inf"), dtype=dt), 1)
                    kp, sp = upload(kpm), upload(sm)
                    with torch.enable_grad():  # torch's fast path is for no_grad only
                        check(tag, lambda x: tl(x.requires_grad_()).detach(),
                              lambda p, o: L.clt_transformer_encoder_forward(m, p, None, None, o),
                              [data(xs, dt)], tol=tol)
                        check(tag + " masks",
                              lambda x: tl(x.requires_grad_(), sm, kpm).detach(),
                              lambda p, o: L.clt_transformer_encoder_forward(m, p, sp, kp, o),
                              [data(xs, dt)], tol=tol)
                    L.clt_tensor_free(kp)
                    L.clt_tensor_free(sp)
                    L.clt_module_free(m)
        # TransformerEncoder of two layers and a final norm
        tl = nn.TransformerEncoderLayer(E, 2, 16, 0.0).to(dt)
        te = nn.TransformerEncoder(tl, 2, nn.LayerNorm(E)).to(dt)
        with torch.no_grad():  # deep copies start equal: make them differ
            for prm in te.parameters():
                prm.add_(torch.rand(prm.shape, dtype=dt) * 0.1)
        made = [P(), P()]
        for lp in made:
            L.clt_transformer_encoder_layer(DEV, E, 2, 16, 0.0, b"relu", 1e-5, 0, 0, None,
                                            C.byref(lp))
        layers = (P * 2)(*made)
        nm = P()
        L.clt_layer_norm_layer(DEV, 1, shape_arr((E,)), 1e-5, 1, C.byref(nm))
        m = P()
        if L.clt_transformer_encoder(layers, 2, nm, C.byref(m)):
            fail("encoder", L.clt_last_error().decode())
            continue
        L.clt_module_to_dtype(m, T2C[dt])
        tag = "encoder %s" % dn(dt)
        if _state_into(m, te, path):
            fail(tag + " load", L.clt_last_error().decode())
        else:
            kpm = torch.zeros(N, L_, dtype=torch.bool)
            kpm[2, 0] = True
            kp = upload(kpm)
            with torch.enable_grad():
                check(tag, lambda x: te(x.requires_grad_(), src_key_padding_mask=kpm).detach(),
                      lambda p, o: L.clt_transformer_encoder_forward(m, p, None, kp, o),
                      [data((L_, N, E), dt)], tol=tol)
            L.clt_tensor_free(kp)
        L.clt_module_free(m)


class RnnOpts(C.Structure):
    """clt_rnn_opts."""
    _fields_ = [("input_size", C.c_int64), ("hidden_size", C.c_int64),
                ("num_layers", C.c_int64), ("bias", C.c_int), ("batch_first", C.c_int),
                ("dropout", C.c_double), ("bidirectional", C.c_int), ("nonlinearity", C.c_int)]


def _sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    """torch 2's F.scaled_dot_product_attention composed in torch 1.13 (its
    math path): a bool mask attends where true."""
    sc = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * sc
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


def _sdpa_c(causal=0, scale=None):
    """clt_scaled_dot_product_attention on (q, k, v[, mask]), dropout_p 0."""
    def run(*ps):
        o = ps[-1]
        mask = ps[3] if len(ps) == 5 else None
        sp = C.byref(C.c_double(scale)) if scale is not None else None
        return L.clt_scaled_dot_product_attention(ps[0], ps[1], ps[2], mask, 0.0, causal, sp,
                                                  None, o)
    return run


def sdpa():
    """F.scaled_dot_product_attention (torch 2; 1.13 has none) against its
    composed formula: L != S, E != Ev, broadcast batch dims, unbatched, bool
    (true attends) and float masks broadcast, causal (L < S and L > S), a
    fully masked row (NaN), a given scale, a strided query, refusals."""
    proto("clt_scaled_dot_product_attention", [P, P, P, P, C.c_double, C.c_int,
                                               C.POINTER(C.c_double), P, PP])
    for dt in FLOATS:
        tag = "sdpa " + dn(dt)
        shapes = [((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)),
                  ((5, 8), (7, 8), (7, 4)),
                  ((2, 1, 5, 13), (1, 3, 70, 13), (3, 70, 9)),
                  ((2, 37, 16), (2, 50, 16), (2, 50, 24))]
        for qs, ks, vs in shapes:
            q, k, v = data(qs, dt, lo=-2, hi=2), data(ks, dt, lo=-2, hi=2), data(vs, dt)
            name = "%s %s %s %s" % (tag, qs, ks, vs)
            check(name, _sdpa_ref, _sdpa_c(), [q, k, v], tol="mm")
            check(name + " causal", lambda q, k, v: _sdpa_ref(q, k, v, causal=True),
                  _sdpa_c(1), [q, k, v], tol="mm")
            check(name + " scale 0.3", lambda q, k, v: _sdpa_ref(q, k, v, scale=0.3),
                  _sdpa_c(0, 0.3), [q, k, v], tol="mm")
            Lq, S = qs[-2], ks[-2]
            bm = torch.rand(Lq, S, generator=G) > 0.4
            bm[:, 0] = True
            check(name + " bool mask", lambda q, k, v, m: _sdpa_ref(q, k, v, m),
                  _sdpa_c(), [q, k, v, bm], tol="mm")
            check(name + " bool key mask", lambda q, k, v, m: _sdpa_ref(q, k, v, m),
                  _sdpa_c(), [q, k, v, bm[:1]], tol="mm")
            fm = data((qs[0], 1, Lq, S) if len(qs) == 4 else (Lq, S), dt, lo=-3, hi=0)
            check(name + " float mask", lambda q, k, v, m: _sdpa_ref(q, k, v, m),
                  _sdpa_c(), [q, k, v, fm], tol="mm")
            full = bm.clone()
            full[1, :] = False
            check(name + " fully masked row", lambda q, k, v, m: _sdpa_ref(q, k, v, m),
                  _sdpa_c(), [q, k, v, full], tol="mm")
        # causal with more queries than keys and the reverse
        for Lq, S in ((9, 4), (4, 9)):
            q, k, v = data((2, Lq, 8), dt), data((2, S, 8), dt), data((2, S, 8), dt)
            check("%s causal L=%d S=%d" % (tag, Lq, S),
                  lambda q, k, v: _sdpa_ref(q, k, v, causal=True), _sdpa_c(1), [q, k, v],
                  tol="mm")
        # a query that is a transposed view ([B, H, L, E] of [B, L, H, E])
        base = data((2, 5, 3, 8), dt)
        check(tag + " strided query",
              lambda b, k, v: _sdpa_ref(b.transpose(1, 2), k, v),
              _sdpa_strided,
              [base, data((2, 3, 6, 8), dt), data((2, 3, 6, 8), dt)], tol="mm")
        # refusals: the key's E, mask dtype, mask with is_causal
        q, k, v = data((2, 5, 8), dt), data((2, 6, 8), dt), data((2, 6, 4), dt)
        check(tag + " key E (refused)", _sdpa_ref, _sdpa_c(), [q, data((2, 6, 7), dt), v])
        check(tag + " int mask (refused)", lambda q, k, v, m: _sdpa_ref(q, k, v, m + 0.5),
              _sdpa_c(), [q, k, v, torch.ones(5, 6, dtype=torch.int64)],
              expect_error=ValueError("an int64 mask"))
        check(tag + " mask with causal (refused)", lambda q, k, v, m: _sdpa_ref(q, k, v, m),
              _sdpa_c(1), [q, k, v, torch.ones(5, 6, dtype=torch.bool)],
              expect_error=ValueError("attn_mask with is_causal"))


def _sdpa_strided(b, k, v, o):
    t = P()
    if L.clt_transpose(b, 1, 2, C.byref(t)):
        return 1
    st = _sdpa_c()(t, k, v, o)
    L.clt_tensor_free(t)
    return st


def _rnn_protos():
    for n in ("rnn", "lstm", "gru"):
        proto("clt_%s_layer" % n, [P, C.POINTER(RnnOpts), P, PP])
    proto("clt_lstm_forward", [P, P, P, P, PP, PP, PP])
    proto("clt_rnn_forward", [P, P, P, PP, PP])
    proto("clt_gru_forward", [P, P, P, PP, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_save", [P, C.c_char_p])
    proto("clt_module_to_dtype", [P, C.c_int])
    proto("clt_module_train", [P, C.c_int], None)


def rnns():
    """nn.RNN (tanh, relu), nn.LSTM and nn.GRU: torch's weights moved into
    cltensor's module through a safetensors file of the state_dict, then
    the output and h_n (c_n) compared for layers, directions, batch_first,
    given initial states, unbatched input and float64; and cltensor's
    state saved back into torch unchanged."""
    import tempfile
    try:
        from safetensors.torch import save_file, load_file
    except Exception as e:  # pragma: no cover
        return fail("rnns", "cannot import safetensors: %s" % e)
    _rnn_protos()
    tmp = tempfile.mkdtemp(prefix="cltensor-rnn-")
    path = os.path.join(tmp, "m.safetensors")
    kinds = [("RNN", "tanh"), ("RNN", "relu"), ("LSTM", None), ("GRU", None)]
    torch.manual_seed(7)
    for kind, nl in kinds:
        for layers in (1, 2):
            for bidir in (0, 1):
                for bf in (0, 1):
                    for given in (0, 1):
                        for batched in (1, 0):
                            if not batched and bf:
                                continue
                            for dt in ([torch.float32, torch.float64] if layers == 2 and bidir
                                       and given else [torch.float32]):
                                _rnn_case(kind, nl, layers, bidir, bf, given, batched, dt, path,
                                          save_file, load_file)
    os.unlink(path)
    os.rmdir(tmp)


def _rnn_case(kind, nl, layers, bidir, bf, given, batched, dt, path, save_file, load_file):
    name = "%s%s L=%d bidir=%d batch_first=%d h0=%d %s %s" % (
        kind, "(%s)" % nl if nl else "", layers, bidir, bf, given,
        "batched" if batched else "unbatched", dn(dt))
    I, H, T, N = 3, 4, 5, 2
    kw = dict(num_layers=layers, bidirectional=bool(bidir), batch_first=bool(bf))
    if nl:
        kw["nonlinearity"] = nl
    tm = getattr(torch.nn, kind)(I, H, **kw).to(dt)
    save_file({k: v.float().contiguous() for k, v in tm.state_dict().items()}, path)
    o = RnnOpts(I, H, layers, 1, bf, 0.0, bidir, 1 if nl == "relu" else 0)
    m = P()
    keep = []
    try:
        st = getattr(L, "clt_%s_layer" % kind.lower())(DEV, C.byref(o), None, C.byref(m))
        if st:
            return fail(name, "layer: %s" % L.clt_last_error())
        if dt == torch.float64 and L.clt_module_to_dtype(m, F64):
            return fail(name, "to_dtype: %s" % L.clt_last_error())
        if L.clt_module_load(m, path.encode()):
            return fail(name, "load: %s" % L.clt_last_error())
        D = 2 if bidir else 1
        xs = (N, T, I) if bf else (T, N, I)
        x = data(xs if batched else (T, I), dt, lo=-2, hi=2)
        hs = (D * layers, N, H) if batched else (D * layers, H)
        h0 = data(hs, dt, lo=-1, hi=1) if given else None
        c0 = data(hs, dt, lo=-1, hi=1) if given and kind == "LSTM" else None
        with torch.no_grad():
            if kind == "LSTM":
                exp = tm(x, (h0, c0)) if given else tm(x)
                exp = [exp[0], exp[1][0], exp[1][1]]
            else:
                exp = list(tm(x, h0) if given else tm(x))
        ins = [upload(t) if t is not None else None for t in (x, h0, c0)]
        keep += [p for p in ins if p is not None]
        outs = [P(), P(), P()]
        if kind == "LSTM":
            st = L.clt_lstm_forward(m, ins[0], ins[1], ins[2], *[C.byref(q) for q in outs])
        else:
            st = getattr(L, "clt_%s_forward" % kind.lower())(m, ins[0], ins[1],
                                                             C.byref(outs[0]), C.byref(outs[1]))
            outs = outs[:2]
        if st:
            return fail(name, "forward: %s" % L.clt_last_error())
        keep += outs
        for what, e, q in zip(("output", "h_n", "c_n"), exp, outs):
            got, shape, _ = download(q)
            if tuple(e.shape) != shape:
                return fail(name + " " + what, "shape: torch %s, cltensor %s" % (
                    list(e.shape), list(shape)))
            if compare_values(name + " " + what, e, got, "mm", False) is not True:
                return
        # and back: cltensor's state, saved, loads into torch unchanged
        if L.clt_module_save(m, path.encode()):
            return fail(name, "save: %s" % L.clt_last_error())
        back = load_file(path)
        sd = tm.state_dict()
        ok(name + " state back", sorted(back) == sorted(sd) and all(
            torch.equal(back[k].to(dt), sd[k]) if dt == torch.float32 else
            torch.allclose(back[k].double(), sd[k], rtol=0, atol=0) for k in sd),
           "the saved state differs from torch's")
    finally:
        for q in keep:
            L.clt_tensor_free(q)
        L.clt_module_free(m)


# ---- torch.save's files and .npz ------------------------------------------------

class Named(C.Structure):
    _fields_ = [("name", C.c_char_p), ("tensor", C.c_void_p)]


def torch_files():
    """torch.save(model.state_dict()) read by clt_load_torch gives torch's
    tensors, names and order; clt_save_torch's file torch.load reads back
    equal; the same for np.savez and clt_load_npz / clt_save_npz."""
    import collections
    import tempfile
    NP = C.POINTER(Named)
    proto("clt_load_torch", [C.c_char_p, P, C.POINTER(NP), C.POINTER(C.c_size_t)])
    proto("clt_save_torch", [C.c_char_p, NP, C.c_size_t])
    proto("clt_load_npz", [C.c_char_p, P, C.POINTER(NP), C.POINTER(C.c_size_t)])
    proto("clt_save_npz", [C.c_char_p, NP, C.c_size_t, C.c_int])
    proto("clt_named_tensors_free", [NP, C.c_size_t], None)
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3),
                                torch.nn.Flatten(), torch.nn.LayerNorm(12),
                                torch.nn.Linear(12, 5))
    sd = model.state_dict()
    sd["shared.t"] = sd["4.weight"].t()  # a view of another's storage
    arrays = collections.OrderedDict((k, v.numpy()) for k, v in sd.items())
    with tempfile.TemporaryDirectory() as d:
        for kind, save, load, again in (
                ("torch", lambda f: torch.save(sd, f), L.clt_load_torch,
                 lambda f, a, n: L.clt_save_torch(f, a, n)),
                ("npz", lambda f: np.savez(f, **arrays), L.clt_load_npz,
                 lambda f, a, n: L.clt_save_npz(f, a, n, 1))):
            src, dst = os.path.join(d, "a." + kind), os.path.join(d, "b." + kind)
            save(src)
            arr, n = NP(), C.c_size_t()
            if load(src.encode(), DEV, C.byref(arr), C.byref(n)):
                fail(kind + " load", L.clt_last_error().decode())
                continue
            try:
                names = [arr[i].name.decode() for i in range(n.value)]
                ok(kind + " load names", names == list(sd), "%s / %s" % (names, list(sd)))
                for i, k in enumerate(names[:len(sd)]):
                    got = download(arr[i].tensor)[0]
                    want = sd[k].numpy()
                    ok("%s load %s" % (kind, k), got.dtype == want.dtype and
                       got.shape == want.shape and np.array_equal(got, want),
                       "%s %s / %s %s" % (got.dtype, got.shape, want.dtype, want.shape))
                if again(dst.encode(), arr, n):
                    fail(kind + " save", L.clt_last_error().decode())
                    continue
                if kind == "torch":
                    back = {k: v.numpy() for k, v in torch.load(dst).items()}
                else:
                    with np.load(dst) as z:
                        back = {k: z[k] for k in z.files}
                ok(kind + " save", list(back) == list(sd) and all(
                    back[k].dtype == arrays[k].dtype and np.array_equal(back[k], arrays[k])
                    for k in sd), "the file read back differs")
            finally:
                L.clt_named_tensors_free(arr, n)


# ---- shapeops: splits, diagonals, flips, rolls, repeats, pads, constructions ----

def _shapeops_protos():
    PPP = C.POINTER(C.POINTER(C.c_void_p))
    SZP = C.POINTER(C.c_size_t)
    IP = C.POINTER(C.c_int)
    proto("clt_free", [P], None)
    proto("clt_split", [P, C.c_int64, C.c_int, PPP, SZP])
    proto("clt_split_sizes", [P, I64P, C.c_size_t, C.c_int, PPP, SZP])
    proto("clt_chunk", [P, C.c_int64, C.c_int, PPP, SZP])
    proto("clt_unbind", [P, C.c_int, PPP, SZP])
    proto("clt_meshgrid", [C.POINTER(P), C.c_size_t, C.c_int, PPP, SZP])
    proto("clt_diagonal", [P, C.c_int64, C.c_int, C.c_int, PP])
    proto("clt_flip", [P, IP, C.c_int, PP])
    proto("clt_roll", [P, I64P, IP, C.c_int, PP])
    proto("clt_repeat", [P, I64P, C.c_int, PP])
    proto("clt_tile", [P, I64P, C.c_int, PP])
    proto("clt_repeat_interleave", [P, C.c_int64, IP, PP])
    proto("clt_repeat_interleave_tensor", [P, P, IP, PP])
    proto("clt_tril", [P, C.c_int64, PP])
    proto("clt_triu", [P, C.c_int64, PP])
    proto("clt_diag", [P, C.c_int64, PP])
    proto("clt_trace", [P, PP])
    proto("clt_pad", [P, I64P, C.c_int, C.c_int, C.c_double, PP])
    proto("clt_linspace", [P, C.c_int, C.c_double, C.c_double, C.c_int64, PP])
    proto("clt_logspace", [P, C.c_int, C.c_double, C.c_double, C.c_int64, C.c_double, PP])
    proto("clt_eye", [P, C.c_int, C.c_int64, C.c_int64, PP])
    proto("clt_tril_indices", [P, C.c_int64, C.c_int64, C.c_int64, PP])
    proto("clt_triu_indices", [P, C.c_int64, C.c_int64, C.c_int64, PP])


def check_list(name, tfn, cfn, inputs):
    """As check, for calls that hand out an array of tensors (split, chunk,
    unbind, meshgrid): cfn(*ptrs, outs, n)."""
    global PASSED
    keep = []
    try:
        pairs = [as_in(x).build(keep) for x in inputs]
        try:
            exp, terr = tfn(*[p[0] for p in pairs]), None
        except Exception as e:
            exp, terr = None, e
        arr = C.cast(C.c_void_p(0xdead), C.POINTER(C.c_void_p))
        n = C.c_size_t(77)
        st = cfn(*[p[1] for p in pairs], C.byref(arr), C.byref(n))
        if terr is not None:
            if st == 0:
                return fail(name, "torch raises (%s) but cltensor succeeds" % str(terr)[:90])
            if bool(arr) or n.value != 0:
                return fail(name, "status %d but outs not NULL or n not 0" % st)
            PASSED += 1
            return
        if st != 0:
            return fail(name, "cltensor fails (%d: %s)" % (st, L.clt_last_error().decode()))
        got = [arr[i] for i in range(n.value)]
        keep.extend(C.c_void_p(g) for g in got)
        L.clt_free(C.cast(arr, P))
        if len(got) != len(exp):
            return fail(name, "%d pieces, torch %d" % (len(got), len(exp)))
        for i, (e, g) in enumerate(zip(exp, got)):
            a, shape, dt = download(C.c_void_p(g))
            if tuple(e.shape) != shape:
                return fail(name, "piece %d shape: torch %s, cltensor %s" % (i, list(e.shape), shape))
            if compare_values("%s piece %d" % (name, i), e, a, "exact", True) is not True:
                return
        PASSED += 1
    except Exception as e:
        fail(name, "harness error: %r" % (e,))
    finally:
        for p in keep:
            L.clt_tensor_free(p)


def _ia(v):
    return (C.c_int * max(1, len(v)))(*v)


def shapeops():
    _shapeops_protos()
    f = torch.float32
    a = data((4, 6, 5), f)
    tr = In(data((5, 4), f), ("T",))  # [4, 5] transposed
    sl = In(data((4, 9), f), ("S", 1, 0, 9, 2))  # [4, 5] strided
    # split, chunk, unbind
    for size, dim in [(2, 1), (4, 1), (6, 1), (7, 1), (1, 0), (3, -1), (0, 1), (-1, 1), (2, 3)]:
        check_list("split %d d=%d" % (size, dim), lambda t, s=size, d=dim: torch.split(t, s, d),
                   lambda p, o, n, s=size, d=dim: L.clt_split(p, s, d, o, n), [a])
    check_list("split empty dim 0", lambda t: torch.split(t, 0, 0),
               lambda p, o, n: L.clt_split(p, 0, 0, o, n), [data((0, 3), f)])
    check_list("split empty dim 2", lambda t: torch.split(t, 2, 0),
               lambda p, o, n: L.clt_split(p, 2, 0, o, n), [data((0, 3), f)])
    check_list("split 0-d", lambda t: torch.split(t, 1, 0),
               lambda p, o, n: L.clt_split(p, 1, 0, o, n), [data((), f)])
    for sizes, dim in [((1, 2, 3), 1), ((6,), 1), ((0, 6), 1), ((2, 2), 1), ((3, -1, 4), 1),
                       ((2, 3), -1), ((4,), 0)]:
        check_list("split_sizes %s d=%d" % (sizes, dim),
                   lambda t, s=sizes, d=dim: torch.split(t, list(s), d),
                   lambda p, o, n, s=sizes, d=dim: L.clt_split_sizes(p, shape_arr(s), len(s), d, o, n),
                   [a])
    for ch, dim in [(3, 1), (4, 1), (6, 1), (7, 1), (1, 0), (2, -1), (0, 1), (-2, 1), (4, 2)]:
        check_list("chunk %d d=%d" % (ch, dim), lambda t, c=ch, d=dim: torch.chunk(t, c, d),
                   lambda p, o, n, c=ch, d=dim: L.clt_chunk(p, c, d, o, n), [a])
    check_list("chunk empty", lambda t: torch.chunk(t, 3, 0),
               lambda p, o, n: L.clt_chunk(p, 3, 0, o, n), [data((0, 2), f)])
    for dim in [0, 1, -1, 3, -4]:
        check_list("unbind d=%d" % dim, lambda t, d=dim: torch.unbind(t, d),
                   lambda p, o, n, d=dim: L.clt_unbind(p, d, o, n), [a])
    check_list("unbind transposed", lambda t: torch.unbind(t, 1),
               lambda p, o, n: L.clt_unbind(p, 1, o, n), [tr])
    check_list("unbind 0-d", lambda t: torch.unbind(t, 0),
               lambda p, o, n: L.clt_unbind(p, 0, o, n), [data((), f)])
    check_list("unbind empty", lambda t: torch.unbind(t, 0),
               lambda p, o, n: L.clt_unbind(p, 0, o, n), [data((0, 3), f)])
    # diagonal
    for off, d1, d2 in [(0, 0, 1), (1, 0, 1), (-2, 0, 1), (2, 1, 2), (0, -1, 0), (10, 0, 1),
                        (-10, 2, 0), (0, 1, 1), (0, 0, 3)]:
        check("diagonal %d %d %d" % (off, d1, d2),
              lambda t, o_=off, x=d1, y=d2: torch.diagonal(t, o_, x, y),
              lambda p, o, o_=off, x=d1, y=d2: L.clt_diagonal(p, o_, x, y, o), [a], tol="exact")
    check("diagonal 1-d", lambda t: torch.diagonal(t), lambda p, o: L.clt_diagonal(p, 0, 0, 1, o),
          [data((4,), f)])
    check("diagonal transposed", lambda t: torch.diagonal(t, 1),
          lambda p, o: L.clt_diagonal(p, 1, 0, 1, o), [tr], tol="exact")
    # flip, roll
    for dt in DTYPES:
        for dims in [(0,), (1, 2), (-1,), (0, 1, 2), (), (0, 0), (3,)]:
            check("flip %s %s" % (dn(dt), dims), lambda t, ds=dims: torch.flip(t, ds),
                  lambda p, o, ds=dims: L.clt_flip(p, _ia(ds), len(ds), o), [data((3, 4, 2), dt)],
                  tol="exact")
    check("flip transposed", lambda t: torch.flip(t, (0, 1)),
          lambda p, o: L.clt_flip(p, _ia((0, 1)), 2, o), [tr], tol="exact")
    check("flip strided", lambda t: torch.flip(t, (1,)),
          lambda p, o: L.clt_flip(p, _ia((1,)), 1, o), [sl], tol="exact")
    check("flip empty", lambda t: torch.flip(t, (0,)),
          lambda p, o: L.clt_flip(p, _ia((0,)), 1, o), [data((0, 3), f)], tol="exact")
    check("flip 0-d", lambda t: torch.flip(t, (0,)),
          lambda p, o: L.clt_flip(p, _ia((0,)), 1, o), [data((), f)], tol="exact")
    for dt in [f, torch.int64, torch.bool]:
        for shifts, dims in [((1,), (0,)), ((-2,), (1,)), ((7, -9), (0, 1)), ((3,), ()),
                             ((-13,), ()), ((1, 2), (1, 1)), ((0,), (2,)), ((1,), (5,))]:
            def troll(t, sh=shifts, ds=dims):
                return torch.roll(t, sh, ds) if ds else torch.roll(t, sh[0])
            check("roll %s %s %s" % (dn(dt), shifts, dims), troll,
                  lambda p, o, sh=shifts, ds=dims: L.clt_roll(p, shape_arr(sh), _ia(ds), len(ds), o),
                  [data((3, 4, 2), dt)], tol="exact")
    check("roll transposed", lambda t: torch.roll(t, (1, -1), (0, 1)),
          lambda p, o: L.clt_roll(p, shape_arr((1, -1)), _ia((0, 1)), 2, o), [tr], tol="exact")
    check("roll flat strided", lambda t: torch.roll(t, 3),
          lambda p, o: L.clt_roll(p, shape_arr((3,)), None, 0, o), [sl], tol="exact")
    check("roll empty", lambda t: torch.roll(t, 2, 0),
          lambda p, o: L.clt_roll(p, shape_arr((2,)), _ia((0,)), 1, o), [data((0, 3), f)], tol="exact")
    # repeat, tile, repeat_interleave
    for dt in [f, torch.int32, torch.bool, torch.float64]:
        for reps in [(2, 1), (1, 3), (2, 2, 2), (3, 1, 2, 1), (0, 2), (2,), (1, 1),
                     (2, 1, 1, 1, 1, 1, 1, 2)]:
            check("repeat %s %s" % (dn(dt), reps), lambda t, r=reps: t.repeat(*r),
                  lambda p, o, r=reps: L.clt_repeat(p, shape_arr(r), len(r), o),
                  [data((2, 3), dt)], tol="exact")
            check("tile %s %s" % (dn(dt), reps), lambda t, r=reps: torch.tile(t, r),
                  lambda p, o, r=reps: L.clt_tile(p, shape_arr(r), len(r), o),
                  [data((2, 3), dt)], tol="exact")
    check("repeat many dims", lambda t: t.repeat(2, 2, 2, 2, 2),
          lambda p, o: L.clt_repeat(p, shape_arr((2, 2, 2, 2, 2)), 5, o),
          [data((2, 3, 2, 2, 2), f)], tol="exact")
    check("repeat transposed", lambda t: t.repeat(2, 3),
          lambda p, o: L.clt_repeat(p, shape_arr((2, 3)), 2, o), [tr], tol="exact")
    check("repeat negative", lambda t: t.repeat(2, -1),
          lambda p, o: L.clt_repeat(p, shape_arr((2, -1)), 2, o), [tr], tol="exact")
    check("repeat 0-d", lambda t: t.repeat(2, 3),
          lambda p, o: L.clt_repeat(p, shape_arr((2, 3)), 2, o), [data((), f)], tol="exact")
    check("tile 0-d none", lambda t: torch.tile(t, ()),
          lambda p, o: L.clt_tile(p, shape_arr(()), 0, o), [data((), f)], tol="exact")
    for dt in [f, torch.int64, torch.uint8]:
        for r, dim in [(2, 0), (3, 1), (1, -1), (0, 1), (2, None), (-1, 0), (2, 2)]:
            def tri_(t, r=r, dim=dim):
                return torch.repeat_interleave(t, r, dim)
            check("repeat_interleave %s %d %s" % (dn(dt), r, dim), tri_,
                  lambda p, o, r=r, dim=dim: L.clt_repeat_interleave(
                      p, r, None if dim is None else C.byref(C.c_int(dim)), o),
                  [data((3, 4), dt)], tol="exact")
    for reps, dim in [((1, 0, 2), 0), ((2,), 1), ((1, 2, 3, 0), 1), ((1, 2), 0), ((1, -1, 1), 0),
                      ((2, 1, 0, 1, 1, 1, 1, 1, 2, 1, 1, 1), None)]:
        rt = torch.tensor(reps, dtype=torch.int64)
        check("repeat_interleave tensor %s %s" % (reps, dim),
              lambda t, r, dim=dim: torch.repeat_interleave(t, r, dim),
              lambda p, q, o, dim=dim: L.clt_repeat_interleave_tensor(
                  p, q, None if dim is None else C.byref(C.c_int(dim)), o),
              [data((3, 4), f), rt], tol="exact")
    check("repeat_interleave tensor int32", lambda t, r: torch.repeat_interleave(t, r.long(), 0),
          lambda p, q, o: L.clt_repeat_interleave_tensor(p, q, C.byref(C.c_int(0)), o),
          [data((3, 4), f), torch.tensor([1, 1, 1], dtype=torch.int32)],
          expect_error=RuntimeError("repeats has to be a Long tensor"))
    # tril, triu, diag, trace
    for dt in DTYPES:
        for k in [0, 1, -1, 3, -5, 100]:
            for n_, tf, cf in (("tril", torch.tril, L.clt_tril), ("triu", torch.triu, L.clt_triu)):
                check("%s %s %d" % (n_, dn(dt), k), lambda t, k=k, tf=tf: tf(t, k),
                      lambda p, o, k=k, cf=cf: cf(p, k, o), [data((2, 4, 5), dt)], tol="exact")
    for n_, tf, cf in (("tril", torch.tril, L.clt_tril), ("triu", torch.triu, L.clt_triu)):
        check("%s transposed" % n_, lambda t, tf=tf: tf(t, 1), lambda p, o, cf=cf: cf(p, 1, o),
              [tr], tol="exact")
        check("%s 1-d" % n_, lambda t, tf=tf: tf(t), lambda p, o, cf=cf: cf(p, 0, o),
              [data((4,), f)], tol="exact")
        check("%s empty" % n_, lambda t, tf=tf: tf(t), lambda p, o, cf=cf: cf(p, 0, o),
              [data((0, 4), f)], tol="exact")
    for dt in DTYPES:
        for shape in [(4,), (3, 5), (5, 3), (0,), (2, 2, 2), ()]:
            for k in [0, 2, -1, -7]:
                if len(shape) == 2 and k == -7:
                    continue  # torch 1.13 overflows computing an empty diagonal's size
                check("diag %s %s %d" % (dn(dt), shape, k), lambda t, k=k: torch.diag(t, k),
                      lambda p, o, k=k: L.clt_diag(p, k, o), [data(shape, dt)], tol="exact")
    check("diag strided", lambda t: torch.diag(t, 1), lambda p, o: L.clt_diag(p, 1, o), [sl],
          tol="exact")
    for dt in DTYPES:
        for shape in [(3, 5), (4, 4), (0, 3), (3,), (2, 2, 2)]:
            check("trace %s %s" % (dn(dt), shape), torch.trace, L.clt_trace, [data(shape, dt)],
                  tol="red")
    check("trace transposed", torch.trace, L.clt_trace, [tr], tol="red")
    # pad
    modes = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}
    pad_cases = [
        ((2, 3, 4), (1, 2)), ((2, 3, 4), (1, 1, 2, 0)), ((2, 3, 4), (1, 1, 1, 1, 1, 1)),
        ((2, 3, 4), (3, 0)), ((2, 3, 4), (4, 0)), ((2, 3, 4), (-1, 2)), ((2, 3, 4), (0, -2, 1, 0)),
        ((2, 3, 4), (1,)), ((2, 3, 4), (1, 1, 1, 1, 1, 1, 1, 1)), ((3, 4), (2, 1)),
        ((1, 2, 3, 4), (1, 2, 2, 1)), ((1, 2, 3, 4), (1, 1, 1, 1, 1, 1)),
        ((1, 2, 3, 4, 5), (1, 0, 2, 1, 1, 2)), ((4,), (1, 1)), ((2, 0, 3), (1, 1)),
        ((2, 3, 0), (1, 1)), ((2, 3, 4), (-3, -2)), ((2, 3, 4), (-2, -2)), ((2, 3, 4), (5, 0)),
        ((2, 3, 1), (1, 1)), ((2, 3, 4), (0, 0)), ((2, 3, 4), ()), ((2, 3, 4), (2, -1)),
        ((2, 3, 4), (1, -2)), ((2, 3, 4), (-2, 1)), ((2, 3, 4), (-1, -1)), ((0, 3, 4), (1, 2)),
    ]
    for mname, mode in modes.items():
        for shape, pad in pad_cases:
            for dt in ([f, torch.float64, torch.int64, torch.bool] if mode in (0, 3) else
                       [f, torch.float64, torch.int64]):
                val = 0.0
                check("pad %s %s %s %s" % (mname, dn(dt), shape, pad),
                      lambda t, pad=pad, m=mname: torch.nn.functional.pad(t, pad, mode=m),
                      lambda p, o, pad=pad, mode=mode: L.clt_pad(p, shape_arr(pad), len(pad), mode,
                                                                 val, o),
                      [data(shape, dt)], tol="exact")
    check("pad constant value", lambda t: torch.nn.functional.pad(t, (1, 2, 0, 1), value=2.5),
          lambda p, o: L.clt_pad(p, shape_arr((1, 2, 0, 1)), 4, 0, 2.5, o), [a], tol="exact")
    check("pad reflect value", lambda t: torch.nn.functional.pad(t, (1, 2), "reflect", 2.5),
          lambda p, o: L.clt_pad(p, shape_arr((1, 2)), 2, 1, 2.5, o), [a], tol="exact")
    for mname, mode in modes.items():
        check("pad %s transposed" % mname,
              lambda t, m=mname: torch.nn.functional.pad(t.unsqueeze(0), (1, 2, 1, 0), mode=m)[0],
              lambda p, o, mode=mode: _pad_unsq(p, o, (1, 2, 1, 0), mode), [tr], tol="exact")
        check("pad %s strided" % mname,
              lambda t, m=mname: torch.nn.functional.pad(t.unsqueeze(0), (2, 1), mode=m)[0],
              lambda p, o, mode=mode: _pad_unsq(p, o, (2, 1), mode), [sl], tol="exact")
    # construction
    # Integer dtypes only where the steps are whole: torch 1.13's vectorised
    # integer kernel steps by a truncated step within each vector, so its
    # values elsewhere depend on the vector width (linspace(0, 10, 100) has
    # twelve 0s); cltensor truncates the exact values.  float32 and float64
    # bit for bit, as torch's AVX2 kernel makes them (its 8- and 4-wide blocks:
    # cl/shape.cl), long, negative and huge ranges too.
    for dt in [f, torch.float64, torch.int64, torch.int32, torch.uint8]:
        cases = ([(0, 1, 5), (-3, 7, 11), (2, -2, 4), (0, 1, 1), (0, 1, 0), (1.5, 9.75, 8),
                  (0, 10, 100), (0, 1, -1), (0, 1, 1000), (-5, -1, 64), (3.3, -7.1, 37),
                  (-1e30, 1e30, 33), (1e20, -3e20, 50), (1e38, -1e38, 21), (-1e-3, 1e5, 129),
                  (1.26e28, 1.69, 8), (-6.7e29, -9.7, 38), (9.3, 3.6e29, 1753), (-2.5, 1e4, 4099)]
                 if dt.is_floating_point else
                 [(0, 10, 11), (-3, 7, 11), (2, -2, 5), (0, 1, 1), (0, 1, 0), (0, 1, -1),
                  (5, 5, 3), (0, 200, 101)])
        for s, e, n in cases:
            if dt == torch.uint8 and (s < 0 or e < 0):
                continue
            check("linspace %s %r %r %d" % (dn(dt), s, e, n),
                  lambda dt=dt, s=s, e=e, n=n: torch.linspace(s, e, n, dtype=dt),
                  lambda o, dt=dt, s=s, e=e, n=n: L.clt_linspace(DEV, T2C[dt], s, e, n, o), [],
                  tol="exact" if dt.is_floating_point else "tr")
        cases = ([(0, 2, 5, 10.0), (-1, 1, 7, 2.0), (0, 1, 1, 10.0), (0, 3, 4, 3.0)]
                 if dt.is_floating_point else [(0, 3, 4, 2.0), (0, 2, 3, 10.0), (1, 1, 1, 3.0)])
        for s, e, n, b in cases:
            check("logspace %s %r %r %d %r" % (dn(dt), s, e, n, b),
                  lambda dt=dt, s=s, e=e, n=n, b=b: torch.logspace(s, e, n, b, dtype=dt),
                  lambda o, dt=dt, s=s, e=e, n=n, b=b: L.clt_logspace(DEV, T2C[dt], s, e, n, b, o),
                  [], tol="tr")
    for dt in DTYPES:
        for n, m in [(3, 3), (2, 5), (4, 1), (0, 3), (3, 0), (-1, 2)]:
            check("eye %s %d %d" % (dn(dt), n, m), lambda dt=dt, n=n, m=m: torch.eye(n, m, dtype=dt),
                  lambda o, dt=dt, n=n, m=m: L.clt_eye(DEV, T2C[dt], n, m, o), [], tol="exact")
    for r, c, off in [(3, 3, 0), (4, 3, 1), (3, 5, -1), (0, 3, 0), (3, 4, 10), (3, 4, -10), (-1, 2, 0)]:
        for nm, tf, cf in (("tril_indices", torch.tril_indices, L.clt_tril_indices),
                           ("triu_indices", torch.triu_indices, L.clt_triu_indices)):
            check("%s %d %d %d" % (nm, r, c, off), lambda r=r, c=c, off=off, tf=tf: tf(r, c, off),
                  lambda o, r=r, c=c, off=off, cf=cf: cf(DEV, r, c, off, o), [], tol="exact")
    for ix, code in (("ij", 0), ("xy", 1)):
        for shapes in [[(3,), (4,)], [(2,), (3,), (4,)], [(3,)], [(), (2,)], [(0,), (2,)]]:
            ins = [data(s, f) for s in shapes]
            check_list("meshgrid %s %s" % (ix, shapes),
                       lambda *ts, ix=ix: torch.meshgrid(*ts, indexing=ix),
                       lambda *ps, code=code: _mesh(ps[:-2], code, ps[-2], ps[-1]), ins)
    check_list("meshgrid 2-d", lambda a_, b_: torch.meshgrid(a_, b_, indexing="ij"),
               lambda p, q, o, n: _mesh((p, q), 0, o, n), [data((2, 2), f), data((3,), f)])
    check_list("meshgrid dtypes", lambda a_, b_: torch.meshgrid(a_, b_, indexing="ij"),
               lambda p, q, o, n: _mesh((p, q), 0, o, n),
               [data((2,), f), data((3,), torch.float64)])


def _mesh(ps, code, o, n):
    arr = (P * len(ps))(*ps)
    return L.clt_meshgrid(arr, len(ps), code, o, n)


def _pad_unsq(p, o, pad, mode):
    u, r = P(), P()
    st = L.clt_unsqueeze(p, 0, C.byref(u))
    if st:
        return st
    st = L.clt_pad(u, shape_arr(pad), len(pad), mode, 0.0, C.byref(r))
    L.clt_tensor_free(u)
    if st:
        o._obj.value = r.value  # clt_pad's NULL, for the caller's check
        return st
    st = L.clt_squeeze(r, 0, o)
    L.clt_tensor_free(r)
    return st


# ---- the transformer's decoder and nn.Transformer ------------------------------

def _named_params(m):
    """[(name, borrowed tensor)] of m's parameters, as named_parameters()."""
    arr, n = C.POINTER(Named)(), C.c_size_t()
    if L.clt_module_named_parameters(m, C.byref(arr), C.byref(n)):
        raise RuntimeError(L.clt_last_error().decode())
    out = [(arr[i].name.decode(), arr[i].tensor) for i in range(n.value)]
    L.clt_free(arr)
    return out


def _grads_agree(tag, tmod, m, tfn, cfn, inputs):
    """float64: the gradients of sum(f(inputs) * w) in every input and every
    parameter, torch's tmod by tfn and cltensor's m by cfn (on uploaded
    inputs), to 1e-9."""
    ts = [t.clone().requires_grad_() for t in inputs]
    tmod.zero_grad()
    out = tfn(*ts)
    w = torch.rand(out.shape, generator=G, dtype=torch.float64) * 2 - 1
    (out * w).sum().backward()
    want = [t.grad for t in ts] + [p.grad for _, p in tmod.named_parameters()]
    names = ["input %d" % k for k in range(len(ts))] + [n for n, _ in tmod.named_parameters()]
    ups = [upload(t) for t in inputs]
    cout, wp = P(), upload(w)
    try:
        for u in ups:
            L.clt_set_requires_grad(u, 1)
        if cfn(*ups, C.byref(cout)) or L.clt_backward(cout, wp, 0):
            return fail(tag + " grads", L.clt_last_error().decode())
        params = _named_params(m)
        if [n for n, _ in params] != names[len(ts):]:
            return fail(tag + " grads", "parameter names differ")
        for name, h, e in zip(names, ups + [t for _, t in params], want):
            g = P()
            if L.clt_grad(h, C.byref(g)) or not g.value:
                return fail("%s grad of %s" % (tag, name), "no gradient")
            got = download(g)[0]
            L.clt_tensor_free(g)
            ok("%s grad of %s" % (tag, name),
               np.allclose(got, e.numpy(), rtol=1e-9, atol=1e-10),
               "max difference %g" % np.abs(got - e.numpy()).max())
    finally:
        for h in ups + [cout, wp]:
            L.clt_tensor_free(h)


def decoder():
    """nn.TransformerDecoderLayer, nn.TransformerDecoder and nn.Transformer:
    torch's state_dict loaded through safetensors, then outputs (float32 and
    float64) and float64 gradients in the inputs and every parameter
    compared, both norm orders, both layouts, both activations, masks bool
    and additive; state_dict names; torch's refusals;
    generate_square_subsequent_mask."""
    import atexit
    import shutil
    import tempfile
    try:
        import safetensors.torch  # noqa: F401
    except ImportError:
        print("conformance: decoder skipped, no safetensors (pip install safetensors)")
        return
    nn = torch.nn
    layer_args = [P, C.c_int64, C.c_int64, C.c_int64, C.c_double, C.c_char_p, C.c_double,
                  C.c_int, C.c_int, P, PP]
    proto("clt_transformer_decoder_layer", layer_args)
    proto("clt_transformer_decoder", [P, C.c_size_t, P, PP])
    proto("clt_transformer_decoder_forward", [P, P, P, P, P, P, P, PP])
    proto("clt_transformer", [P, C.c_int64, C.c_int64, C.c_int64, C.c_int64, C.c_int64,
                              C.c_double, C.c_char_p, C.c_double, C.c_int, C.c_int, P, PP])
    proto("clt_transformer_forward", [P, P, P, P, P, P, P, P, P, PP])
    proto("clt_generate_square_subsequent_mask", [P, C.c_int, C.c_int64, PP])
    proto("clt_layer_norm_layer", [P, C.c_int, I64P, C.c_double, C.c_int, PP])
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_to_dtype", [P, C.c_int])
    proto("clt_module_train", [P, C.c_int], None)
    proto("clt_module_free", [P], None)
    proto("clt_module_named_parameters", [P, C.POINTER(C.POINTER(Named)),
                                          C.POINTER(C.c_size_t)])
    proto("clt_free", [P], None)
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_grad", [P, PP])
    tmp = tempfile.mkdtemp(prefix="cltensor-decoder-")
    atexit.register(shutil.rmtree, tmp, True)
    path = os.path.join(tmp, "state.safetensors")
    torch.manual_seed(11)
    E, H, F, T, S, N = 8, 2, 16, 5, 6, 3

    def loaded(tag, make, tmod, dt):
        """cltensor's module made by make(&m), in dt and eval mode, holding
        tmod's state (None after a failure, reported)."""
        m = P()
        if make(C.byref(m)):
            fail(tag, L.clt_last_error().decode())
            return None
        L.clt_module_to_dtype(m, T2C[dt])
        L.clt_module_train(m, 0)
        names = [n for n, _ in _named_params(m)]
        ok(tag + " names", names == [n for n, _ in tmod.named_parameters()],
           "%s / %s" % (names, [n for n, _ in tmod.named_parameters()]))
        if _state_into(m, tmod, path):
            fail(tag + " load", L.clt_last_error().decode())
            L.clt_module_free(m)
            return None
        return m

    def masks(dt, L_, S_):
        """tgt_mask (additive causal), memory_mask (bool), key padding masks
        (bool for tgt, additive for the memory), as torch and cltensor."""
        tm = torch.triu(torch.full((L_, L_), float("-inf"), dtype=dt), 1)
        mm = torch.zeros(L_, S_, dtype=torch.bool)
        mm[0, 1] = mm[3, 0] = True
        tk = torch.zeros(N, L_, dtype=torch.bool)
        tk[1, 4] = True
        mk = torch.zeros(N, S_, dtype=dt)
        mk[2, 5] = float("-inf")
        mk[0, 2] = -0.5
        ts = [tm, mm, tk, mk]
        return ts, [upload(t) for t in ts]

    for dt in FLOATS:
        tol = "mm"
        for act in ("relu", "gelu"):
            for nf in (0, 1):
                for bf in (0, 1):
                    tl = nn.TransformerDecoderLayer(E, H, F, 0.1, act, 1e-5, bool(bf),
                                                    bool(nf)).to(dt)
                    tl.eval()
                    tag = "decoder layer %s %s nf=%d bf=%d" % (dn(dt), act, nf, bf)
                    m = loaded(tag, lambda o: L.clt_transformer_decoder_layer(
                        DEV, E, H, F, 0.1, act.encode(), 1e-5, bf, nf, None, o), tl, dt)
                    if m is None:
                        continue
                    ts, cs = masks(dt, T, S)
                    xs = (N, T, E) if bf else (T, N, E)
                    ms = (N, S, E) if bf else (S, N, E)
                    x, mem = data(xs, dt, lo=-1, hi=1), data(ms, dt, lo=-1, hi=1)
                    check(tag, lambda x, y: tl(x, y),
                          lambda x, y, o: L.clt_transformer_decoder_forward(
                              m, x, y, None, None, None, None, o), [x, mem], tol=tol)
                    check(tag + " masks", lambda x, y: tl(x, y, *ts),
                          lambda x, y, o: L.clt_transformer_decoder_forward(m, x, y, *cs, o),
                          [x, mem], tol=tol)
                    check(tag + " unbatched", lambda x, y: tl(x, y, ts[0], ts[1]),
                          lambda x, y, o: L.clt_transformer_decoder_forward(
                              m, x, y, cs[0], cs[1], None, None, o),
                          [data((T, E), dt), data((S, E), dt)], tol=tol)
                    if dt == torch.float64:
                        _grads_agree(tag, tl, m, lambda x, y: tl(x, y, *ts),
                                     lambda x, y, o: L.clt_transformer_decoder_forward(
                                         m, x, y, *cs, o), [x, mem])
                    # torch's refusals: the memory's features, its batch size
                    check(tag + " memory E+1 (refused)", lambda x, y: tl(x, y),
                          lambda x, y, o: L.clt_transformer_decoder_forward(
                              m, x, y, None, None, None, None, o),
                          [x, data((N, S, E + 1) if bf else (S, N, E + 1), dt)])
                    for c in cs:
                        L.clt_tensor_free(c)
                    L.clt_module_free(m)
        # TransformerDecoder of two layers (made to differ) and a final norm
        for nf in (0, 1):
            tl = nn.TransformerDecoderLayer(E, H, F, 0.0, norm_first=bool(nf)).to(dt)
            td = nn.TransformerDecoder(tl, 2, nn.LayerNorm(E)).to(dt)
            with torch.no_grad():
                for prm in td.parameters():
                    prm.add_(torch.rand(prm.shape, dtype=dt) * 0.1)
            td.eval()
            tag = "decoder %s nf=%d" % (dn(dt), nf)

            def make_decoder(o, nf=nf):
                made = [P(), P()]
                for lp in made:
                    L.clt_transformer_decoder_layer(DEV, E, H, F, 0.0, b"relu", 1e-5, 0, nf,
                                                    None, C.byref(lp))
                nm = P()
                L.clt_layer_norm_layer(DEV, 1, shape_arr((E,)), 1e-5, 1, C.byref(nm))
                st = L.clt_transformer_decoder((P * 2)(*made), 2, nm, o)
                if st:
                    for h in made + [nm]:
                        L.clt_module_free(h)
                return st
            m = loaded(tag, make_decoder, td, dt)
            if m is None:
                continue
            ts, cs = masks(dt, T, S)
            x, mem = data((T, N, E), dt, lo=-1, hi=1), data((S, N, E), dt, lo=-1, hi=1)
            check(tag + " masks", lambda x, y: td(x, y, *ts),
                  lambda x, y, o: L.clt_transformer_decoder_forward(m, x, y, *cs, o),
                  [x, mem], tol=tol)
            if dt == torch.float64:
                _grads_agree(tag, td, m, lambda x, y: td(x, y, *ts),
                             lambda x, y, o: L.clt_transformer_decoder_forward(m, x, y, *cs, o),
                             [x, mem])
            for c in cs:
                L.clt_tensor_free(c)
            L.clt_module_free(m)
        # nn.Transformer: the encoder, then the decoder, and its six masks
        for nf in (0, 1):
            for bf in (0, 1):
                tt = nn.Transformer(E, H, 2, 2, F, 0.1, "gelu", batch_first=bool(bf),
                                    norm_first=bool(nf)).to(dt)
                tt.eval()
                tag = "transformer %s nf=%d bf=%d" % (dn(dt), nf, bf)
                m = loaded(tag, lambda o: L.clt_transformer(DEV, E, H, 2, 2, F, 0.1, b"gelu",
                                                            1e-5, bf, nf, None, o), tt, dt)
                if m is None:
                    continue
                ts, cs = masks(dt, T, S)
                sm = torch.zeros(S, S, dtype=dt)
                sm[2, 4] = -1.5
                sk = torch.zeros(N, S, dtype=torch.bool)
                sk[0, 3] = True
                smc, skc = upload(sm), upload(sk)
                xs = (N, S, E) if bf else (S, N, E)
                ys = (N, T, E) if bf else (T, N, E)
                src, tgt = data(xs, dt, lo=-1, hi=1), data(ys, dt, lo=-1, hi=1)

                def tf(s, t):
                    return tt(s, t, src_mask=sm, tgt_mask=ts[0], memory_mask=ts[1],
                              src_key_padding_mask=sk, tgt_key_padding_mask=ts[2],
                              memory_key_padding_mask=ts[3])

                def cf(s, t, o):
                    return L.clt_transformer_forward(m, s, t, smc, cs[0], cs[1], skc, cs[2],
                                                     cs[3], o)
                with torch.enable_grad():  # no fast path in the encoder
                    check(tag, lambda s, t: tt(s, t).detach(),
                          lambda s, t, o: L.clt_transformer_forward(
                              m, s, t, None, None, None, None, None, None, o),
                          [src, tgt], tol=tol)
                    check(tag + " masks", lambda s, t: tf(s, t).detach(), cf, [src, tgt], tol=tol)
                if dt == torch.float64:
                    _grads_agree(tag, tt, m, tf, cf, [src, tgt])
                other = (N + 1, T, E) if bf else (T, N + 1, E)
                check(tag + " batch sizes (refused)", lambda s, t: tt(s, t),
                      lambda s, t, o: L.clt_transformer_forward(
                          m, s, t, None, None, None, None, None, None, o),
                      [src, data(other, dt)])
                check(tag + " d_model (refused)", lambda s, t: tt(s, t),
                      lambda s, t, o: L.clt_transformer_forward(
                          m, s, t, None, None, None, None, None, None, o),
                      [data(xs[:2] + (E + 2,), dt), tgt])
                for c in cs + [smc, skc]:
                    L.clt_tensor_free(c)
                L.clt_module_free(m)
        # torch's defaults: d_model 512, nhead 8, 6 + 6 layers: the names
        if dt == torch.float32:
            tt = nn.Transformer()
            m = P()
            if L.clt_transformer(DEV, 512, 8, 6, 6, 2048, 0.1, b"relu", 1e-5, 0, 0, None,
                                 C.byref(m)):
                fail("transformer defaults", L.clt_last_error().decode())
            else:
                names = [n for n, _ in _named_params(m)]
                ok("transformer defaults names", names == list(tt.state_dict()),
                   "%d names / %d" % (len(names), len(tt.state_dict())))
                L.clt_module_free(m)
        for sz in (0, 1, 5):
            check("generate_square_subsequent_mask %s %d" % (dn(dt), sz),
                  lambda z: nn.Transformer.generate_square_subsequent_mask(sz).to(dt),
                  lambda z, o: L.clt_generate_square_subsequent_mask(DEV, T2C[dt], sz, o),
                  [torch.zeros(1)], tol="exact")


def _cummaxmin_c(name, p, o, d, want_idx):
    """clt_cummax or clt_cummin handing out its values or (want_idx) its
    indices in o; the other output, asked for too, must match the status."""
    other = P(0xdead)
    st = getattr(L, name)(p, d, C.byref(other) if want_idx else o,
                          o if want_idx else C.byref(other))
    if (st == 0) != (other.value is not None):
        raise AssertionError("the other output %s after status %d" % (other.value, st))
    L.clt_tensor_free(other)
    return st


def scans():
    """cumsum, cumprod, cummax, cummin and logcumsumexp: dtypes, every dim,
    views, NaN and inf, ties, and slices long enough to be cut into chunks
    (one row of 300000, rows along a middle dim)."""
    for n in ("clt_cumprod", "clt_logcumsumexp"):
        proto(n, [P, C.c_int, PP])
    for n in ("clt_cummax", "clt_cummin"):
        proto(n, [P, C.c_int, P, P])
    f = torch.float32
    inf, nan = float("inf"), float("nan")
    # long lines in chunks on any machine (a CPU of under 4 cores would not cut them)
    os.environ["CLTENSOR_SCAN"] = "chunks"

    def cases(name, a, dims, tol="red", exact_sum=True):
        for d in dims:
            check("cumsum %s d=%d" % (name, d), lambda t, d=d: torch.cumsum(t, d),
                  lambda p, o, d=d: L.clt_cumsum(p, d, o), [a],
                  tol="exact" if exact_sum else tol)
            check("cumprod %s d=%d" % (name, d), lambda t, d=d: torch.cumprod(t, d),
                  lambda p, o, d=d: L.clt_cumprod(p, d, o), [a], tol=tol)
            check("logcumsumexp %s d=%d" % (name, d),
                  lambda t, d=d: torch.logcumsumexp(t, d),
                  lambda p, o, d=d: L.clt_logcumsumexp(p, d, o), [a], tol=tol)
            for op in ("cummax", "cummin"):
                for idx in (0, 1):
                    check("%s%s %s d=%d" % (op, " indices" if idx else "", name, d),
                          lambda t, d=d, op=op, idx=idx: getattr(torch, op)(t, d)[idx],
                          lambda p, o, d=d, op=op, idx=idx: _cummaxmin_c("clt_" + op, p, o, d,
                                                                         idx),
                          [a], tol="exact")

    shapes = [(3, 5), (7,), (), (2, 3, 4), (0,), (0, 3), (3, 0), (33, 65), (2, 40, 17)]
    for dt in DTYPES:
        for sh in shapes if dt in FLOATS else [(3, 5), (0,), (), (2, 3, 4), (2, 40, 17)]:
            a = data(sh, dt, lo=-2, hi=2, special=True)
            nd = max(len(sh), 1)
            cases("%s %s" % (dn(dt), list(sh)), a, range(-nd - 1, nd + 1))
    # ties (the last index of equal extremes), NaN taking over, infinities
    ties = torch.tensor([[1.0, 3.0, 3.0, nan, 2.0, nan, 5.0], [-inf, -inf, 1.0, inf, inf, 0.0, 0.0],
                         [0.0, -0.0, 0.0, -0.0, 1.0, 1.0, -1.0]])
    for dt in FLOATS:
        cases("edges %s" % dn(dt), ties.to(dt), (1,))
    views = [In(data((5, 6), f), ("T",)), In(data((4, 11), f), ("S", 1, 2, 10, 3)),
             In(data((6, 7, 8), f), ("V", [("perm", (2, 0, 1))])),
             In(data((1, 5), f), ("E", (3, 5)))]
    for i, v in enumerate(views):
        cases("view %d" % i, v, (0, -1))
    # long slices, cut into chunks: values near 1 keep the products finite
    near1 = lambda sh, dt: data(sh, dt, lo=0.9995, hi=1.0005)
    cases("1 x 300000 f32", near1((1, 300000), f), (1,))
    cases("300000 f64", near1((300000,), torch.float64), (0,), exact_sum=False)
    cases("2 x 70001 x 3 f32 middle", near1((2, 70001, 3), f), (1,))
    cases("1 x 200000 int64", data((1, 200000), torch.int64, lo=-3, hi=3), (1,))
    ties_long = data((1, 100000), f, lo=-40, hi=40).round()
    ties_long[0, 50000] = nan
    cases("1 x 100000 ties and a NaN", ties_long, (1,))
    cases("strided long", In(near1((4, 200000), f), ("S", 1, 0, 199999, 2)), (1,))
    check("cumsum 2^22 x 0.1 f32", lambda t: torch.cumsum(t, 0),
          lambda p, o: L.clt_cumsum(p, 0, o), [torch.full((1 << 22,), 0.1)], tol="exact")
    check("cumsum int32 long beyond 2^31", lambda t: torch.cumsum(t, 0),
          lambda p, o: L.clt_cumsum(p, 0, o),
          [torch.full((300000,), 2**20, dtype=torch.int32)], tol="exact")
    del os.environ["CLTENSOR_SCAN"]


def topk_large():
    """topk with k > 16 (merge passes that keep the first k): the first k of
    torch.sort(stable=True), values and indices, both directions, long rows,
    middle dims, views, NaN and ties; torch.topk's values."""
    proto("clt_topk", [P, C.c_int64, C.c_int, C.c_int, C.c_int, P, P])
    f = torch.float32

    def first_k(t, k, d, largest, idx):
        r = torch.sort(t, dim=d, descending=bool(largest), stable=True)
        return r[idx].narrow(d if d >= 0 else d + t.dim(), 0, k)

    def cases(name, a, k, d):
        for largest in (0, 1):
            for idx in (0, 1):
                check("topk %s k=%d d=%d largest=%d%s" % (name, k, d, largest,
                                                          " indices" if idx else ""),
                      lambda t, k=k, d=d, largest=largest, idx=idx: first_k(t, k, d, largest, idx),
                      lambda p, o, k=k, d=d, largest=largest, idx=idx: _topk_c(p, o, k, d, largest,
                                                                                idx),
                      [a], tol="exact")
            check("topk %s k=%d d=%d largest=%d torch.topk" % (name, k, d, largest),
                  lambda t, k=k, d=d, largest=largest: torch.topk(t, k, d, bool(largest))[0],
                  lambda p, o, k=k, d=d, largest=largest: _topk_c(p, o, k, d, largest, 0), [a],
                  tol="exact", signed_zero=False)

    a = data((64, 1000), f)
    for k in (17, 100, 999, 1000):
        cases("64x1000", a, k, 1)
    cases("1x100000", data((1, 100000), f), 1000, 1)
    cases("1x100000 f64 special", data((1, 100000), torch.float64, special=True), 300, -1)
    cases("ties", data((8, 5000), f, lo=-3, hi=3).round(), 700, 1)
    cases("int64 ties", data((3, 4099), torch.int64, lo=-9, hi=9), 33, 1)
    cases("middle", data((3, 2000, 5), f), 37, 1)
    cases("dim 0", data((3000, 4), torch.float64), 129, 0)
    cases("transposed", In(data((700, 6), f), ("T",)), 65, 1)
    cases("sliced", In(data((4, 6001), f), ("S", 1, 1, 6000, 2)), 200, 1)


def _unique_part(fn, which):
    """clt_unique's (or clt_unique_consecutive's) output `which` (0 values,
    1 inverse, 2 counts) as a one-output call."""
    def call(p, o):
        outs = [P(), P(), P()]
        st = fn(p, C.byref(outs[0]), C.byref(outs[1]), C.byref(outs[2]))
        if st:
            o._obj.value = None
            return st
        for k in range(3):
            if k == which:
                o._obj.value = outs[k].value
            else:
                L.clt_tensor_free(outs[k])
        return 0
    return call


def _ptrs(*ps):
    return (P * len(ps))(*[q.value for q in ps])


def _device_error(name, cfn, ins, want):
    """cfn succeeds at the call and the read of its result reports `want`
    (an out-of-range index found on the device)."""
    keep = [upload(t) for t in ins]
    out = P()
    st = cfn(*keep, C.byref(out))
    got = None
    if st == 0:
        a = np.empty(L.clt_tensor_nbytes(out) or 1, dtype=np.uint8)
        got = L.clt_tensor_read(out, a.ctypes.data_as(P), a.nbytes)
        L.clt_tensor_free(out)
    msg = (L.clt_last_error() or b"").decode()
    ok(name, st == 0 and got is not None and got < 0 and want in msg, "status %s read %s: %s" % (st, got, msg))
    for q in keep:
        L.clt_tensor_free(q)


def index_more():
    """take, index_fill, index_copy, index_put, scatter_reduce, masked_select,
    masked_scatter, nonzero, searchsorted, bucketize, bincount, unique."""
    for n in ("clt_take", "clt_argwhere", "clt_nonzero"):
        proto(n, [P, P, PP] if n == "clt_take" else [P, PP])
    proto("clt_index_fill", [P, C.c_int, P, C.c_double, PP])
    proto("clt_index_copy", [P, C.c_int, P, P, PP])
    proto("clt_index_put", [P, PP, C.c_int, P, C.c_int, PP])
    proto("clt_scatter_reduce", [P, C.c_int, P, P, C.c_char_p, C.c_int, PP])
    proto("clt_masked_select", [P, P, PP])
    proto("clt_masked_scatter", [P, P, P, PP])
    proto("clt_searchsorted", [P, P, C.c_int, PP])
    proto("clt_bucketize", [P, P, C.c_int, PP])
    proto("clt_bincount", [P, P, C.c_int64, PP])
    proto("clt_unique", [P, PP, PP, PP])
    proto("clt_unique_consecutive", [P, PP, PP, PP])
    nan = float("nan")
    i64 = torch.int64
    dts = [torch.float32, torch.float64, torch.int32, torch.int64]
    for dt in dts + [torch.bool, torch.uint8]:
        a = data((3, 4), dt)
        for idx in ([0, 11, -1, -12, 5, 5], [[1, -2], [3, 0]], 4, []):
            it = torch.tensor(idx, dtype=i64)
            check("take %s %s" % (dn(dt), idx), torch.take, L.clt_take, [a, it], tol="exact")
    check("take from empty", torch.take, L.clt_take,
          [torch.zeros(0), torch.tensor([0])])
    check("take int32 index", torch.take, L.clt_take,
          [torch.zeros(3), torch.tensor([0], dtype=torch.int32)])
    check("take empty index", torch.take, L.clt_take, [torch.zeros(0), torch.zeros(0, dtype=i64)])
    _device_error("take out of range", L.clt_take,
                  [torch.arange(5.0), torch.tensor([1, -6])], "clt_take: index -6")
    for dt in dts:
        a = data((3, 4, 5), dt)
        for d in range(-3, 3):
            size = a.shape[d]
            ix = torch.tensor([size - 1, 0, -1, -size], dtype=i64)
            check("index_fill %s d=%d" % (dn(dt), d),
                  lambda t, i, d=d: torch.index_fill(t, d, i, 3),
                  lambda p, i, o, d=d: L.clt_index_fill(p, d, i, 3.0, o), [a, ix], tol="exact")
            ic = torch.tensor([size - 1, 0], dtype=i64)
            sh = list(a.shape)
            sh[d] = 2
            src = data(tuple(sh), dt)
            check("index_copy %s d=%d" % (dn(dt), d),
                  lambda t, i, s, d=d: torch.index_copy(t, d, i, s),
                  lambda p, i, s, o, d=d: L.clt_index_copy(p, d, i, s, o), [a, ic, src],
                  tol="exact")
    check("index_fill 0-d index", lambda t, i: torch.index_fill(t, 1, i, -2.5),
          lambda p, i, o: L.clt_index_fill(p, 1, i, -2.5, o),
          [data((2, 3), torch.float32), torch.tensor(-1)], tol="exact")
    check("index_fill int32 index", lambda t, i: torch.index_fill(t, 0, i, 1),
          lambda p, i, o: L.clt_index_fill(p, 0, i, 1, o),
          [data((2, 3), torch.float32), torch.tensor([0], dtype=torch.int32)])
    check("index_copy src size", lambda t, i, s: torch.index_copy(t, 0, i, s),
          lambda p, i, s, o: L.clt_index_copy(p, 0, i, s, o),
          [data((2, 3), torch.float32), torch.tensor([0, 1]), data((3, 3), torch.float32)])
    _device_error("index_copy negative", lambda p, i, s, o: L.clt_index_copy(p, 0, i, s, o),
                  [torch.zeros(5), torch.tensor([-1]), torch.ones(1)], "index -1")

    # index_put: broadcast indices, negatives, bool masks, accumulate
    def put(nidx, acc):
        def t_fn(t, *r):
            return torch.index_put(t, tuple(r[:nidx]), r[nidx], accumulate=bool(acc))

        def c_fn(p, *r):
            ix = _ptrs(*r[:nidx])
            return L.clt_index_put(p, ix, nidx, r[nidx], acc, r[nidx + 1])
        return t_fn, c_fn
    for dt in dts:
        a = data((4, 3, 2), dt)
        cases = [
            ([torch.tensor([0, 2, -1, 2])], data((4, 3, 2), dt)),
            ([torch.tensor([0, 2, -1, 2])], data((2,), dt)),
            ([torch.tensor([[0], [3]]), torch.tensor([1, -1, 0])], data((2, 3, 2), dt)),
            ([torch.tensor([1, 1]), torch.tensor([2, 2]), torch.tensor([0, 0])],
             data((2,), dt)),
            ([torch.tensor([True, False, True, True])], data((1,), dt)),
            ([data((4, 3), torch.bool)], data((2,), dt)),
            ([torch.tensor(3), torch.tensor([0, 2])], data((2, 2), dt)),
            ([torch.zeros(0, dtype=i64)], data((2,), dt)),
        ]
        for k, (ix, v) in enumerate(cases):
            for acc in ((0, 1) if k != 3 else (1,)):
                tf, cf = put(len(ix), acc)
                check("index_put %s case %d acc=%d" % (dn(dt), k, acc), tf, cf, [a] + ix + [v],
                      tol="exact" if not dt.is_floating_point else "red")
    for k, (ix, v) in enumerate([
            ([torch.tensor([0, 1]), torch.tensor([0, 1, 2])], torch.ones(1)),
            ([torch.tensor([0, 1])], torch.ones(3)),
            ([torch.tensor([0]), torch.tensor([0]), torch.tensor([0]), torch.tensor([0])],
             torch.ones(1)),
            ([torch.tensor([0], dtype=torch.int32)], torch.ones(1)),
            ([torch.tensor([True, False])], torch.ones(1)),
            ([torch.tensor([0])], torch.ones(1, dtype=torch.float64))]):
        tf, cf = put(len(ix), 0)
        check("index_put refused %d" % k, tf, cf, [torch.zeros(4, 3, 2)] + ix + [v])
    _device_error("index_put out of range", lambda p, i, v, o: put(1, 0)[1](p, i, v, o),
                  [torch.zeros(4, 3), torch.tensor([1, -5]), torch.ones(3)],
                  "clt_index_put: index -5 is out of bounds for dimension 0 with size 4")

    # scatter_reduce: every reduction, include_self both ways, duplicates
    for dt in dts:
        t = data((4, 5), dt, lo=-4, hi=4)
        src = data((6, 5), dt, lo=-4, hi=4)
        if dt.is_floating_point:
            t[1, 2] = nan
            src[3, 4] = nan
        for red in ("sum", "prod", "mean", "amax", "amin"):
            for inc in (0, 1):
                for d, ix in ((0, torch.tensor([[0, 1, 2, 3, 0], [0, 0, 0, 3, 3],
                                                 [3, 3, 1, 1, 0]])),
                              (1, torch.tensor([[0, 0, 4], [1, 1, 1], [4, 3, 2], [0, 1, 0]])),
                              (-1, torch.zeros(0, 0, dtype=i64))):
                    check("scatter_reduce %s %s self=%d d=%d" % (dn(dt), red, inc, d),
                          lambda a, i, s, d=d, red=red, inc=inc:
                              torch.scatter_reduce(a, d, i, s, red, include_self=bool(inc)),
                          lambda p, i, s, o, d=d, red=red, inc=inc:
                              L.clt_scatter_reduce(p, d, i, s, red.encode(), inc, o),
                          [t, ix, src], tol="red")
    check("scatter_reduce bad reduce", lambda a, i, s: torch.scatter_reduce(a, 0, i, s, "max"),
          lambda p, i, s, o: L.clt_scatter_reduce(p, 0, i, s, b"max", 1, o),
          [torch.zeros(3), torch.tensor([0]), torch.ones(1)])
    _device_error("scatter_reduce out of range",
                  lambda p, i, s, o: L.clt_scatter_reduce(p, 0, i, s, b"sum", 1, o),
                  [torch.zeros(3), torch.tensor([3]), torch.ones(1)],
                  "clt_scatter_reduce: index 3 is out of bounds for dimension 0 with size 3")

    # masked_select, masked_scatter, nonzero, argwhere
    for dt in dts + [torch.bool]:
        for sh, msh in (((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (2, 4)), ((), ()),
                        ((0, 3), (3,)), ((2, 3), (1, 1))):
            a, m = data(sh, dt), data(msh, torch.bool)
            check("masked_select %s %s %s" % (dn(dt), list(sh), list(msh)),
                  torch.masked_select, L.clt_masked_select, [a, m], tol="exact")
            src = data((13,), dt)
            check("masked_scatter %s %s %s" % (dn(dt), list(sh), list(msh)),
                  torch.masked_scatter, L.clt_masked_scatter, [a, m, src], tol="exact")
            check("nonzero %s %s" % (dn(dt), list(sh)), torch.nonzero, L.clt_nonzero, [a],
                  tol="exact")
            check("argwhere %s %s" % (dn(dt), list(sh)), torch.argwhere, L.clt_argwhere, [a],
                  tol="exact")
    check("nonzero nan", torch.nonzero, L.clt_nonzero, [torch.tensor([0.0, nan, -0.0, 1.0])],
          tol="exact")
    check("masked_select int mask", torch.masked_select, L.clt_masked_select,
          [torch.zeros(3), torch.ones(3, dtype=torch.uint8)])
    check("masked_scatter short source", torch.masked_scatter, L.clt_masked_scatter,
          [torch.zeros(3), torch.ones(3, dtype=torch.bool), torch.ones(2)])

    # searchsorted and bucketize
    sq = torch.tensor([-2.0, -1.0, 0.0, 0.0, 1.5, 3.0, nan])
    vals = torch.tensor([[-3.0, -2.0, 0.0, 0.5], [3.0, 4.0, nan, -1.0]])
    for right in (0, 1):
        for dt in dts:
            s1, v1 = sq[:-1].to(dt), vals.nan_to_num(5.0).to(dt)
            check("searchsorted %s right=%d" % (dn(dt), right),
                  lambda s, v, r=right: torch.searchsorted(s, v, right=bool(r)),
                  lambda s, v, o, r=right: L.clt_searchsorted(s, v, r, o), [s1, v1],
                  tol="exact")
            check("bucketize %s right=%d" % (dn(dt), right),
                  lambda v, s, r=right: torch.bucketize(v, s, right=bool(r)),
                  lambda v, s, o, r=right: L.clt_bucketize(v, s, r, o), [v1, s1], tol="exact")
        check("searchsorted nan right=%d" % right,
              lambda s, v, r=right: torch.searchsorted(s, v, right=bool(r)),
              lambda s, v, o, r=right: L.clt_searchsorted(s, v, r, o), [sq, vals], tol="exact")
        nd = torch.sort(data((2, 3, 5), torch.float32), -1)[0]
        check("searchsorted n-d right=%d" % right,
              lambda s, v, r=right: torch.searchsorted(s, v, right=bool(r)),
              lambda s, v, o, r=right: L.clt_searchsorted(s, v, r, o),
              [nd, data((2, 3, 4), torch.float32)], tol="exact")
        check("searchsorted mixed dtypes right=%d" % right,
              lambda s, v, r=right: torch.searchsorted(s, v, right=bool(r)),
              lambda s, v, o, r=right: L.clt_searchsorted(s, v, r, o),
              [torch.tensor([1, 2, 2, 5]), torch.tensor([2.0, 2.5, -1.0])], tol="exact")
    check("searchsorted bad shapes", torch.searchsorted, lambda s, v, o: L.clt_searchsorted(s, v, 0, o),
          [torch.zeros(2, 3), torch.zeros(3, 3)])
    check("bucketize 2-d boundaries", torch.bucketize, lambda v, s, o: L.clt_bucketize(v, s, 0, o),
          [torch.zeros(3), torch.zeros(2, 3)])

    # bincount
    x = torch.tensor([2, 0, 2, 7, 1, 2])
    for w in (None, torch.float32, torch.float64, torch.int64):
        for ml in (0, 3, 11):
            ins = [x] if w is None else [x, data((6,), w)]
            check("bincount %s ml=%d" % (w, ml),
                  lambda a, *ws, ml=ml: torch.bincount(a, ws[0] if ws else None, ml),
                  lambda p, *r, ml=ml: L.clt_bincount(p, r[0] if len(r) > 1 else None, ml, r[-1]),
                  ins, tol="red")
    for dt in (torch.int32, torch.uint8):
        check("bincount %s" % dn(dt), torch.bincount, lambda p, o: L.clt_bincount(p, None, 0, o),
              [x.to(dt)], tol="exact")
    for k, bad in enumerate([torch.tensor([1, -1]), torch.zeros(2, 2, dtype=i64),
                             torch.tensor([1.0])]):
        check("bincount refused %d" % k, torch.bincount,
              lambda p, o: L.clt_bincount(p, None, 0, o), [bad])
    check("bincount empty", lambda a: torch.bincount(a, minlength=4),
          lambda p, o: L.clt_bincount(p, None, 4, o), [torch.zeros(0, dtype=i64)], tol="exact")

    # unique and unique_consecutive
    for dt in dts + [torch.bool]:
        for sh in ((10,), (3, 4), (), (0,)):
            a = data(sh, dt, lo=-2, hi=2)
            for which, kw in ((0, {}), (1, {"return_inverse": True}),
                              (2, {"return_counts": True})):
                for cons in (False, True):
                    tf = torch.unique_consecutive if cons else torch.unique
                    cf = L.clt_unique_consecutive if cons else L.clt_unique

                    def tfun(t, tf=tf, kw=kw, which=which):
                        r = tf(t, **kw)
                        return r if which == 0 else r[1]
                    check("unique%s %s %s out %d" % ("_consecutive" if cons else "", dn(dt),
                                                     list(sh), which),
                          tfun, _unique_part(cf, which), [a], tol="exact")
    u = torch.tensor([nan, 1.0, nan, 1.0, -0.0, 0.0])
    check("unique nan values", torch.unique, _unique_part(L.clt_unique, 0), [u], tol="exact",
          signed_zero=False)
    check("unique_consecutive nan counts",
          lambda t: torch.unique_consecutive(t, return_counts=True)[1],
          _unique_part(L.clt_unique_consecutive, 2), [u], tol="exact")

    # index_put with full slices (NULL entries, torch's None in aten.index_put)
    proto("clt_searchsorted_ex", [P, P, C.c_int, C.c_int, C.c_char_p, P, PP])
    proto("clt_unique_dim", [P, C.c_int, C.c_int, PP, PP, PP])

    def put_s(pattern, acc):
        m = sum(q is not None for q in pattern)

        def t_fn(t, *r):
            ix = [None if q is None else r[q] for q in pattern]
            return torch.ops.aten.index_put(t, ix, r[m], bool(acc))

        def c_fn(p, *r):
            ix = (P * len(pattern))(*[None if q is None else r[q].value for q in pattern])
            return L.clt_index_put(p, ix, len(pattern), r[m], acc, r[m + 1])
        return t_fn, c_fn
    for dt in dts:
        a = data((3, 4, 5), dt)
        i2, j2 = torch.tensor([3, -1]), torch.tensor([[0], [-2]])
        for k, (pat, ix, vs) in enumerate([
                ((None, 0), [i2], (3, 2, 5)),
                ((None, 0), [i2], (2, 1)),
                ((None, 0, 1), [j2, torch.tensor([1, 4, 0])], (3, 2, 3)),
                ((0, None, 1), [torch.tensor([2, 0]), i2], (2, 4)),
                ((0, None, 1), [torch.tensor([2, 0]), i2], (4,)),
                ((None, None, 0), [i2], (1, 4, 1)),
                ((None, 0), [data((4, 5), torch.bool)], (3, 1)),
                ((0, None, None), [torch.tensor([1, 1])], (2, 4, 5))]):
            for acc in (0, 1):
                if k == 7 and acc == 0:
                    continue
                tf, cf = put_s(pat, acc)
                check("index_put slices %s case %d acc=%d" % (dn(dt), k, acc), tf, cf,
                      [a] + ix + [data(vs, dt)],
                      tol="exact" if not dt.is_floating_point else "red")
    for k, (pat, ix, vs) in enumerate([
            ((None, 0), [torch.tensor([0, 1])], (2, 3)),
            ((0, None, 1), [torch.tensor([0]), torch.tensor([0])], (1, 1, 4)),
            ((None, None, None, 0), [torch.tensor([0])], (1,))]):
        tf, cf = put_s(pat, 0)
        check("index_put slices refused %d" % k, tf, cf, [torch.zeros(3, 4, 5)] + ix +
              [torch.ones(vs)])

    # searchsorted with side, sorter, out_int32
    seq = torch.tensor([[3.0, -1.0, 7.0, 0.0, 3.0], [10.0, 20.0, 10.0, nan, -5.0]])
    srt = torch.argsort(seq, -1)
    v2 = torch.tensor([[3.0, -2.0, 8.0], [10.0, nan, 25.0]])
    for side in (None, "left", "right"):
        for right in (0, 1):
            for i32 in (0, 1):
                for use in (0, 1):
                    def tf(s, v, o, side=side, right=right, i32=i32, use=use):
                        return torch.searchsorted(s, v, out_int32=bool(i32), right=bool(right),
                                                  side=side, sorter=o if use else None)

                    def cf(s, v, o, out, side=side, right=right, i32=i32, use=use):
                        return L.clt_searchsorted_ex(s, v, i32, right,
                                                     side.encode() if side else None,
                                                     o if use else None, out)
                    check("searchsorted_ex side=%s right=%d int32=%d sorter=%d" % (
                        side, right, i32, use), tf, cf,
                        [seq if use else torch.sort(seq, -1)[0], v2, srt], tol="exact")
    for k, (side, srt_bad) in enumerate([("lft", srt), ("left", srt), (None, srt.int()),
                                         (None, srt[:, :4])]):
        check("searchsorted_ex refused %d" % k,
              lambda s, v, o, side=side, k=k: torch.searchsorted(s, v, side=side, right=k == 1,
                                                                 sorter=o),
              lambda s, v, o, out, side=side, k=k: L.clt_searchsorted_ex(
                  s, v, 0, int(k == 1), side.encode() if side else None, o, out),
              [seq, v2, srt_bad])

    # unique along a dimension
    def udim(d, which):
        def t_fn(t):
            r = torch.unique(t, sorted=True, return_inverse=True, return_counts=True, dim=d)
            return r[which]

        def c_fn(p, o):
            return _unique_part(lambda q, a, b, c: L.clt_unique_dim(q, d, 1, a, b, c),
                                which)(p, o)
        return t_fn, c_fn
    for dt in dts + [torch.bool]:
        a = data((4, 3, 2), dt, lo=-1, hi=1)
        a[2] = a[0]
        a[:, 2] = a[:, 0]
        for d in (-3, -1, 0, 1, 2):
            for which in (0, 1, 2):
                tf, cf = udim(d, which)
                check("unique_dim %s d=%d out %d" % (dn(dt), d, which), tf, cf, [a],
                      tol="exact")
    for k, (sh, d) in enumerate([((0, 3), 0), ((2, 0), 0), ((), 0), ((2, 3), 2)]):
        tf, cf = udim(d, 0)
        check("unique_dim edge %d" % k, tf, cf, [torch.zeros(sh)], tol="exact")


ACT0 = ["relu6", "hardsigmoid", "hardswish", "mish", "selu", "softsign", "tanhshrink",
        "logsigmoid"]
for n in ACT0:
    proto("clt_" + n, [P, PP])
proto("clt_hardtanh", [P, C.c_double, C.c_double, PP])
proto("clt_threshold", [P, C.c_double, C.c_double, PP])
for n in ("celu", "hardshrink", "softshrink"):
    proto("clt_" + n, [P, C.c_double, PP])
proto("clt_glu", [P, C.c_int, PP])
proto("clt_prelu", [P, P, PP])
proto("clt_softmin", [P, C.c_int, PP])


def activations():
    Fn = torch.nn.functional
    t0 = {"relu6": Fn.relu6, "hardsigmoid": Fn.hardsigmoid, "hardswish": Fn.hardswish,
          "mish": Fn.mish, "selu": Fn.selu, "softsign": Fn.softsign, "tanhshrink": Fn.tanhshrink,
          "logsigmoid": Fn.logsigmoid}
    t1 = {"celu": ((1.0, 0.5, 2.0, -1.5, 0.0), Fn.celu),
          "hardshrink": ((0.5, 0.0, 2.0, -1.0), Fn.hardshrink),
          "softshrink": ((0.5, 0.0, 2.0, -1.0, math.nan), Fn.softshrink)}
    # kinks, saturation and huge values: exp overflows past 88 in float32
    edge = [-3.0, 3.0, -1.0, 1.0, 0.0, -0.0, -0.5, 0.5, 6.0, -6.0, 2.5, -2.5, -math.inf,
            math.inf, math.nan, -1e30, 1e30, -100.0, 100.0, -88.0, -89.0, 20.0, -20.0, 1e-10,
            -1e-10, -750.0, 710.0, 3e38, -3e38]
    for dt in DTYPES:
        for n, tf in t0.items():
            getc = getattr(L, "clt_" + n)
            check("%s %s" % (n, dn(dt)), tf, lambda p, o, c=getc: c(p, o),
                  [data((5, 40), dt, special=True)], tol="tr")
        for n, (scs, tf) in t1.items():
            for sc in scs:
                getc = getattr(L, "clt_" + n)
                check("%s %s %r" % (n, dn(dt), sc), lambda t, tf=tf, sc=sc: tf(t, sc),
                      lambda p, o, c=getc, sc=sc: c(p, sc, o),
                      [data((3, 7), dt, special=True)], tol="tr")
        if dt == torch.uint8:  # torch wraps negative bounds into uint8 its own way
            bounds = [(2.0, 5.0), (0.0, 6.0)]
            ths = [(3.0, 7.0)]
        else:
            bounds = [(-1.0, 1.0), (-0.5, 2.0), (1.0, -1.0), (0.0, 6.0), (-2.0, 2.0)]
            ths = [(0.5, 2.0), (0.0, 0.0), (-1.0, 20.0), (2.0, -3.0)]
        for lo, hi in bounds:
            check("hardtanh %s %r %r" % (dn(dt), lo, hi),
                  lambda t, lo=lo, hi=hi: Fn.hardtanh(t, lo, hi),
                  lambda p, o, lo=lo, hi=hi: L.clt_hardtanh(p, lo, hi, o),
                  [data((5, 40), dt, special=True)])
        for th, v in ths:
            check("threshold %s %r %r" % (dn(dt), th, v),
                  lambda t, th=th, v=v: Fn.threshold(t, th, v),
                  lambda p, o, th=th, v=v: L.clt_threshold(p, th, v, o),
                  [data((5, 40), dt, special=True)])
    for dt in FLOATS:
        e = torch.tensor(edge, dtype=dt)
        for n, tf in t0.items():
            getc = getattr(L, "clt_" + n)
            check("%s edges %s" % (n, dn(dt)), tf, lambda p, o, c=getc: c(p, o), [e], tol="tr")
            check("%s transposed %s" % (n, dn(dt)), tf, lambda p, o, c=getc: c(p, o),
                  [In(data((4, 3), dt, special=True), ("T",))], tol="tr")
        for n, (scs, tf) in t1.items():
            getc = getattr(L, "clt_" + n)
            check("%s edges %s" % (n, dn(dt)), lambda t, tf=tf: tf(t, 0.5),
                  lambda p, o, c=getc: c(p, 0.5, o), [e], tol="tr")
        check("hardtanh edges %s" % dn(dt), Fn.hardtanh,
              lambda p, o: L.clt_hardtanh(p, -1.0, 1.0, o), [e])
        check("threshold edges %s" % dn(dt), lambda t: Fn.threshold(t, 0.5, -2.0),
              lambda p, o: L.clt_threshold(p, 0.5, -2.0, o), [e])
        # glu along each dim, negative too; odd sizes and 0-d refused
        x = data((4, 6, 2), dt, special=True)
        for d in (0, 1, 2, -1, -3, 3, -4):
            check("glu %s dim %d" % (dn(dt), d), lambda t, d=d: Fn.glu(t, d),
                  lambda p, o, d=d: L.clt_glu(p, d, o), [x], tol="tr")
        check("glu odd %s" % dn(dt), lambda t: Fn.glu(t, 1), lambda p, o: L.clt_glu(p, 1, o),
              [data((2, 3), dt)])
        check("glu 0-d %s" % dn(dt), lambda t: Fn.glu(t, 0), lambda p, o: L.clt_glu(p, 0, o),
              [torch.tensor(1.0, dtype=dt)])
        check("glu transposed %s" % dn(dt), lambda t: Fn.glu(t, 0),
              lambda p, o: L.clt_glu(p, 0, o), [In(data((3, 4), dt), ("T",))], tol="tr")
        # prelu: one weight or one per channel; mismatches refused
        for xs, ws in [((2, 3, 4), (3,)), ((2, 3, 4), (1,)), ((2, 3), (3,)), ((5,), (1,)),
                       ((), (1,)), ((), ()), ((2, 3, 2, 2), (3,)), ((2, 3), (2,)),
                       ((3,), (3,)), ((2, 3), (1, 3)), ((2, 1, 4), (1,))]:
            check("prelu %s %s %s" % (dn(dt), xs, ws), Fn.prelu, L.clt_prelu,
                  [data(xs, dt, special=True), data(ws, dt, lo=-1, hi=1)])
        check("prelu dtypes %s" % dn(dt), Fn.prelu, L.clt_prelu,
              [data((2, 3), dt), data((3,), torch.float64 if dt == torch.float32 else
                                      torch.float32)])
        for d in (0, 1, -1):
            check("softmin %s dim %d" % (dn(dt), d), lambda t, d=d: Fn.softmin(t, d),
                  lambda p, o, d=d: L.clt_softmin(p, d, o), [data((3, 5), dt, lo=-30, hi=30)],
                  tol="red")
    for dt in (torch.int64, torch.bool):
        check("prelu %s" % dn(dt), Fn.prelu, L.clt_prelu, [data((2, 3), dt), data((3,), dt)])
        check("glu %s" % dn(dt), lambda t: Fn.glu(t, 0), lambda p, o: L.clt_glu(p, 0, o),
              [data((2, 3), dt)])
        check("softmin %s" % dn(dt), lambda t: Fn.softmin(t, 0),
              lambda p, o: L.clt_softmin(p, 0, o), [data((2, 3), dt)])


def nn_init():
    """torch.nn.init's deterministic results, fans and gains, and torch's
    refusals of init and of the samplers (their wording in ours)."""
    proto("clt_init_calculate_gain", [C.c_char_p, C.c_double, C.POINTER(C.c_double)])
    for name in ("eye_", "zeros_", "ones_"):
        proto("clt_init_" + name, [P])
    proto("clt_init_constant_", [P, C.c_double])
    proto("clt_init_dirac_", [P, C.c_int64])
    for name in ("xavier_uniform_", "xavier_normal_", "orthogonal_"):
        proto("clt_init_" + name, [P, P, C.c_double])
    for name in ("kaiming_uniform_", "kaiming_normal_"):
        proto("clt_init_" + name, [P, P, C.c_double, C.c_char_p, C.c_char_p])
    proto("clt_init_trunc_normal_", [P, P] + [C.c_double] * 4)
    proto("clt_init_sparse_", [P, P, C.c_double, C.c_double])
    for name in ("exponential_", "geometric_", "bernoulli_"):
        proto("clt_" + name, [P, P, C.c_double])
    for name in ("log_normal_", "cauchy_"):
        proto("clt_" + name, [P, P, C.c_double, C.c_double])
    proto("clt_poisson", [P, P, PP])
    proto("clt_bernoulli", [P, P, PP])
    proto("clt_multinomial", [P, P, C.c_int64, C.c_int, PP])

    g = C.c_double()
    for nl, param in [("linear", None), ("conv1d", None), ("conv_transpose2d", None),
                      ("sigmoid", None), ("tanh", None), ("relu", None), ("selu", None),
                      ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3)]:
        want = torch.nn.init.calculate_gain(nl, param)
        st = L.clt_init_calculate_gain(nl.encode(), math.nan if param is None else param,
                                       C.byref(g))
        ok("calculate_gain %s %r" % (nl, param), st == 0 and abs(g.value - want) < 1e-15,
           "%r vs %r" % (g.value, want))

    def same(name, t, cfn, tfn):
        p = upload(t)
        st = cfn(p)
        got, _, _ = download(p)
        L.clt_tensor_free(p)
        want = t.clone()
        tfn(want)
        ok(name, st == 0 and np.array_equal(got, want.numpy()),
           "status %d %s" % (st, L.clt_last_error().decode()))

    for shape in [(3, 5), (4, 4), (5, 2)]:
        for dt in (torch.float32, torch.int64):
            t = torch.full(shape, 7, dtype=dt)
            same("eye_ %s %s" % (shape, dt), t, L.clt_init_eye_, torch.nn.init.eye_)
            same("constant_ %s %s" % (shape, dt), t, lambda p: L.clt_init_constant_(p, -3),
                 lambda x: torch.nn.init.constant_(x, -3))
    for shape, groups in [((6, 2, 3, 4), 2), ((4, 4, 3), 1), ((4, 2, 3, 3, 3), 2),
                          ((3, 5, 2, 2), 1), ((8, 1, 5), 4)]:
        t = torch.full(shape, 9.0)
        same("dirac_ %s groups %d" % (shape, groups), t,
             lambda p: L.clt_init_dirac_(p, groups), lambda x: torch.nn.init.dirac_(x, groups))

    # kaiming_uniform_'s and xavier_uniform_'s bounds from torch's own fans
    gen = P()
    assert L.clt_generator_new(3, C.byref(gen)) == 0
    for shape in [(64, 32), (32, 16, 3, 3), (8, 4, 5), (16, 4, 2, 2, 2)]:
        for mode in ("fan_in", "fan_out"):
            for nl, a in [("relu", 0), ("leaky_relu", math.sqrt(5)), ("tanh", 0)]:
                t = torch.zeros(shape)
                fan = torch.nn.init._calculate_correct_fan(t, mode)
                bound = math.sqrt(3.0) * torch.nn.init.calculate_gain(nl, a) / math.sqrt(fan)
                p = upload(t)
                st = L.clt_init_kaiming_uniform_(p, gen, a, mode.encode(), nl.encode())
                got, _, _ = download(p)
                L.clt_tensor_free(p)
                hi = np.abs(got).max()
                ok("kaiming_uniform_ %s %s %s" % (shape, mode, nl),
                   st == 0 and hi <= bound * (1 + 1e-6) and hi > 0.9 * bound,
                   "largest %r, bound %r" % (hi, bound))
        t = torch.zeros(shape)
        fi, fo = torch.nn.init._calculate_fan_in_and_fan_out(t)
        bound = 1.5 * math.sqrt(6.0 / (fi + fo))
        p = upload(t)
        st = L.clt_init_xavier_uniform_(p, gen, 1.5)
        got, _, _ = download(p)
        L.clt_tensor_free(p)
        hi = np.abs(got).max()
        ok("xavier_uniform_ %s" % (shape,), st == 0 and hi <= bound * (1 + 1e-6) and hi > 0.9 * bound,
           "largest %r, bound %r" % (hi, bound))

    # refusals: torch's message within ours
    def refused(name, tfn, cfn):
        try:
            tfn()
            fail(name, "torch accepts it")
            return
        except Exception as e:
            want = str(e).split("\n")[0]
        st = cfn()
        msg = L.clt_last_error().decode()
        ok(name, st != 0 and want in msg, "torch %r, ours %r" % (want, msg))

    def on(shape, fn, dtype=torch.float32):
        def run():
            p = upload(torch.zeros(shape, dtype=dtype))
            st = fn(p)
            L.clt_tensor_free(p)
            return st
        return run

    init = torch.nn.init
    refused("eye_ 1-D", lambda: init.eye_(torch.zeros(3)), on((3,), L.clt_init_eye_))
    refused("dirac_ 2-D", lambda: init.dirac_(torch.zeros(3, 3)), on((3, 3), lambda p: L.clt_init_dirac_(p, 1)))
    refused("dirac_ groups", lambda: init.dirac_(torch.zeros(3, 3, 3), 2),
            on((3, 3, 3), lambda p: L.clt_init_dirac_(p, 2)))
    refused("xavier 1-D", lambda: init.xavier_uniform_(torch.zeros(3)),
            on((3,), lambda p: L.clt_init_xavier_uniform_(p, gen, 1.0)))
    refused("kaiming nonlinearity", lambda: init.kaiming_normal_(torch.zeros(3, 3), nonlinearity="foo"),
            on((3, 3), lambda p: L.clt_init_kaiming_normal_(p, gen, 0, None, b"foo")))
    refused("orthogonal 1-D", lambda: init.orthogonal_(torch.zeros(3)),
            on((3,), lambda p: L.clt_init_orthogonal_(p, gen, 1.0)))
    refused("sparse 3-D", lambda: init.sparse_(torch.zeros(2, 2, 2), 0.5),
            on((2, 2, 2), lambda p: L.clt_init_sparse_(p, gen, 0.5, 0.01)))
    refused("calculate_gain", lambda: init.calculate_gain("foo"),
            lambda: L.clt_init_calculate_gain(b"foo", math.nan, C.byref(g)))
    x = torch.zeros(3, 4)
    refused("exponential_", lambda: x.exponential_(-1), on((3, 4), lambda p: L.clt_exponential_(p, gen, -1)))
    refused("geometric_", lambda: x.geometric_(1), on((3, 4), lambda p: L.clt_geometric_(p, gen, 1)))
    refused("log_normal_", lambda: x.log_normal_(0, 0), on((3, 4), lambda p: L.clt_log_normal_(p, gen, 0, 0)))
    refused("bernoulli_", lambda: x.bernoulli_(1.5), on((3, 4), lambda p: L.clt_bernoulli_(p, gen, 1.5)))

    def with_tensor(t, fn):
        def run():
            p = upload(t)
            o = P()
            st = fn(p, C.byref(o))
            L.clt_tensor_free(p)
            L.clt_tensor_free(o)
            return st
        return run

    for name, t, n, repl in [("negative", torch.tensor([0.5, -1.0]), 1, 1),
                             ("inf", torch.tensor([0.5, math.inf]), 1, 1),
                             ("nan", torch.tensor([0.5, math.nan]), 1, 1),
                             ("negative without replacement", torch.tensor([0.5, -1.0]), 1, 0),
                             ("nan without replacement", torch.tensor([0.5, math.nan]), 1, 0),
                             ("zero sum", torch.tensor([0.0, 0.0]), 1, 1),
                             ("too many", torch.tensor([0.0, 1.0]), 3, 0),
                             ("no samples", torch.tensor([0.0, 1.0]), 0, 1),
                             ("3-D", torch.ones(2, 2, 2), 1, 1),
                             ("empty rows", torch.ones(2, 0), 1, 1)]:
        refused("multinomial %s" % name, lambda: torch.multinomial(t, n, bool(repl)),
                with_tensor(t, lambda p, o: L.clt_multinomial(gen, p, n, repl, o)))
    refused("poisson negative", lambda: torch.poisson(torch.tensor([-1.0, 2.0])),
            with_tensor(torch.tensor([-1.0, 2.0]), lambda p, o: L.clt_poisson(gen, p, o)))
    L.clt_generator_free(gen)


def _pair_c(fn, want_second, *args):
    """A call with two outs (values and indices, min and max, var and mean)
    handing out the first or (want_second) the second in o."""
    def run(p, o):
        other = P(0xdead)
        outs = (C.byref(other), o) if want_second else (o, C.byref(other))
        st = fn(p, *args, *outs)
        if (st == 0) != (other.value is not None):
            raise AssertionError("the other output %s after status %d" % (other.value, st))
        L.clt_tensor_free(other)
        return st
    return run


def _ints(v):
    return (C.c_int * max(1, len(v)))(*v)


QINTERP = ["linear", "lower", "higher", "midpoint", "nearest"]


def reduce_stats():
    """amax/amin over dim lists, aminmax, nansum, nanmean, count_nonzero,
    var_mean, std_mean, median, nanmedian, kthvalue, mode, quantile and
    nanquantile: dtypes, dims, keepdim, NaN, ties (values; indices where
    torch's choice is unique or its rule known), views, refusals."""
    for n in ("clt_amax", "clt_amin", "clt_count_nonzero"):
        proto(n, [P, P, C.c_int] + ([C.c_int] if n != "clt_count_nonzero" else []) + [PP])
    proto("clt_aminmax", [P, P, P])
    proto("clt_aminmax_dim", [P, C.c_int, C.c_int, P, P])
    for n in ("nansum", "nanmean", "median", "nanmedian"):
        proto("clt_" + n, [P, PP])
    for n in ("nansum", "nanmean"):
        proto("clt_%s_dim" % n, [P, C.c_int, C.c_int, PP])
    for n in ("var_mean", "std_mean"):
        proto("clt_" + n, [P, C.c_double, P, P])
        proto("clt_%s_dim" % n, [P, C.c_int, C.c_double, C.c_int, P, P])
    for n in ("median_dim", "nanmedian_dim", "mode"):
        proto("clt_" + n, [P, C.c_int, C.c_int, P, P])
    proto("clt_kthvalue", [P, C.c_int64, C.c_int, C.c_int, P, P])
    for n in ("quantile", "nanquantile"):
        proto("clt_" + n, [P, P, C.c_double, P, C.c_int, C.c_int, PP])
    f, d64 = torch.float32, torch.float64
    shapes = [(3, 5), (7,), (), (2, 3, 4), (0,), (0, 3), (3, 0), (33, 65)]
    for dt in DTYPES:
        for sh in shapes if dt in FLOATS else [(3, 5), (0,), (), (2, 3, 4)]:
            a = data(sh, dt, lo=-2, hi=2, special=True)
            # torch's mode sorts with NaN unordered (its answer then depends on
            # where the NaNs sit) and var_mean's one-pass mean turns an inf
            # into NaN depending on its position: neither is compared there
            # (and its unstable sort may put -0.0 after 0.0 in a long slice)
            no_nan = torch.where(torch.isnan(a), torch.ones_like(a), a) + 0 if dt in FLOATS else a
            no_inf = torch.where(torch.isinf(a), torch.zeros_like(a), a) if dt in FLOATS else a
            nd = len(sh)
            lists = [(), (0,), (-1,)] + ([(0, -1), (-1, 0, 1)[:nd]] if nd >= 2 else [])
            for dims in lists if nd else [(), (0,), (-1,)]:
                for k in (0, 1):
                    for n in ("amax", "amin"):
                        check("%s %s %s dims=%s k=%d" % (n, dn(dt), list(sh), dims, k),
                              lambda t, n=n, dims=dims, k=k: getattr(torch, n)(t, dims, bool(k)),
                              lambda p, o, n=n, dims=dims, k=k: getattr(L, "clt_" + n)(
                                  p, _ints(dims), len(dims), k, o), [a], tol="exact")
                check("count_nonzero %s %s dims=%s" % (dn(dt), list(sh), dims),
                      lambda t, dims=dims: torch.count_nonzero(t, dims),
                      lambda p, o, dims=dims: L.clt_count_nonzero(p, _ints(dims), len(dims), o),
                      [a], tol="exact")
            for w in (0, 1):
                check("aminmax %s %s %d" % (dn(dt), list(sh), w),
                      lambda t, w=w: torch.aminmax(t)[w], _pair_c(L.clt_aminmax, w), [a],
                      tol="exact")
            check("nansum %s %s" % (dn(dt), list(sh)), torch.nansum, L.clt_nansum, [a],
                  tol="red")
            check("nanmean %s %s" % (dn(dt), list(sh)), torch.nanmean, L.clt_nanmean, [a],
                  tol="red")
            # an empty integer tensor's median is torch's NaN cast to the dtype
            if dt != torch.bool and (dt in FLOATS or a.numel()):
                # which of the equal -0.0 and 0.0 is picked: a tie
                check("median %s %s" % (dn(dt), list(sh)), torch.median, L.clt_median, [a],
                      tol="exact", signed_zero=False)
                check("nanmedian %s %s" % (dn(dt), list(sh)), torch.nanmedian, L.clt_nanmedian,
                      [a], tol="exact", signed_zero=False)
            for c in (0, 1):
                for w in (0, 1):
                    for n in ("var_mean", "std_mean"):
                        check("%s %s %s c=%d %d" % (n, dn(dt), list(sh), c, w),
                              lambda t, n=n, c=c, w=w: getattr(torch, n)(t, unbiased=bool(c))[w],
                              _pair_c(getattr(L, "clt_" + n), w, c), [no_inf], tol="red")
            for d in range(-max(nd, 1) - 1, max(nd, 1) + 1):
                for k in (0, 1):
                    tag = "%s %s d=%d k=%d" % (dn(dt), list(sh), d, k)
                    for w in (0, 1) if nd or not k else ():  # torch 1.13: [1], resizing
                        check("aminmax_dim %s %d" % (tag, w),
                              lambda t, d=d, k=k, w=w: torch.aminmax(t, dim=d, keepdim=bool(k))[w],
                              _pair_c(L.clt_aminmax_dim, w, d, k), [a], tol="exact")
                    for n in ("nansum", "nanmean"):
                        check("%s_dim %s" % (n, tag),
                              lambda t, n=n, d=d, k=k: getattr(torch, n)(t, d, keepdim=bool(k)),
                              lambda p, o, n=n, d=d, k=k: getattr(L, "clt_%s_dim" % n)(p, d, k, o),
                              [a], tol="red")
                    for n in ("var_mean", "std_mean"):
                        for w in (0, 1):
                            check("%s_dim %s %d" % (n, tag, w),
                                  lambda t, n=n, d=d, k=k, w=w: getattr(torch, n)(
                                      t, d, correction=1, keepdim=bool(k))[w],
                                  _pair_c(getattr(L, "clt_%s_dim" % n), w, d, 1.0, k),
                                  [no_inf], tol="red")
                    # values on tied data; mode's indices too where torch's rule is
                    # known (its std::sort is an insertion sort up to 16 elements)
                    size = sh[d] if nd and -nd <= d < nd else 1
                    for n in ("median", "nanmedian", "mode"):
                        for w in ((0, 1) if n == "mode" and size <= 16 else (0,)):
                            check("%s_dim %s %d" % (n, tag, w),
                                  lambda t, n=n, d=d, k=k, w=w: getattr(torch, n)(
                                      t, d, keepdim=bool(k))[w],
                                  _pair_c(getattr(L, "clt_" + (n if n == "mode" else n + "_dim")),
                                          w, d, k), [no_nan if n == "mode" else a], tol="exact",
                                  signed_zero=False)
                    if dt != torch.bool:
                        for kk in sorted({1, (size + 1) // 2, size, size + 1, 0}):
                            check("kthvalue %s kk=%d" % (tag, kk),
                                  lambda t, d=d, k=k, kk=kk: torch.kthvalue(t, kk, d, bool(k))[0],
                                  _pair_c(L.clt_kthvalue, 0, kk, d, k), [a], tol="exact",
                                  signed_zero=False)
    # indices where torch's choice is unique: distinct values, and NaNs
    distinct = torch.randperm(60, generator=G).to(f).reshape(3, 4, 5) - 30
    nans = distinct.clone()  # at most one NaN a slice: torch's pick among NaNs varies
    nans[0, 1, 2] = nans[1, 2, 3] = nans[2, 0, 0] = float("nan")
    for name, a in (("distinct", distinct), ("nan", nans)):
        for d in (0, 1, 2, -1):
            for n in ("median", "nanmedian"):
                check("%s_dim indices %s d=%d" % (n, name, d),
                      lambda t, n=n, d=d: getattr(torch, n)(t, d)[1],
                      _pair_c(getattr(L, "clt_%s_dim" % n), 1, d, 0), [a], tol="exact")
            for kk in range(1, a.shape[d] + 1):
                check("kthvalue indices %s d=%d kk=%d" % (name, d, kk),
                      lambda t, d=d, kk=kk: torch.kthvalue(t, kk, d)[1],
                      _pair_c(L.clt_kthvalue, 1, kk, d, 0), [a], tol="exact")
    # views
    views = [In(data((5, 6), f, lo=-2, hi=2).round(), ("T",)),
             In(data((4, 11), f, special=True), ("S", 1, 2, 10, 3)),
             In(data((6, 7, 8), d64, lo=-3, hi=3).round(), ("V", [("perm", (2, 0, 1))])),
             In(data((1, 5), f), ("E", (3, 5)))]
    for i, v in enumerate(views):
        for d in (0, -1):
            # torch 1.13's median and mode of an expanded tensor are garbage
            # (they sort its stride-0 storage in place)
            for n in ("median", "nanmedian", "mode") if i < 3 else ():
                check("%s_dim view %d d=%d" % (n, i, d),
                      lambda t, n=n, d=d: getattr(torch, n)(t, d)[0],
                      _pair_c(getattr(L, "clt_" + (n if n == "mode" else n + "_dim")), 0, d, 0),
                      [v], tol="exact")
            check("amax view %d d=%d" % (i, d), lambda t, d=d: torch.amax(t, (d,)),
                  lambda p, o, d=d: L.clt_amax(p, _ints((d,)), 1, 0, o), [v], tol="exact")
            check("quantile view %d d=%d" % (i, d), lambda t, d=d: torch.quantile(t, 0.3, d),
                  lambda p, o, d=d: L.clt_quantile(p, None, 0.3, C.byref(C.c_int(d)), 0, 0, o),
                  [v], tol="tr")
    # quantile and nanquantile: q numbers and tensors, dims, interpolations
    qa = [data((4, 7), dt, special=True) for dt in FLOATS]
    qa += [data((3, 6), d64, lo=-2, hi=2).round(), torch.tensor([[float("nan")] * 3, [1., 2, 3]])]
    for a in qa:
        for nan in (0, 1):
            tq = getattr(torch, "nanquantile" if nan else "quantile")
            cq = getattr(L, "clt_nanquantile" if nan else "clt_quantile")
            for ii, interp in enumerate(QINTERP):
                for dim in (None, 0, 1, -1):
                    for k in (0, 1):
                        for q in (0.0, 0.3, 0.5, 0.75, 1.0, 1.5):
                            check("%s %s %s q=%r d=%s k=%d %s" % (
                                      tq.__name__, dn(a.dtype), list(a.shape), q, dim, k, interp),
                                  lambda t, q=q, dim=dim, k=k, interp=interp, tq=tq: tq(
                                      t, q, dim, bool(k), interpolation=interp),
                                  lambda p, o, q=q, dim=dim, k=k, ii=ii, cq=cq: cq(
                                      p, None, q, None if dim is None else C.byref(C.c_int(dim)),
                                      k, ii, o), [a], tol="tr", signed_zero=False)
                        qs = torch.tensor([0.1, 0.5, 0.9, 0.0], dtype=a.dtype)
                        check("%s q tensor %s d=%s k=%d %s" % (tq.__name__, dn(a.dtype), dim, k,
                                                                interp),
                              lambda t, q, dim=dim, k=k, interp=interp, tq=tq: tq(
                                  t, q, dim, bool(k), interpolation=interp),
                              lambda p, q, o, dim=dim, k=k, ii=ii, cq=cq: cq(
                                  p, q, 0.0, None if dim is None else C.byref(C.c_int(dim)), k,
                                  ii, o), [a, qs], tol="tr", signed_zero=False)
    # refusals
    check("quantile int", lambda t: torch.quantile(t, 0.5),
          lambda p, o: L.clt_quantile(p, None, 0.5, None, 0, 0, o), [data((3,), torch.int32)])
    check("quantile empty", lambda t: torch.quantile(t, 0.5),
          lambda p, o: L.clt_quantile(p, None, 0.5, None, 0, 0, o), [torch.zeros(2, 0)])
    check("quantile q 2-d", lambda t, q: torch.quantile(t, q),
          lambda p, q, o: L.clt_quantile(p, q, 0, None, 0, 0, o),
          [data((3,), f), torch.full((1, 1), 0.5)])
    check("quantile q out of range", lambda t, q: torch.quantile(t, q),
          lambda p, q, o: L.clt_quantile(p, q, 0, None, 0, 0, o),
          [data((3,), f), torch.tensor([0.5, -0.1])])
    check("quantile q dtype", lambda t, q: torch.quantile(t, q),
          lambda p, q, o: L.clt_quantile(p, q, 0, None, 0, 0, o),
          [data((3,), f), torch.tensor([0.5], dtype=d64)])
    check("amax repeated dim", lambda t: torch.amax(t, (0, -2)),
          lambda p, o: L.clt_amax(p, _ints((0, -2)), 2, 0, o), [data((2, 3), f)])
    check("nanmean int", torch.nanmean, L.clt_nanmean, [data((3,), torch.int64)])
    check("median bool", torch.median, L.clt_median, [data((3,), torch.bool)])
    check("kthvalue bool", lambda t: torch.kthvalue(t, 1, 0)[0], _pair_c(L.clt_kthvalue, 0, 1, 0, 0),
          [data((3,), torch.bool)])


# ---- the rest of torch.nn's losses, pairwise_distance and cdist --------------

proto("clt_margin_ranking_loss", [P, P, P, C.c_double, C.c_int, PP])
proto("clt_hinge_embedding_loss", [P, P, C.c_double, C.c_int, PP])
proto("clt_soft_margin_loss", [P, P, C.c_int, PP])
proto("clt_multilabel_soft_margin_loss", [P, P, P, C.c_int, PP])
proto("clt_multilabel_margin_loss", [P, P, C.c_int, PP])
proto("clt_multi_margin_loss", [P, P, C.c_int, C.c_double, P, C.c_int, PP])
proto("clt_cosine_embedding_loss", [P, P, P, C.c_double, C.c_int, PP])
proto("clt_pairwise_distance", [P, P, C.c_double, C.c_double, C.c_int, PP])
proto("clt_triplet_margin_loss", [P, P, P, C.c_double, C.c_double, C.c_double, C.c_int, C.c_int,
                                  PP])
proto("clt_poisson_nll_loss", [P, P, C.c_int, C.c_int, C.c_double, C.c_int, PP])
proto("clt_gaussian_nll_loss", [P, P, P, C.c_int, C.c_double, C.c_int, PP])
proto("clt_cdist", [P, P, C.c_double, PP])


def signs(shape, zeros=False):
    """-1 and 1 (and 0 when zeros), as float32."""
    t = torch.randint(0, 3 if zeros else 2, shape, generator=G)
    return (t * 2 - 1).clamp(max=1).float() if not zeros else (t - 1).float()


def labels(n, c):
    return torch.randint(0, c, (n,), generator=G)


def ml_targets(n, c):
    """multilabel_margin_loss targets: a few labels per row, then -1s."""
    t = torch.full((n, c), -1, dtype=torch.int64)
    for r in range(n):
        k = r % (c + 1)
        t[r, :k] = torch.randperm(c, generator=G)[:k]
    return t


def more_losses():
    for dt in FLOATS:
        for rn in ("mean", "sum", "none"):
            tol = "tr" if rn == "none" else "red"
            r = RED[rn]
            x1, x2 = data((6,), dt), data((6,), dt)
            y = signs((6,)).to(dt)
            for m in (0.0, 0.5):
                check("margin_ranking %s %s margin %r" % (dn(dt), rn, m),
                      lambda a, b, t, m=m, rn=rn: F.margin_ranking_loss(a, b, t, m, reduction=rn),
                      lambda a, b, t, o, m=m, r=r: L.clt_margin_ranking_loss(a, b, t, m, r, o),
                      [x1, x2, y], tol=tol)
            hx, hy = data((3, 4), dt), signs((3, 4), zeros=True).to(dt)
            for m in (1.0, 2.5):
                check("hinge_embedding %s %s margin %r" % (dn(dt), rn, m),
                      lambda a, t, m=m, rn=rn: F.hinge_embedding_loss(a, t, m, reduction=rn),
                      lambda a, t, o, m=m, r=r: L.clt_hinge_embedding_loss(a, t, m, r, o),
                      [hx, hy], tol=tol)
            check("soft_margin %s %s" % (dn(dt), rn),
                  lambda a, t, rn=rn: F.soft_margin_loss(a, t, reduction=rn),
                  lambda a, t, o, r=r: L.clt_soft_margin_loss(a, t, r, o),
                  [data((3, 4), dt), signs((3, 4)).to(dt)], tol=tol)
            mx, my = data((4, 5), dt), torch.randint(0, 2, (4, 5), generator=G).to(dt)
            for w in (None, data((5,), dt, lo=0, hi=2)):
                check("multilabel_soft_margin %s %s weight %s" % (dn(dt), rn, w is not None),
                      lambda a, t, w=w, rn=rn: F.multilabel_soft_margin_loss(a, t, weight=w,
                                                                              reduction=rn),
                      lambda a, t, o, w=w, r=r: _with_w(
                          lambda wp: L.clt_multilabel_soft_margin_loss(a, t, wp, r, o), w),
                      [mx, my], tol=tol)
            check("multilabel_margin %s %s" % (dn(dt), rn),
                  lambda a, t, rn=rn: F.multilabel_margin_loss(a, t, reduction=rn),
                  lambda a, t, o, r=r: L.clt_multilabel_margin_loss(a, t, r, o),
                  [data((6, 5), dt), ml_targets(6, 5)], tol=tol)
            check("multilabel_margin vector %s %s" % (dn(dt), rn),
                  lambda a, t, rn=rn: F.multilabel_margin_loss(a, t, reduction=rn),
                  lambda a, t, o, r=r: L.clt_multilabel_margin_loss(a, t, r, o),
                  [data((4,), dt), torch.tensor([3, 0, -1, 1])], tol=tol)
            for p in (1, 2):
                for w in (None, data((5,), dt, lo=0, hi=2)):
                    for m in (1.0, 0.3):
                        check("multi_margin %s %s p %d margin %r weight %s" % (
                                  dn(dt), rn, p, m, w is not None),
                              lambda a, t, w=w, p=p, m=m, rn=rn: F.multi_margin_loss(
                                  a, t, p=p, margin=m, weight=w, reduction=rn),
                              lambda a, t, o, w=w, p=p, m=m, r=r: _with_w(
                                  lambda wp: L.clt_multi_margin_loss(a, t, p, m, wp, r, o), w),
                              [data((4, 5), dt), labels(4, 5)], tol=tol)
            check("multi_margin unbatched %s %s" % (dn(dt), rn),
                  lambda a, t, rn=rn: F.multi_margin_loss(a, t, reduction=rn),
                  lambda a, t, o, r=r: L.clt_multi_margin_loss(a, t, 1, 1.0, None, r, o),
                  [data((5,), dt), torch.tensor(2)], tol=tol)
            for m in (0.0, 0.4):
                check("cosine_embedding %s %s margin %r" % (dn(dt), rn, m),
                      lambda a, b, t, m=m, rn=rn: F.cosine_embedding_loss(a, b, t, m,
                                                                          reduction=rn),
                      lambda a, b, t, o, m=m, r=r: L.clt_cosine_embedding_loss(a, b, t, m, r, o),
                      [data((4, 3), dt), data((4, 3), dt), signs((4,)).to(dt)], tol=tol)
            check("cosine_embedding unbatched %s %s" % (dn(dt), rn),
                  lambda a, b, t, rn=rn: F.cosine_embedding_loss(a, b, t, reduction=rn),
                  lambda a, b, t, o, r=r: L.clt_cosine_embedding_loss(a, b, t, 0.0, r, o),
                  [data((3,), dt), data((3,), dt), torch.tensor(-1.0, dtype=dt)], tol=tol)
            for p, sw in ((2.0, 0), (1.0, 1), (3.0, 0), (2.0, 1)):
                check("triplet_margin %s %s p %r swap %d" % (dn(dt), rn, p, sw),
                      lambda a, b, c, p=p, sw=sw, rn=rn: F.triplet_margin_loss(
                          a, b, c, margin=1.0, p=p, swap=bool(sw), reduction=rn),
                      lambda a, b, c, o, p=p, sw=sw, r=r: L.clt_triplet_margin_loss(
                          a, b, c, 1.0, p, 1e-6, sw, r, o),
                      [data((4, 3), dt), data((4, 3), dt), data((4, 3), dt)], tol=tol)
            for li, full in ((1, 0), (0, 0), (1, 1), (0, 1)):
                px = data((3, 4), dt, lo=-2, hi=2) if li else data((3, 4), dt, lo=0, hi=3)
                py = data((3, 4), dt, lo=0, hi=4).round()
                check("poisson_nll %s %s log_input %d full %d" % (dn(dt), rn, li, full),
                      lambda a, t, li=li, full=full, rn=rn: F.poisson_nll_loss(
                          a, t, log_input=bool(li), full=bool(full), reduction=rn),
                      lambda a, t, o, li=li, full=full, r=r: L.clt_poisson_nll_loss(
                          a, t, li, full, 1e-8, r, o),
                      [px, py], tol=tol)
            for vs in ((3, 4), (3,), (3, 1)):
                for full in (0, 1):
                    v = data(vs, dt, lo=0, hi=2)
                    v.view(-1)[0] = 1e-9  # below eps: clamped
                    check("gaussian_nll %s %s var %s full %d" % (dn(dt), rn, list(vs), full),
                          lambda a, t, v, full=full, rn=rn: F.gaussian_nll_loss(
                              a, t, v, full=bool(full), reduction=rn),
                          lambda a, t, v, o, full=full, r=r: L.clt_gaussian_nll_loss(
                              a, t, v, full, 1e-6, r, o),
                          [data((3, 4), dt), data((3, 4), dt), v], tol=tol)
        for p in (2.0, 1.0, 0.0, 3.0, float("inf")):
            for kd in (0, 1):
                check("pairwise_distance %s p %r keepdim %d" % (dn(dt), p, kd),
                      lambda a, b, p=p, kd=kd: F.pairwise_distance(a, b, p, 1e-6, bool(kd)),
                      lambda a, b, o, p=p, kd=kd: L.clt_pairwise_distance(a, b, p, 1e-6, kd, o),
                      [data((4, 3), dt), data((3,), dt)], tol="red")
        for p in (2.0, 1.0, 0.0, 0.5, 3.0, float("inf")):
            for s1, s2 in (((4, 3), (5, 3)), ((2, 4, 3), (1, 5, 3)), ((30, 3), (4, 3))):
                check("cdist %s p %r %s %s" % (dn(dt), p, list(s1), list(s2)),
                      lambda a, b, p=p: torch.cdist(a, b, p),
                      lambda a, b, o, p=p: L.clt_cdist(a, b, p, o),
                      [data(s1, dt), data(s2, dt)], tol="mm" if s1[0] > 25 else "red")
    f = torch.float32
    # the kinks: clamp_min's and the margins' exact zeros
    check("margin_ranking at the kink",
          lambda a, b, t: F.margin_ranking_loss(a, b, t, 1.0, reduction="none"),
          lambda a, b, t, o: L.clt_margin_ranking_loss(a, b, t, 1.0, 2, o),
          [torch.tensor([2.0, 0.0]), torch.tensor([1.0, 1.0]), torch.tensor([1.0, -1.0])],
          tol="exact")
    # refusals, in torch's terms
    check("margin_ranking dims", lambda a, b, t: F.margin_ranking_loss(a, b, t),
          lambda a, b, t, o: L.clt_margin_ranking_loss(a, b, t, 0.0, 0, o),
          [data((2, 3), f), data((3,), f), data((3,), f)])
    check("multilabel_margin target size", lambda a, t: F.multilabel_margin_loss(a, t),
          lambda a, t, o: L.clt_multilabel_margin_loss(a, t, 0, o),
          [data((2, 3), f), torch.tensor([[0, 1], [1, 0]])])
    check("multi_margin p 3", lambda a, t: F.multi_margin_loss(a, t, p=3),
          lambda a, t, o: L.clt_multi_margin_loss(a, t, 3, 1.0, None, 0, o),
          [data((2, 3), f), labels(2, 3)])
    check("multi_margin target out of range", lambda a, t: F.multi_margin_loss(a, t),
          lambda a, t, o: L.clt_multi_margin_loss(a, t, 1, 1.0, None, 0, o),
          [data((2, 3), f), torch.tensor([0, 3])])
    check("multi_margin int32 target", lambda a, t: F.multi_margin_loss(a, t),
          lambda a, t, o: L.clt_multi_margin_loss(a, t, 1, 1.0, None, 0, o),
          [data((2, 3), f), torch.tensor([0, 1], dtype=torch.int32)])
    check("cosine_embedding 2-d target", lambda a, b, t: F.cosine_embedding_loss(a, b, t),
          lambda a, b, t, o: L.clt_cosine_embedding_loss(a, b, t, 0.0, 0, o),
          [data((2, 3), f), data((2, 3), f), signs((2, 1))])
    check("triplet dims", lambda a, b, c: F.triplet_margin_loss(a, b, c),
          lambda a, b, c, o: L.clt_triplet_margin_loss(a, b, c, 1.0, 2.0, 1e-6, 0, 0, o),
          [data((2, 3), f), data((3,), f), data((2, 3), f)])
    check("gaussian_nll var size", lambda a, t, v: F.gaussian_nll_loss(a, t, v),
          lambda a, t, v, o: L.clt_gaussian_nll_loss(a, t, v, 0, 1e-6, 0, o),
          [data((3, 4), f), data((3, 4), f), data((3, 2), f)])
    check("gaussian_nll negative var", lambda a, t, v: F.gaussian_nll_loss(a, t, v),
          lambda a, t, v, o: L.clt_gaussian_nll_loss(a, t, v, 0, 1e-6, 0, o),
          [data((3, 4), f), data((3, 4), f), torch.tensor([1.0, -0.5, 2.0])])
    check("cdist 1-d", lambda a, b: torch.cdist(a, b), lambda a, b, o: L.clt_cdist(a, b, 2.0, o),
          [data((3,), f), data((2, 3), f)])
    check("cdist columns", lambda a, b: torch.cdist(a, b), lambda a, b, o: L.clt_cdist(a, b, 2.0, o),
          [data((2, 3), f), data((2, 4), f)])
    check("cdist negative p", lambda a, b: torch.cdist(a, b, -1.0),
          lambda a, b, o: L.clt_cdist(a, b, -1.0, o), [data((2, 3), f), data((2, 3), f)])
    check("cdist integer", lambda a, b: torch.cdist(a, b),
          lambda a, b, o: L.clt_cdist(a, b, 2.0, o),
          [data((2, 3), torch.int64), data((2, 3), torch.int64)])

    ctc_cases()


def ctc_cases():
    """ctc_loss: padded, concatenated and unbatched targets, empty ones,
    impossible alignments, zero_infinity, blank, torch's refusals."""
    for dt in FLOATS:
        lp = torch.randn(7, 3, 6, generator=G, dtype=dt).log_softmax(-1)
        sets = (([[1, 2, 2, 0], [3, 0, 0, 0], [5, 5, 1, 1]], [7, 5, 3], [3, 1, 4]),
                ([1, 2, 2, 3, 4, 1], [7, 4, 5], [3, 1, 2]),
                ([[1, 2], [3, 3], [0, 0]], [7, 7, 2], [2, 2, 0]))
        for tg, il, tl in sets:
            for rn in ("mean", "sum", "none"):
                for zi in (0, 1):
                    for blank in (0, 5):
                        if blank == 5:
                            tg = [[v if v != 5 else 4 for v in r] for r in tg] \
                                if isinstance(tg[0], list) else [v if v != 5 else 4 for v in tg]
                        check("ctc_loss %s %s zi %d blank %d %s" % (
                                  dn(dt), rn, zi, blank, list(torch.tensor(tg).shape)),
                              lambda x, t, a, b, rn=rn, zi=zi, bl=blank:
                                  F.ctc_loss(x, t, a, b, bl, rn, bool(zi)),
                              lambda x, t, a, b, o, rn=rn, zi=zi, bl=blank: L.clt_ctc_loss(
                                  x, t, a, b, bl, RED[rn], zi, o),
                              [lp, torch.tensor(tg), torch.tensor(il), torch.tensor(tl)],
                              tol="red")
        for rn in ("mean", "none"):
            check("ctc_loss unbatched %s %s" % (dn(dt), rn),
                  lambda x, t, a, b, rn=rn: F.ctc_loss(x, t, a, b, 0, rn),
                  lambda x, t, a, b, o, rn=rn: L.clt_ctc_loss(x, t, a, b, 0, RED[rn], 0, o),
                  [lp[:, 0], torch.tensor([1, 3, 3]), torch.tensor(6), torch.tensor(3)],
                  tol="red")
    ctc_forms()
    f = torch.float32
    lp = torch.randn(5, 2, 4, generator=G).log_softmax(-1)
    ok_t = torch.tensor([[1, 2], [3, 1]])
    for nm, t, a, b, bl in (("input length past T", ok_t, [6, 5], [2, 2], 0),
                            ("blank past C", ok_t, [5, 5], [2, 2], 4),
                            ("lengths size", ok_t, [5], [2], 0),
                            ("target length past width", ok_t, [5, 5], [3, 2], 0)):
        check("ctc_loss %s" % nm,
              lambda x, tt, aa, bb, bl=bl: F.ctc_loss(x, tt, aa, bb, bl),
              lambda x, tt, aa, bb, o, bl=bl: L.clt_ctc_loss(x, tt, aa, bb, bl, 0, 0, o),
              [lp, t, torch.tensor(a), torch.tensor(b)])


def ctc_forms():
    """ctc_loss: every reduction of the unbatched forms torch takes ([S] or
    [1, S] targets, 0-d or [1] lengths), targets and lengths of other dtypes
    (torch converts them to int64: integer lengths, mixed; integer, bool
    and float targets) and torch's refusals there (lengths that are not
    integers, padded rows other than N, concatenated targets other than the
    lengths' sum)."""
    lp = torch.randn(6, 3, 5, generator=G, dtype=torch.float64).log_softmax(-1)
    T = torch.tensor
    for rn in ("mean", "sum", "none"):
        for tg, il, tl in (([1, 3, 3], T(6), T(3)), ([[1, 3, 3]], T([6]), T([3])),
                           ([[1, 3, 3, 0]], T(5), T([2])), ([2, 2], T([[4]]), T(2)),
                           ([], T(4), T(0))):
            for zi in (0, 1):
                check("ctc_loss unbatched %s %s il %s tl %s zi %d" % (
                          rn, list(T(tg).shape), list(il.shape), list(tl.shape), zi),
                      lambda x, t, a, b, rn=rn, zi=zi: F.ctc_loss(x, t, a, b, 0, rn, bool(zi)),
                      lambda x, t, a, b, o, rn=rn, zi=zi: L.clt_ctc_loss(x, t, a, b, 0, RED[rn],
                                                                      zi, o),
                      [lp[:, 1], T(tg, dtype=torch.int64), il, tl], tol="red")
    tg = T([[1, 2, 2, 0], [3, 0, 0, 0], [4, 4, 1, 1]])
    il, tl = T([6, 5, 3]), T([3, 1, 4])
    ints = (torch.int32, torch.int16, torch.int8, torch.uint8, torch.int64)
    for i, (a, b, c) in enumerate((ints[i], ints[(i + 1) % 5], ints[(i + 3) % 5])
                                  for i in range(5)):
        for rn in ("sum", "none"):
            check("ctc_loss targets %s input_lengths %s target_lengths %s %s" % (a, b, c, rn),
                  lambda x, t, p, q, rn=rn: F.ctc_loss(x, t, p, q, 0, rn, True),
                  lambda x, t, p, q, o, rn=rn: L.clt_ctc_loss(x, t, p, q, 0, RED[rn], 1, o),
                  [lp, tg.to(a), il.to(b), tl.to(c)], tol="red")
    ft = tg.double() + T([[0.5, 0.25, 0.9, -0.75]] * 3, dtype=torch.float64)
    for t, what in ((ft, "float64"), (ft.float(), "float32"), (tg.bool(), "bool"),
                    (T([1, 2, 2, 3, 4, 4, 1, 1], dtype=torch.int32), "int32 concatenated")):
        check("ctc_loss %s targets" % what, lambda x, t, p, q: F.ctc_loss(x, t, p, q, 0, "none"),
              lambda x, t, p, q, o: L.clt_ctc_loss(x, t, p, q, 0, 2, 0, o),
              [lp, t, il, tl if t.dtype != torch.bool else T([3, 1, 2])], tol="red")
    for what, t, a, b in (("float input_lengths", tg, il.double(), tl),
                          ("bool target_lengths", tg, il, T([True, True, False])),
                          ("float target_lengths", tg, il, tl.float()),
                          ("padded rows past N", T([[1, 2, 2, 0]] * 4), il, tl),
                          ("padded rows short of N", tg[:2], il, tl),
                          ("concatenated past the sum", T([1, 2, 2, 3, 4, 4, 1, 1, 2]), il, tl),
                          ("unbatched 2 rows", T([[1, 2], [1, 2]]), il[:1], tl[:1])):
        x = lp[:, 0] if what.startswith("unbatched") else lp
        check("ctc_loss refuses %s" % what, lambda x, t, p, q: F.ctc_loss(x, t, p, q),
              lambda x, t, p, q, o: L.clt_ctc_loss(x, t, p, q, 0, 0, 0, o), [x, t, a, b])


def _with_w(call, w):
    """Calls call with w uploaded (or None)."""
    if w is None:
        return call(None)
    p = upload(w)
    try:
        return call(p)
    finally:
        L.clt_tensor_free(p)


def products():
    """mm, bmm, mv, dot, vdot, the add* family, outer, kron, cross and
    tensordot (linalg.h) against torch: shapes, values, broadcast inputs,
    alpha and beta, transposed operands and the refusals."""
    for n in ("mm", "bmm", "mv", "dot", "vdot", "outer", "kron"):
        proto("clt_" + n, [P, P, PP])
    for n in ("addmm", "addmv", "baddbmm", "addbmm"):
        proto("clt_" + n, [P, P, P, C.c_double, C.c_double, PP])
    for n in ("cross", "linalg_cross"):
        proto("clt_" + n, [P, P, C.c_int, PP])
    proto("clt_tensordot", [P, P, C.c_int, C.POINTER(C.c_int), C.POINTER(C.c_int), PP])
    f = torch.float32
    two = {"mm": (torch.mm, [((3, 4), (4, 5)), ((1, 1), (1, 7)), ((0, 3), (3, 2)),
                             ((3, 0), (0, 2)), ((3,), (3, 2)), ((3, 4), (3, 4)),
                             ((2, 3, 4), (4, 5)), ((40, 70), (70, 33))]),
           "bmm": (torch.bmm, [((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (1, 4, 1)), ((0, 3, 4), (0, 4, 2)),
                               ((2, 3, 4), (1, 4, 5)), ((2, 3, 4), (2, 3, 4)), ((3, 4), (4, 5))]),
           "mv": (torch.mv, [((3, 4), (4,)), ((0, 4), (4,)), ((3, 0), (0,)), ((3, 4), (3,)),
                             ((4,), (4,)), ((3, 4), (4, 1))]),
           "dot": (torch.dot, [((4,), (4,)), ((0,), (0,)), ((4,), (3,)), ((2, 2), (4,)),
                               ((1000,), (1000,))]),
           "vdot": (torch.vdot, [((4,), (4,)), ((0,), (0,)), ((4,), (3,))]),
           "outer": (torch.outer, [((3,), (4,)), ((0,), (4,)), ((3, 1), (4,)), ((1,), (1,))]),
           "kron": (torch.kron, [((2, 3), (3, 4)), ((3,), (2, 2)), ((2, 1, 2), (3, 2)), ((), (3,)),
                                 ((0, 2), (2, 2)), ((2, 2), ())])}
    for name, (tfn, cases) in two.items():
        for dt in FLOATS:
            for sa, sb in cases:
                check("%s %s %s,%s" % (name, dn(dt), list(sa), list(sb)), tfn,
                      getattr(L, "clt_" + name), [data(sa, dt), data(sb, dt)], tol="mm",
                      signed_zero=False)
    check("mm A^T B^T", torch.mm, L.clt_mm,
          [In(data((4, 3), f), ("T",)), In(data((5, 4), f), ("T",))], tol="mm")
    check("bmm transposed", torch.bmm, L.clt_bmm,
          [In(data((2, 4, 3), f), ("T",)), data((2, 4, 5), f)], tol="mm")
    check("mv sliced vector", torch.mv, L.clt_mv,
          [data((3, 4), f), In(data((8,), f), ("S", 0, 0, 8, 2))], tol="mm")
    check("mm dtype mix", torch.mm, L.clt_mm, [data((2, 3), f), data((3, 2), torch.float64)])
    check("dot dtype mix", torch.dot, L.clt_dot, [data((3,), f), data((3,), torch.float64)])
    check("kron int32 x float32", torch.kron, L.clt_kron,
          [data((2, 2), torch.int32), data((2, 3), f)], tol="mm")
    check("outer int64", torch.outer, L.clt_outer,
          [data((3,), torch.int64), data((2,), torch.int64)], tol="exact")
    for n, tfn in (("mm", torch.mm), ("dot", torch.dot)):
        sh = (2, 2) if n == "mm" else (3,)
        check("%s int32 (documented refusal)" % n, tfn, getattr(L, "clt_" + n),
              [data(sh, torch.int32), data(sh, torch.int32)], expect_error="documented")

    adds = {"addmm": (torch.addmm, [((3, 5), (3, 4), (4, 5)), ((5,), (3, 4), (4, 5)),
                                    ((1, 1), (3, 4), (4, 5)), ((), (3, 4), (4, 5)),
                                    ((4,), (3, 4), (4, 5)), ((3, 5), (4,), (4, 5)),
                                    ((3, 5), (3, 4), (3, 5)), ((0, 5), (0, 4), (4, 5))]),
            "addmv": (torch.addmv, [((3,), (3, 4), (4,)), ((1,), (3, 4), (4,)), ((), (3, 4), (4,)),
                                    ((4,), (3, 4), (4,)), ((3,), (3, 4), (3,)),
                                    ((3, 1), (3, 4), (4,))]),
            "baddbmm": (torch.baddbmm, [((2, 3, 5), (2, 3, 4), (2, 4, 5)),
                                        ((3, 5), (2, 3, 4), (2, 4, 5)),
                                        ((2, 1, 5), (2, 3, 4), (2, 4, 5)),
                                        ((2, 3, 4), (2, 3, 4), (2, 4, 5)),
                                        ((2, 3, 5), (2, 3, 4), (1, 4, 5))]),
            "addbmm": (torch.addbmm, [((3, 5), (2, 3, 4), (2, 4, 5)), ((5,), (2, 3, 4), (2, 4, 5)),
                                      ((3, 5), (0, 3, 4), (0, 4, 5)),
                                      ((3, 4), (2, 3, 4), (2, 4, 5)),
                                      ((3, 5), (2, 3, 4), (3, 4, 5))])}
    ab = [(1.0, 1.0), (0.5, -2.0), (0.0, 1.0), (1.0, 0.0), (0.0, 0.0), (2.0, 0.25)]

    def t_add(tfn, i, a, b, beta, alpha):
        r = tfn(i, a, b, beta=beta, alpha=alpha)
        if beta == 0 and tfn is torch.baddbmm:
            # torch 1.13's CPU baddbmm with beta 0 now and then reads its
            # uninitialised result (NaN out of finite operands); the value
            # it documents is alpha * bmm
            r = alpha * torch.bmm(a, b)
        return r
    for name, (tfn, cases) in adds.items():
        for dt in FLOATS:
            for si, sa, sb in cases:
                for beta, alpha in ab:
                    check("%s %s %s,%s,%s beta=%g alpha=%g" % (name, dn(dt), list(si), list(sa),
                                                               list(sb), beta, alpha),
                          lambda i, a, b, tfn=tfn, beta=beta, alpha=alpha:
                          t_add(tfn, i, a, b, beta, alpha),
                          lambda i, a, b, o, n=name, beta=beta, alpha=alpha:
                          getattr(L, "clt_" + n)(i, a, b, beta, alpha, o),
                          [data(si, dt), data(sa, dt), data(sb, dt)], tol="mm", signed_zero=False)
    nan = torch.full((3, 5), float("nan"))
    check("addmm beta=0 ignores NaN", lambda i, a, b: torch.addmm(i, a, b, beta=0),
          lambda i, a, b, o: L.clt_addmm(i, a, b, 0.0, 1.0, o),
          [nan, data((3, 4), f), data((4, 5), f)], tol="mm")
    check("addmm alpha=0 ignores NaN", lambda i, a, b: torch.addmm(i, a, b, alpha=0),
          lambda i, a, b, o: L.clt_addmm(i, a, b, 1.0, 0.0, o),
          [data((3, 5), f), torch.full((3, 4), float("nan")), data((4, 5), f)], tol="mm")
    check("addmm input dtype mix", torch.addmm,
          lambda i, a, b, o: L.clt_addmm(i, a, b, 1.0, 1.0, o),
          [data((3, 5), torch.float64), data((3, 4), f), data((4, 5), f)])

    # torch's CPU cross rounds fma(a1, b2, -a2 b1): float32 differs in the last bits
    for name, tfn in (("cross", torch.cross), ("linalg_cross", torch.linalg.cross)):
        cases = [((4, 3), (4, 3), -1), ((3, 4), (3, 4), 0), ((2, 3, 5), (1, 3, 5), 1),
                 ((3,), (3,), 0), ((4, 3), (4, 3), 0), ((3, 4), (3, 4), -1),
                 ((3, 3), (3, 3), 2), ((3,), (2, 3), -1), ((2, 3), (4, 3), -1), ((0, 3), (0, 3), 1)]
        for dt in FLOATS + [torch.int32, torch.int64]:
            for sa, sb, d in cases:
                check("%s %s %s,%s dim=%d" % (name, dn(dt), list(sa), list(sb), d),
                      lambda a, b, tfn=tfn, d=d: tfn(a, b, dim=d),
                      lambda a, b, o, n=name, d=d: getattr(L, "clt_" + n)(a, b, d, o),
                      [data(sa, dt), data(sb, dt)], tol="tr", signed_zero=False)
        check("%s transposed" % name, lambda a, b, tfn=tfn: tfn(a, b, dim=0),
              lambda a, b, o, n=name: getattr(L, "clt_" + n)(a, b, 0, o),
              [In(data((4, 3), f), ("T",)), data((3, 4), f)], tol="tr", signed_zero=False)
        check("%s dtype mix" % name, lambda a, b, tfn=tfn: tfn(a, b, dim=0),
              lambda a, b, o, n=name: getattr(L, "clt_" + n)(a, b, 0, o),
              [data((3,), f), data((3,), torch.float64)])

    def td(dims):
        def c(a, b, o):
            if isinstance(dims, int):
                return L.clt_tensordot(a, b, dims, None, None, o)
            n = len(dims[0])
            return L.clt_tensordot(a, b, max(n, len(dims[1])), (C.c_int * max(n, 1))(*dims[0]),
                                   (C.c_int * max(len(dims[1]), 1))(*dims[1]), o)
        return c
    tcases = [((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((2, 3, 4), (4, 5), 1),
              ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (4, 5), 0), ((3, 4), (4, 3), ([0, 1], [1, 0])),
              ((3, 4), (3, 4), 1), ((3, 4), (4, 3), 3), ((2, 3, 4), (2, 5), ([0], [0])),
              ((2, 3, 4), (2, 5), ([-3], [-2])), ((3, 3), (3, 3), ([0, 0], [0, 1])),
              ((3, 4), (4, 3), -1), ((0, 4), (4, 2), 1), ((3, 4), (4, 2), ([1], [0, 1]))]
    for dt in FLOATS:
        for sa, sb, dims in tcases:
            check("tensordot %s %s,%s dims=%s" % (dn(dt), list(sa), list(sb), dims),
                  lambda a, b, dims=dims: torch.tensordot(a, b, dims=dims), td(dims),
                  [data(sa, dt), data(sb, dt)], tol="mm", signed_zero=False)
    check("tensordot transposed", lambda a, b: torch.tensordot(a, b, dims=1), td(1),
          [In(data((4, 3), f), ("T",)), data((4, 2), f)], tol="mm")

    proto("clt_einsum", [C.c_char_p, C.POINTER(P), C.c_size_t, PP])

    def ein(eq):
        def c(*a):
            xs = a[:-1]
            return L.clt_einsum(eq.encode(), (P * max(len(xs), 1))(*xs), len(xs), a[-1])
        return c
    ecases = [("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
              ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("i,j->ij", [(3,), (4,)]),
              ("ij->ji", [(3, 4)]), ("...ij,...jk", [(2, 3, 4), (4, 5)]),
              ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("i,i", [(4,), (4,)]), ("ij", [(3, 4)]),
              ("ba", [(3, 4)]), ("iij->j", [(3, 3, 4)]), ("bii->bi", [(2, 3, 3)]),
              ("ij->", [(3, 4)]), ("i...->...", [(3, 4, 5)]), ("...i,...i->...", [(2, 3), (1, 3)]),
              ("ab,cd->abcd", [(2, 3), (1, 2)]), ("ij,ij->ij", [(3, 4), (1, 4)]),
              ("Ab,bc", [(2, 3), (3, 4)]), ("a b , b c -> a c", [(2, 3), (3, 4)]),
              ("ijk,kji->", [(2, 3, 4), (4, 3, 2)]), ("i,j,k->ijk", [(2,), (3,), (4,)]),
              ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("...ii->...i", [(2, 3, 3)]),
              ("i,i->", [(0,), (0,)]), ("ij,jk->ik", [(0, 3), (3, 2)]), ("ij->ij...", [(3, 4)]),
              ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("ij,jk", [(3, 4), (5, 5)]),
              ("iij", [(3, 4, 5)]), ("ij->k", [(3, 4)]), ("ij->ii", [(3, 4)]), ("i.j", [(3, 4)]),
              ("ij,jk->ik", [(3, 4)]), ("i$", [(3, 4)]), ("ijk", [(3, 4)]),
              ("...ij,...jk", [(2, 3, 4), (3, 4, 5)])]
    for dt in FLOATS:
        for eq, shapes in ecases:
            check("einsum %s %s %s" % (dn(dt), eq, shapes),
                  lambda *xs, eq=eq: torch.einsum(eq, *xs), ein(eq),
                  [data(sh, dt) for sh in shapes], tol="mm", signed_zero=False)
    check("einsum transposed", lambda a, b: torch.einsum("ij,jk->ik", a, b), ein("ij,jk->ik"),
          [In(data((4, 3), f), ("T",)), data((4, 2), f)], tol="mm")


# ---- nn layers, part 2: instance and local response norm, more pooling, dropouts -------------

proto("clt_max_pool2d_with_indices", [P, I64P, I64P, I64P, I64P, C.c_int, PP, PP])
proto("clt_max_pool1d_with_indices", [P, C.c_int64, C.c_int64, C.c_int64, C.c_int64, C.c_int,
                                      PP, PP])
proto("clt_adaptive_max_pool2d", [P, I64P, PP, PP])
proto("clt_adaptive_max_pool1d", [P, C.c_int64, PP, PP])
proto("clt_max_unpool2d", [P, P, I64P, I64P, I64P, I64P, PP])
proto("clt_max_unpool1d", [P, P, C.c_int64, C.c_int64, C.c_int64, I64P, PP])
proto("clt_lp_pool2d", [P, C.c_double, I64P, I64P, C.c_int, PP])
proto("clt_lp_pool1d", [P, C.c_double, C.c_int64, C.c_int64, C.c_int, PP])
proto("clt_local_response_norm", [P, C.c_int64, C.c_double, C.c_double, C.c_double, PP])
proto("clt_instance_norm", [P, P, P, P, P, C.c_int, C.c_double, C.c_double, PP])
for _n in ("dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
    proto("clt_" + _n, [P, C.c_double, C.c_int, P, PP])


def _second(call):
    """A cfn giving the second result (the indices) of call(ins..., out, second)."""
    def f(*a):
        o = P()
        st = call(*a[:-1], C.byref(o), a[-1])
        if st == 0:
            L.clt_tensor_free(o)
        return st
    return f


def _opt(v):
    return None if v is None else shape_arr(v)


def nn_pool():
    """Max pooling's indices, adaptive max pooling, max unpooling, LP
    pooling, local response norm, instance norm and the dropouts' eval
    mode and refusals against torch."""
    Fn = torch.nn.functional
    f = torch.float32
    # max_pool2d / max_pool1d with indices: torch's flat h * W + w
    for dt in FLOATS:
        for sh, k, s, pd, dl, cm in [((2, 3, 7, 9), (2, 2), None, (0, 0), (1, 1), 0),
                                     ((3, 8, 8), (3, 2), (2, 1), (1, 1), (1, 2), 1),
                                     ((1, 2, 9, 5), (3, 3), (1, 2), (1, 0), (2, 1), 0)]:
            args = (shape_arr(k), _opt(s), shape_arr(pd), shape_arr(dl), cm)
            tf = (lambda t, k=k, s=s, pd=pd, dl=dl, cm=cm: Fn.max_pool2d(
                t, k, s, pd, dl, bool(cm), return_indices=True)[1])
            check("max_pool2d indices %s %s k%s" % (dn(dt), list(sh), k), tf,
                  _second(lambda p, o, r, a=args: L.clt_max_pool2d_with_indices(p, *a, o, r)),
                  [data(sh, dt, special=True)], tol="exact")
            tfv = (lambda t, k=k, s=s, pd=pd, dl=dl, cm=cm: Fn.max_pool2d(
                t, k, s, pd, dl, bool(cm), return_indices=True)[0])
            check("max_pool2d with indices values %s %s" % (dn(dt), list(sh)), tfv,
                  lambda p, r, a=args: L.clt_max_pool2d_with_indices(p, *a, r, PP(P())),
                  [data(sh, dt, special=True)], tol="exact")
        for sh, k, s, pd, dl in [((2, 3, 11), 3, 2, 1, 1), ((4, 9), 2, 0, 0, 2)]:
            tf = (lambda t, k=k, s=s, pd=pd, dl=dl: Fn.max_pool1d(
                t, k, s or None, pd, dl, return_indices=True)[1])
            check("max_pool1d indices %s %s" % (dn(dt), list(sh)), tf,
                  _second(lambda p, o, r, k=k, s=s, pd=pd, dl=dl:
                          L.clt_max_pool1d_with_indices(p, k, s, pd, dl, 0, o, r)),
                  [data(sh, dt)], tol="exact")
    # adaptive max pooling: values and indices exact
    for dt in FLOATS:
        for sh, o in [((2, 3, 8, 6), (4, 3)), ((2, 3, 7, 11), (3, 4)), ((3, 9, 9), (9, 9)),
                      ((2, 2, 3, 4), (5, 7)), ((1, 2, 5, 7), (1, 1)), ((2, 3, 5, 7), (0, 2))]:
            check("adaptive_max_pool2d %s %s -> %s" % (dn(dt), list(sh), list(o)),
                  lambda t, o=o: Fn.adaptive_max_pool2d(t, o),
                  lambda p, r, o=o: L.clt_adaptive_max_pool2d(p, shape_arr(o), r, None),
                  [data(sh, dt, special=True)], tol="exact")
            check("adaptive_max_pool2d indices %s %s -> %s" % (dn(dt), list(sh), list(o)),
                  lambda t, o=o: Fn.adaptive_max_pool2d(t, o, return_indices=True)[1],
                  _second(lambda p, out, r, o=o: L.clt_adaptive_max_pool2d(p, shape_arr(o),
                                                                           out, r)),
                  [data(sh, dt, special=True)], tol="exact")
        for sh, o in [((2, 3, 10), 4), ((3, 7), 3), ((2, 2, 5), 8)]:
            check("adaptive_max_pool1d %s %s -> %d" % (dn(dt), list(sh), o),
                  lambda t, o=o: Fn.adaptive_max_pool1d(t, o),
                  lambda p, r, o=o: L.clt_adaptive_max_pool1d(p, o, r, None),
                  [data(sh, dt, special=True)], tol="exact")
            check("adaptive_max_pool1d indices %s %s -> %d" % (dn(dt), list(sh), o),
                  lambda t, o=o: Fn.adaptive_max_pool1d(t, o, return_indices=True)[1],
                  _second(lambda p, out, r, o=o: L.clt_adaptive_max_pool1d(p, o, out, r)),
                  [data(sh, dt)], tol="exact")
    amp = (lambda t: Fn.adaptive_max_pool2d(t, (2, 3)),
           lambda p, r: L.clt_adaptive_max_pool2d(p, shape_arr((2, 3)), r, None))
    check("adaptive_max_pool2d transposed", *amp, [In(data((2, 3, 11, 7), f), ("T",))],
          tol="exact")
    for sh in ((5, 7), (2, 3, 0, 7)):
        check("adaptive_max_pool2d %s (refused)" % list(sh), *amp, [data(sh, f)])
    check("adaptive_max_pool2d int64 (refused)", *amp, [data((1, 2, 4, 4), torch.int64)])
    check("adaptive_max_pool1d 4-D (refused)", lambda t: Fn.adaptive_max_pool1d(t, 2),
          lambda p, r: L.clt_adaptive_max_pool1d(p, 2, r, None), [data((1, 2, 3, 4), f)])
    # max_unpool2d / 1d on torch's pooling indices
    for dt in FLOATS:
        for sh, k, s, pd, osz in [((2, 3, 8, 6), (2, 2), None, (0, 0), None),
                                  ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1), None),
                                  ((3, 8, 8), (2, 2), (2, 2), (0, 0), (9, 9)),
                                  ((1, 1, 5, 5), (3, 3), (1, 1), (0, 0), None)]:
            x = data(sh, dt)
            y, idx = Fn.max_pool2d(x, k, s, pd, return_indices=True)
            check("max_unpool2d %s %s k%s o%s" % (dn(dt), list(sh), k, osz),
                  lambda t, i, k=k, s=s, pd=pd, osz=osz: Fn.max_unpool2d(t, i, k, s, pd, osz),
                  lambda p, i, r, k=k, s=s, pd=pd, osz=osz: L.clt_max_unpool2d(
                      p, i, shape_arr(k), _opt(s), shape_arr(pd), _opt(osz), r),
                  [y, idx], tol="exact")
        x = data((2, 3, 12), dt)
        y, idx = Fn.max_pool1d(x, 3, 2, 1, return_indices=True)
        for osz in ((12,), (13,)):
            check("max_unpool1d %s o%s" % (dn(dt), osz),
                  lambda t, i, osz=osz: Fn.max_unpool1d(t, i, 3, 2, 1, osz),
                  lambda p, i, r, osz=osz: L.clt_max_unpool1d(p, i, 3, 2, 1, _opt(osz), r),
                  [y, idx], tol="exact")
    y, idx = Fn.max_pool2d(data((1, 2, 6, 6), f), 2, return_indices=True)
    up = (lambda osz: (lambda t, i: Fn.max_unpool2d(t, i, 2, 2, 0, osz),
                       lambda p, i, r: L.clt_max_unpool2d(p, i, shape_arr((2, 2)), None, None,
                                                          _opt(osz), r)))
    for osz in ((4, 6), (8, 6), (6, 7)):
        check("max_unpool2d output_size %s%s" % (list(osz), "" if osz == (6, 7) else " (refused)"),
              *up(osz), [y, idx], tol="exact")
    # an index outside the output: torch raises at once, cltensor at the next
    # synchronisation (clt_scatter's device-side check); every maximum of
    # arange is its window's last element, so index 35 is there
    y, idx = Fn.max_pool2d(torch.arange(72.0).reshape(1, 2, 6, 6), 2, return_indices=True)
    for osz in ((5, 7), (5, 6)):
        keep = [upload(y), upload(idx)]
        o = P()
        st = L.clt_max_unpool2d(keep[0], keep[1], shape_arr((2, 2)), None, None, shape_arr(osz),
                                C.byref(o))
        if st == 0:
            keep.append(o)
            a = np.empty((1, 2) + osz, np.float32)
            st = L.clt_tensor_read(o, a.ctypes.data_as(P), a.nbytes)
        ok("max_unpool2d output_size %s: index out of the output (refused)" % list(osz),
           st != 0 and b"out of bounds" in L.clt_last_error(), "status %d" % st)
        for p in keep:
            L.clt_tensor_free(p)
    check("max_unpool2d int32 indices (refused)", *up(None), [y, idx.int()])
    check("max_unpool2d indices of another shape (refused)", *up(None), [y, idx[:, :, :2]])
    check("max_unpool2d 2-D (refused)", *up(None), [y[0, 0], idx[0, 0]])
    # LP pooling: torch's formula, quirk included (a negative average gives 0)
    for dt in FLOATS:
        for nt in (2.0, 3.0, 1.5, 1.0):
            for sh, k, s, cm in [((2, 3, 7, 9), (2, 2), None, 0), ((3, 8, 7), (3, 2), (2, 1), 1)]:
                check("lp_pool2d %s p=%g %s k%s" % (dn(dt), nt, list(sh), k),
                      lambda t, nt=nt, k=k, s=s, cm=cm: Fn.lp_pool2d(t, nt, k, s, bool(cm)),
                      lambda p, r, nt=nt, k=k, s=s, cm=cm: L.clt_lp_pool2d(
                          p, nt, shape_arr(k), _opt(s), cm, r),
                      [data(sh, dt, lo=-3, hi=3)], tol="tr", signed_zero=False)
            check("lp_pool1d %s p=%g" % (dn(dt), nt),
                  lambda t, nt=nt: Fn.lp_pool1d(t, nt, 3, 2, True),
                  lambda p, r, nt=nt: L.clt_lp_pool1d(p, nt, 3, 2, 1, r),
                  [data((2, 3, 10), dt, lo=-3, hi=3)], tol="tr", signed_zero=False)
    # local response norm: avg_pool's windows over the channels
    for dt in FLOATS:
        for sh in ((2, 5, 7), (2, 6, 3, 4), (1, 4, 2, 3, 2), (3, 1, 5)):
            for size in (1, 2, 3, 4, 7):
                check("local_response_norm %s %s size %d" % (dn(dt), list(sh), size),
                      lambda t, size=size: Fn.local_response_norm(t, size, 1e-2, 0.75, 1.5),
                      lambda p, r, size=size: L.clt_local_response_norm(p, size, 1e-2, 0.75, 1.5,
                                                                        r),
                      [data(sh, dt)], tol="tr")
    lrn = (lambda t: Fn.local_response_norm(t, 2),
           lambda p, r: L.clt_local_response_norm(p, 2, 1e-4, 0.75, 1.0, r))
    check("local_response_norm 2-D (refused)", *lrn, [data((3, 4), f)])
    check("local_response_norm empty", *lrn, [data((0, 3, 4), f)], tol="exact")
    # instance norm with its own statistics, then with running ones
    for dt in FLOATS:
        for sh in ((2, 3, 5), (3, 4, 3, 5), (1, 2, 7), (2, 3, 2, 2, 2)):
            C_ = sh[1]
            w, b = data((C_,), dt, lo=-2, hi=2), data((C_,), dt, lo=-2, hi=2)
            check("instance_norm %s %s" % (dn(dt), list(sh)),
                  lambda t, w, b: Fn.instance_norm(t, weight=w, bias=b),
                  lambda p, w, b, r: L.clt_instance_norm(p, None, None, w, b, 1, 0.1, 1e-5, r),
                  [data(sh, dt), w, b], tol="red", signed_zero=False)
            rm, rv = data((C_,), dt), data((C_,), dt, lo=0.5, hi=2)
            check("instance_norm %s %s running stats" % (dn(dt), list(sh)),
                  lambda t, m, v: Fn.instance_norm(t, m, v, use_input_stats=False, eps=1e-3),
                  lambda p, m, v, r: L.clt_instance_norm(p, m, v, None, None, 0, 0.1, 1e-3, r),
                  [data(sh, dt), rm, rv], tol="red", signed_zero=False)
            # the running statistics' update, in place
            x = data(sh, dt)
            tm, tv = rm.clone(), rv.clone()
            Fn.instance_norm(x, tm, tv, use_input_stats=True, momentum=0.3)
            keep = [upload(x), upload(rm), upload(rv)]
            o = P()
            st = L.clt_instance_norm(keep[0], keep[1], keep[2], None, None, 1, 0.3, 1e-5,
                                     C.byref(o))
            if st == 0:
                keep.append(o)
                gm, gv = download(keep[1])[0], download(keep[2])[0]
                ok("instance_norm %s %s running update" % (dn(dt), list(sh)),
                   np.allclose(gm, tm.numpy(), 1e-5, 1e-6) and
                   np.allclose(gv, tv.numpy(), 1e-5, 1e-6),
                   "torch %s %s, cltensor %s %s" % (tm, tv, gm, gv))
            else:
                fail("instance_norm running update", L.clt_last_error())
            for p in keep:
                L.clt_tensor_free(p)
    inorm = (lambda t: Fn.instance_norm(t), lambda p, r: L.clt_instance_norm(
        p, None, None, None, None, 1, 0.1, 1e-5, r))
    check("instance_norm one spatial element (refused)", *inorm, [data((2, 3, 1), f)])
    check("instance_norm 2-D (refused)", *inorm, [data((2, 3), f)])
    check("instance_norm int64 (refused)", *inorm, [data((2, 3, 4), torch.int64)])
    check("instance_norm weight [4] (refused)",
          lambda t, w: Fn.instance_norm(t, weight=w),
          lambda p, w, r: L.clt_instance_norm(p, None, None, w, None, 1, 0.1, 1e-5, r),
          [data((2, 3, 4), f), data((4,), f)])
    check("instance_norm no running stats (refused)",
          lambda t: Fn.instance_norm(t, use_input_stats=False),
          lambda p, r: L.clt_instance_norm(p, None, None, None, None, 0, 0.1, 1e-5, r),
          [data((2, 3, 4), f)])
    # dropouts: eval mode and p 0 give the input, p 1 zeros; refusals
    drops = [("dropout1d", Fn.dropout1d, (2, 3, 5)), ("dropout2d", Fn.dropout2d, (2, 3, 4, 5)),
             ("dropout3d", Fn.dropout3d, (2, 3, 2, 2, 3)),
             ("alpha_dropout", Fn.alpha_dropout, (3, 4)),
             ("feature_alpha_dropout", Fn.feature_alpha_dropout, (2, 3, 4))]
    for name, tfn, sh in drops:
        cfn = getattr(L, "clt_" + name)
        for p_, tr in ((0.3, 0), (0.0, 1), (1.0, 1)):
            check("%s p=%g training=%d" % (name, p_, tr),
                  lambda t, tfn=tfn, p_=p_, tr=tr: tfn(t, p_, bool(tr)),
                  lambda p, r, cfn=cfn, p_=p_, tr=tr: cfn(p, p_, tr, None, r),
                  [data(sh, f, special=True)], tol="exact", signed_zero=False)
        for p_ in (-0.1, 1.5):
            check("%s p=%g (refused)" % (name, p_),
                  lambda t, tfn=tfn, p_=p_: tfn(t, p_, True),
                  lambda p, r, cfn=cfn, p_=p_: cfn(p, p_, 1, None, r), [data(sh, f)])
    check("dropout1d 4-D (refused)", lambda t: Fn.dropout1d(t, 0.5, True),
          lambda p, r: L.clt_dropout1d(p, 0.5, 1, None, r), [data((2, 3, 4, 5), f)])
    check("feature_alpha_dropout 1-D (refused)", lambda t: Fn.feature_alpha_dropout(t, 0.5, True),
          lambda p, r: L.clt_feature_alpha_dropout(p, 0.5, 1, None, r), [data((5,), f)])


# ---- eigh, svd, pinv, matrix_rank, cond -----------------------------------

def _signed(v, k=None):
    """v's columns (the first k) with their largest-magnitude component
    positive: cltensor's sign convention, for torch's vectors."""
    k = v.shape[-1] if k is None else k
    c = v[..., :k]
    if c.numel() == 0:
        return v, torch.ones(v.shape[:-2] + (k,), dtype=v.dtype)
    idx = c.abs().argmax(dim=-2, keepdim=True)
    sg = torch.where(c.gather(-2, idx) < 0, -1.0, 1.0).to(v.dtype)
    return torch.cat([c * sg, v[..., k:]], dim=-1), sg.squeeze(-2)


def _svd_torch(t, which, full=False):
    u, s, vh = torch.linalg.svd(t, full_matrices=full)
    k = s.shape[-1]
    u, sg = _signed(u, k)
    vh = torch.cat([vh[..., :k, :] * sg.unsqueeze(-1), vh[..., k:, :]], dim=-2)
    if full:  # the completed columns are any orthonormal basis: compare the first k
        u, vh = u[..., :, :k], vh[..., :k, :]
    return (u, s, vh)[which]


def linalg_eig():
    """eigh, eigvalsh, svd, svdvals, torch.svd, pinv, matrix_rank and cond
    (linalg.h) against torch: eigenvectors and singular vectors up to the
    sign of each (cltensor's convention applied to torch's), the completed
    columns of a full SVD by orthonormality, the refusals."""
    proto("clt_linalg_eigh", [P, C.c_char_p, PP, PP])
    proto("clt_linalg_eigvalsh", [P, C.c_char_p, PP])
    proto("clt_linalg_svd", [P, C.c_int, PP, PP, PP])
    proto("clt_linalg_svdvals", [P, PP])
    proto("clt_svd", [P, C.c_int, C.c_int, PP, PP, PP])
    DP = C.POINTER(C.c_double)
    proto("clt_linalg_pinv", [P, DP, DP, C.c_int, PP])
    proto("clt_linalg_matrix_rank", [P, DP, DP, C.c_int, PP])
    proto("clt_linalg_cond", [P, C.c_double, PP])
    TOL["eig"] = ((5e-5, 5e-5), (1e-11, 1e-11))
    TOL["vec"] = ((5e-4, 5e-4), (1e-9, 1e-9))

    def pick(fn, nout, which, *pre):
        def c(p, o):
            outs = [P(0xdead) for _ in range(nout)]
            st = fn(p, *pre, *[C.byref(x) for x in outs])
            for i, x in enumerate(outs):
                if (st == 0) != (x.value is not None):
                    raise AssertionError("output %d is %s after status %d" % (i, x.value, st))
                if i != which:
                    L.clt_tensor_free(x)
            o._obj.value = outs[which].value
            return st
        return c

    def dptr(v):
        return None if v is None else C.byref(C.c_double(v))

    sq = [(1, 1), (2, 2), (3, 3), (2, 4, 4), (2, 3, 5, 5), (17, 17), (0, 3, 3), (2, 0, 0),
          (40, 40)]
    rect = [(3, 2), (2, 3), (5, 3), (3, 5), (2, 4, 6), (2, 6, 4), (1, 7), (7, 1), (33, 20),
            (0, 3, 2), (3, 0), (0, 4)]
    for dt in FLOATS:
        for sh in sq:
            a = data(sh, dt)
            for up in ("L", "U"):
                check("eigvalsh %s %s %s" % (dn(dt), list(sh), up),
                      lambda t, up=up: torch.linalg.eigvalsh(t, UPLO=up),
                      lambda p, o, up=up: L.clt_linalg_eigvalsh(p, up.encode(), o), [a],
                      tol="eig", signed_zero=False)
                check("eigh values %s %s %s" % (dn(dt), list(sh), up),
                      lambda t, up=up: torch.linalg.eigh(t, UPLO=up)[0],
                      pick(L.clt_linalg_eigh, 2, 0, up.encode()), [a], tol="eig",
                      signed_zero=False)
                check("eigh vectors %s %s %s" % (dn(dt), list(sh), up),
                      lambda t, up=up: _signed(torch.linalg.eigh(t, UPLO=up)[1])[0],
                      pick(L.clt_linalg_eigh, 2, 1, up.encode()), [a], tol="vec",
                      signed_zero=False)
        for sh in sq + rect:
            a = data(sh, dt)
            # pinv and cond amplify rounding by the condition number: keep it near 6
            wc = (torch.randn(sh, generator=G, dtype=torch.float64) / max(1, max(sh[-2:])) ** 0.5
                  + 1.5 * torch.eye(sh[-2], sh[-1], dtype=torch.float64)).to(dt)
            check("svdvals %s %s" % (dn(dt), list(sh)), torch.linalg.svdvals,
                  L.clt_linalg_svdvals, [a], tol="eig", signed_zero=False)
            for full in (0, 1):
                for w, nm in enumerate(("U", "S", "Vh")):
                    check("svd %s %s full=%d %s" % (dn(dt), list(sh), full, nm),
                          lambda t, w=w, full=full: _svd_torch(t, w, bool(full)),
                          lambda p, o, w=w, full=full: (
                              pick(L.clt_linalg_svd, 3, w, full)(p, o) if not full or w == 1
                              else _narrowed(pick(L.clt_linalg_svd, 3, w, full), w, p, o)),
                          [a], tol="vec" if w != 1 else "eig", signed_zero=False)
                    if full and w != 1:
                        check("svd %s %s full %s orthonormal" % (dn(dt), list(sh), nm),
                              lambda t, w=w: _eye_of(t, w),
                              lambda p, o, w=w: _gram(pick(L.clt_linalg_svd, 3, w, 1), w, p, o),
                              [a], tol="vec", signed_zero=False)
            for some in (1, 0):
                for w, nm in enumerate(("U", "S", "V")):
                    check("svd (torch.svd) %s %s some=%d %s" % (dn(dt), list(sh), some, nm),
                          lambda t, w=w, some=some: (
                              lambda r: (r[0], r[1], r[2].mT)[w])(
                              [_svd_torch(t, i, not some) for i in range(3)]),
                          lambda p, o, w=w, some=some: (
                              pick(L.clt_svd, 3, w, some, 1)(p, o) if some or w == 1
                              else _narrowed(pick(L.clt_svd, 3, w, some, 1), 2 if w else 0, p,
                                             o, w == 2)),
                          [a], tol="vec" if w != 1 else "eig", signed_zero=False)
            check("svd compute_uv=False U %s %s" % (dn(dt), list(sh)),
                  lambda t: torch.svd(t, compute_uv=False)[0],
                  pick(L.clt_svd, 3, 0, 1, 0), [a], tol="exact")
            for at, rt in ((None, None), (0.5, None), (None, 0.3), (0.1, 0.2), (-1.0, None)):
                check("pinv %s %s atol=%s rtol=%s" % (dn(dt), list(sh), at, rt),
                      lambda t, at=at, rt=rt: torch.linalg.pinv(t, atol=at, rtol=rt),
                      lambda p, o, at=at, rt=rt: L.clt_linalg_pinv(p, dptr(at), dptr(rt), 0, o),
                      [wc], tol="vec", signed_zero=False)
                check("matrix_rank %s %s atol=%s rtol=%s" % (dn(dt), list(sh), at, rt),
                      lambda t, at=at, rt=rt: torch.linalg.matrix_rank(t, atol=at, rtol=rt),
                      lambda p, o, at=at, rt=rt: L.clt_linalg_matrix_rank(p, dptr(at), dptr(rt),
                                                                          0, o), [a])
            for pp in (2, -2):
                check("cond %s %s p=%d" % (dn(dt), list(sh), pp),
                      lambda t, pp=pp: torch.linalg.cond(t, pp),
                      lambda p, o, pp=pp: L.clt_linalg_cond(p, pp, o), [wc], tol="vec",
                      signed_zero=False)
        for sh in sq:
            s = data(sh, dt)
            s = s + s.mT
            check("pinv hermitian %s %s" % (dn(dt), list(sh)),
                  lambda t: torch.linalg.pinv(t, hermitian=True),
                  lambda p, o: L.clt_linalg_pinv(p, None, None, 1, o), [s], tol="vec",
                  signed_zero=False)
            check("matrix_rank hermitian %s %s" % (dn(dt), list(sh)),
                  lambda t: torch.linalg.matrix_rank(t, hermitian=True),
                  lambda p, o: L.clt_linalg_matrix_rank(p, None, None, 1, o), [s])
    f = torch.float32
    low = torch.tensor([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    rank1 = torch.outer(torch.arange(1.0, 5), torch.arange(1.0, 4))
    for t in (low, rank1, torch.zeros(3, 3), torch.zeros(2, 4, 3), torch.eye(4)):
        check("matrix_rank %s" % t.tolist(), torch.linalg.matrix_rank,
              lambda p, o: L.clt_linalg_matrix_rank(p, None, None, 0, o), [t])
        check("svdvals deficient %s" % list(t.shape), torch.linalg.svdvals,
              L.clt_linalg_svdvals, [t], tol="eig", signed_zero=False)
        check("pinv deficient %s" % list(t.shape), torch.linalg.pinv,
              lambda p, o: L.clt_linalg_pinv(p, None, None, 0, o), [t], tol="vec",
              signed_zero=False)
    check("cond singular", lambda t: torch.linalg.cond(t), lambda p, o: L.clt_linalg_cond(p, 2, o),
          [rank1[:3]], tol="vec")
    check("eigh repeated values", torch.linalg.eigvalsh,
          lambda p, o: L.clt_linalg_eigvalsh(p, None, o),
          [torch.tensor([[2.0, 0, 0], [0, 2, 0], [0, 0, 5]])], tol="eig", signed_zero=False)
    check("eigh transposed", torch.linalg.eigvalsh,
          lambda p, o: L.clt_linalg_eigvalsh(p, None, o), [In(data((5, 5), f), ("T",))],
          tol="eig", signed_zero=False)
    check("svdvals expanded", torch.linalg.svdvals, L.clt_linalg_svdvals,
          [In(data((1, 4, 3), f), ("E", (3, 4, 3)))], tol="eig", signed_zero=False)
    check("eigvalsh NaN", torch.linalg.eigvalsh, lambda p, o: L.clt_linalg_eigvalsh(p, None, o),
          [torch.tensor([[1.0, float("nan")], [float("nan"), 1.0]])], expect_error=None,
          tol="eig")
    # refusals
    for dt in (torch.int32, torch.int64):
        check("eigvalsh %s" % dn(dt), torch.linalg.eigvalsh,
              lambda p, o: L.clt_linalg_eigvalsh(p, None, o), [data((3, 3), dt)])
        check("svdvals %s" % dn(dt), torch.linalg.svdvals, L.clt_linalg_svdvals,
              [data((3, 3), dt)])
    for sh in [(3,), ()]:
        check("svdvals shape %s" % list(sh), torch.linalg.svdvals, L.clt_linalg_svdvals,
              [data(sh, f)])
        check("pinv shape %s" % list(sh), torch.linalg.pinv,
              lambda p, o: L.clt_linalg_pinv(p, None, None, 0, o), [data(sh, f)])
    check("eigvalsh not square", torch.linalg.eigvalsh,
          lambda p, o: L.clt_linalg_eigvalsh(p, None, o), [data((2, 3), f)])
    check("eigvalsh uplo X", lambda t: torch.linalg.eigvalsh(t, UPLO="X"),
          lambda p, o: L.clt_linalg_eigvalsh(p, b"X", o), [data((3, 3), f)])
    check("cond p=1", lambda t: torch.linalg.cond(t, 1),
          lambda p, o: L.clt_linalg_cond(p, 1, o), [_wellcond((3, 3), f)], tol="mm")


def _narrowed(c, w, p, o, transposed=False):
    """c's output w (U, or Vh: w 2; transposed: torch.svd's V) cut to its
    first k columns (rows of Vh)."""
    full = P()
    st = c(p, C.byref(full))
    if st:
        o._obj.value = None
        return st
    nd = L.clt_tensor_ndim(p)
    shp = L.clt_tensor_shape(p)
    k = min(shp[nd - 2], shp[nd - 1])
    dim = -1 if w == 0 or transposed else -2
    st = L.clt_narrow(full, dim, 0, k, o)
    L.clt_tensor_free(full)
    return st


def _eye_of(t, w):
    n = t.shape[-2] if w == 0 else t.shape[-1]
    return torch.eye(n, dtype=t.dtype).expand(t.shape[:-2] + (n, n))


def _gram(c, w, p, o):
    """U^T U (w 0) or Vh Vh^T (w 2) of c's output."""
    x, xt = P(), P()
    st = c(p, C.byref(x))
    if st:
        o._obj.value = None
        return st
    L.clt_transpose(x, -2, -1, C.byref(xt))
    st = L.clt_matmul(xt, x, o) if w == 0 else L.clt_matmul(x, xt, o)
    L.clt_tensor_free(x)
    L.clt_tensor_free(xt)
    return st


# ---- linalg_qr: torch.linalg's qr, lstsq, norms, matrix_power, multi_dot ----

def _qr_c(p, o, mode, k):
    """clt_linalg_qr handing out its Q (k 0) or its R (k 1) in o."""
    other = P(0xdead)
    outs = [o, C.byref(other)] if k == 0 else [C.byref(other), o]
    st = L.clt_linalg_qr(p, mode.encode(), *outs)
    if (st == 0) != (other.value is not None):
        raise AssertionError("the other output %s after status %d" % (other.value, st))
    L.clt_tensor_free(other)
    return st


def _ints(v):
    return (C.c_int * max(1, len(v)))(*v) if v is not None else None


def linalg_qr():
    proto("clt_linalg_qr", [P, C.c_char_p, PP, PP])
    proto("clt_linalg_lstsq", [P, P, PP])
    proto("clt_linalg_vector_norm", [P, C.c_double, C.POINTER(C.c_int), C.c_int, C.c_int, PP])
    proto("clt_linalg_matrix_norm", [P, C.c_char_p, C.POINTER(C.c_int), C.c_int, PP])
    proto("clt_linalg_norm", [P, C.c_char_p, C.POINTER(C.c_int), C.c_int, C.c_int, PP])
    proto("clt_linalg_matrix_power", [P, C.c_int64, PP])
    proto("clt_linalg_multi_dot", [C.POINTER(P), C.c_size_t, PP])
    TOL["la"] = ((2e-5, 2e-5), (1e-12, 1e-12))
    shapes = [(3, 3), (5, 3), (3, 5), (2, 6, 4), (2, 3, 4, 2), (1, 1), (40, 30), (70, 70),
              (0, 3), (3, 0), (2, 0, 0), (0, 4, 3), (4, 1), (1, 4)]
    for dt in FLOATS:
        for sh in shapes:
            a = data(sh, dt)
            for mode in ("reduced", "complete", "r"):
                for k in ((1,) if mode == "r" else (0, 1)):
                    check("qr %s %s %s %s" % ("QR"[k], mode, dn(dt), list(sh)),
                          lambda t, mode=mode, k=k: torch.linalg.qr(t, mode=mode)[k],
                          lambda p, o, mode=mode, k=k: _qr_c(p, o, mode, k), [a], tol="la",
                          signed_zero=False)
        # a column already zero below the diagonal keeps its sign (tau 0)
        z = torch.tensor([[-2.0, 1, 3], [0, 4, 1], [0, 0, -5]], dtype=dt)
        for k in (0, 1):
            check("qr %s triangular %s" % ("QR"[k], dn(dt)),
                  lambda t, k=k: torch.linalg.qr(t)[k], lambda p, o, k=k: _qr_c(p, o, "reduced", k),
                  [z], tol="la", signed_zero=False)
        for sa, sb in [((5, 3), (5, 2)), ((4, 4), (4, 1)), ((2, 6, 3), (2, 6, 2)), ((6, 3), (6,)),
                       ((2, 6, 3), (2, 6)), ((1, 6, 3), (4, 6, 2)), ((6, 3), (3, 6, 1)),
                       ((30, 10), (30, 4)), ((5, 3), (4, 2)), ((2, 6, 3), (6, 2)),
                       ((6, 3), (2, 3, 6, 1)), ((0, 5, 3), (0, 5, 2))]:
            check("lstsq %s %s %s" % (dn(dt), list(sa), list(sb)),
                  lambda x, y: torch.linalg.lstsq(x, y).solution, L.clt_linalg_lstsq,
                  [data(sa, dt), data(sb, dt)], tol="la", signed_zero=False)
        x = data((3, 4, 5), dt)
        for ord_ in (2, 1, 0, 3, 0.5, -1, math.inf, -math.inf):
            for dims in (None, (0,), (-1,), (0, 2), (2, 0), (0, 1, 2), (1, 2)):
                for kd in (0, 1):
                    check("vector_norm %s ord %s dims %s keepdim %d" % (dn(dt), ord_, dims, kd),
                          lambda t, o_=ord_, d=dims, kd=kd: torch.linalg.vector_norm(
                              t, o_, dim=d, keepdim=bool(kd)),
                          lambda p, o, o_=ord_, d=dims, kd=kd: L.clt_linalg_vector_norm(
                              p, o_, _ints(d), len(d) if d else 0, kd, o),
                          [x], tol="red", signed_zero=False)
        for ord_ in ("fro", "1", "-1", "inf", "-inf", "nuc", "2", "-2"):
            tord = {"fro": "fro", "1": 1, "-1": -1, "inf": math.inf, "-inf": -math.inf,
                    "nuc": "nuc", "2": 2, "-2": -2}[ord_]
            for dims in (None, (0, 2), (2, 0), (-1, -2)):
                for kd in (0, 1):
                    check("matrix_norm %s %s dims %s keepdim %d" % (dn(dt), ord_, dims, kd),
                          lambda t, o_=tord, d=dims, kd=kd: torch.linalg.matrix_norm(
                              t, o_, dim=d if d else (-2, -1), keepdim=bool(kd)),
                          lambda p, o, o_=ord_, d=dims, kd=kd: L.clt_linalg_matrix_norm(
                              p, o_.encode(), _ints(d), kd, o),
                          [x], tol="red", signed_zero=False)
        for sh, ord_, dims in [((4,), None, None), ((3, 4), None, None), ((3, 4), "fro", None),
                               ((3, 4), "1", None), ((3, 4), "inf", None), ((4,), "3", None),
                               ((4,), "inf", None), ((3, 4), "2.5", (1,)),
                               ((2, 3, 4), None, None), ((2, 3, 4), "1", (0, 2)),
                               ((2, 3, 4), "1", None), ((2, 3, 4), None, (1, 2)),
                               ((2, 3, 4), "-inf", (2, 1)), ((3, 4), "0", (0,))]:
            tord = None if ord_ is None else (ord_ if ord_ == "fro" else float(ord_))
            check("norm %s %s ord %s dims %s" % (dn(dt), list(sh), ord_, dims),
                  lambda t, o_=tord, d=dims: torch.linalg.norm(t, o_, dim=d),
                  lambda p, o, o_=ord_, d=dims: L.clt_linalg_norm(
                      p, o_.encode() if o_ else None, _ints(d), len(d) if d else 0, 0, o),
                  [data(sh, dt)], tol="red", signed_zero=False)
        for sh in [(3, 3), (2, 4, 4), (0, 2, 2), (1, 1)]:
            a = _wellcond(sh, dt)
            for k in (-3, -2, -1, 0, 1, 2, 3, 5, 6, 11):
                check("matrix_power %s %s n %d" % (dn(dt), list(sh), k),
                      lambda t, k=k: torch.linalg.matrix_power(t, k),
                      lambda p, o, k=k: L.clt_linalg_matrix_power(p, k, o), [a], tol="la",
                      signed_zero=False)
        for shs in [[(3, 4), (4, 5)], [(4,), (4, 5), (5,)], [(2, 30), (30, 3), (3, 40)],
                    [(20, 2), (2, 30), (30, 4)], [(3,), (3, 4), (4, 2), (2, 6), (6, 1)],
                    [(5, 10), (10, 3), (3, 12), (12, 5), (5, 50), (50, 6)], [(4,), (4,)],
                    [(3, 4), (5, 6)], [(3, 4, 4), (4, 4)], [(3, 4)]]:
            ts = [data(s_, dt) for s_ in shs]

            def cfn(*ps_o, n=len(ts)):
                arr = (P * n)(*ps_o[:n])
                return L.clt_linalg_multi_dot(arr, n, ps_o[n])
            check("multi_dot %s %s" % (dn(dt), shs), lambda *t: torch.linalg.multi_dot(list(t)),
                  cfn, ts, tol="la", signed_zero=False)
    f = torch.float32
    for k in (0, 1):
        check("qr %s transposed" % "QR"[k], lambda t, k=k: torch.linalg.qr(t)[k],
              lambda p, o, k=k: _qr_c(p, o, "reduced", k), [In(data((5, 4), f), ("T",))],
              tol="la", signed_zero=False)
    for t in (data((3, 3), torch.int64), data((3,), f)):
        check("qr refused %s %s" % (t.dtype, list(t.shape)), lambda x: torch.linalg.qr(x)[1],
              lambda p, o: _qr_c(p, o, "reduced", 1), [t])
    check("qr bad mode", lambda x: torch.linalg.qr(x, mode="x")[1],
          lambda p, o: _qr_c(p, o, "x", 1), [data((3, 3), f)])
    check("lstsq wide", lambda x, y: torch.linalg.lstsq(x, y).solution, L.clt_linalg_lstsq,
          [data((3, 5), f), data((3, 2), f)], tol="la", signed_zero=False)
    check("lstsq dtype mix", lambda x, y: torch.linalg.lstsq(x, y).solution, L.clt_linalg_lstsq,
          [data((4, 3), f), data((4, 2), torch.float64)])
    check("lstsq dims", lambda x, y: torch.linalg.lstsq(x, y).solution, L.clt_linalg_lstsq,
          [data((4, 3), f), data((2, 2, 4, 2), f)])
    check("matrix_power not square", lambda x: torch.linalg.matrix_power(x, 2),
          lambda p, o: L.clt_linalg_matrix_power(p, 2, o), [data((3, 4), f)])
    check("matrix_power singular", lambda x: torch.linalg.matrix_power(x, -1),
          lambda p, o: L.clt_linalg_matrix_power(p, -1, o), [torch.ones(3, 3)])
    check("matrix_norm dims equal", lambda x: torch.linalg.matrix_norm(x, dim=(1, 1)),
          lambda p, o: L.clt_linalg_matrix_norm(p, b"fro", _ints((1, 1)), 0, o),
          [data((3, 4), f)])
    check("norm 3-D with ord", lambda x: torch.linalg.norm(x, 2),
          lambda p, o: L.clt_linalg_norm(p, b"2", None, 0, 0, o), [data((2, 3, 4), f)])
    check("vector_norm repeated dim", lambda x: torch.linalg.vector_norm(x, dim=(0, 0)),
          lambda p, o: L.clt_linalg_vector_norm(p, 2, _ints((0, 0)), 2, 0, o),
          [data((3, 4), f)])
    proto("clt_linalg_vecdot", [P, P, C.c_int, PP])
    proto("clt_diag_embed", [P, C.c_int64, C.c_int, C.c_int, PP])
    proto("clt_block_diag", [C.POINTER(P), C.c_size_t, PP])
    for dt in FLOATS + [torch.int64]:
        for sa, sb, d in [((3,), (3,), -1), ((2, 3), (3,), -1), ((2, 3), (4, 1, 3), 0),
                          ((2, 3), (2, 3), 2), ((0, 3), (3,), -1), ((2, 3), (2, 1), 1)]:
            check("vecdot %s %s %s %d" % (dn(dt), list(sa), list(sb), d),
                  lambda x, y, d=d: torch.linalg.vecdot(x, y, dim=d),
                  lambda p, q, o, d=d: L.clt_linalg_vecdot(p, q, d, o),
                  [data(sa, dt), data(sb, dt)], tol="red", signed_zero=False)
        for sh, off, d1, d2 in [((3,), 0, -2, -1), ((2, 3), 1, 0, 2), ((2, 3), -2, -1, 0),
                                ((2, 0), 0, -2, -1), ((2, 3, 4), 0, 1, 3), ((2, 3), 0, 1, 1),
                                ((), 0, -2, -1), ((3,), 0, 2, 0)]:
            check("diag_embed %s %s %d %d %d" % (dn(dt), list(sh), off, d1, d2),
                  lambda t, off=off, d1=d1, d2=d2: torch.diag_embed(t, off, d1, d2),
                  lambda p, o, off=off, d1=d1, d2=d2: L.clt_diag_embed(p, off, d1, d2, o),
                  [data(sh, dt)], tol="exact")
        for shs in [[(2, 3)], [(2, 3), (), (3,)], [(0, 2), (2, 0), (1,)], [(2, 2, 2)]]:
            ts = [data(s_, dt) for s_ in shs]

            def cfn(*ps_o, n=len(ts)):
                return L.clt_block_diag((P * n)(*ps_o[:n]), n, ps_o[n])
            check("block_diag %s %s" % (dn(dt), shs), lambda *t: torch.block_diag(*t), cfn, ts,
                  tol="exact")
    mix = [data((2, 2), torch.int32), data((1, 3), f), data((2,), torch.float64)]
    check("block_diag promotes", lambda *t: torch.block_diag(*t),
          lambda a, b, c, o: L.clt_block_diag((P * 3)(a, b, c), 3, o), mix, tol="exact")
    proto("clt_linalg_householder_product", [P, P, PP])
    for dt in FLOATS:
        for sh in [(5, 3), (4, 4), (2, 6, 2), (3, 0), (0, 3, 2)]:
            g_, t_ = torch.geqrf(data(sh, dt))
            for k in sorted({t_.shape[-1], max(t_.shape[-1] - 1, 0)}):
                check("householder_product %s %s k %d" % (dn(dt), list(sh), k),
                      torch.linalg.householder_product, L.clt_linalg_householder_product,
                      [g_, t_[..., :k].contiguous()], tol="la", signed_zero=False)
    check("householder_product wide", torch.linalg.householder_product,
          L.clt_linalg_householder_product, [data((2, 3), f), data((2,), f)])
    check("householder_product tau too long", torch.linalg.householder_product,
          L.clt_linalg_householder_product, [data((4, 2), f), data((3,), f)])
    check("vecdot dtype mix", lambda x, y: torch.linalg.vecdot(x, y),
          lambda p, q, o: L.clt_linalg_vecdot(p, q, -1, o),
          [data((3,), f), data((3,), torch.float64)])


def _sym(shape, dt, zero_diag=False):
    a = data(shape, torch.float64)
    a = a + a.transpose(-2, -1)
    if zero_diag:
        a = a - torch.diag_embed(torch.diagonal(a, 0, -2, -1))
    return a.to(dt)


def linalg3():
    """ldl_factor(_ex) and ldl_solve (LAPACK's LD and pivots exactly),
    geqrf, orgqr and ormqr against torch, with their refusals."""
    proto("clt_linalg_ldl_factor", [P, C.c_int, PP, PP])
    proto("clt_linalg_ldl_factor_ex", [P, C.c_int, PP, PP, PP])
    proto("clt_linalg_ldl_solve", [P, P, P, C.c_int, PP])
    proto("clt_geqrf", [P, PP, PP])
    proto("clt_orgqr", [P, P, PP])
    proto("clt_ormqr", [P, P, P, C.c_int, C.c_int, PP])
    TOL["la"] = ((2e-5, 2e-5), (1e-12, 1e-12))
    G.manual_seed(3303)
    for dt in FLOATS:
        for sh, zd in [((3, 3), False), ((1, 1), False), ((2, 4, 4), False), ((5, 5), True),
                       ((2, 3, 6, 6), True), ((0, 3, 3), False), ((0, 0), False),
                       ((12, 12), False), ((9, 9), True)]:
            a = _sym(sh, dt, zd)
            for herm in (0, 1):
                for k, name in ((0, "LD"), (1, "pivots")):
                    check("ldl_factor %s %s %s herm=%d" % (name, dn(dt), list(sh), herm),
                          lambda t, k=k, herm=herm:
                          torch.linalg.ldl_factor(t, hermitian=bool(herm))[k],
                          lambda p, o, k=k, herm=herm:
                          _nth(lambda q, *outs: L.clt_linalg_ldl_factor(q, herm, *outs),
                               2, k)(p, o),
                          [a], tol="la" if k == 0 else "exact", signed_zero=False)
            check("ldl_factor_ex info %s %s" % (dn(dt), list(sh)),
                  lambda t: torch.linalg.ldl_factor_ex(t).info,
                  lambda p, o: _nth(lambda q, *outs: L.clt_linalg_ldl_factor_ex(q, 0, *outs),
                                    3, 2)(p, o), [a], tol="exact")
        # a singular matrix: info, and LD as LAPACK leaves it
        z = torch.tensor([[1., 2., 3.], [2., 4., 6.], [3., 6., 0.]], dtype=dt)
        for k in range(3):
            check("ldl_factor_ex singular out %d %s" % (k, dn(dt)),
                  lambda t, k=k: torch.linalg.ldl_factor_ex(t)[k],
                  lambda p, o, k=k: _nth(lambda q, *outs: L.clt_linalg_ldl_factor_ex(q, 0, *outs),
                                         3, k)(p, o), [z], tol="la", signed_zero=False)
        for sa, sb in [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 3)), ((1, 1), (1, 1)),
                       ((6, 6), (6, 0)), ((2, 1, 5, 5), (2, 1, 5, 2)), ((3, 3), (4, 2)),
                       ((0, 3, 3), (0, 3, 1)), ((3, 3), (3,))]:
            for zd in (False, True):
                a = _sym(sa, dt, zd and sa[-1] > 1)
                LD, piv = torch.linalg.ldl_factor(a)
                check("ldl_solve %s %s %s zd=%d" % (dn(dt), list(sa), list(sb), zd),
                      lambda x, pv, y: torch.linalg.ldl_solve(x, pv, y),
                      lambda p, pv, q, o: L.clt_linalg_ldl_solve(p, pv, q, 0, o),
                      [LD, piv, data(sb, dt)], tol="la", signed_zero=False)
        LD, piv = torch.linalg.ldl_factor(_sym((3, 3), dt))
        check("ldl_solve dtype mix %s" % dn(dt), lambda x, pv, y: torch.linalg.ldl_solve(x, pv, y),
              lambda p, pv, q, o: L.clt_linalg_ldl_solve(p, pv, q, 0, o),
              [LD, piv, data((3, 2), torch.float64 if dt == torch.float32 else torch.float32)])
        check("ldl_factor not square %s" % dn(dt), lambda t: torch.linalg.ldl_factor(t)[0],
              lambda p, o: _nth(lambda q, *outs: L.clt_linalg_ldl_factor(q, 0, *outs), 2, 0)(p, o),
              [data((3, 4), dt)])
        check("ldl_factor 1-D %s" % dn(dt), lambda t: torch.linalg.ldl_factor(t)[0],
              lambda p, o: _nth(lambda q, *outs: L.clt_linalg_ldl_factor(q, 0, *outs), 2, 0)(p, o),
              [data((3,), dt)])
        for sh in [(5, 3), (4, 4), (2, 6, 2), (3, 0), (0, 3, 2), (2, 3), (1, 1), (3, 2, 5)]:
            a = data(sh, dt)
            for k, name in ((0, "a"), (1, "tau")):
                check("geqrf %s %s %s" % (name, dn(dt), list(sh)), lambda t, k=k: torch.geqrf(t)[k],
                      _nth(L.clt_geqrf, 2, k), [a], tol="la", signed_zero=False)
            if sh[-2] >= sh[-1]:
                g_, t_ = torch.geqrf(a)
                check("orgqr %s %s" % (dn(dt), list(sh)), torch.orgqr, L.clt_orgqr, [g_, t_],
                      tol="la", signed_zero=False)
        check("geqrf 1-D %s" % dn(dt), lambda t: torch.geqrf(t)[0], _nth(L.clt_geqrf, 2, 0),
              [data((3,), dt)])
        for sa, sc, ks in [((5, 3), (5, 2), None), ((4, 4), (4, 3), None),
                           ((2, 6, 2), (2, 6, 3), None), ((5, 3), (5, 2), 2),
                           ((2, 3), (2, 4), None), ((3, 0), (3, 2), None),
                           ((0, 4, 2), (0, 4, 1), None), ((5, 3), (4, 2), None),
                           ((5, 3), (5,), None), ((2, 5, 3), (5, 2), None)]:
            g_, t_ = torch.geqrf(data(sa, dt))
            if ks is not None:
                t_ = t_[..., :ks].contiguous()
            for left in (1, 0):
                for tr in (0, 1):
                    cc = sc if left or len(sc) < 2 else sc[:-2] + (sc[-1], sc[-2])
                    check("ormqr %s %s %s k=%s left=%d tr=%d"
                          % (dn(dt), list(sa), list(cc), ks, left, tr),
                          lambda x, t, y, left=left, tr=tr:
                          torch.ormqr(x, t, y, left=bool(left), transpose=bool(tr)),
                          lambda p, t, q, o, left=left, tr=tr: L.clt_ormqr(p, t, q, left, tr, o),
                          [g_, t_, data(cc, dt)], tol="la", signed_zero=False)
        check("ormqr tau too long %s" % dn(dt), torch.ormqr,
              lambda p, t, q, o: L.clt_ormqr(p, t, q, 1, 0, o),
              [data((5, 2), dt), data((3,), dt), data((5, 2), dt)])
        check("ormqr dtype mix %s" % dn(dt), torch.ormqr,
              lambda p, t, q, o: L.clt_ormqr(p, t, q, 1, 0, o),
              [data((5, 2), dt), data((2,), dt),
               data((5, 2), torch.float64 if dt == torch.float32 else torch.float32)])


def nn_shape():
    """pixel_shuffle, pixel_unshuffle, channel_shuffle, unfold, fold,
    bilinear and pad_sequence against torch; Bilinear's state_dict."""
    F = torch.nn.functional
    proto("clt_pixel_shuffle", [P, C.c_int64, PP])
    proto("clt_pixel_unshuffle", [P, C.c_int64, PP])
    proto("clt_channel_shuffle", [P, C.c_int64, PP])
    proto("clt_unfold", [P, I64P, P, PP])
    proto("clt_fold", [P, I64P, I64P, P, PP])
    proto("clt_bilinear", [P, P, P, P, PP])
    proto("clt_pad_sequence", [C.POINTER(P), C.c_size_t, C.c_int, C.c_double, PP])
    for dt in DTYPES:
        for xs, r in (((2, 8, 3, 3), 2), ((8, 3, 5), 2), ((2, 3, 9, 2, 2), 3), ((2, 8, 3, 3), 3),
                      ((4, 4), 2), ((1, 4, 2, 2), 0), ((1, 4, 2, 2), -1), ((0, 4, 2, 2), 2)):
            check("pixel_shuffle %s %s r%d" % (dn(dt), list(xs), r),
                  lambda x, r=r: F.pixel_shuffle(x, r),
                  lambda x, o, r=r: L.clt_pixel_shuffle(x, r, o), [data(xs, dt)], tol="exact")
        for xs, r in (((2, 2, 6, 6), 2), ((3, 6, 9), 3), ((2, 1, 3, 4, 4), 2), ((2, 2, 6, 6), 4),
                      ((2, 2, 6, 3), 2), ((6, 6), 2), ((1, 1, 2, 2), 0)):
            check("pixel_unshuffle %s %s r%d" % (dn(dt), list(xs), r),
                  lambda x, r=r: F.pixel_unshuffle(x, r),
                  lambda x, o, r=r: L.clt_pixel_unshuffle(x, r, o), [data(xs, dt)], tol="exact")
        for xs, g in (((2, 8, 3, 3), 2), ((2, 8, 3, 3), 4), ((3, 6, 5), 3), ((2, 6, 2, 2, 2), 2),
                      ((2, 8, 3, 3), 3), ((2, 8), 2), ((2, 4, 2), 0), ((2, 4, 2), -2),
                      ((0, 4, 2), 2)):
            check("channel_shuffle %s %s g%d" % (dn(dt), list(xs), g),
                  lambda x, g=g: F.channel_shuffle(x, g),
                  lambda x, o, g=g: L.clt_channel_shuffle(x, g, o), [data(xs, dt)], tol="exact")
    check("pixel_shuffle transposed", lambda x: F.pixel_shuffle(x, 2),
          lambda x, o: L.clt_pixel_shuffle(x, 2, o),
          [In(data((2, 8, 3, 4), torch.float32), ("T",))], tol="exact")
    check("channel_shuffle sliced", lambda x: F.channel_shuffle(x, 2),
          lambda x, o: L.clt_channel_shuffle(x, 2, o),
          [In(data((2, 8, 7, 3), torch.float64), ("S", 2, 1, 6, 2))], tol="exact")
    # unfold / fold: (kernel, dilation, padding, stride)
    blocks = [((2, 2), (1, 1), (0, 0), (1, 1)), ((2, 3), (2, 1), (1, 2), (2, 1)),
              ((3, 3), (1, 2), (1, 1), (2, 3)), ((1, 1), (1, 1), (0, 0), (1, 1)),
              ((3, 2), (1, 1), (2, 0), (1, 2))]
    for dt in FLOATS:
        for xs in ((2, 3, 5, 6), (3, 7, 4), (1, 2, 4, 4)):
            for k, d, p, s_ in blocks:
                opts = _i64s(*(d + p + s_))
                check("unfold %s %s k%s d%s p%s s%s" % (dn(dt), list(xs), k, d, p, s_),
                      lambda x, k=k, d=d, p=p, s_=s_: F.unfold(x, k, d, p, s_),
                      lambda x, o, k=k, opts=opts: L.clt_unfold(x, _i64s(*k), opts, o),
                      [data(xs, dt)], tol="exact")
                H, W = xs[-2:]
                blk = [(H + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s_[i] + 1 for i in (0, 1)]
                cs = ((xs[0],) if len(xs) == 4 else ()) + (xs[-3] * k[0] * k[1],
                                                          blk[0] * blk[1])
                check("fold %s %s into %s k%s d%s p%s s%s" % (dn(dt), list(cs), (H, W), k, d, p,
                                                               s_),
                      lambda x, k=k, d=d, p=p, s_=s_, hw=(H, W): F.fold(x, hw, k, d, p, s_),
                      lambda x, o, k=k, opts=opts, hw=(H, W):
                      L.clt_fold(x, _i64s(*hw), _i64s(*k), opts, o),
                      [data(cs, dt)], tol="tr")
    x = data((2, 3, 5, 5), torch.float32)
    for k, d, p, s_ in (((6, 6), (1, 1), (0, 0), (1, 1)), ((0, 2), (1, 1), (0, 0), (1, 1)),
                        ((2, 2), (0, 1), (0, 0), (1, 1)), ((2, 2), (1, 1), (-1, 0), (1, 1)),
                        ((2, 2), (1, 1), (0, 0), (1, 0))):
        check("unfold refused k%s d%s p%s s%s" % (k, d, p, s_),
              lambda x, k=k, d=d, p=p, s_=s_: F.unfold(x, k, d, p, s_),
              lambda x, o, k=k, opts=_i64s(*(d + p + s_)): L.clt_unfold(x, _i64s(*k), opts, o),
              [x])
    check("unfold int64 refused", lambda x: F.unfold(x, 2),
          lambda x, o: L.clt_unfold(x, _i64s(2, 2), None, o), [data((1, 2, 3, 3), torch.int64)])
    check("unfold 2-D refused", lambda x: F.unfold(x, 2),
          lambda x, o: L.clt_unfold(x, _i64s(2, 2), None, o), [data((3, 3), torch.float32)],
          expect_error=RuntimeError("2-D"))
    c = data((2, 12, 9), torch.float64)
    for hw, k in (((4, 5), (2, 2)), ((4, 4), (2, 3)), ((4, 4), (5, 5)), ((0, 4), (2, 2))):
        check("fold refused into %s k%s" % (hw, k), lambda x, hw=hw, k=k: F.fold(x, hw, k),
              lambda x, o, hw=hw, k=k: L.clt_fold(x, _i64s(*hw), _i64s(*k), None, o), [c])
    check("fold int64 refused", lambda x: F.fold(x, (4, 4), 2),
          lambda x, o: L.clt_fold(x, _i64s(4, 4), _i64s(2, 2), None, o),
          [data((2, 12, 9), torch.int64)])
    check("fold transposed", lambda x: F.fold(x, (4, 4), 2),
          lambda x, o: L.clt_fold(x, _i64s(4, 4), _i64s(2, 2), None, o),
          [In(data((2, 12, 9), torch.float32), ("T",))], tol="tr")
    # bilinear
    for dt in FLOATS:
        for s1, s2, ws, bias in (((4, 3), (4, 5), (6, 3, 5), True), ((3,), (5,), (2, 3, 5), True),
                                 ((2, 3, 3), (2, 3, 4), (5, 3, 4), False),
                                 ((0, 3), (0, 5), (6, 3, 5), True),
                                 ((4, 3), (3, 5), (6, 3, 5), True),
                                 ((4, 3), (5,), (6, 3, 5), True), ((4, 3), (4, 4), (6, 3, 5), True),
                                 ((4, 4), (4, 5), (6, 3, 5), True), ((4, 3), (4, 5), (3, 5), True)):
            ins = [data(s1, dt, lo=-2, hi=2), data(s2, dt, lo=-2, hi=2), data(ws, dt, lo=-1, hi=1)]
            if bias:
                ins.append(data((ws[0],), dt))
            check("bilinear %s %s %s w%s bias=%d" % (dn(dt), list(s1), list(s2), list(ws), bias),
                  lambda a, b, w, bb=None: F.bilinear(a, b, w, bb),
                  lambda a, b, w, *r: L.clt_bilinear(a, b, w, r[0] if len(r) > 1 else None, r[-1]),
                  ins, tol="mm")
    check("bilinear bias size refused", lambda a, b, w, bb: F.bilinear(a, b, w, bb),
          lambda a, b, w, bb, o: L.clt_bilinear(a, b, w, bb, o),
          [data((4, 3), torch.float32), data((4, 5), torch.float32),
           data((6, 3, 5), torch.float32), data((5,), torch.float32)])
    check("bilinear dtypes refused", lambda a, b, w: F.bilinear(a, b, w),
          lambda a, b, w, o: L.clt_bilinear(a, b, w, None, o),
          [data((4, 3), torch.float64), data((4, 5), torch.float32),
           data((6, 3, 5), torch.float32)])

    # pad_sequence
    def padseq(bf, v):
        def c(*a):
            xs = a[:-1]
            return L.clt_pad_sequence((P * max(len(xs), 1))(*xs), len(xs), bf, v, a[-1])
        return c
    from torch.nn.utils.rnn import pad_sequence
    for dt in (torch.float32, torch.float64, torch.int64, torch.int32, torch.bool):
        for shapes in ([(2, 3), (4, 3), (1, 3)], [(5,), (2,), (0,)], [(3, 2, 2)],
                       [(2, 3), (4, 2)], [(0, 2), (0, 2)], [(2, 2, 1), (2, 2)]):
            for bf in (0, 1):
                v = 0 if dt == torch.bool else -2
                check("pad_sequence %s %s batch_first=%d" % (dn(dt), shapes, bf),
                      lambda *xs, bf=bf, v=v: pad_sequence(list(xs), bool(bf), v),
                      padseq(bf, v), [data(sh, dt) for sh in shapes], tol="exact")
    check("pad_sequence mixed dtypes", lambda a, b: pad_sequence([a, b], True, 1.0),
          padseq(1, 1.0), [data((2, 3), torch.float32), data((3, 3), torch.float64)],
          tol="exact")
    check("pad_sequence 0-d refused", lambda a, b: pad_sequence([a, b]), padseq(0, 0.0),
          [data((), torch.float32), data((2,), torch.float32)])
    check("pad_sequence empty refused", lambda: pad_sequence([]), padseq(0, 0.0), [])
    check("pad_sequence transposed", lambda a, b: pad_sequence([a, b], True, 0.5),
          padseq(1, 0.5), [In(data((3, 4), torch.float32), ("T",)), data((2, 3), torch.float32)],
          tol="exact")
    nn_shape_bags()
    nn_shape_state_dict()


def embedding_padding():
    """F.embedding with padding_idx (clt_embedding_ex) against torch: the
    forward for padding_idx in and out of the indices, negative, NULL, int32
    and int64 indices, a transposed weight; padding_idx out of range refused."""
    F = torch.nn.functional
    proto("clt_embedding_ex", [P, P, I64P, PP])

    def emb(pad):
        return lambda w, i, o: L.clt_embedding_ex(w, i, _i64s(pad) if pad is not None else None,
                                                  o)

    def temb(pad):
        return lambda w, i: F.embedding(i, w, padding_idx=pad)
    idx = torch.tensor([[1, 2, 4], [5, 4, 0]])
    for dt in FLOATS:
        w = data((6, 3), dt)
        for pad in (None, 4, 3, -1, -6, 0):
            for it in (torch.int64, torch.int32):
                check("embedding %s padding_idx=%s %s" % (dn(dt), pad, dn(it)), temb(pad),
                      emb(pad), [w, idx.to(it)], tol="exact")
        check("embedding %s padding_idx transposed weight" % dn(dt), temb(2), emb(2),
              [In(data((6, 3), dt), ("T",)), idx], tol="exact")
    w = data((6, 3), torch.float32)
    for pad in (6, -7, 100):
        check("embedding padding_idx %d refused" % pad, temb(pad), emb(pad), [w, idx])
    check("embedding padding_idx 1-D weight refused", temb(0), emb(0),
          [data((6,), torch.float32), idx])


class _EmbOpts(C.Structure):
    _fields_ = [("padding_idx", I64P), ("max_norm", C.POINTER(C.c_double)),
                ("norm_type", C.c_double), ("scale_grad_by_freq", C.c_int), ("sparse", C.c_int)]


class _BagOpts(C.Structure):
    _fields_ = [("mode", C.c_int), ("padding_idx", I64P), ("include_last_offset", C.c_int),
                ("max_norm", C.POINTER(C.c_double)), ("norm_type", C.c_double),
                ("scale_grad_by_freq", C.c_int), ("sparse", C.c_int)]


class _AdagradOpts(C.Structure):
    _fields_ = [("lr", C.c_double), ("lr_decay", C.c_double), ("weight_decay", C.c_double),
                ("initial_accumulator_value", C.c_double), ("eps", C.c_double)]


class _SparseAdamOpts(C.Structure):
    _fields_ = [("lr", C.c_double), ("beta1", C.c_double), ("beta2", C.c_double),
                ("eps", C.c_double)]


def sparse_embedding_optim():
    """nn.Embedding(sparse=True) and nn.EmbeddingBag(sparse=True) (made with
    from_pretrained, as clt_embedding_layer_from_pretrained and
    clt_embedding_bag_layer_from_pretrained) against torch: the weight's
    sparse gradient after the first backward (indices, values exactly,
    is_coalesced), then a few steps of SGD (plain, momentum with nesterov),
    Adagrad (lr_decay) and SparseAdam (torch's defaults, and others), each
    with optimizer.zero_grad() (torch 1.13's set_to_none=False) between
    steps, the weights after every step (float32 rtol 1e-6, float64 1e-12);
    and torch's refusals (Adam, SGD with weight_decay, Adagrad with
    weight_decay, SparseAdam with a dense gradient).  SGD without momentum
    bit for bit (each entry added in turn, fused, as torch's CPU add_), SGD
    with momentum, dampening, nesterov.  clip_grad_norm_ of a sparse
    gradient beside a dense one (norm_type 2, 1, 3; inf refused as torch;
    the sparse one left unscaled, as torch 1.13 leaves it), and the layout
    zero_() leaves."""
    proto("clt_embedding_layer_from_pretrained", [P, C.c_int, C.POINTER(_EmbOpts), PP])
    proto("clt_embedding_bag_layer_from_pretrained", [P, C.c_int, C.POINTER(_BagOpts), PP])
    proto("clt_module_param", [P, C.c_char_p], P)
    proto("clt_module_forward", [P, P, PP])
    proto("clt_embedding_bag_forward", [P, P, P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_sgd", [PP, C.c_size_t, C.POINTER(SgdOpts), PP])
    proto("clt_adagrad", [PP, C.c_size_t, C.POINTER(_AdagradOpts), PP])
    proto("clt_sparse_adam", [PP, C.c_size_t, C.POINTER(_SparseAdamOpts), PP])
    proto("clt_adam", [PP, C.c_size_t, P, PP])
    proto("clt_optimizer_step", [P])
    proto("clt_optimizer_zero_grad", [P, C.c_int])
    proto("clt_optimizer_free", [P], None)
    proto("clt_grad_is_sparse", [P], C.c_int)
    proto("clt_grad_sparse", [P, PP])
    proto("clt_sparse_indices", [P, PP])
    proto("clt_sparse_values", [P, PP])
    proto("clt_sparse_is_coalesced", [P], C.c_int)
    proto("clt_sparse_free", [P], None)
    proto("clt_mul", [P, P, PP])
    proto("clt_sum", [P, PP])
    torch_opts = {
        "SGD lr=0.1": (lambda ps: torch.optim.SGD(ps, lr=0.1),
                       lambda pp: L.clt_sgd(pp[0], 1, C.byref(SgdOpts(0.1, 0, 0, 0, 0)), pp[1])),
        "SGD momentum=0.9 nesterov": (
            lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
            lambda pp: L.clt_sgd(pp[0], 1, C.byref(SgdOpts(0.05, 0.9, 0, 0, 1)), pp[1])),
        "SGD momentum=0.9": (
            lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
            lambda pp: L.clt_sgd(pp[0], 1, C.byref(SgdOpts(0.05, 0.9, 0, 0, 0)), pp[1])),
        "SGD momentum=0.5 dampening=0.3": (
            lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.5, dampening=0.3),
            lambda pp: L.clt_sgd(pp[0], 1, C.byref(SgdOpts(0.1, 0.5, 0.3, 0, 0)), pp[1])),
        "Adagrad lr_decay=0.01": (
            lambda ps: torch.optim.Adagrad(ps, lr=0.1, lr_decay=0.01),
            lambda pp: L.clt_adagrad(pp[0], 1, C.byref(_AdagradOpts(0.1, 0.01, 0, 0, 1e-10)),
                                     pp[1])),
        "SparseAdam defaults": (
            lambda ps: torch.optim.SparseAdam(ps),
            lambda pp: L.clt_sparse_adam(pp[0], 1, None, pp[1])),
        "SparseAdam lr=0.05 betas=(0.8, 0.9) eps=1e-3": (
            lambda ps: torch.optim.SparseAdam(ps, lr=0.05, betas=(0.8, 0.9), eps=1e-3),
            lambda pp: L.clt_sparse_adam(pp[0], 1, C.byref(_SparseAdamOpts(0.05, 0.8, 0.9, 1e-3)),
                                         pp[1])),
    }
    steps_idx = [torch.tensor([[1, 3, 1], [5, 0, 3]]), torch.tensor([[2, 2, 2], [4, 1, 0]]),
                 torch.tensor([[3, 5, 5], [5, 5, 3]]), torch.tensor([[0, 1, 2], [3, 4, 5]])]
    keep = []

    def dl(h):
        return torch.from_numpy(download(h)[0])

    def close(got, want, rtol, oname):
        # SGD without momentum adds each entry in turn, fused, as torch's
        # AVX2 add_ of a sparse gradient: the same bits.  The others keep
        # dense state (SGD's momentum buffer, where torch's is sparse and
        # adds a row looked up twice in turn) or coalesce, which differ by
        # an ulp of the operands, and a weight that lands near 0 shows that
        # ulp as a large relative error: atol at the weights' scale.
        if oname == "SGD lr=0.1":
            return torch.equal(got, want)
        return torch.allclose(got, want, rtol=rtol, atol=rtol * want.abs().max().item())

    def release(*hs):
        for h in hs:
            if h:
                L.clt_tensor_free(h)

    for dt in FLOATS:
        rtol = 1e-6 if dt == torch.float32 else 1e-12
        for bag in (False, True):
            for pad in (None, 2):
                for oname, (topt_f, copt_f) in torch_opts.items():
                    name = "%s(sparse=True%s) %s %s" % ("EmbeddingBag" if bag else "Embedding",
                                                         ", padding_idx=2" if pad else "",
                                                         oname, dn(dt))
                    w0 = data((6, 4), dt)
                    if bag:
                        tm = torch.nn.EmbeddingBag.from_pretrained(
                            w0.clone(), freeze=False, mode="sum", sparse=True, padding_idx=pad)
                        o = _BagOpts(0, _i64s(pad) if pad is not None else None, 0, None, 2.0, 0,
                                     1)
                    else:
                        tm = torch.nn.Embedding.from_pretrained(w0.clone(), freeze=False,
                                                                sparse=True, padding_idx=pad)
                        o = _EmbOpts(_i64s(pad) if pad is not None else None, None, 2.0, 0, 1)
                    keep.append(o)
                    topt = topt_f(tm.parameters())
                    cw, cm, opt = upload(w0), P(), P()
                    try:
                        st = (L.clt_embedding_bag_layer_from_pretrained if bag else
                              L.clt_embedding_layer_from_pretrained)(cw, 0, C.byref(o),
                                                                     C.byref(cm))
                        if st:
                            fail(name, L.clt_last_error().decode())
                            continue
                        w = L.clt_module_param(cm, b"weight")
                        if copt_f(((P * 1)(w), C.byref(opt))):
                            fail(name, L.clt_last_error().decode())
                            continue
                        worst = None
                        for s, idx in enumerate(steps_idx):
                            cg = data((2, 4) if bag else (2, 3, 4), dt)
                            psw = data((6,), dt) if bag else None
                            topt.zero_grad()
                            if bag:
                                ty = tm(idx.reshape(-1), torch.tensor([0, 3]), psw)
                            else:
                                ty = tm(idx)
                            ty.backward(cg)
                            topt.step()
                            L.clt_optimizer_zero_grad(opt, 0)
                            ci, cy, cgo, cpsw, coff = upload(idx), P(), upload(cg), None, None
                            if bag:
                                release(ci)
                                ci, coff, cpsw = (upload(idx.reshape(-1)),
                                                  upload(torch.tensor([0, 3])), upload(psw))
                                st = L.clt_embedding_bag_forward(cm, ci, coff, cpsw, C.byref(cy))
                            else:
                                st = L.clt_module_forward(cm, ci, C.byref(cy))
                            if not st:
                                st = L.clt_backward(cy, cgo, 0)
                            if not st and s == 0:
                                # the gradient's layout, as torch's
                                g = tm.weight.grad
                                sp, si, sv = P(), P(), P()
                                good = (L.clt_grad_is_sparse(w) and
                                        not L.clt_grad_sparse(w, C.byref(sp)) and
                                        not L.clt_sparse_indices(sp, C.byref(si)) and
                                        not L.clt_sparse_values(sp, C.byref(sv)))
                                if good:
                                    gi, gv = dl(si), dl(sv)
                                    ok(name + " grad layout",
                                       torch.equal(gi, g._indices()) and
                                       torch.equal(gv, g._values()) and
                                       bool(L.clt_sparse_is_coalesced(sp)) == g.is_coalesced(),
                                       "indices %s / %s" % (gi.tolist(), g._indices().tolist()))
                                else:
                                    fail(name + " grad layout", L.clt_last_error().decode())
                                release(si, sv)
                                L.clt_sparse_free(sp)
                            if not st:
                                st = L.clt_optimizer_step(opt)
                            release(ci, cy, cgo, cpsw, coff)
                            if st:
                                worst = "step %d: %s" % (s, L.clt_last_error().decode())
                                break
                            got, want = dl(w), tm.weight.detach()
                            if not close(got, want, rtol, oname) and worst is None:
                                worst = "step %d: max |diff| %g" % (
                                    s, (got - want).abs().max().item())
                        ok(name + " weights after each step", worst is None, worst or "")
                    finally:
                        L.clt_optimizer_free(opt)
                        L.clt_module_free(cm)
                        release(cw)
    # refusals, before anything changes
    w0 = data((6, 4), torch.float32)
    cases = [("Adam", lambda pp: L.clt_adam(pp[0], 1, None, pp[1]),
              "Adam does not support sparse gradients"),
             ("SGD weight_decay", lambda pp: L.clt_sgd(pp[0], 1, C.byref(SgdOpts(0.1, 0, 0, 0.1, 0)),
                                                      pp[1]),
              "add(sparse, dense) is not supported"),
             ("Adagrad weight_decay",
              lambda pp: L.clt_adagrad(pp[0], 1, C.byref(_AdagradOpts(0.1, 0, 0.1, 0, 1e-10)),
                                       pp[1]),
              "weight_decay option is not compatible with sparse gradients")]
    for oname, copt_f, text in cases:
        tm = torch.nn.Embedding.from_pretrained(w0.clone(), freeze=False, sparse=True)
        tm(torch.tensor([1, 2])).sum().backward()
        topt = {"Adam": lambda: torch.optim.Adam(tm.parameters()),
                "SGD weight_decay": lambda: torch.optim.SGD(tm.parameters(), lr=0.1,
                                                            weight_decay=0.1),
                "Adagrad weight_decay": lambda: torch.optim.Adagrad(tm.parameters(), lr=0.1,
                                                                    weight_decay=0.1)}[oname]()
        try:
            topt.step()
            torch_msg = None
        except RuntimeError as e:
            torch_msg = str(e)
        o = _EmbOpts(None, None, 2.0, 0, 1)
        cw, cm, opt, ci, cy, cs = upload(w0), P(), P(), upload(torch.tensor([1, 2])), P(), P()
        try:
            L.clt_embedding_layer_from_pretrained(cw, 0, C.byref(o), C.byref(cm))
            w = L.clt_module_param(cm, b"weight")
            copt_f(((P * 1)(w), C.byref(opt)))
            L.clt_module_forward(cm, ci, C.byref(cy))
            L.clt_sum(cy, C.byref(cs))
            L.clt_backward(cs, None, 0)
            st = L.clt_optimizer_step(opt)
            msg = L.clt_last_error().decode()
            ok("sparse gradient refused by %s as torch" % oname,
               st != 0 and torch_msg is not None and text in msg and text in torch_msg
               and torch.equal(dl(w), w0), "%s / %s" % (msg, torch_msg))
        finally:
            L.clt_optimizer_free(opt)
            L.clt_module_free(cm)
            release(cw, ci, cy, cs)
    # clip_grad_norm_ of a sparse gradient (torch.norm of it: its coalesced
    # values'; the entries left as they were, torch 1.13's detach().mul_()
    # scaling a copy of them), beside a dense one (scaled); the inf-norm
    # refused as torch refuses it; zero_() then its layout
    proto("clt_clip_grad_norm", [PP, C.c_size_t, C.c_double, C.c_double, PP])
    proto("clt_zero_grad", [P, C.c_int])
    proto("clt_sparse_sparse_dim", [P], C.c_int)
    proto("clt_sparse_dense_dim", [P], C.c_int)
    proto("clt_grad", [P, PP])
    proto("clt_set_requires_grad", [P, C.c_int])
    for dt in FLOATS:
        for norm_type in (2.0, 1.0, 3.0, float("inf")):
            name = "clip_grad_norm_ sparse Embedding grad norm_type=%g %s" % (norm_type, dn(dt))
            w0, q0 = data((6, 4), dt), data((5,), dt)
            idx, cg = torch.tensor([1, 3, 1, 4, 3]), data((5, 4), dt)
            tm = torch.nn.Embedding.from_pretrained(w0.clone(), freeze=False, sparse=True)
            tq = q0.clone().requires_grad_()
            tm(idx).backward(cg)
            (tq * tq).sum().backward()
            try:
                tn = torch.nn.utils.clip_grad_norm_([tm.weight, tq], 0.5, norm_type)
                tg, tqg = tm.weight.grad, tq.grad
                torch_err = None
            except (RuntimeError, NotImplementedError) as e:
                torch_err = str(e)
            o = _EmbOpts(None, None, 2.0, 0, 1)
            cw, cm, cq, ci, cy, cgo, cs, cn = (upload(w0), P(), upload(q0), upload(idx), P(),
                                               upload(cg), P(), P())
            sp, si, sv, cqg = P(), P(), P(), P()
            try:
                L.clt_embedding_layer_from_pretrained(cw, 0, C.byref(o), C.byref(cm))
                w = L.clt_module_param(cm, b"weight")
                L.clt_set_requires_grad(cq, 1)
                L.clt_module_forward(cm, ci, C.byref(cy))
                L.clt_backward(cy, cgo, 0)
                cq2 = P()
                L.clt_mul(cq, cq, C.byref(cq2))
                L.clt_sum(cq2, C.byref(cs))
                release(cq2)
                L.clt_backward(cs, None, 0)
                st = L.clt_clip_grad_norm((P * 2)(w, cq), 2, 0.5, norm_type, C.byref(cn))
                msg = L.clt_last_error().decode()
                if torch_err is not None:
                    ok(name + " refused as torch", st != 0 and "aten::max" in msg
                       and "aten::max" in torch_err and not cn, msg)
                    continue
                if st or L.clt_grad_sparse(w, C.byref(sp)) or \
                        L.clt_sparse_indices(sp, C.byref(si)) or \
                        L.clt_sparse_values(sp, C.byref(sv)) or L.clt_grad(cq, C.byref(cqg)):
                    fail(name, L.clt_last_error().decode())
                    continue
                rtol = 1e-6 if dt == torch.float32 else 1e-12
                gn, gv, gi, gq = dl(cn), dl(sv), dl(si), dl(cqg)
                ok(name, torch.allclose(gn, tn, rtol=rtol) and torch.equal(gi, tg._indices())
                   and torch.equal(gv, tg._values()) and torch.equal(gv, cg)
                   and torch.allclose(gq, tqg, rtol=rtol, atol=rtol)
                   and bool(L.clt_sparse_is_coalesced(sp)) == tg.is_coalesced(),
                   "norm %s / %s; indices %s / %s; values |diff| %g; dense |diff| %g" % (
                       gn.item(), tn.item(), gi.tolist(), tg._indices().tolist(),
                       (gv - tg._values()).abs().max().item(), (gq - tqg).abs().max().item()))
                # zero_(): sparse_resize_and_clear_ to every dimension sparse
                tg.zero_()
                L.clt_sparse_free(sp)
                release(si, sv)
                sp, si, sv = P(), P(), P()
                L.clt_zero_grad(w, 0)
                if L.clt_grad_sparse(w, C.byref(sp)) or \
                        L.clt_sparse_indices(sp, C.byref(si)) or \
                        L.clt_sparse_values(sp, C.byref(sv)):
                    fail(name + " zero_() layout", L.clt_last_error().decode())
                    continue
                gi, gv = dl(si), dl(sv)
                ok(name + " zero_() layout",
                   gi.shape == tg._indices().shape and gv.shape == tg._values().shape
                   and L.clt_sparse_sparse_dim(sp) == tg.sparse_dim()
                   and L.clt_sparse_dense_dim(sp) == tg.dense_dim()
                   and bool(L.clt_sparse_is_coalesced(sp)) == tg.is_coalesced(),
                   "indices %s values %s / %s %s" % (tuple(gi.shape), tuple(gv.shape),
                                                     tuple(tg._indices().shape),
                                                     tuple(tg._values().shape)))
            finally:
                L.clt_sparse_free(sp)
                release(si, sv, cqg, cw, cq, ci, cy, cgo, cs, cn)
                L.clt_module_free(cm)


def embedding_opts():
    """F.embedding and F.embedding_bag with max_norm, norm_type and
    scale_grad_by_freq (clt_embedding_with_opts, clt_embedding_bag_with_opts)
    against torch: the values read after the renorm and the weight after it
    (norm_type 2, 1, inf, 0.5; max_norm below and above the rows' norms; a
    row named twice; padding entries), the weight's gradient with
    scale_grad_by_freq (padding_idx, int32 indices; bags sum, sum with
    per-sample weights, mean, 2-D input), and torch's refusals (max mode
    with scale_grad_by_freq, a 1-D weight, float indices, padding_idx out
    of range)."""
    F = torch.nn.functional
    proto("clt_embedding_with_opts", [P, P, C.POINTER(_EmbOpts), PP])
    proto("clt_embedding_bag_with_opts", [P, P, P, P, C.POINTER(_BagOpts), PP])
    proto("clt_clone", [P, PP])
    keep = []

    def eo(pad=None, mn=None, p=2.0, freq=0):
        o = _EmbOpts(_i64s(pad) if pad is not None else None,
                     C.pointer(C.c_double(mn)) if mn is not None else None, p, freq)
        keep.append(o)
        return o

    def bo(mode, pad=None, last=0, mn=None, p=2.0, freq=0):
        o = _BagOpts({"sum": 0, "mean": 1, "max": 2}[mode],
                     _i64s(pad) if pad is not None else None, last,
                     C.pointer(C.c_double(mn)) if mn is not None else None, p, freq)
        keep.append(o)
        return o

    def cemb(o, weight_after=False):
        def f(w, i, out):
            st = L.clt_embedding_with_opts(w, i, C.byref(o), out)
            if st or not weight_after:
                return st
            L.clt_tensor_free(out._obj)
            return L.clt_clone(w, out)
        return f

    def temb(pad=None, mn=None, p=2.0, weight_after=False):
        def f(w, i):
            w = w.clone()
            y = F.embedding(i, w, padding_idx=pad, max_norm=mn, norm_type=p)
            return w if weight_after else y
        return f

    def cbag(o, weight_after=False, with_off=True, with_psw=False):
        def f(*a):
            w, x, out = a[0], a[1], a[-1]
            off = a[2] if with_off else None
            psw = a[2 + with_off] if with_psw else None
            st = L.clt_embedding_bag_with_opts(w, x, off, psw, C.byref(o), out)
            if st or not weight_after:
                return st
            L.clt_tensor_free(out._obj)
            return L.clt_clone(w, out)
        return f

    def tbag(mode, pad=None, last=False, mn=None, p=2.0, freq=False, weight_after=False,
             with_off=True, with_psw=False):
        def f(*a):
            w, x = a[0].clone(), a[1]
            off = a[2] if with_off else None
            psw = a[2 + with_off] if with_psw else None
            y = F.embedding_bag(x, w, off, max_norm=mn, norm_type=p, mode=mode,
                                scale_grad_by_freq=freq, per_sample_weights=psw,
                                include_last_offset=last, padding_idx=pad)
            return w if weight_after else y
        return f

    idx = torch.tensor([[1, 2, 4], [5, 4, 1]])
    tol = {torch.float32: "red", torch.float64: "tr"}
    for dt in FLOATS:
        w = data((6, 3), dt) * 2
        for mn in (0.5, 3.0, 100.0):
            for p in (2.0, 1.0, float("inf"), 0.5):
                for it in (torch.int64, torch.int32):
                    tag = "embedding %s max_norm=%g norm_type=%g %s" % (dn(dt), mn, p, dn(it))
                    check(tag, temb(None, mn, p), cemb(eo(None, mn, p)), [w, idx.to(it)],
                          tol=tol[dt])
                    check(tag + " weight after", temb(None, mn, p, True),
                          cemb(eo(None, mn, p), True), [w, idx.to(it)], tol=tol[dt])
        check("embedding %s max_norm padding_idx=4" % dn(dt), temb(4, 1.0),
              cemb(eo(4, 1.0)), [w, idx], tol=tol[dt])
        check("embedding %s max_norm transposed weight" % dn(dt), temb(None, 1.0, 2.0, True),
              cemb(eo(None, 1.0), True), [In(data((6, 3), dt) * 2, ("T",)), idx], tol=tol[dt])
        x = torch.tensor([1, 2, 4, 5, 4, 3, 2, 0, 5, 5])
        off = torch.tensor([0, 2, 2, 5])
        for mode in ("sum", "mean", "max"):
            for pad in (None, 4):
                tag = "embedding_bag %s %s max_norm pad=%s" % (dn(dt), mode, pad)
                check(tag, tbag(mode, pad, mn=1.0), cbag(bo(mode, pad, mn=1.0)), [w, x, off],
                      tol=tol[dt])
                check(tag + " weight after", tbag(mode, pad, mn=1.0, weight_after=True),
                      cbag(bo(mode, pad, mn=1.0), True), [w, x, off], tol=tol[dt])
        check("embedding_bag %s 2-D max_norm norm_type=1" % dn(dt),
              tbag("mean", mn=1.0, p=1.0, weight_after=True, with_off=False),
              cbag(bo("mean", mn=1.0, p=1.0), True, with_off=False), [w, x.view(2, 5)],
              tol=tol[dt])
    # refusals: torch's and ours leave the weight
    w = data((6, 3), torch.float32)
    check("embedding_bag max scale_grad_by_freq refused", tbag("max", freq=True),
          cbag(bo("max", freq=1)), [w, x, off])
    check("embedding_bag max scale_grad_by_freq max_norm refused", tbag("max", mn=1.0, freq=True),
          cbag(bo("max", mn=1.0, freq=1)), [w, x, off])
    check("embedding max_norm 1-D weight refused", temb(None, 1.0), cemb(eo(None, 1.0)),
          [data((6,), torch.float32), idx])
    check("embedding max_norm float indices refused", temb(None, 1.0), cemb(eo(None, 1.0)),
          [w, idx.float()])
    check("embedding max_norm padding_idx 6 refused", temb(6, 1.0), cemb(eo(6, 1.0)), [w, idx])
    check("embedding_bag max_norm padding_idx 6 refused", tbag("sum", 6, mn=1.0),
          cbag(bo("sum", 6, mn=1.0)), [w, x, off])

    # gradients with scale_grad_by_freq, float64
    def grads(tag, tfn, cfn, w, rest):
        tw = w.clone().requires_grad_()
        y = tfn(tw, *rest)
        r = torch.rand(y.shape, generator=G, dtype=torch.float64) * 2 - 1
        (y * r).sum().backward()
        hs = [upload(t) for t in [w] + rest]
        out, rp, g = P(), upload(r), P()
        try:
            L.clt_set_requires_grad(hs[0], 1)
            if cfn(*hs, C.byref(out)) or L.clt_backward(out, rp, 0) or \
                    L.clt_grad(hs[0], C.byref(g)) or not g.value:
                return fail(tag, L.clt_last_error().decode())
            got = download(g)[0]
            L.clt_tensor_free(g)
            ok(tag, np.allclose(got, tw.grad.numpy(), rtol=1e-12, atol=1e-14),
               "max difference %g" % np.abs(got - tw.grad.numpy()).max())
        finally:
            for h in hs + [out, rp]:
                L.clt_tensor_free(h)

    w = data((6, 3), torch.float64)
    idx = torch.tensor([[1, 2, 4, 4], [5, 4, 1, 4]])
    for pad in (None, 4, 1):
        for it in (torch.int64, torch.int32):
            grads("embedding scale_grad_by_freq grad pad=%s %s" % (pad, dn(it)),
                  lambda tw, i, pad=pad: F.embedding(i, tw, padding_idx=pad,
                                                     scale_grad_by_freq=True),
                  cemb(eo(pad, freq=1)), w, [idx.to(it)])
    grads("embedding scale_grad_by_freq max_norm grad",
          lambda tw, i: F.embedding(i, tw, max_norm=0.7, scale_grad_by_freq=True),
          cemb(eo(None, 0.7, freq=1)), w, [idx])
    # torch 1.13's CPU embedding_bag backward divides each index's entries
    # by the count of another index (x below gives sum-mode gradients
    # [1, 1, 1, 0.5, 2, 1.5] for ones, where each row's count gives ones):
    # the reference is F.embedding's scale_grad_by_freq, reduced bag by bag.
    def ref_bag(tw, x, off=None, psw=None, mode="sum", pad=None, last=False):
        if off is None:
            off = torch.arange(0, x.numel(), x.shape[1])
        x = x.reshape(-1)
        e = F.embedding(x, tw, padding_idx=pad, scale_grad_by_freq=True)
        keep = (x != (pad if pad is not None else -1)).to(tw.dtype)
        e = e * keep[:, None] * (psw[:, None] if psw is not None else 1)
        ends = list(off[1:]) + ([] if last else [x.numel()])
        rows = []
        for b, end in enumerate(ends):
            r = e[off[b]:end].sum(0)
            if mode == "mean":
                r = r / max(1.0, float(keep[off[b]:end].sum()))
            rows.append(r)
        return torch.stack(rows)

    psw = data((10,), torch.float64)
    for mode in ("sum", "mean"):
        for pad in (None, 4):
            for last in (0, 1):
                grads("embedding_bag %s scale_grad_by_freq grad pad=%s last=%d" % (mode, pad, last),
                      lambda tw, x, o, mode=mode, pad=pad, last=last: ref_bag(
                          tw, x, o, mode=mode, pad=pad, last=bool(last)),
                      cbag(bo(mode, pad, last, freq=1)), w, [x, off])
        grads("embedding_bag %s scale_grad_by_freq 2-D grad" % mode,
              lambda tw, x, mode=mode: ref_bag(tw, x, mode=mode),
              cbag(bo(mode, freq=1), with_off=False), w, [x.view(2, 5)])
    grads("embedding_bag sum per_sample_weights scale_grad_by_freq grad",
          lambda tw, x, o, p: ref_bag(tw, x, o, psw=p),
          cbag(bo("sum", freq=1), with_psw=True), w, [x, off, psw])
    # the reference agrees with torch on an input where the count torch's
    # kernel reads is each index's own
    xs = torch.tensor([0, 1, 2, 2, 3, 3])
    grads("embedding_bag mean scale_grad_by_freq grad against torch (sorted input)",
          lambda tw, x, o: F.embedding_bag(x, tw, o, mode="mean", scale_grad_by_freq=True),
          cbag(bo("mean", freq=1)), w, [xs, torch.tensor([0, 3])])


def nn_shape_bags():
    """embedding_bag against torch: the three modes, offsets or 2-D input,
    per-sample weights, padding_idx, include_last_offset, refusals."""
    F = torch.nn.functional
    proto("clt_embedding_bag", [P, P, P, C.c_int, P, I64P, C.c_int, PP])
    modes = {"sum": 0, "mean": 1, "max": 2}

    def bag(mode, pad, last, with_off, with_psw):
        def c(*a):
            w, x = a[0], a[1]
            off = a[2] if with_off else None
            psw = a[2 + with_off] if with_psw else None
            return L.clt_embedding_bag(w, x, off, modes.get(mode, 7), psw,
                                       _i64s(pad) if pad is not None else None, last, a[-1])
        return c

    def tbag(mode, pad, last, with_off, with_psw):
        def t(*a):
            w, x = a[0], a[1]
            off = a[2] if with_off else None
            psw = a[2 + with_off] if with_psw else None
            return F.embedding_bag(x, w, off, mode=mode, per_sample_weights=psw,
                                   include_last_offset=bool(last), padding_idx=pad)
        return t
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 0, 5, 5])
    for dt in FLOATS:
        w = data((6, 3), dt)
        for mode in ("sum", "mean", "max"):
            # (torch 1.13's CPU kernel corrupts its heap with no offsets, and with
            # include_last_offset on a 2-D input: not compared)
            for off, last in (([0, 2, 2, 5], 0), ([0, 3, 3, 7, 10], 1), ([0], 0),
                              ([0, 10], 1), ([0, 4, 4, 4], 0)):
                for pad in (None, 4, -1):
                    for it in (torch.int64, torch.int32):
                        o = torch.tensor(off, dtype=it)
                        check("embedding_bag %s %s offsets=%s last=%d pad=%s %s"
                              % (dn(dt), mode, off, last, pad, dn(it)),
                              tbag(mode, pad, last, 1, 0), bag(mode, pad, last, 1, 0),
                              [w, idx.to(it), o], tol="red")
            x2 = torch.tensor([[1, 2, 4], [5, 4, 3], [2, 0, 5]])
            for pad, last in ((None, 0), (2, 0)):
                check("embedding_bag %s %s 2-D pad=%s last=%d" % (dn(dt), mode, pad, last),
                      tbag(mode, pad, last, 0, 0), bag(mode, pad, last, 0, 0), [w, x2],
                      tol="red")
        for pad in (None, 2):
            check("embedding_bag %s per_sample_weights pad=%s" % (dn(dt), pad),
                  tbag("sum", pad, 0, 1, 1), bag("sum", pad, 0, 1, 1),
                  [w, idx, torch.tensor([0, 3, 3, 6]), data((10,), dt)], tol="red")
            check("embedding_bag %s per_sample_weights 2-D pad=%s" % (dn(dt), pad),
                  tbag("sum", pad, 0, 0, 1), bag("sum", pad, 0, 0, 1),
                  [w, idx.view(2, 5), data((2, 5), dt)], tol="red")
        check("embedding_bag %s transposed weight" % dn(dt), tbag("mean", None, 0, 1, 0),
              bag("mean", None, 0, 1, 0),
              [In(data((6, 3), dt), ("T",)), idx, torch.tensor([0, 4])], tol="red")
    # max: ties give the first entry, NaN stays only where it comes first
    w = torch.tensor([[1.0, 5.0, float("nan")], [1.0, 5.0, 2.0], [2.0, float("nan"), 0.0]])
    check("embedding_bag max ties and NaN", tbag("max", None, 0, 1, 0), bag("max", None, 0, 1, 0),
          [w, torch.tensor([1, 0, 2, 0, 2, 1]), torch.tensor([0, 3])], tol="exact")
    w = data((6, 3), torch.float32)
    refused = [
        ("mean with per_sample_weights", tbag("mean", None, 0, 1, 1), bag("mean", None, 0, 1, 1),
         [w, idx, torch.tensor([0, 4]), data((10,), torch.float32)]),
        ("per_sample_weights shape", tbag("sum", None, 0, 1, 1), bag("sum", None, 0, 1, 1),
         [w, idx, torch.tensor([0, 4]), data((9,), torch.float32)]),
        ("per_sample_weights dtype", tbag("sum", None, 0, 1, 1), bag("sum", None, 0, 1, 1),
         [w, idx, torch.tensor([0, 4]), data((10,), torch.float64)]),
        ("padding_idx 6", tbag("sum", 6, 0, 1, 0), bag("sum", 6, 0, 1, 0),
         [w, idx, torch.tensor([0, 4])]),
        ("padding_idx -7", tbag("sum", -7, 0, 1, 0), bag("sum", -7, 0, 1, 0),
         [w, idx, torch.tensor([0, 4])]),
        ("2-D with offsets", tbag("sum", None, 0, 1, 0), bag("sum", None, 0, 1, 0),
         [w, idx.view(2, 5), torch.tensor([0, 4])]),
        ("1-D without offsets", tbag("sum", None, 0, 0, 0), bag("sum", None, 0, 0, 0), [w, idx]),
        ("3-D input", tbag("sum", None, 0, 0, 0), bag("sum", None, 0, 0, 0),
         [w, idx[:8].view(2, 2, 2)]),
        ("2-D offsets", tbag("sum", None, 0, 1, 0), bag("sum", None, 0, 1, 0),
         [w, idx, torch.tensor([[0, 4]])]),
        ("float indices", tbag("sum", None, 0, 1, 0), bag("sum", None, 0, 1, 0),
         [w, idx.float(), torch.tensor([0, 4])]),
        ("float offsets", tbag("sum", None, 0, 1, 0), bag("sum", None, 0, 1, 0),
         [w, idx, torch.tensor([0.0, 4.0])]),
        ("int64 weight", tbag("sum", None, 0, 1, 0), bag("sum", None, 0, 1, 0),
         [data((6, 3), torch.int64), idx, torch.tensor([0, 4])]),
        ("1-D weight", tbag("sum", None, 0, 1, 0), bag("sum", None, 0, 1, 0),
         [data((6,), torch.float32), idx, torch.tensor([0, 4])]),
        ("mode", tbag("foo", None, 0, 1, 0), bag("foo", None, 0, 1, 0),
         [w, idx, torch.tensor([0, 4])]),
    ]
    for name, tf, cf, ins in refused:
        check("embedding_bag refused: " + name, tf, cf, ins)


def nn_shape_state_dict():
    """torch's Bilinear state_dict, saved with safetensors, loads into
    clt_bilinear_layer and gives torch's outputs; the parameterless layers
    give the ops' results."""
    try:
        from safetensors.torch import save_file
    except Exception:  # pragma: no cover
        print("conformance: Bilinear state_dict skipped (no safetensors)")
        return
    import tempfile
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_bilinear_layer", [P, C.c_int64, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_bilinear_forward", [P, P, P, PP])
    torch.manual_seed(11)
    for bias in (True, False):
        m = torch.nn.Bilinear(3, 5, 4, bias=bias)
        name = "Bilinear bias=%s state_dict" % bias
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.safetensors")
            save_file(m.state_dict(), path)
            cm, y = P(), P()
            keep = []
            try:
                if (L.clt_bilinear_layer(DEV, 3, 5, 4, int(bias), None, C.byref(cm)) or
                        L.clt_module_load(cm, path.encode())):
                    fail(name, L.clt_last_error().decode())
                    continue
                a, b = data((2, 6, 3), torch.float32), data((2, 6, 5), torch.float32)
                keep += [upload(a), upload(b)]
                if L.clt_bilinear_forward(cm, keep[0], keep[1], C.byref(y)):
                    fail(name, L.clt_last_error().decode())
                    continue
                keep.append(y)
                got, want = download(y)[0], m(a, b).detach().numpy()
                same = got.shape == want.shape
                ok(name, same and np.allclose(got, want, 1e-5, 1e-5),
                   "shape %s / %s, max diff %g"
                   % (got.shape, want.shape, np.abs(got - want).max() if same else -1))
            finally:
                for t in keep:
                    L.clt_tensor_free(t)
                L.clt_module_free(cm)
    # EmbeddingBag through torch.save's format (clt_module_load_torch)
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_embedding_bag_layer", [P, C.c_int64, C.c_int64, C.c_int, I64P, C.c_int, P, PP])
    for mode, mi, pad in (("mean", 1, None), ("max", 2, 3), ("sum", 0, -1)):
        m = torch.nn.EmbeddingBag(7, 4, mode=mode, padding_idx=pad)
        name = "EmbeddingBag %s padding_idx=%s torch file" % (mode, pad)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.pt")
            torch.save(m.state_dict(), path)
            cm, y = P(), P()
            keep = []
            try:
                if (L.clt_embedding_bag_layer(DEV, 7, 4, mi, _i64s(pad) if pad is not None
                                              else None, 0, None, C.byref(cm)) or
                        L.clt_module_load_torch(cm, path.encode(), 1)):
                    fail(name, L.clt_last_error().decode())
                    continue
                x = torch.tensor([[1, 3, 6, 0], [2, 2, 5, 3], [3, 3, 3, 3]])
                keep.append(upload(x))
                if L.clt_module_forward(cm, keep[0], C.byref(y)):
                    fail(name, L.clt_last_error().decode())
                    continue
                keep.append(y)
                got, want = download(y)[0], m(x).detach().numpy()
                same = got.shape == want.shape
                ok(name, same and np.allclose(got, want, 1e-6, 1e-6),
                   "shape %s / %s, max diff %g"
                   % (got.shape, want.shape, np.abs(got - want).max() if same else -1))
            finally:
                for t in keep:
                    L.clt_tensor_free(t)
                L.clt_module_free(cm)


# ---- special functions, more pointwise math, comparison helpers ----------

SPECIAL_UN = {"lgamma": torch.lgamma, "digamma": torch.digamma,
              "special_i0": torch.special.i0, "special_i0e": torch.special.i0e,
              "special_i1": torch.special.i1, "special_i1e": torch.special.i1e,
              "special_ndtr": torch.special.ndtr, "special_ndtri": torch.special.ndtri,
              "special_log_ndtr": torch.special.log_ndtr, "special_entr": torch.special.entr,
              "sinc": torch.sinc}
SPECIAL_BIN = {"special_xlog1py": torch.special.xlog1py, "logaddexp": torch.logaddexp,
               "logaddexp2": torch.logaddexp2, "nextafter": torch.nextafter,
               "heaviside": torch.heaviside, "gcd": torch.gcd, "lcm": torch.lcm,
               "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
               "bitwise_xor": torch.bitwise_xor, "ldexp": torch.ldexp,
               "float_power": torch.float_power}
SPECIAL_TOL = ((3e-6, 1e-6), (4e-15, 2e-15))


def special_data(dt, kind):
    """Edge values of each function's domain: 0, -0.0, negative integers,
    halves, +-inf, NaN, huge and tiny, then a random sweep."""
    edges = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -3.0, 0.5, -0.5, -2.5, 1e-8, -1e-8, 3.0, 7.9,
             8.0, 8.1, 10.0, 30.0, -30.5, 100.0, 1e10, -1e10, math.inf, -math.inf, math.nan]
    if kind == "prob":
        edges = [0.0, -0.0, 1.0, 0.5, 1e-300 if dt == torch.float64 else 1e-30, 1e-20, 0.1,
                 0.13, 0.14, 0.86, 0.9, 0.999999, 1e-10, 2.0, -0.5, math.inf, math.nan]
        sweep = torch.rand(300, generator=G, dtype=torch.float64)
    else:
        sweep = (torch.rand(300, generator=G, dtype=torch.float64) - 0.5) * 40
    return torch.cat([torch.tensor(edges, dtype=torch.float64), sweep]).to(dt)


def special_math():
    global TOL
    TOL = dict(TOL, special=SPECIAL_TOL)
    f = torch.float32
    for n, tf in SPECIAL_UN.items():
        cf = proto("clt_" + n, [P, PP])
        for dt in FLOATS:
            x = special_data(dt, "prob" if n == "special_ndtri" else "real")
            if n == "special_log_ndtr":
                x = torch.cat([x, torch.tensor([-1.0, -1.5, -7.9, -8.1, -19.9, -20.1, -37.0,
                                                -40.0, -1e5, -1e150], dtype=dt)])
            check("%s %s edges" % (n, dn(dt)), tf, cf, [x], tol="special")
        for dt in (torch.int32, torch.int64, torch.uint8, torch.bool):
            check("%s %s" % (n, dn(dt)), tf, cf, [data((3, 5), dt)], tol="special")
        check("%s transposed" % n, tf, cf, [In(data((4, 3), f, special=True), ("T",))],
              tol="special")
        check("%s empty" % n, tf, cf, [data((0, 3), f)], tol="special")
    proto("clt_polygamma", [C.c_int64, P, PP])
    for k in (0, 1, 2, 3, 4, 7):
        for dt in FLOATS:
            x = special_data(dt, "real")
            # float32 zeta at negative x cancels terms of 32 to give 0.003:
            # PyTorch sums them in double, cltensor in float (ops.h)
            if k >= 2 and dt == f:
                x = x[~(x < 0)]
            check("polygamma %d %s" % (k, dn(dt)), lambda t, k=k: torch.polygamma(k, t),
                  lambda p, o, k=k: L.clt_polygamma(k, p, o), [x], tol="special")
    check("polygamma -1", lambda t: torch.polygamma(-1, t),
          lambda p, o: L.clt_polygamma(-1, p, o), [data((3,), f)])
    proto("clt_mvlgamma", [P, C.c_int64, PP])
    for pp in (1, 2, 3, 5):
        for dt in FLOATS + [torch.int32]:
            check("mvlgamma %d %s" % (pp, dn(dt)), lambda t, k=pp: torch.mvlgamma(t, k),
                  lambda q, o, k=pp: L.clt_mvlgamma(q, k, o),
                  [data((3, 7), dt, lo=3, hi=20)], tol="special")
    for pp in (0, -1):
        check("mvlgamma p %d" % pp, lambda t, k=pp: torch.mvlgamma(t, k),
              lambda q, o, k=pp: L.clt_mvlgamma(q, k, o), [data((3,), f, lo=3, hi=5)])
    check("mvlgamma bool", lambda t: torch.mvlgamma(t, 1),
          lambda q, o: L.clt_mvlgamma(q, 1, o), [data((3,), torch.bool)])
    # binary: every dtype (the refusals as torch's), special pairs, broadcasting
    for n, tf in SPECIAL_BIN.items():
        cf = proto("clt_" + n, [P, P, PP])
        for dt in DTYPES:
            a = data((3, 5), dt, special=True)
            b = data((3, 5), dt, special=True).flip(-1)
            if n in ("gcd", "lcm") and not dt.is_floating_point:
                a, b = data((3, 5), dt, lo=-30, hi=30), data((3, 5), dt, lo=-30, hi=30)
            check("%s %s" % (n, dn(dt)), tf, cf, [a, b], tol="special")
        for da, db in ((f, torch.float64), (torch.int32, torch.int64), (torch.uint8, torch.int32),
                       (torch.int32, f), (torch.bool, torch.int32)):
            check("%s %s,%s" % (n, dn(da), dn(db)), tf, cf, [data((4,), da), data((4,), db)],
                  tol="special")
            check("%s %s,0-d %s" % (n, dn(da), dn(db)), tf, cf, [data((4,), da), data((), db)],
                  tol="special")
        check("%s bcast" % n, tf, cf, [data((3, 1), f, special=True), data((1, 4), f)],
              tol="special")
        check("%s shape mismatch" % n, tf, cf, [data((2, 3), f), data((3, 2), f)])
        if n in ("gcd", "lcm", "ldexp", "float_power") or n.startswith("bitwise"):
            continue
        for dt in FLOATS:
            sp = torch.tensor([math.inf, -math.inf, math.nan, -0.0, 0.0, 1.0, -1.0, 2.5, -2.5,
                               1e-45 if dt == f else 5e-324, 3e38 if dt == f else 1.7e308,
                               -0.999, -1.0], dtype=dt)
            k = sp.numel()
            check("%s %s special pairs" % (n, dn(dt)), tf, cf,
                  [sp.repeat_interleave(k), sp.repeat(k)], tol="special")
    for dt in (torch.int32, torch.int64, torch.uint8):
        ii = torch.iinfo(dt)
        v = torch.tensor([ii.min, ii.max, 0, 1, ii.min + 1, 12, 18, 7], dtype=dt)
        check("gcd %s extremes" % dn(dt), torch.gcd, L.clt_gcd, [v, v.flip(0)], tol="exact")
        check("lcm %s extremes" % dn(dt), torch.lcm, L.clt_lcm, [v, v.flip(0)], tol="exact")
    check("ldexp exponents", torch.ldexp, L.clt_ldexp,
          [data((6,), f), torch.tensor([0, 1, -1, 127, -126, 130], dtype=torch.int32)],
          tol="exact")
    # shifts with counts inside [0, W): torch 1.13 and torch agree there
    for n, tf in (("bitwise_left_shift", torch.bitwise_left_shift),
                  ("bitwise_right_shift", torch.bitwise_right_shift)):
        cf = proto("clt_" + n, [P, P, PP])
        for dt in (torch.int32, torch.int64, torch.uint8):
            w = torch.iinfo(dt).bits
            a = data((40,), dt, lo=-1000, hi=1000)
            b = torch.randint(0, w - 1, (40,), generator=G).to(dt)
            check("%s %s" % (n, dn(dt)), tf, cf, [a, b], tol="exact")
        for dt in (f, torch.bool):
            check("%s %s" % (n, dn(dt)), tf, cf, [data((3,), dt), data((3,), dt)])
    proto("clt_bitwise_not", [P, PP])
    proto("clt_signbit", [P, PP])
    for dt in DTYPES:
        check("bitwise_not %s" % dn(dt), torch.bitwise_not, L.clt_bitwise_not,
              [data((3, 5), dt)], tol="exact")
        check("signbit %s" % dn(dt), torch.signbit, L.clt_signbit,
              [data((3, 5), dt, special=True)], tol="exact")
    check("signbit -nan", torch.signbit, L.clt_signbit,
          [torch.tensor([math.nan, -math.nan, -0.0, 0.0], dtype=f)], tol="exact")
    # frexp: two outputs
    proto("clt_frexp", [P, PP, PP])
    for dt in DTYPES:
        check("frexp mantissa %s" % dn(dt), lambda t: torch.frexp(t)[0],
              lambda p, o: frexp_part(p, o, 0), [data((3, 7), dt, special=True)], tol="exact")
        check("frexp exponent %s" % dn(dt), lambda t: torch.frexp(t)[1],
              lambda p, o: frexp_part(p, o, 1), [data((3, 7), dt, special=True)], tol="exact")
    for dt in FLOATS:
        x = special_data(dt, "real")
        check("frexp edges mantissa %s" % dn(dt), lambda t: torch.frexp(t)[0],
              lambda p, o: frexp_part(p, o, 0), [x], tol="exact")
        check("frexp edges exponent %s" % dn(dt), lambda t: torch.frexp(t)[1],
              lambda p, o: frexp_part(p, o, 1), [x[torch.isfinite(x)]], tol="exact")
    # isclose, allclose, equal
    proto("clt_isclose", [P, P, C.c_double, C.c_double, C.c_int, PP])
    proto("clt_allclose", [P, P, C.c_double, C.c_double, C.c_int, C.POINTER(C.c_int)])
    proto("clt_equal", [P, P, C.POINTER(C.c_int)])
    for dt in DTYPES:
        a = data((4, 6), dt, special=True)
        b = a.clone()
        if dt.is_floating_point:
            b = b + torch.tensor([0, 1e-9, 1e-6, 1e-3, 1, -1e-7], dtype=dt)
        for rt, at, en in ((1e-5, 1e-8, False), (1e-5, 1e-8, True), (0.0, 0.0, False),
                           (0.1, 0.5, True), (-1.0, 0.0, False), (0.0, math.nan, False)):
            check("isclose %s %r %r %r" % (dn(dt), rt, at, en),
                  lambda x, y, rt=rt, at=at, en=en: torch.isclose(x, y, rt, at, en),
                  lambda p, q, o, rt=rt, at=at, en=en: L.clt_isclose(p, q, rt, at, int(en), o),
                  [a, b], tol="exact")
    check("isclose dtype mismatch", torch.isclose,
          lambda p, q, o: L.clt_isclose(p, q, 1e-5, 1e-8, 0, o),
          [data((3,), torch.int64), data((3,), f)])
    check("isclose bcast", torch.isclose, lambda p, q, o: L.clt_isclose(p, q, 1e-5, 1e-8, 0, o),
          [data((3, 1), f), data((1, 4), f)], tol="exact")
    check("isclose uint8 wrap", lambda x, y: torch.isclose(x, y, 0.0, 300.0),
          lambda p, q, o: L.clt_isclose(p, q, 0.0, 300.0, 0, o),
          [torch.tensor([3, 250], dtype=torch.uint8), torch.tensor([5, 2], dtype=torch.uint8)],
          tol="exact")
    for a, b in ((data((3, 4), f), None), (data((3, 4), f, special=True), None),
                 (data((3, 4), f), data((3, 4), f)), (data((3, 4), f), data((4, 3), f)),
                 (data((3,), f), data((3,), torch.float64)), (data((0,), f), None)):
        b = a.clone() if b is None else b
        for en in (0, 1):
            r = C.c_int(7)
            st = L.clt_allclose(upload(a), upload(b), 1e-5, 1e-8, en, C.byref(r))
            try:
                want = torch.allclose(a, b, 1e-5, 1e-8, bool(en))
            except Exception:
                want = None
            ok("allclose %s %s %d" % (list(a.shape), list(b.shape), en),
               (st != 0 and r.value == 0) if want is None else (st == 0 and r.value == int(want)),
               "status %d value %d, torch %r" % (st, r.value, want))
        r = C.c_int(7)
        st = L.clt_equal(upload(a), upload(b), C.byref(r))
        want = torch.equal(a, b)
        ok("equal %s %s" % (list(a.shape), list(b.shape)), st == 0 and r.value == int(want),
           "status %d value %d, torch %r" % (st, r.value, want))


def frexp_part(p, o, k):
    m, e = P(), P()
    st = L.clt_frexp(p, C.byref(m), C.byref(e))
    if st == 0:
        L.clt_tensor_free(e if k == 0 else m)
        o._obj.value = (m if k == 0 else e).value
    else:
        o._obj.value = None
    return st


# ---- torch.diff, torch.trapezoid, torch.cumulative_trapezoid -------------

def calculus():
    f = torch.float32
    proto("clt_diff", [P, C.c_int64, C.c_int, P, P, PP])
    for dt in DTYPES:
        for n, dim in ((1, -1), (2, 0), (0, 1), (3, 1), (9, -1)):
            check("diff %s n=%d dim=%d" % (dn(dt), n, dim),
                  lambda t, n=n, d=dim: torch.diff(t, n, d),
                  lambda p, o, n=n, d=dim: L.clt_diff(p, n, d, None, None, o),
                  [data((3, 5), dt, special=True)], tol="exact")
        check("diff %s prepend append" % dn(dt),
              lambda t, a, b: torch.diff(t, 2, 1, a, b),
              lambda p, a, b, o: L.clt_diff(p, 2, 1, a, b, o),
              [data((3, 4), dt), data((3, 2), dt), data((3, 1), dt)], tol="exact")
    check("diff mixed dtypes", lambda t, a: torch.diff(t, 1, 0, a),
          lambda p, a, o: L.clt_diff(p, 1, 0, a, None, o),
          [data((4,), torch.int32), data((2,), f)], tol="exact")
    check("diff transposed", lambda t: torch.diff(t, 1, 0), lambda p, o: L.clt_diff(p, 1, 0, None, None, o),
          [In(data((4, 3), f), ("T",))], tol="exact")
    check("diff empty", lambda t: torch.diff(t), lambda p, o: L.clt_diff(p, 1, -1, None, None, o),
          [data((2, 0), f)], tol="exact")
    check("diff 0-d", lambda t: torch.diff(t), lambda p, o: L.clt_diff(p, 1, -1, None, None, o),
          [data((), f)])
    check("diff n<0", lambda t: torch.diff(t, -1), lambda p, o: L.clt_diff(p, -1, -1, None, None, o),
          [data((3,), f)])
    check("diff bad dim", lambda t: torch.diff(t, 1, 2), lambda p, o: L.clt_diff(p, 1, 2, None, None, o),
          [data((3, 2), f)])
    check("diff prepend ndim", lambda t, a: torch.diff(t, 1, 0, a),
          lambda p, a, o: L.clt_diff(p, 1, 0, a, None, o), [data((3, 2), f), data((2,), f)])
    proto("clt_trapezoid", [P, P, C.c_double, C.c_int, PP])
    proto("clt_cumulative_trapezoid", [P, P, C.c_double, C.c_int, PP])
    for name, tf, cf in (("trapezoid", torch.trapezoid, L.clt_trapezoid),
                         ("cumulative_trapezoid", torch.cumulative_trapezoid,
                          L.clt_cumulative_trapezoid)):
        for dt in DTYPES:
            for dx, dim in ((1.0, -1), (0.25, 0), (2.0, 1)):
                check("%s %s dx=%g dim=%d" % (name, dn(dt), dx, dim),
                      lambda y, dx=dx, d=dim, tf=tf: tf(y, dx=dx, dim=d),
                      lambda p, o, dx=dx, d=dim, cf=cf: cf(p, None, dx, d, o),
                      [data((3, 5), dt, special=dt.is_floating_point)], tol="red")
        for dt in FLOATS:
            check("%s %s x 1-d" % (name, dn(dt)), lambda y, x, tf=tf: tf(y, x, dim=1),
                  lambda p, q, o, cf=cf: cf(p, q, 0.0, 1, o),
                  [data((3, 5), dt), torch.sort(data((5,), dt))[0]], tol="red")
            check("%s %s x same shape" % (name, dn(dt)), lambda y, x, tf=tf: tf(y, x, dim=0),
                  lambda p, q, o, cf=cf: cf(p, q, 0.0, 0, o),
                  [data((4, 3), dt), data((4, 3), dt)], tol="red")
            check("%s %s x fewer dims" % (name, dn(dt)), lambda y, x, tf=tf: tf(y, x, dim=-1),
                  lambda p, q, o, cf=cf: cf(p, q, 0.0, -1, o),
                  [data((2, 3, 4), dt), data((3, 4), dt)], tol="red")
        check("%s x int" % name, lambda y, x, tf=tf: tf(y, x), lambda p, q, o, cf=cf: cf(p, q, 0.0, -1, o),
              [data((3, 4), torch.int32), data((4,), torch.int64)], tol="red")
        check("%s x mismatch" % name, lambda y, x, tf=tf: tf(y, x),
              lambda p, q, o, cf=cf: cf(p, q, 0.0, -1, o), [data((3, 4), f), data((3,), f)])
        check("%s x bool" % name, lambda y, x, tf=tf: tf(y, x),
              lambda p, q, o, cf=cf: cf(p, q, 0.0, -1, o), [data((3, 4), f), data((4,), torch.bool)])
        check("%s transposed" % name, lambda y, tf=tf: tf(y, dim=0),
              lambda p, o, cf=cf: cf(p, None, 1.0, 0, o), [In(data((4, 3), f), ("T",))], tol="red")
        check("%s one sample" % name, lambda y, tf=tf: tf(y), lambda p, o, cf=cf: cf(p, None, 1.0, -1, o),
              [data((3, 1), f)], tol="red")
        check("%s no samples" % name, lambda y, tf=tf: tf(y), lambda p, o, cf=cf: cf(p, None, 1.0, -1, o),
              [data((3, 0), f)], tol="red")
        check("%s 0-d" % name, lambda y, tf=tf: tf(y), lambda p, o, cf=cf: cf(p, None, 1.0, -1, o),
              [data((), f)])


# ---- torch.cov and torch.corrcoef -----------------------------------------

def covariance():
    f = torch.float32
    proto("clt_cov", [P, C.c_int64, P, P, PP])
    proto("clt_corrcoef", [P, PP])
    for dt in DTYPES:
        for shape in ((3, 6), (6,), (1, 4), (), (2, 1), (3, 0)):
            for corr in (1, 0, 2):
                check("cov %s %s c=%d" % (dn(dt), shape, corr),
                      lambda x, c=corr: torch.cov(x, correction=c),
                      lambda p, o, c=corr: L.clt_cov(p, c, None, None, o),
                      [data(shape, dt)], tol="red")
            check("corrcoef %s %s" % (dn(dt), shape), torch.corrcoef, L.clt_corrcoef,
                  [data(shape, dt)], tol="red")
    fw = torch.tensor([1, 0, 3, 2, 1, 4], dtype=torch.int64)
    aw = torch.tensor([0.5, 1.0, 0.25, 2.0, 0.0, 1.5], dtype=f)
    for dt in FLOATS:
        x = data((3, 6), dt)
        for corr in (1, 0, 3):
            check("cov %s fweights c=%d" % (dn(dt), corr),
                  lambda x, w, c=corr: torch.cov(x, correction=c, fweights=w),
                  lambda p, w, o, c=corr: L.clt_cov(p, c, w, None, o), [x, fw], tol="red")
            check("cov %s aweights c=%d" % (dn(dt), corr),
                  lambda x, w, c=corr: torch.cov(x, correction=c, aweights=w),
                  lambda p, w, o, c=corr: L.clt_cov(p, c, None, w, o), [x, aw.to(dt)], tol="red")
            check("cov %s both c=%d" % (dn(dt), corr),
                  lambda x, w, a, c=corr: torch.cov(x, correction=c, fweights=w, aweights=a),
                  lambda p, w, a, o, c=corr: L.clt_cov(p, c, w, a, o), [x, fw, aw.to(dt)],
                  tol="red")
    x = data((3, 6), f)
    for name, w, a in (("negative fweights", -fw, None), ("float fweights", aw, None),
                       ("int aweights", None, fw), ("negative aweights", None, -aw),
                       ("short fweights", fw[:3], None), ("2-d aweights", None, aw.view(2, 3)),
                       ("zero weights", fw * 0, None)):
        ins = [x] + [t for t in (w, a) if t is not None]
        check("cov %s" % name,
              lambda x, *r, w=w, a=a: torch.cov(x, fweights=r[0] if w is not None else None,
                                              aweights=r[-1] if a is not None else None),
              lambda p, *r, w=w, a=a: L.clt_cov(p, 1, r[0] if w is not None else None,
                                                r[-2] if a is not None else None, r[-1]),
              ins)
    check("cov 3-d", torch.cov, lambda p, o: L.clt_cov(p, 1, None, None, o), [data((2, 2, 2), f)])
    check("corrcoef 3-d", torch.corrcoef, L.clt_corrcoef, [data((2, 2, 2), f)])
    check("cov transposed", torch.cov, lambda p, o: L.clt_cov(p, 1, None, None, o),
          [In(data((5, 3), f), ("T",))], tol="red")


def histc():
    f = torch.float32
    proto("clt_histc", [P, C.c_int64, C.c_double, C.c_double, PP])
    for dt in DTYPES:
        for bins, lo, hi in ((10, 0.0, 0.0), (4, -2.0, 2.0), (7, -5.0, 5.0), (1, 0.0, 1.0),
                             (3, 2.0, -2.0), (0, 0.0, 1.0), (5, -math.inf, 1.0), (6, 0.1, 0.7),
                             (100, -1.0, 1.0)):
            check("histc %s %d [%g, %g]" % (dn(dt), bins, lo, hi),
                  lambda x, b=bins, l=lo, h=hi: torch.histc(x, b, l, h),
                  lambda p, o, b=bins, l=lo, h=hi: L.clt_histc(p, b, l, h, o),
                  [data((7, 9), dt, special=False)], tol="exact")
    for dt in FLOATS:
        edges = torch.tensor([-2.0, 2.0, 0.0, -0.0, 1.0, -1.0, 0.5, 1.999999, -2.000001, math.nan,
                              math.inf, -math.inf, 0.3333333, 2.0000001], dtype=dt)
        check("histc %s edges" % dn(dt), lambda x: torch.histc(x, 4, -2, 2),
              lambda p, o: L.clt_histc(p, 4, -2, 2, o), [edges], tol="exact")
        check("histc %s one value" % dn(dt), lambda x: torch.histc(x, 3),
              lambda p, o: L.clt_histc(p, 3, 0, 0, o), [torch.full((5,), 2.5, dtype=dt)],
              tol="exact")
        check("histc %s NaN range" % dn(dt), lambda x: torch.histc(x, 3),
              lambda p, o: L.clt_histc(p, 3, 0, 0, o), [edges], tol="exact")
        check("histc %s empty" % dn(dt), lambda x: torch.histc(x, 3),
              lambda p, o: L.clt_histc(p, 3, 0, 0, o), [torch.zeros(0, dtype=dt)], tol="exact")
        x = torch.rand(5000, generator=G, dtype=torch.float64).to(dt) * 3 - 1
        check("histc %s many" % dn(dt), lambda x: torch.histc(x, 37, -1, 2),
              lambda p, o: L.clt_histc(p, 37, -1, 2, o), [x], tol="exact")
    check("histc transposed", lambda x: torch.histc(x, 5, -3, 3),
          lambda p, o: L.clt_histc(p, 5, -3, 3, o), [In(data((4, 3), f), ("T",))], tol="exact")
    # bins + 1 a multiple of 16 (float32) or 8 (float64): torch's last edge
    # is its vectorised linspace's, which can miss max (and so leave out the
    # values at max, or move the others' bins); the values: every edge as
    # torch computes it, max and min, and the floats either side of each edge
    for dt in FLOATS:
        for bins in (7, 15, 23, 31, 47, 63, 95, 127, 14, 30):
            for lo, hi in ((-3.3, 7.1), (0.1, 0.7), (0.0, 1.0), (1e-3, 2.9e3)):
                e = torch.linspace(lo, hi, bins + 1, dtype=dt)
                x = torch.cat([e, torch.tensor([hi, lo], dtype=dt),
                               torch.nextafter(e, torch.full_like(e, -math.inf)),
                               torch.nextafter(e, torch.full_like(e, math.inf))])
                check("histc %s last edge %d [%g, %g]" % (dn(dt), bins, lo, hi),
                      lambda x, b=bins, l=lo, h=hi: torch.histc(x, b, l, h),
                      lambda p, o, b=bins, l=lo, h=hi: L.clt_histc(p, b, l, h, o), [x],
                      tol="exact")


def _dist_protos():
    for n in ("normal", "uniform", "laplace"):
        proto("clt_%s_dist" % n, [P, P, C.c_int, PP])
    for n in ("bernoulli", "categorical", "one_hot_categorical"):
        proto("clt_%s_dist" % n, [P, P, C.c_int, PP])
    proto("clt_exponential_dist", [P, C.c_int, PP])
    proto("clt_multivariate_normal_dist", [P, P, P, C.c_int, PP])
    proto("clt_independent_dist", [P, C.c_int, C.c_int, PP])
    proto("clt_distribution_free", [P], None)
    for n in ("log_prob", "cdf", "icdf"):
        proto("clt_distribution_" + n, [P, P, PP])
    for n in ("entropy", "mean", "variance", "stddev"):
        proto("clt_distribution_" + n, [P, PP])
    proto("clt_kl_divergence", [P, P, PP])


def _dist_c(ctor, call):
    """A cfn for check(): makes the distribution(s) with ctor(params...) (a
    list of (maker, n_params) for several), runs call(d..., rest..., out)
    and frees them; a refused constructor leaves *out NULL."""
    makers = ctor if isinstance(ctor, list) else [ctor]

    def cfn(*a):
        out, a = a[-1], list(a[:-1])
        ds = []
        try:
            for mk, n in makers:
                d = P()
                st = mk(*a[:n], C.byref(d))
                a = a[n:]
                if st:
                    out._obj.value = None
                    return st
                ds.append(d)
            return call(*ds, *a, out)
        finally:
            for d in ds:
                L.clt_distribution_free(d)
    return cfn


def distributions():
    D = torch.distributions
    _dist_protos()
    lp = lambda d, v, o: L.clt_distribution_log_prob(d, v, o)
    normal = (lambda l, s, o: L.clt_normal_dist(l, s, 1, o), 2)
    laplace = (lambda l, s, o: L.clt_laplace_dist(l, s, 1, o), 2)
    uniform = (lambda l, h, o: L.clt_uniform_dist(l, h, 1, o), 2)
    expo = (lambda r, o: L.clt_exponential_dist(r, 1, o), 1)
    bern_p = (lambda p, o: L.clt_bernoulli_dist(p, None, 1, o), 1)
    bern_l = (lambda p, o: L.clt_bernoulli_dist(None, p, 1, o), 1)
    cat_p = (lambda p, o: L.clt_categorical_dist(p, None, 1, o), 1)
    cat_l = (lambda p, o: L.clt_categorical_dist(None, p, 1, o), 1)
    oh_p = (lambda p, o: L.clt_one_hot_categorical_dist(p, None, 1, o), 1)
    mvn_c = (lambda l, c, o: L.clt_multivariate_normal_dist(l, c, None, 1, o), 2)
    mvn_t = (lambda l, c, o: L.clt_multivariate_normal_dist(l, None, c, 1, o), 2)
    moments = (("entropy", L.clt_distribution_entropy, lambda d: d.entropy()),
               ("mean", L.clt_distribution_mean, lambda d: d.mean),
               ("variance", L.clt_distribution_variance, lambda d: d.variance),
               ("stddev", L.clt_distribution_stddev, lambda d: d.stddev))
    for dt in FLOATS:
        tol = "red"
        pos = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 2 + 0.1
        real = lambda *sh: torch.randn(*sh, generator=G, dtype=torch.float64).to(dt)
        u = torch.rand(4, 2, 3, generator=G, dtype=torch.float64).to(dt) * 0.98 + 0.01
        loc, scale, val = real(2, 3), pos(3), real(4, 2, 3) * 2
        for name, tcls, mk in (("Normal", D.Normal, normal), ("Laplace", D.Laplace, laplace)):
            for what, cfn, tfn in moments:
                check("%s %s %s" % (name, dn(dt), what),
                      lambda l, s, c=tcls, f=tfn: f(c(l, s)),
                      _dist_c(mk, cfn), [loc, scale], tol=tol)
            check("%s %s log_prob" % (name, dn(dt)), lambda l, s, v, c=tcls: c(l, s).log_prob(v),
                  _dist_c(mk, lp), [loc, scale, val], tol=tol)
            check("%s %s cdf" % (name, dn(dt)), lambda l, s, v, c=tcls: c(l, s).cdf(v),
                  _dist_c(mk, L.clt_distribution_cdf), [loc, scale, val], tol=tol)
            check("%s %s icdf" % (name, dn(dt)), lambda l, s, v, c=tcls: c(l, s).icdf(v),
                  _dist_c(mk, L.clt_distribution_icdf), [loc, scale, u], tol=tol)
            check("%s %s bad scale" % (name, dn(dt)), lambda l, s, c=tcls: c(l, s).mean,
                  _dist_c(mk, L.clt_distribution_mean), [loc, -scale])
        low, high = real(2, 3), None
        high = low + pos(2, 3)
        inside = low + (high - low) * u
        for what, cfn, tfn in moments:
            check("Uniform %s %s" % (dn(dt), what), lambda l, h, f=tfn: f(D.Uniform(l, h)),
                  _dist_c(uniform, cfn), [low, high], tol=tol)
        for what, cfn, tname, v in (("log_prob", lp, "log_prob", inside),
                                    ("cdf", L.clt_distribution_cdf, "cdf", inside),
                                    ("icdf", L.clt_distribution_icdf, "icdf", u)):
            check("Uniform %s %s" % (dn(dt), what),
                  lambda l, h, v, n=tname: getattr(D.Uniform(l, h), n)(v),
                  _dist_c(uniform, cfn), [low, high, v], tol=tol)
        check("Uniform %s outside the support" % dn(dt),
              lambda l, h, v: D.Uniform(l, h).log_prob(v), _dist_c(uniform, lp),
              [low, high, high + 1])
        rate, ev = pos(3), pos(4, 2, 3)
        for what, cfn, tfn in moments:
            check("Exponential %s %s" % (dn(dt), what), lambda r, f=tfn: f(D.Exponential(r)),
                  _dist_c(expo, cfn), [rate], tol=tol)
        for what, cfn, v in (("log_prob", lp, ev), ("cdf", L.clt_distribution_cdf, ev),
                             ("icdf", L.clt_distribution_icdf, u)):
            check("Exponential %s %s" % (dn(dt), what),
                  lambda r, v, n=what: getattr(D.Exponential(r), n)(v),
                  _dist_c(expo, cfn), [rate, v], tol=tol)
        check("Exponential %s negative value" % dn(dt),
              lambda r, v: D.Exponential(r).log_prob(v), _dist_c(expo, lp), [rate, -ev])
        probs = torch.rand(2, 3, generator=G, dtype=torch.float64).to(dt) * 0.9 + 0.05
        bits = torch.randint(0, 2, (4, 2, 3), generator=G).to(dt)
        for form, mk, par in (("probs", bern_p, probs), ("logits", bern_l, real(2, 3) * 3)):
            kw = lambda p, f=form: D.Bernoulli(**{f: p})
            for what, cfn, tfn in moments:
                check("Bernoulli(%s) %s %s" % (form, dn(dt), what), lambda p, f=tfn, k=kw: f(k(p)),
                      _dist_c(mk, cfn), [par], tol=tol)
            check("Bernoulli(%s) %s log_prob" % (form, dn(dt)), lambda p, v, k=kw: k(p).log_prob(v),
                  _dist_c(mk, lp), [par, bits], tol=tol)
        check("Bernoulli %s probs above 1" % dn(dt), lambda p: D.Bernoulli(probs=p + 1).mean,
              _dist_c(bern_p, L.clt_distribution_mean), [probs + 1])
        w = pos(3, 5)
        idx = torch.randint(0, 5, (4, 3), generator=G)
        for form, mk, par in (("probs", cat_p, w), ("logits", cat_l, real(3, 5) * 2)):
            kw = lambda p, f=form: D.Categorical(**{f: p})
            check("Categorical(%s) %s entropy" % (form, dn(dt)), lambda p, k=kw: k(p).entropy(),
                  _dist_c(mk, L.clt_distribution_entropy), [par], tol=tol)
            check("Categorical(%s) %s log_prob" % (form, dn(dt)),
                  lambda p, v, k=kw: k(p).log_prob(v), _dist_c(mk, lp), [par, idx], tol=tol)
        check("Categorical %s index 5 of 5" % dn(dt), lambda p, v: D.Categorical(p).log_prob(v),
              _dist_c(cat_p, lp), [w, idx + 1])
        oh = torch.nn.functional.one_hot(idx, 5).to(dt)
        for what, cfn, tfn in moments[:3]:
            check("OneHotCategorical %s %s" % (dn(dt), what),
                  lambda p, f=tfn: f(D.OneHotCategorical(p)), _dist_c(oh_p, cfn), [w], tol=tol)
        check("OneHotCategorical %s log_prob" % dn(dt),
              lambda p, v: D.OneHotCategorical(p).log_prob(v), _dist_c(oh_p, lp), [w, oh], tol=tol)
        a = real(2, 3, 3)
        cov = a @ a.transpose(-1, -2) + torch.eye(3, dtype=dt)
        tril = torch.linalg.cholesky(cov)
        mloc, mval = real(3), real(4, 2, 3)
        for form, mk, m in (("covariance_matrix", mvn_c, cov), ("scale_tril", mvn_t, tril)):
            kw = lambda l, m, f=form: D.MultivariateNormal(l, **{f: m})
            for what, cfn, tfn in moments:
                check("MultivariateNormal(%s) %s %s" % (form, dn(dt), what),
                      lambda l, m, f=tfn, k=kw: f(k(l, m)), _dist_c(mk, cfn), [mloc, m], tol=tol)
            check("MultivariateNormal(%s) %s log_prob" % (form, dn(dt)),
                  lambda l, m, v, k=kw: k(l, m).log_prob(v), _dist_c(mk, lp), [mloc, m, mval],
                  tol=tol)
        check("MultivariateNormal %s not positive-definite" % dn(dt),
              lambda l, m: D.MultivariateNormal(l, m).mean,
              _dist_c(mvn_c, L.clt_distribution_mean), [mloc, cov - 10 * torch.eye(3, dtype=dt)])
        ind = (lambda d, o: L.clt_independent_dist(d, 1, 1, o), 1)
        for what, call, tfn in (("log_prob", lambda n, i, v, o: lp(i, v, o),
                                 lambda d, v: d.log_prob(v)),
                                ("entropy", lambda n, i, v, o: L.clt_distribution_entropy(i, o),
                                 lambda d, v: d.entropy())):
            def indep_c(l, s, v, o, call=call):
                n, i = P(), P()
                try:
                    if L.clt_normal_dist(l, s, 1, C.byref(n)) or \
                            L.clt_independent_dist(n, 1, 1, C.byref(i)):
                        o._obj.value = None
                        return 1
                    return call(n, i, v, o)
                finally:
                    L.clt_distribution_free(i)
                    L.clt_distribution_free(n)
            check("Independent(Normal, 1) %s %s" % (dn(dt), what),
                  lambda l, s, v, f=tfn: f(D.Independent(D.Normal(l, s), 1), v), indep_c,
                  [loc, scale, val], tol=tol)
        # kl_divergence of the registered pairs, the batch shapes broadcasting
        kl = L.clt_kl_divergence
        pairs = (("Normal", D.Normal, normal, [loc, scale, real(3), pos(2, 3)]),
                 ("Laplace", D.Laplace, laplace, [loc, scale, real(3), pos(2, 3)]),
                 ("Exponential", D.Exponential, expo, [rate, pos(2, 3)]),
                 ("Uniform", D.Uniform, uniform, [low, high, low - pos(2, 3), high + pos(3)]),
                 ("Uniform (not covered)", D.Uniform, uniform, [low, high, low + 0.01, high]),
                 ("Bernoulli", lambda p: D.Bernoulli(probs=p), bern_p,
                  [probs, torch.tensor([[0.0, 0.5, 1.0], [0.3, 0.2, 0.9]], dtype=dt)]),
                 ("Categorical", D.Categorical, cat_p,
                  [w, torch.tensor([0.0, 1, 2, 3, 4], dtype=dt)]),
                 ("OneHotCategorical", D.OneHotCategorical, oh_p, [w, pos(5)]),
                 ("MultivariateNormal", D.MultivariateNormal, mvn_c,
                  [mloc, cov, real(2, 3), cov.flip(0)]))
        for name, tcls, mk, ins in pairs:
            n = mk[1]
            check("kl_divergence %s %s" % (name, dn(dt)),
                  lambda *a, c=tcls, n=n: D.kl_divergence(c(*a[:n]), c(*a[n:])),
                  _dist_c([mk, mk], kl), ins, tol=tol)
        cross = {"Normal": (D.Normal, normal, [loc, scale]),
                 "Laplace": (D.Laplace, laplace, [real(3), pos(2, 3)]),
                 "Exponential": (D.Exponential, expo, [pos(2, 3)]),
                 "Uniform": (D.Uniform, uniform, [low, high]),
                 "Uniform (above 0)": (D.Uniform, uniform, [pos(2, 3), pos(2, 3) + 2.5])}
        for pn, qn in (("Exponential", "Normal"), ("Laplace", "Normal"), ("Normal", "Laplace"),
                       ("Uniform", "Normal"), ("Uniform", "Exponential"),
                       ("Uniform (above 0)", "Exponential"), ("Exponential", "Uniform"),
                       ("Laplace", "Exponential"), ("Laplace", "Uniform"),
                       ("Normal", "Exponential"), ("Normal", "Uniform")):
            (pc, pm, pi), (qc, qm, qi) = cross[pn], cross[qn]
            check("kl_divergence %s || %s %s" % (pn, qn, dn(dt)),
                  lambda *a, pc=pc, qc=qc, n=pm[1]: D.kl_divergence(pc(*a[:n]), qc(*a[n:])),
                  _dist_c([pm, qm], kl), pi + qi, tol=tol)
        check("kl_divergence Bernoulli || Normal %s" % dn(dt),
              lambda p, c, d: D.kl_divergence(D.Bernoulli(p), D.Normal(c, d)),
              _dist_c([bern_p, normal], kl), [probs, loc, scale])


def distributions2():
    """Gamma, Chi2, Beta, Dirichlet, StudentT, FisherSnedecor, LogNormal,
    Gumbel, Cauchy, HalfNormal, HalfCauchy, Pareto, Weibull, Kumaraswamy,
    RelaxedBernoulli, Poisson, Geometric and NegativeBinomial: log_prob, entropy, the moments, cdf/icdf where torch has
    them, their refusals, the kl_divergence pairs; Gamma's reparameterised
    gradient against torch._standard_gamma_grad at cltensor's own draws."""
    D = torch.distributions
    _dist_protos()
    for n in ("gamma", "beta", "fisher_snedecor", "log_normal", "gumbel", "cauchy", "pareto",
              "weibull", "geometric", "kumaraswamy"):
        proto("clt_%s_dist" % n, [P, P, C.c_int, PP])
    for n in ("chi2", "dirichlet", "half_normal", "half_cauchy", "poisson"):
        proto("clt_%s_dist" % n, [P, C.c_int, PP])
    proto("clt_student_t_dist", [P, P, P, C.c_int, PP])
    proto("clt_negative_binomial_dist", [P, P, P, C.c_int, PP])
    proto("clt_relaxed_bernoulli_dist", [P, P, P, C.c_int, PP])
    proto("clt_distribution_rsample", [P, P, C.c_int, I64P, PP])
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_grad", [P, PP])
    lp = lambda d, v, o: L.clt_distribution_log_prob(d, v, o)
    mk2 = lambda f: (lambda a, b, o: f(a, b, 1, o), 2)
    mk1 = lambda f: (lambda a, o: f(a, 1, o), 1)
    calls = {"log_prob": lp, "cdf": L.clt_distribution_cdf, "icdf": L.clt_distribution_icdf,
             "entropy": L.clt_distribution_entropy, "mean": L.clt_distribution_mean,
             "variance": L.clt_distribution_variance, "stddev": L.clt_distribution_stddev}
    for dt in FLOATS:
        tol = "red"
        pos = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 2 + 0.2
        real = lambda *sh: torch.randn(*sh, generator=G, dtype=torch.float64).to(dt)
        unit = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 0.9 + 0.05
        u = unit(4, 2, 3)
        big = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 8 + 0.5
        counts = torch.randint(0, 6, (4, 2, 3), generator=G).to(dt)
        conc = pos(2, 4)
        simplex = torch.softmax(real(3, 2, 4), -1)
        # name, torch ctor, (maker, n), params, values, what torch gives
        fams = (
            ("Gamma", D.Gamma, mk2(L.clt_gamma_dist), [pos(2, 3), pos(3)], pos(4, 2, 3),
             ("log_prob", "entropy", "mean", "variance", "stddev")),
            ("Chi2", D.Chi2, mk1(L.clt_chi2_dist), [pos(2, 3)], pos(4, 2, 3),
             ("log_prob", "entropy", "mean", "variance", "stddev")),
            ("Beta", D.Beta, mk2(L.clt_beta_dist), [pos(2, 3), pos(3)], unit(4, 2, 3),
             ("log_prob", "entropy", "mean", "variance", "stddev")),
            ("Dirichlet", D.Dirichlet, mk1(L.clt_dirichlet_dist), [conc], simplex,
             ("log_prob", "entropy", "mean", "variance", "stddev")),
            ("StudentT", D.StudentT,
             (lambda a, b, c, o: L.clt_student_t_dist(a, b, c, 1, o), 3),
             [torch.tensor([0.5, 1.5, 2.5, 4.0], dtype=dt), real(2, 4), pos(4)], real(3, 2, 4) * 2,
             ("log_prob", "entropy", "mean", "variance", "stddev")),
            ("FisherSnedecor", D.FisherSnedecor, mk2(L.clt_fisher_snedecor_dist),
             [big(2, 3), torch.tensor([1.5, 3.0, 6.0], dtype=dt)], pos(4, 2, 3),
             ("log_prob", "mean", "variance", "stddev", "entropy")),
            ("LogNormal", D.LogNormal, mk2(L.clt_log_normal_dist), [real(2, 3), pos(3)],
             pos(4, 2, 3), ("log_prob", "entropy", "mean", "variance", "stddev", "cdf")),
            ("Gumbel", D.Gumbel, mk2(L.clt_gumbel_dist), [real(2, 3) * 0.3, pos(3) + 1],
             real(4, 2, 3) * 0.3,
             ("log_prob", "entropy", "mean", "variance", "stddev", "cdf")),
            ("Cauchy", D.Cauchy, mk2(L.clt_cauchy_dist), [real(2, 3), pos(3)], real(4, 2, 3),
             ("log_prob", "entropy", "mean", "variance", "cdf")),
            ("HalfNormal", D.HalfNormal, mk1(L.clt_half_normal_dist), [pos(2, 3)],
             pos(4, 2, 3), ("log_prob", "entropy", "mean", "variance", "stddev", "cdf")),
            ("HalfCauchy", D.HalfCauchy, mk1(L.clt_half_cauchy_dist), [pos(2, 3)],
             pos(4, 2, 3), ("log_prob", "entropy", "mean", "variance", "cdf")),
            ("Pareto", D.Pareto, mk2(L.clt_pareto_dist),
             [pos(2, 3) * 0.2, torch.tensor([0.5, 1.5, 3.0], dtype=dt)], pos(4, 2, 3) + 0.5,
             ("log_prob", "entropy", "mean", "variance", "cdf")),
            ("Weibull", D.Weibull, mk2(L.clt_weibull_dist), [pos(2, 3), pos(3)], pos(4, 2, 3),
             ("log_prob", "entropy", "mean", "variance", "stddev", "cdf")),
            ("Poisson", D.Poisson, mk1(L.clt_poisson_dist), [pos(2, 3) * 3], counts,
             ("log_prob", "mean", "variance", "stddev", "entropy")),
            ("Geometric", lambda p: D.Geometric(probs=p),
             (lambda p, o: L.clt_geometric_dist(p, None, 1, o), 1), [unit(2, 3)], counts,
             ("log_prob", "entropy", "mean", "variance", "stddev")),
            ("Kumaraswamy", D.Kumaraswamy, mk2(L.clt_kumaraswamy_dist), [pos(2, 3), pos(3)],
             unit(4, 2, 3), ("log_prob", "entropy", "mean", "variance", "stddev", "cdf")),
            ("NegativeBinomial", lambda n, p: D.NegativeBinomial(n, probs=p),
             (lambda n, p, o: L.clt_negative_binomial_dist(n, p, None, 1, o), 2),
             [pos(2, 3) * 3, unit(3)], counts, ("log_prob", "mean", "variance", "stddev",
                                                "entropy")),
            ("NegativeBinomial(logits)", lambda n, p: D.NegativeBinomial(n, logits=p),
             (lambda n, p, o: L.clt_negative_binomial_dist(n, None, p, 1, o), 2),
             [pos(2, 3) * 3, real(3)], counts, ("log_prob", "mean", "variance", "stddev")),
            ("RelaxedBernoulli", lambda t, p: D.RelaxedBernoulli(t, probs=p),
             (lambda t, p, o: L.clt_relaxed_bernoulli_dist(t, p, None, 1, o), 2),
             [pos(3), unit(2, 3)], unit(4, 2, 3), ("log_prob", "mean", "entropy")),
            ("RelaxedBernoulli(logits)", lambda t, p: D.RelaxedBernoulli(t, logits=p),
             (lambda t, p, o: L.clt_relaxed_bernoulli_dist(t, None, p, 1, o), 2),
             [pos(3), real(2, 3) * 2], unit(4, 2, 3), ("log_prob",)),
            ("Geometric(logits)", lambda p: D.Geometric(logits=p),
             (lambda p, o: L.clt_geometric_dist(None, p, 1, o), 1), [real(2, 3)], counts,
             ("log_prob", "entropy", "mean", "variance", "stddev")),
        )
        for name, tcls, mk, par, val, whats in fams:
            n = mk[1]
            for what in whats:
                if what in ("log_prob", "cdf"):
                    check("%s %s %s" % (name, dn(dt), what),
                          lambda *a, c=tcls, w=what, n=n: getattr(c(*a[:n]), w)(a[n]),
                          _dist_c(mk, calls[what]), par + [val], tol=tol)
                elif what == "entropy":
                    check("%s %s entropy" % (name, dn(dt)), lambda *a, c=tcls: c(*a).entropy(),
                          _dist_c(mk, calls[what]), par, tol=tol)
                else:
                    check("%s %s %s" % (name, dn(dt), what),
                          lambda *a, c=tcls, w=what: getattr(c(*a), w),
                          _dist_c(mk, calls[what]), par, tol=tol)
            if "cdf" in whats and name not in ("Pareto",):
                check("%s %s icdf" % (name, dn(dt)),
                      lambda *a, c=tcls, n=n: c(*a[:n]).icdf(a[n]),
                      _dist_c(mk, calls["icdf"]), par + [u], tol=tol)
            # a parameter outside its constraint; a value outside the support
            bad = [-p.abs() - 1 if k == (1 if name == "Pareto" else n - 1) else p
                   for k, p in enumerate(par)]
            if name in ("Dirichlet",):
                bad = [-par[0]]
            if name.endswith("(logits)"):
                bad = None
            if name == "Geometric":
                bad = [par[0] * 0]
            if bad is not None:
                check("%s %s bad parameter" % (name, dn(dt)),
                      lambda *a, c=tcls: c(*a).batch_shape and c(*a).mean,
                      _dist_c(mk, calls["mean"]), bad)
            outside = -val - 1 if name not in ("Gumbel", "Cauchy", "StudentT") else None
            if name in ("Poisson", "Geometric", "Geometric(logits)", "NegativeBinomial",
                        "NegativeBinomial(logits)"):
                outside = val + 0.5
            if outside is not None:
                check("%s %s outside the support" % (name, dn(dt)),
                      lambda *a, c=tcls, n=n: c(*a[:n]).log_prob(a[n]),
                      _dist_c(mk, lp), par + [outside])
        # kl_divergence of the pairs torch registers
        kl = L.clt_kl_divergence
        gam, bet = mk2(L.clt_gamma_dist), mk2(L.clt_beta_dist)
        pairs = (("Gamma", D.Gamma, gam, [pos(2, 3), pos(3), pos(3), pos(2, 3)]),
                 ("Chi2", D.Chi2, mk1(L.clt_chi2_dist), [pos(2, 3), pos(3)]),
                 ("Beta", D.Beta, bet, [pos(2, 3), pos(3), pos(3), pos(2, 3)]),
                 ("Dirichlet", D.Dirichlet, mk1(L.clt_dirichlet_dist), [conc, pos(4)]),
                 ("Poisson", D.Poisson, mk1(L.clt_poisson_dist), [pos(2, 3), pos(3)]),
                 ("Gumbel", D.Gumbel, mk2(L.clt_gumbel_dist),
                  [real(2, 3), pos(3), real(3), pos(2, 3)]),
                 ("Cauchy", D.Cauchy, mk2(L.clt_cauchy_dist),
                  [real(2, 3), pos(3), real(3), pos(2, 3)]),
                 ("HalfNormal", D.HalfNormal, mk1(L.clt_half_normal_dist), [pos(2, 3), pos(3)]),
                 ("Pareto", D.Pareto, mk2(L.clt_pareto_dist),
                  [pos(2, 3), pos(3), pos(3), pos(2, 3)]),
                 ("LogNormal", D.LogNormal, mk2(L.clt_log_normal_dist),
                  [real(2, 3), pos(3), real(3), pos(2, 3)]),
                 ("Geometric", lambda p: D.Geometric(probs=p),
                  (lambda p, o: L.clt_geometric_dist(p, None, 1, o), 1), [unit(2, 3), unit(3)]))
        for name, tcls, mk, ins in pairs:
            n = mk[1]
            check("kl_divergence %s %s" % (name, dn(dt)),
                  lambda *a, c=tcls, n=n: D.kl_divergence(c(*a[:n]), c(*a[n:])),
                  _dist_c([mk, mk], kl), ins, tol=tol)
        check("kl_divergence Gamma || Chi2 %s" % dn(dt),
              lambda a, b, c: D.kl_divergence(D.Gamma(a, b), D.Chi2(c)),
              _dist_c([gam, mk1(L.clt_chi2_dist)], kl), [pos(3), pos(3), pos(2, 3)], tol=tol)
        check("kl_divergence Poisson || Gamma %s" % dn(dt),
              lambda a, b, c: D.kl_divergence(D.Poisson(a), D.Gamma(b, c)),
              _dist_c([mk1(L.clt_poisson_dist), gam], kl), [pos(3), pos(3), pos(3)])
    # Gamma's reparameterised gradient: d x / d concentration at cltensor's
    # own draws x, against torch._standard_gamma_grad (float64)
    dt = torch.float64
    for lo, hi in ((0.05, 1.0), (1.0, 8.0), (8.0, 40.0)):
        c = torch.rand(64, generator=G, dtype=dt) * (hi - lo) + lo
        r = torch.rand(64, generator=G, dtype=dt) + 0.5
        uc, ur, d, x, g = upload(c), upload(r), P(), P(), P()
        ones = upload(torch.ones(64, dtype=dt))
        try:
            L.clt_set_requires_grad(uc, 1)
            if L.clt_gamma_dist(uc, ur, 1, C.byref(d)) or \
                    L.clt_distribution_rsample(d, None, 0, None, C.byref(x)) or \
                    L.clt_backward(x, ones, 0) or L.clt_grad(uc, C.byref(g)):
                fail("Gamma rsample grad [%g, %g)" % (lo, hi), L.clt_last_error().decode())
                continue
            xs = torch.from_numpy(download(x)[0])
            want = torch._standard_gamma_grad(c, xs * r) / r
            got = download(g)[0]
            ok("Gamma rsample grad [%g, %g)" % (lo, hi),
               np.allclose(got, want.numpy(), rtol=1e-6, atol=1e-9),
               "max difference %g" % np.abs(got - want.numpy()).max())
        finally:
            L.clt_distribution_free(d)
            for h in (uc, ur, x, g, ones):
                L.clt_tensor_free(h)


def _sample_moments(name, mk, par, tmean, tvar, n=20000, shape_ok=None):
    """Draws n samples of the distribution made by mk(par) with a seeded
    generator and checks their mean against torch's mean within 6 standard
    errors (and their variance within 15%)."""
    gen, d, x = P(), P(), P()
    hs = [upload(t) for t in par]
    try:
        if L.clt_generator_new(1234, C.byref(gen)) or mk[0](*hs, C.byref(d)) or \
                L.clt_distribution_sample(d, gen, 1, (C.c_int64 * 1)(n), C.byref(x)):
            fail("%s sample moments" % name, L.clt_last_error().decode())
            return
        xs = torch.from_numpy(download(x)[0]).double()
        m, v = xs.mean(0), xs.var(0)
        tm, tv = tmean.double(), tvar.double()
        se = (tv / n).sqrt()
        ok("%s sample mean" % name, bool(((m - tm).abs() <= 6 * se + 1e-12).all()),
           "mean %s vs %s" % (m.flatten()[:6].tolist(), tm.flatten()[:6].tolist()))
        ok("%s sample variance" % name, bool(((v - tv).abs() <= 0.15 * tv + 1e-9).all()),
           "variance %s vs %s" % (v.flatten()[:6].tolist(), tv.flatten()[:6].tolist()))
    finally:
        L.clt_distribution_free(d)
        L.clt_tensor_free(x)
        L.clt_generator_free(gen)
        for h in hs:
            L.clt_tensor_free(h)


def dist2():
    """Binomial, Multinomial and ContinuousBernoulli (log_prob, entropy, the
    moments, cdf/icdf, refusals, KL pairs, sample moments), and
    torch.binomial's sampler against the Binomial's moments."""
    D = torch.distributions
    _dist_protos()
    proto("clt_binomial_dist", [P, P, P, C.c_int, PP])
    proto("clt_multinomial_dist", [C.c_int64, P, P, C.c_int, PP])
    proto("clt_continuous_bernoulli_dist", [P, P, C.c_int, PP])
    proto("clt_von_mises_dist", [P, P, C.c_int, PP])
    proto("clt_relaxed_one_hot_categorical_dist", [P, P, P, C.c_int, PP])
    proto("clt_distribution_sample", [P, P, C.c_int, I64P, PP])
    proto("clt_generator_new", [C.c_uint64, PP])
    proto("clt_generator_free", [P], None)
    proto("clt_binomial", [P, P, P, PP])
    proto("clt_gamma_dist", [P, P, C.c_int, PP])
    proto("clt_beta_dist", [P, P, C.c_int, PP])
    proto("clt_gumbel_dist", [P, P, C.c_int, PP])
    proto("clt_pareto_dist", [P, P, C.c_int, PP])
    lp = lambda d, v, o: L.clt_distribution_log_prob(d, v, o)
    calls = {"log_prob": lp, "cdf": L.clt_distribution_cdf, "icdf": L.clt_distribution_icdf,
             "entropy": L.clt_distribution_entropy, "mean": L.clt_distribution_mean,
             "variance": L.clt_distribution_variance, "stddev": L.clt_distribution_stddev}
    binom_p = (lambda n, p, o: L.clt_binomial_dist(n, p, None, 1, o), 2)
    binom_l = (lambda n, p, o: L.clt_binomial_dist(n, None, p, 1, o), 2)
    cb_p = (lambda p, o: L.clt_continuous_bernoulli_dist(p, None, 1, o), 1)
    cb_l = (lambda p, o: L.clt_continuous_bernoulli_dist(None, p, 1, o), 1)
    multi = lambda n: (lambda p, o: L.clt_multinomial_dist(n, p, None, 1, o), 1)
    multi_l = lambda n: (lambda p, o: L.clt_multinomial_dist(n, None, p, 1, o), 1)
    for dt in FLOATS:
        tol = "red"
        real = lambda *sh: torch.randn(*sh, generator=G, dtype=torch.float64).to(dt)
        unit = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 0.9 + 0.05
        cnt = torch.tensor([[3., 7., 0.], [12., 1., 5.]], dtype=dt)
        k = torch.minimum(torch.randint(0, 13, (4, 2, 3), generator=G).to(dt), cnt)
        # probs near 1/2 take torch's Taylor branch
        cbp = torch.tensor([[0.1, 0.4995, 0.5], [0.5007, 0.93, 0.2]], dtype=dt)
        fams = (
            ("Binomial", lambda n, p: D.Binomial(n, probs=p), binom_p, [cnt, unit(2, 3)], k,
             ("log_prob", "mean", "variance", "stddev")),
            ("Binomial(logits)", lambda n, p: D.Binomial(n, logits=p), binom_l,
             [cnt, real(3) * 2], k, ("log_prob", "mean", "variance")),
            ("Binomial(homogeneous)", lambda n, p: D.Binomial(n, probs=p), binom_p,
             [torch.full((3,), 6.0, dtype=dt), unit(2, 3)], k.clamp(max=6), ("log_prob", "entropy")),
            ("ContinuousBernoulli", lambda p: D.ContinuousBernoulli(probs=p), cb_p, [cbp],
             unit(4, 2, 3), ("log_prob", "entropy", "mean", "variance", "stddev", "cdf")),
            ("VonMises", D.VonMises, (lambda a, b, o: L.clt_von_mises_dist(a, b, 1, o), 2),
             [real(2, 3) * 2, torch.tensor([0.3, 3.0, 12.0], dtype=dt)], real(4, 2, 3) * 3,
             ("log_prob", "mean", "variance", "stddev")),
            ("ContinuousBernoulli(logits)", lambda p: D.ContinuousBernoulli(logits=p), cb_l,
             [real(2, 3) * 3], unit(4, 2, 3), ("log_prob", "entropy", "mean", "variance", "cdf")),
        )
        for name, tcls, mk, par, val, whats in fams:
            n = mk[1]
            for what in whats:
                if what in ("log_prob", "cdf"):
                    check("%s %s %s" % (name, dn(dt), what),
                          lambda *a, c=tcls, w=what, n=n: getattr(c(*a[:n]), w)(a[n]),
                          _dist_c(mk, calls[what]), par + [val], tol=tol)
                elif what == "entropy":
                    check("%s %s entropy" % (name, dn(dt)), lambda *a, c=tcls: c(*a).entropy(),
                          _dist_c(mk, calls[what]), par, tol=tol)
                else:
                    check("%s %s %s" % (name, dn(dt), what),
                          lambda *a, c=tcls, w=what: getattr(c(*a), w),
                          _dist_c(mk, calls[what]), par, tol=tol)
            if "cdf" in whats:
                check("%s %s icdf" % (name, dn(dt)),
                      lambda *a, c=tcls, n=n: c(*a[:n]).icdf(a[n]),
                      _dist_c(mk, calls["icdf"]), par + [unit(4, 2, 3)], tol=tol)
        # refusals: a parameter outside its constraint, a value outside the support
        check("Binomial %s fractional total_count" % dn(dt),
              lambda n, p: D.Binomial(n, probs=p).mean, _dist_c(binom_p, calls["mean"]),
              [cnt + 0.5, unit(3)])
        check("Binomial %s probs above 1" % dn(dt),
              lambda n, p: D.Binomial(n, probs=p).mean, _dist_c(binom_p, calls["mean"]),
              [cnt, unit(3) + 1])
        check("Binomial %s value above total_count" % dn(dt),
              lambda n, p, v: D.Binomial(n, probs=p).log_prob(v), _dist_c(binom_p, lp),
              [cnt, unit(3), cnt + 1])
        check("Binomial %s inhomogeneous entropy" % dn(dt),
              lambda n, p: D.Binomial(n, probs=p).entropy(), _dist_c(binom_p, calls["entropy"]),
              [cnt, unit(3)])
        check("ContinuousBernoulli %s value outside [0, 1]" % dn(dt),
              lambda p, v: D.ContinuousBernoulli(probs=p).log_prob(v), _dist_c(cb_p, lp),
              [cbp, unit(2, 3) + 1])
        # Multinomial
        pr = torch.softmax(real(2, 4), -1)
        vals = torch.tensor([[1., 0., 2., 2.], [0., 5., 0., 0.], [2., 1., 1., 1.]], dtype=dt)
        vals = vals.unsqueeze(1).expand(3, 2, 4)
        for nm, mkm, tm in (("probs", multi, lambda n, p: D.Multinomial(n, probs=p)),
                            ("logits", multi_l, lambda n, p: D.Multinomial(n, logits=p))):
            par = pr if nm == "probs" else real(2, 4)
            check("Multinomial(%s) %s log_prob" % (nm, dn(dt)),
                  lambda p, v, t=tm: t(5, p).log_prob(v), _dist_c(mkm(5), lp), [par, vals],
                  tol=tol)
            for what in ("mean", "variance", "entropy"):
                check("Multinomial(%s) %s %s" % (nm, dn(dt), what),
                      lambda p, t=tm, w=what: (t(5, p).entropy() if w == "entropy"
                                               else getattr(t(5, p), w)),
                      _dist_c(mkm(5), calls[what]), [par], tol=tol)
        # RelaxedOneHotCategorical
        roh = lambda pl: (lambda t, p, o: L.clt_relaxed_one_hot_categorical_dist(
            t, p if pl == 0 else None, p if pl == 1 else None, 1, o), 2)
        sv = torch.softmax(real(5, 2, 4) * 2, -1)
        for pl, nm in ((0, "probs"), (1, "logits")):
            tcls = (lambda t, p: D.RelaxedOneHotCategorical(t, probs=p)) if pl == 0 else \
                (lambda t, p: D.RelaxedOneHotCategorical(t, logits=p))
            par = pr if pl == 0 else real(2, 4)
            # (torch broadcasts a temperature with the events; cltensor's is per batch
            # element: the two agree on a single one)
            for temp in (torch.tensor(0.7, dtype=dt), torch.tensor([1.6], dtype=dt)):
                check("RelaxedOneHotCategorical(%s) %s log_prob t%s" % (nm, dn(dt),
                                                                         list(temp.shape)),
                      lambda t, p, v, c=tcls: c(t, p).log_prob(v), _dist_c(roh(pl), lp),
                      [temp, par, sv], tol=tol)
        check("RelaxedOneHotCategorical %s value off the simplex" % dn(dt),
              lambda t, p, v: D.RelaxedOneHotCategorical(t, probs=p).log_prob(v),
              _dist_c(roh(0), lp), [torch.tensor(0.7, dtype=dt), pr, sv * 2])
        check("Multinomial %s sum above total_count" % dn(dt),
              lambda p, v: D.Multinomial(3, probs=p).log_prob(v), _dist_c(multi(3), lp),
              [pr, vals])
        check("Multinomial %s negative value" % dn(dt),
              lambda p, v: D.Multinomial(5, probs=p).log_prob(v), _dist_c(multi(5), lp),
              [pr, -vals])
        # KL pairs
        kl = L.clt_kl_divergence
        c2 = torch.tensor([[3., 7., 2.], [12., 4., 5.]], dtype=dt)
        check("kl_divergence Binomial %s" % dn(dt),
              lambda n1, p1, n2, p2: D.kl_divergence(D.Binomial(n1, probs=p1),
                                                     D.Binomial(n2, probs=p2)),
              _dist_c([binom_p, binom_p], kl), [c2, unit(2, 3), cnt.clamp(max=3) * 0 + c2 -
                                                 torch.tensor([[0., 0, 1], [0, 0, 0]], dtype=dt),
                                                 unit(3)], tol=tol)
        check("kl_divergence Binomial %s q.total_count larger" % dn(dt),
              lambda n1, p1, n2, p2: D.kl_divergence(D.Binomial(n1, probs=p1),
                                                     D.Binomial(n2, probs=p2)),
              _dist_c([binom_p, binom_p], kl), [c2, unit(2, 3), c2 + 1, unit(3)])
        check("kl_divergence ContinuousBernoulli %s" % dn(dt),
              lambda a, b: D.kl_divergence(D.ContinuousBernoulli(a), D.ContinuousBernoulli(b)),
              _dist_c([cb_p, cb_p], kl), [cbp, unit(3)], tol=tol)
        # cross-family pairs
        pos = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 2 + 0.2
        mk2 = lambda f: (lambda a, b, o: f(a, b, 1, o), 2)
        normal = mk2(L.clt_normal_dist)
        expo = (lambda r, o: L.clt_exponential_dist(r, 1, o), 1)
        gam, bet = mk2(L.clt_gamma_dist), mk2(L.clt_beta_dist)
        gum, par = mk2(L.clt_gumbel_dist), mk2(L.clt_pareto_dist)
        lap = mk2(L.clt_laplace_dist)
        cross = (
            ("Exponential || Gamma", D.Exponential, expo, D.Gamma, gam, [pos(3), pos(2, 3), pos(3)]),
            ("Exponential || Gumbel", D.Exponential, expo, D.Gumbel, gum,
             [pos(3), real(2, 3), pos(3)]),
            ("Gamma || Exponential", D.Gamma, gam, D.Exponential, expo, [pos(2, 3), pos(3), pos(3)]),
            ("Gamma || Normal", D.Gamma, gam, D.Normal, normal,
             [pos(2, 3), pos(3), real(3), pos(2, 3)]),
            ("Gumbel || Normal", D.Gumbel, gum, D.Normal, normal,
             [real(2, 3), pos(3), real(3), pos(2, 3)]),
            ("Normal || Gumbel", D.Normal, normal, D.Gumbel, gum,
             [real(2, 3), pos(3), real(3), pos(2, 3)]),
            ("Beta || Normal", D.Beta, bet, D.Normal, normal,
             [pos(2, 3), pos(3), real(3), pos(2, 3)]),
            ("Beta || Gamma", D.Beta, bet, D.Gamma, gam, [pos(2, 3), pos(3), pos(3), pos(2, 3)]),
            ("Beta || Exponential", D.Beta, bet, D.Exponential, expo, [pos(2, 3), pos(3), pos(3)]),
            ("ContinuousBernoulli || Normal", D.ContinuousBernoulli, cb_p, D.Normal, normal,
             [cbp, real(3), pos(2, 3)]),
            ("ContinuousBernoulli || Exponential", D.ContinuousBernoulli, cb_p, D.Exponential,
             expo, [cbp, pos(3)]),
            ("Pareto || Exponential", D.Pareto, par, D.Exponential, expo,
             [pos(2, 3), torch.tensor([0.5, 1.0, 2.5], dtype=dt), pos(3)]),
            ("Gamma || Pareto", D.Gamma, gam, D.Pareto, par, [pos(2, 3), pos(3), pos(3), pos(3)]),
            ("Normal || Beta", D.Normal, normal, D.Beta, bet, [real(2, 3), pos(3), pos(3), pos(3)]),
            ("Gumbel || Uniform", D.Gumbel, gum, D.Uniform, mk2(L.clt_uniform_dist),
             [real(2, 3), pos(3), real(3) - 3, real(3) + 3]),
            ("Laplace || Gamma", D.Laplace, lap, D.Gamma, gam, [real(2, 3), pos(3), pos(3), pos(3)]),
            ("Exponential || ContinuousBernoulli", D.Exponential, expo, D.ContinuousBernoulli,
             cb_p, [pos(3), cbp]),
        )
        for name, tp, mp, tq, mq, ins in cross:
            n = mp[1]
            check("kl_divergence %s %s" % (name, dn(dt)),
                  lambda *a, tp=tp, tq=tq, n=n: D.kl_divergence(tp(*a[:n]), tq(*a[n:])),
                  _dist_c([mp, mq], kl), ins, tol=tol)
        # sample moments with a fixed seed
        _sample_moments("Binomial %s" % dn(dt), binom_p,
                        [torch.tensor([4., 30., 200., 1000.], dtype=dt),
                         torch.tensor([0.3, 0.8, 0.02, 0.45], dtype=dt)],
                        *(lambda b: (b.mean, b.variance))(D.Binomial(
                            torch.tensor([4., 30., 200., 1000.]),
                            probs=torch.tensor([0.3, 0.8, 0.02, 0.45]))))
        _sample_moments("ContinuousBernoulli %s" % dn(dt), cb_p,
                        [torch.tensor([0.1, 0.5, 0.7, 0.98], dtype=dt)],
                        *(lambda b: (b.mean, b.variance))(D.ContinuousBernoulli(
                            torch.tensor([0.1, 0.5, 0.7, 0.98], dtype=torch.float64))))
        # VonMises: E[cos(x - loc)] = I1(k) / I0(k) = 1 - circular variance
        gen, d, x = P(), P(), P()
        vl = torch.tensor([0.5, -2.0, 3.0], dtype=dt)
        vk = torch.tensor([0.2, 2.0, 30.0], dtype=dt)
        hs = [upload(vl), upload(vk)]
        try:
            if L.clt_generator_new(99, C.byref(gen)) or L.clt_von_mises_dist(hs[0], hs[1], 1,
                                                                              C.byref(d)) or \
                    L.clt_distribution_sample(d, gen, 1, (C.c_int64 * 1)(20000), C.byref(x)):
                fail("VonMises %s sample moments" % dn(dt), L.clt_last_error().decode())
            else:
                xs = torch.from_numpy(download(x)[0]).double()
                tv = D.VonMises(vl.double(), vk.double())
                cm = torch.cos(xs - vl.double()).mean(0)
                ok("VonMises %s samples in [-pi, pi)" % dn(dt),
                   bool(((xs >= -math.pi) & (xs < math.pi)).all()))
                ok("VonMises %s sample E cos" % dn(dt),
                   bool(((cm - (1 - tv.variance)).abs() < 0.02).all()),
                   "%s vs %s" % (cm.tolist(), (1 - tv.variance).tolist()))
        finally:
            L.clt_distribution_free(d)
            L.clt_tensor_free(x)
            L.clt_generator_free(gen)
            for h in hs:
                L.clt_tensor_free(h)
        pm = torch.tensor([0.1, 0.2, 0.7], dtype=dt)
        _sample_moments("Multinomial %s" % dn(dt), multi(10), [pm],
                        *(lambda b: (b.mean, b.variance))(D.Multinomial(10, probs=pm.double())),
                        n=5000)


# ---- GradScaler's state, swa_utils (AveragedModel, update_bn, SWALR) --------

class SgdOpts(C.Structure):
    _fields_ = [("lr", C.c_double), ("momentum", C.c_double), ("dampening", C.c_double),
                ("weight_decay", C.c_double), ("nesterov", C.c_int)]


class ScalerOpts(C.Structure):
    _fields_ = [("init_scale", C.c_double), ("growth_factor", C.c_double),
                ("backoff_factor", C.c_double), ("growth_interval", C.c_int64),
                ("enabled", C.c_int)]


class ArraySpec(C.Structure):
    _fields_ = [("data", P), ("dtype", C.c_int), ("ndim", C.c_int), ("shape", I64P)]


class LoaderOpts(C.Structure):
    _fields_ = [("batch_size", C.c_int64), ("shuffle", C.c_int), ("seed", C.c_uint64),
                ("drop_last", C.c_int), ("num_replicas", C.c_int), ("rank", C.c_int),
                ("indices", I64P), ("num_indices", C.c_int64), ("weights", P),
                ("num_samples", C.c_int64), ("replacement", C.c_int),
                ("num_workers", C.c_int), ("prefetch_factor", C.c_int),
                ("worker_init_fn", P), ("worker_user", P), ("transform", P),
                ("transform_user", P)]


def _st_metadata(path):
    """A safetensors file's __metadata__ (read by hand: 8 bytes of length,
    then the JSON header)."""
    import json
    import struct
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        return json.loads(fh.read(n)).get("__metadata__", {})


def _enabled_scaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                    growth_interval=2000):
    """torch 1.13's GradScaler without CUDA disables itself; its state_dict
    and load_state_dict need no device once the attributes its enabled
    constructor sets are set here, as it sets them."""
    s = torch.cuda.amp.GradScaler(enabled=False)
    s._enabled = True
    s._init_scale, s._scale = init_scale, None
    s._growth_factor, s._backoff_factor = growth_factor, backoff_factor
    s._growth_interval = growth_interval
    s._init_growth_tracker, s._growth_tracker = 0, None
    return s


def amp_swa():
    """GradScaler's file against torch's state_dict both ways;
    AveragedModel (SWA mean and EMA) and update_bn against torch's
    swa_utils, their state_dict loading into torch's AveragedModel; SWALR's
    rates against torch's, alone and after a CosineAnnealingLR."""
    import ast
    import tempfile
    from torch.optim import swa_utils
    NP = C.POINTER(Named)
    proto("clt_grad_scaler_new", [C.POINTER(ScalerOpts), PP])
    proto("clt_grad_scaler_update", [P, C.POINTER(C.c_double)])
    proto("clt_grad_scaler_save", [P, C.c_char_p])
    proto("clt_grad_scaler_load", [P, C.c_char_p])
    proto("clt_grad_scaler_get_scale", [P], C.c_double)
    proto("clt_grad_scaler_growth_tracker", [P], C.c_int64)
    proto("clt_grad_scaler_free", [P], None)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "scaler.safetensors")
        sc = P()
        o = ScalerOpts(1024.0, 3.0, 0.125, 7, 1)
        if L.clt_grad_scaler_new(C.byref(o), C.byref(sc)):
            fail("GradScaler new", L.clt_last_error().decode())
            return
        try:
            L.clt_grad_scaler_update(sc, C.byref(C.c_double(0.1)))
            if L.clt_grad_scaler_save(sc, path.encode()):
                fail("GradScaler save", L.clt_last_error().decode())
                return
            md = _st_metadata(path)
            ours = {k: ast.literal_eval(v) for k, v in md.items() if k != "scaler"}
            t = _enabled_scaler()
            t.load_state_dict(ours)
            back = t.state_dict()
            ok("GradScaler file into torch's load_state_dict", back == ours and
               all(type(back[k]) is type(ours[k]) for k in back), "%s / %s" % (back, ours))
            ok("GradScaler file: scale as float32", ours.get("scale") == float(np.float32(0.1)),
               "%r" % ours.get("scale"))
            # torch's state_dict into our file format, loaded
            t = _enabled_scaler(init_scale=2.0 ** 20, growth_factor=4.0, backoff_factor=0.25,
                                growth_interval=9)
            t._init_growth_tracker = 5
            sd = t.state_dict()
            from safetensors.torch import save_file
            meta = {k: repr(v) for k, v in sd.items()}
            meta["scaler"] = "GradScaler"
            save_file({}, path, metadata=meta)
            if L.clt_grad_scaler_load(sc, path.encode()):
                fail("GradScaler load torch's state_dict", L.clt_last_error().decode())
            else:
                ok("GradScaler load torch's state_dict",
                   L.clt_grad_scaler_get_scale(sc) == sd["scale"] and
                   L.clt_grad_scaler_growth_tracker(sc) == sd["_growth_tracker"],
                   "scale %g tracker %d" % (L.clt_grad_scaler_get_scale(sc),
                                            L.clt_grad_scaler_growth_tracker(sc)))
        finally:
            L.clt_grad_scaler_free(sc)

    # AveragedModel and update_bn
    proto("clt_linear", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_batch_norm1d_layer", [P, C.c_int64, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_sequential", [PP, C.c_size_t, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_save_torch", [C.c_char_p, NP, C.c_size_t])
    proto("clt_averaged_model_new", [P, P, P, P, C.c_int, PP])
    proto("clt_averaged_model_ema", [P, P, C.c_double, C.c_int, PP])
    proto("clt_averaged_model_update", [P, P])
    proto("clt_averaged_model_module", [P], P)
    proto("clt_averaged_model_state", [P, C.POINTER(NP), C.POINTER(C.c_size_t)])
    proto("clt_averaged_model_free", [P], None)
    proto("clt_averaged_model_load_torch", [P, C.c_char_p])
    proto("clt_averaged_model_count", [P], C.c_int64)
    proto("clt_update_bn", [P, P])
    proto("clt_dataloader_arrays", [P, C.POINTER(ArraySpec), P, C.POINTER(LoaderOpts), PP])
    proto("clt_dataloader_free", [P], None)
    proto("clt_free", [P], None)
    torch.manual_seed(5)
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    x = torch.randn(10, 3)
    for ema, use_buffers in ((False, False), (False, True), (True, False)):
        name = "AveragedModel %s use_buffers=%s" % ("EMA 0.75" if ema else "SWA", use_buffers)
        fn = (lambda a, m, n: 0.75 * a + 0.25 * m) if ema else None
        cm, av, dl = P(), P(), P()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.pt")
            try:
                lin, bn = P(), P()
                if (L.clt_linear(DEV, 3, 4, 1, None, C.byref(lin)) or
                        L.clt_batch_norm1d_layer(DEV, 4, 1e-5, 0.1, 1, 1, C.byref(bn)) or
                        L.clt_sequential((P * 2)(lin, bn), 2, C.byref(cm))):
                    fail(name, L.clt_last_error().decode())
                    continue
                torch.save(tmodel.state_dict(), path)
                L.clt_module_load_torch(cm, path.encode(), 1)
                tavg = swa_utils.AveragedModel(tmodel, avg_fn=fn, use_buffers=use_buffers)
                made = (L.clt_averaged_model_ema(cm, None, 0.75, int(use_buffers), C.byref(av))
                        if ema else
                        L.clt_averaged_model_new(cm, None, None, None, int(use_buffers),
                                                 C.byref(av)))
                if made:
                    fail(name, L.clt_last_error().decode())
                    continue
                bad = None
                for k in range(4):
                    with torch.no_grad():
                        for q in tmodel.parameters():
                            q.add_(torch.randn_like(q) * (k + 1))
                        tmodel[1].running_mean.add_(torch.randn(4))
                    torch.save(tmodel.state_dict(), path)
                    if (L.clt_module_load_torch(cm, path.encode(), 1) or
                            L.clt_averaged_model_update(av, cm)):
                        bad = L.clt_last_error().decode()
                        break
                    tavg.update_parameters(tmodel)
                if bad:
                    fail(name, bad)
                    continue
                # update_bn over batches of 4 (the last of 2), as a DataLoader
                xa = np.ascontiguousarray(x.numpy())
                spec = ArraySpec(xa.ctypes.data_as(P), F32, 2, shape_arr(xa.shape))
                lo = LoaderOpts(4, 0, 0, 0, 0, 0, None, 0, None, 0, 1)
                if (L.clt_dataloader_arrays(DEV, C.byref(spec), None, C.byref(lo), C.byref(dl))
                        or L.clt_update_bn(dl, L.clt_averaged_model_module(av))):
                    fail(name + " update_bn", L.clt_last_error().decode())
                    continue
                swa_utils.update_bn([x[0:4], x[4:8], x[8:10]], tavg)
                arr, n = NP(), C.c_size_t()
                if (L.clt_averaged_model_state(av, C.byref(arr), C.byref(n)) or
                        L.clt_save_torch(path.encode(), arr, n)):
                    fail(name + " state", L.clt_last_error().decode())
                    continue
                L.clt_free(arr)
                got = torch.load(path)
                want = tavg.state_dict()
                ok(name + " state_dict keys", list(got) == list(want),
                   "%s / %s" % (list(got), list(want)))
                for k in want:
                    if k not in got:
                        continue
                    g, w = got[k], want[k]
                    same = g.dtype == w.dtype and g.shape == w.shape
                    ok("%s %s" % (name, k), same and torch.allclose(g.double(), w.double(),
                                                                    rtol=2e-6, atol=2e-6),
                       "%s %s / %s %s, max diff %g"
                       % (g.dtype, tuple(g.shape), w.dtype, tuple(w.shape),
                          (g.double() - w.double()).abs().max() if same else -1))
                fresh = swa_utils.AveragedModel(tmodel, avg_fn=fn, use_buffers=use_buffers)
                try:
                    fresh.load_state_dict(got, strict=True)
                    ok(name + " loads into torch's AveragedModel", True)
                except Exception as e:
                    fail(name + " loads into torch's AveragedModel", str(e))
                # torch's file into a fresh average: the count and values go on
                torch.save(want, path)
                L.clt_averaged_model_free(av)
                av = P()
                if (L.clt_averaged_model_new(cm, None, None, None, int(use_buffers), C.byref(av))
                        or L.clt_averaged_model_load_torch(av, path.encode())):
                    fail(name + " loads torch's file", L.clt_last_error().decode())
                    continue
                ok(name + " loads torch's file: n_averaged",
                   L.clt_averaged_model_count(av) == int(want["n_averaged"]),
                   "%d / %d" % (L.clt_averaged_model_count(av), int(want["n_averaged"])))
            finally:
                L.clt_dataloader_free(dl)
                L.clt_averaged_model_free(av)
                L.clt_module_free(cm)

    # SWALR, alone and after a CosineAnnealingLR
    proto("clt_sgd", [PP, C.c_size_t, C.POINTER(SgdOpts), PP])
    proto("clt_optimizer_add_param_group", [P, PP, C.c_size_t, P])
    proto("clt_optimizer_group_lr", [P, C.c_size_t], C.c_double)
    proto("clt_optimizer_free", [P], None)
    proto("clt_swa_lr", [P, C.POINTER(C.c_double), C.c_size_t, C.c_int64, C.c_char_p, PP])
    proto("clt_cosine_lr", [P, C.c_int64, C.c_double, PP])
    proto("clt_lr_scheduler_step", [P])
    proto("clt_lr_scheduler_free", [P], None)
    proto("clt_set_requires_grad", [P, C.c_int])
    for epochs, strategy, before in ((3, "cos", 0), (3, "linear", 0), (0, "cos", 0),
                                     (5, "linear", 3), (10, "cos", 4)):
        name = "SWALR anneal_epochs=%d %s after %d cosine steps" % (epochs, strategy, before)
        a, b = torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)
        topt = torch.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.2}], lr=0.5)
        keep, opt, cs, sw = [upload(a.detach()), upload(b.detach())], P(), P(), P()
        try:
            for t in keep:
                L.clt_set_requires_grad(t, 1)
            so, so2 = SgdOpts(0.5, 0, 0, 0, 0), SgdOpts(0.2, 0, 0, 0, 0)
            if (L.clt_sgd((P * 1)(keep[0]), 1, C.byref(so), C.byref(opt)) or
                    L.clt_optimizer_add_param_group(opt, (P * 1)(keep[1]), 1, C.byref(so2))):
                fail(name, L.clt_last_error().decode())
                continue
            tcs = None
            if before:
                tcs = torch.optim.lr_scheduler.CosineAnnealingLR(topt, 10)
                L.clt_cosine_lr(opt, 10, 0.0, C.byref(cs))
                for _ in range(before):
                    topt.step()
                    tcs.step()
                    L.clt_lr_scheduler_step(cs)
            tsw = swa_utils.SWALR(topt, swa_lr=[0.05, 0.01], anneal_epochs=epochs,
                                  anneal_strategy=strategy)
            if L.clt_swa_lr(opt, (C.c_double * 2)(0.05, 0.01), 2, epochs, strategy.encode(),
                            C.byref(sw)):
                fail(name, L.clt_last_error().decode())
                continue
            worst = None
            for e in range(12):
                for g in range(2):
                    got, want = L.clt_optimizer_group_lr(opt, g), topt.param_groups[g]["lr"]
                    # after the cosine steps the rates start from its
                    # closed form, which is torch's chainable one to an ulp
                    # (optim.h); alone, bit for bit
                    off = abs(got - want) > (1e-15 * abs(want) if before else 0)
                    if off and worst is None:
                        worst = "step %d group %d: %.17g / %.17g" % (e, g, got, want)
                topt.step()
                tsw.step()
                L.clt_lr_scheduler_step(sw)
            ok(name + (" rates" if before else " rates bit for bit"), worst is None,
               worst or "")
        finally:
            L.clt_lr_scheduler_free(sw)
            L.clt_lr_scheduler_free(cs)
            L.clt_optimizer_free(opt)
            for t in keep:
                L.clt_tensor_free(t)


def spatial():
    """interpolate's modes in 1, 2 and 3 spatial dims, grid_sample, affine_grid."""
    F = torch.nn.functional
    proto("clt_interpolate_nd", [P, I64P, C.POINTER(C.c_double), C.c_int, C.c_int, C.c_int, PP])
    proto("clt_grid_sample", [P, P, C.c_int, C.c_int, C.c_int, PP])
    proto("clt_affine_grid", [P, C.c_int, I64P, C.c_int, PP])
    modes = {"nearest": 0, "bilinear": 1, "nearest-exact": 2, "linear": 3, "bicubic": 4,
             "trilinear": 5, "area": 6}
    by_rank = {3: ("nearest", "nearest-exact", "linear", "area", "bilinear", "bicubic"),
               4: ("nearest", "nearest-exact", "bilinear", "bicubic", "area", "linear"),
               5: ("nearest", "nearest-exact", "trilinear", "area", "bicubic")}
    shapes = {3: [((2, 3, 7), (11,), None), ((1, 2, 9), (4,), None), ((1, 1, 1), (5,), None),
                  ((2, 2, 6), None, (2.5,)), ((1, 3, 8), None, (0.4,)), ((1, 2, 5), (5,), None),
                  ((1, 2, 4), (1,), None)],
              4: [((2, 3, 5, 4), (9, 7), None), ((1, 2, 7, 9), (3, 4), None),
                  ((1, 1, 1, 5), (4, 1), None), ((1, 2, 5, 7), None, (1.7, 0.6)),
                  ((1, 1, 4, 6), None, (2.0, 3.0)), ((2, 2, 6, 6), (6, 6), None),
                  ((1, 1, 10, 3), None, (0.35, 3.3))],
              5: [((1, 2, 3, 4, 5), (5, 3, 7), None), ((2, 1, 2, 3, 2), None, (2.0, 1.5, 0.5)),
                  ((1, 1, 1, 4, 1), (3, 2, 2), None), ((1, 2, 6, 5, 4), (2, 2, 3), None)]}
    for dt in FLOATS:
        for rank, cases in shapes.items():
            for xs, size, sf in cases:
                for mode in by_rank[rank]:
                    aligns = (None,) if mode in ("nearest", "nearest-exact", "area") \
                        else (False, True)
                    for align in aligns + ((True,) if mode == "nearest" else ()):
                        for rec in ((None, True) if sf else (None,)):
                            def tf(x, size=size, sf=sf, mode=mode, align=align, rec=rec):
                                return F.interpolate(x, size=size, scale_factor=sf, mode=mode,
                                                     align_corners=align,
                                                     recompute_scale_factor=rec)

                            def cf(x, r, size=size, sf=sf, mode=mode, align=align, rec=rec):
                                return L.clt_interpolate_nd(
                                    x, _i64s(*size) if size else None,
                                    (C.c_double * len(sf))(*sf) if sf else None, modes[mode],
                                    1 if align else 0, 1 if rec else 0, r)
                            exact = mode in ("nearest", "nearest-exact")
                            check("interpolate_nd %s %s size=%s scale=%s %s align=%s rec=%s"
                                  % (dn(dt), list(xs), size, sf, mode, align, rec), tf, cf,
                                  [data(xs, dt)], tol="exact" if exact else "red")
    x = data((2, 3, 5, 6), torch.float64)
    check("interpolate_nd transposed bicubic",
          lambda t: F.interpolate(t, size=(7, 4), mode="bicubic", align_corners=False),
          lambda p, r: L.clt_interpolate_nd(p, _i64s(7, 4), None, 4, 0, 0, r),
          [In(data((2, 3, 6, 5), torch.float64), ("T",))], tol="red")
    check("interpolate_nd size with recompute (refused)",
          lambda t: F.interpolate(t, size=(4, 4), recompute_scale_factor=True),
          lambda p, r: L.clt_interpolate_nd(p, _i64s(4, 4), None, 0, 0, 1, r), [x])
    check("interpolate_nd 2-D input (refused)", lambda t: F.interpolate(t, size=(4,)),
          lambda p, r: L.clt_interpolate_nd(p, _i64s(4), None, 0, 0, 0, r),
          [data((3, 5), torch.float32)])
    check("interpolate_nd int64 (refused)", lambda t: F.interpolate(t, size=(4,)),
          lambda p, r: L.clt_interpolate_nd(p, _i64s(4), None, 0, 0, 0, r),
          [data((1, 3, 5), torch.int64)])
    # grid_sample: points well outside [-1, 1], on the edges and at pixel centres
    gmodes = {"bilinear": 0, "nearest": 1, "bicubic": 2}
    pads = {"zeros": 0, "border": 1, "reflection": 2}
    gcases = [((2, 3, 5, 7), (2, 4, 6, 2)), ((1, 2, 1, 1), (1, 3, 3, 2)),
              ((1, 1, 4, 1), (1, 5, 2, 2)), ((2, 1, 6, 4), (2, 1, 1, 2)),
              # 3-D samples (bicubic refused, as torch)
              ((2, 2, 3, 4, 5), (2, 2, 3, 4, 3)), ((1, 1, 1, 2, 1), (1, 2, 2, 2, 3))]
    for dt in FLOATS:
        for xs, gs in gcases:
            grid = data(gs, dt, lo=-1.8, hi=1.8)
            grid.view(-1)[:4] = torch.tensor([-1.0, 1.0, 1.0, -1.0], dtype=dt)
            for mode, pad, align in [(m, p_, a) for m in gmodes for p_ in pads
                                     for a in (False, True)]:
                check("grid_sample %s x%s g%s %s %s align=%s"
                      % (dn(dt), list(xs), list(gs), mode, pad, align),
                      lambda x, g, mode=mode, pad=pad, align=align:
                      F.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=align),
                      lambda x, g, r, mode=mode, pad=pad, align=align:
                      L.clt_grid_sample(x, g, gmodes[mode], pads[pad], int(align), r),
                      [data(xs, dt), grid], tol="red")
    f = torch.float32
    for xs, gs, why in (((2, 3, 4, 4), (1, 3, 3, 2), "batch"), ((1, 3, 4, 4), (1, 3, 3, 3), "last"),
                        ((1, 3, 4), (1, 3, 2), "3-d"), ((1, 3, 0, 4), (1, 3, 3, 2), "empty"),
                        ((1, 3, 2, 4, 4), (1, 3, 3, 3, 2), "5-d last"),
                        ((1, 3, 4, 4), (1, 2, 3, 3, 3), "ranks")):
        check("grid_sample %s (refused)" % why,
              lambda x, g: F.grid_sample(x, g, align_corners=False),
              lambda x, g, r: L.clt_grid_sample(x, g, 0, 0, 0, r), [data(xs, f), data(gs, f)])
    check("grid_sample dtypes (refused)", lambda x, g: F.grid_sample(x, g, align_corners=False),
          lambda x, g, r: L.clt_grid_sample(x, g, 0, 0, 0, r),
          [data((1, 1, 3, 3), f), data((1, 2, 2, 2), torch.float64)])
    check("grid_sample transposed input",
          lambda x, g: F.grid_sample(x, g, mode="bicubic", padding_mode="reflection",
                                     align_corners=False),
          lambda x, g, r: L.clt_grid_sample(x, g, 2, 2, 0, r),
          [In(data((2, 3, 4, 5), torch.float64), ("T",)),
           data((2, 3, 3, 2), torch.float64, lo=-1.5, hi=1.5)], tol="red")
    # affine_grid
    for dt in FLOATS:
        for size in ((2, 3, 4, 5), (1, 1, 1, 3), (3, 2, 1, 1), (2, 1, 3, 4, 5), (1, 2, 1, 2, 1)):
            k = len(size) - 2
            for align in (False, True):
                check("affine_grid %s %s align=%s" % (dn(dt), list(size), align),
                      lambda th, size=size, align=align:
                      F.affine_grid(th, size, align_corners=align),
                      lambda th, r, size=size, align=align:
                      L.clt_affine_grid(th, len(size), _i64s(*size), int(align), r),
                      [data((size[0], k, k + 1), dt, lo=-2, hi=2)], tol="mm")
    for th, size, why in (((2, 2, 3), (2, 3, 4), "3 sizes"), ((2, 3, 3), (2, 1, 4, 4), "3x3"),
                          ((2, 2, 3), (2, 1, 0, 4), "zero size")):
        check("affine_grid %s (refused)" % why,
              lambda t, size=size: F.affine_grid(t, size, align_corners=False),
              lambda t, r, size=size: L.clt_affine_grid(t, len(size), _i64s(*size), 0, r),
              [data(th, f)])



def _more_protos():
    PPP = C.POINTER(C.POINTER(C.c_void_p))
    SZP = C.POINTER(C.c_size_t)
    IP = C.POINTER(C.c_int)
    LP = C.POINTER(P)
    proto("clt_free", [P], None)
    proto("clt_tensor_strides", [P], I64P)
    proto("clt_add_scalar_", [P, C.c_double])
    proto("clt_unflatten", [P, C.c_int, I64P, C.c_int, PP])
    proto("clt_movedim", [P, IP, IP, C.c_int, PP])
    proto("clt_swapaxes", [P, C.c_int, C.c_int, PP])
    proto("clt_ravel", [P, PP])
    for n in ("view_as", "reshape_as", "expand_as"):
        proto("clt_" + n, [P, P, PP])
    proto("clt_as_strided", [P, C.c_int, I64P, I64P, I64P, PP])
    for n in ("atleast_1d", "atleast_2d", "atleast_3d"):
        proto("clt_" + n, [P, PP])
    proto("clt_tensor_split", [P, C.c_int64, C.c_int, PPP, SZP])
    proto("clt_tensor_split_indices", [P, I64P, C.c_size_t, C.c_int, PPP, SZP])
    for n in ("hsplit", "vsplit", "dsplit"):
        proto("clt_" + n, [P, C.c_int64, PPP, SZP])
        proto("clt_%s_indices" % n, [P, I64P, C.c_size_t, PPP, SZP])
    for n in ("hstack", "vstack", "dstack", "column_stack", "cartesian_prod"):
        proto("clt_" + n, [LP, C.c_size_t, PP])
    proto("clt_rot90", [P, C.c_int64, C.c_int, C.c_int, PP])
    proto("clt_combinations", [P, C.c_int64, C.c_int, PP])
    proto("clt_pdist", [P, C.c_double, PP])
    proto("clt_narrow_copy", [P, C.c_int, C.c_int64, C.c_int64, PP])
    proto("clt_select_scatter", [P, P, C.c_int, C.c_int64, PP])
    proto("clt_slice_scatter", [P, P, C.c_int, C.c_int64, C.c_int64, C.c_int64, PP])
    proto("clt_diagonal_scatter", [P, P, C.c_int64, C.c_int, C.c_int, PP])


def _torch_slice_scatter(t, src, dim, start=None, end=None, step=1):
    """torch.slice_scatter, which in torch 1.13 now and then reads a garbage
    size or stride ("cannot be represented as a SymInt", "Negative strides")
    and raises: then the same result made as torch documents it, a copy of
    t with the slice replaced by src."""
    try:
        return torch.slice_scatter(t, src, dim=dim, start=start, end=end, step=step)
    except RuntimeError as e:
        if "SymInt" not in str(e) and "Negative strides" not in str(e):
            raise
    r = t.clone()
    idx = [slice(None)] * t.dim()
    idx[dim] = slice(start, end, step)
    r[tuple(idx)] = src
    return r


def check_layout(name, tfn, cfn, inputs):
    """Where torch's result is a view of its first input, cltensor's must be
    one with the same strides (an in-place add through it reaches the
    input); where it is not, cltensor's must not reach it either."""
    keep = []
    try:
        pairs = [as_in(x).build(keep) for x in inputs]
        tins = [p[0].clone() if i == 0 else p[0] for i, p in enumerate(pairs)]
        base = torch.empty(0)
        if isinstance(inputs[0], In) and inputs[0].how is not None:
            tins[0] = pairs[0][0]  # the torch twin of a view chain: write into a copy
            base = tins[0]._base if tins[0]._base is not None else tins[0]
            base = base.clone()
            tins[0] = base.as_strided(pairs[0][0].shape, pairs[0][0].stride(),
                                      pairs[0][0].storage_offset())
        exp = tfn(*tins)
        out = P()
        st = cfn(*[p[1] for p in pairs], C.byref(out))
        if st != 0:
            return fail(name, "cltensor fails: %s" % L.clt_last_error().decode())
        keep.append(out)
        view = exp.storage().data_ptr() == tins[0].storage().data_ptr()
        if view:
            nd = L.clt_tensor_ndim(out)
            got = tuple(L.clt_tensor_strides(out)[i] for i in range(nd))
            if got != exp.stride():
                return fail(name, "strides: torch %s, cltensor %s" % (exp.stride(), got))
        if L.clt_add_scalar_(out, 100.0) != 0:
            return fail(name, "add_ through the result: %s" % L.clt_last_error().decode())
        exp.add_(100)
        a, _, _ = download(pairs[0][1])
        if compare_values(name + " (input after add_ to the result)", tins[0], a, "exact",
                          False) is True:
            ok(name, True)
    except Exception as e:
        fail(name, "harness error: %r" % (e,))
    finally:
        for p in keep:
            L.clt_tensor_free(p)


def select_view():
    """torch.select (t[i], h_n[-1]): values, dtypes, the view's strides on
    contiguous, transposed and sliced inputs, and torch's refusals."""
    _more_protos()
    proto("clt_select", [P, C.c_int, C.c_int64, PP])
    f = torch.float32
    for dt in (torch.float32, torch.float64, torch.int64, torch.bool, torch.float16):
        a = data((4, 6, 5), dt)
        for d, i in ((0, 0), (0, -1), (1, 3), (-1, -5), (2, 4), (-3, 2)):
            check("select %s %d %d" % (dn(dt), d, i), lambda t, d=d, i=i: t.select(d, i),
                  lambda p, o, d=d, i=i: L.clt_select(p, d, i, o), [a], tol="exact")
    for name, x in (("transposed", In(data((5, 4), f), ("T",))),
                    ("sliced", In(data((4, 9), f), ("S", 1, 0, 9, 2))),
                    ("contiguous", data((3, 4, 5), f))):
        for d, i in ((0, 1), (1, -1), (-1, 0)):
            check_layout("select %s %d %d" % (name, d, i), lambda t, d=d, i=i: t.select(d, i),
                         lambda p, o, d=d, i=i: L.clt_select(p, d, i, o), [x])
    check("select of 1-d", lambda t: t.select(0, -3), lambda p, o: L.clt_select(p, 0, -3, o),
          [data((3,), f)], tol="exact")
    check("select of empty dim", lambda t: t.select(1, 0), lambda p, o: L.clt_select(p, 1, 0, o),
          [data((0, 2), f)], tol="exact")
    for name, shape, d, i in (("index past", (3, 4), 0, 3), ("index below", (3, 4), 1, -5),
                              ("empty dim", (0, 2), 0, 0), ("0-d", (), 0, 0),
                              ("dim past", (3, 4), 2, 0), ("dim below", (3, 4), -3, 0)):
        check("select refused: %s" % name, lambda t, d=d, i=i: t.select(d, i),
              lambda p, o, d=d, i=i: L.clt_select(p, d, i, o), [data(shape, f)])


def shapes_more():
    """unflatten, movedim, swapaxes, ravel, view_as/reshape_as/expand_as,
    as_strided, atleast_*d, tensor_split and h/v/dsplit, the stacks, rot90,
    cartesian_prod, combinations, pdist, narrow_copy and the scatters:
    values, shapes, errors, and view-ness with strides."""
    _more_protos()
    I = _i64s
    f = torch.float32
    x = data((4, 6, 5), f)
    tr = In(data((5, 4), f), ("T",))
    sl = In(data((4, 9), f), ("S", 1, 0, 9, 2))
    for dt in (torch.float32, torch.int64, torch.bool):
        a = data((4, 6, 5), dt)
        check("unflatten %s" % dn(dt), lambda t: t.unflatten(1, (2, -1)),
              lambda p, o: L.clt_unflatten(p, 1, I(2, -1), 2, o), [a], tol="exact")
        check("rot90 %s" % dn(dt), lambda t: torch.rot90(t, 1, (0, 2)),
              lambda p, o: L.clt_rot90(p, 1, 0, 2, o), [a], tol="exact")
        check("select_scatter %s" % dn(dt), lambda t, s_: torch.select_scatter(t, s_, 0, -1),
              lambda p, q, o: L.clt_select_scatter(p, q, 0, -1, o), [a, data((6, 5), dt)],
              tol="exact")
    for dims, sizes in ((1, (2, 3)), (-1, (5,)), (0, (-1, 2, 1)), (2, (1, 5, 1)), (1, (4, -1)),
                        (1, (-1, -1)), (1, ()), (3, (5,)), (1, (0, -1)), (1, (-2, -3))):
        check("unflatten %d %s" % (dims, sizes), lambda t, d=dims, s_=sizes: t.unflatten(d, s_),
              lambda p, o, d=dims, s_=sizes: L.clt_unflatten(p, d, I(*s_) if s_ else None,
                                                             len(s_), o), [x], tol="exact")
    check("unflatten transposed", lambda t: t.unflatten(0, (5, 1)),
          lambda p, o: L.clt_unflatten(p, 0, I(5, 1), 2, o), [tr], tol="exact")
    check("unflatten 0-d", lambda t: t.unflatten(0, (1,)),
          lambda p, o: L.clt_unflatten(p, 0, I(1), 1, o), [data((), f)], tol="exact")
    for src, dst in (((0,), (2,)), ((0, 1), (2, 0)), ((-1, 0), (0, -1)), ((0, 0), (1, 2)),
                     ((0, 1), (1, 1)), ((3,), (0,)), ((), ()), ((0, 1, 2), (2, 0, 1))):
        check("movedim %s %s" % (src, dst), lambda t, s_=src, d=dst: torch.movedim(t, s_, d),
              lambda p, o, s_=src, d=dst: L.clt_movedim(p, _ia(s_), _ia(d), len(s_), o), [x],
              tol="exact")
    check("movedim 0-d", lambda t: torch.movedim(t, 0, -1),
          lambda p, o: L.clt_movedim(p, _ia((0,)), _ia((-1,)), 1, o), [data((), f)], tol="exact")
    for a0, a1 in ((0, 2), (-1, 1), (1, 1), (0, 3)):
        check("swapaxes %d %d" % (a0, a1), lambda t, a=a0, b=a1: torch.swapaxes(t, a, b),
              lambda p, o, a=a0, b=a1: L.clt_swapaxes(p, a, b, o), [x], tol="exact")
    for inp in (x, tr, sl, data((), f)):
        check("ravel %s" % (tuple(as_in(inp).t.shape),), lambda t: t.ravel(),
              lambda p, o: L.clt_ravel(p, o), [inp], tol="exact")
    check("view_as", lambda t, u: t.view_as(u), lambda p, q, o: L.clt_view_as(p, q, o),
          [x, data((6, 20), f)], tol="exact")
    check("view_as refused", lambda t, u: t.view_as(u), lambda p, q, o: L.clt_view_as(p, q, o),
          [tr, data((20,), f)], tol="exact")
    check("view_as size", lambda t, u: t.view_as(u), lambda p, q, o: L.clt_view_as(p, q, o),
          [x, data((7,), f)], tol="exact")
    check("reshape_as", lambda t, u: t.reshape_as(u), lambda p, q, o: L.clt_reshape_as(p, q, o),
          [tr, data((2, 10), f)], tol="exact")
    check("expand_as", lambda t, u: t.expand_as(u), lambda p, q, o: L.clt_expand_as(p, q, o),
          [data((6, 1), f), data((3, 6, 4), torch.int32)], tol="exact")
    check("expand_as refused", lambda t, u: t.expand_as(u),
          lambda p, q, o: L.clt_expand_as(p, q, o), [data((6, 2), f), data((6, 4), f)],
          tol="exact")
    # as_strided: offsets, overlaps, and what torch refuses
    m = data((4, 5), torch.float64)
    for size, stride, off in (((2, 2), (1, 2), 1), ((3, 4), (2, 1), None), ((20,), (1,), 0),
                              ((4, 5), (0, 1), 0), ((2, 2), (1, 20), 1), ((2, 2), (-1, 2), 1),
                              ((2, 2), (1, 2), -1), ((0, 3), (100, 100), 7), ((21,), (1,), 0),
                              ((), (), 19), ((), (), 20), ((2, -1), (1, 1), 0),
                              ((1, 1), (2**62, 2**62), 0), ((2, 2), (2**62, 2**62), 0)):
        check("as_strided %s %s %s" % (size, stride, off),
              lambda t, s_=size, r=stride, o_=off: torch.as_strided(t, s_, r, o_),
              lambda p, o, s_=size, r=stride, o_=off: L.clt_as_strided(
                  p, len(s_), I(*s_) if s_ else None, I(*r) if r else None,
                  None if o_ is None else I(o_), o), [m], tol="exact")
    check("as_strided of a slice keeps its offset", lambda t: torch.as_strided(t, (2, 2), (9, 2)),
          lambda p, o: L.clt_as_strided(p, 2, I(2, 2), I(9, 2), None, o),
          [In(data((4, 9), f), ("S", 1, 3, 9, 1))], tol="exact")
    for n in (1, 2, 3):
        tf = getattr(torch, "atleast_%dd" % n)
        cf = getattr(L, "clt_atleast_%dd" % n)
        for shape in ((), (3,), (2, 3), (2, 3, 4)):
            check("atleast_%dd %s" % (n, shape), tf, lambda p, o, cf=cf: cf(p, o),
                  [data(shape, f)], tol="exact")
    # splits
    for dt in (f, torch.int32):
        a = data((4, 7, 3), dt)
        for sec, dim in ((3, 1), (1, 0), (7, 1), (9, 1), (2, -1), (0, 1), (-1, 1), (3, 3)):
            check_list("tensor_split %s %d dim %d" % (dn(dt), sec, dim),
                       lambda t, s_=sec, d=dim: torch.tensor_split(t, s_, d),
                       lambda p, arr, n, s_=sec, d=dim: L.clt_tensor_split(p, s_, d, arr, n), [a])
        for idx, dim in (((2, 5), 1), ((-1,), 1), ((5, 2), 1), ((0, 9, 20), 1), ((), 0),
                         ((1, 1, 1), 2), ((-9,), 1)):
            check_list("tensor_split_indices %s %s dim %d" % (dn(dt), idx, dim),
                       lambda t, i=idx, d=dim: torch.tensor_split(t, list(i), d),
                       lambda p, arr, n, i=idx, d=dim: L.clt_tensor_split_indices(
                           p, I(*i) if i else None, len(i), d, arr, n), [a])
    check_list("tensor_split 0-d", lambda t: torch.tensor_split(t, 2),
               lambda p, arr, n: L.clt_tensor_split(p, 2, 0, arr, n), [data((), f)])
    for nm in ("hsplit", "vsplit", "dsplit"):
        tf = getattr(torch, nm)
        for shape in ((6,), (4, 6), (4, 6, 8), (2, 3, 5, 4)):
            for sec in (2, 3, 1, 0, -2):
                check_list("%s %s %d" % (nm, shape, sec), lambda t, s_=sec, tf=tf: tf(t, s_),
                           lambda p, arr, n, s_=sec, nm=nm: getattr(L, "clt_" + nm)(p, s_, arr, n),
                           [data(shape, f)])
            for idx in ((1, 3), (), (-1,)):
                check_list("%s %s %s" % (nm, shape, idx), lambda t, i=idx, tf=tf: tf(t, list(i)),
                           lambda p, arr, n, i=idx, nm=nm: getattr(L, "clt_%s_indices" % nm)(
                               p, I(*i) if i else None, len(i), arr, n), [data(shape, f)])
    # joins
    lists = [[(3,), (4,)], [(2, 3), (2, 5)], [(2, 3), (4, 3)], [(), ()], [(3,), (3,)],
             [(2, 3), (3,)], [(2, 3, 4), (2, 3, 1)], [(2, 3), (2, 3)], [(3,), (2, 3)],
             [(3, 1), (3,), ()]]
    for nm in ("hstack", "vstack", "dstack", "column_stack"):
        tf = getattr(torch, nm)
        for shapes in lists:
            for dts in ((f, f), (torch.int32, torch.float64)):
                ins = [data(s_, dts[i % 2]) for i, s_ in enumerate(shapes)]
                check("%s %s %s" % (nm, shapes, [dn(d) for d in dts]),
                      lambda *ts, tf=tf: tf(list(ts)),
                      lambda *a, nm=nm: getattr(L, "clt_" + nm)(
                          (P * (len(a) - 1))(*a[:-1]), len(a) - 1, a[-1]), ins, tol="exact")
    check("hstack transposed", lambda a, b: torch.hstack([a, b]),
          lambda p, q, o: L.clt_hstack((P * 2)(p, q), 2, o), [tr, sl], tol="exact")
    # rot90
    for dt in (f, torch.uint8):
        a = data((3, 4, 5), dt)
        for k, d0, d1 in ((1, 0, 1), (2, 0, 1), (3, 0, 1), (-1, 1, 2), (5, 2, 0), (0, 0, 1),
                          (-6, -1, -3), (1, 0, 0), (1, 0, 3), (1, -4, 1), (1, 3, 0), (1, 0, -3)):
            check("rot90 %s %d %d %d" % (dn(dt), k, d0, d1),
                  lambda t, k=k, a_=d0, b=d1: torch.rot90(t, k, (a_, b)),
                  lambda p, o, k=k, a_=d0, b=d1: L.clt_rot90(p, k, a_, b, o), [a], tol="exact")
    check("rot90 1-d", lambda t: torch.rot90(t, 1, (0, 1)),
          lambda p, o: L.clt_rot90(p, 1, 0, 1, o), [data((3,), f)], tol="exact")
    check("rot90 transposed", lambda t: torch.rot90(t, 1, (0, 1)),
          lambda p, o: L.clt_rot90(p, 1, 0, 1, o), [tr], tol="exact")
    # products of indices
    for dt in (f, torch.int64, torch.bool):
        for shapes in (((3,), (2,)), ((2,), (3,), (2,)), ((4,),), ((0,), (3,)), ((3,), (2, 2))):
            ins = [data(s_, dt) for s_ in shapes]
            check("cartesian_prod %s %s" % (dn(dt), shapes),
                  lambda *ts: torch.cartesian_prod(*ts),
                  lambda *a: L.clt_cartesian_prod((P * (len(a) - 1))(*a[:-1]), len(a) - 1, a[-1]),
                  ins, tol="exact")
        v = data((5,), dt)
        for r, rep in ((2, 0), (3, 0), (2, 1), (3, 1), (0, 0), (0, 1), (1, 0), (5, 0), (6, 0),
                       (6, 1), (-1, 0)):
            check("combinations %s r=%d %d" % (dn(dt), r, rep),
                  lambda t, r=r, rep=rep: torch.combinations(t, r, bool(rep)),
                  lambda p, o, r=r, rep=rep: L.clt_combinations(p, r, rep, o), [v], tol="exact")
    check("cartesian_prod dtypes", lambda a, b: torch.cartesian_prod(a, b),
          lambda p, q, o: L.clt_cartesian_prod((P * 2)(p, q), 2, o),
          [data((2,), f), data((3,), torch.float64)], tol="exact")
    for r in (2, 0):
        check("combinations empty r=%d" % r, lambda t, r=r: torch.combinations(t, r),
              lambda p, o, r=r: L.clt_combinations(p, r, 0, o), [data((0,), f)], tol="exact")
        check("combinations empty rep r=%d" % r, lambda t, r=r: torch.combinations(t, r, True),
              lambda p, o, r=r: L.clt_combinations(p, r, 1, o), [data((0,), f)], tol="exact")
    check("combinations 2-d", lambda t: torch.combinations(t, 2),
          lambda p, o: L.clt_combinations(p, 2, 0, o), [data((2, 2), f)], tol="exact")
    for dt in FLOATS:
        rows = data((6, 4), dt)
        rows[4] = rows[1]
        for pv in (2.0, 1.0, 0.0, 0.5, 3.0, float("inf"), -1.0, float("nan")):
            check("pdist %s p=%g" % (dn(dt), pv), lambda t, pv=pv: torch.pdist(t, pv),
                  lambda p, o, pv=pv: L.clt_pdist(p, pv, o), [rows], tol="red")
    for shape in ((1, 3), (0, 3), (3, 0), (3,), (2, 2, 2)):
        check("pdist %s" % (shape,), lambda t: torch.pdist(t),
              lambda p, o: L.clt_pdist(p, 2.0, o), [data(shape, f)], tol="red")
    check("pdist int", lambda t: torch.pdist(t), lambda p, o: L.clt_pdist(p, 2.0, o),
          [data((3, 2), torch.int32)])
    check("pdist transposed", lambda t: torch.pdist(t), lambda p, o: L.clt_pdist(p, 2.0, o),
          [tr], tol="red")
    # narrow_copy and the scatters
    for dim, start, ln in ((1, 1, 3), (-1, -2, 2), (0, 0, 0), (1, 4, 5), (3, 0, 1)):
        check("narrow_copy %d %d %d" % (dim, start, ln),
              lambda t, d=dim, s_=start, n=ln: torch.narrow_copy(t, d, s_, n),
              lambda p, o, d=dim, s_=start, n=ln: L.clt_narrow_copy(p, d, s_, n, o), [x],
              tol="exact")
    for dim, index, src in ((1, 2, (4, 5)), (0, -1, (6, 5)), (2, 4, (4, 6)), (1, 6, (4, 5)),
                            (1, -7, (4, 5)), (1, 0, (4, 4)), (3, 0, (4, 5)), (1, 0, (4, 1))):
        check("select_scatter %d %d %s" % (dim, index, src),
              lambda t, s_, d=dim, i=index: torch.select_scatter(t, s_, d, i),
              lambda p, q, o, d=dim, i=index: L.clt_select_scatter(p, q, d, i, o),
              [x, data(src, f)], tol="exact")
    check("select_scatter dtypes", lambda t, s_: torch.select_scatter(t, s_, 1, 0),
          lambda p, q, o: L.clt_select_scatter(p, q, 1, 0, o),
          [data((3, 4), torch.int32), data((3,), torch.int64)], tol="exact")
    check("select_scatter 0-d", lambda t, s_: torch.select_scatter(t, s_, 0, 0),
          lambda p, q, o: L.clt_select_scatter(p, q, 0, 0, o), [data((), f), data((), f)],
          tol="exact")
    E = 2**63 - 1
    for dim, a, b, stp, src in ((1, 0, 2, 1, (4, 2, 5)), (2, 1, E, 2, (4, 6, 2)),
                                (0, -3, -1, 1, (2, 6, 5)), (1, 4, 2, 1, (4, 0, 5)),
                                (1, 0, 20, 3, (4, 2, 5)), (1, 0, 2, 0, (4, 2, 5)),
                                (1, 0, 2, 1, (4, 3, 5)), (1, 0, 2, 1, (4, 2))):
        check("slice_scatter %d %d %d %d %s" % (dim, a, b, stp, src),
              lambda t, s_, d=dim, a=a, b=b, st=stp: _torch_slice_scatter(
                  t, s_, dim=d, start=a, end=None if b == E else b, step=st),
              lambda p, q, o, d=dim, a=a, b=b, st=stp: L.clt_slice_scatter(p, q, d, a, b, st, o),
              [x, data(src, f)], tol="exact")
    for off, d1, d2, src in ((0, 0, 1, (5, 4)), (2, 1, 2, (4, 3)), (-1, 2, 0, (6, 4)),
                             (9, 0, 1, (5, 0)), (0, 1, 1, (4, 5)), (0, 0, 1, (5, 3))):
        check("diagonal_scatter %d %d %d %s" % (off, d1, d2, src),
              lambda t, s_, o_=off, a=d1, b=d2: torch.diagonal_scatter(t, s_, o_, a, b),
              lambda p, q, o, o_=off, a=d1, b=d2: L.clt_diagonal_scatter(p, q, o_, a, b, o),
              [x, data(src, f)], tol="exact")
    check("slice_scatter into a transposed",
          lambda t, s_: _torch_slice_scatter(t, s_, dim=0, start=1, end=3),
          lambda p, q, o: L.clt_slice_scatter(p, q, 0, 1, 3, 1, o), [tr, data((2, 5), f)],
          tol="exact")
    # views where torch's are views (strides, writes through), copies elsewhere
    lay = [("unflatten", lambda t: t.unflatten(1, (2, 3)),
            lambda p, o: L.clt_unflatten(p, 1, I(2, 3), 2, o), [x]),
           ("unflatten sliced", lambda t: t.unflatten(1, (5, 1)),
            lambda p, o: L.clt_unflatten(p, 1, I(5, 1), 2, o), [sl]),
           ("movedim", lambda t: torch.movedim(t, (0, 1), (2, 0)),
            lambda p, o: L.clt_movedim(p, _ia((0, 1)), _ia((2, 0)), 2, o), [x]),
           ("swapaxes", lambda t: torch.swapaxes(t, 0, 2),
            lambda p, o: L.clt_swapaxes(p, 0, 2, o), [x]),
           ("ravel", lambda t: t.ravel(), lambda p, o: L.clt_ravel(p, o), [x]),
           ("ravel transposed (a copy)", lambda t: t.ravel(), lambda p, o: L.clt_ravel(p, o),
            [tr]),
           ("as_strided", lambda t: torch.as_strided(t, (3, 2), (1, 7), 2),
            lambda p, o: L.clt_as_strided(p, 2, I(3, 2), I(1, 7), I(2), o), [x]),
           ("as_strided of a slice", lambda t: torch.as_strided(t, (2, 2), (9, 2)),
            lambda p, o: L.clt_as_strided(p, 2, I(2, 2), I(9, 2), None, o),
            [In(data((4, 9), f), ("S", 1, 3, 9, 1))]),
           ("atleast_3d", torch.atleast_3d, lambda p, o: L.clt_atleast_3d(p, o),
            [data((4,), f)]),
           ("atleast_1d itself", torch.atleast_1d, lambda p, o: L.clt_atleast_1d(p, o), [x]),
           ("rot90 (a copy)", lambda t: torch.rot90(t, 1, (0, 1)),
            lambda p, o: L.clt_rot90(p, 1, 0, 1, o), [x]),
           ("narrow_copy (a copy)", lambda t: torch.narrow_copy(t, 1, 1, 2),
            lambda p, o: L.clt_narrow_copy(p, 1, 1, 2, o), [x]),
           ("slice_scatter (a copy)",
            lambda t: _torch_slice_scatter(t, t[:, :1] * 0, dim=1, start=0, end=1),
            lambda p, o: _scatter_zero(p, o), [x]),
           ("hstack one (a copy)", lambda t: torch.hstack([t]),
            lambda p, o: L.clt_hstack((P * 1)(p), 1, o), [x])]
    for name, tf, cf, ins in lay:
        check_layout("layout " + name, tf, cf, ins)
    for nm, sec in (("tensor_split", 2), ("hsplit", 3)):
        t = x.clone()
        pu = upload(t)
        arr, n = C.POINTER(C.c_void_p)(), C.c_size_t()
        st = (L.clt_tensor_split(pu, sec, 1, C.byref(arr), C.byref(n)) if nm == "tensor_split"
              else L.clt_hsplit(pu, sec, C.byref(arr), C.byref(n)))
        ps = [arr[i] for i in range(n.value)] if st == 0 else []
        exp = torch.tensor_split(t, sec, 1)
        good = st == 0 and len(ps) == len(exp)
        for i, e in enumerate(exp if good else []):
            nd = L.clt_tensor_ndim(ps[i])
            good &= tuple(L.clt_tensor_strides(ps[i])[k] for k in range(nd)) == e.stride()
            good &= L.clt_add_scalar_(ps[i], float(i + 1)) == 0
            e.add_(i + 1)
        a, _, _ = download(pu)
        ok("layout %s pieces" % nm, good and np.array_equal(a, t.numpy()),
           "strides or writes through the pieces differ from torch's")
        for p_ in ps:
            L.clt_tensor_free(p_)
        if st == 0:
            L.clt_free(C.cast(arr, P))
        L.clt_tensor_free(pu)


def _scatter_zero(p, o):
    """torch.slice_scatter(t, t[:, :1] * 0, dim=1, start=0, end=1) in cltensor."""
    z = P()
    nd = L.clt_tensor_ndim(p)
    shape = [L.clt_tensor_shape(p)[i] for i in range(nd)]
    shape[1] = 1
    assert L.clt_full(DEV, L.clt_tensor_dtype(p), nd, shape_arr(shape), 0.0, C.byref(z)) == 0
    st = L.clt_slice_scatter(p, z, 1, 0, 1, 1, o)
    L.clt_tensor_free(z)
    return st


# ---- linalg_lu: LU, triangular solves, Cholesky solves, matrix_exp ---------

def _nth(cfn, nout, k):
    """cfn(inputs..., out_0, ..., out_{nout-1}) handing out its output k in o;
    the others must be NULL exactly when the call fails."""
    def call(*a):
        *ins, o = a
        outs = [P(0xdead) for _ in range(nout)]
        refs = [o if i == k else C.byref(outs[i]) for i in range(nout)]
        st = cfn(*ins, *refs)
        for i in range(nout):
            if i != k:
                if (st == 0) != (outs[i].value is not None):
                    raise AssertionError("output %d %s after status %d" % (i, outs[i].value, st))
                L.clt_tensor_free(outs[i])
        return st
    return call


def _tri(shape, dt, upper):
    """Triangular matrices with a diagonal of magnitude in [1, 2] (well
    conditioned), random values in the other triangle too (never read)."""
    n = shape[-1]
    a = torch.randn(shape, generator=G, dtype=torch.float64) / max(n, 1) ** 0.5
    d = 1 + torch.rand(shape[:-1], generator=G, dtype=torch.float64)
    d = d * torch.where(torch.rand(shape[:-1], generator=G) < 0.5, -1.0, 1.0).double()
    a = a + torch.diag_embed(d - torch.diagonal(a, dim1=-2, dim2=-1))
    return a.to(dt)


def linalg_lu():
    PI = C.POINTER(C.c_int)
    proto("clt_linalg_solve_triangular", [P, P, C.c_int, C.c_int, C.c_int, PP])
    proto("clt_linalg_lu_factor", [P, PP, PP])
    proto("clt_linalg_lu_factor_ex", [P, PP, PP, PP])
    proto("clt_linalg_lu", [P, PP, PP, PP])
    proto("clt_linalg_lu_solve", [P, P, P, C.c_int, C.c_int, PP])
    proto("clt_linalg_cholesky_ex", [P, C.c_int, PP, PP])
    proto("clt_linalg_inv_ex", [P, PP, PP])
    proto("clt_linalg_solve_ex", [P, P, PP, PP])
    proto("clt_cholesky_solve", [P, P, C.c_int, PP])
    proto("clt_cholesky_inverse", [P, C.c_int, PP])
    proto("clt_linalg_matrix_exp", [P, PP])
    proto("clt_linalg_tensorinv", [P, C.c_int64, PP])
    proto("clt_linalg_tensorsolve", [P, P, PI, C.c_int, PP])
    TOL["la"] = ((2e-5, 2e-5), (1e-12, 1e-12))
    TOL["exp"] = ((1e-5, 1e-5), (1e-12, 1e-12))
    # the data of this section, whatever ran before it: float32 LU of 40 x 40
    # and matrix_exp at larger norms sit near their tolerances for some data
    G.manual_seed(7475)
    f = torch.float32
    for dt in FLOATS:
        for sa, sb in [((3, 3), (3, 2)), ((1, 1), (1, 1)), ((2, 4, 4), (2, 4, 3)),
                       ((2, 1, 5, 5), (3, 5, 1)), ((4, 4), (2, 4, 5)), ((0, 3, 3), (3, 2)),
                       ((3, 3), (3, 0)), ((2, 0, 0), (2, 0, 4)), ((40, 40), (40, 9)),
                       ((3, 3), (4, 2)), ((3, 4), (3, 1)), ((3, 3), (3,))]:
            for up in (0, 1):
                for left in (1, 0):
                    for unit in (0, 1):
                        bb = sb if left or len(sb) < 2 else sb[:-2] + (sb[-1], sb[-2])
                        a = (_tri(sa, dt, up) if len(sa) > 1 and sa[-1] == sa[-2]
                             else data(sa, dt))
                        check("solve_triangular %s %s %s up=%d left=%d unit=%d"
                              % (dn(dt), list(sa), list(bb), up, left, unit),
                              lambda x, y, up=up, left=left, unit=unit:
                              torch.linalg.solve_triangular(x, y, upper=bool(up), left=bool(left),
                                                            unitriangular=bool(unit)),
                              lambda p, q, o, up=up, left=left, unit=unit:
                              L.clt_linalg_solve_triangular(p, q, up, left, unit, o),
                              [a, data(bb, dt)], tol="la", signed_zero=False)
        for sh in [(3, 3), (1, 1), (2, 4, 4), (2, 3, 5, 5), (0, 3, 3), (2, 0, 0), (17, 17),
                   (3, 5), (5, 3), (2, 4, 6), (2, 6, 4), (0, 4), (40, 40)]:
            a = data(sh, dt)
            for k, name in ((0, "LU"), (1, "pivots")):
                check("lu_factor %s %s %s" % (name, dn(dt), list(sh)),
                      lambda t, k=k: torch.linalg.lu_factor(t)[k],
                      _nth(L.clt_linalg_lu_factor, 2, k), [a],
                      tol="la" if k == 0 else "exact", signed_zero=False)
            check("lu_factor_ex info %s %s" % (dn(dt), list(sh)),
                  lambda t: torch.linalg.lu_factor_ex(t).info,
                  _nth(L.clt_linalg_lu_factor_ex, 3, 2), [a], tol="exact")
            for k, name in ((0, "P"), (1, "L"), (2, "U")):
                check("lu %s %s %s" % (name, dn(dt), list(sh)),
                      lambda t, k=k: torch.linalg.lu(t)[k], _nth(L.clt_linalg_lu, 3, k), [a],
                      tol="la", signed_zero=False)
        for sa, sb in [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 3)), ((2, 4, 4), (3, 1, 4, 2)),
                       ((1, 1), (1, 1)), ((5, 5), (5, 0)), ((0, 3, 3), (3, 1)),
                       ((3, 3), (2, 2))]:
            for left in (1, 0):
                for adj in (0, 1):
                    a = _wellcond(sa, dt)
                    LU, piv = torch.linalg.lu_factor(a)
                    bb = sb if left else sb[:-2] + (sb[-1], sb[-2])
                    check("lu_solve %s %s %s left=%d adjoint=%d"
                          % (dn(dt), list(sa), list(bb), left, adj),
                          lambda x, pv, y, left=left, adj=adj:
                          torch.linalg.lu_solve(x, pv, y, left=bool(left), adjoint=bool(adj)),
                          lambda p, pv, q, o, left=left, adj=adj:
                          L.clt_linalg_lu_solve(p, pv, q, left, adj, o),
                          [LU, piv, data(bb, dt)], tol="la", signed_zero=False)
        for sh in [(3, 3), (2, 4, 4), (0, 2, 2), (1, 1), (30, 30)]:
            for up in (0, 1):
                a = _spd(sh, dt)
                Lf = torch.linalg.cholesky(a, upper=bool(up))
                check("cholesky_ex %s %s up=%d" % (dn(dt), list(sh), up),
                      lambda t, up=up: torch.linalg.cholesky_ex(t, upper=bool(up)).L,
                      _nth(lambda p, o1, o2, up=up: L.clt_linalg_cholesky_ex(p, up, o1, o2), 2, 0),
                      [a], tol="la", signed_zero=False)
                for sb in [sh[:-1] + (2,), (3,) + sh[:-1] + (1,)]:
                    check("cholesky_solve %s %s %s up=%d" % (dn(dt), list(sh), list(sb), up),
                          lambda b, l, up=up: torch.cholesky_solve(b, l, upper=bool(up)),
                          lambda b, l, o, up=up: L.clt_cholesky_solve(b, l, up, o),
                          [data(sb, dt), Lf], tol="la", signed_zero=False)
                check("cholesky_inverse %s %s up=%d" % (dn(dt), list(sh), up),
                      lambda l, up=up: torch.cholesky_inverse(l, upper=bool(up)),
                      lambda l, o, up=up: L.clt_cholesky_inverse(l, up, o), [Lf], tol="la",
                      signed_zero=False)
            a = _wellcond(sh, dt)
            check("inv_ex %s %s" % (dn(dt), list(sh)), lambda t: torch.linalg.inv_ex(t).inverse,
                  _nth(L.clt_linalg_inv_ex, 2, 0), [a], tol="la", signed_zero=False)
            check("solve_ex %s %s" % (dn(dt), list(sh)),
                  lambda t, b: torch.linalg.solve_ex(t, b).result,
                  _nth(L.clt_linalg_solve_ex, 2, 0), [a, data(sh[:-1] + (2,), dt)], tol="la",
                  signed_zero=False)
        for sh, scale in [((3, 3), 1), ((2, 4, 4), 0.3), ((5, 5), 3), ((1, 1), 2), ((0, 2, 2), 1),
                          ((2, 0, 0), 1), ((6, 6), 1e-4), ((16, 16), 1),
                          # float32 loses about eps * |A| per element, too much for
                          # elementwise tolerances at larger norms
                          ((4, 4), 20 if dt == torch.float64 else 6)]:
            # against torch's float64 result rounded: torch's own float32 one is
            # further from it than cltensor's for the larger norms
            check("matrix_exp %s %s x%g" % (dn(dt), list(sh), scale),
                  lambda t: torch.linalg.matrix_exp(t.double()).to(t.dtype),
                  L.clt_linalg_matrix_exp,
                  [torch.randn(sh, generator=G, dtype=torch.float64).to(dt) * scale],
                  tol="exp", signed_zero=False)
        check("matrix_exp %s zero" % dn(dt), torch.linalg.matrix_exp, L.clt_linalg_matrix_exp,
              [torch.zeros(3, 3, dtype=dt)], tol="exp")
        check("matrix_exp %s nilpotent" % dn(dt), torch.linalg.matrix_exp,
              L.clt_linalg_matrix_exp, [torch.triu(torch.ones(4, 4, dtype=dt), 1)], tol="exp")
    # reports instead of errors, and torch's refusals
    sing = torch.tensor([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    batch = torch.stack([torch.eye(3), sing])
    zcol = torch.tensor([[0.0, 1, 2], [0, 3, 4], [0, 5, 7]])
    for t in (sing, batch, zcol, torch.stack([zcol, sing])):
        for k, name in ((0, "LU"), (1, "pivots")):
            check("lu_factor singular %s %s" % (name, list(t.shape)),
                  lambda x, k=k: torch.linalg.lu_factor(x)[k],
                  _nth(L.clt_linalg_lu_factor, 2, k), [t], tol="la")
        for k, name in ((0, "LU"), (1, "pivots"), (2, "info")):
            check("lu_factor_ex singular %s %s" % (name, list(t.shape)),
                  lambda x, k=k: torch.linalg.lu_factor_ex(x)[k],
                  _nth(L.clt_linalg_lu_factor_ex, 3, k), [t], tol="la")
    # torch's inv_ex and solve_ex factor A^T (row-major A is A^T column-major),
    # so their reports name A^T's first zero pivot: compared on symmetric A
    sym = torch.tensor([[1.0, 2], [2, 4]])
    for t in (sym, torch.stack([torch.eye(2), sym]), torch.zeros(3, 3)):
        check("inv_ex singular info %s" % list(t.shape), lambda x: torch.linalg.inv_ex(x).info,
              _nth(L.clt_linalg_inv_ex, 2, 1), [t], tol="exact")
        check("solve_ex singular info %s" % list(t.shape),
              lambda x, b: torch.linalg.solve_ex(x, b).info,
              _nth(L.clt_linalg_solve_ex, 2, 1), [t, torch.ones(t.shape[:-1] + (1,))],
              tol="exact")
    npd = torch.tensor([[4.0, 2, 0], [2, 5, 0], [0, 0, -1]])
    for t in (npd, torch.stack([torch.eye(3), npd]), -torch.eye(2)):
        check("cholesky_ex info not PD %s" % list(t.shape),
              lambda x: torch.linalg.cholesky_ex(x).info,
              _nth(lambda p, o1, o2: L.clt_linalg_cholesky_ex(p, 0, o1, o2), 2, 1), [t],
              tol="exact")
    for dt in (torch.int32,):
        check("solve_triangular %s" % dn(dt),
              lambda x, y: torch.linalg.solve_triangular(x, y, upper=True),
              lambda p, q, o: L.clt_linalg_solve_triangular(p, q, 1, 1, 0, o),
              [torch.ones(2, 2).to(dt), torch.ones(2, 1).to(dt)], expect_error="documented")
    check("solve_triangular dtype mix (documented refusal)",
          lambda x, y: torch.linalg.solve_triangular(x, y, upper=True),
          lambda p, q, o: L.clt_linalg_solve_triangular(p, q, 1, 1, 0, o),
          [_tri((2, 2), torch.float64, 1), data((2, 1), f)], expect_error="documented")
    check("solve_triangular transposed A", lambda x, y: torch.linalg.solve_triangular(x, y,
                                                                                    upper=True),
          lambda p, q, o: L.clt_linalg_solve_triangular(p, q, 1, 1, 0, o),
          [In(_tri((4, 4), f, 1), ("T",)), data((4, 2), f)], tol="la")
    LU, piv = torch.linalg.lu_factor(_wellcond((3, 3), f))
    for bad in (torch.tensor([1, 2, 4], dtype=torch.int32), torch.tensor([0, 2, 3], dtype=torch.int32)):
        check("lu_solve pivots out of range %s" % bad.tolist(),
              lambda x, pv, y: torch.linalg.lu_solve(x, pv, y),
              lambda p, pv, q, o: L.clt_linalg_lu_solve(p, pv, q, 1, 0, o),
              [LU, bad, data((3, 1), f)], expect_error="documented (torch reads out of bounds)")
    check("lu_solve int64 pivots", lambda x, pv, y: torch.linalg.lu_solve(x, pv, y),
          lambda p, pv, q, o: L.clt_linalg_lu_solve(p, pv, q, 1, 0, o),
          [LU, piv.long(), data((3, 1), f)])
    check("matrix_exp not square", torch.linalg.matrix_exp, L.clt_linalg_matrix_exp,
          [data((2, 3), f)])
    # tensorinv and tensorsolve
    for dt in FLOATS:
        for sh, ind in [((4, 2, 2), 1), ((2, 3, 6), 2), ((6, 2, 3), 1), ((4, 2, 3), 1),
                        ((3, 3), 1), ((2, 2, 2, 2), 2), ((3, 3), 0)]:
            a = _wellcond((int(np.prod(sh[:ind])),) * 2, dt).reshape(sh) if ind and np.prod(
                sh[:ind]) == np.prod(sh[ind:]) else data(sh, dt)
            check("tensorinv %s %s ind=%d" % (dn(dt), list(sh), ind),
                  lambda t, ind=ind: torch.linalg.tensorinv(t, ind=ind),
                  lambda p, o, ind=ind: L.clt_linalg_tensorinv(p, ind, o), [a], tol="la",
                  signed_zero=False)
        for sa, sb, dims in [((2, 3, 6), (2, 3), None), ((6, 2, 3), (6,), None),
                             ((2, 3, 6), (2, 4), None), ((3, 2, 6), (2, 3), (0,)),
                             ((2, 2, 2, 2), (2, 2), (0, 2))]:
            a = _wellcond((int(np.prod(sb)),) * 2, dt).reshape(sa) if np.prod(sb) ** 2 == np.prod(
                sa) else data(sa, dt)
            nd = 0 if dims is None else len(dims)
            arr = (C.c_int * max(1, nd))(*(dims or ()))
            check("tensorsolve %s %s %s dims=%s" % (dn(dt), list(sa), list(sb), dims),
                  lambda x, y, dims=dims: torch.linalg.tensorsolve(x, y, dims=dims),
                  lambda p, q, o, arr=arr, nd=nd: L.clt_linalg_tensorsolve(
                      p, q, arr if nd else None, nd, o), [a, data(sb, dt)], tol="la",
                  signed_zero=False)
    check("tensorinv singular", lambda t: torch.linalg.tensorinv(t, ind=1),
          lambda p, o: L.clt_linalg_tensorinv(p, 1, o), [torch.zeros(4, 2, 2)])
    # lstsq: wide and rank-deficient A, the drivers' outputs
    proto("clt_linalg_lstsq_ex", [P, P, C.POINTER(C.c_double), C.c_char_p, PP, PP, PP, PP])
    TOL["lsq"] = ((1e-4, 1e-4), (1e-10, 1e-10))

    def _deficient(sh, r, dt):
        """[..., m, n] of rank r: a product of [m, r] and [r, n]."""
        x = torch.randn(sh[:-1] + (r,), generator=G, dtype=torch.float64)
        y = torch.randn(sh[:-2] + (r, sh[-1]), generator=G, dtype=torch.float64)
        return (x @ y).to(dt)

    for dt in FLOATS:
        for sa, sb, r in [((5, 3), (5, 2), 2), ((3, 5), (3, 2), 3), ((3, 5), (3, 2), 1),
                          ((2, 6, 4), (2, 6, 3), 2), ((4, 4), (4, 1), 3), ((2, 3, 6), (2, 3), 3),
                          ((4, 6), (4, 2), 0), ((6, 2), (6, 1), 2)]:
            a = _deficient(sa, r, dt)
            b = data(sb, dt)
            for drv in (None, b"gelsy", b"gelsd", b"gelss", b"gels"):
                if drv == b"gels" and r < min(sa[-2:]):
                    continue  # torch's gels: garbage for a rank-deficient A
                name = drv.decode() if drv else "default"
                for k, what in enumerate(("solution", "residuals", "rank", "singular_values")):
                    check("lstsq_ex %s %s %s %s rank %d %s" % (what, name, dn(dt), list(sa), r,
                                                               list(sb)),
                          lambda x, y, k=k, drv=drv: torch.linalg.lstsq(
                              x, y, driver=drv.decode() if drv else None)[k],
                          _nth(lambda p, q, *o, drv=drv: L.clt_linalg_lstsq_ex(p, q, None, drv,
                                                                               *o), 4, k),
                          [a, b], tol="exact" if k == 2 else "lsq", signed_zero=False)
        rc = C.c_double(0.1)
        a = torch.tensor([[1.0, 0], [0, 0.05], [0, 0]], dtype=dt)
        for k in (0, 2):
            check("lstsq_ex rcond 0.1 %s %d" % (dn(dt), k),
                  lambda x, y, k=k: torch.linalg.lstsq(x, y, rcond=0.1)[k],
                  _nth(lambda p, q, *o: L.clt_linalg_lstsq_ex(p, q, C.byref(rc), None, *o), 4, k),
                  [a, torch.ones(3, 1, dtype=dt)], tol="exact" if k == 2 else "lsq")
    check("lstsq_ex bad driver", lambda x, y: torch.linalg.lstsq(x, y, driver="x")[0],
          _nth(lambda p, q, *o: L.clt_linalg_lstsq_ex(p, q, None, b"x", *o), 4, 0),
          [data((3, 2), f), data((3, 1), f)])
    # cond through the inverse
    proto("clt_linalg_cond_ord", [P, C.c_char_p, PP])
    proto("clt_linalg_cond", [P, C.c_double, PP])
    for dt in FLOATS:
        for sh in [(3, 3), (2, 4, 4), (0, 3, 3), (2, 0, 0), (1, 1)]:
            a = _wellcond(sh, dt)
            for o in ["fro", "nuc", "1", "-1", "inf", "-inf", "2", "-2"]:
                check("cond %s %s %s" % (o, dn(dt), list(sh)),
                      lambda t, o=o: torch.linalg.cond(t, o if o in ("fro", "nuc") else float(o)),
                      lambda p, out, o=o: L.clt_linalg_cond_ord(p, o.encode(), out), [a],
                      tol="la", signed_zero=False)
            for pv in (1.0, -1.0, math.inf, -math.inf):
                check("cond p=%g %s %s" % (pv, dn(dt), list(sh)),
                      lambda t, pv=pv: torch.linalg.cond(t, pv),
                      lambda p, out, pv=pv: L.clt_linalg_cond(p, pv, out), [a], tol="la",
                      signed_zero=False)
    sing = torch.stack([torch.eye(2), torch.tensor([[1.0, 2], [2, 4]])])
    for o in ["fro", "1", "-inf"]:
        check("cond %s singular" % o, lambda t, o=o: torch.linalg.cond(t, o if o == "fro" else
                                                                        float(o)),
              lambda p, out, o=o: L.clt_linalg_cond_ord(p, o.encode(), out), [sing], tol="la")
    for o in [b"3", b"abc"]:
        check("cond %s" % o.decode(), lambda t, o=o: torch.linalg.cond(t, o.decode()
                                                                       if o == b"abc" else 3),
              lambda p, out, o=o: L.clt_linalg_cond_ord(p, o, out), [data((3, 3), f)])
    check("cond 1 not square", lambda t: torch.linalg.cond(t, 1),
          lambda p, out: L.clt_linalg_cond_ord(p, b"1", out), [data((3, 4), f)])
    check("cond None not square", lambda t: torch.linalg.cond(t),
          lambda p, out: L.clt_linalg_cond_ord(p, None, out), [data((3, 4), f)], tol="la")


# ---- nn.utils: weight_norm, spectral_norm ----------------------------------

def nn_utils():
    """torch.nn.utils.weight_norm and spectral_norm: torch's state_dicts
    (weight_g / weight_v, weight_orig / weight_u / weight_v), saved with
    torch.save, load into cltensor's layers reparametrized the same way and
    give torch's outputs, gradients and power-iterated u and v; weight_norm
    applied in cltensor to torch's weights gives torch's g and v."""
    import copy
    import tempfile
    proto("clt_linear", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_conv1d_layer", [P, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_train", [P, C.c_int], None)
    proto("clt_module_param", [P, C.c_char_p], P)
    proto("clt_module_buffer", [P, C.c_char_p], P)
    proto("clt_weight_norm", [P, C.c_char_p, C.c_int])
    proto("clt_spectral_norm", [P, C.c_char_p, C.c_int, C.c_double, C.c_int, P])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_grad", [P, PP])
    proto("clt_mul", [P, P, PP])
    proto("clt_sum", [P, PP])
    torch.manual_seed(11)

    def make_linear(r):
        return L.clt_linear(DEV, 5, 4, 1, None, r)

    def make_conv(r):
        return L.clt_conv1d_layer(DEV, 4, 6, 3, _i64s(2, 1, 2, 2), 1, None, r)

    layers = [("Linear", lambda: torch.nn.Linear(5, 4), make_linear, (3, 5)),
              ("Conv1d", lambda: torch.nn.Conv1d(4, 6, 3, 2, 1, 2, groups=2), make_conv,
               (2, 4, 11))]

    def run(name, tm, cm, xs, params, buffers, keep):
        """Forward and backward of sum(y * w) in both; compares y, the
        gradients of params and the buffers after the forward."""
        x = data(xs, torch.float32, lo=-2, hi=2)
        px, y, loss, prod, gp = upload(x), P(), P(), P(), P()
        keep.append(px)
        if L.clt_module_forward(cm, px, C.byref(y)):
            fail(name, L.clt_last_error().decode())
            return
        keep.append(y)
        want = tm(x)
        got = download(y)[0]
        same = got.shape == tuple(want.shape)
        ok(name + " forward", same and np.allclose(got, want.detach().numpy(), 1e-4, 1e-5),
           "shape %s / %s" % (got.shape, tuple(want.shape)))
        for b in buffers:
            g = download(L.clt_module_buffer(cm, b.encode()))[0]
            ok("%s %s after the forward" % (name, b),
               np.allclose(g, getattr(tm, b).numpy(), 1e-4, 1e-6), "differs")
        w = data(tuple(want.shape), torch.float32, lo=-1, hi=1)
        pw = upload(w)
        keep.append(pw)
        if (L.clt_mul(y, pw, C.byref(prod)) or L.clt_sum(prod, C.byref(loss)) or
                L.clt_backward(loss, None, 0)):
            fail(name + " backward", L.clt_last_error().decode())
            return
        keep += [prod, loss]
        (want * w).sum().backward()
        for pn in params:
            if L.clt_grad(L.clt_module_param(cm, pn.encode()), C.byref(gp)) or not gp:
                fail("%s grad %s" % (name, pn), L.clt_last_error().decode())
                continue
            keep.append(gp)
            g = download(gp)[0]
            tg = getattr(tm, pn).grad.numpy()
            ok("%s grad %s" % (name, pn), g.shape == tg.shape and np.allclose(g, tg, 1e-4, 1e-5),
               "max diff %g" % (np.abs(g - tg).max() if g.shape == tg.shape else -1))
            gp = P()

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.pt").encode()
        for lname, tmake, cmake, xs in layers:
            for dim in (0, 1, None):
                name = "weight_norm %s dim %s" % (lname, dim)
                tm = tmake()
                plain = copy.deepcopy(tm.state_dict())
                torch.nn.utils.weight_norm(tm, dim=dim)
                cm, keep = P(), []
                try:
                    # applied here to torch's weights: torch's g and v
                    torch.save(plain, path.decode())
                    if (cmake(C.byref(cm)) or L.clt_module_load_torch(cm, path, 1) or
                            L.clt_weight_norm(cm, b"weight", -1 if dim is None else dim)):
                        fail(name, L.clt_last_error().decode())
                        continue
                    for pn in ("weight_g", "weight_v"):
                        got = download(L.clt_module_param(cm, pn.encode()))[0]
                        want = getattr(tm, pn).detach().numpy()
                        ok("%s %s" % (name, pn), got.shape == want.shape and
                           np.allclose(got, want, 1e-5, 1e-6), "%s / %s" % (got.shape, want.shape))
                    # torch's file of the reparametrized layer
                    with torch.no_grad():
                        tm.weight_g.mul_(1.5)
                    torch.save(tm.state_dict(), path.decode())
                    if L.clt_module_load_torch(cm, path, 1):
                        fail(name + " load", L.clt_last_error().decode())
                        continue
                    run(name, tm, cm, xs, ["weight_g", "weight_v", "bias"], [], keep)
                finally:
                    for t in keep:
                        L.clt_tensor_free(t)
                    L.clt_module_free(cm)
            for iters in (1, 3):
                name = "spectral_norm %s n_power_iterations %d" % (lname, iters)
                tm = torch.nn.utils.spectral_norm(tmake(), n_power_iterations=iters)
                cm, keep = P(), []
                try:
                    torch.save(tm.state_dict(), path.decode())
                    if (cmake(C.byref(cm)) or
                            L.clt_spectral_norm(cm, None, iters, 1e-12, -1, None) or
                            L.clt_module_load_torch(cm, path, 1)):
                        fail(name, L.clt_last_error().decode())
                        continue
                    run(name + " train", tm, cm, xs, ["weight_orig", "bias"],
                        ["weight_u", "weight_v"], keep)
                    tm.eval()
                    L.clt_module_train(cm, 0)
                    tm.zero_grad()
                    torch.save(tm.state_dict(), path.decode())
                    if L.clt_module_load_torch(cm, path, 1):
                        fail(name + " load", L.clt_last_error().decode())
                        continue
                    run(name + " eval", tm, cm, xs, [], ["weight_u", "weight_v"], keep)
                finally:
                    for t in keep:
                        L.clt_tensor_free(t)
                    L.clt_module_free(cm)


def nn_prune():
    """torch.nn.utils.prune's masks (l1_unstructured by fraction and count,
    again on a pruned weight, ln_structured over dims and norms,
    global_unstructured) from the same weights, and torch's pruned
    state_dict (weight_orig, weight_mask) loaded into a pruned layer."""
    import copy
    import tempfile
    import torch.nn.utils.prune as tp
    proto("clt_linear", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_conv1d_layer", [P, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_buffer", [P, C.c_char_p], P)
    proto("clt_prune_l1_unstructured", [P, C.c_char_p, C.c_double, C.c_int64])
    proto("clt_prune_ln_structured", [P, C.c_char_p, C.c_double, C.c_int64, C.c_double, C.c_int])
    proto("clt_prune_global_unstructured", [C.POINTER(P), C.POINTER(C.c_char_p), C.c_size_t,
                                            C.c_double, C.c_int64])
    proto("clt_prune_is_pruned", [P], C.c_int)
    torch.manual_seed(5)

    def amount(a):
        return (0.0, a) if isinstance(a, int) else (a, -1)

    cases = [
        ("l1 0.3", lambda m: tp.l1_unstructured(m, "weight", 0.3),
         lambda c: L.clt_prune_l1_unstructured(c, None, *amount(0.3))),
        ("l1 count 7", lambda m: tp.l1_unstructured(m, "weight", 7),
         lambda c: L.clt_prune_l1_unstructured(c, None, *amount(7))),
        ("l1 twice", lambda m: (tp.l1_unstructured(m, "weight", 0.5),
                                tp.l1_unstructured(m, "weight", 0.5)),
         lambda c: L.clt_prune_l1_unstructured(c, None, 0.5, -1) or
         L.clt_prune_l1_unstructured(c, None, 0.5, -1)),
    ]
    for n, nname in ((1, "1"), (2, "2"), (math.inf, "inf")):
        for dim in (0, 1, -1):
            cases.append(("ln n=%s dim %d" % (nname, dim),
                          lambda m, n=n, dim=dim: tp.ln_structured(m, "weight", 0.4, n, dim),
                          lambda c, n=n, dim=dim: L.clt_prune_ln_structured(c, None, 0.4, -1,
                                                                            n, dim)))
    cases.append(("ln twice", lambda m: (tp.ln_structured(m, "weight", 1, 2, 0),
                                         tp.ln_structured(m, "weight", 0.5, 2, 0)),
                  lambda c: L.clt_prune_ln_structured(c, None, 0.0, 1, 2.0, 0) or
                  L.clt_prune_ln_structured(c, None, 0.5, -1, 2.0, 0)))
    cases.append(("l1 then ln", lambda m: (tp.l1_unstructured(m, "weight", 5),
                                           tp.ln_structured(m, "weight", 1, 1, 1)),
                  lambda c: L.clt_prune_l1_unstructured(c, None, 0.0, 5) or
                  L.clt_prune_ln_structured(c, None, 0.0, 1, 1.0, 1)))
    layers = [("Linear", lambda: torch.nn.Linear(6, 5), lambda r: L.clt_linear(DEV, 6, 5, 1, None, r),
               (3, 6)),
              ("Conv1d", lambda: torch.nn.Conv1d(4, 6, 3, 2, 1, 2, groups=2),
               lambda r: L.clt_conv1d_layer(DEV, 4, 6, 3, _i64s(2, 1, 2, 2), 1, None, r),
               (2, 4, 11))]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.pt")
        for lname, tmake, cmake, xs in layers:
            for cname, tprune, cprune in cases:
                name = "prune %s %s" % (lname, cname)
                tm = tmake()
                torch.save(copy.deepcopy(tm.state_dict()), path)
                cm, cm2, y = P(), P(), P()
                keep = []
                try:
                    if cmake(C.byref(cm)) or L.clt_module_load_torch(cm, path.encode(), 1):
                        fail(name, L.clt_last_error().decode())
                        continue
                    tprune(tm)
                    if cprune(cm):
                        fail(name, L.clt_last_error().decode())
                        continue
                    got = download(L.clt_module_buffer(cm, b"weight_mask"))[0]
                    want = tm.weight_mask.numpy()
                    ok(name + " mask", got.shape == want.shape and np.array_equal(got, want),
                       "%d of %d differ" % (int((got != want).sum()), want.size)
                       if got.shape == want.shape else "shape")
                    # torch's file of the pruned layer into a layer pruned here
                    torch.save(tm.state_dict(), path)
                    if (cmake(C.byref(cm2)) or L.clt_prune_l1_unstructured(cm2, None, 0.0, 0) or
                            L.clt_module_load_torch(cm2, path.encode(), 1)):
                        fail(name + " load", L.clt_last_error().decode())
                        continue
                    x = data(xs, torch.float32, lo=-2, hi=2)
                    keep.append(upload(x))
                    if L.clt_module_forward(cm2, keep[0], C.byref(y)):
                        fail(name + " forward", L.clt_last_error().decode())
                        continue
                    keep.append(y)
                    got = download(y)[0]
                    want = tm(x).detach().numpy()
                    ok(name + " forward", got.shape == want.shape and
                       np.allclose(got, want, 1e-5, 1e-6), "differs")
                finally:
                    for t in keep:
                        L.clt_tensor_free(t)
                    L.clt_module_free(cm)
                    L.clt_module_free(cm2)
        # global_unstructured over two layers
        t1, t2 = torch.nn.Linear(6, 5), torch.nn.Linear(5, 4)
        mods = (P * 2)()
        try:
            for i, (tm, (a, b)) in enumerate(((t1, (6, 5)), (t2, (5, 4)))):
                torch.save(tm.state_dict(), path)
                one = P()
                st = L.clt_linear(DEV, a, b, 1, None, C.byref(one))
                mods[i] = one
                if st or L.clt_module_load_torch(mods[i], path.encode(), 1):
                    fail("prune global", L.clt_last_error().decode())
                    return
            tp.l1_unstructured(t1, "weight", 4)
            L.clt_prune_l1_unstructured(mods[0], None, 0.0, 4)
            tp.global_unstructured([(t1, "weight"), (t2, "weight")], tp.L1Unstructured, amount=0.4)
            if L.clt_prune_global_unstructured(mods, None, 2, 0.4, -1):
                fail("prune global", L.clt_last_error().decode())
                return
            for i, tm in enumerate((t1, t2)):
                got = download(L.clt_module_buffer(mods[i], b"weight_mask"))[0]
                want = tm.weight_mask.numpy()
                ok("prune global mask %d" % i, np.array_equal(got, want),
                   "%d differ" % int((got != want).sum()))
            ok("prune is_pruned", L.clt_prune_is_pruned(mods[0]) == 1, "not pruned")
        finally:
            L.clt_module_free(mods[0])
            L.clt_module_free(mods[1])


# ---- settings: finfo, iinfo, promotion tables, can_cast, str(tensor) -----------

class _FInfo(C.Structure):
    _fields_ = [("bits", C.c_int), ("eps", C.c_double), ("max", C.c_double),
                ("min", C.c_double), ("tiny", C.c_double), ("smallest_normal", C.c_double),
                ("resolution", C.c_double)]


class _IInfo(C.Structure):
    _fields_ = [("bits", C.c_int), ("max", C.c_int64), ("min", C.c_int64)]


def _repr_of(p):
    out = C.c_char_p()
    if L.clt_tensor_repr(p, C.byref(out)):
        return None
    s = out.value.decode()
    L.clt_free(out)
    return s


def settings():
    proto("clt_finfo", [C.c_int, C.POINTER(_FInfo)])
    proto("clt_iinfo", [C.c_int, C.POINTER(_IInfo)])
    proto("clt_promote_types", [C.c_int, C.c_int], C.c_int)
    proto("clt_result_type", [P, P, C.POINTER(C.c_int)])
    proto("clt_result_type_scalar", [P, C.c_double, C.POINTER(C.c_int)])
    proto("clt_can_cast", [C.c_int, C.c_int], C.c_int)
    proto("clt_tensor_repr", [P, C.POINTER(C.c_char_p)])
    proto("clt_free", [C.c_void_p], None)
    proto("clt_set_printoptions", [C.c_int, C.c_int64, C.c_int, C.c_int, C.c_int])
    proto("clt_reset_printoptions", [], None)
    proto("clt_set_default_dtype", [C.c_int])
    all_dt = dict(T2C)
    all_dt[torch.float16] = F16
    for dt in (torch.float16, torch.float32, torch.float64):
        f, w = _FInfo(), torch.finfo(dt)
        st = L.clt_finfo(all_dt[dt], C.byref(f))
        ok("finfo %s" % dn(dt), st == 0 and (f.bits, f.eps, f.max, f.min, f.tiny,
                                             f.smallest_normal, f.resolution) ==
           (w.bits, w.eps, w.max, w.min, w.tiny, w.smallest_normal, w.resolution),
           "got %r" % ((f.bits, f.eps, f.max, f.min, f.tiny, f.resolution),))
    for dt in (torch.uint8, torch.int32, torch.int64):
        i, w = _IInfo(), torch.iinfo(dt)
        st = L.clt_iinfo(all_dt[dt], C.byref(i))
        ok("iinfo %s" % dn(dt), st == 0 and (i.bits, i.max, i.min) == (w.bits, w.max, w.min),
           "got %r" % ((i.bits, i.max, i.min),))
    dts = list(all_dt)
    for a in dts:
        for b in dts:
            want = all_dt[torch.promote_types(a, b)]
            got = L.clt_promote_types(all_dt[a], all_dt[b])
            ok("promote_types %s %s" % (a, b), got == want, "got %d want %d" % (got, want))
            got = L.clt_can_cast(all_dt[a], all_dt[b])
            ok("can_cast %s %s" % (a, b), got == int(torch.can_cast(a, b)), "got %d" % got)
    # result_type: tensors with dims, 0-d tensors, and Python numbers
    for a in DTYPES:
        for b in DTYPES:
            for sa, sb in (((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())):
                ta, tb = torch.zeros(sa, dtype=a), torch.zeros(sb, dtype=b)
                pa, pb = upload(ta), upload(tb)
                r = C.c_int(-1)
                st = L.clt_result_type(pa, pb, C.byref(r))
                want = T2C[torch.result_type(ta, tb)]
                ok("result_type %s%r %s%r" % (dn(a), sa, dn(b), sb), st == 0 and r.value == want,
                   "got %d want %d" % (r.value, want))
                L.clt_tensor_free(pa)
                L.clt_tensor_free(pb)
        # integral doubles act as Python ints (ops.h), so the cases use ints for them
        for sc in (2, -3, 2.5, 0, 1e-3, -7.25, float("inf"), float("nan")):
            ta = torch.zeros((2,), dtype=a)
            pa = upload(ta)
            r = C.c_int(-1)
            st = L.clt_result_type_scalar(pa, float(sc), C.byref(r))
            want = T2C[torch.result_type(ta, sc)]
            ok("result_type %s scalar %r" % (dn(a), sc), st == 0 and r.value == want,
               "got %d want %d" % (r.value, want))
            L.clt_tensor_free(pa)
    # str(tensor) under several print options
    g = torch.Generator().manual_seed(7)
    cases = []
    for dt in DTYPES:
        for shape in [(), (1,), (5,), (3, 4), (2, 3, 4), (40,), (7, 9), (0,), (3, 0), (2, 1, 0),
                      (1200,), (30, 40), (4, 5, 60), (2, 2, 2, 2)]:
            cases.append((dt, shape))
    scales = [1.0, 1e-6, 1e9, 123.0, 1e4]
    options = [dict(), dict(precision=2), dict(precision=8, sci_mode=False), dict(sci_mode=True),
               dict(threshold=10, edgeitems=1), dict(linewidth=30), dict(edgeitems=2, threshold=5,
                                                                          linewidth=120),
               dict(precision=0)]
    k = 0
    for opt in options:
        full = dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
        full.update(opt)
        torch.set_printoptions(**full)
        sm = -1 if full["sci_mode"] is None else int(full["sci_mode"])
        if L.clt_set_printoptions(full["precision"], full["threshold"], full["edgeitems"],
                                  full["linewidth"], sm):
            fail("set_printoptions %r" % opt, L.clt_last_error().decode())
            continue
        for dt, shape in cases:
            k += 1
            if dt.is_floating_point:
                t = torch.randn(shape, generator=g, dtype=torch.float64) * scales[k % len(scales)]
                if k % 3 == 0:
                    t = t.round()
                if k % 4 == 0 and t.numel() > 2:
                    t.view(-1)[1] = float("nan")
                    t.view(-1)[0] = float("-inf")
                if k % 5 == 0 and t.numel() > 3:
                    t.view(-1)[2] = 0.0
                t = t.to(dt)
            elif dt == torch.bool:
                t = torch.rand(shape, generator=g) > 0.5
            else:
                lo, hi = (0, 255) if dt == torch.uint8 else (-1000, 100000)
                t = torch.randint(lo, hi, shape, generator=g, dtype=dt)
            p = upload(t)
            got = _repr_of(p)
            L.clt_tensor_free(p)
            want = str(t)
            ok("repr %s %r %r" % (dn(dt), shape, opt), got == want,
               "\n got %r\nwant %r" % (got, want))
    # special values, float16 (uploaded as float32, converted by the library)
    proto("clt_to_dtype", [P, C.c_int, PP])
    nan, inf = float("nan"), float("inf")
    specials = [[0.0, 0.0], [-0.0, 0.0], [nan, inf, -inf], [nan], [1e-300, 1.0],
                [1e8, 1.0], [123456789.0, 2.0], [0.5, 1e-4], [0.5, 9.99e-5], [-1.0, 1000.0],
                [-1.0, 1001.0], [65504.0, -65504.0, 0.000061], [3.14159, -2.5, 1e3],
                [1e16, 1.0, -1.0], [2.0 ** 60, 3.0]]
    for opt in (dict(), dict(precision=0), dict(sci_mode=True, precision=1),
                dict(linewidth=1), dict(threshold=2, edgeitems=1)):
        full = dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
        full.update(opt)
        torch.set_printoptions(**full)
        sm = -1 if full["sci_mode"] is None else int(full["sci_mode"])
        L.clt_set_printoptions(full["precision"], full["threshold"], full["edgeitems"],
                               full["linewidth"], sm)
        for vals in specials:
            for dt in (torch.float32, torch.float64, torch.float16):
                t = torch.tensor(vals, dtype=dt)
                p = upload(t.float() if dt == torch.float16 else t)
                if dt == torch.float16:
                    q = P()
                    if L.clt_to_dtype(p, F16, C.byref(q)):
                        L.clt_tensor_free(p)
                        continue  # a device without cl_khr_fp16
                    L.clt_tensor_free(p)
                    p = q
                got = _repr_of(p)
                L.clt_tensor_free(p)
                ok("repr %s %r %r" % (dn(dt), vals, opt), got == str(t),
                   "\n got %r\nwant %r" % (got, str(t)))
        for vals in ([2 ** 62, -2 ** 63, 7], [0, -1]):
            t = torch.tensor(vals, dtype=torch.int64)
            p = upload(t)
            got = _repr_of(p)
            L.clt_tensor_free(p)
            ok("repr int64 %r %r" % (vals, opt), got == str(t), "\n got %r\nwant %r" % (got, str(t)))
    torch.set_printoptions(profile="default")
    L.clt_reset_printoptions()
    # autograd's suffixes, on a line of their own past linewidth
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_mul", [P, P, PP])
    for n in (2, 14, 15, 16, 17, 40):
        t = torch.linspace(-3, 3, n, dtype=torch.float64).requires_grad_()
        p = upload(t.detach())
        L.clt_set_requires_grad(p, 1)
        ok("repr requires_grad %d" % n, _repr_of(p) == str(t), "\n got %r\nwant %r" % (_repr_of(p), str(t)))
        q = P()
        L.clt_mul(p, p, C.byref(q))
        tq = t * t
        ok("repr grad_fn %d" % n, _repr_of(q) == str(tq), "\n got %r\nwant %r" % (_repr_of(q), str(tq)))
        L.clt_tensor_free(q)
        L.clt_tensor_free(p)
    # the default dtype decides the suffix
    torch.set_default_dtype(torch.float64)
    L.clt_set_default_dtype(F64)
    for dt in (torch.float32, torch.float64):
        t = torch.tensor([1.5, 2.0], dtype=dt)
        p = upload(t)
        ok("repr default float64 %s" % dn(dt), _repr_of(p) == str(t), "%r" % _repr_of(p))
        L.clt_tensor_free(p)
        t = torch.zeros((0,), dtype=dt)
        p = upload(t)
        ok("repr default float64 empty %s" % dn(dt), _repr_of(p) == str(t), "%r" % _repr_of(p))
        L.clt_tensor_free(p)
    torch.set_default_dtype(torch.float32)
    L.clt_set_default_dtype(F32)
# ---- 3-D pooling, 1-D and 3-D adaptive pooling, max_unpool3d ---------------------------------

proto("clt_max_pool3d", [P, I64P, I64P, I64P, I64P, C.c_int, PP])
proto("clt_max_pool3d_with_indices", [P, I64P, I64P, I64P, I64P, C.c_int, PP, PP])
proto("clt_avg_pool3d", [P, I64P, I64P, I64P, C.c_int, C.c_int, PP])
proto("clt_adaptive_avg_pool1d", [P, C.c_int64, PP])
proto("clt_adaptive_avg_pool3d", [P, I64P, PP])
proto("clt_adaptive_max_pool3d", [P, I64P, PP, PP])
proto("clt_max_unpool3d", [P, P, I64P, I64P, I64P, I64P, PP])


def pool3d():
    """max_pool3d (values, indices, ties and NaN), avg_pool3d, adaptive
    pooling in 1-D and 3-D, max_unpool3d and their refusals against
    torch."""
    Fn = torch.nn.functional
    f = torch.float32
    geoms = [((2, 3, 5, 6, 7), (2, 2, 2), None, (0, 0, 0), (1, 1, 1), 0, 1),
             ((3, 6, 7, 5), (3, 2, 3), (1, 2, 2), (1, 1, 0), (1, 1, 1), 0, 1),
             ((1, 2, 7, 6, 8), (3, 3, 2), (2, 1, 3), (1, 0, 1), (1, 2, 1), 1, 0),
             ((2, 1, 8, 5, 6), (2, 3, 3), (3, 2, 1), (1, 1, 1), (2, 1, 1), 1, 1),
             ((0, 2, 4, 4, 4), (2, 2, 2), None, (0, 0, 0), (1, 1, 1), 0, 1)]
    for dt in FLOATS:
        for sh, k, s, pd, dl, cm, cip in geoms:
            margs = (shape_arr(k), _opt(s), shape_arr(pd), shape_arr(dl), cm)
            name = "%s %s k%s s%s p%s d%s c%d" % (dn(dt), list(sh), k, s, pd, dl, cm)
            check("max_pool3d " + name,
                  lambda t, k=k, s=s, pd=pd, dl=dl, cm=cm: Fn.max_pool3d(t, k, s, pd, dl, bool(cm)),
                  lambda p, r, a=margs: L.clt_max_pool3d(p, *a, r),
                  [data(sh, dt, special=True)], tol="exact")
            check("max_pool3d indices " + name,
                  lambda t, k=k, s=s, pd=pd, dl=dl, cm=cm: Fn.max_pool3d(
                      t, k, s, pd, dl, bool(cm), return_indices=True)[1],
                  _second(lambda p, o, r, a=margs: L.clt_max_pool3d_with_indices(p, *a, o, r)),
                  [data(sh, dt, special=True)], tol="exact")
            aargs = (shape_arr(k), _opt(s), shape_arr(pd), cm, cip)
            check("avg_pool3d %s cip%d" % (name, cip),
                  lambda t, k=k, s=s, pd=pd, cm=cm, cip=cip: Fn.avg_pool3d(
                      t, k, s, pd, bool(cm), bool(cip)),
                  lambda p, r, a=aargs: L.clt_avg_pool3d(p, *a, r),
                  [data(sh, dt)], tol="red")
            if dt == torch.float32:
                check("avg_pool3d int64 %s cip%d" % (name, cip),
                      lambda t, k=k, s=s, pd=pd, cm=cm, cip=cip: Fn.avg_pool3d(
                          t, k, s, pd, bool(cm), bool(cip)),
                      lambda p, r, a=aargs: L.clt_avg_pool3d(p, *a, r),
                      [data(sh, torch.int64, lo=-50, hi=50)], tol="exact")
    # ties: small integers repeat in every window
    for sh, k in [((2, 2, 5, 5, 5), (3, 3, 3)), ((1, 3, 4, 6, 5), (2, 3, 2))]:
        t = torch.randint(0, 3, sh).float()
        check("max_pool3d indices ties %s k%s" % (list(sh), k),
              lambda t, k=k: Fn.max_pool3d(t, k, 1, 1, return_indices=True)[1],
              _second(lambda p, o, r, k=k: L.clt_max_pool3d_with_indices(
                  p, shape_arr(k), shape_arr((1, 1, 1)), shape_arr((1, 1, 1)), None, 0, o, r)),
              [t], tol="exact")
    mp = (lambda t: Fn.max_pool3d(t, 2), lambda p, r: L.clt_max_pool3d(
        p, shape_arr((2, 2, 2)), None, None, None, 0, r))
    check("max_pool3d transposed", *mp, [In(data((2, 3, 4, 6, 5), f), ("T",))], tol="exact")
    for sh in ((3, 4, 4), (1, 2, 0, 4, 4), (1, 1, 1, 4, 4)):
        check("max_pool3d %s (refused)" % list(sh), *mp, [data(sh, f)])
    check("max_pool3d int64 (refused)", *mp, [data((1, 2, 4, 4, 4), torch.int64)])
    check("avg_pool3d int32 (refused)", lambda t: Fn.avg_pool3d(t, 2),
          lambda p, r: L.clt_avg_pool3d(p, shape_arr((2, 2, 2)), None, None, 0, 1, r),
          [data((1, 2, 4, 4, 4), torch.int32)])
    ap = (lambda t: Fn.avg_pool3d(t, (2, 2, 2), padding=1),
          lambda p, r: L.clt_avg_pool3d(p, shape_arr((2, 2, 2)), None, shape_arr((1, 1, 1)), 0, 1, r))
    check("avg_pool3d input smaller than the kernel (refused)", *ap, [data((1, 1, 1, 5, 5), f)])
    bp = (lambda t: Fn.max_pool3d(t, 2, padding=(0, 2, 0)),
          lambda p, r: L.clt_max_pool3d(p, shape_arr((2, 2, 2)), None, shape_arr((0, 2, 0)),
                                        None, 0, r))
    check("max_pool3d pad over half the kernel (refused)", *bp, [data((1, 1, 4, 5, 5), f)])
    # adaptive pooling
    for dt in FLOATS:
        for sh, o in [((2, 3, 5, 4, 7), (2, 3, 4)), ((3, 6, 5, 9), (4, 2, 5)),
                      ((1, 2, 3, 4, 5), (7, 6, 9)), ((2, 2, 5, 6, 7), (0, 2, 2)),
                      ((2, 2, 5, 6, 7), (2, 2, 0)), ((1, 1, 4, 4, 4), (1, 1, 1))]:
            check("adaptive_avg_pool3d %s %s -> %s" % (dn(dt), list(sh), list(o)),
                  lambda t, o=o: Fn.adaptive_avg_pool3d(t, o),
                  lambda p, r, o=o: L.clt_adaptive_avg_pool3d(p, shape_arr(o), r),
                  [data(sh, dt)], tol="red")
            check("adaptive_max_pool3d %s %s -> %s" % (dn(dt), list(sh), list(o)),
                  lambda t, o=o: Fn.adaptive_max_pool3d(t, o),
                  lambda p, r, o=o: L.clt_adaptive_max_pool3d(p, shape_arr(o), r, None),
                  [data(sh, dt, special=True)], tol="exact")
            if 0 not in o:
                check("adaptive_max_pool3d indices %s %s -> %s" % (dn(dt), list(sh), list(o)),
                      lambda t, o=o: Fn.adaptive_max_pool3d(t, o, return_indices=True)[1],
                      _second(lambda p, out, r, o=o: L.clt_adaptive_max_pool3d(
                          p, shape_arr(o), out, r)),
                      [data(sh, dt, special=True)], tol="exact")
        for sh, o in [((2, 3, 10), 4), ((3, 7), 3), ((2, 2, 5), 8), ((2, 3, 6), 0)]:
            check("adaptive_avg_pool1d %s %s -> %d" % (dn(dt), list(sh), o),
                  lambda t, o=o: Fn.adaptive_avg_pool1d(t, o),
                  lambda p, r, o=o: L.clt_adaptive_avg_pool1d(p, o, r),
                  [data(sh, dt)], tol="red")
    aa = (lambda t: Fn.adaptive_avg_pool3d(t, 2),
          lambda p, r: L.clt_adaptive_avg_pool3d(p, shape_arr((2, 2, 2)), r))
    for sh in ((2, 4, 4), (1, 2, 0, 4, 4)):
        check("adaptive_avg_pool3d %s (refused)" % list(sh), *aa, [data(sh, f)])
    check("adaptive_avg_pool1d 4-D (refused)", lambda t: Fn.adaptive_avg_pool1d(t, 2),
          lambda p, r: L.clt_adaptive_avg_pool1d(p, 2, r), [data((1, 2, 3, 4), f)])
    # max_unpool3d on torch's pooling indices
    for dt in FLOATS:
        for sh, k, s, pd, osz in [((2, 3, 4, 6, 6), (2, 2, 2), None, (0, 0, 0), None),
                                  ((1, 2, 5, 7, 5), (3, 3, 3), (2, 2, 2), (1, 1, 1), None),
                                  ((3, 4, 4, 6), (2, 2, 2), (2, 2, 2), (0, 0, 0), (5, 5, 7))]:
            x = data(sh, dt)
            y, idx = Fn.max_pool3d(x, k, s, pd, return_indices=True)
            check("max_unpool3d %s %s k%s o%s" % (dn(dt), list(sh), k, osz),
                  lambda t, i, k=k, s=s, pd=pd, osz=osz: Fn.max_unpool3d(t, i, k, s, pd, osz),
                  lambda p, i, r, k=k, s=s, pd=pd, osz=osz: L.clt_max_unpool3d(
                      p, i, shape_arr(k), _opt(s), shape_arr(pd), _opt(osz), r),
                  [y, idx], tol="exact")
    y, idx = Fn.max_pool3d(data((1, 2, 4, 4, 4), f), 2, return_indices=True)
    check("max_unpool3d output_size (refused)",
          lambda t, i: Fn.max_unpool3d(t, i, 2, 2, 0, (7, 4, 4)),
          lambda p, i, r: L.clt_max_unpool3d(p, i, shape_arr((2, 2, 2)), None, None,
                                             shape_arr((7, 4, 4)), r), [y, idx], tol="exact")
# ---- small torch functions (misc2) -----------------------------------------

def _pick_list(fnc, k):
    """A cfn for the k-th tensor of a call that hands out an array."""
    def cfn(*args):
        o = args[-1]
        arr, n = C.POINTER(P)(), C.c_size_t(0)
        st = fnc(*args[:-1], C.byref(arr), C.byref(n))
        if st != 0:
            o._obj.value = None
            return st
        for i in range(n.value):
            if i != k:
                L.clt_tensor_free(arr[i])
        o._obj.value = arr[k] if k < n.value else None
        L.clt_free(arr)
        return st if k < n.value else 1
    return cfn


def _hist_part(k, *rest):
    def cfn(*args):
        o = args[-1]
        h, e = P(), P()
        st = L.clt_histogram(*(args[:-1] + (C.byref(h), C.byref(e))))
        if st == 0:
            L.clt_tensor_free(e if k == 0 else h)
            o._obj.value = (h if k == 0 else e).value
        else:
            o._obj.value = None
        return st
    return cfn


def _fill_diag_c(value, wrap, transposed=False):
    """clt_fill_diagonal_ on a copy of the input (or on a transposed view of
    the copy), which becomes the output."""
    def run(p, o):
        c, v = P(), P()
        st = L.clt_clone(p, C.byref(c))
        if st == 0 and transposed:
            st = L.clt_transpose(c, 0, 1, C.byref(v))
            L.clt_tensor_free(c)
            c = v
        if st == 0:
            st = L.clt_fill_diagonal_(c, value, wrap)
        if st:
            L.clt_tensor_free(c)
            o._obj.value = None
            return st
        o._obj.value = c.value
        return 0
    return run


def _fill_diag_t(value, wrap, transposed=False):
    def run(t):
        c = t.clone()
        if transposed:
            c = c.t()
        return c.fill_diagonal_(value, wrap)
    return run


def misc2_gaps():
    """Tensor.fill_diagonal_, Tensor.sum_to_size and torch.dist."""
    f, d = torch.float32, torch.float64
    proto("clt_fill_diagonal_", [P, C.c_double, C.c_int])
    for shp in ((3, 3), (5, 3), (7, 3), (9, 2), (2, 6), (3, 3, 3), (2, 2, 2, 2), (1, 1), (0, 0),
                (4, 4, 0), (6, 1)):
        for wrap in (0, 1):
            for dt in (f, d, torch.int32, torch.bool):
                check("fill_diagonal_ %s wrap %d %s" % (shp, wrap, dn(dt)),
                      _fill_diag_t(1.0, bool(wrap)), _fill_diag_c(1.0, wrap),
                      [data(shp, dt)], tol="exact")
    for shp in ((3, 8), (8, 3), (4, 5)):
        check("fill_diagonal_ transposed %s wrap" % (shp,), _fill_diag_t(-2.5, True, True),
              _fill_diag_c(-2.5, 1, True), [data(shp, d)], tol="exact")
    check("fill_diagonal_ int 2.7", _fill_diag_t(2.7, False), _fill_diag_c(2.7, 0),
          [data((3, 3), torch.int64)], tol="exact")
    check("fill_diagonal_ nan", _fill_diag_t(float("nan"), False),
          _fill_diag_c(float("nan"), 0), [data((3, 4), f)], tol="exact")
    for shp in ((3,), (), (2, 3, 4)):
        check("fill_diagonal_ %s refused" % (shp,), _fill_diag_t(1.0, False),
              _fill_diag_c(1.0, 0), [data(shp, f)], tol="exact")
    proto("clt_sum_to_size", [P, C.c_int, I64P, PP])
    for shp, size in (((2, 3), (1, 3)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3), (1,)),
                      ((2, 3), ()), ((2, 3), (2, 3)), ((2, 1, 3), (1, 3)), ((4, 2, 3), (2, 1)),
                      ((0, 3), (3,)), ((2, 0), (1, 0)), ((), ()), ((5,), (1,)),
                      ((2, 3), (4,)), ((2, 3), (1, 1, 3)), ((2, 1, 3), (2, 2, 3)),
                      ((2, 3), (-1, 3))):
        for dt in (f, d, torch.int32, torch.bool):
            check("sum_to_size %s to %s %s" % (shp, size, dn(dt)),
                  lambda t, size=size: t.sum_to_size(size),
                  lambda p, o, size=size: L.clt_sum_to_size(p, len(size), shape_arr(size), o),
                  [data(shp, dt)], tol="red")
    proto("clt_dist", [P, P, C.c_double, PP])
    inf = float("inf")
    for p in (2.0, 1.0, 0.0, 3.0, 0.5, -1.0, inf, -inf):
        for dt in (f, d):
            check("dist p=%g %s" % (p, dn(dt)), lambda a, b, p=p: torch.dist(a, b, p),
                  lambda a, b, o, p=p: L.clt_dist(a, b, p, o),
                  [data((3, 4), dt), data((4,), dt)], tol="red")
        check("dist p=%g empty" % p, lambda a, b, p=p: torch.dist(a, b, p),
              lambda a, b, o, p=p: L.clt_dist(a, b, p, o), [data((0, 3), f), data((3,), f)],
              tol="exact")
    check("dist mixed dtypes", lambda a, b: torch.dist(a, b, 2),
          lambda a, b, o: L.clt_dist(a, b, 2.0, o), [data((2, 3), f), data((3,), d)], tol="red")
    check("dist int and float", lambda a, b: torch.dist(a, b, 1),
          lambda a, b, o: L.clt_dist(a, b, 1.0, o),
          [data((2, 3), torch.int32), data((3,), f)], tol="red")
    check("dist zeros", lambda a, b: torch.dist(a, b, 2),
          lambda a, b, o: L.clt_dist(a, b, 2.0, o), [torch.ones(3), torch.ones(3)], tol="exact")
    check("dist ints refused", lambda a, b: torch.dist(a, b, 2),
          lambda a, b, o: L.clt_dist(a, b, 2.0, o),
          [data((2, 3), torch.int64), data((3,), torch.int32)])
    check("dist bad broadcast", lambda a, b: torch.dist(a, b, 2),
          lambda a, b, o: L.clt_dist(a, b, 2.0, o), [data((2,), f), data((3,), f)])


def _spd_batch(n, b, dt, shift=1.0):
    a = data((b, n, n), torch.float64, lo=-1, hi=1)
    return (a @ a.transpose(-1, -2) + shift * torch.eye(n, dtype=torch.float64)).to(dt)


def misc2_kl():
    """kl_divergence pairs added after comparing torch 1.13's _KL_REGISTRY:
    Wishart (its exponential-family pair), Weibull and Kumaraswamy (the
    TransformedDistribution pair: 0 when the transforms are equal)."""
    D = torch.distributions
    _dist_protos()
    f, d = torch.float32, torch.float64
    proto("clt_wishart_dist", [P, P, P, P, C.c_int, PP])
    proto("clt_weibull_dist", [P, P, C.c_int, PP])
    proto("clt_kumaraswamy_dist", [P, P, C.c_int, PP])
    kl = lambda p_, q_, o: L.clt_kl_divergence(p_, q_, o)
    wcov = (lambda df, c, o: L.clt_wishart_dist(df, c, None, None, 1, o), 2)
    wtril = (lambda df, t, o: L.clt_wishart_dist(df, None, None, t, 1, o), 2)
    def wishart_kl(a, b, c_, e):
        """torch's KL batch element by batch element: torch 1.13's
        expfamily pair sums its df term over the whole batch (its
        _sum_rightmost over the event's two dims takes a batched df's
        only dim), so that only an unbatched pair gives the KL."""
        a, c_ = a.expand(max(a.shape[0], c_.shape[0])), c_.expand(max(a.shape[0], c_.shape[0]))
        b, e = b.expand(a.shape + b.shape[-2:]), e.expand(a.shape + e.shape[-2:])
        return torch.stack([D.kl_divergence(D.Wishart(a[k], b[k]), D.Wishart(c_[k], e[k]))
                            for k in range(a.shape[0])])

    for dt, tol in ((d, "red"), (f, "mm")):
        for n, bp, bq in ((2, 1, 1), (3, 2, 2), (3, 2, 1), (1, 3, 3), (4, 1, 3)):
            dfp = data((bp,), dt, lo=n + 1, hi=n + 6)
            dfq = data((bq,), dt, lo=n + 1, hi=n + 6)
            cp, cq = _spd_batch(n, bp, dt), _spd_batch(n, bq, dt, 0.5)
            check("kl Wishart || Wishart %s n=%d batch %d %d" % (dn(dt), n, bp, bq),
                  wishart_kl, _dist_c([wcov, wcov], kl), [dfp, cp, dfq, cq], tol=tol)
        check("kl Wishart || Wishart %s unbatched" % dn(dt),
              lambda a, b, c_, e: D.kl_divergence(D.Wishart(a, b), D.Wishart(c_, e)),
              _dist_c([wcov, wcov], kl), [torch.tensor(5.5, dtype=dt), _spd_batch(3, 1, dt)[0],
                                          torch.tensor(3.5, dtype=dt),
                                          _spd_batch(3, 1, dt, 2.0)[0]], tol=tol)
        cp = _spd_batch(3, 2, dt)
        check("kl Wishart || Wishart %s scale_tril, same" % dn(dt),
              lambda a, b, c_, e: D.kl_divergence(D.Wishart(a, scale_tril=b),
                                                  D.Wishart(c_, scale_tril=e)),
              _dist_c([wtril, wtril], kl),
              [torch.tensor([4.5, 6.0], dtype=dt), torch.linalg.cholesky(cp),
               torch.tensor([4.5, 6.0], dtype=dt), torch.linalg.cholesky(cp)], tol="mm")
    check("kl Wishart || Wishart of other sizes",
          lambda a, b, c_, e: D.kl_divergence(D.Wishart(a, b), D.Wishart(c_, e)),
          _dist_c([wcov, wcov], kl),
          [torch.tensor([4.0], dtype=d), _spd_batch(2, 1, d), torch.tensor([4.0], dtype=d),
           _spd_batch(3, 1, d)])
    weib = (lambda a, b, o: L.clt_weibull_dist(a, b, 1, o), 2)
    kum = (lambda a, b, o: L.clt_kumaraswamy_dist(a, b, 1, o), 2)
    for name, cls, mk in (("Weibull", D.Weibull, weib), ("Kumaraswamy", D.Kumaraswamy, kum)):
        for dt in (f, d):
            a, b = data((2, 3), dt, lo=0.5, hi=3), data((3,), dt, lo=0.5, hi=3)
            check("kl %s || %s %s equal" % (name, name, dn(dt)),
                  lambda w, x, y, z, c=cls: D.kl_divergence(c(w, x), c(y, z)),
                  _dist_c([mk, mk], kl), [a, b, a, b], tol="exact")
            check("kl %s || %s %s broadcast equal" % (name, name, dn(dt)),
                  lambda w, x, y, z, c=cls: D.kl_divergence(c(w, x), c(y, z)),
                  _dist_c([mk, mk], kl), [a[:1], b, a[:1].expand(4, 3).clone(), b], tol="exact")
            a2 = a.clone()
            a2[1, 2] += 0.5
            check("kl %s || %s %s other parameters" % (name, name, dn(dt)),
                  lambda w, x, y, z, c=cls: D.kl_divergence(c(w, x), c(y, z)),
                  _dist_c([mk, mk], kl), [a, b, a2, b])
            b2 = b.clone()
            b2[0] *= 2
            check("kl %s || %s %s other second parameter" % (name, name, dn(dt)),
                  lambda w, x, y, z, c=cls: D.kl_divergence(c(w, x), c(y, z)),
                  _dist_c([mk, mk], kl), [a, b, a, b2])


def _td_kl_c(spec_p, spec_q, ntp, ntq):
    """KL of TransformedDistribution(Normal(a0, a1), transforms of spec_p
    from the next ntp params) and one of Normal(...) with spec_q's."""
    def cfn(*a):
        out, a = a[-1], list(a[:-1])
        owned, ds = [], []
        try:
            for spec, nt in ((spec_p, ntp), (spec_q, ntq)):
                base, d = P(), P()
                assert L.clt_normal_dist(a[0], a[1], 1, C.byref(base)) == 0
                a = a[2:]
                parts = [_tf_make(sp, a[:nt], owned) for sp in spec]
                a = a[nt:]
                arr = (P * max(1, len(parts)))(*parts)
                st = L.clt_transformed_dist(base, arr, len(parts), 1, C.byref(d))
                L.clt_distribution_free(base)
                if st:
                    out._obj.value = None
                    return st
                ds.append(d)
            return L.clt_kl_divergence(ds[0], ds[1], out)
        finally:
            for d in ds:
                L.clt_distribution_free(d)
            for t in owned:
                L.clt_transform_free(t)
    return cfn


def misc2_td_kl():
    """kl_divergence of two TransformedDistributions (LogisticNormal too):
    their bases' KL where torch finds the transforms equal."""
    D = torch.distributions
    T = D.transforms
    _tf_protos()
    f, d = torch.float32, torch.float64
    kl = lambda p_, q_, o: L.clt_kl_divergence(p_, q_, o)
    for dt in (f, d):
        loc, sc = data((2, 3), dt), data((2, 3), dt, lo=0.5, hi=2)
        loc2, sc2 = data((3,), dt), data((3,), dt, lo=0.5, hi=2)
        al, asc = data((3,), dt), data((3,), dt, lo=0.5, hi=2)
        cases = (
            ("Exp", [("exp",)], [("exp",)], 0, 0, lambda *x: [T.ExpTransform()],
             lambda *x: [T.ExpTransform()], []),
            ("Exp vs Sigmoid", [("exp",)], [("sigmoid",)], 0, 0,
             lambda *x: [T.ExpTransform()], lambda *x: [T.SigmoidTransform()], []),
            ("Affine equal", [("affine", 0), ("exp",)], [("affine", 0), ("exp",)], 2, 2,
             lambda l, s, *r: [T.AffineTransform(l, s), T.ExpTransform()],
             lambda l, s: [T.AffineTransform(l, s), T.ExpTransform()], [al, asc, al, asc]),
            ("Affine other", [("affine", 0)], [("affine", 0)], 2, 2,
             lambda l, s, *r: [T.AffineTransform(l, s)],
             lambda l, s: [T.AffineTransform(l, s)], [al, asc, al, asc * 2]),
            ("Power equal", [("power",)], [("power",)], 1, 1,
             lambda e, *r: [T.PowerTransform(e)], lambda e: [T.PowerTransform(e)], [asc, asc]),
            ("two vs one", [("exp",), ("exp",)], [("exp",)], 0, 0,
             lambda *x: [T.ExpTransform(), T.ExpTransform()], lambda *x: [T.ExpTransform()], []),
            ("StickBreaking", [("stick_breaking",)], [("stick_breaking",)], 0, 0,
             lambda *x: [T.StickBreakingTransform()], lambda *x: [T.StickBreakingTransform()],
             []),
        )
        for name, sp, sq, ntp, ntq, tp, tq, tfp in cases:
            def tfn(l1, s1, l2, s2, *ps, tp=tp, tq=tq, ntp=ntp):
                return D.kl_divergence(
                    D.TransformedDistribution(D.Normal(l1, s1), tp(*ps[:ntp])),
                    D.TransformedDistribution(D.Normal(l2, s2), tq(*ps[ntp:])))
            ins = [loc, sc] + tfp[:ntp] + [loc2, sc2] + tfp[ntp:]

            def tfn2(*a, tfn=tfn, ntp=ntp):
                # check() hands the inputs in cfn's order: p's base, p's
                # parameters, q's base, q's parameters
                return tfn(a[0], a[1], a[2 + ntp], a[3 + ntp], *a[2:2 + ntp], *a[4 + ntp:])
            check("kl TransformedDistribution %s %s" % (name, dn(dt)), tfn2,
                  _td_kl_c(sp, sq, ntp, ntq), ins, tol="red")
        check("kl LogisticNormal || LogisticNormal %s" % dn(dt),
              lambda a, b, c_, e: D.kl_divergence(D.LogisticNormal(a, b), D.LogisticNormal(c_, e)),
              _dist_c([(lambda a, b, o: L.clt_logistic_normal_dist(a, b, 1, o), 2)] * 2, kl),
              [loc, sc, loc2, sc2], tol="red")


def misc2():
    misc2_gaps()
    misc2_kl()
    misc2_td_kl()
    f, d = torch.float32, torch.float64
    IP = C.POINTER(C.c_int)
    for n in ("deg2rad", "rad2deg", "sgn", "fix", "isposinf", "isneginf", "isreal"):
        proto("clt_" + n, [P, PP])
        for dt in DTYPES:
            check("%s %s" % (n, dn(dt)), getattr(torch, n), getattr(L, "clt_" + n),
                  [data((3, 5), dt, special=True)], tol="ew")
    for n in ("fmax", "fmin"):
        proto("clt_" + n, [P, P, PP])
        for dt in DTYPES:
            a, b = data((4, 6), dt, special=True), data((4, 6), dt, special=True)
            if dt.is_floating_point:
                b[0, 3:] = float("nan")
                b[1, :2] = a[1, :2]
            check("%s %s" % (n, dn(dt)), getattr(torch, n), getattr(L, "clt_" + n), [a, b],
                  tol="exact")
        check("%s bcast promote" % n, getattr(torch, n), getattr(L, "clt_" + n),
              [data((3, 1), torch.int32), data((1, 4), f, special=False)], tol="exact")
    for n in ("clamp_min", "clamp_max"):
        proto("clt_" + n, [P, C.c_double, PP])
        for dt in DTYPES:
            for s in (0.0, 1.5, -2.0):
                check("%s %s %g" % (n, dn(dt), s), lambda t, s=s, n=n: getattr(torch, n)(t, pyscalar(s)),
                      lambda p, o, s=s, n=n: getattr(L, "clt_" + n)(p, s, o),
                      [data((3, 4), dt, special=True)], tol="exact")
    # shapes
    proto("clt_fliplr", [P, PP])
    proto("clt_flipud", [P, PP])
    for shp in ((4,), (3, 4), (2, 3, 4), ()):
        check("fliplr %s" % (shp,), torch.fliplr, L.clt_fliplr, [data(shp, f)], tol="exact")
        check("flipud %s" % (shp,), torch.flipud, L.clt_flipud, [data(shp, torch.int64)], tol="exact")
    proto("clt_diagflat", [P, C.c_int64, PP])
    for shp, off in (((3,), 0), ((2, 2), 1), ((), 0), ((4,), -2), ((0,), 0)):
        check("diagflat %s %d" % (shp, off), lambda t, off=off: torch.diagflat(t, off),
              lambda p, o, off=off: L.clt_diagflat(p, off, o), [data(shp, f)], tol="exact")
    proto("clt_broadcast_to", [P, C.c_int, I64P, PP])
    for shp, to in (((3, 1), (2, 3, 4)), ((3,), (3,)), ((2, 3), (3, 3)), ((1,), (-1,)),
                    ((2, 1), (2, -1))):
        check("broadcast_to %s %s" % (shp, to), lambda t, to=to: torch.broadcast_to(t, to),
              lambda p, o, to=to: L.clt_broadcast_to(p, len(to), shape_arr(to), o),
              [data(shp, f)], tol="exact")
    proto("clt_broadcast_shapes", [IP, C.POINTER(I64P), C.c_size_t, IP, I64P])
    for shapes in (((2, 1), (3,)), ((1, 4), (5, 1), (1,)), ((2,), (3,)), (), ((0, 1), (1, 7))):
        nd = (C.c_int * max(1, len(shapes)))(*[len(s) for s in shapes])
        arrs = [shape_arr(s) for s in shapes]
        ptrs = (I64P * max(1, len(shapes)))(*[C.cast(a, I64P) for a in arrs])
        ond, osh = C.c_int(9), (C.c_int64 * 8)()
        st = L.clt_broadcast_shapes(nd, ptrs, len(shapes), C.byref(ond), osh)
        try:
            want = tuple(torch.broadcast_shapes(*shapes))
        except Exception:
            want = None
        got = tuple(osh[i] for i in range(ond.value))
        ok("broadcast_shapes %s" % (shapes,),
           (st != 0 and ond.value == 0) if want is None else (st == 0 and got == want),
           "status %d got %s want %s" % (st, got, want))
    proto("clt_broadcast_tensors", [C.POINTER(P), C.c_size_t, C.POINTER(C.POINTER(P)),
                                    C.POINTER(C.c_size_t)])
    for k in range(3):
        check("broadcast_tensors %d" % k, lambda a, b, c, k=k: torch.broadcast_tensors(a, b, c)[k],
              lambda a, b, c, o, k=k: _pick_list(L.clt_broadcast_tensors, k)(
                  (P * 3)(a, b, c), 3, o),
              [data((3, 1), f), data((4,), f), data((2, 1, 1), torch.int64)], tol="exact")
    check("broadcast_tensors mismatch", lambda a, b: torch.broadcast_tensors(a, b)[0],
          lambda a, b, o: _pick_list(L.clt_broadcast_tensors, 0)((P * 2)(a, b), 2, o),
          [data((3,), f), data((4,), f)])
    # products
    proto("clt_ger", [P, P, PP])
    proto("clt_inner", [P, P, PP])
    check("ger", torch.ger, L.clt_ger, [data((3,), f), data((4,), f)], tol="exact")
    for dt in (f, d, torch.int64):
        for sa, sb in (((3,), (3,)), ((2, 3), (4, 3)), ((2, 3, 4), (4,)), ((), (2, 3)), ((2, 3), (2,))):
            check("inner %s %s %s" % (dn(dt), sa, sb), torch.inner, L.clt_inner,
                  [data(sa, dt), data(sb, dt)], tol="mm")
    check("inner dtypes", torch.inner, L.clt_inner, [data((3,), torch.int64), data((3,), f)])
    proto("clt_addr", [P, P, P, C.c_double, C.c_double, PP])
    for dt in (f, d, torch.int64):
        for sh in ((3, 4), (4,), (3, 1), ()):
            for beta, alpha in ((1.0, 1.0), (0.5, 2.0), (0.0, -1.0), (2.0, 3.0)):
                inp = data(sh, dt, special=dt.is_floating_point and len(sh) == 2)
                check("addr %s %s %g %g" % (dn(dt), sh, beta, alpha),
                      lambda i, a, b, be=beta, al=alpha: torch.addr(i, a, b, beta=pyscalar(be), alpha=pyscalar(al)),
                      lambda i, a, b, o, be=beta, al=alpha: L.clt_addr(i, a, b, be, al, o),
                      [inp, data((3,), dt), data((4,), dt)], tol="tr")
    check("addr bool", lambda i, a, b: torch.addr(i, a, b),
          lambda i, a, b, o: L.clt_addr(i, a, b, 1.0, 1.0, o),
          [data((3, 4), torch.bool), data((3,), torch.bool), data((4,), torch.bool)], tol="exact")
    check("addr bad shape", lambda i, a, b: torch.addr(i, a, b),
          lambda i, a, b, o: L.clt_addr(i, a, b, 1.0, 1.0, o),
          [data((2, 4), f), data((3,), f), data((4,), f)])
    proto("clt_chain_matmul", [C.POINTER(P), C.c_size_t, PP])
    check("chain_matmul 3", lambda a, b, c: torch.chain_matmul(a, b, c),
          lambda a, b, c, o: L.clt_chain_matmul((P * 3)(a, b, c), 3, o),
          [data((2, 3), d), data((3, 5), d), data((5, 2), d)], tol="mm")
    check("chain_matmul 1", lambda a: torch.chain_matmul(a),
          lambda a, o: L.clt_chain_matmul((P * 1)(a), 1, o), [data((2, 3), f)], tol="exact")
    check("chain_matmul 1-d", lambda a, b: torch.chain_matmul(a, b),
          lambda a, b, o: L.clt_chain_matmul((P * 2)(a, b), 2, o), [data((2, 3), f), data((3,), f)])
    proto("clt_matrix_power", [P, C.c_int64, PP])
    for n in (0, 1, 3, -2):
        check("matrix_power %d" % n, lambda a, n=n: torch.matrix_power(a, n),
              lambda p, o, n=n: L.clt_matrix_power(p, n, o),
              [torch.eye(3, dtype=d) * 2 + data((2, 3, 3), d) * 0.1], tol="mm")
    proto("clt_logdet", [P, PP])
    for dt in FLOATS:
        for A in (torch.tensor([[-1., 0], [0, 1]]), torch.tensor([[2., 1], [1, 3]]),
                  torch.zeros(2, 2), data((3, 4, 4), torch.float64)):
            check("logdet %s %s" % (dn(dt), list(A.shape)), torch.logdet, L.clt_logdet,
                  [A.to(dt)], tol="mm")
    check("logdet int", torch.logdet, L.clt_logdet, [data((2, 2), torch.int64)])
    proto("clt_frobenius_norm", [P, IP, C.c_int, C.c_int, PP])
    for dims, kd in (((), 0), ((0,), 0), ((1,), 1), ((0, 1), 0), ((-1, 0), 1), ((0, 0), 0),
                     ((0, 1, 2), 0)):
        check("frobenius_norm %s %d" % (dims, kd),
              (lambda t, dims=dims, kd=kd: torch.frobenius_norm(t, dims, bool(kd))) if dims else torch.frobenius_norm,
              lambda p, o, dims=dims, kd=kd: L.clt_frobenius_norm(
                  p, (C.c_int * max(1, len(dims)))(*dims), len(dims), kd, o),
              [data((3, 4, 2), f)], tol="red")
    proto("clt_nuclear_norm", [P, IP, C.c_int, PP])
    for dt in FLOATS:
        check("nuclear_norm %s" % dn(dt), torch.nuclear_norm,
              lambda p, o: L.clt_nuclear_norm(p, None, 0, o), [data((4, 3), dt)], tol="mm")
        check("nuclear_norm %s dims keepdim" % dn(dt), lambda t: torch.nuclear_norm(t, (0, 2), True),
              lambda p, o: L.clt_nuclear_norm(p, (C.c_int * 2)(0, 2), 1, o),
              [data((4, 2, 3), dt)], tol="mm")
    check("nuclear_norm 3-d", torch.nuclear_norm, lambda p, o: L.clt_nuclear_norm(p, None, 0, o),
          [data((2, 4, 3), f)])
    proto("clt_vander", [P, I64P, C.c_int, PP])
    for dt in DTYPES:
        for N, inc in ((None, 0), (3, 1), (0, 0), (1, 1), (5, 0), (-1, 0)):
            check("vander %s %s %d" % (dn(dt), N, inc),
                  lambda t, N=N, inc=inc: torch.vander(t, N, bool(inc)),
                  lambda p, o, N=N, inc=inc: L.clt_vander(
                      p, None if N is None else C.byref(C.c_int64(N)), inc, o),
                  [data((4,), dt, lo=-3, hi=3)], tol="tr")
    proto("clt_linalg_vander", [P, I64P, PP])
    for dt in DTYPES:
        for shp, N in (((4,), None), ((2, 3), 4), ((), 3), ((3,), 1)):
            check("linalg_vander %s %s %s" % (dn(dt), shp, N),
                  lambda t, N=N: torch.linalg.vander(t, N=N),
                  lambda p, o, N=N: L.clt_linalg_vander(p, None if N is None else C.byref(C.c_int64(N)), o),
                  [data(shp, dt, lo=-3, hi=3)], tol="tr")
    proto("clt_renorm", [P, C.c_double, C.c_int, C.c_double, PP])
    for dt in FLOATS + [torch.int64]:
        for p_, dim, mx in ((2.0, 0, 5.0), (1.0, 1, 3.0), (3.0, -1, 100.0), (2.0, 2, 1.0),
                            (0.0, 0, 1.0), (2.0, 0, -1.0)):
            check("renorm %s p=%g dim=%d max=%g" % (dn(dt), p_, dim, mx),
                  lambda t, p_=p_, dim=dim, mx=mx: torch.renorm(t, p_, dim, mx),
                  lambda q, o, p_=p_, dim=dim, mx=mx: L.clt_renorm(q, p_, dim, mx, o),
                  [data((3, 4, 2), dt)], tol="tr")
    check("renorm 1-d", lambda t: torch.renorm(t, 2, 0, 1), lambda q, o: L.clt_renorm(q, 2, 0, 1, o),
          [data((3,), f)])
    # indexing
    proto("clt_take_along_dim", [P, P, IP, PP])
    for dt in (f, torch.int64, torch.bool):
        t = data((3, 4), dt)
        for idx, dim in ((torch.tensor([[0, 2, 1, 3]]), 1), (torch.tensor([[2], [0], [1]]), 1),
                         (torch.tensor([[0, 2, 1, 0], [2, 2, 2, 2]]), 0),
                         (torch.tensor([5, 0, 11]), None), (torch.tensor([[3, 1]]), 1),
                         (torch.tensor([1]), 0)):
            check("take_along_dim %s %s %s" % (dn(dt), list(idx.shape), dim),
                  lambda x, i, dim=dim: torch.take_along_dim(x, i, dim),
                  lambda x, i, o, dim=dim: L.clt_take_along_dim(
                      x, i, None if dim is None else C.byref(C.c_int(dim)), o),
                  [t, idx], tol="exact")
    check("take_along_dim int32 index", lambda x, i: torch.take_along_dim(x, i, 0),
          lambda x, i, o: L.clt_take_along_dim(x, i, C.byref(C.c_int(0)), o),
          [data((3,), f), torch.tensor([0, 1], dtype=torch.int32)])
    proto("clt_index_reduce", [P, C.c_int, P, P, C.c_char_p, C.c_int, PP])
    for dt in (f, d, torch.int64):
        for red in ("prod", "mean", "amax", "amin"):
            for inc in (1, 0):
                for dim, shp, sshp, idx in ((0, (5, 3), (4, 3), [0, 4, 0, 2]),
                                            (1, (2, 5), (2, 6), [1, 1, 3, 0, 1, 4])):
                    check("index_reduce %s %s %d dim=%d" % (dn(dt), red, inc, dim),
                          lambda t, s, i, red=red, inc=inc, dim=dim: t.index_reduce(dim, i, s, red, include_self=bool(inc)),
                          lambda t, s, i, o, red=red, inc=inc, dim=dim: L.clt_index_reduce(
                              t, dim, i, s, red.encode(), inc, o),
                          [data(shp, dt, lo=-3, hi=3), data(sshp, dt, lo=-3, hi=3), torch.tensor(idx)],
                          tol="tr")
    check("index_reduce sum", lambda t, s, i: t.index_reduce(0, i, s, "sum"),
          lambda t, s, i, o: L.clt_index_reduce(t, 0, i, s, b"sum", 1, o),
          [data((3,), f), data((2,), f), torch.tensor([0, 1])])
    check("index_reduce count", lambda t, s, i: t.index_reduce(0, i, s, "amax"),
          lambda t, s, i, o: L.clt_index_reduce(t, 0, i, s, b"amax", 1, o),
          [data((3,), f), data((2,), f), torch.tensor([0, 1, 2])])
    check("index_reduce dtype", lambda t, s, i: t.index_reduce(0, i, s, "amax"),
          lambda t, s, i, o: L.clt_index_reduce(t, 0, i, s, b"amax", 1, o),
          [data((3,), f), data((2,), d), torch.tensor([0, 1])])
    # gradient
    proto("clt_gradient", [P, C.POINTER(C.c_double), C.c_int, IP, C.c_int, C.c_int,
                           C.POINTER(C.POINTER(P)), C.POINTER(C.c_size_t)])
    for dt in (f, d, torch.int64):
        for sp, dims, eo in (((), None, 1), ((2.0,), None, 2), ((0.5, 3.0), (1, 0), 1),
                             ((1.5,), (-1,), 2), ((), (0,), 3)):
            nd = 2 if dims is None else len(dims)
            for k in range(nd):
                def tfn(t, sp=sp, dims=dims, eo=eo, k=k):
                    kw = {"edge_order": eo}
                    if sp:
                        kw["spacing"] = sp[0] if len(sp) == 1 else list(sp)
                    if dims is not None:
                        kw["dim"] = list(dims)
                    return torch.gradient(t, **kw)[k]
                check("gradient %s %s %s %d [%d]" % (dn(dt), sp, dims, eo, k), tfn,
                      lambda p, o, sp=sp, dims=dims, eo=eo, k=k: _pick_list(L.clt_gradient, k)(
                          p, (C.c_double * max(1, len(sp)))(*sp), len(sp),
                          None if dims is None else (C.c_int * len(dims))(*dims),
                          0 if dims is None else len(dims), eo, o),
                      [data((4, 5), dt)], tol="tr")
    proto("clt_gradient_coords", [P, C.POINTER(P), C.c_int, IP, C.c_int, C.c_int,
                                  C.POINTER(C.POINTER(P)), C.POINTER(C.c_size_t)])
    for dt in (f, d, torch.int64):
        for dims, eo in ((None, 1), (None, 2), ((1,), 2), ((-1, 0), 1)):
            nd = 2 if dims is None else len(dims)
            dd = [0, 1] if dims is None else [x % 2 for x in dims]
            crd = [torch.sort(data(((4, 5)[q],), dt if dt != torch.int64 else d, lo=-4, hi=4))[0]
                   for q in dd]
            if dt == torch.int64:
                crd = [torch.tensor([0, 1, 3, 7, 8][:(4, 5)[q]]) for q in dd]
            for k in range(nd):
                def tfn(t, *cs, dims=dims, eo=eo, k=k):
                    kw = {"edge_order": eo, "spacing": list(cs)}
                    if dims is not None:
                        kw["dim"] = list(dims)
                    return torch.gradient(t, **kw)[k]
                check("gradient coords %s %s %d [%d]" % (dn(dt), dims, eo, k), tfn,
                      lambda p, *rest, dims=dims, eo=eo, k=k, nd=nd: _pick_list(L.clt_gradient_coords, k)(
                          p, (P * nd)(*rest[:nd]), nd,
                          None if dims is None else (C.c_int * len(dims))(*dims),
                          0 if dims is None else len(dims), eo, rest[-1]),
                      [data((4, 5), dt)] + crd, tol="tr")
    check("gradient short", lambda t: torch.gradient(t, edge_order=2)[0],
          lambda p, o: _pick_list(L.clt_gradient, 0)(p, None, 0, None, 0, 2, o), [data((2,), f)])
    # histogram
    proto("clt_histogram", [P, C.c_int64, P, C.POINTER(C.c_double), P, C.c_int, PP, PP])
    for dt in FLOATS:
        x = data((7, 9), dt, special=False)
        xs = data((20,), dt, special=True)
        w = data((7, 9), dt, lo=0, hi=2)
        for k in (0, 1):
            for bins, rng, dens in ((10, None, 0), (4, (-2.0, 2.0), 0), (7, None, 1),
                                    (3, (1.0, 1.0), 0), (5, (-1.0, 3.0), 1)):
                kw = {"density": bool(dens)}
                if rng:
                    kw["range"] = rng
                check("histogram %s %d %s %d [%d]" % (dn(dt), bins, rng, dens, k),
                      lambda t, bins=bins, kw=kw, k=k: torch.histogram(t, bins, **kw)[k],
                      lambda p, o, bins=bins, rng=rng, dens=dens, k=k: _hist_part(k)(
                          p, bins, None, None if rng is None else (C.c_double * 2)(*rng), None,
                          dens, o), [x], tol="red")
                check("histogram %s %d weight [%d]" % (dn(dt), bins, k),
                      lambda t, ww, bins=bins, kw=kw, k=k: torch.histogram(t, bins, weight=ww, **kw)[k],
                      lambda p, ww, o, bins=bins, rng=rng, dens=dens, k=k: _hist_part(k)(
                          p, bins, None, None if rng is None else (C.c_double * 2)(*rng), ww,
                          dens, o), [x, w], tol="red")
            check("histogram %s specials range [%d]" % (dn(dt), k),
                  lambda t, k=k: torch.histogram(t, 4, range=(-2.0, 2.0))[k],
                  lambda p, o, k=k: _hist_part(k)(p, 4, None, (C.c_double * 2)(-2.0, 2.0), None, 0, o),
                  [xs], tol="red")
            e = torch.tensor([-3.0, -1.0, 0.0, 0.5, 4.0], dtype=dt)
            for dens in (0, 1):
                check("histogram %s edges %d [%d]" % (dn(dt), dens, k),
                      lambda t, ee, k=k, dens=dens: torch.histogram(t, ee, density=bool(dens))[k],
                      lambda p, ee, o, k=k, dens=dens: _hist_part(k)(p, 0, ee, None, None, dens, o),
                      [x, e], tol="red")
            check("histogram %s specials auto [%d]" % (dn(dt), k),
                  lambda t, k=k: torch.histogram(t, 4)[k],
                  lambda p, o, k=k: _hist_part(k)(p, 4, None, None, None, 0, o), [xs], tol="red")
            check("histogram %s empty [%d]" % (dn(dt), k),
                  lambda t, k=k: torch.histogram(t, 3)[k],
                  lambda p, o, k=k: _hist_part(k)(p, 3, None, None, None, 0, o),
                  [torch.zeros(0, dtype=dt)], tol="red")
    proto("clt_histogramdd", [P, I64P, C.POINTER(P), C.c_size_t, C.POINTER(C.c_double), P,
                              C.c_int, PP, C.POINTER(C.POINTER(P)), C.POINTER(C.c_size_t)])

    def hdd(k, bins=None, nb=0, rng=None, dens=0, nedges=0):
        """A cfn for histogramdd's hist (k -1) or bin_edges[k]; extra tensor
        inputs after x are the weight (when nedges is 0 and one more is
        given) or the edges."""
        def cfn(p, *rest):
            o = rest[-1]
            ins = rest[:-1]
            edges = (P * max(1, nedges))(*ins[:nedges]) if nedges else None
            w = ins[nedges] if len(ins) > nedges else None
            h, arr, n = P(), C.POINTER(P)(), C.c_size_t(0)
            st = L.clt_histogramdd(p, None if bins is None else (C.c_int64 * len(bins))(*bins),
                                   edges, nedges or nb,
                                   None if rng is None else (C.c_double * len(rng))(*rng), w, dens,
                                   C.byref(h), C.byref(arr), C.byref(n))
            if st != 0:
                o._obj.value = None
                return st
            picks = [h.value] + [arr[i] for i in range(n.value)]
            for i, q in enumerate(picks):
                if i != k + 1:
                    L.clt_tensor_free(q)
            L.clt_free(arr)
            o._obj.value = picks[k + 1]
            return st
        return cfn
    for dt in FLOATS:
        x = data((6, 4, 2), dt, special=False)
        xs = data((9, 2), dt, special=True)
        w = data((6, 4), dt, lo=0, hi=2)
        for k in (-1, 0, 1):
            for bins, rng, dens in (([3, 4], None, 0), ([2, 5], [-2.0, 2.0, -1.0, 3.0], 1),
                                    ([1, 1], None, 1), ([4, 2], [1.0, 1.0, 0.0, 2.0], 0)):
                kw = {"density": bool(dens)}
                if rng:
                    kw["range"] = rng
                check("histogramdd %s %s %s %d [%d]" % (dn(dt), bins, rng, dens, k),
                      lambda t, bins=bins, kw=kw, k=k: (lambda r: r.hist if k < 0 else r.bin_edges[k])(
                          torch.histogramdd(t, bins, **kw)),
                      hdd(k, bins, 2, rng, dens), [x], tol="red")
                check("histogramdd %s %s weight [%d]" % (dn(dt), bins, k),
                      lambda t, ww, bins=bins, kw=kw, k=k: (lambda r: r.hist if k < 0 else r.bin_edges[k])(
                          torch.histogramdd(t, bins, weight=ww, **kw)),
                      hdd(k, bins, 2, rng, dens), [x, w], tol="red")
            check("histogramdd %s specials [%d]" % (dn(dt), k),
                  lambda t, k=k: (lambda r: r.hist if k < 0 else r.bin_edges[k])(
                      torch.histogramdd(t, [3, 4], range=[-2.0, 2.0, -3.0, 3.0])),
                  hdd(k, [3, 4], 2, [-2.0, 2.0, -3.0, 3.0]), [xs], tol="red")
            e0 = torch.tensor([-3.0, 0.0, 4.0], dtype=dt)
            e1 = torch.tensor([-1.0, -0.5, 1.0, 2.0], dtype=dt)
            check("histogramdd %s edges [%d]" % (dn(dt), k),
                  lambda t, a, b, k=k: (lambda r: r.hist if k < 0 else r.bin_edges[k])(
                      torch.histogramdd(t, [a, b], density=True)),
                  hdd(k, None, 0, None, 1, 2), [xs, e0, e1], tol="red")
        check("histogramdd %s empty" % dn(dt), lambda t: torch.histogramdd(t, [2, 3]).hist,
              hdd(-1, [2, 3], 2), [torch.zeros(0, 2, dtype=dt)], tol="red")
    check("histogramdd 1-d", lambda t: torch.histogramdd(t, [2]).hist, hdd(-1, [2], 1),
          [data((5,), f)])
    check("histogramdd bins count", lambda t: torch.histogramdd(t, [2]).hist, hdd(-1, [2], 1),
          [data((5, 2), f)])
    for dt in FLOATS:
        xs = data((20,), dt, special=True)
        e = torch.tensor([-3.0, -1.0, 0.0, 0.5, 4.0], dtype=dt)
        check("histogram %s edges specials" % dn(dt), lambda t, ee: torch.histogram(t, ee)[0],
              lambda p, ee, o: _hist_part(0)(p, 0, ee, None, None, 0, o), [xs, e], tol="red")
    check("histogram int", lambda t: torch.histogram(t, 3)[0],
          lambda p, o: _hist_part(0)(p, 3, None, None, None, 0, o), [data((5,), torch.int64)])
    check("histogram bad range", lambda t: torch.histogram(t, 3, range=(2.0, 1.0))[0],
          lambda p, o: _hist_part(0)(p, 3, None, (C.c_double * 2)(2.0, 1.0), None, 0, o),
          [data((5,), f)])
    # strided operands
    check("take_along_dim transposed", lambda x, i: torch.take_along_dim(x, i, 0),
          lambda x, i, o: L.clt_take_along_dim(x, i, C.byref(C.c_int(0)), o),
          [In(data((4, 3), f), ("T",)), In(torch.tensor([[2, 0, 1, 1]]), ("E", (2, 4)))],
          tol="exact")
    check("renorm transposed", lambda t: torch.renorm(t, 2, 1, 2.0),
          lambda p, o: L.clt_renorm(p, 2.0, 1, 2.0, o), [In(data((4, 3), f), ("T",))], tol="tr")
    check("index_reduce transposed", lambda t, s, i: t.index_reduce(1, i, s, "amax"),
          lambda t, s, i, o: L.clt_index_reduce(t, 1, i, s, b"amax", 1, o),
          [In(data((3, 4), f), ("T",)), In(data((2, 3), f), ("T",)), torch.tensor([1, 1])],
          tol="exact")
    check("gradient sliced", lambda t: torch.gradient(t, dim=0)[0],
          lambda p, o: _pick_list(L.clt_gradient, 0)(p, None, 0, (C.c_int * 1)(0), 1, 1, o),
          [In(data((9, 4), f), ("S", 0, 1, 9, 2))], tol="tr")
    check("histogram transposed", lambda t: torch.histogram(t, 5)[0],
          lambda p, o: _hist_part(0)(p, 5, None, None, None, 0, o),
          [In(data((4, 3), f), ("T",))], tol="red")
    check("fmax expanded", torch.fmax, L.clt_fmax,
          [In(data((3, 1), f), ("E", (3, 4))), In(data((4, 3), f), ("T",))], tol="exact")
    check("inner transposed", torch.inner, L.clt_inner,
          [In(data((3, 2), torch.int64), ("T",)), In(data((3, 4), torch.int64), ("T",))],
          tol="exact")
    # creation
    proto("clt_scalar_tensor", [P, C.c_int, C.c_double, PP])
    for dt in DTYPES:
        check("scalar_tensor %s" % dn(dt), lambda dt=dt: torch.scalar_tensor(3.0, dtype=dt),
              lambda o, dt=dt: L.clt_scalar_tensor(DEV, T2C[dt], 3.0, o), [], tol="exact")
    proto("clt_empty_strided", [P, C.c_int, C.c_int, I64P, I64P, PP])
    proto("clt_tensor_strides", [P], I64P)
    for size, stride in (((2, 3), (1, 2)), ((2, 3), (0, 1)), ((4,), (3,)), ((0, 5), (5, 1)), ((2,), (-1,))):
        out = P()
        st = L.clt_empty_strided(DEV, T2C[f], len(size), shape_arr(size), shape_arr(stride), C.byref(out))
        try:
            want = torch.empty_strided(size, stride)
        except Exception:
            want = None
        if want is None:
            ok("empty_strided %s %s" % (size, stride), st != 0 and out.value is None, "status %d" % st)
            continue
        good = st == 0
        if good:
            nd = L.clt_tensor_ndim(out)
            good = (tuple(L.clt_tensor_shape(out)[i] for i in range(nd)) == tuple(want.shape) and
                    tuple(L.clt_tensor_strides(out)[i] for i in range(nd)) == tuple(want.stride()))
            L.clt_tensor_free(out)
        ok("empty_strided %s %s" % (size, stride), good, "status %d" % st)
    for name in ("hann", "hamming", "blackman", "bartlett", "kaiser"):
        args = {"hann": [], "hamming": [C.c_double, C.c_double], "blackman": [],
                "bartlett": [], "kaiser": [C.c_double]}[name]
        proto("clt_%s_window" % name, [P, C.c_int, C.c_int64, C.c_int] + args + [PP])
        for dt in (f, d, torch.int64):
            for n in (0, 1, 2, 5, 64, 1001, -1):
                for per in (1, 0):
                    extra = {"hann": (), "hamming": (0.54, 0.46), "blackman": (), "bartlett": (),
                             "kaiser": (12.0,)}[name]
                    if name == "hamming" and n == 5:
                        extra = (0.6, 0.3)
                    if name == "kaiser" and n == 64:
                        extra = (5.0,)
                    check("%s_window %s %d %d" % (name, dn(dt), n, per),
                          lambda n=n, per=per, dt=dt, extra=extra, name=name: getattr(torch, name + "_window")(
                              n, bool(per), *extra, dtype=dt),
                          lambda o, n=n, per=per, dt=dt, extra=extra, name=name: getattr(L, "clt_%s_window" % name)(
                              DEV, T2C[dt], n, per, *(extra + (o,))),
                          [], tol="tr")
# ---- recurrent cells and the containers -------------------------------------------

_CELL_FWD = C.CFUNCTYPE(C.c_int, P, P, P, PP)


def cells():
    """nn.RNNCell (tanh, relu), LSTMCell and GRUCell: torch's weights moved
    into cltensor's layer through a safetensors file of the state_dict,
    then h' (and c') compared, batched and unbatched, with and without
    states and biases, float32 and float64; the functional forms
    (torch.rnn_tanh_cell, ...) on the same tensors; and the names of a
    model of ModuleList, ModuleDict, ParameterList and ParameterDict, its
    state_dict loaded from torch's."""
    import tempfile
    try:
        from safetensors.torch import save_file
    except Exception as e:  # pragma: no cover
        return fail("cells", "cannot import safetensors: %s" % e)
    proto("clt_rnn_cell_layer", [P, C.c_int64, C.c_int64, C.c_int, C.c_int, P, PP])
    proto("clt_lstm_cell_layer", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_gru_cell_layer", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_rnn_cell_forward", [P, P, P, PP])
    proto("clt_gru_cell_forward", [P, P, P, PP])
    proto("clt_lstm_cell_forward", [P, P, P, P, PP, PP])
    proto("clt_rnn_cell", [P, P, P, P, P, P, C.c_int, PP])
    proto("clt_lstm_cell", [P, P, P, P, P, P, P, PP, PP])
    proto("clt_gru_cell", [P, P, P, P, P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_load", [P, C.c_char_p])
    proto("clt_module_to_dtype", [P, C.c_int])
    proto("clt_module_named_parameters", [P, C.POINTER(C.POINTER(Named)),
                                          C.POINTER(C.c_size_t)])
    proto("clt_free", [P], None)
    tmp = tempfile.mkdtemp(prefix="cltensor-cells-")
    path = os.path.join(tmp, "m.safetensors")
    torch.manual_seed(11)
    I, H, N = 3, 5, 4
    for kind, nl in (("RNNCell", "tanh"), ("RNNCell", "relu"), ("LSTMCell", None),
                     ("GRUCell", None)):
        for bias in (1, 0):
            for dt in (torch.float32, torch.float64):
                for batched in (1, 0):
                    for given in (0, 1):
                        _cell_case(kind, nl, bias, dt, batched, given, I, H, N, path,
                                   save_file)
    os.unlink(path)
    _containers(tmp, save_file)
    os.rmdir(tmp)
    _rrelu()


def _rrelu():
    """F.rrelu: eval mode against torch's; train mode drawn slopes in
    [lower, upper) where x <= 0, x elsewhere; bad bounds and integers
    refused as torch refuses them."""
    proto("clt_rrelu", [P, C.c_double, C.c_double, C.c_int, P, PP])
    for dt in (torch.float32, torch.float64):
        for lo, hi in ((1 / 8, 1 / 3), (0.0, 0.0), (0.5, 2.0), (0.3, 0.3)):
            check("rrelu eval %g %g %s" % (lo, hi, dn(dt)),
                  lambda x, lo=lo, hi=hi: F.rrelu(x, lo, hi, training=False),
                  lambda x, o, lo=lo, hi=hi: L.clt_rrelu(x, lo, hi, 0, None, o),
                  [data((4, 5), dt, special=True)])
        x = data((50, 8), dt)
        px = upload(x)
        out = P()
        try:
            if L.clt_rrelu(px, 0.1, 0.4, 1, None, C.byref(out)):
                fail("rrelu train %s" % dn(dt), L.clt_last_error().decode())
                continue
            got = torch.from_numpy(download(out)[0])
            neg = x <= 0
            r = got[neg] / x[neg]
            good = bool(torch.equal(got[~neg], x[~neg])) and bool(((r >= 0.1 - 1e-7) &
                                                                   (r < 0.4 + 1e-7)).all())
            ok("rrelu train %s" % dn(dt), good, "a slope outside [0.1, 0.4) or x > 0 changed")
        finally:
            L.clt_tensor_free(px)
            L.clt_tensor_free(out)
    check("rrelu bounds", lambda x: F.rrelu(x, 0.5, 0.1, training=True),
          lambda x, o: L.clt_rrelu(x, 0.5, 0.1, 1, None, o), [data((3,), torch.float32)])
    check("rrelu int64", lambda x: F.rrelu(x, training=True),
          lambda x, o: L.clt_rrelu(x, 0.125, 1 / 3, 1, None, o), [data((3,), torch.int64)])


def _cell_case(kind, nl, bias, dt, batched, given, I, H, N, path, save_file):
    name = "%s%s bias=%d %s %s h=%d" % (kind, "(%s)" % nl if nl else "", bias, dn(dt),
                                        "batched" if batched else "unbatched", given)
    kw = {"nonlinearity": nl} if nl else {}
    tm = getattr(torch.nn, kind)(I, H, bias=bool(bias), **kw).to(dt)
    save_file({k: v.float().contiguous() for k, v in tm.state_dict().items()}, path)
    lstm = kind == "LSTMCell"
    m = P()
    keep = []
    try:
        if kind == "RNNCell":
            st = L.clt_rnn_cell_layer(DEV, I, H, bias, 1 if nl == "relu" else 0, None,
                                      C.byref(m))
        else:
            st = getattr(L, "clt_%s_cell_layer" % kind[:-4].lower())(DEV, I, H, bias, None,
                                                                     C.byref(m))
        if st:
            return fail(name, "layer: %s" % L.clt_last_error())
        if dt == torch.float64 and L.clt_module_to_dtype(m, F64):
            return fail(name, "to_dtype: %s" % L.clt_last_error())
        if L.clt_module_load(m, path.encode()):
            return fail(name, "load: %s" % L.clt_last_error())
        x = data((N, I) if batched else (I,), dt, lo=-2, hi=2)
        hs = (N, H) if batched else (H,)
        h = data(hs, dt, lo=-1, hi=1) if given else None
        c = data(hs, dt, lo=-1, hi=1) if given and lstm else None
        with torch.no_grad():
            if lstm:
                exp = list(tm(x, (h, c)) if given else tm(x))
            else:
                exp = [tm(x, h) if given else tm(x)]
        ins = [upload(t) if t is not None else None for t in (x, h, c)]
        keep += [q for q in ins if q is not None]
        outs = [P(), P()]
        if lstm:
            st = L.clt_lstm_cell_forward(m, ins[0], ins[1], ins[2], C.byref(outs[0]),
                                         C.byref(outs[1]))
        else:
            st = getattr(L, "clt_%s_cell_forward" % kind[:-4].lower())(m, ins[0], ins[1],
                                                                       C.byref(outs[0]))
            outs = outs[:1]
        if st:
            return fail(name, "forward: %s" % L.clt_last_error())
        keep += outs
        # the functional form on torch's weights, against torch's
        ws = [upload(w.detach()) for w in (tm.weight_ih, tm.weight_hh)]
        bs = [upload(b.detach()) for b in (tm.bias_ih, tm.bias_hh)] if bias else [None, None]
        keep += ws + [b for b in bs if b is not None]
        fouts = [P(), P()]
        if lstm:
            st = L.clt_lstm_cell(ins[0], ins[1], ins[2], ws[0], ws[1], bs[0], bs[1],
                                 C.byref(fouts[0]), C.byref(fouts[1]))
        elif kind == "GRUCell":
            st = L.clt_gru_cell(ins[0], ins[1], ws[0], ws[1], bs[0], bs[1], C.byref(fouts[0]))
        else:
            st = L.clt_rnn_cell(ins[0], ins[1], ws[0], ws[1], bs[0], bs[1],
                                1 if nl == "relu" else 0, C.byref(fouts[0]))
        if st:
            return fail(name + " functional", L.clt_last_error().decode())
        fouts = fouts[:len(outs)]
        keep += fouts
        for tag, got_ps in (("layer", outs), ("functional", fouts)):
            for what, e, q in zip(("h'", "c'"), exp, got_ps):
                got, shape, _ = download(q)
                if tuple(e.shape) != shape:
                    return fail("%s %s %s" % (name, tag, what), "shape: torch %s, cltensor %s"
                                % (list(e.shape), list(shape)))
                if compare_values("%s %s %s" % (name, tag, what), e, got, "mm",
                                  False) is not True:
                    return
        ok(name, True)
    finally:
        for q in keep:
            L.clt_tensor_free(q)
        L.clt_module_free(m)


def _containers(tmp, save_file):
    """A model of torch's containers: cltensor's names are torch's
    state_dict keys in torch's order, and torch's state loads."""
    proto("clt_module_custom", [C.c_char_p, _CELL_FWD, P, P, PP])
    proto("clt_module_add_module", [P, C.c_char_p, P])
    proto("clt_module_add_parameter", [P, C.c_char_p, P])
    proto("clt_linear", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_module_list", [C.POINTER(P), C.c_size_t, PP])
    proto("clt_module_list_insert", [P, C.c_int64, P])
    proto("clt_module_dict", [C.POINTER(C.c_char_p), C.POINTER(P), C.c_size_t, PP])
    proto("clt_parameter_list", [C.POINTER(P), C.c_size_t, PP])
    proto("clt_parameter_dict", [C.POINTER(C.c_char_p), C.POINTER(P), C.c_size_t, PP])

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.randn(2))
            self.layers = torch.nn.ModuleList([torch.nn.Linear(3, 4), torch.nn.Linear(4, 4)])
            self.layers.insert(0, torch.nn.Linear(2, 3))
            self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(4, 2),
                                              "box": torch.nn.Linear(4, 4, bias=False)})
            self.plist = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(3)),
                                                 torch.nn.Parameter(torch.randn(2, 2))])
            self.pdict = torch.nn.ParameterDict({"alpha": torch.nn.Parameter(torch.randn(1)),
                                                 "beta": torch.nn.Parameter(torch.randn(4))})

    torch.manual_seed(5)
    tm = TNet()
    path = os.path.join(tmp, "net.safetensors")
    save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, path)

    def refuse(m, user, x, out):
        return 1

    cb = _CELL_FWD(refuse)
    m = P()
    made = []

    def lin(i, o, b=1):
        q = P()
        if L.clt_linear(DEV, i, o, b, None, C.byref(q)):
            raise RuntimeError(L.clt_last_error().decode())
        return q

    def zeros(*shape):
        return upload(torch.zeros(shape))

    try:
        if L.clt_module_custom(b"Net", cb, None, None, C.byref(m)):
            return fail("containers", L.clt_last_error().decode())
        if L.clt_module_add_parameter(m, b"scale", zeros(2)):
            return fail("containers scale", L.clt_last_error().decode())
        lst, dct, pl, pd = P(), P(), P(), P()
        mods = (P * 2)(lin(3, 4), lin(4, 4))
        ok_ = L.clt_module_list(mods, 2, C.byref(lst)) == 0
        ok_ = ok_ and L.clt_module_list_insert(lst, 0, lin(2, 3)) == 0
        ok_ = ok_ and L.clt_module_add_module(m, b"layers", lst) == 0
        keys = (C.c_char_p * 2)(b"cls", b"box")
        dm = (P * 2)(lin(4, 2), lin(4, 4, 0))
        ok_ = ok_ and L.clt_module_dict(keys, dm, 2, C.byref(dct)) == 0
        ok_ = ok_ and L.clt_module_add_module(m, b"heads", dct) == 0
        ts = (P * 2)(zeros(3), zeros(2, 2))
        ok_ = ok_ and L.clt_parameter_list(ts, 2, C.byref(pl)) == 0
        ok_ = ok_ and L.clt_module_add_module(m, b"plist", pl) == 0
        pk = (C.c_char_p * 2)(b"alpha", b"beta")
        pt = (P * 2)(zeros(1), zeros(4))
        ok_ = ok_ and L.clt_parameter_dict(pk, pt, 2, C.byref(pd)) == 0
        ok_ = ok_ and L.clt_module_add_module(m, b"pdict", pd) == 0
        if not ok_:
            return fail("containers build", L.clt_last_error().decode())
        names = [n for n, _ in _named_params(m)]
        want = [n for n, _ in tm.named_parameters()]
        ok("containers named_parameters", names == want, "cltensor %s, torch %s" % (names, want))
        if L.clt_module_load(m, path.encode()):
            return fail("containers load", L.clt_last_error().decode())
        sd = tm.state_dict()
        agree = all(np.array_equal(download(t)[0], sd[n].numpy()) for n, t in _named_params(m))
        ok("containers state from torch", agree, "a tensor differs after the load")
    finally:
        L.clt_module_free(m)
        os.unlink(path)

# ---- complex dtypes and torch.fft ---------------------------------------------

C64, C128 = 7, 8
T2C[torch.complex64] = C64
T2C[torch.complex128] = C128
C2NP[C64] = np.complex64
C2NP[C128] = np.complex128
for _n in ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]:
    proto("clt_fft_" + _n, [P, C.c_int64, C.c_int, C.c_char_p, PP])
for _n in ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]:
    proto("clt_fft_" + _n, [P, C.c_int, I64P, C.POINTER(C.c_int), C.c_char_p, PP])
for _n in ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]:
    proto("clt_fft_" + _n, [P, I64P, C.POINTER(C.c_int), C.c_char_p, PP])
for _n in ["fftfreq", "rfftfreq"]:
    proto("clt_fft_" + _n, [P, C.c_int64, C.c_double, C.c_int, PP])
for _n in ["fftshift", "ifftshift"]:
    proto("clt_fft_" + _n, [P, C.c_int, C.POINTER(C.c_int), PP])
for _n in ["view_as_real", "view_as_complex", "real", "imag", "conj", "angle"]:
    proto("clt_" + _n, [P, PP])
proto("clt_polar", [P, P, PP])
proto("clt_complex", [P, P, PP])
proto("clt_is_complex", [P], C.c_int)


def cdata(shape, dt):
    part = torch.float32 if dt == torch.complex64 else torch.float64
    return torch.complex(data(shape, part), data(shape, part))


def fft_check(name, tfn, cfn, inputs, scale_tol=None):
    """check() for complex results: values compared against the largest
    magnitude of the result (an FFT's error is absolute, on that scale)."""
    global PASSED
    keep = []
    try:
        pairs = [as_in(x).build(keep) for x in inputs]
        tins = [p[0] for p in pairs]
        cins = [p[1] for p in pairs]
        terr = None
        try:
            exp = tfn(*tins)
        except Exception as e:
            terr = e
        out = P(0xdead)
        st = cfn(*cins, C.byref(out))
        if terr is not None:
            if st == 0:
                L.clt_tensor_free(out)
                return fail(name, "torch raises (%s) but cltensor succeeds" %
                            str(terr).splitlines()[0][:90])
            if out.value is not None:
                return fail(name, "status %d but *out not NULL" % st)
            if not L.clt_last_error():
                return fail(name, "status %d without message" % st)
            PASSED += 1
            return
        if st != 0:
            return fail(name, "cltensor fails (%d: %s), torch gives %s %s" % (
                st, L.clt_last_error().decode(), tuple(exp.shape), exp.dtype))
        keep.append(out)
        got, shape, dt = download(out)
        if tuple(exp.shape) != shape:
            return fail(name, "shape: torch %s, cltensor %s" % (list(exp.shape), list(shape)))
        if T2C[exp.dtype] != dt:
            return fail(name, "dtype: torch %s, cltensor %d" % (exp.dtype, dt))
        e = exp.resolve_conj().numpy()
        single = e.dtype in (np.float32, np.complex64)
        tol = scale_tol or (2e-5 if single else 1e-12)
        en, gn = np.isnan(e), np.isnan(got)
        if not np.array_equal(en, gn):
            return fail(name, "NaN positions differ: torch %s, cltensor %s" % (e, got))
        e = np.where(en, 0, e).astype(np.complex128)
        g = np.where(gn, 0, got).astype(np.complex128)
        fin = np.isfinite(e)
        if not np.array_equal(e[~fin], g[~fin]):
            return fail(name, "infinities differ: torch %s, cltensor %s" % (e, got))
        e, g = e[fin], g[fin]
        mag = max(1.0, float(np.max(np.abs(e))) if e.size else 1.0)
        err = float(np.max(np.abs(e - g))) if e.size else 0.0
        if not err <= tol * mag:
            return fail(name, "max error %g over scale %g" % (err, mag))
        PASSED += 1
        if VERBOSE:
            print("ok", name)
    except Exception as ex:
        fail(name, "harness error: %r" % (ex,))
    finally:
        for p in keep:
            L.clt_tensor_free(p)


def _ints(v):
    return None if v is None else (C.c_int * len(v))(*v)


def _i64(v):
    return None if v is None else (C.c_int64 * len(v))(*v)


def _norm(nm):
    return None if nm is None else nm.encode()


def fft():
    tf = torch.fft
    for dt in (torch.complex64, torch.complex128):
        part = torch.float32 if dt == torch.complex64 else torch.float64
        x = cdata((3, 10), dt)
        r = data((3, 10), part)
        # creation, casts, views
        fft_check("complex clone %s" % dt, lambda a: a.clone(), lambda p, o: L.clt_clone(p, o), [x])
        fft_check("complex transpose contiguous %s" % dt, lambda a: a.contiguous(),
                  lambda p, o: L.clt_clone(p, o), [In(x, ("T",))])
        fft_check("real to complex %s" % dt, lambda a: a.to(dt),
                  lambda p, o: L.clt_to_dtype(p, T2C[dt], o), [r])
        fft_check("complex to real %s" % dt, lambda a: a.real.clone(),
                  lambda p, o: L.clt_to_dtype(p, T2C[part], o), [x])
        fft_check("complex to int64 %s" % dt, lambda a: a.real.to(torch.int64),
                  lambda p, o: L.clt_to_dtype(p, I64, o), [x])
        other = torch.complex128 if dt == torch.complex64 else torch.complex64
        fft_check("complex to complex %s" % dt, lambda a: a.to(other),
                  lambda p, o: L.clt_to_dtype(p, T2C[other], o), [x])
        fft_check("view_as_real %s" % dt, lambda a: torch.view_as_real(a).clone(),
                  lambda p, o: L.clt_view_as_real(p, o), [x])
        fft_check("view_as_complex %s" % part, lambda a: torch.view_as_complex(a),
                  lambda p, o: L.clt_view_as_complex(p, o), [data((4, 2), part)])
        fft_check("view_as_complex bad last %s" % part, lambda a: torch.view_as_complex(a),
                  lambda p, o: L.clt_view_as_complex(p, o), [data((4, 3), part)])
        fft_check("real %s" % dt, lambda a: a.real.clone(), lambda p, o: L.clt_real(p, o), [x])
        fft_check("imag %s" % dt, lambda a: a.imag.clone(), lambda p, o: L.clt_imag(p, o), [x])
        fft_check("imag of real %s" % part, lambda a: a.imag, lambda p, o: L.clt_imag(p, o), [r])
        fft_check("conj %s" % dt, lambda a: a.conj().resolve_conj(),
                  lambda p, o: L.clt_conj(p, o), [x])
        fft_check("abs %s" % dt, lambda a: a.abs(), lambda p, o: L.clt_abs(p, o), [x])
        fft_check("angle %s" % dt, lambda a: a.angle(), lambda p, o: L.clt_angle(p, o), [x])
        fft_check("angle real %s" % part, lambda a: a.angle(), lambda p, o: L.clt_angle(p, o),
                  [data((7,), part)])
        m, th = data((3, 4), part).abs(), data((4,), part)
        fft_check("polar %s" % part, torch.polar, lambda a, b, o: L.clt_polar(a, b, o), [m, th])
        fft_check("complex %s" % part, torch.complex, lambda a, b, o: L.clt_complex(a, b, o),
                  [m, th])
        fft_check("complex mixed dtypes", torch.complex, lambda a, b, o: L.clt_complex(a, b, o),
                  [data((3,), torch.float32), data((3,), torch.float64)])
        y = cdata((10,), dt)
        for opn in ("add", "sub", "mul", "div"):
            tfn = getattr(torch, opn)
            cfn = getattr(L, "clt_" + opn)
            fft_check("%s %s" % (opn, dt), tfn, lambda a, b, o, f=cfn: f(a, b, o), [x, y])
            fft_check("%s %s real" % (opn, dt), tfn, lambda a, b, o, f=cfn: f(a, b, o),
                      [x, data((3, 1), torch.float64)])
            fft_check("%s int %s" % (opn, dt), tfn, lambda a, b, o, f=cfn: f(a, b, o),
                      [data((10,), torch.int32), x])
        # refusals of ops that do not take complex
        proto("clt_erf", [P, PP])
        fft_check("erf refuses %s" % dt, torch.erf, lambda p, o: L.clt_erf(p, o), [x])
        fft_check("maximum refuses %s" % dt, lambda a, b: torch.maximum(a, b),
                  lambda a, b, o: L.clt_maximum(a, b, o), [x, y])

        # 1-D transforms
        for norm in (None, "backward", "ortho", "forward"):
            for n in (-1, 7, 16, 13):
                nn_ = None if n == -1 else n
                for dim in (-1, 0):
                    a = x if dim == -1 else In(x, ("T",))
                    for name in ("fft", "ifft"):
                        fft_check("%s %s n=%s dim=%d %s" % (name, dt, nn_, dim, norm),
                                  lambda t, f=getattr(tf, name): f(t, n=nn_, dim=dim, norm=norm),
                                  lambda p, o, f=getattr(L, "clt_fft_" + name):
                                  f(p, n, dim, _norm(norm), o), [a])
                    for name in ("irfft", "hfft"):
                        fft_check("%s %s n=%s dim=%d %s" % (name, dt, nn_, dim, norm),
                                  lambda t, f=getattr(tf, name): f(t, n=nn_, dim=dim, norm=norm),
                                  lambda p, o, f=getattr(L, "clt_fft_" + name):
                                  f(p, n, dim, _norm(norm), o), [a])
                    ra = r if dim == -1 else In(r, ("T",))
                    for name in ("rfft", "ihfft", "fft"):
                        fft_check("%s real %s n=%s dim=%d %s" % (name, part, nn_, dim, norm),
                                  lambda t, f=getattr(tf, name): f(t, n=nn_, dim=dim, norm=norm),
                                  lambda p, o, f=getattr(L, "clt_fft_" + name):
                                  f(p, n, dim, _norm(norm), o), [ra])
        fft_check("rfft of complex %s" % dt, lambda t: tf.rfft(t),
                  lambda p, o: L.clt_fft_rfft(p, -1, -1, None, o), [x])
        fft_check("fft n=0 %s" % dt, lambda t: tf.fft(t, n=0),
                  lambda p, o: L.clt_fft_fft(p, 0, -1, None, o), [x])
        fft_check("fft bad norm %s" % dt, lambda t: tf.fft(t, norm="bad"),
                  lambda p, o: L.clt_fft_fft(p, -1, -1, b"bad", o), [x])
        fft_check("fft dim 2 %s" % dt, lambda t: tf.fft(t, dim=2),
                  lambda p, o: L.clt_fft_fft(p, -1, 2, None, o), [x])
        big = cdata((3, 1024), dt)
        for name in ("fft", "ifft", "irfft", "hfft"):
            fft_check("%s 1024 %s" % (name, dt), lambda t, f=getattr(tf, name): f(t),
                      lambda p, o, f=getattr(L, "clt_fft_" + name): f(p, -1, -1, None, o), [big])
        fft_check("rfft 4096 %s" % part, lambda t: tf.rfft(t, n=4096),
                  lambda p, o: L.clt_fft_rfft(p, 4096, -1, None, o), [data((2, 3000), part)])
        fft_check("fft large prime %s" % dt, lambda t: tf.fft(t),
                  lambda p, o: L.clt_fft_fft(p, -1, -1, None, o), [cdata((2, 257), dt)])

        # n-D transforms
        x3 = cdata((4, 5, 6), dt)
        r3 = data((4, 5, 6), part)
        cases = [(None, None), ((3, 8), None), (None, (0, 2)), ((5, -1), (2, 0)),
                 ((4, 4, 4), (0, 1, 2))]
        for s, dims in cases:
            k = len(s) if s is not None else (len(dims) if dims is not None else 0)
            for norm in (None, "ortho", "forward"):
                for name in ("fftn", "ifftn", "irfftn"):
                    fft_check("%s %s s=%s dim=%s %s" % (name, dt, s, dims, norm),
                              lambda t, f=getattr(tf, name): f(t, s=s, dim=dims, norm=norm),
                              lambda p, o, f=getattr(L, "clt_fft_" + name):
                              f(p, k, _i64(s), _ints(dims), _norm(norm), o), [x3])
                fft_check("rfftn %s s=%s dim=%s %s" % (part, s, dims, norm),
                          lambda t: tf.rfftn(t, s=s, dim=dims, norm=norm),
                          lambda p, o: L.clt_fft_rfftn(p, k, _i64(s), _ints(dims), _norm(norm), o),
                          [r3])
        for name in ("fft2", "ifft2", "irfft2"):
            fft_check("%s %s" % (name, dt), lambda t, f=getattr(tf, name): f(t),
                      lambda p, o, f=getattr(L, "clt_fft_" + name): f(p, None, None, None, o),
                      [x3])
            fft_check("%s %s s" % (name, dt), lambda t, f=getattr(tf, name): f(t, s=(3, 7)),
                      lambda p, o, f=getattr(L, "clt_fft_" + name):
                      f(p, _i64((3, 7)), None, None, o), [x3])
        fft_check("rfft2 %s" % part, lambda t: tf.rfft2(t, dim=(0, 2)),
                  lambda p, o: L.clt_fft_rfft2(p, None, _ints((0, 2)), None, o), [r3])
        fft_check("fftn repeated dims %s" % dt, lambda t: tf.fftn(t, dim=(0, 0)),
                  lambda p, o: L.clt_fft_fftn(p, 2, None, _ints((0, 0)), None, o), [x3])
        # hfftn and ihfftn (and the 2-D forms), torch's compositions
        for s, dims in cases + [((6,), (1,)), (None, (-1, 0))]:
            k = len(s) if s is not None else (len(dims) if dims is not None else 0)
            for norm in (None, "ortho", "forward"):
                fft_check("hfftn %s s=%s dim=%s %s" % (dt, s, dims, norm),
                          lambda t: tf.hfftn(t, s=s, dim=dims, norm=norm),
                          lambda p, o: L.clt_fft_hfftn(p, k, _i64(s), _ints(dims), _norm(norm), o),
                          [x3])
                fft_check("ihfftn %s s=%s dim=%s %s" % (part, s, dims, norm),
                          lambda t: tf.ihfftn(t, s=s, dim=dims, norm=norm),
                          lambda p, o: L.clt_fft_ihfftn(p, k, _i64(s), _ints(dims), _norm(norm),
                                                        o), [r3])
        for s in (None, (3, 7)):
            fft_check("hfft2 %s s=%s" % (dt, s), lambda t: tf.hfft2(t, s=s),
                      lambda p, o: L.clt_fft_hfft2(p, _i64(s), None, None, o), [x3])
            fft_check("ihfft2 %s s=%s" % (part, s), lambda t: tf.ihfft2(t, s=s, dim=(0, 2)),
                      lambda p, o: L.clt_fft_ihfft2(p, _i64(s), _ints((0, 2)), None, o), [r3])
        fft_check("ihfftn of a complex input %s" % dt, lambda t: tf.ihfftn(t),
                  lambda p, o: L.clt_fft_ihfftn(p, 0, None, None, None, o), [x3])
        fft_check("hfftn repeated dims %s" % dt, lambda t: tf.hfftn(t, dim=(1, 1)),
                  lambda p, o: L.clt_fft_hfftn(p, 2, None, _ints((1, 1)), None, o), [x3])
        # shifts
        for dims in (None, (0,), (1, 2), (-1,)):
            k = len(dims) if dims else 0
            for name in ("fftshift", "ifftshift"):
                fft_check("%s %s dim=%s" % (name, dt, dims),
                          lambda t, f=getattr(tf, name): f(t, dim=dims),
                          lambda p, o, f=getattr(L, "clt_fft_" + name): f(p, k, _ints(dims), o),
                          [x3])
                fft_check("%s %s dim=%s" % (name, part, dims),
                          lambda t, f=getattr(tf, name): f(t, dim=dims),
                          lambda p, o, f=getattr(L, "clt_fft_" + name): f(p, k, _ints(dims), o),
                          [r3])
    for n in (0, 1, 2, 7, 10):
        for d in (1.0, 0.1, 2.5):
            for dt in FLOATS:
                for name in ("fftfreq", "rfftfreq"):
                    fft_check("%s n=%d d=%g %s" % (name, n, d, dt),
                              lambda f=getattr(tf, name): f(n, d, dtype=dt),
                              lambda o, f=getattr(L, "clt_fft_" + name): f(DEV, n, d, T2C[dt], o),
                              [], scale_tol=2e-7 if dt == torch.float32 else 1e-15)
    # .npy files hold complex arrays as numpy writes them (<c8, <c16)
    import tempfile
    proto("clt_save_npy", [C.c_char_p, P])
    proto("clt_load_npy", [C.c_char_p, P, PP])
    with tempfile.TemporaryDirectory() as tmp:
        for dt, npd in ((torch.complex64, np.complex64), (torch.complex128, np.complex128)):
            a = cdata((2, 3), dt)
            path = os.path.join(tmp, "c.npy")
            keep = []
            try:
                p = In(a).build(keep)[1]
                ok("npy save %s" % dt, L.clt_save_npy(path.encode(), p) == 0,
                   L.clt_last_error().decode())
                back = np.load(path)
                ok("npy save %s values" % dt, back.dtype == npd and np.array_equal(back, a.numpy()),
                   "%s %s" % (back.dtype, back))
                np.save(path, (a.numpy() * 2).astype(npd))
                q = P()
                st = L.clt_load_npy(path.encode(), DEV, C.byref(q))
                ok("npy load %s" % dt, st == 0, L.clt_last_error().decode())
                if st == 0:
                    keep.append(q)
                    got = download(q)[0]
                    ok("npy load %s values" % dt, np.array_equal(got, a.numpy() * 2), "%s" % got)
            finally:
                for t in keep:
                    L.clt_tensor_free(t)
    # tolist() printed by Python: repr of each complex
    proto("clt_tensor_format", [P, PP])
    proto("clt_free", [P], None)
    vals = torch.tensor([1 + 2j, 1.5 - 0.25j, 2j, -0.0 + 1j, 0 - 1j, 3 - 0.0j,
                         complex(float("nan"), float("inf")), complex(1e20, -1e-5)],
                        dtype=torch.complex128)
    for dt in (torch.complex128, torch.complex64):
        keep = []
        try:
            p = In(vals.to(dt)).build(keep)[1]
            txt = P()
            st = L.clt_tensor_format(p, C.byref(txt))
            got = C.string_at(txt.value).decode() if st == 0 else L.clt_last_error().decode()
            L.clt_free(txt)
            want = str(vals.to(dt).tolist())
            ok("format %s" % dt, st == 0 and got == want, "%r, Python says %r" % (got, want))
        finally:
            for t in keep:
                L.clt_tensor_free(t)
    fft_check("fftn of int", lambda t: tf.fftn(t),
              lambda p, o: L.clt_fft_fftn(p, 0, None, None, None, o),
              [data((3, 4), torch.int32)])


# ---- torch.stft and torch.istft --------------------------------------------------


class StftOpts(C.Structure):
    _fields_ = [("hop_length", C.c_int64), ("win_length", C.c_int64), ("window", P),
                ("center", C.c_int), ("pad_mode", C.c_int), ("normalized", C.c_int),
                ("onesided", C.c_int), ("return_complex", C.c_int)]


class IstftOpts(C.Structure):
    _fields_ = [("hop_length", C.c_int64), ("win_length", C.c_int64), ("window", P),
                ("center", C.c_int), ("normalized", C.c_int), ("onesided", C.c_int),
                ("length", C.c_int64), ("return_complex", C.c_int)]


proto("clt_stft", [P, C.c_int64, C.POINTER(StftOpts), PP])
proto("clt_istft", [P, C.c_int64, C.POINTER(IstftOpts), PP])
PADS = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


def _stft_c(n_fft, hop, win, center, mode, normalized, onesided, rc):
    def f(x, *rest):
        o = rest[-1]
        w = rest[0] if len(rest) == 2 else None
        opts = StftOpts(-1 if hop is None else hop, -1 if win is None else win, w,
                        int(center), PADS.get(mode, 9), int(normalized),
                        -1 if onesided is None else int(onesided), int(rc))
        return L.clt_stft(x, n_fft, C.byref(opts), o)
    return f


def _stft_t(n_fft, hop, win, center, mode, normalized, onesided, rc):
    def f(x, *w):
        return torch.stft(x, n_fft, hop_length=hop, win_length=win, window=w[0] if w else None,
                          center=center, pad_mode=mode, normalized=normalized,
                          onesided=onesided, return_complex=rc)
    return f


def _istft_c(n_fft, hop, win, center, normalized, onesided, length, rc):
    def f(x, *rest):
        o = rest[-1]
        w = rest[0] if len(rest) == 2 else None
        opts = IstftOpts(-1 if hop is None else hop, -1 if win is None else win, w,
                         int(center), int(normalized), -1 if onesided is None else int(onesided),
                         -1 if length is None else length, int(rc))
        return L.clt_istft(x, n_fft, C.byref(opts), o)
    return f


def _istft_t(n_fft, hop, win, center, normalized, onesided, length, rc):
    def f(x, *w):
        return torch.istft(x, n_fft, hop_length=hop, win_length=win, window=w[0] if w else None,
                           center=center, normalized=normalized, onesided=onesided,
                           length=length, return_complex=rc)
    return f


def stft():
    torch.manual_seed(7)
    # forward cases: (shape, n_fft, hop, win, window kind, center, pad_mode, normalized,
    # onesided, return_complex)
    cases = [
        ((40,), 8, None, None, None, True, "reflect", False, None, True),
        ((3, 50), 16, 4, None, "hann", True, "reflect", False, None, True),
        ((2, 37), 10, 3, 7, "hann", True, "constant", True, None, True),
        ((45,), 12, 5, 9, "rand", True, "replicate", False, False, True),
        ((2, 30), 8, 2, None, "rand", True, "circular", True, True, False),
        ((33,), 9, 4, None, None, False, "reflect", False, None, True),
        ((2, 20), 20, 1, None, "hann", False, "reflect", False, None, True),
        ((64,), 64, 16, 64, "hann", True, "constant", False, None, True),
        ((2, 100), 80, 20, 60, "hann", True, "reflect", True, None, True),
        ((30,), 5, 1, 3, None, True, "reflect", False, None, False),
    ]
    for dt in FLOATS:
        cdt = torch.complex64 if dt == torch.float32 else torch.complex128
        for (shape, n_fft, hop, win, wk, center, mode, nrm, ones, rc) in cases:
            wl = n_fft if win is None else win
            inputs = [data(shape, dt)]
            if wk == "hann":
                inputs.append(torch.hann_window(wl, dtype=dt))
            elif wk == "rand":
                inputs.append(data((wl,), dt, lo=0.1, hi=1.5))
            name = "stft %s %s n_fft=%d hop=%s win=%s %s center=%d %s norm=%d ones=%s rc=%d" % (
                dn(dt), shape, n_fft, hop, win, wk, center, mode, nrm, ones, rc)
            args = (n_fft, hop, win, center, mode, nrm, ones, rc)
            fft_check(name, _stft_t(*args), _stft_c(*args), inputs)
            # complex input (not onesided)
            cin = [cdata(shape, cdt)] + inputs[1:]
            args = (n_fft, hop, win, center, mode, nrm, None if ones is None else False, rc)
            fft_check("complex " + name, _stft_t(*args), _stft_c(*args), cin)
        # a complex window with a real input, and a float64 window with float32 input
        x = data((2, 30), dt)
        fft_check("stft complex window %s" % dn(dt), _stft_t(8, 2, None, True, "reflect", False, None, True),
                  _stft_c(8, 2, None, True, "reflect", False, None, True), [x, cdata((8,), cdt)])
        fft_check("stft mixed window %s" % dn(dt), _stft_t(8, 2, None, True, "reflect", False, None, True),
                  _stft_c(8, 2, None, True, "reflect", False, None, True),
                  [x, torch.hann_window(8, dtype=torch.float64)])
        # a transposed (non-contiguous) input
        fft_check("stft strided %s" % dn(dt), _stft_t(8, 3, None, True, "reflect", False, None, True),
                  _stft_c(8, 3, None, True, "reflect", False, None, True),
                  [In(data((2, 25), dt), ("T",))])
    # empty batches and signals, the smallest and a large n_fft
    for dt in FLOATS:
        for mode in ("reflect", "constant", "circular"):
            for shape in ((0, 20), (0,)):
                args = (8, 2, None, True, mode, False, None, True)
                fft_check("stft empty %s %s %s" % (shape, mode, dn(dt)), _stft_t(*args),
                          _stft_c(*args), [data(shape, dt)])
        args = (8, 2, None, False, "reflect", False, None, True)
        fft_check("stft empty batch uncentred %s" % dn(dt), _stft_t(*args), _stft_c(*args),
                  [data((0, 20), dt)])
        args = (1, 1, None, True, "reflect", False, None, True)
        fft_check("stft n_fft 1 %s" % dn(dt), _stft_t(*args), _stft_c(*args), [data((5,), dt)])
        args = (2, 1, None, True, "replicate", False, None, True)
        fft_check("stft n_fft 2 of 1 %s" % dn(dt), _stft_t(*args), _stft_c(*args), [data((1,), dt)])
        w = torch.hann_window(250, dtype=dt)
        args = (300, 77, 250, True, "reflect", True, None, True)
        fft_check("stft n_fft 300 %s" % dn(dt), _stft_t(*args), _stft_c(*args), [data((2, 700), dt), w])
        spec = torch.stft(data((2, 700), dt), 300, 77, 250, w, normalized=True, return_complex=True)
        args = (300, 77, 250, True, True, None, None, False)
        fft_check("istft n_fft 300 %s" % dn(dt), _istft_t(*args), _istft_c(*args), [spec, w])
    # complex kernels on a contiguous view that starts inside its storage
    # (istft of one signal slices such views; they once read from the start)
    for cdt in (torch.complex64, torch.complex128):
        z = cdata((40,), cdt)
        zs = In(z, ("S", 0, 4, 36, 1))
        fft_check("offset view fft %s" % cdt, lambda a: torch.fft.fft(a),
                  lambda p, o: L.clt_fft_fft(p, -1, -1, None, o), [zs])
        fft_check("offset view abs %s" % cdt, lambda a: a.abs(), lambda p, o: L.clt_abs(p, o), [zs])
        fft_check("offset view conj %s" % cdt, lambda a: a.conj().resolve_conj(),
                  lambda p, o: L.clt_conj(p, o), [zs])
        fft_check("offset view mul %s" % cdt, lambda a, b: a * b,
                  lambda p, q, o: L.clt_mul(p, q, o), [zs, In(z, ("S", 0, 2, 34, 1))])
    # errors
    x = data((20,), torch.float32)
    bad = [
        ("hop 0", (8, 0, None, True, "reflect", False, None, True), [x]),
        ("default hop 0", (3, None, None, True, "reflect", False, None, True), [x]),
        ("win > n_fft", (8, 2, 9, True, "reflect", False, None, True), [x]),
        ("win 0", (8, 2, 0, True, "reflect", False, None, True), [x]),
        ("window size", (8, 2, None, True, "reflect", False, None, True), [x, torch.ones(5)]),
        ("window 2-D", (8, 2, None, True, "reflect", False, None, True), [x, torch.ones(2, 4)]),
        ("n_fft > len", (21, 5, None, False, "reflect", False, None, True), [x]),
        ("n_fft 0", (0, 1, 1, False, "reflect", False, None, True), [x]),
        ("reflect too short", (40, 10, None, True, "reflect", False, None, True), [x]),
        ("onesided complex", (8, 2, None, True, "reflect", False, True, True),
         [cdata((20,), torch.complex64)]),
        ("onesided complex window", (8, 2, None, True, "reflect", False, True, True),
         [x, cdata((8,), torch.complex64)]),
        ("3-D", (8, 2, None, True, "reflect", False, None, True), [data((2, 2, 20), torch.float32)]),
        ("int64", (8, 2, None, False, "reflect", False, None, True), [torch.arange(20)]),
        ("float16", (8, 2, None, False, "reflect", False, None, True), [x.half()]),
    ]
    for nm, args, inputs in bad:
        exp = None if nm != "float16" else RuntimeError("half")
        fft_check("stft error " + nm, _stft_t(*args), _stft_c(*args), inputs) if exp is None else \
            check("stft error " + nm, _stft_t(*args), _stft_c(*args), inputs, expect_error=exp)

    # istft: round trips and torch's own results on spectra with every bin set
    icases = [
        # (shape, n_fft, hop, win, window, center, normalized, onesided, length, rc)
        ((40,), 8, None, None, None, True, False, None, None, False),
        ((3, 50), 16, 4, None, "hann", True, False, None, None, False),
        ((2, 37), 10, 3, 7, "hann", True, True, None, 37, False),
        ((45,), 12, 5, 9, "rand", True, False, None, 60, False),
        ((2, 30), 8, 2, None, "rand", False, True, None, None, False),
        ((33,), 9, 4, None, None, False, False, None, 20, False),
        ((2, 100), 80, 20, 60, "hann", True, True, None, None, False),
        ((40,), 8, 2, None, "hann", True, False, False, None, False),
        ((40,), 8, 2, None, "hann", True, False, False, None, True),
        ((2, 30), 8, 3, 6, "rand", True, True, False, 31, True),
    ]
    for dt in FLOATS:
        cdt = torch.complex64 if dt == torch.float32 else torch.complex128
        for (shape, n_fft, hop, win, wk, center, nrm, ones, length, rc) in icases:
            wl = n_fft if win is None else win
            w = []
            if wk == "hann":
                w = [torch.hann_window(wl, dtype=dt)]
            elif wk == "rand":
                w = [data((wl,), dt, lo=0.3, hi=1.5)]
            sig = cdata(shape, cdt) if rc else data(shape, dt)
            spec = torch.stft(sig, n_fft, hop_length=hop, win_length=win,
                              window=w[0] if w else None, center=center, normalized=nrm,
                              onesided=False if rc else ones, return_complex=True)
            name = "istft %s %s n_fft=%d hop=%s win=%s %s center=%d norm=%d ones=%s len=%s rc=%d" % (
                dn(dt), shape, n_fft, hop, win, wk, center, nrm, ones, length, rc)
            args = (n_fft, hop, win, center, nrm, ones, length, rc)
            fft_check(name, _istft_t(*args), _istft_c(*args), [spec] + w)
            noisy = cdata(tuple(spec.shape), cdt)
            fft_check("noisy " + name, _istft_t(*args), _istft_c(*args), [noisy] + w)
        spec = torch.stft(data((2, 30), dt), 8, 2, return_complex=True)
        fft_check("istft view_as_real input %s" % dn(dt),
                  lambda s: torch.istft(torch.view_as_real(s), 8, 2),
                  lambda p, o: (lambda q: L.clt_istft(q, 8, C.byref(IstftOpts(2, -1, None, 1, 0, -1, -1, 0)), o))(
                      _keep_view_as_real(p)),
                  [spec])
        fft_check("istft onesided default two-sided %s" % dn(dt), _istft_t(8, 2, None, True, False, None, None, False),
                  _istft_c(8, 2, None, True, False, None, None, False),
                  [cdata((8, 11), cdt)])
    X = torch.stft(data((20,), torch.float32), 8, return_complex=True)
    ibad = [
        ("hop 0", (8, 0, None, True, False, None, None, False), [X]),
        ("hop > win", (8, 9, None, True, False, None, None, False), [X]),
        ("win > n_fft", (8, 2, 9, True, False, None, None, False), [X]),
        ("window size", (8, 2, None, True, False, None, None, False), [X, torch.ones(5)]),
        ("n_freq onesided", (10, 2, None, True, False, None, None, False), [X]),
        ("n_freq two-sided", (8, 2, None, True, False, False, None, False), [X]),
        ("onesided complex", (8, 2, None, True, False, True, None, True), [X]),
        ("complex window", (8, 2, None, True, False, None, None, False),
         [X, cdata((8,), torch.complex64)]),
        ("NOLA", (8, 8, None, True, False, None, None, False), [X, torch.hann_window(8)]),
        ("NOLA uncentred", (8, 4, None, False, False, None, None, False),
         [X, torch.hann_window(8, periodic=False)]),
        ("empty", (8, 2, None, True, False, None, None, False), [X[:, :0]]),
        ("1-D", (8, 2, None, True, False, None, None, False), [X[:, 0]]),
        ("4-D", (8, 2, None, True, False, None, None, False), [X[None, None]]),
        ("length 0", (8, 2, None, True, False, None, 0, False), [X]),
        ("real input", (8, 2, None, True, False, None, None, False), [X.real.contiguous()]),
        ("n_fft 1 centred", (1, 1, None, True, False, None, None, False),
         [cdata((1, 5), torch.complex64)]),
    ]
    for nm, args, inputs in ibad:
        fft_check("istft error " + nm, _istft_t(*args), _istft_c(*args), inputs)


_VIEWS = []


def _keep_view_as_real(p):
    q = P()
    assert L.clt_view_as_real(p, C.byref(q)) == 0
    _VIEWS.append(q)
    return q
def complex2():
    """sum, mean (dims, keepdim), matmul/mm/bmm/mv/dot, index_select,
    gather, flip and roll of complex tensors, slices that start inside their
    buffer, and the refusals (mixed real and complex products)."""
    for n_ in ("sum", "mean", "prod"):
        proto("clt_" + n_, [P, PP])
    for n_ in ("sum_dim", "mean_dim"):
        proto("clt_" + n_, [P, C.c_int, C.c_int, PP])
    for n_ in ("matmul", "mm", "bmm", "mv", "dot", "vdot", "div"):
        proto("clt_" + n_, [P, P, PP])
    for n_ in ("index_select", "gather"):
        proto("clt_" + n_, [P, C.c_int, P, PP])
    proto("clt_flip", [P, C.POINTER(C.c_int), C.c_int, PP])
    proto("clt_roll", [P, C.POINTER(C.c_int64), C.POINTER(C.c_int), C.c_int, PP])
    for dt in (torch.complex64, torch.complex128):
        x = cdata((3, 4, 5), dt)
        fft_check("sum %s" % dt, torch.sum, lambda p, o: L.clt_sum(p, o), [x])
        fft_check("mean %s" % dt, torch.mean, lambda p, o: L.clt_mean(p, o), [x])
        fft_check("sum of a transposed view %s" % dt, torch.sum, lambda p, o: L.clt_sum(p, o),
                  [In(x, ("T",))])
        for d in (0, 1, 2, -1, 3):
            for keep in (0, 1):
                fft_check("sum dim %d keepdim %d %s" % (d, keep, dt),
                          lambda t, d=d, k=keep: t.sum(d, keepdim=bool(k)),
                          lambda p, o, d=d, k=keep: L.clt_sum_dim(p, d, k, o), [x])
                fft_check("mean dim %d keepdim %d %s" % (d, keep, dt),
                          lambda t, d=d, k=keep: t.mean(d, keepdim=bool(k)),
                          lambda p, o, d=d, k=keep: L.clt_mean_dim(p, d, k, o), [In(x, ("T",))])
        fft_check("sum empty %s" % dt, torch.sum, lambda p, o: L.clt_sum(p, o),
                  [cdata((0, 3), dt)])
        fft_check("mean empty dim %s" % dt, lambda t: t.mean(0),
                  lambda p, o: L.clt_mean_dim(p, 0, 0, o), [cdata((0, 3), dt)])
        a, b = cdata((3, 4), dt), cdata((4, 5), dt)
        tol = 1e-4 if dt == torch.complex64 else None
        fft_check("matmul %s" % dt, torch.matmul, lambda p, q, o: L.clt_matmul(p, q, o), [a, b],
                  tol)
        fft_check("matmul transposed %s" % dt, torch.matmul,
                  lambda p, q, o: L.clt_matmul(p, q, o), [In(a, ("T",)), In(b, ("T",))], tol)
        fft_check("mm %s" % dt, torch.mm, lambda p, q, o: L.clt_mm(p, q, o), [a, b], tol)
        fft_check("matmul batched broadcast %s" % dt, torch.matmul,
                  lambda p, q, o: L.clt_matmul(p, q, o), [cdata((2, 1, 3, 4), dt),
                                                         cdata((3, 4, 2), dt)], tol)
        fft_check("bmm %s" % dt, torch.bmm, lambda p, q, o: L.clt_bmm(p, q, o),
                  [cdata((2, 3, 4), dt), cdata((2, 4, 5), dt)], tol)
        fft_check("mv %s" % dt, torch.mv, lambda p, q, o: L.clt_mv(p, q, o),
                  [a, cdata((4,), dt)], tol)
        # torch.dot of complex vectors gives 0 in this build of torch 1.13 (its
        # BLAS's complex dot), so the reference is its definition
        fft_check("dot %s" % dt, lambda p, q: (p * q).sum(), lambda p, q, o: L.clt_dot(p, q, o),
                  [cdata((6,), dt), cdata((6,), dt)], tol)
        fft_check("vdot %s" % dt, lambda p, q: (p.conj() * q).sum(),
                  lambda p, q, o: L.clt_vdot(p, q, o), [cdata((6,), dt), cdata((6,), dt)], tol)
        fft_check("matmul complex and real %s" % dt, torch.matmul,
                  lambda p, q, o: L.clt_matmul(p, q, o), [a, b.real.clone()])
        fft_check("matmul shapes %s" % dt, torch.matmul, lambda p, q, o: L.clt_matmul(p, q, o),
                  [a, a])
        # data-moving ops through the real views
        ix = torch.tensor([2, 0, 2])
        fft_check("index_select %s" % dt, lambda t: t.index_select(1, ix),
                  lambda p, o: L.clt_index_select(p, 1, upload(ix), o), [x])
        fft_check("index_select dim -1 of a transposed view %s" % dt,
                  lambda t: t.index_select(-1, ix),
                  lambda p, o: L.clt_index_select(p, -1, upload(ix), o), [In(x, ("T",))])
        gx = torch.tensor([[[1, 0], [2, 2]], [[0, 1], [1, 0]]])
        fft_check("gather %s" % dt, lambda t: t.gather(2, gx),
                  lambda p, o: L.clt_gather(p, 2, upload(gx), o), [x])
        fft_check("flip %s" % dt, lambda t: t.flip(0, -1),
                  lambda p, o: L.clt_flip(p, (C.c_int * 2)(0, -1), 2, o), [x])
        fft_check("roll %s" % dt, lambda t: t.roll((1, -2), (2, 1)),
                  lambda p, o: L.clt_roll(p, (C.c_int64 * 2)(1, -2), (C.c_int * 2)(2, 1), 2, o),
                  [x])
        fft_check("roll flattened %s" % dt, lambda t: t.roll(7),
                  lambda p, o: L.clt_roll(p, (C.c_int64 * 1)(7), None, 0, o), [x])
        fft_check("index_select bad dim %s" % dt, lambda t: t.index_select(3, ix),
                  lambda p, o: L.clt_index_select(p, 3, upload(ix), o), [x])
        # slices that start inside their buffer reach the complex kernels
        fft_check("div of slices %s" % dt, lambda t: t[2] / t[0],
                  lambda p, o: L.clt_div(*(lambda q0, q2: (q2, q0))(
                      *[_sel(p, k) for k in (0, 2)]), o), [x])


def _cvar(t, dim, c, keepdim, sq):
    """torch.var (std) of a complex tensor, correction c; dim None: all."""
    dims = tuple(range(t.dim())) if dim is None else dim
    if t.dim() == 0:
        r = torch.var(t.reshape(1), 0, correction=c)
    else:
        r = torch.var(t, dims, correction=c, keepdim=keepdim)
    return r.sqrt() if sq else r


def complex3():
    """prod, prod_dim, cumsum, cumprod, var, std (and their _dim, var_mean
    and std_mean forms: real results), tril, triu, where, masked_fill, neg,
    scalar arithmetic, eq, ne, isnan, isinf, isfinite, rot90, masked_select,
    nonzero, index_add, index_copy, scatter, scatter_add, square,
    reciprocal, sgn and the vector norms of complex tensors, against torch's
    complex kernels."""
    for n_ in ("prod", "mean"):
        proto("clt_" + n_, [P, PP])
    for n_ in ("prod_dim", "mean_dim"):
        proto("clt_" + n_, [P, C.c_int, C.c_int, PP])
    for n_ in ("cumsum", "cumprod"):
        proto("clt_" + n_, [P, C.c_int, PP])
    for n_ in ("var", "std"):
        proto("clt_" + n_, [P, C.c_double, PP])
        proto("clt_%s_dim" % n_, [P, C.c_int, C.c_double, C.c_int, PP])
        proto("clt_%s_mean" % n_, [P, C.c_double, PP, PP])
        proto("clt_%s_mean_dim" % n_, [P, C.c_int, C.c_double, C.c_int, PP, PP])
    for n_ in ("tril", "triu"):
        proto("clt_" + n_, [P, C.c_int64, PP])
    proto("clt_masked_fill", [P, P, C.c_double, PP])
    proto("clt_where", [P, P, P, PP])
    proto("clt_rot90", [P, C.c_int64, C.c_int, C.c_int, PP])
    proto("clt_masked_select", [P, P, PP])
    proto("clt_index_add", [P, C.c_int, P, P, C.c_double, PP])
    for n_ in ("square", "reciprocal", "sgn"):
        proto("clt_" + n_, [P, PP])
    proto("clt_vector_norm", [P, C.c_double, PP])
    proto("clt_vector_norm_dim", [P, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_linalg_vector_norm", [P, C.c_double, C.POINTER(C.c_int), C.c_int, C.c_int, PP])
    for n_ in ("index_copy", "scatter", "scatter_add"):
        proto("clt_" + n_, [P, C.c_int, P, P, PP])
    for n_ in ("neg", "isnan", "isinf", "isfinite", "nonzero"):
        proto("clt_" + n_, [P, PP])
    for n_ in ("eq", "ne", "lt"):
        proto("clt_" + n_, [P, P, PP])
    for n_ in ("add", "sub", "rsub", "mul", "div", "rdiv", "eq", "ne"):
        proto("clt_%s_scalar" % n_, [P, C.c_double, PP])

    def pair(fname, which, *args):
        """One of the two results of var_mean/std_mean (which 0: the
        spread, 1: the mean) as a one-result call."""
        def call(p, o):
            other = P()
            outs = (o, C.byref(other)) if which == 0 else (C.byref(other), o)
            st = getattr(L, fname)(p, *args, *outs)
            if other.value:
                L.clt_tensor_free(other)
            return st
        return call

    for dt in (torch.complex64, torch.complex128):
        tol = 1e-4 if dt == torch.complex64 else None
        x = cdata((3, 4, 5), dt)
        xz = x.clone()
        xz[1, 2, 3] = 0
        xz[0, 1, :2] = 0
        for nm, t in (("", x), (" with zeros", xz)):
            fft_check("prod%s %s" % (nm, dt), torch.prod, lambda p, o: L.clt_prod(p, o),
                      [t * 0.5], tol)
            for d in (0, 1, 2, -1):
                for keep in (0, 1):
                    fft_check("prod dim %d keepdim %d%s %s" % (d, keep, nm, dt),
                              lambda t, d=d, k=keep: t.prod(d, keepdim=bool(k)),
                              lambda p, o, d=d, k=keep: L.clt_prod_dim(p, d, k, o), [t], tol)
        fft_check("prod of a transposed view %s" % dt, lambda t: t.prod(1),
                  lambda p, o: L.clt_prod_dim(p, 1, 0, o), [In(x, ("T",))], tol)
        fft_check("prod of 13 %s" % dt, lambda t: t.prod(0),
                  lambda p, o: L.clt_prod_dim(p, 0, 0, o), [cdata((13, 2), dt) * 0.4], tol)
        fft_check("prod empty %s" % dt, torch.prod, lambda p, o: L.clt_prod(p, o),
                  [cdata((0, 3), dt)])
        fft_check("prod empty dim %s" % dt, lambda t: t.prod(0),
                  lambda p, o: L.clt_prod_dim(p, 0, 0, o), [cdata((0, 3), dt)])
        fft_check("prod 0-d %s" % dt, lambda t: t.prod(0, keepdim=True),
                  lambda p, o: L.clt_prod_dim(p, 0, 1, o), [cdata((), dt)])
        fft_check("prod bad dim %s" % dt, lambda t: t.prod(3),
                  lambda p, o: L.clt_prod_dim(p, 3, 0, o), [x])
        for d in (0, 1, 2, -1):
            fft_check("cumsum dim %d %s" % (d, dt), lambda t, d=d: t.cumsum(d),
                      lambda p, o, d=d: L.clt_cumsum(p, d, o), [x], tol)
            fft_check("cumprod dim %d %s" % (d, dt), lambda t, d=d: t.cumprod(d),
                      lambda p, o, d=d: L.clt_cumprod(p, d, o), [xz], tol)
        fft_check("cumsum of a transposed view %s" % dt, lambda t: t.cumsum(-1),
                  lambda p, o: L.clt_cumsum(p, -1, o), [In(x, ("T",))], tol)
        fft_check("cumprod of a transposed view %s" % dt, lambda t: t.cumprod(-1),
                  lambda p, o: L.clt_cumprod(p, -1, o), [In(x, ("T",))], tol)
        fft_check("cumprod of 37 %s" % dt, lambda t: t.cumprod(1),
                  lambda p, o: L.clt_cumprod(p, 1, o), [cdata((2, 37), dt) * 0.3], tol)
        for nm_, f_ in (("cumsum", L.clt_cumsum), ("cumprod", L.clt_cumprod)):
            tf_ = getattr(torch, nm_)
            fft_check("%s 0-d %s" % (nm_, dt), lambda t, tf_=tf_: tf_(t, 0),
                      lambda p, o, f_=f_: f_(p, 0, o), [cdata((), dt)])
            fft_check("%s empty %s" % (nm_, dt), lambda t, tf_=tf_: tf_(t, 1),
                      lambda p, o, f_=f_: f_(p, 1, o), [cdata((3, 0), dt)])
            fft_check("%s bad dim %s" % (nm_, dt), lambda t, tf_=tf_: tf_(t, -4),
                      lambda p, o, f_=f_: f_(p, -4, o), [x])
        xn = x.clone()
        xn[2, 1, 0] = complex(float("nan"), 1.0)
        for sq, nm_ in ((False, "var"), (True, "std")):
            fa, fd = getattr(L, "clt_" + nm_), getattr(L, "clt_%s_dim" % nm_)
            for c in (0, 1, 2):
                fft_check("%s correction %d %s" % (nm_, c, dt),
                          lambda t, c=c, sq=sq: _cvar(t, None, c, False, sq),
                          lambda p, o, c=c, fa=fa: fa(p, c, o), [x], tol)
                for d in (0, 2, -1):
                    for keep in (0, 1):
                        fft_check("%s dim %d correction %d keepdim %d %s" % (nm_, d, c, keep, dt),
                                  lambda t, d=d, c=c, k=keep, sq=sq: _cvar(t, d, c, bool(k), sq),
                                  lambda p, o, d=d, c=c, k=keep, fd=fd: fd(p, d, c, k, o), [x],
                                  tol)
            fft_check("%s of a transposed view %s" % (nm_, dt),
                      lambda t, sq=sq: _cvar(t, 0, 1, False, sq),
                      lambda p, o, fd=fd: fd(p, 0, 1, 0, o), [In(x, ("T",))], tol)
            fft_check("%s with a NaN %s" % (nm_, dt), lambda t, sq=sq: _cvar(t, 1, 1, False, sq),
                      lambda p, o, fd=fd: fd(p, 1, 1, 0, o), [xn], tol)
            fft_check("%s of one element %s" % (nm_, dt),
                      lambda t, sq=sq: _cvar(t, None, 1, False, sq),
                      lambda p, o, fa=fa: fa(p, 1, o), [cdata((1,), dt)])
            fft_check("%s of one element, correction 2 %s" % (nm_, dt),
                      lambda t, sq=sq: _cvar(t, 0, 2, False, sq),
                      lambda p, o, fd=fd: fd(p, 0, 2, 0, o), [cdata((1, 3), dt)])
            fft_check("%s 0-d %s" % (nm_, dt), lambda t, sq=sq: _cvar(t, None, 0, False, sq),
                      lambda p, o, fa=fa: fa(p, 0, o), [cdata((), dt)])
            fft_check("%s of equal elements %s" % (nm_, dt),
                      lambda t, sq=sq: _cvar(t, 0, 1, False, sq),
                      lambda p, o, fd=fd: fd(p, 0, 1, 0, o), [cdata((1, 4), dt).expand(3, 4)])
            fft_check("%s bad dim %s" % (nm_, dt), lambda t, sq=sq: _cvar(t, 3, 1, False, sq),
                      lambda p, o, fd=fd: fd(p, 3, 1, 0, o), [x])
            tfm = getattr(torch, "%s_mean" % nm_)
            fft_check("%s_mean spread %s" % (nm_, dt), lambda t, tfm=tfm: tfm(t)[0],
                      pair("clt_%s_mean" % nm_, 0, C.c_double(1)), [x], tol)
            fft_check("%s_mean mean %s" % (nm_, dt), lambda t, tfm=tfm: tfm(t)[1],
                      pair("clt_%s_mean" % nm_, 1, C.c_double(1)), [x], tol)
            fft_check("%s_mean_dim spread %s" % (nm_, dt),
                      lambda t, tfm=tfm: tfm(t, 1, unbiased=False, keepdim=True)[0],
                      pair("clt_%s_mean_dim" % nm_, 0, 1, C.c_double(0), 1), [x], tol)
            fft_check("%s_mean_dim mean %s" % (nm_, dt),
                      lambda t, tfm=tfm: tfm(t, 1, unbiased=False, keepdim=True)[1],
                      pair("clt_%s_mean_dim" % nm_, 1, 1, C.c_double(0), 1), [x], tol)
        for nm_, tf_, f_ in (("tril", torch.tril, L.clt_tril), ("triu", torch.triu, L.clt_triu)):
            for k in (-1, 0, 2, -7):
                fft_check("%s %d %s" % (nm_, k, dt), lambda t, k=k, tf_=tf_: tf_(t, k),
                          lambda p, o, k=k, f_=f_: f_(p, k, o), [x])
            fft_check("%s of a transposed view %s" % (nm_, dt), lambda t, tf_=tf_: tf_(t, 1),
                      lambda p, o, f_=f_: f_(p, 1, o), [In(x, ("T",))])
            fft_check("%s of a vector %s" % (nm_, dt), lambda t, tf_=tf_: tf_(t),
                      lambda p, o, f_=f_: f_(p, 0, o), [cdata((4,), dt)])
        cond = torch.rand(3, 4, 5) > 0.5
        y = cdata((3, 4, 5), dt)
        rdt = torch.float32 if dt == torch.complex64 else torch.float64
        fft_check("where %s" % dt, torch.where, lambda c, p, q, o: L.clt_where(c, p, q, o),
                  [cond, x, y])
        fft_check("where broadcast %s" % dt, torch.where,
                  lambda c, p, q, o: L.clt_where(c, p, q, o), [cond[:, :1], x[0], y[:, 1:2, :]])
        fft_check("where complex and real %s" % dt, torch.where,
                  lambda c, p, q, o: L.clt_where(c, p, q, o), [cond, x, data((4, 5), rdt)])
        fft_check("where real and complex float64 %s" % dt, torch.where,
                  lambda c, p, q, o: L.clt_where(c, p, q, o),
                  [cond, data((3, 4, 5), torch.float64), x])
        fft_check("where 0-d %s" % dt, torch.where, lambda c, p, q, o: L.clt_where(c, p, q, o),
                  [torch.tensor(True), cdata((), dt), cdata((), dt)])
        fft_check("where of transposed views %s" % dt, torch.where,
                  lambda c, p, q, o: L.clt_where(c, p, q, o),
                  [cond[0], In(x[0], ("T",)), In(y[1], ("T",))])
        for v in (0.0, 2.5, -0.0, float("nan")):
            fft_check("masked_fill %g %s" % (v, dt), lambda t, m, v=v: t.masked_fill(m, v),
                      lambda p, m, o, v=v: L.clt_masked_fill(p, m, v, o), [x, cond])
        fft_check("masked_fill broadcast mask %s" % dt, lambda t, m: t.masked_fill(m, -1.5),
                  lambda p, m, o: L.clt_masked_fill(p, m, -1.5, o), [x, cond[0, :, :1]])
        fft_check("masked_fill of a transposed view %s" % dt,
                  lambda t, m: t.masked_fill(m, 3.0),
                  lambda p, m, o: L.clt_masked_fill(p, m, 3.0, o), [In(x[0], ("T",)), cond[0].T])
        # negation, scalar arithmetic, comparisons and the NaN/inf tests
        xs = x.clone()
        xs[0, 0, 0] = complex(float("nan"), 0.0)
        xs[0, 0, 1] = complex(1.0, float("inf"))
        xs[0, 0, 2] = complex(float("-inf"), float("nan"))
        fft_check("neg %s" % dt, torch.neg, lambda p, o: L.clt_neg(p, o), [In(xs, ("T",))])
        for v in (2.5, -0.0, 1e300):
            for nm_, tf_, f_ in (("add_scalar", lambda t, v: t + v, L.clt_add_scalar),
                                 ("sub_scalar", lambda t, v: t - v, L.clt_sub_scalar),
                                 ("rsub_scalar", lambda t, v: v - t, L.clt_rsub_scalar),
                                 ("mul_scalar", lambda t, v: t * v, L.clt_mul_scalar),
                                 ("div_scalar", lambda t, v: t / v, L.clt_div_scalar),
                                 ("rdiv_scalar", lambda t, v: v / t, L.clt_rdiv_scalar)):
                if v == 1e300 and dt == torch.complex64:
                    continue  # torch keeps the double scalar where the float32 one is inf
                if v == 0 and nm_ == "div_scalar":
                    continue  # torch's complex x / 0 is nan+nanj; clt_div's kernel gives infs
                fft_check("%s %g %s" % (nm_, v, dt), lambda t, v=v, tf_=tf_: tf_(t, v),
                          lambda p, o, v=v, f_=f_: f_(p, v, o), [In(x, ("T",))], tol)
        y2 = x.clone()
        y2[1] = xs[1] + 1
        y2[2, 0] = x[2, 0].real.to(dt)
        for nm_, tf_, f_ in (("eq", torch.eq, L.clt_eq), ("ne", torch.ne, L.clt_ne)):
            fft_check("%s %s" % (nm_, dt), tf_, lambda p, q, o, f_=f_: f_(p, q, o), [xs, y2])
            fft_check("%s with a real operand %s" % (nm_, dt), tf_,
                      lambda p, q, o, f_=f_: f_(p, q, o), [x.real.to(dt), x[0].real.clone()])
            fft_check("%s broadcast %s" % (nm_, dt), tf_, lambda p, q, o, f_=f_: f_(p, q, o),
                      [x, x[:1, 2:3]])
        for v in (0.5, float("nan")):
            fft_check("eq_scalar %g %s" % (v, dt), lambda t, v=v: torch.eq(t, v),
                      lambda p, o, v=v: L.clt_eq_scalar(p, v, o), [torch.complex(
                          torch.tensor([0.5, 0.5, 1.0]), torch.tensor([0.0, 1.0, 0.0])).to(dt)])
            fft_check("ne_scalar %g %s" % (v, dt), lambda t, v=v: torch.ne(t, v),
                      lambda p, o, v=v: L.clt_ne_scalar(p, v, o), [torch.complex(
                          torch.tensor([0.5, 0.5, 1.0]), torch.tensor([0.0, 1.0, 0.0])).to(dt)])
        for nm_ in ("isnan", "isinf", "isfinite"):
            fft_check("%s %s" % (nm_, dt), getattr(torch, nm_),
                      lambda p, o, nm_=nm_: getattr(L, "clt_" + nm_)(p, o), [xs])
        fft_check("lt refuses %s" % dt, torch.lt, lambda p, q, o: L.clt_lt(p, q, o), [x, y2])
        for k in (1, 2, 3, -1):
            fft_check("rot90 %d %s" % (k, dt), lambda t, k=k: torch.rot90(t, k, (0, 2)),
                      lambda p, o, k=k: L.clt_rot90(p, k, 0, 2, o), [x])
        fft_check("rot90 of a transposed view %s" % dt, lambda t: torch.rot90(t, 1, (-1, -2)),
                  lambda p, o: L.clt_rot90(p, 1, -1, -2, o), [In(x, ("T",))])
        fft_check("rot90 same dims %s" % dt, lambda t: torch.rot90(t, 1, (1, 1)),
                  lambda p, o: L.clt_rot90(p, 1, 1, 1, o), [x])
        # square, reciprocal, sgn and the vector norms (of |x|)
        fft_check("square %s" % dt, torch.square, lambda p, o: L.clt_square(p, o),
                  [In(x, ("T",))], tol)
        fft_check("reciprocal %s" % dt, torch.reciprocal, lambda p, o: L.clt_reciprocal(p, o),
                  [x], tol)
        fft_check("sgn %s" % dt, torch.sgn, lambda p, o: L.clt_sgn(p, o), [xz], tol)
        for ordv in (2.0, 1.0, 3.0, float("inf"), 0.0, -1.0):
            fft_check("vector_norm %g %s" % (ordv, dt),
                      lambda t, ordv=ordv: torch.linalg.vector_norm(t, ordv),
                      lambda p, o, ordv=ordv: L.clt_vector_norm(p, ordv, o), [x], tol)
            fft_check("vector_norm_dim %g %s" % (ordv, dt),
                      lambda t, ordv=ordv: torch.linalg.vector_norm(t, ordv, 1, True),
                      lambda p, o, ordv=ordv: L.clt_vector_norm_dim(p, ordv, 1, 1, o), [x], tol)
        fft_check("linalg_vector_norm dims %s" % dt,
                  lambda t: torch.linalg.vector_norm(t, 2, (0, 2)),
                  lambda p, o: L.clt_linalg_vector_norm(p, 2.0, (C.c_int * 2)(0, 2), 2, 0, o),
                  [In(x, ("T",))], tol)
        # index ops through the real views
        fft_check("masked_select %s" % dt, torch.masked_select,
                  lambda p, m, o: L.clt_masked_select(p, m, o), [In(x, ("T",)), cond.transpose(-1, -2)])
        fft_check("masked_select broadcast %s" % dt, torch.masked_select,
                  lambda p, m, o: L.clt_masked_select(p, m, o), [x[0, 0], cond[:, :2]])
        fft_check("nonzero %s" % dt, torch.nonzero, lambda p, o: L.clt_nonzero(p, o),
                  [xz.masked_fill(cond, 0).to(dt)])
        ix1 = torch.tensor([3, 0, 3])
        src = cdata((3, 3, 5), dt)
        fft_check("index_add %s" % dt, lambda t, s_: t.index_add(1, ix1, s_, alpha=-0.5),
                  lambda p, q, o: L.clt_index_add(p, 1, upload(ix1), q, -0.5, o), [x, src], tol)
        fft_check("index_copy %s" % dt, lambda t, s_: t.index_copy(1, torch.tensor([3, 0, 1]), s_),
                  lambda p, q, o: L.clt_index_copy(p, 1, upload(torch.tensor([3, 0, 1])), q, o),
                  [x, src])
        six = torch.tensor([[[1, 0, 2, 1, 0], [0, 2, 2, 1, 1]]])
        fft_check("scatter %s" % dt, lambda t, s_: t.scatter(1, six, s_),
                  lambda p, q, o: L.clt_scatter(p, 1, upload(six), q, o), [x, src])
        fft_check("scatter_add %s" % dt, lambda t, s_: t.scatter_add(1, six, s_),
                  lambda p, q, o: L.clt_scatter_add(p, 1, upload(six), q, o), [x, src], tol)
        fft_check("index_add of another dtype %s" % dt,
                  lambda t, s_: t.index_add(1, ix1, s_.real.clone()),
                  lambda p, q, o: L.clt_index_add(p, 1, upload(ix1), q, 1.0, o),
                  [x, src.real.clone()])


def _sel(p, k):
    """p[k] through clt_narrow and clt_squeeze (the handles leak into the
    section's run, a few small tensors)."""
    q, r = P(), P()
    assert L.clt_narrow(p, 0, k, 1, C.byref(q)) == 0
    assert L.clt_squeeze(q, 0, C.byref(r)) == 0
    L.clt_tensor_free(q)
    return r


# ---- float16 ------------------------------------------------------------------


class _CEOpts(C.Structure):
    _fields_ = [("reduction", C.c_int), ("ignore_index", C.c_int64),
                ("label_smoothing", C.c_double), ("weight", P)]


def _h_ref(fn):
    """torch's float16 result on the CPU where torch 1.13 has a Half kernel;
    where it has none ("not implemented for 'Half'"), torch computing in
    float32 from the same half inputs, its float32 results rounded to half.
    The note of which one was used goes into HALF_REFS."""
    def run(*ts):
        try:
            r = fn(*ts)
            HALF_REFS["native"] += 1
            return r
        except RuntimeError as e:
            if "Half" not in str(e):
                raise
        HALF_REFS["float32"] += 1
        r = fn(*[t.float() if t.dtype == torch.float16 else t for t in ts])
        return r.half() if r.dtype == torch.float32 else r
    return run


HALF_REFS = {"native": 0, "float32": 0}


def _hdata(shape, lo=-4, hi=4, special=False):
    t = (torch.rand(shape, generator=G) * (hi - lo) + lo).half()
    if special and t.numel() >= 8:
        f = t.view(-1)
        f[:8] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0,
                              6e-8, -3e-5, 65504.0]).half()
    return t


def half():
    """float16 against torch 1.13 on the CPU (see _h_ref: torch's Half
    kernel where it has one, else torch in float32 rounded to half):
    elementwise ops, comparisons, reductions (which accumulate in float32:
    sums of 4096 ones, means and norms whose half intermediates would
    overflow), matmul, bmm, addmm, conv1d/2d, softmax, activations, norms,
    losses, casts to and from every dtype (round to nearest even,
    subnormals, overflow to inf) and indexing."""
    h = torch.float16
    F = torch.nn.functional
    proto("clt_bmm", [P, P, PP])
    proto("clt_addmm", [P, P, P, C.c_double, C.c_double, PP])
    proto("clt_conv2d", [P, P, P, P, PP])
    proto("clt_mse_loss", [P, P, C.c_int, PP])
    proto("clt_l1_loss", [P, P, C.c_int, PP])
    proto("clt_cross_entropy", [P, P, C.POINTER(_CEOpts), PP])
    proto("clt_nll_loss", [P, P, C.POINTER(_CEOpts), PP])
    proto("clt_index_select", [P, C.c_int, P, PP])
    proto("clt_gather", [P, C.c_int, P, PP])
    proto("clt_scatter", [P, C.c_int, P, P, PP])
    proto("clt_scatter_add", [P, C.c_int, P, P, PP])
    proto("clt_masked_fill", [P, P, C.c_double, PP])

    def hc(name, tfn, cfn, inputs, tol="ew", f32=False, **kw):
        """f32: the reference is torch in float32 rounded to half even where
        torch's CPU has a Half kernel: torch on GPUs, whose reductions and
        products accumulate in float32 (the CPU's mean of half sums in half,
        64 x 3000 overflowing)."""
        ref = _h_ref(tfn)
        if f32:
            def ref(*ts):
                HALF_REFS["float32"] += 1
                r = tfn(*[t.float() if t.dtype == h else t for t in ts])
                return r.half() if r.dtype == torch.float32 else r
        check("half " + name, ref, cfn, inputs, tol=tol, **kw)

    sp = _hdata((7, 9), special=True)
    a, b = _hdata((7, 9)), _hdata((7, 9), lo=0.5, hi=3)
    # unary
    for n in UN:
        if n == "logical_not":
            continue
        tf = getattr(torch, n, None) or getattr(F, n)
        hc(n, tf, getattr(L, "clt_" + n), [sp], signed_zero=n != "gelu")
        hc(n + " plain", tf, getattr(L, "clt_" + n), [a])
    hc("softplus", lambda x: F.softplus(x, 1.0, 20.0),
       lambda p, o: L.clt_softplus(p, 1.0, 20.0, o), [sp])
    hc("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda p, o: L.clt_leaky_relu(p, 0.1, o), [sp])
    hc("elu", lambda x: F.elu(x, 1.0), lambda p, o: L.clt_elu(p, 1.0, o), [sp])
    hc("logical_not", torch.logical_not, L.clt_logical_not, [sp], tol="exact")
    # binary: half with half, with float32 (float32 out), with a scalar, overflow to inf
    big = torch.tensor([60000.0, -60000.0, 40000.0, 1e-4, 300.0, 2.0]).half()
    for n in ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]:
        tf = getattr(torch, n)
        hc(n, tf, getattr(L, "clt_" + n), [a, b])
        hc(n + " special", tf, getattr(L, "clt_" + n), [sp, sp.flip(0).contiguous()])
        hc(n + " overflow", tf, getattr(L, "clt_" + n), [big, big.flip(0).contiguous()])
        hc(n + " with float32", tf, getattr(L, "clt_" + n), [a, data((7, 9), torch.float32)],
           tol="red")
        hc(n + " broadcast", tf, getattr(L, "clt_" + n), [a, b[:1].contiguous()])
    # a scalar is rounded to half first, as torch's CPU does: x * 1e5 is
    # +-inf, x / 1e5 +-0, and x ** 1e5 refused (section half_scalar); torch
    # itself is the reference, its refusal included
    for n in ["add", "sub", "mul", "div", "pow"]:
        for sc in (2.5, -3, 1e5):
            check("half %s_scalar %r" % (n, sc), lambda x, sc=sc, n=n: getattr(torch, n)(x, sc),
                  lambda p, o, sc=sc, n=n: getattr(L, "clt_%s_scalar" % n)(p, float(sc), o), [a])
    for n in ["eq", "ne", "lt", "le", "gt", "ge"]:
        hc(n, getattr(torch, n), getattr(L, "clt_" + n), [sp, sp.flip(1).contiguous()],
           tol="exact")
        hc(n + "_scalar", lambda x, n=n: getattr(torch, n)(x, 0.5),
           lambda p, o, n=n: getattr(L, "clt_%s_scalar" % n)(p, 0.5, o), [a], tol="exact")
    lo_, hi_ = C.c_double(-1.0), C.c_double(2.0)
    hc("clamp", lambda x: torch.clamp(x, -1.0, 2.0),
       lambda p, o: L.clt_clamp(p, C.byref(lo_), C.byref(hi_), o), [sp])
    def hr(*args, **kw):
        hc(*args, f32=True, **kw)

    # reductions: float32 accumulators (half ones would stop at 2048, overflow at 65504)
    ones = torch.ones(4096).half()
    huge = torch.full((64, 100), 3000.0).half()
    for n in ["sum", "mean", "prod", "max", "min", "argmax", "argmin"]:
        tf, cf = getattr(torch, n), getattr(L, "clt_" + n)
        hr(n, tf, cf, [a if n != "prod" else b[:2].contiguous()],
           tol="exact" if n.startswith("arg") else "ew")
        hr(n + " dim", lambda x, tf=tf: tf(x, 1) if n in ("sum", "mean", "prod")
           else tf(x, 1)[0] if n in ("max", "min") else tf(x, 1),
           (lambda p, o, cf=n: getattr(L, "clt_%s_dim" % cf)(p, 1, 0, o, None))
           if n in ("max", "min") else
           (lambda p, o, cf=n: getattr(L, "clt_%s_dim" % cf)(p, 1, 0, o)), [a],
           tol="exact" if n.startswith("arg") else "ew")
        hr(n + " nan", tf, cf, [sp], tol="exact" if n.startswith("arg") else "ew")
    hr("sum of 4096 ones", torch.sum, L.clt_sum, [ones])
    hr("mean of 3000s", torch.mean, L.clt_mean, [huge])
    hr("mean dim of 3000s", lambda x: torch.mean(x, 0),
       lambda p, o: L.clt_mean_dim(p, 0, 0, o), [huge])
    hr("sum dim of 4096 ones", lambda x: torch.sum(x.view(64, 64), 1),
       lambda p, o: L.clt_sum_dim(p, 1, 0, o), [ones.view(64, 64)])
    for n in ["var", "std"]:
        tf = getattr(torch, n)
        hr(n, tf, lambda p, o, n=n: getattr(L, "clt_" + n)(p, 1.0, o), [a])
        hr(n + " dim", lambda x, tf=tf: tf(x, 1), lambda p, o, n=n:
           getattr(L, "clt_%s_dim" % n)(p, 1, 1.0, 0, o), [a])
        hr(n + " of 3000s+", tf, lambda p, o, n=n: getattr(L, "clt_" + n)(p, 1.0, o),
           [huge + _hdata((64, 100))])
    for ordv in (2.0, 1.0, float("inf")):
        hr("norm %r" % ordv, lambda x, o_=ordv: torch.linalg.vector_norm(x, o_),
           lambda p, o, o_=ordv: L.clt_vector_norm(p, o_, o), [a])
        hr("norm %r of 3000s" % ordv, lambda x, o_=ordv: torch.linalg.vector_norm(x, o_),
           lambda p, o, o_=ordv: L.clt_vector_norm(p, o_, o), [huge])
        hr("norm %r of values to 400" % ordv, lambda x, o_=ordv: torch.linalg.vector_norm(x, o_),
           lambda p, o, o_=ordv: L.clt_vector_norm(p, o_, o), [a * 100])
        hr("norm dim %r" % ordv, lambda x, o_=ordv: torch.linalg.vector_norm(x, o_, 1),
           lambda p, o, o_=ordv: L.clt_vector_norm_dim(p, o_, 1, 0, o), [a])
    hr("logsumexp", lambda x: torch.logsumexp(x, 1), lambda p, o: L.clt_logsumexp(p, 1, 0, o),
       [a * 1000])
    hr("logsumexp all", lambda x: torch.logsumexp(x, (0, 1)), L.clt_logsumexp_all, [a])
    hr("cumsum", lambda x: torch.cumsum(x, 1), lambda p, o: L.clt_cumsum(p, 1, o), [a])
    hr("cumsum of ones", lambda x: torch.cumsum(x, 0), lambda p, o: L.clt_cumsum(p, 0, o),
       [ones])
    # products
    m1, m2 = _hdata((33, 70), -1, 1), _hdata((70, 19), -1, 1)
    hr("matmul", torch.matmul, L.clt_matmul, [m1, m2])
    hr("matmul K=4096 ones", torch.matmul, L.clt_matmul,
       [torch.ones(3, 4096).half(), torch.ones(4096, 2).half()])
    hr("matmul 300s", torch.matmul, L.clt_matmul,
       [torch.full((2, 64), 300.0).half(), torch.full((64, 3), 10.0).half()])
    hr("matmul vec", torch.matmul, L.clt_matmul, [m1, _hdata((70,))])
    hr("bmm", torch.bmm, L.clt_bmm, [_hdata((3, 5, 40), -1, 1), _hdata((3, 40, 6), -1, 1)])
    hr("addmm", lambda i, x, y: torch.addmm(i, x, y, beta=0.5, alpha=2.0),
       lambda i, x, y, o: L.clt_addmm(i, x, y, 0.5, 2.0, o), [_hdata((19,)), m1, m2])
    hr("linear", lambda x, w, bb: F.linear(x, w, bb), _linear_c,
       [m1, _hdata((19, 70), -1, 1), _hdata((19,))])
    hr("conv1d", lambda x, w, bb: F.conv1d(x, w, bb, 1, 1),
       lambda x, w, bb, o: L.clt_conv1d(x, w, bb, _i64s(1, 1, 1, 1), o),
       [_hdata((2, 4, 11), -1, 1), _hdata((6, 4, 3), -1, 1), _hdata((6,))])
    hr("conv2d", lambda x, w, bb: F.conv2d(x, w, bb, 1, 1),
       lambda x, w, bb, o: L.clt_conv2d(x, w, bb, _i64s(1, 1, 1, 1, 1, 1, 1), o),
       [_hdata((2, 3, 7, 8), -1, 1), _hdata((5, 3, 3, 3), -1, 1), _hdata((5,))])
    # softmax and norms
    for d in (0, 1):
        hc("softmax %d" % d, lambda x, d=d: torch.softmax(x, d),
           lambda p, o, d=d: L.clt_softmax(p, d, o), [a * 5000])
        hc("log_softmax %d" % d, lambda x, d=d: torch.log_softmax(x, d),
           lambda p, o, d=d: L.clt_log_softmax(p, d, o), [a * 5000])
    hc("softmax wide", lambda x: torch.softmax(x, 1), lambda p, o: L.clt_softmax(p, 1, o),
       [_hdata((4, 3000))])
    ln = (9,)
    hr("layer_norm", lambda x, w, bb: F.layer_norm(x, ln, w, bb),
       lambda p, w, bb, o: L.clt_layer_norm(p, 1, shape_arr(ln), w, bb, 1e-5, o),
       [a * 3000, _hdata(ln), _hdata(ln)])
    hr("layer_norm plain", lambda x: F.layer_norm(x, ln),
       lambda p, o: L.clt_layer_norm(p, 1, shape_arr(ln), None, None, 1e-5, o), [a])
    hr("group_norm", lambda x, w, bb: F.group_norm(x, 2, w, bb),
       lambda p, w, bb, o: L.clt_group_norm(p, 2, w, bb, 1e-5, o),
       [_hdata((3, 4, 5)) * 3000, _hdata((4,)), _hdata((4,))])
    proto("clt_batch_norm2d_layer", [P, C.c_int64, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_module_to_dtype", [P, C.c_int])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)

    def bn2d(p, o):
        m = P()
        st = L.clt_batch_norm2d_layer(DEV, 3, 1e-5, 0.1, 1, 1, C.byref(m))
        if st == 0:
            st = L.clt_module_to_dtype(m, F16) or L.clt_module_forward(m, p, o)
        L.clt_module_free(m)
        return st
    hr("BatchNorm2d training", lambda x: F.batch_norm(x, None, None, training=True), bn2d,
       [_hdata((4, 3, 5, 5)) * 300 + 1000])
    # losses
    for rn in ("mean", "sum", "none"):
        hr("mse " + rn, lambda x, y, rn=rn: F.mse_loss(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_mse_loss(p, q, RED[rn], o), [a * 100, b])
        hr("l1 " + rn, lambda x, y, rn=rn: F.l1_loss(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_l1_loss(p, q, RED[rn], o), [a, b])
        hr("smooth_l1 " + rn, lambda x, y, rn=rn: F.smooth_l1_loss(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_smooth_l1_loss(p, q, RED[rn], 1.0, o), [a, b])
        hr("huber " + rn, lambda x, y, rn=rn: F.huber_loss(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_huber_loss(p, q, RED[rn], 1.0, o), [a, b])
        pr = torch.rand((7, 9), generator=G).half() * 0.98 + 0.01
        hr("bce " + rn, lambda x, y, rn=rn: F.binary_cross_entropy(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_binary_cross_entropy(p, q, None, RED[rn], o),
           [pr, pr.flip(0).contiguous()])
        tgt = torch.randint(0, 9, (7,), generator=G)
        ce = _CEOpts(RED[rn], -100, 0.0, None)
        hr("cross_entropy " + rn, lambda x, t, rn=rn: F.cross_entropy(x, t, reduction=rn),
           lambda p, t, o, ce=ce: L.clt_cross_entropy(p, t, C.byref(ce), o), [a * 1000, tgt])
        hr("cross_entropy probs " + rn, lambda x, t, rn=rn: F.cross_entropy(x, t, reduction=rn),
           lambda p, t, o, ce=ce: L.clt_cross_entropy(p, t, C.byref(ce), o),
           [a, torch.softmax(b.float(), 1).half()])
        hr("nll " + rn, lambda x, t, rn=rn: F.nll_loss(x, t, reduction=rn),
           lambda p, t, o, ce=ce: L.clt_nll_loss(p, t, C.byref(ce), o), [a, tgt])
    # casts to and from every dtype, round to nearest even, subnormals, overflow
    ties = torch.tensor([1 + 2 ** -11, 1 + 3 * 2 ** -11, 65519.0, 65520.0, -65520.0, 2 ** -25,
                         3 * 2 ** -26, 2 ** -24, 1e-8, -2 ** -25, 5 * 2 ** -26, 2049.0, 2051.0,
                         float("nan"), float("inf"), -0.0, 1e30, 0.1, 2 ** -14 - 2 ** -25])
    # float64 goes through float32 as torch's c10::Half(float(x)): rounded twice
    hc("cast float64 to half, twice rounded", lambda x: x.half(),
       lambda p, o: L.clt_to_dtype(p, F16, o),
       [torch.tensor([1 + 2 ** -11 + 2 ** -40, 1 + 2 ** -11 - 2 ** -40, 65519.99,
                      2 ** -25 + 2 ** -50], dtype=torch.float64)], tol="exact")
    for dt in (torch.float32, torch.float64):
        hc("cast %s to half" % dn(dt), lambda x: x.half(), lambda p, o: L.clt_to_dtype(p, F16, o),
           [ties.to(dt)], tol="exact")
    for dt in (torch.int32, torch.int64, torch.uint8, torch.bool):
        src = data((5, 6), dt) if dt != torch.int32 else torch.tensor(
            [0, 1, -1, 2049, 2051, 65504, 65519, 65520, 70000, -70000], dtype=dt)
        if dt == torch.int64:
            src = torch.tensor([2 ** 40, -3, 4097, 12345678], dtype=dt)
        hc("cast %s to half" % dn(dt), lambda x: x.half(), lambda p, o: L.clt_to_dtype(p, F16, o),
           [src], tol="exact")
    fin = torch.tensor([0.0, -0.0, 1.5, -2.5, 3.7, -3.7, 100.0, 255.0, 65504.0, 1e-7,
                        -1e-7]).half()
    for dt in (torch.float32, torch.float64, torch.int32, torch.int64, torch.bool):
        hc("cast half to %s" % dn(dt), lambda x, dt=dt: x.to(dt),
           lambda p, o, dt=dt: L.clt_to_dtype(p, T2C[dt], o), [fin if dt != torch.float32 and
                                                              dt != torch.float64 else ties.half()],
           tol="exact")
    hc("cast half to uint8", lambda x: x.to(torch.uint8),
       lambda p, o: L.clt_to_dtype(p, U8, o), [fin.abs()], tol="exact")
    hc("cast half to half", lambda x: x.clone(), lambda p, o: L.clt_to_dtype(p, F16, o),
       [ties.half()], tol="exact")
    # indexing, cat, where
    idx = torch.tensor([3, 0, 3, 6])
    gi = torch.randint(0, 7, (4, 9), generator=G)
    hc("index_select", lambda x, i: torch.index_select(x, 0, i),
       lambda p, i, o: L.clt_index_select(p, 0, i, o), [sp, idx], tol="exact")
    hc("gather", lambda x, i: torch.gather(x, 0, i), lambda p, i, o: L.clt_gather(p, 0, i, o),
       [sp, gi], tol="exact")
    si = torch.stack([torch.randperm(7, generator=G)[:4] for _ in range(9)], 1)
    hc("scatter", lambda x, i, s: torch.scatter(x, 0, i, s),
       lambda p, i, s, o: L.clt_scatter(p, 0, i, s, o), [a, si, b[:4].contiguous()], tol="exact")
    hc("scatter_add", lambda x, i, s: torch.scatter_add(x, 0, i, s),
       lambda p, i, s, o: L.clt_scatter_add(p, 0, i, s, o), [a, gi, b[:4].contiguous()])
    hc("scatter_add to 2048", lambda x, i, s: torch.scatter_add(x, 0, i, s),
       lambda p, i, s, o: L.clt_scatter_add(p, 0, i, s, o),
       [torch.full((1,), 2048.0).half(), torch.zeros(3, dtype=torch.int64),
        torch.ones(3).half()])
    mask = data((7, 9), torch.bool)
    hc("masked_fill", lambda x, m: x.masked_fill(m, 1e5 if False else 0.1),
       lambda p, m, o: L.clt_masked_fill(p, m, 0.1, o), [a, mask], tol="exact")
    hc("where", torch.where, L.clt_where, [mask, sp, a], tol="exact")
    hc("where with float32", torch.where, L.clt_where,
       [mask, a, data((7, 9), torch.float32)], tol="exact")
    for others in ([b], [data((3, 9), torch.float32)], [data((2, 9), torch.int32)]):
        ins = [a] + others
        hc("cat with %s" % dn(others[0].dtype), lambda *ts: torch.cat(ts, 0),
           lambda *r: L.clt_cat((P * (len(r) - 1))(*r[:-1]), len(r) - 1, 0, r[-1]), ins,
           tol="exact")
    print("half: %d references by torch's Half kernels, %d by torch in float32 rounded to half"
          % (HALF_REFS["native"], HALF_REFS["float32"]))


def _linear_c(x, w, bb, o):
    """F.linear through the library: x @ w^T + b (clt_addmm on w's transpose)."""
    wt = P()
    st = L.clt_transpose(w, 0, 1, C.byref(wt))
    if st:
        return st
    st = L.clt_addmm(bb, x, wt, 1.0, 1.0, o)
    L.clt_tensor_free(wt)
    return st
# ---- fractional max pooling ----------------------------------------------------------------

proto("clt_fractional_max_pool2d", [P, I64P, I64P, C.POINTER(C.c_double), P, P, PP, PP])
proto("clt_fractional_max_pool3d", [P, I64P, I64P, C.POINTER(C.c_double), P, P, PP, PP])


# ---- bfloat16 ----------------------------------------------------------------


def _b_ref(fn, f32=False):
    """torch's bfloat16 result on the CPU (torch 1.13 has BFloat16 kernels
    for nearly every op here, computing in float and rounding once); where it
    has none, or with f32, torch in float32 from the same bfloat16 inputs,
    rounded to bfloat16."""
    def widened(*ts):
        r = fn(*[t.float() if t.dtype == torch.bfloat16 else t for t in ts])
        return r.bfloat16() if r.dtype == torch.float32 else r

    def run(*ts):
        if not f32:
            try:
                return fn(*ts)
            except RuntimeError as e:
                if "BFloat16" not in str(e):
                    raise
        return widened(*ts)
    return run


def _bdata(shape, lo=-4, hi=4, special=False):
    t = (torch.rand(shape, generator=G) * (hi - lo) + lo).bfloat16()
    if special and t.numel() >= 8:
        f = t.view(-1)
        f[:8] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0,
                              1e-39, -3e38, 3.3895313892515355e38]).bfloat16()
    return t


def bfloat16():
    """bfloat16 against torch 1.13 on the CPU (see _b_ref): elementwise ops
    and comparisons, promotion with the other dtypes, reductions (float32
    accumulators), matmul, bmm, addmm, linear, conv, softmax, norms, losses,
    casts to and from every dtype (round to nearest even, ties, subnormals,
    overflow to inf, NaN), full and arange, indexing."""
    b16 = torch.bfloat16
    F = torch.nn.functional
    proto("clt_bmm", [P, P, PP])
    proto("clt_addmm", [P, P, P, C.c_double, C.c_double, PP])
    proto("clt_mse_loss", [P, P, C.c_int, PP])
    proto("clt_l1_loss", [P, P, C.c_int, PP])
    proto("clt_cross_entropy", [P, P, C.POINTER(_CEOpts), PP])
    proto("clt_nll_loss", [P, P, C.POINTER(_CEOpts), PP])
    proto("clt_index_select", [P, C.c_int, P, PP])
    proto("clt_gather", [P, C.c_int, P, PP])
    proto("clt_masked_fill", [P, P, C.c_double, PP])

    def bc(name, tfn, cfn, inputs, tol="ew", f32=False, **kw):
        check("bfloat16 " + name, _b_ref(tfn, f32), cfn, inputs, tol=tol, **kw)

    def br(*args, **kw):
        bc(*args, f32=True, **kw)

    sp = _bdata((7, 9), special=True)
    a, b = _bdata((7, 9)), _bdata((7, 9), lo=0.5, hi=3)
    for n in UN:
        if n == "logical_not":
            continue
        tf = getattr(torch, n, None) or getattr(F, n)
        if n == "log1p":  # torch's is inf above half the largest value (ops.h)
            tf = lambda x: log1p_exact(x.float()).bfloat16()
        bc(n, tf, getattr(L, "clt_" + n), [sp], signed_zero=n != "gelu")
        bc(n + " plain", tf, getattr(L, "clt_" + n), [a])
    bc("softplus", lambda x: F.softplus(x, 1.0, 20.0),
       lambda p, o: L.clt_softplus(p, 1.0, 20.0, o), [sp])
    bc("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda p, o: L.clt_leaky_relu(p, 0.1, o),
       [sp])
    bc("logical_not", torch.logical_not, L.clt_logical_not, [sp], tol="exact")
    big = torch.tensor([3e38, -3e38, 2e38, 1e-30, 300.0, 2.0]).bfloat16()
    for n in ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]:
        tf = getattr(torch, n)
        bc(n, tf, getattr(L, "clt_" + n), [a, b])
        bc(n + " special", tf, getattr(L, "clt_" + n), [sp, sp.flip(0).contiguous()])
        bc(n + " overflow", tf, getattr(L, "clt_" + n), [big, big.flip(0).contiguous()])
        bc(n + " broadcast", tf, getattr(L, "clt_" + n), [a, b[:1].contiguous()])
        # promotion: float32 wins, float16 with bfloat16 is float32, integers give bfloat16
        bc(n + " with float32", tf, getattr(L, "clt_" + n), [a, data((7, 9), torch.float32)],
           tol="red")
        bc(n + " with float16", tf, getattr(L, "clt_" + n), [a, _hdata((7, 9), 0.5, 3)],
           tol="red")
        bc(n + " with int32", tf, getattr(L, "clt_" + n), [b, data((7, 9), torch.int32, lo=1)])
        bc(n + " with bool", tf, getattr(L, "clt_" + n), [b, data((7, 9), torch.bool)])
    for n in ["add", "sub", "mul", "div", "pow"]:
        for sc in (2.5, -3, 1e5):
            bc("%s_scalar %r" % (n, sc), lambda x, sc=sc, n=n: getattr(torch, n)(x, sc),
               lambda p, o, sc=sc, n=n: getattr(L, "clt_%s_scalar" % n)(p, float(sc), o), [a],
               f32=True)
    for n in ["eq", "ne", "lt", "le", "gt", "ge"]:
        bc(n, getattr(torch, n), getattr(L, "clt_" + n), [sp, sp.flip(1).contiguous()],
           tol="exact")
        bc(n + "_scalar", lambda x, n=n: getattr(torch, n)(x, 0.5),
           lambda p, o, n=n: getattr(L, "clt_%s_scalar" % n)(p, 0.5, o), [a], tol="exact")
    lo_, hi_ = C.c_double(-1.0), C.c_double(2.0)
    bc("clamp", lambda x: torch.clamp(x, -1.0, 2.0),
       lambda p, o: L.clt_clamp(p, C.byref(lo_), C.byref(hi_), o), [sp])
    # reductions: float32 accumulators (bfloat16 ones would stop at 256)
    ones = torch.ones(4096).bfloat16()
    for n in ["sum", "mean", "prod", "max", "min", "argmax", "argmin"]:
        tf, cf = getattr(torch, n), getattr(L, "clt_" + n)
        ex = "exact" if n.startswith("arg") else "ew"
        br(n, tf, cf, [a if n != "prod" else b[:2].contiguous()], tol=ex)
        br(n + " dim", lambda x, tf=tf, n=n: tf(x, 1) if n in ("sum", "mean", "prod")
           else tf(x, 1)[0] if n in ("max", "min") else tf(x, 1),
           (lambda p, o, cf=n: getattr(L, "clt_%s_dim" % cf)(p, 1, 0, o, None))
           if n in ("max", "min") else
           (lambda p, o, cf=n: getattr(L, "clt_%s_dim" % cf)(p, 1, 0, o)), [a], tol=ex)
        br(n + " nan", tf, cf, [sp], tol=ex)
    br("sum of 4096 ones", torch.sum, L.clt_sum, [ones])
    br("sum dim of 4096 ones", lambda x: torch.sum(x.view(64, 64), 1),
       lambda p, o: L.clt_sum_dim(p, 1, 0, o), [ones.view(64, 64)])
    br("mean of 1e30s", torch.mean, L.clt_mean, [torch.full((64, 100), 1e30).bfloat16()])
    for n in ["var", "std"]:
        tf = getattr(torch, n)
        br(n, tf, lambda p, o, n=n: getattr(L, "clt_" + n)(p, 1.0, o), [a])
        br(n + " dim", lambda x, tf=tf: tf(x, 1), lambda p, o, n=n:
           getattr(L, "clt_%s_dim" % n)(p, 1, 1.0, 0, o), [a])
    for ordv in (2.0, 1.0, float("inf")):
        br("norm %r" % ordv, lambda x, o_=ordv: torch.linalg.vector_norm(x, o_),
           lambda p, o, o_=ordv: L.clt_vector_norm(p, o_, o), [a])
        br("norm dim %r" % ordv, lambda x, o_=ordv: torch.linalg.vector_norm(x, o_, 1),
           lambda p, o, o_=ordv: L.clt_vector_norm_dim(p, o_, 1, 0, o), [a])
    br("logsumexp", lambda x: torch.logsumexp(x, 1), lambda p, o: L.clt_logsumexp(p, 1, 0, o),
       [a * 1000])
    br("cumsum", lambda x: torch.cumsum(x, 1), lambda p, o: L.clt_cumsum(p, 1, o), [a])
    br("cumsum of ones", lambda x: torch.cumsum(x, 0), lambda p, o: L.clt_cumsum(p, 0, o),
       [ones[:300].contiguous()], tol="h2")
    # products: float32 accumulation
    m1, m2 = _bdata((33, 70), -1, 1), _bdata((70, 19), -1, 1)
    br("matmul", torch.matmul, L.clt_matmul, [m1, m2], tol="h2")
    br("matmul K=4096 ones", torch.matmul, L.clt_matmul,
       [torch.ones(3, 4096).bfloat16(), torch.ones(4096, 2).bfloat16()])
    br("matmul vec", torch.matmul, L.clt_matmul, [m1, _bdata((70,))], tol="h2")
    br("matmul transposed", torch.matmul, L.clt_matmul, [In(m1, ("T",)), m2], tol="h2")
    br("bmm", torch.bmm, L.clt_bmm, [_bdata((3, 5, 40), -1, 1), _bdata((3, 40, 6), -1, 1)],
       tol="h2")
    br("addmm", lambda i, x, y: torch.addmm(i, x, y, beta=0.5, alpha=2.0),
       lambda i, x, y, o: L.clt_addmm(i, x, y, 0.5, 2.0, o), [_bdata((19,)), m1, m2], tol="h2")
    br("linear", lambda x, w, bb: F.linear(x, w, bb), _linear_c,
       [m1, _bdata((19, 70), -1, 1), _bdata((19,))], tol="h2")
    br("conv1d", lambda x, w, bb: F.conv1d(x, w, bb, 1, 1),
       lambda x, w, bb, o: L.clt_conv1d(x, w, bb, _i64s(1, 1, 1, 1), o),
       [_bdata((2, 4, 11), -1, 1), _bdata((6, 4, 3), -1, 1), _bdata((6,))], tol="h2")
    br("conv2d", lambda x, w, bb: F.conv2d(x, w, bb, 1, 1),
       lambda x, w, bb, o: L.clt_conv2d(x, w, bb, _i64s(1, 1, 1, 1, 1, 1, 1), o),
       [_bdata((2, 3, 7, 8), -1, 1), _bdata((5, 3, 3, 3), -1, 1), _bdata((5,))], tol="h2")
    # softmax and norms
    for d in (0, 1):
        br("softmax %d" % d, lambda x, d=d: torch.softmax(x, d),
           lambda p, o, d=d: L.clt_softmax(p, d, o), [a * 5000])
        br("log_softmax %d" % d, lambda x, d=d: torch.log_softmax(x, d),
           lambda p, o, d=d: L.clt_log_softmax(p, d, o), [a * 5000])
    br("softmax wide", lambda x: torch.softmax(x, 1), lambda p, o: L.clt_softmax(p, 1, o),
       [_bdata((4, 3000))])
    br("log_softmax wide", lambda x: torch.log_softmax(x, 1),
       lambda p, o: L.clt_log_softmax(p, 1, o), [_bdata((4, 3000))])
    ln = (9,)
    br("layer_norm", lambda x, w, bb: F.layer_norm(x, ln, w, bb),
       lambda p, w, bb, o: L.clt_layer_norm(p, 1, shape_arr(ln), w, bb, 1e-5, o),
       [a * 3000, _bdata(ln), _bdata(ln)], tol="h2")
    br("group_norm", lambda x, w, bb: F.group_norm(x, 2, w, bb),
       lambda p, w, bb, o: L.clt_group_norm(p, 2, w, bb, 1e-5, o),
       [_bdata((3, 4, 5)) * 3000, _bdata((4,)), _bdata((4,))], tol="h2")
    # losses
    for rn in ("mean", "sum", "none"):
        br("mse " + rn, lambda x, y, rn=rn: F.mse_loss(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_mse_loss(p, q, RED[rn], o), [a * 100, b])
        br("l1 " + rn, lambda x, y, rn=rn: F.l1_loss(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_l1_loss(p, q, RED[rn], o), [a, b])
        br("smooth_l1 " + rn, lambda x, y, rn=rn: F.smooth_l1_loss(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_smooth_l1_loss(p, q, RED[rn], 1.0, o), [a, b])
        pr = torch.rand((7, 9), generator=G).bfloat16() * 0.98 + 0.01
        br("bce " + rn, lambda x, y, rn=rn: F.binary_cross_entropy(x, y, reduction=rn),
           lambda p, q, o, rn=rn: L.clt_binary_cross_entropy(p, q, None, RED[rn], o),
           [pr, pr.flip(0).contiguous()])
        tgt = torch.randint(0, 9, (7,), generator=G)
        ce = _CEOpts(RED[rn], -100, 0.0, None)
        br("cross_entropy " + rn, lambda x, t, rn=rn: F.cross_entropy(x, t, reduction=rn),
           lambda p, t, o, ce=ce: L.clt_cross_entropy(p, t, C.byref(ce), o), [a * 1000, tgt])
        br("nll " + rn, lambda x, t, rn=rn: F.nll_loss(x, t, reduction=rn),
           lambda p, t, o, ce=ce: L.clt_nll_loss(p, t, C.byref(ce), o), [a, tgt])
    # casts to and from every dtype: round to nearest even (ties to the even
    # neighbour), float32 subnormals, the largest value and overflow to inf, NaN
    mx = 3.3895313892515355e38
    ties = torch.tensor([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, 257.0, 259.0,
                         mx, (2 - 2 ** -8) * 2.0 ** 127, -(2 - 2 ** -8) * 2.0 ** 127, 3.4e38,
                         2.0 ** -130, 2.0 ** -134, 3 * 2.0 ** -134, 2.0 ** -126 - 2.0 ** -140,
                         -2.0 ** -133, float("nan"), float("inf"), -float("inf"), -0.0, 0.1,
                         1e-40])
    for dt in (torch.float32, torch.float64, torch.float16):
        src = ties.to(dt) if dt != torch.float16 else _hdata((5, 7), special=True)
        bc("cast %s to bfloat16" % dn(dt), lambda x: x.bfloat16(),
           lambda p, o: L.clt_to_dtype(p, BF16, o), [src], tol="exact")
    bc("cast float64 to bfloat16, twice rounded", lambda x: x.bfloat16(),
       lambda p, o: L.clt_to_dtype(p, BF16, o),
       [torch.tensor([1 + 2 ** -8 + 2 ** -40, 1 + 2 ** -8 - 2 ** -40, 1 + 2 ** -8 + 2 ** -25],
                     dtype=torch.float64)], tol="exact")
    for dt in (torch.int32, torch.int64, torch.uint8, torch.bool):
        src = data((5, 6), dt) if dt != torch.int32 else torch.tensor(
            [0, 1, -1, 257, 259, 65504, 2 ** 24 + 1, -70000, 2 ** 31 - 1], dtype=dt)
        if dt == torch.int64:
            src = torch.tensor([2 ** 40, -3, 4097, 12345678, 2 ** 62], dtype=dt)
        bc("cast %s to bfloat16" % dn(dt), lambda x: x.bfloat16(),
           lambda p, o: L.clt_to_dtype(p, BF16, o), [src], tol="exact")
    fin = torch.tensor([0.0, -0.0, 1.5, -2.5, 3.75, -3.75, 100.0, 255.0, 65536.0, 1e-7,
                        -1e-7]).bfloat16()
    for dt in (torch.float32, torch.float64, torch.float16, torch.int32, torch.int64,
               torch.bool):
        bc("cast bfloat16 to %s" % dn(dt), lambda x, dt=dt: x.to(dt),
           lambda p, o, dt=dt: L.clt_to_dtype(p, T2C[dt], o),
           [ties.bfloat16() if dt in (torch.float32, torch.float64) else fin], tol="exact")
    bc("cast bfloat16 to uint8", lambda x: x.to(torch.uint8),
       lambda p, o: L.clt_to_dtype(p, U8, o), [fin.abs()], tol="exact")
    bc("cast bfloat16 to bfloat16", lambda x: x.clone(), lambda p, o: L.clt_to_dtype(p, BF16, o),
       [ties.bfloat16()], tol="exact")
    bc("contiguous of a transpose", lambda x: x.t().contiguous(),
       lambda p, o: _contig_t(p, o), [sp], tol="exact")
    for v in (1.0, 1 + 2 ** -8, 3e38, 3.4e38, -0.1, float("nan"), 1e-39):
        check("bfloat16 full %r" % v, lambda v=v: torch.full((5, 37), v, dtype=b16),
              lambda o, v=v: L.clt_full(DEV, BF16, 2, shape_arr((5, 37)), v, o), [],
              tol="exact")
    # values exact in bfloat16 (past them torch's vectorised arange drifts
    # from start + i * step in float rounded once, which cltensor gives)
    for st_, en, sp_ in ((0, 10, 1), (-3, 120, 1.5), (1, 2, 2 ** -7)):
        check("bfloat16 arange %r %r %r" % (st_, en, sp_),
              lambda st_=st_, en=en, sp_=sp_: torch.arange(st_, en, sp_, dtype=b16),
              lambda o, st_=st_, en=en, sp_=sp_: L.clt_arange(DEV, BF16, st_, en, sp_, o), [],
              tol="exact")
    idx = torch.tensor([3, 0, 3, 6])
    gi = torch.randint(0, 7, (4, 9), generator=G)
    bc("index_select", lambda x, i: torch.index_select(x, 0, i),
       lambda p, i, o: L.clt_index_select(p, 0, i, o), [sp, idx], tol="exact")
    bc("gather", lambda x, i: torch.gather(x, 0, i), lambda p, i, o: L.clt_gather(p, 0, i, o),
       [sp, gi], tol="exact")
    mask = data((7, 9), torch.bool)
    bc("masked_fill", lambda x, m: x.masked_fill(m, 0.1),
       lambda p, m, o: L.clt_masked_fill(p, m, 0.1, o), [a, mask], tol="exact")
    bc("where", torch.where, L.clt_where, [mask, sp, a], tol="exact")
    for others in ([b], [data((3, 9), torch.float32)], [data((2, 9), torch.int32)]):
        ins = [a] + others
        bc("cat with %s" % dn(others[0].dtype), lambda *ts: torch.cat(ts, 0),
           lambda *r: L.clt_cat((P * (len(r) - 1))(*r[:-1]), len(r) - 1, 0, r[-1]), ins,
           tol="exact")
    for x, y in ((BF16, F16), (BF16, F32), (BF16, F64), (BF16, I32), (BF16, I64), (BF16, U8),
                 (BF16, BOOL), (BF16, BF16)):
        want = T2C[torch.promote_types(C2T[x], C2T[y])]
        ok("bfloat16 promote %d %d" % (x, y), L.clt_promote_types(x, y) == want and
           L.clt_promote_types(y, x) == want, "got %d, want %d" % (L.clt_promote_types(x, y), want))


def _contig_t(p, o):
    q = P()
    st = L.clt_transpose(p, 0, 1, C.byref(q))
    if st == 0:
        st = L.clt_contiguous(q, o)
        L.clt_tensor_free(q)
    return st


def pool2():
    """fractional_max_pool2d/3d with _random_samples passed in: values and
    indices equal torch's (the intervals exactly), ratios, unbatched
    inputs, ties, and the refusals."""
    Fn = torch.nn.functional
    gen = torch.Generator().manual_seed(77)
    cases = [  # nd, input shape, kernel, output_size, output_ratio
        (2, (2, 3, 9, 11), (2, 3), (4, 5), None),
        (2, (3, 7, 6), (3, 2), (5, 5), None),
        (2, (1, 2, 25, 17), (2, 2), None, (0.5, 0.7)),
        (2, (2, 2, 8, 8), (1, 1), (8, 8), None),
        (2, (2, 2, 8, 8), (4, 4), (1, 1), None),
        (2, (2, 2, 8, 9), (3, 3), (2, 0), None),
        (2, (0, 2, 8, 9), (3, 3), (2, 4), None),
        (3, (2, 3, 7, 8, 9), (2, 3, 2), (3, 4, 5), None),
        (3, (3, 6, 7, 5), (2, 2, 2), (4, 3, 3), None),
        (3, (1, 2, 12, 10, 11), (2, 2, 3), None, (0.5, 0.6, 0.7)),
    ]
    for dt in FLOATS:
        for nd, sh, k, osz, ratio in cases:
            batch = sh[0] if len(sh) == nd + 2 else 1
            ch = sh[-nd - 1]
            u = torch.rand(batch, ch, nd, generator=gen).to(dt)
            tf = Fn.fractional_max_pool2d if nd == 2 else Fn.fractional_max_pool3d
            cf = L.clt_fractional_max_pool2d if nd == 2 else L.clt_fractional_max_pool3d
            cargs = (shape_arr(k), _opt(osz),
                     None if ratio is None else (C.c_double * nd)(*ratio))
            name = "fractional_max_pool%dd %s %s k%s o%s r%s" % (nd, dt, list(sh), k, osz, ratio)
            x = data(sh, dt)
            check(name,
                  lambda t, s, tf=tf, k=k, osz=osz, ratio=ratio: tf(
                      t, k, output_size=osz, output_ratio=ratio, _random_samples=s),
                  lambda p, s, r, cf=cf, a=cargs: cf(p, *a, s, None, r, None),
                  [x, u], tol="exact")
            check(name + " indices",
                  lambda t, s, tf=tf, k=k, osz=osz, ratio=ratio: tf(
                      t, k, output_size=osz, output_ratio=ratio, return_indices=True,
                      _random_samples=s)[1],
                  _second(lambda p, s, o, r, cf=cf, a=cargs: cf(p, *a, s, None, o, r)),
                  [x, u])
    # ties: a window of equal values names its first element, as torch's
    x = torch.zeros(2, 3, 9, 9)
    x[:, :, ::2, ::2] = 1
    u = torch.rand(2, 3, 2, generator=gen)
    check("fractional_max_pool2d ties indices",
          lambda t, s: Fn.fractional_max_pool2d(t, 3, output_size=4, return_indices=True,
                                                _random_samples=s)[1],
          _second(lambda p, s, o, r: L.clt_fractional_max_pool2d(
              p, _i64s(3, 3), _i64s(4, 4), None, s, None, o, r)),
          [x, u])
    # a transposed (non-contiguous) input
    check("fractional_max_pool2d transposed",
          lambda t, s: Fn.fractional_max_pool2d(t, 2, output_size=3, _random_samples=s),
          lambda p, s, r: L.clt_fractional_max_pool2d(p, _i64s(2, 2), _i64s(3, 3), None, s,
                                                      None, r, None),
          [In(data((2, 3, 6, 7), torch.float64), ("T",)),
           torch.rand(2, 3, 2, generator=gen, dtype=torch.float64)], tol="exact")
    # refusals: too large a window, wrong rank, integer input, samples' dtype
    bad = [((2, 3, 5, 6), torch.float32, (2, 2), (5, 5), torch.float32),
           ((5, 6), torch.float32, (2, 2), (2, 2), torch.float32),
           ((2, 3, 5, 6), torch.float32, (2, 2), (2, 2), torch.float64),
           ((2, 3, 5, 6), torch.int64, (2, 2), (2, 2), torch.float32)]
    for sh, dt, k, osz, sdt in bad:
        batch = sh[0] if len(sh) == 4 else 1
        u = torch.rand(batch, sh[-3] if len(sh) >= 3 else 1, 2, generator=gen).to(sdt)
        check("fractional_max_pool2d %s %s k%s o%s samples %s (refused)" % (list(sh), dt, k, osz, sdt),
              lambda t, s, k=k, osz=osz: Fn.fractional_max_pool2d(t, k, output_size=osz,
                                                                  _random_samples=s),
              lambda p, s, r, k=k, osz=osz: L.clt_fractional_max_pool2d(
                  p, shape_arr(k), shape_arr(osz), None, s, None, r, None),
              [data(sh, dt), u])
    u = torch.rand(2, 3, 3, generator=gen)
    check("fractional_max_pool3d window too large (refused)",
          lambda t, s: Fn.fractional_max_pool3d(t, 2, output_size=(4, 3, 3), _random_samples=s),
          lambda p, s, r: L.clt_fractional_max_pool3d(p, _i64s(2, 2, 2), _i64s(4, 3, 3), None,
                                                      s, None, r, None),
          [data((2, 3, 5, 6, 7), torch.float32), u])
    check("fractional_max_pool2d neither size nor ratio (refused)",
          lambda t, s: Fn.fractional_max_pool2d(t, 2, _random_samples=s),
          lambda p, s, r: L.clt_fractional_max_pool2d(p, _i64s(2, 2), None, None, s, None, r,
                                                      None),
          [data((2, 3, 5, 6), torch.float32), torch.rand(2, 3, 2, generator=gen)])
# ---- the rest of torch.special (cltensor/special.h) ----------------------

SPECIAL2_UN = {n: getattr(torch.special, n) for n in (
    "erfcx", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
    "airy_ai")}
SPECIAL2_POLY = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                 "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                 "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                 "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                 "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
# float64 to ~1e-12 relative; float32 to ~1e-5 (both with a small absolute
# floor for results that cancel to near 0)
SPECIAL2_TOL = ((2e-5, 2e-6), (1e-12, 1e-14))


def special2():
    global TOL
    # a closed form cos(n acos x) near one of its zeros: n ulps absolute
    TOL = dict(TOL, special2=SPECIAL2_TOL, igamma_asym=(SPECIAL2_TOL[0], (1e-8, 1e-14)),
               special2p=((1e-4, 1e-4), (1e-12, 1e-13)))
    f = torch.float32
    for n, tf in SPECIAL2_UN.items():
        cf = proto("clt_special_" + n, [P, PP])
        for dt in FLOATS:
            x = special_data(dt, "real")
            x = torch.cat([x, torch.tensor([4.9, 5.0, 5.1, 1.9, 2.0, 2.1, 2.08, 2.1, 8.32, 8.33,
                                            -2.08, -2.1, 26.0, -26.0, 49.0, 51.0, 1e8, 1e-5,
                                            -6.0, -6.2, 103.0, 104.0, 1e-30], dtype=dt)])
            check("%s %s edges" % (n, dn(dt)), tf, cf, [x], tol="special2")
        for dt in (torch.int32, torch.int64, torch.uint8, torch.bool):
            check("%s %s" % (n, dn(dt)), tf, cf, [data((3, 5), dt)], tol="special2")
        check("%s transposed" % n, tf, cf, [In(data((4, 3), f, special=True), ("T",))],
              tol="special2")
        check("%s empty" % n, tf, cf, [data((0, 3), f)], tol="special2")
    # the incomplete gamma functions and zeta: a grid of pairs, broadcast
    edges = [0.0, -0.0, 1e-30, 1e-8, 0.1, 0.5, 1.0, 1.1, 2.0, 2.5, 5.0, 10.0, 19.0, 21.0,
             50.0, 150.0, 250.0, 1e3, 1e4, -1.0, -2.5, math.inf, -math.inf, math.nan]
    for n, tf in (("gammainc", torch.special.gammainc), ("gammaincc", torch.special.gammaincc),
                  ("zeta", torch.special.zeta)):
        cf = proto("clt_special_" + n, [P, P, PP])
        for dt in FLOATS:
            e = torch.tensor(edges, dtype=dt)
            a, x = e.view(-1, 1), e.view(1, -1)
            if n == "zeta":
                a = torch.cat([a, torch.tensor([[1.5], [3.0], [4.0], [7.0]], dtype=dt)])
            ra = torch.rand(200, generator=G, dtype=torch.float64).to(dt) * 30
            rx = torch.rand(200, generator=G, dtype=torch.float64).to(dt) * 40
            if n == "zeta":
                ra = ra + 1
                # float32 at a negative q cancels terms that PyTorch sums
                # in double (special.h)
                if dt == f:
                    x = x[~(x < 0)].view(1, -1)
                check("%s %s grid" % (n, dn(dt)), tf, cf, [a, x], tol="special2")
                check("%s %s sweep" % (n, dn(dt)), tf, cf, [ra, rx], tol="special2")
                continue
            # PyTorch's asymptotic region, where its float pi costs ~1e-9
            # (special.h): there to 1e-8, elsewhere to special2's 1e-12
            a, x = torch.broadcast_tensors(a, x)
            for tag, (pa, px) in (("grid", (a.reshape(-1), x.reshape(-1))),
                                  ("sweep", (ra, rx))):
                r = (px - pa).abs() / pa
                asym = ((pa > 20) & (pa < 200) & (r < 0.3)) | ((pa > 200) & (r < 4.5 / pa.sqrt()))
                check("%s %s %s" % (n, dn(dt), tag), tf, cf, [pa[~asym], px[~asym]],
                      tol="special2")
                check("%s %s %s asymptotic" % (n, dn(dt), tag), tf, cf, [pa[asym], px[asym]],
                      tol="igamma_asym")
        check("%s float32,float64" % n, tf, cf,
              [data((4,), f, lo=1, hi=5), data((3, 1), torch.float64, lo=1, hi=5)],
              tol="special2")
        for dt in (torch.int32, torch.int64, torch.bool):
            check("%s %s" % (n, dn(dt)), tf, cf, [data((3,), dt, lo=1, hi=4),
                                                  data((3,), dt, lo=1, hi=4)], tol="special2")
        check("%s shapes" % n, tf, cf, [data((3,), f), data((2,), f)])
    # the polynomials: x a grid with the special points, n whole, fractional,
    # negative, large, NaN; n a tensor and a number
    xs = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.3, -0.7, 0.999, 1.5, -1.5, 2.0, 3.0, 10.0,
          -10.0, 1e-8, math.inf, -math.inf, math.nan]
    ns = [0.0, 1.0, 2.0, 3.0, 3.7, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0, 20.0, 33.0, -1.0,
          -2.5, 100.0, math.nan, math.inf]
    for n in SPECIAL2_POLY:
        tf = getattr(torch.special, n)
        cf = proto("clt_special_" + n, [P, P, PP])
        cs = proto("clt_special_" + n + "_scalar", [P, C.c_double, PP])
        for dt in FLOATS:
            x = torch.tensor(xs, dtype=dt).view(-1, 1)
            nn_ = torch.tensor(ns, dtype=dt).view(1, -1)
            if dt == f and n.startswith("hermite"):
                nn_ = nn_[nn_ != 100.0].view(1, -1)  # float32 H_100 overflows differently
            check("%s %s grid" % (n, dn(dt)), tf, cf, [x, nn_], tol="special2p")
            # float32: the recurrences cancel terms of up to (2|x|)^n near the
            # roots, and PyTorch's CPU build fuses them into fma: a narrower
            # range, and 1e-4
            w, top = (4, 15) if dt != f else (2.2, 6)
            rx = (torch.rand(100, generator=G, dtype=torch.float64) * w - w / 2).to(dt)
            rn = torch.randint(0, top, (100,), generator=G).to(dt)
            check("%s %s sweep" % (n, dn(dt)), tf, cf, [rx, rn], tol="special2p")
            for k in (0, 1, 4, 11 if dt != f else 5, -1, 2.9):
                check("%s %s n=%g" % (n, dn(dt), k), lambda t, k=k: tf(t, k),
                      lambda p, o, k=k: cs(p, k, o), [rx], tol="special2p")
        check("%s int" % n, tf, cf, [data((5,), torch.int64, lo=-3, hi=3),
                                     data((5,), torch.int32, lo=0, hi=6)], tol="special2")
        check("%s int n=3" % n, lambda t: tf(t, 3), lambda p, o: cs(p, 3, o),
              [data((5,), torch.int64, lo=-3, hi=3)], tol="special2")
    # Gamma's and Chi2's cdf: torch 2.0's gammainc(concentration, rate v)
    # (torch 1.13 has none)
    proto("clt_gamma_dist", [P, P, C.c_int, PP])
    proto("clt_chi2_dist", [P, C.c_int, PP])
    proto("clt_distribution_cdf", [P, P, PP])
    proto("clt_distribution_free", [P], None)
    for dt in FLOATS:
        conc = torch.rand(2, 3, generator=G, dtype=torch.float64).to(dt) * 5 + 0.1
        rate = torch.rand(3, generator=G, dtype=torch.float64).to(dt) * 2 + 0.1
        v = torch.rand(4, 2, 3, generator=G, dtype=torch.float64).to(dt) * 6
        check("Gamma cdf %s" % dn(dt), lambda c, r, x: torch.special.gammainc(c, r * x),
              _dist_c((lambda c, r, o: L.clt_gamma_dist(c, r, 1, o), 2),
                      L.clt_distribution_cdf), [conc, rate, v], tol="special2")
        check("Chi2 cdf %s" % dn(dt), lambda c, x: torch.special.gammainc(c / 2, x / 2),
              _dist_c((lambda c, o: L.clt_chi2_dist(c, 1, o), 1), L.clt_distribution_cdf),
              [conc, v], tol="special2")
        check("Gamma cdf %s outside the support" % dn(dt),
              lambda c, r, x: torch.distributions.Gamma(c, r).log_prob(x),
              _dist_c((lambda c, r, o: L.clt_gamma_dist(c, r, 1, o), 2),
                      L.clt_distribution_cdf), [conc, rate, -v - 1], tol="special2")
    # gradients: PyTorch's, where it has them
    x = torch.tensor([0.3, 1.5, 4.0], dtype=torch.float64)
    a = torch.tensor([0.7, 2.0, 9.0], dtype=torch.float64)
    for n, tf in (("gammainc", torch.special.gammainc), ("gammaincc", torch.special.gammaincc)):
        xt = x.clone().requires_grad_()
        tf(a, xt).sum().backward()
        cf = getattr(L, "clt_special_" + n)
        ok("%s grad x" % n, _special2_grad(lambda p, q, o: cf(q, p, o), x, a, xt.grad), "")
    xt = torch.tensor([-3.0, -0.5, 0.0, 0.7, 6.0, 30.0], dtype=torch.float64,
                      requires_grad=True)
    torch.special.erfcx(xt).sum().backward()
    ok("erfcx grad", _special2_grad(lambda p, q, o: L.clt_special_erfcx(p, o), xt.detach(),
                                    None, xt.grad), "")


def _special2_grad(cfn, x, other, want):
    """cltensor's gradient of sum(cfn(x, other)) for x against want."""
    keep = []
    try:
        proto("clt_set_requires_grad", [P, C.c_int])
        proto("clt_backward", [P, P, C.c_int])
        proto("clt_grad", [P, PP])
        proto("clt_sum", [P, PP])
        px = upload(x)
        keep.append(px)
        L.clt_set_requires_grad(px, 1)
        po = None
        if other is not None:
            po = upload(other)
            keep.append(po)
        out, s = P(), P()
        if cfn(px, po, C.byref(out)) != 0:
            return False
        keep.append(out)
        if L.clt_sum(out, C.byref(s)) != 0:
            return False
        keep.append(s)
        g = P()
        if L.clt_backward(s, None, 0) != 0 or L.clt_grad(px, C.byref(g)) != 0:
            return False
        keep.append(g)
        got, _, _ = download(g)
        return np.allclose(got, want.numpy(), rtol=1e-12, atol=1e-14)
    finally:
        for t in keep:
            L.clt_tensor_free(t)


# ---- linalg.eig, isin, put, msort, row_stack ---------------------------------

def eig_general():
    """linalg.eig and eigvals of general real and complex matrices against
    torch: the values matched one to one (LAPACK's order differs), A V = V
    diag(w), unit vectors, dtypes and shapes, the refusals; isin, put,
    msort and row_stack exactly."""
    proto("clt_linalg_eig", [P, PP, PP])
    proto("clt_linalg_eigvals", [P, PP])
    proto("clt_isin", [P, P, C.c_int, C.c_int, PP])
    proto("clt_put", [P, P, P, C.c_int, PP])
    proto("clt_msort", [P, PP])
    proto("clt_row_stack", [C.POINTER(P), C.c_size_t, PP])

    def run(name, fn, ins, nout):
        keep = []
        try:
            ps = [upload(t) for t in ins]
            keep += ps
            outs = [P() for _ in range(nout)]
            st = fn(*ps, *[C.byref(o) for o in outs])
            if st != 0:
                fail(name, "cltensor fails (%d: %s)" % (st, L.clt_last_error().decode()))
                return None
            keep += outs
            return [download(o)[0] for o in outs]
        finally:
            for p in keep:
                L.clt_tensor_free(p)

    shapes = [(1, 1), (2, 2), (3, 3), (2, 4, 4), (6, 6), (3, 2, 5, 5), (12, 12), (0, 3, 3),
              (2, 0, 0)]
    for dt in (torch.float32, torch.float64, torch.complex64, torch.complex128):
        single = dt in (torch.float32, torch.complex64)
        tol = 2e-4 if single else 1e-10
        for sh in shapes:
            if dt.is_complex:
                a = torch.complex(data(sh, torch.float64), data(sh, torch.float64)).to(dt)
            else:
                a = data(sh, dt)
            name = "eig %s %s" % (dt, list(sh))
            w_t, v_t = torch.linalg.eig(a)
            got = run(name, lambda p, o1, o2: L.clt_linalg_eig(p, o1, o2), [a], 2)
            if got is None:
                continue
            w, v = got
            ok(name + " dtype", w.dtype == w_t.numpy().dtype and v.dtype == v_t.numpy().dtype,
               "%s %s, torch %s" % (w.dtype, v.dtype, w_t.dtype))
            ok(name + " shape", w.shape == tuple(w_t.shape) and v.shape == tuple(v_t.shape),
               "%s %s" % (w.shape, v.shape))
            nb = int(np.prod(sh[:-2]))
            A = a.to(torch.complex128).numpy().reshape((nb,) + tuple(sh[-2:]))
            W = w.astype(np.complex128).reshape(nb, sh[-1])
            V = v.astype(np.complex128).reshape((nb,) + tuple(sh[-2:]))
            WT = w_t.to(torch.complex128).numpy().reshape(nb, sh[-1])
            scale = max(1.0, float(np.abs(A).max()) if A.size else 1.0)
            bad = []
            for b in range(A.shape[0]):
                used = set()
                for x in WT[b]:
                    j = min((j for j in range(len(W[b])) if j not in used),
                            key=lambda j: abs(W[b][j] - x))
                    used.add(j)
                    if abs(W[b][j] - x) > tol * 10 * scale * sh[-1]:
                        bad.append("value %s vs torch %s" % (W[b][j], x))
                r = A[b] @ V[b] - V[b] * W[b][None, :]
                if r.size and np.abs(r).max() > tol * scale * sh[-1]:
                    bad.append("residual %g" % np.abs(r).max())
                nrm = np.linalg.norm(V[b], axis=0)
                if nrm.size and np.abs(nrm - 1).max() > tol * sh[-1]:
                    bad.append("norms %s" % nrm)
            ok(name + " values and vectors", not bad, "; ".join(bad[:3]))
            got = run(name, lambda p, o: L.clt_linalg_eigvals(p, o), [a], 1)
            if got is not None:
                ok("eigvals %s %s" % (dt, list(sh)), np.array_equal(got[0], w),
                   "eigvals differs from eig's values")
    # refusals where torch refuses
    for name, a, needle in (("not square", torch.zeros(2, 3), "square"),
                            ("1-D", torch.zeros(3), "2 dimensions"),
                            ("int", torch.zeros(2, 2, dtype=torch.int64), "floating point"),
                            ("nan", torch.tensor([[1.0, float("nan")], [0.0, 1.0]]), "NaN")):
        try:
            torch.linalg.eig(a)
            torch_ok = True
        except RuntimeError:
            torch_ok = False
        keep = []
        try:
            p = upload(a)
            keep.append(p)
            o1, o2 = P(), P()
            st = L.clt_linalg_eig(p, C.byref(o1), C.byref(o2))
            msg = L.clt_last_error().decode()
            ok("eig refuses %s" % name, not torch_ok and st != 0 and needle in msg
               and o1.value is None and o2.value is None, "status %d: %s" % (st, msg))
        finally:
            for q in keep:
                L.clt_tensor_free(q)
    # isin: dtypes mixed as torch promotes them
    cases = [(torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([2, 5, 9])),
             (torch.tensor([1.5, float("nan"), 0.0, -0.0, 2.0]),
              torch.tensor([[0.0, float("nan")], [2.0, 7.0]])),
             (torch.tensor([1, 2, 3], dtype=torch.int32), torch.tensor([2.0, 3.5])),
             (torch.tensor([1, 2], dtype=torch.uint8), torch.tensor([2])),
             (data((4, 5), torch.int64), data((7,), torch.int64)),
             (torch.tensor([1.0, 2.0]), torch.zeros(0)),
             (torch.zeros(0, 3), torch.tensor([1.0]))]
    for i, (e, t) in enumerate(cases):
        for au in (0, 1):
            for inv in (0, 1):
                name = "isin case %d unique=%d invert=%d" % (i, au, inv)
                want = torch.isin(e, t, assume_unique=bool(au), invert=bool(inv)).numpy()
                got = run(name, lambda p, q, o: L.clt_isin(p, q, au, inv, o), [e, t], 1)
                if got is not None:
                    ok(name, got[0].dtype == want.dtype and np.array_equal(got[0], want),
                       "%s, torch %s" % (got[0], want))
    # put: negative indices; repeated places only with accumulate (torch:
    # undefined order otherwise)
    for dt in (torch.float32, torch.float64, torch.int64):
        base = data((3, 4), dt)
        for acc in (0, 1):
            idx = torch.tensor([0, -1, 5, 11, 2]) if not acc else torch.tensor([[0, -1], [0, 3]])
            src = data(tuple(idx.shape), dt)
            name = "put %s accumulate=%d" % (dt, acc)
            want = torch.put(base, idx, src, accumulate=bool(acc)).numpy()
            got = run(name, lambda p, q, r, o: L.clt_put(p, q, r, acc, o), [base, idx, src], 1)
            if got is not None:
                ok(name, np.array_equal(got[0], want), "%s, torch %s" % (got[0], want))
    for dt in (torch.float32, torch.float64, torch.int32, torch.int64):
        for sh in ((5,), (4, 3), (3, 2, 4), (0, 2)):
            a = data(sh, dt)
            name = "msort %s %s" % (dt, list(sh))
            want = torch.msort(a).numpy()
            got = run(name, lambda p, o: L.clt_msort(p, o), [a], 1)
            if got is not None:
                ok(name, np.array_equal(got[0], want), "%s, torch %s" % (got[0], want))
    # svd_lowrank and pca_lowrank on matrices of rank 2: torch's values,
    # whatever the random draws, and U diag(S) V^T = A (less its mean)
    proto("clt_svd_lowrank", [P, C.c_int64, C.c_int64, P, P, PP, PP, PP])
    proto("clt_pca_lowrank", [P, C.c_int64, C.c_int, C.c_int64, P, PP, PP, PP])
    for dt in FLOATS:
        for sh in ((8, 5), (5, 8), (2, 6, 6), (3, 9, 4)):
            x = torch.randn(sh[:-1] + (2,), generator=G, dtype=torch.float64)
            y = torch.randn(sh[:-2] + (2, sh[-1]), generator=G, dtype=torch.float64)
            a = (x @ y).to(dt)
            tol = 1e-3 if dt == torch.float32 else 1e-9
            for kind in ("svd", "pca"):
                name = "%s_lowrank %s %s" % (kind, dt, list(sh))
                if kind == "svd":
                    _, s_t, _ = torch.svd_lowrank(a, q=4, niter=2)
                    want = a
                    fn = lambda p, o1, o2, o3: L.clt_svd_lowrank(p, 4, 2, None, None, o1, o2, o3)
                else:
                    _, s_t, _ = torch.pca_lowrank(a, q=None, center=True, niter=2)
                    want = a - a.mean(dim=-2, keepdim=True)
                    fn = lambda p, o1, o2, o3: L.clt_pca_lowrank(p, -1, 1, 2, None, o1, o2, o3)
                got = run(name, fn, [a], 3)
                if got is None:
                    continue
                u, s_, v = got
                ok(name + " shapes", s_.shape == tuple(s_t.shape), "%s, torch %s" % (
                    s_.shape, tuple(s_t.shape)))
                sc = float(s_t.abs().max())
                ok(name + " values", np.abs(s_ - s_t.numpy()).max() <= tol * sc,
                   "%s, torch %s" % (s_, s_t))
                rec = (u * s_[..., None, :]) @ np.swapaxes(v, -1, -2)
                ok(name + " U S V^T", np.abs(rec - want.numpy()).max() <= tol * sc,
                   "off by %g" % np.abs(rec - want.numpy()).max())
    # lu_unpack of torch's own factors: P, L and U exactly
    proto("clt_lu_unpack", [P, P, C.c_int, C.c_int, PP, PP, PP])
    for dt in FLOATS:
        for sh in ((4, 4), (5, 3), (3, 5), (2, 3, 3), (0, 2, 2)):
            LU, piv = torch.linalg.lu_factor(data(sh, dt))
            for ud, up in ((1, 1), (1, 0), (0, 1)):
                name = "lu_unpack %s %s data=%d pivots=%d" % (dt, list(sh), ud, up)
                want = torch.lu_unpack(LU, piv, unpack_data=bool(ud), unpack_pivots=bool(up))
                got = run(name, lambda p, q, o1, o2, o3: L.clt_lu_unpack(p, q, ud, up, o1, o2,
                                                                         o3), [LU, piv], 3)
                if got is not None:
                    ok(name, all(g.shape == tuple(w.shape) and np.array_equal(g, w.numpy())
                                 for g, w in zip(got, want)),
                       "%s, torch %s" % (got, want))
    for shs in (((3,), (2, 3)), ((2, 2), (1, 2), (3, 2)), ((4,), (4,))):
        ts = [data(sh, torch.float32) for sh in shs]
        name = "row_stack %s" % (shs,)
        want = torch.row_stack(ts).numpy()
        keep = []
        try:
            ps = [upload(t) for t in ts]
            keep += ps
            arr = (P * len(ps))(*[q.value for q in ps])
            o = P()
            st = L.clt_row_stack(arr, len(ps), C.byref(o))
            ok(name + " status", st == 0, L.clt_last_error().decode())
            if st == 0:
                keep.append(o)
                ok(name, np.array_equal(download(o)[0], want), "")
        finally:
            for q in keep:
                L.clt_tensor_free(q)


# ---- nn2: packed sequences and the recurrent layers over them -------------------

def _nn2_protos():
    _rnn_protos()
    proto("clt_pack_padded_sequence", [P, I64P, C.c_size_t, C.c_int, C.c_int, PP, PP, PP, PP])
    proto("clt_pack_sequence", [C.POINTER(P), C.c_size_t, C.c_int, PP, PP, PP, PP])
    proto("clt_pad_packed_sequence", [P, P, P, P, C.c_int, C.c_double, C.c_int64, PP, PP])
    proto("clt_lstm_forward_packed", [P, P, P, P, P, P, P, PP, PP, PP])
    proto("clt_rnn_forward_packed", [P, P, P, P, P, P, PP, PP])
    proto("clt_gru_forward_packed", [P, P, P, P, P, P, PP, PP])


def _nn2_same(name, exp, q, tol="ew"):
    """exp (a torch tensor or None) against the cltensor tensor q (or NULL)."""
    if exp is None or not q:
        return ok(name, exp is None and not q, "torch %s, cltensor %s" % (
            "None" if exp is None else "a tensor", "NULL" if not q else "a tensor"))
    got, shape, _ = download(q)
    if tuple(exp.shape) != shape:
        return fail(name, "shape: torch %s, cltensor %s" % (list(exp.shape), list(shape)))
    if exp.dtype in (torch.int64, torch.int32):
        return ok(name, np.array_equal(got, exp.numpy()), "%s / %s" % (got, exp.numpy()))
    if compare_values(name, exp, got, tol, False) is True:
        ok(name, True)


def nn2():
    """torch.nn.utils.rnn's pack_padded_sequence, pack_sequence and
    pad_packed_sequence (all four tensors, both layouts, sorted or not,
    total_length), and nn.RNN, LSTM and GRU over a PackedSequence (output
    data, h_n, c_n) with torch's weights through safetensors."""
    import tempfile
    from torch.nn.utils import rnn as R
    _nn2_protos()
    torch.manual_seed(11)
    for bf in (0, 1):
        for lengths, sort in (([4, 2, 4, 1], 0), ([4, 3, 3, 1], 1), ([2, 5, 1, 5, 3], 0),
                              ([1], 1), ([3, 3], 0)):
            T, B = max(lengths) + (1 if bf else 0), len(lengths)
            x = data((B, T, 3) if bf else (T, B, 3), torch.float32)
            name = "pack_padded bf=%d lengths=%s sorted=%d" % (bf, lengths, sort)
            exp = R.pack_padded_sequence(x, torch.tensor(lengths), batch_first=bool(bf),
                                         enforce_sorted=bool(sort))
            keep = []
            try:
                xp = upload(x)
                keep.append(xp)
                outs = [P() for _ in range(4)]
                ln = (C.c_int64 * B)(*lengths)
                st = L.clt_pack_padded_sequence(xp, ln, B, bf, sort, *[C.byref(q) for q in outs])
                if st:
                    fail(name, L.clt_last_error().decode())
                    continue
                keep += outs
                for what, e, q in zip(("data", "batch_sizes", "sorted", "unsorted"), exp, outs):
                    _nn2_same(name + " " + what, e, q)
                for tl in (-1, T + 2):
                    for pv in (0.0, -2.5):
                        pad_e, len_e = R.pad_packed_sequence(exp, batch_first=bool(bf),
                                                             padding_value=pv,
                                                             total_length=None if tl < 0 else tl)
                        o, ol = P(), P()
                        st = L.clt_pad_packed_sequence(outs[0], outs[1], outs[2], outs[3], bf, pv,
                                                       tl, C.byref(o), C.byref(ol))
                        n2 = "pad_packed bf=%d lengths=%s total_length=%d pad=%g" % (
                            bf, lengths, tl, pv)
                        if st:
                            fail(n2, L.clt_last_error().decode())
                            continue
                        keep += [o, ol]
                        _nn2_same(n2, pad_e, o)
                        _nn2_same(n2 + " lengths", len_e, ol)
            finally:
                for q in keep:
                    L.clt_tensor_free(q)
    # pack_sequence of float64 sequences with two trailing dims
    for sort, lens in ((0, [2, 4, 3]), (1, [4, 4, 1])):
        seqs = [data((n, 2, 2), torch.float64) for n in lens]
        exp = R.pack_sequence(seqs, enforce_sorted=bool(sort))
        keep = []
        try:
            ps = [upload(s) for s in seqs]
            keep += ps
            arr = (P * len(ps))(*ps)
            outs = [P() for _ in range(4)]
            st = L.clt_pack_sequence(arr, len(ps), sort, *[C.byref(q) for q in outs])
            name = "pack_sequence sorted=%d" % sort
            if st:
                fail(name, L.clt_last_error().decode())
                continue
            keep += outs
            for what, e, q in zip(("data", "batch_sizes", "sorted", "unsorted"), exp, outs):
                _nn2_same(name + " " + what, e, q)
        finally:
            for q in keep:
                L.clt_tensor_free(q)
    # errors as torch's
    keep = []
    try:
        xp = upload(data((3, 2, 2), torch.float32))
        keep.append(xp)
        outs = [P() for _ in range(4)]
        for lengths, sort, why in (([1, 2], 1, "unsorted lengths"), ([0, 1], 0, "a zero length"),
                                   ([1, 1, 1], 0, "three lengths for two")):
            ln = (C.c_int64 * len(lengths))(*lengths)
            st = L.clt_pack_padded_sequence(xp, ln, len(lengths), 0, sort,
                                            *[C.byref(q) for q in outs])
            ok("pack_padded refuses " + why, st != 0 and not any(outs), "status %d" % st)
    finally:
        for q in keep:
            L.clt_tensor_free(q)
    _nn2_gumbel()
    _nn2_layers()
    _nn2_triplet()
    # the recurrent layers over packed input
    try:
        from safetensors.torch import save_file
    except Exception as e:  # pragma: no cover
        return fail("nn2", "cannot import safetensors: %s" % e)
    tmp = tempfile.mkdtemp(prefix="cltensor-nn2-")
    path = os.path.join(tmp, "m.safetensors")
    for kind, nl in (("RNN", "tanh"), ("RNN", "relu"), ("LSTM", None), ("GRU", None)):
        for layers, bidir in ((1, 0), (1, 1), (2, 1), (2, 0)):
            for given in (0, 1):
                for lengths, sort in (([5, 2, 4, 1], 0), ([3, 3, 2], 1)):
                    for dt in ([torch.float32, torch.float64] if layers == 2 and bidir
                               else [torch.float32]):
                        _nn2_rnn_case(kind, nl, layers, bidir, given, lengths, sort, dt, path,
                                      save_file)
    os.unlink(path)
    os.rmdir(tmp)


def _nn2_gumbel():
    """F.gumbel_softmax with torch's formula over the gumbels -log(e) of
    the exponentials the library's generator gives (clt_exponential_ from
    a generator of the same seed)."""
    proto("clt_gumbel_softmax", [P, C.c_double, C.c_int, C.c_int, P, PP])
    proto("clt_exponential_", [P, P, C.c_double])
    F = torch.nn.functional
    for dt in FLOATS:
        for shape, dim in (((3, 5), -1), ((2, 3, 4), 1), ((4,), 0), ((2, 1, 3), 0)):
            for tau in (1.0, 0.3):
                for hard in (0, 1):
                    name = "gumbel_softmax %s dim=%d tau=%g hard=%d %s" % (
                        list(shape), dim, tau, hard, dn(dt))
                    x = data(shape, dt, lo=-2, hi=2)
                    keep = []
                    g1, g2 = P(), P()
                    try:
                        L.clt_generator_new(42, C.byref(g1))
                        L.clt_generator_new(42, C.byref(g2))
                        xp = upload(x)
                        keep.append(xp)
                        e = upload(torch.zeros(shape, dtype=dt))
                        keep.append(e)
                        if L.clt_exponential_(e, g2, 1.0):
                            fail(name, L.clt_last_error().decode())
                            continue
                        ev = torch.from_numpy(download(e)[0])
                        gum = -ev.log()
                        y_soft = ((x + gum) / tau).softmax(dim)
                        if hard:
                            index = y_soft.max(dim, keepdim=True)[1]
                            y_hard = torch.zeros_like(x).scatter_(dim, index, 1.0)
                            exp = y_hard - y_soft.detach() + y_soft
                        else:
                            exp = y_soft
                        o = P()
                        if L.clt_gumbel_softmax(xp, tau, hard, dim, g1, C.byref(o)):
                            fail(name, L.clt_last_error().decode())
                            continue
                        keep.append(o)
                        # a softmax (exp and a sum) of (x + g) / tau: a few
                        # float32 ulps of its inputs, times up to 1 / tau
                        _nn2_same(name, exp, o, tol="tr")
                        ok(name + " draws", L.clt_generator_offset(g1) ==
                           L.clt_generator_offset(g2), "generator offsets differ")
                    finally:
                        for q in keep:
                            L.clt_tensor_free(q)
                        L.clt_generator_free(g1)
                        L.clt_generator_free(g2)
    # errors: torch's dim check, an integer tensor
    check("gumbel_softmax dim 2 of 2-D", lambda t: F.gumbel_softmax(t, dim=2),
          lambda p, o: L.clt_gumbel_softmax(p, 1.0, 0, 2, None, o),
          [data((2, 3), torch.float32)])
    check("gumbel_softmax int64", lambda t: F.gumbel_softmax(t),
          lambda p, o: L.clt_gumbel_softmax(p, 1.0, 0, -1, None, o),
          [data((2, 3), torch.int64)])


def _nn2_layer_run(mk, fwd, ins, o):
    """Makes a module with mk(&m), runs fwd(m, *ins, o), frees it."""
    m = P()
    if mk(C.byref(m)):
        return 1
    try:
        return fwd(m, *ins, o)
    finally:
        L.clt_module_free(m)


def _nn2_layers():
    """nn.Unflatten, nn.Softmax2d, nn.CosineSimilarity, nn.PairwiseDistance."""
    proto("clt_unflatten_layer", [C.c_int, I64P, C.c_int, PP])
    proto("clt_softmax2d_layer", [PP])
    proto("clt_cosine_similarity_layer", [C.c_int, C.c_double, PP])
    proto("clt_pairwise_distance_layer", [C.c_double, C.c_double, C.c_int, PP])
    proto("clt_cosine_similarity_forward", [P, P, P, PP])
    proto("clt_pairwise_distance_forward", [P, P, P, PP])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    nn = torch.nn
    for dim, sizes, shape in ((1, (2, -1), (3, 6, 2)), (-1, (2, 3), (4, 6)), (0, (1, 4), (4,)),
                              (1, (4, 2), (3, 6, 2))):
        arr = (C.c_int64 * len(sizes))(*sizes)
        check("Unflatten(%d, %s) of %s" % (dim, sizes, list(shape)),
              lambda t, d=dim, z=sizes: nn.Unflatten(d, z)(t),
              lambda p, o, d=dim, a=arr, k=len(sizes): _nn2_layer_run(
                  lambda q: L.clt_unflatten_layer(d, a, k, q),
                  lambda m, x, oo: L.clt_module_forward(m, x, oo), [p], o),
              [data(shape, torch.float32)], tol="exact")
    for shape in ((3, 4, 5), (2, 3, 4, 5), (2, 3), (2, 3, 1, 1, 2)):
        for dt in FLOATS:
            check("Softmax2d %s %s" % (list(shape), dn(dt)), lambda t: nn.Softmax2d()(t),
                  lambda p, o: _nn2_layer_run(lambda q: L.clt_softmax2d_layer(q),
                                              lambda m, x, oo: L.clt_module_forward(m, x, oo),
                                              [p], o),
                  [data(shape, dt)], tol="tr")
    for dim, eps, s1, s2 in ((1, 1e-8, (3, 4), (3, 4)), (0, 0.5, (4, 2), (4, 1)),
                             (-1, 1e-8, (2, 3, 5), (5,))):
        for dt in FLOATS:
            check("CosineSimilarity(%d, %g) %s %s %s" % (dim, eps, list(s1), list(s2), dn(dt)),
                  lambda a, b, d=dim, e=eps: nn.CosineSimilarity(d, e)(a, b),
                  lambda p, q, o, d=dim, e=eps: _nn2_layer_run(
                      lambda mm: L.clt_cosine_similarity_layer(d, e, mm),
                      lambda m, x, y, oo: L.clt_cosine_similarity_forward(m, x, y, oo), [p, q], o),
                  [data(s1, dt), data(s2, dt)], tol="red")
    for p_, eps, keep, s1, s2 in ((2.0, 1e-6, 0, (3, 4), (3, 4)), (1.0, 1e-3, 1, (3, 4), (4,)),
                                  (3.0, 1e-6, 0, (2, 3, 5), (2, 3, 5)), (0.0, 1e-6, 1, (5,), (5,))):
        for dt in FLOATS:
            check("PairwiseDistance(%g, %g, %d) %s %s %s" % (p_, eps, keep, list(s1), list(s2),
                                                              dn(dt)),
                  lambda a, b, pp=p_, e=eps, k=keep: nn.PairwiseDistance(pp, e, bool(k))(a, b),
                  lambda p, q, o, pp=p_, e=eps, k=keep: _nn2_layer_run(
                      lambda mm: L.clt_pairwise_distance_layer(pp, e, k, mm),
                      lambda m, x, y, oo: L.clt_pairwise_distance_forward(m, x, y, oo), [p, q],
                      o),
                  [data(s1, dt), data(s2, dt)], tol="red")


DISTFN = C.CFUNCTYPE(C.c_int, P, P, P, PP)


def _nn2_triplet():
    """F.triplet_margin_with_distance_loss with the default distance and
    with a distance function given through a C callback (pairwise_distance
    with p 1, and 1 - cosine_similarity)."""
    proto("clt_triplet_margin_with_distance_loss",
          [P, P, P, DISTFN, P, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_pairwise_distance", [P, P, C.c_double, C.c_double, C.c_int, PP])
    proto("clt_rsub_scalar", [P, C.c_double, PP])
    F = torch.nn.functional

    def l1(a, b, user, o):
        return L.clt_pairwise_distance(a, b, 1.0, 1e-6, 0, o)

    def cos(a, b, user, o):
        t = P()
        st = L.clt_cosine_similarity(a, b, -1, 1e-8, C.byref(t))
        if st:
            return st
        st = L.clt_rsub_scalar(t, 1.0, o)
        L.clt_tensor_free(t)
        return st

    fns = {"default": (None, DISTFN()),
           "l1": (lambda a, b: F.pairwise_distance(a, b, p=1.0), DISTFN(l1)),
           "cosine": (lambda a, b: 1.0 - F.cosine_similarity(a, b, dim=-1), DISTFN(cos))}
    for fname, (tf, cf) in fns.items():
        # torch 1.13's functional form takes any margin
        for margin, swap, red in ((1.0, 0, 1), (0.5, 1, 0), (2.0, 1, 2), (0.0, 0, 1),
                                  (-1.0, 0, 1)):
            for shape in ((4, 5), (3, 2, 4)):
                check("triplet_margin_with_distance_loss %s margin=%g swap=%d red=%d %s" % (
                          fname, margin, swap, red, list(shape)),
                      lambda a, p, n, tf=tf, mg=margin, sw=swap, r=red:
                      F.triplet_margin_with_distance_loss(
                          a, p, n, distance_function=tf, margin=mg, swap=bool(sw),
                          reduction=["mean", "sum", "none"][r]),
                      lambda a, p, n, o, cf=cf, mg=margin, sw=swap, r=red:
                      L.clt_triplet_margin_with_distance_loss(a, p, n, cf, None, mg, sw, r, o),
                      [data(shape, torch.float64), data(shape, torch.float64),
                       data(shape, torch.float64)], tol="red")
    # nor checks the ranks: they broadcast
    check("triplet_margin_with_distance_loss ranks", lambda a, p, n:
          F.triplet_margin_with_distance_loss(a, p, n),
          lambda a, p, n, o: L.clt_triplet_margin_with_distance_loss(a, p, n, DISTFN(), None,
                                                                     1.0, 0, 0, o),
          [data((3, 4), torch.float32), data((4,), torch.float32), data((3, 4), torch.float32)],
          tol="red")


def _nn2_rnn_case(kind, nl, layers, bidir, given, lengths, sort, dt, path, save_file):
    from torch.nn.utils import rnn as R
    name = "packed %s%s L=%d bidir=%d h0=%d lengths=%s %s" % (
        kind, "(%s)" % nl if nl else "", layers, bidir, given, lengths, dn(dt))
    I, H, B, T = 3, 4, len(lengths), max(lengths)
    kw = dict(num_layers=layers, bidirectional=bool(bidir))
    if nl:
        kw["nonlinearity"] = nl
    tm = getattr(torch.nn, kind)(I, H, **kw).to(dt)
    save_file({k: v.float().contiguous() for k, v in tm.state_dict().items()}, path)
    o = RnnOpts(I, H, layers, 1, 0, 0.0, bidir, 1 if nl == "relu" else 0)
    m = P()
    keep = []
    try:
        st = getattr(L, "clt_%s_layer" % kind.lower())(DEV, C.byref(o), None, C.byref(m))
        if st:
            return fail(name, "layer: %s" % L.clt_last_error())
        if dt == torch.float64 and L.clt_module_to_dtype(m, F64):
            return fail(name, "to_dtype: %s" % L.clt_last_error())
        if L.clt_module_load(m, path.encode()):
            return fail(name, "load: %s" % L.clt_last_error())
        D = 2 if bidir else 1
        x = data((T, B, I), dt, lo=-2, hi=2)
        packed = R.pack_padded_sequence(x, torch.tensor(lengths), enforce_sorted=bool(sort))
        h0 = data((D * layers, B, H), dt, lo=-1, hi=1) if given else None
        c0 = data((D * layers, B, H), dt, lo=-1, hi=1) if given and kind == "LSTM" else None
        with torch.no_grad():
            if kind == "LSTM":
                r = tm(packed, (h0, c0)) if given else tm(packed)
                exp = [r[0].data, r[1][0], r[1][1]]
            else:
                r = tm(packed, h0) if given else tm(packed)
                exp = [r[0].data, r[1]]
        pk = [upload(t) if t is not None else None for t in packed]
        ins = [upload(t) if t is not None else None for t in (h0, c0)]
        keep += [p for p in pk + ins if p is not None]
        outs = [P(), P(), P()]
        if kind == "LSTM":
            st = L.clt_lstm_forward_packed(m, pk[0], pk[1], pk[2], pk[3], ins[0], ins[1],
                                           *[C.byref(q) for q in outs])
        else:
            st = getattr(L, "clt_%s_forward_packed" % kind.lower())(
                m, pk[0], pk[1], pk[2], pk[3], ins[0], C.byref(outs[0]), C.byref(outs[1]))
            outs = outs[:2]
        if st:
            return fail(name, "forward: %s" % L.clt_last_error())
        keep += outs
        for what, e, q in zip(("output", "h_n", "c_n"), exp, outs):
            _nn2_same(name + " " + what, e, q, "mm")
    finally:
        for q in keep:
            L.clt_tensor_free(q)
        L.clt_module_free(m)


def dist3():
    """The cross-family kl_divergence pairs with Uniform, Pareto or Bernoulli
    on one side (Uniform || Beta/ContinuousBernoulli/Gamma/Gumbel/Pareto,
    Beta || Uniform/ContinuousBernoulli, ContinuousBernoulli || Uniform,
    Gamma || Gumbel, Pareto || Gamma/Normal, Bernoulli || Poisson), with
    their infinite cases."""
    D = torch.distributions
    _dist_protos()
    mk2 = lambda f: (lambda a, b, o: f(a, b, 1, o), 2)
    for n in ("gamma", "beta", "gumbel", "pareto", "normal", "uniform"):
        proto("clt_%s_dist" % n, [P, P, C.c_int, PP])
    proto("clt_continuous_bernoulli_dist", [P, P, C.c_int, PP])
    proto("clt_bernoulli_dist", [P, P, C.c_int, PP])
    proto("clt_poisson_dist", [P, C.c_int, PP])
    proto("clt_chi2_dist", [P, C.c_int, PP])
    proto("clt_mixture_same_family_dist", [P, P, C.c_int, PP])
    proto("clt_lowrank_multivariate_normal_dist", [P, P, P, C.c_int, PP])
    for n in ("covariance_matrix", "precision_matrix", "scale_tril"):
        proto("clt_distribution_" + n, [P, PP])
    proto("clt_distribution_sample", [P, P, C.c_int, I64P, PP])
    proto("clt_generator_new", [C.c_uint64, PP])
    proto("clt_generator_free", [P], None)
    kl = L.clt_kl_divergence
    normal, uni = mk2(L.clt_normal_dist), mk2(L.clt_uniform_dist)
    gam, bet = mk2(L.clt_gamma_dist), mk2(L.clt_beta_dist)
    gum, par = mk2(L.clt_gumbel_dist), mk2(L.clt_pareto_dist)
    cb_p = (lambda p, o: L.clt_continuous_bernoulli_dist(p, None, 1, o), 1)
    bern = (lambda p, o: L.clt_bernoulli_dist(p, None, 1, o), 1)
    pois = (lambda r, o: L.clt_poisson_dist(r, 1, o), 1)
    chi2 = (lambda r, o: L.clt_chi2_dist(r, 1, o), 1)
    proto("clt_half_cauchy_dist", [P, C.c_int, PP])
    hc = (lambda r, o: L.clt_half_cauchy_dist(r, 1, o), 1)
    for dt in FLOATS:
        tol = "red"
        t = lambda *v: torch.tensor(v, dtype=dt)
        real = lambda *sh: torch.randn(*sh, generator=G, dtype=torch.float64).to(dt)
        pos = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 2 + 0.2
        unit = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 0.9 + 0.05
        # Uniform's intervals inside (0, 1), and some reaching past its ends
        lo_in, hi_in = t(0.1, 0.3, 0.05), t(0.6, 0.9, 0.2)
        lo_mix, hi_mix = t(0.1, -0.2, 0.0, 0.3), t(0.6, 0.5, 0.7, 1.0)
        cbp = t(0.1, 0.4995, 0.5, 0.93)
        cross = (
            ("Uniform || Beta", D.Uniform, uni, D.Beta, bet,
             [lo_in.expand(2, 3), hi_in, pos(2, 3), pos(3)]),
            ("Uniform || Beta outside", D.Uniform, uni, D.Beta, bet,
             [t(0.1, -0.2, 0.3, 0.2), t(0.6, 0.5, 1.2, 1.0), pos(4), pos(4)]),
            ("Uniform || ContinuousBernoulli", D.Uniform, uni, D.ContinuousBernoulli, cb_p,
             [lo_mix, hi_mix, cbp]),
            ("Uniform || ContinuousBernoulli inside", D.Uniform, uni, D.ContinuousBernoulli, cb_p,
             [lo_in, hi_in, unit(2, 3)]),
            ("Uniform || Gamma", D.Uniform, uni, D.Gamma, gam,
             [t(0.5, -1.0, 2.0).expand(2, 3), t(1.5, 2.0, 2.5), pos(2, 3), pos(3)]),
            ("Uniform || Chi2", D.Uniform, uni, D.Chi2, chi2,
             [t(0.5, 0.1, 2.0).expand(2, 3), t(1.5, 2.0, 2.5), pos(2, 3)]),
            ("Uniform || Gumbel", D.Uniform, uni, D.Gumbel, gum,
             [real(3) - 2, real(3) + 2.5, real(2, 3), pos(3)]),
            ("Uniform || Pareto", D.Uniform, uni, D.Pareto, par,
             [t(1.5, 0.5, 3.0), t(2.5, 2.0, 4.0), t(1.0, 1.0, 2.0), pos(2, 3)]),
            ("Beta || Uniform", D.Beta, bet, D.Uniform, uni,
             [pos(4), pos(4), t(-0.5, 0.0, 0.2, -1.0), t(1.5, 1.0, 2.0, 0.9)]),
            ("Beta || ContinuousBernoulli", D.Beta, bet, D.ContinuousBernoulli, cb_p,
             [pos(2, 4), pos(4), cbp]),
            ("ContinuousBernoulli || Uniform", D.ContinuousBernoulli, cb_p, D.Uniform, uni,
             [cbp, t(-0.5, 0.0, -0.2, -1.0), t(1.5, 2.0, 1.0, 3.0)]),
            ("Gamma || Gumbel", D.Gamma, gam, D.Gumbel, gum, [pos(2, 3), pos(3), real(3), pos(2, 3)]),
            ("Chi2 || Gumbel", D.Chi2, chi2, D.Gumbel, gum, [pos(3), real(2, 3), pos(3)]),
            ("Pareto || Gamma", D.Pareto, par, D.Gamma, gam,
             [pos(2, 4), t(0.5, 1.0, 1.5, 4.0), pos(4), pos(4)]),
            ("Pareto || Normal", D.Pareto, par, D.Normal, normal,
             [pos(2, 4), t(1.5, 2.0, 2.5, 6.0), real(4), pos(2, 4)]),
            ("Bernoulli || Poisson", D.Bernoulli, bern, D.Poisson, pois,
             [t(0.0, 0.3, 0.9, 1.0), pos(2, 4)]),
            ("HalfCauchy || HalfCauchy", D.HalfCauchy, hc, D.HalfCauchy, hc, [pos(3), pos(2, 3)]),
        )
        for name, tp, mp, tq, mq, ins in cross:
            n = mp[1]
            check("kl_divergence %s %s" % (name, dn(dt)),
                  lambda *a, tp=tp, tq=tq, n=n: D.kl_divergence(tp(*a[:n]), tq(*a[n:])),
                  _dist_c([mp, mq], kl), ins, tol=tol)
        # MixtureSameFamily over several component families
        calls = {"log_prob": L.clt_distribution_log_prob, "cdf": L.clt_distribution_cdf,
                 "mean": L.clt_distribution_mean, "variance": L.clt_distribution_variance,
                 "stddev": L.clt_distribution_stddev}
        ind_normal = (lambda l, s_, o: _independent_of(L.clt_normal_dist, l, s_, o), 2)
        expo = (lambda r, o: L.clt_exponential_dist(r, 1, o), 1)
        comps = (
            ("Normal", lambda l, s_: D.Normal(l, s_), normal, [real(2, 3), pos(2, 3)],
             real(4, 2), ("log_prob", "cdf", "mean", "variance", "stddev")),
            ("Independent(Normal)", lambda l, s_: D.Independent(D.Normal(l, s_), 1), ind_normal,
             [real(3, 2), pos(3, 2)], real(5, 2), ("log_prob", "mean", "variance")),
            ("Gamma", lambda a, b: D.Gamma(a, b), gam, [pos(2, 3), pos(3)], pos(4, 2),
             ("log_prob", "mean", "variance")),
            ("Exponential", lambda r: D.Exponential(r), expo, [pos(2, 3)], pos(4, 2),
             ("log_prob", "cdf", "mean", "variance")),
            ("Bernoulli", lambda p_: D.Bernoulli(p_), bern, [unit(2, 3)],
             torch.tensor([[0., 1.], [1., 1.], [0., 0.]], dtype=dt), ("log_prob", "mean", "variance")),
        )
        for cname, tc, mc, params, value, what in comps:
            nlg = 1 if cname.startswith("Independent") else (2 if params[0].dim() > 1 else 1)
            lg = real(3) if cname.startswith("Independent") else real(2, 3) if nlg == 2 else real(3)
            mk = (lambda *a, mc=mc: _mixture_of(mc, *a), 1 + mc[1])
            tm = lambda lg_, *a, tc=tc: D.MixtureSameFamily(D.Categorical(logits=lg_), tc(*a))
            for w in what:
                if w in ("log_prob", "cdf"):
                    check("MixtureSameFamily(%s) %s %s" % (cname, w, dn(dt)),
                          lambda *a, w=w, tm=tm: getattr(tm(*a[:-1]), w)(a[-1]),
                          _dist_c(mk, calls[w]), [lg] + params + [value], tol=tol)
                else:
                    check("MixtureSameFamily(%s) %s %s" % (cname, w, dn(dt)),
                          lambda *a, w=w, tm=tm: getattr(tm(*a), w),
                          _dist_c(mk, calls[w]), [lg] + params, tol=tol)
        # a mixture batch of [] against components of batch [2, 3]
        check("MixtureSameFamily(Normal) broadcast mixture %s" % dn(dt),
              lambda lg_, l, s_, v: D.MixtureSameFamily(D.Categorical(logits=lg_),
                                                        D.Normal(l, s_)).log_prob(v),
              _dist_c((lambda *a: _mixture_of(normal, *a), 3), L.clt_distribution_log_prob),
              [real(3), real(2, 3), pos(2, 3), real(2)], tol=tol)
        check("MixtureSameFamily mismatched components %s" % dn(dt),
              lambda lg_, l, s_: D.MixtureSameFamily(D.Categorical(logits=lg_),
                                                     D.Normal(l, s_)).mean,
              _dist_c((lambda *a: _mixture_of(normal, *a), 3), L.clt_distribution_mean),
              [real(2), real(2, 3), pos(2, 3)])
        # LowRankMultivariateNormal
        lrm = (lambda l, w, d_, o: L.clt_lowrank_multivariate_normal_dist(l, w, d_, 1, o), 3)
        mvn_t = (lambda l, c, o: L.clt_multivariate_normal_dist(l, None, c, 1, o), 2)
        calls.update(entropy=L.clt_distribution_entropy,
                     covariance_matrix=L.clt_distribution_covariance_matrix,
                     precision_matrix=L.clt_distribution_precision_matrix,
                     scale_tril=L.clt_distribution_scale_tril)
        TL = lambda *sh: torch.tril(real(*sh)) * 0.5 + torch.diag_embed(pos(*sh[:-1]))
        for shapes, vshape, bsh in ((((3,), (3, 2), (3,)), (4, 3), ()),
                                    (((2, 3), (3, 1), (2, 3)), (5, 2, 3), (2,)),
                                    (((4,), (2, 1, 4, 3), (3, 4)), (2, 3, 4), (2, 3)),
                                    (((1,), (1, 1), (1,)), (1,), ())):
            ins = [real(*shapes[0]), real(*shapes[1]), pos(*shapes[2])]
            tdist = lambda l, w, d_: D.LowRankMultivariateNormal(l, w, d_)
            for w in ("log_prob", "entropy", "mean", "variance", "stddev", "covariance_matrix",
                      "precision_matrix", "scale_tril"):
                if w == "log_prob":
                    check("LowRankMultivariateNormal %s %s %s" % (shapes, w, dn(dt)),
                          lambda l, w_, d_, v: tdist(l, w_, d_).log_prob(v),
                          _dist_c(lrm, calls[w]), ins + [real(*vshape)], tol=tol)
                elif w == "entropy":
                    check("LowRankMultivariateNormal %s %s %s" % (shapes, w, dn(dt)),
                          lambda *a: tdist(*a).entropy(), _dist_c(lrm, calls[w]), ins, tol=tol)
                else:
                    check("LowRankMultivariateNormal %s %s %s" % (shapes, w, dn(dt)),
                          lambda *a, w=w: getattr(tdist(*a), w), _dist_c(lrm, calls[w]), ins,
                          tol=tol)
            n = shapes[0][-1]
            check("kl_divergence LowRankMultivariateNormal %s %s" % (shapes, dn(dt)),
                  lambda *a: D.kl_divergence(tdist(*a[:3]), tdist(*a[3:])),
                  _dist_c([lrm, lrm], kl), ins + [real(n), real(n, 2), pos(n)], tol=tol)
            check("kl_divergence LowRankMultivariateNormal || MultivariateNormal %s %s"
                  % (shapes, dn(dt)),
                  lambda *a: D.kl_divergence(tdist(*a[:3]),
                                             D.MultivariateNormal(a[3], scale_tril=a[4])),
                  _dist_c([lrm, mvn_t], kl), ins + [real(n), TL(*bsh, n, n)], tol=tol)
            check("kl_divergence MultivariateNormal || LowRankMultivariateNormal %s %s"
                  % (shapes, dn(dt)),
                  lambda *a: D.kl_divergence(D.MultivariateNormal(a[0], scale_tril=a[1]),
                                             tdist(*a[2:])),
                  _dist_c([mvn_t, lrm], kl), [real(n), TL(2, n, n)] + ins, tol=tol)
            check("MultivariateNormal covariance_matrix %s %s" % (shapes, dn(dt)),
                  lambda l, c: D.MultivariateNormal(l, scale_tril=c).covariance_matrix,
                  _dist_c(mvn_t, calls["covariance_matrix"]), [real(n), TL(2, n, n)], tol=tol)
            check("MultivariateNormal precision_matrix %s %s" % (shapes, dn(dt)),
                  lambda l, c: D.MultivariateNormal(l, scale_tril=c).precision_matrix,
                  _dist_c(mvn_t, calls["precision_matrix"]), [real(n), TL(2, n, n)], tol=tol)
        for name, args in (("cov_factor rows", [real(3), real(2, 2), pos(3)]),
                           ("cov_diag size", [real(3), real(3, 2), pos(2)]),
                           ("batch shapes", [real(2, 3), real(4, 3, 1), pos(3, 3)]),
                           ("cov_diag negative", [real(3), real(3, 2), -pos(3)]),
                           ("loc 0-d", [t(0.5), real(3, 2), pos(3)]),
                           ("cov_factor 1-d", [real(3), real(3), pos(3)])):
            check("LowRankMultivariateNormal refuses %s %s" % (name, dn(dt)),
                  lambda *a: D.LowRankMultivariateNormal(*a, validate_args=True).mean,
                  _dist_c(lrm, calls["mean"]), args)
        _sample_moments("LowRankMultivariateNormal %s" % dn(dt), lrm,
                        [t(0.5, -1.0, 2.0), t(1.0, 0.5, -0.3, 0.2, 0.0, 1.5).reshape(3, 2),
                         t(0.3, 0.2, 0.6)],
                        *(lambda m: (m.mean, m.variance))(D.LowRankMultivariateNormal(
                            t(0.5, -1.0, 2.0).double(),
                            t(1.0, 0.5, -0.3, 0.2, 0.0, 1.5).double().reshape(3, 2),
                            t(0.3, 0.2, 0.6).double())))
        _sample_moments("MixtureSameFamily(Normal) %s" % dn(dt),
                        (lambda *a: _mixture_of(normal, *a), 3),
                        [t(0.3, -1.0, 0.5), t(-2.0, 0.0, 3.0), t(0.5, 1.0, 0.7)],
                        *(lambda m: (m.mean, m.variance))(D.MixtureSameFamily(
                            D.Categorical(logits=t(0.3, -1.0, 0.5).double()),
                            D.Normal(t(-2.0, 0.0, 3.0).double(), t(0.5, 1.0, 0.7).double()))))


def _independent_of(ctor, a, b, out):
    """Independent(ctor(a, b), 1) into out."""
    base = P()
    try:
        return ctor(a, b, 1, C.byref(base)) or L.clt_independent_dist(base, 1, 1, out)
    finally:
        L.clt_distribution_free(base)


def _mixture_of(mc, logits, *a):
    """MixtureSameFamily(Categorical(logits=logits), mc's component made of
    a[:-1]) into a[-1]."""
    out, a = a[-1], a[:-1]
    cat, comp = P(), P()
    try:
        return L.clt_categorical_dist(None, logits, 1, C.byref(cat)) or \
            mc[0](*a, C.byref(comp)) or L.clt_mixture_same_family_dist(cat, comp, 1, out)
    finally:
        L.clt_distribution_free(cat)
        L.clt_distribution_free(comp)
def half2():
    """float16 (see _half2)."""
    _half2(torch.float16)


def bfloat16_2():
    """bfloat16 (see _half2)."""
    _half2(torch.bfloat16)


def _half2(lp):
    """float16 or bfloat16 (lp) convolutions, pooling, interpolation, padding, unfold/fold
    and grid_sample against torch computing in float32 from the same half
    inputs, rounded to half (torch's GPU kernels accumulate in float32;
    torch 1.13's CPU has no Half kernel for most of these): within one
    rounding of half, and max pooling, padding and nearest modes exact.
    Also the indices of max pooling (int64, exact)."""
    F = torch.nn.functional
    hd = _hdata if lp == torch.float16 else _bdata
    proto("clt_conv1d", [P, P, P, P, PP])
    proto("clt_conv2d", [P, P, P, P, PP])
    proto("clt_conv3d", [P, P, P, P, PP])
    proto("clt_conv_transpose1d", [P, P, P, P, PP])
    proto("clt_conv_transpose2d", [P, P, P, P, PP])
    proto("clt_conv_transpose3d", [P, P, P, P, PP])
    proto("clt_max_pool2d", [P, I64P, I64P, I64P, I64P, C.c_int, PP])
    proto("clt_avg_pool2d", [P, I64P, I64P, I64P, C.c_int, C.c_int, PP])
    proto("clt_max_pool1d", [P, C.c_int64, C.c_int64, C.c_int64, C.c_int64, C.c_int, PP])
    proto("clt_avg_pool1d", [P, C.c_int64, C.c_int64, C.c_int64, C.c_int, C.c_int, PP])
    proto("clt_max_pool3d", [P, I64P, I64P, I64P, I64P, C.c_int, PP])
    proto("clt_avg_pool3d", [P, I64P, I64P, I64P, C.c_int, C.c_int, PP])
    proto("clt_max_pool2d_with_indices", [P, I64P, I64P, I64P, I64P, C.c_int, PP, PP])
    proto("clt_adaptive_avg_pool2d", [P, I64P, PP])
    proto("clt_adaptive_max_pool2d", [P, I64P, PP, PP])
    proto("clt_adaptive_avg_pool3d", [P, I64P, PP])
    proto("clt_lp_pool2d", [P, C.c_double, I64P, I64P, C.c_int, PP])
    proto("clt_interpolate_nd", [P, I64P, C.POINTER(C.c_double), C.c_int, C.c_int, C.c_int, PP])
    proto("clt_pad", [P, I64P, C.c_int, C.c_int, C.c_double, PP])
    proto("clt_unfold", [P, I64P, P, PP])
    proto("clt_fold", [P, I64P, I64P, P, PP])
    proto("clt_grid_sample", [P, P, C.c_int, C.c_int, C.c_int, PP])

    def f32(tfn):
        def ref(*ts):
            r = tfn(*[t.float() if t.dtype == lp else t for t in ts])
            return r.to(lp) if r.dtype == torch.float32 else r
        return ref

    def hc(name, tfn, cfn, inputs, tol="ew"):
        check(("half2 " if lp == torch.float16 else "bfloat16_2 ") + name, f32(tfn), cfn,
              inputs, tol=tol)

    # convolutions: 1-D, 2-D, 3-D, grouped, dilated, strided, transposed
    hc("conv1d g2 d2", lambda x, w, b: F.conv1d(x, w, b, 2, 1, 2, 2),
       lambda x, w, b, o: L.clt_conv1d(x, w, b, _i64s(2, 1, 2, 2), o),
       [hd((2, 4, 13), -1, 1), hd((6, 2, 3), -1, 1), hd((6,))])
    hc("conv2d", lambda x, w, b: F.conv2d(x, w, b, (2, 1), (1, 2), (1, 2), 1),
       lambda x, w, b, o: L.clt_conv2d(x, w, b, _i64s(2, 1, 1, 2, 1, 2, 1), o),
       [hd((2, 3, 9, 8), -1, 1), hd((5, 3, 3, 3), -1, 1), hd((5,))])
    hc("conv2d unbatched g3", lambda x, w: F.conv2d(x, w, None, 1, 0, 1, 3),
       lambda x, w, o: L.clt_conv2d(x, w, None, _i64s(1, 1, 0, 0, 1, 1, 3), o),
       [hd((6, 7, 7), -1, 1), hd((9, 2, 2, 3), -1, 1)])
    hc("conv2d K=576", lambda x, w: F.conv2d(x, w),
       lambda x, w, o: L.clt_conv2d(x, w, None, None, o),
       [hd((1, 64, 6, 6), -1, 1), hd((4, 64, 3, 3), -1, 1)])
    hc("conv3d", lambda x, w, b: F.conv3d(x, w, b, (1, 2, 1), (1, 0, 1)),
       lambda x, w, b, o: L.clt_conv3d(x, w, b, _i64s(1, 2, 1, 1, 0, 1, 1, 1, 1, 1), o),
       [hd((2, 2, 4, 5, 6), -1, 1), hd((3, 2, 2, 3, 2), -1, 1), hd((3,))])
    hc("conv_transpose1d", lambda x, w, b: F.conv_transpose1d(x, w, b, 3, 1, 2, 1, 1),
       lambda x, w, b, o: L.clt_conv_transpose1d(x, w, b, _i64s(3, 1, 2, 1, 1), o),
       [hd((2, 3, 6), -1, 1), hd((3, 2, 4), -1, 1), hd((2,))])
    hc("conv_transpose2d g2", lambda x, w, b: F.conv_transpose2d(x, w, b, 2, (1, 0), 1, 2),
       lambda x, w, b, o: L.clt_conv_transpose2d(x, w, b, _i64s(2, 2, 1, 0, 1, 1, 2, 1, 1), o),
       [hd((2, 4, 5, 4), -1, 1), hd((4, 3, 3, 3), -1, 1), hd((6,))])
    hc("conv_transpose3d", lambda x, w: F.conv_transpose3d(x, w, None, (1, 2, 1)),
       lambda x, w, o: L.clt_conv_transpose3d(x, w, None,
                                              _i64s(1, 2, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1), o),
       [hd((1, 2, 3, 3, 4), -1, 1), hd((2, 3, 2, 2, 3), -1, 1)])
    # pooling
    x4 = hd((2, 3, 9, 8), special=True)
    hc("max_pool2d ceil dilated", lambda x: F.max_pool2d(x, (3, 2), (2, 1), 1, (1, 2), True),
       lambda x, o: L.clt_max_pool2d(x, _i64s(3, 2), _i64s(2, 1), _i64s(1, 1), _i64s(1, 2), 1, o),
       [x4], tol="exact")
    hc("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, False, False),
       lambda x, o: L.clt_avg_pool2d(x, _i64s(3, 3), _i64s(2, 2), _i64s(1, 1), 0, 0, o),
       [hd((2, 3, 9, 8))])
    hc("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1),
       lambda x, o: L.clt_max_pool1d(x, 3, 2, 1, 1, 0, o), [hd((2, 3, 12))], tol="exact")
    hc("avg_pool1d", lambda x: F.avg_pool1d(x, 4, 3, 2, True, True),
       lambda x, o: L.clt_avg_pool1d(x, 4, 3, 2, 1, 1, o), [hd((2, 3, 12))])
    hc("max_pool3d", lambda x: F.max_pool3d(x, 2, (1, 2, 2), 1),
       lambda x, o: L.clt_max_pool3d(x, _i64s(2, 2, 2), _i64s(1, 2, 2), _i64s(1, 1, 1), None, 0,
                                     o), [hd((2, 2, 4, 5, 6))], tol="exact")
    hc("avg_pool3d", lambda x: F.avg_pool3d(x, (2, 3, 2), 2, (1, 1, 0)),
       lambda x, o: L.clt_avg_pool3d(x, _i64s(2, 3, 2), _i64s(2, 2, 2), _i64s(1, 1, 0), 0, 1, o),
       [hd((2, 2, 4, 5, 6))])
    hc("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (4, 3)),
       lambda x, o: L.clt_adaptive_avg_pool2d(x, _i64s(4, 3), o), [hd((2, 3, 9, 7))])
    hc("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)),
       lambda x, o: L.clt_adaptive_avg_pool3d(x, _i64s(2, 3, 4), o), [hd((1, 2, 5, 6, 7))])

    def amax(x, o):
        i = P()
        st = L.clt_adaptive_max_pool2d(x, _i64s(3, 5), o, C.byref(i))
        L.clt_tensor_free(i)
        return st
    hc("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (3, 5)), amax,
       [hd((2, 3, 9, 7))], tol="exact")
    hc("max_pool2d indices", lambda x: F.max_pool2d(x, 2, 2, return_indices=True)[1],
       lambda x, o: L.clt_max_pool2d_with_indices(x, _i64s(2, 2), None, None, None, 0,
                                                  P(), o), [hd((2, 3, 8, 7))])
    hc("lp_pool2d", lambda x: F.lp_pool2d(x, 2.0, 2),
       lambda x, o: L.clt_lp_pool2d(x, 2.0, _i64s(2, 2), None, 0, o), [hd((2, 3, 6, 6), 0, 2)],
       tol="h2")
    # interpolation
    modes = {"nearest": 0, "bilinear": 1, "nearest-exact": 2, "linear": 3, "bicubic": 4,
             "trilinear": 5, "area": 6}
    for xs, size, mode, align in [((2, 3, 7), (12,), "linear", False),
                                  ((2, 3, 7), (12,), "linear", True),
                                  ((2, 3, 5, 4), (9, 7), "bilinear", False),
                                  ((2, 3, 5, 4), (9, 7), "bilinear", True),
                                  ((2, 3, 5, 4), (9, 7), "bicubic", False),
                                  ((2, 3, 5, 4), (8, 11), "nearest", None),
                                  ((2, 3, 5, 4), (8, 11), "nearest-exact", None),
                                  ((2, 3, 9, 8), (4, 3), "area", None),
                                  ((1, 2, 3, 4, 5), (5, 3, 7), "trilinear", False)]:
        hc("interpolate %s %s align=%s" % (mode, list(xs), align),
           lambda x, size=size, mode=mode, align=align:
           F.interpolate(x, size=size, mode=mode, align_corners=align),
           lambda x, o, size=size, mode=mode, align=align:
           L.clt_interpolate_nd(x, _i64s(*size), None, modes[mode], int(bool(align)), 0, o),
           [hd(xs)], tol="exact" if mode.startswith("nearest") else "ew")
    # padding, unfold, fold, grid_sample
    for mode, cm in (("reflect", 1), ("replicate", 2), ("constant", 0), ("circular", 3)):
        hc("pad %s" % mode, lambda x, mode=mode: F.pad(x, (2, 1, 1, 3), mode=mode),
           lambda x, o, cm=cm: L.clt_pad(x, _i64s(2, 1, 1, 3), 4, cm, 0.0, o),
           [hd((2, 3, 5, 6))], tol="exact")
    hc("unfold", lambda x: F.unfold(x, (2, 3), padding=(0, 1)),
       lambda x, o: L.clt_unfold(x, _i64s(2, 3), _i64s(1, 1, 0, 1, 1, 1), o),
       [hd((2, 3, 5, 6))], tol="exact")
    hc("fold", lambda x: F.fold(x, (4, 5), 2),
       lambda x, o: L.clt_fold(x, _i64s(4, 5), _i64s(2, 2), None, o), [hd((2, 12, 12))])
    hc("grid_sample bilinear border", lambda x, g: F.grid_sample(x, g, "bilinear", "border",
                                                                 False),
       lambda x, g, o: L.clt_grid_sample(x, g, 0, 1, 0, o),
       [hd((2, 3, 6, 5)), hd((2, 4, 3, 2), -1.1, 1.1)])
def grad2():
    """clamp with tensor bounds and segment_reduce: values, dtypes, errors."""
    f, d = torch.float32, torch.float64
    proto("clt_clamp_tensor", [P, P, P, PP])
    proto("clt_clamp_min_tensor", [P, P, PP])
    proto("clt_clamp_max_tensor", [P, P, PP])
    for dt in DTYPES:
        a = data((3, 5), dt, special=True)
        lo, hi = data((5,), dt, special=True), data((3, 1), dt, special=True)
        check("clamp_tensor %s" % dn(dt), lambda x, l, h: torch.clamp(x, l, h),
              L.clt_clamp_tensor, [a, lo, hi], tol="exact")
        check("clamp_tensor min only %s" % dn(dt), lambda x, l: torch.clamp(x, l),
              lambda x, l, o: L.clt_clamp_tensor(x, l, None, o), [a, lo], tol="exact")
        check("clamp_tensor max only %s" % dn(dt), lambda x, h: torch.clamp(x, None, h),
              lambda x, h, o: L.clt_clamp_tensor(x, None, h, o), [a, hi], tol="exact")
        check("clamp_min_tensor %s" % dn(dt), torch.clamp_min, L.clt_clamp_min_tensor,
              [a, lo], tol="exact")
        check("clamp_max_tensor %s" % dn(dt), torch.clamp_max, L.clt_clamp_max_tensor,
              [a, hi], tol="exact")
    # promotion: int with a float bound, uint8 with a 0-d int32, float32 with float64
    for a, l, h in ((data((4,), torch.int64), data((4,), f), data((1,), torch.int32)),
                    (data((4,), torch.uint8), torch.tensor(3, dtype=torch.int32), None),
                    (data((2, 3), f), data((3,), d), data((2, 1), f)),
                    (data((2, 3), f), torch.tensor(0.5, dtype=d), None),
                    (data((2, 3), torch.bool), data((3,), torch.bool), None)):
        ins = [a, l] + ([h] if h is not None else [])
        check("clamp_tensor promote %s %s %s" % (dn(a.dtype), dn(l.dtype),
                                                 dn(h.dtype) if h is not None else "-"),
              lambda *t: torch.clamp(t[0], t[1], t[2] if len(t) > 2 else None),
              lambda *p: L.clt_clamp_tensor(p[0], p[1], p[2] if len(p) > 3 else None, p[-1]),
              ins, tol="exact")
    # errors: shapes that do not broadcast, both bounds absent
    check("clamp_tensor bad broadcast", lambda x, l: torch.clamp(x, l), lambda x, l, o:
          L.clt_clamp_tensor(x, l, None, o), [data((3, 4), f), data((3,), f)])
    check("clamp_tensor no bound", lambda x: torch.clamp(x, None, None),
          lambda x, o: L.clt_clamp_tensor(x, None, None, o), [data((3,), f)])
    # segment_reduce
    proto("clt_segment_reduce", [P, C.c_char_p, P, P, C.c_int, C.c_int,
                                 C.POINTER(C.c_double), PP])
    lens = torch.tensor([2, 0, 3, 1, 0, 4])
    offs = torch.tensor([0, 2, 2, 5, 6, 6, 10])
    for dt in (f, d, torch.float16):
        x = data((10, 3), dt)
        x[3, 1] = float("nan")
        x[0, 0] = x[1, 0]
        for red in ("sum", "mean", "max", "min", "prod"):
            for init in (None, 1.5, -2.0):
                ip = C.byref(C.c_double(init)) if init is not None else None
                tol = "red" if dt != torch.float16 else "h2"
                check("segment_reduce %s %s lengths initial=%s" % (dn(dt), red, init),
                      lambda t, ln, r=red, i=init: torch.segment_reduce(t, r, lengths=ln,
                                                                          initial=i),
                      lambda t, ln, o, r=red, ip=ip: L.clt_segment_reduce(
                          t, r.encode(), ln, None, 0, 0, ip, o),
                      [x, lens], tol=tol)
                check("segment_reduce %s %s offsets initial=%s" % (dn(dt), red, init),
                      lambda t, of, r=red, i=init: torch.segment_reduce(t, r, offsets=of,
                                                                          initial=i),
                      lambda t, of, o, r=red, ip=ip: L.clt_segment_reduce(
                          t, r.encode(), None, of, 0, 0, ip, o),
                      [x, offs], tol=tol)
    x = data((2, 6, 3), d)
    l2 = torch.tensor([[2, 4], [3, 3]], dtype=torch.int32)
    for red in ("sum", "mean", "max", "min", "prod"):
        for ax in (1, -2):
            check("segment_reduce %s axis %d" % (red, ax),
                  lambda t, ln, r=red, a=ax: torch.segment_reduce(t, r, lengths=ln, axis=a),
                  lambda t, ln, o, r=red, a=ax: L.clt_segment_reduce(t, r.encode(), ln, None,
                                                                     a, 0, None, o),
                  [x, l2], tol="red")
    x1 = data((6,), d)
    for name, ln, ax, unsafe in (("bad sum", torch.tensor([2, 3]), 0, 0),
                                 ("negative", torch.tensor([2, -1, 5]), 0, 0),
                                 ("axis not last of lengths", torch.tensor([6]), -1, 0),
                                 ("float lengths", torch.tensor([6.0]), 0, 0)):
        check("segment_reduce error %s" % name,
              lambda t, l_, a=ax, u=unsafe: torch.segment_reduce(t, "sum", lengths=l_, axis=a,
                                                                 unsafe=bool(u)),
              lambda t, l_, o, a=ax, u=unsafe: L.clt_segment_reduce(t, b"sum", l_, None, a, u,
                                                                    None, o),
              [x1, ln])
    check("segment_reduce error int data", lambda t, l_: torch.segment_reduce(t, "sum", lengths=l_),
          lambda t, l_, o: L.clt_segment_reduce(t, b"sum", l_, None, 0, 0, None, o),
          [data((6,), torch.int64), torch.tensor([6])])
    check("segment_reduce error reduce", lambda t, l_: torch.segment_reduce(t, "std", lengths=l_),
          lambda t, l_, o: L.clt_segment_reduce(t, b"std", l_, None, 0, 0, None, o),
          [x1, torch.tensor([6])])
    check("segment_reduce unsafe", lambda t, l_: torch.segment_reduce(t, "sum", lengths=l_,
                                                                      unsafe=True),
          lambda t, l_, o: L.clt_segment_reduce(t, b"sum", l_, None, 0, 1, None, o),
          [x1, torch.tensor([2, 3])], tol="red")


# ---- sparse COO tensors (cltensor/sparse.h) ----------------------------------

def _sp_protos():
    proto("clt_sparse_coo_tensor", [P, P, I64P, C.c_int, C.c_int, PP])
    proto("clt_sparse_free", [P], None)
    proto("clt_sparse_indices", [P, PP])
    proto("clt_sparse_values", [P, PP])
    proto("clt_sparse_nnz", [P], C.c_int64)
    proto("clt_sparse_is_coalesced", [P], C.c_int)
    proto("clt_sparse_coalesce", [P, PP])
    proto("clt_sparse_to_dense", [P, PP])
    proto("clt_tensor_to_sparse", [P, C.c_int, PP])
    proto("clt_sparse_mm", [P, P, PP])
    proto("clt_sparse_addmm", [P, P, P, C.c_double, C.c_double, PP])
    proto("clt_sparse_sum", [P, PP])
    proto("clt_sparse_sum_dims", [P, C.POINTER(C.c_int), C.c_int, PP, PP])
    proto("clt_sparse_add", [P, P, PP])
    proto("clt_sparse_add_dense", [P, P, PP])
    proto("clt_sparse_mul_scalar", [P, C.c_double, PP])
    proto("clt_sparse_transpose", [P, C.c_int, C.c_int, PP])
    proto("clt_sparse_softmax", [P, C.c_int, PP])
    proto("clt_sparse_log_softmax", [P, C.c_int, PP])


def _sp_make(ci, cv, size, check=1):
    """A cltensor sparse handle from uploaded indices and values, or None
    with the status."""
    s = P()
    st = L.clt_sparse_coo_tensor(ci, cv, shape_arr(size), len(size), check, C.byref(s))
    return (s if st == 0 else None), st


def _sp_then(size, then):
    """cfn for check(): builds the sparse tensor of (indices, values), runs
    then(handle, out) and frees the handle."""
    def cfn(ci, cv, *rest):
        o = rest[-1]
        s, st = _sp_make(ci, cv, size)
        if s is None:
            o._obj.value = None  # the op after it never ran: its out as a failure leaves it
            return st
        try:
            return then(s, *rest[:-1], o)
        finally:
            L.clt_sparse_free(s)
    return cfn


def _sp_coalesced(part):
    """then(): the coalesced tensor's indices (part 0) or values (part 1)."""
    def then(s, o):
        c = P()
        st = L.clt_sparse_coalesce(s, C.byref(c))
        if st:
            return st
        try:
            if not L.clt_sparse_is_coalesced(c):
                return 99
            return (L.clt_sparse_indices if part == 0 else L.clt_sparse_values)(c, o)
        finally:
            L.clt_sparse_free(c)
    return then


def _sp_rand(size, sd, nnz, dt, dup=True):
    """Random indices (with repeats when dup) and values for size."""
    idx = torch.stack([torch.randint(0, max(1, min(size[k], 3 if dup else size[k])), (nnz,),
                                     generator=G) for k in range(sd)])
    vals = data((nnz,) + tuple(size[sd:]), dt)
    return idx, vals


def _sp_sum_dims(dims):
    def then(s, o):
        d, sp = P(), P()
        arr = (C.c_int * len(dims))(*dims)
        st = L.clt_sparse_sum_dims(s, arr, len(dims), C.byref(d), C.byref(sp))
        if st:
            return st
        if d.value is not None:
            o._obj.value = d.value
            return 0
        try:
            return L.clt_sparse_to_dense(sp, o)
        finally:
            L.clt_sparse_free(sp)
    return then


def _sp_dense_sum(t, dims):
    r = torch.sparse.sum(t, dims)
    return r.to_dense() if r.is_sparse else r


def sparse():
    _sp_protos()
    cases = [((5, 4), 2, 12), ((3, 4, 2), 2, 9), ((4, 3, 2), 1, 6), ((2, 3, 4), 3, 20),
             ((6, 5), 2, 0), ((3, 3), 2, 1)]
    for dt in FLOATS:
        for size, sd, nnz in cases:
            idx, vals = _sp_rand(size, sd, nnz, dt)
            tag = "%s %s sd=%d nnz=%d" % (dn(dt), size, sd, nnz)
            ts = lambda i, v: torch.sparse_coo_tensor(i, v, size)
            check("sparse coalesce indices " + tag, lambda i, v: ts(i, v).coalesce().indices(),
                  _sp_then(size, _sp_coalesced(0)), [idx, vals], tol="exact")
            check("sparse coalesce values " + tag, lambda i, v: ts(i, v).coalesce().values(),
                  _sp_then(size, _sp_coalesced(1)), [idx, vals], tol="red")
            check("sparse to_dense " + tag, lambda i, v: ts(i, v).to_dense(),
                  _sp_then(size, L.clt_sparse_to_dense), [idx, vals], tol="red")
            check("sparse sum " + tag, lambda i, v: torch.sparse.sum(ts(i, v)),
                  _sp_then(size, L.clt_sparse_sum), [idx, vals], tol="red")
            nd = len(size)
            for dims in [(0,), (nd - 1,), tuple(range(sd)), (0, nd - 1)]:
                dims = tuple(sorted(set(dims)))
                if len(dims) == nd:
                    continue
                check("sparse sum dims %s %s" % (dims, tag),
                      lambda i, v, dims=dims: _sp_dense_sum(ts(i, v), dims),
                      _sp_then(size, _sp_sum_dims(list(dims))), [idx, vals], tol="red")
            check("sparse mul_scalar " + tag, lambda i, v: (ts(i, v) * 2.5).to_dense(),
                  _sp_then(size, lambda s, o: _sp_chain(L.clt_sparse_mul_scalar(s, 2.5, C.byref(_SPT)), o)),
                  [idx, vals], tol="red")
            if sd >= 2:
                check("sparse transpose " + tag, lambda i, v: ts(i, v).transpose(0, 1).to_dense(),
                      _sp_then(size, lambda s, o: _sp_chain(L.clt_sparse_transpose(s, 0, 1, C.byref(_SPT)), o)),
                      [idx, vals], tol="red")
            for dim in range(nd):
                for lg in (0, 1):
                    tfn = torch.sparse.log_softmax if lg else torch.sparse.softmax
                    cfn = L.clt_sparse_log_softmax if lg else L.clt_sparse_softmax
                    check("sparse %s dim=%d %s" % ("log_softmax" if lg else "softmax", dim, tag),
                          lambda i, v, tfn=tfn, dim=dim: tfn(ts(i, v), dim).to_dense(),
                          _sp_then(size, lambda s, o, cfn=cfn, dim=dim:
                                   _sp_chain(cfn(s, dim, C.byref(_SPT)), o)),
                          [idx, vals], tol="red")
            dense = data(size, dt)
            check("sparse add_dense " + tag, lambda i, v, d: d + ts(i, v),
                  _sp_then(size, lambda s, d, o: L.clt_sparse_add_dense(d, s, o)),
                  [idx, vals, dense], tol="red")
            i2, v2 = _sp_rand(size, sd, 5, dt)
            check("sparse add " + tag, lambda i, v, j, w: (ts(i, v) + ts(j, w)).to_dense(),
                  _sp_add(size), [idx, vals, i2, v2], tol="red")
        # to_sparse: indices and values
        for shape, sd in [((4, 5), 2), ((4, 5), 1), ((3, 2, 4), 2), ((3, 2, 4), 3), ((2, 3), 1)]:
            x = data(shape, dt)
            x = torch.where(torch.rand(shape, generator=G) < 0.6, torch.zeros((), dtype=dt), x)
            if shape == (2, 3):
                x = torch.zeros(shape, dtype=dt)
            tag = "%s %s sd=%d" % (dn(dt), shape, sd)
            for part in (0, 1):
                check("sparse to_sparse %s %s" % ("indices" if part == 0 else "values", tag),
                      lambda t, part=part: (t.to_sparse(sd).indices() if part == 0
                                            else t.to_sparse(sd).values()),
                      _sp_to_sparse(sd, part), [x], tol="exact")
        # mm and addmm
        for n, m, p, nnz in [(5, 4, 3, 10), (7, 6, 1, 20), (3, 8, 5, 0), (1, 1, 1, 1)]:
            idx, vals = _sp_rand((n, m), 2, nnz, dt, dup=nnz > 5)
            b = data((m, p), dt)
            tag = "%s [%d, %d] @ [%d, %d] nnz=%d" % (dn(dt), n, m, m, p, nnz)
            check("sparse mm " + tag, lambda i, v, b: torch.sparse.mm(torch.sparse_coo_tensor(i, v, (n, m)), b),
                  _sp_then((n, m), L.clt_sparse_mm), [idx, vals, b], tol="mm")
            inp = data((p,), dt)
            check("sparse addmm " + tag,
                  lambda i, v, b, x: torch.sparse.addmm(x, torch.sparse_coo_tensor(i, v, (n, m)), b,
                                                        beta=0.5, alpha=-1.5),
                  _sp_then((n, m), lambda s, b, x, o: L.clt_sparse_addmm(x, s, b, 0.5, -1.5, o)),
                  [idx, vals, b, inp], tol="mm")
        idx, vals = _sp_rand((3, 4), 2, 6, dt)
        check("sparse mm shape error " + dn(dt),
              lambda i, v, b: torch.sparse.mm(torch.sparse_coo_tensor(i, v, (3, 4)), b),
              _sp_then((3, 4), L.clt_sparse_mm), [idx, vals, data((5, 2), dt)])
        other = torch.float64 if dt == torch.float32 else torch.float32
        check("sparse mm dtype error " + dn(dt),
              lambda i, v, b: torch.sparse.mm(torch.sparse_coo_tensor(i, v, (3, 4)), b),
              _sp_then((3, 4), L.clt_sparse_mm), [idx, vals, data((4, 2), other)])
    idx, vals = _sp_rand((3, 4), 2, 6, torch.float32)
    check("sparse softmax dim=-1 refused",
          lambda i, v: torch.sparse.softmax(torch.sparse_coo_tensor(i, v, (3, 4)), -1).to_dense(),
          _sp_then((3, 4), lambda s, o: _sp_chain(L.clt_sparse_softmax(s, -1, C.byref(_SPT)), o)),
          [idx, vals])
    # construction refused where torch refuses
    for name, i, v, size in [
            ("index past the size", torch.tensor([[5]]), torch.tensor([1.0]), (2,)),
            ("negative index", torch.tensor([[-1]]), torch.tensor([1.0]), (2,)),
            ("nnz mismatch", torch.tensor([[1, 0]]), torch.tensor([1.0]), (2,)),
            ("ndim mismatch", torch.tensor([[1]]), torch.tensor([1.0]), (2, 3)),
            ("dense sizes", torch.tensor([[1], [2]]), torch.tensor([[1.0, 2]]), (2, 3, 3))]:
        check("sparse coo_tensor refuses: " + name,
              lambda i, v, size=size: torch.sparse_coo_tensor(i, v, size).to_dense(),
              _sp_then(size, L.clt_sparse_to_dense), [i, v])


_SPT = P()


def _sp_chain(st, o):
    """to_dense of the handle an op left in _SPT, then frees it."""
    if st:
        o._obj.value = None  # to_dense never ran
        return st
    try:
        return L.clt_sparse_to_dense(_SPT, o)
    finally:
        L.clt_sparse_free(_SPT)


def _sp_add(size):
    def cfn(ci, cv, cj, cw, o):
        a, st = _sp_make(ci, cv, size)
        if a is None:
            return st
        b, st = _sp_make(cj, cw, size)
        if b is None:
            L.clt_sparse_free(a)
            return st
        r = P()
        try:
            st = L.clt_sparse_add(a, b, C.byref(r))
            if st:
                return st
            if not L.clt_sparse_is_coalesced(r):
                return 99
            st = L.clt_sparse_to_dense(r, o)
            L.clt_sparse_free(r)
            return st
        finally:
            L.clt_sparse_free(a)
            L.clt_sparse_free(b)
    return cfn


def _sp_to_sparse(sd, part):
    def cfn(t, o):
        s = P()
        st = L.clt_tensor_to_sparse(t, sd, C.byref(s))
        if st:
            return st
        try:
            return (L.clt_sparse_indices if part == 0 else L.clt_sparse_values)(s, o)
        finally:
            L.clt_sparse_free(s)
    return cfn

# ---- sparse CSR and CSC tensors (cltensor/sparse.h) -------------------------

def _csr_protos():
    _sp_protos()
    for n in ("csr", "csc"):
        proto("clt_sparse_%s_tensor" % n, [P, P, P, I64P, C.c_int, PP])
        proto("clt_tensor_to_sparse_%s" % n, [P, PP])
        proto("clt_sparse_to_sparse_%s" % n, [P, PP])
    proto("clt_sparse_to_sparse_coo", [P, PP])
    for n in ("crow", "col", "ccol", "row"):
        proto("clt_sparse_%s_indices" % n, [P, PP])
    proto("clt_sparse_layout", [P], C.c_int)
    proto("clt_sparse_mv", [P, P, PP])
    proto("clt_sparse_sampled_addmm", [P, P, P, C.c_double, C.c_double, PP])
    proto("clt_tensor_sparse_mask", [P, P, PP])
    proto("clt_sparse_hspmm", [P, P, PP])


def _csr_then(csc, size, then, check=1):
    """cfn for check(): builds the CSR (CSC) tensor of (compressed, plain,
    values), runs then(handle, *rest, out) and frees the handle."""
    def cfn(cc, cp, cv, *rest):
        o = rest[-1]
        s = P()
        mk = L.clt_sparse_csc_tensor if csc else L.clt_sparse_csr_tensor
        st = mk(cc, cp, cv, shape_arr(size) if size is not None else None, check, C.byref(s))
        if st:
            o._obj.value = None  # nothing after it ran
            return st
        try:
            return then(s, *rest[:-1], o)
        finally:
            L.clt_sparse_free(s)
    return cfn


def _csr_part(conv, part):
    """then(): the part-th tensor of the handle conv makes (conv None: the
    handle itself): 0 compressed, 1 plain, 2 values, 3 COO indices."""
    def then(s, o):
        h = s
        if conv is not None:
            h = P()
            st = conv(s, C.byref(h))
            if st:
                return st
        try:
            lay = L.clt_sparse_layout(h)
            get = [[L.clt_sparse_indices, L.clt_sparse_indices],
                   [L.clt_sparse_crow_indices, L.clt_sparse_ccol_indices],
                   [L.clt_sparse_col_indices, L.clt_sparse_row_indices]]
            if part == 2:
                return L.clt_sparse_values(h, o)
            if part == 3:
                return L.clt_sparse_indices(h, o)
            return get[1 + part][lay - 1](h, o)
        finally:
            if conv is not None:
                L.clt_sparse_free(h)
    return then


def _csr_dense_part(csc, part):
    """cfn of a dense t: t.to_sparse_csr() (csc) and its part."""
    def cfn(t, o):
        s = P()
        st = (L.clt_tensor_to_sparse_csc if csc else L.clt_tensor_to_sparse_csr)(t, C.byref(s))
        if st:
            return st
        try:
            return _csr_part(None, part)(s, o)
        finally:
            L.clt_sparse_free(s)
    return cfn


def _tpart(t, part):
    if part == 2:
        return t.values()
    if part == 3:
        return t.coalesce().indices() if t.layout == torch.sparse_coo else t.indices()
    if t.layout == torch.sparse_csr:
        return t.crow_indices() if part == 0 else t.col_indices()
    return t.ccol_indices() if part == 0 else t.row_indices()


def _csr_rand(n, m, dt, density=0.4):
    x = data((n, m), dt)
    return torch.where(torch.rand((n, m), generator=G) < density, x, torch.zeros((), dtype=dt))


def _csr_args(t):
    if t.layout == torch.sparse_csr:
        return [t.crow_indices(), t.col_indices(), t.values()]
    return [t.ccol_indices(), t.row_indices(), t.values()]


def sparse_csr():
    _csr_protos()
    mk = {0: torch.sparse_csr_tensor, 1: torch.sparse_csc_tensor}
    for dt in FLOATS:
        for n, m in [(5, 4), (3, 7), (1, 1), (4, 3)]:
            x = _csr_rand(n, m, dt)
            if (n, m) == (4, 3):
                x = torch.zeros((n, m), dtype=dt)
            for csc in (0, 1):
                lay = "csc" if csc else "csr"
                sp = x.to_sparse_csc() if csc else x.to_sparse_csr()
                args = _csr_args(sp)
                tag = "%s %s [%d, %d] nnz=%d" % (lay, dn(dt), n, m, sp.values().shape[0])
                ts = lambda c, p, v, csc=csc: mk[csc](c, p, v, (n, m))
                check("sparse_csr to_dense " + tag, lambda c, p, v, ts=ts: ts(c, p, v).to_dense(),
                      _csr_then(csc, (n, m), L.clt_sparse_to_dense), args, tol="exact")
                check("sparse_csr inferred size " + tag,
                      lambda c, p, v, csc=csc: mk[csc](c, p, v).to_dense(),
                      _csr_then(csc, None, L.clt_sparse_to_dense), args, tol="exact")
                for part in range(3):
                    check("sparse_csr of dense part %d %s" % (part, tag),
                          lambda t, part=part, csc=csc: _tpart(t.to_sparse_csc() if csc
                                                             else t.to_sparse_csr(), part),
                          _csr_dense_part(csc, part), [x], tol="exact")
                    other = 1 - csc
                    check("sparse_csr to other layout part %d %s" % (part, tag),
                          lambda c, p, v, ts=ts, part=part, csc=csc:
                              _tpart(ts(c, p, v).to_sparse_csr() if csc
                                     else ts(c, p, v).to_sparse_csc(), part),
                          _csr_then(csc, (n, m), _csr_part(
                              L.clt_sparse_to_sparse_csr if csc else L.clt_sparse_to_sparse_csc,
                              part)), args, tol="exact")
                check("sparse_csr to_sparse coo indices " + tag,
                      lambda c, p, v, ts=ts: ts(c, p, v).to_sparse().indices(),
                      _csr_then(csc, (n, m), lambda s, o: _sp_chain_idx(s, o)), args, tol="exact")
                b = data((m, 3), dt)
                check("sparse_csr mm " + tag, lambda c, p, v, b, ts=ts: torch.sparse.mm(ts(c, p, v), b),
                      _csr_then(csc, (n, m), L.clt_sparse_mm), args + [b], tol="mm")
                inp = data((n, 3), dt)
                check("sparse_csr addmm " + tag,
                      lambda c, p, v, b, x, ts=ts: torch.addmm(x, ts(c, p, v), b, beta=0.5, alpha=-2),
                      _csr_then(csc, (n, m), lambda s, b, x, o: L.clt_sparse_addmm(x, s, b, 0.5, -2, o)),
                      args + [b, inp], tol="mm")
                vec = data((m,), dt)
                # torch's CPU build without MKL refuses mv of CSR: the COO product
                check("sparse_csr mv " + tag,
                      lambda c, p, v, w, ts=ts: torch.mv(ts(c, p, v).to_sparse(), w),
                      _csr_then(csc, (n, m), L.clt_sparse_mv), args + [vec], tol="mm")
                check("sparse_csr sum " + tag, lambda c, p, v, ts=ts: torch.sum(ts(c, p, v)),
                      _csr_then(csc, (n, m), L.clt_sparse_sum), args, tol="red")
                check("sparse_csr t " + tag, lambda c, p, v, ts=ts: ts(c, p, v).t().to_dense(),
                      _csr_then(csc, (n, m), lambda s, o: _sp_chain(
                          L.clt_sparse_transpose(s, 0, 1, C.byref(_SPT)), o)), args, tol="exact")
                check("sparse_csr t compressed " + tag,
                      lambda c, p, v, ts=ts: _tpart(ts(c, p, v).t(), 0),
                      _csr_then(csc, (n, m), lambda s, o: _csr_t_part(s, 0, o)), args, tol="exact")
                # torch 1.13 refuses CSR * scalar (sparse_mask_sparse_csr): the dense product
                check("sparse_csr mul_scalar " + tag,
                      lambda c, p, v, ts=ts: ts(c, p, v).to_dense() * 2.5,
                      _csr_then(csc, (n, m), lambda s, o: _sp_chain(
                          L.clt_sparse_mul_scalar(s, 2.5, C.byref(_SPT)), o)), args, tol="ew")
                y = _csr_rand(n, m, dt)
                sy = y.to_sparse_csc() if csc else y.to_sparse_csr()
                # torch's CPU build without MKL refuses CSR + CSR: COO's sum, converted
                for part in range(3):
                    check("sparse_csr add part %d %s" % (part, tag),
                          lambda c, p, v, c2, p2, v2, ts=ts, part=part, csc=csc: _tpart(
                              (lambda r: r.to_sparse_csc() if csc else r.to_sparse_csr())(
                                  (ts(c, p, v).to_sparse() + ts(c2, p2, v2).to_sparse()).coalesce()),
                              part),
                          _csr_add(csc, (n, m), part), args + _csr_args(sy), tol="red")
                d = data((n, m), dt)
                check("sparse_csr sparse_mask " + tag,
                      lambda c, p, v, d, ts=ts: d.sparse_mask(ts(c, p, v)).values(),
                      _csr_then(csc, (n, m), lambda s, d, o: _csr_mask(d, s, o)), args + [d],
                      tol="exact")
            # sampled_addmm (CSR only)
            sp = x.to_sparse_csr()
            m1, m2 = data((n, 2), dt), data((2, m), dt)
            check("sparse_csr sampled_addmm %s [%d, %d]" % (dn(dt), n, m),
                  lambda c, p, v, a, b: torch.sparse.sampled_addmm(
                      torch.sparse_csr_tensor(c, p, v, (n, m)), a, b, beta=0.5, alpha=1.5).values(),
                  _csr_then(0, (n, m), lambda s, a, b, o: _csr_sampled(s, a, b, 0.5, 1.5, o)),
                  _csr_args(sp) + [m1, m2], tol="mm")
        # COO -> CSR / CSC with duplicates, and COO masks
        idx, vals = _sp_rand((4, 5), 2, 9, dt)
        for csc in (0, 1):
            for part in range(3):
                check("sparse_csr coo to %s part %d %s" % ("csc" if csc else "csr", part, dn(dt)),
                      lambda i, v, part=part, csc=csc: _tpart(
                          torch.sparse_coo_tensor(i, v, (4, 5)).to_sparse_csc() if csc else
                          torch.sparse_coo_tensor(i, v, (4, 5)).to_sparse_csr(), part),
                      _sp_then((4, 5), _csr_part(L.clt_sparse_to_sparse_csc if csc
                                                 else L.clt_sparse_to_sparse_csr, part)),
                      [idx, vals], tol="red")
        idx, vals = _sp_rand((4, 3, 2), 1, 5, dt)
        d = data((4, 3, 2), dt)
        check("sparse_csr sparse_mask coo hybrid " + dn(dt),
              lambda i, v, d: d.sparse_mask(torch.sparse_coo_tensor(i, v, (4, 3, 2)).coalesce()).values(),
              _sp_then((4, 3, 2), lambda s, d, o: _csr_mask_coalesced(d, s, o)), [idx, vals, d],
              tol="exact")
        check("sparse_csr sparse_mask uncoalesced refused " + dn(dt),
              lambda i, v, d: d.sparse_mask(torch.sparse_coo_tensor(i, v, (4, 3, 2))).values(),
              _sp_then((4, 3, 2), lambda s, d, o: _csr_mask(d, s, o)), [idx, vals, d])
    # hspmm: the hybrid COO product's indices and values (COO operands)
    for dt in FLOATS:
        for n, m, p, nnz in [(5, 4, 3, 8), (3, 6, 1, 2), (1, 1, 1, 1)]:
            idx, vals = _sp_rand((n, m), 2, nnz, dt)
            b = data((m, p), dt)
            for part in (0, 1):
                check("sparse_csr hspmm %s %s [%d, %d] @ [%d, %d]" % (("indices", "values")[part], dn(dt), n, m, m, p),
                      lambda i, v, b, n=n, m=m, part=part: (lambda r: r._indices() if part == 0 else r._values())(
                          torch.hspmm(torch.sparse_coo_tensor(i, v, (n, m)), b)),
                      _sp_then((n, m), lambda s, b, o, part=part: _csr_hspmm(s, b, part, o)),
                      [idx, vals, b], tol="mm")
    idx, vals = _sp_rand((3, 4), 2, 5, torch.float32)
    for name, b in [("sizes", data((5, 2), torch.float32)), ("vector", data((4,), torch.float32)),
                    ("dtypes", data((4, 2), torch.float64))]:
        check("sparse_csr hspmm refuses: " + name,
              lambda i, v, b: torch.hspmm(torch.sparse_coo_tensor(i, v, (3, 4)), b)._values(),
              _sp_then((3, 4), lambda s, b, o: _csr_hspmm(s, b, 1, o)), [idx, vals, b])
    # construction refused where torch refuses
    L64 = lambda v: torch.tensor(v, dtype=torch.int64)
    for name, c, p, v, size in [
            ("crow[0] != 0", L64([1, 1, 2]), L64([0, 1]), torch.tensor([1., 2]), (2, 3)),
            ("crow[-1] != nnz", L64([0, 1, 3]), L64([0, 1]), torch.tensor([1., 2]), (2, 3)),
            ("crow decreasing", L64([0, 3, 2]), L64([0, 1]), torch.tensor([1., 2]), (2, 3)),
            ("col past ncols", L64([0, 1, 2]), L64([0, 5]), torch.tensor([1., 2]), (2, 3)),
            ("negative col", L64([0, 1, 2]), L64([0, -1]), torch.tensor([1., 2]), (2, 3)),
            ("unsorted cols", L64([0, 2, 2]), L64([1, 0]), torch.tensor([1., 2]), (2, 3)),
            ("repeated cols", L64([0, 2, 2]), L64([1, 1]), torch.tensor([1., 2]), (2, 3)),
            ("nnz mismatch", L64([0, 1, 2]), L64([0, 1]), torch.tensor([1., 2, 3]), (2, 3)),
            ("rows mismatch", L64([0, 1, 2]), L64([0, 1]), torch.tensor([1., 2]), (3, 3)),
            ("index dtypes", L64([0, 1, 2]), torch.tensor([0, 1], dtype=torch.int32),
             torch.tensor([1., 2]), (2, 3)),
            ("float indices", torch.tensor([0., 1, 2]), torch.tensor([0., 1]), torch.tensor([1., 2]),
             (2, 3))]:
        for csc in (0, 1):
            check("sparse_csr %s_tensor refuses: %s" % ("csc" if csc else "csr", name),
                  lambda c, p, v, csc=csc, size=size: mk[csc](c, p, v, size).to_dense(),
                  _csr_then(csc, size, L.clt_sparse_to_dense), [c, p, v])
    x = _csr_rand(3, 4, torch.float32).to_sparse_csr()
    for name, a, b in [("inner sizes", data((3, 2), torch.float32), data((5, 4), torch.float32)),
                       ("rows", data((2, 2), torch.float32), data((2, 4), torch.float32)),
                       ("cols", data((3, 2), torch.float32), data((2, 5), torch.float32)),
                       ("dtypes", data((3, 2), torch.float64), data((2, 4), torch.float32)),
                       ("vector", data((2,), torch.float32), data((2, 4), torch.float32))]:
        check("sparse_csr sampled_addmm refuses: " + name,
              lambda c, p, v, a, b: torch.sparse.sampled_addmm(
                  torch.sparse_csr_tensor(c, p, v, (3, 4)), a, b).values(),
              _csr_then(0, (3, 4), lambda s, a, b, o: _csr_sampled(s, a, b, 1, 1, o)),
              _csr_args(x) + [a, b])
    check("sparse_csr sampled_addmm refuses csc",
          lambda c, p, v, a, b: torch.sparse.sampled_addmm(
              torch.sparse_csc_tensor(c, p, v, (3, 4)), a, b).values(),
          _csr_then(1, (3, 4), lambda s, a, b, o: _csr_sampled(s, a, b, 1, 1, o)),
          _csr_args(_csr_rand(3, 4, torch.float32).to_sparse_csc()) +
          [data((3, 2), torch.float32), data((2, 4), torch.float32)])
    check("sparse_csr mv refuses a size",
          lambda c, p, v, w: torch.mv(torch.sparse_csr_tensor(c, p, v, (3, 4)).to_sparse(), w),
          _csr_then(0, (3, 4), L.clt_sparse_mv), _csr_args(x) + [data((5,), torch.float32)])
    check("sparse_csr sparse_mask refuses sizes",
          lambda c, p, v, d: d.sparse_mask(torch.sparse_csr_tensor(c, p, v, (3, 4))).values(),
          _csr_then(0, (3, 4), lambda s, d, o: _csr_mask(d, s, o)),
          _csr_args(x) + [data((3, 5), torch.float32)])


def _sp_chain_idx(s, o):
    """The COO indices of s.to_sparse(), in the compressed order (torch's
    of a CSC tensor are in column order)."""
    h = P()
    st = L.clt_sparse_to_sparse_coo(s, C.byref(h))
    if st:
        return st
    try:
        return L.clt_sparse_indices(h, o)
    finally:
        L.clt_sparse_free(h)


def _csr_t_part(s, part, o):
    t = P()
    st = L.clt_sparse_transpose(s, 0, 1, C.byref(t))
    if st:
        return st
    try:
        return _csr_part(None, part)(t, o)
    finally:
        L.clt_sparse_free(t)


def _csr_add(csc, size, part):
    def cfn(c, p, v, c2, p2, v2, o):
        a, b, r = P(), P(), P()
        mkf = L.clt_sparse_csc_tensor if csc else L.clt_sparse_csr_tensor
        st = mkf(c, p, v, shape_arr(size), 1, C.byref(a))
        if st:
            return st
        try:
            st = mkf(c2, p2, v2, shape_arr(size), 1, C.byref(b))
            if st:
                return st
            try:
                st = L.clt_sparse_add(a, b, C.byref(r))
                if st:
                    return st
                try:
                    return _csr_part(None, part)(r, o)
                finally:
                    L.clt_sparse_free(r)
            finally:
                L.clt_sparse_free(b)
        finally:
            L.clt_sparse_free(a)
    return cfn


def _csr_mask(d, s, o):
    r = P()
    st = L.clt_tensor_sparse_mask(d, s, C.byref(r))
    if st:
        o._obj.value = None
        return st
    try:
        return L.clt_sparse_values(r, o)
    finally:
        L.clt_sparse_free(r)


def _csr_mask_coalesced(d, s, o):
    c = P()
    st = L.clt_sparse_coalesce(s, C.byref(c))
    if st:
        return st
    try:
        return _csr_mask(d, c, o)
    finally:
        L.clt_sparse_free(c)


def sparse_spmm():
    """CSR and CSC products through the row kernel (cl/spmm.cl): wider and
    narrower dense operands than sparse_csr's (one column, the kernel's
    8-column blocks and a partial one), empty rows and columns, no entries."""
    _csr_protos()
    mk = {0: torch.sparse_csr_tensor, 1: torch.sparse_csc_tensor}
    for dt in FLOATS:
        for n, m, dens in [(37, 29, 0.2), (16, 64, 0.05), (6, 5, 0.0)]:
            x = _csr_rand(n, m, dt, dens)
            x[n // 2] = 0  # an empty row
            x[:, m // 3] = 0  # an empty column
            for csc in (0, 1):
                sp = x.to_sparse_csc() if csc else x.to_sparse_csr()
                args = _csr_args(sp)
                ts = lambda c, p, v, csc=csc, n=n, m=m: mk[csc](c, p, v, (n, m))
                for p_ in (1, 8, 19, 64):
                    tag = "%s %s [%d, %d] nnz=%d @ [%d, %d]" % (
                        "csc" if csc else "csr", dn(dt), n, m, sp.values().shape[0], m, p_)
                    b = data((m, p_), dt)
                    check("sparse_spmm mm " + tag,
                          lambda c, p, v, b, ts=ts: torch.sparse.mm(ts(c, p, v), b),
                          _csr_then(csc, (n, m), L.clt_sparse_mm), args + [b], tol="mm")
                    inp = data((p_,), dt)
                    check("sparse_spmm addmm " + tag,
                          lambda c, p, v, b, x, ts=ts: torch.addmm(x, ts(c, p, v), b, beta=0.5,
                                                                   alpha=-2),
                          _csr_then(csc, (n, m),
                                    lambda s, b, x, o: L.clt_sparse_addmm(x, s, b, 0.5, -2, o)),
                          args + [b, inp], tol="mm")
                # torch's CPU build without MKL refuses mv of CSR: the COO product
                vec = data((m,), dt)
                check("sparse_spmm mv %s %s [%d, %d]" % ("csc" if csc else "csr", dn(dt), n, m),
                      lambda c, p, v, w, ts=ts: torch.mv(ts(c, p, v).to_sparse(), w),
                      _csr_then(csc, (n, m), L.clt_sparse_mv), args + [vec], tol="mm")


def _bsr_then(bsc, size, then, check=1):
    """cfn for check(): builds the BSR (BSC) tensor of (compressed, plain,
    values [nnz, R, C]), runs then(handle, *rest, out) and frees it."""
    def cfn(cc, cp, cv, *rest):
        o = rest[-1]
        s = P()
        mk = L.clt_sparse_bsc_tensor if bsc else L.clt_sparse_bsr_tensor
        st = mk(cc, cp, cv, shape_arr(size) if size is not None else None, check, C.byref(s))
        if st:
            o._obj.value = None  # nothing after it ran
            return st
        try:
            return then(s, *rest[:-1], o)
        finally:
            L.clt_sparse_free(s)
    return cfn


def _bsr_part(part):
    """then(): part 0 the compressed indices, 1 the plain ones, 2 the values."""
    def then(s, o):
        if part == 2:
            return L.clt_sparse_values(s, o)
        bsc = L.clt_sparse_layout(s) == 4
        get = [[L.clt_sparse_crow_indices, L.clt_sparse_ccol_indices],
               [L.clt_sparse_col_indices, L.clt_sparse_row_indices]]
        return get[part][bsc](s, o)
    return then


def _bsr_tpart(t, part):
    if part == 2:
        return t.values()
    if t.layout == torch.sparse_bsr:
        return t.crow_indices() if part == 0 else t.col_indices()
    return t.ccol_indices() if part == 0 else t.row_indices()


def _bsr_args(t):
    return [_bsr_tpart(t, 0), _bsr_tpart(t, 1), t.values()]


def _bsr_t(then):
    """then() of the handle's transpose (BSR.t() is BSC)."""
    def f(s, o):
        t = P()
        st = L.clt_sparse_transpose(s, 0, 1, C.byref(t))
        if st:
            return st
        try:
            return then(t, o)
        finally:
            L.clt_sparse_free(t)
    return f


def _batched_rand(shape, dt, k=None):
    """A dense [*batch, n, m] with k nonzeros (default 40%) in every batch,
    at random places (torch's compressed batches hold as many entries)."""
    *batch, n, m = shape
    nb = 1
    for b in batch:
        nb *= b
    k = max(1, (n * m * 2) // 5) if k is None else k
    flat = torch.zeros((nb, n * m), dtype=dt)
    for b in range(nb):
        at = torch.randperm(n * m, generator=G)[:k]
        v = data((k,), dt)
        flat[b, at] = torch.where(v == 0, torch.ones((), dtype=dt), v)
    return flat.reshape(shape)


def _batched_t(then, d0, d1):
    """then() of the handle's transpose(d0, d1)."""
    def f(s, *rest):
        t = P()
        st = L.clt_sparse_transpose(s, d0, d1, C.byref(t))
        if st:
            rest[-1]._obj.value = None
            return st
        try:
            return then(t, *rest)
        finally:
            L.clt_sparse_free(t)
    return f


def _nulled(cfn):
    """cfn whose first step (making a handle) may fail before the out
    pointer is touched: on failure the out is NULL, as nothing wrote it."""
    def f(*a):
        st = cfn(*a)
        if st:
            a[-1]._obj.value = None
        return st
    return f


def sparse_batched():
    """Batched CSR, CSC, BSR and BSC tensors ([*batch, n, m]) against torch
    1.13: construction (sizes given and inferred), to_dense, dense
    to_sparse_csr/_csc/_bsr/_bsc and their parts, conversions between CSR
    and CSC, sum, transposes (last two dims; two batch dims) and torch's
    refusals (uneven batches, an empty batch, a batch dim with a sparse
    one, mul, to COO).  torch's CPU build refuses batched products ("mat1
    must be a matrix, got 3-D tensor"): mm and addmm compare with torch's
    batched dense product of to_dense()."""
    _csr_protos()
    for n in ("bsr", "bsc"):
        proto("clt_sparse_%s_tensor" % n, [P, P, P, I64P, C.c_int, PP])
        proto("clt_tensor_to_sparse_%s" % n, [P, I64P, PP])
    proto("clt_sparse_transpose", [P, C.c_int, C.c_int, PP])
    mk = {0: torch.sparse_csr_tensor, 1: torch.sparse_csc_tensor}
    for dt in FLOATS:
        for shape in [(2, 3, 4), (1, 2, 3, 5), (3, 1, 1), (2, 4, 2)]:
            x = _batched_rand(shape, dt)
            nd = len(shape)
            for csc in (0, 1):
                lay = "csc" if csc else "csr"
                sp = x.to_sparse_csc() if csc else x.to_sparse_csr()
                args = _csr_args(sp)
                tag = "%s %s %s nnz=%d" % (lay, dn(dt), list(shape), sp._nnz())
                ts = lambda c, p, v, csc=csc, shape=shape: mk[csc](c, p, v, shape)
                check("sparse_batched to_dense " + tag,
                      lambda c, p, v, ts=ts: ts(c, p, v).to_dense(),
                      _csr_then(csc, shape, L.clt_sparse_to_dense), args, tol="exact")
                check("sparse_batched inferred size " + tag,
                      lambda c, p, v, csc=csc: mk[csc](c, p, v).to_dense(),
                      _csr_then(csc, None, L.clt_sparse_to_dense), args, tol="exact")
                for part in range(3):
                    check("sparse_batched of dense part %d %s" % (part, tag),
                          lambda t, part=part, csc=csc: _tpart(t.to_sparse_csc() if csc
                                                             else t.to_sparse_csr(), part),
                          _csr_dense_part(csc, part), [x], tol="exact")
                    check("sparse_batched to other layout part %d %s" % (part, tag),
                          lambda c, p, v, ts=ts, part=part, csc=csc:
                              _tpart(ts(c, p, v).to_sparse_csr() if csc
                                     else ts(c, p, v).to_sparse_csc(), part),
                          _csr_then(csc, shape, _csr_part(
                              L.clt_sparse_to_sparse_csr if csc else L.clt_sparse_to_sparse_csc,
                              part)), args, tol="exact")
                check("sparse_batched sum " + tag, lambda c, p, v, ts=ts: ts(c, p, v).sum(),
                      _csr_then(csc, shape, L.clt_sparse_sum), args, tol="red")
                check("sparse_batched transpose(-1, -2) " + tag,
                      lambda c, p, v, ts=ts: ts(c, p, v).transpose(-1, -2).to_dense(),
                      _csr_then(csc, shape, _batched_t(L.clt_sparse_to_dense, -1, -2)), args,
                      tol="exact")
                check("sparse_batched transpose(0, 1) " + tag,
                      lambda c, p, v, ts=ts: ts(c, p, v).transpose(0, 1).to_dense(),
                      _csr_then(csc, shape, _batched_t(L.clt_sparse_to_dense, 0, 1)), args,
                      tol="exact")
                check("sparse_batched to coo refused " + tag,
                      lambda c, p, v, ts=ts: ts(c, p, v).to_sparse().indices(),
                      _csr_then(csc, shape, _nulled(_sp_chain_idx)), args)
                check("sparse_batched mul refused " + tag,
                      lambda c, p, v, ts=ts: (ts(c, p, v) * 2.5).to_dense(),
                      _csr_then(csc, shape, lambda s, o: _sp_chain(
                          L.clt_sparse_mul_scalar(s, 2.5, C.byref(_SPT)), o)), args)
                b = data(shape[:-2] + (shape[-1], 3), dt)
                check("sparse_batched mm " + tag,
                      lambda c, p, v, b, ts=ts: torch.matmul(ts(c, p, v).to_dense(), b),
                      _csr_then(csc, shape, L.clt_sparse_mm), args + [b], tol="mm")
                inp = data((3,), dt)
                check("sparse_batched addmm " + tag,
                      lambda c, p, v, b, i, ts=ts: 0.5 * i - 2 * torch.matmul(ts(c, p, v).to_dense(), b),
                      _csr_then(csc, shape, lambda s, b, i, o: L.clt_sparse_addmm(i, s, b, 0.5, -2, o)),
                      args + [b, inp], tol="mm")
            # blocks: each batch holding as many nonzero blocks
            for R, Cb in [(1, 1), (shape[-2], 1)]:
                *bt, n, m = shape
                xb = _batched_rand(tuple(bt) + (n // R, m // Cb), dt)
                xb = xb.repeat_interleave(R, -2).repeat_interleave(Cb, -1) * data(shape, dt)
                for bsc in (0, 1):
                    lay = "bsc" if bsc else "bsr"
                    conv = L.clt_tensor_to_sparse_bsc if bsc else L.clt_tensor_to_sparse_bsr
                    tag = "%s %s %s blocks %dx%d" % (lay, dn(dt), list(shape), R, Cb)
                    for part in range(3):
                        def cfn(t, o, conv=conv, part=part, R=R, Cb=Cb):
                            s = P()
                            st = conv(t, shape_arr((R, Cb)), C.byref(s))
                            if st:
                                return st
                            try:
                                return _bsr_part(part)(s, o)
                            finally:
                                L.clt_sparse_free(s)
                        check("sparse_batched of dense part %d %s" % (part, tag),
                              lambda t, part=part, bsc=bsc, R=R, Cb=Cb: _bsr_tpart(
                                  t.to_sparse_bsc((R, Cb)) if bsc else t.to_sparse_bsr((R, Cb)), part),
                              cfn, [xb], tol="exact")
                    sp = xb.to_sparse_bsc((R, Cb)) if bsc else xb.to_sparse_bsr((R, Cb))
                    bmk = torch.sparse_bsc_tensor if bsc else torch.sparse_bsr_tensor
                    check("sparse_batched to_dense " + tag,
                          lambda c, p, v, bmk=bmk, shape=shape: bmk(c, p, v, shape).to_dense(),
                          _bsr_then(bsc, shape, L.clt_sparse_to_dense), _bsr_args(sp), tol="exact")
                    check("sparse_batched transpose(-2, -1) " + tag,
                          lambda c, p, v, bmk=bmk, shape=shape:
                              bmk(c, p, v, shape).transpose(-2, -1).to_dense(),
                          _bsr_then(bsc, shape, _batched_t(L.clt_sparse_to_dense, -2, -1)),
                          _bsr_args(sp), tol="exact")
                    b = data(shape[:-2] + (shape[-1], 2), dt)
                    check("sparse_batched mm " + tag,
                          lambda c, p, v, b, bmk=bmk, shape=shape:
                              torch.matmul(bmk(c, p, v, shape).to_dense(), b),
                          _bsr_then(bsc, shape, L.clt_sparse_mm), _bsr_args(sp) + [b], tol="mm")
    # torch's refusals of batches
    x = _batched_rand((2, 3, 4), torch.float32)
    x[0, 0, 0] = 0
    x[0, 1, 1] = 0
    x[0, 2, 2] = 0
    x[1, 0, 0] = 1
    x[1, 1, 1] = 1
    x[1, 2, 2] = 1
    for csc in (0, 1):
        for what, t in [("uneven batches", x), ("an empty batch", torch.zeros(0, 3, 4))]:
            check("sparse_batched %s refused %s" % (what, "csc" if csc else "csr"),
                  lambda t, csc=csc: _tpart(t.to_sparse_csc() if csc else t.to_sparse_csr(), 2),
                  _nulled(_csr_dense_part(csc, 2)), [t], tol="exact")
    sp = _batched_rand((2, 3, 4), torch.float32).to_sparse_csr()
    check("sparse_batched transpose batch with sparse refused",
          lambda c, p, v: torch.sparse_csr_tensor(c, p, v, (2, 3, 4)).transpose(0, 1).to_dense(),
          _csr_then(0, (2, 3, 4), _batched_t(L.clt_sparse_to_dense, 0, 1)), _csr_args(sp))
    L64 = lambda v: torch.tensor(v, dtype=torch.int64)
    for name, c, p, v in [
            ("crow[1][0] != 0", L64([[0, 1, 2], [1, 1, 2]]), L64([[0, 1], [0, 1]]), torch.ones(2, 2)),
            ("crow[1][-1] != nnz", L64([[0, 1, 2], [0, 1, 1]]), L64([[0, 1], [0, 1]]), torch.ones(2, 2)),
            ("col[1] out of range", L64([[0, 1, 2], [0, 1, 2]]), L64([[0, 1], [0, 3]]), torch.ones(2, 2)),
            ("col[1] unsorted", L64([[0, 1, 2], [0, 2, 2]]), L64([[0, 1], [2, 0]]), torch.ones(2, 2)),
            ("batch sizes", L64([[0, 1, 2], [0, 1, 2]]), L64([[0, 1]]), torch.ones(2, 2)),
            ("values 1-D", L64([[0, 1, 2], [0, 1, 2]]), L64([[0, 1], [0, 1]]), torch.ones(2))]:
        check("sparse_batched constructor refuses: " + name,
              lambda c, p, v: torch.sparse_csr_tensor(c, p, v, (2, 2, 3)).to_dense(),
              _csr_then(0, (2, 2, 3), L.clt_sparse_to_dense), [c, p, v])


def sparse_bsr():
    """BSR and BSC block matrices against torch 1.13: construction (sizes
    given and inferred), the parts, to_dense, dense to_sparse_bsr/_bsc, the
    transpose (BSC, each block transposed) and its parts.  torch's CPU
    build without MKL refuses their products (addmm: "computation on CPU
    is not implemented for Strided + SparseBsr @ Strided without MKL"):
    mm, addmm and mv compare with torch's dense product of to_dense()."""
    _csr_protos()
    for n in ("bsr", "bsc"):
        proto("clt_sparse_%s_tensor" % n, [P, P, P, I64P, C.c_int, PP])
        proto("clt_tensor_to_sparse_%s" % n, [P, I64P, PP])
    proto("clt_sparse_transpose", [P, C.c_int, C.c_int, PP])
    for dt in FLOATS:
        for (n, m), (R, Cb), dens in [((6, 8), (2, 2), 0.5), ((6, 6), (3, 2), 0.7),
                                      ((4, 9), (1, 3), 0.4), ((4, 4), (2, 2), 0.0)]:
            x = _csr_rand(n // R, m // Cb, dt, dens)
            x = x.repeat_interleave(R, 0).repeat_interleave(Cb, 1) * data((n, m), dt)
            for bsc in (0, 1):
                lay = "bsc" if bsc else "bsr"
                sp = x.to_sparse_bsc((R, Cb)) if bsc else x.to_sparse_bsr((R, Cb))
                args = _bsr_args(sp)
                mk = torch.sparse_bsc_tensor if bsc else torch.sparse_bsr_tensor
                tag = "%s %s [%d, %d] blocks %dx%d nnz=%d" % (lay, dn(dt), n, m, R, Cb,
                                                           sp.values().shape[0])
                check("sparse_bsr to_dense " + tag,
                      lambda c, p, v, mk=mk, n=n, m=m: mk(c, p, v, (n, m)).to_dense(),
                      _bsr_then(bsc, (n, m), L.clt_sparse_to_dense), args, tol="exact")
                if sp.values().shape[0] > 0:
                    check("sparse_bsr inferred size " + tag,
                          lambda c, p, v, mk=mk: mk(c, p, v).to_dense(),
                          _bsr_then(bsc, None, L.clt_sparse_to_dense), args, tol="exact")
                for part in range(3):
                    conv = L.clt_tensor_to_sparse_bsc if bsc else L.clt_tensor_to_sparse_bsr

                    def cfn(t, o, conv=conv, part=part, R=R, Cb=Cb):
                        s = P()
                        st = conv(t, shape_arr((R, Cb)), C.byref(s))
                        if st:
                            return st
                        try:
                            return _bsr_part(part)(s, o)
                        finally:
                            L.clt_sparse_free(s)
                    check("sparse_bsr of dense part %d %s" % (part, tag),
                          lambda t, part=part, bsc=bsc, R=R, Cb=Cb: _bsr_tpart(
                              t.to_sparse_bsc((R, Cb)) if bsc else t.to_sparse_bsr((R, Cb)), part),
                          cfn, [x], tol="exact")
                    check("sparse_bsr transpose part %d %s" % (part, tag),
                          lambda c, p, v, mk=mk, n=n, m=m, part=part:
                              _bsr_tpart(mk(c, p, v, (n, m)).t(), part),
                          _bsr_then(bsc, (n, m), _bsr_t(_bsr_part(part))), args, tol="exact")
                check("sparse_bsr transpose to_dense " + tag,
                      lambda c, p, v, mk=mk, n=n, m=m: mk(c, p, v, (n, m)).t().to_dense(),
                      _bsr_then(bsc, (n, m), _bsr_t(L.clt_sparse_to_dense)), args, tol="exact")
                for p_ in (1, 11):
                    b = data((m, p_), dt)
                    check("sparse_bsr mm %s @ [%d, %d]" % (tag, m, p_),
                          lambda c, p, v, b, mk=mk, n=n, m=m: mk(c, p, v, (n, m)).to_dense() @ b,
                          _bsr_then(bsc, (n, m), L.clt_sparse_mm), args + [b], tol="mm")
                    inp = data((n, p_), dt)
                    check("sparse_bsr addmm %s @ [%d, %d]" % (tag, m, p_),
                          lambda c, p, v, b, x, mk=mk, n=n, m=m: torch.addmm(
                              x, mk(c, p, v, (n, m)).to_dense(), b, beta=0.5, alpha=-2),
                          _bsr_then(bsc, (n, m),
                                    lambda s, b, x, o: L.clt_sparse_addmm(x, s, b, 0.5, -2, o)),
                          args + [b, inp], tol="mm")
                vec = data((m,), dt)
                check("sparse_bsr mv " + tag,
                      lambda c, p, v, w, mk=mk, n=n, m=m: mk(c, p, v, (n, m)).to_dense() @ w,
                      _bsr_then(bsc, (n, m), L.clt_sparse_mv), args + [vec], tol="mm")
    # refusals with torch's message
    c, p_, v = torch.tensor([0, 1]), torch.tensor([0]), data((1, 2, 2), torch.float32)
    check("sparse_bsr refuses a size not a multiple of the blocksize",
          lambda c, p, v: torch.sparse_bsr_tensor(c, p, v, (3, 2)).to_dense(),
          _bsr_then(0, (3, 2), L.clt_sparse_to_dense), [c, p_, v])
    check("sparse_bsr refuses a column past the size",
          lambda c, p, v: torch.sparse_bsr_tensor(c, p, v, (2, 2)).to_dense(),
          _bsr_then(0, (2, 2), L.clt_sparse_to_dense), [c, torch.tensor([1]), v])


def _csr_hspmm(s, b, part, o):
    r = P()
    st = L.clt_sparse_hspmm(s, b, C.byref(r))
    if st:
        o._obj.value = None
        return st
    try:
        return (L.clt_sparse_indices if part == 0 else L.clt_sparse_values)(r, o)
    finally:
        L.clt_sparse_free(r)


def _csr_sampled(s, a, b, beta, alpha, o):
    r = P()
    st = L.clt_sparse_sampled_addmm(s, a, b, beta, alpha, C.byref(r))
    if st:
        o._obj.value = None
        return st
    try:
        return L.clt_sparse_values(r, o)
    finally:
        L.clt_sparse_free(r)

# ---- transforms (torch.distributions.transforms, TransformedDistribution) ----

def _tf_protos():
    _dist_protos()
    for n in ("exp", "sigmoid", "tanh", "abs", "softplus", "softmax", "stick_breaking",
              "lower_cholesky", "corr_cholesky"):
        proto("clt_%s_transform" % n, [PP])
    proto("clt_power_transform", [P, PP])
    proto("clt_affine_transform", [P, P, C.c_int, PP])
    proto("clt_compose_transform", [PP, C.c_int, PP])
    proto("clt_independent_transform", [P, C.c_int, PP])
    proto("clt_reshape_transform", [C.c_int, I64P, C.c_int, I64P, PP])
    proto("clt_cat_transform", [PP, C.c_int, C.c_int, I64P, PP])
    proto("clt_stack_transform", [PP, C.c_int, C.c_int, PP])
    proto("clt_cumulative_distribution_transform", [P, PP])
    proto("clt_transform_free", [P], None)
    proto("clt_transform_inv", [P, PP])
    proto("clt_transform_forward", [P, P, PP])
    proto("clt_transform_inverse", [P, P, PP])
    proto("clt_transform_log_abs_det_jacobian", [P, P, P, PP])
    proto("clt_transformed_dist", [P, PP, C.c_int, C.c_int, PP])
    proto("clt_logistic_normal_dist", [P, P, C.c_int, PP])
    proto("clt_distribution_sample", [P, P, C.c_int, I64P, PP])


def _tf_make(spec, params, owned):
    """The cltensor transform of spec (nested tuples naming the transform
    and its parts), its tensor parameters taken from params in order."""
    def new(fn, *args):
        t = P()
        st = fn(*args, C.byref(t))
        if st:
            raise RuntimeError(L.clt_last_error().decode())
        owned.append(t)
        return t
    kind = spec[0]
    if kind in ("exp", "sigmoid", "tanh", "abs", "softplus", "softmax", "stick_breaking",
                "lower_cholesky", "corr_cholesky"):
        return new(getattr(L, "clt_%s_transform" % kind))
    if kind == "power":
        return new(L.clt_power_transform, params.pop(0))
    if kind == "affine":
        return new(L.clt_affine_transform, params.pop(0), params.pop(0), spec[1])
    if kind in ("compose", "cat", "stack"):
        parts = [_tf_make(s, params, owned) for s in spec[1]]
        arr = (P * max(1, len(parts)))(*parts)
        if kind == "compose":
            return new(L.clt_compose_transform, arr, len(parts))
        if kind == "stack":
            return new(L.clt_stack_transform, arr, len(parts), spec[2])
        return new(L.clt_cat_transform, arr, len(parts), spec[2], shape_arr(spec[3]))
    if kind == "indep":
        return new(L.clt_independent_transform, _tf_make(spec[1], params, owned), spec[2])
    if kind == "reshape":
        return new(L.clt_reshape_transform, len(spec[1]), shape_arr(spec[1]), len(spec[2]),
                   shape_arr(spec[2]))
    if kind == "inv":
        return new(L.clt_transform_inv, _tf_make(spec[1], params, owned))
    if kind == "cdf":
        d = P()
        assert L.clt_normal_dist(params.pop(0), params.pop(0), 1, C.byref(d)) == 0
        try:
            return new(L.clt_cumulative_distribution_transform, d)
        finally:
            L.clt_distribution_free(d)
    raise ValueError(kind)


def _tf_torch(spec, params):
    T = torch.distributions.transforms
    kind = spec[0]
    simple = {"exp": T.ExpTransform, "sigmoid": T.SigmoidTransform, "tanh": T.TanhTransform,
              "abs": T.AbsTransform, "softplus": T.SoftplusTransform,
              "softmax": T.SoftmaxTransform, "stick_breaking": T.StickBreakingTransform,
              "lower_cholesky": T.LowerCholeskyTransform,
              "corr_cholesky": T.CorrCholeskyTransform}
    if kind in simple:
        return simple[kind]()
    if kind == "power":
        return T.PowerTransform(params.pop(0))
    if kind == "affine":
        return T.AffineTransform(params.pop(0), params.pop(0), spec[1])
    if kind == "compose":
        return T.ComposeTransform([_tf_torch(s, params) for s in spec[1]])
    if kind == "cat":
        return T.CatTransform([_tf_torch(s, params) for s in spec[1]], spec[2], spec[3])
    if kind == "stack":
        return T.StackTransform([_tf_torch(s, params) for s in spec[1]], spec[2])
    if kind == "indep":
        return T.IndependentTransform(_tf_torch(spec[1], params), spec[2])
    if kind == "reshape":
        return T.ReshapeTransform(spec[1], spec[2])
    if kind == "inv":
        return _tf_torch(spec[1], params).inv
    if kind == "cdf":
        return T.CumulativeDistributionTransform(torch.distributions.Normal(params.pop(0),
                                                                            params.pop(0)))
    raise ValueError(kind)


def _tf_c(spec, nparams, what):
    def cfn(*a):
        out, a = a[-1], list(a[:-1])
        owned = []
        try:
            try:
                t = _tf_make(spec, a[:nparams], owned)
            except RuntimeError:
                out._obj.value = None
                return 1
            rest = a[nparams:]
            if what == "forward":
                return L.clt_transform_forward(t, rest[0], out)
            if what == "inverse":
                return L.clt_transform_inverse(t, rest[0], out)
            return L.clt_transform_log_abs_det_jacobian(t, rest[0], rest[1], out)
        finally:
            for t in owned:
                L.clt_transform_free(t)
    return cfn


def _tf_t(spec, nparams, what):
    def tfn(*a):
        a = list(a)
        t = _tf_torch(spec, a[:nparams])
        rest = a[nparams:]
        if what == "forward":
            return t(rest[0])
        if what == "inverse":
            return t.inv(rest[0])
        return t.log_abs_det_jacobian(rest[0], rest[1])
    return tfn


def transforms():
    _tf_protos()
    for dt in FLOATS:
        pos = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 2 + 0.1
        real = lambda *sh: torch.randn(*sh, generator=G, dtype=torch.float64).to(dt)
        x = real(4, 3) * 2
        cases = [  # (name, spec, params, x, has ladj)
            ("Exp", ("exp",), [], x, True),
            ("Power", ("power",), [pos(3)], pos(4, 3), True),
            ("Sigmoid", ("sigmoid",), [], x * 3, True),
            ("Tanh", ("tanh",), [], x, True),
            ("Abs", ("abs",), [], x, False),
            ("Affine", ("affine", 0), [real(3), real(3)], x, True),
            ("Affine ev1", ("affine", 1), [real(3), real(3)], x, True),
            ("Affine ev2 scalar", ("affine", 2), [real(()), real(())], x, True),
            ("Softplus", ("softplus",), [], x * 5, True),
            ("Softmax", ("softmax",), [], x, False),
            ("StickBreaking", ("stick_breaking",), [], x, True),
            ("LowerCholesky", ("lower_cholesky",), [], real(2, 3, 3), False),
            ("CorrCholesky", ("corr_cholesky",), [], real(2, 6), True),
            ("CorrCholesky D2", ("corr_cholesky",), [], real(3, 1), True),
            ("Compose", ("compose", [("affine", 0), ("sigmoid",), ("power",)]),
             [real(3), pos(3), pos(3)], x, True),
            ("Compose events", ("compose", [("stick_breaking",), ("affine", 1)]),
             [real(4), pos(4)], x, True),
            ("Compose empty", ("compose", []), [], x, True),
            ("Independent", ("indep", ("exp",), 1), [], x, True),
            ("Reshape", ("reshape", [3], [3, 1]), [], x, True),
            ("Cat", ("cat", [("exp",), ("affine", 0)], -1, [2, 1]), [real(()), pos(())], x,
             True),
            ("Cat dim0", ("cat", [("exp",), ("tanh",)], 0, [3, 1]), [], x, True),
            ("Stack", ("stack", [("exp",), ("sigmoid",), ("tanh",)], 1), [], x, True),
            ("CumulativeDistribution", ("cdf",), [real(3), pos(3)], x, True),
            ("inv Sigmoid", ("inv", ("sigmoid",)), [], torch.rand(4, 3, generator=G,
                                                                    dtype=torch.float64).to(dt),
             True),
            ("inv Compose", ("inv", ("compose", [("exp",), ("affine", 0)])), [real(3), pos(3)],
             x, True),
        ]
        for name, spec, params, xin, ladj in cases:
            n = len(params)
            label = "transform %s %s" % (name, dn(dt))
            check(label + " forward", _tf_t(spec, n, "forward"), _tf_c(spec, n, "forward"),
                  params + [xin], tol="red")
            with torch.no_grad():
                y = _tf_t(spec, n, "forward")(*(list(params) + [xin]))
            # (CumulativeDistribution's inverse is Normal's icdf: the library's
            # float64 erfinv is good to about 1e-10)
            check(label + " inverse", _tf_t(spec, n, "inverse"), _tf_c(spec, n, "inverse"),
                  params + [y], tol="red32" if spec[0] == "cdf" else "red")
            check(label + " log_abs_det_jacobian", _tf_t(spec, n, "ladj"),
                  _tf_c(spec, n, "ladj"), params + [xin, y], tol="red",
                  expect_error=None if ladj else "no ladj")
        # shapes torch refuses
        check("transform CorrCholesky %s N=4" % dn(dt), _tf_t(("corr_cholesky",), 0, "forward"),
              _tf_c(("corr_cholesky",), 0, "forward"), [real(2, 4)], tol="red")
        check("transform Reshape %s mismatch" % dn(dt), _tf_t(("reshape", [4], [2, 2]), 0, "forward"),
              _tf_c(("reshape", [4], [2, 2]), 0, "forward"), [real(2, 3)], tol="red")

        # TransformedDistribution
        D = torch.distributions
        loc, scale = real(3), pos(3)
        val = pos(5, 3)
        tds = [  # (name, torch transforms of (a, b), spec, value)
            ("Exp", lambda *p: [D.ExpTransform()], ("compose", [("exp",)]), val),
            ("Affine neg", lambda a, b: [D.AffineTransform(a, b)],
             ("compose", [("affine", 0)]), real(5, 3)),
            ("Sigmoid Affine", lambda a, b: [D.SigmoidTransform(), D.AffineTransform(a, b)],
             ("compose", [("sigmoid",), ("affine", 0)]), None),
            ("StickBreaking", lambda *p: [D.StickBreakingTransform()],
             ("compose", [("stick_breaking",)]), None),
            ("Tanh", lambda *p: [D.TanhTransform()], ("compose", [("tanh",)]),
             torch.rand(5, 3, generator=G, dtype=torch.float64).to(dt) * 1.8 - 0.9),
        ]
        for name, ttf, spec, v in tds:
            ab = [real(3), pos(3) * (-1 if "neg" in name else 1)] if "Affine" in name else []

            def mk_c(what, spec=spec, nab=len(ab)):
                def cfn(*a):
                    out, a = a[-1], list(a[:-1])
                    owned = []
                    d = P()
                    try:
                        base = P()
                        assert L.clt_normal_dist(a[0], a[1], 1, C.byref(base)) == 0
                        comp = _tf_make(spec, a[2:2 + nab], owned)
                        # the parts of the compose, in order
                        parts = owned[:-1] if len(owned) > 1 else owned
                        arr = (P * len(parts))(*parts)
                        st = L.clt_transformed_dist(base, arr, len(parts), 1, C.byref(d))
                        L.clt_distribution_free(base)
                        if st:
                            out._obj.value = None
                            return st
                        fn = {"log_prob": L.clt_distribution_log_prob,
                              "cdf": L.clt_distribution_cdf,
                              "icdf": L.clt_distribution_icdf}[what]
                        return fn(d, a[2 + nab], out)
                    finally:
                        L.clt_distribution_free(d)
                        for t in owned:
                            L.clt_transform_free(t)
                return cfn

            def mk_t(what, ttf=ttf, nab=len(ab)):
                def tfn(*a):
                    d = D.TransformedDistribution(D.Normal(a[0], a[1]), ttf(*a[2:2 + nab]))
                    return getattr(d, what)(a[2 + nab])
                return tfn
            with torch.no_grad():
                td = D.TransformedDistribution(D.Normal(loc, scale), ttf(*ab))
                vv = td.sample((5,)) if v is None else v
            for what in ("log_prob", "cdf", "icdf"):
                arg = vv if what != "icdf" else torch.rand(5, 3, generator=G,
                                                           dtype=torch.float64).to(dt)
                if what != "log_prob" and name == "StickBreaking":
                    continue
                check("TransformedDistribution %s %s %s" % (name, dn(dt), what), mk_t(what),
                      mk_c(what), [loc, scale] + ab + [arg], tol="red")
        # a base of no batch dims widened by the Affine's parameters (torch's expand)
        def widened_c(what):
            def cfn(l, s, a, b, v, out):
                base, d, owned = P(), P(), []
                try:
                    assert L.clt_normal_dist(l, s, 1, C.byref(base)) == 0
                    t = _tf_make(("affine", 0), [a, b], owned)
                    st = L.clt_transformed_dist(base, (P * 1)(t), 1, 1, C.byref(d))
                    if st:
                        out._obj.value = None
                        return st
                    return getattr(L, "clt_distribution_" + what)(d, v, out)
                finally:
                    L.clt_distribution_free(d)
                    L.clt_distribution_free(base)
                    for t in owned:
                        L.clt_transform_free(t)
            return cfn
        for what in ("log_prob", "cdf", "icdf"):
            arg = real(5, 3) if what != "icdf" else torch.rand(5, 3, generator=G,
                                                              dtype=torch.float64).to(dt)
            check("TransformedDistribution widened %s %s" % (dn(dt), what),
                  lambda l, s, a, b, v, w=what: getattr(D.TransformedDistribution(
                      D.Normal(l, s), [D.AffineTransform(a, b)]), w)(v),
                  widened_c(what), [real(()), pos(()), real(3), pos(3), arg], tol="red")
        # LogisticNormal
        lnl = lambda l, s, o: L.clt_logistic_normal_dist(l, s, 1, o)
        with torch.no_grad():
            v = D.LogisticNormal(loc, scale).sample((4,))
        check("LogisticNormal %s log_prob" % dn(dt), lambda l, s, v: D.LogisticNormal(l, s).log_prob(v),
              _dist_c((lnl, 2), L.clt_distribution_log_prob), [loc, scale, v], tol="red")
        check("LogisticNormal %s scalar log_prob" % dn(dt),
              lambda l, s, v: D.LogisticNormal(l, s).log_prob(v),
              _dist_c((lnl, 2), L.clt_distribution_log_prob),
              [real(()), pos(()), torch.tensor([0.3, 0.7], dtype=dt)], tol="red")
        check("LogisticNormal %s outside the simplex" % dn(dt),
              lambda l, s, v: D.LogisticNormal(l, s).log_prob(v),
              _dist_c((lnl, 2), L.clt_distribution_log_prob),
              [loc, scale, torch.full((4,), 0.5, dtype=dt)], tol="red")
        # expand (torch's TransformedDistribution.expand: the base expanded)
        proto("clt_distribution_expand", [P, I64P, C.c_int, PP])
        def expanded_c(make, shape):
            def cfn(*a):
                out, a = a[-1], a[:-1]
                d, e = P(), P()
                try:
                    st = make(*a[:-1], C.byref(d))
                    if st == 0:
                        st = L.clt_distribution_expand(d, shape_arr(shape), len(shape),
                                                       C.byref(e))
                    if st:
                        out._obj.value = None
                        return st
                    return L.clt_distribution_log_prob(e, a[-1], out)
                finally:
                    L.clt_distribution_free(e)
                    L.clt_distribution_free(d)
            return cfn
        with torch.no_grad():
            v = D.LogisticNormal(loc, scale).expand((2, 5)).sample()
        check("LogisticNormal %s expand log_prob" % dn(dt),
              lambda l, s, v: D.LogisticNormal(l, s).expand((2, 5)).log_prob(v),
              expanded_c(lambda l, s, o: L.clt_logistic_normal_dist(l, s, 1, o), [2, 5]),
              [loc, scale, v], tol="red")
        def exp_normal(l, s, o):
            base, t = P(), P()
            try:
                st = L.clt_normal_dist(l, s, 1, C.byref(base))
                if st == 0:
                    st = L.clt_exp_transform(C.byref(t))
                if st == 0:
                    st = L.clt_transformed_dist(base, (P * 1)(t), 1, 1, o)
                return st
            finally:
                L.clt_distribution_free(base)
                L.clt_transform_free(t)
        check("TransformedDistribution %s expand log_prob" % dn(dt),
              lambda l, s, v: D.TransformedDistribution(D.Normal(l, s), [D.ExpTransform()])
              .expand((4, 3)).log_prob(v),
              expanded_c(exp_normal, [4, 3]), [real(3), pos(3), pos(4, 3)], tol="red")
# ---- nnmisc: lazy layers loaded from torch.save, parametrizations ----------

def _nnmisc_lazy():
    """torch models of lazy layers, run once and saved with torch.save,
    load into fresh cltensor lazy models without a forward (torch's
    _lazy_load_hook): the same state_dict and the same outputs."""
    import tempfile
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_train", [P, C.c_int], None)
    proto("clt_module_has_uninitialized_params", [P], C.c_int)
    proto("clt_sequential", [PP, C.c_size_t, PP])
    proto("clt_relu_layer", [PP])
    proto("clt_flatten_layer", [C.c_int, C.c_int, PP])
    proto("clt_lazy_linear", [P, C.c_int64, C.c_int, P, PP])
    proto("clt_lazy_conv1d", [P, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_lazy_conv2d", [P, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_lazy_conv_transpose2d", [P, C.c_int64, C.c_int64, C.c_int64, P, C.c_int, P, PP])
    proto("clt_lazy_batch_norm1d", [P, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_lazy_batch_norm2d", [P, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_lazy_instance_norm1d", [P, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    nn = torch.nn

    def c_seq(makers):
        mods = (P * len(makers))()
        for i, mk in enumerate(makers):
            one = P()
            if mk(C.byref(one)):
                return None
            mods[i] = one
        out = P()
        if L.clt_sequential(mods, len(makers), C.byref(out)):
            return None
        return out

    made = [
        ("Linear ReLU Linear", lambda: nn.Sequential(nn.LazyLinear(6), nn.ReLU(), nn.LazyLinear(3)),
         [lambda r: L.clt_lazy_linear(DEV, 6, 1, None, r), lambda r: L.clt_relu_layer(r),
          lambda r: L.clt_lazy_linear(DEV, 3, 1, None, r)], (4, 5)),
        ("Conv2d groups BatchNorm2d ConvTranspose2d Flatten Linear",
         lambda: nn.Sequential(nn.LazyConv2d(4, 3, padding=1, groups=2), nn.LazyBatchNorm2d(),
                               nn.LazyConvTranspose2d(3, 2, bias=False), nn.Flatten(),
                               nn.LazyLinear(2)),
         [lambda r: L.clt_lazy_conv2d(DEV, 4, 3, 3, _i64s(1, 1, 1, 1, 1, 1, 2), 1, None, r),
          lambda r: L.clt_lazy_batch_norm2d(DEV, 1e-5, 0.1, 1, 1, r),
          lambda r: L.clt_lazy_conv_transpose2d(DEV, 3, 2, 2, None, 0, None, r),
          lambda r: L.clt_flatten_layer(1, -1, r),
          lambda r: L.clt_lazy_linear(DEV, 2, 1, None, r)], (2, 6, 4, 4)),
        ("Conv1d BatchNorm1d no affine InstanceNorm1d",
         lambda: nn.Sequential(nn.LazyConv1d(5, 2), nn.LazyBatchNorm1d(affine=False),
                               nn.LazyInstanceNorm1d(affine=True, track_running_stats=True)),
         [lambda r: L.clt_lazy_conv1d(DEV, 5, 2, None, 1, None, r),
          lambda r: L.clt_lazy_batch_norm1d(DEV, 1e-5, 0.1, 0, 1, r),
          lambda r: L.clt_lazy_instance_norm1d(DEV, 1e-5, 0.1, 1, 1, r)], (3, 4, 7)),
    ]
    with tempfile.TemporaryDirectory() as d:
        for name, tmake, cmakers, xs in made:
            torch.manual_seed(21)
            tm = tmake()
            with torch.no_grad():
                tm(data(xs, torch.float32, lo=-2, hi=2))  # initialises, moves running stats
                for p_ in tm.parameters():
                    p_.add_(0.25)  # values the fresh model's own draws cannot give
            path = os.path.join(d, "lazy.pt")
            torch.save(tm.state_dict(), path)
            cm = c_seq(cmakers)
            keep = []
            try:
                if cm is None:
                    fail("lazy load " + name, L.clt_last_error().decode())
                    continue
                if L.clt_module_load_torch(cm, path.encode(), 1):
                    fail("lazy load " + name, L.clt_last_error().decode())
                    continue
                ok("lazy load " + name + " initialised",
                   L.clt_module_has_uninitialized_params(cm) == 0)
                tm.eval()
                L.clt_module_train(cm, 0)
                x = data(xs, torch.float32, lo=-2, hi=2)
                keep.append(upload(x))
                y = P()
                if L.clt_module_forward(cm, keep[0], C.byref(y)):
                    fail("lazy load " + name + " forward", L.clt_last_error().decode())
                    continue
                keep.append(y)
                got = download(y)[0]
                with torch.no_grad():
                    want = tm(x).numpy()
                same = got.shape == want.shape
                ok("lazy load " + name + " forward", same and np.allclose(got, want, 1e-4, 1e-5),
                   "shape %s / %s, max diff %g"
                   % (got.shape, want.shape, np.abs(got - want).max() if same else -1))
            finally:
                for t in keep:
                    L.clt_tensor_free(t)
                if cm is not None:
                    L.clt_module_free(cm)


def _nnmisc_parametrize():
    """parametrizations.orthogonal and a caller's parametrization: torch's
    state_dict (original, base) loaded into cltensor's layer made the same
    way gives torch's weight and outputs (same original, same weight); a
    square weight registered in both from the same values gives the same
    orthogonal weight."""
    import tempfile
    from torch.nn.utils import parametrize as TP
    from torch.nn.utils.parametrizations import orthogonal
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_param", [P, C.c_char_p], P)
    proto("clt_module_to_dtype", [P, C.c_int])
    proto("clt_linear", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_orthogonal", [P, C.c_char_p, C.c_char_p, C.c_int, P])
    FN = C.CFUNCTYPE(C.c_int, P, PP, P)

    class Param(C.Structure):
        _fields_ = [("forward", FN), ("right_inverse", FN), ("user", P)]

    proto("clt_register_parametrization", [P, C.c_char_p, C.POINTER(Param), C.c_int])
    proto("clt_triu", [P, C.c_int64, PP])
    proto("clt_transpose", [P, C.c_int, C.c_int, PP])
    proto("clt_add", [P, P, PP])

    def c_symmetric(x, out, user):
        u, u1, t = P(), P(), P()
        st = (L.clt_triu(x, 0, C.byref(u)) or L.clt_triu(x, 1, C.byref(u1))
              or L.clt_transpose(u1, 0, 1, C.byref(t)) or L.clt_add(u, t, out))
        for h in (u, u1, t):
            if h:
                L.clt_tensor_free(h)
        return st

    sym_fn = FN(c_symmetric)

    class Symmetric(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

    def c_linear(i, o):
        cm = P()
        if L.clt_linear(DEV, i, o, 1, None, C.byref(cm)) or L.clt_module_to_dtype(cm, F64):
            return None
        return cm

    def compare(name, tm, cm, i, d):
        path = os.path.join(d, "p.pt")
        torch.save(tm.state_dict(), path)
        if L.clt_module_load_torch(cm, path.encode(), 1):
            fail(name, L.clt_last_error().decode())
            return
        x = data((3, i), torch.float64, lo=-2, hi=2)
        xh = upload(x)
        y = P()
        try:
            if L.clt_module_forward(cm, xh, C.byref(y)):
                fail(name, L.clt_last_error().decode())
                return
            got = download(y)[0]
            with torch.no_grad():
                want = tm(x).numpy()
                wt = tm.weight.numpy()
            gw = download(L.clt_module_param(cm, b"weight"))[0]
            ok(name, got.shape == want.shape and np.allclose(got, want, 1e-9, 1e-10)
               and np.allclose(gw, wt, 1e-9, 1e-10),
               "max diff %g, weight %g" % (np.abs(got - want).max(), np.abs(gw - wt).max()))
        finally:
            L.clt_tensor_free(xh)
            if y:
                L.clt_tensor_free(y)

    with tempfile.TemporaryDirectory() as d:
        for (o, i) in ((4, 4), (5, 3), (2, 4)):
            for mp in (None, "matrix_exp", "cayley", "householder"):
                for triv in (True, False):
                    name = "orthogonal %dx%d %s triv %d" % (o, i, mp, triv)
                    torch.manual_seed(3)
                    tm = torch.nn.Linear(i, o).double()
                    w0 = tm.weight.detach().clone()
                    orthogonal(tm, "weight", mp, use_trivialization=triv)
                    with torch.no_grad():  # another original: the same map of it
                        orig = tm.parametrizations.weight.original
                        orig.add_(0.3 * torch.randn(orig.shape, dtype=orig.dtype))
                    cm = c_linear(i, o)
                    try:
                        if cm is None or L.clt_orthogonal(cm, None, mp.encode() if mp else None,
                                                          int(triv), None):
                            fail(name, L.clt_last_error().decode())
                            continue
                        compare(name, tm, cm, i, d)
                    finally:
                        if cm is not None:
                            L.clt_module_free(cm)
                    if o != i and triv:
                        continue  # base completes with normal draws of another generator
                    # registered in both from the same weight
                    tm = torch.nn.Linear(i, o).double()
                    with torch.no_grad():
                        tm.weight.copy_(w0)
                    cm = c_linear(i, o)
                    try:
                        path = os.path.join(d, "plain.pt")
                        torch.save(tm.state_dict(), path)
                        if cm is None or L.clt_module_load_torch(cm, path.encode(), 1):
                            fail(name + " registered", L.clt_last_error().decode())
                            continue
                        orthogonal(tm, "weight", mp, use_trivialization=triv)
                        if L.clt_orthogonal(cm, None, mp.encode() if mp else None, int(triv),
                                            None):
                            fail(name + " registered", L.clt_last_error().decode())
                            continue
                        gw = download(L.clt_module_param(cm, b"weight"))[0]
                        with torch.no_grad():
                            wt = tm.weight.numpy()
                        ok(name + " registered", np.allclose(gw, wt, 1e-9, 1e-10),
                           "max diff %g" % np.abs(gw - wt).max())
                    finally:
                        if cm is not None:
                            L.clt_module_free(cm)
        # a caller's parametrization under torch's state keys
        torch.manual_seed(4)
        tm = torch.nn.Linear(3, 3).double()
        TP.register_parametrization(tm, "weight", Symmetric())
        cm = c_linear(3, 3)
        p = Param(sym_fn, FN(), None)
        try:
            if cm is None or L.clt_register_parametrization(cm, b"weight", C.byref(p), 0):
                fail("register_parametrization symmetric", L.clt_last_error().decode())
            else:
                compare("register_parametrization symmetric", tm, cm, 3, d)
        finally:
            if cm is not None:
                L.clt_module_free(cm)


def nnmisc():
    _nnmisc_lazy()
    _nnmisc_parametrize()
def dist5():
    """mode, perplexity, enumerate_support and expand over the families, and
    MultivariateNormal from a precision matrix, against torch."""
    D = torch.distributions
    _dist_protos()
    P3 = [P, P, P, C.c_int, PP]
    for n in ("gamma", "beta", "gumbel", "pareto", "normal", "uniform", "laplace", "cauchy",
              "log_normal", "weibull", "kumaraswamy", "fisher_snedecor", "von_mises"):
        proto("clt_%s_dist" % n, [P, P, C.c_int, PP])
    for n in ("exponential", "half_normal", "half_cauchy", "poisson", "chi2", "dirichlet"):
        proto("clt_%s_dist" % n, [P, C.c_int, PP])
    for n in ("bernoulli", "categorical", "one_hot_categorical", "geometric",
              "continuous_bernoulli"):
        proto("clt_%s_dist" % n, [P, P, C.c_int, PP])
    for n in ("student_t", "binomial", "negative_binomial", "relaxed_bernoulli"):
        proto("clt_%s_dist" % n, P3)
    proto("clt_multinomial_dist", [C.c_int64, P, P, C.c_int, PP])
    proto("clt_lowrank_multivariate_normal_dist", [P, P, P, C.c_int, PP])
    proto("clt_multivariate_normal_precision_dist", [P, P, C.c_int, PP])
    proto("clt_one_hot_categorical_straight_through_dist", [P, P, C.c_int, PP])
    proto("clt_mixture_same_family_dist", [P, P, C.c_int, PP])
    for n in ("mode", "perplexity", "covariance_matrix", "precision_matrix", "scale_tril"):
        proto("clt_distribution_" + n, [P, PP])
    proto("clt_distribution_enumerate_support", [P, C.c_int, PP])
    proto("clt_distribution_has_enumerate_support", [P], C.c_int)
    proto("clt_distribution_expand", [P, I64P, C.c_int, PP])
    proto("clt_distribution_rsample", [P, P, C.c_int, I64P, PP])
    mk1 = lambda f: (lambda a, o: f(a, 1, o), 1)
    mk2 = lambda f: (lambda a, b, o: f(a, b, 1, o), 2)
    mode = L.clt_distribution_mode
    perp = L.clt_distribution_perplexity

    def expanded(call, shape):
        """call(d', rest..., out) on d expanded to shape."""
        def f(d, *a):
            out, a = a[-1], a[:-1]
            e = P()
            st = L.clt_distribution_expand(d, shape_arr(shape), len(shape), C.byref(e))
            if st:
                out._obj.value = None
                return st
            try:
                return call(e, *a, out)
            finally:
                L.clt_distribution_free(e)
        return f

    for dt in FLOATS:
        tol = "red"
        t = lambda *v: torch.tensor(v, dtype=dt)
        real = lambda *sh: torch.randn(*sh, generator=G, dtype=torch.float64).to(dt)
        pos = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 3 + 0.2
        unit = lambda *sh: torch.rand(*sh, generator=G, dtype=torch.float64).to(dt) * 0.9 + 0.05
        conc = t(0.3, 0.5, 1.0, 1.5, 3.0, 0.7)
        conc2 = t(0.5, 2.0, 0.4, 3.0, 0.8, 1.0)
        fams = [
            ("Normal", lambda a, b: D.Normal(a, b), mk2(L.clt_normal_dist), [real(2, 3), pos(3)]),
            ("Laplace", lambda a, b: D.Laplace(a, b), mk2(L.clt_laplace_dist), [real(3), pos(2, 3)]),
            ("Cauchy", lambda a, b: D.Cauchy(a, b), mk2(L.clt_cauchy_dist), [real(3), pos(3)]),
            ("Gumbel", lambda a, b: D.Gumbel(a, b), mk2(L.clt_gumbel_dist), [real(3), pos(3)]),
            ("Uniform", lambda a, b: D.Uniform(a, a + b), None, [real(3), pos(3)]),
            ("LogNormal", lambda a, b: D.LogNormal(a, b), mk2(L.clt_log_normal_dist),
             [real(3), pos(3)]),
            ("Gamma", lambda a, b: D.Gamma(a, b), mk2(L.clt_gamma_dist), [conc, pos(6)]),
            ("Beta", lambda a, b: D.Beta(a, b), mk2(L.clt_beta_dist), [conc, conc2]),
            ("Kumaraswamy", lambda a, b: D.Kumaraswamy(a, b), mk2(L.clt_kumaraswamy_dist),
             [conc, conc2 * 0.5]),
            ("Weibull", lambda a, b: D.Weibull(a, b), mk2(L.clt_weibull_dist), [pos(6), conc2 * 2]),
            ("FisherSnedecor", lambda a, b: D.FisherSnedecor(a, b),
             mk2(L.clt_fisher_snedecor_dist), [t(1.0, 2.0, 3.0, 5.0), t(1.0, 3.0, 4.0, 9.0)]),
            ("Pareto", lambda a, b: D.Pareto(a, b), mk2(L.clt_pareto_dist), [pos(3), pos(3)]),
            ("VonMises", lambda a, b: D.VonMises(a, b), mk2(L.clt_von_mises_dist),
             [real(3), pos(3)]),
            ("Exponential", lambda a: D.Exponential(a), mk1(L.clt_exponential_dist), [pos(3)]),
            ("HalfNormal", lambda a: D.HalfNormal(a), mk1(L.clt_half_normal_dist), [pos(3)]),
            ("HalfCauchy", lambda a: D.HalfCauchy(a), mk1(L.clt_half_cauchy_dist), [pos(3)]),
            ("Poisson", lambda a: D.Poisson(a), mk1(L.clt_poisson_dist), [pos(2, 3) * 3]),
            ("Chi2", lambda a: D.Chi2(a), mk1(L.clt_chi2_dist), [conc * 2]),
            ("Dirichlet", lambda a: D.Dirichlet(a), mk1(L.clt_dirichlet_dist),
             [torch.stack([conc[:3], conc2[:3], conc[3:], t(0.5, 0.3, 0.9), t(0.5, 1.0, 0.2)])]),
            ("StudentT", lambda a, b, c: D.StudentT(a, b, c),
             (lambda a, b, c, o: L.clt_student_t_dist(a, b, c, 1, o), 3),
             [pos(3), real(2, 3), pos(3)]),
            ("Bernoulli", lambda p: D.Bernoulli(probs=p),
             (lambda p, o: L.clt_bernoulli_dist(p, None, 1, o), 1), [t(0.5, 0.7, 0.2, 0.0, 1.0)]),
            ("Bernoulli(logits)", lambda p: D.Bernoulli(logits=p),
             (lambda p, o: L.clt_bernoulli_dist(None, p, 1, o), 1), [real(2, 3)]),
            ("Geometric", lambda p: D.Geometric(probs=p),
             (lambda p, o: L.clt_geometric_dist(p, None, 1, o), 1), [unit(3)]),
            ("Categorical", lambda p: D.Categorical(probs=p),
             (lambda p, o: L.clt_categorical_dist(p, None, 1, o), 1), [unit(2, 4)]),
            ("OneHotCategorical", lambda p: D.OneHotCategorical(logits=p),
             (lambda p, o: L.clt_one_hot_categorical_dist(None, p, 1, o), 1), [real(2, 4)]),
            ("Binomial", lambda n, p: D.Binomial(n, probs=p),
             (lambda n, p, o: L.clt_binomial_dist(n, p, None, 1, o), 2),
             [t(3.0, 5.0, 4.0), t(0.3, 1.0, 0.5)]),
            ("Binomial homogeneous", lambda n, p: D.Binomial(n, probs=p),
             (lambda n, p, o: L.clt_binomial_dist(n, p, None, 1, o), 2), [t(4.0), unit(2, 3)]),
            ("NegativeBinomial", lambda n, p: D.NegativeBinomial(n, probs=p),
             (lambda n, p, o: L.clt_negative_binomial_dist(n, p, None, 1, o), 2),
             [t(0.5, 3.0, 7.0), t(0.3, 0.65, 0.8)]),
            ("OneHotCategoricalStraightThrough",
             lambda p: D.OneHotCategoricalStraightThrough(probs=p),
             (lambda p, o: L.clt_one_hot_categorical_straight_through_dist(p, None, 1, o), 1),
             [unit(2, 4)]),
            ("Multinomial", lambda p: D.Multinomial(3, probs=p),
             (lambda p, o: L.clt_multinomial_dist(3, p, None, 1, o), 1), [unit(2, 3)]),
            ("ContinuousBernoulli", lambda p: D.ContinuousBernoulli(probs=p),
             (lambda p, o: L.clt_continuous_bernoulli_dist(p, None, 1, o), 1), [unit(3)]),
            ("RelaxedBernoulli", lambda p: D.RelaxedBernoulli(t(0.5), probs=p),
             None, [unit(3)]),
            ("MultivariateNormal", lambda l, m: D.MultivariateNormal(l, scale_tril=m),
             (lambda l, m, o: L.clt_multivariate_normal_dist(l, None, m, 1, o), 2),
             [real(2, 3), torch.tril(real(3, 3)) + 3 * torch.eye(3, dtype=dt)]),
            ("LowRankMultivariateNormal", lambda l, w, dg: D.LowRankMultivariateNormal(l, w, dg),
             (lambda l, w, dg, o: L.clt_lowrank_multivariate_normal_dist(l, w, dg, 1, o), 3),
             [real(2, 3), real(3, 2), pos(3)]),
        ]
        uni = (lambda a, b, o: L.clt_uniform_dist(a, b, 1, o), 2)
        rb = (lambda p, o: L.clt_relaxed_bernoulli_dist(tmp, p, None, 1, o), 1)
        for name, tcls, mk, args in fams:
            if name == "Uniform":
                args = [args[0], args[0] + args[1]]
                tcls = lambda a, b: D.Uniform(a, b)
                mk = uni
            if name == "RelaxedBernoulli":
                tmp_keep = []
                tmp = as_in(t(0.5)).build(tmp_keep)[1]
                mk = rb
            check("%s %s mode" % (name, dn(dt)), lambda *a, c=tcls: c(*a).mode,
                  _dist_c(mk, mode), args, tol=tol)
            check("%s %s perplexity" % (name, dn(dt)), lambda *a, c=tcls: c(*a).perplexity(),
                  _dist_c(mk, perp), args, tol=tol)
            for sup_exp in (0, 1):
                check("%s %s enumerate_support(%d)" % (name, dn(dt), sup_exp),
                      lambda *a, c=tcls, e=sup_exp: c(*a).enumerate_support(bool(e)),
                      _dist_c(mk, lambda d, o, e=sup_exp:
                              L.clt_distribution_enumerate_support(d, e, o)), args)
            d0 = tcls(*args)
            bs = list(d0.batch_shape)
            big = [2, 4] + [1 if s == 1 else s for s in bs]
            if bs:
                big[-1] = bs[-1]
            for what, cfn, tfn in (("mean", L.clt_distribution_mean, lambda d: d.mean),
                                   ("variance", L.clt_distribution_variance,
                                    lambda d: d.variance),
                                   ("entropy", L.clt_distribution_entropy,
                                    lambda d: d.entropy())):
                if name == "Multinomial" and what == "entropy":
                    continue  # torch's expanded Multinomial lacks its _binomial
                check("%s %s expand %s %s" % (name, dn(dt), big, what),
                      lambda *a, c=tcls, f=tfn, b=big: f(c(*a).expand(b)),
                      _dist_c(mk, expanded(cfn, big)), args, tol=tol)
            smp = d0.sample((3,))
            check("%s %s expand log_prob" % (name, dn(dt)),
                  lambda *a, c=tcls, b=big: c(*a).expand(b).log_prob(smp),
                  _dist_c(mk, expanded(L.clt_distribution_log_prob, big)), args + [smp], tol=tol)
            bad = [5] + bs[:-1] + [bs[-1] + 1] if bs else None
            if bad:
                check("%s %s expand %s refused" % (name, dn(dt), bad),
                      lambda *a, c=tcls, b=bad: c(*a).expand(b).mean,
                      _dist_c(mk, expanded(L.clt_distribution_mean, bad)), args)
        # Independent and MixtureSameFamily: their mode, enumerate_support and expand
        def composite(kind, call):
            def cfn(a, b, *rest):
                out, rest = rest[-1], rest[:-1]
                d1, d2, d3 = P(), P(), P()
                try:
                    if kind == "ind":
                        st = L.clt_bernoulli_dist(a, None, 1, C.byref(d1)) or \
                            L.clt_independent_dist(d1, b, 1, C.byref(d3))
                    else:
                        st = L.clt_categorical_dist(a, None, 1, C.byref(d1)) or \
                            L.clt_normal_dist(b, b, 1, C.byref(d2)) or \
                            L.clt_mixture_same_family_dist(d1, d2, 1, C.byref(d3))
                    if st:
                        out._obj.value = None
                        return st
                    return call(d3, *rest, out)
                finally:
                    for d in (d3, d2, d1):
                        L.clt_distribution_free(d)
            return cfn
        pb = t(0.5, 0.7, 0.2, 0.9, 0.1, 0.3).reshape(2, 3)
        for r in (0, 1, 2):
            ti = lambda p, r=r: D.Independent(D.Bernoulli(probs=p), r)
            ci = lambda call, r=r: (lambda a, *x: composite("ind", call)(a, r, *x))
            check("Independent(Bernoulli, %d) %s mode" % (r, dn(dt)), lambda p: ti(p).mode,
                  ci(mode), [pb], tol=tol)
            check("Independent(Bernoulli, %d) %s enumerate_support" % (r, dn(dt)),
                  lambda p: ti(p).enumerate_support(),
                  ci(lambda d, o: L.clt_distribution_enumerate_support(d, 1, o)), [pb])
            big = [4] + list(ti(pb).batch_shape)
            check("Independent(Bernoulli, %d) %s expand %s log_prob" % (r, dn(dt), big),
                  lambda p, v, b=big: ti(p).expand(b).log_prob(v),
                  ci(expanded(L.clt_distribution_log_prob, big)), [pb, torch.ones(5, 4, 2, 3, dtype=dt)],
                  tol=tol)
        tmix = lambda w, b: D.MixtureSameFamily(D.Categorical(probs=w), D.Normal(b, b))
        wm, bm = unit(3), pos(2, 3)
        check("MixtureSameFamily %s mode" % dn(dt), lambda w, b: tmix(w, b).mode,
              composite("mix", mode), [wm, bm])
        for what, cfn, tfn in (("mean", L.clt_distribution_mean, lambda d: d.mean),
                               ("variance", L.clt_distribution_variance, lambda d: d.variance)):
            check("MixtureSameFamily %s expand [5, 2] %s" % (dn(dt), what),
                  lambda w, b, f=tfn: f(tmix(w, b).expand([5, 2])),
                  composite("mix", expanded(cfn, [5, 2])), [wm, bm], tol=tol)
        check("MixtureSameFamily %s expand [5, 2] log_prob" % dn(dt),
              lambda w, b, v: tmix(w, b).expand([5, 2]).log_prob(v),
              composite("mix", expanded(L.clt_distribution_log_prob, [5, 2])),
              [wm, bm, real(5, 2)], tol=tol)
        # Wishart, from each of its matrices
        proto("clt_wishart_dist", [P, P, P, P, C.c_int, PP])
        wa = real(2, 3, 3)
        wcov = wa @ wa.transpose(-1, -2) + 2 * torch.eye(3, dtype=dt)
        wdf = t(3.5, 6.0)
        wv = real(4, 1, 3, 3)
        wv = wv @ wv.transpose(-1, -2) + torch.eye(3, dtype=dt)
        for form in ("covariance_matrix", "precision_matrix", "scale_tril"):
            mat = wcov if form != "scale_tril" else torch.linalg.cholesky(wcov)
            tw = lambda df, m_, f_=form: D.Wishart(df, **{f_: m_})
            mk = (lambda df, m_, o, f_=form: L.clt_wishart_dist(
                df, m_ if f_ == "covariance_matrix" else None,
                m_ if f_ == "precision_matrix" else None,
                m_ if f_ == "scale_tril" else None, 1, o), 2)
            for what, cfn, tfn in (("mean", L.clt_distribution_mean, lambda d: d.mean),
                                   ("variance", L.clt_distribution_variance, lambda d: d.variance),
                                   ("entropy", L.clt_distribution_entropy, lambda d: d.entropy()),
                                   ("mode", mode, lambda d: d.mode),
                                   ("perplexity", perp, lambda d: d.perplexity())):
                check("Wishart(%s) %s %s" % (form, dn(dt), what), lambda df, m_, f=tfn: f(tw(df, m_)),
                      _dist_c(mk, cfn), [wdf, mat], tol=tol)
            check("Wishart(%s) %s log_prob" % (form, dn(dt)), lambda df, m_, v: tw(df, m_).log_prob(v),
                  _dist_c(mk, L.clt_distribution_log_prob), [wdf, mat, wv], tol=tol)
            check("Wishart(%s) %s df too small" % (form, dn(dt)), lambda df, m_: tw(df, m_).mean,
                  _dist_c(mk, L.clt_distribution_mean), [t(2.0, 6.0), mat])
            check("Wishart(%s) %s expand log_prob" % (form, dn(dt)),
                  lambda df, m_, v: tw(df, m_).expand([4, 2]).log_prob(v),
                  _dist_c(mk, expanded(L.clt_distribution_log_prob, [4, 2])), [wdf, mat, wv],
                  tol=tol)
        wl = torch.linalg.cholesky(wcov)
        mkl = (lambda df, m_, o: L.clt_wishart_dist(df, None, None, m_, 1, o), 2)
        check("Wishart %s df scalar mode NaN" % dn(dt), lambda df, m_: D.Wishart(df, scale_tril=m_).mode,
              _dist_c(mkl, mode), [t(3.5), wl])
        check("Wishart %s not lower" % dn(dt), lambda df, m_: D.Wishart(df, scale_tril=m_).mean,
              _dist_c(mkl, L.clt_distribution_mean), [wdf, wcov])
        nonpd = wv[0, 0].clone()
        nonpd[1, 1] = -3
        check("Wishart %s value not positive-definite" % dn(dt),
              lambda df, m_, v: D.Wishart(df, scale_tril=m_).log_prob(v),
              _dist_c(mkl, L.clt_distribution_log_prob), [wdf, wl, nonpd])
        # LKJCholesky: log_prob at torch's samples, our samples in its support
        proto("clt_lkj_cholesky_dist", [C.c_int64, P, C.c_int, PP])
        proto("clt_generator_new", [C.c_uint64, PP])
        proto("clt_generator_free", [P], None)
        proto("clt_distribution_sample", [P, P, C.c_int, I64P, PP])
        for dim in (2, 3, 5):
            lc = t(0.5, 1.0, 2.5)
            mkj = (lambda c_, o, dm=dim: L.clt_lkj_cholesky_dist(dm, c_, 1, o), 1)
            tj = lambda c_, dm=dim: D.LKJCholesky(dm, c_)
            lv = tj(lc).sample((4,))
            check("LKJCholesky(%d) %s log_prob" % (dim, dn(dt)), lambda c_, v: tj(c_).log_prob(v),
                  _dist_c(mkj, L.clt_distribution_log_prob), [lc, lv], tol=tol)
            for what, cfn in (("entropy", L.clt_distribution_entropy),
                              ("mean", L.clt_distribution_mean), ("mode", mode)):
                check("LKJCholesky(%d) %s %s refused" % (dim, dn(dt), what),
                      lambda c_: tj(c_).entropy(), _dist_c(mkj, cfn), [lc],
                      expect_error=NotImplementedError())

            def lkj_sample(c_, o, dm=dim):
                d, g = P(), P()
                try:
                    st = L.clt_lkj_cholesky_dist(dm, c_, 1, C.byref(d))
                    if st:
                        return st
                    assert L.clt_generator_new(5, C.byref(g)) == 0
                    return L.clt_distribution_sample(d, g, 1, shape_arr([200]), o)
                finally:
                    L.clt_distribution_free(d)
                    L.clt_generator_free(g)
            out = P()
            keep_ = []
            cin = as_in(lc).build(keep_)[1]
            ok("LKJCholesky(%d) %s sample" % (dim, dn(dt)), lkj_sample(cin, C.byref(out)) == 0,
               L.clt_last_error())
            if out.value:
                got, shape, _ = download(out)
                L.clt_tensor_free(out)
                smp = torch.from_numpy(np.array(got)).reshape(shape)
                ok("LKJCholesky(%d) %s sample shape" % (dim, dn(dt)), shape == (200, 3, dim, dim))
                ok("LKJCholesky(%d) %s sample support" % (dim, dn(dt)),
                   bool(D.constraints.corr_cholesky.check(smp).all()))
                # E[L L^T] = I (off-diagonal correlations average to 0)
                corr = (smp @ smp.transpose(-1, -2)).mean(0)
                ok("LKJCholesky(%d) %s sample correlations" % (dim, dn(dt)),
                   bool(torch.allclose(corr, torch.eye(dim, dtype=corr.dtype).expand_as(corr),
                                       atol=0.15)), str(corr))
        proto("clt_generator_new", [C.c_uint64, PP])
        proto("clt_generator_free", [P], None)
        proto("clt_distribution_sample", [P, P, C.c_int, I64P, PP])
        check("LKJCholesky(1) %s" % dn(dt), lambda c_: D.LKJCholesky(1, c_).sample(),
              _dist_c((lambda c_, o: L.clt_lkj_cholesky_dist(1, c_, 1, o), 1),
                      L.clt_distribution_mean), [t(1.0)])
        check("LKJCholesky %s negative concentration" % dn(dt),
              lambda c_: D.LKJCholesky(3, c_).sample(),
              _dist_c((lambda c_, o: L.clt_lkj_cholesky_dist(3, c_, 1, o), 1),
                      L.clt_distribution_mean), [t(-1.0)])
        check("LKJCholesky %s value off the support" % dn(dt),
              lambda c_, v: D.LKJCholesky(2, c_).log_prob(v),
              _dist_c((lambda c_, o: L.clt_lkj_cholesky_dist(2, c_, 1, o), 1),
                      L.clt_distribution_log_prob), [t(1.0), t(1.0, 0.0, 0.5, 0.5).reshape(2, 2)])
        # MultivariateNormal(precision_matrix=...)
        mvp = (lambda l, m, o: L.clt_multivariate_normal_precision_dist(l, m, 1, o), 2)
        a = real(2, 3, 3)
        prec = a @ a.transpose(-1, -2) + 3 * torch.eye(3, dtype=dt)
        loc = real(3)
        val = real(4, 2, 3)
        tm = lambda l, p: D.MultivariateNormal(l, precision_matrix=p)
        for what, cfn, tfn in (("mean", L.clt_distribution_mean, lambda d: d.mean),
                               ("variance", L.clt_distribution_variance, lambda d: d.variance),
                               ("entropy", L.clt_distribution_entropy, lambda d: d.entropy()),
                               ("mode", mode, lambda d: d.mode),
                               ("scale_tril", L.clt_distribution_scale_tril,
                                lambda d: d.scale_tril),
                               ("covariance_matrix", L.clt_distribution_covariance_matrix,
                                lambda d: d.covariance_matrix),
                               ("precision_matrix", L.clt_distribution_precision_matrix,
                                lambda d: d.precision_matrix)):
            check("MultivariateNormal(precision) %s %s" % (dn(dt), what),
                  lambda l, p, f=tfn: f(tm(l, p)), _dist_c(mvp, cfn), [loc, prec], tol=tol)
        check("MultivariateNormal(precision) %s log_prob" % dn(dt),
              lambda l, p, v: tm(l, p).log_prob(v),
              _dist_c(mvp, L.clt_distribution_log_prob), [loc, prec, val], tol=tol)
        check("MultivariateNormal(precision) %s KL with covariance" % dn(dt),
              lambda l, p, l2, c: D.kl_divergence(tm(l, p), D.MultivariateNormal(l2, c)),
              _dist_c([mvp, (lambda l, c, o: L.clt_multivariate_normal_dist(l, c, None, 1, o), 2)],
                      L.clt_kl_divergence), [loc, prec, real(2, 3), prec.flip(0)], tol=tol)
        notpd = prec.clone()
        notpd[0, 0, 0] = -1
        check("MultivariateNormal(precision) %s not positive-definite" % dn(dt),
              lambda l, p: tm(l, p).mean, _dist_c(mvp, L.clt_distribution_mean), [loc, notpd])
        asym = prec.clone()
        asym[0, 0, 1] += 1
        check("MultivariateNormal(precision) %s not symmetric" % dn(dt),
              lambda l, p: tm(l, p).mean, _dist_c(mvp, L.clt_distribution_mean), [loc, asym])
        check("MultivariateNormal(precision) %s of 1 dim" % dn(dt),
              lambda l, p: tm(l, p).mean, _dist_c(mvp, L.clt_distribution_mean), [loc, loc])


# ---- quantization-aware training (quant) ------------------------------------


class _ObsOpts(C.Structure):
    _fields_ = [("kind", C.c_int), ("dtype", C.c_int), ("qscheme", C.c_int),
                ("reduce_range", C.c_int), ("has_range", C.c_int), ("quant_min", C.c_int64),
                ("quant_max", C.c_int64), ("averaging_constant", C.c_double),
                ("ch_axis", C.c_int), ("num_channels", C.c_int64), ("eps", C.c_double),
                ("bins", C.c_int64), ("upsample_rate", C.c_int64)]


def lobpcg():
    """torch.lobpcg from the same initial X: the values after 1 or 3 steps
    and at convergence (torch's iteration is deterministic then), both
    methods, largest and smallest, batched; at convergence also numpy's
    eigh values and A X = X diag(E); torch's refusals."""
    proto("clt_lobpcg", [P, C.c_int64, P, P, C.c_int64, P, C.c_int64, C.POINTER(C.c_double),
                         C.c_int, C.c_char_p, P, P, PP, PP])

    def call(a, k, b, x, n, niter, largest, method):
        e, v = P(0xdead), P(0xdead)
        st = L.clt_lobpcg(a, k, b, x, n, None, niter, None, largest, method, None, None,
                          C.byref(e), C.byref(v))
        return st, e, v

    for dt in FLOATS:
        for method in ("ortho", "basic"):
            for largest in (1, 0):
                for sh, k, n in (((12, 12), 2, 2), ((2, 20, 20), 2, 3), ((9, 9), 1, 1)):
                    m = sh[-1]
                    q = torch.randn(sh, generator=G, dtype=torch.float64)
                    d = torch.diag_embed(torch.arange(m, dtype=torch.float64).expand(sh[:-1]))
                    a = (q @ q.mT / m + d).to(dt)
                    x = torch.randn(sh[:-1] + (n,), generator=G, dtype=torch.float64).to(dt)
                    ref = np.linalg.eigh(a.double().numpy())[0]
                    scale = float(np.abs(ref).max())
                    for niter in (1, 3, -1):
                        name = "lobpcg %s %s largest=%d %s k=%d n=%d niter=%d" % (
                            dt, method, largest, list(sh), k, n, niter)
                        et, vt = torch.lobpcg(a, k=k, X=x.clone(), niter=niter,
                                              largest=bool(largest), method=method)
                        keep = [upload(a), upload(x)]
                        st, e, v = call(keep[0], k, None, keep[1], 0, niter, largest,
                                        method.encode())
                        if st:
                            fail(name, "cltensor fails: %s" % L.clt_last_error())
                            continue
                        keep += [e, v]
                        ge, gv = download(e)[0], download(v)[0]
                        tol = (2e-4 if dt == torch.float32 else 1e-9) * scale
                        ok(name + " shapes", ge.shape == tuple(et.shape) and
                           gv.shape == tuple(vt.shape), "%s %s, torch %s %s" % (
                               ge.shape, gv.shape, tuple(et.shape), tuple(vt.shape)))
                        ok(name + " values", np.abs(ge - et.numpy()).max() <= tol,
                           "%s, torch %s" % (ge, et))
                        if niter == -1:
                            want = ref[..., ::-1][..., :k] if largest else ref[..., :k]
                            rtol = (1e-3 if dt == torch.float32 else 1e-7) * scale
                            ok(name + " eigh", np.abs(ge - want).max() <= rtol,
                               "%s, numpy %s" % (ge, want))
                            an = a.numpy()
                            res = an @ gv - gv * ge[..., None, :]
                            ok(name + " AX = XE", np.abs(res).max() <= 10 * rtol,
                               "off by %g" % np.abs(res).max())
                        for p in keep:
                            L.clt_tensor_free(p)
    # torch's refusals: m < 3 n (its message), an integer A, B or X of
    # another shape, X of another dtype
    a8 = torch.eye(8, dtype=torch.float64)
    cases = [("m < 3n", a8, 3, None, None, 0),
             ("m < 3n from X", a8, 0, None, torch.randn(8, 3, dtype=torch.float64), 0),
             ("int A", torch.eye(8, dtype=torch.int64), 1, None, None, 0),
             ("B shape", a8, 1, torch.eye(9, dtype=torch.float64), None, 0),
             ("X rows", a8, 1, None, torch.randn(7, 1, dtype=torch.float64), 0),
             ("X dtype", a8, 1, None, torch.randn(8, 1, dtype=torch.float32), 0)]
    for what, a, k, b, x, n in cases:
        name = "lobpcg refuses %s" % what
        try:
            torch.lobpcg(a, k=k or None, B=b, X=x, n=n or None, niter=3)
            fail(name, "torch accepts it")
            continue
        except Exception as ex:
            terr = str(ex)
        keep = [upload(t) for t in (a, b, x) if t is not None]
        ps = iter(keep)
        ca = next(ps)
        cb = next(ps) if b is not None else None
        cx = next(ps) if x is not None else None
        st, e, v = call(ca, k, cb, cx, n, 3, 1, None)
        ok(name, st != 0 and e.value is None and v.value is None and L.clt_last_error(),
           "status %d, outs %s %s" % (st, e.value, v.value))
        if what.startswith("m < 3n"):
            ok(name + " message", terr in L.clt_last_error().decode(),
               "%s, torch %s" % (L.clt_last_error(), terr))
        for p in keep:
            L.clt_tensor_free(p)


def quant():
    """fake quantization (ties, masks, per channel, learnable), quantize_per_tensor,
    dequantize, the observers' qparams and FakeQuantize against torch.ao.quantization."""
    import tempfile
    from torch.ao import quantization as Q
    f, d, h = torch.float32, torch.float64, torch.float16
    proto("clt_fake_quantize_per_tensor_affine",
          [P, C.c_double, C.c_int64, C.c_int64, C.c_int64, PP])
    proto("clt_fake_quantize_per_tensor_affine_t", [P, P, P, C.c_int64, C.c_int64, PP])
    proto("clt_fake_quantize_per_channel_affine",
          [P, P, P, C.c_int, C.c_int64, C.c_int64, PP])
    proto("clt_fake_quantize_learnable_per_tensor_affine",
          [P, P, P, C.c_int64, C.c_int64, C.c_double, PP])
    proto("clt_fake_quantize_learnable_per_channel_affine",
          [P, P, P, C.c_int, C.c_int64, C.c_int64, C.c_double, PP])
    proto("clt_quantize_per_tensor", [P, C.c_double, C.c_int64, C.c_int, PP])
    proto("clt_dequantize", [P, C.c_double, C.c_int64, PP])
    proto("clt_quantize_per_channel", [P, P, P, C.c_int, C.c_int, PP])
    proto("clt_dequantize_per_channel", [P, P, P, C.c_int, PP])
    proto("clt_observer", [P, C.POINTER(_ObsOpts), PP])
    proto("clt_fake_quantize_layer", [P, C.POINTER(_ObsOpts), PP])
    proto("clt_observer_calculate_qparams", [P, PP, PP])
    proto("clt_module_save_torch", [P, C.c_char_p])
    proto("clt_fake_quantize_enable_fake_quant", [P, C.c_int])
    proto("clt_fake_quantize_enable_observer", [P, C.c_int])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_buffer", [P, C.c_char_p], P)
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_grad", [P, PP])
    ties = [0.25, 0.75, 1.25, -0.25, -0.75, -1.25, 2.5, -2.5, 100.0, -100.0, 0.0, -0.0, 1e30,
            -1e30, math.inf, -math.inf]
    fqt = torch.fake_quantize_per_tensor_affine
    for dt in (f, d, h):
        tol = "exact" if dt != h else "ew"
        for s, z, lo, hi in ((0.5, 3, 0, 255), (0.1, 0, -128, 127), (0.5, -10, -64, 63),
                             (1e-3, 10, 0, 15), (0.0, 0, 0, 255), (0.37, 2, 0, 2 ** 31 - 1),
                             (0.25, 0, 0, 0)):
            x = torch.cat([torch.tensor(ties, dtype=dt), data((40,), dt, lo=-30, hi=30)])
            check("fake_quantize_per_tensor %s s=%g z=%d [%d,%d]" % (dn(dt), s, z, lo, hi),
                  lambda t, s=s, z=z, lo=lo, hi=hi: fqt(t, s, z, lo, hi),
                  lambda t, o, s=s, z=z, lo=lo, hi=hi: L.clt_fake_quantize_per_tensor_affine(
                      t, s, z, lo, hi, o), [x], tol=tol)
            sz = [torch.tensor(s, dtype=f), torch.tensor([z], dtype=torch.int32)]
            check("fake_quantize_per_tensor tensor qparams %s s=%g z=%d" % (dn(dt), s, z),
                  lambda t, ts, tz, lo=lo, hi=hi: fqt(t, ts, tz, lo, hi),
                  lambda t, ts, tz, o, lo=lo, hi=hi: L.clt_fake_quantize_per_tensor_affine_t(
                      t, ts, tz, lo, hi, o), [x] + sz, tol=tol)
    x = data((3, 4), f)
    check("fake_quantize_per_tensor transposed",
          lambda t: fqt(t, 0.3, 1, -8, 7),
          lambda t, o: L.clt_fake_quantize_per_tensor_affine(t, 0.3, 1, -8, 7, o),
          [In(x, ("T",))], tol="exact")
    check("fake_quantize_per_tensor empty", lambda t: fqt(t, 0.3, 1, -8, 7),
          lambda t, o: L.clt_fake_quantize_per_tensor_affine(t, 0.3, 1, -8, 7, o),
          [data((0, 3), f)], tol="exact")
    for name, s, z, lo, hi, dt in (("zero_point above", 0.5, 300, 0, 255, f),
                                   ("zero_point below", 0.5, -1, 0, 255, f),
                                   ("quant_min > quant_max", 0.5, 0, 10, 5, f),
                                   ("int32 input", 0.5, 0, 0, 255, torch.int32),
                                   ("int8 input", 0.5, 0, 0, 255, torch.int8),
                                   # torch 1.13 has no bfloat16 kernel for it
                                   ("bfloat16 input", 0.5, 0, 0, 255, torch.bfloat16)):
        check("fake_quantize_per_tensor error %s" % name,
              lambda t, s=s, z=z, lo=lo, hi=hi: fqt(t, s, z, lo, hi),
              lambda t, o, s=s, z=z, lo=lo, hi=hi: L.clt_fake_quantize_per_tensor_affine(
                  t, s, z, lo, hi, o), [data((4,), dt)])
    # per channel
    fqc = torch.fake_quantize_per_channel_affine
    for dt in (f, d, h):
        tol = "exact" if dt != h else "ew"
        for shape, axis in (((2, 3, 4), 1), ((5, 3), 0), ((2, 3, 4), -1), ((6,), 0),
                            ((2, 2, 3, 4), 2)):
            n = shape[axis]
            x = data(shape, dt, lo=-10, hi=10)
            x.view(-1)[:4] = torch.tensor([0.25, -0.75, 2.5, -100.0], dtype=dt)
            sc = torch.rand(n, generator=G) * 0.5 + 0.05
            sc[0] = 0.5
            for zdt in (torch.int32, torch.int64, f, h):
                zp = torch.randint(-3, 4, (n,), generator=G).to(zdt)
                for lo, hi in ((-8, 7), (-128, 127)):
                    check("fake_quantize_per_channel %s %s axis %d zp %s [%d,%d]" % (
                        dn(dt), list(shape), axis, dn(zdt), lo, hi),
                        lambda t, a, b, ax=axis, lo=lo, hi=hi: fqc(t, a, b, ax, lo, hi),
                        lambda t, a, b, o, ax=axis, lo=lo, hi=hi:
                        L.clt_fake_quantize_per_channel_affine(t, a, b, ax, lo, hi, o),
                        [x, sc, zp], tol=tol)
    x = data((2, 3, 4), f)
    for name, sc, zp, ax in (("scale size", torch.ones(4), torch.zeros(4, dtype=torch.int32), 1),
                             ("axis out of range", torch.ones(3), torch.zeros(3, dtype=torch.int32), 3),
                             ("scale 2-d", torch.ones(1, 3), torch.zeros(3, dtype=torch.int32), 1),
                             ("zero_point float64", torch.ones(3), torch.zeros(3, dtype=d), 1)):
        check("fake_quantize_per_channel error %s" % name,
              lambda t, a, b, ax=ax: fqc(t, a, b, ax, 0, 255),
              lambda t, a, b, o, ax=ax: L.clt_fake_quantize_per_channel_affine(
                  t, a, b, ax, 0, 255, o), [x, sc, zp],
              expect_error="refused" if name == "zero_point float64" else None)
    check("fake_quantize_per_channel error bfloat16 input",
          lambda t, a, b: fqc(t, a, b, 1, 0, 255),
          lambda t, a, b, o: L.clt_fake_quantize_per_channel_affine(t, a, b, 1, 0, 255, o),
          [x.bfloat16(), torch.ones(3), torch.zeros(3, dtype=torch.int32)])
    # learnable: forward values
    fql = torch._fake_quantize_learnable_per_tensor_affine
    fqlc = torch._fake_quantize_learnable_per_channel_affine
    x = torch.cat([torch.tensor(ties[:12], dtype=f), data((30,), f, lo=-40, hi=40)])
    for s, z, lo, hi in ((0.5, 3.4, 0, 255), (0.5, 2.5, 0, 255), (0.25, -0.5, 0, 15),
                         (0.3, 3.5, -8, 7), (0.2, 300.0, 0, 255)):
        check("fake_quantize_learnable_per_tensor s=%g z=%g" % (s, z),
              lambda t, a, b, lo=lo, hi=hi: fql(t, a, b, lo, hi, 1.0),
              lambda t, a, b, o, lo=lo, hi=hi:
              L.clt_fake_quantize_learnable_per_tensor_affine(t, a, b, lo, hi, 1.0, o),
              [x, torch.tensor([s]), torch.tensor([z])], tol="exact")
    x = data((2, 3, 4), f, lo=-10, hi=10)
    check("fake_quantize_learnable_per_channel",
          lambda t, a, b: fqlc(t, a, b, 1, -8, 7, 1.0),
          lambda t, a, b, o: L.clt_fake_quantize_learnable_per_channel_affine(
              t, a, b, 1, -8, 7, 1.0, o),
          [x, torch.tensor([0.5, 0.3, 0.7]), torch.tensor([0.5, 1.5, -2.6])], tol="exact")

    # learnable: gradients of x, scale and zero point (float32, torch's formulas)
    def grads(name, tfn, cfn, x, s, z, tol=(2e-5, 1e-5)):
        tx, ts, tz = (t.clone().requires_grad_() for t in (x, s, z))
        ty = tfn(tx, ts, tz)
        w = torch.linspace(-1.0, 2.0, ty.numel()).reshape(ty.shape)
        (ty * w).sum().backward()
        keep = []
        try:
            cx = [upload(t) for t in (x, s, z)]
            keep += cx
            for p in cx:
                L.clt_set_requires_grad(p, 1)
            y, m, loss = P(), P(), P()
            if cfn(*cx, C.byref(y)) != 0:
                return fail(name, L.clt_last_error().decode())
            keep.append(y)
            cw = upload(w)
            keep.append(cw)
            assert L.clt_mul(y, cw, C.byref(m)) == 0
            keep.append(m)
            assert L.clt_sum(m, C.byref(loss)) == 0
            keep.append(loss)
            if L.clt_backward(loss, None, 0) != 0:
                return fail(name, L.clt_last_error().decode())
            for k, (p, t) in enumerate(zip(cx, (tx, ts, tz))):
                g = P()
                assert L.clt_grad(p, C.byref(g)) == 0
                keep.append(g)
                got = download(g)[0]
                e = t.grad.numpy()
                if not np.allclose(got, e, rtol=tol[0], atol=tol[1]):
                    return fail(name, "gradient %d: torch %s, cltensor %s" % (
                        k, e.ravel()[:6], got.ravel()[:6]))
            ok(name, True)
        finally:
            for p in keep:
                L.clt_tensor_free(p)

    proto("clt_mul", [P, P, PP])
    proto("clt_sum", [P, PP])
    x = torch.cat([torch.tensor(ties[:12], dtype=f), data((30,), f, lo=-40, hi=40)])
    for s, z, lo, hi, gf in ((0.5, 3.4, 0, 255, 1.0), (0.5, 2.5, 0, 255, 0.5),
                             (0.25, -0.5, -8, 7, 1.0), (0.3, 3.5, -8, 7, 2.0)):
        grads("fake_quantize_learnable_per_tensor grads s=%g z=%g gf=%g" % (s, z, gf),
              lambda t, a, b, lo=lo, hi=hi, gf=gf: fql(t, a, b, lo, hi, gf),
              lambda t, a, b, o, lo=lo, hi=hi, gf=gf:
              L.clt_fake_quantize_learnable_per_tensor_affine(t, a, b, lo, hi, gf, o),
              x, torch.tensor([s]), torch.tensor([z]))
    for shape, axis in (((2, 3, 4), 1), ((4, 3), 0), ((2, 3, 4), 2)):
        n = shape[axis]
        x = data(shape, f, lo=-6, hi=6)
        s = torch.rand(n, generator=G) * 0.5 + 0.1
        z = torch.tensor([0.5, 1.5, -2.6, 3.2][:n] + [0.0] * max(0, n - 4))
        grads("fake_quantize_learnable_per_channel grads %s axis %d" % (list(shape), axis),
              lambda t, a, b, ax=axis: fqlc(t, a, b, ax, -8, 7, 0.7),
              lambda t, a, b, o, ax=axis: L.clt_fake_quantize_learnable_per_channel_affine(
                  t, a, b, ax, -8, 7, 0.7, o), x, s, z)

    # quantize_per_tensor and dequantize
    x = torch.cat([torch.tensor(ties[:14]), data((30,), f, lo=-300, hi=300)])
    for s, z, qd, tq in ((0.5, 3, 0, torch.quint8), (0.1, 0, 0, torch.quint8),
                         (0.5, -5, 2, torch.qint32), (1e-7, 100, 2, torch.qint32),
                         (0.0, 4, 0, torch.quint8), (0.5, 0, 1, torch.qint8),
                         (0.1, -7, 1, torch.qint8), (2.0, 127, 1, torch.qint8),
                         (0.0, -3, 1, torch.qint8)):
        check("quantize_per_tensor %s s=%g z=%d" % (tq, s, z),
              lambda t, s=s, z=z, tq=tq: torch.quantize_per_tensor(t, s, z, tq).int_repr(),
              lambda t, o, s=s, z=z, qd=qd: L.clt_quantize_per_tensor(t, s, z, qd, o), [x],
              tol="exact")
        if s > 0:
            q = torch.quantize_per_tensor(x, s, z, tq)
            check("dequantize %s s=%g z=%d" % (tq, s, z),
                  lambda t, s=s, z=z, tq=tq: torch._make_per_tensor_quantized_tensor(
                      t, s, z).dequantize(),
                  lambda t, o, s=s, z=z: L.clt_dequantize(t, s, z, o), [q.int_repr()])
    check("quantize_per_tensor zero_point above",
          lambda t: torch.quantize_per_tensor(t, 0.5, 256, torch.quint8),
          lambda t, o: L.clt_quantize_per_tensor(t, 0.5, 256, 0, o), [x])
    check("quantize_per_tensor float64",
          lambda t: torch.quantize_per_tensor(t, 0.5, 2, torch.quint8),
          lambda t, o: L.clt_quantize_per_tensor(t, 0.5, 2, 0, o), [x.double()])
    check("quantize_per_tensor qint8 zero_point above",
          lambda t: torch.quantize_per_tensor(t, 0.5, 128, torch.qint8),
          lambda t, o: L.clt_quantize_per_tensor(t, 0.5, 128, 1, o), [x])

    # quantize_per_channel and its dequantize
    xc = torch.cat([torch.tensor(ties[:14]), data((46,), f, lo=-300, hi=300)]).reshape(3, 4, 5)
    for axis in (0, 1, 2):
        n = xc.shape[axis]
        sc = torch.tensor([0.5, 0.1, 2.0, 1e-3, 0.25][:n])
        for zl, qd, tq in (([3, 0, 255, 17, 128], 0, torch.quint8),
                           ([-7, 0, 127, -128, 5], 1, torch.qint8),
                           ([-5, 100000, 0, -100000, 3], 2, torch.qint32)):
            zp = torch.tensor(zl[:n])
            check("quantize_per_channel %s axis %d" % (tq, axis),
                  lambda t, a, b, ax=axis, tq=tq: torch.quantize_per_channel(
                      t, a, b, ax, tq).int_repr(),
                  lambda t, a, b, o, ax=axis, qd=qd: L.clt_quantize_per_channel(
                      t, a, b, ax, qd, o), [xc, sc, zp], tol="exact")
            q = torch.quantize_per_channel(xc, sc, zp, axis, tq)
            check("dequantize per_channel %s axis %d" % (tq, axis),
                  lambda t, a, b, ax=axis: torch._make_per_channel_quantized_tensor(
                      t, a, b, ax).dequantize(),
                  lambda t, a, b, o, ax=axis: L.clt_dequantize_per_channel(t, a, b, ax, o),
                  [q.int_repr(), sc, zp])
    sc3, zp3 = torch.tensor([0.5, 0.5, 0.5]), torch.tensor([0, 300, 0])
    check("quantize_per_channel zero_point above",
          lambda t, a, b: torch.quantize_per_channel(t, a, b, 0, torch.quint8),
          lambda t, a, b, o: L.clt_quantize_per_channel(t, a, b, 0, 0, o), [xc, sc3, zp3])
    check("quantize_per_channel axis out of range",
          lambda t, a, b: torch.quantize_per_channel(t, a, b, 3, torch.quint8),
          lambda t, a, b, o: L.clt_quantize_per_channel(t, a, b, 3, 0, o),
          [xc, sc3, torch.tensor([0, 1, 2])])
    check("quantize_per_channel scales length",
          lambda t, a, b: torch.quantize_per_channel(t, a, b, 1, torch.quint8),
          lambda t, a, b, o: L.clt_quantize_per_channel(t, a, b, 1, 0, o),
          [xc, sc3, torch.tensor([0, 1, 2])])

    # observers: buffers and calculate_qparams after a few batches
    QD = {torch.quint8: 0, torch.qint8: 1, torch.qint32: 2}
    QS = {torch.per_tensor_affine: 0, torch.per_tensor_symmetric: 1,
          torch.per_channel_affine: 2, torch.per_channel_symmetric: 3}
    KIND = {Q.MinMaxObserver: 0, Q.MovingAverageMinMaxObserver: 1,
            Q.PerChannelMinMaxObserver: 2, Q.MovingAveragePerChannelMinMaxObserver: 3}

    def opts_of(cls, kw, nch):
        o = _ObsOpts()
        o.kind = KIND[cls]
        o.dtype = QD[kw.get("dtype", torch.quint8)]
        pc = o.kind >= 2
        o.qscheme = QS[kw.get("qscheme", torch.per_channel_affine if pc
                              else torch.per_tensor_affine)]
        o.reduce_range = int(kw.get("reduce_range", False))
        o.has_range = int("quant_min" in kw)
        o.quant_min, o.quant_max = kw.get("quant_min", 0), kw.get("quant_max", 0)
        o.averaging_constant = kw.get("averaging_constant", 0.01)
        o.ch_axis = kw.get("ch_axis", 0)
        o.num_channels = nch
        o.eps = kw.get("eps", torch.finfo(torch.float32).eps)
        o.bins, o.upsample_rate = 2048, 128
        return o

    def same(name, what, e, got, tol):
        if e.shape != got.shape or e.dtype != got.dtype:
            return fail(name, "%s: torch %s %s, cltensor %s %s" % (
                what, e.dtype, e.shape, got.dtype, got.shape))
        if not np.allclose(got, e, rtol=tol, atol=0, equal_nan=True):
            return fail(name, "%s: torch %s, cltensor %s" % (what, e.ravel()[:6],
                                                             got.ravel()[:6]))
        return True

    def observer_case(name, cls, kw, batches, nch=0, fq=False):
        tm = Q.FakeQuantize(observer=cls, **kw) if fq else cls(**kw)
        o = opts_of(cls, kw, nch)
        m, keep = P(), []
        ctor = L.clt_fake_quantize_layer if fq else L.clt_observer
        if ctor(DEV, C.byref(o), C.byref(m)) != 0:
            return fail(name, L.clt_last_error().decode())
        try:
            for k, b in enumerate(batches):
                if fq and k == len(batches) - 1:  # the last batch with the observer off
                    tm.disable_observer()
                    assert L.clt_fake_quantize_enable_observer(m, 0) == 0
                ty = tm(b)
                cx = upload(b)
                keep.append(cx)
                y = P()
                if L.clt_module_forward(m, cx, C.byref(y)) != 0:
                    return fail(name, "forward: " + L.clt_last_error().decode())
                keep.append(y)
                if same(name, "forward %d" % k, ty.detach().numpy(), download(y)[0],
                        0) is not True:
                    return
            obs = tm.activation_post_process if fq else tm
            for b in ("min_val", "max_val"):
                cb = L.clt_module_buffer(m if not fq else None, b.encode()) if not fq else None
                if not fq and same(name, b, getattr(obs, b).numpy(), download(cb)[0],
                                   1e-6) is not True:
                    return
            s, z = P(), P()
            if L.clt_observer_calculate_qparams(m, C.byref(s), C.byref(z)) != 0:
                return fail(name, L.clt_last_error().decode())
            keep += [s, z]
            es, ez = obs.calculate_qparams()
            if same(name, "scale", es.numpy(), download(s)[0], 1e-6) is not True:
                return
            if same(name, "zero_point", ez.numpy(), download(z)[0], 0) is not True:
                return
            if fq:
                for b in ("scale", "zero_point"):
                    if same(name, "buffer " + b, getattr(tm, b).numpy(),
                            download(L.clt_module_buffer(m, b.encode()))[0], 1e-6) is not True:
                        return
            # the state clt_module_save_torch writes loads into a new torch
            # module, strictly (per-channel observers, eps: torch reads
            # the file's _metadata versions), and equals torch's own
            with tempfile.TemporaryDirectory() as td:
                path = os.path.join(td, "q.pt")
                if L.clt_module_save_torch(m, path.encode()) != 0:
                    return fail(name, "save: " + L.clt_last_error().decode())
                fresh = Q.FakeQuantize(observer=cls, **kw) if fq else cls(**kw)
                try:
                    fresh.load_state_dict(torch.load(path), strict=True)
                except RuntimeError as e:
                    return fail(name, "torch's load_state_dict: %s" % e)
                for key, v in tm.state_dict().items():
                    if same(name, "loaded " + key, v.numpy(),
                            fresh.state_dict()[key].numpy(), 0) is not True:
                        return
            ok(name, True)
        finally:
            for p in keep:
                L.clt_tensor_free(p)
            L.clt_module_free(m)

    def batches(shape, n=3, lo=-4, hi=6):
        return [data(shape, f, lo=lo * (k + 1), hi=hi + k) for k in range(n)]

    tensor_kws = [{}, {"dtype": torch.qint8}, {"reduce_range": True},
                  {"dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric},
                  {"qscheme": torch.per_tensor_symmetric},
                  {"dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric,
                   "reduce_range": True},
                  {"quant_min": 0, "quant_max": 15},
                  {"dtype": torch.qint8, "quant_min": -8, "quant_max": 7},
                  {"quant_min": 0, "quant_max": 15, "qscheme": torch.per_tensor_symmetric},
                  {"dtype": torch.qint32}, {"eps": 2.0 ** -10}]
    for cls in (Q.MinMaxObserver, Q.MovingAverageMinMaxObserver):
        for kw in tensor_kws:
            if cls is Q.MovingAverageMinMaxObserver:
                kw = dict(kw, averaging_constant=0.3)
            observer_case("%s %s" % (cls.__name__, kw), cls, kw, batches((4, 5)))
        observer_case("%s positive only" % cls.__name__, cls, {}, batches((6,), lo=0.5))
        observer_case("%s unobserved" % cls.__name__, cls, {}, [])
        observer_case("%s empty batch" % cls.__name__, cls, {}, [data((0, 3), f)])
        # an infinite range: scale inf, min / scale NaN, which torch's
        # .to(torch.int) makes INT32_MIN before quant_min minus it wraps
        observer_case("%s infinite range" % cls.__name__, cls, {},
                      [torch.tensor([-math.inf, 1.0])])
        observer_case("%s infinite range qint8" % cls.__name__, cls, {"dtype": torch.qint8},
                      [torch.tensor([-math.inf, math.inf])])
    for cls in (Q.PerChannelMinMaxObserver, Q.MovingAveragePerChannelMinMaxObserver):
        for kw, shape in (({}, (3, 4)), ({"ch_axis": 1}, (2, 3, 4)),
                          ({"qscheme": torch.per_channel_symmetric, "dtype": torch.qint8}, (3, 5)),
                          ({"qscheme": torch.per_channel_symmetric}, (3, 5)),
                          ({"dtype": torch.qint8, "reduce_range": True, "ch_axis": -1},
                           (2, 4)),
                          ({"quant_min": -4, "quant_max": 3, "dtype": torch.qint8}, (3, 2))):
            ax = kw.get("ch_axis", 0)
            observer_case("%s %s %s" % (cls.__name__, kw, list(shape)), cls, kw,
                          batches(shape), nch=shape[ax])
    # FakeQuantize: outputs of each forward, its qparams and buffers
    for cls, kw, shape, nch in (
            (Q.MovingAverageMinMaxObserver, {}, (4, 5), 0),
            (Q.MinMaxObserver, {"quant_min": 0, "quant_max": 15}, (4, 5), 0),
            (Q.MinMaxObserver, {"dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric},
             (3, 3), 0),
            (Q.MovingAverageMinMaxObserver, {"quant_min": 0, "quant_max": 255,
                                             "reduce_range": True}, (6,), 0),
            (Q.PerChannelMinMaxObserver, {"dtype": torch.qint8,
                                          "qscheme": torch.per_channel_symmetric}, (3, 4), 3),
            (Q.MovingAveragePerChannelMinMaxObserver, {"ch_axis": 1}, (2, 3, 2), 3)):
        observer_case("FakeQuantize %s %s" % (cls.__name__, kw), cls, kw,
                      batches(shape, n=4), nch=nch, fq=True)
C4_FNS = ("exp", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh",
          "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sigmoid")


def c4_check(name, tfn, cfn, inputs, tol, exact=False):
    """Elementwise complex results: nans where torch has them (part by
    part), infinities equal, finite parts within tol of each element's
    magnitude; exact: zeros' signs too."""
    global PASSED
    keep = []
    try:
        pairs = [as_in(x).build(keep) for x in inputs]
        exp = tfn(*[p[0] for p in pairs])
        out = P(0xdead)
        st = cfn(*[p[1] for p in pairs], C.byref(out))
        if st != 0:
            return fail(name, "cltensor fails (%d: %s)" % (st, L.clt_last_error().decode()))
        keep.append(out)
        got, shape, dt = download(out)
        if tuple(exp.shape) != shape or T2C[exp.dtype] != dt:
            return fail(name, "shape/dtype: torch %s %s, cltensor %s %d" % (
                list(exp.shape), exp.dtype, list(shape), dt))
        e = exp.resolve_conj().numpy().astype(np.complex128).ravel()
        g = got.astype(np.complex128).ravel()
        for part in (np.real, np.imag):
            pe, pg = part(e), part(g)
            if not np.array_equal(np.isnan(pe), np.isnan(pg)):
                return fail(name, "NaN positions differ: torch %s, cltensor %s" % (e, g))
            inf = np.isinf(pe)
            if not np.array_equal(pe[inf], pg[inf]):
                return fail(name, "infinities differ: torch %s, cltensor %s" % (e, g))
            if exact:
                z = (pe == 0) & (pg == 0)
                if not np.array_equal(np.signbit(pe[z]), np.signbit(pg[z])):
                    return fail(name, "signs of zeros differ: torch %s, cltensor %s" % (e, g))
        fin = np.isfinite(e) & np.isfinite(g)
        scale = np.maximum(np.abs(e[fin]), 1e-300)
        err = np.abs(e[fin] - g[fin]) / scale
        if err.size and not err.max() <= tol:
            i = int(np.argmax(err))
            return fail(name, "relative error %g: torch %s, cltensor %s" % (
                err[i], e[fin][i], g[fin][i]))
        PASSED += 1
        if VERBOSE:
            print("ok", name)
    except Exception as ex:
        fail(name, "harness error: %r" % (ex,))
    finally:
        for p in keep:
            L.clt_tensor_free(p)


def complex4():
    """The elementary functions of complex tensors, pow, division by zero,
    take, index_fill and polar with a negative magnitude, against torch's
    complex kernels.
    Where torch 1.13 departs from C99 (its asin, acos and atan formulas are
    inaccurate for large arguments and wrong at infinities; exp(inf + 0i) is
    inf + nan i there, inf + 0i in C99 and here) the cases stay in the
    range where both agree; torch 1.13 has no complex log1p or expm1: those
    are checked against numpy's log(1 + z) and exp(z) - 1."""
    for n_ in C4_FNS + ("log1p", "expm1"):
        proto("clt_" + n_, [P, PP])
    for n_ in ("pow", "div", "polar"):
        proto("clt_" + n_, [P, P, PP])
    for n_ in ("pow_scalar", "rpow_scalar", "div_scalar"):
        proto("clt_%s" % n_, [P, C.c_double, PP])
    inf, nan = float("inf"), float("nan")
    specials = [0j, complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0), complex(inf, 0),
                complex(-inf, 0), complex(0, inf), complex(inf, inf), complex(-inf, inf),
                complex(nan, 0), complex(0, nan), complex(1, inf), complex(inf, 1),
                complex(-inf, 1), complex(-1, 0), complex(-1, -0.0), complex(2, 0),
                complex(-2, -0.0), complex(0, 2), complex(1e-30, 1e-30)]
    # torch's special values that C99 (and cltensor) give otherwise
    differ = {"exp": (4, 7, 8, 9), "sin": (7, 8), "rsqrt": (4, 5, 12, 13, 14, 15, 17, 18),
              "sigmoid": (4, 5, 6, 7, 8, 11, 12, 13), "cos": (4, 5),
              "tan": (), "acosh": (10,)}
    for dt in (torch.complex64, torch.complex128):
        single = dt == torch.complex64
        tol = 5e-6 if single else 1e-12
        x = cdata((4, 5), dt)
        wide = torch.cat([x * 0.01, x * 20]).reshape(8, 5)
        sp = torch.tensor(specials, dtype=dt)
        for fn in C4_FNS:
            tfn, cfn = getattr(torch, fn), getattr(L, "clt_" + fn)
            c4_check("%s %s" % (fn, dt), tfn, lambda p, o, f=cfn: f(p, o), [x], tol)
            c4_check("%s of a transposed view %s" % (fn, dt), tfn,
                     lambda p, o, f=cfn: f(p, o), [In(x, ("T",))], tol)
            c4_check("%s 0-d %s" % (fn, dt), tfn, lambda p, o, f=cfn: f(p, o), [x[1, 2]], tol)
            c4_check("%s empty %s" % (fn, dt), tfn, lambda p, o, f=cfn: f(p, o),
                     [cdata((0, 3), dt)], tol)
            if fn not in ("asin", "acos", "atan", "sigmoid"):
                c4_check("%s wide range %s" % (fn, dt), tfn, lambda p, o, f=cfn: f(p, o),
                         [wide], tol * 4)
            if fn in ("asin", "acos", "atan"):
                continue
            keep_ = [i for i in range(len(specials)) if i not in differ.get(fn, ())]
            c4_check("%s special values %s" % (fn, dt), tfn, lambda p, o, f=cfn: f(p, o),
                     [sp[keep_]], tol * 4, exact=fn not in ("rsqrt", "sin", "cos", "tan",
                                                             "sigmoid"))
        for fn, ref in (("log1p", lambda t: torch.from_numpy(np.log(1 + t.numpy()))),
                        ("expm1", lambda t: torch.from_numpy(np.exp(t.numpy()) - 1))):
            c4_check("%s %s" % (fn, dt), ref, lambda p, o, f=getattr(L, "clt_" + fn): f(p, o),
                     [x], tol * 10)
        # pow: torch's forms for 0, 1, 2, 3, -1, -2, 0.5, -0.5, cpow otherwise
        xz = x.clone()
        xz[0, 0] = 0
        for s_ in (0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 2.5, -1.3, 1.7):
            c4_check("pow_scalar %g %s" % (s_, dt), lambda t, s_=s_: torch.pow(t, s_),
                     lambda p, o, s_=s_: L.clt_pow_scalar(p, s_, o), [x], tol * 10)
            if s_ > 0:
                c4_check("rpow_scalar %g %s" % (s_, dt), lambda t, s_=s_: torch.pow(s_, t),
                         lambda p, o, s_=s_: L.clt_rpow_scalar(p, s_, o), [x * 0.3], tol * 10)
        y = cdata((4, 5), dt) * 0.3
        c4_check("pow %s" % dt, torch.pow, lambda a, b, o: L.clt_pow(a, b, o), [x, y], tol * 20)
        c4_check("pow broadcast %s" % dt, torch.pow, lambda a, b, o: L.clt_pow(a, b, o),
                 [x, y[:1]], tol * 20)
        part = torch.float32 if single else torch.float64
        for other in (torch.float32, torch.float64):
            r_ = data((4, 5), other).abs() + 0.1
            c4_check("pow %s ** %s" % (dt, other), torch.pow, lambda a, b, o: L.clt_pow(a, b, o),
                     [x, r_ * 0.5], tol * 20)
            c4_check("pow %s ** %s" % (other, dt), torch.pow, lambda a, b, o: L.clt_pow(a, b, o),
                     [r_, y], tol * 20)
        c4_check("pow of zero %s" % dt, torch.pow, lambda a, b, o: L.clt_pow(a, b, o),
                 [torch.zeros(3, dtype=dt), torch.tensor([2, 0.5 + 1j, 3 - 2j], dtype=dt)], tol)
        c4_check("pow of zero to zero %s" % dt, torch.pow, lambda a, b, o: L.clt_pow(a, b, o),
                 [torch.zeros(1, dtype=dt), torch.zeros(1, dtype=dt)], tol)
        # division by zero and by infinities: nan + nan i as torch 1.13's
        num = torch.tensor([1 + 1j, 0j, complex(inf, 0), complex(inf, 1), -1, 1j, complex(nan, 0),
                            complex(1, inf)], dtype=dt)
        for den in (0j, complex(-0.0, 0), complex(0, -0.0), complex(inf, 0), complex(inf, inf),
                    complex(nan, 0)):
            c4_check("div by %s %s" % (den, dt), torch.div, lambda a, b, o: L.clt_div(a, b, o),
                     [num, torch.full((8,), den, dtype=dt)], tol)
        c4_check("div by a real 0 %s" % dt, torch.div, lambda a, b, o: L.clt_div(a, b, o),
                 [num, torch.zeros((), dtype=part)], tol)
        c4_check("div_scalar by 0 %s" % dt, lambda t: t / 0,
                 lambda p, o: L.clt_div_scalar(p, 0.0, o), [num], tol)
        c4_check("real div by complex 0 %s" % dt, torch.div, lambda a, b, o: L.clt_div(a, b, o),
                 [torch.tensor([1.0, 0.0, -2.0], dtype=part), torch.zeros(3, dtype=dt)], tol)
        # take and index_fill (a real value) through the real views
        proto("clt_take", [P, P, PP])
        proto("clt_index_fill", [P, C.c_int, P, C.c_double, PP])
        ix = torch.tensor([[-1, 0, 19], [7, 7, -20]])
        c4_check("take %s" % dt, torch.take, lambda a, b, o: L.clt_take(a, b, o), [x, ix], 0,
                 exact=True)
        c4_check("take of a transposed view %s" % dt, torch.take,
                 lambda a, b, o: L.clt_take(a, b, o), [In(x, ("T",)), ix], 0, exact=True)
        c4_check("take 0-d index %s" % dt, torch.take, lambda a, b, o: L.clt_take(a, b, o),
                 [x, torch.tensor(5)], 0, exact=True)
        for d_ in (0, 1, -1):
            c4_check("index_fill dim %d %s" % (d_, dt),
                     lambda t, d_=d_: t.index_fill(d_, torch.tensor([0, 2]), -2.5),
                     lambda p, o, d_=d_: L.clt_index_fill(
                         p, d_, upload(torch.tensor([0, 2])), -2.5, o), [x], 0, exact=True)
        fft_check("index_fill bad dim %s" % dt,
                  lambda t: t.index_fill(2, torch.tensor([0]), 1.0),
                  lambda p, o: L.clt_index_fill(p, 2, upload(torch.tensor([0])), 1.0, o), [x])
        proto("clt_index_put", [P, C.POINTER(P), C.c_int, P, C.c_int, PP])
        proto("clt_put", [P, P, P, C.c_int, PP])
        for acc in (0, 1):
            c4_check("index_put accumulate %d %s" % (acc, dt),
                     lambda t, v, acc=acc: t.index_put((torch.tensor([3, 0, 3]),), v,
                                                       accumulate=bool(acc)),
                     lambda p, q, o, acc=acc: L.clt_index_put(
                         p, (P * 1)(upload(torch.tensor([3, 0, 3]))), 1, q, acc, o),
                     [x, y[0]], tol)
            c4_check("put accumulate %d %s" % (acc, dt),
                     lambda t, v, acc=acc: t.put(torch.tensor([-1, 4, 4]), v,
                                                 accumulate=bool(acc)),
                     lambda p, q, o, acc=acc: L.clt_put(p, upload(torch.tensor([-1, 4, 4])), q,
                                                        acc, o), [x, y[1, :3]], tol)
        c4_check("polar negative magnitude %s" % part, torch.polar,
                 lambda a, b, o: L.clt_polar(a, b, o),
                 [torch.tensor([-1.0, -2.0, -0.5, 3.0], dtype=part),
                  torch.tensor([0.0, 1.0, -2.5, -0.0], dtype=part)], tol, exact=True)


# ---- int8 and int16 ------------------------------------------------------------


def _small_int(dt):
    """int8 and int16 against torch 1.13 on the CPU: every value of int8
    (its boundaries for int16) through the binary ops (wrapping), integer
    division and remainder (signs), shifts past the width, bitwise ops,
    comparisons, promotion with every dtype, reductions (int64 sums),
    casts to and from every dtype, fills, arange, indexing, sorting and the
    refusals (mean, gradients)."""
    nm = dn(dt)
    info = torch.iinfo(dt)
    proto("clt_sort", [P, C.c_int, C.c_int, P, P])
    proto("clt_topk", [P, C.c_int64, C.c_int, C.c_int, C.c_int, P, P])
    proto("clt_unique", [P, PP, PP, PP])
    proto("clt_gather", [P, C.c_int, P, PP])
    proto("clt_scatter", [P, C.c_int, P, P, PP])
    proto("clt_index_select", [P, C.c_int, P, PP])
    proto("clt_masked_fill", [P, P, C.c_double, PP])
    proto("clt_cumprod", [P, C.c_int, PP])
    proto("clt_iinfo", [C.c_int, C.POINTER(_IInfo)])
    for n in ("and", "or", "xor", "left_shift", "right_shift"):
        proto("clt_bitwise_" + n, [P, P, PP])
    proto("clt_bitwise_not", [P, PP])
    for n in ("gcd", "lcm"):
        proto("clt_" + n, [P, P, PP])
    proto("clt_contiguous", [P, PP])
    proto("clt_transpose", [P, C.c_int, C.c_int, PP])

    def c(name, tfn, cfn, inputs, tol="exact", **kw):
        check("%s %s" % (nm, name), tfn, cfn, inputs, tol=tol, **kw)

    if dt == torch.int8:
        allv = torch.arange(-128, 128, dtype=torch.int8)
        a = allv.repeat_interleave(256).view(256, 256)
        b = allv.repeat(256).view(256, 256)
    else:
        edge = torch.tensor([-32768, -32767, -32766, -257, -256, -255, -129, -128, -127, -2, -1,
                             0, 1, 2, 127, 128, 255, 256, 1000, 32766, 32767], dtype=torch.int16)
        a = edge.repeat_interleave(len(edge)).view(len(edge), -1)
        b = edge.repeat(len(edge)).view(len(edge), -1)
    nz = torch.where(b == 0, torch.ones_like(b), b)
    for n in ("add", "sub", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
              "div"):
        c(n, getattr(torch, n), getattr(L, "clt_" + n), [a, b],
          tol="exact" if n != "div" else "ew")
    c("add transposed", torch.add, L.clt_add, [In(a, ("T",)), b])
    c("add broadcast", torch.add, L.clt_add, [a, b[:1].contiguous()])
    for n, tf in (("remainder", torch.remainder), ("fmod", torch.fmod),
                  ("floor_divide", torch.floor_divide)):
        c(n, tf, getattr(L, "clt_" + n), [a, nz])
    for mode, rn in ((1, "trunc"), (2, "floor")):
        c("div " + rn, lambda x, y, rn=rn: torch.div(x, y, rounding_mode=rn),
          lambda p, q, o, mode=mode: L.clt_div_rounding(p, q, mode, o), [a, nz])
    for n in ("and", "or", "xor"):
        c("bitwise_" + n, getattr(torch, "bitwise_" + n), getattr(L, "clt_bitwise_" + n), [a, b])
    sh = torch.arange(-2, 20, dtype=dt).repeat(a.shape[0] * a.shape[1] // 22 + 1)[
        :a.numel()].view(a.shape)
    for n in ("left_shift", "right_shift"):
        # counts outside [0, width) as ops.h documents (torch 1.13's CPU
        # kernel shifts by the count modulo the width): 0 or the sign fill
        def ref(x, y, n=n):
            w = info.bits
            r = getattr(torch, "bitwise_" + n)(x.long(), y.long().clamp(0, 63)).to(dt)
            out_ = (y < 0) | (y >= (w if n == "left_shift" else w - 1))
            fill = torch.zeros_like(x) if n == "left_shift" else torch.where(
                x < 0, torch.full_like(x, -1), torch.zeros_like(x))
            return torch.where(out_, fill, r)
        c("bitwise_" + n, ref, getattr(L, "clt_bitwise_" + n), [a, sh])
    c("bitwise_not", torch.bitwise_not, L.clt_bitwise_not, [a])
    for n in ("gcd", "lcm"):
        c(n, getattr(torch, n), getattr(L, "clt_" + n), [a, b])
    for n in ("neg", "abs", "sign", "relu"):
        c(n, getattr(torch, n), getattr(L, "clt_" + n), [a])
    for n in ("exp", "sqrt", "sin", "sigmoid"):
        c(n, getattr(torch, n), getattr(L, "clt_" + n), [a], tol="tr")
    for sc in (1, -1, 300, 2.5, -7):
        for n in ("add", "mul", "sub", "div", "remainder", "floor_divide"):
            if n in ("remainder", "floor_divide") and sc == 2.5:
                continue
            c("%s_scalar %r" % (n, sc), lambda x, sc=sc, n=n: getattr(torch, n)(x, sc),
              lambda p, o, sc=sc, n=n: getattr(L, "clt_%s_scalar" % n)(p, float(sc), o), [a],
              tol="exact" if n != "div" and sc != 2.5 else "ew")
    for e_ in (0, 1, 2, 3, 7):
        c("pow_scalar %d" % e_, lambda x, e_=e_: torch.pow(x, e_),
          lambda p, o, e_=e_: L.clt_pow_scalar(p, float(e_), o), [a])
    lo_, hi_ = C.c_double(-100.0), C.c_double(100.0)
    c("clamp", lambda x: torch.clamp(x, -100, 100),
      lambda p, o: L.clt_clamp(p, C.byref(lo_), C.byref(hi_), o), [a])
    # promotion with every dtype, both ways, through add and the table
    for other in (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                  torch.float16, torch.bfloat16, torch.float32, torch.float64):
        o_ = data((5, 7), other) if other not in (torch.float16, torch.bfloat16) else (
            torch.rand((5, 7), generator=G) * 4).to(other)
        x_ = data((5, 7), dt, lo=-100, hi=100)
        c("add with " + dn(other), torch.add, L.clt_add, [x_, o_], tol="ew")
        c(dn(other) + " mul", torch.mul, L.clt_mul, [o_, x_], tol="ew")
        want = T2C[torch.promote_types(dt, other)]
        ok("%s promote %s" % (nm, dn(other)),
           L.clt_promote_types(T2C[dt], T2C[other]) == want and
           L.clt_promote_types(T2C[other], T2C[dt]) == want,
           "got %d, want %d" % (L.clt_promote_types(T2C[dt], T2C[other]), want))
    ii = _IInfo()
    st = L.clt_iinfo(T2C[dt], C.byref(ii))
    ok(nm + " iinfo", st == 0 and (ii.bits, ii.max, ii.min) == (info.bits, info.max, info.min),
       "got %d %d %d" % (ii.bits, ii.max, ii.min))
    # reductions: sums and products in int64 as torch, max/min keep the dtype
    r = data((37, 41), dt, lo=info.min, hi=info.max)
    for n in ("sum", "prod", "max", "min", "argmax", "argmin"):
        c(n, getattr(torch, n), getattr(L, "clt_" + n), [r])
        if n in ("sum", "prod"):
            c(n + " dim", lambda x, n=n: getattr(torch, n)(x, 1),
              lambda p, o, n=n: getattr(L, "clt_%s_dim" % n)(p, 1, 0, o), [r])
            c(n + " dim 0", lambda x, n=n: getattr(torch, n)(x, 0),
              lambda p, o, n=n: getattr(L, "clt_%s_dim" % n)(p, 0, 0, o), [r])
    c("sum of 256 x 256", torch.sum, L.clt_sum, [a])
    c("max dim", lambda x: torch.max(x, 1)[0], lambda p, o: L.clt_max_dim(p, 1, 0, o, None), [r])
    c("cumsum", lambda x: torch.cumsum(x, 1), lambda p, o: L.clt_cumsum(p, 1, o), [r])
    c("cumsum 0", lambda x: torch.cumsum(x, 0), lambda p, o: L.clt_cumsum(p, 0, o), [r])
    c("cumprod", lambda x: torch.cumprod(x, 1), lambda p, o: L.clt_cumprod(p, 1, o),
      [data((9, 6), dt, lo=-3, hi=3)])
    c("mean refused", torch.mean, L.clt_mean, [r])
    c("var refused", lambda x: torch.var(x), lambda p, o: L.clt_var(p, 1.0, o), [r])
    # casts: every value of the source through every dtype
    src = a.reshape(-1)[::7].contiguous()
    for to in (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
               torch.float16, torch.bfloat16, torch.float32, torch.float64):
        c("cast to " + dn(to), lambda x, to=to: x.to(to),
          lambda p, o, to=to: L.clt_to_dtype(p, T2C[to], o), [src])
        if to in (torch.float16, torch.bfloat16):
            fsrc = torch.tensor([0.0, -0.0, 1.5, -2.5, 127.0, -128.0, 200.0, -200.0, 255.5,
                                 -1000.0, 32767.0 if to == torch.float16 else 40000.0,
                                 float("nan")]).to(to)
        elif to.is_floating_point:
            fsrc = torch.tensor([0.0, -0.0, 0.9, -0.9, 1.5, -2.5, 127.9, -128.9, 200.0, -200.0,
                                 255.5, 256.0, 40000.0, -40000.0, 65536.0 + 3, 2e9, -2e9,
                                 float("nan")] * 3, dtype=to)
        elif to == torch.bool:
            fsrc = data((5, 33), to)
        else:
            fsrc = torch.tensor([0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769,
                                 65535, 70000, -70000] * 3).to(to)
        c("cast from " + dn(to), lambda x: x.to(dt),
          lambda p, o: L.clt_to_dtype(p, T2C[dt], o), [fsrc])
    c("contiguous of a transpose", lambda x: x.t().contiguous(), _contig_t, [r])
    c("clone", lambda x: x.clone(), L.clt_clone, [r])
    for v in (0, 1, -1, info.max, info.min, info.max + 1, info.min - 1, 2.7, -2.7):
        check("%s full %r" % (nm, v), lambda v=v: torch.full((5, 37), v, dtype=dt),
              lambda o, v=v: L.clt_full(DEV, T2C[dt], 2, shape_arr((5, 37)), float(v), o), [],
              tol="exact")
    for st_a, en_a, sp_a in ((0, 100, 1), (-100, 100, 3), (100, -100, -7)):
        check("%s arange %d %d %d" % (nm, st_a, en_a, sp_a),
              lambda st_a=st_a, en_a=en_a, sp_a=sp_a: torch.arange(st_a, en_a, sp_a, dtype=dt),
              lambda o, st_a=st_a, en_a=en_a, sp_a=sp_a:
              L.clt_arange(DEV, T2C[dt], st_a, en_a, sp_a, o), [], tol="exact")
    # indexing, gather, scatter, masked_fill
    idx = torch.randint(0, 37, (11,), generator=G)
    c("index_select", lambda x, i: torch.index_select(x, 0, i),
      lambda p, i, o: L.clt_index_select(p, 0, i, o), [r, idx])
    gi = torch.randint(0, 41, (37, 5), generator=G)
    c("gather", lambda x, i: torch.gather(x, 1, i), lambda p, i, o: L.clt_gather(p, 1, i, o),
      [r, gi])
    si = torch.stack([torch.randperm(41, generator=G)[:5] for _ in range(37)])
    c("scatter", lambda x, i, s: x.scatter(1, i, s),
      lambda p, i, q, o: L.clt_scatter(p, 1, i, q, o), [r, si, data((37, 5), dt, lo=-9, hi=9)])
    c("masked_fill", lambda x, m: x.masked_fill(m, -5), lambda p, m, o: L.clt_masked_fill(
        p, m, -5.0, o), [r, data((37, 41), torch.bool)])
    c("where", torch.where, L.clt_where, [data((37, 41), torch.bool), r, r.flip(0).contiguous()])
    # sorting
    for desc in (0, 1):
        c("sort %d" % desc,
          lambda x, desc=desc: torch.sort(x, dim=1, descending=bool(desc), stable=True)[0],
          lambda p, o, desc=desc: _sort_c(p, o, 1, desc, False), [r])
        c("sort idx %d" % desc,
          lambda x, desc=desc: torch.sort(x, dim=1, descending=bool(desc), stable=True)[1],
          lambda p, o, desc=desc: _sort_c(p, o, 1, desc, True), [a[:4].contiguous()])
        c("topk %d" % desc, lambda x, desc=desc: torch.topk(x, 5, 1, bool(desc))[0],
          lambda p, o, desc=desc: _topk_c(p, o, 5, 1, desc, False), [r])
    c("unique", lambda x: torch.unique(x), lambda p, o: L.clt_unique(p, o, None, None), [r])
    # refusals where torch refuses integers
    c("softmax refused", lambda x: torch.softmax(x, 1), lambda p, o: L.clt_softmax(p, 1, o),
      [r])
    c("full overflow", lambda: torch.full((2,), info.max + 1000, dtype=dt),
      lambda o: L.clt_full(DEV, T2C[dt], 1, shape_arr((2,)), float(info.max + 1000), o), [])


def int8():
    _small_int(torch.int8)


def int16():
    _small_int(torch.int16)


# ---- F.convert_image_dtype ----------------------------------------------

def _image_max(dt):
    # torchvision 0.14's _max_value
    return {torch.uint8: 255, torch.int8: 127, torch.int16: 32767,
            torch.int32: 2147483647, torch.int64: 9223372036854775807}.get(dt, 1)


def _convert_image_dtype(image, dtype):
    """torchvision 0.14's F.convert_image_dtype, step for step (torchvision
    need not be installed)."""
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype == torch.float32 and dtype in (torch.int32, torch.int64)) or (
                image.dtype == torch.float64 and dtype == torch.int64):
            raise RuntimeError("The cast from %s to %s cannot be performed safely." % (
                image.dtype, dtype))
        eps = 1e-3
        max_val = float(_image_max(dtype))
        return image.mul(max_val + 1.0 - eps).to(dtype)
    input_max = float(_image_max(image.dtype))
    if dtype.is_floating_point:
        return image.to(dtype) / input_max
    output_max = float(_image_max(dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return torch.div(image, factor, rounding_mode="floor").to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


def image_dtype():
    proto("clt_tf_convert_image_dtype", [P, C.c_int, PP])
    ints = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
    floats = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
    srcs = {}
    for dt in ints:
        info = torch.iinfo(dt)
        ends = torch.tensor([info.min, info.min + 1, -1, 0, 1, 2, 3, info.max - 1, info.max],
                            dtype=dt)
        body = torch.randint(info.min, info.max, (4, 5, 6), generator=G, dtype=torch.int64)
        srcs[dt] = torch.cat([ends, body.to(dt).reshape(-1)]).reshape(3, 43)
    for dt in floats:
        ends = torch.tensor([0.0, 1.0, 0.5, 0.25, 1e-3, 0.999, 0.9999], dtype=torch.float64)
        body = torch.rand(4, 5, 6, generator=G, dtype=torch.float64).reshape(-1)
        srcs[dt] = torch.cat([ends, body]).reshape(1, 127).to(dt)
    # float16 takes its scalar rounded to float16, as torch does, where
    # int32's and int64's largest values are inf: x / inf is 0 or NaN, and
    # x * inf cast to an integer is out of range
    for src in ints + floats:
        for to in ints + floats:
            check("convert_image_dtype %s to %s" % (dn(src), dn(to)),
                  lambda x, to=to: _convert_image_dtype(x, to),
                  lambda p, o, to=to: L.clt_tf_convert_image_dtype(p, T2C[to], o),
                  [srcs[src]], tol="exact")
    # refused as torch refuses them, and the dtypes images do not take
    check("convert_image_dtype bool refused", lambda x: 1 / 0,
          lambda p, o: L.clt_tf_convert_image_dtype(p, T2C[torch.float32], o),
          [torch.tensor([True, False])])


def complex_pow_scalar():
    """clt_pow_scalar_complex: torch.pow(a, re + im j) of complex tensors
    (cpow, exp(s log a), with torch's exact forms where im is 0) and of real
    ones (complex64, or complex128 for float64), zeros and specials
    included; float16 refused as torch's ComplexHalf."""
    proto("clt_pow_scalar_complex", [P, C.c_double, C.c_double, PP])
    inf, nan = float("inf"), float("nan")
    exps = [(0.5, 1.0), (2.0, -1.0), (-1.5, 0.25), (0.0, 2.0), (3.0, 0.0), (0.5, 0.0),
            (0.0, 0.0), (1.7, -0.0), (-2.0, 0.0)]
    for dt in (torch.complex64, torch.complex128):
        tol = 5e-6 if dt == torch.complex64 else 1e-12
        x = cdata((4, 5), dt)
        xz = x.clone()
        xz[0, 0] = 0
        xz[1, 1] = complex(-2.0, 0.0)
        for re_, im_ in exps:
            s_ = complex(re_, im_)
            c4_check("pow_scalar_complex %s %s" % (s_, dt), lambda t, s_=s_: torch.pow(t, s_),
                     lambda p, o, re_=re_, im_=im_: L.clt_pow_scalar_complex(p, re_, im_, o),
                     [xz], tol * 20)
        c4_check("pow_scalar_complex of a transposed view %s" % dt,
                 lambda t: t ** complex(2, -1),
                 lambda p, o: L.clt_pow_scalar_complex(p, 2.0, -1.0, o), [In(x, ("T",))],
                 tol * 20)
        c4_check("pow_scalar_complex empty %s" % dt, lambda t: t ** complex(2, -1),
                 lambda p, o: L.clt_pow_scalar_complex(p, 2.0, -1.0, o), [cdata((0, 3), dt)],
                 tol)
    for dt in (torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16):
        x = torch.tensor([0.0, 1.0, 2.5, -3.0, 0.25, 7.0]).to(dt)
        for re_, im_ in ((0.5, 1.0), (2.0, -1.0), (2.0, 0.0)):
            s_ = complex(re_, im_)
            c4_check("pow_scalar_complex %s %s" % (dn(dt), s_), lambda t, s_=s_: t ** s_,
                     lambda p, o, re_=re_, im_=im_: L.clt_pow_scalar_complex(p, re_, im_, o),
                     [x], 1e-5)
    check("pow_scalar_complex float16 refused", lambda t: t ** complex(0.5, 1.0),
          lambda p, o: L.clt_pow_scalar_complex(p, 0.5, 1.0, o),
          [torch.tensor([1.0, 2.0], dtype=torch.float16)])


def half_scalar():
    """float16 and bfloat16 with a Python scalar, bit for bit against torch
    1.13's CPU kernels over all 65536 values of the dtype: the scalar is
    rounded to the tensor's dtype (through float, as c10::Half) and the op
    computed in float32 and rounded once; comparisons compare with the
    rounded scalar; a bfloat16 tensor to the power 2, 3 or -2 rounds each
    product as torch's Vectorized<BFloat16>, and to 0.5 or -0.5 is sqrt or
    rsqrt; a float16 or bfloat16 exponent past the dtype's range is refused.
    Left out, as ops.h says: floor_divide (torch's vector and scalar loops
    round differently), float16 pow with the few exponents where float32
    pow's last bit decides the half rounding (checked to the ulp), and
    bfloat16 fmod and remainder where x / s overflows float32 (torch's
    vector loop gives NaN there)."""
    ops = {"add": lambda x, s: x + s, "sub": lambda x, s: x - s, "rsub": lambda x, s: s - x,
           "mul": lambda x, s: x * s, "div": lambda x, s: x / s,
           "pow": lambda x, s: x ** s, "rpow": lambda x, s: s ** x,
           "remainder": torch.remainder, "fmod": torch.fmod,
           "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
           "ge": torch.ge}
    scalars = [0.1, 1 / 3, 1e-4, 65504.0, 3.14159, 1e-6, -2.7, 2.0, 3.0, -2.0, 0.5, -0.5,
               -1.0, 1e-310, -1e-310, 1 + 2 ** -11 + 2 ** -40, 1e6, 70000.0]
    # float16 pow and rpow whose float32 pow rounds a half tie the other way
    # than glibc's or Sleef's powf on a value or two
    ulp_only = {("pow", 1 / 3), ("pow", 0.5), ("rpow", 1 / 3), ("rpow", 1e-4),
                ("rpow", 65504.0)}
    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    for dt in (torch.float16, torch.bfloat16):
        every = bits.view(dt)
        for n, tf in ops.items():
            for sc in scalars:
                x = every
                if dt == torch.bfloat16 and n in ("fmod", "remainder"):
                    with np.errstate(over="ignore", invalid="ignore"):
                        q = np.abs(every.float().numpy().astype(np.float64) / sc)
                    x = every[torch.from_numpy(~(q > 3.4e38))]
                tol = "exact"
                if dt == torch.float16 and (n, sc) in ulp_only:
                    tol = "ew"
                check("half_scalar %s %s %r" % (str(dt)[6:], n, sc),
                      lambda t, tf=tf, sc=sc: tf(t, sc),
                      lambda p, o, n=n, sc=sc: getattr(L, "clt_%s_scalar" % n)(p, float(sc), o),
                      [x.contiguous()], tol=tol)


def _on_clone(fn):
    """cfn for an in-place op: fn(copy, *rest) on a copy of the first input,
    which becomes the output."""
    def run(p, *rest):
        o = rest[-1]
        c = P()
        st = L.clt_clone(p, C.byref(c))
        if st == 0:
            st = fn(c, *rest[:-1])
        if st:
            L.clt_tensor_free(c)
            o._obj.value = None
            return st
        o._obj.value = c.value
        return 0
    return run


def _torch_has(tf, *args):
    """Whether torch's CPU has a kernel for tf on these (16-bit) inputs."""
    try:
        tf(*args)
        return True
    except RuntimeError as e:
        if "not implemented for" in str(e):
            return False
        raise


def half_params():
    """float16 and bfloat16 ops' other scalar arguments against torch 1.13's
    CPU kernels over every value of the dtype, with parameters that rounding
    to the dtype first changes (0.1, 1/3, 2.7, 1 + 2^-11 + 2^-40, which
    rounds differently through float32 than straight from double, 1e-4):
    clamp's bounds, clamp_min/max, leaky_relu's slope, elu/celu alpha, selu,
    hardtanh's bounds, threshold and its value, softplus's beta and
    threshold, hard/softshrink's lambda, rrelu in eval, add_/sub_'s alpha,
    addcmul/addcdiv's value, lerp's weight, fills (full, fill_, masked_fill)
    and nan_to_num's values.  torch 1.13's CPU has no float16 kernel for
    most of them (clamp, the activations, lerp, addcmul, addcdiv): those are
    left out for float16 (cltensor's float16 takes its parameters as its
    bfloat16 does).  elu, celu and selu on inputs of magnitude 4 or more
    and the positive ones: below that torch's exp(x) - 1 and cltensor's
    expm1 (ops.h) differ in the last bit."""
    D_ = C.c_double
    proto("clt_clamp", [P, C.POINTER(D_), C.POINTER(D_), PP])
    for n in ("clt_clamp_min", "clt_clamp_max", "clt_leaky_relu", "clt_elu", "clt_celu",
              "clt_hardshrink", "clt_softshrink"):
        proto(n, [P, D_, PP])
    proto("clt_selu", [P, PP])
    for n in ("clt_hardtanh", "clt_threshold", "clt_softplus"):
        proto(n, [P, D_, D_, PP])
    proto("clt_rrelu", [P, D_, D_, C.c_int, P, PP])
    proto("clt_add_", [P, P, D_])
    proto("clt_sub_", [P, P, D_])
    proto("clt_addcmul", [P, P, P, D_, PP])
    proto("clt_addcdiv", [P, P, P, D_, PP])
    proto("clt_lerp_scalar", [P, P, D_, PP])
    proto("clt_full_like", [P, D_, PP])
    proto("clt_fill_", [P, D_])
    proto("clt_masked_fill", [P, P, D_, PP])
    proto("clt_nan_to_num", [P, D_, C.POINTER(D_), C.POINTER(D_), PP])
    ptr = lambda v: None if v is None else C.byref(D_(v))
    params = [0.1, 1 / 3, 2.7, 1 + 2 ** -11 + 2 ** -40, 1e-4]
    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    gen = torch.Generator().manual_seed(7)
    for dt in (torch.float16, torch.bfloat16):
        nm = str(dt)[6:]
        x = bits.view(dt).contiguous()
        fin = x[torch.isfinite(x)]
        # ordinary values for the ops of two and three operands
        y = (torch.rand(fin.shape, generator=gen) * 4 - 2).to(dt)
        z = (torch.rand(fin.shape, generator=gen) * 2 + 0.5).to(dt)
        mask = torch.rand(x.shape, generator=gen) < 0.5
        far = x[~(x.float().abs() < 4) | (x.float() >= 0)].contiguous()
        for s in params:
            one = [
                ("clamp min", lambda t: torch.clamp(t, min=s),
                 lambda p, o: L.clt_clamp(p, ptr(s), None, o)),
                ("clamp max", lambda t: torch.clamp(t, max=s),
                 lambda p, o: L.clt_clamp(p, None, ptr(s), o)),
                ("clamp both", lambda t: torch.clamp(t, min=-s, max=s),
                 lambda p, o: L.clt_clamp(p, ptr(-s), ptr(s), o)),
                ("clamp_min", lambda t: torch.clamp_min(t, s),
                 lambda p, o: L.clt_clamp_min(p, s, o)),
                ("clamp_max", lambda t: torch.clamp_max(t, s),
                 lambda p, o: L.clt_clamp_max(p, s, o)),
                ("leaky_relu", lambda t: F.leaky_relu(t, s),
                 lambda p, o: L.clt_leaky_relu(p, s, o)),
                ("elu", lambda t: F.elu(t, s), lambda p, o: L.clt_elu(p, s, o)),
                ("celu", lambda t: F.celu(t, s), lambda p, o: L.clt_celu(p, s, o)),
                ("hardtanh", lambda t: F.hardtanh(t, -s, s),
                 lambda p, o: L.clt_hardtanh(p, -s, s, o)),
                ("threshold", lambda t: F.threshold(t, s, -s),
                 lambda p, o: L.clt_threshold(p, s, -s, o)),
                ("softplus beta", lambda t: F.softplus(t, s, 20.0),
                 lambda p, o: L.clt_softplus(p, s, 20.0, o)),
                ("softplus threshold", lambda t: F.softplus(t, 1.0, s),
                 lambda p, o: L.clt_softplus(p, 1.0, s, o)),
                ("hardshrink", lambda t: F.hardshrink(t, s),
                 lambda p, o: L.clt_hardshrink(p, s, o)),
                ("softshrink", lambda t: F.softshrink(t, s),
                 lambda p, o: L.clt_softshrink(p, s, o)),
                ("rrelu eval", lambda t: F.rrelu(t, s / 2, s, training=False),
                 lambda p, o: L.clt_rrelu(p, s / 2, s, 0, None, o)),
                ("full_like", lambda t: torch.full_like(t, s),
                 lambda p, o: L.clt_full_like(p, s, o)),
                ("fill_", lambda t: t.clone().fill_(s),
                 _on_clone(lambda c: L.clt_fill_(c, s))),
                ("nan_to_num", lambda t: torch.nan_to_num(t, s, s * 7, -s * 3),
                 lambda p, o: L.clt_nan_to_num(p, s, ptr(s * 7), ptr(-s * 3), o)),
            ]
            for name, tf, cf in one:
                if not _torch_has(tf, x[:4]):
                    continue
                xin = far if name in ("elu", "celu") else x
                check("half_params %s %s %r" % (nm, name, s), tf, cf, [xin], tol="exact")
            check("half_params %s masked_fill %r" % (nm, s), lambda t, m: t.masked_fill(m, s),
                  lambda p, m, o: L.clt_masked_fill(p, m, s, o), [x, mask], tol="exact")
            two = [
                ("add_ alpha", lambda a, b: a.clone().add_(b, alpha=s),
                 _on_clone(lambda c, q: L.clt_add_(c, q, s))),
                ("sub_ alpha", lambda a, b: a.clone().sub_(b, alpha=s),
                 _on_clone(lambda c, q: L.clt_sub_(c, q, s))),
                ("lerp weight", lambda a, b: torch.lerp(a, b, s),
                 lambda p, q, o: L.clt_lerp_scalar(p, q, s, o)),
            ]
            for name, tf, cf in two:
                if not _torch_has(tf, fin[:4], y[:4]):
                    continue
                check("half_params %s %s %r" % (nm, name, s), tf, cf, [fin, y], tol="exact")
            three = [("addcmul", lambda a, b, c: torch.addcmul(a, b, c, value=s),
                      lambda p, q, r, o: L.clt_addcmul(p, q, r, s, o)),
                     ("addcdiv", lambda a, b, c: torch.addcdiv(a, b, c, value=s),
                      lambda p, q, r, o: L.clt_addcdiv(p, q, r, s, o))]
            for name, tf, cf in three:
                if _torch_has(tf, fin[:4], y[:4], z[:4]):
                    check("half_params %s %s %r" % (nm, name, s), tf, cf, [fin, y, z], tol="exact")
        if _torch_has(F.selu, x[:4]):
            check("half_params %s selu" % nm, F.selu, L.clt_selu, [far], tol="exact")


def autocast_cpu():
    """clt_autocast_enter_ex(dev, bfloat16, CLT_AUTOCAST_CPU) against
    torch.autocast("cpu", torch.bfloat16) on a small model: every step's
    dtype the same and its values within bfloat16's tolerance, the float32
    weights' gradients in float32; float16 refused as torch refuses it."""
    proto("clt_autocast_enter_ex", [P, C.c_int, C.c_int])
    proto("clt_autocast_exit", [])
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_grad", [P, PP])
    for n in ("clt_mm", "clt_matmul"):
        proto(n, [P, P, PP])
    proto("clt_addmm", [P, P, P, C.c_double, C.c_double, PP])
    proto("clt_relu", [P, PP])
    proto("clt_softmax", [P, C.c_int, PP])
    proto("clt_mse_loss", [P, P, C.c_int, PP])
    proto("clt_prod_dim", [P, C.c_int, C.c_int, PP])
    proto("clt_add", [P, P, PP])
    proto("clt_sum", [P, PP])
    proto("clt_conv1d", [P, P, P, P, PP])
    proto("clt_conv_transpose1d", [P, P, P, P, PP])
    proto("clt_unsqueeze", [P, C.c_int, PP])
    gen = torch.Generator().manual_seed(11)
    rnd = lambda *shape: torch.rand(shape, generator=gen) * 2 - 1
    x, w1, b1, w2 = rnd(4, 8), rnd(8, 6), rnd(6), rnd(6, 5)
    target, wc, wct = torch.rand(4, 5, generator=gen), rnd(3, 4, 2), rnd(3, 2, 2)
    tw = {"w1": w1.clone().requires_grad_(), "w2": w2.clone().requires_grad_()}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = {}
        ref["addmm"] = torch.addmm(b1, x, tw["w1"])
        ref["relu"] = torch.relu(ref["addmm"])
        ref["mm"] = torch.mm(ref["relu"], tw["w2"])
        ref["softmax"] = torch.softmax(ref["mm"], 1)
        ref["mse_loss"] = F.mse_loss(ref["softmax"], target)
        ref["prod"] = torch.prod(ref["softmax"], 1)
        ref["conv1d"] = F.conv1d(x[None], wc)
        ref["conv_transpose1d"] = F.conv_transpose1d(ref["conv1d"], wct)
        ref["loss"] = ref["mse_loss"] + ref["conv_transpose1d"].sum() * 0.0 + ref["prod"].sum()
    ref["loss"].backward()
    keep = []

    def up(t, grad=False):
        q = upload(t)
        keep.append(q)
        if grad:
            L.clt_set_requires_grad(q, 1)
        return q

    cx, cb1, cw1, cw2 = up(x), up(b1), up(w1, True), up(w2, True)
    ctarget, cwc, cwct = up(target), up(wc), up(wct)
    got = {}

    def run(name, fn, *args):
        o = P()
        st = fn(*args, C.byref(o))
        if st:
            raise RuntimeError("%s: %s" % (name, L.clt_last_error()))
        keep.append(o)
        got[name] = o
        return o

    if L.clt_autocast_enter_ex(DEV, BF16, 1):
        return fail("autocast_cpu enter", L.clt_last_error())
    try:
        run("addmm", L.clt_addmm, cb1, cx, cw1, 1.0, 1.0)
        run("relu", L.clt_relu, got["addmm"])
        run("mm", L.clt_mm, got["relu"], cw2)
        run("softmax", L.clt_softmax, got["mm"], 1)
        run("mse_loss", L.clt_mse_loss, got["softmax"], ctarget, 0)  # mean
        run("prod", L.clt_prod_dim, got["softmax"], 1, 0)
        x3 = run("x3", L.clt_unsqueeze, cx, 0)
        run("conv1d", L.clt_conv1d, x3, cwc, None, None)
        run("conv_transpose1d", L.clt_conv_transpose1d, got["conv1d"], cwct, None, None)
        s = run("psum", L.clt_sum, got["prod"])
        run("loss", L.clt_add, got["mse_loss"], s)
    except RuntimeError as e:
        L.clt_autocast_exit()
        return fail("autocast_cpu model", str(e))
    L.clt_autocast_exit()
    if L.clt_backward(got["loss"], None, 0):
        return fail("autocast_cpu backward", L.clt_last_error())
    for wname, cw in (("w1", cw1), ("w2", cw2)):
        g = P()
        L.clt_grad(cw, C.byref(g))
        keep.append(g)
        got["grad " + wname] = g
        ref["grad " + wname] = tw[wname].grad
    global PASSED
    for name in ["addmm", "relu", "mm", "softmax", "mse_loss", "prod", "conv1d",
                 "conv_transpose1d", "loss", "grad w1", "grad w2"]:
        a, shape, dt = download(got[name])
        e = ref[name].detach()
        if dt != T2C.get(e.dtype, BF16 if e.dtype == torch.bfloat16 else -1):
            fail("autocast_cpu %s" % name, "dtype %d, torch %s" % (dt, e.dtype))
            continue
        ev = e.float().numpy()
        if tuple(shape) != tuple(ev.shape) or not np.allclose(a, ev, rtol=3e-2, atol=1e-2):
            fail("autocast_cpu %s" % name, "values %s vs torch %s" % (a.ravel()[:6], ev.ravel()[:6]))
            continue
        PASSED += 1
    for q in keep:
        L.clt_tensor_free(q)
    # torch raises for float16 on the CPU lists
    try:
        with torch.autocast("cpu", dtype=torch.float16):
            pass
        fail("autocast_cpu float16", "torch took float16")
    except RuntimeError:
        if L.clt_autocast_enter_ex(DEV, F16, 1) == 0:
            L.clt_autocast_exit()
            fail("autocast_cpu float16", "cltensor took float16 on the CPU lists")
        else:
            PASSED += 1
    _autocast_cpu_rnn()


def _autocast_cpu_rnn():
    """autocast_cpu's second model: an LSTM (2 layers, float32 input, no
    states: float32 throughout, its gate products in bfloat16), a product
    into bfloat16, a bidirectional GRU on it with float32 h0 (float32 out)
    and without (bfloat16 out), the three cells on bfloat16 input with and
    without float32 states, and float32-list ops on bfloat16 operands
    (reflection and replication padding, trace, linalg.inv, quantile,
    irfft, avg_pool3d, cholesky): each step's dtype torch's, its values
    within bfloat16's tolerance, and the float32 parameters' gradients
    float32 and close to torch's."""
    import tempfile
    try:
        from safetensors.torch import save_file
    except Exception as e:  # pragma: no cover
        return fail("autocast_cpu rnn", "cannot import safetensors: %s" % e)
    global PASSED
    _rnn_protos()
    proto("clt_module_parameters", [P, C.POINTER(PP), C.POINTER(C.c_size_t)])
    proto("clt_free", [P], None)
    proto("clt_lstm_cell", [P, P, P, P, P, P, P, PP, PP])
    proto("clt_gru_cell", [P, P, P, P, P, P, PP])
    proto("clt_rnn_cell", [P, P, P, P, P, P, C.c_int, PP])
    proto("clt_pad", [P, I64P, C.c_int, C.c_int, C.c_double, PP])
    proto("clt_trace", [P, PP])
    proto("clt_linalg_inv", [P, PP])
    proto("clt_linalg_cholesky", [P, C.c_int, PP])
    proto("clt_quantile", [P, P, C.c_double, C.POINTER(C.c_int), C.c_int, C.c_int, PP])
    proto("clt_fft_irfft", [P, C.c_int64, C.c_int, C.c_char_p, PP])
    proto("clt_avg_pool3d", [P, I64P, I64P, I64P, C.c_int, C.c_int, PP])
    proto("clt_reshape", [P, C.c_int, I64P, PP])
    proto("clt_mul", [P, P, PP])
    proto("clt_select", [P, C.c_int, C.c_int64, PP])
    gen = torch.Generator().manual_seed(23)
    rnd = lambda *shape: torch.rand(shape, generator=gen) * 2 - 1
    torch.manual_seed(23)
    T, N, I, H = 5, 2, 3, 4
    lstm, gru = torch.nn.LSTM(I, H, num_layers=2), torch.nn.GRU(H, 3, bidirectional=True)
    x, wp, h0 = rnd(T, N, I), rnd(H, H).requires_grad_(), rnd(2, N, 3)
    cw = [rnd(4 * H, I), rnd(4 * H, H), rnd(4 * H), rnd(4 * H)]  # LSTMCell
    gw = [rnd(3 * H, I), rnd(3 * H, H), rnd(3 * H), rnd(3 * H)]  # GRUCell
    rw = [rnd(H, I), rnd(H, H), None, None]  # RNNCell, no bias
    hx, cxs = rnd(N, H), rnd(N, H)
    spd = torch.eye(3) * 3 + rnd(3, 3) * 0.3
    spd = spd @ spd.T
    ref = {}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref["lstm out"], (ref["lstm h_n"], ref["lstm c_n"]) = lstm(x)
        ref["proj"] = torch.matmul(ref["lstm out"], wp)
        ref["gru out"], ref["gru h_n"] = gru(ref["proj"], h0)
        ref["gru out bf16"], ref["gru h_n bf16"] = gru(ref["proj"])
        xb = ref["proj"][0, :, :I]
        ref["lstm_cell h"], ref["lstm_cell c"] = torch.lstm_cell(xb, (hx, cxs), *cw)
        ref["lstm_cell h bf16"], ref["lstm_cell c bf16"] = torch.lstm_cell(
            xb, (hx.bfloat16(), cxs.bfloat16()), *cw)
        ref["gru_cell"] = torch.gru_cell(xb, hx, *gw)
        ref["rnn_cell"] = torch.rnn_tanh_cell(xb, hx, *rw)
        g = ref["gru out bf16"]  # [T, N, 6] bfloat16
        ref["reflect"] = F.pad(g, (2, 1), mode="reflect")
        ref["replicate"] = F.pad(g[None], (1, 1, 2, 0, 1, 1), mode="replicate")
        ref["trace"] = torch.trace(g[0])
        ref["inv"] = torch.linalg.inv(spd.bfloat16())
        ref["cholesky"] = torch.linalg.cholesky(spd.bfloat16())
        ref["quantile"] = torch.quantile(g, 0.3)
        ref["irfft"] = torch.fft.irfft(g)
        ref["avg_pool3d"] = F.avg_pool3d(g[None, None], (2, 2, 3))
        ref["loss"] = (ref["gru out"].sum() + ref["lstm h_n"].sum() + ref["lstm c_n"].sum() +
                       ref["reflect"].sum() + ref["irfft"].sum())
    ref["loss"].backward()
    tmp = tempfile.mkdtemp(prefix="cltensor-autocast-")
    path = os.path.join(tmp, "m.safetensors")
    keep, mods = [], []

    def module(kind, tm, o):
        m = P()
        if getattr(L, "clt_%s_layer" % kind)(DEV, C.byref(o), None, C.byref(m)):
            raise RuntimeError("layer: %s" % L.clt_last_error())
        mods.append(m)
        save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, path)
        if L.clt_module_load(m, path.encode()):
            raise RuntimeError("load: %s" % L.clt_last_error())
        return m

    def up(t, grad=False):
        q = upload(t.detach()) if t is not None else None
        if q is not None:
            keep.append(q)
            if grad:
                L.clt_set_requires_grad(q, 1)
        return q

    got = {}

    def run(names, fn, *args):
        outs = [P() for _ in names]
        if fn(*args, *[C.byref(o) for o in outs]):
            raise RuntimeError("%s: %s" % (names[0], L.clt_last_error()))
        keep.extend(outs)
        for nm, o in zip(names, outs):
            if nm:
                got[nm] = o
        return outs[0]

    try:
        ml = module("lstm", lstm, RnnOpts(I, H, 2, 1, 0, 0.0, 0, 0))
        mg = module("gru", gru, RnnOpts(H, 3, 1, 1, 0, 0.0, 1, 0))
        cx_, cwp, ch0 = up(x), up(wp, True), up(h0)
        ccw, cgw, crw = [up(t) for t in cw], [up(t) for t in gw], [up(t) for t in rw]
        chx, ccxs = up(hx), up(cxs)
        chxb, ccxb = up(hx.bfloat16()), up(cxs.bfloat16())
        cspd = up(spd.bfloat16())
        if L.clt_autocast_enter_ex(DEV, BF16, 1):
            raise RuntimeError("enter: %s" % L.clt_last_error())
        try:
            run(["lstm out", "lstm h_n", "lstm c_n"], L.clt_lstm_forward, ml, cx_, None, None)
            run(["proj"], L.clt_matmul, got["lstm out"], cwp)
            run(["gru out", "gru h_n"], L.clt_gru_forward, mg, got["proj"], ch0)
            run(["gru out bf16", "gru h_n bf16"], L.clt_gru_forward, mg, got["proj"], None)
            p0 = run([None], L.clt_select, got["proj"], 0, 0)
            xb = run([None], L.clt_narrow, p0, 1, 0, I)
            run(["lstm_cell h", "lstm_cell c"], L.clt_lstm_cell, xb, chx, ccxs, *ccw)
            run(["lstm_cell h bf16", "lstm_cell c bf16"], L.clt_lstm_cell, xb, chxb, ccxb, *ccw)
            run(["gru_cell"], L.clt_gru_cell, xb, chx, *cgw)
            run(["rnn_cell"], L.clt_rnn_cell, xb, chx, *crw, 0)
            g = got["gru out bf16"]
            run(["reflect"], L.clt_pad, g, shape_arr((2, 1)), 2, 1, 0.0)
            g4 = run([None], L.clt_unsqueeze, g, 0)
            run(["replicate"], L.clt_pad, g4, shape_arr((1, 1, 2, 0, 1, 1)), 6, 2, 0.0)
            g0 = run([None], L.clt_select, g, 0, 0)
            run(["trace"], L.clt_trace, g0)
            run(["inv"], L.clt_linalg_inv, cspd)
            run(["cholesky"], L.clt_linalg_cholesky, cspd, 0)
            run(["quantile"], L.clt_quantile, g, None, 0.3, None, 0, 0)
            run(["irfft"], L.clt_fft_irfft, g, -1, -1, None)
            g5 = run([None], L.clt_reshape, g, 5, shape_arr((1, 1, T, N, 6)))
            run(["avg_pool3d"], L.clt_avg_pool3d, g5, shape_arr((2, 2, 3)), None, None, 0, 1)
            parts = [run([None], L.clt_sum, got[k])
                     for k in ("gru out", "lstm h_n", "lstm c_n", "reflect", "irfft")]
            acc = parts[0]
            for q in parts[1:]:
                acc = run([None], L.clt_add, acc, q)
            got["loss"] = acc
        finally:
            L.clt_autocast_exit()
        if L.clt_backward(got["loss"], None, 0):
            raise RuntimeError("backward: %s" % L.clt_last_error())
        grads = [("grad proj weight", cwp, wp)]
        for tag, m, tm in (("lstm", ml, lstm), ("gru", mg, gru)):
            ps, n = PP(), C.c_size_t()
            if L.clt_module_parameters(m, C.byref(ps), C.byref(n)):
                raise RuntimeError("parameters: %s" % L.clt_last_error())
            names = [k for k, _ in tm.named_parameters()]
            for i, (nm, tp) in enumerate(zip(names, tm.parameters())):
                grads.append(("grad %s %s" % (tag, nm), ps[i], tp))
            L.clt_free(ps)
        for nm, cp, tp in grads:
            gq = P()
            L.clt_grad(cp, C.byref(gq))
            if not gq:
                raise RuntimeError("%s: no gradient" % nm)
            keep.append(gq)
            got[nm] = gq
            ref[nm] = tp.grad
    except RuntimeError as e:
        for q in keep:
            L.clt_tensor_free(q)
        for m in mods:
            L.clt_module_free(m)
        return fail("autocast_cpu rnn", str(e))
    for name in ref:
        a, shape, dt = download(got[name])
        e = ref[name].detach()
        if dt != T2C[e.dtype]:
            fail("autocast_cpu rnn %s" % name, "dtype %d, torch %s" % (dt, e.dtype))
            continue
        ev = e.float().numpy()
        if tuple(shape) != tuple(ev.shape) or not np.allclose(a, ev, rtol=3e-2, atol=2e-2):
            fail("autocast_cpu rnn %s" % name, "values %s vs torch %s" % (
                a.ravel()[:6], ev.ravel()[:6]))
            continue
        PASSED += 1
    for q in keep:
        L.clt_tensor_free(q)
    for m in mods:
        L.clt_module_free(m)
    os.unlink(path)
    os.rmdir(tmp)


def histobs():
    """HistogramObserver (clt_observer with CLT_HISTOGRAM_OBSERVER) against
    torch.ao.quantization.HistogramObserver: min_val, max_val and the
    histogram after batches that grow, keep and shrink the range, the
    qparams of its L2 search, FakeQuantize over it, and the state through
    torch's file format both ways."""
    import tempfile
    import warnings
    from torch.ao import quantization as Q
    f = torch.float32
    proto("clt_observer", [P, C.POINTER(_ObsOpts), PP])
    proto("clt_fake_quantize_layer", [P, C.POINTER(_ObsOpts), PP])
    proto("clt_observer_calculate_qparams", [P, PP, PP])
    proto("clt_module_save_torch", [P, C.c_char_p])
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_free", [P], None)
    proto("clt_module_buffer", [P, C.c_char_p], P)
    proto("clt_module_child", [P, C.c_char_p], P)
    QD = {torch.quint8: 0, torch.qint8: 1, torch.qint32: 2}
    QS = {torch.per_tensor_affine: 0, torch.per_tensor_symmetric: 1}

    def opts_of(kw):
        o = _ObsOpts()
        o.kind = 4
        o.dtype = QD[kw.get("dtype", torch.quint8)]
        o.qscheme = QS[kw.get("qscheme", torch.per_tensor_affine)]
        o.reduce_range = int(kw.get("reduce_range", False))
        o.has_range = int("quant_min" in kw)
        o.quant_min, o.quant_max = kw.get("quant_min", 0), kw.get("quant_max", 0)
        o.averaging_constant = 0.01
        o.eps = kw.get("eps", torch.finfo(torch.float32).eps)
        o.bins = kw.get("bins", 2048)
        o.upsample_rate = kw.get("upsample_rate", 128)
        return o

    def same(name, what, e, got, tol=0):
        e = np.asarray(e)
        if e.shape != got.shape or e.dtype != got.dtype:
            return fail(name, "%s: torch %s %s, cltensor %s %s" % (
                what, e.dtype, e.shape, got.dtype, got.shape))
        if not np.allclose(got, e, rtol=tol, atol=0, equal_nan=True):
            k = np.nonzero(~np.isclose(got, e, rtol=tol, atol=0, equal_nan=True))[0][:4] \
                if e.ndim else []
            return fail(name, "%s: torch %s, cltensor %s (at %s)" % (
                what, e.ravel()[:6], got.ravel()[:6], list(k)))
        return True

    def hist_case(name, kw, batches, fq=False, fails_at=None):
        """Each batch observed by both; fails_at: the batch torch raises
        on, which cltensor refuses without changing its state."""
        tkw = {k: v for k, v in kw.items()}
        cls = Q.HistogramObserver
        tm = Q.FakeQuantize(observer=cls, **tkw) if fq else cls(**tkw)
        obs = tm.activation_post_process if fq else tm
        o = opts_of(kw)
        m, keep = P(), []
        ctor = L.clt_fake_quantize_layer if fq else L.clt_observer
        if ctor(DEV, C.byref(o), C.byref(m)) != 0:
            return fail(name, L.clt_last_error().decode())
        om = m
        try:
            for k, b in enumerate(batches):
                cx = upload(b)
                keep.append(cx)
                y = P()
                if k == fails_at:
                    before = {n: obs.state_dict()[n].clone() for n in ("min_val", "max_val",
                                                                       "histogram")}
                    try:
                        tm(b)
                        return fail(name, "torch accepted batch %d" % k)
                    except (ValueError, OverflowError, RuntimeError):
                        pass
                    if L.clt_module_forward(m, cx, C.byref(y)) == 0:
                        keep.append(y)
                        return fail(name, "cltensor accepted batch %d" % k)
                    if b"HistogramObserver" not in L.clt_last_error():
                        return fail(name, "message: " + L.clt_last_error().decode())
                    # torch has changed min_val and max_val before raising;
                    # cltensor keeps what it had: compare with that
                    for n, v in before.items():
                        obs.state_dict()[n].copy_(v)
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ty = tm(b)
                if L.clt_module_forward(m, cx, C.byref(y)) != 0:
                    return fail(name, "forward %d: %s" % (k, L.clt_last_error().decode()))
                keep.append(y)
                if same(name, "forward %d" % k, ty.detach().numpy(), download(y)[0]) is not True:
                    return
            for b in ("min_val", "max_val", "histogram"):
                cb = L.clt_module_buffer(
                    L.clt_module_child(m, b"activation_post_process") if fq else m, b.encode())
                if not cb:
                    return fail(name, "no buffer " + b)
                if same(name, b, getattr(obs, b).numpy(), download(cb)[0]) is not True:
                    return
            s, z = P(), P()
            if L.clt_observer_calculate_qparams(m, C.byref(s), C.byref(z)) != 0:
                return fail(name, L.clt_last_error().decode())
            keep += [s, z]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                es, ez = obs.calculate_qparams()
            if same(name, "scale", es.numpy(), download(s)[0]) is not True:
                return
            if same(name, "zero_point", ez.numpy(), download(z)[0]) is not True:
                return
            with tempfile.TemporaryDirectory() as td:
                path = os.path.join(td, "h.pt")
                if L.clt_module_save_torch(m, path.encode()) != 0:
                    return fail(name, "save: " + L.clt_last_error().decode())
                fresh = Q.FakeQuantize(observer=cls, **tkw) if fq else cls(**tkw)
                try:
                    fresh.load_state_dict(torch.load(path), strict=True)
                except RuntimeError as e:
                    return fail(name, "torch's load_state_dict: %s" % e)
                for key, v in tm.state_dict().items():
                    if same(name, "loaded " + key, v.numpy(),
                            fresh.state_dict()[key].numpy()) is not True:
                        return
                # and back: torch's own file into a new cltensor observer
                path2 = os.path.join(td, "t.pt")
                torch.save(tm.state_dict(), path2)
                m2 = P()
                if ctor(DEV, C.byref(o), C.byref(m2)) != 0:
                    return fail(name, L.clt_last_error().decode())
                om = m2
                L.clt_module_free(m)
                m = m2
                if L.clt_module_load_torch(m, path2.encode(), 1) != 0:
                    return fail(name, "load: " + L.clt_last_error().decode())
                s2, z2 = P(), P()
                if L.clt_observer_calculate_qparams(m, C.byref(s2), C.byref(z2)) != 0:
                    return fail(name, L.clt_last_error().decode())
                keep += [s2, z2]
                if same(name, "scale after load", es.numpy(), download(s2)[0]) is not True:
                    return
            ok(name, True)
        finally:
            for p in keep:
                L.clt_tensor_free(p)
            L.clt_module_free(om)

    g = torch.Generator().manual_seed(7)

    def rnd(shape, lo, hi):
        return (torch.rand(shape, generator=g) * (hi - lo) + lo).to(f)

    grow = [rnd((40,), -2, 3), rnd((30,), -5, 4), rnd((4, 8), -1, 9), rnd((50,), -12, 2)]
    for kw in ({"bins": 8}, {"bins": 16}, {"bins": 15}, {"bins": 31}, {"bins": 100},
               {"bins": 8, "upsample_rate": 3}, {"bins": 64, "upsample_rate": 16}, {},
               {"bins": 32, "reduce_range": True},
               {"bins": 32, "dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric},
               {"bins": 32, "qscheme": torch.per_tensor_symmetric},
               {"bins": 32, "quant_min": 0, "quant_max": 15},
               {"bins": 32, "dtype": torch.qint8, "quant_min": -8, "quant_max": 7},
               {"bins": 32, "dtype": torch.qint32}, {"bins": 32, "eps": 2.0 ** -4}):
        hist_case("HistogramObserver growing %s" % kw, kw, grow)
    hist_case("HistogramObserver one batch", {"bins": 8}, grow[:1])
    # bins + 1 edges a multiple of 16: histc's last edge is not max itself
    # but what torch's vectorised linspace makes, which can leave max out
    for bins, lo, hi in ((15, -5.0, 1.0), (31, -5.0, -4.0), (47, -3.0, 4.0), (15, 0.0, 7.0)):
        edge = torch.linspace(lo, hi, bins + 1)
        hist_case("HistogramObserver bins %d over [%g, %g]" % (bins, lo, hi), {"bins": bins},
                  [torch.cat([torch.tensor([lo, hi]), edge, rnd((20,), lo, hi)]),
                   torch.cat([torch.tensor([lo - 1, hi]), edge * 1.5])])
    hist_case("HistogramObserver unobserved", {"bins": 8}, [])
    hist_case("HistogramObserver empty batch", {"bins": 8}, [torch.zeros(0, 3)])
    # the range kept (the histograms added) and shrinking inputs
    hist_case("HistogramObserver narrower batches", {"bins": 16},
              [rnd((60,), -6, 6), rnd((20,), -1, 1), rnd((20,), -3, 5)])
    hist_case("HistogramObserver same batch twice", {"bins": 16}, [grow[0], grow[0]])
    # values inside (0, 1): torch's int() of the ends makes histc take the
    # data's own range
    hist_case("HistogramObserver fractions", {"bins": 16},
              [rnd((30,), 0.1, 0.9), rnd((30,), 0.05, 0.5), rnd((30,), 0.2, 0.99)])
    hist_case("HistogramObserver large values", {"bins": 64},
              [rnd((30,), -300, 1000), rnd((30,), -2000, 50)])
    hist_case("HistogramObserver positive only", {"bins": 32},
              [rnd((30,), 0.5, 7), rnd((30,), 1, 12)])
    hist_case("HistogramObserver constant", {"bins": 8}, [torch.full((5,), 2.5)])
    hist_case("HistogramObserver constant then wider", {"bins": 8},
              [torch.full((5,), 2.5), grow[0], grow[1]])
    hist_case("HistogramObserver all zeros", {"bins": 8}, [torch.zeros(6)])
    hist_case("HistogramObserver all zeros twice", {"bins": 8}, [torch.zeros(6), torch.zeros(3)])
    hist_case("HistogramObserver zeros then data", {"bins": 8}, [torch.zeros(6), grow[0]])
    hist_case("HistogramObserver one value", {"bins": 2048}, [torch.tensor([-3.0])])
    hist_case("HistogramObserver NaN first", {"bins": 8},
              [torch.tensor([1.0, math.nan]), grow[0]], fails_at=0)
    hist_case("HistogramObserver NaN later", {"bins": 8},
              [grow[0], torch.tensor([1.0, math.nan]), grow[1]], fails_at=1)
    hist_case("HistogramObserver infinity", {"bins": 8},
              [grow[0], torch.tensor([1.0, math.inf])], fails_at=1)
    hist_case("HistogramObserver default bins, normal data", {},
              [torch.randn(500, generator=g), torch.randn(500, generator=g) * 3,
               torch.randn(200, generator=g) * 0.5 + 2])
    # a long search: many samples, a few far out
    hist_case("HistogramObserver default bins, outliers", {},
              [torch.cat([torch.randn(5000, generator=g), torch.tensor([-40.0, 55.0])]),
               torch.randn(5000, generator=g) * 2])
    # torch's L2 search compares its float32 cumulative sums with
    # next_alpha * total rounded to float32 (a tensor with a Python float)
    # and steps alpha and beta by 1e-5: with 100002 values both decide the
    # range kept (bounds in double, or a step of 1e-4, keep another)
    gs = torch.Generator().manual_seed(36)
    xs = torch.cat([torch.randn(100000, generator=gs), torch.tensor([-30.0, 45.0])])
    for bins in (64, 128):
        hist_case("HistogramObserver long search, %d bins" % bins, {"bins": bins}, [xs])
    hist_case("FakeQuantize HistogramObserver", {"bins": 16}, grow, fq=True)
    hist_case("FakeQuantize HistogramObserver symmetric",
              {"bins": 32, "dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric,
               "quant_min": -128, "quant_max": 127}, grow[:3], fq=True)


def lobpcg_sparse():
    """torch.lobpcg with a sparse A (and B) in COO, CSR and CSC from the
    same X: the values after 3 steps and at convergence, and the vectors
    (squared: their signs are arbitrary), both methods; with B; a sparse A
    that requires grad runs on (A + A^T) / 2 and refuses its backward as
    torch's."""
    proto("clt_lobpcg", [P, C.c_int64, P, P, C.c_int64, P, C.c_int64, C.POINTER(C.c_double),
                         C.c_int, C.c_char_p, P, P, PP, PP])
    proto("clt_lobpcg_sparse", [P, C.c_int64, P, P, C.c_int64, P, C.c_int64,
                                C.POINTER(C.c_double), C.c_int, C.c_char_p, P, P, PP, PP])
    proto("clt_sparse_free", [P], None)
    proto("clt_tensor_to_sparse", [P, C.c_int, PP])
    for n in ("csr", "csc"):
        proto("clt_tensor_to_sparse_%s" % n, [P, PP])
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_sum", [P, PP])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_tensor_free", [P], None)

    def sparse(d, lay):
        h, s = upload(d), P()
        st = (L.clt_tensor_to_sparse(h, 2, C.byref(s)) if lay == "coo" else
              getattr(L, "clt_tensor_to_sparse_" + lay)(h, C.byref(s)))
        assert st == 0, L.clt_last_error()
        return h, s

    def to_torch(d, lay):
        return d.to_sparse() if lay == "coo" else getattr(d, "to_sparse_" + lay)()

    m, k, n = 12, 2, 3
    for dt in FLOATS:
        q = torch.randn(m, m, generator=G, dtype=torch.float64)
        a = q @ q.T / m + torch.diag(torch.arange(m, dtype=torch.float64))
        a = (a * ((torch.arange(m)[:, None] + torch.arange(m)) % 3 != 1)).to(dt)
        b = (torch.eye(m, dtype=torch.float64) * (1 + torch.arange(m) / 8.0)).to(dt)
        x = torch.randn(m, n, generator=G, dtype=torch.float64).to(dt)
        tol = 2e-4 if dt == torch.float32 else 1e-9
        for lay in ("coo", "csr", "csc"):
            for method in ("ortho", "basic"):
                for withb in (0, 1):
                    # "basic" breaks down near convergence (torch's Cholesky too)
                    for niter in ((3, -1) if method == "ortho" else (3,)):
                        name = "lobpcg_sparse %s %s %s B %d niter %d" % (dt, lay, method,
                                                                        withb, niter)
                        et, vt = torch.lobpcg(to_torch(a, lay), k=k,
                                              B=to_torch(b, lay) if withb else None,
                                              X=x.clone(), niter=niter, method=method)
                        ha, sa = sparse(a, lay)
                        hb, sb = sparse(b, lay) if withb else (None, None)
                        hx = upload(x)
                        e, v = P(0xdead), P(0xdead)
                        st = L.clt_lobpcg_sparse(sa, k, sb, hx, 0, None, niter, None, 1,
                                                 method.encode(), None, None, C.byref(e),
                                                 C.byref(v))
                        if st:
                            fail(name, "cltensor fails: %s" % L.clt_last_error())
                        else:
                            ge, gv = download(e)[0], download(v)[0]
                            scale = float(et.abs().max())
                            ok(name + " values", np.abs(ge - et.numpy()).max() <= tol * scale,
                               "%s, torch %s" % (ge, et))
                            ok(name + " vectors", np.abs(gv ** 2 - vt.numpy() ** 2).max() <=
                               (1e-3 if dt == torch.float32 else 1e-7),
                               "off by %g" % np.abs(gv ** 2 - vt.numpy() ** 2).max())
                            L.clt_tensor_free(e)
                            L.clt_tensor_free(v)
                        for h in (ha, hb, hx):
                            L.clt_tensor_free(h)
                        L.clt_sparse_free(sa)
                        L.clt_sparse_free(sb)
    # a sparse A that requires grad (not symmetric: torch symmetrises it);
    # torch's backward refuses sparse inputs
    a = torch.randn(m, m, generator=G, dtype=torch.float64) + torch.diag(
        torch.arange(m, dtype=torch.float64)) * 3
    x = torch.randn(m, n, generator=G, dtype=torch.float64)
    ta = a.to_sparse().requires_grad_()
    et, vt = torch.lobpcg(ta, k=k, X=x.clone(), niter=3)
    try:
        et.sum().backward()
        terr = None
    except Exception as ex:
        terr = str(ex)
    ha = upload(a)
    assert L.clt_set_requires_grad(ha, 1) == 0
    sa = P()
    assert L.clt_tensor_to_sparse(ha, 2, C.byref(sa)) == 0
    hx = upload(x)
    e, v, s = P(), P(), P()
    st = L.clt_lobpcg_sparse(sa, k, None, hx, 0, None, 3, None, 1, None, None, None, C.byref(e),
                             C.byref(v))
    if st:
        fail("lobpcg_sparse requires grad", "cltensor fails: %s" % L.clt_last_error())
    else:
        ge = download(e)[0]
        ok("lobpcg_sparse requires grad values", np.abs(ge - et.detach().numpy()).max() <= 1e-9 *
           float(et.abs().max()), "%s, torch %s" % (ge, et))
        assert L.clt_sum(e, C.byref(s)) == 0
        bst = L.clt_backward(s, None, 0)
        ok("lobpcg_sparse backward refused", terr is not None and bst != 0 and
           "does not support sparse input" in L.clt_last_error().decode() and
           "does not support sparse input" in terr, "status %d: %s, torch %s" % (
               bst, L.clt_last_error(), terr))
        for h in (e, v, s):
            L.clt_tensor_free(h)
    L.clt_tensor_free(ha)
    L.clt_tensor_free(hx)
    L.clt_sparse_free(sa)


def nn_init_normal_uniform():
    """nn.init.normal_ and uniform_ (DCGAN's weights_init) on parameters that
    require grad: the moments of torch's distributions, leaves kept, and
    torch's refusals in our messages."""
    proto("clt_init_uniform_", [P, P, C.c_double, C.c_double])
    proto("clt_init_normal_", [P, P, C.c_double, C.c_double])
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_is_leaf", [P], C.c_int)
    proto("clt_requires_grad", [P], C.c_int)
    gen = P()
    assert L.clt_generator_new(5, C.byref(gen)) == 0
    init = torch.nn.init
    for dt in (torch.float32, torch.float64):
        for name, cfn, tfn, a, b in [
                ("normal_", L.clt_init_normal_, init.normal_, 0.0, 0.02),
                ("normal_", L.clt_init_normal_, init.normal_, 1.0, 0.02),
                ("uniform_", L.clt_init_uniform_, init.uniform_, -0.1, 0.3)]:
            t = torch.zeros(64, 32, 4, 4, dtype=dt)
            p = upload(t)
            L.clt_set_requires_grad(p, 1)
            st = cfn(p, gen, a, b)
            got, _, _ = download(p)
            leaf = L.clt_is_leaf(p) and L.clt_requires_grad(p)
            L.clt_tensor_free(p)
            want = tfn(torch.nn.Parameter(t.clone()), a, b).detach().numpy()
            n = got.size
            sd = want.std()
            ok("%s(%g, %g) %s" % (name, a, b, dn(dt)),
               st == 0 and leaf and got.dtype == want.dtype
               and abs(got.mean() - want.mean()) < 6 * sd / math.sqrt(n)
               and abs(got.std() / sd - 1) < 0.03
               and (name == "normal_" or (got.min() >= a and got.max() < b)),
               "status %d, mean %r vs torch's %r, std %r vs %r" % (st, got.mean(), want.mean(),
                                                                   got.std(), sd))
    for name, tfn, cfn, dt in [
            ("uniform_ from > to", lambda t: init.uniform_(t, 1, 0),
             lambda p: L.clt_init_uniform_(p, gen, 1, 0), torch.float32),
            ("normal_ std < 0", lambda t: init.normal_(t, 0, -1),
             lambda p: L.clt_init_normal_(p, gen, 0, -1), torch.float32),
            ("uniform_ int64", lambda t: init.uniform_(t), lambda p: L.clt_init_uniform_(p, gen, 0, 1),
             torch.int64),
            ("normal_ int64", lambda t: init.normal_(t), lambda p: L.clt_init_normal_(p, gen, 0, 1),
             torch.int64)]:
        try:
            tfn(torch.zeros(3, dtype=dt))
            fail(name, "torch accepts it")
            continue
        except Exception as e:
            want = str(e).split(", but found std")[0]
        p = upload(torch.zeros(3, dtype=dt))
        st = cfn(p)
        msg = L.clt_last_error().decode()
        got, _, _ = download(p)
        L.clt_tensor_free(p)
        # torch's dtype refusal names its kernel; ours says a floating dtype is needed
        ok(name, st != 0 and (want in msg or (dt == torch.int64 and "floating" in msg))
           and not got.any(), "torch %r, ours %r" % (want, msg))
    L.clt_generator_free(gen)


def bn_cumulative():
    """BatchNorm1d/2d/3d with momentum=None (CLT_BN_CUMULATIVE, -1): the
    running statistics a cumulative average, its count going on from a
    loaded state_dict's num_batches_tracked."""
    import tempfile
    proto("clt_batch_norm1d_layer", [P, C.c_int64, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_batch_norm2d_layer", [P, C.c_int64, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_batch_norm3d_layer", [P, C.c_int64, C.c_double, C.c_double, C.c_int, C.c_int, PP])
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_buffer", [P, C.c_char_p], P)
    proto("clt_module_free", [P], None)
    cases = [("BatchNorm1d", torch.nn.BatchNorm1d, L.clt_batch_norm1d_layer, (5, 3, 2)),
             ("BatchNorm2d", torch.nn.BatchNorm2d, L.clt_batch_norm2d_layer, (2, 3, 2, 3)),
             ("BatchNorm3d", torch.nn.BatchNorm3d, L.clt_batch_norm3d_layer, (2, 3, 2, 1, 2))]
    for name, tcls, cmake, xs in cases:
        for start in (0, 6):
            label = "%s momentum=None from %d" % (name, start)
            tm = tcls(3, momentum=None)
            tm.num_batches_tracked.fill_(start)
            cm = P()
            if cmake(DEV, 3, 1e-5, -1.0, 1, 1, C.byref(cm)):
                fail(label, L.clt_last_error().decode())
                continue
            try:
                with tempfile.TemporaryDirectory() as d:
                    path = os.path.join(d, "bn.pt")
                    torch.save(tm.state_dict(), path)
                    if L.clt_module_load_torch(cm, path.encode(), 1):
                        fail(label, L.clt_last_error().decode())
                        continue
                bad = None
                for b in range(3):
                    x = data(xs, torch.float32, lo=-2 - b, hi=3 + 2 * b)
                    xt, y = upload(x), P()
                    st = L.clt_module_forward(cm, xt, C.byref(y))
                    L.clt_tensor_free(xt)
                    L.clt_tensor_free(y)
                    if st:
                        bad = L.clt_last_error().decode()
                        break
                    with torch.no_grad():
                        tm(x)
                if bad:
                    fail(label, bad)
                    continue
                for key in ("running_mean", "running_var", "num_batches_tracked"):
                    got = download(L.clt_module_buffer(cm, key.encode()))[0]
                    want = getattr(tm, key).numpy()
                    ok(label + " " + key, got.dtype == want.dtype and
                       np.allclose(got, want, 1e-5, 1e-6), "%s / torch %s" % (got, want))
            finally:
                L.clt_module_free(cm)


def module_apply():
    """model.apply(fn): the modules in torch's order (children first, the
    model last) for nested Sequentials."""
    proto("clt_linear", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_relu_layer", [PP])
    proto("clt_tanh_layer", [PP])
    proto("clt_sequential", [C.POINTER(P), C.c_size_t, PP])
    proto("clt_module_name", [P], C.c_char_p)
    proto("clt_module_free", [P], None)
    fn_t = C.CFUNCTYPE(C.c_int, P, P)
    proto("clt_module_apply", [P, fn_t, P])

    def layer(make, *args):
        m = P()
        assert make(*args, C.byref(m)) == 0
        return m

    def seq(*mods):
        arr = (P * len(mods))(*mods)
        return layer(L.clt_sequential, arr, len(mods))

    inner = seq(layer(L.clt_linear, DEV, 4, 2, 1, None), layer(L.clt_tanh_layer))
    model = seq(layer(L.clt_linear, DEV, 3, 4, 1, None), layer(L.clt_relu_layer), inner)
    seen = []
    cb = fn_t(lambda m, user: seen.append(L.clt_module_name(m).decode()) or 0)
    st = L.clt_module_apply(model, cb, None)
    L.clt_module_free(model)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                             torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Tanh()))
    want = []
    tm.apply(lambda m: want.append(type(m).__name__))
    ok("apply order", st == 0 and seen == want, "ours %r, torch %r" % (seen, want))


class _MhaOpts(C.Structure):
    _fields_ = [("dropout", C.c_double), ("bias", C.c_int), ("add_bias_kv", C.c_int),
                ("add_zero_attn", C.c_int), ("kdim", C.c_int64), ("vdim", C.c_int64),
                ("batch_first", C.c_int)]


def mha_opts():
    """nn.MultiheadAttention(kdim, vdim, add_bias_kv, add_zero_attn):
    torch's state_dict through torch.save loaded strictly
    (clt_module_load_torch), outputs and attention weights (averaged, per
    head, none) for both layouts, unbatched, masks bool and float, the
    gradients of every parameter, input and float mask; the state saved
    with clt_module_save_torch loaded strictly by torch."""
    import tempfile
    nn = torch.nn
    proto("clt_multihead_attention_layer_with_opts",
          [P, C.c_int64, C.c_int64, C.POINTER(_MhaOpts), P, PP])
    proto("clt_multihead_attention", [P, P, P, P, P, P, C.c_int, C.c_int, PP, PP])
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_module_save_torch", [P, C.c_char_p])
    proto("clt_module_to_dtype", [P, C.c_int])
    proto("clt_module_free", [P], None)
    proto("clt_module_named_parameters", [P, C.POINTER(C.POINTER(Named)),
                                          C.POINTER(C.c_size_t)])
    proto("clt_free", [P], None)
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_grad", [P, PP])
    proto("clt_mul", [P, P, PP])
    proto("clt_sum", [P, PP])
    proto("clt_add", [P, P, PP])
    torch.manual_seed(17)
    E, H, L_, S, N = 8, 2, 4, 5, 3
    # (kdim, vdim, add_bias_kv, add_zero_attn, bias)
    cfgs = [(5, 3, 0, 0, 1), (5, 3, 1, 1, 1), (None, None, 1, 0, 1), (None, None, 0, 1, 0),
            (None, None, 1, 1, 1), (6, None, 1, 1, 0), (None, 8, 0, 1, 1)]
    d = tempfile.mkdtemp(prefix="cltensor-mha-")
    path = os.path.join(d, "m.pt")

    def make(dt, kd, vd, bkv, za, bias, bf, tm=None):
        """torch's module (new, or tm) and cltensor's with its state."""
        if tm is None:
            tm = nn.MultiheadAttention(E, H, bias=bool(bias), add_bias_kv=bool(bkv),
                                       add_zero_attn=bool(za), kdim=kd, vdim=vd,
                                       batch_first=bool(bf)).to(dt)
            with torch.no_grad():  # nonzero biases, so that they count
                for n_, p_ in tm.named_parameters():
                    if "bias" in n_:
                        p_.uniform_(-0.5, 0.5)
        torch.save(tm.state_dict(), path)
        o = _MhaOpts(0.0, bias, bkv, za, kd or 0, vd or 0, bf)
        m = P()
        if (L.clt_multihead_attention_layer_with_opts(DEV, E, H, C.byref(o), None, C.byref(m))
                or L.clt_module_to_dtype(m, T2C[dt])
                or L.clt_module_load_torch(m, path.encode(), 1)):
            fail("mha_opts make", L.clt_last_error().decode())
            L.clt_module_free(m)
            return tm, None
        return tm, m

    for dt in FLOATS:
        for kd, vd, bkv, za, bias in cfgs:
            for bf in (0, 1):
                tag = "mha_opts %s kdim=%s vdim=%s bias_kv=%d zero_attn=%d bias=%d bf=%d" % (
                    dn(dt), kd, vd, bkv, za, bias, bf)
                tm, m = make(dt, kd, vd, bkv, za, bias, bf)
                if m is None:
                    continue
                Ek, Ev = kd or E, vd or E
                qs = (N, L_, E) if bf else (L_, N, E)
                ks = (N, S, Ek) if bf else (S, N, Ek)
                vs = (N, S, Ev) if bf else (S, N, Ev)
                q, k, v = (data(qs, dt, lo=-1, hi=1), data(ks, dt, lo=-1, hi=1),
                           data(vs, dt, lo=-1, hi=1))
                kpm = torch.zeros(N, S, dtype=torch.bool)
                kpm[0, 2] = kpm[1, 0] = kpm[2, :] = True  # batch 2 hides every key
                kpf = data((N, S), dt, lo=-2, hi=0)
                am_b = torch.triu(torch.ones(L_, S, dtype=torch.bool), 2)
                am_f = data((N * H, L_, S), dt, lo=-2, hi=0)
                am2f = data((L_, S), dt, lo=-2, hi=0)
                ups = {}

                def up(t):
                    if id(t) not in ups:
                        ups[id(t)] = upload(t)
                    return ups[id(t)]
                masks = [("none", None, None), ("kpm", kpm, None), ("float kpm", kpf, None),
                         ("bool attn", None, am_b), ("float3d attn+kpm", kpm, am_f),
                         ("float2d attn", None, am2f), ("bool attn+float kpm", kpf, am_b)]
                for mname, tk, ta in masks:
                    ck = up(tk) if tk is not None else None
                    ca = up(ta) if ta is not None else None
                    for need, avg in ((1, 1), (1, 0), (0, 0)):
                        def tf(q, k, v, tk=tk, ta=ta, need=need, avg=avg, wi=0):
                            return tm(q, k, v, key_padding_mask=tk, attn_mask=ta,
                                      need_weights=bool(need),
                                      average_attn_weights=bool(avg))[wi]
                        check("%s %s need=%d avg=%d out" % (tag, mname, need, avg), tf,
                              _mha_c(m, False, ck, ca, need, avg, False), [q, k, v], tol="mm")
                        if need:
                            check("%s %s avg=%d weights" % (tag, mname, avg),
                                  lambda q, k, v, tf=tf: tf(q, k, v, wi=1),
                                  _mha_c(m, False, ck, ca, 1, avg, True), [q, k, v], tol="mm")
                # unbatched, with a [S] padding mask and a [H, L, S] float mask
                uq, uk, uv = data((L_, E), dt), data((S, Ek), dt), data((S, Ev), dt)
                uam = data((H, L_, S), dt, lo=-2, hi=0)
                for need in (0, 1):
                    check("%s unbatched need=%d" % (tag, need),
                          lambda q, k, v, need=need: tm(q, k, v, key_padding_mask=kpm[0],
                                                        attn_mask=uam,
                                                        need_weights=bool(need))[0],
                          _mha_c(m, False, up(kpm[0].contiguous()), up(uam), need, 1, False),
                          [uq, uk, uv], tol="mm")
                # a key of the wrong size is refused as torch refuses it
                if kd is not None and kd != E:
                    check("%s key of embed_dim (refused)" % tag,
                          lambda q, v: tm(q, q, v)[0],
                          lambda pq, pv, o: L.clt_multihead_attention(
                              m, pq, pq, pv, None, None, 0, 0, o, None), [q, v])
                # gradients: loss = sum(out * w1) + sum(weights * w2), with a
                # float attn_mask and a bool padding mask (rows not all hidden)
                kp2 = kpm.clone()
                kp2[2, :] = False
                kp2[2, 1] = True
                am_g = am_f.clone()
                for avg in (1, 0):
                    tm.zero_grad()
                    tq, tk_, tv, ta = [t.clone().requires_grad_(True) for t in (q, k, v, am_g)]
                    o_, w_ = tm(tq, tk_, tv, key_padding_mask=kp2, attn_mask=ta,
                                average_attn_weights=bool(avg))
                    w1, w2 = data(tuple(o_.shape), dt, lo=-1, hi=1), \
                        data(tuple(w_.shape), dt, lo=-1, hi=1)
                    ((o_ * w1).sum() + (w_ * w2).sum()).backward()
                    cm = make(dt, kd, vd, bkv, za, bias, bf, tm)[1]
                    if cm is None:
                        continue
                    keep = []
                    try:
                        hs = [upload(t) for t in (q, k, v, am_g)]
                        keep += hs
                        for h in hs:
                            L.clt_set_requires_grad(h, 1)
                        hk, hw1, hw2 = upload(kp2), upload(w1), upload(w2)
                        keep += [hk, hw1, hw2]
                        co, cw = P(), P()
                        if L.clt_multihead_attention(cm, hs[0], hs[1], hs[2], hk, hs[3], 1, avg,
                                                     C.byref(co), C.byref(cw)):
                            fail(tag + " grad forward", L.clt_last_error().decode())
                            continue
                        keep += [co, cw]
                        t1, t2, s1, s2, loss = P(), P(), P(), P(), P()
                        if (L.clt_mul(co, hw1, C.byref(t1)) or L.clt_sum(t1, C.byref(s1)) or
                                L.clt_mul(cw, hw2, C.byref(t2)) or L.clt_sum(t2, C.byref(s2)) or
                                L.clt_add(s1, s2, C.byref(loss)) or
                                L.clt_backward(loss, None, 0)):
                            fail(tag + " backward", L.clt_last_error().decode())
                            continue
                        keep += [t1, t2, s1, s2, loss]
                        named = [("query", hs[0], tq), ("key", hs[1], tk_), ("value", hs[2], tv),
                                 ("attn_mask", hs[3], ta)]
                        cps = _named_params(cm)
                        tps = list(tm.named_parameters())
                        ok(tag + " parameter names", [a for a, _ in cps] == [a for a, _ in tps],
                           "%r / torch %r" % ([a for a, _ in cps], [a for a, _ in tps]))
                        named += [(n_, h, tp) for (n_, h), (_, tp) in zip(cps, tps)]
                        for n_, h, tt in named:
                            g = P()
                            gname = "%s avg=%d grad %s" % (tag, avg, n_)
                            if not h or L.clt_grad(h, C.byref(g)) or not g.value:
                                fail(gname, "no gradient: %s" % L.clt_last_error().decode())
                                continue
                            keep.append(g)
                            got = download(g)[0]
                            if got.shape != tuple(tt.grad.shape):
                                fail(gname, "shape %s, torch %s" % (got.shape,
                                                                    tuple(tt.grad.shape)))
                            elif compare_values(gname, tt.grad, got, "mm", False) is True:
                                ok(gname, True)
                    finally:
                        for t in keep:
                            L.clt_tensor_free(t)
                        L.clt_module_free(cm)
                # the state back to torch, strictly
                p2 = os.path.join(d, "back.pt")
                if L.clt_module_save_torch(m, p2.encode()):
                    fail(tag + " save_torch", L.clt_last_error().decode())
                else:
                    t2 = nn.MultiheadAttention(E, H, bias=bool(bias), add_bias_kv=bool(bkv),
                                               add_zero_attn=bool(za), kdim=kd, vdim=vd,
                                               batch_first=bool(bf)).to(dt)
                    try:
                        t2.load_state_dict(torch.load(p2), strict=True)
                        a, b = tm.state_dict(), t2.state_dict()
                        ok(tag + " state round trip",
                           list(a) == list(b) and all(torch.equal(a[x], b[x]) for x in a),
                           "state differs after clt_module_save_torch")
                    except Exception as e:
                        fail(tag + " state round trip", repr(e))
                for t in ups.values():
                    L.clt_tensor_free(t)
                L.clt_module_free(m)
    import shutil
    shutil.rmtree(d, True)


def clip_grad_norm_f32():
    """torch.nn.utils.clip_grad_norm_ on float32 parameters, the scaled
    gradients compared bit for bit.  torch takes each gradient's norm in
    float32 and the coefficient max_norm * reciprocal(norm + 1e-6) in
    float32; cltensor sums in float64 (no overflow past 1.8e19, optim.h)
    and makes the coefficient as torch does from that norm rounded to
    float32: the gradients are torch's bits wherever the two norms round
    alike (always for norm_type inf, whose norm is exact), and within a few
    float32 ulps of them elsewhere."""
    proto("clt_set_requires_grad", [P, C.c_int])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_grad", [P, PP])
    proto("clt_mul", [P, P, PP])
    proto("clt_sum", [P, PP])
    proto("clt_tensor_free", [P], None)
    proto("clt_clip_grad_norm", [PP, C.c_size_t, C.c_double, C.c_double, PP])
    gen = torch.Generator().manual_seed(5)
    shapes = [(7, 5), (13,), (3, 4, 6), (1,), (300,)]
    same_norm = 0
    for nt in (2.0, 1.0, float("inf"), 0.5, 3.0):
        for scale, max_norm in ((1.0, 0.7), (100.0, 1.0), (1.0, 1e3), (1e-3, 1e-4)):
            for rep in range(3):
                name = "clip_grad_norm f32 norm_type %g grads x%g max_norm %g #%d" % (
                    nt, scale, max_norm, rep)
                gs = [torch.randn(sh, generator=gen) * scale for sh in shapes]
                tps = [torch.zeros(sh, requires_grad=True) for sh in shapes]
                for p_, g_ in zip(tps, gs):
                    p_.grad = g_.clone()
                tn = torch.nn.utils.clip_grad_norm_(tps, max_norm, nt)
                keep, cps = [], []
                for sh, g_ in zip(shapes, gs):  # the gradient of sum(p * g) is g exactly
                    p_, prod, loss, cg = upload(torch.zeros(sh)), P(), P(), upload(g_)
                    keep += [p_, cg]
                    L.clt_set_requires_grad(p_, 1)
                    assert L.clt_mul(p_, cg, C.byref(prod)) == 0
                    assert L.clt_sum(prod, C.byref(loss)) == 0
                    assert L.clt_backward(loss, None, 0) == 0
                    keep += [prod, loss]
                    cps.append(p_)
                cn = P()
                st = L.clt_clip_grad_norm((P * len(cps))(*cps), len(cps), max_norm, nt,
                                          C.byref(cn))
                if st != 0:
                    fail(name, L.clt_last_error().decode())
                    continue
                keep.append(cn)
                norm = download(cn)[0]
                norm_bits = norm.dtype == np.float32 and norm.view(np.uint32) == \
                    tn.numpy().view(np.uint32)
                same_norm += bool(norm_bits)
                bits, rel = True, 0.0
                for p_, tp in zip(cps, tps):
                    g = P()
                    assert L.clt_grad(p_, C.byref(g)) == 0
                    got, want = download(g)[0], tp.grad.numpy()
                    L.clt_tensor_free(g)
                    bits = bits and np.array_equal(got.view(np.uint32), want.view(np.uint32))
                    rel = max(rel, float(np.max(np.abs(got.astype(np.float64) - want) /
                                                np.abs(want))))
                if nt == float("inf") or norm_bits:
                    ok(name, norm_bits and bits, "norm %r (torch %r), gradients %s" % (
                        float(norm), float(tn), "equal" if bits else "differ in their bits"))
                else:
                    ok(name, rel < 2e-6, "norm %r (torch %r): gradients off by %g relative" % (
                        float(norm), float(tn), rel))
                for t in keep:
                    L.clt_tensor_free(t)
    # the float32 norms agree bit for bit in most norm_type 2 cases (the
    # rest differ in their last bit), rarely for 1, 0.5 and 3
    ok("clip_grad_norm f32: norms that agree bit for bit", same_norm >= 20,
       "%d of 60" % same_norm)


def grid_identity():
    """affine_grid of an identity theta (a spatial transformer's first
    transform) bit for bit, torch's CPU linspace included, and grid_sample
    at those pixel centres bit for bit, its CPU kernel's fused rounding."""
    F = torch.nn.functional
    proto("clt_grid_sample", [P, P, C.c_int, C.c_int, C.c_int, PP])
    proto("clt_affine_grid", [P, C.c_int, I64P, C.c_int, PP])
    for dt in FLOATS:
        for H, W in ((1, 28), (5, 7), (16, 16), (28, 28), (3, 100), (33, 12)):
            size = (2, 2, H, W)
            th = torch.eye(2, 3, dtype=dt).repeat(2, 1, 1)
            for align in (False, True):
                check("grid_identity affine_grid %s %s align=%s" % (dn(dt), list(size), align),
                      lambda t, size=size, align=align:
                      F.affine_grid(t, size, align_corners=align),
                      lambda t, r, size=size, align=align:
                      L.clt_affine_grid(t, 4, _i64s(*size), int(align), r), [th], tol="exact")
                grid = F.affine_grid(th, size, align_corners=align)
                for pad in (0, 1, 2):
                    pname = ("zeros", "border", "reflection")[pad]
                    check("grid_identity grid_sample %s %s %s align=%s"
                          % (dn(dt), list(size), pname, align),
                          lambda x, g, align=align, pname=pname:
                          F.grid_sample(x, g, padding_mode=pname, align_corners=align),
                          lambda x, g, r, align=align, pad=pad:
                          L.clt_grid_sample(x, g, 0, pad, int(align), r),
                          [data(size, dt), grid], tol="exact")


# ---- custom modules of several inputs and outputs ---------------------------------

_MULTI_FWD = C.CFUNCTYPE(C.c_int, P, P, C.POINTER(P), C.c_size_t, C.POINTER(P), C.c_size_t)


def custom_multi():
    """Custom modules whose forward takes (input, hidden) and gives (output,
    hidden) (clt_module_custom_multi, run by clt_module_forward_multi),
    loaded from torch.save's file of the tutorials' modules
    (clt_module_load_torch, strict): the char-RNN classifier's RNN (cat,
    i2h, i2o, LogSoftmax) and the char-RNN generator's Embedding -> GRU ->
    Linear, whose GRU runs through clt_module_forward_multi too; looped over
    a sequence, each step's output, the last hidden state, and the
    gradients of every parameter and of the first hidden state of
    sum(outputs * w) + sum(h * wh) compared with torch's."""
    import tempfile
    proto("clt_module_custom_multi", [C.c_char_p, _MULTI_FWD, C.c_size_t, C.c_size_t, P, P,
                                      PP])
    proto("clt_module_forward_multi", [P, C.POINTER(P), C.c_size_t, C.POINTER(P), C.c_size_t])
    proto("clt_module_forward", [P, P, PP])
    proto("clt_module_add_module", [P, C.c_char_p, P])
    proto("clt_module_child", [P, C.c_char_p], P)
    proto("clt_module_free", [P], None)
    proto("clt_module_load_torch", [P, C.c_char_p, C.c_int])
    proto("clt_module_named_parameters", [P, C.POINTER(C.POINTER(Named)),
                                          C.POINTER(C.c_size_t)])
    proto("clt_free", [P], None)
    proto("clt_linear", [P, C.c_int64, C.c_int64, C.c_int, P, PP])
    proto("clt_log_softmax_layer", [C.c_int, PP])
    proto("clt_embedding_layer", [P, C.c_int64, C.c_int64, P, PP])
    proto("clt_gru_layer", [P, C.POINTER(RnnOpts), P, PP])
    proto("clt_cat", [C.POINTER(P), C.c_size_t, C.c_int, PP])
    proto("clt_unsqueeze", [P, C.c_int, PP])
    proto("clt_squeeze", [P, C.c_int, PP])
    proto("clt_backward", [P, P, C.c_int])
    proto("clt_grad", [P, PP])
    proto("clt_mul", [P, P, PP])
    proto("clt_sum", [P, PP])
    proto("clt_add", [P, P, PP])
    proto("clt_set_requires_grad", [P, C.c_int])
    I, H, O, B, T, V = 3, 6, 5, 2, 4, 7

    class RNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.i2h = torch.nn.Linear(I + H, H)
            self.i2o = torch.nn.Linear(I + H, O)
            self.softmax = torch.nn.LogSoftmax(dim=1)

        def forward(self, input, hidden):
            combined = torch.cat((input, hidden), 1)
            hidden = self.i2h(combined)
            output = self.softmax(self.i2o(combined))
            return output, hidden

    class CharRNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.Embedding(V, H)
            self.gru = torch.nn.GRU(H, H, 1)
            self.decoder = torch.nn.Linear(H, V)

        def forward(self, input, hidden):
            output, hidden = self.gru(self.encoder(input).unsqueeze(0), hidden)
            return self.decoder(output.squeeze(0)), hidden

    def call(st, made, tag):
        if st:
            raise RuntimeError("%s: %s" % (tag, L.clt_last_error().decode()))

    def rnn_forward(m, user, ins, n_in, outs, n_out):
        comb, o = P(), P()
        try:
            pair = (P * 2)(ins[0], ins[1])
            st = L.clt_cat(pair, 2, 1, C.byref(comb))
            st = st or L.clt_module_forward(L.clt_module_child(m, b"i2o"), comb, C.byref(o))
            if not st:
                r = P()
                st = L.clt_module_forward(L.clt_module_child(m, b"softmax"), o, C.byref(r))
                outs[0] = r.value
            if not st:
                r = P()
                st = L.clt_module_forward(L.clt_module_child(m, b"i2h"), comb, C.byref(r))
                outs[1] = r.value
            return st
        finally:
            L.clt_tensor_free(comb)
            L.clt_tensor_free(o)

    def gen_forward(m, user, ins, n_in, outs, n_out):
        e, e3, y = P(), P(), P()
        res = (P * 2)()
        try:
            st = L.clt_module_forward(L.clt_module_child(m, b"encoder"), ins[0], C.byref(e))
            st = st or L.clt_unsqueeze(e, 0, C.byref(e3))
            args = (P * 2)(e3, ins[1])
            st = st or L.clt_module_forward_multi(L.clt_module_child(m, b"gru"), args, 2, res, 2)
            st = st or L.clt_squeeze(res[0], 0, C.byref(y))
            if not st:
                r = P()
                st = L.clt_module_forward(L.clt_module_child(m, b"decoder"), y, C.byref(r))
                outs[0] = r.value
                outs[1] = res[1]
                res[1] = None
            return st
        finally:
            for t in (e, e3, y, P(res[0]), P(res[1])):
                L.clt_tensor_free(t)

    cb_rnn, cb_gen = _MULTI_FWD(rnn_forward), _MULTI_FWD(gen_forward)

    def build_rnn(m):
        call(L.clt_module_custom_multi(b"RNN", cb_rnn, 2, 2, None, None, C.byref(m)), 0, "custom")
        for name, i, o in ((b"i2h", I + H, H), (b"i2o", I + H, O)):
            q = P()
            call(L.clt_linear(DEV, i, o, 1, None, C.byref(q)), 0, "linear")
            call(L.clt_module_add_module(m, name, q), 0, "add")
        q = P()
        call(L.clt_log_softmax_layer(1, C.byref(q)), 0, "log_softmax")
        call(L.clt_module_add_module(m, b"softmax", q), 0, "add")

    def build_gen(m):
        call(L.clt_module_custom_multi(b"CharRNN", cb_gen, 2, 2, None, None, C.byref(m)), 0,
             "custom")
        q = P()
        call(L.clt_embedding_layer(DEV, V, H, None, C.byref(q)), 0, "embedding")
        call(L.clt_module_add_module(m, b"encoder", q), 0, "add")
        q = P()
        o = RnnOpts(H, H, 1, 1, 0, 0.0, 0, 0)
        call(L.clt_gru_layer(DEV, C.byref(o), None, C.byref(q)), 0, "gru")
        call(L.clt_module_add_module(m, b"gru", q), 0, "add")
        q = P()
        call(L.clt_linear(DEV, H, V, 1, None, C.byref(q)), 0, "linear")
        call(L.clt_module_add_module(m, b"decoder", q), 0, "add")

    torch.manual_seed(21)
    cases = [("char-RNN classifier", RNN, build_rnn,
              [data((B, I), torch.float32, lo=-1, hi=1) for _ in range(T)],
              data((B, H), torch.float32, lo=-1, hi=1)),
             ("char-RNN generator", CharRNN, build_gen,
              [torch.randint(0, V, (B,)) for _ in range(T)],
              data((1, B, H), torch.float32, lo=-1, hi=1))]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.pt")
        for name, tcls, build, xs, h0 in cases:
            tm = tcls()
            torch.save(tm.state_dict(), path)
            m, keep = P(), []
            try:
                build(m)
                call(L.clt_module_load_torch(m, path.encode(), 1), 0, "load")
                names = [n for n, _ in _named_params(m)]
                want = [n for n, _ in tm.named_parameters()]
                ok(name + " names", names == want, "cltensor %s, torch %s" % (names, want))
                th = h0.clone().requires_grad_()
                h, touts = th, []
                for x in xs:
                    y, h = tm(x, h)
                    touts.append(y)
                ws = [data(tuple(y.shape), torch.float32, lo=-1, hi=1) for y in touts]
                wh = data(tuple(h.shape), torch.float32, lo=-1, hi=1)
                (sum((y * w).sum() for y, w in zip(touts, ws)) + (h * wh).sum()).backward()
                ph = upload(h0)
                keep.append(ph)
                call(L.clt_set_requires_grad(ph, 1), 0, "requires_grad")
                ch, couts = ph, []
                for t, x in enumerate(xs):
                    px = upload(x)
                    keep.append(px)
                    res = (P * 2)(1, 1)
                    args = (P * 2)(px, ch)
                    call(L.clt_module_forward_multi(m, args, 2, res, 2), 0, "step %d" % t)
                    keep += [res[0], res[1]]
                    couts.append(res[0])
                    ch = res[1]
                good = True
                for t, (y, q) in enumerate(zip(touts, couts)):
                    got, shape, _ = download(q)
                    if shape != tuple(y.shape) or not np.allclose(got, y.detach().numpy(), 1e-4,
                                                                  1e-5):
                        good = False
                        fail("%s step %d output" % (name, t), "shape %s / %s, max diff %s" % (
                            shape, tuple(y.shape), np.abs(got - y.detach().numpy()).max()
                            if shape == tuple(y.shape) else "-"))
                got, shape, _ = download(ch)
                good = good and shape == tuple(h.shape) and np.allclose(
                    got, h.detach().numpy(), 1e-4, 1e-5)
                ok(name + " forward", good, "the last hidden state differs")
                loss = None
                for y, w in list(zip(couts, ws)) + [(ch, wh)]:
                    pw, pr, ps = upload(w), P(), P()
                    keep.append(pw)
                    call(L.clt_mul(y, pw, C.byref(pr)), 0, "mul")
                    call(L.clt_sum(pr, C.byref(ps)), 0, "sum")
                    keep += [pr, ps]
                    if loss is not None:
                        acc = P()
                        call(L.clt_add(loss, ps, C.byref(acc)), 0, "add")
                        keep.append(acc)
                        ps = acc
                    loss = ps
                call(L.clt_backward(loss, None, 0), 0, "backward")
                tps = dict(tm.named_parameters())
                for pn, pt in _named_params(m) + [("hidden", ph)]:
                    gp = P()
                    call(L.clt_grad(pt, C.byref(gp)), 0, "grad")
                    if not gp:
                        fail("%s grad %s" % (name, pn), "no gradient")
                        continue
                    keep.append(gp)
                    g = download(gp)[0]
                    tg = (th.grad if pn == "hidden" else tps[pn].grad).numpy()
                    ok("%s grad %s" % (name, pn), g.shape == tg.shape and
                       np.allclose(g, tg, 1e-4, 1e-5),
                       "max diff %g" % (np.abs(g - tg).max() if g.shape == tg.shape else -1))
            except RuntimeError as e:
                fail(name, str(e))
            finally:
                for q in keep:
                    L.clt_tensor_free(q)
                L.clt_module_free(m)


def main():
    sections = [elementwise, modulo, rounding, mathops, reductions, linalg, pooling, views, stress, chains,
                creation, random, errors, losses, more_reductions, group_norm, layer_norm, norms,
                sorting, attention, rnns, conv_more, conv_layers_state_dict,
                # torch.save's files and .npz
                torch_files,
                linalg2,
                shapeops,
                sdpa,
                decoder,
                scans,
                topk_large,
                index_more,
                activations,
                nn_init,
                reduce_stats,
                more_losses,
                products,
                nn_pool,
                linalg_eig,
                linalg_qr,
                nn_shape,
                special_math,
                calculus,
                covariance,
                histc,
                distributions,
                distributions2,
                dist2,
                amp_swa,
                spatial,
                shapes_more,
                select_view,
                linalg_lu,
                nn_utils,
                nn_prune,
                stft,
                settings, conv3d, pool3d, misc2, cells, fft, half, pool2, special2, eig_general, nn2,
                dist3, linalg3, half2, nn3, grad2, complex2, complex3, complex4, sparse, sparse_csr, sparse_spmm, sparse_bsr, sparse_batched,
                transforms, nnmisc, dist5, quant, lobpcg, half_scalar, complex_pow_scalar, histobs, bfloat16, bfloat16_2, int8, int16, image_dtype,
                embedding_padding, embedding_opts, lobpcg_sparse, half_params, autocast_cpu, nn_init_normal_uniform, module_apply, bn_cumulative,
                mha_opts, clip_grad_norm_f32, grid_identity, custom_multi, sparse_embedding_optim]
    only = os.environ.get("CONFORMANCE_ONLY")
    for s in sections:
        if only and s.__name__ not in only.split(","):
            continue
        s()
    print("%d passed, %d failed" % (PASSED, len(FAILED)))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
