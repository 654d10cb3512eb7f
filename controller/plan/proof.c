/*
 * proof.c - the link proofs (plan.h, "link proofs": an HMAC only the
 * controller can make, written while a sandbox carries our tags and asked
 * for once Cube has dropped them) and the planner's config helpers.
 */
#include "controller/plan/plan_int.h"

#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

void plan_link_key_derive(const char *cube_api_key, const char *name,
                          unsigned char out[PLAN_LINK_KEY_LEN])
{
  static const char label[] = "session-controller link proof v1\n";
  const char *secret = cube_api_key && *cube_api_key ? cube_api_key
                       : name ? name : "";
  unsigned int n = PLAN_LINK_KEY_LEN;
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  if(!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL) ||
     !EVP_DigestUpdate(c, label, sizeof(label) - 1) ||
     !EVP_DigestUpdate(c, secret, strlen(secret)) ||
     !EVP_DigestFinal_ex(c, out, &n))
    memset(out, 0, PLAN_LINK_KEY_LEN);
  EVP_MD_CTX_free(c);
}

void plan_link_proof(const unsigned char *key, const char *uid,
                     const char *sandbox_id, char out[PLAN_PROOF_LEN + 1])
{
  static const char hexd[] = "0123456789abcdef";
  unsigned char msg[600], mac[EVP_MAX_MD_SIZE];
  unsigned int ml = 0;
  size_t ul = uid ? strlen(uid) : 0, il = sandbox_id ? strlen(sandbox_id) : 0;
  size_t i;
  if(ul > 256)
    ul = 256;
  if(il > 256)
    il = 256;
  memcpy(msg, uid ? uid : "", ul);
  msg[ul] = '\n';
  memcpy(msg + ul + 1, sandbox_id ? sandbox_id : "", il);
  if(!HMAC(EVP_sha256(), key, PLAN_LINK_KEY_LEN, msg, ul + 1 + il, mac, &ml) ||
     ml < PLAN_PROOF_LEN / 2) {
    memset(out, '0', PLAN_PROOF_LEN); /* never matches a real proof */
    out[PLAN_PROOF_LEN] = '\0';
    return;
  }
  for(i = 0; i < PLAN_PROOF_LEN / 2; i++) {
    out[2 * i] = hexd[mac[i] >> 4];
    out[2 * i + 1] = hexd[mac[i] & 15];
  }
  out[PLAN_PROOF_LEN] = '\0';
}

void plan_config_defaults(plan_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->controller_name = PLAN_DEFAULT_CONTROLLER;
  cfg->orphan_grace_ms = 10 * 60 * 1000LL;
  cfg->max_delete_fraction = 0.2;
  cfg->max_delete_floor = 2;
  cfg->brake_window_ms = 10 * 60 * 1000LL;
  cfg->reclaim_brake_fraction = 0.5;
  cfg->reclaim_brake_floor = 10;
  cfg->force = false;
  cfg->identity = NULL;
  cfg->create_intent_ttl_ms = PLAN_CREATE_INTENT_TTL_MS;
  cfg->reclaim_void_after_ms = PLAN_RECLAIM_VOID_AFTER_MS;
  cfg->reclaim_send_within_ms = PLAN_RECLAIM_SEND_WITHIN_MS;
  cfg->bind_tenant_to_namespace = true;
}

bool plan_config_owns(const plan_config *cfg, const char *managed_by)
{
  size_t i;
  const char *cname = cfg->controller_name && *cfg->controller_name
                        ? cfg->controller_name : PLAN_DEFAULT_CONTROLLER;
  if(!strcmp(managed_by, cname))
    return true;
  for(i = 0; i < cfg->n_adopted_names; i++)
    if(cfg->adopted_names[i] && !strcmp(managed_by, cfg->adopted_names[i]))
      return true;
  return false;
}

