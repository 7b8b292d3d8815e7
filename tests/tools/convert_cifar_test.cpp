// convert_cifar_data: CIFAR-10 binary batches to the two LMDBs Caffe's cifar10 example reads:
// every record under its running key with its label and bytes as they are; bad inputs (a size
// that is not whole records, a label past 9, a missing batch) and existing outputs are errors
// before anything is written.
#include "backends/convert_cifar.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "crema.pb.h"
#include "data/data_test_util.h"
#include "data/lmdb_db.h"
#include "run_command.h"

namespace crema {
namespace {

constexpr size_t kRecord = 3073;

// Byte j of record r of file f: a pattern no two records share.
char pixel(int f, int r, size_t j) { return char((f * 31 + r * 7 + int(j)) % 251); }

// A batch file of n records, file number f (labels (f + r) % 10).
void write_batch(const std::string& path, int f, int n) {
  std::string bytes;
  for (int r = 0; r < n; ++r) {
    bytes += char((f + r) % 10);
    for (size_t j = 0; j < kRecord - 1; ++j) bytes += pixel(f, r, j);
  }
  std::ofstream(path, std::ios::binary) << bytes;
}

class ConvertCifar : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directory(in_);
    std::filesystem::create_directory(out_);
    for (int f = 1; f <= 5; ++f)
      write_batch(in_ + "/data_batch_" + std::to_string(f) + ".bin", f, 3);
    write_batch(in_ + "/test_batch.bin", 0, 2);
  }
  test::TempDir dir_;
  const std::string in_ = dir_.file("cifar"), out_ = dir_.file("out");
};

TEST_F(ConvertCifar, WritesEveryRecordUnderItsRunningKey) {
  EXPECT_EQ(convert_cifar(in_, out_), std::make_pair(size_t(15), size_t(2)));
  LmdbReader train(out_ + "/cifar10_train_lmdb");
  EXPECT_EQ(train.size(), 15u);
  for (int i = 0; i < 15; ++i, train.next()) {
    SCOPED_TRACE(i);
    const int f = 1 + i / 3, r = i % 3;
    char key[8];
    std::snprintf(key, sizeof key, "%05d", i);
    EXPECT_EQ(std::string(train.key()), key);
    Datum d;
    ASSERT_TRUE(d.ParseFromArray(train.value().data(), int(train.value().size())));
    EXPECT_EQ(d.channels(), 3);
    EXPECT_EQ(d.height(), 32);
    EXPECT_EQ(d.width(), 32);
    EXPECT_EQ(d.label(), (f + r) % 10);
    ASSERT_EQ(d.data().size(), kRecord - 1);
    EXPECT_EQ(d.data()[0], pixel(f, r, 0));
    EXPECT_EQ(d.data()[kRecord - 2], pixel(f, r, kRecord - 2));
  }
  EXPECT_EQ(LmdbReader(out_ + "/cifar10_test_lmdb").size(), 2u);
  // The tool itself, run again on the same folder, refuses to overwrite.
  const test::CommandResult again =
      test::run_command(std::string(CREMA_BINARY_DIR) + "/convert_cifar_data " + in_ + " " + out_);
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.output.find("cifar10_train_lmdb: already exists"), std::string::npos)
      << again.output;
}

TEST_F(ConvertCifar, BadBatchesAreErrorsBeforeAnythingIsWritten) {
  std::ofstream(in_ + "/data_batch_3.bin", std::ios::binary | std::ios::app) << "x";
  EXPECT_EQ(test::error_of([&] { convert_cifar(in_, out_); }),
            in_ +
                "/data_batch_3.bin: 9220 bytes is not a whole number of CIFAR-10 records "
                "(3073 bytes each: a label and 3x32x32 pixels)");
  write_batch(in_ + "/data_batch_3.bin", 3, 3);
  std::string bad(kRecord, '\0');
  bad[0] = char(10);
  std::ofstream(in_ + "/test_batch.bin", std::ios::binary) << bad;
  EXPECT_EQ(test::error_of([&] { convert_cifar(in_, out_); }),
            in_ + "/test_batch.bin: record 0 has label 10; CIFAR-10 labels are 0-9");
  std::filesystem::remove(in_ + "/data_batch_5.bin");
  EXPECT_NE(test::error_of([&] { convert_cifar(in_, out_); }).find("data_batch_5.bin"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out_ + "/cifar10_train_lmdb"));
}

}  // namespace
}  // namespace crema
