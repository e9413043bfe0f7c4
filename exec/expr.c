/*
 * expr.c: bound expressions compiled to a flat postfix program.
 *
 * A query compiles each of its expressions once (xprog_compile); evaluating
 * one against a row is then a loop over an instruction array with a small
 * value stack, with no walk of the AST or the plan.  SQL semantics:
 * three-valued logic for AND/OR/NOT, NULL in -> NULL out for arithmetic and
 * comparisons, division or modulo by zero and integer overflow give NULL
 * (as in SQLite, which is our oracle), LIKE with % and _.
 *
 * Strings produced by functions (LOWER, ||, ...) go into a scratch batch's
 * arena owned by the caller, who resets it when the row is done.
 */
#include "exec/internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum xop {
    X_COL, X_CONST, X_NEG, X_NOT, X_ARITH, X_CMP, X_AND, X_OR, X_CONCAT, X_ISNULL, X_IN, X_LIKE,
    X_CAST, X_FUNC, X_JMP_FALSE, X_JMP, X_POP,
} xop;

struct xinstr {
    uint8_t op;
    uint8_t sub;     /* ast_op for ARITH/CMP, negation flag, cast type, plan_fn */
    uint16_t n;      /* argument count (IN, FUNC) */
    int32_t arg;     /* column, constant index, jump target */
};

static int emit(xprog *p, xop op, int sub, int n, int arg)
{
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        xinstr *c = realloc(p->code, (size_t)cap * sizeof *c);
        if (!c) return XE_NOMEM;
        p->code = c;
        p->cap = cap;
    }
    p->code[p->n++] = (xinstr){(uint8_t)op, (uint8_t)sub, (uint16_t)n, arg};
    return 0;
}

static int add_const(xprog *p, const ast_lit *l)
{
    val v = val_null();
    switch (l->type) {
    case TY_NULL: break;
    case TY_DOUBLE: v = val_double(l->d); break;
    case TY_TEXT: {
        size_t len = strlen(l->s);
        char *s = malloc(len + 1);
        if (!s) return XE_NOMEM;
        memcpy(s, l->s, len + 1);
        v = val_text(s, (uint32_t)len);
        break;
    }
    default: v = val_int(l->type, l->i); break;
    }
    val *c = realloc(p->consts, (size_t)(p->nconsts + 1) * sizeof *c);
    if (!c) {
        if (v.type == TY_TEXT) free((char *)v.s);
        return XE_NOMEM;
    }
    p->consts = c;
    p->consts[p->nconsts] = v;
    return p->nconsts++;
}

static int compile(xprog *p, const plan_expr *e, int depth)
{
    int rc;
    if (depth + 1 > p->maxstack) p->maxstack = depth + 1;
    switch (e->kind) {
    case PE_CONST: {
        int k = add_const(p, &e->lit);
        if (k < 0) return k;
        return emit(p, X_CONST, 0, 0, k);
    }
    case PE_COL: return emit(p, X_COL, 0, 0, e->col);
    case PE_UNARY:
        if ((rc = compile(p, e->args[0], depth))) return rc;
        if (e->op == OP_POS) return 0;
        return emit(p, e->op == OP_NOT ? X_NOT : X_NEG, 0, 0, 0);
    case PE_BINARY:
        if ((rc = compile(p, e->args[0], depth)) || (rc = compile(p, e->args[1], depth + 1))) return rc;
        switch (e->op) {
        case OP_AND: return emit(p, X_AND, 0, 0, 0);
        case OP_OR: return emit(p, X_OR, 0, 0, 0);
        case OP_CONCAT: return emit(p, X_CONCAT, 0, 0, 0);
        case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
            return emit(p, X_CMP, e->op, 0, 0);
        default: return emit(p, X_ARITH, e->op, 0, 0);
        }
    case PE_ISNULL:
        if ((rc = compile(p, e->args[0], depth))) return rc;
        return emit(p, X_ISNULL, e->negated, 0, 0);
    case PE_IN:
        for (int i = 0; i < e->nargs; i++)
            if ((rc = compile(p, e->args[i], depth + i))) return rc;
        return emit(p, X_IN, e->negated, e->nargs, 0);
    case PE_LIKE:
        if ((rc = compile(p, e->args[0], depth)) || (rc = compile(p, e->args[1], depth + 1))) return rc;
        return emit(p, X_LIKE, e->negated, 0, 0);
    case PE_CAST:
        if ((rc = compile(p, e->args[0], depth))) return rc;
        return emit(p, X_CAST, e->type, 0, 0);
    case PE_FUNC:
        for (int i = 0; i < e->nargs; i++)
            if ((rc = compile(p, e->args[i], depth + i))) return rc;
        return emit(p, X_FUNC, e->fn, e->nargs, e->type);
    case PE_CASE: {
        /* cond1 JF(next) then1 JMP(end) next: cond2 ... [else | NULL] end: */
        int pairs = (e->nargs - e->has_else) / 2;
        int *ends = calloc((size_t)pairs + 1, sizeof *ends);
        if (!ends) return XE_NOMEM;
        for (int i = 0; i < pairs; i++) {
            if ((rc = compile(p, e->args[2 * i], depth))) goto case_out;
            int jf = p->n;
            if ((rc = emit(p, X_JMP_FALSE, 0, 0, 0))) goto case_out;
            if ((rc = compile(p, e->args[2 * i + 1], depth))) goto case_out;
            ends[i] = p->n;
            if ((rc = emit(p, X_JMP, 0, 0, 0))) goto case_out;
            p->code[jf].arg = p->n;
        }
        if (e->has_else) rc = compile(p, e->args[e->nargs - 1], depth);
        else {
            ast_lit nl = {0};
            int k = add_const(p, &nl);
            rc = k < 0 ? k : emit(p, X_CONST, 0, 0, k);
        }
        for (int i = 0; !rc && i < pairs; i++) p->code[ends[i]].arg = p->n;
    case_out:
        free(ends);
        return rc;
    }
    }
    return XE_INVAL;
}

