/* stats.c — the per-thread shards behind stats.h's counters and
 * histograms, summing them for a reader, and couch_stats_math's summary.
 *
 * A shard is one block: the counters (stats.h's dv__stat_shard) and then
 * DV_SH_N histograms × 3 epochs × DV_STAT_BINS 32-bit bins, allocated
 * 64-byte aligned so no two threads share a cache line. Its only writer is
 * the thread that holds it; readers load its words relaxed. All shards are
 * on one list (under mu, which only a thread's first count, a thread's
 * exit and readers take); a thread's exit (a pthread key's destructor)
 * puts its shard on the free list, and the next thread to count takes it
 * from there and counts on from its values — so nothing a dead thread
 * counted is lost and no shard is freed.
 *
 * Histogram epochs: epoch e = CLOCK_MONOTONIC_COARSE seconds / EPOCH_S
 * lives in slot e % 3. The writer that finds an older epoch in its slot
 * zeroes the bins and then publishes the new epoch (release); a reader
 * takes slots whose epoch (acquire) is e or e - 1. The slot a writer
 * zeroes holds e - 3 or older, which no reader of e or e + 1 reads.
 *
 * Not here: the table (stats.h), the endpoints (api/stats.c).
 */
#include "util/stats.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPOCHS 3

const dv_stat_def dv_stat_defs[DV_ST_N] = {
#define DV__H_COUNTER(id) -1
#define DV__H_UPDOWN(id) -1
#define DV__H_GAUGE(id) -1
#define DV__H_HIST_MS(id) DV_SH_##id
#define DV__H_HIST(id) DV_SH_##id
#define DV__ST_DEF(id, kind, path, desc) [DV_ST_##id] = {path, desc, DV_SK_##kind, DV__H_##kind(id)},
    DV_STATS_MAP(DV__ST_DEF)
#undef DV__ST_DEF
};

const int dv_stat_pcts[6] = {50, 75, 90, 95, 99, 999};
static const double pct_q[6] = {0.50, 0.75, 0.90, 0.95, 0.99, 0.999};

struct epoch {
  int64_t epoch;                 /* which epoch the bins count (-1: none yet) */
  uint32_t bins[DV_STAT_BINS];   /* samples per bin */
};

struct dv__stat_hists {
  struct epoch e[DV_SH_N][EPOCHS];
};

int dv__stats_on = 1;
int dv__stats_env_off;
__thread dv__stat_shard *dv__stats_tls;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* guards shards, free_shards, base */
static int64_t base[DV_ST_N];       /* a COUNTER's sum when counting last resumed */
static dv__stat_shard *shards;      /* every shard ever made */
static dv__stat_shard *free_shards; /* those of threads that exited */
static pthread_key_t key;           /* its destructor returns a thread's shard */

static void shard_release(void *p) {
  dv__stat_shard *s = p;
  pthread_mutex_lock(&mu);
  s->free_next = free_shards;
  free_shards = s;
  pthread_mutex_unlock(&mu);
}

/* Before main: DIVAN_STATS, and the key. */
__attribute__((constructor)) static void stats_init(void) {
  const char *e = getenv("DIVAN_STATS");
  if (e && (!strcmp(e, "off") || !strcmp(e, "0") || !strcmp(e, "false"))) dv__stats_env_off = 1;
  if (pthread_key_create(&key, shard_release)) dv__stats_env_off = 1; /* cannot happen at start; stay honest */
  if (dv__stats_env_off) dv__stats_on = 0;
}

dv__stat_shard *dv__stats_shard(void) {
  pthread_mutex_lock(&mu);
  dv__stat_shard *s = free_shards;
  if (s) {
    free_shards = s->free_next;
    s->free_next = NULL;
  }
  pthread_mutex_unlock(&mu);
  if (!s) {
    /* Not dv_malloc: a test's injected allocation failure must not land
     * here (counting never changes what the code counted does). */
    void *p = NULL;
    size_t hsz = sizeof(struct dv__stat_hists);
    if (posix_memalign(&p, 64, sizeof *s + 64 + hsz)) return NULL;
    memset(p, 0, sizeof *s + 64 + hsz);
    s = p;
    s->h = (struct dv__stat_hists *)((char *)p + ((sizeof *s + 63) & ~(size_t)63));
    for (int h = 0; h < DV_SH_N; h++)
      for (int k = 0; k < EPOCHS; k++) s->h->e[h][k].epoch = -1;
    pthread_mutex_lock(&mu);
    s->next = shards;
    shards = s;
    pthread_mutex_unlock(&mu);
  }
  if (pthread_setspecific(key, s)) { /* no way to hand it back at exit: keep it free */
    shard_release(s);
    return NULL;
  }
  dv__stats_tls = s;
  return s;
}

/* ---- bins (couch_stats_histogram) -------------------------------------- */

/* Bin index 0 is double bit pattern (sign 0, exponent and 3 mantissa bits)
 * 8130: the bin of DV_STAT_MIN (CouchDB's ?BIN_OFFSET -8129, 1-based). */
#define BIN_SHIFT 49 /* 64 - 1 sign bit - 14 index bits */
#define BIN_BASE 8130

static uint64_t dbits(double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

static double bits_d(uint64_t u) {
  double v;
  memcpy(&v, &u, sizeof v);
  return v;
}

int dv_stat_bin(double v) {
  if (!(v >= DV_STAT_MIN)) v = DV_STAT_MIN; /* NaN too */
  if (v > DV_STAT_MAX) v = DV_STAT_MAX;
  int b = (int)(dbits(v) >> BIN_SHIFT) - BIN_BASE;
  return b < 0 ? 0 : b >= DV_STAT_BINS ? DV_STAT_BINS - 1 : b;
}

double dv_stat_bin_min(int bin) { return bits_d((uint64_t)(bin + BIN_BASE) << BIN_SHIFT); }
double dv_stat_bin_max(int bin) {
  return bits_d(((uint64_t)(bin + BIN_BASE) << BIN_SHIFT) | ((1ull << BIN_SHIFT) - 1));
}
double dv_stat_bin_mid(int bin) {
  return bits_d(((uint64_t)(bin + BIN_BASE) << BIN_SHIFT) | (1ull << (BIN_SHIFT - 1)));
}

static int64_t epoch_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec / DV_STAT_EPOCH_S;
}

