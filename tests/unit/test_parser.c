/*
 * test_parser: the SQL front end (parser/): lexer, grammar, AST shapes,
 * syntax and semantic errors with their positions, the error formatter, the
 * shell helpers, and the printer's round trip over tests/corpus/roundtrip.sql.
 * Runs with cwd = tests/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parser/parser.h"
#include "parser/internal.h"
#include "parser/grammar.h"

/* ------------------------------------------------------------------ helpers */

static ast_stmt *one(const char *sql)
{
    ast_stmt *s = NULL;
    xerr e;
    xerr_clear(&e);
    int rc = parse_one(sql, strlen(sql), &s, &e);
    if (rc) fprintf(stderr, "parse failed: %s: %d:%d %s\n", sql, e.line, e.col, e.msg);
    assert_int_equal(rc, 0);
    assert_non_null(s);
    return s;
}

/* The select list's i-th expression of a one-statement SELECT. */
static ast_expr *item(ast_stmt *s, int i)
{
    assert_non_null(s->select);
    assert_true(i < s->select->items->n);
    return s->select->items->v[i].expr;
}

static char *print_stmt(const ast_stmt *s)
{
    sbuf b;
    sbuf_init(&b);
    assert_int_equal(ast_print_stmt(s, &b), 0);
    return sbuf_steal(&b);
}

static char *print_expr(const ast_expr *e)
{
    sbuf b;
    sbuf_init(&b);
    assert_int_equal(ast_print_expr(e, &b), 0);
    return sbuf_steal(&b);
}

/* Parse sql as one statement, print it, compare with want. */
static void check_print(const char *sql, const char *want)
{
    ast_stmt *s = one(sql);
    char *got = print_stmt(s);
    if (strcmp(got, want)) fprintf(stderr, "printed: %s\nwanted:  %s\n", got, want);
    assert_string_equal(got, want);
    free(got);
    ast_stmt_free(s);
}

/* The first error of parsing sql must be at line:col with message msg. */
static void check_error(const char *sql, int line, int col, const char *msg)
{
    parse_result *r;
    int rc = parse_sql(sql, strlen(sql), &r);
    assert_int_equal(rc, XE_SYNTAX);
    assert_true(r->nerrors >= 1);
    if (r->errors[0].line != line || r->errors[0].col != col || strcmp(r->errors[0].msg, msg))
        fprintf(stderr, "sql: %s\n got: %d:%d %s\nwant: %d:%d %s\n", sql, r->errors[0].line, r->errors[0].col,
                r->errors[0].msg, line, col, msg);
    assert_int_equal(r->errors[0].line, line);
    assert_int_equal(r->errors[0].col, col);
    assert_string_equal(r->errors[0].msg, msg);
    parse_result_free(r);
}

/* Like check_error, but only the message's start must match. */
static void check_error_prefix(const char *sql, int line, int col, const char *prefix)
{
    parse_result *r;
    assert_int_equal(parse_sql(sql, strlen(sql), &r), XE_SYNTAX);
    if (r->errors[0].line != line || r->errors[0].col != col || strncmp(r->errors[0].msg, prefix, strlen(prefix)))
        fprintf(stderr, "sql: %s\n got: %d:%d %s\nwant: %d:%d %s...\n", sql, r->errors[0].line, r->errors[0].col,
                r->errors[0].msg, line, col, prefix);
    assert_int_equal(r->errors[0].line, line);
    assert_int_equal(r->errors[0].col, col);
    assert_memory_equal(r->errors[0].msg, prefix, strlen(prefix));
    parse_result_free(r);
}

/* ------------------------------------------------------------------ lexer */

static void test_lexer_tokens(void **state)
{
    (void)state;
    const char *src = "SeLeCt \"Q\"\"x\" , 'it''s' 42 1.5 .5 1e3 2.5E-2 <> != <= >= || -- c\n /* b\n */ ; x";
    int want[] = {TK_SELECT, TK_ID, TK_COMMA, TK_STRING_LIT, TK_INTEGER_LIT, TK_FLOAT_LIT, TK_FLOAT_LIT,
                  TK_FLOAT_LIT, TK_FLOAT_LIT, TK_NE, TK_NE, TK_LE, TK_GE, TK_CONCAT, TK_SEMI, TK_ID, LEX_EOF};
    lexer lx;
    lex_init(&lx, src, strlen(src));
    token t;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int code = lex_next(&lx, &t);
        assert_int_equal(code, want[i]);
        assert_int_equal(t.code, want[i]);
    }
    /* positions: the ';' is on line 3, column 5; 'x' at column 7 */
    lex_init(&lx, src, strlen(src));
    while (lex_next(&lx, &t) != TK_SEMI) {}
    assert_int_equal(t.line, 3);
    assert_int_equal(t.col, 5);
    lex_next(&lx, &t);
    assert_int_equal(t.col, 7);
}

static void test_lexer_units_and_keywords(void **state)
{
    (void)state;
    assert_int_equal(lex_word("second", 6), TK_SECONDS);
    assert_int_equal(lex_word("SECONDS", 7), TK_SECONDS);
    assert_int_equal(lex_word("Millisecond", 11), TK_MILLISECONDS);
    assert_int_equal(lex_word("days", 4), TK_DAYS);
    assert_int_equal(lex_word("hour", 4), TK_HOURS);
    assert_int_equal(lex_word("minutes", 7), TK_MINUTES);
    assert_int_equal(lex_word("selects", 7), TK_ID);
    assert_int_equal(lex_word("a b", 3), 0);
    assert_int_equal(lex_word("\"a\"", 3), 0);
    assert_int_equal(lex_word("42", 2), 0);
    assert_true(lex_is_number("-1.5e3", 6));
    assert_true(lex_is_number("7", 1));
    assert_false(lex_is_number("x", 1));
    assert_false(lex_is_number("1 2", 3));
    /* every listed keyword is a keyword token, the list is sorted and upper case */
    int n = 0;
    for (const char *const *k = parse_keywords; *k; k++, n++) {
        int code = lex_word(*k, strlen(*k));
        assert_true(code > 0 && code < TK_ID);
        if (k != parse_keywords) assert_true(strcmp(k[-1], k[0]) < 0);
        for (const char *p = *k; *p; p++) assert_true(*p >= 'A' && *p <= 'Z');
    }
    assert_true(n > 60);
    /* the grammar's terminals: the %token block (NOT_LA last), then the UMINUS precedence marker */
    assert_int_equal(parser_ntokens(), TK_UMINUS + 1);
    assert_int_equal(TK_UMINUS, TK_NOT_LA + 1);
}

static void test_lexer_columns_utf8(void **state)
{
    (void)state;
    /* columns count characters: 'é' is two bytes but one column */
    check_error("SELECT 'é', @ FROM s", 1, 13, "unexpected character '@'");
    check_error("SELECT\n\t@", 2, 2, "unexpected character '@'");
}

static void test_lexer_errors(void **state)
{
    (void)state;
    check_error("SELECT @ FROM s", 1, 8, "unexpected character '@'");
    check_error("SELECT a FROM s WHERE x = 'abc", 1, 27, "unterminated string literal");
    check_error("SELECT \"abc FROM s", 1, 8, "unterminated quoted identifier");
    check_error("SELECT a /* never closed\n FROM s", 1, 10, "unterminated comment");
    check_error("SELECT \"\" FROM s", 1, 8, "zero-length quoted identifier");
    char nul[] = "SELECT a\0 FROM s";
    parse_result *r;
    assert_int_equal(parse_sql(nul, sizeof nul - 1, &r), XE_SYNTAX);
    assert_int_equal(r->errors[0].col, 9);
    assert_string_equal(r->errors[0].msg, "unexpected character 0x00");
    parse_result_free(r);
    check_error("SELECT a FROM s WHERE x = 'a\0b'", 1, 27, "unterminated string literal");
}

/* ------------------------------------------------------------------ statements */

