import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

private func randomBytes(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
    (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
}

/// A bit-at-a-time CRC32C (reflected polynomial 0x82F63B78), independent of the table and the
/// SSE4.2 paths of the implementation under test.
private func referenceCRC32C(_ bytes: ArraySlice<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0x82F6_3B78 : 0) }
    }
    return ~crc
}

@Suite struct CRC32CTests {
    @Test func standardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(referenceCRC32C(Array("123456789".utf8)[...]) == 0xE306_9283)
    }

    /// The test vectors of RFC 3720 (iSCSI), appendix B.4.
    @Test func rfc3720Vectors() {
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum((0..<32).reversed().map { UInt8($0) }) == 0x113F_DB5C)
    }

    @Test func emptyInputLeavesTheRunningValueAlone() {
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(CRC32C.checksum([UInt8](), extending: 0x1234_5678) == 0x1234_5678)
        #expect(CRC32C.checksum(UnsafeRawBufferPointer(start: nil, count: 0), extending: 7) == 7)
    }

    @Test func matchesBitwiseReference() {
        var rng = SplitMix64(seed: 0xC4C_0001)
        for length in Array(0...64) + [255, 256, 257, 1000, 4095, 4096, 4097] {
            let data = randomBytes(length, &rng)
            #expect(CRC32C.checksum(data) == referenceCRC32C(data[...]), "length \(length)")
        }
    }

    @Test func extendingInPiecesEqualsOneCall() {
        var rng = SplitMix64(seed: 0xC4C_0002)
        for round in 0..<300 {
            let length = round < 10 ? round : Int(rng.next() % 5001)
            let data = randomBytes(length, &rng)
            let whole = CRC32C.checksum(data)
            // Split at random points (possibly empty pieces, at any alignment).
            var cuts = (0..<Int(rng.next() % 8)).map { _ in length == 0 ? 0 : Int(rng.next() % UInt64(length + 1)) }
            cuts = ([0] + cuts + [length]).sorted()
            var crc: UInt32 = 0
            for i in 0..<(cuts.count - 1) {
                crc = CRC32C.checksum(data[cuts[i]..<cuts[i + 1]], extending: crc)
            }
            #expect(crc == whole, "round \(round), length \(length), cuts \(cuts)")
            if round % 30 == 0 { #expect(whole == referenceCRC32C(data[...])) }
        }
    }

    @Test func unalignedStartsGiveTheSameResult() {
        var rng = SplitMix64(seed: 0xC4C_0003)
        let payload = randomBytes(3000, &rng)
        let expected = CRC32C.checksum(payload)
        for shift in 0..<16 {
            // The same bytes at every alignment relative to an 8-byte boundary.
            var shifted = [UInt8](repeating: 0xAB, count: shift) + payload
            let got = shifted.withUnsafeBytes {
                CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[shift...]))
            }
            #expect(got == expected, "shift \(shift)")
            shifted[shift] ^= 1
            let flipped = shifted.withUnsafeBytes {
                CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[shift...]))
            }
            #expect(flipped != expected, "a flipped bit must change the CRC (shift \(shift))")
        }
    }

    @Test func maskRoundTripsAndChangesTheValue() {
        var rng = SplitMix64(seed: 0xC4C_0004)
        let specials: [UInt32] = [0, 1, 0xFFFF_FFFF, 0x8000_0000, 0xE306_9283, 0xA282_EAD8]
        for x in specials + (0..<10_000).map({ _ in UInt32(truncatingIfNeeded: rng.next()) }) {
            let m = CRC32C.mask(x)
            #expect(CRC32C.unmask(m) == x)
            #expect(m != x, "mask(\(x)) must differ from \(x)")
        }
        // The masked form of the check value, pinned: every stored CRC depends on the mask.
        #expect(CRC32C.mask(0) == 0xA282_EAD8)
        #expect(CRC32C.mask(0xE306_9283) == (((0xE306_9283 as UInt32) >> 15) | ((0xE306_9283 as UInt32) << 17)) &+ 0xA282_EAD8)
    }

    /// Not a timed assertion: prints the throughput for the record, and checks that the hardware
    /// path is used where the CPU has SSE4.2.
    @Test func throughputMeasurement() throws {
        let size = 64 << 20
        var buffer = [UInt8](repeating: 0, count: size)
        buffer.withUnsafeMutableBytes { b in
            var rng = SplitMix64(seed: 0xC4C_0005)
            let words = b.bindMemory(to: UInt64.self)
            for i in stride(from: 0, to: words.count, by: 512) { words[i] = rng.next() }
        }
        let clock = ContinuousClock()
        var crc: UInt32 = 0
        let elapsed = clock.measure {
            buffer.withUnsafeBytes { crc = CRC32C.checksum($0) }
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let mbPerSecond = Double(size) / 1_000_000 / max(seconds, 1e-9)
        print("CRC32C.checksum over 64 MiB: \(String(format: "%.0f", mbPerSecond)) MB/s "
              + "(\(elapsed)), isHardwareAccelerated = \(CRC32C.isHardwareAccelerated), crc = \(String(crc, radix: 16))")
        // The same result in two pieces, so the measured call is not a no-op.
        let half = size / 2
        let pieces = CRC32C.checksum(buffer[half...], extending: CRC32C.checksum(buffer[..<half]))
        #expect(pieces == crc)

        #if arch(x86_64)
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        if cpuinfo.contains("sse4_2") {
            #expect(CRC32C.isHardwareAccelerated, "the CPU has SSE4.2 but the software CRC is in use")
        }
        #endif
    }

    /// Every implementation this build and CPU have (the software table always; SSE4.2 or ARMv8
    /// CRC32 where present) gives the same checksums as the bit-at-a-time reference, on random
    /// inputs of every length and alignment and with running values carried across calls.
    @Test func everyAvailablePathAgrees() {
        let paths = CRC32C.Path.allCases.filter { CRC32C.checksum(UnsafeRawBufferPointer(start: nil, count: 0), using: $0) != nil }
        #expect(paths.contains(.software))
        #expect(paths.contains(.hardware) == CRC32C.isHardwareAccelerated, "\(CRC32C.implementation)")
        var rng = SplitMix64(seed: 0xC4C_0006)
        for round in 0..<500 {
            let length = round < 80 ? round : Int(rng.next() % 9000)
            let shift = Int(rng.next() % 8)
            let data = randomBytes(length + shift, &rng)
            let start = UInt32(truncatingIfNeeded: rng.next())
            let expected = referenceCRC32C(data[shift...])
            data.withUnsafeBytes { all in
                let bytes = UnsafeRawBufferPointer(rebasing: all[shift...])
                #expect(CRC32C.checksum(bytes) == expected, "round \(round)")
                let extended = CRC32C.checksum(bytes, extending: start)
                for path in paths {
                    #expect(CRC32C.checksum(bytes, using: path) == expected, "\(path), round \(round)")
                    #expect(CRC32C.checksum(bytes, extending: start, using: path) == extended, "\(path), round \(round)")
                }
            }
        }
    }
}
