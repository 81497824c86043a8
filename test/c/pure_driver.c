/*
 * pure_driver.c - a standalone driver for the pure modules (paths.c, textpage.c,
 * findparse.c), run under valgrind and under AddressSanitizer + UBSan (see Makefile).
 *
 * Owns: everything it allocates, freed before it returns. Fixed cases check results;
 * a seeded random loop feeds short hostile inputs to every entry point so the memory
 * checkers see the edge paths (empty inputs, NUL bytes, cuts inside characters).
 * Exit status 0 when every check passed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "codec/findparse.h"
#include "codec/paths.h"
#include "codec/textpage.h"

static int failures = 0;

static void check_str(const char *what, char *got, const char *want) {
  if (got == NULL || strcmp(got, want) != 0) {
    fprintf(stderr, "FAIL %s: got \"%s\", want \"%s\"\n", what, got ? got : "(null)", want);
    failures++;
  }
  free(got);
}

static void check_int(const char *what, long long got, long long want) {
  if (got != want) {
    fprintf(stderr, "FAIL %s: got %lld, want %lld\n", what, got, want);
    failures++;
  }
}

static void check_path_error(const char *input, size_t len, int allow_root, const char *want) {
  err_t err;
  err_init(&err);
  char *r = paths_normalize(input, len, allow_root, &err);
  if (r != NULL || err.kind != ERRK_SANDBOX || strcmp(err.code, CODE_INVALID_PATH) != 0 ||
      strcmp(err.message, want) != 0) {
    fprintf(stderr, "FAIL normalizeSandboxPath error for \"%s\": %s\n", input, err.message ? err.message : r);
    failures++;
  }
  free(r);
  err_clear(&err);
}

static void fixed_paths(void) {
  check_str("normalize ./", posix_normalize("./"), "./");
  check_str("normalize empty", posix_normalize(""), ".");
  check_str("normalize //a//b/../c/", posix_normalize("//a//b/../c/"), "/a/c/");
  check_str("normalize ../../x", posix_normalize("../../x"), "../../x");
  check_str("normalize /../x", posix_normalize("/../x"), "/x");
  check_str("join", posix_join("/workspace", "a/b"), "/workspace/a/b");
  check_str("join empty", posix_join("", ""), ".");
  check_str("dirname //a", posix_dirname("//a"), "//");
  check_str("dirname /a/b/", posix_dirname("/a/b/"), "/a");
  check_str("dirname a", posix_dirname("a"), ".");
  check_str("relative child", posix_relative("/workspace", "/workspace/a/b"), "a/b");
  check_str("relative same", posix_relative("/workspace", "/workspace/"), "");
  check_str("relative up", posix_relative("/workspace/a", "/b"), "../../b");
  check_str("relative root", posix_relative("/", "/x"), "x");
  check_int("isAbsolute", posix_is_absolute("/x"), 1);
  check_int("isAbsolute empty", posix_is_absolute(""), 0);

  err_t err;
  err_init(&err);
  check_str("sandbox a\\b", paths_normalize("a\\b", 3, 0, &err), "a/b");
  check_str("sandbox ./", paths_normalize("./", 2, 0, &err), "./");
  check_str("sandbox . root", paths_normalize(".", 1, 1, &err), ".");
  check_str("containerPath .", paths_container("/workspace/", ".", &err), "/workspace/");
  check_str("containerPath a/b", paths_container("/workspace", "a//b", &err), "/workspace/a/b");
  check_str("parent a/b", paths_parent("a/b", &err), "a");
  check_str("parent a", paths_parent("a", &err), ".");
  check_int("no error left", err.kind, ERRK_NONE);
  err_clear(&err);

  check_path_error("", 0, 1, "Sandbox path cannot be empty.");
  check_path_error("a\0b", 3, 1, "Sandbox path cannot contain null bytes.");
  check_path_error("/etc", 4, 1, "Sandbox path must be relative: /etc");
  check_path_error("\\etc", 4, 1, "Sandbox path must be relative: \\etc");
  check_path_error("a/../..", 7, 1, "Sandbox path cannot leave the workspace: a/../..");
  check_path_error("a/..", 4, 0, "Sandbox path must refer to a file or directory inside the workspace.");
}

static void fixed_text(void) {
  const uint8_t *t = (const uint8_t *)"one\ntwo\nthree";
  text_page_t p;
  text_page(t, 13, 2, 1, 100, &p);
  check_int("page content len", (long long)p.content_len, 4);
  check_int("page end", (long long)p.end_line, 2);
  check_int("page next", (long long)p.next_start_line, 3);
  check_int("page by", p.truncated_by, PAGE_TRUNC_LINES);
  text_page(t, 13, UINT64_C(9007199254740991), UINT64_C(9007199254740991), UINT64_C(9007199254740991), &p);
  check_int("page beyond", p.content_len + (size_t)p.has_end_line + (size_t)p.truncated, 0);
  const uint8_t euro[] = {'a', 0xE2, 0x82, 0xAC, '\n'};
  text_page(euro, sizeof(euro), 1, 1, 3, &p);
  check_int("cut in char", (long long)p.content_len, 1);
  check_int("cut by bytes", p.truncated_by, PAGE_TRUNC_BYTES);
  text_page(euro, 0, 1, 1, 1, &p);
  check_int("empty text", (long long)p.content_len + p.has_end_line + p.truncated, 0);

  const uint8_t bad[][4] = {{0xC0, 0x80}, {0xED, 0xA0, 0x80}, {0xF4, 0x90, 0x80, 0x80}, {0xE2, 0x82}};
  const size_t bad_len[] = {2, 3, 4, 2};
  for (size_t i = 0; i < 4; i++) check_int("utf8 invalid", utf8_valid(bad[i], bad_len[i]), 0);
  check_int("utf8 valid", utf8_valid(euro, sizeof(euro)), 1);
  check_int("bom", (long long)utf8_bom_len((const uint8_t *)"\xEF\xBB\xBFx", 4), 3);
}

static void fixed_listing(void) {
  /* NUL-separated records: type, size, path. */
  static const char out[] = "f\0" "12\0" "/workspace/a\0"
                            "directory\0" "4096\0" "/workspace/d\0"
                            "regular empty file\0" " 0 \0" "/workspace/e\0"
                            "f\0" "1\0" "/workspace/new\nline\0";
  list_entries_t e;
  err_t err;
  err_init(&err);
  int rc = list_parse((const uint8_t *)out, sizeof(out) - 1, "/workspace", &e, &err);
  check_int("listing rc", rc, 0);
  if (rc == 0) {
    check_int("listing count", (long long)e.count, 4);
    check_int("listing size", (long long)e.items[0].size, 12);
    check_int("listing dir", e.items[1].type, FILE_TYPE_DIRECTORY);
    check_int("listing dir size", e.items[1].has_size, 0);
    check_int("listing empty file", e.items[2].has_size && e.items[2].size == 0, 1);
    check_int("listing newline in a name", strcmp(e.items[3].path, "new\nline") == 0, 1);
    list_entries_free(&e);
  }
  static const char cut[] = "f\0" "1\0" "/workspace/a";
  rc = list_parse((const uint8_t *)cut, sizeof(cut) - 1, "/workspace", &e, &err);
  check_int("listing cut record", rc == -1 && strcmp(err.message, "Docker returned invalid file metadata.") == 0, 1);
  err_clear(&err);
  static const char self[] = "d\0" "0\0" "/workspace\0";
  rc = list_parse((const uint8_t *)self, sizeof(self) - 1, "/workspace", &e, &err);
  check_int("listing workdir itself", rc == -1 && strcmp(err.message, "Sandbox path cannot be empty.") == 0, 1);
  err_clear(&err);
  static const char bad[] = "f\0" "1\0" "/workspace/\xFF\0";
  rc = list_parse((const uint8_t *)bad, sizeof(bad) - 1, "/workspace", &e, &err);
  check_int("listing invalid utf8 replaced", rc == 0 && e.count == 1 && strcmp(e.items[0].path, "\xEF\xBF\xBD") == 0, 1);
  if (rc == 0) list_entries_free(&e);
  err_clear(&err);

  uint64_t n = 0;
  check_int("Number 0x1F", js_number_size("0x1F", 4, &n) && n == 31, 1);
  check_int("Number 1.5e1", js_number_size("1.5e1", 5, &n) && n == 15, 1);
  check_int("Number 1.5", js_number_size("1.5", 3, &n), 0);
  check_int("Number -1", js_number_size("-1", 2, &n), 0);
  check_int("Number 2^53", js_number_size("9007199254740992", 16, &n), 0);
}

