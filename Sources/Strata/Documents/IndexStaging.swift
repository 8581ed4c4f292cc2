@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What every write of a document database stages for its indexes beside the documents: the
/// changes of the attached indexes' rows, and the rewrite as behind of the stored indexes that
/// are not attached (so that the next open catches them up instead of trusting them).
struct IndexStaging: Sendable {
    let name: String

    /// The index rows a write removes and adds for one document, by index name.
    typealias RowChanges = [String: (old: [IndexRow], new: [IndexRow])]

    /// Adds one document's index-row changes to `batch` (a document an index does not hold yet is
    /// left to its build), and the changed keys after each index's prefix to `touched` when
    /// `observing`.
    func stageRows(_ changes: RowChanges, of documentID: String, key: [UInt8], indexes active: [String: ActiveIndex],
                   observing: Bool, into batch: inout WriteBatch, touched: inout [String: [[UInt8]]]) {
        for (indexName, change) in changes {
            guard let index = active[indexName] else { continue }
            if let pending = index.pending, pending.contains(documentID, key: key) { continue }
            var keys: [[UInt8]]? = observing ? [] : nil
            IndexMaintenance.replace(change.old, with: change.new, in: &batch, touched: &keys)
            if let keys, !keys.isEmpty { touched[indexName, default: []] += keys.map { Array($0[index.prefix.count...]) } }
        }
    }

    /// Adds to `batch` the rewrite, as behind at the last committed sequence, of every stored
    /// index that was current when the database was opened and is not attached: the commit being
    /// built does not maintain it. Returns whether there was any (clear them once committed).
    func convertUnattachedIndexes(_ w: DatabaseState.WriterState, into batch: inout WriteBatch) -> Bool {
        guard !w.unconverted.isEmpty else { return false }
        for (indexName, stored) in w.unconverted {
            var payload = stored.payload
            if payload.layout == 1 {
                // Its rows may lack `null` keys (FORMAT.md §16.1): rebuilt when next named.
                payload.state = DocumentLayout.indexBuilding
                payload.reflected = 0
            } else {
                payload.state = DocumentLayout.indexBehind
                payload.reflected = w.nextSequence - 1
            }
            Catalog.put(CatalogEntry(id: stored.id, payload: DocumentLayout.indexPayload(payload)), kind: .documentIndex,
                        name: DocumentLayout.indexCatalogName(database: name, index: indexName), into: &batch)
        }
        return true
    }
}