static void test_create_stream(void **state)
{
    (void)state;
    ast_stmt *s = one("CREATE STREAM IF NOT EXISTS Bids (Auction BIGINT, price DOUBLE, \"Ch\" TEXT, ts TIMESTAMP)"
                      " WITH (timestamp = 'ts', Parallelism = 4, ft = Replica, neg = -2.5, on_ = TRUE, q = 'it''s')");
    assert_int_equal(s->kind, ST_CREATE_STREAM);
    assert_string_equal(s->name, "bids");
    assert_int_equal(s->if_not_exists, 1);
    assert_int_equal(s->cols->n, 4);
    assert_string_equal(s->cols->v[0].name, "auction");
    assert_int_equal(s->cols->v[0].type, TY_BIGINT);
    assert_int_equal(s->cols->v[1].type, TY_DOUBLE);
    assert_string_equal(s->cols->v[2].name, "Ch");
    assert_int_equal(s->cols->v[2].type, TY_TEXT);
    assert_int_equal(s->cols->v[3].type, TY_TIMESTAMP);
    assert_int_equal(s->with->n, 6);
    const ast_option *o = ast_option_get(s->with, "TIMESTAMP");
    assert_non_null(o);
    assert_string_equal(o->key, "timestamp");
    assert_string_equal(o->value, "ts");
    assert_int_equal(o->quoted, 1);
    o = ast_option_get(s->with, "parallelism");
    assert_string_equal(o->value, "4");
    assert_int_equal(o->quoted, 0);
    assert_string_equal(ast_option_get(s->with, "ft")->value, "replica");
    assert_string_equal(ast_option_get(s->with, "neg")->value, "-2.5");
    assert_string_equal(ast_option_get(s->with, "on_")->value, "true");
    assert_string_equal(ast_option_get(s->with, "q")->value, "it's");
    assert_null(ast_option_get(s->with, "missing"));
    assert_null(ast_option_get(NULL, "x"));
    assert_string_equal(s->text, "CREATE STREAM IF NOT EXISTS Bids (Auction BIGINT, price DOUBLE, \"Ch\" TEXT, ts "
                                 "TIMESTAMP) WITH (timestamp = 'ts', Parallelism = 4, ft = Replica, neg = -2.5, "
                                 "on_ = TRUE, q = 'it''s')");
    ast_stmt_free(s);

    s = one("create stream s (a bigint)");
    assert_int_equal(s->if_not_exists, 0);
    assert_null(s->with);
    ast_stmt_free(s);
}

static void test_types(void **state)
{
    (void)state;
    ast_stmt *s = one("CREATE STREAM t (a BIGINT, b INT, c INTEGER, d DOUBLE, e FLOAT, f REAL, g TEXT, h VARCHAR,"
                      " i VARCHAR(20), j STRING, k BOOLEAN, l BOOL, m TIMESTAMP, n TIMESTAMP(3))");
    sql_type want[] = {TY_BIGINT, TY_INT, TY_INT, TY_DOUBLE, TY_DOUBLE, TY_DOUBLE, TY_TEXT,
                       TY_TEXT, TY_TEXT, TY_TEXT, TY_BOOL, TY_BOOL, TY_TIMESTAMP, TY_TIMESTAMP};
    assert_int_equal(s->cols->n, 14);
    for (int i = 0; i < 14; i++) assert_int_equal(s->cols->v[i].type, want[i]);
    ast_stmt_free(s);
    assert_string_equal(sql_type_name(TY_INT), "INT");
    assert_string_equal(sql_type_name(TY_BIGINT), "BIGINT");
    assert_string_equal(sql_type_name(TY_BOOL), "BOOLEAN");
    assert_string_equal(sql_type_name(TY_TEXT), "TEXT");
    assert_string_equal(sql_type_name(TY_DOUBLE), "DOUBLE");
    assert_string_equal(sql_type_name(TY_TIMESTAMP), "TIMESTAMP");
    assert_string_equal(sql_type_name(TY_INTERVAL), "INTERVAL");
    assert_string_equal(sql_type_name(TY_NULL), "NULL");
}

/* CREATE STREAM ... AS SELECT and INSERT INTO ... SELECT (issue 19). */
static void test_derived_statements(void **state)
{
    (void)state;
    ast_stmt *s = one("CREATE STREAM IF NOT EXISTS big WITH (timestamp = 'wend') AS\n"
                      "  SELECT k, COUNT(*) AS n, window_end AS wend FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k");
    assert_int_equal(s->kind, ST_CREATE_STREAM_AS);
    assert_string_equal(s->name, "big");
    assert_int_equal(s->if_not_exists, 1);
    assert_null(s->cols);
    assert_string_equal(ast_option_get(s->with, "timestamp")->value, "wend");
    assert_string_equal(s->select->from->stream, "ev");
    assert_int_equal(s->select->items->n, 3);
    ast_stmt_free(s);
    s = one("CREATE STREAM odd AS SELECT * FROM ev WHERE v % 2 = 1");
    assert_int_equal(s->kind, ST_CREATE_STREAM_AS);
    assert_null(s->with);
    ast_stmt_free(s);
    s = one("INSERT INTO u SELECT ts, k FROM ev WHERE k = 2");
    assert_int_equal(s->kind, ST_INSERT_SELECT);
    assert_string_equal(s->name, "u");
    assert_null(s->rows);
    assert_string_equal(s->select->from->stream, "ev");
    ast_stmt_free(s);
    /* VALUES still parses after INSERT INTO name, with or without columns */
    s = one("INSERT INTO u (a) VALUES (1)");
    assert_int_equal(s->kind, ST_INSERT);
    ast_stmt_free(s);
    check_print("create stream if not exists d with (timestamp='t') as select a, t from s",
                "CREATE STREAM IF NOT EXISTS d WITH (\"timestamp\" = 't') AS SELECT a, t FROM s");
    check_print("insert into d select * from s", "INSERT INTO d SELECT * FROM s");
    check_error_prefix("CREATE STREAM d AS ev", 1, 20, "unexpected");
    check_error_prefix("INSERT INTO d SELECT FROM s", 1, 22, "unexpected");
}

static void test_create_query(void **state)
{
    (void)state;
    ast_stmt *s = one("CREATE QUERY IF NOT EXISTS hot WITH (parallelism = 2) AS\n"
                      "  SELECT auction, COUNT(*) AS bids FROM bids WINDOW TUMBLING (SIZE 10 SECONDS)\n"
                      "  WHERE price > 1.5 GROUP BY auction HAVING COUNT(*) >= 3 EMIT FINAL");
    assert_int_equal(s->kind, ST_CREATE_QUERY);
    assert_string_equal(s->name, "hot");
    assert_int_equal(s->if_not_exists, 1);
    assert_string_equal(ast_option_get(s->with, "parallelism")->value, "2");
    ast_select *q = s->select;
    assert_int_equal(q->items->n, 2);
    assert_string_equal(q->items->v[1].alias, "bids");
    assert_int_equal(q->items->v[1].expr->kind, EX_FUNC);
    assert_string_equal(q->items->v[1].expr->name, "count");
    assert_int_equal(q->items->v[1].expr->list->n, 1);
    assert_int_equal(q->items->v[1].expr->list->v[0]->kind, EX_STAR);
    assert_string_equal(q->from->stream, "bids");
    assert_int_equal(q->window.kind, WIN_TUMBLING);
    assert_int_equal(q->window.size_ms, 10000);
    assert_int_equal(q->window.has_grace, 0);
    assert_int_equal(q->where->kind, EX_BINARY);
    assert_int_equal(q->where->op, OP_GT);
    assert_int_equal(q->group_by->n, 1);
    assert_int_equal(q->having->op, OP_GE);
    assert_int_equal(q->emit, EMIT_FINAL);
    assert_int_equal(q->limit, -1);
    assert_null(q->join);
    ast_stmt_free(s);
}

static void test_select_shape(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT *, t.*, a, b AS x, c y FROM s AS t JOIN (SELECT k FROM u) v ON t.k = v.k"
                      " WITHIN 5 SECONDS EMIT CHANGES LIMIT 7");
    assert_int_equal(s->kind, ST_SELECT);
    ast_select *q = s->select;
    assert_int_equal(q->items->n, 5);
    assert_int_equal(q->items->v[0].star, 1);
    assert_null(q->items->v[0].star_qual);
    assert_null(q->items->v[0].expr);
    assert_int_equal(q->items->v[1].star, 1);
    assert_string_equal(q->items->v[1].star_qual, "t");
    assert_null(q->items->v[2].alias);
    assert_string_equal(q->items->v[3].alias, "x");
    assert_string_equal(q->items->v[4].alias, "y");
    assert_string_equal(q->from->alias, "t");
    assert_int_equal(q->from->line, 1);
    assert_int_equal(q->from->col, 36);
    assert_null(q->join->stream);
    assert_non_null(q->join->sub);
    assert_string_equal(q->join->alias, "v");
    assert_string_equal(q->join->sub->items->v[0].expr->name, "k");
    assert_int_equal(q->join_on->op, OP_EQ);
    assert_string_equal(q->join_on->a->qual, "t");
    assert_string_equal(q->join_on->a->name, "k");
    assert_int_equal(q->within_ms, 5000);
    assert_int_equal(q->emit, EMIT_CHANGES);
    assert_int_equal(q->limit, 7);
    ast_stmt_free(s);

    s = one("SELECT a FROM s x");
    assert_string_equal(s->select->from->alias, "x");
    ast_stmt_free(s);
    s = one("SELECT a FROM (SELECT a FROM s) AS sub LIMIT 0");
    assert_string_equal(s->select->from->alias, "sub");
    assert_int_equal(s->select->limit, 0);
    ast_stmt_free(s);
}

