/*
 * run.c: the session that every way of running ares-sql shares.
 *
 * A script (-e text, a -f or \i file, piped stdin, the shell's lines) is fed
 * one line at a time.  Lines collect until they end in a complete statement
 * (parse_is_complete: a ';' outside strings and comments at the end); the
 * collected chunk is then parsed with parse_sql and, when it has no syntax
 * error, its statements run in order through the backend (c->be: the
 * embedded engine defined here, or a cluster's coordinator, client.c).  A line starting
 * with '\' while nothing is collected is a meta-command (cli_meta).
 *
 * Errors print on stderr in the parser's format, with the caret under the
 * spot; line numbers count from the start of the input (from the start of
 * the statement in the shell) and a file's name comes first.  Outside the
 * shell the first error stops the script.
 *
 * Each statement gets its own cli_out.  The engine keeps the exec_out of a
 * push query (a bare SELECT, or SUBSCRIBE) and calls it whenever later work
 * produces rows, so those outputs stay alive in c->keep until cli_fini has
 * closed the engine.
 *
 * The engine's sockets move only while its libuv loop runs.  cli_wait runs
 * it whenever ares-sql waits: for a key in the shell, for the next piped
 * line of SQL, and after the statements (cli_keep_running).  It polls the
 * awaited descriptor, the signal pipe and the loop's backend descriptor
 * together, and runs the loop without blocking (engine_poll(e, 0)) whenever
 * one of them wakes it, or at the loop's next timer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "cli/cli.h"

/* ------------------------------------------------------------------ signals */

static volatile sig_atomic_t g_sig;
static int g_pipe[2] = {-1, -1};

static void on_signal(int signo)
{
    int saved = errno;
    (void)signo;
    g_sig = 1;
    if (g_pipe[1] >= 0) {
        char b = 1;
        ssize_t r = write(g_pipe[1], &b, 1);
        (void)r;
    }
    errno = saved;
}

int cli_signals_install(void)
{
    if (g_pipe[0] < 0 && pipe2(g_pipe, O_NONBLOCK | O_CLOEXEC) < 0) return XE_IO;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocked read returns EINTR */
    /* SIGHUP too: a closed terminal must still close the engine (commit,
     * remove a --memory directory) */
    if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGHUP, &sa, NULL) < 0)
        return XE_IO;
    return 0;
}

int cli_interrupted(void) { return g_sig != 0; }
int cli_signal_fd(void) { return g_pipe[0]; }

void cli_interrupt_clear(void)
{
    g_sig = 0;
    cli_signal_drain();
}

void cli_signal_drain(void)
{
    char b[64];
    if (g_pipe[0] >= 0)
        while (read(g_pipe[0], b, sizeof b) > 0) {}
}

/* ------------------------------------------------------------------ session */

void cli_init(cli *c)
{
    memset(c, 0, sizeof *c);
    c->format = FMT_TABLE;
    c->stdout_tty = isatty(STDOUT_FILENO);
    c->stderr_tty = isatty(STDERR_FILENO);
}

/* The embedded backend: the engine in c->eng. */
static int eng_exec(void *ctx, const ast_stmt *st, const exec_out *out, xerr *err)
{
    return engine_exec(((cli *)ctx)->eng, st, out, err);
}
static int eng_push_active(void *ctx) { return engine_push_active(((cli *)ctx)->eng) > 0; }
static void eng_cancel_push(void *ctx) { engine_cancel_push(((cli *)ctx)->eng); }
static void eng_names(void *ctx, int kind, void (*fn)(void *fctx, const char *name), void *fctx)
{
    engine_names(((cli *)ctx)->eng, kind, fn, fctx);
}
static void eng_poll(void *ctx) { engine_poll(((cli *)ctx)->eng, 0); }
static uv_loop_t *eng_loop(void *ctx) { return engine_loop(((cli *)ctx)->eng); }
static void eng_query_started(void *ctx)
{
    int64_t rows = 0;
    xerr err;
    xerr_clear(&err);
    if (engine_run_file_sources(((cli *)ctx)->eng, &rows, &err) < 0)
        cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
}
static void eng_close(void *ctx)
{
    cli *c = ctx;
    engine_close(c->eng);
    c->eng = NULL;
}

static const cli_backend engine_backend = {
    eng_exec, eng_push_active, eng_cancel_push, eng_names, eng_poll, eng_loop, eng_query_started, cli_ingest_fd,
    eng_close,
};

void cli_use_engine(cli *c, engine *e)
{
    c->eng = e;
    c->be = &engine_backend;
    c->be_ctx = c;
}

