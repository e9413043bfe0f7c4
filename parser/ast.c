/*
 * ast.c: the AST of Ares SQL: the constructors the grammar's actions call,
 * free, structural equality and deep copies.  The printer is print.c.
 *
 * Constructors take ownership of every pointer argument, even when they fail.
 * On failure they flag the parse context (P->oom, or a semantic error with a
 * position through pctx_error) and return NULL or a placeholder; driver.c then
 * discards the whole statement, so a half-built tree is only ever freed.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser/internal.h"
#include "parser/grammar.h"

/* ------------------------------------------------------------------ helpers */

void pctx_error(pctx *P, int line, int col, const char *fmt, ...)
{
    if (P->err) return; /* the first error wins */
    P->err = 1;
    P->err_line = line;
    P->err_col = col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->err_msg, sizeof P->err_msg, fmt, ap);
    va_end(ap);
}

static void *oom(pctx *P)
{
    P->oom = 1;
    return NULL;
}

static void *zalloc(pctx *P, size_t n)
{
    void *p = calloc(1, n);
    return p ? p : oom(P);
}

static char *dupstr(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* Grow a {n, cap, v} array so that one more element of size sz fits. */
static int grow(void **v, int *cap, int n, size_t sz)
{
    if (n < *cap) return 0;
    int ncap = *cap ? *cap * 2 : 4;
    void *nv = realloc(*v, (size_t)ncap * sz);
    if (!nv) return XE_NOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

/* Undo the doubled quote q inside t's text, without the outer quotes. */
static char *unquote(const token *t, char q)
{
    char *out = malloc(t->len);
    if (!out) return NULL;
    size_t j = 0;
    for (size_t i = 1; i + 1 < t->len; i++) {
        out[j++] = t->s[i];
        if (t->s[i] == q) i++; /* the second of a doubled quote */
    }
    out[j] = 0;
    return out;
}

/* Identifier text: "quoted" keeps its case, a bare word is folded to lower case. */
static char *ident_text(const token *t)
{
    if (t->len >= 2 && t->s[0] == '"') return unquote(t, '"');
    char *out = malloc(t->len + 1);
    if (!out) return NULL;
    for (size_t i = 0; i < t->len; i++) out[i] = (char)tolower((unsigned char)t->s[i]);
    out[t->len] = 0;
    return out;
}

static char *lower_dup(const char *s)
{
    char *p = dupstr(s);
    if (p)
        for (char *q = p; *q; q++) *q = (char)tolower((unsigned char)*q);
    return p;
}

char *ast_mk_ident(pctx *P, const token *t)
{
    char *s = ident_text(t);
    return s ? s : oom(P);
}

/* ------------------------------------------------------------------ free */

void ast_exprs_free(ast_exprs *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) ast_expr_free(l->v[i]);
    free(l->v);
    free(l);
}

/* Left-associative chains (a + b + c ...) make trees as deep as the input is
 * long along the 'a' side, so walk that side in a loop, not by recursion. */
void ast_expr_free(ast_expr *e)
{
    while (e) {
        ast_expr *next = e->a;
        ast_expr_free(e->b);
        ast_expr_free(e->c);
        ast_exprs_free(e->list);
        free(e->name);
        free(e->qual);
        free(e->lit.s);
        free(e);
        e = next;
    }
}

void ast_item_free(ast_select_item *it)
{
    if (!it) return;
    ast_expr_free(it->expr);
    free(it->alias);
    free(it->star_qual);
    free(it);
}

void ast_items_free(ast_items *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) {
        ast_expr_free(l->v[i].expr);
        free(l->v[i].alias);
        free(l->v[i].star_qual);
    }
    free(l->v);
    free(l);
}

void ast_source_free(ast_source *s)
{
    if (!s) return;
    free(s->stream);
    ast_select_free(s->sub);
    free(s->alias);
    free(s);
}

void ast_join_free(ast_join *j)
{
    if (!j) return;
    ast_source_free(j->src);
    ast_expr_free(j->on);
    free(j);
}

void ast_unnest_free(ast_unnest *u)
{
    if (!u) return;
    ast_expr_free(u->expr);
    free(u->alias);
    free(u->column);
    free(u);
}

void ast_select_free(ast_select *s)
{
    if (!s) return;
    ast_items_free(s->items);
    ast_source_free(s->from);
    ast_unnest_free(s->unnest);
    ast_source_free(s->join);
    ast_expr_free(s->join_on);
    ast_expr_free(s->where);
    ast_exprs_free(s->group_by);
    ast_expr_free(s->having);
    free(s);
}

void ast_coldefs_free(ast_coldefs *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) free(l->v[i].name);
    free(l->v);
    free(l);
}

void ast_options_free(ast_options *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].key);
        free(l->v[i].value);
    }
    free(l->v);
    free(l);
}

void ast_names_free(ast_names *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    free(l);
}

