/*
 * fuzz_findparse.c - the directory listing printed inside the container
 * (src/codec/findparse.c: list_parse, and js_number_size through it).
 *
 * Input: the listed directory (absolute, as the sandbox's workdir joined with the
 * requested path), a newline, then the command's stdout ("<type>\0<size>\0<path>\0"
 * records from `find -printf` or the shell loop). Without a newline before the first NUL,
 * or with a relative first part, the whole input is the listing of "/workspace". Every
 * entry parsed is a sandbox path (relative, no "..", not "."), valid UTF-8, and only files
 * carry a size, a safe integer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "codec/findparse.h"
#include "codec/textpage.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t head_len = 0, rest_len = 0;
  const uint8_t *rest = NULL;
  char *workdir;
  const uint8_t *listing;
  size_t listing_len;
  const uint8_t *nl = memchr(data, '\n', size);
  if (nl != NULL && nl > data && data[0] == '/' && memchr(data, 0, (size_t)(nl - data)) == NULL) {
    head_len = (size_t)(nl - data);
    rest = nl + 1;
    rest_len = size - head_len - 1;
    workdir = fuzz_strndup(data, head_len);
    listing = rest;
    listing_len = rest_len;
  } else {
    workdir = fuzz_strndup((const uint8_t *)"/workspace", 10);
    listing = data;
    listing_len = size;
  }
  uint8_t *block = fuzz_dup(listing, listing_len);
  list_entries_t out;
  memset(&out, 0xAA, sizeof(out));
  err_t err;
  err_init(&err);
  int rc = list_parse(block, listing_len, workdir, &out, &err);
  FUZZ_CHECK(rc == 0 || rc == -1, "list_parse returned %d", rc);
  FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));
  if (rc == 0) {
    FUZZ_CHECK(out.count <= listing_len, "%zu entries from %zu bytes", out.count, listing_len);
    for (size_t i = 0; i < out.count; i++) {
      const list_entry_t *e = &out.items[i];
      FUZZ_CHECK(e->path != NULL && e->path[0] != 0 && e->path[0] != '/', "entry %zu path \"%s\"", i,
                 e->path ? e->path : "(null)");
      FUZZ_CHECK(strcmp(e->path, ".") != 0 && strcmp(e->path, "..") != 0 && strncmp(e->path, "../", 3) != 0 &&
                     strstr(e->path, "/../") == NULL,
                 "entry %zu path \"%s\"", i, e->path);
      FUZZ_CHECK(utf8_valid((const uint8_t *)e->path, strlen(e->path)), "entry %zu path not UTF-8", i);
      FUZZ_CHECK(e->type >= FILE_TYPE_FILE && e->type <= FILE_TYPE_OTHER, "type %d", (int)e->type);
      FUZZ_CHECK(!e->has_size || (e->type == FILE_TYPE_FILE && e->size <= 9007199254740991ull),
                 "entry %zu size %llu for type %d", i, (unsigned long long)e->size, (int)e->type);
    }
    list_entries_free(&out);
  } else {
    FUZZ_CHECK(out.items == NULL && out.count == 0, "failed parse left entries");
  }
  err_clear(&err);

  /* The size field on its own, as Number() judges it. */
  uint64_t v = 0;
  if (js_number_size((const char *)block, listing_len, &v)) FUZZ_CHECK(v <= 9007199254740991ull, "size %llu", (unsigned long long)v);
  free(block);
  free(workdir);
  return 0;
}
