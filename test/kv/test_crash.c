/* test_crash.c — kill -9 in the middle of group commits loses nothing.
 *
 * The test process never opens the store itself (so it forks cleanly,
 * with no RocksDB threads): each cycle forks a WRITER child whose
 * committer threads commit small transactions as fast as they can and
 * report every acknowledged commit (sequence number and versionstamp) on
 * a pipe, then SIGKILLs it after a random 20-300 ms (every fifth cycle:
 * 0-30 ms after the fork, while it may still be opening or recovering).
 * Then a VERIFIER child opens the store and checks:
 *   - every acknowledged commit is there, with the stamp it was told;
 *   - nothing is partly there: each transaction's payload key, its
 *     versionstamped key, its versionstamped value and its share of an
 *     atomic counter appear together or not at all, and each thread's
 *     counter key names its newest payload;
 *   - versions never go back: kv_db_version after the restart is at least
 *     every stamp acknowledged or stored before, and a new commit's stamp
 *     is above all of them.
 * A commit that was durable but not yet acknowledged may or may not be
 * there; both are fine.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kvt.h"

#define CR_CYCLES 30
#define CR_THREADS 4
#define CR_MAX_ACKS 400000

typedef struct cr_ack {
  int64_t seq;                 /* the transaction's sequence number */
  int32_t tid;                 /* committing thread */
  uint8_t stamp[KV_STAMP_LEN]; /* its versionstamp */
  uint8_t pad[2];              /* fixed 24-byte record */
} cr_ack;

/* ---- the writer child ---------------------------------------------------- */

typedef struct cr_writer {
  kv_db *db;          /* store */
  int fd;             /* ack pipe */
  int tid;            /* thread index */
  atomic_llong *next; /* shared sequence counter */
} cr_writer;

static void pay_key(char *out, int64_t seq) { sprintf(out, "c/pay/%012lld", (long long)seq); }

/* The payload of seq: deterministic, 100-300 bytes. */
static size_t pay_val(uint8_t *out, int64_t seq, int tid) {
  size_t n = 100 + (size_t)(seq * 7919 % 200);
  for (size_t i = 0; i < n; i++) out[i] = (uint8_t)(seq * 31 + (int64_t)i * 17 + tid);
  return n;
}

static void *cr_commit_loop(void *arg) {
  cr_writer *w = arg;
  kv_txn *t;
  if (kv_txn_begin(w->db, &t)) _exit(3);
  for (;;) {
    int64_t seq = atomic_fetch_add(w->next, 1);
    char k[64];
    uint8_t v[400], vk[64], vv[32];
    int rc = 0;
    /* counter key: this thread's newest sequence number */
    sprintf(k, "c/ctr/%d", w->tid);
    rc = kvt_set_i64(t, k, seq);
    pay_key(k, seq);
    if (!rc) rc = kv_set(t, k, strlen(k), v, pay_val(v, seq, w->tid));
    /* versionstamped key c/vs/<stamp> = seq */
    memcpy(vk, "c/vs/", 5);
    memset(vk + 5, 0, KV_STAMP_LEN);
    vk[15] = 5; vk[16] = 0; vk[17] = 0; vk[18] = 0;
    uint8_t sv[8];
    kvt_be64(sv, seq);
    if (!rc) rc = kv_set_versionstamped_key(t, vk, 19, sv, 8);
    /* versionstamped value c/vv/<seq> = <stamp> */
    sprintf(k, "c/vv/%012lld", (long long)seq);
    memset(vv, 0, 14);
    if (!rc) rc = kv_set_versionstamped_value(t, k, strlen(k), vv, 14);
    if (!rc) rc = kv_atomic(t, KV_ADD, "c/total", 7, "\x01\x00\x00\x00\x00\x00\x00\x00", 8);
    if (!rc) rc = kv_commit(t);
    if (rc == 0) {
      cr_ack a;
      memset(&a, 0, sizeof a);
      a.seq = seq;
      a.tid = w->tid;
      if (kv_get_versionstamp(t, a.stamp)) _exit(4);
      if (write(w->fd, &a, sizeof a) != (ssize_t)sizeof a) _exit(5);
    } else if (!dv_err_retryable(rc)) {
      fprintf(stderr, "writer: commit failed: %s\n", dv_err_name(rc));
      _exit(6);
    }
    kv_txn_reset(t);
  }
  return NULL;
}

