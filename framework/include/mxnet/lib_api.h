/*
 * mxnet/lib_api.h -- MXLab's version of the extension-library API of MXNet 1.9.1.
 *
 * A library written for MXNet 1.9.1 (custom operators, stateful operators, graph passes,
 * partitioners) compiles unchanged against this header plus its companion lib_api.cc:
 *
 *     g++ -shared -fPIC -std=c++17 -I <mxlab>/framework/include mylib.cc \
 *         <mxlab>/framework/include/lib_api.cc -o libmylib.so
 *
 * and loads with mx.library.load("libmylib.so"). `python -m framework.libinfo --include`
 * prints the include folder. The older single-header API (framework/include/lib_api.h,
 * no namespace) keeps working; the loader tells the two apart by _opVersion().
 *
 * What is here (names as in MXNet 1.9.1, all in namespace mxnet::ext):
 *   - data:        MXDType, MXStorageType, MXContext, MXTensor (+ DLPack view), MXReturnValue
 *   - resources:   OpResource (alloc_cpu, alloc_gpu, get_cuda_stream, get_cpu_rand_states,
 *                  get_gpu_rand_states), mx_stream_t, mx_cpu_rand_t, mx_gpu_rand_t
 *   - operators:   CustomOp (REGISTER_OP) with setForward/setBackward/setParseAttrs/
 *                  setInferType/setInferSType/setInferShape/setMutateInputs/
 *                  setCreateOpState/setIsSubgraphOp; CustomStatefulOp
 *   - graphs:      JsonVal (parse/dump), Graph and Node (fromString/toString, getNode,
 *                  addNode, topological_sort, DFS, alloc_arg/alloc_aux)
 *   - passes:      REGISTER_PASS(name).setBody(fn)
 *   - partitioners: REGISTER_PARTITIONER(name).addStrategy(strategy, subgraph_op)
 *                  .setSupportedOps / .setCreateSelector (CustomOpSelector) / .setReviewSubgraph
 *   - initialize(int version): MXLab calls it with 10901.
 *
 * Not supported (the call fails with a clear message): sparse tensors (alloc_sparse), GPU
 * execution in MXLab's CPU-only builds (a GPU context raises MXLab's usual "no GPU" error
 * before the library is called). GPU entry points still compile (setForward(fn, "gpu")).
 *
 * How it fits together: this header declares the C++ classes a library author uses;
 * lib_api.cc holds their code and the extern "C" functions (_opXxx, _passXxx, _partXxx)
 * through which MXLab's loader (framework/library/, via ctypes) reaches them.
 */
#ifndef MXNET_LIB_API_H_
#define MXNET_LIB_API_H_

#include <stdint.h>
#include <stddef.h>

#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#if defined(__NVCC__)
#include <cuda_runtime.h>
#include <curand_kernel.h>
#endif

/*! \brief The ABI version of this header pair (the loader's framework.library.LIBRARY_VERSION_1_9). */
#define MX_LIBRARY_VERSION 2

/*! \brief Exported, not inlined: the loader finds these symbols with dlsym. */
#define MX_EXPORT extern "C" __attribute__((visibility("default")))

/*! \brief Attribute keys MXNet 1.9.1 defines for subgraph operators and partitioning. */
#define MX_STR_SUBGRAPH_SYM_JSON "subgraph_sym_json"
#define MX_STR_DTYPE "__ext_dtype__"
#define MX_STR_SHAPE "__ext_shape__"
#define MX_STR_EXTRA_INPUTS "__ext_extra_inputs__"

/*! \brief How many random generators OpResource hands out per device. */
#define MX_NUM_CPU_RANDOM_STATES 1024
#define MX_NUM_GPU_RANDOM_STATES 32768

/* DLPack (https://github.com/dmlc/dlpack), the minimal subset MXTensor::dltensor needs. */
#ifndef DLPACK_VERSION
#define DLPACK_VERSION 020
typedef enum { kDLCPU = 1, kDLGPU = 2, kDLCPUPinned = 3 } DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int device_id;
} DLContext;
typedef enum { kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U } DLDataTypeCode;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void* data;
  DLContext ctx;
  int ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
#endif

