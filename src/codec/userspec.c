/*
 * userspec.c - resolving "user[:group]" to numeric ids from the container's own
 * /etc/passwd and /etc/group text, with runc's rules (see userspec.h).
 *
 * Owns: nothing; the tables are scanned in place (lengths, no copies, no NUL needed).
 * Lines that are blank, comments or malformed (too few fields, ids that are not strict
 * decimal numbers in 0..2^32-2) are skipped, as a libc lookup would never match them.
 */
#include "codec/userspec.h"

#include <string.h>

#define ID_MAX 4294967294u /* 2^32-1 is (uid_t)-1, "no id" */

typedef struct span {
  const char *p;
  size_t n;
} span_t;

/* Strict decimal: digits only (leading zeros allowed, as the engine's own parser does). */
static int parse_id(const char *p, size_t n, uint32_t *out) {
  if (n == 0) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    v = v * 10 + (uint64_t)(p[i] - '0');
    if (v > ID_MAX) return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

/* Next line of text (without its newline, trimmed of surrounding white space). */
static int next_line(const char *text, size_t len, size_t *pos, span_t *line) {
  if (text == NULL || *pos >= len) return 0;
  const char *start = text + *pos;
  const char *nl = memchr(start, '\n', len - *pos);
  size_t n = nl ? (size_t)(nl - start) : len - *pos;
  *pos += n + (nl ? 1 : 0);
  while (n > 0 && is_space(start[0])) {
    start++;
    n--;
  }
  while (n > 0 && is_space(start[n - 1])) n--;
  line->p = start;
  line->n = n;
  return 1;
}

/* Splits a line at ':' into up to `max` fields; returns how many were found. */
static size_t split_fields(span_t line, span_t *fields, size_t max) {
  size_t count = 0;
  const char *p = line.p, *end = line.p + line.n;
  while (count < max) {
    const char *colon = memchr(p, ':', (size_t)(end - p));
    fields[count].p = p;
    fields[count].n = colon ? (size_t)(colon - p) : (size_t)(end - p);
    count++;
    if (colon == NULL) break;
    p = colon + 1;
  }
  return count;
}

static int span_eq(span_t s, const char *str, size_t n) { return s.n == n && memcmp(s.p, str, n) == 0; }

/* A usable table line: not blank, not a comment, enough fields, a name, numeric ids. */
typedef struct entry {
  span_t name;
  uint32_t id;  /* uid for passwd, gid for group */
  uint32_t gid; /* passwd only: primary group */
} entry_t;

static int parse_passwd_line(span_t line, entry_t *e) {
  span_t f[4];
  if (line.n == 0 || line.p[0] == '#') return -1;
  if (split_fields(line, f, 4) < 4 || f[0].n == 0) return -1;
  if (parse_id(f[2].p, f[2].n, &e->id) != 0 || parse_id(f[3].p, f[3].n, &e->gid) != 0) return -1;
  e->name = f[0];
  return 0;
}

static int parse_group_line(span_t line, entry_t *e) {
  span_t f[3];
  if (line.n == 0 || line.p[0] == '#') return -1;
  if (split_fields(line, f, 3) < 3 || f[0].n == 0) return -1;
  if (parse_id(f[2].p, f[2].n, &e->id) != 0) return -1;
  e->name = f[0];
  e->gid = e->id;
  return 0;
}

/*
 * First matching line: by id when by_id, else by name. Returns 1 when found.
 */
static int lookup(const char *text, size_t len, int is_passwd, int by_id, uint32_t id, const char *name,
                  size_t name_len, entry_t *found) {
  size_t pos = 0;
  span_t line;
  while (next_line(text, len, &pos, &line)) {
    entry_t e;
    if ((is_passwd ? parse_passwd_line(line, &e) : parse_group_line(line, &e)) != 0) continue;
    if (by_id ? e.id == id : span_eq(e.name, name, name_len)) {
      *found = e;
      return 1;
    }
  }
  return 0;
}

int userspec_resolve(const char *spec, const char *passwd, size_t passwd_len, const char *group,
                     size_t group_len, uint32_t *uid, uint32_t *gid, err_t *err) {
  if (spec == NULL) spec = "";
  const char *colon = strchr(spec, ':');
  const char *user = spec;
  size_t user_len = colon ? (size_t)(colon - spec) : strlen(spec);
  const char *grp = colon ? colon + 1 : "";
  size_t grp_len = strlen(grp);
  uint32_t out_uid = 0, out_gid = 0;
  entry_t e;

  /* The user: an empty name means uid 0 (whose passwd entry, if any, gives the group). */
  uint32_t num = 0;
  int numeric = user_len == 0 || parse_id(user, user_len, &num) == 0;
  if (user_len == 0) num = 0;
  if (numeric) {
    out_uid = num;
    if (lookup(passwd, passwd_len, 1, 1, num, NULL, 0, &e)) out_gid = e.gid;
  } else {
    if (!lookup(passwd, passwd_len, 1, 0, 0, user, user_len, &e))
      return err_sandbox(err, CODE_INVALID_STATE, "Sandbox user cannot be found in the image: %.*s",
                         (int)user_len, user);
    out_uid = e.id;
    out_gid = e.gid;
  }

  /* The group, when given explicitly, overrides the primary group. */
  if (grp_len > 0) {
    if (parse_id(grp, grp_len, &num) == 0) {
      out_gid = num;
    } else {
      if (!lookup(group, group_len, 0, 0, 0, grp, grp_len, &e))
        return err_sandbox(err, CODE_INVALID_STATE, "Sandbox group cannot be found in the image: %s", grp);
      out_gid = e.id;
    }
  }
  *uid = out_uid;
  *gid = out_gid;
  return 0;
}

int user_is_root(const char *user) {
  return user == NULL || user[0] == 0 || strcmp(user, "root") == 0 || strcmp(user, "0") == 0 ||
         strcmp(user, "0:0") == 0 || strcmp(user, "root:root") == 0 || strcmp(user, "root:0") == 0 ||
         strcmp(user, "0:root") == 0;
}
