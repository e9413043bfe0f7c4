/*
 * remote.c: SUBSCRIBE from a second process.
 *
 * One engine holds a data directory at a time (the store lock).  A second
 * ares-sql on the same --data DIR gets XE_BUSY from engine_open; its
 * SUBSCRIBE statements then go to the owner through the owner's control
 * socket DIR/ares.sock (exec/io.c).  The protocol: the client writes one
 * line "SUBSCRIBE <query> csv|json"; the owner answers "OK", then for CSV a
 * header line, then one line per row as the query produces it; or it
 * answers "ERROR <message>" and closes.
 *
 * CSV and JSON output pass the owner's lines through unchanged, whole lines
 * only, so that two subscriptions never mix inside a line.  A table or
 * vertical output (a terminal's default) asks for CSV and prints through
 * output.c like a local push query: the values stay text, exactly as the
 * owner wrote them, and the columns whose first rows hold only numbers are
 * aligned to the right, as numbers are in local tables.
 *
 * One poll loop on the main thread serves every subscription's socket and
 * the signal pipe.  A subscription ends when the owner closes it (the query
 * was dropped, the owner stopped); Ctrl-C ends them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cli.h"

enum { REPLY_MAX = 4096 }; /* the owner's OK/ERROR and header lines are short */

typedef enum { SUB_REPLY, SUB_HEADER, SUB_ROWS, SUB_DONE } sub_state;

typedef struct rsub {
    char *query;
    int fd;
    sub_state state;
    int failed;           /* the owner refused or could not be reached */
    sbuf in;              /* bytes received and not yet handled */
    /* table and vertical output */
    int ncols;
    char **names;
    sql_type *types;
    fmt_decoder *dec;
    batch b;
    int batch_on;
    cli_out *out;
    int begun;
} rsub;

struct cli_remote {
    char *dir;
    rsub *subs;
    int n, cap;
};

void cli_remote_busy_error(const char *dir)
{
    fflush(stdout);
    fprintf(stderr,
            "error: the data directory %s is in use by another process (an ares-sql or\n"
            "ares-node that holds it); only SUBSCRIBE works here, through that process:\n"
            "  ares-sql --data %s -e 'SUBSCRIBE query_name;'\n",
            dir, dir);
}

int cli_remote_new(const char *dir, cli_remote **out)
{
    *out = NULL;
    cli_remote *r = calloc(1, sizeof *r);
    if (!r || !(r->dir = strdup(dir))) {
        free(r);
        return XE_NOMEM;
    }
    *out = r;
    return 0;
}

static void sub_fini(rsub *s)
{
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    cli_out_free(s->out);
    s->out = NULL;
    fmt_decoder_free(s->dec);
    s->dec = NULL;
    if (s->batch_on) batch_fini(&s->b);
    s->batch_on = 0;
    for (int i = 0; i < s->ncols; i++) free(s->names[i]);
    free(s->names);
    free(s->types);
    s->names = NULL;
    s->types = NULL;
    s->ncols = 0;
    sbuf_fini(&s->in);
    free(s->query);
    s->query = NULL;
}

void cli_remote_free(cli_remote *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) sub_fini(&r->subs[i]);
    free(r->subs);
    free(r->dir);
    free(r);
}

static int add_sub(cli_remote *r, const char *query)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 4;
        rsub *v = realloc(r->subs, (size_t)cap * sizeof *v);
        if (!v) return XE_NOMEM;
        r->subs = v;
        r->cap = cap;
    }
    rsub *s = &r->subs[r->n];
    memset(s, 0, sizeof *s);
    s->fd = -1;
    sbuf_init(&s->in);
    if (!(s->query = strdup(query))) return XE_NOMEM;
    r->n++;
    return 0;
}

