/*
 * names.c - volume names and image references by the engine's own rules (see names.h).
 *
 * Owns: nothing; no allocation.
 *
 * The reference grammar is matched piece by piece instead of by one regular expression:
 * "@" starts the digest (no other part may hold one), the last ":" after the last "/"
 * starts the tag (no part of a name after a "/" may hold one), and what is left is the
 * name, whose first component may be a domain when another follows.
 */
#include "codec/names.h"

#include <string.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || is_digit(c); }
static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_alnum(char c) { return is_alpha(c) || is_digit(c); }
static int is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int is_word(char c) { return is_alnum(c) || c == '_'; }

int volume_name_valid(const char *name, size_t len) {
  if (len < 2 || !is_alnum(name[0])) return 0;
  for (size_t i = 1; i < len; i++)
    if (!is_alnum(name[i]) && name[i] != '_' && name[i] != '.' && name[i] != '-') return 0;
  return 1;
}

/* alnum ( separator alnum )*, separator "." | "_" | "__" | "-"+ */
static int path_component_valid(const char *s, size_t len) {
  size_t i = 0;
  for (;;) {
    size_t run = i;
    while (i < len && is_lower_alnum(s[i])) i++;
    if (i == run) return 0; /* an empty alnum run: at the start, the end, or between separators */
    if (i == len) return 1;
    size_t sep = i;
    while (i < len && !is_lower_alnum(s[i])) i++;
    size_t n = i - sep;
    const char *p = s + sep;
    int ok = (n == 1 && (*p == '.' || *p == '_')) || (n == 2 && p[0] == '_' && p[1] == '_');
    if (!ok) {
      ok = 1;
      for (size_t k = 0; k < n; k++)
        if (p[k] != '-') ok = 0;
    }
    if (!ok) return 0;
  }
}

/* [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9] */
static int domain_component_valid(const char *s, size_t len) {
  if (len == 0 || !is_alnum(s[0]) || !is_alnum(s[len - 1])) return 0;
  for (size_t i = 0; i < len; i++)
    if (!is_alnum(s[i]) && s[i] != '-') return 0;
  return 1;
}

/* host [ ":" port ] */
static int domain_valid(const char *s, size_t len) {
  size_t host_end;
  if (len > 0 && s[0] == '[') {
    const char *close = memchr(s, ']', len);
    if (close == NULL) return 0;
    host_end = (size_t)(close - s) + 1;
    if (host_end == 2) return 0; /* "[]" */
    for (size_t i = 1; i + 1 < host_end; i++)
      if (!is_hex(s[i]) && s[i] != ':') return 0;
  } else {
    const char *colon = memchr(s, ':', len);
    host_end = colon ? (size_t)(colon - s) : len;
    size_t start = 0;
    for (size_t i = 0; i <= host_end; i++) {
      if (i == host_end || s[i] == '.') {
        if (!domain_component_valid(s + start, i - start)) return 0;
        start = i + 1;
      }
    }
  }
  if (host_end == len) return 1;
  if (s[host_end] != ':' || host_end + 1 == len) return 0;
  for (size_t i = host_end + 1; i < len; i++)
    if (!is_digit(s[i])) return 0;
  return 1;
}

/* path-component ( "/" path-component )* over s[0..len) */
static int remote_name_valid(const char *s, size_t len) {
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i == len || s[i] == '/') {
      if (!path_component_valid(s + start, i - start)) return 0;
      start = i + 1;
    }
  }
  return 1;
}

static int tag_valid(const char *s, size_t len) {
  if (len == 0 || len > 128 || !is_word(s[0])) return 0;
  for (size_t i = 1; i < len; i++)
    if (!is_word(s[i]) && s[i] != '.' && s[i] != '-') return 0;
  return 1;
}

static int digest_valid(const char *s, size_t len) {
  const char *colon = memchr(s, ':', len);
  if (colon == NULL) return 0;
  size_t alg = (size_t)(colon - s);
  /* [A-Za-z][A-Za-z0-9]* ( [-_+.] [A-Za-z][A-Za-z0-9]* )* */
  size_t i = 0;
  for (;;) {
    if (i >= alg || !is_alpha(s[i])) return 0;
    while (i < alg && is_alnum(s[i])) i++;
    if (i == alg) break;
    if (s[i] != '-' && s[i] != '_' && s[i] != '+' && s[i] != '.') return 0;
    i++;
  }
  size_t hex = len - alg - 1;
  if (hex < 32) return 0;
  for (size_t k = alg + 1; k < len; k++)
    if (!is_hex(s[k])) return 0;
  return 1;
}

/*
 * The length of the name as the engine normalizes it (distribution/reference's
 * splitDockerDomain): a first component that is no domain (no "." or ":", not
 * "localhost", no capital) means docker.io, a docker.io name of one component gets
 * "library/", index.docker.io is docker.io.
 */
static size_t normalized_name_length(const char *s, size_t len) {
  const char *slash = memchr(s, '/', len);
  size_t first = slash ? (size_t)(slash - s) : len;
  int is_domain = 0;
  if (slash != NULL) {
    int lower = 1;
    for (size_t i = 0; i < first; i++)
      if (s[i] >= 'A' && s[i] <= 'Z') lower = 0;
    is_domain = memchr(s, '.', first) != NULL || memchr(s, ':', first) != NULL ||
                (first == 9 && memcmp(s, "localhost", 9) == 0) || !lower;
  }
  static const char docker_io[] = "docker.io";
  size_t domain_len = sizeof(docker_io) - 1;
  const char *rest = s;
  size_t rest_len = len;
  if (is_domain) {
    domain_len = first;
    rest = s + first + 1;
    rest_len = len - first - 1;
    if (first == 15 && memcmp(s, "index.docker.io", 15) == 0) domain_len = sizeof(docker_io) - 1;
  }
  int docker_hub = !is_domain || (first == 15 && memcmp(s, "index.docker.io", 15) == 0) ||
                   (first == 9 && memcmp(s, docker_io, 9) == 0);
  size_t library = docker_hub && memchr(rest, '/', rest_len) == NULL ? sizeof("library/") - 1 : 0;
  return domain_len + 1 + library + rest_len;
}

int image_reference_valid(const char *ref, size_t len) {
  if (len == 0) return 0;
  size_t name_len = len;
  const char *at = memchr(ref, '@', len);
  if (at != NULL) {
    name_len = (size_t)(at - ref);
    if (!digest_valid(at + 1, len - name_len - 1)) return 0;
  }
  /* The tag: a ":" after the last "/" (a name's components after a "/" hold none). */
  size_t last_slash = 0;
  int has_slash = 0;
  for (size_t i = 0; i < name_len; i++)
    if (ref[i] == '/') last_slash = i, has_slash = 1;
  for (size_t i = name_len; i-- > (has_slash ? last_slash + 1 : 0);) {
    if (ref[i] == ':') {
      if (!tag_valid(ref + i + 1, name_len - i - 1)) return 0;
      name_len = i;
      break;
    }
  }
  if (name_len == 0) return 0;
  /* The name: all path components, or a domain followed by at least one. */
  const char *slash = memchr(ref, '/', name_len);
  int ok = remote_name_valid(ref, name_len);
  if (!ok && slash != NULL) {
    size_t first = (size_t)(slash - ref);
    ok = domain_valid(ref, first) && remote_name_valid(slash + 1, name_len - first - 1);
  }
  return ok && normalized_name_length(ref, name_len) <= IMAGE_NAME_MAX;
}
