import Foundation
import CStrataSupport

/// Every error Strata throws.
///
/// Each case names what it concerns — the file and offset of a corrupt record, the path and system
/// call of an I/O failure, the argument that was out of range — so that its ``description`` can be
/// shown to a person as it is.
///
/// ```swift
/// do {
///     let store = try Store.open(at: url)
/// } catch StrataError.locked(let path) {
///     print("another process has \(path) open")
/// }
/// ```
public enum StrataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store (or a collection of it) was used after ``Store/close()``; also how every open
    /// stream (subscriptions, live messages, live queries, change streams) ends when the store closes.
    case closed
    /// Another process holds the store's `LOCK` file.
    case locked(path: String)
    /// A sealed file holds bytes that cannot be right: a CRC mismatch, an impossible length,
    /// a truncated structure, keys out of order.
    case corrupted(file: String, offset: Int, reason: String)
    /// A file was written by a format version this build does not read.
    case unsupportedFormatVersion(file: String, found: UInt32)
    /// A system call failed. `errno` is the raw error number, `operation` the call (`open`, `fsync`…).
    case io(path: String, errno: Int32, operation: String)
    /// The named thing does not exist.
    case notFound(String)
    /// The named thing exists already, or changed under the caller.
    case conflict(String)
    /// An argument is out of range or malformed; the message names it.
    case invalidArgument(String)
    /// A collection was opened with a different type than it was created with.
    case typeMismatch(String)
    /// A time-series append carried a timestamp earlier than the series' latest event.
    case timestampBeforeLatest(latest: Date, given: Date)
    /// A subscriber of a stream (a time-series subscription, a channel's live messages, a live
    /// query) fell so far behind that its bounded buffer filled: the stream ends with this error
    /// rather than grow without bound or skip events silently. Subscribe again to resume.
    case subscriberOverflow(String)
    /// The task calling an `async` method was cancelled before the method's work started:
    /// nothing was done. (Work that has started runs to the end and returns its result.)
    case cancelled
    /// A ``StoreSession`` call that the security policy does not allow its principal: nothing
    /// was changed. `permission` is the one it lacked, `path` the series, channel or database
    /// the call named (nil for a global permission).
    case permissionDenied(principal: String, permission: Permission, path: String?)
    /// A replication could not reach its gateway, or the gateway answered with an error; the
    /// message names the URL and what happened.
    case network(String)

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
        case .notFound(let what):
            return "not found: \(what)"
        case .conflict(let what):
            return "conflict: \(what)"
        case .invalidArgument(let what):
            return "invalid argument: \(what)"
        case .typeMismatch(let what):
            return "type mismatch: \(what)"
        case .timestampBeforeLatest(let latest, let given):
            return "timestamp \(given) is before the latest event's timestamp \(latest)"
        case .subscriberOverflow(let what):
            return "subscriber overflow: \(what)"
        case .cancelled:
            return "the task was cancelled before the work started; nothing was done"
        case .network(let what):
            return "replication: \(what)"
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
