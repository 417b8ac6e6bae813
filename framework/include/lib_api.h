/*
 * lib_api.h -- the one header an MXLab custom-operator library needs.
 *
 * MXLab (a learner's rebuild of Apache MXNet 1.x) can load operators written in C++
 * (and CUDA) at run time with mx.library.load(path). A library includes this header,
 * defines initialize(int version) and registers its operators with REGISTER_OP(name).
 * Nothing else from MXLab is needed:
 *
 *     g++ -shared -fPIC -std=c++11 -I framework/include -o libmyop.so myop.cc
 *     nvcc -shared -Xcompiler -fPIC -std=c++11 -I framework/include -o libmyop.so myop.cu
 *
 * This is the older API (seed 003). Libraries written for MXNet 1.9.1 (namespace mxnet::ext,
 * graph passes, partitioners) use mxnet/lib_api.h plus lib_api.cc from the same folder;
 * mx.library.load accepts both.
 *
 * How the pieces fit
 * ------------------
 * The user-facing part is C++11 (std::vector, std::string, classes). The boundary with
 * MXLab is plain C: at the bottom of this header are the extern "C" functions named
 * _opXxx that MXLab's loader (framework/library/, through ctypes) calls. They receive
 * raw pointers and sizes, build the C++ objects below (MXTensor, OpResource, attribute
 * maps), call the functions the library registered, and turn both MX_FAIL and C++
 * exceptions into an error code plus a message (never a crash, never an exception crossing
 * the C boundary). Because these functions are defined in the header, every library that
 * includes it exports the same ABI; a library must include it in exactly one translation
 * unit (the registry and the exported functions are defined here).
 *
 * Function signatures (as in MXNet 1.x's lib_api.h):
 *
 *   MXReturnValue initialize(int version);
 *   MXReturnValue parseAttrs(const std::unordered_map<std::string, std::string>& attrs,
 *                            int* num_in, int* num_out);
 *   MXReturnValue inferType(const std::unordered_map<std::string, std::string>& attrs,
 *                           std::vector<int>* intypes, std::vector<int>* outtypes);
 *   MXReturnValue inferSType(const std::unordered_map<std::string, std::string>& attrs,
 *                            std::vector<int>* instypes, std::vector<int>* outstypes);
 *   MXReturnValue inferShape(const std::unordered_map<std::string, std::string>& attrs,
 *                            std::vector<std::vector<unsigned int>>* inshapes,
 *                            std::vector<std::vector<unsigned int>>* outshapes);
 *   MXReturnValue forward(const std::unordered_map<std::string, std::string>& attrs,
 *                         std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
 *                         const OpResource& res);          // backward: same signature
 *   MXReturnValue mutateInputs(const std::unordered_map<std::string, std::string>& attrs,
 *                              std::vector<int>* input_indices);
 *   MXReturnValue createOpState(const std::unordered_map<std::string, std::string>& attrs,
 *                               CustomStatefulOp** op_inst);
 *
 * (createOpState may also take `std::map<std::string, std::string> attrs` by value, as
 * seed 003 shows; both forms are accepted by setCreateOpState.)
 *
 * Backward convention: backward's inputs are the output gradients, then the forward
 * inputs, then the forward outputs; its outputs are one gradient per forward input.
 *
 * Write requests: MXLab always calls forward/backward with req = write. When the graph
 * asks to *add* to an output (gradient accumulation), MXLab hands the library a zeroed
 * temporary and adds it itself, so library code only ever overwrites its outputs.
 *
 * Errors: return MX_FAIL, optionally after writing a message with
 *     MX_ERROR_MSG << "dims mismatch: " << n << " vs " << k;
 * or throw any std::exception. MXLab raises a Python MXLabError naming the library, the
 * operator, the step (parseAttrs, inferShape, forward, ...) and that message.
 */
#ifndef MXLAB_LIB_API_H_
#define MXLAB_LIB_API_H_

#include <stdint.h>
#include <stddef.h>

#include <exception>
#include <stdexcept>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

/*! \brief The ABI version of this header. mx.library.load refuses a library built against
 *  a different version (the loader's framework.library.LIBRARY_VERSION). */
#define MX_LIBRARY_VERSION 1

/*! \brief Exported, not inlined: the loader finds these symbols with dlsym. */
#define MX_EXPORT __attribute__((visibility("default")))

/*! \brief Largest number of dimensions a shape may have when crossing the boundary. */
#define MX_MAX_NDIM 32

