/* loss.cl: fused losses of dtype T (float32 or float64) and their
 * gradients.  cross entropy and nll_loss work on contiguous [N, C] rows, a
 * work-item per row or per chunk of rows: its maximum, log-sum-exp and target terms in one pass
 * over the row, with no softmax or log_softmax tensor in between.  mse, l1,
 * smooth_l1, huber, binary cross entropy (of probabilities and with logits)
 * and kl_div are elementwise.  The mean and sum reductions add the per-row
 * (or per-element) values in index order, in chunks whose size depends only
 * on their count, so results are the same bits on every run and device.
 * Class indices are int64 and never trusted: one outside [0, C) that is not
 * ignore_index is recorded in the device's index error record (as
 * cl/index.cl does) and its row contributes nothing.  A probability outside
 * [0, 1] given to binary cross entropy is recorded too (its loss is NaN). */

#pragma OPENCL FP_CONTRACT OFF

/* A row's maximum *m and log(sum(exp(x - m))) *ls: log_softmax(x)[c] is
 * (x[c] - m) - ls, which keeps its digits for huge logits (x - (m + ls)
 * would round m + ls to the spacing of m first). */
inline void row_lse(__global const T *xr, long C, T_C *m, T_C *ls)
{
    T_C mx = -INFINITY;
    for (long c = 0; c < C; c++)
        mx = fmax(mx, T_LOAD(xr, c));
    T_C s = 0;
    for (long c = 0; c < C; c++)
        s += exp(T_LOAD(xr, c) - mx);
    *m = mx;
    *ls = log(s);
}

#define LP(c) ((T_LOAD(xr, c) - m) - ls)

/* Row i of cross entropy (logsm 1: x holds logits) or nll_loss (logsm 0: x
 * holds log-probabilities).  With class indices (prob 0), the row's loss is
 * (1 - eps) w[t] (-lp[t]) + eps / C sum_c w[c] (-lp[c]) and its weight w[t]
 * (0 when ignored); with probabilities (prob 1) it is
 * -sum_c w[c] ((1 - eps) t[c] + eps / C) lp[c] and its weight 1.  Missing
 * weights (has_w 0) are 1. */
inline void ce_row(__global T *loss, __global T *wrow, __global const T *x, ulong x_off,
                   __global const long *tidx, __global const T *tprob, ulong t_off, int prob,
                   __global const T *w, ulong w_off, int has_w, long C, long ignore,
                   T_C eps, int logsm, int op, __global clt_index_error *err, size_t i)
{
    __global const T *xr = x + x_off + i * C;
    T_C m = 0, ls = 0;
    if (logsm)
        row_lse(xr, C, &m, &ls);
    T_C epc = eps / (T_C)C;
    if (prob) {
        __global const T *tr = tprob + t_off + i * C;
        T_C acc = 0;
        for (long c = 0; c < C; c++) {
            T_C tc = ((T_C)1 - eps) * T_LOAD(tr, c) + epc;
            T_C wc = has_w ? T_LOAD(w, w_off + c) : (T_C)1;
            acc += wc * tc * LP(c);
        }
        T_STORE(loss, i, -acc);
        T_STORE(wrow, i, (T_C)1);
        return;
    }
    long t = tidx[t_off + i];
    if (t == ignore || t < 0 || t >= C) {
        if (t != ignore)
            clt_report_error(err, op, -2, t, C);
        T_STORE(loss, i, (T_C)0);
        T_STORE(wrow, i, (T_C)0);
        return;
    }
    T_C wt = has_w ? T_LOAD(w, w_off + t) : (T_C)1;
    T_C l = -(((T_C)1 - eps) * wt * LP(t));
    if (eps != 0) {
        T_C sm = 0;
        for (long c = 0; c < C; c++) {
            T_C wc = has_w ? T_LOAD(w, w_off + c) : (T_C)1;
            sm += wc * LP(c);
        }
        l -= epc * sm;
    }
    T_STORE(loss, i, l);
    T_STORE(wrow, i, wt);
}

