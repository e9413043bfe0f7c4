/*
 * parser internals shared by the lexer (lexer.re), the grammar (grammar.y),
 * the AST constructors (ast.c), the printer (print.c) and the driver
 * (driver.c).  Nothing outside parser/ includes this file.  The files call
 * downwards only: driver.c and print.c (which asks the grammar's
 * parser_Fallback whether a word needs quotes) sit above the grammar, and
 * the grammar above ast.c.
 *
 * A token does not own its text: it points into the caller's copy of the
 * source, which outlives every parser that sees the token.  The grammar's
 * actions turn tokens into owned strings only through the ast_mk_* and
 * ast_*_add constructors below.  Every constructor takes ownership of its
 * pointer arguments, even when it fails; on failure it records the reason
 * in the pctx (out of memory, or a semantic error with a position) and
 * returns NULL or a harmless value, and driver.c then discards the statement.
 */
#ifndef PARSER_INTERNAL_H
#define PARSER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "parser/parser.h"

/* ------------------------------------------------------------------ tokens */

typedef struct token {
    int code;       /* a TK_* code from grammar.h; 0 at end of input */
    const char *s;  /* the token's text as written (not NUL-terminated) */
    size_t len;
    int line, col;  /* 1-based; col counts characters, not bytes */
} token;

/* The lexer: one pass over buf[0..len), where buf[len] == 0 (re2c's sentinel). */
typedef struct lexer {
    const unsigned char *cur, *lim, *buf;
    /* position bookkeeping: the character column of pos_p is pos_col */
    const unsigned char *pos_p;
    int pos_line, pos_col;
    /* the last error (lex_next returned LEX_ERROR) */
    int err_line, err_col;
    int err_fatal; /* 1 when the rest of the input cannot be tokenised */
    const unsigned char *err_at; /* where the error is: an unterminated quote's or comment's start */
    char err_msg[128];
} lexer;

enum { LEX_EOF = 0, LEX_ERROR = -1 };

void lex_init(lexer *lx, const char *buf, size_t len);
/* Next token into *t.  Returns its code, LEX_EOF, or LEX_ERROR (message in lx). */
int lex_next(lexer *lx, token *t);
/* The token code of a bare word (a keyword code, or TK_ID), or 0 when s[0..n)
 * is not exactly one word. */
int lex_word(const char *s, size_t n);
/* 1 when s[0..n) is exactly one number token (INTEGER or FLOAT), after an
 * optional leading '-'. */
int lex_is_number(const char *s, size_t n);

/* ------------------------------------------------------------------ parse context */

typedef struct pctx {
    ast_stmt *stmt; /* the statement, once the start rule reduced */
    int syntax;     /* %syntax_error ran */
    int overflow;   /* %stack_overflow ran */
    int oom;        /* a constructor ran out of memory */
    int err;        /* a semantic error was recorded (the first one wins) */
    int err_line, err_col;
    char err_msg[200];
} pctx;

