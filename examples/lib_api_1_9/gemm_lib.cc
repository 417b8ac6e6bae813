/*
 * gemm_lib.cc -- custom operators written against MXNet 1.9.1's extension API (mxnet/lib_api.h):
 *
 *   my_gemm      C = A x B, a plain operator with forward and backward on CPU;
 *   state_gemm   the same product as a stateful operator: createOpState (the five-argument form
 *                of 1.9.1) sees the input shapes and types; the instance counts its Forward calls;
 *   noisy_scale  out = x * scale + noise, where the noise comes from OpResource's CPU random
 *                generators (repeatable under mx.random.seed).
 *
 * Build:  g++ -shared -fPIC -std=c++17 -I ../../framework/include gemm_lib.cc \
 *             ../../framework/include/lib_api.cc -o libgemm_lib_1_9.so
 * Use:    mx.library.load("libgemm_lib_1_9.so"); mx.nd.my_gemm(a, b)
 */
#include <iostream>
#include <random>

#include "mxnet/lib_api.h"

using namespace mxnet::ext;

// C[n, m] = A[n, k] x B[k, m], row major
static void gemm(const float* A, const float* B, float* C, int64_t n, int64_t k, int64_t m) {
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < m; j++) {
      float sum = 0;
      for (int64_t p = 0; p < k; p++) sum += A[i * k + p] * B[p * m + j];
      C[i * m + j] = sum;
    }
  }
}

// out[cols, rows] = in[rows, cols] transposed
static void transpose(const float* in, float* out, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) out[j * rows + i] = in[i * cols + j];
}

MXReturnValue forward(const std::unordered_map<std::string, std::string>& attrs, std::vector<MXTensor>* inputs,
                      std::vector<MXTensor>* outputs, const OpResource& res) {
  MXTensor& a = inputs->at(0);
  MXTensor& b = inputs->at(1);
  gemm(a.data<float>(), b.data<float>(), outputs->at(0).data<float>(), a.shape[0], a.shape[1], b.shape[1]);
  return MX_SUCCESS;
}

// inputs: dC, then the forward inputs A and B, then the forward output C; outputs: dA, dB
MXReturnValue backward(const std::unordered_map<std::string, std::string>& attrs, std::vector<MXTensor>* inputs,
                       std::vector<MXTensor>* outputs, const OpResource& res) {
  float* dC = inputs->at(0).data<float>();
  MXTensor& a = inputs->at(1);
  MXTensor& b = inputs->at(2);
  int64_t n = a.shape[0], k = a.shape[1], m = b.shape[1];
  // scratch space for the transposes, lent by the framework for the length of this call
  float* At = static_cast<float*>(res.alloc_cpu(n * k * sizeof(float)));
  float* Bt = static_cast<float*>(res.alloc_cpu(k * m * sizeof(float)));
  if (At == nullptr || Bt == nullptr) {
    MX_ERROR_MSG << "my_gemm backward: no scratch memory";
    return MX_FAIL;
  }
  transpose(a.data<float>(), At, n, k);
  transpose(b.data<float>(), Bt, k, m);
  gemm(dC, Bt, outputs->at(0).data<float>(), n, m, k);  // dA = dC x B^T
  gemm(At, dC, outputs->at(1).data<float>(), k, n, m);  // dB = A^T x dC
  return MX_SUCCESS;
}

MXReturnValue parseAttrs(const std::unordered_map<std::string, std::string>& attrs, int* num_in, int* num_out) {
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue inferType(const std::unordered_map<std::string, std::string>& attrs, std::vector<int>* intypes,
                        std::vector<int>* outtypes) {
  for (size_t i = 0; i < intypes->size(); i++) {
    if (intypes->at(i) != kFloat32) {
      MX_ERROR_MSG << "gemm: input " << i << " must be float32, got type code " << intypes->at(i);
      return MX_FAIL;
    }
  }
  outtypes->at(0) = intypes->at(0);
  return MX_SUCCESS;
}

MXReturnValue inferShape(const std::unordered_map<std::string, std::string>& attrs,
                         std::vector<std::vector<unsigned int>>* inshapes,
                         std::vector<std::vector<unsigned int>>* outshapes) {
  if (inshapes->at(0).size() != 2 || inshapes->at(1).size() != 2) {
    MX_ERROR_MSG << "gemm: both inputs must be matrices (2 dimensions)";
    return MX_FAIL;
  }
  unsigned n = inshapes->at(0)[0], k = inshapes->at(0)[1];
  unsigned kk = inshapes->at(1)[0], m = inshapes->at(1)[1];
  if (k != kk) {
    MX_ERROR_MSG << "gemm: inner dimensions differ: " << k << " vs " << kk;
    return MX_FAIL;
  }
  outshapes->at(0) = {n, m};
  return MX_SUCCESS;
}

REGISTER_OP(my_gemm)
.setForward(forward, "cpu")
.setBackward(backward, "cpu")
.setParseAttrs(parseAttrs)
.setInferType(inferType)
.setInferShape(inferShape);

/* ---- the stateful version: state lives in the instance, not in the framework ---- */
class MyStatefulGemm : public CustomStatefulOp {
 public:
  MyStatefulGemm(int count, const std::unordered_map<std::string, std::string>& attrs)
      : count_(count), attrs_(attrs) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                        const OpResource& op_res) override {
    ++count_;
    return forward(attrs_, inputs, outputs, op_res);
  }

  MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                         const OpResource& op_res) override {
    return backward(attrs_, inputs, outputs, op_res);
  }

  ~MyStatefulGemm() override { std::cout << "Info: state_gemm ran forward " << count_ << " times" << std::endl; }

 private:
  int count_;
  const std::unordered_map<std::string, std::string> attrs_;
};

