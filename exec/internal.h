/*
 * internal.h: the engine's own structures, shared by its files only.
 *
 * The files form layers; each calls only the layers below it (the order,
 * with what each owns, is in docs/architecture.md, "The files of exec/"):
 *
 *   engine.c    open (recovery) and close, the statements' dispatch
 *   show.c      SHOW, DESCRIBE, EXPLAIN, SET
 *   catalog.c   CREATE and DROP, derived streams, the catalog's load; push.c: push and pull queries;
 *               deploy.c: a cluster's deployed queries and host records
 *   start.c     a query's start (plan, offsets) and end, beside show.c
 *   ingest.c    input: exec_ingest, file sources, INSERT, pushed rows, socket sources' callbacks; table_pull.c: pull queries on a table
 *   epoch.c     epochs: the one place that commits
 *   ft.c        fault tolerance's API; logship.c: copies of a stream's log
 *   stream.c    streams: slices into the log and the queries, watermarks, ends, retention, replays
 *   ops.c       the operator runtime; agg*.c (agg.h: its files), join.c (over tjoin.c, jstore.c): the stateful operators
 *   ftstate.c   the operators' positions and kept rows (fault tolerance below the operators)
 *   sink.c      a query's output: file sinks, and the delivery to outlets and clients
 *   io.c        sockets: sources, sinks, subscribers, the tick
 *   table_agg.c CREATE TABLE AS's aggregate (beside agg.c)
 *   meta.c      lookups, the epoch's transaction, meta records; table.c: a table's rows into its changelog
 *   expr.c      compiled expressions (with batch.c and the fmt_*.c files, the bottom)
 */
#ifndef EXEC_INTERNAL_H
#define EXEC_INTERNAL_H

#include <stdio.h>
#include <uv.h>

#include "exec/exec.h"

#include <pthread.h>
#include "storage/storage.h"

/* ------------------------------------------------------------------ expressions */

typedef struct xinstr xinstr;
typedef struct xprog {
    int n, cap;
    xinstr *code;
    int nconsts;
    val *consts;
    int maxstack;
    sql_type type;
} xprog;

int xprog_compile(const plan_expr *e, xprog *p, xerr *err);
void xprog_fini(xprog *p);
/* Evaluate against row; strings made by functions go to scratch's arena. */
val xprog_eval(const xprog *p, const val *row, batch *scratch);
int xprog_true(const xprog *p, const val *row, batch *scratch);

/* ------------------------------------------------------------------ runtime */

#define WM_MIN INT64_MIN
#define WM_END INT64_MAX /* the end of time: every window closes */

typedef struct query query;
typedef struct opinst opinst;
typedef struct io_source io_source;
typedef struct io_outlet io_outlet;
#define RATE_WINDOW_NS 10000000000ull /* SHOW QUERIES's rates: over the last 10 s */
#define RATE_MIN_NS 1000000000ull     /* ... and at least 1 s (none before) */
#define RATE_SAMPLES 12
typedef struct agg_task agg_task;
typedef struct join_task join_task;
typedef struct tagg_task tagg_task;

