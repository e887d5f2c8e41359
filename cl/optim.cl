/* optim.cl: the optimizers' updates, one launch per parameter tensor (or
 * over several parameters per launch: the *_multi kernels), for a
 * floating dtype T (float or double storage).  Each work-item updates
 * `chunk` consecutive elements (1 on GPUs), in place.  The parameter starts
 * p_off elements into its buffer (it may be a detached slice, or lie inside
 * a caller's buffer); its gradient and the state tensors are buffers of
 * their own and start at 0.  The formulas and their order of operations
 * follow PyTorch's single-tensor implementations (torch/optim/sgd.py,
 * adam.py, rmsprop.py, adagrad.py, adamax.py, nadam.py, radam.py, adadelta.py,
 * rprop.py, asgd.py) and its
 * CPU kernels (addcmul: self +
 * value * t1 * t2; addcdiv: self + value * t1 / t2). */

#define CHUNK_LOOP                                                             \
    ulong i = get_global_id(0) * chunk;                                        \
    ulong end_ = min(i + chunk, n);                                            \
    for (; i < end_; i++)

/* SGD: d = g + wd p; with momentum, buf = first ? d : momentum buf +
 * (1 - dampening) d, and d = nesterov ? d + momentum buf : buf; p -= lr d.
 * buf is not read without momentum.  The host computes 1 - dampening (in
 * double, as PyTorch's Python does): in float32 the difference would carry
 * the rounding of dampening itself. */
static inline void sgd_elem(__global T *p, __global const T *g, __global T *buf, ulong i,
                            T_C lr, T_C wd, T_C momentum, T_C undamped, int nesterov, int first)
{
    T_C pi = T_LOAD(p, i), d = T_LOAD(g, i);
    if (wd != (T_C)0)
        d = d + wd * pi;
    if (momentum != (T_C)0) {
        T_C b = first ? d : momentum * T_LOAD(buf, i) + undamped * d;
        T_STORE(buf, i, b);
        d = nesterov ? d + momentum * b : b;
    }
    T_STORE(p, i, pi - lr * d);
}

CLT_KERNEL(sgd_step)(__global T *p, __global const T *g, __global T *buf, ulong p_off,
                     ulong n, ulong chunk, T_C lr, T_C wd, T_C momentum,
                     T_C undamped, int nesterov, int first)
{
    p += p_off;
    CHUNK_LOOP
        sgd_elem(p, g, buf, i, lr, wd, momentum, undamped, nesterov, first);
}

/* SGD without momentum on a sparse gradient, as torch 1.13's CPU
 * param.add_(grad, alpha=-lr) with grad sparse and not coalesced: each
 * entry k in turn, p[rows[k]] = fma(vals[k], alpha, p[rows[k]]) (ATen's
 * AVX2 add kernel fuses the multiply-add), so that a row looked up twice
 * gets two rounded updates, in the order of the entries.  One work-item
 * per column of the rows (width elements each), which walks every entry:
 * the only writer of its column. */
CLT_KERNEL(sgd_sparse)(__global T *p, __global const long *rows, __global const T *vals,
                       ulong p_off, ulong rows_off, ulong vals_off, long nnz, ulong width,
                       T_C alpha)
{
    ulong c = get_global_id(0);
    if (c >= width)
        return;
    p += p_off;
    rows += rows_off;
    vals += vals_off;
    for (long k = 0; k < nnz; k++) {
        ulong d = (ulong)rows[k] * width + c;
        T_STORE(p, d, fma(T_LOAD(vals, (ulong)k * width + c), alpha, T_LOAD(p, d)));
    }
}

/* Adam and AdamW (decoupled weight decay): m = lerp(m, g, 1 - beta1),
 * v = beta2 v + (1 - beta2) g g, denom = sqrt(v or max(vmax, v)) /
 * sqrt(1 - beta2^t) + eps, p -= lr / (1 - beta1^t) * m / denom.  The host
 * passes w1 = 1 - beta1, w2 = 1 - beta2, decay = 1 - lr wd (AdamW),
 * step_size = lr / (1 - beta1^t) and bc2_sqrt = sqrt(1 - beta2^t), all
 * computed in double as PyTorch's Python computes them: 1 - beta2 taken in
 * float32 from beta2 = 0.999 is 1.3e-5 off, which biased every update.  The
 * lerp is PyTorch's, exact at weight 1 (beta1 = 0).  vmax is read only with
 * amsgrad. */
