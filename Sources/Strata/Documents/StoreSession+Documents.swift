@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// A session's handles of document databases, with its checks (Security/StoreSession.swift), and
// their `async` twins.
extension StoreSession {
    /// The document database `name` with `indexes`, with the session's checks: creating the
    /// database, or an index that is not stored at its version (a new one, a new version, an
    /// unfinished build), needs ``Permission/modifyTopic``; naming stored indexes needs nothing.
    public func documents(_ name: String = "default", indexes: [DocumentIndex] = []) throws -> DocumentDatabase {
        try store.openDocuments(name, indexes: indexes, access: access)
    }

    /// The `async` twin of ``documents(_:indexes:)``.
    public func documents(_ name: String = "default", indexes: [DocumentIndex] = []) async throws -> DocumentDatabase {
        try await store.executor.run { try self.documents(name, indexes: indexes) }
    }
}
