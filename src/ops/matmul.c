/* matmul.c: matrix products through CLBlast. */
#include "internal.h"

void clt__blas_release(clt_device *dev)
{
    (void)dev;
}
