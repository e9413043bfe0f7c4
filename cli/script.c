/*
 * script.c: the one script runner, for the embedded engine and for
 * ares-sql --connect alike (the backend, c->be, is the only difference).
 *
 * A script (-e text, a -f or \i file, piped stdin, the shell's lines) is fed
 * one line at a time (cli_script_line).  Lines collect until they end in a
 * complete statement (parse_is_complete: a ';' outside strings and comments
 * at the end); the collected chunk is then parsed with parse_sql and, when
 * it has no syntax error, its statements run in order through the backend,
 * each with its own cli_out (output.c).  A line starting with '\' while
 * nothing is collected is a meta-command (cli_meta, here too, with \copy's
 * options).  The texts, files and stdin of a run go through cli_run_text,
 * cli_run_file and cli_run_scripts; a descriptor is read line by line
 * through cli_wait (run.c), so piped statements run as they arrive.
 *
 * Errors print on stderr in the parser's format, with the caret under the
 * spot (cli_report_at); line numbers count from the start of the input
 * (from the start of the statement in the shell) and a file's name comes
 * first.  Outside the shell the first error stops the script.
 *
 * The call order: shell.c and main.c/client.c call down into this file;
 * it calls down into run.c (the session, waiting, ingest, cli_error),
 * output.c and help.c, and never back up into the shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"


/* Something for the user that is not data: stdout in the shell, stderr in
 * scripts (stdout stays pure data there). */
static void say(const cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const cli *c, const char *fmt, ...)
{
    if (c->quiet && !c->interactive) return;
    FILE *f = c->interactive ? stdout : stderr;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fflush(f);
}

/* ------------------------------------------------------------------ scripts */

void cli_script_init(cli_script *s, const char *name)
{
    memset(s, 0, sizeof *s);
    s->name = name;
    sbuf_init(&s->buf);
}

void cli_script_fini(cli_script *s) { sbuf_fini(&s->buf); }

int cli_script_pending(const cli_script *s) { return s->buf.len > 0; }

void cli_script_clear(cli_script *s) { sbuf_reset(&s->buf); }

/* An error at line/col of a chunk of SQL whose first line is input line
 * buf_line, numbered as in the input, with the caret parse_format_error
 * draws (it numbers lines within the chunk: its first line is rewritten). */
void cli_report_at(const char *src, size_t len, const char *name, int buf_line, int line, int col, const char *msg)
{
    sbuf b;
    sbuf_init(&b);
    parse_format_error(src, len, line, col, msg, &b);
    const char *rest = b.p ? memchr(b.p, '\n', b.len) : NULL;
    fflush(stdout);
    fputs("error: ", stderr);
    if (name) fprintf(stderr, "%s: ", name);
    if (line > 0) fprintf(stderr, "line %d, column %d: ", buf_line + line - 1, col);
    fprintf(stderr, "%s\n%s", msg, rest ? rest + 1 : "");
    sbuf_fini(&b);
}

static void report_at(const cli_script *s, int line, int col, const char *msg)
{
    cli_report_at(s->buf.p, s->buf.len, s->name, s->buf_line, line, col, msg);
}

static void report_engine_error(const cli_script *s, int rc, const xerr *err)
{
    const char *msg = err->msg[0] ? err->msg : xerr_name(rc);
    if (err->line > 0) {
        /* positions of the statement's AST: places in s->buf */
        report_at(s, err->line, err->col > 0 ? err->col : 1, msg);
    } else {
        cli_error(s->name, "%s", msg);
    }
}

