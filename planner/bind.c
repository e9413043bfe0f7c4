/*
 * bind.c: name resolution, type checking and constant folding of expressions.
 *
 * An AST expression is bound against a scope: the row layout an operator
 * receives (one or two inputs, each with a qualifier name).  The result is a
 * plan_expr whose column references are positions in that layout and whose
 * every node carries its result type.  Errors carry the line and column of the
 * offending AST node and, for unknown names, the nearest known name.
 */
#include "planner/internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ plan_expr basics */

plan_expr *pe_new(plan_expr_kind k, sql_type t)
{
    plan_expr *e = calloc(1, sizeof *e);
    if (e) {
        e->kind = k;
        e->type = t;
    }
    return e;
}

int pe_add_arg(plan_expr *e, plan_expr *a)
{
    if (!a) return XE_NOMEM;
    plan_expr **v = realloc(e->args, (size_t)(e->nargs + 1) * sizeof *v);
    if (!v) {
        plan_expr_free(a);
        return XE_NOMEM;
    }
    e->args = v;
    e->args[e->nargs++] = a;
    return 0;
}

void plan_expr_free(plan_expr *e)
{
    if (!e) return;
    for (int i = 0; i < e->nargs; i++) plan_expr_free(e->args[i]);
    free(e->args);
    if (e->kind == PE_CONST && e->lit.type == TY_TEXT) free(e->lit.s);
    free(e);
}

plan_expr *pe_dup(const plan_expr *e)
{
    if (!e) return NULL;
    plan_expr *d = malloc(sizeof *d);
    if (!d) return NULL;
    *d = *e;
    d->args = NULL;
    d->nargs = 0;
    if (e->kind == PE_CONST && e->lit.type == TY_TEXT) {
        d->lit.s = strdup(e->lit.s ? e->lit.s : "");
        if (!d->lit.s) {
            free(d);
            return NULL;
        }
    }
    for (int i = 0; i < e->nargs; i++)
        if (pe_add_arg(d, pe_dup(e->args[i]))) {
            plan_expr_free(d);
            return NULL;
        }
    return d;
}

int pe_equal(const plan_expr *a, const plan_expr *b)
{
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->type != b->type || a->op != b->op || a->negated != b->negated ||
        a->fn != b->fn || a->nargs != b->nargs || a->has_else != b->has_else)
        return 0;
    if (a->kind == PE_COL && a->col != b->col) return 0;
    if (a->kind == PE_CONST) {
        if (a->lit.type != b->lit.type) return 0;
        if (a->lit.type == TY_TEXT) return strcmp(a->lit.s, b->lit.s) == 0;
        if (a->lit.type == TY_DOUBLE) return a->lit.d == b->lit.d;
        return a->lit.i == b->lit.i;
    }
    for (int i = 0; i < a->nargs; i++)
        if (!pe_equal(a->args[i], b->args[i])) return 0;
    return 1;
}

/* Apply map[] to every column reference (map[old] = new). */
void pe_remap(plan_expr *e, const int *map)
{
    if (!e) return;
    if (e->kind == PE_COL) e->col = map[e->col];
    for (int i = 0; i < e->nargs; i++) pe_remap(e->args[i], map);
}

void pe_mark_cols(const plan_expr *e, unsigned char *used)
{
    if (!e) return;
    if (e->kind == PE_COL) used[e->col] = 1;
    for (int i = 0; i < e->nargs; i++) pe_mark_cols(e->args[i], used);
}

/* 0 = none, 1 = only from [lo,hi), 2 = outside too.  Used to split join predicates. */
int pe_cols_within(const plan_expr *e, int lo, int hi, int *inside, int *outside)
{
    if (!e) return 0;
    if (e->kind == PE_COL) {
        if (e->col >= lo && e->col < hi) *inside = 1;
        else *outside = 1;
    }
    for (int i = 0; i < e->nargs; i++) pe_cols_within(e->args[i], lo, hi, inside, outside);
    return 0;
}

/* ------------------------------------------------------------------ types */

int ty_numeric(sql_type t) { return t == TY_INT || t == TY_BIGINT || t == TY_DOUBLE; }
static int ty_integer(sql_type t) { return t == TY_INT || t == TY_BIGINT; }

/* Can values of a and b be compared? */
static int ty_comparable(sql_type a, sql_type b)
{
    if (a == TY_NULL || b == TY_NULL) return 1;
    if (ty_numeric(a) && ty_numeric(b)) return 1;
    if (a == TY_TIMESTAMP && (b == TY_TIMESTAMP || ty_integer(b) || b == TY_TEXT)) return 1;
    if (b == TY_TIMESTAMP && (ty_integer(a) || a == TY_TEXT)) return 1;
    return a == b;
}

