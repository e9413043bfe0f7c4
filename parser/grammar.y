/*
 * grammar.y: the Ares SQL grammar (Lemon).
 *
 * One parse is one statement: driver.c splits the input at top-level ';' and
 * feeds each statement's tokens to a fresh parser, so ';' never reaches the
 * grammar.  Actions only call the constructors of ast.c, which take ownership
 * of their arguments even when they fail; every pointer non-terminal has a
 * %destructor next to its %type, so a syntax error anywhere leaks nothing.
 *
 * Keywords that are not reserved fall back to ID (see %fallback), so a column
 * may be called ts, size, key, format or timestamp.  Lemon only falls back
 * when the keyword has no action in the current state, so the fallback never
 * changes the meaning of a statement that parses without it.
 */

%name parser_
%token_prefix TK_
%token_type {token}
%extra_argument {pctx *P}
%start_symbol input
%stack_size 500

%include {
#include <assert.h>
#include <stdlib.h>

#include "parser/internal.h"
}

%code {
/* The number of terminal symbols, for driver.c's expected-token search. */
int parser_ntokens(void) { return YYNTOKEN; }

/* Would parser p, in its current state, take token `tok` next?  Lemon has no
 * such query, so this runs its shift/reduce loop on a copy of the state stack
 * without running any action (so nothing is built or freed).  It reads the
 * tables and the stack of lempar.c, Debian's Lemon template;
 * tests/unit/test_parser.c checks it against real parses. */
int parser_accepts(void *p, int tok)
{
    yyParser *pp = (yyParser *)p;
    YYACTIONTYPE st[YYSTACKDEPTH + 1];
    int top = (int)(pp->yytos - pp->yystack);
    for (int i = 0; i <= top; i++) st[i] = pp->yystack[i].stateno;
    for (;;) {
        YYACTIONTYPE act = yy_find_shift_action((YYCODETYPE)tok, st[top]);
        if (act >= YY_MIN_REDUCE) {
            unsigned rule = act - YY_MIN_REDUCE;
            top += yyRuleInfoNRhs[rule]; /* pops: the count is stored negated */
            act = yy_find_reduce_action(st[top], (YYCODETYPE)yyRuleInfoLhs[rule]);
            if (++top >= YYSTACKDEPTH) return 0;
            st[top] = act;
        } else {
            return act <= YY_MAX_SHIFTREDUCE || act == YY_ACCEPT_ACTION;
        }
    }
}
}

%syntax_error { (void)yymajor; (void)TOKEN; P->syntax = 1; }
%stack_overflow { P->overflow = 1; }

/* ------------------------------------------------------------------ tokens */

/* Declared once, in the order driver.c lists them in "expected one of: ...". */
%token CREATE STREAM QUERY IF NOT EXISTS WITH AS INSERT INTO VALUES DROP SHOW
       STREAMS QUERIES NODES DESCRIBE EXPLAIN PLACEMENT FORMAT JSON SUBSCRIBE SET
       ALTER REBALANCE TABLE PRIMARY KEY
       SELECT DISTINCT FROM WINDOW TUMBLING HOPPING SESSION SIZE ADVANCE BY GAP
       GRACE PERIOD JOIN ON WITHIN CROSS UNNEST LEFT INNER OUTER WHERE GROUP HAVING EMIT CHANGES FINAL LIMIT
       AND OR IS NULL BETWEEN IN LIKE CASE WHEN THEN ELSE END CAST TRUE FALSE
       INTERVAL MILLISECONDS SECONDS MINUTES HOURS DAYS
       BIGINT INT INTEGER DOUBLE FLOAT REAL TEXT VARCHAR STRING BOOLEAN BOOL
       TIMESTAMP
       ID INTEGER_LIT FLOAT_LIT STRING_LIT
       LP RP COMMA DOT STAR EQ NE LT LE GT GE PLUS MINUS SLASH REM CONCAT SEMI
       NOT_LA.

