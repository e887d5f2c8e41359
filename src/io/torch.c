/* torch.c: torch.save's zip format (torch >= 1.6) for a state_dict: a
 * small pickle interpreter, safe by construction (it builds dicts, tuples
 * and tensor descriptions and calls nothing), over an allow-list of
 * globals, that reads one; and a writer of the pickle torch 1.13 writes. */
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "io/io.h"
#include "nn/nn.h"
#include "optim/optim.h"

/* Limits on what a file may make the reader hold: data.pkl's size, the
 * objects built, the stack and the marks.  A state_dict takes about 15
 * objects per tensor, so 4M objects are some 250,000 tensors. */
#define MAX_PICKLE (256u << 20)
#define MAX_OBJECTS (1u << 22)
#define MAX_STACK (1u << 22)
/* Containers nested deeper than this are refused (a general checkpoint
 * nests five), and the items of all containers together are at most this
 * many (an item may be one object given again and again from the memo). */
#define MAX_DEPTH 64
#define MAX_ITEMS (1u << 24)

/* The storage types cltensor holds, as torch names them in a file. */
static const struct {
    const char *name;
    clt_dtype dtype;
} storages[] = {
    {"FloatStorage", CLT_FLOAT32}, {"DoubleStorage", CLT_FLOAT64}, {"HalfStorage", CLT_FLOAT16},
    {"IntStorage", CLT_INT32},     {"LongStorage", CLT_INT64},     {"ByteStorage", CLT_UINT8},
    {"BoolStorage", CLT_BOOL},     {"ComplexFloatStorage", CLT_COMPLEX64},
    {"ComplexDoubleStorage", CLT_COMPLEX128}, {"BFloat16Storage", CLT_BFLOAT16},
    {"CharStorage", CLT_INT8},     {"ShortStorage", CLT_INT16},
};

/* torch's other storage types: refused by dtype, not as unknown globals. */
static const char *const other_storages[] = {
    "QInt8Storage", "QUInt8Storage",
    "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage",
};

/* ---- objects ----------------------------------------------------------------------- */

typedef enum okind {
    O_NONE,
    O_BOOL,
    O_INT,
    O_FLOAT,
    O_STR,
    O_TUPLE,
    O_LIST,
    O_DICT,
    O_GLOBAL,
    O_STORAGE,
    O_TENSOR
} okind;

typedef enum gkind {
    G_ORDERED_DICT,
    G_REBUILD_TENSOR,
    G_REBUILD_PARAMETER,
    G_STORAGE,
    G_COUNTER,
    G_GETATTR,
    G_SWALR
} gkind;

typedef struct obj obj;

/* A storage: the member data/<key>, numel elements of dtype, read when a
 * tensor needs it. */
typedef struct storage {
    uint64_t member;
    clt_dtype dtype;
    int64_t numel;
    unsigned char *data;
    bool loaded;
} storage;

typedef struct tview {
    obj *storage;
    int64_t offset;
    int ndim;
    int64_t shape[CLT_MAX_DIMS], stride[CLT_MAX_DIMS];
} tview;

struct obj {
    okind kind;
    int64_t i;       /* an int, a bool; a global's gkind; 1 for a dict that is a Counter,
                      * for a string that names SWALR's anneal_func (getattr) */
    const char *s;   /* a string, in the pickle's bytes (no NUL after it) */
    size_t len;      /* its length; items of a tuple or list, 2 x the items of a dict */
    int depth;       /* containers within it, nested: 0 for a scalar */
    obj **items;     /* a tuple's items; a dict's keys and values, alternating */
    size_t cap;
    clt_dtype dtype; /* a storage global's */
    storage *sto;
    tview *view;
};

static obj none_obj = {.kind = O_NONE}, true_obj = {.kind = O_BOOL, .i = 1},
           false_obj = {.kind = O_BOOL, .i = 0};

static const char *kind_name(const obj *o)
{
    static const char *const names[] = {"None", "a bool", "an int", "a float", "a string",
                                        "a tuple", "a list", "a dict", "a global", "a storage",
                                        "a tensor"};
    return names[o->kind];
}

typedef struct pk {
    const unsigned char *buf, *p, *end;
    const char *fn;
    char where[CLT__WHERE_SIZE]; /* "'m.pt', data.pkl" */
    obj **all;
    size_t nall, capall;
    obj **stack;
    size_t sp, capstack;
    size_t *marks;
    size_t nmarks, capmarks;
    obj **memo;
    size_t nmemo, capmemo;
    size_t nitems; /* items of all containers */
    /* storages by the member that holds them */
    zip_t *za;
    const char *prefix;
    size_t prefix_len;
    obj **by_member;
    size_t nmembers;
    char path_q[CLT__QUOTE_SIZE];
} pk;

static clt_status pbad(const pk *k, const char *fmt, ...) CLT__PRINTF(2, 3);
static clt_status pbad(const pk *k, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: byte %lld: %s", k->fn, k->where,
                      (long long)(k->p - k->buf), what);
}

static clt_status nomem(const pk *k)
{
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: out of host memory", k->fn, k->where);
}

/* Grows *arr (of *cap elements of size es) to hold one more than n. */
static bool grow(void *arr, size_t *cap, size_t n, size_t es)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = clt__realloc(*(void **)arr, nc, es);
    if (p == NULL)
        return false;
    *(void **)arr = p;
    *cap = nc;
    return true;
}

static clt_status new_obj(pk *k, okind kind, obj **out)
{
    if (k->nall >= MAX_OBJECTS)
        return pbad(k, "more than %u objects (not a state_dict cltensor reads)", MAX_OBJECTS);
    obj *o = clt__calloc(1, sizeof *o);
    if (o == NULL || !grow(&k->all, &k->capall, k->nall, sizeof *k->all)) {
        free(o);
        return nomem(k);
    }
    o->kind = kind;
    k->all[k->nall++] = o;
    *out = o;
    return CLT_OK;
}

static void free_objs(pk *k)
{
    for (size_t i = 0; i < k->nall; i++) {
        obj *o = k->all[i];
        free(o->items);
        if (o->sto)
            free(o->sto->data);
        free(o->sto);
        free(o->view);
        free(o);
    }
    free(k->all);
    free(k->stack);
    free(k->marks);
    free(k->memo);
    free(k->by_member);
}

static clt_status push(pk *k, obj *o)
{
    if (k->sp >= MAX_STACK)
        return pbad(k, "the stack grows past %u entries", MAX_STACK);
    if (!grow(&k->stack, &k->capstack, k->sp, sizeof *k->stack))
        return nomem(k);
    k->stack[k->sp++] = o;
    return CLT_OK;
}

/* The stack's first entry above the innermost mark (0 without marks). */
static size_t floor_of(const pk *k)
{
    return k->nmarks ? k->marks[k->nmarks - 1] : 0;
}

static clt_status pop(pk *k, obj **o)
{
    if (k->sp <= floor_of(k))
        return pbad(k, "the stack is empty");
    *o = k->stack[--k->sp];
    return CLT_OK;
}

static clt_status top(pk *k, obj **o)
{
    if (k->sp <= floor_of(k))
        return pbad(k, "the stack is empty");
    *o = k->stack[k->sp - 1];
    return CLT_OK;
}

/* Pops to the innermost mark: the entries above it, *n of them, start at
 * *first (valid until the next push). */
static clt_status pop_mark(pk *k, obj ***first, size_t *n)
{
    if (k->nmarks == 0)
        return pbad(k, "no mark on the stack");
    size_t m = k->marks[--k->nmarks];
    *first = k->stack + m;
    *n = k->sp - m;
    k->sp = m;
    return CLT_OK;
}

/* Counts item as one more of container c: its depth, the items in all. */
static clt_status add_item(pk *k, obj *c, const obj *item)
{
    if (++k->nitems > MAX_ITEMS)
        return pbad(k, "more than %u items in all containers", MAX_ITEMS);
    if (item->depth + 1 > c->depth)
        c->depth = item->depth + 1;
    if (c->depth > MAX_DEPTH)
        return pbad(k, "containers nested more than %d deep", MAX_DEPTH);
    return CLT_OK;
}

static clt_status make_tuple(pk *k, obj **items, size_t n)
{
    obj *t;
    clt_status st = new_obj(k, O_TUPLE, &t);
    if (st != CLT_OK)
        return st;
    if (n > 0) {
        t->items = clt__malloc(n * sizeof *t->items);
        if (t->items == NULL)
            return nomem(k);
        memcpy(t->items, items, n * sizeof *items);
    }
    t->len = n;
    for (size_t i = 0; i < n; i++) {
        clt_status st2 = add_item(k, t, items[i]);
        if (st2 != CLT_OK)
            return st2;
    }
    return push(k, t);
}

static clt_status dict_set(pk *k, obj *d, obj *key, obj *value)
{
    if (d->kind != O_DICT)
        return pbad(k, "setting an item of %s, not a dict", kind_name(d));
    clt_status st = add_item(k, d, key);
    if (st == CLT_OK)
        st = add_item(k, d, value);
    if (st != CLT_OK)
        return st;
    if (!grow(&d->items, &d->cap, d->len + 1, sizeof *d->items))
        return nomem(k);
    d->items[d->len++] = key;
    d->items[d->len++] = value;
    return CLT_OK;
}

