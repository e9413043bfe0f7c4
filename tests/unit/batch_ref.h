/*
 * batch_ref.h: the version 2 batch encoder as it was before the fused,
 * per-width encoder (exec/batch.c at 7b73cce), kept verbatim but for the
 * names as the reference that test_batch compares batch_encode with byte
 * for byte.  The log format must not change: old and new builds read each
 * other's logs, and replicas compare them.  Included by test_batch.c only.
 */
enum { REF_ENC_MAGIC = 0xAB, REF_ENC_VERSION_COLS = 2, REF_ENC_MAX_VAL = 11 };

static int ref_is_int_type(int t)
{
    return t == TY_INT || t == TY_BIGINT || t == TY_TIMESTAMP || t == TY_INTERVAL;
}

/* One value as a tag and its payload (room checked by the caller); prev:
 * the column's last integer, for the delta. */
static unsigned char *ref_put_tagged(unsigned char *p, const val *v, int64_t *prev)
{
    switch (v->type) {
    case TY_NULL: *p++ = 0; break;
    case TY_BOOL: *p++ = v->i ? 2 : 1; break;
    case TY_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &v->d, 8);
        *p++ = TY_DOUBLE + 1;
        be64_put(p, bits);
        p += 8;
        break;
    }
    case TY_TEXT:
        *p++ = TY_TEXT + 1;
        p = varint_put(p, v->len);
        if (v->len) memcpy(p, v->s, v->len);
        p += v->len;
        break;
    default:
        *p++ = (unsigned char)(v->type + 1);
        p = varint_put(p, zigzag((uint64_t)v->i - (uint64_t)*prev));
        *prev = v->i;
        break;
    }
    return p;
}

/* An encoding from out[start] on ends: its CRC after it, or (rc < 0) out
 * cut back to start. */
static int ref_encoding_end(sbuf *out, size_t start, int rc)
{
    if (rc == 0) {
        unsigned char crc[4];
        be32_put(crc, crc32c(0, out->p + start, out->len - start));
        rc = sbuf_add(out, crc, 4);
    }
    if (rc < 0) {
        out->len = start;
        if (out->p) out->p[start] = '\0';
    }
    return rc;
}

/* Bit packing: n values v[i] - base of w bits (0..64), little-endian bit
 * order, in (n * w + 7) / 8 bytes. */
static unsigned char *ref_bits_pack(unsigned char *p, const uint64_t *v, int n, int w, uint64_t base)
{
    if (w == 0) return p;
    if (w == 64) {
        for (int i = 0; i < n; i++, p += 8) {
            uint64_t x = v[i] - base;
            memcpy(p, &x, 8); /* x86 and every other target we build on are little-endian */
        }
        return p;
    }
    uint64_t acc = 0, mask = (1ULL << w) - 1;
    int have = 0;
    for (int i = 0; i < n; i++) {
        uint64_t x = (v[i] - base) & mask;
        acc |= x << have;
        have += w;
        if (have >= 64) {
            memcpy(p, &acc, 8);
            p += 8;
            have -= 64;
            acc = have ? x >> (w - have) : 0;
        }
    }
    for (; have > 0; have -= 8) {
        *p++ = (unsigned char)acc;
        acc >>= 8;
    }
    return p;
}

static int ref_bit_width(uint64_t range) { return range ? 64 - __builtin_clzll(range) : 0; }

enum { REF_COL_TAGGED, REF_COL_INT, REF_COL_INT_DELTA, REF_COL_DEC, REF_COL_RAW_DOUBLE };
enum { REF_DEC_MAX_SCALE = 6 };
static const double ref_pow10_tab[REF_DEC_MAX_SCALE + 1] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};

/* d as m / 10^s exactly (the same bits back, so -0.0 and NaN never are). */
static int ref_dec_of(double d, int s, int64_t *m)
{
    double x = d * ref_pow10_tab[s];
    int in = x > -4503599627370496.0 && x < 4503599627370496.0; /* |x| < 2^52, and not NaN */
    /* rounded half away from zero, without a branch on the sign (random
     * signs would mispredict half the time) */
    int64_t r = in ? (int64_t)(x + copysign(0.5, x)) : 0;
    double back = (double)r / ref_pow10_tab[s];
    uint64_t a, b;
    memcpy(&a, &back, 8);
    memcpy(&b, &d, 8);
    *m = r;
    return in & (a == b);
}

