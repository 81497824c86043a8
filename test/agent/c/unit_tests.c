/*
 * unit_tests.c - C unit tests of the agent's pure parts: the wire codec
 * (src/codec/agent_wire.c: round trips, every truncation, oversize lengths, header rules,
 * garbage), the path walk (src/agent/walk.c: symlink components, "..", absolute paths,
 * dangling links, directories, creation; with openat2 and with the O_NOFOLLOW walk), the
 * /proc and sock_diag parsers (src/agent/procfs.c) and sock_diag itself (src/agent/diag.c,
 * against this machine's kernel: ANVIA_DIAG_EXPECTED=1 says it must answer, as it does
 * outside qemu-user).
 *
 * Built by scripts/build-agent.sh for each variant (x86_64 musl, aarch64, asan) and run
 * by test/agent/c-units.test.js. Prints one line per failed check and ends with
 * "N passed, N failed"; exits 1 on any failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

agent_t g;

static int passed, failed;

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (cond) {                                                 \
      passed++;                                                 \
    } else {                                                    \
      failed++;                                                 \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
      printf(__VA_ARGS__);                                      \
      printf("\n");                                             \
    }                                                           \
  } while (0)

#define B(s) ((aw_bytes_t){(const uint8_t *)(s), (uint32_t)(sizeof(s) - 1)})

static uint8_t buf[AW_HEADER_LEN + AW_MAX_PAYLOAD + 64];

/* ---- wire: helpers ---- */

typedef int (*dec_fn)(const uint8_t *, size_t, void *);

/* A frame in buf[0..len): checks the header, returns the payload's bounds. */
static int frame_of(size_t len, int from, aw_header_t *h, const uint8_t **p) {
  size_t fl = 0;
  int rc = aw_frame_parse(buf, len, from, h, p, &fl);
  if (rc != 1 || fl != len) return -1;
  return 0;
}

/* Every proper prefix of a valid payload is refused; one extra byte is refused. */
static void truncations(const char *what, const uint8_t *p, size_t len, dec_fn dec, void *out) {
  int bad = 0;
  for (size_t cut = 0; cut < len; cut++) {
    uint8_t *copy = malloc(cut ? cut : 1);
    memcpy(copy, p, cut);
    int rc = dec(copy, cut, out);
    free(copy);
    if (rc == AW_OK) {
      bad++;
      if (bad < 3) printf("  %s: prefix of %zu/%zu bytes accepted\n", what, cut, len);
    }
  }
  CHECK(bad == 0, "%s: %d prefixes accepted", what, bad);
  uint8_t *longer = malloc(len + 1);
  memcpy(longer, p, len);
  longer[len] = 0;
  int rc = dec(longer, len + 1, out);
  free(longer);
  CHECK(rc == AW_ERR_TRAILING || rc < 0, "%s: a trailing byte was accepted (%d)", what, rc);
}

#define DEC(fn, type) \
  static int d_##fn(const uint8_t *p, size_t len, void *out) { return aw_dec_##fn(p, len, (type *)out); }
DEC(hello, aw_hello_t)
DEC(host_hello, aw_host_hello_t)
DEC(error, aw_error_t)
DEC(started, aw_started_t)
DEC(exited, aw_exit_t)
DEC(exec_result, aw_exit_t)
DEC(exec, aw_exec_req_t)
DEC(read, aw_read_req_t)
DEC(read_result, aw_read_res_t)
DEC(write, aw_write_req_t)
DEC(write_result, aw_write_res_t)
DEC(mkdir, aw_mkdir_req_t)
DEC(mkdir_result, aw_mkdir_res_t)
DEC(list, aw_list_req_t)
DEC(list_result, aw_list_res_t)
DEC(port_wait, aw_port_req_t)
DEC(port_result, aw_port_res_t)
DEC(signal, aw_signal_req_t)
DEC(signal_result, aw_signal_res_t)
DEC(group_alive, aw_alive_req_t)
DEC(alive_result, aw_alive_res_t)
static int d_window(const uint8_t *p, size_t len, void *out) { return aw_dec_window(p, len, (uint32_t *)out); }

static int bytes_eq(aw_bytes_t a, aw_bytes_t b) { return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0); }

/* ---- wire: round trips ---- */

