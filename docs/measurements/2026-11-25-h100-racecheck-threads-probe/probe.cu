// Does compute-sanitizer racecheck lose track of launches when several host
// threads launch thread-block-cluster kernels (cudaLaunchKernelEx), directly
// or through captured graphs? Modes: plain | cluster | cluster1 | graph.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
namespace cg = cooperative_groups;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void plain(float* out, int n) {
    __shared__ float s[256];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = s[255 - threadIdx.x];
}

// Each block writes its rank into its right neighbour's shared memory, then reads its own.
__global__ void clustered(float* out, int n) {
    __shared__ float slot[8];
    cg::cluster_group cl = cg::this_cluster();
    unsigned r = cl.block_rank(), c = cl.num_blocks();
    if (threadIdx.x < 8) slot[threadIdx.x] = 0;
    cl.sync();
    if (threadIdx.x == 0) {
        float* peer = cl.map_shared_rank(slot, (r + 1) % c);
        peer[r] = (float)r;
    }
    cl.sync();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = slot[(r + c - 1) % c];
}

static void launch_cluster(cudaStream_t s, float* out, int n) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(64); cfg.blockDim = dim3(256); cfg.stream = s;
    cudaLaunchAttribute a; a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = 8; a.val.clusterDim.y = 1; a.val.clusterDim.z = 1;
    cfg.attrs = &a; cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, clustered, out, n));
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "cluster";
    int threads = argc > 2 ? atoi(argv[2]) : 8, iters = argc > 3 ? atoi(argv[3]) : 50;
    if (!strcmp(mode, "cluster1")) threads = 1;
    const int n = 64 * 256;
    CK(cudaFree(0));
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) ts.emplace_back([=] {
        cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        float* out; CK(cudaMalloc(&out, n * 4));
        cudaGraphExec_t exec = nullptr;
        if (!strcmp(mode, "graph")) {
            cudaGraph_t g;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            launch_cluster(s, out, n);
            plain<<<64, 256, 0, s>>>(out, n);
            CK(cudaStreamEndCapture(s, &g));
            CK(cudaGraphInstantiate(&exec, g, 0));
        }
        for (int i = 0; i < iters; i++) {
            if (!strcmp(mode, "plain")) plain<<<64, 256, 0, s>>>(out, n);
            else if (exec) CK(cudaGraphLaunch(exec, s));
            else { launch_cluster(s, out, n); plain<<<64, 256, 0, s>>>(out, n); }
            CK(cudaStreamSynchronize(s));
        }
        CK(cudaFree(out));
    });
    for (auto& t : ts) t.join();
    printf("%s: %d threads x %d iterations done\n", mode, threads, iters);
}
