/* multipart.c — the streaming multipart parser of multipart.h: a byte-at-a-
 * time state machine over the body, with a memchr fast path through part
 * data. It is not a MIME decoder: parts are handed over raw.
 *
 * Finding the delimiter. The delimiter "\r\n--" boundary holds its only CR
 * at offset 0 (bchars exclude CR and LF), so no proper suffix of a partial
 * match is a prefix of it: when a match fails, the bytes matched so far are
 * known to be data (they are the delimiter's own first bytes, so nothing is
 * kept but their count) and matching restarts at the current byte. Bytes
 * after a full match (padding, '-', CR) are kept in tail[] until the line
 * proves to be a delimiter or not. Matched bytes that were not body bytes
 * (the CRLF assumed before the first delimiter, the empty line after the
 * headers) are counted in virt and never handed out as data.
 *
 * Part data is handed out in runs: bytes of the current input that are
 * data extend span, which is flushed before anything else is emitted and
 * at the end of each mp_feed.
 */
#include <string.h>
#include <strings.h>

#include "util/multipart.h"
#include "util/alloc.h"

enum {
  S_PREAMBLE, /* before the first delimiter: matching, discarding */
  S_DATA,     /* in a part's body: matching, emitting */
  S_AFTER,    /* a delimiter was matched: what follows decides */
  S_DASH,     /* ... and one '-' */
  S_PAD,      /* ... and transport padding */
  S_CR,       /* ... and a CR: LF ends the delimiter line */
  S_HEADERS,  /* in a part's header lines */
  S_HDR_CR,   /* a CR at the start of a header line */
  S_EPILOGUE, /* after the closing delimiter */
};

#define DELIM_MAX (4 + MP_MAX_BOUNDARY) /* "\r\n--" boundary */

struct mp_parser {
  mp_callbacks cb;        /* the caller's callbacks (NULL members skipped) */
  void *arg;              /* passed to every callback */
  size_t max_hdr;         /* header bytes of one part, at most */
  size_t max_parts;       /* parts, at most (0: no limit) */
  size_t parts;           /* parts begun so far */
  int state;              /* S_* */
  int in_part;            /* 1 when the matched delimiter ends a part's body */
  int err;                /* the sticky error, or 0 */
  size_t dlen;            /* bytes of delim */
  size_t matched;         /* delimiter bytes matched so far */
  size_t virt;            /* leading matched bytes that are not body bytes */
  size_t tlen;            /* bytes in tail */
  const uint8_t *span;    /* data run in the current input not yet emitted */
  size_t span_len;        /* its length (0: none) */
  size_t hlen;            /* header bytes held in hbuf */
  size_t line;            /* bytes of the current header line so far */
  char delim[DELIM_MAX + 1];          /* "\r\n--" boundary */
  uint8_t tail[MP_MAX_PADDING + 2];   /* bytes after a full delimiter match */
  char hbuf[];            /* the current part's header lines (max_hdr bytes) */
};

static int is_bchar(int c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
  return c && strchr("'()+_,-./:=? ", c) != NULL;
}

/* 1 when b[0..n) is a valid boundary. */
static int valid_boundary(const char *b, size_t n) {
  if (n < 1 || n > MP_MAX_BOUNDARY || b[n - 1] == ' ') return 0;
  for (size_t i = 0; i < n; i++)
    if (!is_bchar((unsigned char)b[i])) return 0;
  return 1;
}

static int is_wsp(int c) { return c == ' ' || c == '\t'; }

int mp_boundary(const char *ct, char *out, size_t cap) {
  char v[MP_MAX_BOUNDARY + 1];
  if (!ct) return DV_EINVAL;
  const char *s = strchr(ct, ';');
  while (s) {
    s++;
    while (is_wsp(*s)) s++;
    const char *name = s;
    while (*s && *s != '=' && *s != ';' && !is_wsp(*s)) s++;
    size_t nl = (size_t)(s - name);
    while (is_wsp(*s)) s++;
    if (*s != '=') { /* a parameter without a value: skip it */
      s = strchr(s, ';');
      continue;
    }
    s++;
    while (is_wsp(*s)) s++;
    size_t n = 0;
    int too_long = 0;
    if (*s == '"') { /* quoted-string, with backslash escapes */
      for (s++; *s && *s != '"'; s++) {
        if (*s == '\\' && s[1]) s++;
        if (n < MP_MAX_BOUNDARY) v[n++] = *s;
        else too_long = 1;
      }
      if (*s != '"') return DV_EINVAL; /* unterminated */
      s++;
    } else {
      for (; *s && *s != ';' && !is_wsp(*s); s++) {
        if (n < MP_MAX_BOUNDARY) v[n++] = *s;
        else too_long = 1;
      }
    }
    if (nl == 8 && !strncasecmp(name, "boundary", 8)) {
      if (too_long || !valid_boundary(v, n) || cap < n + 1) return DV_EINVAL;
      memcpy(out, v, n);
      out[n] = 0;
      return 0;
    }
    s = strchr(s, ';');
  }
  return DV_EINVAL;
}