void ast_rows_free(ast_rows *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) ast_exprs_free(l->v[i]);
    free(l->v);
    free(l);
}

void ast_stmt_free(ast_stmt *s)
{
    if (!s) return;
    free(s->text);
    free(s->name);
    ast_coldefs_free(s->cols);
    ast_options_free(s->with);
    ast_select_free(s->select);
    ast_names_free(s->insert_cols);
    ast_names_free(s->pkey);
    ast_rows_free(s->rows);
    free(s->set_key);
    free(s->set_value.s);
    free(s);
}

/* ------------------------------------------------------------------ numbers and intervals */

static ival ival_from(pctx *P, const token *at, const char *s, size_t n, int64_t unit)
{
    ival iv = {0, at->line, at->col};
    int rc = time_iv_parse(s, n, unit, &iv.ms);
    if (rc == -1)
        pctx_error(P, at->line, at->col, "invalid interval %.*s", (int)(at->len > 40 ? 40 : at->len), at->s);
    else if (rc == -2)
        pctx_error(P, at->line, at->col, "interval out of range");
    else if (rc == -3)
        pctx_error(P, at->line, at->col, "interval is not a whole number of milliseconds");
    return iv;
}

ival ast_mk_ival(pctx *P, const token *num, int64_t unit_ms)
{
    return ival_from(P, num, num->s, num->len, unit_ms);
}

ival ast_mk_ival_str(pctx *P, const token *str, int64_t unit_ms)
{
    /* the number inside the quotes, with surrounding blanks allowed */
    const char *s = str->s + 1;
    size_t n = str->len - 2;
    while (n && (*s == ' ' || *s == '\t')) { s++; n--; }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    return ival_from(P, str, s, n, unit_ms);
}

ival ast_ival_none(void)
{
    ival iv = {-1, 0, 0};
    return iv;
}

/* The digits of an INTEGER_LIT token as an int64; -1 when out of range. */
static int token_int(const token *t, int64_t *out)
{
    int64_t v = 0;
    for (size_t i = 0; i < t->len; i++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, t->s[i] - '0', &v)) return -1;
    *out = v;
    return 0;
}

int64_t ast_mk_limit(pctx *P, const token *t)
{
    int64_t v = 0;
    if (token_int(t, &v)) pctx_error(P, t->line, t->col, "LIMIT out of range");
    return v;
}

/* ------------------------------------------------------------------ expressions */