static void test_windows(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT a FROM s WINDOW HOPPING (SIZE 1 MINUTE, ADVANCE BY 10 SECONDS, GRACE PERIOD 2 SECONDS)");
    assert_int_equal(s->select->window.kind, WIN_HOPPING);
    assert_int_equal(s->select->window.size_ms, 60000);
    assert_int_equal(s->select->window.advance_ms, 10000);
    assert_int_equal(s->select->window.has_grace, 1);
    assert_int_equal(s->select->window.grace_ms, 2000);
    ast_stmt_free(s);

    s = one("SELECT a FROM s WINDOW SESSION (GAP 30 SECONDS, GRACE 0 SECONDS)");
    assert_int_equal(s->select->window.kind, WIN_SESSION);
    assert_int_equal(s->select->window.gap_ms, 30000);
    assert_int_equal(s->select->window.has_grace, 1);
    assert_int_equal(s->select->window.grace_ms, 0);
    ast_stmt_free(s);

    s = one("SELECT a FROM s WINDOW SESSION (5 MINUTES)"); /* ksqlDB spelling */
    assert_int_equal(s->select->window.gap_ms, 300000);
    ast_stmt_free(s);

    s = one("SELECT a FROM s WINDOW TUMBLING (SIZE INTERVAL '1' HOUR, GRACE INTERVAL '90' SECOND)");
    assert_int_equal(s->select->window.size_ms, 3600000);
    assert_int_equal(s->select->window.grace_ms, 90000);
    ast_stmt_free(s);

    check_error("SELECT a FROM s WINDOW TUMBLING (SIZE 0 SECONDS)", 1, 39, "window SIZE must be positive");
    check_error("SELECT a FROM s WINDOW HOPPING (SIZE 1 SECOND, ADVANCE BY 0 SECONDS)", 1, 59,
                "window ADVANCE must be positive");
    check_error("SELECT a FROM s WINDOW SESSION (GAP 0 DAYS)", 1, 37, "window GAP must be positive");
    check_error("SELECT a FROM s WINDOW TUMBLING (SIZE 10)", 1, 41,
                "unexpected ')', expected one of: MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS");
    check_error("SELECT a FROM s WINDOW TUMBLING (SIZ 10 SECONDS)", 1, 34, "unexpected 'SIZ', expected SIZE");
    check_error("SELECT a FROM s WINDOW SLIDING (SIZE 1 SECOND)", 1, 24,
                "unexpected 'SLIDING', expected one of: TUMBLING, HOPPING, SESSION");
}

static void test_intervals(void **state)
{
    (void)state;
    struct { const char *sql; int64_t ms; } cases[] = {
        {"SELECT 1 MILLISECOND FROM s", 1},
        {"SELECT 250 milliseconds FROM s", 250},
        {"SELECT 1 second FROM s", 1000},
        {"SELECT 10 SECONDS FROM s", 10000},
        {"SELECT 2 minute FROM s", 120000},
        {"SELECT 3 HOURS FROM s", 10800000},
        {"SELECT 1 DAY FROM s", 86400000},
        {"SELECT 1.5 SECONDS FROM s", 1500},
        {"SELECT 0.25 MINUTES FROM s", 15000},
        {"SELECT 1e3 MILLISECONDS FROM s", 1000},
        {"SELECT INTERVAL '10' SECOND FROM s", 10000},
        {"SELECT INTERVAL ' 2.5 ' HOURS FROM s", 9000000},
        {"SELECT INTERVAL 7 DAYS FROM s", 604800000},
        {"SELECT 0 SECONDS FROM s", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ast_stmt *s = one(cases[i].sql);
        ast_expr *e = item(s, 0);
        assert_int_equal(e->kind, EX_LIT);
        assert_int_equal(e->lit.type, TY_INTERVAL);
        assert_int_equal(e->lit.i, cases[i].ms);
        ast_stmt_free(s);
    }
    check_error("SELECT 0.0001 SECONDS FROM s", 1, 8, "interval is not a whole number of milliseconds");
    check_error("SELECT 999999999999999 DAYS FROM s", 1, 8, "interval out of range");
    check_error("SELECT INTERVAL 'ten' SECOND FROM s", 1, 17, "invalid interval 'ten'");
    check_error("SELECT INTERVAL '-1' SECOND FROM s", 1, 17, "invalid interval '-1'");
    check_error("SELECT INTERVAL '10' FROM s", 1, 22,
                "unexpected 'FROM', expected one of: MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS");
}

static void test_literals(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT NULL, TRUE, false, 42, 9223372036854775807, 1.5, 1e10, 'it''s', '',"
                      " TIMESTAMP '1970-01-02 00:00:01.5', TIMESTAMP '2024-02-29T12:00:00+02:00' FROM s");
    assert_int_equal(item(s, 0)->lit.type, TY_NULL);
    assert_int_equal(item(s, 1)->lit.type, TY_BOOL);
    assert_int_equal(item(s, 1)->lit.i, 1);
    assert_int_equal(item(s, 2)->lit.i, 0);
    assert_int_equal(item(s, 3)->lit.type, TY_BIGINT);
    assert_int_equal(item(s, 3)->lit.i, 42);
    assert_int_equal(item(s, 4)->lit.i, INT64_MAX);
    assert_int_equal(item(s, 5)->lit.type, TY_DOUBLE);
    assert_true(item(s, 5)->lit.d == 1.5);
    assert_int_equal(item(s, 6)->lit.type, TY_DOUBLE);
    assert_true(item(s, 6)->lit.d == 1e10);
    assert_int_equal(item(s, 7)->lit.type, TY_TEXT);
    assert_string_equal(item(s, 7)->lit.s, "it's");
    assert_string_equal(item(s, 8)->lit.s, "");
    assert_int_equal(item(s, 9)->lit.type, TY_TIMESTAMP);
    assert_int_equal(item(s, 9)->lit.i, 86401500);
    assert_int_equal(item(s, 10)->lit.i, 1709200800000LL); /* 2024-02-29T10:00:00Z */
    ast_stmt_free(s);

    int64_t ms;
    assert_int_equal(ast_parse_timestamp("2024-01-01", 10, &ms), 0);
    assert_int_equal(ms, 1704067200000LL);
    assert_int_equal(ast_parse_timestamp("1969-12-31 23:59:59.999Z", 24, &ms), 0);
    assert_int_equal(ms, -1);
    assert_int_equal(ast_parse_timestamp("2023-02-29", 10, &ms), -1);
    assert_int_equal(ast_parse_timestamp("2024-01-01 25:00", 16, &ms), -1);
    assert_int_equal(ast_parse_timestamp("2024-1-01", 9, &ms), -1);
    assert_int_equal(ast_parse_timestamp("2024-01-01 10:00 junk", 21, &ms), -1);

    check_error("SELECT 99999999999999999999 FROM s", 1, 8, "integer out of range");
    check_error("SELECT 1e999 FROM s", 1, 8, "number out of range");
    check_error("SELECT TIMESTAMP '2024-13-01' FROM s", 1, 18, "invalid timestamp '2024-13-01'");
    check_error("SELECT a FROM s LIMIT 99999999999999999999", 1, 23, "LIMIT out of range");
}

static void test_identifiers(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT MixedCase, \"MixedCase\", \"a\"\"b\", T.Col, \"select\" FROM S");
    assert_string_equal(item(s, 0)->name, "mixedcase");
    assert_string_equal(item(s, 1)->name, "MixedCase");
    assert_string_equal(item(s, 2)->name, "a\"b");
    assert_string_equal(item(s, 3)->qual, "t");
    assert_string_equal(item(s, 3)->name, "col");
    assert_string_equal(item(s, 4)->name, "select");
    assert_string_equal(s->select->from->stream, "s");
    ast_stmt_free(s);

    /* non-reserved keywords are identifiers wherever a keyword cannot go */
    s = one("SELECT ts, size, timestamp, key, value, window_start, format, json, seconds, session, t.timestamp"
            " AS final FROM streams AS nodes");
    const char *names[] = {"ts", "size", "timestamp", "key", "value", "window_start", "format", "json",
                           "seconds", "session", "timestamp"};
    for (int i = 0; i < 11; i++) {
        assert_int_equal(item(s, i)->kind, EX_COL);
        assert_string_equal(item(s, i)->name, names[i]);
    }
    assert_string_equal(s->select->items->v[10].alias, "final");
    assert_string_equal(s->select->from->stream, "streams");
    assert_string_equal(s->select->from->alias, "nodes");
    ast_stmt_free(s);

    s = one("CREATE STREAM size (timestamp TIMESTAMP, key TEXT, gap INT) WITH (timestamp = 'timestamp', format = json)");
    assert_string_equal(s->name, "size");
    assert_string_equal(s->cols->v[0].name, "timestamp");
    assert_string_equal(ast_option_get(s->with, "format")->value, "json");
    ast_stmt_free(s);

    /* reserved words need quotes */
    check_error_prefix("SELECT from FROM s", 1, 8, "unexpected 'from', expected one of:");
}

