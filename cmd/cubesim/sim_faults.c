/* sim_faults.c - fault spec parsing and seeded dice (see sim_faults.h). */
#include "cmd/cubesim/sim_faults.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef enum fault_kind {
  FK_ERROR,
  FK_LATENCY,
  FK_RESET,
  FK_TRUNCATE,
  FK_DROPLABELS,
  FK_CAPACITY
} fault_kind;

typedef struct fault_rule {
  sim_op op; /* SIM_OP_NONE = "*" */
  fault_kind kind;
  double p;
  int status;
  int retry;
  int64_t latency_ms;
  int64_t jitter_ms;
  int64_t capacity;
} fault_rule;

struct sim_faults {
  fault_rule *rules;
  size_t n;
  char *spec;
  sim_rng rng;
};

static const char *const op_names[SIM_OP__COUNT] = {
  "", "create", "list", "get", "delete", "pause", "resume", "connect",
  "timeout", "refresh", "traffic"
};

const char *sim_op_name(sim_op op)
{
  if(op < 0 || op >= SIM_OP__COUNT)
    return "";
  return op_names[op];
}

void sim_rng_seed(sim_rng *r, uint64_t seed)
{
  r->s = seed;
}

uint64_t sim_rng_next(sim_rng *r)
{
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double sim_rng_double(sim_rng *r)
{
  return (double)(sim_rng_next(r) >> 11) / 9007199254740992.0;
}

static int parse_prob(const char *s, double *out)
{
  char *end;
  double d;
  if(!*s || !(isdigit((unsigned char)*s) || *s == '.'))
    return -1;
  errno = 0;
  d = strtod(s, &end);
  if(errno || *end || !(d >= 0.0 && d <= 1.0))
    return -1;
  *out = d;
  return 0;
}

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
  char *end;
  long long v;
  if(!isdigit((unsigned char)*s))
    return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  if(errno || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* "20ms", "1.5s", "30" (ms) */
static int parse_dur(const char *s, int64_t *out)
{
  char *end;
  double d, mul = 1.0;
  if(!isdigit((unsigned char)*s))
    return -1;
  errno = 0;
  d = strtod(s, &end);
  if(errno)
    return -1;
  if(!strcmp(end, "ms") || !*end)
    mul = 1.0;
  else if(!strcmp(end, "s"))
    mul = 1000.0;
  else
    return -1;
  d *= mul;
  if(!(d >= 0.0 && d <= 600000.0))
    return -1;
  *out = (int64_t)(d + 0.5);
  return 0;
}

static sc_err parse_rule(char *txt, size_t idx, fault_rule *r, sc_errbuf *eb)
{
  char *colon, *eq, *val, *mods, *at, *tilde;
  const char *opname;
  size_t i;

  memset(r, 0, sizeof(*r));
  colon = strchr(txt, ':');
  if(!colon)
    return sc_errf(eb, SC_ERR_INVALID,
                   "faults: rule %zu '%s': want OP:EFFECT", idx, txt);
  *colon = '\0';
  opname = txt;
  if(!strcmp(opname, "*"))
    r->op = SIM_OP_NONE;
  else {
    for(i = 1; i < SIM_OP__COUNT; i++)
      if(!strcmp(opname, op_names[i]))
        break;
    if(i == SIM_OP__COUNT)
      return sc_errf(eb, SC_ERR_INVALID,
                     "faults: rule %zu: unknown operation '%s' (want *, create,"
                     " list, get, delete, pause, resume, connect, timeout,"
                     " refresh, traffic)", idx, opname);
    r->op = (sim_op)i;
  }
  txt = colon + 1;
  mods = strchr(txt, '+');
  if(mods)
    *mods++ = '\0';
  eq = strchr(txt, '=');
  if(!eq)
    return sc_errf(eb, SC_ERR_INVALID,
                   "faults: rule %zu '%s': want EFFECT=VALUE", idx, txt);
  *eq = '\0';
  val = eq + 1;
  if(!strcmp(txt, "error")) {
    int64_t st;
    r->kind = FK_ERROR;
    at = strchr(val, '@');
    if(!at)
      return sc_errf(eb, SC_ERR_INVALID,
                     "faults: rule %zu: error wants P@STATUS, got '%s'",
                     idx, val);
    *at = '\0';
    if(parse_prob(val, &r->p))
      return sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu: error rate '%s'"
                     " is not a number in [0,1]", idx, val);
    if(parse_int(at + 1, 400, 599, &st))
      return sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu: error status"
                     " '%s' is not in 400..599", idx, at + 1);
    r->status = (int)st;
    if(r->status == 503)
      r->retry = 1;
  }
  else if(!strcmp(txt, "latency")) {
    r->kind = FK_LATENCY;
    r->p = 1.0;
    tilde = strchr(val, '~');
    if(tilde)
      *tilde = '\0';
    if(parse_dur(val, &r->latency_ms) ||
       (tilde && parse_dur(tilde + 1, &r->jitter_ms)))
      return sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu: latency wants"
                     " DUR[~DUR] like 20ms~10ms (at most 600s)", idx);
  }
  else if(!strcmp(txt, "reset") || !strcmp(txt, "truncate") ||
          !strcmp(txt, "droplabels")) {
    r->kind = !strcmp(txt, "reset") ? FK_RESET :
              !strcmp(txt, "truncate") ? FK_TRUNCATE : FK_DROPLABELS;
    if(parse_prob(val, &r->p))
      return sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu: %s rate '%s'"
                     " is not a number in [0,1]", idx, txt, val);
  }
  else if(!strcmp(txt, "capacity")) {
    r->kind = FK_CAPACITY;
    if(parse_int(val, 0, 100000000, &r->capacity))
      return sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu: capacity '%s'"
                     " is not a count", idx, val);
  }
  else
    return sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu: unknown effect '%s'"
                   " (want error, latency, reset, truncate, droplabels,"
                   " capacity)", idx, txt);

  while(mods) {
    char *next = strchr(mods, '+');
    int64_t secs;
    if(next)
      *next++ = '\0';
    if(r->kind != FK_ERROR || strncmp(mods, "retry=", 6))
      return sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu: unknown modifier"
                     " '%s' (only error takes +retry=SECONDS)", idx, mods);
    if(parse_int(mods + 6, 0, 86400, &secs))
      return sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu: retry '%s' is not"
                     " a number of seconds", idx, mods + 6);
    r->retry = (int)secs;
    mods = next;
  }
  return SC_OK;
}