int xprog_compile(const plan_expr *e, xprog *p, xerr *err)
{
    memset(p, 0, sizeof *p);
    p->type = e->type;
    int rc = compile(p, e, 0);
    if (rc) {
        xprog_fini(p);
        return xerr_set(err, rc, "out of memory compiling an expression");
    }
    p->maxstack += 2;
    return 0;
}

void xprog_fini(xprog *p)
{
    for (int i = 0; i < p->nconsts; i++)
        if (p->consts[i].type == TY_TEXT) free((char *)p->consts[i].s);
    free(p->consts);
    free(p->code);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------ evaluation */

static int is_num(const val *v) { return v->type == TY_DOUBLE || v->type == TY_INT || v->type == TY_BIGINT ||
                                         v->type == TY_TIMESTAMP || v->type == TY_INTERVAL; }
static double as_d(const val *v) { return v->type == TY_DOUBLE ? v->d : (double)v->i; }

static val arith(int op, const val *a, const val *b)
{
    if (a->type == TY_NULL || b->type == TY_NULL || !is_num(a) || !is_num(b)) return val_null();
    if (a->type == TY_DOUBLE || b->type == TY_DOUBLE) {
        double x = as_d(a), y = as_d(b);
        switch (op) {
        case OP_ADD: return val_double(x + y);
        case OP_SUB: return val_double(x - y);
        case OP_MUL: return val_double(x * y);
        case OP_DIV: return y == 0 ? val_null() : val_double(x / y);
        case OP_MOD: return y == 0 ? val_null() : val_double(fmod(x, y));
        }
        return val_null();
    }
    int64_t x = a->i, y = b->i, z = 0;
    int ovf = 0;
    switch (op) {
    case OP_ADD: ovf = __builtin_add_overflow(x, y, &z); break;
    case OP_SUB: ovf = __builtin_sub_overflow(x, y, &z); break;
    case OP_MUL: ovf = __builtin_mul_overflow(x, y, &z); break;
    case OP_DIV: if (y == 0 || (x == INT64_MIN && y == -1)) return val_null(); z = x / y; break;
    case OP_MOD: if (y == 0 || y == -1) { if (y == 0) return val_null(); z = 0; break; } z = x % y; break;
    }
    if (ovf) return val_null();
    /* timestamp +/- interval stays a timestamp; timestamp - timestamp is an interval in ms */
    sql_type t = TY_BIGINT;
    if (a->type == TY_TIMESTAMP || b->type == TY_TIMESTAMP)
        t = (a->type == TY_TIMESTAMP && b->type == TY_TIMESTAMP) ? TY_BIGINT : TY_TIMESTAMP;
    return val_int(t, z);
}

/* Compare for SQL comparison operators; text vs timestamp parses the text. */
static int cmp_vals(const val *a, const val *b, int *res)
{
    if (a->type == TY_TEXT && b->type == TY_TEXT) {
        uint32_t n = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->s, b->s, n);
        *res = c ? c : (a->len > b->len) - (a->len < b->len);
        return 0;
    }
    if (a->type == TY_TEXT || b->type == TY_TEXT) {
        const val *t = a->type == TY_TEXT ? a : b, *o = a->type == TY_TEXT ? b : a;
        int64_t ms;
        if (o->type != TY_TIMESTAMP || fmt_parse_timestamp(t->s, t->len, &ms)) return -1;
        int64_t x = a->type == TY_TEXT ? ms : a->i, y = b->type == TY_TEXT ? ms : b->i;
        *res = (x > y) - (x < y);
        return 0;
    }
    if (a->type == TY_BOOL && b->type == TY_BOOL) {
        *res = (a->i > b->i) - (a->i < b->i);
        return 0;
    }
    if (a->type == TY_DOUBLE || b->type == TY_DOUBLE) {
        double x = as_d(a), y = as_d(b);
        *res = (x > y) - (x < y);
        return 0;
    }
    *res = (a->i > b->i) - (a->i < b->i);
    return 0;
}