/* One operator of a running query, with all of its tasks. */
struct opinst {
    const plan_op *op;
    query *q;
    int ntasks;
    opinst *down;           /* NULL for the sink */
    /* How the operators below ops.c (agg.c, agg_window.c, join.c) send a
     * batch down the DAG: ops.c's op_emit, which op_init sets, so that they
     * call nothing above them (one indirect call per batch). */
    int (*emit_down)(opinst *o, int task, const batch *b, xerr *err);
    int down_side;          /* which input of down this feeds */
    plan_edge_kind down_edge;
    int nprogs;
    xprog *progs;           /* FILTER/HAVING: [pred]; PROJECT: exprs; AGGREGATE: groups then agg args */
    int *proj_cols;         /* PROJECT whose every expression is a bare column: those columns, else NULL */
    int nkeyprogs;
    xprog *keyprogs;        /* partition key of down, over this op's output */
    batch out;              /* output rows of the current push */
    batch *part;            /* exchange buffers, one per downstream task */
    agg_task **agg;         /* AGGREGATE: per task */
    join_task **join;       /* JOIN: per task */
    tagg_task **tagg;       /* AGGREGATE of CREATE TABLE AS (table_agg.c), instead of agg: per task */
    int64_t wm[2];          /* input watermarks (min over the upstream tasks of each side) */
    int64_t *upwm[2];       /* per upstream task of each side */
    int nup[2];
    int64_t out_wm;         /* watermark already passed downstream */
    int task_base;          /* global index of this op's task 0 */
    /* Fault tolerance (ft.c): a stateful op whose input side s comes straight
     * from source tsrc[s] (through stateless ops only) knows, per task and
     * source slot, inc = the log offset after the last record of that source its
     * state includes (0: none yet).  Replayed records at or below it are
     * skipped, so a restored state counts each row once.
     * With partitions, a source has a task per partition, each its own
     * slot (query.src_*): inc is then kept per task and slot, and a side
     * covers the slots tsrc[s] .. tsrc[s] + nsl[s] - 1.  A stateless op
     * between has as many tasks as its source: its task a carries slot
     * csrc + a (csrc alone when the source has one task). */
    int tsrc[2];            /* first source slot feeding each side, -1 = not tracked */
    int nsl[2];             /* how many slots (the source's tasks) */
    int csrc;               /* a stateless op on the chain from source slot csrc (-1: not) */
    int cnsl;               /* ... whose source has this many tasks */
    uint64_t *uptag[2];     /* per upstream task of a tracked side: the tag of its last watermark */
    int incw;               /* inc's entries per task: the query's slots, at least 2 */
    uint64_t *inc;          /* ntasks x incw, by slot */
    uint64_t *inc_saved;    /* inc as last written to LMDB */
    uint64_t *acked;        /* at a source's home: ntasks x incw, the positions all replicas hold (0: unknown) */
    sbuf *emitted;          /* deployed: per task, the rows it emitted this epoch ([u32 len][batch]...) */
    unsigned char *timed;   /* per task: restarted empty, recomputes from the resume watermark */
    /* What each task costs (engine_task_stats; docs/nirvana.md, "The
     * measured-cost model"): cumulative, allocated once at query_start. */
    struct task_meas { uint64_t cpu_ns, rows_in, rows_out, bytes_out; } *meas;
    uint64_t *dest_rows, *dest_bytes; /* ntasks x down->ntasks: what task a sent to task b */
};

/* A file sink.  The engine's thread copies a standing query's rows into
 * pend and hands each full batch to the sink's writer thread, which encodes
 * (CSV, JSON) and writes them in order (SINK_BUFS batches at most in
 * flight); an epoch's commit waits until every row handed over is written
 * (sink.c, eng_sink_sync). */
enum { SINK_BUFS = 16, SINK_ROWS = 1024 };
typedef struct sink_file {
    int fd;
    char *path;
    fmt_encoder *enc;  /* the writer's, once it runs */
    int text;          /* the rows have TEXT values (copied with their bytes) */
    batch pend;        /* being filled by the engine's thread */
    int64_t committed; /* bytes durable in the catalog's view */
    pthread_t writer;
    int writer_up;
    sbuf wbuf;         /* the writer's encoded bytes */
    pthread_mutex_t mu; /* guards the fields below */
    pthread_cond_t cv;  /* a batch queued, written, or quit */
    batch q[SINK_BUFS]; /* queued batches, a ring: qn of them from qh */
    int qh, qn;
    batch spare[SINK_BUFS]; /* written batches, for reuse: nspare of them */
    int nspare;
    int writing;       /* the writer holds a batch */
    int64_t written;   /* bytes written past base */
    int64_t base;      /* the file's length at open */
    int werr;          /* errno of a failed encoding or write, until reported */
    int quit;
} sink_file;
void eng_sink_close(sink_file *s); /* writes what is queued, stops the writer, frees s */

