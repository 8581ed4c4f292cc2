@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What `strata-dump verify` checks in the document databases of a store, record by record, with
/// the checks the library makes where it reads them: conflicting-revision entries that are not a
/// losing leaf of their document's revision tree (``RevisionWriter/checkConflictEntries(database:of:tree:snapshot:)``),
/// and change-feed entries whose key or value does not decode (as ``DocumentReader/feed(since:limit:)``
/// decodes them), whose sequence is past the database's last change sequence (the highest change
/// sequence of its documents), or whose document does not exist.
extension DocumentInspector {
    /// The findings in every document database of `snapshot`, each naming its record.
    package static func findings(in snapshot: Snapshot) throws -> [String] {
        var out: [String] = []
        for (name, entry) in try Catalog.entries(kind: .documentDatabase, in: snapshot) {
            let database = "document database \(name.debugDescription)"
            // The documents: their change sequences, and each one's conflicting-revision entries.
            var records: [String: DocumentRecord] = [:]
            var lastChange: UInt64 = 0
            let prefix = DocumentLayout.documentPrefix(entry.id)
            let documents = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
            while try documents.next() {
                let key = documents.withKey { Array($0) }
                do {
                    let id = try DocumentReader.documentID(fromKey: key, prefixLength: prefix.count)
                    let record = try DocumentRecord(decoding: documents.value, documentID: id)
                    records[id] = record
                    lastChange = max(lastChange, record.changeSequence)
                } catch {
                    out.append("\(database): \(error)")
                }
            }
            // Conflicting-revision entries, document by document (their keys sort by document).
            let conflicts = DocumentLayout.conflictDatabasePrefix(entry.id)
            let entries = snapshot.cursor(lower: conflicts, upper: TupleKey.prefixSuccessor(conflicts))
            var checked: String?
            while try entries.next() {
                let key = entries.withKey { Array($0) }
                var decoder = TupleKeyDecoder(key[conflicts.count...])
                guard let id = try? decoder.nextString() else {
                    out.append("\(database): bad conflicting-revision key \(TupleKey.describe(key))")
                    continue
                }
                guard id != checked else { continue }
                checked = id
                guard let record = records[id] else {
                    out.append("\(database): conflicting-revision entry \(TupleKey.describe(key)) of document \(id.debugDescription), which does not exist")
                    continue
                }
                do {
                    try RevisionWriter.checkConflictEntries(database: entry.id, of: id, tree: record.tree, snapshot: snapshot)
                } catch {
                    out.append("\(database): \(error)")
                }
            }
            // The change feed.
            let changes = DocumentLayout.changePrefix(entry.id)
            let feed = snapshot.cursor(lower: changes, upper: TupleKey.prefixSuccessor(changes))
            while try feed.next() {
                let key = feed.withKey { Array($0) }
                let sequence: UInt64, change: DocumentLayout.ChangeEntry
                do {
                    sequence = try DocumentLayout.changeSequence(fromKey: key, prefixLength: changes.count, database: name)
                } catch {
                    out.append("\(database): \(error)")
                    continue
                }
                do {
                    change = try DocumentLayout.decodeChange(feed.value, sequence: sequence)
                } catch {
                    out.append("\(database): change \(sequence): \(error)")
                    continue
                }
                if sequence > lastChange {
                    out.append("\(database): change \(sequence) (document \(change.id.debugDescription)) is past the database's last change sequence \(lastChange)")
                }
                if records[change.id] == nil {
                    out.append("\(database): change \(sequence) names document \(change.id.debugDescription), which does not exist")
                }
            }
        }
        return out
    }
}