/* ------------------------------------------------------------------ functions */

static const struct {
    const char *name;
    plan_fn fn;
    int min, max; /* argument count */
} fn_table[] = {
    {"abs", FN_ABS, 1, 1},         {"lower", FN_LOWER, 1, 1},       {"upper", FN_UPPER, 1, 1},
    {"length", FN_LENGTH, 1, 1},   {"char_length", FN_LENGTH, 1, 1}, {"coalesce", FN_COALESCE, 1, 64},
    {"mod", FN_MOD, 2, 2},         {"round", FN_ROUND, 1, 2},       {"floor", FN_FLOOR, 1, 1},
    {"ceil", FN_CEIL, 1, 1},       {"ceiling", FN_CEIL, 1, 1},      {"sqrt", FN_SQRT, 1, 1},
    {"power", FN_POWER, 2, 2},     {"pow", FN_POWER, 2, 2},         {"substr", FN_SUBSTR, 2, 3},
    {"substring", FN_SUBSTR, 2, 3}, {"trim", FN_TRIM, 1, 1},        {"nullif", FN_NULLIF, 2, 2},
    {"greatest", FN_GREATEST, 1, 64}, {"least", FN_LEAST, 1, 64},   {"concat", FN_CONCAT, 1, 64},
    {"count", FN_COUNT, 1, 1},     {"sum", FN_SUM, 1, 1},           {"avg", FN_AVG, 1, 1},
    {"min", FN_MIN, 1, 1},         {"max", FN_MAX, 1, 1},
};

#define NFN (sizeof fn_table / sizeof fn_table[0])

static int is_agg_fn(plan_fn f) { return f >= FN_COUNT_STAR; }

/* Is x (an EX_FUNC) a function we know?  Else the error, with the nearest
 * name or, when none is near, the names there are (aggregates first). */
int bind_func_known(const ast_expr *x, xerr *err)
{
    if (!strcmp(x->name, "split")) return 0; /* UNNEST's array (planner.c) */
    for (size_t k = 0; k < NFN; k++)
        if (!strcmp(fn_table[k].name, x->name)) return 0;
    const char *best = NULL;
    int bestd = 3;
    char known[400] = "";
    size_t len = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k <= NFN; k++) {
            int agg = k < NFN && is_agg_fn(fn_table[k].fn);
            if (agg != (pass == 0) || (k == NFN && pass == 0)) continue;
            const char *name = k < NFN ? fn_table[k].name : "split";
            int d = str_distance(x->name, name);
            if (d < bestd && d < (int)strlen(x->name)) {
                bestd = d;
                best = name;
            }
            if (len < sizeof known)
                len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", len ? ", " : "", name);
        }
    if (best)
        return xerr_at(err, XE_NAME, x->line, x->col, "unknown function '%s'; did you mean '%s'?", x->name, best);
    return xerr_at(err, XE_NAME, x->line, x->col, "unknown function '%s' (known: %s)", x->name, known);
}

const char *plan_fn_name(plan_fn fn)
{
    switch (fn) {
    case FN_COUNT_STAR: return "count(*)";
    case FN_COUNT_DISTINCT: return "count(distinct)";
    default: break;
    }
    for (size_t i = 0; i < sizeof fn_table / sizeof fn_table[0]; i++)
        if (fn_table[i].fn == fn) return fn_table[i].name;
    return "?";
}

/* Is this AST node a call of an aggregate function? */
int ast_is_agg(const ast_expr *e)
{
    if (!e || e->kind != EX_FUNC || !e->name) return 0;
    return !strcmp(e->name, "count") || !strcmp(e->name, "sum") || !strcmp(e->name, "avg") ||
           !strcmp(e->name, "min") || !strcmp(e->name, "max");
}

/* Does the AST contain an aggregate call?  Returns the first one or NULL. */
const ast_expr *ast_find_agg(const ast_expr *e)
{
    if (!e) return NULL;
    if (ast_is_agg(e)) return e;
    const ast_expr *r;
    if ((r = ast_find_agg(e->a)) || (r = ast_find_agg(e->b)) || (r = ast_find_agg(e->c))) return r;
    if (e->list)
        for (int i = 0; i < e->list->n; i++)
            if ((r = ast_find_agg(e->list->v[i]))) return r;
    return NULL;
}

/* ------------------------------------------------------------------ scopes */