struct query {
    engine *eng;
    char *name;             /* NULL for a push query */
    char *sql;              /* CREATE QUERY text */
    uint32_t id;            /* stable id; tasks are id*4096 + op*64 + task */
    int transient;          /* a push query */
    int deployed;           /* placed by a coordinator; not in this engine's catalog */
    plan_dag *dag;
    opinst *ops;            /* dag->nops */
    /* Source slots: one per task of each SOURCE op (a partitioned stream's
     * source has a task per partition), in plan order. */
    int nsrc;
    int src_op[ENGINE_MAX_SRC];     /* op id of each slot's source */
    int src_task[ENGINE_MAX_SRC];   /* its task (the partition) */
    int src_stream[ENGINE_MAX_SRC]; /* engine stream index of the partition it reads */
    uint64_t offset[ENGINE_MAX_SRC]; /* next log offset to consume, per slot */
    int cur_slot;           /* the slot whose record is being pushed (set by every push) */
    /* The event time of the rows being pushed: the largest of the last
     * batch emitted by an op that has a time column (op_emit), or the one
     * a remote batch came with; what flows on through ops without one. */
    int64_t cur_stamp;
    int64_t sink_tmax;      /* the largest cur_stamp of the rows that reached the sink */
    exec_out out;           /* push query output */
    int began;
    int finished;
    int64_t limit_left;     /* -1 = none */
    sink_file *sink;        /* file sink of a standing query */
    char *sink_uri;         /* WITH sink, as written (file, tcp or unix), or NULL */
    char *sink_format;      /* WITH format of the sink, or NULL (csv) */
    unsigned char *upsert;  /* WITH changelog = 'upsert': per output column, 1 for op and the key's; else NULL */
    batch ups;              /* the sink's rows of a batch under changelog = 'upsert' */
    fmt_schema out_schema;
    const char **out_names;
    sql_type *out_types;
    unsigned char *own;     /* deployed in a cluster: own[global task] = runs here; NULL = all */
    engine_remote remote;   /* where batches for tasks elsewhere go */
    io_outlet *outlet;      /* socket sink */
    io_outlet **subs;       /* subscribers through the control socket */
    int nsubs;
    /* statistics */
    int64_t rows_in, rows_out, late;
    /* rows sent to window tasks on other nodes that will drop them as late
     * (agg_count_late): told to the ingest that brought them, not counted
     * in late (the task that drops them counts them there) */
    int64_t late_sent;
    /* for in_per_s and out_per_s: the counters at most once a second
     * (query_rate_sample), the last RATE_SAMPLES of them in a ring */
    struct rate_sample { uint64_t ns; int64_t in, out; } rs[RATE_SAMPLES];
    int rs_n, rs_at;
    /* a redeployment goes on with the counts of the one before (kept by its
     * undeploy here): rows_in counts the records of source k whose tag is
     * above counted[k], so that the replay does not count rows twice */
    uint64_t counted[ENGINE_MAX_SRC];
    batch scratch;
    /* fault tolerance in a cluster (ft.c) */
    uint64_t tag[ENGINE_MAX_SRC]; /* per slot: log offset + 1 of the record being pushed (0: none) */
    engine_deploy_opts ft;
    int hold;               /* sources wait for engine_replay (also: a restart's catch-up, engine_open) */
    int target;             /* CREATE STREAM AS, INSERT INTO SELECT: the stream its rows enter, else -1 */
    int table_agg;          /* CREATE TABLE AS: its aggregate updates and retracts (table_agg.c) */
    int retracting;         /* table_agg.c is emitting groups that lost their last row: the target deletes them */
    struct table_rt *changes; /* a push query's updating aggregate: its output as a changelog (sink.c), else NULL */
    int full_next;          /* the next replication is a whole snapshot */
    uint64_t ckpt_ns;       /* the last checkpoint's time */
    sbuf deltas;            /* committed-with-the-epoch changes for the replicas: (tid, len, bytes)... */
    sbuf reemit;            /* after a takeover: rows the tasks emitted lately ([u32 task][u32 len][batch]...) */
    int64_t skipped;        /* replayed rows already in a restored state */
    int64_t meas_since_ms;  /* wall ms the tasks' cost counters started from 0 */
};

/* table.c: a table's rows into its changelog, its state in LMDB */
#define TBL_MAX_KEY 8
typedef struct table_rt {
    uint32_t tid;           /* its rows' task id in `state` (a query id's last task: tid_of) */
    plan_stream *in;        /* the declared columns: what its input rows are */
    plan_stream *cl;        /* the changelog's (op first), until stream_add makes it the stream's ps */
    plan_stream *rows_view; /* its rows, the changelog's columns but op: what a pull query plans over */
    int nkey, key[TBL_MAX_KEY]; /* the PRIMARY KEY's columns of in */
    int op_col;             /* WITH op_column: its column of in, or -1 */
    int nval, *vmap;        /* the changelog's columns after op: columns of in */
    int from_query;         /* CREATE TABLE AS: its rows come from its query (a group key may be NULL; clients' rows are refused) */
    int deleting;           /* the rows of this tbl_apply delete their keys (a group that lost its rows) */
    int64_t rows;           /* rows it holds */
    int64_t bad_rows;       /* rows skipped: NULL key or no op (the decoder and INSERT refuse them first) */
    batch chg;              /* the changes of the last tbl_apply */
    batch old;              /* rows read back from the state (their TEXT) */
    batch copy;             /* a log copy's record, decoded (logship.c: reused, one per table) */
    sbuf kbuf, vbuf, obuf;
} table_rt;
int tbl_new(const ast_stmt *st, plan_stream *in, table_rt **out, xerr *err); /* CREATE TABLE's checks; in stays the caller's until it succeeds */
int tbl_new_keyed(plan_stream *ps, const int *key, int nkey, uint32_t tid, table_rt **out, xerr *err); /* a push query's changes */
void tbl_free(table_rt *t);
int tbl_op_kind(const val *v); /* an op_column's value: 0 I or U, 1 D, -1 neither */
/* The changes in's rows make (into t->chg), applied to the state in txn. */
int tbl_apply(table_rt *t, store_txn *txn, const batch *in, xerr *err);
int tbl_follow(table_rt *t, store_txn *txn, const batch *chg, xerr *err); /* a log copy's record: the rows follow its changes */
int tbl_scan(table_rt *t, store_txn *txn, int (*fn)(void *ctx, const val *row), void *ctx, xerr *err); /* rows in key order (op-less) */
int tbl_load(table_rt *t, store_txn *txn, xerr *err); /* at open: counts its rows */
/* The row of key (nkey values), to fn, if the table holds one: a point lookup. */
int tbl_get(table_rt *t, store_txn *txn, const val *key, int (*fn)(void *ctx, const val *row), void *ctx, xerr *err);

