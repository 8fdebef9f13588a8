// Probe: softmax of long rows, a cluster of 8 blocks per row. "reg": the row
// in registers (what kernels/src/softmax/04_cluster.rs does); "pipe1/2":
// persistent clusters that bulk-copy the next 1 or 2 rows' slices into shared
// memory while this row reduces, trades its pairs and stores; "hyb": step 4
// with V float4 a thread in registers and the rest of the slice in shared
// memory (one bulk copy), so that more, smaller blocks fit an SM.
// Median of 30 CUDA-event timings after 5 warm-ups; % of cudaMemcpy DtoD of
// the same bytes in the same process; relerr: worst relative error against
// an f64 softmax over 3 rows, the output poisoned before each kernel.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>

#define CK(x) do{cudaError_t e=(x); if(e){printf("ERR %s line %d: %s\n",#x,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)

__device__ __forceinline__ float warp_max(float v){ for(int o=16;o;o>>=1) v=fmaxf(v,__shfl_xor_sync(~0u,v,o)); return v;}
__device__ __forceinline__ float warp_sum(float v){ for(int o=16;o;o>>=1) v+=__shfl_xor_sync(~0u,v,o); return v;}
__device__ __forceinline__ unsigned cta_rank(){ unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ unsigned nclusterid(){ unsigned r; asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r)); return r; }
__device__ __forceinline__ unsigned clusterid(){ unsigned r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r; }
__device__ __forceinline__ void mb_init(unsigned bar, unsigned n){ asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(n) : "memory"); }
__device__ __forceinline__ void mb_expect(unsigned bar, unsigned bytes){ asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory"); }
__device__ __forceinline__ void mb_wait(unsigned bar, unsigned parity){
  unsigned done = 0;
  while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void mb_wait_cluster(unsigned bar, unsigned parity){
  unsigned done = 0;
  while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar){
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ void send_pair(unsigned rank, unsigned slot, unsigned bar, float m, float s){
  unsigned rs, rb;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rs) : "r"(slot), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(bar), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" :: "r"(rs), "f"(m), "f"(s), "r"(rb) : "memory");
}

// Block reduce of (m, s) pairs computed per thread over its registers.
template<int V>
__device__ __forceinline__ void reduce_block(float4 (&v)[V], float* red, float& m_out, float& s_out) {
  int t = threadIdx.x, w = t / 32, l = t % 32, W = blockDim.x / 32;
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
  m_out = m; s_out = s;
}

// Baseline: step 4 (M=3 of the 2026-11-25 probe).
template<int C, int V, int MAXT>
__global__ void __launch_bounds__(MAXT, 1) sm_reg(const float* __restrict__ in, float* __restrict__ out, int cols) {
  __shared__ float red[32];
  __shared__ __align__(8) unsigned long long bar;
  __shared__ __align__(8) float2 slots[C];
  int rank = cta_rank();
  int row = blockIdx.x / C;
  int groups = cols / 4, per = (groups + C - 1) / C;
  int g0 = rank * per, g1 = min(groups, g0 + per), n = g1 - g0;
  const float4* src = (const float4*)(in + (size_t)row * cols) + g0;
  float4* dst = (float4*)(out + (size_t)row * cols) + g0;
  int t = threadIdx.x, T = blockDim.x;
  unsigned bar_a = (unsigned)__cvta_generic_to_shared(&bar);
  float4 v[V];
  #pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; v[k] = g < n ? __ldcs(&src[g]) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY); }
  if (t == 0) {
    mb_init(bar_a, 1); mb_expect(bar_a, 8 * (C - 1));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  float m, s; reduce_block<V>(v, red, m, s);
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  if (t < C && t != rank) send_pair(t, (unsigned)__cvta_generic_to_shared(&slots[rank]), bar_a, m, s);
  if (t == rank) slots[rank] = make_float2(m, s);
  mb_wait_cluster(bar_a, 0);
  __syncthreads();
  float M = -INFINITY, S = 0.f;
  #pragma unroll
  for (int r = 0; r < C; r++) M = fmaxf(M, slots[r].x);
  #pragma unroll
  for (int r = 0; r < C; r++) S += slots[r].y * __expf(slots[r].x - M);
  float scale = __expf(m - M) / S;
  #pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; if (g < n) { float4 o = v[k]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[g], o); } }
}

// Persistent clusters: cluster c takes rows c, c + G, ...; each block bulk-copies
// its slice of the next row into shared memory while it reduces, trades and
// stores this row from registers. The pairs live in two parity sets of slots,
// each counted on its own mbarrier.
template<int C, int V, int MAXT, int DEPTH>
__global__ void __launch_bounds__(MAXT, 2) sm_pipe(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  extern __shared__ __align__(128) float4 buf[];
  __shared__ float red[32];
  __shared__ __align__(8) unsigned long long bars[2 + DEPTH]; // pairs[0], pairs[1], loads
  __shared__ __align__(8) float2 slots[2][C];
  int rank = cta_rank();
  int G = nclusterid();
  int groups = cols / 4, per = (groups + C - 1) / C;
  int g0 = min(groups, rank * per), g1 = min(groups, g0 + per), n = g1 - g0;
  int t = threadIdx.x, T = blockDim.x;
  unsigned pair_bar = (unsigned)__cvta_generic_to_shared(&bars[0]);
  unsigned load_bar = pair_bar + 16;
  unsigned buf_a = (unsigned)__cvta_generic_to_shared(buf);
  int row = clusterid();
  if (t == 0) {
    for (int j = 0; j < 2 + DEPTH; j++) mb_init(pair_bar + 8 * j, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int j = 0; j < DEPTH; j++) if (row + j * G < rows && n > 0) {
      mb_expect(load_bar + 8 * j, n * 16);
      bulk_load(buf_a + j * per * 16, (const float4*)(in + (size_t)(row + j * G) * cols) + g0, n * 16, load_bar + 8 * j);
    }
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
  for (int i = 0; row < rows; row += G, i++) {
    int slot = i % DEPTH;
    if (n > 0) mb_wait(load_bar + 8 * slot, (i / DEPTH) & 1);
    float4 v[V];
    const float4* bb = buf + slot * per;
    #pragma unroll
    for (int k = 0; k < V; k++) { int g = t + T * k; v[k] = g < n ? bb[g] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY); }
    __syncthreads(); // every thread has read the buffer
    if (t == 0 && row + DEPTH * G < rows && n > 0) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      mb_expect(load_bar + 8 * slot, n * 16);
      bulk_load(buf_a + slot * per * 16, (const float4*)(in + (size_t)(row + DEPTH * G) * cols) + g0, n * 16, load_bar + 8 * slot);
    }
    float m, s; reduce_block<V>(v, red, m, s);
    int b = i & 1;
    unsigned pbar = pair_bar + 8 * b;
    if (t == 0) mb_expect(pbar, 8 * (C - 1));
    if (t < C && t != rank) send_pair(t, (unsigned)__cvta_generic_to_shared(&slots[b][rank]), pbar, m, s);
    if (t == rank) slots[b][rank] = make_float2(m, s);
    mb_wait_cluster(pbar, (i >> 1) & 1);
    __syncthreads();
    float M = -INFINITY, S = 0.f;
    #pragma unroll
    for (int r = 0; r < C; r++) M = fmaxf(M, slots[b][r].x);
    #pragma unroll
    for (int r = 0; r < C; r++) S += slots[b][r].y * __expf(slots[b][r].x - M);
    float scale = __expf(m - M) / S;
    float4* dst = (float4*)(out + (size_t)row * cols) + g0;
    #pragma unroll
    for (int k = 0; k < V; k++) { int g = t + T * k; if (g < n) { float4 o = v[k]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[g], o); } }
  }
}

static float median(std::vector<float> ts) { std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2]; }