static clt_status list_append(pk *k, obj *l, obj *value)
{
    if (l->kind != O_LIST)
        return pbad(k, "appending to %s, not a list", kind_name(l));
    clt_status st = add_item(k, l, value);
    if (st != CLT_OK)
        return st;
    if (!grow(&l->items, &l->cap, l->len, sizeof *l->items))
        return nomem(k);
    l->items[l->len++] = value;
    return CLT_OK;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static clt_status need(pk *k, size_t n, const char *what)
{
    if ((size_t)(k->end - k->p) < n)
        return pbad(k, "the pickle ends inside %s (truncated?)", what);
    return CLT_OK;
}

/* ---- globals --------------------------------------------------------------------- */

static bool is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* The global module.name when the allow-list has it; else a message
 * naming it.  Nothing is imported or called. */
static clt_status global(pk *k, const char *mod, size_t ml, const char *name, size_t nl)
{
    obj *g;
    clt_status st;
    int kind = -1;
    clt_dtype dtype = CLT_FLOAT32;
    if (is(mod, ml, "collections") && is(name, nl, "OrderedDict"))
        kind = G_ORDERED_DICT;
    else if (is(mod, ml, "collections") && is(name, nl, "Counter"))
        kind = G_COUNTER; /* MultiStepLR's milestones */
    else if (is(mod, ml, "torch._utils") && is(name, nl, "_rebuild_tensor_v2"))
        kind = G_REBUILD_TENSOR;
    else if (is(mod, ml, "torch._utils") && is(name, nl, "_rebuild_parameter"))
        kind = G_REBUILD_PARAMETER;
    else if ((is(mod, ml, "__builtin__") || is(mod, ml, "builtins")) && is(name, nl, "getattr"))
        kind = G_GETATTR; /* SWALR's anneal_func only: see reduce */
    else if (is(mod, ml, "torch.optim.swa_utils") && is(name, nl, "SWALR"))
        kind = G_SWALR; /* never called: getattr's first argument */
    else if (is(mod, ml, "torch")) {
        for (size_t i = 0; i < sizeof storages / sizeof storages[0]; i++)
            if (is(name, nl, storages[i].name)) {
                kind = G_STORAGE;
                dtype = storages[i].dtype;
            }
        for (size_t i = 0; kind < 0 && i < sizeof other_storages / sizeof other_storages[0]; i++)
            if (is(name, nl, other_storages[i]))
                return pbad(k, "a tensor of torch.%s: its dtype is not one of cltensor's "
                               "(float32, float64, float16, int32, int64, uint8, bool)",
                            other_storages[i]);
    }
    if (kind < 0) {
        char qm[CLT__QUOTE_SIZE], qn[CLT__QUOTE_SIZE];
        return pbad(k, "the global '%s.%s' is not allowed (a state_dict of tensors needs "
                       "collections.OrderedDict, torch._utils._rebuild_tensor_v2 and torch's "
                       "storage types only, a schedule's collections.Counter and SWALR's "
                       "getattr(torch.optim.swa_utils.SWALR, name); nothing from the file is "
                       "run)",
                    clt__quote(qm, sizeof qm, mod, ml), clt__quote(qn, sizeof qn, name, nl));
    }
    if ((st = new_obj(k, O_GLOBAL, &g)) != CLT_OK)
        return st;
    g->i = kind;
    g->dtype = dtype;
    return push(k, g);
}

/* ---- calls (REDUCE), persistent ids, BUILD -------------------------------------- */

static bool int_tuple(const obj *t, int64_t *out, int *n)
{
    if (t->kind != O_TUPLE || t->len > CLT_MAX_DIMS)
        return false;
    for (size_t i = 0; i < t->len; i++) {
        if (t->items[i]->kind != O_INT || t->items[i]->i < 0)
            return false;
        out[i] = t->items[i]->i;
    }
    *n = (int)t->len;
    return true;
}

static clt_status reduce(pk *k)
{
    obj *args = NULL, *fn_obj = NULL, *o = NULL;
    clt_status st;
    if ((st = pop(k, &args)) != CLT_OK || (st = pop(k, &fn_obj)) != CLT_OK)
        return st;
    if (fn_obj->kind != O_GLOBAL || fn_obj->i == G_STORAGE || fn_obj->i == G_SWALR)
        return pbad(k, "calling %s, which cltensor's reader does not call", kind_name(fn_obj));
    if (args->kind != O_TUPLE)
        return pbad(k, "a call's arguments are %s, not a tuple", kind_name(args));
    obj **a = args->items;
    switch ((gkind)fn_obj->i) {
    case G_ORDERED_DICT:
        if (args->len != 0)
            return pbad(k, "OrderedDict called with %zu arguments (torch writes none)",
                        args->len);
        if ((st = new_obj(k, O_DICT, &o)) != CLT_OK)
            return st;
        return push(k, o);
    case G_COUNTER:
        /* Counter(dict): a dict marked as a Counter (its items copied) */
        if (args->len > 1 || (args->len == 1 && a[0]->kind != O_DICT))
            return pbad(k, "Counter called with arguments other than one dict (torch writes "
                           "Counter({epoch: count}))");
        if ((st = new_obj(k, O_DICT, &o)) != CLT_OK)
            return st;
        o->i = 1;
        for (size_t j = 0; args->len == 1 && j + 1 < a[0]->len; j += 2)
            if ((st = dict_set(k, o, a[0]->items[j], a[0]->items[j + 1])) != CLT_OK)
                return st;
        return push(k, o);
    case G_REBUILD_PARAMETER:
        if (args->len != 3 || a[0]->kind != O_TENSOR)
            return pbad(k, "_rebuild_parameter's arguments are not (tensor, requires_grad, "
                           "hooks)");
        return push(k, a[0]);
    case G_GETATTR: {
        /* torch 1.13's SWALR.state_dict()['anneal_func'], a staticmethod:
         * getattr(SWALR, '_cosine_anneal' or '_linear_anneal'), nothing
         * else; a string marked as that name, nothing looked up */
        static const char *const names[2] = {"_cosine_anneal", "_linear_anneal"};
        static const char *const marks[2] = {"SWALR._cosine_anneal", "SWALR._linear_anneal"};
        int which = -1;
        if (args->len == 2 && a[0]->kind == O_GLOBAL && a[0]->i == G_SWALR &&
            a[1]->kind == O_STR)
            for (int j = 0; j < 2; j++)
                if (is(a[1]->s, a[1]->len, names[j]))
                    which = j;
        if (which < 0)
            return pbad(k, "getattr called with arguments other than "
                           "(torch.optim.swa_utils.SWALR, '_cosine_anneal' or "
                           "'_linear_anneal'), which cltensor's reader does not take");
        if ((st = new_obj(k, O_STR, &o)) != CLT_OK)
            return st;
        o->s = marks[which];
        o->len = strlen(marks[which]);
        o->i = 2;
        return push(k, o);
    }
    case G_REBUILD_TENSOR:
        break;
    default:
        return pbad(k, "calling an unknown global");
    }
    /* _rebuild_tensor_v2(storage, storage_offset, size, stride,
     * requires_grad, backward_hooks[, metadata]) */
    if ((args->len != 6 && args->len != 7) || a[0]->kind != O_STORAGE || a[1]->kind != O_INT ||
        a[1]->i < 0 || a[4]->kind != O_BOOL || a[5]->kind != O_DICT ||
        (args->len == 7 && a[6]->kind != O_NONE && a[6]->kind != O_DICT))
        return pbad(k, "_rebuild_tensor_v2's arguments are not (storage, offset, size, stride, "
                       "requires_grad, backward_hooks)");
    tview *v = clt__calloc(1, sizeof *v);
    if (v == NULL)
        return nomem(k);
    int ns = 0, nt = 0;
    if (!int_tuple(a[2], v->shape, &ns) || !int_tuple(a[3], v->stride, &nt) || ns != nt) {
        free(v);
        return pbad(k, "a tensor's size and stride are not tuples of as many non-negative "
                       "ints, at most %d", CLT_MAX_DIMS);
    }
    v->storage = a[0];
    v->offset = a[1]->i;
    v->ndim = ns;
    if ((st = new_obj(k, O_TENSOR, &o)) != CLT_OK) {
        free(v);
        return st;
    }
    o->view = v;
    return push(k, o);
}

/* BINPERSID: ('storage', torch.FloatStorage, key, location, numel), the
 * member <prefix>/data/<key> holding numel elements. */
static clt_status persistent(pk *k)
{
    obj *pid = NULL, *o = NULL;
    clt_status st = pop(k, &pid);
    if (st != CLT_OK)
        return st;
    obj **a = pid->items;
    if (pid->kind != O_TUPLE || pid->len != 5 || a[0]->kind != O_STR ||
        !is(a[0]->s, a[0]->len, "storage") || a[1]->kind != O_GLOBAL || a[1]->i != G_STORAGE ||
        a[2]->kind != O_STR || a[3]->kind != O_STR || a[4]->kind != O_INT || a[4]->i < 0)
        return pbad(k, "a persistent id that is not ('storage', type, key, location, numel)");
    char name[CLT__QUOTE_SIZE + 64], q[CLT__QUOTE_SIZE];
    if (a[2]->len > CLT__QUOTE_SIZE || memchr(a[2]->s, '\0', a[2]->len))
        return pbad(k, "a storage key of %zu bytes", a[2]->len);
    snprintf(name, sizeof name, "%.*s/data/%.*s", (int)k->prefix_len, k->prefix,
             (int)a[2]->len, a[2]->s);
    zip_int64_t idx = zip_name_locate(k->za, name, 0);
    if (idx < 0 || (uint64_t)idx >= k->nmembers)
        return pbad(k, "storage '%s': the archive has no member '%s'",
                    clt__quote(q, sizeof q, a[2]->s, a[2]->len), name);
    clt_dtype dt = a[1]->dtype;
    int64_t numel = a[4]->i;
    obj *known = k->by_member[idx];
    if (known != NULL) {
        if (known->sto->dtype != dt || known->sto->numel != numel)
            return pbad(k, "storage '%s' is given twice, as different types or sizes",
                        clt__quote(q, sizeof q, a[2]->s, a[2]->len));
        return push(k, known);
    }
    zip_stat_t sb;
    zip_stat_init(&sb);
    if (zip_stat_index(k->za, (zip_uint64_t)idx, 0, &sb) != 0 || !(sb.valid & ZIP_STAT_SIZE))
        return pbad(k, "storage '%s': %s", clt__quote(q, sizeof q, a[2]->s, a[2]->len),
                    zip_strerror(k->za));
    uint64_t es = clt_dtype_size(dt);
    if ((uint64_t)numel > UINT64_MAX / es || sb.size != (uint64_t)numel * es)
        return pbad(k, "storage '%s': %lld elements of %llu bytes, and its member holds %llu bytes",
                    clt__quote(q, sizeof q, a[2]->s, a[2]->len), (long long)numel,
                    (unsigned long long)es, (unsigned long long)sb.size);
    if ((st = new_obj(k, O_STORAGE, &o)) != CLT_OK)
        return st;
    if ((o->sto = clt__calloc(1, sizeof *o->sto)) == NULL)
        return nomem(k);
    *o->sto = (storage){(uint64_t)idx, dt, numel, NULL, false};
    k->by_member[idx] = o;
    return push(k, o);
}

/* BUILD: an OrderedDict's state (a state_dict's _metadata attribute), read
 * and dropped; anything else is refused. */
static clt_status build(pk *k)
{
    obj *state = NULL, *o = NULL;
    clt_status st;
    if ((st = pop(k, &state)) != CLT_OK || (st = top(k, &o)) != CLT_OK)
        return st;
    if (o->kind != O_DICT || (state->kind != O_DICT && state->kind != O_NONE))
        return pbad(k, "setting the state of %s from %s (cltensor reads a dict's only)",
                    kind_name(o), kind_name(state));
    return CLT_OK;
}

/* ---- the interpreter ------------------------------------------------------------- */

static clt_status memo_put(pk *k, uint64_t idx)
{
    obj *o = NULL;
    clt_status st = top(k, &o);
    if (st != CLT_OK)
        return st;
    /* pickle numbers its memo entries in order: an index past the next one
     * is no pickler's */
    if (idx > k->nmemo)
        return pbad(k, "memo index %llu skips past %zu", (unsigned long long)idx, k->nmemo);
    if (idx == k->nmemo) {
        if (!grow(&k->memo, &k->capmemo, k->nmemo, sizeof *k->memo))
            return nomem(k);
        k->nmemo++;
    }
    k->memo[idx] = o;
    return CLT_OK;
}

static clt_status memo_get(pk *k, uint64_t idx)
{
    if (idx >= k->nmemo)
        return pbad(k, "memo index %llu was never set", (unsigned long long)idx);
    return push(k, k->memo[idx]);
}

static clt_status str(pk *k, size_t n)
{
    clt_status st = need(k, n, "a string");
    obj *o;
    if (st != CLT_OK)
        return st;
    if (!clt__utf8_valid((const char *)k->p, n))
        return pbad(k, "a string that is not UTF-8");
    if ((st = new_obj(k, O_STR, &o)) != CLT_OK)
        return st;
    o->s = (const char *)k->p;
    o->len = n;
    k->p += n;
    return push(k, o);
}

static clt_status new_int(pk *k, int64_t v)
{
    obj *o;
    clt_status st = new_obj(k, O_INT, &o);
    if (st != CLT_OK)
        return st;
    o->i = v;
    return push(k, o);
}

/* Runs the pickle to STOP; *result the object it returns. */
static clt_status run(pk *k, obj **result)
{
    clt_status st = CLT_OK;
    obj *a = NULL, *b = NULL, *c = NULL, **items = NULL;
    size_t n = 0;
    while (st == CLT_OK) {
        if (k->p >= k->end)
            return pbad(k, "the pickle ends without STOP (truncated?)");
        unsigned char op = *k->p++;
        switch (op) {
        case 0x80: /* PROTO */
            if ((st = need(k, 1, "PROTO")) == CLT_OK && (k->p[0] < 2 || k->p[0] > 5))
                st = pbad(k, "pickle protocol %u (torch writes 2)", k->p[0]);
            k->p += st == CLT_OK;
            break;
        case 0x95: /* FRAME */
            if ((st = need(k, 8, "FRAME")) == CLT_OK)
                k->p += 8;
            break;
        case 'c': { /* GLOBAL module\nname\n */
            const unsigned char *m = k->p, *nl1 = memchr(m, '\n', (size_t)(k->end - m));
            const unsigned char *nm = nl1 ? nl1 + 1 : NULL;
            const unsigned char *nl2 = nm ? memchr(nm, '\n', (size_t)(k->end - nm)) : NULL;
            if (nl2 == NULL)
                return pbad(k, "the pickle ends inside GLOBAL (truncated?)");
            k->p = nl2 + 1;
            st = global(k, (const char *)m, (size_t)(nl1 - m), (const char *)nm,
                        (size_t)(nl2 - nm));
            break;
        }
        case 0x93: /* STACK_GLOBAL */
            if ((st = pop(k, &b)) != CLT_OK || (st = pop(k, &a)) != CLT_OK)
                break;
            if (a->kind != O_STR || b->kind != O_STR)
                st = pbad(k, "STACK_GLOBAL of %s and %s, not strings", kind_name(a),
                          kind_name(b));
            else
                st = global(k, a->s, a->len, b->s, b->len);
            break;
        case 'q': /* BINPUT */
            if ((st = need(k, 1, "BINPUT")) == CLT_OK)
                st = memo_put(k, *k->p++);
            break;
        case 'r': /* LONG_BINPUT */
            if ((st = need(k, 4, "LONG_BINPUT")) == CLT_OK) {
                k->p += 4;
                st = memo_put(k, le(k->p - 4, 4));
            }
            break;
        case 0x94: /* MEMOIZE */
            st = memo_put(k, k->nmemo);
            break;
        case 'h': /* BINGET */
            if ((st = need(k, 1, "BINGET")) == CLT_OK)
                st = memo_get(k, *k->p++);
            break;
        case 'j': /* LONG_BINGET */
            if ((st = need(k, 4, "LONG_BINGET")) == CLT_OK) {
                k->p += 4;
                st = memo_get(k, le(k->p - 4, 4));
            }
            break;
        case '(': /* MARK */
            if (k->nmarks >= MAX_STACK)
                st = pbad(k, "more than %u marks", MAX_STACK);
            else if (!grow(&k->marks, &k->capmarks, k->nmarks, sizeof *k->marks))
                st = nomem(k);
            else
                k->marks[k->nmarks++] = k->sp;
            break;
        case '}': /* EMPTY_DICT */
            if ((st = new_obj(k, O_DICT, &a)) == CLT_OK)
                st = push(k, a);
            break;
        case ']': /* EMPTY_LIST */
            if ((st = new_obj(k, O_LIST, &a)) == CLT_OK)
                st = push(k, a);
            break;
        case 'a': /* APPEND */
            if ((st = pop(k, &b)) == CLT_OK && (st = top(k, &c)) == CLT_OK)
                st = list_append(k, c, b);
            break;
        case 'e': /* APPENDS */
            if ((st = pop_mark(k, &items, &n)) != CLT_OK || (st = top(k, &c)) != CLT_OK)
                break;
            for (size_t i = 0; i < n && st == CLT_OK; i++)
                st = list_append(k, c, items[i]);
            break;
        case ')': /* EMPTY_TUPLE */
            st = make_tuple(k, NULL, 0);
            break;
        case 0x85: /* TUPLE1 */
        case 0x86: /* TUPLE2 */
        case 0x87: /* TUPLE3 */
            n = (size_t)(op - 0x84);
            if (k->sp < floor_of(k) + n) {
                st = pbad(k, "TUPLE%zu with fewer entries on the stack", n);
                break;
            }
            k->sp -= n;
            st = make_tuple(k, k->stack + k->sp, n);
            break;
        case 't': /* TUPLE */
            if ((st = pop_mark(k, &items, &n)) == CLT_OK)
                st = make_tuple(k, items, n);
            break;
        case 'J': /* BININT */
            if ((st = need(k, 4, "BININT")) == CLT_OK) {
                k->p += 4;
                st = new_int(k, (int32_t)(uint32_t)le(k->p - 4, 4));
            }
            break;
        case 'K': /* BININT1 */
            if ((st = need(k, 1, "BININT1")) == CLT_OK)
                st = new_int(k, *k->p++);
            break;
        case 'M': /* BININT2 */
            if ((st = need(k, 2, "BININT2")) == CLT_OK) {
                k->p += 2;
                st = new_int(k, (int64_t)le(k->p - 2, 2));
            }
            break;
        case 0x8a: /* LONG1 */
            if ((st = need(k, 1, "LONG1")) != CLT_OK)
                break;
            n = *k->p++;
            if (n > 8) {
                st = pbad(k, "an int of %zu bytes (beyond int64)", n);
                break;
            }
            if ((st = need(k, n, "LONG1")) == CLT_OK) {
                uint64_t v = le(k->p, (int)n);
                if (n > 0 && n < 8 && (k->p[n - 1] & 0x80))
                    v |= UINT64_MAX << (8 * n); /* sign-extended */
                k->p += n;
                st = new_int(k, (int64_t)v);
            }
            break;
        case 'G': /* BINFLOAT, big-endian */
            if ((st = need(k, 8, "BINFLOAT")) == CLT_OK) {
                uint64_t bits = 0;
                for (int i = 0; i < 8; i++)
                    bits = bits << 8 | k->p[i];
                k->p += 8;
                if ((st = new_obj(k, O_FLOAT, &a)) == CLT_OK) {
                    memcpy(&a->i, &bits, 8);
                    st = push(k, a);
                }
            }
            break;
        case 'X': /* BINUNICODE */
            if ((st = need(k, 4, "BINUNICODE")) == CLT_OK) {
                k->p += 4;
                st = str(k, (size_t)le(k->p - 4, 4));
            }
            break;
        case 0x8c: /* SHORT_BINUNICODE */
            if ((st = need(k, 1, "SHORT_BINUNICODE")) == CLT_OK)
                st = str(k, *k->p++);
            break;
        case 'Q': /* BINPERSID */
            st = persistent(k);
            break;
        case 'R': /* REDUCE */
            st = reduce(k);
            break;
        case 'b': /* BUILD */
            st = build(k);
            break;
        case 's': /* SETITEM */
            if ((st = pop(k, &b)) == CLT_OK && (st = pop(k, &a)) == CLT_OK &&
                (st = top(k, &c)) == CLT_OK)
                st = dict_set(k, c, a, b);
            break;
        case 'u': /* SETITEMS */
            if ((st = pop_mark(k, &items, &n)) != CLT_OK)
                break;
            if (n % 2 != 0) {
                st = pbad(k, "SETITEMS with an odd number of entries");
                break;
            }
            if ((st = top(k, &c)) != CLT_OK)
                break;
            for (size_t i = 0; i < n && st == CLT_OK; i += 2)
                st = dict_set(k, c, items[i], items[i + 1]);
            break;
        case 0x88: /* NEWTRUE */
            st = push(k, &true_obj);
            break;
        case 0x89: /* NEWFALSE */
            st = push(k, &false_obj);
            break;
        case 'N': /* NONE */
            st = push(k, &none_obj);
            break;
        case '.': /* STOP */
            return pop(k, result);
        default:
            k->p--;
            return pbad(k, "pickle opcode 0x%02x is not one torch writes for a state_dict "
                           "(cltensor's reader refuses it)", op);
        }
    }
    return st;
}

/* ---- loading ----------------------------------------------------------------------- */

/* Reads storage s (once) from its member, whole, checking the CRC. */
static clt_status load_storage(pk *k, storage *s, const char *fn)
{
    if (s->loaded)
        return CLT_OK;
    clt__zip_member m;
    char where[CLT__WHERE_SIZE], q[CLT__QUOTE_SIZE];
    const char *name = zip_get_name(k->za, s->member, 0);
    snprintf(where, sizeof where, "%s, member '%s'", k->path_q,
             name ? CLT__QUOTE(q, name) : "?");
    clt_status st = clt__zip_member_open(k->za, s->member, fn, where, &m);
    if (st != CLT_OK)
        return st;
    size_t bytes = (size_t)m.size;
    s->data = clt__malloc(bytes ? bytes : 1);
    if (s->data == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: no host memory for %zu bytes", fn,
                        where, bytes);
    if (st == CLT_OK)
        st = clt__zip_member_read(&m, 0, s->data, bytes);
    clt_status cst = clt__zip_member_close(&m, st == CLT_OK);
    if (st == CLT_OK)
        st = cst;
    s->loaded = st == CLT_OK;
    return st;
}

/* v's values, row-major, into dst: each element at offset + sum(i * stride). */
static void gather(const tview *v, const unsigned char *src, unsigned char *dst, size_t es,
                   int64_t numel)
{
    int64_t idx[CLT_MAX_DIMS] = {0}, off = v->offset;
    for (int64_t e = 0; e < numel; e++, dst += es) {
        memcpy(dst, src + (size_t)off * es, es);
        for (int d = v->ndim - 1; d >= 0; d--) {
            if (++idx[d] < v->shape[d]) {
                off += v->stride[d];
                break;
            }
            off -= v->stride[d] * (v->shape[d] - 1);
            idx[d] = 0;
        }
    }
}

/* The view of entry `name` (quoted): a shape whose elements all lie
 * within its storage.  Checked for every entry before any is uploaded. */
static clt_status check_view(const pk *k, const tview *v, const char *name, const char *fn)
{
    const storage *s = v->storage->sto;
    char sh[160];
    int64_t numel = clt__io_numel(v->ndim, v->shape, clt_dtype_size(s->dtype));
    if (numel < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: tensor '%s': shape %s is too large",
                          fn, k->path_q, name, clt__shape_str(sh, sizeof sh, v->ndim, v->shape));
    if (numel == 0)
        return CLT_OK;
    /* the last element it reaches must lie within its storage */
    int64_t last = v->offset;
    bool over = false;
    for (int d = 0; d < v->ndim; d++) {
        int64_t step;
        over |= __builtin_mul_overflow(v->shape[d] - 1, v->stride[d], &step);
        over |= __builtin_add_overflow(last, step, &last);
    }
    if (over || last >= s->numel)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: tensor '%s': shape %s at offset "
                          "%lld with its strides reaches past its storage of %lld elements", fn,
                          k->path_q, name, clt__shape_str(sh, sizeof sh, v->ndim, v->shape),
                          (long long)v->offset, (long long)s->numel);
    return CLT_OK;
}