typedef struct stream_rt {
    plan_stream *ps;
    table_rt *table;        /* a table: ps is its changelog's columns, table->in its input's; else NULL */
    char *sql;              /* CREATE STREAM text */
    char *source;           /* WITH source, or NULL */
    char *format;           /* WITH format */
    fmt_kind kind;          /* the input format: WITH format, else CSV */
    char delim;             /* WITH delimiter (CSV), else 0: ',' */
    char *null_string;      /* WITH null_string (CSV), or NULL */
    int64_t max_ts;         /* largest event time seen */
    int64_t wm;             /* a derived stream's watermark: the least of its writers' (eng_derived_wm) */
    int derived;            /* made by CREATE STREAM AS: its watermark follows its writer queries */
    int64_t repeats;        /* a cluster's derived stream: rows its coordinator sent again, dropped (eng_derived_feed) */
    int ended;
    uint64_t rows_total;    /* accepted rows ever: slice boundaries */
    int64_t rejected;
    uint64_t src_pos;       /* file source: bytes consumed and committed */
    uint64_t log_bytes;     /* bytes held in the stream log */
    int open_slice;         /* rows logged since the last watermark step (a marker record ends it) */
    int ext_ticks;          /* partial slices end on engine_stream_tick only (a shadowed stream) */
    /* a log copied to a shadow home (logship.c): queries read records below hw only */
    int guard;
    uint64_t hw;
    int64_t rel_wm;         /* the watermark the queries were given */
    int end_pending;        /* the stream ended past hw */
    uint64_t retain_bytes;  /* retention: keep at most this many log bytes */
    int64_t retain_ms;      /* retention: drop records older than this behind the watermark (0 = no limit) */
    const char **names;
    sql_type *types;
    fmt_schema fs;
} stream_rt;

struct engine {
    store *st;
    char *dir;
    int memory;
    int general_agg;        /* engine_opts.general_agg */
    int nstreams;
    stream_rt **streams;
    int nqueries;
    query **queries;
    store_txn *txn;         /* open epoch, or NULL */
    uint64_t epoch;
    uint64_t epoch_start_ns;
    uint32_t next_query_id;
    int parallelism;
    int offset_earliest;    /* SET offset = 'earliest': new queries read their streams' logs from the start */
    int pull_view;          /* planning a pull query: a table is its rows (table_rt.rows_view), not its changelog */
    uint64_t mem_budget;    /* SET memory_budget: bytes of window state kept in memory, the rest in LMDB (0: no bound) */
    uint64_t agg_mem;       /* bytes of window state in memory now, over every aggregate task (agg_evict.c) */
    char placement[32];
    batch scratch;
    batch rbatch;           /* rows arriving from other nodes */
    sbuf tmp, tmp2;
    plan_catalog cat;
    /* io.c */
    int (*io_rows_cb)(engine *e, int si, const batch *b, xerr *err); /* a socket source's rows (ingest.c) */
    int (*io_tick_cb)(engine *e, xerr *err);                          /* the loop's tick (ingest.c) */
    /* a standing query's output into its target stream (stream.c, set by
     * engine_open): sink.c and ops.c sit below stream.c */
    int (*derived_rows_cb)(query *q, const batch *b, xerr *err);
    int (*derived_wm_cb)(query *q, xerr *err);
    struct uv_loop_s *loop;
    struct uv_timer_s tick, poll_timer;
    struct uv_pipe_s ctl;
    int ctl_on;
    io_source *io_sources, *io_dead;
    io_outlet *io_outlets;
    int io_paused, io_dirty;
    int ext_pause;          /* engine_pause_sources requests outstanding */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
    /* SUBSCRIBE inside this process */
    int nlsubs;
    struct lsub { query *q; exec_out out; } *lsubs;
    int epoch_pending;      /* deployed queries changed state since the last commit */
    uint64_t rate_ns;       /* when the queries' rates were last sampled */
    int broken;             /* an epoch failed to commit: nothing more is written (eng_txn) */
    /* what tasks cost (ops.c, "what tasks cost"): the open spans */
    struct eng_meas {
        uint64_t child;     /* wall ns of the spans below the one running */
        int depth;          /* spans open */
        uint64_t cpu0, wall0; /* the outermost span's thread CPU and wall clock at its start */
        struct span_part { uint64_t *cpu, wall; } *parts; /* own wall ns of each span closed inside it */
        int nparts, cap;
    } meas;
    char broken_msg[512];
};

