/* host_linalg.h: float64 host references for the linear algebra tests,
 * written from the textbook algorithms, independent of the library. */
#ifndef CLT_TESTS_HOST_LINALG_H
#define CLT_TESTS_HOST_LINALG_H

#include <math.h>
#include <stdlib.h>

/* The eigenvalues of the symmetric n x n a (destroyed), ascending, into w:
 * the textbook cyclic Jacobi, one rotation at a time. */
static inline void host_eigvals(double *a, int n, double *w)
{
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++)
                off += a[p * n + q] * a[p * n + q];
        if (off < 1e-30)
            break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = a[p * n + q];
                if (apq == 0)
                    continue;
                double th = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                double t = (th >= 0 ? 1 : -1) / (fabs(th) + sqrt(th * th + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int i = 0; i < n; i++) {
                    double x = a[i * n + p], y = a[i * n + q];
                    a[i * n + p] = c * x - s * y;
                    a[i * n + q] = s * x + c * y;
                }
                for (int j = 0; j < n; j++) {
                    double x = a[p * n + j], y = a[q * n + j];
                    a[p * n + j] = c * x - s * y;
                    a[q * n + j] = s * x + c * y;
                }
            }
    }
    for (int i = 0; i < n; i++)
        w[i] = a[i * n + i];
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && w[j - 1] > w[j]; j--) {
            double t = w[j];
            w[j] = w[j - 1];
            w[j - 1] = t;
        }
}

/* The singular values of the m x n a, descending, into s (min(m, n)):
 * the textbook one-sided Jacobi on the columns of a (of a^T when wide),
 * one pair at a time, until every pair is orthogonal to rounding. */
static inline void host_svdvals(const double *a, int m, int n, double *s)
{
    int wide = m < n, r = wide ? n : m, c = wide ? m : n;
    double *g = malloc((size_t)(r * c + 1) * sizeof *g); /* column j at g[j * r] */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            g[wide ? i * r + j : j * r + i] = a[i * n + j];
    for (int sweep = 0, more = 1; more && sweep < 100; sweep++) {
        more = 0;
        for (int p = 0; p < c; p++)
            for (int q = p + 1; q < c; q++) {
                double al = 0, be = 0, ga = 0;
                for (int i = 0; i < r; i++) {
                    al += g[p * r + i] * g[p * r + i];
                    be += g[q * r + i] * g[q * r + i];
                    ga += g[p * r + i] * g[q * r + i];
                }
                if (ga == 0 || fabs(ga) <= 1e-15 * sqrt(al * be))
                    continue;
                more = 1;
                double z = (be - al) / (2 * ga);
                double t = (z >= 0 ? 1 : -1) / (fabs(z) + sqrt(1 + z * z));
                double cs = 1 / sqrt(1 + t * t), sn = cs * t;
                for (int i = 0; i < r; i++) {
                    double x = g[p * r + i], y = g[q * r + i];
                    g[p * r + i] = cs * x - sn * y;
                    g[q * r + i] = sn * x + cs * y;
                }
            }
    }
    for (int j = 0; j < c; j++) {
        double nn = 0;
        for (int i = 0; i < r; i++)
            nn += g[j * r + i] * g[j * r + i];
        s[j] = sqrt(nn);
    }
    for (int i = 1; i < c; i++) /* insertion sort, descending */
        for (int j = i; j > 0 && s[j - 1] < s[j]; j--) {
            double t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    free(g);
}

#endif
