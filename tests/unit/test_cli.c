/* Unit tests for cli/: the session over a fake backend (cli_backend), which
 * is all that tells the embedded shell from ares-sql --connect: scripts cut
 * into statements (script.c: semicolons in strings and comments, statements
 * over lines), error positions with the caret, meta-commands, one push query
 * at a time in the shell, tab completion's candidates from the backend's
 * names, and output.c's tables, CSV and JSON, as the bytes they print. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "cli/cli.h"

/* ------------------------------------------------------------ the fake backend */

typedef struct fake {
    char *texts[16];
    int n;
    int active;  /* a push result is open */
    int cancels;
    const exec_out *push; /* its output */
} fake;

static int f_exec(void *ctx, const ast_stmt *st, const exec_out *out, xerr *err)
{
    fake *f = ctx;
    if (f->n < 16) f->texts[f->n++] = strdup(st->text);
    if (strstr(st->text, "boom")) {
        /* an engine error at the statement's second line, column 3 (as the
         * engine gives it: a place in the chunk the statement came from) */
        xerr_set(err, XE_INVAL, "no such thing as boom");
        err->line = st->line + 1;
        err->col = 3;
        return XE_INVAL;
    }
    if (st->kind == ST_SELECT) {
        static const char *const names[] = {"x"};
        static const sql_type types[] = {TY_BIGINT};
        fmt_schema sc = {1, names, types};
        if (out->begin(out->ctx, &sc, 1) < 0) return XE_IO;
        f->active = 1;
        f->push = out;
    }
    return 0;
}
static int f_push_active(void *ctx) { return ((fake *)ctx)->active; }
static void f_cancel_push(void *ctx)
{
    fake *f = ctx;
    f->cancels++;
    if (f->active) f->push->end(f->push->ctx);
    f->active = 0;
}
static void f_names(void *ctx, int kind, void (*fn)(void *fctx, const char *name), void *fctx)
{
    (void)ctx;
    static const char *const streams[] = {"clicks", "clocks", NULL}, *const queries[] = {"per_k", NULL},
                             *const cols[] = {"url", "user_id", NULL};
    const char *const *v = kind == 0 ? streams : kind == 1 ? queries : cols;
    for (int i = 0; v[i]; i++) fn(fctx, v[i]);
}
static void f_poll(void *ctx) { (void)ctx; }
static void f_close(void *ctx) { f_cancel_push(ctx); }

static const cli_backend fake_backend = {f_exec, f_push_active, f_cancel_push, f_names, f_poll, NULL, NULL, NULL,
                                         f_close};

typedef struct fx {
    cli c;
    fake f;
} fx;

static int setup(void **state)
{
    fx *x = calloc(1, sizeof *x);
    cli_init(&x->c);
    x->c.be = &fake_backend;
    x->c.be_ctx = &x->f;
    x->c.quiet = 1;
    x->c.format_set = 1;
    x->c.format = FMT_CSV;
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    cli_fini(&x->c);
    for (int i = 0; i < x->f.n; i++) free(x->f.texts[i]);
    free(x);
    return 0;
}

/* ------------------------------------------------------------ scripts */

static void test_statements_in_order(void **state)
{
    fx *x = *state;
    static const char sql[] = "CREATE STREAM a (x BIGINT);\n\n  INSERT INTO a VALUES (1); INSERT INTO a VALUES (2);\n"
                              "SHOW STREAMS";
    assert_int_equal(cli_run_text(&x->c, NULL, sql, sizeof sql - 1, 0), CLI_OK);
    assert_int_equal(x->f.n, 4);
    assert_string_equal(x->f.texts[0], "CREATE STREAM a (x BIGINT)");
    assert_string_equal(x->f.texts[1], "INSERT INTO a VALUES (1)");
    assert_string_equal(x->f.texts[2], "INSERT INTO a VALUES (2)");
    assert_string_equal(x->f.texts[3], "SHOW STREAMS"); /* the last one needs no ';' */
    assert_int_equal(x->c.statements, 4);
}

