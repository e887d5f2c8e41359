/* elementwise.c: elementwise ops: type promotion, broadcasting, device and
 * dtype checks, and launches of cl/elementwise.cl in the variant that suits
 * the device (vector chunks on CPUs, one element per work-item on GPUs). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- type promotion --------------------------------------------------------- */

/* Result dtype of a binary op; 0-dimensional tensors weigh less, as in
 * PyTorch: they only decide when their category is higher, and a complex
 * one over floating tensors keeps their precision (torch's
 * combine_categories: float32 with a 0-d complex128 is complex64; float16
 * gives complex64, as cltensor has no complex32). */
static clt_dtype result_type_n(int n, const clt_tensor *const *t)
{
    clt_dtype dim = CLT_DTYPE_COUNT, zero = CLT_DTYPE_COUNT;
    for (int i = 0; i < n; i++) {
        clt_dtype *r = t[i]->ndim == 0 ? &zero : &dim;
        *r = *r == CLT_DTYPE_COUNT ? t[i]->dtype : clt_promote_types(*r, t[i]->dtype);
    }
    if (dim == CLT_DTYPE_COUNT)
        return zero;
    if (zero != CLT_DTYPE_COUNT && clt__dtype_category(zero) > clt__dtype_category(dim))
        return clt__dtype_is_complex(zero) && clt__dtype_is_float(dim)
                   ? (dim == CLT_FLOAT64 ? CLT_COMPLEX128 : CLT_COMPLEX64)
                   : zero;
    return dim;
}

static clt_dtype result_type(const clt_tensor *a, const clt_tensor *b)
{
    return result_type_n(2, (const clt_tensor *[]){a, b});
}

clt_status clt_result_type(const clt_tensor *a, const clt_tensor *b, clt_dtype *out)
{
    CLT__REQUIRE_ARG(a, "clt_result_type");
    CLT__REQUIRE_ARG(b, "clt_result_type");
    CLT__REQUIRE_ARG(out, "clt_result_type");
    *out = result_type(a, b);
    return clt__ok();
}

/* A Python number's dtype against a tensor: integral values act as ints. */
static clt_dtype scalar_result_type(clt_dtype t, double s)
{
    bool integral = isfinite(s) && s == floor(s);
    int cs = integral ? 1 : 2;
    if (cs <= clt__dtype_category(t))
        return t;
    return cs == 2 ? CLT_FLOAT32 : CLT_INT64;
}

clt_status clt_result_type_scalar(const clt_tensor *t, double s, clt_dtype *out)
{
    CLT__REQUIRE_ARG(out, "clt_result_type_scalar");
    *out = CLT_DTYPE_COUNT;
    CLT__REQUIRE_ARG(t, "clt_result_type_scalar");
    if (isnan(s) || isinf(s)) /* a Python float all the same */
        *out = clt__dtype_category(t->dtype) == 2 ? t->dtype : CLT_FLOAT32;
    else
        *out = scalar_result_type(t->dtype, s);
    return clt__ok();
}

/* ---- broadcasting ------------------------------------------------------------ */

clt_status clt__broadcast_shapes(int na, const int64_t *sa, int nb, const int64_t *sb, int *nout,
                                 int64_t *out, const char *fn)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char s1[160], s2[160];
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: the size of tensor a (%lld) must match the size of tensor b "
                              "(%lld) at non-singleton dimension %d: shapes %s and %s do not "
                              "broadcast",
                              fn, (long long)da, (long long)db, i,
                              clt__shape_str(s1, sizeof s1, na, sa),
                              clt__shape_str(s2, sizeof s2, nb, sb));
        }
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return CLT_OK;
}

static bool same_shape(const clt_tensor *t, int n, const int64_t *shape)
{
    if (t->ndim != n)
        return false;
    for (int i = 0; i < n; i++)
        if (t->shape[i] != shape[i])
            return false;
    return true;
}

/* ---- launching ---------------------------------------------------------------- */

/* Program groups of cl/elementwise.cl: each program holds one group so that
 * a build compiles only the kernels that can serve the call. */
typedef enum group { G_BIN, G_CMP, G_UN, G_GRAD, G_COUNT } group;

const char *clt__elementwise_options(int g, clt_dtype t)
{
    static const char *defs[G_COUNT] = {" -DEW_BIN", " -DEW_CMP", " -DEW_UN", " -DEW_GRAD"};
    static clt__opts_slot slots[G_COUNT][CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[g][t], "T", t, "O", g == G_CMP ? CLT_BOOL : t, defs[g]);
}

clt_status clt__elementwise_warmup(clt_device *dev, clt_dtype t, size_t *count)
{
    clt_status st = CLT_OK;
    for (int g = 0; g < G_COUNT && st == CLT_OK; g++) {
        const char *opts = clt__elementwise_options(g, t);
        st = opts ? clt__program_warm(dev, "elementwise", opts, true, count)
                  : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_warmup: out of host memory");
    }
    return st;
}

/* How a launch covers n elements.  GPUs: one element per work-item, 's'
 * strided or 'c' contiguous.  CPUs: one chunk of `chunk` elements per
 * work-item in work-groups of one, 't' strided or 'k' contiguous, so that
 * PoCL runs straight (vector) loops instead of looping over work-items. */
typedef struct geom {
    char variant;
    size_t gws, lws;
    cl_ulong n, chunk; /* elements in all, and per work-item */
} geom;

static geom geometry(const clt_device *dev, bool contig, int64_t n)
{
    geom g = {contig ? 'c' : 's', (size_t)n, 0, (cl_ulong)n, clt__chunk_size(dev, n)};
    if (g.chunk == 0) {
        g.chunk = 1;
        return g;
    }
    g.variant = contig ? 'k' : 't';
    g.gws = (size_t)(((uint64_t)n + g.chunk - 1) / g.chunk);
    g.lws = 1;
    return g;
}

/* Launches op's kernel of variant g->variant with the kernel's own
 * arguments `args` (buffers and scalars) followed by what every elementwise
 * kernel ends with: (count, chunk, layout) for the strided variants, or one
 * clt__offsets with the count, the chunk and the layout's offsets for the
 * contiguous ones ('c', 'k'). */
static clt_status launch(clt_device *dev, group grp, clt_dtype t, const char *op,
                         const char *form, const geom *g, const clt__layout *L, size_t nargs,
                         const clt__arg *args, const char *fn)
{
    const char *opts = clt__elementwise_options(grp, t);
    if (opts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "elementwise %s: out of host memory", op);
    char kname[48];
    size_t lo = strlen(op), lf = strlen(form);
    if (lo + lf + 3 > sizeof kname)
        return clt__error(CLT_ERR_INTERNAL, "elementwise: kernel name too long: %s", op);
    memcpy(kname, op, lo);
    memcpy(kname + lo, form, lf);
    kname[lo + lf] = '_';
    kname[lo + lf + 1] = g->variant;
    kname[lo + lf + 2] = '\0';
    clt__arg a[16];
    if (nargs + 3 > sizeof a / sizeof a[0])
        return clt__error(CLT_ERR_INTERNAL, "elementwise %s: %zu arguments", op, nargs);
    memcpy(a, args, nargs * sizeof *a);
    clt__offsets offs = {g->n, g->chunk, L->off0, L->off1, L->off2};
    if (g->variant == 'c' || g->variant == 'k') {
        a[nargs++] = (clt__arg){sizeof offs, &offs};
    } else {
        a[nargs++] = (clt__arg){sizeof g->n, &g->n};
        a[nargs++] = (clt__arg){sizeof g->chunk, &g->chunk};
        a[nargs++] = (clt__arg){sizeof *L, L};
    }
    clt_status st = clt__launch(dev, "elementwise", opts, kname, 1, &g->gws,
                                g->lws ? &g->lws : NULL, nargs, a);
    return st == CLT_OK ? st : clt__error_in(st, fn);
}

/* A 0-d layout is given one dimension of size 1 (strides 0), which the
 * chunked strided kernels need and the others do not mind. */
static void layout_init(clt__layout *L, int n, const int64_t *shape)
{
    memset(L, 0, sizeof *L);
    L->ndim = n > 0 ? n : 1;
    L->shape[0] = 1;
    if (n > 0)
        memcpy(L->shape, shape, sizeof(int64_t) * (size_t)n);
}

/* The layout of a launch that writes r (new, contiguous) from nin <= 3
 * inputs broadcast to r's shape, and its geometry: the contiguous variants
 * when every input has r's shape and is contiguous, else the strided ones
 * with each input's broadcast strides. */
