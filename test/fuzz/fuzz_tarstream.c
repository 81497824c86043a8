/*
 * fuzz_tarstream.c - the streaming tar reader of tree exports (src/codec/tarstream.c) and
 * the name mapping of their members (src/codec/tree_rules.c, tree_map_name).
 *
 * Input: one byte that seeds how the rest is cut into pieces, then the archive bytes as
 * GET /containers/{id}/archive or a sandbox's `tar -c` would send them.
 * Properties:
 *  - the reader's verdict and every event it reports (member headers, data, member ends)
 *    are the same whether the archive comes whole or in pieces of any size;
 *  - a member never gets more data bytes than its header announced, and gets exactly that
 *    many when its end is reported; only files get data;
 *  - names are NUL-terminated, at most TAR_STREAM_MAX_META bytes;
 *  - a name that tree_map_name accepts maps to a path under the prefix, never absolute,
 *    with no "." or ".." component and no empty one;
 *  - what tar_write_header / tar_write_padding / tar_write_end write for entries made from
 *    the input reads back as the same entries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "codec/tarstream.h"
#include "codec/tree_rules.h"
#include "fuzz_common.h"

typedef struct rec {
  buf_t log; /* the events, serialized */
  uint64_t announced, got;
  int in_member, is_file;
  int stop_after; /* stop (callback error) at this member, -1 never */
  int members;
} rec_t;

static void log_u64(buf_t *b, uint64_t v) { FUZZ_CHECK(buf_append(b, &v, sizeof(v)) == 0, "oom"); }

static void check_mapping(const tar_member_t *m) {
  static const char *roots[] = {"workspace", ".", ""};
  static const char *prefixes[] = {"", "sel/ected"};
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 2; j++) {
      err_t err;
      err_init(&err);
      int is_root = 0;
      char *p = tree_map_name(m->name, m->name_len, roots[i], prefixes[j], &is_root, &err);
      FUZZ_CHECK((p == NULL) == err_is_set(&err), "mapping result and error disagree");
      if (p != NULL) {
        size_t plen = strlen(prefixes[j]);
        FUZZ_CHECK(strncmp(p, prefixes[j], plen) == 0, "\"%s\" is not under \"%s\"", p, prefixes[j]);
        FUZZ_CHECK(p[0] != '/', "absolute: %s", p);
        FUZZ_CHECK(!is_root || strcmp(p, prefixes[j]) == 0, "root maps to %s", p);
        const char *c = p;
        while (*c) {
          const char *slash = strchr(c, '/');
          size_t n = slash ? (size_t)(slash - c) : strlen(c);
          FUZZ_CHECK(n > 0, "empty component in %s", p);
          FUZZ_CHECK(!(n == 1 && c[0] == '.') && !(n == 2 && c[0] == '.' && c[1] == '.'), "dot component in %s", p);
          if (!slash) break;
          c = slash + 1;
        }
        free(p);
      }
      err_clear(&err);
    }
  }
}

static int on_member(void *ud, const tar_member_t *m, err_t *err) {
  rec_t *r = ud;
  FUZZ_CHECK(!r->in_member, "a member started inside another");
  FUZZ_CHECK(m->name[m->name_len] == 0, "name not terminated");
  FUZZ_CHECK(m->name_len <= TAR_STREAM_MAX_META, "name of %zu bytes", m->name_len);
  FUZZ_CHECK(m->link != NULL && strlen(m->link) <= TAR_STREAM_MAX_META, "link");
  FUZZ_CHECK(m->kind == TS_FILE || m->size == 0, "a non-file announces data");
  FUZZ_CHECK(m->mode <= 07777, "mode %o", m->mode);
  FUZZ_CHECK(buf_append(&r->log, "M", 1) == 0 && buf_append(&r->log, m->name, m->name_len + 1) == 0, "oom");
  log_u64(&r->log, m->size);
  log_u64(&r->log, (uint64_t)m->kind);
  log_u64(&r->log, m->mode);
  if (r->members == 0) check_mapping(m);
  r->in_member = 1;
  r->is_file = m->kind == TS_FILE;
  r->announced = m->size;
  r->got = 0;
  if (r->members++ == r->stop_after) {
    err_sandbox(err, CODE_INVALID_ENTRY, "stop");
    return -1;
  }
  return 0;
}

