/*
 * main.c: ares-sql, the command line that drives an embedded Ares engine.
 *
 *   ares-sql [--data DIR | --memory] [-e SQL]... [-f FILE]...
 *            [--ingest STREAM [--input-format csv|json] [--header|--no-header] [--strict]
 *             [--end] [--allow-late]]
 *            [--format table|csv|json|vertical] [--follow] [-q]
 *   ares-sql --connect HOST:PORT[,HOST:PORT] --secret-file FILE [the same options]
 *
 * The order of a run: the -e and -f scripts in the order given (the first
 * error stops: exit 1); or, with neither and stdin not a terminal (and no
 * --ingest), the statements on stdin as they arrive; then with --ingest
 * stdin feeds the stream until its end, which ends the stream so every open
 * window closes and prints; then file sources run to their end; with
 * --follow the engine keeps running until SIGINT or SIGTERM.  With no
 * statements, no --ingest and stdin a terminal, the interactive shell opens.
 * After that the engine keeps running (cli_keep_running: socket sources,
 * sinks and subscribers move) with --follow until SIGINT or SIGTERM, and
 * without it while push queries or subscriptions are active and socket
 * sources can feed them.  When another process holds the data directory,
 * only SUBSCRIBE statements run, through its control socket (remote.c).
 *
 * Exit codes (scripts rely on them): 0 success, 1 an SQL or engine error,
 * 2 bad usage, 3 input rejected beyond the error policy, 4 rows of the
 * input were late and dropped (unless --allow-late), 130 interrupted.
 * Messages go to stderr; stdout carries only results.
 */
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"

static void usage(FILE *f)
{
    fputs("Usage: ares-sql [OPTIONS]\n"
          "Ares continuous SQL on an embedded engine.  With no statements and stdin a\n"
          "terminal, an interactive shell; otherwise statements from -e, -f or stdin.\n"
          "\n"
          "  --data DIR           keep streams, queries and window state in DIR\n"
          "                       (default ./ares-data)\n"
          "  --memory             a throwaway data directory, removed at exit\n"
          "  --connect HOST:PORT[,HOST:PORT]\n"
          "                       run on a cluster: statements, --ingest and results go\n"
          "                       through its coordinator (the first address that answers)\n"
          "  --secret-file FILE   the cluster secret for --connect\n"
          "  -e, --execute SQL    run SQL; repeatable, runs in order with -f\n"
          "  -f, --file FILE      run the statements in FILE ('-' for stdin); repeatable\n"
          "  --ingest STREAM      after the statements, feed stdin to STREAM, read in\n"
          "                       64 KiB chunks; at its end the stream ends, every open\n"
          "                       window closes and prints, and ares-sql exits (with\n"
          "                       --connect the stream stays open for other producers:\n"
          "                       its windows close as event time passes them)\n"
          "  --end                with --connect: at the end of the input the stream\n"
          "                       ends (every open window closes; later rows are late)\n"
          "  --allow-late         exit 0 when rows were late and dropped (a warning\n"
          "                       still says how many)\n"
          "  --input-format csv|json\n"
          "                       stdin's format for --ingest (default: the stream's\n"
          "                       format, else csv); CSV columns in the stream's order,\n"
          "                       or as a header line names them; JSON one object per\n"
          "                       line, fields by name\n"
          "  --header, --no-header\n"
          "                       the CSV input starts (or not) with a header line\n"
          "                       (default: a first line naming columns is a header)\n"
          "  --strict             exit 3 when any input line is rejected\n"
          "  --format table|csv|json|vertical\n"
          "                       how results print (default: table on a terminal,\n"
          "                       otherwise CSV with a header row)\n"
          "  --follow             after the statements and stdin, keep the engine running\n"
          "                       (socket sources, sinks, SUBSCRIBE from other\n"
          "                       processes, file sources) until SIGINT or SIGTERM\n"
          "  -q, --quiet          no notices (\"CREATE STREAM\", \"2 rows inserted\")\n"
          "  -h, --help           this help\n"
          "  -V, --version        the version\n"
          "\n"
          "Push queries (a bare SELECT) and SUBSCRIBE print their rows to stdout as\n"
          "windows close.  When they read a socket source, ares-sql keeps running\n"
          "until they finish (LIMIT) or SIGINT/SIGTERM (exit 130).  When another\n"
          "process holds the data directory, SUBSCRIBE still works: its rows come\n"
          "from that process (through DIR/ares.sock); other statements fail (exit 1).\n"
          "Notices and errors go to stderr.  A rejected input line is reported with its\n"
          "line number and reason (the first 10 in full, then a count) and the good\n"
          "lines go on.\n"
          "\n"
          "Exit status:\n"
          "  0    success\n"
          "  1    an SQL error (syntax, unknown name, type) or an engine error\n"
          "  2    bad usage (unknown option, missing argument, unreadable -f file)\n"
          "  3    input rejected beyond the error policy: every input line was rejected,\n"
          "       any line was rejected with --strict, or the input broke its declared\n"
          "       shape (--header with a bad header line)\n"
          "  4    rows of the --ingest input were late (their windows had closed) and\n"
          "       were dropped; --allow-late makes that 0\n"
          "  130  interrupted by SIGINT or SIGTERM (with --follow that is the normal end:\n"
          "       0)\n",
          f);
}