/* Rows [gid chunk, (gid + 1) chunk) of N: one row per work-item on GPUs,
 * many in work-groups of one on CPU devices (PoCL's loop over the
 * work-items of a larger group ran each row several times slower). */
CLT_KERNEL(ce_rows)(__global T *loss, __global T *wrow, __global const T *x, ulong x_off,
                    __global const long *tidx, __global const T *tprob, ulong t_off, int prob,
                    __global const T *w, ulong w_off, int has_w, long C, long ignore,
                    T_C eps, int logsm, int op, __global clt_index_error *err, ulong N,
                    ulong chunk)
{
    size_t i0 = get_global_id(0) * chunk, i1 = min((size_t)N, i0 + (size_t)chunk);
    for (size_t i = i0; i < i1; i++)
        ce_row(loss, wrow, x, x_off, tidx, tprob, t_off, prob, w, w_off, has_w, C, ignore, eps,
               logsm, op, err, i);
}

/* The sum of p[lo .. hi) in order: plain sums of blocks of LOSS_BLOCK
 * values, added up compensated (CLT_ADD_COMPENSATED), so that the error no
 * longer grows with the count (a plain float32 sum made the mean cross
 * entropy of 2^21 rows of log 2 6e-5 high) while the chain of dependent
 * operations per value stays one add. */
#define LOSS_BLOCK 64
inline T_C sum_in_order(__global const T *p, ulong lo, ulong hi)
{
    T_C s = 0, c = 0;
    for (ulong j0 = lo; j0 < hi; j0 += LOSS_BLOCK) {
        ulong j1 = min(hi, j0 + LOSS_BLOCK);
        T_C b = 0;
        for (ulong j = j0; j < j1; j++)
            b += T_LOAD(p, j);
        CLT_ADD_COMPENSATED(T_C, s, c, b);
    }
    return s;
}

/* First stage of a long reduction: work-item k adds vals (and wrow) over
 * [k * chunk, (k + 1) * chunk) (sum_in_order) into part[k] (and
 * part_w[k]).  The host fixes the chunking from n alone, never from the
 * device. */
CLT_KERNEL(loss_partial)(__global T *part, __global T *part_w, __global const T *vals,
                         __global const T *wrow, ulong n, ulong chunk, int with_w,
                         ulong parts)
{
    size_t k = get_global_id(0);
    if (k >= parts)
        return;
    ulong lo = k * chunk, hi = min(n, lo + chunk);
    T_STORE(part, k, sum_in_order(vals, lo, hi));
    T_STORE(part_w, k, with_w ? sum_in_order(wrow, lo, hi) : (T_C)0);
}

/* out[0] = the sum of vals[0 .. n) (sum_in_order), divided (mode 1) by
 * count or (mode 2) by the sum of wrow; den[0] gets the divisor (1 for a
 * sum).  One work-item. */
CLT_KERNEL(loss_reduce)(__global T *out, __global T *den, __global const T *vals,
                        __global const T *wrow, ulong n, int mode, ulong count)
{
    if (get_global_id(0) != 0)
        return;
    T_C s = sum_in_order(vals, 0, n), d = 1;
    if (mode == 1)
        d = (T_C)count;
    else if (mode == 2)
        d = sum_in_order(wrow, 0, n);
    T_STORE(out, 0, mode ? s / d : s);
    T_STORE(den, 0, d);
}

/* The gradient of ce_rows's row i, from g (g_rows: one value per row,
 * otherwise g[0]) divided by den[0] (has_den): with the row's coefficients
 * a_c on -lp[c] and A = sum_c a_c, gx[c] = (softmax(x)[c] A - a_c) g for
 * cross entropy and -a_c g for nll_loss.  want_gt (probabilities only)
 * also writes the target's gradient -(1 - eps) w[c] lp[c] g. */