static void test_statement_over_lines(void **state)
{
    fx *x = *state;
    cli_script s;
    cli_script_init(&s, NULL);
    assert_int_equal(cli_script_line(&x->c, &s, "SELECT x\n", 9), CLI_OK);
    assert_true(cli_script_pending(&s)); /* the shell shows its continuation prompt */
    assert_int_equal(x->f.n, 0);
    assert_int_equal(cli_script_line(&x->c, &s, "  FROM a;", 9), CLI_OK);
    assert_false(cli_script_pending(&s));
    assert_int_equal(x->f.n, 1);
    assert_string_equal(x->f.texts[0], "SELECT x\n  FROM a");
    /* a ';' inside a string does not end the statement */
    assert_int_equal(cli_script_line(&x->c, &s, "INSERT INTO a VALUES ('x;", 25), CLI_OK);
    assert_true(cli_script_pending(&s));
    cli_script_clear(&s); /* Ctrl-C */
    assert_false(cli_script_pending(&s));
    cli_script_fini(&s);
    assert_int_equal(x->f.n, 1);
}

static void test_syntax_error_not_sent(void **state)
{
    fx *x = *state;
    static const char sql[] = "SELECT FROM WHERE;";
    assert_int_equal(cli_run_text(&x->c, NULL, sql, sizeof sql - 1, 0), CLI_ESQL);
    assert_int_equal(x->f.n, 0);
}

static void test_meta_commands(void **state)
{
    fx *x = *state;
    static const char m1[] = "\\format vertical\n\\timing on\n";
    assert_int_equal(cli_run_text(&x->c, NULL, m1, sizeof m1 - 1, 0), CLI_OK);
    assert_int_equal(x->c.format, FMT_VERTICAL);
    assert_int_equal(x->c.timing, 1);
    assert_int_equal(cli_out_opts_for(&x->c).result_kind, FMT_VERTICAL);
    assert_int_equal(cli_out_opts_for(&x->c).push_kind, FMT_VERTICAL);
    static const char m2[] = "\\timing\n";
    assert_int_equal(cli_run_text(&x->c, NULL, m2, sizeof m2 - 1, 0), CLI_OK);
    assert_int_equal(x->c.timing, 0);
    static const char bad[] = "\\format sideways\n";
    assert_int_equal(cli_run_text(&x->c, NULL, bad, sizeof bad - 1, 0), CLI_ESQL);
    assert_int_equal(x->c.format, FMT_VERTICAL);
    static const char q[] = "\\q\nSHOW STREAMS;\n";
    assert_int_equal(cli_run_text(&x->c, NULL, q, sizeof q - 1, 0), CLI_QUIT);
    assert_int_equal(x->f.n, 0); /* no meta-command reached the backend */
}

/* ------------------------------------------------------------ one push query in the shell */

static void test_second_push_refused_in_shell(void **state)
{
    fx *x = *state;
    x->c.interactive = 1;
    static const char sel[] = "SELECT x FROM a;";
    assert_int_equal(cli_run_text(&x->c, NULL, sel, sizeof sel - 1, 0), CLI_OK);
    assert_int_equal(x->f.n, 1);
    assert_int_equal(x->c.pushes, 1);
    /* a second SELECT, or a SUBSCRIBE, is refused before it reaches the backend */
    assert_int_equal(cli_run_text(&x->c, NULL, sel, sizeof sel - 1, 0), CLI_ESQL);
    static const char sub[] = "SUBSCRIBE q;";
    assert_int_equal(cli_run_text(&x->c, NULL, sub, sizeof sub - 1, 0), CLI_ESQL);
    assert_int_equal(x->f.n, 1);
    /* other statements still run, and feed the push query */
    static const char ins[] = "INSERT INTO a VALUES (1);";
    assert_int_equal(cli_run_text(&x->c, NULL, ins, sizeof ins - 1, 0), CLI_OK);
    assert_int_equal(x->f.n, 2);
    /* once it is stopped, the next one runs */
    x->c.be->cancel_push(x->c.be_ctx);
    assert_int_equal(cli_run_text(&x->c, NULL, sel, sizeof sel - 1, 0), CLI_OK);
    assert_int_equal(x->f.n, 3);
    assert_int_equal(x->c.pushes, 2);
}

