/*
 * exec: the Ares engine.  One engine owns one LMDB environment (storage/),
 * the catalog of streams and standing queries kept in it, and the running
 * operator tasks of every query.  ares-sql embeds one; every ares-node runs
 * one.
 *
 * Threading: an engine is single-threaded.  All calls on one engine must come
 * from one thread (the shell's, or a node's event loop).
 *
 * Data path: input bytes -> decoder (format.h) -> batches of rows -> stream
 * log (LMDB) -> each query's operators -> its sink.  Work is cut into slices
 * of EXEC_SLICE_ROWS accepted rows of a stream, so that watermarks advance
 * at the same points whatever the input's chunking; a slice ends early only
 * when the input pauses (exec_ingest_idle, the socket sources' tick) or ends,
 * and that cut is recorded in the stream's log, so that replays and restarts
 * give the same windows.  An epoch (EXEC_EPOCH_MS of wall
 * time, or EXEC_EPOCH_BYTES written, whichever comes first) commits, in one
 * LMDB transaction, the log records, every query's dirty window state, the
 * offsets it consumed and its sink position.  An epoch that ends on the data
 * path is synced to disk in the background while the next one runs (a
 * process crash loses nothing committed; a power loss may lose the last
 * epoch); engine_commit, DDL, INSERT, the end of a stream and engine_close
 * return once it is on disk.
 *
 * This header also exposes the value, batch and format layers (batch.h,
 * format.h), which the shell and the cluster use to move and print rows.
 */
#ifndef EXEC_H
#define EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "exec/batch.h"
#include "exec/format.h"
#include "parser/parser.h"
#include "planner/planner.h"

#define EXEC_SLICE_ROWS 1024
/* Epochs are bounded by time and volume, not by a count of slices (as
 * Flink's checkpoint interval is): a fast input then commits, syncs and
 * replicates a few times a second with large writes, and windows that open
 * and close within one epoch never reach LMDB (docs/architecture.md). */
#define EXEC_EPOCH_MS 200
#define EXEC_EPOCH_BYTES (8u << 20)

typedef struct engine engine;

typedef struct engine_opts {
    const char *data_dir; /* where LMDB lives; ignored with memory */
    int memory;           /* a throwaway directory, removed at close */
    size_t map_size;      /* initial LMDB map size (0 = default); it grows when needed */
    /* Messages from sockets (rejected producer lines, sinks reconnecting);
     * NULL prints "ares: ..." on stderr. */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
    int general_agg;      /* tests: aggregates take the general path only, to compare the fast one with */
} engine_opts;

/* Where results go.  All callbacks are optional.  A result is begin, any
 * number of rows calls, end.  stream = 1 for a push query, whose rows arrive
 * over time as windows close. */
typedef struct exec_out {
    void *ctx;
    int (*begin)(void *ctx, const fmt_schema *cols, int stream);
    int (*rows)(void *ctx, const batch *b);
    int (*end)(void *ctx);
    void (*notice)(void *ctx, const char *msg); /* "CREATE STREAM", "2 rows inserted", warnings */
} exec_out;

int engine_open(const engine_opts *o, engine **out, xerr *err);
/* Commits the open epoch and closes.  Running push queries end (their end
 * callback runs).  NULL is a no-op. */
void engine_close(engine *e);
const char *engine_dir(const engine *e);

/* Run one parsed statement.  Results and notices go to out.  A bare SELECT
 * starts a push query whose rows go to out as they are produced, until
 * engine_cancel_push or its input ends (see engine_push_active).  Returns 0,
 * or a negative code with err set (line/col relative to the statement). */
int engine_exec(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);

/* Parse and run every statement of sql; stops at the first error. */
int engine_exec_sql(engine *e, const char *sql, const exec_out *out, xerr *err);

/* Push queries still running (not yet finished by end of input or LIMIT). */
int engine_push_active(const engine *e);
/* Stop every push query (Ctrl-C in the shell); their end callbacks run. */
void engine_cancel_push(engine *e);

/* Commit the current epoch now (also done automatically) and sync it to
 * disk. */
int engine_commit(engine *e, xerr *err);

/* ------------------------------------------------------------------ ingest */

typedef struct exec_ingest exec_ingest;

/* What the stream's WITH options say (format, delimiter, null_string) is
 * the default; the fields here override it for one ingest (\copy's
 * options, --input-format). */
