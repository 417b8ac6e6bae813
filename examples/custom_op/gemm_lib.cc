/*
 * gemm_lib.cc -- two custom operators for MXLab, built against framework/include/lib_api.h:
 *
 *   my_gemm     C = A x B, a regular operator with forward and backward on CPU;
 *   state_gemm  the same product as a stateful operator: one StateGemm instance per
 *               executor node (or imperative call site) counts its Forward calls.
 *
 * Build:  g++ -shared -fPIC -std=c++11 -I ../../framework/include -o libgemm_lib.so gemm_lib.cc
 * Use:    mx.library.load("libgemm_lib.so"); mx.nd.my_gemm(a, b)
 */
#include <iostream>

#include "lib_api.h"

// C[n, m] = A[n, k] x B[k, m], row major
static void gemm(const float* A, const float* B, float* C, unsigned n, unsigned k, unsigned m) {
  for (unsigned i = 0; i < n; i++) {
    for (unsigned j = 0; j < m; j++) {
      float sum = 0;
      for (unsigned p = 0; p < k; p++) sum += A[i * k + p] * B[p * m + j];
      C[i * m + j] = sum;
    }
  }
}

// out[cols, rows] = in[rows, cols] transposed
static void transpose(const float* in, float* out, unsigned rows, unsigned cols) {
  for (unsigned i = 0; i < rows; i++)
    for (unsigned j = 0; j < cols; j++) out[j * rows + i] = in[i * cols + j];
}

MXReturnValue forward(const std::unordered_map<std::string, std::string>& attrs, std::vector<MXTensor>* inputs,
                      std::vector<MXTensor>* outputs, const OpResource& res) {
  float* A = inputs->at(0).data<float>();
  float* B = inputs->at(1).data<float>();
  float* C = outputs->at(0).data<float>();
  unsigned n = inputs->at(0).shape[0];
  unsigned k = inputs->at(0).shape[1];
  unsigned m = inputs->at(1).shape[1];
  gemm(A, B, C, n, k, m);
  return MX_SUCCESS;
}

// inputs: dC, A, B (output gradient, then forward inputs, then forward outputs); outputs: dA, dB
MXReturnValue backward(const std::unordered_map<std::string, std::string>& attrs, std::vector<MXTensor>* inputs,
                       std::vector<MXTensor>* outputs, const OpResource& res) {
  float* dC = inputs->at(0).data<float>();
  float* A = inputs->at(1).data<float>();
  float* B = inputs->at(2).data<float>();
  float* dA = outputs->at(0).data<float>();
  float* dB = outputs->at(1).data<float>();
  unsigned n = inputs->at(1).shape[0];
  unsigned k = inputs->at(1).shape[1];
  unsigned m = inputs->at(2).shape[1];
  // workspace for the transposes, lent by MXLab for this call only
  float* At = static_cast<float*>(res.alloc_cpu(n * k * sizeof(float)));
  float* Bt = static_cast<float*>(res.alloc_cpu(k * m * sizeof(float)));
  if (At == NULL || Bt == NULL) {
    MX_ERROR_MSG << "my_gemm backward: could not allocate the workspace";
    return MX_FAIL;
  }
  transpose(A, At, n, k);
  transpose(B, Bt, k, m);
  gemm(dC, Bt, dA, n, m, k);  // dA = dC x B^T
  gemm(At, dC, dB, k, n, m);  // dB = A^T x dC
  return MX_SUCCESS;
}

MXReturnValue parseAttrs(const std::unordered_map<std::string, std::string>& attrs, int* num_in, int* num_out) {
  for (auto& kv : attrs) {
    MX_ERROR_MSG << "my_gemm takes no attributes, got '" << kv.first << "'";
    return MX_FAIL;
  }
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue inferType(const std::unordered_map<std::string, std::string>& attrs, std::vector<int>* intypes,
                        std::vector<int>* outtypes) {
  for (size_t i = 0; i < intypes->size(); i++) {
    if (intypes->at(i) != kFloat32) {
      MX_ERROR_MSG << "input " << i << " must be float32, got type code " << intypes->at(i);
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
    MX_ERROR_MSG << "inputs must be 2-D matrices";
    return MX_FAIL;
  }
  unsigned n = inshapes->at(0)[0];
  unsigned k = inshapes->at(0)[1];
  unsigned kk = inshapes->at(1)[0];
  unsigned m = inshapes->at(1)[1];
  if (k != kk) {
    MX_ERROR_MSG << "expected first input axis 1 (" << k << ") to equal second input axis 0 (" << kk << ")";
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

/* ------------------------------------------------------------------ stateful version */
static int instances_created = 0;
static int forward_calls = 0;

class StateGemm : public CustomStatefulOp {
 public:
  explicit StateGemm(int count) : count(count) { ++instances_created; }

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource& op_res) {
    ++count;
    ++forward_calls;
    std::unordered_map<std::string, std::string> attrs;
    return forward(attrs, inputs, outputs, op_res);
  }

  MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource& op_res) {
    std::unordered_map<std::string, std::string> attrs;
    return backward(attrs, inputs, outputs, op_res);
  }

  int count;  // Forward calls seen by this instance (starts at the test_kw attribute)
};

MXReturnValue createOpState(std::map<std::string, std::string> attrs, CustomStatefulOp** op_inst) {
  int count = 0;
  if (attrs.count("test_kw") > 0) count = std::stoi(attrs["test_kw"]);
  *op_inst = new StateGemm(count);
  return MX_SUCCESS;
}

MXReturnValue parseAttrsStateful(const std::unordered_map<std::string, std::string>& attrs, int* num_in,
                                 int* num_out) {
  for (auto& kv : attrs) {
    if (kv.first != "test_kw") {
      MX_ERROR_MSG << "state_gemm accepts only 'test_kw', got '" << kv.first << "'";
      return MX_FAIL;
    }
  }
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

REGISTER_OP(state_gemm)
    .setParseAttrs(parseAttrsStateful)
    .setInferType(inferType)
    .setInferShape(inferShape)
    .setCreateOpState(createOpState, "cpu");

// Test hooks (not part of the operator API): how many StateGemm instances exist and how
// many Forward calls they served, readable with ctypes.
extern "C" MX_EXPORT int state_gemm_instances() { return instances_created; }
extern "C" MX_EXPORT int state_gemm_forward_calls() { return forward_calls; }

MXReturnValue initialize(int version) {
  if (version >= 1) {
    return MX_SUCCESS;
  }
  MX_ERROR_MSG << "MXLab version " << version << " is not supported by gemm_lib";
  return MX_FAIL;
}
