// LevelDB reader and writer; without libleveldb, leveldb_available() says so.
#include "data/leveldb_db.h"

#include "core/errors.h"
#include "data/leveldb_manifest.h"

#ifdef CREMA_WITH_LEVELDB
#include <leveldb/db.h>
#include <leveldb/write_batch.h>
#endif

namespace crema {

#ifdef CREMA_WITH_LEVELDB

bool leveldb_available() { return true; }

namespace {

[[noreturn]] void leveldb_fail(const std::string& path, const char* what,
                               const leveldb::Status& s) {
  fail(path, ": ", what, ": ", s.ToString());
}

class LevelDbReader final : public RecordReader {
 public:
  explicit LevelDbReader(const std::string& path) : path_(path) {
    check_leveldb_folder(path);
    leveldb::Options options;
    options.create_if_missing = false;
    options.paranoid_checks = true;
    leveldb::DB* db = nullptr;
    const leveldb::Status s = leveldb::DB::Open(options, path, &db);
    if (!s.ok()) leveldb_fail(path, "cannot open LevelDB", s);
    db_.reset(db);
    leveldb::ReadOptions read;
    read.verify_checksums = true;
    read.fill_cache = false;
    it_.reset(db_->NewIterator(read));
    for (it_->SeekToFirst(); it_->Valid(); it_->Next()) ++entries_;
    check(it_->status());
    if (entries_ == 0) fail(path, ": the LevelDB holds no records");
    rewind();
  }
  ~LevelDbReader() override {
    it_.reset();  // before the database it reads
    db_.reset();
  }

  std::string_view key() const override { return key_; }
  std::string_view value() const override { return value_; }
  bool next() override {
    it_->Next();
    if (it_->Valid()) {
      settle();
      return false;
    }
    check(it_->status());
    rewind();
    return true;
  }
  void rewind() override {
    it_->SeekToFirst();
    if (!it_->Valid()) {
      check(it_->status());
      fail(path_, ": the LevelDB holds no records");
    }
    settle();
  }
  size_t size() const override { return entries_; }
  const std::string& path() const override { return path_; }

 private:
  void settle() {
    const leveldb::Slice k = it_->key(), v = it_->value();
    key_ = std::string_view(k.data(), k.size());
    value_ = std::string_view(v.data(), v.size());
  }
  void check(const leveldb::Status& s) const {
    if (!s.ok()) leveldb_fail(path_, "corrupt LevelDB", s);
  }

  std::string path_;
  std::unique_ptr<leveldb::DB> db_;
  std::unique_ptr<leveldb::Iterator> it_;
  size_t entries_ = 0;
  std::string_view key_, value_;
};

class LevelDbWriter final : public RecordWriter {
 public:
  explicit LevelDbWriter(const std::string& path) : path_(path) {
    leveldb::Options options;
    options.create_if_missing = true;
    options.error_if_exists = true;
    options.write_buffer_size = size_t(256) << 20;  // Caffe's: fewer, larger table files
    leveldb::DB* db = nullptr;
    const leveldb::Status s = leveldb::DB::Open(options, path, &db);
    if (!s.ok()) leveldb_fail(path, "cannot create LevelDB", s);
    db_.reset(db);
  }
  void put(std::string_view key, std::string_view value) override {
    batch_.Put(leveldb::Slice(key.data(), key.size()), leveldb::Slice(value.data(), value.size()));
    if (++pending_ >= kBatch) commit();
  }
  void commit() override {
    if (pending_ == 0) return;
    const leveldb::Status s = db_->Write(leveldb::WriteOptions(), &batch_);
    if (!s.ok()) leveldb_fail(path_, "cannot write LevelDB", s);
    batch_.Clear();
    pending_ = 0;
  }

 private:
  static constexpr size_t kBatch = 1000;
  std::string path_;
  std::unique_ptr<leveldb::DB> db_;
  leveldb::WriteBatch batch_;
  size_t pending_ = 0;
};

}  // namespace

std::unique_ptr<RecordReader> open_leveldb_reader(const std::string& path) {
  return std::make_unique<LevelDbReader>(path);
}

std::unique_ptr<RecordWriter> create_leveldb_writer(const std::string& path) {
  return std::make_unique<LevelDbWriter>(path);
}

#else

bool leveldb_available() { return false; }

std::unique_ptr<RecordReader> open_leveldb_reader(const std::string& path) {
  fail(path, ": built without LevelDB");
}

std::unique_ptr<RecordWriter> create_leveldb_writer(const std::string& path) {
  fail(path, ": built without LevelDB");
}

#endif

}  // namespace crema
