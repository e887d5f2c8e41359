/* nn.h: what the layers of src/nn share: the module structure every layer
 * fills in, and helpers to give a module its parameters and buffers. */
#ifndef CLT_NN_H
#define CLT_NN_H

#include "internal.h"

/* The longest name of a module's own tensor, with its NUL ("weight_ih_l0_reverse"). */
#define CLT__MODULE_NAME 24

typedef struct clt__module_ops {
    const char *name; /* "Linear", as PyTorch's class */
    /* y = m(x); x and y on the module's device for layers with tensors. */
    clt_status (*forward)(clt_module *m, const clt_tensor *x, clt_tensor **out);
    /* Releases `extra`, if the layer keeps something there; may be NULL. */
    void (*free_extra)(clt_module *m);
    /* For clt_module_clone of a layer that keeps something in `extra`:
     * gives `copy` (which already holds m's settings, tensors on dev and
     * children, and no extra) its own copy of m's extra, or fails with a
     * message naming fn, leaving copy->extra NULL or for free_extra to
     * release.  NULL for a layer whose extra stays NULL; cloning a layer
     * that has an extra and no clone_extra is refused. */
    clt_status (*clone_extra)(const clt_module *m, clt_module *copy, clt_device *dev,
                              const char *fn);
} clt__module_ops;

struct clt_module {
    const clt__module_ops *ops;
    clt_device *dev;   /* where its tensors live; NULL for a layer without any */
    bool training;     /* train mode (the default), as module.train() */
    /* Own tensors, in arrays that grow as they are added (an LSTM of L
     * bidirectional layers has 8 L parameters), released with the module. */
    int nparams;       /* leaves that require grad, in no scope */
    int pcap;
    char (*pname)[CLT__MODULE_NAME];
    clt_tensor **params;
    int nbufs;         /* state that is not trained (BatchNorm's running statistics) */
    int bcap;
    char (*bname)[CLT__MODULE_NAME];
    clt_tensor **bufs;
    size_t nchildren;  /* owned; named "0", "1", ... as in torch.nn.Sequential */
    clt_module **children;
    const char *const *child_names; /* static names instead ("self_attn"), or NULL */
    clt_module *owner; /* the container that owns m (and releases it), or NULL */
    int levels;        /* containers from m down to its deepest layer (0: a layer) */
    int version;       /* torch's _version of its class where torch's loading reads it
                        * (the observers' 3; a torch checkpoint's _metadata carries it),
                        * else 0 */
    double f[8];       /* the layer's settings */
    int64_t i[16];
    clt_generator *gen; /* borrowed (Dropout's masks) */
    void *extra;
    struct clt__mhooks *hooks;     /* forward and backward hooks (hooks.c), or NULL */
    struct clt__reparam *reparams; /* weight_norm, spectral_norm, pruning (reparam.c) */
    clt_tensor **retired; /* parameters a reparametrization took out, kept for the */
    int nretired;         /* handles the listings gave out (released with m) */
};

/* A new module of `ops` on dev with nothing in it yet.  New module. */
clt_status clt__module_new(const clt__module_ops *ops, clt_device *dev, clt_module **out);

/* Adds t (taken: the module owns it) as parameter `name`: it requires grad
 * and belongs to no scope. */
clt_status clt__module_param(clt_module *m, const char *name, clt_tensor *t);
/* Adds t (taken) as buffer `name`. */
clt_status clt__module_buffer(clt_module *m, const char *name, clt_tensor *t);

/* A new dev tensor of shape with values uniform in [-bound, bound), from
 * gen: PyTorch's kaiming_uniform_(a = sqrt(5)) and bias init take bound
 * 1 / sqrt(fan_in).  Messages name fn, the layer constructor called. */
clt_status clt__init_uniform(clt_generator *gen, clt_device *dev, int ndim, const int64_t *shape,
                             double bound, clt_tensor **out, const char *fn);

/* Gives m (on its device) a parameter "weight" of shape wshape and, when
 * bias, a "bias" [wshape[0]], both uniform in +-1/sqrt(fan_in): PyTorch's
 * initialisation of Linear and Conv2d. */
clt_status clt__module_weight_bias(clt_module *m, clt_generator *gen, int ndim,
                                   const int64_t *wshape, int64_t fan_in, int bias,
                                   const char *fn);
