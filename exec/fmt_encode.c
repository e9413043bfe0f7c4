/*
 * fmt_encode.c: values as text and the encoders.  Integers and doubles are
 * printed here without printf on their common paths (see "doubles as text"
 * below), and the CSV encoder inlines those paths per field, which is why
 * the text of values and the encoders share one file.  fmt_timestamp is a
 * thin wrapper of base/time.c.  The encoders (CSV, JSON lines, tables) turn
 * batches into text for sinks, subscribers and the shell.
 *
 * Not thread-safe: one encoder belongs to one caller at a time.
 */
#include "exec/fmt_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__SSE2__) /* baseline on x86-64; other targets use the scalar put_fixed */
#include <emmintrin.h>
#endif

/* ------------------------------------------------------------------ timestamps and integers as text */

size_t fmt_timestamp(int64_t ms, char buf[FMT_TS_BUF]) { return time_ts_print(ms, TIME_DATA, buf); }

/* "00" to "99": two digits a step, half the divisions of one at a time. */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

/* 10^0 .. 10^19, but 0 for 10^0: dec_len's table (see there). */
static const uint64_t dec_len_pow10[20] = {0ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
                                           10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
                                           100000000000ull, 1000000000000ull, 10000000000000ull,
                                           100000000000000ull, 1000000000000000ull, 10000000000000000ull,
                                           100000000000000000ull, 1000000000000000000ull,
                                           10000000000000000000ull};

/* The number of decimal digits of u (1 for 0), without a loop: t =
 * floor(bits * log10(2)) (1233 / 4096 is close enough for 64 bits) is the
 * digit count of 2^(bits-1) minus one, and u has one more when u >= 10^t.
 * The table's 0 for 10^0 makes 0..7 (t = 0) count one digit. */
static int dec_len(uint64_t u)
{
    int t = ((64 - __builtin_clzll(u | 1)) * 1233) >> 12;
    return t + (u >= dec_len_pow10[t]);
}

/* u in decimal at buf (room for 20 bytes; no NUL).  Returns the length.
 * Below 10^4 (keys, counts, the whole part of prices) two digits at a time
 * straight away; above, the length comes first, then the digits from the
 * last, two at a time. */
static size_t put_u64(char *buf, uint64_t u)
{
    if (u < 10000) {
        unsigned x = (unsigned)u, hi = x / 100, lo = x % 100;
        if (x < 10) {
            buf[0] = (char)('0' + x);
            return 1;
        }
        if (x < 100) {
            memcpy(buf, digit_pairs + 2 * x, 2);
            return 2;
        }
        size_t o = hi >= 10;
        if (o) memcpy(buf, digit_pairs + 2 * hi, 2);
        else buf[0] = (char)('0' + hi);
        memcpy(buf + o + 1, digit_pairs + 2 * lo, 2);
        return o + 3;
    }
    size_t n = (size_t)dec_len(u);
    char *p = buf + n;
    while (u >= 100) {
        uint64_t q = u / 100;
        p -= 2;
        memcpy(p, digit_pairs + 2 * (u - q * 100), 2);
        u = q;
    }
    if (u >= 10) memcpy(p - 2, digit_pairs + 2 * u, 2);
    else p[-1] = (char)('0' + u);
    return n;
}