static void test_functions(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT COUNT(*), count(DISTINCT a), SUM(a + 1), Coalesce(a, b, 0), NOW(), \"F\"(x) FROM s");
    ast_expr *e = item(s, 0);
    assert_int_equal(e->kind, EX_FUNC);
    assert_string_equal(e->name, "count");
    assert_int_equal(e->list->v[0]->kind, EX_STAR);
    e = item(s, 1);
    assert_int_equal(e->distinct, 1);
    assert_int_equal(e->list->n, 1);
    e = item(s, 2);
    assert_string_equal(e->name, "sum");
    assert_int_equal(e->list->v[0]->op, OP_ADD);
    e = item(s, 3);
    assert_string_equal(e->name, "coalesce");
    assert_int_equal(e->list->n, 3);
    e = item(s, 4);
    assert_null(e->list);
    assert_string_equal(item(s, 5)->name, "F");
    ast_stmt_free(s);
    check_error("SELECT COUNT(* FROM s", 1, 16, "unexpected 'FROM', expected ')'");
}

/* Print just the first select item of sql. */
static void check_expr(const char *expr, const char *want)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM s", expr);
    ast_stmt *s = one(sql);
    char *got = print_expr(item(s, 0));
    if (strcmp(got, want)) fprintf(stderr, "expr %s printed %s, wanted %s\n", expr, got, want);
    assert_string_equal(got, want);
    free(got);
    ast_stmt_free(s);
}

static void test_precedence(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT a + b * c, a OR b AND c, NOT a = b, a BETWEEN 1 AND 2 AND c, -a * b, a || b + c,"
                      " a = b IS NULL, a NOT LIKE 'x' OR b, x = y NOT LIKE 'z' FROM s");
    ast_expr *e = item(s, 0);
    assert_int_equal(e->op, OP_ADD);
    assert_int_equal(e->b->op, OP_MUL);
    e = item(s, 1);
    assert_int_equal(e->op, OP_OR);
    assert_int_equal(e->b->op, OP_AND);
    e = item(s, 2);
    assert_int_equal(e->kind, EX_UNARY);
    assert_int_equal(e->op, OP_NOT);
    assert_int_equal(e->a->op, OP_EQ);
    e = item(s, 3);
    assert_int_equal(e->op, OP_AND);
    assert_int_equal(e->a->kind, EX_BETWEEN);
    assert_int_equal(e->a->c->lit.i, 2);
    e = item(s, 4);
    assert_int_equal(e->op, OP_MUL);
    assert_int_equal(e->a->op, OP_NEG);
    e = item(s, 5);
    assert_int_equal(e->op, OP_CONCAT); /* || binds looser than + (as in PostgreSQL) */
    assert_int_equal(e->b->op, OP_ADD);
    e = item(s, 6);
    assert_int_equal(e->kind, EX_ISNULL);
    assert_int_equal(e->a->op, OP_EQ);
    e = item(s, 7);
    assert_int_equal(e->op, OP_OR);
    assert_int_equal(e->a->kind, EX_LIKE);
    assert_int_equal(e->a->negated, 1);
    e = item(s, 8);
    assert_int_equal(e->op, OP_EQ); /* NOT LIKE binds tighter than = */
    assert_int_equal(e->b->kind, EX_LIKE);
    ast_stmt_free(s);

    check_expr("a - (b - c)", "a - (b - c)");
    check_expr("(a - b) - c", "a - b - c");
    check_expr("(a + b) * c", "(a + b) * c");
    check_expr("- -a", "-(-a)");
    check_expr("-(a + b)", "-(a + b)");
    check_expr("NOT (a AND b)", "NOT (a AND b)");
    check_expr("(NOT a) = b", "(NOT a) = b");
    check_expr("a = (NOT b)", "a = (NOT b)");
    check_expr("(a = b) = c", "(a = b) = c");
    check_expr("(a IS NULL) IS NULL", "(a IS NULL) IS NULL");
    check_expr("a IN (1, 2) IN (TRUE)", "(a IN (1, 2)) IN (TRUE)");
    check_expr("a BETWEEN (b AND c) AND d", "a BETWEEN (b AND c) AND d");
    check_expr("a BETWEEN b + 1 AND c || d", "a BETWEEN b + 1 AND c || d");
    check_expr("(a OR b) AND c", "(a OR b) AND c");
    check_expr("a LIKE (b LIKE c)", "a LIKE (b LIKE c)");
    check_expr("a % b / c * d", "a % b / c * d");
}

static void test_predicates(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT a IS NULL, a IS NOT NULL, a BETWEEN 1 AND 2, a NOT BETWEEN 1 AND 2,"
                      " a IN (1, 2, 3), a NOT IN ('x'), a LIKE 'p%', a NOT LIKE 'q' FROM s");
    ast_expr_kind kinds[] = {EX_ISNULL, EX_ISNULL, EX_BETWEEN, EX_BETWEEN, EX_IN, EX_IN, EX_LIKE, EX_LIKE};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(item(s, i)->kind, kinds[i]);
        assert_int_equal(item(s, i)->negated, i % 2);
    }
    assert_int_equal(item(s, 4)->list->n, 3);
    assert_string_equal(item(s, 6)->b->lit.s, "p%");
    ast_stmt_free(s);
    check_error_prefix("SELECT a NOT 5 FROM s", 1, 10, "unexpected 'NOT', expected one of: AS, FROM");
}

static void test_case_cast(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT CASE WHEN a > 0 THEN 'p' WHEN a < 0 THEN 'n' ELSE 'z' END,"
                      " CASE a WHEN 1 THEN 'one' END, CAST(a AS DOUBLE), CAST(b AS VARCHAR(3)) FROM s");
    ast_expr *e = item(s, 0);
    assert_int_equal(e->kind, EX_CASE);
    assert_null(e->a);
    assert_int_equal(e->list->n, 4);
    assert_string_equal(e->list->v[1]->lit.s, "p");
    assert_string_equal(e->b->lit.s, "z");
    e = item(s, 1);
    assert_string_equal(e->a->name, "a");
    assert_int_equal(e->list->n, 2);
    assert_null(e->b);
    e = item(s, 2);
    assert_int_equal(e->kind, EX_CAST);
    assert_int_equal(e->cast_type, TY_DOUBLE);
    assert_int_equal(item(s, 3)->cast_type, TY_TEXT);
    ast_stmt_free(s);
    check_error_prefix("SELECT CASE END FROM s", 1, 13, "unexpected 'END', expected one of:");
    check_error("SELECT CAST(a AS DATE) FROM s", 1, 18, "unexpected 'DATE', expected one of: BIGINT, INT, "
                "INTEGER, DOUBLE, FLOAT, REAL, TEXT, VARCHAR, ...");
}

static void test_insert(void **state)
{
    (void)state;
    ast_stmt *s = one("INSERT INTO bids (a, B) VALUES (1, 'x'), (-2, NULL)");
    assert_int_equal(s->kind, ST_INSERT);
    assert_string_equal(s->name, "bids");
    assert_int_equal(s->insert_cols->n, 2);
    assert_string_equal(s->insert_cols->v[1], "b");
    assert_int_equal(s->rows->n, 2);
    assert_int_equal(s->rows->v[0]->n, 2);
    assert_int_equal(s->rows->v[1]->v[0]->op, OP_NEG);
    ast_stmt_free(s);
    s = one("INSERT INTO bids VALUES (1)");
    assert_null(s->insert_cols);
    assert_int_equal(s->rows->n, 1);
    ast_stmt_free(s);
    check_error("INSERT INTO s VALUES 1, 2", 1, 22, "unexpected '1', expected '('");
    check_error("INSERT INTO s (a, a) VALUES (1, 2)", 1, 19, "duplicate column 'a'");
}

