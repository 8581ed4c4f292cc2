import CLZ4

/// The one door to liblz4 (raw blocks: no frame, no sizes, no checksum), so that replacing the
/// library — a vendored copy, a platform's own — is a change to this file alone.
///
/// Callers keep the sizes and the CRC themselves (FORMAT.md, "Blocks"); ``decompress(_:into:)``
/// uses LZ4's safe decoder, which never reads or writes outside the two buffers.
package enum LZ4 {
    /// The largest input LZ4 compresses (`LZ4_MAX_INPUT_SIZE`, about 2 GB).
    package static let maxInputSize = Int(LZ4_MAX_INPUT_SIZE)

    /// The largest compressed size of `count` input bytes (`LZ4_compressBound`), or 0 when
    /// `count` is over ``maxInputSize``.
    package static func bound(_ count: Int) -> Int {
        guard count >= 0, count <= maxInputSize else { return 0 }
        return Int(LZ4_compressBound(Int32(count)))
    }

    /// Compresses `source` into `destination` (of at least ``bound(_:)`` bytes to be sure to
    /// succeed); returns the compressed size, or 0 when it did not fit.
    package static func compress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) -> Int {
        guard let src = source.baseAddress, let dst = destination.baseAddress,
              source.count <= maxInputSize, destination.count <= Int(Int32.max)
        else { return 0 }
        let written = LZ4_compress_default(
            src.assumingMemoryBound(to: CChar.self), dst.assumingMemoryBound(to: CChar.self),
            Int32(source.count), Int32(destination.count))
        return Int(max(written, 0))
    }

    /// Decompresses one raw block into `destination`; returns the decompressed size, or nil when
    /// the block is malformed or does not fit.
    package static func decompress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) -> Int? {
        guard let src = source.baseAddress, let dst = destination.baseAddress,
              source.count <= Int(Int32.max), destination.count <= Int(Int32.max)
        else { return nil }
        let n = LZ4_decompress_safe(
            src.assumingMemoryBound(to: CChar.self), dst.assumingMemoryBound(to: CChar.self),
            Int32(source.count), Int32(destination.count))
        return n < 0 ? nil : Int(n)
    }
}