typedef struct exec_ingest_opts {
    fmt_kind format;        /* FMT_CSV or FMT_JSON, when format_set */
    int format_set;         /* else the stream's format (CSV when it names none) */
    fmt_header header;      /* CSV header handling */
    char delim;             /* CSV: 0 means the stream's (',' when it names none) */
    const char *null_string; /* CSV: NULL means the stream's (none when it names none) */
    fmt_reject_fn *on_reject; /* called for every rejected line (optional) */
    fmt_reject_fn *on_notice; /* called for news that rejects nothing: a header column ignored (optional) */
    void *ctx;
} exec_ingest_opts;

/* late: rows of this ingest that a query dropped because their windows had
 * closed (the most any one query of the stream dropped; counted by the
 * tasks of this engine); late_partial: some window or join task of a query
 * of the stream runs elsewhere (a cluster), so late may count too few */
typedef struct exec_ingest_stats {
    int64_t lines, rows, rejected, late;
    int late_partial;
} exec_ingest_stats;

/* Start feeding the stream called name.  opts may be NULL (the stream's
 * format and options, header auto).  XE_NAME, XE_INVAL (options that do not
 * fit the format, err says which), XE_NOMEM. */
int exec_ingest_open(engine *e, const char *stream, const exec_ingest_opts *opts, exec_ingest **out, xerr *err);
/* Feed bytes (any chunking).  Rows flow through every query of the stream. */
int exec_ingest_feed(exec_ingest *in, const void *p, size_t n, xerr *err);
/* Finish: the last line without a newline counts; with end_of_stream the
 * stream's watermark jumps to the end of time, so every open window closes
 * and is emitted.  Commits the epoch.  Frees in.  stats may be NULL. */
int exec_ingest_close(exec_ingest *in, int end_of_stream, exec_ingest_stats *stats, xerr *err);

/* The rows an ingest's queries dropped as late, counted later.  A stream
 * whose queries read only what its log copy holds (engine_log_guard) has
 * its rows processed when the copy has them, after the ingest ended, so
 * exec_ingest_close's late count misses them.  Take the ingest's counters
 * before closing it (its close then counts none), and count once the
 * records have been released: the same figures as exec_ingest_stats's
 * late and late_partial. */
typedef struct exec_late exec_late;
exec_late *exec_ingest_late_take(exec_ingest *in);
int64_t exec_late_count(const engine *e, const exec_late *l, int *partial);
void exec_late_free(exec_late *l);

/* The input has paused: its reader saw no new bytes for EXEC_IDLE_MS.  The
 * stream's partial slice ends here, so that its watermark moves and the
 * windows it closes are emitted now rather than at the slice's 1,024th row
 * or at end of input; then the open epoch commits (synced in the
 * background).  The cut is a marker record in the stream's log, so a replay
 * moves the watermark after the same row.  Idempotent: with nothing new
 * since the last cut it does nothing.  A stream whose slices its host cuts
 * (engine_stream_tick) is left alone. */
#define EXEC_IDLE_MS 50
int exec_ingest_idle(exec_ingest *in, xerr *err);
/* The same cut while the input flows (a host that ends a slice at most so
 * many ms after its first row): the epoch commits only when it is due. */
int exec_ingest_cut(exec_ingest *in, xerr *err);

/* Push rows that are already decoded (b has the stream's columns, in
 * order).  Same path as ingest: slices, log, queries, epochs. */
int engine_push_rows(engine *e, const char *stream, const batch *b, xerr *err);
/* End a stream: its watermark jumps to the end of time (see exec_ingest_close). */
int engine_end_stream(engine *e, const char *stream, xerr *err);

/* In a cluster, a stream fed through the coordinator also has a shadow
 * home that gets the same input in the same order, so that its log holds
 * the same records at the same offsets and it can take over when the home
 * is lost.  Both must then cut the same records: their partial slices end
 * only when the host says so (this call, in order with the input), never on
 * the idle timer.  The first call switches the stream to that mode. */
int engine_stream_tick(engine *e, const char *stream, xerr *err);
/* A cluster's CREATE STREAM AS or INSERT INTO ... SELECT runs its sink at
 * the coordinator, which writes the sink's rows, once each, into the
 * target stream at its home and shadow (cluster/coord_derive.c): rows b
 * (NULL or none: only the watermark) go into the log as the embedded
 * engine's writer queries put them, and a derived stream's (WITH derived =
 * 'true') watermark steps to wm, the sink's (INT64_MAX: its end).  A
 * stream made with columns takes the rows as a client's and keeps its own
 * watermark.  A derived stream's log holds only rows at or below its
 * watermark, so a row at or below it is one the log has (a new coordinator
 * sent it again): it is dropped, and counted in *repeats (may be NULL).
 * Rows commit at once (with the open epoch); a watermark alone when due. */
