/* gpulens_push: push allocator gauges from a C or C++ process to the gpulens
 * agent (gpulens serve --push), or to any Prometheus Pushgateway.
 *
 * For inference servers with their own device allocator: stage values for a
 * GPU (by UUID), then send them as the process's group. A send replaces what
 * the process sent before (Pushgateway PUT to /metrics/job/<job>/pid/<pid>);
 * the agent drops the group when the process exits. Names are the agent's
 * catalog names (gpulens catalog: gpu_allocator_*, gpu_memory_fragmentation_ratio);
 * values are in the units their names say (bytes, ratio 0..1, seconds).
 *
 *   gpulens_push *p = gpulens_push_open("http://127.0.0.1:9400", "my_server", 0);
 *   gpulens_push_gauge(p, "GPU-5c2e1b7a-...", "gpu_allocator_reserved_bytes", 8.0e9);
 *   gpulens_push_gauge(p, "GPU-5c2e1b7a-...", "gpu_memory_fragmentation_ratio", 0.31);
 *   gpulens_push_counter(p, "GPU-5c2e1b7a-...", "gpu_allocator_retries_total", 4);
 *   int status = gpulens_push_send(p, 1000);   // 200, or < 0 / >= 400 with gpulens_push_error(p)
 *   gpulens_push_close(p);
 *
 * Plain HTTP/1.1 over a socket with a deadline; no threads, no allocation
 * after open except when a staged value is new. Thread-safety: one handle is
 * used by one thread at a time; distinct handles are independent.
 */
#ifndef GPULENS_PUSH_H
#define GPULENS_PUSH_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpulens_push gpulens_push;

/* A handle pushing to `url` ("http://host:port", "host:port"; no TLS) as
 * job `job` ([A-Za-z0-9_.-], non-empty) for process `pid` (0: this process).
 * NULL when the URL or job is malformed or memory is short. */
gpulens_push *gpulens_push_open(const char *url, const char *job, long pid);

/* Optional bearer token (the agent's push.token_file); NULL clears it.
 * 0 on success, -1 when it has a character a header cannot carry. */
int gpulens_push_token(gpulens_push *p, const char *token);

/* Stages the value of `name` for GPU `gpu_uuid` (with or without "GPU-";
 * NULL or "": joined by pid on the agent), replacing a staged value of the
 * same name and GPU. 0 on success, -1 for a name that is not a Prometheus
 * metric name or a UUID with quotes, backslashes or newlines (see
 * gpulens_push_error). Counters are cumulative and should end in _total. */
int gpulens_push_gauge(gpulens_push *p, const char *gpu_uuid, const char *name, double value);
int gpulens_push_counter(gpulens_push *p, const char *gpu_uuid, const char *name, double value);

/* Forgets every staged value (the next send then empties the group). */
void gpulens_push_clear(gpulens_push *p);

/* Sends the staged values, waiting at most `timeout_ms` in all. Returns the
 * HTTP status (200: accepted; 4xx: refused, the receiver's reason in
 * gpulens_push_error) or -1 when the receiver could not be reached in time. */
int gpulens_push_send(gpulens_push *p, int timeout_ms);

/* Removes the process's group from the receiver (202), or -1. */
int gpulens_push_delete(gpulens_push *p, int timeout_ms);

/* Why the last call failed ("" after a success). Valid until the next call. */
const char *gpulens_push_error(const gpulens_push *p);

void gpulens_push_close(gpulens_push *p);

#ifdef __cplusplus
}
#endif

#endif /* GPULENS_PUSH_H */
