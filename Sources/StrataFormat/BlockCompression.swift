/// How a block's payload is stored. The raw values are written to disk: never change them.
package enum BlockCompression: UInt8, Sendable {
    /// The payload is the block itself.
    case none = 0
    /// The payload is one raw LZ4 block (no frame, no sizes); the trailer carries the sizes.
    case lz4 = 1

    /// Compresses `raw` with LZ4 when that saves at least an eighth; otherwise keeps it raw.
    /// Returns the compression used and the payload.
    package static func compress(_ raw: [UInt8]) -> (BlockCompression, [UInt8]) {
        guard raw.count >= 64, raw.count <= LZ4.maxInputSize else { return (.none, raw) }
        let bound = LZ4.bound(raw.count)
        var out = [UInt8](repeating: 0, count: bound)
        let written = raw.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in LZ4.compress(src, into: dst) }
        }
        guard written > 0, written <= raw.count - raw.count / 8 else { return (.none, raw) }
        out.removeLast(bound - written)
        return (.lz4, out)
    }

    /// Decompresses an LZ4 payload into exactly `uncompressedLength` bytes at `destination`.
    /// Returns false when the payload is malformed or does not decode to exactly that length.
    package static func decompressLZ4(
        _ payload: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard payload.baseAddress != nil, destination.baseAddress != nil else {
            return destination.isEmpty && payload.isEmpty
        }
        return LZ4.decompress(payload, into: destination) == destination.count
    }
}