namespace mxnet {
namespace ext {

/*! \brief What every library function returns. */
enum MXReturnValue { MX_FAIL = 0, MX_SUCCESS = 1 };

/*! \brief Element types, numbered as mshadow's type flags. */
enum MXDType {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kUint8 = 3,
  kInt32 = 4,
  kInt8 = 5,
  kInt64 = 6,
  kUNSET = 100
};

/*! \brief Storage types; MXLab's arrays are dense, so only kDefaultStorage is accepted. */
enum MXStorageType { kDefaultStorage = 0, kRowSparseStorage = 1, kCSRStorage = 2 };

/*! \brief Where a tensor lives: "cpu" or "gpu", and the device number. */
struct MXContext {
  MXContext();
  MXContext(std::string dev_type_, int dev_id_);
  MXContext(const char* dev_type_, int dev_id_);
  static MXContext CPU();
  static MXContext GPU();
  static MXContext CPU(int dev_id);
  static MXContext GPU(int dev_id);
  void debug_print() const;
  std::string dev_type;
  int dev_id;
};

/*! \brief Sparse arrays are not supported by MXLab; the type exists so code that names it compiles. */
struct MXSparse {
  void* data = nullptr;
  int64_t data_len = 0;
  int64_t* indices = nullptr;
  int64_t indices_len = 0;
  int64_t* indptr = nullptr;
  int64_t indptr_len = 0;
};

/*! \brief A view of one array: MXLab owns the memory (C-contiguous), the library reads or writes it. */
struct MXTensor {
  MXTensor();
  MXTensor(const MXTensor& other);
  MXTensor& operator=(const MXTensor& other);
  MXTensor(void* data_ptr, std::vector<int64_t> shape, MXDType dtype, size_t vID, MXContext mx_ctx,
           MXStorageType stype = kDefaultStorage);
  /*! \brief Re-point this view (MXLab uses it to fill tensors it created). */
  void setTensor(void* dptr, MXDType type, const int64_t* dims, int ndims, size_t vID, MXContext mx_ctx,
                 MXStorageType storage_type);
  /*! \brief Refresh the DLPack view after data_ptr, shape or dtype changed. */
  void setDLTensor();
  template <typename data_type>
  inline data_type* data() {
    return reinterpret_cast<data_type*>(data_ptr);
  }
  /*! \brief Number of elements (product of shape). */
  int64_t size() const;
  /*! \brief Same memory, shape, dtype, version and device. */
  bool isSame(const MXTensor& other) const;

  void* data_ptr;
  std::vector<int64_t> shape;
  MXDType dtype;
  size_t verID;
  MXContext ctx;
  DLTensor dltensor;
  MXStorageType stype;
};

/*! \brief The allocator MXLab passes in: (allocator context, bytes) -> memory valid for this call. */
typedef void* (*xpu_malloc_t)(void*, size_t);

#if defined(__NVCC__)
typedef cudaStream_t mx_stream_t;
typedef curandStatePhilox4_32_10_t mx_gpu_rand_t;
#else
typedef void* mx_stream_t;
typedef void* mx_gpu_rand_t;
#endif
typedef std::mt19937 mx_cpu_rand_t;

/*!
 * \brief What a compute call may use besides its tensors: temporary memory (freed by MXLab
 * after the call), the device stream, and random generators seeded from MXLab's random state
 * (mx.random.seed makes library randomness repeatable).
 */
class OpResource {
 public:
  OpResource(xpu_malloc_t cpu_malloc, xpu_malloc_t gpu_malloc, void* alloc_ctx, void* stream, uint64_t seed);
  void* alloc_cpu(int size) const;
  void* alloc_gpu(int size) const;
  /*! \brief Inline: its type is cudaStream_t in a .cu file and void* elsewhere (lib_api.cc is built by g++). */
  inline mx_stream_t get_cuda_stream() const { return static_cast<mx_stream_t>(stream_); }
  void alloc_sparse(MXSparse* sparse, int index, int indices_len, int indptr_len = 0) const;
  /*! \brief MX_NUM_CPU_RANDOM_STATES generators, seeded for this call. */
  mx_cpu_rand_t* get_cpu_rand_states() const;
  /*! \brief GPU generators: MXLab has none to give (NULL). Inline for the same reason. */
  inline mx_gpu_rand_t* get_gpu_rand_states() const { return nullptr; }