/* ops.c: keep q's counters as of now for its rates, unless the last sample
 * is under RATE_MIN_NS old; restart = 1 forgets the samples before (the
 * counters were loaded at a restart). */
void query_rate_sample(query *q, uint64_t now, int restart);

/* meta.c: lookups, the open epoch's transaction, meta records */
int eng_stream_index(const engine *e, const char *name);
query *eng_find_query(const engine *e, const char *name); /* a named query (not a push query) */
int64_t eng_stream_wm(const stream_rt *s);   /* the watermark the stream's queries have */
void eng_notice(const exec_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A decoder's options for input to s as its WITH options say (format kind in
 * s->kind): delimiter, null string, the event time a row and a header must
 * have, what a line of the other format is told.  Borrowed from s. */
void eng_dec_opts(const stream_rt *s, fmt_dec_opts *d);
/* The columns rows into s have: a table's declared ones (its readers see its changelog, s->ps). */
const plan_stream *eng_stream_input(const stream_rt *s);
int eng_stream_made_by_query(const stream_rt *s); /* CREATE STREAM AS, CREATE TABLE AS: clients' rows are refused */
int eng_txn(engine *e, xerr *err); /* make sure an epoch transaction is open */
int eng_put_u64s(store_txn *t, const char *key, const uint64_t *v, int n, xerr *err); /* be64 each, in meta */
int eng_get_u64s(store_txn *t, const char *key, uint64_t *v, int n, sbuf *tmp, xerr *err);
/* "query/<id>": the offsets of slots 0 and 1, rows in, out and late, the
 * sink's committed length, then eng_meta_extra(q) offsets of slots 2 and up */
int eng_meta_extra(const query *q);
int eng_catalog_count(store_txn *t, uint64_t *n, xerr *err); /* entries in the catalog (a check at open) */
uint32_t query_task_id(const query *q, int op, int task);
uint32_t eng_table_tid(uint32_t id); /* the task id of a table's rows: query id's last, that no task gets */

/* Stream log records: the largest event time so far, then flags, then a batch. */
#define LOG_HDR 16
#define LOG_WM_STEP 1u

/* io.c */
int io_start(engine *e, xerr *err);
void io_stop(engine *e);
int io_source_start(engine *e, const char *stream, const char *uri, xerr *err);
void io_source_stop(engine *e, const char *stream);
int io_sink_open(engine *e, query *q, const char *uri, const char *format, xerr *err);
int io_outlet_rows(io_outlet *o, const batch *b);
/* A socket sink's state for DESCRIBE: "connected" or "connecting", and the bytes waiting. */
const char *io_outlet_state(const io_outlet *o, size_t *backlog);
void io_outlet_close(engine *e, io_outlet *o);

/* sink.c */
int eng_sink_open(query *q, const char *uri, const char *format, int64_t committed, xerr *err); /* file, tcp or unix */
int eng_sink_sync(query *q, xerr *err); /* the file sink holds every row handed over: its length may be recorded */
int query_emit(query *q, const batch *b, xerr *err); /* the sink's delivery */

/* ftstate.c: positions and kept rows, below the operators */
int ft_stateful(const opinst *o);
int ft_covers(const opinst *o, int k, int j); /* task k of o takes records of source slot j */
int ft_trackable(const query *q);             /* positions say exactly what each state includes */
int ft_load_inc(query *q, store_txn *t, xerr *err);
int ft_save_inc(query *q, store_txn *t, xerr *err);
/* meta record fmt % tid: 0 and v filled with want bytes, XE_NOTFOUND, or an error */
int ft_get_meta(store_txn *t, const char *fmt, uint32_t tid, sbuf *v, size_t want, xerr *err);
uint64_t ft_keep_from(const query *q, int src); /* the oldest record of source src a recovery may need */
#define KEEP_OUT 16  /* epochs of emitted rows kept for a takeover */
#define OUT_MS 20000 /* ... and only those of the last 20 s are emitted again (the sink remembers 30 s) */
int ft_put_out(store_txn *t, const char *fmt, uint32_t tid, uint64_t epoch, const void *p, size_t n, xerr *err);
int ft_save_out(query *q, store_txn *t, xerr *err); /* epoch: keep the rows emitted lately */
int ft_recent_out(store_txn *t, uint32_t tid, sbuf *into, xerr *err);
/* after a takeover: the rows task k of o kept under fmt % old, into q->reemit */
int ft_collect_out(query *q, opinst *o, int k, store_txn *t, const char *fmt, uint32_t old, xerr *err);
/* delete the kept rows of task tid under prefix fmt ("out/%u/" or "rout/%u/") but the newest `keep` */
int ft_drop_out(store_txn *t, const char *fmt, uint32_t tid, int keep, xerr *err);

