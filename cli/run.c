/*
 * run.c: the session that every way of running ares-sql shares, below the
 * scripts (script.c) and the shell (shell.c).
 *
 * A session (cli) runs its statements through a backend (c->be): the
 * embedded engine defined here, or a cluster's coordinator (client.c).
 * This file holds what the layers above it call and never calls them back:
 * signals and their self-pipe (SIGPIPE only for stdout), the session's set-up and end, the settings of
 * a statement's output (cli_out_opts_for), error messages (cli_error),
 * waiting (cli_wait, cli_keep_running) and ingest from a file descriptor
 * (cli_ingest_fd, the embedded backend's \copy and --ingest).
 *
 * Each statement gets its own cli_out (script.c).  The engine keeps the
 * exec_out of a push query (a bare SELECT, or SUBSCRIBE) and calls it
 * whenever later work produces rows, so those outputs stay alive in c->keep
 * until cli_fini has closed the engine.
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

/* A broken pipe on stdout ends ares-sql, as SIGPIPE always did (`ares-sql
 * ... | head`); one on a socket (a node that closed a connection while the
 * client was still writing to it: a home that refused an ingest, a
 * coordinator that died) must not: the write fails with EPIPE, libuv
 * reports the connection lost and the client fails over.  A pipe whose
 * reader has gone polls as POLLERR on its write end. */
int cli_fd_broken(int fd)
{
    struct pollfd p = {.fd = fd, .events = 0};
    return poll(&p, 1, 0) > 0 && (p.revents & POLLERR) != 0;
}

static void on_sigpipe(int signo)
{
    int saved = errno;
    if (cli_fd_broken(STDOUT_FILENO)) {
        signal(signo, SIG_DFL);
        raise(signo);
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
    struct sigaction sp;
    memset(&sp, 0, sizeof sp);
    sp.sa_handler = on_sigpipe;
    sigemptyset(&sp.sa_mask);
    sp.sa_flags = SA_RESTART;
    if (sigaction(SIGPIPE, &sp, NULL) < 0) return XE_IO;
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
    cli_rejects_more(o->label, st->rejected, k.shown);
    return rc;
}

void cli_rejects_more(const char *label, int64_t rejected, int shown)
{
    if (rejected <= shown) return;
    fflush(stdout);
    if (label) fprintf(stderr, "%s: ", label);
    fprintf(stderr, "... and %lld more rejected line%s\n", (long long)(rejected - shown),
            rejected - shown == 1 ? "" : "s");
}

void cli_ingest_counts(const char *stream, const exec_ingest_stats *st)
{
    if (st->rejected <= 0) return;
    fprintf(stderr, "%s: %lld row%s ingested, %lld line%s rejected\n", stream, (long long)st->rows,
            st->rows == 1 ? "" : "s", (long long)st->rejected, st->rejected == 1 ? "" : "s");
}

int cli_ingest_verdict(const char *stream, const exec_ingest_stats *st, int strict, int allow_late, int rc)
{
    if (rc == CLI_OK && st->rejected > 0 && (strict || st->rows == 0)) {
        cli_error(NULL, "%s", strict ? "input lines were rejected (--strict)" : "every input line was rejected");
        rc = CLI_EINPUT;
    }
    if (rc == CLI_OK || rc == CLI_EINPUT) rc = cli_late_report(stream, st, allow_late, rc);
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
