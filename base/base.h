/*
 * base: the few things every Ares module shares and that no library gives us
 * in the shape we want: the error struct that callers own, a growable string
 * buffer, a 64-bit hash, CRC32C, clocks, the SQL types, timestamps and
 * intervals as text, host:port, the daemons' log line and a table of rows
 * by hash.
 *
 * Conventions (see docs/architecture.md): functions return 0 on success and a
 * negative ARES error code on failure; the human-readable message goes into an
 * `xerr` owned by the caller.  Nothing here allocates behind the caller's back
 * except sbuf, which owns its bytes until sbuf_fini().
 */
#ifndef BASE_H
#define BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Error codes.  Negative, so `if (rc < 0)` is the only test callers need. */
enum {
    XE_OK = 0,
    XE_NOMEM = -1,    /* allocation failed */
    XE_SYNTAX = -2,   /* SQL that does not parse */
    XE_NAME = -3,     /* unknown or duplicate stream, query, column */
    XE_TYPE = -4,     /* type mismatch */
    XE_IO = -5,       /* disk or socket error */
    XE_CORRUPT = -6,  /* data that fails its own checks */
    XE_FULL = -7,     /* map or buffer full */
    XE_EXISTS = -8,   /* already exists */
    XE_NOTFOUND = -9, /* no such thing */
    XE_INVAL = -10,   /* bad argument or option value */
    XE_PROTO = -11,   /* wire protocol violation */
    XE_AUTH = -12,    /* authentication failed */
    XE_BUSY = -13,    /* try again later */
    XE_INPUT = -14,   /* a rejected input line */
    XE_VERSION = -15, /* incompatible on-disk or wire version */
    XE_PLAN = -16,    /* a query the planner cannot run */
};

/* An error report owned by the caller.  line/col are 1-based when known, else 0. */
typedef struct xerr {
    int code;
    int line, col;
    char msg[512];
} xerr;

