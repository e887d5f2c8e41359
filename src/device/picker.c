/* picker.c: the pure device picker.  It classifies described devices, ranks
 * them into labels ("cuda:0", "cpu:1") and resolves PyTorch-style kind
 * strings, with no OpenCL call, so that simulated machines can be tested. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum kind { K_CUDA, K_ROCM, K_MPS, K_XPU, K_GPU, K_CPU, K_ACCEL, K_COUNT };

static const char *const kind_names[K_COUNT] = {
    "cuda", "rocm", "mps", "xpu", "gpu", "cpu", "accelerator",
};

/* A request names a group: one kind, or every GPU for "gpu", or "auto". */
#define G_ANY_GPU K_COUNT
#define G_AUTO (K_COUNT + 1)

#define NONE SIZE_MAX

/* The criteria of the ranking, in the order they are applied. */
enum crit {
    C_USABLE,
    C_DISCRETE,
    C_FP64,
    C_THROUGHPUT,
    C_MEMORY,
    C_POCL,
    C_POCL_BASIC,
    C_UNITS,
    C_ORDER
};

typedef struct picker {
    const clt_device_info *infos;
    size_t n;
    enum kind *kinds;
    bool *usable;
    size_t *rank;     /* position among devices of the same kind: the label's number */
    size_t *by_label; /* device indices sorted by kind, then rank */
    size_t *order;    /* the group of the request, best first */
    size_t *pos;      /* position within the group of the request, NONE outside */
    char (*labels)[32];
} picker;

typedef struct request {
    const char *text; /* not terminated: CLTENSOR_DEVICE's is trimmed */
    char shown[CLT__QUOTE_SIZE]; /* text as messages quote it */
    int group;
    bool has_index;
    size_t index;
} request;

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

static bool starts_with_ci(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (lower((unsigned char)*s) != lower((unsigned char)*prefix))
            return false;
    return true;
}

static enum kind classify(const clt_device_info *d)
{
    if (d->type == CLT_DEVICE_TYPE_CPU)
        return K_CPU;
    if (d->type != CLT_DEVICE_TYPE_GPU)
        return K_ACCEL;
    switch (d->vendor_id) {
    case 0x10de:
        return K_CUDA;
    case 0x1002:
        return K_ROCM;
    case 0x106b:
        return K_MPS;
    case 0x8086:
        return K_XPU;
    default:
        break;
    }
    /* The device's own vendor comes first: a portable platform such as PoCL
     * or rusticl reports itself as platform vendor for every GPU it drives. */
    const char *vendors[2] = {d->vendor, d->platform_vendor};
    for (int i = 0; i < 2; i++) {
        if (clt__strcasestr(vendors[i], "NVIDIA"))
            return K_CUDA;
        if (clt__strcasestr(vendors[i], "Advanced Micro Devices") ||
            clt__strcasestr(vendors[i], "AMD"))
            return K_ROCM;
        if (clt__strcasestr(vendors[i], "Apple"))
            return K_MPS;
        if (clt__strcasestr(vendors[i], "Intel"))
            return K_XPU;
    }
    return K_GPU;
}

const char *clt_classify(const clt_device_info *info)
{
    return info ? kind_names[classify(info)] : NULL;
}

static bool is_gpu(enum kind k)
{
    return k <= K_GPU;
}

static bool in_group(enum kind k, int group)
{
    return group == G_ANY_GPU ? is_gpu(k) : (int)k == group;
}

static bool too_old(const clt_device_info *d)
{
    return d->cl_major < 1 || (d->cl_major == 1 && d->cl_minor < 2);
}

/* 0 for a threaded PoCL device, 1 for PoCL's basic driver, 2 for others. */
static int pocl_class(const clt_device_info *d)
{
    bool pocl = clt__strcasestr(d->platform_name, "Portable Computing Language") ||
                clt__strcasestr(d->platform_vendor, "pocl") || clt__strcasestr(d->vendor, "pocl");
    if (!pocl)
        return 2;
    return starts_with_ci(d->name, "basic") ? 1 : 0;
}

static uint64_t throughput(const clt_device_info *d)
{
    return (uint64_t)d->compute_units * d->max_clock_mhz;
}

#define RANK_FIRST_IF(xa, xb, c)                                             \
    do {                                                                     \
        if ((xa) != (xb)) {                                                  \
            *why = (c);                                                      \
            return (xa) ? -1 : 1;                                            \
        }                                                                    \
    } while (0)