void cli_fini(cli *c)
{
    /* Running push queries end here: their end callbacks print footers. */
    if (c->be && c->be->close) c->be->close(c->be_ctx);
    c->be = NULL;
    c->be_ctx = NULL;
    c->eng = NULL;
    for (int i = 0; i < c->nkeep; i++) cli_out_free(c->keep[i]);
    free(c->keep);
    c->keep = NULL;
    c->nkeep = c->capkeep = 0;
    fflush(stdout);
}

static void before_write(void *ctx)
{
    const cli *c = ctx;
    if (c->before_write) c->before_write(c->hook_ctx);
}

cli_out_opts cli_out_opts_for(const cli *c)
{
    cli_out_opts o;
    memset(&o, 0, sizeof o);
    fmt_kind k = c->format_set ? c->format : (c->interactive || c->stdout_tty) ? FMT_TABLE : FMT_CSV;
    o.data = stdout;
    o.push_kind = o.result_kind = k;
    o.notices = c->quiet ? NULL : c->interactive ? stdout : stderr;
    /* through the cli, which outlives the outputs, so that the shell can
     * unhook itself before it goes */
    o.before_write = before_write;
    o.hook_ctx = (void *)c;
    return o;
}

void cli_log(void *ctx, const char *msg)
{
    cli *c = ctx;
    if (c && c->before_write) c->before_write(c->hook_ctx);
    fflush(stdout);
    fprintf(stderr, "ares: %s\n", msg);
    fflush(stderr);
}

/* ------------------------------------------------------------------ waiting */

enum { WAIT_SLICE_MS = 100 }; /* the longest sleep between looks at the engine */

int cli_wait(cli *c, int fd, int timeout_ms)
{
    uint64_t t0 = clock_mono_ns();
    int spins = 0;
    for (;;) {
        if (c->be) c->be->poll(c->be_ctx);
        if (c->after_poll) c->after_poll(c->hook_ctx);
        if (cli_interrupted()) return -1;
        uv_loop_t *loop = c->be && c->be->loop ? c->be->loop(c->be_ctx) : NULL;
        int t = WAIT_SLICE_MS;
        if (loop && uv_loop_alive(loop)) {
            int bt = uv_backend_timeout(loop);
            if (bt >= 0 && bt < t) t = bt;
        }
        /* a backend that keeps saying "now" must not spin the CPU */
        if (t == 0 && ++spins > 8) t = 1;
        else if (t > 0) spins = 0;
        if (timeout_ms >= 0) {
            int64_t left = (int64_t)timeout_ms - (int64_t)((clock_mono_ns() - t0) / 1000000);
            if (left <= 0) return 0;
            if (left < t) t = (int)left;
        }
        struct pollfd p[3];
        int n = 0, at_fd = -1;
        p[n++] = (struct pollfd){.fd = cli_signal_fd(), .events = POLLIN};
        if (fd >= 0) {
            at_fd = n;
            p[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
        }
        if (loop) p[n++] = (struct pollfd){.fd = uv_backend_fd(loop), .events = POLLIN};
        if (poll(p, (nfds_t)n, t) < 0) {
            if (errno == EINTR) return cli_interrupted() ? -1 : 0;
            return -1;
        }
        if (p[0].revents) cli_signal_drain(); /* the loop top sees the flag */
        if (at_fd >= 0 && p[at_fd].revents) return 1;
    }
}

int cli_keep_running(cli *c, int follow)
{
    for (;;) {
        if (cli_interrupted()) return follow ? CLI_OK : CLI_INTR;
        if (!follow && !(engine_push_active(c->eng) > 0 && engine_has_live_sources(c->eng))) return CLI_OK;
        int64_t rows = 0;
        xerr err;
        xerr_clear(&err);
        if (engine_run_file_sources(c->eng, &rows, &err) < 0 || engine_commit(c->eng, &err) < 0) {
            cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
            return CLI_ESQL;
        }
        cli_wait(c, -1, EXEC_EPOCH_MS);
    }
}

void cli_error(const char *name, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("error: ", stderr);
    if (name) fprintf(stderr, "%s: ", name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

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
    if (rc == 0 && (st->kind == ST_SELECT || st->kind == ST_CREATE_QUERY)) c->consumers++;
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

/* ------------------------------------------------------------------ ingest */

typedef struct ingest_ctx {
    const cli *c;
    const cli_ingest_opts *o;
    int64_t rejected;
    int shown;
    int progress_on; /* a progress line is on the screen */
} ingest_ctx;

static void progress_clear(ingest_ctx *k)
{
    if (!k->progress_on) return;
    fputs("\r\033[K", stderr);
    k->progress_on = 0;
}

static void on_reject(void *ctx, int64_t line, const char *msg)
{
    ingest_ctx *k = ctx;
    (void)line;
    k->rejected++;
    if (k->shown >= CLI_SHOW_REJECTS) return;
    k->shown++;
    progress_clear(k);
    fflush(stdout);
    if (k->o->label) fprintf(stderr, "%s: ", k->o->label);
    fprintf(stderr, "%s\n", msg);
}

/* A header column ignored, and the like: said once, even when quiet
 * (data is left out). */
static void on_notice(void *ctx, int64_t line, const char *msg)
{
    ingest_ctx *k = ctx;
    (void)line;
    progress_clear(k);
    fflush(stdout);
    if (k->o->label) fprintf(stderr, "%s: ", k->o->label);
    fprintf(stderr, "%s\n", msg);
}

static void progress_show(ingest_ctx *k, int64_t lines, int64_t bytes)
{
    int64_t rows = lines - k->rejected;
    if (rows < 0) rows = 0;
    fprintf(stderr, "\r\033[K%s: %lld rows, %.1f MB", k->o->label ? k->o->label : "ingest", (long long)rows,
            (double)bytes / 1e6);
    if (k->o->size > 0)
        fprintf(stderr, " of %.1f MB (%d%%)", (double)k->o->size / 1e6, (int)(100.0 * (double)bytes / (double)k->o->size));
    fflush(stderr);
    k->progress_on = 1;
}

enum { INGEST_CHUNK = 64 * 1024 };

/* Whether fd has bytes (or its end) within ms: 1, 0 when it stays quiet,
 * -1 after a signal (the caller's loop top looks at the flag).  A regular
 * file is always ready, so only a pipe, a socket or a terminal pauses. */
static int input_ready(int fd, int ms)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = cli_signal_fd(), .events = POLLIN}};
    int n = poll(p, p[1].fd >= 0 ? 2 : 1, ms);
    if (n < 0) return errno == EINTR ? -1 : 1; /* the read says what is wrong */
    if (n > 0 && p[1].fd >= 0 && p[1].revents) {
        cli_signal_drain();
        return -1;
    }
    return n > 0;
}