static void test_roundtrips(void) {
  aw_writer_t w;
  aw_header_t h;
  const uint8_t *p;

  /* HELLO */
  aw_hello_t hello = {AW_MAGIC, 1, 1, AW_MAX_PAYLOAD, AW_MAX_DATA, AW_IN_WINDOW, AW_MAX_REQUESTS, 0x0f, 1234, 1000,
                      1000, 30000, B("0123456789abcdef"), B("x86_64")};
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_hello(&w, 0, &hello) == AW_OK, "put hello");
  CHECK(frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0 && h.type == AW_T_HELLO && h.id == 0, "hello frame");
  aw_hello_t hello2;
  CHECK(aw_dec_hello(p, h.len, &hello2) == AW_OK, "dec hello");
  CHECK(hello2.pid == 1234 && hello2.heartbeat_ms == 30000 && bytes_eq(hello2.build, hello.build) &&
            bytes_eq(hello2.arch, hello.arch) && hello2.caps == 0x0f,
        "hello fields");
  truncations("hello", p, h.len, d_hello, &hello2);
  /* HELLO from the agent is refused from the host's side, and vice versa */
  size_t fl;
  CHECK(aw_frame_parse(buf, w.len, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_TYPE, "hello from host refused");

  aw_host_hello_t hh = {1, 3, 0}, hh2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_host_hello(&w, 0, &hh) == AW_OK, "put host hello");
  CHECK(frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "host hello frame");
  CHECK(aw_dec_host_hello(p, h.len, &hh2) == AW_OK && hh2.version_max == 3, "dec host hello");
  truncations("host_hello", p, h.len, d_host_hello, &hh2);

  /* ERROR */
  aw_error_t er = {AW_E_SYMLINK, AW_STAGE_NONE, ELOOP, 7, B("a/link")}, er2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_error(&w, 9, &er) == AW_OK, "put error");
  CHECK(frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0 && h.id == 9, "error frame");
  CHECK(aw_dec_error(p, h.len, &er2) == AW_OK && er2.kind == AW_E_SYMLINK && er2.err == ELOOP && er2.value == 7 &&
            bytes_eq(er2.detail, er.detail),
        "error fields");
  truncations("error", p, h.len, d_error, &er2);

  /* WINDOW, DATA, PING */
  uint32_t inc;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_window(&w, 4, AW_S_OUT, 65536) == AW_OK, "put window");
  CHECK(frame_of(w.len, AW_FROM_HOST, &h, &p) == 0 && h.stream == AW_S_OUT, "window frame from host");
  CHECK(aw_dec_window(p, h.len, &inc) == AW_OK && inc == 65536, "window");
  truncations("window", p, h.len, d_window, &inc);
  CHECK(frame_of(w.len, AW_FROM_AGENT, &h, &p) < 0, "window for an agent stream refused from the agent");
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_data(&w, 4, AW_S_IN, AW_F_END, "abc", 3) == AW_OK, "put data");
  CHECK(frame_of(w.len, AW_FROM_HOST, &h, &p) == 0 && h.len == 3 && h.flags == AW_F_END && memcmp(p, "abc", 3) == 0,
        "data frame");
  CHECK(frame_of(w.len, AW_FROM_AGENT, &h, &p) < 0, "stdin data refused from the agent");
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_ping(&w, AW_T_PING, 0, "12345678", 8) == AW_OK, "put ping");
  CHECK(frame_of(w.len, AW_FROM_HOST, &h, &p) == 0 && h.len == 8, "ping id 0 allowed");
  CHECK(aw_put_ping(&w, AW_T_PING, 1, buf, AW_MAX_PING + 1) == AW_ERR_LIMIT, "ping over 64 bytes refused");

  /* STARTED, EXITED, exec RESULT */
  aw_started_t st = {4242, 4242}, st2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_started(&w, 3, &st) == AW_OK, "put started");
  CHECK(frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0, "started frame");
  CHECK(aw_dec_started(p, h.len, &st2) == AW_OK && st2.pid == 4242, "started");
  truncations("started", p, h.len, d_started, &st2);
  aw_exit_t ex = {AW_EXIT_SIGNAL, 9, AW_EXITF_TIMED_OUT, 137, 10, 20, 30}, ex2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_exited(&w, 3, &ex) == AW_OK, "put exited");
  CHECK(frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0 && h.len == 8, "exited frame");
  CHECK(aw_dec_exited(p, h.len, &ex2) == AW_OK && ex2.signal == 9 && ex2.code == 137, "exited");
  truncations("exited", p, h.len, d_exited, &ex2);
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_exec_result(&w, 3, &ex) == AW_OK, "put exec result");
  CHECK(frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0 && h.len == 32, "exec result frame");
  CHECK(aw_dec_exec_result(p, h.len, &ex2) == AW_OK && ex2.out_bytes == 10 && ex2.err_bytes == 20 &&
            ex2.duration_us == 30 && ex2.flags == AW_EXITF_TIMED_OUT,
        "exec result");
  truncations("exec_result", p, h.len, d_exec_result, &ex2);
  /* inconsistent exits refused */
  aw_exit_t badex[] = {
      {AW_EXIT_SIGNAL, 9, 0, 9, 0, 0, 0},   {AW_EXIT_CODE, 3, 0, 1, 0, 0, 0},   {AW_EXIT_CODE, 0, 0, 256, 0, 0, 0},
      {AW_EXIT_CODE, 0, 0, -1, 0, 0, 0},    {AW_EXIT_SIGNAL, 0, 0, 128, 0, 0, 0}, {2, 0, 0, 0, 0, 0, 0},
      {AW_EXIT_CODE, 0, 0x80, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof(badex) / sizeof(badex[0]); i++) {
    aw_w_init(&w, buf, sizeof(buf));
    aw_put_exec_result(&w, 3, &badex[i]);
    frame_of(w.len, AW_FROM_AGENT, &h, &p);
    CHECK(aw_dec_exec_result(p, h.len, &ex2) == AW_ERR_VALUE, "inconsistent exit %zu accepted", i);
  }

  /* EXEC */
  aw_bytes_t argv[] = {B("sh"), B("-c"), B("echo \"$X\"\n"), B("")};
  aw_bytes_t env[] = {B("X=1"), B("EMPTY="), B("A=b=c")};
  aw_exec_enc_t xe = {AW_EXEC_STDIN, 5000, 65536, B("/workspace"), argv, 4, env, 3};
  aw_exec_req_t xr;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_exec(&w, 11, &xe) == AW_OK, "put exec");
  CHECK(frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "exec frame");
  CHECK(aw_dec_exec(p, h.len, &xr) == AW_OK, "dec exec");
  CHECK(xr.flags == AW_EXEC_STDIN && xr.timeout_ms == 5000 && xr.window == 65536 && bytes_eq(xr.cwd, xe.cwd) &&
            xr.argv.count == 4 && xr.env.count == 3,
        "exec fields");
  aw_bytes_t b;
  int i = 0, same = 1;
  aw_list_t it = xr.argv;
  while (aw_list_next(&it, &b)) same &= bytes_eq(b, argv[i++]);
  CHECK(same && i == 4, "argv round trip");
  i = 0;
  it = xr.env;
  while (aw_list_next(&it, &b)) same &= bytes_eq(b, env[i++]);
  CHECK(same && i == 3, "env round trip");
  truncations("exec", p, h.len, d_exec, &xr);
  /* argv[0] empty, no argv, env without '=' or with an empty name, NUL in an arg, unknown flag */
  aw_bytes_t a0[] = {B("")};
  aw_bytes_t badenv[] = {B("NOEQUALS")};
  aw_bytes_t badenv2[] = {B("=v")};
  aw_bytes_t nularg[] = {{(const uint8_t *)"a\0b", 3}};
  struct {
    aw_exec_enc_t e;
    int want;
  } badx[] = {
      {{0, 0, 0, B(""), a0, 1, NULL, 0}, AW_ERR_VALUE},         {{0, 0, 0, B(""), argv, 0, NULL, 0}, AW_ERR_VALUE},
      {{0, 0, 0, B(""), argv, 1, badenv, 1}, AW_ERR_VALUE},     {{0, 0, 0, B(""), argv, 1, badenv2, 1}, AW_ERR_VALUE},
      {{0, 0, 0, B(""), nularg, 1, NULL, 0}, AW_ERR_NUL},       {{0x80, 0, 0, B(""), argv, 1, NULL, 0}, AW_ERR_VALUE},
      {{0, 0, 0x80000000u, B(""), argv, 1, NULL, 0}, AW_ERR_VALUE},
  };
  for (size_t k = 0; k < sizeof(badx) / sizeof(badx[0]); k++) {
    aw_w_init(&w, buf, sizeof(buf));
    CHECK(aw_put_exec(&w, 1, &badx[k].e) == AW_OK, "put bad exec %zu", k);
    frame_of(w.len, AW_FROM_HOST, &h, &p);
    int rc = aw_dec_exec(p, h.len, &xr);
    CHECK(rc == badx[k].want, "bad exec %zu: got %d want %d", k, rc, badx[k].want);
  }
  /* argc over the bound: refused from the count alone */
  aw_w_init(&w, buf, sizeof(buf));
  aw_w_u32(&w, 0);
  aw_w_u32(&w, 0);
  aw_w_u32(&w, 0);
  aw_w_blob(&w, "", 0);
  aw_w_u32(&w, AW_MAX_ARGC + 1);
  CHECK(aw_dec_exec(buf, w.len, &xr) == AW_ERR_LIMIT, "argc over the bound");
  /* an argument announcing 4 GiB */
  aw_w_init(&w, buf, sizeof(buf));
  aw_w_u32(&w, 0);
  aw_w_u32(&w, 0);
  aw_w_u32(&w, 0);
  aw_w_blob(&w, "", 0);
  aw_w_u32(&w, 1);
  aw_w_u32(&w, 0xffffffffu);
  CHECK(aw_dec_exec(buf, w.len, &xr) == AW_ERR_LIMIT, "argument of 4 GiB");
  /* an argument announcing more than is there */
  aw_w_init(&w, buf, sizeof(buf));
  aw_w_u32(&w, 0);
  aw_w_u32(&w, 0);
  aw_w_u32(&w, 0);
  aw_w_blob(&w, "", 0);
  aw_w_u32(&w, 1);
  aw_w_u32(&w, 100);
  aw_w_raw(&w, "abc", 3);
  CHECK(aw_dec_exec(buf, w.len, &xr) == AW_ERR_SHORT, "argument longer than the payload");
  /* cwd over AW_MAX_PATH */
  aw_w_init(&w, buf, sizeof(buf));
  aw_w_u32(&w, 0);
  aw_w_u32(&w, 0);
  aw_w_u32(&w, 0);
  aw_w_u32(&w, AW_MAX_PATH + 1);
  CHECK(aw_dec_exec(buf, w.len, &xr) == AW_ERR_LIMIT, "cwd over the bound");

  /* READ, WRITE, MKDIR, LIST and their results */
  aw_read_req_t rr = {1 << 20, 65536, 0, B("dir/file.txt")}, rr2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_read(&w, 5, &rr) == AW_OK && frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "read frame");
  CHECK(aw_dec_read(p, h.len, &rr2) == AW_OK && rr2.max_bytes == 1 << 20 && bytes_eq(rr2.path, rr.path), "read");
  truncations("read", p, h.len, d_read, &rr2);
  aw_read_res_t rres = {12, 0100644, AW_READF_TRUNCATED, -5}, rres2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_read_result(&w, 5, &rres) == AW_OK && frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0, "read result frame");
  CHECK(aw_dec_read_result(p, h.len, &rres2) == AW_OK && rres2.bytes == 12 && rres2.mtime_ns == -5, "read result");
  truncations("read_result", p, h.len, d_read_result, &rres2);
  aw_write_req_t wr = {99, 0600, AW_WRITE_FSYNC, B("a/b")}, wr2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_write(&w, 6, &wr) == AW_OK && frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "write frame");
  CHECK(aw_dec_write(p, h.len, &wr2) == AW_OK && wr2.length == 99 && wr2.mode == 0600, "write");
  truncations("write", p, h.len, d_write, &wr2);
  wr.mode = 010000;
  aw_w_init(&w, buf, sizeof(buf));
  aw_put_write(&w, 6, &wr);
  frame_of(w.len, AW_FROM_HOST, &h, &p);
  CHECK(aw_dec_write(p, h.len, &wr2) == AW_ERR_VALUE, "write mode over 07777");
  aw_write_res_t wres = {99, 0600}, wres2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_write_result(&w, 6, &wres) == AW_OK && frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0, "write result");
  CHECK(aw_dec_write_result(p, h.len, &wres2) == AW_OK && wres2.bytes == 99, "write result fields");
  truncations("write_result", p, h.len, d_write_result, &wres2);
  aw_mkdir_req_t mr = {0700, AW_MKDIR_PARENTS, B("x/y/z")}, mr2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_mkdir(&w, 7, &mr) == AW_OK && frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "mkdir frame");
  CHECK(aw_dec_mkdir(p, h.len, &mr2) == AW_OK && mr2.flags == AW_MKDIR_PARENTS, "mkdir");
  truncations("mkdir", p, h.len, d_mkdir, &mr2);
  aw_mkdir_res_t mres = {1}, mres2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_mkdir_result(&w, 7, &mres) == AW_OK && frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0, "mkdir result");
  CHECK(aw_dec_mkdir_result(p, h.len, &mres2) == AW_OK && mres2.created == 1, "mkdir result fields");
  truncations("mkdir_result", p, h.len, d_mkdir_result, &mres2);
  aw_list_req_t lr = {100, 4096, 0, B("")}, lr2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_list(&w, 8, &lr) == AW_OK && frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "list frame");
  CHECK(aw_dec_list(p, h.len, &lr2) == AW_OK && lr2.max_entries == 100 && lr2.path.len == 0, "list");
  truncations("list", p, h.len, d_list, &lr2);
  lr.max_entries = 0;
  aw_w_init(&w, buf, sizeof(buf));
  aw_put_list(&w, 8, &lr);
  frame_of(w.len, AW_FROM_HOST, &h, &p);
  CHECK(aw_dec_list(p, h.len, &lr2) == AW_ERR_VALUE, "list of 0 entries refused");
  lr.max_entries = AW_MAX_LIST_ENTRIES + 1;
  aw_w_init(&w, buf, sizeof(buf));
  aw_put_list(&w, 8, &lr);
  frame_of(w.len, AW_FROM_HOST, &h, &p);
  CHECK(aw_dec_list(p, h.len, &lr2) == AW_ERR_LIMIT, "list over the entry bound refused");
  aw_list_res_t lres = {3, AW_LISTF_TRUNCATED}, lres2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_list_result(&w, 8, &lres) == AW_OK && frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0, "list result");
  CHECK(aw_dec_list_result(p, h.len, &lres2) == AW_OK && lres2.count == 3, "list result fields");
  truncations("list_result", p, h.len, d_list_result, &lres2);

  /* PORT_WAIT, SIGNAL, GROUP_ALIVE and results */
  aw_port_req_t pr = {8080, AW_PORT_V4, 1000, 50}, pr2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_port_wait(&w, 9, &pr) == AW_OK && frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "port frame");
  CHECK(aw_dec_port_wait(p, h.len, &pr2) == AW_OK && pr2.port == 8080 && pr2.interval_ms == 50, "port");
  truncations("port_wait", p, h.len, d_port_wait, &pr2);
  pr.port = 0;
  aw_w_init(&w, buf, sizeof(buf));
  aw_put_port_wait(&w, 9, &pr);
  frame_of(w.len, AW_FROM_HOST, &h, &p);
  CHECK(aw_dec_port_wait(p, h.len, &pr2) == AW_ERR_VALUE, "port 0 refused");
  pr.port = 80;
  pr.interval_ms = 1;
  aw_w_init(&w, buf, sizeof(buf));
  aw_put_port_wait(&w, 9, &pr);
  frame_of(w.len, AW_FROM_HOST, &h, &p);
  CHECK(aw_dec_port_wait(p, h.len, &pr2) == AW_ERR_VALUE, "interval of 1 ms refused");
  aw_port_res_t pres = {1, AW_PORT_V6, 12}, pres2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_port_result(&w, 9, &pres) == AW_OK && frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0, "port result");
  CHECK(aw_dec_port_result(p, h.len, &pres2) == AW_OK && pres2.families == AW_PORT_V6, "port result fields");
  truncations("port_result", p, h.len, d_port_result, &pres2);
  aw_signal_req_t sr = {777, 15, AW_SIGNAL_TREE}, sr2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_signal(&w, 10, &sr) == AW_OK && frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "signal frame");
  CHECK(aw_dec_signal(p, h.len, &sr2) == AW_OK && sr2.pgid == 777 && sr2.signal == 15, "signal");
  truncations("signal", p, h.len, d_signal, &sr2);
  sr.signal = 0;
  aw_w_init(&w, buf, sizeof(buf));
  aw_put_signal(&w, 10, &sr);
  frame_of(w.len, AW_FROM_HOST, &h, &p);
  CHECK(aw_dec_signal(p, h.len, &sr2) == AW_ERR_VALUE, "signal 0 refused");
  aw_signal_res_t sres = {1, 3}, sres2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_signal_result(&w, 10, &sres) == AW_OK && frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0, "signal result");
  CHECK(aw_dec_signal_result(p, h.len, &sres2) == AW_OK && sres2.count == 3, "signal result fields");
  truncations("signal_result", p, h.len, d_signal_result, &sres2);
  aw_alive_req_t ar = {555}, ar2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_group_alive(&w, 12, &ar) == AW_OK && frame_of(w.len, AW_FROM_HOST, &h, &p) == 0, "alive frame");
  CHECK(aw_dec_group_alive(p, h.len, &ar2) == AW_OK && ar2.pgid == 555, "alive");
  truncations("group_alive", p, h.len, d_group_alive, &ar2);
  aw_alive_res_t ares = {1, 2, AW_UNKNOWN}, ares2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_alive_result(&w, 12, &ares) == AW_OK && frame_of(w.len, AW_FROM_AGENT, &h, &p) == 0, "alive result");
  CHECK(aw_dec_alive_result(p, h.len, &ares2) == AW_OK && ares2.members == 2 && ares2.zombies == AW_UNKNOWN,
        "alive result fields");
  truncations("alive_result", p, h.len, d_alive_result, &ares2);
}