/* The tensor of entry `name`, its view checked: its values gathered and
 * uploaded to dev. */
/* The values of tensor t (its view checked), row-major, in a new block
 * *vals of *bytes bytes; messages "fn: where: ...". */
static clt_status view_host(pk *k, const obj *t, const char *fn, const char *where,
                            unsigned char **vals, size_t *bytes)
{
    const tview *v = t->view;
    storage *s = v->storage->sto;
    size_t es = clt_dtype_size(s->dtype);
    int64_t numel = clt__io_numel(v->ndim, v->shape, es);
    clt_status st = load_storage(k, s, fn);
    if (st != CLT_OK)
        return st;
    *bytes = (size_t)numel * es;
    *vals = clt__malloc(*bytes ? *bytes : 1);
    if (*vals == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: no host memory for %zu bytes", fn,
                          where, *bytes);
    gather(v, s->data, *vals, es, numel);
    int64_t b = s->dtype == CLT_BOOL ? clt__io_bad_bool(*vals, *bytes) : -1;
    if (b >= 0) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: bool element %lld holds the byte %u "
                        "(only 0 and 1 are bools)", fn, where, (long long)b, (*vals)[b]);
        free(*vals);
        *vals = NULL;
    }
    return st;
}

static clt_status make_tensor(pk *k, const obj *t, const char *name, clt_device *dev,
                              const char *fn, clt_tensor **out)
{
    const tview *v = t->view;
    char q[CLT__QUOTE_SIZE], where[CLT__WHERE_SIZE];
    snprintf(where, sizeof where, "%s: tensor '%s'", k->path_q, CLT__QUOTE(q, name));
    unsigned char *vals = NULL;
    size_t bytes = 0;
    clt_status st = view_host(k, t, fn, where, &vals, &bytes);
    if (st != CLT_OK)
        return st;
    if ((st = clt__tensor_from_host_in(fn, dev, v->storage->sto->dtype, v->ndim, v->shape, vals,
                                       out)) != CLT_OK)
        clt__error_in_step(st, fn, where);
    free(vals);
    return st;
}

/* Finds the archive's folder (torch names it after the file) from
 * <folder>/data.pkl, and reads data.pkl. */
static clt_status read_pickle(pk *k, const char *fn, unsigned char **buf, size_t *len)
{
    zip_int64_t entries = zip_get_num_entries(k->za, 0);
    const char *pkl = NULL;
    zip_uint64_t idx = 0;
    for (zip_int64_t i = 0; i < entries && pkl == NULL; i++) {
        const char *name = zip_get_name(k->za, (zip_uint64_t)i, 0);
        const char *slash = name ? strchr(name, '/') : NULL;
        if (slash && strcmp(slash, "/data.pkl") == 0) {
            pkl = name;
            idx = (zip_uint64_t)i;
            k->prefix = name;
            k->prefix_len = (size_t)(slash - name);
        }
    }
    if (pkl == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the archive has no <folder>/data.pkl: "
                          "not torch.save's format (a NumPy .npz? clt_load_npz reads it)", fn,
                          k->path_q);
    k->nmembers = (size_t)entries;
    if ((k->by_member = clt__calloc((size_t)entries, sizeof *k->by_member)) == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt__zip_member m;
    clt_status st = clt__zip_member_open(k->za, idx, fn, k->where, &m);
    if (st != CLT_OK)
        return st;
    if (m.size > MAX_PICKLE) {
        clt__zip_member_close(&m, false);
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %llu bytes, beyond the %u cltensor "
                          "reads", fn, k->where, (unsigned long long)m.size, MAX_PICKLE);
    }
    *len = (size_t)m.size;
    *buf = clt__malloc(*len ? *len : 1);
    if (*buf == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == CLT_OK)
        st = clt__zip_member_read(&m, 0, *buf, *len);
    clt_status cst = clt__zip_member_close(&m, st == CLT_OK);
    return st == CLT_OK ? cst : st;
}

/* Opens the archive `path` into k and runs its pickle: *root the object
 * it returns.  On success or failure the caller releases buf, k's objects
 * and archive (parse_free). */
static clt_status parse_file(pk *k, const char *path, const char *fn, unsigned char **buf,
                             obj **root)
{
    size_t len = 0;
    k->fn = fn;
    CLT__QUOTE(k->path_q, path);
    snprintf(k->where, sizeof k->where, "%s, data.pkl", k->path_q);
    clt_status st = clt__zip_open(path, fn, "torch.save's format", &k->za);
    if (st != CLT_OK)
        return st;
    if ((st = read_pickle(k, fn, buf, &len)) != CLT_OK)
        return st;
    k->buf = k->p = *buf;
    k->end = *buf + len;
    return run(k, root);
}

/* The entries of d, a state_dict (str -> tensor; pq names it in messages):
 * the keys (strings, no U+0000, none twice) into a new block *arr of
 * *count named tensors (NULL tensors), and each tensor's view checked
 * against its storage, entry i the view d->items[2 * i + 1]; nothing
 * uploaded. */
static clt_status dict_entries(pk *k, const obj *d, const char *fn, const char *pq,
                               clt_named_tensor **arr, size_t *count)
{
    const char **names = NULL;
    size_t *lens = NULL;
    char q[CLT__QUOTE_SIZE];
    clt_status st = CLT_OK;
    *count = d->len / 2;
    names = clt__calloc(*count ? *count : 1, sizeof *names);
    lens = clt__calloc(*count ? *count : 1, sizeof *lens);
    if (names == NULL || lens == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t i = 0; i < *count; i++) {
        const obj *key = d->items[2 * i], *val = d->items[2 * i + 1];
        if (key->kind != O_STR)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: key %zu of the dict is %s, "
                                "not a string", fn, pq, i, kind_name(key)));
        clt__quote(q, sizeof q, key->s, key->len);
        if (memchr(key->s, '\0', key->len))
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: key '%s' holds U+0000", fn,
                                pq, q));
        if (val->kind == O_DICT)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: entry '%s' is a dict, not a "
                                "tensor (a dict of dicts is a general checkpoint, read as "
                                "one)", fn, pq, q));
        if (val->kind != O_TENSOR)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: entry '%s' is %s, not a tensor",
                                fn, pq, q, kind_name(val)));
        CLT__TRY(check_view(k, val->view, q, fn));
        names[i] = key->s;
        lens[i] = key->len;
    }
    CLT__TRY(clt__io_named_block(*count, names, lens, fn, arr));
    for (size_t i = 0; i < *count; i++)
        names[i] = (*arr)[i].name;
    st = clt__io_no_twice(names, *count, fn, pq);
    if (st != CLT_OK) {
        free(*arr);
        *arr = NULL;
    }
done:
    free(names);
    free(lens);
    return st;
}

/* parse_file, then its dict's entries (dict_entries): *d the dict. */
static clt_status parse(pk *k, const char *path, const char *fn, unsigned char **buf, obj **d,
                        clt_named_tensor **arr, size_t *count)
{
    clt_status st = parse_file(k, path, fn, buf, d);
    if (st != CLT_OK)
        return st;
    if ((*d)->kind != O_DICT)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the file holds %s, not a dict of "
                          "tensors (save model.state_dict())", fn, k->path_q, kind_name(*d));
    return dict_entries(k, *d, fn, k->path_q, arr, count);
}

/* Releases what parse holds. */
static void parse_free(pk *k, unsigned char *buf)
{
    free_objs(k);
    free(buf);
    clt__zip_close(k->za);
}

clt_status clt_load_torch(const char *path, clt_device *dev, clt_named_tensor **out, size_t *n)
{
    const char *fn = "clt_load_torch";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(n, fn);
    *n = 0;
    CLT__REQUIRE_ARG(path, fn);
    CLT__REQUIRE_ARG(dev, fn);
    pk k = {0};
    unsigned char *buf = NULL;
    size_t count = 0, done_n = 0;
    clt_named_tensor *arr = NULL;
    obj *d = NULL;
    clt_status st;
    CLT__TRY(parse(&k, path, fn, &buf, &d, &arr, &count));
    for (; done_n < count; done_n++) {
        CLT__TRY(make_tensor(&k, d->items[2 * done_n + 1], arr[done_n].name, dev, fn,
                             &arr[done_n].tensor));
        clt__scope_disown(arr[done_n].tensor);
    }
    *out = arr;
    *n = count;
    arr = NULL;
done:
    if (arr)
        clt_named_tensors_free(arr, done_n);
    parse_free(&k, buf);
    return st == CLT_OK ? clt__ok() : st;
}

/* The file's entry i, uploaded for clt__io_load_matched. */
typedef struct parsed {
    pk *k;
    const obj *d;
    const clt_named_tensor *arr;
} parsed;

static clt_status upload_entry(void *ctx, size_t i, clt_device *dev, clt_tensor **out)
{
    parsed *p = ctx;
    return make_tensor(p->k, p->d->items[2 * i + 1], p->arr[i].name, dev, p->k->fn, out);
}

/* load_state_dict of a torch file into the n tensors of state (the
 * model's or an AveragedModel's), strictly or not, for the public call
 * fn. */
