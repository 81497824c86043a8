/*
 * fuzz_hijack.c - the reply to an exec start as src/hijack.c reads it off the upgraded
 * connection: the HTTP response head (status, Content-Type, Content-Length,
 * Transfer-Encoding), then either the multiplexed output stream (101, or 200 from older
 * engines) or the engine's error body (plain or chunked).
 *
 * hijack.c is #included so its read callback runs as libuv would call it; the hijack_t is
 * set up as hijack_start leaves it once the request is written, with no connection
 * (stubs_hijack.c). Input: a chunking plan (fuzz_common.h), then the bytes the engine
 * sends (head and stream). They are read in one piece (the reference) and in the planned
 * pieces, each an exactly-sized heap block, then end of file. Both must give the same
 * output, on the same streams, and the same end (exactly one end callback, nothing after it).
 * The chunked error body decoder also runs on its own over the bytes after the head.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

/*
 * strtoul and strtol as plain C compiled with AddressSanitizer: glibc's are not
 * instrumented and ASan does not intercept strtoul, so a parse that runs past the end of
 * a buffer that is not NUL-terminated would go unseen. hijack.c calls these instead.
 */
static unsigned long fuzz_strtoul_impl(const char *s, char **end, int base, int *neg_out) {
  const char *p = s;
  while (isspace((unsigned char)*p)) p++;
  int neg = 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2])) {
    p += 2;
    base = 16;
  } else if (base == 0) {
    base = p[0] == '0' ? 8 : 10;
  }
  const char *digits = p;
  unsigned long v = 0;
  int overflow = 0;
  for (;; p++) {
    int c = (unsigned char)*p, d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'z') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'Z') d = c - 'A' + 10;
    else break;
    if (d >= base) break;
    if (v > (ULONG_MAX - (unsigned long)d) / (unsigned long)base) overflow = 1;
    else v = v * (unsigned long)base + (unsigned long)d;
  }
  if (p == digits) {
    if (end) *end = (char *)s;
    *neg_out = 0;
    return 0;
  }
  if (end) *end = (char *)p;
  *neg_out = neg;
  if (overflow) {
    errno = ERANGE;
    return ULONG_MAX;
  }
  return v;
}

static unsigned long fuzz_strtoul(const char *s, char **end, int base) {
  int neg = 0;
  unsigned long v = fuzz_strtoul_impl(s, end, base, &neg);
  return neg ? (unsigned long)(-(long)v) : v;
}

static long fuzz_strtol(const char *s, char **end, int base) {
  int neg = 0;
  unsigned long v = fuzz_strtoul_impl(s, end, base, &neg);
  if (!neg && v > (unsigned long)LONG_MAX) {
    errno = ERANGE;
    return LONG_MAX;
  }
  if (neg && v > (unsigned long)LONG_MAX + 1ul) {
    errno = ERANGE;
    return LONG_MIN;
  }
  return neg ? (long)(0ul - v) : (long)v;
}

#define strtoul fuzz_strtoul
#define strtol fuzz_strtol
#include "../../src/hijack.c"
#undef strtoul
#undef strtol

#include "fuzz_common.h"

typedef struct sink {
  buf_t bytes;
  buf_t streams;
  int ends;
  int failed;
  char *message;
} sink_t;

static void on_data_cb(void *ud, int stream, const uint8_t *data, size_t len) {
  sink_t *s = ud;
  FUZZ_CHECK(s->ends == 0, "output after the end");
  FUZZ_CHECK(stream == 1 || stream == 2, "stream %d", stream);
  FUZZ_CHECK(len > 0, "empty piece");
  if (buf_append(&s->bytes, data, len) != 0) abort();
  for (size_t i = 0; i < len; i++) {
    uint8_t b = (uint8_t)stream;
    if (buf_append(&s->streams, &b, 1) != 0) abort();
  }
}

static void on_end_cb(void *ud, err_t *err) {
  sink_t *s = ud;
  s->ends++;
  FUZZ_CHECK(s->ends == 1, "end reported %d times", s->ends);
  if (err != NULL) {
    FUZZ_CHECK(err_is_set(err) && err->message != NULL && err->code != NULL, "end with an empty error");
    s->failed = 1;
    s->message = strdup(err->message);
  }
}

