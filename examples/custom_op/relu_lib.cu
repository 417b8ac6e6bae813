/*
 * relu_lib.cu -- a ReLU custom operator for MXLab with CPU and GPU implementations.
 *
 * Build:  nvcc -shared -Xcompiler -fPIC -std=c++11 -I ../../framework/include -o librelu_lib.so relu_lib.cu
 * (compiles without a GPU; running the "gpu" functions needs one.)
 */
#include <iostream>

#include "lib_api.h"

#define NumThreadPerBlock 256  // mxnet recommended cuda thread number per block

__global__ void relu_gpu_forward(float* out, float* in, int64_t N) {
  int64_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < N) out[tid] = in[tid] > 0 ? in[tid] : 0;
}

__global__ void relu_gpu_backward(float* ingrad, float* outgrad, float* indata, int64_t N) {
  int64_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < N) ingrad[tid] = indata[tid] > 0 ? 1 * outgrad[tid] : 0;
}

MXReturnValue forwardCPU(const std::unordered_map<std::string, std::string>& attrs, std::vector<MXTensor>* inputs,
                         std::vector<MXTensor>* outputs, const OpResource& res) {
  float* in_data = inputs->at(0).data<float>();
  float* out_data = outputs->at(0).data<float>();
  for (int64_t i = 0; i < inputs->at(0).size(); i++) out_data[i] = in_data[i] > 0 ? in_data[i] : 0;
  return MX_SUCCESS;
}

// inputs: output gradient, forward input, forward output; outputs: input gradient
MXReturnValue backwardCPU(const std::unordered_map<std::string, std::string>& attrs, std::vector<MXTensor>* inputs,
                          std::vector<MXTensor>* outputs, const OpResource& res) {
  float* out_grad = inputs->at(0).data<float>();
  float* in_data = inputs->at(1).data<float>();
  float* in_grad = outputs->at(0).data<float>();
  for (int64_t i = 0; i < inputs->at(1).size(); i++) in_grad[i] = in_data[i] > 0 ? 1 * out_grad[i] : 0;
  return MX_SUCCESS;
}

MXReturnValue forwardGPU(const std::unordered_map<std::string, std::string>& attrs, std::vector<MXTensor>* inputs,
                         std::vector<MXTensor>* outputs, const OpResource& res) {
  float* in_data = inputs->at(0).data<float>();
  float* out_data = outputs->at(0).data<float>();
  mx_stream_t cuda_stream = res.get_cuda_stream();
  int64_t N = inputs->at(0).size();
  int num_block = (N + NumThreadPerBlock - 1) / NumThreadPerBlock;
  relu_gpu_forward<<<num_block, NumThreadPerBlock, 0, (cudaStream_t)cuda_stream>>>(out_data, in_data, N);
  return MX_SUCCESS;
}

MXReturnValue backwardGPU(const std::unordered_map<std::string, std::string>& attrs, std::vector<MXTensor>* inputs,
                          std::vector<MXTensor>* outputs, const OpResource& res) {
  float* out_grad = inputs->at(0).data<float>();
  float* in_data = inputs->at(1).data<float>();
  float* in_grad = outputs->at(0).data<float>();
  mx_stream_t cuda_stream = res.get_cuda_stream();
  int64_t N = inputs->at(1).size();
  int num_block = (N + NumThreadPerBlock - 1) / NumThreadPerBlock;
  relu_gpu_backward<<<num_block, NumThreadPerBlock, 0, (cudaStream_t)cuda_stream>>>(in_grad, out_grad, in_data, N);
  return MX_SUCCESS;
}

MXReturnValue parseAttrs(const std::unordered_map<std::string, std::string>& attrs, int* num_in, int* num_out) {
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue inferType(const std::unordered_map<std::string, std::string>& attrs, std::vector<int>* intypes,
                        std::vector<int>* outtypes) {
  if (intypes->at(0) != kFloat32) {
    MX_ERROR_MSG << "my_relu supports float32 only";
    return MX_FAIL;
  }
  outtypes->at(0) = intypes->at(0);
  return MX_SUCCESS;
}

MXReturnValue inferSType(const std::unordered_map<std::string, std::string>& attrs, std::vector<int>* instypes,
                         std::vector<int>* outstypes) {
  outstypes->at(0) = kDefaultStorage;
  return MX_SUCCESS;
}

MXReturnValue inferShape(const std::unordered_map<std::string, std::string>& attrs,
                         std::vector<std::vector<unsigned int>>* inshapes,
                         std::vector<std::vector<unsigned int>>* outshapes) {
  outshapes->at(0) = inshapes->at(0);
  return MX_SUCCESS;
}

REGISTER_OP(my_relu)
    .setParseAttrs(parseAttrs)
    .setInferType(inferType)
    .setInferSType(inferSType)
    .setInferShape(inferShape)
    .setForward(forwardCPU, "cpu")
    .setForward(forwardGPU, "gpu")
    .setBackward(backwardCPU, "cpu")
    .setBackward(backwardGPU, "gpu");

MXReturnValue initialize(int version) {
  if (version >= 1) return MX_SUCCESS;
  MX_ERROR_MSG << "MXLab version " << version << " is not supported by relu_lib";
  return MX_FAIL;
}
