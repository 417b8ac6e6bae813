/*
 * lib_api.cc -- the code behind mxnet/lib_api.h (MXNet 1.9.1's extension-library API in MXLab).
 *
 * Compile it into every library together with the library's own source:
 *
 *     g++ -shared -fPIC -std=c++17 -I <mxlab>/framework/include mylib.cc \
 *         <mxlab>/framework/include/lib_api.cc -o libmylib.so
 *
 * Two halves:
 *   1. the C++ classes of the header (MXTensor, OpResource, JsonVal, Graph, the registries);
 *   2. the extern "C" boundary MXLab's loader calls through ctypes (framework/library/abi.py
 *      declares the same signatures). Every boundary function catches C++ exceptions and
 *      MX_FAIL and reports them as 0 plus a message (_opLastError), so nothing unwinds into Python.
 *
 * Strings returned to the loader (graph JSON, review attributes) live in a per-thread buffer
 * that the next call on the thread overwrites: the loader copies them at once.
 */
#include "mxnet/lib_api.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>
#include <stdexcept>

namespace mxnet {
namespace ext {

/* ------------------------------------------------------------------------------ errors */
std::stringstream& error_stream() {
  thread_local std::stringstream stream;
  return stream;
}

static std::string& last_error() {
  thread_local std::string message;
  return message;
}

/* ------------------------------------------------------------------------------ MXContext */
MXContext::MXContext() : dev_type("cpu"), dev_id(0) {}
MXContext::MXContext(std::string dev_type_, int dev_id_) : dev_type(std::move(dev_type_)), dev_id(dev_id_) {}
MXContext::MXContext(const char* dev_type_, int dev_id_) : dev_type(dev_type_), dev_id(dev_id_) {}
MXContext MXContext::CPU() { return MXContext("cpu", 0); }
MXContext MXContext::GPU() { return MXContext("gpu", 0); }
MXContext MXContext::CPU(int dev_id) { return MXContext("cpu", dev_id); }
MXContext MXContext::GPU(int dev_id) { return MXContext("gpu", dev_id); }
void MXContext::debug_print() const { std::cout << "MXContext: " << dev_type << "(" << dev_id << ")" << std::endl; }

/* ------------------------------------------------------------------------------ MXTensor */
MXTensor::MXTensor() : data_ptr(nullptr), dtype(kUNSET), verID(0), stype(kDefaultStorage) {
  std::memset(&dltensor, 0, sizeof(dltensor));
}

MXTensor::MXTensor(const MXTensor& other)
    : data_ptr(other.data_ptr),
      shape(other.shape),
      dtype(other.dtype),
      verID(other.verID),
      ctx(other.ctx),
      stype(other.stype) {
  setDLTensor();  // the copy's DLPack view must point at its own shape vector
}

MXTensor& MXTensor::operator=(const MXTensor& other) {
  data_ptr = other.data_ptr;
  shape = other.shape;
  dtype = other.dtype;
  verID = other.verID;
  ctx = other.ctx;
  stype = other.stype;
  setDLTensor();
  return *this;
}

MXTensor::MXTensor(void* data, std::vector<int64_t> shape_, MXDType dtype_, size_t vID, MXContext mx_ctx,
                   MXStorageType stype_)
    : data_ptr(data), shape(std::move(shape_)), dtype(dtype_), verID(vID), ctx(std::move(mx_ctx)), stype(stype_) {
  setDLTensor();
}

void MXTensor::setTensor(void* dptr, MXDType type, const int64_t* dims, int ndims, size_t vID, MXContext mx_ctx,
                         MXStorageType storage_type) {
  data_ptr = dptr;
  dtype = type;
  verID = vID;
  ctx = std::move(mx_ctx);
  stype = storage_type;
  shape.assign(dims, dims + ndims);
  setDLTensor();
}

void MXTensor::setDLTensor() {
  std::memset(&dltensor, 0, sizeof(dltensor));
  dltensor.data = data_ptr;
  dltensor.ctx.device_type = ctx.dev_type == "gpu" ? kDLGPU : kDLCPU;
  dltensor.ctx.device_id = ctx.dev_id;
  dltensor.ndim = static_cast<int>(shape.size());
  dltensor.shape = shape.empty() ? nullptr : shape.data();
  dltensor.strides = nullptr;  // C-contiguous
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

int64_t MXTensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool MXTensor::isSame(const MXTensor& other) const {
  return data_ptr == other.data_ptr && dtype == other.dtype && verID == other.verID &&
         ctx.dev_type == other.ctx.dev_type && ctx.dev_id == other.ctx.dev_id && shape == other.shape &&
         stype == other.stype;
}

static size_t element_size(MXDType dtype) {
  switch (dtype) {
    case kFloat32: case kInt32: return 4;
    case kFloat64: case kInt64: return 8;
    case kFloat16: return 2;
    case kUint8: case kInt8: return 1;
    default: throw std::runtime_error("unknown MXDType " + std::to_string(static_cast<int>(dtype)));
  }
}

/* ------------------------------------------------------------------------------ OpResource */
OpResource::OpResource(xpu_malloc_t cpu_malloc, xpu_malloc_t gpu_malloc, void* alloc_ctx, void* stream, uint64_t seed)
    : cpu_malloc_(cpu_malloc), gpu_malloc_(gpu_malloc), alloc_ctx_(alloc_ctx), stream_(stream), seed_(seed) {}

void* OpResource::alloc_cpu(int size) const { return cpu_malloc_(alloc_ctx_, static_cast<size_t>(size)); }

void* OpResource::alloc_gpu(int size) const { return gpu_malloc_(alloc_ctx_, static_cast<size_t>(size)); }

void OpResource::alloc_sparse(MXSparse*, int, int, int) const {
  throw std::runtime_error("alloc_sparse: MXLab arrays are dense; sparse outputs are not supported");
}

mx_cpu_rand_t* OpResource::get_cpu_rand_states() const {
  // One set per thread, reseeded per call from the seed MXLab drew from its own generator.
  thread_local std::vector<mx_cpu_rand_t> states(MX_NUM_CPU_RANDOM_STATES);
  for (int i = 0; i < MX_NUM_CPU_RANDOM_STATES; ++i) {
    states[i].seed(static_cast<mx_cpu_rand_t::result_type>(seed_ + static_cast<uint64_t>(i) * 0x9E3779B9ULL));
  }
  return states.data();
}


/* ------------------------------------------------------------------------------ CustomStatefulOp */
CustomStatefulOp::CustomStatefulOp() : ignore_warn(false) {}
CustomStatefulOp::~CustomStatefulOp() {}
MXReturnValue CustomStatefulOp::Backward(std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) {
  MX_ERROR_MSG << "this stateful operator does not implement Backward";
  return MX_FAIL;
}

/* ------------------------------------------------------------------------------ JsonVal */
JsonVal::JsonVal() : type(ERR), num(-1) {}
JsonVal::JsonVal(JsonType t) : type(t), num(-1) {}
JsonVal::JsonVal(std::string s) : type(STR), num(-1), str(std::move(s)) {}
JsonVal::JsonVal(const char* s) : type(STR), num(-1), str(s) {}
JsonVal::JsonVal(int n) : type(NUM), num(n), str(std::to_string(n)) {}
JsonVal::JsonVal(JsonType t, int n, std::string s) : type(t), num(n), str(std::move(s)) {}

bool JsonVal::operator<(const JsonVal& o) const {
  if (type != o.type) return type < o.type;
  if (type == NUM) return num < o.num;
  if (type == STR) return str < o.str;
  if (type == LIST) return list < o.list;
  if (type == MAP) return map < o.map;
  return false;
}

static void dump_string(const std::string& s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      case '\r': *out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

static void dump_value(const JsonVal& v, std::string* out) {
  switch (v.type) {
    case STR: dump_string(v.str, out); break;
    case NUM: *out += v.str.empty() ? std::to_string(v.num) : v.str; break;
    case LIST:
      out->push_back('[');
      for (size_t i = 0; i < v.list.size(); ++i) {
        if (i) out->push_back(',');
        dump_value(v.list[i], out);
      }
      out->push_back(']');
      break;
    case MAP: {
      out->push_back('{');
      bool first = true;
      for (const auto& kv : v.map) {
        if (!first) out->push_back(',');
        first = false;
        if (kv.first.type == STR) dump_string(kv.first.str, out);
        else dump_string(kv.first.dump(), out);
        out->push_back(':');
        dump_value(kv.second, out);
      }
      out->push_back('}');
      break;
    }
    default: *out += "null"; break;
  }
}

std::string JsonVal::dump() const {
  std::string out;
  dump_value(*this, &out);
  return out;
}

std::string JsonVal::toString() const { return dump(); }

void JsonVal::print() const { std::cout << dump() << std::endl; }

/*! \brief A recursive-descent reader of JSON text (objects, arrays, strings, integers). */
class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text), pos_(0) {}

  JsonVal document() {
    JsonVal v = value();
    skip();
    if (pos_ != s_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON parse error at character " + std::to_string(pos_) + ": " + what);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() {
    skip();
    if (pos_ >= s_.size()) fail("unexpected end of text");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  JsonVal value() {
    char c = peek();
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return JsonVal(string());
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
    if (s_.compare(pos_, 4, "true") == 0) { pos_ += 4; return JsonVal(JsonType::NUM, 1, "true"); }
    if (s_.compare(pos_, 5, "false") == 0) { pos_ += 5; return JsonVal(JsonType::NUM, 0, "false"); }
    if (s_.compare(pos_, 4, "null") == 0) { pos_ += 4; return JsonVal(); }
    fail(std::string("unexpected character '") + c + "'");
  }
  JsonVal object() {
    expect('{');
    JsonVal v(MAP);
    if (peek() == '}') { ++pos_; return v; }
    while (true) {
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      expect(':');
      v.map[JsonVal(key)] = value();
      char c = peek();
      ++pos_;
      if (c == '}') return v;
      if (c != ',') fail("expected ',' or '}'");
    }
  }
  JsonVal array() {
    expect('[');
    JsonVal v(LIST);
    if (peek() == ']') { ++pos_; return v; }
    while (true) {
      v.list.push_back(value());
      char c = peek();
      ++pos_;
      if (c == ']') return v;
      if (c != ',') fail("expected ',' or ']'");
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') { out.push_back(c); continue; }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          unsigned code = std::stoul(s_.substr(pos_, 4), nullptr, 16);
          pos_ += 4;
          // UTF-8 encode the code point (surrogate pairs are kept as two 3-byte sequences)
          if (code < 0x80) out.push_back(static_cast<char>(code));
          else if (code < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (code >> 6)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
          } else {
            out.push_back(static_cast<char>(0xE0 | (code >> 12)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
          }
          break;
        }
        default: out.push_back(e); break;
      }
    }
  }
  JsonVal number() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' || s_[pos_] == '-')) {
      ++pos_;
    }
    std::string text = s_.substr(start, pos_ - start);
    // Numbers are ints in MXNet's lib_api; the text is kept so dump() writes floats back unchanged.
    return JsonVal(NUM, static_cast<int>(std::stod(text)), text);
  }

  const std::string& s_;
  size_t pos_;
};

JsonVal JsonVal::parse(const std::string& json) { return JsonReader(json).document(); }

/* ------------------------------------------------------------------------------ Node and Graph */
Node::Node() : tensor(nullptr), owner(nullptr) {}

static void alloc_param(Node* node, const std::vector<int64_t>& shapes, const MXContext& ctx, MXDType dtype,
                        bool is_arg) {
  if (ctx.dev_type != "cpu") {
    throw std::runtime_error("alloc_arg/alloc_aux for node '" + node->name +
                             "': MXLab stores new parameters on the CPU only (got " + ctx.dev_type + ")");
  }
  if (node->owner == nullptr) throw std::runtime_error("alloc_arg: node '" + node->name + "' belongs to no graph");
  auto* param = new Graph::NewParam();
  param->name = node->name;
  param->is_arg = is_arg;
  param->shape = shapes;
  param->dtype = dtype;
  int64_t count = 1;
  for (int64_t d : shapes) count *= d;
  param->bytes.assign(static_cast<size_t>(count) * element_size(dtype), 0);
  param->tensor = MXTensor(param->bytes.data(), shapes, dtype, 0, ctx, kDefaultStorage);
  node->owner->new_params.push_back(param);
  node->tensor = &param->tensor;
}

void Node::alloc_arg(const std::vector<int64_t>& shapes, const MXContext& ctx, MXDType dtype) {
  alloc_param(this, shapes, ctx, dtype, true);
}

void Node::alloc_aux(const std::vector<int64_t>& shapes, const MXContext& ctx, MXDType dtype) {
  alloc_param(this, shapes, ctx, dtype, false);
}

Graph::Graph() {}

Graph::~Graph() {
  for (Node* n : nodes_) {
    for (Graph* sg : n->subgraphs) delete sg;
    delete n;
  }
  for (NewParam* p : new_params) delete p;
}

static const JsonVal& field(const JsonVal& obj, const char* key, const std::string& where) {
  auto it = obj.map.find(JsonVal(key));
  if (it == obj.map.end()) throw std::runtime_error(where + " has no \"" + key + "\" field");
  return it->second;
}

Graph* Graph::fromString(const std::string& json) { return fromJson(JsonVal::parse(json)); }

Graph* Graph::fromJson(JsonVal val) {
  if (val.type != MAP) throw std::runtime_error("graph JSON must be an object");
  Graph* g = new Graph();
  try {
    const JsonVal& nodes = field(val, "nodes", "graph JSON");
    for (size_t i = 0; i < nodes.list.size(); ++i) {
      const JsonVal& raw = nodes.list[i];
      std::string where = "graph JSON node " + std::to_string(i);
      Node* n = g->addNode(field(raw, "name", where).str, field(raw, "op", where).str);
      auto attrs = raw.map.find(JsonVal("attrs"));
      if (attrs != raw.map.end()) {
        for (const auto& kv : attrs->second.map) n->attrs[kv.first.str] = kv.second.str;
      }
      auto subgraphs = raw.map.find(JsonVal("subgraphs"));
      if (subgraphs != raw.map.end()) {
        for (const JsonVal& sg : subgraphs->second.list) n->subgraphs.push_back(fromJson(sg));
      }
      for (const JsonVal& e : field(raw, "inputs", where).list) {
        if (e.list.size() < 2 || e.list[0].num < 0 || static_cast<size_t>(e.list[0].num) >= i) {
          throw std::runtime_error(where + " has an input that is not an earlier node");
        }
        Node* src = g->nodes_[e.list[0].num];
        n->inputs.push_back({src, e.list[1].num});
        src->outputs.push_back({n, static_cast<int>(n->inputs.size()) - 1});
      }
    }
    for (const JsonVal& id : field(val, "arg_nodes", "graph JSON").list) {
      if (id.num < 0 || static_cast<size_t>(id.num) >= g->nodes_.size())
        throw std::runtime_error("graph JSON arg_nodes names a node that does not exist");
      g->inputs.push_back(g->nodes_[id.num]);
    }
    for (const JsonVal& e : field(val, "heads", "graph JSON").list) {
      if (e.list.size() < 2 || e.list[0].num < 0 || static_cast<size_t>(e.list[0].num) >= g->nodes_.size())
        throw std::runtime_error("graph JSON heads names a node that does not exist");
      g->outputs.push_back({g->nodes_[e.list[0].num], e.list[1].num});
    }
    auto attrs = val.map.find(JsonVal("attrs"));
    if (attrs != val.map.end()) {
      for (const auto& kv : attrs->second.map) g->attrs[kv.first.str] = kv.second;
    }
  } catch (...) {
    delete g;
    throw;
  }
  return g;
}

std::vector<Node*> Graph::topological_sort() const {
  std::vector<Node*> order;
  std::set<const Node*> seen;
  // explicit stack of (node, next input to visit): deep graphs do not overflow the C stack
  std::vector<std::pair<Node*, size_t>> stack;
  auto visit = [&](Node* start) {
    if (seen.count(start)) return;
    seen.insert(start);
    stack.push_back({start, 0});
    while (!stack.empty()) {
      auto& top = stack.back();
      if (top.second < top.first->inputs.size()) {
        Node* next = top.first->inputs[top.second++].node;
        if (!seen.count(next)) {
          seen.insert(next);
          stack.push_back({next, 0});
        }
      } else {
        order.push_back(top.first);
        stack.pop_back();
      }
    }
  };
  for (const NodeEntry& e : outputs) visit(e.node);
  return order;
}

void Graph::DFS(std::function<void(Node*)> handler) const {
  for (Node* n : topological_sort()) handler(n);
}

JsonVal Graph::toJson() const {
  std::vector<Node*> order = topological_sort();
  std::map<const Node*, int> index;
  for (size_t i = 0; i < order.size(); ++i) index[order[i]] = static_cast<int>(i);
  std::map<const Node*, int> num_outputs;  // entries used of each node: the JSON's node_row_ptr
  auto use = [&](const NodeEntry& e) { num_outputs[e.node] = std::max(num_outputs[e.node], e.entry + 1); };
  for (Node* n : order)
    for (const NodeEntry& e : n->inputs) use(e);
  for (const NodeEntry& e : outputs) use(e);

  JsonVal val(MAP), nodes(LIST), arg_nodes(LIST), row_ptr(LIST), heads(LIST), gattrs(MAP);
  auto entry = [&](const NodeEntry& e) {
    JsonVal v(LIST);
    v.list.push_back(JsonVal(index.at(e.node)));
    v.list.push_back(JsonVal(e.entry));
    v.list.push_back(JsonVal(0));
    return v;
  };
  int rows = 0;
  row_ptr.list.push_back(JsonVal(0));
  for (size_t i = 0; i < order.size(); ++i) {
    const Node* n = order[i];
    JsonVal node(MAP);
    node.map[JsonVal("op")] = JsonVal(n->op);
    node.map[JsonVal("name")] = JsonVal(n->name);
    if (!n->attrs.empty()) {
      JsonVal attrs(MAP);
      for (const auto& kv : n->attrs) attrs.map[JsonVal(kv.first)] = JsonVal(kv.second);
      node.map[JsonVal("attrs")] = attrs;
    }
    JsonVal inputs(LIST);
    for (const NodeEntry& e : n->inputs) {
      if (!index.count(e.node)) throw std::runtime_error("node '" + n->name + "' has an input outside the graph");
      inputs.list.push_back(entry(e));
    }
    node.map[JsonVal("inputs")] = inputs;
    if (!n->subgraphs.empty()) {
      JsonVal sgs(LIST);
      for (const Graph* sg : n->subgraphs) sgs.list.push_back(sg->toJson());
      node.map[JsonVal("subgraphs")] = sgs;
    }
    nodes.list.push_back(node);
    if (n->op == "null") arg_nodes.list.push_back(JsonVal(static_cast<int>(i)));
    rows += std::max(1, num_outputs.count(n) ? num_outputs.at(n) : 1);
    row_ptr.list.push_back(JsonVal(rows));
  }
  for (const NodeEntry& e : outputs) heads.list.push_back(entry(e));
  for (const auto& kv : attrs) gattrs.map[JsonVal(kv.first)] = kv.second;
  val.map[JsonVal("nodes")] = nodes;
  val.map[JsonVal("arg_nodes")] = arg_nodes;
  val.map[JsonVal("node_row_ptr")] = row_ptr;
  val.map[JsonVal("heads")] = heads;
  val.map[JsonVal("attrs")] = gattrs;
  return val;
}

std::string Graph::toString() const { return toJson().dump(); }

void Graph::print(int indent) const {
  std::string space(indent, ' ');
  std::cout << space << "########### Graph #############" << std::endl;
  std::cout << space << "inputs: " << inputs.size() << std::endl;
  std::cout << space << "outputs: " << outputs.size() << std::endl;
  std::cout << space << "nodes: " << nodes_.size() << std::endl;
  for (Node* n : topological_sort()) {
    std::cout << space << "node: " << n->name << " (" << n->op << ")" << std::endl;
    for (const NodeEntry& e : n->inputs) std::cout << space << "  input: " << e.node->name << "[" << e.entry << "]" << std::endl;
    for (const auto& kv : n->attrs) std::cout << space << "  attr: " << kv.first << " = " << kv.second << std::endl;
    for (const Graph* sg : n->subgraphs) sg->print(indent + 4);
  }
  std::cout << space << "###############################" << std::endl;
}

Node* Graph::addNode(const std::string& name, const std::string& op) {
  Node* n = new Node();
  n->name = name;
  n->op = op;
  n->owner = this;
  nodes_.push_back(n);
  return n;
}

Node* Graph::getNode(size_t idx) { return nodes_.at(idx); }
const Node* Graph::getNode(size_t idx) const { return nodes_.at(idx); }

const JsonVal& Graph::getAttr(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) throw std::runtime_error("graph has no attribute '" + key + "'");
  return it->second;
}

size_t Graph::size() const { return nodes_.size(); }

std::string getShapeAt(const std::string& shape, unsigned index) {
  JsonVal v = JsonVal::parse(shape);
  if (v.type != LIST || index >= v.list.size()) throw std::runtime_error("getShapeAt: no entry " + std::to_string(index) + " in " + shape);
  return v.list[index].dump();
}

std::string getDtypeAt(const std::string& dtype, unsigned index) {
  JsonVal v = JsonVal::parse(dtype);
  if (v.type != LIST || index >= v.list.size()) throw std::runtime_error("getDtypeAt: no entry " + std::to_string(index) + " in " + dtype);
  return v.list[index].dump();
}

/* ------------------------------------------------------------------------------ registration */
template <>
Registry<CustomOp>* Registry<CustomOp>::get() {
  static Registry<CustomOp> inst;
  return &inst;
}
template <>
Registry<CustomPass>* Registry<CustomPass>::get() {
  static Registry<CustomPass> inst;
  return &inst;
}
template <>
Registry<CustomPartitioner>* Registry<CustomPartitioner>::get() {
  static Registry<CustomPartitioner> inst;
  return &inst;
}

CustomOp::CustomOp(const char* op_name) : name(op_name) {}

static int device_index(const char* ctx, const char* op, const char* what) {
  if (std::strcmp(ctx, "cpu") == 0) return 0;
  if (std::strcmp(ctx, "gpu") == 0) return 1;
  throw std::runtime_error(std::string(op) + "." + what + ": context must be \"cpu\" or \"gpu\", got \"" + ctx + "\"");
}

CustomOp& CustomOp::setForward(fcomp_t fcomp, const char* ctx) {
  forward[device_index(ctx, name, "setForward")] = fcomp;
  return *this;
}
CustomOp& CustomOp::setBackward(fcomp_t fcomp, const char* ctx) {
  backward[device_index(ctx, name, "setBackward")] = fcomp;
  return *this;
}
CustomOp& CustomOp::setParseAttrs(parseAttrs_t func) { parse_attrs = func; return *this; }
CustomOp& CustomOp::setInferType(inferType_t func) { infer_type = func; return *this; }
CustomOp& CustomOp::setInferSType(inferSType_t func) { infer_stype = func; return *this; }
CustomOp& CustomOp::setInferShape(inferShape_t func) { infer_shape = func; return *this; }
CustomOp& CustomOp::setMutateInputs(mutateInputs_t func) { mutate_inputs = func; return *this; }
CustomOp& CustomOp::setCreateOpState(createOpState_t func, const char* ctx) {
  create_op_state[device_index(ctx, name, "setCreateOpState")] = func;
  return *this;
}
CustomOp& CustomOp::setIsSubgraphOp() { isSGop = true; return *this; }

CustomPass::CustomPass(const char* pass_name) : name(pass_name) {}
CustomPass& CustomPass::setBody(graphPass_t fn) { pass = fn; return *this; }

void CustomOpSelector::Filter(const std::vector<int>& candidates, std::vector<int>* keep) {
  keep->insert(keep->end(), candidates.begin(), candidates.end());
}
void CustomOpSelector::Reset() {}
CustomOpSelector::~CustomOpSelector() {}

CustomPartitioner::CustomPartitioner(const char* backend_name) : name(backend_name) {}
CustomPartitioner& CustomPartitioner::addStrategy(const char* prop_name, const char* sg_name) {
  strategies.push_back(prop_name);
  op_names.push_back(sg_name);
  return *this;
}
CustomPartitioner& CustomPartitioner::setSupportedOps(const char* prop_name, supportedOps_t fn) {
  supported_map[prop_name] = fn;
  return *this;
}
CustomPartitioner& CustomPartitioner::setCreateSelector(const char* prop_name, createSelector_t fn) {
  selector_map[prop_name] = fn;
  return *this;
}
CustomPartitioner& CustomPartitioner::setReviewSubgraph(const char* prop_name, reviewSubgraph_t fn) {
  review_map[prop_name] = fn;
  return *this;
}
template <class M>
static typename M::mapped_type lookup(const M& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : it->second;
}
supportedOps_t CustomPartitioner::getSupportedOps(int stg_id) const { return lookup(supported_map, strategies.at(stg_id)); }
createSelector_t CustomPartitioner::getCreateSelector(int stg_id) const { return lookup(selector_map, strategies.at(stg_id)); }
reviewSubgraph_t CustomPartitioner::getReviewSubgraph(int stg_id) const { return lookup(review_map, strategies.at(stg_id)); }

}  // namespace ext
}  // namespace mxnet