static clt_status load_dict(pk *k, const obj *d, clt_module *m, clt_named_tensor *state,
                            size_t n, bool strict, const char *fn, const char *pq)
{
    clt__lazy_undo *undo = NULL;
    bool own_state = false;
    size_t count = 0, *match = NULL;
    clt_named_tensor *arr = NULL;
    clt__io_entry *e = NULL;
    clt_status st;
    CLT__TRY(dict_entries(k, d, fn, pq, &arr, &count));
    e = clt__malloc((count ? count : 1) * sizeof *e);
    match = clt__malloc((n ? n : 1) * sizeof *match);
    if (e == NULL || match == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t i = 0; i < count; i++) {
        const tview *v = d->items[2 * i + 1]->view;
        e[i] = (clt__io_entry){arr[i].name, v->ndim, v->shape};
    }
    if (m) {
        /* the model's state, once its lazy layers have their sizes */
        CLT__TRY(clt__io_lazy_materialize(m, e, count, fn, &undo));
        CLT__TRY(clt__module_state_in(fn, m, &state, &n));
        own_state = true;
        free(match);
        match = clt__malloc((n ? n : 1) * sizeof *match);
        if (match == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    }
    CLT__TRY(clt__io_match_state(state, n, e, count, strict, match, fn, pq));
    parsed p = {k, d, arr};
    CLT__TRY(clt__io_load_matched(state, n, match, upload_entry, &p, fn, pq));
done:
    clt__lazy_undo_finish(undo, st == CLT_OK);
    if (own_state)
        free(state);
    free(match);
    free(e);
    free(arr);
    return st;
}

/* load_state_dict of the torch file `path`. */
static clt_status load_state(clt_module *m, clt_named_tensor *state, size_t n,
                             const char *path, bool strict, const char *fn)
{
    pk k = {0};
    unsigned char *buf = NULL;
    size_t count = 0;
    clt_named_tensor *arr = NULL;
    obj *d = NULL;
    clt_status st = parse(&k, path, fn, &buf, &d, &arr, &count);
    free(arr);
    if (st == CLT_OK)
        st = load_dict(&k, d, m, state, n, strict, fn, k.path_q);
    parse_free(&k, buf);
    return st;
}

clt_status clt_module_load_torch(clt_module *m, const char *path, int strict)
{
    const char *fn = "clt_module_load_torch";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_status st = load_state(m, NULL, 0, path, strict != 0, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_averaged_model_load_torch(clt_averaged_model *a, const char *path)
{
    const char *fn = "clt_averaged_model_load_torch";
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_named_tensor *state = NULL;
    size_t n = 0;
    clt_status st = clt_averaged_model_state(a, &state, &n);
    if (st == CLT_OK)
        st = load_state(NULL, state, n, path, true, fn);
    if (st == CLT_OK)
        st = clt__averaged_model_loaded(a, fn);
    free(state);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* ---- saving ------------------------------------------------------------------------ */

/* A growable byte buffer for the pickle. */
typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
    bool failed;
} bytes;

static void put(bytes *b, const void *src, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n)
            nc *= 2;
        unsigned char *p = clt__realloc(b->p, nc, 1);
        if (p == NULL) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_op(bytes *b, unsigned char op)
{
    put(b, &op, 1);
}

static void put_str(bytes *b, const char *s)
{
    size_t n = strlen(s);
    unsigned char h[5] = {'X', (unsigned char)n, (unsigned char)(n >> 8),
                          (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
    put(b, h, 5);
    put(b, s, n);
}

/* An int as pickle's protocol 2 writes it: BININT1, BININT2, BININT, LONG1. */
static void put_int(bytes *b, int64_t v)
{
    unsigned char h[10];
    if (v >= 0 && v < 256) {
        h[0] = 'K';
        h[1] = (unsigned char)v;
        put(b, h, 2);
    } else if (v >= 0 && v < 65536) {
        h[0] = 'M';
        h[1] = (unsigned char)v;
        h[2] = (unsigned char)(v >> 8);
        put(b, h, 3);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        h[0] = 'J';
        for (int i = 0; i < 4; i++)
            h[1 + i] = (unsigned char)((uint64_t)v >> (8 * i));
        put(b, h, 5);
    } else {
        h[0] = 0x8a;
        h[1] = 8;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (unsigned char)((uint64_t)v >> (8 * i));
        put(b, h, 10);
    }
}

static void put_global(bytes *b, const char *mod, const char *name)
{
    put_op(b, 'c');
    put(b, mod, strlen(mod));
    put_op(b, '\n');
    put(b, name, strlen(name));
    put_op(b, '\n');
}

static void put_int_tuple(bytes *b, int n, const int64_t *v)
{
    static const unsigned char tuple_n[] = {')', 0x85, 0x86, 0x87};
    if (n > 3)
        put_op(b, '(');
    for (int i = 0; i < n; i++)
        put_int(b, v[i]);
    put_op(b, n > 3 ? 't' : tuple_n[n]);
}

/* The state_dict's _metadata attribute as torch.save pickles it: an
 * OrderedDict of {"version": v} by module path, here for the nv modules
 * whose version torch's loading reads (the others load as torch's
 * without one). */
static void put_metadata(bytes *b, const clt__module_version *versions, size_t nv)
{
    put_op(b, '}');
    put_str(b, "_metadata");
    put_global(b, "collections", "OrderedDict");
    put(b, ")R(", 3);
    for (size_t k = 0; k < nv; k++) {
        put_str(b, versions[k].path);
        put_op(b, '}');
        put_str(b, "version");
        put_int(b, versions[k].version);
        put_op(b, 's');
    }
    put(b, "usb", 3);
}

/* _rebuild_tensor_v2 of a contiguous tensor of dtype dt and this shape, in
 * storage `key` (a member data/<key>), requires_grad False. */
static void put_tensor(bytes *b, clt_dtype dt, int ndim, const int64_t *shape, size_t key)
{
    const char *type = NULL;
    for (size_t i = 0; i < sizeof storages / sizeof storages[0]; i++)
        if (storages[i].dtype == dt)
            type = storages[i].name;
    int64_t stride[CLT_MAX_DIMS], numel = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        stride[d] = numel;
        numel *= shape[d];
    }
    char name[32];
    snprintf(name, sizeof name, "%zu", key);
    put_global(b, "torch._utils", "_rebuild_tensor_v2");
    put(b, "((", 2);
    put_str(b, "storage");
    put_global(b, "torch", type);
    put_str(b, name);
    put_str(b, "cpu");
    put_int(b, numel);
    put(b, "tQ", 2);
    put_int(b, 0);
    put_int_tuple(b, ndim, shape);
    put_int_tuple(b, ndim, stride);
    put_op(b, 0x89); /* requires_grad False */
    put_global(b, "collections", "OrderedDict");
    put(b, ")Rt", 3);
    put_op(b, 'R');
}

/* The pickle torch 1.13 writes for an OrderedDict of contiguous tensors,
 * tensor k in storage first + k (no memo: every global written out),
 * with _metadata when nv > 0; no PROTO, no STOP. */
static void put_state(bytes *b, const clt_named_tensor *tensors, size_t n,
                      const clt__module_version *versions, size_t nv, size_t first)
{
    put_global(b, "collections", "OrderedDict");
    put(b, ")R", 2);
    for (size_t k = 0; k < n; k++) {
        if (k % 1000 == 0)
            put_op(b, '('); /* pickle's batches of 1000 items */
        const clt_tensor *t = tensors[k].tensor;
        put_str(b, tensors[k].name);
        put_tensor(b, t->dtype, t->ndim, t->shape, first + k);
        if (k % 1000 == 999 || k + 1 == n)
            put_op(b, 'u');
    }
    if (nv > 0)
        put_metadata(b, versions, nv);
}

/* A torch archive being made: the pickle, and the storages' bytes
 * (data/0, data/1, ...: owned). */
typedef struct archive {
    bytes pkl;
    void **data;
    size_t *nbytes;
    size_t n, cap;
} archive;

static void archive_free(archive *a)
{
    free(a->pkl.p);
    for (size_t k = 0; k < a->n; k++)
        free(a->data[k]);
    free(a->data);
    free(a->nbytes);
}

/* Adds a storage of nbytes bytes (data taken, freed on failure). */
static clt_status archive_add(archive *a, void *data, size_t nbytes, const char *fn)
{
    if (a->n == a->cap) {
        size_t nc = a->cap ? 2 * a->cap : 16;
        void **d = clt__realloc(a->data, nc, sizeof *d);
        if (d != NULL)
            a->data = d;
        size_t *nb = d ? clt__realloc(a->nbytes, nc, sizeof *nb) : NULL;
        if (nb == NULL) {
            free(data);
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        }
        a->nbytes = nb;
        a->cap = nc;
    }
    a->data[a->n] = data;
    a->nbytes[a->n++] = nbytes;
    return CLT_OK;
}

/* Reads the n tensors back into new storages of a (waits); messages name
 * the file pq. */
static clt_status archive_read(archive *a, const clt_named_tensor *tensors, size_t n,
                               const char *fn, const char *pq, const void *caller)
{
    char q[CLT__QUOTE_SIZE];
    for (size_t k = 0; k < n; k++) {
        void *data = NULL;
        size_t nb = 0;
        clt_status st = clt__io_read_tensor(tensors[k].tensor, &data, &nb, fn, caller);
        if (st != CLT_OK)
            return clt__error_prefix(st, "%s: %s: reading tensor '%s'", fn, pq,
                                     CLT__QUOTE(q, tensors[k].name));
        if ((st = archive_add(a, data, nb, fn)) != CLT_OK)
            return st;
    }
    return CLT_OK;
}

/* Writes a (its pickle complete) to path in torch 1.13's layout:
 * data.pkl, the storages under data/, version. */
static clt_status archive_write(const archive *a, const char *path, const char *fn)
{
    clt__zip_out z = {0};
    char name[64];
    clt_status st;
    if (a->pkl.failed)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    CLT__TRY(clt__zip_create(&z, path, fn));
    z.align = 64; /* torch's kFieldAlignment: torch 2 maps the storages in place */
    const void *part[1] = {a->pkl.p};
    size_t len[1] = {a->pkl.len};
    CLT__TRY(clt__zip_add(&z, "archive/data.pkl", part, len, 1, false));
    for (size_t k = 0; k < a->n; k++) {
        snprintf(name, sizeof name, "archive/data/%zu", k);
        part[0] = a->data[k];
        len[0] = a->nbytes[k];
        CLT__TRY(clt__zip_add(&z, name, part, len, 1, false));
    }
    part[0] = "3\n";
    len[0] = 2;
    CLT__TRY(clt__zip_add(&z, "archive/version", part, len, 1, false));
    CLT__TRY(clt__zip_commit(&z));
done:
    clt__zip_abort(&z);
    return st;
}

/* What clt_save_torch does, for fn, with the state_dict's _metadata of
 * nv versions; caller is the user's code that asked. */
static clt_status save(const char *path, const clt_named_tensor *tensors, size_t n,
                       const clt__module_version *versions, size_t nv, const char *fn,
                       const void *caller)
{
    char pq[CLT__QUOTE_SIZE];
    CLT__QUOTE(pq, path);
    clt_status st = clt__io_check_names(tensors, n, fn, pq);
    if (st != CLT_OK)
        return st;
    archive a = {0};
    /* Everything is read back before the file is created. */
    st = archive_read(&a, tensors, n, fn, pq, caller);
    if (st == CLT_OK) {
        put(&a.pkl, "\x80\x02", 2);
        put_state(&a.pkl, tensors, n, versions, nv, 0);
        put_op(&a.pkl, '.');
        st = archive_write(&a, path, fn);
    }
    archive_free(&a);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_save_torch(const char *path, const clt_named_tensor *tensors, size_t n)
{
    const char *fn = "clt_save_torch";
    CLT__REQUIRE_ARG(path, fn);
    if (n > 0)
        CLT__REQUIRE_ARG(tensors, fn);
    return save(path, tensors, n, NULL, 0, fn, __builtin_return_address(0));
}

clt_status clt_module_save_torch(const clt_module *m, const char *path)
{
    const char *fn = "clt_module_save_torch";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_named_tensor *state = NULL;
    clt__module_version *versions = NULL;
    size_t n = 0, nv = 0;
    clt_status st = clt__module_state_in(fn, m, &state, &n);
    if (st == CLT_OK)
        st = clt__module_versions(fn, m, &versions, &nv);
    if (st == CLT_OK)
        st = save(path, state, n, versions, nv, fn, __builtin_return_address(0));
    free(versions);
    free(state);
    return st;
}

/* ---- general checkpoints ----------------------------------------------------------- */

typedef enum ck_kind { CK_MODULE, CK_OPTIMIZER, CK_SCHEDULER, CK_INT, CK_DOUBLE, CK_STR } ck_kind;

typedef struct ck_entry {
    char *key;
    ck_kind kind;
    const clt_module *m;
    const clt_optimizer *opt;
    const clt_lr_scheduler *sched;
    int64_t i;
    double d;
    char *s;
} ck_entry;

struct clt_checkpoint_dict {
    /* built: the entries, in the order of their keys' first setting */
    ck_entry *e;
    size_t n, cap;
    /* read: the parsed file (its archive open), its dict, the strings
     * handed out by get_str */
    bool read;
    pk k;
    unsigned char *buf;
    obj *root;
    char **strs;
    size_t nstrs, capstrs;
};

/* Torch 1.13's param_groups keys of each kind, in its order, and how its
 * state holds 'step': 't' a 0-d float32 tensor, 'i' an int, 0 none. */
static const struct {
    const char *kind;
    char step;
    const char *keys[11];
} torch_groups[] = {
    {"SGD", 0, {"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize",
                "foreach", "differentiable"}},
    {"Adam", 't', {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach",
                   "capturable", "differentiable", "fused"}},
    {"AdamW", 't', {"lr", "betas", "eps", "weight_decay", "amsgrad", "foreach", "maximize",
                    "capturable"}},
    {"RMSprop", 'i', {"lr", "momentum", "alpha", "eps", "centered", "weight_decay", "foreach",
                      "maximize", "differentiable"}},
    {"Adagrad", 't', {"lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value",
                      "foreach", "maximize"}},
    {"Adamax", 't', {"lr", "betas", "eps", "weight_decay", "foreach", "maximize"}},
    {"NAdam", 't', {"lr", "betas", "eps", "weight_decay", "momentum_decay", "foreach"}},
    {"RAdam", 't', {"lr", "betas", "eps", "weight_decay", "foreach"}},
    {"Adadelta", 'i', {"lr", "rho", "eps", "weight_decay", "maximize", "foreach"}},
    {"Rprop", 'i', {"lr", "etas", "step_sizes", "foreach", "maximize"}},
    {"ASGD", 't', {"lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize"}},
    {"SparseAdam", 'i', {"lr", "betas", "eps", "maximize"}},
    {"LBFGS", 0, {"lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change",
                  "history_size", "line_search_fn"}},
};

static int torch_group(const char *kind)
{
    for (size_t g = 0; g < sizeof torch_groups / sizeof torch_groups[0]; g++)
        if (strcmp(torch_groups[g].kind, kind) == 0)
            return (int)g;
    return -1;
}

/* ---- building ---- */

clt_status clt_checkpoint_dict_new(clt_checkpoint_dict **out)
{
    const char *fn = "clt_checkpoint_dict_new";
    CLT__REQUIRE_ARG(out, fn);
    *out = clt__calloc(1, sizeof **out);
    if (*out == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return clt__ok();
}

/* The entry of ck for key: the one there (its value released), or a new
 * one at the end. */
static clt_status ck_slot(clt_checkpoint_dict *ck, const char *key, const char *fn,
                          ck_entry **out)
{
    if (ck->read)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the checkpoint was read from a file; "
                          "build one with clt_checkpoint_dict_new to save", fn);
    if (!clt__utf8_valid(key, strlen(key)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the key is not UTF-8", fn);
    for (size_t i = 0; i < ck->n; i++)
        if (strcmp(ck->e[i].key, key) == 0) {
            *out = &ck->e[i];
            return CLT_OK;
        }
    if (!grow(&ck->e, &ck->cap, ck->n, sizeof *ck->e))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    ck_entry *e = &ck->e[ck->n];
    *e = (ck_entry){0};
    if ((e->key = clt__strdup(key)) == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    ck->n++;
    *out = e;
    return CLT_OK;
}

/* Sets the entry for key to v (its string, if any, taken). */
static clt_status ck_set(clt_checkpoint_dict *ck, const char *key, ck_entry v, const char *fn)
{
    ck_entry *e = NULL;
    clt_status st = ck_slot(ck, key, fn, &e);
    if (st != CLT_OK) {
        free(v.s);
        return st;
    }
    free(e->s);
    v.key = e->key;
    *e = v;
    return clt__ok();
}

clt_status clt_checkpoint_dict_add_module(clt_checkpoint_dict *ck, const char *key,
                                          const clt_module *m)
{
    const char *fn = "clt_checkpoint_dict_add_module";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(m, fn);
    return ck_set(ck, key, (ck_entry){.kind = CK_MODULE, .m = m}, fn);
}

clt_status clt_checkpoint_dict_add_optimizer(clt_checkpoint_dict *ck, const char *key,
                                             const clt_optimizer *opt)
{
    const char *fn = "clt_checkpoint_dict_add_optimizer";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(opt, fn);
    if (torch_group(clt__optimizer_kind(opt)) < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the state of %s is not written in a "
                          "general checkpoint (clt_optimizer_save saves it)", fn,
                          clt__optimizer_kind(opt));
    return ck_set(ck, key, (ck_entry){.kind = CK_OPTIMIZER, .opt = opt}, fn);
}

clt_status clt_checkpoint_dict_add_scheduler(clt_checkpoint_dict *ck, const char *key,
                                             const clt_lr_scheduler *s)
{
    const char *fn = "clt_checkpoint_dict_add_scheduler";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(s, fn);
    return ck_set(ck, key, (ck_entry){.kind = CK_SCHEDULER, .sched = s}, fn);
}

clt_status clt_checkpoint_dict_set_int(clt_checkpoint_dict *ck, const char *key, int64_t v)
{
    const char *fn = "clt_checkpoint_dict_set_int";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    return ck_set(ck, key, (ck_entry){.kind = CK_INT, .i = v}, fn);
}

clt_status clt_checkpoint_dict_set_double(clt_checkpoint_dict *ck, const char *key, double v)
{
    const char *fn = "clt_checkpoint_dict_set_double";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    return ck_set(ck, key, (ck_entry){.kind = CK_DOUBLE, .d = v}, fn);
}

clt_status clt_checkpoint_dict_set_str(clt_checkpoint_dict *ck, const char *key, const char *v)
{
    const char *fn = "clt_checkpoint_dict_set_str";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(v, fn);
    if (!clt__utf8_valid(v, strlen(v)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the value of key '%s' is not UTF-8", fn,
                          clt__utf8_valid(key, strlen(key)) ? key : "?");
    char *copy = clt__strdup(v);
    if (copy == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return ck_set(ck, key, (ck_entry){.kind = CK_STR, .s = copy}, fn);
}

/* ---- writing ---- */

static void put_float(bytes *b, double v)
{
    uint64_t bits;
    unsigned char h[9] = {'G'};
    memcpy(&bits, &v, 8);
    for (int i = 0; i < 8; i++)
        h[1 + i] = (unsigned char)(bits >> (8 * (7 - i)));
    put(b, h, 9);
}

/* A Python literal as clt__optimizer_dict writes the settings (a number,
 * True, False, None, a quoted string, a tuple or list of them) from *p as
 * pickle writes its value; false for text it does not read. */
static bool put_literal(bytes *b, const char **p)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    if (strncmp(s, "True", 4) == 0 || strncmp(s, "False", 5) == 0 || strncmp(s, "None", 4) == 0) {
        put_op(b, s[0] == 'T' ? 0x88 : s[0] == 'F' ? 0x89 : 'N');
        *p = s + (s[0] == 'F' ? 5 : 4);
        return true;
    }
    if (*s == '\'') {
        const char *end = strchr(s + 1, '\'');
        if (end == NULL)
            return false;
        size_t n = (size_t)(end - s - 1);
        unsigned char h[5] = {'X', (unsigned char)n, (unsigned char)(n >> 8),
                              (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
        put(b, h, 5);
        put(b, s + 1, n);
        *p = end + 1;
        return true;
    }
    if (strncmp(s, "SWALR._cosine_anneal", 20) == 0 || strncmp(s, "SWALR._linear_anneal", 20) == 0) {
        /* SWALR's anneal_func as torch pickles a staticmethod */
        char name[16];
        memcpy(name, s + 6, 14);
        name[14] = '\0';
        put_global(b, "__builtin__", "getattr");
        put_global(b, "torch.optim.swa_utils", "SWALR");
        put_str(b, name);
        put_op(b, 0x86);
        put_op(b, 'R');
        *p = s + 20;
        return true;
    }
    if (strncmp(s, "Counter(", 8) == 0) { /* MultiStepLR's milestones */
        s += 8;
        put_global(b, "collections", "Counter");
        if (*s == ')')
            put_op(b, '}');
        else if (*s != '{' || !put_literal(b, &s))
            return false;
        if (*s != ')')
            return false;
        put_op(b, 0x85);
        put_op(b, 'R');
        *p = s + 1;
        return true;
    }
    if (*s == '{') { /* a dict: OneCycleLR's phases, a Counter's */
        bytes items = {0};
        size_t n = 0;
        s++;
        while (*s == ' ')
            s++;
        while (*s != '}') {
            bool ok = put_literal(&items, &s);
            while (ok && *s == ' ')
                s++;
            ok = ok && *s++ == ':' && put_literal(&items, &s);
            while (ok && *s == ' ')
                s++;
            if (ok && *s == ',')
                s++;
            while (ok && *s == ' ')
                s++;
            if (!ok || *s == '\0') {
                free(items.p);
                return false;
            }
            n++;
        }
        if (items.failed)
            b->failed = true;
        put_op(b, '}');
        if (n > 0) {
            put_op(b, '(');
            put(b, items.p, items.len);
            put_op(b, 'u');
        }
        free(items.p);
        *p = s + 1;
        return true;
    }
    if (*s == '(' || *s == '[') {
        char close = *s == '(' ? ')' : ']';
        bytes items = {0};
        size_t n = 0;
        s++;
        while (*s == ' ')
            s++;
        while (*s != close) {
            if (!put_literal(&items, &s)) {
                free(items.p);
                return false;
            }
            n++;
            while (*s == ' ')
                s++;
            if (*s == ',')
                s++;
            while (*s == ' ')
                s++;
            if (*s == '\0') {
                free(items.p);
                return false;
            }
        }
        if (items.failed)
            b->failed = true;
        if (close == ')') {
            static const unsigned char tuple_n[] = {')', 0x85, 0x86, 0x87};
            if (n > 3)
                put_op(b, '(');
            put(b, items.p, items.len);
            put_op(b, n > 3 ? 't' : tuple_n[n]);
        } else {
            put_op(b, ']');
            if (n > 0) {
                put_op(b, '(');
                put(b, items.p, items.len);
                put_op(b, 'e');
            }
        }
        free(items.p);
        *p = s + 1;
        return true;
    }
    char *end;
    size_t digits = strspn(s, "-0123456789");
    if (digits > 0 && strchr(",)]}: ", s[digits]) != NULL) {
        long long v = strtoll(s, &end, 10);
        put_int(b, v);
    } else {
        double v = clt__io_strtod(s, &end);
        if (end == s)
            return false;
        put_float(b, v);
    }
    *p = end;
    return true;
}

/* The group's value of key (d's keys of group g, "param_groups.g." before
 * them for g > 0), or NULL. */
static const char *group_value(const clt__opt_dict *d, size_t g, const char *key)
{
    char full[96];
    if (g > 0)
        snprintf(full, sizeof full, "param_groups.%zu.%s", g, key);
    for (size_t k = 0; k < d->nmeta; k++)
        if (strcmp(d->keys[k], g > 0 ? full : key) == 0)
            return d->values[k];
    return NULL;
}

/* The key of d's setting k when it belongs to group g, else NULL. */
static const char *group_key(const clt__opt_dict *d, size_t g, size_t k)
{
    const char *key = d->keys[k];
    if (g == 0)
        return strncmp(key, "param_groups.", 13) == 0 ? NULL : key;
    char prefix[48];
    int n = snprintf(prefix, sizeof prefix, "param_groups.%zu.", g);
    return strncmp(key, prefix, (size_t)n) == 0 ? key + n : NULL;
}

static clt_status put_group_value(bytes *b, const char *key, const char *v, const char *fn)
{
    const char *p = v;
    put_str(b, key);
    if (!put_literal(b, &p) || *p != '\0')
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the setting '%s' reads '%s', no "
                          "Python literal", fn, key, v);
    return CLT_OK;
}

/* scheduler.state_dict() of s as torch 1.13 pickles it: its keys in
 * torch's order, a container's schedules' state_dicts in a list under
 * '_schedulers' (last, as torch's). */
static clt_status put_scheduler(bytes *b, const clt_lr_scheduler *s, const char *fn)
{
    clt__sched_dict d;
    clt_status st = clt__lr_scheduler_dict(s, fn, &d);
    if (st != CLT_OK)
        return st;
    static const char subs[] = "_schedulers.";
    const size_t ls = sizeof subs - 1;
    size_t k = 0;
    put_op(b, '}');
    put_op(b, '(');
    for (; k < d.n && strncmp(d.keys[k], subs, ls) != 0; k++)
        CLT__TRY(put_group_value(b, d.keys[k], d.values[k], fn));
    if (k < d.n) {
        put_str(b, "_schedulers");
        put_op(b, ']');
        put_op(b, '(');
        while (k < d.n) {
            /* one schedule's keys: "_schedulers.I." then the key */
            size_t lp = ls + strspn(d.keys[k] + ls, "0123456789") + 1;
            const char *first = d.keys[k];
            put_op(b, '}');
            put_op(b, '(');
            for (; k < d.n && strncmp(d.keys[k], first, lp) == 0; k++)
                CLT__TRY(put_group_value(b, d.keys[k] + lp, d.values[k], fn));
            put_op(b, 'u');
        }
        put_op(b, 'e');
    }
    put_op(b, 'u');
done:
    clt__sched_dict_free(&d);
    return st;
}

/* The names of LBFGS's state in torch 1.13's order (its state_dict's, but
 * for 'al', scratch that torch's step makes again when it lacks it). */
static const char *const lbfgs_names[] = {"func_evals", "n_iter",   "d",      "t",
                                          "old_dirs",   "old_stps", "ro",     "H_diag",
                                          "prev_flat_grad", "prev_loss"};
enum { LB_FUNC_EVALS, LB_N_ITER, LB_D, LB_T, LB_OLD_DIRS, LB_OLD_STPS, LB_RO, LB_H_DIAG,
       LB_PREV_FLAT_GRAD, LB_PREV_LOSS, LB_N };

/* A 0-d tensor of dtype dt (float32 or float64) holding v, in a new
 * storage of a. */
static clt_status put_scalar_tensor(archive *a, clt_dtype dt, double v, const char *fn)
{
    size_t es = dt == CLT_FLOAT64 ? 8 : 4;
    unsigned char *data = clt__malloc(es);
    if (data == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (dt == CLT_FLOAT64) {
        memcpy(data, &v, 8);
    } else {
        float f = (float)v;
        memcpy(data, &f, 4);
    }
    put_tensor(&a->pkl, dt, 0, NULL, a->n);
    return archive_add(a, data, es, fn);
}

/* LBFGS's state as torch 1.13 keeps it on parameter 0, from what
 * clt__optimizer_dict gives (clt_optimizer_save's entries): the counters
 * as ints, d and prev_flat_grad, t and prev_loss as floats, old_dirs and
 * old_stps as lists of vectors, ro as a list of 0-d tensors and H_diag a
 * 0-d tensor of the parameters' dtype (the int 1 before any pair of
 * history, as torch's).  Rounding ro and H_diag to that dtype loses
 * nothing: the steps use them as scalars of that dtype. */
static clt_status put_lbfgs(archive *a, const clt__opt_dict *d, const char *fn, const char *pq,
                            const void *caller)
{
    bytes *b = &a->pkl;
    const clt_tensor *e[LB_N] = {NULL};
    void *host[LB_N] = {NULL};
    size_t nb[LB_N] = {0};
    char q[CLT__QUOTE_SIZE];
    clt_status st = CLT_OK;
    for (size_t k = 0; k < d->nstate; k++)
        for (int j = 0; j < LB_N; j++)
            if (strcmp(d->state[k].name + strlen("state.0."), lbfgs_names[j]) == 0)
                e[j] = d->state[k].tensor;
    if (e[LB_FUNC_EVALS] == NULL)
        return CLT_OK; /* no step yet: no state */
    for (int j = 0; j < LB_N; j++)
        if (e[j] != NULL &&
            (st = clt__io_read_tensor(e[j], &host[j], &nb[j], fn, caller)) != CLT_OK) {
            st = clt__error_prefix(st, "%s: %s: reading LBFGS's '%s'", fn, pq,
                                   CLT__QUOTE(q, lbfgs_names[j]));
            goto done;
        }
    clt_dtype dt = e[LB_D] ? e[LB_D]->dtype : CLT_FLOAT32;
    size_t es = dt == CLT_FLOAT64 ? 8 : 4;
    put_op(b, '(');
    put_int(b, 0);
    put_op(b, '}');
    put_op(b, '(');
    for (int j = 0; j < LB_N; j++) {
        if (e[j] == NULL)
            continue;
        put_str(b, lbfgs_names[j]);
        int64_t iv;
        double v;
        switch (j) {
        case LB_FUNC_EVALS:
        case LB_N_ITER:
            memcpy(&iv, host[j], 8);
            put_int(b, iv);
            break;
        case LB_T:
        case LB_PREV_LOSS:
            memcpy(&v, host[j], 8);
            put_float(b, v);
            break;
        case LB_D:
        case LB_PREV_FLAT_GRAD:
            put_tensor(b, dt, 1, e[j]->shape, a->n);
            CLT__TRY(archive_add(a, host[j], nb[j], fn));
            host[j] = NULL;
            break;
        case LB_OLD_DIRS:
        case LB_OLD_STPS:
        case LB_RO: {
            int64_t m = e[j]->shape[0], numel = j == LB_RO ? 0 : e[j]->shape[1];
            put_op(b, ']');
            if (m == 0)
                break;
            put_op(b, '(');
            for (int64_t r = 0; r < m; r++) {
                if (j == LB_RO) {
                    memcpy(&v, (const unsigned char *)host[j] + 8 * r, 8);
                    CLT__TRY(put_scalar_tensor(a, dt, v, fn));
                    continue;
                }
                size_t rb = (size_t)numel * es;
                void *row = clt__malloc(rb ? rb : 1);
                if (row == NULL)
                    CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                                        fn));
                memcpy(row, (const unsigned char *)host[j] + (size_t)r * rb, rb);
                put_tensor(b, dt, 1, &numel, a->n);
                CLT__TRY(archive_add(a, row, rb, fn));
            }
            put_op(b, 'e');
            break;
        }
        default: /* H_diag */
            memcpy(&v, host[j], 8);
            if (v == 1.0 && e[LB_OLD_DIRS] && e[LB_OLD_DIRS]->shape[0] == 0)
                put_int(b, 1);
            else
                CLT__TRY(put_scalar_tensor(a, dt, v, fn));
        }
    }
    put_op(b, 'u');
    put_op(b, 'u');
done:
    for (int j = 0; j < LB_N; j++)
        free(host[j]);
    return st;
}

/* optimizer.state_dict() of opt as torch 1.13 pickles it, its tensors
 * read back into new storages of a. */
static clt_status put_optimizer(archive *a, const clt_optimizer *opt, const char *fn,
                                const char *pq, const void *caller)
{
    clt__opt_dict d;
    clt_status st = clt__optimizer_dict(opt, fn, &d);
    if (st != CLT_OK)
        return st;
    bytes *b = &a->pkl;
    int tg = torch_group(d.kind);
    size_t *order = clt__malloc((d.nstate ? d.nstate : 1) * sizeof *order);
    size_t *param = clt__malloc((d.nstate ? d.nstate : 1) * sizeof *param);
    if (order == NULL || param == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    /* the state of each parameter updated: 'step', its 0-d entries (NAdam's
     * mu_product, ASGD's eta and mu, as torch orders them), the others */
    for (size_t k = 0; k < d.nstate; k++)
        param[k] = (size_t)strtoull(d.state[k].name + strlen("state."), NULL, 10);
    put_op(b, '}');
    put_str(b, "state");
    put_op(b, '}');
    size_t batch = 0;
    bool lbfgs = strcmp(d.kind, "LBFGS") == 0;
    if (lbfgs)
        CLT__TRY(put_lbfgs(a, &d, fn, pq, caller));
    for (size_t i = 0; !lbfgs && i < d.np; i++) {
        if (d.updates[i] == 0)
            continue;
        size_t m = 0;
        for (int pass = 0; pass < 2; pass++)
            for (size_t k = 0; k < d.nstate; k++)
                if (param[k] == i && (d.state[k].tensor->ndim == 0) == (pass == 0))
                    order[m++] = k;
        if (batch++ % 1000 == 0)
            put_op(b, '(');
        put_int(b, (int64_t)i);
        put_op(b, '}');
        put_op(b, '(');
        if (torch_groups[tg].step == 't') {
            float step = (float)d.updates[i];
            float *data = clt__malloc(sizeof step);
            if (data == NULL)
                CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
            *data = step;
            put_str(b, "step");
            put_tensor(b, CLT_FLOAT32, 0, NULL, a->n);
            CLT__TRY(archive_add(a, data, sizeof step, fn));
        } else if (torch_groups[tg].step == 'i') {
            put_str(b, "step");
            put_int(b, d.updates[i]);
        }
        if (tg == 0 && m == 0) { /* SGD: momentum_buffer None */
            put_str(b, "momentum_buffer");
            put_op(b, 'N');
        }
        for (size_t j = 0; j < m; j++) {
            const clt_named_tensor *e = &d.state[order[j]];
            const char *name = strchr(e->name + strlen("state."), '.') + 1;
            put_str(b, name);
            put_tensor(b, e->tensor->dtype, e->tensor->ndim, e->tensor->shape, a->n);
            CLT__TRY(archive_read(a, e, 1, fn, pq, caller));
        }
        put_op(b, 'u');
        if (batch % 1000 == 0)
            put_op(b, 'u');
    }
    if (batch % 1000 != 0)
        put_op(b, 'u');
    put_op(b, 's');
    put_str(b, "param_groups");
    put_op(b, ']');
    size_t ng = clt_optimizer_num_groups(opt);
    put_op(b, '(');
    for (size_t g = 0; g < ng; g++) {
        put_op(b, '}');
        put_op(b, '(');
        for (const char *const *key = torch_groups[tg].keys; *key; key++) {
            const char *v = group_value(&d, g, *key);
            if (v == NULL) /* torch's fixed keys */
                v = strcmp(*key, "foreach") == 0 ? "None" : "False";
            CLT__TRY(put_group_value(b, *key, v, fn));
        }
        /* what schedules add, then params */
        for (size_t k = 0; k < d.nmeta; k++) {
            const char *key = group_key(&d, g, k);
            bool known = key == NULL || strcmp(key, "params") == 0;
            for (const char *const *t = torch_groups[tg].keys; !known && *t; t++)
                known = strcmp(*t, key) == 0;
            if (!known)
                CLT__TRY(put_group_value(b, key, d.values[k], fn));
        }
        const char *params = group_value(&d, g, "params");
        CLT__TRY(put_group_value(b, "params", params ? params : "[]", fn));
        put_op(b, 'u');
    }
    put_op(b, 'e');
    put_op(b, 's');
done:
    free(order);
    free(param);
    clt__opt_dict_free(&d);
    return st;
}

clt_status clt_checkpoint_dict_save_torch(const clt_checkpoint_dict *ck, const char *path)
{
    const char *fn = "clt_checkpoint_dict_save_torch";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(path, fn);
    if (ck->read)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the checkpoint was read from a file; "
                          "build one with clt_checkpoint_dict_new to save", fn);
    const void *caller = __builtin_return_address(0);
    char pq[CLT__QUOTE_SIZE];
    CLT__QUOTE(pq, path);
    archive a = {0};
    clt_named_tensor *state = NULL;
    clt__module_version *versions = NULL;
    bytes *b = &a.pkl;
    clt_status st = CLT_OK;
    put(b, "\x80\x02", 2);
    put_op(b, '}');
    for (size_t i = 0; i < ck->n; i++) {
        const ck_entry *e = &ck->e[i];
        size_t n = 0, nv = 0;
        if (i % 1000 == 0)
            put_op(b, '(');
        put_str(b, e->key);
        switch (e->kind) {
        case CK_MODULE: {
            CLT__TRY(clt__module_state_in(fn, e->m, &state, &n));
            CLT__TRY(clt__module_versions(fn, e->m, &versions, &nv));
            size_t first = a.n;
            CLT__TRY(archive_read(&a, state, n, fn, pq, caller));
            put_state(b, state, n, versions, nv, first);
            free(state);
            free(versions);
            state = NULL;
            versions = NULL;
            break;
        }
        case CK_OPTIMIZER:
            CLT__TRY(put_optimizer(&a, e->opt, fn, pq, caller));
            break;
        case CK_SCHEDULER:
            CLT__TRY(put_scheduler(b, e->sched, fn));
            break;
        case CK_INT:
            put_int(b, e->i);
            break;
        case CK_DOUBLE:
            put_float(b, e->d);
            break;
        case CK_STR:
            put_str(b, e->s);
            break;
        }
        if (i % 1000 == 999 || i + 1 == ck->n)
            put_op(b, 'u');
    }
    put_op(b, '.');
    st = archive_write(&a, path, fn);
done:
    free(state);
    free(versions);
    archive_free(&a);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- reading ---- */

void clt_checkpoint_dict_free(clt_checkpoint_dict *ck)
{
    if (ck == NULL)
        return;
    for (size_t i = 0; i < ck->n; i++) {
        free(ck->e[i].key);
        free(ck->e[i].s);
    }
    free(ck->e);
    if (ck->read)
        parse_free(&ck->k, ck->buf);
    for (size_t i = 0; i < ck->nstrs; i++)
        free(ck->strs[i]);
    free(ck->strs);
    free(ck);
}

static bool str_is(const obj *o, const char *s)
{
    return o->kind == O_STR && is(o->s, o->len, s);
}

clt_status clt_checkpoint_dict_load_torch(const char *path, clt_checkpoint_dict **out)
{
    const char *fn = "clt_checkpoint_dict_load_torch";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(path, fn);
    clt_checkpoint_dict *ck = clt__calloc(1, sizeof *ck);
    const char **names = NULL;
    char *text = NULL;
    char q[CLT__QUOTE_SIZE];
    if (ck == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    ck->read = true;
    pk *k = &ck->k;
    clt_status st;
    CLT__TRY(parse_file(k, path, fn, &ck->buf, &ck->root));
    const obj *d = ck->root;
    if (d->kind != O_DICT)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the file holds %s, not a dict "
                            "(torch.save({'epoch': ..., 'model_state_dict': ...}, path))", fn,
                            k->path_q, kind_name(d)));
    /* the keys: strings without U+0000, none twice */
    size_t n = d->len / 2, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const obj *key = d->items[2 * i];
        if (key->kind != O_STR)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: key %zu of the dict is %s, "
                                "not a string", fn, k->path_q, i, kind_name(key)));
        if (memchr(key->s, '\0', key->len))
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: key '%s' holds U+0000", fn,
                                k->path_q, clt__quote(q, sizeof q, key->s, key->len)));
        bytes += key->len + 1;
    }
    names = clt__calloc(n ? n : 1, sizeof *names);
    text = clt__malloc(bytes ? bytes : 1);
    if (names == NULL || text == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    char *at = text;
    for (size_t i = 0; i < n; i++) {
        const obj *key = d->items[2 * i];
        memcpy(at, key->s, key->len);
        at[key->len] = '\0';
        names[i] = at;
        at += key->len + 1;
    }
    CLT__TRY(clt__io_no_twice(names, n, fn, k->path_q));
    /* every tensor of the file within its storage */
    for (size_t i = 0; i < k->nall; i++)
        if (k->all[i]->kind == O_TENSOR)
            CLT__TRY(check_view(k, k->all[i]->view, "(a tensor of the checkpoint)", fn));
    *out = ck;
    ck = NULL;
done:
    free(names);
    free(text);
    clt_checkpoint_dict_free(ck);
    return st == CLT_OK ? clt__ok() : st;
}

/* The value under key of a checkpoint that was read. */
static clt_status ck_get(const clt_checkpoint_dict *ck, const char *key, const char *fn,
                         const obj **out)
{
    char q[CLT__QUOTE_SIZE];
    *out = NULL;
    if (!ck->read)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the checkpoint was built, not read "
                          "(clt_checkpoint_dict_load_torch reads one)", fn);
    const obj *d = ck->root;
    for (size_t i = 0; i < d->len / 2; i++)
        if (is(d->items[2 * i]->s, d->items[2 * i]->len, key)) {
            *out = d->items[2 * i + 1];
            return CLT_OK;
        }
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the checkpoint has no key '%s'", fn,
                      ck->k.path_q, CLT__QUOTE(q, key));
}

int clt_checkpoint_dict_has(const clt_checkpoint_dict *ck, const char *key)
{
    if (ck == NULL || key == NULL)
        return 0;
    for (size_t i = 0; !ck->read && i < ck->n; i++)
        if (strcmp(ck->e[i].key, key) == 0)
            return 1;
    if (!ck->read)
        return 0;
    const obj *d = ck->root;
    for (size_t i = 0; i < d->len / 2; i++)
        if (is(d->items[2 * i]->s, d->items[2 * i]->len, key))
            return 1;
    return 0;
}

clt_status clt_checkpoint_dict_load_module(const clt_checkpoint_dict *ck, const char *key,
                                           clt_module *m, int strict)
{
    const char *fn = "clt_checkpoint_dict_load_module";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(m, fn);
    const obj *v = NULL;
    char q[CLT__QUOTE_SIZE], pq[CLT__QUOTE_SIZE + 64 + CLT__QUOTE_SIZE];
    clt_status st = ck_get(ck, key, fn, &v);
    if (st != CLT_OK)
        return st;
    snprintf(pq, sizeof pq, "%s, '%s'", ck->k.path_q, CLT__QUOTE(q, key));
    if (v->kind != O_DICT)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a state_dict", fn, pq,
                          kind_name(v));
    st = load_dict((pk *)&ck->k, v, m, NULL, 0, strict != 0, fn, pq);
    return st == CLT_OK ? clt__ok() : st;
}

/* A setting of a param_group as Python's repr writes it (None, True, an
 * int, a float, a name in quotes, a tuple or list of numbers), onto sb;
 * false for a value of another type. */
static bool repr_value(const obj *v, clt__strbuf *sb, bool inner)
{
    char b[40];
    switch (v->kind) {
    case O_NONE:
        clt__sb_printf(sb, "None");
        return true;
    case O_BOOL:
        clt__sb_printf(sb, v->i ? "True" : "False");
        return true;
    case O_INT:
        clt__sb_printf(sb, "%lld", (long long)v->i);
        return true;
    case O_FLOAT: {
        double x;
        memcpy(&x, &v->i, 8);
        clt__io_fmt_double(b, sizeof b, x);
        clt__sb_printf(sb, "%s", b);
        return true;
    }
    case O_STR:
        if (v->i == 2) { /* SWALR's anneal_func (reduce) */
            clt__sb_printf(sb, "%.*s", (int)v->len, v->s);
            return !inner;
        }
        /* a name ('strong_wolfe'): letters, digits and '_' only */
        for (size_t i = 0; i < v->len; i++)
            if (!(v->s[i] == '_' || (v->s[i] >= 'a' && v->s[i] <= 'z') ||
                  (v->s[i] >= 'A' && v->s[i] <= 'Z') || (v->s[i] >= '0' && v->s[i] <= '9')))
                return false;
        clt__sb_printf(sb, "'%.*s'", (int)v->len, v->s);
        return !inner;
    case O_TUPLE:
    case O_LIST:
        if (inner)
            return false;
        clt__sb_printf(sb, v->kind == O_TUPLE ? "(" : "[");
        for (size_t i = 0; i < v->len; i++) {
            if (i)
                clt__sb_printf(sb, ", ");
            if (v->items[i]->kind != O_INT && v->items[i]->kind != O_FLOAT)
                return false;
            repr_value(v->items[i], sb, true);
        }
        clt__sb_printf(sb, v->kind == O_TUPLE ? ")" : "]");
        return true;
    default:
        return false;
    }
}

/* A value of a schedule's state_dict as Python's repr writes it (None,
 * True, an int, a float, a name in quotes, lists and tuples of them,
 * dicts, a Counter: "Counter({30: 1})"), onto sb; false for anything else
 * (a tensor, a string that is no name). */
static bool repr_any(const obj *v, clt__strbuf *sb, int depth, size_t *budget)
{
    /* a pickle may nest a list in itself, or one list many times over:
     * bounded as the reader bounds nesting, and in the values written */
    if (depth > MAX_DEPTH || *budget == 0)
        return false;
    (*budget)--;
    switch (v->kind) {
    case O_NONE:
    case O_BOOL:
    case O_INT:
    case O_FLOAT:
    case O_STR:
        return repr_value(v, sb, false);
    case O_TUPLE:
    case O_LIST:
        clt__sb_printf(sb, v->kind == O_TUPLE ? "(" : "[");
        for (size_t i = 0; i < v->len; i++) {
            if (i)
                clt__sb_printf(sb, ", ");
            if (!repr_any(v->items[i], sb, depth + 1, budget))
                return false;
        }
        clt__sb_printf(sb, v->kind == O_TUPLE && v->len == 1 ? ",)"
                           : v->kind == O_TUPLE              ? ")"
                                                             : "]");
        return true;
    case O_DICT:
        clt__sb_printf(sb, v->i == 1 ? (v->len ? "Counter({" : "Counter(") : "{");
        for (size_t i = 0; i < v->len / 2; i++) {
            if (i)
                clt__sb_printf(sb, ", ");
            if (!repr_any(v->items[2 * i], sb, depth + 1, budget))
                return false;
            clt__sb_printf(sb, ": ");
            if (!repr_any(v->items[2 * i + 1], sb, depth + 1, budget))
                return false;
        }
        clt__sb_printf(sb, v->i == 1 ? (v->len ? "})" : ")") : "}");
        return true;
    default:
        return false;
    }
}

/* The value of a tensor of one element (its view checked), as a double. */
static clt_status tensor_value(pk *k, const obj *t, const char *fn, const char *where,
                               double *out)
{
    const tview *v = t->view;
    int64_t numel = 1;
    for (int d = 0; d < v->ndim; d++)
        numel *= v->shape[d];
    if (numel != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is a tensor of %lld elements, not "
                          "one", fn, where, (long long)numel);
    unsigned char *vals = NULL;
    size_t bytes = 0;
    clt_status st = view_host(k, t, fn, where, &vals, &bytes);
    if (st != CLT_OK)
        return st;
    switch (v->storage->sto->dtype) {
    case CLT_FLOAT32: { float x; memcpy(&x, vals, 4); *out = x; break; }
    case CLT_FLOAT64: memcpy(out, vals, 8); break;
    case CLT_INT64: { int64_t x; memcpy(&x, vals, 8); *out = (double)x; break; }
    case CLT_INT32: { int32_t x; memcpy(&x, vals, 4); *out = x; break; }
    case CLT_INT16: { int16_t x; memcpy(&x, vals, 2); *out = x; break; }
    case CLT_INT8: *out = (int8_t)vals[0]; break;
    case CLT_UINT8:
    case CLT_BOOL: *out = vals[0]; break;
    default:
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is a tensor of %s (cltensor reads a "
                        "value of float32, float64 or an integer dtype)", fn, where,
                        clt_dtype_name(v->storage->sto->dtype));
    }
    free(vals);
    return st;
}

/* The value of entry key of dict d (str keys), or NULL. */
static const obj *dict_get(const obj *d, const char *key)
{
    for (size_t i = 0; i < d->len / 2; i++)
        if (str_is(d->items[2 * i], key))
            return d->items[2 * i + 1];
    return NULL;
}

/* A count from a one-element tensor (torch's 'step') or an int. */
static clt_status count_of(pk *k, const obj *v, const char *fn, const char *where, int64_t *out)
{
    if (v->kind == O_INT) {
        *out = v->i;
        return v->i >= 0 ? CLT_OK
                         : clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is negative: %lld", fn,
                                      where, (long long)v->i);
    }
    double x;
    clt_status st = v->kind == O_TENSOR ? CLT_OK : CLT_ERR_INVALID_ARGUMENT;
    if (st == CLT_OK)
        st = tensor_value(k, v, fn, where, &x);
    else
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a count (an int or a "
                          "tensor)", fn, where, kind_name(v));
    if (st != CLT_OK)
        return st;
    if (!(x >= 0 && x <= 9007199254740992.0) || x != (double)(int64_t)x)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %g, not a count", fn, where, x);
    *out = (int64_t)x;
    return CLT_OK;
}

/* The most keys of a dict of an optimizer's state_dict (a group's
 * settings, a parameter's state): torch's have about a dozen. */
#define MAX_OPT_KEYS 256

/* CLT_ERR_INVALID_ARGUMENT when dict d (where) gives a str key twice, or
 * holds more than MAX_OPT_KEYS keys. */
static clt_status no_key_twice(const obj *d, const char *fn, const char *where)
{
    char q[CLT__QUOTE_SIZE];
    if (d->len / 2 > MAX_OPT_KEYS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s holds %zu keys, more than the %d "
                          "of an optimizer's state_dict cltensor reads", fn, where, d->len / 2,
                          MAX_OPT_KEYS);
    for (size_t i = 0; i < d->len / 2; i++)
        for (size_t j = i + 1; d->items[2 * i]->kind == O_STR && j < d->len / 2; j++)
            if (d->items[2 * j]->kind == O_STR && d->items[2 * j]->len == d->items[2 * i]->len &&
                memcmp(d->items[2 * j]->s, d->items[2 * i]->s, d->items[2 * i]->len) == 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s holds the key '%s' twice",
                                  fn, where,
                                  clt__quote(q, sizeof q, d->items[2 * i]->s,
                                             d->items[2 * i]->len));
    return CLT_OK;
}

/* A str key of a dict as a NUL-terminated name (for names of state and
 * settings: no U+0000, at most 63 bytes), into buf. */
static clt_status key_name(const obj *key, char *buf, size_t size, const char *fn,
                           const char *where)
{
    if (key->kind != O_STR)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s has a key that is %s, not a string",
                          fn, where, kind_name(key));
    if (key->len >= size || memchr(key->s, '\0', key->len)) {
        char q[CLT__QUOTE_SIZE];
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s has the key '%s' (not a name of "
                          "torch's optimizers)", fn, where,
                          clt__quote(q, sizeof q, key->s, key->len));
    }
    memcpy(buf, key->s, key->len);
    buf[key->len] = '\0';
    return CLT_OK;
}

