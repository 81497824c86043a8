/*
 * engine.c - endpoint, API version negotiation, HTTP requests and engine error mapping
 * (see engine.h).
 */
#include "engine/engine.h"

#include "base/trace.h"
#include "codec/httphead.h"
#include "engine/sshconn.h"

#include <ctype.h>
#include <stdarg.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_RESPONSE_LIMIT (8u * 1024u * 1024u)

enum { ENG_UNKNOWN = 0, ENG_PINGING, ENG_READY };

struct engine {
  int refs;
  io_t *io;
  char *explicit_host;
  endpoint_t ep;
  int ep_resolved;
  int state;
  char api_version[16];
  engine_waiter_t *waiters;
  http_req_t *ping;
  tls_ctx_t *tls; /* TLS endpoints: the certificates, read when the endpoint is resolved */
  char arch[16];  /* GET /version's Arch, once someone asked (the agent's placement) */
  engine_kind_t kind; /* from the ping reply (engine_info) */
  char version[64];
  ssh_transport_t *ssh; /* ssh:// endpoints: where connections come from (sshconn.h) */
};

static int engine_start_ping(engine_t *e, err_t *err);
static int is_connect_failure(CURLcode c);

engine_t *engine_new(io_t *io, const char *explicit_host) {
  engine_t *e = calloc(1, sizeof(*e));
  if (e == NULL) return NULL;
  e->refs = 1;
  e->io = io;
  if (explicit_host != NULL) {
    e->explicit_host = strdup(explicit_host);
    if (e->explicit_host == NULL) {
      free(e);
      return NULL;
    }
  }
  return e;
}

/* Stops the transfer; the done callback is not called. */
static void http_req_cancel(http_req_t *r);

void engine_ref(engine_t *e) { e->refs++; }

void engine_unref(engine_t *e) {
  if (e == NULL || --e->refs > 0) return;
  if (e->ping) {
    http_req_cancel(e->ping);
    http_req_free(e->ping);
  }
  tls_ctx_free(e->tls);
  ssh_transport_free(e->ssh);
  endpoint_free(&e->ep);
  free(e->explicit_host);
  free(e);
}

io_t *engine_io(engine_t *e) { return e->io; }
ssh_transport_t *engine_ssh(engine_t *e) { return e->ssh; }

/* Releases what a link holds (an engine_link_t is zeroed to start with). */
static void engine_link_clear(engine_link_t *l) {
  if (l->waiting) ssh_conn_cancel_wait(&l->wait);
  l->waiting = 0;
  ssh_conn_unref(l->conn);
  l->conn = NULL;
}

static int engine_easy_setup(engine_t *e, CURL *c, const char *path, int versioned, engine_link_t *link) {
  const endpoint_t *ep = &e->ep;
  buf_t url;
  buf_init(&url, 0);
  int rc;
  if (ep->kind == EP_UNIX) {
    rc = buf_append_str(&url, "http://localhost");
  } else if (ep->kind == EP_SSH) {
    rc = buf_append_str(&url, "http://docker");
  } else {
    int v6 = strchr(ep->host, ':') != NULL;
    rc = buf_printf(&url, "%s://%s%s%s:%d", ep->tls ? "https" : "http", v6 ? "[" : "", ep->host,
                    v6 ? "]" : "", ep->port);
  }
  if (rc == 0 && versioned) rc = buf_printf(&url, "/v%s", e->api_version);
  if (rc == 0) rc = buf_append_str(&url, path);
  if (rc == 0) rc = buf_terminate(&url);
  if (rc != 0) {
    buf_free(&url);
    return -1;
  }
  curl_easy_setopt(c, CURLOPT_URL, (char *)url.data);
  buf_free(&url);
  if (ep->kind == EP_UNIX) curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, ep->unix_path);
  if (ep->kind == EP_SSH) {
    /* libcurl connects to the transport's private socket; each connection it makes there
     * is served by an ssh process of its own (sshconn.h). */
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, ssh_transport_socket_path(e->ssh));
    if (link != NULL) {
      link->eng = e;
      link->since_ns = uv_hrtime();
    }
  }
  if (ep->tls) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, ep->tls_verify ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, ep->tls_verify ? 2L : 0L);
    /* What tls_ctx_new loaded at the first call: the CA file only when verifying, the
     * client certificate only when there is one. */
    if (ep->tls_verify && ep->ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, ep->ca_file);
    if (tls_ctx_has_client_cert(e->tls)) {
      curl_easy_setopt(c, CURLOPT_SSLCERT, ep->cert_file);
      curl_easy_setopt(c, CURLOPT_SSLKEY, ep->key_file);
    }
  }
  return 0;
}

