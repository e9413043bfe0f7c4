/*
 * cli.h (internal to cli/): the pieces of the ares-sql binary.
 *
 *   main.c    options, the non-interactive runs (-e, -f, --ingest, piped SQL,
 *             --follow) and exit codes
 *   client.c  --connect: the backend (below) that sends statements to a
 *             cluster's coordinator, and its non-interactive runs
 *   shell.c   the interactive shell: libedit, history, completion
 *   remote.c  SUBSCRIBE through <data dir>/ares.sock when another process
 *             holds the data directory
 *   script.c  the one script runner, over any backend: scripts fed line by
 *             line (statements end with ';' at the end of a line,
 *             meta-commands start a line with '\'), statement execution,
 *             error reports with the parser's caret, -e texts, -f/\i files
 *             and piped stdin
 *   help.c    the texts of \help and HELP <statement>
 *   run.c     the session, over a backend (an embedded engine, or a
 *             cluster's coordinator through client.c): ingest from a file
 *             descriptor, SIGINT/SIGTERM, and cli_wait, which runs the
 *             engine's event loop while ares-sql waits
 *   output.c  an exec_out that prints results through a fmt_encoder to a
 *             FILE*; the cluster client reuses it for results off the wire
 *
 * Calls go down that list only: a file calls some of those below it and
 * none above (shell.c calls script.c, which calls help.c and run.c; run.c
 * calls only output.c).
 *
 * The shell, the scripts, the meta-commands and the output are one code path
 * whatever runs the statements: a cli_backend is the only difference
 * between `ares-sql --data DIR` and `ares-sql --connect HOST:PORT`.
 *
 * Everything runs on the main thread, like the engine it drives.  Signal
 * handlers only set a flag and write a byte to a self-pipe; the loops check
 * the flag between chunks of work (cli_interrupted).  The engine's sockets
 * (sources, sinks, subscribers) move only inside cli_wait: whenever ares-sql
 * waits for a key, a line of piped SQL or a signal, it waits there.
 */
#ifndef CLI_H
#define CLI_H

#include <stdint.h>
#include <stdio.h>

#include "exec/exec.h"

#define CLI_VERSION "0.1.0"

/* Outcomes of runs, numbered as the exit codes they become. */
enum {
    CLI_OK = 0,
    CLI_ESQL = 1,   /* an SQL or engine error */
    CLI_EUSAGE = 2, /* bad usage: unknown option, unreadable -f file */
    CLI_EINPUT = 3, /* input rejected beyond the error policy */
    CLI_ELATE = 4,  /* rows of the input were late and dropped (not with --allow-late) */
    CLI_QUIT = 99,  /* \q: not an exit code, the caller stops reading */
    CLI_INTR = 130, /* SIGINT or SIGTERM */
};

/* ------------------------------------------------------------------ output.c */

typedef struct cli_out cli_out;

typedef struct cli_out_opts {
    FILE *data;           /* rows go here (required) */
    FILE *notices;        /* notices go here, or NULL to drop them */
    fmt_kind push_kind;   /* push query rows (begin with stream = 1) */
    fmt_kind result_kind; /* SHOW, DESCRIBE, EXPLAIN (stream = 0) */
    /* Called before anything is written (rows, footers, notices), so that
     * the shell can take its prompt off the screen first; optional. */
    void (*before_write)(void *ctx);
    void *hook_ctx;
} cli_out_opts;

/* An output for one statement (or one remote result).  The engine keeps a
 * copy of the exec_out of a push query, so its cli_out must live until the
 * engine is closed or the query has ended.  XE_NOMEM. */
int cli_out_new(const cli_out_opts *o, cli_out **out);
/* Finishes an open result (as end would) and frees.  NULL is a no-op. */
void cli_out_free(cli_out *o);
/* The callbacks; valid as long as o. */
const exec_out *cli_out_exec(cli_out *o);
int cli_out_pushed(const cli_out *o);    /* a result with stream = 1 began */
int cli_out_write_errno(const cli_out *o); /* errno of the first failed write, or 0 */
/* Append o to a growable list of outputs (kept until the engine or the
 * connection is closed); XE_NOMEM. */
int cli_outs_add(cli_out ***v, int *n, int *cap, cli_out *o);

