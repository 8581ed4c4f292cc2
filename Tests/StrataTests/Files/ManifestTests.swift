import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// MARK: - Deterministic randomness

// MARK: - Helpers

private func randomKey(_ rng: inout SplitMix64) -> [UInt8] {
    (0..<Int(rng.next() % 30)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
}

/// A manifest with several runs of several segments (and one empty run), large counters and
/// empty keys included.
private func sampleManifest(_ rng: inout SplitMix64, runs: Int = 4) -> Manifest {
    var m = Manifest()
    m.nextFileNumber = 1_000 + rng.next() % 1_000
    m.lastSequence = rng.next() >> 1
    m.logNumber = rng.next() % m.nextFileNumber
    for r in 0..<runs {
        var run: [SegmentMetadata] = []
        for _ in 0..<(r == 1 ? 0 : 1 + Int(rng.next() % 5)) {
            run.append(SegmentMetadata(number: rng.next() % m.nextFileNumber, fileSize: rng.next() >> (1 + rng.next() % 63),
                                       smallestKey: randomKey(&rng), largestKey: randomKey(&rng), records: rng.next() % 1_000_000))
        }
        m.runs.append(run)
    }
    return m
}

/// Wraps `payload` in a header with a correct length and CRC, so the payload parser is reached.
private func withHeader(_ payload: [UInt8], version: UInt32 = Manifest.version) -> [UInt8] {
    var out = Manifest.magic
    LittleEndian.append(version, to: &out)
    LittleEndian.append(UInt32(payload.count), to: &out)
    LittleEndian.append(CRC32C.mask(CRC32C.checksum(payload)), to: &out)
    return out + payload
}

private func expectCorrupted(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("\(what): no error thrown", sourceLocation: sourceLocation)
    } catch let StrataError.corrupted(file, _, _) {
        #expect(file == "MANIFEST", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(what): \(error) instead of .corrupted", sourceLocation: sourceLocation)
    }
}

@Suite struct ManifestTests {
    @Test func encodeDecodeRoundTrip() throws {
        var rng = SplitMix64(seed: 0x3A2_0001)
        for runs in [0, 1, 4, 12] {
            let m = sampleManifest(&rng, runs: runs)
            let bytes = m.encode()
            #expect(Array(bytes[0..<8]) == Array("STRATMAN".utf8))
            #expect(bytes.count >= Manifest.headerSize)
            #expect(try Manifest.decode(bytes, file: "MANIFEST") == m, "\(runs) runs")
        }
        #expect(try Manifest.decode(Manifest().encode(), file: "MANIFEST") == Manifest())
    }

    /// The payload layout of FORMAT.md "Manifest", for a small manifest written out by hand.
    @Test func payloadLayout() throws {
        var m = Manifest()
        m.nextFileNumber = 300
        m.lastSequence = 5
        m.logNumber = 2
        m.runs = [[SegmentMetadata(number: 7, fileSize: 4096, smallestKey: [0x61], largestKey: [0x62, 0x63], records: 3)]]
        let bytes = m.encode()
        let payload: [UInt8] = [0xAC, 0x02, 5, 2, 1, 1, 7, 0x80, 0x20, 3, 1, 0x61, 2, 0x62, 0x63]
        #expect(Array(bytes[Manifest.headerSize...]) == payload)
        #expect(Array(bytes[8..<12]) == [2, 0, 0, 0])
        #expect(Array(bytes[12..<16]) == [UInt8(payload.count), 0, 0, 0])
        #expect(bytes == withHeader(payload))
    }

    @Test func everyTruncationIsCorruption() throws {
        var rng = SplitMix64(seed: 0x3A2_0002)
        let bytes = sampleManifest(&rng).encode()
        for n in 0..<bytes.count {
            expectCorrupted("manifest cut to \(n) of \(bytes.count) bytes") {
                _ = try Manifest.decode(Array(bytes[0..<n]), file: "MANIFEST")
            }
        }
        expectCorrupted("a trailing byte") { _ = try Manifest.decode(bytes + [0], file: "MANIFEST") }
    }

