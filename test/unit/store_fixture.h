/* store_fixture.h - the unit tests' SQLite store on a scratch directory
 * (tmp_store.h): fx_open() opens the store of t with the options in o,
 * created when absent and its watch polling every 5 ms (NULL, the error
 * on stderr, when it cannot); fx_session() makes ns/name of template tmpl
 * with the defaults (the caller frees it). Header-only (static inline),
 * for test files. */
#ifndef SC_TEST_STORE_FIXTURE_H
#define SC_TEST_STORE_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "api/session.h"
#include "controller/store/store.h"
#include "test/unit/tmp_store.h"

static inline store *fx_open(const tmp *t, store_open_opts o)
{
  store *st = NULL;
  sc_errbuf eb;
  o.create = true;
  o.poll_interval_ms = 5;
  if(store_open(t->url, &o, &st, &eb)) {
    fprintf(stderr, "  store_open: %s\n", eb.msg);
    return NULL;
  }
  return st;
}

static inline session *fx_session(const char *ns, const char *name,
                                  const char *tmpl)
{
  session *s = session_new();
  s->meta.namespace_ = strdup(ns);
  s->meta.name = strdup(name);
  s->spec.template_id = strdup(tmpl);
  session_apply_defaults(s);
  return s;
}

#endif
