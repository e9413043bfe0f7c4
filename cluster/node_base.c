/*
 * node_base.c: the bottom of the node runtime, what every other part of
 * cluster/ calls and that calls nothing above it: the node's log lines, a
 * member state's name, the --throttle sleep, the tick's timer (node_tick_in;
 * node.c's node_run sets the tick's callback) and a helper that is to move
 * to base/ (row_hash).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "cluster/node_int.h"

/* ------------------------------------------------------------------ logging */

static void log_line(node *n, int level, const char *who, const char *msg)
{
    if (level < NET_LOG_INFO && !(n && n->cfg.verbose)) return;
    base_log_line(n ? n->cfg.name : "ares-node", level, who, msg);
}

void node_net_log(void *ud, int level, const char *who, const char *msg) { log_line(ud, level, who, msg); }

void node_log(node *n, int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_line(n, level, NULL, msg);
}

void engine_log_fn(void *ctx, const char *msg) { log_line(ctx, NET_LOG_WARN, "engine", msg); }

const char *node_state_name(int state)
{
    switch (state) {
    case WIRE_MEMBER_UP: return "ALIVE";
    case WIRE_MEMBER_SUSPECT: return "SUSPECT";
    case WIRE_MEMBER_DEAD: return "DEAD";
    case WIRE_MEMBER_LEFT: return "LEFT";
    }
    return "?";
}

/* ------------------------------------------------------------------ helpers */

uint64_t row_hash(const val *row, int ncols)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int c = 0; c < ncols; c++) h = val_hash(&row[c], h);
    return h ? h : 1;
}

/* Sleep in proportion to the work just done, so that --throttle X < 1 makes
 * this node X times as fast as it would be.  A test knob only: a sleeping
 * node hands its CPU to the others, so it costs a shared machine nothing
 * (the testbed caps nodes with CPU quotas instead, bench/testbed/). */
void node_slow_down(node *n, uint64_t t0)
{
    if (n->cfg.throttle >= 1.0 || n->cfg.throttle <= 0) return;
    uint64_t spent = clock_mono_ns() - t0;
    double extra = (double)spent * (1.0 / n->cfg.throttle - 1.0);
    if (extra > 1e9) extra = 1e9;
    struct timespec ts = {(time_t)(extra / 1e9), (long)((uint64_t)extra % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

/* ------------------------------------------------------------------ the tick */

void node_tick_in(node *n, unsigned ms)
{
    uv_timer_start(&n->tick, n->on_tick, ms, NODE_TICK_MS);
}
