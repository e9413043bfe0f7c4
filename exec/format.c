/*
 * format.c: CSV and JSON-lines decoders, value text, CSV/JSON/table encoders.
 * The rules users see are in format.h.
 *
 * Decoding runs in two layers.  The line layer (fmt_decode) cuts the input at
 * '\n', carrying a partial line over to the next chunk in `carry` and giving
 * up on (and skipping) a line as soon as it passes max_line, so memory stays
 * bounded whatever comes in.  The record layer (csv_line, json_line) turns one
 * line into a row in the reusable `row` array, whose TEXT values point into the
 * decoder's field buffer or the Jansson object, and only a row that converted
 * completely is copied into the caller's batch.  A CSV line that ends inside a
 * quoted field is kept in `rec` (`open`), and each next line is added to it
 * and the split goes on where it stopped (csv_split's resume), so a record of
 * k lines costs its bytes once, not k times; the common line never gets there.
 *
 * Not thread-safe: one decoder or encoder belongs to one caller at a time.
 */
#include "exec/format.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__SSE2__) /* baseline on x86-64; other targets use the scalar put_fixed */
#include <emmintrin.h>
#endif

/* ------------------------------------------------------------------ small helpers */

/* The schema's names and types, copied (ncols + 1 entries, zeroed, so that
 * callers may size per-column arrays the same way).  0 or XE_NOMEM; on
 * failure, what was copied is left for schema_free. */
static int schema_copy(const fmt_schema *s, char ***names, sql_type **types)
{
    *names = calloc((size_t)s->ncols + 1, sizeof **names);
    *types = calloc((size_t)s->ncols + 1, sizeof **types);
    if (!*names || !*types) return XE_NOMEM;
    for (int c = 0; c < s->ncols; c++) {
        if (!((*names)[c] = strdup(s->names[c]))) return XE_NOMEM;
        (*types)[c] = s->types[c];
    }
    return 0;
}

static void schema_free(char **names, sql_type *types, int ncols)
{
    for (int c = 0; names && c < ncols; c++) free(names[c]);
    free(names);
    free(types);
}

int fmt_kind_parse(const char *name, fmt_kind *out)
{
    static const struct { const char *name; fmt_kind k; } names[] = {
        {"csv", FMT_CSV}, {"json", FMT_JSON}, {"jsonl", FMT_JSON}, {"table", FMT_TABLE}, {"vertical", FMT_VERTICAL},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(name, names[i].name) == 0) {
            *out = names[i].k;
            return 0;
        }
    }
    return XE_INVAL;
}

const char *fmt_kind_name(fmt_kind k)
{
    switch (k) {
    case FMT_CSV: return "csv";
    case FMT_JSON: return "json";
    case FMT_TABLE: return "table";
    case FMT_VERTICAL: return "vertical";
    }
    return "?";
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

static void trim(const char **s, size_t *n)
{
    while (*n && is_space(**s)) (*s)++, (*n)--;
    while (*n && is_space((*s)[*n - 1])) (*n)--;
}

/* The value as it appears in a message: quoted, at most 40 bytes, with
 * unprintable bytes escaped. */
static void quote_for_msg(const char *s, size_t n, char *buf, size_t cap)
{
    size_t o = 0, shown = n > 40 ? 40 : n;
    buf[o++] = '\'';
    for (size_t i = 0; i < shown && o + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
        else buf[o++] = (char)c;
    }
    if (shown < n && o + 5 < cap) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '\'';
    buf[o] = '\0';
}

/* Decimal int64; 0, -1 not a number, -2 out of range. */
static int parse_i64(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    if (i == n) return -1;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, x = 0;
    int range = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (lim - d) / 10) range = 1;
        else x = x * 10 + d;
    }
    if (range) return -2;
    if (!neg) *out = (int64_t)x;
    else *out = x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x;
    return 0;
}

/* ------------------------------------------------------------------ timestamps */

int fmt_parse_timestamp(const char *s, size_t n, int64_t *ms)
{
    return time_ts_parse(s, n, TIME_DATA, ms) ? XE_INPUT : 0;
}

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

/* ------------------------------------------------------------------ values from text */

static int why_not(char *why, size_t cap, const char *s, size_t n, const char *what, sql_type t)
{
    char q[200];
    quote_for_msg(s, n, q, sizeof q);
    const char *a = !strcmp(what, "is not") && t != TY_NULL ? sql_type_article(t) : NULL;
    if (why && cap) snprintf(why, cap, "%s %s%s%s %s", q, what, a ? " " : "", a ? a : "", sql_type_name(t));
    return XE_INPUT;
}

/* [+-]digits[.digits] with at most 15 digits: m / 10^k with m and 10^k
 * exact doubles, and IEEE division rounds exactly as strtod does.  -1 for
 * anything else (the caller asks strtod). */
static int parse_decimal(const char *s, size_t n, double *out)
{
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = 0;
    int neg = 0, nd = 0, frac = 0, dot = 0;
    uint64_t m = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    for (; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            if (++nd > 15) return -1;
            m = m * 10 + (uint64_t)(c - '0');
            frac += dot;
        } else if (c == '.' && !dot)
            dot = 1;
        else
            return -1;
    }
    if (!nd) return -1;
    double d = (double)m / p10[frac];
    *out = neg ? -d : d;
    return 0;
}

