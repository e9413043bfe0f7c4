/*
 * catchup: when a recovered query has caught up with the output delivered
 * before its failure (docs/architecture.md, "Exactly-once output at the
 * sink").  Internal header of the cluster module; pure functions, used by
 * the coordinator's sink-side dedup (coord.c, dd_filter).
 *
 * The sink's combined watermark is the minimum over its upstream tasks, but
 * each upstream task delivers its rows up to its own watermark: a fast task
 * may have delivered windows far beyond a slow one's.  So the recovery has
 * caught up only once, for every upstream task t, the new deployment's sink
 * heard from task t a watermark at or past the one the old deployment's
 * sink heard from t (each task emits a window before it passes the
 * watermark on, and a task's rows go to the sink through its own index:
 * same plan, same partitioning).  When the number of upstream tasks differs
 * (a re-planned query), every new task must pass the largest old one.  And
 * since a task sends a step's rows before its watermark, rows delivered
 * past the watermark heard from their task count too (catchup_begin).
 */
#ifndef CLUSTER_CATCHUP_H
#define CLUSTER_CATCHUP_H

#include <stdint.h>

typedef struct catchup {
    int on;      /* a recovery is catching up */
    int n;       /* targets: 1 after a merge of different task counts */
    int64_t *wm; /* per upstream task of the sink: the watermark to reach */
} catchup;

/* A failure strikes: the old deployment's sink had heard wm[t] from its
 * upstream task t (n of them), and the rows it had got reached event time
 * `rows` (INT64_MIN: none, or untimed).  Task t's target is the larger of
 * the two: a task sends the rows of a step before the watermark that ends
 * it, so a failure between the two leaves delivered rows beyond wm[t] (the
 * windows a task had just closed), and the sink cannot tell which task sent
 * a row, so every task must pass the latest row's time.  Merged into the
 * targets of an unfinished (or an earlier) catch-up by their maximum, so a
 * second failure during a catch-up waits for both.  0, or XE_NOMEM (the
 * catch-up is then on with the targets it had). */
int catchup_begin(catchup *c, const int64_t *wm, int n, int64_t rows);

/* 1 when a new deployment whose sink heard cur[t] from upstream task t (n
 * of them) can no longer produce a row the old ones delivered and it has
 * not produced again; 0 while not (or when no catch-up is on). */
int catchup_done(const catchup *c, const int64_t *cur, int n);

void catchup_fini(catchup *c);

#endif