static ast_expr *new_expr(pctx *P, ast_expr_kind kind, int line, int col)
{
    ast_expr *e = zalloc(P, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->line = line;
    e->col = col;
    return e;
}

static ast_expr *new_lit(pctx *P, const token *t, sql_type type)
{
    ast_expr *e = new_expr(P, EX_LIT, t->line, t->col);
    if (e) e->lit.type = type;
    return e;
}

ast_expr *ast_mk_int(pctx *P, const token *t)
{
    ast_expr *e = new_lit(P, t, TY_BIGINT);
    int64_t v = 0;
    if (token_int(t, &v)) pctx_error(P, t->line, t->col, "integer out of range");
    if (e) e->lit.i = v;
    return e;
}

ast_expr *ast_mk_float(pctx *P, const token *t)
{
    ast_expr *e = new_lit(P, t, TY_DOUBLE);
    char buf[64], *tmp = t->len < sizeof buf ? buf : malloc(t->len + 1);
    if (!tmp) {
        ast_expr_free(e);
        return oom(P);
    }
    memcpy(tmp, t->s, t->len);
    tmp[t->len] = 0;
    double d = strtod(tmp, NULL);
    if (tmp != buf) free(tmp);
    if (isinf(d)) pctx_error(P, t->line, t->col, "number out of range");
    if (e) e->lit.d = d;
    return e;
}

ast_expr *ast_mk_string(pctx *P, const token *t)
{
    ast_expr *e = new_lit(P, t, TY_TEXT);
    if (!e) return NULL;
    e->lit.s = unquote(t, '\'');
    if (!e->lit.s) {
        ast_expr_free(e);
        return oom(P);
    }
    return e;
}

ast_expr *ast_mk_null(pctx *P, const token *t) { return new_lit(P, t, TY_NULL); }

ast_expr *ast_mk_bool(pctx *P, const token *t, int v)
{
    ast_expr *e = new_lit(P, t, TY_BOOL);
    if (e) e->lit.i = v;
    return e;
}

ast_expr *ast_mk_interval(pctx *P, ival iv)
{
    ast_expr *e = new_expr(P, EX_LIT, iv.line, iv.col);
    if (e) {
        e->lit.type = TY_INTERVAL;
        e->lit.i = iv.ms;
    }
    return e;
}

ast_expr *ast_mk_timestamp(pctx *P, const token *kw, const token *str)
{
    ast_expr *e = new_lit(P, kw, TY_TIMESTAMP);
    if (!e) return NULL;
    if (ast_parse_timestamp(str->s + 1, str->len - 2, &e->lit.i))
        pctx_error(P, str->line, str->col, "invalid timestamp %.*s", (int)(str->len > 40 ? 40 : str->len),
                   str->s);
    return e;
}

ast_expr *ast_mk_col(pctx *P, const token *qual, const token *name)
{
    const token *first = qual ? qual : name;
    ast_expr *e = new_expr(P, EX_COL, first->line, first->col);
    if (!e) return NULL;
    e->name = ident_text(name);
    if (qual) e->qual = ident_text(qual);
    if (!e->name || (qual && !e->qual)) {
        ast_expr_free(e);
        return oom(P);
    }
    return e;
}

ast_expr *ast_mk_star(pctx *P, const token *t) { return new_expr(P, EX_STAR, t->line, t->col); }

ast_expr *ast_mk_unary(pctx *P, const token *t, ast_op op, ast_expr *a)
{
    ast_expr *e = new_expr(P, EX_UNARY, t->line, t->col);
    if (!e) {
        ast_expr_free(a);
        return NULL;
    }
    e->op = op;
    e->a = a;
    return e;
}

/* A node whose position is that of its first operand. */
static ast_expr *new_infix(pctx *P, ast_expr_kind kind, ast_expr *a)
{
    return new_expr(P, kind, a ? a->line : 0, a ? a->col : 0);
}

ast_expr *ast_mk_binary(pctx *P, ast_op op, ast_expr *a, ast_expr *b)
{
    ast_expr *e = new_infix(P, EX_BINARY, a);
    if (!e) {
        ast_expr_free(a);
        ast_expr_free(b);
        return NULL;
    }
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}

ast_expr *ast_mk_isnull(pctx *P, ast_expr *a, int negated)
{
    ast_expr *e = new_infix(P, EX_ISNULL, a);
    if (!e) {
        ast_expr_free(a);
        return NULL;
    }
    e->a = a;
    e->negated = negated;
    return e;
}

ast_expr *ast_mk_between(pctx *P, ast_expr *a, ast_expr *b, ast_expr *c, int negated)
{
    ast_expr *e = new_infix(P, EX_BETWEEN, a);
    if (!e) {
        ast_expr_free(a);
        ast_expr_free(b);
        ast_expr_free(c);
        return NULL;
    }
    e->a = a;
    e->b = b;
    e->c = c;
    e->negated = negated;
    return e;
}

ast_expr *ast_mk_in(pctx *P, ast_expr *a, ast_exprs *list, int negated)
{
    ast_expr *e = new_infix(P, EX_IN, a);
    if (!e) {
        ast_expr_free(a);
        ast_exprs_free(list);
        return NULL;
    }
    e->a = a;
    e->list = list;
    e->negated = negated;
    return e;
}

ast_expr *ast_mk_like(pctx *P, ast_expr *a, ast_expr *b, int negated)
{
    ast_expr *e = ast_mk_binary(P, OP_NONE, a, b);
    if (e) {
        e->kind = EX_LIKE;
        e->negated = negated;
    }
    return e;
}

ast_expr *ast_mk_case(pctx *P, const token *t, ast_expr *base, ast_exprs *whens, ast_expr *els)
{
    ast_expr *e = new_expr(P, EX_CASE, t->line, t->col);
    if (!e) {
        ast_expr_free(base);
        ast_exprs_free(whens);
        ast_expr_free(els);
        return NULL;
    }
    e->a = base;
    e->list = whens;
    e->b = els;
    return e;
}

ast_expr *ast_mk_cast(pctx *P, const token *t, ast_expr *a, sql_type type)
{
    ast_expr *e = new_expr(P, EX_CAST, t->line, t->col);
    if (!e) {
        ast_expr_free(a);
        return NULL;
    }
    e->a = a;
    e->cast_type = type;
    return e;
}

ast_expr *ast_mk_func(pctx *P, const token *name, ast_exprs *args, int distinct)
{
    ast_expr *e = new_expr(P, EX_FUNC, name->line, name->col);
    if (!e) {
        ast_exprs_free(args);
        return NULL;
    }
    e->list = args;
    e->distinct = distinct;
    e->name = ident_text(name);
    if (!e->name) {
        ast_expr_free(e);
        return oom(P);
    }
    return e;
}

ast_exprs *ast_exprs_add(pctx *P, ast_exprs *l, ast_expr *e)
{
    if (!l && !(l = zalloc(P, sizeof *l))) {
        ast_expr_free(e);
        return NULL;
    }
    if (grow((void **)&l->v, &l->cap, l->n, sizeof *l->v)) {
        ast_expr_free(e);
        ast_exprs_free(l);
        return oom(P);
    }
    l->v[l->n++] = e;
    return l;
}

/* ------------------------------------------------------------------ SELECT pieces */

ast_window ast_window_none(void)
{
    ast_window w;
    memset(&w, 0, sizeof w);
    return w;
}

static int64_t positive(pctx *P, ival iv, const char *what)
{
    if (iv.ms <= 0) pctx_error(P, iv.line, iv.col, "window %s must be positive", what);
    return iv.ms;
}

ast_window ast_mk_window(pctx *P, ast_window_kind kind, ival size, ival advance, ival gap, ival grace)
{
    ast_window w = ast_window_none();
    w.kind = kind;
    if (kind == WIN_TUMBLING || kind == WIN_HOPPING) w.size_ms = positive(P, size, "SIZE");
    if (kind == WIN_HOPPING) w.advance_ms = positive(P, advance, "ADVANCE");
    if (kind == WIN_SESSION) w.gap_ms = positive(P, gap, "GAP");
    if (grace.ms >= 0) {
        w.has_grace = 1;
        w.grace_ms = grace.ms;
    }
    return w;
}

ast_select_item *ast_mk_item(pctx *P, ast_expr *e, char *alias)
{
    ast_select_item *it = zalloc(P, sizeof *it);
    if (!it) {
        ast_expr_free(e);
        free(alias);
        return NULL;
    }
    it->expr = e;
    it->alias = alias;
    return it;
}

ast_select_item *ast_mk_item_star(pctx *P, const token *qual)
{
    ast_select_item *it = zalloc(P, sizeof *it);
    if (!it) return NULL;
    it->star = 1;
    if (qual && !(it->star_qual = ident_text(qual))) {
        ast_item_free(it);
        return oom(P);
    }
    return it;
}

ast_items *ast_items_add(pctx *P, ast_items *l, ast_select_item *it)
{
    if (!l && !(l = zalloc(P, sizeof *l))) {
        ast_item_free(it);
        return NULL;
    }
    if (grow((void **)&l->v, &l->cap, l->n, sizeof *l->v)) {
        ast_item_free(it);
        ast_items_free(l);
        return oom(P);
    }
    if (it) {
        l->v[l->n++] = *it;
        free(it);
    }
    return l;
}

ast_source *ast_mk_source(pctx *P, const token *name, char *alias)
{
    ast_source *s = zalloc(P, sizeof *s);
    if (!s) {
        free(alias);
        return NULL;
    }
    s->line = name->line;
    s->col = name->col;
    s->alias = alias;
    if (!(s->stream = ident_text(name))) {
        ast_source_free(s);
        return oom(P);
    }
    return s;
}

ast_source *ast_mk_subquery(pctx *P, const token *lp, ast_select *sub, char *alias)
{
    ast_source *s = zalloc(P, sizeof *s);
    if (!s) {
        ast_select_free(sub);
        free(alias);
        return NULL;
    }
    s->line = lp->line;
    s->col = lp->col;
    s->sub = sub;
    s->alias = alias;
    return s;
}

ast_join *ast_mk_join(pctx *P, ast_source *src, ast_expr *on, ival within, int left)
{
    ast_join *j = zalloc(P, sizeof *j);
    if (!j) {
        ast_source_free(src);
        ast_expr_free(on);
        return NULL;
    }
    j->src = src;
    j->on = on;
    j->within_ms = within.ms; /* -1 from ast_ival_none */
    j->left = left;
    return j;
}

ast_unnest *ast_mk_unnest(pctx *P, const token *alias, const token *column)
{
    ast_unnest *u = zalloc(P, sizeof *u);
    if (!u) return NULL;
    if (!(u->alias = ident_text(alias)) || !(u->column = ident_text(column ? column : alias))) {
        ast_unnest_free(u);
        return oom(P);
    }
    return u;
}

ast_unnest *ast_unnest_set(pctx *P, ast_unnest *u, const token *kw, ast_expr *e)
{
    (void)P;
    if (!u) {
        ast_expr_free(e);
        return NULL;
    }
    u->expr = e;
    u->line = kw->line;
    u->col = kw->col;
    return u;
}

ast_select *ast_mk_select(pctx *P, ast_items *items, ast_source *from, ast_unnest *unnest, ast_window win,
                          ast_join *join, ast_expr *where, ast_exprs *group_by,
                          ast_expr *having, int emit, int64_t limit)
{
    ast_select *s = zalloc(P, sizeof *s);
    if (s) {
        s->items = items;
        s->from = from;
        s->unnest = unnest;
        s->window = win;
        s->where = where;
        s->group_by = group_by;
        s->having = having;
        s->emit = (ast_emit)emit;
        s->limit = limit;
        if (join) {
            s->join = join->src;
            s->join_on = join->on;
            s->within_ms = join->within_ms;
            s->join_left = join->left;
            free(join);
        }
        return s;
    }
    ast_items_free(items);
    ast_source_free(from);
    ast_unnest_free(unnest);
    ast_join_free(join);
    ast_expr_free(where);
    ast_exprs_free(group_by);
    ast_expr_free(having);
    return NULL;
}

/* ------------------------------------------------------------------ statement pieces */

ast_coldefs *ast_coldefs_add(pctx *P, ast_coldefs *l, const token *name, sql_type type)
{
    if (!l && !(l = zalloc(P, sizeof *l))) return NULL;
    char *s = ident_text(name);
    if (!s || grow((void **)&l->v, &l->cap, l->n, sizeof *l->v)) {
        free(s);
        ast_coldefs_free(l);
        return oom(P);
    }
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, s) == 0) pctx_error(P, name->line, name->col, "duplicate column '%s'", s);
    l->v[l->n].name = s;
    l->v[l->n++].type = type;
    return l;
}

