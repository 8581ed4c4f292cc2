import Foundation
import CStrataSupport

/// Every error Strata throws.
///
/// Each case names what it concerns — the file and offset of a corrupt record, the path and system
/// call of an I/O failure, the kind and name of what was not found, the argument that was out of
/// range — in payloads a program matches without reading text, and its ``description`` can be
/// shown to a person as it is.
///
/// ```swift
/// do {
///     let store = try Store.open(at: url)
/// } catch StrataError.locked(let path) {
///     print("another process has \(path) open")
/// }
/// ```
///
/// An `async` method whose task is cancelled before its work starts throws Swift's
/// `CancellationError`, not a `StrataError`.
public enum StrataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store (or a collection of it) was used after ``Store/close()``; also how every open
    /// stream (subscriptions, live messages, live queries, change streams) ends when the store closes.
    case closed
    /// Another process holds the store's `LOCK` file.
    case locked(path: String)
    /// Stored bytes that cannot be right: a CRC mismatch, an impossible length, a truncated
    /// structure, keys out of order, a record that does not decode.
    ///
    /// Thrown only for what the store (or a file handed to the inspection tools) holds, never for
    /// an argument, a value of the wrong type or a network answer. `file` is the file's path, or,
    /// for a record read through the store, the record (`document "a"`, `time series "t"`,
    /// `catalog`); `offset` is the byte offset in that file or record.
    case corrupted(file: String, offset: Int, reason: String)
    /// A file was written by a format version this build does not read.
    case unsupportedFormatVersion(file: String, found: UInt32)
    /// A system call failed. `errno` is the raw error number, `operation` the call (`open`, `fsync`…).
    case io(path: String, errno: Int32, operation: String)
    /// The thing a call named does not exist: `kind` says what kind of thing it is, `name` its
    /// name or id as the call gave it, `reason` the whole message (which also names where it was
    /// looked for).
    ///
    /// ```swift
    /// do {
    ///     try db.delete(id: "a")
    /// } catch StrataError.notFound(.document, let id, _) {
    ///     print("no document \(id)")
    /// }
    /// ```
    case notFound(kind: NotFoundKind, name: String, reason: String)
    /// The named thing exists already, or changed under the caller.
    case conflict(String)
    /// An argument is out of range or malformed, or a call was made where it is not allowed.
    ///
    /// `argument` is the parameter, option or property as the API spells it (`"limit"`,
    /// `"bufferSize"`, `"path"`, `"retainedRange"`, `"batchSize"`…); `reason` says what is wrong
    /// with it. Where no one argument is at fault (a counter that ran out, a transaction used after
    /// it ended), `argument` names the thing the call asked too much of (`"timetoken"`, `"transaction"`).
    ///
    /// ```swift
    /// do {
    ///     _ = try room.history(limit: 0)
    /// } catch StrataError.invalidArgument("limit", let reason) {
    ///     print(reason)
    /// }
    /// ```
    case invalidArgument(argument: String, reason: String)
    /// A collection was opened with a different type than it was created with, or a stored value
    /// does not decode as the `Codable` type asked for.
    case typeMismatch(String)
    /// A time-series append carried a timestamp earlier than the series' latest event.
    case timestampBeforeLatest(latest: Date, given: Date)
    /// A subscriber of a stream (a time-series subscription, a channel's live messages, a live
    /// query) fell so far behind that its bounded buffer filled: the stream ends with this error
    /// rather than grow without bound or skip events silently. Subscribe again to resume.
    case subscriberOverflow(String)
    /// A ``StoreSession`` call that the security policy does not allow its principal: nothing
    /// was changed. `permission` is the one it lacked, `path` the series, channel or database
    /// the call named (nil for a global permission).
    case permissionDenied(principal: String, permission: Permission, path: String?)
    /// A network peer failed: a replication could not reach its gateway, or the gateway answered
    /// with an error or with an answer that does not parse; or a push service (StrataPushDelivery)
    /// refused the delivery's configuration. The message names the URL or service and what happened.
    case network(String)
    /// The encryption key does not fit the store (``EncryptionKeyProblem``): the store is
    /// encrypted and no key was given, the key is not the one its files were sealed with, or a
    /// key was given for a store written in clear. `store` is the store's directory (or, for a
    /// file read on its own, the file); nothing was changed.
    ///
    /// ```swift
    /// do {
    ///     let store = try Store.open(at: url, options: StoreOptions(encryptionKey: key))
    /// } catch StrataError.encryptionKey(let store, .wrongKey) {
    ///     print("\(store) was encrypted with another key")
    /// }
    /// ```
    case encryptionKey(store: String, problem: EncryptionKeyProblem)

    public var description: String {
        switch self {
        case .closed:
            return "the store is closed"
        case .locked(let path):
            return "the store at \(path) is locked by another process"
        case .corrupted(let file, let offset, let reason):
            return "corruption in \(file) at offset \(offset): \(reason)"
        case .unsupportedFormatVersion(let file, let found):
            return "\(file) has format version \(found), which this build of Strata does not read"
        case .io(let path, let code, let operation):
            return "\(operation) failed for \(path): \(StrataError.systemMessage(code)) (errno \(code))"
        case .notFound(_, _, let reason):
            return "not found: \(reason)"
        case .conflict(let what):
            return "conflict: \(what)"
        case .invalidArgument(_, let reason):
            return "invalid argument: \(reason)"
        case .typeMismatch(let what):
            return "type mismatch: \(what)"
        case .timestampBeforeLatest(let latest, let given):
            return "timestamp \(given) is before the latest event's timestamp \(latest)"
        case .subscriberOverflow(let what):
            return "subscriber overflow: \(what)"
        case .network(let what):
            return "network: \(what)"
        case .encryptionKey(let store, let problem):
            return "encryption key: \(problem) (\(store))"
        case .permissionDenied(let principal, let permission, let path):
            let on = path.map { " on \($0.debugDescription)" } ?? ""
            return "permission denied: principal \(principal.debugDescription) lacks \(permission)\(on)"
        }
    }

    /// The system's message for an error number (`strerror`).
    package static func systemMessage(_ code: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let status = buffer.withUnsafeMutableBytes {
            strata_error_message(code, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count)
        }
        guard status == 0 else { return "unknown error \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }
}
