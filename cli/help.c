/*
 * help.c: the texts of \help (cli_help: the meta-commands and the
 * statements in a few lines) and of HELP <statement> (cli_help_statement: a
 * syntax summary per statement).
 *
 * The scripts' meta-commands (script.c) and the shell's HELP (script.c,
 * while the shell feeds it lines) print them; this file calls nothing of
 * cli/ itself, so it sits below both.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"

void cli_help(FILE *f)
{
    fputs("Meta-commands (at the start of a line):\n"
          "  \\help, \\?           this help; HELP <statement> for a statement's syntax\n"
          "  \\q                  leave (Ctrl-D too)\n"
          "  \\timing [on|off]    show how long each statement takes\n"
          "  \\format [table|csv|json|vertical]\n"
          "                      how results print (a terminal starts with table)\n"
          "  \\i FILE             run the statements in FILE\n"
          "  \\copy STREAM FROM 'file' [csv|json] [WITH (option value, ...)]\n"
          "                      load a file into a stream (CSV header detected); the\n"
          "                      stream stays open, so windows close as event time moves;\n"
          "                      the stream's format and options unless given: format,\n"
          "                      delimiter, null_string, header (true, false or auto)\n"
          "\n"
          "SQL statements end with ';' and may span lines:\n"
          "  CREATE STREAM, CREATE TABLE, CREATE QUERY, SELECT, INSERT, DROP STREAM,\n"
          "  DROP TABLE, DROP QUERY,\n"
          "  SUBSCRIBE, SHOW STREAMS | QUERIES | NODES | SETTINGS, SHOW setting,\n"
          "  DESCRIBE, EXPLAIN, SET\n"
          "A bare SELECT is a push query: its rows print as its windows close, while\n"
          "later statements (INSERT, \\copy) feed it, until Ctrl-C at an empty prompt;\n"
          "the shell runs one push query or SUBSCRIBE at a time.\n"
          "Tab completes keywords and stream, query and column names.\n",
          f);
}

typedef struct help_topic {
    const char *name;
    const char *text;
} help_topic;

static const help_topic topics[] = {
    {"CREATE STREAM",
     "CREATE STREAM [IF NOT EXISTS] name (column type [, ...])\n"
     "    [WITH (timestamp = 'column', watermark = '2 seconds'\n"
     "           [, source = 'tcp://HOST:PORT' | 'unix:///path' | 'file:///path',\n"
     "              format = 'csv' | 'json', retention = '512 MB' | '2 hours'])]\n"
     "  A stream of rows.  Types: BIGINT, INT, DOUBLE, TEXT, BOOLEAN, TIMESTAMP.\n"
     "  timestamp names the event-time column that windows use; the watermark is\n"
     "  the largest event time seen minus the delay.\n"
     "  A tcp:// or unix:// source listens there (HOST 127.0.0.1 by default) for\n"
     "  any number of producers, each sending lines: nc 127.0.0.1 9100 < rows.csv\n"
     "  Example: CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts');\n"
     "CREATE STREAM [IF NOT EXISTS] name [WITH (timestamp = 'column', ...)] AS SELECT ...\n"
     "  A derived stream: a standing query (called name) whose rows are the stream's,\n"
     "  read by other queries and SUBSCRIBE.  Its event time is window_end of a\n"
     "  windowed aggregate, else its input's; its watermark is its writers'.\n"},
    {"CREATE TABLE",
     "CREATE TABLE [IF NOT EXISTS] name (column type [, ...], PRIMARY KEY (column [, ...]))\n"
     "    [WITH (op_column = 'column', format = 'csv' | 'json', source = ..., timestamp = ...)]\n"
     "  A table: a row replaces the row of its key (upsert); with op_column, a row's\n"
     "  op is I, U or D (D deletes its key).  Fed as a stream is (INSERT, \\copy,\n"
     "  --ingest).  Its readers (SUBSCRIBE, SELECT * FROM t, derived streams) see its\n"
     "  changelog: a column op first, +I, -U, +U or -D, then the row.\n"
     "  Example: CREATE TABLE users (id BIGINT, name TEXT, PRIMARY KEY (id));\n"
     "CREATE TABLE [IF NOT EXISTS] name AS SELECT k, COUNT(*), SUM(v) ... FROM s GROUP BY k\n"
     "  An aggregate without a window, updated as its input changes, keyed by its\n"
     "  GROUP BY columns; over a table it retracts (a row that changes its group\n"
     "  moves; a group without rows is deleted).  With HAVING a group that stops\n"
     "  passing it is deleted, and comes back when it passes again.  Embedded only.\n"},
    {"CREATE QUERY",
     "CREATE QUERY [IF NOT EXISTS] name\n"
     "    [WITH (sink = 'tcp://HOST:PORT' | 'unix:///path' | 'file:///path',\n"
     "           format = 'csv' | 'json', offset = 'latest' | 'earliest',\n"
     "           changelog = 'full' | 'upsert')]\n"
     "    AS SELECT ...\n"
     "  A standing query, kept in the catalog: it runs until DROP QUERY, across\n"
     "  restarts.  A socket sink connects there and writes one line per row,\n"
     "  reconnecting while the peer is away.  SUBSCRIBE name shows its rows.\n"
     "  offset = 'earliest' reads its streams' logs from the start first.\n"
     "  changelog = 'upsert' (over a table) writes the sink only the new row of a\n"
     "  key, and a -D of its key for a delete.\n"},
    {"SELECT",
     "SELECT expr [AS alias] [, ...] FROM stream [alias]\n"
     "    [WINDOW TUMBLING (SIZE n unit [, GRACE n unit])\n"
     "          | HOPPING (SIZE n unit, ADVANCE BY n unit [, GRACE n unit])\n"
     "          | SESSION (GAP n unit [, GRACE n unit])]\n"
     "    [JOIN stream [alias] ON condition WITHIN n unit]\n"
     "    [WHERE condition] [GROUP BY expr [, ...]] [HAVING condition]\n"
     "    [EMIT CHANGES | EMIT FINAL] [LIMIT n]\n"
     "  A bare SELECT is a push query: rows print as they are produced.\n"
     "  Units: MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS.  Aggregates: COUNT(*),\n"
     "  COUNT(DISTINCT x), SUM, AVG, MIN, MAX; window_start and window_end are columns.\n"},
    {"INSERT",
     "INSERT INTO stream [(column [, ...])] VALUES (value [, ...]) [, (...)]\n"
     "  Rows flow through every query of the stream.\n"
     "INSERT INTO stream SELECT ...\n"
     "  A standing query (stream_insert_<id>) appending its rows to the stream;\n"
     "  its columns must fit the stream's, in order.\n"},
    {"DROP STREAM", "DROP STREAM [IF EXISTS] name\n"},
    {"DROP TABLE", "DROP TABLE [IF EXISTS] name\n  A table, its rows and its log (and the query of CREATE TABLE AS).\n"},
    {"DROP QUERY", "DROP QUERY [IF EXISTS] name\n"},
    {"ALTER QUERY",
     "ALTER QUERY name REBALANCE\n"
     "  On a cluster: re-play placement for the query now and move the tasks that\n"
     "  gain more than rebalance_threshold (each with its state; the output stays\n"
     "  exact).  Embedded, every task runs here: nothing to move.\n"},
    {"SHOW",
     "SHOW STREAMS | QUERIES | NODES | SETTINGS\n"
     "SHOW setting_name\n"
     "  SHOW SETTINGS lists every setting: its value, its default and what it does;\n"
     "  SHOW parallelism gives one.  SHOW NODES lists a cluster's nodes.\n"},
    {"DESCRIBE", "DESCRIBE name\n  The columns of a stream; the SQL, columns and plan of a query.\n"},
    {"EXPLAIN",
     "EXPLAIN [PLACEMENT] [(FORMAT JSON)] SELECT ... | query_name\n"
     "  The operator DAG: operators, partitioning keys, parallelism, edges.\n"},
    {"SUBSCRIBE",
     "SUBSCRIBE query_name\n"
     "  A standing query's rows, live, like a push query (Ctrl-C stops).  From a\n"
     "  second ares-sql on the same --data DIR while this one holds it:\n"
     "    ares-sql --data DIR -e 'SUBSCRIBE query_name;'\n"},
    {"SET",
     "SET name = value\n"
     "  Settings: parallelism, placement, replicas, ft, checkpoint_interval, shadow,\n"
     "            rebalance_interval, rebalance_threshold, offset, memory_budget\n"
     "  (SHOW SETTINGS says what each does).  Example: SET parallelism = 4;\n"
     "  SET offset = 'earliest' starts the queries created after it at the start\n"
     "  of their streams' logs (the default, 'latest': new rows only).\n"
     "  SET memory_budget = '64 MB' keeps that much window state in memory and the\n"
     "  rest in LMDB (the default, 0: no bound).\n"},
    {NULL, NULL},
};

void cli_help_statement(FILE *f, const char *topic)
{
    while (*topic == ' ') topic++;
    if (!*topic) {
        fputs("HELP <statement> shows its syntax.  Statements:\n", f);
        for (int i = 0; topics[i].name; i++) fprintf(f, "  %s\n", topics[i].name);
        return;
    }
    /* normalise spaces, then match the topic's first words */
    char want[128];
    size_t n = 0;
    for (const char *p = topic; *p && n + 1 < sizeof want; p++) {
        if ((*p == ' ' || *p == '\t') && (n == 0 || want[n - 1] == ' ')) continue;
        want[n++] = *p == '\t' ? ' ' : *p;
    }
    while (n && want[n - 1] == ' ') n--;
    want[n] = 0;
    int found = 0;
    for (int i = 0; topics[i].name; i++) {
        size_t k = strlen(topics[i].name);
        if (strncasecmp(topics[i].name, want, n < k ? n : k) == 0 &&
            (n <= k ? (n == k || topics[i].name[n] == ' ') : want[k] == ' ')) {
            fputs(topics[i].text, f);
            found++;
        }
    }
    if (!found) fprintf(f, "No help for '%s'.  HELP alone lists the statements.\n", want);
}