static void cr_writer_main(const char *dir, int fd, int64_t first_seq) {
  kv_db *db;
  int rc = kv_open_rocks(dir, NULL, &db);
  if (rc) {
    fprintf(stderr, "writer: open: %s\n", dv_err_name(rc));
    _exit(2);
  }
  cr_ack ready;
  memset(&ready, 0, sizeof ready);
  ready.seq = -1; /* "opened" */
  if (write(fd, &ready, sizeof ready) != (ssize_t)sizeof ready) _exit(5);
  static atomic_llong next;
  atomic_store(&next, first_seq);
  cr_writer w[CR_THREADS];
  pthread_t th[CR_THREADS];
  for (int i = 0; i < CR_THREADS; i++) {
    w[i].db = db;
    w[i].fd = fd;
    w[i].tid = i;
    w[i].next = &next;
    pthread_create(&th[i], NULL, cr_commit_loop, &w[i]);
  }
  for (;;) pause(); /* until SIGKILL */
}

/* ---- the verifier child ---------------------------------------------------- */

typedef struct cr_state {
  cr_ack *acks;                     /* every acknowledged commit so far */
  long nacks;
  uint8_t max_stamp[KV_STAMP_LEN];  /* newest stamp acked, stored or verified */
  int64_t max_db_version;           /* newest kv_db_version seen by a verifier */
} cr_state;

typedef struct cr_report {
  uint8_t max_stamp[KV_STAMP_LEN]; /* newest stamp found (incl. the verifier's own) */
  int64_t db_version;              /* kv_db_version at open */
  int64_t payloads;                /* transactions found */
} cr_report;

static int cmp_ack_seq(const void *a, const void *b) {
  int64_t x = ((const cr_ack *)a)->seq, y = ((const cr_ack *)b)->seq;
  return x < y ? -1 : x > y;
}

