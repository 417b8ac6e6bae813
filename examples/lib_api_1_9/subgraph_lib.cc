/*
 * subgraph_lib.cc -- a partitioner and the operator that runs its subgraphs, written against
 * MXNet 1.9.1's extension API (mxnet/lib_api.h), in the manner of 1.9.1's lib_subgraph example.
 *
 *   _custom_subgraph_op   a stateful subgraph operator: it reads the subgraph's JSON from the
 *                         attribute MX_STR_SUBGRAPH_SYM_JSON and runs its exp/log/sqrt nodes itself
 *   myProp                partitioner whose supportedOps marks exp, log and sqrt nodes; the review
 *                         accepts each subgraph (unless the option reject=True) and labels it
 *   mySelect              the same choice made by a CustomOpSelector, node by node
 *   addInputPass          a graph pass run after partitioning: gives every subgraph node one more
 *                         input, a new parameter made with Node::alloc_arg (the operator ignores it)
 *
 * Build:  g++ -shared -fPIC -std=c++17 -I ../../framework/include subgraph_lib.cc \
 *             ../../framework/include/lib_api.cc -o libsubgraph_lib_1_9.so
 * Use:    mx.library.load("libsubgraph_lib_1_9.so"); part = sym.optimize_for("myProp")
 */
#include <math.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>

#include "mxnet/lib_api.h"

using namespace mxnet::ext;

static const std::vector<std::string> supported_ops({"exp", "log", "sqrt"});

static bool is_supported(const std::string& op) {
  return std::find(supported_ops.begin(), supported_ops.end(), op) != supported_ops.end();
}

/* Runs the subgraph's nodes in order (JSON order is topological): inputs ("null" nodes) take the
 * operator's inputs in turn, every other node computes into a temporary it owns. */
static MXReturnValue runSubgraph(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, Graph* subgraph) {
  int next_input = 0;
  std::vector<MXTensor*> made;  // tensors this call allocated
  auto release = [&]() {
    for (MXTensor* t : made) {
      free(t->data_ptr);
      delete t;
    }
  };
  for (size_t i = 0; i < subgraph->size(); i++) {
    Node* node = subgraph->getNode(i);
    if (node->op == "null") {
      node->tensor = &inputs->at(next_input++);
      continue;
    }
    if (!is_supported(node->op)) {
      MX_ERROR_MSG << "_custom_subgraph_op: unsupported op '" << node->op << "' in the subgraph";
      release();
      return MX_FAIL;
    }
    MXTensor* in = node->inputs.at(0).node->tensor;
    MXTensor* out = new MXTensor(malloc(in->size() * sizeof(float)), in->shape, in->dtype, 0, MXContext::CPU(0));
    made.push_back(out);
    const float* x = in->data<float>();
    float* y = out->data<float>();
    for (int64_t k = 0; k < in->size(); k++) {
      y[k] = node->op == "exp" ? expf(x[k]) : node->op == "log" ? logf(x[k]) : sqrtf(x[k]);
    }
    node->tensor = out;
  }
  for (size_t j = 0; j < subgraph->outputs.size(); j++) {
    MXTensor* result = subgraph->outputs[j].node->tensor;
    float* dst = outputs->at(j).data<float>();
    const float* src = result->data<float>();
    for (int64_t k = 0; k < result->size(); k++) dst[k] = src[k];
  }
  release();
  return MX_SUCCESS;
}

class MySubgraphOp : public CustomStatefulOp {
 public:
  explicit MySubgraphOp(const std::string& json) : subgraph_(Graph::fromString(json)) {}
  ~MySubgraphOp() override { delete subgraph_; }

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                        const OpResource& op_res) override {
    return runSubgraph(inputs, outputs, subgraph_);
  }

 private:
  Graph* subgraph_;
};

MXReturnValue createOpState(const std::unordered_map<std::string, std::string>& attrs, const MXContext& ctx,
                            const std::vector<std::vector<unsigned int>>& in_shapes, const std::vector<int> in_types,
                            CustomStatefulOp** op_inst) {
  if (attrs.count(MX_STR_SUBGRAPH_SYM_JSON) == 0) {
    MX_ERROR_MSG << "_custom_subgraph_op: no subgraph given (attribute " << MX_STR_SUBGRAPH_SYM_JSON << ")";
    return MX_FAIL;
  }
  *op_inst = new MySubgraphOp(attrs.at(MX_STR_SUBGRAPH_SYM_JSON));
  return MX_SUCCESS;
}

REGISTER_OP(_custom_subgraph_op)
.setIsSubgraphOp()
.setCreateOpState(createOpState, "cpu");