/* Non-reserved keywords: where they cannot be a keyword they are identifiers. */
%fallback ID STREAM QUERY STREAMS QUERIES NODES PLACEMENT FORMAT JSON REBALANCE TABLE PRIMARY KEY
       TUMBLING HOPPING SESSION SIZE ADVANCE GAP GRACE PERIOD CHANGES FINAL
       UNNEST MILLISECONDS SECONDS MINUTES HOURS DAYS
       BIGINT INT INTEGER DOUBLE FLOAT REAL TEXT VARCHAR STRING BOOLEAN BOOL
       TIMESTAMP.

/* ------------------------------------------------------------------ precedence */

/* Lowest first; as in PostgreSQL.  NOT_LA is a NOT that driver.c saw directly
 * before LIKE, IN or BETWEEN: it binds like them, not like a prefix NOT. */
%left OR.
%left AND.
%right NOT.
%left IS.
%left EQ NE LT LE GT GE.
%left BETWEEN IN LIKE NOT_LA.
%left CONCAT.
%left PLUS MINUS.
%left STAR SLASH REM.
%right UMINUS.

/* ------------------------------------------------------------------ statements */

input ::= stmt(S). { P->stmt = S; }

%type stmt {ast_stmt *}
%destructor stmt { ast_stmt_free($$); }

stmt(A) ::= CREATE STREAM ifnotexists(E) name(N) LP coldefs(C) RP with_opt(W).
    { A = ast_mk_create_stream(P, E, N, C, W); }
stmt(A) ::= CREATE TABLE ifnotexists(E) name(N) LP coldefs(C) pkey(K) RP with_opt(W).
    { A = ast_mk_create_table(P, E, N, C, K, W); }
stmt(A) ::= CREATE TABLE ifnotexists(E) name(N) with_opt(W) AS select(S).
    { A = ast_mk_standing(P, ST_CREATE_TABLE_AS, E, N, W, S); }
stmt(A) ::= CREATE QUERY ifnotexists(E) name(N) with_opt(W) AS select(S).
    { A = ast_mk_standing(P, ST_CREATE_QUERY, E, N, W, S); }
stmt(A) ::= CREATE STREAM ifnotexists(E) name(N) with_opt(W) AS select(S).
    { A = ast_mk_standing(P, ST_CREATE_STREAM_AS, E, N, W, S); }
stmt(A) ::= select(S).
    { A = ast_mk_select_stmt(P, S); }
stmt(A) ::= INSERT INTO name(N) inscols(C) VALUES rows(R).
    { A = ast_mk_insert(P, N, C, R); }
stmt(A) ::= INSERT INTO name(N) select(S).
    { A = ast_mk_standing(P, ST_INSERT_SELECT, 0, N, NULL, S); }
stmt(A) ::= DROP STREAM ifexists(E) name(N).
    { A = ast_mk_drop(P, ST_DROP_STREAM, E, N); }
stmt(A) ::= DROP TABLE ifexists(E) name(N).
    { A = ast_mk_drop(P, ST_DROP_STREAM, E, N); }
stmt(A) ::= DROP QUERY ifexists(E) name(N).
    { A = ast_mk_drop(P, ST_DROP_QUERY, E, N); }
stmt(A) ::= SHOW STREAMS.  { A = ast_mk_show(P, SHOW_STREAMS); }
stmt(A) ::= SHOW QUERIES.  { A = ast_mk_show(P, SHOW_QUERIES); }
stmt(A) ::= SHOW NODES.    { A = ast_mk_show(P, SHOW_NODES); }
stmt(A) ::= SHOW ID(K).    { A = ast_mk_show_name(P, &K); } /* SHOW SETTINGS, or one: SHOW parallelism */
stmt(A) ::= DESCRIBE name(N).  { A = ast_mk_named(P, ST_DESCRIBE, N); }
stmt(A) ::= SUBSCRIBE name(N). { A = ast_mk_named(P, ST_SUBSCRIBE, N); }
stmt(A) ::= ALTER QUERY name(N) REBALANCE. { A = ast_mk_named(P, ST_ALTER_QUERY_REBALANCE, N); }
stmt(A) ::= EXPLAIN placement(L) explain_format(F) name(N).
    { A = ast_mk_explain(P, L, F, N, NULL); }
