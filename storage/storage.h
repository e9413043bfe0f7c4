/*
 * storage: everything Ares keeps on disk, in one LMDB environment per engine
 * (per node in a cluster).  Only this module includes <lmdb.h>.
 *
 * Named databases:
 *   catalog       name -> bytes        streams, queries, settings (the engine encodes values)
 *   log:<stream>  be64 offset -> bytes one encoded batch per offset, append-only (a record a little
 *                 over whole LMDB pages keeps its last bytes under be64 offset || 0x01: storage/log.c)
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
 * Durability: the environment opens with MDB_NOSYNC (not MDB_WRITEMAP) and
 * store_sync() runs an explicit mdb_env_sync once per epoch (group commit),
 * or store_sync_start() an fdatasync on a thread of the store's own, while
 * the caller goes on.
 * A commit is atomic and reaches the OS page cache, so a process crash
 * (kill -9) loses nothing that was committed.  A power loss or kernel crash
 * loses the commits since the last store_sync, and if the filesystem
 * reorders writes it may damage the file (LMDB's documented NOSYNC risk);
 * store_open reports the damage it can detect as XE_CORRUPT.
 *
 * A full map (what the caller must do): LMDB cannot grow the map while a
 * transaction is open, and a write that hits MDB_MAP_FULL poisons its whole
 * transaction.  So: a write txn that fills the map makes that put (and every
 * later call on the txn) return XE_FULL; the caller then calls store_commit,
 * which aborts, grows the map (doubling, up to map_max) and returns XE_FULL
 * again; the caller redoes the WHOLE transaction from its own in-memory
 * state.  store_write() packages exactly this loop: prefer it for every write.
 * A write begin also grows the map ahead of need once it is 3/4 used, so the
 * retry is rare.  If other transactions are open at the moment of a
 * MAP_FULL, the growth happens when the last of them ends.  At map_max,
 * XE_FULL is final: trim logs or raise map_max.
 *
 * Errors: disk errors are XE_IO with strerror; a data directory written by an
 * incompatible format version fails store_open with XE_VERSION, and one that
 * is not an LMDB environment (or not Ares's, or damaged) with XE_CORRUPT,
 * each with a message naming the directory.  A directory is used by one open
 * store at a time (a flock on <dir>/store.lock; a second open gets XE_BUSY).
 * After an error from LMDB inside a write txn (anything but XE_NOTFOUND and
 * the XE_INVAL of argument checks), LMDB refuses the txn: every later call
 * returns the error and store_commit aborts and returns it.
 *
 * Stream logs and max_streams: each log is its own named database and holds
 * one of max_streams handle slots from creation until the store is closed,
 * even after store_log_drop; the next store_open deletes dropped logs' empty
 * databases and frees their slots.  Creating a log beyond that gives XE_FULL
 * (that error leaves the txn usable).
 *
 * Meta keys starting with "store." belong to this module (format version,
 * log registry): store_kv_put/del reject them and store_kv_scan skips them.
 */
#ifndef STORAGE_H
#define STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define STORE_FORMAT_VERSION 3 /* 3: split log records (storage/log.c); a version 2 directory is upgraded at open */

typedef struct store store;
typedef struct store_txn store_txn;

typedef struct store_opts {
    size_t map_size;   /* initial map size in bytes; 0 = 256 MiB; grows when full */
    size_t map_max;    /* upper bound for growth; 0 = 64 GiB */
    int max_streams;   /* named log databases; 0 = 128 */
    /* Told when an existing data directory, or a file in it, is open to
     * group or others (NULL: "ares: ..." on stderr). */
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
} store_opts;

/* Open (creating if needed) the environment in dir.  The directory is created
 * if it does not exist, mode 0700 (and so are missing parents), and its files
 * 0600, as PostgreSQL does: stream logs and state are nobody else's to read.  opts may be NULL (all defaults); a reopened store whose
 * data outgrew map_size starts at the size it needs and grows from there.  On
 * failure *out is NULL and err says why (XE_IO, XE_CORRUPT, XE_VERSION, XE_BUSY).
 * The caller owns the store and frees it with store_close. */
int store_open(const char *dir, const store_opts *opts, store **out, xerr *err);
void store_close(store *s); /* NULL is a no-op; aborts nothing: commit or abort txns first */
const char *store_dir(const store *s); /* owned by s */