static void suggest_cb_col(const bind_scope *sc, const char *name, char *best, size_t n, int *bestd)
{
    for (int s = 0; s < sc->nsides; s++)
        for (int i = sc->side[s].hidden; i < sc->side[s].schema->ncols; i++) {
            int d = str_distance(name, sc->side[s].schema->cols[i].name);
            if (d < *bestd) {
                *bestd = d;
                snprintf(best, n, "%s", sc->side[s].schema->cols[i].name);
            }
        }
}

static int side_matches(const bind_side *sd, const char *qual)
{
    if (!qual) return 1;
    if (sd->alias && !strcmp(sd->alias, qual)) return 1;
    if (sd->name && !strcmp(sd->name, qual)) return 1;
    return 0;
}

/* Resolve [qual.]name to a position in the scope's layout. */
static int resolve_col(const bind_scope *sc, const ast_expr *e, int *pos, sql_type *type, xerr *err)
{
    int found = -1, nfound = 0, qual_ok = 0;
    for (int s = 0; s < sc->nsides; s++) {
        const bind_side *sd = &sc->side[s];
        if (!side_matches(sd, e->qual)) continue;
        qual_ok = 1;
        int i = plan_schema_find(sd->schema, e->name);
        if (i >= 0 && i >= sd->hidden) {
            if (nfound == 0) {
                found = sd->offset + i;
                *type = sd->schema->cols[i].type;
            }
            nfound++;
        }
    }
    if (e->qual && !qual_ok) {
        char names[256] = "";
        for (int s = 0; s < sc->nsides; s++) {
            size_t l = strlen(names);
            snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "",
                     sc->side[s].alias ? sc->side[s].alias : sc->side[s].name);
        }
        return xerr_at(err, XE_NAME, e->line, e->col, "unknown stream or alias '%s' (in scope: %s)", e->qual,
                       names);
    }
    if (nfound > 1)
        return xerr_at(err, XE_NAME, e->line, e->col,
                       "column '%s' is ambiguous: it exists in both joined streams; qualify it", e->name);
    if (nfound == 0) {
        if (sc->windowed && (!strcmp(e->name, "window_start") || !strcmp(e->name, "window_end")))
            return xerr_at(err, XE_PLAN, e->line, e->col,
                           "'%s' can only be selected in an aggregation over a window", e->name);
        for (int i = 0; !e->qual && sc->items && i < sc->items->n; i++)
            if (sc->items->v[i].alias && !strcmp(sc->items->v[i].alias, e->name))
                return xerr_at(err, XE_NAME, e->line, e->col,
                               "unknown column '%s': a select-list alias cannot be referenced in the same SELECT "
                               "list, WHERE or HAVING; repeat its expression", e->name);
        char best[128] = "";
        /* a one- or two-letter name is near every other short one */
        int len = (int)strlen(e->name), bestd = len < 3 ? len : 3;
        suggest_cb_col(sc, e->name, best, sizeof best, &bestd);
        if (best[0])
            return xerr_at(err, XE_NAME, e->line, e->col, "unknown column '%s%s%s'; did you mean '%s'?",
                           e->qual ? e->qual : "", e->qual ? "." : "", e->name, best);
        return xerr_at(err, XE_NAME, e->line, e->col, "unknown column '%s%s%s'", e->qual ? e->qual : "",
                       e->qual ? "." : "", e->name);
    }
    *pos = found;
    return 0;
}

int resolve_col_public(const bind_scope *sc, const ast_expr *e, int *pos, sql_type *type, xerr *err)
{
    return resolve_col(sc, e, pos, type, err);
}

/* Replace every column reference i of *e by (a copy of) sub[i]. */
int pe_substitute(plan_expr **e, plan_expr **sub, int n)
{
    plan_expr *x = *e;
    if (x->kind == PE_COL) {
        if (x->col < 0 || x->col >= n || !sub[x->col]) return 0;
        plan_expr *d = pe_dup(sub[x->col]);
        if (!d) return XE_NOMEM;
        plan_expr_free(x);
        *e = d;
        return 0;
    }
    for (int i = 0; i < x->nargs; i++)
        if (pe_substitute(&x->args[i], sub, n)) return XE_NOMEM;
    return 0;
}

/* ------------------------------------------------------------------ constant folding */

static int is_const(const plan_expr *e) { return e && e->kind == PE_CONST; }

static double const_d(const plan_expr *e) { return e->lit.type == TY_DOUBLE ? e->lit.d : (double)e->lit.i; }

/* Replace e by a constant when all its arguments are constants and the
 * operation is a pure arithmetic, comparison or boolean one.  Functions and
 * anything that could fail at run time (division by zero) are left alone. */