static void test_scripts_run_several_pushes(void **state)
{
    fx *x = *state;
    /* outside the shell each push query's rows go to a pipe as CSV; the rule is the shell's */
    static const char sql[] = "SELECT x FROM a; SELECT x FROM b;";
    assert_int_equal(cli_run_text(&x->c, NULL, sql, sizeof sql - 1, 0), CLI_OK);
    assert_int_equal(x->f.n, 2);
}

/* ------------------------------------------------------------ capturing stdout and stderr */

typedef struct capture {
    int fd, saved;
    FILE *f;
} capture;

static void cap_start(capture *k, int fd)
{
    fflush(stdout);
    fflush(stderr);
    k->fd = fd;
    k->f = tmpfile();
    assert_non_null(k->f);
    k->saved = dup(fd);
    assert_true(k->saved >= 0);
    assert_true(dup2(fileno(k->f), fd) >= 0);
}

/* What was written to the descriptor since cap_start; free it. */
static char *cap_end(capture *k)
{
    fflush(stdout);
    fflush(stderr);
    dup2(k->saved, k->fd);
    close(k->saved);
    long n = ftell(k->f);
    if (n < 0) n = lseek(fileno(k->f), 0, SEEK_CUR);
    char *out = calloc((size_t)n + 1, 1);
    rewind(k->f);
    size_t got = fread(out, 1, (size_t)n, k->f);
    out[got] = 0;
    fclose(k->f);
    return out;
}

/* A whole text run as a script, with what it printed on stderr. */
static int run_err(cli *c, const char *name, const char *sql, char **err)
{
    capture k;
    cap_start(&k, STDERR_FILENO);
    int rc = cli_run_text(c, name, sql, strlen(sql), 0);
    *err = cap_end(&k);
    return rc;
}

/* ------------------------------------------------------------ statement splitting */

static void test_semicolons_in_strings_and_comments(void **state)
{
    fx *x = *state;
    static const char sql[] = "INSERT INTO a VALUES ('x;y'), ('it''s;');\n"
                              "-- a comment; with a semicolon\n"
                              "SHOW STREAMS; /* a block; comment */ SHOW QUERIES;\n"
                              "SELECT \"odd;name\" FROM a;\n";
    assert_int_equal(cli_run_text(&x->c, NULL, sql, sizeof sql - 1, 0), CLI_OK);
    assert_int_equal(x->f.n, 4);
    assert_string_equal(x->f.texts[0], "INSERT INTO a VALUES ('x;y'), ('it''s;')");
    assert_string_equal(x->f.texts[1], "SHOW STREAMS");
    assert_string_equal(x->f.texts[2], "SHOW QUERIES");
    assert_string_equal(x->f.texts[3], "SELECT \"odd;name\" FROM a");
}

static void test_statement_ends_at_a_line_end(void **state)
{
    fx *x = *state;
    cli_script s;
    cli_script_init(&s, NULL);
    /* a ';' in the middle of a line runs nothing while the line goes on */
    assert_int_equal(cli_script_line(&x->c, &s, "SHOW STREAMS; SHOW", 18), CLI_OK);
    assert_true(cli_script_pending(&s));
    assert_int_equal(x->f.n, 0);
    assert_int_equal(cli_script_line(&x->c, &s, "QUERIES;\n", 9), CLI_OK);
    assert_false(cli_script_pending(&s));
    assert_int_equal(x->f.n, 2);
    assert_string_equal(x->f.texts[1], "SHOW\nQUERIES");
    /* a ';' inside a trailing comment does not end the statement */
    assert_int_equal(cli_script_line(&x->c, &s, "SHOW STREAMS -- done;", 21), CLI_OK);
    assert_true(cli_script_pending(&s));
    assert_int_equal(x->f.n, 2);
    assert_int_equal(cli_script_line(&x->c, &s, ";", 1), CLI_OK);
    assert_int_equal(x->f.n, 3);
    assert_string_equal(x->f.texts[2], "SHOW STREAMS");
    /* a string over lines keeps its newline; a block comment over lines is one */
    assert_int_equal(cli_script_line(&x->c, &s, "INSERT INTO a VALUES ('one", 26), CLI_OK);
    assert_int_equal(cli_script_line(&x->c, &s, "two;');", 7), CLI_OK);
    assert_int_equal(x->f.n, 4);
    assert_string_equal(x->f.texts[3], "INSERT INTO a VALUES ('one\ntwo;')");
    assert_int_equal(cli_script_line(&x->c, &s, "/* SHOW STREAMS;", 16), CLI_OK);
    assert_true(cli_script_pending(&s));
    assert_int_equal(cli_script_line(&x->c, &s, "*/ SHOW QUERIES;", 16), CLI_OK);
    assert_false(cli_script_pending(&s));
    assert_int_equal(x->f.n, 5);
    assert_string_equal(x->f.texts[4], "SHOW QUERIES");
    /* blank lines between statements are nothing; the end runs a last one */
    assert_int_equal(cli_script_line(&x->c, &s, "  \t", 3), CLI_OK);
    assert_false(cli_script_pending(&s));
    assert_int_equal(cli_script_line(&x->c, &s, "SHOW STREAMS", 12), CLI_OK);
    assert_int_equal(x->f.n, 5);
    assert_int_equal(cli_script_end(&x->c, &s), CLI_OK);
    assert_int_equal(x->f.n, 6);
    assert_string_equal(x->f.texts[5], "SHOW STREAMS");
    cli_script_fini(&s);
}