/* The same with a bias of bias_n elements: ConvTranspose2d's weight is
 * [in, out / groups, kH, kW], its bias [out]. */
clt_status clt__module_weight_bias_n(clt_module *m, clt_generator *gen, int ndim,
                                     const int64_t *wshape, int64_t fan_in, int64_t bias_n,
                                     int bias, const char *fn);

/* For a forward that changes state (clt_module_forward holds the changes
 * until the outermost forward ends, so that one that fails changes
 * nothing): notes gen's offset, to be put back if the forward fails; or
 * has next (retained) written into buf once the forward has succeeded.
 * Called before the generator is drawn from, or instead of writing buf. */
clt_status clt__forward_note_generator(clt_generator *gen);
clt_status clt__forward_defer_write(clt_tensor *buf, clt_tensor *next);

/* Brackets a forward that a public call other than clt_module_forward runs
 * (one with masks, or with two results): the state it changes is held as
 * clt_module_forward holds it.  end takes the forward's status and gives
 * the call's, its message opening with fn when this was the outermost. */
void clt__forward_begin(void);
clt_status clt__forward_end(clt_status st, const char *fn);

/* Gives m the n children mods (taken: released with m; their owner set)
 * named names (static storage; NULL: "0", "1", ...). */
clt_status clt__module_adopt(clt_module *m, clt_module *const *mods, size_t n,
                             const char *const *names);

/* torch.nn.functional.dropout(x, p, training=True) for a floating x with
 * masks from gen (p 1: x * 0, drawing nothing), for the layer named fn:
 * the random part of clt__dropout_rec, and MultiheadAttention's dropout of
 * its weights. */
clt_status clt__dropout(const char *fn, clt_generator *gen, double p, const clt_tensor *x,
                        clt_tensor **out);

/* Dropout with probability p (in [0, 1]; 0 gives the identity, recorded)
 * drawing its mask from gen (NULL: the default generator), noted for
 * clt_module_forward's undo: Dropout's forward in train mode (any dtype
 * it takes), and the dropout between a recurrent model's layers; its
 * random part is clt__dropout.  Messages name fn. */
clt_status clt__dropout_rec(const char *fn, clt_generator *gen, double p, const clt_tensor *x,
                            clt_tensor **out);

/* *next = (1 - momentum) run + momentum stat, stat seen as run's shape,
 * recording nothing: BatchNorm's and InstanceNorm's running statistics.
 * Messages name fn. */
clt_status clt__running_next(const clt_tensor *run, const clt_tensor *stat, double momentum,
                             clt_tensor **next, const char *fn);

/* The factor a training BatchNorm m (its buffers tracked) gives this
 * batch's statistics: its momentum f[1], or for CLT_BN_CUMULATIVE (torch's
 * momentum=None) 1 / num_batches_tracked counted with this batch, read
 * from the buffer (a cumulative average, as torch's).  Messages name fn. */
clt_status clt__bn_factor(const clt_module *m, const char *fn, double *factor);

/* A new BatchNorm or InstanceNorm layer of ops on dev, for the
 * constructor fn (which checks nothing before): features (> 0), eps (>= 0)
 * and momentum (in [0, 1], or CLT_BN_CUMULATIVE for the BatchNorms)
 * checked, i[0] features, i[2] track, f[0] eps,
 * f[1] momentum, its parameters (weight ones and bias zeros, with affine)
 * and buffers (running_mean zeros, running_var ones and the int64
 * num_batches_tracked 0, with track), all float32 [features] but the
 * last, in PyTorch's names and order. */
clt_status clt__norm_layer_new(const clt__module_ops *ops, clt_device *dev, int64_t features,
                               double eps, double momentum, int affine, int track,
                               const char *fn, clt_module **out);

/* A module path ("0.activation_post_process"; "" for the root) and its
 * torch _version, as a checkpoint's _metadata lists them. */
typedef struct clt__module_version {
    const char *path;
    int version;
} clt__module_version;

/* The modules of m (m included) that have a version, in
 * state_dict order: *n entries in one block (paths included) released
 * with free.  Messages name fn. */
clt_status clt__module_versions(const char *fn, const clt_module *m, clt__module_version **out,
                                size_t *n);

/* clt_module_state for the public call fn (saving or loading a
 * checkpoint): its messages name fn. */
clt_status clt__module_state_in(const char *fn, const clt_module *m, clt_named_tensor **out,
                                size_t *n);