static hijack_t *new_hijack(sink_t *s) {
  hijack_t *h = calloc(1, sizeof(*h));
  if (h == NULL) abort();
  h->eng = NULL;
  h->cbs.on_data = on_data_cb;
  h->cbs.on_end = on_end_cb;
  h->ud = s;
  h->queue_tail = &h->queue;
  h->content_length = -1;
  frame_demux_init(&h->demux);
  buf_init(&h->head, MAX_HEAD_BYTES);
  buf_init(&h->error_body, MAX_ERROR_BODY);
  h->handle.pipe.data = h;
  h->state = H_HEAD; /* the request is written, the head is awaited */
  return h;
}

static void read_piece(hijack_t *h, const uint8_t *data, size_t len) {
  uint8_t *block = fuzz_dup(data, len);
  uv_buf_t b;
  b.base = (char *)block;
  b.len = len;
  on_read((uv_stream_t *)&h->handle, (ssize_t)len, &b);
  free(block);
}

static void read_eof(hijack_t *h) { on_read((uv_stream_t *)&h->handle, UV_EOF, NULL); }

/*
 * Known finding hijack-1 (test/fuzz/FINDINGS.md): parse_head reads the status with
 * sscanf("HTTP/%d.%d %ld") and looks up Content-Type, Transfer-Encoding and
 * Content-Length with strstr over the whole head buffer, which also holds whatever came
 * after the blank line in the same reads (the first output, or the error body): %d skips
 * CR and LF, and a header line found after the blank line counts when the head lacks it.
 * The verdict then depends on how the reply was split into reads. Such inputs are not
 * compared unless FUZZ_STRICT=1: the status line on its own must hold the three numbers,
 * and none of those headers may appear after the blank line without appearing before it.
 * Known finding hijack-2: an error body is kept up to the end of the read that completed
 * it, not cut at its Content-Length, so bytes after it reach the message depending on the
 * reads: inputs with more bytes than Content-Length after the head are not compared.
 * Known finding hijack-3 (below): chunked bodies with a size line that starts with white
 * space are not compared either.
 */
static int strict = 0;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *s = getenv("FUZZ_STRICT");
  /* The findings these relaxations were for are fixed: strict unless FUZZ_STRICT=0. */
  strict = !(s != NULL && s[0] == '0');
  return 0;
}

