/*
 * pass_lib.cc -- graph passes written against MXNet 1.9.1's extension API (mxnet/lib_api.h).
 *
 *   myPass         looks at the graph and changes nothing (prints it; the options it was given too)
 *   annotatePass   marks every operator node with the attribute __visited_by__ = "annotatePass"
 *                  and the graph with how many nodes it saw
 *   foldExpLog     rewrites exp(log(x)) to x: consumers of the exp node read x directly,
 *                  and the two nodes disappear from the graph
 *
 * Build:  g++ -shared -fPIC -std=c++17 -I ../../framework/include pass_lib.cc \
 *             ../../framework/include/lib_api.cc -o libpass_lib_1_9.so
 * Use:    mx.library.load("libpass_lib_1_9.so"); sym.optimize_for("foldExpLog")
 */
#include <iostream>

#include "mxnet/lib_api.h"

using namespace mxnet::ext;

MXReturnValue myPass(mxnet::ext::Graph* g, const std::unordered_map<std::string, std::string>& options) {
  for (auto& kv : options) std::cout << "option: " << kv.first << " ==> " << kv.second << std::endl;
  g->print();
  return MX_SUCCESS;
}

REGISTER_PASS(myPass)
.setBody(myPass);

MXReturnValue annotatePass(mxnet::ext::Graph* g, const std::unordered_map<std::string, std::string>& options) {
  int seen = 0;
  for (size_t i = 0; i < g->size(); i++) {
    Node* node = g->getNode(i);
    if (node->op == "null") continue;
    node->attrs["__visited_by__"] = "annotatePass";
    seen++;
  }
  // a graph attribute, as a ["str", value] pair like MXNet's own graph attributes
  JsonVal note(LIST);
  note.list.push_back(JsonVal("str"));
  note.list.push_back(JsonVal(std::to_string(seen)));
  g->attrs["annotated_nodes"] = note;
  return MX_SUCCESS;
}

REGISTER_PASS(annotatePass)
.setBody(annotatePass);

MXReturnValue foldExpLog(mxnet::ext::Graph* g, const std::unordered_map<std::string, std::string>& options) {
  // the option "verbose" prints each fold
  bool verbose = options.count("verbose") > 0;
  for (size_t i = 0; i < g->size(); i++) {
    Node* e = g->getNode(i);
    if (e->op != "exp" || e->inputs.size() != 1) continue;
    Node* l = e->inputs[0].node;
    if (l->op != "log" || l->inputs.size() != 1) continue;
    NodeEntry x = l->inputs[0];
    // every reader of exp's output reads x instead (nodes, then the graph's outputs)
    for (size_t j = 0; j < g->size(); j++) {
      for (NodeEntry& in : g->getNode(j)->inputs) {
        if (in.node == e) in = x;
      }
    }
    for (NodeEntry& out : g->outputs) {
      if (out.node == e) out = x;
    }
    if (verbose) std::cout << "foldExpLog: " << e->name << "(" << l->name << "(" << x.node->name << ")) -> "
                           << x.node->name << std::endl;
  }
  // nodes nobody reads any more are dropped when the graph is written back (toJson walks from the outputs)
  return MX_SUCCESS;
}

REGISTER_PASS(foldExpLog)
.setBody(foldExpLog);

MXReturnValue initialize(int version) {
  if (version >= 10700) {
    std::cout << "MXNet version " << version << " supported" << std::endl;
    return MX_SUCCESS;
  }
  MX_ERROR_MSG << "MXNet version " << version << " not supported";
  return MX_FAIL;
}
