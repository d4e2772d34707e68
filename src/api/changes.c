/* changes.c — the two streamed feeds of the CouchDB API: a database's
 * `_changes` (GET and POST /{db}/_changes) and the server's `/_db_updates`.
 *
 * Both answer in CouchDB 3.x's four shapes: `normal` and `longpoll` are one
 * JSON object ({"results":[…],"last_seq",…}) written row by row, `continuous`
 * is one JSON row per line closed by a {"last_seq",…} line, `eventsource` is
 * Server-Sent Events ("data: {row}\nid: <seq>\n\n"). The bytes follow
 * chttpd's: the opening "{\"results\":[\n", rows separated by ",\r\n", the
 * closing "\n],\n\"last_seq\":…}\n".
 *
 * A feed is an hfeed (http/http.h): the handler checks the parameters and
 * answers errors itself, then hands a heap-allocated state to hres_feed and
 * returns. From then on the server calls `lf_step`, which reads one batch of
 * rows from the store per call (a few hundred, so a 100k-row answer never
 * sits in memory) and says HF_MORE until it has caught up. Live feeds
 * (longpoll with nothing to send yet, continuous, eventsource) then wait
 * without holding a pool thread: a kv watch registered BEFORE the read fires
 * hfeed_wake from a kv thread, a timer brings the heartbeat or the timeout,
 * and the next step frees the fired watch, registers a new one and reads on
 * from the last sequence seen. The generic part (phases, waiting, framing)
 * is `lfeed`; the two feeds plug in their reads through `lf_kind`.
 *
 * Filters: _doc_ids, _selector and _design here; a design document's
 * JavaScript filter (`filter=ddoc/name`) runs through the query servers
 * (index/qs.h) in batches, see "JavaScript filters" below. Not here:
 * `filter=_view` (a view's map function as the filter), the normal feed's ETag. Included
 * documents carry their attachments' content with attachments=true
 * (api/docatt.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "index/mango.h"
#include "index/qs.h"
#include "util/alloc.h"

enum { FEED_NORMAL, FEED_LONGPOLL, FEED_CONTINUOUS, FEED_EVENTSOURCE };
enum { PH_START, PH_READ, PH_WAIT };
enum { F_NONE, F_DOC_IDS, F_SELECTOR, F_DESIGN, F_JS };

#define CH_SCRATCH_CHUNK 2048 /* a feed's arenas start small (an idle feed keeps them) */
#define CH_BATCH 500             /* changes rows examined per step */
#define DU_BATCH 500             /* _db_updates rows per step */
#define CH_MAX_WAIT 60000        /* chttpd's changes_timeout: the longest timeout or heartbeat, ms */
#define CH_PENDING_CAP 10000     /* rows counted exactly for "pending"; past it, an estimate */
#define CH_DEFAULT_LIMIT 1000000000000000LL /* #changes_args.limit: seq_interval counts down from it */
#define LF_STOP 1                /* a row callback's "enough": not an error */
#define CH_JS_BATCH 100          /* documents per call of a JavaScript filter */
#define CH_JS_REVS 20            /* _revisions ids a filter's document carries ([query_server_config] revs_limit) */

/* ---- the generic live feed ----------------------------------------------- */

typedef struct lfeed lfeed;

/* What a feed kind supplies to the generic stepper. */
typedef struct lf_kind {
  /* Read one batch after l->pos into out (rows framed with lf_row_*); set
   * l->caught_up when nothing more is there now. 0, DV_ENO_DB (the
   * database is gone: the feed ends cleanly) or another error. */
  int (*read)(lfeed *l, dv_buf *out);
  /* Register l->w (the callback is lf_watch_cb with l). */
  int (*watch)(lfeed *l);
  /* "pending" for the closing line, or NULL when the feed has none. */
  int64_t (*pending)(lfeed *l);
  /* Release the kind's own state (not l itself). */
  void (*free)(lfeed *l);
  /* The feed waits (caught up): give back what only a read needs, so an
   * idle feed costs little. May be NULL. */
  void (*idle)(lfeed *l);
} lf_kind;

struct lfeed {
  const lf_kind *k;    /* the feed kind */
  hfeed *f;            /* the server's feed (known from the first step on) */
  int feed;            /* FEED_* */
  int phase;           /* PH_* */
  int64_t limit;       /* rows to send at most, < 0: no limit */
  int64_t sent;        /* rows sent so far */
  int64_t heartbeat;   /* ms between heartbeats while idle, 0: none (then timeout applies) */
  int64_t timeout;     /* ms to wait for a change before the feed ends */
  int64_t last_sent;   /* hnow_ms() of the last row or heartbeat */
  int64_t deadline;    /* hnow_ms() at which an idle feed times out */
  kv_watch *w;         /* the registered watch, or NULL */
  store_seq pos;       /* the last sequence examined (the answer's last_seq) */
  int caught_up;       /* the last read found nothing more */
  int gone;            /* the database was deleted: pending is 0 */
  int nrows;           /* rows written into the results array (for the separator) */
  dv_buf pre;          /* rows read before the response started (a JavaScript filter's
                          first batch, so its error can still be the status) */
};

/* A watch fired (on a kv thread): only wake the feed; the step frees the
 * watch. A cancellation comes from our own kv_watch_free and wakes nobody. */
static void lf_watch_cb(void *arg, int rc) {
  lfeed *l = arg;
  if (rc != DV_ECANCELLED && l->f) hfeed_wake(l->f);
}

static int lf_live(const lfeed *l) { return l->feed != FEED_NORMAL; }

/* The JSON text of a sequence (a string) into b. */
static void put_seq(dv_buf *b, const store_seq *q) {
  char s[STORE_SEQ_STR];
  store_seq_format(q, s);
  json_escape(b, s, strlen(s));
}

/* Framing before a row's JSON. */
static void lf_row_begin(lfeed *l, dv_buf *out) {
  if (l->feed == FEED_EVENTSOURCE) buf_puts(out, "data: ");
  else if (l->feed != FEED_CONTINUOUS && l->nrows) buf_puts(out, ",\r\n");
  l->nrows++;
}

/* Framing after a row's JSON; seq is the row's "seq" (NULL: null). */
static void lf_row_end(lfeed *l, dv_buf *out, const store_seq *seq) {
  if (l->feed == FEED_EVENTSOURCE) {
    buf_puts(out, "\nid: ");
    if (seq) put_seq(out, seq);
    else buf_puts(out, "null");
    buf_puts(out, "\n\n");
  } else if (l->feed == FEED_CONTINUOUS) {
    buf_putc(out, '\n');
  }
}

/* The end of the answer; HF_DONE. */
static int lf_finish(lfeed *l, dv_buf *out) {
  if (l->feed == FEED_EVENTSOURCE) return HF_DONE;
  int64_t pending = l->k->pending && !l->gone ? l->k->pending(l) : 0;
  if (l->feed == FEED_CONTINUOUS) buf_puts(out, "{\"last_seq\":");
  else buf_puts(out, "\n],\n\"last_seq\":");
  put_seq(out, &l->pos);
  if (l->k->pending) buf_printf(out, ",\"pending\":%lld", (long long)pending);
  buf_puts(out, "}\n");
  return HF_DONE;
}