#define RANK_MORE(va, vb, c)                                                 \
    do {                                                                     \
        if ((va) != (vb)) {                                                  \
            *why = (c);                                                      \
            return (va) > (vb) ? -1 : 1;                                     \
        }                                                                    \
    } while (0)

/* Negative when device a ranks before device b (both of one group), positive
 * after; *why names the criterion that decided. */
static int decide(const picker *p, size_t a, size_t b, enum crit *why)
{
    const clt_device_info *x = &p->infos[a], *y = &p->infos[b];
    RANK_FIRST_IF(p->usable[a], p->usable[b], C_USABLE);
    if (is_gpu(p->kinds[a])) {
        RANK_FIRST_IF(x->host_unified_memory == 0, y->host_unified_memory == 0, C_DISCRETE);
        RANK_FIRST_IF(x->fp64 != 0, y->fp64 != 0, C_FP64);
        RANK_MORE(throughput(x), throughput(y), C_THROUGHPUT);
        RANK_MORE(x->global_mem_bytes, y->global_mem_bytes, C_MEMORY);
    } else if (p->kinds[a] == K_CPU) {
        int ca = pocl_class(x), cb = pocl_class(y);
        if (ca != cb) {
            *why = (ca < 2 && cb < 2) ? C_POCL_BASIC : C_POCL;
            return ca < cb ? -1 : 1;
        }
        RANK_MORE(x->compute_units, y->compute_units, C_UNITS);
    }
    *why = C_ORDER;
    if (x->platform_index != y->platform_index)
        return x->platform_index < y->platform_index ? -1 : 1;
    if (x->device_index != y->device_index)
        return x->device_index < y->device_index ? -1 : 1;
    return a < b ? -1 : (a > b);
}

/* Writes the devices of a group into order, best first (an insertion sort:
 * stable, and machines have few devices); returns how many there are. */
static size_t rank_group(const picker *p, int group, size_t *order)
{
    size_t m = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!in_group(p->kinds[i], group))
            continue;
        size_t j = m++;
        enum crit why;
        while (j > 0 && decide(p, i, order[j - 1], &why) < 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return m;
}

static void picker_free(picker *p)
{
    free(p->kinds);
    free(p->usable);
    free(p->rank);
    free(p->by_label);
    free(p->order);
    free(p->pos);
    free(p->labels);
}

static clt_status picker_init(picker *p, const clt_device_info *infos, size_t n)
{
    size_t m = n ? n : 1;
    memset(p, 0, sizeof *p);
    p->infos = infos;
    p->n = n;
    p->kinds = clt__calloc(m, sizeof *p->kinds);
    p->usable = clt__calloc(m, sizeof *p->usable);
    p->rank = clt__calloc(m, sizeof *p->rank);
    p->by_label = clt__calloc(m, sizeof *p->by_label);
    p->order = clt__calloc(m, sizeof *p->order);
    p->pos = clt__calloc(m, sizeof *p->pos);
    p->labels = clt__calloc(m, sizeof *p->labels);
    if (!p->kinds || !p->usable || !p->rank || !p->by_label || !p->order || !p->pos ||
        !p->labels) {
        picker_free(p);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "out of host memory while ranking %zu devices", n);
    }
    for (size_t i = 0; i < n; i++) {
        p->kinds[i] = classify(&infos[i]);
        p->usable[i] = !too_old(&infos[i]);
    }
    size_t done = 0;
    for (int k = 0; k < K_COUNT; k++) {
        size_t c = rank_group(p, k, p->by_label + done);
        for (size_t j = 0; j < c; j++) {
            size_t i = p->by_label[done + j];
            p->rank[i] = j;
            snprintf(p->labels[i], sizeof p->labels[i], "%s:%zu", kind_names[k], j);
        }
        done += c;
    }
    return CLT_OK;
}

clt_status clt__pick_labels(const clt_device_info *infos, size_t n, char (*labels)[32])
{
    if (n == 0)
        return CLT_OK;
    CLT__REQUIRE_ARG(infos, "clt__pick_labels");
    CLT__REQUIRE_ARG(labels, "clt__pick_labels");
    picker p;
    clt_status st = picker_init(&p, infos, n);
    if (st != CLT_OK)
        return st;
    memcpy(labels, p.labels, n * sizeof *labels);
    picker_free(&p);
    return CLT_OK;
}

