// C++ round trip through libhipdnn_backend.so, following the call sequence of upstream's
// serialization sample (samples/serialization/SerializationRoundTrip.cpp) with descriptors instead of the
// frontend: conv fprop for fp32, fp16 and bf16 in NCHW and NHWC; build and execute; then the
// JSON round trip, the binary round trip, the plan-only round trip and the graph-and-plan
// container (saved, loaded in a new handle, executed, re-saved and compared byte for byte).
//
// Usage: roundtrip <dir>. Reads <dir>/x_<tag>.bin and w_<tag>.bin (inputs written by the Rust
// test), writes <dir>/y_<tag>.bin (first output) and <dir>/container_<tag>.bin; when
// <dir>/sdk_container_<tag>.bin exists (written by the Rust SDK), loads it through the C ABI,
// executes it and checks that it re-saves byte-identically. Every result must be bit-identical
// to the first execution. Exit status 0 only if every check passed.
#include <hipdnn_backend.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace
{
int failures = 0;

void fail_status(const char* what, hipdnnStatus_t s, int line)
{
    char msg[HIPDNN_ERROR_STRING_MAX_LENGTH];
    hipdnnGetLastErrorString(msg, sizeof msg);
    std::fprintf(stderr, "line %d: %s -> %s (%s)\n", line, what, hipdnnGetErrorString(s), msg);
    std::exit(1);
}

#define CHECK(call)                                      \
    do                                                   \
    {                                                    \
        hipdnnStatus_t s_ = (call);                      \
        if(s_ != HIPDNN_STATUS_SUCCESS)                  \
            fail_status(#call, s_, __LINE__);            \
    } while(0)

#define EXPECT(cond, ...)                                \
    do                                                   \
    {                                                    \
        if(!(cond))                                      \
        {                                                \
            std::fprintf(stderr, "line %d: ", __LINE__); \
            std::fprintf(stderr, __VA_ARGS__);           \
            std::fprintf(stderr, "\n");                  \
            ++failures;                                  \
        }                                                \
    } while(0)

std::vector<uint8_t> read_file(const std::string& path)
{
    std::vector<uint8_t> out;
    FILE* f = std::fopen(path.c_str(), "rb");
    if(!f)
        return out;
    uint8_t buf[4096];
    size_t n;
    while((n = std::fread(buf, 1, sizeof buf, f)) > 0)
        out.insert(out.end(), buf, buf + n);
    std::fclose(f);
    return out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes)
{
    FILE* f = std::fopen(path.c_str(), "wb");
    if(!f)
    {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        std::exit(1);
    }
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
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

hipdnnBackendDescriptor_t tensor(int64_t uid, hipdnnDataType_t dt, std::vector<int64_t> dims, bool nhwc)
{
    std::vector<int64_t> strides(4);
    if(nhwc)
    {
        strides[1] = 1;
        strides[3] = dims[1];
        strides[2] = dims[3] * dims[1];
        strides[0] = dims[2] * dims[3] * dims[1];
    }
    else
    {
        strides[3] = 1;
        strides[2] = dims[3];
        strides[1] = dims[2] * dims[3];
        strides[0] = dims[1] * dims[2] * dims[3];
    }
    hipdnnBackendDescriptor_t t = create(HIPDNN_BACKEND_TENSOR_DESCRIPTOR);
    set_i64s(t, HIPDNN_ATTR_TENSOR_UNIQUE_ID, {uid});
    CHECK(hipdnnBackendSetAttribute(t, HIPDNN_ATTR_TENSOR_DATA_TYPE, HIPDNN_TYPE_DATA_TYPE, 1, &dt));
    set_i64s(t, HIPDNN_ATTR_TENSOR_DIMENSIONS, dims);
    set_i64s(t, HIPDNN_ATTR_TENSOR_STRIDES, strides);
    CHECK(hipdnnBackendFinalize(t));
    return t;
}

// Builds a conv fprop operation graph on `h` (unfinalized ops are finalized here).
hipdnnBackendDescriptor_t conv_graph(hipdnnHandle_t h, hipdnnDataType_t dt, bool nhwc)
{
    hipdnnBackendDescriptor_t x = tensor(1, dt, {1, 3, 6, 6}, nhwc);
    hipdnnBackendDescriptor_t w = tensor(2, dt, {4, 3, 3, 3}, nhwc);
    hipdnnBackendDescriptor_t y = tensor(3, dt, {1, 4, 6, 6}, nhwc);
    hipdnnBackendDescriptor_t op = create(HIPDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    set_desc(op, HIPDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
    set_desc(op, HIPDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
    set_desc(op, HIPDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
    hipdnnDataType_t comp = HIPDNN_DATA_FLOAT;
    CHECK(hipdnnBackendSetAttribute(op, HIPDNN_ATTR_CONVOLUTION_COMP_TYPE, HIPDNN_TYPE_DATA_TYPE, 1, &comp));
    hipdnnConvolutionMode_t mode = HIPDNN_CROSS_CORRELATION;
    CHECK(hipdnnBackendSetAttribute(op, HIPDNN_ATTR_CONVOLUTION_CONV_MODE, HIPDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    set_i64s(op, HIPDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {1, 1});
    set_i64s(op, HIPDNN_ATTR_CONVOLUTION_POST_PADDINGS, {1, 1});
    set_i64s(op, HIPDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {1, 1});
    set_i64s(op, HIPDNN_ATTR_CONVOLUTION_DILATIONS, {1, 1});
    CHECK(hipdnnBackendFinalize(op));

    hipdnnBackendDescriptor_t g = create(HIPDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    CHECK(hipdnnBackendSetAttribute(g, HIPDNN_ATTR_OPERATIONGRAPH_HANDLE, HIPDNN_TYPE_HANDLE, 1, &h));
    set_desc(g, HIPDNN_ATTR_OPERATIONGRAPH_OPS, op);
    CHECK(hipdnnBackendFinalize(g));
    // The graph holds snapshots: the building blocks can go now.
    for(hipdnnBackendDescriptor_t d : {x, w, y, op})
        CHECK(hipdnnBackendDestroyDescriptor(d));
    return g;
}

// Sets the handle of a deserialized graph and finalizes it.
void finalize_on(hipdnnBackendDescriptor_t g, hipdnnHandle_t h)
{
    CHECK(hipdnnBackendSetAttribute(g, HIPDNN_ATTR_OPERATIONGRAPH_HANDLE, HIPDNN_TYPE_HANDLE, 1, &h));
    CHECK(hipdnnBackendFinalize(g));
}

// Heuristic → first engine config → plan (the frontend's build_plans sequence).
hipdnnBackendDescriptor_t build_plan(hipdnnHandle_t h, hipdnnBackendDescriptor_t g)
{
    hipdnnBackendDescriptor_t heur = create(HIPDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    set_desc(heur, HIPDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g);
    hipdnnBackendHeurMode_t mode = HIPDNN_HEUR_MODE_FALLBACK;
    CHECK(hipdnnBackendSetAttribute(heur, HIPDNN_ATTR_ENGINEHEUR_MODE, HIPDNN_TYPE_HEUR_MODE, 1, &mode));
    CHECK(hipdnnBackendFinalize(heur));
    int64_t count = 0;
    CHECK(hipdnnBackendGetAttribute(heur, HIPDNN_ATTR_ENGINEHEUR_RESULTS, HIPDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    EXPECT(count >= 1, "heuristic gave %lld configs", (long long)count);
    std::vector<hipdnnBackendDescriptor_t> cfgs(count);
    for(auto& c : cfgs)
        c = create(HIPDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t got = 0;
    CHECK(hipdnnBackendGetAttribute(heur, HIPDNN_ATTR_ENGINEHEUR_RESULTS, HIPDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs.data()));
    EXPECT(got == count, "heuristic filled %lld of %lld", (long long)got, (long long)count);

    // The engine's behavior notes: plan serialization (4) must be among them.
    hipdnnBackendDescriptor_t engine = create(HIPDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t one = 0;
    CHECK(hipdnnBackendGetAttribute(cfgs[0], HIPDNN_ATTR_ENGINECFG_ENGINE, HIPDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one, &engine));
    hipdnnBackendBehaviorNote_t notes[8];
    int64_t n_notes = 0;
    CHECK(hipdnnBackendGetAttribute(engine, HIPDNN_ATTR_ENGINE_BEHAVIOR_NOTE, HIPDNN_TYPE_BEHAVIOR_NOTE, 8, &n_notes, notes));
    bool serializable = false;
    for(int64_t i = 0; i < n_notes; ++i)
        serializable |= notes[i] == HIPDNN_BEHAVIOR_NOTE_SUPPORTS_EXECUTION_PLAN_SERIALIZATION;
    EXPECT(serializable, "engine does not report SUPPORTS_EXECUTION_PLAN_SERIALIZATION");
    // Its numerical notes (cuDNN's values; upstream's header names the type only): readable,
    // each a known note, and never NONDETERMINISTIC (4): every engine here is deterministic.
    int32_t numeric[16];
    int64_t n_numeric = -1;
    CHECK(hipdnnBackendGetAttribute(engine, HIPDNN_ATTR_ENGINE_NUMERICAL_NOTE, HIPDNN_TYPE_NUMERICAL_NOTE, 16, &n_numeric, numeric));
    EXPECT(n_numeric >= 0 && n_numeric <= 2, "engine gave %lld numerical notes", (long long)n_numeric);
    for(int64_t i = 0; i < n_numeric; ++i)
        EXPECT(numeric[i] >= 0 && numeric[i] <= 8 && numeric[i] != 4, "numerical note %d", numeric[i]);

    hipdnnBackendDescriptor_t plan = create(HIPDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    CHECK(hipdnnBackendSetAttribute(plan, HIPDNN_ATTR_EXECUTION_PLAN_HANDLE, HIPDNN_TYPE_HANDLE, 1, &h));
    set_desc(plan, HIPDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[0]);
    CHECK(hipdnnBackendFinalize(plan));
    for(auto c : cfgs)
        CHECK(hipdnnBackendDestroyDescriptor(c));
    CHECK(hipdnnBackendDestroyDescriptor(engine));
    CHECK(hipdnnBackendDestroyDescriptor(heur));
    return plan;
}

struct Buffers
{
    std::vector<uint8_t> x, w, y;
};

std::vector<uint8_t> run(hipdnnHandle_t h, hipdnnBackendDescriptor_t plan, Buffers& b)
{
    int64_t ws = -1;
    CHECK(hipdnnBackendGetAttribute(plan, HIPDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, HIPDNN_TYPE_INT64, 1, nullptr, &ws));
    std::vector<uint8_t> workspace((size_t)ws + 1);
    std::fill(b.y.begin(), b.y.end(), 0xAB);
    hipdnnBackendDescriptor_t pack = create(HIPDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    int64_t uids[3] = {1, 2, 3};
    void* ptrs[3] = {b.x.data(), b.w.data(), b.y.data()};
    void* wsp = workspace.data();
    CHECK(hipdnnBackendSetAttribute(pack, HIPDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, HIPDNN_TYPE_INT64, 3, uids));
    CHECK(hipdnnBackendSetAttribute(pack, HIPDNN_ATTR_VARIANT_PACK_DATA_POINTERS, HIPDNN_TYPE_VOID_PTR, 3, ptrs));
    CHECK(hipdnnBackendSetAttribute(pack, HIPDNN_ATTR_VARIANT_PACK_WORKSPACE, HIPDNN_TYPE_VOID_PTR, 1, &wsp));
    CHECK(hipdnnBackendFinalize(pack));
    CHECK(hipdnnBackendExecute(h, plan, pack));
    CHECK(hipdnnBackendDestroyDescriptor(pack));
    return b.y;
}

// Two-call byte getters.
template <typename F>
std::vector<uint8_t> two_call(F get)
{
    size_t size = 0;
    CHECK(get(0, &size, nullptr));
    std::vector<uint8_t> out(size);
    if(size > 1)
    {
        size_t again = 0;
        hipdnnStatus_t s = get(size - 1, &again, out.data());
        EXPECT(s == HIPDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT && again == size,
               "short buffer: %s, size %zu", hipdnnGetErrorString(s), again);
    }
    CHECK(get(size, &size, out.data()));
    return out;
}

std::vector<uint8_t> graph_bytes(hipdnnBackendDescriptor_t g)
{
    return two_call([&](size_t r, size_t* s, uint8_t* o) { return hipdnnBackendGetSerializedBinaryGraph_ext(g, r, s, o); });
}

std::vector<uint8_t> container(hipdnnBackendDescriptor_t g, hipdnnBackendDescriptor_t p)
{
    return two_call([&](size_t r, size_t* s, uint8_t* o) {
        return hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(g, p, r, s, o);
    });
}

void case_(const std::string& dir, const char* tag, hipdnnDataType_t dt, bool nhwc)
{
    Buffers b;
    b.x = read_file(dir + "/x_" + tag + ".bin");
    b.w = read_file(dir + "/w_" + tag + ".bin");
    size_t elem = dt == HIPDNN_DATA_FLOAT ? 4 : 2;
    b.y.resize(4 * 6 * 6 * elem);
    if(b.x.size() != 3 * 6 * 6 * elem || b.w.size() != 4 * 3 * 3 * 3 * elem)
    {
        std::fprintf(stderr, "%s: input files missing or wrong size\n", tag);
        std::exit(1);
    }

    hipdnnHandle_t h = nullptr;
    CHECK(hipdnnCreate(&h));
    hipdnnBackendDescriptor_t g = conv_graph(h, dt, nhwc);
    hipdnnBackendDescriptor_t plan = build_plan(h, g);
    std::vector<uint8_t> y0 = run(h, plan, b);
    write_file(dir + "/y_" + tag + ".bin", y0);

    // (a) JSON round trip: size includes the NUL; rebuild, execute, compare bit for bit.
    std::vector<uint8_t> json = two_call([&](size_t r, size_t* s, uint8_t* o) {
        return hipdnnBackendGetSerializedJsonGraph_ext(g, r, s, reinterpret_cast<char*>(o));
    });
    EXPECT(!json.empty() && json.back() == 0, "%s: JSON is not NUL-terminated", tag);
    hipdnnBackendDescriptor_t gj = nullptr;
    CHECK(hipdnnBackendCreateAndDeserializeJsonGraph_ext(&gj, reinterpret_cast<const char*>(json.data()), json.size()));
    finalize_on(gj, h);
    hipdnnBackendDescriptor_t pj = build_plan(h, gj);
    EXPECT(run(h, pj, b) == y0, "%s: JSON round trip output differs", tag);

    // (b) binary round trip.
    std::vector<uint8_t> gb = graph_bytes(g);
    hipdnnBackendDescriptor_t gb2 = nullptr;
    CHECK(hipdnnBackendCreateAndDeserializeGraph_ext(&gb2, gb.data(), gb.size()));
    EXPECT(graph_bytes(gb2) == gb, "%s: unfinalized deserialized graph re-serializes differently", tag);
    finalize_on(gb2, h);
    hipdnnBackendDescriptor_t pb = build_plan(h, gb2);
    EXPECT(run(h, pb, b) == y0, "%s: binary round trip output differs", tag);

    // Plan only: save, load on the same handle, execute, re-save identically.
    std::vector<uint8_t> pbytes = two_call([&](size_t r, size_t* s, uint8_t* o) {
        return hipdnnBackendGetSerializedExecutionPlan_ext(plan, r, s, o);
    });
    hipdnnBackendDescriptor_t pl = nullptr;
    CHECK(hipdnnBackendCreateAndDeserializeExecutionPlan_ext(h, &pl, pbytes.data(), pbytes.size()));
    EXPECT(run(h, pl, b) == y0, "%s: loaded plan output differs", tag);
    std::vector<uint8_t> pbytes2 = two_call([&](size_t r, size_t* s, uint8_t* o) {
        return hipdnnBackendGetSerializedExecutionPlan_ext(pl, r, s, o);
    });
    EXPECT(pbytes2 == pbytes, "%s: loaded plan re-saves differently", tag);

    // Graph-and-plan container: save, inspect, load in a new handle, execute, re-save.
    std::vector<uint8_t> c = container(g, plan);
    write_file(dir + "/container_" + tag + ".bin", c);
    int flags = 0;
    CHECK(hipdnnBackendGetSerializedBinaryContents_ext(c.data(), c.size(), &flags));
    EXPECT(flags == (HIPDNN_SERIALIZED_CONTENT_GRAPH | HIPDNN_SERIALIZED_CONTENT_EXECUTION_PLAN), "%s: flags %d", tag, flags);
    hipdnnHandle_t h2 = nullptr;
    CHECK(hipdnnCreate(&h2));
    hipdnnBackendDescriptor_t g2 = nullptr;
    hipdnnBackendDescriptor_t p2 = nullptr;
    CHECK(hipdnnBackendCreateAndDeserializeGraph_ext(&g2, c.data(), c.size()));
    finalize_on(g2, h2);
    CHECK(hipdnnBackendCreateAndDeserializeExecutionPlan_ext(h2, &p2, c.data(), c.size()));
    int64_t engine_id = 0, n = 0;
    CHECK(hipdnnBackendGetAttribute(p2, HIPDNN_ATTR_EXECUTION_PLAN_ENGINE_GLOBAL_INDEX_EXT, HIPDNN_TYPE_INT64, 1, &n, &engine_id));
    char name[128];
    size_t name_len = sizeof name;
    CHECK(hipdnnGetEngineNameById_ext(h2, engine_id, name, &name_len));
    EXPECT(std::strcmp(name, "hipdnn.reference.cpu") == 0, "%s: engine %s", tag, name);
    EXPECT(run(h2, p2, b) == y0, "%s: container plan output differs in a new handle", tag);
    EXPECT(container(g2, p2) == c, "%s: loaded container re-saves differently", tag);

    // The SDK's container loads here, executes, and re-saves byte-identically.
    std::vector<uint8_t> sdk = read_file(dir + "/sdk_container_" + tag + ".bin");
    if(!sdk.empty())
    {
        hipdnnBackendDescriptor_t g3 = nullptr;
        hipdnnBackendDescriptor_t p3 = nullptr;
        CHECK(hipdnnBackendCreateAndDeserializeGraph_ext(&g3, sdk.data(), sdk.size()));
        CHECK(hipdnnBackendCreateAndDeserializeExecutionPlan_ext(h2, &p3, sdk.data(), sdk.size()));
        EXPECT(run(h2, p3, b) == y0, "%s: SDK container output differs", tag);
        EXPECT(container(g3, p3) == sdk, "%s: SDK container re-saves differently", tag);
        CHECK(hipdnnBackendDestroyDescriptor(g3));
        CHECK(hipdnnBackendDestroyDescriptor(p3));
    }

    for(hipdnnBackendDescriptor_t d : {g, plan, gj, pj, gb2, pb, pl, g2, p2})
        CHECK(hipdnnBackendDestroyDescriptor(d));
    CHECK(hipdnnDestroy(h2));
    CHECK(hipdnnDestroy(h));
}
} // namespace

int main(int argc, char** argv)
{
    if(argc != 2)
    {
        std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
        return 2;
    }
    int major = -1, minor = -1, patch = -1;
    const char* v = hipdnnVersionString_ext();
    if(!v || std::sscanf(v, "%d.%d.%d", &major, &minor, &patch) != 3 || major != 0)
    {
        std::fprintf(stderr, "version gate refuses \"%s\"\n", v ? v : "(null)");
        return 1;
    }
    const std::string dir = argv[1];
    const struct
    {
        const char* tag;
        hipdnnDataType_t dt;
        bool nhwc;
    } cases[] = {
        {"fp32_nchw", HIPDNN_DATA_FLOAT, false},
        {"fp32_nhwc", HIPDNN_DATA_FLOAT, true},
        {"fp16_nchw", HIPDNN_DATA_HALF, false},
        {"fp16_nhwc", HIPDNN_DATA_HALF, true},
        {"bf16_nchw", HIPDNN_DATA_BFLOAT16, false},
        {"bf16_nhwc", HIPDNN_DATA_BFLOAT16, true},
    };
    for(const auto& c : cases)
        case_(dir, c.tag, c.dt, c.nhwc);
    if(failures)
    {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("roundtrip: all checks passed\n");
    return 0;
}