static int exec_stmt(cli *c, const cli_script *s, const ast_stmt *st)
{
    cli_out_opts oo = cli_out_opts_for(c);
    cli_out *o = NULL;
    if (cli_out_new(&oo, &o) < 0) {
        cli_error(s->name, "out of memory");
        return CLI_ESQL;
    }
    xerr err;
    xerr_clear(&err);
    int push = st->kind == ST_SELECT || st->kind == ST_SUBSCRIBE;
    if (push && c->interactive && c->be->push_active(c->be_ctx)) {
        /* their rows would interleave with nothing to tell them apart */
        cli_out_free(o);
        cli_error(s->name, "%s", CLI_ONE_PUSH_MSG);
        return CLI_ESQL;
    }
    uint64_t t0 = clock_mono_ns();
    int rc = c->be->exec(c->be_ctx, st, cli_out_exec(o), &err);
    uint64_t t1 = clock_mono_ns();
    c->statements++;
    int werr = cli_out_write_errno(o);
    if (rc == 0 && (st->kind == ST_SELECT || st->kind == ST_SUBSCRIBE)) c->pushes++;
    if (rc == 0 && (st->kind == ST_SELECT || st->kind == ST_CREATE_QUERY || st->kind == ST_CREATE_STREAM_AS ||
                    st->kind == ST_INSERT_SELECT))
        c->consumers++;
    if (push || cli_out_pushed(o)) {
        if (cli_outs_add(&c->keep, &c->nkeep, &c->capkeep, o) < 0) {
            /* cannot track it: stop the push queries rather than leave the
             * backend a dangling output */
            c->be->cancel_push(c->be_ctx);
            cli_out_free(o);
        }
    } else {
        cli_out_free(o);
    }
    if (rc < 0) {
        report_engine_error(s, rc, &err);
        return CLI_ESQL;
    }
    if (werr) {
        cli_error(s->name, "writing the output: %s", strerror(werr));
        return CLI_ESQL;
    }
    if (c->timing) say(c, "Time: %.3f ms", (double)(t1 - t0) / 1e6);
    return CLI_OK;
}

static int run_chunk(cli *c, cli_script *s)
{
    s->chunks++;
    parse_result *r = NULL;
    parse_sql(s->buf.p, s->buf.len, &r);
    int rc = CLI_OK;
    if (!r) {
        cli_error(s->name, "out of memory");
        rc = CLI_ESQL;
    } else if (r->nerrors > 0) {
        for (int i = 0; i < r->nerrors; i++)
            report_at(s, r->errors[i].line, r->errors[i].col, r->errors[i].msg);
        rc = CLI_ESQL;
    } else {
        for (int i = 0; i < r->nstmts && rc == CLI_OK; i++) {
            rc = exec_stmt(c, s, r->stmts[i]);
            if (rc == CLI_OK && cli_interrupted() && i + 1 < r->nstmts) rc = CLI_INTR;
        }
    }
    parse_result_free(r);
    sbuf_reset(&s->buf);
    return rc;
}

static int is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n' && p[i] != '\f') return 0;
    return 1;
}

/* word at p (case-insensitive) followed by a space, ';' or the end */
static int starts_word(const char *p, size_t n, const char *w)
{
    size_t k = strlen(w);
    if (n < k || strncasecmp(p, w, k) != 0) return 0;
    return n == k || p[k] == ' ' || p[k] == '\t' || p[k] == ';' || p[k] == '\r' || p[k] == '\n';
}

int cli_script_line(cli *c, cli_script *s, const char *line, size_t n)
{
    s->line++;
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
    if (s->buf.len == 0) {
        size_t i = 0;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i == n) return CLI_OK; /* blank lines between statements */
        if (line[i] == '\\') return cli_meta(c, s, line + i, n - i);
        if (c->interactive) {
            if (starts_word(line + i, n - i, "help")) {
                char topic[256];
                size_t k = n - i - 4, at = i + 4;
                while (k && (line[at] == ' ' || line[at] == '\t')) at++, k--;
                while (k && (line[at + k - 1] == ';' || line[at + k - 1] == ' ')) k--;
                if (k >= sizeof topic) k = sizeof topic - 1;
                memcpy(topic, line + at, k);
                topic[k] = 0;
                cli_help_statement(stdout, topic);
                return CLI_OK;
            }
            size_t k = n - i;
            while (k && (line[i + k - 1] == ';' || line[i + k - 1] == ' ')) k--;
            if ((k == 4 && strncasecmp(line + i, "quit", 4) == 0) ||
                (k == 4 && strncasecmp(line + i, "exit", 4) == 0))
                return CLI_QUIT;
        }
        s->buf_line = s->relative ? 1 : s->line;
    }
    if (sbuf_add(&s->buf, line, n) < 0 || sbuf_addc(&s->buf, '\n') < 0) {
        cli_error(s->name, "out of memory");
        sbuf_reset(&s->buf);
        return CLI_ESQL;
    }
    if (!parse_is_complete(s->buf.p, s->buf.len)) return CLI_OK;
    return run_chunk(c, s);
}