/* ops.c */
int query_start(engine *e, query *q, xerr *err);     /* build operator instances */
void query_free(query *q);
int query_push(query *q, int src, const batch *b, uint64_t tag, xerr *err); /* one log record of a source stream */
int query_watermark(query *q, int src, int64_t wm, xerr *err);
int query_remote_batch(query *q, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p, size_t n,
                       xerr *err);
int query_remote_watermark(query *q, int op, int side, int from_task, int64_t wm, uint64_t tag, xerr *err);
/* A tag sent to another node (BATCH, WATERMARK) carries its slot's
 * partition in the top byte: 0 for a source of one task, so that those are
 * the plain offset + 1.  Log offsets stay far below 2^56. */
#define TAG_PART_SHIFT 56
#define TAG_OFF_MASK ((1ull << TAG_PART_SHIFT) - 1)
static inline uint64_t tag_wire(int part, uint64_t tag) { return tag ? (uint64_t)part << TAG_PART_SHIFT | tag : 0; }

static inline int task_local(const query *q, const opinst *o, int t) { return !q->own || q->own[o->task_base + t]; }
int task_flush(opinst *o, int task, store_txn *t, xerr *err); /* one local stateful task */
int query_load_state(query *q, store_txn *t, xerr *err);  /* restart: LMDB to memory */
int query_drop_state(query *q, store_txn *t, xerr *err);

/* agg.c */
agg_task *agg_new(opinst *o, int task);
void agg_free(agg_task *a);
int agg_push(opinst *o, int task, const batch *in, xerr *err);
int agg_close(opinst *o, int task, int64_t wm, xerr *err);
int agg_flush(opinst *o, int task, store_txn *t, xerr *err);
int agg_load(opinst *o, int task, store_txn *t, xerr *err);
int64_t agg_open_groups(const agg_task *a); /* in memory and evicted to LMDB */
int64_t agg_cold_groups(const agg_task *a);  /* evicted to LMDB (SET memory_budget) */
uint64_t agg_state_bytes(const agg_task *a); /* the open entries' memory, about */
/* The rows of b that an aggregate o whose windows have closed up to
 * `closed` drops as late, by the rules its tasks apply (push_*). */
int64_t agg_count_late(const opinst *o, const batch *b, int64_t closed);
int64_t agg_min_open_start(const agg_task *a); /* smallest window start still open, WM_END if none */

/* table_agg.c: CREATE TABLE AS's aggregate (no windows; retracts over a changelog) */
tagg_task *tagg_new(opinst *o, int task);
void tagg_free(tagg_task *a);
int tagg_push(opinst *o, int task, const batch *in, xerr *err);

/* jstore.c: the joins' row stores (time, key hash, sequence, hash chains per row) */
typedef struct jside {
    batch rows;
    int64_t *ts;        /* event time per row; WM_MIN: gone */
    uint64_t *kh;       /* key hash per row */
    uint64_t *seq;      /* persistence sequence per row */
    int32_t *next;      /* hash chain */
    int32_t *heads;     /* buckets */
    uint32_t nbuckets;
    int cap;
    int live;
    int persisted;      /* rows [0, persisted) are in LMDB */
    uint64_t next_seq;
} jside;
int jside_init(jside *s, int ncols);
void jside_fini(jside *s);
int jside_add(jside *s, const val *row, int64_t ts, uint64_t kh, uint64_t seq);
void jside_kill(jside *s, int r);
int jside_compact(jside *s); /* copy the live rows into a fresh store (the persisted stay so) */

/* tjoin.c: the stream-table join (a join without WITHIN), below join.c; and the joins' keys */
uint64_t jkey_hash(const val *k, int n);
int jkey_eval(opinst *o, int side, const val *row, val *out); /* side's join key of row; 0 when one is NULL */
int jkey_equal(const val *a, const val *b, int n);
typedef struct tjoin tjoin;
tjoin *tjoin_new(opinst *o);
void tjoin_free(tjoin *j);
int tjoin_push(opinst *o, int task, tjoin *j, int side, const batch *in, xerr *err);
int tjoin_expire(opinst *o, int task, tjoin *j, xerr *err); /* after either watermark moved */
int tjoin_flush(opinst *o, int task, tjoin *j, store_txn *t, xerr *err);
int tjoin_load(opinst *o, int task, tjoin *j, store_txn *t, xerr *err);
uint64_t tjoin_state_bytes(const tjoin *j);

