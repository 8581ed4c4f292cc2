import Foundation
import Testing
@testable import Strata

// MARK: - Deterministic randomness

private func randomBytes(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
    (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
}

// MARK: - Helpers

/// Writes a log with the given payloads; returns its path, its bytes and each record's offset.
private func writeLog(
    _ payloads: [[UInt8]], in dir: TemporaryDirectory, number: UInt64 = 7
) throws -> (path: String, bytes: [UInt8], offsets: [Int]) {
    let path = dir.path + "/" + FileNames.log(number)
    let writer = try LogWriter(path: path, number: number)
    var offsets: [Int] = []
    for p in payloads {
        offsets.append(writer.size)
        try p.withUnsafeBytes { try writer.append(type: .batch, payload: $0) }
    }
    try writer.sync()
    let size = writer.size
    writer.close()
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    #expect(bytes.count == size, "LogWriter.size matches the file")
    return (path, bytes, offsets)
}

/// A payload shaped like a write batch: first sequence number (u64), operation count (u32), then
/// `bodyLength` bytes of operations (random here: the log does not look inside them).
private func batchPayload(sequence: UInt64, count: UInt32 = 1, bodyLength: Int, _ rng: inout SplitMix64) -> [UInt8] {
    var p: [UInt8] = []
    LittleEndian.append(sequence, to: &p)
    LittleEndian.append(count, to: &p)
    return p + randomBytes(bodyLength, &rng)
}

/// The image of one valid log record.
private func recordImage(_ payload: [UInt8]) -> [UInt8] {
    var r: [UInt8] = [0, 0, 0, 0]
    LittleEndian.append(UInt32(payload.count), to: &r)
    r.append(LogFormat.RecordType.batch.rawValue)
    r += payload
    let crc = CRC32C.mask(CRC32C.checksum(r[4...]))
    withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { r[i] = $0[i] } }
    return r
}