template<typename F>
float timeit(F f, int reps) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int i = 0; i < reps + 5; i++) {
    cudaEventRecord(a); f(); cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 5) ts.push_back(ms);
  }
  CK(cudaGetLastError());
  return median(ts);
}

template<int C, int V, int MAXT>
float run_reg(const float* in, float* out, int rows, int cols, int T, bool& ok, int& active) {
  int per = (cols / 4 + C - 1) / C;
  if (per > T * V) { ok = false; return 0; }
  ok = true;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(rows * C); cfg.blockDim = dim3(T);
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  { cudaLaunchConfig_t c2 = cfg; c2.gridDim = dim3(132 * 8 * C); int cl = 0; CK(cudaOccupancyMaxActiveClusters(&cl, (void*)sm_reg<C, V, MAXT>, &c2)); active = cl; }
  return timeit([&]{ CK(cudaLaunchKernelEx(&cfg, sm_reg<C, V, MAXT>, in, out, cols)); }, 30);
}

template<int C, int V, int MAXT, int DEPTH>
float run_pipe(const float* in, float* out, int rows, int cols, int T, bool& ok, int& clusters, int cap) {
  int per = (cols / 4 + C - 1) / C;
  if (per > T * V) { ok = false; return 0; }
  ok = true;
  size_t smem = (size_t)per * 16 * DEPTH;
  if (smem > 227 * 1024) { ok = false; return 0; }
  CK(cudaFuncSetAttribute(sm_pipe<C, V, MAXT, DEPTH>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(T); cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  cfg.gridDim = dim3(132 * 8 * C);
  CK(cudaOccupancyMaxActiveClusters(&clusters, (void*)sm_pipe<C, V, MAXT, DEPTH>, &cfg));
  if (cap > 0) clusters = std::min(clusters, cap);
  clusters = std::min(clusters, rows);
  cfg.gridDim = dim3(clusters * C);
  return timeit([&]{ CK(cudaLaunchKernelEx(&cfg, sm_pipe<C, V, MAXT, DEPTH>, in, out, rows, cols)); }, 30);
}


// Hybrid: a cluster per row; each block holds the first T*V float4 groups of
// its slice in registers (as step 4) and the rest in shared memory, loaded by
// one bulk copy, so blocks stay small (several per SM) on long rows.
template<int C, int V, int MAXT>
__global__ void __launch_bounds__(MAXT, 1) sm_hyb(const float* __restrict__ in, float* __restrict__ out, int cols) {
  extern __shared__ __align__(128) float4 rest[];
  __shared__ float red[32];
  __shared__ __align__(8) unsigned long long bars[2]; // pairs, load
  __shared__ __align__(8) float2 slots[C];
  int rank = cta_rank();
  int row = blockIdx.x / C;
  int groups = cols / 4, per = (groups + C - 1) / C;
  int g0 = min(groups, rank * per), g1 = min(groups, g0 + per), n = g1 - g0;
  int t = threadIdx.x, T = blockDim.x;
  int nr = min(n, T * V), ns = n - nr; // groups in registers, in shared memory
  const float4* src = (const float4*)(in + (size_t)row * cols) + g0;
  float4* dst = (float4*)(out + (size_t)row * cols) + g0;
  unsigned bar_a = (unsigned)__cvta_generic_to_shared(&bars[0]);
  unsigned load_bar = bar_a + 8;
  if (t == 0) {
    mb_init(bar_a, 1); mb_init(load_bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    mb_expect(bar_a, 8 * (C - 1));
    if (ns > 0) { mb_expect(load_bar, ns * 16); bulk_load((unsigned)__cvta_generic_to_shared(rest), src + nr, ns * 16, load_bar); }
  }
  float4 v[V];
  #pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; v[k] = g < nr ? __ldcs(&src[g]) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY); }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  __syncthreads(); // the load mbarrier's init
  int w = t / 32, l = t % 32, W = T / 32;
  float m = -INFINITY;
  #pragma unroll
  for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  if (ns > 0) mb_wait(load_bar, 0);
  for (int g = t; g < ns; g += T) { float4 x = rest[g]; m = fmaxf(m, fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w))); }
  m = warp_max(m); if (l == 0) red[w] = m; __syncthreads();
  m = l < W ? red[l] : -INFINITY; m = warp_max(m);
  float s = 0.f;
  #pragma unroll
  for (int k = 0; k < V; k++) { v[k].x = __expf(v[k].x - m); v[k].y = __expf(v[k].y - m); v[k].z = __expf(v[k].z - m); v[k].w = __expf(v[k].w - m); s += v[k].x + v[k].y + v[k].z + v[k].w; }
  for (int g = t; g < ns; g += T) { float4 x = rest[g]; x.x = __expf(x.x - m); x.y = __expf(x.y - m); x.z = __expf(x.z - m); x.w = __expf(x.w - m); s += x.x + x.y + x.z + x.w; rest[g] = x; }
  s = warp_sum(s); __syncthreads(); if (l == 0) red[w] = s; __syncthreads();
  s = l < W ? red[l] : 0.f; s = warp_sum(s);
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  if (t < C && t != rank) send_pair(t, (unsigned)__cvta_generic_to_shared(&slots[rank]), bar_a, m, s);
  if (t == rank) slots[rank] = make_float2(m, s);
  mb_wait_cluster(bar_a, 0);
  __syncthreads();
  float M = -INFINITY, S = 0.f;
  #pragma unroll
  for (int r = 0; r < C; r++) M = fmaxf(M, slots[r].x);
  #pragma unroll
  for (int r = 0; r < C; r++) S += slots[r].y * __expf(slots[r].x - M);
  float scale = __expf(m - M) / S;
  #pragma unroll
  for (int k = 0; k < V; k++) { int g = t + T * k; if (g < nr) { float4 o = v[k]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[g], o); } }
  for (int g = t; g < ns; g += T) { float4 o = rest[g]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[nr + g], o); }
}