int cli_remote_add_text(cli_remote *r, const char *name, const char *text, size_t n)
{
    parse_result *pr = NULL;
    parse_sql(text, n, &pr);
    if (!pr) {
        cli_error(name, "out of memory");
        return CLI_ESQL;
    }
    int rc = CLI_OK;
    if (pr->nerrors > 0) {
        const parse_error *pe = &pr->errors[0];
        cli_report_at(text, n, name, 1, pe->line, pe->col, pe->msg);
        rc = CLI_ESQL;
    }
    for (int i = 0; i < pr->nstmts && rc == CLI_OK; i++) {
        if (pr->stmts[i]->kind != ST_SUBSCRIBE) {
            cli_remote_busy_error(r->dir);
            rc = CLI_ESQL;
        } else if (add_sub(r, pr->stmts[i]->name) < 0) {
            cli_error(name, "out of memory");
            rc = CLI_ESQL;
        }
    }
    parse_result_free(pr);
    return rc;
}

int cli_remote_add_file(cli_remote *r, const char *path)
{
    int stdin_ = strcmp(path, "-") == 0;
    int fd = stdin_ ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error(NULL, "cannot open %s: %s", path, strerror(errno));
        return CLI_EUSAGE;
    }
    sbuf text;
    sbuf_init(&text);
    int rc = CLI_OK;
    for (;;) {
        char buf[65536];
        ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR && !cli_interrupted()) continue;
        if (k < 0) {
            rc = cli_interrupted() ? CLI_INTR : CLI_EUSAGE;
            if (rc == CLI_EUSAGE) cli_error(path, "reading: %s", strerror(errno));
            break;
        }
        if (k == 0) break;
        if (sbuf_add(&text, buf, (size_t)k) < 0) {
            cli_error(path, "out of memory");
            rc = CLI_ESQL;
            break;
        }
    }
    if (!stdin_) close(fd);
    if (rc == CLI_OK) rc = cli_remote_add_text(r, stdin_ ? "<stdin>" : path, text.p ? text.p : "", text.len);
    sbuf_fini(&text);
    return rc;
}

/* ------------------------------------------------------------------ output */

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -errno;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The header line of a CSV subscription: column names, comma-separated (the
 * owner writes query column names, which need no quoting). */
static int take_header(rsub *s, const char *line, size_t n)
{
    int cols = 1;
    for (size_t i = 0; i < n; i++) cols += line[i] == ',';
    s->names = calloc((size_t)cols, sizeof *s->names);
    s->types = calloc((size_t)cols, sizeof *s->types);
    if (!s->names || !s->types) return XE_NOMEM;
    const char *p = line, *end = line + n;
    for (int c = 0; c < cols; c++) {
        const char *q = memchr(p, ',', (size_t)(end - p));
        if (!q) q = end;
        if (!(s->names[c] = strndup(p, (size_t)(q - p)))) return XE_NOMEM;
        s->types[c] = TY_TEXT;
        s->ncols = c + 1;
        p = q + 1;
    }
    fmt_schema sc = {s->ncols, (const char *const *)s->names, s->types};
    fmt_dec_opts d = {0};
    d.header = FMT_HEADER_NO;
    if (fmt_decoder_new(FMT_CSV, &sc, &d, &s->dec) < 0 || batch_init(&s->b, s->ncols, 256) < 0) return XE_NOMEM;
    s->batch_on = 1;
    return 0;
}

/* A column is aligned as a number when the first rows hold numbers only. */
static void guess_types(rsub *s)
{
    for (int c = 0; c < s->ncols; c++) {
        int numbers = 0, others = 0;
        for (int r = 0; r < s->b.nrows; r++) {
            const val *v = &batch_row(&s->b, r)[c];
            if (v->type != TY_TEXT) continue;
            val x;
            char why[8];
            if (fmt_parse_value(TY_DOUBLE, v->s, v->len, 1, &x, why, sizeof why) == 0) numbers++;
            else others++;
        }
        s->types[c] = numbers && !others ? TY_DOUBLE : TY_TEXT;
    }
}

static int begin_table(rsub *s)
{
    if (s->begun) return 0;
    s->begun = 1;
    fmt_schema sc = {s->ncols, (const char *const *)s->names, s->types};
    const exec_out *eo = cli_out_exec(s->out);
    return eo->begin(eo->ctx, &sc, 1);
}

