/* optim.h: what the io layer needs of an optimizer to save and load its
 * state (clt_optimizer_save, clt_optimizer_load in src/io). */
#ifndef CLT_OPTIM_H
#define CLT_OPTIM_H

#include "internal.h"
#include "cltensor/nn.h"
#include "cltensor/optim.h"

/* The state tensors (borrowed), named as PyTorch's optimizer state_dict
 * names them: "state.<i>.momentum_buffer" (SGD with momentum),
 * "state.<i>.exp_avg", "state.<i>.exp_avg_sq" and, with amsgrad,
 * "state.<i>.max_exp_avg_sq" (Adam, AdamW), i the parameter's position.
 * *out holds *n entries then `extra` zeroed ones, names included in the
 * block; released with clt_free.  Messages name fn. */
clt_status clt__optimizer_state(const clt_optimizer *o, size_t extra, clt_named_tensor **out,
                                size_t *n, const char *fn);

/* The number of parameters, parameter i (borrowed), and the updates each
 * has had (PyTorch's state[p]['step']; o->n entries, borrowed). */
size_t clt__optimizer_size(const clt_optimizer *o);
clt_tensor *clt__optimizer_param(const clt_optimizer *o, size_t i);
const int64_t *clt__optimizer_updates(const clt_optimizer *o);
/* Non-zero while a step the driver stopped part-way waits to be finished
 * by the next clt_optimizer_step. */
bool clt__optimizer_stopped(const clt_optimizer *o);

/* Sets the counts and the learning rate a checkpoint holds; cannot fail
 * (the caller has checked them). */
void clt__optimizer_restore(clt_optimizer *o, const int64_t *updates, int64_t steps, double lr);

#endif
