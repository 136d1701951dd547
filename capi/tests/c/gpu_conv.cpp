// GPU check of libhipdnn_backend.so (run by hand on a machine with an NVIDIA GPU; not part of
// `cargo test`): conv fprop fp32 NCHW built through descriptors on a GPU handle, executed on
// device buffers (allocated through the CUDA driver, opened at run time), compared with a CPU
// handle (HIPDNN_RS_DEVICE=cpu) on host buffers; then the graph-and-plan container is saved,
// loaded in a new GPU handle, executed (bit-identical) and re-saved byte-identically.
//
// Build: g++ -std=c++17 -I capi/include gpu_conv.cpp -o gpu_conv -L<dir> -lhipdnn_backend -ldl
// Run:   HIPDNN_KERNEL_DIR=engines/kernels/packed ./gpu_conv
#include <hipdnn_backend.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace
{
void die(const char* what, hipdnnStatus_t s, int line)
{
    char msg[HIPDNN_ERROR_STRING_MAX_LENGTH];
    hipdnnGetLastErrorString(msg, sizeof msg);
    std::fprintf(stderr, "line %d: %s -> %s (%s)\n", line, what, hipdnnGetErrorString(s), msg);
    std::exit(1);
}
#define CHECK(call)                                   \
    do                                                \
    {                                                 \
        hipdnnStatus_t s_ = (call);                   \
        if(s_ != HIPDNN_STATUS_SUCCESS)               \
            die(#call, s_, __LINE__);                 \
    } while(0)

// CUDA driver, opened at run time.
typedef int (*cuInit_t)(unsigned);
typedef int (*cuDeviceGet_t)(int*, int);
typedef int (*cuPrimaryCtxRetain_t)(void**, int);
typedef int (*cuCtxSetCurrent_t)(void*);
typedef int (*cuMemAlloc_t)(unsigned long long*, size_t);
typedef int (*cuMemFree_t)(unsigned long long);
typedef int (*cuMemcpyHtoD_t)(unsigned long long, const void*, size_t);
typedef int (*cuMemcpyDtoH_t)(void*, unsigned long long, size_t);
struct Cuda
{
    cuMemAlloc_t alloc;
    cuMemFree_t free;
    cuMemcpyHtoD_t htod;
    cuMemcpyDtoH_t dtoh;
};
Cuda open_cuda()
{
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    if(!lib)
    {
        std::fprintf(stderr, "no libcuda.so.1\n");
        std::exit(2);
    }
    auto get = [&](const char* n) {
        void* f = dlsym(lib, n);
        if(!f)
        {
            std::fprintf(stderr, "missing %s\n", n);
            std::exit(2);
        }
        return f;
    };
    int dev = 0;
    void* ctx = nullptr;
    if(((cuInit_t)get("cuInit"))(0) || ((cuDeviceGet_t)get("cuDeviceGet"))(&dev, 0)
       || ((cuPrimaryCtxRetain_t)get("cuDevicePrimaryCtxRetain"))(&ctx, dev)
       || ((cuCtxSetCurrent_t)get("cuCtxSetCurrent"))(ctx))
    {
        std::fprintf(stderr, "CUDA init failed\n");
        std::exit(2);
    }
    return Cuda{(cuMemAlloc_t)get("cuMemAlloc_v2"),
                (cuMemFree_t)get("cuMemFree_v2"),
                (cuMemcpyHtoD_t)get("cuMemcpyHtoD_v2"),
                (cuMemcpyDtoH_t)get("cuMemcpyDtoH_v2")};
}

hipdnnBackendDescriptor_t create(hipdnnBackendDescriptorType_t t)
{
    hipdnnBackendDescriptor_t d = nullptr;
    CHECK(hipdnnBackendCreateDescriptor(t, &d));
    return d;
}
void set_i64s(hipdnnBackendDescriptor_t d, hipdnnBackendAttributeName_t n, std::vector<int64_t> v)
{
    CHECK(hipdnnBackendSetAttribute(d, n, HIPDNN_TYPE_INT64, (int64_t)v.size(), v.data()));
}
void set_desc(hipdnnBackendDescriptor_t d, hipdnnBackendAttributeName_t n, hipdnnBackendDescriptor_t v)
{
    CHECK(hipdnnBackendSetAttribute(d, n, HIPDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v));
}
hipdnnBackendDescriptor_t tensor(int64_t uid, std::vector<int64_t> d)
{
    hipdnnBackendDescriptor_t t = create(HIPDNN_BACKEND_TENSOR_DESCRIPTOR);
    hipdnnDataType_t dt = HIPDNN_DATA_FLOAT;
    set_i64s(t, HIPDNN_ATTR_TENSOR_UNIQUE_ID, {uid});
    CHECK(hipdnnBackendSetAttribute(t, HIPDNN_ATTR_TENSOR_DATA_TYPE, HIPDNN_TYPE_DATA_TYPE, 1, &dt));
    set_i64s(t, HIPDNN_ATTR_TENSOR_DIMENSIONS, d);
    set_i64s(t, HIPDNN_ATTR_TENSOR_STRIDES, {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1});
    CHECK(hipdnnBackendFinalize(t));
    return t;
}
const int64_t N = 2, C = 8, H = 16, W = 16, K = 16, R = 3;

hipdnnBackendDescriptor_t graph(hipdnnHandle_t h)
{
    hipdnnBackendDescriptor_t x = tensor(1, {N, C, H, W}), w = tensor(2, {K, C, R, R}),
                              y = tensor(3, {N, K, H, W});
    hipdnnBackendDescriptor_t op = create(HIPDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    set_desc(op, HIPDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
    set_desc(op, HIPDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
    set_desc(op, HIPDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
    hipdnnDataType_t comp = HIPDNN_DATA_FLOAT;
    CHECK(hipdnnBackendSetAttribute(op, HIPDNN_ATTR_CONVOLUTION_COMP_TYPE, HIPDNN_TYPE_DATA_TYPE, 1, &comp));
    set_i64s(op, HIPDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {1, 1});
    set_i64s(op, HIPDNN_ATTR_CONVOLUTION_POST_PADDINGS, {1, 1});
    set_i64s(op, HIPDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {1, 1});
    set_i64s(op, HIPDNN_ATTR_CONVOLUTION_DILATIONS, {1, 1});
    CHECK(hipdnnBackendFinalize(op));
    hipdnnBackendDescriptor_t g = create(HIPDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    CHECK(hipdnnBackendSetAttribute(g, HIPDNN_ATTR_OPERATIONGRAPH_HANDLE, HIPDNN_TYPE_HANDLE, 1, &h));
    set_desc(g, HIPDNN_ATTR_OPERATIONGRAPH_OPS, op);
    CHECK(hipdnnBackendFinalize(g));
    for(auto d : {x, w, y, op})
        CHECK(hipdnnBackendDestroyDescriptor(d));
    return g;
}

hipdnnBackendDescriptor_t plan_for(hipdnnHandle_t h, hipdnnBackendDescriptor_t g)
{
    hipdnnBackendDescriptor_t heur = create(HIPDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    set_desc(heur, HIPDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g);
    hipdnnBackendHeurMode_t mode = HIPDNN_HEUR_MODE_FALLBACK;
    CHECK(hipdnnBackendSetAttribute(heur, HIPDNN_ATTR_ENGINEHEUR_MODE, HIPDNN_TYPE_HEUR_MODE, 1, &mode));
    CHECK(hipdnnBackendFinalize(heur));
    hipdnnBackendDescriptor_t cfg = create(HIPDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t n = 0;
    CHECK(hipdnnBackendGetAttribute(heur, HIPDNN_ATTR_ENGINEHEUR_RESULTS, HIPDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &cfg));
    hipdnnBackendDescriptor_t plan = create(HIPDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    CHECK(hipdnnBackendSetAttribute(plan, HIPDNN_ATTR_EXECUTION_PLAN_HANDLE, HIPDNN_TYPE_HANDLE, 1, &h));
    set_desc(plan, HIPDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg);
    CHECK(hipdnnBackendFinalize(plan));
    CHECK(hipdnnBackendDestroyDescriptor(cfg));
    CHECK(hipdnnBackendDestroyDescriptor(heur));
    return plan;
}

std::string engine_of(hipdnnHandle_t h, hipdnnBackendDescriptor_t plan)
{
    int64_t id = 0, n = 0;
    CHECK(hipdnnBackendGetAttribute(plan, HIPDNN_ATTR_EXECUTION_PLAN_ENGINE_GLOBAL_INDEX_EXT, HIPDNN_TYPE_INT64, 1, &n, &id));
    char name[256];
    size_t len = sizeof name;
    CHECK(hipdnnGetEngineNameById_ext(h, id, name, &len));
    return name;
}

void run(hipdnnHandle_t h, hipdnnBackendDescriptor_t plan, void* x, void* w, void* y, void* ws)
{
    hipdnnBackendDescriptor_t pack = create(HIPDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    int64_t uids[3] = {1, 2, 3};
    void* ptrs[3] = {x, w, y};
    CHECK(hipdnnBackendSetAttribute(pack, HIPDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, HIPDNN_TYPE_INT64, 3, uids));
    CHECK(hipdnnBackendSetAttribute(pack, HIPDNN_ATTR_VARIANT_PACK_DATA_POINTERS, HIPDNN_TYPE_VOID_PTR, 3, ptrs));
    CHECK(hipdnnBackendSetAttribute(pack, HIPDNN_ATTR_VARIANT_PACK_WORKSPACE, HIPDNN_TYPE_VOID_PTR, 1, &ws));
    CHECK(hipdnnBackendFinalize(pack));
    CHECK(hipdnnBackendExecute(h, plan, pack));
    CHECK(hipdnnBackendDestroyDescriptor(pack));
}

std::vector<uint8_t> container(hipdnnBackendDescriptor_t g, hipdnnBackendDescriptor_t p)
{
    size_t n = 0;
    CHECK(hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(g, p, 0, &n, nullptr));
    std::vector<uint8_t> out(n);
    CHECK(hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(g, p, n, &n, out.data()));
    return out;
}
} // namespace

int main()
{
    Cuda cu = open_cuda();
    std::vector<float> x(N * C * H * W), w(K * C * R * R);
    for(size_t i = 0; i < x.size(); ++i)
        x[i] = (float)((int)(i * 7 % 13) - 6) / 8.0f;
    for(size_t i = 0; i < w.size(); ++i)
        w[i] = (float)((int)(i * 5 % 11) - 5) / 8.0f;
    size_t ysz = N * K * H * W;

    // GPU handle.
    hipdnnHandle_t gh = nullptr;
    CHECK(hipdnnCreate(&gh));
    hipdnnBackendDescriptor_t gg = graph(gh);
    hipdnnBackendDescriptor_t gp = plan_for(gh, gg);
    std::string gpu_engine = engine_of(gh, gp);
    std::printf("GPU handle plan engine: %s\n", gpu_engine.c_str());
    unsigned long long dx = 0, dw = 0, dy = 0, dws = 0;
    int64_t wsz = 0, n = 0;
    CHECK(hipdnnBackendGetAttribute(gp, HIPDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, HIPDNN_TYPE_INT64, 1, &n, &wsz));
    if(cu.alloc(&dx, x.size() * 4) || cu.alloc(&dw, w.size() * 4) || cu.alloc(&dy, ysz * 4)
       || cu.alloc(&dws, (size_t)wsz + 256))
        return 3;
    cu.htod(dx, x.data(), x.size() * 4);
    cu.htod(dw, w.data(), w.size() * 4);
    run(gh, gp, (void*)dx, (void*)dw, (void*)dy, (void*)dws);
    std::vector<float> yg(ysz), yg2(ysz);
    cu.dtoh(yg.data(), dy, ysz * 4);

    // CPU handle, host buffers.
    setenv("HIPDNN_RS_DEVICE", "cpu", 1);
    hipdnnHandle_t ch = nullptr;
    CHECK(hipdnnCreate(&ch));
    unsetenv("HIPDNN_RS_DEVICE");
    hipdnnBackendDescriptor_t cg = graph(ch);
    hipdnnBackendDescriptor_t cp = plan_for(ch, cg);
    std::vector<float> yc(ysz, NAN);
    std::vector<uint8_t> cws(1024);
    run(ch, cp, x.data(), w.data(), yc.data(), cws.data());
    double maxdiff = 0;
    for(size_t i = 0; i < ysz; ++i)
        maxdiff = std::fmax(maxdiff, std::fabs((double)yg[i] - yc[i]));
    std::printf("CPU handle plan engine: %s; max |GPU - CPU| = %g\n", engine_of(ch, cp).c_str(), maxdiff);

    // Container: save, load in a new GPU handle, execute, re-save.
    std::vector<uint8_t> c = container(gg, gp);
    hipdnnHandle_t gh2 = nullptr;
    CHECK(hipdnnCreate(&gh2));
    hipdnnBackendDescriptor_t g2 = nullptr, p2 = nullptr;
    CHECK(hipdnnBackendCreateAndDeserializeGraph_ext(&g2, c.data(), c.size()));
    CHECK(hipdnnBackendCreateAndDeserializeExecutionPlan_ext(gh2, &p2, c.data(), c.size()));
    cu.htod(dy, yc.data(), ysz * 4); // overwrite the output first
    run(gh2, p2, (void*)dx, (void*)dw, (void*)dy, (void*)dws);
    cu.dtoh(yg2.data(), dy, ysz * 4);
    bool same = std::memcmp(yg.data(), yg2.data(), ysz * 4) == 0;
    bool resave = container(g2, p2) == c;
    std::printf("container: %zu bytes; loaded plan engine %s; output bit-identical: %s; re-save identical: %s\n",
                c.size(), engine_of(gh2, p2).c_str(), same ? "yes" : "no", resave ? "yes" : "no");
    for(auto d : {gg, gp, cg, cp, g2, p2})
        CHECK(hipdnnBackendDestroyDescriptor(d));
    for(auto h : {gh, ch, gh2})
        CHECK(hipdnnDestroy(h));
    cu.free(dx);
    cu.free(dw);
    cu.free(dy);
    cu.free(dws);
    bool ok = gpu_engine != "hipdnn.reference.cpu" && maxdiff < 1e-3 && same && resave;
    std::printf("%s\n", ok ? "gpu_conv: all checks passed" : "gpu_conv: FAILED");
    return ok ? 0 : 1;
}
