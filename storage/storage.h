/*
 * storage: everything Ares keeps on disk, in one LMDB environment per engine
 * (per node in a cluster).  Only this module includes <lmdb.h>.
 *
 * Named databases:
 *   catalog       name -> bytes        streams, queries, settings (the engine encodes values)
 *   log:<stream>  be64 offset -> bytes one encoded batch per offset, append-only
 *   state         (be32 task, be64 window end ^ sign, key bytes) -> bytes   window state
 *   replica       same layout as state, for state replicated from other nodes
 *   meta          name -> bytes        format version, epochs, committed offsets
 *
 * Transactions: LMDB allows one write transaction at a time; this module
 * serialises them with LMDB's own writer lock and expects all writes of one
 * engine to come from one thread.  Read transactions are short and may run on
 * any thread (MDB_NOTLS).  Values handed out by get/iterate are copied into
 * caller-owned buffers, never borrowed beyond the call.
 *
 * Durability: the environment opens with MDB_NOSYNC and store_sync() runs an
 * explicit mdb_env_sync once per epoch (group commit).  A process crash
 * (kill -9) loses nothing that was committed; a power loss loses at most the
 * epochs since the last store_sync.
 *
 * Errors: a full map grows the map and retries once transparently where that
 * is possible (store_txn_commit reports XE_FULL when it cannot); a data
 * directory written by an incompatible version, or one that is not an LMDB
 * environment, fails store_open with XE_VERSION or XE_CORRUPT and a message
 * naming the directory.
 */
#ifndef STORAGE_H
#define STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define STORE_FORMAT_VERSION 1

typedef struct store store;
typedef struct store_txn store_txn;

typedef struct store_opts {
    size_t map_size;   /* initial map size in bytes; 0 = 256 MiB; grows when full */
    size_t map_max;    /* upper bound for growth; 0 = 64 GiB */
    int max_streams;   /* named log databases; 0 = 128 */
} store_opts;

/* Open (creating if needed) the environment in dir.  The directory is created
 * if it does not exist.  On failure *out is NULL and err says why. */
int store_open(const char *dir, const store_opts *opts, store **out, xerr *err);
void store_close(store *s); /* NULL is a no-op; aborts nothing: commit or abort txns first */
const char *store_dir(const store *s);

/* Flush committed transactions to disk (once per epoch). */
int store_sync(store *s, xerr *err);

/* ------------------------------------------------------------------ transactions */

int store_begin(store *s, int write, store_txn **out, xerr *err);
int store_commit(store_txn *t, xerr *err); /* frees t, also on failure */
void store_abort(store_txn *t);            /* frees t; NULL is a no-op */

/* ------------------------------------------------------------------ catalog and meta */

/* db is STORE_CATALOG or STORE_META. */
typedef enum store_kv { STORE_CATALOG, STORE_META } store_kv;

int store_kv_put(store_txn *t, store_kv db, const char *key, const void *val, size_t n, xerr *err);
/* Copies the value into out (reset first).  XE_NOTFOUND when absent (no message set). */
int store_kv_get(store_txn *t, store_kv db, const char *key, sbuf *out, xerr *err);
int store_kv_del(store_txn *t, store_kv db, const char *key, xerr *err); /* absent is not an error */
/* Call fn for every key starting with prefix, in key order.  fn returns 0 to
 * go on, non-zero to stop (that value is returned).  key/val are valid only
 * during the call. */
typedef int (*store_kv_fn)(void *ctx, const char *key, const void *val, size_t n);
int store_kv_scan(store_txn *t, store_kv db, const char *prefix, store_kv_fn fn, void *ctx, xerr *err);

/* ------------------------------------------------------------------ stream logs */

/* Create the log of a stream (idempotent) and drop it with all its data. */
int store_log_create(store_txn *t, const char *stream, xerr *err);
int store_log_drop(store_txn *t, const char *stream, xerr *err);

/* Append one record; its offset (dense, starting at 0, never reused even after
 * trimming) goes to *offset. */
int store_log_append(store_txn *t, const char *stream, const void *rec, size_t n, uint64_t *offset, xerr *err);

/* The next offset to be assigned (= number of records ever appended). */
int store_log_end(store_txn *t, const char *stream, uint64_t *end, xerr *err);
/* The oldest offset still kept (after trims); == end when empty. */
int store_log_begin(store_txn *t, const char *stream, uint64_t *begin, xerr *err);

/* Read records with offset >= from, in order, calling fn for each until fn
 * returns non-zero or max records were read (max 0 = no limit).
 * rec is valid only during the call. */
typedef int (*store_log_fn)(void *ctx, uint64_t offset, const void *rec, size_t n);
int store_log_read(store_txn *t, const char *stream, uint64_t from, size_t max, store_log_fn fn, void *ctx, xerr *err);

/* Delete every record with offset < before (retention). */
int store_log_trim(store_txn *t, const char *stream, uint64_t before, xerr *err);

/* ------------------------------------------------------------------ window state */

/* db is STORE_STATE (this node's tasks) or STORE_REPLICA (copies of other nodes' tasks). */
typedef enum store_state_db { STORE_STATE, STORE_REPLICA } store_state_db;

/* Keys are (task, window_end, key bytes); window_end is signed and orders
 * correctly (negative before positive). */
int store_state_put(store_txn *t, store_state_db db, uint32_t task, int64_t window_end,
                    const void *key, size_t klen, const void *val, size_t vlen, xerr *err);
int store_state_get(store_txn *t, store_state_db db, uint32_t task, int64_t window_end,
                    const void *key, size_t klen, sbuf *out, xerr *err); /* XE_NOTFOUND when absent */
int store_state_del(store_txn *t, store_state_db db, uint32_t task, int64_t window_end,
                    const void *key, size_t klen, xerr *err);

/* Visit the entries of one task with lo <= window_end < hi, in (window_end,
 * key) order.  fn returns non-zero to stop. */
typedef int (*store_state_fn)(void *ctx, int64_t window_end, const void *key, size_t klen,
                              const void *val, size_t vlen);
int store_state_scan(store_txn *t, store_state_db db, uint32_t task, int64_t lo, int64_t hi,
                     store_state_fn fn, void *ctx, xerr *err);
/* Delete the entries of one task with lo <= window_end < hi (a closed range of windows). */
int store_state_delete_range(store_txn *t, store_state_db db, uint32_t task, int64_t lo, int64_t hi, xerr *err);
/* Delete every entry of one task (DROP QUERY). */
int store_state_drop_task(store_txn *t, store_state_db db, uint32_t task, xerr *err);

/* ------------------------------------------------------------------ introspection */

typedef struct store_stats {
    size_t map_size;    /* current map size */
    size_t used_bytes;  /* pages in use * page size */
    uint64_t last_txn;
} store_stats;
int store_get_stats(store *s, store_stats *st, xerr *err);

#endif
