/*
 * auth: the cluster secret and the HMAC-SHA256 challenge-response that every
 * connection runs before anything else (see docs/protocol.md, "Handshake").
 * Internal header of the cluster module.  Only cluster/auth.c includes
 * OpenSSL headers.
 *
 * A proof answers the peer's challenge nonce.  It covers a domain label, the
 * direction (initiator or acceptor), the negotiated version, both nonces and
 * the prover's own name and role as announced in its HELLO:
 *
 *   mac = HMAC-SHA256(secret, "ares-auth-v1" || dir || version
 *                             || challenger_nonce || prover_nonce
 *                             || u16 len(name) || name || role)
 *
 * The direction byte stops a peer from reflecting our challenge back to us on
 * another connection; the name and role stop a proof made for one identity
 * from being replayed for another; fresh nonces on both sides stop replays.
 * Verification compares in constant time.  Pure functions; any thread.
 */
#ifndef CLUSTER_AUTH_H
#define CLUSTER_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "cluster/wire.h"

#define AUTH_SECRET_MAX 4096
#define AUTH_SECRET_WEAK 16 /* shorter secrets load with a warning */

/* Which side of a connection makes a proof. */
enum auth_dir { AUTH_INITIATOR = 'I', AUTH_ACCEPTOR = 'A' };

/* The shared cluster secret.  Plain bytes (the file's content minus trailing
 * newline).  Wiped by auth_secret_fini. */
typedef struct auth_secret {
    unsigned char key[AUTH_SECRET_MAX];
    size_t len;
    char warning[160]; /* set by auth_secret_load when the file loaded but is dubious */
} auth_secret;

/* Load --secret-file.  Trailing "\n" / "\r\n" are trimmed.  Refused: a file
 * that is missing, not a regular file, empty after trimming, over
 * AUTH_SECRET_MAX bytes, or with any permission bit for group or others (as
 * ssh refuses such a key; the message names the mode and the chmod).  A
 * secret under AUTH_SECRET_WEAK bytes loads with s->warning set: log it. */
int auth_secret_load(const char *path, auth_secret *s, xerr *e);
/* From bytes already in memory (tests, embedded clients).  Refuses empty. */
int auth_secret_set(auth_secret *s, const void *key, size_t len, xerr *e);
void auth_secret_fini(auth_secret *s); /* wipe; NULL ok */

/* Fill a fresh random nonce (RAND_bytes).  XE_IO if the RNG fails. */
int auth_nonce(unsigned char nonce[WIRE_NONCE_SIZE]);

/* Compute the proof described above. */
int auth_mac(const auth_secret *s, int dir, uint8_t version,
             const unsigned char challenger_nonce[WIRE_NONCE_SIZE],
             const unsigned char prover_nonce[WIRE_NONCE_SIZE], const char *name, size_t name_len,
             uint8_t role, unsigned char mac[WIRE_MAC_SIZE]);
/* Recompute and compare in constant time: 0 if equal, XE_AUTH if not. */
int auth_verify(const auth_secret *s, int dir, uint8_t version,
                const unsigned char challenger_nonce[WIRE_NONCE_SIZE],
                const unsigned char prover_nonce[WIRE_NONCE_SIZE], const char *name,
                size_t name_len, uint8_t role, const unsigned char mac[WIRE_MAC_SIZE]);

#endif