inline void ce_row_bw(__global T *gx, __global T *gt, int want_gt, __global const T *x,
                      ulong x_off, __global const long *tidx, __global const T *tprob,
                      ulong t_off, int prob, __global const T *w, ulong w_off, int has_w,
                      long C, long ignore, T_C eps, int logsm, __global const T *g, ulong g_off,
                      int g_rows, __global const T *den, int has_den, size_t i)
{
    __global const T *xr = x + x_off + i * C;
    __global T *gr = gx + i * C;
    T_C gi = T_LOAD(g, g_off + (g_rows ? i : 0));
    if (has_den)
        gi = gi / T_LOAD(den, 0);
    T_C epc = eps / (T_C)C;
    long t = 0;
    if (!prob) {
        t = tidx[t_off + i];
        if (t == ignore || t < 0 || t >= C) {
            for (long c = 0; c < C; c++)
                T_STORE(gr, c, (T_C)0);
            return;
        }
    }
    T_C m = 0, ls = 0;
    if (logsm)
        row_lse(xr, C, &m, &ls);
    __global const T *tr = tprob + t_off + i * C;
    T_C wt = (!prob && has_w) ? T_LOAD(w, w_off + t) : (T_C)1;
    T_C A = 0;
    if (logsm) {
        for (long c = 0; c < C; c++) {
            T_C wc = has_w ? T_LOAD(w, w_off + c) : (T_C)1;
            A += prob ? wc * (((T_C)1 - eps) * T_LOAD(tr, c) + epc)
                      : (c == t ? ((T_C)1 - eps) * wt : (T_C)0) + epc * wc;
        }
    }
    for (long c = 0; c < C; c++) {
        T_C wc = has_w ? T_LOAD(w, w_off + c) : (T_C)1;
        T_C a = prob ? wc * (((T_C)1 - eps) * T_LOAD(tr, c) + epc)
                     : (c == t ? ((T_C)1 - eps) * wt : (T_C)0) + epc * wc;
        T_C lp = LP(c);
        T_C d = logsm ? exp(lp) * A - a : -a;
        /* nll_loss (class indices, no smoothing) leaves the other classes'
         * gradient +0.0 whatever g is, as PyTorch's nll_loss_backward does
         * (-0.0 * g would be -0.0, or NaN for an infinite g) */
        T_STORE(gr, c, !logsm && !prob && c != t ? (T_C)0 : d * gi);
        if (want_gt)
            T_STORE(gt, i * C + c, -(((T_C)1 - eps) * wc * lp) * gi);
    }
}

/* Rows as ce_rows takes them. */
CLT_KERNEL(ce_rows_bw)(__global T *gx, __global T *gt, int want_gt, __global const T *x,
                       ulong x_off, __global const long *tidx, __global const T *tprob,
                       ulong t_off, int prob, __global const T *w, ulong w_off, int has_w,
                       long C, long ignore, T_C eps, int logsm, __global const T *g, ulong g_off,
                       int g_rows, __global const T *den, int has_den, ulong N, ulong chunk)
{
    size_t i0 = get_global_id(0) * chunk, i1 = min((size_t)N, i0 + (size_t)chunk);
    for (size_t i = i0; i < i1; i++)
        ce_row_bw(gx, gt, want_gt, x, x_off, tidx, tprob, t_off, prob, w, w_off, has_w, C,
                  ignore, eps, logsm, g, g_off, g_rows, den, has_den, i);
}

/* log(1 + exp(-x)) without overflow: log1p(exp(-|x|)) + max(-x, 0). */
inline T_C softplus_neg(T_C x)
{
    return log1p(exp(-fabs(x))) + fmax(-x, (T_C)0);
}

/* The pointwise losses' kinds, as src/internal.h numbers them. */
#define LK_MSE 0
#define LK_L1 1
#define LK_BCE_LOGITS 2
#define LK_SMOOTH_L1 3
#define LK_HUBER 4
#define LK_BCE 5
#define LK_KL_DIV 6

/* 0.5 in T (no double literals where there is no double), and PyTorch's
 * EPSILON of binary cross entropy's gradient, the float 1e-12 in both
 * dtypes (torch's float64 gradient at x = 0 is 1 / 1e-12f, 1000000003995.8). */
#if T_ID == 1
#define LK_HALF 0.5
#else
#define LK_HALF 0.5f
#endif
#define LK_EPS ((T_C)1e-12f)

