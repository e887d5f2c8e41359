/* autograd.h: what the files of src/autograd share: the graph's nodes, the
 * recording of an op, and small helpers for backward formulas. */
#ifndef CLT_AUTOGRAD_H
#define CLT_AUTOGRAD_H

#include "internal.h"

typedef struct clt__node clt__node;

/* A backward formula: from g, the gradient of the node's output, computes
 * gin[i] for each input i that needs one (CLT__NEED), as new tensors.  The
 * engine reduces each gin[i] to its input's shape (broadcasting) and dtype,
 * so a formula works in the output's broadcast shape and dtype. */
typedef clt_status (*clt__backward_fn)(clt__node *n, const clt_tensor *g, clt_tensor **gin);

/* One input of a node: where its gradient goes, and what the input looked
 * like (the gradient is reduced back to it). */
typedef struct clt__edge {
    clt__node *node;   /* the input's grad_fn (a reference), or NULL */
    int slot;          /* which of node's outputs the input is */
    clt_tensor *leaf;  /* a leaf that requires grad (a reference), or NULL */
    clt_device *dev;
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
} clt__edge;

#define CLT__SAVED_MAX 6

struct clt__node {
    int refs; /* atomic: output tensors and consumer nodes */
    uint64_t seq; /* creation order; backward runs newest first */
    const char *name; /* "MulBackward0", as PyTorch names them */
    clt__backward_fn backward;
    /* Tensors the formula reads: handles on the data without autograd
     * state, with the storage versions they had when saved. */
    clt_tensor *saved[CLT__SAVED_MAX];
    uint64_t saved_version[CLT__SAVED_MAX];
    int nsaved;
    bool released; /* a backward pass without retain_graph freed them */
    /* What the formula needs besides tensors. */
    double s[3];
    int64_t i[2 * CLT_MAX_DIMS + 2];
    /* Hooks of the tensors the node computed (clt_tensor_register_hook,
     * clt_retain_grad), in registration order. */
    clt_hook *hooks;
    /* A node with several outputs (a checkpoint): nout, their gradients
     * past the first (gbuf), and what its formula needs, released with
     * ctx_free (when the pass frees the saved tensors, or with the node). */
    int nout;
    clt_tensor **gmore;
    void *ctx;
    void (*ctx_free)(void *ctx);
    /* ctx holds no tensors (a split's piece sizes): it stays with the node
     * when a pass frees the saved tensors, so later passes may run it. */
    bool ctx_kept;
    /* The formula computes with recording ops (the _rec forms) and reads
     * its tensors only through saved and g, so that a pass that creates a
     * graph (create_graph) may run it in grad mode: its gradients are then
     * differentiable (clt__twice).  saved_from[k] says what saved[k] is:
     * input k - 1 (k > 0), the node's output s (-1 - s) or neither (0, a
     * constant), for that pass to give it back its history. */
    bool twice;
    signed char saved_from[CLT__SAVED_MAX];
    /* CopySlices (the history of a base after an in-place op on one of
     * its views): the in-place op's node, whose formula it applies to the
     * view's part of the base's gradient (a reference).  An in-place op's
     * node on a view between clt__inplace_node and clt__inplace_commit:
     * the view's new AsStridedBackward0 node, made in advance (whose edge
     * holds the CopySlices), for the commit to install without failing. */
    clt__node *wrapped, *rebase;
    /* Backward-pass state. */
    uint64_t pass;
    int deps;
    bool needed, target; /* clt_autograd_grad: leads to an input; is one */
    clt_tensor *gbuf;
    int nin;
    clt__edge in[];
};

#define CLT__NEED(n, k) ((n)->in[k].node != NULL || (n)->in[k].leaf != NULL)

/* Whether an op on these inputs records a node: grad mode is on and one of
 * them requires grad. */
bool clt__grad_needed(int nin, const clt_tensor *const *in);

/* After a forward op that returned st and *out: when clt__grad_needed and
 * *out is floating, attaches a new node to *out (its grad_fn) with the
 * inputs' edges and saved views of `saved` (which may include *out), and
 * hands it back in *node for the formula's scalars (NULL when nothing was
 * recorded).  On failure releases *out and sets it to NULL. */
clt_status clt__record(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                       int nin, const clt_tensor *const *in, int nsaved,
                       const clt_tensor *const *saved, clt__node **node);

