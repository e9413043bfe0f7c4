/*
 * client_ingest.c: an ingest from the client (clu_client_ingest, cluster.h),
 * on top of client.c's connection (client_int.h).
 *
 * An ingest is a session (a random id) of numbered chunks.  Input is read
 * only when the previous chunk went into the connection's send queue, so a
 * slow cluster slows the reader.  Every chunk is kept until the coordinator
 * (or the home, straight to it) says the stream's home and its copy have it
 * (RES_ACKED, client.c frees it); after a failover, a move to the home
 * (RES_HOME) or away from a lost one, the kept chunks go again under a new
 * request id and the home skips the ones it has.  Unacknowledged bytes are
 * bounded (UNACKED_MAX).  A chunk ends at a line's end (whole_lines): a
 * producer stopped by a signal sends its whole lines and reports the cut one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/client_int.h"

#define INGEST_CHUNK (64 * 1024)
#define UNACKED_MAX (64u * 1024 * 1024) /* ingest bytes sent but not yet in at the home and shadow */
/* An interrupted ingest waits this long for the home's last answer (its
 * counts).  Up to UNACKED_MAX bytes may be queued ahead of it at a home that
 * is behind, which can take minutes; the client then says what it knows and
 * ends instead of ignoring the signal. */
#define CUT_WAIT_MS 2000
/* Input read waits this long for more before it goes as a chunk (as Kafka's
 * producer linger.ms, 5 ms by default since Kafka 4.0): a producer that
 * writes a few rows a millisecond then sends a chunk every 5 ms, not one per
 * read, and the coordinator and the home handle a fifth of the frames. */
#define LINGER_MS 5

/* How much of buf[0, fill) a chunk takes: up to its last line's end, so
 * that a chunk holds whole lines and an interrupted producer never sends half
 * of one; all of it when one line fills the buffer (it goes in pieces). 0 when
 * the input so far is one line without its end. */
static size_t whole_lines(const char *buf, size_t fill)
{
    const char *nl = memrchr(buf, '\n', fill);
    if (nl) return (size_t)(nl - buf) + 1;
    return fill == INGEST_CHUNK ? fill : 0;
}

/* Send a kept chunk (again, after a failover) as part of request c->cur. */
static int send_kept(clu_client *c, const clu_ingest_opts *o, const chunk *k, xerr *err)
{
    wire_msg m = {.type = WIRE_INGEST, .flags = (k->last ? WIRE_F_LAST : 0) | (c->may_direct && !c->away ? WIRE_F_DIRECT : 0)};
    m.u.ingest.req_id = c->cur;
    m.u.ingest.stream = wire_str_of(c->ing_stream);
    m.u.ingest.format = o->format_set ? (uint8_t)o->format : WIRE_FMT_STREAM;
    m.u.ingest.header = (uint8_t)o->header;
    m.u.ingest.end = (uint8_t)k->end;
    m.u.ingest.session = c->session;
    m.u.ingest.seq = k->seq;
    m.u.ingest.line0 = k->line0;
    m.u.ingest.delim = (uint8_t)o->delim;
    m.u.ingest.has_null = o->null_string != NULL;
    m.u.ingest.null_string = wire_str_of(o->null_string ? o->null_string : "");
    m.u.ingest.data = (wire_str){(const char *)k->data, (uint32_t)k->len};
    sbuf b;
    sbuf_init(&b);
    int rc = wire_msg_payload(&b, &m, err);
    if (!rc) rc = cl_send_wait(c, WIRE_INGEST, m.flags, b.p, b.len, err);
    sbuf_fini(&b);
    /* lost while sending: the chunk is kept, and resend_all sends it again
     * once the ingest has failed over */
    if (rc && rc != XE_AUTH && c->closed) rc = 0;
    return rc;
}

/* A new chunk: kept until acknowledged, then sent. */
static int send_chunk(clu_client *c, const clu_ingest_opts *o, const void *p, size_t n, int last, xerr *err)
{
    chunk *k = malloc(sizeof *k + n);
    if (!k) return xerr_set(err, XE_NOMEM, "out of memory");
    k->next = NULL;
    k->seq = ++c->next_seq;
    k->line0 = c->lines_sent;
    k->last = last;
    k->end = last && o->end_of_stream;
    k->len = n;
    if (n) memcpy(k->data, p, n);
    for (size_t i = 0; i < n; i++) c->lines_sent += ((const unsigned char *)p)[i] == '\n';
    if (c->unacked_tail) c->unacked_tail->next = k;
    else c->unacked = k;
    c->unacked_tail = k;
    c->unacked_bytes += n;
    return c->closed ? 0 : send_kept(c, o, k, err); /* a lost connection: resend_all sends it */
}