/* Error unless x lives on the module's device (PyTorch's wording, naming
 * both devices). */
clt_status clt__module_check_device(const clt_module *m, const clt_tensor *x, const char *fn);

/* Error (CLT_ERR_DTYPE_MISMATCH) unless x has the dtype of t, the layer's
 * parameter or buffer named `what` ("weight"): PyTorch's layers do not
 * promote between the input and their tensors, so a float64 input into
 * float32 weights (or an integer one) is refused rather than computed in
 * another dtype.  The message opens with rule (PyTorch's words for the
 * layer; NULL: "the input and the <what> must have the same dtype"), names
 * both dtypes and the fix.  fn is the layer ("LayerNorm"). */
clt_status clt__module_check_dtype(const clt_tensor *x, const clt_tensor *t, const char *what,
                                   const char *rule, const char *fn);

/* A new module of ops on dev (*out) with its parameter "weight"
 * [num_embeddings, embedding_dim], normal(0, 1) from gen, its row pad
 * (wrapped; -1: none) zeros, as torch's Embedding and EmbeddingBag make
 * it; both sizes must be positive.  A failure takes no numbers from gen;
 * messages name fn. */
clt_status clt__embedding_table(const clt__module_ops *ops, clt_device *dev,
                                int64_t num_embeddings, int64_t embedding_dim, int64_t pad,
                                clt_generator *gen, clt_module **out, const char *fn);

/* from_pretrained's table module of ops: embeddings (2-D, floating) as its
 * weight, frozen when freeze (src/nn/layers.c).  New module: *out. */
clt_status clt__embedding_pretrained(const clt__module_ops *ops, const clt_tensor *embeddings,
                                     int freeze, clt_module **out, const char *fn);

/* Whether m is an EmbeddingBag, and then its padding row (wrapped), or -1,
 * in *pad (src/nn/shape.c). */
bool clt__embedding_bag_pad(const clt_module *m, int64_t *pad);

/* The kinds of recurrent cell (rnn.c's and cells.c's). */
enum { CLT__CELL_TANH, CLT__CELL_RELU, CLT__CELL_LSTM, CLT__CELL_GRU };

/* One recorded step of a cell of kind: from xt = W_ih x + b_ih and hh =
 * W_hh h + b_hh (both [N, G H]), the new h (and, LSTM, c) replace *h and
 * *c, the old ones left as they were; the intermediates stay in the
 * caller's scope.  Messages name fn. */
clt_status clt__rnn_cell_step(const char *fn, int kind, int64_t H, const clt_tensor *xt,
                              const clt_tensor *hh, clt_tensor **h, clt_tensor **c);
/* A cell's gate product x W^T + b (clt__linear): under autocast with
 * torch's CPU lists, x, w and b cast to the region's dtype, as torch's CPU
 * cells (composites whose linears are on the CPU lower-precision list);
 * the elementwise rest of the cell then runs in its operands' dtypes
 * (states kept in theirs, promoted where they meet the gates). */
clt_status clt__rnn_linear(const char *fn, const clt_tensor *x, const clt_tensor *w,
                           const clt_tensor *b, clt_tensor **out);
/* Whether autocast with the CPU lists casts a cell's gate products on x
 * with weight w now (its operands' dtypes then need not agree). */
bool clt__rnn_autocast_cpu(const clt_tensor *x, const clt_tensor *w);

/* ---- hooks and reparametrizations (hooks.c, reparam.c) ---------------- */

/* The name of a reparametrization's own tensor ("weight_hh_l0_reverse_orig"). */
#define CLT__REPARAM_NAME 48

/* A parameter of a layer reparametrized by nn.utils (weight_norm,
 * spectral_norm, prune): the layer's slot params[slot] holds the tensor
 * computed from the tensors here before each forward and is no longer one
 * of the module's parameters; these are listed after the module's own
 * parameters and buffers, as torch registers them. */
typedef struct clt__reparam {
    int kind; /* reparam.c's */
    int slot;
    int nparams, nbufs;
    char pname[2][CLT__REPARAM_NAME], bname[2][CLT__REPARAM_NAME];
    clt_tensor *params[2], *bufs[2];
    int dim, iters;
    double eps;
    struct clt__pchain *chain; /* torch.nn.utils.parametrize's (parametrize.c), or NULL */
    struct clt__reparam *next;
} clt__reparam;