/* Set e (if non-NULL) and return code, so `return xerr_set(e, XE_IO, ...)` reads well. */
int xerr_set(xerr *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int xerr_setv(xerr *e, int code, const char *fmt, va_list ap);
/* Same, with a source position. */
int xerr_at(xerr *e, int code, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void xerr_clear(xerr *e);
const char *xerr_name(int code);

/* Growable byte buffer, always NUL-terminated when len > 0 or after sbuf_init. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

void sbuf_init(sbuf *b);
void sbuf_fini(sbuf *b);
void sbuf_reset(sbuf *b);               /* len = 0, keeps the memory */
int sbuf_reserve(sbuf *b, size_t extra); /* room for extra more bytes (+NUL) */
int sbuf_add(sbuf *b, const void *p, size_t n);
int sbuf_adds(sbuf *b, const char *s);
int sbuf_addc(sbuf *b, char c);
int sbuf_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sbuf_vprintf(sbuf *b, const char *fmt, va_list ap);
char *sbuf_steal(sbuf *b); /* caller frees; b is left empty */

/* 64-bit non-cryptographic hash (for hash tables and partitioning). */
uint64_t hash64(const void *p, size_t n, uint64_t seed);
static inline uint64_t hash64_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* LEB128 varints (at most 10 bytes) and zigzag for signed values, for the
 * batch encoding and window state records.  varint_put writes at p and
 * returns the end; varint_get reads p[*at..n), advancing *at, and returns
 * -1 when the varint is truncated or longer than 64 bits. */
static inline unsigned char *varint_put(unsigned char *p, uint64_t x)
{
    while (x >= 0x80) {
        *p++ = (unsigned char)(x | 0x80);
        x >>= 7;
    }
    *p++ = (unsigned char)x;
    return p;
}
int varint_get(const unsigned char *p, size_t n, size_t *at, uint64_t *out);
static inline uint64_t zigzag(uint64_t u) { return (u << 1) ^ (0 - (u >> 63)); }
static inline uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

/* CRC32C (Castagnoli), for frames and on-disk records. crc = 0 to start. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);

/* Clocks. */
int64_t clock_wall_ms(void);  /* Unix epoch milliseconds */
uint64_t clock_mono_ns(void); /* monotonic nanoseconds */
/* CPU time of the calling thread and of the whole process, nanoseconds
 * (CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID; a system call each,
 * so per batch, never per row). */
uint64_t clock_thread_ns(void);
uint64_t clock_process_ns(void);

/* Big-endian helpers for keys and wire formats. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* one byte swap and one store (the byte loop is not always recognised) */
static inline void be64_put(unsigned char *p, uint64_t v)
{
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
}
static inline uint64_t be64_get(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}
#else
static inline void be64_put(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) { p[i] = (unsigned char)v; v >>= 8; }
}
static inline uint64_t be64_get(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}
#endif
static inline void be32_put(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);  p[3] = (unsigned char)v;
}
static inline uint32_t be32_get(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void be16_put(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v;
}
static inline uint16_t be16_get(const unsigned char *p)
{
    return (uint16_t)(((unsigned)p[0] << 8) | p[1]);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1-12), and back
 * (H. Hinnant's algorithms; exact for every int64 year that fits). */
int64_t date_days_from_civil(int64_t y, int m, int d);
void date_civil_from_days(int64_t days, int64_t *y, int *m, int *d);

/* SQL types.  INT and BIGINT are both stored as 64-bit integers at run time but
 * keep their declared name.  TY_INTERVAL only exists for literals (milliseconds). */
typedef enum sql_type {
    TY_NULL = 0, /* the type of the NULL literal */
    TY_BOOL,
    TY_INT,
    TY_BIGINT,
    TY_DOUBLE,
    TY_TEXT,
    TY_TIMESTAMP, /* milliseconds since the Unix epoch, UTC */
    TY_INTERVAL,  /* milliseconds */
} sql_type;

const char *sql_type_name(sql_type t); /* "BIGINT", "TEXT", ... (base.c) */
/* "a" or "an", as the name is said: "an INT", "a BIGINT" */
const char *sql_type_article(sql_type t);

/* ------------------------------------------------------------------ timestamps and intervals (time.c)
 *
 * A timestamp is milliseconds since the Unix epoch, UTC; an interval is
 * milliseconds.  Their text comes in two dialects:
 *   TIME_SQL  - TIMESTAMP '...' literals and the SQL printer: blanks are ' ';
 *               fractions after '.', any number of digits; a zone may follow
 *               a bare date; "+hh:" is "+hh:00"; printed as
 *               2023-11-14 22:13:20 (.sss only when not whole seconds).
 *   TIME_DATA - CSV and JSON values: blanks are ' ' and '\t'; also epoch
 *               milliseconds (an integer in TIME_TS_MIN..TIME_TS_MAX);
 *               fractions after '.' or ',', 1 to 9 digits; a zone only after
 *               a time; printed as 2023-11-14T22:13:20.000Z.
 * Both read YYYY-MM-DD, then optionally 'T', 't' or ' ' and hh:mm[:ss[.f]],
 * then optionally Z, +hh:mm, -hh:mm, +hhmm or +hh (no zone means UTC).
 * Digits past milliseconds are truncated. */
typedef enum time_dialect { TIME_SQL, TIME_DATA } time_dialect;

/* 0000-01-01T00:00:00.000Z .. 9999-12-31T23:59:59.999Z: what ISO text can say. */
#define TIME_TS_MIN (-62167219200000LL)
#define TIME_TS_MAX 253402300799999LL
enum { TIME_TS_BUF = 40 };

/* s[0..n) (not NUL-terminated) to epoch ms: 0, or -1 when it is not a
 * timestamp of that dialect (*ms is then left alone). */
int time_ts_parse(const char *s, size_t n, time_dialect dialect, int64_t *ms);
/* The text of ms in buf, NUL-terminated; returns its length.  Years past
 * 9999 get more digits, years before 0 a '-'. */
size_t time_ts_print(int64_t ms, time_dialect dialect, char buf[TIME_TS_BUF]);
/* A decimal number s[0..n) (digits, optional '.' fraction, optional
 * exponent) times unit_ms, as whole milliseconds: 0, -1 not a number, -2 out
 * of range (or more than 18 significant digits), -3 not a whole number of
 * milliseconds. */
int time_iv_parse(const char *s, size_t n, int64_t unit_ms, int64_t *ms);
/* Appends ms in the largest unit that divides it: "0 SECONDS", "1 DAY",
 * "90 SECONDS", "1500 MILLISECONDS". */
int time_iv_print(int64_t ms, sbuf *b);

/* A write under path failed with errnum: is it the disk being full?  Yes for
 * ENOSPC and EDQUOT, and for EIO or EFBIG when less than 1 MiB is left for
 * this process on path's file system (LMDB reports a short write, which is
 * how a full disk shows, as EIO).  Then buf gets "the disk is full (N KiB
 * free on the file system of PATH)" and 1 is returned; else 0. */
int disk_full(const char *path, int errnum, char *buf, size_t n);

/* Edit distance, for "did you mean" suggestions (case-insensitive). */
int str_distance(const char *a, const char *b);

/* "host:port" (s, NUL-terminated) split at its last ':': host gets the text
 * before it, without the brackets of "[::1]:7000", and must fit in hn bytes
 * with its NUL; port is decimal 0..65535 (strtol's syntax).  0, or XE_INVAL
 * when there is no ':' or it is the first or the last byte, or the host does
 * not fit, or the port is bad.  No lookup: the host stays text. */
int base_parse_hostport(const char *s, char *host, size_t hn, int *port);

/* ------------------------------------------------------------------ rows by hash (rowtab.c)
 *
 * A table of rows by a 64-bit hash of their values (the rows are not kept),
 * with how often each came (count: a slot is in use while it is not 0), a
 * second count the caller may use (seen) and a time (at).  Linear probing
 * over cap slots, a power of two; the caller decides when to grow
 * (rowtab_rehash) and keeps cap > len.  Zeroed is empty. */
typedef struct rowtab_ent {
    uint64_t h;
    uint32_t count, seen;
    int64_t at;
} rowtab_ent;

typedef struct rowtab {
    rowtab_ent *v;
    size_t cap, len; /* len: slots in use */
} rowtab;

/* h's entry, or the free slot where it goes (count 0: the caller sets h
 * and count and adds 1 to len).  cap must be more than len. */
rowtab_ent *rowtab_slot(rowtab *t, uint64_t h);
/* Into a new array of cap slots (a power of two, more than the entries
 * kept): the entries in use for which keep (NULL: all) says 1, in slot
 * order; keep may change the entry it keeps.  len becomes the number kept.
 * XE_NOMEM leaves t as it was. */
int rowtab_rehash(rowtab *t, size_t cap, int (*keep)(rowtab_ent *e, void *ctx), void *ctx);
/* How many entries in use keep (NULL: all) says 1 for (it sees copies). */
size_t rowtab_count(const rowtab *t, int (*keep)(rowtab_ent *e, void *ctx), void *ctx);
/* A keep for both: the entry's at >= *(const int64_t *)cut. */
int rowtab_since(rowtab_ent *e, void *cut);
void rowtab_fini(rowtab *t); /* frees the slots; t is empty again */

/* ------------------------------------------------------------------ log lines (log.c) */

enum base_log_level { BASE_LOG_DEBUG = 0, BASE_LOG_INFO = 1, BASE_LOG_WARN = 2, BASE_LOG_ERROR = 3 };
const char *base_log_level_name(int level); /* "DEBUG" .. "ERROR"; "?" for another number */
/* One line on stderr, in one write, with the time in UTC to the millisecond:
 *   2024-05-01T12:00:00.123Z WHO LEVEL [TAG] msg
 * ("[TAG] " only when tag is not NULL).  msg has no newline. */
void base_log_line(const char *who, int level, const char *tag, const char *msg);

/* Process set-up for Ares's programs (ares-sql, ares-node, the benchmarks),
 * called once at the start of main, before any thread: the heap, where the
 * engine's window state and LMDB's dirty pages live, is backed by
 * transparent huge pages where the kernel allows them (THP "always" or
 * "madvise"; elsewhere this changes nothing but the malloc settings).  A
 * fresh 4 KB page costs a page fault, which in a VM costs microseconds, and
 * the first epoch of a fast stream touches thousands of them.  The heap
 * grows at once by reserve_mb (glibc's M_TOP_PAD, for every later growth
 * too) and a little more, allocations under 4 MB stay in it
 * (M_MMAP_THRESHOLD), that growth is advised MADV_HUGEPAGE, and memory freed
 * at the top is kept up to twice the reserve (M_TRIM_THRESHOLD), as the
 * engine soon needs it again.  Growth beyond it comes in 4 KB pages.
 * Returns the bytes advised (0: none, e.g. under ASan, whose allocator has
 * no such heap). */
size_t base_huge_heap(size_t reserve_mb);

/* A field of /proc/PID/status in kB (pid 0: this process), such as
 * "RssAnon", "RssFile" or "VmHWM"; -1 when the file or the field is not
 * there.  For the benchmarks' memory figures. */
long base_proc_status_kb(int pid, const char *field);

/* The CPUs this process may use (base/cpu.c): the smallest of its affinity
 * mask and any CPU cgroup quota over it (v2 cpu.max, v1 cpu.cfs_quota_us /
 * cpu.cfs_period_us, from its own group up to the root), e.g. 0.25 for a
 * quota of 25 ms every 100 ms.  how (may be NULL) says where it came from. */
double base_cpu_capacity(char *how, size_t cap);

#endif
