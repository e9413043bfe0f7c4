/*
 * parser: Ares SQL text to an abstract syntax tree, and back.
 *
 * The lexer (lexer.re, re2c) hands Lemon's token codes straight to the grammar
 * (grammar.y, Lemon); only driver.c drives the generated parser.  Input is split
 * into statements at top-level ';' so that one bad statement does not hide the
 * errors of the rest: each statement parses on its own and each error records
 * which statement it belongs to.
 *
 * Ownership: the AST owns all its nodes and strings.  ast_stmt_free() frees a
 * whole statement; parse_result_free() frees every statement and error of a
 * parse.  Identifiers are folded to lower case unless they were "quoted".
 * Keywords are case-insensitive.
 *
 * This module depends on base/ only.
 */
#ifndef PARSER_H
#define PARSER_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ------------------------------------------------------------------ types */

/* sql_type, sql_type_name and sql_type_article come from base/base.h. */

/* A literal value as written in SQL. */
typedef struct ast_lit {
    sql_type type; /* TY_NULL, TY_BOOL, TY_BIGINT (integers), TY_DOUBLE, TY_TEXT, TY_INTERVAL,
                      TY_TIMESTAMP (TIMESTAMP '...' literals, i = epoch ms) */
    int64_t i;     /* TY_BOOL (0/1), TY_BIGINT, TY_INTERVAL (ms), TY_TIMESTAMP (ms) */
    double d;      /* TY_DOUBLE */
    char *s;       /* TY_TEXT: owned, NUL-terminated, '' escapes already undone */
} ast_lit;

/* ------------------------------------------------------------------ expressions */

typedef enum ast_expr_kind {
    EX_LIT,     /* lit */
    EX_COL,     /* [qual.]name */
    EX_STAR,    /* '*' as in COUNT(*) (only as a function argument) */
    EX_UNARY,   /* op a: OP_NOT, OP_NEG, OP_POS */
    EX_BINARY,  /* a op b */
    EX_ISNULL,  /* a IS [NOT] NULL   (negated) */
    EX_BETWEEN, /* a [NOT] BETWEEN b AND c */
    EX_IN,      /* a [NOT] IN (list) */
    EX_LIKE,    /* a [NOT] LIKE b */
    EX_CASE,    /* CASE [a] WHEN list[0] THEN list[1] ... [ELSE b] END */
    EX_CAST,    /* CAST(a AS cast_type) */
    EX_FUNC,    /* name([DISTINCT] list) ; COUNT(*) has one EX_STAR argument */
} ast_expr_kind;

typedef enum ast_op {
    OP_NONE = 0,
    OP_OR, OP_AND, OP_NOT,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
    OP_ADD, OP_SUB, OP_CONCAT,
    OP_MUL, OP_DIV, OP_MOD,
    OP_NEG, OP_POS,
} ast_op;

const char *ast_op_text(ast_op op); /* "AND", "<=", "||", ... */

struct ast_expr;

/* A growable list of expressions. */
typedef struct ast_exprs {
    int n, cap;
    struct ast_expr **v;
} ast_exprs;

typedef struct ast_expr {
    ast_expr_kind kind;
    int line, col; /* where the expression starts, 1-based */
    ast_op op;     /* EX_UNARY, EX_BINARY */
    int negated;   /* EX_ISNULL, EX_BETWEEN, EX_IN, EX_LIKE */
    int distinct;  /* EX_FUNC: COUNT(DISTINCT x) */
    struct ast_expr *a, *b, *c;
    ast_exprs *list; /* EX_IN values, EX_FUNC args, EX_CASE when/then pairs */
    char *name;      /* EX_COL column, EX_FUNC function (lower case) */
    char *qual;      /* EX_COL qualifier (stream or alias), or NULL */
    sql_type cast_type;
    ast_lit lit;
} ast_expr;

/* ------------------------------------------------------------------ SELECT */

typedef struct ast_select_item {
    ast_expr *expr; /* NULL for '*' and 'alias.*' */
    char *alias;    /* AS alias, or NULL */
    int star;       /* 1 for '*' or 'qual.*' */
    char *star_qual;
} ast_select_item;

typedef struct ast_items {
    int n, cap;
    ast_select_item *v;
} ast_items;

struct ast_select;

/* FROM / JOIN source: a stream name or a parenthesised subquery (alias required). */
typedef struct ast_source {
    char *stream;            /* or NULL for a subquery */
    struct ast_select *sub;  /* or NULL */
    char *alias;             /* or NULL */
    int line, col;
} ast_source;