int mp_new(const char *boundary, const mp_callbacks *cb, void *arg, size_t max_header_bytes,
           size_t max_parts, mp_parser **out) {
  size_t bl = boundary ? strlen(boundary) : 0;
  if (!boundary || !valid_boundary(boundary, bl)) return DV_EINVAL;
  if (max_header_bytes > (size_t)-1 - sizeof(mp_parser)) return DV_ENOMEM;
  mp_parser *p = dv_malloc(sizeof *p + max_header_bytes);
  if (!p) return DV_ENOMEM;
  memset(p, 0, sizeof *p);
  if (cb) p->cb = *cb;
  p->arg = arg;
  p->max_hdr = max_header_bytes;
  p->max_parts = max_parts;
  p->state = S_PREAMBLE;
  memcpy(p->delim, "\r\n--", 4);
  memcpy(p->delim + 4, boundary, bl + 1);
  p->dlen = 4 + bl;
  p->matched = p->virt = 2; /* the first delimiter may open the body without its CRLF */
  *out = p;
  return 0;
}

void mp_free(mp_parser *p) { dv_free(p); }

/* ---- emitting ------------------------------------------------------------- */

static int emit(mp_parser *p, const void *b, size_t n) {
  if (!n || !p->cb.data) return 0;
  return p->cb.data(p->arg, b, n);
}

static int flush(mp_parser *p) {
  size_t n = p->span_len;
  p->span_len = 0;
  return emit(p, p->span, n);
}

/* Input bytes at[0..n) are data of the current part. */
static int keep(mp_parser *p, const uint8_t *at, size_t n) {
  if (p->span_len && p->span + p->span_len == at) {
    p->span_len += n;
    return 0;
  }
  int rc = flush(p);
  p->span = at;
  p->span_len = n;
  return rc;
}

/* A partial delimiter match failed: the k bytes matched are data. */
static int give_back(mp_parser *p, size_t k) {
  int rc = 0;
  if (p->state == S_DATA && k > p->virt) {
    rc = flush(p);
    if (!rc) rc = emit(p, p->delim + p->virt, k - p->virt);
  }
  p->matched = p->virt = 0;
  return rc;
}

/* A full delimiter match turned out not to be a delimiter line: it and the
 * tail are data, except a final CR, which may start the next delimiter. */
static int not_delim(mp_parser *p) {
  int cr = p->state == S_CR, rc = 0;
  p->state = p->in_part ? S_DATA : S_PREAMBLE;
  if (p->in_part) {
    rc = flush(p);
    if (!rc) rc = emit(p, p->delim + p->virt, p->dlen - p->virt);
    if (!rc) rc = emit(p, p->tail, p->tlen - (size_t)cr);
  }
  p->virt = p->tlen = 0;
  p->matched = (size_t)cr;
  return rc;
}

static int end_part(mp_parser *p) {
  int rc = flush(p);
  if (!rc && p->in_part && p->cb.part_end) rc = p->cb.part_end(p->arg);
  p->in_part = 0;
  p->matched = p->virt = p->tlen = 0;
  return rc;
}

/* A delimiter line ended: the next part begins. */
static int delimiter(mp_parser *p) {
  int rc = end_part(p);
  if (rc) return rc;
  if (p->max_parts && p->parts == p->max_parts) return DV_EVALUE_TOO_LARGE;
  p->parts++;
  p->state = S_HEADERS;
  p->hlen = p->line = 0;
  return p->cb.part_begin ? p->cb.part_begin(p->arg) : 0;
}

/* ---- headers -------------------------------------------------------------- */

static void trim(const char *b, size_t *s, size_t *e) {
  while (*s < *e && is_wsp(b[*s])) (*s)++;
  while (*e > *s && is_wsp(b[*e - 1])) (*e)--;
}

/* The empty line after the headers: parse hbuf (every line there ends with
 * LF) into headers, unfolding in place, and start the body. */