static void test_small_statements(void **state)
{
    (void)state;
    ast_stmt *s = one("DROP STREAM IF EXISTS s");
    assert_int_equal(s->kind, ST_DROP_STREAM);
    assert_int_equal(s->if_exists, 1);
    assert_string_equal(s->name, "s");
    ast_stmt_free(s);
    s = one("drop query q;");
    assert_int_equal(s->kind, ST_DROP_QUERY);
    assert_int_equal(s->if_exists, 0);
    ast_stmt_free(s);
    s = one("SHOW STREAMS");
    assert_int_equal(s->kind, ST_SHOW);
    assert_int_equal(s->show, SHOW_STREAMS);
    ast_stmt_free(s);
    s = one("show queries");
    assert_int_equal(s->show, SHOW_QUERIES);
    ast_stmt_free(s);
    s = one("SHOW NODES");
    assert_int_equal(s->show, SHOW_NODES);
    ast_stmt_free(s);
    s = one("show Settings");
    assert_int_equal(s->show, SHOW_SETTINGS);
    assert_null(s->name);
    ast_stmt_free(s);
    s = one("SHOW Parallelism");
    assert_int_equal(s->show, SHOW_SETTING);
    assert_string_equal(s->name, "parallelism");
    ast_stmt_free(s);
    s = one("SHOW placement"); /* a keyword, taken as the setting's name */
    assert_int_equal(s->show, SHOW_SETTING);
    assert_string_equal(s->name, "placement");
    ast_stmt_free(s);
    s = one("DESCRIBE \"My Stream\"");
    assert_int_equal(s->kind, ST_DESCRIBE);
    assert_string_equal(s->name, "My Stream");
    ast_stmt_free(s);
    s = one("SUBSCRIBE hot");
    assert_int_equal(s->kind, ST_SUBSCRIBE);
    assert_string_equal(s->name, "hot");
    ast_stmt_free(s);
    s = one("alter query hot rebalance");
    assert_int_equal(s->kind, ST_ALTER_QUERY_REBALANCE);
    assert_string_equal(s->name, "hot");
    ast_stmt_free(s);
    s = one("ALTER QUERY rebalance REBALANCE"); /* not reserved: a query may be called rebalance */
    assert_string_equal(s->name, "rebalance");
    ast_stmt_free(s);
    check_error("ALTER QUERY hot", 1, 16, "unexpected end of input, expected REBALANCE");
    check_error("DROP VIEW x", 1, 6, "unexpected 'VIEW', expected one of: STREAM, QUERY, TABLE");
    s = one("DROP TABLE IF EXISTS t");
    assert_int_equal(s->kind, ST_DROP_STREAM);
    ast_stmt_free(s);
    check_error("SHOW 1", 1, 6, "unexpected '1', expected one of: STREAMS, QUERIES, NODES, SETTINGS, or a setting's name");
    check_error("SHOW", 1, 5, "unexpected end of input, expected one of: STREAMS, QUERIES, NODES, SETTINGS, or a "
                              "setting's name");
    check_error("DESCRIBE", 1, 9, "unexpected end of input, expected identifier");
}

/* CREATE TABLE: its key after the columns (none parses: the engine names
 * that error), CREATE TABLE AS; key, primary and table stay identifiers. */
static void test_create_table(void **state)
{
    (void)state;
    ast_stmt *s = one("CREATE TABLE IF NOT EXISTS t (k BIGINT, key TEXT, op TEXT, PRIMARY KEY (k, key)) "
                      "WITH (op_column = 'op')");
    assert_int_equal(s->kind, ST_CREATE_TABLE);
    assert_int_equal(s->if_not_exists, 1);
    assert_int_equal(s->cols->n, 3);
    assert_int_equal(s->pkey->n, 2);
    assert_string_equal(s->pkey->v[1], "key");
    ast_stmt_free(s);
    s = one("create table t (k bigint)");
    assert_null(s->pkey);
    ast_stmt_free(s);
    s = one("CREATE TABLE c AS SELECT k, COUNT(*) AS n FROM t GROUP BY k");
    assert_int_equal(s->kind, ST_CREATE_TABLE_AS);
    assert_non_null(s->select);
    ast_stmt_free(s);
    check_print("CREATE TABLE t (k BIGINT, v TEXT, PRIMARY KEY (k)) WITH (op_column = 'op')",
                "CREATE TABLE t (k BIGINT, v TEXT, PRIMARY KEY (k)) WITH (op_column = 'op')");
    check_print("CREATE TABLE c AS SELECT k, COUNT(*) AS n FROM t GROUP BY k",
                "CREATE TABLE c AS SELECT k, COUNT(*) AS n FROM t GROUP BY k");
    check_error("CREATE TABLE t (k BIGINT, PRIMARY KEY k)", 1, 39, "unexpected 'k', expected '('");
    check_error("CREATE TABLE t (k BIGINT, PRIMARY (k))", 1, 35, "unexpected '(', expected KEY");
}

static void test_explain(void **state)
{
    (void)state;
    ast_stmt *s = one("EXPLAIN hot");
    assert_int_equal(s->kind, ST_EXPLAIN);
    assert_string_equal(s->name, "hot");
    assert_null(s->select);
    assert_int_equal(s->explain_placement, 0);
    assert_int_equal(s->explain_json, 0);
    ast_stmt_free(s);
    s = one("EXPLAIN PLACEMENT hot");
    assert_int_equal(s->explain_placement, 1);
    ast_stmt_free(s);
    s = one("EXPLAIN (FORMAT JSON) SELECT a FROM s");
    assert_int_equal(s->explain_json, 1);
    assert_string_equal(ast_option_get(s->with, "format")->value, "json");
    assert_null(s->name);
    assert_non_null(s->select);
    ast_stmt_free(s);
    s = one("EXPLAIN (FORMAT TEXT) hot");
    assert_int_equal(s->explain_json, 0);
    assert_null(s->with);
    ast_stmt_free(s);
    check_error("EXPLAIN (FORMAT XML) q", 1, 17, "unexpected 'XML', expected one of: JSON, TEXT");
}

