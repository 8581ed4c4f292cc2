import Foundation
import StrataFormat
import StrataFiles
import StrataEngine

// The key and value layouts of document databases (FORMAT.md §16). Every function here is the
// single source of truth for one layout; readers check every length against the bytes they have.

/// The stored record of one document id: its latest revision, or a tombstone after a deletion.
///
/// Value of `(4, databaseId, documentId)`:
///
///     u8     flags            bit 0 deleted (tombstone), bit 1 has type, bit 2 has attachments,
///                             bit 3 has a revision tree
///     varint revision
///     varint changeSequence   the key of this revision's entry in the change feed
///     u64 LE createDate       bit pattern of a Double, seconds since 2001-01-01T00:00:00Z
///     u64 LE lastChange       likewise
///     [revision tree]         if flag bit 3 (``RevisionTree``); its first node is this revision
///     [varint length, UTF-8]  type, if flag bit 1
///     varint channel count, then each channel as varint length, UTF-8
///     [varint count, then per attachment: name, content type (each varint length, UTF-8),
///      varint byte length, u32 LE CRC32C of the bytes]          if flag bit 2
///     body                    the fields as a binary JSON object (FORMAT.md §13.1), to the end;
///                             empty for a tombstone
package struct DocumentRecord: Sendable, Equatable {
    /// What the record says of one attachment (its bytes are in keyspace 7).
    package struct AttachmentInfo: Sendable, Equatable {
        package var name: String
        package var contentType: String
        package var length: Int
        var crc: UInt32

        /// `name ‖ content type` (each varint length, UTF-8) `‖ varint length ‖ u32 LE CRC32C`.
        func append(to out: inout [UInt8]) {
            DocumentLayout.appendString(name, to: &out)
            DocumentLayout.appendString(contentType, to: &out)
            Varint.append(length, to: &out)
            LittleEndian.append(crc, to: &out)
        }
    }

    package static let deletedFlag: UInt8 = 1
    static let typeFlag: UInt8 = 2
    static let attachmentsFlag: UInt8 = 4
    static let treeFlag: UInt8 = 8

    package var isDeleted: Bool
    package var revision: UInt64
    var changeSequence: UInt64
    package var createDate: Date
    package var lastChange: Date
    package var type: String?
    package var channels: [String]
    package var attachments: [AttachmentInfo]
    /// The revision tree; nil in a record written before revision trees (its revision id is
    /// then ``legacyRevisionID(documentID:)``).
    var tree: RevisionTree?
    /// Offset of the body in the encoded value (decoding only).
    var bodyOffset: Int = 0

    init(isDeleted: Bool, revision: UInt64, changeSequence: UInt64, createDate: Date, lastChange: Date,
         type: String?, channels: [String], attachments: [AttachmentInfo], tree: RevisionTree? = nil) {
        self.tree = tree
        self.isDeleted = isDeleted
        self.revision = revision
        self.changeSequence = changeSequence
        self.createDate = createDate
        self.lastChange = lastChange
        self.type = type
        self.channels = channels
        self.attachments = attachments
    }

    /// Appends the header (everything before the body) to `out`.
    func appendHeader(to out: inout [UInt8]) {
        var flags: UInt8 = 0
        if isDeleted { flags |= Self.deletedFlag }
        if type != nil { flags |= Self.typeFlag }
        if !attachments.isEmpty { flags |= Self.attachmentsFlag }
        if tree != nil { flags |= Self.treeFlag }
        out.append(flags)
        Varint.append(revision, to: &out)
        Varint.append(changeSequence, to: &out)
        LittleEndian.append(createDate.timeIntervalSinceReferenceDate.bitPattern, to: &out)
        LittleEndian.append(lastChange.timeIntervalSinceReferenceDate.bitPattern, to: &out)
        tree?.append(to: &out)
        if let type { DocumentLayout.appendString(type, to: &out) }
        Varint.append(channels.count, to: &out)
        for channel in channels { DocumentLayout.appendString(channel, to: &out) }
        if !attachments.isEmpty {
            Varint.append(attachments.count, to: &out)
            for a in attachments { a.append(to: &out) }
        }
    }

    /// Decodes the header of a stored record; ``bodyOffset`` tells where the body starts.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` naming the document.
    package init(decoding value: UnsafeRawBufferPointer, documentID: String) throws {
        var reader = DocumentLayout.Reader(buffer: value, kind: "document", name: documentID)
        let flags = try reader.byte()
        guard flags & ~(Self.deletedFlag | Self.typeFlag | Self.attachmentsFlag | Self.treeFlag) == 0 else {
            throw reader.corrupted(0, "unknown flags 0x\(String(flags, radix: 16))")
        }
        isDeleted = flags & Self.deletedFlag != 0
        revision = try reader.varint("revision")
        changeSequence = try reader.varint("change sequence")
        createDate = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.uint64("create date")))
        lastChange = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.uint64("last change")))
        if flags & Self.treeFlag != 0 {
            let at = reader.offset
            let tree = try RevisionTree(reading: &reader)
            guard tree.winner.revision.generation == revision, tree.winner.isDeleted == isDeleted else {
                throw reader.corrupted(at, "the revision tree's winner \(tree.winner.revision) is not revision \(revision)")
            }
            self.tree = tree
        } else {
            tree = nil
        }
        type = flags & Self.typeFlag != 0 ? try reader.string("type") : nil
        let channelCount = try reader.count("channel count")
        var channels: [String] = []
        channels.reserveCapacity(channelCount)
        for _ in 0..<channelCount { channels.append(try reader.string("channel")) }
        self.channels = channels
        var attachments: [AttachmentInfo] = []
        if flags & Self.attachmentsFlag != 0 {
            let n = try reader.count("attachment count")
            attachments.reserveCapacity(n)
            for _ in 0..<n {
                let name = try reader.string("attachment name")
                let contentType = try reader.string("attachment content type")
                let length = try reader.varint("attachment length")
                guard length <= UInt64(Int.max) else { throw reader.corrupted(reader.offset, "attachment length \(length) too large") }
                let crc = try reader.uint32("attachment CRC")
                attachments.append(AttachmentInfo(name: name, contentType: contentType, length: Int(length), crc: crc))
            }
        }
        self.attachments = attachments
        bodyOffset = reader.offset
        if isDeleted && bodyOffset != value.count {
            throw reader.corrupted(bodyOffset, "a tombstone has \(value.count - bodyOffset) bytes of body")
        }
    }

    /// The id of this revision: the tree's winner, or for a record written before revision trees
    /// a digest derived from the id and revision (FORMAT.md §16.2), the same on every read.
    func revisionID(documentID: String) -> RevisionID {
        tree?.winner.revision ?? Self.legacyRevisionID(documentID: documentID, revision: revision)
    }

    /// The revision id of a record without a tree: MD5 of `documentID ‖ 0x00 ‖ decimal revision`.
    static func legacyRevisionID(documentID: String, revision: UInt64) -> RevisionID {
        let digest = MD5.digest(Array(documentID.utf8) + [0] + Array(String(revision).utf8)).hexString
        // A revision of 0 is never stored; generation 1 keeps the id well formed regardless.
        return RevisionID(generation: max(revision, 1), digest: digest) ?? RevisionID(generation: 1, digest: "0")!
    }

    /// For tools: the winner's revision id, the conflicting leaves' ids, and how many revisions
    /// the tree keeps.
    package func revisionSummary(documentID: String) -> (revisionID: String, conflicts: [String], kept: Int) {
        let tree = treeOrLegacy(documentID: documentID)
        return (tree.winner.revision.description,
                tree.nodes.dropFirst().filter { $0.isLeaf && !$0.isDeleted }.map(\.revision.description), tree.nodes.count)
    }

    /// The record's tree, or for a record without one the single revision it stands for.
    func treeOrLegacy(documentID: String) -> RevisionTree {
        tree ?? RevisionTree(nodes: [RevisionTree.Node(revision: revisionID(documentID: documentID), parent: nil,
                                                       isDeleted: isDeleted, isLeaf: true)])
    }

    /// The document's metadata.
    func metadata(id: String) -> DocumentMetadata {
        var m = DocumentMetadata(id: id)
        m.createDate = createDate
        m.lastChange = lastChange
        m.revision = revision
        m.revisionID = revisionID(documentID: id)
        m.type = type
        m.channels = channels
        return m
    }
}