 private:
  xpu_malloc_t cpu_malloc_, gpu_malloc_;
  void* alloc_ctx_;
  void* stream_;
  uint64_t seed_;
};

/*! \brief The message stream MX_FAIL reports: MX_ERROR_MSG << "what went wrong"; */
std::stringstream& error_stream();
#define MX_ERROR_MSG ::mxnet::ext::error_stream()

/*!
 * \brief Base class of a stateful operator: createOpState makes one instance per graph node
 * and device; Forward/Backward see the same instance on every call.
 */
class CustomStatefulOp {
 public:
  CustomStatefulOp();
  virtual ~CustomStatefulOp();
  /*! \brief new A(args...), marked as made through this factory (wasCreated). */
  template <class A, typename... Ts>
  static CustomStatefulOp* create(Ts... args) {
    CustomStatefulOp* op = new A(args...);
    op->created_ = true;
    return op;
  }
  bool wasCreated() const { return created_; }
  virtual MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                                const OpResource& op_res) = 0;
  virtual MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                                 const OpResource& op_res);
  bool ignore_warn;

 private:
  bool created_ = false;
};

/* ------------------------------------------------------------------------------ JSON */
enum JsonType { ERR, STR, NUM, LIST, MAP };

/*! \brief A JSON value as MXNet 1.9.1's lib_api models it: numbers are ints, keys are JsonVals. */
struct JsonVal {
  JsonVal();
  explicit JsonVal(JsonType t);
  JsonVal(std::string s);  // NOLINT: implicit, as in MXNet (map[JsonVal("nodes")] and map["nodes"])
  JsonVal(const char* s);  // NOLINT
  JsonVal(int n);          // NOLINT
  JsonVal(JsonType t, int n, std::string s);
  bool operator<(const JsonVal& o) const;
  /*! \brief Compact JSON text of this value. */
  std::string dump() const;
  /*! \brief Parse JSON text; throws std::runtime_error naming the position on bad input. */
  static JsonVal parse(const std::string& json);
  /*! \brief The same text as dump(), for printing while debugging. */
  std::string toString() const;
  void print() const;

  JsonType type;
  int num;
  std::string str;
  std::vector<JsonVal> list;
  std::map<JsonVal, JsonVal> map;
};

/* ------------------------------------------------------------------------------ graphs */
class Node;
class Graph;

/*! \brief One output of a node: which node, which of its outputs. */
struct NodeEntry {
  Node* node;
  int entry;
};

/*! \brief One node of a Graph: an operator call, or an input ("null" op). */
class Node {
 public:
  Node();
  /*! \brief Make this input node a new parameter (argument) of the graph, stored by MXLab. */
  void alloc_arg(const std::vector<int64_t>& shapes, const MXContext& ctx, MXDType dtype);
  /*! \brief Same, as an auxiliary state. */
  void alloc_aux(const std::vector<int64_t>& shapes, const MXContext& ctx, MXDType dtype);

  std::string op;
  std::string name;
  std::vector<NodeEntry> inputs;
  std::vector<NodeEntry> outputs;
  /*! \brief The node's value when known: parameters MXLab passed in, or what alloc_arg made. */
  MXTensor* tensor;
  std::unordered_map<std::string, std::string> attrs;
  std::vector<Graph*> subgraphs;
  /*! \brief The graph that owns this node (alloc_arg stores new parameters there). */
  Graph* owner;
};

/*!
 * \brief A symbol's graph (the nodes of its JSON, in order). Owns its nodes and subgraphs.
 * getNode(i) is the i-th node of the JSON "nodes" list.
 */
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  static Graph* fromString(const std::string& json);
  static Graph* fromJson(JsonVal val);
  JsonVal toJson() const;
  std::string toString() const;
  void print(int indent = 0) const;
  /*! \brief Nodes ordered so every node comes after its inputs (from the outputs, depth first). */
  std::vector<Node*> topological_sort() const;
  /*! \brief Visit every node reachable from the outputs, inputs first. */
  void DFS(std::function<void(Node*)> handler) const;
  Node* addNode(const std::string& name, const std::string& op);
  Node* getNode(size_t idx);
  const Node* getNode(size_t idx) const;
  const JsonVal& getAttr(const std::string& key) const;
  size_t size() const;

  /*! \brief Input nodes (the JSON's arg_nodes), outputs (its heads), graph attributes. */
  std::vector<Node*> inputs;
  std::vector<NodeEntry> outputs;
  std::map<std::string, JsonVal> attrs;

  /*! \brief A parameter a pass created with alloc_arg/alloc_aux: MXLab copies it out after the pass. */
  struct NewParam {
    std::string name;
    bool is_arg;
    std::vector<int64_t> shape;
    MXDType dtype;
    std::vector<char> bytes;
    MXTensor tensor;
  };
  /*! \brief Storage of the parameters created by alloc_arg/alloc_aux (pointer-stable). */
  std::vector<NewParam*> new_params;

 private:
  std::vector<Node*> nodes_;
};

