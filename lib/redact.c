/* redact.c - see redact.h */
#include "lib/redact.h"

#include <string.h>

void sc_redact(char *s, size_t size, const char *secret)
{
  size_t klen;
  char *p, *from = s;
  if(!secret || !(klen = strlen(secret)) || !size)
    return;
  while((p = strstr(from, secret))) {
    size_t tail = strlen(p + klen) + 1; /* with the NUL */
    size_t room = size - (size_t)(p - s);
    if(klen >= 3) { /* shrinks or stays */
      memcpy(p, "***", 3);
      memmove(p + 3, p + klen, tail);
    }
    else { /* grows by 3 - klen: keep within size */
      if(room < 3 + 1) {
        *p = '\0';
        return;
      }
      if(tail > room - 3)
        tail = room - 3;
      memmove(p + 3, p + klen, tail);
      memcpy(p, "***", 3);
      s[size - 1] = '\0';
    }
    from = p + 3;
  }
}