/* x log(y) as torch.xlogy: NaN for a NaN y, 0 for x == 0, even where
 * log(y) is infinite. */
inline T_C xlogy(T_C x, T_C y)
{
    return isnan(y) ? y : x == 0 ? (T_C)0 : x * log(y);
}

/* Elementwise loss of x and y: kind 0 mse, 1 l1, 2 binary cross entropy
 * with logits (pos_weight pw[k % pwn] when has_pw), 3 smooth_l1 (beta prm),
 * 4 huber (delta prm), 5 binary cross entropy of probabilities (weight
 * pw[k % pwn] when has_pw; an x outside [0, 1], NaN too, is recorded in
 * err as op's value error, dim -4, and its loss is NaN), 6 kl_div
 * (log_target when prm is not 0). */
CLT_KERNEL(ew_loss)(__global T *out, __global const T *x, ulong x_off, __global const T *y,
                    ulong y_off, __global const T *pw, ulong pw_off, ulong pwn, int has_pw,
                    int kind, T_C prm, __global clt_index_error *err, int op, ulong n)
{
    size_t k = get_global_id(0);
    if (k >= n)
        return;
    T_C a = T_LOAD(x, x_off + k), b = T_LOAD(y, y_off + k), r;
    if (kind == LK_MSE) {
        T_C d = a - b;
        r = d * d;
    } else if (kind == LK_L1) {
        r = fabs(a - b);
    } else if (kind == LK_SMOOTH_L1) {
        /* PyTorch's form; beta 0 never divides (z < 0 is false) */
        T_C z = fabs(a - b);
        r = z < prm ? LK_HALF * z * z / prm : z - LK_HALF * prm;
    } else if (kind == LK_HUBER) {
        T_C z = fabs(a - b);
        r = z < prm ? LK_HALF * z * z : prm * (z - LK_HALF * prm);
    } else if (kind == LK_BCE) {
        if (!(a >= 0 && a <= 1)) {
            clt_report_error(err, op, -4, (long)k, (long)n);
            r = (T_C)NAN;
        } else {
            /* PyTorch's: each log clamped at -100, so that 0 * log(0)
             * gives 0 and a certain wrong answer 100 */
            r = (b - (T_C)1) * fmax(log((T_C)1 - a), (T_C)-100) - b * fmax(log(a), (T_C)-100);
            if (has_pw)
                r *= T_LOAD(pw, pw_off + k % pwn);
        }
    } else if (kind == LK_KL_DIV) {
        /* PyTorch 1.13's forms: exp(y) (y - x) for a log target (prm not
         * 0), else xlogy(y, y) - y x (0 where y is 0, NaN where it is
         * negative) */
        r = prm != 0 ? exp(b) * (b - a) : xlogy(b, b) - b * a;
    } else if (has_pw) {
        T_C p = T_LOAD(pw, pw_off + k % pwn);
        r = ((T_C)1 - b) * a + ((T_C)1 + (p - (T_C)1) * b) * softplus_neg(a);
    } else {
        /* without pos_weight no (p - 1) y term, as PyTorch: 0 * inf would
         * make an infinite target's loss NaN */
        r = ((T_C)1 - b) * a + softplus_neg(a);
    }
    T_STORE(out, k, r);
}

/* smooth_l1's (huber's) gradient for the difference d, as PyTorch's
 * smooth_l1_backward (huber_loss_backward): -g (-g delta) for d <= -prm,
 * g (g delta) for d >= prm, else d g / beta (d g). */
inline T_C kink_bw(int kind, T_C d, T_C g, T_C prm)
{
    if (kind == LK_SMOOTH_L1)
        return d <= -prm ? -g : d >= prm ? g : d * g / prm;
    return d <= -prm ? -g * prm : d >= prm ? g * prm : d * g;
}

/* Gradients of ew_loss from g (g_elems: one value per element, otherwise
 * g[0]) divided by `div` (n for a mean, the batch for kl_div's batchmean,
 * else 1): gx (want_x) and gy (want_y) in one launch, with PyTorch's
 * formulas (its *_backward kernels and, for kl_div, the gradients of the
 * ops it is made of). */