/* An int64 in decimal; buf needs 21 bytes (no NUL).  Returns the length. */
static size_t put_i64(char *buf, int64_t v)
{
    buf[0] = '-';
    return (size_t)(v < 0) + put_u64(buf + (v < 0), v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

/* ------------------------------------------------------------------ doubles as text
 *
 * The reference is printf: "%.15g", then "%.16g", then "%.17g", the first
 * that reads back exactly (strtod rounds to nearest, ties to even).  That is
 * the shortest text that reads back, in %g's layout: fixed notation when the
 * exponent X of the (rounded) first digit is in -4 .. P-1, P the precision
 * that won; the fraction's trailing zeros dropped.  printf_double is that
 * loop, kept for what the paths below leave.
 *
 * fmt_double gets the same bytes without printf on two paths:
 *   - the double nearest to M / 10^4, 1e-4 <= |d| < 1e11, and zero
 *     (short_double, inline in CSV rows): prices, readings, anything typed
 *     with up to four decimals, whole numbers; one division tells, and M's
 *     digits are the text;
 *   - the rest of 2^-14 <= |d| < 2^50 with X in -4 .. 14 (fixed_double,
 *     called through other_double): exact integer arithmetic finds the
 *     digits printf would print at each precision and whether they read
 *     back.
 * Digits are made 8 at a time in one 64-bit word (digits8), or with SSE2
 * 16 at a time in one register (digits16, put_fixed17), and stored with
 * fixed-length copies, so fmt_double may write anywhere in
 * buf[0..FMT_DOUBLE_BUF), past the NUL too.  Doubles are binary64; integers may be either
 * endian (words are stored through to_le64). */

static size_t printf_double(double d, char buf[FMT_DOUBLE_BUF])
{
    int r = 0;
    for (int prec = 15; prec <= 17; prec++) {
        r = snprintf(buf, FMT_DOUBLE_BUF, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    return r < 0 ? 0 : (size_t)r;
}

__extension__ typedef unsigned __int128 u128;

/* 5^0 .. 5^21 */
static const uint64_t pow5_tab[22] = {1ull, 5ull, 25ull, 125ull, 625ull, 3125ull, 15625ull, 78125ull, 390625ull,
                                      1953125ull, 9765625ull, 48828125ull, 244140625ull, 1220703125ull,
                                      6103515625ull, 30517578125ull, 152587890625ull, 762939453125ull,
                                      3814697265625ull, 19073486328125ull, 95367431640625ull, 476837158203125ull};

static uint64_t to_le64(uint64_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(x);
#else
    return x;
#endif
}

/* The 8 decimal digits of x < 10^8 (leading zeros included) as one digit
 * (0..9) a byte, the first digit in the lowest byte, so that a little-endian
 * store writes them in order.  Lanes of one 64-bit word split the number:
 * two 4-digit halves in 32-bit lanes, each divided by 100 (x * 10486 >> 20
 * is x / 100 for x < 10^4), then four 2-digit values in 16-bit lanes, each
 * divided by 10 (x * 103 >> 10 is x / 10 for x < 100).  No lane's product
 * reaches the next lane's bits, and the masks drop what the shift brings
 * down from the lane above. */
static inline uint64_t digits8(uint32_t x)
{
    uint64_t v = x / 10000 | (uint64_t)(x % 10000) << 32;
    uint64_t h = (v * 10486 >> 20) & 0x0000007f0000007full;
    v = h | (v - h * 100) << 16;
    h = (v * 103 >> 10) & 0x000f000f000f000full;
    return h | (v - h * 10) << 8;
}

#if !defined(__SSE2__)
/* N's P digits (15 <= P <= 17, 10^(P-1) <= N < 10^P) in fixed notation,
 * the first digit's exponent X in -4 .. P-1, trailing zeros of the fraction
 * dropped: what "%.Pg" prints.  Returns the length; buf gets a NUL. */
static inline size_t put_fixed(char *buf, int neg, uint64_t N, int P, int X)
{
    /* tmp[2..2+P) are the digits; the whole of tmp is set, because the
     * copies below are of fixed length (a couple of moves each, where a
     * length-exact copy is a call). */
    char tmp[48];
    memset(tmp, '0', sizeof tmp);
    char *ds = tmp + 2;
    uint64_t hi = N / 100000000, top = hi / 100000000; /* N < 10^17: top < 10 */
    uint32_t lo = (uint32_t)(N - hi * 100000000), mid = (uint32_t)(hi - top * 100000000);
    uint64_t wm = digits8(mid), wl = digits8(lo), z = 0x3030303030303030ull;
    ds[P - 17] = (char)('0' + top); /* P < 17: top is 0 and lands before the digits */
    uint64_t t = to_le64(wm | z);
    memcpy(ds + P - 16, &t, 8);     /* P = 15: mid's leading 0 lands before them */
    t = to_le64(wl | z);
    memcpy(ds + P - 8, &t, 8);
    /* trailing zero digits: the top zero bytes of a word (mid is not 0
     * when P < 17, as N >= 10^(P-1)) */
    int tz = lo ? __builtin_clzll(wl) / 8 : mid ? 8 + __builtin_clzll(wm) / 8 : 16;
    int nd = P - tz;
    size_t o = 0;
    buf[0] = '-';
    o += (size_t)neg;
    if (X >= 0) {
        memcpy(buf + o, ds, 16); /* X + 1 <= 16 digits before the point */
        o += (size_t)X + 1;
        if (nd > X + 1) {
            buf[o++] = '.';
            memcpy(buf + o, ds + X + 1, 16); /* at most 16 after it */
            o += (size_t)(nd - X - 1);
        }
    } else {
        memcpy(buf + o, "0.000000", 8);
        o += (size_t)(1 - X); /* "0." and -X-1 zeros */
        memcpy(buf + o, ds, 24);
        o += (size_t)nd;
    }
    buf[o] = '\0';
    return o;
}

#endif

#if defined(__SSE2__)
/* 16 digits of x < 10^16 (leading zeros included) as ASCII in one SSE2
 * register, the first digit in byte 0: the same lane splitting as digits8,
 * on all 16 digits at once.  x's two 8-digit halves go in the 64-bit lanes
 * and are split into 4-digit values (x * 0xd1b71759 >> 45 is x / 10^4 for
 * x < 2^32), one in each 32-bit lane; those into 2-digit values in 16-bit
 * lanes (mulhi by 5243, then >> 3, is x / 100 for x < 10^4); those into
 * digits in bytes (mulhi by 6554 is x / 10 for x < 100). */
static inline __m128i digits16(uint64_t x)
{
    uint64_t hi = x / 100000000;
    __m128i v = _mm_unpacklo_epi64(_mm_cvtsi64_si128((long long)hi), _mm_cvtsi64_si128((long long)(x - hi * 100000000)));
    /* GCC turns a multiplication by 100 or 10 into six shifts and adds;
     * one pmullw does, so the factors are hidden from it */
    __m128i k100 = _mm_set1_epi16(100), k10 = _mm_set1_epi16(10);
    __asm__("" : "+x"(k100), "+x"(k10));
    __m128i q = _mm_srli_epi64(_mm_mul_epu32(v, _mm_set1_epi32((int)0xd1b71759)), 45);
    __m128i r = _mm_sub_epi32(v, _mm_mul_epu32(q, _mm_set1_epi32(10000)));
    v = _mm_or_si128(q, _mm_slli_epi64(r, 32));
    q = _mm_srli_epi16(_mm_mulhi_epu16(v, _mm_set1_epi16(5243)), 3);
    r = _mm_sub_epi16(v, _mm_mullo_epi16(q, k100));
    v = _mm_or_si128(q, _mm_slli_epi32(r, 16));
    q = _mm_mulhi_epu16(v, _mm_set1_epi16(6554));
    r = _mm_sub_epi16(v, _mm_mullo_epi16(q, k10));
    return _mm_or_si128(_mm_or_si128(q, _mm_slli_epi16(r, 8)), _mm_set1_epi8('0'));
}

/* lead_mask[k]: bytes 0 .. k-1 set (k <= 15); put_fixed17's masks. */
static const union {
    uint8_t b[16][16];
    __m128i v[16];
} lead_mask = {{
#define LM_(k) {(k) > 0 ? 255 : 0, (k) > 1 ? 255 : 0, (k) > 2 ? 255 : 0, (k) > 3 ? 255 : 0, (k) > 4 ? 255 : 0, \
    (k) > 5 ? 255 : 0, (k) > 6 ? 255 : 0, (k) > 7 ? 255 : 0, (k) > 8 ? 255 : 0, (k) > 9 ? 255 : 0,              \
    (k) > 10 ? 255 : 0, (k) > 11 ? 255 : 0, (k) > 12 ? 255 : 0, (k) > 13 ? 255 : 0, (k) > 14 ? 255 : 0, 0}
    LM_(0), LM_(1), LM_(2), LM_(3), LM_(4), LM_(5), LM_(6), LM_(7), LM_(8), LM_(9), LM_(10), LM_(11), LM_(12),
    LM_(13), LM_(14), LM_(15)
#undef LM_
}};

/* put_fixed for N with 17 digits (10^16 <= N < 10^17; fewer digits come
 * with zeros appended, which the trimming drops again), X in -4 .. 14.
 * The first digit is stored alone, the other 16 as one register: for X <
 * 0 after "0.000" cut to length; for X >= 0 with the point after its first
 * X digits, by blending the register with itself moved up one byte (the
 * byte moved out, the last digit, is stored alone).  Returns the length;
 * buf gets a NUL.  Writes at most buf[0..24). */
static inline size_t put_fixed17(char *buf, int neg, uint64_t N, int X)
{
    uint64_t top = N / 10000000000000000ull;
    __m128i d = digits16(N - top * 10000000000000000ull);
    /* digits to the last that is not '0': 1 + the highest such byte + 1 */
    unsigned nz = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_set1_epi8('0'))) ^ 0xffffu;
    int nd = 32 - __builtin_clz(nz << 1 | 1);
    size_t o = (size_t)neg;
    buf[0] = '-';
    if (X < 0) {
        memcpy(buf + o, "0.000000", 8);
        o += (size_t)(1 - X); /* "0." and -X-1 zeros */
        buf[o] = (char)('0' + top);
        _mm_storeu_si128((__m128i *)(void *)(buf + o + 1), d);
        o += (size_t)nd;
    } else {
        __m128i lo = lead_mask.v[X], hi = lead_mask.v[X + 1];
        __m128i moved = _mm_andnot_si128(hi, _mm_slli_si128(d, 1));
        __m128i point = _mm_and_si128(_mm_andnot_si128(lo, hi), _mm_set1_epi8('.'));
        buf[o] = (char)('0' + top);
        _mm_storeu_si128((__m128i *)(void *)(buf + o + 1), _mm_or_si128(_mm_or_si128(_mm_and_si128(d, lo), moved), point));
        buf[o + 17] = (char)(_mm_extract_epi16(d, 7) >> 8);
        o += (size_t)(nd > X + 1 ? nd + 1 : X + 1);
    }
    buf[o] = '\0';
    return o;
}
#endif

/* M / 10^4 (0 <= M < 10^15) as "%.15g" prints the double nearest to it
 * (see fmt_double): the whole part, then the four decimals to the last
 * that is not 0.  The last 8 digits come from one digits8 word: the whole
 * part's in its low 4 bytes, the decimals' in its high 4. */
static inline size_t put_short(char *buf, int neg, uint64_t M)
{
    const uint64_t z = 0x3030303030303030ull;
    uint64_t dw = digits8((uint32_t)(M < 100000000 ? M : M % 100000000)), t;
    size_t o = (size_t)neg;
    buf[0] = '-';
    if (M < 100000000) {
        /* the whole part's leading zeros, but the last of them (for 0.x):
         * the sentinel bit in byte 3 stops the count there */
        unsigned lead = (unsigned)__builtin_ctzll(dw | 1ull << 24) & ~7u; /* in bits */
        t = to_le64((dw | z) >> lead);
        memcpy(buf + o, &t, 8); /* 4 - lead / 8 digits count */
        o += 4 - (lead >> 3);
    } else {
        o += put_u64(buf + o, M / 10000);
    }
    if (dw >> 32) {
        buf[o] = '.';
        t = to_le64(dw >> 32 | z);
        memcpy(buf + o + 1, &t, 8);
        o += 5 - ((unsigned)__builtin_clzll(dw) >> 3); /* '.' and the decimals to the last non-zero */
    }
    buf[o] = '\0';
    return o;
}

/* 10^-4 .. 10^15 as doubles: fixed_double's exact exponent.  Those below 1
 * are not exact, but each rounds up (0.0001 is 1.00000000000000000479e-4,
 * and so on), so a >= 10^k holds exactly when a is at least the real 10^k:
 * no double lies between 10^k and its nearest double. */
static const double dbl_pow10[20] = {1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5,
                                     1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* One precision's candidate: V = T + f / 2^sh exactly (see fixed_double),
 * T with 17 digits, f < 2^sh, sh <= 46.  The P = 17 - log10(div) digits
 * printf prints are N = T / div rounded half-even on the exact rest R
 * (V - N * div, times 2^sh, against W = div * 2^sh): it rounds up when
 * 2R > W, or 2R = W and N is odd, that is when 2R + (N & 1) > W.  They
 * read back as d when their distance D to V is within half an ulp of d
 * (lim: the ulp at this scale, times 2^sh), a tie going to d when m is
 * even: 2D <= lim, or < when m is odd, that is 2D < lim + !(m & 1).
 * (Below a power of two the double under d is half as far, but the powers
 * of two here, 2^-14 .. 2^49, have at most 15 significant digits: they
 * print exactly, at distance 0.)  W, R and 2D are below 2^54: 64 bits do. */
typedef struct cand {
    uint64_t N; /* rounded */
    int ok;     /* reads back as d */
} cand;

static inline cand candidate(uint64_t T, unsigned div, uint64_t f, int sh, uint64_t lim, uint64_t m)
{
    uint64_t N = T / div;
    uint64_t W = (uint64_t)div << sh, R = (T - N * div) << sh | f;
    int up = 2 * R + (N & 1) > W;
    uint64_t D = up ? W - R : R;
    return (cand){N + (uint64_t)up, 2 * D < lim + !(m & 1)};
}

/* d = +-a, a = m * 2^-s (2^52 <= m < 2^53, 3 <= s <= 66, so 2^-14 <= a <
 * 2^50); see the top of this section.  Returns 0 unless X is in -4 .. 14. */
static inline size_t fixed_double(double a, uint64_t m, int s, int neg, char *buf)
{
    /* E = floor(log10(a)): floor((52 - s) * log10(2)) (78913 / 2^18 is
     * close enough for |52 - s| <= 66), plus one when a reaches the next
     * power of ten.  Then V = a * 10^q, q = 16 - E, is in 10^16 .. 10^17:
     * T = floor(V) has 17 digits.  V = m * 5^q / 2^sh with sh = s - q in
     * 1 .. 46 for E in -4 .. 14 (2^(52-s) <= a < 10^(E+1) bounds it below,
     * 10^E <= a < 2^(53-s) above): m * 5^q < 2^53 * 5^20 fits 128 bits,
     * and the fraction f = V - T, times 2^sh, fits 64. */
    int E = ((52 - s) * 78913) >> 18; /* -5 .. 14 here */
    E += a >= dbl_pow10[E + 5];
    if (E < -4 || E > 14) return 0;
    int q = 16 - E, sh = s - q;
    u128 y = (u128)m * pow5_tab[q];
    uint64_t lo = (uint64_t)y, hi = (uint64_t)(y >> 64);
    uint64_t T = lo >> sh | hi << (64 - sh), f = lo & ((1ull << sh) - 1);
    uint64_t lim = pow5_tab[q]; /* an ulp of a is 10^q / 2^s = 5^q / 2^sh in V */
    /* When 15 digits read back, so do 16 (the 16-digit candidate is at
     * least as close, and the bound is the same on both sides), so 15 is
     * tried only after 16 succeeds.  17 digits always read back: T rounded
     * half-even on f. */
    cand c = candidate(T, 10, f, sh, lim, m);
    int P = 16;
    if (c.ok) {
        cand c15 = candidate(T, 100, f, sh, lim, m);
        if (c15.ok) c = c15, P = 15;
    } else {
        c.N = T + (2 * f + (T & 1) > 1ull << sh);
        P = 17;
    }
    if (c.N == dec_len_pow10[P]) { /* rounded up to 10^P: one digit less, X one more */
        c.N /= 10;
        if (++E >= P) return 0;    /* printf's exponent notation */
    }
#if defined(__SSE2__)
    return put_fixed17(buf, neg, c.N * (P == 17 ? 1 : P == 16 ? 10 : 100), E);
#else
    return put_fixed(buf, neg, c.N, P, E);
#endif
}

/* The double nearest to M / 10^4, 0 < M < 10^15, 10^-4 <= a < 10^11
 * (prices, readings, whatever was typed with a few decimal places, and
 * whole numbers): M < 2^53 and 10^4 are exact doubles, so the division is
 * correctly rounded and gives a exactly when a is that nearest double.
 * M / 10^4 has at most 15 significant digits, so "%.15g" prints them (any
 * 15-digit decimal survives the trip through the nearest double), and its
 * X is in -4 .. 10.  Returns the length, or 0 when d is not such a double.
 * Inline: it is most of what CSV rows of measurements print. */
static inline size_t short_double(double d, char *buf)
{
    double a = fabs(d);
    if (!(a < 1e11)) return 0; /* NaN too */
    /* Below 10^-4, M is 0 or 1: 1 / 10^4 is not a, and 0 is a only for
     * zero, which put_short prints as "%.15g" does ("0", "-0"). */
    int64_t M = (int64_t)(a * 1e4 + 0.5);
    if ((double)M / 1e4 != a) return 0;
    return put_short(buf, signbit(d) != 0, (uint64_t)M);
}

/* fmt_double for what short_double leaves. */
__attribute__((noinline)) static size_t other_double(double d, char *buf)
{
    uint64_t bits;
    memcpy(&bits, &d, 8);
    int neg = (int)(bits >> 63);
    unsigned e2 = (unsigned)(bits >> 52) & 0x7ff;
    if (e2 - 1009u < 64u) { /* 2^-14 <= a < 2^50 */
        size_t n = fixed_double(fabs(d), (bits & ((1ull << 52) - 1)) | (1ull << 52), 1075 - (int)e2, neg, buf);
        if (n) return n;
    } else if (e2 == 0x7ff) {
        const char *special = bits << 12 ? "NaN" : neg ? "-Infinity" : "Infinity";
        size_t n = strlen(special);
        memcpy(buf, special, n + 1);
        return n;
    } else if (!(bits << 1)) {
        if (neg) memcpy(buf, "-0", 3); /* "%.15g" of -0 and 0 */
        else memcpy(buf, "0", 2);
        return (size_t)neg + 1;
    }
    return printf_double(d, buf);
}

size_t fmt_double(double d, char buf[FMT_DOUBLE_BUF])
{
    size_t n = short_double(d, buf);
    return n ? n : other_double(d, buf);
}

enum { VAL_TEXT_MAX = FMT_TS_BUF > FMT_DOUBLE_BUF ? FMT_TS_BUF : FMT_DOUBLE_BUF };

/* The text of a value that is not TEXT into p (room for VAL_TEXT_MAX
 * bytes; a NUL may follow it); returns its length. */
static size_t val_text_at(const val *v, char *p)
{
    switch (v->type) {
    case TY_NULL: memcpy(p, "NULL", 4); return 4;
    case TY_BOOL:
        if (v->i) { memcpy(p, "true", 4); return 4; }
        memcpy(p, "false", 5);
        return 5;
    case TY_DOUBLE: return fmt_double(v->d, p);
    case TY_TIMESTAMP: return fmt_timestamp(v->i, p);
    default: return put_i64(p, v->i);
    }
}

int fmt_val_text(const val *v, sbuf *out)
{
    if (v->type == TY_TEXT) return sbuf_add(out, v->s, v->len);
    if (sbuf_reserve(out, VAL_TEXT_MAX)) return XE_NOMEM;
    out->len += val_text_at(v, out->p + out->len);
    out->p[out->len] = '\0';
    return 0;
}

/* ------------------------------------------------------------------ encoders */

struct fmt_encoder {
    fmt_kind kind;
    fmt_enc_opts o;
    int ncols;
    char **names;
    sql_type *types;
    char delim;
    int started;      /* header written (or widths fixed) */
    int64_t nrows;    /* rows written since the last finish */
    int *width;       /* TABLE: column widths; VERTICAL: [0] is the name width */
    batch kept;       /* TABLE without stream: rows until finish */
    sbuf tmp;
};

int fmt_encoder_new(fmt_kind kind, const fmt_schema *schema, const fmt_enc_opts *opts, fmt_encoder **out)
{
    *out = NULL;
    if (kind > FMT_VERTICAL || schema->ncols < 0 || schema->ncols > 65535) return XE_INVAL;
    fmt_encoder *e = calloc(1, sizeof *e);
    if (!e) return XE_NOMEM;
    e->kind = kind;
    if (opts) e->o = *opts;
    e->delim = e->o.delim ? e->o.delim : ',';
    e->ncols = schema->ncols;
    sbuf_init(&e->tmp);
    e->width = calloc((size_t)schema->ncols + 1, sizeof *e->width);
    if (!e->width || batch_init(&e->kept, schema->ncols, 16) < 0) goto nomem;
    if (schema_copy(schema, &e->names, &e->types) < 0) goto nomem;
    *out = e;
    return 0;
nomem:
    fmt_encoder_free(e);
    return XE_NOMEM;
}

void fmt_encoder_free(fmt_encoder *e)
{
    if (!e) return;
    schema_free(e->names, e->types, e->ncols);
    free(e->width);
    batch_fini(&e->kept);
    sbuf_fini(&e->tmp);
    free(e);
}

/* CSV */

static int csv_field(sbuf *out, const char *s, size_t n, char delim, int force_quotes)
{
    int quote = force_quotes;
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == delim || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
    if (!quote) return sbuf_add(out, s, n);
    if (sbuf_addc(out, '"') < 0) return XE_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *q = memchr(s + i, '"', n - i);
        size_t run = q ? (size_t)(q - s) - i : n - i;
        if (sbuf_add(out, s + i, run) < 0) return XE_NOMEM;
        i += run;
        if (q && sbuf_add(out, "\"\"", 2) < 0) return XE_NOMEM;
    }
    return sbuf_addc(out, '"');
}

static int csv_header_row(fmt_encoder *e, sbuf *out)
{
    for (int c = 0; c < e->ncols; c++) {
        if (c && sbuf_addc(out, e->delim) < 0) return XE_NOMEM;
        if (csv_field(out, e->names[c], strlen(e->names[c]), e->delim, 0) < 0) return XE_NOMEM;
    }
    return sbuf_addc(out, '\n');
}

/* Rows written straight into out's reserved room, but for TEXT fields:
 * through a local pointer (stores through out->p could alias out->len),
 * out->len is set once a row. */
static int csv_rows(fmt_encoder *e, const batch *b, sbuf *out)
{
    size_t row_max = (size_t)e->ncols * (VAL_TEXT_MAX + 1) + 1;
    int ncols = e->ncols;
    char delim = e->delim;
    for (int r = 0; r < b->nrows; r++) {
        const val *row = batch_row(b, r);
        if (out->len + row_max >= out->cap && sbuf_reserve(out, row_max) < 0) return XE_NOMEM;
        char *p = out->p + out->len;
        for (int c = 0; c < ncols; c++, *p++ = delim) { /* the last delimiter becomes the '\n' */
            const val *v = &row[c];
            /* integers and doubles first: the columns of aggregates */
            unsigned t = v->type;
            if (t - TY_INT <= (unsigned)(TY_BIGINT - TY_INT)) {
                uint64_t u = (uint64_t)v->i; /* a local: the stores below could alias v */
                if (u < 100) { /* counts, flags, keys: no call */
                    memcpy(p, digit_pairs + 2 * u + (u < 10), 2);
                    p += 1 + (u >= 10);
                } else if (u < 10000) {
                    unsigned x = (unsigned)u, h = x / 100;
                    p[0] = digit_pairs[2 * h]; /* overwritten when h < 10 */
                    p += h >= 10;
                    p[0] = digit_pairs[2 * h + 1];
                    memcpy(p + 1, digit_pairs + 2 * (x - h * 100), 2);
                    p += 3;
                } else {
                    p += put_i64(p, (int64_t)u);
                }
            } else if (t == TY_DOUBLE) {
                size_t n = short_double(v->d, p);
                p += n ? n : other_double(v->d, p);
            } else if (t == TY_TEXT) {
                out->len = (size_t)(p - out->p);
                if (csv_field(out, v->s, v->len, delim, v->len == 0) < 0 || sbuf_reserve(out, row_max) < 0)
                    return XE_NOMEM;
                p = out->p + out->len;
            } else if (t != TY_NULL) {
                p += val_text_at(v, p);
            }
        }
        if (ncols) p[-1] = '\n';
        else *p++ = '\n';
        *p = '\0';
        out->len = (size_t)(p - out->p);
    }
    return 0;
}

/* JSON */

/* Length of the valid UTF-8 sequence at s[0..n), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) k = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) k = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) k = 4, cp = c & 0x07;
    else return 0;
    if (n < k) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((k == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return k;
}

/* A JSON string; invalid UTF-8 bytes become U+FFFD. */
static int json_str(sbuf *out, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (sbuf_addc(out, '"') < 0) return XE_NOMEM;
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\') run++;
        if (run > i && sbuf_add(out, s + i, run - i) < 0) return XE_NOMEM;
        i = run;
        if (i >= n) break;
        unsigned char c = s[i];
        int rc;
        if (c == '"') rc = sbuf_add(out, "\\\"", 2);
        else if (c == '\\') rc = sbuf_add(out, "\\\\", 2);
        else if (c == '\n') rc = sbuf_add(out, "\\n", 2);
        else if (c == '\r') rc = sbuf_add(out, "\\r", 2);
        else if (c == '\t') rc = sbuf_add(out, "\\t", 2);
        else if (c < 0x20) rc = sbuf_printf(out, "\\u%04x", c);
        else {
            size_t k = utf8_len(s + i, n - i);
            if (k) {
                rc = sbuf_add(out, s + i, k);
                i += k;
                if (rc < 0) return XE_NOMEM;
                continue;
            }
            rc = sbuf_add(out, "\xef\xbf\xbd", 3);
        }
        if (rc < 0) return XE_NOMEM;
        i++;
    }
    return sbuf_addc(out, '"');
}