/* CROSS JOIN UNNEST(expr) AS alias(column): every row of FROM's source once
 * for each element of the array expr makes of it, with the element as the
 * extra column.  expr is over the source's columns (split(text, sep) is the
 * one function that makes an array). */
typedef struct ast_unnest {
    ast_expr *expr;
    char *alias;  /* the table alias (qualifies the column) */
    char *column; /* the element's column: the one in parentheses, else the alias */
    int line, col; /* of UNNEST */
} ast_unnest;

typedef enum ast_window_kind { WIN_NONE = 0, WIN_TUMBLING, WIN_HOPPING, WIN_SESSION } ast_window_kind;

typedef struct ast_window {
    ast_window_kind kind;
    int64_t size_ms;    /* TUMBLING, HOPPING */
    int64_t advance_ms; /* HOPPING */
    int64_t gap_ms;     /* SESSION */
    int64_t grace_ms;   /* GRACE, 0 when absent */
    int has_grace;
} ast_window;

typedef enum ast_emit { EMIT_DEFAULT = 0, EMIT_CHANGES, EMIT_FINAL } ast_emit;

typedef struct ast_select {
    ast_items *items;
    ast_source *from;
    ast_unnest *unnest;  /* CROSS JOIN UNNEST(...), or NULL */
    ast_window window;
    ast_source *join;    /* or NULL */
    ast_expr *join_on;   /* with join */
    int64_t within_ms;   /* with join: WITHIN, or -1 (a stream-table join) */
    int join_left;       /* with join: LEFT JOIN */
    ast_expr *where;     /* or NULL */
    ast_exprs *group_by; /* or NULL */
    ast_expr *having;    /* or NULL */
    ast_emit emit;
    int64_t limit;       /* -1 when absent */
} ast_select;

/* ------------------------------------------------------------------ statements */

typedef struct ast_option {
    char *key;   /* lower case */
    char *value; /* the text of the value */
    int quoted;  /* 1 when written as a 'string', 0 for a number or identifier */
    int key_line, key_col; /* where the key is, 1-based, for errors */
    int line, col;         /* where the value is */
} ast_option;

typedef struct ast_options {
    int n, cap;
    ast_option *v;
} ast_options;

typedef struct ast_coldef {
    char *name;
    sql_type type;
} ast_coldef;

typedef struct ast_coldefs {
    int n, cap;
    ast_coldef *v;
} ast_coldefs;

typedef struct ast_names {
    int n, cap;
    char **v;
} ast_names;

typedef struct ast_rows {
    int n, cap;
    ast_exprs **v;
} ast_rows;

typedef enum ast_stmt_kind {
    ST_CREATE_STREAM,
    ST_CREATE_QUERY,
    ST_SELECT,       /* a bare SELECT: a transient push query */
    ST_INSERT,
    ST_DROP_STREAM,
    ST_DROP_QUERY,
    ST_SHOW,
    ST_DESCRIBE,
    ST_EXPLAIN,
    ST_SUBSCRIBE,
    ST_SET,
    ST_ALTER_QUERY_REBALANCE, /* ALTER QUERY name REBALANCE: re-run placement now (a cluster) */
    ST_CREATE_STREAM_AS,      /* CREATE STREAM name [WITH (...)] AS SELECT: a query whose output is a new stream */
    ST_INSERT_SELECT,         /* INSERT INTO name SELECT: a query appending to an existing stream */
    ST_CREATE_TABLE,          /* CREATE TABLE name (cols, PRIMARY KEY (k, ...)) [WITH (...)]: a source table */
    ST_CREATE_TABLE_AS,       /* CREATE TABLE name [WITH (...)] AS SELECT ... GROUP BY: an updating aggregate */
} ast_stmt_kind;

/* SHOW SETTINGS lists every setting; SHOW_SETTING is SHOW <name> (in name). */
typedef enum ast_show_what { SHOW_STREAMS, SHOW_QUERIES, SHOW_NODES, SHOW_SETTINGS, SHOW_SETTING } ast_show_what;

