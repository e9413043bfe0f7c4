/*
 * shell.c: the interactive ares-sql shell on libedit.
 *
 * Lines from el_gets go to the same script machinery as -f files (script.c):
 * a statement runs when its lines end in a complete statement, and lines
 * starting with '\' are meta-commands.  The prompt says whether a statement
 * is being continued.  Each statement (or meta-command) becomes one history
 * entry; the history lives in ~/.ares_history and is saved after every entry,
 * so it survives a crash.
 *
 * The shell knows nothing of what runs its statements: it talks to a
 * cli_backend (cli.h), an embedded engine or a cluster's coordinator
 * (client.c), for statements, completion's names, push queries and their
 * cancelling, so `ares-sql --connect` is this same shell.  It runs one push
 * query or SUBSCRIBE at a time (script.c refuses a second one).
 *
 * Ctrl-C: SIGINT only sets a flag and wakes the self-pipe (run.c).  libedit
 * reads characters through shell_getc, which waits in cli_wait on stdin and
 * that pipe, so a Ctrl-C at the prompt ends el_gets at once; the loop then
 * drops the input typed so far, or, with nothing typed, stops the running
 * push queries and subscriptions (the backend's cancel_push).  A Ctrl-C
 * during a statement stops the work between chunks (\copy) and is forgotten
 * before the next prompt.
 *
 * The backend's event loop runs while the shell waits for a key (cli_wait
 * runs it between keystrokes), so socket sources, sinks and subscribers from
 * other processes (or the cluster connection) keep moving at the prompt, and
 * a push query's rows can arrive while the prompt shows.  Output is then written above the prompt:
 * before the first byte, shell_before_write erases the prompt and the input
 * (rows of it, when it wraps) and puts the cursor at its start; once the
 * loop is done, shell_after_poll has libedit draw prompt and input again
 * (EL_REFRESH), with the cursor where it was.  Rows printed while a
 * statement runs (INSERT, \copy) need none of this.
 */
#include <errno.h>
#include <histedit.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <wchar.h>

#include "cli/cli.h"

typedef struct shell {
    cli *c;
    EditLine *el;
    History *hist;
    HistEvent ev;
    char *hist_path;
    cli_script s;
    sbuf entry; /* the lines of the current statement, for history */
    int entry_comment; /* a line of it has a '--' comment */
    int intr_input;    /* the line held text when a signal ended el_gets */
    int waiting;       /* in shell_getc, waiting for a key: the prompt shows */
    int erased;        /* output came while waiting: the prompt is off the screen */
    mbstate_t mbs;
} shell;

static volatile sig_atomic_t g_winch;
static void on_winch(int signo) { (void)signo; g_winch = 1; }

static char *prompt(EditLine *el)
{
    shell *sh = NULL;
    el_get(el, EL_CLIENTDATA, &sh);
    static char main_prompt[] = "ares> ", cont_prompt[] = "   -> ";
    if (!sh || !cli_script_pending(&sh->s)) return main_prompt;
    /* inside a string, quoted identifier or comment, as psql's '> "> *> */
    int q = parse_open_quote(sh->s.buf.p, sh->s.buf.len);
    cont_prompt[3] = q ? (char)q : '-';
    return cont_prompt;
}

/* libedit's character source: stdin, but a signal ends the read (-1) so that
 * el_gets returns and the loop can look at the flag. */
static int shell_getc(EditLine *el, wchar_t *wc)
{
    shell *sh = NULL;
    el_get(el, EL_CLIENTDATA, &sh);
    for (;;) {
        if (cli_interrupted()) {
            /* el_gets does not hand back a line cut short: note it here */
            const LineInfo *li = el_line(el);
            sh->intr_input = li && li->lastchar > li->buffer;
            return -1;
        }
        if (g_winch) {
            g_winch = 0;
            el_resize(el);
        }
        sh->waiting = 1;
        int w = cli_wait(sh->c, STDIN_FILENO, -1);
        sh->waiting = 0;
        if (w < 0 && !cli_interrupted()) return -1;
        if (w <= 0) continue;
        unsigned char ch;
        ssize_t k = read(STDIN_FILENO, &ch, 1);
        if (k == 0) return 0;
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
        size_t r = mbrtowc(wc, (const char *)&ch, 1, &sh->mbs);
        if (r == (size_t)-2) continue; /* more bytes of this character */
        if (r == (size_t)-1) {         /* not in this locale: take the byte */
            memset(&sh->mbs, 0, sizeof sh->mbs);
            *wc = (wchar_t)ch;
        }
        return 1;
    }
}

/* Output is coming while the prompt shows: erase prompt and input, from the
 * row the input starts on, and leave the cursor at its start. */