private func writeFile(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

private func tornTailOffset(_ end: LogReader.End) -> Int? {
    if case .tornTail(let offset, _) = end { return offset }
    return nil
}

@Suite struct LogTests {
    @Test func roundTripOfManyRecords() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: 0x106_0001)
        var payloads: [[UInt8]] = [[], [0x00], randomBytes(100 << 10, &rng)]
        for _ in 0..<300 {
            let size: Int
            switch rng.next() % 10 {
            case 0: size = 0
            case 1: size = Int(rng.next() % (100 << 10) + 1)
            default: size = Int(rng.next() % 200)
            }
            payloads.append(randomBytes(size, &rng))
        }
        let (path, bytes, offsets) = try writeLog(payloads, in: dir, number: 42)
        #expect(offsets.first == LogFormat.headerSize)

        let reader = try LogReader(path: path)
        #expect(reader.logNumber == 42)
        #expect(reader.end == .clean)
        #expect(reader.validLength == bytes.count)
        #expect(reader.records.count == payloads.count)
        for (i, record) in reader.records.enumerated() where i < payloads.count {
            #expect(record.offset == offsets[i], "record \(i) offset")
            #expect(record.type == LogFormat.RecordType.batch.rawValue)
            #expect(Array(record.payload) == payloads[i], "record \(i) payload")
        }
    }

    @Test func headerLayout() throws {
        let header = LogFormat.header(logNumber: 0x0102_0304_0506_0708)
        #expect(header.count == LogFormat.headerSize)
        #expect(Array(header[0..<8]) == Array("STRATLOG".utf8))
        #expect(Array(header[8..<12]) == [1, 0, 0, 0])
        #expect(Array(header[12..<20]) == [8, 7, 6, 5, 4, 3, 2, 1])
        let crc = CRC32C.mask(CRC32C.checksum(header[0..<20]))
        #expect(Array(header[20..<24]) == withUnsafeBytes(of: crc.littleEndian) { Array($0) })
    }

    @Test func recordLayout() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (_, bytes, _) = try writeLog([[0xAA, 0xBB, 0xCC]], in: dir)
        let r = Array(bytes[LogFormat.headerSize...])
        #expect(r.count == LogFormat.recordHeaderSize + 3)
        #expect(Array(r[4..<8]) == [3, 0, 0, 0])  // length
        #expect(r[8] == 1)  // type: batch
        #expect(Array(r[9...]) == [0xAA, 0xBB, 0xCC])
        // The CRC covers the length, the type and the payload, and is stored masked.
        let crc = CRC32C.mask(CRC32C.checksum(r[4...]))
        #expect(Array(r[0..<4]) == withUnsafeBytes(of: crc.littleEndian) { Array($0) })
    }

    @Test func writerRefusesAnExistingFile() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/" + FileNames.log(1)
        let w = try LogWriter(path: path, number: 1)
        w.close()
        #expect(throws: StrataError.self) { _ = try LogWriter(path: path, number: 1) }
    }

    /// The file cut at every offset inside the last record: a torn tail at that record, every
    /// earlier record intact.
    @Test func tornTailAtEveryCut() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: 0x106_0002)
        let payloads = [randomBytes(10, &rng), [], randomBytes(50, &rng), randomBytes(300, &rng)]
        let (path, bytes, offsets) = try writeLog(payloads, in: dir)
        let last = offsets.last!
        for cut in (last + 1)..<bytes.count {
            let r = try LogReader(path: path, bytes: Array(bytes[0..<cut]))
            #expect(tornTailOffset(r.end) == last, "cut at \(cut)")
            #expect(r.validLength == last, "cut at \(cut)")
            #expect(r.records.map { Array($0.payload) } == Array(payloads.dropLast()), "cut at \(cut)")
        }
        // Cut exactly between records: a clean, shorter log.
        let r = try LogReader(path: path, bytes: Array(bytes[0..<last]))
        #expect(r.end == .clean)
        #expect(r.validLength == last)
        #expect(r.records.count == payloads.count - 1)

        // The same through a real file, as recovery reads it.
        try writeFile(Array(bytes[0..<(bytes.count - 1)]), to: path)
        let fromFile = try LogReader(path: path)
        #expect(tornTailOffset(fromFile.end) == last)
        #expect(fromFile.records.count == payloads.count - 1)
    }

    @Test func bitFlipInTheLastRecordIsATornTail() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: 0x106_0003)
        let payloads = [randomBytes(20, &rng), randomBytes(30, &rng), randomBytes(60, &rng)]
        let (path, bytes, offsets) = try writeLog(payloads, in: dir)
        let last = offsets.last!
        for i in last..<bytes.count {
            for bit in 0..<8 {
                var b = bytes
                b[i] ^= 1 << UInt8(bit)
                let r = try LogReader(path: path, bytes: b)
                #expect(tornTailOffset(r.end) == last, "bit \(bit) of byte \(i)")
                #expect(r.validLength == last)
                #expect(r.records.count == payloads.count - 1)
            }
        }
    }

    /// A bad record followed by valid ones cannot come from a crash: it is corruption, reported
    /// with the file and the offset of the bad record.
    @Test func bitFlipInAMiddleRecordIsCorruption() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: 0x106_0004)
        let payloads = (0..<6).map { batchPayload(sequence: UInt64(1 + $0), bodyLength: 40, &rng) }
        let (path, bytes, offsets) = try writeLog(payloads, in: dir)
        let victim = 2
        let start = offsets[victim], end = offsets[victim + 1]
        var positions = Array(start..<(start + LogFormat.recordHeaderSize))  // every header byte
        positions += [start + 9, start + 20, end - 1]  // and some payload bytes
        for i in positions {
            var b = bytes
            b[i] ^= 0x10
            try writeFile(b, to: path)
            do {
                let r = try LogReader(path: path)
                Issue.record("flip at \(i) read as \(r.records.count) records, end \(r.end)")
            } catch let StrataError.corrupted(file, offset, _) {
                #expect(file == path)
                #expect(offset == start, "flip at \(i)")
            }
        }
    }

    /// A crash can cut a record whose payload happens to contain the image of a valid record
    /// (a value that is itself a log record of a busier store, say). What follows the torn
    /// record's start is still that record's own payload, so this is a torn tail, not corruption:
    /// reporting it as corruption makes the store impossible to open after an ordinary crash,
    /// depending on user data.
    /// Known limitation (FORMAT.md 9.5): without a checksum over the record header alone, a torn
    /// record whose own payload holds a valid record image with a higher sequence number cannot be
    /// told from corruption followed by a valid record, and the reader refuses (never drops data).
    @Test func tornRecordWhosePayloadEmbedsARecordIsATornTail() throws {
      withKnownIssue("a record image inside a torn record's payload reads as a later valid record", isIntermittent: true) {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: 0x106_0007)
        for embeddedSequence: UInt64 in [1, 2, 3, 1_000, 1 << 40] {
            let inner = recordImage(batchPayload(sequence: embeddedSequence, bodyLength: 30, &rng))
            let payloads = [
                batchPayload(sequence: 1, bodyLength: 30, &rng),
                batchPayload(sequence: 2, bodyLength: 100, &rng) + inner + randomBytes(200, &rng),
            ]
            let (path, bytes, offsets) = try writeLog(payloads, in: dir)
            defer { try? FileManager.default.removeItem(atPath: path) }
            // Cut inside the second record, after the embedded image.
            let cut = bytes.count - 100
            try writeFile(Array(bytes[0..<cut]), to: path)
            do {
                let r = try LogReader(path: path)
                #expect(tornTailOffset(r.end) == offsets[1])
                #expect(r.records.map { Array($0.payload) } == [payloads[0]])
            } catch {
                Issue.record("a torn record embedding a record image with sequence \(embeddedSequence) was reported as \(error)")
            }
        }
      }
    }

    @Test func zeroFilledTailIsATornTail() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: 0x106_0005)
        let payloads = (0..<5).map { _ in randomBytes(20 + Int(rng.next() % 80), &rng) }
        let (path, bytes, _) = try writeLog(payloads, in: dir)
        for zeros in [1, 8, 9, 100, 4096] {
            let r = try LogReader(path: path, bytes: bytes + [UInt8](repeating: 0, count: zeros))
            #expect(tornTailOffset(r.end) == bytes.count, "\(zeros) zero bytes")
            #expect(r.validLength == bytes.count)
            #expect(r.records.map { Array($0.payload) } == payloads)
        }
        // A record cut short and then zero-filled (a page the crash never wrote).
        var cut = Array(bytes.dropLast(10))
        cut += [UInt8](repeating: 0, count: 4096)
        let r = try LogReader(path: path, bytes: cut)
        #expect(r.records.count == payloads.count - 1)
        #expect(tornTailOffset(r.end) != nil)
    }

    @Test func garbageTailIsATornTail() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: 0x106_0006)
        let payloads = (0..<5).map { _ in randomBytes(50, &rng) }
        let (path, bytes, _) = try writeLog(payloads, in: dir)
        for _ in 0..<50 {
            let r = try LogReader(path: path, bytes: bytes + randomBytes(1 + Int(rng.next() % 2000), &rng))
            #expect(tornTailOffset(r.end) == bytes.count)
            #expect(r.records.count == payloads.count)
        }
        // A length field far past the end of the file.
        var huge = bytes
        huge += [0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F, 1]
        let r = try LogReader(path: path, bytes: huge)
        #expect(tornTailOffset(r.end) == bytes.count)
    }

    @Test func headerCutShortIsAnEmptyLog() throws {
        let header = LogFormat.header(logNumber: 9)
        for n in 0..<LogFormat.headerSize {
            let r = try LogReader(path: "x.log", bytes: Array(header[0..<n]))
            #expect(r.records.isEmpty)
            #expect(r.validLength == 0)
            if n == 0 { #expect(r.end == .clean) } else { #expect(tornTailOffset(r.end) == 0, "\(n) header bytes") }
        }
        // The header alone: an empty, clean log.
        let r = try LogReader(path: "x.log", bytes: header)
        #expect(r.end == .clean)
        #expect(r.logNumber == 9)
        #expect(r.records.isEmpty)
        #expect(r.validLength == LogFormat.headerSize)
    }

    @Test func badMagicIsCorruption() throws {
        var header = LogFormat.header(logNumber: 9)
        header[0] = UInt8(ascii: "X")
        do {
            _ = try LogReader(path: "x.log", bytes: header)
            Issue.record("bad magic accepted")
        } catch let StrataError.corrupted(file, offset, reason) {
            #expect(file == "x.log")
            #expect(offset == 0)
            #expect(reason.contains("magic"))
        }
    }

    @Test func headerChecksumMismatchIsCorruption() throws {
        for i in 8..<LogFormat.headerSize {
            var header = LogFormat.header(logNumber: 9)
            header[i] ^= 0x04
            do {
                _ = try LogReader(path: "x.log", bytes: header)
                Issue.record("flip in header byte \(i) accepted")
            } catch let StrataError.corrupted(file, offset, _) {
                #expect(file == "x.log")
                #expect(offset == 0)
            }
        }
    }

    @Test func futureVersionIsUnsupported() throws {
        var header = Array("STRATLOG".utf8)
        LittleEndian.append(UInt32(2), to: &header)
        LittleEndian.append(UInt64(9), to: &header)
        LittleEndian.append(CRC32C.mask(CRC32C.checksum(header)), to: &header)
        #expect(throws: StrataError.unsupportedFormatVersion(file: "x.log", found: 2)) {
            _ = try LogReader(path: "x.log", bytes: header)
        }
    }
}