CLT_KERNEL(ew_loss_bw)(__global T *gx, __global T *gy, int want_x, int want_y,
                       __global const T *x, ulong x_off, __global const T *y, ulong y_off,
                       __global const T *pw, ulong pw_off, ulong pwn, int has_pw, int kind,
                       T_C prm, __global const T *g, ulong g_off, int g_elems, T_C div, ulong n)
{
    size_t k = get_global_id(0);
    if (k >= n)
        return;
    T_C a = T_LOAD(x, x_off + k), b = T_LOAD(y, y_off + k);
    T_C gk = T_LOAD(g, g_off + (g_elems ? k : 0)) / div;
    T_C dx, dy;
    if (kind == LK_MSE) {
        dx = (T_C)2 * (a - b) * gk;
        dy = -dx;
    } else if (kind == LK_L1) {
        T_C d = a - b;
        /* PyTorch's sgn: 0 at 0 (of d's sign) and for NaN */
        T_C s = d > 0 ? (T_C)1 : d < 0 ? (T_C)-1 : d == 0 ? d : (T_C)0;
        dx = s * gk;
        dy = -dx;
    } else if (kind == LK_SMOOTH_L1 || kind == LK_HUBER) {
        /* PyTorch takes y's gradient as x's with the two swapped: with
         * beta 0 both are -g where x == y */
        dx = kink_bw(kind, a - b, gk, prm);
        dy = kink_bw(kind, b - a, gk, prm);
    } else if (kind == LK_BCE) {
        /* PyTorch's: the denominator at least 1e-12, so that x at 0 or 1
         * gives 0 (x == y) or +-1e12 g; y's gradient is -logit(x) */
        T_C w = has_pw ? T_LOAD(pw, pw_off + k % pwn) : (T_C)1;
        dx = gk * (a - b) / fmax(((T_C)1 - a) * a, LK_EPS) * w;
        dy = -log(a / ((T_C)1 - a)) * gk * w;
    } else if (kind == LK_KL_DIV) {
        if (prm != 0) {
            T_C e = exp(b);
            dx = -(gk * e);
            dy = gk * e * (b - a) + gk * e;
        } else {
            /* xlogy(y, y)'s gradient is xlogy(y != 0, y) + y / y: NaN at
             * y == 0, as in PyTorch */
            dx = -(gk * b);
            dy = gk * xlogy(b != 0 ? (T_C)1 : (T_C)0, b) + gk * b / b - gk * a;
        }
    } else if (has_pw) {
        T_C p = T_LOAD(pw, pw_off + k % pwn);
        T_C sg = (T_C)1 / ((T_C)1 + exp(-a));
        T_C t = p * b; /* PyTorch's ((t + 1 - y) sigmoid(x) - t) g */
        dx = ((t + (T_C)1 - b) * sg - t) * gk;
        /* log_sigmoid(-x) - p log_sigmoid(x), PyTorch's form: finite p
         * and an infinite x give inf, not inf - inf */
        dy = (p * softplus_neg(a) - softplus_neg(-a)) * gk;
    } else {
        dx = ((T_C)1 / ((T_C)1 + exp(-a)) - b) * gk;
        dy = -a * gk;
    }
    if (want_x)
        T_STORE(gx, k, dx);
    if (want_y)
        T_STORE(gy, k, dy);
}

/* ---- CTC: torch's forward-backward (alpha/beta) recursions in log space ---------------
 * Over the contiguous log-probabilities lp [Tm, N, C]; the targets are
 * concatenated (sample b's tl[b] labels from tg[off[b]]), the extended
 * sequence l' puts a blank before, between and after them (S = 2 tl + 1
 * states).  la and lb are [N, Tm, Sm] work areas.  ctc_alpha_wg and
 * ctc_beta_wg take a work-group per sample, its states spread over the
 * work-items (s, s + lws, ...), a barrier between time steps, as torch's
 * LossCTC.cu; ctc_grad_map then takes one work-item per (t, b, c), a
 * log-sum-exp over the states whose label is c.  Each state and each
 * gradient element comes from the same expressions in the same order
 * whatever the work-group size, so the results are the same bits on every
 * device.  ctc_alpha and ctc_grad, one work-item per sample doing it all
 * in turn, give the same bits: they are kept as the benchmarks' baseline
 * (CLTENSOR_CTC=serial). */