/* When the waiting feed must run again without a wake. */
static int64_t lf_due(const lfeed *l) {
  return l->heartbeat ? l->last_sent + l->heartbeat : l->deadline;
}

/* hfeed_ops.step: see the file comment. */
static int lf_step(void *arg, hfeed *f, dv_buf *out) {
  lfeed *l = arg;
  int rc;
  l->f = f;
  if (l->phase == PH_START) {
    if (l->feed == FEED_NORMAL || l->feed == FEED_LONGPOLL) buf_puts(out, "{\"results\":[\n");
    if (l->pre.len) buf_append(out, l->pre.p, l->pre.len);
    buf_free(&l->pre);
    l->phase = PH_READ;
    l->last_sent = hnow_ms();
    if (lf_live(l)) {
      rc = l->k->watch(l); /* before the first read: no change slips between */
      if (rc == DV_ENO_DB) goto gone;
      if (rc) return HF_FAIL;
    }
  } else if (l->phase == PH_WAIT) {
    int64_t now = hnow_ms();
    if (!hfeed_woken(f)) {
      if (l->heartbeat) {
        if (now >= l->last_sent + l->heartbeat) {
          buf_puts(out, l->feed == FEED_EVENTSOURCE ? "event: heartbeat\ndata: \n\n" : "\n");
          l->last_sent = now;
        }
      } else if (now >= l->deadline) {
        return lf_finish(l, out);
      }
      hfeed_timer(f, lf_due(l));
      return HF_WAIT;
    }
    /* A wake seen after the timeout passed: the timeout came first (as
     * CouchDB's receive … after); the client resumes from last_seq. */
    if (!l->heartbeat && now >= l->deadline) return lf_finish(l, out);
    kv_watch_free(l->w); /* it fired: a new one, then read what came */
    l->w = NULL;
    rc = l->k->watch(l);
    if (rc == DV_ENO_DB) goto gone;
    if (rc) return HF_FAIL;
    l->phase = PH_READ;
  }
  if (l->limit >= 0 && l->sent >= l->limit) return lf_finish(l, out);
  int64_t before = l->sent;
  rc = l->k->read(l, out);
  if (rc == DV_ENO_DB) goto gone;
  if (rc) return HF_FAIL;
  if (l->sent > before) l->last_sent = hnow_ms();
  if (l->limit >= 0 && l->sent >= l->limit) return lf_finish(l, out);
  if (!l->caught_up) return HF_MORE;
  if (l->feed == FEED_NORMAL || (l->feed == FEED_LONGPOLL && l->sent > 0)) return lf_finish(l, out);
  l->phase = PH_WAIT;
  if (l->k->idle) l->k->idle(l);
  l->deadline = hnow_ms() + l->timeout;
  hfeed_timer(f, lf_due(l));
  return HF_WAIT;

gone: /* the database was deleted under the feed: end it cleanly */
  l->gone = 1;
  return lf_finish(l, out);
}

/* hfeed_ops.done: runs once, possibly while the feed waits. */
static void lf_done(void *arg) {
  lfeed *l = arg;
  if (!l) return;
  kv_watch_free(l->w); /* cancels: our callback then wakes nobody */
  l->w = NULL;
  l->k->free(l);
  buf_free(&l->pre);
  dv_free(l);
}

static const hfeed_ops lf_ops = {lf_step, lf_done};

/* ---- parameters shared by both feeds --------------------------------------- */

/* A parameter is "true" exactly (CouchDB ignores any other value). */
static int q_true(hreq *r, const char *name) {
  const char *v = hq_get(r, name, NULL);
  return v && !strcmp(v, "true");
}

/* feed=… into *out; an unknown one is CouchDB's 400 with `msg`. */
static int q_feed(hreq *r, int live_alias, const char *msg, int *out) {
  const char *v = hq_get(r, "feed", NULL);
  if (!v || !strcmp(v, "normal")) *out = FEED_NORMAL;
  else if (!strcmp(v, "longpoll")) *out = FEED_LONGPOLL;
  else if (!strcmp(v, "continuous") || (live_alias && !strcmp(v, "live"))) *out = FEED_CONTINUOUS;
  else if (!strcmp(v, "eventsource")) *out = FEED_EVENTSOURCE;
  else {
    hres_errw(r, DV_EBAD_REQUEST, msg);
    return -1;
  }
  return 0;
}

/* A sequence as a client sends it back: "0", hex, or either in JSON quotes
 * (an eventsource id, which is the JSON of the seq). */
static int seq_parse_loose(const char *s, size_t n, store_seq *out) {
  if (n >= 2 && s[0] == '"' && s[n - 1] == '"') s++, n -= 2;
  return store_seq_parse(s, n, out);
}

/* The newest sequence of a database ("since=now"). */
static int db_now(store_db *db, store_seq *out) {
  store_db_info info;
  int rc = store_db_info_get(db, &info);
  if (!rc) *out = info.update_seq;
  return rc;
}

/* Common setup of the generic part: timeout and heartbeat (CouchDB's
 * get_changes_timeout: a heartbeat keeps the feed open for ever, both are
 * capped at changes_timeout). */
static void lf_init(lfeed *l, const lf_kind *k, int feed, int64_t limit, int64_t heartbeat, int64_t timeout) {
  l->k = k;
  l->feed = feed;
  l->phase = PH_START;
  l->limit = limit;
  l->heartbeat = heartbeat > CH_MAX_WAIT ? CH_MAX_WAIT : heartbeat;
  l->timeout = timeout < 0 || timeout > CH_MAX_WAIT ? CH_MAX_WAIT : timeout;
}

/* ---- _changes -------------------------------------------------------------- */

/* One id of a doc_ids filter. */
typedef struct ch_id {
  const char *p; /* the id's bytes (in the feed's arena) */
  size_t n;      /* their length */
} ch_id;

typedef struct chfeed {
  lfeed l;              /* the generic part (first: lf_ops cast to it) */
  store_db *db;         /* our own handle (the request's closes with it) */
  dv_arena a;           /* the filter's data, as long as the feed lives */
  dv_arena scratch;     /* per step: leaf docs and projections */
  dv_buf tmp;           /* scratch for rev strings */
  dv_buf *out;          /* during a read: where rows go */
  int style_all;        /* style=all_docs */
  int include_docs;     /* include_docs=true */
  int doc_flags;        /* STORE_CONFLICTS when conflicts=true */
  int atts;             /* attachments=true: included docs carry content */
  int descending;       /* descending=true (normal feed only) */
  int filter;           /* F_* */
  int live;             /* counted in couchdb.httpd.clients_requesting_changes until freed */
  mango_sel *sel;       /* F_SELECTOR: the parsed selector */
  const json_val *fields; /* F_SELECTOR: "fields" to keep in included docs, or NULL */
  ch_id *ids;           /* F_DOC_IDS: sorted ids */
  size_t n_ids;         /* F_DOC_IDS: how many */
  int64_t seq_interval; /* seq_interval, 0: every row carries its seq */
  int64_t seq_left;     /* CouchDB's countdown the interval is taken on */
  int64_t examined;     /* rows seen by the current read */
  int64_t examined_all; /* rows seen by the whole feed */
  int from_zero;        /* the feed started at sequence 0 */
  /* F_JS: a design document's filter function (read once, at the start) */
  qs_ddoc dd;           /* the design document (strings in a) */
  const char *js_path;  /* ["filters","name"] */
  size_t js_path_len;
  const char *js_req;   /* the request object, JSON (in a) */
  size_t js_req_len;
  struct js_row *js;    /* rows examined, waiting for the function (in scratch) */
  size_t js_n, js_cap;  /* how many, room */
  size_t js_docs;       /* documents in js_args */
  dv_buf js_args;       /* "[[doc,doc,…" being built */
  dv_arena js_a;        /* the answers of one call */
  qs_err js_err;        /* a failed call: CouchDB's error (in a) */
  int js_stop;          /* the limit was reached inside a batch */
} chfeed;