/* ------------------------------------------------------------------ run.c */

typedef struct cli cli;
typedef struct cli_ingest_opts cli_ingest_opts;

/* What runs the statements: an embedded engine (cli_backend_engine) or a
 * cluster's coordinator (client.c).  ctx is the backend's own. */
typedef struct cli_backend {
    /* Run one statement; results and notices to out, which must stay valid
     * while a push result it began is open (script.c keeps it in c->keep
     * until close).
     * 0, or a negative code with err set (line/col relative to the statement). */
    int (*exec)(void *ctx, const ast_stmt *st, const exec_out *out, xerr *err);
    /* Push queries and subscriptions of this session whose rows may still come. */
    int (*push_active)(void *ctx);
    /* Stop them all (Ctrl-C at an empty prompt); their end callbacks run. */
    void (*cancel_push)(void *ctx);
    /* Names for completion: kind 0 streams, 1 queries, 2 columns. */
    void (*names)(void *ctx, int kind, void (*fn)(void *fctx, const char *name), void *fctx);
    /* Serve without blocking (sockets, timers, rows of open results). */
    void (*poll)(void *ctx);
    /* The libuv loop that poll runs, for cli_wait to sleep on; may be NULL. */
    struct uv_loop_s *(*loop)(void *ctx);
    /* A query started (SELECT or CREATE QUERY); may be NULL.  Embedded:
     * file sources run to their end, so that it sees their rows. */
    void (*query_started)(void *ctx);
    /* \copy: feed everything read from fd to stream (cli_ingest_fd's contract). */
    int (*ingest)(cli *c, const char *stream, int fd, const cli_ingest_opts *o, exec_ingest_stats *st);
    /* End the session: open results end; then the outputs can go. */
    void (*close)(void *ctx);
} cli_backend;

struct cli {
    const cli_backend *be;
    void *be_ctx;
    engine *eng;            /* the embedded engine, or NULL with --connect */
    int interactive;        /* the shell: errors never stop it, notices to stdout */
    int quiet;              /* drop notices */
    int timing;             /* \timing */
    int format_set;         /* --format or \format chose `format` */
    fmt_kind format;
    int stdout_tty, stderr_tty;
    int pushes;             /* push queries started (SELECT statements run) */
    int consumers;          /* queries started: SELECT and CREATE QUERY */
    int statements;         /* statements run */
    cli_out **keep;         /* outputs of push queries: freed after engine_close */
    int nkeep, capkeep;
    /* The shell's hooks for output that arrives while it waits for a key
     * (rows from sockets, engine messages): before_write takes the prompt
     * off the screen, after_poll draws it again.  NULL outside the shell. */
    void (*before_write)(void *ctx);
    void (*after_poll)(void *ctx);
    void *hook_ctx;
};

void cli_init(cli *c);
/* Run the statements on an embedded engine (c->eng, owned by c from now on). */
void cli_use_engine(cli *c, engine *e);
/* Close the backend (engine_close), then free the kept outputs. */
void cli_fini(cli *c);

struct cli_ingest_opts {
    fmt_kind format;    /* FMT_CSV or FMT_JSON, when format_set */
    int format_set;     /* else the stream's own (its WITH format, else CSV) */
    char delim;         /* CSV: 0 means the stream's */
    const char *null_string; /* CSV: NULL means the stream's */
    fmt_header header;
    int end_of_stream;  /* at the end the stream ends: every window closes */
    int progress;       /* a progress line on stderr after 0.5 s (a terminal) */
    const char *label;  /* file name prefixed to rejections, or NULL */
    int64_t size;       /* bytes expected, for the progress line; 0 unknown */
};

/* Feed everything read from fd to stream in 64 KiB chunks.  The first
 * CLI_SHOW_REJECTS rejected lines print in full on stderr, then a count.
 * Returns CLI_OK, CLI_ESQL (engine error, reported), CLI_EINPUT (a fatal
 * input error such as a bad declared header, reported) or CLI_INTR (the
 * input was cut short: the ingest closes without ending the stream). */