MXReturnValue createOpState(const std::unordered_map<std::string, std::string>& attrs, const MXContext& ctx,
                            const std::vector<std::vector<unsigned int>>& in_shapes, const std::vector<int> in_types,
                            CustomStatefulOp** op_inst) {
  // the keyword test_kw, when given, sets the starting count
  int count = attrs.count("test_kw") > 0 ? std::stoi(attrs.at("test_kw")) : 0;
  if (in_shapes.size() != 2 || in_types.size() != 2) {
    MX_ERROR_MSG << "state_gemm: createOpState expected 2 input shapes and types";
    return MX_FAIL;
  }
  *op_inst = CustomStatefulOp::create<MyStatefulGemm>(count, attrs);  // or: new MyStatefulGemm(count, attrs)
  return MX_SUCCESS;
}

MXReturnValue mutateInputs(const std::unordered_map<std::string, std::string>& attrs,
                           std::vector<int>* input_indices) {
  // the second input is an auxiliary state: the framework lets this operator write to it
  input_indices->push_back(1);
  return MX_SUCCESS;
}

REGISTER_OP(state_gemm)
.setParseAttrs(parseAttrs)
.setInferType(inferType)
.setInferShape(inferShape)
.setMutateInputs(mutateInputs)
.setCreateOpState(createOpState, "cpu");

/* ---- randomness from the framework's generators ---- */
MXReturnValue parseNoisy(const std::unordered_map<std::string, std::string>& attrs, int* num_in, int* num_out) {
  if (attrs.count("scale") == 0) {
    MX_ERROR_MSG << "noisy_scale needs the attribute scale";
    return MX_FAIL;
  }
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue inferTypeSame(const std::unordered_map<std::string, std::string>& attrs, std::vector<int>* intypes,
                            std::vector<int>* outtypes) {
  if (intypes->at(0) != kFloat32) {
    MX_ERROR_MSG << "noisy_scale: input must be float32";
    return MX_FAIL;
  }
  outtypes->at(0) = kFloat32;
  return MX_SUCCESS;
}

MXReturnValue inferShapeSame(const std::unordered_map<std::string, std::string>& attrs,
                             std::vector<std::vector<unsigned int>>* inshapes,
                             std::vector<std::vector<unsigned int>>* outshapes) {
  outshapes->at(0) = inshapes->at(0);
  return MX_SUCCESS;
}

MXReturnValue noisyForward(const std::unordered_map<std::string, std::string>& attrs,
                           std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource& res) {
  float scale = std::stof(attrs.at("scale"));
  float* x = inputs->at(0).data<float>();
  float* y = outputs->at(0).data<float>();
  mx_cpu_rand_t* states = res.get_cpu_rand_states();
  std::uniform_real_distribution<float> noise(0.0f, 1.0f);
  for (int64_t i = 0; i < inputs->at(0).size(); i++) {
    y[i] = x[i] * scale + noise(states[i % MX_NUM_CPU_RANDOM_STATES]);
  }
  return MX_SUCCESS;
}

REGISTER_OP(noisy_scale)
.setParseAttrs(parseNoisy)
.setInferType(inferTypeSame)
.setInferShape(inferShapeSame)
.setForward(noisyForward, "cpu");

MXReturnValue initialize(int version) {
  if (version >= 10700) {
    std::cout << "MXNet version " << version << " supported" << std::endl;
    return MX_SUCCESS;
  }
  MX_ERROR_MSG << "MXNet version " << version << " not supported";
  return MX_FAIL;
}