typedef struct ast_stmt {
    ast_stmt_kind kind;
    int line, col;        /* where the statement starts */
    char *text;           /* the statement's own source text, without the ';' (owned) */
    char *name;           /* CREATE/DROP/ALTER/DESCRIBE/SUBSCRIBE/INSERT target; EXPLAIN of a named query; SHOW <setting> */
    int if_not_exists;    /* CREATE ... IF NOT EXISTS */
    int if_exists;        /* DROP ... IF EXISTS */
    ast_coldefs *cols;    /* CREATE STREAM, CREATE TABLE */
    ast_names *pkey;      /* CREATE TABLE: its PRIMARY KEY columns (NULL: none was written) */
    ast_options *with;    /* CREATE STREAM/QUERY WITH (...); EXPLAIN (FORMAT JSON) as ("format","json") */
    ast_select *select;   /* CREATE QUERY, CREATE STREAM AS, INSERT INTO SELECT, ST_SELECT, EXPLAIN of a select */
    ast_names *insert_cols; /* INSERT column list, or NULL */
    ast_rows *rows;       /* INSERT VALUES rows */
    ast_show_what show;   /* SHOW */
    int explain_placement;/* EXPLAIN PLACEMENT */
    int explain_json;     /* EXPLAIN (FORMAT JSON) */
    char *set_key;        /* SET key = value (key lower case) */
    ast_lit set_value;    /* a string, number, boolean or identifier (identifier as TY_TEXT) */
    int set_key_line, set_key_col, set_line, set_col; /* where key and value are */
} ast_stmt;

/* ------------------------------------------------------------------ parsing */

typedef struct parse_error {
    int stmt_index; /* 0-based index of the statement the error belongs to */
    int line, col;  /* 1-based position of the offending token */
    char msg[256];  /* e.g. "unexpected 'FORM', expected FROM" */
} parse_error;

typedef struct parse_result {
    int nstmts;
    ast_stmt **stmts;  /* only the statements that parsed */
    int nerrors;
    parse_error *errors;
} parse_result;

/* Parse every statement of src[0..len).  *out is always set (free it with
 * parse_result_free) unless memory runs out.  Returns 0 when there were no
 * errors, XE_SYNTAX when at least one statement failed, XE_NOMEM. */
int parse_sql(const char *src, size_t len, parse_result **out);
void parse_result_free(parse_result *r);

/* Parse exactly one statement (a trailing ';' is allowed).  On failure returns
 * XE_SYNTAX with the first error in *err (line/col set) and *out = NULL. */
int parse_one(const char *src, size_t len, ast_stmt **out, xerr *err);

/* Format an error the way the shell shows it:
 *   error: line 2, column 14: unexpected 'FORM', expected FROM
 *     SELECT a FORM s
 *              ^
 * Appends to b (which the caller owns). */
int parse_format_error(const char *src, size_t len, int line, int col, const char *msg, sbuf *b);

/* A position (line, col) within st->text, as a process that parsed st->text
 * alone reports it (the coordinator runs the statements a client sends), to
 * the same place in the input st was parsed from.  Line 0 stays 0 (no
 * position). */
void parse_text_pos(const ast_stmt *st, int line, int col, int *in_line, int *in_col);

/* For the shell: 1 when src holds at least one complete statement, i.e. it
 * ends (ignoring trailing whitespace and comments) in a ';' that is not inside
 * a string, quoted identifier or comment; 0 otherwise. */
int parse_is_complete(const char *src, size_t len);

/* For the shell's continuation prompt: what src ends inside of: '\'' a
 * string, '"' a quoted identifier, '*' a comment, or 0. */
int parse_open_quote(const char *src, size_t len);

/* The keywords of the language, upper case, NULL-terminated (for completion). */
extern const char *const parse_keywords[];

/* ------------------------------------------------------------------ AST */

void ast_stmt_free(ast_stmt *s);
void ast_expr_free(ast_expr *e);
void ast_select_free(ast_select *s);

/* Structural equality (positions and source text are ignored). */
int ast_stmt_equal(const ast_stmt *a, const ast_stmt *b);
int ast_expr_equal(const ast_expr *a, const ast_expr *b);

/* Print back to SQL that parses to an equal AST.  Appends to b. */
int ast_print_stmt(const ast_stmt *s, sbuf *b);
int ast_print_expr(const ast_expr *e, sbuf *b);
int ast_print_select(const ast_select *s, sbuf *b);
/* Print an identifier, quoting it when it needs quotes. */
int ast_print_ident(const char *name, sbuf *b);

/* Deep copies (NULL in, NULL out; NULL also when memory runs out). */
ast_expr *ast_expr_dup(const ast_expr *e);
ast_select *ast_select_dup(const ast_select *s);

/* Look up a WITH option (case-insensitive key); NULL when absent. */
const ast_option *ast_option_get(const ast_options *o, const char *key);

/* Parse an ISO-8601 timestamp as TIMESTAMP '...' literals take it
 * ('2024-01-02', '2024-01-02 03:04:05.678', 'T' between date and time,
 * optional 'Z' or +hh[:mm]/-hh[:mm]; UTC when no zone) into Unix epoch
 * milliseconds.  Returns 0, or -1 when s[0..n) is not such a timestamp. */
int ast_parse_timestamp(const char *s, size_t n, int64_t *ms);

#endif
