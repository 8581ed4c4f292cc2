import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Keeps FORMAT.md §14.6 honest, as FormatSpecTests does for §11: the worked example's hex dump
/// (`<!-- spec-example: chunk -->`) and bit table (`chunk-bits`) are read out of FORMAT.md and
/// checked against what `SeriesChunk.encode()` writes and what both decoders read.
@Suite struct SeriesChunkSpecTests {
    /// The example's events: 10…14, one edit, two authors, one ALP exception.
    static let example = SeriesChunk(
        firstSequence: 10, timestamps: [1_000, 2_000, 3_000, 4_001, 5_000], authors: [0, 0, 1, 0, 1],
        originals: [nil, nil, nil, nil, .init(sequence: 11, timestamp: 2_000, author: 0)],
        values: .doubles([20.15, 20.17, 20.16, 20.21.nextUp, 20.18]))

    struct SpecError: Error, CustomStringConvertible {
        let description: String
    }

    /// The lines of the fenced block after `<!-- spec-example: name -->` in FORMAT.md.
    static func block(_ name: String) throws -> [String] {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        let lines = try String(contentsOf: url.appendingPathComponent("FORMAT.md"), encoding: .utf8)
            .components(separatedBy: "\n")
        let marker = "<!-- spec-example: \(name) -->"
        let found = lines.indices.filter { lines[$0].trimmingCharacters(in: .whitespaces) == marker }
        guard found.count == 1, var i = found.first.map({ $0 + 1 }) else {
            throw SpecError(description: "FORMAT.md has \(found.count) markers \(marker)")
        }
        while i < lines.count && lines[i].trimmingCharacters(in: .whitespaces).isEmpty { i += 1 }
        guard i < lines.count, lines[i].hasPrefix("```") else { throw SpecError(description: "no code block after \(marker)") }
        var out: [String] = []
        i += 1
        while i < lines.count && !lines[i].hasPrefix("```") { out.append(lines[i]); i += 1 }
        guard i < lines.count else { throw SpecError(description: "unterminated block after \(marker)") }
        return out
    }

    /// `OFFSET  HEX HEX …  comment` lines, each offset the count of bytes before it.
    static func dump() throws -> [UInt8] {
        var bytes: [UInt8] = []
        for line in try block("chunk") where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            guard let space = line.firstIndex(of: " "), let offset = Int(line[..<space], radix: 16), offset == bytes.count else {
                throw SpecError(description: "chunk: bad offset after \(bytes.count) bytes: \(line)")
            }
            var rest = line[space...].drop { $0 == " " }
            if let comment = rest.range(of: "  ") { rest = rest[..<comment.lowerBound] }
            for token in rest.split(separator: " ") {
                guard token.count == 2, let b = UInt8(token, radix: 16) else { throw SpecError(description: "chunk: \(token) in \(line)") }
                bytes.append(b)
            }
        }
        return bytes
    }

    /// `BIT WIDTH BITS…  meaning` lines: each bit offset the count of bits before it, each field's
    /// bits (spaces inside are only for reading) as many as its width. The bits, concatenated.
    static func bitTable() throws -> [Bool] {
        var bits: [Bool] = []
        for line in try block("chunk-bits") where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard words.count >= 3, let offset = Int(words[0]), let width = Int(words[1]), offset == bits.count else {
                throw SpecError(description: "chunk-bits: bad offset after \(bits.count) bits: \(line)")
            }
            var field: [Bool] = []
            for word in words.dropFirst(2) {
                guard field.count < width, word.allSatisfy({ $0 == "0" || $0 == "1" }) else { break }
                field += word.map { $0 == "1" }
            }
            guard field.count == width else {
                throw SpecError(description: "chunk-bits: \(field.count) bits for a width of \(width): \(line)")
            }
            bits += field
        }
        return bits
    }

    @Test("the worked example's bytes are what encode() writes")
    func exampleIsWhatEncodeWrites() throws {
        let bytes = try Self.example.encode()
        let spec = try Self.dump()
        #expect(spec == bytes, "FORMAT.md: \(spec.map { String(format: "%02x", $0) }), encode(): \(bytes.map { String(format: "%02x", $0) })")
    }

    @Test("the bit table spells out the dump's bits, to the last padding bit")
    func bitTableMatchesDump() throws {
        let bits = try Self.bitTable()
        let bytes = try Self.dump()
        #expect(bits.count == bytes.count * 8)
        var fromBytes: [Bool] = []
        for byte in bytes {
            for bit in 0..<8 { fromBytes.append(byte & (0x80 >> UInt8(bit)) != 0) }
        }
        #expect(bits == fromBytes)
    }

    @Test("both decoders read the example back, the exception's last bit included")
    func exampleDecodes() throws {
        let bytes = try Self.dump()
        #expect(try SeriesChunk.decode(bytes) == Self.example)
        var timestamps: [Int64] = [], authors: [UInt64] = [], edits: [SeriesChunk.Edit] = [], doubles: [Double] = []
        let header = try bytes.withUnsafeBytes {
            try SeriesChunk.decodeColumns($0, base: 1_700_000_000_000, timestamps: &timestamps, authors: &authors,
                                          edits: &edits, doubles: &doubles)
        }
        #expect(header == SeriesChunk.Header(kind: 1, firstSequence: 10, count: 5))
        #expect(timestamps == [1_000, 2_000, 3_000, 4_001, 5_000].map { 1_700_000_000_000 + $0 })
        #expect(authors == [0, 0, 1, 0, 1])
        #expect(edits == [.init(index: 4, original: .init(sequence: 11, timestamp: 2_000, author: 0))])
        #expect(doubles.map(\.bitPattern) == [20.15, 20.17, 20.16, 20.21.nextUp, 20.18].map(\.bitPattern))
        #expect(doubles[3].bitPattern == 20.21.bitPattern + 1)
    }

    @Test("ALP divides by the exact power of ten: every two-decimal value round-trips without exception")
    func alpDividesByThePower() throws {
        // 0.01 × n is off by an ulp for about a fifth of these; n / 100 never is.
        let values = (0..<2_000).map { Double(10_000 + $0 * 37) / 100 }
        var writer = BitWriter()
        #expect(DoubleColumn.writeALP(values, e: 2, f: 0, to: &writer) == 0)
        #expect(values.contains { Double(Int64(($0 * 100).rounded())) * 0.01 != $0 })
    }
}