/* The text of a WITH or SET value that is not a string. */
static char *optval_text(const optval *v)
{
    const token *t = &v->t;
    if (t->code == TK_TRUE) return dupstr("true");
    if (t->code == TK_FALSE) return dupstr("false");
    if (t->code == TK_INTEGER_LIT || t->code == TK_FLOAT_LIT) {
        char *s = malloc(t->len + 2);
        if (s) {
            size_t j = 0;
            if (v->neg) s[j++] = '-';
            memcpy(s + j, t->s, t->len);
            s[j + t->len] = 0;
        }
        return s;
    }
    return ident_text(t);
}

ast_options *ast_options_add(pctx *P, ast_options *l, const token *key, optval v)
{
    if (!l && !(l = zalloc(P, sizeof *l))) return NULL;
    char *k = ident_text(key), *lk = lower_dup(k);
    int quoted = v.t.code == TK_STRING_LIT;
    char *val = quoted ? unquote(&v.t, '\'') : optval_text(&v);
    free(k);
    if (!lk || !val || grow((void **)&l->v, &l->cap, l->n, sizeof *l->v)) {
        free(lk);
        free(val);
        ast_options_free(l);
        return oom(P);
    }
    if (ast_option_get(l, lk)) pctx_error(P, key->line, key->col, "duplicate option '%s'", lk);
    l->v[l->n++] = (ast_option){lk, val, quoted, key->line, key->col, v.line, v.col};
    return l;
}

