import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// How many documents a build maps between two commits.
let indexBuildChunk = 1000

/// The indexes of one document database: those attached in this open, and their configuration —
/// attaching (building, catching up from the change feed), dropping — serialized by one builder
/// at a time while writes go on.
///
/// Invariant: ``attached`` changes only while the database's writer lock is held.
final class DatabaseIndexes: Sendable {
    let name: String
    let id: UInt64
    let engine: Engine
    let catalog: Catalog
    let broadcaster: CommitBroadcaster
    let writer: CollectionLock<DatabaseState.WriterState>
    /// The attached indexes by name: those named since the database was opened.
    let attached = Mutex<[String: ActiveIndex]>([:])
    /// Serializes index builds, catch-ups and drops of this database.
    let configuration = ConditionLock()

    init(name: String, id: UInt64, engine: Engine, catalog: Catalog, broadcaster: CommitBroadcaster,
         writer: CollectionLock<DatabaseState.WriterState>) {
        self.name = name
        self.id = id
        self.engine = engine
        self.catalog = catalog
        self.broadcaster = broadcaster
        self.writer = writer
    }

    /// Runs `body` on the attached indexes, under their lock.
    func withLock<R, E: Error>(_ body: (inout sending [String: ActiveIndex]) throws(E) -> sending R) throws(E) -> sending R {
        try attached.withLock(body)
    }

    /// The attached, complete index named `indexName`.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` saying whether the index does not exist, is stored
    ///   but not named in this open, or is still being built.
    func activeIndex(_ indexName: String) throws -> ActiveIndex {
        if let index = attached.withLock({ $0[indexName] }) {
            guard index.pending == nil else {
                throw StrataError.notFound(kind: .index, name: indexName, reason: "index \(indexName.debugDescription) of document database \(name.debugDescription) "
                                           + "is being built; query it once the Store.documents(_:indexes:) call naming it returns")
            }
            return index
        }
        let catalogName = DocumentLayout.indexCatalogName(database: name, index: indexName)
        if try catalog.entry(kind: .documentIndex, name: catalogName) != nil {
            throw StrataError.notFound(kind: .index, name: indexName, reason: "index \(indexName.debugDescription) of document database \(name.debugDescription) "
                                       + "is stored but not open: name it in Store.documents(_:indexes:) to bring it up to date")
        }
        throw StrataError.notFound(kind: .index, name: indexName, reason: "index \(indexName.debugDescription) of document database \(name.debugDescription)")
    }

    // MARK: Configuration

    /// The databases whose index configuration the current thread (task) is changing: a map that
    /// re-enters `configure` or `dropIndex` of the same database is refused instead of waiting
    /// for itself.
    @TaskLocal static var configuring: Set<ObjectIdentifier> = []

    /// Runs `body` as the database's one index builder (builds, catch-ups, drops are serialized).
    /// The writer lock is not held: writes go on meanwhile.
    func withConfiguration<R>(_ body: () throws -> R) throws -> R {
        let me = ObjectIdentifier(self)
        guard !Self.configuring.contains(me) else {
            throw StrataError.invalidArgument(argument: "indexes", reason: "document database \(name.debugDescription): an index map or reduce must not "
                                              + "name or drop indexes of the database whose index it is building")
        }
        // A transaction of this task that writes the database holds its writer lock, which a
        // build running meanwhile waits for while it holds `configuration`: refuse, don't wait.
        try writer.refuseIfHeldByCurrentTransaction()
        configuration.lock()
        defer { configuration.unlock() }
        return try Self.$configuring.withValue(Self.configuring.union([me])) { try body() }
    }

    /// Attaches `definitions`: an index already attached at its version is kept; a stored one at
    /// the same version is attached, caught up from the change feed if it is behind; a new one,
    /// or one whose version changed, is built (under a new catalog id). Indexes not named are
    /// left as they are. `authorize` (a session's check) runs before a stored definition is
    /// replaced or a new one stored.
    func configure(_ definitions: [DocumentIndex], authorize: (() throws -> Void)? = nil) throws {
        var seen = Set<String>()
        for d in definitions {
            guard !d.name.isEmpty else { throw StrataError.invalidArgument(argument: "indexes", reason: "database \(name.debugDescription): an index name must not be empty") }
            if d.collation == .unicode, !UnicodeCollation.isAvailable { throw UnicodeCollation.unavailable }
            guard seen.insert(d.name).inserted else {
                throw StrataError.invalidArgument(argument: "indexes", reason: "database \(name.debugDescription): two indexes are named \(d.name.debugDescription)")
            }
        }
        func needed() -> [DocumentIndex] {
            attached.withLock { attached in
                definitions.filter { d in
                    guard let a = attached[d.name], a.definition.version == d.version,
                          a.definition.collation == d.collation, a.pending == nil else { return true }
                    return false
                }
            }
        }
        if needed().isEmpty {
            if try writer.withLock({ $0.closed }) { throw StrataError.closed }
            return
        }
        try withConfiguration {
            for definition in needed() { try attach(definition, authorize: authorize) }
        }
    }