/*
 * What every transfer to the engine sets (req_core_launch), buffered or streamed: a 10 s
 * connect timeout (ssh:// gets a longer one), the URL (the API version prefix when
 * `versioned`, then `path`) and how to connect (unix socket, TCP with TLS settings, or ssh
 * connections; `link`, when not NULL, is what explains their failures), no signals, TCP
 * keep-alive, a 256 KiB receive buffer, `errbuf` (CURL_ERROR_SIZE) and the header and body
 * callbacks, both given `ud`. Valid once the engine is ready. 0, or -1 when out of memory.
 */
static int engine_easy_common(engine_t *e, CURL *c, const char *path, int versioned, engine_link_t *link,
                              char *errbuf, curl_write_callback on_header, curl_write_callback on_body, void *ud) {
  /* The connect timeout first: engine_easy_setup gives ssh:// connections a longer one. */
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  if (engine_easy_setup(e, c, path, versioned, link) != 0) return -1;
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 256L * 1024L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, ud);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, ud);
  return 0;
}

int engine_curl_lost(CURLcode c) {
  return is_connect_failure(c) || c == CURLE_GOT_NOTHING || c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR;
}

/* A transfer failed: 1 with err set when its link explains why (the ssh process failed,
 * with its stderr, or ssh could not be started), else 0. */
static int engine_link_failure(engine_t *e, const engine_link_t *l, err_t *err) {
  if (l == NULL || e->ssh == NULL) return 0;
  if (l->conn != NULL && ssh_conn_failure(l->conn, engine_display(e), err)) return 1;
  return l->conn == NULL && ssh_transport_spawn_failure(e->ssh, err);
}
const char *engine_arch(engine_t *e) { return e->arch[0] ? e->arch : NULL; }
void engine_set_arch(engine_t *e, const char *arch) { snprintf(e->arch, sizeof(e->arch), "%s", arch); }

tls_ctx_t *engine_tls_ctx(engine_t *e, err_t *err) {
  if (e->tls == NULL) e->tls = tls_ctx_new(&e->ep, engine_display(e), err);
  return e->tls;
}
const endpoint_t *engine_endpoint(engine_t *e) { return &e->ep; }
const char *engine_api_version(engine_t *e) { return e->api_version; }

engine_info_t engine_info(engine_t *e) {
  engine_info_t i;
  /* The last engine that answered: kept while a new ping runs after a connection
   * failure (the same endpoint almost always answers with the same engine). */
  i.kind = e->kind;
  i.name = i.kind == ENGINE_PODMAN ? "Podman" : i.kind == ENGINE_DOCKER ? "Docker" : "the Docker engine";
  i.version = i.kind != ENGINE_UNKNOWN ? e->version : "";
  i.local = e->ep_resolved && e->ep.kind == EP_UNIX;
  return i;
}

/* The engine's identity from the ping reply's headers (see engine_info). */
static void learn_identity(engine_t *e, const http_req_t *ping) {
  e->version[0] = 0;
  if (ping->libpod_version != NULL) {
    e->kind = ENGINE_PODMAN;
    snprintf(e->version, sizeof(e->version), "%s", ping->libpod_version);
    return;
  }
  e->kind = ENGINE_DOCKER;
  /* "Docker/20.10.24+dfsg1 (linux)": the token after the slash. */
  const char *s = ping->server;
  if (s != NULL && strncasecmp(s, "Docker/", 7) == 0) {
    size_t n = strcspn(s + 7, " \t");
    if (n >= sizeof(e->version)) n = sizeof(e->version) - 1;
    memcpy(e->version, s + 7, n);
    e->version[n] = 0;
  }
}
const char *engine_display(engine_t *e) {
  return e->ep_resolved && e->ep.display ? e->ep.display : "the Docker engine";
}