static int json_rows(fmt_encoder *e, const batch *b, sbuf *out)
{
    char buf[FMT_TS_BUF];
    for (int r = 0; r < b->nrows; r++) {
        const val *row = batch_row(b, r);
        if (sbuf_addc(out, '{') < 0) return XE_NOMEM;
        for (int c = 0; c < e->ncols; c++) {
            const val *v = &row[c];
            if ((c && sbuf_addc(out, ',') < 0) || json_str(out, e->names[c], strlen(e->names[c])) < 0 ||
                sbuf_addc(out, ':') < 0)
                return XE_NOMEM;
            int rc;
            switch (v->type) {
            case TY_NULL: rc = sbuf_add(out, "null", 4); break;
            case TY_TEXT: rc = json_str(out, v->s, v->len); break;
            case TY_TIMESTAMP: rc = json_str(out, buf, fmt_timestamp(v->i, buf)); break;
            case TY_DOUBLE: rc = isfinite(v->d) ? fmt_val_text(v, out) : sbuf_add(out, "null", 4); break;
            default: rc = fmt_val_text(v, out); break;
            }
            if (rc < 0) return XE_NOMEM;
        }
        if (sbuf_add(out, "}\n", 2) < 0) return XE_NOMEM;
    }
    return 0;
}

/* Tables */