clt_status clt_pick_label(const clt_device_info *infos, size_t n, size_t i, char **label)
{
    CLT__REQUIRE_ARG(label, "clt_pick_label");
    *label = NULL;
    CLT__REQUIRE_ARG(infos, "clt_pick_label");
    if (i >= n)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_pick_label: device %zu asked, but only %zu are described", i, n);
    picker p;
    clt_status st = picker_init(&p, infos, n);
    if (st != CLT_OK)
        return clt__error_in(st, "clt_pick_label");
    size_t len = strlen(p.labels[i]);
    char *s = clt__malloc(len + 1);
    if (s == NULL) {
        picker_free(&p);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_pick_label: out of host memory");
    }
    memcpy(s, p.labels[i], len + 1);
    picker_free(&p);
    *label = s;
    return clt__ok();
}

static bool blank(const char *s)
{
    while (is_space(*s))
        s++;
    return *s == '\0';
}

/* Parses a kind string.  Like torch.device, a request from the caller is
 * taken as it is: " cpu" or "cpu\n" is no kind.  CLTENSOR_DEVICE (trim true)
 * is read with surrounding white space dropped, as shells and env files add
 * it easily. */
static clt_status parse_request(const char *s, bool trim, request *r, clt__strbuf *msg)
{
    static const struct {
        const char *name;
        int group;
    } names[] = {
        {"cuda", K_CUDA}, {"rocm", K_ROCM},     {"hip", K_ROCM}, {"mps", K_MPS},
        {"xpu", K_XPU},   {"gpu", G_ANY_GPU}, {"cpu", K_CPU},  {"auto", G_AUTO},
    };
    while (trim && is_space(*s))
        s++;
    size_t len = strlen(s);
    while (trim && len > 0 && is_space(s[len - 1]))
        len--;
    r->text = s;
    clt__quote(r->shown, sizeof r->shown, s, len);
    r->group = -1;
    r->has_index = false;
    r->index = 0;

    size_t name_len = 0;
    while (name_len < len && s[name_len] != ':')
        name_len++;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (strlen(names[k].name) == name_len && starts_with_ci(s, names[k].name)) {
            r->group = names[k].group;
            break;
        }
    }
    if (r->group < 0) {
        clt__sb_printf(msg,
                       "unknown device kind '%s': expected one of cuda, rocm (hip), mps, xpu, "
                       "gpu, cpu, auto, optionally with an index like cuda:1", r->shown);
        return CLT_ERR_UNKNOWN_KIND;
    }
    if (name_len == len)
        return CLT_OK;

    /* Like PyTorch: digits only, no sign, no leading zero. */
    const char *digits = s + name_len + 1;
    size_t nd = len - name_len - 1;
    bool ok = nd > 0 && !(nd > 1 && digits[0] == '0');
    for (size_t j = 0; ok && j < nd; j++) {
        if (digits[j] < '0' || digits[j] > '9' || r->index > (SIZE_MAX - 9) / 10)
            ok = false;
        else
            r->index = r->index * 10 + (size_t)(digits[j] - '0');
    }
    if (!ok) {
        clt__sb_printf(msg,
                       "malformed device index in '%s': expected a decimal number without "
                       "sign or leading zeros after ':', as in cuda:1", r->shown);
        return CLT_ERR_INVALID_ARGUMENT;
    }
    if (r->group == G_AUTO) {
        clt__sb_printf(msg, "malformed request '%s': auto takes no index", r->shown);
        return CLT_ERR_INVALID_ARGUMENT;
    }
    r->has_index = true;
    return CLT_OK;
}

static const char *group_name(int group)
{
    return group == G_ANY_GPU ? "gpu" : kind_names[group];
}

/* Resolves a parsed request.  *group receives the group actually searched:
 * auto becomes every GPU when one is usable, else cpu. */