/* A number: an int, a float or a tensor of one element (torch's LBFGS
 * keeps t, H_diag and ro as either). */
static clt_status number_of(pk *k, const obj *v, const char *fn, const char *where, double *out)
{
    if (v->kind == O_FLOAT) {
        memcpy(out, &v->i, 8);
        return CLT_OK;
    }
    if (v->kind == O_INT) {
        *out = (double)v->i;
        return CLT_OK;
    }
    if (v->kind == O_TENSOR)
        return tensor_value(k, v, fn, where, out);
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a number", fn, where,
                      kind_name(v));
}

/* Appends a tensor in host memory (data taken, freed on failure) named
 * name to *t. */
static clt_status mem_add(clt__mem_tensor **t, size_t *nt, size_t *cap, const char *name,
                          clt_dtype dt, int ndim, const int64_t *shape, void *data,
                          size_t nbytes, const char *fn)
{
    char *nm = clt__strdup(name);
    if (nm == NULL || !grow(t, cap, *nt, sizeof **t)) {
        free(nm);
        free(data);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    clt__mem_tensor *m = &(*t)[(*nt)++];
    *m = (clt__mem_tensor){.name = nm, .dtype = dt, .ndim = ndim, .data = data,
                           .nbytes = nbytes};
    for (int d = 0; d < ndim; d++)
        m->shape[d] = shape[d];
    return CLT_OK;
}

/* One entry of torch's LBFGS state (parameter 0's dict sd, where names
 * it) in the form clt_optimizer_load's file holds it: the counters as
 * int64 and t, H_diag and prev_loss as float64 0-d tensors, old_dirs and
 * old_stps (lists of vectors of one dtype and length) stacked as [m,
 * numel] (numel d's when they are empty), ro a float64 [m]; d and
 * prev_flat_grad as they are; 'al' (scratch) skipped. */
static clt_status lbfgs_entry(pk *k, const obj *sd, const char *name, const obj *val,
                              const char *where, const char *fn, clt__mem_tensor **t,
                              size_t *nt, size_t *cap, bool *taken)
{
    char full[96];
    int j = 0;
    *taken = false;
    while (j < LB_N && strcmp(lbfgs_names[j], name) != 0)
        j++;
    if (strcmp(name, "al") == 0) {
        *taken = true;
        if (val->kind != O_LIST)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a list", fn, where,
                              kind_name(val));
        return CLT_OK;
    }
    if (j == LB_N || j == LB_D || j == LB_PREV_FLAT_GRAD)
        return CLT_OK; /* the caller's: a tensor, or a key LBFGS lacks */
    *taken = true;
    snprintf(full, sizeof full, "state.0.%s", name);
    if (j == LB_FUNC_EVALS || j == LB_N_ITER) {
        int64_t *c = clt__malloc(8);
        if (c == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        clt_status st = count_of(k, val, fn, where, c);
        if (st != CLT_OK) {
            free(c);
            return st;
        }
        return mem_add(t, nt, cap, full, CLT_INT64, 0, NULL, c, 8, fn);
    }
    if (j == LB_T || j == LB_H_DIAG || j == LB_PREV_LOSS) {
        double *v = clt__malloc(8);
        if (v == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        clt_status st = number_of(k, val, fn, where, v);
        if (st != CLT_OK) {
            free(v);
            return st;
        }
        return mem_add(t, nt, cap, full, CLT_FLOAT64, 0, NULL, v, 8, fn);
    }
    if (val->kind != O_LIST)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a list", fn, where,
                          kind_name(val));
    int64_t m = (int64_t)val->len;
    char at[1024];
    if (j == LB_RO) {
        double *r = clt__malloc((size_t)(m ? m : 1) * 8);
        if (r == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        for (int64_t i = 0; i < m; i++) {
            snprintf(at, sizeof at, "%s[%lld]", where, (long long)i);
            clt_status st = number_of(k, val->items[i], fn, at, &r[i]);
            if (st != CLT_OK) {
                free(r);
                return st;
            }
        }
        return mem_add(t, nt, cap, full, CLT_FLOAT64, 1, &m, r, (size_t)m * 8, fn);
    }
    /* old_dirs, old_stps: vectors of d's dtype and length */
    const obj *d = dict_get(sd, "d");
    clt_dtype dt = d && d->kind == O_TENSOR ? d->view->storage->sto->dtype : CLT_FLOAT32;
    int64_t numel = d && d->kind == O_TENSOR && d->view->ndim == 1 ? d->view->shape[0] : 0;
    size_t es = clt_dtype_size(dt), rb = (size_t)numel * es;
    unsigned char *rows = clt__malloc((size_t)m * rb > 0 ? (size_t)m * rb : 1);
    if (rows == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (int64_t i = 0; i < m; i++) {
        const obj *row = val->items[i];
        snprintf(at, sizeof at, "%s[%lld]", where, (long long)i);
        if (row->kind != O_TENSOR || row->view->ndim != 1 || row->view->shape[0] != numel ||
            row->view->storage->sto->dtype != dt) {
            free(rows);
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a vector of %s of "
                              "%lld elements as 'd'", fn, at, kind_name(row),
                              clt_dtype_name(dt), (long long)numel);
        }
        unsigned char *vals = NULL;
        size_t bytes = 0;
        clt_status st = view_host(k, row, fn, at, &vals, &bytes);
        if (st != CLT_OK) {
            free(rows);
            return st;
        }
        memcpy(rows + (size_t)i * rb, vals, rb);
        free(vals);
    }
    int64_t shape[2] = {m, numel};
    return mem_add(t, nt, cap, full, dt, 2, shape, rows, (size_t)m * rb, fn);
}

clt_status clt_checkpoint_dict_load_optimizer(const clt_checkpoint_dict *ck, const char *key,
                                              clt_optimizer *opt)
{
    const char *fn = "clt_checkpoint_dict_load_optimizer";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(opt, fn);
    const obj *v = NULL;
    pk *k = (pk *)&ck->k;
    char q[CLT__QUOTE_SIZE], pq[CLT__QUOTE_SIZE + 64 + CLT__QUOTE_SIZE], where[sizeof pq + 64];
    char name[64], full[sizeof where + 128];
    size_t np = clt__optimizer_size(opt), nmeta = 0, nt = 0, capt = 0;
    const char **keys = NULL, **values = NULL;
    clt__mem_tensor *t = NULL;
    int64_t *updates = NULL;
    bool *absent = NULL, *has_state = NULL;
    clt__strbuf sb = {0};
    clt_status st = ck_get(ck, key, fn, &v);
    if (st != CLT_OK)
        return st;
    snprintf(pq, sizeof pq, "%s, '%s'", ck->k.path_q, CLT__QUOTE(q, key));
    int tg = torch_group(clt__optimizer_kind(opt));
    if (tg < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: a general checkpoint's state is "
                          "not read into %s (clt_optimizer_load reads its file)", fn, pq,
                          clt__optimizer_kind(opt));
    if (v->kind != O_DICT)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not an optimizer's "
                          "state_dict", fn, pq, kind_name(v));
    bool lbfgs = strcmp(torch_groups[tg].kind, "LBFGS") == 0;
    CLT__TRY(no_key_twice(v, fn, pq));
    const obj *state = dict_get(v, "state"), *groups = dict_get(v, "param_groups");
    if (state == NULL || groups == NULL)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s has no '%s' (not an optimizer's "
                            "state_dict)", fn, pq, state ? "param_groups" : "state"));
    if (state->kind != O_DICT || groups->kind != O_LIST)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: '%s' is %s, not a %s", fn, pq,
                            state->kind != O_DICT ? "state" : "param_groups",
                            kind_name(state->kind != O_DICT ? state : groups),
                            state->kind != O_DICT ? "dict" : "list"));
    /* the settings, as clt__optimizer_dict gives them */
    size_t total = 0;
    for (size_t g = 0; g < groups->len; g++) {
        const obj *gd = groups->items[g];
        snprintf(where, sizeof where, "%s: param_groups[%zu]", pq, g);
        if (gd->kind != O_DICT)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a dict", fn, where,
                                kind_name(gd)));
        CLT__TRY(no_key_twice(gd, fn, where));
        total += gd->len / 2;
    }
    keys = clt__calloc(total ? total : 1, sizeof *keys);
    values = clt__calloc(total ? total : 1, sizeof *values);
    updates = clt__calloc(np ? np : 1, sizeof *updates);
    absent = clt__calloc(np ? np : 1, sizeof *absent);
    has_state = clt__calloc(np ? np : 1, sizeof *has_state);
    if (keys == NULL || values == NULL || updates == NULL || absent == NULL || has_state == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t g = 0; g < groups->len; g++) {
        const obj *gd = groups->items[g];
        snprintf(where, sizeof where, "%s: param_groups[%zu]", pq, g);
        for (size_t i = 0; i < gd->len / 2; i++) {
            CLT__TRY(key_name(gd->items[2 * i], name, sizeof name, fn, where));
            if (g > 0)
                snprintf(full, sizeof full, "param_groups.%zu.%s", g, name);
            else
                snprintf(full, sizeof full, "%s", name);
            if (!repr_value(gd->items[2 * i + 1], &sb, false))
                CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s['%s'] is %s, not a "
                                    "setting torch's optimizers hold", fn, where, name,
                                    kind_name(gd->items[2 * i + 1])));
            keys[nmeta] = clt__strdup(full);
            values[nmeta++] = clt__sb_take(&sb);
            if (keys[nmeta - 1] == NULL || values[nmeta - 1] == NULL)
                CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
        }
    }
    /* the state: parameter i -> {name: tensor, 'step': count} */
    for (size_t j = 0; j < state->len / 2; j++) {
        const obj *pi = state->items[2 * j], *sd = state->items[2 * j + 1];
        if (pi->kind != O_INT || pi->i < 0 || (uint64_t)pi->i >= np)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the state's key %zu is %s%s, "
                                "and the optimizer has %zu parameters", fn, pq, j,
                                pi->kind == O_INT ? "parameter " : kind_name(pi),
                                pi->kind == O_INT ? "out of range" : "", np));
        size_t i = (size_t)pi->i;
        snprintf(where, sizeof where, "%s: state[%zu]", pq, i);
        if (has_state[i])
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is given twice", fn, where));
        has_state[i] = true;
        if (sd->kind != O_DICT)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a dict", fn, where,
                                kind_name(sd)));
        CLT__TRY(no_key_twice(sd, fn, where));
        bool step = false;
        for (size_t e = 0; e < sd->len / 2; e++) {
            const obj *val = sd->items[2 * e + 1];
            CLT__TRY(key_name(sd->items[2 * e], name, sizeof name, fn, where));
            snprintf(full, sizeof full, "%s['%s']", where, name);
            if (lbfgs && i == 0) {
                bool taken;
                CLT__TRY(lbfgs_entry(k, sd, name, val, full, fn, &t, &nt, &capt, &taken));
                if (strcmp(name, "func_evals") == 0)
                    updates[0] = 1; /* torch keeps no count of LBFGS's steps */
                if (taken)
                    continue;
            }
            if (strcmp(name, "step") == 0) {
                CLT__TRY(count_of(k, val, fn, full, &updates[i]));
                step = true;
                continue;
            }
            if (val->kind == O_NONE)
                continue; /* SGD's momentum_buffer before it started */
            if (val->kind != O_TENSOR)
                CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a tensor", fn,
                                    full, kind_name(val)));
            if (!grow(&t, &capt, nt, sizeof *t))
                CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
            clt__mem_tensor *m = &t[nt];
            *m = (clt__mem_tensor){0};
            unsigned char *vals = NULL;
            CLT__TRY(view_host(k, val, fn, full, &vals, &m->nbytes));
            m->data = vals;
            nt++;
            snprintf(full, sizeof full, "state.%zu.%s", i, name);
            if ((m->name = clt__strdup(full)) == NULL)
                CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
            m->dtype = val->view->storage->sto->dtype;
            m->ndim = val->view->ndim;
            memcpy(m->shape, val->view->shape, sizeof m->shape);
            if (tg == 0 && strcmp(name, "momentum_buffer") == 0)
                updates[i] = 1; /* SGD keeps no count: its buffer has started */
        }
        if (!step && torch_groups[tg].step)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s has no 'step' (torch's %s "
                                "keeps it)", fn, where, torch_groups[tg].kind));
    }
    for (size_t i = 0; i < np; i++)
        absent[i] = !has_state[i];
    CLT__TRY(clt__optimizer_load_dict(opt, keys, values, nmeta, t, nt, updates, absent, fn, pq));