static inline void adam_elem(__global T *p, __global const T *g, __global T *m, __global T *v,
                             __global T *vmax, ulong i, T_C decay, T_C w1, T_C beta2, T_C w2,
                             T_C eps, T_C wd, int decoupled, int amsgrad, T_C step_size,
                             T_C bc2_sqrt)
{
    T_C pi = T_LOAD(p, i), gi = T_LOAD(g, i);
    if (wd != (T_C)0) {
        if (decoupled)
            pi = pi * decay;
        else
            gi = gi + wd * pi;
    }
    T_C mi = T_LOAD(m, i);
    mi = w1 < (T_C)0.5 ? mi + w1 * (gi - mi) : gi - (gi - mi) * ((T_C)1 - w1);
    T_C vi = beta2 * T_LOAD(v, i) + w2 * gi * gi;
    T_STORE(m, i, mi);
    T_STORE(v, i, vi);
    if (amsgrad) {
        vi = fmax(T_LOAD(vmax, i), vi);
        T_STORE(vmax, i, vi);
    }
    T_C denom = sqrt(vi) / bc2_sqrt + eps;
    T_STORE(p, i, pi - step_size * (mi / denom));
}

CLT_KERNEL(adam_step)(__global T *p, __global const T *g, __global T *m, __global T *v,
                      __global T *vmax, ulong p_off, ulong n, ulong chunk, T_C decay,
                      T_C w1, T_C beta2, T_C w2, T_C eps, T_C wd, int decoupled,
                      int amsgrad, T_C step_size, T_C bc2_sqrt)
{
    p += p_off;
    CHUNK_LOOP
        adam_elem(p, g, m, v, vmax, i, decay, w1, beta2, w2, eps, wd, decoupled, amsgrad,
                  step_size, bc2_sqrt);
}

/* ---- several parameters per launch ------------------------------------------------- */

/* The steps over up to MULTI_K parameters in one launch (torch's
 * multi_tensor_apply does the same in chunks of tensors): slot k has its
 * own buffers (x0 .. x7 for each operand x), its parameter's offset and
 * element count in the table `s`, and ceil(n / chunk) work-items, the
 * slots' items one after the other; unused slots have n 0.  Every slot
 * shares the scalars (the host launches together only parameters of one
 * group with the same update count), and each element goes through the
 * same function as in the kind's per-parameter kernel, so the results
 * are the same bits.  MULTI_K and clt_optim_slots must match src/optim/optim.c. */
#define MULTI_K 8
typedef struct clt_optim_slots {
    ulong off[MULTI_K], n[MULTI_K];
} clt_optim_slots;

#define MULTI_PARAMS(Q, x) Q x##0, Q x##1, Q x##2, Q x##3, Q x##4, Q x##5, Q x##6, Q x##7
/* SGD: one case per slot, each naming its own buffers (picking them from
 * arrays indexed by the slot ran SGD's loop over large parameters about
 * 20% slower on PoCL).  Adam: from arrays (one case per slot made each
 * launch over small parameters two to three times slower). */
#define MULTI_SWITCH(k, CASE)                                                  \
    switch (k) {                                                               \
        CASE(0) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7)        \
    }
#define MULTI_LIST(x) {x##0, x##1, x##2, x##3, x##4, x##5, x##6, x##7}
/* This work-item's slot (-1: none) and its first element *i, and the end
 * of its elements *end. */
static inline int multi_slot(const clt_optim_slots *s, ulong chunk, ulong *i, ulong *end)
{
    ulong item = get_global_id(0);
    for (int k = 0; k < MULTI_K; k++) {
        ulong items = (s->n[k] + chunk - 1) / chunk;
        if (item < items) {
            *i = item * chunk;
            *end = min(*i + chunk, s->n[k]);
            return k;
        }
        item -= items;
    }
    return -1;
}

