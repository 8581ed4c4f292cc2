import Foundation
import Testing

@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite("JSON binary form")
struct JSONBinaryTests {
    @Test("the layout of FORMAT.md §13.1")
    func layout() throws {
        let value: JSON = ["b": [1, -1, nil], "a": "hé"]
        let expected: [UInt8] = [
            0x08, 0x02, 0x14,  // object, 2 members, 20 bytes follow
            0x01, 0x00, 0x07,  // offset width 1; entries at 0 and 7
            0x01, 0x61, 0x05, 0x03, 0x68, 0xC3, 0xA9,  // "a": string of 3 bytes "hé"
            0x01, 0x62, 0x07, 0x03, 0x05, 0x03, 0x02, 0x03, 0x01, 0x00,  // "b": array of 3 in 5 bytes: 1, -1, null
        ]
        #expect(value.binaryEncoded == expected)
        #expect(try JSON(binary: expected) == value)
        #expect(JSON.int(1).binaryEncoded == [0x03, 0x02])
        #expect(JSON.int(-1).binaryEncoded == [0x03, 0x01])
        #expect(JSON.double(1.5).binaryEncoded == [0x04, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F])
        #expect(JSON.date(Date(timeIntervalSinceReferenceDate: 1.5)).binaryEncoded == [0x06, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F])
        #expect(JSON.null.binaryEncoded == [0x00])
        #expect(JSON.bool(false).binaryEncoded == [0x01])
        #expect(JSON.bool(true).binaryEncoded == [0x02])
        #expect(JSON.array([]).binaryEncoded == [0x07, 0x00, 0x00])
        #expect(JSON.object([:]).binaryEncoded == [0x08, 0x00, 0x00])
    }

    @Test("round trip of random values, bit for bit")
    func roundTrip() throws {
        var random = RandomJSON(seed: 2)
        for _ in 0..<3000 {
            let value = random.value()
            let bytes = value.binaryEncoded
            let back = try JSON(binary: bytes)
            #expect(identical(back, value), "\(value)")
            // The encoding is deterministic (members sorted), whatever the dictionary order.
            #expect(back.binaryEncoded == bytes)
        }
    }

