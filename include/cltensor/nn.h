/* cltensor/nn.h: layers and models, like torch.nn.
 *
 * A clt_module is a layer or a model made of layers.  Its parameters are
 * leaf tensors that require grad, initialised as PyTorch initialises them
 * but from a clt_generator (NULL: the default one), so that a seed gives
 * the same model on every device.  clt_module_forward runs it as a graph of
 * differentiable ops; clt_backward on a loss then fills the parameters'
 * gradients.
 *
 * Ownership.  Constructors hand out a new module: release it with
 * clt_module_free, which releases its children and tensors.  The tensors
 * that the listing functions hand out are borrowed: they live as long as
 * the module (across clt_module_to and clt_module_to_dtype, which move or
 * convert their data but keep the handles, so optimizers made before
 * still hold them).
 *
 * Devices.  A model's tensors live on one device.  An input on another
 * device is an error naming both (CLT_ERR_DEVICE_MISMATCH), never a copy.
 *
 * Dtypes.  The layers make their parameters and buffers float32
 * (clt_module_to_dtype converts a model, as model.double()).  As in
 * PyTorch 1.13, a layer with parameters or running statistics (Linear,
 * Conv1d, Conv2d, ConvTranspose2d, LayerNorm with elementwise_affine,
 * GroupNorm with affine, BatchNorm and InstanceNorm with affine or
 * track_running_stats, MultiheadAttention, the transformer layers, RNN,
 * LSTM, GRU, Bilinear) does not promote: an input of another dtype,
 * float64 or integer, is
 * CLT_ERR_DTYPE_MISMATCH naming the layer, both
 * dtypes and the fix ("LayerNorm: ... the input is float64 and
 * the weight float32 (convert the input with clt_to_dtype)"), and changes
 * nothing.  The layers without tensors keep the input's dtype (float64 in,
 * float64 out) and take integers where their ops do: ReLU, Flatten,
 * Dropout in eval mode (and with p 0) keep them; Tanh and Sigmoid give
 * float32; AvgPool1d and AvgPool2d take int64 (conv.h); GELU, MaxPool1d,
 * MaxPool2d, Upsample, the other integer dtypes in the average pools,
 * LayerNorm, GroupNorm and BatchNorm refuse them; PixelShuffle,
 * PixelUnshuffle and ChannelShuffle keep any dtype, Unfold and Fold refuse
 * integers.
 * Embedding and EmbeddingBag take int64 or int32 indices, as PyTorch
 * (other dtypes are CLT_ERR_DTYPE_MISMATCH); EmbeddingBag's offsets too,
 * and its per-sample weights must have its weight's dtype.  Dropout in
 * train mode with p 1 gives x * 0 in x's dtype, as PyTorch (NaN stays NaN;
 * a bool input gives false).
 */
#ifndef CLTENSOR_NN_H
#define CLTENSOR_NN_H

#include <cltensor/autograd.h>
#include <cltensor/conv.h>
#include <cltensor/index.h>
#include <cltensor/random.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_module clt_module;

/* A tensor of a model with its name, as in PyTorch's state_dict
 * ("0.weight"). */
typedef struct clt_named_tensor {
    const char *name;
    clt_tensor *tensor;
} clt_named_tensor;

/* ---- running a model ---------------------------------------------------- */

/* y = m(x).  New tensor: release with clt_tensor_free.  A forward that
 * fails (out of memory, the driver refusing a launch) changes no buffer
 * and takes no numbers from a generator.  The buffers it updates
 * (BatchNorm's running statistics) are written all at once at its end,
 * each storage taking the buffer of its new values (views of a buffer see
 * them too); only a buffer that is a part of a larger one or on a
 * caller's buffer (clt_tensor_from_cl_buffer) is copied into, after the
 * others, and a driver failing there leaves those before it written (the
 * message says which call failed). */
CLT_API clt_status clt_module_forward(clt_module *m, const clt_tensor *x, clt_tensor **out);

/* Like model.to(device): moves every parameter, buffer and gradient of m
 * and its children to dev (copies; the handles stay).  All or none: every
 * copy is made before any handle changes, so that when dev runs out of
 * memory the model is left whole where it was.  A backward pass through
 * a graph recorded before the move adds the gradients on dev. */
CLT_API clt_status clt_module_to(clt_module *m, clt_device *dev);

/* Like model.double(), model.float() or model.to(torch.float64): converts
 * every floating parameter and buffer of m and its children (BatchNorm's
 * running_mean and running_var; not the int64 num_batches_tracked), and
 * their gradients, to dtype (copies, rounded when narrowing; the handles
 * stay, as with clt_module_to).  dtype must be floating, as PyTorch's
 * ("nn.Module.to only accepts floating point or complex dtypes"):
 * anything else is CLT_ERR_INVALID_ARGUMENT; a dtype the device cannot
 * hold (float64 without cl_khr_fp64) is the error clt_to_dtype gives.  All
 * or none: every copy is made before any handle changes, so that a
 * failure (out of memory) leaves the model as it was.  An optimizer made
 * over the parameters before keeps working: its state (momentum, moments)
 * follows each parameter's dtype, converted by the next
 * clt_optimizer_step (PyTorch keeps the state's old dtype and mixes the
 * two); a parameter converted to float16 is refused there.  A backward
 * pass through a graph recorded before the conversion gives each
 * parameter its gradient in its new dtype. */
CLT_API clt_status clt_module_to_dtype(clt_module *m, clt_dtype dtype);

/* Like copy.deepcopy(model).to(dev) (dev NULL: the devices m's tensors
 * are on): a new model of m's structure (its layers, their settings and
 * nesting), each parameter and buffer copied (new handles on new
 * buffers: nothing is shared, so changing one model leaves the other
 * alone), in its own dtype, the parameters leaves that require grad, and
 * m's train or eval mode, layer by layer.  As torch 1.13's deepcopy (whose
 * Parameter.__deepcopy__ copies the data only), no gradient is copied:
 * the copy's parameters have none.  A Dropout copy borrows the same
 * generator as m's (clt_dropout_layer).  An optimizer over m's parameters
 * does not drive the copy.  The base of EMA or target networks and of
 * replicas on other devices.  On failure (out of memory on dev) *out is
 * NULL and m is unchanged.  New module: release with clt_module_free. */
CLT_API clt_status clt_module_clone(const clt_module *m, clt_device *dev, clt_module **out);

/* model.train() (on = 1) or model.eval() (on = 0), for m and its
 * children: Dropout and BatchNorm act differently in the two. */
CLT_API void clt_module_train(clt_module *m, int on);
CLT_API int clt_module_is_training(const clt_module *m);

/* model.apply(fn): calls fn(module, user) on every module of m's tree,
 * each child's subtree before its parent and children in their order
 * (torch's order: m last), as DCGAN's weights_init is applied:
 *
 *     static clt_status weights_init(clt_module *m, void *gen)
 *     {
 *         if (strstr(clt_module_name(m), "Conv"))
 *             return clt_init_normal_(clt_module_param(m, "weight"), gen, 0.0, 0.02);
 *         if (strstr(clt_module_name(m), "BatchNorm")) {
 *             clt_status st = clt_init_normal_(clt_module_param(m, "weight"), gen, 1.0, 0.02);
 *             return st ? st : clt_init_zeros_(clt_module_param(m, "bias"));
 *         }
 *         return CLT_OK;
 *     }
 *     clt_module_apply(netG, weights_init, gen);
 *
 * The first call that does not return CLT_OK stops the walk, and its
 * status is returned with its message after "clt_module_apply: <the
 * module's name>: " (one naming the status when fn left none); the
 * modules before it keep what fn did (as torch's apply stopped by an
 * exception).  fn must not add or remove modules of the tree.  Errors:
 * CLT_ERR_NULL_ARGUMENT for a NULL m or fn. */
typedef clt_status (*clt_module_apply_fn)(clt_module *m, void *user);
CLT_API clt_status clt_module_apply(clt_module *m, clt_module_apply_fn fn, void *user);

/* The device of m's tensors (borrowed), or NULL for a model without any. */
CLT_API clt_device *clt_module_device(const clt_module *m);

/* "Linear", "Sequential", ... (static storage; a custom module's name
 * lives as long as the module); NULL for NULL. */
CLT_API const char *clt_module_name(const clt_module *m);

/* The number of parameter elements (sum of numel), as
 * sum(p.numel() for p in model.parameters()). */
CLT_API int64_t clt_module_num_parameters(const clt_module *m);

/* The parameters, in PyTorch's order, as *n borrowed tensors in an array
 * that is released with clt_free. */
CLT_API clt_status clt_module_parameters(const clt_module *m, clt_tensor ***out, size_t *n);

/* model.zero_grad(set_to_none): clt_zero_grad on each parameter of m (the
 * parameters clt_module_parameters lists), for a loop that updates the
 * parameters itself (the tutorials' p.data.add_(p.grad.data, alpha=-lr))
 * or several optimizers over one model.  set_to_none non-zero drops the
 * gradients (torch 2.0's default); 0 sets them to zeros in place, torch
 * 1.13's default.  Parameters without a gradient are left as they are.
 * CLT_ERR_NULL_ARGUMENT for a NULL m. */
CLT_API clt_status clt_module_zero_grad(clt_module *m, int set_to_none);

/* Named parameters, buffers, or both (the state: parameters then buffers
 * of each module, children after their parent, as state_dict): *n entries
 * in one block (names included) released with clt_free; the tensors are
 * borrowed. */
CLT_API clt_status clt_module_named_parameters(const clt_module *m, clt_named_tensor **out,
                                               size_t *n);
CLT_API clt_status clt_module_named_buffers(const clt_module *m, clt_named_tensor **out,
                                            size_t *n);
CLT_API clt_status clt_module_state(const clt_module *m, clt_named_tensor **out, size_t *n);

/* Releases m, its children and its tensors.  NULL does nothing. */
CLT_API void clt_module_free(clt_module *m);

/* ---- custom modules (a subclass of torch.nn.Module) ---------------------- */

/* A custom module's forward: *out = m(x), a new tensor (the caller of
 * clt_module_forward releases it; to give x back, return
 * clt_tensor_retain(x)).  m is the module itself, so that the function can
 * look up its parts (clt_module_child, clt_module_param) and run them
 * (clt_module_forward on a child); user is the pointer given to
 * clt_module_custom.  It returns CLT_OK with *out set, or a failure: the
 * status of the clt_ call that failed, its message kept (clt_module_forward
 * then fails with "clt_module_forward: <name>: <the message>" and releases
 * whatever *out holds).  A failure returned with no message of the call
 * is given one naming the module and the status; CLT_OK with *out NULL is
 * CLT_ERR_INVALID_ARGUMENT. */
typedef clt_status (*clt_module_forward_fn)(clt_module *m, void *user, const clt_tensor *x,
                                            clt_tensor **out);

/* A model written as a subclass of torch.nn.Module: a module with no parts
 * yet, whose clt_module_forward calls forward(m, user, x, &out).  Give it
 * children (clt_module_add_module: torch's `self.name = module`),
 * parameters (clt_module_add_parameter: `self.name = nn.Parameter(t)`) and
 * buffers (clt_module_add_buffer: register_buffer); everything else
 * (clt_module_to, clt_module_to_dtype, clt_module_train, the listings,
 * clt_module_save and clt_module_load, clt_module_clone, clt_module_free)
 * works on it as on any model, its state named as torch names the
 * equivalent nn.Module's: its own parameters, its own buffers, then each
 * child's tensors under "<child name>.", children in the order they were
 * added ("pos", "proj.weight", "proj.bias").
 *
 * forward NULL makes a module without one, as an nn.Module subclass that
 * defines none (a pure container of parameters, buffers and children):
 * everything above works on it, and clt_module_forward on it fails with
 * CLT_ERR_INVALID_ARGUMENT, torch's NotImplementedError "Module [name] is
 * missing the required "forward" function".
 *
 * name (copied; not empty) is what clt_module_name gives and what its
 * forward's messages begin with, as torch's class name.  user is the
 * caller's, passed to forward; free_user (NULL: none) is called on it by
 * clt_module_free (when user is not NULL), so that the module owns it;
 * when clt_module_custom fails, user stays the caller's.
 *
 * Device.  A custom module's device is its model's: the device of the
 * first tensor given to it or to any module of the model it belongs to
 * (clt_module_device; NULL while the model has no tensor).  Parameters,
 * buffers and children are checked against it when added, and
 * clt_module_to moves them all.
 *
 * Cloning.  clt_module_clone copies the parts as for any model (a child
 * of the same kind, each tensor copied).  user: when the module does not
 * own it (free_user NULL) or it is NULL, the copy shares the pointer; when
 * it does, the copy gets clone_user(user) (clt_module_custom_set_clone),
 * and without a clone_user cloning is refused (CLT_ERR_INVALID_ARGUMENT),
 * since both would release the same data (torch's deepcopy copies the
 * Python object; C has no general copy).
 *
 * New module: release with clt_module_free. */
CLT_API clt_status clt_module_custom(const char *name, clt_module_forward_fn forward, void *user,
                                     void (*free_user)(void *), clt_module **out);

/* Sets the function that copies a custom module's user data for
 * clt_module_clone (NULL: none).  It returns a new copy, which the copy's
 * free_user releases, or NULL when it cannot (out of memory: the clone
 * then fails, CLT_ERR_OUT_OF_HOST_MEMORY).  CLT_ERR_INVALID_ARGUMENT for
 * a module that clt_module_custom did not make. */
CLT_API clt_status clt_module_custom_set_clone(clt_module *m,
                                               void *(*clone_user)(const void *user));

/* ---- several inputs and outputs: model(*args) ----------------------------- */

/* A custom module's forward of several inputs and outputs, torch's
 * forward(self, src, src_mask=None) or forward(self, input, hidden) ->
 * (output, hidden): inputs[0 .. n_in - 1] (borrowed; any but the first
 * may be NULL, as torch's None) and outputs[0 .. n_out - 1], which it
 * sets to new tensors (each its own reference, released by the caller of
 * clt_module_forward_multi: to give an input back, or one tensor twice,
 * retain it each time).  n_in and n_out are the module's own
 * (clt_module_custom_multi), checked before it runs; outputs come all
 * NULL.  m and user as clt_module_forward_fn's.  It returns CLT_OK with
 * every output set, or a failure as clt_module_forward_fn's (the call
 * then releases whatever the outputs hold); CLT_OK with an output left
 * NULL is CLT_ERR_INVALID_ARGUMENT naming it. */
typedef clt_status (*clt_module_forward_multi_fn)(clt_module *m, void *user,
                                                  const clt_tensor *const *inputs, size_t n_in,
                                                  clt_tensor **outputs, size_t n_out);

/* clt_module_custom for a forward of n_in inputs and n_out outputs (both
 * 1 to CLT_MODULE_MAX_IO; forward NULL: a module without one, as
 * clt_module_custom's).  Everything clt_module_custom's module does, this
 * one does (children, parameters, buffers and their names, clt_module_to,
 * clt_module_to_dtype, train and eval, clt_module_clone with
 * clt_module_custom_set_clone, save and load, hooks, free_user).  Run it
 * with clt_module_forward_multi.  clt_module_forward(m, x), and so a
 * Sequential, runs it with x first and the other inputs NULL and gives
 * the first output (the others released), as torch's model(x) with the
 * other arguments left to their default None.
 *
 * Hooks run as for the layers of several inputs (clt_lstm_forward, ...):
 * they see the first input and the first output (a forward pre-hook's
 * replacement replaces the first input; a forward hook's the first
 * output; full backward hooks get those two's gradients), where torch
 * passes them all as tuples.
 *
 * Errors: n_in or n_out out of range (CLT_ERR_INVALID_ARGUMENT), and
 * clt_module_custom's.  New module: release with clt_module_free. */
#define CLT_MODULE_MAX_IO 16
CLT_API clt_status clt_module_custom_multi(const char *name, clt_module_forward_multi_fn forward,
                                           size_t n_in, size_t n_out, void *user,
                                           void (*free_user)(void *), clt_module **out);

/* outputs = m(*inputs), torch's model(*args) flattened: the n_in inputs
 * (borrowed; NULL for an optional one left to its default None) and the
 * n_out outputs, new tensors (release each with clt_tensor_free), the
 * tensors of a tuple result listed in order ((h_n, c_n) as two).
 *
 * What m takes (inputs, then outputs; [..] optional, n_in or n_out may
 * stop before them):
 *   a custom module of clt_module_custom_multi: exactly its n_in and
 *     n_out (some inputs may be NULL);
 *   RNN, GRU: (input, [h0]) -> (output, [h_n]), clt_rnn_forward's;
 *   LSTM: (input, [h0, c0]) -> (output, [h_n, [c_n]]), clt_lstm_forward's
 *     (torch's lstm(x, (h0, c0)) -> output, (h_n, c_n));
 *   RNNCell, GRUCell: (input, [hx]) -> h'; LSTMCell: (input, [hx, cx]) ->
 *     (h', [c']), the cells' forwards;
 *   MultiheadAttention: (query, key, value, [key_padding_mask,
 *     [attn_mask]]) -> (attn_output, [attn_weights]):
 *     clt_multihead_attention with need_weights when n_out is 2 (the
 *     weights averaged over the heads, torch's default);
 *   Bilinear, CosineSimilarity, PairwiseDistance: (input1, input2) -> out;
 *   EmbeddingBag: (input, [offsets, [per_sample_weights]]) -> out;
 *   AdaptiveLogSoftmaxWithLoss: (input, target) -> (output, [loss]);
 *   MaxUnpool1d/2d/3d: (input, indices) -> out (no output_size);
 *   TransformerEncoderLayer, TransformerEncoder: (src, [mask,
 *     [src_key_padding_mask]]) -> out;
 *   TransformerDecoderLayer, TransformerDecoder: (tgt, memory, [tgt_mask,
 *     [memory_mask, [tgt_key_padding_mask, [memory_key_padding_mask]]]])
 *     -> out;
 *   Transformer: (src, tgt, [src_mask, tgt_mask, memory_mask,
 *     src_key_padding_mask, tgt_key_padding_mask,
 *     memory_key_padding_mask]) -> out;
 *   any other module (a clt_module_custom one included): (x) -> y,
 *     clt_module_forward's.
 * The calls named run it, with their hooks, errors and state handling
 * (a failure changes no buffer and takes no numbers from a generator).
 *
 * Errors: a NULL m, inputs or outputs, or a NULL first input
 * (CLT_ERR_NULL_ARGUMENT); a number of inputs or outputs that m does not
 * take (CLT_ERR_INVALID_ARGUMENT, naming what it takes, as torch's
 * "forward() takes 3 positional arguments but 4 were given"); then the
 * forward's, after "clt_module_forward_multi: ".  On failure every output
 * is NULL and nothing is left allocated. */
CLT_API clt_status clt_module_forward_multi(clt_module *m, const clt_tensor *const *inputs,
                                            size_t n_in, clt_tensor **outputs, size_t n_out);

/* Names apply to the three below: not empty, no ".", at most 23 bytes,
 * and not already a parameter, buffer or child of m (PyTorch's "attribute
 * 'name' already exists"); m must be a module of clt_module_custom (a
 * built-in layer's parts are fixed).  Each failure is
 * CLT_ERR_INVALID_ARGUMENT (CLT_ERR_NULL_ARGUMENT for a NULL argument,
 * CLT_ERR_DEVICE_MISMATCH for a device other than the model's, see
 * clt_module_custom) and leaves m unchanged and what was given the
 * caller's. */

/* self.name = child: takes child on success (released with m), which runs
 * when the forward calls clt_module_forward(clt_module_child(m, name), ..).
 * Also refused: a child that a container already owns (one owner, unlike
 * PyTorch's shared submodules), m's model itself, and a model nesting
 * more than 100 levels. */
CLT_API clt_status clt_module_add_module(clt_module *m, const char *name, clt_module *child);

/* self.name = nn.Parameter(t): takes the reference t (released with m;
 * the handle stays valid as long as m: use it, or clt_module_param,
 * without releasing it), which becomes a leaf that requires grad and
 * belongs to no scope.  t must be floating (else CLT_ERR_DTYPE_MISMATCH)
 * and a leaf (a result of recorded ops is refused: pass clt_detach's), and
 * not already a tensor of m's model. */