static int on_data(void *ud, const uint8_t *data, size_t len, err_t *err) {
  (void)err;
  rec_t *r = ud;
  FUZZ_CHECK(r->in_member && r->is_file, "data outside a file");
  FUZZ_CHECK(len > 0, "empty data piece");
  r->got += len;
  FUZZ_CHECK(r->got <= r->announced, "%llu bytes for a member of %llu", (unsigned long long)r->got,
             (unsigned long long)r->announced);
  /* The data's bytes themselves, so chunked and whole feeding must agree on them. */
  FUZZ_CHECK(buf_append(&r->log, data, len) == 0, "oom");
  return 0;
}

static int on_end(void *ud, err_t *err) {
  (void)err;
  rec_t *r = ud;
  FUZZ_CHECK(r->in_member, "end without a member");
  FUZZ_CHECK(r->got == r->announced, "member ended after %llu of %llu bytes", (unsigned long long)r->got,
             (unsigned long long)r->announced);
  r->in_member = 0;
  FUZZ_CHECK(buf_append(&r->log, "E", 1) == 0, "oom");
  return 0;
}

static const tar_reader_cbs_t cbs = {on_member, on_data, on_end};

/* Feeds `data` cut by the PRNG (or whole when seed is 0). Returns the verdict: 1 ended
 * well, -1 failed; the log is in r. */
static int run(const uint8_t *data, size_t size, uint32_t seed, int stop_after, rec_t *r) {
  memset(r, 0, sizeof(*r));
  buf_init(&r->log, 0);
  r->stop_after = stop_after;
  tar_reader_t *rd = tar_reader_new(&cbs, r);
  FUZZ_CHECK(rd != NULL, "oom");
  err_t err;
  err_init(&err);
  int rc = 0;
  size_t off = 0;
  uint32_t x = seed;
  while (off < size && rc == 0) {
    size_t n = size - off;
    if (seed != 0) {
      x = x * 1103515245u + 12345u;
      size_t cut = 1 + (x >> 16) % 700;
      if (cut < n) n = cut;
    }
    uint8_t *piece = fuzz_dup(data + off, n);
    rc = tar_reader_feed(rd, piece, n, &err);
    free(piece);
    FUZZ_CHECK(rc >= -1 && rc <= 1, "feed returned %d", rc);
    FUZZ_CHECK((rc == -1) == err_is_set(&err), "feed rc %d, error set %d", rc, err_is_set(&err));
    off += n;
  }
  int verdict;
  if (rc == -1) {
    verdict = -1;
  } else {
    int f = tar_reader_finish(rd, &err);
    FUZZ_CHECK((f == -1) == err_is_set(&err), "finish rc %d, error set %d", f, err_is_set(&err));
    FUZZ_CHECK(f == 0 || !r->in_member || 1, "");
    verdict = f == 0 ? 1 : -1;
  }
  if (verdict == 1) FUZZ_CHECK(!r->in_member, "the archive ended inside a member");
  err_clear(&err);
  tar_reader_free(rd);
  return verdict;
}

/* Entries made from the input, written, read back. */
typedef struct expect {
  char path[300];
  int is_dir;
  uint64_t size;
  unsigned mode;
} expect_t;

typedef struct back {
  expect_t *want;
  int n, at;
  uint64_t got;
} back_t;

static int back_member(void *ud, const tar_member_t *m, err_t *err) {
  (void)err;
  back_t *b = ud;
  FUZZ_CHECK(b->at < b->n, "more members than written");
  expect_t *e = &b->want[b->at];
  size_t plen = strlen(e->path);
  FUZZ_CHECK(m->name_len == plen + (e->is_dir ? 1 : 0) && memcmp(m->name, e->path, plen) == 0,
             "wrote \"%s\", read \"%s\"", e->path, m->name);
  FUZZ_CHECK(m->kind == (e->is_dir ? TS_DIRECTORY : TS_FILE), "kind of %s", e->path);
  FUZZ_CHECK(m->size == e->size && m->mode == e->mode, "size or mode of %s", e->path);
  b->got = 0;
  return 0;
}

