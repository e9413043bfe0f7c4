/*
 * client.c: ares-sql --connect.  The session of run.c, but every statement
 * goes to the cluster's coordinator (cluster/cluster.h) instead of an
 * embedded engine.
 *
 * Scripts (-e, -f, SQL piped on stdin, the prompt) are fed one line at a
 * time; a chunk that ends in a complete statement is parsed here first, so
 * syntax errors print with the parser's caret exactly as embedded, and then
 * each statement's own text is sent.  Results come back through exec_out
 * into output.c's printer, so a remote result prints like a local one.
 * Push queries (a bare SELECT) and SUBSCRIBE keep their output open: after
 * the scripts and the ingest, ares-sql waits until they end (their streams
 * ended) or SIGINT/SIGTERM arrives.  Meta-commands other than \q are not
 * available over --connect.
 *
 * While it waits for input on stdin it keeps serving the connection
 * (heartbeats, rows of open push queries), so an idle prompt stays
 * connected.  Exit codes are main.c's.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "cluster/cluster.h"

typedef struct rsess {
    cli c;
    clu_client *cl;
    cli_out **outs;
    int nouts, capouts;
    const char *name; /* script name for messages */
    int line;         /* lines fed so far */
    int buf_line;     /* input line of the chunk's first line */
    sbuf buf;
} rsess;

static void report_at(rsess *s, int line, int col, const char *msg)
{
    cli_report_at(s->buf.p, s->buf.len, s->name, s->buf_line, line, col, msg);
}

static int exec_remote(rsess *s, const ast_stmt *st)
{
    cli_out_opts oo = cli_out_opts_for(&s->c);
    cli_out *o = NULL;
    if (cli_out_new(&oo, &o) < 0 || cli_outs_add(&s->outs, &s->nouts, &s->capouts, o) < 0) {
        cli_out_free(o);
        cli_error(s->name, "out of memory");
        return CLI_ESQL;
    }
    xerr err;
    xerr_clear(&err);
    uint64_t t0 = clock_mono_ns();
    int rc = clu_client_exec(s->cl, st->text, cli_out_exec(o), &err);
    uint64_t t1 = clock_mono_ns();
    if (rc < 0) {
        cli_error(s->name, "%s", err.msg[0] ? err.msg : xerr_name(rc));
        return CLI_ESQL;
    }
    if (cli_out_write_errno(o)) {
        cli_error(s->name, "writing the output: %s", strerror(cli_out_write_errno(o)));
        return CLI_ESQL;
    }
    if (s->c.timing) fprintf(stderr, "Time: %.3f ms\n", (double)(t1 - t0) / 1e6);
    return CLI_OK;
}

static int run_chunk(rsess *s)
{
    parse_result *r = NULL;
    parse_sql(s->buf.p, s->buf.len, &r);
    int rc = CLI_OK;
    if (!r) {
        cli_error(s->name, "out of memory");
        rc = CLI_ESQL;
    } else if (r->nerrors > 0) {
        for (int i = 0; i < r->nerrors; i++) report_at(s, r->errors[i].line, r->errors[i].col, r->errors[i].msg);
        rc = CLI_ESQL;
    } else {
        for (int i = 0; i < r->nstmts && rc == CLI_OK; i++) {
            rc = exec_remote(s, r->stmts[i]);
            if (rc == CLI_OK && cli_interrupted()) rc = CLI_INTR;
        }
    }
    parse_result_free(r);
    sbuf_reset(&s->buf);
    return rc;
}

