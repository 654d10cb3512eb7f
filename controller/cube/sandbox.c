/* sandbox.c - the observed sandbox record. */
#include "controller/cube/sandbox.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"unknown", "running", "pausing",
                                    "paused"};

const char *cube_sb_state_name(cube_sb_state s)
{
  if((unsigned)s >= sizeof(names) / sizeof(names[0]))
    return "unknown";
  return names[s];
}

cube_sb_state cube_sb_state_parse(const char *s)
{
  size_t i;
  for(i = 1; s && i < sizeof(names) / sizeof(names[0]); i++)
    if(!strcmp(s, names[i]))
      return (cube_sb_state)i;
  return CUBE_SB_UNKNOWN;
}

void cube_sandbox_clear(cube_sandbox *sb)
{
  if(!sb)
    return;
  if(sb->block_)
    free(sb->block_); /* one block: the items and every string */
  else {
    free(sb->sandbox_id);
    free(sb->template_id);
    free(sb->domain);
    sc_kvlist_clear(&sb->metadata);
  }
  memset(sb, 0, sizeof(*sb));
}

sc_err cube_sandbox_copy(cube_sandbox *dst, const cube_sandbox *src)
{
  memset(dst, 0, sizeof(*dst));
  dst->state = src->state;
  dst->started_at = src->started_at;
  dst->end_at = src->end_at;
  if(src->sandbox_id && !(dst->sandbox_id = strdup(src->sandbox_id)))
    goto nomem;
  if(src->template_id && !(dst->template_id = strdup(src->template_id)))
    goto nomem;
  if(src->domain && !(dst->domain = strdup(src->domain)))
    goto nomem;
  if(sc_kvlist_copy(&dst->metadata, &src->metadata))
    goto nomem;
  return SC_OK;
nomem:
  cube_sandbox_clear(dst);
  return SC_ERR_NOMEM;
}