static geom layout_inputs(const clt_tensor *r, int nin, const clt_tensor *const *in,
                          clt__layout *L)
{
    int64_t *offs[3] = {&L->off0, &L->off1, &L->off2};
    int64_t *strides[3] = {L->s0, L->s1, L->s2};
    layout_init(L, r->ndim, r->shape);
    bool contig = true;
    for (int i = 0; i < nin; i++) {
        *offs[i] = in[i]->offset;
        contig = contig && same_shape(in[i], r->ndim, r->shape) && clt__is_contiguous(in[i]);
    }
    if (!contig)
        for (int i = 0; i < nin; i++)
            clt__broadcast_strides(in[i], r->ndim, r->shape, strides[i]);
    return geometry(r->dev, contig, r->numel);
}

/* t itself when it already has dtype dt, else a contiguous converted copy in
 * *tmp (released by the caller). */
static clt_status as_dtype(const clt_tensor *t, clt_dtype dt, clt_tensor **tmp,
                           const clt_tensor **use, const char *fn)
{
    *use = t;
    if (t->dtype == dt)
        return CLT_OK;
    clt_status st = clt__contiguous_as(fn, t, dt, tmp);
    if (st == CLT_OK)
        *use = *tmp;
    return st;
}

/* MODULO: remainder, fmod, floor_divide and trunc_divide, whose integer forms check
 * their divisors (see modulo_errors).  FLOATING: float functions of two
 * operands (atan2), integer and bool computed in float32 as TRUE_DIV;
 * FLOAT_ONLY2 refuses them (hypot); SAME_FLOAT wants one floating dtype
 * for every operand (lerp).  INTEGRAL takes integer operands only (gcd,
 * the shifts), BITWISE integer or bool ones, SAME_DTYPE any one dtype for
 * both (heaviside); CLOSE is isclose (bool result, its scalars in float32
 * for integer operands). */
typedef enum op_kind {
    ARITH, TRUE_DIV, NO_BOOL_SUB, POW, COMPARE, EXTREMUM, GRAD, MODULO, FLOATING, FLOAT_ONLY2,
    SAME_FLOAT, INTEGRAL, BITWISE, SAME_DTYPE, CLOSE
} op_kind;

static clt_dtype compute_dtype(op_kind kind, clt_dtype promoted)
{
    if ((kind == TRUE_DIV || kind == FLOATING) && !clt__dtype_is_float(promoted))
        return CLT_FLOAT32;
    return promoted;
}

/* The refusals of FLOAT_ONLY2 and SAME_FLOAT, as PyTorch's "hypot_cpu" not
 * implemented for 'Int' and lerp's "expected dtype float for `end` but got
 * dtype double"; n operands t named by names. */
static clt_status float_operands_check(op_kind kind, int n, const clt_tensor *const *t,
                                       const char *const *names, clt_dtype ct, const char *fn)
{
    if (kind == SAME_FLOAT)
        for (int i = 1; i < n; i++)
            if (t[i]->dtype != t[0]->dtype)
                return clt__error(CLT_ERR_DTYPE_MISMATCH,
                                  "%s: expected dtype %s for '%s' but got dtype %s (every "
                                  "operand must have %s's dtype)",
                                  fn, clt_dtype_name(t[0]->dtype), names[i],
                                  clt_dtype_name(t[i]->dtype), names[0]);
    if ((kind == SAME_FLOAT || kind == FLOAT_ONLY2) && !clt__dtype_is_float(ct))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: not implemented for %s tensors; it needs a floating-point "
                          "dtype (convert with clt_to_dtype)",
                          fn, clt_dtype_name(ct));
    return CLT_OK;
}

/* The refusals of INTEGRAL, BITWISE, SAME_DTYPE and CLOSE, as PyTorch's
 * "gcd_cpu" not implemented for 'Float', "heaviside is not yet implemented
 * for tensors with different dtypes" and isclose's "Long did not match
 * Float". */
static clt_status integral_operands_check(op_kind kind, const clt_tensor *a, const clt_tensor *b,
                                          clt_dtype ct, const char *op, const char *fn)
{
    if ((kind == SAME_DTYPE || kind == CLOSE) && a->dtype != b->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: %s is not implemented for tensors with different dtypes (%s "
                          "and %s), as in PyTorch; convert one to the other's dtype first",
                          fn, op, clt_dtype_name(a->dtype), clt_dtype_name(b->dtype));
    if ((kind == INTEGRAL && (clt__dtype_is_float(ct) || ct == CLT_BOOL)) ||
        (kind == BITWISE && clt__dtype_is_float(ct)))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: %s is not implemented for %s tensors, as in PyTorch; it needs "
                          "%s operands",
                          fn, op, clt_dtype_name(ct),
                          kind == INTEGRAL ? "integer" : "integer or bool");
    return CLT_OK;
}

static clt_status bool_sub_error(const char *fn)
{
    return clt__error(CLT_ERR_DTYPE_MISMATCH,
                      "%s: subtraction, the '-' operator, with a bool tensor is not "
                      "supported; to invert a mask use clt_logical_not",
                      fn);
}

/* remainder, fmod and floor_divide refuse two bool operands, as PyTorch's
 * "remainder_cpu" not implemented for 'Bool'. */
static clt_status bool_modulo_error(const char *op, const char *fn)
{
    if (strcmp(op, "trunc_divide") == 0)
        op = "division with rounding mode trunc";
    return clt__error(CLT_ERR_DTYPE_MISMATCH,
                      "%s: %s is not implemented for bool tensors; convert one operand with "
                      "clt_to_dtype first",
                      fn, op);
}

/* An integer remainder, fmod or floor_divide of a tensor by a tensor: the
 * kernel records a zero divisor in the calling thread's error record on
 * the device (*err, borrowed), under the code *code, and the thread's next
 * synchronisation there reports it as CLT_ERR_ZERO_DIVISION (as an index
 * out of range is reported).  Nothing for floating types, which divide by
 * zero as IEEE does. */
static clt_status modulo_errors(clt_device *dev, clt_dtype ct, const char *op, const char *fn,
                                cl_mem *err, cl_int *code)
{
    *err = NULL;
    *code = strcmp(fn, "clt_div_rounding") == 0 ? CLT__IDX_DIV_ROUNDING
          : strcmp(op, "remainder") == 0        ? CLT__IDX_REMAINDER
          : strcmp(op, "fmod") == 0             ? CLT__IDX_FMOD
                                                : CLT__IDX_FLOOR_DIVIDE;
    return clt__dtype_is_float(ct) ? CLT_OK : clt__index_errors(dev, err);
}

/* Whether the result of shape (n, shape) and dtype dt may be written into
 * `into` directly: a contiguous tensor at offset 0 of that shape and dtype. */
static bool usable_into(const clt_tensor *into, clt_dtype dt, int n, const int64_t *shape)
{
    return into && into->dtype == dt && into->offset == 0 && same_shape(into, n, shape) &&
           clt__is_contiguous(into);
}

/* s as a float16 or bfloat16 tensor holds it.  PyTorch's CPU kernels cast
 * a Python scalar to the tensor's 16-bit dtype (through float, as
 * c10::Half's constructor takes one) and then compute in float32:
 * half(0.1) + 0.1 is exactly 2 * half(0.1), and half(0.1) == 0.1 is true. */
static double half_scalar(clt_dtype dt, double s)
{
    unsigned char h[2];
    clt__element_from_double(dt, (double)(float)s, h);
    return clt__element_to_double(dt, h);
}

/* Which scalars of kernel op (bit k: sc[k]) torch 1.13's CPU kernels take
 * in a 16-bit tensor's own dtype (Scalar::to<scalar_t>), so that they
 * round to it before use: add's and sub's alpha, threshold's threshold
 * and value, hardshrink's lambda, and the backward kernels of the last
 * two.  The others (leaky_relu's slope, elu's and celu's alpha, hardtanh's
 * and clamp's bounds, softplus's beta and threshold, softshrink's lambda,
 * addcmul's and addcdiv's value, lerp's weight, nan_to_num's values) it
 * takes as float: they stay as given (conformance section half_params). */
static unsigned half_rounded_scalars(const char *op)
{
    static const struct {
        const char *op;
        unsigned mask;
    } rounded[] = {{"axpy", 1}, {"threshold", 3}, {"threshold_bw", 1},
                   {"hardshrink", 1}, {"hardshrink_bw", 1}};
    for (size_t i = 0; i < sizeof rounded / sizeof rounded[0]; i++)
        if (strcmp(op, rounded[i].op) == 0)
            return rounded[i].mask;
    return 0;
}

