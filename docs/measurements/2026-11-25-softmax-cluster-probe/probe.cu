// Probe: softmax of long rows with a thread-block cluster per row (DSMEM reduction).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <cuda_pipeline.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ __forceinline__ float warp_max(float v){ for(int o=16;o;o>>=1) v=fmaxf(v,__shfl_xor_sync(~0u,v,o)); return v;}
__device__ __forceinline__ float warp_sum(float v){ for(int o=16;o;o>>=1) v+=__shfl_xor_sync(~0u,v,o); return v;}

template<int C>
__global__ void sm_cluster(const float* __restrict__ in, float* __restrict__ out, int cols) {
  extern __shared__ __align__(16) float4 sm4[];
  __shared__ float red[32];
  __shared__ float pair[2];
  cg::cluster_group cl = cg::this_cluster();
  int rank = C > 1 ? cl.block_rank() : 0;
  int row = blockIdx.x / C;
  int groups = cols / 4;
  int per = (groups + C - 1) / C;
  int g0 = rank * per, g1 = min(groups, g0 + per), n = g1 - g0;
  const float4* src = (const float4*)(in + (size_t)row * cols) + g0;
  float4* dst = (float4*)(out + (size_t)row * cols) + g0;
  int t = threadIdx.x, T = blockDim.x, w = t / 32, l = t % 32, W = T / 32;
  for (int g = t; g < n; g += T) __pipeline_memcpy_async(&sm4[g], &src[g], 16);
  __pipeline_commit(); __pipeline_wait_prior(0);
  float m = -INFINITY;
  for (int g = t; g < n; g += T) { float4 v = sm4[g]; m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))); }
  m = warp_max(m); if (l == 0) red[w] = m; __syncthreads();
  m = l < W ? red[l] : -INFINITY; m = warp_max(m);
  float s = 0.f;
  for (int g = t; g < n; g += T) { float4 v = sm4[g]; s += __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m); }
  s = warp_sum(s); __syncthreads(); if (l == 0) red[w] = s; __syncthreads();
  s = l < W ? red[l] : 0.f; s = warp_sum(s);
  if (C > 1) {
    if (t == 0) { pair[0] = m; pair[1] = s; }
    cl.sync();
    float M = -INFINITY, S = 0.f;
    float pm[C], ps[C];
    #pragma unroll
    for (int r = 0; r < C; r++) { float* p = cl.map_shared_rank(pair, r); pm[r] = p[0]; ps[r] = p[1]; M = fmaxf(M, pm[r]); }
    #pragma unroll
    for (int r = 0; r < C; r++) S += ps[r] * __expf(pm[r] - M);
    m = M; s = S;
    // arrive now; wait before exit
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  }
  float inv = 1.f / s;
  for (int g = t; g < n; g += T) { float4 v = sm4[g];
    v.x = __expf(v.x - m) * inv; v.y = __expf(v.y - m) * inv; v.z = __expf(v.z - m) * inv; v.w = __expf(v.w - m) * inv;
    __stcs(&dst[g], v); }
  if (C > 1) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

#define CK(x) do{cudaError_t e=(x); if(e){printf("ERR %s line %d: %s\n",#x,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

template<int C>
float run(const float* in, float* out, int rows, int cols, int T, int reps, bool& ok) {
  int groups = cols / 4, per = (groups + C - 1) / C;
  size_t smem = (size_t)per * 16;
  if (smem > 227 * 1024) { ok = false; return 0; }
  ok = true;
  CK(cudaFuncSetAttribute(sm_cluster<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  if (C > 8) CK(cudaFuncSetAttribute(sm_cluster<C>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(rows * C); cfg.blockDim = dim3(T); cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int i = 0; i < reps + 3; i++) {
    cudaEventRecord(a);
    CK(cudaLaunchKernelEx(&cfg, sm_cluster<C>, in, out, cols));
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 3) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
}


// Persistent clusters, double-buffered: while a row is reduced and written,
// the next row's loads are in flight.
template<int C>
__global__ void sm_pers(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  extern __shared__ __align__(16) float4 sm4[];
  __shared__ float red[32];
  __shared__ float pair[2][2];
  cg::cluster_group cl = cg::this_cluster();
  int rank = C > 1 ? cl.block_rank() : 0;
  int cluster = blockIdx.x / C, nclusters = gridDim.x / C;
  int groups = cols / 4;
  int per = (groups + C - 1) / C;
  int g0 = rank * per, g1 = min(groups, g0 + per), n = g1 - g0;
  int t = threadIdx.x, T = blockDim.x, w = t / 32, l = t % 32, W = T / 32;
  auto issue = [&](int row, int b) {
    if (row < rows) { const float4* src = (const float4*)(in + (size_t)row * cols) + g0;
      for (int g = t; g < n; g += T) __pipeline_memcpy_async(&sm4[b * per + g], &src[g], 16); }
    __pipeline_commit();
  };
  issue(cluster, 0);
  int i = 0;
  for (int row = cluster; row < rows; row += nclusters, i++) {
    int b = i & 1;
    issue(row + nclusters, b ^ 1);
    __pipeline_wait_prior(1);
    float4* buf = &sm4[b * per];
    float m = -INFINITY;
    for (int g = t; g < n; g += T) { float4 v = buf[g]; m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))); }
    m = warp_max(m); if (l == 0) red[w] = m; __syncthreads();
    m = l < W ? red[l] : -INFINITY; m = warp_max(m);
    float s = 0.f;
    for (int g = t; g < n; g += T) { float4 v = buf[g]; s += __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m); }
    s = warp_sum(s); __syncthreads(); if (l == 0) red[w] = s; __syncthreads();
    s = l < W ? red[l] : 0.f; s = warp_sum(s);
    if (C > 1) {
      if (t == 0) { pair[b][0] = m; pair[b][1] = s; }
      cl.sync();
      float M = -INFINITY, S = 0.f, pm[C], ps[C];
      #pragma unroll
      for (int r = 0; r < C; r++) { float* p = cl.map_shared_rank(&pair[b][0], r); pm[r] = p[0]; ps[r] = p[1]; M = fmaxf(M, pm[r]); }
      #pragma unroll
      for (int r = 0; r < C; r++) S += ps[r] * __expf(pm[r] - M);
      m = M; s = S;
    }
    float inv = 1.f / s;
    float4* dst = (float4*)(out + (size_t)row * cols) + g0;
    for (int g = t; g < n; g += T) { float4 v = buf[g];
      v.x = __expf(v.x - m) * inv; v.y = __expf(v.y - m) * inv; v.z = __expf(v.z - m) * inv; v.w = __expf(v.w - m) * inv;
      __stcs(&dst[g], v); }
    __syncthreads(); // red[] reuse
  }
  if (C > 1) cl.sync();
}