ast_names *ast_names_add(pctx *P, ast_names *l, const token *name)
{
    if (!l && !(l = zalloc(P, sizeof *l))) return NULL;
    char *s = ident_text(name);
    if (!s || grow((void **)&l->v, &l->cap, l->n, sizeof *l->v)) {
        free(s);
        ast_names_free(l);
        return oom(P);
    }
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0) pctx_error(P, name->line, name->col, "duplicate column '%s'", s);
    l->v[l->n++] = s;
    return l;
}

ast_rows *ast_rows_add(pctx *P, ast_rows *l, ast_exprs *row)
{
    if (!l && !(l = zalloc(P, sizeof *l))) {
        ast_exprs_free(row);
        return NULL;
    }
    if (grow((void **)&l->v, &l->cap, l->n, sizeof *l->v)) {
        ast_exprs_free(row);
        ast_rows_free(l);
        return oom(P);
    }
    l->v[l->n++] = row;
    return l;
}

static ast_stmt *new_stmt(pctx *P, ast_stmt_kind kind)
{
    ast_stmt *s = zalloc(P, sizeof *s);
    if (s) s->kind = kind;
    return s;
}

ast_stmt *ast_mk_create_stream(pctx *P, int if_not_exists, char *name, ast_coldefs *cols,
                               ast_options *with)
{
    ast_stmt *s = new_stmt(P, ST_CREATE_STREAM);
    if (!s) {
        free(name);
        ast_coldefs_free(cols);
        ast_options_free(with);
        return NULL;
    }
    s->if_not_exists = if_not_exists;
    s->name = name;
    s->cols = cols;
    s->with = with;
    return s;
}

ast_stmt *ast_mk_create_table(pctx *P, int if_not_exists, char *name, ast_coldefs *cols,
                              ast_names *pkey, ast_options *with)
{
    ast_stmt *s = ast_mk_create_stream(P, if_not_exists, name, cols, with);
    if (!s) {
        ast_names_free(pkey);
        return NULL;
    }
    s->kind = ST_CREATE_TABLE;
    s->pkey = pkey;
    return s;
}

ast_stmt *ast_mk_standing(pctx *P, ast_stmt_kind kind, int if_not_exists, char *name, ast_options *with,
                          ast_select *sel)
{
    ast_stmt *s = new_stmt(P, kind);
    if (!s) {
        free(name);
        ast_options_free(with);
        ast_select_free(sel);
        return NULL;
    }
    s->if_not_exists = if_not_exists;
    s->name = name;
    s->with = with;
    s->select = sel;
    return s;
}

ast_stmt *ast_mk_select_stmt(pctx *P, ast_select *sel)
{
    ast_stmt *s = new_stmt(P, ST_SELECT);
    if (!s) {
        ast_select_free(sel);
        return NULL;
    }
    s->select = sel;
    return s;
}