/* xorshift64*: reproducible inputs without global state. */
static uint64_t next_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * UINT64_C(2685821657736338717);
}

static void fuzz(unsigned rounds) {
  static const char alphabet[] = "a./\\\0\t\n\xE2\x82\xAC\xF0\x9F\x98\x80 0f";
  uint64_t seed = UINT64_C(0x9E3779B97F4A7C15);
  char a[40], b[40];
  for (unsigned r = 0; r < rounds; r++) {
    size_t alen = next_rand(&seed) % sizeof(a), blen = next_rand(&seed) % sizeof(b);
    for (size_t i = 0; i < alen; i++) a[i] = alphabet[next_rand(&seed) % (sizeof(alphabet) - 1)];
    for (size_t i = 0; i < blen; i++) b[i] = alphabet[next_rand(&seed) % (sizeof(alphabet) - 1)];
    size_t n;
    free(posix_normalize_n(a, alen, &n));
    free(posix_join_n(a, alen, b, blen, &n));
    free(posix_dirname_n(a, alen, &n));
    free(posix_relative_n(a, alen, b, blen, &n));
    err_t err;
    err_init(&err);
    free(paths_normalize(a, alen, (int)(r & 1), &err));
    err_clear(&err);

    /* Exact-size heap copies, so a read past the end is caught. */
    uint8_t *t = malloc(alen ? alen : 1);
    if (t == NULL) abort();
    memcpy(t, a, alen);
    text_page_t page;
    text_page(t, alen, 1 + next_rand(&seed) % 6, 1 + next_rand(&seed) % 6, 1 + next_rand(&seed) % 12, &page);
    if (page.content < t || page.content + page.content_len > t + alen) {
      fprintf(stderr, "FAIL page out of bounds\n");
      failures++;
    }
    utf8_valid(t, alen);
    list_entries_t entries;
    if (list_parse(t, alen, "/wo", &entries, &err) == 0) list_entries_free(&entries);
    err_clear(&err);
    uint64_t size;
    js_number_size((const char *)t, alen, &size);
    free(t);
  }
}

int main(void) {
  fixed_paths();
  fixed_text();
  fixed_listing();
  fuzz(200000);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("pure_driver: all checks passed\n");
  return 0;
}