/* Each kind names its state operands once, as an X-macro (ADAM_STATE(X)
 * is X(m) X(v) X(x)).  MULTI_ARGS(STATE) declares the kernel's leading
 * arguments: p, g and each state operand per slot (x0 .. x7), then the
 * slot table s and chunk.  Every *_multi kernel but SGD's opens with
 * MULTI_BEGIN(STATE): it finds this work-item's slot k and its elements
 * [i, end) (returning where it has none), declares p, g and each state
 * operand as slot k's buffer, moves p to its parameter's offset, and runs
 * the statement after it over the elements. */
#define MULTI_ARG(x) MULTI_PARAMS(__global T *, x),
#define MULTI_ARGS(STATE)                                                      \
    MULTI_PARAMS(__global T *, p), MULTI_PARAMS(__global const T *, g),        \
        STATE(MULTI_ARG) clt_optim_slots s, ulong chunk
#define MULTI_PICK(Q, x)                                                       \
    Q *x##s_[MULTI_K] = MULTI_LIST(x);                                         \
    Q *x = x##s_[k];
#define MULTI_PICK_STATE(x) MULTI_PICK(__global T, x)
#define MULTI_BEGIN(STATE)                                                     \
    ulong i, end;                                                              \
    int k = multi_slot(&s, chunk, &i, &end);                                   \
    if (k < 0)                                                                 \
        return;                                                                \
    MULTI_PICK(__global T, p)                                                  \
    MULTI_PICK(__global const T, g)                                            \
    STATE(MULTI_PICK_STATE)                                                    \
    p += s.off[k];                                                             \
    for (; i < end; i++)

#define SGD_STATE(X) X(b)
CLT_KERNEL(sgd_step_multi)(MULTI_ARGS(SGD_STATE), T_C lr, T_C wd, T_C momentum,
                           T_C undamped, int nesterov, int first)
{
    ulong i = 0, end = 0;
    int k = multi_slot(&s, chunk, &i, &end);
#define SGD_SLOT(k)                                                                        \
    case k:                                                                                \
        for (; i < end; i++)                                                               \
            sgd_elem(p##k + s.off[k], g##k, b##k, i, lr, wd, momentum, undamped, nesterov, \
                     first);                                                               \
        break;
    MULTI_SWITCH(k, SGD_SLOT)
#undef SGD_SLOT
}

#define ADAM_STATE(X) X(m) X(v) X(x)
CLT_KERNEL(adam_step_multi)(MULTI_ARGS(ADAM_STATE), T_C decay, T_C w1, T_C beta2, T_C w2,
                            T_C eps, T_C wd, int decoupled, int amsgrad, T_C step_size,
                            T_C bc2_sqrt)
{
    MULTI_BEGIN(ADAM_STATE)
        adam_elem(p, g, m, v, x, i, decay, w1, beta2, w2, eps, wd, decoupled, amsgrad,
                  step_size, bc2_sqrt);
}

/* RMSprop: g += wd p; sq = alpha sq + (1 - alpha) g g; centered: ga =
 * alpha ga + (1 - alpha) g, avg = sqrt(sq - ga ga), else avg = sqrt(sq);
 * avg += eps; with momentum, buf = momentum buf + g / avg, p += neg_lr buf,
 * else p += neg_lr g / avg.  The host passes neg_lr = -lr and w = 1 - alpha
 * (in double, as PyTorch's Python computes it).  buf and ga are read only
 * with momentum and centered. */
static inline void rmsprop_elem(__global T *p, __global const T *g, __global T *sq,
                                __global T *buf, __global T *ga, ulong i, T_C neg_lr,
                                T_C alpha, T_C w, T_C eps, T_C wd, T_C momentum, int centered)
{
    T_C pi = T_LOAD(p, i), gi = T_LOAD(g, i);
    if (wd != (T_C)0)
        gi = gi + wd * pi;
    T_C si = T_LOAD(sq, i) * alpha + w * gi * gi;
    T_STORE(sq, i, si);
    if (centered) {
        T_C ai = T_LOAD(ga, i) * alpha + w * gi;
        T_STORE(ga, i, ai);
        si = si - ai * ai;
    }
    T_C avg = sqrt(si) + eps;
    if (momentum > (T_C)0) {
        T_C b = T_LOAD(buf, i) * momentum + gi / avg;
        T_STORE(buf, i, b);
        T_STORE(p, i, pi + neg_lr * b);
    } else {
        T_STORE(p, i, pi + neg_lr * gi / avg);
    }
}

