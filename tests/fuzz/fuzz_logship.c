/*
 * libFuzzer target for what a stream's log copy accepts from the home
 * (LOGSHIP, cluster/shadow.c): engine_log_import (the shipment header, the
 * records put at their offsets, the stream's counters) and fmt_decoder_load
 * (a client ingest session's saved decoder, which the copy goes on with).
 *
 * Input: one control byte, then the payload.
 *   bit 0  the payload is a saved decoder (bit 1: JSON, else CSV), then
 *          input bytes fed to it after a 0xff byte;
 *   bit 2  (shipment) fix up the header's version so that the fuzzer gets
 *          to the records.
 * Nothing may crash; an import that succeeds must leave a log that exports
 * and commits; a refused one must not poison the epoch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "exec/exec.h"

static engine *eng;
static const char *const names[] = {"ts", "k", "v"};
static const sql_type types[] = {TY_BIGINT, TY_BIGINT, TY_TEXT};
static const fmt_schema schema = {3, names, types};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t ctl = data[0];
    data++;
    size--;
    xerr err;
    if (ctl & 1) {
        const uint8_t *sep = memchr(data, 0xff, size);
        size_t n = sep ? (size_t)(sep - data) : size;
        fmt_decoder *d;
        if (fmt_decoder_new(ctl & 2 ? FMT_JSON : FMT_CSV, &schema, NULL, &d)) abort();
        batch b;
        if (batch_init(&b, 3, 16)) abort();
        if (fmt_decoder_load(d, data, n, &err) == 0 && sep) {
            (void)fmt_decode(d, sep + 1, size - n - 1, &b, &err);
            (void)fmt_decode_finish(d, &b, &err);
        }
        batch_fini(&b);
        fmt_decoder_free(d);
        return 0;
    }
    if (!eng) {
        engine_opts o = {0};
        o.memory = 1;
        exec_out none = {0};
        if (engine_open(&o, &eng, &err) ||
            engine_exec_sql(eng, "CREATE STREAM s (ts BIGINT, k BIGINT, v TEXT) WITH (timestamp = 'ts');", &none, &err))
            abort();
    }
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    if ((ctl & 4) && size >= 4) be32_put(buf, 1);
    uint64_t end;
    if (engine_log_import(eng, "s", buf, size, &end, &err) == 0) {
        sbuf out;
        sbuf_init(&out);
        uint64_t next;
        if (engine_log_export(eng, "s", 0, 1 << 20, &out, &next, &err)) abort();
        sbuf_fini(&out);
    }
    if (engine_commit(eng, &err)) abort();
    free(buf);
    return 0;
}
