/*
 * lexer.re: the Ares SQL tokenizer (re2c).
 *
 * It returns Lemon's TK_* codes from grammar.h directly; there is no second
 * token enum.  Keywords are single-quoted re2c strings, so they match in any
 * case.  The buffer must end in a NUL at lim (re2c's sentinel, re2c:eof = 0);
 * a NUL before lim is an ordinary (stray) character.
 *
 * Positions: every token carries its 1-based line and column.  Columns count
 * characters (UTF-8 continuation bytes do not advance the column) so that the
 * caret under an error lines up.  The lexer keeps a cursor (pos_p) whose
 * position it knows and walks it forward to each token start, so the cost is
 * linear in the input.
 */
#include <stdio.h>
#include <string.h>

#include "parser/internal.h"
#include "parser/grammar.h"

void lex_init(lexer *lx, const char *buf, size_t len)
{
    memset(lx, 0, sizeof *lx);
    lx->buf = lx->cur = lx->pos_p = (const unsigned char *)buf;
    lx->lim = lx->buf + len;
    lx->pos_line = 1;
    lx->pos_col = 1;
}

/* Walk the known position forward to p. */
static void lex_pos(lexer *lx, const unsigned char *p, int *line, int *col)
{
    const unsigned char *q = lx->pos_p;
    int l = lx->pos_line, c = lx->pos_col;
    for (; q < p; q++) {
        if (*q == '\n') {
            l++;
            c = 1;
        } else if ((*q & 0xC0) != 0x80) {
            c++;
        }
    }
    lx->pos_p = p;
    lx->pos_line = l;
    lx->pos_col = c;
    *line = l;
    *col = c;
}

static int lex_error(lexer *lx, const unsigned char *at, int fatal, const char *msg)
{
    lex_pos(lx, at, &lx->err_line, &lx->err_col);
    lx->err_fatal = fatal;
    lx->err_at = at;
    snprintf(lx->err_msg, sizeof lx->err_msg, "%s", msg);
    return LEX_ERROR;
}

static int lex_stray(lexer *lx, const unsigned char *at)
{
    char msg[64];
    if (*at >= 0x21 && *at < 0x7f)
        snprintf(msg, sizeof msg, "unexpected character '%c'", *at);
    else
        snprintf(msg, sizeof msg, "unexpected character 0x%02x", *at);
    return lex_error(lx, at, 0, msg);
}