static int bad_usage(const char *fmt, const char *arg)
{
    fputs("ares-sql: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'ares-sql --help' for more information.\n", stderr);
    return CLI_EUSAGE;
}

enum {
    OPT_DATA = 256, OPT_MEMORY, OPT_INGEST, OPT_INPUT_FORMAT, OPT_HEADER, OPT_NO_HEADER,
    OPT_FORMAT, OPT_FOLLOW, OPT_STRICT, OPT_CONNECT, OPT_SECRET_FILE, OPT_END, OPT_ALLOW_LATE,
};

/* Another process holds the data directory: its SUBSCRIBE statements go
 * there (remote.c); the shell, --ingest and anything but SUBSCRIBE cannot. */
static int run_remote(cli *c, const char *dir, const char *const *texts, const int *files, int nscripts, int stdin_sql,
                      int refuse)
{
    if (refuse) {
        cli_remote_busy_error(dir);
        return CLI_ESQL;
    }
    cli_remote *r = NULL;
    if (cli_remote_new(dir, &r) < 0) {
        cli_error(NULL, "out of memory");
        return CLI_ESQL;
    }
    int rc = CLI_OK;
    for (int i = 0; i < nscripts && rc == CLI_OK; i++)
        rc = files[i] ? cli_remote_add_file(r, texts[i]) : cli_remote_add_text(r, NULL, texts[i], strlen(texts[i]));
    if (rc == CLI_OK && stdin_sql) rc = cli_remote_add_file(r, "-");
    if (rc == CLI_OK) rc = cli_remote_run(r, c);
    cli_remote_free(r);
    return rc;
}