/* The kernel arguments args[0..nsc) of kernel op's scalars sc[0..nsc) in
 * dtype ct, their bytes in sv; those torch rounds to a 16-bit ct rounded. */
static void scalar_args(const char *op, clt_dtype ct, int nsc, const double *sc,
                        unsigned char (*sv)[8], clt__arg *args)
{
    unsigned mask = clt__dtype_is_half(ct) ? half_rounded_scalars(op) : 0;
    for (int k = 0; k < nsc; k++) {
        double v = mask & 1u << k ? half_scalar(ct, sc[k]) : sc[k];
        args[k] = (clt__arg){clt__scalar_arg(ct, v, sv[k]), sv[k]};
    }
}

/* a op b; the kernels that take scalars after a and b (axpy's alpha,
 * softplus_bw's beta and threshold) get the nsc <= 3 of sc, in the compute
 * dtype.  With `into` usable (see usable_into) the result goes there and
 * *out is NULL; otherwise *out is a new tensor. */
static clt_status binary_tt(const char *op, op_kind kind, const clt_tensor *a,
                            const clt_tensor *b, int nsc, const double *sc, clt_tensor *into,
                            clt_tensor **out, const char *fn);

/* eq (ne: any part differs) of operands of which one at least is complex:
 * their real views, as the complex result type ct, compared pair by pair. */
static clt_status complex_eq(const clt_tensor *a, const clt_tensor *b, clt_dtype ct, bool ne,
                             clt_tensor **out, const char *fn)
{
    clt_tensor *ca = NULL, *cb = NULL, *ra = NULL, *rb = NULL, *e = NULL;
    clt_status st;
    CLT__TRY(clt__complex_dense(fn, a, ct, &ca));
    CLT__TRY(clt__complex_dense(fn, b, ct, &cb));
    CLT__TRY(clt__view_as_real(ca, &ra, fn));
    CLT__TRY(clt__view_as_real(cb, &rb, fn));
    CLT__TRY(binary_tt(ne ? "ne" : "eq", COMPARE, ra, rb, 0, NULL, NULL, &e, fn));
    CLT__TRY(ne ? clt__any_dim(e, -1, 0, out, fn) : clt__all_dim(e, -1, 0, out, fn));
done:
    clt_tensor_free(ca);
    clt_tensor_free(cb);
    clt_tensor_free(ra);
    clt_tensor_free(rb);
    clt_tensor_free(e);
    return st == CLT_OK ? clt__ok() : st;
}

/* isnan, isinf (any part) and isfinite (both parts) of a complex a, and
 * its negation: on its real view. */
static clt_status complex_unary(const char *op, const clt_tensor *a, clt_tensor **out,
                                const char *fn);

static bool is_op(const char *op, const char *name)
{
    return strcmp(op, name) == 0;
}