static void shell_before_write(void *ctx)
{
    shell *sh = ctx;
    if (!sh->waiting || sh->erased) return;
    sh->erased = 1;
    const LineInfo *li = el_line(sh->el);
    int cols = 0;
    if (el_get(sh->el, EL_GETTC, "co", &cols) != 0 || cols <= 0) cols = 80;
    size_t w = strlen(prompt(sh->el));
    for (const char *p = li->buffer; p < li->cursor; p++) w += ((unsigned char)*p & 0xc0) != 0x80;
    int up = (int)(w / (size_t)cols);
    char seq[32];
    int n = up > 0 ? snprintf(seq, sizeof seq, "\r\033[%dA\033[J", up) : snprintf(seq, sizeof seq, "\r\033[J");
    fflush(stdout);
    for (int off = 0; off < n;) {
        ssize_t k = write(STDOUT_FILENO, seq + off, (size_t)(n - off));
        if (k > 0) off += (int)k;
        else if (k < 0 && errno != EINTR) break;
    }
}

/* The loop has run: draw prompt and input again below what it printed. */
static void shell_after_poll(void *ctx)
{
    shell *sh = ctx;
    if (!sh->erased) return;
    sh->erased = 0;
    el_set(sh->el, EL_REFRESH);
}

/* ------------------------------------------------------------------ completion */

static void cand_add(cli_cands *k, const char *s, int keyword)
{
    if (strlen(s) < k->wlen || strncasecmp(s, k->word, k->wlen) != 0) return;
    char *d = strdup(s);
    if (!d) return;
    if (keyword && k->lower)
        for (char *p = d; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->v[i], d) == 0) {
            free(d);
            return;
        }
    if (k->n == k->cap) {
        int cap = k->cap ? 2 * k->cap : 32;
        char **v = realloc(k->v, (size_t)cap * sizeof *v);
        if (!v) {
            free(d);
            return;
        }
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = d;
}

static void cand_name(void *ctx, const char *name) { cand_add(ctx, name, 0); }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_word_ch(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
           (unsigned char)ch >= 0x80;
}