int engine_stream_feed(engine *e, const char *stream, const batch *b, int64_t wm, int64_t *repeats, xerr *err);
/* The coordinator checks such a statement against this engine's catalog as
 * an embedded engine would run it, without running it: its options, its
 * plan, and for INSERT INTO that the SELECT's columns fit the stream's.  A
 * CREATE STREAM AS gets in *target the CREATE STREAM that makes its stream
 * on every node (with derived = 'true'). */
int engine_writer_check(engine *e, const ast_stmt *st, sbuf *target, xerr *err);

/* Save an ingest's decoder state between two feeds (a line it has only the
 * start of, line numbers, the CSV header's column order) and load it into a
 * fresh ingest of the same stream and format, which goes on as this one
 * would: the shadow home of a stream takes over a client's ingest. */
int exec_ingest_save(const exec_ingest *in, sbuf *out);
int exec_ingest_load(exec_ingest *in, const void *p, size_t n, xerr *err);

/* Copies of a stream's log in another failure domain (exec/logship.c).  The
 * home exports its records (at most about max bytes from offset `from`, at
 * least one; *next: the offset after the last exported) with the stream's
 * counters, and the copy imports them at the same offsets (*end: its log's
 * end after that), so that it can go on as the log.  While the guard is on,
 * the stream's queries read its records only below the end the copy has
 * acknowledged (engine_log_release): whatever a query saw, the copy holds.
 * Turning the guard off releases everything.  engine_log_needed: the oldest
 * record a query or a recovery may still read (where a new copy starts),
 * and the log's end.
 * engine_stream_source: start the stream's socket source here (a copy that
 * became the home of a stream read from a socket). */
int engine_log_guard(engine *e, const char *stream, int on, xerr *err);
int engine_log_release(engine *e, const char *stream, uint64_t upto, xerr *err);
/* max = 0: no records, only the log's bounds (a shadow fed the input trims
 * its log below the home's begin on import). */
int engine_log_export(engine *e, const char *stream, uint64_t from, size_t max, sbuf *out, uint64_t *next,
                      xerr *err);
int engine_log_import(engine *e, const char *stream, const void *p, size_t n, uint64_t *end, xerr *err);
int engine_log_needed(engine *e, const char *stream, uint64_t *from, uint64_t *end, xerr *err);
int engine_stream_source(engine *e, const char *stream, const char *uri, xerr *err);
/* A query reads at most this many source slots: one per task of each of
 * its sources (a stream of P partitions has P source tasks, each reading
 * one partition's log: docs/architecture.md, "Partitions"). */
#define ENGINE_MAX_SRC 16

/* The engine stream that holds partition p of stream `name`
 * (CREATE STREAM ... WITH (partitions = P)): the stream itself for p = 0,
 * "name#p" for the others, each a stream with its own log. */
void engine_partition_name(const char *name, int p, char *out, size_t cap);
/* The streams a deployed query reads, per source slot (plan order). */
int engine_source_streams(engine *e, uint32_t qid, const char *names[ENGINE_MAX_SRC], int *nsrc, xerr *err);

/* Run file sources (WITH (source = 'file:///...')) until each has reached
 * its end; returns the number of rows read.  Idempotent after the end. */
int engine_run_file_sources(engine *e, int64_t *rows, xerr *err);

/* ------------------------------------------------------------------ distributed execution */

/* In a cluster every node runs the same plan of a query (the planner is
 * deterministic), but only the tasks placed on it.  Tasks are numbered
 * globally in plan order: op 0's tasks first, then op 1's, and so on
 * (plan_task_count in all).  When a local task hands rows or a watermark to
 * a task placed elsewhere, the engine calls these hooks; the cluster layer
 * carries them and calls engine_remote_batch / engine_remote_watermark on the
 * node that owns the destination. */
typedef struct engine_remote {
    void *ctx;
    /* rows for task `task` of operator `op` (input side `side`), encoded with
     * batch_encode; tag = log offset + 1 of the source record they come from
     * (0: not from a source record); stamp = the rows' event time (the
     * largest; INT64_MIN: none), for the sink's catch-up after a recovery.
     * The receiver passes both back to engine_remote_batch. */
    int (*batch)(void *ctx, uint32_t qid, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p,
                 size_t n);
    /* upstream task `from_task` (global index) of op's input `side` reached watermark wm
     * (after the source record tagged tag); deliver to every node running a task of op */
    int (*watermark)(void *ctx, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag);
    /* Replication (ft = replica or checkpoint): changes to the state of local
     * task `task` (global index; LMDB task id tid) that the epoch `epoch` just
     * committed, for that task's replicas: engine_replica_apply there.  One
     * call may carry a whole snapshot (a new replica catching up, or a
     * checkpoint).  Called after the commit, so the state is durable here. */
    int (*state)(void *ctx, uint32_t qid, int task, uint32_t tid, uint64_t epoch, const void *p, size_t n);
} engine_remote;

