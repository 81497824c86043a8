/*
 * trace.c - request timestamps on stderr (see trace.h).
 */
#include "base/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int enabled = -1;

void trace_init(void) {
  if (enabled < 0) {
    const char *v = getenv("ANVIA_SANDBOX_TRACE");
    enabled = v != NULL && v[0] != 0 && v[0] != '0';
  }
}

int trace_enabled(void) { return enabled > 0; }

void trace_event(const char *fmt, ...) {
  if (enabled <= 0) return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double now = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
  fprintf(stderr, "[anvia %12.3f ms] ", now);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