/* Recording an in-place op on t = in[0], in two steps so that a failed op
 * changes nothing: clt__inplace_node, before the op, makes the node (NULL
 * when no grad is needed) with edges from the inputs as they are, t's old
 * history first; clt__inplace_commit, after the op succeeded, makes it t's
 * grad_fn (t becomes a non-leaf that requires grad), and, recorded or not,
 * moves t's version when the op did not (an empty t; `before` is t's
 * version before the op), as every in-place op of torch's does, so that a
 * saved t and t's other views see the change; clt__inplace_drop
 * releases it when the op failed.  The formula gets the gradient of t's new
 * value and gives in[0] the part that flows to t's old one.  When t is a
 * differentiable view (clt__mark_views), clt__inplace_node (its messages
 * naming fn, the public function) refuses what
 * torch refuses (a view of a leaf that requires grad, an output of a
 * function of several views, a view made in no-grad mode) and prepares,
 * and clt__inplace_commit installs, torch's rebase: t's base's grad_fn
 * becomes a CopySlices node that applies the formula to t's part of the
 * base's gradient, and t's an AsStridedBackward0 of it. */
clt_status clt__inplace_node(const char *fn, const char *name, clt__backward_fn bw, int nin,
                             const clt_tensor *const *in, clt__node **node);
void clt__inplace_commit(clt_tensor *t, clt__node *n, uint64_t before);
void clt__inplace_drop(clt__node *n);

/* A node with nout outputs (clt_checkpoint, the splits): records it for
 * the nout floating tensors outs (output s is outs[s], which must carry no
 * autograd state: fresh handles) with edges from the inputs, when grad
 * mode is on and an input requires grad; hands it back in *node (NULL when
 * nothing was recorded).  ctx is the formula's (the node owns it from
 * here, failure included: ctx_free releases it).  The formula reads the
 * gradient of output s with clt__node_grad (NULL: none reached it). */
clt_status clt__record_outputs(clt_tensor *const *outs, int nout, const char *name,
                               clt__backward_fn bw, int nin, const clt_tensor *const *in,
                               void *ctx, void (*ctx_free)(void *), clt__node **node);
const clt_tensor *clt__node_grad(const clt__node *n, int s);

/* A decomposition's node (eigh, svd, eig): records outs[0 .. nout) (fresh
 * results of a) as one node `name` with backward bw, when a needs a
 * gradient, and saves `saved` on it (outputs among them keep their history
 * for clt__twice); hands it back in *node (NULL when nothing was recorded,
 * node may be NULL).  On failure releases outs and sets them to NULL
 * (src/autograd/grad_linalg_eig.c). */
clt_status clt__record_decomposition(const clt_tensor *a, clt_tensor **outs, int nout,
                                     const char *name, clt__backward_fn bw, int nsaved,
                                     const clt_tensor *const *saved, clt__node **node);

/* Records, on the calling thread, every tensor that requires grad and is
 * read by an op run while grad mode is off, until clt__observe_end (which
 * hands back the list, each tensor retained, duplicates dropped; release
 * them with clt__tensor_unref and the array with free).  *saved is the
 * observation this one interrupts, for clt__observe_end to resume.  clt_checkpoint finds the parameters fn reads this way. */
clt_status clt__observe_begin(void **saved);
clt_status clt__observe_end(void *saved, clt_tensor ***list, size_t *n);

/* After a recorded view op made outs[0 .. nout) of in: each that shares
 * in's storage (and dtype) becomes a differentiable view, as torch's: it
 * keeps in's base (in itself, or the base in is a view of; a reference),
 * whether grad mode was on and, for a function of several outputs
 * (name, or NULL for one), which output it is; its grad_fn is made again
 * from the base's history (AsStridedBackward0) when the storage's version
 * changed since.  Done with grad mode on, or off when the base requires
 * grad (a view made in no-grad mode is refused later only then); nothing
 * for the rest, so that the plain paths allocate nothing more.  Fails
 * only when out of memory (nothing is changed then). */
clt_status clt__mark_views(const clt_tensor *in, clt_tensor *const *outs, int nout,
                           const char *name);

/* Sparse gradients (Embedding's sparse=True, torch's
 * embedding_sparse_backward): clt__sparse_grad_wanted says whether the
 * running pass can carry the gradient of n's input k as sparse COO rows of
 * it (a clt_backward pass that creates no graph, input k a leaf without
 * hooks, as it was in the forward); when it can, the formula hands rows
 * (int64 [nnz]) and values ([nnz, *rest]) to clt__sparse_grad_put (taken,
 * failure included) and leaves gin[k] NULL; the leaf's grad then becomes,
 * or grows by, those entries (src/autograd/engine.c).  Otherwise the
 * formula gives the dense gradient. */