/* ------------------------------------------------------------ error positions */

static void test_syntax_error_position(void **state)
{
    fx *x = *state;
    char *err = NULL;
    /* the second chunk starts on line 3 of the input: its error is on line 4 */
    static const char sql[] = "SHOW STREAMS;\n\nSELECT x\nFROM WHERE;\n";
    assert_int_equal(run_err(&x->c, "f.sql", sql, &err), CLI_ESQL);
    assert_int_equal(x->f.n, 1); /* the first statement ran, the bad one did not */
    assert_true(strncmp(err, "error: f.sql: line 4, column 6: ", 32) == 0);
    /* the source line and the caret under the column, as the parser draws them */
    assert_non_null(strstr(err, "\n  FROM WHERE;\n       ^\n"));
    free(err);
}

static void test_syntax_error_in_the_shell_counts_from_the_statement(void **state)
{
    fx *x = *state;
    x->c.interactive = 1;
    cli_script s;
    cli_script_init(&s, NULL);
    s.relative = 1;
    assert_int_equal(cli_script_line(&x->c, &s, "SHOW STREAMS;", 13), CLI_OK);
    capture k;
    cap_start(&k, STDERR_FILENO);
    int rc1 = cli_script_line(&x->c, &s, "SELECT x", 8);
    int rc2 = cli_script_line(&x->c, &s, "FROM WHERE;", 11);
    char *err = cap_end(&k);
    cli_script_fini(&s);
    assert_int_equal(rc1, CLI_OK);
    assert_int_equal(rc2, CLI_ESQL);
    assert_true(strncmp(err, "error: line 2, column 6: ", 25) == 0);
    free(err);
}

static void test_engine_error_position(void **state)
{
    fx *x = *state;
    char *err = NULL;
    static const char sql[] = "SHOW STREAMS;\nDROP STREAM\n  boom;\nSHOW QUERIES;\n";
    assert_int_equal(run_err(&x->c, "g.sql", sql, &err), CLI_ESQL);
    assert_int_equal(x->f.n, 2); /* the first error stops the script */
    assert_string_equal(err, "error: g.sql: line 3, column 3: no such thing as boom\n"
                             "    boom;\n"
                             "    ^\n");
    free(err);
}

static void test_report_at(void **state)
{
    (void)state;
    capture k;
    static const char src[] = "SELECT 1\nFROM nowhere;\n";
    cap_start(&k, STDERR_FILENO);
    cli_report_at(src, sizeof src - 1, "x.sql", 10, 2, 6, "unknown stream nowhere");
    cli_report_at(src, sizeof src - 1, NULL, 1, 0, 0, "no position");
    char *err = cap_end(&k);
    assert_string_equal(err, "error: x.sql: line 11, column 6: unknown stream nowhere\n"
                             "  FROM nowhere;\n"
                             "       ^\n"
                             "error: no position\n");
    free(err);
}