/* A row examined by a JavaScript-filtered feed, waiting for the verdict on
 * its documents (the winner, or with style=all_docs every leaf). */
typedef struct js_row {
  store_seq seq;        /* the row's sequence */
  char *id;             /* document id (scratch) */
  size_t id_len;
  int deleted;          /* winner is a tombstone */
  store_rev *revs;      /* the revs handed to the function, winner first */
  size_t n_revs;
  size_t first;         /* index of its first document in the call */
  const char *doc_json; /* include_docs: the winner as JSON text (scratch), or NULL */
  size_t doc_len;       /* its length */
} js_row;

static int id_cmp(const void *a, const void *b) {
  const ch_id *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  int c = memcmp(x->p, y->p, n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

static int ch_has_id(const chfeed *c, const char *id, size_t n) {
  ch_id key = {id, n};
  return c->n_ids && bsearch(&key, c->ids, c->n_ids, sizeof key, id_cmp) != NULL;
}

/* The value at a dotted path of a document, or NULL. */
static const json_val *path_get(const json_val *v, const char *path) {
  while (v && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    v = json_obj_get(v, path, n);
    path += n + (dot ? 1 : 0);
    if (!dot) break;
  }
  return v;
}

/* Set v at a dotted path of obj, creating the objects on the way. */
static int path_set(dv_arena *a, json_val *obj, const char *path, json_val *v) {
  for (;;) {
    const char *dot = strchr(path, '.');
    if (!dot) return json_obj_set(a, obj, path, strlen(path), v);
    size_t n = (size_t)(dot - path);
    json_val *sub = json_obj_get(obj, path, n);
    if (!sub || sub->type != JSON_OBJECT) {
      sub = json_new_object(a);
      int rc = json_obj_set(a, obj, path, n, sub);
      if (rc) return rc;
    }
    obj = sub;
    path = dot + 1;
  }
}

/* Mango's "fields": a new document with only those paths of doc. */
static json_val *project(dv_arena *a, const json_val *doc, const json_val *fields) {
  json_val *o = json_new_object(a);
  if (!o) return NULL;
  for (size_t i = 0; i < fields->len; i++) {
    const json_val *fv = fields->u.items[i];
    const json_val *v = path_get(doc, fv->u.s);
    if (v && path_set(a, o, fv->u.s, (json_val *)v)) return NULL;
  }
  return o;
}

/* The revs of a row that pass the filter, into revs[] (at most cap). */
static size_t ch_pass(chfeed *c, const store_change *ch, store_rev *revs, size_t cap) {
  size_t n = 0;
  if (c->filter == F_DOC_IDS && !ch_has_id(c, ch->id, ch->id_len)) return 0;
  if (c->filter == F_DESIGN && (ch->id_len < 7 || memcmp(ch->id, "_design", 7))) return 0;
  if (c->filter != F_SELECTOR) {
    if (!c->style_all || !ch->n_leaves) {
      revs[0] = ch->rev;
      return 1;
    }
    for (size_t i = 0; i < ch->n_leaves && n < cap; i++) revs[n++] = ch->leaves[i].rev;
    return n;
  }
  if (!c->style_all || !ch->n_leaves) {
    if (ch->doc && mango_match(c->sel, ch->doc)) revs[n++] = ch->rev;
    return n;
  }
  for (size_t i = 0; i < ch->n_leaves && n < cap; i++) {
    const store_leaf *lf = &ch->leaves[i];
    json_val *doc = NULL;
    if (i == 0 && !store_rev_cmp(&lf->rev, &ch->rev)) doc = ch->doc;
    else if (store_doc_get(c->db, ch->id, ch->id_len, &lf->rev, 0, &c->scratch, &doc)) doc = NULL;
    if (doc && mango_match(c->sel, doc)) revs[n++] = lf->rev;
  }
  return n;
}

/* Write one row: rows[0..n) are the revs that passed. doc is the included
 * document (include_docs), or NULL; doc_json instead, when set, is its
 * JSON text (a JavaScript-filtered feed keeps text, not a DOM). */
static int ch_emit(chfeed *c, const store_seq *seq, const char *id, size_t id_len, int deleted,
                   const store_rev *revs, size_t n, json_val *doc, const char *doc_json, size_t doc_len) {
  lfeed *l = &c->l;
  int show_seq = !c->seq_interval || c->seq_left % c->seq_interval == 0;
  c->seq_left--;
  dv_buf *out = c->out;
  json_w w;
  lf_row_begin(l, out);
  json_w_init(&w, out);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "seq");
  if (show_seq) {
    char s[STORE_SEQ_STR];
    store_seq_format(seq, s);
    json_w_strz(&w, s);
  } else {
    json_w_null(&w);
  }
  json_w_keyz(&w, "id");
  json_w_str(&w, id, id_len);
  json_w_keyz(&w, "changes");
  json_w_arr_begin(&w);
  for (size_t i = 0; i < n; i++) {
    buf_reset(&c->tmp);
    store_rev_format(&revs[i], &c->tmp);
    json_w_obj_begin(&w);
    json_w_keyz(&w, "rev");
    json_w_str(&w, (const char *)c->tmp.p, c->tmp.len);
    json_w_obj_end(&w);
  }
  json_w_arr_end(&w);
  if (deleted) {
    json_w_keyz(&w, "deleted");
    json_w_bool(&w, 1);
  }
  if (c->include_docs) {
    json_w_keyz(&w, "doc");
    if (doc_json) {
      json_w_raw(&w, doc_json, doc_len);
    } else {
      hatt_ro ro = {.data = c->atts};
      if (doc && ro.data) {
        int arc = hatt_doc(c->db, &c->scratch, doc, &ro, NULL, NULL);
        if (arc) return arc;
      }
      const json_val *d = doc;
      if (d && c->fields) d = project(&c->scratch, d, c->fields);
      if (d) json_w_val(&w, d);
      else json_w_null(&w);
    }
  }
  json_w_obj_end(&w);
  int rc = json_w_finish(&w);
  if (rc) return rc;
  lf_row_end(l, out, show_seq ? seq : NULL);
  l->sent++;
  return l->limit >= 0 && l->sent >= l->limit ? LF_STOP : 0;
}

static int ch_js_row(chfeed *c, const store_change *ch);

/* store_changes callback: filter, then write one row. */
static int ch_row(void *arg, const store_change *ch) {
  chfeed *c = arg;
  lfeed *l = &c->l;
  store_rev one[1], *revs = one;
  size_t cap = 1, n;
  c->examined++;
  c->examined_all++;
  if (c->filter == F_JS) return ch_js_row(c, ch); /* its position moves when the verdict comes */
  l->pos = ch->seq;
  if (c->style_all && ch->n_leaves > 1) {
    cap = ch->n_leaves;
    revs = arena_alloc(&c->scratch, cap * sizeof *revs);
    if (!revs) return DV_ENOMEM;
  }
  n = ch_pass(c, ch, revs, cap);
  if (!n) return 0;
  return ch_emit(c, &ch->seq, ch->id, ch->id_len, ch->deleted, revs, n, ch->doc, NULL, 0);
}

/* ---- JavaScript filters ------------------------------------------------------
 *
 * Rows are examined in batches: each row's documents (the winner, or every
 * leaf with style=all_docs; deleted ones too, with _revisions and
 * _conflicts, as CouchDB's filter_docs passes them) are appended to one
 * call's argument list, and every CH_JS_BATCH documents the function runs
 * once over them: ["ddoc", id, ["filters", name], [[doc…], req]] answers
 * [true, [bool…]]. Then the rows are written in order, each with the revs
 * that passed; the feed's position moves row by row, so a limit reached in
 * the middle of a batch leaves the rows after it unexamined, as CouchDB.
 * store_changes hands rows out after its transaction ended: no transaction
 * is open while JavaScript runs. */

/* doc without the members the filter's read added (_revisions always,
 * _conflicts unless the client asked): a shallow copy in a. */
static json_val *strip_meta(dv_arena *a, const json_val *doc, int keep_conflicts) {
  json_val *o = arena_alloc(a, sizeof *o);
  if (!o) return NULL;
  *o = *doc;
  o->hashed = 0;
  o->u.members = arena_alloc(a, (doc->len ? doc->len : 1) * sizeof *o->u.members);
  if (!o->u.members) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < doc->len; i++) {
    const json_member *m = &doc->u.members[i];
    if (m->klen == 10 && !memcmp(m->key, "_revisions", 10)) continue;
    if (!keep_conflicts && m->klen == 10 && !memcmp(m->key, "_conflicts", 10)) continue;
    o->u.members[k++] = *m;
  }
  o->len = o->cap = k;
  return o;
}

