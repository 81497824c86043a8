/*
 * agent_wire.c - encoder and decoder of the host <-> agent protocol (agent_wire.h,
 * src/agent/PROTOCOL.md).
 *
 * Owns: nothing; no allocation, no global state. Each decoder reads through a bounded
 * cursor that stops at the first field that does not fit, checks every length, count and
 * enum against the bounds in agent_wire.h, and refuses trailing bytes, so a payload is
 * either fully valid or refused as a whole.
 */
#include "agent_wire.h"

#include <string.h>

/* ---- names ---- */

const char *aw_status_str(int status) {
  switch (status) {
  case AW_OK: return "ok";
  case AW_ERR_SHORT: return "payload ends inside a field";
  case AW_ERR_TRAILING: return "bytes after the last field";
  case AW_ERR_LIMIT: return "a length or count is over its bound";
  case AW_ERR_VALUE: return "a field is outside its range";
  case AW_ERR_NUL: return "a NUL byte where none can be represented";
  case AW_ERR_FRAME_SIZE: return "frame larger than the maximum";
  case AW_ERR_RESERVED: return "reserved header byte is not zero";
  case AW_ERR_TYPE: return "unknown frame type for this direction";
  case AW_ERR_FLAGS: return "unknown or misplaced header flag";
  case AW_ERR_STREAM: return "invalid stream for this frame";
  case AW_ERR_ID: return "invalid id for this frame";
  case AW_ERR_OVERFLOW: return "output buffer too small";
  default: return "unknown status";
  }
}

static const char *const ERROR_NAMES[] = {
    "unknown",        "protocol",   "unsupported",   "limit",          "invalid",       "duplicate_id",
    "not_found",      "symlink",    "not_regular",   "is_directory",   "not_directory", "too_large",
    "permission",     "io",         "spawn_failed",  "cancelled",      "length_mismatch", "resources",
    "flow_control",   "no_workdir", "outside",       "read_only",      "no_space",      "shutdown",
    "version",
};

const char *aw_error_name(unsigned kind) {
  if (kind == 0 || kind >= sizeof(ERROR_NAMES) / sizeof(ERROR_NAMES[0])) return "unknown";
  return ERROR_NAMES[kind];
}

const char *aw_type_name(unsigned type) {
  switch (type) {
  case AW_T_HELLO: return "HELLO";
  case AW_T_PONG: return "PONG";
  case AW_T_STARTED: return "STARTED";
  case AW_T_EXITED: return "EXITED";
  case AW_T_RESULT: return "RESULT";
  case AW_T_ERROR: return "ERROR";
  case AW_T_DATA: return "DATA";
  case AW_T_WINDOW: return "WINDOW";
  case AW_T_HOST_HELLO: return "HOST_HELLO";
  case AW_T_PING: return "PING";
  case AW_T_CANCEL: return "CANCEL";
  case AW_T_EXEC: return "EXEC";
  case AW_T_READ: return "READ";
  case AW_T_WRITE: return "WRITE";
  case AW_T_MKDIR: return "MKDIR";
  case AW_T_LIST: return "LIST";
  case AW_T_PORT_WAIT: return "PORT_WAIT";
  case AW_T_SIGNAL: return "SIGNAL";
  case AW_T_GROUP_ALIVE: return "GROUP_ALIVE";
  default: return "unknown";
  }
}

int aw_has_nul(const uint8_t *p, size_t len) { return len > 0 && memchr(p, 0, len) != NULL; }

/* ---- big-endian helpers ---- */