/* ================================================================================== */
/*  The C boundary: what framework/library/abi.py declares through ctypes              */
/* ================================================================================== */
using namespace mxnet::ext;  // NOLINT

namespace {

typedef std::unordered_map<std::string, std::string> Attrs;

Attrs make_attrs(const char* const* keys, const char* const* vals, int num) {
  Attrs attrs;
  for (int i = 0; i < num; ++i) attrs[keys[i]] = vals[i];
  return attrs;
}

/*! \brief Run f, turning MX_FAIL and exceptions into 0 plus a message; 1 on success. */
template <typename F>
int guarded(const char* step, F f) {
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

std::vector<MXTensor> make_tensors(int num, void** data, const int64_t* shapes, const int* ndims, const int* dtypes,
                                   int dev_type, int dev_id) {
  std::vector<MXTensor> tensors(num);
  MXContext ctx(dev_type == 2 ? "gpu" : "cpu", dev_id);
  int offset = 0;
  for (int i = 0; i < num; ++i) {
    tensors[i].setTensor(data[i], static_cast<MXDType>(dtypes[i]), shapes + offset, ndims[i], 0, ctx, kDefaultStorage);
    offset += ndims[i];
  }
  return tensors;
}

/*! \brief Strings handed back to the loader: valid until the next call on this thread. */
const char* hand_back(const std::string& s) {
  thread_local std::string buffer;
  buffer = s;
  return buffer.c_str();
}

/*!
 * \brief A graph the loader works on, with the parameter tensors it passed in (node->tensor of the
 * matching input nodes) and, for partitioners, the selector made on it.
 */
struct GraphBox {
  Graph* graph = nullptr;
  std::vector<MXTensor> params;
  CustomOpSelector* selector = nullptr;
  ~GraphBox() {
    delete selector;
    delete graph;
  }
};

/*! \brief Parse json and attach num_params tensors (named names) to the input nodes of the same name. */
GraphBox* make_graph(const char* json, int num_params, const char* const* names, void** data, const int64_t* shapes,
                     const int* ndims, const int* dtypes) {
  GraphBox* box = new GraphBox();
  try {
    box->graph = Graph::fromString(json);
    box->params = make_tensors(num_params, data, shapes, ndims, dtypes, 1, 0);
    std::map<std::string, MXTensor*> by_name;
    for (int i = 0; i < num_params; ++i) by_name[names[i]] = &box->params[i];
    for (size_t i = 0; i < box->graph->size(); ++i) {
      Node* n = box->graph->getNode(i);
      auto it = by_name.find(n->name);
      if (n->op == "null" && it != by_name.end()) n->tensor = it->second;
    }
  } catch (...) {
    delete box;
    throw;
  }
  return box;
}

}  // namespace

/* ---------------------------------------------------------------- library */
/*! \brief The ABI version this pair of files speaks: 2 (version 1 is the older lib_api.h). */
MX_EXPORT int _opVersion() { return MX_LIBRARY_VERSION; }

MX_EXPORT const char* _opLastError() { return last_error().c_str(); }

MX_EXPORT int _opInitialize(int version) {
  return guarded("initialize", [&]() { return initialize(version); });
}

/* ---------------------------------------------------------------- operators */
MX_EXPORT int _opRegSize() { return Registry<CustomOp>::get()->size(); }

MX_EXPORT const char* _opRegGetName(int idx) { return Registry<CustomOp>::get()->get(idx).name; }

/*!
 * \brief Which functions operator idx registered, as bits: 1 parseAttrs, 2 inferType, 4 inferSType,
 * 8 inferShape, 16 mutateInputs, 32/64 forward cpu/gpu, 128/256 backward cpu/gpu,
 * 512/1024 createOpState cpu/gpu, 2048 subgraph operator.
 */
MX_EXPORT int _opRegGetFlags(int idx) {
  CustomOp& op = Registry<CustomOp>::get()->get(idx);
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
  if (op.isSGop) flags |= 2048;
  return flags;
}

MX_EXPORT int _opCallParseAttrs(int idx, const char* const* keys, const char* const* vals, int num, int* num_in,
                                int* num_out) {
  Attrs attrs = make_attrs(keys, vals, num);
  return guarded("parseAttrs", [&]() { return Registry<CustomOp>::get()->get(idx).parse_attrs(attrs, num_in, num_out); });
}

/*! \brief types: num_in input codes then num_out output codes (-1 unknown), updated in place. */
MX_EXPORT int _opCallInferType(int idx, const char* const* keys, const char* const* vals, int num, int* types,
                               int num_in, int num_out) {
  Attrs attrs = make_attrs(keys, vals, num);
  std::vector<int> in(types, types + num_in), out(types + num_in, types + num_in + num_out);
  int ok = guarded("inferType", [&]() { return Registry<CustomOp>::get()->get(idx).infer_type(attrs, &in, &out); });
  if (!ok) return 0;
  if (in.size() != static_cast<size_t>(num_in) || out.size() != static_cast<size_t>(num_out)) {
    last_error() = "inferType changed the number of input or output types";
    return 0;
  }
  std::copy(in.begin(), in.end(), types);
  std::copy(out.begin(), out.end(), types + num_in);
  return 1;
}

MX_EXPORT int _opCallInferSType(int idx, const char* const* keys, const char* const* vals, int num, int* stypes,
                                int num_in, int num_out) {
  Attrs attrs = make_attrs(keys, vals, num);
  std::vector<int> in(stypes, stypes + num_in), out(stypes + num_in, stypes + num_in + num_out);
  int ok = guarded("inferSType", [&]() { return Registry<CustomOp>::get()->get(idx).infer_stype(attrs, &in, &out); });
  if (!ok) return 0;
  if (in.size() != static_cast<size_t>(num_in) || out.size() != static_cast<size_t>(num_out)) {
    last_error() = "inferSType changed the number of input or output storage types";
    return 0;
  }
  std::copy(in.begin(), in.end(), stypes);
  std::copy(out.begin(), out.end(), stypes + num_in);
  return 1;
}

/*! \brief Shapes flattened (in_ndims, in_dims); outputs into out_ndims and out_dims (num_out x max_ndim). */
MX_EXPORT int _opCallInferShape(int idx, const char* const* keys, const char* const* vals, int num, int num_in,
                                const int* in_ndims, const unsigned int* in_dims, int num_out, int* out_ndims,
                                unsigned int* out_dims) {
  const int max_ndim = 32;  // framework/library/abi.py MAX_NDIM
  Attrs attrs = make_attrs(keys, vals, num);
  std::vector<std::vector<unsigned int>> in(num_in), out(num_out);
  int offset = 0;
  for (int i = 0; i < num_in; ++i) {
    in[i].assign(in_dims + offset, in_dims + offset + in_ndims[i]);
    offset += in_ndims[i];
  }
  int ok = guarded("inferShape", [&]() { return Registry<CustomOp>::get()->get(idx).infer_shape(attrs, &in, &out); });
  if (!ok) return 0;
  if (out.size() != static_cast<size_t>(num_out)) {
    last_error() = "inferShape changed the number of output shapes";
    return 0;
  }
  for (int i = 0; i < num_out; ++i) {
    if (out[i].size() > static_cast<size_t>(max_ndim)) {
      last_error() = "inferShape produced more than 32 dimensions";
      return 0;
    }
    out_ndims[i] = static_cast<int>(out[i].size());
    for (size_t d = 0; d < out[i].size(); ++d) out_dims[i * max_ndim + d] = out[i][d];
  }
  return 1;
}

MX_EXPORT int _opCallMutateInputs(int idx, const char* const* keys, const char* const* vals, int num, int num_in,
                                  int* indices, int* count) {
  Attrs attrs = make_attrs(keys, vals, num);
  std::vector<int> found;
  int ok = guarded("mutateInputs", [&]() { return Registry<CustomOp>::get()->get(idx).mutate_inputs(attrs, &found); });
  if (!ok) return 0;
  if (found.size() > static_cast<size_t>(num_in)) {
    last_error() = "mutateInputs returned more indices than there are inputs";
    return 0;
  }
  std::copy(found.begin(), found.end(), indices);
  *count = static_cast<int>(found.size());
  return 1;
}

/*! \brief forward (is_forward=1) or backward of a plain operator on device dev (0 cpu, 1 gpu). */
MX_EXPORT int _opCallFCompute(int idx, int is_forward, int dev, const char* const* keys, const char* const* vals,
                              int num, int num_in, void** in_data, const int64_t* in_shapes, const int* in_ndims,
                              const int* in_types, int num_out, void** out_data, const int64_t* out_shapes,
                              const int* out_ndims, const int* out_types, int dev_type, int dev_id,
                              xpu_malloc_t cpu_alloc, xpu_malloc_t gpu_alloc, void* alloc_ctx, void* stream,
                              uint64_t seed) {
  Attrs attrs = make_attrs(keys, vals, num);
  std::vector<MXTensor> inputs = make_tensors(num_in, in_data, in_shapes, in_ndims, in_types, dev_type, dev_id);
  std::vector<MXTensor> outputs = make_tensors(num_out, out_data, out_shapes, out_ndims, out_types, dev_type, dev_id);
  OpResource res(cpu_alloc, gpu_alloc, alloc_ctx, stream, seed);
  CustomOp& op = Registry<CustomOp>::get()->get(idx);
  fcomp_t fn = is_forward ? op.forward[dev] : op.backward[dev];
  return guarded(is_forward ? "forward" : "backward", [&]() { return fn(attrs, &inputs, &outputs, res); });
}

/*! \brief createOpState(attrs, ctx, in_shapes, in_types, &inst) for device dev; the instance into *state. */
MX_EXPORT int _opCallCreateOpState(int idx, int dev, const char* const* keys, const char* const* vals, int num,
                                   int dev_id, int num_in, const int* in_ndims, const unsigned int* in_dims,
                                   const int* in_types, void** state) {
  Attrs attrs = make_attrs(keys, vals, num);
  std::vector<std::vector<unsigned int>> shapes(num_in);
  int offset = 0;
  for (int i = 0; i < num_in; ++i) {
    shapes[i].assign(in_dims + offset, in_dims + offset + in_ndims[i]);
    offset += in_ndims[i];
  }
  std::vector<int> types(in_types, in_types + num_in);
  MXContext ctx(dev ? "gpu" : "cpu", dev_id);
  CustomStatefulOp* inst = nullptr;
  int ok = guarded("createOpState", [&]() {
    return Registry<CustomOp>::get()->get(idx).create_op_state[dev](attrs, ctx, shapes, types, &inst);
  });
  if (ok && inst == nullptr) {
    last_error() = "createOpState returned MX_SUCCESS but did not set *op_inst";
    return 0;
  }
  *state = inst;
  return ok;
}

/*! \brief Forward (is_forward=1) or Backward of a stateful instance. */
MX_EXPORT int _opCallFStatefulCompute(int is_forward, void* state, int num_in, void** in_data,
                                      const int64_t* in_shapes, const int* in_ndims, const int* in_types, int num_out,
                                      void** out_data, const int64_t* out_shapes, const int* out_ndims,
                                      const int* out_types, int dev_type, int dev_id, xpu_malloc_t cpu_alloc,
                                      xpu_malloc_t gpu_alloc, void* alloc_ctx, void* stream, uint64_t seed) {
  std::vector<MXTensor> inputs = make_tensors(num_in, in_data, in_shapes, in_ndims, in_types, dev_type, dev_id);
  std::vector<MXTensor> outputs = make_tensors(num_out, out_data, out_shapes, out_ndims, out_types, dev_type, dev_id);
  OpResource res(cpu_alloc, gpu_alloc, alloc_ctx, stream, seed);
  CustomStatefulOp* op = static_cast<CustomStatefulOp*>(state);
  if (is_forward) return guarded("Forward", [&]() { return op->Forward(&inputs, &outputs, res); });
  return guarded("Backward", [&]() { return op->Backward(&inputs, &outputs, res); });
}

MX_EXPORT void _opDestroyOpState(void* state) { delete static_cast<CustomStatefulOp*>(state); }

/* ---------------------------------------------------------------- graph passes */
MX_EXPORT int _passRegSize() { return Registry<CustomPass>::get()->size(); }

MX_EXPORT const char* _passRegGetName(int idx) { return Registry<CustomPass>::get()->get(idx).name; }

/*!
 * \brief Runs pass idx on the graph json with options; the parameters (names, tensors) are attached
 * to their input nodes. On success *graph holds the rewritten graph for _graphJson/_graphNewParam.
 */
MX_EXPORT int _passCall(int idx, const char* json, const char* const* keys, const char* const* vals, int num,
                        int num_params, const char* const* names, void** data, const int64_t* shapes,
                        const int* ndims, const int* dtypes, void** graph) {
  *graph = nullptr;
  GraphBox* box = nullptr;
  int ok = guarded("graph pass", [&]() {
    box = make_graph(json, num_params, names, data, shapes, ndims, dtypes);
    CustomPass& pass = Registry<CustomPass>::get()->get(idx);
    if (pass.pass == nullptr) {
      MX_ERROR_MSG << "pass " << pass.name << " has no body (setBody was not called)";
      return MX_FAIL;
    }
    return pass.pass(box->graph, make_attrs(keys, vals, num));
  });
  if (!ok) {
    delete box;
    return 0;
  }
  *graph = box;
  return 1;
}

/*! \brief The JSON text of a graph made by _passCall or _partCallCreateSelector. */
MX_EXPORT const char* _graphJson(void* graph) {
  const char* out = nullptr;
  int ok = guarded("Graph::toString", [&]() {
    out = hand_back(static_cast<GraphBox*>(graph)->graph->toString());
    return MX_SUCCESS;
  });
  return ok ? out : nullptr;
}

MX_EXPORT int _graphNewParamCount(void* graph) {
  return static_cast<int>(static_cast<GraphBox*>(graph)->graph->new_params.size());
}

/*! \brief Parameter i a pass created with alloc_arg/alloc_aux: name, kind, shape, dtype and data. */
MX_EXPORT void _graphNewParam(void* graph, int i, const char** name, int* is_arg, int* ndim, const int64_t** shape,
                              int* dtype, void** data) {
  Graph::NewParam* p = static_cast<GraphBox*>(graph)->graph->new_params.at(i);
  *name = p->name.c_str();
  *is_arg = p->is_arg;
  *ndim = static_cast<int>(p->shape.size());
  *shape = p->shape.data();
  *dtype = p->dtype;
  *data = p->bytes.data();
}

MX_EXPORT void _graphFree(void* graph) { delete static_cast<GraphBox*>(graph); }

/* ---------------------------------------------------------------- partitioners */
MX_EXPORT int _partRegSize() { return Registry<CustomPartitioner>::get()->size(); }

MX_EXPORT const char* _partRegGetName(int idx) { return Registry<CustomPartitioner>::get()->get(idx).name; }

MX_EXPORT int _partRegGetStrategyCount(int idx) {
  return static_cast<int>(Registry<CustomPartitioner>::get()->get(idx).strategies.size());
}

/*! \brief Strategy stg of partitioner idx: its name, its subgraph operator, and bits 1 supportedOps, 2 selector, 4 review. */
MX_EXPORT void _partRegGetStrategy(int idx, int stg, const char** strategy, const char** op_name, int* flags) {
  CustomPartitioner& part = Registry<CustomPartitioner>::get()->get(idx);
  *strategy = part.strategies.at(stg);
  *op_name = part.op_names.at(stg);
  *flags = (part.getSupportedOps(stg) ? 1 : 0) | (part.getCreateSelector(stg) ? 2 : 0) |
           (part.getReviewSubgraph(stg) ? 4 : 0);
}

/*! \brief supportedOps: ids (one per JSON node, preset to -2) receive -1 (any subgraph), a subgraph id, or -2. */
MX_EXPORT int _partCallSupportedOps(int idx, int stg, const char* json, const char* const* keys,
                                    const char* const* vals, int num, int num_params, const char* const* names,
                                    void** data, const int64_t* shapes, const int* ndims, const int* dtypes, int* ids,
                                    int num_ids) {
  return guarded("supportedOps", [&]() {
    GraphBox* box = make_graph(json, num_params, names, data, shapes, ndims, dtypes);
    std::unique_ptr<GraphBox> owner(box);
    if (box->graph->size() != static_cast<size_t>(num_ids)) {
      MX_ERROR_MSG << "supportedOps: graph has " << box->graph->size() << " nodes, ids has " << num_ids;
      return MX_FAIL;
    }
    std::vector<int> found(ids, ids + num_ids);
    MXReturnValue ret =
        Registry<CustomPartitioner>::get()->get(idx).getSupportedOps(stg)(box->graph, &found, make_attrs(keys, vals, num));
    if (ret != MX_SUCCESS) return ret;
    if (found.size() != static_cast<size_t>(num_ids)) {
      MX_ERROR_MSG << "supportedOps changed the size of the ids vector (" << num_ids << " -> " << found.size() << ")";
      return MX_FAIL;
    }
    std::copy(found.begin(), found.end(), ids);
    return MX_SUCCESS;
  });
}

/*! \brief createSelector on the graph: *selector is a handle for _selXxx (freed with _graphFree). */
MX_EXPORT int _partCallCreateSelector(int idx, int stg, const char* json, const char* const* keys,
                                      const char* const* vals, int num, int num_params, const char* const* names,
                                      void** data, const int64_t* shapes, const int* ndims, const int* dtypes,
                                      void** selector) {
  *selector = nullptr;
  GraphBox* box = nullptr;
  int ok = guarded("createSelector", [&]() {
    box = make_graph(json, num_params, names, data, shapes, ndims, dtypes);
    MXReturnValue ret = Registry<CustomPartitioner>::get()->get(idx).getCreateSelector(stg)(
        box->graph, &box->selector, make_attrs(keys, vals, num));
    if (ret == MX_SUCCESS && box->selector == nullptr) {
      MX_ERROR_MSG << "createSelector returned MX_SUCCESS but did not set *sel_inst";
      return MX_FAIL;
    }
    return ret;
  });
  if (!ok) {
    delete box;
    return 0;
  }
  *selector = box;
  return 1;
}

MX_EXPORT int _selSelect(void* box, int node, int* result) {
  return guarded("Select", [&]() {
    *result = static_cast<GraphBox*>(box)->selector->Select(node);
    return MX_SUCCESS;
  });
}

MX_EXPORT int _selSelectInput(void* box, int node, int input_node, int* result) {
  return guarded("SelectInput", [&]() {
    *result = static_cast<GraphBox*>(box)->selector->SelectInput(node, input_node);
    return MX_SUCCESS;
  });
}

MX_EXPORT int _selSelectOutput(void* box, int node, int output_node, int* result) {
  return guarded("SelectOutput", [&]() {
    *result = static_cast<GraphBox*>(box)->selector->SelectOutput(node, output_node);
    return MX_SUCCESS;
  });
}

/*! \brief Filter: keep (capacity num) receives the kept candidates, *num_keep their number. */
MX_EXPORT int _selFilter(void* box, const int* candidates, int num, int* keep, int* num_keep) {
  return guarded("Filter", [&]() {
    std::vector<int> cand(candidates, candidates + num), kept;
    static_cast<GraphBox*>(box)->selector->Filter(cand, &kept);
    if (kept.size() > static_cast<size_t>(num)) {
      MX_ERROR_MSG << "Filter kept more nodes than it was given";
      return MX_FAIL;
    }
    std::copy(kept.begin(), kept.end(), keep);
    *num_keep = static_cast<int>(kept.size());
    return MX_SUCCESS;
  });
}

MX_EXPORT int _selReset(void* box) {
  return guarded("Reset", [&]() {
    static_cast<GraphBox*>(box)->selector->Reset();
    return MX_SUCCESS;
  });
}

/*!
 * \brief reviewSubgraph on one subgraph's JSON: *accept, and *attrs_json (a JSON object of the
 * attributes the review added for the subgraph node; valid until the next call on this thread).
 */
MX_EXPORT int _partCallReviewSubgraph(int idx, int stg, const char* json, int subgraph_id, const char* const* keys,
                                      const char* const* vals, int num, int num_params, const char* const* names,
                                      void** data, const int64_t* shapes, const int* ndims, const int* dtypes,
                                      int* accept, const char** attrs_json) {
  return guarded("reviewSubgraph", [&]() {
    std::unique_ptr<GraphBox> box(make_graph(json, num_params, names, data, shapes, ndims, dtypes));
    bool accepted = true;
    Attrs added;
    MXReturnValue ret = Registry<CustomPartitioner>::get()->get(idx).getReviewSubgraph(stg)(
        box->graph, subgraph_id, &accepted, make_attrs(keys, vals, num), &added);
    if (ret != MX_SUCCESS) return ret;
    JsonVal out(MAP);
    for (const auto& kv : added) out.map[JsonVal(kv.first)] = JsonVal(kv.second);
    *accept = accepted;
    *attrs_json = hand_back(out.dump());
    return MX_SUCCESS;
  });
}