/* How a deployed query survives the loss of its tasks (SET ft). */
typedef enum engine_ft {
    ENGINE_FT_REPLICA,    /* each epoch's state changes go to replicas in other domains */
    ENGINE_FT_CHECKPOINT, /* whole snapshots every checkpoint_ms to one replica */
    ENGINE_FT_UPSTREAM,   /* no copies: lost state is recomputed from the stream log */
    ENGINE_FT_NONE,       /* lost state is lost: the reference for the overhead */
} engine_ft;
int engine_ft_parse(const char *s, engine_ft *out); /* 'replica' ... ; -1 when unknown */
const char *engine_ft_name(engine_ft f);
/* SET rebalance_interval (an interval such as '30 seconds', or 0 = off;
 * *out = ms) and SET rebalance_threshold (a fraction from 0 to below 1;
 * *out = it): 0, or XE_INVAL with the message.  out may be NULL (a check). */
int engine_rebalance_setting(const char *key, const ast_lit *v, double *out, xerr *err);
#define ENGINE_REBALANCE_INTERVAL_MS 30000 /* the defaults, as SHOW SETTINGS lists them */
#define ENGINE_REBALANCE_THRESHOLD 0.2

enum { ENGINE_EARLIEST_ALL = 1, ENGINE_EARLIEST_BOUNDED = 2 };
typedef struct engine_deploy_opts {
    engine_ft ft;
    int64_t checkpoint_ms; /* ENGINE_FT_CHECKPOINT: the snapshot interval */
    /* A redeployment after a failure: the id this query ran under before.
     * Each local stateful task takes over its state from there: this node's
     * own (a survivor) or a replica held here (a promotion).  The sources
     * then hold their input until engine_replay. */
    uint32_t prev;
    /* A redeployment: the watermark the sink had reached (INT64_MIN: not
     * known).  Every window ending at or before it was delivered, so a task
     * that restarts empty need only recompute the windows after it. */
    int64_t resume_wm;
    /* A first deployment (prev 0) with offset = 'earliest' (ENGINE_EARLIEST_ALL),
     * or a push query's (ENGINE_EARLIEST_BOUNDED: the sources whose stream is
     * bounded, a file source or an ended input, as an embedded push query
     * reads them): those sources start at their logs' first retained record
     * and the local ones hold their input, as a redeployment's do, until
     * engine_replay (steps).  0: none. */
    int earliest;
} engine_deploy_opts;

/* Run query `name` with id qid from its CREATE QUERY text, but only the tasks
 * with own[global task] != 0 (own has plan_task_count entries; NULL = all).
 * out receives the sink's rows when the sink task is local.  The query is
 * not written to this engine's catalog: the coordinator owns it.  fo may be
 * NULL (ft = replica, a first deployment). */
int engine_deploy(engine *e, uint32_t qid, const char *create_sql, const unsigned char *own, int nown,
                  const engine_remote *remote, const exec_out *out, const engine_deploy_opts *fo, xerr *err);
/* keep_state: leave the local tasks' state in LMDB for a redeployment
 * (engine_deploy_opts.prev) instead of deleting it with the replicas. */
int engine_undeploy(engine *e, uint32_t qid, int keep_state, xerr *err);
int engine_remote_batch(engine *e, uint32_t qid, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p,
                        size_t n, xerr *err);
int engine_remote_watermark(engine *e, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag,
                            xerr *err);
/* Plan a SELECT (or the SELECT of a CREATE QUERY) against this engine's
 * catalog, for the coordinator's placement.  Caller frees with plan_free. */
int engine_plan(engine *e, const char *sql, plan_dag **out, xerr *err);
/* SUBSCRIBE t of a table as the push query it is: SELECT * FROM t EMIT CHANGES, at st's position. */
int engine_subscribe_stmt(const ast_stmt *st, ast_stmt **out, xerr *err);
/* The stream a SELECT reads if it is a pull query's shape (one FROM, no JOIN,
 * WINDOW or EMIT CHANGES): a pull query when that stream is a table; else NULL. */