enum { CLI_SHOW_REJECTS = 10 };
int cli_ingest_fd(cli *c, const char *stream, int fd, const cli_ingest_opts *o, exec_ingest_stats *st);
/* Rows of an ingest into stream dropped as late (st->late; st->late_partial:
 * at least that many): a warning with their count on stderr (when late >
 * 0); returns CLI_ELATE for a run that was CLI_OK, unless allow_late, and rc
 * otherwise. */
int cli_late_report(const char *stream, const exec_ingest_stats *st, int allow_late, int rc);
/* "[label: ]... and N more rejected lines" on stderr, for the rejected lines
 * beyond the shown ones printed in full (nothing when rejected <= shown). */
void cli_rejects_more(const char *label, int64_t rejected, int shown);
/* The end of --ingest (embedded and --connect): "STREAM: N rows ingested, M
 * lines rejected" on stderr when lines were rejected. */
void cli_ingest_counts(const char *stream, const exec_ingest_stats *st);
/* And its exit code: a run that was CLI_OK becomes CLI_EINPUT (reported)
 * when lines were rejected and strict, or every line was; then, for
 * CLI_OK or CLI_EINPUT, cli_late_report.  Any other rc is returned as is. */
int cli_ingest_verdict(const char *stream, const exec_ingest_stats *st, int strict, int allow_late, int rc);

/* The shell runs one push query or SUBSCRIBE at a time: the rows of two
 * would interleave with nothing to say which is which.  A second one is
 * refused with this message (embedded and --connect alike). */
#define CLI_ONE_PUSH_MSG                                                                                  \
    "a push query or SUBSCRIBE is already running in this shell, and the rows of two would interleave: " \
    "stop it first (Ctrl-C at an empty prompt), or run this one in another ares-sql"

/* Output settings for a new statement's cli_out. */
cli_out_opts cli_out_opts_for(const cli *c);

/* engine_opts.log for the engine's socket messages (a producer's rejected
 * lines, a sink reconnecting): "ares: msg" on stderr, above the shell's
 * prompt.  ctx is the cli. */
void cli_log(void *ctx, const char *msg);

/* Wait until fd is readable (fd < 0: no fd), timeout_ms passes (< 0: no
 * timeout) or a signal comes, serving the backend (c->be may be NULL) all
 * the while.  Returns 1 when fd is readable, 0 on timeout or an
 * unrelated wake-up (SIGWINCH), -1 after SIGINT/SIGTERM/SIGHUP
 * (cli_interrupted) or when poll fails. */
int cli_wait(cli *c, int fd, int timeout_ms);

/* After the statements of a non-interactive run: keep the engine running
 * while it can still produce rows for someone.  With follow, until a signal
 * (CLI_OK); otherwise while push queries or subscriptions are active and
 * socket sources can feed them, until they finish (CLI_OK) or a signal
 * (CLI_INTR).  File sources run and epochs commit meanwhile. */
int cli_keep_running(cli *c, int follow);

/* Print "error: [name: ]msg" on stderr. */
void cli_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Signals: SIGINT, SIGTERM and SIGHUP set the flag (and wake cli_signal_fd);
 * SIGPIPE ends the process only when stdout is the broken pipe. */
int cli_signals_install(void);
/* fd is a pipe (or socket) whose reader has gone: a write would raise
 * SIGPIPE.  The SIGPIPE handler ends the process only when stdout is. */
int cli_fd_broken(int fd);
int cli_interrupted(void);
void cli_interrupt_clear(void);
int cli_signal_fd(void);      /* readable after a signal; drain with cli_signal_drain */
void cli_signal_drain(void);

/* ------------------------------------------------------------------ script.c */

/* A script fed one line at a time: -e text, a -f or \i file, piped stdin or
 * the shell's lines.  A statement runs when the lines collected so far end
 * in a complete statement (parse_is_complete). */
typedef struct cli_script {
    const char *name;  /* file name for messages, or NULL */
    int relative;      /* the shell: line numbers count from each statement's start */
    int depth;         /* \i nesting */
    int line;          /* lines fed so far */
    int buf_line;      /* input line of buf's first line */
    int chunks;        /* chunks of statements run */
    sbuf buf;          /* lines of the statement being collected */
} cli_script;

