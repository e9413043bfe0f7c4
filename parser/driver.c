/*
 * driver.c: the driver, and the only caller of the generated parser.
 *
 * The whole input is tokenised first.  Tokens are cut into statements at
 * every ';' (the lexer already skipped those inside strings, quoted
 * identifiers and comments), and each statement goes to a fresh Lemon parser,
 * so one bad statement never hides the errors of the next.  A lexical error
 * spoils only its own statement, except an unterminated string, quoted
 * identifier or comment, which swallows the rest of the input.
 *
 * Lemon cannot say which tokens it would have accepted, so after a syntax
 * error we replay the statement's tokens up to the error into a fresh parser
 * and ask parser_accepts() (grammar.y) about every terminal in turn.
 *
 * Limits: an expression may nest at most PARSE_MAX_DEPTH deep (Lemon's own
 * stack bounds the other kinds of nesting), so every recursive walk of an
 * accepted AST is bounded.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser/internal.h"
#include "parser/grammar.h"

#define PARSE_MAX_DEPTH 1000
#define EXPECT_MAX 8

/* ------------------------------------------------------------------ token names */

/* How "expected ..." names each terminal.  Keywords (codes below TK_ID, by
 * the order of grammar.y's %token block) are their upper-case spelling. */
static const char *const tok_names[TK_NOT_LA + 1] = {
    [TK_CREATE] = "CREATE", [TK_STREAM] = "STREAM", [TK_QUERY] = "QUERY", [TK_IF] = "IF",
    [TK_NOT] = "NOT", [TK_EXISTS] = "EXISTS", [TK_WITH] = "WITH", [TK_AS] = "AS",
    [TK_INSERT] = "INSERT", [TK_INTO] = "INTO", [TK_VALUES] = "VALUES", [TK_DROP] = "DROP",
    [TK_SHOW] = "SHOW", [TK_STREAMS] = "STREAMS", [TK_QUERIES] = "QUERIES", [TK_NODES] = "NODES",
    [TK_DESCRIBE] = "DESCRIBE", [TK_EXPLAIN] = "EXPLAIN", [TK_PLACEMENT] = "PLACEMENT",
    [TK_FORMAT] = "FORMAT", [TK_JSON] = "JSON", [TK_SUBSCRIBE] = "SUBSCRIBE", [TK_SET] = "SET",
    [TK_ALTER] = "ALTER", [TK_REBALANCE] = "REBALANCE", [TK_TABLE] = "TABLE", [TK_PRIMARY] = "PRIMARY",
    [TK_KEY] = "KEY",
    [TK_SELECT] = "SELECT", [TK_DISTINCT] = "DISTINCT", [TK_FROM] = "FROM", [TK_WINDOW] = "WINDOW",
    [TK_TUMBLING] = "TUMBLING", [TK_HOPPING] = "HOPPING", [TK_SESSION] = "SESSION", [TK_SIZE] = "SIZE",
    [TK_ADVANCE] = "ADVANCE", [TK_BY] = "BY", [TK_GAP] = "GAP", [TK_GRACE] = "GRACE",
    [TK_PERIOD] = "PERIOD", [TK_JOIN] = "JOIN", [TK_ON] = "ON", [TK_WITHIN] = "WITHIN",
    [TK_CROSS] = "CROSS", [TK_UNNEST] = "UNNEST", [TK_LEFT] = "LEFT", [TK_INNER] = "INNER", [TK_OUTER] = "OUTER",
    [TK_WHERE] = "WHERE", [TK_GROUP] = "GROUP", [TK_HAVING] = "HAVING", [TK_EMIT] = "EMIT",
    [TK_CHANGES] = "CHANGES", [TK_FINAL] = "FINAL", [TK_LIMIT] = "LIMIT", [TK_AND] = "AND",
    [TK_OR] = "OR", [TK_IS] = "IS", [TK_NULL] = "NULL", [TK_BETWEEN] = "BETWEEN", [TK_IN] = "IN",
    [TK_LIKE] = "LIKE", [TK_CASE] = "CASE", [TK_WHEN] = "WHEN", [TK_THEN] = "THEN", [TK_ELSE] = "ELSE",
    [TK_END] = "END", [TK_CAST] = "CAST", [TK_TRUE] = "TRUE", [TK_FALSE] = "FALSE",
    [TK_INTERVAL] = "INTERVAL", [TK_MILLISECONDS] = "MILLISECONDS", [TK_SECONDS] = "SECONDS",
    [TK_MINUTES] = "MINUTES", [TK_HOURS] = "HOURS", [TK_DAYS] = "DAYS", [TK_BIGINT] = "BIGINT",
    [TK_INT] = "INT", [TK_INTEGER] = "INTEGER", [TK_DOUBLE] = "DOUBLE", [TK_FLOAT] = "FLOAT",
    [TK_REAL] = "REAL", [TK_TEXT] = "TEXT", [TK_VARCHAR] = "VARCHAR", [TK_STRING] = "STRING",
    [TK_BOOLEAN] = "BOOLEAN", [TK_BOOL] = "BOOL", [TK_TIMESTAMP] = "TIMESTAMP",
    [TK_ID] = "identifier", [TK_INTEGER_LIT] = "integer", [TK_FLOAT_LIT] = "number",
    [TK_STRING_LIT] = "string", [TK_LP] = "'('", [TK_RP] = "')'", [TK_COMMA] = "','", [TK_DOT] = "'.'",
    [TK_STAR] = "'*'", [TK_EQ] = "'='", [TK_NE] = "'<>'", [TK_LT] = "'<'", [TK_LE] = "'<='",
    [TK_GT] = "'>'", [TK_GE] = "'>='", [TK_PLUS] = "'+'", [TK_MINUS] = "'-'", [TK_SLASH] = "'/'",
    [TK_REM] = "'%'", [TK_CONCAT] = "'||'", [TK_SEMI] = "';'", [TK_NOT_LA] = "NOT",
};