template<int C>
float runp(const float* in, float* out, int rows, int cols, int T, int reps, bool& ok, int& ctas) {
  int groups = cols / 4, per = (groups + C - 1) / C;
  size_t smem = (size_t)per * 32;
  if (smem > 227 * 1024) { ok = false; return 0; }
  ok = true;
  CK(cudaFuncSetAttribute(sm_pers<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  if (C > 8) CK(cudaFuncSetAttribute(sm_pers<C>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(T); cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  cfg.gridDim = dim3(132 * 16);
  int clusters = 0; CK(cudaOccupancyMaxActiveClusters(&clusters, (void*)sm_pers<C>, &cfg));
  if (clusters == 0) { ok = false; return 0; }
  clusters = std::min(clusters, rows);
  cfg.gridDim = dim3(clusters * C); ctas = clusters * C;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int i = 0; i < reps + 3; i++) {
    cudaEventRecord(a);
    CK(cudaLaunchKernelEx(&cfg, sm_pers<C>, in, out, rows, cols));
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 3) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
}


// Row part held in registers (as block_per_row), a cluster per row.
template<int C, int V, int MODE>
__global__ void sm_reg(const float* __restrict__ in, float* __restrict__ out, int cols) {
  __shared__ float red[32];
  __shared__ float pair[2];
  cg::cluster_group cl = cg::this_cluster();
  int rank = MODE == 2 ? blockIdx.x % C : (C > 1 ? cl.block_rank() : 0);
  int row = blockIdx.x / C;
  int groups = cols / 4;
  int per = (groups + C - 1) / C;
  int g0 = rank * per, g1 = min(groups, g0 + per), n = g1 - g0;
  const float4* src = (const float4*)(in + (size_t)row * cols) + g0;
  float4* dst = (float4*)(out + (size_t)row * cols) + g0;
  int t = threadIdx.x, T = blockDim.x, w = t / 32, l = t % 32, W = T / 32;
  __shared__ __align__(8) unsigned long long bar;
  __shared__ __align__(8) float2 slots[C];
  unsigned bar_a = (unsigned)__cvta_generic_to_shared(&bar);
  float4 v[V];
  #pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; v[k] = g < n ? __ldcs(&src[g]) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY); }
  if (MODE == 3 || MODE == 4) {
    if (t == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(8 * (C - 1)) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (MODE == 3) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    else { __syncthreads(); asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory"); }
  }
  float m = -INFINITY;
  #pragma unroll
  for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  m = warp_max(m); if (l == 0) red[w] = m; __syncthreads();
  m = l < W ? red[l] : -INFINITY; m = warp_max(m);
  float s = 0.f;
  #pragma unroll
  for (int k = 0; k < V; k++) { v[k].x = __expf(v[k].x - m); v[k].y = __expf(v[k].y - m); v[k].z = __expf(v[k].z - m); v[k].w = __expf(v[k].w - m); s += v[k].x + v[k].y + v[k].z + v[k].w; }
  s = warp_sum(s); __syncthreads(); if (l == 0) red[w] = s; __syncthreads();
  s = l < W ? red[l] : 0.f; s = warp_sum(s);
  float scale = 1.f / s;
  if (C > 1 && (MODE == 3 || MODE == 4)) {
    if (MODE == 3) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    if (t < C && t != rank) {
      unsigned slot = (unsigned)__cvta_generic_to_shared(&slots[rank]), rs, rb;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rs) : "r"(slot), "r"(t));
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(bar_a), "r"(t));
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" :: "r"(rs), "f"(m), "f"(s), "r"(rb) : "memory");
    }
    if (t == rank) slots[rank] = make_float2(m, s);
    unsigned done = 0;
    while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar_a) : "memory");
    __syncthreads();
    float M = -INFINITY, S = 0.f;
    #pragma unroll
    for (int r = 0; r < C; r++) M = fmaxf(M, slots[r].x);
    #pragma unroll
    for (int r = 0; r < C; r++) S += slots[r].y * __expf(slots[r].x - M);
    scale = __expf(m - M) / S;
  }
  if (C > 1 && MODE == 0) {
    if (t == 0) { pair[0] = m; pair[1] = s; }
    cl.sync();
    float M = -INFINITY, S = 0.f, pm[C], ps[C];
    #pragma unroll
    for (int r = 0; r < C; r++) { float* p = cl.map_shared_rank(pair, r); pm[r] = p[0]; ps[r] = p[1]; M = fmaxf(M, pm[r]); }
    #pragma unroll
    for (int r = 0; r < C; r++) S += ps[r] * __expf(pm[r] - M);
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    scale = __expf(m - M) / S;
  }
  #pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; if (g < n) { float4 o = v[k]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[g], o); } }
  if (C > 1 && MODE == 0) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

template<int C, int V, int MODE>
float runr(const float* in, float* out, int rows, int cols, int T, int reps, bool& ok) {
  int groups = cols / 4, per = (groups + C - 1) / C;
  if (per > T * V) { ok = false; return 0; }
  cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, sm_reg<C, V, MODE>));
  if (fa.numRegs * T > 65536 || (C == 1 && T * 1 > 1024)) { ok = false; return 0; }
  ok = true;
  if (C > 8) CK(cudaFuncSetAttribute(sm_reg<C, V, MODE>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(rows * C); cfg.blockDim = dim3(T); cfg.dynamicSmemBytes = 0;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = MODE == 2 ? 0 : 1; if (C == 1 && MODE >= 3) { ok = false; return 0; }
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int i = 0; i < reps + 3; i++) {
    cudaEventRecord(a);
    CK(cudaLaunchKernelEx(&cfg, sm_reg<C, V, MODE>, in, out, cols));
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 3) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
}