void dv_stat_hist(dv_stat_hist_id h, double v) {
  if (!dv_stats_on()) return;
  dv__stat_shard *s = dv__stats_tls;
  if (!s && !(s = dv__stats_shard())) return;
  int64_t ep = epoch_now();
  struct epoch *e = &s->h->e[h][ep % EPOCHS];
  if (__atomic_load_n(&e->epoch, __ATOMIC_RELAXED) != ep) {
    for (int i = 0; i < DV_STAT_BINS; i++) __atomic_store_n(&e->bins[i], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->epoch, ep, __ATOMIC_RELEASE);
  }
  uint32_t *b = &e->bins[dv_stat_bin(v)];
  __atomic_store_n(b, __atomic_load_n(b, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* ---- reading --------------------------------------------------------------- */

static int64_t sum_locked(dv_stat_id id) {
  int64_t sum = 0;
  for (dv__stat_shard *s = shards; s; s = s->next) sum += __atomic_load_n(&s->c[id], __ATOMIC_RELAXED);
  return sum;
}

int64_t dv_stat_value(dv_stat_id id) {
  pthread_mutex_lock(&mu);
  int64_t v = sum_locked(id) - base[id];
  pthread_mutex_unlock(&mu);
  return v;
}

/* A resume moves each COUNTER's base to its sum: paused, nothing adds to
 * it (a count begun just before the pause may land after the base is
 * taken, and is then one of the new period's). */
void dv_stats_set(int on) {
  if (dv__stats_env_off) return;
  pthread_mutex_lock(&mu);
  int was = __atomic_load_n(&dv__stats_on, __ATOMIC_RELAXED);
  if (on && !was)
    for (int i = 0; i < DV_ST_N; i++)
      if (dv_stat_defs[i].kind == DV_SK_COUNTER) base[i] = sum_locked((dv_stat_id)i);
  __atomic_store_n(&dv__stats_on, on ? 1 : 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&mu);
}

void dv_stat_hist_read(dv_stat_hist_id h, dv_stat_summary *out) {
  uint64_t bins[DV_STAT_BINS] = {0};
  int64_t ep = epoch_now();
  pthread_mutex_lock(&mu);
  for (dv__stat_shard *s = shards; s; s = s->next)
    for (int k = 0; k < EPOCHS; k++) {
      struct epoch *e = &s->h->e[h][k];
      int64_t at = __atomic_load_n(&e->epoch, __ATOMIC_ACQUIRE);
      if (at != ep && at != ep - 1) continue;
      for (int i = 0; i < DV_STAT_BINS; i++) bins[i] += __atomic_load_n(&e->bins[i], __ATOMIC_RELAXED);
    }
  pthread_mutex_unlock(&mu);
  dv_stat_summarise(bins, out);
}

/* couch_stats_math:summary/2: two passes over the bins in use, each bin's
 * samples taken at its midpoint; a percentile of rank N·q falls in the bin
 * where the ranks left drop below the bin's count, interpolated across
 * the bin by the fraction of its count still to go. */
void dv_stat_summarise(const uint64_t *bins, dv_stat_summary *out) {
  memset(out, 0, sizeof *out);
  uint64_t n = 0;
  double sum = 0, sum_log = 0, sum_inv = 0;
  int lo = -1, hi = -1;
  for (int i = 0; i < DV_STAT_BINS; i++) {
    if (!bins[i]) continue;
    double c = (double)bins[i], mid = dv_stat_bin_mid(i);
    if (lo < 0) lo = i;
    hi = i;
    n += bins[i];
    sum += c * mid;
    sum_log += c * log(mid);
    sum_inv += c / mid;
  }
  if (!n) return;
  double N = (double)n, mean = sum / N;
  double rank[6];
  int found[6] = {0};
  for (int k = 0; k < 6; k++) rank[k] = N * pct_q[k];
  double d2 = 0, d3 = 0, d4 = 0;
  for (int i = lo; i <= hi; i++) {
    if (!bins[i]) continue;
    double c = (double)bins[i];
    for (int k = 0; k < 6; k++) {
      if (found[k]) continue;
      if (rank[k] < c) {
        double mn = dv_stat_bin_min(i), mx = dv_stat_bin_max(i);
        out->pct[k] = mn + (mx - mn) * (rank[k] / c);
        found[k] = 1;
      } else {
        rank[k] -= c;
      }
    }
    double d = dv_stat_bin_mid(i) - mean;
    d2 += c * d * d;
    d3 += c * d * d * d;
    d4 += c * d * d * d * d;
  }
  out->n = (int64_t)n;
  out->min = dv_stat_bin_min(lo);
  out->max = dv_stat_bin_max(hi);
  out->mean = mean;
  out->gmean = exp(sum_log / N);
  out->hmean = N / sum_inv;
  out->median = out->pct[0];
  out->variance = d2 / N;
  out->stddev = sqrt(out->variance);
  double s3 = pow(out->stddev, 3), s4 = pow(out->stddev, 4);
  out->skewness = s3 < 1e-12 ? 0 : (d3 / N) / s3;
  out->kurtosis = s4 < 1e-12 ? 0 : (d4 / N) / s4 - 3;
}