void engine_reset(engine_t *e) {
  if (e->state == ENG_READY) e->state = ENG_UNKNOWN;
}

static int ensure_endpoint(engine_t *e, err_t *err) {
  if (e->ep_resolved) return 0;
  endpoint_env_t env;
  endpoint_env_from_process(&env);
  if (endpoint_resolve(e->explicit_host, &env, &e->ep, err) != 0) return -1;
  /* TLS: the certificates are read now, before any connection, by the one check both
   * paths go by (libcurl's options below, the exec connections' sessions). A failure
   * leaves the endpoint unresolved: the next call reads the files again. */
  if (e->ep.tls && (e->tls = tls_ctx_new(&e->ep, e->ep.display, err)) == NULL) {
    endpoint_free(&e->ep);
    return -1;
  }
  if (e->ep.kind == EP_SSH && (e->ssh = ssh_transport_new(e->io, &e->ep, err)) == NULL) {
    endpoint_free(&e->ep);
    return -1;
  }
  e->ep_resolved = 1;
  return 0;
}

int engine_when_ready(engine_t *e, engine_waiter_t *w, err_t *err) {
  if (ensure_endpoint(e, err) != 0) return -1;
  if (e->state == ENG_READY) return 1;
  if (e->state == ENG_UNKNOWN && engine_start_ping(e, err) != 0) return -1;
  w->next = e->waiters;
  e->waiters = w;
  w->queued = 1;
  return 0;
}

void engine_cancel_wait(engine_t *e, engine_waiter_t *w) {
  if (!w->queued) return;
  for (engine_waiter_t **p = &e->waiters; *p; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      break;
    }
  }
  w->queued = 0;
  w->next = NULL;
  /* Nobody waits any more: drop a ping still in flight, so a ping that never answers
   * cannot hold back the next request (it will ping again). */
  if (e->waiters == NULL && e->state == ENG_PINGING && e->ping != NULL) {
    http_req_free(e->ping);
    e->ping = NULL;
    e->state = ENG_UNKNOWN;
  }
}

static void wake_waiters(engine_t *e, const err_t *err) {
  /* Waiters may queue new work (or cancel others): detach the list first. */
  engine_waiter_t *list = e->waiters;
  e->waiters = NULL;
  /* Reverse to call them in the order they queued. */
  engine_waiter_t *ordered = NULL;
  while (list) {
    engine_waiter_t *next = list->next;
    list->next = ordered;
    ordered = list;
    list = next;
  }
  while (ordered) {
    engine_waiter_t *w = ordered;
    ordered = w->next;
    w->next = NULL;
    w->queued = 0;
    w->fn(w, err);
  }
}

static void on_ping_done(http_req_t *req, void *ud) {
  engine_t *e = ud;
  err_t err = ERR_INIT;
  e->ping = NULL;
  if (!http_req_ok(req)) {
    http_req_error(req, &err);
    /* A refused ping is an unavailable engine, whatever the status. */
    if (err.code != NULL && strcmp(err.code, CODE_DOCKER_COMMAND_FAILED) == 0) err.code = CODE_DOCKER_UNAVAILABLE;
  } else {
    int major = 0, minor = 0;
    if (req->api_version == NULL || http_api_version_parse(req->api_version, &major, &minor) != 0) {
      err_sandbox(&err, CODE_DOCKER_UNAVAILABLE,
                  "Docker engine at %s did not report a usable API version.", engine_display(e));
    } else if (major < ENGINE_MIN_API_MAJOR ||
               (major == ENGINE_MIN_API_MAJOR && minor < ENGINE_MIN_API_MINOR)) {
      err_sandbox(&err, CODE_DOCKER_UNAVAILABLE,
                  "Docker engine at %s speaks API %d.%d; this package needs %d.%d or later.",
                  engine_display(e), major, minor, ENGINE_MIN_API_MAJOR, ENGINE_MIN_API_MINOR);
    } else {
      snprintf(e->api_version, sizeof(e->api_version), "%d.%d", major, minor);
      learn_identity(e, req);
      ssh_transport_warm(e->ssh); /* the endpoint works: keep spare connections from now on */
      trace_event("engine %s %s, API %s", e->kind == ENGINE_PODMAN ? "Podman" : "Docker", e->version,
                  e->api_version);
    }
  }
  http_req_free(req);
  e->state = err_is_set(&err) ? ENG_UNKNOWN : ENG_READY;
  engine_ref(e); /* a waiter may drop the last other reference */
  wake_waiters(e, err_is_set(&err) ? &err : NULL);
  err_clear(&err);
  engine_unref(e);
}

