/*
 * internal.h: storage's own structures, shared by its files only (the
 * contract is storage.h's; nothing here is seen above this module).
 *
 * The files form layers; each calls only the layers below it:
 *
 *   kv.c      the catalog and meta records (store_kv_*)
 *   log.c     stream logs: the registry in meta, the handle cache, split records
 *   state.c   window state, its replication records, snapshots and copies
 *   env.c     the environment: errors, map growth, transactions, sync, open and close
 *   verify.c  the integrity walk of an existing data file at open (a child process)
 *
 * kv.c, log.c and state.c use env.c's structures and helpers and call none
 * of each other.  One call goes up: env.c's open calls log_open_all
 * (log.c), since the log registry is log.c's and dropped logs' databases
 * can be deleted only at open, before any reader exists.  env.c also keeps
 * the logent handles that log.c makes: a commit shares t->created in
 * s->logs, the end of a txn or store_close frees them; it reads no registry.
 *
 * Values and keys handed to callers are LMDB's memory, valid only during a
 * get's copy or a callback; nothing borrowed outlives the call.
 */
#ifndef STORAGE_INTERNAL_H
#define STORAGE_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>

#include "storage/storage.h"

#define KEY_MAX 512         /* >= mdb_env_get_maxkeysize() (511) */
#define TXLOG_SLOTS 4       /* logs a transaction remembers without lookups */

/* Meta keys of this module; storage.h's "store." reservation covers them. */
#define META_VERSION "store.version"
#define META_LOG "store.log:"   /* + stream: be64 offset floor */
#define META_RESERVED "store."

/* A log's named database handle.  Entries live until store_close. */
typedef struct logent {
    struct logent *next;
    MDB_dbi dbi;
    char name[]; /* the stream name, without "log:" */
} logent;

struct store {
    MDB_env *env;
    MDB_dbi catalog, meta, state, replica;
    char *dir;
    int lockfd;
    size_t map_max;
    size_t pagesize;
    int maxkey;

    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t grown; /* signalled when a requested growth is done */
    int active;         /* LMDB transactions open in this process */
    size_t grow_to;     /* map size asked for by a MAP_FULL, 0 = none */
    logent *logs;       /* committed log handles */
    store_txn *spare;   /* one txn struct kept for reuse */

    /* The background sync (store_sync_start): a thread that runs fdatasync
     * on the data file when asked, one at a time. */
    pthread_mutex_t smu;  /* guards the fields below */
    pthread_cond_t scv;   /* a request, the end of a sync, or quit */
    pthread_t syncer;
    int syncer_up;        /* the thread was started */
    int sync_busy;        /* a sync was asked for and has not finished */
    int sync_errno;       /* of the last background sync that failed, until reported */
    int sync_quit;
};

/* What a transaction knows about one log, so appends skip the lookups. */
typedef struct txlog {
    const char *name; /* points into a logent */
    MDB_dbi dbi;
    uint64_t floor;   /* from the registry */
    uint64_t next;    /* next offset, valid when next_known */
    int next_known;
} txlog;

struct store_txn {
    store *s;
    MDB_txn *txn;
    int write;
    int failed;       /* first XE_ code after which LMDB refuses the txn */
    int map_full;     /* the failure was MDB_MAP_FULL: growing helps */
    size_t bytes;     /* bytes written, to size growth */
    logent *created;  /* handles opened here, shared on commit */
    unsigned nlogs, log_rr;
    txlog logs[TXLOG_SLOTS];
    sbuf *rec;        /* store_txn_record: changes to STORE_STATE are copied here */
    unsigned char kbuf[KEY_MAX]; /* last: not cleared at begin */
};

/* ------------------------------------------------------------------ env.c, for the files above it */

/* Map an LMDB or errno code to an XE_ code and message; in a write txn it
 * also marks the txn failed, since LMDB refuses it after most errors. */
int lmdb_err(store *s, store_txn *t, xerr *err, int rc, const char *what);
/* t is a txn (a write txn if write) that has not failed; else XE_INVAL or its failure. */
int check_txn(store_txn *t, int write, xerr *err);
/* Copy a value out of LMDB's memory into a caller's buffer (reset first). */
int copy_out(sbuf *out, const MDB_val *v, xerr *err);
/* Open a core or log database in store_open's txn; a missing one is XE_CORRUPT. */
int open_db(store *s, MDB_txn *txn, const char *name, int create, MDB_dbi *dbi, xerr *err);

/* ------------------------------------------------------------------ log.c, for env.c's open */

/* In store_open's write txn, after the core databases: delete the emptied
 * databases of dropped logs, then open every registered log once (into
 * s->logs).  main is the main database's handle. */
int log_open_all(store *s, MDB_txn *txn, MDB_dbi main, xerr *err);

/* ------------------------------------------------------------------ verify.c, for env.c's open */

/* Walk an existing data file in a child process before LMDB opens it: 0 when
 * it is new, sound or cannot be checked; XE_CORRUPT when it is damaged. */
int verify_environment(const char *dir, xerr *err);

#endif