CLT_API clt_status clt_module_add_parameter(clt_module *m, const char *name, clt_tensor *t);

/* self.register_buffer(name, t): takes t as a parameter above, any dtype,
 * requires_grad left as it is; saved, loaded, moved and converted (when
 * floating) with the model. */
CLT_API clt_status clt_module_add_buffer(clt_module *m, const char *name, clt_tensor *t);

/* m's own child, parameter or buffer called name (borrowed: it lives as
 * long as m), or NULL when m has none of that name (or m or name is
 * NULL).  Children are found by name in custom modules and in layers
 * with named parts ("self_attn"), and by their place written as torch
 * names them ("0", "1", no leading zeros) in a Sequential and in the
 * other layers whose parts are numbered (clt_transformer_encoder's
 * layers). */
CLT_API clt_module *clt_module_child(const clt_module *m, const char *name);
CLT_API clt_tensor *clt_module_param(const clt_module *m, const char *name);
CLT_API clt_tensor *clt_module_buffer(const clt_module *m, const char *name);

/* ---- containers: ModuleList, ModuleDict, ParameterList, ParameterDict ---- */

/* torch.nn.ModuleList, ModuleDict, ParameterList and ParameterDict: modules
 * that hold parts and have no forward (clt_module_forward on one is
 * CLT_ERR_INVALID_ARGUMENT, as torch's "missing the required forward");
 * a custom module's forward runs the parts it needs.  Their parts are
 * named as torch names them: a list's by place ("0", "1", ...), a dict's
 * by key in insertion order, so that the listings, clt_module_state,
 * clt_module_save and clt_module_load, clt_module_to, clt_module_train,
 * clt_module_clone and the optimizers over clt_module_parameters see
 * them as torch's ("layers.0.weight" for a ModuleList given to a custom
 * module as "layers"; "0", "1" for a ParameterList's own tensors).  Each
 * is a new module: release it with clt_module_free, which releases its
 * parts; give it to a custom module with clt_module_add_module.
 * clt_module_add_module, clt_module_add_parameter and
 * clt_module_add_buffer refuse containers (use the calls below).
 *
 * Modules given are taken on success (released with the container), and
 * left the caller's on failure: one given twice, one that a container
 * already owns, the container's own model, one on another device than
 * the model's, or nesting more than 100 levels are refused
 * (CLT_ERR_INVALID_ARGUMENT, CLT_ERR_DEVICE_MISMATCH), as in
 * clt_module_add_module.  Tensors given are taken as
 * clt_module_add_parameter takes them (they become leaves that require
 * grad, in no scope; the handles stay valid as long as the container):
 * each must be floating, a leaf, on the model's device, and not already
 * a tensor of the model. */

/* ModuleList(mods): the n modules (n may be 0) in order. */
CLT_API clt_status clt_module_list(clt_module *const *mods, size_t n, clt_module **out);
/* list.append(m), list.extend(mods) and list.insert(index, m) (index in
 * [-len, len], negative counting from the end; else
 * CLT_ERR_INDEX_OUT_OF_RANGE): the modules after it move one place up,
 * and their names with them ("1" becomes "2").  CLT_ERR_INVALID_ARGUMENT
 * for a list that is not a ModuleList. */
CLT_API clt_status clt_module_list_append(clt_module *list, clt_module *m);
CLT_API clt_status clt_module_list_extend(clt_module *list, clt_module *const *mods, size_t n);
CLT_API clt_status clt_module_list_insert(clt_module *list, int64_t index, clt_module *m);
/* len(list): the modules of a ModuleList or ModuleDict (0 for anything
 * else or NULL). */
CLT_API int64_t clt_module_list_len(const clt_module *list);
/* list[index] (borrowed; negative counts from the end), or NULL when out
 * of range or list is no ModuleList.  clt_module_child(list, "0") gives
 * the same, as it does for a Sequential's children. */
CLT_API clt_module *clt_module_list_get(const clt_module *list, int64_t index);

/* ModuleDict({names[k]: mods[k]}): keys not empty, without ".", at most
 * 23 bytes, each once.  dict[name] (borrowed) is clt_module_child(dict,
 * name); its length clt_module_list_len. */
CLT_API clt_status clt_module_dict(const char *const *names, clt_module *const *mods, size_t n,
                                   clt_module **out);
/* dict[name] = m: a new key goes last; an existing key keeps its place and
 * the module it held is released (handles to it become invalid).
 * CLT_ERR_INVALID_ARGUMENT for a dict that is not a ModuleDict. */
CLT_API clt_status clt_module_dict_set(clt_module *dict, const char *name, clt_module *m);

/* ParameterList(ts): the n tensors in order, named "0", "1", ... */
CLT_API clt_status clt_parameter_list(clt_tensor *const *ts, size_t n, clt_module **out);
/* list.append(t); CLT_ERR_INVALID_ARGUMENT for a list that is not a
 * ParameterList. */
CLT_API clt_status clt_parameter_list_append(clt_module *list, clt_tensor *t);
/* len(list) of a ParameterList or ParameterDict (0 for anything else or
 * NULL). */
CLT_API int64_t clt_parameter_list_len(const clt_module *list);
/* list[index] (borrowed; negative counts from the end), or NULL when out
 * of range or list is no ParameterList. */
CLT_API clt_tensor *clt_parameter_list_get(const clt_module *list, int64_t index);

/* ParameterDict({names[k]: ts[k]}), keys as ModuleDict's.  dict[name]
 * (borrowed) is clt_module_param(dict, name). */
CLT_API clt_status clt_parameter_dict(const char *const *names, clt_tensor *const *ts, size_t n,
                                      clt_module **out);
/* dict[name] = t: a new key goes last; an existing key keeps its place
 * and the tensor it held is released.  CLT_ERR_INVALID_ARGUMENT for a
 * dict that is not a ParameterDict. */
CLT_API clt_status clt_parameter_dict_set(clt_module *dict, const char *name, clt_tensor *t);

/* ---- layers (each a new module: release with clt_module_free) ------------- */

/* torch.nn.Sequential: runs mods in order.  Takes ownership of the n
 * modules when it succeeds (they are released with the container); one
 * module given twice, or a module that a container already owns, is
 * CLT_ERR_INVALID_ARGUMENT (each module has one owner, unlike PyTorch's
 * shared submodules), and so is a model nesting containers more than 100
 * levels deep (running a model recurses once per level). */
CLT_API clt_status clt_sequential(clt_module *const *mods, size_t n, clt_module **out);

/* torch.nn.Linear: y = x W^T + b over the last dimension of x.  weight
 * [out_features, in_features] and bias [out_features] (when bias is
 * non-zero), both uniform in +-1/sqrt(in_features), float32 on dev.  Both
 * sizes must be positive (PyTorch also makes empty layers). */
CLT_API clt_status clt_linear(clt_device *dev, int64_t in_features, int64_t out_features,
                              int bias, clt_generator *gen, clt_module **out);

/* torch.nn.Conv2d(in_channels, out_channels, (kernel_h, kernel_w), ...):
 * y = clt_conv2d(x, weight, bias, opts) for x [N, C, H, W] or [C, H, W].
 * opts NULL: stride 1, padding 0, dilation 1, groups 1.  weight
 * [out_channels, in_channels / groups, kernel_h, kernel_w] and bias
 * [out_channels] (when bias is non-zero), both uniform in
 * +-1/sqrt(fan_in), fan_in = in_channels / groups * kernel_h * kernel_w,
 * float32 on dev.  groups must divide both channel counts.  A convolution
 * that BatchNorm follows is made without bias (bias 0; torchvision's
 * bias=False): see clt_batch_norm2d_layer. */
CLT_API clt_status clt_conv2d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                                    int64_t kernel_h, int64_t kernel_w,
                                    const clt_conv2d_opts *opts, int bias, clt_generator *gen,
                                    clt_module **out);

/* torch.nn.Conv1d(in_channels, out_channels, kernel_size, ...):
 * y = clt_conv1d(x, weight, bias, opts) for x [N, C, L] or [C, L].  opts
 * NULL: stride 1, padding 0, dilation 1, groups 1.  weight [out_channels,
 * in_channels / groups, kernel_size] and bias [out_channels] (when bias is
 * non-zero), both uniform in +-1/sqrt(in_channels / groups * kernel_size),
 * float32 on dev.  A new module (*out), released with clt_module_free. */
CLT_API clt_status clt_conv1d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                                    int64_t kernel_size, const clt_conv1d_opts *opts, int bias,
                                    clt_generator *gen, clt_module **out);

/* torch.nn.ConvTranspose2d(in_channels, out_channels, (kernel_h,
 * kernel_w), ...): y = clt_conv_transpose2d(x, weight, bias, opts) for x
 * [N, C, H, W] or [C, H, W].  opts NULL: stride 1, padding 0,
 * output_padding 0, groups 1, dilation 1; output_padding must be below
 * the stride or the dilation.  weight [in_channels, out_channels / groups,
 * kernel_h, kernel_w] (PyTorch's layout, so that its state_dict loads as
 * it is) and bias [out_channels], both uniform in +-1/sqrt(fan_in) with
 * PyTorch's fan_in = out_channels / groups * kernel_h * kernel_w, float32
 * on dev.  A new module (*out), released with clt_module_free. */
CLT_API clt_status clt_conv_transpose2d_layer(clt_device *dev, int64_t in_channels,
                                              int64_t out_channels, int64_t kernel_h,
                                              int64_t kernel_w,
                                              const clt_conv_transpose2d_opts *opts, int bias,
                                              clt_generator *gen, clt_module **out);

/* torch.nn.Conv3d(in_channels, out_channels, kernel_size, ...):
 * y = clt_conv3d(x, weight, bias, opts) for x [N, C, D, H, W] or
 * [C, D, H, W].  kernel_size {kD, kH, kW} (> 0, required); opts NULL:
 * stride 1, padding 0, dilation 1, groups 1.  weight [out_channels,
 * in_channels / groups, kD, kH, kW] and bias [out_channels] (when bias is
 * non-zero), both uniform in +-1/sqrt(in_channels / groups kD kH kW),
 * float32 on dev, as torch's reset_parameters.  groups must divide both
 * channel counts.  A new module (*out), released with clt_module_free. */
CLT_API clt_status clt_conv3d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                                    const int64_t kernel_size[3], const clt_conv3d_opts *opts,
                                    int bias, clt_generator *gen, clt_module **out);

/* torch.nn.ConvTranspose1d(in_channels, out_channels, kernel_size, ...)
 * and torch.nn.ConvTranspose3d(in_channels, out_channels, (kD, kH, kW),
 * ...): y = clt_conv_transpose1d (or 3d)(x, weight, bias, opts) for x
 * [N, C, L] or [C, L] ([N, C, D, H, W] or [C, D, H, W]).  opts NULL:
 * stride 1, padding 0, output_padding 0, groups 1, dilation 1;
 * output_padding must be below the stride or the dilation.  weight
 * [in_channels, out_channels / groups, k...] (PyTorch's layout, so that
 * its state_dict loads as it is) and bias [out_channels], both uniform in
 * +-1/sqrt(fan_in) with PyTorch's fan_in = out_channels / groups times
 * the kernel's sizes, float32 on dev.  A new module (*out), released with
 * clt_module_free. */
CLT_API clt_status clt_conv_transpose1d_layer(clt_device *dev, int64_t in_channels,
                                              int64_t out_channels, int64_t kernel_size,
                                              const clt_conv_transpose1d_opts *opts, int bias,
                                              clt_generator *gen, clt_module **out);
CLT_API clt_status clt_conv_transpose3d_layer(clt_device *dev, int64_t in_channels,
                                              int64_t out_channels,
                                              const int64_t kernel_size[3],
                                              const clt_conv_transpose3d_opts *opts, int bias,
                                              clt_generator *gen, clt_module **out);

/* torch.nn.Upsample(size, scale_factor, mode, align_corners):
 * clt_interpolate(x, size, scale_factor, mode, align_corners) at each
 * forward, for 4-D input (the modes that take 4-D input: nearest,
 * nearest-exact, bilinear, bicubic, area).  Exactly one of size (both
 * > 0) and scale_factor (finite, > 0) is given, the other NULL (both
 * copied); align_corners only with the interpolating modes; checked here
 * (CLT_ERR_INVALID_ARGUMENT).  No tensors.  A new module (*out), released
 * with clt_module_free. */
CLT_API clt_status clt_upsample_layer(const int64_t size[2], const double scale_factor[2],
                                      clt_interp_mode mode, int align_corners, clt_module **out);

/* torch.nn.Upsample(size, scale_factor, mode, align_corners,
 * recompute_scale_factor) for nd spatial dimensions (1, 2 or 3: input
 * [N, C, L], [N, C, H, W] or [N, C, D, H, W]):
 * clt_interpolate_nd(x, size, scale_factor, mode, align_corners,
 * recompute_scale_factor) at each forward, size and scale_factor holding
 * nd entries (copied), checked here as clt_upsample_layer's, the mode
 * against nd too; an input of another rank is refused at the forward
 * (CLT_ERR_SHAPE_MISMATCH).  No tensors.  A new module (*out), released
 * with clt_module_free. */
CLT_API clt_status clt_upsample_nd_layer(int nd, const int64_t *size, const double *scale_factor,
                                         clt_interp_mode mode, int align_corners,
                                         int recompute_scale_factor, clt_module **out);

/* torch.nn.UpsamplingNearest2d(size, scale_factor) and
 * UpsamplingBilinear2d(size, scale_factor): clt_upsample_layer with mode
 * CLT_INTERP_NEAREST, and with CLT_INTERP_BILINEAR and align_corners 1,
 * as torch.  A new module (*out), released with clt_module_free. */
CLT_API clt_status clt_upsampling_nearest2d_layer(const int64_t size[2],
                                                  const double scale_factor[2], clt_module **out);
CLT_API clt_status clt_upsampling_bilinear2d_layer(const int64_t size[2],
                                                   const double scale_factor[2],
                                                   clt_module **out);

/* torch.nn.MaxPool2d((kernel_h, kernel_w), ...) and AvgPool2d: clt_max_pool2d
 * and clt_avg_pool2d with the settings of opts (NULL: PyTorch's defaults,
 * stride the kernel size, padding 0, dilation 1, no ceil_mode,
 * count_include_pad). */
CLT_API clt_status clt_max_pool2d_layer(int64_t kernel_h, int64_t kernel_w,
                                        const clt_pool2d_opts *opts, clt_module **out);
CLT_API clt_status clt_avg_pool2d_layer(int64_t kernel_h, int64_t kernel_w,
                                        const clt_pool2d_opts *opts, clt_module **out);

/* torch.nn.MaxPool1d(kernel, ...) and AvgPool1d: clt_max_pool1d and
 * clt_avg_pool1d with the settings of opts (NULL: PyTorch's defaults,
 * CLT_POOL1D_DEFAULTS: stride the kernel size, padding 0, dilation 1, no
 * ceil_mode, count_include_pad).  kernel > 0 is checked here, the rest at
 * the forward.  No tensors.  A new module (*out), released with
 * clt_module_free. */
CLT_API clt_status clt_max_pool1d_layer(int64_t kernel, const clt_pool1d_opts *opts,
                                        clt_module **out);
CLT_API clt_status clt_avg_pool1d_layer(int64_t kernel, const clt_pool1d_opts *opts,
                                        clt_module **out);

/* torch.nn.AdaptiveAvgPool2d((out_h, out_w)): clt_adaptive_avg_pool2d to
 * that size (both >= 0, checked here: CLT_ERR_INVALID_ARGUMENT; PyTorch
 * refuses them at the first forward).  AdaptiveAvgPool2d(1) is out_h =
 * out_w = 1. */
CLT_API clt_status clt_adaptive_avg_pool2d_layer(int64_t out_h, int64_t out_w, clt_module **out);

/* torch.nn.Identity: its forward gives the input back as a new handle
 * (a view sharing its storage, released with clt_tensor_free) through
 * which gradients flow to the input; PyTorch returns the very object. */
CLT_API clt_status clt_identity_layer(clt_module **out);

/* torch.nn.Flatten(start_dim, end_dim) (PyTorch's defaults are 1, -1). */
CLT_API clt_status clt_flatten_layer(int start_dim, int end_dim, clt_module **out);

/* torch.nn.LayerNorm(normalized_shape, eps, elementwise_affine): normalises
 * over the last ndim dims (biased variance), as clt_layer_norm; weight ones
 * and bias zeros (float32) when affine.  A floating input other than
 * float32 needs elementwise_affine 0 (see Dtypes above); a float16 one
 * (on a device with float16) goes through recorded mean, var, sub, rsqrt
 * and mul ops instead of the fused kernel. */
CLT_API clt_status clt_layer_norm_layer(clt_device *dev, int ndim, const int64_t *normalized_shape,
                                        double eps, int elementwise_affine, clt_module **out);

/* torch.nn.functional.group_norm(input, num_groups, weight, bias, eps):
 * input [N, C, *] (at least 2 dims, float32 or float64) is split into
 * num_groups groups of C / num_groups channels, each sample's group
 * normalised over its channels and all of * together (biased variance:
 * (x - mean) / sqrt(var + eps)), then scaled by weight and shifted by
 * bias, both [C] of input's dtype and device, either NULL (none).  New
 * tensor of input's shape and dtype: release with clt_tensor_free.
 * Differentiable in input, weight and bias.  PyTorch's eps is 1e-5.
 *
 * Errors, in torch's words: num_groups <= 0 (CLT_ERR_INVALID_ARGUMENT), C
 * not divisible by num_groups, fewer than 2 dims, a weight or bias that
 * is not a vector of C values (CLT_ERR_SHAPE_MISMATCH); a weight or bias
 * of another dtype (CLT_ERR_DTYPE_MISMATCH) or device; an integer, bool or
 * float16 input (CLT_ERR_DTYPE_UNSUPPORTED, as torch's CPU kernel).  As
 * torch 1.13's F.group_norm, one sample (N = 1) whose groups hold one value
 * each is refused ("Expected more than 1 value per channel when
 * training", CLT_ERR_INVALID_ARGUMENT).  Unlike torch, a negative or NaN
 * eps is refused too (CLT_ERR_INVALID_ARGUMENT), as LayerNorm's.  Empty
 * inputs (N, C or a size of * zero) give empty results.
 *
 * The normalisation is the fused kernel of clt_layer_norm over rows of C /
 * num_groups * prod(*) values (one launch, a copy first when input is not
 * contiguous; its backward node is NativeGroupNormBackward0, one or two
 * launches); weight and bias follow as a recorded mul and add over the
 * channels.  A new tensor, not a module: release with clt_tensor_free. */
/* torch.nn.functional.layer_norm(input, normalized_shape, weight, bias,
 * eps): input (float32 or float64) normalised over its last ndim dims,
 * whose sizes must be normalized_shape[0..ndim): per row of those
 * prod(normalized_shape) values, y = (x - mean) * rstd with rstd = 1 /
 * sqrt(biased var + eps), then times weight and plus bias, elementwise
 * over the normalised dims (both of shape normalized_shape, input's dtype
 * and device; either NULL: none).  New tensor of input's shape and dtype:
 * release with clt_tensor_free.  Differentiable in input, weight and bias
 * (grad_fn NativeLayerNormBackward0).  PyTorch's eps is 1e-5.
 *
 * One fused kernel launch (torch's native_layer_norm; a copy first when
 * input is not contiguous), which reads each row three times: the mean,
 * then the squared deviations from it, then the output.  Rows are taken
 * relative to their first element and float32 rows accumulate in float64
 * where the device has it (float64 ones with compensated sums), so rows far
 * from 0, such as 1e4 plus noise of 1e-2, keep their digits where torch's
 * kernel loses them.  The statistics are saved for the backward, which
 * takes one launch for the input's gradient and one for the weight's and
 * bias's.  NaN or inf in a
 * row make its outputs NaN; an empty input gives an empty result; a row of
 * one value gives 0 (NaN with eps 0).
 *
 * Errors, in torch's words where it has them: ndim outside [1, 8] or a
 * negative size (CLT_ERR_INVALID_ARGUMENT); an input whose last dims are
 * not normalized_shape, a weight or bias of another shape
 * (CLT_ERR_SHAPE_MISMATCH); a weight or bias of another dtype
 * (CLT_ERR_DTYPE_MISMATCH) or device; an integer, bool or float16 input
 * (CLT_ERR_DTYPE_UNSUPPORTED, as torch's CPU kernel).  Unlike torch, a
 * negative or NaN eps is refused (CLT_ERR_INVALID_ARGUMENT), as
 * LayerNorm's. */
