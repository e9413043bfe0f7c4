/* Unit tests for base/: error reports, sbuf, hash64, crc32c, big-endian helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static void test_crc32c_known_vector(void **state)
{
    (void)state;
    /* The standard check value for CRC-32C over "123456789". */
    assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
    /* Incremental equals one-shot. */
    uint32_t c = crc32c(0, "1234", 4);
    assert_int_equal(crc32c(c, "56789", 5), 0xe3069283u);
    unsigned char zeros[32] = {0};
    assert_int_equal(crc32c(0, zeros, 32), 0x8a9136aau);
}

static void test_sbuf(void **state)
{
    (void)state;
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < 1000; i++) assert_int_equal(sbuf_printf(&b, "%d,", i), 0);
    assert_true(b.len > 2000);
    assert_memory_equal(b.p, "0,1,2,", 6);
    sbuf_reset(&b);
    assert_int_equal(b.len, 0);
    sbuf_adds(&b, "abc");
    char *s = sbuf_steal(&b);
    assert_string_equal(s, "abc");
    assert_null(b.p);
    free(s);
    sbuf_fini(&b);
}

static void test_xerr(void **state)
{
    (void)state;
    xerr e;
    assert_int_equal(xerr_at(&e, XE_SYNTAX, 2, 14, "unexpected '%s'", "FORM"), XE_SYNTAX);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 14);
    assert_string_equal(e.msg, "unexpected 'FORM'");
    assert_int_equal(xerr_set(NULL, XE_IO, "x"), XE_IO);
}

static void test_hash_and_be(void **state)
{
    (void)state;
    assert_true(hash64("a", 1, 0) != hash64("b", 1, 0));
    assert_true(hash64("abcdefghij", 10, 0) != hash64("abcdefghij", 10, 1));
    assert_int_equal(hash64("abcdefghij", 10, 7), hash64("abcdefghij", 10, 7));
    unsigned char k[8];
    be64_put(k, 0x0102030405060708ULL);
    assert_int_equal(k[0], 1);
    assert_int_equal(k[7], 8);
    assert_true(be64_get(k) == 0x0102030405060708ULL);
    assert_int_equal(str_distance("price", "prcie"), 2);
    assert_int_equal(str_distance("Price", "price"), 0);
}

/* base_huge_heap, in a child (it changes the process's malloc settings):
 * where the kernel offers transparent huge pages for madvise'd memory, the
 * reserve is advised, in whole 2 MB pages; either way malloc goes on
 * working, and a 0 reserve does nothing. */
static void test_huge_heap(void **state)
{
    (void)state;
    assert_int_equal(base_huge_heap(0), 0);
    char mode[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(mode, sizeof mode, f)) mode[0] = '\0';
        fclose(f);
    }
    int offered = strstr(mode, "[always]") || strstr(mode, "[madvise]");
#ifdef __SANITIZE_ADDRESS__
    offered = 0; /* ASan's allocator has no brk heap to advise */
#endif
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        size_t n = base_huge_heap(64);
        int ok = n % (2u << 20) == 0 && n <= (68u << 20) && (!offered || n >= (32u << 20));
        for (int i = 0; i < 10000 && ok; i++) {
            char *p = malloc((size_t)(i % 97) * 100 + 1);
            ok = p != NULL;
            if (p) p[0] = 1;
            free(p);
        }
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ENOSPC is a full disk wherever it comes from; EIO only when the file
 * system has (next to) nothing left, which /tmp has not here. */
static void test_disk_full(void **state)
{
    (void)state;
    char buf[512];
    assert_int_equal(disk_full("/tmp", ENOSPC, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "the disk is full ("));
    assert_non_null(strstr(buf, "KiB free on the file system of /tmp)"));
    assert_int_equal(disk_full("/tmp", EDQUOT, buf, sizeof buf), 1);
    assert_int_equal(disk_full("/tmp", EIO, buf, sizeof buf), 0);
    assert_int_equal(disk_full("/tmp", EACCES, buf, sizeof buf), 0);
    assert_int_equal(disk_full("/nonexistent/dir", ENOSPC, buf, sizeof buf), 1);
    assert_string_equal(buf, "the disk is full (on the file system of /nonexistent/dir)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_heap),
        cmocka_unit_test(test_crc32c_known_vector),
        cmocka_unit_test(test_sbuf),
        cmocka_unit_test(test_xerr),
        cmocka_unit_test(test_hash_and_be),
        cmocka_unit_test(test_disk_full),
    };
    return cmocka_run_group_tests_name("base", tests, NULL, NULL);
}