bool clt__sparse_grad_wanted(const clt__node *n, int k);
clt_status clt__sparse_grad_put(const clt__node *n, int k, clt_tensor *rows, clt_tensor *values);

/* Whether t requires grad (leaf or not). */
bool clt__requires_grad(const clt_tensor *t);

/* A new handle on g's data (the identity gradient). */
clt_status clt__alias(const clt_tensor *g, clt_tensor **out);

/* Whether the calling thread runs a backward pass that creates a graph
 * (clt_backward_ex or clt_autograd_grad_ex with create_graph). */
bool clt__creating_graph(void);

/* Marks n (which may be NULL) as a node whose formula may run in such a
 * pass (see clt__node.twice). */
void clt__twice(clt__node *n);

/* where(mask, 0, x), the masked_fill of PyTorch's formulas, recorded in a
 * pass that creates a graph (src/autograd/grad_elementwise.c). */
clt_status clt__zero_where(const clt_tensor *mask, const clt_tensor *x, clt_tensor **out);

/* torch's prod_safe_zeros_backward, recorded in a pass that creates a
 * graph: g (broadcast) times the product of the other elements of a's
 * slice along dim, which zeros leave safe; a's size along dim is at least
 * 2 (src/autograd/grad_reduce.c). */
clt_status clt__prod_others(const clt_tensor *g, const clt_tensor *a, int dim, clt_tensor **out);

/* The identity gradient in a formula that clt__twice marks: clt__alias,
 * and in a pass that creates a graph a handle that keeps g's history. */
clt_status clt__alias_grad(const clt_tensor *g, clt_tensor **out);

/* The gradient of a diagonal (offset, dim1, dim2) of a tensor of that
 * shape: g written into zeros' diagonal, recorded in a pass that creates
 * a graph (src/autograd/grad_view.c). */
clt_status clt__diagonal_scatter_grad(const clt_tensor *g, int ndim, const int64_t *shape,
                                      int64_t offset, int dim1, int dim2, clt_tensor **out);

/* A loss's class or element weight is no operand of the graph: one that
 * requires grad (with grad mode on) is refused before anything is
 * computed, as PyTorch refuses it ("is not differentiable with respect to
 * argument 'weight'"), rather than left without a gradient.  Sets *out to
 * NULL first (src/autograd/grad_loss.c). */
clt_status clt__weight_without_grad(const clt_tensor *w, const char *arg, const char *fn,
                                   clt_tensor **out);

/* Error for an in-place op on a leaf that requires grad in grad mode, as
 * PyTorch gives it; CLT_OK otherwise. */
clt_status clt__check_inplace(const clt_tensor *t, const char *fn);

/* The gradients of a @ b (torch.matmul's shapes) for g: *ga (need_a) and
 * *gb (need_b), new tensors in the broadcast batch shape, which the engine
 * reduces (src/autograd/grad_linalg.c). */
clt_status clt__matmul_grad(const clt_tensor *a, const clt_tensor *b, const clt_tensor *g,
                            bool need_a, bool need_b, clt_tensor **ga, clt_tensor **gb);

/* A new handle on t's data that carries t's history (with grad mode on):
 * the same grad_fn for a computed t, an AliasBackward0 node for a leaf
 * that requires grad.  What torch hands out as "self" (atleast_1d of a
 * tensor with enough dims) is this here, so that the handle is the
 * caller's, in the caller's scope. */
clt_status clt__alias_history(const clt_tensor *t, clt_tensor **out);

/* Saves views of `saved` on n (after those it has, CLT__SAVED_MAX in all)
 * with their versions, as clt__record does: for a node of several outputs
 * (clt__record_outputs) whose formula reads tensors, its outputs
 * included (an output itself, not a view of it, is given back its history
 * in a pass that creates a graph, for a formula that clt__twice marks). */
clt_status clt__node_save(clt__node *n, int nsaved, const clt_tensor *const *saved);

/* After a user callback (a checkpointed function, a custom function's
 * forward, a functional API's function) that returned st and wrote *nout
 * tensors to outs (an array of max): leaves a message when the callback
 * failed without one, refuses more than max outputs (*nout is then max,
 * for the caller to free them) and NULL ones, and makes mine[s] a fresh
 * handle on each (a callback may return an input itself) unless mine is
 * NULL.  An output that is one of the callback's inputs in[0 .. nin) (fn
 * retained it) is swapped for a handle of the library's own, with its
 * history, so that the caller releases every out with clt_tensor_free
 * without taking the reference of the input's scope.  The caller
 * releases outs and mine (src/autograd/checkpoint.c). */