ast_stmt *ast_mk_insert(pctx *P, char *name, ast_names *cols, ast_rows *rows)
{
    ast_stmt *s = new_stmt(P, ST_INSERT);
    if (!s) {
        free(name);
        ast_names_free(cols);
        ast_rows_free(rows);
        return NULL;
    }
    s->name = name;
    s->insert_cols = cols;
    s->rows = rows;
    return s;
}

ast_stmt *ast_mk_drop(pctx *P, ast_stmt_kind kind, int if_exists, char *name)
{
    ast_stmt *s = ast_mk_named(P, kind, name);
    if (s) s->if_exists = if_exists;
    return s;
}

ast_stmt *ast_mk_show(pctx *P, ast_show_what what)
{
    ast_stmt *s = new_stmt(P, ST_SHOW);
    if (s) s->show = what;
    return s;
}

ast_stmt *ast_mk_show_name(pctx *P, const token *name)
{
    ast_stmt *s = new_stmt(P, ST_SHOW);
    if (!s) return NULL;
    if (!(s->name = ident_text(name))) P->oom = 1;
    s->show = s->name && !strcmp(s->name, "settings") && name->s[0] != '"' ? SHOW_SETTINGS : SHOW_SETTING;
    if (s->show == SHOW_SETTINGS) {
        free(s->name);
        s->name = NULL;
    }
    return s;
}

ast_stmt *ast_mk_named(pctx *P, ast_stmt_kind kind, char *name)
{
    ast_stmt *s = new_stmt(P, kind);
    if (!s) {
        free(name);
        return NULL;
    }
    s->name = name;
    return s;
}

ast_stmt *ast_mk_explain(pctx *P, int placement, int json, char *name, ast_select *sel)
{
    ast_stmt *s = new_stmt(P, ST_EXPLAIN);
    if (!s) {
        free(name);
        ast_select_free(sel);
        return NULL;
    }
    s->explain_placement = placement;
    s->explain_json = json;
    s->name = name;
    s->select = sel;
    if (json) {
        s->with = zalloc(P, sizeof *s->with);
        if (s->with && !grow((void **)&s->with->v, &s->with->cap, 0, sizeof *s->with->v)) {
            s->with->v[0].key = dupstr("format");
            s->with->v[0].value = dupstr("json");
            s->with->v[0].quoted = 0;
            s->with->n = 1;
            if (!s->with->v[0].key || !s->with->v[0].value) P->oom = 1;
        } else {
            P->oom = 1;
        }
    }
    return s;
}

ast_stmt *ast_mk_set(pctx *P, const token *key, optval v)
{
    ast_stmt *s = new_stmt(P, ST_SET);
    if (!s) return NULL;
    if (!(s->set_key = ident_text(key))) P->oom = 1;
    s->set_key_line = key->line;
    s->set_key_col = key->col;
    s->set_line = v.line;
    s->set_col = v.col;
    ast_lit *l = &s->set_value;
    switch (v.t.code) {
    case TK_STRING_LIT:
        l->type = TY_TEXT;
        if (!(l->s = unquote(&v.t, '\''))) P->oom = 1;
        break;
    case TK_INTEGER_LIT:
        l->type = TY_BIGINT;
        if (token_int(&v.t, &l->i)) pctx_error(P, v.t.line, v.t.col, "integer out of range");
        if (v.neg) l->i = -l->i;
        break;
    case TK_FLOAT_LIT: {
        ast_expr *e = ast_mk_float(P, &v.t);
        l->type = TY_DOUBLE;
        if (e) l->d = v.neg ? -e->lit.d : e->lit.d;
        ast_expr_free(e);
        break;
    }
    case TK_TRUE:
    case TK_FALSE:
        l->type = TY_BOOL;
        l->i = v.t.code == TK_TRUE;
        break;
    default:
        l->type = TY_TEXT;
        if (!(l->s = ident_text(&v.t))) P->oom = 1;
        break;
    }
    return s;
}

/* ------------------------------------------------------------------ timestamps */

int ast_parse_timestamp(const char *s, size_t n, int64_t *ms) { return time_ts_parse(s, n, TIME_SQL, ms); }

/* ------------------------------------------------------------------ names */

const char *ast_op_text(ast_op op)
{
    switch (op) {
    case OP_NONE: return "";
    case OP_OR: return "OR";
    case OP_AND: return "AND";
    case OP_NOT: return "NOT";
    case OP_EQ: return "=";
    case OP_NE: return "<>";
    case OP_LT: return "<";
    case OP_LE: return "<=";
    case OP_GT: return ">";
    case OP_GE: return ">=";
    case OP_ADD: return "+";
    case OP_SUB: return "-";
    case OP_CONCAT: return "||";
    case OP_MUL: return "*";
    case OP_DIV: return "/";
    case OP_MOD: return "%";
    case OP_NEG: return "-";
    case OP_POS: return "+";
    }
    return "?";
}

