/// A key made of a prefix and a rest, assembled in a temporary buffer on the stack rather than
/// in a new array: a point read with a keyspace prefix then allocates nothing for its key.
///
/// The buffer is `prefix.count + rest.count` bytes, both copies are of exactly their part's
/// length, and the view handed to `body` is valid only inside `body`.
package enum JoinedKey {
    /// Calls `body` with the bytes of `prefix` followed by `rest`.
    package static func withBytes<R>(_ prefix: [UInt8], _ rest: [UInt8],
                             _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: prefix.count + rest.count, alignment: 1) { buffer in
            prefix.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[0..<prefix.count]).copyMemory(from: $0) }
            rest.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[prefix.count...]).copyMemory(from: $0) }
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }
}