const char *const parse_keywords[] = {
    "ADVANCE", "ALTER", "AND", "AS", "BETWEEN", "BIGINT", "BOOL", "BOOLEAN", "BY", "CASE", "CAST", "CHANGES",
    "CREATE", "CROSS", "DAY", "DAYS", "DESCRIBE", "DISTINCT", "DOUBLE", "DROP", "ELSE", "EMIT", "END", "EXISTS",
    "EXPLAIN", "FALSE", "FINAL", "FLOAT", "FORMAT", "FROM", "GAP", "GRACE", "GROUP", "HAVING", "HOPPING",
    "HOUR", "HOURS", "IF", "IN", "INNER", "INSERT", "INT", "INTEGER", "INTERVAL", "INTO", "IS", "JOIN", "JSON", "KEY",
    "LEFT", "LIKE", "LIMIT", "MILLISECOND", "MILLISECONDS", "MINUTE", "MINUTES", "NODES", "NOT", "NULL", "ON",
    "OR", "OUTER", "PERIOD", "PLACEMENT", "PRIMARY", "QUERIES", "QUERY", "REAL", "REBALANCE", "SECOND", "SECONDS", "SELECT", "SESSION",
    "SET", "SHOW", "SIZE", "STREAM", "STREAMS", "STRING", "SUBSCRIBE", "TABLE", "TEXT", "THEN", "TIMESTAMP",
    "TRUE", "TUMBLING", "UNNEST", "VALUES", "VARCHAR", "WHEN", "WHERE", "WINDOW", "WITH", "WITHIN", NULL,
};

/* What a SET that does not parse names (the engine's settings, as SHOW
 * SETTINGS lists them: t_engine_errors checks that they agree). */
#define SETTINGS                                                                                                       \
    "parallelism, placement, replicas, ft, checkpoint_interval, shadow, rebalance_interval, rebalance_threshold, "     \
    "offset, memory_budget"