const ast_option *ast_option_get(const ast_options *o, const char *key)
{
    if (!o || !key) return NULL;
    for (int i = 0; i < o->n; i++)
        if (o->v[i].key && strcasecmp(o->v[i].key, key) == 0) return &o->v[i];
    return NULL;
}

/* ------------------------------------------------------------------ equality */

static int str_eq(const char *a, const char *b)
{
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

static int lit_equal(const ast_lit *a, const ast_lit *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case TY_NULL: return 1;
    case TY_DOUBLE: return a->d == b->d || (isnan(a->d) && isnan(b->d));
    case TY_TEXT: return str_eq(a->s, b->s);
    default: return a->i == b->i;
    }
}

static int exprs_equal(const ast_exprs *a, const ast_exprs *b)
{
    if (!a || !b) return a == b;
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (!ast_expr_equal(a->v[i], b->v[i])) return 0;
    return 1;
}

int ast_expr_equal(const ast_expr *a, const ast_expr *b)
{
    for (;;) { /* iterate down the 'a' side, like ast_expr_free */
        if (!a || !b) return a == b;
        if (a->kind != b->kind || a->op != b->op || a->negated != b->negated ||
            a->distinct != b->distinct || !str_eq(a->name, b->name) || !str_eq(a->qual, b->qual) ||
            (a->kind == EX_CAST && a->cast_type != b->cast_type) ||
            (a->kind == EX_LIT && !lit_equal(&a->lit, &b->lit)) || !ast_expr_equal(a->b, b->b) ||
            !ast_expr_equal(a->c, b->c) || !exprs_equal(a->list, b->list))
            return 0;
        a = a->a;
        b = b->a;
    }
}

static int source_equal(const ast_source *a, const ast_source *b);

static int select_equal(const ast_select *a, const ast_select *b)
{
    if (!a || !b) return a == b;
    if ((a->items == NULL) != (b->items == NULL)) return 0;
    if (a->items) {
        if (a->items->n != b->items->n) return 0;
        for (int i = 0; i < a->items->n; i++) {
            const ast_select_item *x = &a->items->v[i], *y = &b->items->v[i];
            if (x->star != y->star || !str_eq(x->star_qual, y->star_qual) || !str_eq(x->alias, y->alias) ||
                !ast_expr_equal(x->expr, y->expr))
                return 0;
        }
    }
    const ast_window *w = &a->window, *v = &b->window;
    if (w->kind != v->kind || w->size_ms != v->size_ms || w->advance_ms != v->advance_ms ||
        w->gap_ms != v->gap_ms || w->grace_ms != v->grace_ms || w->has_grace != v->has_grace)
        return 0;
    if ((a->unnest == NULL) != (b->unnest == NULL)) return 0;
    if (a->unnest && (!str_eq(a->unnest->alias, b->unnest->alias) || !str_eq(a->unnest->column, b->unnest->column) ||
                      !ast_expr_equal(a->unnest->expr, b->unnest->expr)))
        return 0;
    return source_equal(a->from, b->from) && source_equal(a->join, b->join) &&
           ast_expr_equal(a->join_on, b->join_on) && (!a->join || (a->within_ms == b->within_ms && a->join_left == b->join_left)) &&
           ast_expr_equal(a->where, b->where) && exprs_equal(a->group_by, b->group_by) &&
           ast_expr_equal(a->having, b->having) && a->emit == b->emit && a->limit == b->limit;
}

static int source_equal(const ast_source *a, const ast_source *b)
{
    if (!a || !b) return a == b;
    return str_eq(a->stream, b->stream) && str_eq(a->alias, b->alias) && select_equal(a->sub, b->sub);
}

static int options_equal(const ast_options *a, const ast_options *b)
{
    if (!a || !b) return a == b;
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (!str_eq(a->v[i].key, b->v[i].key) || !str_eq(a->v[i].value, b->v[i].value) ||
            a->v[i].quoted != b->v[i].quoted)
            return 0;
    return 1;
}

static int coldefs_equal(const ast_coldefs *a, const ast_coldefs *b)
{
    if (!a || !b) return a == b;
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (!str_eq(a->v[i].name, b->v[i].name) || a->v[i].type != b->v[i].type) return 0;
    return 1;
}

static int names_equal(const ast_names *a, const ast_names *b)
{
    if (!a || !b) return a == b;
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (!str_eq(a->v[i], b->v[i])) return 0;
    return 1;
}

static int rows_equal(const ast_rows *a, const ast_rows *b)
{
    if (!a || !b) return a == b;
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (!exprs_equal(a->v[i], b->v[i])) return 0;
    return 1;
}