stmt(A) ::= EXPLAIN placement(L) explain_format(F) select(S).
    { A = ast_mk_explain(P, L, F, NULL, S); }
stmt(A) ::= SET ID(K) EQ optval(V).
    { A = ast_mk_set(P, &K, V); }

%type ifnotexists {int}
ifnotexists(A) ::= .                 { A = 0; }
ifnotexists(A) ::= IF NOT EXISTS.    { A = 1; }

%type ifexists {int}
ifexists(A) ::= .                    { A = 0; }
ifexists(A) ::= IF EXISTS.           { A = 1; }

%type placement {int}
placement(A) ::= .                   { A = 0; }
placement(A) ::= PLACEMENT.          { A = 1; }

%type explain_format {int}
explain_format(A) ::= .                          { A = 0; }
explain_format(A) ::= LP FORMAT JSON RP.         { A = 1; }
explain_format(A) ::= LP FORMAT TEXT RP.         { A = 0; }

%type name {char *}
%destructor name { free($$); }
name(A) ::= ID(T).                   { A = ast_mk_ident(P, &T); }

/* ------------------------------------------------------------------ CREATE STREAM */

%type coldefs {ast_coldefs *}
%destructor coldefs { ast_coldefs_free($$); }
coldefs(A) ::= ID(N) typename(T).                  { A = ast_coldefs_add(P, NULL, &N, T); }
coldefs(A) ::= coldefs(L) COMMA ID(N) typename(T). { A = ast_coldefs_add(P, L, &N, T); }

%type typename {sql_type}
typename(A) ::= BIGINT.                    { A = TY_BIGINT; }
typename(A) ::= INT.                       { A = TY_INT; }
typename(A) ::= INTEGER.                   { A = TY_INT; }
typename(A) ::= DOUBLE.                    { A = TY_DOUBLE; }
typename(A) ::= FLOAT.                     { A = TY_DOUBLE; }
typename(A) ::= REAL.                      { A = TY_DOUBLE; }
typename(A) ::= TEXT.                      { A = TY_TEXT; }
typename(A) ::= STRING.                    { A = TY_TEXT; }
typename(A) ::= VARCHAR.                   { A = TY_TEXT; }
typename(A) ::= VARCHAR LP INTEGER_LIT RP. { A = TY_TEXT; }
typename(A) ::= BOOLEAN.                   { A = TY_BOOL; }
typename(A) ::= BOOL.                      { A = TY_BOOL; }
typename(A) ::= TIMESTAMP.                 { A = TY_TIMESTAMP; }
typename(A) ::= TIMESTAMP LP INTEGER_LIT RP. { A = TY_TIMESTAMP; }

%type with_opt {ast_options *}
%destructor with_opt { ast_options_free($$); }
with_opt(A) ::= .                          { A = NULL; }
with_opt(A) ::= WITH LP options(O) RP.     { A = O; }

%type options {ast_options *}
%destructor options { ast_options_free($$); }
options(A) ::= ID(K) EQ optval(V).                  { A = ast_options_add(P, NULL, &K, V); }
options(A) ::= options(L) COMMA ID(K) EQ optval(V). { A = ast_options_add(P, L, &K, V); }