done:
    for (size_t i = 0; i < nmeta; i++) {
        free((char *)keys[i]);
        free((char *)values[i]);
    }
    for (size_t i = 0; i < nt; i++) {
        free((char *)t[i].name);
        free((void *)t[i].data);
    }
    clt__sb_free(&sb);
    free(keys);
    free(values);
    free(t);
    free(updates);
    free(absent);
    free(has_state);
    return st == CLT_OK ? clt__ok() : st;
}

/* One entry of a schedule's state_dict, its value as repr_any writes it,
 * appended to keys and values (full is its key, where names it). */
static clt_status sched_entry(const obj *val, const char *full, const char *where,
                              const char *fn, clt__strbuf *sb, const char ***keys,
                              const char ***values, size_t *n, size_t *cap)
{
    size_t budget = 1u << 16; /* values: torch's hold a few dozen */
    if (!repr_any(val, sb, 0, &budget)) {
        clt__sb_free(sb);
        *sb = (clt__strbuf){0};
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a value torch's "
                          "schedules hold (numbers, bools, None, names, lists and dicts of "
                          "them, at most %d deep and 65536 in all)", fn, where, kind_name(val),
                          MAX_DEPTH);
    }
    size_t c = *cap;
    if (*n == c && !grow(keys, &c, *n, sizeof **keys))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (*n == *cap && !grow(values, cap, *n, sizeof **values))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    (*keys)[*n] = clt__strdup(full);
    (*values)[*n] = clt__sb_take(sb);
    (*n)++;
    if ((*keys)[*n - 1] == NULL || (*values)[*n - 1] == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return CLT_OK;
}

