/*
 * liar.c - a hostile agent for real containers (issue 23): a static program that speaks
 * the agent's protocol (src/agent/PROTOCOL.md, through src/codec/agent_wire.c) and lies on
 * purpose. A test plants it where a root sandbox would (over /.anvia/agent-<hash>, then
 * kills the running agent), so the host code under test is the real addon on a real
 * engine, and the host's memory is measured in a process that runs no double.
 *
 * Owns: its own process only. It answers HOST_HELLO with a HELLO and every PING with a
 * PONG; the lie is read from /.anvia/liar.mode (written by the test, as root; behind the
 * fake engine, from $ANVIA_LIAR_DIR/liar.mode, test/helpers/hostile-agent.js serveLiar):
 *   list-flood   LIST: endless records within the host's credit, never a RESULT
 *   wrong-id     every request: a RESULT for another request's id
 *   window-lie   WRITE: a WINDOW returning 1 GiB more than it was sent
 *   never        no request ever gets a reply
 *   dir-flood    EXEC (an export's tar -c): STARTED, then on stdout an endless archive of
 *                directory headers (./d0/, ./d1/, ...) within the host's credit
 *   stall        EXEC: STARTED, the archive's first header and half of the next, then
 *                nothing more (pings still answered): a stream that never ends
 *   hoard        its HELLO offers 2 GiB of credit per request; EXEC: STARTED, then it
 *                never reads again (an import's bytes go nowhere, pings go unanswered)
 * The mode is read again at each request (a test changes the lie without a restart); with
 * no known mode at its start it exits 1, and a request met without one gets no reply.
 * Each request it gets is noted in liar.seen beside liar.mode (its type's name, a line).
 * It reads its input with blocking reads and writes with blocking writes: one request at
 * a time is all a lie needs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_wire.h"

static char mode[32];
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
  m.in_window = strcmp(mode, "hoard") == 0 ? 0x7fffffffu : AW_IN_WINDOW;
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
  aw_put_hello(&w, 0, &m);
  return send_writer(&w);
}

/* Appends the next piece of an endless stream to w, about `room` bytes: LIST records, or
 * ustar directory headers. n counts what was made. */
typedef void (*gen_fn)(aw_writer_t *w, size_t room, uint64_t *n);

static void gen_entries(aw_writer_t *w, size_t room, uint64_t *n) {
  char name[32];
  size_t start = w->len;
  while (w->len - start < room - 64) {
    aw_entry_t e = {.type = AW_ENT_FILE, .mode = 0644, .size = 1, .mtime_ns = 0};
    int k = snprintf(name, sizeof(name), "f%llu", (unsigned long long)(*n)++);
    e.name.p = (const uint8_t *)name;
    e.name.len = (uint32_t)k;
    aw_put_entry(w, &e);
  }
}

/* One ustar header of a directory (typeflag '5', mode 0755, size 0) into b[512]. */
static void tar_dir(uint8_t b[512], const char *name) {
  memset(b, 0, 512);
  snprintf((char *)b, 100, "%s", name);
  memcpy(b + 100, "0000755", 8);
  memcpy(b + 108, "0000000", 8);
  memcpy(b + 116, "0000000", 8);
  memcpy(b + 124, "00000000000", 12);
  memcpy(b + 136, "00000000000", 12);
  memset(b + 148, ' ', 8);
  b[156] = '5';
  memcpy(b + 257, "ustar", 6);
  memcpy(b + 263, "00", 2);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += b[i];
  snprintf((char *)b + 148, 8, "%06o", sum);
  b[155] = ' ';
}

static void gen_dirs(aw_writer_t *w, size_t room, uint64_t *n) {
  char name[40];
  uint8_t b[512];
  for (size_t k = 0; k + 512 <= room; k += 512) {
    if (*n == 0) snprintf(name, sizeof(name), "./");
    else snprintf(name, sizeof(name), "./d%llu/", (unsigned long long)(*n - 1));
    (*n)++;
    tar_dir(b, name);
    aw_w_raw(w, b, 512);
  }
}

/* Reads the host's frames until its credit on request id's stream 2 reaches `need`:
 * PINGs answered, WINDOWs counted. 1 when the host cancelled, -1 when it is gone. */
static int await_credit(uint32_t id, uint64_t *credit, uint64_t need) {
  while (*credit < need) {
    aw_header_t h;
    const uint8_t *p;
    if (next_frame(&h, &p) != 0) return -1;
    uint32_t inc;
    if (h.type == AW_T_PING && pong(&h, p) != 0) return -1;
    if (h.type == AW_T_CANCEL && h.id == id) return 1;
    if (h.type == AW_T_WINDOW && h.id == id && h.stream == AW_S_OUT && aw_dec_window(p, h.len, &inc) == AW_OK) *credit += inc;
  }
  return 0;
}

