/* ops.c: the predefined reductions on long double types, which Go
 * cannot compute (x87 80-bit arithmetic). */
#include <complex.h>
#include "cabi.h"

typedef struct {
    long double v;
    int loc;
} ldi_t;

void shmpi_reduce_c(int op, int kind, void *in, void *inout, int64_t n)
{
    enum { K_LONG = 15, K_CLONG = 16, K_LDI = 22 }; /* basic values in types.go (checked there) */
    if (kind == K_LONG) {
        long double *a = in, *b = inout;
        for (int64_t i = 0; i < n; i++) {
            switch (op) {
            case 0x21: b[i] += a[i]; break;
            case 0x24: b[i] *= a[i]; break;
            case 0x22: if (a[i] < b[i]) b[i] = a[i]; break;
            case 0x23: if (a[i] > b[i]) b[i] = a[i]; break;
            }
        }
    } else if (kind == K_CLONG) {
        long double complex *a = in, *b = inout;
        for (int64_t i = 0; i < n; i++) {
            if (op == 0x21)
                b[i] += a[i];
            else if (op == 0x24)
                b[i] *= a[i];
        }
    } else if (kind == K_LDI) {
        ldi_t *a = in, *b = inout;
        for (int64_t i = 0; i < n; i++) {
            if (a[i].v == b[i].v) {
                if (a[i].loc < b[i].loc)
                    b[i].loc = a[i].loc;
            } else if ((op == 0x38 && a[i].v < b[i].v) || (op == 0x39 && a[i].v > b[i].v)) {
                b[i] = a[i];
            }
        }
    }
}
