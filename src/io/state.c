/* state.c: load_state_dict for every format: a checkpoint's names and
 * shapes matched against a state (strictly or not, with torch's messages),
 * then every value uploaded before the first tensor of the state is written. */
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "nn/nn.h"

static int by_name(const void *a, const void *b)
{
    const clt__io_entry *x = *(const clt__io_entry *const *)a;
    const clt__io_entry *y = *(const clt__io_entry *const *)b;
    return strcmp(x->name, y->name);
}

/* Adds name to a comma-separated list for a message (which holds 768
 * bytes, both lists included): a list of a million names from a file
 * stops at "..." rather than take as much memory as the file's names. */
static void list_name(clt__strbuf *sb, const char *name)
{
    char q[160];
    if (sb->len < 500)
        clt__sb_printf(sb, "%s%s", sb->len ? ", " : "", CLT__QUOTE(q, name));
    else if (sb->data[sb->len - 1] != '.')
        clt__sb_printf(sb, ", ...");
}

clt_status clt__io_match_state(const clt_named_tensor *state, size_t n, const clt__io_entry *e,
                               size_t ne, bool strict, size_t *match, const char *fn,
                               const char *path_q)
{
    clt__strbuf missing = {0}, unexpected = {0};
    const clt__io_entry **sorted = clt__malloc((ne ? ne : 1) * sizeof *sorted);
    bool *used = clt__calloc(ne ? ne : 1, sizeof *used);
    clt_status st = CLT_OK;
    if (sorted == NULL || used == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t i = 0; i < ne; i++)
        sorted[i] = &e[i];
    qsort(sorted, ne, sizeof *sorted, by_name);
    for (size_t k = 0; k < n; k++) {
        clt__io_entry key = {.name = state[k].name};
        const clt__io_entry *kp = &key;
        const clt__io_entry **hit = bsearch(&kp, sorted, ne, sizeof *sorted, by_name);
        match[k] = hit ? (size_t)(*hit - e) : CLT__IO_NO_MATCH;
        if (hit == NULL)
            list_name(&missing, state[k].name);
        else
            used[match[k]] = true;
    }
    for (size_t i = 0; i < ne; i++)
        if (!used[i])
            list_name(&unexpected, e[i].name);
    if (strict && (missing.len || unexpected.len))
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s%s%s%s%s", fn, path_q,
                            missing.len ? "missing key(s) in state: " : "",
                            missing.len ? missing.data : "",
                            missing.len && unexpected.len ? "; " : "",
                            unexpected.len ? "unexpected key(s) in state: " : "",
                            unexpected.len ? unexpected.data : ""));
    for (size_t k = 0; k < n; k++) {
        if (match[k] == CLT__IO_NO_MATCH)
            continue;
        const clt_tensor *t = state[k].tensor;
        const clt__io_entry *f = &e[match[k]];
        char s0[160], s1[160], q[CLT__QUOTE_SIZE];
        bool same = f->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = f->shape[d] == t->shape[d];
        if (!same)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: size mismatch for %s: copying "
                                "a param with shape %s from checkpoint, the shape in current "
                                "model is %s", fn, path_q, CLT__QUOTE(q, state[k].name),
                                clt__shape_str(s0, sizeof s0, f->ndim, f->shape),
                                clt__shape_str(s1, sizeof s1, t->ndim, t->shape)));
        if (!clt__is_contiguous(t))
            CLT__TRY(clt__error(CLT_ERR_NOT_CONTIGUOUS, "%s: the model's tensor %s is not "
                                "contiguous", fn, CLT__QUOTE(q, state[k].name)));
    }
done:
    clt__sb_free(&missing);
    clt__sb_free(&unexpected);
    free(sorted);
    free(used);
    return st;
}

typedef struct entries {
    const clt__io_entry *e;
    size_t n;
} entries;

static bool find_entry(void *ctx, const char *name, int *ndim, const int64_t **shape)
{
    const entries *es = ctx;
    for (size_t i = 0; i < es->n; i++)
        if (strcmp(es->e[i].name, name) == 0) {
            *ndim = es->e[i].ndim;
            *shape = es->e[i].shape;
            return true;
        }
    return false;
}

clt_status clt__io_lazy_materialize(clt_module *m, const clt__io_entry *e, size_t ne,
                                    const char *fn, clt__lazy_undo **undo)
{
    entries es = {e, ne};
    return clt__lazy_materialize(m, find_entry, &es, fn, undo);
}

clt_status clt__io_load_matched(const clt_named_tensor *state, size_t n, const size_t *match,
                                clt__io_upload_fn upload, void *ctx, const char *fn,
                                const char *path_q)
{
    clt_status st = CLT_OK;
    clt_tensor **fresh = clt__calloc(n ? n : 1, sizeof *fresh);
    if (fresh == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t k = 0; k < n; k++) {
        if (match[k] == CLT__IO_NO_MATCH)
            continue;
        CLT__TRY(upload(ctx, match[k], state[k].tensor->dev, &fresh[k]));
        clt__scope_disown(fresh[k]);
    }
    for (size_t k = 0; k < n; k++) {
        char q[CLT__QUOTE_SIZE];
        if (fresh[k] == NULL)
            continue;
        st = clt__copy_into(state[k].tensor, fresh[k], fn);
        if (st != CLT_OK)
            CLT__TRY(clt__error_prefix(st, "%s: %s: copying into %s (the tensors before it "
                                       "were loaded)", fn, path_q,
                                       CLT__QUOTE(q, state[k].name)));
        clt__version_bump(state[k].tensor);
    }
done:
    for (size_t k = 0; k < n; k++)
        clt_tensor_free(fresh[k]);
    free(fresh);
    return st;
}

clt_status clt__io_save_module(const clt_module *m, const char *path, clt__io_save_fn save,
                               const char *fn, const void *caller)
{
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_named_tensor *state = NULL;
    size_t n = 0;
    clt_status st = clt__module_state_in(fn, m, &state, &n);
    if (st == CLT_OK)
        st = save(path, state, n, fn, caller);
    free(state);
    return st;
}