int cli_script_end(cli *c, cli_script *s)
{
    if (s->buf.len == 0) return CLI_OK;
    if (is_blank(s->buf.p, s->buf.len)) {
        sbuf_reset(&s->buf);
        return CLI_OK;
    }
    return run_chunk(c, s);
}

int cli_run_text(cli *c, const char *name, const char *text, size_t n, int depth)
{
    cli_script s;
    cli_script_init(&s, name);
    s.depth = depth;
    int rc = CLI_OK;
    size_t i = 0;
    while (i < n && rc == CLI_OK) {
        const char *nl = memchr(text + i, '\n', n - i);
        size_t k = nl ? (size_t)(nl - (text + i)) : n - i;
        rc = cli_script_line(c, &s, text + i, k);
        i += k + (nl ? 1 : 0);
        if (rc == CLI_OK && cli_interrupted() && !c->interactive) rc = CLI_INTR;
    }
    if (rc == CLI_OK) rc = cli_script_end(c, &s);
    cli_script_fini(&s);
    return rc;
}

int cli_run_scripts(cli *c, int n, const char *const *script, const int *file, int stdin_sql)
{
    int rc = CLI_OK;
    for (int i = 0; i < n && rc == CLI_OK; i++)
        rc = file[i] ? cli_run_file(c, script[i], 0) : cli_run_text(c, NULL, script[i], strlen(script[i]), 0);
    if (rc == CLI_OK && stdin_sql) rc = cli_run_file(c, "-", 0);
    return rc == CLI_QUIT ? CLI_OK : rc; /* \q: nothing more is read */
}

/* Lines from a descriptor.  Waiting for more goes through cli_wait, so the
 * engine's sockets keep moving while piped SQL trickles in. */
typedef struct line_reader {
    int fd;
    int eof;
    char *buf;
    size_t start, len, cap; /* unread bytes: buf[start..len) */
} line_reader;

/* The next line, '\n' included, in *line (valid until the next call).
 * 1 a line, 0 the end, CLI_INTR, or CLI_EUSAGE for a read error (reported). */
static int next_line(cli *c, line_reader *r, const char *name, const char **line, size_t *n)
{
    for (;;) {
        char *nl = r->len > r->start ? memchr(r->buf + r->start, '\n', r->len - r->start) : NULL;
        if (nl || (r->eof && r->len > r->start)) {
            *line = r->buf + r->start;
            *n = nl ? (size_t)(nl - *line) + 1 : r->len - r->start;
            r->start += *n;
            return 1;
        }
        if (r->eof) return 0;
        if (r->start) {
            memmove(r->buf, r->buf + r->start, r->len - r->start);
            r->len -= r->start;
            r->start = 0;
        }
        if (r->cap - r->len < 4096) {
            size_t cap = r->cap ? 2 * r->cap : 65536;
            char *b = realloc(r->buf, cap);
            if (!b) {
                cli_error(name, "out of memory");
                return CLI_EUSAGE;
            }
            r->buf = b;
            r->cap = cap;
        }
        int w = cli_wait(c, r->fd, -1);
        if (w < 0 && cli_interrupted()) return CLI_INTR;
        if (w == 0) continue;
        ssize_t k = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k < 0 || w < 0) {
            cli_error(name, "reading: %s", strerror(k < 0 ? errno : EIO));
            return CLI_EUSAGE;
        }
        if (k == 0) r->eof = 1;
        r->len += (size_t)k;
    }
}

/* A script from a descriptor, line by line, so that piped statements run as
 * they arrive (and a push query prints while its INSERTs come in). */
static int run_stream(cli *c, const char *name, int fd, int depth)
{
    cli_script s;
    cli_script_init(&s, name);
    s.depth = depth;
    line_reader r;
    memset(&r, 0, sizeof r);
    r.fd = fd;
    int rc = CLI_OK;
    for (;;) {
        const char *line = NULL;
        size_t n = 0;
        int k = next_line(c, &r, name, &line, &n);
        if (k <= 0) {
            rc = k;
            break;
        }
        rc = cli_script_line(c, &s, line, n);
        if (rc == CLI_OK && cli_interrupted() && !c->interactive) rc = CLI_INTR;
        if (rc != CLI_OK) break;
    }
    if (rc == CLI_OK) rc = cli_script_end(c, &s);
    free(r.buf);
    cli_script_fini(&s);
    return rc;
}