/* A filter's document as JSON into c->js_args: _revisions cut to CouchDB's
 * revs_limit of CH_JS_REVS ids. */
static int js_put_doc(chfeed *c, json_val *doc) {
  if (c->js_docs) buf_putc(&c->js_args, ',');
  c->js_docs++;
  if (!doc) {
    buf_puts(&c->js_args, "null");
    return 0;
  }
  json_val *rv = json_obj_getz(doc, "_revisions");
  json_val *ids = rv ? json_obj_getz(rv, "ids") : NULL;
  size_t keep = 0;
  if (ids && ids->type == JSON_ARRAY && ids->len > CH_JS_REVS) keep = ids->len, ids->len = CH_JS_REVS;
  int rc = json_write(&c->js_args, doc);
  if (keep) ids->len = keep;
  return rc;
}

static int ch_js_flush(chfeed *c);

/* A rev that outlives the store's batch: its hash bytes copied into a. */
static int rev_keep(dv_arena *a, store_rev *out, const store_rev *in) {
  *out = *in;
  if (!in->len) return 0;
  out->h = arena_memdup(a, in->h, in->len);
  return out->h ? 0 : DV_ENOMEM;
}

static int ch_js_row(chfeed *c, const store_change *ch) {
  if (c->js_n == c->js_cap) {
    size_t cap = c->js_cap ? 2 * c->js_cap : 128;
    js_row *p = arena_realloc(&c->scratch, c->js, c->js_cap * sizeof *p, cap * sizeof *p, 16);
    if (!p) return DV_ENOMEM;
    c->js = p;
    c->js_cap = cap;
  }
  js_row *x = &c->js[c->js_n];
  memset(x, 0, sizeof *x);
  x->seq = ch->seq;
  x->id = arena_memdup(&c->scratch, ch->id, ch->id_len ? ch->id_len : 1);
  x->id_len = ch->id_len;
  x->deleted = ch->deleted;
  x->first = c->js_docs;
  size_t n = c->style_all && ch->n_leaves ? ch->n_leaves : 1;
  x->revs = arena_alloc(&c->scratch, n * sizeof *x->revs);
  if (!x->id || !x->revs) return DV_ENOMEM;
  int rc = 0;
  if (n == 1 && !(c->style_all && ch->n_leaves)) {
    rc = rev_keep(&c->scratch, &x->revs[0], &ch->rev);
    if (!rc) rc = js_put_doc(c, ch->doc);
  } else {
    for (size_t i = 0; !rc && i < n; i++) {
      const store_leaf *lf = &ch->leaves[i];
      json_val *doc = NULL;
      rc = rev_keep(&c->scratch, &x->revs[i], &lf->rev);
      if (rc) break;
      if (!store_rev_cmp(&lf->rev, &ch->rev)) {
        doc = ch->doc;
      } else {
        rc = store_doc_get(c->db, ch->id, ch->id_len, &lf->rev, STORE_REVS | STORE_CONFLICTS, &c->scratch, &doc);
        if (rc == DV_ENOT_FOUND) rc = 0, doc = NULL; /* a leaf gone since the read */
      }
      if (!rc) rc = js_put_doc(c, doc);
    }
  }
  x->n_revs = n;
  if (rc) return rc;
  if (buf_error(&c->js_args)) return DV_ENOMEM;
  if (c->include_docs && ch->doc) { /* the row's doc, as JSON text: ch->doc dies with the store's batch */
    json_val *doc = ch->doc;
    hatt_ro ro = {.data = c->atts};
    if (ro.data) {
      rc = hatt_doc(c->db, &c->scratch, doc, &ro, NULL, NULL);
      if (rc) return rc;
    }
    doc = strip_meta(&c->scratch, doc, (c->doc_flags & STORE_CONFLICTS) != 0);
    if (!doc) return DV_ENOMEM;
    buf_reset(&c->tmp);
    rc = json_write(&c->tmp, doc);
    if (rc) return rc;
    x->doc_json = arena_memdup(&c->scratch, c->tmp.p, c->tmp.len ? c->tmp.len : 1);
    if (!x->doc_json) return DV_ENOMEM;
    x->doc_len = c->tmp.len;
  }
  c->js_n++;
  return c->js_docs >= CH_JS_BATCH ? ch_js_flush(c) : 0;
}

/* Run the filter over the documents collected, then write the rows that
 * passed. 0, LF_STOP (the limit was reached), DV_EQS (the function failed:
 * c->js_err says how) or another error. */