/*! \brief What every library function returns. */
enum MXReturnValue { MX_FAIL = 0, MX_SUCCESS = 1 };

/*! \brief Element types, numbered as in MXNet (mshadow's type flags). */
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

/*! \brief Storage types. MXLab's NDArrays are dense; inferSType may only choose
 *  kDefaultStorage (any other choice makes the call fail with a clear error). */
enum MXStorageType { kDefaultStorage = 0, kRowSparseStorage = 1, kCSRStorage = 2 };

/* ----------------------------------------------------------------------------------
 * DLPack (https://github.com/dmlc/dlpack), the minimal subset: a standard view of an
 * n-dimensional array that other libraries understand. MXTensor::dltensor is one.
 * ---------------------------------------------------------------------------------- */
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

/*! \brief Where a tensor lives: dev_type "cpu" or "gpu", and the device number. */
struct MXContext {
  MXContext() : dev_type("cpu"), dev_id(0) {}
  MXContext(std::string type, int id) : dev_type(type), dev_id(id) {}
  static MXContext CPU(int id = 0) { return MXContext("cpu", id); }
  static MXContext GPU(int id = 0) { return MXContext("gpu", id); }
  std::string dev_type;
  int dev_id;
};

/*!
 * \brief A view of one input or output array: MXLab owns the memory, the library reads
 * (inputs) or writes (outputs) it. Arrays are C-contiguous (row major).
 */
struct MXTensor {
  MXTensor() : data_ptr(NULL), dtype(kUNSET) {}
  MXTensor(void* data, const std::vector<int64_t>& shape_, MXDType dtype_, MXContext ctx_)
      : data_ptr(data), shape(shape_), dtype(dtype_), ctx(ctx_) {
    setDLTensor();
  }

  /*! \brief Fill the DLPack view from data_ptr, shape, dtype and ctx. */
  void setDLTensor() {
    dltensor.data = data_ptr;
    dltensor.ctx.device_type = ctx.dev_type == "gpu" ? kDLGPU : kDLCPU;
    dltensor.ctx.device_id = ctx.dev_id;
    dltensor.ndim = static_cast<int>(shape.size());
    dltensor.shape = shape.empty() ? NULL : &shape[0];
    dltensor.strides = NULL;  // compact, row major
    dltensor.byte_offset = 0;
    dltensor.dtype.lanes = 1;
    switch (dtype) {
      case kFloat32: dltensor.dtype.code = kDLFloat; dltensor.dtype.bits = 32; break;
      case kFloat64: dltensor.dtype.code = kDLFloat; dltensor.dtype.bits = 64; break;
      case kFloat16: dltensor.dtype.code = kDLFloat; dltensor.dtype.bits = 16; break;
      case kUint8: dltensor.dtype.code = kDLUInt; dltensor.dtype.bits = 8; break;
      case kInt32: dltensor.dtype.code = kDLInt; dltensor.dtype.bits = 32; break;
      case kInt8: dltensor.dtype.code = kDLInt; dltensor.dtype.bits = 8; break;
      case kInt64: dltensor.dtype.code = kDLInt; dltensor.dtype.bits = 64; break;
      default: dltensor.dtype.code = kDLFloat; dltensor.dtype.bits = 0; break;
    }
  }

  /*! \brief The data as T* (check dtype first: kFloat32 -> float, kInt64 -> int64_t ...). */
  template <typename T>
  inline T* data() const {
    return reinterpret_cast<T*>(data_ptr);
  }

  /*! \brief Number of elements (the product of shape). */
  inline int64_t size() const {
    int64_t n = 1;
    for (size_t i = 0; i < shape.size(); ++i) n *= shape[i];
    return n;
  }

  /*! \brief True when both tensors have the same data pointer, dtype and shape. */
  bool isSame(const MXTensor& other) const {
    return data_ptr == other.data_ptr && dtype == other.dtype && shape == other.shape;
  }

  void* data_ptr;               /*!< \brief first element */
  std::vector<int64_t> shape;   /*!< \brief dimensions, row major */
  MXDType dtype;                /*!< \brief element type */
  MXContext ctx;                /*!< \brief device */
  DLTensor dltensor;            /*!< \brief the same array as a DLPack tensor */
};

