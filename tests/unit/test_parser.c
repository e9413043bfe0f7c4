/*
 * test_parser: the SQL front end (parser/): lexer, grammar, AST, errors,
 * printer round trip.  Runs with cwd = tests/ (the corpus is corpus/roundtrip.sql).
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

static void test_smoke(void **state)
{
    (void)state;
    ast_stmt *s = one("SELECT a FROM s");
    assert_int_equal(s->kind, ST_SELECT);
    ast_stmt_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smoke),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