static plan_expr *fold(plan_expr *e)
{
    if (!e || (e->kind != PE_BINARY && e->kind != PE_UNARY)) return e;
    for (int i = 0; i < e->nargs; i++)
        if (!is_const(e->args[i])) return e;
    plan_expr *a = e->args[0], *b = e->nargs > 1 ? e->args[1] : NULL;
    plan_expr *r = pe_new(PE_CONST, e->type);
    if (!r) return e;
    int null = a->lit.type == TY_NULL || (b && b->lit.type == TY_NULL);
    int ok = 1;
    r->lit.type = e->type;
    switch (e->op) {
    case OP_NEG:
        if (null) r->lit.type = TY_NULL;
        else if (a->lit.type == TY_DOUBLE) r->lit.d = -a->lit.d;
        else if (a->lit.i == INT64_MIN) ok = 0;
        else r->lit.i = -a->lit.i;
        break;
    case OP_POS: r->lit = a->lit; if (a->lit.type == TY_TEXT) ok = 0; break;
    case OP_NOT:
        if (null) r->lit.type = TY_NULL;
        else r->lit.i = !a->lit.i;
        break;
    case OP_ADD: case OP_SUB: case OP_MUL:
        if (null) { r->lit.type = TY_NULL; break; }
        if (e->type == TY_DOUBLE) {
            double x = const_d(a), y = const_d(b);
            r->lit.d = e->op == OP_ADD ? x + y : e->op == OP_SUB ? x - y : x * y;
        } else if (e->type == TY_BIGINT || e->type == TY_INT || e->type == TY_INTERVAL || e->type == TY_TIMESTAMP) {
            int64_t x = a->lit.i, y = b->lit.i, z;
            int ovf = e->op == OP_ADD ? __builtin_add_overflow(x, y, &z)
                      : e->op == OP_SUB ? __builtin_sub_overflow(x, y, &z)
                                        : __builtin_mul_overflow(x, y, &z);
            if (ovf) ok = 0;
            else r->lit.i = z;
        } else ok = 0;
        break;
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
        if (null) { r->lit.type = TY_NULL; break; }
        int c;
        if (a->lit.type == TY_TEXT && b->lit.type == TY_TEXT) c = strcmp(a->lit.s, b->lit.s);
        else if (a->lit.type == TY_TEXT || b->lit.type == TY_TEXT) { ok = 0; break; }
        else if (a->lit.type == TY_DOUBLE || b->lit.type == TY_DOUBLE) {
            double x = const_d(a), y = const_d(b);
            c = x < y ? -1 : x > y;
        } else c = a->lit.i < b->lit.i ? -1 : a->lit.i > b->lit.i;
        int v = e->op == OP_EQ ? c == 0 : e->op == OP_NE ? c != 0 : e->op == OP_LT ? c < 0
              : e->op == OP_LE ? c <= 0 : e->op == OP_GT ? c > 0 : c >= 0;
        r->lit.i = v;
        break;
    }
    case OP_AND: case OP_OR: {
        /* three-valued logic */
        int an = a->lit.type == TY_NULL, bn = b->lit.type == TY_NULL;
        int av = !an && a->lit.i, bv = !bn && b->lit.i;
        if (e->op == OP_AND) {
            if ((!an && !av) || (!bn && !bv)) r->lit.i = 0;
            else if (an || bn) r->lit.type = TY_NULL;
            else r->lit.i = 1;
        } else {
            if (av || bv) r->lit.i = 1;
            else if (an || bn) r->lit.type = TY_NULL;
            else r->lit.i = 0;
        }
        break;
    }
    default: ok = 0; break;
    }
    if (!ok) {
        free(r);
        return e;
    }
    plan_expr_free(e);
    return r;
}

/* ------------------------------------------------------------------ binding */

static int bind_list(const bind_scope *sc, const ast_exprs *l, plan_expr *into, xerr *err)
{
    for (int i = 0; l && i < l->n; i++) {
        plan_expr *a = NULL;
        int rc = bind_expr(sc, l->v[i], &a, err);
        if (rc) return rc;
        if ((rc = pe_add_arg(into, a))) return xerr_set(err, rc, "out of memory");
    }
    return 0;
}

static sql_type arith_type(sql_type a, sql_type b)
{
    if (a == TY_DOUBLE || b == TY_DOUBLE) return TY_DOUBLE;
    if (a == TY_NULL) return b;
    if (b == TY_NULL) return a;
    if (a == TY_TIMESTAMP || b == TY_TIMESTAMP) return TY_TIMESTAMP;
    if (a == TY_INTERVAL && b == TY_INTERVAL) return TY_INTERVAL;
    return TY_BIGINT;
}