/* ------------------------------------------------------------------ tokens of a whole input */

typedef struct stmt_span {
    int first, n;   /* tokens [first, first+n) */
    token end;      /* the ';' or end of input that closed it */
    int lex_err;    /* a lexical error spoiled this statement */
    int err_line, err_col;
    char err_msg[128];
} stmt_span;

typedef struct tokens {
    token *v;
    int n, cap;
    stmt_span *spans;
    int nspans, capspans;
} tokens;

static int push(void **v, int *cap, int n, size_t sz)
{
    if (n < *cap) return 0;
    if (*cap > INT_MAX / 2) return XE_NOMEM;
    int ncap = *cap ? *cap * 2 : 64;
    void *nv = realloc(*v, (size_t)ncap * sz);
    if (!nv) return XE_NOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

/* Tokenise buf[0..len) (buf[len] == 0) into statements.  Empty statements
 * (";;", trailing comments) are dropped. */
static int tokenize(const char *buf, size_t len, tokens *tk)
{
    lexer lx;
    lex_init(&lx, buf, len);
    stmt_span cur;
    memset(&cur, 0, sizeof cur);
    for (;;) {
        token t;
        int code = lex_next(&lx, &t);
        if (code == LEX_ERROR) {
            if (!cur.lex_err) {
                cur.lex_err = 1;
                cur.err_line = lx.err_line;
                cur.err_col = lx.err_col;
                snprintf(cur.err_msg, sizeof cur.err_msg, "%s", lx.err_msg);
            }
            continue; /* a fatal error leaves the lexer at the end */
        }
        if (code == TK_SEMI || code == LEX_EOF) {
            cur.end = t;
            if (cur.n || cur.lex_err) {
                if (push((void **)&tk->spans, &tk->capspans, tk->nspans, sizeof *tk->spans)) return XE_NOMEM;
                tk->spans[tk->nspans++] = cur;
            }
            if (code == LEX_EOF) return 0;
            memset(&cur, 0, sizeof cur);
            cur.first = tk->n;
            continue;
        }
        if (push((void **)&tk->v, &tk->cap, tk->n, sizeof *tk->v)) return XE_NOMEM;
        /* NOT right before LIKE, IN or BETWEEN binds like them (see grammar.y) */
        if (cur.n && tk->v[tk->n - 1].code == TK_NOT && (code == TK_LIKE || code == TK_IN || code == TK_BETWEEN))
            tk->v[tk->n - 1].code = TK_NOT_LA;
        tk->v[tk->n++] = t;
        cur.n++;
    }
}

/* ------------------------------------------------------------------ one statement */

static int failed(const pctx *P) { return P->syntax || P->overflow || P->oom || P->err; }

/* Which terminals a parser would take after toks[0..n): ok[code] for every
 * terminal, and ok[0] for the end of the statement.  One replay into a fresh
 * parser, then parser_accepts() per terminal, so an error costs O(tokens). */
static void expected_set(const token *toks, int n, unsigned char ok[TK_NOT_LA + 1])
{
    pctx Q;
    memset(&Q, 0, sizeof Q);
    memset(ok, 0, TK_NOT_LA + 1);
    void *p = parser_Alloc(malloc);
    if (!p) return;
    int i;
    for (i = 0; i < n && !Q.syntax && !Q.overflow; i++) parser_(p, toks[i].code, toks[i], &Q);
    if (i == n && !Q.syntax && !Q.overflow)
        for (int code = 0; code <= TK_NOT_LA && code < parser_ntokens(); code++)
            if (code != TK_SEMI) ok[code] = (unsigned char)parser_accepts(p, code);
    parser_Free(p, free);
    ast_stmt_free(Q.stmt);
}

/* An unquoted word that could be a misspelt keyword. */
static int is_word(const token *t) { return t->code == TK_ID && t->len >= 3 && t->len <= 40 && t->s[0] != '"'; }

/* The keyword closest to word t among those in ok (which came from
 * expected_set), or 0.  Non-reserved keywords that fit only as an identifier
 * do not count. */
static int near_keyword(const token *t, const unsigned char *ok)
{
    char w[48];
    memcpy(w, t->s, t->len);
    w[t->len] = 0;
    int best = 0, bestd = t->len >= 4 ? 3 : 2;
    for (int code = 1; code < TK_ID; code++) {
        if (!ok[code] || (ok[TK_ID] && parser_Fallback(code) == TK_ID)) continue;
        int d = str_distance(w, tok_names[code]);
        if (d < bestd) {
            best = code;
            bestd = d;
        }
    }
    return best;
}

/* Is word t close to any keyword at all (cheap; before any replay)? */
static int near_any_keyword(const token *t)
{
    unsigned char all[TK_NOT_LA + 1];
    memset(all, 1, sizeof all);
    all[TK_ID] = 0;
    return near_keyword(t, all);
}

static void describe_token(const token *t, char *out, size_t n)
{
    if (t->code == 0)
        snprintf(out, n, "end of input");
    else if (t->len > 40)
        snprintf(out, n, "'%.37s...'", t->s);
    else
        snprintf(out, n, "'%.*s'", (int)t->len, t->s);
}

static void syntax_message_of(const token *toks, int n, int k, const token *end, parse_error *e);

/* The message for a syntax error at toks[k] (k == n: at the end).  A SET
 * that does not parse also says what SET takes. */
static void syntax_message(const token *toks, int n, int k, const token *end, parse_error *e)
{
    syntax_message_of(toks, n, k, end, e);
    if (n > 0 && toks[0].code == TK_SET) {
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len, " (SET name = value; settings: " SETTINGS ")");
    }
}

