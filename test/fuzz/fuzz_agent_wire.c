/*
 * fuzz_agent_wire.c - the agent protocol's codec (src/codec/agent_wire.c): the frame
 * splitter and every payload decoder, on bytes as hostile as a command in the sandbox can
 * make them.
 *
 * Input: one byte choosing the direction (bit 0: 0 frames from the agent, as the host
 * decodes them; 1 frames from the host, as the agent does), then the raw byte stream.
 * Frames are split off one by one with aw_frame_parse; each payload is copied into its
 * own exactly-sized heap block and handed to every decoder that could apply (a RESULT to
 * all the RESULT decoders, DATA to the listing and the watch record iterators). Properties:
 *   - a frame lies inside the input, its payload inside the frame, its length within the
 *     bounds for its type;
 *   - whatever a decoder accepts re-encodes to exactly the same bytes (the encoding is
 *     canonical, so nothing is silently dropped or reinterpreted);
 *   - a validated string list yields exactly its count of strings, each inside the payload,
 *     within its bound and without NUL;
 *   - listing records stay inside the payload and have valid names;
 *   - watch records stay inside the payload, have clean relative paths (or none, for an
 *     overflow) and re-encode to the same bytes.
 *
 * Build and run: make -C test/fuzz agent_wire; bash scripts/fuzz.sh agent_wire
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/agent_wire.h"
#include "fuzz_common.h"

static uint8_t out[AW_HEADER_LEN + AW_MAX_PAYLOAD + 64];

/* The frame `w` wrote must be header + exactly `p[0..len)`. */
static void same_payload(const char *what, const aw_writer_t *w, const uint8_t *p, size_t len) {
  FUZZ_CHECK(w->len == AW_HEADER_LEN + len, "%s re-encoded to %zu bytes, payload was %zu", what,
             w->len - AW_HEADER_LEN, len);
  FUZZ_CHECK(len == 0 || memcmp(w->p + AW_HEADER_LEN, p, len) == 0, "%s re-encoded differently", what);
}

static void check_list(const char *what, aw_list_t l, const uint8_t *lo, const uint8_t *hi, int env) {
  aw_bytes_t b;
  uint32_t n = 0, want = l.count;
  while (aw_list_next(&l, &b)) {
    FUZZ_CHECK(b.len == 0 || (b.p >= lo && b.p + b.len <= hi), "%s string outside the payload", what);
    FUZZ_CHECK(b.len <= AW_MAX_ARG_LEN, "%s string of %u bytes", what, b.len);
    FUZZ_CHECK(!aw_has_nul(b.p, b.len), "%s string with NUL", what);
    if (env) FUZZ_CHECK(b.len > 1 && memchr(b.p + 1, '=', b.len - 1) != NULL, "%s env without a name", what);
    n++;
  }
  FUZZ_CHECK(n == want, "%s yielded %u strings of %u", what, n, want);
}

/* A validated list's strings as the encoder's array (malloc'd; *n set). */
static aw_bytes_t *list_items(aw_list_t it, uint32_t *n) {
  aw_bytes_t *a = malloc(sizeof(aw_bytes_t) * (it.count + 1));
  if (!a) abort();
  *n = 0;
  while (aw_list_next(&it, &a[*n])) (*n)++;
  return a;
}

/* Re-encodes a decoded EXEC through the encoder's form. */
static void exec_roundtrip(const aw_exec_req_t *m, const uint8_t *p, size_t len) {
  uint32_t i, j;
  aw_bytes_t *argv = list_items(m->argv, &i), *env = list_items(m->env, &j);
  aw_exec_enc_t e = {m->flags, m->timeout_ms, m->window, m->cwd, argv, i, env, j};
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  FUZZ_CHECK(aw_put_exec(&w, 1, &e) == AW_OK, "EXEC does not re-encode");
  same_payload("EXEC", &w, p, len);
  free(argv);
  free(env);
}

