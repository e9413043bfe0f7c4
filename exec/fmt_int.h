/*
 * fmt_int.h: what the files of format.h's implementation share, and nothing
 * else includes.  Bottom first (each calls only those above it in this list):
 *   fmt_value.c    small helpers, values and timestamps from text;
 *   fmt_encode.c   values as text (integers, doubles), the encoders;
 *   fmt_decoder.c  a decoder's life: new, free, rejections;
 *   fmt_csv.c      the CSV record layer;
 *   fmt_json.c     the JSON-lines record layer;
 *   fmt_decode.c   input options, the line layer (fmt_decode), save and load.
 * What a record layer calls per field or per row is here as static inline
 * (trim, emit_row, csv_split), so that the split costs the hot path no call.
 */
#ifndef ARES_EXEC_FMT_INT_H
#define ARES_EXEC_FMT_INT_H

#include "exec/format.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

enum { CSV_OPEN = 1 }; /* csv_split: the line ends inside a quoted field */

/* fmt_value.c */
int schema_copy(const fmt_schema *s, char ***names, sql_type **types);
void schema_free(char **names, sql_type *types, int ncols);
void quote_for_msg(const char *s, size_t n, char *buf, size_t cap);
int why_not(char *why, size_t cap, const char *s, size_t n, const char *what, sql_type t);

/* fmt_decoder.c */
int map_room(fmt_decoder *d, int n);
void reject(fmt_decoder *d, int64_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void kind_hint(const fmt_decoder *d, const char *p, size_t n, char *hint, size_t cap) __attribute__((cold));

/* fmt_csv.c */
int field_grow(fmt_decoder *d) __attribute__((noinline, cold));
int csv_line(fmt_decoder *d, const char *p, size_t n, int cr, int64_t line, batch *out);
int csv_more(fmt_decoder *d, const char *p, size_t n, int cr, batch *out);
void csv_give_up(fmt_decoder *d, const char *why);

/* fmt_json.c */
int json_line(fmt_decoder *d, const char *p, size_t n, int64_t line, batch *out);

/* ------------------------------------------------------------------ inline: per field and per row */

static inline int is_space(char c) { return c == ' ' || c == '\t'; }

static inline void trim(const char **s, size_t *n)
{
    while (*n && is_space(**s)) (*s)++, (*n)--;
    while (*n && is_space((*s)[*n - 1])) (*n)--;
}

/* A table's row has its key and, with an op_column, an op of I, U or D. */
static inline int emit_table_row_ok(fmt_decoder *d, int64_t line)
{
    for (int c = 0; c < d->ncols && c < 64; c++)
        if ((d->o.key_cols >> c & 1) && d->row[c].type == TY_NULL) {
            reject(d, line, "column '%s': no key (empty or null); every row of a table needs its PRIMARY KEY",
                   d->names[c]);
            return 0;
        }
    int oc = d->o.op_col - 1;
    if (oc >= 0 && oc < d->ncols) {
        const val *v = &d->row[oc];
        int ok = v->type == TY_TEXT && v->len == 1 && v->s[0] && strchr("IiUuDd", v->s[0]);
        if (!ok) {
            reject(d, line, "column '%s': op %s%.*s%s is not I, U or D (insert, update, delete)", d->names[oc],
                   v->type == TY_TEXT ? "'" : "", v->type == TY_TEXT ? (int)(v->len > 20 ? 20 : v->len) : 4,
                   v->type == TY_TEXT ? v->s : "NULL", v->type == TY_TEXT ? "'" : "");
            return 0;
        }
    }
    return 1;
}

/* Complete a row: copy d->row (whose TEXT points into scratch) into out. */
/* The row built in d->row, unless it lacks its event time: a row without
 * one belongs to no window, so it is bad input like a bad value. */
static inline int emit_row(fmt_decoder *d, int64_t line, batch *out)
{
    int tc = d->o.time_col - 1;
    if (tc >= 0 && tc < d->ncols && d->row[tc].type == TY_NULL) {
        reject(d, line, "column '%s': no event time (empty or null); every row of the stream needs one", d->names[tc]);
        return 0;
    }
    if (d->o.key_cols && !emit_table_row_ok(d, line)) return 0;
    if (batch_append_row(out, d->row) < 0) return XE_NOMEM;
    d->st.rows++;
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

#endif
