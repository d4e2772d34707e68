/* Tests for src/util/stats: counters summed exactly across threads (and
 * across threads that exit and hand their shards on), the bins of
 * couch_stats_histogram, the summary of couch_stats_math against CouchDB's
 * own test values, and percentiles against a sorted array of the samples. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "test.h"
#include "util/stats.h"

#define NTHREADS 8
#define PER_THREAD 200000

struct adder {
  dv_stat_id id;
  int64_t step;  /* added PER_THREAD times */
};

static void *add_main(void *arg) {
  struct adder *a = arg;
  for (int i = 0; i < PER_THREAD; i++) {
    if (dv_stat_defs[a->id].kind == DV_SK_UPDOWN) dv_stat_move(a->id, a->step);
    else dv_stat_add(a->id, a->step);
  }
  return NULL;
}

/* N threads × M adds, twice (the second wave reuses the first's shards,
 * whose threads exited): the sum is exact, an UPDOWN goes back down. */
TEST(stats_threads_sum) {
  ASSERT(dv_stats_on()); /* the runner does not set DIVAN_STATS */
  int64_t c0 = dv_stat_value(DV_ST_DATABASE_READS), u0 = dv_stat_value(DV_ST_OPEN_DATABASES);
  for (int wave = 0; wave < 2; wave++) {
    pthread_t th[2 * NTHREADS];
    struct adder a[2 * NTHREADS];
    for (int i = 0; i < 2 * NTHREADS; i++) {
      a[i] = i < NTHREADS ? (struct adder){DV_ST_DATABASE_READS, 1} : (struct adder){DV_ST_OPEN_DATABASES, wave ? -1 : 1};
      ASSERT_OK(pthread_create(&th[i], NULL, add_main, &a[i]));
    }
    for (int i = 0; i < 2 * NTHREADS; i++) ASSERT_OK(pthread_join(th[i], NULL));
    ASSERT_EQ(dv_stat_value(DV_ST_DATABASE_READS), c0 + (int64_t)(wave + 1) * NTHREADS * PER_THREAD);
    ASSERT_EQ(dv_stat_value(DV_ST_OPEN_DATABASES), u0 + (wave ? 0 : (int64_t)NTHREADS * PER_THREAD));
  }
  dv_stat_inc(DV_ST_DATABASE_READS); /* this thread's own shard counts too */
  ASSERT_EQ(dv_stat_value(DV_ST_DATABASE_READS), c0 + 2 * NTHREADS * PER_THREAD + 1);
}

/* A pause counts nothing but UPDOWN rows; a resume starts the COUNTER
 * rows from 0; histograms record nothing while paused. */
TEST(stats_pause_resume) {
  dv_stat_add(DV_ST_HTTPD_REQUESTS, 5);
  dv_stat_move(DV_ST_OPEN_DATABASES, 2);
  ASSERT_EQ(dv_stat_value(DV_ST_HTTPD_REQUESTS), 5);
  dv_stats_set(0);
  ASSERT(!dv_stats_on());
  dv_stat_add(DV_ST_HTTPD_REQUESTS, 7);
  dv_stat_hist(DV_SH_MANGO_QUERY_TIME, 3);
  dv_stat_move(DV_ST_OPEN_DATABASES, 1);
  ASSERT_EQ(dv_stat_value(DV_ST_HTTPD_REQUESTS), 5);
  ASSERT_EQ(dv_stat_value(DV_ST_OPEN_DATABASES), 3);
  dv_stats_set(1);
  ASSERT(dv_stats_on());
  ASSERT_EQ(dv_stat_value(DV_ST_HTTPD_REQUESTS), 0);
  ASSERT_EQ(dv_stat_value(DV_ST_OPEN_DATABASES), 3);
  dv_stat_add(DV_ST_HTTPD_REQUESTS, 2);
  dv_stat_hist(DV_SH_MANGO_QUERY_TIME, 4);
  ASSERT_EQ(dv_stat_value(DV_ST_HTTPD_REQUESTS), 2);
  dv_stats_set(1); /* no change: no reset */
  ASSERT_EQ(dv_stat_value(DV_ST_HTTPD_REQUESTS), 2);
  dv_stat_summary s;
  dv_stat_hist_read(DV_SH_MANGO_QUERY_TIME, &s);
  ASSERT_EQ(s.n, 1);
}