int cli_run_file(cli *c, const char *path, int depth)
{
    if (strcmp(path, "-") == 0) return run_stream(c, "<stdin>", STDIN_FILENO, depth);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error(NULL, "cannot open %s: %s", path, strerror(errno));
        return CLI_EUSAGE;
    }
    int rc = run_stream(c, path, fd, depth);
    close(fd);
    return rc;
}

/* ------------------------------------------------------------------ meta-commands */

/* Next argument of a meta-command: a 'quoted' string ('' for a quote), a
 * "quoted" identifier, or a bare word.  Returns 0 at the end, -1 for an
 * unterminated quote. */
static int next_arg(const char **pp, const char *end, char *out, size_t cap, int *quoted)
{
    const char *p = *pp;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p >= end) {
        *pp = p;
        return 0;
    }
    size_t n = 0;
    *quoted = 0;
    if (*p == '\'' || *p == '"') {
        char q = *p++;
        *quoted = q == '\'' ? 1 : 2;
        for (;;) {
            if (p >= end) return -1;
            if (*p == q) {
                if (p + 1 < end && p[1] == q) {
                    if (n + 1 < cap) out[n++] = q;
                    p += 2;
                    continue;
                }
                p++;
                break;
            }
            if (n + 1 < cap) out[n++] = *p;
            p++;
        }
    } else {
        while (p < end && *p != ' ' && *p != '\t') {
            if (n + 1 < cap) out[n++] = *p;
            p++;
        }
    }
    out[n] = 0;
    *pp = p;
    return 1;
}

static void lower(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
}

#define COPY_USAGE "usage: \\copy STREAM FROM 'file' [csv|json] [WITH (format json, delimiter ';', null_string 'NULL', header true)]"

/* One option of \copy's list, name and value as written; kcol and vcol
 * are where they start.  CLI_OK, or CLI_ESQL (reported with a caret). */
static int copy_option(cli_script *s, const char *src, size_t n, int kcol, int vcol, const char *name,
                       const char *value, cli_ingest_opts *io, char *null_buf, size_t null_cap)
{
    int col = vcol;
    char why[240] = "";
    if (!strcasecmp(name, "format")) {
        if (fmt_kind_parse(value, &io->format) < 0 || (io->format != FMT_CSV && io->format != FMT_JSON))
            snprintf(why, sizeof why, "format '%.40s' is not an input format (csv or json)", value);
        io->format_set = 1;
    } else if (!strcasecmp(name, "delimiter")) {
        fmt_parse_delim(value, &io->delim, why, sizeof why);
    } else if (!strcasecmp(name, "null_string") || !strcasecmp(name, "null")) {
        if (strlen(value) >= null_cap) snprintf(why, sizeof why, "null_string is longer than %zu bytes", null_cap - 1);
        else memcpy(null_buf, value, strlen(value) + 1);
        io->null_string = null_buf;
    } else if (!strcasecmp(name, "header")) {
        if (!strcasecmp(value, "true") || !strcasecmp(value, "on")) io->header = FMT_HEADER_YES;
        else if (!strcasecmp(value, "false") || !strcasecmp(value, "off")) io->header = FMT_HEADER_NO;
        else if (!strcasecmp(value, "auto")) io->header = FMT_HEADER_AUTO;
        else snprintf(why, sizeof why, "header '%.40s' must be true, false or auto", value);
    } else {
        snprintf(why, sizeof why, "unknown \\copy option '%s' (known: format, delimiter, null_string, header)", name);
        col = kcol;
    }
    if (!why[0]) return CLI_OK;
    cli_report_at(src, n, s->name, s->line, 1, col, why);
    return CLI_ESQL;
}

/* \copy's [csv|json] [[WITH] (name [=] value, ...)] after the file name:
 * p[0..end) of the command src[0..n).  CLI_OK or CLI_ESQL (reported). */