static int right_aligned(sql_type t) { return t == TY_INT || t == TY_BIGINT || t == TY_DOUBLE || t == TY_INTERVAL; }

/* Terminal-safe text of a value into e->tmp: control bytes escaped. */
static int cell_text(fmt_encoder *e, const val *v)
{
    sbuf_reset(&e->tmp);
    if (v->type != TY_TEXT) return fmt_val_text(v, &e->tmp);
    for (uint32_t i = 0; i < v->len; i++) {
        unsigned char c = (unsigned char)v->s[i];
        int rc;
        if (c == '\n') rc = sbuf_add(&e->tmp, "\\n", 2);
        else if (c == '\r') rc = sbuf_add(&e->tmp, "\\r", 2);
        else if (c == '\t') rc = sbuf_add(&e->tmp, "\\t", 2);
        else if (c < 0x20 || c == 0x7f) rc = sbuf_printf(&e->tmp, "\\x%02x", c);
        else rc = sbuf_addc(&e->tmp, (char)c);
        if (rc < 0) return XE_NOMEM;
    }
    return 0;
}

/* Display width: code points (continuation bytes do not count). */
static int text_width(const char *s, size_t n)
{
    int w = 0;
    for (size_t i = 0; i < n; i++) w += ((unsigned char)s[i] & 0xc0) != 0x80;
    return w;
}