static int engine_start_ping(engine_t *e, err_t *err) {
  http_req_t *req = http_req_new(e, "GET", "/_ping");
  if (req == NULL) return err_oom(err);
  req->versioned = 0;
  http_req_set_limit(req, 4096);
  /* An engine that does not answer its ping within this is not available. */
  curl_easy_setopt(req->core.job.easy, CURLOPT_TIMEOUT_MS, 30000L);
  if (http_req_start(req, on_ping_done, e, err) != 0) {
    http_req_free(req);
    return -1;
  }
  e->state = ENG_PINGING;
  e->ping = req;
  return 0;
}

/* ---- requests ---- */

char *url_escape(const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(s);
  /* "." and ".." would still be dot segments: their dots are escaped too. */
  int dots_only = (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.');
  char *out = malloc(n * 3 + 1);
  if (out == NULL) return NULL;
  char *o = out;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int unreserved = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                     *p == '_' || *p == '~' || (*p == '.' && !dots_only);
    if (unreserved) {
      *o++ = (char)*p;
    } else {
      *o++ = '%';
      *o++ = hex[*p >> 4];
      *o++ = hex[*p & 15];
    }
  }
  *o = 0;
  return out;
}

/* ---- what every request does (req_core_t, engine.h) ---- */

int req_core_init(req_core_t *q, engine_t *e, const char *method, const char *path_fmt, va_list ap) {
  q->eng = e;
  engine_ref(e);
  err_init(&q->pre_err);
  q->method = strdup(method);
  q->path = str_vformat(path_fmt, ap);
  q->job.easy = curl_easy_init();
  return q->method != NULL && q->path != NULL && q->job.easy != NULL ? 0 : -1;
}

int req_core_add_header(req_core_t *q, const char *line) {
  struct curl_slist *l = curl_slist_append(q->headers, line);
  if (l == NULL) return -1;
  q->headers = l;
  return 0;
}

int req_core_wait(req_core_t *q, void (*on_ready)(engine_waiter_t *w, const err_t *err), err_t *err) {
  q->waiter.fn = on_ready;
  q->state = REQ_WAITING;
  int rc = engine_when_ready(q->eng, &q->waiter, err);
  if (rc < 0) q->state = REQ_NEW;
  return rc;
}

int req_core_launch(req_core_t *q, int versioned, engine_link_t *link, curl_write_callback on_header,
                    curl_write_callback on_body, void *ud, void (*done)(xfer_t *job, CURLcode result)) {
  CURL *c = q->job.easy;
  if (engine_easy_common(q->eng, c, q->path, versioned, link, q->errbuf, on_header, on_body, ud) != 0) return -1;
  /* No "Expect: 100-continue" round trip for large bodies. */
  if (req_core_add_header(q, "Expect:") != 0) return -1;
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, q->headers);
  q->job.done = done;
  q->state = REQ_RUNNING;
  if (xfer_start(q->eng->io->xfers, &q->job) != 0) {
    q->state = REQ_NEW;
    return -1;
  }
  return 0;
}

void req_core_finished(req_core_t *q, CURLcode result) {
  q->curl_result = result;
  curl_easy_getinfo(q->job.easy, CURLINFO_RESPONSE_CODE, &q->status);
  q->state = REQ_DONE;
}