static uint16_t get16(const uint8_t *p) { return (uint16_t)((unsigned)p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }
static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* ---- frames ---- */

void aw_header_encode(uint8_t out[AW_HEADER_LEN], const aw_header_t *h) {
  put32(out, h->len);
  out[4] = h->type;
  out[5] = h->flags;
  out[6] = h->stream;
  out[7] = h->reserved;
  put32(out + 8, h->id);
}

static int type_from_agent(unsigned t) { return t >= AW_T_HELLO && t <= AW_T_WINDOW; }
static int type_from_host(unsigned t) {
  return t == AW_T_DATA || t == AW_T_WINDOW || (t >= AW_T_HOST_HELLO && t <= AW_T_GROUP_ALIVE);
}

/* Checks a decoded header against the rules for frames sent by `from`. */
static int aw_header_check(const aw_header_t *h, int from) {
  if (h->len > AW_MAX_PAYLOAD) return AW_ERR_FRAME_SIZE;
  if (h->reserved != 0) return AW_ERR_RESERVED;
  if (from == AW_FROM_AGENT ? !type_from_agent(h->type) : !type_from_host(h->type)) return AW_ERR_TYPE;
  if (h->type == AW_T_DATA) {
    if (h->len > AW_MAX_DATA) return AW_ERR_FRAME_SIZE;
    if (h->flags & ~AW_F_END) return AW_ERR_FLAGS;
  } else if (h->flags != 0) {
    return AW_ERR_FLAGS;
  }
  if (h->type == AW_T_DATA || h->type == AW_T_WINDOW) {
    /* Each direction's data streams: the host writes AW_S_IN; the agent AW_S_OUT and
     * AW_S_ERR. A WINDOW names a stream of the other side. */
    int host_stream = h->stream == AW_S_IN;
    int agent_stream = h->stream == AW_S_OUT || h->stream == AW_S_ERR;
    int ok;
    if (h->type == AW_T_DATA) ok = from == AW_FROM_HOST ? host_stream : agent_stream;
    else ok = from == AW_FROM_HOST ? agent_stream : host_stream;
    if (!ok) return AW_ERR_STREAM;
  } else if (h->stream != AW_S_NONE) {
    return AW_ERR_STREAM;
  }
  /* HELLO and HOST_HELLO are the connection's: id 0. PING may use any id. Every other
   * frame belongs to a request: id != 0. */
  if (h->type == AW_T_HELLO || h->type == AW_T_HOST_HELLO) {
    if (h->id != 0) return AW_ERR_ID;
  } else if (h->type == AW_T_ERROR) {
    /* id 0: a connection-level error (the agent is about to exit). */
  } else if (h->type != AW_T_PING && h->type != AW_T_PONG && h->id == 0) {
    return AW_ERR_ID;
  }
  return AW_OK;
}

int aw_frame_parse(const uint8_t *buf, size_t len, int from, aw_header_t *h, const uint8_t **payload,
                   size_t *frame_len) {
  if (len < AW_HEADER_LEN) return 0;
  h->len = get32(buf);
  h->type = buf[4];
  h->flags = buf[5];
  h->stream = buf[6];
  h->reserved = buf[7];
  h->id = get32(buf + 8);
  int rc = aw_header_check(h, from);
  if (rc != AW_OK) return rc;
  if (len - AW_HEADER_LEN < h->len) return 0;
  *payload = buf + AW_HEADER_LEN;
  *frame_len = AW_HEADER_LEN + (size_t)h->len;
  return 1;
}

/* ---- reading cursor ---- */

typedef struct cur {
  const uint8_t *p;
  size_t len;
  int err;
} cur_t;

static void cur_init(cur_t *c, const uint8_t *p, size_t len) {
  c->p = p;
  c->len = p ? len : 0;
  c->err = AW_OK;
}
static int need(cur_t *c, size_t n) {
  if (c->err) return 0;
  if (c->len < n) {
    c->err = AW_ERR_SHORT;
    return 0;
  }
  return 1;
}
static uint8_t r8(cur_t *c) {
  if (!need(c, 1)) return 0;
  uint8_t v = c->p[0];
  c->p++;
  c->len--;
  return v;
}
static uint16_t r16(cur_t *c) {
  if (!need(c, 2)) return 0;
  uint16_t v = get16(c->p);
  c->p += 2;
  c->len -= 2;
  return v;
}
static uint32_t r32(cur_t *c) {
  if (!need(c, 4)) return 0;
  uint32_t v = get32(c->p);
  c->p += 4;
  c->len -= 4;
  return v;
}
static uint64_t r64(cur_t *c) {
  if (!need(c, 8)) return 0;
  uint64_t v = get64(c->p);
  c->p += 8;
  c->len -= 8;
  return v;
}
static void fail(cur_t *c, int err) {
  if (!c->err) c->err = err;
}
/* A u32-length-prefixed byte string of at most `max` bytes; with `no_nul`, refused if it
 * holds a NUL. The length is checked against `max` before the bytes are looked at. */
static aw_bytes_t rblob(cur_t *c, uint32_t max, int no_nul) {
  aw_bytes_t b = {NULL, 0};
  uint32_t n = r32(c);
  if (c->err) return b;
  if (n > max) {
    fail(c, AW_ERR_LIMIT);
    return b;
  }
  if (!need(c, n)) return b;
  if (no_nul && aw_has_nul(c->p, n)) {
    fail(c, AW_ERR_NUL);
    return b;
  }
  b.p = n ? c->p : (const uint8_t *)"";
  b.len = n;
  c->p += n;
  c->len -= n;
  return b;
}
static int done(cur_t *c) {
  if (c->err) return c->err;
  if (c->len != 0) return AW_ERR_TRAILING;
  return AW_OK;
}

/* ---- writer ---- */

void aw_w_init(aw_writer_t *w, uint8_t *buf, size_t cap) {
  w->p = buf;
  w->cap = buf ? cap : 0;
  w->len = 0;
  w->overflow = 0;
}
void aw_w_raw(aw_writer_t *w, const void *p, size_t len) {
  if (w->overflow) return;
  if (w->cap - w->len < len) {
    w->overflow = 1;
    return;
  }
  if (len) memcpy(w->p + w->len, p, len);
  w->len += len;
}
void aw_w_u8(aw_writer_t *w, uint8_t v) { aw_w_raw(w, &v, 1); }
void aw_w_u16(aw_writer_t *w, uint16_t v) {
  uint8_t b[2];
  put16(b, v);
  aw_w_raw(w, b, 2);
}
void aw_w_u32(aw_writer_t *w, uint32_t v) {
  uint8_t b[4];
  put32(b, v);
  aw_w_raw(w, b, 4);
}
static void aw_w_u64(aw_writer_t *w, uint64_t v) {
  aw_w_u32(w, (uint32_t)(v >> 32));
  aw_w_u32(w, (uint32_t)v);
}
void aw_w_blob(aw_writer_t *w, const void *p, uint32_t len) {
  aw_w_u32(w, len);
  aw_w_raw(w, p, len);
}
size_t aw_w_begin(aw_writer_t *w, uint8_t type, uint8_t flags, uint8_t stream, uint32_t id) {
  size_t start = w->len;
  aw_header_t h = {0, type, flags, stream, 0, id};
  uint8_t b[AW_HEADER_LEN];
  aw_header_encode(b, &h);
  aw_w_raw(w, b, sizeof(b));
  return start;
}
int aw_w_end(aw_writer_t *w, size_t start) {
  if (w->overflow) return AW_ERR_OVERFLOW;
  size_t n = w->len - start - AW_HEADER_LEN;
  if (n > AW_MAX_PAYLOAD) return AW_ERR_FRAME_SIZE;
  put32(w->p + start, (uint32_t)n);
  return AW_OK;
}
/* Ends a frame; on failure the writer is put back where the frame started. */
static int finish(aw_writer_t *w, size_t start) {
  int rc = aw_w_end(w, start);
  if (rc != AW_OK) {
    if (start <= w->len) w->len = start;
    w->overflow = 0;
  }
  return rc;
}

/* ---- connection messages ---- */

int aw_dec_hello(const uint8_t *p, size_t len, aw_hello_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  memset(m, 0, sizeof(*m));
  m->magic = r32(&c);
  m->version_min = r16(&c);
  m->version_max = r16(&c);
  m->max_payload = r32(&c);
  m->max_data = r32(&c);
  m->in_window = r32(&c);
  m->max_requests = r32(&c);
  m->caps = r32(&c);
  m->pid = r32(&c);
  m->uid = r32(&c);
  m->gid = r32(&c);
  m->heartbeat_ms = r32(&c);
  m->build = rblob(&c, AW_MAX_BUILD, 1);
  m->arch = rblob(&c, AW_MAX_BUILD, 1);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->magic != AW_MAGIC) return AW_ERR_VALUE;
  if (m->version_min == 0 || m->version_min > m->version_max) return AW_ERR_VALUE;
  if (m->max_payload < 4096 || m->max_payload > AW_MAX_PAYLOAD) return AW_ERR_VALUE;
  if (m->max_data < 1024 || m->max_data > AW_MAX_DATA || m->max_data > m->max_payload) return AW_ERR_VALUE;
  if (m->in_window == 0 || m->in_window > AW_MAX_WINDOW) return AW_ERR_VALUE;
  if (m->max_requests == 0 || m->max_requests > AW_MAX_REQUESTS) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_hello(aw_writer_t *w, const aw_hello_t *m) {
  if (m->build.len > AW_MAX_BUILD || m->arch.len > AW_MAX_BUILD) return AW_ERR_LIMIT;
  size_t s = aw_w_begin(w, AW_T_HELLO, 0, 0, 0);
  aw_w_u32(w, m->magic);
  aw_w_u16(w, m->version_min);
  aw_w_u16(w, m->version_max);
  aw_w_u32(w, m->max_payload);
  aw_w_u32(w, m->max_data);
  aw_w_u32(w, m->in_window);
  aw_w_u32(w, m->max_requests);
  aw_w_u32(w, m->caps);
  aw_w_u32(w, m->pid);
  aw_w_u32(w, m->uid);
  aw_w_u32(w, m->gid);
  aw_w_u32(w, m->heartbeat_ms);
  aw_w_blob(w, m->build.p, m->build.len);
  aw_w_blob(w, m->arch.p, m->arch.len);
  return finish(w, s);
}

int aw_dec_host_hello(const uint8_t *p, size_t len, aw_host_hello_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->version_min = r16(&c);
  m->version_max = r16(&c);
  m->flags = r32(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->version_min == 0 || m->version_min > m->version_max || m->flags != 0) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_host_hello(aw_writer_t *w, const aw_host_hello_t *m) {
  size_t s = aw_w_begin(w, AW_T_HOST_HELLO, 0, 0, 0);
  aw_w_u16(w, m->version_min);
  aw_w_u16(w, m->version_max);
  aw_w_u32(w, m->flags);
  return finish(w, s);
}

int aw_dec_error(const uint8_t *p, size_t len, aw_error_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->kind = r16(&c);
  m->stage = r8(&c);
  uint8_t reserved = r8(&c);
  m->err = (int32_t)r32(&c);
  m->value = r64(&c);
  m->detail = rblob(&c, AW_MAX_DETAIL, 0);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->kind == 0 || reserved != 0 || m->err < 0 || m->err > 4095 || m->stage > AW_STAGE_FORK) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_error(aw_writer_t *w, uint32_t id, const aw_error_t *m) {
  if (m->detail.len > AW_MAX_DETAIL) return AW_ERR_LIMIT;
  size_t s = aw_w_begin(w, AW_T_ERROR, 0, 0, id);
  aw_w_u16(w, m->kind);
  aw_w_u8(w, m->stage);
  aw_w_u8(w, 0);
  aw_w_u32(w, (uint32_t)m->err);
  aw_w_u64(w, m->value);
  aw_w_blob(w, m->detail.p, m->detail.len);
  return finish(w, s);
}

int aw_dec_window(const uint8_t *p, size_t len, uint32_t *increment) {
  cur_t c;
  cur_init(&c, p, len);
  *increment = r32(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (*increment == 0 || *increment > AW_MAX_WINDOW) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_window(aw_writer_t *w, uint32_t id, uint8_t stream, uint32_t increment) {
  size_t s = aw_w_begin(w, AW_T_WINDOW, 0, stream, id);
  aw_w_u32(w, increment);
  return finish(w, s);
}

int aw_put_data(aw_writer_t *w, uint32_t id, uint8_t stream, uint8_t flags, const void *p, size_t len) {
  if (len > AW_MAX_DATA) return AW_ERR_FRAME_SIZE;
  size_t s = aw_w_begin(w, AW_T_DATA, flags, stream, id);
  aw_w_raw(w, p, len);
  return finish(w, s);
}

int aw_dec_ping(const uint8_t *p, size_t len) {
  (void)p;
  return len > AW_MAX_PING ? AW_ERR_LIMIT : AW_OK;
}

int aw_put_ping(aw_writer_t *w, uint8_t type, uint32_t id, const void *p, size_t len) {
  if (len > AW_MAX_PING) return AW_ERR_LIMIT;
  size_t s = aw_w_begin(w, type, 0, 0, id);
  aw_w_raw(w, p, len);
  return finish(w, s);
}

int aw_dec_cancel(const uint8_t *p, size_t len) {
  (void)p;
  return len != 0 ? AW_ERR_TRAILING : AW_OK;
}

int aw_put_cancel(aw_writer_t *w, uint32_t id) {
  size_t s = aw_w_begin(w, AW_T_CANCEL, 0, 0, id);
  return finish(w, s);
}

/* ---- EXEC ---- */

#define PID_LIMIT 4194304u /* Linux PID_MAX_LIMIT */

int aw_dec_started(const uint8_t *p, size_t len, aw_started_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->pid = r32(&c);
  m->pgid = r32(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->pid < 2 || m->pid > PID_LIMIT || m->pgid < 2 || m->pgid > PID_LIMIT) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_started(aw_writer_t *w, uint32_t id, const aw_started_t *m) {
  size_t s = aw_w_begin(w, AW_T_STARTED, 0, 0, id);
  aw_w_u32(w, m->pid);
  aw_w_u32(w, m->pgid);
  return finish(w, s);
}

static void r_exit_head(cur_t *c, aw_exit_t *m) {
  memset(m, 0, sizeof(*m));
  m->how = r8(c);
  m->signal = r8(c);
  m->flags = r8(c);
  if (r8(c) != 0) fail(c, AW_ERR_VALUE);
  m->code = (int32_t)r32(c);
}
static int check_exit(const aw_exit_t *m) {
  if (m->flags & ~AW_EXITF_ALL) return AW_ERR_VALUE;
  if (m->how == AW_EXIT_CODE) {
    if (m->signal != 0 || m->code < 0 || m->code > 255 || (m->flags & AW_EXITF_CORE)) return AW_ERR_VALUE;
  } else if (m->how == AW_EXIT_SIGNAL) {
    if (m->signal < 1 || m->signal > 64 || m->code != 128 + m->signal) return AW_ERR_VALUE;
  } else {
    return AW_ERR_VALUE;
  }
  return AW_OK;
}
static void w_exit_head(aw_writer_t *w, const aw_exit_t *m) {
  aw_w_u8(w, m->how);
  aw_w_u8(w, m->signal);
  aw_w_u8(w, m->flags);
  aw_w_u8(w, 0);
  aw_w_u32(w, (uint32_t)m->code);
}

int aw_dec_exited(const uint8_t *p, size_t len, aw_exit_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  r_exit_head(&c, m);
  int rc = done(&c);
  return rc != AW_OK ? rc : check_exit(m);
}

int aw_put_exited(aw_writer_t *w, uint32_t id, const aw_exit_t *m) {
  size_t s = aw_w_begin(w, AW_T_EXITED, 0, 0, id);
  w_exit_head(w, m);
  return finish(w, s);
}

int aw_dec_exec_result(const uint8_t *p, size_t len, aw_exit_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  r_exit_head(&c, m);
  m->out_bytes = r64(&c);
  m->err_bytes = r64(&c);
  m->duration_us = r64(&c);
  int rc = done(&c);
  return rc != AW_OK ? rc : check_exit(m);
}

int aw_put_exec_result(aw_writer_t *w, uint32_t id, const aw_exit_t *m) {
  size_t s = aw_w_begin(w, AW_T_RESULT, 0, 0, id);
  w_exit_head(w, m);
  aw_w_u64(w, m->out_bytes);
  aw_w_u64(w, m->err_bytes);
  aw_w_u64(w, m->duration_us);
  return finish(w, s);
}

/* A list of `count` strings (count <= max_count), each <= max_len and NUL-free; with
 * `env`, each has a '=' after a non-empty name; with `first_nonempty`, the first string is
 * not empty. Checks every element now so that aw_list_next cannot fail later. */
static aw_list_t rlist(cur_t *c, uint32_t min_count, uint32_t max_count, int env, int first_nonempty) {
  aw_list_t l = {NULL, 0, 0};
  uint32_t count = r32(c);
  if (c->err) return l;
  if (count > max_count) {
    fail(c, AW_ERR_LIMIT);
    return l;
  }
  if (count < min_count) {
    fail(c, AW_ERR_VALUE);
    return l;
  }
  const uint8_t *start = c->p;
  for (uint32_t i = 0; i < count; i++) {
    aw_bytes_t b = rblob(c, AW_MAX_ARG_LEN, 1);
    if (c->err) return l;
    if (i == 0 && first_nonempty && b.len == 0) {
      fail(c, AW_ERR_VALUE);
      return l;
    }
    if (env) {
      const uint8_t *eq = b.len ? memchr(b.p, '=', b.len) : NULL;
      if (eq == NULL || eq == b.p) {
        fail(c, AW_ERR_VALUE);
        return l;
      }
    }
  }
  l.p = start;
  l.len = (size_t)(c->p - start);
  l.count = count;
  return l;
}

int aw_list_next(aw_list_t *it, aw_bytes_t *out) {
  if (it->count == 0 || it->len < 4) return 0;
  uint32_t n = get32(it->p);
  if (n > it->len - 4) return 0; /* cannot happen for a validated list */
  out->p = it->p + 4;
  out->len = n;
  it->p += 4 + (size_t)n;
  it->len -= 4 + (size_t)n;
  it->count--;
  return 1;
}

int aw_dec_exec(const uint8_t *p, size_t len, aw_exec_req_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  memset(m, 0, sizeof(*m));
  m->flags = r32(&c);
  m->timeout_ms = r32(&c);
  m->window = r32(&c);
  m->cwd = rblob(&c, AW_MAX_PATH, 1);
  m->argv = rlist(&c, 1, AW_MAX_ARGC, 0, 1);
  m->env = rlist(&c, 0, AW_MAX_ENVC, 1, 0);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if ((m->flags & ~AW_EXEC_FLAGS_ALL) || m->window > AW_MAX_WINDOW) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_exec(aw_writer_t *w, uint32_t id, const aw_exec_enc_t *m) {
  size_t s = aw_w_begin(w, AW_T_EXEC, 0, 0, id);
  aw_w_u32(w, m->flags);
  aw_w_u32(w, m->timeout_ms);
  aw_w_u32(w, m->window);
  aw_w_blob(w, m->cwd.p, m->cwd.len);
  aw_w_u32(w, m->argc);
  for (uint32_t i = 0; i < m->argc; i++) aw_w_blob(w, m->argv[i].p, m->argv[i].len);
  aw_w_u32(w, m->envc);
  for (uint32_t i = 0; i < m->envc; i++) aw_w_blob(w, m->env[i].p, m->env[i].len);
  return finish(w, s);
}

/* ---- files ---- */

int aw_dec_read(const uint8_t *p, size_t len, aw_read_req_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->max_bytes = r64(&c);
  m->window = r32(&c);
  m->flags = r32(&c);
  m->path = rblob(&c, AW_MAX_PATH, 1);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->window > AW_MAX_WINDOW || m->flags != 0) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_read(aw_writer_t *w, uint32_t id, const aw_read_req_t *m) {
  size_t s = aw_w_begin(w, AW_T_READ, 0, 0, id);
  aw_w_u64(w, m->max_bytes);
  aw_w_u32(w, m->window);
  aw_w_u32(w, m->flags);
  aw_w_blob(w, m->path.p, m->path.len);
  return finish(w, s);
}

int aw_dec_read_result(const uint8_t *p, size_t len, aw_read_res_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->bytes = r64(&c);
  m->mode = r32(&c);
  m->flags = r32(&c);
  m->mtime_ns = (int64_t)r64(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->flags & ~AW_READF_TRUNCATED) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_read_result(aw_writer_t *w, uint32_t id, const aw_read_res_t *m) {
  size_t s = aw_w_begin(w, AW_T_RESULT, 0, 0, id);
  aw_w_u64(w, m->bytes);
  aw_w_u32(w, m->mode);
  aw_w_u32(w, m->flags);
  aw_w_u64(w, (uint64_t)m->mtime_ns);
  return finish(w, s);
}

int aw_dec_write(const uint8_t *p, size_t len, aw_write_req_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->length = r64(&c);
  m->mode = r32(&c);
  m->flags = r32(&c);
  m->path = rblob(&c, AW_MAX_PATH, 1);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->mode > 07777 || (m->flags & ~AW_WRITE_FLAGS_ALL)) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_write(aw_writer_t *w, uint32_t id, const aw_write_req_t *m) {
  size_t s = aw_w_begin(w, AW_T_WRITE, 0, 0, id);
  aw_w_u64(w, m->length);
  aw_w_u32(w, m->mode);
  aw_w_u32(w, m->flags);
  aw_w_blob(w, m->path.p, m->path.len);
  return finish(w, s);
}

int aw_dec_write_result(const uint8_t *p, size_t len, aw_write_res_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->bytes = r64(&c);
  m->mode = r32(&c);
  return done(&c);
}

int aw_put_write_result(aw_writer_t *w, uint32_t id, const aw_write_res_t *m) {
  size_t s = aw_w_begin(w, AW_T_RESULT, 0, 0, id);
  aw_w_u64(w, m->bytes);
  aw_w_u32(w, m->mode);
  return finish(w, s);
}

int aw_dec_mkdir(const uint8_t *p, size_t len, aw_mkdir_req_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->mode = r32(&c);
  m->flags = r32(&c);
  m->path = rblob(&c, AW_MAX_PATH, 1);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->mode > 07777 || (m->flags & ~AW_MKDIR_FLAGS_ALL)) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_mkdir(aw_writer_t *w, uint32_t id, const aw_mkdir_req_t *m) {
  size_t s = aw_w_begin(w, AW_T_MKDIR, 0, 0, id);
  aw_w_u32(w, m->mode);
  aw_w_u32(w, m->flags);
  aw_w_blob(w, m->path.p, m->path.len);
  return finish(w, s);
}

int aw_dec_mkdir_result(const uint8_t *p, size_t len, aw_mkdir_res_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->created = r8(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  return m->created > 1 ? AW_ERR_VALUE : AW_OK;
}

int aw_put_mkdir_result(aw_writer_t *w, uint32_t id, const aw_mkdir_res_t *m) {
  size_t s = aw_w_begin(w, AW_T_RESULT, 0, 0, id);
  aw_w_u8(w, m->created);
  return finish(w, s);
}

int aw_dec_list(const uint8_t *p, size_t len, aw_list_req_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->max_entries = r32(&c);
  m->window = r32(&c);
  m->flags = r32(&c);
  m->path = rblob(&c, AW_MAX_PATH, 1);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->max_entries > AW_MAX_LIST_ENTRIES) return AW_ERR_LIMIT;
  if (m->max_entries == 0 || m->window > AW_MAX_WINDOW || m->flags != 0) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_list(aw_writer_t *w, uint32_t id, const aw_list_req_t *m) {
  size_t s = aw_w_begin(w, AW_T_LIST, 0, 0, id);
  aw_w_u32(w, m->max_entries);
  aw_w_u32(w, m->window);
  aw_w_u32(w, m->flags);
  aw_w_blob(w, m->path.p, m->path.len);
  return finish(w, s);
}

int aw_dec_list_result(const uint8_t *p, size_t len, aw_list_res_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->count = r32(&c);
  m->flags = r32(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->count > AW_MAX_LIST_ENTRIES || (m->flags & ~AW_LISTF_TRUNCATED)) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_list_result(aw_writer_t *w, uint32_t id, const aw_list_res_t *m) {
  size_t s = aw_w_begin(w, AW_T_RESULT, 0, 0, id);
  aw_w_u32(w, m->count);
  aw_w_u32(w, m->flags);
  return finish(w, s);
}

size_t aw_entry_size(const aw_entry_t *e) { return AW_ENTRY_FIXED + (size_t)e->name.len; }

int aw_entry_next(const uint8_t **p, size_t *len, aw_entry_t *e) {
  if (*len == 0) return 0;
  cur_t c;
  cur_init(&c, *p, *len);
  e->type = r8(&c);
  uint8_t reserved = r8(&c);
  uint16_t n = r16(&c);
  e->mode = r32(&c);
  e->size = r64(&c);
  e->mtime_ns = (int64_t)r64(&c);
  if (c.err) return c.err;
  if (reserved != 0 || e->type > AW_ENT_OTHER) return AW_ERR_VALUE;
  if (n == 0 || n > AW_MAX_NAME) return AW_ERR_LIMIT;
  if (c.len < n) return AW_ERR_SHORT;
  if (aw_has_nul(c.p, n)) return AW_ERR_NUL;
  if (memchr(c.p, '/', n) != NULL) return AW_ERR_VALUE;
  if ((n == 1 && c.p[0] == '.') || (n == 2 && c.p[0] == '.' && c.p[1] == '.')) return AW_ERR_VALUE;
  e->name.p = c.p;
  e->name.len = n;
  *p = c.p + n;
  *len = c.len - n;
  return 1;
}

int aw_put_entry(aw_writer_t *w, const aw_entry_t *e) {
  if (e->name.len == 0 || e->name.len > AW_MAX_NAME) return AW_ERR_LIMIT;
  size_t start = w->len;
  aw_w_u8(w, e->type);
  aw_w_u8(w, 0);
  aw_w_u16(w, (uint16_t)e->name.len);
  aw_w_u32(w, e->mode);
  aw_w_u64(w, e->size);
  aw_w_u64(w, (uint64_t)e->mtime_ns);
  aw_w_raw(w, e->name.p, e->name.len);
  if (w->overflow) {
    w->len = start;
    w->overflow = 0;
    return AW_ERR_OVERFLOW;
  }
  return AW_OK;
}

/* ---- ports and processes ---- */

int aw_dec_port_wait(const uint8_t *p, size_t len, aw_port_req_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->port = r16(&c);
  m->flags = r16(&c);
  m->timeout_ms = r32(&c);
  m->interval_ms = r32(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->port == 0 || (m->flags & ~(AW_PORT_V4 | AW_PORT_V6))) return AW_ERR_VALUE;
  if (m->timeout_ms > AW_MAX_TIMEOUT_MS || m->interval_ms > AW_MAX_TIMEOUT_MS) return AW_ERR_LIMIT;
  if (m->interval_ms != 0 && m->interval_ms < AW_MIN_INTERVAL_MS) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_port_wait(aw_writer_t *w, uint32_t id, const aw_port_req_t *m) {
  size_t s = aw_w_begin(w, AW_T_PORT_WAIT, 0, 0, id);
  aw_w_u16(w, m->port);
  aw_w_u16(w, m->flags);
  aw_w_u32(w, m->timeout_ms);
  aw_w_u32(w, m->interval_ms);
  return finish(w, s);
}

int aw_dec_port_result(const uint8_t *p, size_t len, aw_port_res_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->found = r8(&c);
  m->families = r8(&c);
  uint16_t reserved = r16(&c);
  m->waited_ms = r32(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->found > 1 || reserved != 0 || (m->families & ~(AW_PORT_V4 | AW_PORT_V6))) return AW_ERR_VALUE;
  if ((m->found != 0) != (m->families != 0)) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_port_result(aw_writer_t *w, uint32_t id, const aw_port_res_t *m) {
  size_t s = aw_w_begin(w, AW_T_RESULT, 0, 0, id);
  aw_w_u8(w, m->found);
  aw_w_u8(w, m->families);
  aw_w_u16(w, 0);
  aw_w_u32(w, m->waited_ms);
  return finish(w, s);
}

int aw_dec_signal(const uint8_t *p, size_t len, aw_signal_req_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->pgid = (int32_t)r32(&c);
  m->signal = r8(&c);
  m->flags = r8(&c);
  uint16_t reserved = r16(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->signal < 1 || m->signal > 64 || (m->flags & ~AW_SIGNAL_FLAGS_ALL) || reserved != 0) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_signal(aw_writer_t *w, uint32_t id, const aw_signal_req_t *m) {
  size_t s = aw_w_begin(w, AW_T_SIGNAL, 0, 0, id);
  aw_w_u32(w, (uint32_t)m->pgid);
  aw_w_u8(w, m->signal);
  aw_w_u8(w, m->flags);
  aw_w_u16(w, 0);
  return finish(w, s);
}

int aw_dec_signal_result(const uint8_t *p, size_t len, aw_signal_res_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->delivered = r8(&c);
  uint8_t r1 = r8(&c);
  uint16_t r2 = r16(&c);
  m->count = r32(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->delivered > 1 || r1 != 0 || r2 != 0 || m->count > PID_LIMIT) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_signal_result(aw_writer_t *w, uint32_t id, const aw_signal_res_t *m) {
  size_t s = aw_w_begin(w, AW_T_RESULT, 0, 0, id);
  aw_w_u8(w, m->delivered);
  aw_w_u8(w, 0);
  aw_w_u16(w, 0);
  aw_w_u32(w, m->count);
  return finish(w, s);
}

int aw_dec_group_alive(const uint8_t *p, size_t len, aw_alive_req_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->pgid = (int32_t)r32(&c);
  return done(&c);
}

int aw_put_group_alive(aw_writer_t *w, uint32_t id, const aw_alive_req_t *m) {
  size_t s = aw_w_begin(w, AW_T_GROUP_ALIVE, 0, 0, id);
  aw_w_u32(w, (uint32_t)m->pgid);
  return finish(w, s);
}

int aw_dec_alive_result(const uint8_t *p, size_t len, aw_alive_res_t *m) {
  cur_t c;
  cur_init(&c, p, len);
  m->alive = r8(&c);
  uint8_t r1 = r8(&c);
  uint16_t r2 = r16(&c);
  m->members = r32(&c);
  m->zombies = r32(&c);
  int rc = done(&c);
  if (rc != AW_OK) return rc;
  if (m->alive > 1 || r1 != 0 || r2 != 0) return AW_ERR_VALUE;
  if (m->members != AW_UNKNOWN && m->members > PID_LIMIT) return AW_ERR_VALUE;
  if (m->zombies != AW_UNKNOWN && m->zombies > PID_LIMIT) return AW_ERR_VALUE;
  return AW_OK;
}

int aw_put_alive_result(aw_writer_t *w, uint32_t id, const aw_alive_res_t *m) {
  size_t s = aw_w_begin(w, AW_T_RESULT, 0, 0, id);
  aw_w_u8(w, m->alive);
  aw_w_u8(w, 0);
  aw_w_u16(w, 0);
  aw_w_u32(w, m->members);
  aw_w_u32(w, m->zombies);
  return finish(w, s);
}