template<int C, int V, int MAXT>
float run_hyb(const float* in, float* out, int rows, int cols, int T, bool& ok, int& active) {
  int per = (cols / 4 + C - 1) / C;
  size_t smem = (size_t)std::max(0, per - T * V) * 16;
  if (smem > 227 * 1024) { ok = false; return 0; }
  ok = true;
  CK(cudaFuncSetAttribute(sm_hyb<C, V, MAXT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(T); cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  cfg.gridDim = dim3(132 * 8 * C);
  CK(cudaOccupancyMaxActiveClusters(&active, (void*)sm_hyb<C, V, MAXT>, &cfg));
  cfg.gridDim = dim3(rows * C);
  return timeit([&]{ CK(cudaLaunchKernelEx(&cfg, sm_hyb<C, V, MAXT>, in, out, cols)); }, 30);
}

// As sm_pipe, but each thread copies its own float4 of the next row into
// shared memory with cp.async (16 bytes each, no registers), so no bulk copy
// and no barrier guards the buffer: a thread reads only what it copied.
template<int C, int V, int MAXT>
__global__ void __launch_bounds__(MAXT, 2) sm_pipe_ca(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  extern __shared__ __align__(128) float4 buf[];
  __shared__ float red[32];
  __shared__ __align__(8) unsigned long long bars[2];
  __shared__ __align__(8) float2 slots[2][C];
  int rank = cta_rank();
  int G = nclusterid();
  int groups = cols / 4, per = (groups + C - 1) / C;
  int g0 = min(groups, rank * per), g1 = min(groups, g0 + per), n = g1 - g0;
  int t = threadIdx.x, T = blockDim.x;
  unsigned pair_bar = (unsigned)__cvta_generic_to_shared(&bars[0]);
  unsigned buf_a = (unsigned)__cvta_generic_to_shared(buf);
  int row = clusterid();
  auto issue = [&](int r) {
    const float4* src = (const float4*)(in + (size_t)r * cols) + g0;
    #pragma unroll
    for (int k = 0; k < V; k++) { int g = t + T * k; if (g < n) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(buf_a + 16 * g), "l"(src + g) : "memory"); }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  if (t == 0) {
    mb_init(pair_bar, 1); mb_init(pair_bar + 8, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (row < rows) issue(row);
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
  for (int i = 0; row < rows; row += G, i++) {
    asm volatile("cp.async.wait_all;" ::: "memory");
    float4 v[V];
    #pragma unroll
    for (int k = 0; k < V; k++) { int g = t + T * k; v[k] = g < n ? buf[g] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY); }
    if (row + G < rows) issue(row + G);
    float m, s; reduce_block<V>(v, red, m, s);
    int b = i & 1;
    unsigned pbar = pair_bar + 8 * b;
    if (t == 0) mb_expect(pbar, 8 * (C - 1));
    if (t < C && t != rank) send_pair(t, (unsigned)__cvta_generic_to_shared(&slots[b][rank]), pbar, m, s);
    if (t == rank) slots[b][rank] = make_float2(m, s);
    mb_wait_cluster(pbar, (i >> 1) & 1);
    __syncthreads();
    float M = -INFINITY, S = 0.f;
    #pragma unroll
    for (int r = 0; r < C; r++) M = fmaxf(M, slots[b][r].x);
    #pragma unroll
    for (int r = 0; r < C; r++) S += slots[b][r].y * __expf(slots[b][r].x - M);
    float scale = __expf(m - M) / S;
    float4* dst = (float4*)(out + (size_t)row * cols) + g0;
    #pragma unroll
    for (int k = 0; k < V; k++) { int g = t + T * k; if (g < n) { float4 o = v[k]; o.x *= scale; o.y *= scale; o.z *= scale; o.w *= scale; __stcs(&dst[g], o); } }
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
}

template<int C, int V, int MAXT>
float run_pipe_ca(const float* in, float* out, int rows, int cols, int T, bool& ok, int& clusters) {
  int per = (cols / 4 + C - 1) / C;
  if (per > T * V) { ok = false; return 0; }
  ok = true;
  size_t smem = (size_t)per * 16;
  CK(cudaFuncSetAttribute(sm_pipe_ca<C, V, MAXT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(T); cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  cfg.gridDim = dim3(132 * 8 * C);
  CK(cudaOccupancyMaxActiveClusters(&clusters, (void*)sm_pipe_ca<C, V, MAXT>, &cfg));
  clusters = std::min(clusters, rows);
  cfg.gridDim = dim3(clusters * C);
  return timeit([&]{ CK(cudaLaunchKernelEx(&cfg, sm_pipe_ca<C, V, MAXT>, in, out, rows, cols)); }, 30);
}

int main() {
  int shapes[][2] = {{512, 100000}, {671, 100000}, {1024, 100000}, {1024, 65536}, {1024, 50000}};
  size_t maxn = 1024ull * 100000;
  float *in, *out; CK(cudaMalloc(&in, maxn * 4)); CK(cudaMalloc(&out, maxn * 4));
  std::vector<float> h(maxn); srand(7); for (size_t i = 0; i < maxn; i++) h[i] = (float)rand() / RAND_MAX * 20.f - 10.f;
  CK(cudaMemcpy(in, h.data(), maxn * 4, cudaMemcpyHostToDevice));
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
  {
    cudaFuncAttributes fa;

  }
  for (auto& sh : shapes) {
    int rows = sh[0], cols = sh[1]; size_t n = (size_t)rows * cols;
    float dtod = timeit([&]{ cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); }, 30);
    printf("%dx%d dtod %.1f us (%.0f GB/s)\n", rows, cols, dtod * 1e3, 2.0 * n * 4 / dtod / 1e6);
    auto verify = [&](const char* name, int T, int clusters, float ms) {
      double worst = 0;
      for (int r : {0, rows / 2, rows - 1}) {
        std::vector<float> o(cols); CK(cudaMemcpy(o.data(), out + (size_t)r * cols, cols * 4, cudaMemcpyDeviceToHost));
        const float* x = h.data() + (size_t)r * cols; double M = -1e30, S = 0;
        for (int c = 0; c < cols; c++) M = std::max(M, (double)x[c]);
        for (int c = 0; c < cols; c++) S += exp(x[c] - M);
        for (int c = 0; c < cols; c++) { double want = exp(x[c] - M) / S; double e = fabs(o[c] - want) / want; if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : std::max(worst, e); }
      }
      printf(" %-5s T=%4d clusters(active)  %4d %8.1f us  %5.1f%% of dtod  relerr %.2e\n", name, T, clusters, ms * 1e3, 100.0 * dtod / ms, worst);
    };
    bool ok; float ms; int cl;
#define POISON CK(cudaMemset(out, 0xff, n * 4));
#define REG(VV, TT) POISON ms = run_reg<8, VV, TT>(in, out, rows, cols, TT, ok, cl); if (ok) { printf("  V=%d", VV); verify("reg", TT, cl, ms); }
#define PIPE(VV, TT, D) POISON ms = run_pipe<8, VV, TT, D>(in, out, rows, cols, TT, ok, cl, 0); if (ok) { printf("  V=%d", VV); verify(D == 1 ? "pipe1" : D == 2 ? "pipe2" : "pipe3", TT, cl, ms); }
#define HYB(VV, TT) POISON ms = run_hyb<8, VV, TT>(in, out, rows, cols, TT, ok, cl); if (ok) { printf("  V=%d", VV); verify("hyb", TT, cl, ms); }
#define PCA(VV, TT) POISON ms = run_pipe_ca<8, VV, TT>(in, out, rows, cols, TT, ok, cl); if (ok) { printf("  V=%d", VV); verify("pca", TT, cl, ms); }
    REG(7, 448) REG(7, 320) REG(7, 224)
    PCA(7, 448) PCA(7, 512) PCA(7, 320) PCA(7, 224) PCA(4, 512)
    PIPE(7, 448, 1)
  }
  return 0;
}