/* Complete lines of rows: straight through, or decoded and printed. */
static int take_rows(rsub *s, const char *p, size_t n)
{
    if (!s->dec) return write_all(STDOUT_FILENO, p, n) < 0 ? XE_IO : 0;
    xerr err;
    xerr_clear(&err);
    batch_reset(&s->b);
    if (fmt_decode(s->dec, p, n, &s->b, &err) < 0) return XE_NOMEM;
    if (s->b.nrows == 0) return 0;
    if (!s->begun) guess_types(s);
    const exec_out *eo = cli_out_exec(s->out);
    if (begin_table(s) < 0 || eo->rows(eo->ctx, &s->b) < 0) return XE_IO;
    return 0;
}

/* ------------------------------------------------------------------ the loop */

static int sub_connect(cli_remote *r, rsub *s, fmt_kind want)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    int len = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/ares.sock", r->dir);
    if (len < 0 || (size_t)len >= sizeof sa.sun_path) {
        cli_error(NULL, "SUBSCRIBE %s: the path %s/ares.sock is too long for a unix socket", s->query, r->dir);
        return CLI_ESQL;
    }
    s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        cli_error(NULL, "SUBSCRIBE %s: cannot reach the process that holds %s (through %s): %s", s->query, r->dir,
                  sa.sun_path, strerror(errno));
        return CLI_ESQL;
    }
    char req[512];
    int k = snprintf(req, sizeof req, "SUBSCRIBE %s %s\n", s->query, want == FMT_JSON ? "json" : "csv");
    if (k < 0 || (size_t)k >= sizeof req || write_all(s->fd, req, (size_t)k) < 0) {
        cli_error(NULL, "SUBSCRIBE %s: cannot send the request: %s", s->query, strerror(errno));
        return CLI_ESQL;
    }
    return CLI_OK;
}

/* Handle the complete lines in s->in.  CLI_OK, or CLI_ESQL when the owner
 * refused (reported). */
static int sub_lines(rsub *s, fmt_kind want, int at_end)
{
    size_t off = 0;
    while (s->state != SUB_DONE && off < s->in.len) {
        const char *p = s->in.p + off;
        size_t left = s->in.len - off;
        if (s->state == SUB_ROWS) {
            /* every complete line at once */
            size_t n = left;
            while (n > 0 && p[n - 1] != '\n') n--;
            if (n == 0 && at_end) n = left; /* a last line cut short */
            if (n == 0) break;
            if (take_rows(s, p, n) < 0) {
                cli_error(NULL, "SUBSCRIBE %s: writing the output: %s", s->query, strerror(errno ? errno : EIO));
                s->failed = 1;
                s->state = SUB_DONE;
                return CLI_ESQL;
            }
            off += n;
            continue;
        }
        const char *nl = memchr(p, '\n', left);
        if (!nl) {
            if (left > REPLY_MAX) {
                cli_error(NULL, "SUBSCRIBE %s: the reply is not the protocol's", s->query);
                s->failed = 1;
                s->state = SUB_DONE;
                return CLI_ESQL;
            }
            break;
        }
        size_t n = (size_t)(nl - p);
        off += n + 1;
        if (n && p[n - 1] == '\r') n--;
        if (s->state == SUB_REPLY) {
            if (n == 2 && !memcmp(p, "OK", 2)) {
                s->state = want == FMT_CSV || want == FMT_TABLE || want == FMT_VERTICAL ? SUB_HEADER : SUB_ROWS;
            } else {
                const char *msg = n > 6 && !memcmp(p, "ERROR ", 6) ? p + 6 : p;
                size_t mn = (size_t)(p + n - msg);
                cli_error(NULL, "SUBSCRIBE %s: %.*s", s->query, (int)mn, msg);
                s->failed = 1;
                s->state = SUB_DONE;
                return CLI_ESQL;
            }
        } else { /* SUB_HEADER */
            s->state = SUB_ROWS;
            if (s->out) {
                if (take_header(s, p, n) < 0) {
                    cli_error(NULL, "out of memory");
                    s->failed = 1;
                    s->state = SUB_DONE;
                    return CLI_ESQL;
                }
            } else if (write_all(STDOUT_FILENO, p, n) < 0 || write_all(STDOUT_FILENO, "\n", 1) < 0) {
                s->state = SUB_DONE;
                return CLI_ESQL;
            }
        }
    }
    memmove(s->in.p, s->in.p + off, s->in.len - off);
    s->in.len -= off;
    return CLI_OK;
}