static void test_meta_command_errors(void **state)
{
    fx *x = *state;
    char *err = NULL;
    assert_int_equal(run_err(&x->c, "m.sql", "\\nope\n", &err), CLI_ESQL);
    assert_string_equal(err, "error: m.sql: unknown meta-command \\nope (\\help lists them)\n");
    free(err);
    /* \copy's options are checked before any file is opened, with a caret */
    assert_int_equal(run_err(&x->c, NULL, "\\copy a FROM 'x.csv' WITH (colour 'red')\n", &err), CLI_ESQL);
    assert_string_equal(err, "error: line 1, column 28: unknown \\copy option 'colour' (known: format, delimiter, "
                             "null_string, header)\n"
                             "  \\copy a FROM 'x.csv' WITH (colour 'red')\n"
                             "                             ^\n");
    free(err);
    assert_int_equal(x->f.n, 0);
}

/* ------------------------------------------------------------ output.c */

/* Print one result (two columns, the rows given) through a cli_out of kind
 * k; returns the bytes it wrote. */
static char *print_result(fmt_kind k, int stream, int nrows, const int64_t *ids, const char *const *names)
{
    FILE *data = tmpfile(), *notices = tmpfile();
    assert_non_null(data);
    assert_non_null(notices);
    cli_out_opts oo = {data, notices, k, k, NULL, NULL};
    cli_out *o = NULL;
    assert_int_equal(cli_out_new(&oo, &o), 0);
    const exec_out *eo = cli_out_exec(o);
    static const char *const cols[] = {"id", "name"};
    static const sql_type types[] = {TY_BIGINT, TY_TEXT};
    fmt_schema sc = {2, cols, types};
    assert_int_equal(eo->begin(eo->ctx, &sc, stream), 0);
    assert_int_equal(cli_out_pushed(o), stream);
    batch b;
    assert_int_equal(batch_init(&b, 2, 8), 0);
    for (int r = 0; r < nrows; r++) {
        val row[2] = {val_int(TY_BIGINT, ids[r]), names[r] ? val_text(names[r], (uint32_t)strlen(names[r])) : val_null()};
        assert_int_equal(batch_append_row(&b, row), 0);
    }
    if (nrows) assert_int_equal(eo->rows(eo->ctx, &b), 0);
    assert_int_equal(eo->end(eo->ctx), 0);
    eo->notice(eo->ctx, "2 rows");
    assert_int_equal(cli_out_write_errno(o), 0);
    cli_out_free(o);
    batch_fini(&b);
    /* the notice went to its own file, not among the rows */
    fflush(notices);
    char nb[32] = {0};
    rewind(notices);
    assert_true(fread(nb, 1, sizeof nb - 1, notices) > 0);
    assert_string_equal(nb, "2 rows\n");
    fclose(notices);
    long n = ftell(data);
    char *out = calloc((size_t)n + 1, 1);
    rewind(data);
    assert_int_equal(fread(out, 1, (size_t)n, data), (size_t)n);
    fclose(data);
    return out;
}

static const int64_t ids[] = {1, 42};
static const char *const names[] = {"ann", NULL};

static void test_output_csv(void **state)
{
    (void)state;
    char *out = print_result(FMT_CSV, 0, 2, ids, names);
    assert_string_equal(out, "id,name\n1,ann\n42,\n");
    free(out);
    /* no rows: the header still comes */
    out = print_result(FMT_CSV, 0, 0, ids, names);
    assert_string_equal(out, "id,name\n");
    free(out);
}

static void test_output_json(void **state)
{
    (void)state;
    char *out = print_result(FMT_JSON, 1, 2, ids, names);
    assert_string_equal(out, "{\"id\":1,\"name\":\"ann\"}\n{\"id\":42,\"name\":null}\n");
    free(out);
}

static void test_output_table(void **state)
{
    (void)state;
    char *out = print_result(FMT_TABLE, 0, 2, ids, names);
    /* numbers to the right, text to the left, NULL spelled out, the count last */
    assert_string_equal(out, " id | name\n"
                             "----+------\n"
                             "  1 | ann\n"
                             " 42 | NULL\n"
                             "(2 rows)\n");
    free(out);
}