static int headers_end(mp_parser *p) {
  char *h = p->hbuf;
  size_t r = 0, w = 0, nl = 0, vs = 0;
  int have = 0, rc;
  while (r < p->hlen) {
    size_t e = (size_t)((char *)memchr(h + r, '\n', p->hlen - r) - h);
    size_t le = e > r && h[e - 1] == '\r' ? e - 1 : e;
    if (memchr(h + r, '\r', le - r)) return DV_EINVAL; /* a bare CR */
    if (is_wsp(h[r])) { /* folded: joined to the header before with one space */
      if (!have) return DV_EINVAL;
      size_t s = r;
      trim(h, &s, &le);
      if (s < le) {
        if (w > vs) h[w++] = ' ';
        memmove(h + w, h + s, le - s);
        w += le - s;
      }
    } else {
      if (have && p->cb.header && (rc = p->cb.header(p->arg, h, nl, h + vs, w - vs))) return rc;
      char *colon = memchr(h + r, ':', le - r);
      if (!colon || colon == h + r) return DV_EINVAL;
      nl = (size_t)(colon - (h + r));
      for (size_t i = r; i < r + nl; i++)
        if ((unsigned char)h[i] <= ' ' || h[i] == 127) return DV_EINVAL;
      size_t s = r + nl + 1;
      trim(h, &s, &le);
      memmove(h, h + r, nl);
      memmove(h + nl, h + s, le - s);
      vs = nl;
      w = nl + (le - s);
      have = 1;
    }
    r = e + 1;
  }
  if (have && p->cb.header && (rc = p->cb.header(p->arg, h, nl, h + vs, w - vs))) return rc;
  if (p->cb.headers_end && (rc = p->cb.headers_end(p->arg))) return rc;
  p->state = S_DATA;
  p->in_part = 1;
  p->matched = p->virt = 2; /* the empty line may be the next delimiter's CRLF */
  return 0;
}

/* ---- the machine ---------------------------------------------------------- */

/* One byte of input, at *at. */
static int step(mp_parser *p, const uint8_t *at) {
  uint8_t c = *at;
  int rc;
  for (;;) {
    switch (p->state) {
    case S_PREAMBLE:
    case S_DATA:
      if (c == (uint8_t)p->delim[p->matched]) {
        if (++p->matched == p->dlen) p->state = S_AFTER;
        return 0;
      }
      if (p->matched) {
        if ((rc = give_back(p, p->matched))) return rc;
        continue; /* the byte may start a delimiter */
      }
      return p->state == S_DATA ? keep(p, at, 1) : 0;
    case S_AFTER:
    case S_PAD:
      if (c == '-' && p->state == S_AFTER) {
        p->tail[p->tlen++] = c;
        p->state = S_DASH;
        return 0;
      }
      if (is_wsp(c) && p->tlen < MP_MAX_PADDING) {
        p->tail[p->tlen++] = c;
        p->state = S_PAD;
        return 0;
      }
      if (c == '\r') {
        p->tail[p->tlen++] = c;
        p->state = S_CR;
        return 0;
      }
      if (c == '\n') return delimiter(p);
      break;
    case S_DASH:
      if (c == '-') {
        if ((rc = end_part(p))) return rc;
        p->state = S_EPILOGUE;
        return 0;
      }
      break;
    case S_CR:
      if (c == '\n') return delimiter(p);
      break;
    case S_HEADERS:
      if (p->line == 0 && c == '\r') {
        p->state = S_HDR_CR;
        return 0;
      }
      if (p->line == 0 && c == '\n') return headers_end(p);
      if (c == 0) return DV_EINVAL;
      if (p->hlen == p->max_hdr) return DV_EVALUE_TOO_LARGE;
      p->hbuf[p->hlen++] = (char)c;
      p->line = c == '\n' ? 0 : p->line + 1;
      return 0;
    case S_HDR_CR:
      return c == '\n' ? headers_end(p) : DV_EINVAL;
    default: /* S_EPILOGUE */
      return 0;
    }
    /* the bytes after the delimiter match made no delimiter line */
    if ((rc = not_delim(p))) return rc;
  }
}

int mp_feed(mp_parser *p, const uint8_t *data, size_t n) {
  int rc = p->err;
  size_t i = 0;
  while (!rc && i < n) {
    if (p->state == S_EPILOGUE) break;
    if ((p->state == S_DATA || p->state == S_PREAMBLE) && p->matched == 0) {
      /* no delimiter can start before the next CR */
      const uint8_t *cr = memchr(data + i, '\r', n - i);
      size_t end = cr ? (size_t)(cr - data) : n;
      if (end > i) {
        if (p->state == S_DATA) rc = keep(p, data + i, end - i);
        i = end;
        continue;
      }
    }
    rc = step(p, data + i);
    i++;
  }
  if (!rc) rc = flush(p);
  p->span_len = 0;
  p->err = rc;
  return rc;
}

int mp_finish(mp_parser *p) {
  if (p->err) return p->err;
  return p->state == S_EPILOGUE ? 0 : DV_EINVAL;
}
