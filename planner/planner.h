/*
 * planner: from a parsed SELECT to a physical operator DAG.
 *
 * plan_query() checks names and types against a catalog (with "did you mean"
 * suggestions), binds expressions to column positions, rewrites (constant
 * folding, predicate pushdown below the window, projection pruning at the
 * source) and emits a DAG of operators: source, filter, project, window
 * assign, hash aggregate, join, having, sink.  Every operator carries a
 * partitioning key and a parallelism; an edge whose key changes is an
 * exchange.  The same DAG runs embedded (all tasks in one process) and in a
 * cluster (tasks placed by planner/placement).
 *
 * Ownership: a plan_dag owns everything it points to, including deep copies
 * of what it needed from the AST and the catalog; free it with plan_free().
 * Depends on parser/ and base/ (and placement/ for EXPLAIN PLACEMENT).
 */
#ifndef PLANNER_H
#define PLANNER_H

#include <stdint.h>

#include "base/base.h"
#include "parser/parser.h"
#include "planner/placement/placement.h"

/* ------------------------------------------------------------------ catalog view */

typedef struct plan_column {
    char *name;
    sql_type type;
} plan_column;

typedef struct plan_schema {
    int ncols;
    plan_column *cols;
} plan_schema;

/* A stream as the catalog describes it. */
typedef struct plan_stream {
    char *name;
    plan_schema schema;
    int ts_col;           /* index of the event-time column, -1 when none */
    int64_t watermark_ms; /* watermark delay */
    /* WITH (partitions = P): the stream is P logs (partition p > 0 is the
     * engine stream "name#p"), and a query reads it with P source tasks */
    int partitions;
    /* a table's changelog (exec/table.c): its column 0, op, says whether a
     * row adds or retracts, so every source of it reads that column */
    int changelog;
    /* a changelog's PRIMARY KEY: its columns' indices in schema (a table's
     * row is the newest of its key); npkey 0 for a stream */
    int npkey, pkey[8];
} plan_stream;

/* The planner sees the catalog through this interface. */
typedef struct plan_catalog {
    void *ctx;
    const plan_stream *(*find)(void *ctx, const char *name);
    /* Call fn for each stream (for suggestions). */
    void (*each)(void *ctx, void (*fn)(void *arg, const plan_stream *s), void *arg);
} plan_catalog;

/* The most partitions a stream can have. */
#define PLAN_MAX_PARTITIONS 16

/* Build a plan_stream from a CREATE STREAM statement (checks the WITH
 * options: timestamp column exists and is TIMESTAMP or BIGINT, watermark is an
 * interval, partitions an integer from 1 to PLAN_MAX_PARTITIONS).  Caller frees with plan_stream_free. */
int plan_stream_from_ast(const ast_stmt *st, plan_stream **out, xerr *err);
void plan_stream_free(plan_stream *s);
int plan_schema_copy(plan_schema *dst, const plan_schema *src);
void plan_schema_fini(plan_schema *s);
int plan_schema_find(const plan_schema *s, const char *name); /* index or -1 */

/* Parse an interval option value such as '2 seconds', '500 ms', '1 minute' or
 * a bare number of milliseconds. */
int plan_parse_interval(const char *text, int64_t *ms, xerr *err);

/* ------------------------------------------------------------------ bound expressions */

typedef enum plan_fn {
    FN_NONE = 0,
    /* scalar */
    FN_ABS, FN_LOWER, FN_UPPER, FN_LENGTH, FN_COALESCE, FN_MOD, FN_ROUND, FN_FLOOR, FN_CEIL,
    FN_SQRT, FN_POWER, FN_SUBSTR, FN_TRIM, FN_NULLIF, FN_GREATEST, FN_LEAST, FN_CONCAT,
    /* aggregates */
    FN_COUNT_STAR, FN_COUNT, FN_COUNT_DISTINCT, FN_SUM, FN_AVG, FN_MIN, FN_MAX,
} plan_fn;

typedef enum plan_expr_kind {
    PE_CONST,  /* lit */
    PE_COL,    /* col: index into the operator's input row */
    PE_UNARY,  /* op a0 */
    PE_BINARY, /* a0 op a1 */
    PE_ISNULL, /* a0 IS [NOT] NULL */
    PE_IN,     /* a0 [NOT] IN (a1..) */
    PE_LIKE,   /* a0 [NOT] LIKE a1 */
    PE_CASE,   /* searched CASE: (when, then)* [else]; has_else */
    PE_CAST,   /* CAST(a0 AS type) */
    PE_FUNC,   /* scalar function fn(args) */
} plan_expr_kind;

typedef struct plan_expr {
    plan_expr_kind kind;
    sql_type type;   /* result type (TY_NULL only for the NULL literal) */
    ast_op op;
    int negated;
    int has_else;
    plan_fn fn;
    int col;
    ast_lit lit;     /* PE_CONST; TEXT owned */
    int nargs;
    struct plan_expr **args;
} plan_expr;

void plan_expr_free(plan_expr *e);
int plan_expr_print(const plan_expr *e, const plan_schema *in, sbuf *b);

/* ------------------------------------------------------------------ operators */

