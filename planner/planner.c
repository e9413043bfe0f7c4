/*
 * planner.c: SELECT -> operator DAG.
 *
 * The plan is built in one pass over the SELECT:
 *   1. resolve the sources (streams) and build the binding scope;
 *   2. bind WHERE, the join condition, GROUP BY, aggregate arguments and the
 *      select list; constant-fold as we go (bind.c);
 *   3. push WHERE conjuncts that touch only one side of a join below the join;
 *   4. prune the columns each source reads to the ones something uses;
 *   5. lay out the operators: source -> filter -> [join -> filter] ->
 *      [window -> aggregate -> having] -> project -> sink, with an exchange
 *      wherever the partitioning key changes.
 * Everything the DAG needs is copied into it; it does not point into the AST.
 */
#include "planner/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ streams */

void plan_stream_free(plan_stream *s)
{
    if (!s) return;
    free(s->name);
    plan_schema_fini(&s->schema);
    free(s);
}

int plan_parse_interval(const char *text, int64_t *ms, xerr *err)
{
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    char *end;
    double v = strtod(p, &end);
    if (end == p || v < 0) return xerr_set(err, XE_INVAL, "'%s' is not an interval (try '2 seconds')", text);
    while (isspace((unsigned char)*end)) end++;
    double mult = 1;
    if (!*end) mult = 1;
    else {
        char unit[32];
        size_t n = 0;
        while (*end && !isspace((unsigned char)*end) && n + 1 < sizeof unit) unit[n++] = (char)tolower((unsigned char)*end++);
        unit[n] = 0;
        while (isspace((unsigned char)*end)) end++;
        if (*end) return xerr_set(err, XE_INVAL, "'%s' is not an interval (try '2 seconds')", text);
        static const struct { const char *u; double m; } units[] = {
            {"ms", 1}, {"millisecond", 1}, {"milliseconds", 1}, {"s", 1000}, {"sec", 1000}, {"second", 1000},
            {"seconds", 1000}, {"m", 60000}, {"min", 60000}, {"minute", 60000}, {"minutes", 60000},
            {"h", 3600000}, {"hour", 3600000}, {"hours", 3600000}, {"d", 86400000}, {"day", 86400000},
            {"days", 86400000},
        };
        size_t i;
        for (i = 0; i < sizeof units / sizeof units[0]; i++)
            if (!strcmp(unit, units[i].u)) break;
        if (i == sizeof units / sizeof units[0])
            return xerr_set(err, XE_INVAL, "unknown interval unit '%s' in '%s'", unit, text);
        mult = units[i].m;
    }
    *ms = (int64_t)(v * mult + 0.5);
    return 0;
}

int plan_stream_from_ast(const ast_stmt *st, plan_stream **out, xerr *err)
{
    *out = NULL;
    plan_stream *s = calloc(1, sizeof *s);
    if (!s || !(s->name = strdup(st->name))) goto nomem;
    s->ts_col = -1;
    for (int i = 0; st->cols && i < st->cols->n; i++) {
        if (plan_schema_find(&s->schema, st->cols->v[i].name) >= 0) {
            xerr_at(err, XE_NAME, st->line, st->col, "column '%s' is declared twice", st->cols->v[i].name);
            plan_stream_free(s);
            return XE_NAME;
        }
        if (schema_add(&s->schema, st->cols->v[i].name, st->cols->v[i].type)) goto nomem;
    }
    if (s->schema.ncols == 0) {
        plan_stream_free(s);
        return xerr_at(err, XE_PLAN, st->line, st->col, "a stream needs at least one column");
    }
    const ast_option *o = ast_option_get(st->with, "timestamp");
    if (o) {
        int c = plan_schema_find(&s->schema, o->value);
        if (c < 0) {
            /* identifiers are lower case; the option value is as written */
            char low[128];
            snprintf(low, sizeof low, "%s", o->value);
            for (char *p = low; *p; p++) *p = (char)tolower((unsigned char)*p);
            c = plan_schema_find(&s->schema, low);
        }
        if (c < 0) {
            xerr_at(err, XE_NAME, o->line, o->col, "timestamp column '%s' is not a column of stream '%s'", o->value,
                    s->name);
            plan_stream_free(s);
            return XE_NAME;
        }
        sql_type t = s->schema.cols[c].type;
        if (t != TY_TIMESTAMP && t != TY_BIGINT && t != TY_INT) {
            xerr_at(err, XE_TYPE, o->line, o->col,
                    "timestamp column '%s' must be TIMESTAMP or BIGINT (milliseconds), not %s", o->value,
                    sql_type_name(t));
            plan_stream_free(s);
            return XE_TYPE;
        }
        s->ts_col = c;
    }
    o = ast_option_get(st->with, "watermark");
    if (o) {
        if (s->ts_col < 0) {
            plan_stream_free(s);
            return xerr_at(err, XE_PLAN, o->key_line, o->key_col, "'watermark' needs a 'timestamp' column");
        }
        int rc = plan_parse_interval(o->value, &s->watermark_ms, err);
        if (rc) {
            err->line = o->line;
            err->col = o->col;
            plan_stream_free(s);
            return rc;
        }
    }
    s->partitions = 1;
    if ((o = ast_option_get(st->with, "partitions"))) {
        char *end;
        long v = strtol(o->value, &end, 10);
        if (*end || end == o->value || v < 1 || v > PLAN_MAX_PARTITIONS) {
            plan_stream_free(s);
            return xerr_at(err, XE_INVAL, o->line, o->col, "partitions must be an integer from 1 to %d, not '%s'",
                           PLAN_MAX_PARTITIONS, o->value);
        }
        s->partitions = (int)v;
    }
    if (strchr(s->name, '#')) {
        plan_stream_free(s);
        return xerr_at(err, XE_NAME, st->line, st->col,
                       "a stream's name cannot hold '#', which names a stream's partitions (\"%s#1\")", st->name);
    }
    *out = s;
    return 0;
nomem:
    plan_stream_free(s);
    return xerr_set(err, XE_NOMEM, "out of memory");
}

/* ------------------------------------------------------------------ DAG construction */

const char *plan_op_name(plan_op_kind k)
{
    static const char *n[] = {"SOURCE", "FILTER", "PROJECT", "WINDOW", "AGGREGATE", "JOIN", "HAVING", "SINK", "UNNEST"};
    return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "?";
}

static void op_fini(plan_op *op)
{
    plan_schema_fini(&op->out);
    for (int i = 0; i < op->nkeys; i++) plan_expr_free(op->keys[i]);
    free(op->keys);
    free(op->stream);
    free(op->src_cols);
    plan_expr_free(op->pred);
    for (int i = 0; i < op->nexprs; i++) plan_expr_free(op->exprs[i]);
    free(op->exprs);
    for (int i = 0; i < op->ngroups; i++) plan_expr_free(op->groups[i]);
    free(op->groups);
    for (int i = 0; i < op->naggs; i++) plan_expr_free(op->aggs[i].arg);
    free(op->aggs);
    for (int i = 0; i < op->njoinkeys; i++) {
        plan_expr_free(op->lkeys[i]);
        plan_expr_free(op->rkeys[i]);
    }
    free(op->lkeys);
    free(op->rkeys);
    plan_expr_free(op->residual);
}

void plan_free(plan_dag *d)
{
    if (!d) return;
    for (int i = 0; i < d->nops; i++) op_fini(&d->ops[i]);
    free(d->ops);
    free(d);
}