/* Columns [c0, c0 + nc) of b in one pass over the rows: each column's
 * values' 8 payload bytes into cols[c - c0] (n apart), and its type into
 * types[c - c0] when every value has that one type and it is an integer
 * type or DOUBLE, else -1 (NULLs, TEXT, BOOL, mixed: tagged). */
static inline __attribute__((always_inline)) unsigned ref_columns_nc(const batch *b, int c0, int nc, uint64_t *cols,
                                                                   const int *types)
{
    int n = b->nrows;
    unsigned differ = 0;
    for (int r = 0; r < n; r++) {
        const val *v = batch_row(b, r) + c0;
        for (int k = 0; k < nc; k++) {
            differ |= (unsigned)(v[k].type != types[k]) << k;
            cols[(size_t)k * (size_t)n + (size_t)r] = (uint64_t)v[k].i;
        }
    }
    return differ;
}

static void ref_columns_of(const batch *b, int c0, int nc, uint64_t *cols, int *types)
{
    for (int k = 0; k < nc; k++) types[k] = batch_row(b, 0)[c0 + k].type;
    unsigned differ;
    switch (nc) { /* a constant count: the inner loop unrolls */
    case 1: differ = ref_columns_nc(b, c0, 1, cols, types); break;
    case 2: differ = ref_columns_nc(b, c0, 2, cols, types); break;
    case 3: differ = ref_columns_nc(b, c0, 3, cols, types); break;
    default: differ = ref_columns_nc(b, c0, nc, cols, types); break;
    }
    for (int k = 0; k < nc; k++)
        if ((differ >> k & 1) || (types[k] != TY_DOUBLE && !ref_is_int_type(types[k]))) types[k] = -1;
}

/* One column of integers (in tmp): plain frame of reference, or of the
 * differences between neighbours when those are narrower (timestamps). */
static unsigned char *ref_put_int_column(unsigned char *p, int n, int type, uint64_t *tmp)
{
    int64_t mn = (int64_t)tmp[0], mx = mn, dmn = INT64_MAX, dmx = INT64_MIN;
    for (int r = 1; r < n; r++) {
        int64_t x = (int64_t)tmp[r], d = (int64_t)(tmp[r] - tmp[r - 1]);
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        dmn = d < dmn ? d : dmn;
        dmx = d > dmx ? d : dmx;
    }
    int w = ref_bit_width((uint64_t)mx - (uint64_t)mn);
    int dw = n > 1 ? ref_bit_width((uint64_t)dmx - (uint64_t)dmn) : 64;
    if (dw < w) {
        *p++ = REF_COL_INT_DELTA;
        *p++ = (unsigned char)type;
        p = varint_put(p, zigzag(tmp[0]));
        p = varint_put(p, zigzag((uint64_t)dmn));
        *p++ = (unsigned char)dw;
        for (int r = 0; r < n - 1; r++) tmp[r] = tmp[r + 1] - tmp[r];
        return ref_bits_pack(p, tmp, n - 1, dw, (uint64_t)dmn);
    }
    *p++ = REF_COL_INT;
    *p++ = (unsigned char)type;
    p = varint_put(p, zigzag((uint64_t)mn));
    *p++ = (unsigned char)w;
    return ref_bits_pack(p, tmp, n, w, (uint64_t)mn);
}

/* The smallest scale s at which every double of v (as bits) is m / 10^s, or
 * -1; the m go to m.  The scale is guessed from the first values (the
 * largest any of them needs), so that one pass usually checks them all. */
static int ref_dec_column(const uint64_t *v, int n, int64_t *m)
{
    int s = 0;
    double d;
    for (int r = 0; r < n && r < 16; r++) {
        memcpy(&d, &v[r], 8);
        while (s <= REF_DEC_MAX_SCALE && !ref_dec_of(d, s, &m[r])) s++;
        if (s > REF_DEC_MAX_SCALE) return -1;
    }
    for (;;) {
        int ok = 1;
        for (int r = 0; r < n; r++) { /* no early exit: the divisions overlap */
            memcpy(&d, &v[r], 8);
            ok &= ref_dec_of(d, s, &m[r]);
        }
        if (ok) return s;
        if (++s > REF_DEC_MAX_SCALE) return -1;
    }
}