/* A WITH or SET value: 'string', number, -number, TRUE, FALSE or identifier. */
%type optval {optval}
optval(A) ::= STRING_LIT(T).        { A.t = T; A.neg = 0; A.line = T.line; A.col = T.col; }
optval(A) ::= INTEGER_LIT(T).       { A.t = T; A.neg = 0; A.line = T.line; A.col = T.col; }
optval(A) ::= FLOAT_LIT(T).         { A.t = T; A.neg = 0; A.line = T.line; A.col = T.col; }
optval(A) ::= MINUS(M) INTEGER_LIT(T). { A.t = T; A.neg = 1; A.line = M.line; A.col = M.col; }
optval(A) ::= MINUS(M) FLOAT_LIT(T).   { A.t = T; A.neg = 1; A.line = M.line; A.col = M.col; }
optval(A) ::= TRUE(T).              { A.t = T; A.neg = 0; A.line = T.line; A.col = T.col; }
optval(A) ::= FALSE(T).             { A.t = T; A.neg = 0; A.line = T.line; A.col = T.col; }
optval(A) ::= ID(T).                { A.t = T; A.neg = 0; A.line = T.line; A.col = T.col; }

/* CREATE TABLE: the key, after the columns; none is an error the engine names */
%type pkey {ast_names *}
%destructor pkey { ast_names_free($$); }
pkey(A) ::= .                                  { A = NULL; }
pkey(A) ::= COMMA PRIMARY KEY LP names(L) RP.  { A = L; }

/* ------------------------------------------------------------------ INSERT */

%type inscols {ast_names *}
%destructor inscols { ast_names_free($$); }
inscols(A) ::= .                    { A = NULL; }
inscols(A) ::= LP names(L) RP.      { A = L; }

%type names {ast_names *}
%destructor names { ast_names_free($$); }
names(A) ::= ID(N).                 { A = ast_names_add(P, NULL, &N); }
names(A) ::= names(L) COMMA ID(N).  { A = ast_names_add(P, L, &N); }

%type rows {ast_rows *}
%destructor rows { ast_rows_free($$); }
rows(A) ::= LP exprs(E) RP.                { A = ast_rows_add(P, NULL, E); }
rows(A) ::= rows(L) COMMA LP exprs(E) RP.  { A = ast_rows_add(P, L, E); }

/* ------------------------------------------------------------------ SELECT */

%type select {ast_select *}
%destructor select { ast_select_free($$); }
select(A) ::= SELECT items(I) FROM source(F) unnest_opt(U) window_opt(W) join_opt(J) where_opt(X)
              group_opt(G) having_opt(H) emit_opt(E) limit_opt(L).
    { A = ast_mk_select(P, I, F, U, W, J, X, G, H, E, L); }

%type items {ast_items *}
%destructor items { ast_items_free($$); }
items(A) ::= item(I).                  { A = ast_items_add(P, NULL, I); }
items(A) ::= items(L) COMMA item(I).   { A = ast_items_add(P, L, I); }

%type item {ast_select_item *}
%destructor item { ast_item_free($$); }
item(A) ::= expr(E) alias_opt(N).      { A = ast_mk_item(P, E, N); }
item(A) ::= STAR.                      { A = ast_mk_item_star(P, NULL); }
item(A) ::= ID(Q) DOT STAR.            { A = ast_mk_item_star(P, &Q); }

%type alias_opt {char *}
%destructor alias_opt { free($$); }
alias_opt(A) ::= .                     { A = NULL; }
alias_opt(A) ::= ID(T).                { A = ast_mk_ident(P, &T); }
alias_opt(A) ::= AS ID(T).             { A = ast_mk_ident(P, &T); }

%type source {ast_source *}
%destructor source { ast_source_free($$); }
source(A) ::= ID(T) alias_opt(N).                  { A = ast_mk_source(P, &T, N); }
source(A) ::= LP(T) select(S) RP ID(N).            { A = ast_mk_subquery(P, &T, S, ast_mk_ident(P, &N)); }
source(A) ::= LP(T) select(S) RP AS ID(N).         { A = ast_mk_subquery(P, &T, S, ast_mk_ident(P, &N)); }

/* A lateral table function: each row of the source, joined with the rows
 * UNNEST makes of an array computed from it (Flink SQL's form).  The column
 * list is optional: without it the one column is called after the alias. */