/* ---- choosing nodes, way 1: mark them all at once ---- */
MXReturnValue mySupportedOps(const mxnet::ext::Graph* graph, std::vector<int>* ids,
                             const std::unordered_map<std::string, std::string>& options) {
  for (size_t i = 0; i < graph->size(); i++) {
    const Node* node = graph->getNode(i);
    // with reqFloat, only nodes known to be float32 (from the __ext_dtype__ the framework adds)
    if (options.count("reqFloat") > 0) {
      if (node->attrs.count(MX_STR_DTYPE) == 0 || getDtypeAt(node->attrs.at(MX_STR_DTYPE), 0) != "0") continue;
    }
    if (is_supported(node->op)) ids->at(i) = -1;  // -1: any subgraph may take it
  }
  return MX_SUCCESS;
}

MXReturnValue myReviewSubgraph(const mxnet::ext::Graph* subgraph, int subgraph_id, bool* accept,
                               const std::unordered_map<std::string, std::string>& options,
                               std::unordered_map<std::string, std::string>* attrs) {
  if (options.count("reject") > 0 && options.at("reject") == "True") {
    *accept = false;
    return MX_SUCCESS;
  }
  *accept = true;
  attrs->emplace("myKey", "myVal");
  attrs->emplace("num_nodes", std::to_string(subgraph->size()));
  return MX_SUCCESS;
}

REGISTER_PARTITIONER(myProp)
.addStrategy("strategy1", "_custom_subgraph_op")
.setSupportedOps("strategy1", mySupportedOps)
.setReviewSubgraph("strategy1", myReviewSubgraph);

/* ---- choosing nodes, way 2: a selector grows each subgraph along the edges ---- */
class MySelector : public CustomOpSelector {
 public:
  MySelector(const mxnet::ext::Graph* graph, const std::unordered_map<std::string, std::string>& options)
      : graph_(graph), max_nodes_(options.count("maxNodes") ? std::stoi(options.at("maxNodes")) : -1) {}
  bool Select(int nodeID) override { return chosen(nodeID); }
  bool SelectInput(int nodeID, int input_nodeID) override { return chosen(input_nodeID); }
  bool SelectOutput(int nodeID, int output_nodeID) override { return chosen(output_nodeID); }
  // with the option maxNodes=n, a subgraph keeps only its first n nodes (the rest may form others)
  void Filter(const std::vector<int>& candidates, std::vector<int>* keep) override {
    for (int id : candidates) {
      if (max_nodes_ >= 0 && static_cast<int>(keep->size()) >= max_nodes_) break;
      keep->push_back(id);
    }
  }

 private:
  bool chosen(int nodeID) { return is_supported(graph_->getNode(nodeID)->op); }
  const mxnet::ext::Graph* graph_;
  int max_nodes_;
};

MXReturnValue createSelector(const mxnet::ext::Graph* graph, CustomOpSelector** sel_inst,
                             const std::unordered_map<std::string, std::string>& options) {
  *sel_inst = new MySelector(graph, options);
  return MX_SUCCESS;
}

REGISTER_PARTITIONER(mySelect)
.addStrategy("strategy1", "_custom_subgraph_op")
.setCreateSelector("strategy1", createSelector)
.setReviewSubgraph("strategy1", myReviewSubgraph);

/* ---- a pass that works on partitioned graphs: one extra input per subgraph node ---- */
MXReturnValue addInputPass(mxnet::ext::Graph* graph, const std::unordered_map<std::string, std::string>& options) {
  size_t count = graph->size();  // nodes added below are not visited again
  for (size_t i = 0; i < count; i++) {
    Node* node = graph->getNode(i);
    if (node->op != "_custom_subgraph_op") continue;
    node->attrs[MX_STR_EXTRA_INPUTS] = "1";  // tells the framework the node has one more input
    Node* extra = graph->addNode(node->name + "_extra", "null");
    graph->inputs.push_back(extra);
    extra->outputs.push_back({node, static_cast<int>(node->inputs.size())});
    node->inputs.push_back({extra, 0});
    extra->alloc_arg({1}, MXContext::CPU(0), kFloat32);  // the value comes back as a new argument
    extra->tensor->data<float>()[0] = 42.0f;
  }
  return MX_SUCCESS;
}

REGISTER_PASS(addInputPass)
.setBody(addInputPass);

MXReturnValue initialize(int version) {
  if (version >= 10800) {
    std::cout << "MXNet version " << version << " supported" << std::endl;
    return MX_SUCCESS;
  }
  MX_ERROR_MSG << "MXNet version " << version << " not supported";
  return MX_FAIL;
}