/* Flush committed transactions to disk (once per epoch).  Until then a
 * power loss may lose them; a process crash does not.  Waits for a
 * background sync first (and returns its error, if it failed). */
int store_sync(store *s, xerr *err);
/* The same in the background: a thread of the store syncs what is
 * committed now while the caller goes on (the next epoch's work overlaps the
 * disk's).  One at a time: this waits for the previous one and returns its
 * error, XE_IO.  store_sync and store_close wait for it too. */
int store_sync_start(store *s, xerr *err);

/* ------------------------------------------------------------------ transactions */

/* Begin a read (write = 0) or write transaction; *out is owned by the caller
 * until store_commit or store_abort.  A write begin waits for LMDB's writer
 * lock: one write txn at a time, all from one thread.  Read txns may run on
 * any thread and should be short (they pin old pages and delay map growth).
 * A thread must not begin a write while it holds a read txn. */
int store_begin(store *s, int write, store_txn **out, xerr *err);
/* Commit (for a read txn, just end it).  XE_FULL means the map was full: see
 * the top of this file, redo the transaction.  Frees t, also on failure. */
int store_commit(store_txn *t, xerr *err);
void store_abort(store_txn *t);            /* discards all writes; frees t; NULL is a no-op */
/* Bytes of keys and values written in t so far (what its commit will write,
 * less LMDB's page overhead). */
size_t store_txn_bytes(const store_txn *t);

/* Run fn(ctx, t, err) in a write txn and commit it; when the map was full,
 * grow it and run fn again from scratch (so fn must be re-runnable: it may
 * write only through t and must not consume its input until store_write
 * returns 0) and must not commit or abort t.  fn returns 0 or a negative XE_
 * code; a negative code other than a map-full aborts the txn and is returned.  Returns XE_FULL when the map
 * cannot grow (map_max reached, or other transactions stayed open for 0.5 s). */
typedef int (*store_write_fn)(void *ctx, store_txn *t, xerr *err);
int store_write(store *s, store_write_fn fn, void *ctx, xerr *err);

/* ------------------------------------------------------------------ catalog and meta */

/* db is STORE_CATALOG or STORE_META. */
typedef enum store_kv { STORE_CATALOG, STORE_META } store_kv;

/* Keys are NUL-terminated, 1..511 bytes.  put inserts or overwrites (write txn). */
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

/* Create the log of a stream (idempotent) and drop it with all its data
 * (dropping an absent log is a no-op).  A log created again after a drop
 * starts at offset 0.  Both need a write txn.  Stream names are 1..500 bytes.
 * The other log calls return XE_NOTFOUND (with a message) for an absent log. */
int store_log_create(store_txn *t, const char *stream, xerr *err);
int store_log_drop(store_txn *t, const char *stream, xerr *err);

/* Append one record; its offset (dense, starting at 0, never reused even after
 * trimming) goes to *offset. */
int store_log_append(store_txn *t, const char *stream, const void *rec, size_t n, uint64_t *offset, xerr *err);

/* Put a record at a given offset (a copy of another log, in order): 1 when
 * the log holds that offset already (nothing written), 0 when appended.  An
 * empty log may start at any offset; otherwise offset must be the end. */
int store_log_put(store_txn *t, const char *stream, uint64_t offset, const void *rec, size_t n, xerr *err);

/* An empty log's next offset moves forward to at (a copy following a log
 * its home emptied); XE_INVAL when the log holds records. */
int store_log_skip(store_txn *t, const char *stream, uint64_t at, xerr *err);

/* The next offset to be assigned (= number of records ever appended). */
int store_log_end(store_txn *t, const char *stream, uint64_t *end, xerr *err);
/* The oldest offset still kept (after trims); == end when empty. */
int store_log_begin(store_txn *t, const char *stream, uint64_t *begin, xerr *err);

/* Read records with offset >= from, in order, calling fn for each until fn
 * returns non-zero or max records were read (max 0 = no limit).
 * rec is valid only during the call. */
typedef int (*store_log_fn)(void *ctx, uint64_t offset, const void *rec, size_t n);
int store_log_read(store_txn *t, const char *stream, uint64_t from, size_t max, store_log_fn fn, void *ctx, xerr *err);