%type unnest_opt {ast_unnest *}
%destructor unnest_opt { ast_unnest_free($$); }
unnest_opt(A) ::= .                                              { A = NULL; }
unnest_opt(A) ::= CROSS JOIN UNNEST(T) LP expr(E) RP unnest_alias(N). { A = ast_unnest_set(P, N, &T, E); }

%type unnest_alias {ast_unnest *}
%destructor unnest_alias { ast_unnest_free($$); }
unnest_alias(A) ::= ID(T).                    { A = ast_mk_unnest(P, &T, NULL); }
unnest_alias(A) ::= AS ID(T).                 { A = ast_mk_unnest(P, &T, NULL); }
unnest_alias(A) ::= ID(T) LP ID(C) RP.        { A = ast_mk_unnest(P, &T, &C); }
unnest_alias(A) ::= AS ID(T) LP ID(C) RP.     { A = ast_mk_unnest(P, &T, &C); }

%type window_opt {ast_window}
window_opt(A) ::= .  { A = ast_window_none(); }
window_opt(A) ::= WINDOW TUMBLING LP SIZE interval(S) grace(G) RP.
    { A = ast_mk_window(P, WIN_TUMBLING, S, ast_ival_none(), ast_ival_none(), G); }
window_opt(A) ::= WINDOW HOPPING LP SIZE interval(S) COMMA ADVANCE BY interval(V) grace(G) RP.
    { A = ast_mk_window(P, WIN_HOPPING, S, V, ast_ival_none(), G); }
window_opt(A) ::= WINDOW SESSION LP GAP interval(S) grace(G) RP.
    { A = ast_mk_window(P, WIN_SESSION, ast_ival_none(), ast_ival_none(), S, G); }
window_opt(A) ::= WINDOW SESSION LP interval(S) grace(G) RP.
    { A = ast_mk_window(P, WIN_SESSION, ast_ival_none(), ast_ival_none(), S, G); }

%type grace {ival}
grace(A) ::= .                            { A = ast_ival_none(); }
grace(A) ::= COMMA GRACE interval(I).     { A = I; }
grace(A) ::= COMMA GRACE PERIOD interval(I). { A = I; }

%type join_opt {ast_join *}
%destructor join_opt { ast_join_free($$); }
join_opt(A) ::= .                                          { A = NULL; }
join_opt(A) ::= join_kind(K) source(S) ON expr(E) WITHIN interval(I). { A = ast_mk_join(P, S, E, I, K); }
/* Without WITHIN: a join of a stream with a table (the planner checks),
 * each stream row with the table's row of its key as of its time. */
join_opt(A) ::= join_kind(K) source(S) ON expr(E).  { A = ast_mk_join(P, S, E, ast_ival_none(), K); }

%type join_kind {int}
join_kind(A) ::= JOIN.                    { A = 0; }
join_kind(A) ::= INNER JOIN.              { A = 0; }
join_kind(A) ::= LEFT JOIN.               { A = 1; }
join_kind(A) ::= LEFT OUTER JOIN.         { A = 1; }

%type where_opt {ast_expr *}
%destructor where_opt { ast_expr_free($$); }
where_opt(A) ::= .                   { A = NULL; }
where_opt(A) ::= WHERE expr(E).      { A = E; }

%type group_opt {ast_exprs *}
%destructor group_opt { ast_exprs_free($$); }
group_opt(A) ::= .                   { A = NULL; }
group_opt(A) ::= GROUP BY exprs(E).  { A = E; }

%type having_opt {ast_expr *}
%destructor having_opt { ast_expr_free($$); }
having_opt(A) ::= .                  { A = NULL; }
having_opt(A) ::= HAVING expr(E).    { A = E; }

%type emit_opt {int}
emit_opt(A) ::= .                    { A = EMIT_DEFAULT; }
emit_opt(A) ::= EMIT CHANGES.        { A = EMIT_CHANGES; }
emit_opt(A) ::= EMIT FINAL.          { A = EMIT_FINAL; }