static int feed_line(rsess *s, const char *line, size_t n)
{
    s->line++;
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
    if (s->buf.len == 0) {
        size_t i = 0;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i == n) return CLI_OK;
        if (line[i] == '\\') {
            if (n - i >= 2 && line[i + 1] == 'q' && (n - i == 2 || line[i + 2] == ' ')) return CLI_QUIT;
            cli_error(s->name, "line %d: meta-commands other than \\q are not available with --connect", s->line);
            return s->c.interactive ? CLI_OK : CLI_ESQL;
        }
        s->buf_line = s->c.interactive ? 1 : s->line;
    }
    if (sbuf_add(&s->buf, line, n) < 0 || sbuf_addc(&s->buf, '\n') < 0) {
        cli_error(s->name, "out of memory");
        return CLI_ESQL;
    }
    if (!parse_is_complete(s->buf.p, s->buf.len)) return CLI_OK;
    return run_chunk(s);
}

static int script_end(rsess *s)
{
    if (!s->buf.len) return CLI_OK;
    for (size_t i = 0; i < s->buf.len; i++)
        if (s->buf.p[i] != ' ' && s->buf.p[i] != '\n' && s->buf.p[i] != '\t' && s->buf.p[i] != '\r')
            return run_chunk(s);
    sbuf_reset(&s->buf);
    return CLI_OK;
}

static int run_text(rsess *s, const char *name, const char *text)
{
    s->name = name;
    s->line = 0;
    sbuf_reset(&s->buf);
    int rc = CLI_OK;
    for (const char *p = text; *p && rc == CLI_OK;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        rc = feed_line(s, p, len);
        p += len + (nl ? 1 : 0);
    }
    if (rc == CLI_OK) rc = script_end(s);
    return rc == CLI_QUIT ? CLI_OK : rc;
}

/* Serve the connection until fd can be read (or a signal). */
static int wait_input(rsess *s, int fd)
{
    for (;;) {
        if (cli_interrupted()) return CLI_INTR;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0) return CLI_OK;
        xerr err;
        if (clu_client_poll(s->cl, 50, &err) < 0) {
            cli_error(NULL, "%s", err.msg);
            return CLI_ESQL;
        }
    }
}

static int run_fp(rsess *s, const char *name, FILE *f, int prompt)
{
    s->name = prompt ? NULL : name;
    s->line = 0;
    sbuf_reset(&s->buf);
    char *line = NULL;
    size_t cap = 0;
    int rc = CLI_OK;
    for (;;) {
        if (prompt) {
            fputs(s->buf.len ? "   ...> " : "ares> ", stdout);
            fflush(stdout);
        }
        if (fileno(f) >= 0 && (rc = wait_input(s, fileno(f))) != CLI_OK) break;
        ssize_t got = getline(&line, &cap, f);
        if (got < 0) break;
        rc = feed_line(s, line, (size_t)got);
        if (rc == CLI_QUIT) break;
        if (rc != CLI_OK && prompt && rc != CLI_INTR) rc = CLI_OK; /* the prompt goes on after errors */
        if (rc != CLI_OK) break;
    }
    free(line);
    if (rc == CLI_OK) rc = script_end(s);
    if (prompt && rc == CLI_INTR) rc = CLI_OK;
    return rc == CLI_QUIT ? CLI_OK : rc;
}

static int run_file(rsess *s, const char *path)
{
    if (!strcmp(path, "-")) return run_fp(s, "<stdin>", stdin, 0);
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error(NULL, "cannot open %s: %s", path, strerror(errno));
        return CLI_EUSAGE;
    }
    int rc = run_fp(s, path, f, 0);
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ ingest */

typedef struct rej {
    int shown;
} rej;

static void on_reject(void *ctx, int64_t line, const char *msg)
{
    rej *k = ctx;
    (void)line;
    if (k->shown >= CLI_SHOW_REJECTS) return;
    k->shown++;
    fflush(stdout);
    fprintf(stderr, "%s\n", msg);
}

static int stop_cb(void *ctx)
{
    (void)ctx;
    return cli_interrupted();
}

