/*
 * time.c: timestamps and intervals as text, the one parse and print of each
 * (declared in base.h).  The parser reads SQL literals (TIMESTAMP '...',
 * parser/ast.c) and data (CSV and JSON values, exec/fmt_value.c); the two
 * dialects share the grammar and differ only where base.h's comment says.
 * The ISO printer is on the output path of every row with a timestamp, so it
 * writes digits into a fixed buffer without printf.
 *
 * Pure functions of their arguments: any thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

/* ------------------------------------------------------------------ timestamps */

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int month_days(int64_t y, int m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* Exactly k digits at s[*i]. */
static int digits(const char *s, size_t n, size_t *i, int k, int *out)
{
    int x = 0;
    for (int j = 0; j < k; j++, (*i)++) {
        if (*i >= n || s[*i] < '0' || s[*i] > '9') return -1;
        x = x * 10 + (s[*i] - '0');
    }
    *out = x;
    return 0;
}

/* Signed decimal epoch milliseconds, all of s[0..n) (n > 0), in range. */
static int epoch_ms(const char *s, size_t n, int64_t *ms)
{
    size_t i = 0;
    int neg = 0;
    if (s[i] == '-' || s[i] == '+') neg = s[i++] == '-';
    if (i == n) return -1;
    int64_t x = 0;
    for (; i < n; i++) {
        x = x * 10 + (s[i] - '0');
        if (x > TIME_TS_MAX + 1) return -1; /* out of range long before int64's */
    }
    if (neg) x = -x;
    if (x < TIME_TS_MIN || x > TIME_TS_MAX) return -1;
    *ms = x;
    return 0;
}

int time_ts_parse(const char *s, size_t n, time_dialect dialect, int64_t *ms)
{
    int data = dialect == TIME_DATA;
    size_t i = 0;
    /* Blanks: data trims ' ' and '\t' at both ends first; SQL skips ' ' at
     * the start here and at the end below, so what a zone reads sees them. */
    if (data) {
        while (n && (s[0] == ' ' || s[0] == '\t')) s++, n--;
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
        if (n == 0) return -1;
        /* Epoch milliseconds: all digits (an ISO date has a '-' after 4 digits). */
        i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == n) return epoch_ms(s, n, ms);
        i = 0;
    }
    while (i < n && s[i] == ' ') i++;
    int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, timed = 0;
    if (digits(s, n, &i, 4, &y) || i >= n || s[i++] != '-' || digits(s, n, &i, 2, &mo) || i >= n ||
        s[i++] != '-' || digits(s, n, &i, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo)) return -1;
    if (i < n && (s[i] == ' ' || s[i] == 'T' || s[i] == 't') && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9') {
        i++;
        timed = 1;
        if (digits(s, n, &i, 2, &h) || i >= n || s[i++] != ':' || digits(s, n, &i, 2, &mi)) return -1;
        if (i < n && s[i] == ':') {
            i++;
            if (digits(s, n, &i, 2, &sec)) return -1;
            if (i < n && (s[i] == '.' || (data && s[i] == ','))) {
                i++;
                size_t start = i;
                for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
                    if (i - start < 3) frac = frac * 10 + (s[i] - '0');
                if (i == start || (data && i - start > 9)) return -1;
                for (size_t k = i - start; k < 3; k++) frac *= 10;
            }
        }
        if (h > 23 || mi > 59 || sec > 59) return -1;
    }
    int64_t off = 0; /* the zone's offset, ms east of UTC */
    if (timed || !data) {
        if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
            i++;
        } else if (i < n && (s[i] == '+' || s[i] == '-')) {
            int sign = s[i++] == '-' ? -1 : 1, oh, om = 0, colon = 0;
            if (digits(s, n, &i, 2, &oh)) return -1;
            if (i < n && s[i] == ':') i++, colon = 1;
            if ((i < n || (data && colon)) && digits(s, n, &i, 2, &om)) return -1;
            if (oh > 23 || om > 59) return -1;
            off = sign * (oh * 3600000LL + om * 60000LL);
        }
    }
    while (i < n && s[i] == ' ') i++;
    if (i != n) return -1;
    *ms = date_days_from_civil(y, mo, d) * 86400000LL + h * 3600000LL + mi * 60000LL + sec * 1000LL + frac - off;
    return 0;
}

