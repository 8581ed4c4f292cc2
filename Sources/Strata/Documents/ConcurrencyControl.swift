@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a save does when the stored document changed since the caller read it (Couchbase Lite's
/// `ConcurrencyControl`).
///
/// ```swift
/// var invoice = try db.document(id: "A-1")!
/// invoice["Paid"] = true
/// try db.save(invoice, concurrencyControl: .failOnConflict)   // throws .conflict if someone saved meanwhile
/// ```
public enum ConcurrencyControl: Sendable, Hashable {
    /// Save over whatever is stored: the last writer wins (the default).
    case lastWriteWins
    /// Save only if the stored winning revision is the one the document carries
    /// (``DocumentMetadata/revisionID``; nil for a document that must not exist); otherwise
    /// throw ``StrataError/conflict(_:)`` and write nothing.
    case failOnConflict
}
