/*
 * words_gen: a seeded, rate-controlled stream of sentences for the windowed
 * word count (bench/workloads/wordcount.sql), the paper's first workload.
 *
 *   words_gen [--rows N] [--seed S] [--rate R] [--event-rate E]
 *             [--vocab V] [--zipf Z] [--min-words A] [--max-words B] [--part I/P]
 *             [--no-header]
 *
 * Output: CSV `ts,line` on stdout.  Line n has A..B words (uniform), each
 * drawn from a fixed vocabulary of V words by a Zipf law of exponent Z
 * (word k, 1-based by rank, with probability proportional to 1 / k^Z; Z = 0
 * is uniform), separated by single spaces.  The vocabulary is made, not
 * read: word k is k - 1 written in bijective base 32 over 32 two-letter
 * syllables ("ka", "lo", ...), so the most frequent words are the shortest
 * and no two words are equal.  No word holds a comma, a quote or a space.
 *
 * Time: line n happens at 1704067200000 + n * 1000 / E ms (epoch
 * milliseconds, never decreasing), so the output is in event-time order.
 * --rate paces the output at R lines per second of wall-clock time (0, the
 * default: as fast as possible); the event times do not depend on it.
 *
 * Determinism: every line draws from its own PRNG seeded by (seed, n).
 * --part I/P writes only the lines n with n mod P = I (each with its header
 * line), the same lines as without it: P generators with the same options
 * write a round-robin split of one input into P partitions, each in
 * event-time order, and together exactly the input of one.  --rate is then
 * the rate of all P together (line n is still due at n / R s).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/workloads/gen_common.h"

#define EPOCH_MS 1704067200000LL
#define VOCAB_MAX (32 + 32 * 32 + 32 * 32 * 32)

static const char SYL[32][3] = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ba", "de", "fu",
                                "go", "hi", "ja", "ko", "li", "ma", "no", "pe", "qu", "ri", "se",
                                "ti", "un", "ve", "wa", "xo", "ye", "zu", "an", "el", "or"};

/* word k (0-based rank) into w; returns its length */
static size_t word_of(int64_t k, char *w)
{
    char rev[8];
    int n = 0;
    for (int64_t x = k + 1; x > 0; x = (x - 1) / 32) rev[n++] = (char)((x - 1) % 32);
    size_t len = 0;
    while (n > 0) {
        memcpy(w + len, SYL[(int)rev[--n]], 2);
        len += 2;
    }
    return len;
}

static void usage(FILE *f)
{
    fputs("usage: words_gen [options]  (CSV ts,line on stdout)\n"
          "  --rows N          sentences (default 100000)\n"
          "  --seed S          PRNG seed (default 1)\n"
          "  --rate R          pace the output at R lines/s of wall-clock time (default 0: unpaced)\n"
          "  --event-rate E    lines per second of event time (default 1000)\n"
          "  --vocab V         distinct words, 1..33824 (default 1000)\n"
          "  --zipf Z          Zipf exponent of the word draw, 0 = uniform (default 1.0)\n"
          "  --min-words A     words per line at least (default 3)\n"
          "  --max-words B     words per line at most (default 12)\n"
          "  --part I/P        only the lines n with n mod P = I (default 0/1: all)\n"
          "  --no-header       no CSV header line\n",
          f);
}

int main(int argc, char **argv)
{
    int64_t rows = 100000, seed = 1, rate = 0, event_rate = 1000, vocab = 1000, wmin = 3, wmax = 12;
    int64_t part = 0, nparts = 1;
    double zipf = 1.0;
    int header = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--rows")) bad = gen_parse_i64(v, 0, INT64_MAX / 2, &rows), i++;
        else if (!strcmp(a, "--seed")) bad = gen_parse_i64(v, 0, INT64_MAX, &seed), i++;
        else if (!strcmp(a, "--rate")) bad = gen_parse_i64(v, 0, 1000000000, &rate), i++;
        else if (!strcmp(a, "--event-rate")) bad = gen_parse_i64(v, 1, 1000000000, &event_rate), i++;
        else if (!strcmp(a, "--vocab")) bad = gen_parse_i64(v, 1, VOCAB_MAX, &vocab), i++;
        else if (!strcmp(a, "--zipf")) bad = gen_parse_double(v, 0, 10, &zipf), i++;
        else if (!strcmp(a, "--min-words")) bad = gen_parse_i64(v, 1, 1000, &wmin), i++;
        else if (!strcmp(a, "--max-words")) bad = gen_parse_i64(v, 1, 1000, &wmax), i++;
        else if (!strcmp(a, "--part")) bad = gen_parse_part(v, &part, &nparts), i++;
        else if (!strcmp(a, "--no-header")) header = 0;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "words_gen: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "words_gen: bad value for %s: '%s'\n", a, v ? v : "(missing)");
            return 2;
        }
    }
    if (wmin > wmax) {
        fprintf(stderr, "words_gen: --min-words %lld is above --max-words %lld\n", (long long)wmin, (long long)wmax);
        return 2;
    }
    gen_zipf z;
    if (gen_zipf_init(&z, vocab, zipf)) {
        fprintf(stderr, "words_gen: out of memory\n");
        return 1;
    }
    /* the words, made once: offsets into one buffer */
    char *words = malloc((size_t)vocab * 6);
    uint8_t *wlen = malloc((size_t)vocab);
    if (!words || !wlen) {
        fprintf(stderr, "words_gen: out of memory\n");
        return 1;
    }
    for (int64_t k = 0; k < vocab; k++) wlen[k] = (uint8_t)word_of(k, words + k * 6);
    static char buf[1 << 20];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    if (header) fputs("ts,line\n", stdout);
    FILE *outs[1] = {stdout};
    uint64_t start = clock_mono_ns();
    char line[1000 * 7 + 32];
    for (int64_t n = part; n < rows; n += nparts) {
        if (rate > 0 && ((n / nparts) & 63) == 0) gen_pace(rate, start, n, outs, 1);
        gen_rng r = gen_for_row((uint64_t)seed, 0, n);
        int64_t nw = wmin + gen_below(&r, wmax - wmin + 1);
        size_t len = 0;
        for (int64_t w = 0; w < nw; w++) {
            int64_t k = gen_zipf_draw(&z, &r) - 1;
            if (w) line[len++] = ' ';
            memcpy(line + len, words + k * 6, wlen[k]);
            len += wlen[k];
        }
        line[len] = 0;
        printf("%lld,%s\n", (long long)(EPOCH_MS + n * 1000 / event_rate), line);
    }
    if (fflush(stdout) || ferror(stdout)) {
        perror("words_gen: stdout");
        return 1;
    }
    gen_zipf_fini(&z);
    free(words);
    free(wlen);
    return 0;
}