clt_status clt_checkpoint_dict_load_scheduler(const clt_checkpoint_dict *ck, const char *key,
                                              clt_lr_scheduler *s)
{
    const char *fn = "clt_checkpoint_dict_load_scheduler";
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(s, fn);
    const obj *v = NULL;
    char q[CLT__QUOTE_SIZE], pq[CLT__QUOTE_SIZE + 64 + CLT__QUOTE_SIZE], where[sizeof pq + 256];
    char name[64], full[128];
    const char **keys = NULL, **values = NULL;
    size_t n = 0, cap = 0;
    clt__strbuf sb = {0};
    clt_status st = ck_get(ck, key, fn, &v);
    if (st != CLT_OK)
        return st;
    snprintf(pq, sizeof pq, "%s, '%s'", ck->k.path_q, CLT__QUOTE(q, key));
    if (v->kind != O_DICT)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a schedule's "
                          "state_dict", fn, pq, kind_name(v));
    CLT__TRY(no_key_twice(v, fn, pq));
    for (size_t i = 0; i < v->len / 2; i++) {
        const obj *val = v->items[2 * i + 1];
        CLT__TRY(key_name(v->items[2 * i], name, sizeof name, fn, pq));
        snprintf(where, sizeof where, "%s: '%s'", pq, name);
        if (strcmp(name, "_schedulers") != 0 || val->kind != O_LIST) {
            CLT__TRY(sched_entry(val, name, where, fn, &sb, &keys, &values, &n, &cap));
            continue;
        }
        /* a SequentialLR's or ChainedScheduler's: their state_dicts */
        for (size_t j = 0; j < val->len; j++) {
            const obj *sd = val->items[j];
            char at[sizeof pq + 64];
            snprintf(at, sizeof at, "%s: _schedulers[%zu]", pq, j);
            if (sd->kind != O_DICT)
                CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not a schedule's "
                                    "state_dict", fn, at, kind_name(sd)));
            CLT__TRY(no_key_twice(sd, fn, at));
            for (size_t e = 0; e < sd->len / 2; e++) {
                CLT__TRY(key_name(sd->items[2 * e], name, sizeof name, fn, at));
                snprintf(full, sizeof full, "_schedulers.%zu.%s", j, name);
                snprintf(where, sizeof where, "%s['%s']", at, name);
                CLT__TRY(sched_entry(sd->items[2 * e + 1], full, where, fn, &sb, &keys,
                                     &values, &n, &cap));
            }
        }
    }
    CLT__TRY(clt__lr_scheduler_load_dict(s, keys, values, n, fn, pq));
