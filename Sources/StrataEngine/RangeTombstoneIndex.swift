@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// The range tombstones of a memtable, indexed so that "the newest tombstone visible at sequence
/// `S` that covers key `k`" costs O(log n) in their number `n` (expected), and O(1) for the next
/// key of a scan that stays in the same stretch of key space (``Probe``).
///
/// Tombstones arrive in sequence order (the writer applies batches in order), so adding one is a
/// *paint*: for every snapshot at or above its sequence, it is the answer on its whole key
/// interval. The index keeps one version per tombstone added, oldest first (``Versions``): the
/// key space fragmented by every tombstone up to that one, each fragment with the sequence of
/// the newest tombstone covering it. A version is a persistent treap (``Node``), path-copied from
/// the one before: the tombstone `[a, b)` splits the tree at `a` and `b`, drops the fragments
/// that start inside, trims the one that reaches over `a`, keeps the part beyond `b` of the one
/// that reaches over `b` and joins in `[a, b)`. A lookup at `S` finds the last version of
/// sequence `<= S` (O(log n) comparisons over ``Versions``) and descends its tree once.
///
/// Invariants: the versions' sequences never decrease; in each version's tree the fragments are
/// disjoint, non-empty, ordered by start (a binary search tree), and a node's priority is at
/// least its children's (a heap: priorities are pseudo-random, drawn from a counter, so the
/// expected depth is O(log n) whatever the keys and their order). A version has at most
/// `2 · count + 1` fragments. Each add makes O(log n) nodes (expected), of which the new version
/// keeps about two paths' worth: memory O(n log n), counted by ``approximateBytes``.
///
/// A tombstone that arrives out of sequence order (never from the writer; a damaged log could
/// replay one) rebuilds the index from all tombstones, stably sorted by sequence.
///
/// Immutable nodes and `Sendable`: the memtable swaps in a new value under its lock; readers
/// query a copy (a few references), never changed by later adds.
package struct RangeTombstoneIndex: Sendable {
    private var versions = Versions()
    /// The counter the node priorities are drawn from.
    private var priorities: UInt64 = 0
    /// Tree nodes the versions hold (each counted once, in the version that made it).
    private var nodesHeld = 0

    package init() {}

    package var isEmpty: Bool { versions.count == 0 }

    /// The memory the index holds (nodes of every version, and the versions), approximately.
    package var approximateBytes: Int { nodesHeld * 80 + versions.count * 24 }

    /// Adds a tombstone whose sequence is not lower than any already added, else rebuilds from `all`
    /// (every tombstone, this one included).
    package mutating func add(_ t: SequencedRangeTombstone, all: [SequencedRangeTombstone]) {
        if let last = versions.lastSequence, last > t.sequence {
            self = RangeTombstoneIndex()
            // A stable sort: tombstones of equal sequence keep their order.
            let sorted = all.enumerated().sorted { ($0.element.sequence, $0.offset) < ($1.element.sequence, $1.offset) }
            for (_, s) in sorted { paint(s) }
        } else {
            paint(t)
        }
    }

    private mutating func paint(_ t: SequencedRangeTombstone) {
        guard ByteComparison.compare(t.start, t.end) < 0 else {
            versions.append(versions.lastRoot, sequence: t.sequence)
            return
        }
        let (left, rest) = split(versions.lastRoot, at: t.start)
        let (inside, right) = split(rest, at: t.end)
        var before = left
        // The part beyond `end` of a fragment reaching over it: from `left` or `inside` (not both).
        var beyond: (end: [UInt8], sequence: UInt64)?
        if let last = Node.last(of: left), ByteComparison.compare(last.end, t.start) > 0 {
            before = trimLast(left, to: t.start)
            if ByteComparison.compare(last.end, t.end) > 0 { beyond = (last.end, last.sequence) }
        }
        if let last = Node.last(of: inside), ByteComparison.compare(last.end, t.end) > 0 { beyond = (last.end, last.sequence) }
        var middle = node(start: t.start, end: t.end, sequence: t.sequence, left: nil, right: nil)
        if let beyond {
            middle = joinNonEmpty(middle, node(start: t.end, end: beyond.end, sequence: beyond.sequence, left: nil, right: nil))
        }
        let root = join(joinNonEmpty(before, middle), right)
        // The nodes of this paint the new version keeps (the rest were intermediate copies).
        var fresh: [Node] = root.map { [$0] } ?? []
        while let n = fresh.popLast() {
            guard n.generation == versions.count else { continue }
            nodesHeld += 1
            if let l = n.left { fresh.append(l) }
            if let r = n.right { fresh.append(r) }
        }
        versions.append(root, sequence: t.sequence)
    }

    // MARK: Persistent treap

    /// A fragment `[start, end)` painted with `sequence`, and the subtrees of fragments before
    /// and after it. Never changed once built: versions share them.
    package final class Node: Sendable {
        package let start: [UInt8]
        package let end: [UInt8]
        package let sequence: UInt64
        package let priority: UInt64
        /// The number of the version being built when this node was made.
        package let generation: Int
        package let left: Node?
        package let right: Node?

        package init(start: [UInt8], end: [UInt8], sequence: UInt64, priority: UInt64, generation: Int, left: Node?, right: Node?) {
            self.start = start
            self.end = end
            self.sequence = sequence
            self.priority = priority
            self.generation = generation
            self.left = left
            self.right = right
        }

        package static func last(of tree: Node?) -> Node? {
            var n = tree
            while let r = n?.right { n = r }
            return n
        }
    }

    private mutating func node(start: [UInt8], end: [UInt8], sequence: UInt64, left: Node?, right: Node?) -> Node {
        // SplitMix64 of a counter: deterministic, independent of the keys.
        priorities &+= 0x9E37_79B9_7F4A_7C15
        var z = priorities
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Node(start: start, end: end, sequence: sequence, priority: z ^ (z >> 31), generation: versions.count,
                    left: left, right: right)
    }

    /// A copy of `n` with other children (same fragment, same priority).
    private func copy(_ n: Node, left: Node?, right: Node?) -> Node {
        Node(start: n.start, end: n.end, sequence: n.sequence, priority: n.priority, generation: versions.count,
             left: left, right: right)
    }

    /// The fragments starting before `key`, and those starting at or after it.
    private func split(_ tree: Node?, at key: [UInt8]) -> (Node?, Node?) {
        guard let n = tree else { return (nil, nil) }
        if ByteComparison.compare(n.start, key) < 0 {
            let (a, b) = split(n.right, at: key)
            return (copy(n, left: n.left, right: a), b)
        } else {
            let (a, b) = split(n.left, at: key)
            return (a, copy(n, left: b, right: n.right))
        }
    }

    /// The fragments of `a` then those of `b` (every fragment of `a` before every one of `b`).
    private func join(_ a: Node?, _ b: Node?) -> Node? {
        guard let a else { return b }
        guard let b else { return a }
        if a.priority >= b.priority {
            return copy(a, left: a.left, right: join(a.right, b))
        } else {
            return copy(b, left: join(a, b.left), right: b.right)
        }
    }

    private func joinNonEmpty(_ a: Node?, _ b: Node) -> Node {
        // Non-nil because `b` is.
        join(a, b) ?? b
    }

    /// `tree` with its last fragment ending at `end` instead.
    private func trimLast(_ tree: Node?, to end: [UInt8]) -> Node? {
        guard let n = tree else { return nil }
        if n.right != nil { return copy(n, left: n.left, right: trimLast(n.right, to: end)) }
        return Node(start: n.start, end: end, sequence: n.sequence, priority: n.priority, generation: versions.count,
                    left: n.left, right: nil)
    }

    // MARK: Versions

    /// The roots of the versions, oldest first, in a persistent trie of fanout 32: appending
    /// copies one path (O(log n)), finding the last version of sequence `<= S` binary-searches
    /// each level (O(log n) comparisons in all, about log2 n).
    package struct Versions: Sendable {
        package static let fanout = 32
        package private(set) var count = 0
        package private(set) var lastSequence: UInt64?
        package private(set) var lastRoot: Node?
        private var root: Chunk?

        package init() {}
        /// Leaves are at height 0; a chunk of height h holds up to fanout^(h+1) versions.
        private var height = 0

        /// A trie node: at height 0 the versions' roots; above, children. `sequences` holds each
        /// entry's (lowest) sequence, nondecreasing.
        package final class Chunk: Sendable {
            package let sequences: [UInt64]
            package let roots: [Node?]
            package let children: [Chunk]

            package init(sequences: [UInt64], roots: [Node?], children: [Chunk]) {
                self.sequences = sequences
                self.roots = roots
                self.children = children
            }
        }

        package mutating func append(_ tree: Node?, sequence: UInt64) {
            var capacity = Self.fanout
            for _ in 0..<height { capacity *= Self.fanout }
            if let r = root, count == capacity {
                root = Chunk(sequences: [r.sequences[0], sequence], roots: [],
                             children: [r, Self.path(tree, sequence: sequence, height: height)])
                height += 1
            } else {
                root = Self.appending(tree, sequence: sequence, to: root, height: height, count: count)
            }
            count += 1
            lastSequence = sequence
            lastRoot = tree
        }

        /// A chunk of `height` holding only the one version.
        private static func path(_ tree: Node?, sequence: UInt64, height: Int) -> Chunk {
            var c = Chunk(sequences: [sequence], roots: [tree], children: [])
            for _ in 0..<height { c = Chunk(sequences: [sequence], roots: [], children: [c]) }
            return c
        }

        /// `chunk` (holding `count` versions, not full) with one more.
        private static func appending(_ tree: Node?, sequence: UInt64, to chunk: Chunk?, height: Int, count: Int) -> Chunk {
            guard let chunk else { return path(tree, sequence: sequence, height: height) }
            if height == 0 {
                return Chunk(sequences: chunk.sequences + [sequence], roots: chunk.roots + [tree], children: [])
            }
            var below = 1
            for _ in 0..<height { below *= fanout }
            let i = count / below
            var children = chunk.children
            var sequences = chunk.sequences
            if i < children.count {
                children[i] = appending(tree, sequence: sequence, to: children[i], height: height - 1, count: count % below)
            } else {
                children.append(path(tree, sequence: sequence, height: height - 1))
                sequences.append(sequence)
            }
            return Chunk(sequences: sequences, roots: [], children: children)
        }

        /// The tree of the last version of sequence `<= sequence`, if there is one (else no
        /// tombstone is visible). Counts comparisons in `visits`.
        package func tree(at sequence: UInt64, visits: inout Int) -> (found: Bool, tree: Node?) {
            if let last = lastSequence, last <= sequence { visits += 1; return (true, lastRoot) }
            guard var chunk = root else { return (false, nil) }
            while true {
                // The last entry of sequence <= `sequence`.
                var lo = 0, hi = chunk.sequences.count
                while lo < hi {
                    visits += 1
                    let mid = (lo + hi) / 2
                    if chunk.sequences[mid] <= sequence { lo = mid + 1 } else { hi = mid }
                }
                if lo == 0 { return (false, nil) }
                if chunk.children.isEmpty { return (true, chunk.roots[lo - 1]) }
                chunk = chunk.children[lo - 1]
            }
        }
    }

    // MARK: Lookups

    /// A key interval `[lower, upper)` (nil: unbounded), over which a lookup's answer is constant.
    package struct Stretch {
        package var lower: [UInt8]?
        package var upper: [UInt8]?

        package func contains(_ key: UnsafeRawBufferPointer) -> Bool {
            if let lower, ByteComparison.compare(lower, key) > 0 { return false }
            if let upper, ByteComparison.compare(upper, key) <= 0 { return false }
            return true
        }

    package init(lower: [UInt8]? = nil, upper: [UInt8]? = nil) {
        self.lower = lower
        self.upper = upper
    }
}

    /// The newest sequence `<= sequence` of a tombstone covering `key`, and the stretch of keys
    /// around `key` with the same answer.
    package func newest(covering key: UnsafeRawBufferPointer, at sequence: UInt64) -> (sequence: UInt64?, stretch: Stretch) {
        var visits = 0
        return newest(covering: key, at: sequence, visits: &visits)
    }

    /// As ``newest(covering:at:)``, adding to `visits` the comparisons made (versions searched
    /// and tree nodes visited): what tests hold to O(log n).
    package func newest(covering key: UnsafeRawBufferPointer, at sequence: UInt64, visits: inout Int) -> (sequence: UInt64?, stretch: Stretch) {
        let (found, tree) = versions.tree(at: sequence, visits: &visits)
        guard found else { return (nil, Stretch()) }
        // The last fragment starting at or before `key`, and the first one after it.
        var before: Node?
        var after: Node?
        var n = tree
        while let x = n {
            visits += 1
            if ByteComparison.compare(x.start, key) <= 0 {
                before = x
                n = x.right
            } else {
                after = x
                n = x.left
            }
        }
        if let b = before, ByteComparison.compare(b.end, key) > 0 {
            return (b.sequence, Stretch(lower: b.start, upper: b.end))
        }
        return (nil, Stretch(lower: before?.end, upper: after?.start))
    }

    /// Lookups at one snapshot sequence for keys that come in order (a cursor's), remembering the
    /// last answer and the stretch of keys it holds for.
    package struct Probe {
        package let index: RangeTombstoneIndex
        package let sequence: UInt64
        private var cached: (sequence: UInt64?, stretch: Stretch)?

        package init(index: RangeTombstoneIndex, sequence: UInt64) {
            self.index = index
            self.sequence = sequence
        }

        /// The newest sequence `<= self.sequence` of a tombstone covering `key`.
        package mutating func newest(covering key: UnsafeRawBufferPointer) -> UInt64? {
            if let c = cached, c.stretch.contains(key) { return c.sequence }
            let answer = index.newest(covering: key, at: sequence)
            cached = answer
            return answer.sequence
        }
    }
}
