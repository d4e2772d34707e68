/* hwire.c — the framing state machine of hwire.h, one byte at a time.
 *
 * States and what ends them:
 *
 *   START     between requests: CR/LF skipped (counted against the head),
 *             anything else begins a request line
 *   RLINE     the request line, to LF
 *   HSTART    start of a header line: CR or LF ends the head (verdict on
 *             the framing), SP/HT is obs-fold, else a name begins
 *   HNAME     a header name, to ':'
 *   HVAL      its value, to LF (kept when it is Content-Length or
 *             Transfer-Encoding)
 *   HEND      CR seen at the start of a line: LF must follow
 *   BODY      Content-Length bytes
 *   CSIZE     chunk size hex digits, then ';' (EXT), CR or LF
 *   CEXT      chunk extensions, to LF
 *   CLF       CR after a size line: LF must follow
 *   CDATA     chunk data, then CR LF (DCR, DLF)
 *   TSTART    start of a trailer line (after the last chunk): CR or LF ends
 *             the request; TLINE skips a trailer line to LF; TEND as HEND
 *
 * A CR must be followed by LF everywhere in a head; a bare CR is refused. */
#include <string.h>

#include "http/hwire.h"
#include "util/err.h"

enum { START, RLINE, RLF, HSTART, HNAME, HVAL, HVLF, HEND, BODY, CSIZE, CEXT, CLF, CDATA, DCR, DLF, TSTART, TLINE,
       TLF, TEND };

enum { K_OTHER, K_CL, K_TE };

void hwire_init(hwire *w, uint32_t head_max) {
  memset(w, 0, sizeof *w);
  w->st = START;
  w->cl = -1;
  w->head_max = head_max;
}

