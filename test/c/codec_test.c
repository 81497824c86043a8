/*
 * codec_test.c - standalone driver for frames.c, tar.c, userspec.c, the reserved labels of
 * sandbox_list.c and buf.c's escaped messages, without Node: built with
 * -fsanitize=address,undefined and run under valgrind (test/c/Makefile,
 * target `codec`). Each check prints nothing unless it fails; the last line counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "codec/frames.h"
#include "codec/lifetime_cmd.h"
#include "codec/sandbox_list.h"
#include "codec/tar.h"
#include "codec/userspec.h"

static int passed, failed;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (cond) passed++;                                               \
    else {                                                            \
      failed++;                                                       \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                 \
  } while (0)

/* ---- frames ------------------------------------------------------------------------ */

typedef struct collect {
  buf_t out, err;
  int calls;
  int stop_every;
} collect_t;

static int on_piece(void *ud, int stream, const uint8_t *data, size_t len) {
  collect_t *c = ud;
  buf_append(stream == FRAME_STDERR ? &c->err : &c->out, data, len);
  c->calls++;
  return c->stop_every > 0 && c->calls % c->stop_every == 0;
}

static size_t put_frame(uint8_t *p, int stream, const char *payload, size_t n) {
  p[0] = (uint8_t)stream;
  p[1] = p[2] = p[3] = 0;
  p[4] = (uint8_t)(n >> 24);
  p[5] = (uint8_t)(n >> 16);
  p[6] = (uint8_t)(n >> 8);
  p[7] = (uint8_t)n;
  memcpy(p + 8, payload, n);
  return 8 + n;
}

/* Feeds `data` in pieces of `step` bytes (re-feeding after a stop). */
static int feed_all(frame_demux_t *d, const uint8_t *data, size_t len, size_t step, collect_t *c, err_t *err) {
  size_t off = 0;
  while (off < len) {
    size_t n = len - off < step ? len - off : step;
    size_t used = 0;
    int r = frame_demux_feed(d, data + off, n, &used, on_piece, c, err);
    if (r < 0) return -1;
    if (used > n) return -2;
    off += used;
  }
  return 0;
}

static void test_frames(void) {
  uint8_t s[256];
  size_t len = 0;
  len += put_frame(s + len, 1, "hello ", 6);
  len += put_frame(s + len, 2, "oops", 4);
  len += put_frame(s + len, 1, "", 0);
  len += put_frame(s + len, 0, "in", 2);
  len += put_frame(s + len, 1, "world", 5);
  for (size_t split = 1; split <= len; split++) {
    for (int stop = 0; stop <= 2; stop++) {
      frame_demux_t d;
      collect_t c;
      err_t err;
      frame_demux_init(&d);
      memset(&c, 0, sizeof(c));
      buf_init(&c.out, 0);
      buf_init(&c.err, 0);
      c.stop_every = stop;
      err_init(&err);
      CHECK(feed_all(&d, s, len, split, &c, &err) == 0);
      CHECK(frame_demux_finish(&d, &err) == 0);
      CHECK(c.out.len == 13 && memcmp(c.out.data, "hello inworld", 13) == 0);
      CHECK(c.err.len == 4 && memcmp(c.err.data, "oops", 4) == 0);
      buf_free(&c.out);
      buf_free(&c.err);
      err_clear(&err);
    }
  }
  /* A 4 GiB frame with a short payload: no allocation, a finish error. */
  {
    uint8_t big[8 + 100] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    memset(big + 8, 'x', 100);
    frame_demux_t d;
    collect_t c;
    err_t err;
    frame_demux_init(&d);
    memset(&c, 0, sizeof(c));
    buf_init(&c.out, 0);
    buf_init(&c.err, 0);
    err_init(&err);
    CHECK(feed_all(&d, big, sizeof(big), 7, &c, &err) == 0);
    CHECK(c.out.len == 100);
    CHECK(frame_demux_finish(&d, &err) == -1);
    CHECK(err.message && strstr(err.message, "4294967195") != NULL);
    buf_free(&c.out);
    buf_free(&c.err);
    err_clear(&err);
  }
  /* Unknown type, system error, cut header. */
  {
    uint8_t bad[16];
    size_t n = put_frame(bad, 7, "ab", 2);
    frame_demux_t d;
    err_t err;
    size_t used = 99;
    frame_demux_init(&d);
    err_init(&err);
    CHECK(frame_demux_feed(&d, bad, n, &used, on_piece, NULL, &err) == -1);
    CHECK(strcmp(err.message, "Docker engine sent an unknown stream type: 7") == 0);
    CHECK(strcmp(err.code, CODE_DOCKER_COMMAND_FAILED) == 0);
    err_clear(&err);

    uint8_t sys[64];
    n = put_frame(sys, 3, "no such exec\n", 13);
    frame_demux_init(&d);
    for (size_t i = 0; i < n - 1; i++) CHECK(frame_demux_feed(&d, sys + i, 1, &used, on_piece, NULL, &err) == 0);
    CHECK(frame_demux_feed(&d, sys + n - 1, 1, &used, on_piece, NULL, &err) == -1);
    CHECK(strcmp(err.message, "Docker engine reported an error: no such exec") == 0);
    err_clear(&err);

    frame_demux_init(&d);
    CHECK(frame_demux_feed(&d, sys, 5, &used, on_piece, NULL, &err) == 0 && used == 5);
    CHECK(frame_demux_finish(&d, &err) == -1);
    err_clear(&err);
  }
}

