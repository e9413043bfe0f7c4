/*
 * nexmark_gen: a seeded, rate-controlled NEXMark event generator (Person,
 * Auction, Bid), after the reference generator of the Beam and Flink nexmark
 * suites (see bench/nexmark/README.md).
 *
 * Event n (0, 1, 2, ...) is a Person, an Auction or a Bid by n mod 50, in the
 * proportions 1 : 3 : 46.  Ids, hot keys and in-flight windows follow the
 * reference: a person id is n / 50 + 1000; an auction's seller and a bid's
 * bidder are hot (the first person of the latest block of 100) with
 * probability 3/4, else one of the last 1000 people (plus a lead of 10 that
 * do not exist yet); a bid's auction is hot (the first of the latest block of
 * 100 auctions) with probability 1/2, else one of the last 100 auctions (+10).
 * An auction expires 1 + uniform[0, 2h) ms after it starts, where h is the
 * event time that 1666 more events take (so 100 auctions are in flight).
 *
 * Time: event n happens at EPOCH + n * 1000 / EVENT_RATE ms.  10 % of the
 * events are delayed: their dateTime is up to 3 s earlier than their place in
 * the output, so the output is out of order by at most 3 s and a 4 s
 * watermark loses nothing.  --rate paces the output in wall-clock time
 * (events per second, 0 = as fast as possible); without --event-rate the
 * event-time rate then follows it.
 *
 * Determinism: every event draws from its own PRNG seeded by (seed, n), so
 * the same options give the same bytes on every machine whatever the pacing.
 *
 * Output, one of:
 *   - stdout (the default): every event in event order, one stream with the
 *     union of the three schemas (UNION_COLS): a leading kind column
 *     (person, auction, bid), and the columns of the other kinds empty
 *     (NULL to a CSV reader).  This is what the queries read, like the single
 *     source of Flink's nexmark setup.
 *   - --out-dir DIR: DIR/person.csv, auction.csv and bid.csv, each with only
 *     its kind's columns.
 * Both start with a header line unless --no-header.  --format json writes
 * JSON lines instead (an object holds only its kind's fields, and "kind" when
 * interleaved).  No value contains a comma, a quote or a backslash, so
 * neither format needs escaping.  Times are epoch milliseconds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"

/* ------------------------------------------------------------------ the reference constants */

enum {
    PROP_PERSON = 1,
    PROP_AUCTION = 3,
    PROP_BID = 46,
    PROP_TOTAL = PROP_PERSON + PROP_AUCTION + PROP_BID,
};

#define FIRST_PERSON_ID 1000
#define FIRST_AUCTION_ID 1000
#define FIRST_CATEGORY_ID 10
#define NUM_CATEGORIES 5
#define HOT_BLOCK 100 /* a hot id is the first of the latest block of 100 */
#define PERSON_ID_LEAD 10
#define AUCTION_ID_LEAD 10
#define ACTIVE_PEOPLE 1000
#define IN_FLIGHT_AUCTIONS 100
#define HOT_AUCTION_RATIO 2
#define HOT_SELLER_RATIO 4
#define HOT_BIDDER_RATIO 4
#define HOT_CHANNEL_RATIO 2
#define NUM_CHANNELS 10000