static clt_status binary_tt(const char *op, op_kind kind, const clt_tensor *a,
                            const clt_tensor *b, int nsc, const double *sc, clt_tensor *into,
                            clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = clt__same_device(a, b, fn);
    if (st != CLT_OK)
        return st;
    int n = 0;
    int64_t shape[CLT_MAX_DIMS];
    st = clt__broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &n, shape, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype ct = compute_dtype(kind, result_type(a, b));
    if (kind == COMPARE && into == NULL && clt__dtype_is_complex(ct) &&
        (is_op(op, "eq") || is_op(op, "ne"))) {
        st = clt__check_dtype(a->dev, ct, fn);
        return st == CLT_OK ? complex_eq(a, b, ct, is_op(op, "ne"), out, fn) : st;
    }
    if (kind == NO_BOOL_SUB && (a->dtype == CLT_BOOL || b->dtype == CLT_BOOL))
        return bool_sub_error(fn);
    if (kind == POW && ct == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: pow is not implemented for bool tensors; convert one operand "
                          "with clt_to_dtype first",
                          fn);
    if (kind == MODULO && ct == CLT_BOOL)
        return bool_modulo_error(op, fn);
    st = float_operands_check(kind, 2, (const clt_tensor *[]){a, b},
                              (const char *const[]){"start", "end"}, ct, fn);
    if (st == CLT_OK)
        st = integral_operands_check(kind, a, b, ct, op, fn);
    if (st == CLT_OK)
        st = clt__check_dtype(a->dev, ct, fn);
    if (st != CLT_OK)
        return st;

    clt_tensor *ta = NULL, *tb = NULL, *r = NULL;
    const clt_tensor *ua, *ub;
    CLT__TRY(as_dtype(a, ct, &ta, &ua, fn));
    CLT__TRY(as_dtype(b, ct, &tb, &ub, fn));
    clt_dtype rt = kind == COMPARE || kind == CLOSE ? CLT_BOOL : ct;
    if (!usable_into(into, rt, n, shape)) {
        into = NULL;
        CLT__TRY(clt__result_new(fn, a->dev, rt, n, shape, &r));
    }
    {
        clt_tensor *w = into ? into : r;
        clt__layout L;
        geom g = layout_inputs(w, 2, (const clt_tensor *[]){ua, ub}, &L);
        cl_mem mo = clt__mem(w), ma = clt__mem(ua), mb = clt__mem(ub), merr = NULL;
        cl_int code = 0;
        if (kind == MODULO)
            CLT__TRY(modulo_errors(a->dev, ct, op, fn, &merr, &code));
        unsigned char sv[3][8];
        clt__arg args[6] = {CLT__ARG(mo), CLT__ARG(ma), CLT__ARG(mb)};
        size_t nargs = 3 + (size_t)nsc;
        scalar_args(op, kind == CLOSE && !clt__dtype_is_float(ct) ? CLT_FLOAT32 : ct, nsc, sc,
                    sv, args + 3);
        if (merr) {
            args[3] = CLT__ARG(merr);
            args[4] = CLT__ARG(code);
            nargs = 5;
        }
        group grp = kind == COMPARE || kind == CLOSE ? G_CMP : kind == GRAD ? G_GRAD : G_BIN;
        CLT__TRY(launch(a->dev, grp, ct, op, "_tt", &g, &L, nargs, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* The form of cl/elementwise.cl's pow_ts for s^x (reversed) or x^s: torch.pow
 * computes a float32, float64 or bfloat16 tensor (not float16) to the power
 * 0.5, -0.5, -1, 2, 3 or -2 as sqrt, rsqrt, 1/x, x*x, x*x*x or 1/(x*x),
 * which differ from pow at the edges (sqrt(-inf) is NaN). */
static cl_int pow_form(clt_dtype ct, double s, int reversed)
{
    if (reversed)
        return -1;
    if (ct != CLT_FLOAT32 && ct != CLT_FLOAT64 && ct != CLT_BFLOAT16)
        return 0;
    return s == 0.5 ? 1 : s == -0.5 ? 2 : s == -1.0 ? 3 : s == 2.0 ? 4 : s == 3.0 ? 5
         : s == -2.0 ? 6 : 0;
}

/* An integer remainder, fmod or floor_divide by a scalar that is 0 in the
 * integer dtype (0, or 256 for uint8 as it wraps) is refused at once: no
 * element needs the device to find it.  PyTorch's message is
 * "ZeroDivisionError". */
static clt_status modulo_scalar_check(clt_dtype ct, double s, const char *fn)
{
    unsigned char sv[8] = {0};
    static const unsigned char zero[8];
    size_t size = clt__scalar_arg(ct, s, sv);
    if (clt__dtype_is_float(ct) || memcmp(sv, zero, size) != 0)
        return CLT_OK;
    return clt__error(CLT_ERR_ZERO_DIVISION,
                      "%s: ZeroDivisionError: integer division by zero (the scalar divisor "
                      "%.17g is 0 as %s)",
                      fn, s, clt_dtype_name(ct));
}

static clt_status binary_ts(const char *op, op_kind kind, const clt_tensor *a, double s,
                            int reversed, clt_tensor *into, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (kind == NO_BOOL_SUB && a->dtype == CLT_BOOL)
        return bool_sub_error(fn);
    if (kind == COMPARE && into == NULL && clt__dtype_is_complex(a->dtype) &&
        (is_op(op, "eq") || is_op(op, "ne"))) {
        clt_tensor *s0 = NULL;
        clt_status st = clt__check_dtype(a->dev, a->dtype, fn);
        if (st == CLT_OK)
            st = clt__full(a->dev, clt__complex_part_dtype(a->dtype), 0, NULL, s, &s0);
        if (st == CLT_OK)
            st = complex_eq(a, s0, a->dtype, is_op(op, "ne"), out, fn);
        clt_tensor_free(s0);
        return st;
    }
    clt_dtype ct = compute_dtype(kind, scalar_result_type(a->dtype, s));
    if (kind == POW && !reversed && !clt__dtype_is_float(ct) && s < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: integers to negative integer powers are not allowed (%s tensor "
                          "to the power %g)",
                          fn, clt_dtype_name(a->dtype), s);
    clt_status st = clt__check_dtype(a->dev, ct, fn);
    /* An integer power's scalar must fit the dtype, as PyTorch checks it
     * (int32 tensor ** 2^31 is refused, where int32 tensor + 2^31 wraps);
     * so must a float16 or bfloat16 tensor's exponent (float16 ** 70000 is
     * refused, where float16 + 70000 is inf). */
    clt__scalar_rule rule =
        kind == POW && (!clt__dtype_is_float(ct) || (!reversed && clt__dtype_is_half(ct)))
            ? CLT__SCALAR_EXACT
            : CLT__SCALAR_WRAP;
    if (st == CLT_OK)
        st = clt__scalar_check(ct, s, rule, fn);
    if (st == CLT_OK && kind == MODULO)
        st = modulo_scalar_check(ct, s, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *ta = NULL, *r = NULL;
    const clt_tensor *ua;
    CLT__TRY(as_dtype(a, ct, &ta, &ua, fn));
    clt_dtype rt = kind == COMPARE ? CLT_BOOL : ct;
    if (!usable_into(into, rt, a->ndim, a->shape)) {
        into = NULL;
        CLT__TRY(clt__result_new(fn, a->dev, rt, a->ndim, a->shape, &r));
    }
    {
        clt_tensor *w = into ? into : r;
        clt__layout L;
        geom g = layout_inputs(w, 1, &ua, &L);
        if (clt__dtype_is_half(ct))
            s = half_scalar(ct, s);
        cl_int rev = kind == POW ? pow_form(ct, s, reversed) : reversed;
        cl_mem mo = clt__mem(w), ma = clt__mem(ua);
        /* A float32 tensor to a power below float's smallest normal would
         * get 0 (or a denormal a device may flush to 0), and x ** 0 is 1
         * everywhere; torch keeps the double exponent, so 0 ** 1e-310 is 0
         * and (-1) ** 1e-310 NaN.  +-FLT_MIN gives every float base the
         * same result as the double exponent would.  (A 16-bit tensor's
         * exponent is already rounded to its dtype, 0 for 1e-310, as in
         * torch.) */
        if (kind == POW && !reversed && ct == CLT_FLOAT32 && s != 0 && fabs(s) < FLT_MIN)
            s = copysign(FLT_MIN, s);
        unsigned char sv[8];
        size_t ssize = clt__scalar_arg(ct, s, sv);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma), {ssize, sv}, CLT__ARG(rev)};
        CLT__TRY(launch(a->dev, kind == COMPARE ? G_CMP : G_BIN, ct, op, "_ts", &g, &L, 4, args,
                        fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(ta);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* How a unary op types its result: KEEP keeps the dtype (bool refused),
 * KEEP_ALL keeps it, bool too (torch.sign), FLOAT computes integer and bool
 * input in float32 as torch.exp does, FLOAT_ONLY refuses them as torch's
 * gelu does, LOGICAL gives bool, BOOL_INT64 keeps the dtype but computes
 * bool in int64 (torch.square), BITWISE_UN keeps integer and bool dtypes
 * and refuses floating ones (torch.bitwise_not). */
typedef enum unary_kind {
    KEEP, KEEP_ALL, FLOAT, FLOAT_ONLY, LOGICAL, BOOL_INT64, BITWISE_UN
} unary_kind;

/* op(a); a kernel that takes scalars after its input (softplus's beta and
 * threshold) gets the nsc <= 3 of sc, in the compute dtype. */
static clt_status unary_s(const char *op, unary_kind kind, const clt_tensor *a, int nsc,
                          const double *sc, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (kind == KEEP && a->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: not supported for bool tensors", fn);
    if (clt__dtype_is_complex(a->dtype) && nsc == 0 &&
        (is_op(op, "neg") || is_op(op, "isnan") || is_op(op, "isinf") || is_op(op, "isfinite")))
        return complex_unary(op, a, out, fn);
    if (kind == FLOAT_ONLY && !clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: not implemented for %s tensors; it needs a floating-point "
                          "dtype (convert with clt_to_dtype)",
                          fn, clt_dtype_name(a->dtype));
    if (kind == BITWISE_UN && clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: not implemented for %s tensors, as in PyTorch; it needs an "
                          "integer or bool dtype",
                          fn, clt_dtype_name(a->dtype));
    clt_dtype ct = kind == FLOAT && !clt__dtype_is_float(a->dtype) ? CLT_FLOAT32
                 : kind == BOOL_INT64 && a->dtype == CLT_BOOL    ? CLT_INT64
                                                                 : a->dtype;
    clt_status st = clt__check_dtype(a->dev, ct, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *ta = NULL, *r = NULL;
    const clt_tensor *ua;
    CLT__TRY(as_dtype(a, ct, &ta, &ua, fn));
    CLT__TRY(clt__result_new(fn, a->dev, kind == LOGICAL ? CLT_BOOL : ct, a->ndim, a->shape, &r));
    {
        clt__layout L;
        geom g = layout_inputs(r, 1, &ua, &L);
        cl_mem mo = clt__mem(r), ma = clt__mem(ua);
        unsigned char sv[3][8];
        clt__arg args[5] = {CLT__ARG(mo), CLT__ARG(ma)};
        scalar_args(op, ct, nsc, sc, sv, args + 2);
        CLT__TRY(launch(a->dev, kind == LOGICAL ? G_CMP : G_UN, ct, op, "", &g, &L,
                        2 + (size_t)nsc, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(ta);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

static clt_status unary(const char *op, unary_kind kind, const clt_tensor *a, clt_tensor **out,
                        const char *fn)
{
    return unary_s(op, kind, a, 0, NULL, out, fn);
}

static clt_status complex_unary(const char *op, const clt_tensor *a, clt_tensor **out,
                                const char *fn)
{
    clt_tensor *ra = NULL, *r = NULL;
    bool neg = is_op(op, "neg");
    clt_status st = clt__check_dtype(a->dev, a->dtype, fn);
    if (st != CLT_OK)
        return st;
    CLT__TRY(clt__view_as_real(a, &ra, fn));
    CLT__TRY(unary(op, neg ? KEEP : LOGICAL, ra, &r, fn));
    if (neg)
        CLT__TRY(clt__view_as_complex(r, out, fn));
    else if (is_op(op, "isfinite"))
        CLT__TRY(clt__all_dim(r, -1, 0, out, fn));
    else
        CLT__TRY(clt__any_dim(r, -1, 0, out, fn));
done:
    clt_tensor_free(ra);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- public entry points -------------------------------------------------------- */

/* clt__X names clt_X; clt__X_in names fn, the caller's public call. */
#define BINARY_TT(fname, op, kind)                                                  \
    clt_status clt__##fname##_in(const char *fn, const clt_tensor *a, const clt_tensor *b, \
                                 clt_tensor **out)                                  \
    {                                                                               \
        return binary_tt(#op, kind, a, b, 0, NULL, NULL, out, fn);                  \
    }                                                                               \
    clt_status clt__##fname(const clt_tensor *a, const clt_tensor *b, clt_tensor **out) \
    {                                                                               \
        return clt__##fname##_in("clt_" #fname, a, b, out);                         \
    }

#define BINARY_TS(fname, op, kind, reversed)                                        \
    clt_status clt__##fname##_in(const char *fn, const clt_tensor *a, double s,      \
                                 clt_tensor **out)                                  \
    {                                                                               \
        return binary_ts(#op, kind, a, s, reversed, NULL, out, fn);                 \
    }                                                                               \
    clt_status clt__##fname(const clt_tensor *a, double s, clt_tensor **out)         \
    {                                                                               \
        return clt__##fname##_in("clt_" #fname, a, s, out);                         \
    }

#define UNARY_IN(fname)                                                             \
    clt_status clt__##fname(const clt_tensor *a, clt_tensor **out)                   \
    {                                                                               \
        return clt__##fname##_in("clt_" #fname, a, out);                            \
    }
#define UNARY(fname, kind)                                                          \
    clt_status clt__##fname##_in(const char *fn, const clt_tensor *a, clt_tensor **out) \
    {                                                                               \
        return unary(#fname, kind, a, out, fn);                                     \
    }                                                                               \
    UNARY_IN(fname)

BINARY_TT(add, add, ARITH)
BINARY_TT(sub, sub, NO_BOOL_SUB)
BINARY_TT(mul, mul, ARITH)
BINARY_TT(div, div, TRUE_DIV)
BINARY_TT(pow, pow, POW)
BINARY_TT(maximum, maximum, EXTREMUM)
BINARY_TT(minimum, minimum, EXTREMUM)
BINARY_TT(remainder, remainder, MODULO)
BINARY_TT(fmod, fmod, MODULO)
BINARY_TT(floor_divide, floor_divide, MODULO)
BINARY_TT(trunc_divide, trunc_divide, MODULO)
BINARY_TT(eq, eq, COMPARE)
BINARY_TT(ne, ne, COMPARE)
BINARY_TT(lt, lt, COMPARE)
BINARY_TT(le, le, COMPARE)
BINARY_TT(gt, gt, COMPARE)
BINARY_TT(ge, ge, COMPARE)

/* The gradient kernels of cl/elementwise.cl's EW_GRAD group, for autograd:
 * op is one of their names ("relu_bw"); static storage. */
clt_status clt__grad_kernel(const char *op, const clt_tensor *g, const clt_tensor *x,
                            clt_tensor **out)
{
    return binary_tt(op, GRAD, g, x, 0, NULL, NULL, out, "clt_backward");
}

clt_status clt__grad_kernel_s(const char *op, const clt_tensor *g, const clt_tensor *x, int nsc,
                              const double *sc, clt_tensor **out)
{
    return binary_tt(op, GRAD, g, x, nsc, sc, NULL, out, "clt_backward");
}

BINARY_TS(add_scalar, add, ARITH, 0)
BINARY_TS(sub_scalar, sub, NO_BOOL_SUB, 0)
BINARY_TS(rsub_scalar, sub, NO_BOOL_SUB, 1)
BINARY_TS(mul_scalar, mul, ARITH, 0)
BINARY_TS(div_scalar, div, TRUE_DIV, 0)
BINARY_TS(rdiv_scalar, div, TRUE_DIV, 1)
BINARY_TS(pow_scalar, pow, POW, 0)
BINARY_TS(rpow_scalar, pow, POW, 1)
BINARY_TS(remainder_scalar, remainder, MODULO, 0)
BINARY_TS(fmod_scalar, fmod, MODULO, 0)
BINARY_TS(floor_divide_scalar, floor_divide, MODULO, 0)
BINARY_TS(trunc_divide_scalar, trunc_divide, MODULO, 0)
BINARY_TS(eq_scalar, eq, COMPARE, 0)
BINARY_TS(ne_scalar, ne, COMPARE, 0)
BINARY_TS(lt_scalar, lt, COMPARE, 0)
BINARY_TS(le_scalar, le, COMPARE, 0)
BINARY_TS(gt_scalar, gt, COMPARE, 0)
BINARY_TS(ge_scalar, ge, COMPARE, 0)

/* The forms that may write into an existing tensor (in-place and out=). */
#define INTO_TT(fname, op, kind)                                                    \
    clt_status clt__##fname##_into(clt_tensor *into, const clt_tensor *a,            \
                                   const clt_tensor *b, clt_tensor **out, const char *fn) \
    {                                                                               \
        return binary_tt(#op, kind, a, b, 0, NULL, into, out, fn);                  \
    }

#define INTO_TS(fname, op, kind)                                                    \
    clt_status clt__##fname##_into(clt_tensor *into, const clt_tensor *a, double s,  \
                                   clt_tensor **out, const char *fn)                \
    {                                                                               \
        return binary_ts(#op, kind, a, s, 0, into, out, fn);                        \
    }

INTO_TT(add, add, ARITH)
INTO_TT(sub, sub, NO_BOOL_SUB)
INTO_TT(mul, mul, ARITH)
INTO_TT(div, div, TRUE_DIV)
INTO_TS(add_scalar, add, ARITH)
INTO_TS(sub_scalar, sub, NO_BOOL_SUB)
INTO_TS(mul_scalar, mul, ARITH)
INTO_TS(div_scalar, div, TRUE_DIV)

clt_status clt__axpy_into(clt_tensor *into, const clt_tensor *a, const clt_tensor *b,
                          double alpha, clt_tensor **out, const char *fn)
{
    return binary_tt("axpy", ARITH, a, b, 1, &alpha, into, out, fn);
}

UNARY(abs, KEEP)
UNARY(relu, KEEP)
UNARY(exp, FLOAT)
UNARY(log, FLOAT)
UNARY(sqrt, FLOAT)
UNARY(rsqrt, FLOAT)
UNARY(sin, FLOAT)
UNARY(cos, FLOAT)
UNARY(tanh, FLOAT)
UNARY(sigmoid, FLOAT)
UNARY(gelu, FLOAT_ONLY)
UNARY(log1p, FLOAT)
UNARY(expm1, FLOAT)
UNARY(tan, FLOAT)
UNARY(sign, KEEP_ALL)
UNARY(floor, KEEP)
UNARY(ceil, KEEP)
UNARY(round, KEEP)
UNARY(trunc, KEEP)
UNARY(frac, FLOAT_ONLY)
UNARY(reciprocal, FLOAT)
UNARY(isnan, LOGICAL)
UNARY(isinf, LOGICAL)
UNARY(isfinite, LOGICAL)
BINARY_TT(logical_and, logical_and, COMPARE)
BINARY_TT(logical_or, logical_or, COMPARE)
BINARY_TT(logical_xor, logical_xor, COMPARE)

/* torch.round(a, decimals=d) as PyTorch 1.13's CPU kernel: float32 and
 * float64 only (it refuses integers, bool and float16, for d == 0 too), in
 * the tensor's dtype with the scale 10^|d| computed in double and then
 * converted, as there. */
clt_status clt__round_decimals_in(const char *fn, const clt_tensor *a, int64_t decimals,
                                  clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (a->dtype != CLT_FLOAT32 && a->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: round with decimals is not implemented for %s tensors, as in "
                          "PyTorch; it needs float32 or float64 (convert with clt_to_dtype)",
                          fn, clt_dtype_name(a->dtype));
    /* The scale's sign tells the kernel to divide (negative decimals). */
    double scale = pow(10.0, fabs((double)decimals));
    if (decimals < 0)
        scale = -scale;
    return unary_s("round_decimals", KEEP, a, 1, &scale, out, fn);
}
UNARY(silu, FLOAT_ONLY)
UNARY(logical_not, LOGICAL)

/* torch's F.softplus(a, beta, threshold); beta and threshold are converted
 * to the compute dtype, as PyTorch's kernel converts them to scalar_t. */
clt_status clt__softplus_in(const char *fn, const clt_tensor *a, double beta, double threshold,
                            clt_tensor **out)
{
    const double sc[2] = {beta, threshold};
    return unary_s("softplus", FLOAT_ONLY, a, 2, sc, out, fn);
}

/* F.leaky_relu(a, negative_slope) and F.elu(a, alpha); the scalar is
 * converted to the compute dtype, as softplus's. */
clt_status clt__leaky_relu_in(const char *fn, const clt_tensor *a, double negative_slope,
                              clt_tensor **out)
{
    return unary_s("leaky_relu", FLOAT_ONLY, a, 1, &negative_slope, out, fn);
}

clt_status clt__elu_in(const char *fn, const clt_tensor *a, double alpha, clt_tensor **out)
{
    const double sc[1] = {alpha};
    return clt__act_in(fn, CLT__ACT_ELU, a, sc, out);
}

clt_status clt__neg_in(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    if (a && a->dtype == CLT_BOOL) {
        if (out)
            *out = NULL;
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: negation, the '-' operator, on a bool tensor is not "
                          "supported; use clt_logical_not instead",
                          fn);
    }
    return unary("neg", KEEP, a, out, fn);
}
UNARY_IN(neg)

clt_status clt__clamp(const clt_tensor *a, const double *min, const double *max,
                     clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (min == NULL && max == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: at least one of 'min' or 'max' must not be NULL", fn);
    clt_dtype ct = a->dtype;
    if (min)
        ct = clt_promote_types(ct, scalar_result_type(a->dtype, *min));
    if (max)
        ct = clt_promote_types(ct, scalar_result_type(a->dtype, *max));
    clt_status st = clt__check_dtype(a->dev, ct, fn);
    if (st == CLT_OK && min)
        st = clt__scalar_check(ct, *min, CLT__SCALAR_EXACT, fn);
    if (st == CLT_OK && max)
        st = clt__scalar_check(ct, *max, CLT__SCALAR_EXACT, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *ta = NULL, *r = NULL;
    const clt_tensor *ua;
    CLT__TRY(as_dtype(a, ct, &ta, &ua, fn));
    CLT__TRY(clt__result_new(fn, a->dev, ct, a->ndim, a->shape, &r));
    {
        clt__layout L;
        geom g = layout_inputs(r, 1, &ua, &L);
        cl_int has_lo = min != NULL, has_hi = max != NULL;
        unsigned char lo[8], hi[8];
        size_t size = clt__scalar_arg(ct, min ? *min : 0, lo);
        clt__scalar_arg(ct, max ? *max : 0, hi);
        cl_mem mo = clt__mem(r), ma = clt__mem(ua);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma),     {size, lo},
                           {size, hi},   CLT__ARG(has_lo), CLT__ARG(has_hi)};
        CLT__TRY(launch(a->dev, G_BIN, ct, "clamp", "", &g, &L, 6, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(ta);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__where(const clt_tensor *cond, const clt_tensor *a, const clt_tensor *b,
                     clt_tensor **out)
{
    return clt__where_in("clt_where", cond, a, b, out);
}

/* The device check and the broadcast shape (*n, shape) of three operands. */
static clt_status three_operands(const clt_tensor *const *t, int *n, int64_t *shape,
                                 const char *fn)
{
    int n1 = 0;
    int64_t s1[CLT_MAX_DIMS];
    clt_status st = clt__same_device(t[0], t[1], fn);
    if (st == CLT_OK)
        st = clt__same_device(t[0], t[2], fn);
    if (st == CLT_OK)
        st = clt__broadcast_shapes(t[0]->ndim, t[0]->shape, t[1]->ndim, t[1]->shape, &n1, s1, fn);
    if (st == CLT_OK)
        st = clt__broadcast_shapes(n1, s1, t[2]->ndim, t[2]->shape, n, shape, fn);
    return st;
}

/* where with a complex result type ct: on the operands' real views (as
 * ct), the condition given a last dim of size 1 that broadcasts against
 * their pairs. */
static clt_status where_complex(const char *fn, const clt_tensor *cond, const clt_tensor *a,
                                const clt_tensor *b, clt_dtype ct, clt_tensor **out)
{
    if (cond->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: a condition of %d dims is more than complex operands' real "
                          "views take (CLT_MAX_DIMS %d)",
                          fn, cond->ndim, CLT_MAX_DIMS);
    clt_tensor *ca = NULL, *cb = NULL, *ra = NULL, *rb = NULL, *cu = NULL, *r = NULL;
    int64_t shape[CLT_MAX_DIMS], str[CLT_MAX_DIMS];
    clt_status st;
    for (int d = 0; d < cond->ndim; d++) {
        shape[d] = cond->shape[d];
        str[d] = cond->strides[d];
    }
    shape[cond->ndim] = 1;
    str[cond->ndim] = 0;
    CLT__TRY(clt__error_in(clt__tensor_view(cond, cond->ndim + 1, shape, str, cond->offset, &cu),
                           fn));
    CLT__TRY(clt__complex_dense(fn, a, ct, &ca));
    CLT__TRY(clt__complex_dense(fn, b, ct, &cb));
    CLT__TRY(clt__view_as_real(ca, &ra, fn));
    CLT__TRY(clt__view_as_real(cb, &rb, fn));
    CLT__TRY(clt__where_in(fn, cu, ra, rb, &r));
    CLT__TRY(clt__view_as_complex(r, out, fn));
done:
    clt_tensor_free(ca);
    clt_tensor_free(cb);
    clt_tensor_free(ra);
    clt_tensor_free(rb);
    clt_tensor_free(cu);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__where_in(const char *fn, const clt_tensor *cond, const clt_tensor *a,
                         const clt_tensor *b, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(cond, fn);
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    if (cond->dtype != CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected condition to be a bool tensor, but got a tensor with "
                          "dtype %s",
                          fn, clt_dtype_name(cond->dtype));
    int n = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st = three_operands((const clt_tensor *[]){cond, a, b}, &n, shape, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype ct = result_type(a, b);
    st = clt__check_dtype(a->dev, ct, fn);
    if (st != CLT_OK)
        return st;
    if (clt__dtype_is_complex(ct))
        return where_complex(fn, cond, a, b, ct, out);
    clt_tensor *ta = NULL, *tb = NULL, *r = NULL;
    const clt_tensor *ua, *ub;
    CLT__TRY(as_dtype(a, ct, &ta, &ua, fn));
    CLT__TRY(as_dtype(b, ct, &tb, &ub, fn));
    CLT__TRY(clt__result_new(fn, a->dev, ct, n, shape, &r));
    {
        clt__layout L;
        geom g = layout_inputs(r, 3, (const clt_tensor *[]){cond, ua, ub}, &L);
        cl_mem mo = clt__mem(r), mc = clt__mem(cond), ma = clt__mem(ua), mb = clt__mem(ub);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(mc), CLT__ARG(ma), CLT__ARG(mb)};
        CLT__TRY(launch(a->dev, G_BIN, ct, "where", "", &g, &L, 4, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* torch.clamp with tensor bounds (either may be NULL, not both): the three
 * broadcast together, in their result type (0-d ones weigh less).  An
 * absent bound's operand is a itself, which the kernel does not use. */
clt_status clt__clamp_t(const clt_tensor *a, const clt_tensor *min, const clt_tensor *max,
                        clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (min == NULL && max == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: at least one of 'min' or 'max' must not be NULL", fn);
    const clt_tensor *t[3] = {a, min ? min : a, max ? max : a};
    int n = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st = three_operands(t, &n, shape, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype ct = result_type_n(3, t);
    if (clt__dtype_is_complex(ct))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: clamp is not supported for complex types", fn);
    /* PyTorch's clamp kernel has no bool form; clamp_min and clamp_max
     * (one bound) have. */
    if (ct == CLT_BOOL && min && max)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: clamp with both bounds is not implemented for bool tensors, as "
                          "in PyTorch (\"clamp_cpu\" not implemented for 'Bool'); give one "
                          "bound or convert with clt_to_dtype",
                          fn);
    st = clt__check_dtype(a->dev, ct, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *tmp[3] = {NULL, NULL, NULL}, *r = NULL;
    const clt_tensor *u[3];
    for (int i = 0; i < 3; i++)
        CLT__TRY(as_dtype(t[i], ct, &tmp[i], &u[i], fn));
    CLT__TRY(clt__result_new(fn, a->dev, ct, n, shape, &r));
    {
        clt__layout L;
        geom g = layout_inputs(r, 3, u, &L);
        cl_mem mo = clt__mem(r), ma = clt__mem(u[0]), mb = clt__mem(u[1]), mc = clt__mem(u[2]);
        cl_int has_lo = min != NULL, has_hi = max != NULL;
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma),     CLT__ARG(mb),
                           CLT__ARG(mc), CLT__ARG(has_lo), CLT__ARG(has_hi)};
        CLT__TRY(launch(a->dev, G_BIN, ct, "clamp", "_ttt", &g, &L, 6, args, fn));
    }
    *out = r;
    r = NULL;
done:
    for (int i = 0; i < 3; i++)
        clt_tensor_free(tmp[i]);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* How ternary() types and refuses: ARITH (addcmul) in the result type of
 * the three, bool refused; TRUE_DIV (addcdiv) refuses two integer (or
 * bool) factors too, as PyTorch's "Integer division with addcdiv is no
 * longer supported"; SAME_FLOAT (lerp) one floating dtype for all. */
static clt_status ternary_check(op_kind kind, const clt_tensor *const *t, clt_dtype ct,
                                const char *fn)
{
    static const char *const lerp_names[3] = {"start", "end", "weight"};
    if (kind == SAME_FLOAT)
        return float_operands_check(kind, 3, t, lerp_names, ct, fn);
    if (ct == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: not implemented for bool tensors; convert them with "
                          "clt_to_dtype first",
                          fn);
    if (kind == TRUE_DIV && !clt__dtype_is_float(t[1]->dtype) && !clt__dtype_is_float(t[2]->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: integer division with addcdiv is not supported, as in PyTorch "
                          "(tensor1 is %s and tensor2 %s); convert one of them to a "
                          "floating dtype with clt_to_dtype",
                          fn, clt_dtype_name(t[1]->dtype), clt_dtype_name(t[2]->dtype));
    return CLT_OK;
}

/* op(a, b, c) over the three broadcast together, in their result type
 * (0-d operands weigh less, as in a binary op), with nsc <= 1 scalars sc
 * after them, each of which must fit that type (CLT__SCALAR_EXACT, as
 * c10's Scalar conversion): lerp with a tensor weight (SAME_FLOAT),
 * addcmul (ARITH) and addcdiv (TRUE_DIV). */
static clt_status ternary(const char *op, op_kind kind, const clt_tensor *a, const clt_tensor *b,
                          const clt_tensor *c, int nsc, const double *sc, clt_tensor **out,
                          const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    CLT__REQUIRE_ARG(c, fn);
    const clt_tensor *t[3] = {a, b, c};
    int n = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st = three_operands(t, &n, shape, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype ct = result_type_n(3, t);
    st = ternary_check(kind, t, ct, fn);
    if (st == CLT_OK)
        st = clt__check_dtype(a->dev, ct, fn);
    for (int k = 0; k < nsc && st == CLT_OK; k++) {
        st = clt__scalar_check(ct, sc[k], CLT__SCALAR_EXACT, fn);
        /* A fractional value is a Python float, which c10 wants within
         * [0, 255] for uint8 (an integral one may wrap from -255). */
        if (st == CLT_OK && ct == CLT_UINT8 && sc[k] != floor(sc[k]) &&
            (sc[k] < 0 || sc[k] > 255))
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: value %.17g cannot be converted to type uint8 without "
                            "overflow (a fractional value must lie in [0, 255])",
                            fn, sc[k]);
    }
    if (st != CLT_OK)
        return st;
    clt_tensor *tmp[3] = {NULL, NULL, NULL}, *r = NULL;
    const clt_tensor *u[3];
    for (int i = 0; i < 3; i++)
        CLT__TRY(as_dtype(t[i], ct, &tmp[i], &u[i], fn));
    CLT__TRY(clt__result_new(fn, a->dev, ct, n, shape, &r));
    {
        clt__layout L;
        geom g = layout_inputs(r, 3, u, &L);
        cl_mem mo = clt__mem(r), ma = clt__mem(u[0]), mb = clt__mem(u[1]), mc = clt__mem(u[2]);
        unsigned char sv[1][8];
        clt__arg args[5] = {CLT__ARG(mo), CLT__ARG(ma), CLT__ARG(mb), CLT__ARG(mc)};
        scalar_args(op, ct, nsc, sc, sv, args + 4);
        CLT__TRY(launch(a->dev, G_BIN, ct, op, "_ttt", &g, &L, 4 + (size_t)nsc, args, fn));
    }
    *out = r;
    r = NULL;
done:
    for (int i = 0; i < 3; i++)
        clt_tensor_free(tmp[i]);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- math functions (torch.asin ... torch.addcdiv) ---------------------------------- */

UNARY(asin, FLOAT)
UNARY(acos, FLOAT)
UNARY(atan, FLOAT)
UNARY(sinh, FLOAT)
UNARY(cosh, FLOAT)
UNARY(asinh, FLOAT)
UNARY(acosh, FLOAT)
UNARY(atanh, FLOAT)
UNARY(erf, FLOAT)
UNARY(erfc, FLOAT)
UNARY(erfinv, FLOAT)
UNARY(log2, FLOAT)
UNARY(log10, FLOAT)
UNARY(exp2, FLOAT)
UNARY(square, BOOL_INT64)
BINARY_TT(atan2, atan2, FLOATING)
BINARY_TT(hypot, hypot, FLOAT_ONLY2)
BINARY_TT(copysign, copysign, FLOATING)
BINARY_TT(xlogy, xlogy, FLOATING)

/* torch.logit(a, eps): eps NULL, negative or NaN clamps nothing (the kernel
 * gets lo = -inf); integer and bool tensors give float32. */
clt_status clt__logit_in(const char *fn, const clt_tensor *a, const double *eps,
                         clt_tensor **out)
{
    double lo = eps && *eps >= 0 ? *eps : -INFINITY;
    return unary_s("logit", FLOAT, a, 1, &lo, out, fn);
}

/* The largest finite value of a floating dtype. */
static double float_max(clt_dtype dt)
{
    return dt == CLT_FLOAT64 ? DBL_MAX : dt == CLT_FLOAT32 ? FLT_MAX : 65504.0;
}

/* torch.nan_to_num: the replacements converted to a's dtype (1e300 is inf
 * in float32, as PyTorch's static_cast); a NULL posinf or neginf takes
 * PyTorch's default, the dtype's largest or lowest finite value.  Integers and bool
 * come back as they are. */
clt_status clt__nan_to_num_in(const char *fn, const clt_tensor *a, double nan_value,
                              const double *posinf, const double *neginf, clt_tensor **out)
{
    double sc[3] = {0, 0, 0};
    if (a && clt__dtype_is_float(a->dtype)) {
        double big = float_max(a->dtype);
        sc[0] = nan_value;
        sc[1] = posinf ? *posinf : big;
        sc[2] = neginf ? *neginf : -big;
    }
    return unary_s("nan_to_num", KEEP_ALL, a, 3, sc, out, fn);
}

/* torch.lerp(start, end, weight) with a Python number weight, converted to
 * the tensors' dtype as c10's Scalar (an overflow is refused). */
clt_status clt__lerp_scalar_in(const char *fn, const clt_tensor *start, const clt_tensor *end,
                               double weight, clt_tensor **out)
{
    if (out && start && end && clt__dtype_is_float(start->dtype) && start->dtype == end->dtype) {
        clt_status st = clt__scalar_check(start->dtype, weight, CLT__SCALAR_EXACT, fn);
        if (st != CLT_OK) {
            *out = NULL;
            return st;
        }
    }
    return binary_tt("lerp", SAME_FLOAT, start, end, 1, &weight, NULL, out, fn);
}

clt_status clt__lerp_in(const char *fn, const clt_tensor *start, const clt_tensor *end,
                        const clt_tensor *weight, clt_tensor **out)
{
    return ternary("lerp", SAME_FLOAT, start, end, weight, 0, NULL, out, fn);
}

clt_status clt__addcmul_in(const char *fn, const clt_tensor *a, const clt_tensor *t1,
                           const clt_tensor *t2, double value, clt_tensor **out)
{
    return ternary("addcmul", ARITH, a, t1, t2, 1, &value, out, fn);
}

clt_status clt__addcdiv_in(const char *fn, const clt_tensor *a, const clt_tensor *t1,
                           const clt_tensor *t2, double value, clt_tensor **out)
{
    return ternary("addcdiv", TRUE_DIV, a, t1, t2, 1, &value, out, fn);
}

/* ---- activations (clt_hardtanh ... clt_logsigmoid) -------------------------------- */

/* Each activation's kernel (cl/elementwise.cl's DEF_ACT3, three scalars)
 * and typing: KEEP where PyTorch takes integer tensors too (hardtanh is
 * clamp there), FLOAT for softsign and tanhshrink, which PyTorch composes
 * of ops that give float32 for integers, FLOAT_ONLY for the rest. */
static const struct {
    const char *kernel;
    unary_kind kind;
} act_ops[] = {
    [CLT__ACT_ELU] = {"elu", FLOAT_ONLY},
    [CLT__ACT_HARDTANH] = {"hardtanh", KEEP},
    [CLT__ACT_RELU6] = {"hardtanh", KEEP},
    [CLT__ACT_HARDSIGMOID] = {"hardsigmoid", FLOAT_ONLY},
    [CLT__ACT_HARDSWISH] = {"hardswish", FLOAT_ONLY},
    [CLT__ACT_MISH] = {"mish", FLOAT_ONLY},
    [CLT__ACT_SELU] = {"elu", FLOAT_ONLY},
    [CLT__ACT_CELU] = {"elu", FLOAT_ONLY},
    [CLT__ACT_SOFTSIGN] = {"softsign", FLOAT},
    [CLT__ACT_TANHSHRINK] = {"tanhshrink", FLOAT},
    [CLT__ACT_HARDSHRINK] = {"hardshrink", FLOAT_ONLY},
    [CLT__ACT_SOFTSHRINK] = {"softshrink", FLOAT_ONLY},
    [CLT__ACT_LOGSIGMOID] = {"logsigmoid", FLOAT_ONLY},
    [CLT__ACT_THRESHOLD] = {"threshold", KEEP},
};

const char *clt__act_kernel(clt__act act)
{
    return act_ops[act].kernel;
}

void clt__act_scalars(clt__act act, const double *sc, double fwd[3], double bw[3])
{
    /* selu's alpha and scale, as PyTorch's. */
    static const double selu_alpha = 1.6732632423543772848170429916717;
    static const double selu_scale = 1.0507009873554804934193349852946;
    double v[3] = {0, 0, 0};
    switch (act) {
    case CLT__ACT_ELU:
        v[0] = sc[0], v[1] = 1, v[2] = 1;
        break;
    case CLT__ACT_RELU6:
        v[1] = 6;
        break;
    case CLT__ACT_SELU:
        v[0] = selu_alpha, v[1] = selu_scale, v[2] = 1;
        break;
    case CLT__ACT_CELU:
        v[0] = sc[0], v[1] = 1, v[2] = 1.0 / sc[0];
        break;
    case CLT__ACT_HARDTANH:
    case CLT__ACT_THRESHOLD:
        v[1] = sc[1];
        /* fall through */
    case CLT__ACT_HARDSHRINK:
    case CLT__ACT_SOFTSHRINK:
        v[0] = sc[0];
        break;
    default:
        break;
    }
    memcpy(fwd, v, sizeof v);
    /* PyTorch's celu backward takes 1 / alpha in float (alpha.toFloat()). */
    if (act == CLT__ACT_CELU)
        v[2] = 1.0 / (double)(float)sc[0];
    memcpy(bw, v, sizeof v);
}

clt_status clt__act_in(const char *fn, clt__act act, const clt_tensor *a, const double *sc,
                       clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (act == CLT__ACT_CELU && sc[0] == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: alpha cannot be 0 for CELU (PyTorch's ZeroDivisionError)", fn);
    if (act == CLT__ACT_SOFTSHRINK && !(sc[0] >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: lambda must be greater or equal to 0, but found to be %g", fn,
                          sc[0]);
    if (act_ops[act].kind == FLOAT && a->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: not implemented for bool tensors, as in PyTorch; convert with "
                          "clt_to_dtype",
                          fn);
    double fwd[3], bw[3];
    clt__act_scalars(act, sc, fwd, bw);
    return unary_s(act_ops[act].kernel, act_ops[act].kind, a, 3, fwd, out, fn);
}

/* glu of its two halves and its gradient of the second (floating operands
 * of one dtype, checked by the caller); prelu of x and its weight
 * broadcast to x, and its gradient for x. */
clt_status clt__glu_halves_in(const char *fn, const clt_tensor *a, const clt_tensor *b,
                              clt_tensor **out)
{
    return binary_tt("glu", FLOAT_ONLY2, a, b, 0, NULL, NULL, out, fn);
}

clt_status clt__glu_bw_in(const char *fn, const clt_tensor *g, const clt_tensor *a,
                          const clt_tensor *b, clt_tensor **out)
{
    return ternary("glu_bw", SAME_FLOAT, g, a, b, 0, NULL, out, fn);
}

clt_status clt__prelu_bcast_in(const char *fn, const clt_tensor *x, const clt_tensor *w,
                               clt_tensor **out)
{
    return binary_tt("prelu", FLOAT_ONLY2, x, w, 0, NULL, NULL, out, fn);
}

clt_status clt__prelu_bw_x_in(const char *fn, const clt_tensor *g, const clt_tensor *x,
                              const clt_tensor *w, clt_tensor **out)
{
    return ternary("prelu_bw_x", SAME_FLOAT, g, x, w, 0, NULL, out, fn);
}

/* ---- special functions and the rest of torch's pointwise math ------------------- */

UNARY(lgamma, FLOAT)
UNARY(digamma, FLOAT)
UNARY(i0, FLOAT)
UNARY(i0e, FLOAT)
UNARY(i1, FLOAT)
UNARY(i1e, FLOAT)
UNARY(ndtr, FLOAT)
UNARY(ndtri, FLOAT)
UNARY(log_ndtr, FLOAT)
UNARY(sinc, FLOAT)
UNARY(entr, FLOAT)
UNARY(bitwise_not, BITWISE_UN)
UNARY(signbit, LOGICAL)
BINARY_TT(xlog1py, xlog1py, FLOATING)
BINARY_TT(logaddexp, logaddexp, FLOAT_ONLY2)
BINARY_TT(logaddexp2, logaddexp2, FLOAT_ONLY2)
BINARY_TT(nextafter, nextafter, FLOAT_ONLY2)
BINARY_TT(heaviside, heaviside, SAME_DTYPE)
BINARY_TT(gcd, gcd, INTEGRAL)
BINARY_TT(lcm, lcm, INTEGRAL)
BINARY_TT(bitwise_and, bitwise_and, BITWISE)
BINARY_TT(bitwise_or, bitwise_or, BITWISE)
BINARY_TT(bitwise_xor, bitwise_xor, BITWISE)
BINARY_TT(bitwise_left_shift, bitwise_left_shift, INTEGRAL)
BINARY_TT(bitwise_right_shift, bitwise_right_shift, INTEGRAL)

/* torch.polygamma(n, a): n below 0 is refused, as PyTorch's "polygamma(n,
 * x) does not support negative n."; the kernel gets n as its first
 * scalar. */
clt_status clt__polygamma_in(const char *fn, int64_t n, const clt_tensor *a, clt_tensor **out)
{
    if (n < 0 || n > INT32_MAX) {
        if (out)
            *out = NULL;
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: polygamma(n, x) does not support %s n (got %lld)", fn,
                          n < 0 ? "negative" : "so large an", (long long)n);
    }
    const double sc[3] = {(double)n, 0, 0};
    return unary_s("polygamma", FLOAT, a, 3, sc, out, fn);
}

/* torch.mvlgamma(a, p): p below 1 and bool tensors are refused, as
 * PyTorch's "p has to be greater than or equal to 1" and "The input tensor
 * may not be a boolean tensor."; the kernel gets p and p (p - 1)/4 log(pi),
 * computed in double as there. */
clt_status clt__mvlgamma_in(const char *fn, const clt_tensor *a, int64_t p, clt_tensor **out)
{
    if (out)
        *out = NULL;
    if (p < 1 || p > INT32_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: p has to be greater than or equal to 1 (and fit an int32), "
                          "got %lld",
                          fn, (long long)p);
    if (a && a->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: The input tensor may not be a boolean tensor (as in PyTorch)",
                          fn);
    const double sc[3] = {(double)p, (double)(p * (p - 1)) * log(3.14159265358979323846) * 0.25, 0};
    return unary_s("mvlgamma", FLOAT, a, 3, sc, out, fn);
}

/* torch.frexp(a): floating tensors only, as PyTorch's "torch.frexp() only
 * supports floating-point dtypes"; the exponent is a new int32 tensor of
 * a's shape that the kernel writes as its operand 1. */
clt_status clt__frexp_in(const char *fn, const clt_tensor *a, clt_tensor **mantissa,
                         clt_tensor **exponent)
{
    if (mantissa)
        *mantissa = NULL;
    if (exponent)
        *exponent = NULL;
    CLT__REQUIRE_ARG(mantissa, fn);
    CLT__REQUIRE_ARG(exponent, fn);
    CLT__REQUIRE_ARG(a, fn);
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: torch.frexp() only supports floating-point dtypes, not %s", fn,
                          clt_dtype_name(a->dtype));
    clt_status st = clt__check_dtype(a->dev, a->dtype, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *m = NULL, *e = NULL;
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, a->ndim, a->shape, &m));
    CLT__TRY(clt__result_new(fn, a->dev, CLT_INT32, a->ndim, a->shape, &e));
    {
        clt__layout L;
        geom g = layout_inputs(m, 2, (const clt_tensor *[]){a, e}, &L);
        cl_mem mo = clt__mem(m), ma = clt__mem(a), me = clt__mem(e);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma), CLT__ARG(me)};
        CLT__TRY(launch(a->dev, G_UN, a->dtype, "frexp", "", &g, &L, 3, args, fn));
    }
    *mantissa = m;
    *exponent = e;
    m = e = NULL;
done:
    clt_tensor_free(m);
    clt_tensor_free(e);
    return st == CLT_OK ? clt__ok() : st;
}

/* torch.isclose(a, b, rtol, atol, equal_nan): one dtype for both (as
 * PyTorch's "Long did not match Float"), tolerances not negative. */
clt_status clt__isclose_in(const char *fn, const clt_tensor *a, const clt_tensor *b, double rtol,
                           double atol, bool equal_nan, clt_tensor **out)
{
    if (!(rtol >= 0) || !(atol >= 0)) {
        if (out)
            *out = NULL;
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s must be greater than or equal to zero, but got %g", fn,
                          !(rtol >= 0) ? "rtol" : "atol", !(rtol >= 0) ? rtol : atol);
    }
    const double sc[3] = {rtol, atol, equal_nan ? 1.0 : 0.0};
    return binary_tt("isclose", CLOSE, a, b, 3, sc, NULL, out, fn);
}