static void test_output_write_error(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    if (!full) skip();
    cli_out_opts oo = {full, NULL, FMT_CSV, FMT_CSV, NULL, NULL};
    cli_out *o = NULL;
    assert_int_equal(cli_out_new(&oo, &o), 0);
    const exec_out *eo = cli_out_exec(o);
    static const char *const cols[] = {"id"};
    static const sql_type types[] = {TY_BIGINT};
    fmt_schema sc = {1, cols, types};
    assert_int_equal(eo->begin(eo->ctx, &sc, 1), 0);
    batch b;
    assert_int_equal(batch_init(&b, 1, 4), 0);
    val row[1] = {val_int(TY_BIGINT, 7)};
    assert_int_equal(batch_append_row(&b, row), 0);
    /* the engine is told (XE_IO) and the errno is kept for the message */
    assert_int_equal(eo->rows(eo->ctx, &b), XE_IO);
    assert_int_equal(cli_out_write_errno(o), ENOSPC);
    assert_int_equal(eo->rows(eo->ctx, &b), XE_IO);
    batch_fini(&b);
    cli_out_free(o);
    fclose(full);
}

/* ------------------------------------------------------------ the end of --ingest */

static void test_ingest_reports(void **state)
{
    (void)state;
    exec_ingest_stats st;
    memset(&st, 0, sizeof st);
    st.rows = 1;
    st.rejected = 12;
    capture k;
    cap_start(&k, STDERR_FILENO);
    cli_rejects_more("in.csv", st.rejected, CLI_SHOW_REJECTS);
    cli_rejects_more(NULL, 11, CLI_SHOW_REJECTS);
    cli_rejects_more(NULL, 10, CLI_SHOW_REJECTS); /* every one was shown: nothing */
    cli_ingest_counts("ev", &st);
    int strict = cli_ingest_verdict("ev", &st, 1, 0, CLI_OK);
    int lenient = cli_ingest_verdict("ev", &st, 0, 0, CLI_OK);
    char *err = cap_end(&k);
    assert_string_equal(err, "in.csv: ... and 2 more rejected lines\n"
                             "... and 1 more rejected line\n"
                             "ev: 1 row ingested, 12 lines rejected\n"
                             "error: input lines were rejected (--strict)\n");
    free(err);
    assert_int_equal(strict, CLI_EINPUT);
    assert_int_equal(lenient, CLI_OK); /* some rows went in */
    /* every line rejected is an input error; late rows are exit 4 unless allowed */
    st.rows = 0;
    st.rejected = 3;
    cap_start(&k, STDERR_FILENO);
    assert_int_equal(cli_ingest_verdict("ev", &st, 0, 0, CLI_OK), CLI_EINPUT);
    err = cap_end(&k);
    assert_string_equal(err, "error: every input line was rejected\n");
    free(err);
    memset(&st, 0, sizeof st);
    st.rows = 5;
    st.late = 2;
    cap_start(&k, STDERR_FILENO);
    cli_ingest_counts("ev", &st); /* nothing rejected: nothing to say */
    assert_int_equal(cli_ingest_verdict("ev", &st, 0, 0, CLI_OK), CLI_ELATE);
    assert_int_equal(cli_ingest_verdict("ev", &st, 0, 1, CLI_OK), CLI_OK);
    assert_int_equal(cli_ingest_verdict("ev", &st, 0, 0, CLI_INTR), CLI_INTR);
    err = cap_end(&k);
    assert_non_null(strstr(err, "ares-sql: warning: 2 rows of stream ev were late and dropped"));
    assert_null(strstr(err, "ingested"));
    free(err);
}

/* ------------------------------------------------------------ completion */

static void expect_cands(cli *c, const char *line, int pending, const char *const *want, size_t wlen)
{
    cli_cands k;
    size_t n = strlen(line);
    cli_complete(c, line, n, n, pending, &k);
    int nw = 0;
    while (want[nw]) nw++;
    if (k.n != nw) {
        for (int i = 0; i < k.n; i++) print_message("  got %s\n", k.v[i]);
        fail_msg("'%s': %d candidates, want %d", line, k.n, nw);
    }
    for (int i = 0; i < nw; i++) assert_string_equal(k.v[i], want[i]);
    assert_int_equal(k.wlen, wlen);
    cli_cands_free(&k);
}

