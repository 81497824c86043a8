/*
 * tlsconn.c - TLS on memory BIOs for the upgraded exec connection (see tlsconn.h).
 */
#include "engine/tlsconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/buf.h"

/* A CA bundle, a certificate chain or a key: small files. */
#define MAX_TLS_FILE_BYTES (4u * 1024u * 1024u)

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

/* ---- the client context: certificates read once, each failure naming its file ---- */

static int file_error(err_t *err, const char *what, const char *path, const char *display, const char *why) {
  return err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "TLS %s for the Docker engine at %s cannot be loaded from %s: %s.", what,
                     display, path, why);
}

/* Reads a whole file (bounded) into out; -1 with why set. Never blocks on a FIFO. */
static int read_tls_file(const char *path, buf_t *out, char *why, size_t cap) {
  buf_init(out, MAX_TLS_FILE_BYTES);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(why, cap, "%s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(why, cap, "%s", strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, cap, "%s", S_ISDIR(st.st_mode) ? strerror(EISDIR) : "it is not a regular file");
    goto fail;
  }
  uint8_t chunk[16384];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      snprintf(why, cap, "%s", strerror(errno));
      goto fail;
    }
    if (n == 0) break;
    if (out->len + (size_t)n > MAX_TLS_FILE_BYTES) {
      snprintf(why, cap, "it is larger than %u MiB", MAX_TLS_FILE_BYTES >> 20);
      goto fail;
    }
    if (buf_append(out, chunk, (size_t)n) != 0) {
      snprintf(why, cap, "out of memory");
      goto fail;
    }
  }
  close(fd);
  return 0;
fail:
  close(fd);
  buf_free(out);
  return -1;
}

/* No passphrase prompt (OpenSSL's default reads the terminal): an encrypted key fails. */
static int no_passphrase(char *buf, int size, int rwflag, void *u) {
  (void)buf;
  (void)size;
  (void)rwflag;
  (void)u;
  return -1;
}

/* The file's bytes as a read-only BIO (NULL when out of memory); frees nothing of b. */
static BIO *mem_bio(const buf_t *b) { return BIO_new_mem_buf(b->data ? (const void *)b->data : "", (int)b->len); }

/* ca.pem into the context's store: at least one PEM certificate, as libcurl needs. */
static int load_ca(SSL_CTX *ctx, const char *path, const char *display, err_t *err) {
  char why[256];
  buf_t b;
  if (read_tls_file(path, &b, why, sizeof(why)) != 0) return file_error(err, "CA certificate", path, display, why);
  BIO *bio = mem_bio(&b);
  int oom = bio == NULL;
  STACK_OF(X509_INFO) *infos = bio ? PEM_X509_INFO_read_bio(bio, NULL, no_passphrase, NULL) : NULL;
  X509_STORE *store = SSL_CTX_get_cert_store(ctx);
  int added = 0;
  for (int i = 0; infos != NULL && i < sk_X509_INFO_num(infos); i++) {
    X509_INFO *info = sk_X509_INFO_value(infos, i);
    if (info->x509 != NULL && X509_STORE_add_cert(store, info->x509) == 1) added++;
  }
  sk_X509_INFO_pop_free(infos, X509_INFO_free);
  BIO_free(bio);
  buf_free(&b);
  ERR_clear_error();
  if (oom) return err_oom(err);
  if (added == 0) return file_error(err, "CA certificate", path, display, "it holds no PEM certificate");
  return 0;
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 || errno != ENOENT;
}

/* cert.pem (the certificate, then its chain) and key.pem. Neither file there: no client
 * certificate (as the docker CLI); one of them there: both must load. */
static int load_client_cert(SSL_CTX *ctx, const endpoint_t *ep, const char *display, err_t *err) {
  const char *cert = ep->cert_file, *key = ep->key_file;
  if (cert == NULL || key == NULL || (!file_exists(cert) && !file_exists(key))) return 0;
  char why[256];
  buf_t b;
  if (read_tls_file(cert, &b, why, sizeof(why)) != 0) return file_error(err, "client certificate", cert, display, why);
  BIO *bio = mem_bio(&b);
  int oom = bio == NULL;
  X509 *leaf = bio ? PEM_read_bio_X509_AUX(bio, NULL, no_passphrase, NULL) : NULL;
  int ok = leaf != NULL && SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_clear_chain_certs(ctx) == 1;
  X509_free(leaf);
  X509 *ca;
  while (ok && (ca = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL)) != NULL) {
    if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
      X509_free(ca);
      ok = 0;
    }
  }
  BIO_free(bio);
  buf_free(&b);
  ERR_clear_error();
  if (oom) return err_oom(err);
  if (!ok) return file_error(err, "client certificate", cert, display, "it holds no PEM certificate");
  if (read_tls_file(key, &b, why, sizeof(why)) != 0) return file_error(err, "client key", key, display, why);
  bio = mem_bio(&b);
  oom = bio == NULL;
  EVP_PKEY *pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : NULL;
  int have_key = pkey != NULL;
  int used = have_key && SSL_CTX_use_PrivateKey(ctx, pkey) == 1 && SSL_CTX_check_private_key(ctx) == 1;
  EVP_PKEY_free(pkey);
  BIO_free(bio);
  buf_free(&b);
  ERR_clear_error();
  if (oom) return err_oom(err);
  if (!have_key)
    return file_error(err, "client key", key, display, "it holds no PEM private key (or only an encrypted one)");
  if (!used) {
    snprintf(why, sizeof(why), "it does not match the client certificate %s", cert);
    return file_error(err, "client key", key, display, why);
  }
  return 0;
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
  SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
  if (ep->tls_verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* The CA file when there is a certificate folder (it must load, as libcurl's
     * CURLOPT_CAINFO must), the system's store only when there is none. */
    if (ep->ca_file != NULL) {
      if (load_ca(ctx, ep->ca_file, display, err) != 0) goto fail;
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "TLS CA certificates for the Docker engine at %s cannot be loaded from the system store.",
                  display);
      goto fail;
    }
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
  }
  if (load_client_cert(ctx, ep, display, err) != 0) goto fail;
  return ctx;
fail:
  ERR_clear_error();
  SSL_CTX_free(ctx);
  return NULL;
}

int tls_ctx_has_client_cert(const tls_ctx_t *ctx) { return ctx != NULL && SSL_CTX_get0_certificate(ctx) != NULL; }

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
