/*
 * endpoint.c - Docker endpoint resolution (see endpoint.h).
 */
#include "engine/endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/sha256.h"

#define DEFAULT_SOCKET "/var/run/docker.sock"
#define MAX_META_BYTES (1024 * 1024)

void endpoint_free(endpoint_t *ep) {
  free(ep->unix_path);
  free(ep->host);
  free(ep->ssh_user);
  free(ep->ssh_path);
  free(ep->ca_file);
  free(ep->cert_file);
  free(ep->key_file);
  free(ep->display);
  free(ep->source);
  memset(ep, 0, sizeof(*ep));
}

void endpoint_env_from_process(endpoint_env_t *env) {
  env->docker_host = getenv("DOCKER_HOST");
  env->docker_context = getenv("DOCKER_CONTEXT");
  env->docker_config = getenv("DOCKER_CONFIG");
  env->home = getenv("HOME");
  env->tls_verify = getenv("DOCKER_TLS_VERIFY");
  env->tls = getenv("DOCKER_TLS");
  env->cert_path = getenv("DOCKER_CERT_PATH");
}

static int nonempty(const char *s) { return s != NULL && s[0] != 0; }

static char *join2(const char *a, const char *b) {
  buf_t out;
  buf_init(&out, 0);
  if (buf_printf(&out, "%s/%s", a, b) != 0) {
    buf_free(&out);
    return NULL;
  }
  return buf_steal(&out, NULL);
}

static int parse_port(const char *s, int *port) {
  if (!nonempty(s)) return -1;
  long v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
    if (v > 65535) return -1;
  }
  if (v < 1) return -1;
  *port = (int)v;
  return 0;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Percent-decodes a URL component (as Go's url.Parse does for user names and paths);
 * NULL when malformed, when it would hold a NUL or a control byte, or out of memory. */
static char *url_unescape(const char *s, size_t n) {
  char *out = malloc(n + 1);
  if (out == NULL) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      if (i + 2 >= n) goto bad;
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) goto bad;
      c = (unsigned char)(hi * 16 + lo);
      i += 2;
    }
    if (c < 0x20 || c == 0x7f) goto bad;
    out[k++] = (char)c;
  }
  out[k] = 0;
  return out;
bad:
  free(out);
  return NULL;
}

/*
 * A user name as ssh and POSIX take one: the portable filename characters (letters,
 * digits, '.', '_', '-'), not starting with '-' (ssh would read an option), and a '$'
 * only as the last character (Samba's machine accounts). Nothing else reaches ssh's
 * argument list or the remote side's user lookup (no '%', space, quote, '@' or control
 * character).
 */
static int ssh_user_valid(const char *user) {
  size_t n = strlen(user);
  if (n == 0 || user[0] == '-') return 0;
  if (user[n - 1] == '$') n--;
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = user[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return 0;
  }
  return 1;
}

/*
 * ssh://[user@]host[:port][/path], with the docker CLI's rules (cli/connhelper/ssh): no
 * password, no query, no fragment, a host; the user and the path are percent-decoded.
 * Nothing here may start with '-' where ssh would read it as an option (the CLI puts
 * "--" before the host; the user goes after -l, which takes it as a value), and the user
 * holds only what ssh_user_valid allows.
 */