/*! \brief The value at position index of a list attribute like "[[2,3],[4]]" (__ext_shape__). */
std::string getShapeAt(const std::string& shape, unsigned index);
/*! \brief The value at position index of a list attribute like "[0,0]" (__ext_dtype__). */
std::string getDtypeAt(const std::string& dtype, unsigned index);

/* ------------------------------------------------------------------------------ operators */
typedef MXReturnValue (*fcomp_t)(const std::unordered_map<std::string, std::string>& attributes,
                                 std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                                 const OpResource& res);
typedef MXReturnValue (*parseAttrs_t)(const std::unordered_map<std::string, std::string>& attributes,
                                      int* num_inputs, int* num_outputs);
typedef MXReturnValue (*inferType_t)(const std::unordered_map<std::string, std::string>& attributes,
                                     std::vector<int>* in_types, std::vector<int>* out_types);
typedef MXReturnValue (*inferSType_t)(const std::unordered_map<std::string, std::string>& attributes,
                                      std::vector<int>* in_storage_types, std::vector<int>* out_storage_types);
typedef MXReturnValue (*inferShape_t)(const std::unordered_map<std::string, std::string>& attributes,
                                      std::vector<std::vector<unsigned int>>* in_shapes,
                                      std::vector<std::vector<unsigned int>>* out_shapes);
typedef MXReturnValue (*mutateInputs_t)(const std::unordered_map<std::string, std::string>& attributes,
                                        std::vector<int>* input_indices);
typedef MXReturnValue (*createOpState_t)(const std::unordered_map<std::string, std::string>& attributes,
                                         const MXContext& ctx,
                                         const std::vector<std::vector<unsigned int>>& in_shapes,
                                         const std::vector<int> in_types, CustomStatefulOp** op_inst);

/*! \brief One operator's registered functions; REGISTER_OP(name) returns it for chaining. */
class CustomOp {
 public:
  explicit CustomOp(const char* op_name);
  CustomOp& setForward(fcomp_t fcomp, const char* ctx);
  CustomOp& setBackward(fcomp_t fcomp, const char* ctx);
  CustomOp& setParseAttrs(parseAttrs_t func);
  CustomOp& setInferType(inferType_t func);
  CustomOp& setInferSType(inferSType_t func);
  CustomOp& setInferShape(inferShape_t func);
  CustomOp& setMutateInputs(mutateInputs_t func);
  CustomOp& setCreateOpState(createOpState_t func, const char* ctx);
  CustomOp& setIsSubgraphOp();

  const char* name;
  /*! \brief Index 0 cpu, 1 gpu. */
  fcomp_t forward[2] = {nullptr, nullptr};
  fcomp_t backward[2] = {nullptr, nullptr};
  createOpState_t create_op_state[2] = {nullptr, nullptr};
  parseAttrs_t parse_attrs = nullptr;
  inferType_t infer_type = nullptr;
  inferSType_t infer_stype = nullptr;
  inferShape_t infer_shape = nullptr;
  mutateInputs_t mutate_inputs = nullptr;
  bool isSGop = false;
};

/* ------------------------------------------------------------------------------ passes */
typedef MXReturnValue (*graphPass_t)(mxnet::ext::Graph* graph,
                                     const std::unordered_map<std::string, std::string>& options);

/*! \brief A graph pass: sym.optimize_for("<name>") runs its body on the symbol's Graph. */
class CustomPass {
 public:
  explicit CustomPass(const char* pass_name);
  CustomPass& setBody(graphPass_t fn);
  const char* name;
  graphPass_t pass = nullptr;
};

/* ------------------------------------------------------------------------------ partitioners */
/*!
 * \brief Grows subgraphs node by node (MXNet's SubgraphSelector): Select starts a subgraph at a
 * node, SelectInput/SelectOutput extend it along an edge, Filter trims the candidate set.
 */