CLT_KERNEL(rmsprop_step)(__global T *p, __global const T *g, __global T *sq, __global T *buf,
                         __global T *ga, ulong p_off, ulong n, ulong chunk, T_C neg_lr,
                         T_C alpha, T_C w, T_C eps, T_C wd, T_C momentum, int centered)
{
    p += p_off;
    CHUNK_LOOP
        rmsprop_elem(p, g, sq, buf, ga, i, neg_lr, alpha, w, eps, wd, momentum, centered);
}

#define RMSPROP_STATE(X) X(sq) X(buf) X(ga)
CLT_KERNEL(rmsprop_step_multi)(MULTI_ARGS(RMSPROP_STATE), T_C neg_lr, T_C alpha, T_C w, T_C eps,
                               T_C wd, T_C momentum, int centered)
{
    MULTI_BEGIN(RMSPROP_STATE)
        rmsprop_elem(p, g, sq, buf, ga, i, neg_lr, alpha, w, eps, wd, momentum, centered);
}

/* Adagrad: g += wd p; sum += g g; p += neg_clr g / (sqrt(sum) + eps), the
 * host passing neg_clr = -lr / (1 + (t - 1) lr_decay) for the parameter's
 * t-th update. */
static inline void adagrad_elem(__global T *p, __global const T *g, __global T *sum, ulong i,
                                T_C neg_clr, T_C eps, T_C wd)
{
    T_C pi = T_LOAD(p, i), gi = T_LOAD(g, i);
    if (wd != (T_C)0)
        gi = gi + wd * pi;
    T_C si = T_LOAD(sum, i) + gi * gi;
    T_STORE(sum, i, si);
    T_STORE(p, i, pi + neg_clr * gi / (sqrt(si) + eps));
}

CLT_KERNEL(adagrad_step)(__global T *p, __global const T *g, __global T *sum, ulong p_off,
                         ulong n, ulong chunk, T_C neg_clr, T_C eps, T_C wd)
{
    p += p_off;
    CHUNK_LOOP
        adagrad_elem(p, g, sum, i, neg_clr, eps, wd);
}

#define ADAGRAD_STATE(X) X(sum)
CLT_KERNEL(adagrad_step_multi)(MULTI_ARGS(ADAGRAD_STATE), T_C neg_clr, T_C eps, T_C wd)
{
    MULTI_BEGIN(ADAGRAD_STATE)
        adagrad_elem(p, g, sum, i, neg_clr, eps, wd);
}

/* Adadelta (torch 1.13's _single_tensor_adadelta): g += wd p; s = rho s +
 * (1 - rho) g^2; delta = sqrt(a + eps) / sqrt(s + eps) g; a = rho a +
 * (1 - rho) delta^2; p += neg_lr delta. */
static inline void adadelta_elem(__global T *p, __global const T *g, __global T *sq,
                                 __global T *acc, ulong i, T_C neg_lr, T_C rho, T_C w, T_C eps,
                                 T_C wd)
{
    T_C pi = T_LOAD(p, i), gi = T_LOAD(g, i);
    if (wd != (T_C)0)
        gi = gi + wd * pi;
    T_C si = T_LOAD(sq, i) * rho + w * (gi * gi);
    T_STORE(sq, i, si);
    T_C delta = sqrt(T_LOAD(acc, i) + eps) / sqrt(si + eps) * gi;
    T_STORE(acc, i, T_LOAD(acc, i) * rho + w * (delta * delta));
    T_STORE(p, i, pi + neg_lr * delta);
}

CLT_KERNEL(adadelta_step)(__global T *p, __global const T *g, __global T *sq, __global T *acc,
                          ulong p_off, ulong n, ulong chunk, T_C neg_lr, T_C rho, T_C w,
                          T_C eps, T_C wd)
{
    p += p_off;
    CHUNK_LOOP
        adadelta_elem(p, g, sq, acc, i, neg_lr, rho, w, eps, wd);
}