    private enum AttachPlan {
        case done
        case build(ActiveIndex)
        case catchUp(ActiveIndex, [String])
    }

    /// Attaches one index and completes it (see ``configure(_:)``). Called as the builder.
    private func attach(_ definition: DocumentIndex, authorize: (() throws -> Void)?) throws {
        let catalogName = DocumentLayout.indexCatalogName(database: name, index: definition.name)
        // What changed since a behind index's sequence, read before the lock; the lock adds the rest.
        let storedBefore = try catalog.entry(kind: .documentIndex, name: catalogName)
            .map { try DocumentLayout.decodeIndexPayload($0.payload, name: catalogName) }
        var early: (ids: [String], last: UInt64)?
        if let p = storedBefore, p.version == definition.version, p.state == DocumentLayout.indexBehind,
           DocumentLayout.rowsAreCurrent(p, definition.collation) {
            early = try changedDocuments(after: p.reflected, in: try engine.snapshot())
        }
        let plan = try writer.withLock { w -> AttachPlan in
            guard !w.closed else { throw StrataError.closed }
            if let a = attached.withLock({ $0[definition.name] }), a.definition.version == definition.version,
               a.definition.collation == definition.collation, a.pending == nil {
                return .done
            }
            let stored = try catalog.entry(kind: .documentIndex, name: catalogName)
                .map { ($0, try DocumentLayout.decodeIndexPayload($0.payload, name: catalogName)) }
            if let (entry, payload) = stored, payload.version == definition.version,
               DocumentLayout.rowsAreCurrent(payload, definition.collation) {
                if payload.state == DocumentLayout.indexReady, w.unconverted[definition.name] != nil {
                    // Current: it followed every commit until this open, and none since.
                    w.unconverted[definition.name] = nil
                    attached.withLock { $0[definition.name] = ActiveIndex(definition: definition, id: entry.id) }
                    return .done
                }
                if payload.state != DocumentLayout.indexBuilding {
                    var changed: [String]
                    var after = payload.reflected
                    if let early, storedBefore == payload {
                        changed = early.ids
                        after = max(after, early.last)
                    } else {
                        changed = []
                    }
                    changed += try changedDocuments(after: after, in: try engine.snapshot()).ids
                    let index = ActiveIndex(definition: definition, id: entry.id,
                                            pending: PendingDocuments(from: nil, ids: Set(changed)))
                    w.unconverted[definition.name] = nil
                    attached.withLock { $0[definition.name] = index }
                    return .catchUp(index, changed)
                }
            }
            // New, another version, or a build that did not finish: build anew under a new id.
            try authorize?()
            if let (entry, _) = stored {
                var batch = WriteBatch()
                let prefix = DocumentLayout.indexPrefix(entry.id)
                batch.deleteRangeRaw(prefix, TupleKey.prefixSuccessor(prefix) ?? prefix + [0xFF])
                Catalog.remove(kind: .documentIndex, name: catalogName, into: &batch)
                try engine.commit(CommitBatch(records: batch))
            }
            w.unconverted[definition.name] = nil
            let (entry, _) = try catalog.openOrCreate(kind: .documentIndex, name: catalogName) {
                DocumentLayout.indexPayload(version: definition.version, state: DocumentLayout.indexBuilding,
                                            reduction: definition.reduce, collation: definition.collation, reflected: 0)
            }
            let index = ActiveIndex(definition: definition, id: entry.id,
                                    pending: PendingDocuments(from: DocumentLayout.documentPrefix(id), ids: []))
            attached.withLock { $0[definition.name] = index }
            return .build(index)
        }
        switch plan {
        case .done:
            return
        case .build(let index):
            try completeOrDetach(index, queue: [])
        case .catchUp(let index, let changed):
            try completeOrDetach(index, queue: changed, removingStaleRows: true)
        }
        indexesDidChange([definition.name])
    }