/* ---- wire: listing records ---- */

static void test_entries(void) {
  aw_writer_t w;
  aw_w_init(&w, buf, sizeof(buf));
  const char *names[] = {"a", "with\nnewline", "tab\there", "\xff\xfe invalid utf-8", "-"};
  for (int i = 0; i < 5; i++) {
    aw_entry_t e = {(uint8_t)(i % 4 + 1), 0100644, (uint64_t)i * 1000, 1700000000000000000LL,
                    {(const uint8_t *)names[i], (uint32_t)strlen(names[i])}};
    CHECK(aw_put_entry(&w, &e) == AW_OK, "put entry %d", i);
  }
  const uint8_t *p = buf;
  size_t len = w.len;
  aw_entry_t e;
  int n = 0, ok = 1;
  int rc;
  while ((rc = aw_entry_next(&p, &len, &e)) == 1) {
    ok &= e.name.len == strlen(names[n]) && memcmp(e.name.p, names[n], e.name.len) == 0 && e.size == (uint64_t)n * 1000;
    n++;
  }
  CHECK(rc == 0 && n == 5 && ok, "entries round trip (rc %d, n %d)", rc, n);
  /* every cut inside the records fails at the cut record */
  size_t total = w.len;
  int bad = 0;
  for (size_t cut = 1; cut < total; cut++) {
    uint8_t *copy = malloc(cut);
    memcpy(copy, buf, cut);
    const uint8_t *q = copy;
    size_t l = cut;
    int count = 0;
    while ((rc = aw_entry_next(&q, &l, &e)) == 1) count++;
    int boundary = 0;
    size_t off = 0;
    for (int i = 0; i < 5; i++) {
      off += AW_ENTRY_FIXED + strlen(names[i]);
      if (off == cut) boundary = 1;
    }
    if (boundary ? rc != 0 : rc >= 0) bad++;
    free(copy);
  }
  CHECK(bad == 0, "%d cuts misjudged", bad);
  /* invalid names */
  const struct {
    const char *name;
    size_t len;
  } badn[] = {{"a/b", 3}, {".", 1}, {"..", 2}, {"a\0b", 3}};
  for (size_t i = 0; i < sizeof(badn) / sizeof(badn[0]); i++) {
    aw_w_init(&w, buf, sizeof(buf));
    aw_entry_t be = {1, 0, 0, 0, {(const uint8_t *)badn[i].name, (uint32_t)badn[i].len}};
    aw_put_entry(&w, &be);
    p = buf;
    len = w.len;
    CHECK(aw_entry_next(&p, &len, &e) < 0, "bad name %zu accepted", i);
  }
  aw_entry_t empty = {1, 0, 0, 0, {(const uint8_t *)"", 0}};
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_entry(&w, &empty) == AW_ERR_LIMIT, "empty name refused by the encoder");
  /* a name length of 256 (over NAME_MAX) */
  aw_w_init(&w, buf, sizeof(buf));
  aw_w_u8(&w, 1);
  aw_w_u8(&w, 0);
  aw_w_u16(&w, 256);
  for (int i = 0; i < 20 + 256; i++) aw_w_u8(&w, 'x');
  p = buf;
  len = w.len;
  CHECK(aw_entry_next(&p, &len, &e) == AW_ERR_LIMIT, "name of 256 bytes refused");
  /* type out of range */
  aw_w_init(&w, buf, sizeof(buf));
  aw_entry_t bt = {9, 0, 0, 0, {(const uint8_t *)"x", 1}};
  aw_put_entry(&w, &bt);
  p = buf;
  len = w.len;
  CHECK(aw_entry_next(&p, &len, &e) == AW_ERR_VALUE, "type 9 refused");
}

