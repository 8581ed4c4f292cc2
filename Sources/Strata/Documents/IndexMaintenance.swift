import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// An index as a database uses it: its definition and the catalog id its rows are keyed by.
struct ActiveIndex: Sendable {
    let definition: DocumentIndex
    let id: UInt64
    /// `(5, id)`: the prefix of every row key.
    let prefix: [UInt8]
    /// The documents whose rows the index does not hold yet, while it is built or caught up
    /// (``DatabaseIndexes``); nil when it is complete. Changes only under the database's writer lock.
    var pending: PendingDocuments?

    init(definition: DocumentIndex, id: UInt64, pending: PendingDocuments? = nil) {
        self.definition = definition
        self.id = id
        self.prefix = DocumentLayout.indexPrefix(id)
        self.pending = pending
    }

    var name: String { definition.name }
}

/// One stored index row.
///
/// Key: `(5, indexId) ‖ collationKey(key) ‖ string(documentId) ‖ uint(emitIndex)` — the
/// collation key (FORMAT.md §13.3) is self-delimiting, and the document id and the position of
/// the `emit` call among the document's rows for this index follow it as tuple elements, so rows
/// order by key, then document, then emit order. A `.unicode` index puts the key's Unicode
/// collation key (§13.4) first, which orders the rows, and keeps the collation key after it as
/// the readable original: `(5, indexId) ‖ unicodeCollationKey(key) ‖ collationKey(key) ‖ …`.
/// Value: empty when `emit` gave no value, else the value's binary JSON form (never empty).
struct IndexRow: Sendable, Hashable {
    var key: [UInt8]
    var value: [UInt8]
}

/// Computing an index's rows for a document, and the writes that move an index from a
/// document's old rows to its new ones.
enum IndexMaintenance {
    /// The rows `index` holds for `document` (whose fields and metadata the map sees).
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` naming the index and the document when the
    ///   map throws or emits a key with a non-finite number (not JSON).
    static func rows(of document: Document, index: ActiveIndex) throws -> [IndexRow] {
        var emitted: [(JSON, JSON?)] = []
        do {
            // A nil key (a missing field) emits nothing; `.null` is a row.
            try index.definition.map(document) { key, value in if let key { emitted.append((key, value)) } }
        } catch {
            throw StrataError.invalidArgument(argument: "map", reason:
                "index \(index.name.debugDescription): map failed for document \(document.metadata.id.debugDescription): \(error)")
        }
        if emitted.isEmpty { return [] }
        var rows: [IndexRow] = []
        rows.reserveCapacity(emitted.count)
        var emitIndex: UInt64 = 0
        for (key, value) in emitted {
            if let bad = nonFiniteNumber(in: key) {
                throw StrataError.invalidArgument(argument: "map", reason:
                    "index \(index.name.debugDescription): document \(document.metadata.id.debugDescription) emitted the key \(key), "
                    + "which holds the non-JSON number \(bad)")
            }
            var k = TupleKeyEncoder(reservingCapacity: index.prefix.count + 24 + document.metadata.id.utf8.count)
            k.bytes.append(contentsOf: index.prefix)
            if index.definition.collation == .unicode {
                do {
                    try key.appendUnicodeCollationKey(to: &k.bytes)
                } catch {
                    throw StrataError.invalidArgument(argument: "map", reason:
                        "index \(index.name.debugDescription): document \(document.metadata.id.debugDescription): \(error)")
                }
            }
            key.appendCollationKey(to: &k.bytes)
            k.append(document.metadata.id)
            k.append(emitIndex)
            emitIndex += 1
            var v: [UInt8] = []
            if let value { value.appendBinary(to: &v) }
            rows.append(IndexRow(key: k.bytes, value: v))
        }
        return rows
    }

    /// The first non-finite double inside `value`, if any.
    static func nonFiniteNumber(in value: JSON) -> Double? {
        switch value {
        case .double(let d): return d.isFinite ? nil : d
        case .array(let elements):
            for e in elements { if let d = nonFiniteNumber(in: e) { return d } }
            return nil
        case .object(let members):
            for (_, e) in members { if let d = nonFiniteNumber(in: e) { return d } }
            return nil
        default: return nil
        }
    }

    /// Adds to `batch` the writes that replace `old` rows by `new` ones, and appends to `touched`
    /// the keys of the rows that appear, disappear or change value (when `touched` is given).
    static func replace(_ old: [IndexRow], with new: [IndexRow], in batch: inout WriteBatch,
                        touched: inout [[UInt8]]?) {
        if old.isEmpty {
            for row in new {
                batch.putRaw(row.key, row.value)
                touched?.append(row.key)
            }
            return
        }
        var remaining: [[UInt8]: [UInt8]] = Dictionary(minimumCapacity: old.count)
        for row in old { remaining[row.key] = row.value }
        for row in new {
            if let before = remaining.removeValue(forKey: row.key), before == row.value { continue }
            batch.putRaw(row.key, row.value)
            touched?.append(row.key)
        }
        for (key, _) in remaining {
            batch.deleteRaw(key)
            touched?.append(key)
        }
    }
}
