import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The key and value layouts of document databases (FORMAT.md §16) besides the document record
// (``DocumentRecord``). Every function here is the single source of truth for one layout; readers
// check every length against the bytes they have.

/// Keys and small encodings of the document keyspaces.
package enum DocumentLayout {
    /// Layout version of a database's catalog payload (FORMAT.md §12, §16.1): 2 since records
    /// may hold revision trees and keyspaces 12 and 13 exist; 3 since a record may hold a single
    /// revision as its digest alone (flag bit 4). 1 and 2 are still read (and rewritten as 3 when
    /// the database is opened).
    static let layoutVersion: UInt8 = 3
    /// Index entry states in the catalog payload (FORMAT.md §16.1). Written to disk: never change.
    /// Building: rows may be incomplete; the index is built again when next named.
    static let indexBuilding: UInt8 = 0
    /// Current: the rows follow every commit of the database while it is open, so at the next
    /// open they reflect every change in the feed.
    package static let indexReady: UInt8 = 1
    /// Behind: the rows reflect the changes up to the payload's reflected sequence; later changes
    /// are applied from the feed when the index is next named.
    package static let indexBehind: UInt8 = 2

    @inline(__always)
    static func appendString(_ s: String, to out: inout [UInt8]) {
        Varint.appendLengthPrefixed(s, to: &out)
    }

    /// `(keyspace, databaseId, strings…)` as a tuple key.
    private static func tupleKey(_ keyspace: Keyspace, _ databaseId: UInt64, _ strings: String...) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 16 + strings.reduce(0) { $0 + $1.utf8.count + 2 })
        e.append(keyspace.id)
        e.append(databaseId)
        for string in strings { e.append(string) }
        return e.bytes
    }

    /// `(4, databaseId)`: the prefix of every document key of a database.
    package static func documentPrefix(_ databaseId: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 8)
        e.append(Keyspace.documents.id)
        e.append(databaseId)
        return e.bytes
    }

    /// `(4, databaseId, documentId)`.
    static func documentKey(_ databaseId: UInt64, _ documentId: String) -> [UInt8] {
        // Spelled out, not `tupleKey`: every document read builds one (no variadic array).
        var e = TupleKeyEncoder(reservingCapacity: 16 + documentId.utf8.count)
        e.append(Keyspace.documents.id)
        e.append(databaseId)
        e.append(documentId)
        return e.bytes
    }

    /// `(7, databaseId, documentId)`: the prefix of a document's attachment keys.
    static func attachmentPrefix(_ databaseId: UInt64, _ documentId: String) -> [UInt8] {
        tupleKey(.attachments, databaseId, documentId)
    }

    /// `(7, databaseId, documentId, name)` → the attachment's bytes.
    static func attachmentKey(_ databaseId: UInt64, _ documentId: String, _ name: String) -> [UInt8] {
        tupleKey(.attachments, databaseId, documentId, name)
    }

    /// `(7, databaseId)`: the prefix of every attachment key of a database.
    package static func attachmentDatabasePrefix(_ databaseId: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 8)
        e.append(Keyspace.attachments.id)
        e.append(databaseId)
        return e.bytes
    }

    /// `(12, databaseId, documentId)`: the prefix of a document's conflicting revisions.
    /// `(12, databaseId)`: the prefix of every conflicting-revision entry of a database.
    static func conflictDatabasePrefix(_ databaseId: UInt64) -> [UInt8] {
        tupleKey(.conflictingRevisions, databaseId)
    }

    static func conflictPrefix(_ databaseId: UInt64, _ documentId: String) -> [UInt8] {
        tupleKey(.conflictingRevisions, databaseId, documentId)
    }

    /// `(12, databaseId, documentId, revisionId)` → a losing leaf revision (``LeafRevision``).
    static func conflictKey(_ databaseId: UInt64, _ documentId: String, _ revision: RevisionID) -> [UInt8] {
        tupleKey(.conflictingRevisions, databaseId, documentId, revision.description)
    }

    /// `(13, databaseId, id)` → a local document as binary JSON.
    static func localKey(_ databaseId: UInt64, _ id: String) -> [UInt8] {
        tupleKey(.localDocuments, databaseId, id)
    }

    /// The change sequence of a change-feed key, the one unsigned element after `prefixLength`
    /// bytes (the database's ``changePrefix(_:)``). Anything else is a corruption of the feed of
    /// database `name`, naming the key.
    static func changeSequence(fromKey key: [UInt8], prefixLength: Int, database name: String) throws -> UInt64 {
        var decoder = TupleKeyDecoder(key[prefixLength...])
        guard let sequence = try? decoder.nextUInt(), decoder.isAtEnd else {
            throw StrataError.corrupted(file: "change feed of document database \(name.debugDescription)", offset: 0,
                                        reason: "bad change key \(TupleKey.describe(key))")
        }
        return sequence
    }

    /// `(6, databaseId)`: the prefix of a database's change feed.
    package static func changePrefix(_ databaseId: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 8)
        e.append(Keyspace.documentChanges.id)
        e.append(databaseId)
        return e.bytes
    }

    /// `(6, databaseId, sequence)`.
    static func changeKey(_ databaseId: UInt64, _ sequence: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 16)
        e.append(Keyspace.documentChanges.id)
        e.append(databaseId)
        e.append(sequence)
        return e.bytes
    }

    /// Value of a change-feed entry: `u8 flags (bit 0 deletion, bit 1 external) ‖ varint revision ‖
    /// document id UTF-8 to the end`.
    static func changeValue(id: String, isDeletion: Bool, revision: UInt64, isExternal: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12 + id.utf8.count)
        out.append((isDeletion ? 1 : 0) | (isExternal ? 2 : 0))
        Varint.append(revision, to: &out)
        out.append(contentsOf: id.utf8)
        return out
    }

    /// Decodes a change-feed entry whose key ends in `sequence`.
    /// A change-feed entry as stored: the revision is its generation only.
    struct ChangeEntry {
        var sequence: UInt64
        var id: String
        var isDeletion: Bool
        var revision: UInt64
        var isExternal: Bool
    }

    static func decodeChange(_ value: UnsafeRawBufferPointer, sequence: UInt64) throws -> ChangeEntry {
        var reader = ByteReader(value, kind: "change", name: String(sequence))
        let flags = try reader.uint8("flags")
        guard flags <= 3 else { throw reader.corrupted(at: 0, "unknown flags 0x\(String(flags, radix: 16))") }
        let revision = try reader.varint("revision")
        let id = try reader.restAsString("document id")
        return ChangeEntry(sequence: sequence, id: id, isDeletion: flags & 1 != 0, revision: revision, isExternal: flags & 2 != 0)
    }

    /// `(5, indexId)`: the prefix of an index's rows.
    package static func indexPrefix(_ indexId: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 8)
        e.append(Keyspace.indexRows.id)
        e.append(indexId)
        return e.bytes
    }

    /// The catalog name of an index: `database ‖ 0x00 ‖ index` (a database name holds no NUL).
    static func indexCatalogName(database: String, index: String) -> String {
        database + "\u{0}" + index
    }

    /// Catalog payload of a database: `u8 layout version`.
    static func databasePayload() -> [UInt8] { [layoutVersion] }

    /// Layout version of an index's catalog payload written now (FORMAT.md §16.1). Version 1 (no
    /// collation, no reflected sequence) was written by builds that skipped `null` keys: it is
    /// still read, but such an index may lack rows and is rebuilt when next named.
    static let indexLayoutVersion: UInt8 = 2

    /// Catalog payload of an index (layout version 2): `u8 layout version ‖ u8 state ‖ varint
    /// length, UTF-8 version ‖ u8 reduction (0 none, 1 count, 2 sum, 3 stats, 4 custom) ‖ u8
    /// collation (0 raw, 1 unicode) ‖ [4 bytes ICU collator version, for unicode only] ‖ varint
    /// reflected sequence`. A `.unicode` payload records the running ICU's collator version
    /// unless `collatorVersion` is given.
    static func indexPayload(version: String, state: UInt8, reduction: Reduction?,
                             collation: DocumentIndex.Collation = .raw, collatorVersion: [UInt8]? = nil,
                             reflected: UInt64 = 0) -> [UInt8] {
        indexPayload(IndexPayload(state: state, version: version, reduction: reductionCode(reduction),
                                  collation: collation,
                                  collatorVersion: collation == .unicode ? (collatorVersion ?? UnicodeCollation.version ?? []) : nil,
                                  reflected: reflected))
    }

    static func indexPayload(_ p: IndexPayload) -> [UInt8] {
        var out: [UInt8] = [indexLayoutVersion, p.state]
        appendString(p.version, to: &out)
        out.append(p.reduction)
        switch p.collation {
        case .raw:
            out.append(0)
        case .unicode:
            out.append(1)
            out.append(contentsOf: ((p.collatorVersion ?? []) + [0, 0, 0, 0]).prefix(4))
        }
        Varint.append(p.reflected, to: &out)
        return out
    }

    static func reductionCode(_ r: Reduction?) -> UInt8 {
        switch r {
        case nil: return 0
        case .count: return 1
        case .sum: return 2
        case .stats: return 3
        case .custom: return 4
        }
    }

    package static func reductionName(_ code: UInt8) -> String {
        switch code {
        case 0: return "none"
        case 1: return "count"
        case 2: return "sum"
        case 3: return "stats"
        case 4: return "custom"
        default: return "unknown (\(code))"
        }
    }

    /// A decoded index payload.
    package struct IndexPayload: Sendable, Equatable {
        package var state: UInt8
        package var version: String
        package var reduction: UInt8
        /// The payload's layout version (1: written before `null` keys were rows).
        var layout: UInt8 = indexLayoutVersion
        package var collation: DocumentIndex.Collation = .raw
        /// The ICU collator version a `.unicode` index's rows were built with.
        var collatorVersion: [UInt8]? = nil
        /// The last change sequence the rows reflect (meaningful in state behind; 0 in a
        /// layout-1 payload).
        package var reflected: UInt64 = 0
    }

    /// Decodes an index payload of layout 1 (states building and current, no reflected
    /// sequence) or 2.
    package static func decodeIndexPayload(_ payload: [UInt8], name: String) throws -> IndexPayload {
        let file = "catalog entry \(CollectionKind.documentIndex.name) \(name.debugDescription)"
        guard let layout = payload.first else {
            throw StrataError.corrupted(file: file, offset: 0, reason: "empty payload")
        }
        guard layout == 1 || layout == indexLayoutVersion else {
            throw StrataError.unsupportedFormatVersion(file: file, found: UInt32(layout))
        }
        return try payload.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer, file: file, offset: 1)
            let state = try reader.uint8("index state")
            guard state <= (layout == 1 ? indexReady : indexBehind) else {
                throw reader.corrupted(at: 1, "unknown index state \(state)")
            }
            let v = try reader.string("version")
            let reduction = try reader.uint8("reduction")
            var result = IndexPayload(state: state, version: v, reduction: reduction, layout: layout)
            if layout >= 2 {
                let at = reader.offset
                switch try reader.uint8("collation") {
                case 0: result.collation = .raw
                case 1:
                    result.collation = .unicode
                    result.collatorVersion = Array(try reader.bytes(4, "the collator version"))
                case let c: throw reader.corrupted(at: at, "unknown collation \(c)")
                }
                result.reflected = try reader.varint("reflected sequence")
            }
            try reader.expectEnd("the payload")
            return result
        }
    }

    /// Whether the rows of an index stored with `payload` are what this build computes for an
    /// index in `collation`: the current layout (one that stores `null` keys), the same
    /// collation, and for `.unicode` the running ICU's collator version.
    static func rowsAreCurrent(_ payload: IndexPayload, _ collation: DocumentIndex.Collation) -> Bool {
        guard payload.layout == indexLayoutVersion, payload.collation == collation else { return false }
        return collation == .raw || payload.collatorVersion == UnicodeCollation.version
    }

    package static func checkDatabasePayload(_ payload: [UInt8], name: String) throws {
        let file = "catalog entry \(CollectionKind.documentDatabase.name) \(name.debugDescription)"
        guard let version = payload.first else {
            throw StrataError.corrupted(file: file, offset: 0, reason: "empty payload")
        }
        guard version >= 1 && version <= layoutVersion else {
            throw StrataError.unsupportedFormatVersion(file: file, found: UInt32(version))
        }
        guard payload.count == 1 else {
            throw StrataError.corrupted(file: file, offset: 1, reason: "\(payload.count - 1) bytes after the layout version")
        }
    }
}