/* ---- tar --------------------------------------------------------------------------- */

static void test_tar(void) {
  char longname[300];
  memset(longname, 'n', sizeof(longname));
  memcpy(longname, "dir/", 4);
  longname[sizeof(longname) - 1] = 0;
  const uint8_t hello[] = "hello, tar";
  tar_entry_spec_t specs[] = {
      {"workspace", 1, NULL, 0, 0755, 1000, 1000, 1700000000},
      {longname, 0, hello, sizeof(hello) - 1, 0600, 4294967294u, 7, 1700000000},
  };
  buf_t tar;
  err_t err;
  buf_init(&tar, 0);
  err_init(&err);
  CHECK(tar_build(specs, 2, &tar, &err) == 0);
  CHECK(tar.len % 512 == 0);

  /* The first header appears exactly when its block is complete. */
  tar_header_info_t hi;
  for (size_t i = 0; i < 512; i++) CHECK(tar_peek(tar.data, i, &hi, &err) == 0);
  CHECK(tar_peek(tar.data, 512, &hi, &err) == 1);
  CHECK(strcmp(hi.name, "workspace/") == 0 && hi.kind == TAR_KIND_DIRECTORY);

  /* A single long-named file: the pax header comes first. */
  buf_t one;
  buf_init(&one, 0);
  CHECK(tar_build(&specs[1], 1, &one, &err) == 0);
  size_t first = 0;
  for (size_t i = 0; i <= one.len; i++) {
    int r = tar_peek(one.data, i, &hi, &err);
    CHECK(r >= 0);
    if (r == 1 && first == 0) first = i;
  }
  CHECK(first > 512 && first % 512 == 0);
  CHECK(tar_peek(one.data, one.len, &hi, &err) == 1 && hi.kind == TAR_KIND_FILE && hi.size == sizeof(hello) - 1);
  CHECK(strncmp(hi.name, longname, sizeof(hi.name) - 1) == 0);

  buf_t out;
  buf_init(&out, 0);
  CHECK(tar_read_file(one.data, one.len, longname, 100, "/x", &out, &err) == 0);
  CHECK(out.len == sizeof(hello) - 1 && memcmp(out.data, hello, out.len) == 0);
  CHECK(tar_read_file(one.data, one.len, longname, 3, "/x", &out, &err) == -1);
  CHECK(strcmp(err.code, CODE_FILE_TOO_LARGE) == 0);
  CHECK(strcmp(err.message, "Sandbox file exceeds maxFileBytes (10 > 3): /x") == 0);
  CHECK(out.len == sizeof(hello) - 1); /* untouched on failure */
  err_clear(&err);
  for (size_t cut = 0; cut < one.len - 1024; cut += 97) {
    CHECK(tar_read_file(one.data, cut, longname, 100, "/x", &out, &err) == -1);
    err_clear(&err);
  }
  /* Two entries, a directory first. */
  CHECK(tar_read_file(tar.data, tar.len, "workspace", 100, "/w", &out, &err) == -1);
  CHECK(strcmp(err.code, CODE_INVALID_PATH) == 0);
  err_clear(&err);
  /* Garbage. */
  uint8_t junk[1024];
  for (size_t i = 0; i < sizeof(junk); i++) junk[i] = (uint8_t)(i * 7 + 3);
  CHECK(tar_peek(junk, sizeof(junk), &hi, &err) == -1);
  err_clear(&err);
  CHECK(tar_read_file(junk, sizeof(junk), "a", 100, "/a", &out, &err) == -1);
  CHECK(strcmp(err.code, CODE_DOCKER_COMMAND_FAILED) == 0);
  err_clear(&err);

  /* A header announcing 1 GiB in a 1 KiB buffer: refused before any data is read. */
  {
    uint8_t bomb[1024];
    memset(bomb, 0, sizeof(bomb));
    strcpy((char *)bomb, "big.bin");
    memcpy(bomb + 100, "0000644", 7);
    memcpy(bomb + 108, "0000000", 7);
    memcpy(bomb + 116, "0000000", 7);
    memcpy(bomb + 124, "10000000000", 11);
    memcpy(bomb + 136, "00000000000", 11);
    bomb[156] = '0';
    memcpy(bomb + 257, "ustar\0" "00", 8);
    memset(bomb + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += bomb[i];
    snprintf((char *)bomb + 148, 8, "%06o", sum);
    CHECK(tar_peek(bomb, sizeof(bomb), &hi, &err) == 1 && hi.size == 1073741824u);
    CHECK(tar_read_file(bomb, sizeof(bomb), "big.bin", 10 << 20, "/big.bin", &out, &err) == -1);
    CHECK(strcmp(err.code, CODE_FILE_TOO_LARGE) == 0);
    err_clear(&err);
    CHECK(tar_read_file(bomb, sizeof(bomb), "big.bin", UINT64_MAX, "/big.bin", &out, &err) == -1);
    CHECK(strcmp(err.code, CODE_DOCKER_COMMAND_FAILED) == 0);
    err_clear(&err);
  }
  buf_free(&out);
  buf_free(&one);
  buf_free(&tar);
}

/* ---- userspec ---------------------------------------------------------------------- */

static void test_userspec(void) {
  const char *passwd =
      "root:x:0:0:root:/root:/bin/sh\n"
      "# comment\n"
      "\n"
      "broken line\n"
      "bad:x:abc:1:::\n"
      "node:x:1000:1000::/home/node:/bin/sh\n"
      "app:x:1001:1002\n";
  const char *group = "root:x:0:\nstaff:x:50:node\nnode:x:1000:\nbad:x:-1:\n";
  struct {
    const char *spec;
    int ok;
    uint32_t uid, gid;
  } cases[] = {
      {"", 1, 0, 0},          {"root", 1, 0, 0},        {"node", 1, 1000, 1000},  {"app", 1, 1001, 1002},
      {"1000", 1, 1000, 1000}, {"4242", 1, 4242, 0},    {"node:staff", 1, 1000, 50}, {"node:77", 1, 1000, 77},
      {"4242:4243", 1, 4242, 4243}, {"nobody", 0, 0, 0}, {"node:nogroup", 0, 0, 0}, {"bad", 0, 0, 0},
      {"4294967295", 0, 0, 0}, {"4294967294", 1, 4294967294u, 0}, {"node:", 1, 1000, 1000},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint32_t uid = 99, gid = 99;
    err_t err;
    err_init(&err);
    int r = userspec_resolve(cases[i].spec, passwd, strlen(passwd), group, strlen(group), &uid, &gid, &err);
    if (cases[i].ok) {
      CHECK(r == 0 && uid == cases[i].uid && gid == cases[i].gid);
      if (r != 0 || uid != cases[i].uid || gid != cases[i].gid) fprintf(stderr, "  spec \"%s\"\n", cases[i].spec);
    } else {
      CHECK(r == -1 && strcmp(err.code, CODE_INVALID_STATE) == 0);
    }
    err_clear(&err);
  }
  uint32_t uid, gid;
  err_t err;
  err_init(&err);
  CHECK(userspec_resolve("1000:1000", NULL, 0, NULL, 0, &uid, &gid, &err) == 0 && uid == 1000 && gid == 1000);
  CHECK(userspec_resolve("node", NULL, 0, NULL, 0, &uid, &gid, &err) == -1);
  CHECK(strcmp(err.message, "Sandbox user cannot be found in the image: node") == 0);
  err_clear(&err);
}

/* Issue 23, item 9: control characters escaped, everything else as is. */
static void test_escaped(void) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain text, 'quoted' \\ caf\xc3\xa9", "plain text, 'quoted' \\ caf\xc3\xa9"},
      {"a\nb\rc\td", "a\\nb\\rc\\td"},
      {"\x1b[2J\x07\x7f", "\\u001b[2J\\u0007\\u007f"},
      {"csi \xc2\x9b m, nel \xc2\x85, nbsp \xc2\xa0", "csi \\u009b m, nel \\u0085, nbsp \xc2\xa0"},
      {"cut \xc2", "cut \xc2"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    buf_t b;
    buf_init(&b, 0);
    CHECK(buf_append_escaped(&b, cases[i].in, strlen(cases[i].in)) == 0 && buf_terminate(&b) == 0);
    CHECK(strcmp((char *)b.data, cases[i].out) == 0);
    CHECK(text_has_controls(cases[i].in, strlen(cases[i].in)) == (strcmp(cases[i].in, cases[i].out) != 0));
    buf_free(&b);
  }
}