CLT_API clt_status clt_layer_norm(const clt_tensor *input, int ndim,
                                  const int64_t *normalized_shape, const clt_tensor *weight,
                                  const clt_tensor *bias, double eps, clt_tensor **out);

CLT_API clt_status clt_group_norm(const clt_tensor *input, int64_t num_groups,
                                  const clt_tensor *weight, const clt_tensor *bias, double eps,
                                  clt_tensor **out);

/* torch.nn.GroupNorm(num_groups, num_channels, eps, affine): clt_group_norm
 * with the layer's weight (ones) and bias (zeros), both [num_channels]
 * float32 on dev, when affine; without affine none.  num_groups must be
 * positive and divide num_channels (>= 0), eps >= 0 (PyTorch: 1e-5);
 * otherwise CLT_ERR_INVALID_ARGUMENT.  An input's channels must number
 * num_channels when affine (torch's weight message otherwise); without
 * affine only num_groups is checked against them, as in PyTorch.  The
 * parameters are float32 until clt_module_to_dtype: with affine an input
 * of another dtype is refused (see Dtypes above). */
CLT_API clt_status clt_group_norm_layer(clt_device *dev, int64_t num_groups, int64_t num_channels,
                                        double eps, int affine, clt_module **out);

/* torch.nn.BatchNorm1d ([N, C] or [N, C, L] inputs) and BatchNorm2d ([N, C,
 * H, W]): in train mode, normalises with the batch's statistics and, when
 * track_running_stats, updates the buffers running_mean, running_var
 * (unbiased) and num_batches_tracked with `momentum` (PyTorch: 0.1); in
 * eval mode uses the running statistics.  momentum CLT_BN_CUMULATIVE is
 * torch's momentum=None: a cumulative moving average, the batch weighed
 * by 1 / num_batches_tracked (counted with it, read from the buffer, so
 * that a loaded state_dict's count goes on); num_batches_tracked counts
 * every training batch whatever the momentum, as torch's.  Errors:
 * num_features <= 0, eps < 0, or momentum neither in [0, 1] nor
 * CLT_BN_CUMULATIVE (CLT_ERR_INVALID_ARGUMENT).  eps PyTorch: 1e-5.  The
 * parameters and running statistics are float32 (until
 * clt_module_to_dtype): an input of another dtype is refused unless the
 * layer has neither (affine 0, track_running_stats 0), as in PyTorch.
 *
 * The layer before BatchNorm (a Conv2d, a Linear) should have no bias, as
 * torchvision makes its convolutions (bias=False): BatchNorm subtracts
 * each channel's mean, which cancels a per-channel bias exactly, so the
 * bias changes nothing in the output and its gradient is zero but for
 * rounding.  It is not merely wasted: Adam (and AdamW) divides each step
 * by the gradient's running magnitude, so a gradient of rounding noise
 * still moves the bias by about the learning rate per step, and it drifts
 * (weight decay pulls it back only slowly).  BatchNorm's own bias (beta,
 * with affine) plays its part. */
#define CLT_BN_CUMULATIVE (-1.0)
CLT_API clt_status clt_batch_norm1d_layer(clt_device *dev, int64_t num_features, double eps,
                                          double momentum, int affine, int track_running_stats,
                                          clt_module **out);
CLT_API clt_status clt_batch_norm2d_layer(clt_device *dev, int64_t num_features, double eps,
                                          double momentum, int affine, int track_running_stats,
                                          clt_module **out);
/* torch.nn.BatchNorm3d: as clt_batch_norm2d_layer for [N, C, D, H, W]
 * input ("expected 5D input"); its statistics over N, D, H and W. */
CLT_API clt_status clt_batch_norm3d_layer(clt_device *dev, int64_t num_features, double eps,
                                          double momentum, int affine, int track_running_stats,
                                          clt_module **out);

/* torch.nn.Dropout(p): in train mode zeroes each element with probability
 * p (in [0, 1]; NaN is refused, which PyTorch lets through) and scales the
 * others by 1 / (1 - p); the masks come from gen (NULL: the default
 * generator) and are the same on every device for the same generator
 * state.  gen is borrowed, unlike the other layers' (which draw from it
 * only while they are made): every forward in train mode draws from it,
 * so it must outlive the layer (clt_generator_free after
 * clt_module_free).  The identity in eval mode.  In train mode with
 * 0 < p < 1 the input must be floating point (an integer or bool one is
 * CLT_ERR_DTYPE_MISMATCH, as PyTorch's "result type Float can't be cast"),
 * and nothing is drawn from gen when it is refused. */
CLT_API clt_status clt_dropout_layer(double p, clt_generator *gen, clt_module **out);

/* torch.nn.Embedding(num_embeddings, embedding_dim): rows of a weight
 * table (normal(0, 1)) picked by int64 or int32 indices of any shape
 * (clt_embedding's rules, index.h). */
CLT_API clt_status clt_embedding_layer(clt_device *dev, int64_t num_embeddings,
                                       int64_t embedding_dim, clt_generator *gen,
                                       clt_module **out);

/* torch.nn.Embedding(num_embeddings, embedding_dim, padding_idx=...): as
 * clt_embedding_layer, with the row padding_idx (NULL: none; negative
 * counts from the end) of the initial weight zeros, as torch's, and a
 * forward that is clt_embedding_ex with that padding_idx (the row gets no
 * gradient, so an optimizer without weight decay leaves it as it is).
 * Errors: clt_embedding_layer's, a padding_idx out of range
 * (CLT_ERR_INVALID_ARGUMENT, "Padding_idx must be within num_embeddings");
 * a failed constructor takes no numbers from gen.  New module: release
 * with clt_module_free. */
CLT_API clt_status clt_embedding_layer_ex(clt_device *dev, int64_t num_embeddings,
                                          int64_t embedding_dim, const int64_t *padding_idx,
                                          clt_generator *gen, clt_module **out);

/* torch.nn.Embedding(num_embeddings, embedding_dim, padding_idx, max_norm,
 * norm_type, scale_grad_by_freq) with opts (index.h; NULL:
 * CLT_EMBEDDING_DEFAULTS): as clt_embedding_layer_ex, with a forward that
 * is clt_embedding_with_opts with these options (with max_norm, each
 * forward renormalises the rows it reads in the layer's weight, in place;
 * sparse: the weight's gradient sparse COO, index.h).
 * The options are copied.  Errors: clt_embedding_layer_ex's.  New module:
 * release with clt_module_free. */
CLT_API clt_status clt_embedding_layer_with_opts(clt_device *dev, int64_t num_embeddings,
                                                 int64_t embedding_dim,
                                                 const clt_embedding_opts *opts,
                                                 clt_generator *gen, clt_module **out);

/* torch.nn.Embedding.from_pretrained(embeddings, freeze, padding_idx,
 * max_norm, norm_type, scale_grad_by_freq) (opts NULL:
 * CLT_EMBEDDING_DEFAULTS): an Embedding whose parameter "weight" shares
 * embeddings' storage (a new handle on it, as torch's Parameter: writes
 * through either are seen by both; embeddings stays the caller's), its
 * padding row left as it is, of embeddings' dtype and device, requiring
 * grad unless freeze (torch's default freeze is 1).  Errors: embeddings
 * NULL (CLT_ERR_NULL_ARGUMENT), not 2-D (CLT_ERR_SHAPE_MISMATCH,
 * "Embeddings parameter is expected to be 2-dimensional"), not float32 or
 * float64 (CLT_ERR_DTYPE_UNSUPPORTED), a padding_idx out of range
 * (CLT_ERR_INVALID_ARGUMENT).  New module: release with clt_module_free. */
CLT_API clt_status clt_embedding_layer_from_pretrained(const clt_tensor *embeddings, int freeze,
                                                       const clt_embedding_opts *opts,
                                                       clt_module **out);

/* The padding_idx of an Embedding or EmbeddingBag layer (its attribute
 * padding_idx): *has_padding_idx 0 for torch's None (and *padding_idx
 * -1), else 1 and *padding_idx the row, wrapped into [0, num_embeddings)
 * as torch stores it.  Another module is CLT_ERR_INVALID_ARGUMENT. */
CLT_API clt_status clt_embedding_layer_padding_idx(const clt_module *m, int *has_padding_idx,
                                                   int64_t *padding_idx);

/* The activations as layers: ReLU, GELU (exact, erf), Tanh, Sigmoid,
 * SiLU (clt_silu: floating inputs only). */
CLT_API clt_status clt_relu_layer(clt_module **out);
CLT_API clt_status clt_gelu_layer(clt_module **out);
CLT_API clt_status clt_tanh_layer(clt_module **out);
CLT_API clt_status clt_sigmoid_layer(clt_module **out);
CLT_API clt_status clt_silu_layer(clt_module **out);
/* torch.nn.Softplus(beta, threshold): clt_softplus with the layer's beta
 * and threshold, which PyTorch defaults to beta = 1, threshold = 20 (pass
 * those for nn.Softplus()).  Any values are taken, as by clt_softplus. */
CLT_API clt_status clt_softplus_layer(double beta, double threshold, clt_module **out);
/* torch.nn.LeakyReLU(negative_slope) and torch.nn.ELU(alpha): clt_leaky_relu
 * and clt_elu with the layer's scalar (PyTorch's defaults: 0.01 and 1.0;
 * pass those for nn.LeakyReLU() and nn.ELU()).  Any value is taken. */
CLT_API clt_status clt_leaky_relu_layer(double negative_slope, clt_module **out);
CLT_API clt_status clt_elu_layer(double alpha, clt_module **out);
/* The rest of torch.nn's activations as layers, each the op of ops.h (or
 * linalg.h for the softmaxes) with the layer's settings; clt_module_name
 * gives PyTorch's class name ("Hardtanh", "ReLU6", "Hardsigmoid",
 * "Hardswish", "Mish", "SELU", "CELU", "Softsign", "Tanhshrink",
 * "Hardshrink", "Softshrink", "LogSigmoid", "Threshold", "GLU", "Softmax",
 * "LogSoftmax", "Softmin", "PReLU").  PyTorch's defaults, to pass for the
 * constructors without arguments: Hardtanh(-1, 1), CELU(1.0),
 * Hardshrink(0.5), Softshrink(0.5), GLU(-1); Threshold, Softmax,
 * LogSoftmax and Softmin have none (the softmaxes' dim is required here:
 * PyTorch's implicit dim is deprecated).  Hardtanh refuses max_val <=
 * min_val (CLT_ERR_INVALID_ARGUMENT), as nn.Hardtanh asserts; the other
 * settings are checked when the layer runs, as the ops check them.  New
 * module: release with clt_module_free. */
CLT_API clt_status clt_hardtanh_layer(double min_val, double max_val, clt_module **out);
CLT_API clt_status clt_relu6_layer(clt_module **out);
CLT_API clt_status clt_hardsigmoid_layer(clt_module **out);
CLT_API clt_status clt_hardswish_layer(clt_module **out);
CLT_API clt_status clt_mish_layer(clt_module **out);
CLT_API clt_status clt_selu_layer(clt_module **out);
CLT_API clt_status clt_celu_layer(double alpha, clt_module **out);
CLT_API clt_status clt_softsign_layer(clt_module **out);
CLT_API clt_status clt_tanhshrink_layer(clt_module **out);
CLT_API clt_status clt_hardshrink_layer(double lambd, clt_module **out);
CLT_API clt_status clt_softshrink_layer(double lambd, clt_module **out);
CLT_API clt_status clt_logsigmoid_layer(clt_module **out);
CLT_API clt_status clt_threshold_layer(double threshold, double value, clt_module **out);
CLT_API clt_status clt_glu_layer(int dim, clt_module **out);
CLT_API clt_status clt_softmax_layer(int dim, clt_module **out);
CLT_API clt_status clt_log_softmax_layer(int dim, clt_module **out);
CLT_API clt_status clt_softmin_layer(int dim, clt_module **out);
/* torch.nn.PReLU(num_parameters, init) on dev: clt_prelu with its float32
 * parameter "weight" (its state_dict key, as PyTorch's) of num_parameters
 * elements, each init (PyTorch's defaults 1 and 0.25).  num_parameters 1
 * applies to any input, else it must equal the input's dim 1; negative is
 * CLT_ERR_INVALID_ARGUMENT.  The input must be float32 and on dev.  New
 * module: release with clt_module_free. */
CLT_API clt_status clt_prelu_layer(clt_device *dev, int64_t num_parameters, double init,
                                   clt_module **out);

/* torch.nn.PixelShuffle(upscale_factor), PixelUnshuffle(downscale_factor)
 * and ChannelShuffle(groups): clt_pixel_shuffle, clt_pixel_unshuffle and
 * clt_channel_shuffle (conv.h) with the layer's setting, which must be
 * positive (CLT_ERR_INVALID_ARGUMENT here; PyTorch refuses it at the
 * forward).  No tensors; any dtype.  New module: release with
 * clt_module_free. */
CLT_API clt_status clt_pixel_shuffle_layer(int64_t upscale_factor, clt_module **out);
CLT_API clt_status clt_pixel_unshuffle_layer(int64_t downscale_factor, clt_module **out);
CLT_API clt_status clt_channel_shuffle_layer(int64_t groups, clt_module **out);

/* torch.nn.Unfold(kernel_size, dilation, padding, stride) and
 * torch.nn.Fold(output_size, kernel_size, dilation, padding, stride):
 * clt_unfold and clt_fold (conv.h) with the layer's settings (opts NULL:
 * CLT_FOLD_DEFAULTS; both copied).  The kernel, dilation and stride must
 * be positive, padding and output_size non-negative
 * (CLT_ERR_INVALID_ARGUMENT here); the rest is checked at the forward.
 * No tensors.  New module: release with clt_module_free. */
CLT_API clt_status clt_unfold_layer(const int64_t kernel_size[2], const clt_fold_opts *opts,
                                    clt_module **out);
CLT_API clt_status clt_fold_layer(const int64_t output_size[2], const int64_t kernel_size[2],
                                  const clt_fold_opts *opts, clt_module **out);

/* torch.nn.functional.bilinear(input1, input2, weight, bias): y[..., o] =
 * sum over i, j of input1[..., i] weight[o, i, j] input2[..., j], plus
 * bias[o] when bias is not NULL.  input1 [*, in1] and input2 [*, in2] have
 * the same leading dims (none: 1-D inputs give [out]), weight is [out,
 * in1, in2], bias [out]; one floating dtype (float32 or float64) and
 * device.  Computed as two recorded matmuls (input1 against weight seen as
 * [in1, out in2], then each row's [out, in2] block against input2) and an
 * add, so that it is differentiable in all four (the last node is
 * AddBackward0 with a bias, as torch's).  Errors, in torch's words: ranks
 * or leading sizes that differ, sizes that do not match the weight's, a
 * weight other than 3-D, a bias other than [out]
 * (CLT_ERR_SHAPE_MISMATCH); dtypes that differ (CLT_ERR_DTYPE_MISMATCH);
 * an integer weight (CLT_ERR_DTYPE_UNSUPPORTED); devices that differ.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_bilinear(const clt_tensor *input1, const clt_tensor *input2,
                                const clt_tensor *weight, const clt_tensor *bias,
                                clt_tensor **out);

/* torch.nn.Bilinear(in1_features, in2_features, out_features, bias) on
 * dev: parameters "weight" [out_features, in1_features, in2_features] and,
 * when bias, "bias" [out_features] (their state_dict keys, as PyTorch's),
 * both uniform in +-1/sqrt(in1_features) drawn from gen in that order
 * (torch's reset_parameters), float32.  Every size must be positive
 * (CLT_ERR_INVALID_ARGUMENT).  It takes two inputs: run it with
 * clt_bilinear_forward (clt_module_forward refuses it,
 * CLT_ERR_INVALID_ARGUMENT).  New module: release with clt_module_free. */
CLT_API clt_status clt_bilinear_layer(clt_device *dev, int64_t in1_features,
                                      int64_t in2_features, int64_t out_features, int bias,
                                      clt_generator *gen, clt_module **out);

/* A Bilinear's forward(input1, input2): clt_bilinear with its parameters.
 * The inputs must be on the module's device and of its dtype (see Dtypes
 * above); a module that is not a Bilinear is CLT_ERR_INVALID_ARGUMENT.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_bilinear_forward(clt_module *m, const clt_tensor *input1,
                                        const clt_tensor *input2, clt_tensor **out);

/* torch.nn.utils.rnn.pad_sequence(sequences, batch_first, padding_value):
 * the n tensors seqs[k] [L_k, *] (at least one dim, the same trailing
 * sizes *, one device) stacked into [max L, n, *] ([n, max L, *] with
 * batch_first), each padded after its end with padding_value (as
 * clt_full's value for the dtype), in the dtype of seqs[0] (the others
 * converted, as torch's copy into its result).  Differentiable: sequence
 * k's gradient is its rows of the output's (the node is
 * torch::autograd::CopySlices, as torch 1.13's).  Errors: n 0 ("received
 * an empty list of sequences", CLT_ERR_INVALID_ARGUMENT), a NULL sequence
 * (CLT_ERR_NULL_ARGUMENT), a 0-d one (CLT_ERR_DIM_OUT_OF_RANGE), trailing
 * sizes or ranks that differ (CLT_ERR_SHAPE_MISMATCH), devices that
 * differ, a result of more than CLT_MAX_DIMS dims.  New tensor: release
 * with clt_tensor_free. */
CLT_API clt_status clt_pad_sequence(const clt_tensor *const *seqs, size_t n, int batch_first,
                                    double padding_value, clt_tensor **out);

/* torch.nn.Unflatten(dim, unflattened_size): clt_unflatten(x, dim, sizes,
 * k) (view.h) on its input; the k sizes (1 to CLT_MAX_DIMS, one of them
 * may be -1) are copied.  torch.nn.Softmax2d: softmax over dim -3 of a
 * [C, H, W] or [N, C, H, W] input (another rank: CLT_ERR_SHAPE_MISMATCH,
 * "Softmax2d requires a 3D or 4D tensor as input").  Errors: k below 1
 * (CLT_ERR_INVALID_ARGUMENT, "unflatten: sizes must be non-empty") or
 * above CLT_MAX_DIMS (CLT_ERR_TOO_MANY_DIMS); the forward's as
 * clt_unflatten's and clt_softmax's.  No tensors: any device and dtype.
 * New module: release with clt_module_free. */
CLT_API clt_status clt_unflatten_layer(int dim, const int64_t *sizes, int k, clt_module **out);
CLT_API clt_status clt_softmax2d_layer(clt_module **out);

/* torch.nn.CosineSimilarity(dim, eps) (torch's defaults 1 and 1e-8) and
 * torch.nn.PairwiseDistance(p, eps, keepdim) (2, 1e-6, 0): modules of two
 * inputs, run with clt_cosine_similarity_forward and
 * clt_pairwise_distance_forward (clt_module_forward refuses them,
 * CLT_ERR_INVALID_ARGUMENT), which give clt_cosine_similarity(x1, x2,
 * dim, eps) (reduce.h) and clt_pairwise_distance(x1, x2, p, eps, keepdim)
 * (loss.h) with their errors, through m's hooks on x1 and the result.  A
 * module of another kind is CLT_ERR_INVALID_ARGUMENT.  New module:
 * release with clt_module_free; new tensor: release with
 * clt_tensor_free, NULL on failure. */
CLT_API clt_status clt_cosine_similarity_layer(int dim, double eps, clt_module **out);
CLT_API clt_status clt_pairwise_distance_layer(double p, double eps, int keepdim,
                                               clt_module **out);
CLT_API clt_status clt_cosine_similarity_forward(clt_module *m, const clt_tensor *x1,
                                                 const clt_tensor *x2, clt_tensor **out);
CLT_API clt_status clt_pairwise_distance_forward(clt_module *m, const clt_tensor *x1,
                                                 const clt_tensor *x2, clt_tensor **out);

