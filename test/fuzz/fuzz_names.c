/*
 * fuzz_names.c - volume names and image references (src/codec/names.c).
 *
 * Input: the whole input is the name (NULs included, as a JavaScript string may hold
 * them). Checked, differentially:
 *  - volume_name_valid agrees with Docker's pattern ^[a-zA-Z0-9][a-zA-Z0-9_.-]+$, run by
 *    the C library's POSIX regex engine;
 *  - image_reference_valid agrees with distribution/reference's ReferenceRegexp written
 *    as a POSIX extended regex, plus the 255-byte bound on the name as the engine
 *    normalizes it (computed here by building the normalized name);
 *  - neither accepts a name holding "%", "?", "#", a NUL, or a "." or ".." segment (so
 *    no accepted name can turn a request into another once escaped).
 */
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/names.h"
#include "fuzz_common.h"

#define PC "[a-z0-9]+(([._]|__|[-]+)[a-z0-9]+)*"
#define DC "([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
#define HOST "(" DC "(\\." DC ")*|\\[[a-fA-F0-9:]+\\])"
#define NAME "((" HOST "(:[0-9]+)?/)?" PC "(/" PC ")*)"
#define TAG "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
#define DIGEST "[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"

static regex_t volume_re, reference_re;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  if (regcomp(&volume_re, "^[a-zA-Z0-9][a-zA-Z0-9_.-]+$", REG_EXTENDED | REG_NOSUB) != 0) abort();
  if (regcomp(&reference_re, "^" NAME "(:" TAG ")?(@" DIGEST ")?$", REG_EXTENDED) != 0) abort();
  return 0;
}

/* splitDockerDomain, by building the normalized name. */
static size_t normalized_length(const char *name, size_t len) {
  char *s = fuzz_strndup((const uint8_t *)name, len);
  const char *slash = strchr(s, '/');
  char *domain, *rest;
  int is_domain = 0;
  if (slash) {
    size_t first = (size_t)(slash - s);
    char head[first + 1];
    memcpy(head, s, first);
    head[first] = 0;
    int lower = 1;
    for (size_t i = 0; i < first; i++)
      if (head[i] >= 'A' && head[i] <= 'Z') lower = 0;
    is_domain = strpbrk(head, ".:") != NULL || strcmp(head, "localhost") == 0 || !lower;
  }
  if (is_domain) {
    domain = strndup(s, (size_t)(slash - s));
    rest = strdup(slash + 1);
  } else {
    domain = strdup("docker.io");
    rest = strdup(s);
  }
  if (strcmp(domain, "index.docker.io") == 0) {
    free(domain);
    domain = strdup("docker.io");
  }
  size_t n = strlen(domain) + 1 + strlen(rest);
  if (strcmp(domain, "docker.io") == 0 && strchr(rest, '/') == NULL) n += strlen("library/");
  free(domain);
  free(rest);
  free(s);
  return n;
}

static int has_dot_segment(const char *s, size_t len) {
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i == len || s[i] == '/') {
      size_t n = i - start;
      if ((n == 1 && s[start] == '.') || (n == 2 && s[start] == '.' && s[start + 1] == '.')) return 1;
      start = i + 1;
    }
  }
  return 0;
}

static void check_safe(const char *what, const uint8_t *data, size_t size) {
  FUZZ_CHECK(memchr(data, 0, size) == NULL, "%s accepted with a NUL", what);
  FUZZ_CHECK(memchr(data, '%', size) == NULL && memchr(data, '?', size) == NULL && memchr(data, '#', size) == NULL,
             "%s accepted with %%, ? or #", what);
  FUZZ_CHECK(!has_dot_segment((const char *)data, size), "%s accepted with a . or .. segment", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = (char *)fuzz_dup(data, size);
  int volume = volume_name_valid(copy, size);
  int image = image_reference_valid(copy, size);
  free(copy);

  char *s = fuzz_strndup(data, size);
  int has_nul = size > 0 && memchr(data, 0, size) != NULL;

  int volume_expected = !has_nul && regexec(&volume_re, s, 0, NULL, 0) == 0;
  FUZZ_CHECK(volume == volume_expected, "volume_name_valid(\"%s\") = %d, the pattern says %d", s, volume, volume_expected);

  regmatch_t m[2];
  int image_expected = !has_nul && regexec(&reference_re, s, 2, m, 0) == 0;
  if (image_expected) image_expected = normalized_length(s + m[1].rm_so, (size_t)(m[1].rm_eo - m[1].rm_so)) <= IMAGE_NAME_MAX;
  FUZZ_CHECK(image == image_expected, "image_reference_valid(\"%s\") = %d, the grammar says %d", s, image, image_expected);

  if (volume) check_safe("volume name", data, size);
  if (image) check_safe("image reference", data, size);
  free(s);
  return 0;
}