static int like_match(const char *s, size_t n, const char *p, size_t m)
{
    size_t i = 0, j = 0, star_j = (size_t)-1, star_i = 0;
    while (i < n) {
        if (j < m && (p[j] == '_' || p[j] == s[i])) { i++; j++; }
        else if (j < m && p[j] == '%') { star_j = j++; star_i = i; }
        else if (star_j != (size_t)-1) { j = star_j + 1; i = ++star_i; }
        else return 0;
    }
    while (j < m && p[j] == '%') j++;
    return j == m;
}

static val cast_val(const val *a, sql_type t, batch *scratch)
{
    if (a->type == TY_NULL) return val_null();
    char why[64];
    switch (t) {
    case TY_TEXT: {
        if (a->type == TY_TEXT) return *a;
        sbuf b;
        sbuf_init(&b);
        val r = val_null();
        if (a->type == TY_BOOL) sbuf_adds(&b, a->i ? "true" : "false");
        else if (fmt_val_text(a, &b)) { sbuf_fini(&b); return r; }
        batch_put_text(scratch, &r, b.p ? b.p : "", b.len);
        sbuf_fini(&b);
        return r;
    }
    case TY_DOUBLE:
        if (a->type == TY_TEXT) {
            val r;
            return fmt_parse_value(TY_DOUBLE, a->s, a->len, 1, &r, why, sizeof why) ? val_null() : r;
        }
        return val_double(as_d(a));
    case TY_INT: case TY_BIGINT: case TY_TIMESTAMP:
        if (a->type == TY_TEXT) {
            val r;
            if (fmt_parse_value(t, a->s, a->len, 1, &r, why, sizeof why)) return val_null();
            return r;
        }
        if (a->type == TY_DOUBLE) {
            if (!(a->d > -9.2e18 && a->d < 9.2e18)) return val_null();
            return val_int(t, (int64_t)a->d);
        }
        return val_int(t, a->i);
    case TY_BOOL:
        if (a->type == TY_TEXT) {
            val r;
            return fmt_parse_value(TY_BOOL, a->s, a->len, 1, &r, why, sizeof why) ? val_null() : r;
        }
        return val_int(TY_BOOL, a->type == TY_DOUBLE ? a->d != 0 : a->i != 0);
    default: return *a;
    }
}

