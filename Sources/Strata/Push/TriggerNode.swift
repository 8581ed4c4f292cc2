@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A node of the syntax tree. Nodes live in one array in the order the parser completes them,
/// so a node's children always come before it: the type checker is one forward loop, and no
/// pass over the tree recurses.
struct TriggerNode: Sendable {
    enum Kind: Sendable {
        case constant(TriggerConstant)
        case field(Int)
        case unary(TriggerOperator)
        case binary(TriggerOperator)
        /// `c ? a : b`.
        case conditional
        case call(TriggerFunction)
    }

    var kind: Kind
    /// Indices of the children in the node array (up to three; -1 where absent).
    var children: (Int, Int, Int)
    var childCount: Int
    /// The UTF-8 offset errors about this node point at (its operator, name or first character).
    var offset: Int
    /// Set by the type checker.
    var type: TriggerType = .null

    func child(_ k: Int) -> Int {
        switch k {
        case 0: return children.0
        case 1: return children.1
        default: return children.2
        }
    }
}
