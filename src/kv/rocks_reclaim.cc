/* rocks_reclaim.cc — what rocks.c needs of RocksDB beyond its C API
 * (Debian 12's librocksdb 7.8): giving the space of a deleted range back
 * (DeleteFilesInRange, then a forced CompactRange of it), stopping such
 * a compaction when the store closes (DisableManualCompaction), and the
 * library's version (the C API has no call for it).
 *
 * rocksdb_t is the C API's handle; c.cc defines it as `struct rocksdb_t {
 * DB* rep; }` (unchanged since the C API began), so the DB is its first
 * member. This is the only C++ in divan and the only place that relies on
 * that layout. Not here: anything else of the engine (rocks.c). */
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/version.h>

struct rocksdb_t {
  rocksdb::DB *rep;
};

/* Give back the space of [b, e) after a range was deleted (a dropped
 * database): table files wholly inside it are deleted at once
 * (DeleteFilesInRange), the rest compacted so the range tombstone drops the
 * data. Runs for as long as the compaction takes; kv__rocks_cancel stops it. */
extern "C" int kv__rocks_reclaim(rocksdb_t *db, const char *b, size_t bl, const char *e, size_t el) {
  rocksdb::Slice lo(b, bl), hi(e, el);
  rocksdb::Status s = rocksdb::DeleteFilesInRange(db->rep, db->rep->DefaultColumnFamily(), &lo, &hi);
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  rocksdb::Status c = db->rep->CompactRange(o, &lo, &hi);
  return s.ok() && c.ok() ? 0 : -1;
}

/* Stop manual compactions (the store is closing). */
extern "C" void kv__rocks_cancel(rocksdb_t *db) { db->rep->DisableManualCompaction(); }

/* The version of the RocksDB headers built against ("7.8.3"). */
extern "C" const char *kv__rocks_version(void) {
#define KV__STR2(x) #x
#define KV__STR(x) KV__STR2(x)
  return KV__STR(ROCKSDB_MAJOR) "." KV__STR(ROCKSDB_MINOR) "." KV__STR(ROCKSDB_PATCH);
}
