/*
 * format.h: outside bytes to batches and batches to text.  Part of exec's
 * public interface: exec.h includes it, and cluster/ and cli/ decode and
 * encode with it (fmt_schema, the CSV and JSON encoders, timestamps).
 *
 * Decoders turn CSV or JSON lines into rows of a known schema.  They are
 * streaming: feed chunks of any size (a line may be split anywhere) with
 * fmt_decode, then call fmt_decode_finish at end of input so that a last line
 * without a newline counts.  Each complete line becomes one row appended to
 * the caller's batch, or a rejection: the line number and a reason such as
 *   line 17: column 'price': 'abc' is not a DOUBLE
 * Rejections are not errors: fmt_decode still returns 0.  The decoder keeps
 * the first few in full plus a count (fmt_decoder_rejects, fmt_rejects_print)
 * and can also call a callback for each.  One decoder per input (per producer
 * on a socket source): line numbers belong to it.
 *
 * A record is a line, except that a quoted CSV field may hold line ends
 * (RFC 4180): its record then goes on over the next lines, and a rejection
 * names the line the record started on.  A record may span at most max_line
 * bytes, so a quote that is never closed costs at most that much input, and
 * is reported.  A line longer than max_line (1 MiB) is rejected and skipped
 * without being buffered.  Nothing is allocated per line on the CSV path once
 * buffers have grown; JSON goes through Jansson, which allocates per object.
 *
 * CSV rules (RFC 4180 with these choices):
 *   - fields separated by ',' (or opts.delim, any byte but '"', CR and LF),
 *     "quoted" fields with "" for a quote (line ends inside are kept as they
 *     are, CRLF or LF), LF or CRLF record ends, a UTF-8 byte order mark on
 *     line 1 ignored, empty lines skipped;
 *   - an empty unquoted field is NULL; "" is the empty string for TEXT and
 *     NULL for other types; non-TEXT fields may carry spaces around the value;
 *   - opts.null_string (PostgreSQL COPY's NULL): an unquoted field equal to
 *     it (spaces around it ignored but for TEXT) is NULL, and a quoted one is
 *     the text; with it set, an empty unquoted TEXT field is the empty string
 *     (other types: still NULL);
 *   - header: FMT_HEADER_AUTO (default) takes the first line as a header when
 *     no column is named twice (case-insensitive, spaces around a name
 *     ignored) and more of its fields name columns than not;
 *     FMT_HEADER_YES requires one (a repeated name, or none known, is fatal);
 *     FMT_HEADER_NO has none.  A header may list the columns in any order and
 *     may leave columns out: those are NULL in every row (but opts.time_col,
 *     the event time, which a header must name).  A header field that names
 *     no column is ignored, with one notice (opts.on_notice) naming it.
 *     Without a header each line has exactly the schema's columns, in order.
 *   - a rejected line that looks like the other format (a CSV line starting
 *     with '{', a JSON line of fields and delimiters) says so, followed by
 *     opts.kind_note.
 * JSON lines: one object per line; each column is the member of that name
 * (exact match first, then case-insensitive); a missing member or null is
 * NULL; members that name no column are ignored.  Numbers for numeric
 * columns (an integral number such as 3.0 is fine for an integer column),
 * strings for TEXT, true/false for BOOLEAN, a number (epoch ms) or an ISO
 * string for TIMESTAMP.
 * With opts.time_col, a line whose event time is empty, null or missing is
 * rejected (a row without one would fall into no window).
 * Values from text (fmt_parse_value): BIGINT and INT are range-checked int64;
 * DOUBLE is a decimal or hex number with nothing after it, and not inf or NaN;
 * BOOLEAN is true/false/t/f/yes/no/y/n/on/off/1/0 in any case; TIMESTAMP is epoch
 * milliseconds (an integer) or ISO 8601 (see fmt_parse_timestamp); INTERVAL
 * is integer milliseconds.
 *
 * Encoders write rows as CSV (header row, RFC quoting), JSON lines, an aligned
 * table (psql style; all rows measured, or streaming with widths fixed at the
 * first batch) or vertical records (psql \x).  Value text: integers plain,
 * doubles in the shortest form that reads back exactly (6, 2.5, 0.1, 1e+21),
 * TIMESTAMP as 2023-11-14T22:13:20.000Z (UTC), BOOLEAN true/false, INTERVAL as
 * integer milliseconds; NULL is empty in CSV, null in JSON and NULL in tables.
 * Non-finite doubles print as NaN, Infinity, -Infinity (null in JSON).
 */
#ifndef EXEC_FORMAT_H
#define EXEC_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "exec/batch.h"