static const char *const FIRST_NAMES[] = {"Peter", "Paul",  "Luke",  "John",   "Saul",  "Vicky",
                                          "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
static const char *const LAST_NAMES[] = {"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                         "Walton", "Smith",  "Jones",   "Noris"};
static const char *const CITIES[] = {"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
                                     "Bend",    "Redmond",     "Seattle",       "Kent",  "Cheyenne"};
static const char *const STATES[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
static const char *const HOT_CHANNELS[] = {"Google", "Facebook", "Baidu", "Apple"};

#define NELEM(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

/* ------------------------------------------------------------------ schemas */

enum { K_PERSON, K_AUCTION, K_BID };
static const char *const KINDS[3] = {"person", "auction", "bid"};

/* The union of the three schemas, after the kind column.  person and auction
 * share id; all three share datetime and extra. */
enum {
    C_ID, C_NAME, C_EMAIL, C_CARD, C_CITY, C_STATE,                                  /* person */
    C_ITEM, C_DESC, C_INITIAL, C_RESERVE, C_EXPIRES, C_SELLER, C_CATEGORY,          /* auction */
    C_AUCTION, C_BIDDER, C_PRICE, C_CHANNEL, C_URL,                                  /* bid */
    C_DATETIME, C_EXTRA,
    NCOLS
};
static const char *const COL_NAMES[NCOLS] = {
    "id",         "name",    "emailaddress", "creditcard", "city",    "state",   "itemname",
    "description", "initialbid", "reserve",  "expires",    "seller",  "category", "auction",
    "bidder",     "price",   "channel",      "url",        "datetime", "extra",
};

/* Each kind's own columns, in its order (the reference's field order). */
static const int PERSON_COLS[] = {C_ID, C_NAME, C_EMAIL, C_CARD, C_CITY, C_STATE, C_DATETIME, C_EXTRA};
static const int AUCTION_COLS[] = {C_ID,       C_ITEM,    C_DESC,   C_INITIAL,  C_RESERVE,
                                   C_DATETIME, C_EXPIRES, C_SELLER, C_CATEGORY, C_EXTRA};
static const int BID_COLS[] = {C_AUCTION, C_BIDDER, C_PRICE, C_CHANNEL, C_URL, C_DATETIME, C_EXTRA};
static const int *const KIND_COLS[3] = {PERSON_COLS, AUCTION_COLS, BID_COLS};
static const int KIND_NCOLS[3] = {(int)NELEM(PERSON_COLS), (int)NELEM(AUCTION_COLS), (int)NELEM(BID_COLS)};
/* average bytes of a kind's row in its own CSV file; `extra` pads to it */
static const int KIND_AVG_BYTES[3] = {200, 500, 100};

/* ------------------------------------------------------------------ options */

typedef struct gen_opts {
    uint64_t seed;
    int64_t events;
    int64_t rate;       /* wall-clock events/s; 0 = unpaced */
    int64_t event_rate; /* event-time events/s */
    int64_t epoch;      /* event time of event 0, ms */
    int delay_pct;      /* share of delayed events */
    int64_t max_delay;  /* ms */
    int json, header;
    const char *out_dir;
} gen_opts;

static void usage(FILE *f)
{
    fputs("usage: nexmark_gen [--seed N] [--events N] [--rate EVENTS_PER_S] [--event-rate EVENTS_PER_S]\n"
          "                   [--epoch MS] [--delay-pct P] [--max-delay MS] [--format csv|json]\n"
          "                   [--no-header] [--out-dir DIR]\n"
          "  --seed N          PRNG seed (default 1)\n"
          "  --events N        events to generate (default 1000000)\n"
          "  --rate R          pace the output at R events/s of wall-clock time (default 0: unpaced)\n"
          "  --event-rate R    events per second of event time (default: --rate, or 10000)\n"
          "  --epoch MS        event time of the first event (default 1704067200000, 2024-01-01)\n"
          "  --delay-pct P     percent of events delayed (default 10)\n"
          "  --max-delay MS    largest delay (default 3000)\n"
          "  --format F        csv (default) or json (JSON lines)\n"
          "  --no-header       no CSV header line\n"
          "  --out-dir DIR     write DIR/person.csv, auction.csv, bid.csv (or .json); without it,\n"
          "                    every event on stdout, led by its kind, in the union of the schemas\n",
          f);
}

static int parse_i64(const char *s, int64_t lo, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo) return -1;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------ per-event randomness */

typedef struct rng {
    uint64_t s;
} rng;

/* a Weyl sequence through base's 64-bit finaliser (splitmix64's scheme) */
static uint64_t rng_next(rng *r) { return hash64_mix(r->s += 0x9e3779b97f4a7c15ull); }

/* uniform in [0, n), n > 0 (the modulo bias is below 2^-40 for our n) */
static int64_t rng_below(rng *r, int64_t n) { return (int64_t)(rng_next(r) % (uint64_t)n); }

static double rng_double(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

static rng rng_for_event(uint64_t seed, int64_t n)
{
    rng r = {hash64_mix(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) ^ (uint64_t)n};
    rng_next(&r);
    return r;
}

/* ------------------------------------------------------------------ ids (the reference's arithmetic) */

static int64_t last_base0_person(int64_t n)
{
    int64_t epoch = n / PROP_TOTAL, off = n % PROP_TOTAL;
    if (off >= PROP_PERSON) off = PROP_PERSON - 1;
    return epoch * PROP_PERSON + off;
}

static int64_t last_base0_auction(int64_t n)
{
    int64_t epoch = n / PROP_TOTAL, off = n % PROP_TOTAL;
    if (off < PROP_PERSON) {
        epoch--;
        off = PROP_AUCTION - 1;
    } else if (off >= PROP_PERSON + PROP_AUCTION) {
        off = PROP_AUCTION - 1;
    } else {
        off -= PROP_PERSON;
    }
    return epoch * PROP_AUCTION + off;
}

/* one of the active people, or one of the next PERSON_ID_LEAD */
static int64_t next_base0_person(int64_t n, rng *r)
{
    int64_t people = last_base0_person(n) + 1;
    int64_t active = people < ACTIVE_PEOPLE ? people : ACTIVE_PEOPLE;
    return people - active + rng_below(r, active + PERSON_ID_LEAD);
}

/* one of the auctions in flight, or one of the next AUCTION_ID_LEAD */
static int64_t next_base0_auction(int64_t n, rng *r)
{
    int64_t max = last_base0_auction(n);
    int64_t min = max - IN_FLIGHT_AUCTIONS > 0 ? max - IN_FLIGHT_AUCTIONS : 0;
    return min + rng_below(r, max - min + 1 + AUCTION_ID_LEAD);
}

/* cents, log-uniform over [1, 10^6) dollars */
static int64_t next_price(rng *r) { return (int64_t)llround(pow(10.0, rng_double(r) * 6.0) * 100.0); }

/* ------------------------------------------------------------------ one event */

/* An event's values, by union column.  Text lives in `text`. */
typedef struct slot {
    int set, is_text;
    int64_t i;
    size_t off, len;
} slot;

typedef struct event {
    int kind;
    slot v[NCOLS];
    char text[1024];
    size_t ntext;
} event;

static void ev_begin(event *e, int kind)
{
    e->kind = kind;
    e->ntext = 0;
    for (int c = 0; c < NCOLS; c++) e->v[c].set = 0;
}

static void ev_int(event *e, int col, int64_t x) { e->v[col] = (slot){1, 0, x, 0, 0}; }

/* Text columns are written in pieces: open, any appends, close. */
static void ev_open(event *e, int col) { e->v[col] = (slot){1, 1, 0, e->ntext, 0}; }

static void ev_add(event *e, int col, const char *s, size_t n)
{
    if (e->ntext + n > sizeof e->text) n = sizeof e->text - e->ntext; /* never: rows stay below 700 bytes */
    memcpy(e->text + e->ntext, s, n);
    e->ntext += n;
    e->v[col].len += n;
}

static void ev_adds(event *e, int col, const char *s) { ev_add(e, col, s, strlen(s)); }

static void ev_text(event *e, int col, const char *s)
{
    ev_open(e, col);
    ev_adds(e, col, s);
}

static size_t fmt_i64(char *buf, int64_t v)
{
    char tmp[24];
    size_t k = 0, o = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do tmp[k++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) buf[o++] = '-';
    while (k) buf[o++] = tmp[--k];
    return o;
}

static void ev_add_i64(event *e, int col, int64_t v)
{
    char b[24];
    ev_add(e, col, b, fmt_i64(b, v));
}

/* The reference's nextString: 3 .. max-1 letters, about one in 13 of them
 * `special`, never first or last. */
static void ev_add_random(event *e, int col, rng *r, int max, char special)
{
    int len = 3 + (int)rng_below(r, max - 3);
    for (int i = 0; i < len; i++) {
        char c = rng_below(r, 13) == 0 ? special : (char)('a' + rng_below(r, 26));
        if (c == special && (i == 0 || i == len - 1)) c = 'x';
        ev_add(e, col, &c, 1);
    }
}

/* Bytes of the kind's own CSV row so far (without extra and newline). */
static size_t ev_row_bytes(const event *e)
{
    size_t n = 0;
    char b[24];
    for (int i = 0; i < KIND_NCOLS[e->kind]; i++) {
        const slot *s = &e->v[KIND_COLS[e->kind][i]];
        if (!s->set) continue;
        n += 1 + (s->is_text ? s->len : fmt_i64(b, s->i));
    }
    return n;
}

/* The reference's nextExtra: letters that bring the row to its kind's
 * average size, give or take 20 %. */
static void ev_extra(event *e, rng *r)
{
    int64_t want = (int64_t)KIND_AVG_BYTES[e->kind] - (int64_t)ev_row_bytes(e) - 2;
    ev_open(e, C_EXTRA);
    if (want <= 0) return;
    int64_t delta = (want * 2 + 5) / 10;
    int64_t size = want - delta + (delta ? rng_below(r, 2 * delta) : 0);
    for (int64_t i = 0; i < size; i++) {
        char c = (char)('a' + rng_below(r, 26));
        ev_add(e, C_EXTRA, &c, 1);
    }
}

typedef struct gen {
    gen_opts o;
    int64_t count[3];
    int64_t min_time, max_time;
} gen;

static int64_t event_time(const gen *g, int64_t n) { return g->o.epoch + n * 1000 / g->o.event_rate; }

/* The dateTime of event n: its time, or earlier when it is delayed. */
static int64_t date_time(gen *g, int64_t n, rng *r)
{
    int64_t t = event_time(g, n);
    if (g->o.delay_pct && g->o.max_delay && rng_below(r, 100) < g->o.delay_pct) {
        t -= 1 + rng_below(r, g->o.max_delay);
        if (t < g->o.epoch) t = g->o.epoch;
    }
    if (t < g->min_time) g->min_time = t;
    if (t > g->max_time) g->max_time = t;
    return t;
}

static void gen_person(gen *g, int64_t n, rng *r, event *e)
{
    ev_begin(e, K_PERSON);
    ev_int(e, C_ID, last_base0_person(n) + FIRST_PERSON_ID);
    ev_open(e, C_NAME);
    ev_adds(e, C_NAME, FIRST_NAMES[rng_below(r, NELEM(FIRST_NAMES))]);
    ev_adds(e, C_NAME, " ");
    ev_adds(e, C_NAME, LAST_NAMES[rng_below(r, NELEM(LAST_NAMES))]);
    ev_open(e, C_EMAIL);
    ev_add_random(e, C_EMAIL, r, 7, '_');
    ev_adds(e, C_EMAIL, "@");
    ev_add_random(e, C_EMAIL, r, 5, '_');
    ev_adds(e, C_EMAIL, ".com");
    ev_open(e, C_CARD);
    for (int i = 0; i < 4; i++) {
        char d[8];
        snprintf(d, sizeof d, "%s%04d", i ? " " : "", (int)rng_below(r, 10000));
        ev_adds(e, C_CARD, d);
    }
    ev_text(e, C_CITY, CITIES[rng_below(r, NELEM(CITIES))]);
    ev_text(e, C_STATE, STATES[rng_below(r, NELEM(STATES))]);
    ev_int(e, C_DATETIME, date_time(g, n, r));
    ev_extra(e, r);
}

static void gen_auction(gen *g, int64_t n, rng *r, event *e)
{
    ev_begin(e, K_AUCTION);
    ev_int(e, C_ID, last_base0_auction(n) + FIRST_AUCTION_ID);
    int64_t seller;
    if (rng_below(r, HOT_SELLER_RATIO) > 0)
        seller = (last_base0_person(n) / HOT_BLOCK) * HOT_BLOCK;
    else
        seller = next_base0_person(n, r);
    ev_int(e, C_SELLER, seller + FIRST_PERSON_ID);
    ev_int(e, C_CATEGORY, FIRST_CATEGORY_ID + rng_below(r, NUM_CATEGORIES));
    int64_t initial = next_price(r);
    ev_int(e, C_INITIAL, initial);
    ev_int(e, C_RESERVE, initial + next_price(r));
    /* the event time that the next 100 auctions take */
    int64_t now = event_time(g, n);
    int64_t horizon = event_time(g, n + IN_FLIGHT_AUCTIONS * PROP_TOTAL / PROP_AUCTION) - now;
    ev_int(e, C_EXPIRES, now + 1 + rng_below(r, horizon * 2 > 1 ? horizon * 2 : 1));
    ev_open(e, C_ITEM);
    ev_add_random(e, C_ITEM, r, 20, ' ');
    ev_open(e, C_DESC);
    ev_add_random(e, C_DESC, r, 100, ' ');
    ev_int(e, C_DATETIME, date_time(g, n, r));
    ev_extra(e, r);
}

static void gen_bid(gen *g, int64_t n, rng *r, event *e)
{
    ev_begin(e, K_BID);
    int64_t auction, bidder;
    if (rng_below(r, HOT_AUCTION_RATIO) > 0)
        auction = (last_base0_auction(n) / HOT_BLOCK) * HOT_BLOCK;
    else
        auction = next_base0_auction(n, r);
    ev_int(e, C_AUCTION, auction + FIRST_AUCTION_ID);
    if (rng_below(r, HOT_BIDDER_RATIO) > 0)
        bidder = (last_base0_person(n) / HOT_BLOCK) * HOT_BLOCK + 1;
    else
        bidder = next_base0_person(n, r);
    ev_int(e, C_BIDDER, bidder + FIRST_PERSON_ID);
    ev_int(e, C_PRICE, next_price(r));
    if (rng_below(r, HOT_CHANNEL_RATIO) > 0) {
        const char *ch = HOT_CHANNELS[rng_below(r, NELEM(HOT_CHANNELS))];
        ev_text(e, C_CHANNEL, ch);
        ev_open(e, C_URL);
        ev_adds(e, C_URL, "https://www.nexmark.com/");
        ev_adds(e, C_URL, ch);
        ev_adds(e, C_URL, "/item.htm?query=1");
    } else {
        int64_t c = rng_below(r, NUM_CHANNELS);
        ev_open(e, C_CHANNEL);
        ev_adds(e, C_CHANNEL, "channel-");
        ev_add_i64(e, C_CHANNEL, c);
        ev_open(e, C_URL);
        ev_adds(e, C_URL, "https://www.nexmark.com/");
        ev_add_random(e, C_URL, r, 7, '_');
        ev_adds(e, C_URL, "/item.htm?query=1&channel_id=");
        ev_add_i64(e, C_URL, c);
    }
    ev_int(e, C_DATETIME, date_time(g, n, r));
    ev_extra(e, r);
}

/* ------------------------------------------------------------------ writing */

typedef struct line {
    char p[4096];
    size_t n;
} line;

static void put(line *l, const char *s, size_t n)
{
    memcpy(l->p + l->n, s, n);
    l->n += n;
}

static void put_s(line *l, const char *s) { put(l, s, strlen(s)); }

static void put_slot(line *l, const event *e, const slot *s, int quote)
{
    if (!s->is_text) {
        l->n += fmt_i64(l->p + l->n, s->i);
        return;
    }
    if (quote) put(l, "\"", 1);
    put(l, e->text + s->off, s->len);
    if (quote) put(l, "\"", 1);
}

/* One line for event e: JSON, the kind's own CSV row, or the union row. */
static void render(const event *e, int json, int interleaved, line *l)
{
    l->n = 0;
    const int *cols = KIND_COLS[e->kind];
    int ncols = KIND_NCOLS[e->kind];
    if (json) {
        put(l, "{", 1);
        if (interleaved) {
            put_s(l, "\"kind\":\"");
            put_s(l, KINDS[e->kind]);
            put_s(l, "\",");
        }
        for (int i = 0; i < ncols; i++) {
            if (i) put(l, ",", 1);
            put(l, "\"", 1);
            put_s(l, COL_NAMES[cols[i]]);
            put(l, "\":", 2);
            put_slot(l, e, &e->v[cols[i]], 1);
        }
        put(l, "}\n", 2);
    } else if (interleaved) {
        put_s(l, KINDS[e->kind]);
        for (int c = 0; c < NCOLS; c++) {
            put(l, ",", 1);
            if (e->v[c].set) put_slot(l, e, &e->v[c], 0);
        }
        put(l, "\n", 1);
    } else {
        for (int i = 0; i < ncols; i++) {
            if (i) put(l, ",", 1);
            put_slot(l, e, &e->v[cols[i]], 0);
        }
        put(l, "\n", 1);
    }
}

static void header(FILE *f, int kind)
{
    if (kind < 0) {
        fputs("kind", f);
        for (int c = 0; c < NCOLS; c++) fprintf(f, ",%s", COL_NAMES[c]);
    } else {
        for (int i = 0; i < KIND_NCOLS[kind]; i++) fprintf(f, "%s%s", i ? "," : "", COL_NAMES[KIND_COLS[kind][i]]);
    }
    fputc('\n', f);
}

static int open_outputs(const gen_opts *o, FILE *out[3], char *bufs[3])
{
    if (!o->out_dir) {
        out[0] = out[1] = out[2] = stdout;
        setvbuf(stdout, bufs[0], _IOFBF, 1 << 20);
        if (o->header && !o->json) header(stdout, -1);
        return 0;
    }
    for (int k = 0; k < 3; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.%s", o->out_dir, KINDS[k], o->json ? "json" : "csv");
        if (!(out[k] = fopen(path, "w"))) {
            fprintf(stderr, "nexmark_gen: %s: %s\n", path, strerror(errno));
            while (k-- > 0) fclose(out[k]);
            return -1;
        }
        setvbuf(out[k], bufs[k], _IOFBF, 1 << 20);
        if (o->header && !o->json) header(out[k], k);
    }
    return 0;
}

/* Sleep until event n is due at the wall-clock rate (flushing first, so a
 * reader sees the events that are due). */
static void pace(const gen_opts *o, uint64_t start_ns, int64_t n, FILE *out[3])
{
    uint64_t due = start_ns + (uint64_t)((double)n * 1e9 / (double)o->rate);
    uint64_t now = clock_mono_ns();
    if (now >= due) return;
    for (int k = 0; k < 3; k++) fflush(out[k]);
    uint64_t wait = due - now;
    struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

int main(int argc, char **argv)
{
    gen_opts o = {.seed = 1, .events = 1000000, .rate = 0, .event_rate = -1, .epoch = 1704067200000LL,
                  .delay_pct = 10, .max_delay = 3000, .header = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t x;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--no-header")) {
            o.header = 0;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--seed") && !parse_i64(v, 0, &x)) o.seed = (uint64_t)x;
        else if (!strcmp(a, "--events") && !parse_i64(v, 0, &x)) o.events = x;
        else if (!strcmp(a, "--rate") && !parse_i64(v, 0, &x)) o.rate = x;
        else if (!strcmp(a, "--event-rate") && !parse_i64(v, 1, &x)) o.event_rate = x;
        else if (!strcmp(a, "--epoch") && !parse_i64(v, 0, &x)) o.epoch = x;
        else if (!strcmp(a, "--delay-pct") && !parse_i64(v, 0, &x) && x <= 100) o.delay_pct = (int)x;
        else if (!strcmp(a, "--max-delay") && !parse_i64(v, 0, &x)) o.max_delay = x;
        else if (!strcmp(a, "--out-dir")) o.out_dir = v;
        else if (!strcmp(a, "--format") && (!strcmp(v, "csv") || !strcmp(v, "json"))) o.json = !strcmp(v, "json");
        else {
            fprintf(stderr, "nexmark_gen: bad option %s %s\n", a, v);
            usage(stderr);
            return 2;
        }
    }
    if (o.event_rate < 0) o.event_rate = o.rate > 0 ? o.rate : 10000;

    static char b0[1 << 20], b1[1 << 20], b2[1 << 20];
    char *bufs[3] = {b0, b1, b2};
    FILE *out[3];
    if (open_outputs(&o, out, bufs) < 0) return 1;

    gen g = {.o = o, .min_time = INT64_MAX, .max_time = INT64_MIN};
    static event e;
    static line l;
    uint64_t start = clock_mono_ns();
    int rc = 0;
    for (int64_t n = 0; n < o.events && !rc; n++) {
        if (o.rate > 0 && (n & 63) == 0) pace(&o, start, n, out);
        rng r = rng_for_event(o.seed, n);
        int64_t off = n % PROP_TOTAL;
        if (off < PROP_PERSON) gen_person(&g, n, &r, &e);
        else if (off < PROP_PERSON + PROP_AUCTION) gen_auction(&g, n, &r, &e);
        else gen_bid(&g, n, &r, &e);
        g.count[e.kind]++;
        render(&e, o.json, !o.out_dir, &l);
        if (fwrite(l.p, 1, l.n, out[e.kind]) != l.n) rc = 1;
    }
    for (int k = 0; k < 3; k++) {
        if (fflush(out[k]) != 0 || ferror(out[k])) rc = 1;
        if (o.out_dir && fclose(out[k]) != 0) rc = 1;
    }
    if (rc) {
        fprintf(stderr, "nexmark_gen: write error: %s\n", strerror(errno));
        return 1;
    }
    int any = o.events > 0;
    fprintf(stderr,
            "nexmark_gen: %" PRId64 " events (%" PRId64 " persons, %" PRId64 " auctions, %" PRId64
            " bids), event time %" PRId64 " .. %" PRId64 " ms\n",
            o.events, g.count[0], g.count[1], g.count[2], any ? g.min_time : 0, any ? g.max_time : 0);
    return 0;
}
