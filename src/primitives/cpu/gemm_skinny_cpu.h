// A GEMM kernel for C = alpha * A * B^T + beta * C with few rows of A (an InnerProduct forward at
// a small batch: CaffeNet's fc6 at batch 10 is 10 x 4096 x 9216). BLAS packs B before
// multiplying, which for such shapes costs more than the product: it reads and writes fc6's
// 151 MB of weights once more for 0.75 GFLOP. This kernel reads each row of B once, straight
// from memory, and multiplies it with every row of A, which stays in cache.
#pragma once

namespace crema::prim::cpu {

// Rows of A up to which the skinny kernel beats BLAS's packing (measured on fc6/fc7 shapes).
inline constexpr int kSkinnyMaxRows = 16;

// C[i][j] = alpha * dot(A row i, B row j) + beta * C[i][j] for i < m and j in [j_begin, j_end);
// beta == 0 never reads C. A is m x k (lda), B is n x k (ldb), C is m x n (ldc), all row-major.
void gemm_skinny_nt(int m, int j_begin, int j_end, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace crema::prim::cpu
