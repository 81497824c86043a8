/*
 * engine.h - one Docker engine as the client sees it: its endpoint, the API version
 * negotiated with it, and HTTP requests to it over the shared libcurl loop.
 *
 * Owns: an engine_t owns its endpoint and is reference counted (the client and every
 * sandbox handle made through it hold a reference). An http_req_t owns its libcurl easy
 * handle, header list, request body and collected response.
 *
 * Nothing here does I/O until the first request: the endpoint is resolved then (reading
 * at most the Docker context metadata) and GET /_ping negotiates the API version once.
 * Every later request is sent as /v<version>/<path>.
 */
#ifndef SBX_ENGINE_H
#define SBX_ENGINE_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/buf.h"
#include "engine/endpoint.h"
#include "base/err.h"
#include "engine/io.h"
#include "engine/xfer.h"
#include "engine/tlsconn.h"
#include "engine/sshconn.h"

#define ENGINE_MIN_API_MAJOR 1
#define ENGINE_MIN_API_MINOR 40

typedef struct engine engine_t;
typedef struct http_req http_req_t;
typedef struct ssh_transport ssh_transport_t;
typedef struct ssh_conn ssh_conn_t;

/* ssh:// endpoints: what explains a transfer's connection failure with ssh's own message
 * (the ssh process started for libcurl since the transfer began, once it has ended). */
typedef struct engine_link {
  engine_t *eng;
  uint64_t since_ns;      /* when the transfer was set up (uv_hrtime) */
  ssh_conn_t *conn;       /* a reference, or NULL */
  ssh_exit_waiter_t wait; /* waiting for the process to end, to read why it failed */
  int waiting;
} engine_link_t;

typedef struct engine_waiter engine_waiter_t;
typedef void (*engine_ready_fn)(engine_waiter_t *w, const err_t *err);
struct engine_waiter {
  engine_ready_fn fn;
  engine_waiter_t *next;
  int queued;
};

engine_t *engine_new(io_t *io, const char *explicit_host);
void engine_ref(engine_t *e);
void engine_unref(engine_t *e);
/* The I/O context the engine's requests and connections run on. */
io_t *engine_io(engine_t *e);
/* ssh:// endpoints, once the endpoint is resolved: where new connections come from (the
 * exec connections of hijack.c take theirs here too); NULL for other endpoints. */
ssh_transport_t *engine_ssh(engine_t *e);
/* A transfer's failure that means the engine's connection is gone (cannot connect or
 * resolve, TLS refused, nothing or a broken reply): the caller resets the engine so the
 * next request connects again. */
int engine_curl_lost(CURLcode c);
/* The call's error for a transfer that failed in libcurl (`result`, with its `errbuf`):
 * over `limit` bytes of reply (`too_large`), the engine unreachable (docker_unavailable),
 * or the connection lost during `method path`; with their details. Returns -1. */
int engine_curl_error(engine_t *e, const char *method, const char *path, CURLcode result, long status,
                      const char *errbuf, int too_large, size_t limit, err_t *err);
/* The call's error for an engine reply of `status` with the engine's text `msg` (NULL:
 * none): "Docker engine request failed: METHOD PATH (STATUS): MSG", with its details.
 * Returns -1. */
int engine_status_error(const char *method, const char *path, long status, const char *msg, err_t *err);
/* The engine's architecture (GET /version's Arch: "amd64", "arm64", ...) once learned,
 * else NULL; set by whoever asked the engine first. */
const char *engine_arch(engine_t *e);
void engine_set_arch(engine_t *e, const char *arch);
/* Valid once the engine is ready (after a waiter was called without error). */
const endpoint_t *engine_endpoint(engine_t *e);
/* TLS endpoints, once ready: the settings every exec connection shares (certificates read
 * at the first call). NULL with err set when they cannot be loaded. */
tls_ctx_t *engine_tls_ctx(engine_t *e, err_t *err);
const char *engine_api_version(engine_t *e);