/*! \brief A CUDA stream handle (cudaStream_t) as an opaque pointer. */
typedef void* mx_stream_t;
/*! \brief MXLab's allocator callback: (opaque context, bytes) -> pointer or NULL. */
typedef void* (*mxlab_alloc_t)(void*, size_t);

/*!
 * \brief Resources MXLab lends to one forward/backward call.
 *
 * Memory from alloc_cpu / alloc_gpu is owned by MXLab and valid until the call returns;
 * do not free it. get_cuda_stream() is the stream MXLab runs this operator on (launch
 * kernels on it so they are ordered with the rest of the graph); NULL on CPU.
 */
class OpResource {
 public:
  OpResource() : cpu_alloc_(NULL), gpu_alloc_(NULL), alloc_ctx_(NULL), stream_(NULL) {}
  OpResource(mxlab_alloc_t cpu, mxlab_alloc_t gpu, void* alloc_ctx, void* stream)
      : cpu_alloc_(cpu), gpu_alloc_(gpu), alloc_ctx_(alloc_ctx), stream_(stream) {}

  /*! \brief size bytes of CPU memory (NULL if MXLab could not allocate). */
  void* alloc_cpu(int size) const { return cpu_alloc_ ? cpu_alloc_(alloc_ctx_, static_cast<size_t>(size)) : NULL; }
  /*! \brief size bytes of memory on the call's GPU (NULL on a CPU-only run). */
  void* alloc_gpu(int size) const { return gpu_alloc_ ? gpu_alloc_(alloc_ctx_, static_cast<size_t>(size)) : NULL; }
  /*! \brief The CUDA stream of this call (NULL on CPU). */
  mx_stream_t get_cuda_stream() const { return stream_; }

 private:
  mxlab_alloc_t cpu_alloc_;
  mxlab_alloc_t gpu_alloc_;
  void* alloc_ctx_;
  void* stream_;
};

/*!
 * \brief Base class of a stateful operator: MXLab creates one instance per executor node
 * (per imperative call site) and context with the registered createOpState, calls its
 * Forward/Backward for every run, and deletes it when the node goes away.
 */
class CustomStatefulOp {
 public:
  virtual MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                                const OpResource& op_res) = 0;
  virtual MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                                 const OpResource& op_res) {
    (void)inputs; (void)outputs; (void)op_res;
    throw std::runtime_error("this stateful operator does not implement Backward");
  }
  virtual ~CustomStatefulOp() {}
};

/* ---------------------------------------------------------------------------------- */
/*  Error messages                                                                      */
/* ---------------------------------------------------------------------------------- */
// Internal linkage (static) on purpose: function-local statics of inline functions become
// process-wide "unique" symbols that two loaded libraries would share.
namespace mxlab_detail {
/*! \brief The message of the last failure on this thread (MX_ERROR_MSG writes it). */
static std::ostringstream& error_stream() {
  static thread_local std::ostringstream stream;
  return stream;
}
static std::string& last_error() {
  static thread_local std::string message;
  return message;
}
}  // namespace mxlab_detail

/*! \brief Stream a message explaining why the next MX_FAIL happens. */
#define MX_ERROR_MSG ::mxlab_detail::error_stream()

/* ---------------------------------------------------------------------------------- */
/*  Registration                                                                        */
/* ---------------------------------------------------------------------------------- */
typedef std::unordered_map<std::string, std::string> MXAttrs;
typedef MXReturnValue (*parseAttrs_t)(const MXAttrs&, int*, int*);
typedef MXReturnValue (*inferType_t)(const MXAttrs&, std::vector<int>*, std::vector<int>*);
typedef MXReturnValue (*inferSType_t)(const MXAttrs&, std::vector<int>*, std::vector<int>*);
typedef MXReturnValue (*inferShape_t)(const MXAttrs&, std::vector<std::vector<unsigned int>>*,
                                      std::vector<std::vector<unsigned int>>*);
typedef MXReturnValue (*fcomp_t)(const MXAttrs&, std::vector<MXTensor>*, std::vector<MXTensor>*,
                                 const OpResource&);
typedef MXReturnValue (*mutateInputs_t)(const MXAttrs&, std::vector<int>*);
typedef MXReturnValue (*createOpState_t)(const MXAttrs&, CustomStatefulOp**);
typedef MXReturnValue (*createOpStateMap_t)(std::map<std::string, std::string>, CustomStatefulOp**);
typedef std::function<MXReturnValue(const MXAttrs&, CustomStatefulOp**)> createOpStateFn;
typedef std::function<MXReturnValue(const MXAttrs&, std::vector<MXTensor>*, std::vector<MXTensor>*,
                                    const OpResource&)>
    fcompFn;