/* ---- packed sequences (torch.nn.utils.rnn) -------------------------------
 * A PackedSequence is torch's four tensors, handed out and taken as four
 * tensors: data [sum of lengths, *], the steps of all sequences one after
 * another (step t holds the first batch_sizes[t] sequences of the batch
 * sorted by decreasing length); batch_sizes [T] (int64, on data's device,
 * where torch keeps it on the CPU); sorted_indices [B] (int64: the
 * sorted batch's k-th sequence is the caller's sorted_indices[k]) and
 * unsorted_indices [B] (its inverse), both NULL when the lengths were
 * already sorted (enforce_sorted), as torch's None.  The three index
 * tensors record nothing; data is differentiable. */

/* torch.nn.utils.rnn.pack_padded_sequence(input, lengths, batch_first,
 * enforce_sorted): input [T, B, *] ([B, T, *] with batch_first) of any
 * dtype, lengths[B] (host values, each in [1, T]).  With enforce_sorted
 * the lengths must not increase and *sorted_indices and *unsorted_indices
 * are NULL; without, the batch is sorted by decreasing length (stably, as
 * torch's sort).  Differentiable: data is one recorded gather of input's
 * rows (IndexSelectBackward0).  Errors: nlengths other than B ("Expected
 * `len(lengths)` to be equal to batch_size"), a length below 1 or past T,
 * lengths that increase with enforce_sorted (CLT_ERR_INVALID_ARGUMENT);
 * an input of fewer than 2 dims (CLT_ERR_SHAPE_MISMATCH).  New tensors:
 * release each with clt_tensor_free; all NULL on failure. */
CLT_API clt_status clt_pack_padded_sequence(const clt_tensor *input, const int64_t *lengths,
                                            size_t nlengths, int batch_first,
                                            int enforce_sorted, clt_tensor **data,
                                            clt_tensor **batch_sizes,
                                            clt_tensor **sorted_indices,
                                            clt_tensor **unsorted_indices);

/* torch.nn.utils.rnn.pack_sequence(sequences, enforce_sorted): the n
 * tensors seqs[k] [L_k, *] padded by clt_pad_sequence and packed by
 * clt_pack_padded_sequence with their lengths; errors as theirs.  New
 * tensors, as clt_pack_padded_sequence's. */
CLT_API clt_status clt_pack_sequence(const clt_tensor *const *seqs, size_t n,
                                     int enforce_sorted, clt_tensor **data,
                                     clt_tensor **batch_sizes, clt_tensor **sorted_indices,
                                     clt_tensor **unsorted_indices);

/* torch.nn.utils.rnn.pad_packed_sequence(sequence, batch_first,
 * padding_value, total_length): the packed sequence's four tensors
 * (sorted_indices and unsorted_indices may be NULL: the identity; either
 * gives the other) back to *out [T', B, *] ([B, T', *] with batch_first)
 * in the caller's order, padded with padding_value after each sequence's
 * end, where T' is total_length, or the longest length for a negative
 * total_length (torch's None); *lengths (NULL when not wanted) the
 * int64 lengths [B] on data's device.  Differentiable: one recorded
 * gather of data's rows.  Errors: total_length below the longest length
 * ("Expected total_length to be at least the length of the longest
 * sequence in input"), batch_sizes not positive and non-increasing,
 * indices that are not permutations of 0..B-1 or not each other's
 * inverse (CLT_ERR_INVALID_ARGUMENT); batch_sizes that do not add up to
 * data's rows, or index tensors not 1-D (CLT_ERR_SHAPE_MISMATCH); not
 * int64 (CLT_ERR_DTYPE_MISMATCH); on another device than data
 * (CLT_ERR_DEVICE_MISMATCH).  Reads batch_sizes and the indices back
 * (waits for them).  New tensors: release each with clt_tensor_free; NULL
 * on failure. */
CLT_API clt_status clt_pad_packed_sequence(const clt_tensor *data, const clt_tensor *batch_sizes,
                                           const clt_tensor *sorted_indices,
                                           const clt_tensor *unsorted_indices, int batch_first,
                                           double padding_value, int64_t total_length,
                                           clt_tensor **out, clt_tensor **lengths);

/* F.gumbel_softmax(logits, tau, hard, dim) as torch 1.13: gumbels g =
 * -log(e) with e standard exponentials drawn by clt_exponential_ from gen
 * (NULL: the default generator; one number per element of logits), y_soft
 * = softmax((logits + g) / tau, dim); with hard, the one-hot y_hard of
 * y_soft's argmax along dim (the first of equal values) returned as
 * y_hard - detach(y_soft) + y_soft, so that the gradient is y_soft's
 * (the straight-through estimator).  logits: a floating tensor of any
 * shape; tau is not checked (0 gives torch's inf and NaN).  Composed of
 * recorded ops: differentiable in logits.  Errors: dim out of range
 * (CLT_ERR_DIM_OUT_OF_RANGE), an integer or bool logits
 * (CLT_ERR_INVALID_ARGUMENT, "\"exponential_\" not implemented"); a
 * failed call takes no numbers from gen.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_gumbel_softmax(const clt_tensor *logits, double tau, int hard, int dim,
                                      clt_generator *gen, clt_tensor **out);

/* torch.nn.EmbeddingBag(num_embeddings, embedding_dim, mode=mode,
 * include_last_offset=..., padding_idx=...) on dev: clt_embedding_bag
 * (index.h) with its parameter "weight" [num_embeddings, embedding_dim]
 * (its state_dict key, as PyTorch's), float32 normal(0, 1) from gen, its
 * padding_idx row (NULL: none; negative counts from the end) zeros, as
 * torch's.  PyTorch's defaults: mode CLT_BAG_MEAN, include_last_offset 0,
 * padding_idx None.  Errors: a size below 1, a mode outside the three, a
 * padding_idx out of range (CLT_ERR_INVALID_ARGUMENT); a failed
 * constructor takes no numbers from gen.  clt_module_forward runs it on
 * a 2-D input (a bag per row); clt_embedding_bag_forward(m, input,
 * offsets, per_sample_weights) is its forward with offsets (and
 * per-sample weights, NULL: none) for a 1-D input; a module that is not
 * an EmbeddingBag is CLT_ERR_INVALID_ARGUMENT there.  New module: release
 * with clt_module_free; new tensor from the forward. */
CLT_API clt_status clt_embedding_bag_layer(clt_device *dev, int64_t num_embeddings,
                                           int64_t embedding_dim, clt_bag_mode mode,
                                           const int64_t *padding_idx, int include_last_offset,
                                           clt_generator *gen, clt_module **out);
CLT_API clt_status clt_embedding_bag_forward(clt_module *m, const clt_tensor *input,
                                             const clt_tensor *offsets,
                                             const clt_tensor *per_sample_weights,
                                             clt_tensor **out);

/* torch.nn.EmbeddingBag(num_embeddings, embedding_dim, max_norm, norm_type,
 * scale_grad_by_freq, mode, include_last_offset=..., padding_idx=...)
 * with opts (index.h; NULL: CLT_EMBEDDING_BAG_DEFAULTS): as
 * clt_embedding_bag_layer, its forwards clt_embedding_bag_with_opts with
 * these options (copied; sparse: the weight's gradient sparse, index.h).
 * Errors: clt_embedding_bag_layer's, and scale_grad_by_freq or sparse
 * with CLT_BAG_MAX (CLT_ERR_INVALID_ARGUMENT, torch's "max mode does not
 * support scaling the gradient by the frequency", "max mode does not
 * support sparse weights").
 * New module: release with clt_module_free. */
CLT_API clt_status clt_embedding_bag_layer_with_opts(clt_device *dev, int64_t num_embeddings,
                                                     int64_t embedding_dim,
                                                     const clt_embedding_bag_opts *opts,
                                                     clt_generator *gen, clt_module **out);

/* torch.nn.EmbeddingBag.from_pretrained(embeddings, freeze, max_norm,
 * norm_type, scale_grad_by_freq, mode, sparse, include_last_offset,
 * padding_idx) with opts (NULL: CLT_EMBEDDING_BAG_DEFAULTS, torch's
 * defaults mode mean, sparse false, ...): an EmbeddingBag whose parameter
 * "weight" shares embeddings' storage (a new handle on it, as torch's
 * Parameter; embeddings stays the caller's), its padding row left as it
 * is, of embeddings' dtype and device, requiring grad unless freeze
 * (torch's default freeze is 1); its forwards as
 * clt_embedding_bag_layer_with_opts'.  Errors: embeddings NULL
 * (CLT_ERR_NULL_ARGUMENT), not 2-D (CLT_ERR_SHAPE_MISMATCH, "Embeddings
 * parameter is expected to be 2-dimensional"), not float32 or float64
 * (CLT_ERR_DTYPE_UNSUPPORTED), clt_embedding_bag_layer_with_opts' checks of
 * opts (CLT_ERR_INVALID_ARGUMENT).  New module: release with
 * clt_module_free. */
CLT_API clt_status clt_embedding_bag_layer_from_pretrained(const clt_tensor *embeddings,
                                                           int freeze,
                                                           const clt_embedding_bag_opts *opts,
                                                           clt_module **out);

/* ---- transformers ------------------------------------------------------------ */

/* F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p,
 * is_causal, scale) of torch 2: softmax(q k^T * scale + mask) v, with
 * query [..., L, E], key [..., S, E], value [..., S, Ev] (batch dims
 * broadcast; one floating dtype and device), giving [..., L, Ev].
 * attn_mask (NULL, or broadcastable to [..., L, S]): a bool mask attends
 * where it is true (torch 2's meaning, the opposite of
 * MultiheadAttention's), a floating one (the query's dtype) is added to
 * the scores.  is_causal attends key j from query i when j <= i (torch's
 * top-left tril(ones(L, S)); with an attn_mask it is refused, as torch
 * refuses it).  scale NULL: 1/sqrt(E).  dropout_p in [0, 1] drops the
 * attention weights with masks from gen (NULL: the default generator)
 * whenever it is > 0, as the functional form does (no train/eval mode):
 * pass 0 to evaluate.  A row whose keys are all masked gives NaN, as the
 * composed softmax does.
 *
 * float32 and float64 with dropout_p 0 run as one fused kernel (an online
 * softmax over blocks of keys: no L x S matrix in memory), recorded as one
 * node, ScaledDotProductFlashAttentionBackward0 (torch 2.1's name for its
 * flash kernel's), whose backward recomputes the weights block by block in
 * two launches; the mask gets no gradient there.  They do so where they
 * win: when the [batch..., L, S] scores take more than a quarter of the
 * device's global memory cache (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE) times
 * max(E, Ev) / 64, or the device reports no cache; below that the
 * composed path is faster and taken (the environment variable
 * CLTENSOR_SDPA=fused or =composed forces either).  Otherwise (float16,
 * dropout_p > 0, or a floating mask that requires grad) the attention is
 * composed of matmul, softmax and dropout, as torch's math path, and
 * differentiable in the mask too.
 *
 * Errors: CLT_ERR_NULL_ARGUMENT for a NULL query, key, value or out;
 * CLT_ERR_DEVICE_MISMATCH; CLT_ERR_DTYPE_MISMATCH for dtypes that differ
 * or a mask neither bool nor the query's dtype; CLT_ERR_DTYPE_UNSUPPORTED
 * for integer operands; CLT_ERR_SHAPE_MISMATCH for fewer than 2 dims,
 * sizes that do not fit, batch dims or a mask that do not broadcast, or
 * E 0 without a scale; CLT_ERR_INVALID_ARGUMENT for dropout_p outside
 * [0, 1] or a mask with is_causal.  A call that fails takes nothing from
 * gen.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_scaled_dot_product_attention(const clt_tensor *query,
                                                    const clt_tensor *key,
                                                    const clt_tensor *value,
                                                    const clt_tensor *attn_mask,
                                                    double dropout_p, int is_causal,
                                                    const double *scale, clt_generator *gen,
                                                    clt_tensor **out);

/* torch.nn.MultiheadAttention(embed_dim, num_heads, dropout, bias,
 * batch_first) with kdim = vdim = embed_dim, no add_bias_kv and no
 * add_zero_attn (PyTorch's defaults; clt_multihead_attention_layer_with_opts
 * offers them).  Parameters as PyTorch names them: in_proj_weight [3 E, E]
 * (xavier_uniform_, bound sqrt(6 / (4 E))) and, when bias, in_proj_bias
 * [3 E] (zeros); the child out_proj, a Linear(E, E) whose weight is
 * uniform in +-1/sqrt(E) and whose bias (when bias) is zeros, as
 * _reset_parameters leaves them.  All float32 on dev.  embed_dim and
 * num_heads must be positive and num_heads must divide embed_dim, dropout
 * be in [0, 1]; otherwise CLT_ERR_INVALID_ARGUMENT.  gen draws the
 * initial values and, in train mode with dropout > 0, the attention
 * weights' dropout masks, as Dropout's: it is borrowed and must then
 * outlive the layer.  PyTorch's defaults: dropout 0, bias 1, batch_first
 * 0.  clt_module_forward(m, x) is self-attention
 * (clt_multihead_attention(m, x, x, x, NULL, NULL, 0, 0, ...)). */
CLT_API clt_status clt_multihead_attention_layer(clt_device *dev, int64_t embed_dim,
                                                 int64_t num_heads, double dropout, int bias,
                                                 int batch_first, clt_generator *gen,
                                                 clt_module **out);

/* Settings of clt_multihead_attention_layer_with_opts, as
 * torch.nn.MultiheadAttention's arguments after embed_dim and num_heads. */
typedef struct clt_multihead_attention_opts {
    double dropout;    /* in [0, 1]: on the attention weights, in train mode */
    int bias;          /* 1: in_proj_bias and out_proj.bias */
    int add_bias_kv;   /* 1: parameters bias_k and bias_v [1, 1, E] */
    int add_zero_attn; /* 1: a zero key and value appended after the projection */
    int64_t kdim;      /* the key's features; 0 for embed_dim (torch's None) */
    int64_t vdim;      /* the value's features; 0 for embed_dim (torch's None) */
    int batch_first;   /* 1: batched inputs and outputs are [N, T, *], not [T, N, *] */
} clt_multihead_attention_opts;

/* PyTorch's defaults:
 *     clt_multihead_attention_opts o = CLT_MULTIHEAD_ATTENTION_DEFAULTS;
 *     o.kdim = 5; o.add_bias_kv = 1; */
#define CLT_MULTIHEAD_ATTENTION_DEFAULTS {0.0, 1, 0, 0, 0, 0, 0}

/* torch.nn.MultiheadAttention(embed_dim, num_heads, dropout, bias,
 * add_bias_kv, add_zero_attn, kdim, vdim, batch_first) with opts (NULL:
 * CLT_MULTIHEAD_ATTENTION_DEFAULTS, which is clt_multihead_attention_layer;
 * the options are copied).  Parameters as PyTorch 1.13 names, shapes,
 * orders and initialises them, so that its state_dict loads strictly:
 * - kdim and vdim both embed_dim E (or 0): in_proj_weight [3 E, E], as
 *   clt_multihead_attention_layer's;
 * - otherwise (torch's _qkv_same_embed_dim False) q_proj_weight [E, E],
 *   k_proj_weight [E, kdim] and v_proj_weight [E, vdim] instead, each
 *   xavier_uniform_ (bound sqrt(6 / (E + its columns))), drawn in that
 *   order; the key's last dim must then be kdim and the value's vdim;
 * - in_proj_bias [3 E] (zeros) when bias, either way;
 * - bias_k and bias_v [1, 1, E] with add_bias_kv (xavier_normal_: normal
 *   with std sqrt(1 / E), bias_k first), whatever bias says;
 * then the child out_proj (Linear(E, E), its bias zeros when bias).  gen
 * draws out_proj.weight first, then the projection weights, then bias_k
 * and bias_v, as torch's constructor does.
 *
 * The forward (clt_multihead_attention) follows
 * F.multi_head_attention_forward: with add_bias_kv, bias_k and bias_v are
 * appended (for every batch entry) to the projected keys and values as
 * one more source position; with add_zero_attn, a zero key and value are
 * appended to each head after that.  Either adds a column to the scores
 * and to the attention weights (S + 1, or S + 2 with both), and pads
 * attn_mask and key_padding_mask (given with the key's S columns) with a
 * zero (false) column each time, so the added positions are never hidden.
 *
 * Errors: clt_multihead_attention_layer's, and a kdim or vdim below 0
 * (CLT_ERR_INVALID_ARGUMENT); a failed constructor takes no numbers from
 * gen.  New module: release with clt_module_free. */
CLT_API clt_status clt_multihead_attention_layer_with_opts(
    clt_device *dev, int64_t embed_dim, int64_t num_heads,
    const clt_multihead_attention_opts *opts, clt_generator *gen, clt_module **out);

/* MultiheadAttention's forward(query, key, value, key_padding_mask,
 * need_weights, attn_mask, average_attn_weights), as PyTorch 1.13's
 * F.multi_head_attention_forward computes it (not its eval-mode fast path):
 * softmax(q k^T / sqrt(E / H) + mask) v over each head, then out_proj.
 *
 * query [L, N, E], key and value [S, N, E] ([N, L, E] and [N, S, E] with
 * batch_first), or unbatched [L, E] and [S, E]; a layer made with other
 * kdim and vdim (clt_multihead_attention_layer_with_opts) takes a key
 * [S, N, kdim] and a value [S, N, vdim].  key_padding_mask [N, S]
 * ([S] unbatched) and attn_mask [L, S] or [N * num_heads, L, S]
 * ([num_heads, L, S] unbatched), either NULL: a bool mask hides the
 * positions where it is true (they get -inf before the softmax), a
 * floating one (of the query's dtype) is added.  As in PyTorch, a row
 * whose every key is hidden gives NaN, and a floating key_padding_mask
 * with a floating attn_mask is refused (with a bool attn_mask its nonzero
 * entries hide, as torch's logical_or).  Dropout (train mode) applies to
 * the attention weights.  Without weights (need_weights 0) the heads go
 * through clt_scaled_dot_product_attention's fused kernels (its outputs
 * within rounding of the composed path's) where its rule picks them for
 * [N * num_heads, L, S] scores, unless dropout is active or a floating
 * mask requires grad; a row whose every key is hidden by a
 * floating attn_mask and a key_padding_mask together then gets NaN
 * gradients where the composed path's masked_fill gives 0.
 *
 * *out: the attention output in the query's layout.  When need_weights,
 * *weights: the attention weights (after dropout, as PyTorch's), [N, L,
 * S] averaged over the heads when average_attn_weights, else [N,
 * num_heads, L, S] (without N unbatched; S + 1 or S + 2 columns with
 * add_bias_kv or add_zero_attn or both); weights may be NULL when
 * need_weights is 0, and *weights is set to NULL then.  Both new tensors,
 * released with clt_tensor_free.  Differentiable in the inputs, float
 * masks and parameters.
 *
 * Errors (CLT_ERR_SHAPE_MISMATCH, CLT_ERR_DTYPE_MISMATCH,
 * CLT_ERR_DEVICE_MISMATCH; in torch's words where it has them): m not a
 * MultiheadAttention (CLT_ERR_INVALID_ARGUMENT), a query other than 2-D
 * or 3-D, key and value of another rank or shapes that differ (their
 * first two dims with kdim or vdim set), a last dimension other than
 * embed_dim (kdim, vdim), batch sizes that differ, masks of the
 * wrong shape or a dtype other than bool or the query's, inputs of
 * another dtype than the parameters, or on another device.  Like
 * clt_module_forward, a call that fails takes nothing from gen. */
CLT_API clt_status clt_multihead_attention(clt_module *m, const clt_tensor *query,
                                           const clt_tensor *key, const clt_tensor *value,
                                           const clt_tensor *key_padding_mask,
                                           const clt_tensor *attn_mask, int need_weights,
                                           int average_attn_weights, clt_tensor **out,
                                           clt_tensor **weights);

/* torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward,
 * dropout, activation, layer_norm_eps, batch_first, norm_first): children
 * named as PyTorch's (self_attn, a MultiheadAttention with bias; linear1
 * Linear(d_model, dim_feedforward); dropout; linear2; norm1 and norm2,
 * LayerNorm(d_model, layer_norm_eps); dropout1, dropout2), so that its
 * state_dict keys are PyTorch's.  activation "relu" (NULL too) or "gelu"
 * (exact); others are CLT_ERR_INVALID_ARGUMENT, as are dim_feedforward <= 0,
 * eps < 0 and MultiheadAttention's own conditions.  PyTorch's defaults:
 * 2048, 0.1, "relu", 1e-5, 0, 0.  gen draws the initial values and is
 * borrowed by the dropouts (see Dropout).  Forward (clt_module_forward
 * without masks, clt_transformer_encoder_forward with) as PyTorch's:
 * norm_first: x + sa(norm1(x)), then x + ff(norm2(x)); otherwise
 * norm1(x + sa(x)), then norm2(x + ff(x)); sa(x) = dropout1(self_attn(x,
 * x, x)), ff(x) = dropout2(linear2(dropout(activation(linear1(x))))). */
CLT_API clt_status clt_transformer_encoder_layer(clt_device *dev, int64_t d_model, int64_t nhead,
                                                 int64_t dim_feedforward, double dropout,
                                                 const char *activation, double layer_norm_eps,
                                                 int batch_first, int norm_first,
                                                 clt_generator *gen, clt_module **out);

/* torch.nn.TransformerEncoder(encoder_layer, num_layers, norm): runs the
 * num_layers TransformerEncoderLayers in order, then norm (a LayerNorm,
 * or NULL: none).  Children "layers" (a ModuleList: "layers.0.self_attn.
 * in_proj_weight", ...) and "norm", as PyTorch's.  Takes ownership of the
 * layers and norm when it succeeds (as clt_sequential); PyTorch deep-copies
 * one layer, so that every layer starts equal: make each layer from a
 * generator seeded alike for that.  A NULL layer, a module that is not a
 * TransformerEncoderLayer, one given twice or owned by a container already
 * is refused (CLT_ERR_NULL_ARGUMENT, CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_transformer_encoder(clt_module *const *layers, size_t num_layers,
                                           clt_module *norm, clt_module **out);

/* The forward of a TransformerEncoderLayer or TransformerEncoder with its
 * masks: src as the layer's batch_first says, mask (PyTorch's src_mask)
 * and src_key_padding_mask as clt_multihead_attention's attn_mask and
 * key_padding_mask (NULL: none).  New tensor: release with
 * clt_tensor_free.  Errors as clt_multihead_attention's, and
 * CLT_ERR_INVALID_ARGUMENT for another kind of module. */
CLT_API clt_status clt_transformer_encoder_forward(clt_module *m, const clt_tensor *src,
                                                   const clt_tensor *mask,
                                                   const clt_tensor *src_key_padding_mask,
                                                   clt_tensor **out);

/* torch.nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward,
 * dropout, activation, layer_norm_eps, batch_first, norm_first): children
 * named and ordered as PyTorch's (self_attn and multihead_attn, two
 * MultiheadAttention with bias; linear1 Linear(d_model, dim_feedforward);
 * dropout; linear2; norm1, norm2, norm3, LayerNorm(d_model,
 * layer_norm_eps); dropout1, dropout2, dropout3), so that its state_dict
 * keys are PyTorch's.  Arguments, defaults (2048, 0.1, "relu", 1e-5, 0, 0),
 * errors and gen as clt_transformer_encoder_layer's.  Forward (with
 * clt_transformer_decoder_forward; clt_module_forward, which has no
 * memory, is refused) as PyTorch's: norm_first: x + sa(norm1(x)), then x
 * + mha(norm2(x), memory), then x + ff(norm3(x)); otherwise norm1(x +
 * sa(x)), norm2(x + mha(x, memory)), norm3(x + ff(x)); sa(x) =
 * dropout1(self_attn(x, x, x)), mha(x, mem) = dropout2(multihead_attn(x,
 * mem, mem)), ff(x) = dropout3(linear2(dropout(activation(linear1(x))))).
 * New module: release with clt_module_free. */
CLT_API clt_status clt_transformer_decoder_layer(clt_device *dev, int64_t d_model, int64_t nhead,
                                                 int64_t dim_feedforward, double dropout,
                                                 const char *activation, double layer_norm_eps,
                                                 int batch_first, int norm_first,
                                                 clt_generator *gen, clt_module **out);

/* torch.nn.TransformerDecoder(decoder_layer, num_layers, norm): runs the
 * num_layers TransformerDecoderLayers in order over the same memory, then
 * norm (a LayerNorm, or NULL: none).  Children "layers" and "norm", as
 * PyTorch's.  Ownership, refusals and the advice on equal starts as
 * clt_transformer_encoder's (the layers must be TransformerDecoderLayers).
 * New module: release with clt_module_free. */
CLT_API clt_status clt_transformer_decoder(clt_module *const *layers, size_t num_layers,
                                           clt_module *norm, clt_module **out);

/* The forward of a TransformerDecoderLayer or TransformerDecoder: tgt and
 * memory as the layer's batch_first says ([T, N, E] and [S, N, E], or [N,
 * T, E] and [N, S, E]; unbatched [T, E] and [S, E]); tgt_mask and
 * tgt_key_padding_mask are the self-attention's attn_mask and
 * key_padding_mask, memory_mask and memory_key_padding_mask those of the
 * attention over the memory, each as clt_multihead_attention takes them
 * (bool: true hides; floating, of tgt's dtype: added; NULL: none).  Eval
 * mode (clt_module_train(m, 0)) turns the dropouts off, as PyTorch's.
 * Differentiable in tgt, memory, floating masks and the parameters.  New
 * tensor: release with clt_tensor_free.  Errors as
 * clt_multihead_attention's (a NULL memory is CLT_ERR_NULL_ARGUMENT), and
 * CLT_ERR_INVALID_ARGUMENT for another kind of module. */
CLT_API clt_status clt_transformer_decoder_forward(clt_module *m, const clt_tensor *tgt,
                                                   const clt_tensor *memory,
                                                   const clt_tensor *tgt_mask,
                                                   const clt_tensor *memory_mask,
                                                   const clt_tensor *tgt_key_padding_mask,
                                                   const clt_tensor *memory_key_padding_mask,
                                                   clt_tensor **out);

/* torch.nn.Transformer(d_model, nhead, num_encoder_layers,
 * num_decoder_layers, dim_feedforward, dropout, activation,
 * layer_norm_eps, batch_first, norm_first) without custom_encoder and
 * custom_decoder: children "encoder", a TransformerEncoder of
 * num_encoder_layers layers and a final LayerNorm(d_model,
 * layer_norm_eps), and "decoder", a TransformerDecoder of
 * num_decoder_layers layers and its LayerNorm, so that the state_dict
 * keys are PyTorch's ("encoder.layers.0.self_attn.in_proj_weight", ...,
 * "decoder.norm.bias").  As PyTorch's _reset_parameters, every parameter
 * of more than one dim is then drawn again by xavier_uniform_ (bound
 * sqrt(6 / (fan_in + fan_out))) from gen; the biases and LayerNorms keep
 * their layers' initial values.  PyTorch's defaults: 512, 8, 6, 6, 2048,
 * 0.1, "relu", 1e-5, 0, 0.  Errors as clt_transformer_encoder_layer's,
 * and CLT_ERR_INVALID_ARGUMENT for a number of layers below 1 (PyTorch
 * takes 0).  gen draws the initial values and is borrowed by the dropouts
 * (see Dropout); a call that fails takes nothing from it.  New module:
 * release with clt_module_free. */
CLT_API clt_status clt_transformer(clt_device *dev, int64_t d_model, int64_t nhead,
                                   int64_t num_encoder_layers, int64_t num_decoder_layers,
                                   int64_t dim_feedforward, double dropout,
                                   const char *activation, double layer_norm_eps,
                                   int batch_first, int norm_first, clt_generator *gen,
                                   clt_module **out);

/* Transformer.forward(src, tgt, src_mask, tgt_mask, memory_mask,
 * src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask):
 * memory = encoder(src, src_mask, src_key_padding_mask), then
 * decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
 * memory_key_padding_mask), the masks as clt_transformer_encoder_forward
 * and clt_transformer_decoder_forward take them (NULL: none).  src and
 * tgt as batch_first says.  New tensor: release with clt_tensor_free.
 * Errors: CLT_ERR_SHAPE_MISMATCH, in PyTorch's words, when batched src
 * and tgt have different batch sizes ("the batch number of src and tgt
 * must be equal") or a last dim other than d_model ("the feature number
 * of src and tgt must be equal to d_model"); otherwise as the encoder's
 * and decoder's forwards; CLT_ERR_INVALID_ARGUMENT for a module that is
 * not a Transformer. */
CLT_API clt_status clt_transformer_forward(clt_module *m, const clt_tensor *src,
                                           const clt_tensor *tgt, const clt_tensor *src_mask,
                                           const clt_tensor *tgt_mask,
                                           const clt_tensor *memory_mask,
                                           const clt_tensor *src_key_padding_mask,
                                           const clt_tensor *tgt_key_padding_mask,
                                           const clt_tensor *memory_key_padding_mask,
                                           clt_tensor **out);

/* nn.Transformer.generate_square_subsequent_mask(sz) with a device and a
 * dtype: a [sz, sz] tensor of dtype on dev, -inf above the diagonal
 * (key j hidden from query i when j > i) and 0 elsewhere, as
 * torch.triu(torch.full((sz, sz), float('-inf')), diagonal=1); the
 * causal tgt_mask.  dtype must be floating (CLT_ERR_DTYPE_UNSUPPORTED
 * otherwise; torch's is float32); sz < 0 is CLT_ERR_INVALID_ARGUMENT.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_generate_square_subsequent_mask(clt_device *dev, clt_dtype dtype,
                                                       int64_t sz, clt_tensor **out);

/* ---- recurrent layers: RNN, LSTM, GRU ----------------------------------- */

/* The nonlinearity of clt_rnn_layer (torch.nn.RNN's nonlinearity). */
typedef enum clt_rnn_nonlinearity {
    CLT_RNN_TANH = 0, /* "tanh", PyTorch's default */
    CLT_RNN_RELU = 1  /* "relu" */
} clt_rnn_nonlinearity;

/* Settings of the recurrent layers, as torch.nn.RNN's, LSTM's and GRU's
 * arguments.  proj_size (LSTM with projections) is not offered. */
typedef struct clt_rnn_opts {
    int64_t input_size;  /* > 0: the features of each step of the input */
    int64_t hidden_size; /* > 0 */
    int64_t num_layers;  /* in [1, 10000]; each layer takes the one before's output */
    int bias;            /* 1: the b_ih and b_hh biases */
    int batch_first;     /* 1: batched inputs and outputs are [N, L, *], not [L, N, *] */
    double dropout;      /* in [0, 1]: Dropout on each layer's output but the last's, in
                          * train mode */
    int bidirectional;   /* 1: each layer also runs backwards in time */
    int nonlinearity;    /* clt_rnn_layer only: a clt_rnn_nonlinearity */
} clt_rnn_opts;

/* PyTorch's defaults for given sizes:
 *     clt_rnn_opts o = CLT_RNN_DEFAULTS(10, 20); o.num_layers = 2; */
#define CLT_RNN_DEFAULTS(input_size, hidden_size)                                  \
    {(input_size), (hidden_size), 1, 1, 0, 0.0, 0, CLT_RNN_TANH}

/* torch.nn.RNN, torch.nn.LSTM and torch.nn.GRU (opts required).  For each
 * layer l and direction (the second, with bidirectional, suffixed
 * "_reverse") the parameters, in PyTorch's order and names, are
 * weight_ih_l<l> [G * hidden_size, in], weight_hh_l<l> [G * hidden_size,
 * hidden_size] and, with bias, bias_ih_l<l> and bias_hh_l<l> [G *
 * hidden_size], where G is 1 (RNN), 4 (LSTM: the gates i, f, g, o, in
 * that order) or 3 (GRU: r, z, n) and in is input_size for layer 0,
 * hidden_size (times 2 when bidirectional) after it; so a PyTorch
 * state_dict saved as safetensors loads with clt_module_load.  All are
 * float32 on dev, uniform in +-1/sqrt(hidden_size) as PyTorch initialises
 * them, drawn in that order from gen (NULL: the default generator).
 *
 * With dropout > 0, gen is borrowed, as Dropout's: each forward in train
 * mode draws the masks from it (one per layer but the last, drawn for the
 * layer's whole output), so it must outlive the layer.  Dropout
 * with one layer does nothing (PyTorch warns).
 *
 * Each step, for the input x_t and the previous hidden state h (and cell
 * state c), as PyTorch:
 *   RNN:  h' = tanh(W_ih x_t + b_ih + W_hh h + b_hh) (or relu)
 *   LSTM: i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of the four parts
 *         of W_ih x_t + b_ih + W_hh h + b_hh; c' = f c + i g;
 *         h' = o tanh(c')
 *   GRU:  r, z = sigmoid of the first two parts of W_ih x_t + b_ih +
 *         W_hh h + b_hh; n = tanh(W_in x_t + b_in + r (W_hn h + b_hn));
 *         h' = (1 - z) n + z h
 * Each step is a product with W_hh and a few elementwise ops, all
 * recorded: gradients flow to the input, the initial states and every
 * parameter.  Without grad (clt_set_grad_enabled(0), or nothing requiring
 * it) one product projects the input of all steps of a layer; while
 * recording, each step projects its own input, so that the backward pass
 * grows linearly with the sequence's length L (a part of a projection made
 * at once would take back a gradient the size of the whole).  Only an
 * input x that itself requires grad still gets its gradient that way, one
 * piece of x's size per step: L^2 N input_size numbers summed.
 *
 * Errors: opts NULL (CLT_ERR_NULL_ARGUMENT); opts out of range (a
 * non-positive size, num_layers outside [1, 10000], dropout outside [0, 1]
 * or NaN, an unknown nonlinearity: CLT_ERR_INVALID_ARGUMENT).  A failed
 * constructor takes no numbers from gen. */
CLT_API clt_status clt_rnn_layer(clt_device *dev, const clt_rnn_opts *opts, clt_generator *gen,
                                 clt_module **out);
CLT_API clt_status clt_lstm_layer(clt_device *dev, const clt_rnn_opts *opts, clt_generator *gen,
                                  clt_module **out);
CLT_API clt_status clt_gru_layer(clt_device *dev, const clt_rnn_opts *opts, clt_generator *gen,
                                 clt_module **out);

/* output, (h_n, c_n) = lstm(x, (h0, c0)) for an LSTM module, and output,
 * h_n = rnn(x, h0) for an RNN (clt_rnn_forward) or a GRU (clt_gru_forward);
 * clt_module_forward, and so a Sequential, gives the output alone.
 *
 * x is [L, N, input_size] ([N, L, input_size] with batch_first) or
 * unbatched [L, input_size], L > 0, of the parameters' dtype and on their
 * device.  h0 and c0 are [D * num_layers, N, hidden_size] (unbatched:
 * [D * num_layers, hidden_size]), D 2 when bidirectional else 1, state k
 * for layer k / D and direction k % D; NULL means zeros.  LSTM takes both
 * or neither.
 *
 * output is [L, N, D * hidden_size] (batch_first: [N, L, ...], a
 * transposed view; unbatched [L, D * hidden_size]): the last layer's
 * hidden state at each step, the backward direction's in the second half.
 * h_n and c_n are the final states, shaped as h0 (the backward
 * direction's after it has run to the first step).  New tensors: release
 * each with clt_tensor_free; h_n and c_n may be NULL when not wanted.
 *
 * Errors, in PyTorch's words where it has them: an input of another
 * number of dims, L 0 or a last size other than input_size, or an h0 or
 * c0 of another shape (CLT_ERR_SHAPE_MISMATCH); an input, h0 or c0 of
 * another dtype than the parameters' (CLT_ERR_DTYPE_MISMATCH) or on
 * another device (CLT_ERR_DEVICE_MISMATCH); a module of another kind
 * (clt_gru_forward given an LSTM), or h0 without c0
 * (CLT_ERR_INVALID_ARGUMENT).  A failed forward sets every
 * output to NULL and takes no numbers from the generator. */
CLT_API clt_status clt_lstm_forward(clt_module *m, const clt_tensor *x, const clt_tensor *h0,
                                    const clt_tensor *c0, clt_tensor **output,
                                    clt_tensor **h_n, clt_tensor **c_n);
CLT_API clt_status clt_rnn_forward(clt_module *m, const clt_tensor *x, const clt_tensor *h0,
                                   clt_tensor **output, clt_tensor **h_n);
CLT_API clt_status clt_gru_forward(clt_module *m, const clt_tensor *x, const clt_tensor *h0,
                                   clt_tensor **output, clt_tensor **h_n);

/* The forwards above with a packed input (see the packed sequences
 * above), as torch's RNN, LSTM and GRU given a PackedSequence: data
 * [sum of lengths, input_size] and its batch_sizes, sorted_indices and
 * unsorted_indices (both NULL: already sorted).  Each sequence runs only
 * over its own length.  *output is packed as the input ([sum of lengths,
 * D * hidden_size]: reuse the input's batch_sizes and indices with it);
 * h0 and c0 ([D * num_layers, B, hidden_size], NULL zeros) and h_n and
 * c_n are in the caller's order, h_n holding each sequence's state after
 * its own last step (the backward direction's after its first).
 * batch_first does not apply.  Differentiable as the padded forward; the
 * input of each step is a narrow of data, so that a data that requires
 * grad takes back T pieces of its size.  Reads batch_sizes and the
 * indices back (waits for them).  Errors as the padded forward's and
 * clt_pad_packed_sequence's; a NULL batch_sizes is
 * CLT_ERR_NULL_ARGUMENT.  New tensors: release each with
 * clt_tensor_free; h_n and c_n may be NULL when not wanted; all NULL on
 * failure. */
CLT_API clt_status clt_lstm_forward_packed(clt_module *m, const clt_tensor *data,
                                           const clt_tensor *batch_sizes,
                                           const clt_tensor *sorted_indices,
                                           const clt_tensor *unsorted_indices,
                                           const clt_tensor *h0, const clt_tensor *c0,
                                           clt_tensor **output, clt_tensor **h_n,
                                           clt_tensor **c_n);
CLT_API clt_status clt_rnn_forward_packed(clt_module *m, const clt_tensor *data,
                                          const clt_tensor *batch_sizes,
                                          const clt_tensor *sorted_indices,
                                          const clt_tensor *unsorted_indices,
                                          const clt_tensor *h0, clt_tensor **output,
                                          clt_tensor **h_n);
CLT_API clt_status clt_gru_forward_packed(clt_module *m, const clt_tensor *data,
                                          const clt_tensor *batch_sizes,
                                          const clt_tensor *sorted_indices,
                                          const clt_tensor *unsorted_indices,
                                          const clt_tensor *h0, clt_tensor **output,
                                          clt_tensor **h_n);

/* ---- recurrent cells: RNNCell, LSTMCell, GRUCell ------------------------- */

