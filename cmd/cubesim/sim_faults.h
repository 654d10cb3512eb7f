/*
 * sim_faults.h - cubesim's fault injection: the spec grammar and a seeded
 * PRNG, so that the same seed and the same sequence of requests give the
 * same faults.
 *
 *   spec     := rule { "," rule }            (empty spec: no faults)
 *   rule     := op ":" effect { "+" modifier }
 *   op       := "*" | create | list | get | delete | pause | resume
 *             | connect | timeout | refresh | traffic
 *   effect   := "error=" P "@" STATUS        an error reply instead of the call
 *             | "latency=" DUR [ "~" DUR ]   added delay, with +- jitter
 *             | "reset=" P                   do the call, cut the reply mid-way
 *             | "truncate=" P                list: drop each row with P
 *             | "droplabels=" P              pause: the metadata is lost with P
 *             | "capacity=" N                create: at most N live sandboxes
 *   modifier := "retry=" SECONDS             error: send Retry-After
 *   P        := a decimal in [0, 1];  DUR := NUMBER [ "ms" | "s" ] (ms default)
 *   STATUS   := 400..599 (503 always carries Retry-After, default 1)
 *
 * "*" matches every public API operation (not traffic, not /health).
 *
 * Ownership: sim_faults is opaque; sim_faults_free() frees it (NULL ok).
 * sim_faults_spec() points into the object.
 */
#ifndef SIM_FAULTS_H
#define SIM_FAULTS_H

#include <stddef.h>
#include <stdint.h>
#include "lib/sc_err.h"

typedef enum sim_op {
  SIM_OP_NONE = 0,
  SIM_OP_CREATE,
  SIM_OP_LIST,
  SIM_OP_GET,
  SIM_OP_DELETE,
  SIM_OP_PAUSE,
  SIM_OP_RESUME,
  SIM_OP_CONNECT,
  SIM_OP_TIMEOUT,
  SIM_OP_REFRESH,
  SIM_OP_TRAFFIC,
  SIM_OP__COUNT
} sim_op;

/* The name used in specs and audit lines ("create"); "" for NONE. */
const char *sim_op_name(sim_op op);

typedef struct sim_faults sim_faults;

/* The outcome of rolling the dice for one request. */
typedef struct sim_fault_plan {
  int error_status;    /* 0: no error fault */
  int retry_after;     /* seconds; 0: no Retry-After header */
  int64_t latency_ms;  /* real milliseconds to delay the reply */
  int reset;           /* cut the connection mid-reply */
  double truncate;     /* list: probability to drop each row */
  int64_t capacity;    /* create: live-sandbox limit, -1 none */
} sim_fault_plan;

/* A PRNG (splitmix64) for callers that need reproducible numbers. */
typedef struct sim_rng {
  uint64_t s;
} sim_rng;
void sim_rng_seed(sim_rng *r, uint64_t seed);
uint64_t sim_rng_next(sim_rng *r);
/* Uniform in [0, 1). */
double sim_rng_double(sim_rng *r);

/* Parse spec (NULL or "" = no faults). On error, *out is NULL and eb says
 * which rule is wrong and why. */
sc_err sim_faults_parse(const char *spec, uint64_t seed, sim_faults **out,
                        sc_errbuf *eb);
void sim_faults_free(sim_faults *f);
const char *sim_faults_spec(const sim_faults *f);
size_t sim_faults_count(const sim_faults *f);
void sim_faults_reseed(sim_faults *f, uint64_t seed);

/* Roll for one request of operation op. f may be NULL (no faults). */
void sim_faults_plan(sim_faults *f, sim_op op, sim_fault_plan *plan);
/* Roll once for a list row under probability p: 1 = drop it. */
int sim_faults_drop_row(sim_faults *f, double p);
/* Roll the droplabels rules (pause and "*"): 1 = drop the metadata. */
int sim_faults_drop_labels(sim_faults *f);

#endif
