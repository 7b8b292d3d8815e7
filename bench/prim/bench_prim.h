// Shared machinery of bench_prim (crema primitives against cuDNN): options, cuDNN error checks
// and RAII descriptors, random device buffers, output comparison, CUDA-event timing with
// L2-defeating buffer rotation, and the markdown table rows.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::bench {

struct Options {
  std::string filter;  // run only rows whose "op layer pass" contains this
  int repeats = 30;    // timed samples per row (median reported)
  int batch = 0;       // > 0: this batch size for every problem instead of the defaults
  std::string crema_algo = "auto";  // conv: auto (what the layers use), find, or an algo name
  // Pooling, softmax and LRN rows: auto, all (auto, then every row that runs the layer), or one.
  std::string pool_algo = "auto", softmax_algo = "auto", lrn_algo = "auto";
  std::string math = "fp32";  // conv: fp32 (strict on both sides), tf32, bf16 or fp16
  bool nhwc = false;          // conv: activations channels last on both sides (--layout=nhwc)
};

// Everything a row needs: both libraries on one stream, so events time both the same way.
struct Context {
  prim::Handle& h;
  cudnnHandle_t dnn;
  cudaStream_t stream;
  Options opt;
  size_t l2_bytes;
};

// ---- errors -------------------------------------------------------------------------------

void check_cuda(cudaError_t e, const char* what);
void check_cudnn(cudnnStatus_t s, const char* what);
#define BENCH_CUDA(call) ::crema::bench::check_cuda((call), #call)
#define BENCH_CUDNN(call) ::crema::bench::check_cudnn((call), #call)

// ---- cuDNN descriptors ----------------------------------------------------------------------

// A cuDNN object (a handle or a descriptor) owned by its wrapper: Create makes it, Destroy
// releases it. The wrappers below derive from it and set the object up in their constructors.
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnObject {
 public:
  CudnnObject() { check_cudnn(Create(&d_), "cudnnCreate"); }
  ~CudnnObject() { Destroy(d_); }
  CudnnObject(const CudnnObject&) = delete;
  CudnnObject& operator=(const CudnnObject&) = delete;
  T get() const { return d_; }

 protected:
  T d_ = nullptr;
};

class TensorD : public CudnnObject<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                   cudnnDestroyTensorDescriptor> {
 public:
  // packed NCHW (or NHWC), float unless told
  TensorD(int n, int c, int h, int w, cudnnDataType_t t = CUDNN_DATA_FLOAT, bool nhwc = false);
};

class FilterD : public CudnnObject<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                   cudnnDestroyFilterDescriptor> {
 public:
  // packed KCRS (or KRSC)
  FilterD(int k, int c, int r, int s, cudnnDataType_t t = CUDNN_DATA_FLOAT, bool nhwc = false);
};

// ---- buffers ------------------------------------------------------------------------------

// count floats uniform in (-1, 1), never exactly 0 (a hash of seed and index, so reproducible),
// copied to the GPU. distinct_plane > 1: the values of each run of that many floats (an image
// plane) are all different, so max pooling sees no ties.
prim::DeviceBuffer random_buffer(int64_t count, uint64_t seed, int64_t distinct_plane = 0);
// count floats on the GPU, filled with NaN so an output that is never written fails the check.
prim::DeviceBuffer nan_buffer(int64_t count);
// The first count floats of a device buffer, after the stream has finished.
std::vector<float> to_host(cudaStream_t s, const void* p, int64_t count);

// A device copy of b.
prim::DeviceBuffer copy_of(const prim::DeviceBuffer& b);

inline float* f32(const prim::DeviceBuffer& b) { return static_cast<float*>(b.get()); }

// Largest |a - ref| / max(|ref|, mean |ref|) over the elements: relative where values are of
// typical size, absolute against the typical size where cancellation makes ref tiny (a
// different summation order moves such values by much more than their own magnitude). NaN or
// infinity anywhere gives infinity.
double max_rel_err(const std::vector<float>& a, const std::vector<float>& ref);

// ---- timing -------------------------------------------------------------------------------

// Extra copies of a row's buffers so that consecutive timed calls touch different memory when a
// row's working set would otherwise stay in L2 (the layers of a real net do not find their
// inputs in L2). Copy 0 is the original; the others start as device copies of it.
class Rotation {
 public:
  // bufs: (pointer, bytes) of every input and output a call touches.
  Rotation(const std::vector<std::pair<void*, size_t>>& bufs, size_t l2_bytes);
  int copies() const { return copies_; }
  // Buffer b of copy i % copies().
  float* at(int b, int i) const;