const char *engine_pull_source(const ast_select *sel);
/* The watermark that has reached the sink of deployed query qid (INT64_MAX
 * once every input has ended), so that the host can tell when a push query
 * deployed over a cluster is complete.  XE_NOTFOUND when qid is not deployed
 * here or its sink task runs elsewhere. */
int engine_deployed_sink_wm(engine *e, uint32_t qid, int64_t *wm, xerr *err);
/* The watermark the sink of deployed query qid heard from each of its
 * upstream tasks (INT64_MIN: none yet), *n of them, in *wm: borrowed, valid
 * until the query is undeployed.  engine_deployed_sink_wm is their minimum.
 * XE_NOTFOUND as there. */
int engine_deployed_sink_inputs(engine *e, uint32_t qid, const int64_t **wm, int *n, xerr *err);
/* The largest event time of the rows that reached the sink of deployed
 * query qid (INT64_MIN: none, or none had a time): an upstream task has
 * emitted every row of a time at or below a watermark it passed on, so a
 * redeployment has produced again every row delivered once each of its
 * sink's inputs passed this (and what engine_deployed_sink_inputs said).
 * XE_NOTFOUND as there. */
int engine_deployed_sink_time(engine *e, uint32_t qid, int64_t *t, xerr *err);
/* Rows of deployed query qid for its socket sink here (WITH sink =
 * 'tcp://...' or 'unix://...'), once the host dropped what a recovery
 * repeated; nothing when it has none here. */
int engine_deployed_sink_rows(engine *e, uint32_t qid, const batch *b, xerr *err);

/* Fault tolerance (exec/ft.c).  engine_source_offsets gives the log offsets
 * a deployed query's local sources will read next (a host records them when
 * the query is first deployed).  After a redeployment (prev != 0),
 * engine_ft_resume says where the local stateful tasks need the replay to
 * start, per source: the log offset after the last record their restored
 * state includes, 0 when a task has no state (replay from the query's
 * start), UINT64_MAX when nothing here needs that source.  The source's home
 * takes the minimum over all nodes and calls engine_replay: the log from
 * `from` (one offset per source, in plan order) goes through the query's
 * local source tasks with the watermarks it had, then the input that waited
 * meanwhile.  Tasks skip records their state already includes, so every row
 * counts once.  Sources that do not run here are skipped. */
int engine_source_offsets(engine *e, uint32_t qid, uint64_t from[ENGINE_MAX_SRC], int *nsrc, xerr *err);
/* src_task[k]: the global task index of source slot k (where its home runs it). */
int engine_ft_resume(engine *e, uint32_t qid, uint64_t from[ENGINE_MAX_SRC], int src_task[ENGINE_MAX_SRC], int *nsrc,
                     xerr *err);
/* How engine_ft_resume answers per source: the low 63 bits are the smallest
 * position a local task needs (ENGINE_FT_POS_NONE: none), and ENGINE_FT_POS_TIMED
 * is set when a windowed aggregate task that restarted empty needs the
 * records from the redeployment's resume_wm less its window span too (the
 * home turns that into an offset with engine_ft_time_offset), or when a
 * stateless task (a filter, a projection, the sink) runs here: the rows on
 * their way through one that died are in no state, and the sink had every
 * row at or below resume_wm.  Both can hold at once: a node may run a
 * survivor and a restarted task of one query. */
#define ENGINE_FT_POS_TIMED (1ull << 63)
#define ENGINE_FT_POS_NONE (ENGINE_FT_POS_TIMED - 1)
int engine_ft_time_offset(engine *e, uint32_t qid, int src, uint64_t *off, xerr *err);
int engine_replay(engine *e, uint32_t qid, const uint64_t from[ENGINE_MAX_SRC], int nsrc, int64_t *rows, xerr *err);
/* engine_replay in steps, so that a long log goes at the pace its readers
 * take it: engine_replay_from says where (as engine_replay's from), then
 * each engine_replay_step reads up to max records of each source (0: all)
 * and adds the rows to *rows; *more = 0 once the query has reached its
 * logs' end: its sources take live input again, in the same call.  Until
 * then they hold it (it is in the log, and a later step reads it). */
int engine_replay_from(engine *e, uint32_t qid, const uint64_t from[ENGINE_MAX_SRC], int nsrc, xerr *err);
/* 1 while deployed query qid's local sources hold their input for
 * engine_replay (a redeployment, or a first one that reads a log from its
 * start: engine_deploy_opts.earliest); else 0. */
