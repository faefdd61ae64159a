// The def-use index of a graph: who reads each node. The passes that need it
// build one instead of each keeping a users map of its own. It is a
// snapshot: a pass that rewires edges builds a new one when it needs the
// new readers.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/graph.h"

namespace kiln {

class Uses {
 public:
  /// Indexes every data and control edge of `g`, readers in graph order.
  explicit Uses(const Graph& g);
  /// Indexes the edges into the nodes `nodes` read (readers in that order).
  explicit Uses(std::span<Node* const> nodes);

  /// The nodes reading an output of `n`: one entry per input edge, so a node
  /// that reads `n` twice is listed twice.
  std::span<Node* const> readers(const Node* n) const { return of(n).data; }
  /// The same edges with the output each reads: (reader, output index of n).
  std::span<const std::pair<Node*, int32_t>> edges(const Node* n) const { return of(n).edges; }
  /// The nodes reading output `index` of `n`, each once.
  std::vector<Node*> readers_of(const Node* n, int32_t index) const;
  /// The nodes with a control input on `n`.
  std::span<Node* const> control_readers(const Node* n) const { return of(n).control; }
  /// Data and control readers in one list, as the graph orders them (a
  /// reader's data edges before its control edges).
  std::span<Node* const> all_readers(const Node* n) const { return of(n).all; }

 private:
  struct Entry {
    std::vector<Node*> data, control, all;
    std::vector<std::pair<Node*, int32_t>> edges;
  };
  const Entry& of(const Node* n) const;
  void add(Node* n);

  std::unordered_map<const Node*, Entry> by_node_;
};

}  // namespace kiln