static int ch_js_flush(chfeed *c) {
  lfeed *l = &c->l;
  if (!c->js_n) return 0;
  buf_puts(&c->js_args, "],");
  buf_append(&c->js_args, c->js_req, c->js_req_len);
  buf_putc(&c->js_args, ']');
  if (buf_error(&c->js_args)) return DV_ENOMEM;
  arena_reset(&c->js_a);
  json_val *ans = NULL;
  qs_err e = {0};
  int rc = qs_ddoc_call(&c->dd, c->js_path, c->js_path_len, (const char *)c->js_args.p, c->js_args.len, &c->js_a, &ans,
                        &e);
  const json_val *res = NULL;
  if (!rc) { /* [true, [bool…]], one per document */
    res = ans && ans->type == JSON_ARRAY && ans->len == 2 ? ans->u.items[1] : NULL;
    if (!res || res->type != JSON_ARRAY || res->len != c->js_docs) {
      rc = DV_EQS;
      e.error = "os_process_error";
      e.reason = "The filter function's answer is not [true, [bool, …]] with one value per document.";
    }
  }
  if (rc && (e.error || e.reason)) { /* kept past the call's arena for the answer */
    c->js_err.error = e.error ? arena_strndup(&c->a, e.error, strlen(e.error)) : NULL;
    c->js_err.reason = e.reason ? arena_strndup(&c->a, e.reason, strlen(e.reason)) : NULL;
  }
  for (size_t k = 0; !rc && k < c->js_n; k++) {
    js_row *x = &c->js[k];
    store_rev *pass = c->js[k].revs; /* compacted in place: revs that passed */
    size_t n = 0;
    for (size_t i = 0; i < x->n_revs; i++) {
      const json_val *b = res->u.items[x->first + i];
      if (b->type == JSON_BOOL && b->b) pass[n++] = x->revs[i];
    }
    l->pos = x->seq;
    if (n) rc = ch_emit(c, &x->seq, x->id, x->id_len, x->deleted, pass, n, NULL, x->doc_json, x->doc_len);
  }
  c->js_n = 0;
  c->js_docs = 0;
  buf_reset(&c->js_args);
  buf_puts(&c->js_args, "[[");
  return rc;
}

static int ch_read(lfeed *l, dv_buf *out) {
  chfeed *c = (chfeed *)l;
  store_changes_opts o;
  memset(&o, 0, sizeof o);
  o.since = l->pos;
  o.descending = c->descending;
  o.all_docs = c->style_all;
  o.include_docs = c->include_docs || c->filter == F_SELECTOR || c->filter == F_JS;
  o.doc_flags = c->doc_flags | (c->filter == F_JS ? STORE_REVS | STORE_CONFLICTS : 0);
  if (c->descending) /* the store cannot resume a descending read: one pass */
    o.limit = c->filter == F_NONE && l->limit >= 0 ? l->limit - l->sent : -1;
  else
    o.limit = CH_BATCH;
  arena_reset(&c->scratch);
  c->out = out;
  c->examined = 0;
  if (c->filter == F_JS) {
    c->js = NULL, c->js_n = c->js_cap = c->js_docs = 0; /* they lived in scratch */
    buf_reset(&c->js_args);
    buf_puts(&c->js_args, "[[");
  }
  int rc = store_changes(c->db, &o, ch_row, c, NULL);
  if (!rc && c->filter == F_JS) rc = ch_js_flush(c); /* the batch's last documents */
  c->out = NULL;
  if (rc == LF_STOP) rc = 0;
  if (rc) return rc;
  l->caught_up = c->descending || c->examined < CH_BATCH;
  return 0;
}

static int ch_watch(lfeed *l) {
  chfeed *c = (chfeed *)l;
  return store_db_watch(c->db, lf_watch_cb, l, &l->w);
}

static int ch_count(void *arg, const store_change *ch) {
  int64_t *n = arg;
  (void)ch;
  return ++*n >= CH_PENDING_CAP ? LF_STOP : 0;
}

/* Rows after last_seq. Counted exactly up to CH_PENDING_CAP; past that, the
 * database's row count (one changes row per document) less the rows this
 * feed has seen — exact for a feed from 0, an upper bound otherwise. */
static int64_t ch_pending(lfeed *l) {
  chfeed *c = (chfeed *)l;
  store_changes_opts o;
  memset(&o, 0, sizeof o);
  o.since = l->pos;
  o.limit = -1;
  int64_t n = 0;
  int rc = store_changes(c->db, &o, ch_count, &n, NULL);
  if (rc && rc != LF_STOP) return 0;
  if (n >= CH_PENDING_CAP) {
    store_db_info info;
    if (!store_db_info_get(c->db, &info)) {
      int64_t est = info.doc_count + info.doc_del_count - c->examined_all;
      if (est > n) n = est;
    }
  }
  return n;
}

static void ch_free(lfeed *l) {
  chfeed *c = (chfeed *)l;
  if (c->live) dv_stat_move(DV_ST_HTTPD_CLIENTS_REQUESTING_CHANGES, -1);
  store_db_close(c->db);
  arena_free(&c->a);
  arena_free(&c->scratch);
  arena_free(&c->js_a);
  buf_free(&c->tmp);
  buf_free(&c->js_args);
}

static void ch_idle(lfeed *l) {
  chfeed *c = (chfeed *)l;
  arena_free(&c->scratch); /* a read's leaf docs and projections */
  arena_init(&c->scratch, CH_SCRATCH_CHUNK);
  buf_free(&c->tmp);
  buf_init(&c->tmp);
  buf_free(&c->js_args);
  buf_init(&c->js_args);
  arena_free(&c->js_a);
  arena_init(&c->js_a, CH_SCRATCH_CHUNK);
}

static const lf_kind ch_kind = {ch_read, ch_watch, ch_pending, ch_free, ch_idle};

/* doc_ids (a JSON array of strings) into the feed, sorted. */
static int ch_set_ids(hreq *r, chfeed *c, const json_val *ids) {
  static const char msg[] = "`doc_ids` filter parameter is not a list of doc ids.";
  if (!ids || ids->type != JSON_ARRAY) goto bad;
  c->ids = arena_alloc(&c->a, (ids->len ? ids->len : 1) * sizeof *c->ids);
  if (!c->ids) {
    hres_err(r, DV_ENOMEM);
    return -1;
  }
  for (size_t i = 0; i < ids->len; i++) {
    const json_val *v = ids->u.items[i];
    if (v->type != JSON_STRING) goto bad;
    char *p = arena_memdup(&c->a, v->u.s, v->len ? v->len : 1);
    if (!p) {
      hres_err(r, DV_ENOMEM);
      return -1;
    }
    c->ids[i].p = p;
    c->ids[i].n = v->len;
  }
  c->n_ids = ids->len;
  qsort(c->ids, c->n_ids, sizeof *c->ids, id_cmp);
  return 0;
bad:
  hres_errw(r, DV_EBAD_REQUEST, msg);
  return -1;
}

