/* hcrun: text of any bytes in the JSON document, losslessly.
 *
 * Paths, parameters and messages are bytes on POSIX, not always UTF-8, and
 * jansson refuses a string that is not (json_string returns NULL, and the
 * key silently vanishes). hcrun writes such a string as Python's
 * "surrogateescape" reading of its bytes: every byte that is not part of a
 * valid UTF-8 sequence becomes the escape \udcXX (U+DC80..U+DCFF), so
 * os.fsencode(value) in Python gives the bytes back. The code points
 * U+10FF80..U+10FFFF (private use) are always written byte by byte the same
 * way, since they carry the escaped bytes through jansson: a string becomes
 * valid UTF-8 with each such byte as U+10FF00 + byte, and the dumped
 * document turns each of those into its \udcXX escape. */
#include <stdlib.h>
#include <string.h>

#include "hcrun.h"

#define CARRIER_FIRST 0x10FF80u

/* Length of the valid UTF-8 sequence at s with its code point, or 0. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp) {
  unsigned c = s[0];
  size_t n;
  uint32_t v, min;
  if (c < 0x80) return *cp = c, 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, v = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, v = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, v = c & 0x07, min = 0x10000;
  else
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0; /* also stops at the NUL */
    v = v << 6 | (s[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  return *cp = v, n;
}

json_t *hcrun_json_str(const char *s) {
  if (!s) return json_null();
  const unsigned char *p = (const unsigned char *)s;
  size_t len = strlen(s);
  char *t = malloc(4 * len + 1), *o = t;
  if (!t) return NULL;
  while (*p) {
    uint32_t cp;
    size_t n = utf8_seq(p, &cp);
    if (n && cp < CARRIER_FIRST) {
      memcpy(o, p, n);
      o += n, p += n;
      continue;
    }
    /* an invalid byte, or each byte of a carrier code point: U+10FF00 + b */
    size_t k = n ? n : 1;
    for (size_t i = 0; i < k; i++, p++) {
      *o++ = (char)0xF4, *o++ = (char)0x8F;
      *o++ = (char)(0x80 | 0x3C | (*p >> 6));
      *o++ = (char)(0x80 | (*p & 0x3F));
    }
  }
  *o = '\0';
  json_t *j = json_string(t);
  free(t);
  return j;
}

char *hcrun_json_escape_carriers(const char *dumped) {
  size_t len = strlen(dumped);
  char *out = malloc(len * 2 + 1), *o = out;
  if (!out) return NULL;
  for (const unsigned char *p = (const unsigned char *)dumped; *p;) {
    if (p[0] == 0xF4 && p[1] == 0x8F && (p[2] == 0xBE || p[2] == 0xBF) && (p[3] & 0xC0) == 0x80) {
      unsigned b = (unsigned)((p[2] & 3) << 6 | (p[3] & 0x3F));
      static const char hex[] = "0123456789abcdef";
      memcpy(o, "\\udc", 4);
      o[4] = hex[b >> 4], o[5] = hex[b & 15];
      o += 6, p += 4;
    } else {
      *o++ = (char)*p++;
    }
  }
  *o = '\0';
  return out;
}

const char *hcrun_json_bytes(const json_t *v) {
  /* a few results alive at once: enough for one printf of several */
  static char *ring[8];
  static unsigned next;
  const char *s = json_string_value(v);
  if (!s) return NULL;
  char *b = malloc(strlen(s) + 1), *o = b;
  if (!b) return s;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    if (p[0] == 0xF4 && p[1] == 0x8F && (p[2] == 0xBE || p[2] == 0xBF) && (p[3] & 0xC0) == 0x80) {
      *o++ = (char)((p[2] & 3) << 6 | (p[3] & 0x3F));
      p += 4;
    } else {
      *o++ = (char)*p++;
    }
  }
  *o = '\0';
  free(ring[next]);
  ring[next] = b;
  next = (next + 1) % 8;
  return b;
}
