/*
 * findparse.c - the directory listing printed inside the container, parsed as the
 * original's listFiles/parseFindEntry parses it (see findparse.h).
 *
 * Owns: the entries array and each entry's path while parsing; on success both pass to
 * the caller's list_entries_t (list_entries_free), on failure they are freed here.
 *
 * The original printed one line per entry ("<path>\t<type>\t<size>\n") and decoded the
 * whole output strictly, so one name that was not UTF-8 broke the listing of its directory
 * and a name with a newline or tab could fake entries. Here every field ends with a NUL
 * (no name can hold one) and each name is decoded on its own, its ill-formed bytes
 * replaced with U+FFFD (TextDecoder without fatal, BOM kept). The rest is the original's
 * parseFindEntry:
 *   path = normalizeSandboxPath(path.posix.relative(workdir, absolutePath))
 *   size = Number(rawSize), kept for files when a safe integer >= 0
 */
#include "codec/findparse.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "codec/paths.h"
#include "codec/textpage.h"

#define MAX_SAFE_INTEGER 9007199254740991ULL

const char *file_type_name(file_type_t t) {
  switch (t) {
    case FILE_TYPE_FILE:
      return "file";
    case FILE_TYPE_DIRECTORY:
      return "directory";
    case FILE_TYPE_SYMLINK:
      return "symlink";
    default:
      return "other";
  }
}

static int field_is(const char *s, size_t len, const char *word) {
  size_t n = strlen(word);
  return len == n && memcmp(s, word, n) == 0;
}

/* mapFindType, plus the words of stat's %F for images without GNU find. */
static file_type_t map_type(const char *s, size_t len) {
  if (field_is(s, len, "f") || field_is(s, len, "regular file") || field_is(s, len, "regular empty file"))
    return FILE_TYPE_FILE;
  if (field_is(s, len, "d") || field_is(s, len, "directory")) return FILE_TYPE_DIRECTORY;
  if (field_is(s, len, "l") || field_is(s, len, "symbolic link")) return FILE_TYPE_SYMLINK;
  return FILE_TYPE_OTHER;
}

/*
 * Byte length of the JavaScript StrWhiteSpaceChar (WhiteSpace or LineTerminator) that
 * starts at s[0..n), or 0: TAB LF VT FF CR SP, U+00A0, U+1680, U+2000-U+200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000, U+FEFF.
 */
static size_t ws_at(const unsigned char *s, size_t n) {
  if (n >= 1 && ((s[0] >= 0x09 && s[0] <= 0x0D) || s[0] == 0x20)) return 1;
  if (n >= 2 && s[0] == 0xC2 && s[1] == 0xA0) return 2;
  if (n < 3) return 0;
  if (s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80) return 3;
  if (s[0] == 0xE2 && s[1] == 0x80 && ((s[2] >= 0x80 && s[2] <= 0x8A) || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))
    return 3;
  if (s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) return 3;
  if (s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80) return 3;
  if (s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF) return 3;
  return 0;
}

/* Byte length of the whitespace character that ends s[0..n), or 0. */
static size_t ws_before(const unsigned char *s, size_t n) {
  for (size_t k = 1; k <= 3 && k <= n; k++)
    if (ws_at(s + n - k, k) == k) return k;
  return 0;
}