/* Re-encodes a decoded TERM_OPEN through the encoder's form. */
static void term_open_roundtrip(const aw_term_open_req_t *m, const uint8_t *p, size_t len) {
  uint32_t i, j;
  aw_bytes_t *argv = list_items(m->argv, &i), *env = list_items(m->env, &j);
  aw_term_open_enc_t e = {m->flags, m->window, m->cols, m->rows, m->scrollback, m->term_id, m->cwd, argv, i, env, j};
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  FUZZ_CHECK(aw_put_term_open(&w, 1, &e) == AW_OK, "TERM_OPEN does not re-encode");
  same_payload("TERM_OPEN", &w, p, len);
  free(argv);
  free(env);
}

/* A decoded terminal id is one aw_term_id_ok accepts. */
static void check_term_id(const char *what, aw_bytes_t id) {
  FUZZ_CHECK(id.len >= 1 && id.len <= AW_MAX_TERM_ID && aw_term_id_ok(id.p, id.len), "%s id", what);
  FUZZ_CHECK(id.p[0] != '.' && !memchr(id.p, '/', id.len) && !aw_has_nul(id.p, id.len), "%s id bytes", what);
}

static void from_agent(const aw_header_t *h, const uint8_t *p, size_t len) {
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  switch (h->type) {
  case AW_T_HELLO: {
    aw_hello_t m;
    if (aw_dec_hello(p, len, &m) == AW_OK) {
      FUZZ_CHECK(aw_put_hello(&w, 0, &m) == AW_OK, "HELLO does not re-encode");
      same_payload("HELLO", &w, p, len);
    }
    break;
  }
  case AW_T_PONG:
    if (aw_dec_ping(p, len) == AW_OK) FUZZ_CHECK(len <= AW_MAX_PING, "PONG of %zu bytes", len);
    break;
  case AW_T_STARTED: {
    aw_started_t m;
    if (aw_dec_started(p, len, &m) == AW_OK) {
      FUZZ_CHECK(aw_put_started(&w, h->id, &m) == AW_OK, "STARTED");
      same_payload("STARTED", &w, p, len);
    }
    break;
  }
  case AW_T_EXITED: {
    aw_exit_t m;
    if (aw_dec_exited(p, len, &m) == AW_OK) {
      FUZZ_CHECK(aw_put_exited(&w, h->id, &m) == AW_OK, "EXITED");
      same_payload("EXITED", &w, p, len);
    }
    break;
  }
  case AW_T_ERROR: {
    aw_error_t m;
    if (aw_dec_error(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.detail.len <= AW_MAX_DETAIL, "ERROR detail of %u bytes", m.detail.len);
      FUZZ_CHECK(aw_put_error(&w, h->id, &m) == AW_OK, "ERROR");
      same_payload("ERROR", &w, p, len);
    }
    break;
  }
  case AW_T_WINDOW: {
    uint32_t inc;
    if (aw_dec_window(p, len, &inc) == AW_OK) FUZZ_CHECK(inc > 0 && inc <= AW_MAX_WINDOW, "WINDOW %u", inc);
    break;
  }
  case AW_T_DATA: {
    /* A listing's DATA: records until the payload ends or one is invalid. */
    const uint8_t *q = p;
    size_t l = len;
    aw_entry_t e;
    int rc;
    while ((rc = aw_entry_next(&q, &l, &e)) == 1) {
      FUZZ_CHECK(q >= p && q <= p + len && l == (size_t)(p + len - q), "record cursor outside the payload");
      FUZZ_CHECK(e.name.len >= 1 && e.name.len <= AW_MAX_NAME, "name of %u bytes", e.name.len);
      FUZZ_CHECK(e.name.p >= p && e.name.p + e.name.len <= p + len, "name outside the payload");
      FUZZ_CHECK(!memchr(e.name.p, '/', e.name.len) && !aw_has_nul(e.name.p, e.name.len), "bad name accepted");
      aw_writer_t rw;
      aw_w_init(&rw, out, sizeof(out));
      FUZZ_CHECK(aw_put_entry(&rw, &e) == AW_OK, "record does not re-encode");
      FUZZ_CHECK(rw.len == aw_entry_size(&e) && memcmp(out, e.name.p - AW_ENTRY_FIXED, rw.len) == 0,
                 "record re-encoded differently");
    }
    FUZZ_CHECK(rc == 0 || rc < 0, "entry_next returned %d", rc);
    /* A watch's DATA: the same bytes as watch records. */
    q = p;
    l = len;
    aw_wevent_t we;
    while ((rc = aw_wevent_next(&q, &l, &we)) == 1) {
      FUZZ_CHECK(q >= p && q <= p + len && l == (size_t)(p + len - q), "watch cursor outside the payload");
      FUZZ_CHECK(we.type >= AW_WEV_CREATE && we.type <= AW_WEV_OVERFLOW && we.kind <= AW_WKIND_DIR, "watch record %u/%u",
                 we.type, we.kind);
      if (we.type == AW_WEV_OVERFLOW) {
        FUZZ_CHECK(we.path.len == 0 && we.kind == AW_WKIND_NONE, "overflow with a path or a kind");
      } else {
        FUZZ_CHECK(we.path.len >= 1 && we.path.len <= AW_MAX_PATH && we.kind != AW_WKIND_NONE, "watch path of %u bytes",
                   we.path.len);
        FUZZ_CHECK(we.path.p >= p && we.path.p + we.path.len <= p + len, "watch path outside the payload");
        FUZZ_CHECK(!aw_has_nul(we.path.p, we.path.len), "watch path with NUL");
        FUZZ_CHECK(we.path.p[0] != '/' && we.path.p[we.path.len - 1] != '/', "watch path with a leading or trailing /");
        for (uint32_t i = 0; i + 1 < we.path.len; i++)
          FUZZ_CHECK(!(we.path.p[i] == '/' && we.path.p[i + 1] == '/'), "watch path with an empty component");
      }
      aw_writer_t rw;
      aw_w_init(&rw, out, sizeof(out));
      FUZZ_CHECK(aw_put_wevent(&rw, &we) == AW_OK, "watch record does not re-encode");
      FUZZ_CHECK(rw.len == aw_wevent_size(&we) && memcmp(out, q - rw.len, rw.len) == 0,
                 "watch record re-encoded differently");
    }
    FUZZ_CHECK(rc == 0 || rc < 0, "wevent_next returned %d", rc);
    break;
  }
  case AW_T_RESULT: {
    /* The host knows which request it made; try every result layout. */
    aw_exit_t ex;
    if (aw_dec_exec_result(p, len, &ex) == AW_OK) {
      FUZZ_CHECK(aw_put_exec_result(&w, h->id, &ex) == AW_OK, "exec RESULT");
      same_payload("exec RESULT", &w, p, len);
    }
    aw_read_res_t rr;
    if (aw_dec_read_result(p, len, &rr) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(aw_put_read_result(&w, h->id, &rr) == AW_OK, "READ RESULT");
      same_payload("READ RESULT", &w, p, len);
    }
    aw_write_res_t wr;
    if (aw_dec_write_result(p, len, &wr) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(aw_put_write_result(&w, h->id, &wr) == AW_OK, "WRITE RESULT");
      same_payload("WRITE RESULT", &w, p, len);
    }
    aw_mkdir_res_t mr;
    if (aw_dec_mkdir_result(p, len, &mr) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(aw_put_mkdir_result(&w, h->id, &mr) == AW_OK, "MKDIR RESULT");
      same_payload("MKDIR RESULT", &w, p, len);
    }
    aw_list_res_t lr;
    if (aw_dec_list_result(p, len, &lr) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(aw_put_list_result(&w, h->id, &lr) == AW_OK, "LIST RESULT");
      same_payload("LIST RESULT", &w, p, len);
    }
    aw_port_res_t pr;
    if (aw_dec_port_result(p, len, &pr) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(aw_put_port_result(&w, h->id, &pr) == AW_OK, "PORT RESULT");
      same_payload("PORT RESULT", &w, p, len);
    }
    aw_signal_res_t sr;
    if (aw_dec_signal_result(p, len, &sr) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(aw_put_signal_result(&w, h->id, &sr) == AW_OK, "SIGNAL RESULT");
      same_payload("SIGNAL RESULT", &w, p, len);
    }
    aw_alive_res_t ar;
    if (aw_dec_alive_result(p, len, &ar) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(aw_put_alive_result(&w, h->id, &ar) == AW_OK, "ALIVE RESULT");
      same_payload("ALIVE RESULT", &w, p, len);
    }
    aw_watch_res_t wres;
    if (aw_dec_watch_result(p, len, &wres) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK((wres.flags & ~AW_WATCHF_ALL) == 0, "WATCH RESULT flags %x", wres.flags);
      FUZZ_CHECK(aw_put_watch_result(&w, h->id, &wres) == AW_OK, "WATCH RESULT");
      same_payload("WATCH RESULT", &w, p, len);
    }
    aw_term_res_t tres;
    if (aw_dec_term_result(p, len, &tres) == AW_OK) {
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(tres.tail <= tres.head, "TERM RESULT tail past head");
      FUZZ_CHECK((tres.flags & AW_TERMF_ENDED) || (!tres.how && !tres.signal && !tres.code), "TERM RESULT exit before the end");
      FUZZ_CHECK(tres.cols >= 1 && tres.rows >= 1 && tres.cols <= AW_MAX_TERM_DIM && tres.rows <= AW_MAX_TERM_DIM, "TERM size");
      FUZZ_CHECK(aw_put_term_result(&w, h->id, &tres) == AW_OK, "TERM RESULT");
      same_payload("TERM RESULT", &w, p, len);
    }
    aw_term_list_res_t tl;
    if (aw_dec_term_list_result(p, len, &tl) == AW_OK) {
      FUZZ_CHECK(tl.ids.count <= AW_MAX_TERMS, "TERM_LIST RESULT count");
      uint32_t n;
      aw_bytes_t *ids = list_items(tl.ids, &n);
      for (uint32_t k = 0; k < n; k++) check_term_id("TERM_LIST RESULT", ids[k]);
      aw_term_list_enc_t e = {ids, n};
      aw_w_init(&w, out, sizeof(out));
      FUZZ_CHECK(aw_put_term_list_result(&w, h->id, &e) == AW_OK, "TERM_LIST RESULT");
      same_payload("TERM_LIST RESULT", &w, p, len);
      free(ids);
    }
    break;
  }
  default: FUZZ_CHECK(0, "aw_frame_parse let type %u through from the agent", h->type);
  }
}