static int check_type(const ast_expr *at, sql_type got, int (*ok)(sql_type), const char *what, const char *ctx,
                      xerr *err)
{
    if (got == TY_NULL || ok(got)) return 0;
    return xerr_at(err, XE_TYPE, at->line, at->col, "%s expects %s, got %s", ctx, what, sql_type_name(got));
}

static int ty_boolish(sql_type t) { return t == TY_BOOL; }
static int ty_text(sql_type t) { return t == TY_TEXT; }
static int ty_arith(sql_type t) { return ty_numeric(t) || t == TY_TIMESTAMP || t == TY_INTERVAL; }

int bind_expr(const bind_scope *sc, const ast_expr *x, plan_expr **out, xerr *err)
{
    plan_expr *e = NULL;
    int rc = 0;
    *out = NULL;
    switch (x->kind) {
    case EX_LIT:
        e = pe_new(PE_CONST, x->lit.type);
        if (!e) goto nomem;
        e->lit = x->lit;
        if (x->lit.type == TY_TEXT && !(e->lit.s = strdup(x->lit.s ? x->lit.s : ""))) goto nomem;
        break;
    case EX_COL: {
        int pos;
        sql_type t;
        if ((rc = resolve_col(sc, x, &pos, &t, err))) return rc;
        e = pe_new(PE_COL, t);
        if (!e) goto nomem;
        e->col = pos;
        break;
    }
    case EX_STAR:
        return xerr_at(err, XE_PLAN, x->line, x->col, "'*' is only allowed in SELECT lists and COUNT(*)");
    case EX_UNARY: {
        plan_expr *a;
        if ((rc = bind_expr(sc, x->a, &a, err))) return rc;
        if (x->op == OP_NOT) {
            if ((rc = check_type(x->a, a->type, ty_boolish, "BOOLEAN", "NOT", err))) goto fail_a;
            e = pe_new(PE_UNARY, TY_BOOL);
        } else {
            if ((rc = check_type(x->a, a->type, ty_arith, "a number", x->op == OP_NEG ? "unary '-'" : "unary '+'",
                                 err)))
                goto fail_a;
            e = pe_new(PE_UNARY, a->type == TY_NULL ? TY_BIGINT : a->type);
        }
        if (!e) { plan_expr_free(a); goto nomem; }
        e->op = x->op;
        if ((rc = pe_add_arg(e, a))) goto fail;
        break;
    fail_a:
        plan_expr_free(a);
        return rc;
    }
    case EX_BINARY: {
        plan_expr *a = NULL, *b = NULL;
        if ((rc = bind_expr(sc, x->a, &a, err))) return rc;
        if ((rc = bind_expr(sc, x->b, &b, err))) { plan_expr_free(a); return rc; }
        sql_type t = TY_BOOL;
        const char *opname = ast_op_text(x->op);
        char ctx[64];
        snprintf(ctx, sizeof ctx, "operator '%s'", opname);
        switch (x->op) {
        case OP_AND: case OP_OR:
            if ((rc = check_type(x->a, a->type, ty_boolish, "BOOLEAN", ctx, err)) ||
                (rc = check_type(x->b, b->type, ty_boolish, "BOOLEAN", ctx, err)))
                goto bin_fail;
            break;
        case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
            if (!ty_comparable(a->type, b->type)) {
                rc = xerr_at(err, XE_TYPE, x->line, x->col, "cannot compare %s with %s", sql_type_name(a->type),
                             sql_type_name(b->type));
                goto bin_fail;
            }
            break;
        case OP_CONCAT:
            t = TY_TEXT;
            break;
        case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD:
            if ((rc = check_type(x->a, a->type, ty_arith, "numbers", ctx, err)) ||
                (rc = check_type(x->b, b->type, ty_arith, "numbers", ctx, err)))
                goto bin_fail;
            t = arith_type(a->type, b->type);
            if (x->op == OP_MOD && t == TY_DOUBLE) t = TY_DOUBLE;
            break;
        default:
            rc = xerr_at(err, XE_PLAN, x->line, x->col, "unsupported operator");
            goto bin_fail;
        }
        e = pe_new(PE_BINARY, t);
        if (!e) { plan_expr_free(a); plan_expr_free(b); goto nomem; }
        e->op = x->op;
        if ((rc = pe_add_arg(e, a))) { plan_expr_free(b); goto fail; }
        if ((rc = pe_add_arg(e, b))) goto fail;
        break;
    bin_fail:
        plan_expr_free(a);
        plan_expr_free(b);
        return rc;
    }
    case EX_ISNULL: {
        plan_expr *a;
        if ((rc = bind_expr(sc, x->a, &a, err))) return rc;
        if (!(e = pe_new(PE_ISNULL, TY_BOOL))) { plan_expr_free(a); goto nomem; }
        e->negated = x->negated;
        if ((rc = pe_add_arg(e, a))) goto fail;
        break;
    }
    case EX_BETWEEN: {
        /* a BETWEEN b AND c  ==>  a >= b AND a <= c  (NOT: a < b OR a > c) */
        ast_expr lo = {0}, hi = {0}, both = {0};
        lo.kind = hi.kind = both.kind = EX_BINARY;
        lo.line = hi.line = both.line = x->line;
        lo.col = hi.col = both.col = x->col;
        lo.op = x->negated ? OP_LT : OP_GE;
        lo.a = x->a;
        lo.b = x->b;
        hi.op = x->negated ? OP_GT : OP_LE;
        hi.a = x->a;
        hi.b = x->c;
        both.op = x->negated ? OP_OR : OP_AND;
        both.a = &lo;
        both.b = &hi;
        return bind_expr(sc, &both, out, err);
    }
    case EX_IN: {
        plan_expr *a;
        if ((rc = bind_expr(sc, x->a, &a, err))) return rc;
        if (!(e = pe_new(PE_IN, TY_BOOL))) { plan_expr_free(a); goto nomem; }
        e->negated = x->negated;
        if ((rc = pe_add_arg(e, a))) goto fail;
        if ((rc = bind_list(sc, x->list, e, err))) goto fail;
        for (int i = 1; i < e->nargs; i++)
            if (!ty_comparable(a->type, e->args[i]->type)) {
                rc = xerr_at(err, XE_TYPE, x->list->v[i - 1]->line, x->list->v[i - 1]->col,
                             "IN list value of type %s cannot be compared with %s", sql_type_name(e->args[i]->type),
                             sql_type_name(a->type));
                goto fail;
            }
        break;
    }
    case EX_LIKE: {
        plan_expr *a, *b;
        if ((rc = bind_expr(sc, x->a, &a, err))) return rc;
        if ((rc = bind_expr(sc, x->b, &b, err))) { plan_expr_free(a); return rc; }
        if ((rc = check_type(x->a, a->type, ty_text, "TEXT", "LIKE", err)) ||
            (rc = check_type(x->b, b->type, ty_text, "TEXT", "LIKE", err))) {
            plan_expr_free(a);
            plan_expr_free(b);
            return rc;
        }
        if (!(e = pe_new(PE_LIKE, TY_BOOL))) { plan_expr_free(a); plan_expr_free(b); goto nomem; }
        e->negated = x->negated;
        if ((rc = pe_add_arg(e, a))) { plan_expr_free(b); goto fail; }
        if ((rc = pe_add_arg(e, b))) goto fail;
        break;
    }
    case EX_CASE: {
        /* Simple CASE x WHEN v ... becomes searched CASE WHEN x = v ... */
        if (!(e = pe_new(PE_CASE, TY_NULL))) goto nomem;
        int n = x->list ? x->list->n : 0;
        for (int i = 0; i + 1 < n; i += 2) {
            plan_expr *w, *t;
            if (x->a) {
                ast_expr eq = {0};
                eq.kind = EX_BINARY;
                eq.op = OP_EQ;
                eq.a = x->a;
                eq.b = x->list->v[i];
                eq.line = x->list->v[i]->line;
                eq.col = x->list->v[i]->col;
                rc = bind_expr(sc, &eq, &w, err);
            } else
                rc = bind_expr(sc, x->list->v[i], &w, err);
            if (rc) goto fail;
            if ((rc = pe_add_arg(e, w))) goto fail;
            if ((rc = check_type(x->list->v[i], w->type, ty_boolish, "BOOLEAN", "WHEN", err))) goto fail;
            if ((rc = bind_expr(sc, x->list->v[i + 1], &t, err))) goto fail;
            if ((rc = pe_add_arg(e, t))) goto fail;
        }
        if (x->b) {
            plan_expr *el;
            if ((rc = bind_expr(sc, x->b, &el, err))) goto fail;
            if ((rc = pe_add_arg(e, el))) goto fail;
            e->has_else = 1;
        }
        /* result type: first non-NULL branch; numbers widen to DOUBLE */
        for (int i = 1; i < e->nargs; i += (i + 1 < e->nargs || !e->has_else) ? 2 : 1) {
            sql_type t = e->args[i]->type;
            if (t == TY_NULL) continue;
            if (e->type == TY_NULL) e->type = t;
            else if (ty_numeric(e->type) && ty_numeric(t)) e->type = arith_type(e->type, t);
            else if (e->type != t) {
                rc = xerr_at(err, XE_TYPE, x->line, x->col, "CASE branches have different types: %s and %s",
                             sql_type_name(e->type), sql_type_name(t));
                goto fail;
            }
            if (i == e->nargs - 1) break;
        }
        if (e->has_else) {
            sql_type t = e->args[e->nargs - 1]->type;
            if (e->type == TY_NULL) e->type = t;
            else if (t != TY_NULL && ty_numeric(e->type) && ty_numeric(t)) e->type = arith_type(e->type, t);
            else if (t != TY_NULL && t != e->type) {
                rc = xerr_at(err, XE_TYPE, x->b->line, x->b->col, "CASE ELSE has type %s, the branches %s",
                             sql_type_name(t), sql_type_name(e->type));
                goto fail;
            }
        }
        break;
    }
    case EX_CAST: {
        plan_expr *a;
        if ((rc = bind_expr(sc, x->a, &a, err))) return rc;
        if (!(e = pe_new(PE_CAST, x->cast_type))) { plan_expr_free(a); goto nomem; }
        if ((rc = pe_add_arg(e, a))) goto fail;
        break;
    }
    case EX_FUNC: {
        if (ast_is_agg(x))
            return xerr_at(err, XE_PLAN, x->line, x->col, "aggregate %s() is not allowed here", x->name);
        if (!strcmp(x->name, "split")) /* an array: planner.c's plan_unnest takes it apart */
            return xerr_at(err, XE_TYPE, x->line, x->col,
                           "split() makes an array, which can only be expanded into rows: "
                           "FROM s CROSS JOIN UNNEST(split(col, ' ')) AS t(word)");
        if ((rc = bind_func_known(x, err))) return rc;
        size_t k;
        for (k = 0; k < NFN && strcmp(fn_table[k].name, x->name); k++) {}
        int n = x->list ? x->list->n : 0;
        if (n < fn_table[k].min || n > fn_table[k].max)
            return xerr_at(err, XE_PLAN, x->line, x->col, "%s() takes %d%s argument%s, got %d", x->name,
                           fn_table[k].min, fn_table[k].max > fn_table[k].min ? " or more" : "",
                           fn_table[k].min == 1 && fn_table[k].max == 1 ? "" : "s", n);
        if (!(e = pe_new(PE_FUNC, TY_NULL))) goto nomem;
        e->fn = fn_table[k].fn;
        if ((rc = bind_list(sc, x->list, e, err))) goto fail;
        sql_type a0 = e->args[0]->type;
        switch (e->fn) {
        case FN_ABS: case FN_ROUND: case FN_FLOOR: case FN_CEIL:
            if ((rc = check_type(x->list->v[0], a0, ty_numeric, "a number", x->name, err))) goto fail;
            e->type = (e->fn == FN_ABS || ty_integer(a0)) ? (a0 == TY_NULL ? TY_DOUBLE : a0) : TY_DOUBLE;
            if (e->fn == FN_ROUND && ty_integer(a0)) e->type = a0;
            break;
        case FN_SQRT: case FN_POWER:
            if ((rc = check_type(x->list->v[0], a0, ty_numeric, "a number", x->name, err))) goto fail;
            e->type = TY_DOUBLE;
            break;
        case FN_MOD:
            for (int i = 0; i < 2; i++)
                if ((rc = check_type(x->list->v[i], e->args[i]->type, ty_numeric, "a number", x->name, err)))
                    goto fail;
            e->type = arith_type(a0, e->args[1]->type);
            break;
        case FN_LOWER: case FN_UPPER: case FN_TRIM:
            if ((rc = check_type(x->list->v[0], a0, ty_text, "TEXT", x->name, err))) goto fail;
            e->type = TY_TEXT;
            break;
        case FN_LENGTH:
            if ((rc = check_type(x->list->v[0], a0, ty_text, "TEXT", x->name, err))) goto fail;
            e->type = TY_BIGINT;
            break;
        case FN_SUBSTR:
            if ((rc = check_type(x->list->v[0], a0, ty_text, "TEXT", x->name, err))) goto fail;
            for (int i = 1; i < e->nargs; i++)
                if ((rc = check_type(x->list->v[i], e->args[i]->type, ty_integer, "an integer", x->name, err)))
                    goto fail;
            e->type = TY_TEXT;
            break;
        case FN_CONCAT:
            e->type = TY_TEXT;
            break;
        case FN_COALESCE: case FN_NULLIF: case FN_GREATEST: case FN_LEAST:
            e->type = TY_NULL;
            for (int i = 0; i < e->nargs; i++) {
                sql_type t = e->args[i]->type;
                if (t == TY_NULL) continue;
                if (e->type == TY_NULL) e->type = t;
                else if (ty_numeric(e->type) && ty_numeric(t)) e->type = arith_type(e->type, t);
                else if (t != e->type) {
                    rc = xerr_at(err, XE_TYPE, x->list->v[i]->line, x->list->v[i]->col,
                                 "%s() arguments have different types: %s and %s", x->name,
                                 sql_type_name(e->type), sql_type_name(t));
                    goto fail;
                }
                if (e->fn == FN_NULLIF) break;
            }
            break;
        default:
            break;
        }
        break;
    }
    }
    *out = fold(e);
    return 0;
nomem:
    return xerr_set(err, XE_NOMEM, "out of memory");
fail:
    plan_expr_free(e);
    if (!rc) rc = XE_NOMEM;
    return rc;
}