%type limit_opt {int64_t}
limit_opt(A) ::= .                   { A = -1; }
limit_opt(A) ::= LIMIT INTEGER_LIT(T). { A = ast_mk_limit(P, &T); }

/* ------------------------------------------------------------------ intervals */

%type interval {ival}
interval(A) ::= INTEGER_LIT(N) unit(U).           { A = ast_mk_ival(P, &N, U); }
interval(A) ::= FLOAT_LIT(N) unit(U).             { A = ast_mk_ival(P, &N, U); }
interval(A) ::= INTERVAL STRING_LIT(S) unit(U).   { A = ast_mk_ival_str(P, &S, U); }
interval(A) ::= INTERVAL INTEGER_LIT(N) unit(U).  { A = ast_mk_ival(P, &N, U); }
interval(A) ::= INTERVAL FLOAT_LIT(N) unit(U).    { A = ast_mk_ival(P, &N, U); }

%type unit {int64_t}
unit(A) ::= MILLISECONDS.  { A = 1; }
unit(A) ::= SECONDS.       { A = 1000; }
unit(A) ::= MINUTES.       { A = 60000; }
unit(A) ::= HOURS.         { A = 3600000; }
unit(A) ::= DAYS.          { A = 86400000; }

/* ------------------------------------------------------------------ expressions */

%type expr {ast_expr *}
%destructor expr { ast_expr_free($$); }

%type exprs {ast_exprs *}
%destructor exprs { ast_exprs_free($$); }
exprs(A) ::= expr(E).                  { A = ast_exprs_add(P, NULL, E); }
exprs(A) ::= exprs(L) COMMA expr(E).   { A = ast_exprs_add(P, L, E); }

/* literals */
expr(A) ::= NULL(T).                   { A = ast_mk_null(P, &T); }
expr(A) ::= TRUE(T).                   { A = ast_mk_bool(P, &T, 1); }
expr(A) ::= FALSE(T).                  { A = ast_mk_bool(P, &T, 0); }
expr(A) ::= INTEGER_LIT(T).            { A = ast_mk_int(P, &T); }
expr(A) ::= FLOAT_LIT(T).              { A = ast_mk_float(P, &T); }
expr(A) ::= STRING_LIT(T).             { A = ast_mk_string(P, &T); }
expr(A) ::= interval(I).               { A = ast_mk_interval(P, I); }
expr(A) ::= TIMESTAMP(K) STRING_LIT(S). { A = ast_mk_timestamp(P, &K, &S); }

/* column references; a bare TIMESTAMP is a column called timestamp */
expr(A) ::= ID(N).                     { A = ast_mk_col(P, NULL, &N); }
expr(A) ::= TIMESTAMP(N).              { A = ast_mk_col(P, NULL, &N); }
expr(A) ::= ID(Q) DOT ID(N).           { A = ast_mk_col(P, &Q, &N); }

expr(A) ::= LP expr(E) RP.             { A = E; }

/* function calls */
expr(A) ::= ID(F) LP RP.                        { A = ast_mk_func(P, &F, NULL, 0); }
expr(A) ::= ID(F) LP exprs(L) RP.               { A = ast_mk_func(P, &F, L, 0); }
expr(A) ::= ID(F) LP DISTINCT exprs(L) RP.      { A = ast_mk_func(P, &F, L, 1); }
expr(A) ::= ID(F) LP STAR(S) RP.
    { A = ast_mk_func(P, &F, ast_exprs_add(P, NULL, ast_mk_star(P, &S)), 0); }

expr(A) ::= CAST(T) LP expr(E) AS typename(Y) RP. { A = ast_mk_cast(P, &T, E, Y); }

expr(A) ::= CASE(T) case_base(B) whens(W) else_opt(E) END. { A = ast_mk_case(P, &T, B, W, E); }

%type case_base {ast_expr *}
%destructor case_base { ast_expr_free($$); }
case_base(A) ::= .                     { A = NULL; }
case_base(A) ::= expr(E).              { A = E; }