static int copy_options(cli_script *s, const char *src, size_t n, const char *p, const char *end, cli_ingest_opts *io,
                        char *null_buf, size_t null_cap)
{
#define SKIP() while (p < end && (*p == ' ' || *p == '\t')) p++
#define BAD(at, ...) do { snprintf(why, sizeof why, __VA_ARGS__); cli_report_at(src, n, s->name, s->line, 1, (int)((at) - src) + 1, why); return CLI_ESQL; } while (0)
    char why[300], word[64];
    SKIP();
    const char *w = p;
    while (p < end && *p != ' ' && *p != '\t' && *p != '(') p++;
    snprintf(word, sizeof word, "%.*s", (int)(p - w), w);
    if (!strcasecmp(word, "csv") || !strcasecmp(word, "json")) {
        fmt_kind_parse(word, &io->format);
        io->format_set = 1;
        SKIP();
        w = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '(') p++;
        snprintf(word, sizeof word, "%.*s", (int)(p - w), w);
    }
    if (word[0] && strcasecmp(word, "with")) BAD(w, "unexpected '%s' (%s)", word, COPY_USAGE);
    SKIP();
    if (p == end) {
        if (word[0]) BAD(p, "WITH needs a list of options: (name value, ...)");
        return CLI_OK;
    }
    if (*p != '(') BAD(p, "expected '(' and options (%s)", COPY_USAGE);
    p++;
    for (;;) {
        char name[64], value[1024];
        SKIP();
        const char *k = p;
        while (p < end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_')) p++;
        if (p == k) BAD(p, "expected an option name (format, delimiter, null_string, header)");
        snprintf(name, sizeof name, "%.*s", (int)(p - k), k);
        SKIP();
        if (p < end && *p == '=') p++;
        SKIP();
        const char *v = p;
        size_t vn = 0;
        if (p < end && *p == '\'') {
            for (p++;; p++) {
                if (p >= end) BAD(v, "unterminated quoted value");
                if (*p == '\'') {
                    if (p + 1 < end && p[1] == '\'') p++;
                    else break;
                }
                if (vn + 1 < sizeof value) value[vn++] = *p;
            }
            p++;
        } else {
            while (p < end && *p != ',' && *p != ')' && *p != ' ' && *p != '\t') {
                if (vn + 1 < sizeof value) value[vn++] = *p;
                p++;
            }
            if (vn == 0) BAD(v, "option '%s' needs a value", name);
        }
        value[vn] = 0;
        if (copy_option(s, src, n, (int)(k - src) + 1, (int)(v - src) + 1, name, value, io, null_buf, null_cap) !=
            CLI_OK)
            return CLI_ESQL;
        SKIP();
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == ')') break;
        BAD(p, "expected ',' or ')' after option '%s'", name);
    }
    p++;
    SKIP();
    if (p < end) BAD(p, "unexpected text after the options");
    if (io->format_set && io->format == FMT_JSON && (io->delim || io->null_string || io->header != FMT_HEADER_AUTO))
        BAD(src, "delimiter, null_string and header are for CSV input, and the format is json");
    char why2[200];
    if (io->null_string && fmt_check_input_opts(FMT_CSV, 0, io->delim, io->null_string, why2, sizeof why2))
        BAD(src, "%s", why2);
    return CLI_OK;
#undef SKIP
#undef BAD
}