/* One column of doubles (bits in tmp): as decimals m / 10^s when every
 * value is one with the same small s (prices, readings: what text input
 * gives), else raw. */
static unsigned char *ref_put_double_column(unsigned char *p, int n, uint64_t *tmp, int64_t *m)
{
    int s = ref_dec_column(tmp, n, m);
    if (s >= 0) {
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        for (int r = 0; r < n; r++) {
            mn = m[r] < mn ? m[r] : mn;
            mx = m[r] > mx ? m[r] : mx;
        }
        int w = ref_bit_width((uint64_t)mx - (uint64_t)mn);
        if (w < 60) {
            *p++ = REF_COL_DEC;
            *p++ = (unsigned char)s;
            p = varint_put(p, zigzag((uint64_t)mn));
            *p++ = (unsigned char)w;
            return ref_bits_pack(p, (const uint64_t *)m, n, w, (uint64_t)mn);
        }
    }
    *p++ = REF_COL_RAW_DOUBLE;
    for (int r = 0; r < n; r++, p += 8) be64_put(p, tmp[r]);
    return p;
}

/* A column in the version 1 value format (tag and payload per value). */
static int ref_put_tagged_column(sbuf *out, unsigned char **pp, const batch *b, int c)
{
    unsigned char *p = *pp;
    int64_t prev = 0;
    for (int r = 0; r < b->nrows; r++) {
        const val *v = &batch_row(b, r)[c];
        out->len = (size_t)((char *)p - out->p);
        size_t need = REF_ENC_MAX_VAL + (v->type == TY_TEXT ? v->len : 0);
        if (sbuf_reserve(out, need)) return XE_NOMEM;
        p = (unsigned char *)out->p + out->len;
        if (v->type > TY_INTERVAL) return XE_INVAL;
        p = ref_put_tagged(p, v, &prev);
    }
    *pp = p;
    return 0;
}

static int ref_encode_v2(const batch *b, sbuf *out)
{
    size_t start = out->len;
    int n = b->nrows;
    /* the columns, COLS_AT_ONCE at a time, then scratch for one column */
    enum { COLS_AT_ONCE = 4 };
    uint64_t small[(COLS_AT_ONCE + 1) * 1024];
    uint64_t *tmp = n <= 1024 ? small : malloc((size_t)n * (COLS_AT_ONCE + 1) * sizeof *tmp);
    if (!tmp) return XE_NOMEM;
    int types[COLS_AT_ONCE];
    /* per column: a mode, a few header bytes, at most 8 bytes a value */
    int rc = sbuf_reserve(out, 2 + 20 + 4 + (size_t)b->ncols * (32 + (size_t)n * 8));
    unsigned char *p = rc ? NULL : (unsigned char *)out->p + out->len;
    if (p) {
        *p++ = REF_ENC_MAGIC;
        *p++ = REF_ENC_VERSION_COLS;
        p = varint_put(p, (uint64_t)b->ncols);
        p = varint_put(p, (uint64_t)n);
    }
    for (int c = 0; rc == 0 && c < b->ncols; c++) {
        int k = c % COLS_AT_ONCE;
        if (k == 0 && n) ref_columns_of(b, c, b->ncols - c < COLS_AT_ONCE ? b->ncols - c : COLS_AT_ONCE, tmp, types);
        int t = n ? types[k] : -1;
        uint64_t *col = tmp + (size_t)k * (size_t)n;
        if (t == TY_DOUBLE) p = ref_put_double_column(p, n, col, (int64_t *)(tmp + (size_t)COLS_AT_ONCE * (size_t)n));
        else if (t >= 0) p = ref_put_int_column(p, n, t, col);
        else {
            *p++ = REF_COL_TAGGED;
            if ((rc = ref_put_tagged_column(out, &p, b, c)) == 0) {
                /* TEXT may have moved the buffer: room for the other columns again */
                out->len = (size_t)((char *)p - out->p);
                rc = sbuf_reserve(out, 4 + (size_t)(b->ncols - c) * (32 + (size_t)n * 8));
                p = (unsigned char *)out->p + out->len;
            }
        }
    }
    if (tmp != small) free(tmp);
    if (rc == 0) out->len = (size_t)((char *)p - out->p);
    return ref_encoding_end(out, start, rc);
}