/* One step of a recurrent cell, as torch.rnn_tanh_cell / rnn_relu_cell
 * (clt_rnn_cell), torch.lstm_cell and torch.gru_cell, with the formulas
 * of clt_rnn_layer's steps above: input [N, input_size] or unbatched
 * [input_size]; w_ih [G * hidden_size, input_size], w_hh [G * hidden_size,
 * hidden_size] (G 1, 4 or 3; hidden_size is w_hh's columns), b_ih and
 * b_hh [G * hidden_size] or NULL (no bias).  hx (and cx) are [N,
 * hidden_size] (unbatched [hidden_size]) or NULL for zeros, as
 * nn.RNNCell's default state; clt_lstm_cell takes both or neither.  All
 * tensors of one floating dtype and device.  Composed of recorded ops
 * (two linear products and the cell's elementwise ops): gradients flow
 * to the input, the states and the weights.
 *
 * Results: *out (RNN, GRU: h') and *h_out, *c_out (LSTM: h', c'), shaped
 * as hx; new tensors: release each with clt_tensor_free.  On failure
 * every result is NULL.  Errors, in PyTorch's words: an input other than
 * 1-D or 2-D, an input size other than w_ih's columns ("input has
 * inconsistent input_size"), a state of another rank, batch ("Input batch
 * size 2 doesn't match hidden0 batch size 3") or hidden size, weights or
 * biases of the wrong shapes (CLT_ERR_SHAPE_MISMATCH); an integer input,
 * or a tensor of another dtype than the input's (CLT_ERR_DTYPE_MISMATCH);
 * another device (CLT_ERR_DEVICE_MISMATCH); an unknown nonlinearity, hx
 * without cx (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_rnn_cell(const clt_tensor *input, const clt_tensor *hx,
                                const clt_tensor *w_ih, const clt_tensor *w_hh,
                                const clt_tensor *b_ih, const clt_tensor *b_hh,
                                clt_rnn_nonlinearity nonlinearity, clt_tensor **out);
CLT_API clt_status clt_lstm_cell(const clt_tensor *input, const clt_tensor *hx,
                                 const clt_tensor *cx, const clt_tensor *w_ih,
                                 const clt_tensor *w_hh, const clt_tensor *b_ih,
                                 const clt_tensor *b_hh, clt_tensor **h_out, clt_tensor **c_out);
CLT_API clt_status clt_gru_cell(const clt_tensor *input, const clt_tensor *hx,
                                const clt_tensor *w_ih, const clt_tensor *w_hh,
                                const clt_tensor *b_ih, const clt_tensor *b_hh,
                                clt_tensor **out);

/* torch.nn.RNNCell(input_size, hidden_size, bias, nonlinearity),
 * LSTMCell and GRUCell on dev: parameters weight_ih [G * hidden_size,
 * input_size], weight_hh [G * hidden_size, hidden_size] and, with bias,
 * bias_ih and bias_hh [G * hidden_size] (PyTorch's names and order, so
 * that a state_dict loads with clt_module_load), float32, uniform in
 * +-1/sqrt(hidden_size) drawn from gen (NULL: the default generator) in
 * that order, as torch's reset_parameters.  Errors: a size below 1, an
 * unknown nonlinearity (CLT_ERR_INVALID_ARGUMENT); a failed constructor
 * takes no numbers from gen.  New module: release with clt_module_free. */
CLT_API clt_status clt_rnn_cell_layer(clt_device *dev, int64_t input_size, int64_t hidden_size,
                                      int bias, clt_rnn_nonlinearity nonlinearity,
                                      clt_generator *gen, clt_module **out);
CLT_API clt_status clt_lstm_cell_layer(clt_device *dev, int64_t input_size, int64_t hidden_size,
                                       int bias, clt_generator *gen, clt_module **out);
CLT_API clt_status clt_gru_cell_layer(clt_device *dev, int64_t input_size, int64_t hidden_size,
                                      int bias, clt_generator *gen, clt_module **out);

/* h' = cell(input, hx) for an RNNCell (clt_rnn_cell_forward) or a GRUCell
 * (clt_gru_cell_forward), and h', c' = cell(input, (hx, cx)) for an
 * LSTMCell: the functional forms above with the module's parameters; hx
 * and cx NULL are zeros.  clt_module_forward, and so a Sequential, gives
 * h' from zero states.  These run m's hooks as clt_module_forward does,
 * on the input and h' (see the module hooks below).  The input must be on
 * the module's device and of its dtype; a module of another kind is
 * CLT_ERR_INVALID_ARGUMENT; other errors as the functional forms'.  New
 * tensors: release each with clt_tensor_free; all NULL on failure. */
CLT_API clt_status clt_rnn_cell_forward(clt_module *m, const clt_tensor *input,
                                        const clt_tensor *hx, clt_tensor **out);
CLT_API clt_status clt_gru_cell_forward(clt_module *m, const clt_tensor *input,
                                        const clt_tensor *hx, clt_tensor **out);
CLT_API clt_status clt_lstm_cell_forward(clt_module *m, const clt_tensor *input,
                                         const clt_tensor *hx, const clt_tensor *cx,
                                         clt_tensor **h_out, clt_tensor **c_out);

/* ---- torch.nn.init ------------------------------------------------------
 * In place on any tensor (a parameter that requires grad included: like
 * torch's, these run as under no_grad, record nothing and bump the
 * tensor's version), through views (no stride-0 dimensions).  The random
 * ones draw from gen (NULL: the default generator) with clt_uniform_ or
 * clt_normal_ (so a seed gives the same values on every device) and take
 * no numbers when they fail; the others enqueue without waiting, except
 * eye_, dirac_, orthogonal_ and sparse_, which build their values on the
 * host and wait for the upload.  Errors (t unchanged):
 * CLT_ERR_INVALID_ARGUMENT with torch's wording, an integer t for the
 * random ones. */

/* Like nn.init.calculate_gain(nonlinearity, param): 1 for "linear", the
 * "conv*" and "conv_transpose*" names and "sigmoid", 5/3 "tanh", sqrt(2)
 * "relu", 3/4 "selu", sqrt(2 / (1 + slope^2)) "leaky_relu" with slope
 * param (NaN for torch's None: 0.01).  Other names: "Unsupported
 * nonlinearity"; an infinite slope: "negative_slope ... not a valid
 * number" (CLT_ERR_INVALID_ARGUMENT, *gain NaN). */
CLT_API clt_status clt_init_calculate_gain(const char *nonlinearity, double param, double *gain);

/* nn.init.constant_, zeros_ and ones_: every element of t (any dtype; val
 * must fit it, as clt_fill_). */
CLT_API clt_status clt_init_constant_(clt_tensor *t, double val);
CLT_API clt_status clt_init_zeros_(clt_tensor *t);
CLT_API clt_status clt_init_ones_(clt_tensor *t);

/* nn.init.eye_: a 2-D t (any dtype) becomes the identity (1 where the row
 * equals the column).  Other ranks: "Only tensors with 2 dimensions are
 * supported". */
CLT_API clt_status clt_init_eye_(clt_tensor *t);

/* nn.init.dirac_(t, groups): a 3-, 4- or 5-D t (a convolution's weight,
 * any dtype) becomes the identity convolution: 0 but for 1 at [g * out/groups
 * + d, d, centre] for d below min(out / groups, in), centre size / 2 in each
 * spatial dim.  Errors: other ranks, groups <= 0 or not dividing dim 0
 * ("dim 0 must be divisible by groups"). */
CLT_API clt_status clt_init_dirac_(clt_tensor *t, int64_t groups);

/* nn.init.uniform_(t, a, b) and nn.init.normal_(t, mean, std) (torch's
 * defaults: 0, 1 and 0, 1), as DCGAN's weights_init calls them on a
 * model's parameters: a floating t takes the values clt_uniform_ and
 * clt_normal_ (random.h) would give from gen (NULL: the default one), the
 * same on every device, without recording anything, so that a parameter
 * (a leaf that requires grad) takes them in grad mode too and stays a
 * leaf, as under torch's no_grad.  Errors (t and gen unchanged): a NULL t,
 * an integer t, a > b ("uniform_ expects to return a [from, to) range"),
 * a bound or a range its dtype cannot hold, std < 0 or a non-finite mean
 * or std ("normal expects std >= 0.0"), as the samplers refuse them. */
CLT_API clt_status clt_init_uniform_(clt_tensor *t, clt_generator *gen, double a, double b);
CLT_API clt_status clt_init_normal_(clt_tensor *t, clt_generator *gen, double mean, double std);

/* nn.init.xavier_uniform_ and xavier_normal_: uniform in +-gain sqrt(6 /
 * (fan_in + fan_out)), or normal with std gain sqrt(2 / (fan_in +
 * fan_out)); fan_in = size(1) and fan_out = size(0), each times the
 * product of the sizes after the second.  Fewer than 2 dims: "Fan in and
 * fan out can not be computed for tensor with fewer than 2 dimensions". */
CLT_API clt_status clt_init_xavier_uniform_(clt_tensor *t, clt_generator *gen, double gain);
CLT_API clt_status clt_init_xavier_normal_(clt_tensor *t, clt_generator *gen, double gain);

/* nn.init.kaiming_uniform_ and kaiming_normal_(t, a, mode, nonlinearity):
 * std = calculate_gain(nonlinearity, a) / sqrt(fan), fan as mode says
 * ("fan_in" or "fan_out"; NULL: "fan_in"), nonlinearity NULL:
 * "leaky_relu" (torch's defaults are a = 0, "fan_in", "leaky_relu");
 * uniform in +-sqrt(3) std, or normal with that std.  A tensor with no
 * elements is left alone before any check, as torch does.  Errors: the
 * fans' and calculate_gain's, "Mode ... not supported, please use one of
 * fan_in, fan_out". */
CLT_API clt_status clt_init_kaiming_uniform_(clt_tensor *t, clt_generator *gen, double a,
                                             const char *mode, const char *nonlinearity);
CLT_API clt_status clt_init_kaiming_normal_(clt_tensor *t, clt_generator *gen, double a,
                                            const char *mode, const char *nonlinearity);

/* nn.init.trunc_normal_(t, mean, std, a, b) by torch's inverse-CDF method:
 * uniform in [2 l - 1, 2 u - 1) (l, u the normal CDF at a and b), erfinv,
 * times std sqrt(2), plus mean, clamped to [a, b].  Errors: std <= 0,
 * non-finite mean or std, NaN bounds; a > b as torch's uniform_ ("expects
 * to return a [from, to) range").  torch's warning for a mean more than 2
 * std outside [a, b] is not given (the library never prints). */
CLT_API clt_status clt_init_trunc_normal_(clt_tensor *t, clt_generator *gen, double mean,
                                          double std, double a, double b);

/* nn.init.orthogonal_(t, gain): t (2 or more dims, floating) viewed as
 * [size(0), rest] becomes gain times the Q of a QR of a standard normal
 * matrix (drawn with clt_randn, in float64 for float64 t, float32
 * otherwise), with the sign of R's diagonal taken out as torch does; the
 * QR runs on the host in double.  Rows (or columns, for a wide t) are
 * orthonormal.  Errors: fewer than 2 dims ("Only tensors with 2 or more
 * dimensions are supported"). */
CLT_API clt_status clt_init_orthogonal_(clt_tensor *t, clt_generator *gen, double gain);

/* nn.init.sparse_(t, sparsity, std): a 2-D floating t gets normal(0, std)
 * values, then in each column ceil(sparsity * rows) rows, chosen by a
 * random permutation per column, are set to 0.  Errors: not 2-D,
 * sparsity outside [0, 1], std as clt_normal_. */
CLT_API clt_status clt_init_sparse_(clt_tensor *t, clt_generator *gen, double sparsity,
                                    double std);

/* ---- more normalisation, pooling and dropout layers ---------------------- */

/* torch.nn.functional.instance_norm(input, running_mean, running_var,
 * weight, bias, use_input_stats, momentum, eps): input [N, C, *] (at least
 * 2 dims, float32 or float64) normalised per sample and channel over *:
 * with use_input_stats (torch's default, True) by its own statistics
 * (biased variance: GroupNorm with a group per channel, the same fused
 * kernel), else by running_mean and running_var; then times weight and
 * plus bias.  running_mean, running_var, weight and bias are [C] of
 * input's dtype and device, each NULL for none.  With use_input_stats and
 * both running statistics, they are updated in place once the result is
 * made, as torch's: (1 - momentum) running + momentum times the batch's
 * mean of the per-sample means (and of the unbiased variances); their
 * version is bumped.  PyTorch's defaults: 1 (use_input_stats), 0.1, 1e-5.
 * Differentiable in input, weight and bias (grad_fn ViewBackward0, as
 * torch's last step).  New tensor: release with clt_tensor_free.
 *
 * Errors, in torch's words where it has them: fewer than 2 dims, tensors
 * that are not vectors of C (CLT_ERR_SHAPE_MISMATCH); one spatial element
 * per channel with use_input_stats ("Expected more than 1 spatial element
 * when training"), use_input_stats 0 without running statistics, a
 * negative or NaN eps (CLT_ERR_INVALID_ARGUMENT); other dtypes
 * (CLT_ERR_DTYPE_MISMATCH, integer inputs CLT_ERR_DTYPE_UNSUPPORTED) or
 * devices. */
CLT_API clt_status clt_instance_norm(const clt_tensor *input, clt_tensor *running_mean,
                                     clt_tensor *running_var, const clt_tensor *weight,
                                     const clt_tensor *bias, int use_input_stats,
                                     double momentum, double eps, clt_tensor **out);

/* torch.nn.InstanceNorm1d ([N, C, L], or unbatched [C, L]) and
 * InstanceNorm2d ([N, C, H, W] or [C, H, W]) (num_features, eps, momentum,
 * affine, track_running_stats): clt_instance_norm with the layer's
 * tensors, named as PyTorch's: weight (ones) and bias (zeros), float32
 * [num_features], when affine; buffers running_mean (zeros), running_var
 * (ones) and num_batches_tracked (int64 0, which InstanceNorm leaves
 * alone, as PyTorch) when track_running_stats.  In train mode, or without
 * track_running_stats, each input is normalised by its own statistics and
 * the running ones updated (written when clt_module_forward ends, as
 * BatchNorm's); in eval mode with track_running_stats the running ones
 * are used.  PyTorch's defaults: 1e-5, 0.1, 0, 0.  Errors: num_features
 * <= 0, eps < 0 or momentum outside [0, 1] (CLT_ERR_INVALID_ARGUMENT;
 * CLT_BN_CUMULATIVE too, whose forward torch's instance_norm refuses); at
 * the forward, another number of dims ("expected 3D or 4D input"), and
 * with affine a channel count other than num_features (PyTorch warns
 * without affine and goes on), as CLT_ERR_SHAPE_MISMATCH; dtypes as
 * BatchNorm (see Dtypes above).  New module: release with
 * clt_module_free. */
CLT_API clt_status clt_instance_norm1d_layer(clt_device *dev, int64_t num_features, double eps,
                                             double momentum, int affine,
                                             int track_running_stats, clt_module **out);
CLT_API clt_status clt_instance_norm2d_layer(clt_device *dev, int64_t num_features, double eps,
                                             double momentum, int affine,
                                             int track_running_stats, clt_module **out);
/* torch.nn.InstanceNorm3d: as clt_instance_norm2d_layer for [N, C, D, H, W]
 * or unbatched [C, D, H, W] input ("expected 4D or 5D input"). */
CLT_API clt_status clt_instance_norm3d_layer(clt_device *dev, int64_t num_features, double eps,
                                             double momentum, int affine,
                                             int track_running_stats, clt_module **out);

/* ---- lazy layers (torch.nn.LazyLinear, LazyConv*, LazyBatchNorm*, ...) ---- */

/* A lazy layer is the plain layer whose input size (Linear's in_features,
 * a convolution's in_channels, a norm's num_features) is left out and
 * taken from its first input, as torch's Lazy* modules (LazyModuleMixin):
 * Linear the input's last dimension; a convolution dimension 1 of a
 * batched input and 0 of an unbatched one (any other rank is
 * CLT_ERR_SHAPE_MISMATCH, "Expected 3D (unbatched) or 4D (batched)
 * input"); BatchNorm and InstanceNorm dimension 1 (input.shape[1], also
 * for an unbatched InstanceNorm input, as torch).  affine and
 * track_running_stats are given here; torch's LazyInstanceNorm defaults
 * both to True, unlike InstanceNorm.
 *
 * The first clt_module_forward builds the plain layer with that size as
 * its constructor does (clt_linear, clt_conv2d_layer, ...; the same draws
 * from gen, so that a lazy layer and a plain one made from equally seeded
 * generators get the same weights), and from then on the module is that
 * layer: clt_module_name says "Linear", its parameters and buffers are
 * listed, saved, loaded and trained as the plain layer's (torch's
 * cls_to_become).  When that first forward fails (a bad size, an input on
 * another device or of another dtype), the module stays lazy and gen is
 * left where it was; the size is only fixed once a forward succeeds.  When
 * the lazy layer succeeds but a later layer of the model fails, it stays
 * initialised (as torch's).
 *
 * Before the first forward the tensors have no shape.  torch lists them
 * as UninitializedParameter; here the calls that hand tensors out
 * (clt_module_parameters, clt_module_named_parameters,
 * clt_module_named_buffers, clt_module_state, and so clt_module_save and
 * the optimizers built on the parameters) refuse a model that holds a
 * lazy layer that has not run, with CLT_ERR_INVALID_ARGUMENT naming the
 * layer ("run a forward pass first"), where torch would build an
 * optimizer over the uninitialised parameters: run one forward (a dry run
 * on a batch of the right shape) first.  A lazy norm with neither affine
 * nor track_running_stats has no tensors and is not refused (torch's
 * has_uninitialized_params() is False for it).  Loading a state_dict
 * (clt_module_load, clt_module_load_torch) does as torch's
 * _lazy_load_hook: each lazy layer that has not run and whose weight (a
 * norm without affine: running_mean) the file holds under its key, of the
 * right rank, becomes the plain layer with the input size the shape gives
 * (Linear weight[1]; a convolution weight[1] * groups; a transposed one
 * weight[0]; a norm weight[0]), its tensors made in its dtype without
 * drawing from gen, and then the values load as into any layer; a saved
 * model loads into a fresh lazy one without a forward.  A layer the file
 * has no key for stays lazy (and the load is refused as above); a load
 * that fails for any reason leaves every layer lazy as before.
 * clt_module_num_parameters counts the initialised ones only.  clt_module_to (the device) and
 * clt_module_to_dtype (the dtype the tensors will be made in, as
 * UninitializedParameter's), clt_module_train, clt_module_clone (the copy
 * is lazy too and borrows the same gen) and hooks work before it.
 *
 * The settings are checked when the layer is made, with the plain
 * constructor's errors (its messages after "clt_lazy_...: "): the layer is
 * built once with the smallest input size (groups channels) from a
 * generator of its own and thrown away, so gen is not drawn from.  dev
 * must not be NULL.  gen (NULL: the default generator) is borrowed until
 * the first forward: it must outlive that.  Each is a new module: release
 * it with clt_module_free. */
CLT_API clt_status clt_lazy_linear(clt_device *dev, int64_t out_features, int bias,
                                   clt_generator *gen, clt_module **out);
CLT_API clt_status clt_lazy_conv1d(clt_device *dev, int64_t out_channels, int64_t kernel_size,
                                   const clt_conv1d_opts *opts, int bias, clt_generator *gen,
                                   clt_module **out);
CLT_API clt_status clt_lazy_conv2d(clt_device *dev, int64_t out_channels, int64_t kernel_h,
                                   int64_t kernel_w, const clt_conv2d_opts *opts, int bias,
                                   clt_generator *gen, clt_module **out);
CLT_API clt_status clt_lazy_conv3d(clt_device *dev, int64_t out_channels,
                                   const int64_t kernel_size[3], const clt_conv3d_opts *opts,
                                   int bias, clt_generator *gen, clt_module **out);
CLT_API clt_status clt_lazy_conv_transpose1d(clt_device *dev, int64_t out_channels,
                                             int64_t kernel_size,
                                             const clt_conv_transpose1d_opts *opts, int bias,
                                             clt_generator *gen, clt_module **out);
CLT_API clt_status clt_lazy_conv_transpose2d(clt_device *dev, int64_t out_channels,
                                             int64_t kernel_h, int64_t kernel_w,
                                             const clt_conv_transpose2d_opts *opts, int bias,
                                             clt_generator *gen, clt_module **out);
CLT_API clt_status clt_lazy_conv_transpose3d(clt_device *dev, int64_t out_channels,
                                             const int64_t kernel_size[3],
                                             const clt_conv_transpose3d_opts *opts, int bias,
                                             clt_generator *gen, clt_module **out);
CLT_API clt_status clt_lazy_batch_norm1d(clt_device *dev, double eps, double momentum,
                                         int affine, int track_running_stats, clt_module **out);
CLT_API clt_status clt_lazy_batch_norm2d(clt_device *dev, double eps, double momentum,
                                         int affine, int track_running_stats, clt_module **out);
CLT_API clt_status clt_lazy_batch_norm3d(clt_device *dev, double eps, double momentum,
                                         int affine, int track_running_stats, clt_module **out);
CLT_API clt_status clt_lazy_instance_norm1d(clt_device *dev, double eps, double momentum,
                                            int affine, int track_running_stats,
                                            clt_module **out);
CLT_API clt_status clt_lazy_instance_norm2d(clt_device *dev, double eps, double momentum,
                                            int affine, int track_running_stats,
                                            clt_module **out);
CLT_API clt_status clt_lazy_instance_norm3d(clt_device *dev, double eps, double momentum,
                                            int affine, int track_running_stats,
                                            clt_module **out);

