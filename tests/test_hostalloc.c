/* test_hostalloc.c: real work (tests/fail_each.h) with the library's host
 * allocations failing from each point on in turn, and a message made with
 * none to be had. */
#include <pthread.h>

#include "fail_each.h"

long clt__host_refuse_after(long pass); /* src/core/alloc.c */

static void check_host(long pass, clt_status st, const char *call)
{
    cr_assert_eq(st, CLT_ERR_OUT_OF_HOST_MEMORY, "allocation %ld: %s: %s: %s", pass, call,
                 clt_status_name(st), clt_last_error());
}

/* Some refusals only cost a saving (the program cache on disk). */
static const failing_kind failing = {"host allocation", clt__host_refuse_after, check_host,
                                     false};

EACH_REFUSAL(hostalloc, tensors_autograd_format, tensor_work, 20)
EACH_REFUSAL(hostalloc, mlp_cnn_sgd_adam, train_work, 50)
EACH_REFUSAL(hostalloc, layers_ops_adamw, layers_work, 100)
EACH_REFUSAL(hostalloc, transformer_layer, attention_work, 500)
EACH_REFUSAL(hostalloc, index_conv_pool, index_conv_work, 100)
EACH_REFUSAL(hostalloc, dataloader_epochs, data_work, 20)
EACH_REFUSAL(hostalloc, files_and_dlpack, io_work, 50)
EACH_REFUSAL(hostalloc, transformer_decoder, decoder_work, 1500)

/* The message of a failure does not need the heap: on a thread that has
 * never had one, with every host allocation refused, a failure still comes
 * back with its status and a (shortened) message. */
typedef struct bare {
    clt_status st, last;
    long left;
    bool named, out_null;
} bare;

static void *fail_without_memory(void *arg)
{
    bare *b = arg;
    clt__host_refuse_after(0);
    clt_tensor *t = (void *)&sentinel;
    b->st = clt_add(NULL, NULL, &t);
    b->named = strstr(clt_last_error(), "NULL") != NULL;
    b->last = clt_last_status();
    b->out_null = t == NULL;
    b->left = clt__host_refuse_after(-1);
    return NULL;
}

Test(hostalloc, error_message_without_memory)
{
    pthread_t th;
    bare b;
    cr_assert_eq(pthread_create(&th, NULL, fail_without_memory, &b), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
    cr_assert_eq(b.left, -2, "the message needed no allocation");
    cr_assert_eq(b.st, CLT_ERR_NULL_ARGUMENT, "%s", clt_status_name(b.st));
    cr_assert_eq(b.last, b.st);
    cr_assert(b.named && b.out_null);
}