static int parse_double(const char *s, size_t n, double *out, char *why, size_t cap)
{
    if (parse_decimal(s, n, out) == 0) return 0;
    char tmp[512];
    if (n >= sizeof tmp) return why_not(why, cap, s, n, "is not", TY_DOUBLE);
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    /* strtod would accept "inf", "nan" and hex; refuse the first two. */
    for (size_t i = 0; i < n; i++) {
        char c = tmp[i];
        if (c == 'i' || c == 'I' || c == 'n' || c == 'N') return why_not(why, cap, s, n, "is not", TY_DOUBLE);
    }
    char *end;
    errno = 0;
    double d = strtod(tmp, &end);
    if (end == tmp || *end) return why_not(why, cap, s, n, "is not", TY_DOUBLE);
    if (errno == ERANGE && isinf(d)) return why_not(why, cap, s, n, "is out of range for", TY_DOUBLE);
    *out = d;
    return 0;
}

static int parse_bool(const char *s, size_t n, int64_t *out)
{
    static const char *const yes[] = {"true", "t", "yes", "y", "1", "on"};
    static const char *const no[] = {"false", "f", "no", "n", "0", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (n == strlen(yes[i]) && strncasecmp(s, yes[i], n) == 0) return *out = 1, 0;
        if (n == strlen(no[i]) && strncasecmp(s, no[i], n) == 0) return *out = 0, 0;
    }
    return -1;
}

int fmt_parse_value(sql_type t, const char *s, size_t n, int empty_is_null, val *out, char *why, size_t whylen)
{
    if (t == TY_TEXT) {
        *out = n || !empty_is_null ? val_text(s, (uint32_t)n) : val_null();
        if (n > UINT32_MAX - 1) return why_not(why, whylen, s, n, "is too long for", t);
        return 0;
    }
    trim(&s, &n);
    *out = val_null();
    if (n == 0) return 0;
    int64_t i;
    switch (t) {
    case TY_INT:
    case TY_BIGINT:
    case TY_INTERVAL: {
        int rc = parse_i64(s, n, &i);
        if (rc == -2) return why_not(why, whylen, s, n, "is out of range for", t);
        if (rc < 0) return why_not(why, whylen, s, n, "is not", t);
        *out = val_int(t, i);
        return 0;
    }
    case TY_DOUBLE: {
        double d;
        if (parse_double(s, n, &d, why, whylen) < 0) return XE_INPUT;
        *out = val_double(d);
        return 0;
    }
    case TY_BOOL:
        if (parse_bool(s, n, &i) < 0) return why_not(why, whylen, s, n, "is not", t);
        *out = val_int(TY_BOOL, i);
        return 0;
    case TY_TIMESTAMP:
        if (fmt_parse_timestamp(s, n, &i) < 0)
            return why_not(why, whylen, s, n, parse_i64(s, n, &i) != -1 ? "is out of range for" : "is not", t);
        *out = val_int(TY_TIMESTAMP, i);
        return 0;
    default: return why_not(why, whylen, s, n, "is not", TY_NULL);
    }
}

/* ------------------------------------------------------------------ input options */

int fmt_parse_delim(const char *text, char *out, char *why, size_t cap)
{
    if (!strcmp(text, "\\t") || !strcasecmp(text, "tab")) {
        *out = '\t';
        return 0;
    }
    char q[64];
    quote_for_msg(text, strlen(text), q, sizeof q);
    if (strlen(text) != 1) {
        snprintf(why, cap, "delimiter %s must be a single byte (or '\\t' for a tab)", q);
        return XE_INVAL;
    }
    if (*text == '"' || *text == '\n' || *text == '\r' || *text == ' ') {
        snprintf(why, cap, "delimiter %s cannot be a quote, a space or a line end", q);
        return XE_INVAL;
    }
    *out = *text;
    return 0;
}

int fmt_check_input_opts(fmt_kind kind, int csv_only_set, char delim, const char *null_string, char *why,
                         size_t cap)
{
    if (kind != FMT_CSV && csv_only_set) {
        snprintf(why, cap, "delimiter and null_string are for CSV input, and the format is %s", fmt_kind_name(kind));
        return XE_INVAL;
    }
    if (!null_string) return 0;
    char q[64];
    quote_for_msg(null_string, strlen(null_string), q, sizeof q);
    if (strchr(null_string, delim ? delim : ',')) {
        snprintf(why, cap, "null_string %s holds the delimiter", q);
        return XE_INVAL;
    }
    if (strpbrk(null_string, "\"\r\n")) {
        snprintf(why, cap, "null_string %s cannot hold a quote or a line end", q);
        return XE_INVAL;
    }
    return 0;
}

/* ------------------------------------------------------------------ decoders: state */

struct fmt_decoder {
    fmt_kind kind;
    int ncols;
    char **names;
    sql_type *types;
    fmt_dec_opts o;
    char delim;
    /* line layer */
    sbuf carry;       /* the start of a line that did not end in the last chunk */
    int discarding;   /* skipping the rest of an over-long line */
    int64_t line;     /* lines of this input completed */
    fmt_dec_stats st;
    fmt_rejects rej;
    int dead;         /* a fatal error happened; fatal holds it */
    xerr fatal;
    /* record layer */
    val *row;         /* ncols values of the row being built */
    int header_done;  /* CSV: the first line was seen */
    int nmap;         /* CSV: fields per line */
    int *map;         /* CSV: field index -> column (nmap entries, room for mapcap) */
    int mapcap;
    sbuf fbuf;        /* CSV: unescaped field bytes, each NUL-terminated */
    size_t *fofs;     /* CSV: field offsets into fbuf */
    uint32_t *flen;
    unsigned char *fquoted;
    int fcap, nfields;
    int has_null;     /* CSV: opts.null_string was given: null_s, null_n */
    char *null_s;
    size_t null_n;
    /* CSV: a record whose quoted field goes on past a line end */
    int open;         /* rec holds its lines so far; fbuf and the field arrays its fields so far */
    int64_t rec_line; /* the line it started on */
    size_t rec_pos;   /* where csv_split goes on in rec */
    sbuf rec;
};