#define CTC_NEGINF (-(T_C)INFINITY)

/* log(exp(a) + exp(b) + exp(c)), as torch's recursions: the maximum is
 * taken out (0 when all three are -inf). */
inline T_C ctc_lse3(T_C a, T_C b2, T_C c)
{
    T_C m = fmax(a, fmax(b2, c));
    if (m == CTC_NEGINF)
        m = 0;
    return log(exp(a - m) + exp(b2 - m) + exp(c - m)) + m;
}

inline T_C ctc_lse2(T_C a, T_C b2)
{
    T_C m = fmax(a, b2);
    if (m == CTC_NEGINF)
        return CTC_NEGINF;
    return log(exp(a - m) + exp(b2 - m)) + m;
}

/* The label of state s of the extended sequence of the targets y. */
inline long ctc_prime(__global const long *y, long blank, long s)
{
    return s % 2 == 0 ? blank : y[s / 2];
}

/* alpha of state s at a step t > 0 from the row prev of step t - 1; lpt:
 * the sample's log-probabilities at t. */
inline T_C ctc_alpha_at(__global const T *prev, __global const T *lpt, __global const long *y,
                        long blank, long s)
{
    long c = ctc_prime(y, blank, s);
    T_C l1 = T_LOAD(prev, s);
    T_C l2 = s > 0 ? T_LOAD(prev, s - 1) : CTC_NEGINF;
    T_C l3 = (s > 1 && ctc_prime(y, blank, s - 2) != c) ? T_LOAD(prev, s - 2) : CTC_NEGINF;
    return ctc_lse3(l1, l2, l3) + T_LOAD(lpt, c);
}

/* alpha of state s at t = 0 */
inline T_C ctc_alpha_first(__global const T *lpt, __global const long *y, long blank, long s)
{
    return s == 0 ? T_LOAD(lpt, blank) : s == 1 ? T_LOAD(lpt, y[0]) : CTC_NEGINF;
}

/* beta of state s of S at a step t, whose row (of Sm) is row, from the
 * next step's row after it (none at the input's last step, last). */
inline T_C ctc_beta_at(__global const T *row, long Sm, int last, __global const T *lpt,
                       __global const long *y, long blank, long s, long S)
{
    long c = ctc_prime(y, blank, s);
    if (last)
        return s >= S - 2 ? T_LOAD(lpt, c) : CTC_NEGINF;
    __global const T *next = row + Sm;
    T_C l1 = T_LOAD(next, s);
    T_C l2 = s < S - 1 ? T_LOAD(next, s + 1) : CTC_NEGINF;
    T_C l3 = (s < S - 2 && ctc_prime(y, blank, s + 2) != c) ? T_LOAD(next, s + 2) : CTC_NEGINF;
    return ctc_lse3(l1, l2, l3) + T_LOAD(lpt, c);
}

/* The loss from the last step's row of alphas: -log(alpha[S - 1] +
 * alpha[S - 2]). */
inline T_C ctc_nll(__global const T *last, long L)
{
    long S = 2 * L + 1;
    T_C l1 = T_LOAD(last, S - 1), l2 = L > 0 ? T_LOAD(last, S - 2) : CTC_NEGINF;
    T_C m = fmax(l1, l2);
    if (m == CTC_NEGINF)
        m = 0;
    return -(log(exp(l1 - m) + exp(l2 - m)) + m);
}

/* The loss of an empty input. */
#define CTC_EMPTY_NLL(L) ((L) == 0 ? (T_C)0 : (T_C)INFINITY)

/* ix holds, per sample, the targets' offsets, the input and target
 * lengths, then the concatenated targets. */
#define CTC_IX                                                                                \
    __global const long *off = ix, *il = ix + N, *tl = ix + 2 * N, *tg = ix + 3 * N
