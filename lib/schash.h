/*
 * schash.h - the project's one string hash: a fixed 64-bit hash that
 * reads 8 bytes per multiply (memcpy within the string, host byte order),
 * with the length mixed in first, so "ab"+"c" differs from "a"+"bc" in a
 * pair. Used by lib/hmap.h's callers (the planner, the observation, the
 * queue, the manifest reader, cubesim).
 *
 * Fixed, not keyed: every replica hashes alike, and nothing visible
 * depends on the hash (equal hashes fall back to the strings). Where the
 * keys come from an untrusted peer (a manifest file, an HTTP client), the
 * caller mixes in a per-table seed from sc_hash_seed() so that a hostile
 * document cannot pick colliding keys in advance.
 *
 * No ownership: pure functions (sc_hash_seed reads the kernel's random
 * source, and falls back to the address of a local when it cannot).
 */
#ifndef SC_SC_HASH_H
#define SC_SC_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SC_HASH_K1 0x9e3779b97f4a7c15ULL
#define SC_HASH_K2 0xff51afd7ed558ccdULL
#define SC_HASH_K3 0xc4ceb9fe1a85ec53ULL
#define SC_HASH_INIT 0xcbf29ce484222325ULL

uint64_t sc_hash_seed(void);

/* the length, before the words */
static inline uint64_t sc_hash_len(uint64_t h, size_t n)
{
  return (h ^ (uint64_t)n) * SC_HASH_K1;
}

/* one 8-byte word (the last one zero-padded) */
static inline uint64_t sc_hash_word(uint64_t h, uint64_t w)
{
  h = (h ^ w) * SC_HASH_K1;
  return h ^ (h >> 29);
}

/* the last k (1 to 7) bytes at s as one zero-padded word, as
 * memcpy(&w, s, k) into w = 0 gives it. On little-endian hosts without a
 * call: two loads that may overlap, each within the k bytes. */
static inline uint64_t sc_hash_tail(const char *s, size_t k)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const unsigned char *u = (const unsigned char *)s;
  if(k >= 4) {
    uint32_t lo, hi;
    memcpy(&lo, s, 4);
    memcpy(&hi, s + k - 4, 4);
    return (uint64_t)lo | (uint64_t)hi << (8 * (k - 4));
  }
  return (uint64_t)u[0] | (uint64_t)u[k >> 1] << (8 * (k >> 1)) |
         (uint64_t)u[k - 1] << (8 * (k - 1));
#else
  uint64_t w = 0;
  memcpy(&w, s, k);
  return w;
#endif
}

static inline uint64_t sc_hash_strn(uint64_t h, const char *s, size_t n)
{
  size_t i;
  uint64_t w;
  h = sc_hash_len(h, n);
  for(i = 0; i + 8 <= n; i += 8) {
    memcpy(&w, s + i, 8);
    h = sc_hash_word(h, w);
  }
  if(i < n)
    h = sc_hash_word(h, sc_hash_tail(s + i, n - i));
  return h;
}

/* a murmur-style finaliser: the tables use the low bits and the top 32 */
static inline uint64_t sc_hash_fin(uint64_t h)
{
  h ^= h >> 33;
  h *= SC_HASH_K2;
  h ^= h >> 33;
  h *= SC_HASH_K3;
  h ^= h >> 33;
  return h;
}

/* a sandbox ID, a status.sandboxID */
static inline uint64_t sc_hash_id(const char *s)
{
  return sc_hash_fin(sc_hash_strn(SC_HASH_INIT, s, strlen(s)));
}

/* (tenant, sessionID) */
static inline uint64_t sc_hash_pair(const char *a, const char *b)
{
  return sc_hash_fin(sc_hash_strn(sc_hash_strn(SC_HASH_INIT, a,
                                                     strlen(a)),
                                      b, strlen(b)));
}

#endif