void req_core_fail_early(req_core_t *q, const err_t *err) {
  if (err) {
    err_copy(&q->pre_err, err);
  } else {
    err_oom(&q->pre_err);
  }
  q->state = REQ_DONE;
}

void req_core_stop(req_core_t *q) {
  if (q->state == REQ_WAITING) engine_cancel_wait(q->eng, &q->waiter);
  if (q->state == REQ_RUNNING) xfer_stop(q->eng->io->xfers, &q->job);
  if (q->state != REQ_DONE) q->state = REQ_CANCELLED;
}

void req_core_clear(req_core_t *q) {
  if (q->job.easy) curl_easy_cleanup(q->job.easy);
  q->job.easy = NULL;
  curl_slist_free_all(q->headers);
  q->headers = NULL;
  free(q->method);
  free(q->path);
  q->method = q->path = NULL;
  err_clear(&q->pre_err);
  engine_unref(q->eng);
  q->eng = NULL;
}

/* ---- buffered requests ---- */

http_req_t *http_req_new(engine_t *e, const char *method, const char *path_fmt, ...) {
  http_req_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  r->versioned = 1;
  buf_init(&r->body, 0);
  buf_init(&r->resp, DEFAULT_RESPONSE_LIMIT);
  va_list ap;
  va_start(ap, path_fmt);
  int rc = req_core_init(&r->core, e, method, path_fmt, ap);
  va_end(ap);
  if (rc != 0) {
    http_req_free(r);
    return NULL;
  }
  return r;
}

void http_req_set_limit(http_req_t *r, size_t max_bytes) { r->resp.limit = max_bytes; }


int http_req_set_json(http_req_t *r, json_t *body) {
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (text == NULL) return -1;
  buf_reset(&r->body);
  int rc = buf_append_str(&r->body, text);
  free(text);
  if (rc != 0) return -1;
  return req_core_add_header(&r->core, "Content-Type: application/json");
}

int http_req_take_body(http_req_t *r, buf_t *body, const char *content_type) {
  buf_free(&r->body);
  r->body = *body;
  buf_init(body, 0);
  char header[128];
  snprintf(header, sizeof(header), "Content-Type: %s", content_type);
  return req_core_add_header(&r->core, header);
}

/* Keeps the two headers requests look at; every other header is ignored. */
static size_t on_header(char *data, size_t size, size_t nmemb, void *ud) {
  http_req_t *r = ud;
  size_t len = size * nmemb;
  char *v;
  if ((v = http_header_line_value((const uint8_t *)data, len, "API-Version")) != NULL) {
    free(r->api_version);
    r->api_version = v;
  } else if ((v = http_header_line_value((const uint8_t *)data, len, "X-Docker-Container-Path-Stat")) != NULL) {
    free(r->path_stat);
    r->path_stat = v;
  } else if (!r->versioned && (v = http_header_line_value((const uint8_t *)data, len, "Libpod-Api-Version")) != NULL) {
    free(r->libpod_version);
    r->libpod_version = v;
  } else if (!r->versioned && (v = http_header_line_value((const uint8_t *)data, len, "Server")) != NULL) {
    free(r->server);
    r->server = v;
  }
  return len;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud) {
  http_req_t *r = ud;
  size_t len = size * nmemb;
  if (r->on_data != NULL) {
    long status = 0;
    curl_easy_getinfo(r->core.job.easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      int rc = r->on_data(r, (const uint8_t *)data, len, r->ud);
      if (rc > 0) return CURL_WRITEFUNC_PAUSE;
      return rc < 0 ? 0 : len;
    }
  }
  if (buf_append(&r->resp, data, len) != 0) {
    r->resp_too_large = 1;
    return 0;
  }
  return len;
}

static void report_done(http_req_t *r);

static void on_ssh_ended(ssh_exit_waiter_t *w) {
  engine_link_t *l = (engine_link_t *)((char *)w - offsetof(engine_link_t, wait));
  http_req_t *r = (http_req_t *)((char *)l - offsetof(http_req_t, link));
  l->waiting = 0;
  report_done(r);
}