static int parse_ssh(const char *spec, endpoint_t *out, err_t *err) {
  const char *rest = spec + 6;
  if (strpbrk(rest, "?#") != NULL)
    return err_type(err, "Docker host ssh URL cannot carry a query or a fragment: %s", spec);
  size_t auth_len = strcspn(rest, "/");
  const char *path = rest[auth_len] == '/' ? rest + auth_len : NULL;
  const char *at = memrchr(rest, '@', auth_len);
  const char *hostport = at ? at + 1 : rest;
  size_t hp_len = auth_len - (size_t)(hostport - rest);
  out->kind = EP_SSH;
  if (at != NULL) {
    if (memchr(rest, ':', (size_t)(at - rest)) != NULL)
      return err_type(err, "Docker host ssh URL cannot carry a password (plain-text passwords are not supported): %s",
                      spec);
    out->ssh_user = url_unescape(rest, (size_t)(at - rest));
    if (out->ssh_user == NULL || !ssh_user_valid(out->ssh_user)) {
      endpoint_free(out);
      return err_type(err,
                      "Docker host ssh URL has an invalid user name (letters, digits, '.', '_' and '-', not first, "
                      "and '$' only last): %s",
                      spec);
    }
  }
  char *hp = strndup(hostport, hp_len);
  if (hp == NULL) goto oom;
  char *host = hp, *port_s = NULL;
  if (hp[0] == '[') {
    char *close_b = strchr(hp, ']');
    if (close_b == NULL || (close_b[1] != 0 && close_b[1] != ':')) {
      free(hp);
      endpoint_free(out);
      return err_type(err, "Docker host has an invalid address: %s", spec);
    }
    *close_b = 0;
    host = hp + 1;
    if (close_b[1] == ':') port_s = close_b + 2;
  } else {
    char *colon = strrchr(hp, ':');
    if (colon) {
      *colon = 0;
      port_s = colon + 1;
    }
  }
  if (host[0] == 0 || host[0] == '-' || strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_:%") != strlen(host)) {
    free(hp);
    endpoint_free(out);
    return err_type(err, "Docker host ssh URL has an invalid host name: %s", spec);
  }
  if (port_s != NULL && parse_port(port_s, &out->port) != 0) {
    free(hp);
    endpoint_free(out);
    return err_type(err, "Docker host has an invalid port: %s", spec);
  }
  out->host = strdup(host);
  free(hp);
  if (out->host == NULL) goto oom;
  if (path != NULL) {
    size_t plen = strlen(path);
    while (plen > 1 && path[plen - 1] == '/') plen--;
    if (plen > 1) {
      out->ssh_path = url_unescape(path, plen);
      if (out->ssh_path == NULL) {
        endpoint_free(out);
        return err_type(err, "Docker host ssh URL has an invalid socket path: %s", spec);
      }
    }
  }
  buf_t d;
  buf_init(&d, 0);
  int v6 = strchr(out->host, ':') != NULL;
  int rc = buf_printf(&d, "ssh://%s%s%s%s%s", out->ssh_user ? out->ssh_user : "", out->ssh_user ? "@" : "",
                      v6 ? "[" : "", out->host, v6 ? "]" : "");
  if (rc == 0 && out->port) rc = buf_printf(&d, ":%d", out->port);
  if (rc == 0 && out->ssh_path) rc = buf_append_str(&d, out->ssh_path);
  if (rc != 0) {
    buf_free(&d);
    goto oom;
  }
  out->display = buf_steal(&d, NULL);
  if (out->display == NULL) goto oom;
  return 0;
oom:
  endpoint_free(out);
  return err_oom(err);
}

int endpoint_parse(const char *spec, endpoint_t *out, err_t *err) {
  memset(out, 0, sizeof(*out));
  if (!nonempty(spec)) return err_type(err, "host must be a non-empty string.");
  if (strncmp(spec, "unix://", 7) == 0) {
    const char *path = spec + 7;
    if (path[0] != '/') return err_type(err, "Docker host must use an absolute socket path: %s", spec);
    out->kind = EP_UNIX;
    out->unix_path = strdup(path);
    out->display = strdup(spec);
    if (!out->unix_path || !out->display) goto oom;
    return 0;
  }
  if (strncmp(spec, "ssh://", 6) == 0) return parse_ssh(spec, out, err);
  const char *rest = NULL;
  int tls = 0;
  if (strncmp(spec, "tcp://", 6) == 0) rest = spec + 6;
  else if (strncmp(spec, "http://", 7) == 0) rest = spec + 7;
  else if (strncmp(spec, "https://", 8) == 0) {
    rest = spec + 8;
    tls = 1;
  }
  if (rest == NULL)
    return err_type(err, "Docker host must use unix://, tcp://, http://, https:// or ssh://: %s", spec);
  /* host[:port][/] ; host may be [v6] */
  size_t n = strcspn(rest, "/");
  if (rest[n] == '/' && rest[n + 1] != 0)
    return err_type(err, "Docker host cannot carry a path: %s", spec);
  char *hp = strndup(rest, n);
  if (hp == NULL) goto oom;
  char *host = hp;
  char *port_s = NULL;
  if (hp[0] == '[') {
    char *close_b = strchr(hp, ']');
    if (close_b == NULL) {
      free(hp);
      return err_type(err, "Docker host has an invalid address: %s", spec);
    }
    *close_b = 0;
    host = hp + 1;
    if (close_b[1] == ':') port_s = close_b + 2;
    else if (close_b[1] != 0) {
      free(hp);
      return err_type(err, "Docker host has an invalid address: %s", spec);
    }
  } else {
    char *colon = strrchr(hp, ':');
    if (colon) {
      *colon = 0;
      port_s = colon + 1;
    }
  }
  if (host[0] == 0) {
    free(hp);
    return err_type(err, "Docker host has an empty address: %s", spec);
  }
  out->kind = EP_TCP;
  out->tls = tls;
  out->tls_verify = tls;
  out->port = 0;
  if (port_s != NULL && parse_port(port_s, &out->port) != 0) {
    free(hp);
    return err_type(err, "Docker host has an invalid port: %s", spec);
  }
  out->host = strdup(host);
  free(hp);
  if (out->host == NULL) goto oom;
  return 0;
oom:
  endpoint_free(out);
  return err_oom(err);
}