static val fn_eval(int fn, int n, val *a, sql_type rt, batch *scratch)
{
    switch (fn) {
    case FN_COALESCE:
        for (int i = 0; i < n; i++)
            if (a[i].type != TY_NULL) return a[i].type != TY_DOUBLE && rt == TY_DOUBLE ? val_double(as_d(&a[i])) : a[i];
        return val_null();
    case FN_NULLIF: {
        int c;
        if (a[0].type == TY_NULL || a[1].type == TY_NULL) return a[0];
        return !cmp_vals(&a[0], &a[1], &c) && c == 0 ? val_null() : a[0];
    }
    case FN_GREATEST: case FN_LEAST: {
        val best = val_null();
        for (int i = 0; i < n; i++) {
            int c;
            if (a[i].type == TY_NULL) return val_null();
            if (best.type == TY_NULL || (!cmp_vals(&a[i], &best, &c) && (fn == FN_GREATEST ? c > 0 : c < 0)))
                best = a[i];
        }
        return rt == TY_DOUBLE && best.type != TY_DOUBLE && best.type != TY_NULL ? val_double(as_d(&best)) : best;
    }
    case FN_CONCAT: {
        size_t len = 0;
        for (int i = 0; i < n; i++) if (a[i].type == TY_TEXT) len += a[i].len;
        sbuf b;
        sbuf_init(&b);
        for (int i = 0; i < n; i++) {
            if (a[i].type == TY_NULL) continue;
            if (a[i].type == TY_TEXT) sbuf_add(&b, a[i].s, a[i].len);
            else if (a[i].type == TY_BOOL) sbuf_adds(&b, a[i].i ? "true" : "false");
            else fmt_val_text(&a[i], &b);
        }
        val r = val_null();
        (void)len;
        batch_put_text(scratch, &r, b.p ? b.p : "", b.len);
        sbuf_fini(&b);
        return r;
    }
    default: break;
    }
    for (int i = 0; i < n; i++)
        if (a[i].type == TY_NULL) return val_null();
    switch (fn) {
    case FN_ABS:
        if (a[0].type == TY_DOUBLE) return val_double(fabs(a[0].d));
        if (a[0].i == INT64_MIN) return val_null();
        return val_int(a[0].type, a[0].i < 0 ? -a[0].i : a[0].i);
    case FN_MOD: return arith(OP_MOD, &a[0], &a[1]);
    case FN_ROUND: {
        if (a[0].type != TY_DOUBLE) return a[0];
        double m = n > 1 ? pow(10, (double)a[1].i) : 1;
        return val_double(round(a[0].d * m) / m);
    }
    case FN_FLOOR: return a[0].type == TY_DOUBLE ? val_double(floor(a[0].d)) : a[0];
    case FN_CEIL: return a[0].type == TY_DOUBLE ? val_double(ceil(a[0].d)) : a[0];
    case FN_SQRT: return as_d(&a[0]) < 0 ? val_null() : val_double(sqrt(as_d(&a[0])));
    case FN_POWER: return val_double(pow(as_d(&a[0]), as_d(&a[1])));
    case FN_LENGTH: {
        int64_t chars = 0; /* UTF-8 characters */
        for (uint32_t i = 0; i < a[0].len; i++) chars += ((unsigned char)a[0].s[i] & 0xc0) != 0x80;
        return val_int(TY_BIGINT, chars);
    }
    case FN_LOWER: case FN_UPPER: {
        val r = val_null();
        if (batch_put_text(scratch, &r, a[0].s, a[0].len)) return val_null();
        char *s = (char *)r.s;
        for (uint32_t i = 0; i < r.len; i++)
            s[i] = (char)(fn == FN_LOWER ? tolower((unsigned char)s[i]) : toupper((unsigned char)s[i]));
        return r;
    }
    case FN_TRIM: {
        const char *s = a[0].s;
        uint32_t len = a[0].len;
        while (len && isspace((unsigned char)*s)) { s++; len--; }
        while (len && isspace((unsigned char)s[len - 1])) len--;
        return val_text(s, len);
    }
    case FN_SUBSTR: {
        /* SQL: 1-based start, optional length */
        int64_t start = a[1].i, len = n > 2 ? a[2].i : INT64_MAX / 2;
        if (len < 0) return val_null();
        int64_t slen = a[0].len;
        int64_t from = start > 0 ? start - 1 : 0;
        int64_t to = start > 0 ? from + len : start - 1 + len;
        if (to > slen) to = slen;
        if (from >= to) return val_text("", 0);
        return val_text(a[0].s + from, (uint32_t)(to - from));
    }
    }
    return val_null();
}