static int ingest(rsess *s, const cli_cluster *r)
{
    rej k = {0};
    clu_ingest_opts o;
    memset(&o, 0, sizeof o);
    o.format = r->input_format;
    o.header = r->header;
    o.end_of_stream = 1;
    o.on_reject = on_reject;
    o.ctx = &k;
    o.stop = stop_cb;
    exec_ingest_stats st;
    xerr err;
    xerr_clear(&err);
    int rc = clu_client_ingest(s->cl, r->ingest, STDIN_FILENO, &o, &st, &err);
    if (rc < 0 && rc != XE_BUSY) {
        cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(rc));
        return rc == XE_INPUT ? CLI_EINPUT : CLI_ESQL;
    }
    if (st.rejected > k.shown) {
        fflush(stdout);
        fprintf(stderr, "... and %lld more rejected line%s\n", (long long)(st.rejected - k.shown),
                st.rejected - k.shown == 1 ? "" : "s");
    }
    if (st.rejected > 0)
        fprintf(stderr, "%s: %lld row%s ingested, %lld line%s rejected\n", r->ingest, (long long)st.rows,
                st.rows == 1 ? "" : "s", (long long)st.rejected, st.rejected == 1 ? "" : "s");
    if (rc == XE_BUSY) return CLI_INTR;
    if (st.rejected > 0 && (r->strict || st.rows == 0)) {
        cli_error(NULL, "%s", r->strict ? "input lines were rejected (--strict)" : "every input line was rejected");
        return CLI_EINPUT;
    }
    return CLI_OK;
}

/* ------------------------------------------------------------------ the session */

int cli_cluster_run(const cli_cluster *r)
{
    rsess s;
    memset(&s, 0, sizeof s);
    cli_init(&s.c);
    sbuf_init(&s.buf);
    int stdin_tty = isatty(STDIN_FILENO);
    int shell = r->nscripts == 0 && !r->ingest && !r->follow && stdin_tty;
    int stdin_sql = r->nscripts == 0 && !r->ingest && !stdin_tty;
    s.c.interactive = shell;
    s.c.quiet = r->quiet;
    s.c.format_set = r->format_set;
    s.c.format = r->format;
    if (cli_signals_install() < 0) {
        cli_error(NULL, "cannot install signal handlers");
        return CLI_ESQL;
    }
    clu_client_opts co = {r->addrs, r->secret_file, "ares-sql", 0, cli_interrupted};
    xerr err;
    xerr_clear(&err);
    if (clu_client_open(&co, &s.cl, &err) < 0) {
        cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
        sbuf_fini(&s.buf);
        return CLI_ESQL;
    }
    int rc = CLI_OK;
    if (shell) {
        printf("ares-sql %s connected to the cluster at %s.  Statements end with ';'; \\q leaves.\n", CLI_VERSION,
               r->addrs);
        rc = run_fp(&s, NULL, stdin, 1);
        putchar('\n');
    }
    for (int i = 0; i < r->nscripts && rc == CLI_OK; i++)
        rc = r->script_file[i] ? run_file(&s, r->script[i]) : run_text(&s, NULL, r->script[i]);
    if (rc == CLI_OK && stdin_sql) rc = run_file(&s, "-");
    if (rc == CLI_OK && r->ingest) rc = ingest(&s, r);
    /* push queries and subscriptions run until their streams end */
    if ((rc == CLI_OK || rc == CLI_EINPUT) && (clu_client_open_results(s.cl) || r->follow)) {
        while (!cli_interrupted() && (clu_client_open_results(s.cl) || r->follow)) {
            if (clu_client_poll(s.cl, 100, &err) < 0) {
                cli_error(NULL, "%s", err.msg);
                if (rc == CLI_OK) rc = CLI_ESQL;
                break;
            }
        }
        if (cli_interrupted() && rc == CLI_OK && !r->follow && !shell) rc = CLI_INTR;
    } else if (rc == CLI_OK && cli_interrupted())
        rc = CLI_INTR;
    clu_client_free(s.cl);
    for (int i = 0; i < s.nouts; i++) cli_out_free(s.outs[i]);
    free(s.outs);
    sbuf_fini(&s.buf);
    fflush(stdout);
    return rc;
}