/* Decimal digits of x, right-aligned in buf[0..width) with zeros. */
static void put_digits(char *buf, unsigned x, int width)
{
    for (int i = width - 1; i >= 0; i--, x /= 10) buf[i] = (char)('0' + x % 10);
}

size_t time_ts_print(int64_t ms, time_dialect dialect, char buf[TIME_TS_BUF])
{
    int64_t days = ms / 86400000, rem = ms % 86400000;
    if (rem < 0) {
        rem += 86400000;
        days--;
    }
    int64_t y;
    int m, d;
    date_civil_from_days(days, &y, &m, &d);
    size_t o;
    if (y >= 0 && y <= 9999) {
        put_digits(buf, (unsigned)y, 4);
        o = 4;
    } else {
        o = (size_t)snprintf(buf, TIME_TS_BUF, "%04" PRId64, y); /* outside what ISO text says */
    }
    memcpy(buf + o, "-MM-DDTHH:MM:SS.sssZ", 21);
    put_digits(buf + o + 1, (unsigned)m, 2);
    put_digits(buf + o + 4, (unsigned)d, 2);
    put_digits(buf + o + 7, (unsigned)(rem / 3600000), 2);
    put_digits(buf + o + 10, (unsigned)(rem / 60000 % 60), 2);
    put_digits(buf + o + 13, (unsigned)(rem / 1000 % 60), 2);
    put_digits(buf + o + 16, (unsigned)(rem % 1000), 3);
    if (dialect == TIME_DATA) return o + 20;
    /* SQL: a blank for the 'T', no zone, milliseconds only when there are some */
    buf[o + 6] = ' ';
    o += rem % 1000 ? 19 : 15;
    buf[o] = '\0';
    return o;
}

/* ------------------------------------------------------------------ intervals */

/* Read a decimal number (digits, optional fraction, optional exponent) as
 * mantissa * 10^exp with at most 18 significant digits.  Returns 0, -1 when
 * the text is not a number, -2 when it has too many significant digits. */
static int decimal_parse(const char *s, size_t n, int64_t *mant, int *exp10)
{
    size_t i = 0;
    int64_t m = 0;
    int e = 0, ndigits = 0, any = 0, dot = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '.' && !dot) {
            dot = 1;
            continue;
        }
        if (c < '0' || c > '9') break;
        any = 1;
        if (m == 0 && c == '0') {
            if (dot) e--;
            continue;
        }
        if (ndigits >= 18) {
            if (c != '0') return -2;
            if (!dot) e++; /* a trailing zero of the integer part */
            continue;
        }
        m = m * 10 + (c - '0');
        ndigits++;
        if (dot) e--;
    }
    if (!any) return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int sign = 1;
        if (i < n && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
        if (i >= n) return -1;
        long x = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (x < 100000) x = x * 10 + (s[i] - '0');
        e += (int)(sign * x);
    }
    if (i != n) return -1;
    *mant = m;
    *exp10 = e;
    return 0;
}

int time_iv_parse(const char *s, size_t n, int64_t unit_ms, int64_t *ms)
{
    int64_t mant, v;
    int exp10;
    int rc = decimal_parse(s, n, &mant, &exp10);
    if (rc) return rc;
    if (mant == 0) {
        *ms = 0;
        return 0;
    }
    if (__builtin_mul_overflow(mant, unit_ms, &v)) return -2;
    for (; exp10 > 0; exp10--)
        if (__builtin_mul_overflow(v, 10, &v)) return -2;
    for (; exp10 < 0; exp10++) {
        if (v % 10) return -3;
        v /= 10;
    }
    *ms = v;
    return 0;
}

int time_iv_print(int64_t ms, sbuf *b)
{
    static const struct { int64_t ms; const char *one, *many; } units[] = {
        {86400000, "DAY", "DAYS"}, {3600000, "HOUR", "HOURS"}, {60000, "MINUTE", "MINUTES"},
        {1000, "SECOND", "SECONDS"}, {1, "MILLISECOND", "MILLISECONDS"},
    };
    if (ms == 0) return sbuf_adds(b, "0 SECONDS");
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ms % units[i].ms == 0)
            return sbuf_printf(b, "%" PRId64 " %s", ms / units[i].ms, ms == units[i].ms ? units[i].one : units[i].many);
    return XE_INVAL; /* not reached: every ms is a multiple of 1 */
}
