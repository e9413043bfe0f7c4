/*
 * fuzz_parser: libFuzzer target for the lexer, the grammar and the printer.
 *
 * Every input is parsed; every statement that parses is printed, and the
 * printed text must parse back to one equal statement that prints the same
 * (the round-trip property of tests/unit/test_parser.c).  Errors are
 * formatted too, so parse_format_error sees arbitrary positions.  Everything
 * is freed, so LeakSanitizer catches a leak on any error path.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser/parser.h"

static void roundtrip(const ast_stmt *s)
{
    sbuf b, b2;
    sbuf_init(&b);
    sbuf_init(&b2);
    if (ast_print_stmt(s, &b)) abort();
    parse_result *r;
    int rc = parse_sql(b.p, b.len, &r);
    if (rc == XE_NOMEM) abort();
    if (rc || r->nstmts != 1 || !ast_stmt_equal(s, r->stmts[0])) {
        fprintf(stderr, "round trip failed for: %s\n", b.p);
        if (r->nerrors) fprintf(stderr, "  error: %d:%d %s\n", r->errors[0].line, r->errors[0].col, r->errors[0].msg);
        abort();
    }
    if (ast_print_stmt(r->stmts[0], &b2) || b.len != b2.len || memcmp(b.p, b2.p, b.len)) {
        fprintf(stderr, "printing is not stable:\n  %s\n  %s\n", b.p, b2.p);
        abort();
    }
    if (s->select) { /* a deep copy is equal, and frees cleanly */
        ast_select *dup = ast_select_dup(s->select);
        if (!dup) abort();
        ast_stmt copy = *s;
        copy.select = dup;
        if (!ast_stmt_equal(s, &copy)) abort();
        ast_select_free(dup);
    }
    parse_result_free(r);
    sbuf_fini(&b);
    sbuf_fini(&b2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    parse_result *r;
    if (parse_sql(src, size, &r) == XE_NOMEM) return 0;
    for (int i = 0; i < r->nstmts; i++) roundtrip(r->stmts[i]);
    for (int i = 0; i < r->nerrors; i++) {
        sbuf b;
        sbuf_init(&b);
        parse_format_error(src, size, r->errors[i].line, r->errors[i].col, r->errors[i].msg, &b);
        sbuf_fini(&b);
    }
    parse_result_free(r);
    (void)parse_is_complete(src, size);
    (void)parse_open_quote(src, size);
    return 0;
}