/* The columns a decoder fills or an encoder prints.  Borrowed: decoders and
 * encoders copy what they need at creation. */
typedef struct fmt_schema {
    int ncols;
    const char *const *names;
    const sql_type *types;
} fmt_schema;

typedef enum fmt_kind { FMT_CSV, FMT_JSON, FMT_TABLE, FMT_VERTICAL } fmt_kind;

/* "csv", "json" (or "jsonl"), "table", "vertical" (case-insensitive): 0 or XE_INVAL. */
int fmt_kind_parse(const char *name, fmt_kind *out);
const char *fmt_kind_name(fmt_kind k);

/* ------------------------------------------------------------------ values as text */

enum { FMT_TS_BUF = TIME_TS_BUF, FMT_DOUBLE_BUF = 40 };

/* ISO 8601 or epoch milliseconds to epoch milliseconds (UTC):
 *   1700000000000 | -86400000
 *   2023-11-14 | 2023-11-14T22:13 | 2023-11-14T22:13:20 | ...20.5 | ...20.123456
 *   with 'T', 't' or ' ' between date and time, then optionally Z, +hh:mm,
 *   -hh:mm, +hhmm or +hh.  No zone means UTC.  Digits past milliseconds are
 *   truncated.  Spaces around the text are ignored.  Both forms must lie in
 *   0000-01-01T00:00:00Z .. 9999-12-31T23:59:59.999Z (what ISO text can say,
 *   so that every accepted value prints back in a form that parses).
 * Returns 0 or XE_INPUT.  (base's time_ts_parse, dialect TIME_DATA.) */
int fmt_parse_timestamp(const char *s, size_t n, int64_t *ms);

/* Text to a value of type t (see the rules above).  TEXT values point into s
 * (no copy).  Empty text is NULL, except for TEXT when !empty_is_null.
 * On failure returns XE_INPUT and puts a reason in why, like
 * "'abc' is not a DOUBLE" or "'99999999999999999999' is out of range for BIGINT". */
int fmt_parse_value(sql_type t, const char *s, size_t n, int empty_is_null, val *out, char *why, size_t whylen);

/* Writers into a caller's buffer; return the length (the text is NUL-terminated). */
size_t fmt_timestamp(int64_t ms, char buf[FMT_TS_BUF]);  /* 2023-11-14T22:13:20.000Z; years
                                                          * past 9999 get more digits, before 0 a '-' */
size_t fmt_double(double d, char buf[FMT_DOUBLE_BUF]);   /* shortest exact: 6, 0.1, 1e+21; may
                                                          * write all of buf, past the NUL too */

/* Appends the plain text of a value: NULL as "NULL", TEXT as its bytes. */
int fmt_val_text(const val *v, sbuf *out);

/* ------------------------------------------------------------------ decoders */

typedef enum fmt_header { FMT_HEADER_AUTO = 0, FMT_HEADER_YES, FMT_HEADER_NO } fmt_header;

enum { FMT_MAX_LINE = 1 << 20, FMT_KEEP_REJECTS = 10, FMT_REJECT_MSG = 320 };

typedef struct fmt_reject {
    int64_t line;              /* 1-based line of the input */
    char msg[FMT_REJECT_MSG];  /* "line 17: column 'price': 'abc' is not a DOUBLE" */
} fmt_reject;

typedef struct fmt_rejects {
    int64_t count;  /* every rejected line so far */
    int n, keep;    /* v holds the first n (n <= keep) in full */
    fmt_reject *v;
} fmt_rejects;

/* Called for every rejection, in input order. */
typedef void fmt_reject_fn(void *ctx, int64_t line, const char *msg);

typedef struct fmt_dec_opts {
    fmt_header header;     /* CSV only */
    char delim;            /* CSV only; 0 means ',' */
    const char *null_string; /* CSV only: the text of NULL (see above); NULL: none */
    const char *kind_note; /* ends "this looks like JSON; ..." (NULL: "the input is read as CSV") */
    fmt_reject_fn *on_notice; /* optional: news that rejects nothing (a header column ignored) */
    size_t max_line;       /* 0 means FMT_MAX_LINE */
    int keep_rejects;      /* rejections kept in full; 0 means FMT_KEEP_REJECTS, < 0 none */
    int time_col;          /* 1 + the column of the event time, which a row must
                            * have (empty or null is a rejection); 0: none */
    uint64_t key_cols;     /* a table's key: the columns (below 64) a row must have (empty or null is a rejection) */
    int op_col;            /* 1 + a table's op_column, whose value must be I, U or D; 0: none */
    fmt_reject_fn *on_reject; /* optional */
    void *ctx;
} fmt_dec_opts;

