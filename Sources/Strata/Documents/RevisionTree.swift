import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The revision tree of one document (FORMAT.md §16.2): every revision id it keeps, each with its
/// parent, whether it is a deletion, and whether it is a leaf. Stored in the document's record.
///
/// Invariants, once ``settle(limit:)`` ran (and in every stored tree):
/// - `nodes[0]` is the winner: of the leaves, a non-deleted one before a deleted one, then the
///   higher generation, then the greater digest (CouchDB's rule), so every replica picks the same.
/// - A parent index points to a node of generation one less; a node without a known parent is a
///   root (the first revision, or where a bounded history was cut).
/// - No revision id appears twice; every node lies within `limit` generations of a leaf.
struct RevisionTree: Sendable, Equatable {
    struct Node: Sendable, Equatable {
        var revision: RevisionID
        /// Index of the parent in ``RevisionTree/nodes``, if known.
        var parent: Int?
        var isDeleted: Bool
        var isLeaf: Bool
    }

    var nodes: [Node]

    /// How many generations of history a tree keeps below each leaf by default (Couchbase Lite
    /// 1.x's `maxRevTreeDepth`; CouchDB's `revs_limit`).
    static let defaultHistoryLimit = 20

    /// The winner.
    var winner: Node { nodes[0] }

    func index(of revision: RevisionID) -> Int? {
        nodes.firstIndex { $0.revision == revision }
    }

    /// Indices of the leaves.
    var leaves: [Int] { nodes.indices.filter { nodes[$0].isLeaf } }

    /// Whether a leaf other than the winner is not deleted: the document is in conflict.
    var hasConflicts: Bool { nodes.dropFirst().contains { $0.isLeaf && !$0.isDeleted } }

    /// Digests of `index` and its ancestors, newest first, at most `limit`.
    func history(of index: Int, limit: Int) -> [String] {
        var out: [String] = []
        var at: Int? = index
        while let i = at, out.count < max(limit, 1) {
            out.append(nodes[i].revision.digest)
            at = nodes[i].parent
        }
        return out
    }

    /// Whether `a` wins over `b` (both leaves).
    static func wins(_ a: Node, over b: Node) -> Bool {
        if a.isDeleted != b.isDeleted { return !a.isDeleted }
        return b.revision < a.revision
    }

    /// Adds `revision` as a new leaf, child of `parent`. Returns its index.
    @discardableResult
    mutating func addChild(of parent: Int?, revision: RevisionID, isDeleted: Bool) -> Int {
        if let parent { nodes[parent].isLeaf = false }
        nodes.append(Node(revision: revision, parent: parent, isDeleted: isDeleted, isLeaf: true))
        return nodes.count - 1
    }

    /// Inserts `revision` with its history (`history[0]` its digest, `history[i]` generation
    /// `revision.generation - i`): the part of the history already in the tree is shared, the
    /// rest is added as a chain ending in the new leaf. Returns the leaf's index, or nil when the
    /// tree holds the revision already (nothing changes).
    mutating func graft(_ revision: RevisionID, history: [String], isDeleted: Bool) -> Int? {
        if index(of: revision) != nil { return nil }
        // The newest ancestor in the tree, and the chain of missing ones above it.
        var chain: [RevisionID] = [revision]
        var anchor: Int?
        var generation = revision.generation
        for digest in history.dropFirst() {
            guard generation > 1 else { break }
            generation -= 1
            guard let ancestor = RevisionID(generation: generation, digest: digest) else { break }
            if let found = index(of: ancestor) {
                anchor = found
                break
            }
            chain.append(ancestor)
        }
        var parent = anchor
        for ancestor in chain.dropFirst().reversed() {
            if let p = parent { nodes[p].isLeaf = false }
            nodes.append(Node(revision: ancestor, parent: parent, isDeleted: false, isLeaf: false))
            parent = nodes.count - 1
        }
        return addChild(of: parent, revision: revision, isDeleted: isDeleted)
    }

    /// Puts the winner first and drops nodes more than `limit` generations above every leaf.
    mutating func settle(limit: Int = defaultHistoryLimit) {
        guard nodes.count > 1 else { return }   // none, or one leaf: settled
        var keep = [Bool](repeating: false, count: nodes.count)
        for leaf in leaves {
            var at: Int? = leaf
            var depth = 0
            while let i = at, depth < max(limit, 1) {
                keep[i] = true
                at = nodes[i].parent
                depth += 1
            }
        }
        var winner = -1
        for leaf in leaves where winner < 0 || Self.wins(nodes[leaf], over: nodes[winner]) { winner = leaf }
        // New order: the winner, then the other kept nodes in their order.
        var order = [winner]
        for i in nodes.indices where i != winner && keep[i] { order.append(i) }
        var newIndex = [Int?](repeating: nil, count: nodes.count)
        for (n, i) in order.enumerated() { newIndex[i] = n }
        nodes = order.map { i in
            var node = nodes[i]
            node.parent = node.parent.flatMap { newIndex[$0] }
            return node
        }
    }