/* header_value's match: "\r\n<name>:" anywhere in a NUL-terminated text. */
static int has_header(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(text, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n"))
    if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') return 1;
  return 0;
}

/* Whether the known findings above cannot make the two readings differ. */
static int head_self_contained(const uint8_t *data, size_t len) {
  if (len > MAX_HEAD_BYTES) len = MAX_HEAD_BYTES;
  char *all = fuzz_strndup(data, len); /* what the head buffer holds after one read */
  char *end = strstr(all, "\r\n\r\n");
  int ok = 1;
  if (end != NULL) {
    char *line_end = strstr(all, "\r\n");
    char saved = *line_end;
    *line_end = 0;
    int major = 0, minor = 0;
    long status = 0;
    ok = sscanf(all, "HTTP/%d.%d %ld", &major, &minor, &status) == 3;
    *line_end = saved;
    static const char *names[] = {"Content-Type", "Transfer-Encoding", "Content-Length"};
    char saved_end = end[2];
    for (int i = 0; ok && i < 3; i++) {
      end[2] = 0; /* the head alone, with its last CRLF */
      int in_head = has_header(all, names[i]);
      end[2] = saved_end;
      if (!in_head && has_header(all, names[i])) ok = 0;
    }
    /* hijack-2: an error body is not cut at its Content-Length. */
    end[2] = 0;
    long content_length = header_value_long(all, "Content-Length");
    end[2] = saved_end;
    size_t after = len - (size_t)(end + 4 - all);
    if (content_length >= 0 && after > (size_t)content_length) ok = 0;
    /* hijack-3: a chunk-size line that starts with white space is read on into the lines
     * after it, which may not have arrived yet. The size lines are found as dechunk finds
     * them (it skips two bytes after each chunk's data without looking at them). */
    end[2] = 0;
    int chunked = has_header(all, "Transfer-Encoding");
    end[2] = saved_end;
    const char *body = end + 4;
    size_t i = 0;
    while (chunked && ok) {
      const char *crlf = i < after ? memmem(body + i, after - i, "\r\n", 2) : NULL;
      if (crlf == NULL) break;
      if (isspace((unsigned char)body[i])) {
        ok = 0;
        break;
      }
      char *num_end = NULL;
      unsigned long n = strtoul(body + i, &num_end, 16); /* stops inside the line */
      if (num_end == body + i) break;
      i = (size_t)(crlf - body) + 2;
      if (n == 0 || n > MAX_ERROR_BODY || after - i < n + 2) break;
      i += n + 2;
    }
  }
  free(all);
  return ok;
}

/*
 * dechunk on its own, over a buffer exactly as long as its bytes (a buf_t normally has
 * spare capacity, which would hide a read past its length from AddressSanitizer).
 * Known finding hijack-3 (test/fuzz/FINDINGS.md): the chunk size is read with strtoul,
 * which skips white space, CR and LF included, so an empty or blank size line reads on
 * into the next lines and past the end of the body. Unless FUZZ_STRICT=1 a NUL follows
 * the bytes, which stops it there.
 */
static void check_dechunk(const uint8_t *data, size_t len) {
  uint8_t *copy = malloc(len + 1);
  if (copy == NULL) abort();
  if (len) memcpy(copy, data, len);
  copy[len] = 0;
  buf_t in = {copy, len, strict ? len : len + 1, 0};
  if (strict) {
    in.data = fuzz_dup(data, len);
    free(copy);
  }
  buf_t out;
  buf_init(&out, MAX_ERROR_BODY);
  int rc = dechunk(&in, &out);
  FUZZ_CHECK(rc >= -1 && rc <= 1, "dechunk returned %d", rc);
  FUZZ_CHECK(out.len <= len, "dechunk made %zu bytes from %zu", out.len, len);
  buf_free(&out);
  free(in.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = {data, size};
  fuzz_chunks_t plan;
  fuzz_chunks_read(&r, &plan);
  /* The bytes after the head, when there is one, as a chunked error body. */
  const uint8_t *blank = memmem(r.data, r.len, "\r\n\r\n", 4);
  if (blank != NULL) check_dechunk(blank + 4, r.len - (size_t)(blank + 4 - r.data));
  else check_dechunk(r.data, r.len);

  sink_t ref = {0};
  buf_init(&ref.bytes, 0);
  buf_init(&ref.streams, 0);
  hijack_t *h = new_hijack(&ref);
  if (r.len > 0) read_piece(h, r.data, r.len);
  read_eof(h);
  FUZZ_CHECK(ref.ends == 1, "one read: end reported %d times", ref.ends);
  h_free(h);

  sink_t got = {0};
  buf_init(&got.bytes, 0);
  buf_init(&got.streams, 0);
  h = new_hijack(&got);
  size_t off = 0;
  for (int index = 0; off < r.len; index++) {
    size_t n = fuzz_chunk_len(&plan, index, r.len - off);
    read_piece(h, r.data + off, n);
    off += n;
  }
  read_eof(h);
  FUZZ_CHECK(got.ends == 1, "pieces: end reported %d times", got.ends);
  h_free(h);

  if (!strict && !head_self_contained(r.data, r.len)) goto done; /* known finding hijack-1 */
  FUZZ_CHECK(got.failed == ref.failed, "pieces %s (%s), one read %s (%s)", got.failed ? "failed" : "ended",
             got.message ? got.message : "", ref.failed ? "failed" : "ended", ref.message ? ref.message : "");
  if (ref.failed) FUZZ_CHECK(strcmp(got.message, ref.message) == 0, "pieces \"%s\", one read \"%s\"", got.message,
                             ref.message);
  FUZZ_CHECK(got.bytes.len == ref.bytes.len && (got.bytes.len == 0 || memcmp(got.bytes.data, ref.bytes.data,
                                                                              got.bytes.len) == 0),
             "pieces gave %zu output bytes, one read %zu (or they differ)", got.bytes.len, ref.bytes.len);
  FUZZ_CHECK(got.streams.len == 0 || memcmp(got.streams.data, ref.streams.data, got.streams.len) == 0,
             "streams differ");
done:
  buf_free(&ref.bytes);
  buf_free(&ref.streams);
  buf_free(&got.bytes);
  buf_free(&got.streams);
  free(ref.message);
  free(got.message);
  return 0;
}