static void test_completion(void **state)
{
    fx *x = *state;
    cli *c = &x->c;
    /* names after FROM come from the backend (the coordinator, with --connect) */
    expect_cands(c, "SELECT url FROM cl", 0, (const char *const[]){"clicks", "clocks", NULL}, 2);
    expect_cands(c, "SELECT url FROM cli", 0, (const char *const[]){"clicks", NULL}, 3);
    expect_cands(c, "DESCRIBE pe", 0, (const char *const[]){"per_k", NULL}, 2);
    expect_cands(c, "DROP QUERY ", 0, (const char *const[]){"per_k", NULL}, 0);
    /* keywords keep the case typed; columns complete anywhere */
    expect_cands(c, "sel", 0, (const char *const[]){"select", NULL}, 3);
    expect_cands(c, "SELECT user_", 0, (const char *const[]){"user_id", NULL}, 5);
    /* meta-commands at a statement's start only, and their arguments */
    expect_cands(c, "\\for", 0, (const char *const[]){"\\format", NULL}, 4);
    expect_cands(c, "\\for", 1, (const char *const[]){NULL}, 4);
    expect_cands(c, "\\format v", 0, (const char *const[]){"vertical", NULL}, 1);
    expect_cands(c, "\\copy cl", 0, (const char *const[]){"clicks", "clocks", NULL}, 2);
    /* a continued line completes as SQL */
    expect_cands(c, "FROM clo", 1, (const char *const[]){"clocks", NULL}, 3);
}

/* SIGPIPE ends ares-sql only when stdout is the broken pipe: a socket whose
 * peer has gone (a home that refused an ingest while the client was still
 * writing) fails the write with EPIPE instead, so the client fails over (an
 * experiment's producer died of it silently, and its partition with it). */
static void test_sigpipe_only_for_stdout(void **state)
{
    (void)state;
    int pp[2];
    assert_int_equal(pipe(pp), 0);
    assert_int_equal(cli_fd_broken(pp[1]), 0);
    close(pp[0]);
    assert_int_equal(cli_fd_broken(pp[1]), 1);
    close(pp[1]);
    int fd = open("/dev/null", O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(cli_fd_broken(fd), 0);

    /* a socket's peer gone, stdout fine: the write says EPIPE, no death */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, STDOUT_FILENO);
        int sv[2];
        if (cli_signals_install() || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) _exit(2);
        close(sv[1]);
        ssize_t w = write(sv[0], "x", 1);
        _exit(w < 0 && errno == EPIPE ? 0 : 3);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    /* stdout a pipe whose reader has gone: SIGPIPE ends it, as always */
    assert_int_equal(pipe(pp), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pp[0]);
        dup2(pp[1], STDOUT_FILENO);
        if (cli_signals_install()) _exit(2);
        for (int i = 0; i < 500 && !cli_fd_broken(STDOUT_FILENO); i++) usleep(10000); /* the parent's end too */
        ssize_t w = write(STDOUT_FILENO, "x", 1);
        (void)w;
        _exit(4);
    }
    close(pp[0]);
    close(pp[1]);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGPIPE);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_statements_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_statement_over_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_syntax_error_not_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta_commands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_push_refused_in_shell, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scripts_run_several_pushes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_completion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_semicolons_in_strings_and_comments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_statement_ends_at_a_line_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_syntax_error_position, setup, teardown),
        cmocka_unit_test_setup_teardown(test_syntax_error_in_the_shell_counts_from_the_statement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_error_position, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta_command_errors, setup, teardown),
        cmocka_unit_test(test_report_at),
        cmocka_unit_test(test_output_csv),
        cmocka_unit_test(test_output_json),
        cmocka_unit_test(test_output_table),
        cmocka_unit_test(test_output_write_error),
        cmocka_unit_test(test_ingest_reports),
        cmocka_unit_test(test_sigpipe_only_for_stdout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