static void test_set(void **state)
{
    (void)state;
    struct { const char *sql; sql_type type; int64_t i; double d; const char *s; } cases[] = {
        {"SET parallelism = 4", TY_BIGINT, 4, 0, NULL},
        {"SET offset = -10", TY_BIGINT, -10, 0, NULL},
        {"SET ratio = 0.75", TY_DOUBLE, 0, 0.75, NULL},
        {"SET neg = -2.5", TY_DOUBLE, 0, -2.5, NULL},
        {"SET debug = TRUE", TY_BOOL, 1, 0, NULL},
        {"SET debug = false", TY_BOOL, 0, 0, NULL},
        {"SET placement = 'Nirvana'", TY_TEXT, 0, 0, "Nirvana"},
        {"SET ft = Replica", TY_TEXT, 0, 0, "replica"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ast_stmt *s = one(cases[i].sql);
        assert_int_equal(s->kind, ST_SET);
        assert_int_equal(s->set_value.type, cases[i].type);
        if (cases[i].type == TY_DOUBLE) assert_true(s->set_value.d == cases[i].d);
        else if (cases[i].type == TY_TEXT) assert_string_equal(s->set_value.s, cases[i].s);
        else assert_int_equal(s->set_value.i, cases[i].i);
        ast_stmt_free(s);
    }
    ast_stmt *s = one("SET Parallelism = 1");
    assert_string_equal(s->set_key, "parallelism");
    ast_stmt_free(s);
    check_error("SET x", 1, 6, "unexpected end of input, expected '=' (SET name = value; settings: parallelism, "
                               "placement, replicas, ft, checkpoint_interval, shadow, rebalance_interval, rebalance_threshold, "
                              "offset, memory_budget)");
    /* issue 16: SET alone says what SET takes */
    check_error("SET;", 1, 4, "unexpected end of input, expected identifier (SET name = value; settings: parallelism, "
                              "placement, replicas, ft, checkpoint_interval, shadow, rebalance_interval, rebalance_threshold, "
                              "offset, memory_budget)");
    check_error_prefix("SET parallelism 4", 1, 17, "unexpected '4', expected '=' (SET name = value; settings: ");
    /* where key and value are, for the engine's errors */
    s = one("SET\n  parallelism =  -4");
    assert_int_equal(s->set_key_line, 2);
    assert_int_equal(s->set_key_col, 3);
    assert_int_equal(s->set_line, 2);
    assert_int_equal(s->set_col, 18);
    ast_stmt_free(s);
}

static void test_options(void **state)
{
    (void)state;
    check_error("CREATE STREAM s (a INT) WITH (x = 1, X = 2)", 1, 38, "duplicate option 'x'");
    check_error("CREATE STREAM s (a INT, A TEXT)", 1, 25, "duplicate column 'a'");
    check_error("CREATE STREAM s (a BIGNT)", 1, 20, "unexpected 'BIGNT', expected BIGINT");
    check_error("CREATE STREAM s a BIGINT", 1, 17, "unexpected 'a', expected one of: WITH, AS, '('");
    check_error("CREATE QUERY q SELECT a FROM s", 1, 16, "unexpected 'SELECT', expected one of: WITH, AS");
    check_error_prefix("CREATE STREAM s (a INT) WITH (x = y z)", 1, 37, "unexpected 'z'");
    /* each option knows where its key and its value are */
    ast_stmt *s = one("CREATE STREAM s (a INT) WITH (source = 'kafka://x',\n  Format = json, n = - 2)");
    const ast_option *o = ast_option_get(s->with, "source");
    assert_int_equal(o->key_line, 1);
    assert_int_equal(o->key_col, 31);
    assert_int_equal(o->line, 1);
    assert_int_equal(o->col, 40);
    o = ast_option_get(s->with, "format");
    assert_int_equal(o->key_line, 2);
    assert_int_equal(o->key_col, 3);
    assert_int_equal(o->col, 12);
    o = ast_option_get(s->with, "n");
    assert_string_equal(o->value, "-2");
    assert_int_equal(o->col, 22); /* the '-' */
    ast_stmt_free(s);
}

/* ------------------------------------------------------------------ whole inputs and errors */

static void test_multi(void **state)
{
    (void)state;
    const char *src = "SELECT a FROM s;\n  -- comment\n  SHOW STREAMS ; ;\n/* c */ DROP STREAM x;  ";
    parse_result *r;
    assert_int_equal(parse_sql(src, strlen(src), &r), 0);
    assert_int_equal(r->nstmts, 3);
    assert_int_equal(r->nerrors, 0);
    assert_int_equal(r->stmts[0]->line, 1);
    assert_int_equal(r->stmts[0]->col, 1);
    assert_string_equal(r->stmts[0]->text, "SELECT a FROM s");
    assert_int_equal(r->stmts[1]->line, 3);
    assert_int_equal(r->stmts[1]->col, 3);
    assert_string_equal(r->stmts[1]->text, "SHOW STREAMS");
    assert_int_equal(r->stmts[2]->line, 4);
    assert_int_equal(r->stmts[2]->col, 9);
    assert_string_equal(r->stmts[2]->text, "DROP STREAM x");
    parse_result_free(r);

    /* empty input, comments only */
    assert_int_equal(parse_sql("  -- x\n ; ", 10, &r), 0);
    assert_int_equal(r->nstmts, 0);
    assert_int_equal(r->nerrors, 0);
    parse_result_free(r);
    assert_int_equal(parse_sql("", 0, &r), 0);
    parse_result_free(r);
}

static void test_recovery(void **state)
{
    (void)state;
    /* one error per bad statement; the good ones still parse; ';' inside strings does not split */
    const char *src = "SELECT a FORM s;\nSELECT 'x;y' FROM s;\nSELECT @ FROM s; SHOW QUERIES;\nSELECT a FROM";
    parse_result *r;
    assert_int_equal(parse_sql(src, strlen(src), &r), XE_SYNTAX);
    assert_int_equal(r->nstmts, 2);
    assert_string_equal(r->stmts[0]->select->items->v[0].expr->lit.s, "x;y");
    assert_int_equal(r->stmts[1]->kind, ST_SHOW);
    assert_int_equal(r->nerrors, 3);
    assert_int_equal(r->errors[0].stmt_index, 0);
    assert_int_equal(r->errors[0].line, 1);
    assert_int_equal(r->errors[0].col, 10);
    assert_string_equal(r->errors[0].msg, "unexpected 'FORM', expected FROM");
    assert_int_equal(r->errors[1].stmt_index, 2);
    assert_int_equal(r->errors[1].line, 3);
    assert_int_equal(r->errors[1].col, 8);
    assert_int_equal(r->errors[2].stmt_index, 4);
    assert_int_equal(r->errors[2].line, 4);
    assert_int_equal(r->errors[2].col, 14);
    assert_string_equal(r->errors[2].msg, "unexpected end of input, expected one of: identifier, '('");
    parse_result_free(r);

    /* an unterminated string swallows the rest */
    src = "SELECT 'a FROM s; SELECT b FROM t;";
    assert_int_equal(parse_sql(src, strlen(src), &r), XE_SYNTAX);
    assert_int_equal(r->nstmts, 0);
    assert_int_equal(r->nerrors, 1);
    parse_result_free(r);
}

static void test_syntax_messages(void **state)
{
    (void)state;
    check_error("SELECT a FORM s", 1, 10, "unexpected 'FORM', expected FROM");
    check_error("SELECT a, b FROM s WHERE x > 1 GRUOP BY a", 1, 32, "unexpected 'GRUOP', expected GROUP");
    check_error("SELECT a FROM s WERE x > 1", 1, 17, "unexpected 'WERE', expected WHERE");
    check_error("SELECT a FROM s JION t ON a = b WITHIN 1 SECOND", 1, 17, "unexpected 'JION', expected JOIN");
    check_error("select a from s x y", 1, 19,
                "unexpected 'y', expected one of: WINDOW, JOIN, CROSS, LEFT, INNER, WHERE, GROUP, HAVING, ...");
    check_error("SELECT a FROM s\nWHERE x >\n", 2, 10,
                "unexpected end of input, expected one of: NOT, NULL, CASE, CAST, TRUE, FALSE, INTERVAL, "
                "identifier, ...");
    check_error("SELECT a FROM s WHERE a = = 1", 1, 27,
                "unexpected '=', expected one of: NOT, NULL, CASE, CAST, TRUE, FALSE, INTERVAL, identifier, ...");
    check_error("SELECT a FROM (SELECT b FROM t)", 1, 32, "unexpected end of input, expected one of: AS, identifier");
    check_error("SELECT a FROM s EMIT", 1, 21, "unexpected end of input, expected one of: CHANGES, FINAL");
    check_error("SELECT * FROM s JOIN t ON a = b WITHIN", 1, 39,
                "unexpected end of input, expected one of: INTERVAL, integer, number");
    check_error("SELECT * FROM s LEFT t ON a = b", 1, 22, "unexpected 't', expected one of: JOIN, OUTER");
    check_error("FOO BAR", 1, 1, "unexpected 'FOO', expected one of: CREATE, INSERT, DROP, SHOW, DESCRIBE, "
                                 "EXPLAIN, SUBSCRIBE, SET, ...");
    check_error("SELECT a FROM s LIMIT x", 1, 23, "unexpected 'x', expected integer");
    check_error("SELECT a FROM s WHERE x = 'this string is much longer than forty characters' junk", 1, 78,
                "unexpected 'junk', expected one of: GROUP, HAVING, EMIT, LIMIT, AND, OR, IS, BETWEEN, ...");
    check_error_prefix("SELECT a FROM s 'this string is much longer than forty characters'", 1, 17,
                       "unexpected ''this string is much longer than fort...', expected one of: AS, WINDOW,");
}

static void test_nesting_limits(void **state)
{
    (void)state;
    sbuf b;
    sbuf_init(&b);
    sbuf_adds(&b, "SELECT ");
    for (int i = 0; i < 600; i++) sbuf_addc(&b, '(');
    sbuf_adds(&b, "a");
    for (int i = 0; i < 600; i++) sbuf_addc(&b, ')');
    sbuf_adds(&b, " FROM s");
    parse_result *r;
    assert_int_equal(parse_sql(b.p, b.len, &r), XE_SYNTAX);
    assert_string_equal(r->errors[0].msg, "statement is too deeply nested");
    parse_result_free(r);

    sbuf_reset(&b);
    sbuf_adds(&b, "SELECT a");
    for (int i = 0; i < 5000; i++) sbuf_adds(&b, " + a");
    sbuf_adds(&b, " FROM s");
    assert_int_equal(parse_sql(b.p, b.len, &r), XE_SYNTAX);
    assert_string_equal(r->errors[0].msg, "expression is too deeply nested (more than 1000 levels)");
    assert_int_equal(r->errors[0].col, 8);
    parse_result_free(r);

    /* wide is fine */
    sbuf_reset(&b);
    sbuf_adds(&b, "INSERT INTO s VALUES (0)");
    for (int i = 0; i < 5000; i++) sbuf_printf(&b, ", (%d)", i);
    assert_int_equal(parse_sql(b.p, b.len, &r), 0);
    assert_int_equal(r->stmts[0]->rows->n, 5001);
    parse_result_free(r);
    sbuf_fini(&b);
}

static void test_parse_one(void **state)
{
    (void)state;
    ast_stmt *s;
    xerr e;
    assert_int_equal(parse_one("SHOW NODES;", 11, &s, &e), 0);
    ast_stmt_free(s);
    assert_int_equal(parse_one("SHOW NODES; SHOW QUERIES", 24, &s, &e), XE_SYNTAX);
    assert_null(s);
    assert_int_equal(e.code, XE_SYNTAX);
    assert_int_equal(e.col, 13);
    assert_string_equal(e.msg, "expected a single statement");
    assert_int_equal(parse_one("  ", 2, &s, &e), XE_SYNTAX);
    assert_string_equal(e.msg, "no statement");
    assert_int_equal(parse_one("SELECT a FORM s", 15, &s, &e), XE_SYNTAX);
    assert_int_equal(e.line, 1);
    assert_int_equal(e.col, 10);
    assert_string_equal(e.msg, "unexpected 'FORM', expected FROM");
}

static void test_type_article(void **state)
{
    (void)state;
    const sql_type t[] = {TY_INT, TY_BIGINT, TY_DOUBLE, TY_TEXT, TY_TIMESTAMP, TY_BOOL, TY_INTERVAL};
    const char *want[] = {"an INT", "a BIGINT", "a DOUBLE", "a TEXT", "a TIMESTAMP", "a BOOLEAN", "an INTERVAL"};
    for (int i = 0; i < 7; i++) {
        char b[32];
        snprintf(b, sizeof b, "%s %s", sql_type_article(t[i]), sql_type_name(t[i]));
        assert_string_equal(b, want[i]);
    }
}

/* A position in a statement's own text, as a process that parsed the text
 * alone finds it, maps back to the same place in the whole input. */
static void test_text_pos(void **state)
{
    (void)state;
    const char *src = "SHOW STREAMS;  SELECT a FROM s WHERE bb = 1;\n  SELECT a\n  FROM s WHERE cc = 1;";
    parse_result *r;
    assert_int_equal(parse_sql(src, strlen(src), &r), 0);
    assert_int_equal(r->nstmts, 3);
    for (int i = 1; i < 3; i++) {
        const ast_stmt *st = r->stmts[i];
        const ast_expr *in_whole = st->select->where->a;
        ast_stmt *alone;
        xerr e;
        assert_int_equal(parse_one(st->text, strlen(st->text), &alone, &e), 0);
        const ast_expr *in_text = alone->select->where->a;
        int line, col;
        parse_text_pos(st, in_text->line, in_text->col, &line, &col);
        assert_int_equal(line, in_whole->line);
        assert_int_equal(col, in_whole->col);
        ast_stmt_free(alone);
    }
    assert_int_equal(r->stmts[1]->select->where->a->col, 38);
    assert_int_equal(r->stmts[2]->select->where->a->line, 3);
    int line = 5, col = 5;
    parse_text_pos(r->stmts[1], 0, 0, &line, &col); /* no position stays none */
    assert_int_equal(line, 0);
    assert_int_equal(col, 0);
    parse_result_free(r);
}

static void test_format_error(void **state)
{
    (void)state;
    const char *src = "SHOW STREAMS;\nSELECT a FORM s";
    sbuf b;
    sbuf_init(&b);
    assert_int_equal(parse_format_error(src, strlen(src), 2, 10, "unexpected 'FORM', expected FROM", &b), 0);
    assert_string_equal(b.p, "error: line 2, column 10: unexpected 'FORM', expected FROM\n"
                             "  SELECT a FORM s\n"
                             "           ^\n");
    /* tabs are kept so the caret lines up; UTF-8 counts as one column */
    sbuf_reset(&b);
    src = "\tSELECT 'é', @\r\n";
    parse_format_error(src, strlen(src), 1, 14, "unexpected character '@'", &b);
    assert_string_equal(b.p, "error: line 1, column 14: unexpected character '@'\n"
                             "  \tSELECT 'é', @\n"
                             "  \t            ^\n");
    /* a caret at the end of the line (end of input) */
    sbuf_reset(&b);
    parse_format_error("SELECT", 6, 1, 7, "unexpected end of input", &b);
    assert_string_equal(b.p, "error: line 1, column 7: unexpected end of input\n  SELECT\n        ^\n");
    /* long lines are windowed around the column */
    sbuf_reset(&b);
    char longline[400];
    memset(longline, 'x', sizeof longline);
    longline[300] = '@';
    parse_format_error(longline, sizeof longline, 1, 301, "m", &b);
    assert_true(strstr(b.p, "...") != NULL);
    const char *caret = strrchr(b.p, '^'), *at = strchr(b.p, '@');
    const char *line2 = strchr(b.p, '\n') + 1, *line3 = strchr(line2, '\n') + 1;
    assert_int_equal(at - line2, caret - line3);
    sbuf_fini(&b);
}

static void test_is_complete(void **state)
{
    (void)state;
    struct { const char *s; int want; } cases[] = {
        {"", 0}, {"SELECT a FROM s", 0}, {"SELECT a FROM s;", 1}, {"SELECT a FROM s;  \n", 1},
        {"SELECT a FROM s; -- done", 1}, {"SELECT a FROM s; /* c */", 1}, {"SELECT 'a;", 0},
        {"SELECT \"a;", 0}, {"SELECT a /* ; ", 0}, {"SELECT a -- ;", 0}, {"SELECT 'a;';", 1},
        {"SELECT a; SELECT", 0}, {";", 1}, {"SELECT @;", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (parse_is_complete(cases[i].s, strlen(cases[i].s)) != cases[i].want) fprintf(stderr, "%s\n", cases[i].s);
        assert_int_equal(parse_is_complete(cases[i].s, strlen(cases[i].s)), cases[i].want);
    }
}

/* The shell's continuation prompt says what the input is inside of. */
static void test_open_quote(void **state)
{
    (void)state;
    struct { const char *s; int want; } cases[] = {
        {"", 0}, {"SELECT a", 0}, {"SELECT 'a", '\''}, {"SELECT 'it''s", '\''}, {"SELECT 'a' FROM", 0},
        {"SELECT \"a b", '"'}, {"SELECT a /* c", '*'}, {"SELECT a /* c */", 0}, {"SELECT a -- '", 0},
        {"SELECT 'a\nb", '\''}, {"SELECT @ 'x", '\''},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (parse_open_quote(cases[i].s, strlen(cases[i].s)) != cases[i].want) fprintf(stderr, "%s\n", cases[i].s);
        assert_int_equal(parse_open_quote(cases[i].s, strlen(cases[i].s)), cases[i].want);
    }
}

/* ------------------------------------------------------------------ AST utilities */

static void test_print_ident(void **state)
{
    (void)state;
    struct { const char *name, *want; } cases[] = {
        {"abc", "abc"}, {"a_1", "a_1"}, {"_x", "_x"}, {"Abc", "\"Abc\""}, {"1a", "\"1a\""},
        {"a b", "\"a b\""}, {"a\"b", "\"a\"\"b\""}, {"select", "\"select\""}, {"from", "\"from\""},
        {"size", "size"}, {"seconds", "seconds"}, {"timestamp", "\"timestamp\""}, {"", "\"\""},
        {"é", "\"é\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sbuf b;
        sbuf_init(&b);
        assert_int_equal(ast_print_ident(cases[i].name, &b), 0);
        assert_string_equal(b.p, cases[i].want);
        sbuf_fini(&b);
    }
}

static void test_printer(void **state)
{
    (void)state;
    check_print("select a as x, count(*) from s where a>1 group by a having count(*)>2 emit final limit 3",
                "SELECT a AS x, COUNT(*) FROM s WHERE a > 1 GROUP BY a HAVING COUNT(*) > 2 EMIT FINAL LIMIT 3");
    check_print("SELECT 1.0, 1e20, 0.1, 1500 milliseconds, 60 seconds, 3600000 MILLISECONDS, 1 day FROM s",
                "SELECT 1.0, 1e+20, 0.1, 1500 MILLISECONDS, 1 MINUTE, 1 HOUR, 1 DAY FROM s");
    check_print("SELECT a FROM s WINDOW SESSION (5 minutes, grace period 1 second)",
                "SELECT a FROM s WINDOW SESSION (GAP 5 MINUTES, GRACE 1 SECOND)");
    check_print("create stream s (a int, b varchar(3)) with (x = 'a''b', y = 2, z = ident, t = true, n = -1.5)",
                "CREATE STREAM s (a INT, b TEXT) WITH (x = 'a''b', y = 2, z = ident, t = TRUE, n = -1.5)");
    check_print("explain placement (format json) \"placement\"", "EXPLAIN PLACEMENT (FORMAT JSON) \"placement\"");
    check_print("SET x = -1.5", "SET x = -1.5");
    check_print("SET x = y", "SET x = 'y'");
    check_print("SELECT TIMESTAMP '2024-01-02T03:04:05.120+01:00' FROM s",
                "SELECT TIMESTAMP '2024-01-02 02:04:05.120' FROM s");
    check_print("insert into s (a) values (1), (2)", "INSERT INTO s (a) VALUES (1), (2)");
    check_print("SELECT * FROM a x JOIN b y ON x.k = y.k WITHIN interval '2' minute",
                "SELECT * FROM a AS x JOIN b AS y ON x.k = y.k WITHIN 2 MINUTES");
    check_print("select * from s left outer join t on s.k = t.k", "SELECT * FROM s LEFT JOIN t ON s.k = t.k");
    check_print("SELECT * FROM s INNER JOIN t ON s.k = t.k", "SELECT * FROM s JOIN t ON s.k = t.k");
    check_print("SELECT \"Timestamp\", \"timestamp\".x, timestamp FROM s",
                "SELECT \"Timestamp\", \"timestamp\".x, \"timestamp\" FROM s");
}

static void test_equal_dup_free(void **state)
{
    (void)state;
    ast_stmt *a = one("SELECT a + 1, CASE WHEN b THEN c END FROM s t JOIN (SELECT * FROM u) v ON t.k = v.k "
                      "WITHIN 1 SECOND WHERE x IN (1, 2) GROUP BY a HAVING COUNT(DISTINCT c) > 1");
    ast_stmt *b = one("select  a+1 , case when b then c end from s as t join (select * from u) as v on t.k=v.k "
                      "within 1000 milliseconds where x in (1,2) group by a having count(distinct c)>1");
    assert_true(ast_stmt_equal(a, b));
    assert_string_not_equal(a->text, b->text);

    ast_select *d = ast_select_dup(a->select);
    assert_non_null(d);
    ast_stmt copy = *a;
    copy.select = d;
    assert_true(ast_stmt_equal(a, &copy));
    d->limit = 5;
    assert_false(ast_stmt_equal(a, &copy));
    d->limit = -1;
    d->items->v[0].expr->b->lit.i = 2;
    assert_false(ast_stmt_equal(a, &copy));
    ast_select_free(d);

    ast_expr *e = ast_expr_dup(a->select->where);
    assert_true(ast_expr_equal(e, a->select->where));
    assert_false(ast_expr_equal(e, a->select->having));
    assert_false(ast_expr_equal(e, NULL));
    assert_true(ast_expr_equal(NULL, NULL));
    ast_expr_free(e);

    ast_stmt *c = one("SELECT a + 2, CASE WHEN b THEN c END FROM s t JOIN (SELECT * FROM u) v ON t.k = v.k "
                      "WITHIN 1 SECOND WHERE x IN (1, 2) GROUP BY a HAVING COUNT(DISTINCT c) > 1");
    assert_false(ast_stmt_equal(a, c));
    ast_stmt_free(c);
    c = one("SELECT a FROM s");
    assert_false(ast_stmt_equal(a, c));
    ast_stmt_free(c);
    ast_stmt_free(a);
    ast_stmt_free(b);

    assert_null(ast_expr_dup(NULL));
    assert_null(ast_select_dup(NULL));
    ast_stmt_free(NULL);
    ast_expr_free(NULL);
    ast_select_free(NULL);
    parse_result_free(NULL);

    assert_string_equal(ast_op_text(OP_AND), "AND");
    assert_string_equal(ast_op_text(OP_LE), "<=");
    assert_string_equal(ast_op_text(OP_CONCAT), "||");
    assert_string_equal(ast_op_text(OP_NE), "<>");
    assert_string_equal(ast_op_text(OP_MOD), "%");
}

/* parser_accepts() simulates Lemon on a copy of its stack; check it against
 * real parses: for prefixes of real statements, feeding the prefix and then a
 * terminal must fail exactly when parser_accepts() said no. */
static int replay_accepts(const token *toks, int n, int next)
{
    pctx Q;
    memset(&Q, 0, sizeof Q);
    void *p = parser_Alloc(malloc);
    for (int i = 0; i < n; i++) parser_(p, toks[i].code, toks[i], &Q);
    assert_false(Q.syntax);
    token t = n ? toks[n - 1] : (token){0};
    t.code = next;
    parser_(p, next, t, &Q);
    int ok = !Q.syntax && !Q.overflow;
    parser_Free(p, free);
    ast_stmt_free(Q.stmt);
    return ok;
}

static void test_parser_accepts(void **state)
{
    (void)state;
    const char *stmts[] = {
        "SELECT a, COUNT(*) AS n FROM s AS t WINDOW HOPPING (SIZE 1 MINUTE, ADVANCE BY 10 SECONDS, GRACE 1 SECOND)"
        " JOIN u ON t.k = u.k WITHIN 5 SECONDS WHERE a NOT BETWEEN 1 AND 2 AND b IS NOT NULL GROUP BY a"
        " HAVING COUNT(*) > 1 EMIT FINAL LIMIT 3",
        "CREATE STREAM IF NOT EXISTS s (a BIGINT, b VARCHAR(3), ts TIMESTAMP) WITH (timestamp = 'ts', p = -1)",
        "CREATE QUERY q WITH (x = y) AS SELECT CASE a WHEN 1 THEN CAST(b AS INT) ELSE -c END FROM (SELECT * FROM s) x",
        "INSERT INTO s (a, b) VALUES (1, 'x'), (2, TIMESTAMP '2024-01-01')",
        "EXPLAIN PLACEMENT (FORMAT JSON) SELECT a NOT IN (1, 2), b NOT LIKE 'x' || 'y' FROM s",
        "SET x = -1.5",
        "DROP QUERY IF EXISTS q",
    };
    for (size_t si = 0; si < sizeof stmts / sizeof stmts[0]; si++) {
        const char *src = stmts[si];
        token toks[256];
        int n = 0;
        lexer lx;
        lex_init(&lx, src, strlen(src));
        while (lex_next(&lx, &toks[n]) > 0) {
            if (n && toks[n - 1].code == TK_NOT &&
                (toks[n].code == TK_LIKE || toks[n].code == TK_IN || toks[n].code == TK_BETWEEN))
                toks[n - 1].code = TK_NOT_LA;
            n++;
        }
        for (int k = 0; k <= n; k++) {
            pctx Q;
            memset(&Q, 0, sizeof Q);
            void *p = parser_Alloc(malloc);
            for (int i = 0; i < k; i++) parser_(p, toks[i].code, toks[i], &Q);
            for (int code = 0; code < parser_ntokens(); code++) {
                if (code == TK_SEMI) continue;
                int sim = parser_accepts(p, code), real = replay_accepts(toks, k, code);
                if (sim != real) fprintf(stderr, "%s\n  after %d tokens, token %d: simulated %d, real %d\n", src, k, code, sim, real);
                assert_int_equal(sim, real);
            }
            /* the real next token is always accepted */
            if (k < n) assert_true(parser_accepts(p, toks[k].code));
            parser_Free(p, free);
            ast_stmt_free(Q.stmt);
        }
    }
}

/* An error at the end of a huge statement must not cost (terminals x tokens) replays. */
static void test_error_cost(void **state)
{
    (void)state;
    sbuf b;
    sbuf_init(&b);
    sbuf_adds(&b, "INSERT INTO s VALUES (0, 'x', 1.5)");
    for (int i = 1; i < 20000; i++) sbuf_printf(&b, ", (%d, 'x', 1.5)", i);
    sbuf_adds(&b, " junk");
    uint64_t t0 = clock_mono_ns();
    parse_result *r;
    assert_int_equal(parse_sql(b.p, b.len, &r), XE_SYNTAX);
    assert_string_equal(r->errors[0].msg, "unexpected 'junk', expected one of: ',', ';'");
    parse_result_free(r);
    sbuf_fini(&b);
    assert_true(clock_mono_ns() - t0 < 5000000000ull);
}

/* ------------------------------------------------------------------ round trip */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    sbuf b;
    sbuf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) assert_int_equal(sbuf_add(&b, chunk, n), 0);
    fclose(f);
    *len = b.len;
    return sbuf_steal(&b);
}

static void roundtrip(const ast_stmt *s)
{
    char *p1 = print_stmt(s);
    parse_result *r;
    int rc = parse_sql(p1, strlen(p1), &r);
    if (rc || r->nstmts != 1 || !ast_stmt_equal(s, r->stmts[0]))
        fprintf(stderr, "round trip failed:\n  source:  %s\n  printed: %s\n  %s\n", s->text, p1,
                r->nerrors ? r->errors[0].msg : "(not equal)");
    assert_int_equal(rc, 0);
    assert_int_equal(r->nstmts, 1);
    assert_true(ast_stmt_equal(s, r->stmts[0]));
    char *p2 = print_stmt(r->stmts[0]);
    assert_string_equal(p1, p2);
    free(p1);
    free(p2);
    parse_result_free(r);
}

static void test_roundtrip_corpus(void **state)
{
    (void)state;
    size_t len;
    char *src = read_file("corpus/roundtrip.sql", &len);
    parse_result *r;
    int rc = parse_sql(src, len, &r);
    for (int i = 0; i < r->nerrors; i++) {
        sbuf b;
        sbuf_init(&b);
        parse_format_error(src, len, r->errors[i].line, r->errors[i].col, r->errors[i].msg, &b);
        fprintf(stderr, "%s", b.p);
        sbuf_fini(&b);
    }
    assert_int_equal(rc, 0);
    assert_true(r->nstmts >= 100);
    for (int i = 0; i < r->nstmts; i++) roundtrip(r->stmts[i]);
    parse_result_free(r);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lexer_tokens),
        cmocka_unit_test(test_lexer_units_and_keywords),
        cmocka_unit_test(test_lexer_columns_utf8),
        cmocka_unit_test(test_lexer_errors),
        cmocka_unit_test(test_create_stream),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_create_query),
        cmocka_unit_test(test_derived_statements),
        cmocka_unit_test(test_select_shape),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_intervals),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_identifiers),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_predicates),
        cmocka_unit_test(test_case_cast),
        cmocka_unit_test(test_insert),
        cmocka_unit_test(test_small_statements),
        cmocka_unit_test(test_create_table),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_multi),
        cmocka_unit_test(test_recovery),
        cmocka_unit_test(test_syntax_messages),
        cmocka_unit_test(test_nesting_limits),
        cmocka_unit_test(test_parse_one),
        cmocka_unit_test(test_text_pos),
        cmocka_unit_test(test_type_article),
        cmocka_unit_test(test_format_error),
        cmocka_unit_test(test_is_complete),
        cmocka_unit_test(test_open_quote),
        cmocka_unit_test(test_print_ident),
        cmocka_unit_test(test_printer),
        cmocka_unit_test(test_equal_dup_free),
        cmocka_unit_test(test_parser_accepts),
        cmocka_unit_test(test_error_cost),
        cmocka_unit_test(test_roundtrip_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