class CustomOpSelector {
 public:
  virtual bool Select(int nodeID) = 0;
  virtual bool SelectInput(int nodeID, int input_nodeID) = 0;
  virtual bool SelectOutput(int nodeID, int output_nodeID) = 0;
  /*! \brief Of the grown subgraph's nodes (candidates), those to keep (default: all). */
  virtual void Filter(const std::vector<int>& candidates, std::vector<int>* keep);
  virtual void Reset();
  virtual ~CustomOpSelector();
};

typedef MXReturnValue (*supportedOps_t)(const mxnet::ext::Graph* graph, std::vector<int>* ids,
                                        const std::unordered_map<std::string, std::string>& options);
typedef MXReturnValue (*createSelector_t)(const mxnet::ext::Graph* graph, CustomOpSelector** sel_inst,
                                          const std::unordered_map<std::string, std::string>& options);
typedef MXReturnValue (*reviewSubgraph_t)(const mxnet::ext::Graph* subgraph, int subgraph_id, bool* accept,
                                          const std::unordered_map<std::string, std::string>& options,
                                          std::unordered_map<std::string, std::string>* attrs);

/*! \brief A partitioner backend: named strategies, each with a subgraph operator and a way to choose nodes. */
class CustomPartitioner {
 public:
  explicit CustomPartitioner(const char* backend_name);
  CustomPartitioner& addStrategy(const char* prop_name, const char* sg_name);
  CustomPartitioner& setSupportedOps(const char* prop_name, supportedOps_t fn);
  CustomPartitioner& setCreateSelector(const char* prop_name, createSelector_t fn);
  CustomPartitioner& setReviewSubgraph(const char* prop_name, reviewSubgraph_t fn);
  supportedOps_t getSupportedOps(int stg_id) const;
  createSelector_t getCreateSelector(int stg_id) const;
  reviewSubgraph_t getReviewSubgraph(int stg_id) const;

  const char* name;
  std::vector<const char*> strategies;
  std::vector<const char*> op_names;
  std::map<std::string, supportedOps_t> supported_map;
  std::map<std::string, createSelector_t> selector_map;
  std::map<std::string, reviewSubgraph_t> review_map;
};

/* ------------------------------------------------------------------------------ registries */
/*!
 * \brief One list per kind of component; the static objects REGISTER_* defines add to them.
 * get() is defined in lib_api.cc (not inline) and hidden: an inline function's static would be
 * one object per *process* (a GNU "unique" symbol), so two loaded libraries would share lists.
 */
template <class T>
class __attribute__((visibility("hidden"))) Registry {
 public:
  static Registry* get();
  T& add(const char* name) {
    entries_.push_back(new T(name));
    return *entries_.back();
  }
  int size() const { return static_cast<int>(entries_.size()); }
  T& get(int idx) { return *entries_.at(idx); }

 private:
  std::vector<T*> entries_;
};

template <>
Registry<CustomOp>* Registry<CustomOp>::get();
template <>
Registry<CustomPass>* Registry<CustomPass>::get();
template <>
Registry<CustomPartitioner>* Registry<CustomPartitioner>::get();

#define MX_STR_CONCAT_(a, b) a##b
#define MX_STR_CONCAT(a, b) MX_STR_CONCAT_(a, b)
#define MX_TOSTRING_(x) #x
#define MX_TOSTRING(x) MX_TOSTRING_(x)

#define REGISTER_OP(Name)                                                 \
  static mxnet::ext::CustomOp& MX_STR_CONCAT(__mx_ext_op_, __COUNTER__) = \
      mxnet::ext::Registry<mxnet::ext::CustomOp>::get()->add(MX_TOSTRING(Name))

#define REGISTER_PASS(Name)                                                   \
  static mxnet::ext::CustomPass& MX_STR_CONCAT(__mx_ext_pass_, __COUNTER__) = \
      mxnet::ext::Registry<mxnet::ext::CustomPass>::get()->add(MX_TOSTRING(Name))

#define REGISTER_PARTITIONER(Name)                                                   \
  static mxnet::ext::CustomPartitioner& MX_STR_CONCAT(__mx_ext_part_, __COUNTER__) = \
      mxnet::ext::Registry<mxnet::ext::CustomPartitioner>::get()->add(MX_TOSTRING(Name))

}  // namespace ext
}  // namespace mxnet

/*! \brief Every library defines this: called once when MXLab loads it, with the version 10901. */
extern "C" mxnet::ext::MXReturnValue initialize(int version);

#endif  // MXNET_LIB_API_H_
