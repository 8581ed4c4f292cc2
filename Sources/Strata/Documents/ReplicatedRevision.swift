import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One revision of a document as replication moves it between replicas: the revision, its
/// history, and its contents (FORMAT.md §16; `Gateway/PROTOCOL.md`, "Documents on the wire").
package struct ReplicatedRevision: Sendable, Equatable {
    package var documentID: String
    package var revisionID: RevisionID
    /// Digests of this revision and its ancestors, newest first: `history[i]` is the digest of
    /// generation `revisionID.generation - i`, and `history[0] == revisionID.digest`. May be cut
    /// short (bounded histories), never empty.
    package var history: [String]
    package var isDeleted: Bool
    /// The document's fields (empty for a deletion).
    package var fields: [String: JSON]
    package var type: String?
    package var channels: [String]
    package var createDate: Date
    package var lastChange: Date
    package var attachments: [String: Attachment]

    package init(documentID: String, revisionID: RevisionID, history: [String], isDeleted: Bool,
                 fields: [String: JSON], type: String?, channels: [String], createDate: Date, lastChange: Date,
                 attachments: [String: Attachment]) {
        self.documentID = documentID
        self.revisionID = revisionID
        self.history = history
        self.isDeleted = isDeleted
        self.fields = fields
        self.type = type
        self.channels = channels
        self.createDate = createDate
        self.lastChange = lastChange
        self.attachments = attachments
    }
}

/// One entry of a database's change feed with the document's leaf revisions, as the push side of
/// a replication reads it.
package struct RevisionChange: Sendable, Equatable {
    /// The change's sequence in the database's feed.
    package var sequence: UInt64
    package var documentID: String
    /// The document's leaf revisions, the winner first.
    package var leaves: [RevisionID]
    /// Whether the winner is a deletion.
    package var isDeletion: Bool

    package init(sequence: UInt64, documentID: String, leaves: [RevisionID], isDeletion: Bool) {
        self.sequence = sequence
        self.documentID = documentID
        self.leaves = leaves
        self.isDeletion = isDeletion
    }
}