static int meta_copy(cli *c, cli_script *s, const char *src, size_t n, const char *p, const char *end)
{
    char stream[256], from[16], file[4096], null_buf[256];
    int qs, qf, qfile;
    if (next_arg(&p, end, stream, sizeof stream, &qs) != 1 || next_arg(&p, end, from, sizeof from, &qf) != 1 ||
        strcasecmp(from, "from") != 0 || next_arg(&p, end, file, sizeof file, &qfile) != 1) {
        cli_error(s->name, "%s", COPY_USAGE);
        return CLI_ESQL;
    }
    cli_ingest_opts io;
    memset(&io, 0, sizeof io);
    if (copy_options(s, src, n, p, end, &io, null_buf, sizeof null_buf) != CLI_OK) return CLI_ESQL;
    if (qs != 2) lower(stream); /* identifiers fold to lower case unless "quoted" */

    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error(s->name, "cannot open %s: %s", file, strerror(errno));
        return CLI_ESQL;
    }
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) io.size = sb.st_size;
    io.label = file;
    io.progress = 1;
    io.end_of_stream = 0; /* more may come: the stream stays open */
    exec_ingest_stats st;
    uint64_t t0 = clock_mono_ns();
    int rc = c->be->ingest(c, stream, fd, &io, &st);
    uint64_t t1 = clock_mono_ns();
    close(fd);
    if (rc == CLI_INTR) {
        say(c, "-- \\copy interrupted: %lld rows read from %s", (long long)st.rows, file);
        return c->interactive ? CLI_OK : CLI_INTR;
    }
    if (rc != CLI_OK) return rc == CLI_EINPUT ? CLI_ESQL : rc;
    cli_late_report(stream, &st, 1, rc);
    if (st.rejected)
        say(c, "COPY %lld (%lld line%s rejected)", (long long)st.rows, (long long)st.rejected,
            st.rejected == 1 ? "" : "s");
    else
        say(c, "COPY %lld", (long long)st.rows);
    if (c->timing) say(c, "Time: %.3f ms", (double)(t1 - t0) / 1e6);
    return CLI_OK;
}

int cli_meta(cli *c, cli_script *s, const char *line, size_t n)
{
    const char *end = line + n;
    while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == ';')) end--;
    const char *p = line + 1;
    const char *w = p;
    while (p < end && *p != ' ' && *p != '\t') p++;
    size_t wn = (size_t)(p - w);
    char arg[4096];
    int q;
#define IS(name) (wn == strlen(name) && strncmp(w, name, wn) == 0)
    if (IS("q") || IS("quit")) return CLI_QUIT;
    if (IS("help") || IS("?") || IS("h")) {
        const char *t = p;
        while (t < end && (*t == ' ' || *t == '\t')) t++;
        FILE *f = c->interactive ? stdout : stderr;
        if (t < end) {
            size_t k = (size_t)(end - t) < sizeof arg ? (size_t)(end - t) : sizeof arg - 1;
            memcpy(arg, t, k);
            arg[k] = 0;
            cli_help_statement(f, arg);
        } else {
            cli_help(f);
        }
        return CLI_OK;
    }
    if (IS("timing")) {
        int a = next_arg(&p, end, arg, sizeof arg, &q);
        if (a == 0) c->timing = !c->timing;
        else if (strcasecmp(arg, "on") == 0) c->timing = 1;
        else if (strcasecmp(arg, "off") == 0) c->timing = 0;
        else {
            cli_error(s->name, "usage: \\timing [on|off]");
            return CLI_ESQL;
        }
        say(c, "Timing is %s.", c->timing ? "on" : "off");
        return CLI_OK;
    }
    if (IS("format")) {
        int a = next_arg(&p, end, arg, sizeof arg, &q);
        if (a == 0) {
            cli_out_opts oo = cli_out_opts_for(c);
            say(c, "Output format is %s.", fmt_kind_name(oo.result_kind));
            return CLI_OK;
        }
        fmt_kind k;
        if (a < 0 || fmt_kind_parse(arg, &k) < 0) {
            cli_error(s->name, "usage: \\format table|csv|json|vertical");
            return CLI_ESQL;
        }
        c->format = k;
        c->format_set = 1;
        say(c, "Output format is %s.", fmt_kind_name(k));
        return CLI_OK;
    }
    if (IS("i") || IS("include")) {
        if (next_arg(&p, end, arg, sizeof arg, &q) != 1) {
            cli_error(s->name, "usage: \\i FILE");
            return CLI_ESQL;
        }
        if (s->depth >= 16) {
            cli_error(s->name, "\\i nested too deeply");
            return CLI_ESQL;
        }
        int rc = cli_run_file(c, arg, s->depth + 1);
        return rc == CLI_EUSAGE ? CLI_ESQL : rc;
    }
    if (IS("copy")) return meta_copy(c, s, line, (size_t)(end - line), p, end);
#undef IS
    cli_error(s->name, "unknown meta-command \\%.*s (\\help lists them)", (int)wn, w);
    return CLI_ESQL;
}
