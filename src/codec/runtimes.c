/*
 * runtimes.c - reads a daemon's registered runtimes out of its GET /info reply (see
 * runtimes.h). Pure: bytes in, a verdict out.
 */
#include "codec/runtimes.h"

#include <jansson.h>

runtime_lookup_t runtimes_lookup(const char *reply, size_t len, const char *name, size_t name_len) {
  if (reply == NULL || len > RUNTIMES_MAX_INFO_BYTES) return RUNTIME_INVALID;
  json_error_t jerr;
  json_t *info = json_loadb(reply, len, JSON_ALLOW_NUL, &jerr);
  if (info == NULL) return json_error_code(&jerr) == json_error_out_of_memory ? RUNTIME_NOMEM : RUNTIME_INVALID;
  json_t *runtimes = json_object_get(info, "Runtimes");
  runtime_lookup_t verdict = RUNTIME_INVALID;
  if (json_is_object(runtimes)) verdict = json_object_getn(runtimes, name, name_len) ? RUNTIME_REGISTERED : RUNTIME_MISSING;
  json_decref(info);
  return verdict;
}