/* The table: unique paths, a description, histograms numbered in order. */
TEST(stats_table) {
  int hists = 0;
  for (int i = 0; i < DV_ST_N; i++) {
    const dv_stat_def *d = &dv_stat_defs[i];
    ASSERTF(d->path && d->desc && d->desc[0], "row %d", i);
    ASSERTF(strchr(d->path, '.') && d->path[strlen(d->path) - 1] != '.', "%s", d->path);
    for (int j = i + 1; j < DV_ST_N; j++) ASSERTF(strcmp(d->path, dv_stat_defs[j].path), "%s twice", d->path);
    if (d->kind == DV_SK_HIST || d->kind == DV_SK_HIST_MS) ASSERT_EQ(d->hist, hists++);
    else ASSERT_EQ(d->hist, -1);
  }
  ASSERT_EQ(hists, DV_SH_N);
}

/* couch_stats_histogram's bins (its tests name 1-based bins; ours are
 * 0-based): every bin's bounds map back to it, bins are contiguous. */
TEST(stats_bins) {
  ASSERT_EQ(dv_stat_bin(DV_STAT_MIN), 0);
  ASSERT_EQ(dv_stat_bin(0), 0);
  ASSERT_EQ(dv_stat_bin(-5), 0);
  ASSERT_EQ(dv_stat_bin(NAN), 0);
  ASSERT_EQ(dv_stat_bin(DV_STAT_MAX), DV_STAT_BINS - 1);
  ASSERT_EQ(dv_stat_bin(1e300), DV_STAT_BINS - 1);
  ASSERT_EQ(dv_stat_bin(10.42), 80);
  ASSERT_EQ(dv_stat_bin(0.42), 43);
  ASSERT_EQ(dv_stat_bin(4.2), 70);
  ASSERT_EQ(dv_stat_bin(4.2001), 70);
  for (int i = 0; i < DV_STAT_BINS; i++) {
    double mn = dv_stat_bin_min(i), mx = dv_stat_bin_max(i), mid = dv_stat_bin_mid(i);
    ASSERT(mn < mid && mid < mx);
    ASSERT_EQ(dv_stat_bin(mn), i);
    ASSERT_EQ(dv_stat_bin(mid), i);
    if (i > 0) ASSERT_EQ(dv_stat_bin(nextafter(mn, 0)), i - 1);
    if (i + 1 < DV_STAT_BINS) ASSERT(dv_stat_bin_min(i + 1) == nextafter(mx, INFINITY));
    ASSERTF((mx - mn) / mn <= 0.125 + 1e-9, "bin %d: %g..%g", i, mn, mx);
  }
}

/* CouchDB's flim: within 5 %, at least 0.05. */
static int flim(double want, double got) {
  double tol = fabs(want * 0.05);
  return fabs(want - got) < (tol > 0.05 ? tol : 0.05);
}
#define NEAR(want, got) ASSERTF(flim(want, got), "%s: want ~%g, got %g", #got, (double)(want), (double)(got))

/* couch_stats_math's basic_test, its values: the same algorithm gives the
 * same summary. An empty histogram is all zeros. */