static void cr_verify(const char *dir, const cr_state *s, int fd) {
  kv_db *db;
  int rc = kv_open_rocks(dir, NULL, &db);
  ASSERTF(rc == 0, "verifier: open: %s", dv_err_name(rc));
  cr_report rep;
  memset(&rep, 0, sizeof rep);
  rep.db_version = kv_db_version(db);
  uint8_t acked_max[KV_STAMP_LEN];
  memcpy(acked_max, s->max_stamp, KV_STAMP_LEN);
  ASSERTF(rep.db_version >= kvt_stamp_version(acked_max),
          "db version %lld after restart is below an acknowledged or seen stamp's %lld",
          (long long)rep.db_version, (long long)kvt_stamp_version(acked_max));
  ASSERTF(rep.db_version >= s->max_db_version, "db version went back from %lld to %lld",
          (long long)s->max_db_version, (long long)rep.db_version);

  kv_txn *t;
  ASSERT_OK(kv_txn_begin(db, &t));
  /* Every payload, in sequence order, with its stamp-value key. */
  int64_t npay = 0, newest[CR_THREADS];
  for (int i = 0; i < CR_THREADS; i++) newest[i] = -1;
  kv_iter *it;
  kv_pair p;
  ASSERT_OK(kv_iter_begin(t, "c/pay/", 6, "c/pay0", 6, 0, KV_SNAPSHOT, &it));
  int64_t *seqs = malloc(sizeof(int64_t) * (size_t)(s->nacks + 100000));
  uint8_t(*stamps)[KV_STAMP_LEN] = malloc(KV_STAMP_LEN * (size_t)(s->nacks + 100000));
  while ((rc = kv_iter_next(it, &p)) == 1) {
    int64_t seq = atoll((const char *)p.key + 6);
    /* which thread wrote it: the payload encodes it */
    int tid = -1;
    for (int c = 0; c < CR_THREADS; c++) {
      uint8_t v[400];
      size_t n = pay_val(v, seq, c);
      if (n == p.val_len && !memcmp(v, p.val, n)) tid = c;
    }
    ASSERTF(tid >= 0, "payload of %lld is not any thread's (%zu bytes)", (long long)seq, p.val_len);
    if (seq > newest[tid]) newest[tid] = seq;
    seqs[npay] = seq;
    npay++;
  }
  ASSERT_EQ(rc, 0);
  kv_iter_free(it);
  rep.payloads = npay;
  for (int64_t i = 0; i < npay; i++) {
    char k[64];
    sprintf(k, "c/vv/%012lld", (long long)seqs[i]);
    const uint8_t *v;
    size_t vl;
    int found;
    ASSERT_OK(kv_get(t, k, strlen(k), KV_SNAPSHOT, &v, &vl, &found));
    ASSERTF(found && vl == KV_STAMP_LEN, "payload %lld without its stamped value", (long long)seqs[i]);
    memcpy(stamps[i], v, KV_STAMP_LEN);
    uint8_t vk[16];
    memcpy(vk, "c/vs/", 5);
    memcpy(vk + 5, v, KV_STAMP_LEN);
    ASSERT_OK(kv_get(t, vk, 15, KV_SNAPSHOT, &v, &vl, &found));
    ASSERTF(found && vl == 8 && kvt_from_be64(v) == seqs[i],
            "payload %lld: stamped key missing or wrong", (long long)seqs[i]);
    if (memcmp(stamps[i], rep.max_stamp, KV_STAMP_LEN) > 0) memcpy(rep.max_stamp, stamps[i], KV_STAMP_LEN);
  }
  /* No stamped key without its payload; the counter matches. */
  kv_pair *pairs;
  int n, more;
  ASSERT_OK(kv_get_range(t, "c/vs/", 5, "c/vs0", 5, 0, KV_SNAPSHOT, &pairs, &n, &more));
  ASSERT_EQ(n, npay);
  ASSERT_OK(kv_get_range(t, "c/vv/", 5, "c/vv0", 5, 0, KV_SNAPSHOT, &pairs, &n, &more));
  ASSERT_EQ(n, npay);
  const uint8_t *v;
  size_t vl;
  int found;
  ASSERT_OK(kv_get(t, "c/total", 7, KV_SNAPSHOT, &v, &vl, &found));
  int64_t total = 0;
  if (found) {
    ASSERT_EQ(vl, 8);
    for (int i = 7; i >= 0; i--) total = total << 8 | v[i];
  }
  ASSERTF(total == npay, "atomic counter %lld, %lld transactions stored", (long long)total, (long long)npay);
  for (int i = 0; i < CR_THREADS; i++) {
    char k[32];
    int64_t c;
    sprintf(k, "c/ctr/%d", i);
    ASSERT_OK(kvt_get_i64(t, k, KV_SNAPSHOT, -1, &c));
    /* The counter key was written with the newest payload of that thread
     * in the same transaction, so it may name a payload of an earlier
     * cycle's thread i only if this cycle's thread i committed nothing. */
    if (c >= 0) {
      char pk[64];
      pay_key(pk, c);
      ASSERT_OK(kv_get(t, pk, strlen(pk), KV_SNAPSHOT, &v, &vl, &found));
      ASSERTF(found, "counter of thread %d names %lld, whose payload is missing", i, (long long)c);
    }
    ASSERTF(c == newest[i], "counter of thread %d is %lld, its newest payload %lld", i, (long long)c,
            (long long)newest[i]);
  }
  /* Every acknowledged commit is there, with the acknowledged stamp. */
  cr_ack *acks = malloc(sizeof *acks * (size_t)(s->nacks ? s->nacks : 1));
  memcpy(acks, s->acks, sizeof *acks * (size_t)s->nacks);
  qsort(acks, (size_t)s->nacks, sizeof *acks, cmp_ack_seq);
  int64_t j = 0;
  for (long i = 0; i < s->nacks; i++) {
    while (j < npay && seqs[j] < acks[i].seq) j++;
    ASSERTF(j < npay && seqs[j] == acks[i].seq, "acknowledged commit %lld (thread %d) is lost",
            (long long)acks[i].seq, acks[i].tid);
    ASSERTF(!memcmp(stamps[j], acks[i].stamp, KV_STAMP_LEN), "commit %lld stored with stamp %s",
            (long long)acks[i].seq, test_hex(stamps[j], KV_STAMP_LEN));
  }
  kv_txn_reset(t);
  /* A new commit's stamp is above everything stored or acknowledged. */
  ASSERT_OK(kv_set(t, "c/verifier", 10, "x", 1));
  ASSERT_OK(kv_commit(t));
  uint8_t st[KV_STAMP_LEN];
  ASSERT_OK(kv_get_versionstamp(t, st));
  ASSERTF(memcmp(st, rep.max_stamp, KV_STAMP_LEN) > 0 && memcmp(st, acked_max, KV_STAMP_LEN) > 0,
          "new stamp %s not above the stored and acknowledged ones", test_hex(st, KV_STAMP_LEN));
  memcpy(rep.max_stamp, st, KV_STAMP_LEN);
  kv_txn_destroy(t);
  kv_close(db);
  free(acks);
  free(seqs);
  free(stamps);
  if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep) _exit(5);
}

/* ---- the test ------------------------------------------------------------- */

static int wait_child(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return st;
}