static clt_status resolve(picker *p, const request *r, int *group, size_t *picked,
                          clt__strbuf *msg)
{
    int g = r->group;
    if (g == G_AUTO) {
        size_t m = rank_group(p, G_ANY_GPU, p->order);
        g = (m > 0 && p->usable[p->order[0]]) ? G_ANY_GPU : K_CPU;
    }
    *group = g;
    size_t m = rank_group(p, g, p->order);
    size_t usable = 0;
    while (usable < m && p->usable[p->order[usable]])
        usable++;
    for (size_t i = 0; i < p->n; i++)
        p->pos[i] = NONE;
    for (size_t j = 0; j < m; j++)
        p->pos[p->order[j]] = j;
    *picked = NONE;
    if (r->index < usable) {
        *picked = p->order[r->index];
        return CLT_OK;
    }

    clt__sb_printf(msg, "no device for '%s': ", r->shown);
    if (p->n == 0) {
        clt__sb_printf(msg, "no OpenCL device found");
    } else if (usable == 0) {
        size_t old = 0;
        for (size_t i = 0; i < p->n; i++) {
            bool wanted = r->group == G_AUTO ? (is_gpu(p->kinds[i]) || p->kinds[i] == K_CPU)
                                             : in_group(p->kinds[i], g);
            old += wanted && !p->usable[i];
        }
        if (r->group == G_AUTO)
            clt__sb_printf(msg, "neither a GPU nor a cpu device here");
        else if (g == G_ANY_GPU)
            clt__sb_printf(msg, "no GPU here");
        else
            clt__sb_printf(msg, "no %s device here", kind_names[g]);
        if (old > 0)
            clt__sb_printf(msg, " (%zu passed over: OpenCL below 1.2)", old);
    } else {
        clt__sb_printf(msg, "only %zu %s%s (", usable, g == G_ANY_GPU ? "GPU" : kind_names[g],
                       g == G_ANY_GPU ? (usable == 1 ? "" : "s")
                                      : (usable == 1 ? " device" : " devices"));
        for (size_t j = 0; j < usable; j++)
            clt__sb_printf(msg, "%s%s", j ? ", " : "", p->labels[p->order[j]]);
        clt__sb_printf(msg, ")");
    }
    return CLT_ERR_DEVICE_NOT_FOUND;
}

static void list_available(clt__strbuf *sb, const picker *p)
{
    if (p->n == 0)
        clt__sb_printf(sb, "none");
    for (size_t j = 0; j < p->n; j++) {
        size_t i = p->by_label[j];
        clt__sb_printf(sb, "%s%s (%s", j ? ", " : "", p->labels[i], p->infos[i].name);
        if (!p->usable[i])
            clt__sb_printf(sb, "; OpenCL %d.%d, too old", p->infos[i].cl_major,
                           p->infos[i].cl_minor);
        clt__sb_printf(sb, ")");
    }
}

/* Why `loser` ranks below `winner`, in a few words. */
static void describe(clt__strbuf *sb, const picker *p, size_t winner, size_t loser)
{
    const clt_device_info *w = &p->infos[winner], *l = &p->infos[loser];
    enum crit why;
    decide(p, winner, loser, &why);
    switch (why) {
    case C_DISCRETE:
        clt__sb_printf(sb, "integrated GPU; discrete preferred");
        break;
    case C_FP64:
        clt__sb_printf(sb, "no fp64; fp64 preferred");
        break;
    case C_THROUGHPUT:
        clt__sb_printf(sb, "compute units x clock %llu, below %llu",
                       (unsigned long long)throughput(l), (unsigned long long)throughput(w));
        break;
    case C_MEMORY:
        clt__sb_printf(sb, "%llu MiB of global memory, below %llu MiB",
                       (unsigned long long)(l->global_mem_bytes >> 20),
                       (unsigned long long)(w->global_mem_bytes >> 20));
        break;
    case C_POCL:
        clt__sb_printf(sb, "not PoCL; PoCL preferred");
        break;
    case C_POCL_BASIC: {
        /* PoCL names its devices "<driver>-<cpu>", e.g. "pthread-haswell-...". */
        int drv = (int)strcspn(w->name, "-");
        clt__sb_printf(sb, "PoCL basic driver is single-threaded; %.*s preferred", drv, w->name);
        break;
    }
    case C_UNITS:
        clt__sb_printf(sb, "%u compute units, below %u", l->compute_units, w->compute_units);
        break;
    case C_USABLE:
    case C_ORDER:
        clt__sb_printf(sb, "equal rank, enumerated later");
        break;
    }
}