static void syntax_message_of(const token *toks, int n, int k, const token *end, parse_error *e)
{
    unsigned char ok[TK_NOT_LA + 1];
    expected_set(toks, k, ok);
    const token *at = k < n ? &toks[k] : end;
    char what[64];
    int kw = k < n && is_word(at) ? near_keyword(at, ok) : 0;

    /* "SELECT a FORM s": FORM was taken as an alias and 's' is the error;
     * report the misspelt keyword instead. */
    if (!kw && k > 0 && is_word(&toks[k - 1]) && near_any_keyword(&toks[k - 1])) {
        unsigned char prev[TK_NOT_LA + 1];
        expected_set(toks, k - 1, prev);
        int pkw = near_keyword(&toks[k - 1], prev);
        if (pkw) {
            describe_token(&toks[k - 1], what, sizeof what);
            e->line = toks[k - 1].line;
            e->col = toks[k - 1].col;
            snprintf(e->msg, sizeof e->msg, "unexpected %s, expected %s", what, tok_names[pkw]);
            return;
        }
    }
    e->line = at->line;
    e->col = at->col;
    describe_token(at, what, sizeof what);
    if (kw) {
        snprintf(e->msg, sizeof e->msg, "unexpected %s, expected %s", what, tok_names[kw]);
        return;
    }
    if (k > 0 && toks[k - 1].code == TK_SHOW) { /* its keywords fall back to ID: name them */
        snprintf(e->msg, sizeof e->msg, "unexpected %s, expected one of: STREAMS, QUERIES, NODES, SETTINGS, "
                 "or a setting's name", what);
        return;
    }

    /* keywords first, then the rest in %token order; ';' (the end) last */
    const char *list[TK_NOT_LA + 2];
    int nl = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int code = 1; code <= TK_NOT_LA; code++) {
            if (!ok[code] || (code < TK_ID) != (pass == 0) || code == TK_NOT_LA) continue;
            if (ok[TK_ID] && parser_Fallback(code) == TK_ID) continue; /* "identifier" covers it */
            list[nl++] = tok_names[code];
        }
    if (ok[TK_NOT_LA] && !ok[TK_NOT]) list[nl++] = "NOT";
    if (ok[0]) list[nl++] = "';'";

    size_t len = (size_t)snprintf(e->msg, sizeof e->msg, "unexpected %s", what);
    if (nl == 1) {
        snprintf(e->msg + len, sizeof e->msg - len, ", expected %s", list[0]);
    } else if (nl > 1) {
        len += (size_t)snprintf(e->msg + len, sizeof e->msg - len, ", expected one of: ");
        for (int i = 0; i < nl && i < EXPECT_MAX && len < sizeof e->msg; i++)
            len += (size_t)snprintf(e->msg + len, sizeof e->msg - len, "%s%s", i ? ", " : "", list[i]);
        if (nl > EXPECT_MAX && len < sizeof e->msg) snprintf(e->msg + len, sizeof e->msg - len, ", ...");
    }
}