/* Issue 23, item 5: which labels an image brings are written over, which fork labels count. */
static void test_reserved_labels(void) {
  json_t *image = json_pack("{s:s, s:s, s:s, s:s}", "anvia.sandbox.fork.image", "sha256:victim", "anvia.sandbox.id",
                            "forged", "anvia.sandbox.lifetime.idle-timeout-ms", "5000", "org.example", "kept");
  json_t *labels = json_pack("{s:s, s:s}", "anvia.sandbox.id", "mine", "team", "t");
  CHECK(labels_mask_reserved(labels, image) == 0);
  CHECK(json_object_size(labels) == 4);
  CHECK(strcmp(json_string_value(json_object_get(labels, "anvia.sandbox.id")), "mine") == 0);
  CHECK(strcmp(json_string_value(json_object_get(labels, "anvia.sandbox.fork.image")), "") == 0);
  CHECK(strcmp(json_string_value(json_object_get(labels, "anvia.sandbox.lifetime.idle-timeout-ms")), "") == 0);
  CHECK(json_object_get(labels, "org.example") == NULL);
  CHECK(label_value(labels, "anvia.sandbox.fork.image") == NULL);
  lifetime_t l;
  err_t err;
  err_init(&err);
  CHECK(lifetime_from_labels(labels, &l, &err) == 0 && !lifetime_any(&l));
  /* No image labels: nothing changes. */
  json_t *before = json_deep_copy(labels);
  CHECK(labels_mask_reserved(labels, NULL) == 0 && json_equal(before, labels));
  json_decref(before);
  /* Fork labels count only on the container made from the image they name. */
  json_t *fork = json_pack("{s:s}", "anvia.sandbox.fork.image", "sha256:abc");
  CHECK(fork_labels_proven(fork, "sha256:abc"));
  CHECK(fork_labels_proven(fork, "abc"));
  CHECK(!fork_labels_proven(fork, "sha256:other"));
  CHECK(!fork_labels_proven(fork, NULL) && !fork_labels_proven(fork, ""));
  CHECK(!fork_labels_proven(labels, "sha256:victim"));
  json_decref(fork);
  const char *ours = "{\"Config\":{\"Labels\":{\"anvia.sandbox.id\":\"kid\"}}}";
  CHECK(image_is_sandboxes((const uint8_t *)ours, strlen(ours), "kid"));
  CHECK(!image_is_sandboxes((const uint8_t *)ours, strlen(ours), "other"));
  CHECK(!image_is_sandboxes((const uint8_t *)"{\"Config\":{\"Labels\":null}}", 27, "kid"));
  CHECK(!image_is_sandboxes((const uint8_t *)"not json", 8, "kid"));
  json_decref(labels);
  json_decref(image);
}

int main(void) {
  test_frames();
  test_tar();
  test_userspec();
  test_escaped();
  test_reserved_labels();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
