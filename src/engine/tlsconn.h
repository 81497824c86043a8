/*
 * tlsconn.h - TLS for the one connection libcurl does not carry: the upgraded exec
 * connection (hijack.c), when the engine is a tcp endpoint with TLS.
 *
 * Owns: an OpenSSL client session on memory BIOs; the context (tls_ctx_t, settings and
 * certificates) belongs to the engine. It never touches a socket:
 * the caller feeds it the bytes read from the connection and sends what it produces, so
 * the connection stays a plain libuv stream with libuv's half-close and flow control.
 * The settings are the ones libcurl gets for every other request (engine.c): peer and
 * host name verification with DOCKER_TLS_VERIFY (or a context without SkipTLSVerify),
 * the CA, client certificate and key from DOCKER_CERT_PATH.
 */
#ifndef SBX_TLSCONN_H
#define SBX_TLSCONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/endpoint.h"
#include "base/err.h"

typedef struct ssl_ctx_st tls_ctx_t; /* OpenSSL's SSL_CTX */
typedef struct tls_conn tls_conn_t;

/* The client settings for ep (ep->tls set), certificates read once: made by the engine
 * when it resolves its endpoint, before any connection, and shared by every exec
 * connection; libcurl's requests get the same files (engine.c), so this is the one check
 * of them for both paths. When verifying, ca.pem must hold a PEM certificate (the
 * system's store serves only when there is no certificate folder at all); cert.pem and
 * key.pem are used when either exists, and then both must load. NULL with err set
 * (docker_unavailable, naming the file and why) when a file cannot be loaded. */
tls_ctx_t *tls_ctx_new(const endpoint_t *ep, const char *display, err_t *err);
void tls_ctx_free(tls_ctx_t *ctx);
/* 1 when ctx presents a client certificate (cert.pem and key.pem were loaded). */
int tls_ctx_has_client_cert(const tls_ctx_t *ctx);

/* A client session with ctx's settings, for ep's host. NULL with err set. */
tls_conn_t *tls_conn_new(tls_ctx_t *ctx, const endpoint_t *ep, const char *display, err_t *err);
void tls_conn_free(tls_conn_t *t);

/* Advances the handshake: 1 when it is complete, 0 while it waits for the peer's bytes,
 * -1 with err set when it failed (verification included). */
int tls_conn_handshake(tls_conn_t *t, err_t *err);

/* Ciphertext the connection received. 0, or -1 when out of memory. */
int tls_conn_feed(tls_conn_t *t, const uint8_t *data, size_t len);

/* Decrypted bytes, up to cap: n > 0, 0 when more ciphertext is needed, TLS_CONN_EOF when
 * the peer sent close_notify, -1 with err set on a protocol error. */
#define TLS_CONN_EOF (-2)
ssize_t tls_conn_read(tls_conn_t *t, uint8_t *out, size_t cap, err_t *err);

/* Encrypts len bytes (after the handshake). 0, or -1 with err set. */
int tls_conn_write(tls_conn_t *t, const uint8_t *data, size_t len, err_t *err);

/* Queues close_notify: the peer reads end of input; reading here goes on. */
void tls_conn_close_notify(tls_conn_t *t);

/* Ciphertext waiting to be sent; takes up to cap bytes into out, returns how many. */
size_t tls_conn_pending(const tls_conn_t *t);
size_t tls_conn_take(tls_conn_t *t, uint8_t *out, size_t cap);

#endif
