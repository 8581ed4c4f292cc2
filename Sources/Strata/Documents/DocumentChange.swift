@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// One change of a database: a document saved or deleted.
///
/// ``DocumentDatabase/changes(bufferSize:)`` streams them as they commit; ``DocumentDatabase/changes(since:limit:)``
/// reads them back from the persistent change feed.
public struct DocumentChange: Sendable, Hashable {
    /// The id of the document.
    public let id: String
    /// Whether the change deleted the document.
    public let isDeletion: Bool
    /// The document's revision id after the change (a deletion takes a revision too).
    ///
    /// ```swift
    /// for try await batch in try db.changes() {
    ///     for change in batch { print(change.id, change.revisionID) }   // "A-1 2-7f3e…"
    /// }
    /// ```
    public let revisionID: RevisionID
    /// The generation of ``revisionID``, as ``DocumentMetadata/revision`` is of
    /// ``DocumentMetadata/revisionID``.
    public var revision: UInt64 { revisionID.generation }
    /// The change's position in the database's change feed: unique and increasing within the
    /// database, across close and reopen. Pass the last one seen to
    /// ``DocumentDatabase/changes(since:limit:)`` to resume.
    public let sequence: UInt64
    /// Whether the change came from replication (PredixSDK's "source of the change was
    /// replication") rather than from a write of this store.
    public let isExternal: Bool

    /// A change record.
    public init(id: String, isDeletion: Bool, revisionID: RevisionID, sequence: UInt64, isExternal: Bool = false) {
        self.id = id
        self.isDeletion = isDeletion
        self.revisionID = revisionID
        self.sequence = sequence
        self.isExternal = isExternal
    }
}