/* module.has_uninitialized_params() over the whole model: 1 when m or one
 * of its children is a lazy layer that has not run its first forward yet,
 * else 0 (also for NULL). */
CLT_API int clt_module_has_uninitialized_params(const clt_module *m);

/* torch.nn.functional.local_response_norm(input, size, alpha, beta, k):
 * input [N, C, *] (3 or more dims) divided by (k + alpha * avg)^beta, avg
 * the mean of input^2 over the channels c - size/2 to c + (size - 1)/2,
 * those beyond the edges counted as zeros, as torch's padded average
 * pooling; computed as mul, avg_pool2d over [N, 1, C, rest], mul, add,
 * pow and div (recorded: grad_fn DivBackward0, as torch's).  PyTorch's
 * defaults: alpha 1e-4, beta 0.75, k 1.  An empty input gives itself back
 * (a view).  Errors: size <= 0 (CLT_ERR_INVALID_ARGUMENT), fewer than 3
 * dims (CLT_ERR_SHAPE_MISMATCH, "Expected 3D or higher dimensionality
 * input"); dtypes as clt_avg_pool2d's.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_local_response_norm(const clt_tensor *input, int64_t size, double alpha,
                                           double beta, double k, clt_tensor **out);

/* torch.nn.LocalResponseNorm(size, alpha, beta, k): the function above.
 * size <= 0 is CLT_ERR_INVALID_ARGUMENT.  No tensors.  New module:
 * release with clt_module_free. */
CLT_API clt_status clt_local_response_norm_layer(int64_t size, double alpha, double beta,
                                                 double k, clt_module **out);

/* torch.nn.CrossMapLRN2d(size, alpha, beta, k), the legacy Lua Torch
 * normalisation (not LocalResponseNorm): for a float32 or float64 input
 * [N, C, H, W], y = x * (k + alpha / size * s)^-beta with s the sum of x^2
 * over a window of channels, as torch 1.13 computes it
 * (torch/nn/modules/_functions.py): s_0 sums channels 0 to pre_pad - 1
 * (pre_pad = (size - 1) / 2 + 1), and each next s_c adds channel
 * c + pre_pad - 1 (while there is one) and takes off channel c - pre_pad
 * only when c > pre_pad, so that channel 0 stays in every sum (torch's
 * quirk, kept).  Composed of recorded ops (a [C, C] matrix of those
 * windows, matmul, pow, mul): the gradient is the true one of this
 * forward, which float64 gradcheck confirms.  torch's hand-written
 * backward uses other, shifted windows and so differs from it (and fails
 * torch's own gradcheck) whenever C > 1 window reaches past an edge; it
 * cannot run size 1.  Errors: size <= 0 (CLT_ERR_INVALID_ARGUMENT), an
 * input that is not 4D (CLT_ERR_SHAPE_MISMATCH; torch asserts), any other
 * dtype (CLT_ERR_DTYPE_MISMATCH).  An empty input gives itself back (a
 * view).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_cross_map_lrn2d(const clt_tensor *input, int64_t size, double alpha,
                                       double beta, double k, clt_tensor **out);

/* The layer of clt_cross_map_lrn2d (torch's defaults: alpha 1e-4, beta
 * 0.75, k 1).  size <= 0 is CLT_ERR_INVALID_ARGUMENT.  No tensors.  New
 * module: release with clt_module_free. */
CLT_API clt_status clt_cross_map_lrn2d_layer(int64_t size, double alpha, double beta, double k,
                                             clt_module **out);

/* torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs,
 * div_value, head_bias): the n_cutoffs cutoffs (at least one, unique,
 * increasing, each in [1, n_classes - 1]: else CLT_ERR_INVALID_ARGUMENT
 * with torch's words; at most 64) split the classes into a shortlist
 * [0, cutoffs[0]) and clusters.  Its parts as torch's, so that its
 * clt_module_state names are torch's state_dict keys: "head" a Linear
 * (in_features -> cutoffs[0] + n_clusters, bias when head_bias), "tail" a
 * ModuleList of one Sequential(Linear(in_features, hsz, no bias),
 * Linear(hsz, cluster size, no bias)) per cluster, hsz = in_features //
 * div_value^(i + 1); all drawn from gen (NULL: the default) in torch's
 * order, as clt_linear draws.  A cluster whose hsz comes to 0 (torch makes
 * an empty Linear) and a div_value that is not positive are
 * CLT_ERR_INVALID_ARGUMENT.  clt_module_forward on it is refused: it takes
 * two inputs (below).  New module: release with clt_module_free; a failed
 * constructor takes no numbers from gen. */
CLT_API clt_status clt_adaptive_log_softmax_with_loss(clt_device *dev, int64_t in_features,
                                                      int64_t n_classes, const int64_t *cutoffs,
                                                      size_t n_cutoffs, double div_value,
                                                      int head_bias, clt_generator *gen,
                                                      clt_module **out);

/* m(input, target) -> (output, loss), torch's namedtuple: input [N,
 * in_features] with an int64 target [N] (or input [in_features] with a
 * 0-d target), output [N] (0-d) the log-probability of each target, loss
 * the 0-d mean of -output; both recorded (the gradients reach input and
 * every parameter).  Runs through m's hooks as a forward (they see input
 * and output).  Errors with torch's words: a target that is not int64
 * (CLT_ERR_DTYPE_MISMATCH), of 2 or more dims, or not matching the input
 * (CLT_ERR_SHAPE_MISMATCH), values outside [0, n_classes - 1]
 * (CLT_ERR_INDEX_OUT_OF_RANGE), an input of another dtype than the
 * parameters or on another device.  The target is read to the host (a
 * synchronisation).  Two new tensors: release both with clt_tensor_free;
 * on failure both are NULL. */
CLT_API clt_status clt_adaptive_log_softmax_forward(clt_module *m, const clt_tensor *input,
                                                    const clt_tensor *target,
                                                    clt_tensor **output, clt_tensor **loss);

/* log_prob(input): [N, n_classes] log-probabilities of every class for an
 * input [N, in_features] (recorded; other ranks are
 * CLT_ERR_SHAPE_MISMATCH, as torch fails on them).  predict(input): the
 * int64 [N] class of the highest probability (not recorded), as torch's
 * (its shortcut through the head gives the same classes).  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_adaptive_log_softmax_log_prob(clt_module *m, const clt_tensor *input,
                                                     clt_tensor **out);
CLT_API clt_status clt_adaptive_log_softmax_predict(clt_module *m, const clt_tensor *input,
                                                    clt_tensor **out);

/* torch.nn.LPPool1d(norm_type, kernel_size, stride, ceil_mode) and
 * LPPool2d: clt_lp_pool1d and clt_lp_pool2d (conv.h) with the layer's
 * settings; stride 0 (NULL for LPPool2d) means the kernel size, PyTorch's
 * None.  A kernel size <= 0 or a negative stride is
 * CLT_ERR_INVALID_ARGUMENT.  No tensors.  New module: release with
 * clt_module_free. */
CLT_API clt_status clt_lp_pool1d_layer(double norm_type, int64_t kernel, int64_t stride,
                                       int ceil_mode, clt_module **out);
CLT_API clt_status clt_lp_pool2d_layer(double norm_type, int64_t kernel_h, int64_t kernel_w,
                                       const int64_t stride[2], int ceil_mode,
                                       clt_module **out);

/* torch.nn.AdaptiveMaxPool1d(output_size) and AdaptiveMaxPool2d((out_h,
 * out_w)): clt_adaptive_max_pool1d and clt_adaptive_max_pool2d (conv.h) to
 * that size (>= 0, checked here: CLT_ERR_INVALID_ARGUMENT).  The forward
 * gives the output alone (return_indices=False); call the function for
 * the indices.  No tensors.  New module: release with clt_module_free. */
CLT_API clt_status clt_adaptive_max_pool1d_layer(int64_t output_size, clt_module **out);
CLT_API clt_status clt_adaptive_max_pool2d_layer(int64_t out_h, int64_t out_w, clt_module **out);

/* torch.nn.MaxUnpool1d(kernel_size, stride, padding) and MaxUnpool2d:
 * clt_max_unpool1d and clt_max_unpool2d (conv.h) with the layer's
 * settings; stride 0 (or NULL) means the kernel size, padding NULL 0.  A
 * kernel size <= 0 or a negative stride or padding is
 * CLT_ERR_INVALID_ARGUMENT.  No tensors.  Their forward takes the indices
 * too: run them with clt_max_unpool_forward (clt_module_forward, and so a
 * Sequential, refuses them: CLT_ERR_INVALID_ARGUMENT).  New module:
 * release with clt_module_free. */
CLT_API clt_status clt_max_unpool1d_layer(int64_t kernel, int64_t stride, int64_t padding,
                                          clt_module **out);
CLT_API clt_status clt_max_unpool2d_layer(int64_t kernel_h, int64_t kernel_w,
                                          const int64_t stride[2], const int64_t padding[2],
                                          clt_module **out);

/* torch.nn.MaxPool3d(kernel_size, ...) and AvgPool3d: clt_max_pool3d and
 * clt_avg_pool3d (conv.h) with the settings of opts (NULL: PyTorch's
 * defaults, CLT_POOL3D_DEFAULTS).  torch.nn.AdaptiveAvgPool1d,
 * AdaptiveAvgPool3d and AdaptiveMaxPool3d: clt_adaptive_avg_pool1d,
 * clt_adaptive_avg_pool3d and clt_adaptive_max_pool3d to that size (each
 * >= 0); the max pool's forward gives the output alone (call the function
 * for the indices).  torch.nn.MaxUnpool3d: clt_max_unpool3d with the
 * settings (stride NULL or 0: the kernel; padding NULL: 0), run with
 * clt_max_unpool_forward.  A kernel size <= 0, a negative stride or
 * padding, or a negative output size is CLT_ERR_INVALID_ARGUMENT here; the
 * rest is checked at the forward.  No tensors.  New module: release with
 * clt_module_free. */
CLT_API clt_status clt_max_pool3d_layer(const int64_t kernel[3], const clt_pool3d_opts *opts,
                                        clt_module **out);
CLT_API clt_status clt_avg_pool3d_layer(const int64_t kernel[3], const clt_pool3d_opts *opts,
                                        clt_module **out);
CLT_API clt_status clt_adaptive_avg_pool1d_layer(int64_t output_size, clt_module **out);
CLT_API clt_status clt_adaptive_avg_pool3d_layer(const int64_t output_size[3], clt_module **out);
CLT_API clt_status clt_adaptive_max_pool3d_layer(const int64_t output_size[3], clt_module **out);
CLT_API clt_status clt_max_unpool3d_layer(const int64_t kernel[3], const int64_t stride[3],
                                          const int64_t padding[3], clt_module **out);

/* torch.nn.FractionalMaxPool2d(kernel_size, output_size, output_ratio)
 * and FractionalMaxPool3d: clt_fractional_max_pool2d and 3d (conv.h) with
 * the layer's settings, exactly one of output_size (sizes >= 0) and
 * output_ratio (each in (0, 1)) given, samples drawn at each forward from
 * gen (borrowed: it must outlive the module; NULL: the default
 * generator); the forward gives the output alone (call the function for
 * the indices).  Neither or both of output_size and output_ratio, a
 * kernel size <= 0, a negative size or a ratio outside (0, 1) is
 * CLT_ERR_INVALID_ARGUMENT here; the rest is checked at the forward.  No
 * tensors.  New module: release with clt_module_free. */
CLT_API clt_status clt_fractional_max_pool2d_layer(const int64_t kernel[2],
                                                   const int64_t output_size[2],
                                                   const double output_ratio[2],
                                                   clt_generator *gen, clt_module **out);
CLT_API clt_status clt_fractional_max_pool3d_layer(const int64_t kernel[3],
                                                   const int64_t output_size[3],
                                                   const double output_ratio[3],
                                                   clt_generator *gen, clt_module **out);

/* The padding layers of torch.nn, clt_pad (view.h) with the layer's
 * padding, pairs (before, after) from the last dim backwards: 2 sizes for
 * the 1d layers, 4 for 2d, 6 for 3d (negative sizes crop, as clt_pad's).
 * ConstantPad1d/2d/3d(padding, value) pad with value, ZeroPad2d with 0
 * (torch 1.13 has no ZeroPad1d or 3d), ReflectionPad1d/2d/3d mirror and
 * ReplicationPad1d/2d/3d repeat the edge (float32 and float64, the ranks
 * clt_pad takes for them).  The forward's errors are clt_pad's, naming the
 * layer.  No tensors.  New module: release with clt_module_free. */
CLT_API clt_status clt_constant_pad1d_layer(const int64_t padding[2], double value,
                                            clt_module **out);
CLT_API clt_status clt_constant_pad2d_layer(const int64_t padding[4], double value,
                                            clt_module **out);
CLT_API clt_status clt_constant_pad3d_layer(const int64_t padding[6], double value,
                                            clt_module **out);
CLT_API clt_status clt_zero_pad2d_layer(const int64_t padding[4], clt_module **out);
CLT_API clt_status clt_reflection_pad1d_layer(const int64_t padding[2], clt_module **out);
CLT_API clt_status clt_reflection_pad2d_layer(const int64_t padding[4], clt_module **out);
CLT_API clt_status clt_reflection_pad3d_layer(const int64_t padding[6], clt_module **out);
CLT_API clt_status clt_replication_pad1d_layer(const int64_t padding[2], clt_module **out);
CLT_API clt_status clt_replication_pad2d_layer(const int64_t padding[4], clt_module **out);
CLT_API clt_status clt_replication_pad3d_layer(const int64_t padding[6], clt_module **out);

/* MaxUnpool1d's, MaxUnpool2d's and MaxUnpool3d's forward(input, indices,
 * output_size): the layer's unpooling of input at indices (as
 * clt_max_pool1d/2d/3d_with_indices give them), output_size NULL or one
 * (1d), two (2d) or three (3d) sizes.  Runs through the module's hooks,
 * as nn.Module.__call__: they see input (and a forward pre-hook's
 * replacement replaces it) and the result.  New tensor: release with
 * clt_tensor_free.  Errors as the functions', and CLT_ERR_INVALID_ARGUMENT
 * for another kind of module. */
CLT_API clt_status clt_max_unpool_forward(clt_module *m, const clt_tensor *input,
                                          const clt_tensor *indices,
                                          const int64_t *output_size, clt_tensor **out);

/* torch.nn.functional.dropout1d, dropout2d, dropout3d, alpha_dropout and
 * feature_alpha_dropout(input, p, training): with training 0, p 0 or an
 * empty input, input itself (a new handle on it, through which gradients
 * flow); with p 1, input * 0 (NaN stays, as torch's).  Otherwise:
 *
 * dropout1d ([N, C, L] or [C, L]), dropout2d ([N, C, *]: a 3-D input is
 * taken as [N, C, L], as torch 1.13 does) and dropout3d ([N, C, D, H, W];
 * anything else is taken as unbatched, a batch of one added, as torch)
 * zero whole channels: one mask element per [n, c], each kept when u >= p
 * (u as clt_rand draws it, in input's dtype, for the shape [N, C, 1,
 * ...]), kept channels scaled by 1 / (1 - p).  alpha_dropout draws one u
 * per element, feature_alpha_dropout one per [n, c]; dropped elements
 * become SELU's saturation value and the whole is rescaled to keep zero
 * mean and unit variance: input * m * a + b, m the mask, a = 1 / sqrt((al^2
 * p + 1) (1 - p)), b = (m - 1) al a + al a p, al = 1.7580993408473766, as
 * torch's.  So the mask is the same on every device for one generator
 * state, and the generator advances by the mask's element count (N * C
 * for the channel variants).  Differentiable in input (grad_fn
 * MulBackward0, AddBackward0 for the alpha ones; SqueezeBackward1 for an
 * unbatched input).  gen NULL: the default generator.
 *
 * Errors: p outside [0, 1] or NaN (CLT_ERR_INVALID_ARGUMENT, "dropout
 * probability has to be between 0 and 1"); dropout1d of other than 2 or 3
 * dims, the feature variants of fewer than 2 dims in train mode
 * (CLT_ERR_SHAPE_MISMATCH); in train mode with 0 < p < 1 an integer or
 * bool input (CLT_ERR_DTYPE_MISMATCH, as Dropout).  torch's warnings for
 * dropout2d's and dropout3d's unusual ranks are not given.  A call that
 * fails takes nothing from gen.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_dropout1d(const clt_tensor *input, double p, int training,
                                 clt_generator *gen, clt_tensor **out);
CLT_API clt_status clt_dropout2d(const clt_tensor *input, double p, int training,
                                 clt_generator *gen, clt_tensor **out);
CLT_API clt_status clt_dropout3d(const clt_tensor *input, double p, int training,
                                 clt_generator *gen, clt_tensor **out);
CLT_API clt_status clt_alpha_dropout(const clt_tensor *input, double p, int training,
                                     clt_generator *gen, clt_tensor **out);
CLT_API clt_status clt_feature_alpha_dropout(const clt_tensor *input, double p, int training,
                                             clt_generator *gen, clt_tensor **out);

/* torch.nn.functional.dropout(input, p, training): Dropout's forward as a
 * function, for a forward written by hand (the tutorials' F.dropout(x,
 * training=self.training): pass clt_module_is_training(m)).  With training
 * 0, p 0 or an empty input, input itself (a new handle on it, through
 * which gradients flow); with p 1, input * 0 (NaN stays); otherwise each
 * element kept when u >= p (u as clt_rand draws it in input's dtype and
 * shape, from gen; NULL: the default generator) and scaled by 1 / (1 - p),
 * the same mask as a Dropout layer's from the same generator state.
 * Differentiable in input (MulBackward0).  Errors: p outside [0, 1] or NaN
 * (CLT_ERR_INVALID_ARGUMENT, "dropout probability has to be between 0 and
 * 1"); in train mode with 0 < p < 1 an integer or bool input
 * (CLT_ERR_DTYPE_MISMATCH, as Dropout).  A call that fails takes nothing
 * from gen.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_dropout(const clt_tensor *input, double p, int training,
                               clt_generator *gen, clt_tensor **out);

/* torch.nn.Dropout1d(p), Dropout2d, Dropout3d, AlphaDropout and
 * FeatureAlphaDropout: the functions above with training the module's
 * train mode (the identity in eval mode).  gen is borrowed as Dropout's
 * (it must outlive the layer); a forward that fails takes nothing from
 * it.  p outside [0, 1] is CLT_ERR_INVALID_ARGUMENT.  No tensors.  New
 * module: release with clt_module_free. */
CLT_API clt_status clt_dropout1d_layer(double p, clt_generator *gen, clt_module **out);
CLT_API clt_status clt_dropout2d_layer(double p, clt_generator *gen, clt_module **out);
CLT_API clt_status clt_dropout3d_layer(double p, clt_generator *gen, clt_module **out);
CLT_API clt_status clt_alpha_dropout_layer(double p, clt_generator *gen, clt_module **out);
CLT_API clt_status clt_feature_alpha_dropout_layer(double p, clt_generator *gen,
                                                   clt_module **out);

/* ---- RReLU ------------------------------------------------------------------ */

/* torch.nn.functional.rrelu(input, lower, upper, training): in train mode
 * each element where input <= 0 is multiplied by its own slope drawn
 * uniform in [lower, upper) from gen (NULL: the default generator), the
 * others kept; in eval mode (training 0) it is leaky_relu with the slope
 * (lower + upper) / 2, drawing nothing.  PyTorch's defaults: lower 1/8,
 * upper 1/3.  Recorded: the gradient is the slope used (1 where input >
 * 0), as torch's.  input float32 or float64 (an integer one is
 * CLT_ERR_DTYPE_MISMATCH, as torch's "not implemented"); lower above upper
 * (or NaN) is CLT_ERR_INVALID_ARGUMENT ("Lower bound should be less than
 * or equal to the upper bound").  A failed call takes no numbers from
 * gen.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_rrelu(const clt_tensor *input, double lower, double upper, int training,
                             clt_generator *gen, clt_tensor **out);

/* torch.nn.RReLU(lower, upper): clt_rrelu with the module's train or eval
 * mode; gen is borrowed (it must outlive the layer), and a forward that
 * fails takes no numbers from it (clt_module_forward).  Errors as
 * clt_rrelu's bounds.  New module: release with clt_module_free. */
