@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A consistent, read-only view of the store at one moment: later writes, flushes and compactions
/// do not change what it reads. It keeps its memtables and segment files alive until released.
package final class Snapshot: Sendable {
    package let sequence: UInt64
    /// Newest first.
    package let memtables: [Memtable]
    package let version: Version

    package init(sequence: UInt64, memtables: [Memtable], version: Version) {
        self.sequence = sequence
        self.memtables = memtables
        self.version = version
    }

    /// The value of an engine key, or nil if it has none.
    package func get(_ key: [UInt8]) throws -> [UInt8]? {
        try key.withUnsafeBytes { k in try Self.get(k, sequence: sequence, memtables: memtables, version: version) }
    }

    /// The value of `k` in the layers of a snapshot, or nil if it has none: what ``get(_:)``
    /// reads, for a caller (`Engine.get`) that has the layers without making a `Snapshot`.
    package static func get(_ k: UnsafeRawBufferPointer, sequence: UInt64, memtables: [Memtable],
                    version: Version) throws -> [UInt8]? {
        for m in memtables {
            switch m.get(k, sequence: sequence) {
            case .value(let v): return v
            case .deleted: return nil
            case .notFound: continue
            }
        }
        let hash = KeyHash.hash64(k)
        for run in version.runs {
            switch try run.get(k, hash: hash) {
            case .value(let v): return v
            case .deleted: return nil
            case .notFound: if run.deletes(k) { return nil }
            }
        }
        return nil
    }

    /// A cursor over the engine keys in `[lower, upper)`; with `fillCache` false the segment
    /// blocks it reads stay out of the block cache (a scan read once, as at open).
    package func cursor(lower: [UInt8]? = nil, upper: [UInt8]? = nil, reverse: Bool = false, fillCache: Bool = true) -> MergedCursor {
        MergedCursor(memtables: memtables, runs: version.runs, sequence: sequence,
                     lower: lower, upper: upper, reverse: reverse, fillCache: fillCache)
    }
}