static int pad(sbuf *out, int n)
{
    if (n <= 0) return 0;
    if (sbuf_reserve(out, (size_t)n) < 0) return XE_NOMEM;
    memset(out->p + out->len, ' ', (size_t)n);
    out->len += (size_t)n;
    out->p[out->len] = '\0';
    return 0;
}

/* Ends the line in out that starts at `start`, without trailing spaces. */
static int end_line(sbuf *out, size_t start)
{
    while (out->len > start && out->p[out->len - 1] == ' ') out->len--;
    return sbuf_addc(out, '\n');
}

static int measure(fmt_encoder *e, const batch *b)
{
    for (int c = 0; c < e->ncols; c++) {
        int w = text_width(e->names[c], strlen(e->names[c]));
        if (w > e->width[c]) e->width[c] = w;
    }
    for (int r = 0; r < b->nrows; r++) {
        for (int c = 0; c < e->ncols; c++) {
            if (cell_text(e, &batch_row(b, r)[c]) < 0) return XE_NOMEM;
            int w = text_width(e->tmp.p, e->tmp.len);
            if (w > e->width[c]) e->width[c] = w;
        }
    }
    return 0;
}

static int table_header(fmt_encoder *e, sbuf *out)
{
    if (e->o.no_header) return 0;
    size_t start = out->len;
    for (int c = 0; c < e->ncols; c++) {
        int w = text_width(e->names[c], strlen(e->names[c])), left = (e->width[c] - w) / 2;
        if ((c && sbuf_addc(out, '|') < 0) || pad(out, 1 + left) < 0 || sbuf_adds(out, e->names[c]) < 0 ||
            pad(out, e->width[c] - w - left + 1) < 0)
            return XE_NOMEM;
    }
    if (end_line(out, start) < 0) return XE_NOMEM;
    for (int c = 0; c < e->ncols; c++) {
        if (c && sbuf_addc(out, '+') < 0) return XE_NOMEM;
        for (int k = 0; k < e->width[c] + 2; k++)
            if (sbuf_addc(out, '-') < 0) return XE_NOMEM;
    }
    return sbuf_addc(out, '\n');
}

