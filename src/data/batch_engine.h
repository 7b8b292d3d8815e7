// BatchEngine: the data layers' prefetch. One reader thread takes the source's records in order
// (the DB cursor, the image list) and hands them to a pool of workers that decode and transform
// them, each into its own place of its batch; `depth` batches are in flight at once, and the
// consumer receives them in the order they were read. Since every record lands in a place fixed
// by the reader and any randomness is drawn per record (DataTransformer), the batches are the
// same, bit for bit, whatever the number of workers or the order in which they finish.
//
// Errors: a record the reader or a worker cannot take (corrupt bytes, a missing file) fails its
// batch. The reader starts no batch after a failed one; the consumer receives the batches read
// before it whole, then the failed batch's first error (in record order), rethrown as
// crema::Error by next() -- and by every later next(). The destructor stops the threads (each
// finishes at most the record in hand) and joins them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/jpeg_codec.h"
#include "primitives/crop_images.h"
#include "primitives/handle.h"

namespace crema {

// A record a decode worker left for the GPU: the file, its checked header, and what names it.
struct GpuJpeg {
  std::string bytes;
  JpegHeader header;
  std::string where;
  uint64_t number = 0;  // the example's number, which draws its crop and flip
};

// How a place of a batch reaches a layer's GPU: as the values a worker transformed, as a JPEG
// file the GPU decodes, or as 8-bit pixels a worker decoded, transformed on the GPU.
enum class Arrival : char { kValues, kJpeg, kPixels };

struct HostBatch {
  // Pinned where a GPU is visible, so that uploads can run asynchronously.
  std::vector<float, prim::PinnedAllocator<float>> data;
  std::vector<float, prim::PinnedAllocator<float>> label;
  // For layers on a GPU: the batch's device copy, uploaded on the layer's upload stream
  // (`uploaded` marks its end), and `consumed` marking the end of the copy into the layer's tops,
  // after which the batch may be refilled.
  prim::DeviceBuffer device_data, device_label;
  prim::Event uploaded, consumed;
  // Records passed by the layer's source once this batch was read (what a snapshot taken after
  // the batch was used records).
  uint64_t records_after = 0;
  // For a layer on a GPU whose records are JPEGs (data/gpu_batch_decoder.h), per place: how it
  // arrives, the file the GPU decodes there, its window; the 8-bit pixels the workers decoded
  // (one image's bytes per place) and their upload; and the images decoded on the GPU, the
  // batch's own so that decoding the next batch never writes what this one's transform reads.
  int gpu_places = 0;  // places [0, gpu_places) the GPU may decode
  std::vector<Arrival> arrivals;
  std::vector<GpuJpeg> gpu_jpegs;
  std::vector<prim::ImageCrop, prim::PinnedAllocator<prim::ImageCrop>> gpu_crops;
  std::vector<uint8_t, prim::PinnedAllocator<uint8_t>> pixels;
  prim::DeviceBuffer device_pixels, gpu_pixels;
};

// One record as the reader hands it to a worker: the raw bytes and whatever names it, copied out
// of the source so that the reader may move on. Which fields a source uses is its own affair.
struct SourceRecord {
  uint64_t number = 0;  // counted from the layer's start, skipped records included
  std::string key;      // e.g. the DB key
  std::string value;    // e.g. the serialized Datum
  size_t entry = 0;     // e.g. the image list's entry
};

class BatchEngine {
 public:
  struct Hooks {
    // Runs first on every engine thread (e.g. to make the layer's GPU current). May be empty.
    std::function<void()> thread_start;
    // Reader thread, before a batch is read into (wait for its last upload to be consumed, size
    // its buffers).
    std::function<void(HostBatch* batch)> begin_batch;
    // Reader thread, in order: the next record of the source. Throws crema::Error on bad data.
    std::function<void(SourceRecord* record)> read;
    // Reader thread, once the batch's records are all read (e.g. note records_after).
    std::function<void(HostBatch* batch)> end_read;
    // Worker `worker` (0 .. workers-1): decodes and transforms record into place `slot` of batch.
    // Throws crema::Error on bad data.
    std::function<void(int worker, const SourceRecord& record, int slot, HostBatch* batch)> process;
    // The worker that completes a batch, one at a time (e.g. its upload). May be empty.
    std::function<void(HostBatch* batch)> finish;
  };

  BatchEngine(size_t depth, int batch_size, int workers, Hooks hooks);
  ~BatchEngine();
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;

  // Blocks until the next batch in order is complete and returns it; the batch stays the
  // caller's until release(). Throws the first error of a failed batch as crema::Error.
  HostBatch* next();
  void release(HostBatch* batch);

  int workers() const { return int(workers_.size()); }
  // The time the workers have spent waiting for records since they started, summed over them
  // (what is left of their time went to records and finishes).
  std::chrono::nanoseconds workers_idle();

 private:
  struct Slot {
    HostBatch batch;
    std::vector<SourceRecord> records;
    int pending = 0;         // records read and not yet processed
    bool read_done = false;  // the reader has read all it will into this batch
    bool finished = false;   // complete: processed and finished, or failed
    std::exception_ptr error;
    int error_place = 0;  // the record whose error `error` is: the first in order wins
  };
  struct Job {
    Slot* slot;
    int place;
  };

  void read_loop();
  void work_loop(int worker);
  // Under mutex_: records err for place `place` of slot; stops the reader from starting more.
  void fail_locked(Slot* slot, int place, std::exception_ptr err);
  // Under mutex_, once slot has nothing left to read or process: true when its finish hook is
  // still to run (by the caller, outside the lock, then mark_finished); a failed slot is finished
  // at once.
  bool settle_locked(Slot* slot);
  void run_finish(Slot* slot);
  [[noreturn]] static void rethrow(std::exception_ptr err);
  // Under mutex_: the idle time counted up to now, and `change` workers more waiting from now.
  void count_idle_locked(int change);

  const int batch_size_;
  Hooks hooks_;
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable reader_cv_, worker_cv_, consumer_cv_;
  std::deque<Slot*> free_;
  std::deque<Slot*> in_flight_;  // in the order read: next() returns the front
  std::deque<Job> jobs_;
  std::exception_ptr failed_;  // the error the consumer met, rethrown ever after
  bool reader_failed_ = false;
  bool stop_ = false;
  std::mutex finish_mutex_;
  // workers_idle(), under mutex_: the time summed until idle_since_, and the workers waiting
  // since.
  std::chrono::steady_clock::duration idle_{0};
  std::chrono::steady_clock::time_point idle_since_ = std::chrono::steady_clock::now();
  int idle_workers_ = 0;
  // Declared last: joined by the destructor before anything they use goes away.
  std::thread reader_;
  std::vector<std::thread> workers_;
};

// The cores this process may run on: those its CPU affinity allows (taskset, a container's
// cpuset), else the machine's.
int usable_cores();

// The number of decode workers a data layer uses when its parameter leaves it at 0: the usable
// cores less one for each training thread (`replicas` of them), shared among the replicas, and at
// least 1.
int default_decode_workers(int replicas);

}  // namespace crema