/* ---- wire: watch records ---- */

static void test_wevents(void) {
  aw_writer_t w;
  aw_w_init(&w, buf, sizeof(buf));
  const struct {
    uint8_t type, kind;
    const char *path;
  } recs[] = {{AW_WEV_CREATE, AW_WKIND_DIR, "a"},          {AW_WEV_MODIFY, AW_WKIND_FILE, "a/b\nc"},
              {AW_WEV_OVERFLOW, AW_WKIND_NONE, ""},        {AW_WEV_RENAME, AW_WKIND_FILE, "a/\xff.x"},
              {AW_WEV_DELETE, AW_WKIND_DIR, "x/y/z"}};
  size_t n = sizeof(recs) / sizeof(recs[0]), total = 0;
  for (size_t i = 0; i < n; i++) {
    aw_wevent_t e = {recs[i].type, recs[i].kind, {(const uint8_t *)recs[i].path, (uint32_t)strlen(recs[i].path)}};
    CHECK(aw_put_wevent(&w, &e) == AW_OK, "put watch record %zu", i);
    total += aw_wevent_size(&e);
  }
  CHECK(w.len == total, "watch record sizes (%zu of %zu)", w.len, total);
  const uint8_t *p = buf;
  size_t len = w.len;
  aw_wevent_t e;
  size_t count = 0;
  int ok = 1, rc;
  while ((rc = aw_wevent_next(&p, &len, &e)) == 1) {
    ok &= e.type == recs[count].type && e.kind == recs[count].kind && e.path.len == strlen(recs[count].path) &&
          (e.path.len == 0 || memcmp(e.path.p, recs[count].path, e.path.len) == 0);
    count++;
  }
  CHECK(rc == 0 && count == n && ok, "watch records round trip (rc %d, %zu)", rc, count);
  /* every cut that is not between records fails */
  int bad = 0;
  for (size_t cut = 1; cut < total; cut++) {
    uint8_t *copy = malloc(cut);
    memcpy(copy, buf, cut);
    const uint8_t *q = copy;
    size_t l = cut;
    while ((rc = aw_wevent_next(&q, &l, &e)) == 1) {
    }
    size_t off = 0;
    int boundary = 0;
    for (size_t i = 0; i < n; i++) {
      off += AW_WATCH_FIXED + strlen(recs[i].path);
      if (off == cut) boundary = 1;
    }
    if (boundary ? rc != 0 : rc >= 0) bad++;
    free(copy);
  }
  CHECK(bad == 0, "%d watch record cuts misjudged", bad);
  /* paths that are not clean relative ones, and fields out of range */
  const char *badp[] = {"/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "a\0b"};
  size_t badl[] = {2, 2, 4, 1, 2, 5, 6, 3};
  for (size_t i = 0; i < sizeof(badp) / sizeof(badp[0]); i++) {
    aw_w_init(&w, buf, sizeof(buf));
    aw_wevent_t be = {AW_WEV_CREATE, AW_WKIND_FILE, {(const uint8_t *)badp[i], (uint32_t)badl[i]}};
    aw_put_wevent(&w, &be);
    p = buf;
    len = w.len;
    CHECK(aw_wevent_next(&p, &len, &e) < 0, "bad watch path %zu accepted", i);
  }
  const uint8_t fields[][4] = {{0, 1, 0, 1}, {6, 1, 0, 1}, {1, 3, 0, 1}, {1, 0, 0, 1}, {5, 1, 0, 0}, {5, 0, 0, 1}, {1, 1, 0, 0}};
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
    memcpy(buf, fields[i], 4);
    buf[4] = 'x';
    p = buf;
    len = 4 + (fields[i][3] ? 1 : 0);
    CHECK(aw_wevent_next(&p, &len, &e) < 0, "watch record fields %zu accepted", i);
  }
  /* a path of 4097 bytes */
  aw_w_init(&w, buf, sizeof(buf));
  aw_w_u8(&w, AW_WEV_CREATE);
  aw_w_u8(&w, AW_WKIND_FILE);
  aw_w_u16(&w, AW_MAX_PATH + 1);
  for (unsigned i = 0; i < AW_MAX_PATH + 1; i++) aw_w_u8(&w, 'x');
  p = buf;
  len = w.len;
  CHECK(aw_wevent_next(&p, &len, &e) == AW_ERR_LIMIT, "watch path of 4097 bytes refused");
  /* WATCH and its RESULT */
  aw_watch_req_t m = {AW_WATCH_RECURSIVE, 4100, 3, {(const uint8_t *)"a/b", 3}}, m2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_watch(&w, 5, &m) == AW_OK, "put watch");
  CHECK(aw_dec_watch(buf + AW_HEADER_LEN, w.len - AW_HEADER_LEN, &m2) == AW_OK && m2.max_watches == 3 &&
            m2.flags == AW_WATCH_RECURSIVE && m2.path.len == 3,
        "dec watch");
  aw_watch_res_t res = {12, AW_WATCHF_ROOT_GONE | AW_WATCHF_LIMIT}, res2;
  aw_w_init(&w, buf, sizeof(buf));
  CHECK(aw_put_watch_result(&w, 5, &res) == AW_OK, "put watch result");
  CHECK(aw_dec_watch_result(buf + AW_HEADER_LEN, w.len - AW_HEADER_LEN, &res2) == AW_OK && res2.events == 12 &&
            res2.flags == 3,
        "dec watch result");
}