int plan_task_count(const plan_dag *d)
{
    int n = 0;
    for (int i = 0; i < d->nops; i++) n += d->ops[i].parallelism;
    return n;
}

static plan_op *dag_add(plan_dag *d, plan_op_kind k, int input, plan_edge_kind edge, int parallelism)
{
    plan_op *ops = realloc(d->ops, (size_t)(d->nops + 1) * sizeof *ops);
    if (!ops) return NULL;
    d->ops = ops;
    plan_op *op = &ops[d->nops];
    memset(op, 0, sizeof *op);
    op->id = d->nops++;
    op->kind = k;
    op->parallelism = parallelism;
    op->ts_col = -1;
    op->win_ts_col = -1;
    op->lts_col = op->rts_col = -1;
    op->limit = -1;
    if (input >= 0) {
        op->ninputs = 1;
        op->inputs[0] = input;
        op->in_edge[0] = edge;
    }
    return op;
}

/* A list of bound expressions, used while planning. */
typedef struct pe_list {
    int n, cap;
    plan_expr **v;
} pe_list;

static int pl_add(pe_list *l, plan_expr *e)
{
    if (!e) return XE_NOMEM;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        plan_expr **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) {
            plan_expr_free(e);
            return XE_NOMEM;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = e;
    return 0;
}