/* join.c: the join WITHIN a time bound; a stream-table join's calls go to tjoin.c */
join_task *join_new(opinst *o, int task);
void join_free(join_task *j);
int join_push(opinst *o, int task, int side, const batch *in, xerr *err);
int join_expire(opinst *o, int task, int64_t wm, xerr *err);
int join_flush(opinst *o, int task, store_txn *t, xerr *err);
int join_load(opinst *o, int task, store_txn *t, xerr *err);
uint64_t join_state_bytes(const join_task *j); /* the buffered rows' memory, about */

/* stream.c: streams and the data path into them */
int eng_streams_add(engine *e, const ast_stmt *st, const char *sql, xerr *err); /* and its partitions */
void eng_stream_free(stream_rt *s);
int eng_stream_parts(const engine *e, int si, int ix[PLAN_MAX_PARTITIONS]); /* its partitions (itself first) */
int eng_stream_rows(engine *e, int si, const batch *b, xerr *err); /* in slices, to the log and the queries */
int eng_end_partial_slice(engine *e, int si, xerr *err);
/* A derived stream's watermark is its writers': a client's rows would step
 * it in replays as they do not live (ingest.c refuses them). */
#define DERIVED_NO_ROWS \
    "stream '%s' is a derived stream (CREATE STREAM AS): its rows come from queries; INSERT INTO %s SELECT adds one"
#define TABLE_AS_NO_ROWS "table '%s' is made by CREATE TABLE AS: its rows come from its query"
int eng_derived_rows(query *q, const batch *b, xerr *err); /* q's output rows into q->target's log (derived_rows_cb) */
int eng_derived_wm(query *q, xerr *err);  /* q's output watermark moved: its target's (derived_wm_cb) */
int eng_derived_feed(engine *e, int si, const batch *b, int64_t wm, xerr *err); /* engine_stream_feed */
int eng_end_stream(engine *e, int si, xerr *err); /* and its partitions' */
int eng_end_one(engine *e, int si, xerr *err);
void eng_finish_ended_push(engine *e); /* push queries whose sources all ended */
int eng_apply_retention(engine *e, int si, xerr *err);
/* The oldest record of stream si a standing query, or its recovery, may read (UINT64_MAX: none). */
uint64_t eng_keep_from(const engine *e, int si);
int eng_catch_up(engine *e, query *q, xerr *err); /* replay q's logs from q->offset, then its watermarks */
/* up to max records (0: all) of each of q's logs from q->offset, the
 * sources in turn; *more: some log has records left */
int eng_catch_up_step(engine *e, query *q, size_t max, int *more, xerr *err);
int eng_catch_up_wm(engine *e, query *q, xerr *err); /* q's watermarks at its streams', once it has read their logs */
int eng_catch_up_committed(engine *e, query *q, xerr *err); /* epoch.c: eng_catch_up in steps, each epoch committed */
int eng_offset_parse(const char *v, int *earliest); /* meta.c: 'earliest' or 'latest'; -1 if neither */
int eng_bytes_parse(const char *v, uint64_t *bytes); /* meta.c: '64 MB', '512 KiB', '0'; -1 if not a size */
int eng_release(engine *e, int si, uint64_t upto, xerr *err); /* logship.c */
int eng_end_released(engine *e, int si, xerr *err);

/* ft.c: the fault-tolerance API, above the operators; nothing here commits */
int query_flush_state(query *q, store_txn *t, xerr *err); /* epoch: dirty state to LMDB */
int ft_restore(query *q, store_txn *t, xerr *err);   /* deploy: state of the previous deployment */
int ft_collect(query *q, store_txn *t, xerr *err);   /* epoch: changes and snapshots for the replicas */
void ft_send(engine *e);                             /* after the commit: hand them to the host */
int ft_drop_replicas(engine *e, uint32_t qid, xerr *err);
int ft_reemit(query *q, xerr *err);                 /* after a takeover: emit them again */
/* engine_replica_apply and engine_replay but their commit (epoch.c) */
int ft_replica_apply(engine *e, uint32_t tid, uint64_t epoch, const void *p, size_t n, uint64_t pos[ENGINE_MAX_SRC],
                     int *npos, xerr *err);
int ft_replay_from(engine *e, uint32_t qid, const uint64_t from[ENGINE_MAX_SRC], int nsrc, xerr *err);
int ft_replay_step(engine *e, uint32_t qid, size_t max, int *more, int64_t *rows, xerr *err);