done:
    for (size_t i = 0; i < n; i++) {
        free((char *)keys[i]);
        free((char *)values[i]);
    }
    free(keys);
    free(values);
    clt__sb_free(&sb);
    return st == CLT_OK ? clt__ok() : st;
}

/* The value under key for the scalar getters: ck and key checked, and the
 * value's kind one of the bits of kinds (1u << O_INT, ...), else an error
 * saying it is not `what`.  where receives "path: 'key'" for messages. */
static clt_status ck_get_kind(const clt_checkpoint_dict *ck, const char *key, const char *fn,
                              unsigned kinds, const char *what, const obj **out,
                              char where[2 * CLT__QUOTE_SIZE + 8])
{
    char q[CLT__QUOTE_SIZE];
    *out = NULL;
    CLT__REQUIRE_ARG(ck, fn);
    CLT__REQUIRE_ARG(key, fn);
    const obj *o = NULL;
    clt_status st = ck_get(ck, key, fn, &o);
    if (st != CLT_OK)
        return st;
    snprintf(where, 2 * CLT__QUOTE_SIZE + 8, "%s: '%s'", ck->k.path_q, CLT__QUOTE(q, key));
    if (!(kinds & (1u << o->kind)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is %s, not %s", fn, where,
                          kind_name(o), what);
    *out = o;
    return CLT_OK;
}

clt_status clt_checkpoint_dict_get_int(const clt_checkpoint_dict *ck, const char *key,
                                       int64_t *v)
{
    const char *fn = "clt_checkpoint_dict_get_int";
    CLT__REQUIRE_ARG(v, fn);
    *v = 0;
    const obj *o;
    char where[2 * CLT__QUOTE_SIZE + 8];
    clt_status st = ck_get_kind(ck, key, fn, 1u << O_INT, "an int", &o, where);
    if (st != CLT_OK)
        return st;
    *v = o->i;
    return clt__ok();
}

clt_status clt_checkpoint_dict_get_double(const clt_checkpoint_dict *ck, const char *key,
                                          double *v)
{
    const char *fn = "clt_checkpoint_dict_get_double";
    CLT__REQUIRE_ARG(v, fn);
    *v = 0.0;
    const obj *o;
    char where[2 * CLT__QUOTE_SIZE + 8];
    clt_status st = ck_get_kind(ck, key, fn, 1u << O_FLOAT | 1u << O_INT | 1u << O_TENSOR,
                                "a float", &o, where);
    if (st != CLT_OK)
        return st;
    if (o->kind == O_FLOAT)
        memcpy(v, &o->i, 8);
    else if (o->kind == O_INT)
        *v = (double)o->i;
    else {
        double x;
        if ((st = tensor_value((pk *)&ck->k, o, fn, where, &x)) != CLT_OK)
            return st;
        *v = x;
    }
    return clt__ok();
}

clt_status clt_checkpoint_dict_get_str(const clt_checkpoint_dict *ck, const char *key,
                                       const char **v)
{
    const char *fn = "clt_checkpoint_dict_get_str";
    CLT__REQUIRE_ARG(v, fn);
    *v = NULL;
    const obj *o;
    char where[2 * CLT__QUOTE_SIZE + 8];
    clt_status st = ck_get_kind(ck, key, fn, 1u << O_STR, "a string", &o, where);
    if (st != CLT_OK)
        return st;
    if (memchr(o->s, '\0', o->len))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s holds U+0000", fn, where);
    clt_checkpoint_dict *c = (clt_checkpoint_dict *)ck;
    char *s = clt__malloc(o->len + 1);
    if (s == NULL || !grow(&c->strs, &c->capstrs, c->nstrs, sizeof *c->strs)) {
        free(s);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    memcpy(s, o->s, o->len);
    s[o->len] = '\0';
    c->strs[c->nstrs++] = s;
    *v = s;
    return clt__ok();
}