/* The kind of the reparametrizations parametrize.c makes: params[0] is
 * "parametrizations.NAME.original", bufs orthogonal's bases. */
#define CLT__RP_PARAMETRIZE 3
/* Its value: the chain of parametrizations applied to original, recorded
 * (a new tensor in the caller's scope). */
clt_status clt__parametrize_value(const clt__reparam *r, clt_tensor **out, const char *fn);
/* Whether r's slot holds the value computed in the current cached() block. */
bool clt__parametrize_cached(const clt__reparam *r);
/* A copy of a chain (the caller's functions and data shared), or NULL. */
struct clt__pchain *clt__parametrize_chain_dup(const struct clt__pchain *c);
/* utils.c's bookkeeping for parametrize.c: the index of m's own parameter
 * name (-1: none); whether a reparametrization holds it; releasing r (its
 * tensors and chain); appending r to m's; retiring t (its handle kept as
 * long as m); taking r out of m's list with its tensors retired (but
 * params[0] when keep_original: the caller takes that reference). */
int clt__reparam_slot_of(const clt_module *m, const char *name);
bool clt__reparam_slot_taken(const clt_module *m, const char *name);
void clt__reparam_release(clt__reparam *r);
void clt__reparam_link(clt_module *m, clt__reparam *r);
clt_status clt__reparam_retire(clt_module *m, clt_tensor *t, const char *fn);
clt_status clt__reparam_unlink_retire(clt_module *m, clt__reparam *r, bool keep_original,
                                      const char *fn);

/* Whether params[k] of m is computed by a reparametrization. */
bool clt__reparam_has_slot(const clt_module *m, int k);
/* Sets every computed slot of m from its tensors (spectral_norm's power
 * iteration in train mode, its u and v written when the forward ends):
 * the forward pre-hook torch registers.  Messages name fn. */
clt_status clt__reparam_compute(clt_module *m, const char *fn);
/* Gives copy (m's clone, its parameters and buffers copied) copies of m's
 * reparametrizations, their tensors copied to dev (NULL: where they are),
 * and its computed slots computed from them (spectral_norm without a
 * power iteration).  On failure copy keeps what it got, for
 * clt_module_free.  Messages name fn. */
clt_status clt__reparam_clone(const clt_module *m, clt_module *copy, clt_device *dev,
                              const char *fn);
/* A copy of t without history, in no scope, on dev (NULL: t's device):
 * clt_module_clone's. */
clt_status clt__module_copy_tensor(const clt_tensor *t, clt_device *dev, clt_tensor **out,
                                   const char *fn);
/* Releases m's reparametrizations and retired parameters. */
void clt__reparam_free(clt_module *m);

/* m's forward with its hooks and reparametrizations, as nn.Module.__call__:
 * forward pre-hooks, the reparametrizations, forward, forward hooks, and the
 * full backward hooks' wiring.  Inside clt__forward_begin/end. */
clt_status clt__module_call(clt_module *m, const clt_tensor *x, clt_tensor **out);
/* A forward of several inputs or results (clt_lstm_forward, ...): from
 * the first input (after the pre-hooks, or the backward hooks' view of
 * it), the first result in *out (new); the others, and the other inputs,
 * in ctx, the caller's. */
typedef clt_status (*clt__forward_multi_fn)(clt_module *m, void *ctx, const clt_tensor *first,
                                            clt_tensor **out);
/* clt__module_call for such a forward: fwd(m, ctx, ...) runs instead of
 * m's forward; the hooks see the first input and the first result (a
 * forward hook's replacement replaces the first result only; the backward
 * hooks' grad_input and grad_output are those of the first input and
 * result).  fwd NULL: m's own forward.  On failure *out is NULL and what
 * fwd left in ctx is for the caller to release. */
clt_status clt__module_call_multi(clt_module *m, const clt_tensor *x, clt__forward_multi_fn fwd,
                                  void *ctx, clt_tensor **out);
/* Whether m is a custom module of clt_module_custom_multi, and then its
 * numbers of inputs and outputs (module.c). */
bool clt__custom_multi_arity(const clt_module *m, size_t *n_in, size_t *n_out);
/* Whether m is a module of clt_module_custom or clt_module_custom_multi
 * (or a container), whose name is its maker's. */