/*! \brief The by-value form of seed 003's GPU example: forwardGPU(std::map attrs, std::vector<MXTensor>
 *  inputs, std::vector<MXTensor> outputs, OpResource res); outputs are views, so writes still land. */
typedef MXReturnValue (*fcompByValue_t)(std::map<std::string, std::string>, std::vector<MXTensor>,
                                        std::vector<MXTensor>, OpResource);

/*! \brief Device slot: 0 = "cpu", 1 = "gpu"; anything else is rejected at registration. */
inline int mxlab_device_index(const char* ctx) {
  std::string c(ctx ? ctx : "");
  if (c == "cpu") return 0;
  if (c == "gpu") return 1;
  throw std::runtime_error("context must be \"cpu\" or \"gpu\", got \"" + c + "\"");
}

/*!
 * \brief Everything registered for one operator (REGISTER_OP returns one; chain setters).
 */
class CustomOp {
 public:
  explicit CustomOp(const char* op_name)
      : name(op_name), parse_attrs(NULL), infer_type(NULL), infer_stype(NULL), infer_shape(NULL),
        mutate_inputs(NULL) {}
  /*! \brief Required: number of inputs/outputs from the attributes, and attribute checks. */
  CustomOp& setParseAttrs(parseAttrs_t fn) { parse_attrs = fn; return *this; }
  /*! \brief Required: output dtypes (MXDType codes) from input dtypes. */
  CustomOp& setInferType(inferType_t fn) { infer_type = fn; return *this; }
  /*! \brief Optional: storage types; MXLab accepts only kDefaultStorage (dense). */
  CustomOp& setInferSType(inferSType_t fn) { infer_stype = fn; return *this; }
  /*! \brief Required: output shapes from input shapes. */
  CustomOp& setInferShape(inferShape_t fn) { infer_shape = fn; return *this; }
  /*! \brief Forward for one context ("cpu" or "gpu"); required unless setCreateOpState is used. */
  CustomOp& setForward(fcomp_t fn, const char* ctx) { forward[mxlab_device_index(ctx)] = fn; return *this; }
  CustomOp& setForward(fcompByValue_t fn, const char* ctx) { forward[mxlab_device_index(ctx)] = by_value(fn); return *this; }
  /*! \brief Optional backward for one context; without it the operator is not differentiable. */
  CustomOp& setBackward(fcomp_t fn, const char* ctx) { backward[mxlab_device_index(ctx)] = fn; return *this; }
  CustomOp& setBackward(fcompByValue_t fn, const char* ctx) {
    backward[mxlab_device_index(ctx)] = by_value(fn);
    return *this;
  }
  /*! \brief Optional: indices of inputs the operator writes (auxiliary states). */
  CustomOp& setMutateInputs(mutateInputs_t fn) { mutate_inputs = fn; return *this; }
  /*! \brief Stateful operator factory for one context (replaces setForward/setBackward). */
  CustomOp& setCreateOpState(createOpState_t fn, const char* ctx) {
    create_op_state[mxlab_device_index(ctx)] = fn;
    return *this;
  }
  /*! \brief The same, for a factory taking std::map by value (seed 003's form). */
  CustomOp& setCreateOpState(createOpStateMap_t fn, const char* ctx) {
    create_op_state[mxlab_device_index(ctx)] = [fn](const MXAttrs& attrs, CustomStatefulOp** inst) {
      return fn(std::map<std::string, std::string>(attrs.begin(), attrs.end()), inst);
    };
    return *this;
  }

  static fcompFn by_value(fcompByValue_t fn) {
    return [fn](const MXAttrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res) {
      return fn(std::map<std::string, std::string>(attrs.begin(), attrs.end()), *in, *out, res);
    };
  }

  const char* name;
  parseAttrs_t parse_attrs;
  inferType_t infer_type;
  inferSType_t infer_stype;
  inferShape_t infer_shape;
  mutateInputs_t mutate_inputs;
  fcompFn forward[2];
  fcompFn backward[2];
  createOpStateFn create_op_state[2];
};