static int digit_value(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

static size_t digits_run(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  return i;
}

/* Judges a double the way `Number.isSafeInteger(x) && x >= 0` does. */
static int safe_nonnegative(double x, uint64_t *out) {
  if (!(x >= 0 && x <= (double)MAX_SAFE_INTEGER)) return 0; /* NaN fails too; -0 passes */
  uint64_t u = (uint64_t)x;
  if ((double)u != x) return 0;
  *out = u;
  return 1;
}

int js_number_size(const char *raw, size_t len, uint64_t *out) {
  const unsigned char *s = (const unsigned char *)raw;
  size_t n = len, k;
  while ((k = ws_at(s, n)) > 0) {
    s += k;
    n -= k;
  }
  while ((k = ws_before(s, n)) > 0) n -= k;
  if (n == 0) {
    *out = 0; /* Number("") === 0 */
    return 1;
  }

  /* NonDecimalIntegerLiteral: 0x / 0o / 0b and at least one digit, no sign. */
  unsigned char prefix = n >= 2 && s[0] == '0' ? (unsigned char)(s[1] | 0x20) : 0;
  if (prefix == 'x' || prefix == 'o' || prefix == 'b') {
    int radix = prefix == 'x' ? 16 : prefix == 'o' ? 8 : 2;
    if (n == 2) return 0;
    uint64_t v = 0;
    int too_big = 0;
    for (size_t i = 2; i < n; i++) {
      int d = digit_value(s[i]);
      if (d >= radix) return 0;
      if (!too_big) {
        v = v * (uint64_t)radix + (uint64_t)d;
        if (v > MAX_SAFE_INTEGER) too_big = 1; /* rounds to >= 2^53: not safe */
      }
    }
    if (too_big) return 0;
    *out = v;
    return 1;
  }

  /* StrDecimalLiteral: [+-] (Infinity | digits [. digits] | . digits) [e [+-] digits] */
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') i++;
  if (n - i == 8 && memcmp(s + i, "Infinity", 8) == 0) return 0;
  size_t int_digits = digits_run(s + i, n - i);
  i += int_digits;
  size_t frac_digits = 0;
  if (i < n && s[i] == '.') {
    i++;
    frac_digits = digits_run(s + i, n - i);
    i += frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t exp_digits = digits_run(s + i, n - i);
    if (exp_digits == 0) return 0;
    i += exp_digits;
  }
  if (i != n) return 0;

  /*
   * A well-formed decimal literal in ASCII: strtod rounds it correctly, as JavaScript
   * does. The C locale keeps '.' the decimal point whatever the process's locale is.
   */
  char small[64];
  char *buf = n < sizeof(small) ? small : malloc(n + 1);
  if (buf == NULL) return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  int ok = 0;
  locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (c_locale != (locale_t)0) {
    ok = safe_nonnegative(strtod_l(buf, NULL, c_locale), out);
    freelocale(c_locale);
  }
  if (buf != small) free(buf);
  return ok;
}

void list_entries_free(list_entries_t *e) {
  if (e == NULL) return;
  for (size_t i = 0; i < e->count; i++) free(e->items[i].path);
  free(e->items);
  e->items = NULL;
  e->count = 0;
}

/* One record's fields into `entry`; -1 with err set. */
static int parse_record(const char *type, size_t type_len, const char *size, size_t size_len, const uint8_t *path,
                        size_t path_len, const char *workdir, size_t workdir_len, list_entry_t *entry, err_t *err) {
  buf_t name;
  buf_init(&name, 0);
  if (utf8_decode_lossy(path, path_len, &name) != 0) return err_oom(err);
  size_t rel_len = 0;
  char *relative = posix_relative_n(workdir, workdir_len, name.data ? (const char *)name.data : "", name.len, &rel_len);
  buf_free(&name);
  if (relative == NULL) return err_oom(err);
  entry->type = map_type(type, type_len);
  uint64_t n = 0;
  entry->has_size = 0;
  entry->size = 0;
  if (entry->type == FILE_TYPE_FILE && js_number_size(size, size_len, &n)) {
    entry->has_size = 1;
    entry->size = n;
  }
  entry->path = paths_normalize(relative, rel_len, 0, err);
  free(relative);
  return entry->path ? 0 : -1;
}

int list_parse(const uint8_t *data, size_t len, const char *workdir, list_entries_t *out, err_t *err) {
  list_entries_t got = {NULL, 0};
  out->items = NULL;
  out->count = 0;
  /* Fields end with NUL; three make a record. A cut record is invalid metadata. */
  size_t fields = 0;
  for (const uint8_t *p = data, *end = data + len; p < end;) {
    const uint8_t *nul = memchr(p, 0, (size_t)(end - p));
    if (nul == NULL) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid file metadata.");
    fields++;
    p = nul + 1;
  }
  if (fields % 3 != 0) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid file metadata.");
  if (fields > 0) {
    got.items = calloc(fields / 3, sizeof(*got.items));
    if (got.items == NULL) return err_oom(err);
  }
  size_t workdir_len = strlen(workdir);
  const char *p = (const char *)data;
  for (size_t r = 0; r < fields / 3; r++) {
    const char *type = p;
    size_t type_len = strlen(type); /* each field ends with a NUL (checked above) */
    const char *size = type + type_len + 1;
    size_t size_len = strlen(size);
    const char *path = size + size_len + 1;
    size_t path_len = strlen(path);
    p = path + path_len + 1;
    if (parse_record(type, type_len, size, size_len, (const uint8_t *)path, path_len, workdir, workdir_len,
                     &got.items[got.count], err) < 0)
      goto fail;
    got.count++;
  }
  *out = got;
  return 0;
fail:
  list_entries_free(&got);
  return -1;
}