static int table_rows(fmt_encoder *e, const batch *b, sbuf *out)
{
    for (int r = 0; r < b->nrows; r++) {
        size_t start = out->len;
        for (int c = 0; c < e->ncols; c++) {
            const val *v = &batch_row(b, r)[c];
            if (cell_text(e, v) < 0) return XE_NOMEM;
            int fill = e->width[c] - text_width(e->tmp.p, e->tmp.len);
            if (fill < 0) fill = 0; /* streaming: a wider value overflows */
            int right = right_aligned(e->types[c]) && v->type != TY_NULL;
            if ((c && sbuf_addc(out, '|') < 0) || pad(out, 1 + (right ? fill : 0)) < 0 ||
                sbuf_add(out, e->tmp.p, e->tmp.len) < 0 || pad(out, (right ? 0 : fill) + 1) < 0)
                return XE_NOMEM;
        }
        if (end_line(out, start) < 0) return XE_NOMEM;
    }
    return 0;
}

static int vertical_rows(fmt_encoder *e, const batch *b, sbuf *out)
{
    int namew = 0;
    for (int c = 0; c < e->ncols; c++) {
        int w = text_width(e->names[c], strlen(e->names[c]));
        if (w > namew) namew = w;
    }
    for (int r = 0; r < b->nrows; r++) {
        int valw = 0;
        for (int c = 0; c < e->ncols; c++) {
            if (cell_text(e, &batch_row(b, r)[c]) < 0) return XE_NOMEM;
            int w = text_width(e->tmp.p, e->tmp.len);
            if (w > valw) valw = w;
        }
        size_t start = out->len;
        if (sbuf_printf(out, "-[ RECORD %lld ]", (long long)(e->nrows + r + 1)) < 0) return XE_NOMEM;
        while (out->len - start < (size_t)(namew + 3 + valw))
            if (sbuf_addc(out, '-') < 0) return XE_NOMEM;
        if (sbuf_addc(out, '\n') < 0) return XE_NOMEM;
        for (int c = 0; c < e->ncols; c++) {
            if (cell_text(e, &batch_row(b, r)[c]) < 0) return XE_NOMEM;
            start = out->len;
            if (sbuf_adds(out, e->names[c]) < 0 ||
                pad(out, namew - text_width(e->names[c], strlen(e->names[c]))) < 0 || sbuf_add(out, " | ", 3) < 0 ||
                sbuf_add(out, e->tmp.p, e->tmp.len) < 0 || end_line(out, start) < 0)
                return XE_NOMEM;
        }
    }
    return 0;
}