#define ADADELTA_STATE(X) X(sq) X(acc)
CLT_KERNEL(adadelta_step_multi)(MULTI_ARGS(ADADELTA_STATE), T_C neg_lr, T_C rho, T_C w, T_C eps,
                                T_C wd)
{
    MULTI_BEGIN(ADADELTA_STATE)
        adadelta_elem(p, g, sq, acc, i, neg_lr, rho, w, eps, wd);
}

/* torch's sign on the CPU: 0 for 0 and NaN. */
#define SIGN(x) ((x) > (T_C)0 ? (T_C)1 : (x) < (T_C)0 ? (T_C)-1 : (T_C)0)

/* Rprop (torch 1.13's _single_tensor_rprop): f = etaplus, etaminus or 1 as
 * sign(g prev) is 1, -1 or 0; s = clamp(s f, lo, hi) (NaN stays, as
 * clamp_), s starting at lr at the first update; g = 0 where f is etaminus;
 * p -= sign(g) s; prev = g. */
static inline void rprop_elem(__global T *p, __global const T *g, __global T *prev,
                              __global T *ss, ulong i, T_C lr, T_C etaminus, T_C etaplus,
                              T_C lo, T_C hi, int first)
{
    T_C gi = T_LOAD(g, i), sg = SIGN(gi * T_LOAD(prev, i));
    T_C f = sg > (T_C)0 ? etaplus : sg < (T_C)0 ? etaminus : (T_C)1;
    T_C si = (first ? lr : T_LOAD(ss, i)) * f;
    si = si < lo ? lo : si;
    si = si > hi ? hi : si;
    T_STORE(ss, i, si);
    if (f == etaminus)
        gi = (T_C)0;
    T_STORE(p, i, T_LOAD(p, i) + -SIGN(gi) * si);
    T_STORE(prev, i, gi);
}

CLT_KERNEL(rprop_step)(__global T *p, __global const T *g, __global T *prev, __global T *ss,
                       ulong p_off, ulong n, ulong chunk, T_C lr, T_C etaminus, T_C etaplus,
                       T_C lo, T_C hi, int first)
{
    p += p_off;
    CHUNK_LOOP
        rprop_elem(p, g, prev, ss, i, lr, etaminus, etaplus, lo, hi, first);
}

#define RPROP_STATE(X) X(prev) X(ss)
CLT_KERNEL(rprop_step_multi)(MULTI_ARGS(RPROP_STATE), T_C lr, T_C etaminus, T_C etaplus, T_C lo,
                             T_C hi, int first)
{
    MULTI_BEGIN(RPROP_STATE)
        rprop_elem(p, g, prev, ss, i, lr, etaminus, etaplus, lo, hi, first);
}

/* ASGD (torch 1.13's _single_tensor_asgd): g += wd p; p = p decay (decay =
 * 1 - lambd eta); p += neg_eta g; ax = p, or with `average` ax += (p - ax)
 * mu.  eta and mu come from the host. */
static inline void asgd_elem(__global T *p, __global const T *g, __global T *ax, ulong i,
                             T_C decay, T_C neg_eta, T_C mu, T_C wd, int average)
{
    T_C pi = T_LOAD(p, i), gi = T_LOAD(g, i);
    if (wd != (T_C)0)
        gi = gi + wd * pi;
    pi = pi * decay;
    pi = pi + neg_eta * gi;
    T_STORE(p, i, pi);
    T_STORE(ax, i, average ? T_LOAD(ax, i) + (pi - T_LOAD(ax, i)) * mu : pi);
}

CLT_KERNEL(asgd_step)(__global T *p, __global const T *g, __global T *ax, ulong p_off, ulong n,
                      ulong chunk, T_C decay, T_C neg_eta, T_C mu, T_C wd, int average)
{
    p += p_off;
    CHUNK_LOOP
        asgd_elem(p, g, ax, i, decay, neg_eta, mu, wd, average);
}