int cli_ingest_fd(cli *c, const char *stream, int fd, const cli_ingest_opts *o, exec_ingest_stats *st)
{
    ingest_ctx k;
    memset(&k, 0, sizeof k);
    k.c = c;
    k.o = o;
    memset(st, 0, sizeof *st);

    exec_ingest_opts io;
    memset(&io, 0, sizeof io);
    io.format = o->format;
    io.format_set = o->format_set;
    io.delim = o->delim;
    io.null_string = o->null_string;
    io.header = o->header;
    io.on_reject = on_reject;
    io.on_notice = on_notice;
    io.ctx = &k;
    exec_ingest *in = NULL;
    xerr err;
    xerr_clear(&err);
    if (exec_ingest_open(c->eng, stream, &io, &in, &err) < 0) {
        cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
        return CLI_ESQL;
    }
    /* Whole lines go to the engine and the tail of a chunk waits for the
     * next one, so that an input cut short (Ctrl-C) leaves no half line for
     * exec_ingest_close to reject (a CSV record whose quoted field spans
     * lines and is cut in the middle still is: rejected, with its line).  A
     * line longer than a chunk goes through in pieces (the decoder takes any
     * split). */
    char *buf = malloc(2 * INGEST_CHUNK); /* the tail kept is shorter than a chunk */
    if (!buf) {
        exec_ingest_close(in, 0, NULL, &err);
        cli_error(NULL, "out of memory");
        return CLI_ESQL;
    }

    int rc = CLI_OK;
    size_t have = 0;
    int64_t bytes = 0, lines = 0;
    int show = o->progress && c->stderr_tty;
    int fed = 0; /* rows went in since the input last paused */
    uint64_t t_start = clock_mono_ns(), t_last = t_start;
    for (;;) {
        if (cli_interrupted()) {
            rc = CLI_INTR;
            break;
        }
        /* A slow pipe (tail -f) ends its slice when it pauses, so that the
         * windows its rows closed come out now (exec_ingest_idle). */
        int ready = fed ? input_ready(fd, EXEC_IDLE_MS) : 1;
        if (ready < 0) continue;
        if (ready == 0) {
            fed = 0;
            if (exec_ingest_idle(in, &err) < 0) {
                progress_clear(&k);
                cli_error(o->label, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
                rc = CLI_ESQL;
                break;
            }
            continue;
        }
        ssize_t got = read(fd, buf + have, INGEST_CHUNK);
        if (got < 0) {
            if (errno == EINTR) continue; /* the loop top sees a signal */
            cli_error(o->label, "reading the input: %s", strerror(errno));
            rc = CLI_EINPUT;
            break;
        }
        size_t feed = have + (size_t)got;
        if (got > 0) {
            bytes += got;
            for (const char *p = buf + have, *end = buf + feed; (p = memchr(p, '\n', (size_t)(end - p))); p++) lines++;
            size_t cut = feed;
            while (cut > 0 && buf[cut - 1] != '\n') cut--;
            if (cut > 0) feed = cut;
            else if (feed < INGEST_CHUNK) feed = 0; /* wait for the line's end */
        }
        if (feed > 0) {
            int frc = exec_ingest_feed(in, buf, feed, &err);
            if (frc < 0) {
                progress_clear(&k);
                cli_error(o->label, "%s", err.msg[0] ? err.msg : xerr_name(frc));
                rc = frc == XE_INPUT ? CLI_EINPUT : CLI_ESQL;
                break;
            }
            fed = 1;
        }
        have = have + (size_t)got - feed;
        memmove(buf, buf + feed, have);
        if (got == 0) break;
        if (show) {
            uint64_t now = clock_mono_ns();
            if (now - t_start >= 500000000ull && now - t_last >= 500000000ull) {
                progress_show(&k, lines, bytes);
                t_last = now;
            }
        }
    }
    free(buf);
    progress_clear(&k);

    /* An input cut short does not end the stream: its windows stay open. */
    int eos = o->end_of_stream && rc == CLI_OK;
    xerr cerr;
    xerr_clear(&cerr);
    int crc = exec_ingest_close(in, eos, st, &cerr);
    if (crc < 0 && rc == CLI_OK) {
        cli_error(o->label, "%s", cerr.msg[0] ? cerr.msg : xerr_name(crc));
        rc = crc == XE_INPUT ? CLI_EINPUT : CLI_ESQL;
    }
    if (crc < 0 || st->rejected < k.rejected) st->rejected = k.rejected;
    if (st->rejected > k.shown) {
        fflush(stdout);
        if (o->label) fprintf(stderr, "%s: ", o->label);
        fprintf(stderr, "... and %lld more rejected line%s\n", (long long)(st->rejected - k.shown),
                st->rejected - k.shown == 1 ? "" : "s");
    }
    return rc;
}

int cli_late_report(const char *stream, const exec_ingest_stats *st, int allow_late, int rc)
{
    int64_t late = st->late;
    if (late <= 0) return rc;
    fflush(stdout);
    fprintf(stderr,
            "ares-sql: warning: %s%lld row%s of stream %s %s late and dropped: the windows %s belonged to had "
            "already closed (behind the watermark; SHOW QUERIES counts them as late%s)\n",
            st->late_partial ? "at least " : "", (long long)late, late == 1 ? "" : "s", stream,
            late == 1 ? "was" : "were", late == 1 ? "it" : "they",
            st->late_partial ? ", with those that window tasks on other nodes dropped" : "");
    return rc == CLI_OK && !allow_late ? CLI_ELATE : rc;
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

void cli_help(FILE *f)
{
    fputs("Meta-commands (at the start of a line):\n"
          "  \\help, \\?           this help; HELP <statement> for a statement's syntax\n"
          "  \\q                  leave (Ctrl-D too)\n"
          "  \\timing [on|off]    show how long each statement takes\n"
          "  \\format [table|csv|json|vertical]\n"
          "                      how results print (a terminal starts with table)\n"
          "  \\i FILE             run the statements in FILE\n"
          "  \\copy STREAM FROM 'file' [csv|json] [WITH (option value, ...)]\n"
          "                      load a file into a stream (CSV header detected); the\n"
          "                      stream stays open, so windows close as event time moves;\n"
          "                      the stream's format and options unless given: format,\n"
          "                      delimiter, null_string, header (true, false or auto)\n"
          "\n"
          "SQL statements end with ';' and may span lines:\n"
          "  CREATE STREAM, CREATE QUERY, SELECT, INSERT, DROP STREAM, DROP QUERY,\n"
          "  SUBSCRIBE, SHOW STREAMS | QUERIES | NODES | SETTINGS, SHOW setting,\n"
          "  DESCRIBE, EXPLAIN, SET\n"
          "A bare SELECT is a push query: its rows print as its windows close, while\n"
          "later statements (INSERT, \\copy) feed it, until Ctrl-C at an empty prompt;\n"
          "the shell runs one push query or SUBSCRIBE at a time.\n"
          "Tab completes keywords and stream, query and column names.\n",
          f);
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