typedef struct fmt_decoder fmt_decoder;

/* The text of a delimiter option: one byte other than '"', CR, LF and
 * space, or "\t" (a backslash and a t) or "tab" for a tab.  0 or XE_INVAL
 * with a reason in why. */
int fmt_parse_delim(const char *text, char *out, char *why, size_t cap);
/* Input options that fit together: delimiter and null_string are for CSV;
 * a null string holds neither the delimiter, a quote nor a line end.
 * delim 0 means ','.  0 or XE_INVAL with a reason in why. */
int fmt_check_input_opts(fmt_kind kind, int csv_only_set, char delim, const char *null_string, char *why,
                         size_t cap);

/* kind is FMT_CSV or FMT_JSON; opts may be NULL.  XE_INVAL, XE_NOMEM. */
int fmt_decoder_new(fmt_kind kind, const fmt_schema *schema, const fmt_dec_opts *opts, fmt_decoder **out);
void fmt_decoder_free(fmt_decoder *d);

/* Feed p[0..n).  Rows for the complete lines are appended to out, which must
 * have schema->ncols columns; its TEXT values are copied into out's arena.
 * Returns 0 (rejected lines included), XE_NOMEM, or XE_INPUT for a fatal
 * input error (a bad header with FMT_HEADER_YES; err says why), after which
 * every call fails the same way; XE_INVAL when out has the wrong width. */
int fmt_decode(fmt_decoder *d, const void *p, size_t n, batch *out, xerr *err);
/* End of input: a last line without a newline is decoded too.  The decoder
 * can then take a new input (line numbers and header detection start again;
 * rejections and counts are kept). */
int fmt_decode_finish(fmt_decoder *d, batch *out, xerr *err);

/* Save the decoder's state between two fmt_decode calls (its line count, an
 * unfinished line, the header's column order) and load it into a new
 * decoder of the same kind and schema, which then goes on exactly as this
 * one would: a stream's shadow home takes over an ingest in the middle. */
int fmt_decoder_save(const fmt_decoder *d, sbuf *out);
int fmt_decoder_load(fmt_decoder *d, const void *p, size_t n, xerr *err);

/* Bytes fed but not yet part of a row or a rejection (an unfinished line
 * or multi-line record): a file source commits its position before them. */
size_t fmt_decoder_pending(const fmt_decoder *d);

typedef struct fmt_dec_stats {
    int64_t lines;    /* lines seen, including header, blank and rejected lines */
    int64_t rows;     /* rows produced */
    int64_t rejected; /* lines rejected */
} fmt_dec_stats;
fmt_dec_stats fmt_decoder_stats(const fmt_decoder *d);
const fmt_rejects *fmt_decoder_rejects(const fmt_decoder *d);
void fmt_decoder_clear_rejects(fmt_decoder *d); /* count and kept ones to zero */

/* "line 3: ...\n" for each kept rejection, then "... and 17 more rejected
 * lines\n" when some were not kept.  Appends nothing when there are none. */
int fmt_rejects_print(const fmt_rejects *r, sbuf *out);

/* ------------------------------------------------------------------ encoders */

typedef struct fmt_enc_opts {
    int no_header; /* CSV: no header row; TABLE: no header and rule */
    int stream;    /* TABLE: print each batch as it comes, widths fixed by the
                    * header and the first batch (wider values overflow);
                    * otherwise rows are kept until fmt_encode_finish */
    char delim;    /* CSV; 0 means ',' */
    int no_footer; /* TABLE: no "(N rows)" line */
} fmt_enc_opts;

typedef struct fmt_encoder fmt_encoder;

/* opts may be NULL.  XE_INVAL, XE_NOMEM. */
int fmt_encoder_new(fmt_kind kind, const fmt_schema *schema, const fmt_enc_opts *opts, fmt_encoder **out);
void fmt_encoder_free(fmt_encoder *e);
/* Append the text of b's rows (b has schema->ncols columns) to out; the
 * header comes before the first row.  XE_NOMEM, XE_INVAL (wrong width). */
int fmt_encode(fmt_encoder *e, const batch *b, sbuf *out);
/* End of the rows: the header when no row came, a kept table, the
 * "(N rows)" footer of tables.  The encoder can then start again. */
int fmt_encode_finish(fmt_encoder *e, sbuf *out);

/* One-shot: a whole batch as an aligned table with its footer. */
int fmt_table(const fmt_schema *schema, const batch *b, sbuf *out);

#endif
