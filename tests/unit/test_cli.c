/* Unit tests for cli/: the session over a fake backend (cli_backend), which
 * is all that tells the embedded shell from ares-sql --connect: scripts cut
 * into statements, meta-commands, one push query at a time in the shell,
 * and tab completion's candidates from the backend's names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    (void)err;
    if (f->n < 16) f->texts[f->n++] = strdup(st->text);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