/* ---- wire: headers ---- */

static void put_header(uint32_t len, uint8_t type, uint8_t flags, uint8_t stream, uint8_t rsv, uint32_t id) {
  aw_header_t h = {len, type, flags, stream, rsv, id};
  aw_header_encode(buf, &h);
}

static void test_headers(void) {
  aw_header_t h;
  const uint8_t *p;
  size_t fl;
  for (size_t n = 0; n < AW_HEADER_LEN; n++) {
    put_header(0, AW_T_PING, 0, 0, 0, 1);
    CHECK(aw_frame_parse(buf, n, AW_FROM_HOST, &h, &p, &fl) == 0, "short header of %zu bytes", n);
  }
  put_header(AW_MAX_PAYLOAD + 1, AW_T_EXEC, 0, 0, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_FRAME_SIZE, "oversize frame");
  put_header(0xffffffffu, AW_T_RESULT, 0, 0, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_AGENT, &h, &p, &fl) == AW_ERR_FRAME_SIZE, "4 GiB frame");
  put_header(AW_MAX_DATA + 1, AW_T_DATA, 0, AW_S_OUT, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_AGENT, &h, &p, &fl) == AW_ERR_FRAME_SIZE, "oversize DATA");
  put_header(AW_MAX_PAYLOAD, AW_T_EXEC, 0, 0, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN + 10, AW_FROM_HOST, &h, &p, &fl) == 0, "max frame waits for its payload");
  put_header(0, AW_T_PING, 0, 0, 1, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_RESERVED, "reserved byte");
  put_header(0, 0x7f, 0, 0, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_TYPE, "unknown type");
  put_header(0, AW_T_RESULT, 0, 0, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_TYPE, "RESULT from the host");
  put_header(0, AW_T_EXEC, 0, 0, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_AGENT, &h, &p, &fl) == AW_ERR_TYPE, "EXEC from the agent");
  put_header(0, AW_T_EXEC, AW_F_END, 0, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_FLAGS, "END on EXEC");
  put_header(0, AW_T_DATA, 0x02, AW_S_IN, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_FLAGS, "unknown DATA flag");
  put_header(0, AW_T_DATA, 0, 0, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_STREAM, "DATA on stream 0");
  put_header(0, AW_T_DATA, 0, 9, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_AGENT, &h, &p, &fl) == AW_ERR_STREAM, "DATA on stream 9");
  put_header(0, AW_T_EXEC, 0, AW_S_OUT, 0, 1);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_STREAM, "EXEC with a stream");
  put_header(0, AW_T_EXEC, 0, 0, 0, 0);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_HOST, &h, &p, &fl) == AW_ERR_ID, "EXEC with id 0");
  put_header(0, AW_T_HELLO, 0, 0, 0, 5);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_AGENT, &h, &p, &fl) == AW_ERR_ID, "HELLO with an id");
  put_header(0, AW_T_ERROR, 0, 0, 0, 0);
  CHECK(aw_frame_parse(buf, AW_HEADER_LEN, AW_FROM_AGENT, &h, &p, &fl) == 1, "connection ERROR with id 0");
}

