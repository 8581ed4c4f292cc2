import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat

/// One field of every kind the reader knows, written back to back.
private let record: [UInt8] = {
    var out: [UInt8] = [0xA5]
    LittleEndian.append(UInt32(0xDEAD_BEEF), to: &out)
    LittleEndian.append(UInt64(0x0102_0304_0506_0708), to: &out)
    LittleEndian.append((1.5 as Double).bitPattern, to: &out)
    Varint.append(UInt64.max, to: &out)
    Varint.append(ZigZag.encode(-3), to: &out)
    Varint.append(UInt64(300), to: &out)
    Varint.appendLengthPrefixed("héllo", to: &out)
    Varint.append(UInt64(2), to: &out)
    out += [0xFE, 0xFF]
    out += [7, 8, 9]
    return out
}()

/// Reads every field of ``record`` in order, checking each value.
private func readAll(_ r: inout ByteReader) throws {
    #expect(try r.uint8("byte") == 0xA5)
    #expect(try r.uint32("u32") == 0xDEAD_BEEF)
    #expect(try r.uint64("u64") == 0x0102_0304_0506_0708)
    #expect(try r.double("double") == 1.5)
    #expect(try r.varint("varint") == UInt64.max)
    #expect(try r.signedVarint("signed") == -3)
    #expect(try r.int("int", limit: 300) == 300)
    #expect(try r.string("string") == "héllo")
    #expect(Array(try r.lengthPrefixedBytes("bytes")) == [0xFE, 0xFF])
    #expect(Array(try r.bytes(3, "tail")) == [7, 8, 9])
}

/// Reads the fields of ``record`` in order without looking at them.
private func skimAll(_ r: inout ByteReader) throws {
    _ = try r.uint8("byte")
    _ = try r.uint32("u32")
    _ = try r.uint64("u64")
    _ = try r.double("double")
    _ = try r.varint("varint")
    _ = try r.signedVarint("signed")
    _ = try r.int("int", limit: 300)
    _ = try r.string("string")
    _ = try r.lengthPrefixedBytes("bytes")
    _ = try r.bytes(3, "tail")
    try r.expectEnd()
}

/// The error `body` throws, or nil.
private func thrown(_ body: () throws -> Void) -> StrataError? {
    do { try body(); return nil } catch let error as StrataError { return error } catch { return nil }
}

@Suite struct ByteReaderTests {
    @Test("every field reads back, and the reader ends at the end")
    func roundTrip() throws {
        try ByteReader.read(record, file: "r") { r in
            try readAll(&r)
            #expect(r.isAtEnd)
            #expect(r.remaining == 0)
            try r.expectEnd()
        }
    }

    @Test("a record cut at every offset throws .corrupted naming the record, at an offset inside it")
    func truncations() throws {
        for cut in 0..<record.count {
            let prefix = Array(record[..<cut])
            let error = thrown { try ByteReader.read(prefix, file: "cut record") { try readAll(&$0) } }
            guard case .corrupted(let file, let offset, let reason)? = error else {
                Issue.record("cut at \(cut): \(String(describing: error))")
                continue
            }
            #expect(file == "cut record")
            #expect(offset >= 0 && offset <= cut, "cut at \(cut): offset \(offset)")
            #expect(!reason.isEmpty)
        }
    }

    @Test("bytes after the last field: expectEnd names how many and where")
    func trailingBytes() throws {
        let error = thrown {
            try ByteReader.read(record + [0, 0], file: "r") { r in
                try readAll(&r)
                #expect(!r.isAtEnd)
                #expect(r.remaining == 2)
                try r.expectEnd("the record")
            }
        }
        #expect(error == .corrupted(file: "r", offset: record.count, reason: "2 bytes after the record"))
    }