static void on_job_done(xfer_t *job, CURLcode result) {
  http_req_t *r = (http_req_t *)job;
  req_core_finished(&r->core, result);
  /* ssh://: a connection that failed is explained by its ssh process (its stderr), once
   * that has ended (it does once libcurl has closed the socket). */
  if (result != CURLE_OK && r->core.eng->ssh != NULL && r->link.conn == NULL)
    r->link.conn = ssh_transport_recent(r->core.eng->ssh, r->link.since_ns);
  if (result != CURLE_OK && r->link.conn != NULL && !ssh_conn_ended(r->link.conn)) {
    r->link.wait.fn = on_ssh_ended;
    r->link.waiting = 1;
    ssh_conn_when_ended(r->link.conn, &r->link.wait);
    return;
  }
  report_done(r);
}

static void report_done(http_req_t *r) {
  CURLcode result = r->core.curl_result;
  /* The engine went away (restart, socket gone): ping again before the next request, in
   * case what answers next speaks another API version. */
  if (result != CURLE_OK && r->versioned && engine_curl_lost(result)) engine_reset(r->core.eng);
  if (trace_enabled()) {
    double total = 0;
    curl_easy_getinfo(r->core.job.easy, CURLINFO_TOTAL_TIME, &total);
    long reused = 0;
    curl_easy_getinfo(r->core.job.easy, CURLINFO_NUM_CONNECTS, &reused);
    trace_event("%s %s -> %ld (%.2f ms, %s connection)", r->core.method, r->core.path, r->core.status, total * 1000,
                reused ? "new" : "reused");
  }
  if (r->on_done) r->on_done(r, r->ud);
}

static void fail_before_start(http_req_t *r, const err_t *err) {
  req_core_fail_early(&r->core, err);
  if (r->on_done) r->on_done(r, r->ud);
}

/* Returns 0 when the transfer is running, -1 (nothing called) when it could not start. */
static int launch(http_req_t *r) {
  CURL *c = r->core.job.easy;
  const char *m = r->core.method;
  if (strcmp(m, "GET") == 0) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else if (strcmp(m, "HEAD") == 0) {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, m);
    if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0) {
      curl_easy_setopt(c, CURLOPT_POST, 1L);
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body.data ? (char *)r->body.data : "");
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
    }
  }
  return req_core_launch(&r->core, r->versioned, &r->link, on_header, on_write, r, on_job_done);
}

static void on_engine_ready(engine_waiter_t *w, const err_t *err) {
  http_req_t *r = (http_req_t *)((char *)w - offsetof(http_req_t, core.waiter));
  if (err != NULL) {
    fail_before_start(r, err);
    return;
  }
  if (launch(r) != 0) fail_before_start(r, NULL);
}

int http_req_start(http_req_t *r, http_done_fn done, void *ud, err_t *err) {
  r->on_done = done;
  r->ud = ud;
  if (!r->versioned) {
    /* The ping itself: the endpoint is already resolved. */
    if (launch(r) != 0) return err_oom(err);
    return 0;
  }
  int rc = req_core_wait(&r->core, on_engine_ready, err);
  if (rc < 0) return -1;
  if (rc == 1 && launch(r) != 0) return err_oom(err);
  return 0;
}

static void http_req_cancel(http_req_t *r) {
  if (r == NULL) return;
  if (r->link.waiting) {
    ssh_conn_cancel_wait(&r->link.wait);
    r->link.waiting = 0;
    r->core.state = REQ_CANCELLED;
  }
  req_core_stop(&r->core);
}

void http_req_free(http_req_t *r) {
  if (r == NULL) return;
  http_req_cancel(r);
  engine_link_clear(&r->link);
  req_core_clear(&r->core);
  buf_free(&r->body);
  buf_free(&r->resp);
  free(r->path_stat);
  free(r->api_version);
  free(r->libpod_version);
  free(r->server);
  free(r);
}

