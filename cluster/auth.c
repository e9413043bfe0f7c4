/*
 * auth.c: the cluster secret file and the HMAC-SHA256 proofs of auth.h.
 * The only file of Ares that talks to libcrypto.  Stateless; any thread.
 */
#include "cluster/auth.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define AUTH_LABEL "ares-auth-v1"

int auth_secret_set(auth_secret *s, const void *key, size_t len, xerr *e)
{
    memset(s, 0, sizeof *s);
    if (len == 0) return xerr_set(e, XE_INVAL, "the cluster secret is empty");
    if (len > AUTH_SECRET_MAX)
        return xerr_set(e, XE_INVAL, "the cluster secret is longer than %d bytes",
                        AUTH_SECRET_MAX);
    memcpy(s->key, key, len);
    s->len = len;
    return 0;
}

void auth_secret_fini(auth_secret *s)
{
    if (s) OPENSSL_cleanse(s, sizeof *s);
}

int auth_secret_load(const char *path, auth_secret *s, xerr *e)
{
    unsigned char buf[AUTH_SECRET_MAX + 2];
    size_t n = 0;
    int rc = 0;
    memset(s, 0, sizeof *s);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return xerr_set(e, XE_IO, "secret file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = xerr_set(e, XE_IO, "secret file %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = xerr_set(e, XE_INVAL, "secret file %s is not a regular file", path);
        goto out;
    }
    /* as ssh does with a private key: a secret others can read or write is
     * no secret, so it is refused, not used with a warning */
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        rc = xerr_set(e, XE_INVAL, "secret file %s has mode %04o: it is open to %s, so it is refused; "
                      "chmod 600 %s", path, (unsigned)(st.st_mode & 07777),
                      st.st_mode & (S_IWGRP | S_IWOTH) ? "writes by group or others" : "group or others", path);
        goto out;
    }
    for (;;) {
        ssize_t k = read(fd, buf + n, sizeof buf - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            rc = xerr_set(e, XE_IO, "secret file %s: %s", path, strerror(errno));
            goto out;
        }
        if (k == 0) break;
        n += (size_t)k;
        if (n == sizeof buf) break;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
    if (n > AUTH_SECRET_MAX) {
        rc = xerr_set(e, XE_INVAL, "secret file %s is longer than %d bytes", path,
                      AUTH_SECRET_MAX);
        goto out;
    }
    if (n == 0) {
        rc = xerr_set(e, XE_INVAL, "secret file %s is empty", path);
        goto out;
    }
    if ((rc = auth_secret_set(s, buf, n, e)) < 0) goto out;
    if (n < AUTH_SECRET_WEAK)
        snprintf(s->warning, sizeof s->warning,
                 "secret in %s is only %zu bytes; use at least %d random bytes", path, n,
                 AUTH_SECRET_WEAK);
out:
    OPENSSL_cleanse(buf, sizeof buf);
    close(fd);
    return rc;
}

int auth_nonce(unsigned char nonce[WIRE_NONCE_SIZE])
{
    return RAND_bytes(nonce, WIRE_NONCE_SIZE) == 1 ? 0 : XE_IO;
}

int auth_mac(const auth_secret *s, int dir, uint8_t version,
             const unsigned char challenger_nonce[WIRE_NONCE_SIZE],
             const unsigned char prover_nonce[WIRE_NONCE_SIZE], const char *name, size_t name_len,
             uint8_t role, unsigned char mac[WIRE_MAC_SIZE])
{
    if (name_len > WIRE_NAME_MAX) return XE_INVAL;
    /* label + dir + version + 2 nonces + u16 len + name + role */
    unsigned char msg[sizeof AUTH_LABEL - 1 + 2 + 2 * WIRE_NONCE_SIZE + 2 + WIRE_NAME_MAX + 1];
    size_t n = 0;
    memcpy(msg, AUTH_LABEL, sizeof AUTH_LABEL - 1);
    n += sizeof AUTH_LABEL - 1;
    msg[n++] = (unsigned char)dir;
    msg[n++] = version;
    memcpy(msg + n, challenger_nonce, WIRE_NONCE_SIZE);
    n += WIRE_NONCE_SIZE;
    memcpy(msg + n, prover_nonce, WIRE_NONCE_SIZE);
    n += WIRE_NONCE_SIZE;
    be16_put(msg + n, (uint16_t)name_len);
    n += 2;
    memcpy(msg + n, name, name_len);
    n += name_len;
    msg[n++] = role;
    unsigned int mlen = 0;
    if (!HMAC(EVP_sha256(), s->key, (int)s->len, msg, n, mac, &mlen) || mlen != WIRE_MAC_SIZE)
        return XE_IO;
    return 0;
}

int auth_verify(const auth_secret *s, int dir, uint8_t version,
                const unsigned char challenger_nonce[WIRE_NONCE_SIZE],
                const unsigned char prover_nonce[WIRE_NONCE_SIZE], const char *name,
                size_t name_len, uint8_t role, const unsigned char mac[WIRE_MAC_SIZE])
{
    unsigned char want[WIRE_MAC_SIZE];
    int rc = auth_mac(s, dir, version, challenger_nonce, prover_nonce, name, name_len, role, want);
    if (rc == 0 && CRYPTO_memcmp(want, mac, WIRE_MAC_SIZE) != 0) rc = XE_AUTH;
    OPENSSL_cleanse(want, sizeof want);
    return rc;
}