/* RFC 9110 tchar. */
static int tchar(uint8_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* s[0..n) equals the lower-case ASCII word, ignoring case. */
static int word_is(const char *s, const char *word, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((s[i] | 0x20) != word[i]) return 0;
  return 1;
}

static int ows(uint8_t c) { return c == ' ' || c == '\t'; }

static int hexval(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A complete Content-Length value: 1..18 digits with optional whitespace
 * around; a second one must equal the first. */
static int end_cl(hwire *w) {
  if (w->vover) return DV_EHTTP_LENGTH;
  const char *p = w->val, *e = w->val + w->vlen;
  while (p < e && ows((uint8_t)*p)) p++;
  while (e > p && ows((uint8_t)e[-1])) e--;
  if (e == p || e - p > 18) return DV_EHTTP_LENGTH;
  int64_t v = 0;
  for (; p < e; p++) {
    if (*p < '0' || *p > '9') return DV_EHTTP_LENGTH;
    v = v * 10 + (*p - '0');
  }
  if (w->cl >= 0 && w->cl != v) return DV_EHTTP_LENGTH;
  w->cl = v;
  return 0;
}

/* A complete Transfer-Encoding value: a list of codings (optional
 * whitespace, empty elements skipped, parameters after ';'). Noted, judged
 * when the head ends: only one header whose value, leading whitespace
 * stripped as libmicrohttpd strips it, is exactly "chunked". */
static void end_te(hwire *w) {
  w->te_n++;
  const char *p = w->val, *e = w->val + w->vlen;
  while (p < e && ows((uint8_t)*p)) p++;
  if (!w->vover && e - p == 7 && word_is(p, "chunked", 7)) w->te_ok = 1;
  int codings = 0, chunked_last = 0;
  while (p < e) {
    while (p < e && (ows((uint8_t)*p) || *p == ',')) p++;
    if (p == e) break;
    const char *t = p;
    while (p < e && tchar((uint8_t)*p)) p++;
    if (p == t) {
      w->te_bad = 1;
      return;
    }
    int chunked = p - t == 7 && word_is(t, "chunked", 7);
    if (!chunked) w->te_unknown = 1;
    codings++;
    chunked_last = chunked;
    while (p < e && *p != ',') p++; /* parameters, whitespace */
  }
  if (!codings || !chunked_last || w->vover) w->te_bad = 1;
}

/* The head is complete: decide how its body is framed. */
static int end_head(hwire *w) {
  w->in_head = 0;
  w->heads++;
  if (w->te_n) {
    if (w->cl >= 0) return DV_EHTTP_SMUGGLE;
    if (w->te_unknown) return DV_EHTTP_CODING;
    if (w->te_n != 1 || !w->te_ok || w->te_bad) return DV_EHTTP_TE;
    w->st = CSIZE;
    w->left = 0;
    w->hex = 0;
    w->line = 0;
    return 0;
  }
  if (w->cl > 0) {
    w->left = (uint64_t)w->cl;
    w->st = BODY;
  } else {
    w->st = START;
  }
  return 0;
}

/* A new head begins (request line or trailers keep their own count). */
static void new_head(hwire *w) {
  w->in_head = 1;
  w->head = 0;
  w->line = 0;
  w->cl = -1;
  w->te_n = w->te_ok = w->te_bad = w->te_unknown = 0;
}

static int fail(hwire *w, int rc) {
  w->err = rc;
  w->in_head = 0;
  return rc;
}

int hwire_feed(hwire *w, const uint8_t *p, size_t n) {
  if (w->err) return w->err;
  const uint8_t *e = p + n;
  while (p < e) {
    /* bodies: whole runs at once */
    if (w->st == BODY || w->st == CDATA) {
      size_t k = (size_t)(e - p);
      if (k > w->left) k = (size_t)w->left;
      p += k;
      w->left -= k;
      if (!w->left) w->st = w->st == BODY ? START : DCR;
      continue;
    }
    uint8_t c = *p++;
    int in_head = w->st <= HEND || w->st >= TSTART;
    if (in_head && w->st != START && ++w->head > w->head_max)
      return fail(w, w->st == RLINE || w->st == RLF ? DV_EHTTP_URI_LONG : DV_EHTTP_HEAD_LARGE);
    if (in_head && c == 0) return fail(w, DV_EHTTP_HEADER);
    switch (w->st) {
      case START:
        if (!w->in_head) new_head(w);
        if (++w->head > w->head_max) return fail(w, DV_EHTTP_HEAD_LARGE);
        if (c == '\r' || c == '\n') break; /* empty lines before a request line */
        w->st = RLINE;
        w->head = 1;
        break;
      case RLINE:
        if (c == '\r') w->st = RLF;
        else if (c == '\n') w->st = HSTART;
        break;
      case RLF:
      case HVLF:
        if (c != '\n') return fail(w, DV_EHTTP_HEADER);
        if (w->st == HVLF) goto end_value;
        w->st = HSTART;
        break;
      case HSTART:
        if (c == '\r') {
          w->st = HEND;
        } else if (c == '\n') {
          int rc = end_head(w);
          if (rc) return fail(w, rc);
        } else if (ows(c)) {
          return fail(w, DV_EHTTP_FOLD);
        } else if (tchar(c)) {
          w->st = HNAME;
          w->nlen = 1;
          w->name[0] = (char)(c | 0x20);
        } else {
          return fail(w, DV_EHTTP_HEADER);
        }
        break;
      case HNAME:
        if (c == ':') {
          w->kind = w->nlen == 14 && !memcmp(w->name, "content-length", 14)      ? K_CL
                    : w->nlen == 17 && !memcmp(w->name, "transfer-encoding", 17) ? K_TE
                                                                                 : K_OTHER;
          w->vlen = 0;
          w->vover = 0;
          w->st = HVAL;
        } else if (tchar(c)) {
          if (w->nlen < sizeof w->name) w->name[w->nlen] = (char)(c | 0x20);
          if (w->nlen < 255) w->nlen++;
        } else {
          return fail(w, DV_EHTTP_HEADER); /* whitespace before the colon too (RFC 9112 5.1) */
        }
        break;
      case HVAL:
        if (c == '\r') {
          w->st = HVLF;
        } else if (c == '\n') {
          goto end_value;
        } else if (w->kind != K_OTHER) {
          if (w->vlen < sizeof w->val) w->val[w->vlen++] = (char)c;
          else w->vover = 1;
        }
        break;
      end_value: {
        int rc = w->kind == K_CL ? end_cl(w) : 0;
        if (w->kind == K_TE) end_te(w);
        if (rc) return fail(w, rc);
        w->st = HSTART;
        break;
      }
      case HEND:
        if (c != '\n') return fail(w, DV_EHTTP_HEADER);
        {
          int rc = end_head(w);
          if (rc) return fail(w, rc);
        }
        break;
      case CSIZE: {
        int h = hexval(c);
        if (++w->line > HWIRE_CHUNK_LINE) return fail(w, DV_EHTTP_CHUNK_LINE);
        if (h >= 0) {
          if (++w->hex > 16) return fail(w, DV_EHTTP_CHUNK);
          w->left = w->left << 4 | (uint64_t)h;
        } else if (!w->hex) {
          return fail(w, DV_EHTTP_CHUNK);
        } else if (c == ';') {
          w->st = CEXT;
        } else if (c == '\r') {
          w->st = CLF;
        } else if (c == '\n') {
          goto size_done;
        } else {
          return fail(w, DV_EHTTP_CHUNK);
        }
        break;
      }
      case CEXT:
        if (++w->line > HWIRE_CHUNK_LINE) return fail(w, DV_EHTTP_CHUNK_LINE);
        if (c == '\r') w->st = CLF;
        else if (c == '\n') goto size_done;
        else if (c == 0) return fail(w, DV_EHTTP_CHUNK);
        break;
      case CLF:
        if (c != '\n') return fail(w, DV_EHTTP_CHUNK);
      size_done:
        if (w->left) {
          w->st = CDATA;
        } else { /* the last chunk: trailers follow */
          w->st = TSTART;
          w->in_head = 1;
          w->head = 0;
        }
        break;
      case DCR:
        if (c == '\r') w->st = DLF;
        else if (c == '\n') goto next_chunk;
        else return fail(w, DV_EHTTP_CHUNK);
        break;
      case DLF:
        if (c != '\n') return fail(w, DV_EHTTP_CHUNK);
      next_chunk:
        w->st = CSIZE;
        w->hex = 0;
        w->line = 0;
        w->left = 0;
        break;
      case TSTART:
        if (c == '\r') w->st = TEND;
        else if (c == '\n') w->st = START, w->in_head = 0;
        else if (ows(c)) return fail(w, DV_EHTTP_FOLD);
        else if (!tchar(c)) return fail(w, DV_EHTTP_HEADER);
        else w->st = TLINE;
        break;
      case TLINE:
        if (c == '\r') w->st = TLF;
        else if (c == '\n') w->st = TSTART;
        break;
      case TLF:
        if (c != '\n') return fail(w, DV_EHTTP_HEADER);
        w->st = TSTART;
        break;
      case TEND:
        if (c != '\n') return fail(w, DV_EHTTP_HEADER);
        w->st = START;
        w->in_head = 0;
        break;
      default:
        return fail(w, DV_EINTERNAL);
    }
  }
  return 0;
}

int hwire_in_body(const hwire *w) { return !w->err && w->st >= BODY && w->st <= DLF; }
