import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A collection's catalog record: the small id its data keys carry, and what its collection
/// keeps about itself (value type, options, head state), in the collection's own encoding.
package struct CatalogEntry: Sendable, Equatable {
    package var id: UInt64
    package var payload: [UInt8]

    package init(id: UInt64, payload: [UInt8]) {
        self.id = id
        self.payload = payload
    }
}

/// Names to ids for every collection of a store, in the catalog keyspace (FORMAT.md §12).
///
/// Keys: `(0, kind, name)` → `varint(id) ‖ payload`; `(0, 0)` → `varint(next id)`. Ids start at 1
/// and are never reused, also after a collection is dropped, so stale data of a dropped
/// collection can never be read as a new one's.
package final class Catalog: Sendable {
    private let engine: Engine
    /// Serializes id allocation (read the counter, write entry and counter in one batch).
    private let allocation = Mutex<Void>(())

    package init(engine: Engine) {
        self.engine = engine
    }

    package static func key(kind: CollectionKind, name: String) -> [UInt8] {
        var e = TupleKeyEncoder()
        e.append(Keyspace.catalog.id)
        e.append(kind.id)
        e.append(name)
        return e.bytes
    }

    package static let counterKey: [UInt8] = {
        var e = TupleKeyEncoder()
        e.append(Keyspace.catalog.id)
        e.append(UInt64(0))
        return e.bytes
    }()

    package static func encode(_ entry: CatalogEntry) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(entry.payload.count + 4)
        Varint.append(entry.id, to: &out)
        out += entry.payload
        return out
    }

    package static func decode(_ bytes: [UInt8], key: [UInt8]) throws -> CatalogEntry {
        var position = 0
        guard let id = bytes.withUnsafeBytes({ Varint.read($0, at: &position) }), id > 0 else {
            throw StrataError.corrupted(file: "catalog", offset: 0,
                                        reason: "bad catalog entry for key \(TupleKey.describe(key))")
        }
        return CatalogEntry(id: id, payload: Array(bytes[position...]))
    }

    /// The entry of a collection, or nil if the catalog has none.
    package func entry(kind: CollectionKind, name: String) throws -> CatalogEntry? {
        let key = Self.key(kind: kind, name: name)
        guard let bytes = try engine.get(key) else { return nil }
        return try Self.decode(bytes, key: key)
    }

    /// The entry of a collection, creating it with a new id and `payload()` if it has none.
    /// Returns whether it was created. Opening an existing collection takes no lock; only the
    /// allocation of a new id is serialized.
    package func openOrCreate(kind: CollectionKind, name: String,
                      payload: () throws -> [UInt8]) throws -> (entry: CatalogEntry, created: Bool) {
        if let existing = try entry(kind: kind, name: name) { return (existing, false) }
        return try allocation.withLock { _ in
            if let existing = try entry(kind: kind, name: name) { return (existing, false) }
            var next: UInt64 = 1
            if let bytes = try engine.get(Self.counterKey) {
                var position = 0
                guard let n = bytes.withUnsafeBytes({ Varint.read($0, at: &position) }), n > 0 else {
                    throw StrataError.corrupted(file: "catalog", offset: 0, reason: "bad collection id counter")
                }
                next = try CounterLimit.checkNext(n, "collection id counter", file: "catalog")
            }
            var after = next
            try CounterLimit.take(from: &after, "collection id")
            let entry = CatalogEntry(id: next, payload: try payload())
            var batch = WriteBatch()
            var counter: [UInt8] = []
            Varint.append(after, to: &counter)
            batch.putRaw(Self.counterKey, counter)
            batch.putRaw(Self.key(kind: kind, name: name), Self.encode(entry))
            try engine.commit(CommitBatch(records: batch))
            return (entry, true)
        }
    }

    /// Adds the replacement of a collection's entry to `batch` (so that head state can change
    /// atomically with the data it describes). The id must stay the same.
    package static func put(_ entry: CatalogEntry, kind: CollectionKind, name: String, into batch: inout WriteBatch) {
        batch.putRaw(key(kind: kind, name: name), encode(entry))
    }

    /// Adds the removal of a collection's entry to `batch`. Its id is never handed out again.
    package static func remove(kind: CollectionKind, name: String, into batch: inout WriteBatch) {
        batch.deleteRaw(key(kind: kind, name: name))
    }

    /// Every collection of `kind` in a snapshot, in name order.
    package static func entries(kind: CollectionKind, in snapshot: Snapshot) throws -> [(name: String, entry: CatalogEntry)] {
        var e = TupleKeyEncoder()
        e.append(Keyspace.catalog.id)
        e.append(kind.id)
        let lower = e.bytes
        var upperEncoder = TupleKeyEncoder()
        upperEncoder.append(Keyspace.catalog.id)
        upperEncoder.append(kind.id + 1)
        let cursor = snapshot.cursor(lower: lower, upper: upperEncoder.bytes)
        var result: [(name: String, entry: CatalogEntry)] = []
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var decoder = TupleKeyDecoder(key[lower.count...])
            let name: String
            do { name = try decoder.nextString() } catch {
                throw StrataError.corrupted(file: "catalog", offset: 0,
                                            reason: "bad catalog key \(TupleKey.describe(key)): \(error)")
            }
            result.append((name, try decode(Array(cursor.value), key: key)))
        }
        return result
    }
}