#define ASGD_STATE(X) X(ax)
CLT_KERNEL(asgd_step_multi)(MULTI_ARGS(ASGD_STATE), T_C decay, T_C neg_eta, T_C mu, T_C wd,
                            int average)
{
    MULTI_BEGIN(ASGD_STATE)
        asgd_elem(p, g, ax, i, decay, neg_eta, mu, wd, average);
}

/* ---- Adamax, NAdam, RAdam ---------------------------------------------------------- */

/* The first moment of Adamax, NAdam and RAdam (exp_avg.mul_(beta1).add_(g,
 * alpha=1 - beta1)), w1 = 1 - beta1 from the host. */
#define FIRST_MOMENT(m, i, beta1, w1, gi) (T_LOAD(m, i) * (beta1) + (w1) * (gi))

/* Adamax: g += wd p; m = beta1 m + (1 - beta1) g; u = max(beta2 u, |g| +
 * eps), NaN winning as in torch.amax (fmax would drop it); p += neg_clr m /
 * u, the host passing neg_clr = -lr / (1 - beta1^t). */
static inline void adamax_elem(__global T *p, __global const T *g, __global T *m, __global T *u,
                               ulong i, T_C beta1, T_C w1, T_C beta2, T_C eps, T_C wd,
                               T_C neg_clr)
{
    T_C pi = T_LOAD(p, i), gi = T_LOAD(g, i);
    if (wd != (T_C)0)
        gi = gi + wd * pi;
    T_C mi = FIRST_MOMENT(m, i, beta1, w1, gi);
    T_C a = T_LOAD(u, i) * beta2, b = fabs(gi) + eps;
    T_C ui = isnan(a) || a > b ? a : b;
    T_STORE(m, i, mi);
    T_STORE(u, i, ui);
    T_STORE(p, i, pi + neg_clr * mi / ui);
}

CLT_KERNEL(adamax_step)(__global T *p, __global const T *g, __global T *m, __global T *u,
                        ulong p_off, ulong n, ulong chunk, T_C beta1, T_C w1, T_C beta2,
                        T_C eps, T_C wd, T_C neg_clr)
{
    p += p_off;
    CHUNK_LOOP
        adamax_elem(p, g, m, u, i, beta1, w1, beta2, eps, wd, neg_clr);
}

#define ADAMAX_STATE(X) X(m) X(u)
CLT_KERNEL(adamax_step_multi)(MULTI_ARGS(ADAMAX_STATE), T_C beta1, T_C w1, T_C beta2, T_C eps,
                              T_C wd, T_C neg_clr)
{
    MULTI_BEGIN(ADAMAX_STATE)
        adamax_elem(p, g, m, u, i, beta1, w1, beta2, eps, wd, neg_clr);
}

/* NAdam: g += wd p; m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2)
 * g g; denom = sqrt(v / bc2) + eps; p += c_g g / denom, then p += c_m m /
 * denom (two roundings, as torch's two addcdiv_), the host passing bc2 = 1
 * - beta2^t and the coefficients from mu_product (-lr (1 - mu) / (1 -
 * mu_product), -lr mu_next / (1 - mu_product_next)). */
static inline void nadam_elem(__global T *p, __global const T *g, __global T *m, __global T *v,
                              ulong i, T_C beta1, T_C w1, T_C beta2, T_C w2, T_C eps, T_C wd,
                              T_C bc2, T_C c_g, T_C c_m)
{
    T_C pi = T_LOAD(p, i), gi = T_LOAD(g, i);
    if (wd != (T_C)0)
        gi = gi + wd * pi;
    T_C mi = FIRST_MOMENT(m, i, beta1, w1, gi);
    T_C vi = T_LOAD(v, i) * beta2 + w2 * gi * gi;
    T_STORE(m, i, mi);
    T_STORE(v, i, vi);
    T_C denom = sqrt(vi / bc2) + eps;
    pi = pi + c_g * gi / denom;
    T_STORE(p, i, pi + c_m * mi / denom);
}

CLT_KERNEL(nadam_step)(__global T *p, __global const T *g, __global T *m, __global T *v,
                       ulong p_off, ulong n, ulong chunk, T_C beta1, T_C w1, T_C beta2,
                       T_C w2, T_C eps, T_C wd, T_C bc2, T_C c_g, T_C c_m)
{
    p += p_off;
    CHUNK_LOOP
        nadam_elem(p, g, m, v, i, beta1, w1, beta2, w2, eps, wd, bc2, c_g, c_m);
}