    @Test("wide directories: objects with large members use 2- and 4-byte offsets")
    func wideOffsets() throws {
        for (count, length) in [(3, 200), (40, 2000), (3, 70_000)] {
            var members: [String: JSON] = [:]
            for i in 0..<count { members["k\(i)"] = .string(String(repeating: "x", count: length)) }
            let value = JSON.object(members)
            let bytes = value.binaryEncoded
            #expect(try JSON(binary: bytes) == value)
            for i in 0..<count { #expect(try JSONBinary.member("k\(i)", in: bytes) == members["k\(i)"]) }
            #expect(try JSONBinary.member("k", in: bytes) == nil)
            #expect(try JSONBinary.member("zz", in: bytes) == nil)
        }
    }

    @Test("member lookup agrees with a full decode")
    func member() throws {
        var random = RandomJSON(seed: 3)
        for _ in 0..<1000 {
            let value = random.value()
            let bytes = value.binaryEncoded
            if case .object(let members) = value {
                for (key, member) in members {
                    let found = try JSONBinary.member(key, in: bytes)
                    #expect(found.map { identical($0, member) } == true)
                }
                #expect(try JSONBinary.member("not a key \u{1F600}", in: bytes) == nil || members["not a key \u{1F600}"] != nil)
            } else {
                #expect(try JSONBinary.member("a", in: bytes) == nil)
            }
        }
    }

    @Test("nesting depth of stored values is bounded")
    func depth() throws {
        var deep: [UInt8] = []
        for _ in 0..<100_000 { deep += [0x07, 0x01, 0x00] }  // sizes are wrong too, but depth trips first or size does
        #expect(throws: StrataError.self) { try JSON(binary: deep) }
        var nested = JSON.null
        for _ in 0..<JSON.maximumNestingDepth { nested = [nested] }
        #expect(try JSON(binary: nested.binaryEncoded) == nested)
        nested = [nested]
        let tooDeep = nested.binaryEncoded
        #expect(throws: StrataError.self) { try JSON(binary: tooDeep) }
    }

    /// Decoding must throw `corrupted` or succeed, never trap, on arbitrary bytes.
    func decodeNeverTraps(_ bytes: [UInt8]) {
        do {
            // Whatever decodes must encode again without trouble.
            _ = try JSON(binary: bytes).binaryEncoded
        } catch let error as StrataError {
            guard case .corrupted(let file, let offset, _) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(file == "value")
            #expect(offset >= 0 && offset <= bytes.count)
        } catch {
            Issue.record("unexpected error \(error)")
        }
        do { _ = try JSONBinary.member("a", in: bytes) } catch let error as StrataError {
            if case .corrupted = error {} else { Issue.record("unexpected error \(error)") }
        } catch { Issue.record("unexpected error \(error)") }
    }

    @Test("random bytes and mutations of valid values never trap")
    func fuzz() throws {
        var rng = SplitMix64(seed: 4)
        for _ in 0..<3000 {
            let bytes = (0..<rng.below(24)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            decodeNeverTraps(bytes)
        }
        var random = RandomJSON(seed: 5)
        for _ in 0..<3000 {
            var bytes = random.value().binaryEncoded
            switch rng.below(4) {
            case 0: bytes[rng.below(bytes.count)] = UInt8(truncatingIfNeeded: rng.next())
            case 1: bytes.removeLast(rng.below(bytes.count) + 1)
            case 2: bytes[rng.below(bytes.count)] ^= UInt8(1) << UInt8(rng.below(8))
            default: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: rng.below(bytes.count + 1))
            }
            decodeNeverTraps(bytes)
        }
    }

    @Test("specific corruptions are reported with their offset")
    func corruptions() {
        func offset(_ bytes: [UInt8]) -> Int? {
            do { _ = try JSON(binary: bytes); return nil } catch StrataError.corrupted(_, let offset, _) { return offset } catch { return nil }
        }
        #expect(offset([]) == 0)
        #expect(offset([0x09]) == 0)  // unknown type
        #expect(offset([0x00, 0x00]) == 1)  // trailing byte
        #expect(offset([0x04, 0, 0, 0]) == 0)  // truncated double
        #expect(offset([0x05, 0x05, 0x61]) == 1)  // string longer than the buffer
        #expect(offset([0x05, 0x01, 0xFF]) == 1)  // invalid UTF-8
        #expect(offset([0x07, 0x02, 0x01, 0x00]) == 1)  // 2 elements in 1 byte
        #expect(offset([0x07, 0x01, 0x02, 0x00, 0x00]) == 4)  // size larger than the elements
        // Object with keys out of order: "b" then "a".
        #expect(offset([0x08, 0x02, 0x09, 0x01, 0x00, 0x03, 0x01, 0x62, 0x00, 0x01, 0x61, 0x00]) == 9)
        // Object whose directory disagrees.
        #expect(offset([0x08, 0x01, 0x05, 0x01, 0x01, 0x01, 0x61, 0x00]) == 4)
        // Bad width.
        #expect(offset([0x08, 0x01, 0x05, 0x03, 0x00, 0x01, 0x61, 0x00]) == 3)
    }
}

/// Reads the annotated dumps of FORMAT.md §13 (`<!-- spec-example: NAME -->`, then a fenced block
/// of `OFFSET  HEX HEX …  comment` lines) so that the specification cannot drift from the code.
enum ValueSpec {
    static func dump(_ name: String) throws -> [UInt8] {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        let lines = try String(contentsOf: url.appendingPathComponent("FORMAT.md"), encoding: .utf8)
            .components(separatedBy: "\n")
        let marker = "<!-- spec-example: \(name) -->"
        guard let m = lines.firstIndex(of: marker), m + 1 < lines.count, lines[m + 1].hasPrefix("```") else {
            throw StrataError.invalidArgument(argument: "test", reason: "no FORMAT.md example \(name)")
        }
        var bytes: [UInt8] = []
        var i = m + 2
        while i < lines.count && !lines[i].hasPrefix("```") {
            let line = lines[i]
            i += 1
            guard let space = line.firstIndex(of: " "), let offset = Int(line[..<space], radix: 16), offset == bytes.count else {
                throw StrataError.invalidArgument(argument: "test", reason: "FORMAT.md example \(name): bad offset in \(line)")
            }
            var rest = line[space...].drop { $0 == " " }
            if let comment = rest.range(of: "  ") { rest = rest[..<comment.lowerBound] }
            for token in rest.split(separator: " ") {
                guard let byte = UInt8(token, radix: 16) else { throw StrataError.invalidArgument(argument: "test", reason: "bad hex \(token) in \(line)") }
                bytes.append(byte)
            }
        }
        return bytes
    }
}

@Suite("Value encodings in FORMAT.md")
struct ValueSpecTests {
    @Test("§13.1 binary JSON example")
    func binaryExample() throws {
        let value: JSON = ["a": "hé", "b": [1, -1, nil]]
        let bytes = try ValueSpec.dump("value-binary")
        #expect(bytes == value.binaryEncoded)
        #expect(try JSON(binary: bytes) == value)
    }

    @Test("§13.3 collation key example")
    func collationExample() throws {
        let value: JSON = ["a", -1.5, ["k": true]]
        let bytes = try ValueSpec.dump("value-collation")
        #expect(bytes == value.collationKey)
        var offset = 0
        #expect(try bytes.withUnsafeBytes { try JSON.decodeCollationKey($0, at: &offset) } == value)
    }
}