clt_status clt__callback_outputs(clt_status st, clt_tensor **outs, size_t *nout, size_t max,
                                 clt_tensor **mine, clt_tensor *const *in, size_t nin);


/* The complex forms of clt_add, clt_sub, clt_mul, clt_div (op 0 to 3) and
 * clt_abs, recorded with their complex gradients
 * (src/autograd/grad_fft.c). */
clt_status clt__complex_binary_rec(int op, const clt_tensor *a, const clt_tensor *b,
                                   clt_tensor **out, const char *fn);
clt_status clt__complex_abs_rec(const clt_tensor *a, clt_tensor **out, const char *fn);
/* Their formula (i[0] the op): saved (a, b) for mul (2), (b, out) for div
 * (3), (a, b) for the in-place div_ (4, a its old value).  ga = g conj(b)
 * and gb = g conj(a) for mul; ga = g / conj(b) and gb = -ga conj(out),
 * that is -ga conj(a) / conj(b), for div; a real operand takes the real
 * part (the engine's cast). */
clt_status clt__complex_binary_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin);
/* The elementary functions of complex tensors (the cmath kernel's ops,
 * cl/complex.cl), recorded with torch's complex gradients; pow of tensors
 * (one complex at least) as exp(b log a), and pow with a real scalar
 * exponent (reversed: the scalar is the base) (grad_fft.c). */
enum {
    CLT__CMATH_EXP, CLT__CMATH_LOG, CLT__CMATH_SQRT, CLT__CMATH_SINH, CLT__CMATH_COSH,
    CLT__CMATH_TANH, CLT__CMATH_SIN, CLT__CMATH_COS, CLT__CMATH_TAN, CLT__CMATH_ASINH,
    CLT__CMATH_ASIN, CLT__CMATH_ACOS, CLT__CMATH_ACOSH, CLT__CMATH_ATANH, CLT__CMATH_ATAN,
    CLT__CMATH_LOG2, CLT__CMATH_LOG10, CLT__CMATH_LOG1P, CLT__CMATH_EXPM1, CLT__CMATH_RSQRT,
    CLT__CMATH_SIGMOID, CLT__CMATH_COUNT
};
clt_status clt__complex_math_rec(int op, const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__complex_pow_rec(const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                                const char *fn);
clt_status clt__complex_pow_scalar_rec(const clt_tensor *z, double s, bool reversed,
                                       clt_tensor **out, const char *fn);
/* A data-moving op (index_select, gather, flip, roll) on complex t (at
 * least one dim, dims already wrapped against t's): op on t's recorded
 * real view, whose last dim holds the pairs, viewed as complex again, so
 * that the gradients (and theirs) are the real op's (grad_fft.c). */
typedef clt_status (*clt__real_op)(const clt_tensor *r, const void *ctx, clt_tensor **out);
clt_status clt__complex_via_real(const char *fn, const clt_tensor *t, clt__real_op op,
                                 const void *ctx, clt_tensor **out);
/* clt_matmul of two complex tensors of one dtype, composed of recorded
 * real products (grad_fft.c). */
clt_status clt__complex_matmul_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                   clt_tensor **out);
/* torch.vdot of two 1-D complex tensors of one dtype: sum(conj(a) b), as
 * clt__complex_matmul_rec composed of recorded real products. */
clt_status clt__complex_vdot_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                 clt_tensor **out);

/* prod (all dims, or dim kept or not), cumprod, var and std (correction,
 * all dims or one) of a complex tensor, composed of recorded ops
 * (src/autograd/grad_complex_reduce.c); var and std are real. */
clt_status clt__complex_prod_rec(const char *fn, const clt_tensor *a, bool all, int dim,
                                 int keepdim, clt_tensor **out);
clt_status clt__complex_cumprod_rec(const char *fn, const clt_tensor *a, int dim,
                                    clt_tensor **out);
clt_status clt__complex_var_rec(const char *fn, const clt_tensor *a, bool all, int dim,
                                double correction, int keepdim, bool std, clt_tensor **out);
/* torch.sgn of a complex tensor: a / |a|, 0 at 0, recorded. */
clt_status clt__complex_sgn_rec(const char *fn, const clt_tensor *a, clt_tensor **out);

/* The formula of clamp with tensor bounds (ClampBackward0 and the
 * one-bound nodes): saved a, then min and max where given, i[0] and i[1]
 * saying which (src/autograd/grad_elementwise.c). */