/* Room in map for n fields (a header may name more fields than columns). */
static int map_room(fmt_decoder *d, int n)
{
    if (n <= d->mapcap) return 0;
    int *m = realloc(d->map, (size_t)n * sizeof *m);
    if (!m) return XE_NOMEM;
    d->map = m;
    d->mapcap = n;
    return 0;
}

static void reject(fmt_decoder *d, int64_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void reject(fmt_decoder *d, int64_t line, const char *fmt, ...)
{
    char msg[FMT_REJECT_MSG];
    int k = snprintf(msg, sizeof msg, "line %lld: ", (long long)line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    d->st.rejected++;
    d->rej.count++;
    if (d->rej.n < d->rej.keep) {
        fmt_reject *r = &d->rej.v[d->rej.n++];
        r->line = line;
        memcpy(r->msg, msg, sizeof msg);
    }
    if (d->o.on_reject) d->o.on_reject(d->o.ctx, line, msg);
}

int fmt_decoder_new(fmt_kind kind, const fmt_schema *schema, const fmt_dec_opts *opts, fmt_decoder **out)
{
    *out = NULL;
    if ((kind != FMT_CSV && kind != FMT_JSON) || schema->ncols < 0 || schema->ncols > 65535) return XE_INVAL;
    fmt_decoder *d = calloc(1, sizeof *d);
    if (!d) return XE_NOMEM;
    d->kind = kind;
    if (opts) d->o = *opts;
    d->delim = d->o.delim ? d->o.delim : ',';
    if (d->delim == '"' || d->delim == '\n' || d->delim == '\r') goto inval;
    if (d->o.time_col < 0 || d->o.time_col > schema->ncols) goto inval;
    if (d->o.max_line == 0) d->o.max_line = FMT_MAX_LINE;
    d->rej.keep = d->o.keep_rejects == 0 ? FMT_KEEP_REJECTS : d->o.keep_rejects < 0 ? 0 : d->o.keep_rejects;
    sbuf_init(&d->carry);
    sbuf_init(&d->fbuf);
    sbuf_init(&d->rec);
    if (d->o.null_string) {
        d->has_null = 1;
        d->null_n = strlen(d->o.null_string);
        if (!(d->null_s = strdup(d->o.null_string))) goto nomem;
    }
    d->o.null_string = NULL; /* the copies are the decoder's; kind_note stays borrowed */
    d->ncols = schema->ncols;
    size_t nc = (size_t)schema->ncols + 1;
    d->row = calloc(nc, sizeof *d->row);
    d->map = calloc(nc, sizeof *d->map);
    d->mapcap = (int)nc;
    d->rej.v = d->rej.keep ? calloc((size_t)d->rej.keep, sizeof *d->rej.v) : NULL;
    if (!d->row || !d->map || (d->rej.keep && !d->rej.v)) goto nomem;
    if (schema_copy(schema, &d->names, &d->types) < 0) goto nomem;
    *out = d;
    return 0;
nomem:
    fmt_decoder_free(d);
    return XE_NOMEM;
inval:
    free(d);
    return XE_INVAL;
}

/* The state between two calls of fmt_decode, for fmt_decoder_load: where
 * the input is (lines, the start of an unfinished line) and what its header
 * said.  u32 version, then be64 fields, then the map, then (version 2, an
 * open record) be64 rec_line, be64 0, be64 length and the record's
 * lines so far, then the carry.  Version 1 (no open record) still loads. */
#define DEC_SAVE_VERSION 2
int fmt_decoder_save(const fmt_decoder *d, sbuf *out)
{
    unsigned char h[4 + 8 * 8];
    be32_put(h, DEC_SAVE_VERSION);
    uint64_t v[8] = {(uint64_t)d->kind, (uint64_t)d->line, (uint64_t)d->st.lines, (uint64_t)d->st.rows,
                     (uint64_t)d->st.rejected,
                     (uint64_t)d->header_done | (uint64_t)d->discarding << 1 | (uint64_t)d->open << 2,
                     (uint64_t)d->nmap, d->carry.len};
    for (int i = 0; i < 8; i++) be64_put(h + 4 + 8 * i, v[i]);
    if (sbuf_add(out, h, sizeof h)) return XE_NOMEM;
    for (int i = 0; i < d->nmap; i++) {
        unsigned char m[4];
        be32_put(m, (uint32_t)(d->map[i] + 1)); /* -1: a field no column takes */
        if (sbuf_add(out, m, 4)) return XE_NOMEM;
    }
    if (d->open) {
        unsigned char r[24];
        be64_put(r, (uint64_t)d->rec_line);
        be64_put(r + 8, 0); /* room for a flag */
        be64_put(r + 16, d->rec.len);
        if (sbuf_add(out, r, sizeof r) || sbuf_add(out, d->rec.p, d->rec.len)) return XE_NOMEM;
    }
    return sbuf_add(out, d->carry.p, d->carry.len) ? XE_NOMEM : 0;
}

static inline int csv_split(fmt_decoder *d, const char *p, size_t n, int resume, char *why, size_t cap);
enum { CSV_OPEN = 1 }; /* csv_split: the line ends inside a quoted field */

int fmt_decoder_load(fmt_decoder *d, const void *p, size_t n, xerr *err)
{
    const unsigned char *b = p;
    uint32_t version = n >= 4 ? be32_get(b) : 0;
    if (n < 4 + 8 * 8 || version < 1 || version > DEC_SAVE_VERSION)
        return xerr_set(err, XE_CORRUPT, "a saved input decoder is truncated or of another version");
    uint64_t v[8];
    for (int i = 0; i < 8; i++) v[i] = be64_get(b + 4 + 8 * i);
    size_t at = 4 + 8 * 8;
    int open = (int)(v[5] >> 2 & 1);
    if (v[0] != (uint64_t)d->kind || v[6] > (n - at) / 4 ||
        (open && (d->kind != FMT_CSV || n - at - 4 * v[6] < 24)))
        return xerr_set(err, XE_CORRUPT, "a saved input decoder does not fit this stream");
    size_t map_end = at + 4 * (size_t)v[6], rec_at = map_end + (open ? 24 : 0);
    uint64_t rec_len = open ? be64_get(b + map_end + 16) : 0;
    if (rec_len > n - rec_at || n - rec_at - rec_len != v[7])
        return xerr_set(err, XE_CORRUPT, "a saved input decoder does not fit this stream");
    d->line = (int64_t)v[1];
    d->st.lines = (int64_t)v[2];
    d->st.rows = (int64_t)v[3];
    d->st.rejected = (int64_t)v[4];
    d->header_done = (int)(v[5] & 1);
    d->discarding = (int)(v[5] >> 1 & 1);
    if (map_room(d, (int)v[6])) return xerr_set(err, XE_NOMEM, "out of memory");
    d->nmap = (int)v[6];
    for (int i = 0; i < d->nmap; i++, at += 4) {
        int64_t c = (int64_t)be32_get(b + at) - 1;
        if (c >= d->ncols) return xerr_set(err, XE_CORRUPT, "a saved input decoder names column %lld", (long long)c);
        d->map[i] = (int)c;
    }
    sbuf_reset(&d->rec);
    d->open = 0;
    if (open) {
        /* the fields so far come back by splitting the record's lines again */
        char why[256];
        d->rec_line = (int64_t)be64_get(b + map_end);
        if (sbuf_add(&d->rec, b + rec_at, rec_len)) return xerr_set(err, XE_NOMEM, "out of memory");
        int rc = csv_split(d, d->rec.p, d->rec.len, 0, why, sizeof why);
        if (rc == XE_NOMEM) return xerr_set(err, XE_NOMEM, "out of memory");
        if (rc != CSV_OPEN) return xerr_set(err, XE_CORRUPT, "a saved input decoder's open record is not open");
        d->open = 1;
    }
    sbuf_reset(&d->carry);
    return sbuf_add(&d->carry, b + rec_at + rec_len, n - rec_at - rec_len) ? xerr_set(err, XE_NOMEM, "out of memory")
                                                                          : 0;
}

void fmt_decoder_free(fmt_decoder *d)
{
    if (!d) return;
    schema_free(d->names, d->types, d->ncols);
    free(d->row);
    free(d->map);
    free(d->rej.v);
    free(d->fofs);
    free(d->flen);
    free(d->fquoted);
    free(d->null_s);
    sbuf_fini(&d->carry);
    sbuf_fini(&d->fbuf);
    sbuf_fini(&d->rec);
    free(d);
}

size_t fmt_decoder_pending(const fmt_decoder *d) { return d->carry.len + (d->open ? d->rec.len : 0); }

fmt_dec_stats fmt_decoder_stats(const fmt_decoder *d) { return d->st; }
const fmt_rejects *fmt_decoder_rejects(const fmt_decoder *d) { return &d->rej; }

void fmt_decoder_clear_rejects(fmt_decoder *d)
{
    d->rej.count = 0;
    d->rej.n = 0;
}

int fmt_rejects_print(const fmt_rejects *r, sbuf *out)
{
    int rc = 0;
    for (int i = 0; i < r->n && rc == 0; i++) rc = sbuf_printf(out, "%s\n", r->v[i].msg);
    if (rc == 0 && r->count > r->n)
        rc = sbuf_printf(out, "... and %lld more rejected line%s\n", (long long)(r->count - r->n),
                         r->count - r->n == 1 ? "" : "s");
    return rc;
}

/* Complete a row: copy d->row (whose TEXT points into scratch) into out. */
/* The row built in d->row, unless it lacks its event time: a row without
 * one belongs to no window, so it is bad input like a bad value. */
static int emit_row(fmt_decoder *d, int64_t line, batch *out)
{
    int tc = d->o.time_col - 1;
    if (tc >= 0 && tc < d->ncols && d->row[tc].type == TY_NULL) {
        reject(d, line, "column '%s': no event time (empty or null); every row of the stream needs one", d->names[tc]);
        return 0;
    }
    if (batch_append_row(out, d->row) < 0) return XE_NOMEM;
    d->st.rows++;
    return 0;
}

static int find_column(const fmt_decoder *d, const char *name, size_t n)
{
    for (int c = 0; c < d->ncols; c++)
        if (strlen(d->names[c]) == n && strncasecmp(d->names[c], name, n) == 0) return c;
    return -1;
}

/* ------------------------------------------------------------------ CSV */

__attribute__((noinline, cold)) static int field_grow(fmt_decoder *d)
{
    int cap = d->fcap ? d->fcap * 2 : 16;
    size_t *o = realloc(d->fofs, (size_t)cap * sizeof *o);
    if (o) d->fofs = o;
    uint32_t *l = realloc(d->flen, (size_t)cap * sizeof *l);
    if (l) d->flen = l;
    unsigned char *q = realloc(d->fquoted, (size_t)cap);
    if (q) d->fquoted = q;
    if (!o || !l || !q) return XE_NOMEM;
    d->fcap = cap;
    return 0;
}

static inline int field_room(fmt_decoder *d) { return d->nfields < d->fcap ? 0 : field_grow(d); }

/* Split one line (without its line end) into fields in fbuf, or with resume,
 * go on in rec at rec_pos, inside the quoted field begun last.  Returns 0,
 * CSV_OPEN when the bytes end inside a quoted field (what it holds so far is
 * in fbuf, rec_pos is where the scan stopped), XE_NOMEM, or XE_INPUT with a
 * reason in why.  A line without an open quote never sees the resume path.
 * Inlined: csv_line's call (resume 0) is the hot path of CSV input. */
__attribute__((always_inline)) static inline int csv_split(fmt_decoder *d, const char *p, size_t n, int resume, char *why, size_t cap)
{
    size_t i = 0;
    int f;
    if (resume) {
        i = d->rec_pos;
        f = d->nfields - 1;
        goto quoted;
    }
    sbuf_reset(&d->fbuf);
    d->nfields = 0;
    for (;;) {
        if (field_room(d) < 0) return XE_NOMEM;
        f = d->nfields++;
        d->fofs[f] = d->fbuf.len;
        d->fquoted[f] = 0;
        if (i < n && p[i] == '"') {
            d->fquoted[f] = 1;
            i++;
        quoted: /* resume enters here, in a quoted field that went past a line end */
            for (;;) {
                const char *q = memchr(p + i, '"', n - i);
                if (!q) {
                    if (sbuf_add(&d->fbuf, p + i, n - i) < 0) return XE_NOMEM;
                    d->rec_pos = n;
                    return CSV_OPEN;
                }
                if (sbuf_add(&d->fbuf, p + i, (size_t)(q - p - i)) < 0) return XE_NOMEM;
                i = (size_t)(q - p) + 1;
                if (i < n && p[i] == '"') {
                    if (sbuf_addc(&d->fbuf, '"') < 0) return XE_NOMEM;
                    i++;
                    continue;
                }
                break;
            }
            if (i < n && p[i] != d->delim) {
                char qq[32];
                quote_for_msg(p + i, 1, qq, sizeof qq);
                snprintf(why, cap, "field %d: unexpected %s after a closing quote", f + 1, qq);
                return XE_INPUT;
            }
        } else {
            const char *e = memchr(p + i, d->delim, n - i);
            size_t len = e ? (size_t)(e - p) - i : n - i;
            if (sbuf_add(&d->fbuf, p + i, len) < 0) return XE_NOMEM;
            i += len;
        }
        size_t len = d->fbuf.len - d->fofs[f];
        if (len > UINT32_MAX - 1) {
            snprintf(why, cap, "field %d: longer than 4 GiB", f + 1);
            return XE_INPUT;
        }
        d->flen[f] = (uint32_t)len;
        if (sbuf_addc(&d->fbuf, '\0') < 0) return XE_NOMEM;
        if (i >= n) return 0;
        i++; /* the delimiter */
    }
}

static const char *field(const fmt_decoder *d, int f) { return d->fbuf.p + d->fofs[f]; }

/* A header field's name, spaces around it dropped ("ts, k, v"). */
static int header_column(const fmt_decoder *d, int f, const char **name, size_t *n)
{
    *name = field(d, f);
    *n = d->flen[f];
    trim(name, n);
    return find_column(d, *name, *n);
}

/* The column nearest to name by edit distance, if near enough, and not one
 * the header names already (the first nmap of map); or -1. */
static int near_column(const fmt_decoder *d, const char *name, size_t n, int nmap)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%.*s", (int)(n < 255 ? n : 255), name);
    int best = -1, bestd = n < 3 ? (int)n : 3;
    for (int k = 0; k < d->ncols; k++) {
        int dist = str_distance(tmp, d->names[k]), named = 0;
        for (int f = 0; f < nmap; f++) named |= d->map[f] == k;
        if (dist < bestd && !named) bestd = dist, best = k;
    }
    return best;
}

/* The first record decides about a header.  Returns 1 when it was a header,
 * 0 when it is data, XE_INPUT (fatal, d->fatal set), XE_NOMEM. */
static int csv_header(fmt_decoder *d, int64_t line)
{
    if (d->o.header == FMT_HEADER_NO) goto data;
    int *seen = calloc((size_t)d->ncols + 1, sizeof *seen);
    if (!seen) return XE_NOMEM;
    int known = 0, unknown = 0, twice = -1;
    for (int f = 0; f < d->nfields; f++) {
        const char *name;
        size_t n;
        int c = header_column(d, f, &name, &n);
        if (c < 0) unknown++;
        else if (seen[c]++) twice = twice < 0 ? f : twice;
        else known++;
    }
    free(seen);
    int yes = d->o.header == FMT_HEADER_YES;
    if (!yes && (twice >= 0 || known <= unknown)) goto data;
    char q[200];
    const char *name;
    size_t n;
    if (twice >= 0) {
        header_column(d, twice, &name, &n);
        quote_for_msg(name, n, q, sizeof q);
        xerr_at(&d->fatal, XE_INPUT, (int)line, 0, "line %lld: header names column %s twice", (long long)line, q);
        goto fatal;
    }
    if (known == 0) {
        header_column(d, 0, &name, &n);
        quote_for_msg(name, n, q, sizeof q);
        int best = near_column(d, name, n, 0);
        if (best >= 0)
            xerr_at(&d->fatal, XE_INPUT, (int)line, 0, "line %lld: header: %s is not a column (did you mean '%s'?)",
                    (long long)line, q, d->names[best]);
        else
            xerr_at(&d->fatal, XE_INPUT, (int)line, 0, "line %lld: header names no column of the stream (%s is the "
                    "first)", (long long)line, q);
        goto fatal;
    }
    if (map_room(d, d->nfields)) return XE_NOMEM;
    for (int f = 0; f < d->nfields; f++) d->map[f] = header_column(d, f, &name, &n);
    d->nmap = d->nfields;
    if (d->o.time_col) {
        int found = 0;
        for (int f = 0; f < d->nfields; f++) found |= d->map[f] == d->o.time_col - 1;
        if (!found) {
            xerr_at(&d->fatal, XE_INPUT, (int)line, 0, "line %lld: header has no column '%s' (the stream's event time)",
                    (long long)line, d->names[d->o.time_col - 1]);
            goto fatal;
        }
    }
    if (unknown && d->o.on_notice) {
        /* one notice for the lot, each name with a suggestion when near one */
        char msg[FMT_REJECT_MSG];
        size_t o = (size_t)snprintf(msg, sizeof msg, "line %lld: header: ", (long long)line);
        int listed = 0;
        for (int f = 0; f < d->nfields && o < sizeof msg; f++) {
            if (d->map[f] >= 0) continue;
            header_column(d, f, &name, &n);
            quote_for_msg(name, n, q, sizeof q);
            int best = near_column(d, name, n, d->nmap);
            char hint[160] = "";
            if (best >= 0) snprintf(hint, sizeof hint, " (did you mean '%s'?)", d->names[best]);
            o += (size_t)snprintf(msg + o, sizeof msg - o, "%s%s%s", listed++ ? ", " : "", q, hint);
        }
        if (o < sizeof msg)
            snprintf(msg + o, sizeof msg - o, " %s no column of the stream; ignored", unknown == 1 ? "names" : "name");
        d->o.on_notice(d->o.ctx, line, msg);
    }
    return 1;
fatal:
    d->dead = 1;
    return XE_INPUT;
data:
    for (int c = 0; c < d->ncols; c++) d->map[c] = c;
    d->nmap = d->ncols;
    return 0;
}

/* A rejected first line that names some columns is probably a bad header. */
__attribute__((cold)) static void header_hint(fmt_decoder *d, char *hint, size_t cap)
{
    hint[0] = '\0';
    if (d->o.header != FMT_HEADER_AUTO) return;
    int named = 0, bad = -1;
    const char *name;
    size_t n;
    for (int f = 0; f < d->nfields; f++) {
        if (header_column(d, f, &name, &n) >= 0) named++;
        else if (bad < 0) bad = f;
    }
    if (named == 0 || bad < 0) return;
    char q[200];
    header_column(d, bad, &name, &n);
    quote_for_msg(name, n, q, sizeof q);
    snprintf(hint, cap, " (if this is a header, %s is not a column; --header reads it as one)", q);
}

/* A rejected line that looks like JSON to the CSV decoder, or like CSV to
 * the JSON one, says so (p: the line as it came). */
__attribute__((cold)) static void kind_hint(const fmt_decoder *d, const char *p, size_t n, char *hint, size_t cap)
{
    hint[0] = '\0';
    size_t k = 0;
    while (k < n && is_space(p[k])) k++;
    int json = k < n && (p[k] == '{' || p[k] == '[');
    if (d->kind == FMT_CSV && json)
        snprintf(hint, cap, "; this looks like JSON; %s", d->o.kind_note ? d->o.kind_note : "the input is read as CSV");
    else if (d->kind == FMT_JSON && !json && k < n && memchr(p + k, ',', n - k))
        snprintf(hint, cap, "; this looks like CSV; %s", d->o.kind_note ? d->o.kind_note : "the input is read as JSON");
}

/* An unquoted field that is the null string. */
static int is_null_text(const fmt_decoder *d, int f, sql_type t)
{
    const char *s = field(d, f);
    size_t n = d->flen[f];
    if (t != TY_TEXT) trim(&s, &n);
    return n == d->null_n && memcmp(s, d->null_s, n) == 0;
}

/* The fields of a whole record (csv_split's rc and why) into a row or a
 * rejection at line, the line it started on; raw is its first line.
 * Inlined into csv_line, the hot path; without a null string its loop
 * makes no per-field test for one. */
__attribute__((always_inline)) static inline int csv_record(fmt_decoder *d, int rc, const char *why0, const char *raw, size_t rawn, int64_t line,
                      batch *out)
{
    char why[256], kh[200];
    if (rc == XE_NOMEM) return rc;
    if (rc < 0) {
        kind_hint(d, raw, rawn, kh, sizeof kh);
        reject(d, line, "%s%s", why0, kh);
        return 0;
    }
    int first = !d->header_done;
    if (first) {
        d->header_done = 1;
        rc = csv_header(d, line);
        if (rc != 0) return rc == 1 ? 0 : rc;
    }
    char hint[300];
    if (d->nfields != d->nmap) {
        if (first) header_hint(d, hint, sizeof hint);
        else hint[0] = '\0';
        kind_hint(d, raw, rawn, kh, sizeof kh);
        reject(d, line, "expected %d column%s, got %d%s%s", d->nmap, d->nmap == 1 ? "" : "s", d->nfields, hint, kh);
        return 0;
    }
    for (int c = 0; c < d->ncols; c++) d->row[c] = val_null();
    int f = 0, c = 0;
    if (!d->has_null) {
        for (; f < d->nfields; f++) {
            if ((c = d->map[f]) < 0) continue;
            if (fmt_parse_value(d->types[c], field(d, f), d->flen[f], !d->fquoted[f], &d->row[c], why, sizeof why) < 0)
                goto bad;
        }
    } else {
        for (; f < d->nfields; f++) {
            if ((c = d->map[f]) < 0) continue;
            if (!d->fquoted[f] && is_null_text(d, f, d->types[c])) continue; /* row[c] is NULL */
            if (fmt_parse_value(d->types[c], field(d, f), d->flen[f], 0, &d->row[c], why, sizeof why) < 0) goto bad;
        }
    }
    return emit_row(d, line, out);
bad:
    if (first) header_hint(d, hint, sizeof hint);
    else hint[0] = '\0';
    kind_hint(d, raw, rawn, kh, sizeof kh);
    reject(d, line, "column '%s': %s%s%s", d->names[c], why, hint, kh);
    return 0;
}

/* One line; cr: it ended in CRLF (the CR is not in p[0..n)). */
static int csv_line(fmt_decoder *d, const char *p, size_t n, int cr, int64_t line, batch *out)
{
    char why[256];
    int rc = csv_split(d, p, n, 0, why, sizeof why);
    if (rc != CSV_OPEN) return csv_record(d, rc, why, p, n, line, out);
    /* a quoted field goes on past the line end: keep the line, with its end */
    sbuf_reset(&d->rec);
    if (sbuf_add(&d->rec, p, n) < 0 || sbuf_add(&d->rec, cr ? "\r\n" : "\n", 1 + (size_t)cr) < 0) return XE_NOMEM;
    d->open = 1;
    d->rec_line = line;
    return 0;
}

/* The record is dropped unfinished: the quote that opened it never closed
 * within max_line bytes, or before the end of the input. */
static void csv_give_up(fmt_decoder *d, const char *why)
{
    if (d->rec_line == d->line)
        reject(d, d->rec_line, "field %d: unterminated quoted field (not closed %s)", d->nfields, why);
    else
        reject(d, d->rec_line, "field %d: unterminated quoted field (not closed %s; lines %lld to %lld)", d->nfields,
               why, (long long)d->rec_line, (long long)d->line);
    d->open = 0;
    sbuf_reset(&d->rec);
}

/* The next line of an open record. */
static int csv_more(fmt_decoder *d, const char *p, size_t n, int cr, batch *out)
{
    if (d->rec.len + n + 2 > d->o.max_line) {
        char why[64];
        snprintf(why, sizeof why, "within %zu bytes", d->o.max_line);
        csv_give_up(d, why);
        return 0;
    }
    if (sbuf_add(&d->rec, p, n) < 0) return XE_NOMEM;
    char why[256];
    int rc = csv_split(d, d->rec.p, d->rec.len, 1, why, sizeof why);
    if (rc == CSV_OPEN) return sbuf_add(&d->rec, cr ? "\r\n" : "\n", 1 + (size_t)cr) < 0 ? XE_NOMEM : 0;
    d->open = 0;
    rc = csv_record(d, rc, why, d->rec.p, d->rec.len, d->rec_line, out);
    sbuf_reset(&d->rec);
    return rc;
}

/* ------------------------------------------------------------------ JSON lines */

#define FMT_JSON_MAX_COLS 256 /* wider schemas look members up one by one */

static json_t *json_member(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    if (v) return v;
    const char *k;
    json_object_foreach(o, k, v) {
        if (strcasecmp(k, name) == 0) return v;
    }
    return NULL;
}

static const char *json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* A JSON number that is an exact int64. */
static int json_int64(const json_t *j, int64_t *out)
{
    if (json_is_integer(j)) {
        *out = (int64_t)json_integer_value(j);
        return 0;
    }
    if (json_is_real(j)) {
        double x = json_real_value(j);
        if (x >= -9223372036854775808.0 && x < 9223372036854775808.0 && x == floor(x)) {
            *out = (int64_t)x;
            return 0;
        }
    }
    return -1;
}

static int json_value(const json_t *j, sql_type t, val *out, char *why, size_t cap)
{
    *out = val_null();
    if (!j || json_is_null(j)) return 0;
    int64_t i;
    switch (t) {
    case TY_INT:
    case TY_BIGINT:
    case TY_INTERVAL:
        if (json_int64(j, &i) == 0) return *out = val_int(t, i), 0;
        if (json_is_real(j)) {
            char num[FMT_DOUBLE_BUF];
            fmt_double(json_real_value(j), num);
            snprintf(why, cap, "%s is not %s %s", num, sql_type_article(t), sql_type_name(t));
            return XE_INPUT;
        }
        break;
    case TY_DOUBLE:
        if (json_is_number(j)) return *out = val_double(json_number_value(j)), 0;
        break;
    case TY_BOOL:
        if (json_is_boolean(j)) return *out = val_int(TY_BOOL, json_is_true(j)), 0;
        break;
    case TY_TEXT:
        if (json_is_string(j)) {
            size_t n = json_string_length(j);
            if (n > UINT32_MAX - 1) break;
            return *out = val_text(json_string_value(j), (uint32_t)n), 0;
        }
        break;
    case TY_TIMESTAMP:
        if (json_int64(j, &i) == 0 && i >= TIME_TS_MIN && i <= TIME_TS_MAX) return *out = val_int(TY_TIMESTAMP, i), 0;
        if (json_is_number(j)) {
            char num[FMT_DOUBLE_BUF];
            fmt_double(json_number_value(j), num);
            snprintf(why, cap, "%s is %s TIMESTAMP", num, json_int64(j, &i) == 0 ? "out of range for" : "not a");
            return XE_INPUT;
        }
        if (json_is_string(j)) {
            const char *s = json_string_value(j);
            size_t n = json_string_length(j);
            if (fmt_parse_timestamp(s, n, &i) == 0) return *out = val_int(TY_TIMESTAMP, i), 0;
            why_not(why, cap, s, n, "is not", TY_TIMESTAMP);
            return XE_INPUT;
        }
        break;
    default: break;
    }
    snprintf(why, cap, "expected %s, got %s", t == TY_TEXT ? "a string" : t == TY_BOOL ? "true or false"
                                              : t == TY_TIMESTAMP ? "a number or an ISO 8601 string"
                                                                  : "a number",
             json_kind(j));
    return XE_INPUT;
}

static int json_line(fmt_decoder *d, const char *p, size_t n, int64_t line, batch *out)
{
    size_t k = 0;
    while (k < n && (is_space(p[k]) || p[k] == '\r')) k++;
    if (k == n) return 0; /* blank */
    json_error_t je;
    json_t *o = json_loadb(p, n, JSON_ALLOW_NUL, &je);
    if (!o) {
        char kh[200];
        kind_hint(d, p, n, kh, sizeof kh);
        reject(d, line, "invalid JSON at column %d: %s%s", je.column, je.text, kh);
        return 0;
    }
    int rc = 0;
    if (!json_is_object(o)) {
        reject(d, line, "expected a JSON object, got %s", json_kind(o));
        goto done;
    }
    /* One pass over the members: each goes to the column it names, an exact
     * match winning over a case-insensitive one.  (Looking every column up
     * with a case-insensitive fallback costs columns x members per row.) */
    json_t *member[FMT_JSON_MAX_COLS];
    unsigned char exact[FMT_JSON_MAX_COLS];
    int direct = d->ncols <= FMT_JSON_MAX_COLS;
    if (direct) {
        memset(member, 0, sizeof(json_t *) * (size_t)d->ncols);
        memset(exact, 0, (size_t)d->ncols);
        const char *key;
        json_t *jv;
        json_object_foreach(o, key, jv) {
            for (int c = 0; c < d->ncols; c++) {
                if (exact[c]) continue;
                if (!strcmp(key, d->names[c])) {
                    member[c] = jv;
                    exact[c] = 1;
                    break;
                }
                if (!member[c] && !strcasecmp(key, d->names[c])) {
                    member[c] = jv;
                    break;
                }
            }
        }
    }
    for (int c = 0; c < d->ncols; c++) {
        char why[256];
        json_t *m = direct ? member[c] : json_member(o, d->names[c]);
        if (json_value(m, d->types[c], &d->row[c], why, sizeof why) < 0) {
            reject(d, line, "column '%s': %s", d->names[c], why);
            goto done;
        }
    }
    rc = emit_row(d, line, out); /* copies the strings out of o */
done:
    json_decref(o);
    return rc;
}

/* ------------------------------------------------------------------ the line layer */

static int do_line(fmt_decoder *d, const char *p, size_t n, batch *out)
{
    int64_t line = ++d->line;
    d->st.lines++;
    int cr = n && p[n - 1] == '\r';
    n -= (size_t)cr;
    if (d->open) return csv_more(d, p, n, cr, out); /* an empty line too: a line end in a quoted field */
    if (d->line == 1 && n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3, n -= 3;
    if (n == 0) return 0;
    return d->kind == FMT_CSV ? csv_line(d, p, n, cr, line, out) : json_line(d, p, n, line, out);
}

static void too_long(fmt_decoder *d)
{
    if (d->open) {
        char why[64];
        snprintf(why, sizeof why, "within %zu bytes", d->o.max_line);
        csv_give_up(d, why);
    }
    reject(d, d->line + 1, "longer than %zu bytes; skipped", d->o.max_line);
    d->discarding = 1;
    sbuf_reset(&d->carry);
}

static int dead(fmt_decoder *d, xerr *err)
{
    if (err) *err = d->fatal;
    return d->fatal.code;
}

int fmt_decode(fmt_decoder *d, const void *data, size_t n, batch *out, xerr *err)
{
    if (d->dead) return dead(d, err);
    if (out->ncols != d->ncols)
        return xerr_set(err, XE_INVAL, "decoding %d columns into a batch of %d", d->ncols, out->ncols);
    const char *p = data;
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) : n;
        if (d->discarding) {
            if (nl) {
                d->discarding = 0;
                d->line++;
                d->st.lines++;
            }
        } else if (d->carry.len + seg > d->o.max_line) {
            too_long(d);
            if (nl) {
                d->discarding = 0;
                d->line++;
                d->st.lines++;
            }
        } else if (!nl) {
            if (sbuf_add(&d->carry, p, seg) < 0) return xerr_set(err, XE_NOMEM, "out of memory");
        } else {
            int rc;
            if (d->carry.len) {
                if (sbuf_add(&d->carry, p, seg) < 0) return xerr_set(err, XE_NOMEM, "out of memory");
                rc = do_line(d, d->carry.p, d->carry.len, out);
                sbuf_reset(&d->carry);
            } else {
                rc = do_line(d, p, seg, out);
            }
            if (rc == XE_NOMEM) return xerr_set(err, XE_NOMEM, "out of memory");
            if (rc < 0) return dead(d, err);
        }
        if (!nl) break;
        p = nl + 1;
        n -= seg + 1;
    }
    return 0;
}

int fmt_decode_finish(fmt_decoder *d, batch *out, xerr *err)
{
    if (d->dead) return dead(d, err);
    if (out->ncols != d->ncols)
        return xerr_set(err, XE_INVAL, "decoding %d columns into a batch of %d", d->ncols, out->ncols);
    int rc = 0;
    if (d->discarding) {
        d->line++;
        d->st.lines++;
    } else if (d->carry.len) {
        rc = do_line(d, d->carry.p, d->carry.len, out);
    }
    if (d->open) csv_give_up(d, "before the end of the input");
    sbuf_reset(&d->carry);
    d->discarding = 0;
    d->line = 0;
    d->header_done = 0;
    if (rc == XE_NOMEM) return xerr_set(err, XE_NOMEM, "out of memory");
    if (rc < 0) return dead(d, err);
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