int ast_stmt_equal(const ast_stmt *a, const ast_stmt *b)
{
    if (!a || !b) return a == b;
    return a->kind == b->kind && str_eq(a->name, b->name) && a->if_not_exists == b->if_not_exists &&
           a->if_exists == b->if_exists && coldefs_equal(a->cols, b->cols) && options_equal(a->with, b->with) &&
           select_equal(a->select, b->select) && names_equal(a->insert_cols, b->insert_cols) &&
           names_equal(a->pkey, b->pkey) &&
           rows_equal(a->rows, b->rows) && (a->kind != ST_SHOW || a->show == b->show) &&
           a->explain_placement == b->explain_placement && a->explain_json == b->explain_json &&
           str_eq(a->set_key, b->set_key) && (a->kind != ST_SET || lit_equal(&a->set_value, &b->set_value));
}

/* ------------------------------------------------------------------ deep copies */

static ast_exprs *exprs_dup(const ast_exprs *l, int *fail)
{
    if (!l) return NULL;
    ast_exprs *c = calloc(1, sizeof *c);
    if (!c || (l->n && !(c->v = calloc((size_t)l->n, sizeof *c->v)))) {
        free(c);
        *fail = 1;
        return NULL;
    }
    c->cap = l->n;
    for (; c->n < l->n; c->n++)
        if (l->v[c->n] && !(c->v[c->n] = ast_expr_dup(l->v[c->n]))) *fail = 1;
    return c;
}

ast_expr *ast_expr_dup(const ast_expr *e)
{
    if (!e) return NULL;
    ast_expr *c = malloc(sizeof *c);
    if (!c) return NULL;
    *c = *e;
    c->a = c->b = c->c = NULL;
    c->list = NULL;
    c->name = c->qual = c->lit.s = NULL;
    int fail = 0;
    if ((e->a && !(c->a = ast_expr_dup(e->a))) || (e->b && !(c->b = ast_expr_dup(e->b))) ||
        (e->c && !(c->c = ast_expr_dup(e->c))) || (e->name && !(c->name = dupstr(e->name))) ||
        (e->qual && !(c->qual = dupstr(e->qual))) || (e->lit.s && !(c->lit.s = dupstr(e->lit.s))))
        fail = 1;
    if (!fail) c->list = exprs_dup(e->list, &fail);
    if (fail) {
        ast_expr_free(c);
        return NULL;
    }
    return c;
}

static ast_source *source_dup(const ast_source *s, int *fail)
{
    if (!s) return NULL;
    ast_source *c = calloc(1, sizeof *c);
    if (!c) {
        *fail = 1;
        return NULL;
    }
    *c = *s;
    c->stream = dupstr(s->stream);
    c->alias = dupstr(s->alias);
    c->sub = ast_select_dup(s->sub);
    if ((s->stream && !c->stream) || (s->alias && !c->alias) || (s->sub && !c->sub)) *fail = 1;
    return c;
}

ast_select *ast_select_dup(const ast_select *s)
{
    if (!s) return NULL;
    ast_select *c = malloc(sizeof *c);
    if (!c) return NULL;
    *c = *s;
    c->items = NULL;
    int fail = 0;
    if (s->items) {
        if (!(c->items = calloc(1, sizeof *c->items)) ||
            (s->items->n && !(c->items->v = calloc((size_t)s->items->n, sizeof *c->items->v)))) {
            fail = 1;
        } else {
            c->items->cap = s->items->n;
            for (; c->items->n < s->items->n; c->items->n++) {
                const ast_select_item *x = &s->items->v[c->items->n];
                ast_select_item *y = &c->items->v[c->items->n];
                *y = *x;
                y->expr = ast_expr_dup(x->expr);
                y->alias = dupstr(x->alias);
                y->star_qual = dupstr(x->star_qual);
                if ((x->expr && !y->expr) || (x->alias && !y->alias) || (x->star_qual && !y->star_qual))
                    fail = 1;
            }
        }
    }
    c->from = source_dup(s->from, &fail);
    c->unnest = NULL;
    if (s->unnest) {
        if (!(c->unnest = calloc(1, sizeof *c->unnest))) fail = 1;
        else {
            *c->unnest = *s->unnest;
            c->unnest->expr = ast_expr_dup(s->unnest->expr);
            c->unnest->alias = dupstr(s->unnest->alias);
            c->unnest->column = dupstr(s->unnest->column);
            if ((s->unnest->expr && !c->unnest->expr) || !c->unnest->alias || !c->unnest->column) fail = 1;
        }
    }
    c->join = source_dup(s->join, &fail);
    c->join_on = ast_expr_dup(s->join_on);
    c->where = ast_expr_dup(s->where);
    c->having = ast_expr_dup(s->having);
    c->group_by = exprs_dup(s->group_by, &fail);
    if ((s->join_on && !c->join_on) || (s->where && !c->where) || (s->having && !c->having)) fail = 1;
    if (fail) {
        ast_select_free(c);
        return NULL;
    }
    return c;
}