    /// The ids of the documents whose latest change in `snapshot` is after sequence `after`, in
    /// sequence order, and the last sequence read.
    func changedDocuments(after: UInt64, in snapshot: Snapshot) throws -> (ids: [String], last: UInt64) {
        let prefix = DocumentLayout.changePrefix(id)
        guard after < .max else { return ([], after) }
        let cursor = snapshot.cursor(lower: DocumentLayout.changeKey(id, after + 1), upper: TupleKey.prefixSuccessor(prefix))
        var ids: [String] = []
        var last = after
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            let sequence = try DocumentLayout.changeSequence(fromKey: key, prefixLength: prefix.count, database: name)
            ids.append(try DocumentLayout.decodeChange(cursor.value, sequence: sequence).id)
            last = sequence
        }
        return (ids, last)
    }

    /// Completes `index`; if that fails, detaches it (its stored entry stays building or behind,
    /// so the next open that names it finishes the work) and rethrows.
    private func completeOrDetach(_ index: ActiveIndex, queue: [String], removingStaleRows: Bool = false) throws {
        do {
            if removingStaleRows, let ids = index.pending?.ids { try removeRows(of: ids, index: index) }
            try complete(index, queue: queue)
        } catch {
            try? writer.withLock { _ in
                attached.withLock { attached in
                    if attached[index.name]?.id == index.id { attached[index.name] = nil }
                }
            }
            throw error
        }
    }

    /// Deletes every row of `index` that belongs to one of `ids`. Writers leave these documents'
    /// rows alone while they are pending, so no lock is needed; the index's rows are read once
    /// (there is no per-document list of rows).
    private func removeRows(of ids: Set<String>, index: ActiveIndex) throws {
        if ids.isEmpty { return }
        let snapshot = try engine.snapshot()
        let cursor = snapshot.cursor(lower: index.prefix, upper: TupleKey.prefixSuccessor(index.prefix))
        var batch = WriteBatch()
        while try cursor.next() {
            let stale = try cursor.withKey { key -> Bool in
                var offset = index.prefix.count
                _ = try JSON.decodeCollationKey(key, at: &offset)
                return ids.contains(try IndexReader.documentID(key: key, at: offset))
            }
            if stale { batch.deleteRaw(cursor.withKey { Array($0) }) }
            if batch.count >= indexBuildChunk || batch.byteSize > 4 << 20 {
                try engine.commit(CommitBatch(records: batch))
                batch = WriteBatch()
            }
        }
        if !batch.isEmpty { try engine.commit(CommitBatch(records: batch)) }
    }

    /// One document a build mapped: its key, the revision it mapped (0: absent) and its rows.
    private struct Mapped {
        var id: String
        var key: [UInt8]
        var revision: UInt64
        var rows: [IndexRow]
    }

    /// Maps the version of a document a snapshot holds (no rows for a tombstone).
    private func map(_ documentID: String, key: [UInt8], value: UnsafeRawBufferPointer, index: ActiveIndex) throws -> Mapped {
        let record = try DocumentRecord(decoding: value, documentID: documentID)
        if record.isDeleted { return Mapped(id: documentID, key: key, revision: record.revision, rows: []) }
        var document = try DocumentReader.document(id: documentID, record: record, value: value)
        document.attachments = [:]
        return Mapped(id: documentID, key: key, revision: record.revision, rows: try IndexMaintenance.rows(of: document, index: index))
    }

    private static func revision(of key: [UInt8], id documentID: String, in snapshot: Snapshot) throws -> UInt64 {
        guard let value = try snapshot.get(key) else { return 0 }
        return try value.withUnsafeBytes { try DocumentRecord(decoding: $0, documentID: documentID).revision }
    }

    /// Writes the rows of every pending document of `index`, a chunk at a time: the chunk is
    /// mapped on a snapshot without any lock, then, under the writer lock, the rows of the
    /// documents whose stored revision is still the mapped one are written and those documents
    /// leave the pending set; the others (changed meanwhile, or new in the range) are mapped
    /// again in a later chunk. The last chunk marks the index current in the catalog.
    private func complete(_ start: ActiveIndex, queue initialQueue: [String]) throws {
        guard var pending = start.pending else { return }
        var queue = initialQueue[...]  // ids in the order they are mapped
        let documentPrefix = DocumentLayout.documentPrefix(id)
        let documentsEnd = TupleKey.prefixSuccessor(documentPrefix)
        while true {
            let snapshot = try engine.snapshot()
            var mapped: [Mapped] = []
            var rangeEnd: [UInt8]?
            var fromRange = false
            if queue.isEmpty && !pending.ids.isEmpty { queue = pending.ids.sorted()[...] }
            while mapped.count < indexBuildChunk, let next = queue.first {
                queue = queue.dropFirst()
                guard pending.ids.contains(next) else { continue }
                let key = DocumentLayout.documentKey(id, next)
                if let value = try snapshot.get(key) {
                    mapped.append(try value.withUnsafeBytes { try map(next, key: key, value: $0, index: start) })
                } else {
                    mapped.append(Mapped(id: next, key: key, revision: 0, rows: []))
                }
            }
            if mapped.isEmpty, let from = pending.from {
                fromRange = true
                let cursor = snapshot.cursor(lower: from, upper: documentsEnd)
                var last: [UInt8]?
                while mapped.count < indexBuildChunk, try cursor.next() {
                    let key = cursor.withKey { Array($0) }
                    let documentID = try DocumentReader.documentID(fromKey: key, prefixLength: documentPrefix.count)
                    mapped.append(try map(documentID, key: key, value: cursor.value, index: start))
                    last = key
                }
                // The range this chunk covers ends after its last key (at the end when it is short).
                if mapped.count >= indexBuildChunk, let last { rangeEnd = last + [0] }
            }
            let done = try writer.withLock { w -> Bool in
                guard !w.closed else { throw StrataError.closed }
                guard attached.withLock({ $0[start.name]?.id }) == start.id else {
                    throw StrataError.notFound(kind: .index, name: start.name, reason: "index \(start.name.debugDescription) of document database \(name.debugDescription) was dropped")
                }
                let current = try engine.snapshot()
                var batch = WriteBatch()
                var retry: [String] = []
                if fromRange {
                    var byKey: [[UInt8]: Mapped] = [:]
                    for m in mapped { byKey[m.key] = m }
                    // Compare the range in the current state with what was mapped: documents
                    // changed or added meanwhile are mapped again.
                    let cursor = current.cursor(lower: pending.from ?? documentPrefix, upper: rangeEnd ?? documentsEnd)
                    while try cursor.next() {
                        let key = cursor.withKey { Array($0) }
                        let documentID = try DocumentReader.documentID(fromKey: key, prefixLength: documentPrefix.count)
                        let revision = try DocumentRecord(decoding: cursor.value, documentID: documentID).revision
                        if let m = byKey[key], m.revision == revision {
                            for row in m.rows { batch.putRaw(row.key, row.value) }
                        } else {
                            pending.ids.insert(documentID)
                            retry.append(documentID)
                        }
                    }
                    pending.from = rangeEnd
                } else {
                    for m in mapped {
                        if try Self.revision(of: m.key, id: m.id, in: current) == m.revision {
                            for row in m.rows { batch.putRaw(row.key, row.value) }
                            pending.ids.remove(m.id)
                        } else {
                            retry.append(m.id)
                        }
                    }
                }
                let complete = pending.isEmpty
                if complete {
                    let entry = CatalogEntry(id: start.id, payload: DocumentLayout.indexPayload(
                        version: start.definition.version, state: DocumentLayout.indexReady, reduction: start.definition.reduce,
                        collation: start.definition.collation, reflected: w.nextSequence - 1))
                    Catalog.put(entry, kind: .documentIndex,
                                name: DocumentLayout.indexCatalogName(database: name, index: start.name), into: &batch)
                }
                try engine.commit(CommitBatch(records: batch))
                attached.withLock { $0[start.name]?.pending = complete ? nil : pending }
                queue.append(contentsOf: retry)
                return complete
            }
            if done { return }
        }
    }

    /// Removes the index `indexName`: its rows and its catalog entry. Its live queries end.
    ///
    /// - Throws: ``StrataError/notFound(kind:name:reason:)`` if the database has no such index.
    func dropIndex(_ indexName: String) throws {
        let catalogName = DocumentLayout.indexCatalogName(database: name, index: indexName)
        try withConfiguration {
            try writer.withLock { w in
                guard !w.closed else { throw StrataError.closed }
                guard let entry = try catalog.entry(kind: .documentIndex, name: catalogName) else {
                    throw StrataError.notFound(kind: .index, name: indexName, reason: "index \(indexName.debugDescription) of document database \(name.debugDescription)")
                }
                var batch = WriteBatch()
                let prefix = DocumentLayout.indexPrefix(entry.id)
                batch.deleteRangeRaw(prefix, TupleKey.prefixSuccessor(prefix) ?? prefix + [0xFF])
                Catalog.remove(kind: .documentIndex, name: catalogName, into: &batch)
                try engine.commit(CommitBatch(records: batch))
                w.unconverted[indexName] = nil
                attached.withLock { _ = $0.removeValue(forKey: indexName) }
            }
        }
        indexesDidChange([indexName])
    }

    /// Indexes were built, rebuilt or dropped: their live queries run again (or end).
    func indexesDidChange(_ names: [String]) {
        broadcaster.notify([DatabaseState.IndexesChanged(databaseID: id, names: names)])
    }
}