val xprog_eval(const xprog *p, const val *row, batch *scratch)
{
    /* the common case: a bare column reference */
    if (p->n == 1 && p->code[0].op == X_COL) {
        val r = row[p->code[0].arg];
        if (p->type == TY_DOUBLE && r.type != TY_DOUBLE && r.type != TY_NULL) r = val_double((double)r.i);
        return r;
    }
    val stack_small[32];
    val *st = p->maxstack <= 32 ? stack_small : malloc((size_t)p->maxstack * sizeof(val));
    if (!st) return val_null();
    int sp = 0;
    for (int pc = 0; pc < p->n; pc++) {
        const xinstr *in = &p->code[pc];
        switch ((xop)in->op) {
        case X_COL: st[sp++] = row[in->arg]; break;
        case X_CONST: st[sp++] = p->consts[in->arg]; break;
        case X_NEG: {
            val *a = &st[sp - 1];
            if (a->type == TY_DOUBLE) a->d = -a->d;
            else if (a->type != TY_NULL) {
                if (a->i == INT64_MIN) *a = val_null();
                else a->i = -a->i;
            }
            break;
        }
        case X_NOT: {
            val *a = &st[sp - 1];
            if (a->type != TY_NULL) *a = val_int(TY_BOOL, !a->i);
            break;
        }
        case X_ARITH:
            st[sp - 2] = arith(in->sub, &st[sp - 2], &st[sp - 1]);
            sp--;
            break;
        case X_CMP: {
            val *a = &st[sp - 2], *b = &st[sp - 1];
            int c;
            if (a->type == TY_NULL || b->type == TY_NULL || cmp_vals(a, b, &c)) *a = val_null();
            else {
                int r = 0;
                switch (in->sub) {
                case OP_EQ: r = c == 0; break;
                case OP_NE: r = c != 0; break;
                case OP_LT: r = c < 0; break;
                case OP_LE: r = c <= 0; break;
                case OP_GT: r = c > 0; break;
                case OP_GE: r = c >= 0; break;
                }
                *a = val_int(TY_BOOL, r);
            }
            sp--;
            break;
        }
        case X_AND: case X_OR: {
            val *a = &st[sp - 2], *b = &st[sp - 1];
            int an = a->type == TY_NULL, bn = b->type == TY_NULL;
            int av = !an && a->i, bv = !bn && b->i;
            if (in->op == X_AND) {
                if ((!an && !av) || (!bn && !bv)) *a = val_int(TY_BOOL, 0);
                else if (an || bn) *a = val_null();
                else *a = val_int(TY_BOOL, 1);
            } else {
                if (av || bv) *a = val_int(TY_BOOL, 1);
                else if (an || bn) *a = val_null();
                else *a = val_int(TY_BOOL, 0);
            }
            sp--;
            break;
        }
        case X_CONCAT: {
            val *a = &st[sp - 2], *b = &st[sp - 1];
            if (a->type == TY_NULL || b->type == TY_NULL) *a = val_null();
            else *a = fn_eval(FN_CONCAT, 2, a, TY_TEXT, scratch);
            sp--;
            break;
        }
        case X_ISNULL: {
            int isn = st[sp - 1].type == TY_NULL;
            st[sp - 1] = val_int(TY_BOOL, in->sub ? !isn : isn);
            break;
        }
        case X_IN: {
            int n = in->n;
            val *a = &st[sp - n];
            int found = 0, saw_null = 0;
            if (a->type == TY_NULL) saw_null = 1;
            else
                for (int i = 1; i < n; i++) {
                    int c;
                    if (a[i].type == TY_NULL) saw_null = 1;
                    else if (!cmp_vals(a, &a[i], &c) && c == 0) { found = 1; break; }
                }
            if (found) *a = val_int(TY_BOOL, !in->sub);
            else if (saw_null) *a = val_null();
            else *a = val_int(TY_BOOL, in->sub);
            sp -= n - 1;
            break;
        }
        case X_LIKE: {
            val *a = &st[sp - 2], *b = &st[sp - 1];
            if (a->type == TY_NULL || b->type == TY_NULL) *a = val_null();
            else {
                int m = like_match(a->s, a->len, b->s, b->len);
                *a = val_int(TY_BOOL, in->sub ? !m : m);
            }
            sp--;
            break;
        }
        case X_CAST: st[sp - 1] = cast_val(&st[sp - 1], (sql_type)in->sub, scratch); break;
        case X_FUNC: {
            int n = in->n;
            val r = fn_eval(in->sub, n, &st[sp - n], (sql_type)in->arg, scratch);
            sp -= n;
            st[sp++] = r;
            break;
        }
        case X_JMP_FALSE: {
            val c = st[--sp];
            if (c.type == TY_NULL || !c.i) pc = in->arg - 1;
            break;
        }
        case X_JMP: pc = in->arg - 1; break;
        case X_POP: sp--; break;
        }
    }
    val r = sp > 0 ? st[sp - 1] : val_null();
    /* integer results of a DOUBLE-typed expression (e.g. CASE branches) become doubles */
    if (p->type == TY_DOUBLE && r.type != TY_DOUBLE && r.type != TY_NULL) r = val_double(as_d(&r));
    else if (r.type != TY_NULL && r.type != TY_TEXT && r.type != TY_DOUBLE && p->type != TY_NULL &&
             p->type != TY_TEXT && p->type != TY_DOUBLE)
        r.type = (uint8_t)p->type;
    if (st != stack_small) free(st);
    return r;
}

int xprog_true(const xprog *p, const val *row, batch *scratch)
{
    val v = xprog_eval(p, row, scratch);
    return v.type == TY_BOOL && v.i;
}