clt_status clt__clamp_t_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin);

/* The formulas of mul (saved a, b) and of clamp with scalar bounds (saved
 * a; s[0], s[1] the bounds, i[0], i[1] whether each is given), which the
 * in-place forms reuse with t's old values as a
 * (src/autograd/grad_elementwise.c). */
clt_status clt__mul_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin);
clt_status clt__clamp_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin);

/* An in-place op on t = in[0] recorded on t's history as torch records it
 * (src/autograd/grad_inplace.c): the node `name` with formula bw (marked
 * clt__twice: it must compute with recording ops) and edges from in[0 ..
 * nin), made before the op; its saved tensors are, in order, a copy of
 * t's old values when `old` (given t's old history in a pass that creates
 * a graph), then saved[0 .. nsaved) (an operand among them keeps its
 * history), at their versions before the op; s and i go to the node's.
 * run performs the op on t with ctx, and gets the node (NULL when nothing
 * is recorded) to save more or set more; it must leave t unchanged when it
 * fails.  An integer or bool t records nothing (torch's never requires
 * grad).  On failure t and its history are unchanged. */
typedef struct clt__inplace {
    const char *name;
    clt__backward_fn bw;
    int nin;
    const clt_tensor *in[3];
    bool old;
    int nsaved;
    const clt_tensor *saved[2];
    double s[2];
    int64_t i[2];
    clt_status (*run)(clt_tensor *t, const void *ctx, clt__node *n);
    const void *ctx;
} clt__inplace;
clt_status clt__inplace_rec(clt_tensor *t, const clt__inplace *op, const char *fn);

/* max_unpool's checks and output size for the last k (1, 2, 3) dims of x
 * (src/autograd/grad_conv.c). */
clt_status clt__unpool_size(const char *fn, int k, const clt_tensor *x, const clt_tensor *ix,
                            const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                            const int64_t *output_size, int64_t *size);

/* When *t requires grad (in grad mode): replaces it by a new handle on
 * its data recorded as a node named name whose gradient is the identity,
 * so that a pool composed of others carries PyTorch's grad_fn name
 * ("MaxPool3DWithIndicesBackward0"); *t is released.  Nothing otherwise
 * (src/autograd/grad_pool.c). */
clt_status clt__name_result(const char *name, clt_tensor **t);

/* In a formula run by a pass that creates a graph (nothing otherwise):
 * replaces the gradient *t by a handle recorded as a node named as PyTorch
 * names the double-backward node of the formula ("ThresholdBackwardBackward0"),
 * with edges to *t's history and to the nsrc tensors the formula read
 * (its saved tensors, with their history), whose gradient is the identity
 * for *t and zeros for them.  So, as in torch, the gradient requires grad
 * whenever those tensors do, even when it is constant in them (relu's
 * mask, a convolution's input gradient without a weight that requires
 * grad), and a second derivative with respect to them is zeros, not "does
 * not require grad".  nsrc is at most CLT__SAVED_MAX. */
clt_status clt__grad_node(const char *name, int nsrc, const clt_tensor *const *src,
                          clt_tensor **t);

/* Value i of torch.linspace(start, end, n) in float32 (f32) or float64 as
 * PyTorch 1.13's CPU kernel (its AVX2 build) makes it, bit for bit, on the
 * host: what clt_linspace's kernel computes (cl/shape.cl), for formulas
 * that need one value of it (src/autograd/covariance.c). */
double clt__linspace_at(bool f32, double start, double end, int64_t n, int64_t i);

/* The right edge of torch.histc(x, bins, lo, hi) in PyTorch 1.13's CPU
 * kernel for float32 (f32) or float64 x: the last value of
 * torch.linspace(lo, hi, bins + 1), which the kernel takes both as the
 * upper end of the range it counts and in a bin's position, (v - lo) /
 * (edge - lo) * bins.  Its vectorised linspace (AVX2: 8 float32 or 4
 * float64 values a vector, two vectors a step) fills whole steps as
 * base + i * step from each vector's first value, counting back from hi
 * in the second half; so when bins + 1 is a multiple of 16 (float32) or 8
 * (float64), the edge is fma(-step, 7, hi) + 7 * step (3 for float64),
 * which can miss hi.  Otherwise (the scalar tail) it is hi itself: the last
 * clt__linspace_at (src/autograd/covariance.c). */
double clt__histc_last_edge(bool f32, double lo, double hi, int64_t bins);

#endif