/*
 * Which engine answers, learned once per client from its GET /_ping reply (with the API
 * version): a Libpod-Api-Version header names Podman's Docker-compatible API and its
 * version; otherwise it is Docker, its version from the Server header ("Docker/20.10.24
 * (linux)") when present. Engine-specific behaviour (exec input on Podman, the seccomp
 * form, ...) is decided through this one accessor, nowhere else. Valid once the engine
 * has answered a ping; before that, kind is ENGINE_UNKNOWN.
 */
typedef enum engine_kind { ENGINE_UNKNOWN = 0, ENGINE_DOCKER, ENGINE_PODMAN } engine_kind_t;
typedef struct engine_info {
  engine_kind_t kind;
  const char *name;    /* "Docker", "Podman" ("the Docker engine" while unknown) */
  const char *version; /* "20.10.24", "4.3.1"; "" when the engine did not say */
  int local;           /* the endpoint is a unix socket on this host */
} engine_info_t;
engine_info_t engine_info(engine_t *e);
/* A description for messages: the endpoint if known, else "the Docker engine". */
const char *engine_display(engine_t *e);
/*
 * Returns 1 when the engine is ready now (nothing queued), 0 when the waiter was queued
 * and will be called later, -1 with `err` set when the endpoint cannot be resolved.
 */
int engine_when_ready(engine_t *e, engine_waiter_t *w, err_t *err);
void engine_cancel_wait(engine_t *e, engine_waiter_t *w);
/* Forget the negotiated version (after the engine went away), so the next request pings. */
void engine_reset(engine_t *e);

/* ---- HTTP requests ---- */

/* Runs inside libcurl: must not call libcurl or JavaScript. 0 = go on, 1 = pause, -1 = abort. */
typedef int (*http_data_fn)(http_req_t *req, const uint8_t *data, size_t len, void *ud);
typedef void (*http_done_fn)(http_req_t *req, void *ud);

/*
 * What every engine request is, buffered (http_req_t) or streamed (stream_req_t,
 * stream.c): the transfer on the engine's multi handle, the wait for the engine to be
 * ready, the request line and headers, and the outcome. The req_core_* functions do the
 * parts the two do the same way; each request type adds its bodies and callbacks.
 */
typedef struct req_core {
  xfer_t job; /* first: the multi handle's private pointer is &job */
  engine_waiter_t waiter;
  engine_t *eng;
  char *method;
  char *path; /* with query, already escaped; without the version prefix */
  struct curl_slist *headers;
  long status;
  CURLcode curl_result;
  err_t pre_err; /* failure before the transfer could start */
  int state;     /* REQ_NEW, REQ_WAITING, REQ_RUNNING, REQ_DONE, REQ_CANCELLED */
  char errbuf[CURL_ERROR_SIZE];
} req_core_t;

enum { REQ_NEW = 0, REQ_WAITING, REQ_RUNNING, REQ_DONE, REQ_CANCELLED };

/* Fills q for `method` on the formatted path, with a reference on e. 0, or -1 out of
 * memory (req_core_clear frees what was made). */
int req_core_init(req_core_t *q, engine_t *e, const char *method, const char *path_fmt, va_list ap);
/* Appends a header line. 0, or -1 out of memory. */
int req_core_add_header(req_core_t *q, const char *line);
/* Waits for the engine (its ping) with on_ready, REQ_WAITING meanwhile: 1 ready now
 * (nothing queued), 0 queued, -1 with err set (back to REQ_NEW). */
int req_core_wait(req_core_t *q, void (*on_ready)(engine_waiter_t *w, const err_t *err), err_t *err);
/* Sets up the easy handle (engine_easy_common, no "Expect: 100-continue", the headers)
 * after the caller set the method's options, and starts the transfer; `done` ends it.
 * 0, or -1 (back to REQ_NEW, nothing called). */
int req_core_launch(req_core_t *q, int versioned, engine_link_t *link, curl_write_callback on_header,
                    curl_write_callback on_body, void *ud, void (*done)(xfer_t *job, CURLcode result));