/* ---- wire: garbage ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)rng;
}

static void test_garbage(void) {
  static const dec_fn decs[] = {d_hello,    d_host_hello,  d_error,        d_started,    d_exited,    d_exec_result,
                                d_exec,     d_read,        d_read_result,  d_write,      d_write_result, d_mkdir,
                                d_mkdir_result, d_list,    d_list_result,  d_port_wait,  d_port_result, d_signal,
                                d_signal_result, d_group_alive, d_alive_result, d_window};
  union {
    aw_hello_t a;
    aw_exec_req_t b;
    aw_error_t c;
    aw_exit_t d;
    uint8_t pad[256];
  } out;
  long accepted = 0, rounds = 0;
  for (int iter = 0; iter < 20000; iter++) {
    size_t len = rnd() % 96;
    uint8_t *g8 = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++) {
      uint32_t r = rnd();
      /* mostly small numbers so lengths and counts sometimes line up */
      g8[i] = (uint8_t)((r & 0x300) ? (r & 0x7) : r);
    }
    for (size_t d = 0; d < sizeof(decs) / sizeof(decs[0]); d++) {
      if (decs[d](g8, len, &out) == AW_OK) accepted++;
      rounds++;
    }
    /* frames and entries */
    aw_header_t h;
    const uint8_t *p;
    size_t fl;
    (void)aw_frame_parse(g8, len, AW_FROM_AGENT, &h, &p, &fl);
    (void)aw_frame_parse(g8, len, AW_FROM_HOST, &h, &p, &fl);
    const uint8_t *q = g8;
    size_t l = len;
    aw_entry_t e;
    while (aw_entry_next(&q, &l, &e) == 1) CHECK(q <= g8 + len, "entry past the end");
    free(g8);
  }
  CHECK(rounds > 0, "garbage rounds");
  printf("garbage: %ld decodes, %ld accepted\n", rounds, accepted);
}

/* ---- path walk ---- */

static char tmpdir[256];

static void mk(const char *rel, int dir) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
  if (dir) {
    mkdir(path, 0755);
  } else {
    FILE *f = fopen(path, "w");
    if (f) {
      fputs("content", f);
      fclose(f);
    }
  }
}

static void ln(const char *target, const char *rel) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
  if (symlink(target, path) != 0) printf("symlink %s: %s\n", path, strerror(errno));
}

static int parse(const char *s, agpath_t *p, ag_err_t *e) { return walk_path_parse((const uint8_t *)s, strlen(s), p, e); }

static void expect_open(int wd, const char *path, int flags, int use2, uint16_t kind, const char *detail) {
  agpath_t p;
  ag_err_t e;
  memset(&e, 0, sizeof(e));
  if (parse(path, &p, &e) < 0) {
    CHECK(kind != 0 && e.kind == kind, "[%d] %s: parse failed with %u (%s)", use2, path, e.kind, e.detail);
    return;
  }
  int fd = walk_open(wd, &p, flags, use2, &e);
  if (kind == 0) {
    CHECK(fd >= 0, "[%d] %s: open failed: %s %s", use2, path, aw_error_name(e.kind), e.detail);
  } else {
    CHECK(fd < 0 && e.kind == kind, "[%d] %s: want %s, got fd %d kind %s", use2, path, aw_error_name(kind), fd,
          fd < 0 ? aw_error_name(e.kind) : "-");
    if (fd < 0 && detail)
      CHECK(strcmp(e.detail, detail) == 0, "[%d] %s: detail \"%s\", want \"%s\"", use2, path, e.detail, detail);
  }
  if (fd >= 0) close(fd);
}

