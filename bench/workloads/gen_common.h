/*
 * gen_common.h: what the workload generators of bench/workloads share (a
 * seeded PRNG per row, Zipf draws, wall-clock pacing, option parsing).
 * Header-only and static: each generator is one C file linked with
 * libbase.a alone, so the oracle's input never comes from the engine under
 * test.
 *
 * Determinism: every row draws from its own PRNG seeded by (seed, row), so
 * the same options give the same bytes whatever the pacing or buffering.
 */
#ifndef BENCH_WORKLOADS_GEN_COMMON_H
#define BENCH_WORKLOADS_GEN_COMMON_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/base.h"

typedef struct gen_rng {
    uint64_t s;
} gen_rng;

/* a Weyl sequence through base's 64-bit finaliser (splitmix64's scheme) */
static inline uint64_t gen_next(gen_rng *r) { return hash64_mix(r->s += 0x9e3779b97f4a7c15ull); }

/* uniform in [0, n), n > 0 (the modulo bias is below 2^-40 for our n) */
static inline int64_t gen_below(gen_rng *r, int64_t n) { return (int64_t)(gen_next(r) % (uint64_t)n); }

/* uniform in [0, 1) */
static inline double gen_double(gen_rng *r) { return (double)(gen_next(r) >> 11) * 0x1.0p-53; }

/* The PRNG of row n of stream `which` (0, 1, ...) for a seed. */
static inline gen_rng gen_for_row(uint64_t seed, int which, int64_t n)
{
    gen_rng r = {hash64_mix(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull + (uint64_t)which) ^ (uint64_t)n};
    gen_next(&r);
    return r;
}

/* Zipf over 1..n with exponent s (P(k) proportional to 1 / k^s; s = 0 is
 * uniform): the cumulative distribution, searched per draw. */
typedef struct gen_zipf {
    int64_t n;
    double *cdf; /* NULL when uniform */
} gen_zipf;

static inline int gen_zipf_init(gen_zipf *z, int64_t n, double s)
{
    z->n = n;
    z->cdf = NULL;
    if (s <= 0) return 0;
    if (!(z->cdf = malloc((size_t)n * sizeof *z->cdf))) return -1;
    double acc = 0;
    for (int64_t k = 0; k < n; k++) z->cdf[k] = acc += 1.0 / pow((double)(k + 1), s);
    for (int64_t k = 0; k < n; k++) z->cdf[k] /= acc;
    return 0;
}

static inline void gen_zipf_fini(gen_zipf *z) { free(z->cdf); }

/* a draw in 1..n */
static inline int64_t gen_zipf_draw(const gen_zipf *z, gen_rng *r)
{
    if (!z->cdf) return 1 + gen_below(r, z->n);
    double u = gen_double(r);
    int64_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] > u) hi = mid;
        else lo = mid + 1;
    }
    return lo + 1;
}

/* Sleep until row n is due at `rate` rows per second of wall-clock time
 * (flushing first, so that a reader sees the rows that are due). */
static inline void gen_pace(int64_t rate, uint64_t start_ns, int64_t n, FILE *const *out, int nout)
{
    uint64_t due = start_ns + (uint64_t)((double)n * 1e9 / (double)rate);
    uint64_t now = clock_mono_ns();
    if (now >= due) return;
    for (int k = 0; k < nout; k++)
        if (out[k]) fflush(out[k]);
    uint64_t wait = due - now;
    struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

static inline int gen_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* --part I/N: "I/N" with 0 <= I < N <= 1024 */
static inline int gen_parse_part(const char *s, int64_t *part, int64_t *nparts)
{
    char *end;
    errno = 0;
    long long i = s ? strtoll(s, &end, 10) : -1;
    if (!s || errno || end == s || *end != '/') return -1;
    const char *t = end + 1;
    long long n = strtoll(t, &end, 10);
    if (errno || end == t || *end || n < 1 || n > 1024 || i < 0 || i >= n) return -1;
    *part = i;
    *nparts = n;
    return 0;
}

static inline int gen_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

#endif
