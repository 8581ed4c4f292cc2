import CLZ4

/// How a block's payload is stored. The raw values are written to disk: never change them.
package enum BlockCompression: UInt8, Sendable {
    /// The payload is the block itself.
    case none = 0
    /// The payload is one raw LZ4 block (no frame, no sizes); the trailer carries the sizes.
    case lz4 = 1

    /// Compresses `raw` with LZ4 when that saves at least an eighth; otherwise keeps it raw.
    /// Returns the compression used and the payload.
    static func compress(_ raw: [UInt8]) -> (BlockCompression, [UInt8]) {
        guard raw.count >= 64, raw.count <= Int(LZ4_MAX_INPUT_SIZE) else { return (.none, raw) }
        let bound = Int(LZ4_compressBound(Int32(raw.count)))
        var out = [UInt8](repeating: 0, count: bound)
        let written = raw.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                LZ4_compress_default(
                    src.baseAddress!.assumingMemoryBound(to: CChar.self),
                    dst.baseAddress!.assumingMemoryBound(to: CChar.self),
                    Int32(raw.count), Int32(bound))
            }
        }
        guard written > 0, Int(written) <= raw.count - raw.count / 8 else { return (.none, raw) }
        out.removeLast(bound - Int(written))
        return (.lz4, out)
    }

    /// Decompresses an LZ4 payload into exactly `uncompressedLength` bytes at `destination`.
    /// Returns false when the payload is malformed or does not decode to exactly that length;
    /// LZ4's safe decoder never reads or writes outside the two buffers.
    static func decompressLZ4(
        _ payload: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard let src = payload.baseAddress, let dst = destination.baseAddress,
              payload.count <= Int(Int32.max), destination.count <= Int(Int32.max)
        else { return destination.isEmpty && payload.isEmpty }
        let n = LZ4_decompress_safe(
            src.assumingMemoryBound(to: CChar.self), dst.assumingMemoryBound(to: CChar.self),
            Int32(payload.count), Int32(destination.count))
        return Int(n) == destination.count
    }
}
