/*
 * fmt_json.c: the JSON-lines record layer.  json_line parses one line with
 * Jansson (which allocates per object), finds each column's member and
 * converts it into d->row; TEXT values point into the Jansson object until
 * the row is copied into the caller's batch.
 */
#include "exec/fmt_int.h"

#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int json_line(fmt_decoder *d, const char *p, size_t n, int64_t line, batch *out)
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