/* sample b's log-probabilities at step t */
#define CTC_LPT(t) (lp + ((ulong)(t) * N + b) * C)

/* The alphas of sample get_global_id(0) / get_local_size(0), its states
 * over the work-group's items, and its loss.  No work-item returns early
 * (an empty input runs no step instead): with returns before its barriers
 * (taken by a whole group or by none) this kernel looped forever on PoCL
 * 3.1's pthread device. */
__kernel void ctc_alpha_wg(__global T *nll, __global T *la, __global const T *lp, long Tm,
                           long N, long C, long Sm, __global const long *ix, long blank)
{
    CTC_IX;
    size_t lws = get_local_size(0), lid = get_local_id(0), b = get_global_id(0) / lws;
    long L = tl[b], S = 2 * L + 1, ti = il[b];
    __global const long *y = tg + off[b];
    __global T *a = la + (ulong)b * Tm * Sm;
    for (long s = (long)lid; ti > 0 && s < S; s += (long)lws)
        T_STORE(a, s, ctc_alpha_first(CTC_LPT(0), y, blank, s));
    for (long t = 1; t < ti; t++) {
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (long s = (long)lid; s < S; s += (long)lws)
            T_STORE(a, t * Sm + s, ctc_alpha_at(a + (t - 1) * Sm, CTC_LPT(t), y, blank, s));
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0)
        T_STORE(nll, b, ti == 0 ? CTC_EMPTY_NLL(L) : ctc_nll(a + (ti - 1) * Sm, L));
}

/* The betas of sample get_global_id(0) / get_local_size(0), as
 * ctc_alpha_wg; none for an empty input, or an infinite loss with
 * zero_inf (ctc_grad_map reads none there). */
__kernel void ctc_beta_wg(__global T *lb, __global const T *nll, __global const T *lp, long Tm,
                          long N, long C, long Sm, __global const long *ix, long blank,
                          int zero_inf)
{
    CTC_IX;
    size_t lws = get_local_size(0), lid = get_local_id(0), b = get_global_id(0) / lws;
    long L = tl[b], S = 2 * L + 1, ti = il[b];
    if (zero_inf && isinf(T_LOAD(nll, b)))
        ti = 0;
    __global const long *y = tg + off[b];
    __global T *be = lb + (ulong)b * Tm * Sm;
    for (long t = ti - 1; t >= 0; t--) {
        if (t < ti - 1)
            barrier(CLK_GLOBAL_MEM_FENCE);
        for (long s = (long)lid; s < S; s += (long)lws)
            T_STORE(be, t * Sm + s,
                    ctc_beta_at(be + t * Sm, Sm, t == ti - 1, CTC_LPT(t), y, blank, s, S));
    }
}

/* grad [Tm, N, C] (contiguous), one work-item per element (t, b, c):
 * torch's (exp(lp) - exp(lse_s(la + lb) + nll - lp)) gr[b] over the states
 * s whose label is c, taken from the last state down; 0 past the input's
 * length, and 0 throughout for an infinite loss with zero_inf.  gr[b]:
 * the gradient of sample b's loss (its share of the reduced loss). */
__kernel void ctc_grad_map(__global T *grad, __global const T *lb, __global const T *la,
                           __global const T *nll, __global const T *gr, __global const T *lp,
                           long Tm, long N, long C, long Sm, __global const long *ix, long blank,
                           int zero_inf)
{
    CTC_IX;
    size_t i = get_global_id(0);
    if (i >= (size_t)(Tm * N * C))
        return;
    long c = (long)(i % (size_t)C), b = (long)(i / (size_t)C % (size_t)N);
    long t = (long)(i / ((size_t)C * (size_t)N));
    long L = tl[b], S = 2 * L + 1, ti = il[b];
    T_C nl = T_LOAD(nll, b);
    if (t >= ti || (zero_inf && isinf(nl))) {
        T_STORE(grad, i, (T_C)0);
        return;
    }
    __global const long *y = tg + off[b];
    __global const T *a = la + ((ulong)b * Tm + t) * Sm, *be = lb + ((ulong)b * Tm + t) * Sm;
    /* a label other than the blank sits only at odd states */
    long step = c == blank ? 1 : 2, top = c == blank ? S - 1 : S - 2;
    T_C res = CTC_NEGINF;
    for (long s = top; s >= 0; s -= step)
        if (ctc_prime(y, blank, s) == c)
            res = ctc_lse2(res, T_LOAD(a, s) + T_LOAD(be, s));
    T_C l = T_LOAD(lp, i);
    T_STORE(grad, i, (exp(l) - exp(res + nl - l)) * T_LOAD(gr, b));
}