/* ------------------------------------------------------------------ printing */

int plan_expr_print(const plan_expr *e, const plan_schema *in, sbuf *b)
{
    if (!e) return sbuf_adds(b, "?");
    switch (e->kind) {
    case PE_CONST:
        switch (e->lit.type) {
        case TY_NULL: return sbuf_adds(b, "NULL");
        case TY_BOOL: return sbuf_adds(b, e->lit.i ? "TRUE" : "FALSE");
        case TY_DOUBLE: return sbuf_printf(b, "%.17g", e->lit.d);
        case TY_TEXT: {
            sbuf_addc(b, '\'');
            for (const char *p = e->lit.s; *p; p++) {
                if (*p == '\'') sbuf_addc(b, '\'');
                sbuf_addc(b, *p);
            }
            return sbuf_addc(b, '\'');
        }
        case TY_INTERVAL: return sbuf_printf(b, "%lld MILLISECONDS", (long long)e->lit.i);
        default: return sbuf_printf(b, "%lld", (long long)e->lit.i);
        }
    case PE_COL:
        if (in && e->col < in->ncols) return sbuf_adds(b, in->cols[e->col].name);
        return sbuf_printf(b, "$%d", e->col);
    case PE_UNARY:
        sbuf_adds(b, e->op == OP_NOT ? "NOT " : e->op == OP_NEG ? "-" : "+");
        return plan_expr_print(e->args[0], in, b);
    case PE_BINARY:
        sbuf_addc(b, '(');
        plan_expr_print(e->args[0], in, b);
        sbuf_printf(b, " %s ", ast_op_text(e->op));
        plan_expr_print(e->args[1], in, b);
        return sbuf_addc(b, ')');
    case PE_ISNULL:
        plan_expr_print(e->args[0], in, b);
        return sbuf_adds(b, e->negated ? " IS NOT NULL" : " IS NULL");
    case PE_IN:
        plan_expr_print(e->args[0], in, b);
        sbuf_adds(b, e->negated ? " NOT IN (" : " IN (");
        for (int i = 1; i < e->nargs; i++) {
            if (i > 1) sbuf_adds(b, ", ");
            plan_expr_print(e->args[i], in, b);
        }
        return sbuf_addc(b, ')');
    case PE_LIKE:
        plan_expr_print(e->args[0], in, b);
        sbuf_adds(b, e->negated ? " NOT LIKE " : " LIKE ");
        return plan_expr_print(e->args[1], in, b);
    case PE_CASE: {
        sbuf_adds(b, "CASE");
        int pairs = (e->nargs - e->has_else) / 2;
        for (int i = 0; i < pairs; i++) {
            sbuf_adds(b, " WHEN ");
            plan_expr_print(e->args[2 * i], in, b);
            sbuf_adds(b, " THEN ");
            plan_expr_print(e->args[2 * i + 1], in, b);
        }
        if (e->has_else) {
            sbuf_adds(b, " ELSE ");
            plan_expr_print(e->args[e->nargs - 1], in, b);
        }
        return sbuf_adds(b, " END");
    }
    case PE_CAST:
        sbuf_adds(b, "CAST(");
        plan_expr_print(e->args[0], in, b);
        return sbuf_printf(b, " AS %s)", sql_type_name(e->type));
    case PE_FUNC:
        sbuf_printf(b, "%s(", plan_fn_name(e->fn));
        for (int i = 0; i < e->nargs; i++) {
            if (i) sbuf_adds(b, ", ");
            plan_expr_print(e->args[i], in, b);
        }
        return sbuf_addc(b, ')');
    }
    return 0;
}