namespace {  // internal linkage: each library keeps its own registry
/*! \brief The library's operators, in registration order. */
class Registry {
 public:
  static Registry* get() {
    static Registry instance;
    return &instance;
  }
  CustomOp& add(const char* name) {
    entries_.push_back(new CustomOp(name));
    return *entries_.back();
  }
  int size() const { return static_cast<int>(entries_.size()); }
  CustomOp& at(int i) { return *entries_.at(i); }

 private:
  Registry() {}
  std::vector<CustomOp*> entries_;  // never freed: lives as long as the library
};
}  // namespace

#define MX_STR_CONCAT_(a, b) a##b
#define MX_STR_CONCAT(a, b) MX_STR_CONCAT_(a, b)
/*! \brief REGISTER_OP(my_op).setParseAttrs(...).setInferType(...)...; at namespace scope. */
#define REGISTER_OP(Name) \
  static CustomOp& MX_STR_CONCAT(__mxlab_op_, __COUNTER__) = Registry::get()->add(#Name)

/*! \brief Every library defines this: called once when MXLab loads it, with MXLab's version. */
extern "C" MXReturnValue initialize(int version);

/* ---------------------------------------------------------------------------------- */
/*  The C boundary: what framework/library/abi.py declares through ctypes               */
/* ---------------------------------------------------------------------------------- */
namespace mxlab_detail {

inline MXAttrs make_attrs(const char* const* keys, const char* const* vals, int num) {
  MXAttrs attrs;
  for (int i = 0; i < num; ++i) attrs[keys[i]] = vals[i];
  return attrs;
}

/*! \brief Run f, turning MX_FAIL and exceptions into 0 plus a message; 1 on success. */
template <typename F>
inline int guarded(const char* step, F f) {
  error_stream().str("");
  error_stream().clear();
  try {
    if (f() == MX_SUCCESS) return 1;
    last_error() = error_stream().str();
    if (last_error().empty()) last_error() = std::string(step) + " returned MX_FAIL";
  } catch (const std::exception& e) {
    last_error() = e.what();
  } catch (...) {
    last_error() = "unknown C++ exception";
  }
  return 0;
}

inline std::vector<MXTensor> make_tensors(int num, void** data, const int64_t* shapes, const int* ndims,
                                          const int* dtypes, int dev_type, int dev_id) {
  std::vector<MXTensor> tensors(num);
  MXContext ctx(dev_type == 2 ? "gpu" : "cpu", dev_id);
  int offset = 0;
  for (int i = 0; i < num; ++i) {
    std::vector<int64_t> shape(shapes + offset, shapes + offset + ndims[i]);
    offset += ndims[i];
    tensors[i].data_ptr = data[i];
    tensors[i].shape = shape;
    tensors[i].dtype = static_cast<MXDType>(dtypes[i]);
    tensors[i].ctx = ctx;
  }
  // set the DLPack views once the vector no longer moves
  for (int i = 0; i < num; ++i) tensors[i].setDLTensor();
  return tensors;
}

}  // namespace mxlab_detail

extern "C" {

/*! \brief The header version the library was built with. */
MX_EXPORT int _opVersion() { return MX_LIBRARY_VERSION; }

/*! \brief Message of the last failed call on this thread. */
MX_EXPORT const char* _opLastError() { return mxlab_detail::last_error().c_str(); }

/*! \brief Calls the library's initialize(version). */
MX_EXPORT int _opInitialize(int version) {
  return mxlab_detail::guarded("initialize", [&]() { return initialize(version); });
}

MX_EXPORT int _opRegSize() { return Registry::get()->size(); }

MX_EXPORT const char* _opRegGetName(int idx) { return Registry::get()->at(idx).name; }

/*!
 * \brief Which functions operator idx registered, as bits: 1 parseAttrs, 2 inferType,
 * 4 inferSType, 8 inferShape, 16 mutateInputs, 32/64 forward cpu/gpu, 128/256 backward
 * cpu/gpu, 512/1024 createOpState cpu/gpu.
 */
MX_EXPORT int _opRegGetFlags(int idx) {
  CustomOp& op = Registry::get()->at(idx);
  int flags = 0;
  if (op.parse_attrs) flags |= 1;
  if (op.infer_type) flags |= 2;
  if (op.infer_stype) flags |= 4;
  if (op.infer_shape) flags |= 8;
  if (op.mutate_inputs) flags |= 16;
  if (op.forward[0]) flags |= 32;
  if (op.forward[1]) flags |= 64;
  if (op.backward[0]) flags |= 128;
  if (op.backward[1]) flags |= 256;
  if (op.create_op_state[0]) flags |= 512;
  if (op.create_op_state[1]) flags |= 1024;
  return flags;
}

MX_EXPORT int _opCallParseAttrs(int idx, const char* const* keys, const char* const* vals, int num, int* num_in,
                             int* num_out) {
  MXAttrs attrs = mxlab_detail::make_attrs(keys, vals, num);
  return mxlab_detail::guarded("parseAttrs", [&]() {
    return Registry::get()->at(idx).parse_attrs(attrs, num_in, num_out);
  });
}

/*! \brief types: num_in input codes then num_out output codes (-1/kUNSET unknown), updated in place. */
MX_EXPORT int _opCallInferType(int idx, const char* const* keys, const char* const* vals, int num, int* types,
                            int num_in, int num_out) {
  MXAttrs attrs = mxlab_detail::make_attrs(keys, vals, num);
  std::vector<int> in(types, types + num_in), out(types + num_in, types + num_in + num_out);
  int ok = mxlab_detail::guarded("inferType", [&]() { return Registry::get()->at(idx).infer_type(attrs, &in, &out); });
  if (!ok) return 0;
  if (in.size() != static_cast<size_t>(num_in) || out.size() != static_cast<size_t>(num_out)) {
    mxlab_detail::last_error() = "inferType changed the number of input or output types";
    return 0;
  }
  for (int i = 0; i < num_in; ++i) types[i] = in[i];
  for (int i = 0; i < num_out; ++i) types[num_in + i] = out[i];
  return 1;
}

/*! \brief Same layout as _opCallInferType, for storage types. */
MX_EXPORT int _opCallInferSType(int idx, const char* const* keys, const char* const* vals, int num, int* stypes,
                             int num_in, int num_out) {
  MXAttrs attrs = mxlab_detail::make_attrs(keys, vals, num);
  std::vector<int> in(stypes, stypes + num_in), out(stypes + num_in, stypes + num_in + num_out);
  int ok =
      mxlab_detail::guarded("inferSType", [&]() { return Registry::get()->at(idx).infer_stype(attrs, &in, &out); });
  if (!ok) return 0;
  if (in.size() != static_cast<size_t>(num_in) || out.size() != static_cast<size_t>(num_out)) {
    mxlab_detail::last_error() = "inferSType changed the number of input or output storage types";
    return 0;
  }
  for (int i = 0; i < num_in; ++i) stypes[i] = in[i];
  for (int i = 0; i < num_out; ++i) stypes[num_in + i] = out[i];
  return 1;
}

/*!
 * \brief in_ndims/in_dims: the input shapes flattened. out_ndims (num_out) and out_dims
 * (num_out * MX_MAX_NDIM) receive the output shapes.
 */
MX_EXPORT int _opCallInferShape(int idx, const char* const* keys, const char* const* vals, int num, int num_in,
                             const int* in_ndims, const unsigned int* in_dims, int num_out, int* out_ndims,
                             unsigned int* out_dims) {
  MXAttrs attrs = mxlab_detail::make_attrs(keys, vals, num);
  std::vector<std::vector<unsigned int>> in(num_in), out(num_out);
  int offset = 0;
  for (int i = 0; i < num_in; ++i) {
    in[i].assign(in_dims + offset, in_dims + offset + in_ndims[i]);
    offset += in_ndims[i];
  }
  int ok =
      mxlab_detail::guarded("inferShape", [&]() { return Registry::get()->at(idx).infer_shape(attrs, &in, &out); });
  if (!ok) return 0;
  if (out.size() != static_cast<size_t>(num_out)) {
    mxlab_detail::last_error() = "inferShape changed the number of output shapes";
    return 0;
  }
  for (int i = 0; i < num_out; ++i) {
    if (out[i].size() > MX_MAX_NDIM) {
      mxlab_detail::last_error() = "inferShape produced more than MX_MAX_NDIM dimensions";
      return 0;
    }
    out_ndims[i] = static_cast<int>(out[i].size());
    for (size_t d = 0; d < out[i].size(); ++d) out_dims[i * MX_MAX_NDIM + d] = out[i][d];
  }
  return 1;
}

/*! \brief indices (capacity num_in) receive the mutable input indices; *count their number. */
MX_EXPORT int _opCallMutateInputs(int idx, const char* const* keys, const char* const* vals, int num, int num_in,
                               int* indices, int* count) {
  MXAttrs attrs = mxlab_detail::make_attrs(keys, vals, num);
  std::vector<int> found;
  int ok = mxlab_detail::guarded("mutateInputs",
                                 [&]() { return Registry::get()->at(idx).mutate_inputs(attrs, &found); });
  if (!ok) return 0;
  if (found.size() > static_cast<size_t>(num_in)) {
    mxlab_detail::last_error() = "mutateInputs returned more indices than there are inputs";
    return 0;
  }
  for (size_t i = 0; i < found.size(); ++i) indices[i] = found[i];
  *count = static_cast<int>(found.size());
  return 1;
}

/*!
 * \brief Runs forward (is_forward=1) or backward of a regular operator on device dev
 * (0 cpu, 1 gpu). Tensors: data pointers, shapes flattened with their ndims, dtype codes.
 */
MX_EXPORT int _opCallFCompute(int idx, int is_forward, int dev, const char* const* keys, const char* const* vals,
                           int num, int num_in, void** in_data, const int64_t* in_shapes, const int* in_ndims,
                           const int* in_types, int num_out, void** out_data, const int64_t* out_shapes,
                           const int* out_ndims, const int* out_types, int dev_type, int dev_id,
                           mxlab_alloc_t cpu_alloc, mxlab_alloc_t gpu_alloc, void* alloc_ctx, void* stream) {
  MXAttrs attrs = mxlab_detail::make_attrs(keys, vals, num);
  std::vector<MXTensor> inputs =
      mxlab_detail::make_tensors(num_in, in_data, in_shapes, in_ndims, in_types, dev_type, dev_id);
  std::vector<MXTensor> outputs =
      mxlab_detail::make_tensors(num_out, out_data, out_shapes, out_ndims, out_types, dev_type, dev_id);
  OpResource res(cpu_alloc, gpu_alloc, alloc_ctx, stream);
  CustomOp& op = Registry::get()->at(idx);
  fcompFn fn = is_forward ? op.forward[dev] : op.backward[dev];
  return mxlab_detail::guarded(is_forward ? "forward" : "backward",
                               [&]() { return fn(attrs, &inputs, &outputs, res); });
}

/*! \brief Creates a stateful operator instance for device dev into *state. */
MX_EXPORT int _opCallCreateOpState(int idx, int dev, const char* const* keys, const char* const* vals, int num,
                                void** state) {
  MXAttrs attrs = mxlab_detail::make_attrs(keys, vals, num);
  CustomStatefulOp* inst = NULL;
  int ok = mxlab_detail::guarded("createOpState",
                                 [&]() { return Registry::get()->at(idx).create_op_state[dev](attrs, &inst); });
  if (ok && inst == NULL) {
    mxlab_detail::last_error() = "createOpState returned MX_SUCCESS but did not set *op_inst";
    return 0;
  }
  *state = inst;
  return ok;
}

/*! \brief Runs Forward (is_forward=1) or Backward of a stateful instance. */
MX_EXPORT int _opCallFStatefulCompute(int is_forward, void* state, int num_in, void** in_data, const int64_t* in_shapes,
                                   const int* in_ndims, const int* in_types, int num_out, void** out_data,
                                   const int64_t* out_shapes, const int* out_ndims, const int* out_types,
                                   int dev_type, int dev_id, mxlab_alloc_t cpu_alloc, mxlab_alloc_t gpu_alloc,
                                   void* alloc_ctx, void* stream) {
  std::vector<MXTensor> inputs =
      mxlab_detail::make_tensors(num_in, in_data, in_shapes, in_ndims, in_types, dev_type, dev_id);
  std::vector<MXTensor> outputs =
      mxlab_detail::make_tensors(num_out, out_data, out_shapes, out_ndims, out_types, dev_type, dev_id);
  OpResource res(cpu_alloc, gpu_alloc, alloc_ctx, stream);
  CustomStatefulOp* op = static_cast<CustomStatefulOp*>(state);
  if (is_forward) return mxlab_detail::guarded("Forward", [&]() { return op->Forward(&inputs, &outputs, res); });
  return mxlab_detail::guarded("Backward", [&]() { return op->Backward(&inputs, &outputs, res); });
}

/*! \brief Deletes a stateful instance (MXLab calls it when the owning node is freed). */
MX_EXPORT void _opDestroyOpState(void* state) { delete static_cast<CustomStatefulOp*>(state); }

}  // extern "C"

#endif  // MXLAB_LIB_API_H_