    @Test func everyBitFlipIsDetected() throws {
        var rng = SplitMix64(seed: 0x3A2_0003)
        let bytes = sampleManifest(&rng, runs: 2).encode()
        for i in 0..<bytes.count {
            for bit in 0..<8 {
                var b = bytes
                b[i] ^= 1 << UInt8(bit)
                do {
                    let m = try Manifest.decode(b, file: "MANIFEST")
                    Issue.record("flip of bit \(bit) in byte \(i) accepted: \(m)")
                } catch StrataError.corrupted {
                    // A version byte flipped to the encrypted version (3) reads as a sealed
                    // manifest, whose longer header and length then fail.
                    #expect(!(8..<12).contains(i) || b.withUnsafeBytes { LittleEndian.uint32($0, at: 8) } == Manifest.encryptedVersion,
                            "byte \(i)")
                } catch let StrataError.unsupportedFormatVersion(_, found) {
                    // The version is checked before the CRC (so a future layout is named as such).
                    #expect((8..<12).contains(i), "byte \(i)")
                    #expect(!Manifest.readableVersions.contains(found))
                }
            }
        }
    }

    @Test func futureVersionIsUnsupported() throws {
        var rng = SplitMix64(seed: 0x3A2_0004)
        var bytes = sampleManifest(&rng).encode()
        bytes.replaceSubrange(8..<12, with: [4, 0, 0, 0])
        #expect(throws: StrataError.unsupportedFormatVersion(file: "MANIFEST", found: 4)) {
            _ = try Manifest.decode(bytes, file: "MANIFEST")
        }
    }

    @Test func badMagicIsCorruption() {
        var bytes = Manifest().encode()
        bytes[7] = UInt8(ascii: "X")
        expectCorrupted("bad magic") { _ = try Manifest.decode(bytes, file: "MANIFEST") }
    }

    /// Payloads with a correct CRC but impossible content reach the parser, which must reject them.
    @Test func malformedPayloadsWithValidChecksums() throws {
        let cases: [(String, [UInt8])] = [
            ("empty payload", []),
            ("counters cut short", [10, 5]),
            ("unterminated varint", [10, 5, 2, 0x80]),
            ("run count larger than the payload", [10, 5, 2, 100]),
            ("segment count larger than the payload", [10, 5, 2, 1, 100]),
            ("segment cut short", [10, 5, 2, 1, 1, 7, 100]),
            ("key longer than the payload", [10, 5, 2, 1, 1, 7, 100, 3, 50, 0x61]),
            ("segment number not below nextFileNumber", [10, 5, 2, 1, 1, 10, 100, 3, 1, 0x61, 1, 0x62]),
            ("trailing bytes", [10, 5, 2, 0, 0]),
            ("eleven-byte varint", [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 5, 2, 0]),
        ]
        for (what, payload) in cases {
            expectCorrupted(what) { _ = try Manifest.decode(withHeader(payload), file: "MANIFEST") }
        }
        // The smallest valid payload, for contrast.
        #expect(try Manifest.decode(withHeader([10, 5, 2, 0]), file: "MANIFEST").nextFileNumber == 10)
        #expect(try Manifest.decode(withHeader([10, 5, 2, 1, 1, 9, 100, 3, 1, 0x61, 1, 0x62]), file: "MANIFEST").runs.count == 1)
    }

    @Test func writeThenRead() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        #expect(try Manifest.read(directory: dir.path, fileSystem: .real) == nil, "no manifest yet")
        var rng = SplitMix64(seed: 0x3A2_0005)
        let first = sampleManifest(&rng)
        try first.write(directory: dir.path, fileSystem: .real)
        #expect(try Manifest.read(directory: dir.path, fileSystem: .real) == first)
        #expect(dir.list() == [FileNames.manifest], "no temporary file is left")

        // Rewritten whole: the new one replaces the old.
        let second = sampleManifest(&rng, runs: 7)
        try second.write(directory: dir.path, fileSystem: .real)
        #expect(try Manifest.read(directory: dir.path, fileSystem: .real) == second)
        #expect(dir.list() == [FileNames.manifest])
        let onDisk = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + FileNames.manifest)))
        #expect(onDisk == second.encode())
    }

    @Test func readReportsTheFilePath() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/" + FileNames.manifest
        try Data(Manifest().encode().dropLast()).write(to: URL(fileURLWithPath: path))
        do {
            _ = try Manifest.read(directory: dir.path, fileSystem: .real)
            Issue.record("a damaged MANIFEST was read")
        } catch let StrataError.corrupted(file, _, _) {
            #expect(file == path)
        }
    }
}
