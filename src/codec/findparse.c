/*
 * findparse.c - the directory listing printed inside the container, parsed as the
 * original's listFiles/parseFindEntry parses it (see findparse.h).
 *
 * Owns: the entries array and each entry's path while parsing; on success both pass to
 * the caller's list_entries_t (list_entries_free), on failure they are freed here.
 *
 * The original, per listing:
 *   output = new TextDecoder("utf-8", { fatal: true }).decode(stdout)  (drops one BOM)
 *   output.split("\n").filter(line => line.length > 0).map(parseFindEntry)
 *   [absolutePath, rawType, rawSize] = line.split("\t")   (missing -> invalid metadata)
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

/* One line (non-empty, without its "\n") into `entry`; -1 with err set. */
static int parse_line(const char *line, size_t len, const char *workdir, size_t workdir_len, list_entry_t *entry,
                      err_t *err) {
  const char *end = line + len;
  const char *tab1 = memchr(line, '\t', len);
  const char *tab2 = tab1 ? memchr(tab1 + 1, '\t', (size_t)(end - tab1 - 1)) : NULL;
  if (tab2 == NULL) return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "Docker returned invalid file metadata.");
  const char *type = tab1 + 1, *size = tab2 + 1;
  const char *size_end = memchr(size, '\t', (size_t)(end - size));
  if (size_end == NULL) size_end = end;

  size_t rel_len = 0;
  char *relative = posix_relative_n(workdir, workdir_len, line, (size_t)(tab1 - line), &rel_len);
  if (relative == NULL) return err_oom(err);
  entry->type = map_type(type, (size_t)(tab2 - type));
  uint64_t n = 0;
  entry->has_size = 0;
  entry->size = 0;
  if (entry->type == FILE_TYPE_FILE && js_number_size(size, (size_t)(size_end - size), &n)) {
    entry->has_size = 1;
    entry->size = n;
  }
  entry->path = sandbox_path_normalize(relative, rel_len, 0, err);
  free(relative);
  return entry->path ? 0 : -1;
}

int list_parse(const uint8_t *data, size_t len, const char *workdir, list_entries_t *out, err_t *err) {
  list_entries_t got = {NULL, 0};
  out->items = NULL;
  out->count = 0;
  if (!utf8_valid(data, len)) {
    return err_set(err, ERRK_TYPE, "ERR_ENCODING_INVALID_ENCODED_DATA",
                   "The encoded data was not valid for encoding utf-8");
  }
  size_t bom = utf8_bom_len(data, len);
  const char *text = (const char *)data + bom, *end = (const char *)data + len;

  size_t lines = 0;
  for (const char *p = text; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *line_end = nl ? nl : end;
    if (line_end > p) lines++;
    if (nl == NULL) break;
    p = nl + 1;
  }
  if (lines > 0) {
    got.items = calloc(lines, sizeof(*got.items));
    if (got.items == NULL) return err_oom(err);
  }
  size_t workdir_len = strlen(workdir);
  for (const char *p = text; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *line_end = nl ? nl : end;
    if (line_end > p) {
      if (parse_line(p, (size_t)(line_end - p), workdir, workdir_len, &got.items[got.count], err) < 0) goto fail;
      got.count++;
    }
    if (nl == NULL) break;
    p = nl + 1;
  }
  *out = got;
  return 0;
fail:
  list_entries_free(&got);
  return -1;
}