/* ctc_alpha_wg's alphas and loss with one work-item per sample (the
 * benchmarks' baseline). */
__kernel void ctc_alpha(__global T *nll, __global T *la, __global const T *lp, long Tm, long N,
                        long C, long Sm, __global const long *ix, long blank)
{
    CTC_IX;
    size_t b = get_global_id(0);
    if (b >= (size_t)N)
        return;
    long L = tl[b], S = 2 * L + 1, ti = il[b];
    __global const long *y = tg + off[b];
    __global T *a = la + (ulong)b * Tm * Sm;
    if (ti == 0) {
        T_STORE(nll, b, CTC_EMPTY_NLL(L));
        return;
    }
    for (long s = 0; s < S; s++)
        T_STORE(a, s, ctc_alpha_first(CTC_LPT(0), y, blank, s));
    for (long t = 1; t < ti; t++)
        for (long s = 0; s < S; s++)
            T_STORE(a, t * Sm + s, ctc_alpha_at(a + (t - 1) * Sm, CTC_LPT(t), y, blank, s));
    T_STORE(nll, b, ctc_nll(a + (ti - 1) * Sm, L));
}

/* ctc_beta_wg and ctc_grad_map with one work-item per sample (the
 * benchmarks' baseline): the betas of each step added into grad as they
 * come, from the last state down. */
__kernel void ctc_grad(__global T *grad, __global T *lb, __global const T *la,
                       __global const T *nll, __global const T *gr, __global const T *lp,
                       long Tm, long N, long C, long Sm, __global const long *ix, long blank,
                       int zero_inf)
{
    CTC_IX;
    size_t b = get_global_id(0);
    if (b >= (size_t)N)
        return;
    long L = tl[b], S = 2 * L + 1, ti = il[b];
    __global const long *y = tg + off[b];
    __global const T *a = la + (ulong)b * Tm * Sm;
    __global T *be = lb + (ulong)b * Tm * Sm;
    T_C nl = T_LOAD(nll, b), g = T_LOAD(gr, b);
#define CTC_G(t, c) (((ulong)(t) * N + b) * C + (c))
    for (long t = 0; t < Tm; t++)
        for (long c = 0; c < C; c++)
            T_STORE(grad, CTC_G(t, c), t < ti ? CTC_NEGINF : (T_C)0);
    if (ti == 0)
        return;
    if (zero_inf && isinf(nl)) {
        for (long t = 0; t < ti; t++)
            for (long c = 0; c < C; c++)
                T_STORE(grad, CTC_G(t, c), (T_C)0);
        return;
    }
    for (long t = ti - 1; t >= 0; t--)
        for (long s = S - 1; s >= 0; s--) {
            long c = ctc_prime(y, blank, s);
            T_C v = ctc_beta_at(be + t * Sm, Sm, t == ti - 1, CTC_LPT(t), y, blank, s, S);
            T_STORE(be, t * Sm + s, v);
            T_C lcab = T_LOAD(a, t * Sm + s) + v;
            T_STORE(grad, CTC_G(t, c), ctc_lse2(T_LOAD(grad, CTC_G(t, c)), lcab));
        }
    for (long t = 0; t < ti; t++)
        for (long c = 0; c < C; c++) {
            T_C l = T_LOAD(CTC_LPT(t), c), res = T_LOAD(grad, CTC_G(t, c));
            T_STORE(grad, CTC_G(t, c), (exp(l) - exp(res + nl - l)) * g);
        }
#undef CTC_G
}