/* The transfer ended: its result and status kept, REQ_DONE. */
void req_core_finished(req_core_t *q, CURLcode result);
/* It could not start: err (out of memory when NULL) kept as the failure, REQ_DONE. */
void req_core_fail_early(req_core_t *q, const err_t *err);
/* No callback after this: the wait or the transfer stopped. */
void req_core_stop(req_core_t *q);
/* Frees what req_core_init made (after req_core_stop) and drops the engine reference. */
void req_core_clear(req_core_t *q);

struct http_req {
  req_core_t core; /* first: &core.job is the transfer */
  int versioned;
  buf_t body;
  buf_t resp;
  char *path_stat;   /* X-Docker-Container-Path-Stat */
  char *api_version; /* API-Version */
  char *libpod_version; /* the ping's Libpod-Api-Version (Podman) */
  char *server;         /* the ping's Server header */
  int resp_too_large;
  http_data_fn on_data;
  http_done_fn on_done;
  void *ud;
  engine_link_t link; /* ssh:// endpoints: the connection this transfer opened */
};

/* `path` is printf-style; every dynamic part must already be URL-escaped (see url_escape). */
http_req_t *http_req_new(engine_t *e, const char *method, const char *path_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Serialises `body` (reference stolen) as the JSON request body. */
int http_req_set_json(http_req_t *r, json_t *body);
/* Takes ownership of `body`'s bytes; `body` is left empty. */
int http_req_take_body(http_req_t *r, buf_t *body, const char *content_type);
/* Most bytes of response body kept (default 8 MiB); more fails the request. */
void http_req_set_limit(http_req_t *r, size_t max_bytes);
/*
 * Starts the request. Returns 0 when it is on its way (`done` will be called later, never
 * from inside this call), or -1 with err set when it could not start (`done` is not
 * called; the request can be freed).
 */
int http_req_start(http_req_t *r, http_done_fn done, void *ud, err_t *err);
void http_req_free(http_req_t *r);

/* 1 when the transfer completed with a 2xx status. */
int http_req_ok(const http_req_t *r);
/* 1 when the engine answered 404 (no such container, volume, path or image). */
int http_req_not_found(const http_req_t *r);
/* The status of the engine's whole answer (304: nothing to do, 409: conflict), 0 when the
 * transfer failed or did not run. */
long http_req_answer(const http_req_t *r);
/* The status line the engine sent, whether or not the rest of its answer came; 0 when none. */
long http_req_status(const http_req_t *r);
/*
 * Fills `err` for a failed request: the endpoint unreachable is docker_unavailable naming
 * it; an engine error is docker_command_failed with details { statusCode, message,
 * method, path }. Returns -1 (or 0 when the request succeeded and nothing was set).
 */
int http_req_error(const http_req_t *r, err_t *err);
/* The engine's error text of a finished request ("message" of the JSON body, or the body). */
char *http_req_engine_message(const http_req_t *r);
/* Parses the response body; sets a docker_command_failed error on malformed JSON. */
json_t *http_req_json(const http_req_t *r, err_t *err);
/*
 * The "Id" of a finished create's reply (an exec's, a commit's): a copy, or NULL with err
 * set: the request's own failure, a reply that is not JSON, `missing` (the message of a
 * docker_command_failed error) when it has no non-empty Id string, or out of memory.
 */
char *http_req_reply_id(const http_req_t *r, const char *missing, err_t *err);
/*
 * Percent-escapes one path segment or query value: every byte outside RFC 3986's
 * unreserved set (A-Z a-z 0-9 - . _ ~) is escaped, "/" included, and so are the dots of
 * "." and "..", so the result is always exactly one segment that libcurl cannot collapse
 * (it removes dot segments before sending). An engine that decodes the path and finds a
 * dot segment in it answers with a redirect (Docker: 301), which is never followed.
 * Caller frees.
 */
char *url_escape(const char *s);

#endif
