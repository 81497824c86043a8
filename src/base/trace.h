/*
 * trace.h - optional timestamps for every engine request, for profiling: set
 * ANVIA_SANDBOX_TRACE=1 and each finished request and exec stream phase is printed to
 * stderr with the time since the previous event.
 *
 * Owns: the flag read once from the environment at module init (process-wide, read-only
 * afterwards).
 */
#ifndef SBX_TRACE_H
#define SBX_TRACE_H

void trace_init(void);
int trace_enabled(void);
void trace_event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
