/*
 * endpoint.h - where the Docker engine is, resolved as the docker CLI resolves it.
 *
 * Owns: an endpoint_t owns its strings. Resolution order: an explicit host, DOCKER_HOST,
 * DOCKER_CONTEXT, currentContext in $DOCKER_CONFIG/config.json (default ~/.docker), the
 * default socket unix:///var/run/docker.sock. TLS follows DOCKER_TLS_VERIFY (any
 * non-empty value verifies), DOCKER_TLS and DOCKER_CERT_PATH, or a context's TLS folder.
 * Reads only small local files (the context metadata), bounded to 1 MiB each.
 */
#ifndef SBX_ENDPOINT_H
#define SBX_ENDPOINT_H

#include "base/err.h"

/* EP_SSH: ssh://[user@]host[:port][/socket/path], reached as the docker CLI reaches it: an
 * `ssh` process per connection running `docker system dial-stdio` on the remote side
 * (engine/sshconn.h); a path names the remote engine's socket (docker --host=unix://PATH). */
typedef enum endpoint_kind { EP_UNIX = 1, EP_TCP = 2, EP_SSH = 3 } endpoint_kind_t;

typedef struct endpoint_env {
  const char *docker_host;
  const char *docker_context;
  const char *docker_config;
  const char *home;
  const char *tls_verify;
  const char *tls;
  const char *cert_path;
} endpoint_env_t;

typedef struct endpoint {
  endpoint_kind_t kind;
  char *unix_path; /* EP_UNIX */
  char *host;      /* EP_TCP, EP_SSH: host name or address, without brackets */
  int port;        /* EP_TCP; EP_SSH: 0 when not given (ssh's own default or config) */
  char *ssh_user;  /* EP_SSH: the login name, or NULL (ssh's own default or config) */
  char *ssh_path;  /* EP_SSH: the remote engine's socket path, or NULL (the remote default) */
  int tls;
  int tls_verify;
  char *ca_file;
  char *cert_file;
  char *key_file;
  char *display; /* unix:///path, tcp://host:port or ssh://user@host:port/path, for messages */
  char *source;  /* "host option", "DOCKER_HOST", "context NAME", "default" */
} endpoint_t;

/* Syntax check of a host string (unix://, tcp://, http://, https://, ssh://). */
int endpoint_parse(const char *spec, endpoint_t *out, err_t *err);
int endpoint_resolve(const char *explicit_host, const endpoint_env_t *env, endpoint_t *out, err_t *err);
void endpoint_env_from_process(endpoint_env_t *env);
void endpoint_free(endpoint_t *ep);

#endif
