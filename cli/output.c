/*
 * output.c: an exec_out that prints results to a FILE* through the encoders
 * of exec/format.h.
 *
 * A result is begin, rows, end.  begin picks the format (push queries and
 * plain results may differ: a terminal shows both as tables, but a push
 * query's table streams, with widths fixed by its first batch) and creates
 * the encoder; each rows call encodes its batch, writes it and flushes, so
 * rows reach a pipe as the windows close; end writes what the encoder kept
 * (a table, a CSV header when no row came, the "(N rows)" footer).
 *
 * The engine copies the exec_out of a push query and calls it later, from
 * inside other calls (an INSERT, an ingest), so a cli_out must outlive its
 * query: script.c keeps the ones that began a push result (c->keep) until
 * cli_fini has closed the engine.
 * A failed write is remembered (cli_out_write_errno) and returned as XE_IO
 * so that the engine stops feeding a closed pipe.  Rows can also arrive while
 * the shell shows its prompt (a socket source feeding a push query): the
 * before_write hook lets the shell take the prompt away first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

struct cli_out {
    cli_out_opts o;
    exec_out eo;
    fmt_encoder *enc;
    sbuf buf;
    int pushed; /* a push result (stream = 1) began */
    int werr;
};

/* Write what the encoder produced, now.  Signals are installed without
 * SA_RESTART (so that Ctrl-C ends a blocked read), hence the EINTR loop; the
 * FILE's own buffer (notices, say) goes first to keep the order. */
static int flush_buf(cli_out *o)
{
    if (o->buf.len && o->o.before_write) o->o.before_write(o->o.hook_ctx);
    while (!o->werr && fflush(o->o.data) != 0) {
        if (errno != EINTR) o->werr = errno ? errno : EIO;
        clearerr(o->o.data);
    }
    int fd = fileno(o->o.data);
    for (size_t off = 0; !o->werr && off < o->buf.len;) {
        ssize_t k = write(fd, o->buf.p + off, o->buf.len - off);
        if (k > 0) off += (size_t)k;
        else if (k < 0 && errno != EINTR) o->werr = errno;
    }
    sbuf_reset(&o->buf);
    return o->werr ? XE_IO : 0;
}

static int finish(cli_out *o)
{
    int rc = 0;
    if (o->enc) {
        rc = fmt_encode_finish(o->enc, &o->buf);
        int wrc = flush_buf(o);
        if (!rc) rc = wrc;
        fmt_encoder_free(o->enc);
        o->enc = NULL;
    }
    return rc;
}

static int out_begin(void *ctx, const fmt_schema *cols, int stream)
{
    cli_out *o = ctx;
    if (o->enc) finish(o); /* a result that never got its end */
    fmt_kind k = stream ? o->o.push_kind : o->o.result_kind;
    fmt_enc_opts eopts = {0};
    eopts.stream = stream && k == FMT_TABLE;
    int rc = fmt_encoder_new(k, cols, &eopts, &o->enc);
    if (rc < 0) return rc;
    if (stream) o->pushed = 1;
    return 0;
}

static int out_rows(void *ctx, const batch *b)
{
    cli_out *o = ctx;
    if (o->werr) return XE_IO;
    if (!o->enc) return XE_INVAL; /* rows without begin */
    int rc = fmt_encode(o->enc, b, &o->buf);
    if (rc < 0) return rc;
    return flush_buf(o);
}

static int out_end(void *ctx)
{
    return finish(ctx);
}

static void out_notice(void *ctx, const char *msg)
{
    cli_out *o = ctx;
    if (!o->o.notices) return;
    if (o->o.before_write) o->o.before_write(o->o.hook_ctx);
    /* Rows already written stay ahead of the notice on a shared terminal. */
    fflush(o->o.data);
    size_t n = strlen(msg);
    fprintf(o->o.notices, "%s%s", msg, n && msg[n - 1] == '\n' ? "" : "\n");
    fflush(o->o.notices);
}

int cli_out_new(const cli_out_opts *opts, cli_out **out)
{
    *out = NULL;
    cli_out *o = calloc(1, sizeof *o);
    if (!o) return XE_NOMEM;
    o->o = *opts;
    sbuf_init(&o->buf);
    o->eo.ctx = o;
    o->eo.begin = out_begin;
    o->eo.rows = out_rows;
    o->eo.end = out_end;
    o->eo.notice = out_notice;
    *out = o;
    return 0;
}

void cli_out_free(cli_out *o)
{
    if (!o) return;
    finish(o);
    sbuf_fini(&o->buf);
    free(o);
}

const exec_out *cli_out_exec(cli_out *o) { return &o->eo; }
int cli_out_pushed(const cli_out *o) { return o->pushed; }
int cli_out_write_errno(const cli_out *o) { return o->werr; }

int cli_outs_add(cli_out ***v, int *n, int *cap, cli_out *o)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 8;
        cli_out **nv = realloc(*v, (size_t)c * sizeof *nv);
        if (!nv) return XE_NOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = o;
    return 0;
}