CLT_API clt_status clt_rrelu_layer(double lower, double upper, clt_generator *gen,
                                   clt_module **out);

/* ---- module hooks (nn.Module.register_*_hook) ---------------------------- */

/* A forward pre-hook: called with the module and its input (borrowed)
 * before the forward; it may set *replacement to a new tensor that the
 * forward takes instead (the library takes that reference), or leave it
 * NULL (or set it to input itself) to keep input.  A status other than
 * CLT_OK stops the forward: clt_module_forward fails with "clt_module_forward:
 * <module name>: forward pre-hook: <the hook's message>". */
typedef clt_status (*clt_module_forward_pre_hook_fn)(void *user, clt_module *m,
                                                     const clt_tensor *input,
                                                     clt_tensor **replacement);

/* A forward hook: called with the input (after the pre-hooks) and the
 * forward's output (both borrowed); it may set *replacement to a new
 * tensor that becomes the output (the library takes that reference and
 * releases the old output), or leave it NULL.  Failures as a pre-hook's
 * ("forward hook"). */
typedef clt_status (*clt_module_forward_hook_fn)(void *user, clt_module *m,
                                                 const clt_tensor *input,
                                                 const clt_tensor *output,
                                                 clt_tensor **replacement);

/* A full backward hook: called during a backward pass with grad_input, the
 * gradient of the loss with respect to the module's input (its own part:
 * what flows back through this module), and grad_output, with respect to
 * its output (both borrowed, valid during the call).  grad_input is NULL
 * when the input does not require grad (the hook is then called as soon
 * as grad_output is known, and must leave *replacement NULL).  It may set
 * *replacement to a new tensor of grad_input's shape, dtype and device
 * that flows on instead (the library takes that reference); each hook
 * sees the previous one's result, as torch's.  A status other than CLT_OK
 * stops the backward pass, as a tensor hook's does. */
typedef clt_status (*clt_module_backward_hook_fn)(void *user, clt_module *m,
                                                  const clt_tensor *grad_input,
                                                  const clt_tensor *grad_output,
                                                  clt_tensor **replacement);

/* Like m.register_forward_pre_hook(fn), m.register_forward_hook(fn) and
 * m.register_full_backward_hook(fn) (torch 1.13), for every module kind.
 * clt_module_forward runs, as nn.Module.__call__: the pre-hooks in
 * registration order, the reparametrizations of clt_weight_norm,
 * clt_spectral_norm and the pruning functions, the forward, the forward
 * hooks in order; so do containers running their children (Sequential,
 * the transformer layers' parts, custom modules' clt_module_forward on a
 * child).  So do the forwards of several inputs or results
 * (clt_rnn_forward, clt_lstm_forward, clt_gru_forward, the cells'
 * forwards, clt_multihead_attention, clt_bilinear_forward,
 * clt_embedding_bag_forward, clt_transformer_encoder_forward,
 * clt_transformer_decoder_forward, clt_transformer_forward), whose hooks
 * see the first input (x, input, query, input1, src or tgt) and the first
 * result (the output, h'): a pre-hook's replacement replaces that input
 * (a key or value that is the query, or an input2 that is input1, too),
 * a forward hook's that result, and the backward hooks' grad_input and
 * grad_output are those of that input and result (a backward pass that
 * reaches the module only through its other results, h_n alone, calls no
 * backward hook).
 *
 * Backward hooks: when m has any and grad mode is on, clt_module_forward
 * passes the forward a view of the input (when it requires grad) and
 * hands out a view of the output, both recorded (grad_fn
 * ExpandBackward0, where torch's is BackwardHookFunctionBackward), whose
 * gradients are the hooks' grad_input and grad_output.  The hooks
 * called are those m had when the forward ran, less those removed since
 * (as torch's, which keeps the forward's list); m is passed to them as it
 * was, and may have been released since (a hook must not use it then).
 * Only an output that requires grad gets them.
 *
 * user is the caller's, passed to fn.  handle may be NULL (the hook then
 * lives as long as m); else *handle is a new handle: release it with
 * clt_hook_remove (autograd.h), which removes the hook (from inside a
 * hook too).  A hook may register others; they run from the next call.
 * clt_module_clone gives the copy no hooks.  Errors: NULL m or fn
 * (CLT_ERR_NULL_ARGUMENT), out of host memory. */
CLT_API clt_status clt_module_register_forward_pre_hook(clt_module *m,
                                                        clt_module_forward_pre_hook_fn fn,
                                                        void *user, clt_hook **handle);
CLT_API clt_status clt_module_register_forward_hook(clt_module *m, clt_module_forward_hook_fn fn,
                                                    void *user, clt_hook **handle);
CLT_API clt_status clt_module_register_full_backward_hook(clt_module *m,
                                                          clt_module_backward_hook_fn fn,
                                                          void *user, clt_hook **handle);

/* torch.nn.modules.module.register_module_forward_pre_hook,
 * register_module_forward_hook and register_module_full_backward_hook:
 * the same hooks for every module of the process, run before each
 * module's own (m is the module being run), in registration order.
 * Registering and running are safe from several threads; user is shared
 * by all of them.  handle as above (NULL: the hook stays until the process
 * ends).  Errors: NULL fn (CLT_ERR_NULL_ARGUMENT), out of host memory. */
CLT_API clt_status clt_register_module_forward_pre_hook(clt_module_forward_pre_hook_fn fn,
                                                        void *user, clt_hook **handle);
CLT_API clt_status clt_register_module_forward_hook(clt_module_forward_hook_fn fn, void *user,
                                                    clt_hook **handle);
CLT_API clt_status clt_register_module_full_backward_hook(clt_module_backward_hook_fn fn,
                                                          void *user, clt_hook **handle);

/* ---- weight reparametrizations (torch.nn.utils) -------------------------- */

/* torch.nn.utils.weight_norm(m, name, dim): m's own parameter name (NULL:
 * "weight") w becomes name_g = norm_except_dim(w, 2, dim) and name_v = w's
 * values (two new parameters, listed after m's other parameters, as torch
 * registers them: a Linear's state is bias, weight_g, weight_v, so that
 * files interoperate with torch's), and before each forward the layer's
 * weight is computed as v * (g / norm_except_dim(v, 2, dim)), recorded, so
 * that gradients flow to g and v.  norm_except_dim: the 2-norm over every
 * dim but dim, g of shape [1, .., size(dim), .., 1]; dim -1 (torch's
 * None) the norm of the whole tensor, g a 0-d tensor; other negative dims
 * count from the end, as torch's.  The parameter taken out is no longer
 * listed nor moved; its handle stays valid as long as m.
 * clt_module_param(m, name) then gives the weight computed last, as
 * torch's module.weight (a custom module's forward reads it so): a
 * borrowed handle, valid until the next forward of m, not a parameter.
 * The same holds for clt_spectral_norm and the pruning functions.
 * clt_module_clone copies a reparametrized layer with its
 * reparametrizations (their tensors copied; the copy's weight computed
 * from them, spectral_norm's without a power iteration), where torch
 * 1.13's deepcopy refuses the computed weight.  Errors
 * (CLT_ERR_INVALID_ARGUMENT, m unchanged): no parameter of that name
 * ("Module 'Linear' has no parameter or buffer with name 'w'"), one
 * already reparametrized ("Cannot register two weight_norm hooks on the
 * same parameter weight"), dim out of range. */
CLT_API clt_status clt_weight_norm(clt_module *m, const char *name, int dim);

/* torch.nn.utils.remove_weight_norm(m, name): name becomes a parameter
 * again, a new leaf with the values computed from name_g and name_v (in
 * the layer's place in the listing, where torch appends it), which are no
 * longer listed (their handles stay valid as long as m).  No weight_norm
 * on name: CLT_ERR_INVALID_ARGUMENT ("weight_norm of 'weight' not found in
 * Linear"). */
CLT_API clt_status clt_remove_weight_norm(clt_module *m, const char *name);

/* torch.nn.utils.spectral_norm(m, name, n_power_iterations, eps, dim):
 * m's parameter name (NULL: "weight") w becomes name_orig (the same handle:
 * an optimizer over it keeps working) and two buffers name_u and name_v,
 * unit vectors of W's height and width (W: w with dim moved to the front,
 * as a matrix), drawn normal from gen (NULL: the default one) and
 * normalised; before each forward the layer's weight is w / sigma, sigma
 * = u . (W v) (recorded: gradients flow to w through both), where in
 * train mode n_power_iterations steps of v = normalize(W^T u), u =
 * normalize(W v) (normalize(x) = x / max(|x|, eps)) are made first,
 * recording nothing, and u and v written into the buffers when the
 * forward ends; in eval mode u and v are used as they are.  Until the
 * first forward the weight is w itself, as torch's.  dim -1: torch's
 * default (1 for ConvTranspose2d, else 0).  State names name_orig, name_u,
 * name_v, as torch's.  Errors (CLT_ERR_INVALID_ARGUMENT, m and gen
 * unchanged): no such parameter, one already reparametrized ("Cannot
 * register two spectral_norm hooks on the same parameter weight"),
 * n_power_iterations <= 0 ("Expected n_power_iterations to be
 * positive"), eps <= 0 or NaN, dim out of range, a weight of fewer than
 * 1 dim. */
CLT_API clt_status clt_spectral_norm(clt_module *m, const char *name, int n_power_iterations,
                                     double eps, int dim, clt_generator *gen);

/* torch.nn.utils.remove_spectral_norm(m, name): name becomes a parameter
 * again, a new leaf with the weight computed from name_orig, name_u and
 * name_v without power iteration; the three are no longer listed (their
 * handles stay valid as long as m).  Errors as clt_remove_weight_norm's
 * ("spectral_norm of 'weight' not found in Linear"). */
CLT_API clt_status clt_remove_spectral_norm(clt_module *m, const char *name);

/* ---- torch.nn.utils.parametrize ------------------------------------------------ */

/* A parametrization's function: *out (a new tensor made in the call, which
 * the library releases) from x, recorded when it must be differentiable.
 * user is the clt_parametrization's. */
typedef clt_status (*clt_parametrization_fn)(const clt_tensor *x, clt_tensor **out, void *user);

/* torch's parametrization module: forward (required) computes the tensor
 * from original; right_inverse (NULL: none, the identity) computes
 * original from a value of the tensor.  user (borrowed: it must outlive
 * the module and its clones) is handed to both. */
typedef struct clt_parametrization {
    clt_parametrization_fn forward;
    clt_parametrization_fn right_inverse;
    void *user;
} clt_parametrization;

/* torch.nn.utils.parametrize.register_parametrization(m, name, p, unsafe):
 * m's own parameter name is computed from now on as p->forward(original),
 * before each forward of m, recorded, so that gradients reach original.
 * The first parametrization of name makes original: the parameter itself
 * (the same handle, so an optimizer over it keeps working), its values
 * replaced by p->right_inverse(weight) when given (called with grad mode
 * off; a result of another shape, with unsafe, becomes a new leaf and the
 * old handle is retired, valid as long as m).  Later ones are appended:
 * name = p2(p1(original)), right_inverse not called (torch assumes the
 * identity); at most 8.  State keys as torch's: the parameter is listed
 * as "parametrizations.NAME.original" (and orthogonal's buffers as
 * "parametrizations.NAME.K.base"), after m's other parameters and buffers
 * and its children, where torch's ModuleDict child puts it; the
 * computed tensor is not listed, and clt_module_param(m, name) gives the
 * value computed last (borrowed, valid until m's next forward), as
 * torch's module.weight.  clt_module_clone copies the parametrizations
 * (sharing user).  Errors (CLT_ERR_INVALID_ARGUMENT, m unchanged): no
 * parameter name ("Module 'Linear' has no parameter or buffer with name
 * 'w'"), one weight_norm, spectral_norm or pruning hold, a name longer
 * than 21 bytes; right_inverse giving another dtype ("may not change the
 * dtype"), or, without unsafe, another shape, or a forward giving another
 * dtype or shape than the tensor's ("Registering a parametrization may
 * not change the dtype or the shape of the tensor, unless the `unsafe`
 * flag is enabled"); a callback's own error, prefixed.  NULL m, name, p
 * or p->forward: CLT_ERR_NULL_ARGUMENT. */
CLT_API clt_status clt_register_parametrization(clt_module *m, const char *name,
                                                const clt_parametrization *p, int unsafe);

/* torch.nn.utils.parametrize.remove_parametrizations(m, name,
 * leave_parametrized): name becomes a parameter again: original's handle
 * (the one registered) holding, when leave_parametrized, the value the
 * chain gives now (copied in, grad mode off; a value of another shape
 * makes a new leaf instead), else original's own values.  The bases are
 * retired (handles valid as long as m).  Errors (CLT_ERR_INVALID_ARGUMENT,
 * m unchanged): name not parametrized ("Module Linear does not have a
 * parametrization on bias"); leave_parametrized with a chain that changes
 * the dtype. */
CLT_API clt_status clt_remove_parametrizations(clt_module *m, const char *name,
                                               int leave_parametrized);

/* torch.nn.utils.parametrize.is_parametrized(m, name): 1 when m's name
 * (NULL: any of its parameters) has parametrizations, else 0 (also for a
 * NULL m).  Not recursive, as torch's. */
CLT_API int clt_is_parametrized(const clt_module *m, const char *name);

/* torch.nn.utils.parametrize.cached(): between begin and end, each
 * parametrized tensor is computed once, at the first forward that needs
 * it, and reused by later forwards (one graph: backward once over their
 * sum, as torch's).  Blocks nest; the cache belongs to the calling thread
 * (torch's is global) and is dropped by the outermost end.  An end
 * without a begin does nothing. */
CLT_API void clt_parametrize_cached_begin(void);
CLT_API void clt_parametrize_cached_end(void);

/* torch.nn.utils.parametrizations.orthogonal(m, name, orthogonal_map,
 * use_trivialization) of torch 1.13: m's parameter name (NULL: "weight"),
 * a float32 or float64 matrix or batch [..., n, k], is parametrized
 * (clt_register_parametrization, unsafe) by torch's _Orthogonal: X
 * (transposed when n < k) maps to an orthogonal Q by "matrix_exp"
 * (exp(A), A = tril(X) padded to n x n minus its transpose, the first k
 * columns), "cayley" ((I - A/2)^-1 (I + A/2)) or "householder"
 * (householder_product(tril(X, -1), 2 / (1 + column sums of squares))
 * times the signs of X's diagonal, truncated as .int()); NULL: matrix_exp
 * for a square weight, else householder.  With use_trivialization (torch's
 * default) the weight made orthogonal (its QR's Q with diag(R) >= 0; the
 * weight itself when it is orthogonal to 10 n eps; a non-square one
 * completed with normal columns drawn from gen, NULL the default one) is
 * kept as the buffer "parametrizations.NAME.0.base", original is set to
 * -Id, and the value is base @ map(original); without it, original is the
 * weight (matrix_exp, cayley) or its geqrf with R's signs on the diagonal
 * (householder).  Recorded: gradients reach original.  Errors
 * (CLT_ERR_INVALID_ARGUMENT, m and gen unchanged): no such parameter
 * ("has no parameter ot buffer with name", torch's typo), fewer than 2
 * dims ("Expected a matrix or batch of matrices"), an unknown map
 * ("orthogonal_map has to be one of"), those of
 * clt_register_parametrization; CLT_ERR_DTYPE_UNSUPPORTED for a complex
 * weight (torch's unitary case is not done here) or another dtype. */
CLT_API clt_status clt_orthogonal(clt_module *m, const char *name, const char *orthogonal_map,
                                  int use_trivialization, clt_generator *gen);

/* torch.nn.utils.parameters_to_vector(params): the n tensors flattened and
 * concatenated, recorded (gradients flow back to them).  All must be on
 * one device (CLT_ERR_DEVICE_MISMATCH, "Found two parameters on different
 * devices").  n 0: CLT_ERR_INVALID_ARGUMENT (torch.cat of nothing).  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_parameters_to_vector(clt_tensor *const *params, size_t n,
                                            clt_tensor **out);

/* torch.nn.utils.vector_to_parameters(vec, params): copies consecutive
 * slices of the 1-D vec into the n tensors in place (recording nothing;
 * converted to each one's dtype; the handles stay), as torch's
 * `param.data = slice`.  vec must have exactly as many elements as the
 * tensors together (torch ignores extra ones: refused here) and be on
 * their device.  Errors: vec not 1-D ("expected torch.Tensor"-like, as
 * CLT_ERR_SHAPE_MISMATCH), a size mismatch (CLT_ERR_SHAPE_MISMATCH), a
 * device mismatch; these change nothing.  A driver failing part-way
 * leaves the tensors before it written. */
CLT_API clt_status clt_vector_to_parameters(const clt_tensor *vec, clt_tensor *const *params,
                                            size_t n);

/* ---- pruning (torch.nn.utils.prune) --------------------------------------- */

/* Amounts, as torch's int or float amount: count >= 0 prunes that many
 * (torch's int; more than there are is CLT_ERR_INVALID_ARGUMENT, "amount=5
 * should be smaller than the number of parameters to prune=4"); count < 0
 * prunes round(amount * n) (Python's round, half to even) with amount in
 * [0, 1] ("amount=1.5 should either be a float in the range [0, 1] or a
 * non-negative integer").  n counts what is still unpruned: pruning a
 * parameter again prunes among the entries (or channels) its mask keeps,
 * as torch's PruningContainer.
 *
 * Pruning m's own parameter name (NULL: "weight") makes it name_orig (the
 * same handle, so an optimizer over it keeps working) and adds a buffer
 * name_mask of its dtype (1 kept, 0 pruned); before each forward the
 * layer's weight is name_orig * name_mask, recorded (the gradient of
 * name_orig is masked too).  State names as torch's, so its files load.
 * The mask is computed on the host in double (the values are read back:
 * a wait).  Errors (CLT_ERR_INVALID_ARGUMENT, m unchanged): the amounts',
 * no such parameter, one reparametrized otherwise (weight_norm,
 * spectral_norm). */

/* prune.l1_unstructured: the entries of smallest |name_orig| are pruned
 * (ties: the lower index first; torch's topk leaves their order open). */
CLT_API clt_status clt_prune_l1_unstructured(clt_module *m, const char *name, double amount,
                                             int64_t count);

/* prune.random_unstructured: the entries pruned are those with the largest
 * of uniform numbers drawn from gen (NULL: the default one) for the
 * unpruned entries, as torch's topk of rand_like (other numbers than
 * torch's generator's). */
CLT_API clt_status clt_prune_random_unstructured(clt_module *m, const char *name, double amount,
                                                 int64_t count, clt_generator *gen);

/* prune.ln_structured(m, name, amount, n, dim): whole slices along dim
 * (negative dims count from the end) are pruned, those of smallest Ln norm
 * of the weight as masked (name_orig * name_mask, torch's importance) over
 * the other dims (n > 0, inf, -inf, or 0: the count of
 * non-zeros; ties keep the lower index), among the slices the mask keeps
 * any entry of. */
CLT_API clt_status clt_prune_ln_structured(clt_module *m, const char *name, double amount,
                                           int64_t count, double n, int dim);

/* prune.global_unstructured(parameters, pruning_method=L1Unstructured,
 * amount): the k entries of smallest |weight| (the weight as the masks
 * leave it) among all the unpruned entries of the count parameters
 * (mods[i]'s names[i], NULL "weight") together, each parameter pruned as
 * above with its part of the mask.  All or none: every check is made
 * before any module changes. */
CLT_API clt_status clt_prune_global_unstructured(clt_module *const *mods,
                                                 const char *const *names, size_t count,
                                                 double amount, int64_t amount_count);

/* prune.remove(m, name): the pruning is made permanent: name_orig takes
 * the masked values and becomes name again (the same handle), name_mask
 * is dropped (its handle stays valid as long as m).  Not pruned:
 * CLT_ERR_INVALID_ARGUMENT ("Parameter 'weight' of module Linear has to be
 * pruned before pruning can be removed"). */
CLT_API clt_status clt_prune_remove(clt_module *m, const char *name);

/* prune.is_pruned(m): 1 when m or a module below it has a pruned
 * parameter, else 0 (NULL: 0). */
CLT_API int clt_prune_is_pruned(const clt_module *m);

#ifdef __cplusplus
}
#endif

#endif