/* Split "a/b" as Erlang's string:tokens(S, "/") does (empty parts
 * dropped); returns the number of parts, the first two in p[]/n[]. */
static int tokens2(const char *s, const char **p, size_t *n) {
  int k = 0;
  while (*s) {
    while (*s == '/') s++;
    if (!*s) break;
    const char *e = strchr(s, '/');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (k < 2) p[k] = s, n[k] = len;
    k++;
    s += len;
  }
  return k;
}

/* A design document member path must exist (couch_util's
 * get_nested_json_value): 404 "missing json key: K" otherwise. The design
 * document into *out (r->a) when out is not NULL. */
static int ddoc_member(hreq *r, const char *ddoc, size_t ddoc_len, const char *member, const char *name,
                       size_t name_len, json_val **out) {
  size_t idn = 8 + ddoc_len;
  char *id = arena_alloc(&r->a, idn + 1);
  if (!id) {
    hres_err(r, DV_ENOMEM);
    return -1;
  }
  memcpy(id, "_design/", 8);
  memcpy(id + 8, ddoc, ddoc_len);
  id[idn] = 0;
  json_val *doc;
  int rc = store_doc_get(r->app->db, id, idn, NULL, 0, &r->a, &doc);
  if (rc) {
    hres_err(r, rc);
    return -1;
  }
  const json_val *m = json_obj_getz(doc, member);
  if (!m) {
    hres_errwf(r, DV_ENOT_FOUND, "missing json key: %s", member);
    return -1;
  }
  if (m->type != JSON_OBJECT) {
    hres_errw(r, DV_ENOT_FOUND, "json_mismatch");
    return -1;
  }
  if (!json_obj_get(m, name, name_len)) {
    hres_errwf(r, DV_ENOT_FOUND, "missing json key: %.*s", (int)name_len, name);
    return -1;
  }
  if (out) *out = doc;
  return 0;
}

/* Take the filter function of design document doc: the design document
 * (as JSON text, id, rev, language), the function's path and the request
 * object, all in the feed's arena. 0, or -1 with the error written. */
/* A design document's function as the feed's filter: filters.NAME, or
 * (view = 1) the map function of views.NAME, which passes a document when
 * it emits at least one row (couch_query_servers:filter_view). */
static int ch_js_setup(hreq *r, chfeed *c, const json_val *doc, const char *name, size_t name_len, int view) {
  dv_buf b;
  buf_init(&b);
  int rc = json_write(&b, doc);
  const json_val *id = json_obj_getz(doc, "_id"), *rev = json_obj_getz(doc, "_rev");
  const json_val *lang = json_obj_getz(doc, "language");
  if (!rc && (!id || id->type != JSON_STRING || !rev || rev->type != JSON_STRING)) rc = DV_EINVAL;
  if (!rc) {
    c->dd.json = arena_memdup(&c->a, b.p, b.len);
    c->dd.json_len = b.len;
    c->dd.id = arena_strndup(&c->a, id->u.s, id->len);
    c->dd.id_len = id->len;
    c->dd.rev = arena_strndup(&c->a, rev->u.s, rev->len);
    c->dd.lang = lang && lang->type == JSON_STRING ? arena_strndup(&c->a, lang->u.s, lang->len) : NULL;
    buf_reset(&b);
    buf_puts(&b, view ? "[\"views\"," : "[\"filters\",");
    json_escape(&b, name, name_len);
    buf_puts(&b, view ? ",\"map\"]" : "]");
    c->js_path = arena_memdup(&c->a, b.p, b.len);
    c->js_path_len = b.len;
    if (buf_error(&b) || !c->dd.json || !c->dd.id || !c->dd.rev || !c->js_path || (lang && lang->type == JSON_STRING && !c->dd.lang))
      rc = DV_ENOMEM;
  }
  if (rc) {
    buf_free(&b);
    hres_err(r, rc);
    return -1;
  }
  buf_reset(&b);
  if (api_js_req(r, NULL, &b)) { /* its error is written */
    buf_free(&b);
    return -1;
  }
  c->js_req = arena_memdup(&c->a, b.p, b.len);
  c->js_req_len = b.len;
  buf_free(&b);
  if (!c->js_req) {
    hres_err(r, DV_ENOMEM);
    return -1;
  }
  c->filter = F_JS;
  return 0;
}

/* filter=… (configure_filter in couch_changes.erl). body is the POST body
 * or NULL. */
static int ch_filter(hreq *r, chfeed *c, const json_val *body) {
  const char *fl = hq_get(r, "filter", NULL);
  if (!fl || !*fl) return 0;
  if (!strcmp(fl, "_doc_ids")) {
    c->filter = F_DOC_IDS;
    if (r->method == HM_POST) return ch_set_ids(r, c, body ? json_obj_getz(body, "doc_ids") : NULL);
    json_val *ids = NULL;
    if (hq_json(r, "doc_ids", &ids)) return -1;
    return ch_set_ids(r, c, ids);
  }
  if (!strcmp(fl, "_selector")) {
    c->filter = F_SELECTOR;
    if (r->method != HM_POST) {
      hres_errw(r, DV_EBAD_REQUEST, "Selector must be specified in POST payload");
      return -1;
    }
    const json_val *sel = body ? json_obj_getz(body, "selector") : NULL;
    if (!sel || sel->type != JSON_OBJECT) {
      hres_errw(r, DV_EBAD_REQUEST, "Selector error: expected a JSON object");
      return -1;
    }
    const json_val *fields = body ? json_obj_getz(body, "fields") : NULL;
    if (fields) {
      int okf = fields->type == JSON_ARRAY;
      for (size_t i = 0; okf && i < fields->len; i++) okf = fields->u.items[i]->type == JSON_STRING;
      if (!okf) {
        hres_errw(r, DV_EBAD_REQUEST, "Selector error: fields must be JSON array");
        return -1;
      }
    }
    /* The selector must outlive the request: copy it into the feed's arena. */
    json_val *own = json_dup(&c->a, sel);
    json_val *ownf = fields ? json_dup(&c->a, fields) : NULL;
    if (!own || (fields && !ownf)) {
      hres_err(r, DV_ENOMEM);
      return -1;
    }
    /* Field paths as NUL-terminated strings (path_get walks them). */
    for (size_t i = 0; ownf && i < ownf->len; i++) {
      json_val *fv = ownf->u.items[i];
      char *z = arena_strndup(&c->a, fv->u.s, fv->len);
      if (!z) {
        hres_err(r, DV_ENOMEM);
        return -1;
      }
      fv->u.s = z;
    }
    const char *why = NULL;
    int rc = mango_parse(&c->a, own, &c->sel, &why);
    if (rc) { /* CouchDB's _changes answers a bad selector as bad_request */
      if (rc == DV_ENOMEM) hres_err(r, rc);
      else hres_errw(r, DV_EBAD_REQUEST, why);
      return -1;
    }
    c->fields = ownf;
    return 0;
  }
  if (!strcmp(fl, "_design")) {
    c->filter = F_DESIGN;
    return 0;
  }
  const char *p[2];
  size_t n[2];
  if (!strcmp(fl, "_view")) {
    const char *view = hq_get(r, "view", NULL);
    if (!view || !*view) {
      hres_errw(r, DV_EBAD_REQUEST, "`view` filter parameter is not provided.");
      return -1;
    }
    int k = tokens2(view, p, n);
    if (k != 2) {
      hres_errw(r, DV_EBAD_REQUEST, "`view` must be of the form `designname/viewname`");
      return -1;
    }
    json_val *vdoc;
    if (ddoc_member(r, p[0], n[0], "views", p[1], n[1], &vdoc)) return -1;
    return ch_js_setup(r, c, vdoc, p[1], n[1], 1);
  }
  if (fl[0] == '_') {
    hres_errw(r, DV_EBAD_REQUEST, "unknown builtin filter name");
    return -1;
  }
  int k = tokens2(fl, p, n);
  if (k == 0) return 0;
  if (k != 2) {
    hres_errw(r, DV_EBAD_REQUEST, "`filter` must be of the form `designname/filtername`");
    return -1;
  }
  json_val *ddoc;
  if (ddoc_member(r, p[0], n[0], "filters", p[1], n[1], &ddoc)) return -1;
  return ch_js_setup(r, c, ddoc, p[1], n[1], 0);
}

