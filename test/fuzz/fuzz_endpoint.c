/*
 * fuzz_endpoint.c - Docker host strings (src/endpoint.c: endpoint_parse, and
 * endpoint_resolve for an explicit host, which adds TLS settings and the display text).
 *
 * Input: a host string as it comes from the host option, DOCKER_HOST or a context's
 * metadata (up to the first NUL). A parsed unix endpoint has an absolute path; a tcp one
 * has a non-empty host and a port 0 (default) or 1..65535, and once resolved a port and
 * a display text; an ssh one a host that ssh cannot read as an option, a user that is
 * not empty and cannot be read as one either, a remote socket path that is absolute, and
 * a display text. No file is read: the explicit host comes first in the resolution order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/endpoint.h"
#include "base/err.h"
#include "fuzz_common.h"

static void check(const endpoint_t *ep, int resolved) {
  if (ep->kind == EP_UNIX) {
    FUZZ_CHECK(ep->unix_path != NULL && ep->unix_path[0] == '/', "unix endpoint without an absolute path");
    FUZZ_CHECK(ep->display != NULL, "unix endpoint without display");
  } else if (ep->kind == EP_SSH) {
    FUZZ_CHECK(ep->host != NULL && ep->host[0] != 0 && ep->host[0] != '-', "ssh host %s", ep->host ? ep->host : "(null)");
    FUZZ_CHECK(ep->ssh_user == NULL || (ep->ssh_user[0] != 0 && ep->ssh_user[0] != '-'), "ssh user");
    FUZZ_CHECK(ep->ssh_path == NULL || ep->ssh_path[0] == '/', "ssh path %s", ep->ssh_path);
    for (const char *p = ep->ssh_user ? ep->ssh_user : ""; *p; p++) FUZZ_CHECK((unsigned char)*p >= 0x20, "control byte in user");
    FUZZ_CHECK(ep->port >= 0 && ep->port <= 65535, "port %d", ep->port);
    FUZZ_CHECK(ep->display != NULL && strncmp(ep->display, "ssh://", 6) == 0, "display %s", ep->display ? ep->display : "(null)");
    FUZZ_CHECK(!ep->tls, "tls on ssh");
  } else {
    FUZZ_CHECK(ep->kind == EP_TCP, "kind %d", (int)ep->kind);
    FUZZ_CHECK(ep->host != NULL && ep->host[0] != 0, "tcp endpoint without a host");
    FUZZ_CHECK(ep->port >= (resolved ? 1 : 0) && ep->port <= 65535, "port %d", ep->port);
    if (resolved) FUZZ_CHECK(ep->display != NULL && strncmp(ep->display, "tcp://", 6) == 0, "display %s",
                             ep->display ? ep->display : "(null)");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *spec = fuzz_strndup(data, size);
  endpoint_t ep;
  err_t err;
  err_init(&err);
  int rc = endpoint_parse(spec, &ep, &err);
  FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));
  if (rc == 0) check(&ep, 0);
  endpoint_free(&ep);
  err_clear(&err);

  /* As the host option, with the TLS variables set one way and the other. */
  endpoint_env_t env = {0};
  for (int tls = 0; tls < 2; tls++) {
    env.tls_verify = tls ? "1" : NULL;
    env.cert_path = tls ? "/certs" : NULL;
    env.docker_config = "/nonexistent-docker-config";
    rc = endpoint_resolve(spec, &env, &ep, &err);
    FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));
    if (rc == 0) {
      check(&ep, 1);
      FUZZ_CHECK(ep.source != NULL, "resolved without a source");
      if (tls && ep.kind == EP_TCP) FUZZ_CHECK(ep.tls && ep.ca_file && ep.cert_file && ep.key_file, "TLS files");
    }
    endpoint_free(&ep);
    err_clear(&err);
  }
  free(spec);
  return 0;
}
