import CStrataSupport

/// CRC32C (Castagnoli), computed with the CPU's instruction where it has one (SSE4.2 on x86-64,
/// the CRC extension on ARMv8) and a software table otherwise — all in the C helper
/// `Sources/CStrataSupport/crc32c.c`, which only this file calls.
///
/// Stored checksums are *masked* (rotated and offset, as LevelDB does) so that the CRC of data
/// that itself contains CRCs stays strong. Every checksum Strata writes to disk is a masked one.
@_spi(Layers) public enum CRC32C {
    /// The CRC of `bytes`, continuing from `crc` (0 to start).
    @inlinable @inline(__always)
    package static func checksum(_ bytes: UnsafeRawBufferPointer, extending crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return strata_crc32c_extend(crc, base, bytes.count)
    }

    package static func checksum(_ bytes: [UInt8], extending crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, extending: crc) }
    }

    package static func checksum(_ bytes: ArraySlice<UInt8>, extending crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, extending: crc) }
    }

    @usableFromInline static let maskDelta: UInt32 = 0xA282_EAD8  // never change: part of every stored CRC

    /// The stored form of a CRC.
    @inlinable @inline(__always)
    package static func mask(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ maskDelta
    }

    /// The CRC of a stored (masked) value.
    @inlinable @inline(__always)
    package static func unmask(_ masked: UInt32) -> UInt32 {
        let rot = masked &- maskDelta
        return (rot >> 17) | (rot << 15)
    }

    /// Whether the hardware instruction is in use on this machine.
    package static var isHardwareAccelerated: Bool { strata_crc32c_is_hardware() != 0 }

    /// The way `checksum(_:extending:)` computes here, for people.
    package static var implementation: String {
        switch strata_crc32c_hardware_kind() {
        case 1: return "x86-64 SSE4.2"
        case 2: return "ARMv8 CRC32"
        default: return "software table"
        }
    }

    /// One of the implementations, for tests that check they agree.
    package enum Path: CaseIterable, Sendable { case software, hardware }

    /// The CRC through `path`, or nil when this build or CPU lacks it (hardware).
    package static func checksum(_ bytes: UnsafeRawBufferPointer, extending crc: UInt32 = 0, using path: Path) -> UInt32? {
        if path == .hardware && strata_crc32c_hardware_kind() == 0 { return nil }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        switch path {
        case .software:
            return strata_crc32c_extend_software(crc, base, bytes.count)
        case .hardware:
            var result: UInt32 = 0
            return strata_crc32c_extend_hardware(crc, base, bytes.count, &result) != 0 ? result : nil
        }
    }
}
