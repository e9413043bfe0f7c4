/*
 * internal.h: shared between the planner's own files; not part of its interface.
 */
#ifndef PLANNER_INTERNAL_H
#define PLANNER_INTERNAL_H

#include "planner/planner.h"

/* One input of a scope: a stream (or subquery) with the qualifiers it answers to. */
typedef struct bind_side {
    const char *name;          /* stream name */
    const char *alias;         /* alias or NULL */
    const plan_schema *schema; /* columns of this side */
    int offset;                /* position of its first column in the scope's row */
    int hidden;                /* its first `hidden` columns have no name here (a table's op) */
} bind_side;

typedef struct bind_scope {
    int nsides;
    bind_side side[2];
    int windowed; /* for the error message about window_start / window_end */
    const ast_items *items; /* the SELECT list, whose aliases an error names (or NULL) */
} bind_scope;

/* schema.c: append a column named name (copied) of type t; XE_NOMEM. */
int schema_add(plan_schema *s, const char *name, sql_type t);

int bind_expr(const bind_scope *sc, const ast_expr *x, plan_expr **out, xerr *err);
/* 0 when the function x calls exists, else XE_NAME with a "did you mean". */
int bind_func_known(const ast_expr *x, xerr *err);
int resolve_col_public(const bind_scope *sc, const ast_expr *e, int *pos, sql_type *type, xerr *err);
int pe_substitute(plan_expr **e, plan_expr **sub, int n);

plan_expr *pe_new(plan_expr_kind k, sql_type t);
int pe_add_arg(plan_expr *e, plan_expr *a); /* takes a; frees it on failure */
plan_expr *pe_dup(const plan_expr *e);
int pe_equal(const plan_expr *a, const plan_expr *b);
void pe_remap(plan_expr *e, const int *map);
void pe_mark_cols(const plan_expr *e, unsigned char *used);
int pe_cols_within(const plan_expr *e, int lo, int hi, int *inside, int *outside);

int ty_numeric(sql_type t);
int ast_is_agg(const ast_expr *e);
const ast_expr *ast_find_agg(const ast_expr *e);
const char *plan_fn_name(plan_fn fn);

#endif
