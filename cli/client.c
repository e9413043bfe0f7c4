/*
 * client.c: ares-sql --connect.  The scripts of script.c, the session of
 * run.c and the shell of shell.c, unchanged, over a backend that sends
 * every statement to the cluster's coordinator (cluster/cluster.h) instead
 * of an embedded engine.
 *
 * The backend's calls:
 *   exec         the statement's own text goes in a QUERY; results come
 *                back through exec_out into output.c's printer, so a remote
 *                result prints like a local one.  Push queries (a bare
 *                SELECT) and SUBSCRIBE keep their output open.
 *   push_active  results still open on the connection;
 *   cancel_push  CANCEL (Ctrl-C at an empty prompt): the coordinator ends
 *                them after the rows already on their way;
 *   names        for completion: SHOW STREAMS and SHOW QUERIES, kept until
 *                a statement runs or 2 s pass;
 *   poll, loop   cli_wait sleeps on the client's loop and serves it, so the
 *                connection (heartbeats, rows of open push queries) keeps
 *                moving while the shell waits for a key;
 *   ingest       \copy through the coordinator.
 *
 * After the scripts and the ingest of a non-interactive run, ares-sql waits
 * until the open results end (their streams ended) or SIGINT/SIGTERM.
 * Exit codes are main.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "cluster/cluster.h"

#define NAMES_KEEP_NS 2000000000ull /* completion's names are asked for again after 2 s */

typedef struct rsess {
    cli c;
    clu_client *cl;
    int lost;          /* the connection is lost (reported once) */
    /* completion names, fetched when asked for after a statement ran */
    int names_at;      /* c.statements when fetched, or -1 */
    uint64_t names_ns; /* and when */
    char **names[2];   /* streams, queries */
    int nnames[2], capnames[2];
    char **cols;
    int ncols, capcols;
} rsess;

/* ------------------------------------------------------------------ the backend */

static int r_exec(void *ctx, const ast_stmt *st, const exec_out *out, xerr *err)
{
    rsess *s = ctx;
    /* an aggregate's table is built on the embedded engine only (exec/table_agg.c) */
    if (st->kind == ST_CREATE_TABLE_AS)
        return xerr_at(err, XE_PLAN, st->line, st->col,
                       "CREATE TABLE ... AS SELECT is not supported on a cluster yet (an embedded engine runs it: ares-sql "
                       "--data DIR or --memory)");
    int rc = clu_client_exec(s->cl, st->text, out, err);
    if (rc == 0) s->lost = 0;
    /* the coordinator parsed st->text alone: its position, into the input's */
    if (rc < 0) parse_text_pos(st, err->line, err->col, &err->line, &err->col);
    return rc;
}

static int r_push_active(void *ctx) { return clu_client_open_results(((rsess *)ctx)->cl) > 0; }

static void r_cancel_push(void *ctx)
{
    rsess *s = ctx;
    xerr err;
    xerr_clear(&err);
    if (clu_client_cancel(s->cl, 5000, &err) < 0) cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
}

static void r_poll(void *ctx)
{
    rsess *s = ctx;
    xerr err;
    xerr_clear(&err);
    if (clu_client_poll(s->cl, 0, &err) < 0 && !s->lost) {
        /* said once; the next statement tries to reconnect */
        s->lost = 1;
        if (s->c.before_write) s->c.before_write(s->c.hook_ctx);
        cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
    }
}

static struct uv_loop_s *r_loop(void *ctx) { return clu_client_loop(((rsess *)ctx)->cl); }

static void r_close(void *ctx)
{
    rsess *s = ctx;
    clu_client_free(s->cl);
    s->cl = NULL;
}

static int name_add(char ***v, int *n, int *cap, const char *p, size_t len)
{
    for (int i = 0; i < *n; i++)
        if (strlen((*v)[i]) == len && !memcmp((*v)[i], p, len)) return 0;
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        char **nv = realloc(*v, (size_t)c * sizeof *nv);
        if (!nv) return XE_NOMEM;
        *v = nv;
        *cap = c;
    }
    if (!((*v)[*n] = strndup(p, len))) return XE_NOMEM;
    (*n)++;
    return 0;
}