int http_req_ok(const http_req_t *r) {
  return r->core.state == REQ_DONE && !err_is_set(&r->core.pre_err) && r->core.curl_result == CURLE_OK &&
         r->core.status >= 200 && r->core.status < 300;
}

int http_req_not_found(const http_req_t *r) { return r->core.state == REQ_DONE && http_req_answer(r) == 404; }

long http_req_answer(const http_req_t *r) { return r->core.curl_result == CURLE_OK ? r->core.status : 0; }

long http_req_status(const http_req_t *r) { return r->core.status; }

char *http_req_engine_message(const http_req_t *r) { return http_error_message(r->resp.data, r->resp.len); }

static int is_connect_failure(CURLcode c) {
  return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ||
         c == CURLE_COULDNT_RESOLVE_PROXY || c == CURLE_SSL_CONNECT_ERROR ||
         c == CURLE_OPERATION_TIMEDOUT || c == CURLE_PEER_FAILED_VERIFICATION ||
         c == CURLE_SSL_CERTPROBLEM || c == CURLE_SSL_CACERT_BADFILE;
}

int http_req_error(const http_req_t *r, err_t *err) {
  const req_core_t *q = &r->core;
  if (err_is_set(&q->pre_err)) return err_copy(err, &q->pre_err);
  if (q->curl_result != CURLE_OK && !r->resp_too_large && engine_link_failure(q->eng, &r->link, err)) return -1;
  if (q->curl_result != CURLE_OK)
    return engine_curl_error(q->eng, q->method, q->path, q->curl_result, q->status, q->errbuf, r->resp_too_large,
                             r->resp.limit, err);
  if (q->status >= 200 && q->status < 300) return 0;
  char *msg = http_req_engine_message(r);
  engine_status_error(q->method, q->path, q->status, msg, err);
  free(msg);
  return -1;
}

int engine_curl_error(engine_t *e, const char *method, const char *path, CURLcode result, long status,
                      const char *errbuf, int too_large, size_t limit, err_t *err) {
  const char *why = errbuf[0] ? errbuf : curl_easy_strerror(result);
  if (too_large) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine reply to %s %s exceeded %zu bytes.", method, path,
                limit);
  } else if (is_connect_failure(result) && status == 0) {
    err_sandbox(err, CODE_DOCKER_UNAVAILABLE, "Docker engine is not reachable at %s: %s", engine_display(e), why);
  } else {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine connection failed during %s %s: %s", method, path,
                why);
  }
  err_set_details(err, json_pack("{s:s, s:s, s:s, s:s}", "method", method, "path", path, "endpoint",
                                 engine_display(e), "reason", why));
  return -1;
}

int engine_status_error(const char *method, const char *path, long status, const char *msg, err_t *err) {
  err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine request failed: %s %s (%ld): %s", method, path, status,
              msg ? msg : "");
  err_set_details(err, json_pack("{s:I, s:s, s:s, s:s}", "statusCode", (json_int_t)status, "message", msg ? msg : "",
                                 "method", method, "path", path));
  return -1;
}

json_t *http_req_json(const http_req_t *r, err_t *err) {
  json_error_t jerr;
  json_t *j = json_loadb((const char *)(r->resp.data ? r->resp.data : (uint8_t *)""), r->resp.len, 0, &jerr);
  if (j == NULL) {
    err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker engine returned malformed JSON for %s %s: %s",
                r->core.method, r->core.path, jerr.text);
    err_set_cause(err, jerr.text);
  }
  return j;
}

char *http_req_reply_id(const http_req_t *r, const char *missing, err_t *err) {
  if (!http_req_ok(r)) {
    http_req_error(r, err);
    return NULL;
  }
  json_t *j = http_req_json(r, err);
  if (j == NULL) return NULL;
  json_t *id = json_object_get(j, "Id");
  char *out = NULL;
  if (!json_is_string(id) || json_string_length(id) == 0) err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "%s", missing);
  else if ((out = strdup(json_string_value(id))) == NULL) err_oom(err);
  json_decref(j);
  return out;
}