static void from_host(const aw_header_t *h, const uint8_t *p, size_t len) {
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  switch (h->type) {
  case AW_T_HOST_HELLO: {
    aw_host_hello_t m;
    if (aw_dec_host_hello(p, len, &m) == AW_OK) {
      FUZZ_CHECK(aw_put_host_hello(&w, 0, &m) == AW_OK, "HOST_HELLO");
      same_payload("HOST_HELLO", &w, p, len);
    }
    break;
  }
  case AW_T_PING: (void)aw_dec_ping(p, len); break;
  case AW_T_CANCEL: FUZZ_CHECK((aw_dec_cancel(p, len) == AW_OK) == (len == 0), "CANCEL"); break;
  case AW_T_DATA: break;
  case AW_T_WINDOW: {
    uint32_t inc;
    (void)aw_dec_window(p, len, &inc);
    break;
  }
  case AW_T_EXEC: {
    aw_exec_req_t m;
    if (aw_dec_exec(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.argv.count >= 1 && m.argv.count <= AW_MAX_ARGC, "argc %u", m.argv.count);
      FUZZ_CHECK(m.env.count <= AW_MAX_ENVC, "envc %u", m.env.count);
      FUZZ_CHECK(m.cwd.len <= AW_MAX_PATH && !aw_has_nul(m.cwd.p, m.cwd.len), "cwd");
      check_list("argv", m.argv, p, p + len, 0);
      check_list("env", m.env, p, p + len, 1);
      exec_roundtrip(&m, p, len);
    }
    break;
  }
  case AW_T_READ: {
    aw_read_req_t m;
    if (aw_dec_read(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.path.len <= AW_MAX_PATH && !aw_has_nul(m.path.p, m.path.len), "READ path");
      FUZZ_CHECK(aw_put_read(&w, h->id, &m) == AW_OK, "READ");
      same_payload("READ", &w, p, len);
    }
    break;
  }
  case AW_T_WRITE: {
    aw_write_req_t m;
    if (aw_dec_write(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.mode <= 07777, "WRITE mode %o", m.mode);
      FUZZ_CHECK(aw_put_write(&w, h->id, &m) == AW_OK, "WRITE");
      same_payload("WRITE", &w, p, len);
    }
    break;
  }
  case AW_T_MKDIR: {
    aw_mkdir_req_t m;
    if (aw_dec_mkdir(p, len, &m) == AW_OK) {
      FUZZ_CHECK(aw_put_mkdir(&w, h->id, &m) == AW_OK, "MKDIR");
      same_payload("MKDIR", &w, p, len);
    }
    break;
  }
  case AW_T_LIST: {
    aw_list_req_t m;
    if (aw_dec_list(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.max_entries >= 1 && m.max_entries <= AW_MAX_LIST_ENTRIES, "max_entries %u", m.max_entries);
      FUZZ_CHECK(aw_put_list(&w, h->id, &m) == AW_OK, "LIST");
      same_payload("LIST", &w, p, len);
    }
    break;
  }
  case AW_T_PORT_WAIT: {
    aw_port_req_t m;
    if (aw_dec_port_wait(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.port != 0 && m.timeout_ms <= AW_MAX_TIMEOUT_MS, "PORT_WAIT values");
      FUZZ_CHECK(aw_put_port_wait(&w, h->id, &m) == AW_OK, "PORT_WAIT");
      same_payload("PORT_WAIT", &w, p, len);
    }
    break;
  }
  case AW_T_SIGNAL: {
    aw_signal_req_t m;
    if (aw_dec_signal(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.signal >= 1 && m.signal <= 64, "signal %u", m.signal);
      FUZZ_CHECK(aw_put_signal(&w, h->id, &m) == AW_OK, "SIGNAL");
      same_payload("SIGNAL", &w, p, len);
    }
    break;
  }
  case AW_T_GROUP_ALIVE: {
    aw_alive_req_t m;
    if (aw_dec_group_alive(p, len, &m) == AW_OK) {
      FUZZ_CHECK(aw_put_group_alive(&w, h->id, &m) == AW_OK, "GROUP_ALIVE");
      same_payload("GROUP_ALIVE", &w, p, len);
    }
    break;
  }
  case AW_T_WATCH: {
    aw_watch_req_t m;
    if (aw_dec_watch(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.max_watches >= 1 && m.max_watches <= AW_MAX_WATCHES, "max_watches %u", m.max_watches);
      FUZZ_CHECK((m.flags & ~AW_WATCH_FLAGS_ALL) == 0 && m.window <= AW_MAX_WINDOW, "WATCH values");
      FUZZ_CHECK(m.path.len <= AW_MAX_PATH && !aw_has_nul(m.path.p, m.path.len), "WATCH path");
      FUZZ_CHECK(aw_put_watch(&w, h->id, &m) == AW_OK, "WATCH");
      same_payload("WATCH", &w, p, len);
    }
    break;
  }
  case AW_T_TERM_OPEN: {
    aw_term_open_req_t m;
    if (aw_dec_term_open(p, len, &m) == AW_OK) {
      FUZZ_CHECK((m.flags & ~AW_TERM_FLAGS_ALL) == 0 && m.window <= AW_MAX_WINDOW, "TERM_OPEN values");
      FUZZ_CHECK(m.scrollback >= AW_MIN_SCROLLBACK && m.scrollback <= AW_MAX_SCROLLBACK, "scrollback %u", m.scrollback);
      FUZZ_CHECK(m.cols >= 1 && m.rows >= 1 && m.cols <= AW_MAX_TERM_DIM && m.rows <= AW_MAX_TERM_DIM, "TERM_OPEN size");
      check_term_id("TERM_OPEN", m.term_id);
      check_list("argv", m.argv, p, p + len, 0);
      check_list("env", m.env, p, p + len, 1);
      term_open_roundtrip(&m, p, len);
    }
    break;
  }
  case AW_T_TERM_ATTACH: {
    aw_term_attach_req_t m;
    if (aw_dec_term_attach(p, len, &m) == AW_OK) {
      FUZZ_CHECK((m.flags & ~AW_TERM_FLAGS_ALL) == 0 && m.window <= AW_MAX_WINDOW, "TERM_ATTACH values");
      check_term_id("TERM_ATTACH", m.term_id);
      FUZZ_CHECK(aw_put_term_attach(&w, h->id, &m) == AW_OK, "TERM_ATTACH");
      same_payload("TERM_ATTACH", &w, p, len);
    }
    break;
  }
  case AW_T_TERM_RESIZE: {
    aw_term_resize_req_t m;
    if (aw_dec_term_resize(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.cols >= 1 && m.rows >= 1 && m.cols <= AW_MAX_TERM_DIM && m.rows <= AW_MAX_TERM_DIM, "TERM_RESIZE size");
      check_term_id("TERM_RESIZE", m.term_id);
      FUZZ_CHECK(aw_put_term_resize(&w, h->id, &m) == AW_OK, "TERM_RESIZE");
      same_payload("TERM_RESIZE", &w, p, len);
    }
    break;
  }
  case AW_T_TERM_SIGNAL: {
    aw_term_signal_req_t m;
    if (aw_dec_term_signal(p, len, &m) == AW_OK) {
      FUZZ_CHECK(m.signal >= 1 && m.signal <= 64, "signal %u", m.signal);
      check_term_id("TERM_SIGNAL", m.term_id);
      FUZZ_CHECK(aw_put_term_signal(&w, h->id, &m) == AW_OK, "TERM_SIGNAL");
      same_payload("TERM_SIGNAL", &w, p, len);
    }
    break;
  }
  case AW_T_TERM_LIST: {
    aw_term_list_req_t m;
    if (aw_dec_term_list(p, len, &m) == AW_OK) {
      FUZZ_CHECK(aw_put_term_list(&w, h->id, &m) == AW_OK, "TERM_LIST");
      same_payload("TERM_LIST", &w, p, len);
    }
    break;
  }
  default: FUZZ_CHECK(0, "aw_frame_parse let type %u through from the host", h->type);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = {data, size};
  int from = (fuzz_u8(&r) & 1) ? AW_FROM_HOST : AW_FROM_AGENT;
  uint8_t *stream = fuzz_dup(r.data, r.len);
  size_t len = r.len, off = 0;
  for (;;) {
    aw_header_t h;
    const uint8_t *payload = NULL;
    size_t flen = 0;
    int rc = aw_frame_parse(stream + off, len - off, from, &h, &payload, &flen);
    if (rc <= 0) {
      FUZZ_CHECK(rc == 0 || (rc >= AW_ERR_ID && rc <= AW_ERR_FRAME_SIZE), "frame_parse returned %d", rc);
      if (rc == 0 && len - off >= AW_HEADER_LEN) {
        FUZZ_CHECK(AW_HEADER_LEN + (size_t)h.len > len - off, "waits for bytes it has");
        FUZZ_CHECK(h.len <= AW_MAX_PAYLOAD, "waits for a frame of %u bytes", h.len);
      }
      break;
    }
    FUZZ_CHECK(flen == AW_HEADER_LEN + h.len && flen <= len - off, "frame of %zu bytes, %zu left", flen, len - off);
    FUZZ_CHECK(payload == stream + off + AW_HEADER_LEN, "payload not after the header");
    FUZZ_CHECK(h.len <= (h.type == AW_T_DATA ? AW_MAX_DATA : AW_MAX_PAYLOAD), "type %u of %u bytes", h.type, h.len);
    uint8_t *p = fuzz_dup(payload, h.len);
    if (from == AW_FROM_AGENT) from_agent(&h, p, h.len);
    else from_host(&h, p, h.len);
    free(p);
    off += flen;
  }
  free(stream);
  return 0;
}
