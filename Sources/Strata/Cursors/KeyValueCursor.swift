@_spi(Layers) import StrataEngine

/// Walks the key-value pairs of a range of a snapshot (``Store/cursor(from:to:reverse:)``,
/// ``StoreSnapshot/cursor(from:to:reverse:)``), in key order or reverse.
///
/// ```swift
/// let cursor = try store.cursor(from: Array("a".utf8))
/// while let (key, value) = try cursor.next() {
///     print(key, value)
/// }
/// ```
///
/// A ``StrataCursor``: ``next()`` copies each pair out; ``nextUnsafe(_:)`` lends views of the
/// stored bytes instead, without copying. It reads its snapshot and keeps that snapshot's files
/// alive until it is released. Not thread-safe: use one cursor from one thread at a time.
public final class KeyValueCursor: StrataCursor {
    /// A key and its value.
    public typealias Element = (key: [UInt8], value: [UInt8])

    private enum State {
        case reading
        case ended
        case failed(any Error)
    }

    private let merged: MergedCursor
    private let prefixLength: Int
    private var state = State.reading

    init(_ merged: MergedCursor, prefixLength: Int) {
        self.merged = merged
        self.prefixLength = prefixLength
    }

    /// The next pair, copied out; nil at the end of the range (and on every call after).
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` or ``StrataError/io(path:errno:operation:)``
    ///   if a file cannot be read; every later call throws the same error.
    public func next() throws -> Element? {
        try nextUnsafe { key, value in (Array(key), Array(value)) }
    }

    /// Moves to the next pair and returns what `body` returns for it, or nil at the end of the
    /// range (and on every call after), without calling `body`.
    ///
    /// `key` and `value` view the stored bytes without copying them, and are valid only inside
    /// `body`: it is a programmer error to let them escape. If `body` throws, the error is
    /// rethrown and the cursor stays after that pair.
    ///
    /// ```swift
    /// var bytes = 0
    /// while try cursor.nextUnsafe({ key, value in bytes += key.count + value.count }) != nil {}
    /// ```
    ///
    /// - Throws: what `body` throws; the errors of ``next()``.
    @inlinable
    public func nextUnsafe<R>(_ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> R) throws -> R? {
        // Inlinable, so that the caller's `body` is called specialized. What it calls is not
        // generic over an optional (`R?` in unspecialized code cost a metadata lookup per record).
        guard try moveToNext() else { return nil }
        return try withCurrent(body)
    }

    /// Moves to the next pair: false at the end of the range, and on every call after.
    @usableFromInline func moveToNext() throws -> Bool {
        switch state {
        case .reading: break
        case .ended: return false
        case .failed(let error): throw error
        }
        let moved: Bool
        do {
            moved = try merged.next()
        } catch {
            state = .failed(error)
            throw error
        }
        if !moved { state = .ended }
        return moved
    }

    /// Calls `body` with views of the current pair; only right after `moveToNext()` returned true.
    @usableFromInline func withCurrent<R>(_ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> R) throws -> R {
        let prefixLength = self.prefixLength
        return try merged.withCurrent { k, v in try body(UnsafeRawBufferPointer(rebasing: k[prefixLength...]), v) }
    }
}
