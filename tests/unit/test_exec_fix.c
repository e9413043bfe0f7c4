/*
 * The fixture of test_exec (tests/unit/test_exec.h): results captured as
 * CSV text, engines in memory and in temp directories, ingest and restart
 * helpers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/test_exec.h"

/* ------------------------------------------------------------------ capture */


int cap_begin(void *ctx, const fmt_schema *cols, int stream)
{
    cap *c = ctx;
    (void)stream;
    fmt_encoder_free(c->enc);
    fmt_enc_opts o = {0};
    o.no_header = 1;
    c->begins++;
    return fmt_encoder_new(FMT_CSV, cols, &o, &c->enc);
}

int cap_rows(void *ctx, const batch *b)
{
    cap *c = ctx;
    return fmt_encode(c->enc, b, &c->text);
}

int cap_end(void *ctx)
{
    cap *c = ctx;
    c->ends++;
    return fmt_encode_finish(c->enc, &c->text);
}

void cap_notice(void *ctx, const char *msg)
{
    cap *c = ctx;
    sbuf_printf(&c->notices, "%s\n", msg);
}

exec_out cap_out(cap *c)
{
    memset(c, 0, sizeof *c);
    sbuf_init(&c->text);
    sbuf_init(&c->notices);
    return (exec_out){c, cap_begin, cap_rows, cap_end, cap_notice};
}

void cap_fini(cap *c)
{
    fmt_encoder_free(c->enc);
    sbuf_fini(&c->text);
    sbuf_fini(&c->notices);
}

/* Sort the lines of s (row order across groups is not part of the contract). */
char *sorted(const char *s)
{
    char *copy = strdup(s ? s : "");
    char *lines[4096];
    int n = 0;
    for (char *p = strtok(copy, "\n"); p && n < 4096; p = strtok(NULL, "\n")) lines[n++] = p;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
            char *t = lines[j]; lines[j] = lines[j - 1]; lines[j - 1] = t;
        }
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < n; i++) sbuf_printf(&b, "%s\n", lines[i]);
    free(copy);
    return sbuf_steal(&b);
}

engine *open_mem(void)
{
    engine_opts o = {0};
    o.memory = 1;
    engine *e;
    xerr err;
    int rc = engine_open(&o, &e, &err);
    if (rc) fail_msg("engine_open: %s", err.msg);
    return e;
}

void run(engine *e, const exec_out *out, const char *sql)
{
    xerr err;
    int rc = engine_exec_sql(e, sql, out, &err);
    if (rc) fail_msg("%s: %s (line %d col %d)", sql, err.msg, err.line, err.col);
}

void ingest(engine *e, const char *stream, const char *data, int end)
{
    exec_ingest *in;
    xerr err;
    exec_ingest_opts o = {0};
    assert_int_equal(exec_ingest_open(e, stream, &o, &in, &err), 0);
    assert_int_equal(exec_ingest_feed(in, data, strlen(data), &err), 0);
    int rc = exec_ingest_close(in, end, NULL, &err);
    if (rc) fail_msg("ingest: %s", err.msg);
}

/* The lines of file path, sorted (sorted()). */
char *file_sorted(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[512] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return sorted(buf);
}

/* On data directory o: sql, rows in1 of stream s (which stays open), a
 * restart, rows in2 and the end of s.  Returns the reopened engine. */
engine *restart_between(const engine_opts *o, const exec_out *out, const char *sql, const char *in1,
                        const char *in2)
{
    engine *e;
    xerr err;
    if (engine_open(o, &e, &err)) fail_msg("open: %s", err.msg);
    run(e, out, sql);
    ingest(e, "s", in1, 0);
    engine_close(e);
    if (engine_open(o, &e, &err)) fail_msg("reopen: %s", err.msg);
    ingest(e, "s", in2, 1);
    return e;
}

/* The whole of file path, appended to text. */
void file_text(const char *path, sbuf *text)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sbuf_add(text, buf, n);
    fclose(f);
}

void rm_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}


/* A data directory in a new temp dir (dir, a mkdtemp template; data gets its path), opened. */
engine *open_tmp(char *dir, char *data, size_t n, engine_opts *o)
{
    assert_non_null(mkdtemp(dir));
    snprintf(data, n, "%s/data", dir);
    memset(o, 0, sizeof *o);
    o->data_dir = data;
    engine *e;
    xerr err;
    if (engine_open(o, &e, &err)) fail_msg("open: %s", err.msg);
    return e;
}

/* Close e, open o again, and SUBSCRIBE to name into a new capture s. */
engine *reopen_subscribed(engine *e, const engine_opts *o, cap *s, exec_out *sub, const char *name)
{
    xerr err;
    char sql[300];
    engine_close(e);
    cap_fini(s);
    if (engine_open(o, &e, &err)) fail_msg("reopen: %s", err.msg);
    *sub = cap_out(s);
    snprintf(sql, sizeof sql, "SUBSCRIBE %s;", name);
    run(e, sub, sql);
    return e;
}
