import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The stored record of one document id: its latest revision, or a tombstone after a deletion.
///
/// Value of `(4, databaseId, documentId)`:
///
///     u8     flags            bit 0 deleted (tombstone), bit 1 has type, bit 2 has attachments,
///                             bit 3 has a revision tree, bit 4 has a single revision's digest
///     varint revision
///     varint changeSequence   the key of this revision's entry in the change feed
///     u64 LE createDate       bit pattern of a Double, seconds since 2001-01-01T00:00:00Z
///     u64 LE lastChange       likewise
///     [revision tree]         if flag bit 3 (``RevisionTree``); its first node is this revision
///     [16 bytes digest]       if flag bit 4 (database layout 3): the tree is this revision
///                             alone — generation `revision`, no parent, a leaf, deleted if the
///                             record is — and these bytes are its digest of 32 lowercase hex
///                             digits; the form of every first revision saved on this replica
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
    static let singleRevisionFlag: UInt8 = 16

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
        let single = tree.flatMap { isSingleRevision($0) ? $0.winner.revision.digest : nil }
        if tree != nil { flags |= single == nil ? Self.treeFlag : Self.singleRevisionFlag }
        let flagsAt = out.count
        out.append(flags)
        Varint.append(revision, to: &out)
        Varint.append(changeSequence, to: &out)
        LittleEndian.append(createDate.timeIntervalSinceReferenceDate.bitPattern, to: &out)
        LittleEndian.append(lastChange.timeIntervalSinceReferenceDate.bitPattern, to: &out)
        if let single {
            if !RevisionTree.appendPacked(single, to: &out) {
                // Not 32 lowercase hex digits: the tree in full.
                out[flagsAt] = flags & ~Self.singleRevisionFlag | Self.treeFlag
                tree?.append(to: &out)
            }
        } else {
            tree?.append(to: &out)
        }
        if let type { DocumentLayout.appendString(type, to: &out) }
        Varint.append(channels.count, to: &out)
        for channel in channels { DocumentLayout.appendString(channel, to: &out) }
        if !attachments.isEmpty {
            Varint.append(attachments.count, to: &out)
            for a in attachments { a.append(to: &out) }
        }
    }

    /// Whether `tree` is what flag bit 4 stands for: this record's revision alone, without a
    /// parent, a leaf, deleted exactly when the record is.
    private func isSingleRevision(_ tree: RevisionTree) -> Bool {
        guard tree.nodes.count == 1 else { return false }
        let node = tree.nodes[0]
        return node.parent == nil && node.isLeaf && node.isDeleted == isDeleted && node.revision.generation == revision
    }

    /// Decodes the header of a stored record; ``bodyOffset`` tells where the body starts.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` naming the document.
    package init(decoding value: UnsafeRawBufferPointer, documentID: String) throws {
        var reader = ByteReader(value, kind: "document", name: documentID)
        let flags = try reader.uint8("flags")
        guard flags & ~(Self.deletedFlag | Self.typeFlag | Self.attachmentsFlag | Self.treeFlag | Self.singleRevisionFlag) == 0,
              flags & (Self.treeFlag | Self.singleRevisionFlag) != Self.treeFlag | Self.singleRevisionFlag else {
            throw reader.corrupted(at: 0, "unknown flags 0x\(String(flags, radix: 16))")
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
                throw reader.corrupted(at: at, "the revision tree's winner \(tree.winner.revision) is not revision \(revision)")
            }
            self.tree = tree
        } else if flags & Self.singleRevisionFlag != 0 {
            let at = reader.offset
            let digest = [UInt8].hexString(try reader.bytes(16, "a digest"))
            guard revision > 0 else { throw reader.corrupted(at: at, "a revision digest of revision 0") }
            tree = RevisionTree(nodes: [RevisionTree.Node(revision: RevisionID(generation: revision, hexDigest: digest), parent: nil,
                                                          isDeleted: isDeleted, isLeaf: true)])
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
                let length = try reader.int("attachment length")
                let crc = try reader.uint32("attachment CRC")
                attachments.append(AttachmentInfo(name: name, contentType: contentType, length: length, crc: crc))
            }
        }
        self.attachments = attachments
        bodyOffset = reader.offset
        if isDeleted && bodyOffset != value.count {
            throw reader.corrupted(at: bodyOffset, "a tombstone has \(value.count - bodyOffset) bytes of body")
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
