/*
 * pathstat.c - decoding the engine's path stat header (see pathstat.h).
 */
#include "codec/pathstat.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STAT_HEADER 65536

/* Go's os.FileMode type bits. */
#define GO_MODE_DIR (1u << 31)
#define GO_MODE_SYMLINK (1u << 27)
#define GO_MODE_TYPE_MASK (GO_MODE_DIR | GO_MODE_SYMLINK | (1u << 26) | (1u << 25) | (1u << 24) | (1u << 21) | (1u << 19))

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

/* Standard or URL alphabet, padding optional. */
static unsigned char *b64_decode(const char *in, size_t *out_len) {
  size_t n = strlen(in);
  if (n > MAX_STAT_HEADER) return NULL;
  unsigned char *out = malloc(n / 4 * 3 + 4);
  if (out == NULL) return NULL;
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    if (in[i] == '=') break;
    int v = b64_value((unsigned char)in[i]);
    if (v < 0) {
      free(out);
      return NULL;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)(acc >> bits);
    }
  }
  *out_len = o;
  return out;
}

void path_stat_free(path_stat_t *s) {
  free(s->name);
  free(s->link_target);
  memset(s, 0, sizeof(*s));
}

int path_stat_decode(const char *header, path_stat_t *out) {
  memset(out, 0, sizeof(*out));
  size_t len = 0;
  unsigned char *raw = b64_decode(header, &len);
  if (raw == NULL) return -1;
  json_t *j = json_loadb((const char *)raw, len, 0, NULL);
  free(raw);
  json_t *name = json_object_get(j, "name");
  json_t *size = json_object_get(j, "size");
  json_t *mode = json_object_get(j, "mode");
  json_t *link = json_object_get(j, "linkTarget");
  if (!json_is_object(j) || !json_is_integer(mode) || !json_is_integer(size) || json_integer_value(size) < 0) {
    json_decref(j);
    return -1;
  }
  uint64_t m = (uint64_t)json_integer_value(mode);
  out->size = (uint64_t)json_integer_value(size);
  out->perm = (uint32_t)(m & 0777);
  if (m & GO_MODE_DIR) out->kind = PS_DIRECTORY;
  else if (m & GO_MODE_SYMLINK) out->kind = PS_SYMLINK;
  else if (m & GO_MODE_TYPE_MASK) out->kind = PS_OTHER;
  else out->kind = PS_FILE;
  out->name = strdup(json_is_string(name) ? json_string_value(name) : "");
  out->link_target = strdup(json_is_string(link) ? json_string_value(link) : "");
  json_decref(j);
  if (out->name == NULL || out->link_target == NULL) {
    path_stat_free(out);
    return -1;
  }
  return 0;
}