TEST(stats_summary_couch) {
  static const double vals[] = {0.05, 0.9, 0.7, 0.7, 10.1, 11, 100.5, 0.10, 13.5};
  uint64_t bins[DV_STAT_BINS] = {0};
  dv_stat_summary s;
  dv_stat_summarise(bins, &s);
  ASSERT_EQ(s.n, 0);
  ASSERT(s.min == 0 && s.max == 0 && s.mean == 0 && s.pct[5] == 0);
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) bins[dv_stat_bin(vals[i])]++;
  dv_stat_summarise(bins, &s);
  ASSERT_EQ(s.n, 9);
  NEAR(0.05, s.min);
  NEAR(104, s.max);
  NEAR(15.3, s.mean);
  NEAR(1.9, s.gmean);
  NEAR(0.25, s.hmean);
  NEAR(0.9, s.median);
  NEAR(923, s.variance);
  NEAR(30.4, s.stddev);
  NEAR(2.3, s.skewness);
  NEAR(3.7, s.kurtosis);
  NEAR(0.9, s.pct[0]);
  NEAR(11.7, s.pct[1]);
  NEAR(97, s.pct[2]);
  NEAR(100, s.pct[3]);
  NEAR(103, s.pct[4]);
  NEAR(104, s.pct[5]);
  /* all in the largest bin (max_extreme_test) */
  memset(bins, 0, sizeof bins);
  bins[DV_STAT_BINS - 1] = 1000000;
  dv_stat_summarise(bins, &s);
  double mid = dv_stat_bin_mid(DV_STAT_BINS - 1);
  NEAR(mid, s.mean);
  NEAR(mid, s.median);
  NEAR(0, s.variance);
  NEAR(0, s.skewness);
  NEAR(4128767, s.pct[1]);
  NEAR(4194041, s.pct[5]);
}

#define NSAMPLES 40000
static double samples[NSAMPLES];

static void *hist_main(void *arg) {
  size_t from = (size_t)arg;
  for (size_t i = from; i < NSAMPLES; i += 4) dv_stat_hist(DV_SH_REQUEST_TIME, samples[i]);
  return NULL;
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Log-uniform samples from 4 threads through dv_stat_hist: n exact, each
 * percentile inside the bin of the sorted array's sample of that rank,
 * so within 12.5 % of it; min and max bound the true ones. */
TEST(stats_hist_percentiles) {
  srand(12345);
  for (int i = 0; i < NSAMPLES; i++) samples[i] = 0.05 * pow(10, 5.0 * rand() / RAND_MAX);
  pthread_t th[4];
  for (size_t i = 0; i < 4; i++) ASSERT_OK(pthread_create(&th[i], NULL, hist_main, (void *)i));
  for (int i = 0; i < 4; i++) ASSERT_OK(pthread_join(th[i], NULL));
  dv_stat_summary s;
  dv_stat_hist_read(DV_SH_REQUEST_TIME, &s);
  ASSERT_EQ(s.n, NSAMPLES);
  qsort(samples, NSAMPLES, sizeof *samples, dcmp);
  static const double q[6] = {0.5, 0.75, 0.9, 0.95, 0.99, 0.999};
  for (int k = 0; k < 6; k++) {
    double exact = samples[(size_t)floor(NSAMPLES * q[k])];
    int b = dv_stat_bin(exact);
    ASSERTF(s.pct[k] >= dv_stat_bin_min(b) && s.pct[k] <= dv_stat_bin_max(b), "p%d: %g, sorted array %g (bin %g..%g)",
            dv_stat_pcts[k], s.pct[k], exact, dv_stat_bin_min(b), dv_stat_bin_max(b));
    ASSERTF(fabs(s.pct[k] - exact) <= 0.125 * exact, "p%d: %g vs %g", dv_stat_pcts[k], s.pct[k], exact);
  }
  ASSERT(s.min <= samples[0] && samples[0] <= dv_stat_bin_max(dv_stat_bin(s.min)));
  ASSERT(s.max >= samples[NSAMPLES - 1] && samples[NSAMPLES - 1] >= dv_stat_bin_min(dv_stat_bin(s.max)));
  double sum = 0;
  for (int i = 0; i < NSAMPLES; i++) sum += samples[i];
  ASSERTF(fabs(s.mean - sum / NSAMPLES) <= 0.07 * sum / NSAMPLES, "mean %g vs %g", s.mean, sum / NSAMPLES);
  /* a histogram nothing counted into reads empty */
  dv_stat_hist_read(DV_SH_MANGO_QUERY_TIME, &s);
  ASSERT_EQ(s.n, 0);
}
