import CStrataSupport

/// CRC32C (Castagnoli), computed with the SSE4.2 instruction where the CPU has it.
///
/// Stored checksums are *masked* (rotated and offset, as LevelDB does) so that the CRC of data
/// that itself contains CRCs stays strong. Every checksum Strata writes to disk is a masked one.
enum CRC32C {
    /// The CRC of `bytes`, continuing from `crc` (0 to start).
    @inline(__always)
    static func checksum(_ bytes: UnsafeRawBufferPointer, extending crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return strata_crc32c_extend(crc, base, bytes.count)
    }

    static func checksum(_ bytes: [UInt8], extending crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, extending: crc) }
    }

    static func checksum(_ bytes: ArraySlice<UInt8>, extending crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, extending: crc) }
    }

    private static let maskDelta: UInt32 = 0xA282_EAD8  // never change: part of every stored CRC

    /// The stored form of a CRC.
    @inline(__always)
    static func mask(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ maskDelta
    }

    /// The CRC of a stored (masked) value.
    @inline(__always)
    static func unmask(_ masked: UInt32) -> UInt32 {
        let rot = masked &- maskDelta
        return (rot >> 17) | (rot << 15)
    }

    /// Whether the hardware instruction is in use on this machine.
    static var isHardwareAccelerated: Bool { strata_crc32c_is_hardware() != 0 }
}