void hapi_changes(hreq *r) {
  chfeed *c = NULL;
  json_val *body = NULL;
  int feed;
  int64_t limit = -1, timeout = -1, heartbeat = 0, seq_interval = 0;
  if (r->method == HM_POST) {
    if (hreq_need_json(r)) return;
    if (r->body_len && hreq_json_body(r, 1, &body)) return;
  }

  /* parse_changes_query: integers and the two parameters with their own
   * messages first, then the filter, then the feed, then since. */
  if (hq_int(r, "limit", 0, &limit) || hq_int(r, "timeout", 0, &timeout)) return;
  const char *hb = hq_get(r, "heartbeat", NULL);
  if (hb && !strcmp(hb, "true")) {
    heartbeat = CH_MAX_WAIT;
  } else if (hb) {
    char *end;
    long long v = strtoll(hb, &end, 10);
    if (!*hb || *end || (hb[0] != '-' && (hb[0] < '0' || hb[0] > '9'))) {
      hres_errw(r, DV_EBAD_REQUEST, "Invalid heartbeat value. Expecting a positive integer value (in milliseconds).");
      return;
    }
    if (v <= 0) {
      hres_errw(r, DV_EBAD_REQUEST, "The heartbeat value should be a positive integer (in milliseconds).");
      return;
    }
    heartbeat = v;
  }
  const char *si = hq_get(r, "seq_interval", NULL);
  if (si) {
    char *end;
    long long v = strtoll(si, &end, 10);
    if (!*si || *end || v <= 0 || (si[0] != '-' && (si[0] < '0' || si[0] > '9'))) {
      hres_errw(r, DV_EBAD_REQUEST, "invalid_seq_interval");
      return;
    }
    seq_interval = v;
  }
  const char *style = hq_get(r, "style", NULL);
  if (style && strcmp(style, "main_only") && strcmp(style, "all_docs")) {
    hres_errwf(r, DV_EQUERY_PARSE, "Invalid value for style: \"%s\"", style);
    return;
  }

  c = dv_calloc(1, sizeof *c);
  if (!c) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  arena_init(&c->a, CH_SCRATCH_CHUNK);
  arena_init(&c->scratch, CH_SCRATCH_CHUNK);
  arena_init(&c->js_a, CH_SCRATCH_CHUNK);
  buf_init(&c->tmp);
  buf_init(&c->js_args);
  buf_init(&c->l.pre);
  c->style_all = style && !strcmp(style, "all_docs");
  c->include_docs = q_true(r, "include_docs");
  c->doc_flags = (q_true(r, "conflicts") ? STORE_CONFLICTS : 0) | (q_true(r, "att_encoding_info") ? STORE_ATT_INFO : 0);
  c->atts = q_true(r, "attachments");
  c->seq_interval = seq_interval;
  c->seq_left = limit >= 0 ? limit : CH_DEFAULT_LIMIT;
  if (ch_filter(r, c, body)) goto fail;
  if (q_feed(r, 1, "Supported `feed` types: normal, continuous, live, longpoll, eventsource", &feed)) goto fail;
  lf_init(&c->l, &ch_kind, feed, limit, heartbeat, timeout);

  /* since: the last of since= and last-event-id= wins; for eventsource
   * the Last-Event-ID header (a browser reconnecting) overrides both. */
  const char *since = NULL;
  size_t since_len = 0;
  for (int i = 0; i < r->nparams; i++)
    if (!strcmp(r->params[i].key, "since") || !strcasecmp(r->params[i].key, "last-event-id"))
      since = r->params[i].val, since_len = r->params[i].vlen;
  if (feed == FEED_EVENTSOURCE) {
    const char *h = hreq_hdr(r, "Last-Event-ID");
    if (h) since = h, since_len = strlen(h);
  }
  int descending = q_true(r, "descending");
  int rc = 0;
  if (since && !(since_len == 3 && !memcmp(since, "now", 3))) {
    rc = seq_parse_loose(since, since_len, &c->l.pos);
    if (rc) {
      hres_err(r, rc);
      goto fail;
    }
  } else if (since || (descending && feed != FEED_NORMAL)) {
    /* "now"; a live feed asked for descending starts there too, as CouchDB */
    rc = db_now(r->app->db, &c->l.pos);
    if (rc) {
      hres_err(r, rc);
      goto fail;
    }
  }
  if (descending && feed == FEED_NORMAL) {
    c->descending = 1; /* since is ignored */
    memset(&c->l.pos, 0, sizeof c->l.pos);
  }
  c->from_zero = store_seq_is_zero(&c->l.pos);
  rc = store_db_open(api_store(r), r->app->db_name, &c->db);
  if (rc) {
    hres_err(r, rc);
    goto fail;
  }
  if (c->filter == F_JS) {
    /* The first batch before the response starts: a function that fails
     * on it is the answer's status and error, as CouchDB's delayed
     * response gives it; later it can only cut the feed. A live feed's
     * watch comes after this read, then reads on from where it stopped. */
    rc = ch_read(&c->l, &c->l.pre);
    if (rc) {
      api_qs_fail(r, rc, &c->js_err);
      goto fail;
    }
  }
  if (feed == FEED_EVENTSOURCE) {
    hres_header(r, "Cache-Control", "no-cache");
    hres_feed(r, 200, "text/event-stream", &lf_ops, c);
  } else {
    hres_feed(r, 200, "application/json", &lf_ops, c);
  }
  if (feed != FEED_NORMAL) hfeed_live(r), c->live = 1, dv_stat_move(DV_ST_HTTPD_CLIENTS_REQUESTING_CHANGES, 1);
  return;

fail:
  c->l.k = &ch_kind;
  lf_done(c);
}

/* ---- _db_updates ------------------------------------------------------------ */