int main(int argc, char **argv)
{
    base_huge_heap(64); /* before anything allocates: see base.h */
    setlocale(LC_CTYPE, "");

    static const struct option longs[] = {
        {"data", required_argument, NULL, OPT_DATA},
        {"memory", no_argument, NULL, OPT_MEMORY},
        {"execute", required_argument, NULL, 'e'},
        {"file", required_argument, NULL, 'f'},
        {"ingest", required_argument, NULL, OPT_INGEST},
        {"input-format", required_argument, NULL, OPT_INPUT_FORMAT},
        {"header", no_argument, NULL, OPT_HEADER},
        {"no-header", no_argument, NULL, OPT_NO_HEADER},
        {"strict", no_argument, NULL, OPT_STRICT},
        {"end", no_argument, NULL, OPT_END},
        {"allow-late", no_argument, NULL, OPT_ALLOW_LATE},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"follow", no_argument, NULL, OPT_FOLLOW},
        {"connect", required_argument, NULL, OPT_CONNECT},
        {"secret-file", required_argument, NULL, OPT_SECRET_FILE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };

    const char *data_dir = NULL, *ingest = NULL, *connect = NULL, *secret_file = NULL;
    int memory = 0, do_follow = 0, strict = 0, quiet = 0, end = 0, allow_late = 0;
    int input_format_set = 0, header_set = 0, format_set = 0;
    fmt_kind input_format = FMT_CSV, format = FMT_CSV;
    fmt_header header = FMT_HEADER_AUTO;
    /* the -e and -f scripts in order: texts[i], and files[i] = 1 for -f */
    const char **texts = calloc((size_t)argc + 1, sizeof *texts);
    int *files = calloc((size_t)argc + 1, sizeof *files);
    int nscripts = 0;
    if (!texts || !files) {
        free(texts);
        free(files);
        return CLI_ESQL;
    }

    opterr = 0;
    int opt, rc = CLI_OK;
    while ((opt = getopt_long(argc, argv, ":e:f:qhV", longs, NULL)) != -1) {
        switch (opt) {
        case OPT_DATA: data_dir = optarg; break;
        case OPT_MEMORY: memory = 1; break;
        case 'e': files[nscripts] = 0, texts[nscripts++] = optarg; break;
        case 'f': files[nscripts] = 1, texts[nscripts++] = optarg; break;
        case OPT_INGEST: ingest = optarg; break;
        case OPT_INPUT_FORMAT:
            if (fmt_kind_parse(optarg, &input_format) < 0 || (input_format != FMT_CSV && input_format != FMT_JSON)) {
                rc = bad_usage("--input-format must be csv or json, not '%s'", optarg);
                goto out;
            }
            input_format_set = 1;
            break;
        case OPT_HEADER: header = FMT_HEADER_YES; header_set = 1; break;
        case OPT_NO_HEADER: header = FMT_HEADER_NO; header_set = 1; break;
        case OPT_STRICT: strict = 1; break;
        case OPT_END: end = 1; break;
        case OPT_ALLOW_LATE: allow_late = 1; break;
        case OPT_FORMAT:
            if (fmt_kind_parse(optarg, &format) < 0) {
                rc = bad_usage("--format must be table, csv, json or vertical, not '%s'", optarg);
                goto out;
            }
            format_set = 1;
            break;
        case OPT_FOLLOW: do_follow = 1; break;
        case OPT_CONNECT: connect = optarg; break;
        case OPT_SECRET_FILE: secret_file = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); goto out;
        case 'V': printf("ares-sql %s\n", CLI_VERSION); goto out;
        case ':': {
            char o[3] = {'-', (char)optopt, 0};
            rc = bad_usage("option %s needs an argument", optopt ? o : argv[optind - 1]);
            goto out;
        }
        default: {
            char o[3] = {'-', (char)optopt, 0};
            rc = bad_usage("unknown option %s", optopt ? o : argv[optind - 1]);
            goto out;
        }
        }
    }
    if (optind < argc) {
        rc = bad_usage("unexpected argument '%s'", argv[optind]);
        goto out;
    }
    if (data_dir && memory) {
        rc = bad_usage("%s", "--data and --memory exclude each other");
        goto out;
    }
    if (!ingest && (input_format_set || header_set || strict || end || allow_late)) {
        rc = bad_usage("%s", "--input-format, --header, --no-header, --strict, --end and --allow-late need --ingest");
        goto out;
    }
    if (ingest && header_set && input_format == FMT_JSON) {
        rc = bad_usage("%s", "--header and --no-header are for CSV input");
        goto out;
    }

    if (connect || secret_file) {
        if (!connect || data_dir || memory) {
            rc = bad_usage("%s", connect ? "--connect excludes --data and --memory" : "--secret-file needs --connect");
            goto out;
        }
        cli_cluster r = {connect, secret_file, nscripts, files, texts, ingest, input_format, header, strict,
                        quiet, do_follow, format_set, format, end, allow_late, input_format_set};
        rc = cli_cluster_run(&r);
        goto out;
    }

    int stdin_tty = isatty(STDIN_FILENO);
    int shell = nscripts == 0 && !ingest && !do_follow && stdin_tty;
    int stdin_sql = nscripts == 0 && !ingest && !stdin_tty;

    cli c;
    cli_init(&c);
    c.interactive = shell;
    c.quiet = quiet;
    c.format_set = format_set;
    c.format = format;
    if (cli_signals_install() < 0) {
        cli_error(NULL, "cannot install signal handlers");
        rc = CLI_ESQL;
        goto out;
    }

    engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.data_dir = data_dir ? data_dir : "./ares-data";
    eo.memory = memory;
    eo.log = cli_log;
    eo.log_ctx = &c;
    xerr err;
    xerr_clear(&err);
    engine *eng = NULL;
    int orc = engine_open(&eo, &eng, &err);
    if (orc == XE_BUSY && !memory) {
        rc = run_remote(&c, eo.data_dir, texts, files, nscripts, stdin_sql, shell || ingest);
        goto out;
    }
    if (orc < 0) {
        cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
        rc = CLI_ESQL;
        goto out;
    }
    cli_use_engine(&c, eng);

    if (shell) {
        char desc[PATH_MAX + 64], abs[PATH_MAX];
        const char *dir = realpath(engine_dir(c.eng), abs) ? abs : engine_dir(c.eng);
        if (memory)
            snprintf(desc, sizeof desc, "data: in memory (%s, removed at exit)", dir);
        else
            snprintf(desc, sizeof desc, "data: %s", dir);
        rc = cli_shell(&c, "an embedded Ares engine", desc);
        cli_fini(&c);
        goto out;
    }

    rc = cli_run_scripts(&c, nscripts, texts, files, stdin_sql);

    if (rc == CLI_OK && ingest) {
        cli_ingest_opts io;
        memset(&io, 0, sizeof io);
        io.format = input_format;
        io.format_set = input_format_set;
        io.header = header;
        io.end_of_stream = 1;
        exec_ingest_stats st;
        rc = cli_ingest_fd(&c, ingest, STDIN_FILENO, &io, &st);
        if (rc == CLI_OK || rc == CLI_INTR) cli_ingest_counts(ingest, &st);
        rc = cli_ingest_verdict(ingest, &st, strict, allow_late, rc);
    }

    if (rc == CLI_OK || (rc == CLI_EINPUT && ingest)) {
        int64_t rows = 0;
        xerr_clear(&err);
        if (engine_run_file_sources(c.eng, &rows, &err) < 0) {
            cli_error(NULL, "%s", err.msg[0] ? err.msg : xerr_name(err.code));
            if (rc == CLI_OK) rc = CLI_ESQL;
        }
    }
    if (rc == CLI_OK && do_follow && !quiet) {
        fflush(stdout);
        fputs("-- the engine runs until SIGINT or SIGTERM (--follow)\n", stderr);
    }
    if (rc == CLI_OK) rc = cli_keep_running(&c, do_follow);
    cli_fini(&c);

out:
    free(texts);
    free(files);
    if (fflush(stdout) != 0 && rc == CLI_OK) rc = CLI_ESQL;
    return rc;
}