/* The word before position `at` in buf (skipping spaces), upper-cased into out. */
static void prev_word(const char *buf, const char *at, char *out, size_t cap)
{
    const char *e = at;
    while (e > buf && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n')) e--;
    const char *b = e;
    while (b > buf && (is_word_ch(b[-1]) || b[-1] == '\\')) b--;
    size_t n = (size_t)(e - b) < cap - 1 ? (size_t)(e - b) : cap - 1;
    for (size_t i = 0; i < n; i++) out[i] = (b[i] >= 'a' && b[i] <= 'z') ? (char)(b[i] - 'a' + 'A') : b[i];
    out[n] = 0;
}

static const char *const meta_words[] = {"\\help", "\\q", "\\timing", "\\format", "\\i", "\\copy", NULL};
static const char *const format_words[] = {"table", "csv", "json", "vertical", NULL};

void cli_cands_free(cli_cands *k)
{
    for (int i = 0; i < k->n; i++) free(k->v[i]);
    free(k->v);
    memset(k, 0, sizeof *k);
}

int cli_complete(cli *c, const char *buf, size_t len, size_t cursor, int pending, cli_cands *k)
{
    memset(k, 0, sizeof *k);
    const char *end = buf + len, *cur = buf + cursor;
    const char *start = cur;
    while (start > buf && is_word_ch(start[-1])) start--;
    int meta = start > buf && start[-1] == '\\';
    if (meta) start--;
    k->word = start;
    k->wlen = (size_t)(cur - start);
    for (size_t i = 0; i < k->wlen; i++)
        if (start[i] >= 'a' && start[i] <= 'z') k->lower = 1;

    char prev[32], first[32];
    prev_word(buf, start, prev, sizeof prev);
    const char *fb = buf;
    while (fb < end && (*fb == ' ' || *fb == '\t')) fb++;
    const char *fe = fb;
    while (fe < end && *fe != ' ' && *fe != '\t') fe++;
    snprintf(first, sizeof first, "%.*s", (int)(fe - fb), fb);

    int statement_start = !pending && fb == start;
    const cli_backend *be = c->be;
    void *bc = c->be_ctx;
    if (meta) {
        if (statement_start)
            for (int i = 0; meta_words[i]; i++) cand_add(k, meta_words[i], 0);
    } else if (first[0] == '\\' && !pending) {
        /* arguments of a meta-command, by position */
        int arg = 0;
        for (const char *p = fe; p < start; p++)
            if ((*p == ' ' || *p == '\t') && p + 1 < start && p[1] != ' ' && p[1] != '\t') arg++;
        if (strcmp(first, "\\format") == 0 && arg == 0)
            for (int i = 0; format_words[i]; i++) cand_add(k, format_words[i], 0);
        else if (strcmp(first, "\\copy") == 0 && arg == 0)
            be->names(bc, 0, cand_name, k);
        else if (strcmp(first, "\\copy") == 0 && arg == 1)
            cand_add(k, "FROM", 1);
        else if (strcmp(first, "\\copy") == 0 && arg == 3)
            for (int i = 1; i <= 2; i++) cand_add(k, format_words[i], 0); /* csv, json */
    } else if (!strcmp(prev, "FROM") || !strcmp(prev, "JOIN") || !strcmp(prev, "INTO") ||
               !strcmp(prev, "STREAM")) {
        be->names(bc, 0, cand_name, k);
    } else if (!strcmp(prev, "QUERY")) {
        be->names(bc, 1, cand_name, k);
    } else if (!strcmp(prev, "DESCRIBE") || !strcmp(prev, "SUBSCRIBE") || !strcmp(prev, "EXPLAIN") ||
               !strcmp(prev, "EXISTS")) {
        be->names(bc, 0, cand_name, k);
        be->names(bc, 1, cand_name, k);
        if (!strcmp(prev, "EXPLAIN")) cand_add(k, "SELECT", 1);
    } else if (k->wlen > 0) {
        for (int i = 0; parse_keywords[i]; i++) cand_add(k, parse_keywords[i], 1);
        be->names(bc, 2, cand_name, k);
        be->names(bc, 0, cand_name, k);
        be->names(bc, 1, cand_name, k);
    }
    if (k->n > 1) qsort(k->v, (size_t)k->n, sizeof *k->v, cmp_str);
    return k->n;
}

static unsigned char complete(EditLine *el, int ch)
{
    (void)ch;
    shell *sh = NULL;
    el_get(el, EL_CLIENTDATA, &sh);
    const LineInfo *li = el_line(el);
    cli_cands k;
    cli_complete(sh->c, li->buffer, (size_t)(li->lastchar - li->buffer), (size_t)(li->cursor - li->buffer),
                 cli_script_pending(&sh->s), &k);

    unsigned char ret = CC_ERROR;
    if (k.n == 1) {
        char tail[512];
        snprintf(tail, sizeof tail, "%s ", k.v[0] + k.wlen);
        el_insertstr(el, tail);
        ret = CC_REFRESH;
    } else if (k.n > 1) {
        size_t lcp = strlen(k.v[0]);
        for (int i = 1; i < k.n; i++) {
            size_t j = 0;
            while (j < lcp && k.v[i][j] == k.v[0][j]) j++;
            lcp = j;
        }
        if (lcp > k.wlen) {
            char tail[512];
            snprintf(tail, sizeof tail, "%.*s", (int)(lcp - k.wlen), k.v[0] + k.wlen);
            el_insertstr(el, tail);
            ret = CC_REFRESH;
        } else {
            /* nothing to add: list the candidates in columns */
            size_t w = 0;
            for (int i = 0; i < k.n; i++)
                if (strlen(k.v[i]) > w) w = strlen(k.v[i]);
            int cols = (int)(78 / (w + 2));
            if (cols < 1) cols = 1;
            fputc('\n', stdout);
            for (int i = 0; i < k.n; i++)
                fprintf(stdout, "%-*s%s", (int)(w + 2), k.v[i], (i + 1) % cols == 0 || i + 1 == k.n ? "\n" : "");
            fflush(stdout);
            ret = CC_REDISPLAY;
        }
    }
    cli_cands_free(&k);
    return ret;
}

/* ------------------------------------------------------------------ history */

static void history_open(shell *sh)
{
    sh->hist = history_init();
    if (!sh->hist) return;
    history(sh->hist, &sh->ev, H_SETSIZE, 1000);
    history(sh->hist, &sh->ev, H_SETUNIQUE, 1);
    const char *home = getenv("HOME");
    if (home && *home) {
        size_t n = strlen(home) + sizeof "/.ares_history";
        sh->hist_path = malloc(n);
        if (sh->hist_path) {
            snprintf(sh->hist_path, n, "%s/.ares_history", home);
            history(sh->hist, &sh->ev, H_LOAD, sh->hist_path);
        }
    }
    el_set(sh->el, EL_HIST, history, sh->hist);
}

/* The lines of a statement collect in sh->entry, separated by '\n'. */
static void entry_add_line(shell *sh, const char *line, size_t n)
{
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
    if (sh->entry.len) sbuf_addc(&sh->entry, '\n');
    for (size_t i = 0; i + 1 < n; i++)
        if (line[i] == '-' && line[i + 1] == '-') sh->entry_comment = 1;
    sbuf_add(&sh->entry, line, n);
}

/* One history entry per statement: its lines joined by spaces, so that it
 * comes back as one line to edit, unless a '--' comment would then swallow
 * the lines after it. */
static void entry_commit(shell *sh)
{
    if (sh->hist && sh->entry.len) {
        if (!sh->entry_comment)
            for (size_t i = 0; i < sh->entry.len; i++)
                if (sh->entry.p[i] == '\n') sh->entry.p[i] = ' ';
        history(sh->hist, &sh->ev, H_ENTER, sh->entry.p);
        if (sh->hist_path) history(sh->hist, &sh->ev, H_SAVE, sh->hist_path);
    }
    sbuf_reset(&sh->entry);
    sh->entry_comment = 0;
}

/* ------------------------------------------------------------------ the loop */

static void banner(const char *what, const char *where)
{
    printf("ares-sql %s, %s\n"
           "%s\n"
           "Type \\help for help, HELP <statement> for syntax, \\q or Ctrl-D to leave.\n"
           "Statements end with ';'.\n",
           CLI_VERSION, what, where);
    fflush(stdout);
}

int cli_shell(cli *c, const char *what, const char *where)
{
    shell sh;
    memset(&sh, 0, sizeof sh);
    sh.c = c;
    sbuf_init(&sh.entry);
    cli_script_init(&sh.s, NULL);
    sh.s.relative = 1;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_winch;
    sa.sa_flags = SA_RESTART; /* poll in cli_wait still wakes up */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    sh.el = el_init("ares-sql", stdin, stdout, stderr);
    if (!sh.el) {
        cli_error(NULL, "cannot start line editing");
        cli_script_fini(&sh.s);
        sbuf_fini(&sh.entry);
        return CLI_ESQL;
    }
    el_set(sh.el, EL_CLIENTDATA, &sh);
    c->before_write = shell_before_write;
    c->after_poll = shell_after_poll;
    c->hook_ctx = &sh;
    el_set(sh.el, EL_EDITOR, "emacs");
    el_set(sh.el, EL_PROMPT, prompt);
    el_set(sh.el, EL_GETCFN, shell_getc);
    /* the wide call: el_set's EL_ADDFN copies the strings and never frees them */
    el_wset(sh.el, EL_ADDFN, L"ares-complete", L"complete a keyword or name", complete);
    el_set(sh.el, EL_BIND, "^I", "ares-complete", NULL);
    history_open(&sh);
    el_source(sh.el, NULL); /* ~/.editrc may rebind keys */

    banner(what, where);

    int rc = CLI_OK;
    for (;;) {
        cli_interrupt_clear();
        sh.intr_input = 0;
        int n = 0;
        const char *line = el_gets(sh.el, &n);
        if (cli_interrupted()) {
            int had_input = sh.intr_input || cli_script_pending(&sh.s);
            fputs("^C\n", stdout);
            cli_script_clear(&sh.s);
            sbuf_reset(&sh.entry);
            sh.entry_comment = 0;
            if (!had_input && c->be->push_active(c->be_ctx)) {
                c->be->cancel_push(c->be_ctx);
                fputs("-- push query stopped\n", stdout);
            }
            fflush(stdout);
            continue;
        }
        if (!line || n <= 0) { /* Ctrl-D */
            fputc('\n', stdout);
            break;
        }
        int pushes = c->pushes, consumers = c->consumers;
        int was_pending = cli_script_pending(&sh.s);
        int hrc = cli_script_line(c, &sh.s, line, (size_t)n);
        /* a statement or meta-command is complete: one history entry */
        size_t ln = (size_t)n;
        while (ln && (line[ln - 1] == '\n' || line[ln - 1] == '\r')) ln--;
        if (ln || was_pending) entry_add_line(&sh, line, (size_t)n);
        if (!cli_script_pending(&sh.s) && sh.entry.len) entry_commit(&sh);
        if (hrc == CLI_QUIT) break;
        /* A query started: embedded, file sources run to their end now, so
         * that it sees their rows (a file source read before any query is
         * over, and its stream ended, when the query starts). */
        if (c->consumers != consumers && c->be->query_started) c->be->query_started(c->be_ctx);
        if (c->pushes != pushes) {
            if (c->be->push_active(c->be_ctx)) {
                fputs("-- push query running; Ctrl-C to stop\n", stdout);
                fflush(stdout);
            }
        }
    }
    if (sh.hist_path && sh.hist) history(sh.hist, &sh.ev, H_SAVE, sh.hist_path);
    c->before_write = NULL;
    c->after_poll = NULL;
    c->hook_ctx = NULL;
    el_end(sh.el);
    if (sh.hist) history_end(sh.hist);
    free(sh.hist_path);
    cli_script_fini(&sh.s);
    sbuf_fini(&sh.entry);
    return rc;
}