static int start(fmt_encoder *e, const batch *first, sbuf *out)
{
    e->started = 1;
    switch (e->kind) {
    case FMT_CSV: return e->o.no_header ? 0 : csv_header_row(e, out);
    case FMT_TABLE:
        if (measure(e, first) < 0) return XE_NOMEM;
        return table_header(e, out);
    default: return 0;
    }
}

int fmt_encode(fmt_encoder *e, const batch *b, sbuf *out)
{
    if (b->nrows == 0) return 0;
    if (b->ncols != e->ncols) return XE_INVAL;
    if (e->kind == FMT_TABLE && !e->o.stream) {
        for (int r = 0; r < b->nrows; r++)
            if (batch_append_row(&e->kept, batch_row(b, r)) < 0) return XE_NOMEM;
        return 0;
    }
    if (!e->started && start(e, b, out) < 0) return XE_NOMEM;
    int rc;
    switch (e->kind) {
    case FMT_CSV: rc = csv_rows(e, b, out); break;
    case FMT_JSON: rc = json_rows(e, b, out); break;
    case FMT_TABLE: rc = table_rows(e, b, out); break;
    default: rc = vertical_rows(e, b, out); break;
    }
    e->nrows += b->nrows;
    return rc;
}

int fmt_encode_finish(fmt_encoder *e, sbuf *out)
{
    int rc = 0;
    if (e->kind == FMT_TABLE && !e->o.stream) {
        rc = start(e, &e->kept, out);
        if (rc == 0) rc = table_rows(e, &e->kept, out);
        e->nrows += e->kept.nrows;
        batch_reset(&e->kept);
    } else if (!e->started) {
        rc = start(e, &e->kept, out); /* kept is empty here: the header alone */
    }
    if (rc == 0 && e->kind == FMT_TABLE && !e->o.no_footer)
        rc = sbuf_printf(out, "(%lld row%s)\n", (long long)e->nrows, e->nrows == 1 ? "" : "s");
    e->started = 0;
    e->nrows = 0;
    memset(e->width, 0, (size_t)e->ncols * sizeof *e->width);
    return rc;
}

int fmt_table(const fmt_schema *schema, const batch *b, sbuf *out)
{
    fmt_encoder *e;
    int rc = fmt_encoder_new(FMT_TABLE, schema, NULL, &e);
    if (rc < 0) return rc;
    rc = start(e, b, out);
    if (rc == 0) rc = table_rows(e, b, out);
    e->nrows = b->nrows;
    if (rc == 0) rc = sbuf_printf(out, "(%lld row%s)\n", (long long)e->nrows, e->nrows == 1 ? "" : "s");
    fmt_encoder_free(e);
    return rc;
}