/// Keys and small encodings of the document keyspaces.
package enum DocumentLayout {
    /// Layout version of a database's catalog payload (FORMAT.md §12, §16.1): 2 since records
    /// may hold revision trees and keyspaces 12 and 13 exist; 1 is still read (and rewritten as 2
    /// when the database is opened).
    static let layoutVersion: UInt8 = 2
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

    /// A change-feed entry as stored: the revision is its generation only.
    struct ChangeEntry {
        var sequence: UInt64
        var id: String
        var isDeletion: Bool
        var revision: UInt64
        var isExternal: Bool
    }

    /// Decodes a change-feed entry whose key ends in `sequence`.
    static func decodeChange(_ value: UnsafeRawBufferPointer, sequence: UInt64) throws -> ChangeEntry {
        var reader = Reader(buffer: value, kind: "change", name: String(sequence))
        let flags = try reader.byte()
        guard flags <= 3 else { throw reader.corrupted(0, "unknown flags 0x\(String(flags, radix: 16))") }
        let revision = try reader.varint("revision")
        guard let id = String(validating: UnsafeRawBufferPointer(rebasing: value[reader.offset...]), as: UTF8.self) else {
            throw reader.corrupted(reader.offset, "document id is not UTF-8")
        }
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
            var reader = Reader(buffer: buffer, kind: "", name: file)
            reader.offset = 1
            let state = try reader.byte()
            guard state <= (layout == 1 ? indexReady : indexBehind) else {
                throw reader.corrupted(1, "unknown index state \(state)")
            }
            let v = try reader.string("version")
            let reduction = try reader.byte()
            var result = IndexPayload(state: state, version: v, reduction: reduction, layout: layout)
            if layout >= 2 {
                let at = reader.offset
                switch try reader.byte() {
                case 0: result.collation = .raw
                case 1:
                    guard buffer.count - reader.offset >= 4 else {
                        throw reader.corrupted(reader.offset, "value ends inside the collator version")
                    }
                    result.collation = .unicode
                    result.collatorVersion = Array(buffer[reader.offset..<reader.offset + 4])
                    reader.offset += 4
                case let c: throw reader.corrupted(at, "unknown collation \(c)")
                }
                result.reflected = try reader.varint("reflected sequence")
            }
            guard reader.offset == buffer.count else { throw reader.corrupted(reader.offset, "bytes after the payload") }
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
        guard version == 1 || version == layoutVersion else {
            throw StrataError.unsupportedFormatVersion(file: file, found: UInt32(version))
        }
        guard payload.count == 1 else {
            throw StrataError.corrupted(file: file, offset: 1, reason: "\(payload.count - 1) bytes after the layout version")
        }
    }

    /// A bounds-checked reader of record values.
    struct Reader {
        let buffer: UnsafeRawBufferPointer
        /// What the value is (`document`, `change`), and its name; "" for a name that says all.
        let kind: StaticString
        let name: String
        var offset = 0

        init(buffer: UnsafeRawBufferPointer, kind: StaticString, name: String) {
            self.buffer = buffer
            self.kind = kind
            self.name = name
        }

        func corrupted(_ at: Int, _ reason: String) -> StrataError {
            let what = kind.utf8CodeUnitCount == 0 ? name : "\(kind) \(name.debugDescription)"
            return .corrupted(file: what, offset: at, reason: reason)
        }

        mutating func byte() throws -> UInt8 {
            guard offset < buffer.count else { throw corrupted(offset, "value ends early") }
            defer { offset += 1 }
            return buffer[offset]
        }

        mutating func varint(_ field: String) throws -> UInt64 {
            let start = offset
            guard let v = Varint.read(buffer, at: &offset) else { throw corrupted(start, "bad varint (\(field))") }
            return v
        }

        mutating func count(_ field: String) throws -> Int {
            let start = offset
            let v = try varint(field)
            guard v <= UInt64(buffer.count - offset) else { throw corrupted(start, "\(field) \(v) exceeds the value") }
            return Int(v)
        }

        mutating func uint64(_ field: String) throws -> UInt64 {
            guard buffer.count - offset >= 8 else { throw corrupted(offset, "value ends inside \(field)") }
            defer { offset += 8 }
            return LittleEndian.uint64(buffer, at: offset)
        }

        mutating func uint32(_ field: String) throws -> UInt32 {
            guard buffer.count - offset >= 4 else { throw corrupted(offset, "value ends inside \(field)") }
            defer { offset += 4 }
            return LittleEndian.uint32(buffer, at: offset)
        }

        mutating func string(_ field: String) throws -> String {
            let start = offset
            let n = try count(field + " length")
            guard let s = String(validating: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + n]), as: UTF8.self) else {
                throw corrupted(start, "\(field) is not UTF-8")
            }
            offset += n
            return s
        }
    }
}
