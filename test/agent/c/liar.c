/*
 * liar.c - a hostile agent for real containers (issue 23): a static program that speaks
 * the agent's protocol (src/agent/PROTOCOL.md, through src/codec/agent_wire.c) and lies on
 * purpose. A test plants it where a root sandbox would (over /.anvia/agent-<hash>, then
 * kills the running agent), so the host code under test is the real addon on a real
 * engine, and the host's memory is measured in a process that runs no double.
 *
 * Owns: its own process only. It answers HOST_HELLO with a HELLO and every PING with a
 * PONG; the lie is read from /.anvia/liar.mode (written by the test, as root):
 *   list-flood   LIST: endless records within the host's credit, never a RESULT
 *   wrong-id     every request: a RESULT for another request's id
 *   window-lie   WRITE: a WINDOW returning 1 GiB more than it was sent
 *   never        no request ever gets a reply
 * Anything else (or no file): it exits 1. Each request it gets is noted in
 * /.anvia/liar.seen (its type's name, a line). It reads its input with blocking reads and
 * writes with blocking writes: one request at a time is all a lie needs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent_wire.h"

static uint8_t in[AW_HEADER_LEN + AW_MAX_PAYLOAD];
static uint8_t out[AW_HEADER_LEN + AW_MAX_PAYLOAD];

/* All n bytes read from stdin (writing 0) or written to stdout (writing 1), or -1. */
static int full(uint8_t *b, size_t n, int writing) {
  while (n > 0) {
    ssize_t r = writing ? write(1, b, n) : read(0, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    b += r;
    n -= (size_t)r;
  }
  return 0;
}

/* The next frame from the host: header decoded, payload in `in` after it. */
static int next_frame(aw_header_t *h, const uint8_t **payload) {
  if (full(in, AW_HEADER_LEN, 0) != 0) return -1;
  size_t flen;
  if (aw_frame_parse(in, AW_HEADER_LEN, AW_FROM_HOST, h, payload, &flen) < 0) return -1;
  if (h->len > AW_MAX_PAYLOAD || full(in + AW_HEADER_LEN, h->len, 0) != 0) return -1;
  *payload = in + AW_HEADER_LEN;
  return 0;
}

static int send_writer(aw_writer_t *w) { return w->overflow ? -1 : full(w->p, w->len, 1); }

static int pong(const aw_header_t *h, const uint8_t *p) {
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  aw_put_ping(&w, AW_T_PONG, h->id, p, h->len);
  return send_writer(&w);
}

static int hello(void) {
  aw_hello_t m;
  memset(&m, 0, sizeof(m));
  m.magic = AW_MAGIC;
  m.version_min = m.version_max = AW_VERSION;
  m.max_payload = AW_MAX_PAYLOAD;
  m.max_data = AW_MAX_DATA;
  m.in_window = AW_IN_WINDOW;
  m.max_requests = 64;
  m.pid = (uint32_t)getpid();
  m.uid = (uint32_t)geteuid();
  m.gid = (uint32_t)getegid();
  m.build.p = (const uint8_t *)"liar";
  m.build.len = 4;
#if defined(__aarch64__)
  m.arch.p = (const uint8_t *)"aarch64";
  m.arch.len = 7;
#else
  m.arch.p = (const uint8_t *)"x86_64";
  m.arch.len = 6;
#endif
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  aw_put_hello(&w, &m);
  return send_writer(&w);
}

/* Endless records for a LIST, within the credit the host gives on its stream 2. */
static int list_flood(uint32_t id, uint64_t credit) {
  uint64_t n = 0;
  char name[32];
  for (;;) {
    while (credit < 4096) {
      aw_header_t h;
      const uint8_t *p;
      if (next_frame(&h, &p) != 0) return -1;
      uint32_t inc;
      if (h.type == AW_T_PING && pong(&h, p) != 0) return -1;
      if (h.type == AW_T_CANCEL && h.id == id) return 0;
      if (h.type == AW_T_WINDOW && h.id == id && aw_dec_window(p, h.len, &inc) == AW_OK) credit += inc;
    }
    aw_writer_t w;
    aw_w_init(&w, out, sizeof(out));
    size_t start = aw_w_begin(&w, AW_T_DATA, 0, AW_S_OUT, id);
    while (w.len - start < 4096 - 64) {
      aw_entry_t e = {.type = AW_ENT_FILE, .mode = 0644, .size = 1, .mtime_ns = 0};
      int k = snprintf(name, sizeof(name), "f%llu", (unsigned long long)n++);
      e.name.p = (const uint8_t *)name;
      e.name.len = (uint32_t)k;
      aw_put_entry(&w, &e);
    }
    if (aw_w_end(&w, start) != AW_OK || send_writer(&w) != 0) return -1;
    credit -= w.len - start - AW_HEADER_LEN;
  }
}

/* A RESULT of a listing of nothing, for an id the host did not send. */
static int wrong_id(uint32_t id) {
  aw_list_res_t r = {.count = 0, .flags = 0};
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  aw_put_list_result(&w, id + 1000, &r);
  return send_writer(&w);
}

static int window_lie(uint32_t id) {
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  aw_put_window(&w, id, AW_S_IN, 1u << 30);
  return send_writer(&w);
}

/* Each request it gets, by type name, a line in /.anvia/liar.seen (the test waits on it). */
static void note(uint8_t type) {
  FILE *f = fopen("/.anvia/liar.seen", "a");
  if (f == NULL) return;
  fprintf(f, "%s\n", aw_type_name(type));
  fclose(f);
}

int main(void) {
  char mode[32] = "";
  FILE *f = fopen("/.anvia/liar.mode", "r");
  if (f == NULL || fgets(mode, sizeof(mode), f) == NULL) return 1;
  fclose(f);
  mode[strcspn(mode, "\n")] = 0;
  if (strcmp(mode, "list-flood") != 0 && strcmp(mode, "wrong-id") != 0 && strcmp(mode, "window-lie") != 0 &&
      strcmp(mode, "never") != 0)
    return 1;
  if (hello() != 0) return 1;
  for (;;) {
    aw_header_t h;
    const uint8_t *p;
    if (next_frame(&h, &p) != 0) return 0;
    if (h.type == AW_T_PING) {
      if (pong(&h, p) != 0) return 0;
      continue;
    }
    if (h.type < AW_T_EXEC) continue; /* HOST_HELLO, CANCEL, DATA, WINDOW */
    note(h.type);
    int rc = 0;
    aw_list_req_t lr;
    if (strcmp(mode, "list-flood") == 0 && h.type == AW_T_LIST && aw_dec_list(p, h.len, &lr) == AW_OK)
      rc = list_flood(h.id, lr.window);
    else if (strcmp(mode, "wrong-id") == 0)
      rc = wrong_id(h.id);
    else if (strcmp(mode, "window-lie") == 0 && h.type == AW_T_WRITE)
      rc = window_lie(h.id);
    if (rc != 0) return 0;
  }
}
