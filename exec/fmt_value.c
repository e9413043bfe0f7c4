/*
 * fmt_value.c: the bottom of format.h's implementation: the schema copies
 * and kind names the decoders and encoders share, messages' quoting, and
 * values from text (fmt_parse_value, fmt_parse_timestamp, a thin wrapper of
 * base/time.c), the conversions CSV fields and JSON strings go through.
 * It calls only base/.
 */
#include "exec/fmt_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ small helpers */

/* The schema's names and types, copied (ncols + 1 entries, zeroed, so that
 * callers may size per-column arrays the same way).  0 or XE_NOMEM; on
 * failure, what was copied is left for schema_free. */
int schema_copy(const fmt_schema *s, char ***names, sql_type **types)
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

void schema_free(char **names, sql_type *types, int ncols)
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

/* The value as it appears in a message: quoted, at most 40 bytes, with
 * unprintable bytes escaped. */
void quote_for_msg(const char *s, size_t n, char *buf, size_t cap)
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

/* ------------------------------------------------------------------ values from text */

int why_not(char *why, size_t cap, const char *s, size_t n, const char *what, sql_type t)
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
