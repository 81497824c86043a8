/*
 * fuzz_pathstat.c - the X-Docker-Container-Path-Stat header (src/pathstat.c).
 *
 * Input: the header's value as the engine sends it (base64 of a JSON object), or any
 * bytes. Each run decodes the input as the header (up to its first NUL, as a C string
 * can only be) and then the base64 encoding of the whole input, so the mutations reach
 * the JSON decoding too. A decoded stat has both strings set and a known kind.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "codec/pathstat.h"

static void decode(const char *header) {
  path_stat_t st;
  memset(&st, 0xAA, sizeof(st));
  int rc = path_stat_decode(header, &st);
  FUZZ_CHECK(rc == 0 || rc == -1, "path_stat_decode returned %d", rc);
  if (rc == 0) {
    FUZZ_CHECK(st.name != NULL && st.link_target != NULL, "decoded stat without strings");
    FUZZ_CHECK(st.kind >= PS_FILE && st.kind <= PS_OTHER, "kind %d", (int)st.kind);
    FUZZ_CHECK(st.perm <= 0777, "perm %o", st.perm);
    path_stat_free(&st);
  } else {
    FUZZ_CHECK(st.name == NULL && st.link_target == NULL, "failed decode left strings behind");
  }
}

static char *b64(const uint8_t *in, size_t n) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *out = malloc((n + 2) / 3 * 4 + 1);
  if (out == NULL) abort();
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < n) v |= (uint32_t)in[i + 1] << 8;
    if (i + 2 < n) v |= in[i + 2];
    out[o++] = tab[(v >> 18) & 63];
    out[o++] = tab[(v >> 12) & 63];
    out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < n ? tab[v & 63] : '=';
  }
  out[o] = 0;
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *header = fuzz_strndup(data, size);
  decode(header);
  free(header);
  char *encoded = b64(data, size);
  decode(encoded);
  free(encoded);
  return 0;
}