/* An endless stream on request id's stream 2, within the host's credit, until it cancels. */
static int flood(uint32_t id, uint64_t credit, gen_fn gen) {
  uint64_t n = 0;
  for (;;) {
    int rc = await_credit(id, &credit, 4096);
    if (rc != 0) return rc < 0 ? -1 : 0;
    aw_writer_t w;
    aw_w_init(&w, out, sizeof(out));
    size_t start = aw_w_begin(&w, AW_T_DATA, 0, AW_S_OUT, id);
    gen(&w, 4096, &n);
    if (aw_w_end(&w, start) != AW_OK || send_writer(&w) != 0) return -1;
    credit -= w.len - start - AW_HEADER_LEN;
  }
}

static int started(uint32_t id) {
  aw_started_t m = {.pid = (uint32_t)getpid(), .pgid = (uint32_t)getpid()};
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  aw_put_started(&w, id, &m);
  return send_writer(&w);
}

/* STARTED, the archive's "./" header and half of "./d0/", then only PONGs. */
static int stall(uint32_t id) {
  uint8_t b[1024];
  if (started(id) != 0) return -1;
  tar_dir(b, "./");
  tar_dir(b + 512, "./d0/");
  aw_writer_t w;
  aw_w_init(&w, out, sizeof(out));
  aw_put_data(&w, id, AW_S_OUT, 0, b, 512 + 256);
  return send_writer(&w);
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

/* Where liar.mode and liar.seen are: /.anvia, or $ANVIA_LIAR_DIR (behind the fake engine). */
static char dir_path[256] = "/.anvia";

static FILE *open_in_dir(const char *name, const char *how) {
  char path[320];
  snprintf(path, sizeof(path), "%s/%s", dir_path, name);
  return fopen(path, how);
}

/* Each request it gets, by type name, a line in liar.seen (the test waits on it). */
static void note(uint8_t type) {
  FILE *f = open_in_dir("liar.seen", "a");
  if (f == NULL) return;
  fprintf(f, "%s\n", aw_type_name(type));
  fclose(f);
}

/* The lie now: liar.mode's first line, or "" when there is none or it is not a lie known
 * here. Read again at each request, so a test changes the lie without a restart (only
 * hoard's HELLO is decided at the start). */
static void read_mode(void) {
  static const char *const modes[] = {"list-flood", "wrong-id", "window-lie", "never", "dir-flood", "stall", "hoard"};
  mode[0] = 0;
  FILE *f = open_in_dir("liar.mode", "r");
  if (f == NULL) return;
  if (fgets(mode, sizeof(mode), f) == NULL) mode[0] = 0;
  fclose(f);
  mode[strcspn(mode, "\n")] = 0;
  size_t k = 0;
  while (k < sizeof(modes) / sizeof(modes[0]) && strcmp(mode, modes[k]) != 0) k++;
  if (k == sizeof(modes) / sizeof(modes[0])) mode[0] = 0;
}

int main(void) {
  const char *d = getenv("ANVIA_LIAR_DIR");
  if (d != NULL && strlen(d) < sizeof(dir_path)) snprintf(dir_path, sizeof(dir_path), "%s", d);
  read_mode();
  if (mode[0] == 0 || hello() != 0) return 1;
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
    read_mode();
    int rc = 0;
    aw_list_req_t lr;
    aw_exec_req_t er;
    if (strcmp(mode, "list-flood") == 0 && h.type == AW_T_LIST && aw_dec_list(p, h.len, &lr) == AW_OK)
      rc = flood(h.id, lr.window, gen_entries);
    else if (strcmp(mode, "wrong-id") == 0)
      rc = wrong_id(h.id);
    else if (strcmp(mode, "window-lie") == 0 && h.type == AW_T_WRITE)
      rc = window_lie(h.id);
    else if (h.type == AW_T_EXEC && aw_dec_exec(p, h.len, &er) == AW_OK) {
      if (strcmp(mode, "dir-flood") == 0) rc = started(h.id) == 0 ? flood(h.id, er.window, gen_dirs) : -1;
      else if (strcmp(mode, "stall") == 0) rc = stall(h.id);
      else if (strcmp(mode, "hoard") == 0 && started(h.id) == 0)
        for (;;) pause(); /* never reads again: the host's bytes fill the pipe and stay */
    }
    if (rc != 0) return 0;
  }
}
