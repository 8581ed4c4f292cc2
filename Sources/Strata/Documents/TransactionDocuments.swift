import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Document databases in a transaction (Store/Transaction.swift): the handle and the hold of a
// database's writer lock.

extension Transaction {
    /// A write handle of the document database `name` (created if missing; in a session's
    /// transaction that needs ``Permission/modifyTopic``). Its attached indexes are maintained;
    /// this does not attach or build any.
    public func documents(_ name: String = "default") throws -> TransactionDocuments {
        try checkOpen()
        let state = try store.databaseState(name, access: access)
        return TransactionDocuments(transaction: self, state: state)
    }
}

/// The handle of a document database inside a transaction (``Transaction/documents(_:)``).
/// Later writes of the same id in the transaction see the earlier ones (revisions count on), and
/// so does ``document(id:)``.
public struct TransactionDocuments {
    let transaction: Transaction
    let state: DatabaseState

    /// The database's name.
    public var name: String { state.name }

    /// The document `id` as the transaction sees it: as saved in the transaction (with its new
    /// metadata and its attachments), nil if the transaction deleted it, else the stored one (nil
    /// if absent or deleted). Needs ``Permission/readTopic`` in a session.
    public func document(id: String) throws -> Document? {
        try transaction.checkOpen()
        try transaction.access?.require(.readTopic, state.name)
        if let staged = transaction.staged(state.writer), let visible = staged.visible[id] { return visible }
        return try state.reader.document(id: id)
    }

    private func write(_ documents: [Document], mode: DocumentWriter.WriteMode) throws -> [Document] {
        try transaction.access?.require(.updateTopic, state.name)
        return try transaction.stage(state.writer, make: { state.hold() }) { hold, batch in
            try state.writes.stageWrite(documents, mode: mode, writer: &hold.writer, into: &batch)
        }
    }

    /// Inserts or replaces a document; see ``DocumentDatabase/save(_:concurrencyControl:)``.
    @discardableResult
    public func save(_ document: Document) throws -> Document { try write([document], mode: .save)[0] }

    /// Inserts a document whose id is not in use; see ``DocumentDatabase/add(_:)``.
    @discardableResult
    public func add(_ document: Document) throws -> Document { try write([document], mode: .add)[0] }

    /// Replaces an existing document; see ``DocumentDatabase/update(_:)``.
    @discardableResult
    public func update(_ document: Document) throws -> Document { try write([document], mode: .update)[0] }

    /// Saves many documents, in order.
    @discardableResult
    public func save(contentsOf documents: [Document]) throws -> [Document] { try write(documents, mode: .save) }

    /// Saves `value`'s encoding as the fields of document `id`; see ``DocumentDatabase/save(_:id:)``.
    @discardableResult
    public func save(_ value: some Encodable, id: String) throws -> Document {
        try save(DocumentDatabase.document(encoding: value, id: id))
    }

    /// Deletes a document; see ``DocumentDatabase/delete(id:)``.
    public func delete(id: String) throws {
        try transaction.access?.require(.modifyTopic, state.name)
        try transaction.stage(state.writer, make: { state.hold() }) { hold, batch in
            try state.writes.stageDelete(id: id, writer: &hold.writer, into: &batch)
        }
    }
}

extension DatabaseState {
    func hold() -> Hold<WriterState> {
        Hold(writer, committed: { _, w in
            w.uncommitted = [:]
            w.visible = [:]
        })
    }
}