static void names_clear(rsess *s)
{
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < s->nnames[k]; i++) free(s->names[k][i]);
        s->nnames[k] = 0;
    }
    for (int i = 0; i < s->ncols; i++) free(s->cols[i]);
    s->ncols = 0;
}

/* An exec_out that keeps the "name" of SHOW's rows, and a stream's columns
 * (from its "sql"). */
typedef struct grab {
    rsess *s;
    int kind;
    int name_at, sql_at;
} grab;

static int grab_begin(void *ctx, const fmt_schema *sc, int stream)
{
    grab *g = ctx;
    (void)stream;
    g->name_at = g->sql_at = -1;
    for (int i = 0; i < sc->ncols; i++) {
        if (!strcmp(sc->names[i], "name")) g->name_at = i;
        if (!strcmp(sc->names[i], "sql")) g->sql_at = i;
    }
    return 0;
}

/* A stream's columns, from its CREATE STREAM text. */
static void grab_columns(rsess *s, const char *sql, size_t n)
{
    parse_result *pr = NULL;
    parse_sql(sql, n, &pr);
    for (int i = 0; pr && i < pr->nstmts; i++)
        for (int k = 0; pr->stmts[i]->cols && k < pr->stmts[i]->cols->n; k++) {
            const char *c = pr->stmts[i]->cols->v[k].name;
            name_add(&s->cols, &s->ncols, &s->capcols, c, strlen(c));
        }
    parse_result_free(pr);
}

static int grab_rows(void *ctx, const batch *b)
{
    grab *g = ctx;
    for (int r = 0; r < b->nrows; r++) {
        const val *row = batch_row(b, r);
        if (g->name_at >= 0 && row[g->name_at].type == TY_TEXT)
            name_add(&g->s->names[g->kind], &g->s->nnames[g->kind], &g->s->capnames[g->kind], row[g->name_at].s,
                     row[g->name_at].len);
        if (g->kind == 0 && g->sql_at >= 0 && row[g->sql_at].type == TY_TEXT)
            grab_columns(g->s, row[g->sql_at].s, row[g->sql_at].len);
    }
    return 0;
}

static int grab_end(void *ctx)
{
    (void)ctx;
    return 0;
}