/* One row kept for a descending answer. */
typedef struct du_row {
  char *name;        /* database name (arena) */
  size_t name_len;   /* its length */
  const char *type;  /* "created", "updated", "deleted" (static) */
  store_seq seq;     /* its index position */
} du_row;

typedef struct dufeed {
  lfeed l;           /* the generic part (first) */
  store *s;          /* the store */
  dv_buf *out;       /* during a read: where rows go */
  int descending;    /* descending=true (normal feed only) */
  int64_t n;         /* rows seen by the current read */
  dv_arena a;        /* descending: the rows collected */
  du_row *rows;      /* descending: rows, oldest first */
  size_t nrows;      /* descending: rows collected */
  size_t cap;        /* descending: room in rows */
} dufeed;

static const char *du_type(const char *t) {
  if (!strcmp(t, "created")) return "created";
  if (!strcmp(t, "deleted")) return "deleted";
  return "updated";
}

static int du_write(dufeed *d, const char *name, size_t name_len, const char *type, const store_seq *seq) {
  lfeed *l = &d->l;
  dv_buf *out = d->out;
  char s[STORE_SEQ_STR];
  store_seq_format(seq, s);
  lf_row_begin(l, out);
  json_w w;
  json_w_init(&w, out);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "db_name");
  json_w_str(&w, name, name_len);
  json_w_keyz(&w, "type");
  json_w_strz(&w, type);
  json_w_keyz(&w, "seq");
  json_w_strz(&w, s);
  json_w_obj_end(&w);
  int rc = json_w_finish(&w);
  if (rc) return rc;
  lf_row_end(l, out, seq);
  l->sent++;
  return 0;
}

static int du_row_cb(void *arg, const store_dbu_row *row) {
  dufeed *d = arg;
  lfeed *l = &d->l;
  d->n++;
  l->pos = row->seq;
  int rc = du_write(d, row->name, row->name_len, du_type(row->type), &row->seq);
  if (rc) return rc;
  return l->limit >= 0 && l->sent >= l->limit ? LF_STOP : 0;
}

static int du_collect(void *arg, const store_dbu_row *row) {
  dufeed *d = arg;
  if (d->nrows == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 64;
    du_row *p = arena_realloc(&d->a, d->rows, d->cap * sizeof *p, cap * sizeof *p, 16);
    if (!p) return DV_ENOMEM;
    d->rows = p;
    d->cap = cap;
  }
  du_row *x = &d->rows[d->nrows];
  x->name = arena_strndup(&d->a, row->name, row->name_len);
  if (!x->name) return DV_ENOMEM;
  x->name_len = row->name_len;
  x->type = du_type(row->type);
  x->seq = row->seq;
  d->nrows++;
  return 0;
}

static int du_nop(void *arg, const store_dbu_row *row) {
  (void)arg;
  (void)row;
  return 0;
}

static int du_read(lfeed *l, dv_buf *out) {
  dufeed *d = (dufeed *)l;
  d->out = out;
  d->n = 0;
  int rc;
  if (d->descending) { /* the index reads forward only: collect, then emit newest first */
    store_seq zero;
    memset(&zero, 0, sizeof zero);
    rc = store_db_updates(d->s, &zero, -1, du_collect, d, NULL);
    for (size_t i = d->nrows; !rc && i > 0; i--) {
      du_row *x = &d->rows[i - 1];
      l->pos = x->seq;
      rc = du_write(d, x->name, x->name_len, x->type, &x->seq);
      if (rc || (l->limit >= 0 && l->sent >= l->limit)) break;
    }
    l->caught_up = 1;
  } else {
    rc = store_db_updates(d->s, &l->pos, DU_BATCH, du_row_cb, d, NULL);
    if (rc == LF_STOP) rc = 0;
    l->caught_up = d->n < DU_BATCH;
  }
  d->out = NULL;
  return rc;
}

static int du_watch(lfeed *l) {
  dufeed *d = (dufeed *)l;
  return store_db_updates_watch(d->s, lf_watch_cb, l, &l->w);
}

static void du_free(lfeed *l) {
  dufeed *d = (dufeed *)l;
  arena_free(&d->a);
}

static const lf_kind du_kind = {du_read, du_watch, NULL, du_free, NULL};

/* global_changes_httpd's to_non_neg_int: 400 "invalid_integer". */
static int du_int(hreq *r, const char *name, int64_t *io) {
  const char *v = hq_get(r, name, NULL);
  if (!v) return 0;
  char *end;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || x < 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9'))) {
    hres_errw(r, DV_EBAD_REQUEST, "invalid_integer");
    return -1;
  }
  *io = x;
  return 0;
}

void hapi_db_updates(hreq *r) {
  int64_t limit = -1, timeout = -1, heartbeat = 0;
  int feed, rc;
  if (r->method != HM_GET && r->method != HM_HEAD) {
    hres_method(r, "GET");
    return;
  }
  const char *hb = hq_get(r, "heartbeat", NULL);
  if (hb && !strcmp(hb, "true")) heartbeat = CH_MAX_WAIT;
  else if (hb && strcmp(hb, "false") && du_int(r, "heartbeat", &heartbeat)) return;
  if (du_int(r, "limit", &limit) || du_int(r, "timeout", &timeout)) return;
  if (q_feed(r, 0, "Supported `feed` types: normal, continuous, longpoll, eventsource", &feed)) return;

  dufeed *d = dv_calloc(1, sizeof *d);
  if (!d) {
    hres_err(r, DV_ENOMEM);
    return;
  }
  arena_init(&d->a, 0);
  d->s = api_store(r);
  lf_init(&d->l, &du_kind, feed, limit, heartbeat, timeout);
  int descending = q_true(r, "descending");
  size_t n;
  const char *since = hq_get(r, "since", &n);
  if (since && !(n == 3 && !memcmp(since, "now", 3))) {
    rc = seq_parse_loose(since, n, &d->l.pos);
  } else if (since || (descending && feed != FEED_NORMAL)) {
    rc = store_db_updates(d->s, &d->l.pos, -1, du_nop, NULL, &d->l.pos);
  } else {
    rc = 0;
  }
  if (rc) {
    hres_err(r, rc);
    d->l.k = &du_kind;
    lf_done(d);
    return;
  }
  if (descending && feed == FEED_NORMAL) {
    d->descending = 1;
    memset(&d->l.pos, 0, sizeof d->l.pos);
  }
  if (feed == FEED_EVENTSOURCE) {
    hres_header(r, "Cache-Control", "no-cache");
    hres_feed(r, 200, "text/event-stream", &lf_ops, d);
  } else {
    hres_feed(r, 200, "application/json", &lf_ops, d);
  }
  if (feed != FEED_NORMAL) hfeed_live(r);
}

/* ---- routes ------------------------------------------------------------------ */

static const http_route routes[] = {
    {M(GET) | M(HEAD) | M(POST), "/{db}/_changes", API_NEEDS_DB | API_SYSDB_ADMIN, hapi_changes},
    {HTTP_ANY, "/_db_updates", API_SERVER_ADMIN, hapi_db_updates},
};
const api_routes api_changes_routes = API_TABLE(routes);