/* Fills port and display once TLS is known. */
static int finish_tcp(endpoint_t *ep, err_t *err) {
  if (ep->kind != EP_TCP) return 0;
  if (ep->port == 0) ep->port = ep->tls ? 2376 : 2375;
  buf_t d;
  buf_init(&d, 0);
  int v6 = strchr(ep->host, ':') != NULL;
  if (buf_printf(&d, "tcp://%s%s%s:%d", v6 ? "[" : "", ep->host, v6 ? "]" : "", ep->port) != 0) {
    buf_free(&d);
    return err_oom(err);
  }
  free(ep->display);
  ep->display = buf_steal(&d, NULL);
  return ep->display ? 0 : err_oom(err);
}

static int set_tls_files(endpoint_t *ep, const char *dir, err_t *err) {
  free(ep->ca_file);
  free(ep->cert_file);
  free(ep->key_file);
  ep->ca_file = join2(dir, "ca.pem");
  ep->cert_file = join2(dir, "cert.pem");
  ep->key_file = join2(dir, "key.pem");
  if (!ep->ca_file || !ep->cert_file || !ep->key_file) return err_oom(err);
  return 0;
}

static char *config_dir(const endpoint_env_t *env) {
  if (nonempty(env->docker_config)) return strdup(env->docker_config);
  if (!nonempty(env->home)) return NULL;
  return join2(env->home, ".docker");
}

/* Reads a small file; returns NULL when it does not exist (errno ENOENT) or fails. */
static char *read_small_file(const char *path, size_t *len_out, int *missing) {
  *missing = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *missing = errno == ENOENT || errno == ENOTDIR;
    return NULL;
  }
  buf_t b;
  buf_init(&b, MAX_META_BYTES);
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      goto fail;
    }
    if (n == 0) break;
    if (buf_append(&b, chunk, (size_t)n) != 0) goto fail;
  }
  close(fd);
  return buf_steal(&b, len_out);
fail:
  close(fd);
  buf_free(&b);
  return NULL;
}

static int source_set(endpoint_t *ep, const char *fmt, const char *arg) {
  buf_t s;
  buf_init(&s, 0);
  if (buf_printf(&s, fmt, arg ? arg : "") != 0) {
    buf_free(&s);
    return -1;
  }
  free(ep->source);
  ep->source = buf_steal(&s, NULL);
  return ep->source ? 0 : -1;
}

static int env_tls(endpoint_t *ep, const endpoint_env_t *env, err_t *err) {
  if (ep->kind != EP_TCP) return 0;
  if (nonempty(env->tls_verify)) {
    ep->tls = 1;
    ep->tls_verify = 1;
  } else if (nonempty(env->tls)) {
    ep->tls = 1;
  }
  if (ep->tls) {
    char *dir = nonempty(env->cert_path) ? strdup(env->cert_path) : config_dir(env);
    if (dir != NULL) {
      int rc = set_tls_files(ep, dir, err);
      free(dir);
      if (rc != 0) return rc;
    }
  }
  return finish_tcp(ep, err);
}