void cli_script_init(cli_script *s, const char *name);
void cli_script_fini(cli_script *s);
/* Feed one line (with or without its '\n').  CLI_OK, CLI_ESQL (reported on
 * stderr), CLI_EINPUT, CLI_QUIT, CLI_INTR. */
int cli_script_line(cli *c, cli_script *s, const char *line, size_t n);
/* End of the script: run what is left (a last statement without ';'). */
int cli_script_end(cli *c, cli_script *s);
/* 1 when the script holds part of a statement. */
int cli_script_pending(const cli_script *s);
/* Drop the partial statement (Ctrl-C in the shell). */
void cli_script_clear(cli_script *s);

/* A whole text as a script (-e).  Stops at the first error outside the shell. */
int cli_run_text(cli *c, const char *name, const char *text, size_t n, int depth);
/* A file as a script (-f, \i); an unreadable file is CLI_EUSAGE. */
int cli_run_file(cli *c, const char *path, int depth);
/* The scripts of the command line in order (file[i]: -f script[i], else -e
 * text), then with stdin_sql the statements on stdin.  The first error
 * stops them; so does \q, which is success (CLI_OK). */
int cli_run_scripts(cli *c, int n, const char *const *script, const int *file, int stdin_sql);

/* Print a syntax error at line/col of a chunk of SQL (src, len) whose first
 * line is input line buf_line: "error: NAME: line L, column C: MSG", then
 * the source line and a caret, on stderr. */
void cli_report_at(const char *src, size_t len, const char *name, int buf_line, int line, int col, const char *msg);

/* Meta-commands of every script (\help, \q, \timing, \format, \i, \copy);
 * the shell adds HELP. */
int cli_meta(cli *c, cli_script *s, const char *line, size_t n);

/* ------------------------------------------------------------------ help.c */

/* \help: the meta-commands and the statements in a few lines. */
void cli_help(FILE *f);
/* HELP [topic]: a syntax summary per statement. */
void cli_help_statement(FILE *f, const char *topic);

/* ------------------------------------------------------------------ remote.c */

/* SUBSCRIBE from a second process: when another process holds the data
 * directory (engine_open fails with XE_BUSY), the SUBSCRIBE statements of
 * the scripts go to the owner through <dir>/ares.sock, and their rows print
 * as they arrive.  Any other statement is an error that says why. */
typedef struct cli_remote cli_remote;

int cli_remote_new(const char *dir, cli_remote **out);
void cli_remote_free(cli_remote *r);
/* Take a script's statements (name for messages, or NULL).  CLI_OK, or
 * CLI_ESQL (reported) for a syntax error or a statement other than SUBSCRIBE. */
int cli_remote_add_text(cli_remote *r, const char *name, const char *text, size_t n);
/* The same for a file ("-" reads stdin to its end); CLI_EUSAGE when unreadable. */
int cli_remote_add_file(cli_remote *r, const char *path);
/* Subscribe and print the rows (c->format, c->quiet) until every
 * subscription has ended (CLI_OK) or a signal (CLI_INTR); CLI_ESQL when the
 * owner refuses or cannot be reached (reported). */
int cli_remote_run(cli_remote *r, cli *c);
/* The message for anything but SUBSCRIBE on a directory in use. */
void cli_remote_busy_error(const char *dir);

/* ------------------------------------------------------------------ shell.c */

/* The interactive shell on c (c->interactive set), whatever its backend.
 * The banner's first line says what it runs on (what), its second where
 * (where: "data: DIR", "coordinator: HOST:PORT").  Returns an exit code. */
int cli_shell(cli *c, const char *what, const char *where);

/* Tab completion's candidates for the word that ends at cursor in the line
 * buf[0..len) (pending: the line continues a statement): keywords, names
 * from the backend (c->be->names), meta-commands and their arguments.
 * v is sorted; wlen is the length of the word being completed, word points
 * at it in buf.  Returns n.  Free with cli_cands_free. */
typedef struct cli_cands {
    int n, cap;
    char **v;
    const char *word;
    size_t wlen;
    int lower; /* the word has lower-case letters: keywords complete in lower case */
} cli_cands;
int cli_complete(cli *c, const char *buf, size_t len, size_t cursor, int pending, cli_cands *k);
void cli_cands_free(cli_cands *k);

#endif