bool clt__module_is_custom(const clt_module *m);
/* Runs such an m (clt__module_call_multi: its hooks on in[0] and out[0])
 * on its n_in inputs in (in[0] not NULL), its n_out outputs in out (all
 * new; all NULL on failure).  Inside clt__forward_begin/end. */
clt_status clt__custom_call_multi(clt_module *m, const clt_tensor *const *in, clt_tensor **out);
/* Reads and checks a packed sequence's layout (src/nn/packed.c):
 * batch_sizes (1-D int64, positive, non-increasing, adding up to data's
 * rows) into *bs (*T steps) and, from sorted_indices and/or
 * unsorted_indices (either may be NULL), pos[j]: the place of the
 * caller's sequence j in the sorted batch of bs[0] (the identity when
 * both are NULL).  New host arrays (release with free); NULL on failure. */
clt_status clt__packed_layout(const char *fn, const clt_tensor *data,
                              const clt_tensor *batch_sizes, const clt_tensor *sorted_indices,
                              const clt_tensor *unsorted_indices, int64_t *T, int64_t **bs,
                              int64_t **pos);
/* Releases m's hooks. */
void clt__mhooks_free(clt_module *m);

/* ---- lazy layers (lazy.c) ------------------------------------------------ */

/* Error (CLT_ERR_INVALID_ARGUMENT, naming fn and the layer) when a lazy
 * layer of m's model has not had its first forward yet: its tensors have
 * no shape, so nothing can list them. */
clt_status clt__lazy_check(const clt_module *m, const char *fn);
/* Has the lazy layers of m's model that have not run yet make their
 * tensors in dtype (clt_module_to_dtype before the first forward). */
void clt__lazy_set_dtype(clt_module *m, clt_dtype dtype);

/* What turns a BatchNorm into another layer in place (SyncBatchNorm's
 * conversion, a layer above nn): arg is the converter's, borrowed. */
typedef clt_status (*clt__lazy_become_fn)(clt_module *m, void *arg);
/* SyncBatchNorm's conversion of a lazy BatchNorm that has not run: true
 * when m is one not converted yet; then (when apply) it is named
 * "SyncBatchNorm" from now on, and once its first forward (or a load)
 * makes it a BatchNorm, become(m, arg) converts that before it runs (a
 * failure there leaves it lazy).  Allocates nothing. */
bool clt__lazy_convert_batch_norm(clt_module *m, clt__lazy_become_fn become, void *arg,
                                  bool apply);

/* A checkpoint's entry by its full name ("0.weight"): true and its shape
 * when it holds one. */
typedef bool (*clt__lazy_find_fn)(void *ctx, const char *name, int *ndim, const int64_t **shape);
/* The layers materialize changed, to keep or to put back. */
typedef struct clt__lazy_undo clt__lazy_undo;
/* torch's LazyModuleMixin._lazy_load_hook: each lazy layer of m's model
 * that has not run and whose weight (a norm without affine: its
 * running_mean) find knows becomes the plain layer with the input size
 * that shape gives (Linear weight[1], a convolution weight[1] * groups, a
 * transposed one weight[0], a norm weight[0]), its tensors made in the
 * layer's dtype from a generator of its own (the layer's gen is not
 * drawn from; the values are to be overwritten by the load).  A layer
 * whose key is missing or of another rank stays lazy.  *undo (NULL when
 * nothing changed) is to be handed to clt__lazy_undo_finish; on failure
 * m is as it was and *undo NULL. */
clt_status clt__lazy_materialize(clt_module *m, clt__lazy_find_fn find, void *ctx,
                                 const char *fn, clt__lazy_undo **undo);
/* keep: the load succeeded, the layers stay plain; else they are made
 * lazy again as before clt__lazy_materialize.  NULL does nothing. */
void clt__lazy_undo_finish(clt__lazy_undo *u, bool keep);

/* LocalResponseNorm's and CrossMapLRN2d's checks (norm_pool.c): a size
 * that is not positive is refused, naming fn. */
clt_status clt__lrn_check_size(int64_t size, const char *fn);

/* A layer of ops keeping size in i[0] and alpha, beta, k in f[0..2]
 * (LocalResponseNorm, CrossMapLRN2d); *out owned by the caller. */
clt_status clt__lrn_layer_new(const clt__module_ops *ops, const char *fn, int64_t size,
                              double alpha, double beta, double k, clt_module **out);

#endif
