@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The documents whose rows an attached index does not hold yet: every document whose key is at
/// or after ``from`` (a build walks the documents in key order), and those in ``ids`` (changed
/// since the rows were written, to be caught up).
///
/// Writers leave the rows of pending documents alone; the build writes them, and removes the
/// documents from the set, under the writer lock after checking that their stored revision is
/// the one it mapped. So every document is, at every commit, either pending (its rows are the
/// build's business) or held by the index exactly as stored.
struct PendingDocuments: Sendable, Equatable {
    /// The key of the first document of the range still to build (nil: none).
    var from: [UInt8]?
    /// Further documents to map again.
    var ids: Set<String>

    var isEmpty: Bool { from == nil && ids.isEmpty }

    func contains(_ documentID: String, key: [UInt8]) -> Bool {
        if ids.contains(documentID) { return true }
        guard let from else { return false }
        return !key.lexicographicallyPrecedes(from)
    }
}