/* WHEN/THEN pairs, flattened into one list: when0, then0, when1, then1, ... */
%type whens {ast_exprs *}
%destructor whens { ast_exprs_free($$); }
whens(A) ::= WHEN expr(W) THEN expr(T).
    { A = ast_exprs_add(P, ast_exprs_add(P, NULL, W), T); }
whens(A) ::= whens(L) WHEN expr(W) THEN expr(T).
    { A = ast_exprs_add(P, ast_exprs_add(P, L, W), T); }

%type else_opt {ast_expr *}
%destructor else_opt { ast_expr_free($$); }
else_opt(A) ::= .                      { A = NULL; }
else_opt(A) ::= ELSE expr(E).          { A = E; }

/* operators */
expr(A) ::= expr(X) OR expr(Y).        { A = ast_mk_binary(P, OP_OR, X, Y); }
expr(A) ::= expr(X) AND expr(Y).       { A = ast_mk_binary(P, OP_AND, X, Y); }
expr(A) ::= NOT(T) expr(X).            { A = ast_mk_unary(P, &T, OP_NOT, X); }
expr(A) ::= expr(X) EQ expr(Y).        { A = ast_mk_binary(P, OP_EQ, X, Y); }
expr(A) ::= expr(X) NE expr(Y).        { A = ast_mk_binary(P, OP_NE, X, Y); }
expr(A) ::= expr(X) LT expr(Y).        { A = ast_mk_binary(P, OP_LT, X, Y); }
expr(A) ::= expr(X) LE expr(Y).        { A = ast_mk_binary(P, OP_LE, X, Y); }
expr(A) ::= expr(X) GT expr(Y).        { A = ast_mk_binary(P, OP_GT, X, Y); }
expr(A) ::= expr(X) GE expr(Y).        { A = ast_mk_binary(P, OP_GE, X, Y); }
expr(A) ::= expr(X) CONCAT expr(Y).    { A = ast_mk_binary(P, OP_CONCAT, X, Y); }
expr(A) ::= expr(X) PLUS expr(Y).      { A = ast_mk_binary(P, OP_ADD, X, Y); }
expr(A) ::= expr(X) MINUS expr(Y).     { A = ast_mk_binary(P, OP_SUB, X, Y); }
expr(A) ::= expr(X) STAR expr(Y).      { A = ast_mk_binary(P, OP_MUL, X, Y); }
expr(A) ::= expr(X) SLASH expr(Y).     { A = ast_mk_binary(P, OP_DIV, X, Y); }
expr(A) ::= expr(X) REM expr(Y).       { A = ast_mk_binary(P, OP_MOD, X, Y); }
expr(A) ::= MINUS(T) expr(X). [UMINUS] { A = ast_mk_unary(P, &T, OP_NEG, X); }
expr(A) ::= PLUS(T) expr(X). [UMINUS]  { A = ast_mk_unary(P, &T, OP_POS, X); }

expr(A) ::= expr(X) IS NULL.           { A = ast_mk_isnull(P, X, 0); }
expr(A) ::= expr(X) IS NOT NULL.       { A = ast_mk_isnull(P, X, 1); }

expr(A) ::= expr(X) BETWEEN expr(Y) AND expr(Z). [BETWEEN]
    { A = ast_mk_between(P, X, Y, Z, 0); }
expr(A) ::= expr(X) NOT_LA BETWEEN expr(Y) AND expr(Z). [BETWEEN]
    { A = ast_mk_between(P, X, Y, Z, 1); }
expr(A) ::= expr(X) IN LP exprs(L) RP.          { A = ast_mk_in(P, X, L, 0); }
expr(A) ::= expr(X) NOT_LA IN LP exprs(L) RP.   { A = ast_mk_in(P, X, L, 1); }
expr(A) ::= expr(X) LIKE expr(Y).               { A = ast_mk_like(P, X, Y, 0); }
expr(A) ::= expr(X) NOT_LA LIKE expr(Y). [LIKE] { A = ast_mk_like(P, X, Y, 1); }