    @Test("lengths and counts near UInt64.max and Int.max are refused, not added to an offset")
    func hugeLengths() throws {
        for huge in [UInt64.max, UInt64(Int.max), UInt64(Int.max) + 1, UInt64(Int.max) - 1, 4] {
            var bytes: [UInt8] = []
            Varint.append(huge, to: &bytes)
            bytes += [0x61, 0x62, 0x63]
            for read in [{ (r: inout ByteReader) in _ = try r.string("name") },
                         { (r: inout ByteReader) in _ = try r.lengthPrefixedBytes("blob") },
                         { (r: inout ByteReader) in _ = try r.count("entry count") }] {
                let error = thrown { try ByteReader.read(bytes, file: "huge") { try read(&$0) } }
                guard case .corrupted("huge", 0, let reason)? = error else {
                    Issue.record("length \(huge): \(String(describing: error))")
                    continue
                }
                #expect(reason.contains("exceeds the 3 bytes left"), "\(reason)")
            }
        }
        // Counts of bytes asked for directly: negative, past the end, Int.max.
        for n in [-1, 4, Int.max, Int.min] {
            let error = thrown { try ByteReader.read([1, 2, 3], file: "f") { _ = try $0.bytes(n, "field") } }
            #expect(error == .corrupted(file: "f", offset: 0, reason: "value ends inside field"), "\(n)")
        }
        #expect(thrown { try ByteReader.read([1, 2, 3], file: "f") { try $0.skip(Int.max, "field") } } != nil)
        // An int over its limit.
        var big: [UInt8] = []
        Varint.append(UInt64(Int.max) + 1, to: &big)
        #expect(thrown { try ByteReader.read(big, file: "f") { _ = try $0.int("size") } }
                == .corrupted(file: "f", offset: 0, reason: "size \(UInt64(Int.max) + 1) exceeds the limit \(Int.max)"))
        #expect(thrown { try ByteReader.read([11], file: "f") { _ = try $0.int("size", limit: 10) } }
                == .corrupted(file: "f", offset: 0, reason: "size 11 exceeds the limit 10"))
    }

    @Test("varints: the largest, ten continuation bytes, 65 bits, a cut one")
    func extremeVarints() throws {
        let max: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
        #expect(try ByteReader.read(max, file: "v") { try $0.varint("v") } == UInt64.max)
        #expect(try ByteReader.read([0x80, 0x00], file: "v") { try $0.varint("v") } == 0)   // not minimal, still one value
        let bad: [[UInt8]] = [
            [],
            [0x80],
            Array(max.dropLast()) + [0x02],               // 65 bits
            [UInt8](repeating: 0xFF, count: 10),          // no last byte
            [UInt8](repeating: 0x80, count: 11) + [0],    // longer than ten bytes
        ]
        for bytes in bad {
            let error = thrown { try ByteReader.read([9] + bytes, file: "v", offset: 1) { _ = try $0.varint("sequence") } }
            #expect(error == .corrupted(file: "v", offset: 1, reason: "bad varint (sequence)"), "\(bytes)")
        }
        #expect(try ByteReader.read([0x05], file: "v") { try $0.signedVarint("s") } == -3)
        #expect(try ByteReader.read(max, file: "v") { try $0.signedVarint("s") } == Int64.min)
    }

    @Test("strings: invalid UTF-8 is refused at the string's offset; the rest reads as UTF-8")
    func strings() throws {
        #expect(thrown { try ByteReader.read([0, 2, 0xC3, 0x28], file: "s", offset: 1) { _ = try $0.string("name") } }
                == .corrupted(file: "s", offset: 1, reason: "name is not UTF-8"))
        #expect(try ByteReader.read([0, 0x61, 0x62], file: "s", offset: 1) { try $0.restAsString("id") } == "ab")
        #expect(thrown { try ByteReader.read([0, 0xFF], file: "s", offset: 1) { _ = try $0.restAsString("id") } }
                == .corrupted(file: "s", offset: 1, reason: "id is not UTF-8"))
        try ByteReader.read([1, 2, 3], file: "s") { r in
            _ = try r.uint8("a")
            #expect(Array(r.rest()) == [2, 3])
            #expect(r.isAtEnd)
            #expect(r.rest().isEmpty)
        }
    }

    @Test("errors name kind and quoted name, or the file as given")
    func naming() throws {
        let kinded = [UInt8]().withUnsafeBytes { b in
            thrown { var r = ByteReader(b, kind: "document", name: "a\"b"); _ = try r.uint8("flags") }
        }
        #expect(kinded == .corrupted(file: #"document "a\"b""#, offset: 0, reason: "value ends inside flags"))
        let plain = [UInt8]().withUnsafeBytes { b in
            thrown { var r = ByteReader(b, file: "push counters"); _ = try r.uint64("next") }
        }
        #expect(plain == .corrupted(file: "push counters", offset: 0, reason: "value ends inside next"))
    }

    @Test("a start offset outside the bytes is clamped")
    func clampedStart() throws {
        [UInt8]([1, 2]).withUnsafeBytes { b in
            #expect(ByteReader(b, file: "f", offset: -5).offset == 0)
            #expect(ByteReader(b, file: "f", offset: 99).offset == 2)
            #expect(ByteReader(b, file: "f", offset: 99).isAtEnd)
        }
    }

    @Test("random bytes never trap: each read returns or throws .corrupted")
    func randomBytes() throws {
        var rng = SplitMix(seed: 22)
        for _ in 0..<2_000 {
            let bytes = (0..<Int(rng.next() % 24)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let error = thrown { try ByteReader.read(bytes, file: "random") { try skimAll(&$0) } }
            if let error, case .corrupted = error {} else if error != nil { Issue.record("\(String(describing: error))") }
        }
    }
}

/// A small deterministic generator (SplitMix64).
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