 private:
  int copies_ = 1;
  std::vector<void*> base_;
  std::vector<prim::DeviceBuffer> extra_;  // copy j >= 1 of buffer b at (j - 1) * nbufs + b
};

// Median milliseconds of one call of f(i), i counting calls, all queued on the stream: a few
// warm-up calls, then `repeats` samples, each timed with CUDA events around enough calls to
// last about a millisecond. Calls under a millisecond are recorded once into a CUDA graph of
// such a group and the graph replayed, so the host's launch rate does not bound them (calls that
// cannot be recorded are timed one launch at a time).
double median_ms(cudaStream_t s, int repeats, const std::function<void(int)>& f);
// The same for several functions compared in one row (crema, cuDNN, a copy), their samples
// taken in turn; one median per function, in order.
std::vector<double> median_ms(cudaStream_t s, int repeats,
                              const std::vector<std::function<void(int)>>& fs);

// ---- table --------------------------------------------------------------------------------

struct Row {
  Row(std::string op_, std::string layer_, std::string pass_, std::string crema_algo_ = "",
      std::string cudnn_algo_ = "")
      : op(std::move(op_)),
        layer(std::move(layer_)),
        pass(std::move(pass_)),
        crema_algo(std::move(crema_algo_)),
        cudnn_algo(std::move(cudnn_algo_)) {}
  std::string op, layer, pass;
  std::string crema_algo, cudnn_algo;
  double crema_ms = 0, cudnn_ms = 0;  // cudnn_ms 0: no cuDNN counterpart
  double flops = 0;                   // > 0: compute-bound, rate in TFLOP/s
  double bytes = 0;                   // otherwise: memory-bound, rate in GB/s
  double copy_ms = 0;                 // memory-bound: a device copy moving the same bytes
  double err = 0;
};

bool selected(const Options& o, const std::string& op, const std::string& layer,
              const std::string& pass);
void print_header();
void print_row(const Row& r);
void print_failed(const std::string& op, const std::string& layer, const std::string& pass,
                  const std::string& why);

// A layer's tensor without its batch size, which batch_for gives.
struct Shape {
  const char* name;
  int c, h, w;
};

// Realistic training batch of a problem's net (LeNet 64, CaffeNet 256, GoogLeNet and ResNet-50
// 128, ...), or the --batch override.
int batch_for(const Options& o, const std::string& name);

// Throws when err exceeds tol, naming the row; the caller turns it into a failed row.
void require_close(double err, double tol, const char* what);

// ---- rows ---------------------------------------------------------------------------------

// One implementation of an op: inputs `in` into the output `out`, device pointers (a byte buffer
// such as a dropout mask travels as a float pointer too).
using Impl = std::function<void(float* const* in, float* out)>;
constexpr int kMaxInputs = 4;

// How bench_row checks and starts a row's outputs.
struct RowCheck {
  double tol = 1e-5;                         // largest max_rel_err against cuDNN's output
  const prim::DeviceBuffer* init = nullptr;  // outputs start as copies of it (ops that add into
                                             // their output); else NaN, so unwritten cells fail
};

// Runs crema and cuDNN once on the inputs, compares their outputs (cuDNN's is the reference),
// and, when `timed`, times both (time_row). Returns crema's output, the input of a backward row
// (for an op that adds into its output, the timing has added into it again).
prim::DeviceBuffer bench_row(Context& c, Row row, bool timed,
                             const std::vector<const prim::DeviceBuffer*>& in, int64_t out_count,
                             const Impl& crema, const Impl& cudnn, const RowCheck& check = {});

// Times crema, and cuDNN when `cudnn` is set, over rotated copies of the inputs and of each one's
// output buffer, and prints the row. The outputs' contents are left as the timing leaves them.
void time_row(Context& c, Row row, const std::vector<const prim::DeviceBuffer*>& in,
              const prim::DeviceBuffer& out_crema, const prim::DeviceBuffer& out_dnn,
              const Impl& crema, const Impl& cudnn);

// Bytes of that many floats each.
double bytes_of(std::initializer_list<int64_t> counts);

// Runs fn, printing a failed row for each selected pass when it throws.
void guarded(const std::string& op, const std::string& layer, bool want_fwd, bool want_bwd,
             const std::function<void()>& fn);

// Rows of each op family.
void run_conv(Context& c);
void run_pool(Context& c);
void run_lrn(Context& c);
void run_softmax(Context& c);
void run_relu(Context& c);
void run_bias(Context& c);
void run_dropout(Context& c);
void run_solver_update(Context& c);

}  // namespace crema::bench