typedef enum plan_op_kind {
    PO_SOURCE,
    PO_FILTER,
    PO_PROJECT,
    PO_WINDOW,    /* window assign: tags rows with their windows (fused with the aggregate at run time) */
    PO_AGGREGATE, /* hash aggregate per (window, group) */
    PO_JOIN,      /* stream-stream join WITHIN a time bound, or stream-table (temporal) */
    PO_HAVING,
    PO_SINK,
    PO_UNNEST,    /* flat map: each input row once per element of split(exprs[0], exprs[1]), the element last */
} plan_op_kind;

const char *plan_op_name(plan_op_kind k);

typedef struct plan_agg {
    plan_fn fn;       /* FN_COUNT_STAR .. FN_MAX */
    plan_expr *arg;   /* over the aggregate's input; NULL for COUNT(*) */
    sql_type type;    /* result type */
} plan_agg;

typedef enum plan_edge_kind {
    EDGE_FORWARD,   /* task i feeds task i (same parallelism, same key) */
    EDGE_HASH,      /* exchange: hash-partitioned by the downstream op's key */
    EDGE_GATHER,    /* exchange: all tasks feed the single downstream task */
} plan_edge_kind;

typedef struct plan_op {
    int id;
    plan_op_kind kind;
    int parallelism;
    plan_schema out;     /* output row layout */
    int ninputs;
    int inputs[2];       /* upstream op ids (JOIN: left, right) */
    plan_edge_kind in_edge[2];
    /* Partitioning key: expressions over this op's input; none = any task. */
    int nkeys;
    plan_expr **keys;
    int ts_col;          /* event-time column in the output, -1 when none */

    /* PO_SOURCE */
    char *stream;
    int64_t watermark_ms;
    int nsrc_cols;       /* projection pruning: stream columns read, in order */
    int *src_cols;

    /* PO_FILTER, PO_HAVING */
    plan_expr *pred;

    /* PO_PROJECT; PO_UNNEST: [text, separator], output = input columns ++ the element */
    int nexprs;
    plan_expr **exprs;

    /* PO_WINDOW (and copied onto PO_AGGREGATE) */
    ast_window window;
    int win_ts_col;      /* event-time column of the input */

    /* PO_AGGREGATE: output = group values, aggregate values, window_start, window_end */
    int ngroups;
    plan_expr **groups;
    int naggs;
    plan_agg *aggs;
    ast_emit emit;
    int time_is_start;   /* downstream takes window_start as its event time (watermarks hold back more) */

    /* PO_JOIN: output = left columns ++ right columns */
    int njoinkeys;
    plan_expr **lkeys, **rkeys; /* over the left / right input */
    plan_expr *residual;        /* over the joined row, or NULL (a LEFT JOIN's ON beyond the key) */
    int64_t within_ms;
    /* a stream-table join: the right input is a table's changelog (op
     * first, kept in the output but hidden from names and *), the keys its
     * PRIMARY KEY; each left row meets the table's row of its key as of its
     * event time (versioned) or as it is when the row arrives */
    int temporal, versioned, outer;
    int lts_col, rts_col;

    /* PO_SINK */
    int64_t limit;
} plan_op;

typedef struct plan_dag {
    int nops;
    plan_op *ops;        /* topological order: sources first, sink last */
    int sink;            /* op id of the sink */
    int stateful;        /* 1 when the DAG holds window or join state */
    ast_emit emit;       /* effective emit mode */
} plan_dag;

typedef struct plan_opts {
    int parallelism;     /* default parallelism of keyed operators (>= 1) */
} plan_opts;

/* Plan a SELECT.  On failure returns XE_NAME/XE_TYPE/XE_PLAN with err set
 * (err->line/col point at the offending expression when known). */
int plan_query(const ast_select *sel, const plan_catalog *cat, const plan_opts *o, plan_dag **out, xerr *err);
void plan_free(plan_dag *d);

/* EXPLAIN: the DAG as text (operators, keys, parallelism, edges) or JSON. */
int plan_explain_text(const plan_dag *d, sbuf *b);
int plan_explain_json(const plan_dag *d, sbuf *b);

/* The number of tasks (sum of parallelism) and a stable task id:
 * task ids are assigned op by op, task by task, starting at base. */
int plan_task_count(const plan_dag *d);

/* ------------------------------------------------------------------ placement */

/* Add the tasks of a query's DAG to a placement problem, with their edges.
 * Task k of the DAG (global index, plan order) becomes placement task
 * first + k, where *first is the index of the first task added.  Loads
 * (CPUs, the unit of the nodes' speeds) and traffic (1 Gbit/s links) are
 * the seed model's estimates at `rate`, the query's input in rows/s; 0
 * means the rate p's live nodes (added first) can carry at most.  Each
 * operator kind has a measured CPU cost per input row, split over its
 * tasks; rows thin out after an aggregate; an edge carries its upstream
 * operator's output.  AGGREGATE and JOIN tasks are stateful (they get
 * replicas).  Sources and the sink are pinned by the caller if it wants.
 * docs/nirvana.md, "Seed costs". */
int plan_placement_tasks(const plan_dag *d, int query, const char *qname, double rate, nirvana_problem *p,
                         int *first, xerr *err);

#endif