int engine_deployed_held(engine *e, uint32_t qid);
int engine_replay_step(engine *e, uint32_t qid, size_t max, int *more, int64_t *rows, xerr *err);
/* A replica: apply the state changes of task tid sent by its primary
 * (engine_remote.state), to be taken over if the primary is lost. */
/* pos: the task's positions per source slot (*npos of them, at least 2). */
int engine_replica_apply(engine *e, uint32_t tid, uint64_t epoch, const void *p, size_t n, uint64_t pos[ENGINE_MAX_SRC],
                         int *npos, xerr *err);
/* At a source's home: every replica of the stateful task `task` (global
 * index) of deployed query qid holds its state at positions pos (per input
 * side, as engine_replica_apply returned them).  Log records below the
 * smallest such position over all the query's stateful tasks are no longer
 * needed by any recovery, and retention may trim them; until every task has
 * been acknowledged the log is kept whole. */
int engine_ft_acked(engine *e, uint32_t qid, int task, const uint64_t *pos, int npos, xerr *err);

/* Records of the engine's host, kept in this engine's LMDB catalog under
 * "host/<key>" (the engine itself never reads them).  The cluster
 * coordinator keeps its queries and task assignments there, so that one
 * process has one LMDB environment.  put and del commit at once (with the
 * open epoch); scan calls fn with the key minus "host/" and a value that is
 * valid during the call only; fn returns non-zero to stop. */
int engine_host_put(engine *e, const char *key, const void *v, size_t n, xerr *err);
int engine_host_del(engine *e, const char *key, xerr *err);
int engine_host_scan(engine *e, const char *prefix,
                     int (*fn)(void *ctx, const char *key, const void *v, size_t n), void *ctx, xerr *err);

/* What each local task has cost so far (docs/nirvana.md, "The
 * measured-cost model").  The counters are cumulative over the task's
 * deployment; the host samples them and takes differences.  cpu_ns is the
 * engine thread's CPU time in the task's own operator work (decoding the
 * batches it receives and encoding those it sends included, the work of the
 * tasks it hands rows to on this node excluded; a SOURCE task also gets its
 * share of the ingest's decoding and log append); rows_in and rows_out count
 * rows into and out of its operator; dest_rows[b] and dest_bytes[b] what it
 * sent to task b of the downstream operator (bytes: encoded, for tasks on
 * other nodes only); state_bytes is the memory of its open windows or
 * buffered join rows now (about); cold_groups, of a window aggregate under
 * SET memory_budget, its open groups in LMDB only. */
typedef struct engine_task_stats {
    uint32_t qid;
    int deployed;   /* placed by a coordinator */
    int op, task;   /* task: the global index (plan order) */
    int64_t since_ms; /* wall-clock ms the counters started from 0 (the deployment) */
    uint64_t cpu_ns, rows_in, rows_out, bytes_out, state_bytes;
    int64_t cold_groups;
    int ndest;      /* tasks of the downstream operator (0: the sink) */
    const uint64_t *dest_rows, *dest_bytes; /* ndest each; valid during the call */
} engine_task_stats;
/* Calls fn for every local task of every running query; returns how many. */
int engine_task_stats_each(engine *e, void (*fn)(void *ctx, const engine_task_stats *s), void *ctx);

/* ------------------------------------------------------------------ the event loop */

/* Socket sources, socket sinks, subscribers from other processes (through
 * <data dir>/ares.sock) and the idle timer that advances watermarks of live
 * streams all run on the engine's libuv loop.  A host runs it: the shell
 * between keystrokes, ares-sql --follow and ares-node all the time. */
struct uv_loop_s *engine_loop(engine *e);
/* Run the loop: with timeout_ms > 0 wait up to that long for one event;
 * with 0 only handle what is ready. */
int engine_poll(engine *e, int timeout_ms);
/* Backpressure from the host: while at least one pause is outstanding
 * (pause = 1 adds one, pause = 0 removes one), socket sources stop reading,
 * so TCP pushes back on producers.  A node calls this when rows it must
 * forward to a slow peer pile up. */
void engine_pause_sources(engine *e, int pause);
/* 1 when some stream listens on a socket. */
int engine_has_live_sources(const engine *e);

/* ------------------------------------------------------------------ introspection */

/* Names for completion: kind 0 streams, 1 queries, 2 columns of all streams.
 * fn is called for each. */
void engine_names(const engine *e, int kind, void (*fn)(void *ctx, const char *name), void *ctx);

#endif