/* How deep an expression nests; iterative along the 'a' side (see ast.c). */
static int expr_depth(const ast_expr *e)
{
    int best = 0;
    for (int lvl = 1; e; lvl++, e = e->a) {
        int d = expr_depth(e->b), d2 = expr_depth(e->c);
        if (d2 > d) d = d2;
        for (int i = 0; e->list && i < e->list->n; i++)
            if ((d2 = expr_depth(e->list->v[i])) > d) d = d2;
        if (lvl + d > best) best = lvl + d;
        if (best > PARSE_MAX_DEPTH) return best;
    }
    return best;
}

static const ast_expr *too_deep(const ast_expr *e)
{
    return e && expr_depth(e) > PARSE_MAX_DEPTH ? e : NULL;
}

static const ast_expr *too_deep_list(const ast_exprs *l)
{
    const ast_expr *x = NULL;
    for (int i = 0; l && i < l->n && !x; i++) x = too_deep(l->v[i]);
    return x;
}

static const ast_expr *too_deep_select(const ast_select *s)
{
    const ast_expr *x = NULL;
    if (!s) return NULL;
    for (int i = 0; s->items && i < s->items->n && !x; i++) x = too_deep(s->items->v[i].expr);
    if (!x && s->from) x = too_deep_select(s->from->sub);
    if (!x && s->join) x = too_deep_select(s->join->sub);
    if (!x) x = too_deep(s->join_on);
    if (!x) x = too_deep(s->where);
    if (!x) x = too_deep_list(s->group_by);
    if (!x) x = too_deep(s->having);
    return x;
}

static const ast_expr *too_deep_stmt(const ast_stmt *s)
{
    const ast_expr *x = too_deep_select(s->select);
    for (int i = 0; s->rows && i < s->rows->n && !x; i++) x = too_deep_list(s->rows->v[i]);
    return x;
}