int lex_next(lexer *lx, token *t)
{
    const unsigned char *YYMARKER = NULL;
    for (;;) {
        const unsigned char *s = lx->cur;
        int code;
        /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = lx->cur;
        re2c:define:YYLIMIT = lx->lim;
        re2c:yyfill:enable = 0;
        re2c:eof = 0;

        D = [0-9];
        E = [eE] [+-]? D+;
        W = [a-zA-Z_\x80-\xff];

        $ {
            lex_pos(lx, s, &t->line, &t->col);
            t->code = LEX_EOF; t->s = (const char *)s; t->len = 0;
            return LEX_EOF;
        }
        * { lx->cur = s + 1; return lex_stray(lx, s); }

        [ \t\r\n\f\v]+                              { continue; }
        "--" [^\n]*                                 { continue; }
        "/*" ([^*] | "*"+ [^*/])* "*"+ "/"          { continue; }
        "/*" { lx->cur = lx->lim; return lex_error(lx, s, 1, "unterminated comment"); }

        "'" ([^'\x00] | "''")* "'"                  { code = TK_STRING_LIT; goto tok; }
        "'" { lx->cur = lx->lim; return lex_error(lx, s, 1, "unterminated string literal"); }
        '"' ([^"\x00] | '""')+ '"'                  { code = TK_ID; goto tok; }
        '""' { return lex_error(lx, s, 0, "zero-length quoted identifier"); }
        '"' { lx->cur = lx->lim; return lex_error(lx, s, 1, "unterminated quoted identifier"); }

        D+                                          { code = TK_INTEGER_LIT; goto tok; }
        (D+ "." D* | "." D+) E? | D+ E              { code = TK_FLOAT_LIT; goto tok; }

        'create'      { code = TK_CREATE; goto tok; }
        'stream'      { code = TK_STREAM; goto tok; }
        'query'       { code = TK_QUERY; goto tok; }
        'if'          { code = TK_IF; goto tok; }
        'not'         { code = TK_NOT; goto tok; }
        'exists'      { code = TK_EXISTS; goto tok; }
        'with'        { code = TK_WITH; goto tok; }
        'as'          { code = TK_AS; goto tok; }
        'insert'      { code = TK_INSERT; goto tok; }
        'into'        { code = TK_INTO; goto tok; }
        'values'      { code = TK_VALUES; goto tok; }
        'drop'        { code = TK_DROP; goto tok; }
        'show'        { code = TK_SHOW; goto tok; }
        'streams'     { code = TK_STREAMS; goto tok; }
        'queries'     { code = TK_QUERIES; goto tok; }
        'nodes'       { code = TK_NODES; goto tok; }
        'describe'    { code = TK_DESCRIBE; goto tok; }
        'explain'     { code = TK_EXPLAIN; goto tok; }
        'placement'   { code = TK_PLACEMENT; goto tok; }
        'format'      { code = TK_FORMAT; goto tok; }
        'json'        { code = TK_JSON; goto tok; }
        'subscribe'   { code = TK_SUBSCRIBE; goto tok; }
        'set'         { code = TK_SET; goto tok; }
        'table'       { code = TK_TABLE; goto tok; }
        'primary'     { code = TK_PRIMARY; goto tok; }
        'key'         { code = TK_KEY; goto tok; }
        'alter'       { code = TK_ALTER; goto tok; }
        'rebalance'   { code = TK_REBALANCE; goto tok; }
        'select'      { code = TK_SELECT; goto tok; }
        'distinct'    { code = TK_DISTINCT; goto tok; }
        'from'        { code = TK_FROM; goto tok; }
        'window'      { code = TK_WINDOW; goto tok; }
        'tumbling'    { code = TK_TUMBLING; goto tok; }
        'hopping'     { code = TK_HOPPING; goto tok; }
        'session'     { code = TK_SESSION; goto tok; }
        'size'        { code = TK_SIZE; goto tok; }
        'advance'     { code = TK_ADVANCE; goto tok; }
        'by'          { code = TK_BY; goto tok; }
        'gap'         { code = TK_GAP; goto tok; }
        'grace'       { code = TK_GRACE; goto tok; }
        'period'      { code = TK_PERIOD; goto tok; }
        'join'        { code = TK_JOIN; goto tok; }
        'on'          { code = TK_ON; goto tok; }
        'within'      { code = TK_WITHIN; goto tok; }
        'cross'       { code = TK_CROSS; goto tok; }
        'left'        { code = TK_LEFT; goto tok; }
        'inner'       { code = TK_INNER; goto tok; }
        'outer'       { code = TK_OUTER; goto tok; }
        'unnest'      { code = TK_UNNEST; goto tok; }
        'where'       { code = TK_WHERE; goto tok; }
        'group'       { code = TK_GROUP; goto tok; }
        'having'      { code = TK_HAVING; goto tok; }
        'emit'        { code = TK_EMIT; goto tok; }
        'changes'     { code = TK_CHANGES; goto tok; }
        'final'       { code = TK_FINAL; goto tok; }
        'limit'       { code = TK_LIMIT; goto tok; }
        'and'         { code = TK_AND; goto tok; }
        'or'          { code = TK_OR; goto tok; }
        'is'          { code = TK_IS; goto tok; }
        'null'        { code = TK_NULL; goto tok; }
        'between'     { code = TK_BETWEEN; goto tok; }
        'in'          { code = TK_IN; goto tok; }
        'like'        { code = TK_LIKE; goto tok; }
        'case'        { code = TK_CASE; goto tok; }
        'when'        { code = TK_WHEN; goto tok; }
        'then'        { code = TK_THEN; goto tok; }
        'else'        { code = TK_ELSE; goto tok; }
        'end'         { code = TK_END; goto tok; }
        'cast'        { code = TK_CAST; goto tok; }
        'true'        { code = TK_TRUE; goto tok; }
        'false'       { code = TK_FALSE; goto tok; }
        'interval'    { code = TK_INTERVAL; goto tok; }
        'millisecond' 's'? { code = TK_MILLISECONDS; goto tok; }
        'second' 's'? { code = TK_SECONDS; goto tok; }
        'minute' 's'? { code = TK_MINUTES; goto tok; }
        'hour' 's'?   { code = TK_HOURS; goto tok; }
        'day' 's'?    { code = TK_DAYS; goto tok; }
        'bigint'      { code = TK_BIGINT; goto tok; }
        'int'         { code = TK_INT; goto tok; }
        'integer'     { code = TK_INTEGER; goto tok; }
        'double'      { code = TK_DOUBLE; goto tok; }
        'float'       { code = TK_FLOAT; goto tok; }
        'real'        { code = TK_REAL; goto tok; }
        'text'        { code = TK_TEXT; goto tok; }
        'varchar'     { code = TK_VARCHAR; goto tok; }
        'string'      { code = TK_STRING; goto tok; }
        'boolean'     { code = TK_BOOLEAN; goto tok; }
        'bool'        { code = TK_BOOL; goto tok; }
        'timestamp'   { code = TK_TIMESTAMP; goto tok; }

        W (W | D)*    { code = TK_ID; goto tok; }

        "("   { code = TK_LP; goto tok; }
        ")"   { code = TK_RP; goto tok; }
        ","   { code = TK_COMMA; goto tok; }
        "."   { code = TK_DOT; goto tok; }
        "*"   { code = TK_STAR; goto tok; }
        "="   { code = TK_EQ; goto tok; }
        "<>" | "!=" { code = TK_NE; goto tok; }
        "<"   { code = TK_LT; goto tok; }
        "<="  { code = TK_LE; goto tok; }
        ">"   { code = TK_GT; goto tok; }
        ">="  { code = TK_GE; goto tok; }
        "+"   { code = TK_PLUS; goto tok; }
        "-"   { code = TK_MINUS; goto tok; }
        "/"   { code = TK_SLASH; goto tok; }
        "%"   { code = TK_REM; goto tok; }
        "||"  { code = TK_CONCAT; goto tok; }
        ";"   { code = TK_SEMI; goto tok; }
        */
    tok:
        lex_pos(lx, s, &t->line, &t->col);
        t->code = code;
        t->s = (const char *)s;
        t->len = (size_t)(lx->cur - s);
        return code;
    }
}

/* Lex s[0..n) (copied, for the sentinel) and report whether it is one token. */
static int lex_single(const char *s, size_t n, token *t)
{
    char tmp[128];
    if (n == 0 || n >= sizeof tmp) return 0;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    lexer lx;
    lex_init(&lx, tmp, n);
    int code = lex_next(&lx, t);
    if (code <= 0 || t->s != tmp || t->len != n) return 0;
    return code;
}

int lex_word(const char *s, size_t n)
{
    token t;
    int code = lex_single(s, n, &t);
    if (code == TK_ID) return s[0] == '"' ? 0 : TK_ID;
    return code > 0 && code < TK_ID ? code : 0; /* keywords precede ID in grammar.y's %token block */
}

int lex_is_number(const char *s, size_t n)
{
    token t;
    if (n > 0 && s[0] == '-') { s++; n--; }
    int code = lex_single(s, n, &t);
    return code == TK_INTEGER_LIT || code == TK_FLOAT_LIT;
}