TEST(kv_crash_rocks) {
  const char *dir = kvt_newdir("crash");
  cr_state s;
  memset(&s, 0, sizeof s);
  s.acks = malloc(sizeof *s.acks * CR_MAX_ACKS);
  uint64_t rs = (uint64_t)getpid() * 2654435761u;
  int64_t next_seq = 0;
  long killed_mid_open = 0, total_payloads = 0;
  for (int cycle = 0; cycle < CR_CYCLES; cycle++) {
    int pfd[2];
    ASSERT_OK(pipe(pfd));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
      close(pfd[0]);
      cr_writer_main(dir, pfd[1], next_seq);
    }
    close(pfd[1]);
    int early = cycle % 5 == 4;
    int delay = early ? kvt_rand_below(&rs, 31) : 20 + kvt_rand_below(&rs, 281);
    int64_t deadline = early ? kvt_now_ms() + delay : -1;
    /* Read acks until the deadline, then kill. */
    uint8_t buf[sizeof(cr_ack) * 64];
    size_t have = 0;
    long cycle_acks = 0;
    int opened = 0, eof = 0, sent_kill = 0;
    while (!eof) {
      int64_t now = kvt_now_ms();
      if (!sent_kill && deadline >= 0 && now >= deadline) {
        kill(pid, SIGKILL);
        sent_kill = 1;
      }
      struct pollfd pf = {pfd[0], POLLIN, 0};
      int wait_ms = sent_kill ? 1000 : deadline < 0 ? 1000 : (int)(deadline - now);
      int pr = poll(&pf, 1, wait_ms < 0 ? 0 : wait_ms);
      if (pr < 0 && errno == EINTR) continue;
      if (pr == 0) {
        ASSERTF(deadline >= 0 || sent_kill, "writer never opened the store");
        continue;
      }
      ssize_t r = read(pfd[0], buf + have, sizeof buf - have);
      if (r < 0 && errno == EINTR) continue;
      ASSERT(r >= 0);
      if (r == 0) { eof = 1; break; }
      have += (size_t)r;
      size_t used = 0;
      while (have - used >= sizeof(cr_ack)) {
        cr_ack a;
        memcpy(&a, buf + used, sizeof a);
        used += sizeof a;
        if (a.seq < 0) {
          opened = 1;
          if (deadline < 0) deadline = kvt_now_ms() + delay;
          continue;
        }
        /* Stamps acknowledged after a restart are above everything before. */
        ASSERTF(memcmp(a.stamp, s.max_stamp, KV_STAMP_LEN) > 0,
                "stamp %s of cycle %d not above the maximum before the restart %s",
                test_hex(a.stamp, KV_STAMP_LEN), cycle, test_hex(s.max_stamp, KV_STAMP_LEN));
        ASSERT(s.nacks < CR_MAX_ACKS);
        s.acks[s.nacks++] = a;
        cycle_acks++;
        if (a.seq >= next_seq) next_seq = a.seq + 1;
      }
      memmove(buf, buf + used, have - used);
      have -= used;
    }
    close(pfd[0]);
    int st = wait_child(pid);
    ASSERTF(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "writer of cycle %d ended by itself (status %d)",
            cycle, st);
    if (!opened) killed_mid_open++;
    /* Unacknowledged sequence numbers may be stored: skip past all that
     * could have been taken (each thread holds at most one in flight). */
    next_seq += 1000000;
    /* All stamps from this cycle's acks count toward the maximum. */
    for (long i = s.nacks - cycle_acks; i < s.nacks; i++)
      if (memcmp(s.acks[i].stamp, s.max_stamp, KV_STAMP_LEN) > 0) memcpy(s.max_stamp, s.acks[i].stamp, KV_STAMP_LEN);

    /* Verify in a fresh child. */
    ASSERT_OK(pipe(pfd));
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
      close(pfd[0]);
      cr_verify(dir, &s, pfd[1]);
      _exit(0);
    }
    close(pfd[1]);
    cr_report rep;
    ssize_t r = read(pfd[0], &rep, sizeof rep);
    close(pfd[0]);
    st = wait_child(pid);
    ASSERTF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "verifier of cycle %d failed (status %d)", cycle, st);
    ASSERT_EQ(r, (ssize_t)sizeof rep);
    memcpy(s.max_stamp, rep.max_stamp, KV_STAMP_LEN);
    s.max_db_version = rep.db_version;
    total_payloads = rep.payloads;
    printf("cycle %2d: killed after %3d ms%s, %5ld acks, %7lld stored, version %lld\n", cycle, delay,
           early ? " (from fork)" : "", cycle_acks, (long long)rep.payloads, (long long)rep.db_version);
  }
  printf("%d cycles, %ld acknowledged commits, %ld transactions stored, %ld kills before open finished\n",
         CR_CYCLES, s.nacks, total_payloads, killed_mid_open);
  ASSERT(s.nacks > 100);
  free(s.acks);
}
