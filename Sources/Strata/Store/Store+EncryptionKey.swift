import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Store {
    /// Re-encrypts the closed store in `directory`: from `oldKey` (nil: a store in clear) to
    /// `newKey` (nil: decrypt it). Every record is rewritten, sealed with the new key, and the new
    /// manifest replaces the old one in one rename.
    ///
    /// Crash-safe: a crash or a failure at any instant leaves a store that opens with the old key
    /// or with the new one, never one that neither opens (FORMAT.md 9.5). Takes the store's lock
    /// for its whole run, so no process may have it open meanwhile.
    ///
    /// ```swift
    /// let newKey = EncryptionKey.random()
    /// try Store.changeEncryptionKey(at: url, from: oldKey, to: newKey)
    /// let store = try Store.open(at: url, options: StoreOptions(encryptionKey: newKey))
    /// ```
    ///
    /// - Parameter options: the tuning the rewrite uses (their `encryptionKey` is ignored).
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` (`"directory"`) if the store
    ///   is open in this process; ``StrataError/locked(path:)`` if another process has it open;
    ///   ``StrataError/encryptionKey(store:problem:)`` if `oldKey` does not open it;
    ///   ``StrataError/notFound(kind:name:reason:)`` if there is no store; the I/O error of a
    ///   failed step.
    public static func changeEncryptionKey(at directory: URL, from oldKey: EncryptionKey?, to newKey: EncryptionKey?,
                                           options: StoreOptions = StoreOptions()) throws {
        guard opened(at: directory) == nil else {
            throw StrataError.invalidArgument(argument: "directory", reason:
                "the store at \(directory.path) is open: close it before changing its encryption key")
        }
        var o = options
        o.encryptionKey = oldKey
        try KeyChange.change(directory: directory.standardizedFileURL.resolvingSymlinksInPath().path,
                             options: try o.engineOptions(), to: newKey)
    }

    /// The `async` twin of ``changeEncryptionKey(at:from:to:options:)``: runs off the cooperative
    /// pool.
    ///
    /// - Throws: as ``changeEncryptionKey(at:from:to:options:)``; `CancellationError` if the task
    ///   was cancelled before the work started (then nothing is changed).
    public static func changeEncryptionKey(at directory: URL, from oldKey: EncryptionKey?, to newKey: EncryptionKey?,
                                           options: StoreOptions = StoreOptions()) async throws {
        try await StoreExecutor.global.run {
            try Store.changeEncryptionKey(at: directory, from: oldKey, to: newKey, options: options)
        }
    }
}