static void test_paths(void) {
  agpath_t p;
  ag_err_t e;
  CHECK(parse("", &p, &e) == 0 && p.n == 0, "empty path is the workdir");
  CHECK(parse(".", &p, &e) == 0 && p.n == 0, "'.' is the workdir");
  CHECK(parse("a//b/./c/", &p, &e) == 0 && p.n == 3 && strcmp(p.buf + p.off[2], "c") == 0, "a//b/./c/");
  char joined[64];
  walk_path_join(&p, p.n, joined, sizeof(joined));
  CHECK(strcmp(joined, "a/b/c") == 0, "join: %s", joined);
  CHECK(parse("/etc/passwd", &p, &e) < 0 && e.kind == AW_E_OUTSIDE, "absolute path");
  CHECK(parse("a/../b", &p, &e) < 0 && e.kind == AW_E_OUTSIDE, "..");
  CHECK(parse("..", &p, &e) < 0 && e.kind == AW_E_OUTSIDE, ".. alone");
  CHECK(parse("a/..b/c..", &p, &e) == 0 && p.n == 3, "names starting or ending with .. are names");
  CHECK(walk_path_parse((const uint8_t *)"a\0b", 3, &p, &e) < 0 && e.kind == AW_E_INVALID, "NUL");
  char big[AW_MAX_PATH + 2];
  memset(big, 'a', sizeof(big));
  CHECK(walk_path_parse((const uint8_t *)big, AW_MAX_PATH + 1, &p, &e) < 0 && e.kind == AW_E_LIMIT, "path too long");
  CHECK(walk_path_parse((const uint8_t *)big, AW_MAX_NAME + 1, &p, &e) < 0 && e.kind == AW_E_LIMIT, "component too long");
  CHECK(walk_path_parse((const uint8_t *)big, AW_MAX_NAME, &p, &e) == 0 && p.n == 1, "component of 255 bytes");
  char deep[AW_MAX_PATH];
  size_t dl = 0;
  for (unsigned i = 0; i < AW_MAX_DEPTH + 1; i++) {
    deep[dl++] = 'd';
    deep[dl++] = '/';
  }
  CHECK(walk_path_parse((const uint8_t *)deep, dl, &p, &e) < 0 && e.kind == AW_E_LIMIT, "too deep");
  CHECK(walk_path_parse((const uint8_t *)deep, (AW_MAX_DEPTH)*2, &p, &e) == 0 && p.n == AW_MAX_DEPTH, "exactly max depth");
  /* AW_MAX_PATH bytes of single-letter components and separators */
  memset(big, '/', sizeof(big));
  for (size_t i = 0; i < AW_MAX_PATH; i += 16) big[i] = 'x';
  CHECK(walk_path_parse((const uint8_t *)big, AW_MAX_PATH, &p, &e) == 0, "max-length path with slashes");

  snprintf(tmpdir, sizeof(tmpdir), "/tmp/agent-unit-XXXXXX");
  if (mkdtemp(tmpdir) == NULL) {
    CHECK(0, "mkdtemp: %s", strerror(errno));
    return;
  }
  mk("a", 1);
  mk("a/b", 1);
  mk("a/b/file", 0);
  mk("top", 0);
  ln("/etc", "etc");
  ln("b", "a/lnk");
  ln("/nonexistent/x", "dangling");
  ln("file", "a/b/flink");
  ln("a", "dirlink");
  int wd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  int have2 = walk_openat2_probe();
  printf("openat2 %s\n", have2 ? "available" : "not available: the walk only");
  for (int use2 = 0; use2 <= have2; use2++) {
    const int R = O_RDONLY | O_NONBLOCK;
    expect_open(wd, "a/b/file", R, use2, 0, NULL);
    expect_open(wd, "top", R, use2, 0, NULL);
    expect_open(wd, "./a//b/file", R, use2, 0, NULL);
    expect_open(wd, "etc/passwd", R, use2, AW_E_SYMLINK, "etc");
    expect_open(wd, "etc", R, use2, AW_E_SYMLINK, "etc");
    expect_open(wd, "a/lnk/file", R, use2, AW_E_SYMLINK, "a/lnk");
    expect_open(wd, "a/b/flink", R, use2, AW_E_SYMLINK, "a/b/flink");
    expect_open(wd, "dangling", R, use2, AW_E_SYMLINK, "dangling");
    expect_open(wd, "dirlink/b/file", R, use2, AW_E_SYMLINK, "dirlink");
    expect_open(wd, "missing", R, use2, AW_E_NOT_FOUND, "missing");
    expect_open(wd, "a/missing/file", R, use2, AW_E_NOT_FOUND, "a/missing");
    expect_open(wd, "top/x", R, use2, AW_E_NOT_DIRECTORY, "top");
    expect_open(wd, "a/b/file/x", R, use2, AW_E_NOT_DIRECTORY, "a/b/file");
    expect_open(wd, "../x", R, use2, AW_E_OUTSIDE, NULL);
    expect_open(wd, "/etc/passwd", R, use2, AW_E_OUTSIDE, NULL);
    expect_open(wd, "a", O_RDONLY | O_DIRECTORY, use2, 0, NULL);
    expect_open(wd, "", O_RDONLY | O_DIRECTORY, use2, 0, NULL);
    expect_open(wd, "dirlink", O_RDONLY | O_DIRECTORY, use2, AW_E_SYMLINK, "dirlink");
    expect_open(wd, "top", O_RDONLY | O_DIRECTORY, use2, AW_E_NOT_DIRECTORY, "top");
    /* walk_dir with creation */
    agpath_t q;
    int created = -1;
    char rel[64];
    snprintf(rel, sizeof(rel), "new%d/x/y", use2);
    parse(rel, &q, &e);
    int fd = walk_dir(wd, &q, q.n, 1, 0755, use2, &created, &e);
    CHECK(fd >= 0 && created == 1, "[%d] create %s: fd %d created %d (%s)", use2, rel, fd, created, e.detail);
    if (fd >= 0) close(fd);
    fd = walk_dir(wd, &q, q.n, 1, 0755, use2, &created, &e);
    CHECK(fd >= 0 && created == 0, "[%d] second create %s: created %d", use2, rel, created);
    if (fd >= 0) close(fd);
    parse("etc/new", &q, &e);
    fd = walk_dir(wd, &q, q.n, 1, 0755, use2, &created, &e);
    CHECK(fd < 0 && e.kind == AW_E_SYMLINK && strcmp(e.detail, "etc") == 0, "[%d] create through a symlink: %s %s",
          use2, aw_error_name(e.kind), e.detail);
    parse("top/sub", &q, &e);
    fd = walk_dir(wd, &q, q.n, 1, 0755, use2, &created, &e);
    CHECK(fd < 0 && e.kind == AW_E_NOT_DIRECTORY, "[%d] create under a file", use2);
    struct stat st;
    CHECK(fstatat(wd, "etc/new", &st, 0) != 0, "nothing was made in /etc");
  }
  close(wd);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("could not remove %s\n", tmpdir);
}

/* ---- /proc parsers ---- */

