/* npz.c: NumPy's .npz archives (numpy.savez, numpy.savez_compressed): a
 * zip archive of .npy files, each read and written by npy.c's parser and
 * header through zip.c. */
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "io/io.h"

clt_status clt_load_npz(const char *path, clt_device *dev, clt_named_tensor **out, size_t *n)
{
    const char *fn = "clt_load_npz";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(n, fn);
    *n = 0;
    CLT__REQUIRE_ARG(path, fn);
    CLT__REQUIRE_ARG(dev, fn);
    zip_t *za = NULL;
    clt_named_tensor *arr = NULL;
    const char **names = NULL;
    size_t *lens = NULL, count = 0, done_n = 0;
    clt__zip_member m = {0};
    clt_array_spec *a = NULL;
    char pq[CLT__QUOTE_SIZE], q[CLT__QUOTE_SIZE], where[CLT__WHERE_SIZE];
    CLT__QUOTE(pq, path);
    clt_status st = clt__zip_open(path, fn, "numpy.savez's format", &za);
    if (st != CLT_OK)
        return st;
    zip_int64_t entries = zip_get_num_entries(za, 0);
    count = entries > 0 ? (size_t)entries : 0;
    names = clt__calloc(count ? count : 1, sizeof *names);
    lens = clt__calloc(count ? count : 1, sizeof *lens);
    if (names == NULL || lens == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t k = 0; k < count; k++) {
        const char *name = zip_get_name(za, k, 0);
        if (name == NULL)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: member %zu: %s", fn, pq, k,
                                zip_strerror(za)));
        size_t len = strlen(name);
        if (len < 4 || strcmp(name + len - 4, ".npy") != 0)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: member '%s' is not a .npy file "
                                "(numpy.savez names each array NAME.npy; cltensor reads arrays "
                                "only)", fn, pq, CLT__QUOTE(q, name)));
        if (zip_name_locate(za, name, 0) != (zip_int64_t)k)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: member '%s' appears twice", fn,
                                pq, CLT__QUOTE(q, name)));
        names[k] = name;
        lens[k] = len - 4;
    }
    CLT__TRY(clt__io_named_block(count, names, lens, fn, &arr));
    for (; done_n < count; done_n++) {
        snprintf(where, sizeof where, "%s, member '%s'", pq, CLT__QUOTE(q, names[done_n]));
        CLT__TRY(clt__zip_member_open(za, done_n, fn, where, &m));
        clt__io_src src = {clt__zip_member_read, &m, m.size};
        CLT__TRY(clt__npy_read(&src, where, fn, &a));
        CLT__TRY(clt__zip_member_close(&m, true));
        st = clt__tensor_from_host_in(fn, dev, a->dtype, a->ndim, a->shape, a->data,
                                      &arr[done_n].tensor);
        if (st != CLT_OK)
            CLT__TRY(clt__error_in_step(st, fn, where));
        clt__scope_disown(arr[done_n].tensor);
        free(a);
        a = NULL;
    }
    *out = arr;
    *n = count;
    arr = NULL;
done:
    free(a);
    clt__zip_member_close(&m, false);
    if (arr)
        clt_named_tensors_free(arr, done_n);
    free(names);
    free(lens);
    clt__zip_close(za);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_save_npz(const char *path, const clt_named_tensor *tensors, size_t n,
                        int compressed)
{
    const char *fn = "clt_save_npz";
    CLT__REQUIRE_ARG(path, fn);
    if (n > 0)
        CLT__REQUIRE_ARG(tensors, fn);
    char pq[CLT__QUOTE_SIZE], q[CLT__QUOTE_SIZE];
    CLT__QUOTE(pq, path);
    clt_status st = clt__io_check_names(tensors, n, fn, pq);
    if (st != CLT_OK)
        return st;
    void **data = clt__calloc(n ? n : 1, sizeof *data);
    size_t *bytes = clt__calloc(n ? n : 1, sizeof *bytes), *hlen = clt__calloc(n ? n : 1,
                                                                                sizeof *hlen);
    unsigned char(*headers)[CLT__NPY_HEADER_MAX] = clt__calloc(n ? n : 1, sizeof *headers);
    clt__strbuf member = {0};
    clt__zip_out z = {0};
    if (data == NULL || bytes == NULL || hlen == NULL || headers == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    /* Everything is read back before the file is created. */
    for (size_t k = 0; k < n; k++) {
        const clt_tensor *t = tensors[k].tensor;
        st = clt__io_read_tensor(t, &data[k], &bytes[k], fn, __builtin_return_address(0));
        if (st != CLT_OK)
            CLT__TRY(clt__error_prefix(st, "%s: %s: reading tensor '%s'", fn, pq,
                                       CLT__QUOTE(q, tensors[k].name)));
        CLT__TRY(clt__npy_header(t->dtype, t->ndim, t->shape, headers[k], &hlen[k], fn, pq));
    }
    CLT__TRY(clt__zip_create(&z, path, fn));
    for (size_t k = 0; k < n; k++) {
        member.len = 0;
        clt__sb_printf(&member, "%s.npy", tensors[k].name);
        if (member.failed)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
        const void *parts[2] = {headers[k], data[k]};
        size_t lens[2] = {hlen[k], bytes[k]};
        CLT__TRY(clt__zip_add(&z, member.data, parts, lens, 2, compressed != 0));
    }
    CLT__TRY(clt__zip_commit(&z));
done:
    clt__zip_abort(&z);
    clt__sb_free(&member);
    for (size_t k = 0; data && k < n; k++)
        free(data[k]);
    free(data);
    free(bytes);
    free(hlen);
    free(headers);
    return st == CLT_OK ? clt__ok() : st;
}