static int resolve_context(const char *name, const endpoint_env_t *env, endpoint_t *out, err_t *err) {
  char *dir = config_dir(env);
  if (dir == NULL) return err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker context %s cannot be found: HOME is not set.", name);
  char hash[65];
  sha256_hex(name, strlen(name), hash);
  buf_t p;
  buf_init(&p, 0);
  int rc = -1;
  char *data = NULL;
  json_t *meta = NULL;
  if (buf_printf(&p, "%s/contexts/meta/%s/meta.json", dir, hash) != 0) {
    err_oom(err);
    goto done;
  }
  buf_terminate(&p);
  size_t len = 0;
  int missing = 0;
  data = read_small_file((char *)p.data, &len, &missing);
  if (data == NULL) {
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker context %s cannot be read: %s", name, (char *)p.data);
    goto done;
  }
  meta = json_loadb(data, len, 0, NULL);
  json_t *host = json_object_get(json_object_get(json_object_get(meta, "Endpoints"), "docker"), "Host");
  if (!json_is_string(host)) {
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker context %s has no Docker endpoint: %s", name, (char *)p.data);
    goto done;
  }
  if (endpoint_parse(json_string_value(host), out, err) != 0) {
    /* A bad context is an unavailable engine, not a caller's type error. */
    err->kind = ERRK_SANDBOX;
    err->code = CODE_DOCKER_UNAVAILABLE;
    goto done;
  }
  if (out->kind == EP_TCP) {
    buf_reset(&p);
    if (buf_printf(&p, "%s/contexts/tls/%s/docker", dir, hash) != 0) {
      err_oom(err);
      goto done;
    }
    buf_terminate(&p);
    struct stat st;
    if (stat((char *)p.data, &st) == 0 && S_ISDIR(st.st_mode)) {
      out->tls = 1;
      json_t *skip = json_object_get(json_object_get(json_object_get(meta, "Endpoints"), "docker"), "SkipTLSVerify");
      out->tls_verify = !json_is_true(skip);
      if (set_tls_files(out, (char *)p.data, err) != 0) goto done;
    }
    if (finish_tcp(out, err) != 0) goto done;
  }
  if (source_set(out, "context %s", name) != 0) {
    err_oom(err);
    goto done;
  }
  rc = 0;
done:
  if (rc != 0) endpoint_free(out);
  json_decref(meta);
  free(data);
  buf_free(&p);
  free(dir);
  return rc;
}

static char *current_context(const endpoint_env_t *env) {
  char *dir = config_dir(env);
  if (dir == NULL) return NULL;
  char *path = join2(dir, "config.json");
  free(dir);
  if (path == NULL) return NULL;
  size_t len = 0;
  int missing = 0;
  char *data = read_small_file(path, &len, &missing);
  free(path);
  if (data == NULL) return NULL;
  json_t *cfg = json_loadb(data, len, 0, NULL);
  free(data);
  char *name = NULL;
  json_t *cur = json_object_get(cfg, "currentContext");
  if (json_is_string(cur) && json_string_length(cur) > 0) name = strdup(json_string_value(cur));
  json_decref(cfg);
  return name;
}

int endpoint_resolve(const char *explicit_host, const endpoint_env_t *env, endpoint_t *out, err_t *err) {
  memset(out, 0, sizeof(*out));
  if (nonempty(explicit_host)) {
    if (endpoint_parse(explicit_host, out, err) != 0) return -1;
    if (env_tls(out, env, err) != 0 || source_set(out, "%shost option", NULL) != 0) goto fail;
    return 0;
  }
  if (nonempty(env->docker_host)) {
    if (endpoint_parse(env->docker_host, out, err) != 0) {
      err->kind = ERRK_SANDBOX;
      err->code = CODE_DOCKER_UNAVAILABLE;
      return -1;
    }
    if (env_tls(out, env, err) != 0 || source_set(out, "%sDOCKER_HOST", NULL) != 0) goto fail;
    return 0;
  }
  char *ctx = nonempty(env->docker_context) ? strdup(env->docker_context) : current_context(env);
  if (ctx != NULL && strcmp(ctx, "default") != 0) {
    int rc = resolve_context(ctx, env, out, err);
    free(ctx);
    return rc;
  }
  free(ctx);
  out->kind = EP_UNIX;
  out->unix_path = strdup(DEFAULT_SOCKET);
  out->display = strdup("unix://" DEFAULT_SOCKET);
  if (!out->unix_path || !out->display || source_set(out, "%sdefault", NULL) != 0) goto fail;
  return 0;
fail:
  endpoint_free(out);
  if (!err_is_set(err)) err_oom(err);
  return -1;
}
