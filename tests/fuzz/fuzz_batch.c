/*
 * libFuzzer target for batch_decode and val_key_decode.  The input is decoded
 * as it is (almost always a checksum failure) and with a correct CRC32C put
 * at its end, which reaches the value parser.  A batch that decodes must
 * encode and decode to the same values, and each row's key must decode back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "exec/batch.h"

static void same(const val *x, const val *y)
{
    if (x->type != y->type || !val_equal(x, y)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    batch b, c, keys;
    memset(&b, 0, sizeof b);
    if (batch_init(&c, 1, 1) < 0 || batch_init(&keys, 1, 1) < 0) abort();
    xerr e;
    val kv[8];
    (void)batch_decode(data, size, &b, &e);
    (void)val_key_decode(data, size, kv, 8, &keys, &e);

    uint8_t *buf = malloc(size + 4);
    if (!buf) return 0;
    memcpy(buf, data, size);
    be32_put(buf + size, crc32c(0, buf, size));
    if (batch_decode(buf, size + 4, &b, &e) == 0) {
        sbuf s, k;
        sbuf_init(&s);
        sbuf_init(&k);
        if (batch_encode(&b, &s) < 0 || batch_decode(s.p, s.len, &c, &e) < 0) abort();
        if (c.nrows != b.nrows || c.ncols != b.ncols) abort();
        for (int r = 0; r < b.nrows; r++) {
            const val *row = batch_row(&b, r);
            for (int col = 0; col < b.ncols; col++) {
                same(&row[col], &batch_row(&c, r)[col]);
                (void)val_hash(&row[col], 1);
                if (col) (void)val_compare(&row[col], &row[col - 1]);
            }
            int n = b.ncols < 8 ? b.ncols : 8;
            sbuf_reset(&k);
            if (val_key_encode(row, n, &k) < 0) abort();
            batch_reset(&keys);
            if (val_key_decode(k.p, k.len, kv, n, &keys, &e) != (int)k.len) abort();
            for (int col = 0; col < n; col++) {
                /* -0.0 and NaN payloads are normalised in keys; compare by value. */
                if (kv[col].type != row[col].type || val_compare(&kv[col], &row[col]) != 0) abort();
            }
        }
        sbuf_fini(&s);
        sbuf_fini(&k);
    }
    free(buf);
    batch_fini(&b);
    batch_fini(&c);
    batch_fini(&keys);
    return 0;
}