/* The owner closed the subscription (or it failed): finish its output. */
static void sub_end(rsub *s, fmt_kind want)
{
    if (s->state == SUB_ROWS) sub_lines(s, want, 1);
    if (s->out && s->ncols && !s->failed) {
        if (!s->begun) begin_table(s); /* no rows: a header and "(0 rows)" */
        const exec_out *eo = cli_out_exec(s->out);
        eo->end(eo->ctx);
    }
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    s->state = SUB_DONE;
}

int cli_remote_run(cli_remote *r, cli *c)
{
    if (r->n == 0) return CLI_OK;
    cli_out_opts oo = cli_out_opts_for(c);
    fmt_kind want = oo.push_kind;
    int rc = CLI_OK;
    for (int i = 0; i < r->n && rc == CLI_OK; i++) {
        rsub *s = &r->subs[i];
        if (want == FMT_TABLE || want == FMT_VERTICAL) {
            if (cli_out_new(&oo, &s->out) < 0) {
                cli_error(NULL, "out of memory");
                rc = CLI_ESQL;
                break;
            }
        }
        rc = sub_connect(r, s, want);
        if (rc == CLI_OK && !c->quiet) {
            fflush(stdout);
            fprintf(stderr, "SUBSCRIBE %s (through the process that holds %s)\n", s->query, r->dir);
        }
    }

    struct pollfd *p = calloc((size_t)r->n + 1, sizeof *p);
    if (!p && rc == CLI_OK) {
        cli_error(NULL, "out of memory");
        rc = CLI_ESQL;
    }
    while (rc == CLI_OK) {
        if (cli_interrupted()) {
            rc = CLI_INTR;
            break;
        }
        int n = 0;
        p[n++] = (struct pollfd){.fd = cli_signal_fd(), .events = POLLIN};
        for (int i = 0; i < r->n; i++)
            if (r->subs[i].state != SUB_DONE) p[n++] = (struct pollfd){.fd = r->subs[i].fd, .events = POLLIN};
        if (n == 1) break; /* every subscription has ended */
        if (poll(p, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            cli_error(NULL, "poll: %s", strerror(errno));
            rc = CLI_ESQL;
            break;
        }
        if (p[0].revents) cli_signal_drain();
        for (int i = 0, k = 1; i < r->n && rc == CLI_OK; i++) {
            rsub *s = &r->subs[i];
            if (s->state == SUB_DONE) continue;
            if (!p[k++].revents) continue;
            char buf[65536];
            ssize_t got = read(s->fd, buf, sizeof buf);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) {
                if (s->state == SUB_REPLY) {
                    cli_error(NULL, "SUBSCRIBE %s: the process that holds %s closed the connection", s->query,
                              r->dir);
                    rc = CLI_ESQL;
                }
                sub_end(s, want);
                continue;
            }
            if (sbuf_add(&s->in, buf, (size_t)got) < 0) {
                cli_error(NULL, "out of memory");
                rc = CLI_ESQL;
                break;
            }
            rc = sub_lines(s, want, 0);
        }
    }
    /* Ctrl-C or an error: what came so far is printed and the tables closed */
    for (int i = 0; i < r->n; i++)
        if (r->subs[i].state != SUB_DONE) sub_end(&r->subs[i], want);
    free(p);
    fflush(stdout);
    return rc;
}
