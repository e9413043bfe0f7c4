/*
 * client.h (internal to cli/): ares-sql --connect, the same command line
 * driving a cluster's coordinator instead of an embedded engine.  main.c
 * hands over the options it parsed; client.c is a cli_backend (cli.h) over
 * cluster/cluster.h, under which script.c's scripts and shell.c's shell run
 * unchanged, and prints with output.c, so results look the same as
 * embedded ones.
 */
#ifndef CLI_CLIENT_H
#define CLI_CLIENT_H

#include "cli/cli.h"

typedef struct cli_cluster {
    const char *addrs;       /* --connect HOST:PORT[,HOST:PORT] */
    const char *secret_file; /* --secret-file */
    int nscripts;
    const int *script_file;  /* per script: 1 = -f FILE, 0 = -e TEXT */
    const char *const *script;
    const char *ingest;      /* --ingest STREAM, or NULL */
    fmt_kind input_format;
    fmt_header header;
    int strict, quiet, follow;
    int format_set;
    fmt_kind format;
    int end;                 /* --end: the input's end ends the stream */
    int allow_late;          /* --allow-late */
    int input_format_set;    /* --input-format given; else the stream's format */
} cli_cluster;

/* Run the whole session; returns the exit code (cli.h's CLI_*). */
int cli_cluster_run(const cli_cluster *r);


#endif