/* The position just after token t. */
static void pos_after(const token *t, int *line, int *col)
{
    int l = t->line, c = t->col;
    for (size_t i = 0; i < t->len; i++) {
        unsigned char ch = (unsigned char)t->s[i];
        if (ch == '\n') {
            l++;
            c = 1;
        } else if ((ch & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* Parse toks[0..n).  Returns 0 with *out set, XE_SYNTAX with *e filled, or XE_NOMEM. */
static int parse_stmt(const token *toks, int n, const token *end, ast_stmt **out, parse_error *e)
{
    pctx P;
    memset(&P, 0, sizeof P);
    *out = NULL;
    void *p = parser_Alloc(malloc);
    if (!p) return XE_NOMEM;
    int k = 0;
    for (; k < n && !failed(&P); k++) parser_(p, toks[k].code, toks[k], &P);
    if (!failed(&P)) {
        token t = *end;
        t.code = 0;
        pos_after(&toks[n - 1], &t.line, &t.col);
        parser_(p, 0, t, &P);
        k = n + 1;
    }
    parser_Free(p, free);
    if (P.oom) {
        ast_stmt_free(P.stmt);
        return XE_NOMEM;
    }
    int bad = k - 1; /* the token that was being fed when it failed (n: the end) */
    if (P.err) {
        e->line = P.err_line;
        e->col = P.err_col;
        snprintf(e->msg, sizeof e->msg, "%s", P.err_msg);
    } else if (P.overflow) {
        const token *at = bad < n ? &toks[bad] : end;
        e->line = at->line;
        e->col = at->col;
        snprintf(e->msg, sizeof e->msg, "statement is too deeply nested");
    } else if (P.syntax || !P.stmt) {
        token t = *end;
        t.code = 0;
        pos_after(&toks[n - 1], &t.line, &t.col);
        syntax_message(toks, n, bad < n ? bad : n, &t, e);
    } else {
        const ast_expr *deep = too_deep_stmt(P.stmt);
        if (!deep) {
            *out = P.stmt;
            return 0;
        }
        e->line = deep->line ? deep->line : toks[0].line;
        e->col = deep->line ? deep->col : toks[0].col;
        snprintf(e->msg, sizeof e->msg, "expression is too deeply nested (more than %d levels)", PARSE_MAX_DEPTH);
    }
    ast_stmt_free(P.stmt);
    return XE_SYNTAX;
}

/* ------------------------------------------------------------------ public API */

void parse_result_free(parse_result *r)
{
    if (!r) return;
    for (int i = 0; i < r->nstmts; i++) ast_stmt_free(r->stmts[i]);
    free(r->stmts);
    free(r->errors);
    free(r);
}

static int add_error(parse_result *r, int *cap, const parse_error *e)
{
    if (push((void **)&r->errors, cap, r->nerrors, sizeof *r->errors)) return XE_NOMEM;
    r->errors[r->nerrors++] = *e;
    return 0;
}

int parse_sql(const char *src, size_t len, parse_result **out)
{
    *out = NULL;
    if (len >= (size_t)INT_MAX) return XE_NOMEM;
    parse_result *r = calloc(1, sizeof *r);
    char *buf = malloc(len + 1);
    tokens tk;
    memset(&tk, 0, sizeof tk);
    int rc = XE_NOMEM, capstmts = 0, caperrs = 0;
    if (!r || !buf) goto fail;
    if (len) memcpy(buf, src, len);
    buf[len] = 0;
    if (tokenize(buf, len, &tk)) goto fail;

    for (int i = 0; i < tk.nspans; i++) {
        stmt_span *sp = &tk.spans[i];
        parse_error e;
        memset(&e, 0, sizeof e);
        e.stmt_index = i;
        if (sp->lex_err) {
            e.line = sp->err_line;
            e.col = sp->err_col;
            snprintf(e.msg, sizeof e.msg, "%s", sp->err_msg);
            if (add_error(r, &caperrs, &e)) goto fail;
            continue;
        }
        ast_stmt *s;
        const token *toks = &tk.v[sp->first];
        int prc = parse_stmt(toks, sp->n, &sp->end, &s, &e);
        if (prc == XE_NOMEM) goto fail;
        if (prc) {
            if (add_error(r, &caperrs, &e)) goto fail;
            continue;
        }
        s->line = toks[0].line;
        s->col = toks[0].col;
        const token *last = &toks[sp->n - 1];
        size_t tlen = (size_t)(last->s + last->len - toks[0].s);
        if (!(s->text = malloc(tlen + 1)) ||
            push((void **)&r->stmts, &capstmts, r->nstmts, sizeof *r->stmts)) {
            ast_stmt_free(s);
            goto fail;
        }
        memcpy(s->text, toks[0].s, tlen);
        s->text[tlen] = 0;
        r->stmts[r->nstmts++] = s;
    }
    rc = r->nerrors ? XE_SYNTAX : 0;
    *out = r;
    r = NULL;
fail:
    free(tk.v);
    free(tk.spans);
    free(buf);
    parse_result_free(r);
    return rc;
}

int parse_one(const char *src, size_t len, ast_stmt **out, xerr *err)
{
    parse_result *r;
    *out = NULL;
    int rc = parse_sql(src, len, &r);
    if (rc == XE_NOMEM) return xerr_set(err, XE_NOMEM, "out of memory");
    if (r->nerrors) {
        const parse_error *e = &r->errors[0];
        rc = xerr_at(err, XE_SYNTAX, e->line, e->col, "%s", e->msg);
    } else if (r->nstmts == 0) {
        rc = xerr_at(err, XE_SYNTAX, 1, 1, "no statement");
    } else if (r->nstmts > 1) {
        rc = xerr_at(err, XE_SYNTAX, r->stmts[1]->line, r->stmts[1]->col, "expected a single statement");
    } else {
        *out = r->stmts[0];
        r->nstmts = 0;
        rc = 0;
    }
    parse_result_free(r);
    return rc;
}

int parse_format_error(const char *src, size_t len, int line, int col, const char *msg, sbuf *b)
{
    int rc = sbuf_printf(b, "error: line %d, column %d: %s\n", line, col, msg);
    if (rc || line < 1 || !src) return rc;
    size_t i = 0;
    for (int l = 1; l < line && i < len; i++)
        if (src[i] == '\n') l++;
    if (i >= len && line > 1) return 0; /* the position is past the end: no line to show */
    size_t end = i;
    while (end < len && src[end] != '\n') end++;
    if (end > i && src[end - 1] == '\r') end--;

    /* the byte offset of column col (characters, not bytes) */
    size_t at = i;
    for (int c = 1; c < col && at < end; c++)
        do at++; while (at < end && ((unsigned char)src[at] & 0xC0) == 0x80);

    /* long lines: show a window of about 100 bytes around the column */
    size_t from = i, to = end;
    if (to - from > 120) {
        from = at > i + 60 ? at - 60 : i;
        while (from > i && ((unsigned char)src[from] & 0xC0) == 0x80) from--;
        to = from + 120 < end ? from + 120 : end;
        while (to < end && ((unsigned char)src[to] & 0xC0) == 0x80) to++;
    }
    const char *pre = from > i ? "..." : "";
    if ((rc = sbuf_printf(b, "  %s", pre)) || (rc = sbuf_add(b, src + from, to - from)) ||
        (rc = sbuf_printf(b, "%s\n  %s", to < end ? "..." : "", from > i ? "   " : "")))
        return rc;
    for (size_t p = from; p < at && !rc; p++) {
        unsigned char ch = (unsigned char)src[p];
        if ((ch & 0xC0) != 0x80) rc = sbuf_addc(b, ch == '\t' ? '\t' : ' ');
    }
    return rc ? rc : sbuf_adds(b, "^\n");
}

void parse_text_pos(const ast_stmt *st, int line, int col, int *in_line, int *in_col)
{
    if (line < 1) {
        *in_line = *in_col = 0;
        return;
    }
    if (col < 1) col = 1;
    *in_line = st->line + line - 1;
    *in_col = line == 1 ? st->col + col - 1 : col;
}

/* The code of src's last token (-1: a lexical error, 0: none or the input
 * ends inside a string, quoted identifier or comment, whose first character
 * goes to *open; else *open is 0). */
static int last_token(const char *src, size_t len, int *open)
{
    *open = 0;
    char *buf = malloc(len + 1);
    if (!buf) return 0;
    if (len) memcpy(buf, src, len);
    buf[len] = 0;
    lexer lx;
    lex_init(&lx, buf, len);
    int last = 0;
    for (;;) {
        token t;
        int code = lex_next(&lx, &t);
        if (code == LEX_ERROR) {
            if (lx.err_fatal) {
                last = 0;
                *open = *lx.err_at;
                break;
            }
            last = -1;
            continue;
        }
        if (code == LEX_EOF) break;
        last = code;
    }
    free(buf);
    return last;
}

int parse_is_complete(const char *src, size_t len)
{
    int open;
    return last_token(src, len, &open) == TK_SEMI;
}

int parse_open_quote(const char *src, size_t len)
{
    int open;
    last_token(src, len, &open);
    return open == '/' ? '*' : open;
}