    // MARK: Encoding (FORMAT.md §16.2)

    /// Appends `varint count`, then per node `varint generation ‖ digest ‖ varint parent + 1 (0:
    /// none) ‖ u8 flags (bit 0 deleted, bit 1 leaf)`; a digest of 32 lowercase hex digits is
    /// `u8 0 ‖ 16 bytes`, any other `u8 1 ‖ varint n ‖ n bytes`.
    func append(to out: inout [UInt8]) {
        Varint.append(nodes.count, to: &out)
        for node in nodes {
            Varint.append(node.revision.generation, to: &out)
            out.append(0)
            if !Self.appendPacked(node.revision.digest, to: &out) {
                out[out.count - 1] = 1
                DocumentLayout.appendString(node.revision.digest, to: &out)
            }
            Varint.append(node.parent.map { UInt64($0) + 1 } ?? 0, to: &out)
            out.append((node.isDeleted ? 1 : 0) | (node.isLeaf ? 2 : 0))
        }
    }

    /// Decodes a tree, checking every invariant a reader relies on.
    init(reading reader: inout ByteReader) throws {
        let start = reader.offset
        let count = try reader.count("revision count")
        guard count > 0 else { throw reader.corrupted(at: start, "a revision tree without revisions") }
        var nodes: [Node] = []
        nodes.reserveCapacity(count)
        for _ in 0..<count {
            let at = reader.offset
            let generation = try reader.varint("revision generation")
            let digest: String
            switch try reader.uint8("digest form") {
            case 0:
                digest = [UInt8].hexString(try reader.bytes(16, "a digest"))
            case 1:
                digest = try reader.string("revision digest")
            case let form:
                throw reader.corrupted(at: at, "unknown digest form \(form)")
            }
            let parent = try reader.varint("revision parent")
            let flags = try reader.uint8("revision flags")
            guard flags <= 3 else { throw reader.corrupted(at: reader.offset - 1, "unknown revision flags \(flags)") }
            guard let revision = RevisionID(generation: generation, digest: digest) else {
                throw reader.corrupted(at: at, "bad revision id \(generation)-\(digest.debugDescription)")
            }
            guard parent <= UInt64(count) else { throw reader.corrupted(at: at, "parent \(parent) of a tree of \(count)") }
            nodes.append(Node(revision: revision, parent: parent == 0 ? nil : Int(parent - 1),
                              isDeleted: flags & 1 != 0, isLeaf: flags & 2 != 0))
        }
        // One node (a document never changed, or changed on one replica only since its tree was
        // cut): nothing more to check, and no set to build on every read.
        if count == 1 {
            guard nodes[0].isLeaf, nodes[0].parent == nil else {
                throw reader.corrupted(at: start, "the only revision of the tree is not a leaf without a parent")
            }
            self.nodes = nodes
            return
        }
        for (i, node) in nodes.enumerated() {
            if let p = node.parent {
                guard p != i, nodes[p].revision.generation &+ 1 == node.revision.generation, !nodes[p].isLeaf else {
                    throw reader.corrupted(at: start, "revision \(node.revision) has a parent that cannot be one")
                }
            }
        }
        guard nodes[0].isLeaf, !nodes.dropFirst().contains(where: { $0.isLeaf && Self.wins($0, over: nodes[0]) }) else {
            throw reader.corrupted(at: start, "the first revision of the tree is not the winning leaf")
        }
        guard Set(nodes.map(\.revision)).count == nodes.count else { throw reader.corrupted(at: start, "a revision appears twice") }
        self.nodes = nodes
    }

    init(nodes: [Node]) { self.nodes = nodes }

    /// Appends the 16 bytes that 32 lowercase hex digits stand for and returns true; returns false
    /// (appending nothing) for any other digest.
    static func appendPacked(_ digest: String, to out: inout [UInt8]) -> Bool {
        @inline(__always) func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            default: return nil
            }
        }
        var digest = digest
        return digest.withUTF8 { utf8 in
            guard utf8.count == 32, utf8.allSatisfy({ nibble($0) != nil }) else { return false }
            for i in 0..<16 { out.append(nibble(utf8[2 * i])! << 4 | nibble(utf8[2 * i + 1])!) }
            return true
        }
    }
}