void pctx_error(pctx *P, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The generated parser (grammar.y, %name parser_).  Lemon declares no
 * prototypes, so they are here; only driver.c calls them. */
void *parser_Alloc(void *(*mallocProc)(size_t));
void parser_Free(void *p, void (*freeProc)(void *));
void parser_(void *p, int major, token minor, pctx *P);
int parser_Fallback(int code); /* also print.c's */
int parser_ntokens(void);
int parser_accepts(void *p, int tok); /* see grammar.y's %code */

/* ------------------------------------------------------------------ grammar values */

/* An interval as written, in milliseconds, with its position (for errors).
 * ms is -1 for an absent optional interval. */
typedef struct ival {
    int64_t ms;
    int line, col;
} ival;

/* A WITH option or SET value as written: the token and a leading minus. */
typedef struct optval {
    token t;
    int neg;
    int line, col; /* where it starts: the '-' or t */
} optval;

/* [LEFT] JOIN source ON expr [WITHIN interval], before it is folded into a select. */
typedef struct ast_join {
    ast_source *src;
    ast_expr *on;
    int64_t within_ms; /* -1 without WITHIN */
    int left;
} ast_join;

/* ------------------------------------------------------------------ constructors (ast.c) */

char *ast_mk_ident(pctx *P, const token *t);

ast_expr *ast_mk_int(pctx *P, const token *t);
ast_expr *ast_mk_float(pctx *P, const token *t);
ast_expr *ast_mk_string(pctx *P, const token *t);
ast_expr *ast_mk_null(pctx *P, const token *t);
ast_expr *ast_mk_bool(pctx *P, const token *t, int v);
ast_expr *ast_mk_interval(pctx *P, ival iv);
ast_expr *ast_mk_timestamp(pctx *P, const token *kw, const token *str);
ast_expr *ast_mk_col(pctx *P, const token *qual, const token *name);
ast_expr *ast_mk_star(pctx *P, const token *t);
ast_expr *ast_mk_unary(pctx *P, const token *t, ast_op op, ast_expr *a);
ast_expr *ast_mk_binary(pctx *P, ast_op op, ast_expr *a, ast_expr *b);
ast_expr *ast_mk_isnull(pctx *P, ast_expr *a, int negated);
ast_expr *ast_mk_between(pctx *P, ast_expr *a, ast_expr *b, ast_expr *c, int negated);
ast_expr *ast_mk_in(pctx *P, ast_expr *a, ast_exprs *list, int negated);
ast_expr *ast_mk_like(pctx *P, ast_expr *a, ast_expr *b, int negated);
ast_expr *ast_mk_case(pctx *P, const token *t, ast_expr *base, ast_exprs *whens, ast_expr *els);
ast_expr *ast_mk_cast(pctx *P, const token *t, ast_expr *a, sql_type type);
ast_expr *ast_mk_func(pctx *P, const token *name, ast_exprs *args, int distinct);

ast_exprs *ast_exprs_add(pctx *P, ast_exprs *l, ast_expr *e);
void ast_exprs_free(ast_exprs *l);

/* Intervals: number token times a unit (ms per unit); a string token for
 * INTERVAL '10' SECOND. */
ival ast_mk_ival(pctx *P, const token *num, int64_t unit_ms);
ival ast_mk_ival_str(pctx *P, const token *str, int64_t unit_ms);
ival ast_ival_none(void);

ast_window ast_mk_window(pctx *P, ast_window_kind kind, ival size, ival advance, ival gap, ival grace);
ast_window ast_window_none(void);

ast_select_item *ast_mk_item(pctx *P, ast_expr *e, char *alias);
ast_select_item *ast_mk_item_star(pctx *P, const token *qual);
void ast_item_free(ast_select_item *it);
ast_items *ast_items_add(pctx *P, ast_items *l, ast_select_item *it);
void ast_items_free(ast_items *l);

ast_source *ast_mk_source(pctx *P, const token *name, char *alias);
ast_source *ast_mk_subquery(pctx *P, const token *lp, ast_select *sub, char *alias);
void ast_source_free(ast_source *s);

ast_join *ast_mk_join(pctx *P, ast_source *src, ast_expr *on, ival within, int left);
void ast_join_free(ast_join *j);

/* UNNEST's alias (and column), then its expression once the rule is complete. */
ast_unnest *ast_mk_unnest(pctx *P, const token *alias, const token *column);
ast_unnest *ast_unnest_set(pctx *P, ast_unnest *u, const token *kw, ast_expr *e);
void ast_unnest_free(ast_unnest *u);

ast_select *ast_mk_select(pctx *P, ast_items *items, ast_source *from, ast_unnest *unnest, ast_window win,
                          ast_join *join, ast_expr *where, ast_exprs *group_by,
                          ast_expr *having, int emit, int64_t limit);
int64_t ast_mk_limit(pctx *P, const token *t);

ast_coldefs *ast_coldefs_add(pctx *P, ast_coldefs *l, const token *name, sql_type type);
void ast_coldefs_free(ast_coldefs *l);
ast_options *ast_options_add(pctx *P, ast_options *l, const token *key, optval v);
void ast_options_free(ast_options *l);
ast_names *ast_names_add(pctx *P, ast_names *l, const token *name);
void ast_names_free(ast_names *l);
ast_rows *ast_rows_add(pctx *P, ast_rows *l, ast_exprs *row);
void ast_rows_free(ast_rows *l);

ast_stmt *ast_mk_create_table(pctx *P, int if_not_exists, char *name, ast_coldefs *cols,
                              ast_names *pkey, ast_options *with);
ast_stmt *ast_mk_create_stream(pctx *P, int if_not_exists, char *name, ast_coldefs *cols,
                               ast_options *with);
/* A standing query's statement: CREATE QUERY, CREATE STREAM ... AS or
 * INSERT INTO ... SELECT (kind). */
ast_stmt *ast_mk_standing(pctx *P, ast_stmt_kind kind, int if_not_exists, char *name, ast_options *with,
                          ast_select *sel);
ast_stmt *ast_mk_select_stmt(pctx *P, ast_select *sel);
ast_stmt *ast_mk_insert(pctx *P, char *name, ast_names *cols, ast_rows *rows);
ast_stmt *ast_mk_drop(pctx *P, ast_stmt_kind kind, int if_exists, char *name);
ast_stmt *ast_mk_show(pctx *P, ast_show_what what);
ast_stmt *ast_mk_show_name(pctx *P, const token *name);
ast_stmt *ast_mk_named(pctx *P, ast_stmt_kind kind, char *name); /* DESCRIBE, SUBSCRIBE, ALTER QUERY ... REBALANCE */
ast_stmt *ast_mk_explain(pctx *P, int placement, int json, char *name, ast_select *sel);
ast_stmt *ast_mk_set(pctx *P, const token *key, optval v);

#endif