int main() {
  int shapes[][2] = {{1024, 50000}, {512, 100000}, {2048, 50000}, {1024, 100000}};
  size_t maxn = 1024ull * 100000;
  float *in, *out; CK(cudaMalloc(&in, maxn * 4)); CK(cudaMalloc(&out, maxn * 4));
  std::vector<float> h(maxn); for (size_t i = 0; i < maxn; i++) h[i] = (float)((i * 2654435761u) % 1000) / 100.f - 5.f;
  CK(cudaMemcpy(in, h.data(), maxn * 4, cudaMemcpyHostToDevice));
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s\n", p.name);
  for (auto& sh : shapes) {
    int rows = sh[0], cols = sh[1]; size_t n = (size_t)rows * cols;
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<float> ts;
    for (int i = 0; i < 23; i++) { cudaEventRecord(a); cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 3) ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); float dtod = ts[ts.size() / 2];
    printf("%dx%d dtod %.1f us (%.0f GB/s)\n", rows, cols, dtod * 1e3, 2.0 * n * 4 / dtod / 1e6);
    int Ts[] = {256, 448, 512};
    for (int T : Ts) {
      bool ok; float ms; int ctas = 0;
#define CHECK(CC, NAME) if (ok) { \
        std::vector<float> o(cols); cudaMemcpy(o.data(), out + (size_t)(rows - 1) * cols, cols * 4, cudaMemcpyDeviceToHost); \
        double sum = 0, M = -1e30, S = 0, err = 0; const float* x = h.data() + (size_t)(rows - 1) * cols; \
        for (int c = 0; c < cols; c++) M = std::max(M, (double)x[c]); for (int c = 0; c < cols; c++) S += exp(x[c] - M); \
        for (int c = 0; c < cols; c++) { double want = exp(x[c] - M) / S; err = std::max(err, fabs(o[c] - want) / want); sum += o[c]; } \
        printf("  %s C=%2d T=%4d ctas %4d %8.1f us  %.1f%% of dtod  relerr %.2e sum %.6f\n", NAME, CC, T, ctas, ms * 1e3, 100.0 * dtod / ms, err, sum); }
#define REG(CC, VV, MM) ms = runr<CC, VV, MM>(in, out, rows, cols, T, 20, ok); if (ok) printf("  V=%d M=%d", VV, MM); CHECK(CC, "reg ")
      if (T == 256) { ms = run<1>(in, out, rows, cols, 1024, 20, ok); CHECK(1, "grid") }
      REG(8, 7, 3) REG(8, 13, 3) REG(4, 7, 3)
    }
  }
  return 0;
}
