// Where a data layer stands (Layer::reader_state) and the way back (restore_reader_state): a
// layer built afresh under the same seed and given the state of another after some batches hands
// out the batches the other hands out next -- records, labels, random crops and flips alike --
// for LMDB and for a shuffled, skipped image list, across wrap-arounds. Bad states are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "core/rng.h"
#include "data/data_test_util.h"
#include "data/image_test_util.h"
#include "layers/data_layer.h"
#include "layers/image_data_layer.h"

namespace crema {
namespace {

using test::TempDir;

// A layer of p run for `before` batches and asked for its state, and a fresh layer of p under
// the same seed given that state: the next `after` batches of both.
template <typename L>
void expect_resumes(const LayerParameter& p, int before, int after) {
  seed_thread_rng(7);
  test::SourceRun<L> first(p);
  first.batches(before);
  DataReaderState state;
  ASSERT_TRUE(first.layer.reader_state(&state));
  const std::vector<float> want = first.batches(after);

  seed_thread_rng(7);
  test::SourceRun<L> second(p);
  second.batches(1);  // a batch of its own first: the state must undo it
  second.layer.restore_reader_state(state);
  EXPECT_EQ(second.batches(after), want);
}

void randomize_transform(LayerParameter* p) {
  p->set_phase(TRAIN);
  p->mutable_transform_param()->set_crop_size(2);
  p->mutable_transform_param()->set_mirror(true);
}

TEST(ReaderState, DataLayerResumesItsRecordsCropsAndFlips) {
  TempDir dir;
  test::write_datum_lmdb(dir.file("db"), 10, 1, 3, 3);
  LayerParameter p;
  p.set_name("data");
  p.set_type("Data");
  p.mutable_data_param()->set_source(dir.file("db"));
  p.mutable_data_param()->set_batch_size(4);
  p.mutable_data_param()->set_backend(DataParameter::LMDB);
  p.mutable_data_param()->set_rand_skip(7);
  randomize_transform(&p);
  expect_resumes<DataLayer<float>>(p, 0, 3);
  expect_resumes<DataLayer<float>>(p, 3, 4);  // 12 records read of 10: past a wrap
}

TEST(ReaderState, ImageDataResumesItsShuffledEpochs) {
  CREMA_SKIP_WITHOUT_OPENCV();
  TempDir dir;
  std::string list;
  for (int i = 0; i < 7; ++i) {
    const std::string name = "img" + std::to_string(i) + ".png";
    test::write_test_image(dir.file(name), i, 3, 3, 1);
    list += name + " " + std::to_string(i) + "\n";
  }
  test::write_text(dir.file("list.txt"), list);
  LayerParameter p;
  p.set_name("img");
  p.set_type("ImageData");
  p.mutable_image_data_param()->set_source(dir.file("list.txt"));
  p.mutable_image_data_param()->set_root_folder(dir.file(""));
  p.mutable_image_data_param()->set_batch_size(3);
  p.mutable_image_data_param()->set_is_color(false);
  p.mutable_image_data_param()->set_shuffle(true);
  p.mutable_image_data_param()->set_rand_skip(5);
  randomize_transform(&p);
  expect_resumes<ImageDataLayer<float>>(p, 2, 5);  // through three epochs of 7
}

TEST(ReaderState, ABadStateIsRefusedNamingTheLayer) {
  TempDir dir;
  test::write_datum_lmdb(dir.file("db"), 4, 1, 2, 2);
  LayerParameter p;
  p.set_name("data");
  p.set_type("Data");
  p.set_phase(TRAIN);
  p.mutable_data_param()->set_source(dir.file("db"));
  p.mutable_data_param()->set_batch_size(2);
  test::SourceRun<DataLayer<float>> run(p);
  DataReaderState state;
  state.set_records(3);
  state.set_transform_random("12 not a generator");
  EXPECT_EQ(test::error_of([&] { run.layer.restore_reader_state(state); }),
            "layer data (Data): cannot resume reading: transform_random: not a random "
            "generator's state");
  // The layer reads on after the refusal... from a good state.
  ASSERT_TRUE(run.layer.reader_state(&state));
  run.layer.restore_reader_state(state);
  EXPECT_EQ(run.batches(1).size(), 2u * 4 + 2);
}

}  // namespace
}  // namespace crema