static char *trim(char *s)
{
  char *e;
  while(isspace((unsigned char)*s))
    s++;
  e = s + strlen(s);
  while(e > s && isspace((unsigned char)e[-1]))
    *--e = '\0';
  return s;
}

sc_err sim_faults_parse(const char *spec, uint64_t seed, sim_faults **out,
                        sc_errbuf *eb)
{
  sim_faults *f;
  char *copy = NULL, *p, *save = NULL;
  size_t n = 1, idx = 0;
  sc_err err = SC_OK;

  *out = NULL;
  if(!spec)
    spec = "";
  f = calloc(1, sizeof(*f));
  if(!f)
    return SC_ERR_NOMEM;
  sim_rng_seed(&f->rng, seed);
  f->spec = strdup(spec);
  copy = strdup(spec);
  for(p = copy; p && *p; p++)
    if(*p == ',')
      n++;
  f->rules = calloc(n, sizeof(*f->rules));
  if(!f->spec || !copy || !f->rules) {
    err = SC_ERR_NOMEM;
    goto out;
  }
  if(!*trim(copy))
    goto out;
  for(p = strtok_r(copy, ",", &save), idx = 1; p;
      p = strtok_r(NULL, ",", &save), idx++) {
    char *t = trim(p);
    if(!*t) {
      err = sc_errf(eb, SC_ERR_INVALID, "faults: rule %zu is empty", idx);
      goto out;
    }
    err = parse_rule(t, idx, &f->rules[f->n], eb);
    if(err)
      goto out;
    f->n++;
  }
  /* a trailing or doubled comma leaves an empty rule */
  {
    const char *q = spec;
    int seen = 0;
    for(; *q; q++) {
      if(*q == ',') {
        if(!seen) {
          err = sc_errf(eb, SC_ERR_INVALID, "faults: empty rule before ','");
          goto out;
        }
        seen = 0;
      }
      else if(!isspace((unsigned char)*q))
        seen = 1;
    }
    if(!seen && strchr(spec, ',')) {
      err = sc_errf(eb, SC_ERR_INVALID, "faults: empty rule after ','");
      goto out;
    }
  }
out:
  free(copy);
  if(err) {
    sim_faults_free(f);
    return err;
  }
  *out = f;
  return SC_OK;
}

void sim_faults_free(sim_faults *f)
{
  if(!f)
    return;
  free(f->rules);
  free(f->spec);
  free(f);
}

const char *sim_faults_spec(const sim_faults *f)
{
  return f ? f->spec : "";
}

size_t sim_faults_count(const sim_faults *f)
{
  return f ? f->n : 0;
}

void sim_faults_reseed(sim_faults *f, uint64_t seed)
{
  if(f)
    sim_rng_seed(&f->rng, seed);
}

static int matches(const fault_rule *r, sim_op op)
{
  if(r->op == SIM_OP_NONE)
    return op != SIM_OP_NONE && op != SIM_OP_TRAFFIC;
  return r->op == op;
}

void sim_faults_plan(sim_faults *f, sim_op op, sim_fault_plan *plan)
{
  size_t i;
  memset(plan, 0, sizeof(*plan));
  plan->capacity = -1;
  if(!f)
    return;
  for(i = 0; i < f->n; i++) {
    const fault_rule *r = &f->rules[i];
    if(!matches(r, op))
      continue;
    switch(r->kind) {
    case FK_ERROR:
      if(sim_rng_double(&f->rng) < r->p && !plan->error_status) {
        plan->error_status = r->status;
        plan->retry_after = r->retry;
      }
      break;
    case FK_LATENCY: {
      int64_t d = r->latency_ms;
      if(r->jitter_ms) {
        int64_t span = 2 * r->jitter_ms + 1;
        d += (int64_t)(sim_rng_next(&f->rng) % (uint64_t)span) - r->jitter_ms;
      }
      if(d > 0)
        plan->latency_ms += d;
      break;
    }
    case FK_RESET:
      if(sim_rng_double(&f->rng) < r->p)
        plan->reset = 1;
      break;
    case FK_TRUNCATE:
      if(r->p > plan->truncate)
        plan->truncate = r->p;
      break;
    case FK_CAPACITY:
      if(plan->capacity < 0 || r->capacity < plan->capacity)
        plan->capacity = r->capacity;
      break;
    case FK_DROPLABELS:
      break;
    }
  }
}

int sim_faults_drop_row(sim_faults *f, double p)
{
  if(!f || p <= 0)
    return 0;
  return sim_rng_double(&f->rng) < p;
}

int sim_faults_drop_labels(sim_faults *f)
{
  size_t i;
  int drop = 0;
  if(!f)
    return 0;
  for(i = 0; i < f->n; i++) {
    const fault_rule *r = &f->rules[i];
    if(r->kind == FK_DROPLABELS && matches(r, SIM_OP_PAUSE) &&
       sim_rng_double(&f->rng) < r->p)
      drop = 1;
  }
  return drop;
}
