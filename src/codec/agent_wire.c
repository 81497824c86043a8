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

const char *aw_error_name(unsigned kind) {
#define AW_ERROR_NAME_(name, code, wire) \
  case code: return wire;
  switch (kind) {
    AW_ERROR_KINDS(AW_ERROR_NAME_)
  default: return "unknown";
  }
#undef AW_ERROR_NAME_
}

const char *aw_type_name(unsigned type) {
#define AW_TYPE_NAME_(name, code, sender) \
  case AW_T_##name: return #name;
  switch (type) {
    AW_FRAME_TYPES(AW_TYPE_NAME_)
  default: return "unknown";
  }
#undef AW_TYPE_NAME_
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

/* Who may send each type: AW_FROM_AGENT, AW_FROM_HOST or both (AW_FRAME_TYPES). */
#define AW_SENDS_AGENT AW_FROM_AGENT
#define AW_SENDS_HOST AW_FROM_HOST
#define AW_SENDS_BOTH (AW_FROM_AGENT | AW_FROM_HOST)
static int type_sent_by(unsigned type, int from) {
#define AW_TYPE_SENDER_(name, code, sender) \
  case AW_T_##name: return (AW_SENDS_##sender & from) != 0;
  switch (type) {
    AW_FRAME_TYPES(AW_TYPE_SENDER_)
  default: return 0;
  }
#undef AW_TYPE_SENDER_
}

/* Checks a decoded header against the rules for frames sent by `from`. */
static int aw_header_check(const aw_header_t *h, int from) {
  if (h->len > AW_MAX_PAYLOAD) return AW_ERR_FRAME_SIZE;
  if (h->reserved != 0) return AW_ERR_RESERVED;
  if (!type_sent_by(h->type, from)) return AW_ERR_TYPE;
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

/* ---- string lists ---- */

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

/* ---- the messages of the table (agent_wire.h, AW_MESSAGES) ---- */

/* Range tests through functions: the table's bounds are often the type's own, which a
 * comparison written in place would warn about. */
static int outside_u(uint64_t v, uint64_t lo, uint64_t hi) { return v < lo || v > hi; }
static int outside_i(int64_t v, int64_t lo, int64_t hi) { return v < lo || v > hi; }

/* Reading each field (lists and blobs are bounded as they are read). */
#define RD_(kind, n, a, b) RD_##kind(n, a, b)
#define RD_U8(n, a, b) m->n = r8(&c);
#define RD_MASK8(n, a, b) m->n = r8(&c);
#define RD_U16(n, a, b) m->n = r16(&c);
#define RD_MASK16(n, a, b) m->n = r16(&c);
#define RD_U32(n, a, b) m->n = r32(&c);
#define RD_U32L(n, a, b) m->n = r32(&c);
#define RD_MASK32(n, a, b) m->n = r32(&c);
#define RD_I32(n, a, b) m->n = (int32_t)r32(&c);
#define RD_U64(n, a, b) m->n = r64(&c);
#define RD_I64(n, a, b) m->n = (int64_t)r64(&c);
#define RD_ZERO8(n, a, b) zero &= r8(&c) == 0;
#define RD_ZERO16(n, a, b) zero &= r16(&c) == 0;
#define RD_BLOB(n, a, b) m->n = rblob(&c, a, b);
#define RD_ARGV(n, a, b) m->n = rlist(&c, a, b, 0, 1);
#define RD_ENVS(n, a, b) m->n = rlist(&c, a, b, 1, 0);

/* Each field's rule, once the whole payload has been read. */
#define CK_(kind, n, a, b) CK_##kind(n, a, b)
#define CK_U8(n, a, b) if (outside_u(m->n, a, b)) return AW_ERR_VALUE;
#define CK_U16 CK_U8
#define CK_U32 CK_U8
#define CK_U32L(n, a, b)                            \
  if (m->n < (uint64_t)(a)) return AW_ERR_VALUE;    \
  if (outside_u(m->n, 0, b)) return AW_ERR_LIMIT;
#define CK_I32(n, a, b) if (outside_i(m->n, a, b)) return AW_ERR_VALUE;
#define CK_MASK8(n, a, b) if (m->n & ~(uint32_t)(a)) return AW_ERR_VALUE;
#define CK_MASK16 CK_MASK8
#define CK_MASK32 CK_MASK8
#define CK_ZERO8(n, a, b) if (!zero) return AW_ERR_VALUE;
#define CK_ZERO16 CK_ZERO8
#define CK_U64(n, a, b)
#define CK_I64(n, a, b)
#define CK_BLOB(n, a, b)
#define CK_ARGV(n, a, b)
#define CK_ENVS(n, a, b)

/* Writing each field. */
#define WR_(kind, n, a, b) WR_##kind(n)
#define WR_U8(n) aw_w_u8(w, m->n);
#define WR_MASK8 WR_U8
#define WR_U16(n) aw_w_u16(w, m->n);
#define WR_MASK16 WR_U16
#define WR_U32(n) aw_w_u32(w, m->n);
#define WR_U32L WR_U32
#define WR_MASK32 WR_U32
#define WR_I32(n) aw_w_u32(w, (uint32_t)m->n);
#define WR_U64(n) aw_w_u64(w, m->n);
#define WR_I64(n) aw_w_u64(w, (uint64_t)m->n);
#define WR_ZERO8(n) aw_w_u8(w, 0);
#define WR_ZERO16(n) aw_w_u16(w, 0);
#define WR_BLOB(n) aw_w_blob(w, m->n.p, m->n.len);
#define WR_ARGV(n)                                                                     \
  aw_w_u32(w, m->n##_count);                                                           \
  for (uint32_t i = 0; i < m->n##_count; i++) aw_w_blob(w, m->n[i].p, m->n[i].len);
#define WR_ENVS WR_ARGV

/* What the agent sends is bounded before it is written (the host refuses it otherwise). */
#define BOUND_(kind, n, a, b) BOUND_##kind(n, a)
#define BOUND_BLOB(n, a) if (m->n.len > (a)) return AW_ERR_LIMIT;
#define BOUND_U8(n, a)
#define BOUND_MASK8 BOUND_U8
#define BOUND_U16 BOUND_U8
#define BOUND_MASK16 BOUND_U8
#define BOUND_U32 BOUND_U8
#define BOUND_U32L BOUND_U8
#define BOUND_MASK32 BOUND_U8
#define BOUND_I32 BOUND_U8
#define BOUND_U64 BOUND_U8
#define BOUND_I64 BOUND_U8
#define BOUND_ZERO8 BOUND_U8
#define BOUND_ZERO16 BOUND_U8
#define BOUND_ARGV BOUND_U8
#define BOUND_ENVS BOUND_U8
#define BOUND_FIELDS_AGENT(fields) fields(BOUND_)
#define BOUND_FIELDS_HOST(fields)

/* The relations between fields (the rows' `check`). */
#define AW_NO_CHECK(m) AW_OK

static int aw_check_hello(const aw_hello_t *m) {
  if (m->version_min > m->version_max || m->max_data > m->max_payload) return AW_ERR_VALUE;
  return AW_OK;
}

static int aw_check_host_hello(const aw_host_hello_t *m) {
  return m->version_min > m->version_max ? AW_ERR_VALUE : AW_OK;
}

/* An exit is a status 0..255 without a signal, or signal n with code 128 + n. */
static int aw_check_exit(const aw_exit_t *m) {
  if (m->how == AW_EXIT_CODE) {
    if (m->signal != 0 || (m->flags & AW_EXITF_CORE)) return AW_ERR_VALUE;
  } else if (m->signal < 1 || m->code != 128 + m->signal) {
    return AW_ERR_VALUE;
  }
  return AW_OK;
}

static int aw_check_port_wait(const aw_port_req_t *m) {
  return m->interval_ms != 0 && m->interval_ms < AW_MIN_INTERVAL_MS ? AW_ERR_VALUE : AW_OK;
}

static int aw_check_port_result(const aw_port_res_t *m) {
  return (m->found != 0) != (m->families != 0) ? AW_ERR_VALUE : AW_OK;
}

int aw_term_id_ok(const uint8_t *p, size_t len) {
  if (len == 0 || len > AW_MAX_TERM_ID || p[0] == '.') return 0;
  for (size_t i = 0; i < len; i++) {
    uint8_t c = p[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
             c == '-';
    if (!ok) return 0;
  }
  return 1;
}

#define AW_TERM_ID_CHECK(m) (aw_term_id_ok((m)->term_id.p, (m)->term_id.len) ? AW_OK : AW_ERR_VALUE)
static int aw_check_term_open(const aw_term_open_req_t *m) { return AW_TERM_ID_CHECK(m); }
static int aw_check_term_attach(const aw_term_attach_req_t *m) { return AW_TERM_ID_CHECK(m); }
static int aw_check_term_resize(const aw_term_resize_req_t *m) { return AW_TERM_ID_CHECK(m); }
static int aw_check_term_signal(const aw_term_signal_req_t *m) { return AW_TERM_ID_CHECK(m); }

static int aw_check_term_result(const aw_term_res_t *m) {
  if (m->tail > m->head) return AW_ERR_VALUE;
  if (!(m->flags & AW_TERMF_ENDED)) return m->how || m->signal || m->code || (m->flags & AW_TERMF_CORE) ? AW_ERR_VALUE : AW_OK;
  if (m->how == AW_EXIT_CODE) return m->signal || (m->flags & AW_TERMF_CORE) ? AW_ERR_VALUE : AW_OK;
  return m->signal < 1 || m->code != 128 + m->signal ? AW_ERR_VALUE : AW_OK;
}

static int aw_check_term_list_result(const aw_term_list_res_t *m) {
  aw_list_t it = m->ids;
  aw_bytes_t b;
  while (aw_list_next(&it, &b))
    if (!aw_term_id_ok(b.p, b.len)) return AW_ERR_VALUE;
  return AW_OK;
}

static int aw_check_alive_result(const aw_alive_res_t *m) {
  if (m->members != AW_UNKNOWN && m->members > AW_PID_LIMIT) return AW_ERR_VALUE;
  if (m->zombies != AW_UNKNOWN && m->zombies > AW_PID_LIMIT) return AW_ERR_VALUE;
  return AW_OK;
}

#define AW_DEFINE_(name, type, sender, dec_t, enc_t, fields, check) \
  int aw_dec_##name(const uint8_t *p, size_t len, dec_t *m) {       \
    cur_t c;                                                         \
    int zero = 1;                                                    \
    cur_init(&c, p, len);                                            \
    memset(m, 0, sizeof(*m));                                        \
    fields(RD_) int rc = done(&c);                                   \
    if (rc != AW_OK) return rc;                                      \
    (void)zero;                                                      \
    fields(CK_) return check(m);                                     \
  }                                                                  \
  int aw_put_##name(aw_writer_t *w, uint32_t id, const enc_t *m) {   \
    BOUND_FIELDS_##sender(fields) size_t s = aw_w_begin(w, AW_T_##type, 0, 0, id); \
    fields(WR_) return finish(w, s);                                 \
  }
AW_MESSAGES(AW_DEFINE_)

/* ---- framing ---- */

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

/* ---- LIST records ---- */

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

/* ---- WATCH records ---- */

size_t aw_wevent_size(const aw_wevent_t *e) { return AW_WATCH_FIXED + (size_t)e->path.len; }

/* A relative path of clean components: none empty, "." or "..". */
static int clean_relative(const uint8_t *p, size_t n) {
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && p[i] != '/') continue;
    size_t c = i - start;
    if (c == 0 || c > AW_MAX_NAME) return 0;
    if ((c == 1 && p[start] == '.') || (c == 2 && p[start] == '.' && p[start + 1] == '.')) return 0;
    start = i + 1;
  }
  return 1;
}

int aw_wevent_next(const uint8_t **p, size_t *len, aw_wevent_t *e) {
  if (*len == 0) return 0;
  cur_t c;
  cur_init(&c, *p, *len);
  e->type = r8(&c);
  e->kind = r8(&c);
  uint16_t n = r16(&c);
  if (c.err) return c.err;
  if (e->type < AW_WEV_CREATE || e->type > AW_WEV_OVERFLOW || e->kind > AW_WKIND_DIR) return AW_ERR_VALUE;
  if (e->type == AW_WEV_OVERFLOW) {
    if (n != 0 || e->kind != AW_WKIND_NONE) return AW_ERR_VALUE;
  } else {
    if (n == 0 || n > AW_MAX_PATH) return AW_ERR_LIMIT;
    if (e->kind == AW_WKIND_NONE) return AW_ERR_VALUE;
    if (c.len < n) return AW_ERR_SHORT;
    if (aw_has_nul(c.p, n)) return AW_ERR_NUL;
    if (!clean_relative(c.p, n)) return AW_ERR_VALUE;
  }
  e->path.p = c.p;
  e->path.len = n;
  *p = c.p + n;
  *len = c.len - n;
  return 1;
}

int aw_put_wevent(aw_writer_t *w, const aw_wevent_t *e) {
  if (e->path.len > AW_MAX_PATH) return AW_ERR_LIMIT;
  size_t start = w->len;
  aw_w_u8(w, e->type);
  aw_w_u8(w, e->kind);
  aw_w_u16(w, (uint16_t)e->path.len);
  aw_w_raw(w, e->path.p, e->path.len);
  if (w->overflow) {
    w->len = start;
    w->overflow = 0;
    return AW_ERR_OVERFLOW;
  }
  return AW_OK;
}
