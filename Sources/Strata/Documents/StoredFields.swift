import Synchronization
@_spi(Layers) import StrataFormat

/// The fields of a document read from the store, kept as its record's body — one binary JSON
/// object (FORMAT.md §13.1) — instead of a dictionary: one field is read straight from the bytes
/// (a binary search of the object's key directory), and the dictionary is built only when all the
/// fields are asked for, once, by whichever task asks first.
///
/// Invariant: the body is a well-formed binary JSON object, checked by `init` (so a read reports a
/// corrupt body as it did when it decoded the fields at once); decoding it cannot fail.
final class StoredFields: Sendable {
    /// The stored value; the body is `value[bodyOffset...]`.
    private let value: [UInt8]
    private let bodyOffset: Int
    /// The fields, once built.
    private let decoded = Mutex<[String: JSON]?>(nil)

    /// The fields of the body `value[bodyOffset...]` of document `documentID`'s record.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` naming the document, with the
    ///   offset in `value`, when the body is not a well-formed binary JSON object.
    init(value: [UInt8], bodyOffset: Int, documentID: String) throws {
        try value.withUnsafeBytes { buffer in
            let body = UnsafeRawBufferPointer(rebasing: buffer[bodyOffset...])
            do {
                try JSON.validateBinary(body)
            } catch StrataError.corrupted(_, let offset, let reason) {
                throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: bodyOffset + offset, reason: reason)
            }
            guard body.first == JSONBinaryType.object else {
                throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: bodyOffset, reason: "body is not an object")
            }
        }
        self.value = value
        self.bodyOffset = bodyOffset
    }

    /// Calls `body` with the stored body's bytes.
    func withBody<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try value.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[bodyOffset...])) }
    }

    /// All the fields (built on first use, then kept).
    var fields: [String: JSON] {
        decoded.withLock { cache in
            if let cache { return cache }
            let built = withBody { body -> [String: JSON] in
                guard case .object(let members)? = try? JSON(binary: body) else { preconditionFailure("a checked body does not decode") }
                return members
            }
            cache = built
            return built
        }
    }

    /// The field named `key`, read from the bytes; nil if absent.
    subscript(key: String) -> JSON? {
        withBody { body in (try? JSONBinary.member(key, in: body)) ?? nil }
    }
}