static void report_devices(clt__strbuf *sb, const picker *p, const request *r, clt_status parsed,
                           int group, size_t picked)
{
    for (size_t i = 0; i < p->n; i++) {
        const clt_device_info *d = &p->infos[i];
        enum kind k = p->kinds[i];
        clt__sb_printf(sb, "  [p%d.d%d] %s %s (%s, %s): ", d->platform_index, d->device_index,
                       p->labels[i], d->name, d->vendor, d->platform_name);
        if (i == picked) {
            clt__sb_printf(sb, "picked");
        } else {
            clt__sb_printf(sb, "passed over: ");
            if (parsed == CLT_ERR_UNKNOWN_KIND)
                clt__sb_printf(sb, "'%s' is no device kind", r->shown);
            else if (parsed != CLT_OK)
                clt__sb_printf(sb, "'%s' is no valid request", r->shown);
            else if (!p->usable[i])
                clt__sb_printf(sb, "OpenCL %d.%d is below the required 1.2", d->cl_major,
                               d->cl_minor);
            else if (!in_group(k, group) && r->group == G_AUTO)
                clt__sb_printf(sb,
                               group == G_ANY_GPU ? "auto prefers a GPU (it is %s)"
                                                  : "auto takes a GPU, else a cpu device (it is %s)",
                               kind_names[k]);
            else if (!in_group(k, group) && group == G_ANY_GPU)
                clt__sb_printf(sb, "not a GPU (it is %s)", kind_names[k]);
            else if (!in_group(k, group))
                clt__sb_printf(sb, "not a %s device (it is %s)", kind_names[group], kind_names[k]);
            else if (r->has_index)
                clt__sb_printf(sb, "index %zu asked, this is %s:%zu", r->index, group_name(group),
                               p->pos[i]);
            else if (picked != NONE) {
                clt__sb_printf(sb, "ranked below %s (", p->labels[picked]);
                describe(sb, p, picked, i);
                clt__sb_printf(sb, ")");
            }
        }
        if (!d->fp64)
            clt__sb_printf(sb, "; no cl_khr_fp64 (float64 unavailable)");
        clt__sb_printf(sb, "\n");
    }
}

clt_status clt__pick(const char *fn, const clt_device_info *infos, size_t n, const char *kind,
                     const char *env_override, size_t *picked, char **report)
{
    if (report)
        *report = NULL;
    CLT__REQUIRE_ARG(kind, fn);
    CLT__REQUIRE_ARG(picked, fn);
    if (n > 0)
        CLT__REQUIRE_ARG(infos, fn);

    picker p;
    clt_status st = picker_init(&p, infos, n);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    clt__strbuf msg = {0}, rep = {0};
    request asked, over;
    const request *used = &asked;
    bool overridden = false;
    int group = -1;
    size_t pick = NONE;

    clt_status parsed = parse_request(kind, false, &asked, &msg);
    if (parsed == CLT_OK && asked.group == G_AUTO && env_override && !blank(env_override)) {
        overridden = true;
        used = &over;
        parsed = parse_request(env_override, true, &over, &msg);
        if (parsed == CLT_OK && over.group == G_AUTO) {
            clt__sb_printf(&msg, "it must name a device kind, not auto");
            parsed = CLT_ERR_INVALID_ARGUMENT;
        }
    }
    st = parsed;
    if (st == CLT_OK)
        st = resolve(&p, used, &group, &pick, &msg);
    if (st == CLT_ERR_UNKNOWN_KIND || st == CLT_ERR_DEVICE_NOT_FOUND) {
        clt__sb_printf(&msg, "; available here: ");
        list_available(&msg, &p);
    }

    char *text = NULL;
    if (report) {
        clt__sb_printf(&rep, "request '%s' -> ", asked.shown);
        if (pick != NONE)
            clt__sb_printf(&rep, "%s (%s)", p.labels[pick], infos[pick].name);
        else
            clt__sb_printf(&rep, "none");
        if (overridden)
            clt__sb_printf(&rep, "; CLTENSOR_DEVICE=%s overrides auto", over.shown);
        clt__sb_printf(&rep, "\n");
        report_devices(&rep, &p, used, parsed, group, pick);
        text = rep.failed ? NULL : clt__sb_take(&rep);
    }
    if (msg.failed || (report && text == NULL)) {
        free(text);
        clt__sb_free(&rep);
        clt__sb_free(&msg);
        picker_free(&p);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }

    if (report)
        *report = text;
    if (st == CLT_OK) {
        *picked = pick;
        clt__ok();
    } else if (overridden) {
        clt__error(st, "%s: CLTENSOR_DEVICE=%s could not be resolved: %s", fn, over.shown,
                   msg.data ? msg.data : "");
    } else {
        clt__error(st, "%s: %s", fn, msg.data ? msg.data : "");
    }
    clt__sb_free(&msg);
    picker_free(&p);
    return st;
}

clt_status clt_pick(const clt_device_info *infos, size_t n, const char *kind,
                    const char *env_override, size_t *picked, char **report)
{
    return clt__pick("clt_pick", infos, n, kind, env_override, picked, report);
}