static void pl_free(pe_list *l)
{
    for (int i = 0; i < l->n; i++) plan_expr_free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Split a predicate into its top-level AND conjuncts (takes ownership). */
static int split_and(plan_expr *e, pe_list *out)
{
    if (!e) return 0;
    if (e->kind == PE_BINARY && e->op == OP_AND) {
        plan_expr *a = e->args[0], *b = e->args[1];
        e->nargs = 0;
        plan_expr_free(e);
        int rc = split_and(a, out);
        if (rc) { plan_expr_free(b); return rc; }
        return split_and(b, out);
    }
    return pl_add(out, e);
}

/* AND together a list (consumes the list's expressions). */
static plan_expr *join_and(pe_list *l)
{
    plan_expr *acc = NULL;
    for (int i = 0; i < l->n; i++) {
        if (!acc) { acc = l->v[i]; continue; }
        plan_expr *a = pe_new(PE_BINARY, TY_BOOL);
        if (!a) { plan_expr_free(acc); acc = NULL; for (; i < l->n; i++) plan_expr_free(l->v[i]); break; }
        a->op = OP_AND;
        pe_add_arg(a, acc);
        pe_add_arg(a, l->v[i]);
        acc = a;
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
    return acc;
}

/* Planning context for one SELECT. */
typedef struct pctx {
    const ast_select *sel;
    const plan_catalog *cat;
    const plan_opts *opts;
    xerr *err;
    const plan_stream *L, *R;
    bind_scope scope;
    int windowed, has_agg;
    /* pre-aggregation expressions, over the full joined layout */
    pe_list where_l, where_r, where_post; /* pushed to the left / right source, after the join */
    pe_list lkeys, rkeys;                /* equi-join keys */
    pe_list on_rest;                     /* a LEFT JOIN's ON conjuncts beyond the key */
    int temporal, versioned;             /* a stream-table join (as of event time) */
    pe_list groups;
    plan_agg *aggs;
    int naggs;
    /* select list */
    pe_list items;          /* over the full layout (no agg) or over the agg layout */
    plan_schema out;        /* output names and types */
    plan_expr *having;      /* over the agg layout */
    ast_emit emit;          /* this SELECT's emit mode */
    plan_dag *d;            /* the DAG being built (subqueries add to it first) */
    int sub_op[2];          /* a side that is a subquery: the op id of its output, else -1 */
    plan_stream sub[2];     /* ... and its columns, seen as a stream */
    /* CROSS JOIN UNNEST: the element column is side 1 of the scope (after the
     * source's columns); split's arguments are bound over the source alone */
    int has_unnest;
    plan_stream U;
    plan_expr *un_text, *un_sep;
} pctx;

static void pctx_fini(pctx *c)
{
    pl_free(&c->where_l);
    pl_free(&c->where_r);
    pl_free(&c->where_post);
    pl_free(&c->lkeys);
    pl_free(&c->rkeys);
    pl_free(&c->on_rest);
    pl_free(&c->groups);
    for (int i = 0; i < c->naggs; i++) plan_expr_free(c->aggs[i].arg);
    free(c->aggs);
    pl_free(&c->items);
    plan_schema_fini(&c->out);
    plan_expr_free(c->having);
    for (int i = 0; i < 2; i++) plan_schema_fini(&c->sub[i].schema);
    plan_schema_fini(&c->U.schema);
    plan_expr_free(c->un_text);
    plan_expr_free(c->un_sep);
}

/* CROSS JOIN UNNEST(split(text, sep)) AS alias(column): bind split's
 * arguments over the source's columns and declare the element column.
 * split is the one function that makes an array, and an array exists only
 * here, so anything else under UNNEST is an error that says what it got. */
static int plan_unnest(pctx *c)
{
    const ast_unnest *u = c->sel->unnest;
    const ast_expr *x = u->expr;
    bind_scope src = {1, {c->scope.side[0]}, c->windowed, NULL};
    int rc;
    if (c->sel->join)
        return xerr_at(c->err, XE_PLAN, u->line, u->col,
                       "CROSS JOIN UNNEST cannot be combined with JOIN ... WITHIN in one SELECT; unnest in a subquery "
                       "(FROM (SELECT ... CROSS JOIN UNNEST(...) AS t(w)) AS x JOIN ...)");
    if (x->kind != EX_FUNC || strcmp(x->name, "split")) {
        plan_expr *e = NULL;
        if (ast_find_agg(x))
            return xerr_at(c->err, XE_PLAN, x->line, x->col, "aggregate functions are not allowed in UNNEST");
        if ((rc = bind_expr(&src, x, &e, c->err))) return rc;
        sql_type t = e->type;
        plan_expr_free(e);
        return xerr_at(c->err, XE_TYPE, x->line, x->col,
                       "UNNEST needs an array, such as split(line, ' '); got a %s expression", sql_type_name(t));
    }
    int n = x->list ? x->list->n : 0;
    if (n != 2 || x->distinct || x->list->v[0]->kind == EX_STAR)
        return xerr_at(c->err, XE_PLAN, x->line, x->col, "split() takes 2 arguments (text, separator), got %d", n);
    plan_expr **dst[2] = {&c->un_text, &c->un_sep};
    for (int i = 0; i < 2; i++) {
        const ast_expr *a = x->list->v[i];
        if (ast_find_agg(a))
            return xerr_at(c->err, XE_PLAN, a->line, a->col, "aggregate functions are not allowed in UNNEST");
        if ((rc = bind_expr(&src, a, dst[i], c->err))) return rc;
        sql_type t = (*dst[i])->type;
        if (t != TY_TEXT && t != TY_NULL)
            return xerr_at(c->err, XE_TYPE, a->line, a->col, "split() needs TEXT for its %s, got %s",
                           i ? "separator" : "text", sql_type_name(t));
    }
    const char *la = c->sel->from->alias ? c->sel->from->alias : c->L->name;
    if (!strcmp(la, u->alias))
        return xerr_at(c->err, XE_NAME, u->line, u->col, "the source is already called '%s'; give UNNEST another alias",
                       la);
    c->has_unnest = 1;
    c->U.name = u->alias;
    c->U.ts_col = -1;
    if (schema_add(&c->U.schema, u->column, TY_TEXT)) return xerr_set(c->err, XE_NOMEM, "out of memory");
    c->scope.nsides = 2;
    c->scope.side[1] = (bind_side){u->alias, u->alias, &c->U.schema, c->L->schema.ncols, 0};
    return 0;
}

static int plan_select_into(const ast_select *sel, const plan_catalog *cat, const plan_opts *o, plan_dag *d,
                            int top, int *out_op, xerr *err);

typedef struct suggest_arg {
    const char *want;
    char *best;
    int *bestd;
} suggest_arg;

static void suggest_stream(void *a, const plan_stream *s2)
{
    suggest_arg *arg = a;
    int d = str_distance(arg->want, s2->name);
    if (d < *arg->bestd) {
        *arg->bestd = d;
        snprintf(arg->best, 128, "%s", s2->name);
    }
}

static const plan_stream *find_stream(pctx *c, const ast_source *src, int side)
{
    if (src->sub) {
        if (!src->alias) {
            xerr_at(c->err, XE_PLAN, src->line, src->col, "a subquery in FROM needs an alias: (SELECT ...) AS name");
            return NULL;
        }
        if (src->sub->limit >= 0) {
            xerr_at(c->err, XE_PLAN, src->line, src->col, "LIMIT is only allowed on the outermost SELECT");
            return NULL;
        }
        int op;
        if (plan_select_into(src->sub, c->cat, c->opts, c->d, 0, &op, c->err)) return NULL;
        plan_stream *ps = &c->sub[side];
        ps->name = src->alias;
        if (plan_schema_copy(&ps->schema, &c->d->ops[op].out)) {
            xerr_set(c->err, XE_NOMEM, "out of memory");
            return NULL;
        }
        ps->ts_col = c->d->ops[op].ts_col;
        ps->watermark_ms = 0;
        c->sub_op[side] = op;
        return ps;
    }
    const plan_stream *s = c->cat->find(c->cat->ctx, src->stream);
    if (s) return s;
    char best[128] = "";
    int bestd = 3;
    suggest_arg sa = {src->stream, best, &bestd};
    if (c->cat->each) c->cat->each(c->cat->ctx, suggest_stream, &sa);
    if (best[0])
        xerr_at(c->err, XE_NAME, src->line, src->col, "unknown stream '%s'; did you mean '%s'?", src->stream, best);
    else
        xerr_at(c->err, XE_NAME, src->line, src->col, "unknown stream '%s'", src->stream);
    return NULL;
}

/* Is e an equality between one expression over the left side and one over the right? */
static int equi_key(const plan_expr *e, int nl, int ntot, plan_expr **l, plan_expr **r)
{
    if (e->kind != PE_BINARY || e->op != OP_EQ) return 0;
    int ai = 0, ao = 0, bi = 0, bo = 0;
    pe_cols_within(e->args[0], 0, nl, &ai, &ao);
    pe_cols_within(e->args[1], 0, nl, &bi, &bo);
    (void)ntot;
    if (ai && !ao && bo && !bi) { *l = e->args[0]; *r = e->args[1]; return 1; }
    if (bi && !bo && ao && !ai) { *l = e->args[1]; *r = e->args[0]; return 1; }
    return 0;
}

static const char *item_name(const ast_select_item *it, int idx, char *buf, size_t n)
{
    if (it->alias) return it->alias;
    if (it->expr->kind == EX_COL) return it->expr->name;
    if (it->expr->kind == EX_FUNC) return it->expr->name;
    snprintf(buf, n, "col%d", idx + 1);
    return buf;
}

#define WCOL_START (-1)
#define WCOL_END (-2)

/* window_start / window_end sit after every aggregate, known only at the end */
static void fix_window_cols(plan_expr *e, int start)
{
    if (!e) return;
    if (e->kind == PE_COL && e->col == WCOL_START) e->col = start;
    else if (e->kind == PE_COL && e->col == WCOL_END) e->col = start + 1;
    for (int i = 0; i < e->nargs; i++) fix_window_cols(e->args[i], start);
}

/* Rewrite a select-list or HAVING expression over the aggregate's output
 * layout [groups..., aggs..., window_start, window_end]. */
static int rewrite_post(pctx *c, const ast_expr *x, plan_expr **out)
{
    xerr *err = c->err;
    int rc;
    *out = NULL;
    /* before its arguments, which would be blamed for not being grouped */
    if (x->kind == EX_FUNC && !ast_is_agg(x) && (rc = bind_func_known(x, err))) return rc;
    if (ast_is_agg(x)) {
        plan_agg a = {0};
        int n = x->list ? x->list->n : 0;
        if (n != 1) return xerr_at(err, XE_PLAN, x->line, x->col, "%s() takes exactly one argument", x->name);
        const ast_expr *arg = x->list->v[0];
        const ast_expr *inner = ast_find_agg(arg);
        if (inner) return xerr_at(err, XE_PLAN, inner->line, inner->col, "aggregate calls cannot be nested");
        if (!strcmp(x->name, "count")) {
            if (arg->kind == EX_STAR) a.fn = FN_COUNT_STAR;
            else a.fn = x->distinct ? FN_COUNT_DISTINCT : FN_COUNT;
        } else if (x->distinct)
            return xerr_at(err, XE_PLAN, x->line, x->col, "DISTINCT is only supported in COUNT(DISTINCT x)");
        else if (!strcmp(x->name, "sum")) a.fn = FN_SUM;
        else if (!strcmp(x->name, "avg")) a.fn = FN_AVG;
        else if (!strcmp(x->name, "min")) a.fn = FN_MIN;
        else a.fn = FN_MAX;
        if (a.fn != FN_COUNT_STAR) {
            if (arg->kind == EX_STAR)
                return xerr_at(err, XE_PLAN, arg->line, arg->col, "only COUNT accepts '*'");
            if ((rc = bind_expr(&c->scope, arg, &a.arg, err))) return rc;
        }
        sql_type at = a.arg ? a.arg->type : TY_NULL;
        switch (a.fn) {
        case FN_COUNT_STAR: case FN_COUNT: case FN_COUNT_DISTINCT: a.type = TY_BIGINT; break;
        case FN_SUM:
            if (!ty_numeric(at) && at != TY_NULL) goto badarg;
            a.type = at == TY_DOUBLE ? TY_DOUBLE : TY_BIGINT;
            break;
        case FN_AVG:
            if (!ty_numeric(at) && at != TY_NULL) goto badarg;
            a.type = TY_DOUBLE;
            break;
        default:
            if (at == TY_BOOL) goto badarg;
            a.type = at == TY_NULL ? TY_BIGINT : at == TY_INT ? TY_INT : at;
            break;
        }
        /* reuse an identical aggregate */
        int idx;
        for (idx = 0; idx < c->naggs; idx++)
            if (c->aggs[idx].fn == a.fn && pe_equal(c->aggs[idx].arg, a.arg)) break;
        if (idx == c->naggs) {
            plan_agg *v = realloc(c->aggs, (size_t)(c->naggs + 1) * sizeof *v);
            if (!v) { plan_expr_free(a.arg); return xerr_set(err, XE_NOMEM, "out of memory"); }
            c->aggs = v;
            c->aggs[c->naggs++] = a;
        } else
            plan_expr_free(a.arg);
        plan_expr *e = pe_new(PE_COL, c->aggs[idx].type);
        if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
        e->col = c->groups.n + idx;
        *out = e;
        return 0;
    badarg:
        plan_expr_free(a.arg);
        return xerr_at(err, XE_TYPE, arg->line, arg->col, "%s() needs a number, got %s", x->name, sql_type_name(at));
    }
    if (x->kind == EX_COL && !x->qual && (!strcmp(x->name, "window_start") || !strcmp(x->name, "window_end"))) {
        int pos;
        sql_type t;
        xerr tmp;
        if (resolve_col_public(&c->scope, x, &pos, &t, &tmp) != 0) {
            if (!c->windowed)
                return xerr_at(err, XE_PLAN, x->line, x->col, "'%s' needs a WINDOW clause", x->name);
            plan_expr *e = pe_new(PE_COL, TY_TIMESTAMP);
            if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
            /* the aggregate count is not final yet: mark, fix in fix_window_cols */
            e->col = x->name[7] == 'e' ? WCOL_END : WCOL_START;
            *out = e;
            return 0;
        }
    }
    /* Does the whole expression match a GROUP BY expression? */
    if (!ast_find_agg(x) && x->kind != EX_LIT) {
        plan_expr *b = NULL;
        xerr tmp;
        if (bind_expr(&c->scope, x, &b, &tmp) == 0) {
            for (int g = 0; g < c->groups.n; g++)
                if (pe_equal(b, c->groups.v[g])) {
                    plan_expr *e = pe_new(PE_COL, b->type);
                    plan_expr_free(b);
                    if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
                    e->col = g;
                    *out = e;
                    return 0;
                }
            plan_expr_free(b);
        } else if (x->kind == EX_COL)
            return bind_expr(&c->scope, x, out, err); /* report the unknown column */
    }
    if (x->kind == EX_COL)
        return xerr_at(err, XE_PLAN, x->line, x->col,
                       "column '%s' must appear in GROUP BY or be used in an aggregate function", x->name);
    /* Otherwise rebuild the node with rewritten children: bind a shallow copy
     * whose children are placeholders, then splice in the rewritten ones. */
    if (x->kind == EX_LIT) return bind_expr(&c->scope, x, out, err);
    /* Collect children */
    const ast_expr *kids[3] = {x->a, x->b, x->c};
    int nk = x->list ? x->list->n : 0;
    /* Bind through a scope of synthetic columns: each child becomes column i. */
    int total = 3 + nk;
    plan_expr **sub = calloc((size_t)total, sizeof *sub);
    plan_column *cols = calloc((size_t)total, sizeof *cols);
    char (*names)[16] = calloc((size_t)total, 16);
    ast_expr *copy = NULL, *fake = NULL;
    ast_exprs fake_list = {0};
    rc = 0;
    if (!sub || !cols || !names) { rc = xerr_set(err, XE_NOMEM, "out of memory"); goto done; }
    for (int i = 0; i < total; i++) {
        const ast_expr *k = i < 3 ? kids[i] : x->list->v[i - 3];
        snprintf(names[i], 16, "#%d", i);
        cols[i].name = names[i];
        if (!k) continue;
        if (k->kind == EX_STAR) { cols[i].type = TY_NULL; continue; }
        if ((rc = rewrite_post(c, k, &sub[i]))) goto done;
        cols[i].type = sub[i]->type;
    }
    {
        plan_schema fs = {total, cols};
        bind_scope fsc = {1, {{"", NULL, &fs, 0, 0}}, 0, NULL};
        copy = calloc(1, sizeof *copy);
        fake = calloc((size_t)total, sizeof *fake);
        if (!copy || !fake) { rc = xerr_set(err, XE_NOMEM, "out of memory"); goto done; }
        *copy = *x;
        for (int i = 0; i < total; i++) {
            fake[i].kind = EX_COL;
            fake[i].name = names[i];
            const ast_expr *k = i < 3 ? kids[i] : x->list->v[i - 3];
            if (k) { fake[i].line = k->line; fake[i].col = k->col; if (k->kind == EX_STAR) fake[i] = *k; }
        }
        copy->a = x->a ? &fake[0] : NULL;
        copy->b = x->b ? &fake[1] : NULL;
        copy->c = x->c ? &fake[2] : NULL;
        if (nk) {
            fake_list.n = fake_list.cap = nk;
            fake_list.v = calloc((size_t)nk, sizeof *fake_list.v);
            if (!fake_list.v) { rc = xerr_set(err, XE_NOMEM, "out of memory"); goto done; }
            for (int i = 0; i < nk; i++) fake_list.v[i] = &fake[3 + i];
            copy->list = &fake_list;
        }
        plan_expr *shell = NULL;
        if ((rc = bind_expr(&fsc, copy, &shell, err))) goto done;
        /* substitute placeholders by the rewritten children */
        rc = pe_substitute(&shell, sub, total);
        if (rc) { plan_expr_free(shell); rc = xerr_set(err, XE_NOMEM, "out of memory"); goto done; }
        *out = shell;
    }
done:
    for (int i = 0; sub && i < total; i++) plan_expr_free(sub[i]);
    free(sub);
    free(cols);
    free(names);
    free(copy);
    free(fake);
    free(fake_list.v);
    return rc;
}

static int plan_select_list(pctx *c)
{
    const ast_select *sel = c->sel;
    xerr *err = c->err;
    int rc;
    char buf[32];
    for (int i = 0; i < sel->items->n; i++) {
        const ast_select_item *it = &sel->items->v[i];
        if (it->star) {
            if (c->has_agg)
                return xerr_at(err, XE_PLAN, sel->from->line, sel->from->col,
                               "SELECT * cannot be combined with GROUP BY or aggregates; list the columns");
            int found = 0;
            for (int s = 0; s < c->scope.nsides; s++) {
                const bind_side *sd = &c->scope.side[s];
                if (it->star_qual && !((sd->alias && !strcmp(sd->alias, it->star_qual)) ||
                                       (!strcmp(sd->name, it->star_qual))))
                    continue;
                found = 1;
                for (int k = sd->hidden; k < sd->schema->ncols; k++) {
                    plan_expr *e = pe_new(PE_COL, sd->schema->cols[k].type);
                    if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
                    e->col = sd->offset + k;
                    if ((rc = pl_add(&c->items, e)) ||
                        (rc = schema_add(&c->out, sd->schema->cols[k].name, sd->schema->cols[k].type)))
                        return xerr_set(err, rc, "out of memory");
                }
            }
            if (!found)
                return xerr_at(err, XE_NAME, sel->from->line, sel->from->col, "unknown stream or alias '%s' in '%s.*'",
                               it->star_qual, it->star_qual);
            continue;
        }
        plan_expr *e = NULL;
        if (c->has_agg) rc = rewrite_post(c, it->expr, &e);
        else {
            const ast_expr *ag = ast_find_agg(it->expr);
            if (ag) return xerr_at(err, XE_PLAN, ag->line, ag->col, "internal: aggregate in a non-aggregate query");
            if (it->expr->kind == EX_COL && !it->expr->qual &&
                (!strcmp(it->expr->name, "window_start") || !strcmp(it->expr->name, "window_end")) &&
                plan_schema_find(c->L ? &c->L->schema : &c->out, it->expr->name) < 0)
                return xerr_at(err, XE_PLAN, it->expr->line, it->expr->col,
                               "'%s' can only be selected in an aggregation over a WINDOW", it->expr->name);
            rc = bind_expr(&c->scope, it->expr, &e, err);
        }
        if (rc) return rc;
        if ((rc = pl_add(&c->items, e))) return xerr_set(err, rc, "out of memory");
        if ((rc = schema_add(&c->out, item_name(it, i, buf, sizeof buf), e->type)))
            return xerr_set(err, rc, "out of memory");
    }
    return 0;
}

static int plan_where_and_join(pctx *c)
{
    const ast_select *sel = c->sel;
    xerr *err = c->err;
    int rc, nl = c->L->schema.ncols;
    pe_list conj = {0};
    if (sel->where) {
        const ast_expr *ag = ast_find_agg(sel->where);
        if (ag)
            return xerr_at(err, XE_PLAN, ag->line, ag->col,
                           "aggregate functions are not allowed in WHERE; use HAVING");
        plan_expr *w;
        if ((rc = bind_expr(&c->scope, sel->where, &w, err))) return rc;
        if (w->type != TY_BOOL && w->type != TY_NULL) {
            sql_type wt = w->type;
            plan_expr_free(w);
            return xerr_at(err, XE_TYPE, sel->where->line, sel->where->col, "WHERE needs a BOOLEAN condition, got %s",
                           sql_type_name(wt));
        }
        if ((rc = split_and(w, &conj))) return xerr_set(err, rc, "out of memory");
    }
    /* Pushdown: conjuncts over one side only go below the join (or the
     * unnest, whose element column is the other side). */
    for (int i = 0; i < conj.n; i++) {
        int in = 0, outside = 0;
        pe_cols_within(conj.v[i], 0, nl, &in, &outside);
        /* never below a table's side: a filtered-out update would leave
         * the key's old row standing */
        pe_list *dst = !outside ? &c->where_l : c->R && !in && !c->temporal ? &c->where_r : &c->where_post;
        rc = pl_add(dst, conj.v[i]);
        conj.v[i] = NULL;
        if (rc) { pl_free(&conj); return xerr_set(err, rc, "out of memory"); }
    }
    pl_free(&conj);
    if (!c->R) return 0;
    int ntot = nl + c->R->schema.ncols;
    /* Join condition: equalities between the sides are keys; the rest is residual. */
    const ast_expr *on = sel->join_on;
    if (ast_find_agg(on))
        return xerr_at(err, XE_PLAN, on->line, on->col, "aggregate functions are not allowed in ON");
    plan_expr *w;
    if ((rc = bind_expr(&c->scope, on, &w, err))) return rc;
    if (w->type != TY_BOOL) {
        plan_expr_free(w);
        return xerr_at(err, XE_TYPE, on->line, on->col, "ON needs a BOOLEAN condition");
    }
    if ((rc = split_and(w, &conj))) return xerr_set(err, rc, "out of memory");
    unsigned covered = 0; /* a table's key columns ON equates */
    for (int i = 0; i < conj.n; i++) {
        plan_expr *l, *r;
        int key = equi_key(conj.v[i], nl, ntot, &l, &r);
        if (key && c->temporal) {
            /* a table's side of a key is one of its PRIMARY KEY's columns */
            int k = -1;
            for (int j = 0; r->kind == PE_COL && j < c->R->npkey; j++)
                if (r->col == nl + c->R->pkey[j] && !(covered & (1u << j))) k = j;
            if (k < 0) key = 0;
            else covered |= 1u << k;
        }
        if (key) {
            plan_expr *ld = pe_dup(l), *rd = pe_dup(r);
            if (!ld || !rd || pl_add(&c->lkeys, ld) || pl_add(&c->rkeys, rd)) {
                pl_free(&conj);
                return xerr_set(err, XE_NOMEM, "out of memory");
            }
            plan_expr_free(conj.v[i]);
        } else if ((rc = pl_add(c->temporal && sel->join_left ? &c->on_rest : &c->where_post, conj.v[i]))) {
            conj.v[i] = NULL;
            pl_free(&conj);
            return xerr_set(err, rc, "out of memory");
        }
        conj.v[i] = NULL;
    }
    pl_free(&conj);
    if (c->temporal && covered != (1u << c->R->npkey) - 1) {
        char miss[256] = "";
        for (int j = 0; j < c->R->npkey; j++)
            if (!(covered & (1u << j))) {
                size_t n = strlen(miss);
                snprintf(miss + n, sizeof miss - n, "%s%s", n ? ", " : "", c->R->schema.cols[c->R->pkey[j]].name);
            }
        return xerr_at(err, XE_PLAN, on->line, on->col,
                       "a join with table '%s' must equate its whole PRIMARY KEY with the stream's columns in ON "
                       "(a row of the table is the newest of its key); missing: %s",
                       c->R->name, miss);
    }
    return 0;
}

/* FROM stream [LEFT] JOIN table ON ... (no WITHIN): each stream row meets
 * the table's row of its key, as of the row's event time when both have
 * one, else as the table is when the row arrives. */
static int plan_temporal(pctx *c)
{
    const ast_select *sel = c->sel;
    if (c->L->changelog)
        return xerr_at(c->err, XE_PLAN, sel->from->line, sel->from->col,
                       "'%s' is a table: a stream-table join reads the stream on the left and the table on the right "
                       "(FROM stream JOIN table ON ...)",
                       c->L->name);
    if (!c->R->changelog)
        return xerr_at(c->err, XE_PLAN, sel->join->line, sel->join->col,
                       "'%s' is a stream: a join of two streams needs a time bound (JOIN %s ON ... WITHIN 10 SECONDS); "
                       "a join without WITHIN reads a table on its right",
                       c->R->name, c->R->name);
    if (c->R->npkey <= 0 || c->R->npkey > 8)
        return xerr_at(c->err, XE_PLAN, sel->join->line, sel->join->col, "table '%s' has no PRIMARY KEY", c->R->name);
    c->temporal = 1;
    c->versioned = c->L->ts_col >= 0 && c->R->ts_col >= 0;
    c->scope.side[1].hidden = 1; /* its op */
    return 0;
}

static int plan_aggregation(pctx *c)
{
    const ast_select *sel = c->sel;
    int rc;
    for (int i = 0; sel->group_by && i < sel->group_by->n; i++) {
        const ast_expr *g = sel->group_by->v[i];
        const ast_expr *ag = ast_find_agg(g);
        if (ag) return xerr_at(c->err, XE_PLAN, ag->line, ag->col, "aggregate functions are not allowed in GROUP BY");
        plan_expr *e;
        /* GROUP BY may name a select-list alias or position */
        if (g->kind == EX_LIT && g->lit.type == TY_BIGINT) {
            long k = (long)g->lit.i;
            if (k < 1 || k > sel->items->n || sel->items->v[k - 1].star)
                return xerr_at(c->err, XE_PLAN, g->line, g->col, "GROUP BY position %ld is not in the select list", k);
            g = sel->items->v[k - 1].expr;
        } else if (g->kind == EX_COL && !g->qual) {
            int pos;
            sql_type t;
            xerr tmp;
            if (resolve_col_public(&c->scope, g, &pos, &t, &tmp) != 0)
                for (int k = 0; k < sel->items->n; k++)
                    if (sel->items->v[k].alias && !strcmp(sel->items->v[k].alias, g->name)) {
                        g = sel->items->v[k].expr;
                        break;
                    }
        }
        if ((rc = bind_expr(&c->scope, g, &e, c->err))) return rc;
        if ((rc = pl_add(&c->groups, e))) return xerr_set(c->err, rc, "out of memory");
    }
    if ((rc = plan_select_list(c))) return rc;
    if (sel->having) {
        if ((rc = rewrite_post(c, sel->having, &c->having))) return rc;
        if (c->having->type != TY_BOOL)
            return xerr_at(c->err, XE_TYPE, sel->having->line, sel->having->col, "HAVING needs a BOOLEAN condition");
    }
    for (int i = 0; i < c->items.n; i++) fix_window_cols(c->items.v[i], c->groups.n + c->naggs);
    fix_window_cols(c->having, c->groups.n + c->naggs);
    return 0;
}

/* Build the operators once every expression is bound. */
static int build_dag(pctx *c, plan_dag *d, int top, int *out_op)
{
    xerr *err = c->err;
    int nl = c->L->schema.ncols, nr = c->R ? c->R->schema.ncols : c->has_unnest, ntot = nl + nr;
    int p = c->opts && c->opts->parallelism > 0 ? c->opts->parallelism : 1;

    /* Projection pruning: which source columns does anything use? */
    unsigned char *used = calloc((size_t)ntot + 1, 1);
    int *map = calloc((size_t)ntot + 1, sizeof *map);
    if (!used || !map) { free(used); free(map); return xerr_set(err, XE_NOMEM, "out of memory"); }
    pe_list *pre[] = {&c->where_l, &c->where_r, &c->where_post, &c->lkeys, &c->rkeys, &c->on_rest, &c->groups};
    for (size_t k = 0; k < sizeof pre / sizeof pre[0]; k++)
        for (int i = 0; i < pre[k]->n; i++) pe_mark_cols(pre[k]->v[i], used);
    for (int i = 0; i < c->naggs; i++) pe_mark_cols(c->aggs[i].arg, used);
    if (!c->has_agg)
        for (int i = 0; i < c->items.n; i++) pe_mark_cols(c->items.v[i], used);
    pe_mark_cols(c->un_text, used);
    pe_mark_cols(c->un_sep, used);
    if (c->has_unnest) used[nl] = 1; /* the element is the unnest's output, never pruned */
    if (c->L->ts_col >= 0) used[c->L->ts_col] = 1;
    if (c->L->changelog && c->sub_op[0] < 0) used[0] = 1;
    if (c->R && c->R->changelog && c->sub_op[1] < 0) used[nl] = 1;
    if (c->R && c->R->ts_col >= 0) used[nl + c->R->ts_col] = 1;
    /* a subquery's output is not pruned: every column of that side stays */
    for (int i = 0; c->sub_op[0] >= 0 && i < nl; i++) used[i] = 1;
    for (int i = nl; c->sub_op[1] >= 0 && i < ntot; i++) used[i] = 1;
    int nlu = 0, nru = 0;
    for (int i = 0; i < ntot; i++) {
        if (!used[i]) { map[i] = -1; continue; }
        map[i] = i < nl ? nlu++ : nlu + nru++;
    }
    for (size_t k = 0; k < sizeof pre / sizeof pre[0]; k++)
        for (int i = 0; i < pre[k]->n; i++) pe_remap(pre[k]->v[i], map);
    for (int i = 0; i < c->naggs; i++) pe_remap(c->aggs[i].arg, map);
    if (!c->has_agg)
        for (int i = 0; i < c->items.n; i++) pe_remap(c->items.v[i], map);
    if (c->un_text) pe_remap(c->un_text, map);
    if (c->un_sep) pe_remap(c->un_sep, map);

    int rc = XE_NOMEM;
    plan_op *op;
    /* Left source */
    const plan_stream *sides[2] = {c->L, c->R};
    int last[2] = {-1, -1};
    for (int s = 0; s < (c->R ? 2 : 1); s++) {
        const plan_stream *st = sides[s];
        int base = s ? nl : 0;
        if (c->sub_op[s] >= 0) {
            last[s] = c->sub_op[s];
            goto side_filter;
        }
        if (!(op = dag_add(d, PO_SOURCE, -1, EDGE_FORWARD, st->partitions > 1 ? st->partitions : 1))) goto nomem;
        if (!(op->stream = strdup(st->name))) goto nomem;
        op->watermark_ms = st->watermark_ms;
        op->src_cols = malloc((size_t)st->schema.ncols * sizeof(int) + 1);
        if (!op->src_cols) goto nomem;
        for (int i = 0; i < st->schema.ncols; i++) {
            if (!used[base + i]) continue;
            op->src_cols[op->nsrc_cols++] = i;
            if (schema_add(&op->out, st->schema.cols[i].name, st->schema.cols[i].type)) goto nomem;
            if (i == st->ts_col) op->ts_col = op->nsrc_cols - 1;
        }
        last[s] = op->id;
    side_filter:;
        pe_list *w = s ? &c->where_r : &c->where_l;
        if (w->n) {
            int shift = s ? nlu : 0;
            int *m2 = malloc((size_t)(ntot + 1) * sizeof *m2);
            if (!m2) goto nomem;
            for (int i = 0; i < ntot; i++) m2[i] = i - shift;
            for (int i = 0; i < w->n; i++) pe_remap(w->v[i], m2);
            free(m2);
            plan_expr *pred = join_and(w);
            int src = last[s];
            if (!(op = dag_add(d, PO_FILTER, src, EDGE_FORWARD, d->ops[src].parallelism))) { plan_expr_free(pred); goto nomem; }
            op->pred = pred;
            if (plan_schema_copy(&op->out, &d->ops[src].out)) goto nomem;
            op->ts_col = d->ops[src].ts_col;
            last[s] = op->id;
        }
    }
    int cur = last[0];
    if (c->has_unnest) {
        /* source [-> filter] -> unnest [-> filter over the element] */
        int from = cur;
        if (!(op = dag_add(d, PO_UNNEST, from, EDGE_FORWARD, d->ops[from].parallelism))) goto nomem;
        if (!(op->exprs = calloc(2, sizeof *op->exprs))) goto nomem;
        op->nexprs = 2;
        op->exprs[0] = c->un_text;
        op->exprs[1] = c->un_sep;
        c->un_text = c->un_sep = NULL;
        if (plan_schema_copy(&op->out, &d->ops[from].out)) goto nomem;
        const char *col = c->U.schema.cols[0].name;
        char nm[160];
        if (plan_schema_find(&op->out, col) >= 0) {
            snprintf(nm, sizeof nm, "%s_%s", c->U.name, col);
            col = nm;
        }
        if (schema_add(&op->out, col, TY_TEXT)) goto nomem;
        op->ts_col = d->ops[from].ts_col;
        cur = op->id;
        if (c->where_post.n) {
            plan_expr *pred = join_and(&c->where_post);
            int uid = op->id;
            if (!(op = dag_add(d, PO_FILTER, uid, EDGE_FORWARD, d->ops[uid].parallelism))) { plan_expr_free(pred); goto nomem; }
            op->pred = pred;
            if (plan_schema_copy(&op->out, &d->ops[uid].out)) goto nomem;
            op->ts_col = d->ops[uid].ts_col;
            cur = op->id;
        }
    }
    if (c->R) {
        int keyed = c->lkeys.n > 0;
        int jp = keyed ? p : 1;
        if (!(op = dag_add(d, PO_JOIN, last[0], keyed ? EDGE_HASH : EDGE_GATHER, jp))) goto nomem;
        op->ninputs = 2;
        op->inputs[1] = last[1];
        op->in_edge[1] = keyed ? EDGE_HASH : EDGE_GATHER;
        op->within_ms = c->sel->within_ms;
        op->temporal = c->temporal;
        op->versioned = c->versioned;
        op->outer = c->sel->join_left;
        if (c->on_rest.n) op->residual = join_and(&c->on_rest);
        op->lts_col = d->ops[last[0]].ts_col;
        op->rts_col = d->ops[last[1]].ts_col;
        op->njoinkeys = c->lkeys.n;
        op->lkeys = c->lkeys.v;
        op->rkeys = c->rkeys.v;
        int *m2 = malloc((size_t)(ntot + 1) * sizeof *m2);
        if (!m2) goto nomem;
        for (int i = 0; i < ntot; i++) m2[i] = i - nlu;
        for (int i = 0; i < c->rkeys.n; i++) pe_remap(c->rkeys.v[i], m2);
        free(m2);
        c->lkeys.v = c->rkeys.v = NULL;
        c->lkeys.n = c->rkeys.n = 0;
        /* the key is the left key (the right side is partitioned the same way) */
        op->nkeys = op->njoinkeys;
        if (op->nkeys) {
            op->keys = calloc((size_t)op->nkeys, sizeof *op->keys);
            if (!op->keys) goto nomem;
            for (int i = 0; i < op->nkeys; i++)
                if (!(op->keys[i] = pe_dup(op->lkeys[i]))) goto nomem;
        }
        for (int s = 0; s < 2; s++) {
            const plan_schema *in = &d->ops[op->inputs[s]].out;
            for (int i = 0; i < in->ncols; i++) {
                /* qualify clashing names so the output schema stays unambiguous */
                char nm[160];
                const char *base = in->cols[i].name;
                if (s == 1 && plan_schema_find(&op->out, base) >= 0) {
                    snprintf(nm, sizeof nm, "%s_%s", c->sel->join->alias ? c->sel->join->alias : c->R->name, base);
                    base = nm;
                }
                if (schema_add(&op->out, base, in->cols[i].type)) goto nomem;
            }
        }
        op->ts_col = op->lts_col;
        cur = op->id;
        if (c->where_post.n) {
            plan_expr *pred = join_and(&c->where_post);
            int jid = op->id;
            if (!(op = dag_add(d, PO_FILTER, jid, EDGE_FORWARD, jp))) { plan_expr_free(pred); goto nomem; }
            op->pred = pred;
            if (plan_schema_copy(&op->out, &d->ops[jid].out)) goto nomem;
            op->ts_col = d->ops[jid].ts_col;
            cur = op->id;
        }
    }
    int in_op = cur; /* d->ops moves when it grows: index, never a pointer */
#define in_schema (&d->ops[in_op].out)
    if (c->has_agg) {
        int keyed = c->groups.n > 0;
        int ap = keyed ? p : 1;
        int win_ts = d->ops[cur].ts_col;
        /* Over a partitioned stream the window assignment stays with each
         * partition's chain (a task per partition, forward) and the exchange
         * comes after it: every task up to the exchange then carries one
         * partition's positions, as fault tolerance needs (exec/ops.c). */
        int pw = 0;
        for (int u = cur;; u = d->ops[u].inputs[0]) {
            if (d->ops[u].kind == PO_SOURCE) { pw = d->ops[u].parallelism > 1 ? d->ops[u].parallelism : 0; break; }
            if (d->ops[u].kind != PO_FILTER && d->ops[u].kind != PO_UNNEST && d->ops[u].kind != PO_PROJECT) break;
        }
        if (!(op = pw ? dag_add(d, PO_WINDOW, cur, EDGE_FORWARD, pw)
                      : dag_add(d, PO_WINDOW, cur, keyed ? EDGE_HASH : EDGE_GATHER, ap)))
            goto nomem;
        op->window = c->sel->window;
        op->win_ts_col = win_ts;
        if (plan_schema_copy(&op->out, in_schema)) goto nomem;
        op->ts_col = win_ts;
        op->nkeys = c->groups.n;
        if (keyed) {
            op->keys = calloc((size_t)op->nkeys, sizeof *op->keys);
            if (!op->keys) goto nomem;
            for (int i = 0; i < op->nkeys; i++)
                if (!(op->keys[i] = pe_dup(c->groups.v[i]))) goto nomem;
        }
        int wid = op->id;
        if (!(op = dag_add(d, PO_AGGREGATE, wid, pw ? (keyed ? EDGE_HASH : EDGE_GATHER) : EDGE_FORWARD, ap))) goto nomem;
        op->window = c->sel->window;
        op->win_ts_col = win_ts;
        op->emit = c->emit;
        op->ngroups = c->groups.n;
        op->groups = c->groups.v;
        c->groups.v = NULL;
        c->groups.n = 0;
        op->naggs = c->naggs;
        op->aggs = c->aggs;
        c->aggs = NULL;
        c->naggs = 0;
        op->nkeys = d->ops[wid].nkeys;
        if (op->nkeys) {
            op->keys = calloc((size_t)op->nkeys, sizeof *op->keys);
            if (!op->keys) goto nomem;
            for (int i = 0; i < op->nkeys; i++)
                if (!(op->keys[i] = pe_dup(d->ops[wid].keys[i]))) goto nomem;
        }
        /* output layout: groups, aggs, window_start, window_end */
        char nm[48];
        for (int i = 0; i < op->ngroups; i++) {
            snprintf(nm, sizeof nm, "group%d", i + 1);
            if (op->groups[i]->kind == PE_COL && op->groups[i]->col < in_schema->ncols)
                snprintf(nm, sizeof nm, "%s", in_schema->cols[op->groups[i]->col].name);
            if (schema_add(&op->out, nm, op->groups[i]->type)) goto nomem;
        }
        for (int i = 0; i < op->naggs; i++) {
            /* name the column after the aggregate, as EXPLAIN shows it */
            sbuf an;
            sbuf_init(&an);
            if (op->aggs[i].fn == FN_COUNT_STAR) sbuf_adds(&an, "count(*)");
            else {
                sbuf_printf(&an, "%s(%s", op->aggs[i].fn == FN_COUNT_DISTINCT ? "count" : plan_fn_name(op->aggs[i].fn),
                            op->aggs[i].fn == FN_COUNT_DISTINCT ? "DISTINCT " : "");
                plan_expr_print(op->aggs[i].arg, in_schema, &an);
                sbuf_addc(&an, ')');
            }
            int bad = schema_add(&op->out, an.p ? an.p : "agg", op->aggs[i].type);
            sbuf_fini(&an);
            if (bad) goto nomem;
        }
        if (schema_add(&op->out, "window_start", TY_TIMESTAMP) || schema_add(&op->out, "window_end", TY_TIMESTAMP))
            goto nomem;
        op->ts_col = op->out.ncols - 1;
        cur = op->id;
        if (c->having) {
            int aid = op->id;
            if (!(op = dag_add(d, PO_HAVING, aid, EDGE_FORWARD, ap))) goto nomem;
            op->pred = c->having;
            c->having = NULL;
            if (plan_schema_copy(&op->out, &d->ops[aid].out)) goto nomem;
            op->ts_col = d->ops[aid].ts_col;
            cur = op->id;
        }
    }
#undef in_schema
    /* Final projection */
    int pp = d->ops[cur].parallelism;
    int from = cur;
    if (!(op = dag_add(d, PO_PROJECT, from, EDGE_FORWARD, pp))) goto nomem;
    op->nexprs = c->items.n;
    op->exprs = c->items.v;
    c->items.v = NULL;
    c->items.n = 0;
    if (plan_schema_copy(&op->out, &c->out)) goto nomem;
    {
        /* the event time flows through the projection when it is selected;
         * for an aggregate, window_end (or else window_start) carries it */
        const plan_op *in = &d->ops[from];
        int pts = in->ts_col, alt = -1;
        if (in->kind == PO_AGGREGATE || in->kind == PO_HAVING) alt = in->out.ncols - 2;
        for (int i = 0; i < op->nexprs && op->ts_col < 0; i++)
            if (op->exprs[i]->kind == PE_COL && op->exprs[i]->col == pts) op->ts_col = i;
        for (int i = 0; i < op->nexprs && op->ts_col < 0 && alt >= 0; i++)
            if (op->exprs[i]->kind == PE_COL && op->exprs[i]->col == alt) {
                op->ts_col = i;
                /* tell the aggregate: its rows' time is their window's start */
                int agg = in->kind == PO_HAVING ? in->inputs[0] : from;
                d->ops[agg].time_is_start = 1;
            }
    }
    cur = op->id;
    if (!top) {
        *out_op = cur;
        rc = 0;
        goto out;
    }
    if (!(op = dag_add(d, PO_SINK, cur, pp > 1 ? EDGE_GATHER : EDGE_FORWARD, 1))) goto nomem;
    op->limit = c->sel->limit;
    op->emit = d->emit;
    if (plan_schema_copy(&op->out, &c->out)) goto nomem;
    d->sink = op->id;
    rc = 0;
    goto out;
nomem:
    rc = xerr_set(err, XE_NOMEM, "out of memory");
out:
    free(used);
    free(map);
    return rc;
}

static int plan_select_into(const ast_select *sel, const plan_catalog *cat, const plan_opts *o, plan_dag *d,
                            int top, int *out_op, xerr *err)
{
    pctx c;
    memset(&c, 0, sizeof c);
    c.sel = sel;
    c.cat = cat;
    c.opts = o;
    c.err = err;
    c.d = d;
    c.sub_op[0] = c.sub_op[1] = -1;
    int rc = 0;
    if (!(c.L = find_stream(&c, sel->from, 0))) goto fail;
    if (sel->join && !(c.R = find_stream(&c, sel->join, 1))) goto fail;
    c.scope.nsides = 1;
    c.scope.side[0] = (bind_side){c.L->name, sel->from->alias, &c.L->schema, 0, 0};
    if (sel->unnest && (rc = plan_unnest(&c))) goto fail;
    if (c.R) {
        const char *la = sel->from->alias ? sel->from->alias : c.L->name;
        const char *ra = sel->join->alias ? sel->join->alias : c.R->name;
        if (!strcmp(la, ra))
            { rc = xerr_at(err, XE_NAME, sel->join->line, sel->join->col,
                           "both sides of the join are called '%s'; give one an alias", la); goto fail; }
        c.scope.nsides = 2;
        c.scope.side[1] = (bind_side){c.R->name, sel->join->alias, &c.R->schema, c.L->schema.ncols, 0};
        if (sel->within_ms < 0) {
            if ((rc = plan_temporal(&c))) goto fail;
        } else if (sel->join_left) {
            rc = xerr_at(err, XE_PLAN, sel->join->line, sel->join->col,
                         "LEFT JOIN ... WITHIN is not supported: a LEFT JOIN reads a table on its right, without WITHIN");
            goto fail;
        } else if (c.L->ts_col < 0 || c.R->ts_col < 0) {
            const ast_source *s = c.L->ts_col < 0 ? sel->from : sel->join;
            { rc = xerr_at(err, XE_PLAN, s->line, s->col,
                           "a join WITHIN a time bound needs event time: stream '%s' has no timestamp column "
                           "(declare it WITH (timestamp = 'col'))",
                           c.L->ts_col < 0 ? c.L->name : c.R->name); goto fail; }
        }
    }
    c.windowed = sel->window.kind != WIN_NONE;
    c.scope.windowed = c.windowed;
    c.scope.items = sel->items;
    c.has_agg = sel->group_by != NULL;
    for (int i = 0; !c.has_agg && i < sel->items->n; i++)
        if (!sel->items->v[i].star && ast_find_agg(sel->items->v[i].expr)) c.has_agg = 1;
    if (!c.has_agg && sel->having && ast_find_agg(sel->having)) c.has_agg = 1;
    if (c.windowed) {
        if (c.L->ts_col < 0)
            { rc = xerr_at(err, XE_PLAN, sel->from->line, sel->from->col,
                           "stream '%s' has no event-time column, so it cannot be windowed; declare one with "
                           "WITH (timestamp = 'col')",
                           c.L->name); goto fail; }
        if (!c.has_agg)
            { rc = xerr_at(err, XE_PLAN, sel->from->line, sel->from->col,
                           "a WINDOW needs an aggregation (GROUP BY or an aggregate function)"); goto fail; }
        const ast_window *w = &sel->window;
        if ((w->kind != WIN_SESSION && w->size_ms <= 0) || (w->kind == WIN_HOPPING && w->advance_ms <= 0) ||
            (w->kind == WIN_SESSION && w->gap_ms <= 0))
            { rc = xerr_at(err, XE_PLAN, sel->from->line, sel->from->col, "window sizes must be positive"); goto fail; }
        if (w->kind == WIN_HOPPING && w->advance_ms > w->size_ms)
            { rc = xerr_at(err, XE_PLAN, sel->from->line, sel->from->col,
                           "HOPPING window advances by more than its size; tuples would fall between windows"); goto fail; }
        if (w->kind == WIN_HOPPING && w->size_ms / w->advance_ms > 1000)
            { rc = xerr_at(err, XE_PLAN, sel->from->line, sel->from->col,
                           "HOPPING window overlaps more than 1000 windows per tuple"); goto fail; }
    }
    if (sel->having && !c.has_agg)
        { rc = xerr_at(err, XE_PLAN, sel->having->line, sel->having->col, "HAVING needs GROUP BY or an aggregate"); goto fail; }
    if (sel->limit == 0) { rc = xerr_set(err, XE_PLAN, "LIMIT must be positive"); goto fail; }

    c.emit = sel->emit;
    if (c.emit == EMIT_DEFAULT) c.emit = c.has_agg && !c.windowed ? EMIT_CHANGES : EMIT_FINAL;
    if (top) d->emit = c.emit;
    if (c.has_agg || c.R) d->stateful = 1;

    if ((rc = plan_where_and_join(&c))) goto fail;
    if (c.has_agg) rc = plan_aggregation(&c);
    else rc = plan_select_list(&c);
    if (rc) goto fail;
    if ((rc = build_dag(&c, d, top, out_op))) goto fail;
    pctx_fini(&c);
    return 0;
fail:
    if (!rc) rc = err->code ? err->code : XE_PLAN;
    pctx_fini(&c);
    return rc;
}

int plan_query(const ast_select *sel, const plan_catalog *cat, const plan_opts *o, plan_dag **out, xerr *err)
{
    *out = NULL;
    plan_dag *d = calloc(1, sizeof *d);
    if (!d) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc = plan_select_into(sel, cat, o, d, 1, NULL, err);
    if (rc) {
        plan_free(d);
        return rc;
    }
    *out = d;
    return 0;
}
