/*
 * print.c: the AST printed back as SQL (ast_print_ident, ast_print_expr,
 * ast_print_select, ast_print_stmt; parser.h declares them).
 *
 * The printer writes SQL that parses back to an equal AST: keywords in upper
 * case, identifiers quoted when they would not read back as themselves,
 * doubles with enough digits to re-read exactly (and always with a '.' or an
 * exponent, so they stay doubles), intervals in the largest unit that divides
 * them, and parentheses wherever the grammar's precedence would otherwise
 * regroup a sub-expression.  It sits above the generated grammar: whether an
 * identifier needs quotes is asked of the lexer's keywords and the grammar's
 * fallback table (parser_Fallback).
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser/internal.h"
#include "parser/grammar.h"

/* ------------------------------------------------------------------ printer */

/* Does a lower-case identifier read back as itself when printed bare?  Not if
 * it is a reserved keyword; TIMESTAMP is also quoted because at the start of
 * an expression it is the keyword (TIMESTAMP 'literal'). */
static int ident_needs_quotes(const char *name)
{
    if (!name[0] || !((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_')) return 1;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return 1;
    int code = lex_word(name, strlen(name));
    if (code == TK_ID) return 0;
    return code == 0 || code == TK_TIMESTAMP || parser_Fallback(code) != TK_ID;
}

static int print_quoted(const char *s, char q, sbuf *b)
{
    int rc = sbuf_addc(b, q);
    for (; *s && !rc; s++) {
        rc = sbuf_addc(b, *s);
        if (*s == q && !rc) rc = sbuf_addc(b, q);
    }
    return rc ? rc : sbuf_addc(b, q);
}

int ast_print_ident(const char *name, sbuf *b)
{
    if (!name) return sbuf_adds(b, "\"\"");
    if (ident_needs_quotes(name)) return print_quoted(name, '"', b);
    return sbuf_adds(b, name);
}

static int print_double(double d, sbuf *b)
{
    char buf[40];
    if (isnan(d)) return sbuf_adds(b, "(0.0 / 0.0)");
    if (isinf(d)) return sbuf_adds(b, d > 0 ? "1e999" : "-1e999");
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    int rc = sbuf_adds(b, buf);
    if (!rc && !strpbrk(buf, ".e")) rc = sbuf_adds(b, ".0");
    return rc;
}

static int print_timestamp(int64_t ms, sbuf *b)
{
    char buf[TIME_TS_BUF];
    time_ts_print(ms, TIME_SQL, buf);
    return sbuf_printf(b, "TIMESTAMP '%s'", buf);
}

static int print_lit(const ast_lit *l, sbuf *b)
{
    switch (l->type) {
    case TY_NULL: return sbuf_adds(b, "NULL");
    case TY_BOOL: return sbuf_adds(b, l->i ? "TRUE" : "FALSE");
    case TY_INT:
    case TY_BIGINT: return sbuf_printf(b, "%" PRId64, l->i);
    case TY_DOUBLE: return print_double(l->d, b);
    case TY_TEXT: return print_quoted(l->s ? l->s : "", '\'', b);
    case TY_INTERVAL: return time_iv_print(l->i, b);
    case TY_TIMESTAMP: return print_timestamp(l->i, b);
    }
    return XE_INVAL;
}

/* Binding strength of an expression as printed; higher binds tighter.  The
 * levels follow the %left/%right block of grammar.y. */
enum { PR_OR = 10, PR_AND = 20, PR_NOT = 30, PR_IS = 40, PR_CMP = 50, PR_LIKE = 60, PR_CONCAT = 70,
       PR_ADD = 80, PR_MUL = 85, PR_UNARY = 90, PR_ATOM = 100 };

static int prec(const ast_expr *e)
{
    switch (e->kind) {
    case EX_UNARY: return e->op == OP_NOT ? PR_NOT : PR_UNARY;
    case EX_ISNULL: return PR_IS;
    case EX_BETWEEN:
    case EX_IN:
    case EX_LIKE: return PR_LIKE;
    case EX_BINARY:
        switch (e->op) {
        case OP_OR: return PR_OR;
        case OP_AND: return PR_AND;
        case OP_CONCAT: return PR_CONCAT;
        case OP_ADD:
        case OP_SUB: return PR_ADD;
        case OP_MUL:
        case OP_DIV:
        case OP_MOD: return PR_MUL;
        default: return PR_CMP;
        }
    default: return PR_ATOM;
    }
}

static int print_exprs(const ast_exprs *l, sbuf *b)
{
    int rc = 0;
    for (int i = 0; l && i < l->n && !rc; i++) {
        if (i) rc = sbuf_adds(b, ", ");
        if (!rc) rc = ast_print_expr(l->v[i], b);
    }
    return rc;
}

/* Print e, in parentheses when it binds looser than min. */
static int print_child(const ast_expr *e, int min, sbuf *b)
{
    if (!e || prec(e) >= min) return ast_print_expr(e, b);
    int rc = sbuf_addc(b, '(');
    if (!rc) rc = ast_print_expr(e, b);
    return rc ? rc : sbuf_addc(b, ')');
}

static int print_func_name(const char *name, sbuf *b)
{
    if (!name || ident_needs_quotes(name)) return ast_print_ident(name, b);
    for (const char *p = name; *p; p++)
        if (sbuf_addc(b, (char)toupper((unsigned char)*p))) return XE_NOMEM;
    return 0;
}

int ast_print_expr(const ast_expr *e, sbuf *b)
{
    int rc = 0;
    if (!e) return sbuf_adds(b, "NULL");
    const char *neg = e->negated ? " NOT" : "";
    switch (e->kind) {
    case EX_LIT: return print_lit(&e->lit, b);
    case EX_STAR: return sbuf_addc(b, '*');
    case EX_COL:
        if (e->qual && ((rc = ast_print_ident(e->qual, b)) || (rc = sbuf_addc(b, '.')))) return rc;
        return ast_print_ident(e->name, b);
    case EX_UNARY:
        if (e->op == OP_NOT) {
            rc = sbuf_adds(b, "NOT ");
            return rc ? rc : print_child(e->a, PR_NOT, b);
        }
        rc = sbuf_adds(b, ast_op_text(e->op));
        /* never "--" (a comment) or "- -": nested signs go in parentheses */
        if (!rc && e->a && (e->a->kind == EX_UNARY && e->a->op != OP_NOT)) return print_child(e->a, PR_ATOM + 1, b);
        return rc ? rc : print_child(e->a, PR_UNARY, b);
    case EX_BINARY: {
        /* chained comparisons read better, and as well, with parentheses */
        int p = prec(e), left = p == PR_CMP ? p + 1 : p;
        if ((rc = print_child(e->a, left, b)) || (rc = sbuf_printf(b, " %s ", ast_op_text(e->op)))) return rc;
        return print_child(e->b, p + 1, b);
    }
    case EX_ISNULL:
        rc = print_child(e->a, PR_IS + 1, b);
        return rc ? rc : sbuf_printf(b, " IS%s NULL", neg);
    case EX_BETWEEN:
        if ((rc = print_child(e->a, PR_LIKE + 1, b)) || (rc = sbuf_printf(b, "%s BETWEEN ", neg)) ||
            (rc = print_child(e->b, PR_LIKE + 1, b)) || (rc = sbuf_adds(b, " AND ")))
            return rc;
        return print_child(e->c, PR_LIKE + 1, b);
    case EX_IN:
        if ((rc = print_child(e->a, PR_LIKE + 1, b)) || (rc = sbuf_printf(b, "%s IN (", neg)) ||
            (rc = print_exprs(e->list, b)))
            return rc;
        return sbuf_addc(b, ')');
    case EX_LIKE:
        if ((rc = print_child(e->a, PR_LIKE + 1, b)) || (rc = sbuf_printf(b, "%s LIKE ", neg))) return rc;
        return print_child(e->b, PR_LIKE + 1, b);
    case EX_CASE:
        rc = sbuf_adds(b, "CASE");
        if (!rc && e->a && !(rc = sbuf_addc(b, ' '))) rc = ast_print_expr(e->a, b);
        for (int i = 0; e->list && i + 1 < e->list->n && !rc; i += 2) {
            if ((rc = sbuf_adds(b, " WHEN ")) || (rc = ast_print_expr(e->list->v[i], b)) ||
                (rc = sbuf_adds(b, " THEN ")))
                break;
            rc = ast_print_expr(e->list->v[i + 1], b);
        }
        if (!rc && e->b && !(rc = sbuf_adds(b, " ELSE "))) rc = ast_print_expr(e->b, b);
        return rc ? rc : sbuf_adds(b, " END");
    case EX_CAST:
        if ((rc = sbuf_adds(b, "CAST(")) || (rc = ast_print_expr(e->a, b))) return rc;
        return sbuf_printf(b, " AS %s)", sql_type_name(e->cast_type));
    case EX_FUNC:
        if ((rc = print_func_name(e->name, b)) || (rc = sbuf_addc(b, '(')) ||
            (e->distinct && (rc = sbuf_adds(b, "DISTINCT "))) || (rc = print_exprs(e->list, b)))
            return rc;
        return sbuf_addc(b, ')');
    }
    return XE_INVAL;
}

static int print_window(const ast_window *w, sbuf *b)
{
    int rc;
    switch (w->kind) {
    case WIN_NONE: return 0;
    case WIN_TUMBLING:
        if ((rc = sbuf_adds(b, " WINDOW TUMBLING (SIZE ")) || (rc = time_iv_print(w->size_ms, b))) return rc;
        break;
    case WIN_HOPPING:
        if ((rc = sbuf_adds(b, " WINDOW HOPPING (SIZE ")) || (rc = time_iv_print(w->size_ms, b)) ||
            (rc = sbuf_adds(b, ", ADVANCE BY ")) || (rc = time_iv_print(w->advance_ms, b)))
            return rc;
        break;
    case WIN_SESSION:
        if ((rc = sbuf_adds(b, " WINDOW SESSION (GAP ")) || (rc = time_iv_print(w->gap_ms, b))) return rc;
        break;
    }
    if (w->has_grace && ((rc = sbuf_adds(b, ", GRACE ")) || (rc = time_iv_print(w->grace_ms, b)))) return rc;
    return sbuf_addc(b, ')');
}

static int print_source(const ast_source *s, sbuf *b)
{
    int rc;
    if (!s) return sbuf_adds(b, "\"\"");
    if (s->sub) {
        if ((rc = sbuf_addc(b, '(')) || (rc = ast_print_select(s->sub, b)) || (rc = sbuf_addc(b, ')'))) return rc;
    } else if ((rc = ast_print_ident(s->stream, b))) {
        return rc;
    }
    if (s->alias && ((rc = sbuf_adds(b, " AS ")) || (rc = ast_print_ident(s->alias, b)))) return rc;
    return 0;
}

int ast_print_select(const ast_select *s, sbuf *b)
{
    int rc = sbuf_adds(b, "SELECT ");
    for (int i = 0; s->items && i < s->items->n && !rc; i++) {
        const ast_select_item *it = &s->items->v[i];
        if (i) rc = sbuf_adds(b, ", ");
        if (rc) break;
        if (it->star) {
            if (it->star_qual && ((rc = ast_print_ident(it->star_qual, b)) || (rc = sbuf_addc(b, '.')))) break;
            rc = sbuf_addc(b, '*');
        } else {
            rc = ast_print_expr(it->expr, b);
            if (!rc && it->alias && !(rc = sbuf_adds(b, " AS "))) rc = ast_print_ident(it->alias, b);
        }
    }
    if (rc || (rc = sbuf_adds(b, " FROM ")) || (rc = print_source(s->from, b))) return rc;
    if (s->unnest && ((rc = sbuf_adds(b, " CROSS JOIN UNNEST(")) || (rc = ast_print_expr(s->unnest->expr, b)) ||
                      (rc = sbuf_adds(b, ") AS ")) || (rc = ast_print_ident(s->unnest->alias, b)) ||
                      (rc = sbuf_addc(b, '(')) || (rc = ast_print_ident(s->unnest->column, b)) ||
                      (rc = sbuf_addc(b, ')'))))
        return rc;
    if ((rc = print_window(&s->window, b))) return rc;
    if (s->join && ((rc = sbuf_adds(b, s->join_left ? " LEFT JOIN " : " JOIN ")) || (rc = print_source(s->join, b)) ||
                    (rc = sbuf_adds(b, " ON ")) || (rc = ast_print_expr(s->join_on, b)) ||
                    (s->within_ms >= 0 &&
                     ((rc = sbuf_adds(b, " WITHIN ")) || (rc = time_iv_print(s->within_ms, b))))))
        return rc;
    if (s->where && ((rc = sbuf_adds(b, " WHERE ")) || (rc = ast_print_expr(s->where, b)))) return rc;
    if (s->group_by && ((rc = sbuf_adds(b, " GROUP BY ")) || (rc = print_exprs(s->group_by, b)))) return rc;
    if (s->having && ((rc = sbuf_adds(b, " HAVING ")) || (rc = ast_print_expr(s->having, b)))) return rc;
    if (s->emit == EMIT_CHANGES && (rc = sbuf_adds(b, " EMIT CHANGES"))) return rc;
    if (s->emit == EMIT_FINAL && (rc = sbuf_adds(b, " EMIT FINAL"))) return rc;
    if (s->limit >= 0 && (rc = sbuf_printf(b, " LIMIT %" PRId64, s->limit))) return rc;
    return 0;
}

static int print_optval(const ast_option *o, sbuf *b)
{
    const char *v = o->value ? o->value : "";
    if (o->quoted) return print_quoted(v, '\'', b);
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) return sbuf_adds(b, v[0] == 't' ? "TRUE" : "FALSE");
    if (lex_is_number(v, strlen(v))) return sbuf_adds(b, v);
    return ast_print_ident(v, b);
}

static int print_with(const ast_options *o, sbuf *b)
{
    int rc = 0;
    if (!o || o->n == 0) return 0;
    rc = sbuf_adds(b, " WITH (");
    for (int i = 0; i < o->n && !rc; i++) {
        if ((i && (rc = sbuf_adds(b, ", "))) || (rc = ast_print_ident(o->v[i].key, b)) ||
            (rc = sbuf_adds(b, " = ")))
            break;
        rc = print_optval(&o->v[i], b);
    }
    return rc ? rc : sbuf_addc(b, ')');
}

static int print_set_value(const ast_lit *l, sbuf *b)
{
    if (l->type == TY_TEXT) return print_quoted(l->s ? l->s : "", '\'', b);
    if (l->type == TY_DOUBLE && (l->d < 0 || (l->d == 0 && signbit(l->d)))) {
        int rc = sbuf_addc(b, '-');
        return rc ? rc : print_double(-l->d, b);
    }
    return print_lit(l, b);
}

int ast_print_stmt(const ast_stmt *s, sbuf *b)
{
    int rc = 0;
    const char *ine = s->if_not_exists ? " IF NOT EXISTS" : "", *ie = s->if_exists ? " IF EXISTS" : "";
    switch (s->kind) {
    case ST_CREATE_STREAM:
    case ST_CREATE_TABLE:
        if ((rc = sbuf_printf(b, "CREATE %s%s ", s->kind == ST_CREATE_TABLE ? "TABLE" : "STREAM", ine)) ||
            (rc = ast_print_ident(s->name, b)) || (rc = sbuf_adds(b, " (")))
            return rc;
        for (int i = 0; s->cols && i < s->cols->n && !rc; i++) {
            if ((i && (rc = sbuf_adds(b, ", "))) || (rc = ast_print_ident(s->cols->v[i].name, b))) break;
            rc = sbuf_printf(b, " %s", sql_type_name(s->cols->v[i].type));
        }
        if (!rc && s->pkey) {
            rc = sbuf_adds(b, ", PRIMARY KEY (");
            for (int i = 0; i < s->pkey->n && !rc; i++)
                if (!(i && (rc = sbuf_adds(b, ", ")))) rc = ast_print_ident(s->pkey->v[i], b);
            if (!rc) rc = sbuf_addc(b, ')');
        }
        if (rc || (rc = sbuf_addc(b, ')'))) return rc;
        return print_with(s->with, b);
    case ST_CREATE_QUERY:
    case ST_CREATE_STREAM_AS:
    case ST_CREATE_TABLE_AS:
        if ((rc = sbuf_printf(b, "CREATE %s%s ",
                              s->kind == ST_CREATE_QUERY ? "QUERY" : s->kind == ST_CREATE_TABLE_AS ? "TABLE" : "STREAM", ine)) ||
            (rc = ast_print_ident(s->name, b)) || (rc = print_with(s->with, b)) || (rc = sbuf_adds(b, " AS ")))
            return rc;
        return s->select ? ast_print_select(s->select, b) : 0;
    case ST_INSERT_SELECT:
        if ((rc = sbuf_adds(b, "INSERT INTO ")) || (rc = ast_print_ident(s->name, b)) || (rc = sbuf_addc(b, ' ')))
            return rc;
        return s->select ? ast_print_select(s->select, b) : 0;
    case ST_SELECT: return s->select ? ast_print_select(s->select, b) : 0;
    case ST_INSERT:
        if ((rc = sbuf_adds(b, "INSERT INTO ")) || (rc = ast_print_ident(s->name, b))) return rc;
        if (s->insert_cols) {
            rc = sbuf_adds(b, " (");
            for (int i = 0; i < s->insert_cols->n && !rc; i++)
                if (!(i && (rc = sbuf_adds(b, ", ")))) rc = ast_print_ident(s->insert_cols->v[i], b);
            if (rc || (rc = sbuf_addc(b, ')'))) return rc;
        }
        rc = sbuf_adds(b, " VALUES ");
        for (int i = 0; s->rows && i < s->rows->n && !rc; i++) {
            if ((i && (rc = sbuf_adds(b, ", "))) || (rc = sbuf_addc(b, '(')) || (rc = print_exprs(s->rows->v[i], b)))
                break;
            rc = sbuf_addc(b, ')');
        }
        return rc;
    case ST_DROP_STREAM:
    case ST_DROP_QUERY:
        if ((rc = sbuf_printf(b, "DROP %s%s ", s->kind == ST_DROP_STREAM ? "STREAM" : "QUERY", ie))) return rc;
        return ast_print_ident(s->name, b);
    case ST_SHOW:
        if (s->show == SHOW_SETTING) return (rc = sbuf_adds(b, "SHOW ")) ? rc : ast_print_ident(s->name, b);
        return sbuf_adds(b, s->show == SHOW_STREAMS   ? "SHOW STREAMS"
                            : s->show == SHOW_QUERIES ? "SHOW QUERIES"
                            : s->show == SHOW_NODES   ? "SHOW NODES"
                                                      : "SHOW SETTINGS");
    case ST_DESCRIBE:
    case ST_SUBSCRIBE:
        if ((rc = sbuf_adds(b, s->kind == ST_DESCRIBE ? "DESCRIBE " : "SUBSCRIBE "))) return rc;
        return ast_print_ident(s->name, b);
    case ST_EXPLAIN:
        if ((rc = sbuf_adds(b, "EXPLAIN ")) || (s->explain_placement && (rc = sbuf_adds(b, "PLACEMENT "))) ||
            (s->explain_json && (rc = sbuf_adds(b, "(FORMAT JSON) "))))
            return rc;
        if (s->select) return ast_print_select(s->select, b);
        /* right after EXPLAIN, a bare "placement" would be the keyword */
        if (s->name && strcmp(s->name, "placement") == 0) return print_quoted(s->name, '"', b);
        return ast_print_ident(s->name, b);
    case ST_ALTER_QUERY_REBALANCE:
        if ((rc = sbuf_adds(b, "ALTER QUERY ")) || (rc = ast_print_ident(s->name, b))) return rc;
        return sbuf_adds(b, " REBALANCE");
    case ST_SET:
        if ((rc = sbuf_adds(b, "SET ")) || (rc = ast_print_ident(s->set_key, b)) || (rc = sbuf_adds(b, " = ")))
            return rc;
        return print_set_value(&s->set_value, b);
    }
    return XE_INVAL;
}