/* logship.c: engine_log_guard, _release and _import but their commit (epoch.c).
 * ship_guard returns 1 when the guard comes off: release up to *end, then
 * ship_unguard; ship_release and ship_import return 1 when the epoch may
 * commit (eng_maybe_commit). */
int ship_guard(engine *e, const char *stream, int on, uint64_t *end, xerr *err);
int ship_unguard(engine *e, const char *stream, xerr *err);
int ship_release(engine *e, const char *stream, uint64_t upto, xerr *err);
int ship_import(engine *e, const char *stream, const void *p, size_t n, uint64_t *end, xerr *err);

/* epoch.c: the one place that commits */
int eng_commit_epoch(engine *e, int background, xerr *err); /* background: its sync runs on the store's thread */
int eng_maybe_commit(engine *e, xerr *err); /* commit when the epoch is due */

/* ingest.c */
int io_stream_rows(engine *e, int si, const batch *b, xerr *err); /* rows from a socket producer (io_rows_cb) */
int io_tick(engine *e, xerr *err);  /* live streams: end partial slices, commit (io_tick_cb) */
int eng_insert_rows(engine *e, const ast_stmt *st, const exec_out *out, xerr *err); /* INSERT */

/* table_pull.c: feed q, a pull query planned over table si's rows, what the
 * table holds (*point: a point lookup of WHERE key = literal), then the end */
int eng_pull_run(engine *e, query *q, int si, const ast_select *sel, int *point, xerr *err);

/* catalog.c */
int eng_create_stream(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_create_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_create_stream_as(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_insert_select(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_create_table_as(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_drop_stream(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_drop_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_catalog_load(engine *e, xerr *err); /* at open, in the open transaction */

/* push.c */
int eng_push_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err); /* a SELECT */
int eng_subscribe_table(engine *e, const ast_stmt *st, const exec_out *out, xerr *err); /* SUBSCRIBE of a table */
int eng_push_sweep(engine *e, xerr *err); /* at open, after the catalog's load: a crash's leftovers */

/* start.c: a query's start and end (the engine's deploy.c is the cluster's
 * side; the statements of catalog.c and push.c use these) */
int eng_check_options(const ast_options *w, const char **known, const char *what, xerr *err);
int eng_check_query_options(const ast_options *w, xerr *err); /* a standing query's WITH */
int eng_option_int(const ast_options *w, const char *key, int def, int lo, int hi, int *out, xerr *err);
/* plan sel (w: its WITH) as query id called name, at the end of its streams' logs */
int eng_query_new(engine *e, const ast_select *sel, const ast_options *w, const char *name, const char *sql, uint32_t id,
                  int table_agg, query **out, xerr *err);
int eng_query_add(engine *e, query *q, xerr *err);    /* among e->queries */
void eng_query_remove(engine *e, query *q);           /* out of them, its sockets closed, freed */
void eng_detach_query_io(engine *e, query *q);        /* its socket sink, subscribers and SUBSCRIBEs */
int eng_rewind_source(engine *e, query *q, int k, const exec_out *out, xerr *err); /* source k from its log's start */
/* q's table sources (all, or a stream-table join's table side) from their
 * first change; refused (what would miss them) when retention dropped it */
int eng_tables_from_start(engine *e, query *q, int all, const char *what, int line, int col, int *n, xerr *err);
/* sel's GROUP BY columns' output positions into key[]: NULL, else the first not selected */
const ast_expr *eng_group_key_cols(const ast_select *sel, int *key);

/* show.c */
int eng_show_streams(engine *e, const exec_out *out);
int eng_show_queries(engine *e, const exec_out *out);
int eng_show_nodes(engine *e, const exec_out *out);
int eng_show_settings(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_describe(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_explain(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);
int eng_set_stmt(engine *e, const ast_stmt *st, const exec_out *out, xerr *err);

/* ops.c: the CPU of an ingest call into stream si (decoding, the log
 * append), less what the queries' tasks spent inside it, charged to the
 * local SOURCE tasks that read the stream, in equal shares (their work by
 * the seed model's definition). */
typedef struct eng_span {
    uint64_t t0, outer;
} eng_span;
void eng_span_begin(engine *e, eng_span *s);
void eng_span_end_sources(engine *e, int si, eng_span *s);
void eng_meas_fini(engine *e); /* engine_close */

/* ops.c: hand a batch to the next operator (through an exchange if needed).
 * ops.c and ft.c call it; the operators below ops.c reach it through
 * o->emit_down. */
int op_emit(opinst *o, int task, const batch *b, xerr *err);

#endif