static void grab_notice(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

static void names_fetch(rsess *s)
{
    /* other clients change the catalog too: asked again after a while */
    uint64_t now = clock_mono_ns();
    if (s->names_at == s->c.statements && now - s->names_ns < NAMES_KEEP_NS) return;
    names_clear(s);
    s->names_at = s->c.statements;
    s->names_ns = now;
    static const char *const sql[2] = {"SHOW STREAMS", "SHOW QUERIES"};
    for (int k = 0; k < 2; k++) {
        grab g = {s, k, -1, -1};
        exec_out o = {&g, grab_begin, grab_rows, grab_end, grab_notice};
        xerr err;
        xerr_clear(&err);
        clu_client_exec(s->cl, sql[k], &o, &err); /* no names is no completion */
    }
}

static void r_names(void *ctx, int kind, void (*fn)(void *fctx, const char *name), void *fctx)
{
    rsess *s = ctx;
    names_fetch(s);
    if (kind == 2)
        for (int i = 0; i < s->ncols; i++) fn(fctx, s->cols[i]);
    else if (kind == 0 || kind == 1)
        for (int i = 0; i < s->nnames[kind]; i++) fn(fctx, s->names[kind][i]);
}

/* ------------------------------------------------------------------ ingest */

typedef struct rej {
    int shown;
    const char *label; /* \copy's file name, prefixed to each line */
} rej;

static void on_reject(void *ctx, int64_t line, const char *msg)
{
    rej *k = ctx;
    (void)line;
    if (k->shown >= CLI_SHOW_REJECTS) return;
    k->shown++;
    fflush(stdout);
    if (k->label) fprintf(stderr, "%s: ", k->label);
    fprintf(stderr, "%s\n", msg);
}

static void on_notice(void *ctx, int64_t line, const char *msg)
{
    (void)ctx;
    (void)line;
    fflush(stdout);
    fprintf(stderr, "%s\n", msg);
}

static int stop_cb(void *ctx)
{
    (void)ctx;
    return cli_interrupted();
}

/* \copy on a cluster: the file goes through the coordinator to the
 * stream's home; the stream stays open (o->end_of_stream). */
static int r_ingest(cli *c, const char *stream, int fd, const cli_ingest_opts *io, exec_ingest_stats *st)
{
    rsess *s = c->be_ctx;
    rej k = {0, io->label};
    clu_ingest_opts o;
    memset(&o, 0, sizeof o);
    o.format = io->format;
    o.format_set = io->format_set;
    o.delim = io->delim;
    o.null_string = io->null_string;
    o.on_notice = on_notice;
    o.header = io->header;
    o.end_of_stream = io->end_of_stream;
    o.on_reject = on_reject;
    o.ctx = &k;
    o.stop = stop_cb;
    xerr err;
    xerr_clear(&err);
    int rc = clu_client_ingest(s->cl, stream, fd, &o, st, &err);
    if (rc < 0 && rc != XE_BUSY) {
        cli_error(io->label, "%s", err.msg[0] ? err.msg : xerr_name(rc));
        return rc == XE_INPUT ? CLI_EINPUT : CLI_ESQL;
    }
    cli_rejects_more(io->label, st->rejected, k.shown);
    return rc == XE_BUSY ? CLI_INTR : CLI_OK;
}

/* --ingest: stdin through the coordinator, as \copy's is, then the counts
 * and the exit code of a non-interactive run. */
static int ingest(rsess *s, const cli_cluster *r)
{
    cli_ingest_opts io;
    memset(&io, 0, sizeof io);
    io.format = r->input_format;
    io.format_set = r->input_format_set;
    io.header = r->header;
    io.end_of_stream = r->end;
    exec_ingest_stats st;
    int rc = r_ingest(&s->c, r->ingest, STDIN_FILENO, &io, &st);
    if (rc != CLI_OK && rc != CLI_INTR) return rc;
    cli_ingest_counts(r->ingest, &st);
    if (rc == CLI_INTR) return CLI_INTR;
    if (!r->end && !r->quiet && clu_client_open_results(s->cl)) {
        fflush(stdout);
        fprintf(stderr, "-- the input ended; stream %s stays open for other producers, so the push query goes on "
                        "until Ctrl-C (--end ends the stream with the input)\n", r->ingest);
    }
    return cli_ingest_verdict(r->ingest, &st, r->strict, r->allow_late, CLI_OK);
}

static const cli_backend remote_backend = {
    r_exec, r_push_active, r_cancel_push, r_names, r_poll, r_loop, NULL, r_ingest, r_close,
};

/* ------------------------------------------------------------------ the session */

int cli_cluster_run(const cli_cluster *r)
{
    rsess s;
    memset(&s, 0, sizeof s);
    cli_init(&s.c);
    s.names_at = -1;
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
        return CLI_ESQL;
    }
    s.c.be = &remote_backend;
    s.c.be_ctx = &s;
    int rc = CLI_OK;
    if (shell) {
        char where[1100];
        snprintf(where, sizeof where, "coordinator: %s", r->addrs);
        rc = cli_shell(&s.c, "connected to an Ares cluster", where);
    }
    if (rc == CLI_OK) rc = cli_run_scripts(&s.c, r->nscripts, r->script, r->script_file, stdin_sql);
    if (rc == CLI_OK && r->ingest) rc = ingest(&s, r);
    /* push queries and subscriptions run until their streams end */
    if (!shell && (rc == CLI_OK || rc == CLI_EINPUT) && (clu_client_open_results(s.cl) || r->follow)) {
        while (!cli_interrupted() && (clu_client_open_results(s.cl) || r->follow)) {
            if (clu_client_poll(s.cl, 100, &err) < 0) {
                cli_error(NULL, "%s", err.msg);
                if (rc == CLI_OK) rc = CLI_ESQL;
                break;
            }
        }
        if (cli_interrupted() && rc == CLI_OK && !r->follow) rc = CLI_INTR;
    } else if (!shell && rc == CLI_OK && cli_interrupted())
        rc = CLI_INTR;
    cli_fini(&s.c);
    names_clear(&s);
    free(s.names[0]);
    free(s.names[1]);
    free(s.cols);
    return rc;
}