/* After a failover (or, straight to a home, after moving to it or away
 * from it): the ingest goes on under a new request id with every chunk not
 * acknowledged yet (the home skips those it has). */
static int resend_all(clu_client *c, const clu_ingest_opts *o, xerr *err)
{
    int rc;
    if (c->go_home) { /* RES_HOME */
        c->go_home = 0;
        rc = cl_connect_home(c, err);
        if (rc == XE_PROTO) return rc;
        if (rc && !c->lost_at) c->lost_at = clock_mono_ns();
    } else if (c->away) { /* the home was lost, or refused: ask the coordinator where it is now */
        if (!c->lost_at) c->lost_at = clock_mono_ns();
        else uv_sleep(HOME_RETRY_MS);
        if (clock_mono_ns() - c->lost_at > FAILOVER_MS * 1000000ull)
            return xerr_set(err, XE_IO, "the connection to stream %s's home %s was lost (%s) and no home took its "
                            "input within %d s", c->ing_stream, c->home_name, c->close_msg, FAILOVER_MS / 1000);
        if ((rc = cl_back_to_coord(c, err))) return rc;
    } else if ((rc = cl_failover(c, err)))
        return rc;
    if (c->closed) return 0; /* the home could not be reached: back to the coordinator next */
    c->cur = c->next_req++;
    rc = 0;
    for (chunk *k = c->unacked; k && !rc; k = k->next) rc = send_kept(c, o, k, err);
    return rc;
}

/* The stream's home moved within the same coordinator (RES_RESEND): the
 * chunks not acknowledged go again, in order, to the new home. */
static int resend_kept(clu_client *c, const clu_ingest_opts *o, xerr *err)
{
    c->resend = 0;
    int rc = 0;
    for (chunk *k = c->unacked; k && !rc; k = k->next) rc = send_kept(c, o, k, err);
    return rc;
}

static void drop_unacked(clu_client *c)
{
    while (c->unacked) {
        chunk *k = c->unacked;
        c->unacked = k->next;
        free(k);
    }
    c->unacked_tail = NULL;
    c->unacked_bytes = 0;
}

static uint64_t new_session(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
        close(fd);
    }
    if (!v) v = clock_mono_ns() ^ ((uint64_t)getpid() << 32);
    return v ? v : 1;
}

/* An interrupted ingest whose home has not answered within CUT_WAIT_MS: what
 * the client knows, through the ingest's notice callback.  The lines of the
 * chunks acknowledged are in the stream (at the home and its shadow); the
 * rest were sent, and whether they go in depends on how far they got (the
 * coordinator and the home append what reached them). */
static void cut_unanswered(clu_client *c, const clu_ingest_opts *o)
{
    int64_t acked = (int64_t)(c->unacked ? c->unacked->line0 : c->lines_sent);
    if (!o->on_notice) return;
    char msg[320];
    snprintf(msg, sizeof msg,
             "interrupted: %lld input lines sent to stream %s, %lld of them acknowledged by its home; the other %lld "
             "were on their way and may still be appended (the home did not answer within %d ms)",
             (long long)c->lines_sent, c->ing_stream ? c->ing_stream : "?", (long long)acked,
             (long long)(c->lines_sent - acked), CUT_WAIT_MS);
    o->on_notice(o->ctx, 0, msg);
}

