/*
 * progress.c - image references and the pull progress stream (see progress.h).
 */
#include "codec/progress.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int image_ref_split(const char *ref, char **repo, char **tag) {
  *repo = NULL;
  *tag = NULL;
  const char *at = strchr(ref, '@');
  size_t name_len = at ? (size_t)(at - ref) : strlen(ref);
  const char *slash = NULL;
  for (const char *p = ref; p < ref + name_len; p++)
    if (*p == '/') slash = p;
  const char *colon = NULL;
  for (const char *p = slash ? slash : ref; p < ref + name_len; p++)
    if (*p == ':') colon = p;
  size_t repo_len = colon ? (size_t)(colon - ref) : name_len;
  *repo = strndup(ref, repo_len);
  if (at) *tag = strdup(at + 1);
  else if (colon) *tag = strndup(colon + 1, name_len - repo_len - 1);
  else *tag = strdup("latest");
  if (*repo == NULL || *tag == NULL) {
    free(*repo);
    free(*tag);
    *repo = *tag = NULL;
    return -1;
  }
  return 0;
}

void progress_parser_init(progress_parser_t *p) {
  buf_init(&p->line, MAX_PROGRESS_LINE);
  p->error = NULL;
  p->overlong = 0;
}

void progress_parser_free(progress_parser_t *p) {
  buf_free(&p->line);
  free(p->error);
  p->error = NULL;
}

static void progress_line(progress_parser_t *p, const char *line, size_t len) {
  if (p->error != NULL || len == 0) return;
  json_t *j = json_loadb(line, len, 0, NULL);
  if (j == NULL) return; /* progress lines are informative; only errors matter */
  json_t *detail = json_object_get(json_object_get(j, "errorDetail"), "message");
  json_t *error = json_object_get(j, "error");
  if (json_is_string(detail)) p->error = strdup(json_string_value(detail));
  else if (json_is_string(error)) p->error = strdup(json_string_value(error));
  else if (error != NULL || json_object_get(j, "errorDetail") != NULL)
    p->error = strdup("The engine reported an error without a message.");
  json_decref(j);
}

void progress_parser_feed(progress_parser_t *p, const uint8_t *data, size_t len) {
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    if (data[i] != '\n') continue;
    if (p->line.len > 0) {
      if (buf_append(&p->line, data + start, i - start) != 0) p->overlong = 1;
      else progress_line(p, (const char *)p->line.data, p->line.len);
      buf_reset(&p->line);
    } else {
      progress_line(p, (const char *)data + start, i - start);
    }
    start = i + 1;
  }
  if (start < len && buf_append(&p->line, data + start, len - start) != 0) {
    p->overlong = 1;
    buf_reset(&p->line);
  }
}

void progress_parser_finish(progress_parser_t *p) {
  if (p->line.len > 0) progress_line(p, (const char *)p->line.data, p->line.len);
  buf_reset(&p->line);
}