static int back_data(void *ud, const uint8_t *data, size_t len, err_t *err) {
  (void)err;
  back_t *b = ud;
  for (size_t i = 0; i < len; i++) FUZZ_CHECK(data[i] == (uint8_t)(b->got + i), "data of %s", b->want[b->at].path);
  b->got += len;
  return 0;
}

static int back_end(void *ud, err_t *err) {
  (void)err;
  back_t *b = ud;
  FUZZ_CHECK(b->got == b->want[b->at].size, "size read back");
  b->at++;
  return 0;
}

static void writer_round_trip(const uint8_t *data, size_t size) {
  expect_t want[8];
  int n = 0;
  size_t off = 0;
  while (n < 8 && off + 3 <= size) {
    expect_t *e = &want[n];
    size_t len = 1 + data[off] % 280;
    e->is_dir = data[off + 1] & 1;
    e->size = e->is_dir ? 0 : (size_t)data[off + 2] * 13;
    e->mode = ((unsigned)data[off + 1] << 3) & 0777;
    off += 3;
    /* A valid relative path: bytes made printable, no empty, "." or ".." component. */
    size_t k = 0;
    for (size_t i = 0; i < len && k < sizeof(e->path) - 1; i++) {
      uint8_t c = off + i < size ? data[off + i] : 'a';
      c = (uint8_t)(c % 94 + 33);
      if (c == '/' && (k == 0 || e->path[k - 1] == '/')) c = 'x';
      if (c == '.') c = 'd';
      e->path[k++] = (char)c;
    }
    while (k > 0 && e->path[k - 1] == '/') k--;
    if (k == 0) e->path[k++] = 'z';
    e->path[k] = 0;
    off += len;
    n++;
  }
  buf_t out;
  buf_init(&out, 0);
  for (int i = 0; i < n; i++) {
    tar_out_entry_t e = {.path = want[i].path, .is_dir = want[i].is_dir, .size = want[i].size, .mode = want[i].mode, .uid = 1000, .gid = 1000, .mtime = 1700000000};
    FUZZ_CHECK(tar_write_header(&out, &e) == 0, "write header");
    for (uint64_t j = 0; j < want[i].size; j++) {
      uint8_t c = (uint8_t)j;
      FUZZ_CHECK(buf_append(&out, &c, 1) == 0, "oom");
    }
    FUZZ_CHECK(tar_write_padding(&out, want[i].size) == 0, "padding");
  }
  FUZZ_CHECK(tar_write_end(&out) == 0, "end");
  FUZZ_CHECK(out.len % 512 == 0, "archive of %zu bytes", out.len);
  back_t b = {.want = want, .n = n};
  tar_reader_cbs_t rcbs = {back_member, back_data, back_end};
  tar_reader_t *rd = tar_reader_new(&rcbs, &b);
  err_t err;
  err_init(&err);
  int rc = tar_reader_feed(rd, out.data, out.len, &err);
  FUZZ_CHECK(rc == 1, "written archive read back: %d %s", rc, err.message ? err.message : "");
  FUZZ_CHECK(b.at == n, "read %d of %d members", b.at, n);
  err_clear(&err);
  tar_reader_free(rd);
  buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint32_t seed = (uint32_t)data[0] * 2654435761u + 1;
  const uint8_t *arc = data + 1;
  size_t len = size - 1;
  rec_t whole, pieces;
  int v1 = run(arc, len, 0, -1, &whole);
  int v2 = run(arc, len, seed, -1, &pieces);
  FUZZ_CHECK(v1 == v2, "verdict whole %d, in pieces %d", v1, v2);
  FUZZ_CHECK(whole.log.len == pieces.log.len && (whole.log.len == 0 || memcmp(whole.log.data, pieces.log.data, whole.log.len) == 0),
             "events differ between whole and pieces (%zu and %zu bytes of log)", whole.log.len, pieces.log.len);
  /* A callback that stops the reader: it stays stopped. */
  if (whole.members > 0) {
    rec_t stopped;
    int v3 = run(arc, len, seed, data[0] % whole.members, &stopped);
    FUZZ_CHECK(v3 == -1, "a stopped reader went on");
    buf_free(&stopped.log);
  }
  buf_free(&whole.log);
  buf_free(&pieces.log);
  writer_round_trip(arc, len);
  return 0;
}
