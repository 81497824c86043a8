/*
 * tlsconn.c - TLS on memory BIOs for the upgraded exec connection (see tlsconn.h).
 */
#include "engine/tlsconn.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct tls_conn {
  SSL *ssl;
  BIO *in;  /* ciphertext from the peer; owned by ssl */
  BIO *out; /* ciphertext for the peer; owned by ssl */
  char display[256];
};

/* The first queued OpenSSL error (or the verification result), for messages. */
static void describe(tls_conn_t *t, char *buf, size_t cap) {
  unsigned long e = ERR_get_error();
  long v = t->ssl ? SSL_get_verify_result(t->ssl) : X509_V_OK;
  if (v != X509_V_OK) {
    snprintf(buf, cap, "certificate verification failed: %s", X509_verify_cert_error_string(v));
  } else if (e != 0) {
    ERR_error_string_n(e, buf, cap);
  } else {
    snprintf(buf, cap, "connection closed during the handshake");
  }
  ERR_clear_error();
}

static int report(tls_conn_t *t, err_t *err, const char *what) {
  char why[256];
  describe(t, why, sizeof(why));
  return err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "TLS %s with the Docker engine at %s failed: %s", what, t->display, why);
}

tls_ctx_t *tls_ctx_new(const endpoint_t *ep, const char *display, err_t *err) {
  ERR_clear_error();
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == NULL) {
    ERR_clear_error();
    err_oom(err);
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (ep->tls_verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* Like libcurl: the CA file when there is one, else the system's store. */
    int ok = ep->ca_file != NULL && access(ep->ca_file, R_OK) == 0
                 ? SSL_CTX_load_verify_locations(ctx, ep->ca_file, NULL)
                 : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
      err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "TLS CA certificates for the Docker engine at %s cannot be loaded from %s.",
                  display, ep->ca_file ? ep->ca_file : "the system store");
      goto fail;
    }
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
  }
  /* The client certificate is optional (an engine may not ask for one); when the files
   * are there, they must load. */
  if (ep->cert_file != NULL && ep->key_file != NULL && access(ep->cert_file, R_OK) == 0) {
    if (SSL_CTX_use_certificate_chain_file(ctx, ep->cert_file) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, ep->key_file, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
      err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "TLS client certificate %s or key %s for the Docker engine at %s cannot be loaded.",
                  ep->cert_file, ep->key_file, display);
      goto fail;
    }
  }
  return ctx;
fail:
  ERR_clear_error();
  SSL_CTX_free(ctx);
  return NULL;
}

void tls_ctx_free(tls_ctx_t *ctx) { SSL_CTX_free(ctx); }

tls_conn_t *tls_conn_new(tls_ctx_t *ctx, const endpoint_t *ep, const char *display, err_t *err) {
  tls_conn_t *t = calloc(1, sizeof(*t));
  if (t == NULL) {
    err_oom(err);
    return NULL;
  }
  snprintf(t->display, sizeof(t->display), "%s", display);
  ERR_clear_error();
  t->ssl = SSL_new(ctx); /* holds its own reference to ctx */
  if (t->ssl == NULL) goto fail;
  t->in = BIO_new(BIO_s_mem());
  t->out = BIO_new(BIO_s_mem());
  if (t->in == NULL || t->out == NULL) {
    BIO_free(t->in);
    BIO_free(t->out);
    t->in = t->out = NULL;
    goto fail;
  }
  /* A memory BIO that runs dry asks for more instead of reporting end of file. */
  BIO_set_mem_eof_return(t->in, -1);
  SSL_set_bio(t->ssl, t->in, t->out);
  SSL_set_connect_state(t->ssl);
  unsigned char addr[16];
  int is_ip = inet_pton(AF_INET, ep->host, addr) == 1 || inet_pton(AF_INET6, ep->host, addr) == 1;
  if (!is_ip && SSL_set_tlsext_host_name(t->ssl, ep->host) != 1) goto fail;
  if (ep->tls_verify) {
    X509_VERIFY_PARAM *param = SSL_get0_param(t->ssl);
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, ep->host) : X509_VERIFY_PARAM_set1_host(param, ep->host, 0);
    if (ok != 1) goto fail;
  }
  return t;
fail:
  report(t, err, "setup");
  tls_conn_free(t);
  return NULL;
}

void tls_conn_free(tls_conn_t *t) {
  if (t == NULL) return;
  SSL_free(t->ssl); /* frees both BIOs */
  free(t);
}

int tls_conn_handshake(tls_conn_t *t, err_t *err) {
  ERR_clear_error();
  int rc = SSL_do_handshake(t->ssl);
  if (rc == 1) return 1;
  int e = SSL_get_error(t->ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
  report(t, err, "handshake");
  return -1;
}

int tls_conn_feed(tls_conn_t *t, const uint8_t *data, size_t len) {
  while (len > 0) {
    int n = len > (1u << 30) ? (1 << 30) : (int)len;
    int w = BIO_write(t->in, data, n);
    if (w <= 0) return -1;
    data += w;
    len -= (size_t)w;
  }
  return 0;
}

ssize_t tls_conn_read(tls_conn_t *t, uint8_t *out, size_t cap, err_t *err) {
  ERR_clear_error();
  int n = SSL_read(t->ssl, out, cap > (1u << 30) ? (1 << 30) : (int)cap);
  if (n > 0) return n;
  int e = SSL_get_error(t->ssl, n);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
  if (e == SSL_ERROR_ZERO_RETURN) return TLS_CONN_EOF;
  report(t, err, "read");
  return -1;
}

int tls_conn_write(tls_conn_t *t, const uint8_t *data, size_t len, err_t *err) {
  while (len > 0) {
    ERR_clear_error();
    int n = SSL_write(t->ssl, data, len > (1u << 30) ? (1 << 30) : (int)len);
    if (n <= 0) return report(t, err, "write");
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

void tls_conn_close_notify(tls_conn_t *t) {
  ERR_clear_error();
  (void)SSL_shutdown(t->ssl); /* 0: sent, the peer's close_notify not seen yet */
  ERR_clear_error();
}

size_t tls_conn_pending(const tls_conn_t *t) {
  return BIO_ctrl_pending(t->out);
}

size_t tls_conn_take(tls_conn_t *t, uint8_t *out, size_t cap) {
  int n = BIO_read(t->out, out, cap > (1u << 30) ? (1 << 30) : (int)cap);
  return n > 0 ? (size_t)n : 0;
}