#define NADAM_STATE(X) X(m) X(v)
CLT_KERNEL(nadam_step_multi)(MULTI_ARGS(NADAM_STATE), T_C beta1, T_C w1, T_C beta2, T_C w2, T_C eps,
                             T_C wd, T_C bc2, T_C c_g, T_C c_m)
{
    MULTI_BEGIN(NADAM_STATE)
        nadam_elem(p, g, m, v, i, beta1, w1, beta2, w2, eps, wd, bc2, c_g, c_m);
}

/* RAdam: g += wd p; m and v as NAdam's; with rectify (torch's rho_t > 5,
 * decided on the host), p -= m / bc1 * lr * (bc2_sqrt / (sqrt(v) + eps)) *
 * rect, else p -= m / bc1 * lr; the host passing bc1 = 1 - beta1^t,
 * bc2_sqrt = sqrt(1 - beta2^t) and rect. */
static inline void radam_elem(__global T *p, __global const T *g, __global T *m, __global T *v,
                              ulong i, T_C beta1, T_C w1, T_C beta2, T_C w2, T_C eps, T_C wd,
                              T_C lr, T_C bc1, T_C bc2_sqrt, T_C rect, int rectify)
{
    T_C pi = T_LOAD(p, i), gi = T_LOAD(g, i);
    if (wd != (T_C)0)
        gi = gi + wd * pi;
    T_C mi = FIRST_MOMENT(m, i, beta1, w1, gi);
    T_C vi = T_LOAD(v, i) * beta2 + w2 * gi * gi;
    T_STORE(m, i, mi);
    T_STORE(v, i, vi);
    T_C d = mi / bc1 * lr;
    if (rectify)
        d = d * (bc2_sqrt / (sqrt(vi) + eps)) * rect;
    T_STORE(p, i, pi - d);
}

CLT_KERNEL(radam_step)(__global T *p, __global const T *g, __global T *m, __global T *v,
                       ulong p_off, ulong n, ulong chunk, T_C beta1, T_C w1, T_C beta2,
                       T_C w2, T_C eps, T_C wd, T_C lr, T_C bc1, T_C bc2_sqrt, T_C rect,
                       int rectify)
{
    p += p_off;
    CHUNK_LOOP
        radam_elem(p, g, m, v, i, beta1, w1, beta2, w2, eps, wd, lr, bc1, bc2_sqrt, rect,
                   rectify);
}

#define RADAM_STATE(X) X(m) X(v)
CLT_KERNEL(radam_step_multi)(MULTI_ARGS(RADAM_STATE), T_C beta1, T_C w1, T_C beta2, T_C w2, T_C eps,
                             T_C wd, T_C lr, T_C bc1, T_C bc2_sqrt, T_C rect, int rectify)
{
    MULTI_BEGIN(RADAM_STATE)
        radam_elem(p, g, m, v, i, beta1, w1, beta2, w2, eps, wd, lr, bc1, bc2_sqrt, rect,
                   rectify);
}

/* GradScaler's unscale of one gradient before the step (torch's
 * _amp_foreach_non_finite_check_and_unscale_): g *= inv_scale (left as it
 * is where inv_scale is 1), and found_inf[0] = 1 where any element was inf
 * or NaN before.  inv_scale is float32, as torch's (the reciprocal of the
 * scale in double, rounded); the product is taken in T's compute type.
 * Every item that finds one writes the same 1, so their race is harmless;
 * none writes 0, so the gradients of one device share one flag. */
CLT_KERNEL(amp_unscale)(__global T *g, __global float *found_inf, ulong g_off, ulong n,
                        ulong chunk, float inv_scale)
{
    g += g_off;
    int bad = 0;
    CHUNK_LOOP {
        T_C v = T_LOAD(g, i);
        bad |= !isfinite(v);
        if (inv_scale != 1.0f)
            T_STORE(g, i, v * (T_C)inv_scale);
    }
    if (bad)
        found_inf[0] = 1.0f;
}