int clu_client_ingest(clu_client *c, const char *stream, int fd, const clu_ingest_opts *o, exec_ingest_stats *st,
                      xerr *err)
{
    memset(st, 0, sizeof *st);
    int rc = 0, cut = 0;
    if ((rc = cl_ready_for_request(c, err))) return rc;
    c->may_direct = !c->results; /* a home cannot carry open results */
    c->go_home = 0;
    c->lost_at = 0;
    c->cur = c->next_req++;
    c->cur_done = 0;
    c->cur_rc = 0;
    c->cur_msg[0] = 0;
    c->cur_out = (exec_out){0};
    c->ing = o;
    c->ing_stream = stream;
    c->session = new_session();
    c->resend = 0;
    c->next_seq = c->lines_sent = 0;
    memset(&c->ing_st, 0, sizeof c->ing_st);
    char *buf = malloc(INGEST_CHUNK);
    if (!buf) return xerr_set(err, XE_NOMEM, "out of memory");
    size_t fill = 0; /* input read, not sent yet: it waits up to LINGER_MS for more */
    uint64_t due = 0;
    for (int eof = 0; !eof;) {
        if (c->cur_done) break; /* an error came back: stop sending */
        if (o->stop && o->stop(o->ctx)) {
            cut = 1;
            break;
        }
        if ((c->closed || c->go_home) && (rc = resend_all(c, o, err))) break;
        if (c->resend && (rc = resend_kept(c, o, err))) break;
        if (c->unacked_bytes > UNACKED_MAX) { /* the home is behind: wait for it */
            cl_spin(c, 20);
            continue;
        }
        int wait = 20;
        if (fill) {
            uint64_t now = clock_mono_ns();
            wait = now >= due ? 0 : (int)((due - now + 999999) / 1000000);
        }
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int pr = poll(&pf, 1, wait);
        uv_run(&c->loop, UV_RUN_NOWAIT);
        if (pr > 0) {
            ssize_t got = read(fd, buf + fill, INGEST_CHUNK - fill);
            if (got < 0 && errno != EINTR && errno != EAGAIN) {
                rc = xerr_set(err, XE_IO, "reading the input: %s", strerror(errno));
                break;
            }
            if (got == 0) eof = 1;
            if (got > 0) {
                if (!fill) due = clock_mono_ns() + LINGER_MS * 1000000ull;
                fill += (size_t)got;
            }
        }
        if (fill && (eof || fill == INGEST_CHUNK || clock_mono_ns() >= due)) {
            size_t n = eof ? fill : whole_lines(buf, fill);
            if (!n) { /* a line without its end yet: it waits for the rest */
                due = clock_mono_ns() + LINGER_MS * 1000000ull;
                continue;
            }
            rc = send_chunk(c, o, buf, n, 0, err);
            memmove(buf, buf + n, fill - n);
            fill -= n;
            if (fill) due = clock_mono_ns() + LINGER_MS * 1000000ull;
            if (rc) {
                if (rc == XE_BUSY && o->stop && o->stop(o->ctx)) rc = 0, cut = 1; /* stopped in send_wait */
                break;
            }
        }
    }
    /* stopped with input read: its whole lines go, as read input always did;
     * a line the signal cut short does not (it may parse as a shorter row) */
    size_t n = fill ? (cut ? whole_lines(buf, fill) : fill) : 0;
    if (n < fill && o->on_notice) {
        char msg[160];
        snprintf(msg, sizeof msg, "interrupted: the last line read (%zu bytes) had no end yet and was not sent",
                 fill - n);
        o->on_notice(o->ctx, 0, msg);
    }
    if (n && !rc && !c->cur_done) {
        rc = send_chunk(c, o, buf, n, 0, err);
        if (rc == XE_BUSY) rc = 0;
    }
    free(buf);
    if (!rc && !c->cur_done) {
        /* the last chunk ends the stream when asked, unless the input was cut short */
        clu_ingest_opts o2 = *o;
        if (cut) o2.end_of_stream = 0;
        rc = send_chunk(c, &o2, NULL, 0, 1, err);
        int told = 0;
        if (rc == XE_BUSY && cut) { /* the coordinator reads nothing: the last chunk could not go */
            cut_unanswered(c, o);
            rc = 0;
            told = 1;
        }
        uint64_t give_up = cut ? clock_mono_ns() + CUT_WAIT_MS * 1000000ull : 0;
        while (!rc && !c->cur_done && !told) {
            /* a signal after the input's end (the last chunk sent, the home
             * behind): the same bounded wait as a cut (an experiment's
             * producers waited 13 minutes here for a stalled home) */
            if (!give_up && o->stop && o->stop(o->ctx)) {
                cut = 1;
                give_up = clock_mono_ns() + CUT_WAIT_MS * 1000000ull;
            }
            if (give_up && clock_mono_ns() >= give_up) {
                cut_unanswered(c, o);
                break;
            }
            if (c->closed || c->go_home) rc = resend_all(c, &o2, err);
            else if (c->resend) rc = resend_kept(c, &o2, err);
            else cl_spin(c, give_up ? 20 : 100);
        }
    }
    drop_unacked(c);
    c->may_direct = c->go_home = 0;
    *st = c->ing_st;
    c->ing = NULL;
    c->ing_stream = NULL;
    if (rc) return rc;
    if (c->cur_rc) return wire_error_parse(err, c->cur_rc, c->cur_msg, strlen(c->cur_msg));
    return cut ? XE_BUSY : 0;
}