/* Delete every record with offset < before (retention).  The end offset is
 * unchanged, even when this empties the log. */
int store_log_trim(store_txn *t, const char *stream, uint64_t before, xerr *err);

/* ------------------------------------------------------------------ window state */

/* db is STORE_STATE (this node's tasks) or STORE_REPLICA (copies of other nodes' tasks). */
typedef enum store_state_db { STORE_STATE, STORE_REPLICA } store_state_db;

/* Keys are (task, window_end, key bytes); window_end is signed and orders
 * correctly (negative before positive).  Key bytes are 0..499 bytes.  put
 * inserts or overwrites, del of an absent entry is not an error, get copies
 * the value into out.  The write path allocates nothing. */
int store_state_put(store_txn *t, store_state_db db, uint32_t task, int64_t window_end,
                    const void *key, size_t klen, const void *val, size_t vlen, xerr *err);
int store_state_get(store_txn *t, store_state_db db, uint32_t task, int64_t window_end,
                    const void *key, size_t klen, sbuf *out, xerr *err); /* XE_NOTFOUND when absent */
int store_state_del(store_txn *t, store_state_db db, uint32_t task, int64_t window_end,
                    const void *key, size_t klen, xerr *err);

/* Visit the entries of one task with lo <= window_end < hi, in (window_end,
 * key) order.  fn returns non-zero to stop (that value is returned); key and
 * val are valid only during the call.  In a write txn fn may write through
 * the same txn, including deleting the entry it visits. */
typedef int (*store_state_fn)(void *ctx, int64_t window_end, const void *key, size_t klen,
                              const void *val, size_t vlen);
int store_state_scan(store_txn *t, store_state_db db, uint32_t task, int64_t lo, int64_t hi,
                     store_state_fn fn, void *ctx, xerr *err);
/* Visit the entries of one task and one window end whose key bytes are at
 * or after from[0..flen), in key order, as store_state_scan does (fn may
 * delete the entry it visits).  A window's records in pieces: the next
 * piece starts after the last key seen. */
int store_state_scan_at(store_txn *t, store_state_db db, uint32_t task, int64_t window_end, const void *from,
                        size_t flen, store_state_fn fn, void *ctx, xerr *err);
/* Delete the entries of one task with lo <= window_end < hi (a closed range of windows). */
int store_state_delete_range(store_txn *t, store_state_db db, uint32_t task, int64_t lo, int64_t hi, xerr *err);
/* Delete every entry of one task (DROP QUERY). */
int store_state_drop_task(store_txn *t, store_state_db db, uint32_t task, xerr *err);

/* Replication (exec/ft.c).  While a recorder is set on a write txn, every
 * change made through it to STORE_STATE (put, delete, range delete, drop) is
 * also appended to rec, in order, as a self-describing record; NULL stops.
 * store_state_apply makes the same changes, in the same order, to db of
 * another environment (a replica).  Records name their task. */
void store_txn_record(store_txn *t, sbuf *rec);
sbuf *store_txn_recording(const store_txn *t); /* the recorder set, or NULL */
int store_state_apply(store_txn *t, store_state_db db, const void *rec, size_t n, xerr *err);
/* Bytes of the first record at p (n bytes there), or n when it is malformed:
 * to cut a long run of records into pieces at record boundaries. */
size_t store_rec_size(const void *p, size_t n);
/* Records that rebuild one task's entries from nothing: a drop, then a put
 * for each entry (a snapshot, for a new replica or a checkpoint). */
int store_state_snapshot(store_txn *t, store_state_db db, uint32_t task, sbuf *out, xerr *err);
/* Copy one task's entries under another task id (and db): a promoted replica
 * or a survivor's state taken over by a redeployed query. */
int store_state_copy(store_txn *t, store_state_db from, uint32_t from_task, store_state_db to, uint32_t to_task,
                     xerr *err);

/* ------------------------------------------------------------------ introspection */

/* Map size, space in use (high-water mark of pages) and last txn id. */
typedef struct store_stats {
    size_t map_size;    /* current map size */
    size_t used_bytes;  /* pages in use * page size */
    uint64_t last_txn;
} store_stats;
int store_get_stats(store *s, store_stats *st, xerr *err);

#endif