static void test_procfs(void) {
  proc_stat_t s;
  const char *l1 = "1234 (sh) S 1 1234 1234 0 -1 4194560 100 0 0 0";
  CHECK(procfs_stat_parse(l1, strlen(l1), &s) == 0 && s.pid == 1234 && s.state == 'S' && s.ppid == 1 && s.pgrp == 1234 &&
            s.session == 1234,
        "plain stat");
  const char *l2 = "77 (a) (b) Z 9 ) 5 6 7 8) R 3 4 5 6";
  CHECK(procfs_stat_parse(l2, strlen(l2), &s) == 0 && s.state == 'R' && s.ppid == 3 && s.pgrp == 4 && s.session == 5,
        "comm with parentheses and spaces");
  const char *bad[] = {"", "x (a) S 1 2 3", "12 (a S 1 2 3", "12 (a) S", "12 (a) S 1 2", "12 (a) S x 2 3"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    CHECK(procfs_stat_parse(bad[i], strlen(bad[i]), &s) < 0, "bad stat %zu accepted", i);

  const char *tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1\n"
      "   1: 0100007F:1F91 0100007F:AAAA 01 00000000:00000000 00:00000000 00000000  1000        0 2 1\n";
  const char *tcp6 =
      "  sl  local_address                         remote_address                        st\n"
      "   0: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 0\n";
  struct {
    const char *text;
    uint16_t port;
    int want;
  } cases[] = {{tcp, 8080, 1}, {tcp, 8081, 0}, {tcp, 80, 0}, {tcp6, 80, 1}, {tcp6, 8080, 0}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    size_t len = strlen(cases[c].text);
    /* every split point of the text gives the same answer */
    int bad_splits = 0;
    for (size_t cut = 0; cut <= len; cut++) {
      tcp_scan_t ts;
      procfs_tcp_scan_init(&ts, cases[c].port);
      procfs_tcp_scan_feed(&ts, cases[c].text, cut);
      procfs_tcp_scan_feed(&ts, cases[c].text + cut, len - cut);
      procfs_tcp_scan_end(&ts);
      if (ts.found != cases[c].want) bad_splits++;
    }
    CHECK(bad_splits == 0, "tcp case %zu: %d split points disagree", c, bad_splits);
  }
  /* an overlong line is skipped whole; the line after it still counts */
  size_t biglen = 3000;
  char *big = malloc(biglen + 200);
  memset(big, 'x', biglen);
  big[biglen] = 0;
  strcat(big, " 0: 0100007F:1F90 00000000:0000 0A\n   1: 0100007F:0016 00000000:0000 0A\n");
  tcp_scan_t ts;
  procfs_tcp_scan_init(&ts, 8080);
  procfs_tcp_scan_feed(&ts, big, strlen(big));
  procfs_tcp_scan_end(&ts);
  CHECK(ts.found == 0, "the tail of an overlong line is not a line");
  procfs_tcp_scan_init(&ts, 22);
  procfs_tcp_scan_feed(&ts, big, strlen(big));
  procfs_tcp_scan_end(&ts);
  CHECK(ts.found == 1, "the line after an overlong line");
  free(big);
}

/* One netlink message of `type` with `body` (padded to 4 bytes) at p; its length. */
static size_t nl_put(uint8_t *p, uint16_t type, const void *body, size_t blen) {
  diag_nlhdr_t h = {.len = (uint32_t)(sizeof(h) + blen), .type = type};
  memcpy(p, &h, sizeof(h));
  memcpy(p + sizeof(h), body, blen);
  return (sizeof(h) + blen + 3) & ~(size_t)3;
}

static size_t nl_sock(uint8_t *p, uint8_t state, uint16_t port) {
  diag_msg_t m;
  memset(&m, 0, sizeof(m));
  m.family = AF_INET;
  m.state = state;
  m.id.sport = htons(port);
  return nl_put(p, DIAG_SOCK_DIAG_BY_FAMILY, &m, sizeof(m));
}

static int bit(const uint8_t *map, uint16_t port) { return (map[port >> 3] >> (port & 7)) & 1; }

static void test_diag(void) {
  static uint8_t map[8192];
  uint8_t d[1024];
  int err = 0;
  /* listeners are set, other states are not; the dump goes on until NLMSG_DONE */
  size_t n = nl_sock(d, DIAG_TCP_LISTEN, 8080);
  n += nl_sock(d + n, 1 /* ESTABLISHED */, 8081);
  n += nl_sock(d + n, DIAG_TCP_LISTEN, 65535);
  memset(map, 0, sizeof(map));
  CHECK(procfs_diag_parse(d, n, map, &err) == 0, "a dump without its end ended");
  CHECK(bit(map, 8080) && bit(map, 65535) && !bit(map, 8081), "listening ports");
  int32_t zero = 0;
  size_t m = nl_put(d + n, DIAG_NLMSG_DONE, &zero, sizeof(zero));
  CHECK(procfs_diag_parse(d, n + m, map, &err) == 1, "NLMSG_DONE ends the dump");
  /* the kernel's error */
  int32_t eperm = -EPERM;
  m = nl_put(d, DIAG_NLMSG_ERROR, &eperm, sizeof(eperm));
  err = 0;
  CHECK(procfs_diag_parse(d, m, map, &err) == -1 && err == EPERM, "NLMSG_ERROR: err %d", err);
  int32_t silly = 7;
  m = nl_put(d, DIAG_NLMSG_ERROR, &silly, sizeof(silly));
  CHECK(procfs_diag_parse(d, m, map, &err) == -1 && err == EPROTO, "a positive error is EPROTO");
  /* every truncation of a message is refused, never read past */
  n = nl_sock(d, DIAG_TCP_LISTEN, 22);
  int bad = 0;
  for (size_t cut = 1; cut < sizeof(diag_nlhdr_t) + sizeof(diag_msg_t); cut++) {
    err = 0;
    if (procfs_diag_parse(d, cut, map, &err) != -1 || err != EPROTO) bad++;
  }
  CHECK(bad == 0, "%d truncations accepted", bad);
  /* a header whose length is smaller than a header, or larger than the datagram */
  diag_nlhdr_t h = {.len = 3, .type = DIAG_SOCK_DIAG_BY_FAMILY};
  memcpy(d, &h, sizeof(h));
  CHECK(procfs_diag_parse(d, sizeof(h), map, &err) == -1, "a header of 3 bytes");
  h.len = 1u << 30;
  memcpy(d, &h, sizeof(h));
  CHECK(procfs_diag_parse(d, sizeof(d), map, &err) == -1, "a header longer than the datagram");
  /* a socket message too short for an inet_diag_msg */
  m = nl_put(d, DIAG_SOCK_DIAG_BY_FAMILY, &zero, sizeof(zero));
  CHECK(procfs_diag_parse(d, m, map, &err) == -1, "a short inet_diag_msg");
  /* other message types are skipped */
  m = nl_put(d, 99, &zero, sizeof(zero));
  m += nl_sock(d + m, DIAG_TCP_LISTEN, 443);
  memset(map, 0, sizeof(map));
  CHECK(procfs_diag_parse(d, m, map, &err) == 0 && bit(map, 443), "an unknown type skipped");
  CHECK(procfs_diag_parse(d, 0, map, &err) == 0, "an empty datagram");

  /* The kernel itself: a listener of ours is there, and gone once closed. */
  int expected = getenv("ANVIA_DIAG_EXPECTED") && strcmp(getenv("ANVIA_DIAG_EXPECTED"), "1") == 0;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 1) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
    CHECK(0, "a listener of the test's own: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return;
  }
  uint16_t port = ntohs(a.sin_port);
  err = 0;
  int rc = diag_listening(AF_INET, map, &err);
  if (!expected && rc != 0) {
    printf("sock_diag unavailable here (%s): not checked\n", strerror(err));
    close(fd);
    return;
  }
  CHECK(rc == 0, "sock_diag: %s", strerror(err));
  CHECK(rc != 0 || bit(map, port), "our listener on %u is not in the dump", port);
  close(fd);
  rc = diag_listening(AF_INET, map, &err);
  CHECK(rc == 0 && !bit(map, port), "a closed listener on %u is still in the dump", port);
  CHECK(diag_listening(AF_INET6, map, &err) == 0, "sock_diag, IPv6: %s", strerror(err));
}

int main(void) {
  g.self = getpid();
  test_headers();
  test_roundtrips();
  test_entries();
  test_wevents();
  test_garbage();
  test_paths();
  test_procfs();
  test_diag();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
